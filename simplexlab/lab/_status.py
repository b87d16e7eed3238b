"""The status of the claims of a claims report, for figures (the interface of the claims report,
``OUT/claims/claims.json``, written by ``simplexlab claims`` / ``simplexlab reproduce``).

:func:`claim_status` gives one claim's line, :func:`experiment_status` the lines of every claim
of one registered experiment, in report order.
"""

from __future__ import annotations

import os
from pathlib import Path

from .._results import read_json

__all__ = ["claim_status", "experiment_status"]

_WORDS = {"yes": "holds", "partly": "partly holds", "no": "does not hold"}


def _claims(out_dir) -> list[dict]:
    path = Path(out_dir) / "claims" / "claims.json"
    try:
        report = read_json(path)
    except (OSError, ValueError):
        return []
    claims = report.get("claims") if isinstance(report, dict) else None
    return [c for c in claims or [] if isinstance(c, dict) and "name" in c]


def _line(c: dict) -> str:
    words = _WORDS.get(c.get("holds_at_paper"), "unknown status")
    frac = c.get("robustness_fraction")
    grid = f"in {frac:.0%} of its grid" if isinstance(frac, (int, float)) else "grid unknown"
    return f"{words} at the paper's setting; {grid}"


def claim_status(name: str, out_dir: str | os.PathLike) -> str:
    """One line: ``"holds at the paper's setting; in 64 % of its grid"``, or ``"claim not
    evaluated (run: simplexlab claims NAME)"`` when the report or the claim is missing."""
    for c in _claims(out_dir):
        if c["name"] == name:
            return _line(c)
    return f"claim not evaluated (run: simplexlab claims {name})"


def experiment_status(experiment: str, out_dir: str | os.PathLike) -> list[tuple[str, str]]:
    """``(claim name, status line)`` for every claim of the registered ``experiment`` in the
    report, in report order; empty when none was evaluated."""
    return [(c["name"], _line(c)) for c in _claims(out_dir) if c.get("experiment") == experiment]
