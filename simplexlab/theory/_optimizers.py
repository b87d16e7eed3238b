r"""Optimizers in the small-step limit: the mean field ``dθ/dt`` of a run with an optax optimizer
from the first two moments of one step's gradient ``ĝ = Δθ/η`` (:func:`expected_moments`).

In the time ``t = step · η`` a run with a rate ``η → 0`` takes ``1/η`` steps per unit time, so
every average the optimizer keeps over a fixed number of steps averages over a vanishing time
and its noise averages out: the run follows a deterministic field (each module's
:meth:`~AbstractOptimizerLimit.drift`), the limit in which the SGD field is
:class:`~simplexlab.theory.FiniteGroup`'s.

- **SGD** (:class:`SGD`): ``dθ/dt = E[ĝ]``.
- **Heavy-ball momentum and Nesterov** (:class:`Momentum`, ``optax.sgd(η, momentum=β,
  nesterov=...)``): the trace ``m_n = g_n + β m_{n−1}`` tends to ``E[ĝ] (1 − β^n)/(1 − β)``, so
  ``dθ/dt = E[ĝ]/(1 − β)``, the SGD field rescaled, after a transient of about ``1/(1 − β)``
  steps (with ``eta`` given, the factor ``1 − β^n`` of step ``n = t/η + 1``; Nesterov's
  update ``g + β m`` has ``1 − β^{n+1}``).
- **RMSprop** (:class:`RMSprop`, ``optax.rmsprop``): ``ν → E[ĝ ∘ ĝ]``, ``dθ/dt = E[ĝ] /
  √(E[ĝ∘ĝ] + ε)`` (optax's ``eps_in_sqrt=True``) or ``E[ĝ] / (√E[ĝ∘ĝ] + ε)``.
- **Adam / AdamW** (:class:`Adam`, :class:`AdamW`, ``optax.adam`` / ``optax.adamw``): with
  ``η/(1 − β2) → 0`` the bias-corrected moments tend to ``E[ĝ]`` and ``E[ĝ∘ĝ]``, so
  ``dθ/dt = E[ĝ] / (√E[ĝ∘ĝ] + ε) − λ_wd θ``, where ``E[ĝ∘ĝ] = E[ĝ]² + diag Σ / P`` contains
  the group's noise (``Σ`` of one group, ``P`` groups per step) and therefore ``G``: Adam's mean
  field is a different flow from SGD's, and depends on the batch. The decay acts on ``θ``,
  which the policy fixes up to a constant (``θ = log π + c 1``, and ``c`` moves no
  probability): the field uses ``log π``.

The limit needs the averaging windows short on the flow's time scale (the lag ``η/(1 − β2)``
of Adam's and RMSprop's ``ν``, ``η/(1 − β)`` of a momentum trace: :meth:`lag`) and, for the
adaptive ones, the estimate ``ν`` nearly deterministic (its relative noise is of order
``√(1 − β2)``). Clipping by global norm and schedules of the β's are not covered (the clipped
step is not a function of the moments; a moving β has no fixed limit): they are refused.
"""

from __future__ import annotations

import abc
import math
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np

__all__ = ["LIMITS", "SGD", "AbstractOptimizerLimit", "Adam", "AdamW", "Momentum", "RMSprop",
           "optimizer_limit"]


def _rate(value, name: str, who: str, *, upper: bool = True) -> float:
    """A β in [0, 1) (or, ``upper=False``, a finite number >= 0), as one number."""
    if callable(value):
        raise ValueError(f"{who}: {name} is a schedule ({value!r}); schedules of {name} are not "
                         "covered by the small-step theory (its limit needs one fixed value)")
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{who}: {name} must be a number; got {value!r}")
    v = float(value)
    if upper and not (0.0 <= v < 1.0):
        raise ValueError(f"{who}: {name} must be in [0, 1); got {value!r}")
    if not upper and not (math.isfinite(v) and v >= 0.0):
        raise ValueError(f"{who}: {name} must be a finite number >= 0; got {value!r}")
    return v


def _eps(value, who: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{who}: eps must be a number; got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and v > 0.0):
        raise ValueError(f"{who}: eps must be a finite number > 0; got {value!r}")
    return v


class AbstractOptimizerLimit(eqx.Module):
    r"""An optimizer's small-step limit (module docstring): the field ``dθ/dt`` from the moments
    of one step's gradient. Its settings are static (numbers, checked when it is built)."""

    #: the field needs ``E[ĝ∘ĝ]`` (the covariance of the step), not only ``E[ĝ]``
    uses_second_moment: ClassVar[bool] = False

    @abc.abstractmethod
    def drift(self, t, mean, squared, probs):
        """``dθ/dt`` at time ``t`` from ``mean`` ``E[ĝ]``, ``squared`` ``E[ĝ∘ĝ]`` (``None`` where
        :attr:`uses_second_moment` is false) and the policy ``probs``."""

    @abc.abstractmethod
    def lag(self, eta: float) -> float:
        """The time over which the optimizer's averages reach back at rate ``eta`` (``0``
        for SGD): the limit needs it small against the flow's time scale."""


class SGD(AbstractOptimizerLimit):
    r"""Plain SGD: ``dθ/dt = E[ĝ]`` (the field of :class:`~simplexlab.theory.FiniteGroup`)."""

    def drift(self, t, mean, squared, probs):
        return mean

    def lag(self, eta):
        return 0.0


class Momentum(AbstractOptimizerLimit):
    r"""Heavy-ball momentum or Nesterov (``optax.sgd(η, momentum=beta, nesterov=nesterov)``):
    ``dθ/dt = E[ĝ]/(1 − β)`` (module docstring); ``eta`` (the run's ``η``) adds the
    transient ``1 − β^n`` of step ``n = t/η + 1`` (``β^{n+1}`` for Nesterov); ``None``: the
    limit ``η → 0``, where it lasts no time."""

    beta: float = eqx.field(default=0.9, static=True)
    nesterov: bool = eqx.field(default=False, static=True)
    eta: float | None = eqx.field(default=None, static=True)

    def __check_init__(self):
        _rate(self.beta, "beta", "Momentum")
        if not isinstance(self.nesterov, bool):
            raise ValueError(f"Momentum: nesterov must be True or False; got {self.nesterov!r}")
        if self.eta is not None:
            s = self.eta
            if not (isinstance(s, int | float) and math.isfinite(s) and s > 0):
                raise ValueError(f"Momentum: eta must be a finite number > 0 or None; "
                                 f"got {s!r}")

    def drift(self, t, mean, squared, probs):
        beta = float(self.beta)
        scale = 1.0 / (1.0 - beta)
        if self.eta is not None:
            n = jnp.asarray(t) / self.eta + (2.0 if self.nesterov else 1.0)
            scale = scale * (1.0 - beta**n)
        return scale * mean

    def lag(self, eta):
        return float(eta) / (1.0 - float(self.beta))


def _adaptive(mean, squared, eps, eps_in_sqrt):
    if eps_in_sqrt:
        return mean / jnp.sqrt(squared + eps)
    return mean / (jnp.sqrt(squared) + eps)


class RMSprop(AbstractOptimizerLimit):
    r"""RMSprop (``optax.rmsprop(η, decay, eps)``): ``dθ/dt = E[ĝ]/√(E[ĝ∘ĝ] + ε)`` (optax's
    ``eps_in_sqrt=True``) or ``E[ĝ]/(√E[ĝ∘ĝ] + ε)``."""

    decay: float = eqx.field(default=0.9, static=True)
    eps: float = eqx.field(default=1e-8, static=True)
    eps_in_sqrt: bool = eqx.field(default=True, static=True)
    uses_second_moment = True

    def __check_init__(self):
        _rate(self.decay, "decay", "RMSprop")
        _eps(self.eps, "RMSprop")
        if not isinstance(self.eps_in_sqrt, bool):
            raise ValueError(f"RMSprop: eps_in_sqrt must be True or False; got "
                             f"{self.eps_in_sqrt!r}")

    def drift(self, t, mean, squared, probs):
        return _adaptive(mean, squared, float(self.eps), self.eps_in_sqrt)

    def lag(self, eta):
        return float(eta) / (1.0 - float(self.decay))


def _check_adam(module, who):
    _rate(module.b1, "b1", who)
    _rate(module.b2, "b2", who)
    _eps(module.eps, who)


class Adam(AbstractOptimizerLimit):
    r"""Adam (``optax.adam(η, b1, b2, eps)``) with ``η/(1 − β2) → 0``:
    ``dθ/dt = E[ĝ]/(√E[ĝ∘ĝ] + ε)`` (module docstring; ``b1`` enters only the transient)."""

    b1: float = eqx.field(default=0.9, static=True)
    b2: float = eqx.field(default=0.999, static=True)
    eps: float = eqx.field(default=1e-8, static=True)
    uses_second_moment = True

    def __check_init__(self):
        _check_adam(self, "Adam")

    def drift(self, t, mean, squared, probs):
        return _adaptive(mean, squared, float(self.eps), False)

    def lag(self, eta):
        return float(eta) / (1.0 - float(self.b2))


class AdamW(AbstractOptimizerLimit):
    r"""AdamW (``optax.adamw(η, b1, b2, eps, weight_decay)``): the :class:`Adam` field minus
    the decay, ``− λ_wd θ`` with ``θ = log π`` up to a constant (module docstring)."""

    b1: float = eqx.field(default=0.9, static=True)
    b2: float = eqx.field(default=0.999, static=True)
    eps: float = eqx.field(default=1e-8, static=True)
    weight_decay: float = eqx.field(default=1e-4, static=True)
    uses_second_moment = True

    def __check_init__(self):
        _check_adam(self, "AdamW")
        _rate(self.weight_decay, "weight_decay", "AdamW", upper=False)

    def drift(self, t, mean, squared, probs):
        log_p = jnp.log(jnp.where(probs > 0, probs, 1.0))
        return _adaptive(mean, squared, float(self.eps), False) - float(self.weight_decay) * log_p

    def lag(self, eta):
        return float(eta) / (1.0 - float(self.b2))


#: the optimizers the theory covers, by the names of the bandit's ``OPTIMIZERS`` (and optax's)
LIMITS = {"sgd": SGD, "momentum": Momentum, "nesterov": lambda **kw: Momentum(nesterov=True, **kw),
          "rmsprop": RMSprop, "adam": Adam, "adamw": AdamW}

#: settings an optax chain may carry that the small-step theory does not cover, and why
_NOT_COVERED = {
    "clip_norm": "clipping by global norm (the clipped step is not a function of the moments "
                 "of the gradient)",
    "max_norm": "clipping by global norm (the clipped step is not a function of the moments of "
                "the gradient)",
    "clip": "clipping (the clipped step is not a function of the moments of the gradient)",
    "schedule": "a schedule (the limit needs fixed settings)",
    "learning_rate": "the rate, which is the time step of the limit (t = step · η), not a "
                     "setting of the field",
}


def optimizer_limit(name: str | AbstractOptimizerLimit, **settings) -> AbstractOptimizerLimit:
    r"""The small-step limit of the optimizer ``name`` (``"sgd"``, ``"momentum"``,
    ``"nesterov"``, ``"rmsprop"``, ``"adam"``, ``"adamw"``: optax's defaults, as the bandit's
    ``OPTIMIZERS`` build them) with ``settings`` (the module's fields); an
    :class:`AbstractOptimizerLimit` passes through. Anything the theory does not cover (clipping
    by global norm, schedules, an optimizer it has no limit for) raises ``ValueError`` saying
    so."""
    if isinstance(name, AbstractOptimizerLimit):
        if settings:
            raise ValueError(f"optimizer_limit: settings {sorted(settings)} go with a name, not "
                             f"with {name!r}")
        return name
    if not isinstance(name, str) or name not in LIMITS:
        raise ValueError(f"optimizer_limit: the small-step theory covers the optimizers "
                         f"{sorted(LIMITS)}; got {name!r}")
    for key in settings:
        if key in _NOT_COVERED:
            raise ValueError(f"optimizer_limit: {key}={settings[key]!r} is {_NOT_COVERED[key]}: "
                             f"not covered by the small-step theory")
    try:
        return LIMITS[name](**settings)
    except TypeError as err:
        raise ValueError(f"optimizer_limit: {name}: {err}") from None
