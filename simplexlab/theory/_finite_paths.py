r"""The cell totals of a group rule at group size ``G``: every path that computes them.

What :func:`~simplexlab.theory.expected_update` and :class:`~simplexlab.theory.FiniteGroup`
(:mod:`simplexlab.theory._finite`) rest on: the *cell totals*
``W[r, c] = E[Σ_{i ∈ (c, r)} A_i]``, the expected advantage carried by the rollouts of mode
``c`` scored ``r`` (a *cell*), so that ``E[w_c] = s (W[0, c] + W[1, c])`` (``s = 1/G`` for the
mean reduction, 1 for the sum). This module computes them along one of these paths:

- ``"enumerate"``: every multinomial outcome of the ``G`` draws over the cells (the rule is run
  on one representative group per outcome, vectorised); exact, for small ``G`` and few cells.
- ``"counts"``: for a rule that sees only a rollout's own reward ``r`` and the group's success
  count ``S`` (GRPO, Dr.GRPO, RLOO, F-GRPO, IAC, GRPO-N, ...): with ``S' ~ Bin(G − 1, q)``,
  ``W[r, c] = G q_{r,c} E[A(r, r + S')]``; ``O(G)``, the rule run on ``G + 1`` groups.
- ``"clusters"``: for a rule invariant under relabelling the modes among the rollouts scored
  correct and, separately, among those scored incorrect (G²RPO: its plug-in statistics depend
  on the partition of the correct-scored counts into clusters and of the incorrect ones, and a
  rollout's advantage on its own cluster's count). A dynamic programme over the cells in the
  space of integer partitions (generating functions of the Poissonised counts, conditioned on
  their total ``G``), the rule run once per pair of partitions; exact, every safeguard included.
- ``"rule"``: the rule's own exact reduction (:meth:`AbstractGroupRule.cell_totals`), where it
  has one.
- ``"montecarlo"``: ``num_samples`` sampled groups, with the standard error of every entry (the
  fallback; never chosen silently: the result names its path).

The rule itself is the layer above's (:mod:`simplexlab.shaping`): this module sees it through
the small interface :class:`AbstractGroupRule` and never imports it.
"""

from __future__ import annotations

import abc
import functools
import inspect
import itertools
import math
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln, xlogy

from .._checks import as_int, check, error_if, is_concrete, xp
from ._verifier import Verifier

__all__ = ["MAX_SIZE", "PATHS", "STRUCTURES", "AbstractGroupRule", "StaticInt", "active_cells",
           "binomial_pmf", "cell_totals", "check_group_size", "check_time",
           "checked_group_size", "checked_one_group_size", "choose_path", "cluster_second_size",
           "cluster_size", "clusters_second_moments", "compositions", "count_advantages",
           "counts_totals", "enumeration_outcomes", "enumeration_size", "group_index",
           "known_zero_rates", "log_factorial", "montecarlo_bytes", "pick_path", "poisson_pmf",
           "sampled_cell_totals", "takes_mask"]

#: the ways :func:`cell_totals` computes an expectation ("auto" picks one)
PATHS = ("auto", "rule", "counts", "clusters", "enumerate", "montecarlo")
#: what a rule's advantages may depend on (:attr:`AbstractGroupRule.structure`)
STRUCTURES = ("counts", "clusters", "general")
#: default bound on a representative table (groups × G entries) of the exact paths
MAX_SIZE = 4_000_000




class AbstractGroupRule(eqx.Module):
    r"""An advantage rule as the finite-group theory sees it (implemented by
    :mod:`simplexlab.shaping` for every method of ``METHODS``).

    ``advantages(rewards, modes, logp, t, num_clusters)`` returns the per-rollout advantages of a
    batch of full groups ``(*groups, G)`` (``rewards`` in {0, 1}, ``modes`` int in
    ``[0, num_clusters)``, ``logp`` the log-probability of each rollout; ``t`` the mean-field time,
    for a warm-up). A rule that is not group-local (REINFORCE++) normalises over the batch it is
    given: its last two axes are then one batch of groups ``(num_groups, G)``. Where the group
    size is data (a traced ``G`` below a static ``max_group_size``, :func:`cell_totals`), the
    groups are padded to the bound and the call gains ``mask=`` (the valid rollouts, the first
    ``G`` of each group): a rule that takes no ``mask`` serves the static group sizes only.
    """

    #: what the advantages depend on: ``"counts"`` (own reward and the group's success count),
    #: ``"clusters"`` (invariant under relabelling modes within the correct-scored and within
    #: the incorrect-scored rollouts, no log-probabilities), ``"general"``
    structure: ClassVar[str] = "general"

    @abc.abstractmethod
    def advantages(self, rewards, modes, logp, t, num_clusters: int): ...

    @property
    def group_local(self) -> bool:
        """A group's advantages depend on that group alone."""
        return True

    @property
    def min_group_size(self) -> int:
        """The smallest group size the rule is defined for (at least 2)."""
        return 2

    @property
    def num_groups(self) -> int:
        """Groups per batch (a rule that is not group-local normalises over them)."""
        return 1

    def cell_totals(self, q1, q0, probs, group_size: int, t, num_clusters: int, active,
                    **bound):
        """The rule's own exact reduction of the cell totals ``W`` ``(2, C)`` (module
        docstring) from the cell probabilities ``q1 = π P(r = 1 | ·)``, ``q0 = π P(r = 0 | ·)``
        (``active``: the mode ids that can fill a correct- and an incorrect-scored cell);
        called only where :meth:`reduction_size` is not ``None``. ``bound``: empty, or
        ``max_group_size=`` (a static bound: ``group_size`` is then a traced value below it),
        passed only where :meth:`reduction_size` accepted that bound."""
        return None

    def reduction_size(self, K: int, M: int, group_size: int, active, **bound) -> int | None:
        """The size of the rule's own reduction at these sizes (``None``: it has none);
        ``bound``: empty, or ``max_group_size=`` (the reduction must then serve every group
        size up to it in one program, its sizes those of the bound; ``None``: it cannot)."""
        return None

    def checked(self) -> AbstractGroupRule:
        """The same rule with run-time checks of its parameters attached."""
        return self



# --------------------------------------------------------------------------- probabilities


@functools.lru_cache(maxsize=64)
def _log_factorials(size: int) -> np.ndarray:
    """``log k!`` for ``k = 0..size`` (``math.lgamma``, float64)."""
    return np.array([math.lgamma(k + 1.0) for k in range(size + 1)])


def log_factorial(n, size: int | None = None, dtype=None):
    r"""``log n!`` elementwise for integer-valued ``n``, from a table on the host instead of
    ``lgamma`` in the program: each ``lgamma`` costs about 17 ms of XLA's compilation on a CPU
    (GRPO's field at K = 3, M = 2, G = 8 held three, its step covariance six), and the counts'
    coefficients are integers. ``n`` concrete: a NumPy array of ``dtype``. ``n`` traced: a
    gather from the table of ``0..size`` (``size`` static, ``n`` in that range; no ``size``:
    ``gammaln``)."""
    if is_concrete(n) and not isinstance(n, jax.Array):
        a = np.asarray(n)
        k = np.rint(a).astype(np.int64)
        if a.size and (np.any(np.abs(a - k) > 1e-9) or np.any(k < 0)):
            raise ValueError(f"log_factorial: n must be non-negative integers; got "
                             f"{a.tolist()!r}")
        table = _log_factorials(int(k.max()) if k.size else 0)
        return table[k].astype(dtype or float)
    n = jnp.asarray(n)
    dtype = dtype or (n.dtype if jnp.issubdtype(n.dtype, jnp.floating) else float)
    if size is None:
        return gammaln(n.astype(dtype) + 1.0)
    k = jnp.clip(jnp.round(n).astype(jnp.int32), 0, size)
    return jnp.asarray(_log_factorials(size), dtype)[k]


def poisson_pmf(rate, n, size: int | None = None):
    r"""``e^{−λ} λ^n / n!`` (``0^0 = 1``), elementwise; ``n``: host integers, or traced ones
    ``<= size`` (:func:`log_factorial`)."""
    rate = jnp.asarray(rate)
    lf = log_factorial(n, size, rate.dtype)
    n = jnp.asarray(n, rate.dtype)
    return jnp.exp(xlogy(n, rate) - rate - lf)


def binomial_pmf(n, q, size: int | None = None):
    """``P(S = s)``, ``s = 0..n``, ``S ~ Bin(n, q)`` (exact at ``q ∈ {0, 1}``). With ``size``
    (static): ``s = 0..size`` and 0 beyond ``n``, which may then be a traced value ``<= size``.
    The binomial coefficients from :func:`log_factorial`'s table (no ``lgamma`` compiled)."""
    if size is None:
        n = as_int(n, "binomial_pmf: n", lower=0)
        s, lf = np.arange(n + 1), _log_factorials(n)
        logc = jnp.asarray(lf[n] - lf[s] - lf[n - s], q.dtype)
        s = jnp.asarray(s, q.dtype)
        return jnp.exp(logc + xlogy(s, q) + xlogy(n - s, 1.0 - q))
    s = np.arange(size + 1)
    logc_s = log_factorial(s, dtype=q.dtype)
    s = jnp.asarray(s, q.dtype)
    n = jnp.asarray(n, q.dtype)
    inside = s <= n
    r = jnp.where(inside, n - s, 0.0)
    logc = log_factorial(n, size, q.dtype) - logc_s - log_factorial(r, size, q.dtype)
    return jnp.where(inside, jnp.exp(logc + xlogy(s, q) + xlogy(r, 1.0 - q)), 0.0)


def takes_mask(rule) -> bool:
    """Whether ``rule.advantages`` takes ``mask=`` (the padded groups of a group size given as
    data, :func:`count_advantages`)."""
    try:
        params = inspect.signature(rule.advantages).parameters
    except (TypeError, ValueError):
        return False
    return "mask" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD
                                   for p in params.values())


def group_index(G):
    """A group size as an index (``int32``; a traced ``G`` of any numeric dtype)."""
    return jnp.round(jnp.asarray(G)).astype(jnp.int32)


def _cells(verifier: Verifier, probs, K: int):
    """``(q1, q0)``: the probabilities of the cells (mode c scored 1) and (mode c scored 0)."""
    C = probs.shape[-1]
    good = jnp.arange(C) < K
    fn = jnp.asarray(verifier.delta_fn, probs.dtype)
    fp = jnp.asarray(verifier.delta_fp, probs.dtype)
    p1 = jnp.where(good, 1.0 - fn, fp)
    return probs * p1, probs * (1.0 - p1)


def known_zero_rates(verifier: Verifier) -> tuple[bool, bool]:
    """``(δ_FN == 0, δ_FP == 0)`` where the rates are concrete (a traced rate: ``False``)."""
    def zero(v):
        if isinstance(v, jax.core.Tracer):
            return False
        return bool(np.all(np.asarray(v) == 0))
    return zero(verifier.delta_fn), zero(verifier.delta_fp)


def active_cells(verifier: Verifier, K: int, M: int, zero_rates=None):
    """The mode ids that can fill a correct-scored cell and an incorrect-scored one: static,
    from the verifier's rates where they are known zeros (``zero_rates``, or read from the
    verifier where it is concrete; a traced rate: every mode)."""
    fn0, fp0 = known_zero_rates(verifier) if zero_rates is None else zero_rates
    C = K + M
    good = tuple(range(K)) if fp0 else tuple(range(C))
    bad = tuple(range(K, C)) if fn0 else tuple(range(C))
    return good, bad


# --------------------------------------------------------------------------- the paths


def count_advantages(rule, probs, G, t, C, max_group_size: int | None = None):
    """``(a0, a1)``: a count rule's advantage ``A(0, s)`` of an incorrect rollout in a group of
    ``s = 0..G−1`` successes and ``A(1, s)`` of a correct one, ``s = 1..G``: the rule on the
    ``G + 1`` groups of ``s`` correct rollouts (mode 0), then incorrect ones (mode ``C − 1``).
    With ``max_group_size`` (static) ``G`` may be traced: the rule runs on the
    ``max_group_size + 1`` groups padded to the bound (``mask=``: the first ``G`` rollouts
    valid), and ``a0``, ``a1`` have the bound's length, zero beyond ``G``."""
    dt = probs.dtype
    B = G if max_group_size is None else max_group_size
    # group s has its first s rollouts correct: built in the program (iotas), not as (G+1, G)
    # literals (at G = 256 they made up most of the program's text and its compilation time)
    col = jax.lax.broadcasted_iota(jnp.int32, (B + 1, B), 1)
    correct = col < jax.lax.broadcasted_iota(jnp.int32, (B + 1, B), 0)
    modes = jnp.where(correct, 0, C - 1).astype(jnp.int32)
    logp = jnp.log(jnp.where(correct, probs[0], probs[C - 1]))
    if max_group_size is None:
        adv = rule.advantages(correct.astype(dt), modes, logp, t, C)
        # a correct rollout when the group has s = 1..G successes; an incorrect one at s <= G-1
        return adv[:-1, G - 1], adv[1:, 0]
    n = group_index(G)
    adv = rule.advantages(correct.astype(dt), modes, logp, t, C, mask=col < n)
    s = jnp.arange(B, dtype=jnp.int32)
    a0 = jnp.take_along_axis(adv[:-1], jnp.broadcast_to(n - 1, (B, 1)), 1)[:, 0]
    return jnp.where(s <= n - 1, a0, 0.0), jnp.where(s + 1 <= n, adv[1:, 0], 0.0)


def counts_totals(rule, q1, q0, probs, G, t, C, max_group_size: int | None = None):
    """The ``"counts"`` path: the rule on ``G + 1`` groups (``s`` correct, then incorrect);
    ``max_group_size``: as :func:`count_advantages`."""
    a0, a1 = count_advantages(rule, probs, G, t, C, max_group_size)
    # the other G - 1 rollouts' successes
    pmf = binomial_pmf(G - 1, jnp.sum(q1), None if max_group_size is None else
                       max_group_size - 1)
    return jnp.stack([G * q0 * jnp.sum(pmf * a0), G * q1 * jnp.sum(pmf * a1)])


@functools.lru_cache(maxsize=32)
def compositions(total: int, parts: int) -> np.ndarray:
    """Every vector of ``parts`` non-negative integers summing to ``total`` (rows)."""
    if parts == 1:
        return np.array([[total]], dtype=np.int64)
    rows = []
    for bars in itertools.combinations(range(total + parts - 1), parts - 1):
        prev, row = -1, []
        for b in bars:
            row.append(b - prev - 1)
            prev = b
        row.append(total + parts - 2 - prev)
        rows.append(row)
    return np.array(rows, dtype=np.int64)


def enumeration_size(group_size: int, num_cells: int) -> int:
    """Number of multinomial outcomes of ``group_size`` draws over ``num_cells`` cells."""
    return math.comb(group_size + num_cells - 1, num_cells - 1)


@functools.lru_cache(maxsize=16)
def _enumeration_tables(G: int, cells: tuple):
    """For cells ``((r, mode), ...)``: the outcomes' counts, each outcome's representative group
    (rewards, modes, cell index of every rollout) and ``log(G! / Π n!)``."""
    counts = compositions(G, len(cells))
    cell_of = np.repeat(np.broadcast_to(np.arange(len(cells)), counts.shape).ravel(),
                        counts.ravel()).reshape(len(counts), G)
    r = np.array([c[0] for c in cells])[cell_of].astype(float)
    m = np.array([c[1] for c in cells])[cell_of].astype(np.int32)
    logc = math.lgamma(G + 1) - np.sum([[math.lgamma(n + 1) for n in row] for row in counts], -1)
    return counts, r, m, cell_of, logc


def enumeration_outcomes(rule, q1, q0, probs, G, t, C, cells):
    """``(prob, adv)``: the probability of every multinomial outcome of the ``G`` draws over
    ``cells`` ``((r, mode), ...)`` and the rule's advantages on its representative group (the
    rows of :func:`_enumeration_tables`)."""
    counts, r, m, cell_of, logc = _enumeration_tables(G, cells)
    dt = probs.dtype
    qc = jnp.stack([(q1 if rr == 1 else q0)[mm] for rr, mm in cells])
    logp_out = jnp.asarray(logc, dt) + jnp.sum(xlogy(jnp.asarray(counts, dt), qc), -1)
    prob = jnp.exp(logp_out)
    adv = rule.advantages(jnp.asarray(r, dt), jnp.asarray(m), jnp.log(probs)[m], t, C)
    return prob, adv


def _enumerate_totals(rule, q1, q0, probs, G, t, C, cells):
    cell_of = _enumeration_tables(G, cells)[3]
    dt = probs.dtype
    prob, adv = enumeration_outcomes(rule, q1, q0, probs, G, t, C, cells)
    # an outcome of probability 0 may have a non-finite advantage (a log-probability of -inf)
    mass = jnp.where(prob[:, None] > 0, prob[:, None] * adv, 0.0)
    per_cell = jnp.zeros((len(cells),), dt).at[jnp.asarray(cell_of)].add(mass)
    W = jnp.zeros((2, C), dt)
    for i, (rr, mm) in enumerate(cells):
        W = W.at[rr, mm].add(per_cell[i])
    return W


# ---- the partition path


@functools.lru_cache(maxsize=64)
def _partitions(G: int, max_parts: int):
    """Every partition (non-increasing tuple of positive parts) of a total ``<= G`` into at most
    ``max_parts`` parts; ``index`` maps each to its row."""
    out = [()]

    def grow(prefix, remaining, largest):
        for part in range(min(remaining, largest), 0, -1):
            lam = prefix + (part,)
            out.append(lam)
            if len(lam) < max_parts:
                grow(lam, remaining - part, part)

    if max_parts > 0:
        grow((), G, G)
    return out, {lam: i for i, lam in enumerate(out)}


@functools.lru_cache(maxsize=64)
def _partition_dp(G: int, max_parts: int):
    """Transitions of the partition DP: adding a part ``m >= 1`` to state ``src`` gives ``dst``
    (``(src, m, dst)`` arrays) among the partitions of :func:`_partitions`."""
    states, index = _partitions(G, max_parts)
    src, ms, dst = [], [], []
    for i, lam in enumerate(states):
        if len(lam) >= max_parts:
            continue
        for m in range(1, G - sum(lam) + 1):
            src.append(i)
            ms.append(m)
            dst.append(index[tuple(sorted(lam + (m,), reverse=True))])
    return (np.array(src, np.int64), np.array(ms, np.int64), np.array(dst, np.int64),
            len(states))


def _run_dp(weights, G: int, max_parts: int):
    """``F[λ] = Σ`` over assignments of the parts of ``λ`` to distinct cells of
    ``Π_cells weights[cell, n_cell]``: ``weights`` ``(cells, G + 1)`` (``n = 0`` included)."""
    src, ms, dst, n = _partition_dp(G, max_parts)
    F = jnp.zeros((n,), weights.dtype).at[0].set(1.0)
    for c in range(weights.shape[0]):
        w = weights[c]
        moved = jax.ops.segment_sum(F[src] * w[ms], jnp.asarray(dst), num_segments=n)
        F = F * w[0] + moved
    return F


def _totals(G: int, traced: bool, free: int):
    """The totals that the own parts' ``free`` rollouts may fill: ``free`` itself (one group
    size ``G``), or every one from 0 (``traced``: ``G`` is the bound of a group size given as
    data, and the tables list the groups of every size up to it)."""
    return range(free + 1) if traced else (free,)


@functools.lru_cache(maxsize=16)
def _cluster_pairs(G: int, n1: int, n0: int, good_ids: tuple, bad_ids: tuple,
                   traced: bool = False):
    """The pairs ``(λ_good, λ_bad)`` of partitions with ``|λ_good| + |λ_bad| = G`` of the
    partition path: their representative groups' rewards and modes, the first position of a part
    of each (side, count) in them, the index of each pair and its total. ``traced``: ``G`` is
    the bound, the pairs of every total ``1..G``, their groups padded to ``G`` (reward 0,
    mode 0: masked by the total)."""
    S1, _ = _partitions(G, n1)
    S0, _ = _partitions(G, n0)
    pairs, rewards, modes, part_pos, sizes = [], [], [], [], []
    pair_index = {}
    S0_by_total = {}
    for lam in S0:
        S0_by_total.setdefault(sum(lam), []).append(lam)
    for lg in S1:
        for lb in (lb for g in _totals(G, traced, G - sum(lg))
                   for lb in S0_by_total.get(g, ())):
            if not lg and not lb:  # the empty group (traced only)
                continue
            pair_index[(lg, lb)] = len(pairs)
            pairs.append((lg, lb))
            r, m, pos, at = [], [], {}, 0
            for j, n in enumerate(lg):
                pos.setdefault((1, n), at)
                r += [1.0] * n
                m += [good_ids[j]] * n
                at += n
            for j, n in enumerate(lb):
                pos.setdefault((0, n), at)
                r += [0.0] * n
                m += [bad_ids[j]] * n
                at += n
            sizes.append(at)
            rewards.append(r + [0.0] * (G - at))
            modes.append(m + [0] * (G - at))
            part_pos.append(pos)
    return rewards, modes, part_pos, pair_index, np.array(sizes, np.int64)


def _by_total(states):
    out = {}
    for lam in states:
        out.setdefault(sum(lam), []).append(lam)
    return out


@functools.lru_cache(maxsize=16)
def _cluster_tables(G: int, n1: int, n0: int, good_ids: tuple, bad_ids: tuple,
                    traced: bool = False):
    """Static tables of the partition path: the representative groups of every pair
    ``(λ_good, λ_bad)`` with ``|λ_good| + |λ_bad| = G`` and, for each side, the triples
    ``(rest of own side, own part n, other side, pair, position)``; then the pairs' totals
    (``traced``: of every total up to the bound ``G``, :func:`_cluster_pairs`)."""
    S1, i1 = _partitions(G, n1)
    S0, i0 = _partitions(G, n0)
    E1, e1 = _partitions(G, n1 - 1)
    E0, e0 = _partitions(G, n0 - 1)
    rewards, modes, part_pos, pair_index, sizes = _cluster_pairs(G, n1, n0, good_ids, bad_ids,
                                                                 traced)

    def triples(own, own_rest, other, other_index, side):
        rows = []
        other_by = _by_total(other)
        for rest in own_rest:
            for n in range(1, G - sum(rest) + 1):
                lam = tuple(sorted(rest + (n,), reverse=True))
                if len(lam) > own:
                    continue
                for lo in (lo for g in _totals(G, traced, G - sum(rest) - n)
                           for lo in other_by.get(g, ())):
                    key = (lam, lo) if side == 1 else (lo, lam)
                    p = pair_index[key]
                    rows.append((side_index[side][rest], n, other_index[lo], p,
                                 part_pos[p][(side, n)]))
        return np.array(rows, np.int64).reshape(-1, 5)

    side_index = {1: e1, 0: e0}
    t1 = triples(n1, E1, S0, i0, 1) if n1 > 0 else np.zeros((0, 5), np.int64)
    t0 = triples(n0, E0, S1, i1, 0) if n0 > 0 else np.zeros((0, 5), np.int64)
    return (np.array(rewards), np.array(modes, np.int32), t1, t0, len(rewards), sizes)


@functools.lru_cache(maxsize=256)
def _count_partitions(G: int, max_parts: int) -> tuple:
    """``P[n]`` = number of partitions of ``n <= G`` into at most ``max_parts`` parts."""
    P = np.zeros((max_parts + 1, G + 1), dtype=object)
    P[:, 0] = 1
    for k in range(1, max_parts + 1):
        for n in range(1, G + 1):
            P[k, n] = P[k - 1, n] + (P[k, n - k] if n >= k else 0)
    return tuple(int(v) for v in P[max_parts])


def cluster_size(G: int, n1: int, n0: int, bound: int | None = None,
                 traced: bool = False) -> int:
    """Representative groups × G of the partition path: the pairs of partitions (of the
    correct-scored counts into at most ``n1`` parts and the incorrect ones into ``n0``) whose
    totals add up to ``G`` (``traced``: to any total up to the bound ``G``), counted without
    listing them. With ``bound``: a lower bound (``(G + 1) G``, or ``G`` with one side empty:
    there is at least one pair per total) is returned instead when it already exceeds
    ``bound`` (no count of partitions of a huge ``G``: at G = 10^9 the count's table alone was
    37 GiB)."""
    if bound is not None:
        lower = G * (G + 1 if n1 and n0 else 1)
        if lower > bound:
            return lower
    # a partition of n <= G has at most G parts: more allowed parts count nothing new
    p1, p0 = _count_partitions(G, min(n1, G)), _count_partitions(G, min(n0, G))
    if traced:  # every total 1..G: the bad side's partitions of every total up to G − a
        upto = list(itertools.accumulate(p0))
        return (sum(p1[a] * upto[G - a] for a in range(G + 1)) - 1) * G  # not the empty pair
    return sum(p1[a] * p0[G - a] for a in range(G + 1)) * G


#: bytes per entry of an exact path's tables (the representative groups' rewards, modes, cell
#: ids and counts on the host, their copies and the advantages on the device)
TABLE_ENTRY_BYTES = 64


def montecarlo_bytes(num_samples: int, groups: int, G: int, C: int) -> int:
    """Bytes of the Monte Carlo path's arrays: ``num_samples × groups × G`` rollouts, each with
    its mode, uniform draw, reward, log-probability, advantage and cell id (about 40 bytes) and
    its one-hot cell over ``2C`` cells with the advantage spread over them (``18 C``)."""
    return num_samples * groups * G * (40 + 18 * C)


def _enumeration_bound(G: int, cells: int, bound: int) -> int:
    """:func:`enumeration_size` × ``G``, or a number above ``bound`` when the log-gamma
    estimate already says so (``math.comb`` of a huge ``G`` or of many cells is itself slow)."""
    if cells <= 1:
        return G
    log_size = (math.lgamma(G + cells) - math.lgamma(G + 1) - math.lgamma(cells)
                + math.log(G))
    if log_size > math.log(max(bound, 1)) + 1.0:
        return int(math.exp(min(log_size, 700.0)))  # an estimate, far above the bound
    return enumeration_size(G, cells) * G


def _check_memory(what: str, need: int, fix: str) -> None:
    """``ValueError`` when ``need`` bytes exceed half of this machine's memory."""
    from .._checks import host_memory_bytes

    memory = host_memory_bytes()
    if memory is not None and need > memory // 2:
        raise ValueError(f"{what} needs about {need:,} bytes, more than half of this machine's "
                         f"memory ({memory:,} bytes); {fix}")


def _cluster_advantages(rule, rewards, modes, sizes, G, t, C, dt, max_group_size):
    """The advantages ``(pairs, B)`` of the representative groups; with ``max_group_size``
    (``G`` data below it) those of the groups padded to the bound (``mask=``: the first
    ``total`` rollouts), zero for every pair whose total is not ``G`` (so every term of the
    programme's sums that holds one vanishes: only the groups of size ``G`` count)."""
    rewards, modes = jnp.asarray(rewards, dt), jnp.asarray(modes)
    logp = jnp.zeros(modes.shape, dt)
    if max_group_size is None:
        return rule.advantages(rewards, modes, logp, t, C)
    mask = np.arange(max_group_size)[None, :] < sizes[:, None]
    adv = rule.advantages(rewards, modes, logp, t, C, mask=jnp.asarray(mask))
    return jnp.where((jnp.asarray(sizes, jnp.int32) == group_index(G))[:, None], adv, 0.0)


def _clusters_totals(rule, q1, q0, probs, G, t, C, good_ids, bad_ids,
                     max_group_size: int | None = None):
    """The partition path's cell totals ``E[T]`` ``(2, C)``; ``max_group_size``: ``G`` is
    data below this static bound (the tables list the groups of every size up to it,
    :func:`_cluster_advantages` keeps those of size ``G``)."""
    dt = probs.dtype
    n1, n0 = len(good_ids), len(bad_ids)
    B = G if max_group_size is None else max_group_size  # the tables' (static) size
    traced = max_group_size is not None
    rewards, modes, t1, t0, npairs, sizes = _cluster_tables(B, n1, n0, good_ids, bad_ids,
                                                            traced)
    adv = _cluster_advantages(rule, rewards, modes, sizes, G, t, C, dt, max_group_size)
    n = np.arange(B + 1)
    # Poissonised counts: cell rates G q; conditioned on the total G (divide by its pmf)
    w1 = poisson_pmf(G * q1[jnp.asarray(good_ids)][:, None], n)  # (n1, G+1)
    w0 = poisson_pmf(G * q0[jnp.asarray(bad_ids)][:, None], n)
    norm = poisson_pmf(jnp.asarray(G, dt), G, B)
    W = jnp.zeros((2, C), dt)
    for side, w_own, w_other, ids, rows, parts in ((1, w1, w0, good_ids, t1, n1),
                                                   (0, w0, w1, bad_ids, t0, n0)):
        if not len(ids) or not len(rows):
            continue
        other_parts = n0 if side == 1 else n1
        F_other = _run_dp(w_other, B, other_parts)
        # F without cell k (its weights replaced by "count 0 with weight 1"), for every k
        ident = jnp.zeros((B + 1,), dt).at[0].set(1.0)
        excl = jax.vmap(lambda k, w=w_own, n=parts, e=ident: _run_dp(
            jnp.where((jnp.arange(n) == k)[:, None], e, w), B, n - 1))(
            jnp.arange(parts))  # (parts, states)
        rest, own_n, oth, pair, pos = (jnp.asarray(rows[:, i]) for i in range(5))
        a = adv[pair, pos] * F_other[oth] * own_n.astype(dt)  # (rows,)
        totals = jnp.sum(excl[:, rest] * w_own[:, own_n] * a[None, :], -1) / norm
        W = W.at[side, jnp.asarray(ids)].add(totals)
    return W


@functools.lru_cache(maxsize=16)
def _cluster_second_tables(G: int, n1: int, n0: int, good_ids: tuple, bad_ids: tuple,
                           traced: bool = False):
    """Static tables of the partition path's second moment (:func:`clusters_second_moments`):
    per side the rows ``(rest, n, n', other, pair, position of n, position of n')`` of two
    marked parts ``n``, ``n'`` of the own side (two distinct cells) beside ``rest`` (the own
    side's other parts, at most ``parts − 2``) and the other side's partition; and the rows
    ``(rest_good, n, rest_bad, n', pair, position of n, position of n')`` of one marked part on
    each side. ``traced``: of every total up to the bound ``G`` (:func:`_cluster_pairs`)."""
    _, _, part_pos, pair_index, _ = _cluster_pairs(G, n1, n0, good_ids, bad_ids, traced)
    S = {1: _partitions(G, n1), 0: _partitions(G, n0)}
    E = {1: _partitions(G, n1 - 1), 0: _partitions(G, n0 - 1)}
    same = {}
    for side, own in ((1, n1), (0, n0)):
        rows = []
        if own >= 2:
            rest_states, rest_index = _partitions(G, own - 2)
            other_states, other_index = S[1 - side]
            other_by = _by_total(other_states)
            for rest in rest_states:
                free = G - sum(rest)
                for n in range(1, free):
                    for n2 in range(1, free - n + 1):
                        lam = tuple(sorted(rest + (n, n2), reverse=True))
                        for lo in (lo for g in _totals(G, traced, free - n - n2)
                                   for lo in other_by.get(g, ())):
                            p = pair_index[(lam, lo) if side == 1 else (lo, lam)]
                            rows.append((rest_index[rest], n, n2, other_index[lo], p,
                                         part_pos[p][(side, n)], part_pos[p][(side, n2)]))
        same[side] = np.array(rows, np.int64).reshape(-1, 7)
    rows = []
    if n1 >= 1 and n0 >= 1:
        (R1, e1), (R0, e0) = E[1], E[0]
        R0_by = _by_total(R0)
        for r1 in R1:
            for b in range(G - sum(r1) - 1):
                for r0, free in ((r0, free) for free in _totals(G, traced, G - sum(r1) - b)
                                 if free >= 2 for r0 in R0_by.get(b, ())):
                    for n in range(1, free):
                        lg = tuple(sorted(r1 + (n,), reverse=True))
                        lb = tuple(sorted(r0 + (free - n,), reverse=True))
                        p = pair_index[(lg, lb)]
                        rows.append((e1[r1], n, e0[r0], free - n, p, part_pos[p][(1, n)],
                                     part_pos[p][(0, free - n)]))
    return same[1], same[0], np.array(rows, np.int64).reshape(-1, 7)


def cluster_second_size(G: int, n1: int, n0: int, bound: int | None = None,
                        traced: bool = False) -> int:
    """Table entries of the partition path's second moment: its rows (two marked parts on one
    side, or one on each, :func:`_cluster_second_tables`) times the pairs of cells they serve,
    plus the first moment's (:func:`cluster_size`), counted without listing them (with
    ``bound``: a lower bound once it exceeds ``bound``, as :func:`cluster_size`; ``traced``:
    the rows of every total up to the bound ``G``)."""
    first = cluster_size(G, n1, n0, bound=bound, traced=traced)
    if bound is not None and first > bound:
        return first
    def counts(k):
        return _count_partitions(G, min(k, G)) if k >= 0 else (0,) * (G + 1)

    def upto(c):  # traced: the other side's partitions of every total up to the one left
        return list(itertools.accumulate(c)) if traced else c

    total = 0
    for own, other in ((n1, n0), (n0, n1)):
        if own < 2:
            continue
        rest, oth = counts(own - 2), upto(counts(other))
        rows = sum(rest[a] * (m - 1) * oth[G - a - m] for a in range(G + 1)
                   for m in range(2, G - a + 1))
        total += rows * (own * (own - 1) // 2)
    if n1 >= 1 and n0 >= 1:
        r1, r0 = counts(n1 - 1), counts(n0 - 1)
        # the two marked parts share the f = G - a - b rollouts left (f - 1 ways); traced: every
        # f' <= f, 1 + 2 + ... + (f - 1) ways
        ways = (lambda f: f * (f - 1) // 2) if traced else (lambda f: f - 1)
        rows = sum(r1[a] * r0[b] * ways(G - a - b) for a in range(G + 1)
                   for b in range(G - a - 1))
        total += rows * (n1 + n0)
    return first + total


def clusters_second_moments(rule, q1, q0, probs, G, t, C, good_ids, bad_ids,
                            max_group_size: int | None = None):
    r"""The partition path's second moment: ``(W, M2)``, the cell totals ``E[T]`` ``(2, C)``
    (:func:`_clusters_totals`, the same numbers) and ``E[T_{rc} T_{r'c'}]`` ``(2, C, 2, C)`` of
    a rule with the cluster symmetry. Every rollout of a cell (mode ``c`` scored ``r``) carries
    the advantage of its cluster's count ``n``, so ``T_{rc} = n A_r(n, λ)``; with the cells'
    counts Poissonised (rates ``G q``, conditioned on their total ``G``) the sums over the
    outcomes factor over the cells as in the mean, with one cell (``E[T²]``: ``n² A²``) or two
    cells (``E[T T']``: ``n n' A A'``, both marked parts beside the partitions of the others)
    taken out of the programme. ``max_group_size``: ``G`` is data below this static bound
    (as :func:`_clusters_totals`)."""
    dt = probs.dtype
    n1, n0 = len(good_ids), len(bad_ids)
    B = G if max_group_size is None else max_group_size  # the tables' (static) size
    traced = max_group_size is not None
    W = _clusters_totals(rule, q1, q0, probs, G, t, C, good_ids, bad_ids, max_group_size)
    rewards, modes, t1, t0, _, sizes = _cluster_tables(B, n1, n0, good_ids, bad_ids, traced)
    same1, same0, cross = _cluster_second_tables(B, n1, n0, good_ids, bad_ids, traced)
    adv = _cluster_advantages(rule, rewards, modes, sizes, G, t, C, dt, max_group_size)
    n = np.arange(B + 1)
    ids = {1: good_ids, 0: bad_ids}
    parts = {1: n1, 0: n0}
    w = {1: poisson_pmf(G * q1[jnp.asarray(good_ids)][:, None], n),
         0: poisson_pmf(G * q0[jnp.asarray(bad_ids)][:, None], n)}
    norm = poisson_pmf(jnp.asarray(G, dt), G, B)
    ident = jnp.zeros((B + 1,), dt).at[0].set(1.0)

    def without(side, drop, max_parts):
        """The programme of ``side`` with the cells ``drop`` ``(pairs, k)`` taken out."""
        cells = jnp.arange(parts[side])
        return jax.vmap(lambda d: _run_dp(jnp.where(jnp.any(cells[:, None] == d[None, :], 1)
                                                    [:, None], ident, w[side]),
                                          B, max_parts))(drop)

    F = {s: _run_dp(w[s], B, parts[s]) for s in (0, 1)}
    excl = {s: without(s, jnp.arange(parts[s])[:, None], parts[s] - 1) if parts[s] else None
            for s in (0, 1)}
    M2 = jnp.zeros((2, C, 2, C), dt)
    for side, rows, same in ((1, t1, same1), (0, t0, same0)):
        if not parts[side]:
            continue
        cid = jnp.asarray(ids[side])
        if len(rows):  # one cell: E[T_k²] = E[n² A²]
            rest, own_n, oth, pair, pos = (jnp.asarray(rows[:, i]) for i in range(5))
            a = adv[pair, pos] ** 2 * F[1 - side][oth] * own_n.astype(dt) ** 2
            diag = jnp.sum(excl[side][:, rest] * w[side][:, own_n] * a[None, :], -1) / norm
            M2 = M2.at[side, cid, side, cid].add(diag)
        if len(same):  # two cells k < k' of one side
            ka, kb = np.triu_indices(parts[side], 1)
            ex2 = without(side, jnp.asarray(np.stack([ka, kb], 1)), parts[side] - 2)
            rest, na, nb, oth, pair, pa, pb = (jnp.asarray(same[:, i]) for i in range(7))
            c = (adv[pair, pa] * adv[pair, pb] * (na * nb).astype(dt) * F[1 - side][oth])
            vals = jnp.sum(ex2[:, rest] * w[side][ka][:, na] * w[side][kb][:, nb]
                           * c[None, :], -1) / norm
            ia, ib = cid[ka], cid[kb]
            M2 = M2.at[side, ia, side, ib].add(vals).at[side, ib, side, ia].add(vals)
    if len(cross):  # one cell on each side
        r1, na, r0, nb, pair, pa, pb = (jnp.asarray(cross[:, i]) for i in range(7))
        c = adv[pair, pa] * adv[pair, pb] * (na * nb).astype(dt)
        A = excl[1][:, r1] * w[1][:, na]  # (n1, rows)
        B = excl[0][:, r0] * w[0][:, nb]  # (n0, rows)
        X = (A * c[None, :]) @ B.T / norm
        g, b = jnp.asarray(good_ids), jnp.asarray(bad_ids)
        M2 = M2.at[1, g[:, None], 0, b[None, :]].add(X).at[0, b[:, None], 1, g[None, :]].add(X.T)
    return W, M2


# ---- Monte Carlo


def sampled_cell_totals(rule, probs, verifier, K, G, t, C, num_samples, key):
    """The cell totals of ``num_samples`` sampled batches of ``rule.num_groups`` groups:
    ``(num_samples, num_groups, 2 C)``, entry ``r C + c`` the total advantage of the group's
    rollouts of mode ``c`` scored ``r``."""
    dt = probs.dtype
    B = rule.num_groups
    k1, k2 = jax.random.split(key)
    shape = (num_samples, B, G)
    modes = jax.random.categorical(k1, jnp.log(probs), shape=shape).astype(jnp.int32)
    rewards = verifier.outcome(jax.random.uniform(k2, shape, dt), modes < K)
    adv = jax.vmap(lambda r, m: rule.advantages(r, m, jnp.log(probs)[m], t, C))(rewards, modes)
    cell = rewards.astype(jnp.int32) * C + modes
    onehot = cell[..., None] == jnp.arange(2 * C, dtype=jnp.int32)
    return jnp.sum(jnp.where(onehot, adv[..., None], 0.0), -2)


def _montecarlo_totals(rule, probs, verifier, K, G, t, C, num_samples, key):
    B = rule.num_groups
    per = sampled_cell_totals(rule, probs, verifier, K, G, t, C, num_samples, key).reshape(
        num_samples * B, 2, C)
    return jnp.mean(per, 0), jnp.std(per, 0, ddof=1) / jnp.sqrt(num_samples * B)


# --------------------------------------------------------------------------- dispatch


#: why an exact path does not apply to a rule
_WHY = {"rule": "the rule has no exact reduction of its own for these settings",
        "counts": "the rule does not declare that it sees only its own reward and the success "
                  "count (structure='counts')",
        "clusters": "the rule does not declare the cluster symmetry (structure='clusters')",
        "enumerate": "the rule is not group-local (its batch of groups is not enumerable)"}


#: why a path does not apply where the group size is data (``max_group_size`` set)
_WHY_TRACED = {"rule": "the rule's own reduction is built for one group size (it takes no "
                       "max_group_size)",
               "counts": _WHY["counts"] + ", or its advantages take no mask= (the valid "
                         "rollouts of the groups padded to max_group_size)",
               "clusters": _WHY["clusters"] + ", or its advantages take no mask= (the valid "
                           "rollouts of the groups padded to max_group_size)",
               "enumerate": "the outcome tables are built for one group size",
               "montecarlo": "the sampled groups are drawn at one group size"}


def pick_path(sizes: dict, path, G, K, M, max_size, *, allow_montecarlo, what="path",
              applies="", per_entry=None, max_group_size=None):
    """``path`` itself, checked against the table ``sizes`` (name -> entries, ``None`` where
    it does not apply), or ("auto") the first that fits within ``max_size``, else
    ``"montecarlo"`` where allowed; ``what``, ``applies`` name the quantity in the errors,
    ``per_entry`` (bytes) adds the table's memory to them. ``max_group_size``: the group size
    is data below it (``sizes`` are the bound's; no Monte Carlo)."""
    traced = max_group_size is not None
    if traced:
        applies += (f" with the group size as data (max_group_size = {max_group_size}: one "
                    f"program for every G up to it)")
        allow_montecarlo = False
        if path == "montecarlo":
            raise ValueError(f"path='montecarlo' does not apply{applies}: "
                             f"{_WHY_TRACED['montecarlo']}; use a static group_size "
                             "(max_group_size=None)")
    if path == "montecarlo":
        return path
    if path != "auto":
        size = sizes[path]
        if size is None:
            why = (_WHY_TRACED if traced else _WHY)[path]
            fix = ("path='auto', or a static group_size (max_group_size=None)" if traced else
                   "path='auto' or 'montecarlo'")
            raise ValueError(f"path={path!r} does not apply{applies}: {why}; use {fix}")
        if size > max_size:
            mem = "" if per_entry is None else f" (about {per_entry * size / 2**30:.2f} GiB)"
            raise ValueError(f"path={path!r} at G = {G} with K = {K}, M = {M} needs at least "
                             f"{size:,} table entries{mem} > max_size = {max_size:,}; use "
                             f"path='montecarlo' (a stated confidence bound) or a smaller G")
        return path
    for name, size in sizes.items():
        if size is not None and size <= max_size:
            return name
    if allow_montecarlo:
        return "montecarlo"
    known = {k: v for k, v in sizes.items() if v is not None}
    if traced:
        raise ValueError(f"no exact {what} serves the group size as data up to max_group_size "
                         f"= {max_group_size} with K = {K}, M = {M} (C = {K + M}): table "
                         f"entries {known} (max_size = {max_size:,}); the counts path needs a "
                         "rule with structure='counts', the clusters path one with "
                         "structure='clusters' (both: advantages that take mask=), the 'rule' "
                         "path a reduction that takes max_group_size; use a static group_size "
                         "(max_group_size=None)")
    raise ValueError(f"no exact {what} fits at G = {G} with K = {K}, M = {M} (C = {K + M}): "
                     f"table entries {known} > max_size = {max_size:,}; pass "
                     "path='montecarlo' (a stated confidence bound) or a smaller G")


def choose_path(rule: AbstractGroupRule, K, M, G, active, path, max_size, *, allow_montecarlo,
                num_samples: int | None = None, max_group_size: int | None = None):
    """The path to take (static): ``path`` itself, checked, or the first that applies. Sizes
    are estimated before any table is built: an exact path's tables beyond ``max_size``
    entries, or beyond this machine's memory, and a Monte Carlo path (``num_samples`` groups)
    whose arrays cannot fit in it (:func:`montecarlo_bytes`), are refused with a
    ``ValueError`` naming the setting to change. ``max_group_size``: ``G`` is data below this
    static bound (:func:`cell_totals`): only the paths that serve every group size up to it
    in one program apply (``"counts"``, a ``"rule"`` reduction that takes the bound), at the
    bound's sizes."""
    good_ids, bad_ids = active
    C = K + M
    local = rule.group_local
    symmetric = rule.structure in ("counts", "clusters") and local
    traced = max_group_size is not None
    if traced:
        G = max_group_size
    sizes = {
        "rule": (rule.reduction_size(K, M, G, active, max_group_size=G) if traced else
                 rule.reduction_size(K, M, G, active)),
        "counts": ((G + 1) * G if rule.structure == "counts" and local
                   and (not traced or takes_mask(rule)) else None),
        "clusters": (cluster_size(G, len(good_ids), len(bad_ids), bound=max_size,
                                  traced=traced)
                     if symmetric and (not traced or takes_mask(rule)) else None),
        "enumerate": (_enumeration_bound(G, len(good_ids) + len(bad_ids), max_size)
                      if local and not traced else None),
    }
    chosen = pick_path(sizes, path, G, K, M, max_size, allow_montecarlo=allow_montecarlo,
                       max_group_size=max_group_size)
    if chosen == "montecarlo":
        if num_samples is not None:
            _check_memory(f"path='montecarlo' at G = {G} with C = {C} modes, num_samples = "
                          f"{num_samples:,} groups of {rule.num_groups * G:,} rollouts",
                          montecarlo_bytes(num_samples, rule.num_groups, G, C),
                          "lower num_samples (the standard error grows as 1/sqrt(num_samples)) "
                          "or the group size")
    else:
        _check_memory(f"path={chosen!r} at G = {G} with K = {K}, M = {M} ({sizes[chosen]:,} "
                      f"table entries)", sizes[chosen] * TABLE_ENTRY_BYTES,
                      f"lower max_size (now {max_size:,}) or the group size")
    return chosen


def cell_totals(rule: AbstractGroupRule, probs, K: int, group_size, *, verifier: Verifier,
                path: str = "auto", t=0.0, max_size: int = MAX_SIZE, num_samples: int = 4096,
                key=None, allow_montecarlo: bool = True, zero_rates=None,
                max_group_size: int | None = None):
    """``(W, stderr, path)``: the cell totals ``W`` ``(2, C)`` of ``rule`` at the full policy
    ``probs`` (one point, ``C = K + M`` modes, good first) and the path that computed them
    (module docstring); ``stderr`` is zero on the exact paths. ``max_group_size`` (static):
    ``group_size`` is data (a traced whole number in ``[2, max_group_size]``), and one
    program serves every group size up to the bound (the ``"counts"`` path and the rules'
    own reductions that take the bound: their arrays padded to it, what lies above ``G``
    masked); equal to the per-G program's to round-off."""
    probs = jnp.asarray(probs)
    C = probs.shape[-1]
    M = C - K
    G = group_size
    active = active_cells(verifier, K, M, zero_rates)
    chosen = choose_path(rule, K, M, G, active, path, max_size, allow_montecarlo=allow_montecarlo,
                         num_samples=num_samples, max_group_size=max_group_size)
    q1, q0 = _cells(verifier, probs, K)
    zero = jnp.zeros((2, C), probs.dtype)
    if max_group_size is not None:
        G = jnp.asarray(G, probs.dtype)
        if chosen == "rule":
            return (rule.cell_totals(q1, q0, probs, G, t, C, active,
                                     max_group_size=max_group_size), zero, chosen)
        if chosen == "clusters":
            return (_clusters_totals(rule, q1, q0, probs, G, t, C, *active, max_group_size),
                    zero, chosen)
        return counts_totals(rule, q1, q0, probs, G, t, C, max_group_size), zero, chosen
    if chosen == "rule":
        return rule.cell_totals(q1, q0, probs, G, t, C, active), zero, chosen
    if chosen == "counts":
        return counts_totals(rule, q1, q0, probs, G, t, C), zero, chosen
    if chosen == "clusters":
        return _clusters_totals(rule, q1, q0, probs, G, t, C, *active), zero, chosen
    if chosen == "enumerate":
        cells = tuple((1, m) for m in active[0]) + tuple((0, m) for m in active[1])
        return _enumerate_totals(rule, q1, q0, probs, G, t, C, cells), zero, chosen
    key = jax.random.key(0) if key is None else key
    W, se = _montecarlo_totals(rule, probs, verifier, K, G, t, C, num_samples, key)
    return W, se, chosen


SURROGATES = ("log_likelihood", "probability")
REDUCTIONS = ("mean", "sum")


class StaticInt(int):
    """An ``int`` that every JAX transformation leaves static: a pytree node with no leaves
    (``jax.jit``, ``jax.tree_util.tree_map`` and ``vmap`` pass it through as it is). A static
    group size is one, so that a system holding it jits like one whose group size is a static
    field, while the same field holds an array where the group size is data."""

    def __repr__(self):
        return int.__repr__(self)


jax.tree_util.register_pytree_node(StaticInt, lambda x: ((), int(x)),
                                   lambda aux, _: StaticInt(aux))


def check_group_size(who, group_size, rule, max_group_size=None):
    """The group size, checked: without ``max_group_size`` a static integer ``>=`` the rule's
    :attr:`~AbstractGroupRule.min_group_size` (returned as ``int``); with it (a static bound,
    checked alike) ``group_size`` is data: concrete values (a number or an array, one per
    trajectory) must be whole numbers in ``[min_group_size, max_group_size]`` (returned as a
    float array), a traced one is returned as it is (:func:`checked_group_size` checks it at run
    time)."""
    low = max(2, rule.min_group_size)
    if max_group_size is None:
        G = as_int(group_size, f"{who}: group_size (G)", lower=2)
        if G < rule.min_group_size:
            raise ValueError(f"{who}: group_size must be >= {rule.min_group_size} for this "
                             f"rule; got {G}")
        return G
    bound = as_int(max_group_size, f"{who}: max_group_size (the static bound on the group "
                                   "size)", lower=low)
    if not is_concrete(group_size):
        return group_size
    v = np.asarray(group_size)
    if (v.dtype.kind not in "iuf" or v.size == 0 or not np.all(np.isfinite(v))
            or np.any(v != np.round(v)) or np.any(v < low) or np.any(v > bound)):
        raise ValueError(f"{who}: group_size must be whole numbers in [{low}, max_group_size = "
                         f"{bound}]; got {group_size!r}")
    return jnp.asarray(v, jnp.result_type(float))


def checked_group_size(G, max_group_size: int, low: int, carrier, who: str):
    """``carrier`` with a run-time check that the traced group size ``G`` is a whole number in
    ``[low, max_group_size]`` (:func:`check_group_size` checked a concrete one)."""
    bad = (G != jnp.round(G)) | (G < low) | (G > max_group_size) | ~jnp.isfinite(G)
    return error_if(carrier, jnp.any(bad), f"{who}: group_size must be a whole number in "
                                          f"[{low}, max_group_size = {max_group_size}]")


def checked_one_group_size(G, max_group_size, rule, carrier, who: str):
    """``carrier`` as it is where the group size is static (``max_group_size`` ``None``); else
    with ``G`` (data, one number: a ``ValueError`` for an array of them) checked at run time by
    :func:`checked_group_size` against the rule's minimum and the bound."""
    if max_group_size is None:
        return carrier
    if np.ndim(G) != 0:
        raise ValueError(f"{who}: group_size must be one number; got shape {np.shape(G)}")
    return checked_group_size(G, max_group_size, max(2, rule.min_group_size), carrier, who)


def check_settings(who, group_size, surrogate, reduction, path, rule, max_group_size=None):
    if not isinstance(rule, AbstractGroupRule):
        raise ValueError(f"{who}: rule must be an AbstractGroupRule (e.g. from simplexlab.shaping."
                         f"group_rule(method)); got {rule!r}")
    G = check_group_size(who, group_size, rule, max_group_size)
    if surrogate not in SURROGATES:
        raise ValueError(f"{who}: surrogate must be one of {SURROGATES}; got {surrogate!r}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"{who}: reduction must be one of {REDUCTIONS}; got {reduction!r}")
    if path not in PATHS:
        raise ValueError(f"{who}: unknown path {path!r}; choose one of {PATHS}")
    return G


def check_time(t, who: str, carrier):
    """``carrier`` (an array the computation uses), checked that the mean-field time ``t`` is
    finite (a warm-up or a decaying bonus reads it; a rule that does not would let a check on
    ``t`` itself be dropped from the program): eagerly a ``ValueError``, traced a run-time
    check."""
    msg = f"{who}: t (the mean-field time) must be finite"
    if is_concrete(t):
        check(t, lambda a: ~xp.isfinite(a), msg)
        return carrier
    return error_if(carrier, ~jnp.all(jnp.isfinite(t)), msg)
