"""One group step of the (K+M)-mode policies: draw ``G`` rollouts per prompt, verify them, take a
rule's advantages and the count-form gradient on the logits -- what a bandit's step does before
its optimizer (:class:`~simplexlab.sim.SharedBandit`; the per-prompt
:class:`~simplexlab.sim.Bandit` does the same in its own step)."""

from __future__ import annotations

import jax.numpy as jnp

from .._checks import trusted_inputs
from ..shaping import Groups, advantages
from ._policy import gradient_from_probs
from ._sampler import uniforms

__all__ = ["group_gradient"]


def group_gradient(logp, key, group_size, *, max_group_size: int, K: int, method: str,
                   params, schedule, verifier, step, reduction: str, surrogate: str):
    r"""``(∇_θ, rewards)``: the count-form gradient ``(P, C)`` of each prompt's surrogate
    (``logp`` its log-policy ``(P, C)``) and the verifier outcomes ``(P, max_group_size)`` (0 at
    padded rollouts). Rollout ``g`` of prompt ``q`` uses the uniforms ``2(gP + q)`` and
    ``2(gP + q) + 1`` of ``key`` (exact inverse-CDF draws, whatever ``max_group_size`` is);
    ``params``: the rule's own parameters; the rule's inputs are valid by construction
    (``trusted_inputs``)."""
    P, C = logp.shape
    Gmax, dt = max_group_size, logp.dtype
    G = jnp.asarray(group_size).astype(jnp.int32)
    probs = jnp.exp(logp)
    u = uniforms(key, 2 * Gmax * P, dt).reshape(Gmax, P, 2).transpose(2, 1, 0)
    cdf = jnp.cumsum(probs[:, :-1], -1)
    modes = jnp.sum(u[0][..., None] >= cdf[:, None, :], -1, dtype=jnp.int32)
    mask = jnp.broadcast_to(jnp.arange(Gmax, dtype=jnp.int32) < G, (P, Gmax))
    rewards = jnp.where(mask, verifier.outcome(u[1], modes < K), 0.0)
    ro = Groups(rewards, modes, mask, jnp.take_along_axis(logp, modes, -1))
    with trusted_inputs():
        adv = advantages(method, ro, num_clusters=C, step=step, params=params,
                         schedule=schedule, verifier=verifier)
    adv = jnp.where(mask, jnp.asarray(adv, dt), 0.0)
    scale = 1.0 / G.astype(dt) if reduction == "mean" else jnp.ones((), dt)
    # w_c = s Σ_{g : mode_g = c} Â_g: a masked sum (one fused reduction, no one-hot matrix)
    hit = modes[..., None] == jnp.arange(C, dtype=jnp.int32)
    weights = scale * jnp.sum(jnp.where(hit, adv[..., None], 0.0), -2)
    return gradient_from_probs(probs, weights, surrogate), rewards
