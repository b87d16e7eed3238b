"""The ``simplexlab`` CLI and the experiment registry."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simplexlab import lab
from simplexlab._cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_list_shows_registered_experiments(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "phase-portraits" in out and "G²RPO Fig. 1" in out


def test_unknown_experiment_is_an_error(capsys):
    assert main(["reproduce", "no-such-experiment"]) == 2
    assert "unknown experiment" in capsys.readouterr().err


def test_registry_rejects_bad_cost():
    with pytest.raises(ValueError, match="cost"):
        lab.experiment("x", reproduces="nothing", cost={"quick": "1 s"})


def test_reproduce_phase_portraits_quick_writes_figure_and_provenance(tmp_path):
    """End to end through the installed entry point, as a newcomer would run it."""
    env = dict(os.environ, SIMPLEXLAB_PROGRESS="0", MPLBACKEND="Agg")
    proc = subprocess.run(
        [sys.executable, "-m", "simplexlab._cli", "reproduce", "phase-portraits", "--quick",
         "--out", str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    png = tmp_path / "phase_portraits.png"
    assert png.exists() and png.stat().st_size > 20_000
    rec = json.loads((tmp_path / "phase-portraits.json").read_text())
    assert rec["mode"] == "quick" and rec["seed"] == 0
    for key in ("simplexlab_version", "git_revision", "jax_version", "created_utc"):
        assert key in rec["provenance"]
    assert rec["parameters"]["n_trajectories"] > 0
    kinds = {tuple(fp["support"]): fp["kind"] for fp in rec["results"]["panels"][0]["fixed_points"]}
    assert kinds[(0,)] == "sink" and kinds[(0, 1, 2)] == "source" and kinds[(0, 1)] == "saddle"
    anti = {tuple(fp["support"]): fp["kind"]
            for fp in rec["results"]["panels"][2]["fixed_points"]}
    assert anti[(0,)] == "source" and anti[(0, 1, 2)] == "sink"
    assert rec["results"]["envelope_max_relative_violation"] <= 1e-9
    assert not list(tmp_path.glob("*.tmp"))  # atomic writes leave no temp files
    # --resume skips a finished experiment
    proc = subprocess.run(
        [sys.executable, "-m", "simplexlab._cli", "reproduce", "phase-portraits", "--quick",
         "--out", str(tmp_path), "--resume"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 0 and "skipping" in proc.stdout


def test_context_cached_chunks_resume(tmp_path):
    """A cached chunk is computed once, written atomically, and reloaded on the next call."""
    import numpy as np

    ctx = lab.Context(name="demo", quick=True, out=tmp_path)
    calls = []

    def compute():
        calls.append(1)
        return {"a": np.arange(3.0), "b": np.array([True, False])}

    first = ctx.cached("chunk-1", compute)
    again = ctx.cached("chunk-1", compute)
    assert len(calls) == 1
    np.testing.assert_array_equal(again["a"], [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(first["b"], again["b"])
    assert (tmp_path / "cache" / "demo-quick-chunk-1.npz").exists()
    assert not list((tmp_path / "cache").glob("*.tmp"))
