"""The table "What each framework calls GRPO" of docs/llm/take-a-rule.md: its committed rows, and
a fresh run of the frameworks installed here written into the page.

    python tests/framework_table.py --write

runs every setting of each installed framework through the advantage oracle
(:func:`simplexlab.llm._frameworks.framework_rows`) and replaces that framework's rows in the page,
keeping the rows of the frameworks not installed here: run it in each environment that has one
(the main one has TRL, the CI's ``.venv-verl`` verl, ``.venv-tunix`` Tunix). The tests compare
the committed rows of each installed framework with a fresh run (tests/test_framework_table.py
for TRL, tests/test_verl.py and tests/test_tunix.py in their own environments)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "llm" / "take-a-rule.md"
START = "<!-- the framework table: written by `python tests/framework_table.py --write` -->"
END = "<!-- end of the framework table -->"


def _block(text: str) -> tuple[str, str, str]:
    head, sep, rest = text.partition(START)
    body, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"{PAGE.name} has no framework table between {START!r} and {END!r}")
    return head, body, tail


def header_lines(text: str | None = None) -> list[str]:
    """The table's two header lines in the page."""
    _, body, _ = _block(PAGE.read_text() if text is None else text)
    return body.strip().splitlines()[:2]


def committed_rows(framework: str | None = None, text: str | None = None) -> list[str]:
    """The table's rows in the page (``framework``: only those of one framework, the first
    word of the row's first cell)."""
    _, body, _ = _block(PAGE.read_text() if text is None else text)
    rows = [line for line in body.strip().splitlines()[2:] if line.startswith("| ")]
    if framework is None:
        return rows
    return [r for r in rows if r[2:].split(" ", 1)[0] == framework]


def fresh_rows(framework: str) -> list[str]:
    """A fresh run of ``framework``'s settings (it must be installed), as table lines."""
    import jax

    from simplexlab.llm._frameworks import framework_rows

    jax.config.update("jax_enable_x64", True)
    return [r.line() for r in framework_rows([framework])]


def write() -> list[str]:
    """Replace the rows of the frameworks installed here with a fresh run; returns those
    frameworks."""
    from simplexlab.llm._frameworks import FRAMEWORKS, HEADER, installed

    text = PAGE.read_text()
    head, _, tail = _block(text)
    done, rows = [], []
    for fw in FRAMEWORKS:
        if installed(fw) is None:
            rows += committed_rows(fw, text)
        else:
            rows += fresh_rows(fw)
            done.append(fw)
    PAGE.write_text(f"{head}{START}\n{HEADER}\n" + "\n".join(rows) + f"\n{END}{tail}")
    return done


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        print(__doc__)
        raise SystemExit(2)
    print(f"wrote the rows of {', '.join(write()) or 'no framework'} into {PAGE}")
