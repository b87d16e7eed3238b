"""The two-stage dynamics of TS §3 and App. B–C: Lemma 1, Theorem 1, Algorithm 1's toy.

Every expected value is computed independently of the code under test: Lemma 1 by automatic
differentiation of ``Â log softmax(z/τ)_v``, Theorem 1 by Monte Carlo over groups sampled with
NumPy (with a confidence bound) and by exact enumeration, Algorithm 1 by a NumPy transcription
of its pseudo-code (loops as printed), the expected dynamics by a NumPy iteration.
"""

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simplexlab import lab, sweep
from simplexlab import theory as S
from simplexlab.sim import SIMULATORS, TwoStage, trajectory

R3 = np.array([0.5, 1.0, 0.0])
P3 = np.array([0.45, 0.05, 0.5])


def softmax(z, tau=1.0):
    e = np.exp(np.asarray(z, float) / tau - np.max(np.asarray(z, float) / tau))
    return e / e.sum()


# ---- Lemma 1, Theorem 1 --------------------------------------------------------------------


@pytest.mark.parametrize("tau", [1.0, 2.5])
def test_lemma1_is_the_gradient_of_the_sampled_log_likelihood(tau):
    z = np.array([0.3, -1.2, 0.5, 0.1])
    for v, adv in ((0, 0.7), (2, -0.4), (3, 1.3)):
        want = 0.1 * jax.grad(lambda q, a=adv, v=v: a * jax.nn.log_softmax(q / tau)[v])(
            jnp.asarray(z))
        got = S.sampled_logit_update(z, v, adv, eta=0.1, temperature=tau)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
        # the lemma as printed (τ = 1): +ηÂ(1 − π(v)) on v, −ηÂπ(u) elsewhere
        if tau == 1.0:
            pi = softmax(z)
            printed = np.where(np.arange(4) == v, 0.1 * adv * (1 - pi[v]), -0.1 * adv * pi)
            np.testing.assert_allclose(got, printed, rtol=1e-12, atol=1e-15)


def test_theorem1_is_exact_for_an_action_only_advantage():
    """E_{v~π}[Lemma 1(v, Â(v))] by enumeration = Theorem 1 (App. B.4) when Â depends on v only."""
    z, adv = np.array([0.2, -0.7, 1.1]), np.array([0.3, -1.0, 0.6])
    pi = softmax(z, 1.5)
    mean = sum(pi[v] * np.asarray(S.sampled_logit_update(z, v, adv[v], eta=0.2, temperature=1.5))
               for v in range(3))
    np.testing.assert_allclose(S.expected_logit_update(z, adv, eta=0.2, temperature=1.5), mean,
                               rtol=1e-12, atol=1e-15)
    printed = 0.2 / 1.5 * pi * ((1 - pi) * adv - np.array(
        [sum(pi[u] * adv[u] for u in range(3) if u != v) for v in range(3)]))
    np.testing.assert_allclose(mean, printed, rtol=1e-12, atol=1e-15)


def test_expected_group_advantage_by_enumeration():
    """E[Â_i | a_i = u] over all 3^3 groups of G = 3 equals (G−1)/G (r(u) − π·r)."""
    z, G = np.log([0.2, 0.3, 0.5]), 3
    pi = softmax(z)
    num, den = np.zeros(3), np.zeros(3)
    for group in itertools.product(range(3), repeat=G):
        w = np.prod(pi[list(group)])
        adv = R3[list(group)] - R3[list(group)].mean()
        num[group[0]] += w * adv[0]
        den[group[0]] += w
    np.testing.assert_allclose(S.expected_group_advantages(z, R3, G), num / den, rtol=1e-12)


@pytest.mark.parametrize("G", [2, 5])
def test_theorem1_equals_the_monte_carlo_mean_of_lemma1_updates(G):
    """Algorithm 1's step (1/G) Σ_i Lemma 1(a_i, Â_i) with Â_i = r(a_i) − mean r, averaged over
    NumPy-sampled groups, agrees with Theorem 1 at the expected group advantage within 4.5
    standard errors, and rejects Theorem 1 at the population advantage r − π·r (App. B.4's
    reading), which over-states the update by G/(G−1)."""
    rng = np.random.default_rng(7 + G)
    z, tau, eta, n = np.array([0.4, -1.0, 0.6]), 1.3, 0.1, 40_000
    pi = softmax(z, tau)
    acts = rng.choice(3, size=(n, G), p=pi)
    adv = R3[acts] - R3[acts].mean(-1, keepdims=True)
    upd = np.asarray(S.sampled_logit_update(z, acts, adv, eta=eta, temperature=tau)).mean(1)
    mc, se = upd.mean(0), upd.std(0, ddof=1) / np.sqrt(n)
    exact = np.asarray(S.expected_logit_update(
        z, S.expected_group_advantages(z, R3, G, temperature=tau), eta=eta, temperature=tau))
    assert np.all(np.abs(mc - exact) <= 4.5 * se), (mc, exact, se)
    naive = np.asarray(S.expected_logit_update(z, R3 - pi @ R3, eta=eta, temperature=tau))
    np.testing.assert_allclose(exact, (G - 1) / G * naive, rtol=1e-12)
    if G == 2:
        assert np.any(np.abs(mc - naive) > 10 * se)


def test_expected_trajectory_is_the_iterated_expected_step():
    z0, G, eta, tau = np.log(P3), 3, 0.1, 2.0
    z, want = z0.copy(), [z0.copy()]
    for step in range(1, 61):
        pi = softmax(z, tau)
        z = z + eta / tau * (G - 1) / G * pi * (R3 - pi @ R3)
        if step % 20 == 0:
            want.append(z.copy())
    got = S.expected_trajectory(z0, R3, G, eta=eta, temperature=tau, num_steps=60, stride=20)
    np.testing.assert_allclose(got, np.array(want), rtol=1e-12, atol=1e-14)


def test_relatively_negative_action_and_stage_switch_on_a_hand_trajectory():
    # π·r = 0.275, 0.55, 0.725: π(v)(r(v) − π·r) has its minimum on a3, then a1, then a1
    pis = np.array([[0.45, 0.05, 0.5], [0.8, 0.15, 0.05], [0.5, 0.45, 0.05]])
    z = np.log(pis)
    np.testing.assert_array_equal(S.relatively_negative_action(z, R3), [2, 0, 0])
    assert int(S.stage_switch(z, R3)) == 1
    assert int(S.stage_switch(z[:1].repeat(3, 0), R3)) == -1  # never switches
    assert int(S.stage_switch(z[1:], R3)) == -1  # does not start in stage 1
    np.testing.assert_array_equal(S.stage_switch(np.stack([z, z[::-1]]), R3), [1, -1])


# ---- Algorithm 1 --------------------------------------------------------------------------


def algorithm1_step(z, actions, r, eta):
    """TS App. C.1 Algorithm 1, one iteration of its loop for the given sampled actions, as
    printed (loops; the last line is the plain step z ← z + η g/G)."""
    pi = softmax(z)
    G = len(actions)
    A_hat = {i: r[a] - np.mean([r[b] for b in actions]) for i, a in enumerate(actions)}
    g = np.zeros_like(z)
    for i, a_i in enumerate(actions):
        g[a_i] += (1 - pi[a_i]) * A_hat[i]
        for a_j in range(len(z)):
            if a_j != a_i:
                g[a_j] -= pi[a_j] * A_hat[i]
    return z + eta * g / G


def _state(sim, z, r, *, tau=1.0, eta=0.1, G=4):
    p = {**sim.default_params(), "eta": eta, "group_size": float(G), "temperature": tau,
         **TwoStage.action_params(r, logits0=z)}
    return sim.init(jax.random.key(0), p), p


def test_one_step_equals_algorithm1_on_a_hand_example():
    z, r = np.array([0.3, -1.2, 0.5]), R3
    acts, pad = [0, 2, 2, 0], [-1, -1]
    want = algorithm1_step(z, acts, r, 0.1)
    for optimizer in ("plain", "sgd"):  # the update as written, and optax SGD (same step)
        sim = TwoStage(num_actions=3, max_group_size=6, optimizer=optimizer)
        state, p = _state(sim, z, r)
        new = jax.jit(sim.update)(state, jnp.asarray(acts + pad, jnp.int32), p)
        np.testing.assert_allclose(new.logits, want, rtol=1e-13, err_msg=optimizer)
    assert float(new.logits[1]) == pytest.approx(z[1], abs=1e-15)  # a2 unsampled: unchanged
    np.testing.assert_allclose(new.advantages[:4], [0.25, -0.25, -0.25, 0.25])
    np.testing.assert_allclose(new.negative_advantage, [0.0, 0.0, -0.125])


def test_temperature_and_adam_steps_on_the_hand_example():
    z, r, acts = np.array([0.3, -1.2, 0.5]), R3, [0, 1, 2]
    padded = jnp.asarray(acts + [-1, -1, -1], jnp.int32)
    adv = r[acts] - r[acts].mean()
    # temperature: the exact gradient of (1/G) Σ Â_i log softmax(z/τ)_{a_i}
    sim = TwoStage(max_group_size=6)
    state, p = _state(sim, z, r, tau=2.0, G=3)
    grad = jax.grad(lambda q: jnp.mean(jnp.asarray(adv) * jax.nn.log_softmax(q / 2.0)[
        jnp.asarray(acts)]))(jnp.asarray(z))
    np.testing.assert_allclose(jax.jit(sim.update)(state, padded, p).logits,
                               z + 0.1 * np.asarray(grad), rtol=1e-13)
    # Adam's first step from zero moments: z + η ĝ / (|ĝ| + ε), ĝ = g/G (optax defaults)
    adam = TwoStage(max_group_size=6, optimizer="adam")
    state, p = _state(adam, z, r, G=3)
    gh = (algorithm1_step(z, acts, r, 1.0) - z)
    np.testing.assert_allclose(jax.jit(adam.update)(state, padded, p).logits,
                               z + 0.1 * gh / (np.abs(gh) + 1e-8), rtol=1e-10)


def test_sampled_actions_follow_the_policy_and_step_is_sample_then_update():
    sim = TwoStage(max_group_size=16)
    state, p = _state(sim, np.log(P3), R3, tau=1.5, G=16)
    states = jax.vmap(lambda s: state._replace(step=s))(jnp.arange(2000, dtype=jnp.int32))
    acts = np.asarray(jax.jit(jax.vmap(lambda s: sim.sample_actions(s, p)))(states)).ravel()
    pi, n = softmax(np.log(P3), 1.5), acts.size
    freq = np.bincount(acts, minlength=3) / n
    assert np.all(np.abs(freq - pi) <= 5 * np.sqrt(pi * (1 - pi) / n)), (freq, pi)
    one = jax.jit(sim.step)(state, p)
    again = jax.jit(sim.update)(state, one.actions, p)
    np.testing.assert_array_equal(one.logits, again.logits)
    assert int(one.step) == 1 and np.all(np.asarray(one.actions) >= 0)


def test_mean_centred_logits_of_best_and_worst_actions_are_monotone_path_by_path():
    """With Σ_i Â_i = 0 only sampled logits move, by (η/G) Σ_{i: a_i = v} Â_i: the best action's
    never falls and the worst's never rises (TS App. C.4 states it in expectation)."""
    sim = TwoStage(num_actions=4, max_group_size=4)
    p = {**sim.default_params(), "group_size": 3.0,
         **TwoStage.action_params((0.5, 1.0, 0.0, 0.75), (0.4, 0.05, 0.45, 0.1))}
    rec = jax.jit(jax.vmap(lambda k: trajectory(sim, k, p, num_steps=300, stride=1)[1]))(
        jax.random.split(jax.random.key(3), 4))
    dz = np.diff(np.asarray(rec.logits), axis=1)
    assert dz[..., 1].min() >= 0.0 and dz[..., 2].max() <= 0.0
    assert dz[..., 1].max() > 0 and dz[..., 2].min() < 0  # both did move
    np.testing.assert_allclose(np.asarray(rec.probs).sum(-1), 1.0, atol=1e-12)


# ---- bad input -----------------------------------------------------------------------------


def test_bad_input_is_refused_with_the_value_named():
    z = np.zeros(3)
    with pytest.raises(ValueError, match="temperature"):
        S.expected_logit_update(z, R3, temperature=0.0)
    with pytest.raises(ValueError, match="temperature"):
        S.sampled_logit_update(z, 0, 1.0, temperature=-1.0)
    with pytest.raises(ValueError, match="group_size"):
        S.expected_group_advantages(z, R3, 0)
    with pytest.raises(ValueError, match=r"rewards .*shapes \(4,\) and logits \(3,\)"):
        S.expected_group_advantages(z, np.ones(4), 2)
    with pytest.raises(ValueError, match="logits must have shape"):
        S.expected_logit_update(np.zeros(()), np.zeros(()))
    with pytest.raises(ValueError, match="action must be an integer in"):
        S.sampled_logit_update(z, 3, 1.0)
    with pytest.raises(ValueError, match="'adamx'"):
        TwoStage(optimizer="adamx")
    with pytest.raises(ValueError, match="'foo'"):
        TwoStage(method="foo")
    with pytest.raises(ValueError, match="num_actions"):
        TwoStage(num_actions=1)
    sim = TwoStage()
    for name, v in (("temperature", 0.0), ("group_size", 0.0), ("group_size", 1.5),
                    ("group_size", 17.0), ("eta", -0.1), ("reward_a2", np.inf)):
        with pytest.raises(ValueError, match=f"{name} must be .*got {name} = "):
            sim.check_params({name: v})
    with pytest.raises(ValueError, match="probs0 must have one entry per action"):
        TwoStage.action_params(R3, (0.5, 0.5))
    with pytest.raises(ValueError, match="probs0 must be 3 positive numbers summing to 1"):
        TwoStage.action_params(R3, (0.5, 0.4, 0.4))
    with pytest.raises(ValueError, match="temperature"):
        sweep.run("two_stage", {"temperature": [1.0, 0.0]}, fixed={"num_steps": 2}, seeds=1,
                  progress=False)


def test_traced_bad_values_raise_at_run_time():
    f = eqx.filter_jit(lambda t: S.expected_logit_update(jnp.zeros(3), jnp.asarray(R3),
                                                         temperature=t))
    with pytest.raises(eqx.EquinoxRuntimeError, match="temperature"):
        f(jnp.asarray(0.0))
    sim = TwoStage()

    @eqx.filter_jit
    def run(tau, G):
        p = {**sim.default_params(), "temperature": tau, "group_size": G}
        return trajectory(sim, jax.random.key(0), p, num_steps=2)[1].probs

    assert np.all(np.isfinite(np.asarray(run(jnp.asarray(1.0), jnp.asarray(2.0)))))
    with pytest.raises(eqx.EquinoxRuntimeError, match="temperature"):
        run(jnp.asarray(-1.0), jnp.asarray(2.0))
    with pytest.raises(eqx.EquinoxRuntimeError, match="group_size"):
        run(jnp.asarray(1.0), jnp.asarray(0.0))


def test_registered_as_a_simulator():
    assert SIMULATORS["two_stage"] is TwoStage


# ---- the experiment (TS Fig. 1, 5, 6, 7) ---------------------------------------------------


def expected_switch_step(z0, r, G, eta=0.1, tau=1.0, steps=4000):
    """NumPy: first step at which argmin_v π(v)(r(v) − π·r) is a1 along the expected dynamics
    (None if never within ``steps``)."""
    z = np.asarray(z0, float)
    for step in range(steps + 1):
        pi = softmax(z, tau)
        d = pi * (r - pi @ r)
        if np.argmin(d) == 0:
            return step
        z = z + eta / tau * (G - 1) / G * d
    return None


@pytest.mark.slow  # two compiled simulator programs and five figures: ~10-15 s on 2 cores
def test_quick_experiment_reproduces_the_two_stages(tmp_path):
    lab.load_experiment_module("two_stage")
    rec = lab.run_experiment("two-stage", quick=True, out=tmp_path)
    res, st = rec["results"], rec["results"]["statements"]
    stride = rec["parameters"]["stride"]
    for name in ("two_stage_fig1", "two_stage_fig5", "two_stage_fig6", "two_stage_fig7",
                 "two_stage_switch"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    # the expected dynamics the experiment reports agree with a NumPy iteration (up to stride)
    for panel in res["fig1_row1_initial_probabilities"] + res["fig1_row2_rewards"]:
        want = expected_switch_step(np.log(panel["probs0"]), np.asarray(panel["rewards"]), 2)
        assert 0 <= panel["meanfield_stage_switch_step"] - want < stride
    # τ = 5, 20: the expected dynamics do not switch within 4000 steps (τ = 5 switches later)
    for panel, tau in zip(res["fig6_temperature"], (1.0, 2.0, 5.0, 20.0), strict=True):
        want = expected_switch_step(np.log(panel["probs0"]), np.asarray(panel["rewards"]), 2,
                                    tau=tau)
        assert (want is None) == (panel["meanfield_stage_switch_step"] is None)
    # what the theory predicts, the simulation shows
    for key in ("fig1_pi_a1_rises_then_falls_in_every_panel",
                "fig1_relatively_negative_action_switches_a3_to_a1_in_every_seed",
                "fig1_switch_consistent_with_expected_dynamics", "fig5_two_stages_for_every_G",
                "fig5_switch_consistent_with_expected_dynamics",
                "fig6_switch_consistent_with_expected_dynamics",
                "fig7_switch_consistent_with_expected_dynamics"):
        assert st[key] is True, key
    for key in ("fig5_switch_earlier_for_larger_G", "fig5_larger_G_more_stable",
                "fig6_higher_temperature_shrinks_the_exploitation_stage",
                "fig7_best_logit_never_decreases", "fig7_worst_logit_never_increases",
                "fig7_middle_actions_rise_then_fall"):
        assert st[key]["reproduced"] is True, key
    assert st["fig7_best_logit_never_decreases"]["min_step_change"] >= 0.0
    ms = st["fig5_switch_earlier_for_larger_G"]["meanfield_switch_steps"]
    assert ms == sorted(ms, reverse=True) and len(set(ms)) == 4
