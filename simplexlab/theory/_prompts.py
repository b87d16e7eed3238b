r"""A distribution of prompts: each prompt's pass rate and, where known, its good-mode masses.

Training draws prompts from a dataset whose pass rates under the base model spread from 0 to 1;
the budget question (how to split ``R`` rollouts per step into ``P`` prompts × ``G``) depends on
that spread. A :class:`PromptSet` holds it, from a histogram of pass rates, a Beta law, explicit
policies, or a rollouts file of the base model (``prompt_id``, ``reward``, optional ``mode_id``:
:func:`simplexlab._results.read_rollouts`), and answers what follows from it exactly:

- the **silent-group fraction** ``E_prompts[μ^G + (1 − μ)^G]``: the share of groups whose
  rewards are all equal, so that every group-relative advantage vanishes (FG Lemma 3.1, eq. 9,
  averaged over the prompts; the groups DAPO's dynamic sampling discards). For a Beta(a, b) law
  of ``μ``: ``B(a + G, b)/B(a, b) + B(a, b + G)/B(a, b)``;
- the **tail-miss** of each prompt (FG Lemma 3.1, eq. 11): the probability that its group is
  mixed yet misses its rarest good mode, ``(1 − τ)^G − (μ − τ)^G − (1 − μ)^G``, with ``τ`` the
  mass of that mode (from the file's modes, or ``rare_share · μ`` where none are given).

A Beta law's expectations of polynomials in ``μ`` (the tail-miss, the silent fraction) are
computed by Gauss–Jacobi quadrature with enough nodes to be exact for the degree (``n`` nodes
integrate degree ``2n − 1``); its nodes and weights are also the finite set of prompts a
simulator draws from (:meth:`PromptSet.policies`), which has the law's first ``2n − 1``
moments.

**From a rollouts file** each prompt's pass rate is the mean reward of its rollouts (``k/n`` for
0/1 rewards; ``estimator="jeffreys"``: ``(k + 1/2)/(n + 1)``, the posterior mean under the
Jeffreys prior, which keeps 0/16 off zero); with mode ids, a good mode's mass is the reward its
rollouts carry over ``n`` (``Σ_{i ∈ c} r_i / n``) and a bad mode's the missing reward
(``Σ_{i ∈ c} (1 − r_i) / n``). Every prompt needs at least two rollouts.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

import numpy as np

from ._sampling import activity, tail_miss

__all__ = ["ESTIMATORS", "PromptSet"]

ESTIMATORS = ("mean", "jeffreys")
"""How :meth:`PromptSet.from_rollouts` estimates a pass rate from ``k`` of ``n``: ``"mean"``
(``k/n``) or ``"jeffreys"`` (``(k + 1/2)/(n + 1)``)."""

#: the smallest mass a mode keeps in :meth:`PromptSet.policies` (a softmax holds no zero)
MASS_FLOOR = 1e-6


def _sizes(group_size, who: str) -> np.ndarray:
    G = np.asarray(group_size)
    if G.dtype.kind not in "iuf" or G.dtype == bool or np.any(~np.isfinite(G)) or np.any(G < 1) \
            or np.any(G != np.round(G)):
        raise ValueError(f"{who}: group_size must be whole numbers >= 1; got {group_size!r}")
    return G.astype(float)


def _beta_nodes(a: float, b: float, n: int):
    """Gauss–Jacobi nodes and weights of Beta(a, b) on [0, 1] (weights sum to 1; exact for
    polynomials of degree <= 2n − 1), by Golub & Welsch (Math. Comp. 23, 1969): the
    eigenvalues of the Jacobi matrix of the monic Jacobi polynomials, weight
    ``(1 − x)^α (1 + x)^β`` on [−1, 1] with ``x = 2μ − 1``, ``α = b − 1``, ``β = a − 1``
    (Beta's ``μ^(a−1) (1 − μ)^(b−1)``), and the squared first components of its eigenvectors.
    (numpy only: scipy's ``roots_jacobi``, which ``tests/test_prompts.py`` checks this
    against, costs the planner's cold start a third of a second to import.)"""
    al, be = b - 1.0, a - 1.0
    s = al + be
    k = np.arange(1.0, n)
    diag = np.empty(n)
    diag[0] = (be - al) / (s + 2.0)
    diag[1:] = (be - al) * s / ((2 * k + s) * (2 * k + s + 2.0))
    # the squared off-diagonal of row k: 4k(k+α)(k+β)(k+α+β) / ((2k+s)²(2k+s+1)(2k+s−1)),
    # at k = 1 with the factor (1 + s) cancelled (it vanishes where α + β = −1)
    off2 = np.empty(n - 1)
    if n > 1:
        off2[0] = 4 * (1.0 + al) * (1.0 + be) / ((2.0 + s) ** 2 * (3.0 + s))
        k = k[1:]
        off2[1:] = 4 * k * (k + al) * (k + be) * (k + s) / (
            (2 * k + s) ** 2 * (2 * k + s + 1.0) * (2 * k + s - 1.0))
    off = np.sqrt(off2)
    x, vec = np.linalg.eigh(np.diag(diag) + np.diag(off, 1) + np.diag(off, -1))
    w = vec[0] ** 2
    return (x + 1.0) / 2.0, w / np.sum(w)


def _positive(x, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a number; got {x!r}")
    v = float(x)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {x!r}")
    return v


def _masses(rows, n: int, who: str, *, sort: bool = True):
    """Per-prompt mode masses as a tuple of tuples (``sort``: the positive ones, largest first;
    else as given), or ``None``."""
    if rows is None:
        return None
    out = []
    for i, r in enumerate(rows):
        a = np.asarray(r, float).ravel()
        if a.size and (np.any(~np.isfinite(a)) or np.any(a < 0)):
            raise ValueError(f"{who}: the mode masses of prompt {i} must be finite and >= 0; "
                             f"got {list(r)}")
        out.append(tuple(float(v) for v in (np.sort(a[a > 0])[::-1] if sort else a)))
    if len(out) != n:
        raise ValueError(f"{who}: {len(out)} rows of mode masses for {n} prompts")
    return tuple(out)


def _composition(masses, total: float, K: int, floor: float) -> np.ndarray:
    """``K`` masses summing to ``total`` from ``masses`` (largest first): the ``K`` largest,
    the rest spread over them in proportion, missing modes at ``floor · total``."""
    a = np.asarray(masses, float)[:K]
    a = np.concatenate([a, np.zeros(K - a.size)])
    a = np.maximum(a, floor * max(total, floor))
    return a * (total / a.sum()) if a.sum() > 0 else np.full(K, total / K)


@dataclasses.dataclass(frozen=True)
class PromptSet:
    r"""A distribution of prompts (module docstring): ``N`` prompts with pass rates
    ``pass_rates`` and probabilities ``weights`` (summing to 1); where known, each prompt's
    good-mode masses ``good_masses`` (largest first, summing to its pass rate) and bad-mode
    masses ``bad_masses``; ``beta``: ``(a, b)`` when the set stands for a Beta law (then
    ``pass_rates`` / ``weights`` are its Gauss–Jacobi nodes and the closed forms use the law);
    ``rollouts``: each prompt's number of rollouts (from a file); ``ids``: the prompts' ids;
    ``source``: where it came from. Build it with :meth:`histogram`, :meth:`from_beta`,
    :meth:`from_rollouts`, :meth:`from_policies` or :meth:`single`. Immutable and hashable (a
    simulator's static setting)."""

    pass_rates: tuple[float, ...]
    weights: tuple[float, ...]
    good_masses: tuple[tuple[float, ...], ...] | None = None
    bad_masses: tuple[tuple[float, ...], ...] | None = None
    beta: tuple[float, float] | None = None
    rollouts: tuple[int, ...] | None = None
    ids: tuple[str, ...] | None = None
    source: str = "histogram"

    def __post_init__(self):
        mu = np.asarray(self.pass_rates, float)
        w = np.asarray(self.weights, float)
        if mu.ndim != 1 or mu.size == 0:
            raise ValueError(f"PromptSet: pass_rates must be a non-empty sequence; got "
                             f"{self.pass_rates!r}")
        if w.shape != mu.shape:
            raise ValueError(f"PromptSet: {w.size} weights for {mu.size} pass rates")
        if np.any(~np.isfinite(mu)) or np.any((mu < 0) | (mu > 1)):
            bad = mu[~(np.isfinite(mu) & (mu >= 0) & (mu <= 1))][0]
            raise ValueError(f"PromptSet: a pass rate must be in [0, 1]; got {bad!r}")
        if np.any(~np.isfinite(w)) or np.any(w < 0) or abs(w.sum() - 1.0) > 1e-9:
            raise ValueError(f"PromptSet: weights must be >= 0 and sum to 1; got sum "
                             f"{w.sum()!r}")
        for name in ("good_masses", "bad_masses"):
            rows = getattr(self, name)
            if rows is not None and len(rows) != mu.size:
                raise ValueError(f"PromptSet: {len(rows)} rows of {name} for {mu.size} prompts")
        if self.good_masses is not None:
            sums = np.array([sum(r) for r in self.good_masses])
            if np.any(np.abs(sums - mu) > 1e-6):
                i = int(np.argmax(np.abs(sums - mu)))
                raise ValueError(f"PromptSet: the good-mode masses of prompt {i} sum to "
                                 f"{sums[i]:.6g}, not its pass rate {mu[i]:.6g}")

    # ---- constructors ------------------------------------------------------------------------

    @classmethod
    def histogram(cls, pass_rates, weights=None) -> PromptSet:
        """Prompts with these pass rates, each with probability ``weights`` (counts or
        probabilities; default equal)."""
        mu = np.asarray(pass_rates, float).ravel()
        w = np.ones_like(mu) if weights is None else np.asarray(weights, float).ravel()
        if w.shape != mu.shape or np.any(~np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
            raise ValueError(f"PromptSet.histogram: weights must be {mu.size} numbers >= 0, "
                             f"not all zero; got {weights!r}")
        return cls(tuple(mu.tolist()), tuple((w / w.sum()).tolist()))

    @classmethod
    def from_beta(cls, a, b, *, nodes: int = 16) -> PromptSet:
        """A Beta(a, b) law of pass rates (``a, b > 0``): its closed forms are exact; its
        ``nodes`` Gauss–Jacobi nodes stand for it where a finite set of prompts is needed."""
        a, b = _positive(a, "Beta parameter a"), _positive(b, "Beta parameter b")
        if isinstance(nodes, bool) or not isinstance(nodes, int | np.integer) or nodes < 1:
            raise ValueError(f"PromptSet.from_beta: nodes must be an integer >= 1; got "
                             f"{nodes!r}")
        x, w = _beta_nodes(a, b, int(nodes))
        return cls(tuple(x.tolist()), tuple(w.tolist()), beta=(a, b), source=f"Beta({a:g}, {b:g})")

    @classmethod
    def single(cls, mu, *, good_masses=None) -> PromptSet:
        """One prompt of pass rate ``mu`` (the single-state planner's prompt)."""
        return cls((float(mu),), (1.0,),
                   good_masses=None if good_masses is None else _masses([good_masses], 1,
                                                                         "PromptSet.single"),
                   source=f"one prompt, pass rate {float(mu):g}")

    @classmethod
    def from_policies(cls, probs, K: int, weights=None) -> PromptSet:
        """Prompts with these policies ``probs`` ``(N, C)`` over ``K`` good modes (first) and
        ``C − K`` bad ones: the pass rates, good and bad masses read off them."""
        p = np.asarray(probs, float)
        if p.ndim != 2 or not 1 <= K <= p.shape[1] or np.any(~np.isfinite(p)) or np.any(p < 0) \
                or np.any(np.abs(p.sum(-1) - 1) > 1e-6):
            raise ValueError(f"PromptSet.from_policies: probs must be (N, C) rows on the simplex "
                             f"with 1 <= K <= C; got shape {p.shape}, K = {K!r}")
        base = cls.histogram(p[:, :K].sum(-1), weights)
        who = "PromptSet.from_policies"
        good = _masses(p[:, :K], p.shape[0], who, sort=False)  # the modes keep their order
        bad = _masses(p[:, K:], p.shape[0], who, sort=False)
        return dataclasses.replace(base, good_masses=good, bad_masses=bad,
                                   source=f"{p.shape[0]} policies")

    @classmethod
    def from_rollouts(cls, source: str | os.PathLike | dict[str, Any], *,
                      estimator: str = "mean", name: str | None = None) -> PromptSet:
        """The prompts of a rollouts file (module docstring; read by
        :func:`simplexlab._results.read_rollouts`, or its output passed as a dict), equally
        weighted. A prompt with a single rollout is refused, naming its line. ``name``: what the
        source is called in the result's ``source`` and in errors (default: the file's path;
        ``"rollouts"`` for a dict)."""
        from .._results import read_rollouts

        if estimator not in ESTIMATORS:
            raise ValueError(f"PromptSet.from_rollouts: estimator must be one of {ESTIMATORS}; "
                             f"got {estimator!r}")
        data = source if isinstance(source, dict) else read_rollouts(source)
        where = name or ("rollouts" if isinstance(source, dict) else str(source))
        ids, inverse = np.unique(np.asarray(data["prompt_id"], dtype=object).astype(str),
                                 return_inverse=True)
        reward = np.asarray(data["reward"], float)
        n = np.bincount(inverse, minlength=ids.size)
        k = np.bincount(inverse, weights=reward, minlength=ids.size)
        lines = np.asarray(data["line"], int)
        if np.any(n < 2):
            i = int(np.flatnonzero(n < 2)[0])
            line = int(lines[np.flatnonzero(inverse == i)[0]])
            raise ValueError(f"{where}, line {line}, column 'prompt_id': prompt "
                             f"{str(ids[i])!r} has 1 rollout; a pass rate needs at least 2 "
                             "rollouts of each prompt")
        mu = k / n if estimator == "mean" else (k + 0.5) / (n + 1.0)
        good = bad = None
        if data.get("mode_id") is not None:
            modes, minv = np.unique(np.asarray(data["mode_id"], dtype=object).astype(str),
                                    return_inverse=True)
            cell = inverse * modes.size + minv
            size = ids.size * modes.size
            g = np.bincount(cell, weights=reward, minlength=size).reshape(ids.size, -1)
            b = np.bincount(cell, weights=1.0 - reward, minlength=size).reshape(ids.size, -1)
            g, b = g / n[:, None], b / n[:, None]
            if estimator == "jeffreys":  # the masses scaled to the estimated pass rate
                g = g * np.where(k > 0, mu / np.where(k > 0, k / n, 1.0), 0.0)[:, None]
                b = b * np.where(n > k, (1 - mu) / np.where(n > k, 1 - k / n, 1.0), 0.0)[:, None]
            good, bad = _masses(g, ids.size, where), _masses(b, ids.size, where)
            # prompts with no correct rollout under the Jeffreys estimate: one unseen good mode
            good = tuple(r if r else (float(m),) if m > 0 else () for r, m in zip(good, mu,
                                                                                  strict=True))
        w = np.full(ids.size, 1.0 / ids.size)
        return cls(tuple(mu.tolist()), tuple(w.tolist()), good_masses=good, bad_masses=bad,
                   rollouts=tuple(int(v) for v in n), ids=tuple(str(i) for i in ids),
                   source=f"{where} ({ids.size} prompts, {int(n.sum())} rollouts)")

    # ---- what follows from it exactly ----------------------------------------------------------

    @property
    def size(self) -> int:
        """``N``, the number of prompts (the Gauss–Jacobi nodes of a Beta law)."""
        return len(self.pass_rates)

    def arrays(self):
        """``(pass_rates, weights)`` as float arrays."""
        return np.asarray(self.pass_rates, float), np.asarray(self.weights, float)

    def mean_pass_rate(self) -> float:
        """``E[μ]`` (``a/(a + b)`` for a Beta law)."""
        if self.beta is not None:
            a, b = self.beta
            return a / (a + b)
        mu, w = self.arrays()
        return float(np.sum(w * mu))

    def _expect(self, f, degree: int):
        """``E[f(μ, i)]`` over the prompts: exact for a polynomial of ``degree`` in ``μ`` under
        a Beta law (Gauss–Jacobi with enough nodes); a finite sum otherwise. ``f`` gets the
        pass rates and each node's prompt index (``None`` for a Beta law's own nodes)."""
        if self.beta is not None:
            n = max(self.size, (degree + 2) // 2)
            x, w = _beta_nodes(*self.beta, n)
            return np.tensordot(w, f(x, None), axes=(0, 0))
        mu, w = self.arrays()
        return np.tensordot(w, f(mu, np.arange(self.size)), axes=(0, 0))

    def silent_fraction(self, group_size):
        r"""``E_prompts[μ^G + (1 − μ)^G]``: the share of groups of ``G`` rollouts whose rewards
        are all 1 or all 0 (module docstring), at each ``group_size``. For a Beta(a, b) law the
        closed form ``B(a + G, b)/B(a, b) + B(a, b + G)/B(a, b)``."""
        G = _sizes(group_size, "silent_fraction")
        if self.beta is not None:
            a, b = self.beta
            lg = np.vectorize(math.lgamma)
            base = lg(a) + lg(b) - lg(a + b)
            out = (np.exp(lg(a + G) + lg(b) - lg(a + b + G) - base)
                   + np.exp(lg(a) + lg(b + G) - lg(a + b + G) - base))
            return out if np.ndim(group_size) else float(out)
        mu, w = self.arrays()
        silent = 1.0 - np.asarray(activity(mu[:, None], G.ravel()[None, :]), float)
        out = np.tensordot(w, silent, axes=(0, 0)).reshape(G.shape)
        return out if np.ndim(group_size) else float(out)

    def signal(self, group_size):
        """``1 − silent_fraction``: the share of groups that carry a learning signal."""
        return 1.0 - self.silent_fraction(group_size)

    def rarest_masses(self, *, rare_share: float | None = None, K: int = 4) -> np.ndarray:
        """Each prompt's rarest good mode's mass ``τ``: the smallest of its good-mode masses
        where they are known, else ``rare_share · μ`` (default ``1/(2K)``: the single-state
        planner's default, half the average of ``K`` good modes)."""
        mu, _ = self.arrays()
        share = 1.0 / (2 * K) if rare_share is None else float(rare_share)
        if not 0.0 < share <= 1.0:
            raise ValueError(f"rare_share must be in (0, 1]; got {rare_share!r}")
        if self.good_masses is None:
            return share * mu
        return np.array([min(r) if r else 0.0 for r in self.good_masses])

    def tail_miss(self, group_size, *, rare_share: float | None = None, K: int = 4):
        r"""Each prompt's tail-miss at each ``group_size`` (FG Lemma 3.1 eq. 11):
        ``(1 − τ)^G − (μ − τ)^G − (1 − μ)^G``, ``τ`` from :meth:`rarest_masses`;
        shape ``(N,) + shape(group_size)``."""
        G = _sizes(group_size, "tail_miss")
        mu, _ = self.arrays()
        tau = self.rarest_masses(rare_share=rare_share, K=K)
        return _tail_miss(mu.reshape(-1, *[1] * G.ndim), tau.reshape(-1, *[1] * G.ndim), G)

    def expected_tail_miss(self, group_size, *, rare_share: float | None = None, K: int = 4):
        """``E_prompts`` of the tail-miss (exact for a Beta law with ``τ = rare_share · μ``)."""
        G = _sizes(group_size, "expected_tail_miss")
        if self.beta is None:
            out = np.tensordot(np.asarray(self.weights),
                               self.tail_miss(G, rare_share=rare_share, K=K), axes=(0, 0))
        else:
            share = 1.0 / (2 * K) if rare_share is None else float(rare_share)
            out = self._expect(lambda x, _: _tail_miss(x[:, None], share * x[:, None],
                                                       G.ravel()[None, :]),
                               int(G.max())).reshape(G.shape)
        return out if np.ndim(group_size) else float(out)

    # ---- a finite set of prompts for the shared-parameter model ------------------------------

    def pool(self, size: int = 32) -> PromptSet:
        """At most ``size`` prompts that stand for this set: the set itself when it is small
        enough, else ``size`` bins of equal probability by pass rate, each with the bin's
        mean pass rate and mean mode masses (sorted, largest first). A Beta law: its
        ``size``-node Gauss–Jacobi set."""
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
            raise ValueError(f"pool: size must be an integer >= 1; got {size!r}")
        if self.beta is not None:
            return PromptSet.from_beta(*self.beta, nodes=int(size)) if size != self.size \
                else self
        if self.size <= size:
            return self
        mu, w = self.arrays()
        order = np.argsort(mu, kind="stable")
        edges = np.cumsum(w[order])
        b = np.minimum((edges * size - 1e-12).astype(int), size - 1)  # bin of each prompt
        bw = np.bincount(b, weights=w[order], minlength=size)
        keep = bw > 0
        bmu = np.bincount(b, weights=(w * mu)[order], minlength=size)[keep] / bw[keep]

        def binned(rows):
            if rows is None:
                return None
            width = max(len(r) for r in rows) or 1
            a = np.zeros((self.size, width))
            for i, r in enumerate(rows):
                a[i, :len(r)] = r
            s = np.stack([np.bincount(b, weights=(w[:, None] * a)[order][:, j],
                                      minlength=size) for j in range(width)], -1)
            return tuple(tuple(v for v in row if v > 0) for row in (s[keep] / bw[keep, None]))

        good = binned(self.good_masses)
        if good is not None:  # the binned masses sum to the bin's pass rate (up to rounding)
            good = tuple(tuple(float(v) * m / sum(r) for v in r) if r else ()
                         for r, m in zip(good, bmu, strict=True))
        return PromptSet(tuple(bmu.tolist()), tuple((bw[keep] / bw[keep].sum()).tolist()),
                         good_masses=good, bad_masses=binned(self.bad_masses),
                         source=f"{self.source}, {int(keep.sum())} bins by pass rate")

    def policies(self, K: int, M: int, *, rare_share: float | None = None,
                 floor: float = MASS_FLOOR) -> np.ndarray:
        r"""The prompts' policies ``(N, K + M)`` over ``K`` good modes (first) and ``M`` bad:
        the good mass ``μ`` spread by the prompt's good-mode masses (its ``K`` largest, the rest
        spread over them in proportion) or, where none are known, the single-state planner's
        representative composition (the first good mode at ``rare_share`` of ``μ``, default
        ``1/(2K)``, the others equal); the bad mass by its bad-mode masses or equally. Every
        mode keeps at least ``floor`` of its block (a softmax holds no zero)."""
        if isinstance(K, bool) or not isinstance(K, int | np.integer) or K < 1:
            raise ValueError(f"policies: K must be an integer >= 1; got {K!r}")
        if isinstance(M, bool) or not isinstance(M, int | np.integer) or M < 1:
            raise ValueError(f"policies: M must be an integer >= 1; got {M!r}")
        mu, _ = self.arrays()
        mu = np.clip(mu, floor, 1.0 - floor)
        share = 1.0 / (2 * K) if rare_share is None else float(rare_share)
        if K > 1 and not 0.0 < share < 1.0 / K:
            raise ValueError(f"policies: rare_share must be in (0, 1/K) = (0, {1 / K:.4g}); got "
                             f"{rare_share!r}")
        if K == 1:
            rep = np.ones(1)
        else:
            rep = np.full(K, (1.0 - share) / (K - 1))
            rep[0] = share
        out = np.empty((self.size, K + M))
        for i in range(self.size):
            g = self.good_masses[i] if self.good_masses is not None else ()
            out[i, :K] = (_composition(g, mu[i], K, floor) if g else rep * mu[i])
            bm = self.bad_masses[i] if self.bad_masses is not None else ()
            out[i, K:] = (_composition(bm, 1 - mu[i], M, floor) if bm
                          else np.full(M, (1 - mu[i]) / M))
        return out / out.sum(-1, keepdims=True)

    def describe(self) -> str:
        """One line: the source, the size and the mean pass rate."""
        return (f"{self.source}: mean pass rate {self.mean_pass_rate():.4g}"
                + ("" if self.beta else f", {self.size} prompts")
                + ("" if self.good_masses is None else ", good-mode masses known"))


def _tail_miss(mu, tau, G):
    """FG Lemma 3.1 eq. (11) (:func:`~simplexlab.theory.tail_miss`) as a NumPy array."""
    mu, tau, G = np.broadcast_arrays(mu, np.minimum(tau, mu), G)
    return np.asarray(tail_miss(mu, tau, G), float)
