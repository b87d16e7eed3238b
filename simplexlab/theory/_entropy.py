r"""The entropy bonus: ``c(step) · H(π)`` added to the objective that a training step ascends.

TRL's ``GRPOConfig(entropy_coef=c)`` subtracts ``c · H`` from the loss, ``H`` the mean per-token
entropy of the policy (not of the sampled tokens); for the bandit's policy over modes that is
``H(π) = −Σ_c π_c log π_c``, whose gradient in the logits is ``∂H/∂θ_c = −π_c (log π_c + H)``
(:func:`entropy_gradient`). It is exact, not sampled: one SGD step adds ``η c ∇_θ H`` to the
bandit's update, and the finite-group field adds ``c ∇_θ H`` to ``E[Δθ]/η`` (no finite-G
correction). The coefficient is constant, decays linearly over training steps, or is adapted
toward a target entropy as TRL's ``use_adaptive_entropy`` does (:class:`EntropyBonus`), the
questions practitioners ask of it ("should the entropy coefficient decay?", "what does the
adaptive controller do?") being ones the lab can answer with the bandit, and for the constant
and decaying coefficients with the field beside it.
"""

from __future__ import annotations

import math
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._checks import as_int, check, check_pair, check_parameter, is_concrete, xp

__all__ = ["EntropyBonus", "entropy_gradient"]


def _entropy_and_gradient(probs):
    """``(H, ∇_θ H)`` of :func:`entropy_gradient`, ``H`` with a kept last axis."""
    logp = jnp.where(probs > 0, jnp.log(jnp.where(probs > 0, probs, 1.0)), 0.0)
    H = -jnp.sum(probs * logp, -1, keepdims=True)
    return H, -probs * (logp + H)


def entropy_gradient(probs):
    r"""``∇_θ H(softmax θ) = −π (log π + H)`` along the last axis, ``π = probs``,
    ``H = −Σ π log π`` (a mode of mass 0 contributes 0: ``π log π → 0``)."""
    return _entropy_and_gradient(probs)[1]


#: the array fields of :class:`EntropyBonus` (checked by their domains, traced ones at run time)
_ARRAY_FIELDS = ("coef", "final", "target", "delta", "coef_min", "coef_max")
#: the adaptive controller's settings and their defaults (TRL's)
_ADAPTIVE_DEFAULTS = {"target": 0.2, "delta": 0.005, "coef_min": 0.0, "coef_max": 1.0}


class EntropyBonus(eqx.Module):
    r"""An entropy bonus with coefficient ``coef`` (TRL's ``entropy_coef``): constant; or,
    with ``final`` and ``decay_steps > 0``, decaying linearly from ``coef`` to ``final`` over
    ``decay_steps`` training steps and ``final`` after; or, with ``adaptive=True``, TRL's
    adaptive controller (``GRPOConfig(use_adaptive_entropy=True)``, read from TRL 1.16's
    ``GRPOTrainer.compute_loss``): the coefficient starts at ``coef``; after each step whose
    mean entropy ``H`` is ``<= target`` it rises by ``delta`` (at most ``coef_max``), else falls
    by ``delta`` (at least ``coef_min``); and a step applies its coefficient only when the
    previous step's entropy was ``<= target`` (the first step applies none)
    (:meth:`controller_step`; TRL's ``entropy_target``, ``entropy_coef_delta``,
    ``entropy_coef_min``, ``entropy_coef_max``, with its defaults). The bandit runs the
    controller itself, step by step; the field takes its small-step limit
    (:meth:`field_term`). ``step_time``: the mean-field time of one step (``η`` under the
    time map ``t = step · η``), for the finite-group field; set by the systems that take a
    bonus. A negative coefficient is an entropy penalty."""

    coef: Any = eqx.field(default=0.0, kw_only=True)
    final: Any = eqx.field(default=None, kw_only=True)
    decay_steps: int = eqx.field(default=0, kw_only=True, static=True)
    step_time: float = eqx.field(default=1.0, kw_only=True, static=True)
    adaptive: bool = eqx.field(default=False, kw_only=True, static=True)
    target: Any = eqx.field(default=0.2, kw_only=True)
    delta: Any = eqx.field(default=0.005, kw_only=True)
    coef_min: Any = eqx.field(default=0.0, kw_only=True)
    coef_max: Any = eqx.field(default=1.0, kw_only=True)

    def __post_init__(self):
        # built from traced values (inside jit / vmap): the host checks of __check_init__ cannot
        # run, so the same rules are attached as run-time checks to the values themselves
        if not all(is_concrete(getattr(self, k)) for k in _ARRAY_FIELDS):
            for k, v in self._checked_values().items():
                setattr(self, k, v)

    def _checked_values(self) -> dict:
        """The array fields with their domains attached (a concrete value: checked now)."""
        out = {"coef": check_parameter(self.coef, "EntropyBonus.coef"),
               "final": None if self.final is None else check_parameter(
                   self.final, "EntropyBonus.final"),
               "target": check(self.target, lambda a: ~(xp.isfinite(a) & (a > 0)),
                               "EntropyBonus.target (the entropy, in nats, the adaptive "
                               "controller aims at) must be finite and > 0 (a softmax policy's "
                               "entropy is > 0: a target <= 0 would never switch the bonus on)"),
               "delta": check_parameter(self.delta, "EntropyBonus.delta", lower=0.0)}
        lo = check_parameter(self.coef_min, "EntropyBonus.coef_min")
        hi = check_parameter(self.coef_max, "EntropyBonus.coef_max")
        # each value carries its own checks (a check on a value nothing reads is no check); the
        # order of the two bounds is carried by both: the controller reads them, the field coef_max
        msg = "EntropyBonus: coef_min (the smallest coefficient) must be <= coef_max"
        out["coef_min"] = check_pair(lo, hi, lambda a, b: ~(a <= b), f"{msg}: (coef_min, "
                                     "coef_max)")
        out["coef_max"] = check_pair(hi, lo, lambda b, a: ~(a <= b), f"{msg}: (coef_max, "
                                     "coef_min)")
        return out

    def checked(self) -> EntropyBonus:
        """The same bonus with run-time checks of its (possibly traced) values attached."""
        values = self._checked_values()
        return eqx.tree_at(lambda b: [getattr(b, k) for k in values], self,
                           list(values.values()), is_leaf=lambda x: x is None)

    def __check_init__(self):
        check_parameter(self.coef, "EntropyBonus.coef")
        if self.final is not None:
            check_parameter(self.final, "EntropyBonus.final")
        as_int(self.decay_steps, "EntropyBonus.decay_steps", lower=0)
        if (self.final is None) != (self.decay_steps == 0):
            raise ValueError("EntropyBonus: a decay needs both final and decay_steps > 0 (a "
                             f"constant bonus neither); got final={self.final!r}, "
                             f"decay_steps={self.decay_steps!r}")
        if not isinstance(self.adaptive, bool):
            raise ValueError(f"EntropyBonus.adaptive must be True or False; got "
                             f"{self.adaptive!r}")
        self._checked_values()  # every value in its domain (a traced one: __post_init__)
        if not self.adaptive:  # the controller's settings would be dropped without it
            given = [k for k, d in _ADAPTIVE_DEFAULTS.items()
                     if is_concrete(getattr(self, k)) and np.any(np.asarray(getattr(self, k))
                                                                  != d)]
            if given:
                raise ValueError(f"EntropyBonus: {', '.join(given)} set the adaptive "
                                 f"controller, which is off (adaptive=False): pass "
                                 f"adaptive=True, or leave them at their defaults "
                                 f"{ {k: _ADAPTIVE_DEFAULTS[k] for k in given} }")
        if self.adaptive and self.final is not None:
            raise ValueError("EntropyBonus: an adaptive coefficient does not decay (final and "
                             "decay_steps are for a scheduled one)")
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

    def schedule(self):
        r"""The coefficient as an optax-style schedule, ``step -> c`` (:meth:`coefficient`: what
        optax, brax and Tunix take for a schedule; traceable). An adaptive coefficient follows
        the entropy, not the step: ``ValueError``. :meth:`from_schedule` takes such a callable
        back."""
        if self.adaptive:
            raise ValueError("EntropyBonus.schedule: an adaptive coefficient follows the policy's "
                             "entropy (controller_step), not the training step: it has no "
                             "step -> value schedule")
        return self.coefficient

    @classmethod
    def from_schedule(cls, schedule, *, steps: int = 10_000, **fields) -> EntropyBonus:
        """The :class:`EntropyBonus` whose coefficient follows the optax-style ``schedule``
        (``step -> value``: ``optax.constant_schedule(c)``, ``optax.linear_schedule(c0, c1,
        n)`` or :meth:`schedule`'s), read at steps ``0 .. steps``: a constant, or a linear
        change from ``coef`` to ``final`` over ``decay_steps`` (the forms it has); the other
        ``fields`` (``step_time``) as given. Any other form is a ``ValueError`` naming the
        first step where it differs."""
        who = "EntropyBonus.from_schedule"
        if not callable(schedule):
            raise ValueError(f"{who}: the schedule must be callable, step -> value; got "
                             f"{schedule!r}")
        n = as_int(steps, f"{who}: steps", lower=1)
        grid = np.arange(n + 1)
        try:
            values = np.asarray(schedule(grid), dtype=np.float64)
        except Exception:  # a schedule of one step at a time
            values = np.zeros(0)
        if values.shape != grid.shape:
            values = np.asarray([float(schedule(int(k))) for k in grid])
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{who}: the schedule gives non-finite values")
        end = float(values[-1])
        moving = ~np.isclose(values, end, rtol=1e-5, atol=0.0)
        decay = int(np.flatnonzero(moving)[-1]) + 1 if moving.any() else 0
        if decay >= n:
            raise ValueError(f"{who}: the schedule has not settled at step {n}; pass a larger "
                             "steps=")
        bonus = cls(coef=float(values[0]), final=end if decay else None, decay_steps=decay,
                    **fields)
        mine = np.asarray(bonus.coefficient(grid), dtype=np.float64)
        bad = ~np.isclose(values, mine, rtol=1e-5, atol=1e-7 * max(np.max(np.abs(values)), 1e-12))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{who}: the schedule is neither constant nor linear to a final "
                             f"value: at step {i} it is {values[i]!r}, the line "
                             f"{mine[i]!r}")
        return bonus

    def at_time(self, t):
        """The coefficient at mean-field time ``t`` (step ``t / step_time``)."""
        return self.coefficient(jnp.asarray(t) / self.step_time)

    def field_term(self, t, probs, drift, scale=1.0):
        r"""The bonus's term ``c ∇_θ H`` of the field ``dθ/dt`` over ``scale`` (the field's
        ``η``) at time ``t``, where ``drift`` is the rest of it: ``c`` is :meth:`at_time` for a
        constant or decaying coefficient. For an adaptive one, the controller's limit for
        small steps, where the coefficient moves by ``delta`` per step while the policy moves by
        ``O(η)``. Above the target the bonus is off (the last entropy was above it); below it
        the coefficient runs up to ``coef_max``; on it the controller switches on and off so
        fast that it holds the entropy still (a sliding mode): the mean coefficient is the one
        that makes
        ``dH/dt = ⟨∇_θ H, f + c ∇_θ H⟩`` vanish, ``c* = −⟨∇_θ H, f⟩ / ‖∇_θ H‖²``, within
        ``[0, coef_max]``. Written as one continuous rule that is all three,
        ``c = clip(c* + (target − H) / (scale · step_time · ‖∇_θ H‖²), 0, coef_max)``: the entropy
        relaxes to the target within about one step's time (``dH/dt = (target − H)/step_time``
        while ``c`` is inside the clip). ``probs``: the policy; ``drift``: the rest of
        ``dθ/dt`` over ``scale``."""
        H, g = _entropy_and_gradient(probs)
        if not self.adaptive:
            return self.at_time(t) * g
        H = H[..., 0]
        gg = jnp.sum(g * g, -1)
        safe = jnp.where(gg > 0, gg, 1.0)
        c = (-jnp.sum(g * drift, -1) + (self.target - H) / (scale * self.step_time)) / safe
        lo, hi = jnp.minimum(0.0, self.coef_max), jnp.maximum(0.0, self.coef_max)
        off = jnp.where(H > self.target, lo, hi)  # ∇_θ H = 0: uniform or one mode
        return jnp.where(gg > 0, jnp.clip(c, lo, hi), off)[..., None] * g

    def controller_init(self, dtype=None):
        """The adaptive controller's state before the first step: ``(coef, last entropy)``,
        the last entropy ``+inf`` (TRL's ``_last_world_entropy``), so the first step applies
        no bonus."""
        dt = jnp.result_type(float) if dtype is None else dtype
        return jnp.asarray(self.coef, dt), jnp.asarray(jnp.inf, dt)

    def controller_step(self, control, entropy):
        """One step of the adaptive controller: ``(applied coefficient, next control)`` from
        the state ``control = (coef, last entropy)`` and this step's mean entropy ``entropy``
        (of the policy the step samples from)."""
        coef, last = control
        applied = jnp.where(last <= self.target, coef, jnp.zeros_like(coef))
        up = jnp.minimum(coef + self.delta, self.coef_max)
        down = jnp.maximum(coef - self.delta, self.coef_min)
        nxt = jnp.where(entropy <= self.target, up, down).astype(coef.dtype)
        return applied, (nxt, jnp.asarray(entropy, last.dtype))
