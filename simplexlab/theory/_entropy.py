r"""The entropy bonus: ``c(step) · H(π)`` added to the objective that a training step ascends.

TRL's ``GRPOConfig(entropy_coef=c)`` subtracts ``c · H`` from the loss, ``H`` the mean per-token
entropy of the policy (not of the sampled tokens); for the bandit's policy over modes that is
``H(π) = −Σ_c π_c log π_c``, whose gradient in the logits is ``∂H/∂θ_c = −π_c (log π_c + H)``
(:func:`entropy_gradient`). It is exact, not sampled: one SGD step adds ``η c ∇_θ H`` to the
bandit's update, and the finite-group field adds ``c ∇_θ H`` to ``E[Δθ]/η`` (no finite-G
correction). The coefficient is constant or decays linearly over training steps
(:class:`EntropyBonus`), the question practitioners ask of it ("should the entropy coefficient
decay?") being one the lab can answer with the field and the bandit side by side.
"""

from __future__ import annotations

import math
from typing import Any

import equinox as eqx
import jax.numpy as jnp

from .._checks import as_int, check_parameter

__all__ = ["EntropyBonus", "entropy_gradient"]


def entropy_gradient(probs):
    r"""``∇_θ H(softmax θ) = −π (log π + H)`` along the last axis, ``π = probs``,
    ``H = −Σ π log π`` (a mode of mass 0 contributes 0: ``π log π → 0``)."""
    logp = jnp.where(probs > 0, jnp.log(jnp.where(probs > 0, probs, 1.0)), 0.0)
    H = -jnp.sum(probs * logp, -1, keepdims=True)
    return -probs * (logp + H)


class EntropyBonus(eqx.Module):
    r"""An entropy bonus with coefficient ``coef`` (TRL's ``entropy_coef``), constant, or, with
    ``final`` and ``decay_steps > 0``, decaying linearly from ``coef`` to ``final`` over
    ``decay_steps`` training steps and ``final`` after. ``step_time``: the mean-field time of
    one step (``η`` under the time map ``t = step · η``), for the finite-group field; set by
    the systems that take a bonus. A negative coefficient is an entropy penalty."""

    coef: Any = eqx.field(default=0.0, kw_only=True)
    final: Any = eqx.field(default=None, kw_only=True)
    decay_steps: int = eqx.field(default=0, kw_only=True, static=True)
    step_time: float = eqx.field(default=1.0, kw_only=True, static=True)

    def __check_init__(self):
        check_parameter(self.coef, "EntropyBonus.coef")
        if self.final is not None:
            check_parameter(self.final, "EntropyBonus.final")
        as_int(self.decay_steps, "EntropyBonus.decay_steps", lower=0)
        if (self.final is None) != (self.decay_steps == 0):
            raise ValueError("EntropyBonus: a decay needs both final and decay_steps > 0 (a "
                             f"constant bonus neither); got final={self.final!r}, "
                             f"decay_steps={self.decay_steps!r}")
        if not (isinstance(self.step_time, int | float) and math.isfinite(self.step_time)
                and self.step_time > 0):
            raise ValueError(f"EntropyBonus.step_time must be a finite number > 0; got "
                             f"{self.step_time!r}")

    def coefficient(self, step):
        """The coefficient at training step ``step`` (may be fractional or traced)."""
        if self.final is None:
            return jnp.asarray(self.coef)
        step = jnp.asarray(step)
        if not jnp.issubdtype(step.dtype, jnp.floating):
            step = step.astype(jnp.result_type(float))
        frac = jnp.clip(step / self.decay_steps, 0.0, 1.0)
        return self.coef + (self.final - self.coef) * frac

    def at_time(self, t):
        """The coefficient at mean-field time ``t`` (step ``t / step_time``)."""
        return self.coefficient(jnp.asarray(t) / self.step_time)
