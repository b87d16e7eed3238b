r"""Monte Carlo estimators (with confidence intervals) for the sampling-theory quantities.

These simulate the *sampling process itself* (i.i.d. rollouts / categorical draws), never the
closed forms, so they are independent checks of F-GRPO Lemma 3.1, Lemma B.1 / Cor. B.2 and of
the population advantage magnitudes of Fig. 3. Counts are drawn directly (binomial /
multinomial), so a point with 10^6 groups costs O(10^6) whatever the group size ``N``.

NumPy on purpose (random counts, not differentiable); each estimator takes a
``numpy.random.Generator``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._checks import as_int, check_number

__all__ = [
    "MCEstimate",
    "mc_activity",
    "mc_conditional_sampled_masses",
    "mc_grpo_advantage_magnitude",
    "mc_tail_miss",
]


class MCEstimate(NamedTuple):
    """A Monte Carlo mean with its standard error and a normal ``z``-sigma interval."""

    mean: np.ndarray
    stderr: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    n_samples: np.ndarray

    def contains(self, value) -> np.ndarray:
        return (self.lo <= value) & (value <= self.hi)


def _estimate(mean, stderr, n, z):
    mean, stderr = np.asarray(mean, float), np.asarray(stderr, float)
    return MCEstimate(mean, stderr, mean - z * stderr, mean + z * stderr, np.asarray(n))


def _bernoulli(hits, n_groups, z):
    p = hits / n_groups
    return _estimate(p, np.sqrt(p * (1 - p) / n_groups), n_groups, z)


def _scalar(x, name):
    check_number(x, name)
    if np.ndim(x) != 0:
        raise ValueError(f"{name} must be a scalar; got shape {np.shape(x)}")
    return float(x)


def _validate(mu, tau, n, n_groups, rng, z):
    mu = _scalar(mu, "mu")
    if not 0.0 <= mu <= 1.0:
        raise ValueError(f"mu must lie in [0, 1]; got {mu!r}")
    if tau is not None:
        tau = _scalar(tau, "tau")
        if not 0.0 <= tau <= mu:
            raise ValueError(f"tau must satisfy 0 <= tau <= mu; got tau={tau!r}, mu={mu!r}")
    as_int(n, "group_size", lower=1)
    as_int(n_groups, "n_groups", lower=2)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator (np.random.default_rng(seed)); "
                         f"got {rng!r}")
    z = _scalar(z, "z (interval half-width in standard errors)")
    if not (np.isfinite(z) and z > 0):
        raise ValueError(f"z (interval half-width in standard errors) must be finite and > 0; "
                         f"got {z!r}")


def mc_activity(mu: float, group_size: int, n_groups: int, rng: np.random.Generator, *,
                z: float = 4.0) -> MCEstimate:
    """Fraction of ``n_groups`` simulated groups of ``N = group_size`` Bernoulli(``mu``) rollouts
    that are active (``0 < X < N``), F-GRPO eq. (9). ``X`` is drawn as a binomial count."""
    _validate(mu, None, group_size, n_groups, rng, z)
    n, n_groups = int(group_size), int(n_groups)
    x = rng.binomial(int(n), mu, size=n_groups)
    return _bernoulli(np.count_nonzero((x > 0) & (x < n)), n_groups, z)


def mc_tail_miss(mu: float, tau: float, group_size: int, n_groups: int, rng: np.random.Generator,
                 *, z: float = 4.0) -> MCEstimate:
    """Fraction of simulated groups in which the event B_tau of F-GRPO eq. (10) occurs: the group is
    active and no rollout is rare-correct. Each group's region counts
    ``(rare, other correct, incorrect)`` are drawn as one multinomial with probabilities
    ``(tau, mu - tau, 1 - mu)``; ``N = group_size``."""
    _validate(mu, tau, group_size, n_groups, rng, z)
    n, n_groups = int(group_size), int(n_groups)
    c = rng.multinomial(int(n), [tau, mu - tau, 1.0 - mu], size=n_groups)
    x = c[:, 0] + c[:, 1]
    hit = (c[:, 0] == 0) & (x > 0) & (x < n)
    return _bernoulli(np.count_nonzero(hit), n_groups, z)


def mc_conditional_sampled_masses(pi, correct, group_size: int, n_groups: int,
                                  rng: np.random.Generator, *, r_correct: float = 1.0,
                                  r_wrong: float = -1.0, z: float = 4.0, chunk: int = 200_000):
    """Simulate ``n_groups`` groups of ``N = group_size`` i.i.d. draws from the categorical
    policy ``pi`` and average the distinct sampled masses ``P_pos``, ``P_neg`` and ``S_R``
    (F-GRPO eq. 17) within each value ``k`` of the correct count ``X`` (F-GRPO Lemma B.1 /
    Cor. B.2).

    Returns ``dict(k=..., count=..., p_pos=MCEstimate, p_neg=MCEstimate, s_r=MCEstimate)`` over
    ``k = 0..N`` (entries with fewer than 2 groups are NaN).
    """
    check_number(pi, "pi (categorical policy)")
    pi = np.asarray(pi, float)
    correct = np.asarray(correct)
    if correct.dtype != bool:
        raise ValueError(f"correct must be a boolean mask; got dtype {correct.dtype}")
    if pi.ndim != 1 or correct.shape != pi.shape:
        raise ValueError(f"pi and correct must be 1-D of the same shape; got {pi.shape}, "
                         f"{correct.shape}")
    if not (np.all(np.isfinite(pi)) and np.all(pi >= 0) and abs(pi.sum() - 1.0) <= 1e-6):
        raise ValueError(f"pi (categorical policy) must lie on the probability simplex (finite, "
                         f">= 0, summing to 1); got {pi if pi.size <= 12 else pi.shape}")
    for name, v in (("r_correct", r_correct), ("r_wrong", r_wrong)):
        if not np.isfinite(_scalar(v, name)):
            raise ValueError(f"{name} must be finite; got {v!r}")
    chunk = as_int(chunk, "chunk", lower=1)
    _validate(float(pi[correct].sum()), None, group_size, n_groups, rng, z)
    n, n_groups = int(group_size), int(n_groups)
    kk = np.arange(n + 1)
    s1 = np.zeros((3, n + 1))
    s2 = np.zeros((3, n + 1))
    cnt = np.zeros(n + 1)
    left = n_groups
    while left > 0:
        m = min(chunk, left)
        left -= m
        counts = rng.multinomial(int(n), pi / pi.sum(), size=m)
        hit = counts > 0
        x = counts[:, correct].sum(axis=1)
        p_pos = hit[:, correct] @ pi[correct]
        p_neg = hit[:, ~correct] @ pi[~correct]
        vals = np.stack([p_pos, p_neg, r_correct * p_pos + r_wrong * p_neg])
        cnt += np.bincount(x, minlength=n + 1)
        for j in range(3):
            s1[j] += np.bincount(x, weights=vals[j], minlength=n + 1)
            s2[j] += np.bincount(x, weights=vals[j] ** 2, minlength=n + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1 / cnt
        var = (s2 / cnt - mean**2) * cnt / (cnt - 1)
        se = np.sqrt(np.maximum(var, 0.0) / cnt)
    ok = cnt >= 2
    mean, se = np.where(ok, mean, np.nan), np.where(ok, se, np.nan)
    est = [_estimate(mean[j], se[j], cnt, z) for j in range(3)]
    return {"k": kk, "count": cnt, "p_pos": est[0], "p_neg": est[1], "s_r": est[2]}


def mc_grpo_advantage_magnitude(mu: float, group_size: int, n_groups: int,
                                rng: np.random.Generator, *, gamma: float = 0.0, z: float = 4.0):
    """Mean focal-scaled |z-scored advantage| ``g·|Â|`` of correct and of incorrect rollouts in
    simulated finite groups of size ``N = group_size`` (population std of the group, active
    groups only), with the empirical focal weight ``g = (1 - mu_hat)^gamma`` (F-GRPO eq. 15). As
    ``N`` grows this tends to the population limit of F-GRPO Fig. 3, with an O(1/N) bias at
    finite ``N``.
    Returns ``(correct, incorrect)`` estimates (per active group)."""
    _validate(mu, None, group_size, n_groups, rng, z)
    gamma = _scalar(gamma, "gamma")
    if not (np.isfinite(gamma) and gamma >= 0):
        raise ValueError(f"gamma must be finite and >= 0; got {gamma!r}")
    n, n_groups = int(group_size), int(n_groups)
    x = rng.binomial(int(n), mu, size=n_groups)
    x = x[(x > 0) & (x < n)]
    if x.size < 2:
        raise ValueError("too few active groups for an estimate; increase n_groups")
    m = x / n
    sd = np.sqrt(m * (1 - m))
    g = (1 - m) ** gamma
    out = []
    for v in (g * (1 - m) / sd, g * m / sd):
        out.append(_estimate(v.mean(), v.std(ddof=1) / np.sqrt(v.size), v.size, z))
    return tuple(out)
