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
(:meth:`ClaimContext.cached`). :func:`evaluate_claims` runs claims and :func:`write_report` writes
``OUT/claims/claims.json`` (schema: the module constant :data:`SCHEMA`), ``claims.md`` (one line
per claim) and the robustness-map PNGs, atomically, with provenance.
"""

from __future__ import annotations

import dataclasses
import io
import math
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._bibliography import BIBLIOGRAPHY, cite
from .._results import atomic_write_bytes, atomic_write_json, provenance, read_json, to_jsonable

__all__ = ["Claim", "ClaimContext", "Fault", "Verdict", "boundary_text", "claim", "claims_registry",
           "combine", "crossed_ci", "crossed_resamples", "crossing", "evaluate_claims",
           "first_event", "injected_faults", "kaplan_meier", "load_claims", "mean_ci",
           "not_checkable", "paired_ci", "restricted_mean", "side", "unchecked_registry",
           "write_report"]

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
#: the status of a claim whose evaluation raised: not a verdict, never counted as "no"
FAILED = "failed"
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
LEVEL = 0.95  #: confidence level of every interval

_CLAIMS: dict[str, Claim] = {}
_UNCHECKED: dict[str, Unchecked] = {}
_INJECTED: list[Fault] = []  #: the faults in place now (:meth:`Fault.inject`), innermost last


# ---- statistics ------------------------------------------------------------------------------

def mean_ci(x, level: float = LEVEL) -> tuple[float, float, float]:
    """Mean of the per-seed values ``x`` and its Student-t ``level`` interval (NaNs dropped)."""
    from scipy import stats

    v = np.asarray(x, float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    m = float(v.mean())
    if v.size < 2:
        return m, m, m
    half = float(stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return m, m - half, m + half


def crossed_resamples(n_seeds: int, n_draws: int, n_boot: int = 2000, seed: int = 0):
    """Index arrays ``(seeds (n_boot, n_seeds), draws (n_boot, n_draws))`` of the two-way
    bootstrap of a crossed design (every seed runs on every random draw: prompt starts,
    instances): seeds and draws are resampled independently, with replacement. Use the same
    resamples for every grid point of one comparison (paired)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_seeds, (n_boot, n_seeds)), rng.integers(0, n_draws, (n_boot, n_draws))


def crossed_ci(x, level: float = LEVEL, resamples=None) -> tuple[float, float, float]:
    """Mean of ``x`` (``(seed, draw)``: one value per seed and random draw of the setting) and
    the percentile interval of the two-way bootstrap (:func:`crossed_resamples`), which covers
    the draw as well as the seeds: a setting that draws prompt starts at random is judged over
    the population of starts, not one of them."""
    x = np.asarray(x, float)
    if x.ndim != 2:
        raise ValueError(f"crossed_ci needs a (seed, draw) array; got shape {x.shape}")
    si, di = crossed_resamples(*x.shape) if resamples is None else resamples
    boots = np.take_along_axis(x[si], di[:, None, :], axis=2).mean((1, 2))  # (n_boot,)
    lo, hi = np.quantile(boots, [0.5 - level / 2, 0.5 + level / 2])
    return float(x.mean()), float(lo), float(hi)


def paired_ci(a, b, level: float = LEVEL) -> tuple[float, float, float]:
    """Mean of ``a − b`` over paired seeds (same keys) and its interval."""
    return mean_ci(np.asarray(a, float) - np.asarray(b, float), level)


def first_event(series, steps, threshold: float, *, above: bool = True):
    """Per run, the first recorded step at which ``series`` (``(..., step)``) reaches
    ``threshold`` (``≥`` if ``above``, else ``≤``); ``inf`` where it never does within the
    record: a censored run, not an event."""
    s = np.asarray(series, float)
    hit = s >= threshold if above else s <= threshold
    steps = np.asarray(steps, float)
    first = np.argmax(hit, axis=-1)
    return np.where(hit.any(-1), steps[first], np.inf)


def kaplan_meier(times, event, grid) -> np.ndarray:
    """The Kaplan–Meier estimate of the fraction that has had the event by each step of
    ``grid``: ``1 − Π_{t_i ≤ t} (1 − d_i / n_i)`` over the event times ``t_i`` (``d_i`` events,
    ``n_i`` runs still at risk, censored runs leaving the risk set at their censoring time)."""
    times, event = np.asarray(times, float), np.asarray(event, bool)
    surv, out = 1.0, []
    ev_times = np.unique(times[event])
    factors = {t: 1.0 - np.sum((times == t) & event) / np.sum(times >= t) for t in ev_times}
    j = 0
    for g in grid:
        while j < ev_times.size and ev_times[j] <= g:
            surv *= factors[ev_times[j]]
            j += 1
        out.append(1.0 - surv)
    return np.asarray(out)


def restricted_mean(times, horizon: float, level: float = LEVEL) -> tuple[float, float, float]:
    """Restricted mean time to the event up to ``horizon`` (the area under the Kaplan–Meier
    survival curve; with every censoring at the horizon, the mean of ``min(T, horizon)``) and
    its interval: a time-to-event statistic that counts runs without the event as censored."""
    t = np.minimum(np.asarray(times, float), horizon)
    return mean_ci(t, level)


def side(lo: float, mean: float, hi: float, direction: int = 1) -> str:
    """``"yes"`` when the interval lies on the claimed side of 0 (``direction`` +1: positive),
    ``"partly"`` when only the estimate does, ``"no"`` otherwise."""
    lo, mean, hi = (direction * v for v in (lo, mean, hi))
    lo, hi = min(lo, hi), max(lo, hi)
    if lo > 0:
        return "yes"
    return "partly" if mean > 0 else "no"


def combine(statuses: Sequence[str]) -> str:
    """The status of a compound claim: yes if every part holds, no if none does, else partly."""
    s = set(statuses)
    if s == {"yes"}:
        return "yes"
    if s <= {"no"}:
        return "no"
    return "partly"


def crossing(values, effects) -> float | None:
    """Where ``effects`` (over increasing ``values``) first changes sign, by linear
    interpolation; ``None`` when it never does."""
    v, e = np.asarray(values, float), np.asarray(effects, float)
    for i in range(len(v) - 1):
        if np.sign(e[i]) != np.sign(e[i + 1]) and np.isfinite(e[i]) and np.isfinite(e[i + 1]):
            return float(v[i] + (v[i + 1] - v[i]) * e[i] / (e[i] - e[i + 1]))
    return None


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def boundary_text(axes: dict[str, Sequence], holds, *, along: str | None = None,
                  informative=None) -> str:
    """Where a claim holds on its grid, in words. ``axes``: the grid's axes in the order of
    ``holds`` (a boolean array); ``along``: the axis to read thresholds on (default the first),
    one clause per point of the other axes; ``informative``: the points that can tell (default
    all): the clauses read only those, and the others are named at the end."""
    holds = np.asarray(holds, bool)
    inf = (np.ones(holds.shape, bool) if informative is None
           else np.asarray(informative, bool))
    names = list(axes)
    blind = [", ".join(f"{n} = {_fmt(axes[n][i])}" for n, i in zip(names, idx, strict=True))
             for idx in zip(*np.nonzero(~inf), strict=True)]
    tail = (f"; cannot tell at {len(blind)} of {inf.size} points (within noise or censored in "
            "both arms): " + "; ".join(blind)) if blind else ""
    if not inf.any():
        return "cannot tell anywhere on the grid" + tail
    if holds[inf].all():
        return ("holds on the whole grid" if not blind else "holds wherever it can tell") + tail
    if not holds[inf].any():
        return ("fails on the whole grid" if not blind else "fails wherever it can tell") + tail
    along = along or names[0]
    ax = names.index(along)
    h, known = np.moveaxis(holds, ax, -1), np.moveaxis(inf, ax, -1)
    all_vals = list(axes[along])
    others = [n for n in names if n != along]
    clauses = []
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in all_vals)
    for idx in np.ndindex(*h.shape[:-1]):
        row, vals = h[idx][known[idx]], [v for v, k in zip(all_vals, known[idx], strict=True)
                                         if k]
        where = ", ".join(f"{n} = {_fmt(axes[n][i])}" for n, i in zip(others, idx, strict=True))
        at = f" at {where}" if where else ""
        if not vals:
            continue  # named in the tail
        if row.all():
            txt = "always"
        elif not row.any():
            txt = (f"never for {along} in [{_fmt(vals[0])}, {_fmt(vals[-1])}]" if numeric
                   else "never")
        elif not numeric:
            at_ok = ", ".join(_fmt(v) for v, ok in zip(vals, row, strict=True) if ok)
            txt = f"only for {along} ∈ {{{at_ok}}}"
        elif row[-1] and not row[: int(np.argmax(row))].any() and row[int(np.argmax(row)):].all():
            txt = f"needs {along} ≥ {_fmt(vals[int(np.argmax(row))])}"
        elif row[0] and row[: int(np.argmin(row))].all() and not row[int(np.argmin(row)):].any():
            txt = f"needs {along} ≤ {_fmt(vals[int(np.argmin(row)) - 1])}"
        else:
            at_ok = ", ".join(_fmt(v) for v, ok in zip(vals, row, strict=True) if ok)
            txt = f"holds at {along} ∈ {{{at_ok}}}"
        clauses.append(txt + at)
    return "; ".join(clauses) + tail


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
        """A context manager: the fault in place (compiled JAX programs cleared on entry and
        exit, so that no program traced with the right function serves the faulty one; a
        per-process memo of computed results keys on :func:`injected_faults` for the same
        reason)."""
        import contextlib

        import jax

        @contextlib.contextmanager
        def injected():
            mod, attr = self._resolve()
            original = getattr(mod, attr)
            setattr(mod, attr, self.make(original))
            _INJECTED.append(self)
            jax.clear_caches()
            try:
                yield
            finally:
                setattr(mod, attr, original)
                _INJECTED.remove(self)
                jax.clear_caches()

        return injected()


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


def claim(name: str, *, paper: str, source: str, sentence: str, experiment: str | None,
          paper_setting: dict, grid: dict, uses_committed_result: bool = False,
          faults: Sequence[Fault] = ()):
    """Register ``evaluate(ctx) -> Verdict`` as the claim ``name`` (kebab-case, unique).
    ``paper``: a key of :data:`PAPERS`; ``source``: figure / equation; ``sentence``: the
    paper's words; ``experiment``: the registered experiment it belongs to; ``paper_setting``:
    the setting at which "holds at the paper's setting" is judged; ``grid``: the robustness
    grid's axes and values (``{"quick": {...}, "full": {...}}`` or one dict for both)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"claim name must be kebab-case (a-z, 0-9, single '-'); got {name!r}")
    if paper not in PAPERS:
        raise ValueError(f"claim {name!r}: paper must be one of {sorted(PAPERS)}; got {paper!r}")

    def register(func):
        src = getattr(sys.modules.get(func.__module__), "__file__", None) or func.__module__
        prev = _CLAIMS.get(name)
        if prev is not None and Path(prev.module).resolve() != Path(src).resolve():
            raise ValueError(f"claim {name!r} registered twice ({prev.module} and {src})")
        _CLAIMS[name] = Claim(name, paper, source, " ".join(sentence.split()), experiment,
                              dict(paper_setting), dict(grid), func, str(src),
                              uses_committed_result, tuple(faults))
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
            "uses_committed_result": c.uses_committed_result, "seconds": round(seconds, 2)}
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


def evaluate_claims(claims: Sequence[Claim], *, quick: bool = True, seed: int = 0,
                    log: Callable[[str], None] | None = print) -> list[dict]:
    """Evaluate ``claims`` (sharing simulation results) and return their report entries; a
    claim whose evaluation raises is reported as failed (its error in the entry), the others
    go on."""
    from ._registry import find_experiments_dir

    try:
        root = find_experiments_dir().parent
    except FileNotFoundError:
        root = None
    ctx = ClaimContext(quick=quick, seed=seed, root=root)
    entries = []
    n = len(claims)
    for i, c in enumerate(claims, 1):
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


# ---- the report ------------------------------------------------------------------------------

def _status_line(e: dict) -> str:
    from ._status import status_line  # the figures' line, word for word

    return status_line(e)


def count_line(entries: list[dict], unchecked: int | None = None) -> str:
    """``"33 claims: 20 hold, 8 partly, 5 do not hold at the paper's setting"`` (and how many
    evaluations failed, when any did: a failure is no verdict; and, given ``unchecked``, how
    many statements are not checkable)."""
    counts = {s: sum(e["holds_at_paper"] == s for e in entries) for s in (*STATUSES, FAILED)}
    text = (f"{len(entries)} claims: {counts['yes']} hold, {counts['partly']} partly, "
            f"{counts['no']} do not hold at the paper's setting")
    if counts[FAILED]:
        text += f"; {counts[FAILED]} could not be evaluated (their evaluation failed)"
    if unchecked:
        text += f"; {unchecked} statements not checkable"
    return text


def _why_no(e: dict) -> str:
    """A "no" claim's line at the top of the report: the criterion, its value and interval at
    the paper's setting, and the lab's computation of the reason."""
    ci = e.get("ci") or [None, None]
    eff = "–" if e.get("effect") is None else (
        f"{e['effect']:.3g} [{ci[0]:.3g}, {ci[1]:.3g}]" if None not in ci else
        f"{e['effect']:.3g}")
    why = f"- `{e['name']}` ({e['paper']} {e['source']}): {e.get('criterion', '')} = {eff}"
    return why + (f". {e['reason']}" if e.get("reason") else "")


def _md(entries: list[dict], mode: str, prov: dict, unchecked: Sequence[dict] = ()) -> str:
    rev = prov.get("git_revision") or prov.get("git", {}) or "unknown"
    noes = [e for e in entries if e["holds_at_paper"] == "no"]
    lines = [f"# Claims report ({mode} mode)", "",
             f"**{count_line(entries, len(unchecked))}.**", "",
             f"Written by `simplexlab claims{' --full' if mode == 'full' else ''}` "
             f"(revision {rev}). One line per claim: holds at the paper's setting (yes / partly "
             "/ no, judged on a 95 % interval over seeds), the fraction of its robustness grid "
             "where it holds (grid points that cannot tell left out), and where it fails. The "
             "criterion, the grid and every number are in `claims.json`; robustness maps: "
             "`robustness_*.png`.", ""]
    if noes:
        lines += ["## Why each \"no\"", "", *map(_why_no, noes), ""]
    lines += ["## Claims", "",
              "| claim | paper, source | experiment | at paper's setting | effect [95 % CI] "
              "| robust | boundary; reason |", "|---|---|---|---|---|---|---|"]
    for e in entries:
        eff = "–" if e["effect"] is None else (
            f"{e['effect']:.3g} [{e['ci'][0]:.3g}, {e['ci'][1]:.3g}]"
            if None not in e["ci"] else f"{e['effect']:.3g}")
        why = e["boundary"] + (f"; {e['reason']}" if e.get("reason") else "")
        frac = e["robustness_fraction"]
        robust = "–" if frac is None else f"{frac:.0%}"
        lines.append(f"| `{e['name']}` | {e['paper']} {e['source']} | {e['experiment'] or '–'} "
                     f"| {e['holds_at_paper']} | {eff} | {robust} | "
                     f"{why.replace('|', '/')} |")
    if unchecked:
        lines += ["", "## Statements not checkable", "",
                  "| statement | paper, source | the paper's words | why not |",
                  "|---|---|---|---|"]
        lines += [f"| `{u['name']}` | {u['paper']} {u['source']} | {u['sentence']} | "
                  f"{u['why'].replace('|', '/')} |" for u in unchecked]
    cited = [k for k in BIBLIOGRAPHY if any(e["paper"] == k for e in entries)
             or any(u["paper"] == k for u in unchecked)]
    if cited:
        lines += ["", "## References", "", *(f"- **{k}**: {cite(k)}" for k in cited)]
    lines += ["", count_line(entries, len(unchecked)) + ".", ""]
    return "\n".join(lines)


def _maps(entries: list[dict], folder: Path) -> list[str]:
    """One robustness-map PNG per paper: a panel per claim, green where it holds, red where it
    fails, grey where the point cannot tell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    written = []
    cmap = ListedColormap(["#d73027", "#bdbdbd", "#1a9850"])  # fails, cannot tell, holds
    for paper in PAPERS:
        es = [e for e in entries if e["paper"] == paper and e["grid"].get("axes")]
        if not es:
            continue
        cols = min(4, len(es))
        rows = math.ceil(len(es) / cols)
        fig, axs = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.9 * rows), squeeze=False)
        for ax in axs.ravel()[len(es):]:
            ax.axis("off")
        for ax, e in zip(axs.ravel(), es, strict=False):
            axes = e["grid"]["axes"]
            names = list(axes)
            h = np.asarray(e["grid"]["holds"], float)
            inf = np.asarray(e["grid"].get("informative", np.ones(h.shape, bool)), bool)
            h = np.where(inf, h, 0.5)
            if h.ndim == 1:
                h = h[None, :]
                ylab, yt = "", [""]
            else:
                h = h.reshape(h.shape[0], -1) if h.ndim > 2 else h
                ylab = names[0]
                yt = [_fmt(v) for v in axes[names[0]]]
            xname = names[-1] if len(names) <= 2 else " × ".join(names[1:])
            xt = ([_fmt(v) for v in axes[names[-1]]] if len(names) <= 2 else
                  [",".join(_fmt(axes[n][i]) for n, i in zip(names[1:], t, strict=True))
                   for t in np.ndindex(*[len(axes[n]) for n in names[1:]])])
            ax.imshow(h, cmap=cmap, vmin=0, vmax=1, aspect="auto", origin="lower")
            ax.set_xticks(range(len(xt)), xt, fontsize=7, rotation=45 if len(xt) > 5 else 0)
            ax.set_yticks(range(len(yt)), yt, fontsize=7)
            ax.set_xlabel(xname, fontsize=8)
            ax.set_ylabel(ylab, fontsize=8)
            mark = "★ " if e["holds_at_paper"] == "yes" else ""
            frac = e["robustness_fraction"]
            where = "–" if frac is None else f"{frac:.0%}"
            of = "of grid" if inf.all() else f"of the {int(inf.sum())} points that can tell"
            ax.set_title(f"{mark}{e['name']}\nat paper: {e['holds_at_paper']}, {where} {of}",
                         fontsize=8)
        fig.suptitle(f"Robustness maps, {PAPERS[paper]} (green: the claim holds; red: it fails; "
                     "grey: cannot tell, within noise or censored)", fontsize=10)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=80)
        plt.close(fig)
        name = f"robustness_{paper}.png"
        atomic_write_bytes(folder / name, buf.getvalue())
        written.append(name)
    return written


def write_report(entries: list[dict], out: str | os.PathLike, *, quick: bool,
                 merge: bool = True, maps: bool = True) -> Path:
    """Write ``out/claims/claims.json`` and ``claims.md`` (and the robustness maps) atomically.
    With ``merge``, entries of claims not in ``entries`` are kept from an existing report of
    the same mode, in registry order."""
    folder = Path(out) / "claims"
    mode = "quick" if quick else "full"
    path = folder / "claims.json"
    if merge and path.is_file():
        try:
            old = read_json(path)
        except (OSError, ValueError):
            old = None
        if isinstance(old, dict) and old.get("mode") == mode:
            new = {e["name"] for e in entries}
            order = list(claims_registry())
            kept = [e for e in old.get("claims", []) if e.get("name") not in new
                    and e.get("name") in order]
            entries = sorted([*kept, *entries], key=lambda e: order.index(e["name"])
                             if e["name"] in order else len(order))
    prov = provenance()
    unchecked = [dataclasses.asdict(u) for u in unchecked_registry().values()]
    payload = {"provenance": prov, "mode": mode, "schema": list(SCHEMA),
               "claims": to_jsonable(entries), "not_checkable": unchecked}
    figs = _maps(entries, folder) if maps else []
    payload["figures"] = figs
    atomic_write_bytes(folder / "claims.md", _md(entries, mode, prov, unchecked).encode())
    atomic_write_json(path, payload)
    return path
