r"""The G²RPO settings, declared once (G2 §4, App. D.4, D.6, Listing 1).

:class:`GainSchedule` is the one G²RPO settings object: what the lab verifies, what the bandit,
the torch driver and the TRL / verl adapters hold as a field, and what a training loop uses: the
gain rule (constant λ, schedule A eq. 62, schedule B eq. 67: the kinds of
:data:`simplexlab.theory._gains.SCHEDULE_KINDS`), an optional linear warm-up of the gain over
``ramp_steps`` training steps, and the App. D.4 safeguards (``B_max`` clip, ``p_min`` /
``p_damp`` for the neutralizer, ``rho`` / ``floor_inverse_G`` floors of ``ŷ``, ``Lz_min``). It
maps to

* :meth:`GainSchedule.config` -- the :class:`G2RPOConfig` of training step ``step``: the same
  settings with the warmed-up gain and the verifier (the bonus of :func:`g2rpo_advantages`, used
  by the bandit and by the torch driver through the bridge);
* :meth:`GainSchedule.theory_gain` -- the gain module of the mean-field ODE (the lab's time map
  ``t = step · η``: one training step lasts ``step_time = η``) and :meth:`GainSchedule.meanfield`
  -- the mean-field system G²RPO with it follows;
* :meth:`GainSchedule.to_dict` / :meth:`GainSchedule.from_dict` -- the JSON the driver loads.

There is no second copy of a schedule formula here: the constant, A and B gains are those of
:mod:`simplexlab.theory` (``ConstantGain``, ``ScheduleA``, ``ScheduleB``) and of
:func:`g2rpo_stats`; the ramp multiplies whichever gain by ``min(1, step / ramp_steps)``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._checks import (
    check_number,
    check_parameter,
    is_concrete,
    is_int,
)
from ..theory import AbstractGain, GoodBonus, Neutralized, Verifier
from ..theory.internal import SCHEDULE_KINDS, check_kind

__all__ = ["G2RPOConfig", "GainSchedule", "RampedGain", "with_gain"]


#: bounds of the safeguards: ``name -> (bad(value), what it must be)``
_BOUNDS = {
    "rho": (lambda v: not (0.0 <= v < 1.0), "in [0, 1)"),
    "B_max": (lambda v: not (v > 0), "> 0 (inf = no clip)"),
    "p_min": (lambda v: not (0.0 <= v <= 1.0), "in [0, 1]"),
    "p_damp": (lambda v: not (0.0 <= v <= 1.0), "in [0, 1]"),
    "Lz_min": (lambda v: not (0.0 <= v <= 1.0), "in [0, 1]"),
    "eps": (lambda v: not (0.0 <= v < np.inf), "finite and >= 0"),
}


class RampedGain(AbstractGain):
    r"""``λ(t) = min(1, t / t_ramp) · inner(t, ...)``: a linear warm-up of any gain over mean-field
    time ``t_ramp`` (``t_ramp = 0``: no warm-up)."""

    inner: AbstractGain
    t_ramp: float = eqx.field(static=True)

    def __check_init__(self):
        if not isinstance(self.inner, AbstractGain):
            raise ValueError(f"RampedGain.inner must be a gain module; got {self.inner!r}")
        if not (isinstance(self.t_ramp, int | float) and math.isfinite(self.t_ramp)
                and self.t_ramp >= 0):
            raise ValueError(f"RampedGain.t_ramp must be a finite number >= 0; got "
                             f"{self.t_ramp!r}")

    def __call__(self, t, p, L_y, L_z, K, verifier):
        lam = self.inner(t, p, L_y, L_z, K, verifier)
        if self.t_ramp == 0:
            return lam
        return jnp.minimum(1.0, jnp.asarray(t) / self.t_ramp) * lam

    def checked(self):
        return RampedGain(self.inner.checked(), self.t_ramp)


class GainSchedule(eqx.Module):
    r"""The G²RPO settings: a gain schedule with its safeguards (keyword-only fields).

    * ``kind`` -- ``"constant"`` (``λ = gain``), ``"A"`` (eq. 62: ``λ = λ0 J p̂/σ(p̂)``, ``=
      λ0 sqrt(p̂/(1−p̂))`` for a perfect verifier, eq. 50; Listing 1 step (a)) or ``"B"`` (eq. 67:
      schedule A over the attenuation ``(L_z + 1/K)/(L_y + L_z)``; Listing 1 step (d)).
    * ``gain`` -- λ (constant) or λ0 (A, B); may be a JAX array (swept, traced).
    * ``ramp_steps`` -- linear warm-up: the gain is multiplied by ``min(1, step / ramp_steps)``
      (0: none). With ``kind="constant"`` this is the "ramp" schedule.
    * ``neutralize`` -- add the bad-mass neutralizer (eq. 53/55, Listing 1 ``bad_mass_neutral``)
      to incorrect rollouts.
    * ``cluster_bad`` -- cluster the incorrect rollouts by mode (``L̂_z`` from them); ``False``:
      one aggregated bad arm (``L̂_z = 1``).
    * ``B_max`` -- clip of every bonus (good and bad) to ``[−B_max, B_max]`` (Listing 1).
    * ``p_min`` -- disable the neutralizer when ``p̂ < p_min`` (App. D.4).
    * ``p_damp`` -- smooth damping: the neutralizer is multiplied by ``s(min(p̂/p_damp, 1))``,
      ``s(t) = 3t² − 2t³``, so it vanishes like ``p̂`` as ``p̂ → 0`` (App. D.4); 0 = off.
    * ``rho`` -- minimum-probability clip of ``ŷ`` before re-normalization (Listing 1).
    * ``floor_inverse_G`` -- additionally floor ``ŷ_j ≥ 1/G`` (§4 "Practical note").
    * ``Lz_min`` -- clip ``L̂_z`` away from 0 (App. D.4).
    * ``eps`` -- ε of the GRPO z-score that the bonus is added to.

    The "clipped" variants set ``B_max`` and ``p_damp``.
    """

    kind: str = eqx.field(default="B", kw_only=True, static=True)
    gain: Any = eqx.field(default=1.5, kw_only=True)
    ramp_steps: int = eqx.field(default=0, kw_only=True, static=True)
    neutralize: bool = eqx.field(default=True, kw_only=True, static=True)
    cluster_bad: bool = eqx.field(default=True, kw_only=True, static=True)
    B_max: float = eqx.field(default=float("inf"), kw_only=True, static=True)
    p_min: float = eqx.field(default=0.0, kw_only=True, static=True)
    p_damp: float = eqx.field(default=0.0, kw_only=True, static=True)
    rho: float = eqx.field(default=0.0, kw_only=True, static=True)
    floor_inverse_G: bool = eqx.field(default=False, kw_only=True, static=True)
    Lz_min: float = eqx.field(default=0.0, kw_only=True, static=True)
    eps: float = eqx.field(default=1e-6, kw_only=True, static=True)

    #: the fields written to / read from JSON, in order (the fields above)
    FIELDS: ClassVar[tuple[str, ...]]

    def __check_init__(self):
        who = type(self).__name__
        check_kind(self.kind, f"{who}.kind")
        check_parameter(self.gain, f"{who}.gain")
        if not is_int(self.ramp_steps) or self.ramp_steps < 0:
            raise ValueError(f"{who}.ramp_steps must be an integer >= 0; got "
                             f"{self.ramp_steps!r}")
        for name in ("neutralize", "cluster_bad", "floor_inverse_G"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise ValueError(f"{who}.{name} must be True or False; got "
                                 f"{getattr(self, name)!r}")
        for name, (bad, what) in _BOUNDS.items():
            v = getattr(self, name)
            check_number(v, f"{who}.{name}")
            if isinstance(v, bool | np.bool_) or np.ndim(v) != 0:  # a static setting: one number
                raise ValueError(f"{who}.{name} must be one real number; got {v!r}")
            if is_concrete(v) and np.ndim(v) == 0 and bad(float(v)):
                raise ValueError(f"{who}.{name} must be {what}; got {v!r}")

    def settings(self) -> dict[str, Any]:
        """The fields as a dict (:attr:`FIELDS` order)."""
        return {k: getattr(self, k) for k in self.FIELDS}

    @property
    def gain_class(self) -> type[AbstractGain]:
        """The gain class of :attr:`kind` (:data:`simplexlab.theory.ConstantGain`,
        :class:`~simplexlab.theory.ScheduleA` or :class:`~simplexlab.theory.ScheduleB`): the
        schedule's formulas, mean-field and plug-in."""
        return SCHEDULE_KINDS[self.kind]

    def config(self, step=0, verifier: Verifier | None = None) -> G2RPOConfig:
        """The :class:`G2RPOConfig` of training step ``step`` (an int or a traced step): these
        settings with the gain warmed up (``ramp_steps = 0`` then) and ``verifier``."""
        gain = self.gain
        if self.ramp_steps:
            gain = jnp.asarray(gain)
            if not jnp.issubdtype(gain.dtype, jnp.floating):
                gain = gain.astype(jnp.result_type(float))
            # the step (an int32 counter) in the gain's dtype: no mixed-precision product
            frac = jnp.asarray(step).astype(gain.dtype) / self.ramp_steps
            gain = jnp.minimum(1.0, frac).astype(gain.dtype) * gain
        s = {**self.settings(), "gain": gain, "ramp_steps": 0}
        return G2RPOConfig(verifier=verifier, **s)

    def gain_schedule(self):
        r"""The gain as an optax-style schedule, ``step -> λ`` (what optax, brax and Tunix take
        for a schedule): the gain of training step ``step`` with the warm-up,
        ``min(1, step / ramp_steps) · gain`` (:meth:`config`'s; λ0 for schedules A and B, whose
        per-group gain also reads the group). Traceable (a step array or a traced step);
        :meth:`from_schedule` takes such a callable back."""
        return lambda step: jnp.asarray(self.config(step).gain)

    @classmethod
    def from_schedule(cls, schedule, *, steps: int = 10_000, **fields) -> GainSchedule:
        """The :class:`GainSchedule` whose gain follows the optax-style ``schedule`` (``step ->
        value``, e.g. ``optax.linear_schedule(0.0, 1.5, 100)``, ``optax.constant_schedule(1.5)``,
        or :meth:`gain_schedule`'s), read at steps ``0 .. steps``: a constant gain, or a linear
        warm-up from 0 to the gain over ``ramp_steps`` (the forms a GainSchedule has); the other
        ``fields`` as given. Any other form (a cosine, a decay, a warm-up from a non-zero
        value, one that has not settled by ``steps``) is a ``ValueError`` naming the first step
        where it differs."""
        values = _read_schedule(schedule, steps, "GainSchedule.from_schedule")
        gain = float(values[-1])
        settled = np.isclose(values, gain, rtol=1e-5, atol=0.0)
        ramp = 0 if settled.all() else int(np.flatnonzero(~settled)[-1]) + 1
        if ramp >= steps:
            raise ValueError(f"GainSchedule.from_schedule: the schedule has not settled at step "
                             f"{steps} ({values[-2]!r} then {values[-1]!r}); pass a larger "
                             "steps=")
        out = cls(**{**fields, "gain": gain, "ramp_steps": ramp})
        mine = np.asarray(out.gain_schedule()(np.arange(steps + 1)), dtype=np.float64)
        bad = ~np.isclose(values, mine, rtol=1e-5, atol=1e-7 * max(abs(gain), 1.0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"GainSchedule.from_schedule: the schedule is neither a constant "
                             f"gain nor a linear warm-up from 0: at step {i} it is "
                             f"{values[i]!r}, the warm-up to {gain!r} over {ramp} steps "
                             f"{mine[i]!r}")
        return out

    def theory_gain(self, step_time: float = 1.0) -> AbstractGain:
        """The mean-field gain module (``ConstantGain`` / ``ScheduleA`` / ``ScheduleB`` of
        ``gain``, warmed up over ``t_ramp = ramp_steps · step_time``: one training step lasts
        ``step_time`` of mean-field time, ``η`` under the lab's time map ``t = step · η``)."""
        inner = self.gain_class(float(self.gain) if is_concrete(self.gain) else self.gain)
        if self.ramp_steps == 0:
            return inner
        return RampedGain(inner, float(self.ramp_steps * step_time))

    def meanfield(self, *, eta=1.0, verifier: Verifier | None = None, step_time: float = 1.0):
        """The mean-field system G²RPO with this schedule follows: eq. (56)
        (:class:`~simplexlab.theory.Neutralized`) with ``neutralize``, else eq. (48)
        (:class:`~simplexlab.theory.GoodBonus`), with :meth:`theory_gain` (``step_time``:
        the mean-field time of one training step, for the warm-up), step size ``eta`` and
        ``verifier`` (default: perfect)."""
        system = Neutralized if self.neutralize else GoodBonus
        return system(gain=self.theory_gain(step_time), eta=eta,
                      verifier=Verifier() if verifier is None else verifier)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values of :attr:`FIELDS` (``B_max = inf`` is written as ``None``)."""
        out = {}
        for k, v in self.settings().items():
            if isinstance(v, bool | np.bool_):
                v = bool(v)
            elif k not in ("kind", "ramp_steps"):
                v = float(v)
                if math.isinf(v):
                    v = None
            out[k] = v
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GainSchedule:
        """Inverse of :meth:`to_dict`; unknown keys raise ``ValueError`` naming them."""
        if not isinstance(d, dict):
            raise ValueError(f"a gain schedule must be a mapping; got {type(d).__name__}")
        unknown = sorted(set(d) - set(cls.FIELDS))
        if unknown:
            raise ValueError(f"GainSchedule: unknown field(s) {unknown}; known: "
                             f"{list(cls.FIELDS)}")
        d = dict(d)
        if "B_max" in d and d["B_max"] is None:
            d["B_max"] = float("inf")
        return cls(**d)


GainSchedule.FIELDS = tuple(f.name for f in dataclasses.fields(GainSchedule))


def _read_schedule(schedule, steps, who) -> np.ndarray:
    """An optax-style schedule's values at steps ``0 .. steps`` (float64): called on the step
    array where it takes one, else step by step."""
    if not callable(schedule):
        raise ValueError(f"{who}: the schedule must be callable, step -> value; got "
                         f"{schedule!r}")
    if not is_int(steps) or steps < 1:
        raise ValueError(f"{who}: steps must be an integer >= 1; got {steps!r}")
    grid = np.arange(steps + 1)
    try:
        values = np.asarray(schedule(grid), dtype=np.float64)
    except Exception:  # a schedule of one step at a time
        values = None
    if values is None or values.shape != grid.shape:
        try:
            values = np.asarray([float(schedule(int(s))) for s in grid])
        except (TypeError, ValueError) as err:
            raise ValueError(f"{who}: the schedule must map a step to a number ({err})") from None
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{who}: the schedule gives non-finite values (at step "
                         f"{int(np.flatnonzero(~np.isfinite(values))[0])})")
    return values


class G2RPOConfig(GainSchedule):
    r"""Hyper-parameters of the G²RPO bonus at one training step (G2 Listing 1 arguments and
    App. D.4 safeguards): the settings of :class:`GainSchedule` and ``verifier``, the verifier's
    ``J`` and ``σ(p)`` used by schedules A/B (eq. 62/67). :meth:`GainSchedule.config` makes one
    per step; keyword-only arguments (``gain`` -- base gain λ0, paper default 1.5).
    """

    verifier: Verifier = eqx.field(default_factory=Verifier, kw_only=True,
                                   converter=lambda v: Verifier() if v is None else v)

    def __check_init__(self):
        if not isinstance(self.verifier, Verifier):
            raise ValueError(f"G2RPOConfig.verifier must be a Verifier; got {self.verifier!r}")


def with_gain(schedule, gain=None) -> GainSchedule:
    """``schedule`` (default :class:`GainSchedule`) with ``gain`` (when given) as its gain."""
    schedule = GainSchedule() if schedule is None else schedule
    if not isinstance(schedule, GainSchedule):
        raise ValueError(f"schedule must be a GainSchedule; got {schedule!r}")
    return schedule if gain is None else eqx.tree_at(lambda s: s.gain, schedule, gain)
