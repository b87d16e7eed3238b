"""``meanfield-validation`` and ``phase-portraits-sim`` run end to end at a tiny size.

Their quick modes take ~50 s (compile-dominated), so here each module's ``settings`` is replaced
by a smaller one and the experiment function is called directly; the assertions are what the
figures claim, at a size where they already hold.
"""

import json

import numpy as np
import pytest

from simplexlab import lab


@pytest.fixture
def ctx(tmp_path):
    def make(name):
        return lab.Context(name=name, quick=True, out=tmp_path, seed=0)
    return make


@pytest.mark.slow
def test_meanfield_validation_tiny(ctx, monkeypatch):
    mod = lab.load_experiment_module("meanfield_validation")
    monkeypatch.setattr(mod, "settings", lambda quick: {
        "T": 4.0, "ladder": (1.0, 0.5), "seeds": 64, "systems": ("GRPO (eq. 22)",),
        "G_sweep": (8, 16), "rare_G": (4, 16), "rare_seeds": 16})
    c = ctx("meanfield-validation")
    out = mod.run(c)
    json.dumps(out)  # the record is JSON-serialisable
    assert (c.out / "meanfield_validation.png").is_file()
    errs = out["results"]["ladder_errors"]["GRPO (eq. 22)"]
    # halving η and doubling G lowers the error (rate 1 in theory; two rungs, 64 seeds)
    assert errs[1]["L_y"] < errs[0]["L_y"]
    # the seeds' noise floor: the linear-noise approximation's standard error of the seed mean
    # against the bandit's own (64 seeds: a standard deviation to ~9 %)
    ratios = out["results"]["se_ratio"]["GRPO (eq. 22)"]
    assert len(ratios["p"]) == 4 and all(0.7 < r < 1.4 for q in ratios for r in ratios[q]), ratios
    assert all(e["noise_path"] == "counts" for e in errs)
    tm = [r["tail_miss_t0"] for r in out["results"]["rare_mode"]]
    assert all(0 < t < 1 for t in tm)


@pytest.mark.slow
def test_phase_portraits_sim_tiny(ctx, monkeypatch):
    mod = lab.load_experiment_module("phase_portraits_sim")
    monkeypatch.setattr(mod, "settings", lambda quick: {
        "prompts": 4, "seeds": 2, "G": 8, "eta": 0.1, "steps": 200, "stride": 20, "grid": 11})
    c = ctx("phase-portraits-sim")
    out = mod.run(c)
    json.dumps(out)
    assert (c.out / "phase_portraits_sim.png").is_file()
    grpo, cancel, anti = out["results"]["panels"]
    # GRPO concentrates (Lemma 4.1), the flipped gain spreads (eq. 5): final L_y ordered
    assert anti["final_L_y_mean"] < grpo["final_L_y_mean"]
    kinds = {fp["kind"] for fp in anti["fixed_points"] if len(fp["support"]) == 3}
    assert kinds == {"sink"} and np.isfinite(cancel["final_L_y_mean"])
