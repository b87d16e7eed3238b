"""The suite's rerun of a test whose xdist worker crashed (tests/conftest.py): a test that killed
its worker runs once more in a fresh one; one that crashes again fails the run; a test that
fails is never rerun. Checked on planted tests in a pytest subprocess with the suite's plugin
(tests/crash_rerun.py) alone."""

import os
import subprocess
import sys
from pathlib import Path

PLANTED = '''
import os, signal
from pathlib import Path

def _runs(name):  # how many times this test has started, across processes
    f = Path(os.environ["PLANT_DIR"]) / name
    n = int(f.read_text()) + 1 if f.exists() else 1
    f.write_text(str(n))
    return n

def test_crashes_once():
    if _runs("once") == 1:
        os.kill(os.getpid(), signal.SIGSEGV)

def test_crashes_always():
    _runs("always")
    os.kill(os.getpid(), signal.SIGSEGV)

def test_fails():
    _runs("fails")
    assert False, "planted failure"
'''


def test_a_crashed_worker_reruns_its_test_once_and_a_failure_never(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_planted.py").write_text(PLANTED)
    (suite / "pytest.ini").write_text("[pytest]\n")
    runs = tmp_path / "runs"
    runs.mkdir()
    env = {**os.environ, "PLANT_DIR": str(runs), "PYTHONFAULTHANDLER": "0",
           "PYTHONPATH": str(Path(__file__).parent), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("SIMPLEXLAB_CRASH_RERUNS", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "xdist", "-n", "1",
                           "-p", "crash_rerun", "-p", "no:cacheprovider",
                           "-c", str(suite / "pytest.ini"), "--rootdir", str(suite), str(suite)],
                          cwd=suite, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    starts = {f.name: int(f.read_text()) for f in runs.iterdir()}
    assert starts == {"once": 2, "always": 2, "fails": 1}, (starts, out)
    assert "CRASHED WORKER: test_planted.py::test_crashes_once (run again" in out
    assert "CRASHED WORKER: test_planted.py::test_crashes_always (crashed 2 times" in out
    assert "FAILED test_planted.py::test_fails" in out
    last = out.strip().splitlines()[-1]
    assert "2 failed" in last and "1 passed" in last, last
