"""The status lines of the claims report, for figures and the claims report itself.

The claims report of an output folder ``OUT`` is ``OUT/claims/claims.json`` (written by
``simplexlab claims``); each claim records whether it holds at the paper's setting
(``holds_at_paper``: ``"yes"`` / ``"no"`` / ``"partly"``), the fraction of its robustness grid
where it holds (``robustness_fraction``) and the experiment it belongs to (``experiment``).
:func:`claim_status` turns one claim into one line; :func:`experiment_status` gives the lines
of every claim of one experiment, which each figure prints (:func:`simplexlab.lab.figure_note`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._results import read_json

__all__ = ["NOT_EVALUATED", "claim_status", "claims_report", "experiment_status", "status_line"]

#: what a figure says when no claim of its experiment is in the report
NOT_EVALUATED = "claims not evaluated (run: simplexlab claims)"

_HOLDS = {"yes": "holds at the paper's setting",
          "partly": "partly holds at the paper's setting",
          "no": "does not hold at the paper's setting",
          "failed": "evaluation failed (no verdict; see the claims report)"}


def claims_report(out_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The claims report ``out_dir/claims/claims.json``, or ``None`` when it is missing or not
    a claims report (a figure must still draw without one)."""
    path = Path(out_dir) / "claims" / "claims.json"
    if not path.is_file():
        return None
    try:
        report = read_json(path)
    except (OSError, ValueError):
        return None
    if not isinstance(report, dict) or not isinstance(report.get("claims"), list):
        return None
    return report


def _flat(x) -> list:
    return [v for item in x for v in _flat(item)] if isinstance(x, list) else [x]


def status_line(claim: dict[str, Any]) -> str:
    """One claim's status line: ``"holds at the paper's setting; in 64 % of its grid"``."""
    holds = _HOLDS.get(str(claim.get("holds_at_paper")), "status at the paper's setting unknown")
    frac = claim.get("robustness_fraction")
    if isinstance(frac, (int, float)) and not isinstance(frac, bool) and 0 <= frac <= 1:
        grid = claim.get("grid")
        inf = grid.get("informative") if isinstance(grid, dict) else None
        if isinstance(inf, list) and not all(_flat(inf)):
            return f"{holds}; in {100 * frac:.0f} % of the grid points that can tell"
        return f"{holds}; in {100 * frac:.0f} % of its grid"
    return holds


def claim_status(name: str, out_dir: str | os.PathLike) -> str:
    """The status line of the claim ``name`` in the claims report of ``out_dir``, e.g.
    ``"holds at the paper's setting; in 64 % of its grid"``, or ``"claim not evaluated (run:
    simplexlab claims NAME)"`` when the report or the claim is missing."""
    report = claims_report(out_dir)
    for claim in (report or {}).get("claims", []):
        if isinstance(claim, dict) and claim.get("name") == name:
            return status_line(claim)
    return f"claim not evaluated (run: simplexlab claims {name})"


def experiment_status(experiment: str, out_dir: str | os.PathLike) -> list[tuple[str, str]]:
    """``(claim name, status line)`` for every claim of the report of ``out_dir`` whose
    ``"experiment"`` is ``experiment``, in report order; ``[]`` when none is (or no report)."""
    report = claims_report(out_dir)
    return [(str(c.get("name")), status_line(c)) for c in (report or {}).get("claims", [])
            if isinstance(c, dict) and c.get("experiment") == experiment]
