"""Schedule files: :func:`save_schedule` writes a schedule with its verification (JSON,
``simplexlab.gain_schedule/1``), :func:`load_schedule` reads it back (refusing a failed
verification unless ``force=True``), :func:`load_schedule_config` reads the TOML file of
``simplexlab schedule verify``. Every read and write goes through :mod:`simplexlab._results`."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

from .._results import atomic_write_json, provenance, read_json, read_toml
from ..shaping import GainSchedule
from ._report import ScheduleReport
from ._verify import VERIFY_OPTIONS

__all__ = ["FORMAT", "load_schedule", "load_schedule_config", "save_schedule"]

FORMAT = "simplexlab.gain_schedule/1"
"""The ``format`` field of a saved schedule file."""


def save_schedule(path: str | os.PathLike, schedule: GainSchedule,
                  report: ScheduleReport) -> Path:
    """Write ``schedule`` and its verification ``report`` atomically to ``path`` (JSON)::

        {"format": "simplexlab.gain_schedule/1", "schedule": {...GainSchedule.to_dict()},
         "verification": {"passed", "reasons", "numbers", "inputs"}, "provenance": {...}}

    The report must be the verification of this schedule (``ValueError`` otherwise). A failed
    verification is written too, marked failed: :func:`load_schedule` refuses it."""
    if not isinstance(schedule, GainSchedule):
        raise ValueError(f"save_schedule: schedule must be a GainSchedule; got {schedule!r}")
    if not isinstance(report, ScheduleReport):
        raise ValueError(f"save_schedule: report must be the ScheduleReport of verify_schedule; "
                         f"got {type(report).__name__}")
    if report.inputs.get("schedule") != schedule.to_dict():
        raise ValueError("save_schedule: the report verifies another schedule "
                         f"({report.inputs.get('schedule')}), not {schedule.to_dict()}")
    verification = {"passed": bool(report.passed), "reasons": list(report.reasons),
                    "numbers": report.key_numbers(), "inputs": report.inputs}
    return atomic_write_json(path, {"format": FORMAT, "schedule": schedule.to_dict(),
                                    "verification": verification,
                                    "provenance": provenance()})


def load_schedule(path: str | os.PathLike, *, force: bool = False) -> GainSchedule:
    """Read a schedule file written by :func:`save_schedule`.

    Refuses (``ValueError`` naming the file and the failed checks) a schedule whose
    verification failed, or whose ``schedule`` differs from the one its verification ran on,
    unless ``force=True`` (then a ``UserWarning`` says so). A file that is not JSON, has another
    ``format``, or lacks the schedule, one of its fields or its verification raises
    ``ValueError`` naming it (and the missing field)."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict) or "format" not in data:
        raise ValueError(f"{path}: not a simplexlab schedule file (no 'format'; expected "
                         f"{FORMAT!r})")
    if data["format"] != FORMAT:
        raise ValueError(f"{path}: unknown format {data['format']!r}; expected {FORMAT!r}")
    for key in ("schedule", "verification"):
        if not isinstance(data.get(key), dict):
            raise ValueError(f"{path}: malformed schedule file: no {key!r} table")
    try:
        schedule = GainSchedule.from_dict(data["schedule"])
    except (ValueError, TypeError) as err:
        raise ValueError(f"{path}: bad schedule: {err}") from None
    # save_schedule writes every field: a missing one is a damaged file, not a default
    missing = [k for k in GainSchedule.FIELDS if k not in data["schedule"]]
    if missing:
        raise ValueError(f"{path}: malformed schedule file: the schedule lacks the required "
                         f"field(s) {missing} (a saved schedule has all of "
                         f"{list(GainSchedule.FIELDS)})")
    ver = data["verification"]
    passed, reasons = ver.get("passed"), ver.get("reasons")
    if not isinstance(passed, bool) or not isinstance(reasons, list):
        raise ValueError(f"{path}: malformed verification record (needs 'passed' true/false and "
                         f"a list of 'reasons'); got {ver!r:.200}")
    problems = [] if passed else [str(r) for r in reasons] or ["(no reason recorded)"]
    verified = (ver.get("inputs") or {}).get("schedule")
    if verified != schedule.to_dict():
        problems.append(f"the schedule {schedule.to_dict()} is not the one verified "
                        f"({verified})")
    if problems:
        msg = f"{path}: gain schedule failed verification: " + "; ".join(problems)
        if not force:
            raise ValueError(msg + " (load_schedule(..., force=True) loads it anyway)")
        warnings.warn(msg + " (loaded with force=True)", UserWarning, stacklevel=2)
    return schedule


def load_schedule_config(path: str | os.PathLike) -> tuple[GainSchedule, dict[str, Any]]:
    """Read a TOML file with a ``[schedule]`` table (:class:`~simplexlab.shaping.GainSchedule`
    fields) and an optional ``[verify]`` table (:func:`~simplexlab.verify.verify_schedule`
    keyword arguments); returns ``(schedule, verify_kwargs)``. Unknown tables or keys raise
    ``ValueError`` naming them."""
    path = Path(path)
    data = read_toml(path)
    unknown = sorted(set(data) - {"schedule", "verify"})
    if unknown:
        raise ValueError(f"{path}: unknown table(s) or key(s) {unknown}; expected [schedule] "
                         "and optionally [verify]")
    if not isinstance(data.get("schedule"), dict):
        raise ValueError(f"{path}: needs a [schedule] table (fields: "
                         f"{list(GainSchedule.FIELDS)})")
    try:
        schedule = GainSchedule.from_dict(data["schedule"])
    except (ValueError, TypeError) as err:
        raise ValueError(f"{path}: [schedule]: {err}") from None
    opts = data.get("verify", {})
    if not isinstance(opts, dict):
        raise ValueError(f"{path}: [verify] must be a table; got {opts!r}")
    unknown = sorted(set(opts) - set(VERIFY_OPTIONS))
    if unknown:
        raise ValueError(f"{path}: [verify]: unknown key(s) {unknown}; known: "
                         f"{list(VERIFY_OPTIONS)}")
    _check_option_types(path, opts)
    return schedule, dict(opts)


#: TOML kinds by the type names of :func:`~simplexlab.verify.verify_schedule`'s annotations
_KINDS = (("bool", "a boolean"), ("int", "an integer"), ("float", "a number"),
          ("str", "a string"))


def _check_option_types(path: Path, opts: dict[str, Any]) -> None:
    """Every ``[verify]`` value of the TOML type its keyword's annotation names (a boolean is
    never a number, ``group_size = 2.5`` is no integer): a ``ValueError`` naming the file, the
    key, the type expected and the value given. Keys without a simple annotation (``y0``) are
    left to :func:`~simplexlab.verify.verify_schedule`."""
    import inspect

    from ._verify import verify_schedule

    params = inspect.signature(verify_schedule).parameters
    for key, v in opts.items():
        names = set(str(params[key].annotation).replace(" ", "").split("|")) - {"None"}
        kind = next((k for t, k in _KINDS if names == {t}), None)
        ok = {"a boolean": isinstance(v, bool),
              "an integer": isinstance(v, int) and not isinstance(v, bool),
              "a number": isinstance(v, int | float) and not isinstance(v, bool),
              "a string": isinstance(v, str)}.get(kind, True)
        if not ok:
            raise ValueError(f"{path}: [verify] {key} must be {kind}; got {v!r} "
                             f"({type(v).__name__})")
