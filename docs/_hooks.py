"""mkdocs hooks of the documentation site (``mkdocs.yml``: ``hooks:``).

Everything the site says about the code comes from the repository, never from a copy:

- **API reference** (``api/<layer>.md``): one page per layer face, one entry per name of the
  face's ``__all__``, rendered by mkdocstrings from the docstrings. The build fails when a public
  name has no docstring of its own (:func:`undocumented`).
- **Gallery** (``gallery/<experiment>.md``): one page per registered experiment, from the
  registry (``experiments/``), the committed result files and figures of ``figures/``, and the
  claims report ``figures/claims/claims.json`` when there is one, and the experiment's notes in
  ``docs/_gallery/<experiment>.md`` when it has some.
- **Tutorials** (the pages ``notebooks/<notebook>/``): the jupytext notebooks of ``notebooks/``,
  executed at build time in quick mode by mkdocs-jupyter (a failing cell fails the build).
- **Includes**: a line ``<!-- include FILE -->`` or ``<!-- include FILE#Heading -->`` in a page is
  replaced by that file (or that section of it, without its heading), its relative links
  rewritten for the page: NOTES.md, BENCHMARKS.md, the claims report and the README's set-up
  commands, command-line synopsis, one-name-per-quantity table and papers.
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
from pathlib import Path

import mkdocs.plugins
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent

#: the layer faces, in import order, with one line each for the reference's index
LAYERS = {
    "theory": "maths: closed forms, mean-field fields and gains, the diffrax solver, geometry, "
              "fixed points, sampling theory, sharpening",
    "shaping": "advantage baselines and shaping rules by name, the portable `GainSchedule`, "
               "diversity metrics",
    "sim": "the simulator protocol and the simulators (categorical, bandit, toys)",
    "sweep": "the sweep engine: grids, sharding, chunks, resume, xarray Datasets",
    "verify": "G²RPO gain schedules verified before training, schedule files",
    "lab": "experiment registry, result files with provenance, CLI, plotting",
    "llm": "beside lab: the torch bridge, the GRPO driver, TRL / verl adapters, mode discovery",
}

#: the Basic API of each face (what a newcomer calls first; the rest of the face is Advanced),
#: in reading order; a name that leaves its face fails the build
BASIC = {
    "theory": ("State", "make_state", "Verifier", "GRPO", "Neutralized", "ScheduleB", "GoodBonus",
               "FiniteGroup", "solve", "solve_ensemble", "Solution", "expected_update",
               "find_fixed_points", "collision_field"),
    "shaping": ("Groups", "advantages", "METHODS", "GainSchedule", "grpo_advantages",
                "g2rpo_advantages", "group_rule", "meanfield_system", "num_modes", "pass_at_k"),
    "sim": ("SIMULATORS", "Bandit", "Categorical", "CategoricalConfig", "trajectory"),
    "sweep": ("run", "run_config", "load_config"),
    "verify": ("verify_schedule", "plan", "save_schedule", "load_schedule"),
    "lab": ("experiment", "Context", "claim", "ClaimContext", "Verdict", "load_experiments",
            "evaluate_claims", "plot_portrait", "bandit_vs_theory", "plot_solution",
            "plot_training", "use_style"),
    "llm": ("advantages", "to_torch", "to_jax", "TrainConfig", "train", "G2RPOTrainer",
            "register_verl", "discover_modes"),
}

_INCLUDE = re.compile(r"^<!--\s*include\s+(?P<file>[^#\s]+)(?:#(?P<section>[^>]+?))?\s*-->\s*$",
                      re.M)
_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|data|meth|attr|exc|obj|const):<code>~?")


# ---------------------------------------------------------------------------- the docstring check


def _own_docstring(node) -> str:
    return (node.docstring.value if node.docstring else "").strip()


def _static_docstring(folder: Path, name: str) -> str | None:
    """The docstring of a class or function ``name`` defined anywhere in the layer's modules,
    nested ones included (for names built at run time, e.g. ``llm.G2RPOTrainer``)."""
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == name:
                return ast.get_docstring(node)
    return None


def face_names(root: Path = ROOT) -> dict[str, list[tuple[str, str | None, str]]]:
    """For each layer face: ``(name, docstring or None, how)`` for every name of its ``__all__``,
    read statically with griffe (what mkdocstrings renders); ``how`` is ``"griffe"`` or, for a
    name the face builds at run time, ``"built"`` (docstring read from the source). ``root``:
    the folder holding the package ``simplexlab/``."""
    import griffe

    loader = griffe.GriffeLoader(search_paths=[str(root)])
    package = loader.load("simplexlab", try_relative_path=False)
    loader.resolve_aliases(implicit=False, external=False)
    faces = {}
    for layer in LAYERS:
        module = package[layer]
        if module.exports is None:
            raise PluginError(f"simplexlab.{layer} has no __all__: its face must list its names")
        rows = []
        for name in map(str, module.exports):
            try:
                obj = module[name]
                if obj.is_alias:
                    obj = obj.final_target
                rows.append((name, _own_docstring(obj) or None, "griffe"))
            except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
                doc = _static_docstring(root / "simplexlab" / layer, name)
                rows.append((name, (doc or "").strip() or None, "built"))
        faces[layer] = rows
    return faces


def undocumented(faces) -> list[str]:
    """Every public name of a face without a docstring of its own (``layer.name``)."""
    return [f"simplexlab.{layer}.{name}" for layer, rows in faces.items()
            for name, doc, _how in rows if not doc]


# ------------------------------------------------------------------------------ generated pages


def _api_page(layer: str, rows) -> str:
    """The face's page: its docstring, then the Basic names (:data:`BASIC`, in that order), then
    the Advanced ones (the rest, in the face's order), one entry per name."""
    names = [name for name, _doc, _how in rows]
    if missing := [n for n in BASIC[layer] if n not in names]:
        raise PluginError(f"docs/_hooks.py BASIC[{layer!r}] names {missing}, which "
                          f"simplexlab.{layer}.__all__ does not list")
    by_name = {row[0]: row for row in rows}
    basic = [by_name[n] for n in BASIC[layer]]
    advanced = [row for row in rows if row[0] not in BASIC[layer]]
    lines = [f"# `simplexlab.{layer}`", "",
             f"::: simplexlab.{layer}", "    options:", "      members: false",
             "      show_root_heading: false", "      show_root_toc_entry: false", ""]
    for title, part, what in (
            ("Basic", basic, "what most work with this layer calls"),
            ("Advanced", advanced, "the rest of the face: building blocks, closed forms of "
                                   "single equations, tables and helpers")):
        lines += [f"## {title}", "", f"*{len(part)} names: {what}.*", ""]
        for name, doc, how in part:
            if how == "built":  # not visible to static analysis: its docstring, from the source
                lines += [f"### `{name}` {{ #simplexlab.{layer}.{name} }}", "",
                          f"*Built on first access of `simplexlab.{layer}.{name}` (needs its "
                          "extra).*", "", doc or "", ""]
            else:
                lines += [f"::: simplexlab.{layer}.{name}", "    options:",
                          "      show_root_heading: true", "      heading_level: 3", ""]
    return "\n".join(lines)


def _api_index(faces) -> str:
    lines = ["# API reference", "",
             "One page per layer face (its `__init__.py`, the only public door of the layer), "
             "with every name of the face's `__all__` and its docstring: first the Basic names "
             "(what most work with the layer calls), then the Advanced ones. Every function "
             "shows its Arguments and Returns, every module its fields. The build fails when a "
             "public name has no docstring. Layers import only the ones above them "
             "([Layers](../concepts/layers.md)).", "",
             "| face | names | contents |", "|---|---|---|"]
    for layer, rows in faces.items():
        lines.append(f"| [`simplexlab.{layer}`]({layer}.md) | {len(rows)} | {LAYERS[layer]} |")
    lines += ["", "Every public object has one address, the face of its layer; the top-level "
              "`simplexlab` re-exports a few names of `simplexlab.theory` (`solve`, `State`, "
              "the mean-field systems). The topic modules of 0.x (`simplexlab.meanfield`, "
              "`geometry`, `sampling`, `metrics`, `categorical`, `plotting`) are gone: "
              "[CHANGELOG](../changelog.md).", "",
              "::: simplexlab", "    options:", "      members: false",
              "      show_root_heading: true", "      heading_level: 2", ""]
    return "\n".join(lines)


def _claims(name: str, out_dir: Path) -> list[tuple[str, str]]:
    """(claim, status line) of the experiment's claims, through the lab's one reader."""
    try:
        from simplexlab.lab._status import experiment_status
    except ImportError:
        return []
    return list(experiment_status(name, out_dir))


def _gallery() -> tuple[dict[str, str], list[str]]:
    """The gallery's pages (src path -> Markdown) and the figures it shows."""
    sys.path.insert(0, str(ROOT))
    from simplexlab.lab import load_experiments

    figures = ROOT / "figures"
    experiments = load_experiments(ROOT / "experiments")
    pages, shown = {}, []
    index = ["# Gallery", "",
             "One page per registered experiment (`simplexlab list`): its figures as committed "
             "in `figures/` (from `simplexlab reproduce --full`), the paper figure it "
             "reproduces, its claim status and the command that regenerates it.", "",
             "| experiment | reproduces | full run |", "|---|---|---|"]
    for name, exp in experiments.items():
        result_file = figures / f"{name}.json"
        result = json.loads(result_file.read_text()) if result_file.is_file() else None
        pngs = [f for f in (result or {}).get("figures", []) if f.endswith(".png")]
        pngs = [f for f in pngs if (figures / f).is_file()]
        shown += pngs
        claims = _claims(name, figures)
        md = [f"# {name}", "", exp.description.strip(), "",
              f"**Reproduces:** {exp.reproduces}", ""]
        for png in pngs:
            md += [f"![{name}: {png}](figures/{png})", ""]
        if not pngs:
            md += ["*No committed figure yet: run the command below.*", ""]
        if claims:
            md += ["**Claims:**", ""] + [f"- `{claim}`: {status}" for claim, status in claims]
        else:
            md += ["**Claims:** not evaluated (run: `simplexlab claims`)."]
        md += ["", "**Regenerate:**", "", "```bash", f"simplexlab reproduce {name} --full",
               f"simplexlab reproduce {name}          # quick mode, figures/quick/", "```", ""]
        cost = ", ".join(f"{mode} {c}" for mode, c in exp.cost.items())
        if result is not None:
            prov = result.get("provenance", {})
            wall = result.get("wall_seconds")
            took = f"{wall:.0f} s" if isinstance(wall, int | float) else "not recorded"
            md += [f"**Run time:** {took} for the committed full run "
                   f"(`{prov.get('command', '?')}`, revision `{prov.get('git_revision', '?')}`, "
                   f"JAX {prov.get('jax_version', '?')} on {prov.get('jax_backend', '?')}, "
                   f"{prov.get('created_utc', '?')}); estimates: {cost}.", ""]
        else:
            md += [f"**Run time:** no committed result file; estimates: {cost}.", ""]
        notes = ROOT / "docs" / "_gallery" / f"{name}.md"
        if notes.is_file():  # more about this experiment's results, written by hand
            md += [notes.read_text().strip(), ""]
        if exp.requires:
            md += [f"Needs: {', '.join(exp.requires)} (an optional extra).", ""]
        md += [f"Source: `experiments/{Path(exp.source).name}`; result file: "
               f"`figures/{name}.json`.", ""]
        pages[f"gallery/{name}.md"] = "\n".join(md)
        took = (f"{result['wall_seconds']:.0f} s" if result and
                isinstance(result.get("wall_seconds"), int | float) else "—")
        short = exp.reproduces.split(". What differs")[0]  # as `simplexlab list` shows it
        index.append(f"| [{name}]({name}.md) | {short.replace('|', chr(92) + '|')} | {took} |")
    others = sorted(p.name for p in figures.glob("*.png") if p.name not in shown)
    if others:  # committed figures no result file names: shown, never dropped
        index += ["", "## Other committed figures", ""]
        for png in others:
            index += [f"![{png}](figures/{png})", ""]
            shown.append(png)
    claim_pngs = sorted((figures / "claims").glob("*.png"))
    if claim_pngs:
        index += ["", "## Claims robustness maps", "",
                  "From `simplexlab claims` (`figures/claims/`).", ""]
        for png in claim_pngs:
            index += [f"![{png.name}](figures/claims/{png.name})", ""]
            shown.append(f"claims/{png.name}")
    pages["gallery/index.md"] = "\n".join(index)
    return pages, shown


# ------------------------------------------------------------------------------------ the hooks

_FACES: dict = {}
_GALLERY: dict = {}


def _title(notebook: Path) -> str:
    m = re.search(r"^# # (.+)$", notebook.read_text(), re.M)
    return m[1].strip() if m else notebook.stem


def _set_nav(config):
    """The gallery and the tutorials in the navigation: every experiment, every notebook."""
    gallery = ["gallery/index.md"] + [{src.split("/")[1][:-3]: src}
                                      for src in _GALLERY["pages"] if src != "gallery/index.md"]
    tutorials = [{_title(nb): f"notebooks/{nb.name}"}
                 for nb in sorted((ROOT / "notebooks").glob("*.py"))]
    for item in config["nav"]:
        if isinstance(item, dict) and "Gallery" in item:
            item["Gallery"] = gallery
        if isinstance(item, dict) and "Tutorials" in item:
            item["Tutorials"] = tutorials


def on_config(config):
    # the tutorials' kernels inherit this environment: quick mode, no progress bars, figures
    # inline in the page (whatever MPLBACKEND the caller had, e.g. the tests' Agg), one torch
    # thread, and this checkout's package first
    os.environ["SIMPLEXLAB_QUICK"] = "1"
    os.environ["SIMPLEXLAB_PROGRESS"] = "0"
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    # torch's intra-op threads: one per kernel unless the caller says otherwise. The tutorials'
    # tiny model has ops too small to share, and a thread per core spins against every other
    # busy process: on a loaded 2-core machine the llm tutorial ran in 126 s with torch's default
    # (2 threads) and in 42 s with one (its warm start alone: 11-34 s against 0.9 s)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    path = os.environ.get("PYTHONPATH", "")
    if str(ROOT) not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), path) if p)
    _GALLERY.clear()
    _GALLERY.update(zip(("pages", "shown"), _gallery(), strict=True))
    _set_nav(config)
    faces = face_names()
    missing = undocumented(faces)
    if missing:
        raise PluginError(f"{len(missing)} public name(s) without a docstring (the API reference "
                          "documents every name of every face):\n  " + "\n  ".join(missing))
    _FACES.clear()
    _FACES.update(faces)
    return config


def _add(files, config, src_uri: str, *, content: str | None = None, path: Path | None = None):
    old = files.get_file_from_path(src_uri)
    if old is not None:
        files.remove(old)
    files.append(File.generated(config, src_uri, content=content,
                                abs_src_path=None if path is None else str(path)))


@mkdocs.plugins.event_priority(100)  # before mkdocs-jupyter wraps the notebooks
def on_files(files, config):
    for layer, rows in _FACES.items():
        _add(files, config, f"api/{layer}.md", content=_api_page(layer, rows))
    _add(files, config, "api/index.md", content=_api_index(_FACES))
    for src, text in _GALLERY["pages"].items():
        _add(files, config, src, content=text)
    for png in _GALLERY["shown"]:
        _add(files, config, f"gallery/figures/{png}", path=ROOT / "figures" / png)
    for notebook in sorted((ROOT / "notebooks").glob("*.py")):  # the page notebooks/NAME/
        files.append(File(f"notebooks/{notebook.name}", src_dir=str(ROOT),
                          dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    return files


def _section(text: str, heading: str, file: str) -> str:
    """The text under ``heading`` up to the next heading of its level or above (fenced code
    skipped); the headings inside it go one level down, as they sit under the including page's
    own heading."""
    lines, start, level, fence = text.splitlines(), None, 0, False
    out: list[str] = []
    for line in lines:
        if line.startswith("```"):
            fence = not fence
        elif not fence and (m := re.match(r"(#+) ", line)):
            if start is not None and len(m[1]) <= level:
                break
            if start is None and line.lstrip("#").strip() == heading.strip():
                start, level = True, len(m[1])
                continue
            if start is not None:
                line = "#" + line
        if start is not None:
            out.append(line)
    if start is None:
        raise PluginError(f"include: {file} has no heading {heading!r}")
    return "\n".join(out).strip("\n")


#: repository files that are pages of the site under another name
_PAGE_OF = {"NOTES.md": "notes.md", "BENCHMARKS.md": "benchmarks.md"}
_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]+)\]\((?P<target>[^)\s]+)\)")


def _relink(text: str, file: str, page_uri: str) -> str:
    """The relative links of ``text`` (from the repository file ``file``) as seen from the page
    ``page_uri``: a link into ``docs/`` or to a file the site shows (``_PAGE_OF``) points at that
    page; a link to any other file of the repository (outside the site) keeps its text and names
    the file."""
    docs, here = ROOT / "docs", (ROOT / "docs" / page_uri).parent

    def relink(m):
        target, anchor = (m["target"].split("#", 1) + [""])[:2]
        if re.match(r"[a-z]+:", target) or not target:  # a URL, or an anchor of this file
            return m[0]
        path = ((ROOT / file).parent / target).resolve()
        rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else None
        if rel in _PAGE_OF:
            path = docs / _PAGE_OF[rel]
        if path.is_relative_to(docs):
            new = os.path.relpath(path, here).replace(os.sep, "/") + (f"#{anchor}" if anchor
                                                                      else "")
            return f"[{m['text']}]({new})"
        if m["text"].strip("`").rstrip("/") == rel:
            return m["text"]
        return f"{m['text']} (`{rel}`)"

    return _LINK.sub(relink, text)


_RUN = re.compile(r"^<!-- run: .*?-->\n```python\n(?P<code>.*?)^```$", re.M | re.S)


def _run_and_show(code: str, where: str) -> str:
    """Run a page's example (marked ``<!-- run: ... -->``) in a fresh interpreter in a temporary
    folder, and return the PNG it saves (the name in its last ``savefig``) as an inline image: the
    figure under the example is the example's own output, from this build. A failing example
    fails the build with its error."""
    import base64
    import subprocess
    import tempfile

    names = re.findall(r"savefig\([\"']([^\"']+\.png)", code)
    if not names:
        raise PluginError(f"{where}: a run example must save a PNG (savefig(\"NAME.png\"))")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(
            [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
        proc = subprocess.run([sys.executable, "-c", code], cwd=tmp, env=env,
                              capture_output=True, text=True, timeout=600)
        if proc.returncode:
            raise PluginError(f"{where}: the example failed:\n{proc.stderr[-3000:]}")
        data = base64.b64encode((Path(tmp) / names[-1]).read_bytes()).decode()
    return f"\n![the example's output]({'data:image/png;base64,' + data})\n"


def on_page_markdown(markdown, page, config, files):
    def include(m):
        path = ROOT / m["file"]
        if not path.is_file():
            raise PluginError(f"{page.file.src_uri}: include of a missing file {m['file']}")
        text = path.read_text()
        text = _section(text, m["section"], m["file"]) if m["section"] else text
        text = _relink(text, m["file"], page.file.src_uri)
        return claim_cards(text, page.file.src_uri) if m["file"].endswith("claims.md") else text

    markdown = _RUN.sub(lambda m: m[0] + "\n" + _run_and_show(m["code"], page.file.src_uri),
                        _INCLUDE.sub(include, markdown))
    if problems := table_problems(markdown):
        raise PluginError(f"{page.file.src_uri}: table rows with the wrong number of cells "
                          "(escape a | inside a cell as \\|):\n  " + "\n  ".join(problems))
    return markdown


def on_page_content(html, page, config, files):
    # docstrings use Sphinx roles (:func:`name`); on the site the code span alone reads better
    return render_maths(_ROLE.sub("<code>", html), page.file.src_uri)


# ------------------------------------------------------------------------------------ maths

#: what pymdownx.arithmatex (generic mode) leaves for a renderer: ``$x$`` and ``$$x$$``
_MATHS = re.compile(r'<(?P<tag>span|div) class="arithmatex">\\[(\[](?P<tex>.*?)\\[)\]]'
                    r"</(?P=tag)>", re.S)


def render_maths(html: str, where: str = "page") -> str:
    """Replace the formulas marked by ``pymdownx.arithmatex`` (``$…$`` inline, ``$$…$$`` display,
    in pages and docstrings alike) by MathML, rendered at build time by ``latex2mathml``: the
    browser draws it natively, with no script and no network (the site is browsable offline).
    A formula the converter cannot read fails the build with the page and the formula."""
    import html as html_lib

    from latex2mathml.converter import convert

    def render(m):
        tex = html_lib.unescape(m["tex"]).strip()
        try:
            return convert(tex, display="block" if m["tag"] == "div" else "inline")
        except Exception as e:  # noqa: BLE001 - the converter raises many kinds; name the formula
            raise PluginError(f"{where}: cannot render the formula {tex!r}: {e}") from e

    return _MATHS.sub(render, html)


# ------------------------------------------------------------------- checks of what is built

_CODE_SPAN = re.compile(r"(`+).*?\1")


def _cells(row: str) -> list[str]:
    """The cells of a Markdown table row; ``|`` inside code spans or escaped does not split."""
    keep: list[str] = []

    def hide(m):
        keep.append(m.group(0))
        return f"\0{len(keep) - 1}\0"

    hidden = _CODE_SPAN.sub(hide, row.strip().replace("\\|", "\0e\0"))
    cells = hidden.strip("|").split("|")
    restore = re.compile("\0(e|\\d+)\0")
    return [restore.sub(lambda m: "\\|" if m[1] == "e" else keep[int(m[1])], c).strip()
            for c in cells]


#: a claim's verdict at the paper's setting -> (admonition kind, words of its card's title)
_VERDICT = {"yes": ("success", "holds at the paper's setting"),
            "partly": ("warning", "holds on part of the paper's setting"),
            "no": ("failure", "does not hold at the paper's setting")}


def claim_cards(report: str, page_uri: str) -> str:
    """The claims report's two wide tables as cards (as tables they are a tall column at normal
    widths): one card per claim, its verdict in the title in words and colour (green / amber /
    red, each with its own icon, so the words carry it without colour), the facts on one line,
    where it fails below; one card per statement that cannot be checked, with the paper's words
    and why. A row whose cell count is not its header's fails the build."""
    up = "../" * page_uri.count("/")
    out, header = [], None
    for line in report.splitlines():
        if not line.startswith("|"):
            header = None
            out.append(line)
            continue
        cells = _cells(line)
        header = cells if header is None else header
        if header[0] not in ("claim", "statement"):  # another table stays a table
            out.append(line)
            continue
        if cells is header or set(cells[0]) <= {"-", ":"}:  # the header and its rule
            continue
        if len(cells) != len(header):
            raise PluginError(f"claims report: a row of {len(cells)} cells under a header of "
                              f"{len(header)} (draw it again: simplexlab claims --redraw): "
                              f"{line[:100]}")
        cells = [c.replace("\\|", "|") for c in cells]
        if header[0] == "statement":
            name, source, words, why = cells
            out += [f'!!! quote "{name.strip("`")}: not checkable in the lab"',
                    f"    **{source}**: {words}", "", f"    *Why not:* {why}", ""]
            continue
        name, source, experiment, verdict, effect, robust, boundary = cells
        kind, words = _VERDICT.get(verdict, ("bug", f"failed to evaluate ({verdict})"))
        where = (f"experiment [{experiment}]({up}gallery/{experiment}.md)"
                 if experiment not in ("–", "") else "no experiment")
        out += [f'!!! {kind} "{name.strip("`")}: {words}"',
                f"    **{source}** · {where} · effect {effect} · "
                + ("no robustness grid" if robust in ("–", "") else
                   f"holds on {robust} of its robustness grid"), "",
                f"    {boundary}", ""]
    return "\n".join(out)


def table_problems(markdown: str) -> list[str]:
    """Rows of the Markdown tables of ``markdown`` whose cell count differs from their header's
    (an unescaped ``|`` inside a cell splits it, and Python-Markdown drops the surplus cells
    silently). Pipes inside code spans and escaped pipes do not separate cells."""
    problems, header, fence = [], None, False
    for number, line in enumerate(markdown.splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        stripped = line.strip()
        if fence or not stripped.startswith("|"):
            header = None if not fence else header
            continue
        cells = _cells(stripped)
        if header is None:
            header = len(cells)
        elif len(cells) != header:
            problems.append(f"line {number}: {len(cells)} cells under a header of {header}: "
                            f"{stripped[:100]}")
    return problems



class _Page:
    """What the site check needs of one built HTML page: its ids, links and table rows."""

    def __init__(self, text: str):
        from html.parser import HTMLParser

        self.ids, self.links, self.tables = set(), [], []
        page = self

        class Parser(HTMLParser):
            def handle_starttag(self, tag, attrs):
                attrs = dict(attrs)
                if attrs.get("id"):
                    page.ids.add(attrs["id"])
                if tag == "a" and attrs.get("href"):
                    page.links.append(attrs["href"])
                elif tag == "table":
                    page.tables.append([])
                elif tag == "tr" and page.tables:
                    page.tables[-1].append(0)
                elif tag in ("td", "th") and page.tables and page.tables[-1]:
                    page.tables[-1][-1] += int(attrs.get("colspan") or 1)

        Parser().feed(text)


def site_problems(site: Path) -> list[str]:
    """What a reader of the built site ``site`` would find broken, one line each: maths left raw
    (a Sphinx ``:math:`` role, a ``.. math::`` block, a formula the renderer did not reach), an
    internal link to a missing page or to a missing anchor, a table whose rows have different
    numbers of cells. ``tests/test_docs.py`` runs it over a fresh build."""
    import html as html_lib
    from urllib.parse import unquote, urlsplit

    site = site.resolve()
    pages = {p: p.read_text(errors="replace") for p in sorted(site.rglob("*.html"))}
    parsed: dict[Path, _Page] = {}

    def page_of(path: Path) -> _Page:
        if path not in parsed:
            parsed[path] = _Page(pages[path])
        return parsed[path]

    problems = []
    for path, text in pages.items():
        name = path.relative_to(site).as_posix()
        visible = html_lib.unescape(re.sub(r"<[^>]+>", "", text))
        for raw in (":math:", ".. math::", 'class="arithmatex"'):
            if raw in (text if raw.startswith("class") else visible):
                problems.append(f"{name}: raw maths ({raw})")
        page = page_of(path)
        for href in page.links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("mailto:", "data:")):
                continue
            base = site if parts.path.startswith("/") else path.parent  # the 404 page's are
            target = (base / unquote(parts.path).lstrip("/")).resolve() if parts.path else path
            if target.is_dir() or (parts.path.endswith("/")):
                target = target / "index.html"
            if target not in pages:
                if not target.exists():
                    problems.append(f"{name}: link to a missing page {href}")
                continue
            if parts.fragment and unquote(parts.fragment) not in page_of(target).ids:
                problems.append(f"{name}: link to a missing anchor {href}")
        for table in page.tables:
            if len(set(table)) > 1:
                problems.append(f"{name}: a table with rows of {sorted(set(table))} cells")
    return problems
