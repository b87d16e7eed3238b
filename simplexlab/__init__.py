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
- :mod:`simplexlab.sim` -- the simulator protocol (``init`` / ``step`` / ``observe``) and the
  simulators built on it.
- :mod:`simplexlab.sweep` -- the sweep engine: grids over any simulator or the ODE ensemble,
  sharded over devices and processes, chunked, resumable, saved as an xarray ``Dataset``.
- :mod:`simplexlab.verify` -- verified G²RPO gain schedules: five checks (flip, neutrality,
  bounded bad bonus, reached ``L_y``, bandit vs ODE), the report, the schedule files.
- :mod:`simplexlab.lab` -- experiment registry, result files, CLI and plotting.

Layers (each imports only the ones before it): ``theory`` (maths) → ``shaping`` → ``sim`` →
``sweep`` → ``verify`` → ``lab``; each layer's ``__init__`` is its public face
(:mod:`simplexlab.theory` holds the maths that ``meanfield``, ``geometry`` and ``sampling``
re-export by topic). ``import simplexlab`` imports nothing heavy: each namespace (and JAX) is
imported on first access, so ``simplexlab --help`` answers at once and the command line can set
``XLA_FLAGS`` before JAX starts.

Docstrings cite the papers by key -- G2 (G²RPO), SC, FG (F-GRPO), TS, PG (ProGRPO) -- or by the
method name in brackets, with the papers' own numbers (``SC Thm 2.4``, ``G²RPO eq. (56)``);
:data:`simplexlab.lab.BIBLIOGRAPHY` and :func:`simplexlab.lab.cite` give the full references.
"""

import importlib as _importlib
from typing import TYPE_CHECKING

_SUBMODULES = ("categorical", "geometry", "lab", "meanfield", "metrics", "plotting", "sampling",
               "shaping", "sim", "sweep", "theory", "verify")
_FROM_MEANFIELD = ("GRPO", "ConstantGain", "GoodBonus", "Neutralized", "ScheduleA", "ScheduleB",
                   "Solution", "State", "Verifier", "make_state", "solve", "solve_ensemble")

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
    "plotting",
    "sampling",
    "shaping",
    "sim",
    "solve",
    "solve_ensemble",
    "sweep",
    "theory",
    "verify",
]


def __getattr__(name):
    if name == "__version__":  # read on first use: the command line starts in milliseconds,
        from ._version import __version__  # so an early Ctrl-C meets its handler

        return __version__
    if name in _SUBMODULES:
        return _importlib.import_module(f".{name}", __name__)
    if name in _FROM_MEANFIELD:
        return getattr(_importlib.import_module(".meanfield", __name__), name)
    raise AttributeError(f"module 'simplexlab' has no attribute {name!r}")


def __dir__():
    return __all__


if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names above load lazily
    from . import (
        categorical,
        geometry,
        lab,
        meanfield,
        metrics,
        plotting,
        sampling,
        shaping,
        sim,
        sweep,
        theory,
        verify,
    )
    from ._version import __version__
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
