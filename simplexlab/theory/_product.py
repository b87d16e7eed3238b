r"""The toy product model of G²RPO App. E ("Microstate probabilities vs. macrostate masses").

A vocabulary of ``V`` tokens with fixed probabilities ``p`` (the paper: ``{A, B, C, D, E}`` with
``(0.8, 0.1, 0.05, 0.03, 0.02)``) and sequences of ``T = length`` tokens drawn i.i.d., so that
``π(h) = Π_t p(x_t)`` and ``log10 π(h) = Σ_t log10 p(x_t) = Σ_i n_i log10 p_i`` depends on the
sequence only through its token counts ``n ~ Multinomial(T, p)``.

- :func:`product_log10_prob`: ``log10 π(h)`` from token counts (App. E, the display under
  "Toy product model").
- :func:`product_log10_moments`: the closed forms the paper states -- ``log10 π(h)`` is a sum of
  ``T`` i.i.d. terms, mean ``T E[log10 p(X)]`` and standard deviation ``sqrt(T Var[log10 p(X)])``
  -- with the skewness and excess kurtosis (cumulants add: ``κ_r = T κ_r(log10 p(X))``).
- :func:`product_log10_distribution`: the *exact* law of ``log10 π(h)``, enumerating every count
  vector (``C(T + V − 1, V − 1)`` of them: 1,929,501 for the paper's ``V = 5``, ``T = 80``) with
  its multinomial probability (log space, float64), equal values merged.
- :func:`range_distribution`: the law of the within-batch range ``max − min`` of ``group_size``
  i.i.d. draws of a discrete law (Table 3's statistic for ``G = 10``), on a lattice of spacing
  ``resolution`` (every draw moved by at most ``resolution / 2``, so the range moves by at most
  ``resolution``: mean, standard deviation and quantiles are exact to within ``resolution``).
- :meth:`DiscreteDistribution.extremes`: the exact laws of the minimum and maximum of a sample
  (Table 2's ``min`` / ``max`` over ``N = 20,000`` sequences, Table 3's min / max range over
  500 batches).
- :func:`summary_statistic_laws`: the sampling law of each statistic the tables print (min, max,
  mean, standard deviation of a sample of size ``n``): its expected value, standard error and a
  central interval of probability ``1 − 2Φ(−z)`` (the ``±zσ`` band of a Gaussian), exact for the
  extremes and from the asymptotic standard errors ``σ/√n`` and ``σ sqrt((κ − 1)/(4n))`` (``κ``
  the kurtosis ``μ4/σ⁴``) for the mean and the standard deviation.

The paper's printed values (Tables 2–4) are all within the sampling noise of these laws (the
experiment ``product-model`` prints the comparison); the enumeration and the range law are NumPy
only (float64 regardless of ``jax_enable_x64``; not jittable).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import as_int, check, check_simplex, xp

__all__ = [
    "DiscreteDistribution",
    "ProductMoments",
    "StatisticLaw",
    "product_log10_distribution",
    "product_log10_moments",
    "product_log10_prob",
    "range_distribution",
    "summary_statistic_laws",
]

#: The largest number of count vectors :func:`product_log10_distribution` enumerates.
MAX_COUNT_VECTORS = 20_000_000


def _probs(probs, name: str = "probs") -> np.ndarray:
    """Concrete token probabilities: a vector on the simplex with every entry > 0 (a token of
    probability 0 is never drawn: leave it out of the vocabulary), as float64, renormalized."""
    check_simplex(probs, name)
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"{name} must be a vector (one probability per token); got shape "
                         f"{p.shape}")
    check(p, lambda a: a <= 0, f"{name} must be > 0 for every token (leave a token of "
          "probability 0 out of the vocabulary)")
    return p / p.sum()


def product_log10_prob(counts, probs):
    r"""``log10 π(h) = Σ_i n_i log10 p_i`` of sequences with token counts ``counts`` (last axis:
    one count per token) under the product model with token probabilities ``probs`` (G²RPO
    App. E). NumPy in, NumPy out; JAX arrays (also traced) in, JAX out. ``counts`` must be whole
    numbers ``>= 0`` (a ``ValueError`` naming them, or a run-time error under ``jit``)."""
    p = _probs(probs)
    if np.shape(counts)[-1:] != p.shape:
        raise ValueError(f"counts must have a last axis of length {p.size} (one count per token "
                         f"of probs); got shape {np.shape(counts)}")
    counts = check(counts, lambda a: ~xp.isfinite(a) | (a < 0) | (a != xp.round(a)),
                   "counts must be whole numbers >= 0 (token counts)")
    if not isinstance(counts, jax.Array):  # tracers are jax.Arrays too
        return np.asarray(counts, np.float64) @ np.log10(p)
    c = jnp.asarray(counts)
    dt = c.dtype if jnp.issubdtype(c.dtype, jnp.floating) else jnp.result_type(float)
    return c.astype(dt) @ jnp.asarray(np.log10(p), dt)


class ProductMoments(NamedTuple):
    """Moments of ``log10 π(h)`` under the product model (G²RPO App. E)."""

    mean: float  #: ``T E[log10 p(X)]``
    sd: float  #: ``sqrt(T Var[log10 p(X)])``
    skewness: float  #: ``γ1 / sqrt(T)`` (``γ1`` of one token's ``log10 p(X)``)
    excess_kurtosis: float  #: ``γ2 / T``


def product_log10_moments(probs, length) -> ProductMoments:
    r"""Mean, standard deviation, skewness and excess kurtosis of ``log10 π(h)`` for sequences of
    ``length`` i.i.d. tokens with probabilities ``probs`` (G²RPO App. E: "it concentrates around
    ``T E[log10 P(X)]`` with standard deviation ``sqrt(T Var(log10 P(X)))``"). The paper's model
    ``(0.8, 0.1, 0.05, 0.03, 0.02)``, ``T = 80``: mean −25.780, sd 4.153 (Table 2 prints the
    sample values −25.81 and 4.16)."""
    p = _probs(probs)
    T = as_int(length, "length", lower=1)
    x = np.log10(p)
    m1 = float(p @ x)
    c = x - m1
    k2, k3 = float(p @ c**2), float(p @ c**3)
    k4 = float(p @ c**4) - 3.0 * k2**2  # fourth cumulant of one token
    sd1 = math.sqrt(k2)
    return ProductMoments(mean=T * m1, sd=math.sqrt(T * k2),
                          skewness=(k3 / sd1**3) / math.sqrt(T) if k2 > 0 else 0.0,
                          excess_kurtosis=(k4 / k2**2) / T if k2 > 0 else 0.0)


class DiscreteDistribution(NamedTuple):
    """A law on finitely many points: sorted distinct ``values`` and their probabilities ``pmf``
    (float64 NumPy arrays, ``pmf`` sums to 1)."""

    values: np.ndarray
    pmf: np.ndarray

    def mean(self) -> float:
        return float(self.pmf @ self.values)

    def central_moment(self, k: int) -> float:
        return float(self.pmf @ (self.values - self.mean()) ** k)

    def sd(self) -> float:
        return math.sqrt(self.central_moment(2))

    def kurtosis(self) -> float:
        """``μ4 / σ⁴`` (3 for a Gaussian)."""
        return self.central_moment(4) / self.central_moment(2) ** 2

    def cdf(self, x):
        """``P(X <= x)``."""
        F = np.concatenate([[0.0], np.cumsum(self.pmf)])
        return np.minimum(F[np.searchsorted(self.values, x, side="right")], 1.0)

    def quantile(self, q):
        """The smallest value ``v`` with ``P(X <= v) >= q`` (``q`` in ``[0, 1]``)."""
        q = np.asarray(q, np.float64)
        if np.any(~((q >= 0) & (q <= 1))):
            raise ValueError(f"q must lie in [0, 1]; got {q}")
        F = np.cumsum(self.pmf)
        i = np.minimum(np.searchsorted(F, q, side="left"), self.values.size - 1)
        return self.values[i]

    def extremes(self, sample_size) -> tuple[DiscreteDistribution, DiscreteDistribution]:
        r"""The exact laws of the minimum and the maximum of ``sample_size`` i.i.d. draws:
        ``P(min >= v_i) = S_i^n`` and ``P(max <= v_i) = F_i^n`` (``S``, ``F`` the survival and
        distribution functions, each a direct cumulative sum, so neither tail cancels)."""
        n = as_int(sample_size, "sample_size", lower=1)
        F = np.minimum(np.cumsum(self.pmf), 1.0)
        S = np.minimum(np.cumsum(self.pmf[::-1])[::-1], 1.0)  # P(X >= v_i)
        Fn = F**n
        Sn = S**n
        pmax = np.diff(np.concatenate([[0.0], Fn]))
        pmin = Sn - np.concatenate([Sn[1:], [0.0]])
        return (DiscreteDistribution(self.values, pmin / pmin.sum()),
                DiscreteDistribution(self.values, pmax / pmax.sum()))


def _checked(dist, name: str = "dist") -> DiscreteDistribution:
    """``dist`` as a :class:`DiscreteDistribution` of float64 arrays: strictly increasing finite
    values, non-negative probabilities summing to 1 (within 1e-9), else ``ValueError``."""
    try:
        v, w = (np.asarray(a, np.float64) for a in dist)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a DiscreteDistribution(values, pmf); got "
                         f"{dist!r}") from None
    if v.ndim != 1 or v.shape != w.shape or v.size < 1:
        raise ValueError(f"{name}: values and pmf must be vectors of one length >= 1; got shapes "
                         f"{v.shape} and {w.shape}")
    if not np.all(np.isfinite(v)) or np.any(np.diff(v) <= 0):
        raise ValueError(f"{name}: values must be finite and strictly increasing; got {v}")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or abs(w.sum() - 1.0) > 1e-9:
        raise ValueError(f"{name}: pmf must be >= 0 and sum to 1 (within 1e-9); got sum "
                         f"{w.sum()!r}, min {w.min()!r}")
    return DiscreteDistribution(v, w)


def _count_vectors_size(V: int, T: int) -> int:
    return math.comb(T + V - 1, V - 1)


def product_log10_distribution(probs, length, *, merge_tol: float = 1e-9
                               ) -> DiscreteDistribution:
    r"""The exact law of ``log10 π(h)`` under the product model (G²RPO App. E): every count
    vector ``n`` (``Σ n_i = T``) has value ``Σ n_i log10 p_i`` and probability
    ``T! / Π n_i! · Π p_i^{n_i}`` (computed in log space, float64). Values within ``merge_tol``
    (relative, at least absolute) of each other are one value: with rational relations between
    the ``log10 p_i`` distinct count vectors can have exactly the same value (for the paper's
    probabilities ``log10 0.8 = 3 log10 2 − 1``, ``log10 0.05 = −1 − log10 2``, ...: the
    1,929,501 count vectors of ``T = 80`` take 347,921 distinct values, the closest two distinct
    ones 1.2e-5 apart), and their float sums differ by rounding only.

    Enumerates ``C(T + V − 1, V − 1)`` count vectors (at most :data:`MAX_COUNT_VECTORS`); about
    0.7 s for the paper's ``V = 5``, ``T = 80``."""
    p = _probs(probs)
    T = as_int(length, "length", lower=1)
    if not (isinstance(merge_tol, int | float) and 0 <= merge_tol < 1e-3):
        raise ValueError(f"merge_tol must be a number in [0, 1e-3); got {merge_tol!r}")
    V = p.size
    size = _count_vectors_size(V, T)
    if size > MAX_COUNT_VECTORS:
        raise ValueError(f"length = {T} with {V} tokens has {size:,} count vectors, more than "
                         f"the {MAX_COUNT_VECTORS:,} this enumeration allows")
    x, lp = np.log10(p), np.log(p)
    lfact = np.array([math.lgamma(i + 1) for i in range(T + 1)])
    # grow the count vectors one token at a time, carrying (remaining, value, log-probability)
    rem = np.array([T], np.int64)
    val = np.zeros(1)
    logw = np.full(1, lfact[T])
    for i in range(V - 1):
        reps = rem + 1
        start = np.cumsum(reps) - reps
        j = np.arange(int(reps.sum()), dtype=np.int64) - np.repeat(start, reps)
        rem = np.repeat(rem, reps) - j
        val = np.repeat(val, reps) + j * x[i]
        logw = np.repeat(logw, reps) + j * lp[i] - lfact[j]
    val = val + rem * x[-1]
    logw = logw + rem * lp[-1] - lfact[rem]
    order = np.argsort(val, kind="stable")
    val, w = val[order], np.exp(logw[order])
    gap = np.diff(val) > merge_tol * np.maximum(1.0, np.abs(val[1:]))
    starts = np.concatenate([[0], np.flatnonzero(gap) + 1])
    pmf = np.add.reduceat(w, starts)
    return DiscreteDistribution(val[starts], pmf / pmf.sum())


def _int_power(x: np.ndarray, n: int) -> np.ndarray:
    """``x ** n`` for a whole ``n >= 1`` by repeated squaring (faster than ``np.power``)."""
    out = None
    base = x
    while n:
        if n & 1:
            out = base.copy() if out is None else out * base
        n >>= 1
        if n:
            base = base * base
    return out


def range_distribution(dist: DiscreteDistribution, group_size, *, resolution: float = 0.01,
                       tail: float = 1e-16) -> DiscreteDistribution:
    r"""The law of the range ``max_i X_i − min_i X_i`` of ``group_size`` i.i.d. draws of ``dist``
    (G²RPO App. E, Table 3: the within-batch range of ``log10 π(h)`` for batches of ``G = 10``).

    ``dist`` is put on the lattice ``v_0 + k · resolution`` (each value moved to the nearest
    point, by at most ``resolution / 2``; ``tail`` mass is cut from each end, renormalized), and
    on the lattice ``P(R <= d) = Σ_i [(F_{i+d} − F_{i−1})^G − (F_{i+d} − F_i)^G]`` (all draws in
    ``[v_i, v_i + d]``, not all in ``(v_i, v_i + d]``) is exact. Coupling each draw with its
    lattice point moves the range by at most ``resolution``, so the mean, the standard deviation
    and every quantile of the returned law are within ``resolution`` of the exact ones, and any
    probability within ``2 · group_size · tail`` of them. Cost ``O(K²)`` for ``K`` lattice points
    (the paper's law at 0.01: 5,862 points, ~0.3 s)."""
    G = as_int(group_size, "group_size", lower=2)
    if not (isinstance(resolution, int | float) and math.isfinite(resolution)
            and resolution > 0):
        raise ValueError(f"resolution must be a finite number > 0; got {resolution!r}")
    if not (isinstance(tail, int | float) and 0 <= tail < 1e-6):
        raise ValueError(f"tail must be a number in [0, 1e-6); got {tail!r}")
    v, w = _checked(dist)
    F = np.cumsum(w)
    S = np.cumsum(w[::-1])[::-1]
    keep = (F >= tail) & (S >= tail)
    v, w = v[keep], w[keep]
    k = np.rint((v - v[0]) / resolution).astype(np.int64)
    K = int(k[-1]) + 1
    if K > 100_000:
        raise ValueError(f"resolution = {resolution!r} puts the support on {K:,} lattice points "
                         "(at most 100,000); use a coarser resolution")
    pb = np.bincount(k, weights=w, minlength=K)
    Fb = np.minimum(np.cumsum(pb / pb.sum()), 1.0)
    Fb[-1] = 1.0
    Fm = np.concatenate([[0.0], Fb[:-1]])  # F_{i-1}
    # row d of `top` is F_{min(i + d, K - 1)} = (F, 1, 1, ...)[i + d]: a sliding window, no copy
    padded = np.concatenate([Fb, np.ones(K)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, K)
    cdf = np.empty(K)
    block = max(1, min(K, 2_000_000 // K))
    for d0 in range(0, K, block):
        d1 = min(d0 + block, K)
        n = K - d0  # for i >= K - d0 every top is 1 and the terms telescope to (1 - F_{i-1})^G
        top = windows[d0:d1, :n]
        cdf[d0:d1] = (_int_power(np.maximum(top - Fm[:n], 0.0), G)
                      - _int_power(np.maximum(top - Fb[:n], 0.0), G)).sum(1)
        if n < K:
            cdf[d0:d1] += _int_power(np.maximum(1.0 - Fm[n:n + 1], 0.0), G)[0]
    cdf = np.minimum(np.maximum.accumulate(cdf), 1.0)
    pmf = np.diff(np.concatenate([[0.0], cdf]))
    return DiscreteDistribution(np.arange(K) * float(resolution), pmf / pmf.sum())


class StatisticLaw(NamedTuple):
    """The sampling law of one summary statistic of a sample: ``expected`` value, standard error
    ``se``, a central interval ``[low, high]`` of probability ``1 − 2Φ(−z)``, and the exact
    ``law`` where there is one (the extremes; ``None``: Gaussian with ``expected``, ``se``)."""

    expected: float
    se: float
    low: float
    high: float
    law: DiscreteDistribution | None = None

    def cdf(self, x) -> float:
        """``P(statistic <= x)``: exact with a ``law``, else the Gaussian approximation."""
        if self.law is not None:
            return float(self.law.cdf(x))
        return 0.5 * math.erfc(-(x - self.expected) / (self.se * math.sqrt(2.0)))

    def z_score(self, x) -> float:
        """``(x − expected) / se``."""
        return float((x - self.expected) / self.se)

    def contains(self, x, tol: float = 0.0) -> bool:
        """``x`` lies in ``[low − tol, high + tol]`` (``tol``: e.g. the rounding of a printed
        value)."""
        return bool(self.low - tol <= x <= self.high + tol)


def summary_statistic_laws(dist: DiscreteDistribution, sample_size, *, z: float = 4.0
                           ) -> dict[str, StatisticLaw]:
    r"""The sampling laws of the statistics G²RPO App. E Tables 2 and 3 print for a sample of
    ``sample_size`` i.i.d. draws of ``dist``: ``"min"``, ``"max"`` (exact: expected value and
    standard deviation of :meth:`DiscreteDistribution.extremes`, interval from its quantiles),
    ``"mean"`` (``μ``, ``σ/√n``) and ``"std"`` (the sample standard deviation, ``ddof = 1``:
    ``σ (1 − (κ − 1)/(8n))``, ``σ sqrt((κ − 1)/(4n))``, the delta-method asymptotics with
    ``κ = μ4/σ⁴``), the last two with the Gaussian interval ``expected ± z · se``. The extremes'
    interval has the same two-sided probability ``2Φ(−z)`` outside it (6.3e-5 for ``z = 4``)."""
    n = as_int(sample_size, "sample_size", lower=2)
    if not (isinstance(z, int | float) and math.isfinite(z) and z > 0):
        raise ValueError(f"z must be a finite number > 0; got {z!r}")
    dist = _checked(dist)
    alpha = math.erfc(z / math.sqrt(2.0))  # two-sided
    mu, sd = dist.mean(), dist.sd()
    kurt = dist.kurtosis() if sd > 0 else 1.0  # a point mass: every statistic is exact
    out = {}
    lo_dist, hi_dist = dist.extremes(n)
    for name, ext in (("min", lo_dist), ("max", hi_dist)):
        out[name] = StatisticLaw(ext.mean(), ext.sd(), float(ext.quantile(alpha / 2)),
                                 float(ext.quantile(1 - alpha / 2)), ext)
    se_mean = sd / math.sqrt(n)
    out["mean"] = StatisticLaw(mu, se_mean, mu - z * se_mean, mu + z * se_mean)
    e_sd = sd * (1.0 - (kurt - 1.0) / (8.0 * n))
    se_sd = sd * math.sqrt((kurt - 1.0) / (4.0 * n))
    out["std"] = StatisticLaw(e_sd, se_sd, e_sd - z * se_sd, e_sd + z * se_sd)
    return out
