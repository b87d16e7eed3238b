"""F-GRPO difficulty (focal) weight (F-GRPO eq. 15-16)."""

from __future__ import annotations

import jax.numpy as jnp

from .._checks import check, check_finite

__all__ = ["focal_weight"]


def focal_weight(mu_hat, gamma):
    r"""Difficulty weight $g(x) = (1 - \hat\mu_{pos}(x))^\gamma$, F-GRPO eq. (15).

    ``mu_hat`` is the empirical success rate of the group, in ``[0, 1]``; ``gamma >= 0``.
    ``gamma = 0`` gives ``g = 1`` (plain GRPO). F-GRPO eq. (16) multiplies the group's advantages
    by this scalar. ``0**0`` is taken as 1 (so ``gamma = 0`` is exactly GRPO at ``mu_hat = 1``).
    """
    mu_hat = check_finite(mu_hat, "mu_hat")
    mu_hat = check(mu_hat, lambda a: (a < 0) | (a > 1), "mu_hat (success rate) must lie in [0, 1]")
    gamma = check_finite(gamma, "gamma")
    gamma = check(gamma, lambda a: a < 0, "gamma must be >= 0")
    mu_hat = jnp.asarray(mu_hat)
    base = 1.0 - mu_hat
    return jnp.where(jnp.asarray(gamma) == 0, jnp.ones_like(base), base**gamma)
