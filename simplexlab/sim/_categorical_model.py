r"""Categorical softmax policy simulator (F-GRPO §5.1, Fig. 4, App. J; BroRL setup).

A softmax policy over ``A`` actions, the first ``K`` of which are correct (reward ``R_c``), the
rest incorrect (reward ``R_w``). Action 0 is the *anchor* (F-GRPO App. J: logits 5.0 for the
anchor, 3.0 for the other correct actions, 0.0 for incorrect ones; ``A = 128,000``,
``K = 10,000``). Each step draws ``N`` i.i.d. actions, forms group-relative advantages with any
function of :mod:`simplexlab.shaping`, takes the gradient of the chosen surrogate in *count form*
(O(A)) and applies an ``optax`` optimizer.

This module holds the model: the policy, its configuration, the advantages and the count-form
gradient; the simulator built on it (the pure ``(init, step)`` pair, ``run``, ``Categorical``) is
:mod:`simplexlab.sim._categorical`. Everything
jits and vmaps over seeds and over the array fields of :class:`CategoricalConfig`
(``group_size``, ``eta``, ``focal_gamma``, the policy logits and rewards). The bound
``max_group_size``, the surrogate, reduction, advantage function, optimizer and sampler are
static: one compilation per bound.

**Group sizes in one program** (as for ``Bandit`` and ``Product``): a step draws
``max_group_size`` uniforms and counts the first ``N = group_size`` (counter-based uniforms: the
counted draws are those of an unpadded group of ``N``, whatever the bound), and calls the
advantage function on the group's reward vector padded to ``(1, max_group_size)`` with a mask.
The padding costs ``O(max_group_size log A)`` per step, so the sweep engine buckets group sizes
(:mod:`simplexlab.sweep`). Results equal those of the unpadded group up to the rounding order of
the masked group statistics (bit for bit for ±1 rewards and power-of-two ``N``; NOTES.md).

**The options the paper leaves open** : App. J says "gradient ascent on
``L = (1/N) Σ_j r̃_j p_j``" with ``η = 10⁻²`` but names neither the optimizer nor whether ``p_j`` is
a probability or a likelihood; all four choices are exposed:

- ``surrogate="probability"``: ``L = s Σ_j Â_j π(a_j)`` (App. J read literally; F-GRPO eq. 7);
  ``surrogate="log_likelihood"``: ``L = s Σ_j Â_j log π(a_j)`` (REINFORCE / TS Lemma 1);
- ``reduction="mean"``: ``s = 1/N``; ``reduction="sum"``: ``s = 1``;
- ``optimizer``: any ``eta -> optax.GradientTransformation`` (default ``optax.sgd``; ``eta``
  is the optimizer's rate, with SGD the step size η of App. J).

**Count form.** With counts ``c_i`` (``Σ c_i = N``) and per-action advantage ``α_i`` (every
rollout of one action has the same reward, hence, for the group-relative methods, the same
advantage), ``w_i = s g c_i α_i`` (``g`` the focal weight) and ``π = softmax(z)``:

- probability-linear: ``∇_z L = w ⊙ π − π (w · π)``;
- log-likelihood:     ``∇_z L = w − π Σ_i w_i``.

Both are O(A); :func:`count_gradient` implements them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from .._checks import (
    check,
    check_finite,
    check_number,
    check_parameter,
    check_real,
    host_memory_bytes,
    is_concrete,
    is_int,
    xp,
)
from ..shaping import mean_shifted_advantages, raw_advantages
from ..theory import focal_weight
from ._policy import (
    OPTIMIZERS,
    REDUCTIONS,
    SURROGATES,
    default_float,
    gradient_from_probs,
    optimizer_init,
    optimizer_update,
)
from ._sampler import METHODS as SAMPLERS
from ._sampler import sample_counts

__all__ = [
    "OPTIMIZERS",
    "CategoricalConfig",
    "CategoricalPolicy",
    "action_advantages",
    "check_group_size",
    "count_gradient",
    "count_weights",
    "sample_counts",
]


def _check_finite_scalar(value, name: str):
    check_real(value, name)
    if is_concrete(value) and not np.all(np.isfinite(np.asarray(value, dtype=float))):
        raise ValueError(f"{name} must be finite; got {value!r}")


def _bad_group_size(g, bound):
    return ~(xp.isfinite(g) & (g >= 1) & (g == xp.round(g)) & (g <= bound))


def check_group_size(g, bound: int):
    """A concrete ``group_size`` that is not a whole number in ``[1, bound]`` raises
    ``ValueError`` naming it (a traced one is checked at run time, :func:`init`)."""
    check_number(g, "group_size")
    if is_concrete(g):
        try:
            a = np.asarray(g, dtype=float)
        except (TypeError, ValueError):
            a = np.asarray(np.nan)
        if isinstance(g, bool | np.bool_) or np.any(_bad_group_size(a, bound)):
            raise ValueError(f"group_size must be a whole number in [1, max_group_size = "
                             f"{bound}] (the draws are padded to max_group_size, a static "
                             f"setting: raise it for larger groups); got {g!r}")


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


class CategoricalPolicy(eqx.Module):
    r"""The policy and reward layout of F-GRPO App. J (defaults) / BroRL.

    Actions ``0 .. num_correct-1`` are correct (reward ``r_correct``), action 0 being the anchor;
    the others are incorrect (reward ``r_wrong``). Initial logits: ``anchor_logit`` for action 0,
    ``correct_logit`` for the other correct actions, ``incorrect_logit`` for the incorrect ones.
    The defaults give ``Q_pos ≈ 0.63``, ``p_anchor ≈ 4.7e-4``, leaf ``≈ 6.3e-5`` (App. J).
    """

    num_actions: int = eqx.field(default=128_000, kw_only=True, static=True)
    num_correct: int = eqx.field(default=10_000, kw_only=True, static=True)
    anchor_logit: float = eqx.field(default=5.0, kw_only=True)
    correct_logit: float = eqx.field(default=3.0, kw_only=True)
    incorrect_logit: float = eqx.field(default=0.0, kw_only=True)
    r_correct: float = eqx.field(default=1.0, kw_only=True)
    r_wrong: float = eqx.field(default=-1.0, kw_only=True)

    def __check_init__(self):
        if not is_int(self.num_actions) or self.num_actions < 2:
            raise ValueError(f"num_actions A must be an integer >= 2; got {self.num_actions!r}")
        if not is_int(self.num_correct) or self.num_correct < 1:
            raise ValueError(
                f"num_correct must be an integer >= 1 (the policy needs at least one correct "
                f"action); got {self.num_correct!r}")
        if self.num_correct > self.num_actions:
            raise ValueError(f"num_correct = {self.num_correct} exceeds num_actions = "
                             f"{self.num_actions}")
        for name in ("anchor_logit", "correct_logit", "incorrect_logit", "r_correct", "r_wrong"):
            _check_finite_scalar(getattr(self, name), name)
        if (is_concrete(self.r_correct) and is_concrete(self.r_wrong)
                and np.any(np.asarray(self.r_correct) <= np.asarray(self.r_wrong))):
            raise ValueError(f"r_correct must be > r_wrong (a correct action earns more); got "
                             f"r_correct={self.r_correct!r}, r_wrong={self.r_wrong!r}")

    def correct_mask(self):
        """Boolean ``(A,)`` mask of the correct set $\\mathcal A_+$."""
        return jnp.arange(self.num_actions) < self.num_correct

    def initial_logits(self, dtype=None):
        """Initial logits ``(A,)``: anchor / other correct / incorrect (F-GRPO App. J), of the
        floating ``dtype`` (default: JAX's default float)."""
        dt = default_float() if dtype is None else jnp.dtype(dtype)
        idx = jnp.arange(self.num_actions)
        z = jnp.where(idx < self.num_correct, jnp.asarray(self.correct_logit, dt),
                      jnp.asarray(self.incorrect_logit, dt))
        return z.at[0].set(jnp.asarray(self.anchor_logit, dt))


class CategoricalConfig(eqx.Module):
    r"""One simulator configuration.

    - ``policy``: :class:`CategoricalPolicy`.
    - ``group_size``: ``N >= 1``, a whole number ``<= max_group_size`` (an array field: it
      vmaps; module docstring; default 8, or ``max_group_size`` when that is given);
      ``max_group_size``: the static bound the draws and the group's reward vector are padded
      to (default: ``group_size``, which must then be a Python integer).
    - ``sampler``: the method of the multinomial sampler (static; ``"auto"``: the block tree on
      a CPU, its parallel form on an accelerator; ``"tree"``, ``"parallel"``:
      :func:`sample_counts`).
    - ``advantage``: a group-level function of :mod:`simplexlab.shaping` mapping rewards
      ``(groups, G)`` to advantages (``mean_shifted_advantages`` as in App. J, ``grpo_advantages``,
      ``rloo_advantages``, ``dr_grpo_advantages``, a ``Pipeline`` with ``IAC`` / ``NegativeOnly``
      transforms, ...). It must be permutation-equivariant and depend only on the group's rewards
      (see :func:`action_advantages`). ``N = 1`` requires ``raw_advantages``.
    - ``focal_gamma``: F-GRPO focal weight ``g = (1 − μ̂_pos)^γ`` (eq. 15–16) scaling the objective
      as in App. J; ``μ̂_pos = k/N``. An array field, so it vmaps (``0`` = no focal weighting).
    - ``surrogate``: ``"probability"`` or ``"log_likelihood"``; ``reduction``: ``"mean"`` or
      ``"sum"`` over the group (module docstring).
    - ``optimizer``: ``eta -> optax.GradientTransformation`` (static), e.g.
      ``optax.sgd``, ``optax.adam``; ``eta``: the optimizer's rate (η of App. J), finite, > 0
      (an array field, vmaps).
    - ``dtype``: floating dtype of the logits, optimizer state, sampler and metrics (static):
      ``None`` (default: JAX's default float, float64 with x64 enabled, the setting for
      quantitative runs), ``jnp.float32`` or ``jnp.float64``. float32 is faster on CPU
      (``benchmarks/bench_categorical.py --dtype float32`` measures by how much: 1.6x over
      the Fig. 4 sweep, 41.5 vs 67.1 s, with the same regimes), at a cost in accuracy: the
      sampler's prefix sums round at ~6e-8 of a block total (each action's probability is exact
      up to that relative rounding of the sums it lies in, ~1e-3 relative for an App. J leaf of
      mass 6.3e-5 in the worst case, against ~1e-12 in float64), logits updates lose digits
      below ~1e-7 of the logit, and the metrics (sums over 10^4-10^5 actions) carry ~1e-6
      relative error. The law of the draws stays multinomial; only the probabilities it uses are
      rounded.
    """

    policy: CategoricalPolicy = eqx.field(default_factory=CategoricalPolicy, kw_only=True)
    group_size: Any = eqx.field(default=8, kw_only=True)
    max_group_size: int | None = eqx.field(default=None, kw_only=True, static=True)
    sampler: str = eqx.field(default="auto", kw_only=True, static=True)
    advantage: Callable = eqx.field(default=mean_shifted_advantages, kw_only=True, static=True)
    focal_gamma: float = eqx.field(default=0.0, kw_only=True)
    surrogate: str = eqx.field(default="probability", kw_only=True, static=True)
    reduction: str = eqx.field(default="mean", kw_only=True, static=True)
    optimizer: Callable[[Any], optax.GradientTransformation] = eqx.field(
        default=optax.sgd, kw_only=True, static=True)
    eta: float = eqx.field(default=1e-2, kw_only=True)
    dtype: Any = eqx.field(default=None, kw_only=True, static=True)

    def __init__(self, *, policy=None, group_size=None, advantage=mean_shifted_advantages,
                 focal_gamma=0.0, surrogate="probability", reduction="mean", optimizer=optax.sgd,
                 eta=1e-2, dtype=None, max_group_size=None, sampler="auto"):
        self.policy = CategoricalPolicy() if policy is None else policy
        if group_size is None:  # the default: 8, or the bound when one is given
            group_size = 8 if max_group_size is None else max_group_size
        self.group_size = group_size
        if (max_group_size is None and is_int(group_size) and not isinstance(group_size, bool)
                and group_size >= 1):
            max_group_size = int(group_size)
        self.max_group_size = max_group_size
        self.sampler = sampler
        self.advantage = advantage
        self.focal_gamma = focal_gamma
        self.surrogate = surrogate
        self.reduction = reduction
        self.optimizer = optimizer
        self.eta = eta
        self.dtype = dtype

    def __check_init__(self):
        if not isinstance(self.policy, CategoricalPolicy):
            raise ValueError(f"policy must be a CategoricalPolicy; got {self.policy!r}")
        if self.max_group_size is None:
            raise ValueError(f"group_size must be an integer >= 1 (without max_group_size it "
                             f"sets the padding bound); got {self.group_size!r}")
        if not is_int(self.max_group_size) or self.max_group_size < 1:
            raise ValueError(f"max_group_size must be an integer >= 1; got "
                             f"{self.max_group_size!r}")
        check_group_size(self.group_size, self.max_group_size)
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {SAMPLERS}; got {self.sampler!r}")
        if self.dtype is not None:
            try:
                ok = jnp.dtype(self.dtype) in (jnp.dtype(jnp.float32), jnp.dtype(jnp.float64))
            except TypeError:
                ok = False
            if not ok:
                raise ValueError(f"dtype must be None, float32 or float64; got {self.dtype!r}")
        if self.surrogate not in SURROGATES:
            raise ValueError(f"surrogate must be one of {SURROGATES}; got {self.surrogate!r}")
        if self.reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}; got {self.reduction!r}")
        if not callable(self.advantage):
            raise ValueError(f"advantage must be callable; got {self.advantage!r}")
        if not callable(self.optimizer):
            raise ValueError(f"optimizer must be a callable eta -> "
                             f"optax.GradientTransformation; got {self.optimizer!r}")
        if (self.advantage is not raw_advantages and is_concrete(self.group_size)
                and np.any(np.asarray(self.group_size) == 1)):
            raise ValueError(
                "group_size = 1 admits no group-relative advantage; use "
                f"advantage=raw_advantages (got {self.advantage!r})")
        check_parameter(self.eta, "eta", lower=0.0, strict=True)
        check_parameter(self.focal_gamma, "focal_gamma", lower=0.0)
        self._check_fits()

    def working_bytes(self) -> int:
        """An upper estimate of one run's working memory (bytes): about a dozen ``(A,)`` arrays
        live at once (logits, Adam's two moments, initial probabilities, weights, the sampler's
        tree, gradient) plus the ``(max_group_size,)`` draws. The sweep engine sizes its chunks
        with it; :meth:`__check_init__` refuses a configuration whose run cannot fit at all."""
        item = self.float_dtype().itemsize
        return 16 * self.policy.num_actions * item + 24 * self.max_group_size

    def _check_fits(self) -> None:
        """``ValueError`` (naming ``num_actions``, ``max_group_size`` and the estimate) when one
        run's arrays (:meth:`working_bytes`) exceed this machine's physical memory: such a run
        would end the process inside XLA's allocator instead of raising."""
        memory = host_memory_bytes()
        need = self.working_bytes()
        if memory is not None and need > memory:
            raise ValueError(
                f"categorical: num_actions = {self.policy.num_actions:,} and max_group_size = "
                f"{self.max_group_size:,} need about {need:,} bytes per run, more than this "
                f"machine's memory ({memory:,} bytes); lower num_actions")

    def padded(self) -> bool:
        """Whether the group is padded: ``group_size`` is traced or smaller than the bound (a
        concrete ``group_size == max_group_size`` runs the unpadded program)."""
        g = self.group_size
        return not (is_int(g) and not isinstance(g, bool) and g == self.max_group_size)

    def float_dtype(self):
        """The simulator's floating dtype: ``dtype`` or, if ``None``, JAX's default float."""
        return default_float() if self.dtype is None else jnp.dtype(self.dtype)

    def make_optimizer(self) -> optax.GradientTransformation:
        # a run-time check too: under jit/vmap the learning rate may be traced (sweeps)
        return self.optimizer(check_parameter(self.eta, "eta", lower=0.0, strict=True))

    def optimizer_init(self, params):
        """``make_optimizer().init(params)`` (:func:`simplexlab.sim._policy.optimizer_init`)."""
        return optimizer_init(self.make_optimizer(), params)

    def optimizer_update(self, updates, opt_state, params):
        """``make_optimizer().update(...)`` under standard dtype promotion, updates cast to the
        dtype of ``params`` (:func:`simplexlab.sim._policy.optimizer_update`)."""
        return optimizer_update(self.make_optimizer(), updates, opt_state, params)


# --------------------------------------------------------------------------------------------
# Advantages and the count-form gradient
# --------------------------------------------------------------------------------------------


def action_advantages(config: CategoricalConfig, num_correct_drawn):
    r"""Advantages ``(α_correct, α_wrong)`` of a correct and an incorrect rollout in a group of
    ``N`` rollouts of which ``k = num_correct_drawn`` are correct, and the focal weight ``g``.

    The shaping function is called on the group's actual reward vector (in sorted order:
    ``k`` copies of ``R_c`` then ``N − k`` of ``R_w``, shape ``(1, N)``), so no formula is
    re-derived: for a permutation-equivariant function of the rewards alone (every baseline of
    :mod:`simplexlab.shaping` and the IAC / negative-only / focal transforms) the advantage of
    rollout ``j`` depends only on its reward and the group, and entry 0 / entry ``N − 1`` are the
    advantages of every correct / incorrect rollout. Costs O(N). Methods that need more than
    rewards (G²RPO cluster ids, ProGRPO confidences, GRPO-TN token trees) are not functions of
    ``(reward, group)`` and cannot be used here. The entry for a reward absent from the group
    (``k = 0`` or ``k = N``) is meaningless and is multiplied by a zero count downstream.

    ``g = focal_weight(k/N, focal_gamma)`` (F-GRPO eq. 15). ``num_correct_drawn``: an integer
    ``0 <= k <= N`` (a ``ValueError`` eagerly, a run-time error under ``jit``).
    """
    _check_config(config)
    check_number(num_correct_drawn, "num_correct_drawn k")
    k = jnp.asarray(num_correct_drawn)
    if not jnp.issubdtype(k.dtype, jnp.integer):
        k = check(k, lambda a: ~xp.isfinite(a) | (a != xp.round(a)),
                  "num_correct_drawn k must be an integer")
        k = jnp.asarray(k).astype(jnp.int32)
    n = config.group_size
    k = check(k, lambda a: (a < 0) | (a > n),
              "num_correct_drawn k must lie in [0, group_size"
              + (f" = {n}]" if is_concrete(n) else "]"))
    return _action_advantages(config, k)


def _check_config(config):
    if not isinstance(config, CategoricalConfig):
        raise ValueError(f"config must be a CategoricalConfig; got {config!r}")


def _action_advantages(config: CategoricalConfig, num_correct_drawn):
    pol = config.policy
    bound = config.max_group_size
    dt = config.float_dtype()
    k = jnp.asarray(num_correct_drawn)
    rc = jnp.asarray(pol.r_correct, dt)
    rw = jnp.asarray(pol.r_wrong, dt)
    if config.advantage is raw_advantages or bound == 1:  # raw_advantages (the only rule for
        # N = 1, checked in the config) is elementwise: a two-entry representative group
        # evaluates it exactly, for every N.
        adv = config.advantage(jnp.stack([rc, rw])[None])
        a_c, a_w = adv[0, 0], adv[0, 1]
        n = jnp.asarray(config.group_size)
    elif not config.padded():
        n = bound
        rewards = jnp.where(jnp.arange(n, dtype=k.dtype) < k, rc, rw)[None]
        adv = config.advantage(rewards)
        a_c, a_w = adv[0, 0], adv[0, n - 1]
    else:  # the group padded to the bound, with its mask (module docstring)
        n = jnp.asarray(config.group_size).astype(k.dtype)
        slot = jnp.arange(bound, dtype=k.dtype)
        rewards = jnp.where(slot < k, rc, rw)[None]
        adv = config.advantage(rewards, (slot < n)[None])
        a_c = adv[0, 0]
        a_w = adv[0].at[n - 1].get(mode="promise_in_bounds")
    mu = k.astype(dt) / jnp.asarray(n, dt)
    g = focal_weight(mu, jnp.asarray(config.focal_gamma, dt))
    return a_c, a_w, g


def count_gradient(logits, weights, surrogate: str):
    r"""Gradient w.r.t. the logits ``z`` of the count-form surrogate, O(A).

    ``weights`` ``w_i`` = (reduction scale) × (focal weight) × ``c_i α_i``, i.e. the surrogate is
    ``Σ_i w_i f(π_i)``, equal to ``s g Σ_j Â_j f(π(a_j))`` over the ``N`` rollouts:

    - ``"probability"`` (``f = π``): ``∇ = w ⊙ π − π (w · π)`` (at 0/1 counts with raw rewards
      and ``s = 1/N`` this is F-GRPO eq. 7 divided by ``η``);
    - ``"log_likelihood"`` (``f = log π``): ``∇ = w − π Σ w`` (TS Lemma 1 summed over rollouts).
    """
    if surrogate not in SURROGATES:
        raise ValueError(f"surrogate must be one of {SURROGATES}; got {surrogate!r}")
    check_number(logits, "logits")
    check_number(weights, "weights")
    if np.shape(weights) != np.shape(logits):
        raise ValueError(f"logits {np.shape(logits)} and weights {np.shape(weights)} must have "
                         "the same shape")
    if np.ndim(logits) < 1:
        raise ValueError(f"logits must have shape (A,); got a scalar {logits!r}")
    logits = check(logits, lambda a: xp.isnan(a) | (a == xp.inf),
                   "logits must not be NaN or +inf")
    logits = check(logits, lambda a: xp.all(a == -xp.inf, axis=-1),
                   "logits: at least one action needs a finite logit (all are −inf)")
    weights = check_finite(weights, "weights")
    return gradient_from_probs(jax.nn.softmax(jnp.asarray(logits)), jnp.asarray(weights),
                                      surrogate)


def count_weights(config: CategoricalConfig, counts):
    r"""Per-action weights ``w_i = s g c_i α_i`` of the count-form surrogate and the number ``k``
    of correct rollouts, from the counts ``c`` of one group (see :func:`count_gradient`).
    ``counts``: integers ``>= 0`` of shape ``(A,)`` summing to ``N = group_size``."""
    _check_config(config)
    check_number(counts, "counts")
    counts = jnp.asarray(counts)
    A, N = config.policy.num_actions, config.group_size
    check_group_size(N, config.max_group_size)
    if counts.shape != (A,):
        raise ValueError(f"counts must have shape (num_actions,) = ({A},); got {counts.shape}")
    if not jnp.issubdtype(counts.dtype, jnp.integer):
        raise ValueError(f"counts must be integers (draws per action); got dtype {counts.dtype}")
    counts = check(counts, lambda a: a < 0, "counts must be >= 0")
    counts = check(counts, lambda a: xp.sum(a) != N,
                   "counts must sum to group_size" + (f" = {N}" if is_concrete(N) else ""),
                   show=False)
    w, k, _ = _count_weights_and_sum(config, counts)
    return w, k


def _count_weights_and_sum(config: CategoricalConfig, counts):
    """:func:`count_weights` and ``Σ_i w_i = s g (k α_c + (N − k) α_w)``, from scalars (every
    rollout of a correct action has advantage ``α_c``, every other ``α_w``; ``Σ c = N``)."""
    dt = config.float_dtype()
    correct = config.policy.correct_mask()
    k = jnp.sum(counts[..., : config.policy.num_correct], axis=-1)  # the correct set is a prefix
    a_c, a_w, g = _action_advantages(config, k)
    if config.padded():
        n = jnp.asarray(config.group_size).astype(dt)
        sg = (1.0 / n if config.reduction == "mean" else jnp.ones((), dt)) * g
    else:
        n = config.group_size
        sg = jnp.asarray(1.0 / n if config.reduction == "mean" else 1.0, dt) * g
    alpha = jnp.where(correct, a_c, a_w)
    kf = k.astype(dt)
    return sg * counts.astype(dt) * alpha, k, sg * (kf * a_c + (n - kf) * a_w)
