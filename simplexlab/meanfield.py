"""Mean-field (p, y, z) dynamics of GRPO and G²RPO (G²RPO §3, App. A, C, D).

Systems: :class:`GRPO` (eq. 22), :class:`GoodBonus` (eq. 48; with :class:`ScheduleA` the adaptive
system 50–51), :class:`Neutralized` (eq. 56; with :class:`ScheduleA` eq. 62–65, with
:class:`ScheduleB` eq. 67–70). :func:`solve` integrates any of them in physical or internal time;
:func:`solve_ensemble` integrates a batch as one system (the fast path for sweeps).
"""

from .theory._closed_forms import (
    attenuation,
    collision_field,
    concentration,
    flip_threshold,
    gain_schedule_a,
    gain_schedule_b,
    global_flip_gain,
    inner_gain,
    kappa,
    neutralizer,
    neutralizer_reciprocal,
    neutralizer_schedule_a,
    neutralizer_schedule_b,
    reciprocal_bonus,
)
from .theory._fields import (
    GRPO,
    AbstractDynamics,
    GoodBonus,
    Neutralized,
    Rates,
    adaptive_field_j1,
    good_bonus_field_j1,
)
from .theory._gains import AbstractGain, ConstantGain, ScheduleA, ScheduleB
from .theory._solve import Solution, solve, solve_ensemble
from .theory._state import State, make_state, state_from_policy
from .theory._verifier import Verifier

__all__ = [
    "GRPO",
    "AbstractDynamics",
    "AbstractGain",
    "ConstantGain",
    "GoodBonus",
    "Neutralized",
    "Rates",
    "ScheduleA",
    "ScheduleB",
    "Solution",
    "State",
    "Verifier",
    "adaptive_field_j1",
    "attenuation",
    "collision_field",
    "concentration",
    "flip_threshold",
    "gain_schedule_a",
    "gain_schedule_b",
    "global_flip_gain",
    "good_bonus_field_j1",
    "inner_gain",
    "kappa",
    "make_state",
    "neutralizer",
    "neutralizer_reciprocal",
    "neutralizer_schedule_a",
    "neutralizer_schedule_b",
    "reciprocal_bonus",
    "solve",
    "solve_ensemble",
    "state_from_policy",
]
