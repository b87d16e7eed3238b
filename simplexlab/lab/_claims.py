"""Claims as code: every statement the lab reproduces from the papers, as a named, checked result
with its robustness map.

A claim (:class:`Claim`, registered with :func:`claim` from ``experiments/claims/*.py``, loaded
like the experiments) states its source (paper, figure or equation, the paper's sentence), the
paper's setting, the registered experiment it belongs to, and an ``evaluate(ctx)`` that computes
a :class:`Verdict` from simulation results:

- the criterion's **effect with a confidence interval over seeds** (never a threshold on one
  run; :func:`mean_ci`, :func:`paired_ci`; time-to-event claims use :func:`first_event` and
  :func:`restricted_mean`, where a run that has not had the event by the horizon is censored
  there, not counted as an event);
- whether it holds at the paper's setting (``"yes"``: the interval lies on the claimed side;
  ``"no"``: the estimate lies on the other side; ``"partly"``: the estimate is on the claimed
  side but the interval is not, or some parts of a compound claim hold and others do not:
  :func:`side`, :func:`combine`);
- a **robustness grid** over the settings the paper leaves open (step size, group size,
  optimizer, advantage rule, temperature, verifier noise, ...), run through
  :func:`simplexlab.sweep.run` or a simulator's batched API, with a boolean per grid point and,
  where a point cannot tell (the effect is within numerical noise, or the horizon censors both
  arms), a mask of the informative points; the robustness fraction is the share of informative
  points where the claim holds, and :func:`boundary_text` says where it fails.

Simulation results shared by several claims are computed once per evaluation
(:meth:`ClaimContext.cached`). :func:`evaluate_claims` runs claims; the statistics are in
:mod:`simplexlab.lab._stats`, the report (``OUT/claims/claims.json`` with the schema
:data:`SCHEMA`, ``claims.md``, the robustness maps) in :mod:`simplexlab.lab._report`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from .._env import release_programs_near_map_limit
from ._stats import boundary_text

__all__ = ["FAILED", "KINDS", "PAPERS", "SCHEMA", "STATUSES", "Claim", "ClaimContext", "Fault",
           "Unchecked", "Verdict", "claim", "claims_registry", "default_kind", "evaluate_claims",
           "injected_faults", "load_claims", "not_checkable", "select_claims",
           "unchecked_registry"]

#: the fields of every claim entry of ``claims.json`` (the interface of CLAIMS_SCHEMA.md)
SCHEMA = ("name", "paper", "source", "sentence", "experiment", "holds_at_paper", "effect", "ci",
          "robustness_fraction", "boundary", "paper_setting", "grid")
#: the sources of claims: the papers of the bibliography (:data:`BIBLIOGRAPHY`, by key) and two
#: that are not papers
PAPERS = {"TS": "two-stage RLVR (TS)", "SC": "sharpening collapse (SC)", "FG": "F-GRPO (FG)",
          "G2": "G²RPO (G2)", "PG": "ProGRPO (PG)",
          "LLM": "G²RPO §5 at LLM scale (embedded task)",
          "SL": "simplexlab's own predictions (the finite-group theory against the bandit)"}
_NOT_PAPERS = ("LLM", "SL")
STATUSES = ("yes", "partly", "no")
#: what a claim checks, and so what its "no" means: kind -> (what it checks, the report's words
#: for its "no"s, which split the headline's count). Declared with ``claim(kind=...)``; by
#: default a claim on a committed run is ``"committed-run"``, one of the lab's own sources
#: (:data:`PAPERS` ``SL``) ``"own"``, any other ``"paper"`` (:func:`default_kind`).
KINDS = {
    "paper": ("a paper's statement, computed by the lab at the paper's setting",
              "where the lab's computation contradicts the paper"),
    "committed-run": ("a paper's figure, checked on the lab's committed run of its experiment",
                      "where the lab's committed run does not reproduce the figure"),
    "finite-group": ("a paper's statement about the dynamics, most of them of its mean field "
                     "(G → ∞), checked on the lab's finite-group bandit at the paper's G",
                     "where the finite-group bandit does not show it at the paper's G"),
    "own": ("the lab's own prediction (not a paper's)", "of the lab's own predictions"),
}
#: the status of a claim whose evaluation raised: not a verdict, never counted as "no"
FAILED = "failed"
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

_CLAIMS: dict[str, Claim] = {}
_UNCHECKED: dict[str, Unchecked] = {}
_INJECTED: list[Fault] = []  #: the faults in place now (:meth:`Fault.inject`), innermost last


# ---- claims ----------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Verdict:
    """What :meth:`Claim.evaluate` returns.

    ``holds_at_paper``: yes / partly / no; ``effect`` and ``ci``: the criterion's effect at the
    paper's setting and its interval (``criterion`` says what it is and on which side the claim
    holds); ``grid_axes`` / ``grid_holds`` (and optionally ``grid_effect``): the robustness grid
    and where the claim holds on it; ``grid_informative``: the grid points that can tell
    (default all; a point whose effect is within numerical noise, or where the horizon censors
    both arms, cannot: it is left out of the robustness fraction and drawn grey);
    ``boundary``: where it fails (default: from the grid);
    ``reason``: where mean field and finite G (or the paper and the computation) disagree, the
    reason the lab can compute; ``details``: further numbers for the JSON."""

    holds_at_paper: str
    effect: float
    ci: tuple[float, float]
    criterion: str
    grid_axes: dict[str, list]
    grid_holds: Any
    grid_effect: Any = None
    boundary: str | None = None
    reason: str = ""
    details: dict = dataclasses.field(default_factory=dict)
    grid_informative: Any = None

    def __post_init__(self):
        if self.holds_at_paper not in STATUSES:
            raise ValueError(f"holds_at_paper must be one of {STATUSES}; got "
                             f"{self.holds_at_paper!r}")
        shape = tuple(len(v) for v in self.grid_axes.values())
        if np.shape(self.grid_holds) != shape:
            raise ValueError(f"grid_holds has shape {np.shape(self.grid_holds)}; the grid axes "
                             f"{list(self.grid_axes)} give {shape}")
        if self.grid_informative is not None and np.shape(self.grid_informative) != shape:
            raise ValueError(f"grid_informative has shape {np.shape(self.grid_informative)}; "
                             f"the grid axes {list(self.grid_axes)} give {shape}")

    @property
    def informative(self) -> np.ndarray:
        """The grid points that can tell (all unless ``grid_informative`` says otherwise)."""
        if self.grid_informative is None:
            return np.ones(np.shape(self.grid_holds), bool)
        return np.asarray(self.grid_informative, bool)

    @property
    def robustness_fraction(self) -> float:
        """The share of the informative grid points where the claim holds (NaN if none is)."""
        inf = self.informative
        if not inf.any():
            return math.nan
        return float(np.mean(np.asarray(self.grid_holds, bool)[inf]))


@dataclasses.dataclass(frozen=True)
class Fault:
    """A plausible bug of the library a claim rests on: ``target`` (``"package.module.name"``,
    the function where the library defines or exports it) is replaced, while the fault is
    injected, by ``make(original)`` (a dropped factor, a swapped sign, a wrong count). A claim
    that can fail changes its verdict under each of its faults (``tests/test_claims.py``)."""

    name: str
    target: str
    make: Callable[[Callable], Callable]

    def _resolve(self):
        import importlib

        module, _, attr = self.target.rpartition(".")
        return importlib.import_module(module), attr

    def inject(self):
        """A context manager: the fault in place. While it is, JAX's caches of traced and
        compiled programs are keyed on it (a ``jax.make_user_context`` value, set globally as
        the fault itself is), so no program traced with the right function serves the faulty
        one, and none traced with the fault serves anyone after it: the programs compiled before
        it stay and serve again once it is out (before, every injection cleared all of JAX's
        caches on entry and exit, and everything after it compiled again). A per-process memo
        of computed results keys on :func:`injected_faults` for the same reason."""
        import contextlib

        @contextlib.contextmanager
        def injected():
            mod, attr = self._resolve()
            original = getattr(mod, attr)
            before = _FAULT_CONTEXT.get_global()
            setattr(mod, attr, self.make(original))
            _INJECTED.append(self)
            _FAULT_CONTEXT.set_global(injected_faults())
            try:
                yield
            finally:
                setattr(mod, attr, original)
                _INJECTED.remove(self)
                _FAULT_CONTEXT.set_global(before)
                # the fault's programs are never called again: dropped, with the rest, when
                # the process holds many (each keeps memory mapped)
                release_programs_near_map_limit()

        return injected()


#: The ``jax.make_user_context`` that the jit caches key on while a fault is injected. Made once,
#: when this module is imported: JAX asks that none be made concurrently with its other calls,
#: and making one changes the key of every trace, so that each program traced before it would be
#: traced again after it (made on the first injection, it cost one retrace of every program the
#: process held, and the test of that passed only after another fault test in its process).
_FAULT_CONTEXT = jax.make_user_context(None)


def injected_faults() -> tuple:
    """The faults injected now (:meth:`Fault.inject`; empty outside the fault tests), each as
    ``(target, name, id)``: a per-process memo of results computed from the library (e.g. an
    experiment's data shared with its claims) puts this in its key, so that a fault injected
    later is never served a result computed without it, and the memo still serves the
    evaluations without a fault."""
    return tuple((f.target, f.name, id(f)) for f in _INJECTED)


@dataclasses.dataclass(frozen=True)
class Claim:
    """A paper's statement as a checked result (module docstring)."""

    name: str
    paper: str
    source: str
    sentence: str
    experiment: str | None
    paper_setting: dict
    grid: dict
    evaluate: Callable[[ClaimContext], Verdict]
    module: str = ""
    uses_committed_result: bool = False
    faults: tuple[Fault, ...] = ()
    kind: str = "paper"  #: a key of :data:`KINDS`


def default_kind(paper: str, uses_committed_result: bool = False) -> str:
    """The kind (:data:`KINDS`) of a claim that declares none: ``"committed-run"`` when it
    checks a committed run, ``"own"`` for the lab's own predictions (``SL``), else
    ``"paper"``."""
    if uses_committed_result:
        return "committed-run"
    return "own" if paper == "SL" else "paper"


def claim(name: str, *, paper: str, source: str, sentence: str, experiment: str | None,
          paper_setting: dict, grid: dict, uses_committed_result: bool = False,
          faults: Sequence[Fault] = (), kind: str | None = None):
    """Register ``evaluate(ctx) -> Verdict`` as the claim ``name`` (kebab-case, unique).
    ``paper``: a key of :data:`PAPERS`; ``source``: figure / equation; ``sentence``: the
    paper's words; ``experiment``: the registered experiment it belongs to; ``paper_setting``:
    the setting at which "holds at the paper's setting" is judged; ``grid``: the robustness
    grid's axes and values (``{"quick": {...}, "full": {...}}`` or one dict for both);
    ``kind``: what the claim checks, a key of :data:`KINDS` (default :func:`default_kind`), which
    says what its "no" means in the report."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"claim name must be kebab-case (a-z, 0-9, single '-'); got {name!r}")
    if paper not in PAPERS:
        raise ValueError(f"claim {name!r}: paper must be one of {sorted(PAPERS)}; got {paper!r}")
    if kind is not None and kind not in KINDS:
        raise ValueError(f"claim {name!r}: kind must be one of {list(KINDS)}; got {kind!r}")
    kind = default_kind(paper, uses_committed_result) if kind is None else kind

    def register(func):
        src = getattr(sys.modules.get(func.__module__), "__file__", None) or func.__module__
        prev = _CLAIMS.get(name)
        if prev is not None and Path(prev.module).resolve() != Path(src).resolve():
            raise ValueError(f"claim {name!r} registered twice ({prev.module} and {src})")
        _CLAIMS[name] = Claim(name, paper, source, " ".join(sentence.split()), experiment,
                              dict(paper_setting), dict(grid), func, str(src),
                              uses_committed_result, tuple(faults), kind)
        return func

    return register


@dataclasses.dataclass(frozen=True)
class Unchecked:
    """A paper's statement the lab does not check, and why (listed in the claims report)."""

    name: str
    paper: str
    source: str
    sentence: str
    why: str


def not_checkable(name: str, *, paper: str, source: str, sentence: str, why: str) -> None:
    """Register a statement of a paper that the lab cannot check (a benchmark table of an LLM
    run, a statement with no criterion), with the reason; the claims report counts and lists
    these beside the claims, so that every checkable figure and theorem has a claim or a line
    saying why not."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"statement name must be kebab-case; got {name!r}")
    if paper not in PAPERS:
        raise ValueError(f"statement {name!r}: paper must be one of {sorted(PAPERS)}; got "
                         f"{paper!r}")
    if not why or not why.strip():
        raise ValueError(f"statement {name!r}: say why it cannot be checked")
    if name in _CLAIMS:
        raise ValueError(f"{name!r} is a claim; a statement is either checked or not")
    _UNCHECKED[name] = Unchecked(name, paper, source, " ".join(sentence.split()),
                                 " ".join(why.split()))


def unchecked_registry() -> dict[str, Unchecked]:
    """The statements registered with :func:`not_checkable`, paper by paper."""
    order = list(PAPERS)
    return dict(sorted(_UNCHECKED.items(), key=lambda kv: order.index(kv[1].paper)))


def claims_directory(directory: str | os.PathLike | None = None) -> Path:
    """``experiments/claims/`` next to the experiments (:func:`find_experiments_dir`)."""
    from ._registry import find_experiments_dir

    return find_experiments_dir(directory) / "claims"


def load_claims(directory: str | os.PathLike | None = None) -> dict[str, Claim]:
    """Import every ``experiments/claims/*.py`` (not starting with ``_``) so that its claims
    register; returns the registry in file order, then definition order."""
    from ._registry import import_file

    d = claims_directory(directory)
    for path in sorted(d.glob("*.py")):
        if path.name.startswith("_"):
            continue
        modname = f"simplexlab_claims.{path.stem}"
        if modname in sys.modules:
            continue
        import_file(modname, path)
    return claims_registry()


def claims_registry() -> dict[str, Claim]:
    """The registered claims, paper by paper (:data:`PAPERS` order), then in definition order."""
    order = list(PAPERS)
    return dict(sorted(_CLAIMS.items(), key=lambda kv: order.index(kv[1].paper)))


def select_claims(names: Sequence[str] | None = None, *, experiments: Sequence[str] | None = None,
                  directory=None) -> list[Claim]:
    """The claims named (all by default), or those of the given experiments; ``ValueError``
    listing the valid names for an unknown one."""
    reg = load_claims(directory)
    if experiments is not None:
        return [c for c in reg.values() if c.experiment in set(experiments)]
    if not names:
        return list(reg.values())
    unknown = [n for n in names if n not in reg]
    if unknown:
        raise ValueError(f"unknown claim(s) {', '.join(map(repr, unknown))}; valid names: "
                         f"{', '.join(reg)}")
    return [reg[n] for n in dict.fromkeys(names)]


@dataclasses.dataclass
class ClaimContext:
    """What a claim's ``evaluate`` receives: the mode, the seed, and a cache of simulation
    results shared by the claims of one evaluation."""

    quick: bool = True
    seed: int = 0
    cache: dict = dataclasses.field(default_factory=dict)
    root: Path | None = None  #: the checkout (committed result files), if any
    #: settings that replace a claim's own (``ctx.setting(name, default)``): the tests break a
    #: simulator on purpose (neutralizer off, zero step size, ...) to see a status flip
    overrides: dict = dataclasses.field(default_factory=dict)
    tiny: bool = False  #: test sizes (a few seeds, short runs); implies quick

    @property
    def mode(self) -> str:
        return "quick" if self.quick else "full"

    def pick(self, quick, full, tiny=None):
        """``quick`` in quick mode, ``full`` otherwise (``tiny`` at test sizes, if given)."""
        if self.tiny and tiny is not None:
            return tiny
        return quick if self.quick else full

    def setting(self, name: str, default):
        """A claim's setting ``name``: its ``default`` unless :attr:`overrides` replaces it."""
        return self.overrides.get(name, default)

    def cached(self, key, compute: Callable[[], Any]):
        """``compute()`` once per evaluation for ``key``."""
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]


def _entry(c: Claim, v: Verdict | None, mode: str, seconds: float, error: str | None) -> dict:
    grid = c.grid.get(mode, c.grid) if set(c.grid) == {"quick", "full"} else c.grid
    base = {"name": c.name, "paper": c.paper, "source": c.source, "sentence": c.sentence,
            "experiment": c.experiment, "paper_setting": c.paper_setting, "grid": grid,
            "uses_committed_result": c.uses_committed_result, "kind": c.kind,
            "seconds": round(seconds, 2)}
    if v is None:
        return {**base, "holds_at_paper": FAILED, "effect": None, "ci": [None, None],
                "robustness_fraction": None, "boundary": f"evaluation failed: {error}",
                "error": error}
    eff = None if not np.isfinite(v.effect) else float(v.effect)
    ci = [None if not np.isfinite(x) else float(x) for x in v.ci]
    boundary = v.boundary or boundary_text(v.grid_axes, v.grid_holds,
                                           informative=v.grid_informative)
    frac = v.robustness_fraction
    return {**base, "holds_at_paper": v.holds_at_paper, "effect": eff, "ci": ci,
            "criterion": v.criterion,
            "robustness_fraction": None if not np.isfinite(frac) else frac,
            "boundary": boundary, "reason": v.reason,
            "grid": {"axes": {k: list(vals) for k, vals in v.grid_axes.items()},
                     "holds": np.asarray(v.grid_holds, bool).tolist(),
                     "informative": v.informative.tolist(),
                     "effect": (None if v.grid_effect is None
                                else np.asarray(v.grid_effect, float).tolist()),
                     "declared": grid},
            "details": v.details}


def split_claims(claims):
    """``(before, after)``: the claims evaluated before their experiments run (so that the
    experiments' figures show their status) and those that check a committed run
    (``uses_committed_result``: the result file their experiment writes), evaluated after it,
    so that a full run that rewrites the file checks the new one."""
    after = [c for c in claims if c.uses_committed_result and c.experiment is not None]
    return [c for c in claims if c not in after], after


def evaluate_claims(claims: Sequence[Claim], *, quick: bool = True, seed: int = 0,
                    log: Callable[[str], None] | None = print,
                    directory: str | os.PathLike | None = None) -> list[dict]:
    """Evaluate ``claims`` (sharing simulation results) and return their report entries; a
    claim whose evaluation raises is reported as failed (its error in the entry), the others
    go on. ``directory``: the experiments' folder (``--experiments-dir``; default
    :func:`find_experiments_dir`'s), whose parent is the root a claim reads committed runs
    from (``ctx.root / "figures"``)."""
    from ._registry import find_experiments_dir

    try:
        root = find_experiments_dir(directory).parent
    except FileNotFoundError:
        root = None
    ctx = ClaimContext(quick=quick, seed=seed, root=root)
    entries = []
    n = len(claims)
    for i, c in enumerate(claims, 1):
        release_programs_near_map_limit()  # a report's many programs in one process: NOTES.md
        t0 = time.perf_counter()
        error = None
        try:
            v = c.evaluate(ctx)
            if not isinstance(v, Verdict):
                raise TypeError(f"claim {c.name!r}: evaluate must return a Verdict; got "
                                f"{type(v).__name__}")
        except KeyboardInterrupt:
            raise
        except Exception as err:  # report, go on with the others
            v, error = None, f"{type(err).__name__}: {err}"
        e = _entry(c, v, ctx.mode, time.perf_counter() - t0, error)
        entries.append(e)
        if log is not None:
            frac = e["robustness_fraction"]
            log(f"[claim {i}/{n}] {c.name}: {e['holds_at_paper']} at the paper's setting, "
                f"{'–' if frac is None else format(frac, '.0%')} of its grid "
                f"({e['seconds']:.1f}s)")
    return entries
