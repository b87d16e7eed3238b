r"""pass@k as the training objective: the pass@k training advantages of Chen et al. (2025) and
the effective rewards of PKPO (Walder & Karkhanis, 2025), for binary rewards.

Both rest on one quantity per rollout: the mean pass@k reward of the ``k``-subsets of its group
that contain it. For a group of ``n`` valid rollouts, ``c`` of them correct, with the unbiased
pass@k estimator ``ρ(n, c, k) = 1 − C(n − c, k)/C(n, k)`` (:func:`pass_at_k`):

- the group's mean pass@k reward is ``R̄ = ρ(n, c, k)``;
- a subset through a correct rollout always passes: its mean is 1;
- a subset through an incorrect rollout passes unless its other ``k − 1`` members all fail:
  its mean is ``ρ(n − 1, c, k − 1) = 1 − C(n − c − 1, k − 1)/C(n − 1, k − 1)``.

Chen et al. (2025, arXiv:2508.10751, §4, the analytical derivation) normalise the difference by
the Bernoulli std ``σ = sqrt(R̄ (1 − R̄))``:
``Â_pos = (1 − R̄)/σ``, ``Â_neg = (1 − R̄ − C(N_neg − 1, k − 1)/C(N − 1, k − 1))/σ``.
PKPO (arXiv:2505.15201, the binary case of its unbiased gradient estimator) weights each
rollout by ``s_i = (k/n) · (that mean)`` (``k/n`` for a correct rollout, ``(k/n) ρ(n − 1, c,
k − 1)`` for an incorrect one), so that ``Σ_i s_i ∇ log π(x_i)`` is an unbiased gradient of
pass@k; :func:`pkpo_advantages` centres ``s`` on its group mean (for ``n = 4, c = 2, k = 2``:
``s = 1/2, 1/3`` and advantages ``±1/12``). Within a group the two rules are proportional:
PKPO's advantage is ``(k/n) σ`` times the pass@k training advantage. With ``k = 1`` both are
GRPO's ``r − mean r`` (pass@k training: divided by the population std).
"""

from __future__ import annotations

from typing import ClassVar

import jax.numpy as jnp
import numpy as np

from .._checks import Param, check_integer_valued, check_pair, is_concrete, xp
from ._advantages import group_mean
from ._diversity import all_fail_ratio
from ._rule import AbstractRule
from ._rules import _binary

__all__ = ["PASS_K", "PKPORule", "PassAtKRule", "pass_at_k_advantages", "pkpo_advantages",
           "pkpo_rewards"]


def _subset_means(rewards, mask, k):
    """Per rollout, the mean pass@k reward of the ``k``-subsets through it; per group ``R̄``
    (the group's pass@k estimate), ``n`` and ``k`` broadcast to the groups' shape; the mask."""
    r, m, mf = _binary(rewards, mask)
    k = check_integer_valued(k, "pass@k k", lower=1)
    n = jnp.sum(mf, -1)
    c = jnp.sum(r * mf, -1)
    k = jnp.broadcast_to(jnp.asarray(k, r.dtype), n.shape)
    k = check_pair(k, n, lambda a, b: a > b,
                   "pass@k k must be <= the number of valid rollouts of every group")
    G = r.shape[-1]
    mean = 1.0 - all_fail_ratio(n, c, k, terms=G)
    through_wrong = 1.0 - all_fail_ratio(n - 1.0, c, k - 1.0, terms=G)
    sub = jnp.where(r == 1, 1.0, through_wrong[..., None])
    return sub, mean, n, k, m, mf


def pass_at_k_advantages(rewards, mask=None, *, k):
    r"""pass@k training advantages (Chen et al., 2025, §4): ``(m_i − R̄)/σ``, ``m_i`` the mean
    pass@k reward of the ``k``-subsets through rollout ``i``, ``R̄ = ρ(n, c, k)`` and
    ``σ = sqrt(R̄ (1 − R̄))`` (module docstring). A group where every ``k``-subset passes or
    every one fails (``σ = 0``) gets 0. ``rewards`` in {0, 1}, ``(*groups, G)``; ``k``: a whole
    number ``1 <= k <=`` the valid rollouts of every group (an array or traced)."""
    sub, mean, _, _, m, _ = _subset_means(rewards, mask, k)
    sd = jnp.sqrt(mean * (1.0 - mean))
    live = sd > 0
    adv = (sub - mean[..., None]) / jnp.where(live, sd, 1.0)[..., None]
    return jnp.where(m & live[..., None], adv, 0.0)


def pkpo_rewards(rewards, mask=None, *, k):
    r"""PKPO's effective rewards for binary rewards (Walder & Karkhanis, 2025):
    ``s_i = k/n`` for a correct rollout, ``(k/n) ρ(n − 1, c, k − 1)`` for an incorrect one, so
    that ``Σ_i s_i ∇ log π(x_i)`` is an unbiased estimate of ∇ pass@k (0 on masked rollouts)."""
    sub, _, n, k, m, _ = _subset_means(rewards, mask, k)
    return jnp.where(m, (k / n)[..., None] * sub, 0.0)


def pkpo_advantages(rewards, mask=None, *, k):
    r"""PKPO's effective rewards :func:`pkpo_rewards` centred on their group mean (for
    ``n = 4, c = 2, k = 2``: ``+1/12`` for the correct rollouts, ``−1/12`` for the others)."""
    sub, _, n, k, m, mf = _subset_means(rewards, mask, k)
    s = (k / n)[..., None] * sub
    return jnp.where(m, s - group_mean(s, mf), 0.0)


# --------------------------------------------------------------------------- the rules

PASS_K = Param("pass_k", 2.0, lambda a: ~(xp.isfinite(a) & (a >= 1) & (a == xp.round(a))),
               "a whole number >= 1 (and <= the group size)", "k",
               "the k of pass@k training and PKPO (lab default 2, PKPO's worked example)")


class _PassK(AbstractRule):
    """A rule of the pass@k objective: ``k`` of the ``G`` rollouts are drawn, so ``G >= k``."""

    params: ClassVar[tuple[str, ...]] = ("pass_k",)
    PARAMS: ClassVar[tuple[Param, ...]] = (PASS_K,)
    binary: ClassVar[bool] = True
    structure: ClassVar[str] = "counts"

    def group_size_bound(self, params):
        k = params.get("pass_k")
        need = int(np.max(np.asarray(k))) if k is not None and is_concrete(k) else 0
        return max(self.min_group_size, need)

    def constraints(self, group_size="group_size"):
        return [(("pass_k", group_size), lambda k, G: ~(k <= G.astype(k.dtype)),
                 "<= the group size (pass@k needs k of the G rollouts)")]


class PassAtKRule(_PassK):
    """``pass_at_k``: :func:`pass_at_k_advantages` (Chen et al., 2025)."""

    def __call__(self, groups, params, schedule, step, verifier, num_clusters):
        return pass_at_k_advantages(groups.rewards, groups.mask, k=params["pass_k"])


class PKPORule(_PassK):
    """``pkpo``: :func:`pkpo_advantages` (Walder & Karkhanis, 2025)."""

    def __call__(self, groups, params, schedule, step, verifier, num_clusters):
        return pkpo_advantages(groups.rewards, groups.mask, k=params["pass_k"])
