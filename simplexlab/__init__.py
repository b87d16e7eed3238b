"""simplexlab: mean-field dynamics of RLVR (GRPO and variants) on the probability simplex.

Public namespaces, one per layer; every public object has one address, its layer's face (and
the few most used names of the theory are re-exported here):

- :mod:`simplexlab.theory` -- the maths: the (p, y, z) mean-field ODEs of G²RPO (§3, App. A, C,
  D) and ``solve`` / ``solve_ensemble``; the finite-group theory of any advantage rule
  (:class:`~simplexlab.theory.FiniteGroup`); bonus-to-drift geometry (G²RPO App. B, D: J(P), the
  generic drift η J(P)²(A + B), closed forms, fixed points and stability); sampling theory
  (F-GRPO §3 / App. A–E, sharpening-collapse §2).
- :mod:`simplexlab.shaping` -- group-relative advantage rules (GRPO and its variants, G²RPO,
  F-GRPO, IAC, GRPO-N, ProGRPO, the rules of TRL, verl and NeMo-RL, user rules) with an explicit
  composition API, and the diversity metrics (pass@k, L_y, K_eff, entropies, distinct-n, ...).
- :mod:`simplexlab.sim` -- the simulator protocol (``init`` / ``step`` / ``observe``) and the
  simulators built on it, the softmax categorical policy of F-GRPO App. J among them.
- :mod:`simplexlab.sweep` -- the sweep engine: grids over any simulator or the ODE ensemble,
  sharded over devices and processes, chunked, resumable, saved as an xarray ``Dataset``.
- :mod:`simplexlab.verify` -- verified G²RPO gain schedules (five checks, the report, the
  schedule files), user rules checked the same way, and the group-size planner.
- :mod:`simplexlab.lab` -- experiment registry, result files, claims, CLI and plotting.
- :mod:`simplexlab.llm` -- the bridge to torch and the TRL / verl adapters (optional extras).

Layers (each imports only the ones before it): ``theory`` (maths) → ``shaping`` → ``sim`` →
``sweep`` → ``verify`` → ``lab``; each layer's ``__init__`` is its public face.
``import simplexlab`` imports nothing heavy: each namespace (and JAX) is imported on first
access, so ``simplexlab --help`` answers at once and the command line can set ``XLA_FLAGS``
before JAX starts.

Docstrings cite the papers by key -- G2 (G²RPO), SC, FG (F-GRPO), TS, PG (ProGRPO) -- or by the
method name in brackets, with the papers' own numbers (``SC Thm 2.4``, ``G²RPO eq. (56)``);
:data:`simplexlab.lab.BIBLIOGRAPHY` and :func:`simplexlab.lab.cite` give the full references.
"""

import importlib as _importlib
from typing import TYPE_CHECKING

_SUBMODULES = ("lab", "shaping", "sim", "sweep", "theory", "verify")
_FROM_THEORY = ("GRPO", "ConstantGain", "GoodBonus", "Neutralized", "ScheduleA", "ScheduleB",
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
    "lab",
    "make_state",
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
    if name in _FROM_THEORY:
        return getattr(_importlib.import_module(".theory", __name__), name)
    raise AttributeError(f"module 'simplexlab' has no attribute {name!r}")


def __dir__():
    return __all__


if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names above load lazily
    from . import lab, shaping, sim, sweep, theory, verify
    from ._version import __version__
    from .theory import (
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
