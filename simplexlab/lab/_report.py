"""The claims report: ``OUT/claims/claims.json`` (schema: :data:`simplexlab.lab._claims.SCHEMA`),
``claims.md`` (the counts, why each "no", one line per claim, the statements the lab cannot
check, the references) and the robustness maps ``robustness_<paper>.png``, written atomically
with provenance (:func:`write_report`)."""

from __future__ import annotations

import dataclasses
import io
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._bibliography import BIBLIOGRAPHY, cite
from .._results import atomic_write_bytes, atomic_write_json, provenance, read_json, to_jsonable
from ._claims import FAILED, PAPERS, SCHEMA, STATUSES, claims_registry, unchecked_registry
from ._stats import _fmt

__all__ = ["count_line", "write_report"]

def _status_line(e: dict) -> str:
    from ._status import status_line  # the figures' line, word for word

    return status_line(e)


def count_line(entries: list[dict], unchecked: int | None = None) -> str:
    """``"33 claims: 20 hold, 8 partly, 5 do not hold at the paper's setting"`` (and how many
    evaluations failed, when any did: a failure is no verdict; and, given ``unchecked``, how
    many statements are not checkable)."""
    counts = {s: sum(e["holds_at_paper"] == s for e in entries) for s in (*STATUSES, FAILED)}
    text = (f"{len(entries)} claims: {counts['yes']} hold, {counts['partly']} partly, "
            f"{counts['no']} do not hold at the paper's setting")
    if counts[FAILED]:
        text += f"; {counts[FAILED]} could not be evaluated (their evaluation failed)"
    if unchecked:
        text += f"; {unchecked} statements not checkable"
    return text


def _why_no(e: dict) -> str:
    """A "no" claim's line at the top of the report: the criterion, its value and interval at
    the paper's setting, and the lab's computation of the reason."""
    ci = e.get("ci") or [None, None]
    eff = "–" if e.get("effect") is None else (
        f"{e['effect']:.3g} [{ci[0]:.3g}, {ci[1]:.3g}]" if None not in ci else
        f"{e['effect']:.3g}")
    why = f"- `{e['name']}` ({e['paper']} {e['source']}): {e.get('criterion', '')} = {eff}"
    return why + (f". {e['reason']}" if e.get("reason") else "")


def _cell(text: str) -> str:
    """Free text as one Markdown table cell: a ``|`` in it escaped, so it cannot split the row
    (GitHub and Python-Markdown both read ``\\|`` as a literal bar)."""
    return str(text).replace("|", "\\|")


def _md(entries: list[dict], mode: str, prov: dict, unchecked: Sequence[dict] = ()) -> str:
    rev = prov.get("git_revision") or prov.get("git", {}) or "unknown"
    noes = [e for e in entries if e["holds_at_paper"] == "no"]
    lines = [f"# Claims report ({mode} mode)", "",
             f"**{count_line(entries, len(unchecked))}.**", "",
             f"Written by `simplexlab claims{' --full' if mode == 'full' else ''}` "
             f"(revision {rev}). One line per claim: holds at the paper's setting (yes / partly "
             "/ no, judged on a 95 % interval over seeds), the fraction of its robustness grid "
             "where it holds (grid points that cannot tell left out), and where it fails. The "
             "criterion, the grid and every number are in `claims.json`; robustness maps: "
             "`robustness_*.png`.", ""]
    if noes:
        lines += ["## Why each \"no\"", "", *map(_why_no, noes), ""]
    lines += ["## Claims", "",
              "| claim | paper, source | experiment | at paper's setting | effect [95 % CI] "
              "| robust | boundary; reason |", "|---|---|---|---|---|---|---|"]
    for e in entries:
        eff = "–" if e["effect"] is None else (
            f"{e['effect']:.3g} [{e['ci'][0]:.3g}, {e['ci'][1]:.3g}]"
            if None not in e["ci"] else f"{e['effect']:.3g}")
        why = e["boundary"] + (f"; {e['reason']}" if e.get("reason") else "")
        frac = e["robustness_fraction"]
        robust = "–" if frac is None else f"{frac:.0%}"
        lines.append(f"| `{e['name']}` | {e['paper']} {e['source']} | {e['experiment'] or '–'} "
                     f"| {e['holds_at_paper']} | {eff} | {robust} | "
                     f"{_cell(why)} |")
    if unchecked:
        lines += ["", "## Statements not checkable", "",
                  "| statement | paper, source | the paper's words | why not |",
                  "|---|---|---|---|"]
        lines += [f"| `{u['name']}` | {u['paper']} {u['source']} | {_cell(u['sentence'])} | "
                  f"{_cell(u['why'])} |" for u in unchecked]
    cited = [k for k in BIBLIOGRAPHY if any(e["paper"] == k for e in entries)
             or any(u["paper"] == k for u in unchecked)]
    if cited:
        lines += ["", "## References", "", *(f"- **{k}**: {cite(k)}" for k in cited)]
    lines += ["", count_line(entries, len(unchecked)) + ".", ""]
    return "\n".join(lines)


def _maps(entries: list[dict], folder: Path) -> list[str]:
    """One robustness-map PNG per paper: a panel per claim, green where it holds, red where it
    fails, grey where the point cannot tell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    written = []
    cmap = ListedColormap(["#d73027", "#bdbdbd", "#1a9850"])  # fails, cannot tell, holds
    for paper in PAPERS:
        es = [e for e in entries if e["paper"] == paper and e["grid"].get("axes")]
        if not es:
            continue
        cols = min(4, len(es))
        rows = math.ceil(len(es) / cols)
        fig, axs = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.9 * rows), squeeze=False)
        for ax in axs.ravel()[len(es):]:
            ax.axis("off")
        for ax, e in zip(axs.ravel(), es, strict=False):
            axes = e["grid"]["axes"]
            names = list(axes)
            h = np.asarray(e["grid"]["holds"], float)
            inf = np.asarray(e["grid"].get("informative", np.ones(h.shape, bool)), bool)
            h = np.where(inf, h, 0.5)
            if h.ndim == 1:
                h = h[None, :]
                ylab, yt = "", [""]
            else:
                h = h.reshape(h.shape[0], -1) if h.ndim > 2 else h
                ylab = names[0]
                yt = [_fmt(v) for v in axes[names[0]]]
            xname = names[-1] if len(names) <= 2 else " × ".join(names[1:])
            xt = ([_fmt(v) for v in axes[names[-1]]] if len(names) <= 2 else
                  [",".join(_fmt(axes[n][i]) for n, i in zip(names[1:], t, strict=True))
                   for t in np.ndindex(*[len(axes[n]) for n in names[1:]])])
            ax.imshow(h, cmap=cmap, vmin=0, vmax=1, aspect="auto", origin="lower")
            ax.set_xticks(range(len(xt)), xt, fontsize=7, rotation=45 if len(xt) > 5 else 0)
            ax.set_yticks(range(len(yt)), yt, fontsize=7)
            ax.set_xlabel(xname, fontsize=8)
            ax.set_ylabel(ylab, fontsize=8)
            mark = "★ " if e["holds_at_paper"] == "yes" else ""
            frac = e["robustness_fraction"]
            where = "–" if frac is None else f"{frac:.0%}"
            of = "of grid" if inf.all() else f"of the {int(inf.sum())} points that can tell"
            ax.set_title(f"{mark}{e['name']}\nat paper: {e['holds_at_paper']}, {where} {of}",
                         fontsize=8)
        fig.suptitle(f"Robustness maps, {PAPERS[paper]} (green: the claim holds; red: it fails; "
                     "grey: cannot tell, within noise or censored)", fontsize=10)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=80)
        plt.close(fig)
        name = f"robustness_{paper}.png"
        atomic_write_bytes(folder / name, buf.getvalue())
        written.append(name)
    return written


def write_report(entries: list[dict], out: str | os.PathLike, *, quick: bool,
                 merge: bool = True, maps: bool = True) -> Path:
    """Write ``out/claims/claims.json`` and ``claims.md`` (and the robustness maps) atomically.
    With ``merge``, entries of claims not in ``entries`` are kept from an existing report of
    the same mode, in registry order."""
    folder = Path(out) / "claims"
    mode = "quick" if quick else "full"
    path = folder / "claims.json"
    if merge and path.is_file():
        try:
            old = read_json(path)
        except (OSError, ValueError):
            old = None
        if isinstance(old, dict) and old.get("mode") == mode:
            new = {e["name"] for e in entries}
            order = list(claims_registry())
            kept = [e for e in old.get("claims", []) if e.get("name") not in new
                    and e.get("name") in order]
            entries = sorted([*kept, *entries], key=lambda e: order.index(e["name"])
                             if e["name"] in order else len(order))
    prov = provenance()
    unchecked = [dataclasses.asdict(u) for u in unchecked_registry().values()]
    payload = {"provenance": prov, "mode": mode, "schema": list(SCHEMA),
               "claims": to_jsonable(entries), "not_checkable": unchecked}
    figs = _maps(entries, folder) if maps else []
    payload["figures"] = figs
    atomic_write_bytes(folder / "claims.md", _md(entries, mode, prov, unchecked).encode())
    atomic_write_json(path, payload)
    return path
