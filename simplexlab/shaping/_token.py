r"""Token-aware shaping rules: GRPO-TN (TS App. C.5) and ProGRPO (PG eq. 4–6, Alg. 1)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from .._checks import Param, check, check_finite, check_number, check_parameter
from ..theory.internal import binomial_pmf, counts_totals, log_factorial
from ._advantages import (
    ZScoreGroupRule,
    _check_ddof,
    _check_eps,
    _float,
    group_mean,
    group_std,
    grpo_advantages,
    prepare_group,
)
from ._rule import AbstractRule, finite

__all__ = ["PROGRPO_ALL_CORRECT", "PROGRPO_ALPHA", "ProGRPORule", "grpo_tn_advantages",
           "low_prob_confidence", "progrpo_advantages", "prefix_tree"]


def _token_inputs(rewards, tokens, token_mask, mask):
    r, m, mf = prepare_group(rewards, mask)
    check_number(tokens, "tokens")
    tok = jnp.asarray(tokens)
    if tok.ndim != r.ndim + 1 or tok.shape[:-1] != r.shape:
        raise ValueError(f"tokens must have shape (*groups, G, T) matching rewards {r.shape}; "
                         f"got {tok.shape}")
    if not jnp.issubdtype(tok.dtype, jnp.integer):
        raise ValueError(f"tokens must be integer ids; got dtype {tok.dtype}")
    if token_mask is None:
        tm = jnp.ones(tok.shape, bool)
    else:
        if np.shape(token_mask) != tok.shape:
            raise ValueError(f"token_mask must have the shape of tokens {tok.shape}; "
                             f"got {np.shape(token_mask)}")
        tm = jnp.asarray(token_mask).astype(bool)
    tm = tm & m[..., None]
    tok = check(tok, lambda a: tm & (a < 0), "token ids must be >= 0 (−1 is the padding sentinel)")
    return r, m, mf, tok, tm


def prefix_tree(rewards, tokens, token_mask=None, mask=None):
    r"""Implicit prefix tree of a group of responses (TS App. C.5).

    Returns ``(V, branching, count)``, each ``(*groups, G, T)``: ``V[i, t] = mean of r_k over the
    responses k sharing the prefix y_{i, ≤t}`` (TS App. C.5, ``V(y_t)``), ``branching[i, t]``
    whether the responses through that node do not all continue with the same next token (the end
    of a response counts as a token), and ``count[i, t] = |S(y_{i,≤t})|``.
    """
    r, m, mf, tok, tm = _token_inputs(rewards, tokens, token_mask, mask)
    return _prefix_tree(r, m, tok, tm)


def _prefix_tree(r, m, tok, tm):
    pad = -jnp.ones((), tok.dtype)
    t = jnp.where(tm, tok, pad)
    t = jnp.concatenate([t, jnp.broadcast_to(pad, t.shape[:-1] + (1,))], axis=-1)  # end marker
    eq = t[..., :, None, :] == t[..., None, :, :]  # (…, G, G, T+1)
    same = jnp.cumprod(eq.astype(jnp.int32), axis=-1) > 0
    same = same & m[..., None, :, None] & m[..., :, None, None]
    sf = same.astype(r.dtype)
    count = jnp.sum(sf, axis=-2)  # (…, G, T+1)
    V = jnp.sum(sf * r[..., None, :, None], axis=-2) / jnp.maximum(count, 1.0)
    branching = (count[..., 1:] < count[..., :-1]) & tm
    return V[..., :-1], branching, count[..., :-1]


def grpo_tn_advantages(rewards, tokens, token_mask=None, mask=None, *, decay: float = 0.1,
                       eps: float = 0.0, ddof: int = 0):
    r"""GRPO-TN token-level advantages (TS App. C.5, eq. 5, with the 0.1 decay).

    ``Â_{i,t} = (r_i − mean(r) + δ_{i,t}) / (std(r) + ε)`` (eq. 5) with the tree correction read
    on the *compressed* prefix tree: every token of a non-branching segment carries the segment's
    TD correction ``δ_{i,t} = V(y_{i,≤t}) − V(y_{i,≤s})``, ``s < t`` the last branching node on
    the path (the root, ``V = mean(r)``, if none). Tokens on a sub-path with no branching node
    down to the leaf whose advantage is positive are multiplied by ``decay``.

    The literal per-token reading of eq. 5 (``δ_{i,t} = V(y_{t+1}) − V(y_t)``, non-zero only at
    the branching token) does not reproduce the paper's worked example (it would give Sample 0's
    token D ``0.707``, not the listed ``1.768``); this segment reading reproduces every listed
    value except Sample 1's first token (listed ``0.707``; eq. 5 gives ``(0 − 2/3 + 0)/std =
    −1.414``: the node ``A`` is shared by all three samples, so ``δ`` there is the same for all,
    and ``0.707`` for the reward-0 sample would need ``δ = 1`` while the reward-1 samples need
    ``δ = 0``). The example uses the population std (``ddof = 0``) and ``ε = 0``.

    ``tokens``: int ``(*groups, G, T)`` (ids ≥ 0); ``token_mask``: bool ``(*groups, G, T)``, a
    prefix mask per response; ``mask``: bool ``(*groups, G)`` for ragged groups.
    Returns ``(*groups, G, T)`` (0 on padding).
    """
    decay = check(check_parameter(decay, "GRPO-TN decay", lower=0.0), lambda a: a > 1,
                  "GRPO-TN decay must lie in [0, 1]")
    eps = _check_eps(eps)
    ddof = _check_ddof(ddof)
    r, m, mf, tok, tm = _token_inputs(rewards, tokens, token_mask, mask)
    V, b, _ = _prefix_tree(r, m, tok, tm)
    T = V.shape[-1]
    idx = jnp.where(b, jnp.arange(T), -1)
    cm = jax.lax.cummax(idx, axis=idx.ndim - 1)
    prev = jnp.concatenate([-jnp.ones(cm.shape[:-1] + (1,), cm.dtype), cm[..., :-1]], axis=-1)
    v_root = group_mean(r, mf)[..., None]  # (…, 1, 1)
    v_prev = jnp.take_along_axis(V, jnp.maximum(prev, 0), axis=-1)
    v_prev = jnp.where(prev >= 0, v_prev, v_root)
    delta = V - v_prev
    mu = group_mean(r, mf)
    sd = group_std(r, mf, ddof)
    adv = (r[..., None] - mu[..., None] + delta) / (sd[..., None] + eps)
    # tail: no branching node at or after t on the path (reverse cumulative OR)
    later = jnp.flip(jax.lax.cummax(jnp.flip(b.astype(jnp.int32), -1), axis=b.ndim - 1), -1) > 0
    tail = ~later & tm
    adv = jnp.where(tail & (adv > 0), decay * adv, adv)
    return jnp.where(tm, adv, 0.0)


def low_prob_confidence(logprobs, mask=None, *, fraction: float = 0.2):
    r"""Low-probability-token length-normalized confidence, PG eq. (5)/(6) and (12):

    ``c = exp( (1/|T^low|) Σ_{t∈T^low} log p_t )`` where ``T^low`` is the ``⌈fraction · n⌉``
    (at least one) positions with the lowest token probability among the ``n`` valid ones.
    ``logprobs``: ``(…, T)``; ``mask``: bool ``(…, T)``. Ties are broken by position.
    """
    check_number(fraction, "fraction")
    if not (np.ndim(fraction) == 0 and 0.0 < float(fraction) <= 1.0):
        raise ValueError(f"fraction of low-probability tokens must lie in (0, 1]; got {fraction!r}")
    check_number(logprobs, "logprobs")
    if np.ndim(logprobs) < 1:
        raise ValueError(f"logprobs must have shape (..., T); got a scalar {logprobs!r}")
    lp = _float(logprobs)
    mk = jnp.ones(lp.shape, bool) if mask is None else jnp.asarray(mask).astype(bool)
    if mk.shape != lp.shape:
        raise ValueError(f"mask must have the shape of logprobs {lp.shape}; got {mk.shape}")
    lp = check_finite(jnp.where(mk, lp, 0.0), "logprobs")
    lp = check(lp, lambda a: a > 0, "logprobs must be <= 0 (log-probabilities)")
    n = jnp.sum(mk.astype(lp.dtype), -1)
    n = check(n, lambda a: a < 1, "every sequence needs at least one valid token; token counts")
    k = jnp.maximum(jnp.ceil(fraction * n), 1.0)
    s = jnp.sort(jnp.where(mk, lp, jnp.inf), axis=-1)
    rank = jnp.arange(lp.shape[-1]).astype(lp.dtype)
    sel = rank < k[..., None]
    return jnp.exp(jnp.sum(jnp.where(sel, s, 0.0), -1) / k)


def progrpo_advantages(rewards, answer_logprobs, prompt_logprobs, answer_mask=None,
                       prompt_mask=None, mask=None, *, alpha: float, fraction: float = 0.2,
                       eps: float = 1e-6, all_correct=False):
    r"""ProGRPO advantage re-weighting (ARM), PG eq. (4)–(6) and Alg. 1:

    ``Ã_i = A_i + α (c(q) − c(o_i|q))`` with ``A_i = (r_i − μ)/(σ + δ)`` (Alg. 1 line 12) and the
    confidences of :func:`low_prob_confidence` (bottom-``fraction`` tokens, eq. 12), and
    ``Ã_i = A_i`` for groups whose rewards are all equal (Alg. 1 line 14: all-wrong or
    all-correct). Eq. (4) itself only skips all-wrong groups; we follow Alg. 1 by default (an
    all-correct group would otherwise receive a pure confidence signal); ``all_correct`` true
    (a bool, or 0/1, possibly traced) re-weights the all-correct groups too, eq. (4) read
    literally (groups whose rewards are all equal and non-zero): there ``A_i = 0`` and
    ``Ã_i = α (c(q) − c(o_i|q))``. Eq. (6) normalizes by
    ``|T_i^low|`` of the prompt; we read it as the answer's own ``|T_{o_j}^low|`` (§3.2).

    ``rewards``: ``(*groups, G)``; ``answer_logprobs``: ``(*groups, G, T)``;
    ``prompt_logprobs``: ``(*groups, Tq)``.
    """
    alpha = check_parameter(alpha, "ProGRPO alpha")
    eps = _check_eps(eps)
    check_number(answer_logprobs, "answer_logprobs")
    check_number(prompt_logprobs, "prompt_logprobs")
    r, m, mf = prepare_group(rewards, mask)
    if np.shape(answer_logprobs)[:-1] != r.shape:
        raise ValueError(f"answer_logprobs must have shape (*groups, G, T) matching rewards "
                         f"{r.shape}; got {np.shape(answer_logprobs)}")
    if np.shape(prompt_logprobs)[:-1] != r.shape[:-1]:
        raise ValueError(f"prompt_logprobs must have shape (*groups, Tq) with groups "
                         f"{r.shape[:-1]}; got {np.shape(prompt_logprobs)}")
    am = jnp.ones(np.shape(answer_logprobs), bool) if answer_mask is None else answer_mask
    am = jnp.asarray(am).astype(bool) | ~m[..., None]  # masked rollouts: any valid dummy token
    lp_a = jnp.where(m[..., None], _float(answer_logprobs), 0.0)
    a = grpo_advantages(r, m, eps=eps)
    c_q = low_prob_confidence(prompt_logprobs, prompt_mask, fraction=fraction)
    c_o = low_prob_confidence(lp_a, am, fraction=fraction)
    hi = jnp.max(jnp.where(m, r, -jnp.inf), -1)
    lo = jnp.min(jnp.where(m, r, jnp.inf), -1)
    reweight = hi > lo  # Alg. 1 line 14: every group but the all-wrong and all-correct ones
    if all_correct is not False:  # eq. (4): all but the groups with Σ r = 0 (all equal to 0)
        reweight = reweight | (jnp.asarray(all_correct).astype(bool) & (lo != 0))
    return jnp.where(m & reweight[..., None], a + alpha * (c_q[..., None] - c_o), a)


# --------------------------------------------------------------------------- the rule

PROGRPO_ALPHA = Param("progrpo_alpha", 0.3, finite, "finite", "α",
                      "ProGRPO's weight of the confidence term (PG eq. 6)")
PROGRPO_ALL_CORRECT = Param(
    "progrpo_all_correct", 0.0, lambda a: ~((a == 0) | (a == 1)),
    "0 (skip all-correct groups, PG Alg. 1) or 1 (re-weight them, PG eq. 4)", "",
    "ProGRPO's all-correct groups: 0 skips them as PG Alg. 1 does, 1 re-weights them as PG eq. 4 "
    "read literally")


class ProGRPORule(AbstractRule):
    r"""``progrpo``: ProGRPO (PG eq. 4–6) with the rollout's probability as its confidence
    ``c(o)`` and the geometric mean of the group's confidences as the prompt's ``c(q)``
    (fraction 1); all-correct groups skipped (Alg. 1) unless ``progrpo_all_correct = 1`` (eq. 4
    read literally).

    Its finite-group reduction (the bandit's reading above): with ``α_r = Σ_k q_{r,k}
    π_k^{1/G}``, ``E[c(q) 1{S'=s} | own c] = π_c^{1/G} C(G−1, s) α_1^s α_0^{G−1−s}``; ``O(G)``."""

    params: ClassVar[tuple[str, ...]] = ("progrpo_alpha", "progrpo_all_correct")
    PARAMS: ClassVar[tuple[Param, ...]] = (PROGRPO_ALPHA, PROGRPO_ALL_CORRECT)
    logp: ClassVar[bool] = True
    traced_group_size: ClassVar[bool] = True

    def __call__(self, groups, params, schedule, step, verifier, num_clusters):
        g = groups
        return progrpo_advantages(g.rewards, g.logp[..., None], g.logp, prompt_mask=g.mask,
                                  mask=g.mask, alpha=params["progrpo_alpha"], fraction=1.0,
                                  all_correct=params["progrpo_all_correct"])

    def reduction_size(self, bound, K, M, group_size, active, max_group_size=None):
        G = group_size if max_group_size is None else max_group_size
        return 4 * (G + 1) * (K + M)

    def cell_totals(self, bound, q1, q0, probs, group_size, t, num_clusters, active,
                    max_group_size=None):
        G = group_size
        S = G if max_group_size is None else max_group_size  # the arrays' static size
        dt = probs.dtype
        alpha = bound.params["progrpo_alpha"]
        root = probs ** (1.0 / G)
        a1, a0 = jnp.sum(q1 * root), jnp.sum(q0 * root)
        s = jnp.arange(S, dtype=dt)  # the other G − 1 rollouts' successes
        inside = s <= G - 1.0  # all of them where G is static; the padding beyond G - 1 not
        rest = jnp.where(inside, G - 1.0 - s, 0.0)
        logc = (log_factorial(G - 1.0, S - 1, dt) - log_factorial(np.arange(S), S - 1, dt)
                - log_factorial(rest, S - 1, dt))
        geo = jnp.where(inside, jnp.exp(logc + xlogy(s, a1) + xlogy(rest, a0)), 0.0)
        pmf = binomial_pmf(G - 1, jnp.sum(q1), None if max_group_size is None else S - 1)
        W = counts_totals(ZScoreGroupRule(1e-6), q1, q0, probs, G, t, num_clusters,
                          max_group_size)
        # all-correct groups too (eq. 4)
        eq4 = jnp.asarray(bound.params.get("progrpo_all_correct", 0.0)).astype(bool)
        for r, q in ((1, q1), (0, q0)):
            mixed = ((r + s) > 0) & (((r + s) < G) | eq4)
            e_cq = root * jnp.sum(jnp.where(mixed, geo, 0.0))
            e_co = probs * jnp.sum(jnp.where(mixed, pmf, 0.0))
            W = W.at[r].add(G * q * alpha * (e_cq - e_co))
        return W
