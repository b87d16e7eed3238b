r"""Advantages of a rule, on what a training loop sees.

:func:`advantages` computes per-rollout advantages of a batch of groups from the verifier
outcomes, the mode (cluster) id of every rollout and, for ProGRPO, the rollout's log-probability
-- the inputs G²RPO Algorithm 1 sees, never the true probabilities. The finite-group bandit of
:mod:`simplexlab.sim`, the finite-group theory and the torch bridge of :mod:`simplexlab.llm` all
call it, so a method name means the same rule everywhere. It dispatches on the rule object
(:class:`AbstractRule`, looked up in :data:`METHODS` by name): no formula and no name switch here.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from .._checks import inputs_trusted, is_concrete
from ..theory import Verifier
from ._registry import METHOD_PARAMETERS, METHOD_PARAMS, METHODS, lookup_method
from ._rule import AbstractRule, Groups
from ._schedule import GainSchedule, with_gain

__all__ = ["advantages"]

#: the built-in rule objects (a rule from user code has its output checked)
_BUILTIN = frozenset(id(r) for r in METHODS.values())


def advantages(method: str | AbstractRule, groups: Groups, *,
               params: dict[str, Any] | None = None, schedule: GainSchedule | None = None,
               step=0, verifier: Verifier | None = None, num_clusters: int | None = None):
    r"""Per-rollout advantages ``(*groups, G)`` of ``method`` (a name in :data:`METHODS`, or an
    :class:`AbstractRule`).

    ``params``: the method's own parameters (:data:`METHOD_PARAMS` names; defaults otherwise).
    G²RPO takes its rule from ``schedule`` (default :class:`GainSchedule`; ``params["gain"]``,
    when given, replaces its gain) at training step ``step``, the verifier's ``J`` and ``σ``
    for schedules A/B from ``verifier``, and ``num_clusters`` (default: the group size).
    """
    m = method if isinstance(method, AbstractRule) else lookup_method(method)
    name = method if isinstance(method, str) else type(method).__name__
    q = {**METHOD_PARAMS, **(params or {})}
    unknown = sorted(set(params or {}) - set(METHOD_PARAMS))
    if unknown:
        raise ValueError(f"unknown method parameter(s) {unknown}; known: "
                         f"{sorted(METHOD_PARAMS)}")
    if not inputs_trusted():
        for k in m.params:  # concrete values against their declared domain
            METHOD_PARAMETERS[k].check(q[k], f"{name}: ")
    if m.modes and groups.modes is None:
        raise ValueError(f"method {name!r} needs each rollout's mode id: "
                         "Groups(rewards, modes=...)")
    if m.logp and groups.logp is None:
        raise ValueError(f"method {name!r} needs the rollouts' log-probabilities (logp): "
                         "Groups(rewards, logp=...)")
    if m.schedule:
        schedule = with_gain(schedule, (params or {}).get("gain"))
    out = m(groups, q, schedule, step, verifier, num_clusters)
    if id(m) not in _BUILTIN:  # a rule from user code: its output, checked where it can be
        if jnp.shape(out) != jnp.shape(groups.rewards):
            raise ValueError(f"rule {name!r} returned advantages of shape {jnp.shape(out)}; "
                             f"they must have the rewards' shape {jnp.shape(groups.rewards)}")
        if is_concrete(out) and not bool(jnp.all(jnp.isfinite(out))):
            raise ValueError(f"rule {name!r} returned non-finite advantages: {out}")
    return out
