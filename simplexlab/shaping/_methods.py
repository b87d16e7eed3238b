r"""Advantage rules by name, on what a training loop sees (SPEC C6–C8).

:func:`advantages` computes per-rollout advantages of a batch of groups from the verifier
outcomes, the mode (cluster) id of every rollout and, for ProGRPO, the rollout's log-probability
-- the inputs G²RPO Algorithm 1 sees, never the true probabilities. The finite-group bandit of
:mod:`simplexlab.sim` and the torch bridge of :mod:`simplexlab.llm` both call it, so a method name
means the same rule everywhere. Every rule is a function of this package (no formula here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax.numpy as jnp

from ..theory import Verifier
from ._advantages import (
    dr_grpo_advantages,
    grpo_advantages,
    mean_shifted_advantages,
    raw_advantages,
    reinforce_pp_advantages,
    rloo_advantages,
)
from ._g2rpo import g2rpo_advantages, g2rpo_bonus
from ._rules import dapo_iac, f_grpo, grpo_n
from ._schedule import GainSchedule
from ._token import progrpo_advantages

__all__ = ["METHODS", "METHOD_PARAMS", "Groups", "advantages", "g2rpo_clusters"]


class Groups(NamedTuple):
    """A batch of groups, ``(*groups, G)`` arrays: what an advantage rule may see."""

    rewards: Any  #: verifier outcomes in {0, 1}
    modes: Any  #: int mode (cluster) id of each rollout, in ``[0, num_clusters)``
    mask: Any = None  #: valid rollouts (``None``: all)
    logp: Any = None  #: log-probability of each rollout (ProGRPO's confidence)


def g2rpo_clusters(g: Groups, cluster_bad: bool = True):
    """G²RPO's cluster ids (G² Alg. 1): a correct-scored rollout is clustered among the good by
    its mode, an incorrect one among the bad (``cluster_bad=False``: ``None``, one aggregated bad
    arm); ``−1`` elsewhere. Returns ``(good_cluster, bad_cluster)``."""
    m = jnp.ones(jnp.shape(g.rewards), bool) if g.mask is None else g.mask
    r = jnp.asarray(g.rewards)
    good = jnp.where(m & (r == 1), g.modes, -1)
    bad = jnp.where(m & (r == 0), g.modes, -1) if cluster_bad else None
    return good, bad


def _g2rpo(g: Groups, q, schedule: GainSchedule, step, verifier, num_clusters):
    good, bad = g2rpo_clusters(g, schedule.cluster_bad)
    return g2rpo_advantages(jnp.asarray(g.rewards), good, bad, g.mask,
                            config=schedule.config(step, verifier), num_clusters=num_clusters)


def _g2rpo_bonus(g: Groups, q, schedule: GainSchedule, step, verifier, num_clusters):
    good, bad = g2rpo_clusters(g, schedule.cluster_bad)
    return g2rpo_bonus(jnp.asarray(g.rewards), good, bad, g.mask,
                       config=schedule.config(step, verifier), num_clusters=num_clusters)


def _progrpo(g: Groups, q, *_):
    if g.logp is None:
        raise ValueError("method 'progrpo' needs the rollouts' log-probabilities (logp)")
    # ProGRPO (PG eq. 4–6) with the rollout's probability as its confidence c(o) and the
    # geometric mean of the group's confidences as the prompt's c(q) (fraction 1)
    return progrpo_advantages(g.rewards, g.logp[..., None], g.logp, prompt_mask=g.mask,
                              mask=g.mask, alpha=q["progrpo_alpha"], fraction=1.0)


#: ``name -> (array parameters it uses, rule(groups, params, schedule, step, verifier, C))``.
METHODS: dict[str, tuple[tuple[str, ...], Callable]] = {
    "raw": ((), lambda g, q, *_: raw_advantages(g.rewards, g.mask)),
    "mean_shifted": ((), lambda g, q, *_: mean_shifted_advantages(g.rewards, g.mask)),
    "grpo": ((), lambda g, q, *_: grpo_advantages(g.rewards, g.mask)),
    "dr_grpo": ((), lambda g, q, *_: dr_grpo_advantages(g.rewards, g.mask)),
    "rloo": ((), lambda g, q, *_: rloo_advantages(g.rewards, g.mask)),
    # REINFORCE++ normalizes over the whole batch of groups
    "reinforce_pp": ((), lambda g, q, *_: reinforce_pp_advantages(g.rewards, g.mask)),
    "f_grpo": (("focal_gamma",), lambda g, q, *_: f_grpo(q["focal_gamma"])(g.rewards, g.mask)),
    "iac": (("iac_alpha",), lambda g, q, *_: dapo_iac(q["iac_alpha"])(g.rewards, g.mask)),
    "grpo_n": ((), lambda g, q, *_: grpo_n()(g.rewards, g.mask)),
    "g2rpo": (("gain",), _g2rpo),
    # the G²RPO bonus B_i alone (Alg. 1 lines 5–11), to add to another estimator's normalized
    # advantages (the TRL and verl adapters add it to theirs)
    "g2rpo_bonus": (("gain",), _g2rpo_bonus),
    "progrpo": (("progrpo_alpha",), _progrpo),
}

#: Defaults of the methods' own parameters.
METHOD_PARAMS = {"gain": 1.5, "focal_gamma": 1.0, "iac_alpha": 1.0, "progrpo_alpha": 0.3}


def advantages(method: str, groups: Groups, *, params: dict[str, Any] | None = None,
               schedule: GainSchedule | None = None, step=0,
               verifier: Verifier | None = None, num_clusters: int | None = None):
    r"""Per-rollout advantages ``(*groups, G)`` of ``method`` (a name in :data:`METHODS`).

    ``params``: the method's own parameters (:data:`METHOD_PARAMS` names; defaults otherwise).
    G²RPO takes its rule from ``schedule`` (default :class:`GainSchedule`; ``params["gain"]``,
    when given, replaces its gain) at training step ``step``, the verifier's ``J`` and ``σ``
    for schedules A/B from ``verifier``, and ``num_clusters`` (default: the group size).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}")
    rule = METHODS[method][1]
    q = {**METHOD_PARAMS, **(params or {})}
    unknown = sorted(set(params or {}) - set(METHOD_PARAMS))
    if unknown:
        raise ValueError(f"unknown method parameter(s) {unknown}; known: "
                         f"{sorted(METHOD_PARAMS)}")
    if method in ("g2rpo", "g2rpo_bonus"):
        schedule = GainSchedule() if schedule is None else schedule
        if not isinstance(schedule, GainSchedule):
            raise ValueError(f"schedule must be a GainSchedule; got {schedule!r}")
        if params and "gain" in params:
            schedule = eqx.tree_at(lambda s: s.gain, schedule, params["gain"])
    return rule(groups, q, schedule, step, verifier, num_clusters)
