r"""A G²RPO gain schedule as one portable object (SPEC C8; G² §4, App. D.4, D.6, Listing 1).

:class:`GainSchedule` is what the lab verifies and what a training loop uses: the gain rule
(constant λ, schedule A eq. 62, schedule B eq. 67), an optional linear warm-up of the gain over
``ramp_steps`` training steps, and the App. D.4 safeguards (``B_max`` clip, ``p_min`` / ``p_damp``
for the neutralizer, ``rho`` / ``floor_inverse_G`` floors of ``ŷ``, ``Lz_min``). It maps to

* :meth:`GainSchedule.config` -- the :class:`G2RPOConfig` of training step ``step`` (the bonus of
  :func:`g2rpo_advantages`, used by the bandit and by the torch driver through the bridge);
* :meth:`GainSchedule.theory_gain` -- the gain module of the mean-field ODE (time ``t = step · η``);
* :meth:`GainSchedule.to_dict` / :meth:`GainSchedule.from_dict` -- the JSON the driver loads.

There is no second copy of a schedule formula here: the constant, A and B gains are those of
:mod:`simplexlab.theory` (``ConstantGain``, ``ScheduleA``, ``ScheduleB``) and of
:func:`g2rpo_stats`; the ramp multiplies whichever gain by ``min(1, step / ramp_steps)``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._checks import check_parameter, is_concrete, is_int
from ..theory import AbstractGain, ConstantGain, ScheduleA, ScheduleB, Verifier
from ._g2rpo import G2RPOConfig

__all__ = ["GainSchedule", "RampedGain"]

KINDS = ("constant", "A", "B")


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
    r"""A G²RPO gain schedule with its safeguards (keyword-only fields).

    * ``kind`` -- ``"constant"`` (``λ = gain``), ``"A"`` (eq. 62: ``λ = λ0 J p̂/σ(p̂)``) or
      ``"B"`` (eq. 67: schedule A over the attenuation ``(L_z + 1/K)/(L_y + L_z)``).
    * ``gain`` -- λ (constant) or λ0 (A, B); may be a JAX array (swept, traced).
    * ``ramp_steps`` -- linear warm-up: the gain is multiplied by ``min(1, step / ramp_steps)``
      (0: none). With ``kind="constant"`` this is the "ramp" schedule.
    * ``neutralize`` -- add the bad-mass neutralizer (eq. 53/55) to incorrect rollouts.
    * ``cluster_bad`` -- cluster the incorrect rollouts by mode (``L̂_z`` from them); ``False``:
      one aggregated bad arm (``L̂_z = 1``).
    * ``B_max``, ``p_min``, ``p_damp``, ``rho``, ``floor_inverse_G``, ``Lz_min``, ``eps`` -- as in
      :class:`G2RPOConfig` (Listing 1, App. D.4): the "clipped" variants set ``B_max`` and
      ``p_damp``.
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

    #: the fields written to / read from JSON, in order
    FIELDS: ClassVar[tuple[str, ...]] = ("kind", "gain", "ramp_steps", "neutralize",
                                         "cluster_bad", "B_max", "p_min", "p_damp", "rho",
                                         "floor_inverse_G", "Lz_min", "eps")

    def __check_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"GainSchedule.kind must be one of {KINDS}; got {self.kind!r}")
        check_parameter(self.gain, "GainSchedule.gain")
        if not is_int(self.ramp_steps) or self.ramp_steps < 0:
            raise ValueError(f"GainSchedule.ramp_steps must be an integer >= 0; got "
                             f"{self.ramp_steps!r}")
        for name in ("neutralize", "cluster_bad", "floor_inverse_G"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise ValueError(f"GainSchedule.{name} must be True or False; got "
                                 f"{getattr(self, name)!r}")
        # the remaining safeguards are validated by G2RPOConfig, with their names
        self.config(0)

    def config(self, step=0, verifier: Verifier | None = None) -> G2RPOConfig:
        """The :class:`G2RPOConfig` of training step ``step`` (an int or a traced step)."""
        gain = self.gain
        if self.ramp_steps:
            gain = jnp.asarray(gain)
            if not jnp.issubdtype(gain.dtype, jnp.floating):
                gain = gain.astype(jnp.result_type(float))
            # the step (an int32 counter) in the gain's dtype: no mixed-precision product
            frac = jnp.asarray(step).astype(gain.dtype) / self.ramp_steps
            gain = jnp.minimum(1.0, frac).astype(gain.dtype) * gain
        return G2RPOConfig(gain=gain, schedule=self.kind, rho=self.rho,
                           floor_inverse_G=self.floor_inverse_G, B_max=self.B_max,
                           neutralize=self.neutralize, p_min=self.p_min, p_damp=self.p_damp,
                           Lz_min=self.Lz_min, eps=self.eps, verifier=verifier)

    def theory_gain(self, eta: float = 1.0) -> AbstractGain:
        """The mean-field gain module (``ConstantGain`` / ``ScheduleA`` / ``ScheduleB`` of
        ``gain``, warmed up over ``t_ramp = ramp_steps · eta``: the time map ``t = step · η``)."""
        inner = {"constant": ConstantGain, "A": ScheduleA, "B": ScheduleB}[self.kind](
            float(self.gain) if is_concrete(self.gain) else self.gain)
        if self.ramp_steps == 0:
            return inner
        return RampedGain(inner, float(self.ramp_steps * eta))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values of :attr:`FIELDS` (``B_max = inf`` is written as ``None``)."""
        out = {}
        for k in self.FIELDS:
            v = getattr(self, k)
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
