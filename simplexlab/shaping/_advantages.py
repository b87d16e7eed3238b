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

import jax.numpy as jnp
import numpy as np

from .._checks import as_int, check, check_finite, check_number, check_parameter, xp
from .._types import Mask, Rewards

#: largest accepted |reward|: group statistics square the rewards (and sum G of them), so larger
#: magnitudes overflow float64 into ±inf advantages or a zero std
REWARD_MAX = 1e100

__all__ = [
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
    # the others' squared deviations from their own mean, one row per rollout: exact 0 when the
    # others agree (their mean is exact for binary rewards), where a closed form would round
    dev = mf[..., None, :] * (1.0 - jnp.eye(r.shape[-1], dtype=r.dtype)) * (
        r[..., None, :] - b[..., :, None]) ** 2
    var = jnp.sum(dev, -1) / jnp.maximum(others - 1.0, 1.0)
    s = jnp.where(others > 1.0, jnp.sqrt(var), 0.0)
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
