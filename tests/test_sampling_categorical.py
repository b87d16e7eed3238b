"""F-GRPO categorical-policy results: eq. (7), mass balance (8), identity (13), Lemma B.1,
Cor. B.2, and the Fig. 3 advantage magnitudes.

References: the first-order softmax change computed with ``jax.jvp`` from an independently coded
eq. (7) update; finite differences of the actual softmax; exact enumeration of all sample
sequences with ``fractions``; Monte Carlo over simulated groups (4-sigma); z-scores of explicit
reward vectors.
"""

import itertools
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import simplex_points

from simplexlab import theory as S


def _random_instance(rng, a):
    z = rng.normal(scale=rng.choice([0.5, 2.0, 4.0]), size=a)
    correct = rng.random(a) < rng.uniform(0.2, 0.8)
    sampled = rng.random(a) < rng.uniform(0.1, 0.9)
    return z, correct, sampled


def _eq7_reference(p, correct, sampled, n, eta, rc, rw):
    """Eq. (7) coded independently: dz_i = eta/N p_i (R_i - S_R), R_i = 0 for unsampled."""
    r = np.where(sampled, np.where(correct, rc, rw), 0.0)
    s_r = rc * p[correct & sampled].sum() + rw * p[~correct & sampled].sum()
    return eta / n * p * (r - s_r)


def test_identities_8_and_13_equal_first_order_change(rng):
    worst = 0.0
    for i in range(120):
        a = (3, 17, 40)[i % 3]  # few shapes: one compilation each
        z, correct, sampled = _random_instance(rng, a)
        n = float(rng.integers(1, 64))
        eta = float(rng.uniform(0.01, 3.0))
        rc, rw = float(rng.uniform(0.1, 2.0)), float(rng.uniform(-2.0, 0.0))
        z = jnp.asarray(z)
        p = np.asarray(jax.nn.softmax(z))
        dz = _eq7_reference(p, correct, sampled, n, eta, rc, rw)
        _, dp = jax.jvp(jax.nn.softmax, (z,), (jnp.asarray(dz),))
        dp = np.asarray(dp)
        dq_pos_ref = dp[correct].sum()
        dq_u_ref = dp[correct & ~sampled].sum()
        args = (p, jnp.asarray(correct), jnp.asarray(sampled), n, eta, rc, rw)
        np.testing.assert_allclose(S.logit_update(*args), dz, rtol=0, atol=1e-15)
        e8 = abs(float(S.mass_balance(*args)) - dq_pos_ref)
        e13 = abs(float(S.unsampled_correct_change(*args)) - dq_u_ref)
        worst = max(worst, e8, e13)
    assert worst <= 1e-12


def test_identities_match_finite_difference_of_softmax(rng):
    """The identities are the O(eta) term of the true one-step change of the softmax masses."""
    z, correct, sampled = _random_instance(rng, 30)
    p = np.asarray(jax.nn.softmax(jnp.asarray(z)))
    args = (p, jnp.asarray(correct), jnp.asarray(sampled), 8.0)
    errs = []
    for eta in (1e-2, 1e-3):
        znew = z + _eq7_reference(p, correct, sampled, 8.0, eta, 1.0, -1.0)
        pnew = np.asarray(jax.nn.softmax(jnp.asarray(znew)))
        d_pos = pnew[correct].sum() - p[correct].sum()
        d_u = pnew[correct & ~sampled].sum() - p[correct & ~sampled].sum()
        errs.append((abs(d_pos - float(S.mass_balance(*args, eta))),
                     abs(d_u - float(S.unsampled_correct_change(*args, eta)))))
    # second-order remainder: shrinks ~100x when eta shrinks 10x
    assert errs[1][0] < errs[0][0] / 30 and errs[1][1] < errs[0][1] / 30


def test_batch_statistics_partition():
    p = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    c = jnp.array([True, True, False, False, True])
    s = jnp.array([True, False, True, False, False])
    b = S.batch_statistics(p, c, s, 2.0, -0.5)
    np.testing.assert_allclose([b.q_pos, b.p_pos, b.p_neg, b.a2, b.b2, b.u_pos2, b.u_neg2,
                                b.q_u_pos, b.s_r],
                               [0.55, 0.1, 0.3, 0.01, 0.09, 0.04 + 0.0625, 0.0225, 0.45,
                                2 * 0.1 - 0.5 * 0.3], rtol=1e-14)


# ------------------------------------------------------------------------------------------
# Lemma B.1 / Cor. B.2
# ------------------------------------------------------------------------------------------


def _enumerate_conditional(pi, correct, n):
    """Exact E[P_pos | X=k], E[P_neg | X=k] by enumerating all A^n sample sequences."""
    pi = [Fraction(x) for x in pi]
    a = len(pi)
    num_pos = [Fraction(0)] * (n + 1)
    num_neg = [Fraction(0)] * (n + 1)
    den = [Fraction(0)] * (n + 1)
    for seq in itertools.product(range(a), repeat=n):
        pr = Fraction(1)
        for i in seq:
            pr *= pi[i]
        distinct = set(seq)
        k = sum(1 for i in seq if correct[i])
        den[k] += pr
        num_pos[k] += pr * sum(pi[i] for i in distinct if correct[i])
        num_neg[k] += pr * sum(pi[i] for i in distinct if not correct[i])
    return ([x / d if d else None for x, d in zip(num_pos, den, strict=True)],
            [x / d if d else None for x, d in zip(num_neg, den, strict=True)])


@pytest.mark.parametrize("n", [1, 3, 5])
def test_lemma_b1_equals_exact_enumeration(n):
    pi = np.array([0.375, 0.125, 0.0625, 0.25, 0.1875])  # dyadic: exact in float and Fraction
    correct = np.array([True, True, True, False, False])
    ref_pos, ref_neg = _enumerate_conditional(pi, correct, n)
    e_pos, e_neg = S.conditional_sampled_masses(pi, jnp.asarray(correct), float(n),
                                                jnp.arange(n + 1.0))
    for k in range(n + 1):
        assert abs(float(e_pos[k]) - float(ref_pos[k])) < 1e-15
        assert abs(float(e_neg[k]) - float(ref_neg[k])) < 1e-15


def test_lemma_b1_and_cor_b2_match_monte_carlo(rng):
    pi = np.array([0.30, 0.05, 0.02, 0.01, 0.40, 0.15, 0.05, 0.02])
    correct = np.array([True, True, True, True, False, False, False, False])
    n = 8
    mc = S.mc_conditional_sampled_masses(pi, correct, n, 1_000_000, rng, r_correct=1.0,
                                         r_wrong=-0.5)
    k = jnp.arange(n + 1.0)
    e_pos, e_neg = S.conditional_sampled_masses(pi, jnp.asarray(correct), float(n), k)
    e_s = S.conditional_baseline(pi, jnp.asarray(correct), float(n), k, 1.0, -0.5)
    ok = mc["count"] >= 1000
    assert ok.sum() >= 6
    for est, exact in ((mc["p_pos"], e_pos), (mc["p_neg"], e_neg), (mc["s_r"], e_s)):
        exact = np.asarray(exact)
        assert np.all(np.abs(est.mean[ok] - exact[ok]) <= 4 * est.stderr[ok] + 1e-15)


@given(simplex_points(n=6), st.sampled_from([1, 2, 7, 30]), st.data())
def test_cor_b2_monotone(pi, n, data):
    """Cor. B.2 with R_c > 0 >= R_w (the proof's "R_c > 0"; see the counterexample below)."""
    correct = np.array(data.draw(st.lists(st.booleans(), min_size=6, max_size=6)))
    rw = data.draw(st.floats(-2.0, 0.0))
    rc = data.draw(st.floats(1e-3, 3.0))
    k = jnp.arange(n + 1.0)
    e_pos, e_neg = S.conditional_sampled_masses(pi, jnp.asarray(correct), float(n), k)
    e_s = np.asarray(S.conditional_baseline(pi, jnp.asarray(correct), float(n), k, rc, rw))
    assert np.all(np.diff(np.asarray(e_pos)) >= -1e-15)
    assert np.all(np.diff(np.asarray(e_neg)) <= 1e-15)
    assert np.all(np.diff(e_s) >= -1e-14)


def test_cor_b2_needs_nonnegative_r_correct():
    """Cor. B.2 is stated for R_c > R_w, R_w <= 0, but its proof uses R_c > 0: with R_c < 0 the
    conditional baseline can decrease in k (counterexample found by hypothesis)."""
    pi = np.array([0.282679045, 3.01481247e-05, 0.717290807])
    pi = pi / pi.sum()
    correct = jnp.array([False, False, True])
    e = np.asarray(S.conditional_baseline(pi, correct, 1.0, jnp.arange(2.0), -1.0, -2.0))
    # exact: E[S_R|X=0] = R_w sum_neg pi^2/(1-mu); E[S_R|X=1] = R_c mu
    mu = pi[2]
    np.testing.assert_allclose(e, [-2.0 * (pi[0] ** 2 + pi[1] ** 2) / (1 - mu), -1.0 * mu],
                               rtol=1e-12)
    assert e[1] < e[0]


def test_categorical_bad_input():
    pi = np.array([0.5, 0.3, 0.2])
    c = jnp.array([True, False, False])
    with pytest.raises(ValueError, match="k .* <= group_size"):
        S.conditional_sampled_masses(pi, c, 3.0, 4.0)
    with pytest.raises(ValueError, match="k .* >= 0"):
        S.conditional_sampled_masses(pi, c, 3.0, -1.0)
    with pytest.raises(ValueError, match="simplex"):
        S.conditional_sampled_masses(np.array([0.5, 0.3, 0.3]), c, 3.0, 1.0)
    with pytest.raises(ValueError, match="boolean"):
        S.mass_balance(pi, np.array([1, 0, 0]), c, 3.0)
    with pytest.raises(ValueError, match="group_size .* >= 1"):
        S.mass_balance(pi, c, c, 0.0)


# ------------------------------------------------------------------------------------------
# Fig. 3
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("m, n", [(1, 10), (1, 2), (7, 8), (3, 1000), (999, 1000)])
def test_grpo_magnitude_is_population_z_score(m, n):
    r = np.r_[np.ones(m), np.zeros(n - m)] * 3.0 - 1.0  # R_c = 2, R_w = -1: affine invariant
    zs = (r - r.mean()) / r.std()
    a_c, a_w = S.grpo_advantage_magnitude(m / n)
    np.testing.assert_allclose(a_c, abs(zs[0]), rtol=1e-12)
    np.testing.assert_allclose(a_w, abs(zs[-1]), rtol=1e-12)
    for gamma in (0.0, 0.5, 1.0, 2.0):
        f_c, f_w = S.focal_scaled_advantage(m / n, gamma)
        np.testing.assert_allclose(f_c, (1 - m / n) ** gamma * abs(zs[0]), rtol=1e-12)
        np.testing.assert_allclose(f_w, (1 - m / n) ** gamma * abs(zs[-1]), rtol=1e-12)


def test_grpo_magnitude_is_large_group_limit_of_monte_carlo(rng):
    a_c, a_w = S.grpo_advantage_magnitude(0.3)
    est_c, est_w = S.mc_grpo_advantage_magnitude(0.3, 4096, 20_000, rng)
    # finite-N bias is O(1/N); allow it on top of the 4-sigma band
    assert abs(est_c.mean - float(a_c)) <= 4 * est_c.stderr + 5e-3
    assert abs(est_w.mean - float(a_w)) <= 4 * est_w.stderr + 5e-3


def test_fig3_bad_input():
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        S.grpo_advantage_magnitude(1.0)
    with pytest.raises(ValueError, match="gamma"):
        S.focal_scaled_advantage(0.5, -1.0)
