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
    lines = [f"# `simplexlab.{layer}`", "",
             f"::: simplexlab.{layer}", "    options:", "      members: false",
             "      show_root_heading: false", "      show_root_toc_entry: false", ""]
    for name, doc, how in rows:
        if how == "built":  # not visible to static analysis: its docstring, read from the source
            lines += [f"## `{name}` {{ #simplexlab.{layer}.{name} }}", "",
                      f"*Built on first access of `simplexlab.{layer}.{name}` (needs its extra).*",
                      "", doc or "", ""]
        else:
            lines += [f"::: simplexlab.{layer}.{name}", "    options:",
                      "      show_root_heading: true", "      heading_level: 2", ""]
    return "\n".join(lines)


def _api_index(faces) -> str:
    lines = ["# API reference", "",
             "One page per layer face (its `__init__.py`, the only public door of the layer), "
             "with every name of the face's `__all__` and its docstring. The build fails when a "
             "public name has no docstring. Layers import only the ones above them "
             "([Layers](../concepts/layers.md)).", "",
             "| face | names | contents |", "|---|---|---|"]
    for layer, rows in faces.items():
        lines.append(f"| [`simplexlab.{layer}`]({layer}.md) | {len(rows)} | {LAYERS[layer]} |")
    lines += ["", "The top-level modules `simplexlab.meanfield`, `geometry`, `sampling` (theory by "
              "topic), `metrics` (shaping's), `categorical` (sim's) and `plotting` (lab's) "
              "re-export these faces and hold no code.", "",
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
        index.append(f"| [{name}]({name}.md) | {short} | {took} |")
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
    """The text under ``heading`` up to the next heading (of any level; fenced code skipped)."""
    lines, start, fence = text.splitlines(), None, False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#+ ", line):
            if start is not None:
                return "\n".join(lines[start:i]).strip("\n")
            if line.lstrip("#").strip() == heading.strip():
                start = i + 1
    if start is None:
        raise PluginError(f"include: {file} has no heading {heading!r}")
    return "\n".join(lines[start:]).strip("\n")


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


def on_page_markdown(markdown, page, config, files):
    def include(m):
        path = ROOT / m["file"]
        if not path.is_file():
            raise PluginError(f"{page.file.src_uri}: include of a missing file {m['file']}")
        text = path.read_text()
        text = _section(text, m["section"], m["file"]) if m["section"] else text
        return _relink(text, m["file"], page.file.src_uri)

    return _INCLUDE.sub(include, markdown)


def on_page_content(html, page, config, files):
    # docstrings use Sphinx roles (:func:`name`); on the site the code span alone reads better
    return _ROLE.sub("<code>", html)
