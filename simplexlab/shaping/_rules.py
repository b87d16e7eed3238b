r"""Advantage re-weighting rules and their composition.

Each rule is a pure function ``(advantages, rewards, mask) -> advantages`` on groups of shape
``(*groups, G)`` (or, for the token-level GRPO-N, ``(*groups, G, T)``), and has an
``eqx.Module`` counterpart so that methods combine the way the papers combine them:

>>> f_grpo = Pipeline(baseline=grpo_advantages, transforms=(Focal(gamma=0.5),))   # FG eq. 16
>>> dapo_iac = Pipeline(baseline=grpo_advantages, transforms=(IAC(alpha=1.0),),
...                     filter_groups=True)                                       # SC Table 4

A :class:`Pipeline` is a baseline followed by transforms applied in order; extra per-rollout
inputs (cluster ids for G²RPO) are passed by keyword and reach only the transforms that take them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._checks import Param, as_int, check, check_finite, check_number, check_parameter
from ..theory import focal_weight
from ._advantages import grpo_advantages, prepare_group
from ._g2rpo import g2rpo_bonus
from ._rule import AbstractRewardRule, AbstractRule, finite_nonneg
from ._schedule import G2RPOConfig

__all__ = [
    "FOCAL_GAMMA",
    "IAC",
    "IAC_ALPHA",
    "RANK_PENALTY",
    "W_REINFORCE_LAMBDA",
    "FGRPORule",
    "Focal",
    "GRPONRule",
    "IACRule",
    "NSRRule",
    "UnlikelinessRule",
    "WReinforceRule",
    "G2RPOBonus",
    "NegativeOnly",
    "Pipeline",
    "dapo",
    "dapo_iac",
    "dapo_keep_mask",
    "f_dapo",
    "f_grpo",
    "focal_advantages",
    "g2rpo",
    "grpo",
    "grpo_n",
    "iac_advantages",
    "negative_only",
    "nsr_advantages",
    "success_rate",
    "unlikeliness_advantages",
    "w_reinforce_advantages",
]


def _binary(rewards, mask):
    r, m, mf = prepare_group(rewards, mask)
    r = check(r, lambda a: (a != 0) & (a != 1), "rewards must lie in the declared set {0, 1}")
    return r, m, mf


def success_rate(rewards, mask=None):
    r"""Empirical group success rate ``μ̂_pos = |S+| / G`` for binary rewards (FG eq. 15)."""
    r, _, mf = _binary(rewards, mask)
    return jnp.sum(r * mf, -1) / jnp.sum(mf, -1)


def focal_advantages(advantages, rewards, mask=None, *, gamma):
    r"""F-GRPO: ``Â_i^F = g(x) Â_i`` with ``g(x) = (1 − μ̂_pos(x))^γ`` (FG eq. 15–16).

    One scalar per group (``μ̂`` = success rate of the group's valid rollouts) multiplies every
    advantage of the group; applies to any group-relative estimator (F-DAPO, F-CISPO)."""
    adv = _advantages(advantages)
    _shape_match(adv, rewards)
    check_number(gamma, "gamma")
    mu = success_rate(rewards, mask)
    # Under jit, _checks.check's eager branch would apply jnp ops to a concrete Python gamma, which
    # jit stages out; broadcasting gamma against mu makes it a tracer there (runtime check).
    g = focal_weight(mu, jnp.broadcast_to(jnp.asarray(gamma, mu.dtype), mu.shape))
    return adv * g[(...,) + (None,) * (adv.ndim - np.ndim(rewards) + 1)]


def iac_advantages(advantages, rewards, mask=None, *, alpha):
    r"""Inverse-success advantage calibration, SC §3.1 and SC Alg. 1 lines 11–18:
    ``Ã = A (G − |S+|)^α`` for positive advantages, negatives unchanged.

    ``S+ = {s : A_s > 0}`` (SC Alg. 1 line 11) and ``G`` is the number of valid rollouts.
    ``0^0`` is taken as 1 (``α = 0`` recovers the baseline exactly)."""
    adv = _advantages(advantages)
    _shape_match(adv, rewards)
    alpha = check_parameter(alpha, "IAC alpha", lower=0.0)
    _, m, mf = prepare_group(rewards, mask)
    pos = (adv > 0) & m
    n_pos = jnp.sum(pos.astype(mf.dtype), -1)
    base = jnp.sum(mf, -1) - n_pos
    factor = jnp.where(jnp.asarray(alpha) == 0, jnp.ones_like(base), base**alpha)
    return jnp.where(pos, adv * factor[..., None], adv)


def negative_only(advantages):
    r"""GRPO-N: keep only relative negative gradients, ``I(Â_{i,t} < 0) Â_{i,t}`` (TS App. B.5).

    Elementwise, so it applies to sequence-level ``(*groups, G)`` or token-level ``(…, G, T)``
    advantages alike."""
    adv = _advantages(advantages)
    return jnp.where(adv < 0, adv, jnp.zeros((), adv.dtype))


def w_reinforce_advantages(rewards, mask=None, *, w_reinforce_lambda=0.1):
    r"""W-REINFORCE (Zhu et al., 2025, "The Surprising Effectiveness of Negative Reinforcement
    in LLM Reasoning", arXiv:2506.01347): ``λ · PSR + NSR`` with rewards ±1, i.e. ``A_i = λ`` for
    a correct rollout and ``−1`` for an incorrect one, no baseline (λ = ``w_reinforce_lambda``,
    0.1 in the paper; the rule's parameter of the same name). ``λ = 0`` is NSR
    (:func:`nsr_advantages`); PSR alone is ``raw`` on binary rewards."""
    r, m, _ = _binary(rewards, mask)
    lam = check_parameter(w_reinforce_lambda, "W-REINFORCE lambda", lower=0.0)
    lam = jnp.asarray(lam, r.dtype)[..., None] if jnp.ndim(lam) else jnp.asarray(lam, r.dtype)
    return jnp.where(m, jnp.where(r == 1, lam, -1.0), 0.0)


def nsr_advantages(rewards, mask=None):
    r"""Negative sample reinforcement (Zhu et al., 2025): ``A_i = −1`` for an incorrect
    rollout, 0 for a correct one (W-REINFORCE with ``λ = 0``)."""
    return w_reinforce_advantages(rewards, mask, w_reinforce_lambda=0.0)


def unlikeliness_advantages(rewards, logp, mask=None, *, beta=0.25, eps=1e-6):
    r"""The unlikeliness reward (He, Fried & Welleck, 2025, "Rewarding the Unlikely",
    arXiv:2506.02355): each rollout's reward is scaled by ``1 − β · rank_i / n``, ``rank_i`` its
    rank by log-probability within the group (0 = the least likely, a stable sort: ties by
    position) and ``n`` the group's valid rollouts, so that likely correct rollouts are
    penalised and rare ones keep their reward; then GRPO's z-score with the sample std and
    ``ε = 1e-6``. As the authors' release computes it (its ``_compute_advantages``: ranks from a
    double argsort of the mean token log-probability, ``β = rank_penalty = 0.25``).
    ``logp``: ``(*groups, G)``, finite."""
    r, m, _ = prepare_group(rewards, mask)
    check_number(logp, "logp")
    if np.shape(logp) != r.shape:
        raise ValueError(f"logp must have the shape of rewards {r.shape}; got {np.shape(logp)}")
    lp = check_finite(jnp.where(m, jnp.asarray(logp, r.dtype), 0.0), "logp")
    beta = check_parameter(beta, "unlikeliness beta (rank_penalty)", lower=0.0)
    beta = jnp.asarray(beta, r.dtype)[..., None] if jnp.ndim(beta) else beta
    key = jnp.where(m, lp, jnp.inf)  # masked rollouts rank after every valid one
    rank = jnp.argsort(jnp.argsort(key, axis=-1, stable=True), axis=-1, stable=True)
    n = jnp.sum(m, -1, keepdims=True).astype(r.dtype)
    shaped = r * (1.0 - beta * rank.astype(r.dtype) / n)
    return grpo_advantages(shaped, mask, eps=eps, ddof=1)


def dapo_keep_mask(rewards, mask=None):
    r"""DAPO dynamic sampling (Yu et al., 2025): keep a group iff ``0 < #correct < G``.

    Returns a boolean ``(*groups,)``; DAPO re-samples the dropped groups, which at the advantage
    level means they do not contribute (their GRPO advantages are zero anyway)."""
    r, _, mf = _binary(rewards, mask)
    c = jnp.sum(r * mf, -1)
    return (c > 0) & (c < jnp.sum(mf, -1))


def _advantages(advantages):
    check_number(advantages, "advantages")
    return jnp.asarray(check_finite(advantages, "advantages"))


def _shape_match(adv, rewards):
    rs = np.shape(rewards)
    if np.shape(adv)[: len(rs)] != rs:
        raise ValueError(f"advantages of shape {np.shape(adv)} do not match rewards of shape {rs}")


class Focal(eqx.Module):
    """F-GRPO focal re-weighting (FG eq. 15–16); see :func:`focal_advantages`."""

    gamma: float = eqx.field(kw_only=True)

    def __check_init__(self):
        check_parameter(self.gamma, "Focal.gamma", lower=0.0)

    def __call__(self, adv, rewards, mask=None, **_):
        return focal_advantages(adv, rewards, mask, gamma=self.gamma)


class IAC(eqx.Module):
    """Inverse-success advantage calibration (SC §3.1); see :func:`iac_advantages`."""

    alpha: float = eqx.field(kw_only=True)

    def __check_init__(self):
        check_parameter(self.alpha, "IAC.alpha", lower=0.0)

    def __call__(self, adv, rewards, mask=None, **_):
        return iac_advantages(adv, rewards, mask, alpha=self.alpha)


class NegativeOnly(eqx.Module):
    """GRPO-N negative-only mask (TS App. B.5); see :func:`negative_only`."""

    def __call__(self, adv, rewards=None, mask=None, **_):
        return negative_only(adv)


class G2RPOBonus(eqx.Module):
    """Add the G²RPO bonus (G2 Alg. 1 line 12); needs ``good_cluster`` (and optionally
    ``bad_cluster``) keywords. See :func:`simplexlab.shaping.g2rpo_bonus`."""

    config: G2RPOConfig = eqx.field(default_factory=G2RPOConfig, kw_only=True)
    num_clusters: int | None = eqx.field(default=None, kw_only=True, static=True)

    def __check_init__(self):
        if not isinstance(self.config, G2RPOConfig):
            raise ValueError(f"G2RPOBonus.config must be a G2RPOConfig; got {self.config!r}")
        if self.num_clusters is not None:
            as_int(self.num_clusters, "G2RPOBonus.num_clusters", lower=1)

    def __call__(self, adv, rewards, mask=None, *, good_cluster, bad_cluster=None, **_):
        return adv + g2rpo_bonus(rewards, good_cluster, bad_cluster, mask, config=self.config,
                                 num_clusters=self.num_clusters)


class Pipeline(eqx.Module):
    r"""A baseline followed by advantage transforms, applied in order.

    ``baseline(rewards, mask) -> A``; each transform ``t(A, rewards, mask, **extras) -> A``.
    ``filter_groups=True`` applies DAPO dynamic sampling (:func:`dapo_keep_mask`): the
    advantages of dropped groups are set to zero.
    """

    baseline: Callable = eqx.field(default=grpo_advantages, kw_only=True, static=True)
    transforms: tuple = eqx.field(default=(), kw_only=True)
    filter_groups: bool = eqx.field(default=False, kw_only=True, static=True)

    def __check_init__(self):
        if not callable(self.baseline):
            raise ValueError(f"Pipeline.baseline must be callable; got {self.baseline!r}")
        if not isinstance(self.transforms, tuple | list):
            raise ValueError(f"Pipeline.transforms must be a tuple of transforms (e.g. "
                             f"(Focal(gamma=0.5),)); got {self.transforms!r}")
        for t in self.transforms:
            if not callable(t):
                raise ValueError(f"Pipeline transforms must be callable; got {t!r}")

    def __call__(self, rewards, mask=None, **extras):
        adv = self.baseline(rewards, mask)
        for t in self.transforms:
            adv = t(adv, rewards, mask, **extras)
        if self.filter_groups:
            adv = jnp.where(dapo_keep_mask(rewards, mask)[..., None], adv, 0.0)
        return adv


def grpo() -> Pipeline:
    """Plain GRPO z-score advantages."""
    return Pipeline()


def grpo_n() -> Pipeline:
    """GRPO-N (TS §4.1, App. B.5)."""
    return Pipeline(transforms=(NegativeOnly(),))


def f_grpo(gamma: float) -> Pipeline:
    """F-GRPO (FG eq. 16)."""
    return Pipeline(transforms=(Focal(gamma=gamma),))


def dapo() -> Pipeline:
    """DAPO at the advantage level: GRPO z-score + dynamic-sampling group filter."""
    return Pipeline(filter_groups=True)


def f_dapo(gamma: float) -> Pipeline:
    """F-DAPO (FG §4.2): DAPO advantages times the focal weight."""
    return Pipeline(transforms=(Focal(gamma=gamma),), filter_groups=True)


def dapo_iac(alpha: float = 1.0) -> Pipeline:
    """DAPO + IAC (SC Table 4)."""
    return Pipeline(transforms=(IAC(alpha=alpha),), filter_groups=True)


def g2rpo(config: G2RPOConfig | None = None, num_clusters: int | None = None) -> Pipeline:
    """G²RPO (G2 Alg. 1): GRPO z-score plus the bonus; call with ``good_cluster=…``."""
    config = G2RPOConfig() if config is None else config
    if not isinstance(config, G2RPOConfig):
        raise ValueError(f"config must be a G2RPOConfig; got {config!r}")
    if num_clusters is not None:
        num_clusters = as_int(num_clusters, "num_clusters", lower=1)
    return Pipeline(baseline=functools.partial(grpo_advantages, eps=config.eps),
                    transforms=(G2RPOBonus(config=config, num_clusters=num_clusters),))



# --------------------------------------------------------------------------- the rules

FOCAL_GAMMA = Param("focal_gamma", 1.0, finite_nonneg, "finite and >= 0", "γ",
                    "F-GRPO's focal exponent (FG eq. 15)")
IAC_ALPHA = Param("iac_alpha", 1.0, finite_nonneg, "finite and >= 0", "α",
                  "IAC's exponent of the inverse success count (SC §3.1)")
W_REINFORCE_LAMBDA = Param("w_reinforce_lambda", 0.1, finite_nonneg, "finite and >= 0", "λ",
                           "W-REINFORCE's weight of the correct rollouts (Zhu et al., 2025: 0.1)")
RANK_PENALTY = Param("rank_penalty", 0.25, finite_nonneg, "finite and >= 0", "β",
                     "the unlikeliness reward's rank penalty (He et al., 2025: 0.25)")


class FGRPORule(AbstractRule):
    """``f_grpo``: GRPO times the focal weight (:func:`f_grpo`, FG eq. 15–16)."""

    params: ClassVar[tuple[str, ...]] = ("focal_gamma",)
    PARAMS: ClassVar[tuple[Param, ...]] = (FOCAL_GAMMA,)
    binary: ClassVar[bool] = True
    structure: ClassVar[str] = "counts"

    def __call__(self, groups, params, schedule, step, verifier, num_clusters):
        return f_grpo(params["focal_gamma"])(groups.rewards, groups.mask)


class IACRule(AbstractRule):
    """``iac``: DAPO + IAC (:func:`dapo_iac`, SC §3.1, Table 4)."""

    params: ClassVar[tuple[str, ...]] = ("iac_alpha",)
    PARAMS: ClassVar[tuple[Param, ...]] = (IAC_ALPHA,)
    binary: ClassVar[bool] = True
    structure: ClassVar[str] = "counts"

    def __call__(self, groups, params, schedule, step, verifier, num_clusters):
        return dapo_iac(params["iac_alpha"])(groups.rewards, groups.mask)


class GRPONRule(AbstractRewardRule):
    """``grpo_n``: GRPO-N (:func:`grpo_n`, TS App. B.5)."""

    formula = staticmethod(grpo_n())


class WReinforceRule(AbstractRule):
    """``w_reinforce``: :func:`w_reinforce_advantages`."""

    params: ClassVar[tuple[str, ...]] = ("w_reinforce_lambda",)
    PARAMS: ClassVar[tuple[Param, ...]] = (W_REINFORCE_LAMBDA,)
    binary: ClassVar[bool] = True
    structure: ClassVar[str] = "counts"

    def __call__(self, groups, params, schedule, step, verifier, num_clusters):
        return w_reinforce_advantages(groups.rewards, groups.mask,
                                      w_reinforce_lambda=params["w_reinforce_lambda"])


class NSRRule(AbstractRewardRule):
    """``nsr``: :func:`nsr_advantages`."""

    formula = staticmethod(nsr_advantages)
    binary: ClassVar[bool] = True


class UnlikelinessRule(AbstractRule):
    """``unlikeliness``: :func:`unlikeliness_advantages` with ``β = rank_penalty``."""

    params: ClassVar[tuple[str, ...]] = ("rank_penalty",)
    PARAMS: ClassVar[tuple[Param, ...]] = (RANK_PENALTY,)
    logp: ClassVar[bool] = True

    def __call__(self, groups, params, schedule, step, verifier, num_clusters):
        return unlikeliness_advantages(groups.rewards, groups.logp, groups.mask,
                                       beta=params["rank_penalty"])
