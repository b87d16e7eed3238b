"""F-GRPO Lemma 3.1 (activity, tail-miss), the maximising group size N*, and Fig. 5 statements.

References are independent of the code under test: exact rationals (``fractions``), 80-digit
``mpmath``, Monte Carlo over simulated groups (4-sigma binomial bounds), a naive NumPy
derivative solved with ``scipy.optimize.brentq``, and brute-force integer argmax.
"""

from fractions import Fraction

import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest
from scipy.optimize import brentq

from simplexlab import theory as S

# ------------------------------------------------------------------------------------------
# exact arithmetic
# ------------------------------------------------------------------------------------------


def _mp_log_tail_miss(mu, tau, n):
    with mp.workdps(80):
        mu, tau = mp.mpf(mu), mp.mpf(tau)  # exact: float -> mpf is exact
        n = mp.mpf(n)
        val = (1 - tau) ** n - (mu - tau) ** n - (1 - mu) ** n
        return -np.inf if val <= 0 else float(mp.log(val))


HARD_MU = [0.64, 0.5, 0.2, 0.8, 1 - 1e-9, 1e-9, 0.999999, 1e-4]
HARD_RHO = [0.0, 1e-8, 1e-3, 0.5, 1 - 1e-9, 1.0]
HARD_N = [1, 1.000001, 1.5, 2, 3, 7, 64, 1000, 2**17, 2**20]


def test_tail_miss_matches_mpmath_at_hard_points():
    pts = [(m, r * m, n) for m in HARD_MU for r in HARD_RHO for n in HARD_N]
    pts += [(m, 1e-8, n) for m in HARD_MU if m > 1e-8 for n in HARD_N]  # tau = 1e-8 absolute
    mu, tau, n = (np.array(c) for c in zip(*pts, strict=True))
    got = np.asarray(S.log_tail_miss(mu, tau, n, continuous=True))  # HARD_N has N = 1.5
    ref = np.array([_mp_log_tail_miss(*p) for p in pts])
    zero = np.isneginf(ref)
    assert np.array_equal(np.isneginf(got), zero)
    # relative accuracy of the probability ~ absolute accuracy of the log (up to the float64
    # spacing of the log itself where |log| is huge, e.g. -7e5 at N = 2^20)
    err = np.abs(got[~zero] - ref[~zero]) / np.maximum(1.0, np.abs(ref[~zero]))
    assert err.max() < 1e-12


def test_tail_miss_and_activity_match_exact_rationals(rng):
    mus = rng.uniform(0, 1, 30)
    mus[:5] = [1e-12, 1 - 2**-40, 0.5, 0.25, 0.999]
    ns = np.arange(1, 41)
    for mu in mus:
        tau = float(mu * rng.choice([1e-9, 1e-4, 0.3, 0.9]))
        fm, ft = Fraction(float(mu)), Fraction(tau)
        got_b = np.asarray(S.tail_miss(mu, tau, ns.astype(float)))
        got_a = np.asarray(S.activity(mu, ns.astype(float)))
        for i, n in enumerate(ns.tolist()):
            b = (1 - ft) ** n - (fm - ft) ** n - (1 - fm) ** n
            a = 1 - fm**n - (1 - fm) ** n
            for got, ex in ((got_b[i], b), (got_a[i], a)):
                if ex == 0:
                    assert got == 0
                else:
                    assert abs(Fraction(float(got)) / ex - 1) < Fraction(1, 10**12)


def test_log_space_survives_underflow():
    # (1 - 1e-3)^(2^20) = e^-1049 underflows float64; the log stays exact.
    got = float(S.log_tail_miss(0.5, 1e-3, 2.0**20))
    assert np.isfinite(got)
    assert abs(got - _mp_log_tail_miss(0.5, 1e-3, 2**20)) < 1e-12 * abs(got)
    assert float(S.tail_miss(0.5, 1e-3, 2.0**20)) == 0.0


def test_special_values():
    assert float(S.tail_miss(0.3, 0.1, 1.0)) == 0.0  # a single rollout is never active
    assert float(S.activity(0.0, 5.0)) == 0.0
    assert float(S.activity(1.0, 5.0)) == 0.0
    assert float(S.tail_miss(0.3, 0.3, 5.0)) == 0.0  # all correct mass is rare
    np.testing.assert_allclose(S.tail_miss(0.3, 0.0, 5.0), 1 - 0.3**5 - 0.7**5, rtol=1e-14)
    np.testing.assert_allclose(S.tail_miss(0.6, 0.2, 2.0), 2 * 0.4 * 0.4, rtol=1e-14)


def test_broadcasts_over_grids_and_jits():
    mu = jnp.array([0.2, 0.5, 0.8])[:, None, None]
    rho = jnp.array([1e-3, 0.1])[None, :, None]
    n = jnp.array([1.0, 2.0, 64.0, 2.0**20])[None, None, :]
    out = jax.jit(S.log_tail_miss)(mu, rho * mu, n)
    assert out.shape == (3, 2, 4)
    np.testing.assert_allclose(out, S.log_tail_miss(mu, rho * mu, n), rtol=1e-15)
    out_v = jax.vmap(S.log_activity, in_axes=(0, None))(jnp.array([0.1, 0.9]), 3.0)
    np.testing.assert_allclose(jnp.exp(out_v), [1 - 0.1**3 - 0.9**3] * 2, rtol=1e-14)


# ------------------------------------------------------------------------------------------
# Monte Carlo (10^6 groups per point, 4-sigma)
# ------------------------------------------------------------------------------------------

MC_GROUPS = 1_000_000


@pytest.mark.parametrize("mu", [0.8, 0.5, 0.2])
def test_lemma_3_1_agrees_with_monte_carlo(mu, rng):
    for rho in (0.5, 0.01):
        tau = rho * mu
        for n in (1, 2, 5, 32, 1024, 2**17):
            p = float(S.tail_miss(mu, tau, float(n)))
            est = S.mc_tail_miss(mu, tau, n, MC_GROUPS, rng)
            sigma = np.sqrt(p * (1 - p) / MC_GROUPS)
            assert abs(est.mean - p) <= 4 * sigma + 1e-12, (mu, tau, n, est.mean, p)
    for n in (1, 2, 5, 32, 1024, 2**17):
        p = float(S.activity(mu, float(n)))
        est = S.mc_activity(mu, n, MC_GROUPS, rng)
        assert abs(est.mean - p) <= 4 * np.sqrt(p * (1 - p) / MC_GROUPS) + 1e-12


def test_fig5_point_agrees_with_monte_carlo(rng):
    for n in (2, 20, 2**12, 2**15, 2**17):
        p = float(S.tail_miss(0.64, 6.3e-5, float(n)))
        est = S.mc_tail_miss(0.64, 6.3e-5, n, MC_GROUPS, rng)
        assert abs(est.mean - p) <= 4 * np.sqrt(p * (1 - p) / MC_GROUPS)
        assert est.contains(p) or abs(est.mean - p) <= 4 * np.sqrt(p * (1 - p) / MC_GROUPS)


# ------------------------------------------------------------------------------------------
# F-GRPO App. J / Fig. 5 statements at mu = 0.64, tau = 6.3e-5
# ------------------------------------------------------------------------------------------


def test_fig5_statements():
    mu, tau = 0.64, 6.3e-5
    n = 2.0 ** np.arange(1, 18)
    p = np.asarray(S.tail_miss(mu, tau, n))
    # "rises steeply for small N": from below 1/2 at N = 2 to above 0.99 by N = 16
    assert p[0] < 0.5 and float(S.tail_miss(mu, tau, 16.0)) > 0.99
    # "plateaus near 1 for intermediate values": >= 0.9 for all N in [2^4, 2^10]
    assert np.all(p[3:10] > 0.9)
    # "only declines toward zero for N >~ 2^15"; "At N = 2^17, Pr(B_tau) < 1e-3"
    assert p[14] < 0.2 and p[16] < 1e-3 and p[15] > 1e-3
    # independent check of the last statement: (1 - tau)^N alone is already < 1e-3
    assert (1 - Fraction(tau)) ** 131072 < Fraction(1, 1000)


# ------------------------------------------------------------------------------------------
# N*
# ------------------------------------------------------------------------------------------


def _naive_dlog(n, mu, tau):
    a, b, c = 1 - tau, mu - tau, 1 - mu
    return a**n * np.log(a) - b**n * np.log(b) - c**n * np.log(c)


@pytest.mark.parametrize("mu", [0.05, 0.2, 0.5, 0.64, 0.8, 0.95])
@pytest.mark.parametrize("rho", [1e-7, 1e-4, 1e-2, 0.3, 0.9])
def test_n_star_matches_independent_root_and_brute_force(mu, rho):
    tau = rho * mu
    peak = S.tail_miss_peak(mu, tau)
    hi = 30.0 / tau + 100.0  # (1-tau)^hi is still representable, and hi >> N*
    ref = brentq(_naive_dlog, 1.0 + 1e-9, hi, args=(mu, tau), xtol=1e-13, rtol=1e-13)
    np.testing.assert_allclose(float(peak.n_star), ref, rtol=1e-8)
    # brute-force integer argmax with the naive formula, over a window far wider than N*
    ns = np.arange(1, int(10 * ref) + 50)
    f = (1 - tau) ** ns - (mu - tau) ** ns - (1 - mu) ** ns
    assert int(peak.n_star_int) == int(ns[np.argmax(f)])
    np.testing.assert_allclose(float(peak.peak_int), f.max(), rtol=1e-12)


def _dense_grid():
    mu = np.linspace(0.02, 0.98, 33)
    rho = np.logspace(-8, np.log10(0.95), 41)[::-1]  # decreasing rho
    return mu[:, None], rho[None, :]


def test_peak_moves_right_and_up_as_rho_decreases():
    """F-GRPO Fig. 2 caption: smaller rho shifts the peak rightward and upward."""
    mu, rho = _dense_grid()
    peak = S.tail_miss_peak(mu, rho * mu)
    n_star, p_star = np.asarray(peak.n_star), np.asarray(peak.peak)
    assert np.all(np.diff(n_star, axis=1) > 0)
    assert np.all(np.diff(p_star, axis=1) > 0)
    assert np.all(np.diff(np.asarray(peak.n_star_int), axis=1) >= 0)


def test_peak_is_unique_on_dense_grid():
    """log Pr(B_tau)(N) has a single local maximum: increments on a fine log-N grid change sign
    once (increments below 1e-12, where the curve is flat at the peak, carry no sign)."""
    mu, rho = _dense_grid()
    tau = rho * mu
    n_star = np.asarray(S.tail_miss_peak(mu, tau).n_star)
    t = np.linspace(0.0, 1.0, 400)
    # log-N grid from 1.0001 to 1000 N* (covers rise, peak and the coverage-driven decay)
    log_n = np.log(1.0001) + t[None, None, :] * (np.log(1000 * n_star)[..., None] - np.log(1.0001))
    f = np.asarray(S.log_tail_miss(mu[..., None], tau[..., None], np.exp(log_n),
                                   continuous=True))
    d = np.diff(f, axis=-1)
    sign = np.where(np.abs(d) < 1e-12, 0, np.sign(d))
    for s in sign.reshape(-1, sign.shape[-1]):
        nz = s[s != 0]
        changes = np.count_nonzero(np.diff(nz) != 0)
        assert changes == 1 and nz[0] > 0 and nz[-1] < 0
    # and the continuous maximiser sits at the top of each sampled curve
    fmax = f.max(axis=-1)
    f_star = np.asarray(S.log_tail_miss(mu, tau, n_star, continuous=True))
    assert np.all(f_star >= fmax - 1e-12)


def test_peak_under_jit_and_vmap():
    f = jax.jit(jax.vmap(lambda m, t: S.tail_miss_peak(m, t).n_star))
    out = f(jnp.array([0.64, 0.5]), jnp.array([6.3e-5, 0.05]))
    np.testing.assert_allclose(out[0], brentq(_naive_dlog, 1.001, 1e6, args=(0.64, 6.3e-5)),
                               rtol=1e-8)


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, match",
    [
        ((0.5, 0.6, 4.0), "tau .* <= mu"),
        ((-0.1, 0.0, 4.0), r"mu .* \[0, 1\]"),
        ((1.1, 0.5, 4.0), r"mu .* \[0, 1\]"),
        ((0.5, 0.1, 0.0), "group_size .* >= 1"),
        ((0.5, 0.1, 0.5), "group_size .* >= 1"),
        ((0.5, -1e-3, 4.0), "tau .* >= 0"),
        ((np.nan, 0.1, 4.0), "finite"),
    ],
)
def test_bad_input_raises(args, match):
    with pytest.raises(ValueError, match=match):
        S.tail_miss(*args)
    with pytest.raises(Exception, match=match.split(" ")[0]):
        jax.jit(S.log_tail_miss)(*args).block_until_ready()


def test_bad_input_activity_and_peak():
    with pytest.raises(ValueError, match="1.5"):
        S.activity(1.5, 3.0)
    with pytest.raises(ValueError, match="group_size"):
        S.activity(0.5, 0.0)
    with pytest.raises(ValueError, match="tau"):
        S.tail_miss_peak(0.5, 0.0)
    with pytest.raises(ValueError, match="tau"):
        S.tail_miss_peak(0.5, 0.5)
    with pytest.raises(ValueError, match="mu"):
        S.tail_miss_peak(1.0, 0.5)
    with pytest.raises(ValueError, match="integer"):
        S.mc_tail_miss(0.5, 0.1, 2.5, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="tau"):
        S.mc_tail_miss(0.5, 0.6, 4, 10, np.random.default_rng(0))
