"""The statistics of the claims (:mod:`simplexlab.lab._claims`): intervals over seeds
(:func:`mean_ci`, :func:`paired_ci`) and over seeds crossed with random draws
(:func:`crossed_ci`), time-to-event estimates with censoring (:func:`first_event`,
:func:`kaplan_meier`, :func:`restricted_mean`), the verdict at one point (:func:`side`,
:func:`combine`), a threshold by interpolation (:func:`crossing`) and the text that says where a
robustness grid fails (:func:`boundary_text`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["LEVEL", "boundary_text", "combine", "crossed_ci", "crossed_resamples", "crossing",
           "first_event", "interval", "kaplan_meier", "mean_ci", "paired_ci", "restricted_mean",
           "side"]

LEVEL = 0.95  #: confidence level of every interval

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


def interval(x, level: float = LEVEL) -> tuple[float, float, float]:
    """``(lo, mean, hi)``, the order :func:`side` takes: over seeds for a 1-d ``x``
    (:func:`mean_ci`), over seeds crossed with random draws for a ``(seed, draw)`` ``x``
    (:func:`crossed_ci`)."""
    m, lo, hi = crossed_ci(x, level) if np.ndim(x) == 2 else mean_ci(x, level)
    return lo, m, hi


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
