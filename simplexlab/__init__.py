"""simplexlab: mean-field dynamics of RLVR (GRPO and variants) on the probability simplex.

Public namespaces:

- :mod:`simplexlab.meanfield` -- the (p, y, z) mean-field ODEs of G²RPO (§3, App. A, C, D) and
  ``solve``; the most used names are re-exported here.
- :mod:`simplexlab.geometry` -- bonus-to-drift geometry (G²RPO App. B, D): J(P), the generic
  drift η J(P)²(A + B) and its push-forward (eq. 15), closed forms, fixed points and stability.
- :mod:`simplexlab.shaping` -- group-relative advantage baselines and shaping rules (G²RPO,
  F-GRPO, IAC, GRPO-N, GRPO-TN, ProGRPO) with an explicit composition API.
- :mod:`simplexlab.metrics` -- diversity metrics (pass@k, L_y, K_eff, entropies, distinct-n, ...).
- :mod:`simplexlab.sampling` -- sampling theory: F-GRPO §3/App. A–E (activity, tail-miss, N*,
  Lemma B.1, identities 8/13) and sharpening-collapse §2 (Thm 2.2–2.4, Cor. 2.2).
- :mod:`simplexlab.categorical` -- the softmax categorical policy simulator of F-GRPO App. J
  (count sampler, count-form surrogate gradients, optax optimizers, ``lax.scan`` runs).
- :mod:`simplexlab.lab` -- experiment registry used by ``experiments/`` and the CLI.
"""

__version__ = "0.1.0"

from . import categorical, geometry, lab, meanfield, metrics, sampling, shaping
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
    solve_ensemble,
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
    "categorical",
    "geometry",
    "lab",
    "make_state",
    "meanfield",
    "metrics",
    "sampling",
    "shaping",
    "solve",
    "solve_ensemble",
]
