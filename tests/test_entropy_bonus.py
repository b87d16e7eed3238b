"""The entropy bonus (TRL's ``entropy_coef``, constant, decaying or adaptive) as a term of the
bandit's update and of the finite-group field: its gradient against ``jax.grad`` of the entropy, the
bandit's mean step against the field at a step in the middle of a decay (which tests the time
map), and the refusals."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simplexlab as sl
from simplexlab.shaping import meanfield_system
from simplexlab.sim import Bandit
from simplexlab.theory import EntropyBonus, entropy_gradient


def test_entropy_gradient_is_the_gradient_of_the_entropy():
    for theta in (jnp.array([0.3, -1.2, 0.5, 2.0]), jnp.array([[0.0, 1.0, -3.0], [5.0, 0.1, 0.2]])):
        def H(t):
            return -jnp.sum(jax.nn.softmax(t) * jax.nn.log_softmax(t))
        want = jax.vmap(jax.grad(H))(theta.reshape(-1, theta.shape[-1])).reshape(theta.shape)
        np.testing.assert_allclose(entropy_gradient(jax.nn.softmax(theta, -1)), want, atol=1e-14)
    # a mode of mass 0 contributes nothing (π log π → 0), not NaN
    g = entropy_gradient(jnp.array([0.5, 0.5, 0.0]))
    assert np.all(np.isfinite(g)) and float(g[2]) == 0.0


def test_coefficient_decays_linearly_then_stays():
    b = EntropyBonus(coef=0.2, final=0.05, decay_steps=30)
    np.testing.assert_allclose([float(b.coefficient(s)) for s in (0, 15, 30, 90)],
                               [0.2, 0.125, 0.05, 0.05], atol=1e-15)
    assert float(EntropyBonus(coef=0.1).coefficient(1000)) == 0.1


def test_bandit_mean_step_with_a_decaying_bonus_matches_the_field():
    """One SGD step of 20,000 independent prompts at step 50 of a decay 0.4 → 0 over 100
    steps (coefficient 0.2): the mean logit step over η equals the finite-group field with the
    bonus at t = 50 η within 4.5 standard errors, and differs from the field without it."""
    bonus = EntropyBonus(coef=0.4, final=0.0, decay_steps=100)
    sim = Bandit(K=3, M=2, method="grpo", num_prompts=20_000, max_group_size=6,
                 y0=(0.7, 0.2, 0.1), z0=(0.6, 0.4), entropy_bonus=bonus)
    eta = 0.01
    params = {**sim.default_params(), "group_size": 6.0, "eta": eta, "p0": 0.4}
    st = sim.init(jax.random.key(3), params)
    st = st._replace(step=jnp.asarray(50, st.step.dtype))
    d = np.asarray(sim.step(st, params).logits - st.logits) / eta
    dyn, s0 = sim.finite_group(params)
    one = sl.make_state(s0.p[:1], s0.y[:1], s0.z[:1])
    theta = np.asarray(dyn.theta_drift(50 * eta, one))[0]
    se = d.std(0, ddof=1) / np.sqrt(d.shape[0])
    assert np.all(np.abs(d.mean(0) - theta) < 4.5 * se + 1e-12), (d.mean(0), theta)
    plain = np.asarray(meanfield_system("grpo", group_size=6, step_time=eta)
                       .theta_drift(50 * eta, one))[0]
    assert np.max(np.abs(theta - plain) / se) > 20  # the bonus is seen: the test can fail


def test_refusals():
    with pytest.raises(ValueError, match="a decay needs both final and decay_steps"):
        EntropyBonus(coef=0.1, final=0.0)
    with pytest.raises(ValueError, match="EntropyBonus.coef must be finite"):
        EntropyBonus(coef=float("nan"))
    with pytest.raises(ValueError, match="finite-group system only"):
        meanfield_system("grpo", entropy_bonus=EntropyBonus(coef=0.1))
    with pytest.raises(ValueError, match="entropy_bonus must be an EntropyBonus"):
        Bandit(entropy_bonus=0.1)
    with pytest.raises(ValueError, match="no entropy bonus"):
        Bandit(entropy_bonus=EntropyBonus(coef=0.1)).meanfield()


def test_adaptive_controller_steps_as_trl_describes():
    """TRL's rule on a made-up entropy sequence: the first step applies nothing (no entropy
    seen yet); after a step at or below the target the coefficient rises by delta (capped),
    above it falls (floored); a step applies its coefficient only when the last entropy was at
    or below the target."""
    b = EntropyBonus(coef=0.1, adaptive=True, target=1.0, delta=0.04, coef_min=0.02,
                     coef_max=0.15)
    control = b.controller_init(jnp.float64)
    applied, coefs = [], []
    for H in (1.5, 0.9, 0.8, 0.7, 1.2, 1.3, 1.4):
        a, control = b.controller_step(control, H)
        applied.append(float(a))
        coefs.append(float(control[0]))
    np.testing.assert_allclose(coefs, [0.06, 0.10, 0.14, 0.15, 0.11, 0.07, 0.03], atol=1e-15)
    np.testing.assert_allclose(applied, [0.0, 0.0, 0.10, 0.14, 0.15, 0.0, 0.0], atol=1e-15)


def test_bandit_adaptive_step_is_the_constant_step_at_the_applied_coefficient():
    """Each step of the bandit with the adaptive controller equals the step with a constant
    bonus at the coefficient the controller applies there (0 at the first step), bit for bit;
    the controller runs on the mean entropy over the prompts."""
    bonus = EntropyBonus(coef=0.3, adaptive=True, target=1.45, delta=0.1)
    kw = dict(K=3, M=2, method="grpo", num_prompts=5, max_group_size=6)
    sim = Bandit(**kw, entropy_bonus=bonus)
    params = {**sim.default_params(), "group_size": 6.0, "eta": 0.5}
    st = sim.init(jax.random.key(1), params)
    seen = set()
    for _ in range(4):
        H = jnp.mean(sl.shaping.entropy(jax.nn.softmax(st.logits, -1)))
        c, nxt = bonus.controller_step(st.entropy_control, H)
        nxt_state = sim.step(st, params)
        const = Bandit(**kw, entropy_bonus=EntropyBonus(coef=float(c)))
        want = const.step(st._replace(entropy_control=None), params)
        np.testing.assert_array_equal(np.asarray(nxt_state.logits), np.asarray(want.logits))
        np.testing.assert_array_equal(np.asarray(nxt_state.entropy_control[0]), np.asarray(nxt[0]))
        seen.add(float(c) > 0)
        st = nxt_state
    assert seen == {True, False}  # both branches ran: the test can tell them apart


def test_adaptive_refusals():
    with pytest.raises(ValueError, match="does not decay"):
        EntropyBonus(coef=0.1, adaptive=True, final=0.0, decay_steps=10)
    with pytest.raises(ValueError, match="coef_min .* must be <= coef_max"):
        EntropyBonus(coef=0.1, adaptive=True, coef_min=0.5, coef_max=0.1)
    with pytest.raises(ValueError, match="EntropyBonus.delta must be"):
        EntropyBonus(coef=0.1, adaptive=True, delta=-0.01)


def test_bandit_with_the_adaptive_controller_follows_the_field():
    """The field's small-step limit of TRL's controller (off above the target, a sliding mode
    that holds the entropy on it) against the bandit running the controller step by step: 256
    runs of one prompt (each its own controller), 600 steps of η = 0.05 at G = 8, GRPO; the
    entropy falls to the target 0.9 and stays; seed means of the entropy, L_y and p within
    0.01 + 4 standard errors of the field at every record. The field without the bonus
    (where GRPO's entropy keeps falling) is far from the bandit at the end."""
    eta, steps, stride = 0.05, 600, 50
    bonus = EntropyBonus(coef=0.0, adaptive=True, target=0.9, delta=0.02)
    kw = dict(K=3, M=2, method="grpo", num_prompts=1, y0=(0.5, 0.3, 0.2), z0=(0.6, 0.4))
    sim = Bandit(**kw, entropy_bonus=bonus)
    params = {"group_size": 8, "eta": eta, "p0": 0.5}
    run = jax.jit(jax.vmap(lambda k: sl.sim.trajectory(sim, k, params, num_steps=steps,
                                                       stride=stride)[1]))
    rec = run(jax.random.split(jax.random.key(0), 256))

    def field(s):
        dyn, s0 = s.finite_group(params)
        sol = sl.solve(dyn, jax.tree_util.tree_map(lambda a: a[0], s0), t1=steps * eta,
                       n_save=steps // stride + 1)
        P = jnp.concatenate([(1 - sol.p)[:, None] * sol.y, sol.p[:, None] * sol.z], -1)
        return {"entropy": np.asarray(sl.shaping.entropy(P)), "L_y": np.asarray(sol.L_y),
                "p": np.asarray(sol.p)}

    want = field(sim)
    for name in ("entropy", "L_y", "p"):
        x = np.asarray(getattr(rec, name))[:, :, 0]
        gap = np.abs(x.mean(0) - want[name])
        se = x.std(0, ddof=1) / np.sqrt(x.shape[0])
        assert np.all(gap <= 0.01 + 4 * se), (name, gap, se)
    assert abs(want["entropy"][-1] - 0.9) < 1e-3  # held at the target
    plain = field(Bandit(**kw))
    H = np.asarray(rec.entropy)[:, -1, 0]
    assert abs(H.mean() - plain["entropy"][-1]) > 0.2  # the test can fail


def test_flat_settings_make_the_bonus():
    """Sweeps and TOML files give the bonus by flat settings (``entropy_coef``, ...): the same
    bandit as the object; ``entropy_coef = 0`` without adaptation is no bonus; both ways at once
    are refused."""
    assert Bandit.make(entropy_coef=0.1, entropy_final=0.0, entropy_decay_steps=50) == Bandit(
        entropy_bonus=EntropyBonus(coef=0.1, final=0.0, decay_steps=50))
    assert Bandit.make(entropy_coef=0.05, entropy_adaptive=True, entropy_target=1.0) == Bandit(
        entropy_bonus=EntropyBonus(coef=0.05, adaptive=True, target=1.0))
    assert Bandit.make(entropy_coef=0.0).entropy_bonus is None
    assert Bandit.make(entropy_coef=0.0, entropy_final=0.1, entropy_decay_steps=20) == Bandit(
        entropy_bonus=EntropyBonus(coef=0.0, final=0.1, decay_steps=20))  # a ramp up from 0
    assert {"entropy_coef", "entropy_adaptive", "entropy_target"} <= set(Bandit.settings())
    with pytest.raises(ValueError, match="not both"):
        Bandit(entropy_bonus=EntropyBonus(coef=0.1), entropy_coef=0.2)
    with pytest.raises(ValueError, match="EntropyBonus.coef must be finite"):
        Bandit.make(entropy_coef=float("inf"))
