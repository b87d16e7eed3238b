"""The same kinds of input for the surfaces added since the audit (issue 57, "0 crashes, 0
silent ... for the new capabilities"): the second moments (``expected_moments``), the SDE and
linear-noise approximations (``sde_paths``, ``linear_noise``), ``lab.plot_portrait`` and
``lab.bandit_vs_theory``. What was silent, crashed or ended in another library's exception is
refused with a ``ValueError`` naming the value, before anything is built. (The optimizer
limits, ``Diffusion``, ``mode_survival`` and the import gate refused every bad input tried
already: tests/test_noise_*.py, tests/test_audit_trust.py.)"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simplexlab import shaping
from simplexlab import theory as th

PI = np.array([0.3, 0.3, 0.2, 0.2])
RULE = shaping.group_rule("grpo")
S0 = th.make_state(0.4, np.array([0.5, 0.5]), np.array([0.5, 0.5]))
_MOMENTS = {}


def _moments(t):
    return th.expected_moments(RULE, PI, 2, 4, t=t).covariance


@pytest.mark.parametrize("how", ["eager", "jit"])
@settings(max_examples=6, deadline=None)
@given(t=st.sampled_from([math.nan, math.inf, -math.inf]))
def test_expected_moments_refuses_a_time_that_is_not_finite(how, t):
    """``t = nan`` gave GRPO's moments (it does not read ``t``) eagerly and traced."""
    if how == "jit":
        f = _MOMENTS.setdefault("jit", eqx.filter_jit(_moments))
        call = lambda: jax.block_until_ready(f(jnp.asarray(t)))  # noqa: E731
    else:
        call = lambda: _moments(t)  # noqa: E731
    with pytest.raises((ValueError, eqx.EquinoxRuntimeError),
                       match=r"expected_moments: t \(the mean-field time\) must be finite"):
        call()


def test_expected_moments_refuses_a_traced_parameter_outside_its_domain():
    def cov(g):
        rule = shaping.group_rule("f_grpo", params={"focal_gamma": g})
        return th.expected_moments(rule, PI, 2, 4).covariance

    with pytest.raises(eqx.EquinoxRuntimeError, match="focal_gamma must be finite and >= 0"):
        jax.block_until_ready(eqx.filter_jit(cov)(jnp.asarray(-1.0)))


def test_expected_moments_at_a_huge_group_size_is_refused_before_allocating():
    """``G = 10^9`` fell back to Monte Carlo and XLA failed allocating 327 TB."""
    with pytest.raises(ValueError, match=r"expected_moments: path='montecarlo' at G = "
                                         r"1000000000 .* more than half of this machine's memory"
                                         r".*lower num_samples"):
        th.expected_moments(RULE, PI, 2, 10**9)


DIFFUSION = th.Diffusion(shaping.meanfield_system("grpo", group_size=4), eta=0.05)


@pytest.mark.parametrize("kw, what", [
    ({"dt": 1e-300}, r"dt = 1e-300 takes t1 / dt = 1e\+300 steps per path, more than "
                     r"10,000,000; raise dt"),
    ({"dt": True}, "dt must be a finite number in"),
    ({"key": 3}, r"key must be one JAX PRNG key \(jax.random.key\(seed\)\); got 3"),
    ({"key": jax.random.split(jax.random.key(0), 2)}, "key must be one JAX PRNG key"),
    ({"num_paths": 10**12}, "num_paths = 1,000,000,000,000 paths .* more than half of this "
                            "machine's memory"),
    ({"n_save": 10**11}, "num_paths = 1 paths with n_save = 100,000,000,000 save points .* more "
                         "than half"),
])
def test_sde_paths_refuses_what_it_cannot_do(kw, what):
    """A tiny ``dt`` ended in a run-time error about the step covariance, a bad ``key`` in
    JAX's ``TypeError``, a huge ``num_paths`` or ``n_save`` in XLA's out-of-memory error."""
    with pytest.raises(ValueError, match=rf"sde_paths: {what}"):
        th.sde_paths(DIFFUSION, S0, t1=1.0, **{"num_paths": 2, **kw})


@pytest.mark.parametrize("kw, what", [
    ({"rtol": -1.0}, "rtol must be a finite number >= 0; got -1.0"),
    ({"atol": -1.0}, "atol must be a finite number >= 0; got -1.0"),
    ({"rtol": math.nan}, "rtol must be a finite number >= 0; got nan"),
    ({"rtol": "1e-7"}, "rtol must be a finite number >= 0; got '1e-7'"),
    ({"rtol": 0.0, "atol": 0.0}, "rtol and atol cannot both be 0"),
])
def test_linear_noise_refuses_bad_tolerances(kw, what):
    """``rtol = -1`` ran (a covariance from a step-size controller fed a negative tolerance);
    ``rtol = nan`` ended in a misleading run-time error about the step covariance; a string in
    a ``TypeError``."""
    with pytest.raises(ValueError, match=rf"linear_noise: {what}"):
        th.linear_noise(DIFFUSION, S0, t1=1.0, **kw)


@pytest.mark.parametrize("kw, what", [
    ({"n": 0}, r"n \(grid points per side"), ({"n": 2.5}, r"n \(grid points"),
    ({"n": 10**6}, r"n .* must be an integer in \[2, 400\]"),
    ({"fixed_points": "yes"}, "fixed_points must be True or False"),
    ({"p": "0.5"}, r"p \(the frozen bad mass\) must be in \(0, 1\); got '0.5'"),
])
def test_plot_portrait_refuses_a_setting_it_would_misuse(kw, what):
    """``n = 0`` drew an empty plot, ``n = 10^6`` ended in NumPy's ``MemoryError`` (7 TiB),
    ``n = 2.5`` in a ``TypeError``, ``fixed_points="yes"`` was taken as True, ``p = "0.5"`` in
    a format error."""
    from simplexlab.lab import plot_portrait

    with pytest.raises(ValueError, match=rf"plot_portrait: {what}"):
        plot_portrait("grpo", **kw)


@pytest.mark.parametrize("seed", [2**70, -2**64, math.nan, 1.5, "0"])
def test_bandit_vs_theory_refuses_a_seed_jax_cannot_take(seed):
    """``seed = 2**70`` ended in an ``OverflowError``, ``nan`` in a ``TypeError`` naming a
    tracer."""
    from simplexlab.lab import bandit_vs_theory
    from simplexlab.sim import Bandit

    with pytest.raises(ValueError, match=r"bandit_vs_theory: seed must be an integer in"):
        bandit_vs_theory(Bandit(), seed=seed, num_steps=2, stride=2, seeds=2)
