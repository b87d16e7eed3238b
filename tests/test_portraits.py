"""The figure maths moved out of ``experiments/`` (phase portraits, regime map) into
``simplexlab.theory``, checked against independent computations."""

import numpy as np
import pytest

import simplexlab as sl
from simplexlab import theory as G


def test_point_with_concentration_has_that_concentration():
    L = np.linspace(1 / 5, 1.0, 9)
    x = G.point_with_concentration(L, 5)
    np.testing.assert_allclose(x.sum(-1), 1.0, atol=1e-14)
    assert np.all(x >= 0)
    np.testing.assert_allclose((x ** 2).sum(-1), L, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="L must be in"):
        G.point_with_concentration(0.1, 5)
    with pytest.raises(ValueError, match="n must be"):
        G.point_with_concentration(0.5, 1)


def test_neutralized_coefficient_is_one_minus_gain_times_attenuation():
    """eq. (57)/(63): dy/dτ = (1 − λ̃ ρ) V(y), ρ = (L_z + 1/K)/(L_y + L_z) (§D.6)."""
    rng = np.random.default_rng(3)
    K = 4
    gain = rng.uniform(0, 3, 20)
    L_y = rng.uniform(1 / K + 1e-3, 1.0, 20)
    L_z = rng.uniform(1 / 8, 1.0, 20)
    a = G.neutralized_inner_coefficient(K, gain, L_y, L_z, M=8)
    rho = (L_z + 1 / K) / (L_y + L_z)
    np.testing.assert_allclose(a, 1 - gain * rho, rtol=1e-10, atol=1e-12)


def test_within_good_field_is_the_inner_field():
    """Under schedule A with λ0, the inner-time within-good field is (1 − λ0) V(y) (eq. 51)."""
    f, batched = G.within_good_field(sl.GoodBonus(sl.ScheduleA(2.0)), 0.4, np.array([0.5, 0.5]))
    Y = np.array([[[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]])
    out = batched(Y)
    V = Y * Y - (Y ** 2).sum(-1, keepdims=True) * Y
    np.testing.assert_allclose(out, (1 - 2.0) * V, rtol=1e-10, atol=1e-13)
    assert out.shape == Y.shape


def test_bad_mass_envelopes_bad_input():
    lo, hi = G.bad_mass_envelopes([0.0, 1.0], 0.8, 3, 2)
    np.testing.assert_allclose(lo[0], 0.8) and np.testing.assert_allclose(hi[0], 0.8)
    assert lo[1] < hi[1] < 0.8
    for kw, match in ((dict(p0=1.0), "p0"), (dict(K=0), "K"), (dict(tau=-1.0), "tau")):
        args = {"tau": [0.0, 1.0], "p0": 0.5, "K": 3, "M": 2, **kw}
        with pytest.raises(ValueError, match=match):
            G.bad_mass_envelopes(**args)


def test_hitting_time_bracket_ends_are_the_envelopes_hitting_times():
    """Corollary A.10: the bracket's ends are where the two envelopes of p(τ) reach p⋆ (found by
    a root search on :func:`bad_mass_envelopes`, not by inverting the formula), and a GRPO
    trajectory of the ODE dL/dτ = −(L_y + L_z) (scipy, the collision flows for y and z) hits
    p⋆ inside it."""
    from scipy.integrate import solve_ivp
    from scipy.optimize import brentq

    K, M = 3, 2
    p0 = np.array([0.9, 0.6, 0.3])
    p_star = np.array([0.5, 0.06, 0.001])
    lo, hi = G.hitting_time_bracket(p0, p_star, K, M)
    for i in range(p0.size):
        ends = [brentq(lambda t, e=e, i=i: G.bad_mass_envelopes(t, p0[i], K, M)[e] - p_star[i],
                       0, 100, xtol=1e-14) for e in (0, 1)]
        np.testing.assert_allclose((lo[i], hi[i]), ends, rtol=1e-10)

    y0, z0 = np.array([0.5, 0.3, 0.2]), np.array([0.7, 0.3])

    def rhs(t, u):
        y, z = u[:K], u[K:K + M]
        Ly, Lz = y @ y, z @ z
        return np.r_[y * y - Ly * y, -(z * z - Lz * z), -(Ly + Lz)]

    target = np.log(p_star[1] / (1 - p_star[1]))
    hit = lambda t, u: u[-1] - target  # noqa: E731
    hit.terminal = True
    sol = solve_ivp(rhs, (0, 100), np.r_[y0, z0, np.log(p0[1] / (1 - p0[1]))], events=hit,
                    rtol=1e-10, atol=1e-12)
    assert lo[1] < sol.t_events[0][0] < hi[1]
    np.testing.assert_allclose(G.hitting_time_bracket(0.5, 0.5, K, M), (0.0, 0.0))
    for kw, match in ((dict(p_star=0.9), "p_star must be <= p0"), (dict(p0=1.0), "p0"),
                      (dict(M=0), "M")):
        with pytest.raises(ValueError, match=match):
            G.hitting_time_bracket(**{"p0": 0.8, "p_star": 0.1, "K": 3, "M": 2, **kw})
