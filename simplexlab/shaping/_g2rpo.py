r"""G²RPO granularity bonus from cluster counts (G2 Algorithm 1, Listing 1, §4, App. D.4).

For one prompt group with binary rewards ``r_i ∈ {0, 1}`` and cluster ids of the correct rollouts
(and optionally of the incorrect ones), the plug-in estimates are (Alg. 1 lines 2–4)

* ``p̂ = |B| / G`` (bad fraction), ``ŷ_j = n_j / |G|`` over the ``K`` occupied good clusters,
  floored at ``ρ`` and re-normalized (Listing 1 ``clip_min_and_renorm``),
* ``L̂_y = ||ŷ||²``, ``L̂_z = ||ẑ||²`` from the bad clusters (``L̂_z = 1`` when the bad rollouts
  are not clustered: the aggregated (K+1)-arm model, App. D.2 "Why L_z matters"), clipped below
  at ``Lz_min`` (App. D.4 "Remarks for stability").

The bonus is then (Listing 1 steps (d)–(g)): gain ``λ`` from the schedule (constant, A = eq. 50/62,
B = eq. 67); good bonus ``B_j = λ(1/(K ŷ_j) − 1)`` (eq. 44), re-centered so that ``Σ ŷ_j B_j = 0``,
clipped to ``[−B_max, B_max]``; bad bonus = the general neutralizer (53) evaluated on the
*clipped* good bonus (so ``m1 ≠ 0`` is handled), damped for small ``p̂``, clipped to ``B_max``,
and given unchanged to every incorrect rollout (never divided by ``|B|``, App. D.4).

Safeguards (§4 "Practical note", App. D.4): ``|G| = 0`` → all bonuses 0 (plain GRPO);
``p̂ = 0`` → good bonus only, no neutralizer; ``p̂ < p_min`` → no neutralizer; optional smooth
damping ``s(p̂/p_damp)`` (smoothstep) of the neutralizer; optional ``ŷ_j ≥ 1/G`` floor.
"""

from __future__ import annotations

import functools
import math
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import Param, as_int, check
from ..theory.internal import (
    compositions,
    counts_totals,
    group_index,
    log_factorial,
    poisson_pmf,
    unchecked,
)
from ._advantages import ZScoreGroupRule, grpo_advantages, prepare_group
from ._rule import AbstractRule, Groups, finite
from ._schedule import G2RPOConfig

__all__ = ["GAIN", "G2RPOBonusRule", "G2RPORule", "G2RPOStats", "g2rpo_advantages",
           "g2rpo_bonus", "g2rpo_clusters", "g2rpo_stats"]


class G2RPOStats(NamedTuple):
    """Plug-in statistics of one group (G2 Alg. 1 lines 2–4, Listing 1 (a)–(f))."""

    p_hat: jnp.ndarray  # bad fraction |B|/G
    y_hat: jnp.ndarray  # (..., C) clipped and re-normalized good-cluster masses (0 = unoccupied)
    K: jnp.ndarray  # number of occupied good clusters
    L_y: jnp.ndarray
    L_z: jnp.ndarray  # after the Lz_min clip
    gain: jnp.ndarray  # λ after the schedule
    good_bonus: jnp.ndarray  # (..., C) per-cluster bonus after re-centering and B_max clip
    bad_bonus: jnp.ndarray  # neutralizer after damping and clipping (0 when disabled)


def _cluster_masses(ids, member, num_clusters, dtype):
    onehot = (ids[..., :, None] == jnp.arange(num_clusters, dtype=ids.dtype)) & member[..., :, None]
    return jnp.sum(onehot.astype(dtype), axis=-2)


def _check_ids(ids, member, num_clusters, who, other):
    ids = jnp.asarray(ids)
    if not jnp.issubdtype(ids.dtype, jnp.integer):
        raise ValueError(f"{who} cluster ids must be integers; got dtype {ids.dtype}")
    ids = check(ids, lambda a: member & ((a < 0) | (a >= num_clusters)),
                f"{who}_cluster ids of {who} rollouts must lie in [0, {num_clusters})")
    return check(ids, lambda a: ~member & (a != -1),
                 f"{who}_cluster ids must be -1 for {other} and masked rollouts (only {who} "
                 "rollouts are clustered)")


def g2rpo_stats(rewards, good_cluster, bad_cluster=None, mask=None, *,
                config: G2RPOConfig | None = None, num_clusters: int | None = None) -> G2RPOStats:
    r"""Plug-in statistics and per-cluster bonuses of G²RPO for a batch of groups.

    ``rewards``: ``(*groups, G)`` in ``{0, 1}``; ``good_cluster``: int ``(*groups, G)``, the
    cluster id in ``[0, num_clusters)`` of each correct rollout and ``−1`` for incorrect or masked
    ones; ``bad_cluster``: same for incorrect rollouts (``−1`` for correct ones) or ``None``
    (all incorrect rollouts form one bad mode, ``L̂_z = 1``). ``num_clusters`` defaults to ``G``.
    """
    config = G2RPOConfig() if config is None else config
    if not isinstance(config, G2RPOConfig):
        raise ValueError(f"config must be a G2RPOConfig; got {config!r}")
    r, m, mf = prepare_group(rewards, mask)
    r = check(jnp.where(m, r, 0.0), lambda a: (a != 0) & (a != 1),
              "G2RPO rewards must lie in the declared set {0, 1}")
    G = r.shape[-1]
    C = G if num_clusters is None else as_int(num_clusters, "num_clusters", lower=1)
    if np.shape(good_cluster) != r.shape:
        raise ValueError(f"good_cluster must have the shape of rewards {r.shape}; "
                         f"got {np.shape(good_cluster)}")
    good = m & (r == 1)
    bad = m & (r == 0)
    good_cluster = _check_ids(good_cluster, good, C, "good", "incorrect")
    dt = r.dtype
    n = jnp.sum(mf, -1)
    n_good = jnp.sum(good.astype(dt), -1)
    n_bad = jnp.sum(bad.astype(dt), -1)
    p_hat = n_bad / n
    has_good = n_good > 0
    has_bad = n_bad > 0

    # ŷ: occupied clusters, min-prob clip ρ (and optional 1/G floor), re-normalization (Listing 1).
    counts = _cluster_masses(good_cluster, good, C, dt)
    occupied = counts > 0
    K = jnp.sum(occupied.astype(dt), -1)
    y = counts / jnp.where(has_good, n_good, 1.0)[..., None]
    floor = jnp.asarray(config.rho, dt)
    if config.floor_inverse_G:
        floor = jnp.maximum(floor, 1.0 / n)[..., None]
    y = jnp.where(occupied, jnp.maximum(y, floor), 0.0)
    y = y / jnp.where(has_good, jnp.sum(y, -1), 1.0)[..., None]
    L_y = jnp.sum(y * y, -1)

    # L̂_z from the bad clusters (Listing 1 step (c)), or the aggregated bad arm.
    if bad_cluster is None:
        L_z = jnp.where(has_bad, 1.0, 0.0).astype(dt)
    else:
        if np.shape(bad_cluster) != r.shape:
            raise ValueError(f"bad_cluster must have the shape of rewards {r.shape}; "
                             f"got {np.shape(bad_cluster)}")
        bad_cluster = _check_ids(bad_cluster, bad, C, "bad", "correct")
        zc = _cluster_masses(bad_cluster, bad, C, dt)
        z = zc / jnp.where(has_bad, n_bad, 1.0)[..., None]
        L_z = jnp.sum(z * z, -1)
    L_z = jnp.where(has_bad, jnp.maximum(L_z, config.Lz_min), L_z)

    # Gain schedule (eq. 50/62, 67); λ = 0 where p̂ ∉ (0, 1) for schedules A/B (Listing 1 (a)).
    K_safe = jnp.maximum(K, 1.0)
    lam0 = jnp.asarray(config.gain, dt)
    lam = config.gain_class.plugin_gain(lam0, p_hat, L_y, L_z, K, has_bad, config.verifier)

    # Good bonus B_j = λ(1/(K ŷ_j) − 1), eq. (44). reciprocal_bonus takes K from the last axis
    # (length C); rescaling ŷ by K/C makes that n·x equal K ŷ_j on the occupied clusters.
    y_safe = jnp.where(occupied, y, 1.0 / C)
    Bj = unchecked.reciprocal_bonus(y_safe * (K_safe / C)[..., None], lam)
    Bj = jnp.where(occupied, Bj, 0.0)
    Bj = Bj - jnp.sum(y * Bj, -1, keepdims=True)  # re-center (Listing 1 step (e))
    Bj = jnp.where(occupied, jnp.clip(Bj, -config.B_max, config.B_max), 0.0)

    # Neutralizer (53) on the clipped bonus; it depends on z only through L_z = ||z||².
    if config.neutralize:
        z_eff = jnp.sqrt(L_z)[..., None]
        Bb = unchecked.neutralizer(jnp.where(has_bad, p_hat, 1.0), y, z_eff, Bj)
        if config.p_damp > 0:
            t = jnp.clip(p_hat / config.p_damp, 0.0, 1.0)
            Bb = Bb * t * t * (3.0 - 2.0 * t)
        Bb = jnp.clip(Bb, -config.B_max, config.B_max)
        on = has_bad & has_good & (p_hat > 0) & (p_hat >= config.p_min) & (L_y + L_z > 0)
        Bb = jnp.where(on, Bb, 0.0)
    else:
        Bb = jnp.zeros_like(p_hat)
    Bj = jnp.where(has_good[..., None], Bj, 0.0)
    return G2RPOStats(p_hat, y, K, L_y, L_z, lam, Bj, Bb)


def g2rpo_bonus(rewards, good_cluster, bad_cluster=None, mask=None, *,
                config: G2RPOConfig | None = None, num_clusters: int | None = None):
    r"""Per-rollout G²RPO bonus ``B_i`` (G2 Alg. 1 lines 5–11; Listing 1 step (g)).

    Correct rollout in cluster ``j`` → ``B_j`` (eq. 44 with plug-in ``ŷ``, re-centered, clipped);
    incorrect rollout → the same scalar neutralizer (53) (never divided by ``|B|``); masked → 0.
    See :func:`g2rpo_stats` for the arguments and :class:`G2RPOConfig` for the safeguards.
    """
    st = g2rpo_stats(rewards, good_cluster, bad_cluster, mask, config=config,
                     num_clusters=num_clusters)
    r, m, _ = prepare_group(rewards, mask, min_valid=0)
    C = st.good_bonus.shape[-1]
    gid = jnp.asarray(good_cluster)
    # B_{cluster(i)}: a select-and-sum over the C clusters rather than a gather (batched gathers
    # are slow on CPU; every other entry of the sum is an exact zero, so the value is B_j)
    hit = gid[..., :, None] == jnp.arange(C, dtype=gid.dtype)
    per_good = jnp.sum(jnp.where(hit, st.good_bonus[..., None, :], 0.0), -1)
    good = m & (r == 1)
    bad = m & (r == 0)
    return jnp.where(good, per_good, jnp.where(bad, st.bad_bonus[..., None], 0.0))


def g2rpo_advantages(rewards, good_cluster, bad_cluster=None, mask=None, *,
                     config: G2RPOConfig | None = None, num_clusters: int | None = None):
    r"""G²RPO advantages ``Â_i = NormalizeGroup(r)_i + B_i`` (G2 Alg. 1 line 12): the GRPO
    z-score (with ``config.eps``) plus :func:`g2rpo_bonus`."""
    config = G2RPOConfig() if config is None else config
    bonus = g2rpo_bonus(rewards, good_cluster, bad_cluster, mask, config=config,
                        num_clusters=num_clusters)
    return grpo_advantages(rewards, mask, eps=config.eps) + bonus


# --------------------------------------------------------------------------- the rules

GAIN = Param("gain", 1.5, finite, "finite", "λ, λ0",
             "G²RPO's gain: λ (constant schedule) or λ0 (schedules A, B; G2 eqs. 62, 67)")


def g2rpo_clusters(g: Groups, cluster_bad: bool = True):
    """G²RPO's cluster ids (G2 Alg. 1): a correct-scored rollout is clustered among the good by
    its mode, an incorrect one among the bad (``cluster_bad=False``: ``None``, one aggregated bad
    arm); ``−1`` elsewhere. Returns ``(good_cluster, bad_cluster)``."""
    if g.modes is None:
        raise ValueError("G²RPO clusters the rollouts by mode: Groups(rewards, modes=...) needs "
                         "each rollout's mode id (modes=None)")
    m = jnp.ones(jnp.shape(g.rewards), bool) if g.mask is None else g.mask
    r = jnp.asarray(g.rewards)
    good = jnp.where(m & (r == 1), g.modes, -1)
    bad = jnp.where(m & (r == 0), g.modes, -1) if cluster_bad else None
    return good, bad


#: bound on the compositions of the incorrect-scored side in G²RPO's reduction
_MAX_BAD_ROWS = 2_000_000


class _AbstractG2RPORule(AbstractRule):
    r"""G²RPO's rules (G2 Alg. 1), their rule from the schedule (a ``GainSchedule``).

    Their exact finite-group reduction (Listing 1 with ``B_max = ∞`` and an inactive ``ŷ`` floor,
    ``ρ <= 1/G``; the neutralizer only under schedule B, whose neutralizer is affine in
    ``L̂_y``). With ``n_c`` the cluster's count, ``n_good`` the correct-scored rollouts and
    ``K̂`` the occupied good clusters, the centred bonus is ``B_c = λ (n_good/(K̂ n_c) − 1)``
    (centring is exact: ``Σ ŷ_j B_j = 0``), so a cluster's total bonus is ``n_c B_c = λ
    (n_good/K̂ − n_c)`` and the neutralizer (53) is (55) at the plug-in statistics: ``B_b = λ
    (1/K̂ − L̂_y)/(p̂ (L̂_y + L̂_z))``. Their expectations need the joint law of
    ``(n_good, K̂)``, the first moment of ``Σ n_c²`` on it and the own cluster's count, with
    Poissonised counts (each cell's count Poisson(G q_c), the product conditioned on the total
    ``G``): in closed form over the subsets of the correct-scored cells (the cells' generating
    functions multiplied out, ``O(K 2^K G)``) or, with many correct-scored cells, by a dynamic
    programme over them on ``(n_good, K̂)`` (``O(K² G²)``), whose sums over the other cells
    beside an own cell are the derivatives of the all-cells sums in that cell's weights (one
    reverse-mode pass gives every cell's): :func:`_good_cells`. The incorrect-scored side
    (``L̂_z``) by its compositions, summed by total."""

    params: ClassVar[tuple[str, ...]] = ("gain",)
    PARAMS: ClassVar[tuple[Param, ...]] = (GAIN,)
    binary: ClassVar[bool] = True
    modes: ClassVar[bool] = True
    schedule: ClassVar[bool] = True
    structure: ClassVar[str] = "clusters"
    traced_group_size: ClassVar[bool] = True

    def reduction_size(self, bound, K, M, group_size, active, max_group_size=None):
        # the group size as data: the bound's sizes (rho <= 1/max_group_size then holds at
        # every G up to it)
        G = group_size if max_group_size is None else max_group_size
        s = bound.schedule
        if not (math.isinf(float(s.B_max)) and float(s.rho) <= 1.0 / G
                and (not s.neutralize or s.gain_class.attenuated)):
            return None
        n1, n0 = len(active[0]), len(active[1])
        bad = (math.comb(G + n0, n0) if s.cluster_bad
               and (s.gain_class.attenuated or s.neutralize) else 0)
        if bad > _MAX_BAD_ROWS:
            return None
        # the largest intermediates: by the subsets of the correct-scored cells, the differences
        # D (G+1, n1, 2^(n1-1)); by the programme, a Toeplitz matrix per cell, kept for the
        # reverse pass (_good_cells)
        good = ((G + 1) * n1 * 2 ** max(n1 - 1, 0) if _takes_subsets(G, n1)
                else 2 * n1 * (G + 1) ** 2)
        return max(good, bad * max(n0, 1) * n1)


class G2RPOBonusRule(_AbstractG2RPORule):
    """``g2rpo_bonus``: the G²RPO bonus ``B_i`` alone (G2 Alg. 1 lines 5–11,
    :func:`g2rpo_bonus`), to add to another estimator's normalized advantages (the TRL and verl
    adapters add it to theirs)."""

    def __call__(self, groups, params, schedule, step, verifier, num_clusters):
        good, bad = g2rpo_clusters(groups, schedule.cluster_bad)
        return g2rpo_bonus(jnp.asarray(groups.rewards), good, bad, groups.mask,
                           config=schedule.config(step, verifier), num_clusters=num_clusters)

    def cell_totals(self, bound, q1, q0, probs, group_size, t, num_clusters, active,
                    max_group_size=None):
        return _bonus_totals(bound, q1, q0, probs, group_size, t, num_clusters, active,
                             max_group_size)


class G2RPORule(_AbstractG2RPORule):
    """``g2rpo``: G²RPO (G2 Alg. 1, :func:`g2rpo_advantages`): GRPO's z-score plus the bonus of
    :class:`G2RPOBonusRule`; its G → ∞ system is the schedule's (:meth:`GainSchedule.meanfield`:
    eq. 56 with the neutralizer, eq. 48 without)."""

    def __call__(self, groups, params, schedule, step, verifier, num_clusters):
        good, bad = g2rpo_clusters(groups, schedule.cluster_bad)
        return g2rpo_advantages(jnp.asarray(groups.rewards), good, bad, groups.mask,
                                config=schedule.config(step, verifier), num_clusters=num_clusters)

    def limit_system(self, schedule, verifier, eta, step_time):
        return schedule.meanfield(eta=eta, verifier=verifier, step_time=step_time)

    def cell_totals(self, bound, q1, q0, probs, group_size, t, num_clusters, active,
                    max_group_size=None):
        W = _bonus_totals(bound, q1, q0, probs, group_size, t, num_clusters, active,
                          max_group_size)
        return W + counts_totals(ZScoreGroupRule(bound.schedule.eps), q1, q0, probs, group_size,
                                 t, num_clusters, max_group_size)


def _toeplitz(w, G):
    """``T[a', a] = w[a' − a]`` for ``a' > a`` (adding a cell's count ``m >= 1``)."""
    d = jnp.arange(G + 1)[:, None] - jnp.arange(G + 1)[None, :]
    return jnp.where(d >= 1, w[jnp.clip(d, 0, G)], 0.0), d


def _good_dp(weights, G, n1):
    """``(F0, F1)`` ``(G+1, n1+1)``: over assignments of counts to the cells of ``weights``
    ``(cells, G+1)``, ``Σ Π w`` and ``Σ Π w · Σ n²`` by total ``a`` and occupied cells ``κ``."""
    dt = weights.dtype
    F0 = jnp.zeros((G + 1, n1 + 1), dt).at[0, 0].set(1.0)
    F1 = jnp.zeros((G + 1, n1 + 1), dt)

    def shift(x):  # κ → κ + 1
        return jnp.concatenate([jnp.zeros((G + 1, 1), dt), x[:, :-1]], 1)

    for c in range(weights.shape[0]):
        w = weights[c]
        T, d = _toeplitz(w, G)
        T2 = T * (d * d).astype(dt)
        F0, F1 = (w[0] * F0 + shift(T @ F0), w[0] * F1 + shift(T @ F1 + T2 @ F0))
    return F0, F1


def _good_by_dp(lam1, S, n1, cot):
    """:func:`_good_cells` by the dynamic programme over the cells (:func:`_good_dp`, on their
    Poisson weights at the counts ``0..S``) and one reverse-mode pass through it for every own
    cell."""
    w1 = poisson_pmf(lam1[:, None], np.arange(S + 1))  # (n1, S+1)
    (F0, F1), pull = jax.vjp(lambda w: _good_dp(w, S, n1), w1)
    gA, gB = jax.vmap(pull)(cot)[0]  # one reverse pass for both (A, B)
    n = jnp.arange(S + 1, dtype=w1.dtype)
    own = w1 * (gA - n[None, :] * gB)  # (n1, S+1); the count n = 0 is not the own cell's
    return F0, F1, jnp.sum(own[:, 1:], -1)


@functools.cache
def _subset_tables(N: int):
    """The host tables of :func:`_good_by_subsets` for ``N`` cells: which cells each subset
    ``U`` (a bit mask) holds ``(2^N, N)``, its size, ``[y^κ] y^t (1 − y)^(N − t)`` by subset
    ``(2^N, N+1)``, the subsets ``T`` of the cells other than ``k`` ``(N, 2^(N−1))`` and
    ``[y^(κ−1)] y^t (1 − y)^(N − 1 − t)`` ``(N, N+1)``."""
    U = np.arange(2 ** N)
    member = (U[:, None] >> np.arange(N)[None, :]) & 1
    size = member.sum(1)

    def coef(n, t, kappa):  # [y^kappa] y^t (1 - y)^(n - t)
        j = kappa - t
        return np.where((j >= 0) & (j <= n - t),
                        (-1.0) ** np.abs(j) * np.vectorize(math.comb)(
                            np.maximum(n - t, 0), np.clip(j, 0, None)), 0.0)

    kappa = np.arange(N + 1)
    full = coef(N, size[:, None], kappa[None, :])
    others = np.array([[c for c in range(N) if c != k] for k in range(N)],
                      np.int64).reshape(N, N - 1)
    j = np.arange(2 ** (N - 1))
    bits = (j[None, :, None] >> np.arange(N - 1)[None, None, :]) & 1  # (1, J, N-1)
    T = np.sum(bits << others[:, None, :], -1)  # (N, J)
    own = coef(N - 1, np.arange(N)[:, None], kappa[None, :] - 1)
    return member, size, full, T, own


def _good_by_subsets(lam1, S, n1, cot):
    r""":func:`_good_cells` in closed form over the subsets of the cells. A cell of rate
    ``λ_c`` contributes the factor ``e^{−λ_c} ((1 − y) + y e^{λ_c x})`` to the generating
    function ``Σ F0[a, κ] x^a y^κ``, so ``F0[a, κ] = Σ_U [y^κ] y^{|U|} (1 − y)^{N−|U|} E[a, U]``
    with ``E[a, U] = e^{−Λ} Λ_U^a / a!`` (``Λ_U`` the rates of ``U`` summed, ``Λ`` all of
    them), and weighting a cell's count by ``n²`` is ``(x ∂_x)²`` on its factor: ``F1[a, κ] =
    Σ_U [y^κ](…) (a E[a, U] + Q_U E[a − 2, U])``, ``Q_U = Σ_{c ∈ U} λ_c²``. The own cell ``k``
    occupied (its factor ``y e^{−λ_k}(e^{λ_k x} − 1)``, and ``x ∂_x`` of it for the count's
    weight ``n``) beside the subsets ``T`` of the others gives each term of :func:`_good_cells`'s
    sums from ``E[·, T + k]`` and ``D[a, T, k] = E[a, T + k] − E[a, T]``, the latter computed as
    ``E[a, T + k] (−expm1(−a log1p(λ_k / Λ_T)))``, so that a cell of tiny rate keeps its
    relative accuracy (the subtraction itself would lose ``log10(Λ_T / λ_k)`` digits); every
    sum over ``a`` is then a matrix product. ``O(N 2^N G)`` against the programme's
    ``O(N² G²)``: at ``N = 6``, ``G = 64`` and 32 states 1.9 ms against 5.5 ms (2-core CPU),
    compiled in 0.37 s against 0.88 s."""
    N, dt = n1, lam1.dtype
    member, size, full, T, own_coef = _subset_tables(N)
    a = jnp.arange(S + 1, dtype=dt)
    lf = log_factorial(np.arange(S + 1), dtype=dt)
    mem = jnp.asarray(member, dt)
    LamU, QU = mem @ lam1, mem @ (lam1 * lam1)  # (2^N,)
    # E[a, U] = e^{−Λ} Λ_U^a / a! (S+1, 2^N); a subset of rates 0 (the empty one) apart, without
    # the 0/0 of log's derivative there (its derivative in the rates is then taken as 0 at a = 1)
    live = LamU > 0
    logs = a[:, None] * jnp.log(jnp.where(live, LamU, 1.0))[None, :] - lf[:, None]
    E = jnp.exp(jnp.where(live[None, :], logs, jnp.where(a[:, None] == 0, 0.0, -jnp.inf))
                - jnp.sum(lam1))

    def down(x, s):  # x[a − s], 0 below 0
        return jnp.concatenate([jnp.zeros((s,) + x.shape[1:], dt), x[:-s]], 0) if s else x

    def up(x, s):  # x[a + s], 0 past the end (Σ_a x[a − s] y[a] = Σ_a x[a] y[a + s])
        return jnp.concatenate([x[s:], jnp.zeros((s,) + x.shape[1:], dt)], 0) if s else x

    Mf = jnp.asarray(full, dt)
    F0 = E @ Mf
    F1 = (a[:, None] * E + QU[None, :] * down(E, 2)) @ Mf
    # the cotangents on the others' subset sizes: Φ[a, t] = Σ_κ cot[a, κ] [y^(κ−1)] (…)
    (PhA, PhB), (PsA, PsB) = (c @ jnp.asarray(own_coef.T, dt) for c in cot)
    Um = T | (1 << np.arange(N))[:, None]  # T + k, (N, J)
    t = size[T]  # |T|
    # the terms in E[·, T + k]: Σ_a E[a − s, U] Φ[a, t] = (Eᵀ up(Φ, s))[U, t]
    cols = jnp.concatenate([up(PsA, 1), up(PsA, 2), up(PhB, 1), up(PsB, 1), up(PsB, 2),
                            up(PsB, 3)], 1)
    GE = (E.T @ cols).reshape(2 ** N, 6, N)[Um, :, t]  # (N, J, 6)
    LT, QT = LamU[T], QU[T]  # (N, J)
    lk = lam1[:, None]
    pos = LT > 0
    lr = -jnp.log1p(lk / jnp.where(pos, LT, 1.0))
    fac = jnp.where(pos[None], -jnp.expm1(a[:, None, None] * lr[None]),
                    (a > 0)[:, None, None].astype(dt))
    D = E[:, Um] * fac  # (S+1, N, J)
    MD = (D.reshape(S + 1, -1).T @ jnp.concatenate([PhA, up(PsA, 1), up(PsA, 2)], 1))
    GD = jnp.take_along_axis(MD.reshape(N, -1, 3, N), jnp.asarray(t)[:, :, None, None],
                             3)[..., 0]  # (N, J, 3)
    # Σ_n w[n] gA[n]: cell k occupied (F0 by φA; F1 by ψA: the others' n², then its own)
    X = (jnp.sum(GD[..., 0] + LT * GD[..., 1] + QT * GD[..., 2], 1)
         + lam1 * jnp.sum(GE[..., 0], 1) + lam1 ** 2 * jnp.sum(GE[..., 1], 1))
    # Σ_n w[n] n gB[n]: x ∂_x on cell k (F0 by φB; F1 by ψB: the others', then its own n³)
    Y = lam1 * (jnp.sum(GE[..., 2], 1) + jnp.sum(LT * GE[..., 4] + QT * GE[..., 5], 1)
                + jnp.sum(GE[..., 3], 1) + 3 * lam1 * jnp.sum(GE[..., 4], 1)
                + lam1 ** 2 * jnp.sum(GE[..., 5], 1))
    return F0, F1, X - Y


def _good_by_subsets_cost(S: int, n1: int) -> tuple[int, int]:
    """``(subsets, programme)``: the multiply-adds of :func:`_good_by_subsets` and, weighted 4,
    of the programme with its reverse pass. The weight: the programme's small matrix products
    run at about half the rate of the subsets' (at 32 states their run times cross near ``N =
    6, G = 24`` and ``N = 8, G = 32``), and the subsets compile in about half the time (G²RPO's
    field at ``K = 6``, ``M = 2``: 1.0–1.3 s against 1.4–1.9 s at ``G = 8..32``), which in a
    solve of a few hundred field evaluations outweighs up to 0.15 ms more per evaluation."""
    J = 2 ** max(n1 - 1, 0)
    subsets = (S + 1) * n1 * J * (3 * n1 + 4) + (S + 1) * 2 ** n1 * (8 * n1 + 2)
    programme = 4 * 9 * n1 * (S + 1) ** 2 * (n1 + 1)
    return subsets, programme


def _takes_subsets(S: int, n1: int) -> bool:
    """Whether :func:`_good_cells` sums by the subsets (else by the programme):
    :func:`_good_by_subsets_cost`."""
    subsets, programme = _good_by_subsets_cost(S, n1)
    return subsets <= programme


def _good_cells(lam1, S: int, n1: int, cot):
    """``(F0, F1, own)`` over the correct-scored cells of Poisson rates ``lam1`` ``(n1,)`` (their
    weights ``w1[k, n] = Poisson(λ_k)`` at the counts ``n = 0..S``): ``F0``, ``F1`` ``(S+1,
    n1+1)`` as :func:`_good_dp`, and ``own[k] = Σ_{n>=1} w1[k, n] (gA[k, n] − n gB[k, n])``,
    where ``gX`` is the derivative of ``⟨F1, ψX⟩ + ⟨F0, φX⟩`` in ``w1[k, n]`` (``cot = ((φA,
    φB), (ψA, ψB))``). By the subsets of the cells (:func:`_good_by_subsets`) where that costs
    less than the programme (:func:`_good_by_dp`; :func:`_takes_subsets`); the two agree to
    round-off (tests/test_shaping_g2rpo.py)."""
    by = _good_by_subsets if _takes_subsets(S, n1) else _good_by_dp
    return by(lam1, S, n1, cot)


def _bonus_totals(rule, q1, q0, probs, G, t, C, active, max_group_size=None):
    """The bonus's cell totals (the class docstring). ``max_group_size`` (static): ``G`` is
    data below it: the programme's arrays run to the bound (totals ``a <= max_group_size``;
    the recursion over totals is triangular, so its entries up to ``G`` are the per-G ones) and
    every total above ``G`` is given no weight."""
    dt = probs.dtype
    cfg = rule.schedule.config(rule.training_step(t), rule.verifier)
    s = rule.schedule
    good_ids, bad_ids = active
    n1, n0 = len(good_ids), len(bad_ids)
    S = G if max_group_size is None else max_group_size  # the arrays' static size
    lam0 = jnp.asarray(cfg.gain, dt)
    n = jnp.arange(S + 1, dtype=dt)
    nh = np.arange(S + 1)  # the same counts on the host: the pmfs' n! from a table
    Z = poisson_pmf(jnp.asarray(G, dt), G, S)
    gid, bid = jnp.asarray(good_ids), jnp.asarray(bad_ids)
    lam_bad = G * q0[bid] if n0 else jnp.zeros((0,), dt)
    Hb = poisson_pmf(jnp.sum(G * q0), nh)  # Σ over incorrect-scored configs of total b
    a = n  # the number of correct-scored rollouts
    if max_group_size is None:
        def at_rest(x):  # x (indexed by the incorrect side's total) at b = G − a
            return x[::-1]
        b = G - a
    else:
        gi = group_index(G)
        inside = jnp.arange(S + 1, dtype=jnp.int32) <= gi
        rest = jnp.clip(gi - jnp.arange(S + 1, dtype=jnp.int32), 0, S)

        def at_rest(x):  # ... and 0 at the totals a > G, which no group of size G has
            return jnp.where(inside.reshape((-1,) + (1,) * (x.ndim - 1)), x[rest], 0.0)
        b = jnp.where(inside, G - a, 0.0)
    p_hat = b / G
    interior = (b > 0) & (b < G)
    gain_class = s.gain_class
    lam_a = gain_class.p_gain(lam0, p_hat, interior, rule.verifier)
    if max_group_size is not None:
        lam_a = jnp.where(inside, lam_a, 0.0)
    kappa = jnp.arange(1, n1 + 1, dtype=dt)  # occupied good clusters, 1..n1

    # the incorrect-scored side: L̂_z by the compositions of b (only where it matters)
    need_lz = gain_class.attenuated or s.neutralize
    U1 = U2 = V = None
    if need_lz and n0:
        if s.cluster_bad:
            m, bb, keep = _bad_rows(S, n0, dt)  # (R, n0), (R,), (R,)
            # a row's weight is the product of its parts' Poisson pmfs (n0 pmfs, gathered)
            pmf = poisson_pmf(lam_bad[:, None], nh)  # (n0, G+1)
            parts = pmf[jnp.arange(n0)[None, :], m.astype(jnp.int32)]  # (R, n0)
            wrow = jnp.where(keep, jnp.prod(parts, -1), 0.0)
            bf = bb.astype(dt)
            Lz = jnp.where(bb > 0, jnp.sum(m * m, -1) / jnp.where(bb > 0, bf, 1.0) ** 2, 0.0)
            Lz = jnp.where(bb > 0, jnp.maximum(Lz, s.Lz_min), Lz)
            inv = 1.0 / (Lz[:, None] + 1.0 / kappa[None, :])  # (R, n1)
            # Σ_rows of total b of wrow · (1, L̂_z, m) · inv: U1, U2 (G+1, n1), V (G+1, n0, n1)
            X = wrow[:, None] * jnp.concatenate([jnp.ones_like(Lz)[:, None], Lz[:, None], m], 1)
            out = _by_total_dot(X, inv, bb, S, n0)
            U1, U2, V = out[:, 0], out[:, 1], out[:, 2:]
        else:
            Lz1 = jnp.maximum(1.0, s.Lz_min)
            inv = 1.0 / (Lz1 + 1.0 / kappa)
            U1 = Hb[:, None] * inv[None, :]
            U2 = Lz1 * U1
            share = lam_bad / jnp.maximum(jnp.sum(lam_bad), 1e-300)
            V = (Hb * n)[:, None, None] * share[None, :, None] * inv[None, None, :]
        U1 = U1.at[0].set(0.0)  # b = 0: no incorrect rollout (λ = 0 under A/B)
        U2 = U2.at[0].set(0.0)

    W = jnp.zeros((2, C), dt)
    if n1:
        # the own cell k (count n >= 1) beside the others (total a', κ' occupied): the sums
        # over the others' assignments are the derivatives of the all-cells sums in cell k's
        # weights, ∂F0[a, κ]/∂w1[k, n] = Σ_{others} Π w (a = a' + n, κ = κ' + 1) and
        # ∂F1[a, κ]/∂w1[k, n] = Σ_{others} Π w · (Σ_{others} n_c² + n²), so each cell's total
        # is one reverse-mode pass through the all-cells recursion (jax.vjp), not a recursion
        # per left-out cell, or in closed form (_good_cells): with λ = λ(a), u1, u2 the
        # incorrect side's sums at b = G − a,
        #   W[1, k] = Σ_n w1[k, n] Σ λ (a/κ − n) [(E1 + n² E0) u1/a² + E0 u2]
        #           = Σ_n w1[k, n] (gA[k, n] − n gB[k, n]),
        # gX = ∂(⟨F1, ψX⟩ + ⟨F0, φX⟩)/∂w1 with ψA = λ a/κ u1/a², ψB = λ u1/a², φA = λ a/κ u2,
        # φB = λ u2 (schedule A / constant: ψ = 0, u2 → the incorrect side's mass Hb(G − a))
        af = a[:, None]  # (a, 1)
        kap = kappa[None, :]  # (1, κ = 1..n1)
        lam = lam_a[:, None]
        if gain_class.attenuated:
            inv_a2 = jnp.where(af > 0, 1.0 / jnp.where(af > 0, af, 1.0) ** 2, 0.0)
            psiB = lam * at_rest(U1) * inv_a2  # (a, κ): U1, U2 at b = G − a
            phiB = lam * at_rest(U2)
        else:
            psiB = jnp.zeros((S + 1, n1), dt)
            phiB = jnp.broadcast_to(lam * at_rest(Hb)[:, None], (S + 1, n1))

        def pad(x):  # κ = 0 (no good rollout) gets nothing: the own cell is occupied
            return jnp.concatenate([jnp.zeros((S + 1, 1), dt), x], 1)

        cot = (jnp.stack([pad(phiB * af / kap), pad(phiB)]),
               jnp.stack([pad(psiB * af / kap), pad(psiB)]))
        F0, F1, own = _good_cells(G * q1[gid], S, n1, cot)
        W = W.at[1, jnp.asarray(good_ids)].add(own / Z)

        if s.neutralize and n0:
            F0, F1 = F0[:, 1:], F1[:, 1:]  # all correct-scored cells, κ >= 1
            good_part = F0 / kappa[None, :] - F1 / jnp.where(af > 0, af, 1.0) ** 2  # (a, κ)
            on = (b > 0) & (a > 0) & (p_hat >= s.p_min)
            coef = jnp.where(on, lam_a / jnp.where(b > 0, p_hat, 1.0), 0.0)
            if s.p_damp > 0:
                x = jnp.clip(p_hat / s.p_damp, 0.0, 1.0)
                coef = coef * x * x * (3.0 - 2.0 * x)
            Vb = at_rest(V)  # (a, n0, n1): the incorrect side of total G − a
            tot = jnp.einsum("a,ak,ajk->j", coef, good_part, Vb)
            W = W.at[0, jnp.asarray(bad_ids)].add(tot / Z)
    return W


def _by_total_dot(X, Y, b, G: int, n0: int):
    """``out[t, r, k] = Σ_{rows of total b = t} X[row, r] Y[row, k]`` ``(G+1, R', K')`` over
    the rows of :func:`_bad_rows`. One part: the rows are the totals; two parts: the rows come
    grouped by their total, so one batched matrix product over the totals (at G = 64, 3x
    faster than the products summed apart); more: a scatter (``segment_sum``)."""
    if n0 == 2:
        return jnp.einsum("bjr,bjk->brk", X.reshape((G + 1, G + 1, -1)),
                          Y.reshape((G + 1, G + 1, -1)))
    rows = X[:, :, None] * Y[:, None, :]
    return rows if n0 == 1 else jax.ops.segment_sum(rows, b, num_segments=G + 1)


def _bad_rows(G: int, n0: int, dtype):
    """Every composition of every ``b <= G`` into ``n0`` parts: ``(m, b, keep)``, the rows
    ``m`` ``(R, n0)``, their totals ``b`` and which rows are compositions (``keep``; the others
    carry weight 0 and a total clipped to ``G``). One part: the rows ``m = b``; two parts: for
    each total ``b`` the ``G + 1`` rows ``(j, b − j)``, ``j <= b`` kept (about twice the
    compositions, grouped by total for :func:`_by_total_dot`), built in the program (iotas: at
    G = 256 a 33,153-row literal made the compilation 3x slower); more parts: the
    ``C(G + n0, n0)`` compositions themselves (a grid would be ``(G + 1)^n0``)."""
    if n0 <= 2:
        shape = (G + 1,) * n0
        b = jax.lax.broadcasted_iota(jnp.int32, shape, 0).ravel()
        if n0 == 1:
            return b[:, None].astype(dtype), b, jnp.ones(b.shape, bool)
        j = jax.lax.broadcasted_iota(jnp.int32, shape, 1).ravel()
        keep = j <= b
        m = jnp.stack([jnp.where(keep, j, 0), jnp.where(keep, b - j, 0)], -1)
        return m.astype(dtype), b, keep
    rows = [compositions(b, n0) for b in range(G + 1)]
    b = np.concatenate([np.full(len(r), b) for b, r in enumerate(rows)])
    return (jnp.asarray(np.concatenate(rows), dtype), jnp.asarray(b),
            jnp.ones(b.shape, bool))
