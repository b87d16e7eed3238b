"""Every notebook in notebooks/ runs end to end in quick mode (so none can rot)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.py"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_quick_mode(path, tmp_path):
    env = dict(os.environ, SIMPLEXLAB_QUICK="1", MPLBACKEND="Agg", SIMPLEXLAB_PROGRESS="0")
    proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        f"{path.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
