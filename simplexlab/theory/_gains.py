r"""Gain schedules ``λ(t)`` for the anti-collision bonus (G²RPO App. C, D.6).

A gain is an ``eqx.Module`` called as ``gain(t, p, L_y, L_z, K, verifier) -> λ``. Every schedule
holds one number, ``gain``: the constant λ of :class:`ConstantGain`, the base gain λ0 of
:class:`ScheduleA` / :class:`ScheduleB`. :data:`SCHEDULE_KINDS` is the one list of schedule
kinds: every ``kind`` / ``schedule`` setting of the package (``GainSchedule.kind``,
``G2RPOConfig.schedule``, the bandit's and the mean-field sweep's ``schedule``) names one of its
gain classes.
"""

from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .._checks import check_finite, check_parameter
from ._closed_forms import _gain_schedule_a, _gain_schedule_b
from ._verifier import Verifier

__all__ = ["SCHEDULE_KINDS", "AbstractGain", "ConstantGain", "ScheduleA", "ScheduleB",
           "check_kind"]


class AbstractGain(eqx.Module):
    """Base class: ``__call__(t, p, L_y, L_z, K, verifier)`` returns the gain ``λ``."""

    @abc.abstractmethod
    def __call__(self, t, p, L_y, L_z, K: int, verifier: Verifier): ...

    @abc.abstractmethod
    def checked(self) -> AbstractGain:
        """The same gain with run-time finiteness checks attached (for traced parameters)."""


class _OneGain(AbstractGain):
    """A schedule with one parameter ``gain`` (positional or keyword)."""

    gain: float | jnp.ndarray
    _symbol: ClassVar[str] = "λ"

    def __init__(self, gain=None):
        cls = type(self).__name__
        if gain is None:
            raise ValueError(f"{cls}.gain ({self._symbol}) is required, a finite number; got None")
        self.gain = gain

    def __check_init__(self):
        check_parameter(self.gain, f"{type(self).__name__}.gain ({self._symbol})")

    def checked(self):
        return eqx.tree_at(lambda g: g.gain, self, check_finite(
            jnp.asarray(self.gain), f"{type(self).__name__}.gain ({self._symbol})"))


class ConstantGain(_OneGain):
    """A constant gain ``λ(t) ≡ gain`` (G²RPO eq. 44/48 with fixed λ)."""

    _symbol: ClassVar[str] = "λ"

    def __call__(self, t, p, L_y, L_z, K, verifier):
        return jnp.asarray(self.gain)


class _BaseGainSchedule(_OneGain):
    """A schedule whose one parameter is the base gain λ0."""

    _symbol: ClassVar[str] = "λ0"


class ScheduleA(_BaseGainSchedule):
    r"""Schedule A, p-adaptive: ``λ = λ0 J p/σ(p)`` so that ``λ̃ ≡ λ0`` (G²RPO eq. 62);
    with a perfect verifier this is the adaptive gain ``λ0 sqrt(p/(1−p))`` of eq. (50).
    ``gain`` is λ0."""

    def __call__(self, t, p, L_y, L_z, K, verifier):
        return _gain_schedule_a(p, self.gain, verifier)


class ScheduleB(_BaseGainSchedule):
    r"""Schedule B, (p, y, z)-adaptive: ``λ = λ0 (J p/σ) (L_y + L_z)/(L_z + 1/K)`` (G²RPO eq. 67),
    which makes the neutralized inner-time good-block field exactly ``(1 − λ0) V(y)`` (eq. 68).
    ``gain`` is λ0."""

    def __call__(self, t, p, L_y, L_z, K, verifier):
        return _gain_schedule_b(p, L_y, L_z, K, self.gain, verifier)


#: The gain-schedule kinds by name and the gain each one means: ``"constant"`` (λ), ``"A"``
#: (eq. 62) and ``"B"`` (eq. 67); ``SCHEDULE_KINDS[kind](gain)`` is the mean-field gain.
SCHEDULE_KINDS: dict[str, type[_OneGain]] = {"constant": ConstantGain, "A": ScheduleA,
                                             "B": ScheduleB}


def check_kind(kind, name: str) -> str:
    """``kind`` if it names a schedule of :data:`SCHEDULE_KINDS`, else ``ValueError`` naming the
    setting ``name`` and the value."""
    if not (isinstance(kind, str) and kind in SCHEDULE_KINDS):
        raise ValueError(f"{name} must be one of {tuple(SCHEDULE_KINDS)}; got {kind!r}")
    return kind
