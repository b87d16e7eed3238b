"""The README is executable: every fenced code block in it runs here, or says in the README
source (an HTML comment ``<!-- not run: why -->`` right before it) why it cannot.

Python blocks run in a fresh interpreter in a temporary folder; a TOML block that names its
file (first line ``# experiments/...toml``) must equal that file; bash blocks run line by line
in a temporary folder that links ``experiments/``; the CLI synopsis (not run) is checked against
the parser. The two set-up commands: CI runs exactly the test command the README shows.
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
_BLOCK = re.compile(r"(?:<!--\s*not run:(?P<why>.*?)-->\n)?^```(?P<lang>\w*)\n(?P<code>.*?)^```$",
                    re.S | re.M)


def _blocks():
    return [(README[: m.start()].count("\n") + 1, m["lang"], m["code"], (m["why"] or "").strip())
            for m in _BLOCK.finditer(README)]


def _runnable():
    return [pytest.param(lang, code, id=f"line{line}-{lang}")
            for line, lang, code, why in _blocks() if not why]


def _env():
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return dict(os.environ, PYTHONPATH=path, SIMPLEXLAB_PROGRESS="0", MPLBACKEND="Agg",
                PATH=os.pathsep.join((str(Path(sys.executable).parent), os.environ["PATH"])))


def test_every_block_runs_or_says_why():
    blocks = _blocks()
    assert len(blocks) >= 10  # the regex still finds the blocks
    for line, lang, _code, why in blocks:
        if why:
            assert len(why) > 10, f"README line {line}: say why the block is not run"
        else:
            assert lang in {"python", "bash", "toml"}, (
                f"README line {line}: a ```{lang} block is neither run nor marked "
                "<!-- not run: why -->")


@pytest.mark.parametrize(("lang", "code"), _runnable())
def test_readme_block_runs(lang, code, tmp_path):
    if lang == "toml":
        # the block is the file it names, whole (it runs through the bash block that follows it)
        name = re.search(r"experiments/\S+\.toml", code)[0]
        assert code == (ROOT / name).read_text(), f"README's {name} differs from the file"
        return
    if lang == "python":
        if re.search(r"^\s*(import|from) (torch|transformers)\b", code, re.M):
            pytest.importorskip("torch")
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
        command = [w for w in words[1:3] if re.fullmatch(r"[a-z]+", w)]
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
