"""The README's two set-up commands: CI runs exactly the test command the README shows."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _setup_commands():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Set-up on a fresh machine", 1)[1].split("\n## ", 1)[0]
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
