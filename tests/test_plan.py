"""The group-size planner (``simplexlab.verify.plan``, ``simplexlab plan``): its sampling columns
against direct NumPy formulas and a Monte Carlo count, its drift regimes against the G → ∞ theory
(G2 eq. 68: schedule B flips at λ0 = 1; GRPO always collides), its recommendation against a
direct search, its input checks and the command line."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simplexlab.shaping import GainSchedule
from simplexlab.verify import PlanReport, plan

ROOT = Path(__file__).resolve().parent.parent


def _mu(mu, delta_fn=0.0, delta_fp=0.0):
    return (1 - delta_fn) * mu + delta_fp * (1 - mu)


@pytest.fixture(scope="module")
def grpo_report():
    """GRPO with a noisy verifier: cheap (one counts-path program per drift size)."""
    return plan(0.3, tau=0.02, K=3, method="grpo", delta_fn=0.1, delta_fp=0.05,
                group_sizes=[2, 3, 5, 8, 13, 21, 34, 55, 89],
                drift_group_sizes=[2, 8, 34, 89], min_signal=0.95, max_tail_miss=0.3)


def test_signal_and_tail_miss_are_fg_lemma_31_in_numpy(grpo_report):
    r = grpo_report
    G = np.asarray(r.group_sizes, float)
    mu = _mu(0.3, 0.1, 0.05)  # a rollout scored correct
    tau = 0.9 * 0.02  # the rarest mode scored correct
    np.testing.assert_allclose(r.signal, 1 - mu**G - (1 - mu) ** G, rtol=1e-12)
    np.testing.assert_allclose(r.tail_miss, (1 - tau) ** G - (mu - tau) ** G - (1 - mu) ** G,
                               rtol=1e-10, atol=1e-15)


def test_modes_seen_matches_a_monte_carlo_count(grpo_report):
    """The expected number of distinct good modes among the correct-scored rollouts, against
    sampled groups of the representative state (one rare mode, the others equal)."""
    r = grpo_report
    y = np.asarray(r.state["y"])
    assert y[0] == pytest.approx(0.02 / 0.3) and np.allclose(y[1:], (1 - y[0]) / 2)
    rng = np.random.default_rng(0)
    probs = np.concatenate([0.3 * y, [0.7]])  # good modes, then all bad mass
    for G, expected in zip(r.group_sizes[2:6], r.modes_seen[2:6], strict=True):
        n = 40_000
        draws = rng.choice(len(probs), size=(n, G), p=probs)
        correct = rng.random((n, G)) < 0.9  # δ_FN = 0.1 (a bad mode's false positive is not good)
        seen = np.stack([np.any((draws == j) & correct, 1) for j in range(3)], 1).sum(1)
        assert abs(seen.mean() - expected) < 4 * seen.std() / math.sqrt(n), (G, seen.mean())


def test_grpo_always_collides(grpo_report):
    r = grpo_report
    computed = [(g, d, k) for g, d, k in zip(r.group_sizes, r.drift, r.regime, strict=True)
                if k is not None]
    assert [g for g, _, _ in computed] == [2, 8, 34, 89]
    assert all(d > 0 and k == "collision" for _, d, k in computed), computed
    assert r.limit_regime == "collision" and r.limit_drift == pytest.approx(r.scale)
    # the finite-G drift tends to the G → ∞ one
    assert abs(computed[-1][1] - r.limit_drift) < 0.1 * r.limit_drift


def test_grpo_drift_matches_an_independent_numpy_expectation():
    """``dL_y/dt`` of GRPO at G = 8 against its expected SGD step written out here: a rollout's
    z-score ``(r − S/G)/(sd + ε)`` averaged over the other ``G − 1`` rollouts' successes
    ``S' ~ Bin(G − 1, 1 − p)``, ``E[Δθ]/η = w − π Σ w`` with ``w_c = G π_c E[A | c]/G``, pushed to
    ``y`` (``ẏ = y ⊙ (g − ⟨y, g⟩)``)."""
    G, K = 8, 3
    r = plan(0.4, tau=0.05, K=K, M=2, method="grpo",
             group_sizes=[G], drift_group_sizes=[G], min_signal=0.0, max_tail_miss=1.0)
    p, y, z = r.state["p"], np.asarray(r.state["y"]), np.asarray(r.state["z"])
    pi = np.concatenate([(1 - p) * y, p * z])
    s = np.arange(G)  # the other rollouts' successes
    pmf = np.array([math.comb(G - 1, k) for k in s]) * (1 - p) ** s * p ** (G - 1 - s)

    def z_score(reward, successes):
        m = successes / G
        return (reward - m) / (np.sqrt(m * (1 - m)) + 1e-6)

    e_good, e_bad = np.sum(pmf * z_score(1, s + 1)), np.sum(pmf * z_score(0, s))
    w = pi * np.concatenate([np.full(K, e_good), np.full(2, e_bad)])  # G π_c E[A] / G
    g = (w - pi * w.sum())[:K]
    ydot = y * (g - np.sum(y * g))
    assert r.drift[0] == pytest.approx(2 * np.sum(y * ydot), rel=1e-9)
    assert r.drift[0] > 0


def test_recommendation_is_the_smallest_size_meeting_the_targets(grpo_report):
    r = grpo_report
    mu, tau = _mu(0.3, 0.1, 0.05), 0.9 * 0.02
    meets = [g for g in r.group_sizes
             if 1 - mu**g - (1 - mu) ** g >= 0.95
             and (1 - tau) ** g - (mu - tau) ** g - (1 - mu) ** g <= 0.3]
    assert r.recommended == meets[0] == 89  # signal alone would give 8
    assert r.cost[r.group_sizes.index(89)] == 1.0
    text = r.to_text()
    assert "num_generations=89" in text and "actor_rollout_ref.rollout.n=89" in text
    d = r.to_dict()
    assert d["trl"] == {"num_generations": 89} and d["verl"] == {"actor_rollout_ref.rollout.n": 89}
    json.dumps(d)  # plain JSON (no NaN: the uncomputed drifts are None)
    assert d["drift"][1] is None and d["regime"][1] is None


def test_no_recommendation_says_which_target_fails():
    r = plan(0.3, method="grpo", group_sizes=[4, 8], drift_group_sizes=[8],
             avoid_collision=True, min_signal=0.5)
    assert r.recommended is None
    assert any("collision" in why for why in r.reasons), r.reasons
    assert "no group size of the grid meets the targets" in r.to_text()
    assert isinstance(r, PlanReport) and r.to_dict()["trl"] is None


@pytest.mark.parametrize(("gain", "regime"), [(2.0, "anti-collision"), (0.5, "collision")])
def test_g2rpo_schedule_b_regime_at_large_group_size(gain, regime):
    """At large G the finite-group regime is the G → ∞ one: schedule B with the neutralizer
    flips collision to anti-collision at λ0 = 1 (G2 eq. 68)."""
    r = plan(0.4, K=3, M=1, gain=gain,
             schedule=GainSchedule(kind="B", neutralize=True), group_sizes=[128],
             drift_group_sizes=[128], min_signal=0.0, max_tail_miss=1.0)
    assert r.regime == (regime,)
    assert r.limit_regime == regime
    assert np.sign(r.drift[0]) == np.sign(r.limit_drift)


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"mu": 1.2}, "1.2"),
    ({"mu": 0.0}, "0.0"),
    ({"mu": float("nan")}, "nan"),
    ({"mu": 0.3, "tau": 0.2}, "got 0.2"),
    ({"mu": 0.3, "tau": -0.01}, "-0.01"),
    ({"mu": 0.3, "method": "ppo_magic"}, "ppo_magic"),
    ({"mu": 0.3, "gain": float("inf")}, "inf"),
    ({"mu": 0.3, "method": "grpo", "gain": 2.0}, "gain=2.0"),
    ({"mu": 0.3, "group_sizes": [1, 4]}, "group size 1"),
    ({"mu": 0.3, "group_sizes": [4, 8], "drift_group_sizes": [16]}, "[16]"),
    ({"mu": 0.3, "K": 1}, "got 1"),
    ({"mu": 0.3, "delta_fn": 0.7, "delta_fp": 0.4}, "0.7"),
    ({"mu": 0.3, "min_signal": 1.5}, "got 1.5"),
    ({"mu": 0.3, "method": "reinforce_pp"}, "num_groups"),
])
def test_bad_inputs_raise_naming_the_value(kwargs, named):
    mu = kwargs.pop("mu")
    with pytest.raises(ValueError) as err:
        plan(mu, **kwargs)
    assert named in str(err.value), str(err.value)


def _cli(*args, timeout=300):
    env = dict(os.environ, SIMPLEXLAB_PROGRESS="0")
    return subprocess.run([sys.executable, "-m", "simplexlab", "plan", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout)


def test_cli_prints_the_table_and_the_trl_and_verl_settings(tmp_path):
    out = tmp_path / "plan"
    proc = _cli("--mu", "0.3", "--method", "grpo", "-K", "3",
                "--group-sizes", "4,8,16,32,64,128", "--drift-group-sizes", "16",
                "--max-tail-miss", "0.1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "GRPOConfig(num_generations=" in proc.stdout
    assert "actor_rollout_ref.rollout.n=" in proc.stdout
    rec = json.loads((out / "plan.json").read_text())
    assert f"num_generations={rec['recommended']}" in proc.stdout
    assert rec["provenance"]["simplexlab_version"] and rec["inputs"]["method"] == "grpo"
    assert (out / "plan.png").stat().st_size > 10_000
    bad = _cli("--mu", "1.5")
    assert bad.returncode == 2 and "1.5" in bad.stderr and "Traceback" not in bad.stderr


def test_avoid_collision_bisects_the_grid_to_the_first_size_that_does_not_collide(monkeypatch):
    """The bisection on its own: a made-up drift ``1/G − 1/40`` (collision below G = 40) in
    place of the compiled programs; the planner must find 48, the first size of the grid above
    40, computing the drift at the powers of 4, then 32, then 48."""
    from simplexlab.verify import _plan

    asked = []

    def fake(jobs, **_):
        keys = [job[0] for job in jobs]
        asked.append([k for k in keys if isinstance(k, int)])
        return {k: {"scale": 1e-6, "limit": -1.0}.get(k) if isinstance(k, str)
                else 1 / k - 1 / 40 for k in keys}

    monkeypatch.setattr(_plan, "_run_programs", fake)
    r = plan(0.3, method="grpo", avoid_collision=True, min_signal=0.0, max_tail_miss=1.0)
    assert asked == [[4, 16, 64, 256], [32], [48]]
    assert r.recommended == 48
    assert r.regime[r.group_sizes.index(32)] == "collision"
    assert r.regime[r.group_sizes.index(48)] == "anti-collision"
    assert r.inputs["drift_group_sizes"] == [4, 16, 32, 48, 64, 256]
    no_refine = plan(0.3, method="grpo", avoid_collision=True, refine=False, min_signal=0.0,
                     max_tail_miss=1.0)
    assert no_refine.recommended == 64
    # the drift turns below the sizes that meet the tail-miss target (48 and up): the first of
    # those is computed, not the next power of 4
    asked.clear()
    monkeypatch.setattr(_plan, "_run_programs", lambda jobs, **_: {
        k: {"scale": 1e-6, "limit": -1.0}.get(k) if isinstance(k, str) else 1 / k - 1 / 10
        for k in [asked.append(job[0]) or job[0] for job in jobs]})
    r = plan(0.3, method="grpo", avoid_collision=True, max_tail_miss=0.2)
    assert [k for k in asked if isinstance(k, int)] == [4, 16, 64, 256, 48]
    assert r.recommended == 48 and r.regime[r.group_sizes.index(16)] == "anti-collision"


# ---- the printed report: what its columns are, what set G, when no G avoids collision


def _hand_report(signal, miss, regime, *, recommended, limit_regime="collision",
                 avoid_collision=False, method="grpo", tau=0.0375, mu=0.3, K=4):
    """A :class:`PlanReport` built by hand (no compute), over the grid of ``signal``."""
    sizes = tuple(2 ** i for i in range(1, len(signal) + 1))
    ref = recommended or sizes[0]
    drift = tuple(math.nan if r is None else (1e-3 if r == "collision" else -1e-3)
                  for r in regime)
    return PlanReport(
        group_sizes=sizes, signal=tuple(signal), tail_miss=tuple(miss),
        modes_seen=(1.0,) * len(sizes), drift=drift, regime=tuple(regime),
        cost=tuple(g / ref for g in sizes), recommended=recommended,
        reasons=() if recommended else ("collision at every G whose drift was computed",),
        limit_drift=None if limit_regime is None else 1e-3, limit_regime=limit_regime,
        scale=1e-3, state={"p": 1 - mu, "y": [0.125, 0.29, 0.29, 0.29], "z": [0.5, 0.5]},
        inputs={"method": method, "schedule": None, "delta_fn": 0.0, "delta_fp": 0.0,
                "tau": tau, "mu": mu, "K": K, "min_signal": 0.9, "max_tail_miss": 0.2,
                "avoid_collision": avoid_collision, "cancel_tol": 0.05})


def _first(sizes, met):
    return next((g for g, ok in zip(sizes, met, strict=True) if ok), None)


def test_the_report_says_what_tail_miss_and_cost_are():
    r = _hand_report([0.5, 0.95, 0.99], [0.5, 0.3, 0.1], [None] * 3, recommended=8)
    legend = {line.split(":")[0].strip(): line for line in r.to_text().splitlines()
              if line.startswith("  ") and ":" in line and "GRPOConfig" not in line
              and "rollout.n" not in line}
    assert "probability that a group is mixed yet has no correct rollout of the rarest" \
        in legend["tail-miss"] and "tau = 0.0375, the default" in legend["tail-miss"]
    assert "G over the recommended G" in legend["cost"]
    assert "probability that a group is mixed" in legend["signal"]
    given = _hand_report([0.5, 0.95, 0.99], [0.5, 0.3, 0.1], [None] * 3, recommended=8,
                         tau=0.02)
    assert "the default" not in given.to_text()  # a tau the user gave is not called default


@pytest.mark.parametrize(("signal", "miss", "binding"), [
    ([0.5, 0.95, 0.99, 1.0], [0.3, 0.4, 0.25, 0.1], "tail-miss"),  # the rare mode sets G
    ([0.5, 0.7, 0.85, 0.95], [0.1, 0.1, 0.1, 0.1], "signal"),     # the pass rate sets G
])
def test_the_recommendation_names_the_target_that_set_g(signal, miss, binding):
    r = _hand_report(signal, miss, [None] * 4, recommended=16)
    sizes = r.group_sizes
    first = {"signal": _first(sizes, [s >= 0.9 for s in signal]),
             "tail-miss": _first(sizes, [m <= 0.2 for m in miss])}
    assert first[binding] == 16 and r.first_met() == first
    assert r.set_by() == (binding,)
    text = r.recommendation()
    assert f"set by the {binding} target" in text
    other = ({"signal", "tail-miss"} - {binding}).pop()
    word = "signal >= 0.9" if other == "signal" else "tail-miss <= 0.2"
    assert f"{word} from G = {first[other]}" in text
    assert r.to_dict()["set_by"] == [binding]


def test_the_smallest_size_is_set_by_no_target():
    r = _hand_report([0.95, 0.99], [0.1, 0.05], [None, None], recommended=2)
    assert r.set_by() == () and "the grid's smallest size" in r.recommendation()


def test_it_says_when_no_group_size_avoids_collision(grpo_report):
    r = _hand_report([0.5, 0.95, 0.99], [0.3, 0.1, 0.1], ["collision", None, "collision"],
                     recommended=4)
    assert r.collides_everywhere()
    assert "no group size avoids collision for grpo" in r.recommendation()
    assert "meets the sampling targets only" in r.recommendation()
    turned = _hand_report([0.5, 0.95, 0.99], [0.3, 0.1, 0.1],
                          ["collision", None, "anti-collision"], recommended=4,
                          limit_regime="anti-collision", method="g2rpo")
    assert not turned.collides_everywhere()
    assert "avoids collision" not in turned.recommendation()
    limit_turns = _hand_report([0.5, 0.95], [0.3, 0.1], ["collision", "collision"],
                               recommended=4, limit_regime="anti-collision", method="g2rpo")
    assert not limit_turns.collides_everywhere()  # a larger G than the grid's may turn
    none = _hand_report([0.5, 0.6], [0.3, 0.3], ["collision", "collision"], recommended=None,
                        avoid_collision=True)
    assert "No group size avoids collision for grpo" in none.recommendation()
    # the planner's own GRPO report (FG / G2 eq. 22: GRPO collides at every G) says it
    assert grpo_report.collides_everywhere()
    assert "no group size avoids collision for grpo" in grpo_report.to_text()
