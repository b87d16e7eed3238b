r"""Advantage rules by name, on what a training loop sees.

:func:`advantages` computes per-rollout advantages of a batch of groups from the verifier
outcomes, the mode (cluster) id of every rollout and, for ProGRPO, the rollout's log-probability
-- the inputs G²RPO Algorithm 1 sees, never the true probabilities. The finite-group bandit of
:mod:`simplexlab.sim` and the torch bridge of :mod:`simplexlab.llm` both call it, so a method name
means the same rule everywhere. Every rule is a function of this package (no formula here).
:data:`METHODS` declares once what each rule needs (:class:`Method`); the simulators and adapters
derive their tables from it, and :func:`meanfield_system` is the one map from a rule (and its
schedule and verifier) to the mean-field system it follows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax.numpy as jnp

from .._checks import Param, inputs_trusted, is_concrete, xp
from ..theory import GRPO, EntropyBonus, Verifier
from ._advantages import (
    dr_grpo_advantages,
    grpo_advantages,
    grpo_batch_std_advantages,
    loo_std_advantages,
    mean_shifted_advantages,
    raw_advantages,
    reinforce_pp_advantages,
    rloo_advantages,
)
from ._g2rpo import g2rpo_advantages, g2rpo_bonus
from ._passk import pass_at_k_advantages, pkpo_advantages
from ._rules import (
    dapo_iac,
    f_grpo,
    grpo_n,
    nsr_advantages,
    unlikeliness_advantages,
    w_reinforce_advantages,
)
from ._schedule import GainSchedule
from ._token import progrpo_advantages

__all__ = ["METHODS", "METHOD_PARAMETERS", "METHOD_PARAMS", "Groups", "Method", "advantages",
           "g2rpo_clusters", "import_method", "lookup_method", "meanfield_system",
           "register_method", "unregister_method"]


class Groups(NamedTuple):
    """A batch of groups, ``(*groups, G)`` arrays: what an advantage rule may see."""

    rewards: Any  #: verifier outcomes in {0, 1}
    #: int mode (cluster) id of each rollout, in ``[0, num_clusters)``; only the rules that
    #: cluster (G²RPO) need it, ``None`` for the others
    modes: Any = None
    mask: Any = None  #: valid rollouts (``None``: all)
    logp: Any = None  #: log-probability of each rollout (ProGRPO's confidence)


def g2rpo_clusters(g: Groups, cluster_bad: bool = True):
    """G²RPO's cluster ids (G2 Alg. 1): a correct-scored rollout is clustered among the good by
    its mode, an incorrect one among the bad (``cluster_bad=False``: ``None``, one aggregated bad
    arm); ``−1`` elsewhere. Returns ``(good_cluster, bad_cluster)``."""
    if g.modes is None:
        raise ValueError("G²RPO clusters the rollouts by mode: Groups(rewards, modes=...) needs "
                         "each rollout's mode id (modes=None)")
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
    # ProGRPO (PG eq. 4–6) with the rollout's probability as its confidence c(o) and the
    # geometric mean of the group's confidences as the prompt's c(q) (fraction 1); all-correct
    # groups skipped (Alg. 1) unless progrpo_all_correct = 1 (eq. 4 read literally)
    return progrpo_advantages(g.rewards, g.logp[..., None], g.logp, prompt_mask=g.mask,
                              mask=g.mask, alpha=q["progrpo_alpha"], fraction=1.0,
                              all_correct=q["progrpo_all_correct"])


class Method(NamedTuple):
    """One advantage rule and what it needs: the one declaration from which every simulator and
    adapter derives its view (:data:`simplexlab.sim.METHODS`, the classifier's ``ESTIMATORS``,
    ``TWO_STAGE_METHODS``, the categorical ``ADVANTAGES``, the torch bridge's checks).
    ``METHODS[name][0]`` / ``[1]`` are its parameters and its rule, as before."""

    params: tuple[str, ...]  #: its array parameters (names of :data:`METHOD_PARAMS`)
    rule: Callable  #: ``rule(groups, params, schedule, step, verifier, num_clusters)``
    #: the rule as ``f(rewards, mask)`` when it is a function of the rewards alone with no
    #: parameter of its own (``None`` otherwise)
    function: Callable | None = None
    binary: bool = False  #: needs rewards in {0, 1} (verifier outcomes)
    modes: bool = False  #: needs the mode (cluster) id of every rollout
    schedule: bool = False  #: takes a :class:`GainSchedule` (G²RPO's gain and safeguards)
    logp: bool = False  #: needs the rollouts' log-probabilities
    group_local: bool = True  #: a group's advantages depend on that group alone
    min_group_size: int = 1  #: the smallest group size its formula is defined for
    #: ``meanfield(schedule, verifier, eta, step_time)``: the G → ∞ mean-field system of
    #: :mod:`simplexlab.theory` it follows (``None``: none in the package; every rule has a
    #: finite-group system, :func:`meanfield_system` with ``group_size``)
    meanfield: Callable | None = None
    #: what its advantages depend on, for the finite-group theory
    #: (:attr:`simplexlab.theory.AbstractGroupRule.structure`): ``"counts"`` (a rollout's own reward
    #: and the group's success count), ``"clusters"`` (the cluster counts, symmetric in the
    #: mode ids within the correct-scored and within the incorrect-scored rollouts) or
    #: ``"general"``
    structure: str = "general"

    @property
    def group_function(self) -> Callable | None:
        """:attr:`function` when the rule maps one group's real-valued rewards alone to its
        advantages (what the two-stage and categorical toys can use), else ``None``."""
        return self.function if self.group_local and not self.binary else None


def _of_rewards(function, **needs) -> Method:
    """A rule of the rewards alone, with no parameter of its own (on binary rewards a function
    of a rollout's reward and the group's success count)."""
    needs.setdefault("structure", "counts")
    return Method((), lambda g, q, *_: function(g.rewards, g.mask), function, **needs)


def _grpo_system(schedule, verifier, eta, step_time):
    return GRPO(eta=eta, verifier=verifier)


def _g2rpo_system(schedule, verifier, eta, step_time):
    return schedule.meanfield(eta=eta, verifier=verifier, step_time=step_time)


_G2 = {"binary": True, "modes": True, "schedule": True, "structure": "clusters"}

METHODS: dict[str, Method] = {
    "raw": _of_rewards(raw_advantages),
    "mean_shifted": _of_rewards(mean_shifted_advantages),
    "grpo": _of_rewards(grpo_advantages, meanfield=_grpo_system),
    "dr_grpo": _of_rewards(dr_grpo_advantages),
    "rloo": _of_rewards(rloo_advantages, min_group_size=2),  # divides by G − 1
    # REINFORCE++ normalizes over the whole batch of groups
    "reinforce_pp": _of_rewards(reinforce_pp_advantages, group_local=False,
                                structure="general"),
    "f_grpo": Method(("focal_gamma",),
                     lambda g, q, *_: f_grpo(q["focal_gamma"])(g.rewards, g.mask), binary=True,
                     structure="counts"),
    "iac": Method(("iac_alpha",), lambda g, q, *_: dapo_iac(q["iac_alpha"])(g.rewards, g.mask),
                  binary=True, structure="counts"),
    "grpo_n": _of_rewards(grpo_n()),
    "g2rpo": Method(("gain",), _g2rpo, **_G2, meanfield=_g2rpo_system),
    # the G²RPO bonus B_i alone (Alg. 1 lines 5–11), to add to another estimator's normalized
    # advantages (the TRL and verl adapters add it to theirs)
    "g2rpo_bonus": Method(("gain",), _g2rpo_bonus, **_G2),
    "progrpo": Method(("progrpo_alpha", "progrpo_all_correct"), _progrpo, logp=True),
    # the rules people train with (each function's docstring gives its source)
    "grpo_sample_std": Method(("std_eps",), lambda g, q, *_: grpo_advantages(
        g.rewards, g.mask, eps=q["std_eps"], ddof=1), structure="counts"),
    "grpo_batch_std": Method(("std_eps",), lambda g, q, *_: grpo_batch_std_advantages(
        g.rewards, g.mask, eps=q["std_eps"]), group_local=False),
    "loo_std": _of_rewards(loo_std_advantages, min_group_size=2),
    "w_reinforce": Method(("w_reinforce_lambda",), lambda g, q, *_: w_reinforce_advantages(
        g.rewards, g.mask, w_reinforce_lambda=q["w_reinforce_lambda"]), binary=True,
        structure="counts"),
    "nsr": _of_rewards(nsr_advantages, binary=True),
    "pass_at_k": Method(("pass_k",), lambda g, q, *_: pass_at_k_advantages(
        g.rewards, g.mask, k=q["pass_k"]), binary=True, structure="counts"),
    "pkpo": Method(("pass_k",), lambda g, q, *_: pkpo_advantages(
        g.rewards, g.mask, k=q["pass_k"]), binary=True, structure="counts"),
    "unlikeliness": Method(("rank_penalty",), lambda g, q, *_: unlikeliness_advantages(
        g.rewards, g.logp, g.mask, beta=q["rank_penalty"]), logp=True),
}
"""Every advantage rule by name and what it needs (:class:`Method`)."""

def _finite(a):
    return ~xp.isfinite(a)


def _finite_nonneg(a):
    return ~(xp.isfinite(a) & (a >= 0))


METHOD_PARAMETERS: dict[str, Param] = {p.name: p for p in (
    Param("gain", 1.5, _finite, "finite", "λ, λ0",
          "G²RPO's gain: λ (constant schedule) or λ0 (schedules A, B; G2 eqs. 62, 67)"),
    Param("focal_gamma", 1.0, _finite_nonneg, "finite and >= 0", "γ",
          "F-GRPO's focal exponent (FG eq. 15)"),
    Param("iac_alpha", 1.0, _finite_nonneg, "finite and >= 0", "α",
          "IAC's exponent of the inverse success count (SC §3.1)"),
    Param("progrpo_alpha", 0.3, _finite, "finite", "α",
          "ProGRPO's weight of the confidence term (PG eq. 6)"),
    Param("std_eps", 1e-6, _finite_nonneg, "finite and >= 0", "ε",
          "added to the sample std: 1e-6 is verl's GRPO, 1e-4 TRL's (scale_rewards group / "
          "batch)"),
    Param("w_reinforce_lambda", 0.1, _finite_nonneg, "finite and >= 0", "λ",
          "W-REINFORCE's weight of the correct rollouts (Zhu et al., 2025: 0.1)"),
    Param("pass_k", 2.0, lambda a: ~(xp.isfinite(a) & (a >= 1) & (a == xp.round(a))),
          "a whole number >= 1 (and <= the group size)", "k",
          "the k of pass@k training and PKPO (lab default 2, PKPO's worked example)"),
    Param("rank_penalty", 0.25, _finite_nonneg, "finite and >= 0", "β",
          "the unlikeliness reward's rank penalty (He et al., 2025: 0.25)"),
    Param("progrpo_all_correct", 0.0, lambda a: ~((a == 0) | (a == 1)),
          "0 (skip all-correct groups, PG Alg. 1) or 1 (re-weight them, PG eq. 4)", "",
          "ProGRPO's all-correct groups: 0 skips them as PG Alg. 1 does, 1 re-weights them as "
          "PG eq. 4 read literally"),
)}
"""Every parameter of a method, declared once (:class:`simplexlab._checks.Param`: default,
domain, symbol, doc): the defaults (:data:`METHOD_PARAMS`), the checks of :func:`advantages`,
of the simulators and of the finite-group theory all read it; :func:`register_method` adds a
new rule's."""

METHOD_PARAMS: dict[str, Any] = {k: p.default for k, p in METHOD_PARAMETERS.items()}
"""Defaults of the methods' own parameters (from :data:`METHOD_PARAMETERS`)."""

_BUILTIN = frozenset(METHODS)
_REGISTERED: dict[str, tuple[str, ...]] = {}  # a registered rule -> the parameters it declared


def register_method(name: str, method: Method, *, params=()) -> str:
    r"""Add the advantage rule ``method`` (a :class:`Method`) under ``name``, with the
    parameters it declares (``params``: :class:`simplexlab._checks.Param`\ s, each named in
    ``method.params``), so that every place that takes a method name takes it: the bandit and
    its sweeps, :func:`advantages`, the finite-group theory (:func:`meanfield_system` with
    ``group_size``), the torch bridge. Nothing of the package is edited. Returns ``name``.

    Refused with a ``ValueError`` naming the rule: a name that is not an identifier, that of a
    built-in rule or of one registered already; a parameter of ``method.params`` that no one
    declares, a declared one it does not use, one whose name another rule declared differently,
    or a default outside its own domain. :func:`unregister_method` takes it back."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"register_method: the name must be an identifier; got {name!r}")
    if name in _BUILTIN:
        raise ValueError(f"register_method: {name!r} is a built-in rule of METHODS; choose "
                         "another name")
    if name in METHODS:
        raise ValueError(f"register_method: {name!r} is registered already "
                         "(unregister_method first)")
    if not isinstance(method, Method):
        raise ValueError(f"register_method: rule {name!r} must be a Method; got {method!r}")
    new = {}
    for p in params:
        if not isinstance(p, Param):
            raise ValueError(f"register_method: rule {name!r}: params must be Param "
                             f"declarations; got {p!r}")
        old = METHOD_PARAMETERS.get(p.name)
        if old is not None and old != p:
            raise ValueError(f"register_method: rule {name!r} declares parameter {p.name!r}, "
                             f"which is declared already as {old}")
        p.check(p.default, f"register_method: rule {name!r}: the default of ")
        new[p.name] = p
    if undeclared := [k for k in method.params if k not in METHOD_PARAMETERS and k not in new]:
        raise ValueError(f"register_method: rule {name!r} uses parameter(s) {undeclared} that "
                         "no one declares: pass params=[Param(...)]")
    if unused := sorted(set(new) - set(method.params)):
        raise ValueError(f"register_method: rule {name!r} declares parameter(s) {unused} that "
                         f"its Method does not list in params {method.params}")
    METHODS[name] = method
    METHOD_PARAMETERS.update(new)
    METHOD_PARAMS.update({k: p.default for k, p in new.items()})
    _REGISTERED[name] = tuple(new)
    return name


def unregister_method(name: str) -> None:
    """Remove a rule added by :func:`register_method` (and the parameters it declared, where
    no other registered rule uses them); a built-in rule cannot be removed."""
    if name in _BUILTIN:
        raise ValueError(f"unregister_method: {name!r} is a built-in rule")
    if name not in _REGISTERED:
        raise ValueError(f"unregister_method: no registered rule {name!r}")
    declared = _REGISTERED.pop(name)
    del METHODS[name]
    still = {k for m in METHODS.values() for k in m.params}
    for k in declared:
        if k not in still:
            METHOD_PARAMETERS.pop(k, None)
            METHOD_PARAMS.pop(k, None)


def import_method(spec, who: str = "") -> str:
    """The rule a config file names: ``"package.module:name"`` imports ``package.module`` (the
    user's own module; importing it registers ``name`` with :func:`register_method`) and returns
    ``name``; a plain name is returned as it is. The module must be one the user allowed
    (:func:`simplexlab._imports.import_user_module`: ``--import``, ``SIMPLEXLAB_IMPORT``, or
    already imported by the user's own code), checked before it is imported. Refused with a
    ``ValueError`` naming ``who`` and the rule: a module that is not allowed or cannot be
    imported, an empty module or rule name, or a module that registers no rule ``name``."""
    from .._imports import import_user_module

    if not isinstance(spec, str) or ":" not in spec:
        return spec
    module, _, name = spec.partition(":")
    if not name.isidentifier():
        raise ValueError(f"{who}method {spec!r}: {name!r} is not a rule name (write "
                         "\"package.module:rule\")")
    import_user_module(module, f"{who}method {spec!r}")
    if name not in METHODS:
        raise ValueError(f"{who}method {spec!r}: importing {module!r} registered no rule "
                         f"{name!r} (the module should call register_method({name!r}, ...)); "
                         f"registered: {sorted(set(METHODS) - _BUILTIN) or 'none'}")
    return name


def lookup_method(name, who: str = "") -> Method:
    """``METHODS[name]``; anything else raises ``ValueError`` naming it (``who``: a prefix such
    as ``"bandit: "``)."""
    if not isinstance(name, str) or name not in METHODS:
        raise ValueError(f"{who}unknown method {name!r}; choose one of {sorted(METHODS)}")
    return METHODS[name]


def meanfield_system(method: str, schedule: GainSchedule | None = None, *,
                     verifier: Verifier | None = None, eta=1.0, gain=None,
                     step_time: float = 1.0, group_size: int | None = None,
                     params: dict[str, Any] | None = None, num_groups: int | None = None,
                     surrogate: str = "log_likelihood", reduction: str = "mean",
                     path: str = "auto", entropy_bonus=None, **options):
    r"""The mean-field system of :mod:`simplexlab.theory` that advantage rule ``method``
    follows.

    With ``group_size = G``: the finite-group system
    (:class:`~simplexlab.theory.FiniteGroup`): the exact expected SGD step at ``G`` rollouts
    per group, for every method (``params``: the method's own parameters; ``num_groups``: groups
    per batch, for REINFORCE++; ``surrogate``, ``reduction``, ``path`` and ``options``
    (``max_size``, ``num_samples``, ``seed``) as :class:`~simplexlab.theory.FiniteGroup`
    takes them; ``entropy_bonus``: a :class:`~simplexlab.theory.EntropyBonus` added to the
    objective, its steps timed by ``step_time``).

    With ``group_size=None``: the papers' ``G → ∞`` limit, where the package has one: ``grpo``
    -> :class:`~simplexlab.theory.GRPO` (eq. 22); ``g2rpo`` -> the schedule's
    (:meth:`GainSchedule.meanfield`, default :class:`GainSchedule`):
    :class:`~simplexlab.theory.Neutralized` (eq. 56) with ``neutralize``, else
    :class:`~simplexlab.theory.GoodBonus` (eq. 48), with its gain (eq. 62 / 67); other rules
    raise ``ValueError`` (pass ``group_size``).

    ``gain`` (may be traced) replaces the schedule's; ``eta``: the system's step size;
    ``step_time``: the mean-field time of one training step (a warm-up lasts
    ``ramp_steps · step_time``); ``verifier``: default perfect."""
    m = lookup_method(method)
    verifier = Verifier() if verifier is None else verifier
    if group_size is not None:
        from ..theory import FiniteGroup
        from ._finite import group_rule
        q = dict(params or {})
        if gain is not None:
            q["gain"] = gain
        rule = group_rule(method, params=q, schedule=schedule, verifier=verifier,
                          step_time=step_time, num_groups=num_groups)
        if entropy_bonus is not None:
            if not isinstance(entropy_bonus, EntropyBonus):
                raise ValueError(f"entropy_bonus must be an EntropyBonus; got {entropy_bonus!r}")
            entropy_bonus = dataclasses.replace(entropy_bonus, step_time=float(step_time))
        return FiniteGroup(rule, group_size=group_size, eta=eta, verifier=verifier,
                           surrogate=surrogate, reduction=reduction, path=path,
                           entropy_bonus=entropy_bonus, **options)
    if entropy_bonus is not None:
        raise ValueError("the papers' G → ∞ fields have no entropy bonus: it is a term of the "
                         "finite-group system only (pass group_size; a Bandit's finite_group)")
    if m.meanfield is None:
        have = " and ".join(repr(k) for k, v in METHODS.items() if v.meanfield is not None)
        raise ValueError(f"no G → ∞ mean-field system for method {method!r} (only {have} have "
                         "one); pass group_size for its finite-group system")
    return m.meanfield(_schedule(schedule, gain), verifier, eta, step_time)


def _schedule(schedule, gain=None) -> GainSchedule:
    """``schedule`` (default :class:`GainSchedule`) with ``gain`` (when given) as its gain."""
    schedule = GainSchedule() if schedule is None else schedule
    if not isinstance(schedule, GainSchedule):
        raise ValueError(f"schedule must be a GainSchedule; got {schedule!r}")
    return schedule if gain is None else eqx.tree_at(lambda s: s.gain, schedule, gain)


def advantages(method: str, groups: Groups, *, params: dict[str, Any] | None = None,
               schedule: GainSchedule | None = None, step=0,
               verifier: Verifier | None = None, num_clusters: int | None = None):
    r"""Per-rollout advantages ``(*groups, G)`` of ``method`` (a name in :data:`METHODS`).

    ``params``: the method's own parameters (:data:`METHOD_PARAMS` names; defaults otherwise).
    G²RPO takes its rule from ``schedule`` (default :class:`GainSchedule`; ``params["gain"]``,
    when given, replaces its gain) at training step ``step``, the verifier's ``J`` and ``σ``
    for schedules A/B from ``verifier``, and ``num_clusters`` (default: the group size).
    """
    m = lookup_method(method)
    q = {**METHOD_PARAMS, **(params or {})}
    unknown = sorted(set(params or {}) - set(METHOD_PARAMS))
    if unknown:
        raise ValueError(f"unknown method parameter(s) {unknown}; known: "
                         f"{sorted(METHOD_PARAMS)}")
    if not inputs_trusted():
        for k in m.params:  # concrete values against their declared domain
            METHOD_PARAMETERS[k].check(q[k], f"{method}: ")
    if m.modes and groups.modes is None:
        raise ValueError(f"method {method!r} needs each rollout's mode id: "
                         "Groups(rewards, modes=...)")
    if m.logp and groups.logp is None:
        raise ValueError(f"method {method!r} needs the rollouts' log-probabilities (logp): "
                         "Groups(rewards, logp=...)")
    if m.schedule:
        schedule = _schedule(schedule, (params or {}).get("gain"))
    out = m.rule(groups, q, schedule, step, verifier, num_clusters)
    if method in _REGISTERED:  # a rule from user code: its output, checked where it can be
        if jnp.shape(out) != jnp.shape(groups.rewards):
            raise ValueError(f"rule {method!r} returned advantages of shape {jnp.shape(out)}; "
                             f"they must have the rewards' shape {jnp.shape(groups.rewards)}")
        if is_concrete(out) and not bool(jnp.all(jnp.isfinite(out))):
            raise ValueError(f"rule {method!r} returned non-finite advantages: {out}")
    return out
