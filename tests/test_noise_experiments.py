"""The noise experiments' own statistics (experiments/noise.py): the variance's standard error
against the normal law's closed form, the Bonferroni quantile, and the verdicts of SC App. H on
the bandit; the six claims are registered with the lab's own source."""

import numpy as np
import pytest
from scipy import stats

from simplexlab import lab


@pytest.fixture(scope="module")
def mod():
    return lab.load_experiment_module("noise")


def test_variance_standard_error_against_the_normal_law(mod):
    """For n normal draws of variance σ², Var(s²) = 2σ⁴/(n − 1): the fourth-moment standard
    error agrees within 3 %; on an exponential sample (no normality) it follows
    (μ4 − σ⁴)/n = 8/n instead of the normal law's 2/n."""
    rng = np.random.default_rng(0)
    n = 200_000
    v, se = mod.variance_and_se(rng.normal(0.0, 2.0, (n, 2)))
    np.testing.assert_allclose(v, 4.0, rtol=0.02)
    np.testing.assert_allclose(se, np.sqrt(2 * 16 / (n - 1)), rtol=0.03)
    _, se = mod.variance_and_se(rng.exponential(1.0, n))
    np.testing.assert_allclose(se, np.sqrt(8 / n), rtol=0.05)
    assert mod._z(0.95, 1) == pytest.approx(stats.norm.ppf(0.975))
    assert mod._z(0.95, 8) == pytest.approx(stats.norm.ppf(1 - 0.05 / 16))


def test_the_predicted_flip_half_width_against_monte_carlo_of_the_bandits_reading(mod):
    """The seeds' noise moves the bandit's seed-mean ΔL_y by ε ~ N(0, se²), the same ε at every
    gain (the seeds are shared across gains); its flip, read by linear interpolation on the
    gains, then has a 95 % half-width ``1.96 se / |slope|``: the empirical quantiles of 20,000
    such readings (``finite-group-regimes``' own crossing) agree within 3 %. Outside the gains,
    no width."""
    reg = lab.load_experiment_module("finite_group_regimes")
    gains = np.array([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0])
    slope, root, se = -0.04, 2.7, 0.003
    dly = slope * (gains - root) + 0.01 * (gains - root) ** 2
    half = mod.predicted_half_width(gains, dly, root, se)
    local = (dly[4] - dly[3]) / (gains[4] - gains[3])  # the bracket [2.5, 3.0] holds the root
    assert half == pytest.approx(1.96 * se / abs(local), rel=1e-12)
    rng = np.random.default_rng(1)
    flips = np.array([reg.crossing(gains, dly + e) for e in rng.normal(0, se, 20_000)])
    lo, hi = np.quantile(flips, [0.025, 0.975])
    assert (hi - lo) / 2 == pytest.approx(half, rel=0.03)
    assert mod.predicted_half_width(gains, dly, 4.5, se) is None
    assert mod.predicted_half_width(gains, dly, None, se) is None


def test_the_verdicts_of_sc_app_h(mod):
    H = 100
    assert mod._verdict_theory(29, 100, H) == "accelerates"
    assert mod._verdict_theory(100, 100, H) == "no collapse"
    assert mod._verdict_theory(60, 40, H) == "slows"
    assert mod._verdict_theory(41, 40, H) == "no difference"
    full = np.full(8, float(H))
    assert mod._verdict_bandit(-5.0, -1.0, np.full(8, 20.0), full, H) == "accelerates"
    assert mod._verdict_bandit(0.0, 0.0, full, full, H) == "no collapse"
    assert mod._verdict_bandit(-1.0, 2.0, np.full(8, 20.0), np.full(8, 21.0), H) == \
        "no difference"
    assert mod._verdict_bandit(1.0, 2.0, np.full(8, 22.0), np.full(8, 20.0), H) == "slows"


def test_the_claims_are_the_labs_own_and_name_their_experiments():
    claims = {n: c for n, c in lab.load_claims().items() if c.module.endswith("noise.py")}
    assert set(claims) == {"simplexlab-seed-spread", "simplexlab-mode-extinction",
                           "simplexlab-second-order-mean", "simplexlab-flip-second-order",
                           "simplexlab-optimizer-fields", "simplexlab-optimizer-collapse"}
    exps = lab.load_experiments()
    for name, c in claims.items():
        assert c.paper == "SL" and c.kind == "own", name
        assert c.experiment in exps and exps[c.experiment].source.endswith("noise.py")
        assert c.faults or c.uses_committed_result, name
