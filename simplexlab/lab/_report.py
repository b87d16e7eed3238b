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
from ._claims import (
    FAILED,
    KINDS,
    PAPERS,
    SCHEMA,
    STATUSES,
    claims_registry,
    default_kind,
    unchecked_registry,
)
from ._stats import _fmt

__all__ = ["claim_kind", "count_line", "redraw_report", "write_report"]

def _status_line(e: dict) -> str:
    from ._status import status_line  # the figures' line, word for word

    return status_line(e)


def claim_kind(e: dict) -> str:
    """The kind (:data:`~simplexlab.lab._claims.KINDS`) of a report entry: its own ``"kind"``;
    for an entry written before claims had kinds, that of the registered claim of its name, else
    :func:`~simplexlab.lab._claims.default_kind` of its source."""
    if e.get("kind") in KINDS:
        return e["kind"]
    registered = claims_registry().get(e.get("name"))
    if registered is not None:
        return registered.kind
    return default_kind(e.get("paper", ""), bool(e.get("uses_committed_result")))


def _noes_by_kind(entries: list[dict]) -> dict[str, list[dict]]:
    """The "no" entries by kind, in :data:`KINDS` order (kinds without one left out)."""
    noes = [e for e in entries if e["holds_at_paper"] == "no"]
    by = {k: [e for e in noes if claim_kind(e) == k] for k in KINDS}
    return {k: v for k, v in by.items() if v}


def count_line(entries: list[dict], unchecked: int | None = None) -> str:
    """``"33 claims: 20 hold, 8 partly, 5 do not hold at the paper's setting (4 where the lab's
    computation contradicts the paper, 1 where the lab's committed run does not reproduce the
    figure)"``: the "no"s split by
    what their claims check (:func:`claim_kind`), so that a paper the lab shows wrong, a figure
    its run does not reproduce and the finite-group bandit leaving the mean field are not one
    number; and how many evaluations failed, when any did (a failure is no verdict); and, given
    ``unchecked``, how many statements are not checkable."""
    counts = {s: sum(e["holds_at_paper"] == s for e in entries) for s in (*STATUSES, FAILED)}
    text = (f"{len(entries)} claims: {counts['yes']} hold, {counts['partly']} partly, "
            f"{counts['no']} do not hold at the paper's setting")
    if by := _noes_by_kind(entries):
        text += " (" + ", ".join(f"{len(v)} {KINDS[k][1]}" for k, v in by.items()) + ")"
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


def _md(entries: list[dict], mode: str, prov: dict, unchecked: Sequence[dict] = (),
        drawn: str | None = None) -> str:
    """The report's page; ``drawn``: the revision that drew it from an earlier evaluation's
    claims.json (:func:`redraw_report`), named beside the evaluating one."""
    rev = prov.get("git_revision") or prov.get("git", {}) or "unknown"
    if drawn is not None:
        rev = f"{rev}; this page and the maps drawn from its claims.json by revision {drawn}"
    lines = [f"# Claims report ({mode} mode)", "",
             f"**{count_line(entries, len(unchecked))}.**", "",
             f"Written by `simplexlab claims{' --full' if mode == 'full' else ''}` "
             f"(revision {rev}). One line per claim: holds at the paper's setting (yes / partly "
             "/ no, judged on a 95 % interval over seeds), the fraction of its robustness grid "
             "where it holds (grid points that cannot tell left out), and where it fails. The "
             "criterion, the grid and every number are in `claims.json`; robustness maps: "
             "`robustness_*.png`.", ""]
    if by := _noes_by_kind(entries):
        lines += ["## Why each \"no\"", ""]
        for kind, noes in by.items():
            lines += [f"**{len(noes)} {KINDS[kind][1]}** ({KINDS[kind][0]}):", "",
                      *map(_why_no, noes), ""]
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


#: the robustness maps' colours (blue / orange / grey: apart for colour-blind readers too)
#: and the mark each cell also carries, so that the map reads without colour
MAP_COLOURS = {"fails": "#e66101", "cannot tell": "#d9d9d9", "holds": "#2166ac"}
MAP_MARKS = {"fails": "✗", "cannot tell": "?", "holds": "✓"}


def _paper_cell(e: dict, names: list[str]) -> tuple | None:
    """The grid index of the paper's setting, where every axis of the grid has the paper's
    value among its points (``paper_setting`` keyed by the axis name); else ``None``."""
    setting, axes = e.get("paper_setting") or {}, e["grid"]["axes"]
    idx = []
    for n in names:
        values = [str(v) for v in axes[n]]
        if n not in setting or str(setting[n]) not in values:
            return None
        idx.append(values.index(str(setting[n])))
    return tuple(idx)


def _maps(entries: list[dict], folder: Path) -> list[str]:
    """One robustness-map PNG per paper: a panel per claim, each grid point marked holds (✓,
    blue), fails (✗, orange) or cannot tell (?, grey: within noise or censored in both arms);
    the paper's setting outlined where the grid holds it; ★ in a title: the claim holds at the
    paper's setting. A legend says all of it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    written = []
    cmap = ListedColormap([MAP_COLOURS["fails"], MAP_COLOURS["cannot tell"],
                           MAP_COLOURS["holds"]])
    for paper in PAPERS:
        es = [e for e in entries if e["paper"] == paper and e["grid"].get("axes")]
        if not es:
            continue
        cols = min(4, len(es))
        rows = math.ceil(len(es) / cols)
        fig, axs = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.9 * rows + 0.6),
                                squeeze=False)
        for ax in axs.ravel()[len(es):]:
            ax.axis("off")
        for ax, e in zip(axs.ravel(), es, strict=False):
            axes = e["grid"]["axes"]
            names = list(axes)
            h = np.asarray(e["grid"]["holds"], float)
            inf = np.asarray(e["grid"].get("informative", np.ones(h.shape, bool)), bool)
            h = np.where(inf, h, 0.5)
            cell = _paper_cell(e, names)
            if h.ndim == 1:
                h = h[None, :]
                ylab, yt = "", [""]
                cell = None if cell is None else (0, cell[0])
            else:
                shape = h.shape
                h = h.reshape(h.shape[0], -1) if h.ndim > 2 else h
                ylab = names[0]
                yt = [_fmt(v) for v in axes[names[0]]]
                if cell is not None and len(shape) > 2:
                    cell = (cell[0], int(np.ravel_multi_index(cell[1:], shape[1:])))
            xname = names[-1] if len(names) <= 2 else " × ".join(names[1:])
            xt = ([_fmt(v) for v in axes[names[-1]]] if len(names) <= 2 else
                  [",".join(_fmt(axes[n][i]) for n, i in zip(names[1:], t, strict=True))
                   for t in np.ndindex(*[len(axes[n]) for n in names[1:]])])
            ax.imshow(h, cmap=cmap, vmin=0, vmax=1, aspect="auto", origin="lower")
            if h.size <= 80:  # the mark in each cell: the map reads without colour
                for (i, j), v in np.ndenumerate(h):
                    key = "holds" if v == 1 else "fails" if v == 0 else "cannot tell"
                    ax.text(j, i, MAP_MARKS[key], ha="center", va="center", fontsize=8,
                            color="white" if key != "cannot tell" else "black")
            if cell is not None:
                ax.add_patch(Rectangle((cell[1] - 0.5, cell[0] - 0.5), 1, 1, fill=False,
                                       lw=2.2, ec="black"))
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
        handles = [Patch(fc=MAP_COLOURS[k], ec="none", label=f"{MAP_MARKS[k]} {k}"
                         + (" (within noise, or censored in both arms)"
                            if k == "cannot tell" else "")) for k in ("holds", "fails",
                                                                      "cannot tell")]
        handles += [Patch(fc="none", ec="black", lw=2,
                          label="the paper's setting (where the grid holds it)"),
                    Line2D([], [], ls="none", marker="*", color="black",
                           label="in a title: holds at the paper's setting")]
        fig.suptitle(f"Robustness maps, {PAPERS[paper]}: where each claim holds over what the "
                     "paper leaves open", fontsize=10)
        fig.legend(handles=handles, loc="lower center", ncol=5, fontsize=8, frameon=False)
        fig.tight_layout(rect=(0, 0.06 if rows == 1 else 0.04, 1, 0.97))
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=80)
        plt.close(fig)
        name = f"robustness_{paper}.png"
        atomic_write_bytes(folder / name, buf.getvalue())
        written.append(name)
    return written


def redraw_report(out: str | os.PathLike) -> Path:
    """Draw ``out/claims/claims.md`` and the robustness maps again from ``claims.json`` with
    this revision's drawing code, without evaluating any claim: the verdicts, numbers and their
    provenance stay those of the evaluation; the report says which revision drew it."""
    folder = Path(out) / "claims"
    path = folder / "claims.json"
    rep = read_json(path)
    if not isinstance(rep, dict) or "claims" not in rep or "mode" not in rep:
        raise ValueError(f"{path}: not a claims report (no 'claims' / 'mode')")
    entries, prov = rep["claims"], rep.get("provenance", {})
    try:  # the kinds of entries written before claims had kinds (claim_kind)
        from ._claims import load_claims

        load_claims()
    except (FileNotFoundError, ImportError):
        pass
    _maps(entries, folder)
    md = _md(entries, rep["mode"], prov, rep.get("not_checkable", []),
             drawn=provenance().get("git_revision") or "unknown")
    atomic_write_bytes(folder / "claims.md", md.encode())
    return path


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
