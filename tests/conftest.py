"""Test configuration: float64 everywhere, strict dtype promotion, shared tolerance helpers, and
one JAX persistent compilation cache for the whole session (``SIMPLEXLAB_JAX_CACHE``).

The cache folder: ``SIMPLEXLAB_JAX_CACHE`` when the caller sets it (a folder kept between runs,
or ``0`` to switch the cache off), else a new temporary folder that the first process of the
session (pytest itself, or xdist's controller) creates, exports and removes at exit. Every xdist
worker and every subprocess a test starts (the CLI, README blocks, notebooks, sweep workers,
two-process runs) inherits the variable, so a program one of them compiled is loaded by the
others (each program is written whole: simplexlab._jax_cache); a suite run never reads or fills the
user's own cache, and starts from the same empty folder on every machine. Tests that measure
compilation (tests/test_compile_cache.py) give their children folders of their own. The test
processes store only programs that took 0.2 s or more to compile (most of the suite's thousands
of programs compile in milliseconds: storing every one made the 59 fault tests, which compile
everything again under each fault, 3 % faster, 117.1 -> 113.6 s); the CLI stores all."""

import atexit
import os
import shutil
import sys
import tempfile

import jax

from simplexlab._env import CACHE_VAR, STORE_KEY_VAR, fast_compile_flags, use_compilation_cache

if CACHE_VAR not in os.environ:  # the session's first process: one folder for all of them
    _folder = tempfile.mkdtemp(prefix="simplexlab-test-jax-cache-")
    os.environ[CACHE_VAR] = _folder
    atexit.register(shutil.rmtree, _folder, ignore_errors=True)
if STORE_KEY_VAR not in os.environ:  # the sweep store's secret: the session's, not the user's
    _keys = tempfile.mkdtemp(prefix="simplexlab-test-store-key-")
    os.environ[STORE_KEY_VAR] = os.path.join(_keys, "store.key")
    atexit.register(shutil.rmtree, _keys, ignore_errors=True)
# Where Python writes no bytecode (PYTHONDONTWRITEBYTECODE, set on the CI machine), every process
# the suite starts (~150: CLI runs, README blocks, notebook kernels, sweep workers) would compile
# the package's and the experiments' sources again: pytest's own process (not its xdist workers)
# compiles them once instead (a few seconds; tests/test_readme.py 91 -> 87 s of CPU). The
# installed packages were byte-compiled by pip.
if sys.dont_write_bytecode and "PYTEST_XDIST_WORKER" not in os.environ:
    import compileall

    _root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for _part in ("simplexlab", "experiments", "tests"):
        compileall.compile_dir(os.path.join(_root, _part), quiet=1)

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("SIMPLEXLAB_PROGRESS", "0")
# On a GPU, JAX's default gives each process 75 % of the card's memory when its backend starts:
# of 8 test workers sharing one GPU, five could not start theirs (seen on an H200). Each process
# takes what it uses instead. Read when the backend starts; no effect on a CPU.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# torch (the LLM bridge, driver, TRL and modes tests, and their subprocesses) on one thread per
# process: xdist runs two workers on the CI's two cores, and a second torch thread per worker only
# waits for a core (the TRL README block: 28 s instead of 49 s on a loaded 2-core machine). Read
# by torch when it loads, so set before any test imports it; a caller's setting is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# XLA compiles faster in the test processes and every subprocess they start (a caller's setting of
# either flag is kept). Most of the suite's time is compiling (thousands of small programs, a few
# diffrax solvers), little of it running them: per pytest worker about a third of the CPU time is
# XLA's backend compile (4,410 programs, 333 s in a full run), another seventh tracing and
# lowering. Two settings, both affecting only how XLA's CPU backend turns the same HLO program
# into machine code:
# - LLVM at optimization level 0: a tiny sweep of every simulator, 15.9 s -> 11.5 s of CPU;
# - XLA's older loop emitters instead of its MLIR fusion emitters (--xla_cpu_use_fusion_emitters
#   =false): tests/test_meanfield.py 62 s -> 49 s in one process; 480 small eager ops 20 s -> 13 s.
# The numbers differ from the default build's only in the last bits (floating-point contraction,
# the order of a vectorised reduction): no test compares against a number computed outside the
# suite's own processes. The workers of the layout tests (tests/sweep_*worker.py, the cluster
# test) compile with XLA's defaults: the bits they compare are those of the programs users run.
# The committed results and figures (`simplexlab reproduce --full`, benchmarks) are computed with
# XLA's defaults; quick runs of the CLI use these same flags (simplexlab._env.fast_compile_flags:
# the emitter flag only with the jaxlib it was checked on, XLA aborts on a flag it does not know).
_flags = os.environ.get("XLA_FLAGS", "")
for _flag in fast_compile_flags():
    if _flag.split("=")[0] not in _flags:
        _flags = f"{_flags} {_flag}".strip()
os.environ["XLA_FLAGS"] = _flags
use_compilation_cache(min_compile_time=0.2)

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# CI draws the same examples on every run (a failure there is reproducible); "dev" explores
settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.register_profile(
    "dev", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def assert_close(actual, expected, *, rtol=1e-12, atol=1e-12, err_msg=""):
    """``np.testing.assert_allclose`` on NumPy copies (works for JAX arrays and pytrees leaves)."""
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol,
                               err_msg=err_msg)


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)


def pytest_collection_modifyitems(config, items):
    """Longest first: the tests marked ``slow`` (the docs build, end-to-end CLI and sweep runs)
    are moved to the front, the order otherwise unchanged (a stable sort). With xdist's
    ``worksteal`` scheduling (pyproject's ``addopts``) one worker starts on them while the other
    takes the short tests, and the last minutes are short tests on both workers instead of one
    long test on one (the suite's wall time is then about half its work)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# -- what each test file compiles (SIMPLEXLAB_COUNT_PROGRAMS=PREFIX) -----------------------------
#: With ``SIMPLEXLAB_COUNT_PROGRAMS=PREFIX`` every test process (pytest's own, each xdist worker)
#: counts the programs XLA compiles while each test file's tests run in it, and the seconds of
#: JAX's compile phases (tracing, lowering, compiling: ``jax.monitoring``), and writes them to
#: ``PREFIX.<worker>.json`` at the end: ``{file: {"programs": n, "compile_s": s, "tests": n}}``
#: (the subprocesses a test starts are not counted). Which files compile the most is where
#: sharing programs (traced settings) saves the suite's time. Off by default.
_COUNT_PREFIX = os.environ.get("SIMPLEXLAB_COUNT_PROGRAMS")
if _COUNT_PREFIX:
    import json as _json

    import jax.monitoring as _monitoring

    _COUNTS: dict = {}
    _CURRENT = [None]

    def _count(event, duration, **kwargs):
        if _CURRENT[0] is None or not event.startswith("/jax/core/compile/"):
            return
        row = _COUNTS[_CURRENT[0]]
        row["compile_s"] += float(duration)
        row["programs"] += event.endswith("backend_compile_duration")

    _monitoring.register_event_duration_secs_listener(_count)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        path = item.nodeid.split("::")[0]
        _COUNTS.setdefault(path, {"programs": 0, "compile_s": 0.0, "tests": 0})["tests"] += 1
        _CURRENT[0] = path
        try:
            yield
        finally:
            _CURRENT[0] = None

    def pytest_sessionfinish(session, exitstatus):
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        if _COUNTS:
            with open(f"{_COUNT_PREFIX}.{worker}.json", "w") as f:
                _json.dump(_COUNTS, f, indent=1, sort_keys=True)


# A worker that has compiled thousands of programs drops them between test files when it holds
# half the kernel's memory mappings: XLA maps memory for every program it keeps, and a process at
# vm.max_map_count dies in LLVM (NOTES.md). A test file's programs stay while it runs.
from simplexlab._env import release_programs_near_map_limit  # noqa: E402


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    if nextitem is None or nextitem.path != item.path:
        release_programs_near_map_limit()


# a test whose xdist worker crashed runs once more, in a fresh worker (tests/crash_rerun.py)
from crash_rerun import (  # noqa: E402, F401
    pytest_handlecrashitem,
    pytest_report_teststatus,
    pytest_terminal_summary,
)
