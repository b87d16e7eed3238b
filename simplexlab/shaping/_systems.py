r"""The one map from a rule (with its schedule and verifier) to the mean-field system of
:mod:`simplexlab.theory` it follows: :func:`meanfield_system`, at a finite group size (the
exact expected step, :class:`~simplexlab.theory.FiniteGroup`) or in the papers' G → ∞ limit
(the rule's own :meth:`AbstractRule.limit_system`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..theory import EntropyBonus, FiniteGroup, Verifier
from ._finite import group_rule
from ._registry import METHODS, check_method_params, lookup_method
from ._schedule import GainSchedule, with_gain

__all__ = ["meanfield_system"]


def meanfield_system(method: str, schedule: GainSchedule | None = None, *,
                     verifier: Verifier | None = None, eta=1.0, gain=None,
                     step_time: float = 1.0, group_size: float = math.inf,
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

    With ``group_size = inf`` (the default; ``math.inf``, TOML's ``inf``: the one spelling of
    ``G → ∞`` in the package): the papers' limit, where the package has one: ``grpo``
    -> :class:`~simplexlab.theory.GRPO` (eq. 22); ``g2rpo`` -> the schedule's
    (:meth:`GainSchedule.meanfield`, default :class:`GainSchedule`):
    :class:`~simplexlab.theory.Neutralized` (eq. 56) with ``neutralize``, else
    :class:`~simplexlab.theory.GoodBonus` (eq. 48), with its gain (eq. 62 / 67); other rules
    raise ``ValueError`` (pass ``group_size``).

    ``gain`` (may be traced) replaces the schedule's; ``eta``: the system's step size (1 under
    the lab's time map ``t = step · η``, where one training step at rate ``η`` lasts
    ``step_time = η``; the papers write their fields with ``η`` inside, time ``t = step``);
    ``step_time``: the mean-field time of one training step (a warm-up lasts
    ``ramp_steps · step_time``); ``verifier``: default perfect."""
    m = lookup_method(method)
    verifier = Verifier() if verifier is None else verifier
    if group_size is None or (isinstance(group_size, float) and math.isnan(group_size)):
        raise ValueError(f"group_size must be an integer >= 2 or math.inf (G → ∞, the papers' "
                         f"limit); got {group_size!r}")
    if not (isinstance(group_size, float) and math.isinf(group_size) and group_size > 0):
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
    # the limit's settings: a parameter is the rule's (a misspelt one, or one of another rule,
    # would be dropped); the gain, given either way, is the schedule's
    given = check_method_params(method, m, params)
    if "gain" in given:
        if gain is not None:
            raise ValueError(f"give the gain once: gain={gain!r} and params['gain'] = "
                             f"{given['gain']!r}")
        gain = given["gain"]
    if options or num_groups is not None or (surrogate, reduction, path) != (
            "log_likelihood", "mean", "auto"):
        raise ValueError("the papers' G → ∞ fields are SGD's on the mean-reduced log-likelihood "
                         "surrogate: surrogate, reduction, path, num_groups and "
                         f"{sorted(options) or 'the options'} are the finite-group system's "
                         "(pass group_size)")
    if not m.has_limit_system:
        have = " and ".join(repr(k) for k, v in METHODS.items() if v.has_limit_system)
        raise ValueError(f"no G → ∞ mean-field system for method {method!r} (only {have} have "
                         "one); pass group_size for its finite-group system")
    return m.limit_system(with_gain(schedule, gain), verifier, eta, step_time)
