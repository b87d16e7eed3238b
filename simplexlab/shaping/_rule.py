r"""What an advantage rule is: :class:`AbstractRule`, the inputs it sees (:class:`Groups`) and
the rule written as a function (:class:`Method`, what user code registers).

A rule declares what it needs (binary rewards, mode ids, log-probabilities, a G²RPO schedule),
its array parameters (:class:`simplexlab._checks.Param`, declared once with their domain), what
its advantages depend on for the finite-group theory (:attr:`AbstractRule.structure`), and
implements its formula (:meth:`AbstractRule.__call__`). Every package function that takes a
rule dispatches on these methods and attributes, never on the rule's name: the rule's G → ∞
mean-field system (:meth:`AbstractRule.limit_system`) and its own exact reductions of the
finite-group theory (:meth:`AbstractRule.reduction_size`, :meth:`AbstractRule.cell_totals`)
are methods of the rule. Each built-in rule is one final class beside its formula (the modules
``_advantages``, ``_rules``, ``_passk``, ``_token``, ``_g2rpo``); ``_registry`` names them.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import equinox as eqx

from .._checks import Param, xp
from ..theory.internal import STRUCTURES

__all__ = ["AbstractRewardRule", "AbstractRule", "Groups", "Method", "finite", "finite_nonneg"]


def finite(a):
    """A parameter's domain (:class:`~simplexlab._checks.Param`'s ``bad``): finite."""
    return ~xp.isfinite(a)


def finite_nonneg(a):
    """A parameter's domain: finite and ``>= 0``."""
    return ~(xp.isfinite(a) & (a >= 0))


class Groups(NamedTuple):
    """A batch of groups, ``(*groups, G)`` arrays: what an advantage rule may see."""

    rewards: Any  #: verifier outcomes in {0, 1}
    #: int mode (cluster) id of each rollout, in ``[0, num_clusters)``; only the rules that
    #: cluster (G²RPO) need it, ``None`` for the others
    modes: Any = None
    mask: Any = None  #: valid rollouts (``None``: all)
    logp: Any = None  #: log-probability of each rollout (ProGRPO's confidence)


class AbstractRule(eqx.Module):
    r"""An advantage rule on what a training loop sees (module docstring).

    Declarations (class attributes of a built-in rule, fields of a :class:`Method`):
    :attr:`params` (the names of its array parameters), :attr:`PARAMS` (their
    :class:`~simplexlab._checks.Param` declarations, where the rule owns them), :attr:`binary`,
    :attr:`modes`, :attr:`schedule`, :attr:`logp` (what it needs), :attr:`group_local`,
    :attr:`min_group_size`, :attr:`structure` (``"counts"``: a rollout's own reward and the
    group's success count; ``"clusters"``: the cluster counts, symmetric in the mode ids within
    the correct-scored and within the incorrect-scored rollouts; ``"general"``)."""

    #: its array parameters (names of :data:`simplexlab.shaping.METHOD_PARAMETERS`)
    params: ClassVar[tuple[str, ...]] = ()
    #: the :class:`~simplexlab._checks.Param` declarations of the parameters it introduces
    PARAMS: ClassVar[tuple[Param, ...]] = ()
    binary: ClassVar[bool] = False  #: needs rewards in {0, 1} (verifier outcomes)
    modes: ClassVar[bool] = False  #: needs the mode (cluster) id of every rollout
    schedule: ClassVar[bool] = False  #: takes a G²RPO ``GainSchedule`` (gain, safeguards)
    logp: ClassVar[bool] = False  #: needs the rollouts' log-probabilities
    group_local: ClassVar[bool] = True  #: a group's advantages depend on that group alone
    min_group_size: ClassVar[int] = 1  #: the smallest group size its formula is defined for
    structure: ClassVar[str] = "general"  #: what its advantages depend on (class docstring)

    @abc.abstractmethod
    def __call__(self, groups: Groups, params: dict[str, Any], schedule, step, verifier,
                 num_clusters):
        """Per-rollout advantages ``(*groups, G)`` of ``groups``: ``params`` its parameters
        (every name of :attr:`params`), ``schedule`` a ``GainSchedule`` (G²RPO), ``step`` the
        training step, ``verifier`` the :class:`~simplexlab.theory.Verifier`, ``num_clusters``
        the number of mode ids."""

    @property
    def function(self) -> Callable | None:
        """The rule as ``f(rewards, mask)`` when it is a function of the rewards alone with no
        parameter of its own (``None`` otherwise)."""
        return None

    @property
    def group_function(self) -> Callable | None:
        """:attr:`function` when the rule maps one group's real-valued rewards alone to its
        advantages (what the two-stage and categorical toys can use), else ``None``."""
        return self.function if self.group_local and not self.binary else None

    # ---- the rule's place in the theory ---------------------------------------------------

    @property
    def has_limit_system(self) -> bool:
        """Whether the package has the rule's G → ∞ mean-field system."""
        return type(self).limit_system is not AbstractRule.limit_system

    def limit_system(self, schedule, verifier, eta, step_time):
        """The G → ∞ mean-field system of :mod:`simplexlab.theory` the rule follows (``None``:
        none in the package; every rule has a finite-group system)."""
        return None

    def group_size_bound(self, params: dict[str, Any]) -> int:
        """The smallest group size at these (concrete) parameter values (default
        :attr:`min_group_size`)."""
        return self.min_group_size

    def constraints(self, group_size: str = "group_size") -> list[tuple]:
        """Joint rules between the rule's parameters and the group size, as
        ``(names, bad, what)`` (``bad`` written with :data:`~simplexlab._checks.xp` as
        ``~(ok)``; ``group_size`` the name the caller gives the group size). Default none."""
        return []

    #: its own reduction (:meth:`cell_totals`, :meth:`reduction_size`) takes the keyword
    #: ``max_group_size`` (a static bound; ``group_size`` is then a traced value below it, and
    #: one program serves every group size up to the bound): the finite-group theory's group
    #: size as data (:class:`~simplexlab.theory.FiniteGroup`'s ``max_group_size``)
    traced_group_size: ClassVar[bool] = False

    def reduction_size(self, bound, K: int, M: int, group_size: int, active) -> int | None:
        """The size of the rule's own exact reduction of the finite-group cell totals at these
        sizes (``None``: it has none); ``bound`` is the rule with its parameters, schedule and
        verifier (:class:`simplexlab.shaping.MethodRule`)."""
        return None

    def cell_totals(self, bound, q1, q0, probs, group_size: int, t, num_clusters: int, active):
        """The rule's own exact reduction of the cell totals ``W`` ``(2, C)``
        (:class:`~simplexlab.theory.AbstractGroupRule.cell_totals`); called only where
        :meth:`reduction_size` is not ``None``."""
        return None


class AbstractRewardRule(AbstractRule):
    """A rule of the rewards alone with no parameter of its own (on binary rewards a function
    of a rollout's reward and the group's success count): its formula is :attr:`formula`."""

    structure: ClassVar[str] = "counts"
    #: ``f(rewards, mask) -> advantages``
    formula: ClassVar[Callable]

    @property
    def function(self):
        return type(self).formula

    def __call__(self, groups, params, schedule, step, verifier, num_clusters):
        return type(self).formula(groups.rewards, groups.mask)


class Method(AbstractRule):
    """An advantage rule written as a function, as user code registers one
    (:func:`simplexlab.shaping.register_method`): ``Method(params, rule, ...)`` with ``rule``
    ``rule(groups, params, schedule, step, verifier, num_clusters) -> advantages`` and the
    declarations of :class:`AbstractRule` as keywords (``function``: the rule as
    ``f(rewards, mask)`` when it is one of the rewards alone; ``meanfield(schedule, verifier,
    eta, step_time)``: its G → ∞ system, if it has one)."""

    params: tuple[str, ...] = eqx.field(static=True)
    rule: Callable = eqx.field(static=True)
    reward_function: Callable | None = eqx.field(default=None, static=True)
    binary: bool = eqx.field(default=False, static=True)
    modes: bool = eqx.field(default=False, static=True)
    schedule: bool = eqx.field(default=False, static=True)
    logp: bool = eqx.field(default=False, static=True)
    group_local: bool = eqx.field(default=True, static=True)
    min_group_size: int = eqx.field(default=1, static=True)
    meanfield: Callable | None = eqx.field(default=None, static=True)
    structure: str = eqx.field(default="general", static=True)

    def __init__(self, params, rule, function=None, binary=False, modes=False, schedule=False,
                 logp=False, group_local=True, min_group_size=1, meanfield=None,
                 structure="general"):
        self.params = tuple(params) if isinstance(params, list | tuple) else params
        self.rule = rule
        self.reward_function = function
        self.binary, self.modes, self.schedule, self.logp = binary, modes, schedule, logp
        self.group_local, self.min_group_size = group_local, min_group_size
        self.meanfield, self.structure = meanfield, structure

    def __check_init__(self):
        if not (isinstance(self.params, tuple) and all(isinstance(k, str) for k in self.params)):
            raise ValueError(f"Method: params must be a tuple of parameter names; got "
                             f"{self.params!r}")
        for name in ("rule", "reward_function", "meanfield"):
            v = getattr(self, name)
            if v is not None and not callable(v) or (name == "rule" and v is None):
                raise ValueError(f"Method: {name} must be callable; got {v!r}")
        for name in ("binary", "modes", "schedule", "logp", "group_local"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"Method: {name} must be True or False; got "
                                 f"{getattr(self, name)!r}")
        if isinstance(self.min_group_size, bool) or not isinstance(self.min_group_size, int) \
                or self.min_group_size < 1:
            raise ValueError(f"Method: min_group_size must be an integer >= 1; got "
                             f"{self.min_group_size!r}")
        if self.structure not in STRUCTURES:
            raise ValueError(f"Method: structure must be one of {STRUCTURES}; got "
                             f"{self.structure!r}")

    def __call__(self, groups, params, schedule, step, verifier, num_clusters):
        return self.rule(groups, params, schedule, step, verifier, num_clusters)

    @property
    def function(self):
        return self.reward_function

    @property
    def has_limit_system(self) -> bool:
        return self.meanfield is not None

    def limit_system(self, schedule, verifier, eta, step_time):
        return None if self.meanfield is None else self.meanfield(schedule, verifier, eta,
                                                                  step_time)
