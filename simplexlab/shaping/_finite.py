r"""Every advantage rule as an :class:`~simplexlab.theory.AbstractGroupRule`: the rule with its
parameters, schedule and verifier, as the finite-group theory of :mod:`simplexlab.theory` sees
it.

:func:`group_rule` binds a rule of :data:`METHODS` (its parameters, G²RPO's schedule and the
verifier) so that the theory runs the rule itself on the groups it enumerates or samples (no
second copy of a rule). The structure each rule declares (:attr:`AbstractRule.structure`) lets
the theory take its ``"counts"`` or ``"clusters"`` path; a rule's own exact reduction (the
``"rule"`` path) is a method of the rule (:meth:`AbstractRule.cell_totals`: G²RPO, ProGRPO,
REINFORCE++, the batch-std GRPO), called here on the rule object, never by its name.
"""

from __future__ import annotations

import math
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from .._checks import as_int, check_finite, trusted_inputs
from ..theory import AbstractGroupRule, Verifier
from ._methods import advantages
from ._registry import METHOD_PARAMETERS, METHOD_PARAMS, lookup_method
from ._rule import AbstractRule, Groups
from ._schedule import GainSchedule, with_gain

__all__ = ["MethodRule", "group_rule"]


class MethodRule(AbstractGroupRule):
    r"""A rule of :data:`simplexlab.shaping.METHODS` with its parameters, schedule and verifier,
    as the finite-group theory sees it (:class:`~simplexlab.theory.AbstractGroupRule`); made by
    :func:`group_rule`. Every property and reduction is the rule object's."""

    method: str = eqx.field(static=True)
    rule: AbstractRule = eqx.field(static=True)
    params: dict[str, Any]
    schedule: GainSchedule | None
    verifier: Verifier
    step_time: float = eqx.field(default=1.0, static=True)
    groups: int = eqx.field(default=1, static=True)

    @property
    def structure(self) -> str:  # type: ignore[override]
        return self.rule.structure

    @property
    def group_local(self) -> bool:
        return self.rule.group_local

    @property
    def min_group_size(self) -> int:
        return max(2, self.rule.group_size_bound(self.params))

    @property
    def num_groups(self) -> int:
        return self.groups

    def checked(self):
        params = {k: check_finite(jnp.asarray(v), f"{self.method} parameter {k}")
                  for k, v in self.params.items()}
        return eqx.tree_at(lambda r: r.params, self, params)

    def training_step(self, t):
        """The training step at mean-field time ``t`` (``t / step_time``)."""
        return jnp.asarray(t) / self.step_time

    def advantages(self, rewards, modes, logp, t, num_clusters):
        with trusted_inputs():  # representative or sampled groups: valid by construction
            return advantages(self.rule, Groups(rewards, modes, None, logp),
                              params=dict(self.params), schedule=self.schedule,
                              step=self.training_step(t), verifier=self.verifier,
                              num_clusters=num_clusters)

    def reduction_size(self, K, M, group_size, active):
        return self.rule.reduction_size(self, K, M, group_size, active)

    def cell_totals(self, q1, q0, probs, group_size, t, num_clusters, active):
        return self.rule.cell_totals(self, q1, q0, probs, group_size, t, num_clusters, active)


def group_rule(method, *, params: dict[str, Any] | None = None,
               schedule: GainSchedule | None = None, verifier: Verifier | None = None,
               step_time: float = 1.0, num_groups: int | None = None) -> MethodRule:
    r"""The advantage rule ``method`` (a name of :data:`METHODS`) as a
    :class:`~simplexlab.theory.AbstractGroupRule` for the finite-group theory: ``params`` (its
    own parameters, defaults :data:`METHOD_PARAMS`), ``schedule`` (G²RPO; default
    :class:`GainSchedule`), ``verifier`` (for G²RPO's schedules A/B; default perfect),
    ``step_time`` (the mean-field time of one training step: a warm-up of ``ramp_steps`` steps
    lasts ``ramp_steps · step_time``), ``num_groups`` (groups per batch; REINFORCE++ normalises
    over them and needs it)."""
    m = lookup_method(method)
    unknown = sorted(set(params or {}) - set(METHOD_PARAMS))
    if unknown:
        raise ValueError(f"unknown method parameter(s) {unknown}; known: {sorted(METHOD_PARAMS)}")
    q = {k: (params or {}).get(k, METHOD_PARAMS[k]) for k in m.params}
    for k, v in q.items():  # the domain each parameter declares
        METHOD_PARAMETERS[k].check(v, f"{method}: parameter ")
    if m.schedule:
        schedule = with_gain(schedule, (params or {}).get("gain"))
        dt = jnp.result_type(float)
        if not (isinstance(schedule.gain, jax.Array) and schedule.gain.dtype == dt):
            # an array leaf: a new gain value reuses the compiled field
            schedule = eqx.tree_at(lambda s: s.gain, schedule, jnp.asarray(schedule.gain, dt))
        q.pop("gain", None)
    else:
        schedule = None
    if not m.group_local:
        if num_groups is None:
            raise ValueError(f"method {method!r} normalises over the whole batch of groups: "
                             "its finite-group theory needs num_groups (groups per batch)")
        num_groups = as_int(num_groups, "num_groups", lower=1)
    else:
        num_groups = 1 if num_groups is None else as_int(num_groups, "num_groups", lower=1)
    if not (isinstance(step_time, int | float) and math.isfinite(step_time) and step_time > 0):
        raise ValueError(f"step_time must be a finite number > 0; got {step_time!r}")
    dt = jnp.result_type(float)
    return MethodRule(method, m, {k: jnp.asarray(v, dt) for k, v in q.items()}, schedule,
                      Verifier() if verifier is None else verifier, float(step_time),
                      num_groups)
