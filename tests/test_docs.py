"""The documentation site builds in strict mode (``mkdocs build --strict``, what ``simplexlab
docs`` runs): every public name of every layer face is documented and in the API reference,
every committed figure is in the gallery, and every notebook of ``notebooks/`` is executed in
quick mode during the build, so none can rot. Without the ``docs`` extra the notebooks still run
here, as scripts (the fallback), and the site test is skipped saying why.
"""

import html as html_lib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))
HAVE_DOCS = all(importlib.util.find_spec(m) is not None
                for m in ("mkdocs", "material", "mkdocstrings_handlers", "mkdocs_jupyter"))
NO_DOCS = 'the docs extra is not installed (python -m pip install -e ".[docs]")'


def _docs_module(stem: str):
    """``docs/<stem>.py`` (the site's build code, not a package module), imported."""
    spec = importlib.util.spec_from_file_location(f"simplexlab_docs_{stem}",
                                                  ROOT / "docs" / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hooks():
    return _docs_module("_hooks")


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found"


@pytest.mark.skipif(HAVE_DOCS, reason="executed by the docs build (test_site_builds)")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_quick_mode(path, tmp_path):
    env = dict(os.environ, SIMPLEXLAB_QUICK="1", MPLBACKEND="Agg", SIMPLEXLAB_PROGRESS="0")
    proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        f"{path.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")


@pytest.mark.skipif(importlib.util.find_spec("griffe") is None, reason=NO_DOCS)
def test_undocumented_public_names_are_found(tmp_path):
    """The check the build runs finds a face name without a docstring (and only that one)."""
    hooks = _hooks()
    for layer in hooks.LAYERS:
        face = tmp_path / "simplexlab" / layer
        face.mkdir(parents=True)
        (face / "__init__.py").write_text(
            f'"""The {layer} face."""\nfrom ._m import documented, bare\n'
            '__all__ = ["documented", "bare", "CONST"]\n'
            'CONST = 1\n"""A documented constant."""\n')
        (face / "_m.py").write_text('def documented():\n    """Docs."""\n\n\ndef bare():\n'
                                    '    return 1\n')
    (tmp_path / "simplexlab" / "__init__.py").write_text("")
    faces = hooks.face_names(tmp_path)
    assert hooks.undocumented(faces) == [f"simplexlab.{layer}.bare" for layer in hooks.LAYERS]


@pytest.mark.skipif(not HAVE_DOCS, reason=NO_DOCS)
def test_included_links_are_rewritten_for_the_page():
    """A README section included in a page keeps working links: into docs/ relative to the page,
    NOTES.md to its page, URLs as they are, a file outside the site as its name."""
    text = ("[a](docs/concepts/x.md#h) [b](NOTES.md) [`figures/`](figures/) [c](https://x.org/y) "
            "[d](figures/claims/claims.md) [e](#here) ![f](figures/f.png)")
    assert _hooks()._relink(text, "README.md", "getting-started/install.md") == (
        "[a](../concepts/x.md#h) [b](../notes.md) `figures/` [c](https://x.org/y) "
        "d (`figures/claims/claims.md`) [e](#here) ![f](figures/f.png)")


@pytest.mark.skipif(not HAVE_DOCS, reason=NO_DOCS)
def test_site_check_finds_what_a_reader_would_find_broken(tmp_path):
    """The check run over every fresh build passes a sound site and names each injected fault:
    raw maths (a Sphinx role, a ``.. math::`` block, a formula left unrendered), a link to a
    missing page or anchor, a table row with a cell too few."""
    hooks = _hooks()
    sound = ('<h2 id="x">x</h2><a href="b.html#y">b</a> <a href="#x">x</a> <a href="/b.html">b</a>'
             ' <a href="https://example.org/z">z</a><table><thead><tr><th>1</th><th>2</th></tr>'
             "</thead><tr><td>1</td><td>2</td></tr><tr><td colspan=\"2\">1</td></tr></table>")
    (tmp_path / "b.html").write_text('<h2 id="y">y</h2><math display="inline"><mi>x</mi></math>')
    faults = {
        "raw role": ("<p>:math:<code>x</code></p>", "raw maths (:math:)"),
        "raw block": ("<p>.. math:: x</p>", "raw maths (.. math::)"),
        "unrendered": ('<span class="arithmatex">\\(x\\)</span>', 'raw maths (class="arithmatex")'),
        "missing page": ('<a href="c.html">c</a>', "link to a missing page c.html"),
        "missing anchor": ('<a href="b.html#z">z</a>', "link to a missing anchor b.html#z"),
        "broken row": ("<table><tr><th>1</th><th>2</th></tr><tr><td>1</td></tr></table>",
                       "a table with rows of [1, 2] cells"),
    }
    (tmp_path / "index.html").write_text(sound)
    assert hooks.site_problems(tmp_path) == []
    for fault, (html, expected) in faults.items():
        (tmp_path / "index.html").write_text(sound + html)
        assert hooks.site_problems(tmp_path) == [f"index.html: {expected}"], fault


@pytest.mark.skipif(not HAVE_DOCS, reason=NO_DOCS)
def test_tables_and_maths_of_the_markdown():
    """A ``|`` that splits a cell fails the build (Python-Markdown would drop the surplus cells
    silently); pipes in code spans or escaped do not. ``$…$`` and ``$$…$$`` (pages and docstrings)
    become MathML at build time, through the site's own Markdown extensions."""
    import markdown

    hooks = _hooks()
    table = "| a | b |\n|---|---|\n| `x|y` | \\|z\\| |\n"
    assert hooks.table_problems(table) == []
    assert hooks.table_problems("text\n\n" + table + "| 1/|G| | 2 |\n") == [
        "line 6: 4 cells under a header of 2: | 1/|G| | 2 |"]
    assert hooks.table_problems("```\n| a |\n| b | c |\n```\n") == []
    html = markdown.markdown("Inline $\\Delta z_i = \\eta\\,\\hat A_i$ and\n\n$$\n\\frac{a}{b}\n$$",
                             extensions=["pymdownx.arithmatex"],
                             extension_configs={"pymdownx.arithmatex": {"generic": True}})
    rendered = hooks.render_maths(html)
    assert rendered.count("<math") == 2 and 'display="block"' in rendered
    assert "arithmatex" not in rendered and "\\Delta" not in rendered
    assert "<mfrac><mrow><mi>a</mi></mrow><mrow><mi>b</mi></mrow></mfrac>" in rendered
    assert "&#x00394;" in rendered  # the Δ


@pytest.mark.skipif(not HAVE_DOCS, reason=NO_DOCS)
@pytest.mark.slow
def test_site_builds(tmp_path):
    site = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-8000:]
    # the tutorials ran: every notebook's page holds its executed outputs
    for notebook in NOTEBOOKS:
        html = (site / "notebooks" / f"{notebook.stem}.html").read_text()
        assert "jp-OutputArea-output" in html, f"{notebook.name}: no output on its page"
    # figures are drawn inline
    assert 'src="data:image/png' in (site / "getting-started" / "phase_portrait.html").read_text()
    # every public name of every face has its entry in the API reference
    hooks = _hooks()
    for layer, rows in hooks.face_names().items():
        html = (site / "api" / f"{layer}.html").read_text()
        for name, _doc, _how in rows:
            assert re.search(rf'id="(simplexlab\.{layer}\.)?{re.escape(name)}"', html), (
                f"simplexlab.{layer}.{name} is not in the API reference")
    # every committed figure is in the gallery, with the command that regenerates it
    gallery = "".join(p.read_text() for p in (site / "gallery").glob("*.html"))
    for png in (ROOT / "figures").glob("*.png"):
        assert (site / "gallery" / "figures" / png.name).is_file(), png.name
        assert f"figures/{png.name}" in gallery, png.name
    assert "simplexlab reproduce" in gallery and "--full" in gallery
    # nothing a reader would find broken: raw maths, dead links or anchors, ragged tables
    assert hooks.site_problems(site) == []
    assert "<math" in (site / "api" / "theory.html").read_text()
    # the home page: the install line, and the example's figure, drawn by this build
    home = (site / "index.html").read_text()
    text = html_lib.unescape(re.sub(r"<[^>]+>", "", home))  # the code block's visible text
    assert "python -m pip install -e ." in text and 'alt="the example\'s output"' in home


def _sections():
    return _docs_module("_griffe_sections")


@pytest.mark.skipif(importlib.util.find_spec("griffe") is None, reason=NO_DOCS)
def test_parameter_descriptions_are_read_from_the_prose():
    """The API pages' Arguments rows take a parameter's description from the three forms the
    docstrings use, and nothing from a mere mention."""
    describe = _sections().describe
    text = ("The rule ``method`` (a name of ``METHODS``) at ``step``: the training step; "
            "``eta`` is unrelated.\n\n* ``gain`` -- λ0 (A, B); may be traced.\n"
            "* ``kind`` -- the schedule.\n")
    assert describe("method", text) == "A name of ``METHODS``"
    assert describe("step", text) == "The training step"
    assert describe("gain", text) == "λ0 (A, B); may be traced."
    assert describe("kind", text) == "The schedule."
    assert describe("eta", text) == ""
    assert describe("who", "raises (``who``: a prefix such as ``x``).") == "A prefix such as ``x``"


@pytest.mark.skipif(importlib.util.find_spec("griffe") is None, reason=NO_DOCS)
def test_every_public_function_gets_arguments_and_returns_and_every_module_its_fields():
    """Through the docs' griffe extension, every function of every layer face has an Arguments
    block (one row per parameter) and a Returns block (unless it returns ``None``), and every
    ``eqx.Module`` of a face a block of its fields: what the API pages render."""
    import griffe

    ext = _sections().ArgumentsAndReturns()
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)], extensions=griffe.load_extensions(ext))
    package = loader.load("simplexlab", try_relative_path=False)
    loader.resolve_aliases(implicit=False, external=False)
    hooks, checked, missing = _hooks(), 0, []
    for layer, rows in hooks.face_names(ROOT).items():
        for name, _doc, how in rows:
            if how != "griffe":
                continue
            obj = package[layer][name]
            obj = obj.final_target if obj.is_alias else obj
            text = obj.docstring.value if obj.docstring else ""
            if obj.is_function:
                params = [p for p in obj.parameters if p.name not in ("self", "cls")]
                checked += 1
                if params and "\n\nArgs:\n" not in text:
                    missing.append(f"{layer}.{name}: Arguments")
                if str(obj.returns) != "None" and "\nReturns:\n" not in text:
                    missing.append(f"{layer}.{name}: Returns")
                for p in params:
                    if not re.search(rf"^    \**{re.escape(p.name)}: ", text, re.M):
                        missing.append(f"{layer}.{name}: row {p.name}")
            elif obj.is_class and "Module" in [str(b) for b in obj.bases]:
                checked += 1
                if "\n\nAttributes:\n" not in text:
                    missing.append(f"{layer}.{name}: Attributes")
    assert checked > 100 and not missing, missing


#: the pages that tell a reader how a rule of their own reaches TRL and verl
RULE_PAGES = ("docs/concepts/own-rule.md", "docs/concepts/own_rule.py", "docs/llm/take-a-rule.md")


def test_the_rule_pages_agree_that_trl_and_verl_take_a_users_rule_by_name():
    """A rule registered from user code goes to TRL as ``G2RPOTrainer(method=...)`` and to verl
    as ``register_verl(method=...)``, with no subclass or estimator of the user's own: every
    page that says how says this, and none says otherwise (the adapters' behaviour:
    ``test_a_registered_rule_reaches_the_verl_estimator_by_name`` and tests/test_trl.py)."""
    for page in RULE_PAGES:
        text = " ".join((ROOT / page).read_text().split())
        assert "G2RPOTrainer" in text and "method=" in text, page
        assert "no subclass" in text, page
        for wrong in ("subclass as", "@register_adv_est", "register_adv_est in verl"):
            assert wrong not in text, (page, wrong)
    for page in RULE_PAGES[0::2]:
        text = " ".join((ROOT / page).read_text().split())
        assert "register_verl(method=" in text, page


def test_a_registered_rule_reaches_the_verl_estimator_by_name():
    """What the pages say of verl, on the adapter (verl itself not needed): a rule registered
    from user code computes through ``VerlEstimator`` by name, with its parameters; a rule that
    reads log-probabilities is refused, naming it."""
    torch = pytest.importorskip("torch")
    import numpy as np

    from simplexlab.llm import VerlEstimator
    from simplexlab.shaping import (
        Method,
        Param,
        dr_grpo_advantages,
        register_method,
        unregister_method,
        xp,
    )

    def scaled(groups, params, schedule, step, verifier, num_clusters):
        return params["docs_scale"] * dr_grpo_advantages(groups.rewards, groups.mask)

    register_method("docs_scaled", Method(("docs_scale",), scaled, binary=True),
                    params=[Param("docs_scale", 1.0, lambda a: ~(xp.isfinite(a) & (a > 0)),
                                  "finite and > 0", "s", "a scale")])
    try:
        est = VerlEstimator("docs_scaled", params={"docs_scale": 0.5})
        r = torch.tensor([[1.0], [0.0], [1.0], [1.0], [0.0], [0.0], [1.0], [0.0]])
        adv, _ = est(r, torch.ones_like(r), index=np.array(["a"] * 4 + ["b"] * 4))
        expected = 0.5 * np.array([0.25, -0.75, 0.25, 0.25, -0.25, -0.25, 0.75, -0.25])
        np.testing.assert_allclose(adv.squeeze(-1).numpy(), expected, rtol=1e-6)
    finally:
        unregister_method("docs_scaled")
    with pytest.raises(ValueError, match="log-probabilities"):
        VerlEstimator("progrpo")


def test_the_pages_state_no_run_time_of_their_own():
    """How long a command takes is stated once, in BENCHMARKS.md's current table (the site
    includes it); the README and the pages link it rather than quote a time that drifts from it
    (the README said "under 5 minutes" and "5 min 34 s", the home page "about 5½")."""
    times = re.compile(r"\b\d+(?:[.,]\d+)? ?(?:min|minutes?|hours?)\b|½|\bunder (?:a|\w+) "
                       r"minutes?\b|\babout \w+ minutes?\b")
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = {p.relative_to(ROOT).as_posix(): times.findall(p.read_text()) for p in pages}
    assert {k: v for k, v in found.items() if v} == {}
    assert times.findall("it takes about 5½ minutes, under five minutes, 5 min 34 s") == [
        "about 5½ minutes", "under five minutes", "5 min"]
    assert "#current-table" in (ROOT / "docs" / "index.md").read_text()
