r"""Group-relative baselines: advantages from a batch of groups of rewards.

Every function takes ``rewards`` of shape ``(*groups, G)`` (one row per prompt group of ``G``
rollouts; any leading batch shape) and an optional boolean ``mask`` of the same shape for ragged
groups (``True`` = the rollout exists). Masked-out entries get advantage ``0`` and never enter a
statistic. Every function is pure, jits, and vmaps over groups (except
:func:`reinforce_pp_advantages`, whose normalization is over the whole batch by definition).

Bad input raises ``ValueError`` eagerly and ``eqx.error_if`` under ``jit``: ``G < 2``, a mask of
another shape or with values other than 0/1, non-finite rewards or rewards beyond ``±1e100``
(whose group statistics overflow), a group with fewer than two valid rollouts.
"""

from __future__ import annotations

import math
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import (
    Param,
    as_int,
    check,
    check_finite,
    check_number,
    check_parameter,
    trusted_inputs,
    xp,
)
from .._types import Mask, Rewards
from ..theory import GRPO, AbstractGroupRule
from ..theory.internal import binomial_pmf
from ._rule import AbstractRewardRule, AbstractRule, finite_nonneg

#: largest accepted |reward|: group statistics square the rewards (and sum G of them), so larger
#: magnitudes overflow float64 into ±inf advantages or a zero std
REWARD_MAX = 1e100

__all__ = [
    "STD_EPS",
    "DrGRPORule",
    "GRPOBatchStdRule",
    "GRPORule",
    "GRPOSampleStdRule",
    "LooStdRule",
    "MeanShiftedRule",
    "RLOORule",
    "RawRule",
    "ReinforcePPRule",
    "dr_grpo_advantages",
    "grpo_advantages",
    "grpo_batch_std_advantages",
    "group_mean",
    "group_std",
    "loo_std_advantages",
    "mean_shifted_advantages",
    "raw_advantages",
    "reinforce_pp_advantages",
    "rloo_advantages",
]


def _float(x):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    return x


def prepare_group(rewards, mask=None, *, min_valid: int = 2):
    """Validate ``(rewards, mask)`` and return ``(rewards_float, mask_bool, mask_float)``.

    Shared by every group-level rule (baselines and shaping). Masked entries of the returned
    rewards are set to 0 so that NaN padding never leaks into a statistic.
    """
    check_number(rewards, "rewards")
    shape = np.shape(rewards)
    if len(shape) < 1:
        raise ValueError(f"rewards must have shape (*groups, G); got a scalar {rewards!r}")
    if shape[-1] < 2:
        raise ValueError(
            f"group size G must be >= 2 for a group-relative advantage; got G = {shape[-1]} "
            f"(rewards of shape {shape})"
        )
    if mask is None:
        m = jnp.ones(shape, dtype=bool)
    else:
        if np.shape(mask) != shape:
            raise ValueError(
                f"mask must have the shape of rewards {shape}; got {np.shape(mask)}"
            )
        check_number(mask, "mask")
        mask_dtype = mask.dtype if hasattr(mask, "dtype") else np.asarray(mask).dtype
        if mask_dtype != np.bool_:
            mask = check(mask, lambda a: (a != 0) & (a != 1),
                         "mask must be boolean (or 0/1): True = the rollout exists")
        m = jnp.asarray(mask).astype(bool)
    r = _float(rewards)
    r = jnp.where(m, r, jnp.zeros((), r.dtype))
    r = check_finite(r, "rewards")
    bound = min(REWARD_MAX, float(np.sqrt(np.finfo(r.dtype).max)) * 1e-3)  # float32: 1.8e16
    r = check(r, lambda a: xp.abs(a) > bound,
              f"rewards must have magnitude <= {bound:g} (the group statistics of larger "
              f"rewards overflow {r.dtype})")
    mf = m.astype(r.dtype)
    if min_valid > 0:
        mf = check(
            mf,
            lambda a: a.sum(-1) < min_valid,
            f"every group needs at least {min_valid} valid (unmasked) rollouts; "
            "valid-entry indicator",
        )
    return r, m, mf


def _check_eps(eps):
    return check_parameter(eps, "eps (added to the std)", lower=0.0)


def _check_ddof(ddof):
    ddof = as_int(ddof, "ddof (0: population std, 1: sample std)", lower=0)
    if ddof > 1:
        raise ValueError(f"ddof (0: population std, 1: sample std) must be 0 or 1 (groups may have "
                         f"only 2 valid rollouts); got {ddof}")
    return ddof


def group_mean(r, mf):
    """Masked group mean ``mean(r)`` over the last axis (keeps the axis)."""
    return jnp.sum(r * mf, axis=-1, keepdims=True) / jnp.sum(mf, axis=-1, keepdims=True)


def group_std(r, mf, ddof: int = 0):
    """Masked group standard deviation over the last axis (keeps the axis).

    ``ddof=0`` is the population std (the ``σ(p) = sqrt(q(1-q))`` of the mean-field theory and
    the one that reproduces TS App. C.5's worked example); ``ddof=1`` is ``torch.std``'s default.
    """
    mu = group_mean(r, mf)
    n = jnp.sum(mf, axis=-1, keepdims=True)
    var = jnp.sum(mf * (r - mu) ** 2, axis=-1, keepdims=True) / (n - ddof)
    return jnp.sqrt(var)


def raw_advantages(rewards: Rewards, mask: Mask | None = None) -> Rewards:
    r"""Raw reward as advantage, ``A_i = r_i`` (REINFORCE without baseline)."""
    r, m, _ = prepare_group(rewards, mask)
    return jnp.where(m, r, 0.0)


def mean_shifted_advantages(rewards: Rewards, mask: Mask | None = None) -> Rewards:
    r"""Mean-shifted advantage ``A_i = r_i − mean(r)`` (group-mean baseline)."""
    r, m, mf = prepare_group(rewards, mask)
    return jnp.where(m, r - group_mean(r, mf), 0.0)


def dr_grpo_advantages(rewards: Rewards, mask: Mask | None = None) -> Rewards:
    r"""Dr. GRPO advantage (Liu et al., 2025): ``A_i = r_i − mean(r)``, no std division.

    (Dr. GRPO's other change, dropping the ``1/|o_i|`` length normalization, lives in the loss.)
    """
    return mean_shifted_advantages(rewards, mask)


def grpo_advantages(rewards: Rewards, mask: Mask | None = None, *, eps: float = 1e-6,
                    ddof: int = 0) -> Rewards:
    r"""GRPO z-score ``A_i = (r_i − mean(r)) / (std(r) + ε)`` (G²RPO Alg. 1 "NormalizeGroup",
    PG Alg. 1 line 12, TS eq. 5 without δ). A zero-variance group gets ``A = 0``.
    ``eps >= 0``; ``ddof`` 0 (population std) or 1 (sample std)."""
    eps = _check_eps(eps)
    ddof = _check_ddof(ddof)
    r, m, mf = prepare_group(rewards, mask)
    scale = group_std(r, mf, ddof) + eps
    # a zero-variance group has r − mean = 0: 0, also with eps = 0 (not 0/0)
    z = (r - group_mean(r, mf)) / jnp.where(scale > 0, scale, 1.0)
    return jnp.where(m, z, 0.0)


def grpo_batch_std_advantages(rewards: Rewards, mask: Mask | None = None, *,
                              eps: float = 1e-4) -> Rewards:
    r"""``A_i = (r_i − mean_group(r)) / (std_batch(r) + ε)``: the group's mean as baseline, the
    sample std (divides by the count − 1) of every valid reward of the whole batch as scale,
    ``ε = 1e-4``: TRL's ``GRPOConfig(scale_rewards="batch")`` (``GRPOTrainer`` 1.16, its
    ``nanstd`` over the batch's rewards). Not group-local: one std for all groups."""
    eps = _check_eps(eps)
    r, m, mf = prepare_group(rewards, mask)
    n = jnp.sum(mf)
    mu = jnp.sum(r * mf) / n
    sd = jnp.sqrt(jnp.sum(mf * (r - mu) ** 2) / (n - 1.0))
    return jnp.where(m, (r - group_mean(r, mf)) / (sd + eps), 0.0)


def loo_std_advantages(rewards: Rewards, mask: Mask | None = None) -> Rewards:
    r"""The leave-one-out baseline scaled by the leave-one-out std: ``A_i = (r_i − b_i) / s_i``
    with ``b_i`` the mean and ``s_i`` the sample std (divides by ``n − 2``) of the group's other
    ``n − 1`` valid rewards; where ``s_i = 0`` (the others agree, or ``n = 2``) ``A_i = r_i − b_i``,
    unscaled. What NeMo-RL's GRPO computes by default (``use_leave_one_out_baseline`` and
    ``normalize_rewards`` true: ``calculate_baseline_and_std_per_prompt``, then a division only
    where the std is positive)."""
    r, m, mf = prepare_group(rewards, mask)
    n = jnp.sum(mf, axis=-1, keepdims=True)
    others = n - 1.0
    b = (jnp.sum(r * mf, axis=-1, keepdims=True) - r) / others
    # the others' squared deviations from their own mean, one row per rollout; where the others
    # agree (their largest equals their smallest) the std is 0 exactly: their mean, a rounded
    # (sum − r)/(n − 1) for real-valued rewards, would leave a residue of ~1e-16 that divides d
    # (found by simplexlab.verify.check_advantages: [0.3, 0.3, 0.3, 0.9] gave 8.8e15)
    other = mf[..., None, :] * (1.0 - jnp.eye(r.shape[-1], dtype=r.dtype)) > 0
    dev = jnp.where(other, (r[..., None, :] - b[..., :, None]) ** 2, 0.0)
    var = jnp.sum(dev, -1) / jnp.maximum(others - 1.0, 1.0)
    row = r[..., None, :]
    spread = (jnp.max(jnp.where(other, row, -jnp.inf), -1)
              - jnp.min(jnp.where(other, row, jnp.inf), -1))
    s = jnp.where((others > 1.0) & (spread > 0), jnp.sqrt(var), 0.0)
    d = r - b
    return jnp.where(m, jnp.where(s > 0, d / jnp.where(s > 0, s, 1.0), d), 0.0)


def rloo_advantages(rewards: Rewards, mask: Mask | None = None) -> Rewards:
    r"""RLOO leave-one-out baseline ``A_i = r_i − (1/(n−1)) Σ_{j≠i} r_j = n/(n−1) (r_i − mean(r))``
    (Ahmadian et al., 2024), ``n`` = number of valid rollouts in the group."""
    r, m, mf = prepare_group(rewards, mask)
    n = jnp.sum(mf, axis=-1, keepdims=True)
    loo = (jnp.sum(r * mf, axis=-1, keepdims=True) - r) / (n - 1.0)
    return jnp.where(m, r - loo, 0.0)


def reinforce_pp_advantages(rewards, mask=None, *, group_baseline: bool = True,
                            eps: float = 1e-8):
    r"""REINFORCE++ advantages with global batch normalization (Hu et al., 2025).

    ``A'_i = r_i − mean_group(r)`` when ``group_baseline`` (the "REINFORCE++-baseline" variant
    used with group sampling), else ``A'_i = r_i``; then ``A = (A' − mean_batch(A')) /
    (std_batch(A') + ε)`` with mean and (population) std over every valid entry of the whole
    batch. Only the group-baseline variant is invariant to a per-group reward shift.
    """
    eps = _check_eps(eps)
    if not isinstance(group_baseline, bool | np.bool_):
        raise ValueError(f"group_baseline must be True or False; got {group_baseline!r}")
    r, m, mf = prepare_group(rewards, mask)
    a = r - group_mean(r, mf) if group_baseline else r
    a = jnp.where(m, a, 0.0)
    n = jnp.sum(mf)
    d = a - jnp.sum(a * mf) / n
    d = d - jnp.sum(d * mf) / n  # two-pass centering: a constant batch gives d = 0 exactly
    sd = jnp.sqrt(jnp.sum(mf * d**2) / n)
    return jnp.where(m, d / (sd + eps), 0.0)


# --------------------------------------------------------------------------- the rules


class RawRule(AbstractRewardRule):
    """``raw``: :func:`raw_advantages`."""

    formula = staticmethod(raw_advantages)


class MeanShiftedRule(AbstractRewardRule):
    """``mean_shifted``: :func:`mean_shifted_advantages`."""

    formula = staticmethod(mean_shifted_advantages)


class GRPORule(AbstractRewardRule):
    """``grpo``: :func:`grpo_advantages`; its G → ∞ system is G²RPO eq. (22)."""

    formula = staticmethod(grpo_advantages)

    def limit_system(self, schedule, verifier, eta, step_time):
        return GRPO(eta=eta, verifier=verifier)


class DrGRPORule(AbstractRewardRule):
    """``dr_grpo``: :func:`dr_grpo_advantages`."""

    formula = staticmethod(dr_grpo_advantages)


class RLOORule(AbstractRewardRule):
    """``rloo``: :func:`rloo_advantages` (divides by ``G − 1``)."""

    formula = staticmethod(rloo_advantages)
    min_group_size: ClassVar[int] = 2


class LooStdRule(AbstractRewardRule):
    """``loo_std``: :func:`loo_std_advantages`."""

    formula = staticmethod(loo_std_advantages)
    min_group_size: ClassVar[int] = 2


STD_EPS = Param("std_eps", 1e-6, finite_nonneg, "finite and >= 0", "ε",
                "added to the sample std: 1e-6 is verl's GRPO, 1e-4 TRL's (scale_rewards group / "
                "batch)")


class GRPOSampleStdRule(AbstractRule):
    """``grpo_sample_std``: :func:`grpo_advantages` with the sample std (``ddof = 1``) and
    ``std_eps``."""

    params: ClassVar[tuple[str, ...]] = ("std_eps",)
    PARAMS: ClassVar[tuple[Param, ...]] = (STD_EPS,)
    structure: ClassVar[str] = "counts"

    def __call__(self, groups, params, schedule, step, verifier, num_clusters):
        return grpo_advantages(groups.rewards, groups.mask, eps=params["std_eps"], ddof=1)


#: bound on the support of the other groups' sums in the batch-normalised rules' reductions
_MAX_BATCH_SUPPORT = 2_000_000


class ReinforcePPRule(AbstractRewardRule):
    r"""``reinforce_pp``: :func:`reinforce_pp_advantages`, normalised over the whole batch.

    Its finite-group reduction (batch of ``num_groups`` groups drawn from the same policy): a
    rollout's advantage is ``(r − S/G)/(sd + ε)`` with ``sd² = Σ_b S_b(G − S_b)/(B G²)``; the law
    of the other groups' sum by convolution."""

    formula = staticmethod(reinforce_pp_advantages)
    group_local: ClassVar[bool] = False
    structure: ClassVar[str] = "general"

    def reduction_size(self, bound, K, M, group_size, active):
        G = group_size
        support = (bound.num_groups - 1) * (G * G // 4) + 1
        if support > _MAX_BATCH_SUPPORT:
            return None
        return support * (G * G // 4 + 1)

    def cell_totals(self, bound, q1, q0, probs, group_size, t, num_clusters, active):
        eps = 1e-8
        G = group_size
        dt = probs.dtype
        B = bound.num_groups
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


class GRPOBatchStdRule(AbstractRule):
    r"""``grpo_batch_std``: :func:`grpo_batch_std_advantages` with ``std_eps`` (TRL's
    ``scale_rewards="batch"``), normalised over the whole batch.

    Its finite-group reduction: the own group's count of correct-scored rollouts and the other
    ``B − 1`` groups' total, both binomial; the batch's sample std of ``T`` successes among
    ``N = B G`` binary rewards is ``sqrt(T (N − T) / (N (N − 1)))``."""

    params: ClassVar[tuple[str, ...]] = ("std_eps",)
    PARAMS: ClassVar[tuple[Param, ...]] = (STD_EPS,)
    group_local: ClassVar[bool] = False

    def __call__(self, groups, params, schedule, step, verifier, num_clusters):
        return grpo_batch_std_advantages(groups.rewards, groups.mask, eps=params["std_eps"])

    def reduction_size(self, bound, K, M, group_size, active):
        G = group_size
        support = (bound.num_groups - 1) * G + 1
        return None if support > _MAX_BATCH_SUPPORT else support * G

    def cell_totals(self, bound, q1, q0, probs, group_size, t, num_clusters, active):
        G = group_size
        dt = probs.dtype
        B = bound.num_groups
        N = B * G
        Q = jnp.sum(q1)
        eps = jnp.asarray(bound.params["std_eps"], dt)
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


class ZScoreGroupRule(AbstractGroupRule):
    """GRPO's z-score with a given ε as the finite-group theory sees it: the part of G²RPO and
    ProGRPO that is a count rule (their reductions add its cell totals)."""

    eps: float = eqx.field(static=True)
    structure = "counts"

    def advantages(self, rewards, modes, logp, t, num_clusters, mask=None):
        with trusted_inputs():
            return grpo_advantages(rewards, mask, eps=self.eps)
