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

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from .._checks import as_int, check
from ..theory.internal import unchecked
from ._advantages import grpo_advantages, prepare_group
from ._schedule import G2RPOConfig

__all__ = ["G2RPOStats", "g2rpo_advantages", "g2rpo_bonus", "g2rpo_stats"]


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
    interior = (p_hat > 0) & (p_hat < 1)
    p_safe = jnp.where(interior, p_hat, 0.5)
    K_safe = jnp.maximum(K, 1.0)
    lam0 = jnp.asarray(config.gain, dt)
    if config.schedule == "constant":
        lam = jnp.broadcast_to(lam0, p_hat.shape)
    elif config.schedule == "A":
        lam = jnp.where(interior, unchecked.gain_schedule_a(p_safe, lam0, config.verifier), 0.0)
    else:
        L_z_safe = jnp.where(has_bad, L_z, 1.0)
        lam = jnp.where(interior, unchecked.gain_schedule_b(p_safe, L_y, L_z_safe, K_safe, lam0,
                                                            config.verifier), 0.0)

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
