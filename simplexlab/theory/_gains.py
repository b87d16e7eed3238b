r"""Gain schedules ``λ(t)`` for the anti-collision bonus (G²RPO App. C, D.6).

A gain is an ``eqx.Module`` called as ``gain(t, p, L_y, L_z, K, verifier) -> λ``. Every schedule
holds one number, ``gain``: the constant λ of :class:`ConstantGain`, the base gain λ0 of
:class:`ScheduleA` / :class:`ScheduleB`. Each schedule class carries its kind (``kind``:
``"constant"``, ``"A"``, ``"B"``) and, as class methods, what G²RPO's estimator and its exact
finite-group reduction need of it (:meth:`ConstantGain.plugin_gain`, :meth:`~ConstantGain.p_gain`,
:attr:`~ConstantGain.attenuated`), so that no caller switches on the kind.
:data:`SCHEDULE_KINDS` (kind -> class, built from the classes) is the one list of kinds: every
``kind`` / ``schedule`` setting of the package (``GainSchedule.kind``, the bandit's and the
mean-field sweep's flat ``schedule``) names one of its gain classes.
"""

from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .._checks import check_finite, check_parameter
from ._closed_forms import _gain_schedule_a, _gain_schedule_b, unchecked
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
    """A schedule with one parameter ``gain`` (positional or keyword).

    Its plug-in form (class methods, for G²RPO's per-group estimator, G2 Listing 1 step (a),
    and its finite-group reduction; they call the closed forms through
    :data:`simplexlab.theory.internal.unchecked`, the estimator's own path, so that a fault
    injected into the mean-field gain reaches the mean field only): :meth:`plugin_gain` the gain
    at a group's plug-in statistics, :meth:`p_gain` its factor in ``p̂`` alone,
    :attr:`attenuated` whether it also carries the attenuation ``(L̂_y + L̂_z)/(L̂_z + 1/K̂)``
    (schedule B)."""

    gain: float | jnp.ndarray
    _symbol: ClassVar[str] = "λ"
    #: the schedule's kind, the name every ``kind`` / ``schedule`` setting gives it
    kind: ClassVar[str]
    #: the gain carries the attenuation ``(L_y + L_z)/(L_z + 1/K)`` (G2 eq. 67)
    attenuated: ClassVar[bool] = False

    @classmethod
    def p_gain(cls, gain, p_hat, interior, verifier):
        """The gain's factor in the bad fraction ``p̂`` of a group (``interior``: ``0 < p̂ <
        1``): ``λ0 J p̂/σ(p̂)`` for schedules A and B, 0 outside the interior (Listing 1 (a));
        the constant ``gain`` for :class:`ConstantGain`."""
        p_safe = jnp.where(interior, p_hat, 0.5)
        return jnp.where(interior, unchecked.gain_schedule_a(p_safe, gain, verifier), 0.0)

    @classmethod
    def plugin_gain(cls, gain, p_hat, L_y, L_z, K, has_bad, verifier):
        """The gain ``λ`` at a group's plug-in statistics ``p̂, L̂_y, L̂_z, K̂`` (``has_bad``:
        the group has an incorrect rollout): :meth:`p_gain` (schedule A)."""
        return cls.p_gain(gain, p_hat, (p_hat > 0) & (p_hat < 1), verifier)

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
    kind: ClassVar[str] = "constant"

    def __call__(self, t, p, L_y, L_z, K, verifier):
        return jnp.asarray(self.gain)

    @classmethod
    def p_gain(cls, gain, p_hat, interior, verifier):
        return jnp.broadcast_to(gain, jnp.shape(p_hat))


class _BaseGainSchedule(_OneGain):
    """A schedule whose one parameter is the base gain λ0."""

    _symbol: ClassVar[str] = "λ0"


class ScheduleA(_BaseGainSchedule):
    r"""Schedule A, p-adaptive: ``λ = λ0 J p/σ(p)`` so that ``λ̃ ≡ λ0`` (G²RPO eq. 62);
    with a perfect verifier this is the adaptive gain ``λ0 sqrt(p/(1−p))`` of eq. (50).
    ``gain`` is λ0."""

    kind: ClassVar[str] = "A"

    def __call__(self, t, p, L_y, L_z, K, verifier):
        return _gain_schedule_a(p, self.gain, verifier)


class ScheduleB(_BaseGainSchedule):
    r"""Schedule B, (p, y, z)-adaptive: ``λ = λ0 (J p/σ) (L_y + L_z)/(L_z + 1/K)`` (G²RPO eq. 67),
    which makes the neutralized inner-time good-block field exactly ``(1 − λ0) V(y)`` (eq. 68).
    ``gain`` is λ0."""

    kind: ClassVar[str] = "B"
    attenuated: ClassVar[bool] = True

    def __call__(self, t, p, L_y, L_z, K, verifier):
        return _gain_schedule_b(p, L_y, L_z, K, self.gain, verifier)

    @classmethod
    def plugin_gain(cls, gain, p_hat, L_y, L_z, K, has_bad, verifier):
        """``λ0 (J p̂/σ(p̂)) (L̂_y + L̂_z)/(L̂_z + 1/K̂)`` (``L̂_z = 1`` for a group with no
        incorrect rollout, ``K̂ >= 1``), 0 outside ``0 < p̂ < 1``."""
        interior = (p_hat > 0) & (p_hat < 1)
        p_safe = jnp.where(interior, p_hat, 0.5)
        L_z_safe = jnp.where(has_bad, L_z, 1.0)
        return jnp.where(interior, unchecked.gain_schedule_b(
            p_safe, L_y, L_z_safe, jnp.maximum(K, 1.0), gain, verifier), 0.0)


#: The gain-schedule kinds by name and the gain each one means: ``"constant"`` (λ), ``"A"``
#: (eq. 62) and ``"B"`` (eq. 67); ``SCHEDULE_KINDS[kind](gain)`` is the mean-field gain.
SCHEDULE_KINDS: dict[str, type[_OneGain]] = {cls.kind: cls for cls in (ConstantGain, ScheduleA,
                                                                       ScheduleB)}


def check_kind(kind, name: str) -> str:
    """``kind`` if it names a schedule of :data:`SCHEDULE_KINDS`, else ``ValueError`` naming the
    setting ``name`` and the value."""
    if not (isinstance(kind, str) and kind in SCHEDULE_KINDS):
        raise ValueError(f"{name} must be one of {tuple(SCHEDULE_KINDS)}; got {kind!r}")
    return kind
