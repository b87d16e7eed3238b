"""The finite-group regimes experiment (``experiments/finite_group_regimes.py``) and the lab's own
claims (``experiments/claims/simplexlab.py``): the flip root finder, the theory/bandit comparison,
the claims' verdicts, and the finite-G theory against a small bandit run (float64)."""

import numpy as np
import pytest

from simplexlab import lab
from simplexlab.lab import Verdict, mean_ci


@pytest.fixture(scope="module")
def mod():
    return lab.load_experiment_module("finite_group_regimes")


def test_theory_flip_refines_the_root_in_its_bracket(mod, monkeypatch):
    """The root of a curved ΔL_y(λ0): the coarse crossing (what the bandit's estimator reads on
    its grid) is off by the curvature; the refined root is not; no sign change -> None."""
    calls = []

    def fake(G, gains, st, initial=False):
        g = np.asarray(gains, float)
        calls.append(g.size)
        return (2.9 - g) * (1.0 + 0.8 * g) / G

    monkeypatch.setattr(mod, "theory_dly", fake)
    grid = np.linspace(0.0, 4.0, 9)
    root, bracket, (gs, ds) = mod.theory_flip(8, {}, grid)
    assert bracket == (2.5, 3.0)
    assert root == pytest.approx(2.9, abs=2e-3)
    assert abs(mod.crossing(grid, fake(8, grid, {})) - 2.9) > 1e-2  # the coarse reading is biased
    assert calls[:2] == [9, 9]  # the refinement keeps the batch shape (one compilation)
    assert np.all(np.diff(gs) > 0) and gs.size == 9 + 7
    monkeypatch.setattr(mod, "theory_dly", lambda G, gains, st, initial=False:
                        1.0 + np.asarray(gains, float))
    assert mod.theory_flip(8, {}, grid)[0] is None


def _record(theory_at, bandit_means, flips, theory_flip, theory_est):
    """A flip_data-like record: 2 gains x 2 group sizes, 6 seeds of spread 0.01 around the
    means."""
    rng = np.random.default_rng(1)
    noise = rng.normal(size=6)
    noise = 0.01 * (noise - noise.mean()) / noise.std()
    dly = np.asarray(bandit_means, float)[..., None] + noise
    st = {"gains": [0.0, 3.0], "G": [4, 8], "prompts": 2, "seeds": 6, "eta": 0.1, "steps": 10}
    theory = {G: {"flip": theory_flip[j], "flip_bandit_estimator": theory_est[j],
                  "at_bandit_gains": list(np.asarray(theory_at)[:, j])}
              for j, G in enumerate(st["G"])}
    r = {"settings": st, "bandit_dLy": dly, "bandit_flip": flips, "theory": theory}
    r["comparison"] = None
    return r


def _with_draws(mod, r, theory_est):
    """``r`` (its comparison made) with a second prompt draw (instance 1) at G = 8: the bandit's
    flip 2.0 [1.9, 2.1], the theory read like the bandit at ``theory_est``; the (draw × G) grid
    is then instances (0, 1) × G = 8."""
    r["comparison"] = mod.compare(r)
    row = mod.flip_row(8, [2.0, 1.9, 2.1], {"flip": theory_est, "flip_bandit_estimator":
                                           theory_est}, 3.0)
    r["draws"] = mod.summarise_draws({0: r["comparison"]["per_G"], 1: [row]})
    return r


def test_compare_counts_resolved_signs_and_intervals(mod):
    # G = 4: collision at both gains (no flip); G = 8: collision at 0, anti-collision at 3,
    # and a point the bandit cannot resolve
    r = _record(theory_at=[[0.3, 0.4], [0.2, -0.05]], bandit_means=[[0.3, 0.4], [0.1, -0.05]],
                flips=[[None, None, None], [2.5, 2.4, 2.6]], theory_flip=[None, 2.45],
                theory_est=[None, 2.55])
    c = mod.compare(r)
    assert c["resolved"] == 4 and c["agree"] == 4 and c["agreement"] == 1.0
    assert [row["within_interval"] for row in c["per_G"]] == [True, True]
    assert np.array_equal(c["bandit_signs"], [[1, 1], [1, -1]])
    # the theory's flip outside the interval, a wrong sign, an unresolved bandit point
    r = _record(theory_at=[[0.3, 0.4], [-0.2, 0.05]], bandit_means=[[0.3, 0.4], [0.001, -0.05]],
                flips=[[None, None, None], [2.5, 2.4, 2.6]], theory_flip=[1.2, 2.9],
                theory_est=[1.3, 2.8])
    c = mod.compare(r)
    assert c["resolved"] == 3 and c["agree"] == 2
    assert np.array_equal(c["bandit_signs"], [[1, 1], [0, -1]])
    assert [row["within_interval"] for row in c["per_G"]] == [False, False]


def test_lab_claims_give_verdicts_and_register(mod, monkeypatch):
    from simplexlab.lab._claims import load_claims

    good = _record(theory_at=[[0.3, 0.4], [0.2, -0.05]], bandit_means=[[0.3, 0.4], [0.1, -0.05]],
                   flips=[[None, None, None], [2.5, 2.4, 2.6]], theory_flip=[None, 2.45],
                   theory_est=[None, 2.55])
    bad = _record(theory_at=[[0.3, 0.4], [-0.2, 0.05]], bandit_means=[[0.3, 0.4], [0.1, -0.05]],
                  flips=[[None, None, None], [2.5, 2.4, 2.6]], theory_flip=[1.2, 2.9],
                  theory_est=[1.3, 2.9])
    _with_draws(mod, good, 2.02)
    _with_draws(mod, bad, 2.5)
    import sys

    load_claims()  # every claims module, as simplexlab_claims.<stem>
    sl_claims = sys.modules["simplexlab_claims.simplexlab"]
    monkeypatch.setattr(sl_claims, "PAPER_G", 8)
    out = {}
    for tag, r in (("good", good), ("bad", bad)):
        monkeypatch.setattr(mod, "flip_data", lambda *a, r=r, **k: r)
        ctx = lab.ClaimContext(quick=True)
        out[tag] = (sl_claims.flip_threshold(ctx), sl_claims.regime_signs(ctx))
    (f_good, s_good), (f_bad, s_bad) = out["good"], out["bad"]
    assert isinstance(f_good, Verdict) and f_good.holds_at_paper == "yes"
    assert f_good.grid_axes == {"instance": [0, 1], "group_size": [8]}
    assert f_good.robustness_fraction == 1.0 and s_good.holds_at_paper == "yes"
    assert f_bad.holds_at_paper == "no" and f_bad.robustness_fraction == 0.0
    assert s_bad.holds_at_paper == "no" and s_bad.effect == pytest.approx(2 / 4)
    names = load_claims()
    assert names["simplexlab-flip-threshold"].paper == "SL"
    assert names["simplexlab-regime-signs"].experiment == "finite-group-flip"


def test_one_draw_outside_its_interval_makes_the_claim_partly(mod, monkeypatch):
    """The status at the paper's G is judged over every prompt draw: the theory within the
    bandit's interval for both draws -> yes; moved outside for the second draw only -> partly
    (draw 0's effect unchanged); the spread of the bandit's flips spans both draws."""
    import sys

    from simplexlab.lab._claims import load_claims

    load_claims()
    sl_claims = sys.modules["simplexlab_claims.simplexlab"]
    monkeypatch.setattr(sl_claims, "PAPER_G", 8)
    out = {}
    for tag, te in (("in", 2.02), ("out", 2.5)):
        r = _with_draws(mod, _record(theory_at=[[0.3, 0.4], [0.2, -0.05]],
                                     bandit_means=[[0.3, 0.4], [0.1, -0.05]],
                                     flips=[[None, None, None], [2.5, 2.4, 2.6]],
                                     theory_flip=[None, 2.45], theory_est=[None, 2.55]), te)
        monkeypatch.setattr(mod, "flip_data", lambda *a, r=r, **k: r)
        out[tag] = sl_claims.flip_threshold(lab.ClaimContext(quick=True))
    assert out["in"].holds_at_paper == "yes" and out["out"].holds_at_paper == "partly"
    assert np.array_equal(out["out"].grid_holds, [[True], [False]])
    assert out["in"].effect == out["out"].effect == pytest.approx(2.5 - 2.55)
    assert r["draws"]["spread"] == {8: [2.0, 2.5]} and r["draws"]["within"] == 1
    assert "prompt draw 1: G = 8: bandit 2.00 [1.90, 2.10]" in out["out"].boundary


def test_tiny_flip_data_compares_several_prompt_draws(mod):
    """The tiny mode (the claims' test size): ``draws`` lists draw 0 and a further draw, each
    compared per G by the same rule; a different draw of the prompts gives the theory a
    different flip; the claim's (draw × G) grid has the shape of its axes."""
    r = mod.flip_data("tiny", 0, regimes=False)
    d = r["draws"]
    assert len(d["instances"]) >= 2 and d["instances"][0] == 0
    assert d["group_sizes"] == [16] and d["points"] == len(d["instances"])
    assert d["per_instance"][0][16] == r["comparison"]["per_G"][0]
    other = d["instances"][1]
    t0, t1 = r["theory"][16]["flip"], d["extra"][other]["theory"][16]["flip"]
    assert t0 is not None and t1 is not None and t0 != pytest.approx(t1, abs=1e-3)
    lo, hi = d["spread"][16]
    assert lo <= hi and lo == min(d["per_instance"][i][16]["bandit"][0] for i in d["instances"])
    v = lab.load_claims()["simplexlab-flip-threshold"].evaluate(
        lab.ClaimContext(quick=True, tiny=True))
    assert v.grid_axes == {"instance": d["instances"], "group_size": [16]}
    assert np.shape(v.grid_holds) == (len(d["instances"]), 1)


@pytest.mark.slow
def test_finite_group_theory_follows_a_small_bandit_run(mod):
    """G = 8, two prompts of the collision instance, η = 0.1, 100 steps: the finite-G theory's
    prompt-mean ΔL_y lies in the bandit's seed interval (widened by 0.01 for O(η)) at λ0 = 0, 2,
    4; at λ0 = 2 both say collision where the mean field (G²RPO eq. 68) says anti-collision."""
    st = {"gains": (0.0, 2.0, 4.0), "G": (8,), "prompts": 2, "seeds": 8, "eta": 0.1,
          "steps": 100}
    bandit = mod.bandit_dly(st)[:, 0]  # (gain, seed)
    theory = mod.theory_dly(8, st["gains"], st)
    for i in range(3):
        m, lo, hi = mean_ci(bandit[i])
        assert lo - 0.01 <= theory[i] <= hi + 0.01, (st["gains"][i], theory[i], (lo, m, hi))
    assert theory[1] > 0.02 and mean_ci(bandit[1])[1] > 0  # collision at λ0 = 2 > 1
    assert theory[0] > theory[1] > theory[2]
