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

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check, inputs_trusted, is_concrete
from ..theory import Verifier
from ._registry import METHOD_PARAMETERS, METHOD_PARAMS, METHODS, check_method_params, lookup_method
from ._rule import AbstractRule, Groups
from ._schedule import GainSchedule, with_gain

__all__ = ["advantages"]

#: the built-in rule objects (a rule from user code has its output checked)
_BUILTIN = frozenset(id(r) for r in METHODS.values())

#: what a rule that is traced (under ``jit``, ``vmap``, in the bandit, a sweep or the theory)
#: may not do: convert a traced array to NumPy or to a Python number, branch on it in Python
_TRACER_ERRORS = (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError,
                  jax.errors.TracerIntegerConversionError)


def advantages(method: str | AbstractRule, groups: Groups, *,
               params: dict[str, Any] | None = None, schedule: GainSchedule | None = None,
               step=0, verifier: Verifier | None = None, num_clusters: int | None = None):
    r"""Per-rollout advantages ``(*groups, G)`` of ``method`` (a name in :data:`METHODS`, or an
    :class:`AbstractRule`).

    ``params``: the method's own parameters (:data:`METHOD_PARAMS` names; defaults otherwise;
    a name no rule declares, or one of another rule's, is refused, naming the method's own).
    G²RPO takes its rule from ``schedule`` (default :class:`GainSchedule`; ``params["gain"]``,
    when given, replaces its gain) at training step ``step``, the verifier's ``J`` and ``σ``
    for schedules A/B from ``verifier``, and ``num_clusters`` (default: the group size).

    A rule from user code (:func:`register_method`) has its output checked wherever it runs:
    an array of the rewards' shape (a static check), finite (eagerly a ``ValueError``; traced,
    under ``jit`` / ``vmap``, in the bandit, its sweeps and the finite-group theory, an
    ``eqx.error_if`` that :func:`simplexlab._checks.trusted_inputs` does not skip).
    """
    return rule_advantages(method, groups, params=params, schedule=schedule, step=step,
                           verifier=verifier, num_clusters=num_clusters)


def rule_advantages(method, groups: Groups, *, params=None, schedule=None, step=0,
                    verifier=None, num_clusters=None, name: str | None = None, exempt=None):
    """:func:`advantages`, with the rule's ``name`` for its errors and ``exempt``: groups
    (a boolean broadcast against the advantages) where non-finite advantages are not refused
    (the finite-group theory's representative groups of probability 0)."""
    m = method if isinstance(method, AbstractRule) else lookup_method(method)
    if name is None:
        name = method if isinstance(method, str) else type(method).__name__
    given = check_method_params(name, m, params)
    q = {**METHOD_PARAMS, **given}
    if not inputs_trusted():
        for k in m.params:  # their declared domain: concrete values now, traced ones at run time
            p = METHOD_PARAMETERS[k]
            p.check(q[k], f"{name}: ")
            if not is_concrete(q[k]):
                q[k] = given[k] = check(q[k], p.bad, f"{name}: {k} must be {p.what}")
    if m.modes and groups.modes is None:
        raise ValueError(f"method {name!r} needs each rollout's mode id: "
                         "Groups(rewards, modes=...)")
    if m.logp and groups.logp is None:
        raise ValueError(f"method {name!r} needs the rollouts' log-probabilities (logp): "
                         "Groups(rewards, logp=...)")
    if m.schedule:
        schedule = with_gain(schedule, given.get("gain"))
    if id(m) in _BUILTIN:
        return m(groups, q, schedule, step, verifier, num_clusters)
    try:
        out = m(groups, q, schedule, step, verifier, num_clusters)
    except _TRACER_ERRORS as err:
        raise ValueError(f"rule {name!r} cannot be traced: it converts a traced array to NumPy "
                         f"or to a Python value (np.asarray, float(), an if on an array), which "
                         f"jit, vmap, the bandit, its sweeps and the finite-group theory cannot "
                         f"do; write it with jax.numpy ({type(err).__name__})") from None
    return checked_output(name, out, groups.rewards, exempt)


def checked_output(name: str, out, rewards, exempt=None):
    """A user rule's advantages ``out``: an array of real numbers of the rewards' shape (else a
    ``ValueError`` naming the rule), finite where ``exempt`` is not true (eagerly a
    ``ValueError``; traced an ``eqx.error_if``, never skipped, neither by ``trusted_inputs()``
    nor where a solver turns equinox's checks off: a rule's output is not an input the caller
    built)."""
    if not isinstance(out, jax.Array | np.ndarray | np.generic):
        raise ValueError(f"rule {name!r} returned {type(out).__name__} {out!r}"[:300] + "; it "
                         "must return an array (jax.numpy) of one advantage per rollout")
    if jnp.shape(out) != jnp.shape(rewards):
        raise ValueError(f"rule {name!r} returned advantages of shape {jnp.shape(out)}; "
                         f"they must have the rewards' shape {jnp.shape(rewards)}")
    if np.dtype(out.dtype).kind not in "biuf":
        raise ValueError(f"rule {name!r} returned advantages of dtype {out.dtype}; they must "
                         "be real numbers")
    bad = ~jnp.isfinite(out)
    if exempt is not None:
        bad = bad & ~jnp.asarray(exempt)
    if is_concrete(out) and (exempt is None or is_concrete(exempt)):
        if bool(np.any(np.asarray(bad))):
            raise ValueError(f"rule {name!r} returned non-finite advantages: {out}")
        return out
    # on_error="raise": not turned off where a solver's trace turns equinox's checks off
    return eqx.error_if(out, jnp.any(bad), f"rule {name!r} returned non-finite advantages",
                        on_error="raise")
