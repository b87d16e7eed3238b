"""simplexlab: mean-field dynamics of RLVR (GRPO and variants) on the probability simplex.

Public namespaces:

- :mod:`simplexlab.meanfield` -- the (p, y, z) mean-field ODEs of G²RPO (§3, App. A, C, D) and
  ``solve``; the most used names are re-exported here.
- :mod:`simplexlab.lab` -- experiment registry used by ``experiments/`` and the CLI.
"""

__version__ = "0.1.0"

from . import lab, meanfield
from .meanfield import (
    GRPO,
    ConstantGain,
    GoodBonus,
    Neutralized,
    ScheduleA,
    ScheduleB,
    Solution,
    State,
    Verifier,
    make_state,
    solve,
)

__all__ = [
    "GRPO",
    "ConstantGain",
    "GoodBonus",
    "Neutralized",
    "ScheduleA",
    "ScheduleB",
    "Solution",
    "State",
    "Verifier",
    "__version__",
    "lab",
    "make_state",
    "meanfield",
    "solve",
]
