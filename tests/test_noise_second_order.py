"""The bandit's mean to O(η²) (simplexlab.theory._diffusion): the curvature term ½∂²φ:C against
central second differences, the second-order mean (modified drift and the noise's shift of the
mean) against a bandit ensemble at a large step where the first-order ODE and the modified drift
alone miss it, the linear-noise approximation over a batch of starts, one program for every η,
and bad input (the partition programme's second moment beyond its size, the new options)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simplexlab as sl
from simplexlab.shaping import GainSchedule, group_rule
from simplexlab.sim import Bandit, trajectory
from simplexlab.theory import Diffusion, FiniteGroup, expected_moments, linear_noise
from simplexlab.theory._diffusion import curvature, observables

#: the finite-group ladder's start (experiments/finite_group_ladder.py, STATES[0])
Y0, Z0, P0 = (0.5, 0.3, 0.2), (0.7, 0.3), 0.7
S0 = sl.make_state(P0, np.array(Y0), np.array(Z0))


def test_curvature_against_second_differences():
    """½ Σ_ij C_ij ∂_i ∂_j φ(x) of the coordinates φ = (p, y, z, L_y), C a random covariance
    (rank 3, as the log-probabilities' is: the constant direction carries none), against
    central second differences along the eigenvectors of C."""
    rng = np.random.default_rng(0)
    x = jnp.log(S0.policy())
    A = rng.normal(size=(5, 3))
    C = A @ A.T * 1e-2
    fun = lambda th: observables(th, 3)  # noqa: E731
    got = np.asarray(curvature(fun, x, jnp.asarray(C)))
    lam, vec = np.linalg.eigh(C)
    h = 1e-4
    ref = sum(0.5 * lk * (np.asarray(fun(x + h * v)) - 2 * np.asarray(fun(x))
                          + np.asarray(fun(x - h * v))) / h**2
              for lk, v in zip(lam, vec.T, strict=True) if lk > 1e-14)
    np.testing.assert_allclose(got, ref, atol=1e-7)
    assert np.max(np.abs(got)) > 1e-3


def test_second_order_mean_follows_the_bandit_where_the_ode_does_not():
    """GRPO, K = 3, M = 2, G = 4, η = 0.5 (8 steps to t = 4), 8192 prompts from one policy: at
    t = 2 and 4 the seed means of p and L_y lie within 4 standard errors of the second-order
    mean (plus 1e-3, its O(η²) rest), and the first-order ODE misses at least one of them by more
    than 5; the modified drift alone misses by more still (it corrects the step's drift, not
    the spread's shift of the mean)."""
    N, G, eta = 8192, 4, 0.5
    sim = Bandit(K=3, M=2, method="grpo", num_prompts=N, max_group_size=G, y0=Y0, z0=Z0)
    params = {**sim.default_params(), "group_size": float(G), "eta": eta, "p0": P0}
    rec = jax.jit(lambda k: trajectory(sim, k, params, num_steps=8, stride=4)[1])(
        jax.random.key(0))
    dyn = FiniteGroup(group_rule("grpo"), group_size=G)
    miss = {}
    for name, modified, corrected in (("ode", False, False), ("modified", True, False),
                                      ("second", True, True)):
        ln = linear_noise(Diffusion(dyn, eta=eta, modified=modified), S0, t1=4.0, n_save=3,
                          mean_correction=corrected)
        z = []
        for q in ("p", "L_y"):
            x = np.asarray(getattr(rec, q))[1:]  # t = 2, 4
            se = x.std(1, ddof=1) / np.sqrt(N)
            z.append((np.abs(x.mean(1) - np.asarray(ln.mean[q])[1:]) - (
                1e-3 if corrected else 0.0)) / se)
        miss[name] = float(np.max(z))
    assert miss["second"] < 4.0, miss
    assert miss["ode"] > 5.0 and miss["modified"] > miss["ode"], miss


def test_a_batch_of_starts_and_one_program_for_every_eta():
    """linear_noise over two starts equals each alone; a second step size reuses the compiled
    program (η is an array leaf of Diffusion)."""
    from simplexlab.theory._diffusion import _linear_noise

    dyn = FiniteGroup(group_rule("rloo"), group_size=4)
    s1 = sl.make_state(0.4, np.array([0.2, 0.3, 0.5]), np.array([0.5, 0.5]))
    both = sl.make_state(np.array([P0, 0.4]), np.array([Y0, [0.2, 0.3, 0.5]]),
                         np.array([Z0, [0.5, 0.5]]))
    d = Diffusion(dyn, eta=0.1, modified=True)
    b = linear_noise(d, both, t1=1.0, n_save=3, mean_correction=True)
    for i, s in enumerate((S0, s1)):
        a = linear_noise(d, s, t1=1.0, n_save=3, mean_correction=True)
        np.testing.assert_allclose(b.std["L_y"][i], a.std["L_y"], rtol=1e-6)
        np.testing.assert_allclose(b.mean["p"][i], a.mean["p"], rtol=1e-9)
    size = _linear_noise._cached._cache_size()
    linear_noise(Diffusion(dyn, eta=0.2, modified=True), s1, t1=1.0, n_save=3,
                 mean_correction=True)
    assert _linear_noise._cached._cache_size() == size
    assert np.asarray(d.eta).shape == () and float(d.eta) == 0.1
    # a fixed step: the spread as the adaptive solve gives it, to a few digits
    plain = Diffusion(dyn, eta=0.1)
    fixed = linear_noise(plain, S0, t1=2.0, n_save=3, dt=0.25)
    ref = linear_noise(plain, S0, t1=2.0, n_save=3)
    np.testing.assert_allclose(fixed.std["L_y"], ref.std["L_y"], rtol=1e-4)
    with pytest.raises(ValueError, match="multiples of dt"):
        linear_noise(plain, S0, t1=2.0, n_save=3, dt=0.3)


def test_bad_input_is_refused_with_a_clear_error():
    dyn = FiniteGroup(group_rule("grpo"), group_size=4)
    with pytest.raises(ValueError, match="mean_correction must be True or False"):
        linear_noise(Diffusion(dyn, eta=0.1), S0, t1=1.0, mean_correction=1)
    two = sl.make_state(np.full((2, 2), 0.5), np.full((2, 2, 3), 1 / 3), np.full((2, 2, 2), 0.5))
    with pytest.raises(ValueError, match="one point or one batch axis"):
        linear_noise(Diffusion(dyn, eta=0.1), two, t1=1.0)
    with pytest.raises(ValueError, match="eta .* must be a finite number > 0"):
        Diffusion(dyn, eta=jnp.asarray(-1.0))
    with pytest.raises(ValueError, match="eta .* must be a finite number > 0"):
        eqx.filter_jit(lambda e: Diffusion(dyn, eta=e))(jnp.asarray(0.1))  # traced: refused
    # the partition programme's second moment beyond its size: refused, naming it and the way out
    rule = group_rule("g2rpo", schedule=GainSchedule(kind="B", neutralize=True, gain=1.5))
    probs = np.array([0.3, 0.2, 0.1, 0.25, 0.15])
    with pytest.raises(ValueError, match=r"path='clusters' at G = 64 .* needs at least [\d,]+ "
                                         r"table entries.*montecarlo"):
        expected_moments(rule, probs, 3, 64, path="clusters", max_size=100_000)
    with pytest.raises(ValueError, match="does not apply to the second moment"):
        expected_moments(group_rule("progrpo"), probs, 3, 4, path="clusters")
    # optimizers the theory does not cover, and β outside [0, 1)
    import optax

    from simplexlab.theory import Momentum, RMSprop

    with pytest.raises(ValueError, match="covers the optimizers by name"):
        Bandit(optimizer=lambda lr: optax.lion(lr)).finite_group({"group_size": 4})
    for beta in (1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"beta must be in \[0, 1\)"):
            Momentum(beta=beta)
    with pytest.raises(ValueError, match=r"decay must be in \[0, 1\)"):
        RMSprop(decay=1.0)
