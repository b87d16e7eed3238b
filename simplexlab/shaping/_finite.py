r"""Every advantage rule as a :class:`~simplexlab.theory.AbstractGroupRule`, with the exact
reductions of the rules that have one (the finite-group theory of :mod:`simplexlab.theory`).

:func:`group_rule` wraps a method of :data:`METHODS` (its parameters, G²RPO's schedule and the
verifier) so that the theory runs the rule itself on the groups it enumerates or samples (no
second copy of a rule). The structure each method declares (:attr:`Method.structure`) lets the
theory take its ``"counts"`` or ``"clusters"`` path; three rules also reduce their own
expectation exactly (the ``"rule"`` path):

* **G²RPO** (Listing 1 with ``B_max = ∞`` and an inactive ``ŷ`` floor, ``ρ <= 1/G``; the
  neutralizer only under schedule B, whose neutralizer is affine in ``L̂_y``). With ``n_c``
  the cluster's count, ``n_good`` the correct-scored rollouts and ``K̂`` the occupied good
  clusters, the centred bonus is ``B_c = λ (n_good/(K̂ n_c) − 1)`` (centring is exact:
  ``Σ ŷ_j B_j = 0``), so a cluster's total bonus is ``n_c B_c = λ (n_good/K̂ − n_c)`` and the
  neutralizer (53) is (55) at the plug-in statistics: ``B_b = λ (1/K̂ − L̂_y)/(p̂ (L̂_y +
  L̂_z))``. Their expectations need the joint law of ``(n_good, K̂)``, the first moment of
  ``Σ n_c²`` on it and the own cluster's count: a dynamic programme over the correct-scored
  cells on ``(n_good, K̂)`` with Poissonised counts (each cell's count Poisson(G q_c), the
  product conditioned on the total ``G``); the sums over the other cells beside an own cell
  are the derivatives of the all-cells sums in that cell's weights, so one reverse-mode pass
  through the programme gives every cell's (not one programme per left-out cell); the
  incorrect-scored side (``L̂_z``) by its compositions, summed by total. ``O(K² G²)``.
* **ProGRPO** as the bandit runs it (a rollout's confidence is its probability ``π_c``, the
  prompt's the geometric mean over the group, PG eq. 4–6 with fraction 1; the all-correct
  groups skipped as in Alg. 1, or re-weighted with ``progrpo_all_correct``): with
  ``α_r = Σ_k q_{r,k} π_k^{1/G}``, ``E[c(q) 1{S'=s} | own c] = π_c^{1/G} C(G−1, s) α_1^s
  α_0^{G−1−s}``; ``O(G)``.
* **REINFORCE++** (batch normalisation over ``num_groups`` groups drawn from the same policy):
  a rollout's advantage is ``(r − S/G)/(sd + ε)`` with ``sd² = Σ_b S_b(G − S_b)/(B G²)``; the law
  of the other groups' sum by convolution.
"""

from __future__ import annotations

import math
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln, xlogy

from .._checks import as_int, check_finite, is_concrete, trusted_inputs
from ..theory import AbstractGroupRule, Verifier
from ..theory.internal import (
    binomial_pmf,
    compositions,
    counts_totals,
    poisson_pmf,
    unchecked,
)
from ._advantages import grpo_advantages
from ._schedule import GainSchedule

__all__ = ["MethodRule", "group_rule"]

#: bound on the compositions of the incorrect-scored side in G²RPO's reduction
_MAX_BAD_ROWS = 2_000_000
#: bound on the support of the other groups' variance sum in REINFORCE++'s reduction
_MAX_BATCH_SUPPORT = 2_000_000


class _ZScore(AbstractGroupRule):
    """GRPO's z-score with a given ε (the part of G²RPO and ProGRPO that is a count rule)."""

    eps: float = eqx.field(static=True)
    structure = "counts"

    def advantages(self, rewards, modes, logp, t, num_clusters):
        with trusted_inputs():
            return grpo_advantages(rewards, eps=self.eps)


class MethodRule(AbstractGroupRule):
    r"""A method of :data:`simplexlab.shaping.METHODS` as the finite-group theory sees it
    (:class:`~simplexlab.theory.AbstractGroupRule`); made by :func:`group_rule`."""

    method: str = eqx.field(static=True)
    params: dict[str, Any]
    schedule: GainSchedule | None
    verifier: Verifier
    step_time: float = eqx.field(default=1.0, static=True)
    groups: int = eqx.field(default=1, static=True)

    @property
    def _m(self):
        from ._methods import METHODS
        return METHODS[self.method]

    @property
    def structure(self) -> str:  # type: ignore[override]
        return self._m.structure

    @property
    def group_local(self) -> bool:
        return self._m.group_local

    @property
    def min_group_size(self) -> int:
        k = self.params.get("pass_k")  # pass@k of k draws needs k rollouts
        need = int(np.max(np.asarray(k))) if k is not None and is_concrete(k) else 0
        return max(2, self._m.min_group_size, need)

    @property
    def num_groups(self) -> int:
        return self.groups

    def checked(self):
        params = {k: check_finite(jnp.asarray(v), f"{self.method} parameter {k}")
                  for k, v in self.params.items()}
        return eqx.tree_at(lambda r: r.params, self, params)

    def _step(self, t):
        return jnp.asarray(t) / self.step_time

    def advantages(self, rewards, modes, logp, t, num_clusters):
        from ._methods import Groups, advantages
        with trusted_inputs():  # representative or sampled groups: valid by construction
            return advantages(self.method, Groups(rewards, modes, None, logp),
                              params=dict(self.params), schedule=self.schedule,
                              step=self._step(t), verifier=self.verifier,
                              num_clusters=num_clusters)

    # ---- the rules' own reductions

    def _g2rpo_config(self, t):
        return self.schedule.config(self._step(t), self.verifier)

    def _g2rpo_applies(self, G: int) -> bool:
        s = self.schedule
        return (math.isinf(float(s.B_max)) and float(s.rho) <= 1.0 / G
                and (not s.neutralize or s.kind == "B"))

    def reduction_size(self, K, M, group_size, active):
        G = group_size
        if self.method in ("g2rpo", "g2rpo_bonus"):
            if not self._g2rpo_applies(G):
                return None
            n1, n0 = len(active[0]), len(active[1])
            bad = (math.comb(G + n0, n0) if self.schedule.cluster_bad
                   and (self.schedule.kind == "B" or self.schedule.neutralize) else 0)
            if bad > _MAX_BAD_ROWS:
                return None
            # the largest intermediates: a Toeplitz matrix per cell, kept for the reverse pass
            return max(2 * n1 * (G + 1) ** 2, bad * max(n0, 1) * n1)
        if self.method == "progrpo":
            return 4 * (G + 1) * (K + M)
        if self.method == "reinforce_pp":
            support = (self.groups - 1) * (G * G // 4) + 1
            if support > _MAX_BATCH_SUPPORT:
                return None
            return support * (G * G // 4 + 1)
        if self.method == "grpo_batch_std":
            support = (self.groups - 1) * G + 1
            return None if support > _MAX_BATCH_SUPPORT else support * G
        return None

    def cell_totals(self, q1, q0, probs, group_size, t, num_clusters, active):
        if self.method in ("g2rpo", "g2rpo_bonus"):
            return _g2rpo_totals(self, q1, q0, probs, group_size, t, num_clusters, active)
        if self.method == "progrpo":
            return _progrpo_totals(self, q1, q0, probs, group_size, t, num_clusters)
        if self.method == "reinforce_pp":
            return _reinforce_pp_totals(self, q1, q0, probs, group_size)
        if self.method == "grpo_batch_std":
            return _batch_std_totals(self, q1, q0, probs, group_size)
        return None


def group_rule(method: str, *, params: dict[str, Any] | None = None,
               schedule: GainSchedule | None = None, verifier: Verifier | None = None,
               step_time: float = 1.0, num_groups: int | None = None) -> MethodRule:
    r"""The advantage rule ``method`` (a name of :data:`METHODS`) as a
    :class:`~simplexlab.theory.AbstractGroupRule` for the finite-group theory: ``params`` (its own
    parameters, defaults :data:`METHOD_PARAMS`), ``schedule`` (G²RPO; default
    :class:`GainSchedule`), ``verifier`` (for G²RPO's schedules A/B; default perfect),
    ``step_time`` (the mean-field time of one training step: a warm-up of ``ramp_steps`` steps
    lasts ``ramp_steps · step_time``), ``num_groups`` (groups per batch; REINFORCE++ normalises
    over them and needs it)."""
    from ._methods import METHOD_PARAMETERS, METHOD_PARAMS, _schedule, lookup_method

    m = lookup_method(method)
    unknown = sorted(set(params or {}) - set(METHOD_PARAMS))
    if unknown:
        raise ValueError(f"unknown method parameter(s) {unknown}; known: {sorted(METHOD_PARAMS)}")
    q = {k: (params or {}).get(k, METHOD_PARAMS[k]) for k in m.params}
    for k, v in q.items():  # the domain each parameter declares
        METHOD_PARAMETERS[k].check(v, f"{method}: parameter ")
    if m.schedule:
        schedule = _schedule(schedule, (params or {}).get("gain"))
        # an array leaf: a new gain value reuses the compiled field
        schedule = eqx.tree_at(lambda s: s.gain, schedule,
                               jnp.asarray(schedule.gain, jnp.result_type(float)))
        q.pop("gain", None)
    else:
        schedule = None
    if not m.group_local:
        if num_groups is None:
            raise ValueError(f"method {method!r} normalises over the whole batch of groups: "
                             "its finite-group theory needs num_groups (groups per batch)")
        num_groups = as_int(num_groups, "num_groups", lower=1)
    else:
        num_groups = 1 if num_groups is None else as_int(num_groups, "num_groups", lower=1)
    if not (isinstance(step_time, int | float) and math.isfinite(step_time) and step_time > 0):
        raise ValueError(f"step_time must be a finite number > 0; got {step_time!r}")
    dt = jnp.result_type(float)
    return MethodRule(method, {k: jnp.asarray(v, dt) for k, v in q.items()}, schedule,
                      Verifier() if verifier is None else verifier, float(step_time),
                      num_groups)


# --------------------------------------------------------------------------- G²RPO


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


def _g2rpo_totals(rule: MethodRule, q1, q0, probs, G, t, C, active):
    dt = probs.dtype
    cfg = rule._g2rpo_config(t)
    s = rule.schedule
    good_ids, bad_ids = active
    n1, n0 = len(good_ids), len(bad_ids)
    lam0 = jnp.asarray(cfg.gain, dt)
    n = jnp.arange(G + 1, dtype=dt)
    Z = poisson_pmf(jnp.asarray(G, dt), jnp.asarray(G, dt))
    gid, bid = jnp.asarray(good_ids), jnp.asarray(bad_ids)
    w1 = poisson_pmf(G * q1[gid][:, None], n) if n1 else jnp.zeros((0, G + 1), dt)
    lam_bad = G * q0[bid] if n0 else jnp.zeros((0,), dt)
    Hb = poisson_pmf(jnp.sum(G * q0), n)  # Σ over incorrect-scored configs of total b
    a = n  # the number of correct-scored rollouts
    b = G - a
    p_hat = b / G
    interior = (b > 0) & (b < G)
    p_safe = jnp.where(interior, p_hat, 0.5)
    if s.kind == "constant":
        lam_a = jnp.broadcast_to(lam0, a.shape)
    else:
        lam_a = jnp.where(interior, unchecked.gain_schedule_a(p_safe, lam0, rule.verifier), 0.0)
    kappa = jnp.arange(1, n1 + 1, dtype=dt)  # occupied good clusters, 1..n1

    # the incorrect-scored side: L̂_z by the compositions of b (only where it matters)
    need_lz = s.kind == "B" or s.neutralize
    U1 = U2 = V = None
    if need_lz and n0:
        if s.cluster_bad:
            m, bb, keep = _bad_rows(G, n0, dt)  # (R, n0), (R,), (R,)
            # a row's weight is the product of its parts' Poisson pmfs (n0 pmfs, gathered)
            pmf = poisson_pmf(lam_bad[:, None], n)  # (n0, G+1)
            parts = pmf[jnp.arange(n0)[None, :], m.astype(jnp.int32)]  # (R, n0)
            wrow = jnp.where(keep, jnp.prod(parts, -1), 0.0)
            bf = bb.astype(dt)
            Lz = jnp.where(bb > 0, jnp.sum(m * m, -1) / jnp.where(bb > 0, bf, 1.0) ** 2, 0.0)
            Lz = jnp.where(bb > 0, jnp.maximum(Lz, s.Lz_min), Lz)
            inv = 1.0 / (Lz[:, None] + 1.0 / kappa[None, :])  # (R, n1)
            # Σ_rows of total b of wrow · (1, L̂_z, m) · inv: U1, U2 (G+1, n1), V (G+1, n0, n1)
            X = wrow[:, None] * jnp.concatenate([jnp.ones_like(Lz)[:, None], Lz[:, None], m], 1)
            out = _by_total_dot(X, inv, bb, G, n0)
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
        # per left-out cell: with λ = λ(a), u1, u2 the incorrect side's sums at b = G − a,
        #   W[1, k] = Σ_n w1[k, n] Σ λ (a/κ − n) [(E1 + n² E0) u1/a² + E0 u2]
        #           = Σ_n w1[k, n] (gA[k, n] − n gB[k, n]),
        # gX = ∂(⟨F1, ψX⟩ + ⟨F0, φX⟩)/∂w1 with ψA = λ a/κ u1/a², ψB = λ u1/a², φA = λ a/κ u2,
        # φB = λ u2 (schedule A / constant: ψ = 0, u2 → the incorrect side's mass Hb(G − a))
        (F0, F1), pull = jax.vjp(lambda w: _good_dp(w, G, n1), w1)
        af = a[:, None]  # (a, 1)
        kap = kappa[None, :]  # (1, κ = 1..n1)
        lam = lam_a[:, None]
        if s.kind == "B":
            inv_a2 = jnp.where(af > 0, 1.0 / jnp.where(af > 0, af, 1.0) ** 2, 0.0)
            psiB = lam * U1[::-1] * inv_a2  # (a, κ): U1, U2 at b = G − a
            phiB = lam * U2[::-1]
        else:
            psiB = jnp.zeros((G + 1, n1), dt)
            phiB = jnp.broadcast_to(lam * Hb[::-1][:, None], (G + 1, n1))

        def pad(x):  # κ = 0 (no good rollout) gets nothing: the own cell is occupied
            return jnp.concatenate([jnp.zeros((G + 1, 1), dt), x], 1)

        cot = (jnp.stack([pad(phiB * af / kap), pad(phiB)]),
               jnp.stack([pad(psiB * af / kap), pad(psiB)]))
        gA, gB = jax.vmap(pull)(cot)[0]  # one reverse pass for both (A, B)
        own = w1 * (gA - n[None, :] * gB)  # (n1, G+1); the count n = 0 is not the own cell's
        W = W.at[1, jnp.asarray(good_ids)].add(jnp.sum(own[:, 1:], -1) / Z)

        if s.neutralize and n0:
            F0, F1 = F0[:, 1:], F1[:, 1:]  # all correct-scored cells, κ >= 1
            good_part = F0 / kappa[None, :] - F1 / jnp.where(af > 0, af, 1.0) ** 2  # (a, κ)
            on = (b > 0) & (a > 0) & (p_hat >= s.p_min)
            coef = jnp.where(on, lam_a / jnp.where(b > 0, p_hat, 1.0), 0.0)
            if s.p_damp > 0:
                x = jnp.clip(p_hat / s.p_damp, 0.0, 1.0)
                coef = coef * x * x * (3.0 - 2.0 * x)
            Vb = V[G - jnp.arange(G + 1)]  # (a, n0, n1): the incorrect side of total G − a
            tot = jnp.einsum("a,ak,ajk->j", coef, good_part, Vb)
            W = W.at[0, jnp.asarray(bad_ids)].add(tot / Z)
    if rule.method == "g2rpo":
        W = W + counts_totals(_ZScore(s.eps), q1, q0, probs, G, t, C)
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


# --------------------------------------------------------------------------- ProGRPO


def _progrpo_totals(rule: MethodRule, q1, q0, probs, G, t, C):
    dt = probs.dtype
    alpha = rule.params["progrpo_alpha"]
    root = probs ** (1.0 / G)
    a1, a0 = jnp.sum(q1 * root), jnp.sum(q0 * root)
    s = jnp.arange(G, dtype=dt)  # the other G − 1 rollouts' successes
    logc = gammaln(G + 0.0) - gammaln(s + 1.0) - gammaln(G - s)
    geo = jnp.exp(logc + xlogy(s, a1) + xlogy(G - 1.0 - s, a0))
    pmf = binomial_pmf(G - 1, jnp.sum(q1))
    W = counts_totals(_ZScore(1e-6), q1, q0, probs, G, t, C)
    eq4 = jnp.asarray(rule.params.get("progrpo_all_correct", 0.0)).astype(bool)  # all-correct too
    for r, q in ((1, q1), (0, q0)):
        mixed = ((r + s) > 0) & (((r + s) < G) | eq4)
        e_cq = root * jnp.sum(jnp.where(mixed, geo, 0.0))
        e_co = probs * jnp.sum(jnp.where(mixed, pmf, 0.0))
        W = W.at[r].add(G * q * alpha * (e_cq - e_co))
    return W


# --------------------------------------------------------------------------- REINFORCE++


def _batch_std_totals(rule: MethodRule, q1, q0, probs, G):
    """``grpo_batch_std`` (TRL's ``scale_rewards="batch"``): the own group's count of
    correct-scored rollouts and the other ``B − 1`` groups' total, both binomial; the batch's
    sample std of ``T`` successes among ``N = B G`` binary rewards is
    ``sqrt(T (N − T) / (N (N − 1)))``."""
    dt = probs.dtype
    B = rule.groups
    N = B * G
    Q = jnp.sum(q1)
    eps = jnp.asarray(rule.params["std_eps"], dt)
    others = jnp.arange((B - 1) * G + 1, dtype=dt)
    pmf_o = binomial_pmf((B - 1) * G, Q) if B > 1 else jnp.ones((1,), dt)
    sp = jnp.arange(G, dtype=dt)  # the other G − 1 rollouts of the own group
    pmf = binomial_pmf(G - 1, Q)
    W = jnp.zeros((2, probs.shape[-1]), dt)
    for r, q in ((1, q1), (0, q0)):
        S = r + sp
        T = S[:, None] + others[None, :]
        sd = jnp.sqrt(T * (N - T) / (N * (N - 1.0)))
        a = (r - S / G)[:, None] / (sd + eps)
        W = W.at[r].set(G * q * jnp.sum(pmf[:, None] * pmf_o[None, :] * a))
    return W


def _reinforce_pp_totals(rule: MethodRule, q1, q0, probs, G, eps=1e-8):
    dt = probs.dtype
    B = rule.groups
    Q = jnp.sum(q1)
    s = np.arange(G + 1)
    v = s * (G - s)
    Lk = G * G // 4 + 1
    pmf_S = binomial_pmf(G, Q)
    kernel = jnp.zeros((Lk,), dt).at[jnp.asarray(v)].add(pmf_S)  # law of S_b (G − S_b)
    L = (B - 1) * (Lk - 1) + 1
    dist = jnp.zeros((L,), dt).at[0].set(1.0)
    if B > 1:
        dist = jax.lax.fori_loop(0, B - 1, lambda i, d: jnp.convolve(d, kernel)[:L], dist)
    vo = jnp.arange(L, dtype=dt)
    sp = jnp.arange(G, dtype=dt)  # the other G − 1 rollouts of the own group
    pmf = binomial_pmf(G - 1, Q)
    W = jnp.zeros((2, probs.shape[-1]), dt)
    for r, q in ((1, q1), (0, q0)):
        S = r + sp  # (G,)
        sd = jnp.sqrt((S * (G - S))[:, None] + vo[None, :]) / (G * math.sqrt(B))
        a = (r - S / G)[:, None] / (sd + eps)
        W = W.at[r].set(G * q * jnp.sum(pmf[:, None] * dist[None, :] * a))
    return W
