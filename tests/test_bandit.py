"""The finite-group (K+M)-mode bandit against the mean-field ODEs it should follow.

Every expectation here is independent of the simulator: the mean-field systems of
:mod:`simplexlab.theory` (G²RPO eq. 22, 48, 56), the winner-take-all / anti-collision
statements of G²RPO Lemma 4.1 and eq. (5), and Monte Carlo standard errors.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simplexlab import sweep
from simplexlab import theory as mf
from simplexlab.sim import METHODS, Bandit, trajectory

K, M = 3, 2
Y0, Z0 = (0.5, 0.3, 0.2), (0.7, 0.3)


def simulate(sim, params, *, steps, stride, seeds, seed=0):
    """Records of ``seeds`` runs (leading axis seed) of ``trajectory``."""
    f = jax.jit(jax.vmap(lambda k: trajectory(sim, k, params, num_steps=steps,
                                              stride=stride)[1]))
    return f(jax.random.split(jax.random.key(seed), seeds))


def bandit(method="grpo", G=16, **settings):
    return Bandit(method=method, K=K, M=M, max_group_size=G, y0=Y0, z0=Z0, **settings)


def params(sim, **values):
    return {**sim.default_params(), "group_size": sim.max_group_size, **values}


def ode(sim, q, times):
    """The mean-field prediction at ``times`` (t = step · η)."""
    dyn, st = sim.meanfield(q)
    st = jax.tree_util.tree_map(lambda a: a[0], st)
    return mf.solve(dyn, st, t1=float(times[-1]), saveat=jnp.asarray(times)).state


# ---- every method runs ------------------------------------------------------------------------


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_runs_and_stays_on_the_simplex(method):
    sim = Bandit(method=method, K=K, M=M, max_group_size=8, num_prompts=3)
    rec = simulate(sim, params(sim, eta=0.1), steps=40, stride=10, seeds=2)
    for field in ("p", "L_y", "L_z", "entropy", "m_ret"):
        assert np.all(np.isfinite(np.asarray(getattr(rec, field)))), field
    np.testing.assert_allclose(np.asarray(rec.y).sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(rec.z).sum(-1), 1.0, atol=1e-12)
    assert rec.p.shape == (2, 5, 3) and rec.y.shape == (2, 5, 3, K)
    # the three prompts start from different Dirichlet draws of the same instance
    assert len(set(np.round(np.asarray(rec.L_y[0, 0]), 12))) == 3
    np.testing.assert_allclose(np.asarray(rec.m_ret[:, 0]), 1.0)  # nothing lost at step 0


def test_padding_to_max_group_size_changes_nothing():
    """``group_size`` G inside a program padded to ``max_group_size``: rollout g of a step uses
    the same uniforms whatever the padding, and masked rollouts enter no statistic, so a run
    padded from 8 to 32 equals the unpadded one up to the order of floating-point sums."""
    small, big = bandit("g2rpo", G=8), bandit("g2rpo", G=32)
    a = simulate(small, params(small, group_size=8, eta=0.1), steps=60, stride=20, seeds=3)
    b = simulate(big, params(big, group_size=8, eta=0.1), steps=60, stride=20, seeds=3)
    np.testing.assert_allclose(np.asarray(b.y), np.asarray(a.y), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(b.p), np.asarray(a.p), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(b.reward), np.asarray(a.reward))
    # and the mean reward is over the 8 valid rollouts: a multiple of 1/8
    r = np.asarray(a.reward) * 8
    np.testing.assert_allclose(r, np.round(r), atol=1e-12)


# ---- the drift of one step: the verifier's reduced margin J ------------------------------------


@pytest.mark.parametrize("delta", [(0.0, 0.0), (0.2, 0.1)])
def test_one_step_drift_matches_the_ode_with_reduced_margin(delta):
    """E[Δp] of one step from a fixed policy = η ṗ of G²RPO eq. (22) with
    ``J = 1 − δ_FN − δ_FP`` and ``σ(p)`` of the noisy rewards. The remaining bias is the
    plug-in group z-score's O(1/G) (measured ≈ 0.55/G: 3.4 % at G = 16, 0.2 % at G = 256), so
    at G = 256 we allow 1 % plus 4 Monte Carlo standard errors; the perfect-verifier drift is
    30 % away when δ = (0.2, 0.1), so the test tells the two margins apart."""
    G, eta, n = 256, 0.01, 20_000
    sim = bandit(G=G)
    q = params(sim, eta=eta, p0=0.5, delta_fn=delta[0], delta_fp=delta[1])

    def one(k):
        s0 = sim.init(k, q)
        return sim.observe(sim.step(s0, q)).p[0] - sim.observe(s0).p[0]

    dp = np.asarray(jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(11), n)))
    dyn, st = sim.meanfield(q)
    state = jax.tree_util.tree_map(lambda a: a[0], st)
    expected = eta * float(dyn.vector_field(0.0, state).p)
    se = dp.std() / np.sqrt(n)
    assert abs(dp.mean() - expected) < 0.01 * abs(expected) + 4 * se, (dp.mean(), expected)
    perfect = eta * float(mf.GRPO(eta=1.0).vector_field(0.0, state).p)
    J = 1 - sum(delta)
    if J < 1:
        assert abs(dp.mean() - perfect) > 0.2 * abs(perfect)


# ---- mean-field convergence ----------------------------------------------------------------------


def test_ensemble_mean_converges_to_the_ode_at_rate_one():
    """GRPO, t ∈ [0, 10], (η, G) = (0.2, 8), (0.1, 16), (0.05, 32), 512 seeds. Theory: the
    ensemble mean differs from the ODE by O(η) (Euler-type discretisation of E[Δθ] = ηJ(π)A,
    and the noise's second-order effect, O(η/G)) plus O(1/G) (plug-in z-score), so halving η
    and doubling G together halves the error (rate 1). Measured (1024 seeds): sup |p̄ − p|
    0.032, 0.0136, 0.0065, 0.0031 and sup |L̄_y − L_y| 0.080, 0.039, 0.017, 0.0071 as h halves:
    ratios 2.1–2.5. We require each ratio in [1.5, 3.2] (Monte Carlo standard errors are
    ≤ 0.004 on the L_y errors, ≤ 0.001 on p, so a ratio of 2 cannot read below 1.5 by noise)
    and the stated tolerance at the finest pair: p within 0.01, L_y within 0.03."""
    T, S = 10.0, 512
    errs = []
    for eta, G in ((0.2, 8), (0.1, 16), (0.05, 32)):
        sim = bandit(G=G)
        q = params(sim, eta=eta, p0=0.7)
        steps, stride = int(round(T / eta)), int(round(1 / eta))
        rec = simulate(sim, q, steps=steps, stride=stride, seeds=S, seed=7)
        sol = ode(sim, q, np.arange(0.0, T + 1e-9, 1.0))
        errs.append((np.abs(np.asarray(rec.p[..., 0]).mean(0) - np.asarray(sol.p)).max(),
                     np.abs(np.asarray(rec.L_y[..., 0]).mean(0) - np.asarray(sol.L_y)).max()))
    errs = np.asarray(errs)
    ratios = errs[:-1] / errs[1:]
    assert np.all((ratios > 1.5) & (ratios < 3.2)), (errs, ratios)
    assert errs[-1, 0] < 0.01 and errs[-1, 1] < 0.03, errs


# ---- the papers' qualitative statements, on small instances --------------------------------------


def test_grpo_collapses_onto_the_initial_maximiser():
    """G²RPO Lemma 4.1 (winner-take-all): from y0 = (0.5, 0.3, 0.2), p0 = 0.9, 32 seeds of
    GRPO (G = 16, η = 0.1, 2000 steps, mean-field time 200) end with L_y > 0.95 and the
    largest coordinate on mode 0. Measured: L_y 0.976–0.995, mode 0 in 32/32; the mean-field
    value at t = 200 is > 0.98. We allow 2 seeds of 32 to escape (finite-group noise near the
    start can in principle tip a seed)."""
    sim = bandit(G=16)
    q = params(sim, eta=0.1, p0=0.9)
    rec = simulate(sim, q, steps=2000, stride=100, seeds=32, seed=3)
    Ly = np.asarray(rec.L_y[:, -1, 0])
    winner = np.asarray(rec.y[:, -1, 0]).argmax(-1)
    assert np.sum(Ly > 0.95) >= 30 and np.sum(winner == 0) >= 30, (Ly, winner)
    assert float(ode(sim, q, np.asarray([0.0, 200.0])).L_y[-1]) > 0.98


def test_g2rpo_with_flipped_gain_spreads_over_the_good_modes():
    """G²RPO eq. (5): with schedule A, λ̃ ≡ λ0 = 3 > 1 flips collision into anti-collision and
    y = 1/K becomes stable. Same instance as above: every seed ends with L_y < 1/K + 0.02
    (measured 0.333–0.334), while GRPO ends above 0.95."""
    sim = bandit("g2rpo", G=16, schedule="A")
    rec = simulate(sim, params(sim, eta=0.1, p0=0.9, gain=3.0), steps=2000, stride=100,
                   seeds=32, seed=3)
    Ly = np.asarray(rec.L_y[:, -1, 0])
    assert np.all(Ly < 1 / K + 0.02), Ly


@pytest.mark.slow
def test_neutralizer_restores_the_grpo_bad_mass_trajectory():
    """G²RPO Fig. 4 analogue: a constant gain λ = 1.5 without the neutralizer slows the decay of
    p̂; with it, p̂ follows GRPO's much more closely. 256 seeds each, common random numbers,
    G = 32, η = 0.05, 400 steps. Measured sup_t |p̄ − p̄_GRPO|: 0.045 without, 0.016 with.
    We require the neutralized deviation below half the other and each mean trajectory within
    0.02 of its own mean-field system (the neutralized ODE keeps ṗ in the baseline form; the
    trajectories still differ because L_y does)."""
    S, steps, stride = 256, 400, 25
    out = {}
    for label, method, kw in (("grpo", "grpo", {}),
                              ("with", "g2rpo", {"neutralize": True}),
                              ("without", "g2rpo", {"neutralize": False})):
        sim = bandit(method, G=32, **kw)
        q = params(sim, eta=0.05, p0=0.7, **({"gain": 1.5} if method == "g2rpo" else {}))
        rec = simulate(sim, q, steps=steps, stride=stride, seeds=S, seed=5)
        out[label] = np.asarray(rec.p[..., 0]).mean(0)
        sol = ode(sim, q, np.arange(0, steps + 1, stride) * 0.05)
        assert np.abs(out[label] - np.asarray(sol.p)).max() < 0.02, label
    dev_with = np.abs(out["with"] - out["grpo"]).max()
    dev_without = np.abs(out["without"] - out["grpo"]).max()
    assert dev_with < 0.5 * dev_without, (dev_with, dev_without)


# ---- the sweep engine runs it ------------------------------------------------------------------


@pytest.mark.slow
def test_sweep_over_gain_and_group_size_matches_direct_runs(tmp_path):
    grid = {"gain": [0.5, 2.0], "group_size": [4, 5, 8]}
    fixed = {"method": "g2rpo", "K": K, "M": M, "num_steps": 20, "stride": 10, "eta": 0.1}
    # max_group_size unset: the engine buckets the runs by group size (4 -> 4; 5, 8 -> 8)
    ds = sweep.run("bandit", grid, fixed=fixed, seeds=2, seed=3, out=tmp_path, name="b",
                   progress=False)
    assert ds.attrs["chunks"] == 2
    assert ds["L_y"].dims == ("gain", "group_size", "seed", "step", "prompt")
    assert ds["y"].dims[-2:] == ("prompt", "good_mode")
    # one program padded to 8 for every run: the same runs (padding is inert)
    one = sweep.run("bandit", grid, fixed={**fixed, "max_group_size": 8}, seeds=2, seed=3,
                    progress=False)
    assert one.attrs["chunks"] == 1
    np.testing.assert_allclose(ds["L_y"].values, one["L_y"].values, rtol=0, atol=1e-9)
    # the engine's runs are the simulator's own: rerun grid points directly with their keys
    keys = jax.random.split(jax.random.key(3), 2)
    for i, gain in enumerate(grid["gain"]):
        for j, G in enumerate(grid["group_size"]):
            sim, params = Bandit.from_values({**fixed, "max_group_size": G, "group_size": G,
                                              "gain": gain})
            rec = trajectory(sim, keys[1], params, num_steps=20, stride=10)[1]
            np.testing.assert_allclose(ds["L_y"].values[i, j, 1], rec.L_y, rtol=0, atol=1e-9)
            np.testing.assert_allclose(ds["p"].values[i, j, 1], rec.p, rtol=0, atol=1e-9)
    again = sweep.run("bandit", grid, fixed=fixed, seeds=2, seed=3, out=tmp_path / "again",
                      name="b", progress=False)
    np.testing.assert_array_equal(ds["L_y"].values, again["L_y"].values)


def test_sweep_buckets_name_a_bad_group_size():
    with pytest.raises(ValueError, match="group_size must be a whole number >= 2"):
        sweep.run("bandit", {"group_size": [4, 1]}, fixed={"num_steps": 2}, progress=False)
    with pytest.raises(ValueError, match="group_size must be <= max_group_size = 8"):
        sweep.run("bandit", {"group_size": [4, 16]}, fixed={"num_steps": 2,
                                                           "max_group_size": 8},
                  progress=False)


# ---- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize("settings, match", [
    ({"K": 0}, "K must be an integer >= 1"),
    ({"M": -1}, "M must be an integer >= 0"),
    ({"max_group_size": 1}, "max_group_size must be an integer >= 2"),
    ({"method": "ppo"}, "unknown method 'ppo'"),
    ({"schedule": "C"}, "schedule must be"),
    ({"optimizer": "lion9"}, "unknown optimizer 'lion9'"),
    ({"y0": (0.5, 0.5)}, "y0 must be 3 positive numbers"),
])
def test_bad_settings_name_the_value(settings, match):
    with pytest.raises(ValueError, match=match):
        Bandit(**settings)


def test_unknown_setting_is_refused():
    with pytest.raises(ValueError, match=r"unknown setting\(s\) \['group_sise'\]"):
        Bandit.make(group_sise=8)


@pytest.mark.parametrize("values, match", [
    ({"group_size": 1}, "group_size must be a whole number >= 2"),
    ({"group_size": 32}, "group_size must be <= max_group_size = 16"),
    ({"eta": float("nan")}, "eta must be finite and > 0"),
    ({"eta": float("inf")}, "eta must be finite and > 0"),
    ({"eta": -0.1}, "eta must be finite and > 0"),
    ({"p0": 1.0}, "p0 must be in"),
    ({"delta_fn": 0.6, "delta_fp": 0.5}, "delta_fn \\+ delta_fp"),
    ({"gain": 1.0}, "unknown parameter"),  # grpo has no gain
])
def test_bad_params_name_the_value(values, match):
    sim = Bandit()
    with pytest.raises(ValueError, match=match):
        trajectory(sim, jax.random.key(0), values, num_steps=2)


def test_progrpo_reading_is_zero_or_one():
    with pytest.raises(ValueError, match="progrpo_all_correct must be 0"):
        Bandit(method="progrpo").check_params({"progrpo_all_correct": 0.5})
    Bandit(method="progrpo").check_params({"progrpo_all_correct": 1.0})


def test_flipped_verifier_needs_the_flag():
    q = {"delta_fn": 0.6, "delta_fp": 0.5}
    rec = trajectory(Bandit(allow_flipped=True), jax.random.key(0), q, num_steps=2)[1]
    assert np.all(np.isfinite(np.asarray(rec.p)))


def test_bad_traced_params_fail_under_jit():
    sim = Bandit()
    f = jax.jit(lambda eta, G: trajectory(sim, jax.random.key(0), {"eta": eta, "group_size": G},
                                          num_steps=2)[1].p)
    with pytest.raises(Exception, match="eta"):
        jax.block_until_ready(f(jnp.asarray(float("nan")), jnp.asarray(8.0)))
    with pytest.raises(Exception, match="group_size"):
        jax.block_until_ready(f(jnp.asarray(0.1), jnp.asarray(1.0)))


def test_meanfield_only_for_methods_that_have_one():
    with pytest.raises(ValueError, match="no G → ∞ mean-field system for method 'rloo'"):
        Bandit(method="rloo").meanfield()
    with pytest.raises(ValueError, match="SGD on the mean-reduced log-likelihood"):
        Bandit(optimizer="adam").meanfield()


def test_one_instance_is_the_same_prompts_in_float32_and_float64():
    # the Dirichlet(1) starts are drawn in float32 whatever the run's dtype: an ``instance``
    # names one set of prompts, not one per precision (JAX draws different bits per dtype)
    b64 = Bandit(K=3, M=4, num_prompts=5, dtype="float64")
    b32 = Bandit(K=3, M=4, num_prompts=5, dtype="float32")
    params = {**b64.default_params(), "instance": 3.0}
    t64 = np.asarray(b64.initial_logits(params))
    t32 = np.asarray(b32.initial_logits(params))
    assert t64.dtype == np.float64 and t32.dtype == np.float32
    np.testing.assert_allclose(t64, t32, rtol=0, atol=1e-5)
    other = np.asarray(b64.initial_logits({**params, "instance": 4.0}))
    assert np.abs(other - t64).max() > 1e-2  # a different instance is different prompts
