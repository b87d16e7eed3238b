"""Sharpening-collapse §2: Theorem 2.2 (batch-optimal policy), Theorem 2.3 (Z' bounds),
Theorem 2.4 / Corollary 2.2 (ratio R), App. G kernel values; App. B's one-step update and
geometric interpolation, §2.3 / App. D's target and induced logit shifts.

References: numerical maximisation with ``scipy.optimize``; Z' summed directly with NumPy;
the Theorem 2.4 bounds re-typed from the statement; exact rationals for the kernel values; the
step's gradient by ``jax.grad`` of the objective written out (the natural step with NumPy's
pseudo-inverse of the Fisher matrix); the induced shift from the minimum-norm solution of
``J δ = y`` by ``np.linalg.lstsq``.
"""

from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import logsumexp
from strategies import interior_simplex_points

from simplexlab import theory as S


def _linear_objective(logits, pi_ref, counts, adv, beta):
    logp = logits - logsumexp(logits)
    p = np.exp(logp)
    g = counts.sum()
    return float(p @ (counts * adv) / g - beta * p @ (logp - np.log(pi_ref)))


@pytest.mark.parametrize("seed", range(6))
def test_theorem_2_2_is_the_numerical_maximiser(seed):
    rng = np.random.default_rng(seed)
    a = int(rng.integers(3, 7))
    pi_ref = rng.dirichlet(np.ones(a))
    counts = rng.multinomial(int(rng.integers(2, 9)), pi_ref).astype(float)
    adv = rng.normal(size=a)
    beta = float(rng.uniform(0.3, 2.0))
    res = minimize(lambda z: -_linear_objective(z, pi_ref, counts, adv, beta), np.zeros(a),
                   method="BFGS", options={"gtol": 1e-11})
    p_num = np.exp(res.x - logsumexp(res.x))
    p_hat = np.asarray(S.batch_optimal_policy(pi_ref, counts, adv, beta))
    np.testing.assert_allclose(p_hat, p_num, atol=2e-6)
    # and it is at least as good as the optimiser's answer
    assert _linear_objective(np.log(p_hat), pi_ref, counts, adv, beta) >= -res.fun - 1e-12
    # Z' as defined in Theorem 2.2
    g = counts.sum()
    z_ref = np.sum(pi_ref * np.exp(counts * adv / (beta * g)))
    np.testing.assert_allclose(np.exp(S.log_batch_partition_function(pi_ref, counts, adv, beta)),
                               z_ref, rtol=1e-13)
    # unsampled modes are all scaled by 1/Z'
    un = counts == 0
    if un.any():
        np.testing.assert_allclose(p_hat[un], pi_ref[un] / z_ref, rtol=1e-12)


def test_eq3_log_likelihood_surrogate_is_unbounded():
    """Eq. (3) literally (A log pi - beta KL) has no maximiser when a sampled advantage is
    negative: pushing that mode's probability to 0 increases it without bound. So Theorem 2.2's
    closed form maximises the probability-linear surrogate, not Eq. (3)."""
    pi_ref = np.array([0.5, 0.3, 0.2])
    counts = np.array([2.0, 1.0, 0.0])
    adv = np.array([1.0, -1.0, 0.0])
    beta = 0.5

    def eq3(p):
        return float(counts @ (adv * np.log(p)) / counts.sum() - beta * p @ np.log(p / pi_ref))

    vals = [eq3(np.array([0.5, eps, 0.5 - eps])) for eps in (1e-2, 1e-6, 1e-12, 1e-100)]
    assert np.all(np.diff(vals) > 0) and vals[-1] > 70
    p_hat = np.asarray(S.batch_optimal_policy(pi_ref, counts, adv, beta))
    assert eq3(np.array([0.5, 1e-100, 0.5 - 1e-100])) > eq3(p_hat)


@given(interior_simplex_points(min_n=2, max_n=8), st.data())
def test_theorem_2_3_bounds_hold(pi_ref, data):
    a = len(pi_ref)
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    g = data.draw(st.integers(2, 64))
    counts = rng.multinomial(g, pi_ref).astype(float)
    correct = rng.random(a) < data.draw(st.floats(0.1, 0.9))
    beta = data.draw(st.floats(0.01, 5.0))
    a_pos = data.draw(st.floats(0.0, 5.0))
    a_neg = -data.draw(st.floats(1e-3, 5.0))
    adv = np.where(correct, a_pos, a_neg)
    z = np.sum(pi_ref * np.exp(counts * adv / (beta * g)))  # Theorem 2.2's Z', directly
    b1 = float(S.z_prime_lower_bound(pi_ref, counts, jnp.asarray(correct), a_pos, a_neg, beta))
    assert z >= b1 - 1e-12 * max(1.0, abs(z))
    # the bound is the first-order (e^x >= 1 + x) expansion, retyped from the statement
    sp, sn = correct & (counts > 0), ~correct & (counts > 0)
    b1_ref = 1 + (a_pos * (counts * pi_ref)[sp].sum() - abs(a_neg) * (counts * pi_ref)[sn].sum()
                  ) / (beta * g)
    np.testing.assert_allclose(b1, b1_ref, rtol=1e-12, atol=1e-12)
    p_plus = counts[sp].sum() / g
    if 0 < p_plus < 1:
        ap, an = (float(x) for x in S.normalized_binary_advantages(p_plus))
        sigma = np.sqrt(p_plus * (1 - p_plus))
        np.testing.assert_allclose([ap, an], [(1 - p_plus) / sigma, -p_plus / sigma], rtol=1e-14)
        adv_n = np.where(correct, ap, an)
        z_n = np.sum(pi_ref * np.exp(counts * adv_n / (beta * g)))
        b2 = float(S.z_prime_lower_bound_normalized(pi_ref, counts, jnp.asarray(correct), beta))
        b1n = float(S.z_prime_lower_bound(pi_ref, counts, jnp.asarray(correct), ap, an, beta))
        assert z_n >= b1n - 1e-12 * z_n and b1n >= b2 - 1e-12 * abs(b2)
        gap = pi_ref[sp].min() - pi_ref[sn].max()
        np.testing.assert_allclose(b2, 1 + p_plus * (1 - p_plus) / (beta * sigma) * gap,
                                   rtol=1e-12, atol=1e-12)
        if gap > 0:  # Table 1: confident model -> Z' > 1 -> unsampled modes suppressed
            assert z_n > 1
            p_hat = np.asarray(S.batch_optimal_policy(pi_ref, counts, adv_n, beta))
            assert np.all(p_hat[counts == 0] < pi_ref[counts == 0])


def _bounds_from_statement(y_k, a_sum, n_o, g, lmin, lmax, rmin, rmax, eta=1.0):
    up = eta * rmax * a_sum / (lmin + (g - 1) * rmin)
    lo = eta * n_o * (lmin - rmin) / (lmax - rmax) * (y_k - rmax * a_sum / (lmax + (g - 1) * rmax))
    return up, lo


def test_ratio_r_is_the_ratio_of_theorem_2_4_bounds(rng):
    for _ in range(50):
        rmin = rng.uniform(0.1, 0.5)
        rmax = rmin + rng.uniform(0, 0.3)
        lmin = rmax + rng.uniform(0.01, 0.5)
        lmax = lmin + rng.uniform(0, 0.3)
        g, n_o = int(rng.integers(2, 32)), int(rng.integers(1, 5))
        y_k, a_sum = rng.uniform(0.1, 1), rng.uniform(1, 5)
        up, lo = _bounds_from_statement(y_k, a_sum, n_o, g, lmin, lmax, rmin, rmax, 0.7)
        got_up, got_lo = S.theorem24_bounds(y_k, a_sum, n_o, g, lmin, lmax, rmin, rmax, 0.7)
        np.testing.assert_allclose([got_up, got_lo], [up, lo], rtol=1e-13)
        r = float(S.ratio_r(y_k, a_sum, n_o, g, lmin, lmax, rmin, rmax))
        np.testing.assert_allclose(r, lo / up, rtol=1e-12)
        printed = float(S.ratio_r(y_k, a_sum, n_o, g, lmin, lmax, rmin, rmax, form="printed"))
        if n_o == 1:
            np.testing.assert_allclose(printed, r, rtol=1e-12)
        else:
            assert abs(printed - r) > 1e-6 * abs(r)
    # well-conditioned limit: App. F's simplified form is the exact limit; main text's is not
    lam, rho, g, n_o, y_k, a_sum = 0.885, 0.635, 8, 3, 0.4, 2.0
    exact = _bounds_from_statement(y_k, a_sum, n_o, g, lam, lam, rho, rho)
    np.testing.assert_allclose(S.ratio_r_simplified(y_k, a_sum, n_o, g, lam / rho),
                               exact[1] / exact[0], rtol=1e-12)
    np.testing.assert_allclose(S.ratio_r(y_k, a_sum, n_o, g, lam, lam, rho, rho),
                               exact[1] / exact[0], rtol=1e-12)
    main = float(S.ratio_r_simplified(y_k, a_sum, n_o, g, lam / rho, form="main"))
    np.testing.assert_allclose(main, n_o * y_k / a_sum * (lam / rho + g - 1) - 1, rtol=1e-14)
    assert abs(main - exact[1] / exact[0]) > 0.1


def test_toy_kernel_values_exact():
    kv = S.toy_kernel_values()
    ep = [Fraction(3, 4), Fraction(1, 2), Fraction(1, 4), Fraction(1, 10)]
    lam = sum(x * x for x in ep)
    assert lam == Fraction(177, 200) and kv["lambda"] == 0.885
    es = {"High": [Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1, 10)],
          "Mid": [Fraction(1, 10), Fraction(1, 2), Fraction(9, 10), Fraction(1, 10)],
          "Low": [Fraction(0), Fraction(1, 2), Fraction(1), Fraction(1, 10)]}
    for name, e in es.items():
        rho = sum(a * b for a, b in zip(ep, e, strict=True))
        assert kv["rho"][name] == float(rho) == kv["paper"]["rho"][name]  # rho's agree
        assert kv["lam_over_rho"][name] == float(lam / rho)
        # the paper's ratios use lambda = 0.8775 (its arithmetic slip), not 0.885
        assert round(0.8775 / float(rho), 2) == kv["paper"]["lam_over_rho"][name]
    np.testing.assert_allclose([kv["lam_over_rho"][k] for k in ("High", "Mid", "Low")],
                               [1.3937, 1.5804, 1.7353], atol=1e-4)


def test_sharpening_bad_input():
    pi_ref = np.array([0.5, 0.3, 0.2])
    with pytest.raises(ValueError, match="beta"):
        S.batch_optimal_policy(pi_ref, np.array([1.0, 1, 0]), np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="integers"):
        S.batch_optimal_policy(pi_ref, np.array([1.5, 1, 0]), np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="simplex"):
        S.batch_optimal_policy(np.array([0.5, 0.6, 0.2]), np.array([1.0, 1, 0]), np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="both sampled"):
        S.z_prime_lower_bound_normalized(pi_ref, np.array([2.0, 0, 0]),
                                         jnp.array([True, False, False]), 1.0)
    with pytest.raises(ValueError, match="Assumption 2.3"):
        S.ratio_r(0.5, 1.0, 1, 4, 0.5, 0.6, 0.4, 0.55)
    with pytest.raises(ValueError, match="form"):
        S.ratio_r(0.5, 1.0, 1, 4, 0.9, 0.9, 0.4, 0.4, form="nope")


def _batch_objective(z, pi_ref, counts, adv, beta, surrogate):
    """Thm B.1's batch objective at π = softmax(z), written directly (jax, for autodiff)."""
    logp = z - jax.scipy.special.logsumexp(z)
    s = logp if surrogate == "log_likelihood" else jnp.exp(logp)
    kl = jnp.sum(jnp.exp(logp) * (logp - jnp.log(pi_ref)))
    return jnp.sum(counts * adv * s) / counts.sum() - beta * kl


@pytest.mark.parametrize("surrogate", ["log_likelihood", "probability"])
def test_batch_objective_step_is_a_gradient_step_on_the_logits(rng, surrogate):
    for _ in range(5):
        a = int(rng.integers(3, 7))
        pi, pi_ref = rng.dirichlet(np.ones(a)), rng.dirichlet(np.ones(a))
        counts = rng.multinomial(8, pi).astype(float)
        adv, beta, eta = rng.normal(size=a), float(rng.uniform(0.1, 3)), 0.3
        z = jnp.log(jnp.asarray(pi))
        g = np.asarray(jax.grad(_batch_objective)(z, pi_ref, counts, adv, beta, surrogate))
        want = np.exp(np.log(pi) + eta * g - logsumexp(np.log(pi) + eta * g))
        got = S.batch_objective_step(pi, pi_ref, counts, adv, beta, eta, surrogate=surrogate)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
        # natural gradient: the Fisher matrix Diag(π) − ππᵀ pseudo-inverted (numpy)
        nat = np.linalg.pinv(np.diag(pi) - np.outer(pi, pi)) @ g
        want = np.exp(np.log(pi) + eta * nat - logsumexp(np.log(pi) + eta * nat))
        got = S.batch_objective_step(pi, pi_ref, counts, adv, beta, eta, surrogate=surrogate,
                                     natural=True)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-14)
    with pytest.raises(ValueError, match="surrogate"):
        S.batch_objective_step(pi, pi_ref, counts, adv, beta, eta, surrogate="log")


def test_geometric_interpolation_and_target_shifts(rng):
    pi, target = rng.dirichlet(np.ones(5), 3), rng.dirichlet(np.ones(5), 3)
    c = np.array([0.0, 0.3, 1.0])
    w = pi ** (1 - c[:, None]) * target ** c[:, None]
    np.testing.assert_allclose(S.geometric_interpolation(pi, target, c),
                               w / w.sum(-1, keepdims=True), rtol=1e-13)
    counts, adv = np.array([3.0, 0, 1, 4]), np.array([0.5, 2.0, -1.5, -0.25])
    np.testing.assert_allclose(S.target_logit_shifts(counts, adv, 2.0),
                               [3 * 0.5 / 16, 0, 1.5 / 16, 4 * 0.25 / 16], rtol=1e-15)


def test_induced_logit_shift_is_the_kernel_regression_of_app_d(rng):
    for g, p in ((3, 3), (4, 9), (8, 20)):
        J, V, y = rng.normal(size=(g, p)), rng.normal(size=(2, p)), rng.uniform(0, 1, g)
        got = np.asarray(S.induced_logit_shift(J, V, y))
        # the minimum-norm solution of J δ = y by NumPy's least squares
        delta = np.linalg.lstsq(J, y, rcond=None)[0]
        np.testing.assert_allclose(got, V @ delta, rtol=1e-9, atol=1e-12)
        # a batch pair's own shift is its target (the fit is exact)
        np.testing.assert_allclose(S.induced_logit_shift(J, J, y), y, rtol=1e-9)
    # batched: one instance per leading index
    J, V, y = rng.normal(size=(4, 3, 5)), rng.normal(size=(4, 2, 5)), rng.uniform(0, 1, (4, 3))
    want = [V[i] @ np.linalg.lstsq(J[i], y[i], rcond=None)[0] for i in range(4)]
    np.testing.assert_allclose(S.induced_logit_shift(J, V, y), want, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="shapes"):
        S.induced_logit_shift(J, J[..., :2], y)
