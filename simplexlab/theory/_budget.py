r"""Progress per rollout: a budget of ``R`` rollouts per step split as ``P`` prompts × ``G``.

**The shared-parameter policy.** Prompt ``i`` of a finite set (weights ``w_i``, a
:class:`~simplexlab.theory.PromptSet`'s pool) has the logits ``θ_i = θ⁰_i + W x_i`` over its
``K + M`` modes: fixed base logits ``θ⁰_i`` (the base model: the prompt's pass rate and mode
masses at ``W = 0``), features ``x_i ∈ R^D`` and one weight matrix ``W`` ``(C, D)`` that every
prompt shares (:class:`SharedPolicy`). One-hot features (``D = N``) give every prompt its own
logits (the per-prompt bandit); unit random features make the prompts' gradients interfere
through the kernel ``K_ij = x_iᵀ x_j``.

**The step's moments** (:func:`shared_moments`). A step draws ``P`` prompts i.i.d. from ``w``
(``sampling="replacement"``; ``"all"``: every prompt once, weighted by ``w``), ``G`` rollouts
each, and ascends the mean over the batch of each group's surrogate, so
``ĝ_W = (1/P) Σ_p g_{i_p} x_{i_p}ᵀ`` with ``g_i`` one group's step on ``θ_i``, whose mean
``m_i`` and second moment ``S_i`` are :func:`~simplexlab.theory.expected_moments`' at
``π_i``. Pushed through the shared Jacobian ``∂θ_i/∂W = (· ) x_iᵀ``:

    ``E[ĝ_W] = Σ_i w_i m_i x_iᵀ``,
    ``Cov[vec ĝ_W] = (1/P) (Σ_i w_i S_i ⊗ x_i x_iᵀ − E[ĝ_W] E[ĝ_W]ᵀ)`` (replacement),
    ``Σ_i w_i² Cov[g_i] ⊗ x_i x_iᵀ`` (all).

With ``R = P G`` fixed the noise is ``G Σ_G / R`` (``Σ_G`` that of one prompt's group).

**Progress of a step** (:func:`step_progress`). An objective ``F(W) = Σ_i w_i f(θ_i)`` (the pass
rate ``Σ_{c<K} π_c``; ``"pass@k"``: ``1 − (1 − μ)^k``; ``"diversity"``: ``1 − L_y``, the
Gini–Simpson index of the good modes, ``y = softmax(θ_{<K})``) and a trust region on the
policy: a step pays ``β`` (``kl``) per nat of ``E_i[KL(π_i ‖ π_i')]``, whose Hessian is the
Fisher matrix ``J(π_i) = Diag(π_i) − π_i π_iᵀ``. For an update ``η u`` with mean ``d`` and
covariance ``V`` (per unit ``η``), to second order in ``η`` (exact moments, no other
approximation)

    ``Φ(η) = E[ΔF] − β E[KL] = η aᵀd − (η²/2) (dᵀ B d + tr(B V))``,
    ``B = β J − ∇²f`` (blockwise over the prompts, through the features),

so the progress-optimal rate is ``η* = aᵀd / c``, ``c = dᵀBd + tr(BV)``, and the progress per
step ``Φ* = (aᵀd)² / (2c)`` -- McCandlish et al. (arXiv 1812.06162) eq. (2.6)–(2.7) with the
trust region's curvature: ``Φ* = Φ*_max / (1 + B_noise/P)`` for SGD, with the **gradient noise
scale** ``B_noise = tr(B Σ_1) / (mᵀ B m)`` (``Σ_1`` the covariance of one prompt's term, in
prompts per step; exact here at every ``G``). ``P ≪ B_noise``: noise-dominated (the progress
per rollout depends on ``G`` alone, ``R`` scales it); ``P ≫ B_noise``: small noise (the mean
step's direction decides). The rate that maximises ``Φ`` is also the one that keeps a fixed
expected KL per step where ``∇²f`` is negligible against ``β J`` (the answer ``G*`` then does
not depend on ``β``).

**Optimizers.** SGD: ``d = E[ĝ_W]``, ``V = Cov[ĝ_W]``. Adam (and RMSprop) in the small-step
limit (:class:`~simplexlab.theory.Adam`): ``d = E[ĝ] / (√E[ĝ∘ĝ] + ε)`` entrywise,
``E[ĝ∘ĝ] = E[ĝ]² + diag Cov[ĝ]`` (which holds the batch's noise, so ``P`` and ``G``), and the
step's noise normalised alike, ``V = D⁻¹ Cov[ĝ] D⁻¹`` (``D = diag(√E[ĝ∘ĝ] + ε)``; Adam's
first-moment average correlates successive steps but leaves the noise a trajectory
accumulates unchanged). Momentum rescales SGD's rate, which ``η*`` absorbs: SGD's answer.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import as_int
from .._env import fast_compile_options
from ._finite_moments import check_num_groups, group_step_moments
from ._finite_paths import MAX_SIZE, check_settings, checked_one_group_size, known_zero_rates
from ._optimizers import SGD, AbstractOptimizerLimit, Adam, Momentum, RMSprop, optimizer_limit
from ._prompts import PromptSet
from ._verifier import Verifier

__all__ = ["FEATURES", "OBJECTIVES", "SAMPLING", "Progress", "SharedMoments", "SharedPolicy",
           "objective_value", "progress_batch", "prompt_moments", "shared_moments",
           "shared_policy", "step_progress"]

FEATURES = ("onehot", "shared", "random")
"""The prompt features of :func:`shared_policy`: ``"onehot"`` (every prompt its own logits),
``"shared"`` (one logit shift for all), ``"random"`` (unit vectors, uniform on the sphere of
``R^D``)."""
SAMPLING = ("replacement", "all")
"""How a step picks its prompts: ``P`` i.i.d. draws from the weights, or every prompt once."""
OBJECTIVES = ("pass", "diversity")
"""The objectives of :func:`step_progress` by name (and ``"pass@k"``, ``k >= 1``)."""


# --------------------------------------------------------------------------- the policy


class SharedPolicy(eqx.Module):
    r"""``θ_i = θ⁰_i + W x_i`` (module docstring): ``base_logits`` ``(N, C)``, ``features``
    ``(N, D)``, ``weights`` ``(N,)`` (the prompts' probabilities), ``K`` good modes first."""

    base_logits: jax.Array
    features: jax.Array
    weights: jax.Array
    K: int = eqx.field(static=True)

    @property
    def shape(self) -> tuple[int, int]:
        """``(C, D)``, the shape of ``W``."""
        return self.base_logits.shape[-1], self.features.shape[-1]

    def zeros(self):
        """``W = 0``: the base policy."""
        return jnp.zeros(self.shape, self.base_logits.dtype)

    def logits(self, W, index=None):
        """``θ_i = θ⁰_i + W x_i`` of every prompt (or of the prompts ``index``)."""
        b, x = (self.base_logits, self.features) if index is None else (
            self.base_logits[index], self.features[index])
        return b + x @ W.T

    def probs(self, W, index=None):
        """``softmax(θ_i)``."""
        return jax.nn.softmax(self.logits(W, index), -1)

    def kernel(self):
        """``K_ij = x_iᵀ x_j`` ``(N, N)``."""
        return self.features @ self.features.T


def _features(kind: str, N: int, D: int | None, seed: int) -> np.ndarray:
    if kind == "onehot":
        return np.eye(N)
    if kind == "shared":
        return np.ones((N, 1))
    D = as_int(8 if D is None else D, "num_features (D)", lower=1)
    x = np.random.default_rng(seed).standard_normal((N, D))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def shared_policy(prompts: PromptSet, K: int, M: int, *, features: str = "random",
                  num_features: int | None = None, seed: int = 0,
                  rare_share: float | None = None, dtype=None) -> SharedPolicy:
    r"""The shared-parameter policy of ``prompts`` (their pool as given: see
    :meth:`PromptSet.pool`): base logits ``log π_i`` from :meth:`PromptSet.policies` (``K``
    good modes, ``M`` bad, ``rare_share``), features of ``kind`` :data:`FEATURES`
    (``num_features`` ``D`` for random ones, default 8; ``seed`` draws them)."""
    if features not in FEATURES:
        raise ValueError(f"shared_policy: features must be one of {FEATURES}; got {features!r}")
    dt = jnp.result_type(float) if dtype is None else dtype
    probs = prompts.policies(K, M, rare_share=rare_share)
    x = _features(features, prompts.size, num_features, seed)
    return SharedPolicy(jnp.asarray(np.log(probs), dt), jnp.asarray(x, dt),
                        jnp.asarray(prompts.weights, dt), K)


# --------------------------------------------------------------------------- the moments


def prompt_moments(rule, probs, K: int, group_size: int, *, verifier: Verifier | None = None,
                   surrogate: str = "log_likelihood", reduction: str = "mean",
                   path: str = "auto", t=0.0, max_size: int = MAX_SIZE,
                   num_samples: int = 4096, key=None, max_group_size: int | None = None):
    r"""One group's :class:`~simplexlab.theory.StepMoments` at each prompt's policy ``probs``
    ``(N, C)`` (leading axis ``N`` on every array): :func:`expected_moments` vectorised over the
    prompts, one compiled program per setting. ``"auto"`` takes an exact path, else Monte Carlo
    (the result names its path). ``max_group_size``: ``group_size`` is data below this static
    bound, one program for every group size up to it (the counts path, as
    :func:`expected_moments`)."""
    verifier = Verifier() if verifier is None else verifier
    G = check_settings("prompt_moments", group_size, surrogate, reduction, "auto", rule,
                       max_group_size)
    check_num_groups(rule, 1, "prompt_moments")
    probs = jnp.asarray(probs, jnp.result_type(float))
    if probs.ndim != 2:
        raise ValueError(f"prompt_moments: probs must be (N, C); got shape {probs.shape}")
    K = as_int(K, "prompt_moments: K", lower=1)
    key = jax.random.key(0) if key is None else key
    probs = checked_one_group_size(G, max_group_size, rule, probs, "prompt_moments")
    return _prompt_moments(rule, probs, verifier, t, key, G, K=K, surrogate=surrogate,
                           reduction=reduction, path=path, max_size=max_size,
                           num_samples=num_samples, zero_rates=known_zero_rates(verifier),
                           max_group_size=max_group_size)


@eqx.filter_jit
def _prompt_moments(rule, probs, verifier, t, key, G, *, K, surrogate, reduction, path,
                    max_size, num_samples, zero_rates, max_group_size):
    keys = jax.random.split(key, probs.shape[0])
    return jax.vmap(lambda p, k: group_step_moments(
        rule, p, K, G, verifier=verifier, surrogate=surrogate, reduction=reduction,
        num_groups=1, path=path, t=t, max_size=max_size, num_samples=num_samples, key=k,
        zero_rates=zero_rates, max_group_size=max_group_size))(probs, keys)


class SharedMoments(eqx.Module):
    r"""The moments of one step's gradient ``ĝ_W`` of the shared-parameter policy (module
    docstring), held per prompt: ``mean`` ``(N, C)`` and ``second_moment`` ``(N, C, C)`` of one
    group's ``g_i``, the ``policy``'s features and weights, ``num_prompts`` ``P`` and ``sampling``;
    ``group_size`` ``G``; ``path``: how the per-prompt moments were computed."""

    mean: jax.Array
    second_moment: jax.Array
    features: jax.Array
    weights: jax.Array
    num_prompts: int = eqx.field(static=True)
    sampling: str = eqx.field(static=True)
    group_size: int = eqx.field(static=True)
    path: str = eqx.field(static=True)

    @property
    def covariance(self):
        """``Cov[g_i]`` ``(N, C, C)`` of one group."""
        return self.second_moment - self.mean[:, :, None] * self.mean[:, None, :]

    @property
    def mean_W(self):
        """``E[ĝ_W] = Σ_i w_i m_i x_iᵀ`` ``(C, D)``."""
        return jnp.einsum("i,ic,id->cd", self.weights, self.mean, self.features)

    @property
    def squared_W(self):
        """``E[ĝ_W ∘ ĝ_W]`` ``(C, D)`` (what Adam's second-moment estimate tracks)."""
        m = self.mean_W
        x2 = self.features**2
        if self.sampling == "all":
            var = jnp.einsum("i,ic,id->cd", self.weights**2,
                             jnp.diagonal(self.covariance, axis1=-2, axis2=-1), x2)
        else:
            var = (jnp.einsum("i,ic,id->cd", self.weights,
                              jnp.diagonal(self.second_moment, axis1=-2, axis2=-1), x2) - m**2)
            var = var / self.num_prompts
        return m**2 + var

    @property
    def covariance_W(self):
        """``Cov[vec ĝ_W]`` ``(C D, C D)`` (row-major ``vec``; explicit: for small models)."""
        x = self.features
        outer = jnp.einsum("id,ie->ide", x, x)
        if self.sampling == "all":
            cov = jnp.einsum("i,iab,ide->adbe", self.weights**2, self.covariance, outer)
            C, D = self.mean.shape[-1], x.shape[-1]
            return cov.reshape(C * D, C * D)
        s = jnp.einsum("i,iab,ide->adbe", self.weights, self.second_moment, outer)
        C, D = s.shape[0], s.shape[1]
        m = self.mean_W.reshape(-1)
        return (s.reshape(C * D, C * D) - jnp.outer(m, m)) / self.num_prompts


def shared_moments(rule, policy: SharedPolicy, group_size: int, *, num_prompts: int,
                   sampling: str = "replacement", W=None, verifier: Verifier | None = None,
                   surrogate: str = "log_likelihood", reduction: str = "mean",
                   path: str = "auto", t=0.0, max_size: int = MAX_SIZE,
                   num_samples: int = 4096, key=None, moments=None) -> SharedMoments:
    r""":class:`SharedMoments` of ``rule`` at ``W`` (default 0: the base policy), ``P =
    num_prompts`` prompts per step drawn by ``sampling`` (:data:`SAMPLING`; ``"all"`` needs
    ``P = N``). ``moments``: the per-prompt :func:`prompt_moments` already computed at this
    ``W`` (e.g. shared across budgets)."""
    if sampling not in SAMPLING:
        raise ValueError(f"shared_moments: sampling must be one of {SAMPLING}; got {sampling!r}")
    N = policy.weights.shape[0]
    P = as_int(num_prompts, "shared_moments: num_prompts (P)", lower=1)
    if sampling == "all" and P != N:
        raise ValueError(f"shared_moments: sampling='all' takes every prompt once: num_prompts "
                         f"must be N = {N}; got {P}")
    if moments is None:
        W = policy.zeros() if W is None else W
        moments = prompt_moments(rule, policy.probs(W), policy.K, group_size, verifier=verifier,
                                 surrogate=surrogate, reduction=reduction, path=path, t=t,
                                 max_size=max_size, num_samples=num_samples, key=key)
    return SharedMoments(moments.mean, moments.second_moment, policy.features, policy.weights,
                         P, sampling, int(group_size), moments.path)


# --------------------------------------------------------------------------- objectives


def _objective(objective: str):
    """``(f, name)``: the per-prompt objective ``f(θ, K)`` of a name (module docstring)."""
    if objective == "pass":
        return lambda th, K: jnp.sum(jax.nn.softmax(th)[:K])
    if objective == "diversity":
        return lambda th, K: 1.0 - jnp.sum(jax.nn.softmax(th[:K]) ** 2)
    if isinstance(objective, str) and objective.startswith("pass@"):
        try:
            k = int(objective[5:])
        except ValueError:
            k = 0
        if k >= 1:
            return lambda th, K: 1.0 - (1.0 - jnp.sum(jax.nn.softmax(th)[:K])) ** k
    raise ValueError(f"unknown objective {objective!r}; choose one of {OBJECTIVES} or "
                     "'pass@k' (k an integer >= 1)")


def objective_value(objective: str, policy: SharedPolicy, W=None):
    """``F(W) = Σ_i w_i f(θ_i)`` of ``objective`` (:data:`OBJECTIVES`, ``"pass@k"``)."""
    _objective(objective)  # a known name
    th = policy.base_logits if W is None else policy.logits(W)
    return _objective_value(th, policy.weights, K=policy.K, objective=str(objective))


@functools.partial(jax.jit, static_argnames=("K", "objective"))
def _objective_value(th, w, *, K, objective):
    f = _objective(objective)
    return jnp.sum(w * jax.vmap(lambda t: f(t, K))(th))


# --------------------------------------------------------------------------- progress


@dataclasses.dataclass(frozen=True)
class Progress:
    r"""What one step of rate ``η`` gains (module docstring), as the coefficients of
    ``Φ(η) = η first − (η²/2) (kl (mean_fisher + noise_fisher) − (mean_hessian +
    noise_hessian))``: ``first = aᵀd``; ``mean_*`` ``dᵀ · d`` and ``noise_*`` ``tr(· V)`` of the
    Fisher matrix ``J`` and the objective's Hessian ``∇²f``; ``kl`` ``β``; ``num_prompts`` ``P``,
    ``group_size`` ``G``, ``optimizer`` its name, ``objective``. Numbers on the host (NumPy
    arithmetic: :meth:`at` takes arrays of rates)."""

    first: float
    mean_fisher: float
    noise_fisher: float
    mean_hessian: float
    noise_hessian: float
    kl: float
    num_prompts: int
    group_size: int
    optimizer: str
    objective: str

    REGIMES: ClassVar[tuple[str, str]] = ("small-noise", "noise-dominated")

    @property
    def budget(self) -> int:
        """``R = P G`` rollouts per step."""
        return self.num_prompts * self.group_size

    @property
    def mean_curvature(self) -> float:
        """``dᵀ B d`` (the mean step's share of ``c``)."""
        return self.kl * self.mean_fisher - self.mean_hessian

    @property
    def noise_curvature(self) -> float:
        """``tr(B V)`` (the noise's share of ``c``)."""
        return self.kl * self.noise_fisher - self.noise_hessian

    @property
    def curvature(self) -> float:
        """``c = dᵀBd + tr(BV)``: ``Φ`` has its maximum at ``η* = first / c`` where ``c > 0``."""
        return self.mean_curvature + self.noise_curvature

    @property
    def eta(self) -> float:
        """``η* = aᵀd / c`` (0 where the step does not raise the objective, ``inf`` where
        ``c <= 0``: then the trust region is too weak for the objective's curvature)."""
        if self.first <= 0:
            return 0.0
        return self.first / self.curvature if self.curvature > 0 else math.inf

    @property
    def progress(self) -> float:
        """``Φ* = (aᵀd)² / (2c)``, the progress per step at ``η*`` (0 where ``aᵀd <= 0``)."""
        if self.first <= 0:
            return 0.0
        return self.first**2 / (2 * self.curvature) if self.curvature > 0 else math.inf

    @property
    def per_rollout(self) -> float:
        """``Φ* / R``."""
        return self.progress / self.budget

    def at(self, eta):
        """``Φ(η)`` (``eta`` a number or an array)."""
        eta = np.asarray(eta, float)
        return eta * self.first - 0.5 * eta**2 * self.curvature

    def gain(self, eta=None):
        """``E[ΔF]`` at ``η`` (default ``η*``), second order."""
        eta = self.eta if eta is None else np.asarray(eta, float)
        return eta * self.first + 0.5 * eta**2 * (self.mean_hessian + self.noise_hessian)

    def kl_step(self, eta=None):
        """``E[KL(π ‖ π')]`` at ``η`` (default ``η*``), second order."""
        eta = self.eta if eta is None else np.asarray(eta, float)
        return 0.5 * eta**2 * (self.mean_fisher + self.noise_fisher)

    @property
    def noise_scale(self) -> float:
        r"""``B_noise = P tr(B V) / (dᵀ B d)``: the prompts per step at which the noise's share
        of the curvature equals the mean step's (McCandlish et al.'s ``B_noise``; for SGD
        ``tr(B Σ_1)/(mᵀ B m)``, independent of ``P``)."""
        m = self.mean_curvature
        return self.num_prompts * self.noise_curvature / m if m != 0 else math.inf

    @property
    def regime(self) -> str:
        """``"noise-dominated"`` where the noise's share of ``c`` exceeds the mean step's (``P <
        B_noise``), else ``"small-noise"``."""
        return self.REGIMES[int(self.noise_curvature > self.mean_curvature)]


def _limit_name(opt: AbstractOptimizerLimit) -> str:
    if isinstance(opt, SGD | Momentum):
        return "sgd"
    if isinstance(opt, Adam | RMSprop):
        return "adam" if isinstance(opt, Adam) else "rmsprop"
    raise ValueError(f"step_progress: the budget theory covers SGD, momentum, RMSprop and Adam "
                     f"(small-step limits); got {opt!r}")


def step_progress(moments: SharedMoments, policy: SharedPolicy, objective: str = "pass", *,
                  kl: float = 1.0, optimizer="sgd", W=None) -> Progress:
    r""":class:`Progress` of one step of ``optimizer`` (a name of
    :func:`~simplexlab.theory.optimizer_limit` or a limit: SGD, momentum -- SGD's answer, its
    rate rescaled --, RMSprop, Adam) on ``objective`` at ``W`` (default 0) from the step's
    ``moments`` (:func:`shared_moments`), with the trust region ``kl`` ``β > 0`` (module
    docstring)."""
    return progress_batch([moments], policy, objective, kl=kl, optimizers=(optimizer,),
                          W=W)[0][0]


def progress_batch(moments, policy: SharedPolicy, objective: str = "pass", *, kl: float = 1.0,
                   optimizers=("sgd",), W=None) -> list[list[Progress]]:
    r""":func:`step_progress` for a sequence of :class:`SharedMoments` (any group sizes and
    prompts per step, one sampling) and each of ``optimizers``: ``out[i][j]`` the
    :class:`Progress` of ``moments[i]`` with ``optimizers[j]``, all from one compiled program
    (vectorised over the moments; compiled once per shape and setting)."""
    if isinstance(kl, bool) or not isinstance(kl, int | float) or not (
            math.isfinite(kl) and kl > 0):
        raise ValueError(f"step_progress: kl (β, the price of a nat of KL per step) must be a "
                         f"finite number > 0; got {kl!r}")
    moments = list(moments)
    if not moments or len({m.sampling for m in moments}) != 1:
        raise ValueError("progress_batch: give one or more SharedMoments of one sampling")
    limits = [optimizer_limit(o) for o in optimizers]
    settings = tuple((_limit_name(o), float(getattr(o, "eps", 0.0)),
                      bool(getattr(o, "eps_in_sqrt", False))) for o in limits)
    _objective(objective)  # a known name
    th = policy.base_logits if W is None else policy.logits(W)
    dt = moments[0].mean.dtype
    # stacked on the host: no eager device programs beside the one below
    terms = _progress_terms(
        np.stack([np.asarray(m.mean) for m in moments]),
        np.stack([np.asarray(m.second_moment) for m in moments]), moments[0].features,
        moments[0].weights, np.asarray([m.num_prompts for m in moments], dt), th, K=policy.K,
        objective=str(objective), settings=settings, sampling=moments[0].sampling)
    terms = np.asarray(terms)  # (optimizers, 5, len(moments))
    return [[Progress(*(float(v) for v in terms[j, :, i]), float(kl), m.num_prompts,
                      m.group_size, settings[j][0], str(objective))
             for j in range(len(limits))] for i, m in enumerate(moments)]


@functools.partial(jax.jit, static_argnames=("K", "objective", "settings", "sampling"),
                   compiler_options=fast_compile_options())
def _progress_terms(mean, second, x, w, P, th, *, K, objective, settings, sampling):
    """``(aᵀd, dᵀJd, tr(JV), dᵀ∇²f d, tr(∇²f V))`` (module docstring) for each optimizer
    setting and each batch entry ``(mean, second, P)``: ``(optimizers, 5, batch)``. Compiled
    once per shape and setting with XLA's fast-compiling options (it runs a few times; the same
    numbers); ``G`` and ``P`` are not part of it."""
    f = _objective(objective)
    probs = jax.nn.softmax(th, -1)
    a = jax.vmap(jax.grad(lambda t: f(t, K)))(th)  # (N, C)
    hess = jax.vmap(jax.hessian(lambda t: f(t, K)))(th)  # (N, C, C)
    fisher = jax.vmap(lambda p: jnp.diag(p) - jnp.outer(p, p))(probs)

    def one(mean, second, P, optimizer, eps, eps_in_sqrt):
        mW = jnp.einsum("i,ic,id->cd", w, mean, x)
        cov = second - mean[:, :, None] * mean[:, None, :]
        if optimizer == "sgd":
            scale = jnp.ones_like(mW)
        else:  # E[ĝ∘ĝ] (SharedMoments.squared_W)
            if sampling == "all":
                var = jnp.einsum("i,ic,id->cd", w**2, jnp.diagonal(cov, axis1=-2, axis2=-1),
                                 x**2)
            else:
                var = (jnp.einsum("i,ic,id->cd", w, jnp.diagonal(second, axis1=-2, axis2=-1),
                                  x**2) - mW**2) / P
            s = mW**2 + var
            scale = 1.0 / (jnp.sqrt(s + eps) if eps_in_sqrt else jnp.sqrt(s) + eps)
        delta = x @ (scale * mW).T  # (N, C): each prompt's logit step per unit η
        first = jnp.sum(w * jnp.sum(a * delta, -1))
        u = jnp.einsum("cd,id,jd->ijc", scale, x, x)  # u_ij = scale @ (x_i ∘ x_j)

        def terms(B):
            m = jnp.sum(w * jnp.einsum("ic,icd,id->i", delta, B, delta))
            if sampling == "all":
                noise = jnp.einsum("i,j,iab,ija,ijb,jba->", w, w**2, B, u, u, cov)
            else:
                noise = (jnp.einsum("i,j,iab,ija,ijb,jba->", w, w, B, u, u, second) - m) / P
            return m, noise

        mf, nf = terms(fisher)
        mh, nh = terms(hess)
        return jnp.stack([first, mf, nf, mh, nh])

    return jnp.stack([jax.vmap(lambda m, s, p, o=o: one(m, s, p, *o), out_axes=1)(
        mean, second, P) for o in settings])
