r"""Gain schedules ``λ(t)`` for the anti-collision bonus (G²RPO App. C, D.6).

A gain is an ``eqx.Module`` called as ``gain(t, p, L_y, L_z, K, verifier) -> λ``.
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax.numpy as jnp

from ._checks import check_finite, check_parameter
from ._closed_forms import gain_schedule_a, gain_schedule_b
from ._verifier import Verifier

__all__ = ["AbstractGain", "ConstantGain", "ScheduleA", "ScheduleB"]


class AbstractGain(eqx.Module):
    """Base class: ``__call__(t, p, L_y, L_z, K, verifier)`` returns the gain ``λ``."""

    @abc.abstractmethod
    def __call__(self, t, p, L_y, L_z, K: int, verifier: Verifier): ...

    @abc.abstractmethod
    def checked(self) -> AbstractGain:
        """The same gain with run-time finiteness checks attached (for traced parameters)."""


class ConstantGain(AbstractGain):
    """A constant gain ``λ(t) ≡ lam`` (G²RPO eq. 44/48 with fixed λ)."""

    lam: float | jnp.ndarray

    def __check_init__(self):
        check_parameter(self.lam, "ConstantGain.lam")

    def __call__(self, t, p, L_y, L_z, K, verifier):
        return jnp.asarray(self.lam)

    def checked(self):
        return ConstantGain(check_finite(jnp.asarray(self.lam), "ConstantGain.lam"))


class ScheduleA(AbstractGain):
    r"""Schedule A, p-adaptive: ``λ = λ0 J p/σ(p)`` so that ``λ̃ ≡ λ0`` (G²RPO eq. 62);
    with a perfect verifier this is the adaptive gain ``λ0 sqrt(p/(1−p))`` of eq. (50)."""

    lam0: float | jnp.ndarray

    def __check_init__(self):
        check_parameter(self.lam0, "ScheduleA.lam0")

    def __call__(self, t, p, L_y, L_z, K, verifier):
        return gain_schedule_a(p, self.lam0, verifier)

    def checked(self):
        return ScheduleA(check_finite(jnp.asarray(self.lam0), "ScheduleA.lam0"))


class ScheduleB(AbstractGain):
    r"""Schedule B, (p, y, z)-adaptive: ``λ = λ0 (J p/σ) (L_y + L_z)/(L_z + 1/K)`` (G²RPO eq. 67),
    which makes the neutralized inner-time good-block field exactly ``(1 − λ0) V(y)`` (eq. 68)."""

    lam0: float | jnp.ndarray

    def __check_init__(self):
        check_parameter(self.lam0, "ScheduleB.lam0")

    def __call__(self, t, p, L_y, L_z, K, verifier):
        return gain_schedule_b(p, L_y, L_z, K, self.lam0, verifier)

    def checked(self):
        return ScheduleB(check_finite(jnp.asarray(self.lam0), "ScheduleB.lam0"))
