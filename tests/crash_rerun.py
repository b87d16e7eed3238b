"""A pytest plugin (loaded by tests/conftest.py): a test whose xdist worker process crashed runs
once more, in the worker that replaces the dead one.

A long-lived test worker used to die inside XLA's CPU backend (a SIGSEGV or an abort, in
different files on different runs) when it had used up the kernel's memory mappings (NOTES.md,
"XLA's CPU backend crashes in a long-lived test worker"; tests/conftest.py now drops compiled
programs between files). xdist then reports the test that was running as failed although no
assertion of it ran. Such a test (only a crash of the process: a test that fails or errors is
never rerun) is scheduled once more; a second crash of the same test fails the run. Every crash
is listed at the end of the run. The controller (pytest's own process) runs the hook;
``SIMPLEXLAB_CRASH_RERUNS`` sets how many reruns (0: none). No import of JAX here:
tests/test_crash_rerun.py loads this file alone in its planted suites."""

import os

import pytest

_CRASH_RERUNS = int(os.environ.get("SIMPLEXLAB_CRASH_RERUNS", "1"))
_CRASHED: dict = {}


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem, report, sched):
    _CRASHED[crashitem] = _CRASHED.get(crashitem, 0) + 1
    if _CRASHED[crashitem] <= _CRASH_RERUNS:
        sched.mark_test_pending(crashitem)
        report.outcome = "rerun"  # not failed: the run's exit status is the rerun's


def pytest_report_teststatus(report, config):
    if report.outcome == "rerun":
        return "rerun", "R", ("RERUN", {"yellow": True})


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for nodeid, n in _CRASHED.items():
        times = f"crashed {n} time{'s' * (n != 1)}"
        again = "run again" if n <= _CRASH_RERUNS else f"{times}, not run again"
        terminalreporter.write_line(f"CRASHED WORKER: {nodeid} ({again}; NOTES.md, XLA's CPU "
                                    "backend crashes in a long-lived test worker)", yellow=True)
