"""The figure maths moved out of ``experiments/`` (phase portraits, regime map) into
``simplexlab.geometry``, checked against independent computations."""

import numpy as np
import pytest

import simplexlab as sl
from simplexlab import geometry as G


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
