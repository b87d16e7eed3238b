"""The diffusion and linear-noise approximations of the bandit's SGD run
(simplexlab.theory._diffusion): the predicted across-seed variance of p and L_y against a bandit
ensemble within the ensemble's interval on the variance, the SDE's sample paths against the
linear-noise prediction, the second-order drift against finite differences, and bad input."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simplexlab as sl
from simplexlab.shaping import group_rule
from simplexlab.sim import Bandit, trajectory
from simplexlab.theory import (
    AbstractGroupRule,
    Adam,
    Diffusion,
    FiniteGroup,
    linear_noise,
    mode_survival,
    sde_paths,
)

Y0, Z0, P0 = (0.5, 0.3, 0.2), (0.6, 0.4), 0.5
G, ETA, T = 8, 0.05, 2.0
S0 = sl.make_state(P0, np.array(Y0), np.array(Z0))


def _variance_and_se(x):
    """Across-seed variance of ``x`` ``(seeds,)`` and its standard error (from the fourth
    central moment: no normality assumed)."""
    n = len(x)
    v = x.var(ddof=1)
    m4 = np.mean((x - x.mean()) ** 4)
    return v, np.sqrt(max(m4 - v**2, 0.0) / n)


def test_linear_noise_predicts_the_bandit_seed_variance():
    """GRPO, K = 3, M = 2, G = 8, η = 0.05, 40 steps, 3,000 prompts from one policy
    (independent seeds): the variance of p and of L_y across prompts at t = 1 and t = 2 is the
    linear-noise prediction within 4.5 of its standard errors, and the interval is narrow
    enough to tell it from half the prediction (two groups per step: P = 2)."""
    N = 3000
    sim = Bandit(K=3, M=2, method="grpo", num_prompts=N, max_group_size=G, y0=Y0, z0=Z0)
    params = {**sim.default_params(), "group_size": float(G), "eta": ETA, "p0": P0}
    n = int(round(T / ETA))
    rec = jax.jit(lambda k: trajectory(sim, k, params, num_steps=n, stride=n // 2)[1])(
        jax.random.key(0))
    dyn, _ = sim.finite_group(params)
    ln = linear_noise(Diffusion(dyn, eta=ETA), S0, t1=T, n_save=3)
    for name in ("p", "L_y"):
        x = np.asarray(getattr(rec, name))  # (records, prompts)
        pred = np.asarray(ln.std[name]) ** 2
        for i in (1, 2):
            v, se = _variance_and_se(x[i])
            assert abs(v - pred[i]) < 4.5 * se, (name, i, v, se, pred[i])
            assert abs(v - pred[i] / 2) > 4.5 * se
        # the mean follows the ODE up to O(η)
        np.testing.assert_allclose(x.mean(1), ln.mean[name], atol=2e-3)


def test_sde_paths_reproducible_and_matching_the_linear_noise():
    """The SDE's sample paths (Euler–Maruyama on a virtual Brownian tree) are the same for the
    same key and differ for another; their spread at t = 2 matches the linear-noise
    approximation (a chi-square interval on 300 paths)."""
    dyn = FiniteGroup(group_rule("grpo"), group_size=G)
    d = Diffusion(dyn, eta=ETA)
    a = sde_paths(d, S0, t1=T, num_paths=300, n_save=3, dt=ETA, key=jax.random.key(1))
    b = sde_paths(d, S0, t1=T, num_paths=300, n_save=3, dt=ETA, key=jax.random.key(1))
    c = sde_paths(d, S0, t1=T, num_paths=300, n_save=3, dt=ETA, key=jax.random.key(2))
    np.testing.assert_array_equal(a.theta, b.theta)
    assert np.max(np.abs(np.asarray(a.theta - c.theta))) > 1e-3
    ln = linear_noise(d, S0, t1=T, n_save=3)
    for name in ("p", "L_y"):
        v, se = _variance_and_se(np.asarray(getattr(a, name))[:, -1])
        pred = float(ln.std[name][-1]) ** 2
        assert abs(v - pred) < 4.5 * se, (name, v, se, pred)
        np.testing.assert_allclose(np.mean(getattr(a, name)[:, -1]), ln.mean[name][-1],
                                   atol=4.5 * np.sqrt(pred / 300))


def test_mode_extinction_against_the_bandit():
    """A rare good mode (y0 = (0.6, 0.3, 0.1)) under GRPO, G = 8, η = 0.05, to t = 2: the
    probability that its y falls to 0.067 or below (the mean stays at 0.0695: a loss by noise
    alone) and E[K̂] with that threshold, from 300 SDE paths, against 3,000 bandit prompts
    (whose own K_hat counts the modes) within 4.5 combined standard errors."""
    y0, thr = (0.6, 0.3, 0.1), 0.067
    s0 = sl.make_state(P0, np.array(y0), np.array(Z0))
    d = Diffusion(FiniteGroup(group_rule("grpo"), group_size=G), eta=ETA)
    surv = mode_survival(sde_paths(d, s0, t1=T, num_paths=300, n_save=3, dt=ETA,
                                   key=jax.random.key(4)), threshold=thr)
    N = 3000
    sim = Bandit(K=3, M=2, method="grpo", num_prompts=N, max_group_size=G, y0=y0, z0=Z0,
                 mode_threshold=thr)
    params = {**sim.default_params(), "group_size": float(G), "eta": ETA, "p0": P0}
    n = int(round(T / ETA))
    rec = jax.jit(lambda k: trajectory(sim, k, params, num_steps=n, stride=n // 2)[1])(
        jax.random.key(3))
    lost = np.mean(np.asarray(rec.y)[-1, :, 2] <= thr)
    k_hat = np.asarray(rec.K_hat)[-1]
    assert 0.05 < lost < 0.5  # a probability the test can resolve
    se = np.hypot(float(surv.extinct_stderr[-1, 2]), np.sqrt(lost * (1 - lost) / N))
    assert abs(float(surv.extinct[-1, 2]) - lost) < 4.5 * se, (surv.extinct[-1], lost)
    se = np.hypot(float(surv.expected_modes_stderr[-1]), k_hat.std(ddof=1) / np.sqrt(N))
    assert abs(float(surv.expected_modes[-1]) - k_hat.mean()) < 4.5 * se
    # first passage on the save grid: never below the fraction extinct at the end
    assert np.all(np.asarray(surv.ever) >= np.asarray(surv.extinct))
    assert float(surv.extinct[0, 2]) == 0.0 and float(surv.expected_modes[0]) == 3.0
    with pytest.raises(ValueError, match=r"threshold must be a number in \(0, 1\)"):
        mode_survival(sde_paths(d, s0, t1=T, num_paths=300, n_save=3, dt=ETA), threshold=0.0)


def test_second_order_drift_against_finite_differences():
    """The modified drift f − (η/2)(∂f) f, the directional derivative by central differences."""
    dyn = FiniteGroup(group_rule("rloo"), group_size=6)
    th = jnp.log(S0.policy())
    plain = Diffusion(dyn, eta=0.1)
    f = np.asarray(plain.drift(0.0, th, 3))
    h = 1e-5
    jf = (np.asarray(plain.field(0.0, th + h * f, 3))
          - np.asarray(plain.field(0.0, th - h * f, 3))) / (2 * h)
    mod = np.asarray(Diffusion(dyn, eta=0.1, modified=True).drift(0.0, th, 3))
    np.testing.assert_allclose(mod, f - 0.05 * jf, atol=1e-9)
    assert np.max(np.abs(mod - f)) > 1e-4


class _Broken(AbstractGroupRule):
    """GRPO whose all-correct groups get a NaN advantage (a bug in a user's rule)."""

    structure = "counts"

    def advantages(self, rewards, modes, logp, t, num_clusters):
        a = group_rule("grpo").advantages(rewards, modes, logp, t, num_clusters)
        return jnp.where(jnp.all(rewards == 1, -1, keepdims=True), jnp.nan, a)


def test_bad_input_is_refused_with_a_clear_error():
    dyn = FiniteGroup(group_rule("grpo"), group_size=4)
    for eta in (0.0, -0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"eta \(the run's step size η\) must be a finite"):
            Diffusion(dyn, eta=eta)
    with pytest.raises(ValueError, match="SGD's"):
        Diffusion(FiniteGroup(group_rule("grpo"), group_size=4, optimizer=Adam()), eta=0.1)
    with pytest.raises(ValueError, match="system's own eta must be 1"):
        Diffusion(FiniteGroup(group_rule("grpo"), group_size=4, eta=2.0), eta=0.1)
    with pytest.raises(ValueError, match="t1 must be"):
        linear_noise(Diffusion(dyn, eta=0.1), S0, t1=-1.0)
    with pytest.raises(ValueError, match="num_paths"):
        sde_paths(Diffusion(dyn, eta=0.1), S0, t1=1.0, num_paths=0)
    broken = Diffusion(FiniteGroup(_Broken(), group_size=4), eta=0.1)
    with pytest.raises(eqx.EquinoxRuntimeError, match="step covariance is not finite"):
        jax.block_until_ready(eqx.filter_jit(lambda th: broken.diffusion(0.0, th, 3))(
            jnp.log(S0.policy())))


def test_the_fixed_step_solver_is_the_classical_runge_kutta_method():
    """``linear_noise``'s fixed-step solver on ``dy/dt = λ y``: after ``n`` steps of ``h`` the
    classical method gives exactly ``R(λh)^n`` with ``R(z) = 1 + z + z²/2 + z³/6 + z⁴/24``
    (its stability function; Hairer, Nørsett & Wanner I, §IV.2), a closed form independent of
    the Butcher tableau's entries, and on ``dy/dt = cos t`` its error falls 16-fold when the
    step halves (order 4)."""
    from simplexlab.theory._rk4 import rk4

    def solve(f, y0, h, t1):
        n = int(round(t1 / h))
        ys = jax.jit(lambda y: rk4(f, y, 0.0, h, n, 2))(jnp.asarray(y0, float))
        assert ys.shape == (2,) and float(ys[0]) == y0  # the start, then t1
        return float(ys[-1])

    lam, h, n = -0.7, 0.3, 10
    z = lam * h
    R = 1 + z + z**2 / 2 + z**3 / 6 + z**4 / 24
    assert solve(lambda t, y: lam * y, 1.0, h, n * h) == pytest.approx(R**n, rel=1e-13)
    errors = [abs(solve(lambda t, y: jnp.cos(t), 0.0, h, 3.0) - np.sin(3.0))
              for h in (0.3, 0.15)]
    assert 13.0 < errors[0] / errors[1] < 19.0
    # save points every 5 steps, on a pytree with a time-dependent field: the same numbers as
    # the runs that stop there
    def f(t, y):
        return (jnp.cos(t) * y[1][0], -y[0] * jnp.asarray([1.0, 2.0]))

    y0 = (jnp.asarray(1.0), jnp.asarray([0.5, -0.25]))
    ys = jax.jit(lambda y: rk4(f, y, 0.0, 0.1, 5, 3))(y0)
    assert ys[0].shape == (3,) and ys[1].shape == (3, 2)
    for i, n in ((1, 5), (2, 10)):
        one = jax.jit(lambda y, n=n: rk4(f, y, 0.0, 0.1, n, 2))(y0)
        np.testing.assert_allclose(np.asarray(ys[1][i]), np.asarray(one[1][1]), rtol=1e-14)
        assert float(ys[0][i]) == pytest.approx(float(one[0][1]), rel=1e-14)


def test_the_fixed_step_takes_save_points_that_float32_cannot_hold_exactly():
    """``linear_noise(dt=...)`` checks that the save points are multiples of ``dt`` on the
    host's float64 grid, so a step such as 0.1 (not a float32 number) is accepted with 64-bit
    floats off too, and gives the same spread as with them on (to float32's round-off)."""
    dyn = FiniteGroup(group_rule("grpo"), group_size=G)
    want = np.asarray(linear_noise(Diffusion(dyn, eta=ETA), S0, t1=2.0, n_save=21,
                                   dt=0.1).std["L_y"])
    with jax.enable_x64(False):
        s32 = sl.make_state(P0, np.array(Y0), np.array(Z0))
        got = linear_noise(Diffusion(dyn, eta=ETA), s32, t1=2.0, n_save=21, dt=0.1)
        assert got.ts.dtype == jnp.float32
        np.testing.assert_allclose(np.asarray(got.std["L_y"]), want, rtol=1e-4, atol=1e-7)
