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
import numpy as np

from .._checks import as_int, check, is_concrete, trusted_inputs
from ..theory import AbstractGroupRule, Verifier
from ._methods import _BUILTIN, rule_advantages
from ._registry import METHOD_PARAMETERS, METHOD_PARAMS, check_method_params, lookup_method
from ._rule import AbstractRule, Groups
from ._schedule import GainSchedule, with_gain

__all__ = ["MethodRule", "check_structure", "group_rule"]


def _checked_param(method: str, name: str, value):
    """``value`` of the parameter ``name`` with its declared domain attached as a run-time check
    (a concrete value was checked on the host: itself)."""
    p = METHOD_PARAMETERS[name]
    return check(value, p.bad, f"{method}: parameter {name} must be {p.what}")


def _checked_schedule(method: str, schedule):
    """``schedule`` with its gain checked against the ``gain`` parameter's domain (a traced gain
    reaches the schedule by ``eqx.tree_at``, which runs no ``__check_init__``)."""
    if schedule is None or is_concrete(schedule.gain):
        return schedule
    return eqx.tree_at(lambda s: s.gain, schedule, _checked_param(method, "gain", schedule.gain))


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
        """The rule with its parameters' declared domains (and the schedule's gain) checked at
        run time where they are traced."""
        params = {k: _checked_param(self.method, k, jnp.asarray(v))
                  for k, v in self.params.items()}
        out = eqx.tree_at(lambda r: r.params, self, params)
        if self.schedule is None:
            return out
        gain = _checked_param(self.method, "gain", jnp.asarray(self.schedule.gain))
        return eqx.tree_at(lambda r: r.schedule.gain, out, gain)

    def training_step(self, t):
        """The training step at mean-field time ``t`` (``t / step_time``)."""
        return jnp.asarray(t) / self.step_time

    def advantages(self, rewards, modes, logp, t, num_clusters, mask=None):
        # a group with a rollout of log-probability -inf (a mode of probability 0 in a
        # representative group) has probability 0: a rule from user code may return anything
        # there (the enumeration weighs it by 0); elsewhere its advantages must be finite
        exempt = None if logp is None else ~jnp.all(jnp.isfinite(logp), -1, keepdims=True)
        with trusted_inputs():  # representative or sampled groups: valid by construction
            return rule_advantages(self.rule, Groups(rewards, modes, mask, logp),
                                   params=dict(self.params), schedule=self.schedule,
                                   step=self.training_step(t), verifier=self.verifier,
                                   num_clusters=num_clusters, name=self.method, exempt=exempt)

    def reduction_size(self, K, M, group_size, active, **bound):
        if bound and not self.rule.traced_group_size:
            return None  # its reduction is built for one group size
        return self.rule.reduction_size(self, K, M, group_size, active, **bound)

    def cell_totals(self, q1, q0, probs, group_size, t, num_clusters, active, **bound):
        return self.rule.cell_totals(self, q1, q0, probs, group_size, t, num_clusters, active,
                                     **bound)


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
    given = check_method_params(method, m, params)
    q = {k: given.get(k, METHOD_PARAMS[k]) for k in m.params}
    for k, v in q.items():  # the domain each parameter declares (traced: checked at run time)
        METHOD_PARAMETERS[k].check(v, f"{method}: parameter ")
        q[k] = _checked_param(method, k, v)
    if m.schedule:
        # a given gain replaces the schedule's (else the schedule's own, not the default's)
        schedule = _checked_schedule(method, with_gain(schedule, q["gain"] if "gain" in given
                                                       else None))
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
    if id(m) not in _BUILTIN:  # a rule from user code: its declared structure, once
        check_structure(m, method)
    return MethodRule(method, m, {k: jnp.asarray(v, dt) for k, v in q.items()}, schedule,
                      Verifier() if verifier is None else verifier, float(step_time),
                      num_groups)


#: the rules whose declared structure :func:`check_structure` accepted (by id, with the rule)
_STRUCTURE_OK: dict[int, AbstractRule] = {}

_MEANS = {"counts": "a rollout's advantage depends only on its own reward and the group's "
                    "success count",
          "clusters": "its advantages are symmetric in the mode ids within the correct-scored "
                      "and within the incorrect-scored rollouts, and read no log-probability"}


def _probe_groups(G: int, C: int):
    """Three groups of ``G`` binary rewards with two sets of mode ids and log-probabilities,
    and the relabelling of the second set: ``(rewards, modes_a, logp_a, modes_b, logp_b)``."""
    rng = np.random.default_rng(57)
    r = (rng.random((3, G)) < np.array([[0.5], [0.7], [0.3]])).astype(float)
    r[:, :2] = [[1.0, 0.0]]  # every group mixed
    m_a = rng.integers(0, C, (3, G))
    lp_a = -rng.uniform(0.1, 3.0, (3, G))
    # the second set: each side's ids through its own bijection, fresh log-probabilities
    s1, s0 = rng.permutation(C), np.roll(np.arange(C), 1)
    m_b = np.where(r == 1, s1[m_a], s0[m_a])
    lp_b = -rng.uniform(0.1, 3.0, (3, G))
    return r, m_a, lp_a, m_b, lp_b


def _violation(rule: AbstractRule, name: str, structure: str) -> str | None:
    """What of ``structure`` the rule breaks on the probe groups (at its default parameters),
    or ``None``."""
    G = max(6, rule.min_group_size, rule.group_size_bound(dict(METHOD_PARAMS)))
    C = 4
    r, m_a, lp_a, m_b, lp_b = _probe_groups(G, C)
    if structure == "counts":  # any mode ids at all: a count rule reads none
        m_b = np.random.default_rng(58).integers(0, C, r.shape)
    dt = jnp.result_type(float)
    schedule = GainSchedule() if rule.schedule else None

    def run(modes, logp, perm=None):
        rr, mm, ll = (r, modes, logp) if perm is None else (
            r[:, perm], modes[:, perm], logp[:, perm])
        with jax.ensure_compile_time_eval():
            out = rule_advantages(rule, Groups(jnp.asarray(rr, dt), jnp.asarray(mm, jnp.int32),
                                               None, jnp.asarray(ll, dt)),
                                  schedule=schedule, verifier=Verifier(), num_clusters=C,
                                  name=name)
        return np.asarray(out, float)

    a = run(m_a, lp_a)
    tol = 1e-6 * (1.0 + np.max(np.abs(a)))
    what = "other mode ids" if structure == "counts" else "the mode ids relabelled"
    if np.max(np.abs(run(m_b, lp_a) - a)) > tol:
        return f"its advantages change with {what}"
    if np.max(np.abs(run(m_a, lp_b) - a)) > tol:
        return "its advantages change with the log-probabilities"
    perm = np.random.default_rng(59).permutation(G)
    if np.max(np.abs(run(m_a, lp_a, perm) - a[:, perm])) > tol:
        return "its advantages change when the rollouts are reordered"
    key = r if structure == "counts" else r * (C + 1) + m_a  # the rollouts that must agree
    for g in range(r.shape[0]):
        for v in np.unique(key[g]):
            same = a[g][key[g] == v]
            if np.ptp(same) > tol:
                return ("two rollouts of the same reward (and group) get different advantages"
                        if structure == "counts" else
                        "two rollouts of the same reward and mode get different advantages")
    return None


def check_structure(rule: AbstractRule, name: str) -> None:
    """Refuse (``ValueError`` naming the rule) a rule whose declared
    :attr:`~AbstractRule.structure` its advantages do not have, before the finite-group theory
    takes the ``"counts"`` or ``"clusters"`` path for it (a rule that reads the mode ids but
    declares ``"counts"`` would be computed wrong there, silently): the rule is evaluated at its
    default parameters on three groups of binary rewards and again on the same groups with
    other mode ids (``"counts"``) or the ids relabelled within each reward (``"clusters"``),
    other log-probabilities, and the rollouts reordered; and rollouts that the structure says
    are alike must get the same advantage. Once per rule object; a rule that is not group-local
    (the theory takes neither path for it) or declares ``"general"`` is not evaluated."""
    if id(rule) in _STRUCTURE_OK or rule.structure == "general" or not rule.group_local:
        return
    why = _violation(rule, name, rule.structure)
    if why is not None:
        alt = "clusters" if rule.structure == "counts" and _violation(
            rule, name, "clusters") is None else "general"
        raise ValueError(f"rule {name!r} declares structure={rule.structure!r} "
                         f"({_MEANS[rule.structure]}), but {why}: "
                         f"the finite-group theory's {rule.structure!r} path would be wrong for "
                         f"it; declare structure={alt!r}"
                         + (" (exact enumeration where it fits, else Monte Carlo)"
                            if alt == "general" else ""))
    _STRUCTURE_OK[id(rule)] = rule
