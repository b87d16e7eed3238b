r"""Categorical softmax policy simulator (SPEC C4; F-GRPO §5.1, Fig. 4, App. J; BroRL setup).

A softmax policy over ``A`` actions, the first ``K`` of which are correct (reward ``R_c``), the
rest incorrect (reward ``R_w``). Action 0 is the *anchor* (F-GRPO App. J: logits 5.0 for the
anchor, 3.0 for the other correct actions, 0.0 for incorrect ones; ``A = 128,000``,
``K = 10,000``). Each step draws ``N`` i.i.d. actions, forms group-relative advantages with any
function of :mod:`simplexlab.shaping`, takes the gradient of the chosen surrogate in *count form*
(O(A)) and applies an ``optax`` optimizer.

Pure ``(init, step)`` pair over a :class:`SimState` pytree (jax-md style); :func:`run` scans
``step`` with :func:`jax.lax.scan` and records :class:`Metrics` every ``stride`` steps. Everything
jits and vmaps over seeds and over the array fields of :class:`CategoricalConfig`
(``learning_rate``, ``focal_gamma``, the policy logits and rewards). ``group_size``, the surrogate,
reduction, advantage function and optimizer are static: one compilation per group size ``N``.

**The options the paper leaves open** (SPEC C4 "Known ambiguity"): App. J says "gradient ascent on
``L = (1/N) Σ_j r̃_j p_j``" with ``η = 10⁻²`` but names neither the optimizer nor whether ``p_j`` is
a probability or a likelihood; all four choices are exposed:

- ``surrogate="probability"``: ``L = s Σ_j Â_j π(a_j)`` (App. J read literally; F-GRPO eq. 7);
  ``surrogate="log_likelihood"``: ``L = s Σ_j Â_j log π(a_j)`` (REINFORCE / TS Lemma 1);
- ``reduction="mean"``: ``s = 1/N``; ``reduction="sum"``: ``s = 1``;
- ``optimizer``: any ``learning_rate -> optax.GradientTransformation`` (default ``optax.sgd``).

**Count form.** With counts ``c_i`` (``Σ c_i = N``) and per-action advantage ``α_i`` (every
rollout of one action has the same reward, hence, for the group-relative methods, the same
advantage), ``w_i = s g c_i α_i`` (``g`` the focal weight) and ``π = softmax(z)``:

- probability-linear: ``∇_z L = w ⊙ π − π (w · π)``;
- log-likelihood:     ``∇_z L = w − π Σ_i w_i``.

Both are O(A); :func:`count_gradient` implements them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from ._advantages import mean_shifted_advantages, raw_advantages
from ._checks import check_finite, check_parameter, is_concrete
from ._focal import focal_weight

__all__ = [
    "FIG4_CONFIG",
    "OPTIMIZERS",
    "CategoricalConfig",
    "CategoricalPolicy",
    "Metrics",
    "SimState",
    "action_advantages",
    "count_gradient",
    "count_weights",
    "init",
    "metrics",
    "run",
    "run_many",
    "sample_counts",
    "step",
]

SURROGATES = ("probability", "log_likelihood")

#: Optimizers compared by the ``categorical-search`` experiment (name -> ``lr -> optax``).
OPTIMIZERS = {"sgd": optax.sgd, "adam": optax.adam}

#: The configuration that reproduces F-GRPO Fig. 4's three group-size regimes (found by the
#: ``categorical-search`` experiment; App. J does not name optimizer or surrogate, and its literal
#: reading -- SGD on the probability-linear surrogate -- leaves the policy unchanged).
FIG4_CONFIG = {"surrogate": "log_likelihood", "reduction": "mean", "optimizer": "adam",
               "learning_rate": 1e-2}
REDUCTIONS = ("mean", "sum")


def _float_dtype():
    return jnp.result_type(float)


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _check_finite_scalar(value, name: str):
    if is_concrete(value) and not np.all(np.isfinite(np.asarray(value, dtype=float))):
        raise ValueError(f"{name} must be finite; got {value!r}")


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
        if not _is_int(self.num_actions) or self.num_actions < 2:
            raise ValueError(f"num_actions A must be an integer >= 2; got {self.num_actions!r}")
        if not _is_int(self.num_correct) or self.num_correct < 1:
            raise ValueError(
                f"num_correct must be an integer >= 1 (the policy needs at least one correct "
                f"action); got {self.num_correct!r}")
        if self.num_correct > self.num_actions:
            raise ValueError(f"num_correct = {self.num_correct} exceeds num_actions = "
                             f"{self.num_actions}")
        for name in ("anchor_logit", "correct_logit", "incorrect_logit", "r_correct", "r_wrong"):
            _check_finite_scalar(getattr(self, name), name)

    def correct_mask(self):
        """Boolean ``(A,)`` mask of the correct set :math:`\\mathcal A_+`."""
        return jnp.arange(self.num_actions) < self.num_correct

    def initial_logits(self, dtype=None):
        """Initial logits ``(A,)``: anchor / other correct / incorrect (F-GRPO App. J), of the
        floating ``dtype`` (default: JAX's default float)."""
        dt = _float_dtype() if dtype is None else jnp.dtype(dtype)
        idx = jnp.arange(self.num_actions)
        z = jnp.where(idx < self.num_correct, jnp.asarray(self.correct_logit, dt),
                      jnp.asarray(self.incorrect_logit, dt))
        return z.at[0].set(jnp.asarray(self.anchor_logit, dt))


class CategoricalConfig(eqx.Module):
    r"""One simulator configuration.

    - ``policy``: :class:`CategoricalPolicy`.
    - ``group_size``: ``N >= 1`` (static; one compilation per ``N``).
    - ``advantage``: a group-level function of :mod:`simplexlab.shaping` mapping rewards
      ``(groups, G)`` to advantages (``mean_shifted_advantages`` as in App. J, ``grpo_advantages``,
      ``rloo_advantages``, ``dr_grpo_advantages``, a ``Pipeline`` with ``IAC`` / ``NegativeOnly``
      transforms, ...). It must be permutation-equivariant and depend only on the group's rewards
      (see :func:`action_advantages`). ``N = 1`` requires ``raw_advantages``.
    - ``focal_gamma``: F-GRPO focal weight ``g = (1 − μ̂_pos)^γ`` (eq. 15–16) scaling the objective
      as in App. J; ``μ̂_pos = k/N``. An array field, so it vmaps (``0`` = no focal weighting).
    - ``surrogate``: ``"probability"`` or ``"log_likelihood"``; ``reduction``: ``"mean"`` or
      ``"sum"`` over the group (module docstring).
    - ``optimizer``: ``learning_rate -> optax.GradientTransformation`` (static), e.g.
      ``optax.sgd``, ``optax.adam``; ``learning_rate``: finite, > 0 (an array field, vmaps).
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
    group_size: int = eqx.field(default=8, kw_only=True, static=True)
    advantage: Callable = eqx.field(default=mean_shifted_advantages, kw_only=True, static=True)
    focal_gamma: float = eqx.field(default=0.0, kw_only=True)
    surrogate: str = eqx.field(default="probability", kw_only=True, static=True)
    reduction: str = eqx.field(default="mean", kw_only=True, static=True)
    optimizer: Callable[[Any], optax.GradientTransformation] = eqx.field(
        default=optax.sgd, kw_only=True, static=True)
    learning_rate: float = eqx.field(default=1e-2, kw_only=True)
    dtype: Any = eqx.field(default=None, kw_only=True, static=True)

    def __check_init__(self):
        if not isinstance(self.policy, CategoricalPolicy):
            raise ValueError(f"policy must be a CategoricalPolicy; got {self.policy!r}")
        if not _is_int(self.group_size) or self.group_size < 1:
            raise ValueError(f"group_size N must be an integer >= 1; got {self.group_size!r}")
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
            raise ValueError(f"optimizer must be a callable learning_rate -> "
                             f"optax.GradientTransformation; got {self.optimizer!r}")
        if self.group_size == 1 and self.advantage is not raw_advantages:
            raise ValueError(
                "group_size N = 1 admits no group-relative advantage; use "
                f"advantage=raw_advantages (got {self.advantage!r})")
        check_parameter(self.learning_rate, "learning_rate", lower=0.0, strict=True)
        check_parameter(self.focal_gamma, "focal_gamma", lower=0.0)

    def float_dtype(self):
        """The simulator's floating dtype: ``dtype`` or, if ``None``, JAX's default float."""
        return _float_dtype() if self.dtype is None else jnp.dtype(self.dtype)

    def make_optimizer(self) -> optax.GradientTransformation:
        return self.optimizer(check_finite(self.learning_rate, "learning_rate"))

    def optimizer_init(self, params):
        """``make_optimizer().init(params)`` (see :meth:`optimizer_update` on dtype promotion)."""
        with jax.numpy_dtype_promotion("standard"):
            return self.make_optimizer().init(params)

    def optimizer_update(self, updates, opt_state, params):
        """``make_optimizer().update(...)`` under *standard* dtype promotion.

        optax transforms mix Python scalars and int32 step counters with float arrays (e.g.
        ``optax.adam``'s bias correction ``1 − β^t``), which fails under
        ``jax_numpy_dtype_promotion="strict"`` (the test suite's setting). The optimizer is
        third-party code, so it runs under the standard rules; the simulator's own numerics stay
        strict. The returned updates are cast to the dtype of ``params``.
        """
        with jax.numpy_dtype_promotion("standard"):
            upd, state = self.make_optimizer().update(updates, opt_state, params)
        upd = jax.tree_util.tree_map(lambda u, p: jnp.asarray(u, p.dtype), upd, params)
        return upd, state


# --------------------------------------------------------------------------------------------
# Sampler
# --------------------------------------------------------------------------------------------


def sample_counts(key, logits, n: int):
    r"""Counts ``c`` of ``n`` i.i.d. draws from ``softmax(logits)`` (last axis of length ``A``):
    ``c ~ Multinomial(n, softmax(logits))`` exactly, in O(A + n log A) work.

    Inverse CDF on a block tree (no global ``cumsum``): the unnormalized weights
    ``e = exp(z − max z)`` are split into 64 strided blocks, blocks of blocks, ...; every level
    keeps *sequential* prefix sums within each block (nondecreasing, exactly flat over zero-mass
    entries). A draw takes one uniform ``u ∈ [0, Σe)``, picks a block at the top level by inverse
    CDF, then an entry within it with the residual ``u``, and so on down (⌈log₆₄ A⌉ levels of 6
    branch-free binary-search steps, O(n log A); O(A) to build the tree); the probability of
    action ``i`` is the product of its within-block conditionals, i.e. ``π_i`` up to the
    rounding of the prefix sums, and zero-probability actions are never drawn. A scatter-add
    (``bincount``, O(n + A)) gives the counts. Inverse CDF is chosen over binomial splitting
    because it is exact for any ``n`` with no sequential chain of ``A`` binomial draws.

    The ``n`` uniforms come from a counter-based hash (SplitMix64's finalizer in float64,
    53 bits per uniform; a 32-bit two-round hash in float32) keyed by bits drawn from ``key``
    with :func:`jax.random.bits`: ~20x cheaper on CPU than ``n`` threefry uniforms, and
    deterministic given ``key``. Draws are independent given ``key``; ``n`` is static.
    Precision: an action's effective probability is ``π_i`` up to the rounding of the prefix
    sums (≈ ulp(1)/π_i relative: ~1e-3 for the App. J leaf ``6.3e-5`` in float32, ~1e-12 in
    float64); enable x64 for quantitative runs. ``method="cdf"`` of the private
    ``_counts_from_weights`` is a plain global ``cumsum`` + ``searchsorted`` reference.
    """
    if not _is_int(n) or n < 1:
        raise ValueError(f"number of draws n must be an integer >= 1; got {n!r}")
    logits = jnp.asarray(logits)
    if logits.ndim != 1 or logits.shape[0] < 1:
        raise ValueError(f"logits must have shape (A,); got {logits.shape}")
    return _counts_from_weights(key, _unnormalized(logits), n)


def _unnormalized(z):
    """Unnormalized softmax weights ``exp(z − max z)`` (one definition shared by
    :func:`sample_counts` and :func:`step`, so both draw the same counts from the same key)."""
    return jnp.exp(z - jax.lax.stop_gradient(jnp.max(z)))


_BLOCK = 64  # fan-out of the block tree of the sampler (6 branch-free search steps per level)
_LOG2_BLOCK = 6
_MIX64 = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)  # SplitMix64 constants


def _mix32(x):
    """A 32-bit integer hash (two xor-shift-multiply rounds, "lowbias32")."""
    x = (x ^ (x >> 16)) * jnp.uint32(0x7FEB352D)
    x = (x ^ (x >> 15)) * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def _uniforms(key, n: int, dtype):
    """``n`` uniforms on ``[0, 1)`` of ``dtype`` from a counter-based hash keyed by ``key``.

    float64: ``x_i = seed + i·φ`` (φ the 64-bit golden ratio, SplitMix64's increment) through
    SplitMix64's finalizer, top 53 bits; float32: a 32-bit counter through two rounds of
    :func:`_mix32` keyed by two 32-bit words, top 24 bits. The seed words come from
    ``jax.random.bits(key)``, so distinct keys give independent-looking streams."""
    dt = jnp.dtype(dtype)
    if dt == jnp.dtype(jnp.float64):
        g, m1, m2 = (jnp.uint64(c) for c in _MIX64)
        x = jax.random.bits(key, (), jnp.uint64) + jnp.arange(1, n + 1, dtype=jnp.uint64) * g
        x = (x ^ (x >> 30)) * m1
        x = (x ^ (x >> 27)) * m2
        x = x ^ (x >> 31)
        return (x >> 11).astype(dt) * jnp.asarray(2.0 ** -53, dt)
    seed = jax.random.bits(key, (2,), jnp.uint32)
    x = _mix32(_mix32(jnp.arange(n, dtype=jnp.uint32) + seed[0]) ^ seed[1])
    return (x >> 8).astype(dt) * jnp.asarray(2.0 ** -24, dt)


def _uniforms_below(key, n: int, total):
    """``n`` uniforms on ``[0, total)``: :func:`_uniforms` scaled by ``total`` and clamped below
    it (the product can round up to ``total``)."""
    return jnp.minimum(_uniforms(key, n, total.dtype) * total,
                       jnp.nextafter(total, jnp.zeros((), total.dtype)))


def _seq_prefix(x):
    """Prefix sums of ``x`` ``(C, R)`` along axis 0, *sequential* in each column
    (``out[c] = fl(out[c-1] + x[c])``): nondecreasing for ``x >= 0`` and exactly flat over zero
    entries, so a zero-probability entry never owns a non-empty interval."""
    def add(carry, row):
        carry = carry + row
        return carry, carry

    return jax.lax.scan(add, jnp.zeros_like(x[0]), x)[1]


def _block_tree(e):
    """Levels of the block tree of the weights ``e`` ``(A,)``, bottom first: level ``l`` is a
    ``(64, R)`` array of sequential prefix sums; entry ``c * R + r`` of a level's input belongs
    to block ``r`` (strided blocks keep every scan contiguous); the input of level ``l + 1`` is
    the block totals ``levels[l][-1]`` (exactly the last prefix sum). The top level has
    ``R = 1``. Inputs are zero-padded to a multiple of 64: a padded entry has zero mass and a
    prefix equal to its block's total, so it is never chosen."""
    levels = []
    x = e
    while True:
        size = x.shape[0]
        r = -(-size // _BLOCK)
        local = _seq_prefix(jnp.pad(x, (0, _BLOCK * r - size)).reshape(_BLOCK, r))
        levels.append(local)
        if r == 1:
            return levels
        x = local[-1]


def _tree_draws(key, e, n: int):
    """``n`` i.i.d. indices drawn from ``e / Σe`` by descending the block tree: one uniform
    ``u ∈ [0, total)`` per draw; at each level the entry ``c`` of the current block with
    ``prefix[c-1] <= u < prefix[c]`` is found by a branch-free binary search (``c`` = the number
    of the block's prefix sums ``<= u``; six steps over 64 entries) and ``u`` becomes the residual
    ``u − prefix[c-1]`` (clamped below the chosen entry's mass, which is exactly the next level's
    block total). Each level is inverse-CDF sampling within a block, so the draw is action ``i``
    with probability ``π_i`` up to the rounding of the prefix sums. Returns the indices and the
    total ``Σe`` (the top of the tree)."""
    levels = _block_tree(e)
    dt = e.dtype
    zero = jnp.zeros((), dt)
    total = levels[-1][-1, 0]
    u = _uniforms_below(key, n, total)
    r = jnp.zeros((n,), jnp.int32)
    for lvl in range(len(levels) - 1, -1, -1):
        flat = levels[lvl].reshape(-1)
        r_len = levels[lvl].shape[1]

        def get(c, flat=flat, r_len=r_len, r=r):
            return flat.at[c * r_len + r].get(mode="promise_in_bounds")

        def search(i, pos, get=get, u=u):  # invariant: the first `pos` prefix sums are <= u
            s = jnp.right_shift(jnp.int32(_BLOCK // 2), i)
            return jnp.where(get(pos + (s - 1)) <= u, pos + s, pos)

        # a rolled loop: XLA compiles the six dependent gathers faster than unrolled
        pos = jax.lax.fori_loop(0, _LOG2_BLOCK, search, jnp.zeros((n,), jnp.int32))
        prev = jnp.where(pos > 0, get(jnp.maximum(pos, 1) - 1), zero)
        r = pos * r_len + r
        if lvl > 0:
            mass = levels[lvl - 1][-1].at[r].get(mode="promise_in_bounds")
            u = jnp.minimum(u - prev, jnp.nextafter(mass, zero))
    return r, total


def _counts_from_weights(key, e, n: int, method: str = "tree", return_total: bool = False):
    """:func:`sample_counts` from unnormalized weights ``e >= 0`` (the simulator step computes
    them once and shares them with the gradient). ``method``: ``"tree"`` (the block tree, used
    by the simulator) or ``"cdf"`` (a global ``cumsum`` + ``searchsorted``, a slower reference
    with the same uniforms); both are exact inverse-CDF samplers. ``return_total``: also return
    ``Σe`` as the sampler summed it (the step normalizes with it: no extra pass over ``e``)."""
    a = e.shape[0]
    if method == "tree":
        idx, total = _tree_draws(key, e, n)
    elif method == "cdf":
        cdf = jnp.cumsum(e)
        total = cdf[-1]
        idx = jnp.searchsorted(cdf, _uniforms_below(key, n, total), side="right")
    else:
        raise ValueError(f"method must be 'tree' or 'cdf'; got {method!r}")
    counts = jnp.zeros((a,), jnp.int32).at[jnp.clip(idx, 0, a - 1)].add(1)
    return (counts, total) if return_total else counts


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

    ``g = focal_weight(k/N, focal_gamma)`` (F-GRPO eq. 15).
    """
    pol = config.policy
    n = config.group_size
    dt = config.float_dtype()
    k = jnp.asarray(num_correct_drawn)
    rc = jnp.asarray(pol.r_correct, dt)
    rw = jnp.asarray(pol.r_wrong, dt)
    if n == 1:  # raw_advantages only (checked in the config); it is elementwise, so a
        # two-entry representative group evaluates it exactly.
        adv = config.advantage(jnp.stack([rc, rw])[None])
        a_c, a_w = adv[0, 0], adv[0, 1]
    else:
        rewards = jnp.where(jnp.arange(n, dtype=k.dtype) < k, rc, rw)[None]
        adv = config.advantage(rewards)
        a_c, a_w = adv[0, 0], adv[0, n - 1]
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
    if np.shape(weights) != np.shape(logits):
        raise ValueError(f"logits {np.shape(logits)} and weights {np.shape(weights)} must have "
                         "the same shape")
    return _count_gradient_from_probs(jax.nn.softmax(logits), weights, surrogate)


def _count_gradient_from_probs(p, weights, surrogate: str, weights_sum=None):
    if surrogate == "probability":
        return weights * p - p * jnp.sum(weights * p)
    return weights - p * (jnp.sum(weights) if weights_sum is None else weights_sum)


def count_weights(config: CategoricalConfig, counts):
    r"""Per-action weights ``w_i = s g c_i α_i`` of the count-form surrogate and the number ``k``
    of correct rollouts, from the counts ``c`` of one group (see :func:`count_gradient`)."""
    w, k, _ = _count_weights_and_sum(config, counts)
    return w, k


def _count_weights_and_sum(config: CategoricalConfig, counts):
    """:func:`count_weights` and ``Σ_i w_i = s g (k α_c + (N − k) α_w)``, from scalars (every
    rollout of a correct action has advantage ``α_c``, every other ``α_w``; ``Σ c = N``)."""
    dt = config.float_dtype()
    correct = config.policy.correct_mask()
    k = jnp.sum(counts[..., : config.policy.num_correct], axis=-1)  # the correct set is a prefix
    a_c, a_w, g = action_advantages(config, k)
    sg = jnp.asarray(1.0 / config.group_size if config.reduction == "mean" else 1.0, dt) * g
    alpha = jnp.where(correct, a_c, a_w)
    kf = k.astype(dt)
    return sg * counts.astype(dt) * alpha, k, sg * (kf * a_c + (config.group_size - kf) * a_w)


# --------------------------------------------------------------------------------------------
# State, init, step, metrics, run
# --------------------------------------------------------------------------------------------


class SimState(NamedTuple):
    """Simulator state (a pytree)."""

    logits: jax.Array  #: current logits ``z`` ``(A,)``
    opt_state: Any  #: optax optimizer state
    key: jax.Array  #: PRNG key (split once per step: ``key, sub = split(key)``)
    step: jax.Array  #: number of steps taken
    probs0: jax.Array  #: initial policy ``π_0`` ``(A,)`` (reference of eq. 26)
    batch_correct: jax.Array  #: correct rollouts ``k`` in the last group (per-step metric)


class Metrics(NamedTuple):
    """Recorded metrics (F-GRPO App. J)."""

    step: jax.Array  #: step at which they were recorded
    q_pos: jax.Array  #: total correct mass ``Q_pos = Σ_{A+} π_t``
    m_ret: jax.Array  #: retained positive mass ``M_ret`` (F-GRPO eq. 26)
    entropy: jax.Array  #: policy entropy ``−Σ π log π`` (nats)
    anchor: jax.Array  #: anchor mass ``π_t(0)``
    num_above: jax.Array  #: number of correct actions with ``π_t(a) > π_0(a)``
    batch_correct: jax.Array  #: correct rollouts ``k`` in the last group


def init(config: CategoricalConfig, key) -> SimState:
    """Initial state: App. J logits, fresh optimizer state, the given PRNG key."""
    z = config.policy.initial_logits(config.float_dtype())
    return SimState(logits=z, opt_state=config.optimizer_init(z), key=key,
                    step=jnp.zeros((), jnp.int32), probs0=jax.nn.softmax(z),
                    batch_correct=jnp.zeros((), jnp.int32))


def step(config: CategoricalConfig, state: SimState) -> SimState:
    r"""One update: sample ``N`` actions as counts (:func:`sample_counts`), advantages from the
    shaping function (:func:`action_advantages`), ascend the count-form surrogate
    (:func:`count_gradient`) with the optax optimizer (updates from ``−∇L``)."""
    key, sub = jax.random.split(state.key)
    e = _unnormalized(state.logits)  # once per step, shared by sampler and gradient
    counts, total = _counts_from_weights(sub, e, config.group_size, return_total=True)
    p = e * (1.0 / total)
    w, k, w_sum = _count_weights_and_sum(config, counts)
    grad = _count_gradient_from_probs(p, w, config.surrogate, w_sum)
    updates, opt_state = config.optimizer_update(-grad, state.opt_state, state.logits)
    logits = optax.apply_updates(state.logits, updates)
    return SimState(logits=logits, opt_state=opt_state, key=key, step=state.step + 1,
                    probs0=state.probs0, batch_correct=k.astype(jnp.int32))


def _softmax_and_log(z):
    """``(softmax(z), log_softmax(z))``; ``p`` is exactly ``jax.nn.softmax(z)`` (as in
    :func:`init`, so that ``π_t = π_0`` bit for bit at step 0) and ``log p = d − log Σ exp d``
    with ``d = z − max z`` shares its ``exp(d)`` with the softmax (one ``exp`` pass after XLA's
    common-subexpression elimination instead of the two of ``log_softmax`` + ``softmax``)."""
    d = z - jax.lax.stop_gradient(jnp.max(z))
    return jax.nn.softmax(z), d - jnp.log(jnp.sum(jnp.exp(d)))


def metrics(config: CategoricalConfig, state: SimState) -> Metrics:
    r"""Metrics of the current policy (F-GRPO App. J): ``Q_pos``;
    ``M_ret = 1 − Σ_{A+} max(0, π_0 − π_t) / Σ_{A+} π_0`` (eq. 26); entropy; anchor mass; the
    number of correct actions above their initial probability."""
    correct = config.policy.correct_mask()
    p, logp = _softmax_and_log(state.logits)  # as in init, so that M_ret(0) = 1 exactly
    zero = jnp.zeros((), p.dtype)
    p0 = state.probs0
    lost = jnp.sum(jnp.where(correct, jnp.maximum(zero, p0 - p), zero))
    return Metrics(
        step=state.step,
        q_pos=jnp.sum(jnp.where(correct, p, zero)),
        m_ret=1.0 - lost / jnp.sum(jnp.where(correct, p0, zero)),
        entropy=-jnp.sum(p * logp),
        anchor=p[0],
        num_above=jnp.sum(correct & (p > p0), dtype=jnp.int32),
        batch_correct=state.batch_correct,
    )


def run(config: CategoricalConfig, key, num_steps: int, stride: int = 1):
    r"""Run ``num_steps`` steps with :func:`jax.lax.scan`, recording :class:`Metrics` at step 0
    and every ``stride`` steps (``num_steps // stride + 1`` records; ``num_steps`` must be a
    multiple of ``stride``). Returns ``(final_state, metrics)``. Pure: jit it with
    ``static_argnames=("num_steps", "stride")`` and vmap it over keys and config arrays."""
    for name, v in (("num_steps", num_steps), ("stride", stride)):
        if not _is_int(v) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {v!r}")
    if num_steps % stride:
        raise ValueError(f"num_steps = {num_steps} must be a multiple of stride = {stride}")
    state = init(config, key)

    def inner(s, _):
        return step(config, s), None

    def outer(s, _):
        s, _ = jax.lax.scan(inner, s, None, length=stride)
        return s, metrics(config, s)

    final, rec = jax.lax.scan(outer, state, None, length=num_steps // stride)
    first = metrics(config, state)
    rec = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b]), first, rec)
    return final, rec


BATCHINGS = ("auto", "vmap", "map")


def _run_many(config: CategoricalConfig, keys, learning_rates, focal_gammas, num_steps: int,
              stride: int, batching: str = "auto") -> Metrics:
    def one(key, lr, gamma):
        cfg = eqx.tree_at(lambda c: (c.learning_rate, c.focal_gamma), config, (lr, gamma))
        return run(cfg, key, num_steps, stride)[1]

    if batching == "auto":
        batching = "map" if jax.default_backend() == "cpu" else "vmap"
    if batching == "vmap":
        return jax.vmap(one)(keys, learning_rates, focal_gammas)
    return jax.lax.map(lambda a: one(*a), (keys, learning_rates, focal_gammas))


_run_many_jit = jax.jit(_run_many, static_argnames=("num_steps", "stride", "batching"))


def run_many(config: CategoricalConfig, keys, *, num_steps: int, stride: int = 1,
             learning_rates=None, focal_gammas=None, batching: str = "auto",
             workers: int | None = None) -> Metrics:
    r""":func:`run` vmapped over a batch of runs, compiled once per static configuration (group
    size, surrogate, reduction, advantage function, optimizer, policy shape).

    ``keys``: ``(B,)`` PRNG keys; ``learning_rates`` / ``focal_gammas``: ``(B,)`` per-run values
    (default: the config's value for every run). Returns :class:`Metrics` with leading axis ``B``
    (``num_steps // stride + 1`` records each). The final states are not returned (``B × A``
    logits), so a sweep's memory is O(B · (A + records)).

    ``batching``: ``"vmap"`` (the runs vectorized together), ``"map"`` (``lax.map``: the runs one
    after another inside the one compiled program) or ``"auto"`` (default: ``"map"`` on CPU,
    ``"vmap"`` elsewhere). On CPU the batched scans and gathers of ``vmap`` are slower than the
    same work done run by run (measured 1.4-1.7x per step at A = 128,000,
    ``benchmarks/bench_categorical.py``); on accelerators ``vmap`` fills the device. The results
    are the same up to floating-point rounding.

    ``workers``: on CPU the batch is split into ``workers`` contiguous chunks, each run by the
    same compiled program from its own thread (XLA runs one program on one core, up to a few
    fused loops split over two threads); default: ``os.cpu_count()`` on CPU (at most ``B``),
    1 elsewhere or under a trace. The results do not depend on ``workers``."""
    keys = jnp.asarray(keys)
    b = keys.shape[0]
    dt = config.float_dtype()

    def per_run(v, default, name):
        v = jnp.broadcast_to(jnp.asarray(default if v is None else v, dt), (b,))
        if is_concrete(v) and not np.all(np.isfinite(np.asarray(v))):
            raise ValueError(f"{name} must be finite; got {v!r}")
        return v

    lrs = per_run(learning_rates, config.learning_rate, "learning_rates")
    gammas = per_run(focal_gammas, config.focal_gamma, "focal_gammas")
    if is_concrete(lrs) and np.any(np.asarray(lrs) <= 0):
        raise ValueError(f"learning_rates must be > 0; got {lrs!r}")
    if is_concrete(gammas) and np.any(np.asarray(gammas) < 0):
        raise ValueError(f"focal_gammas must be >= 0; got {gammas!r}")
    for name, v in (("num_steps", num_steps), ("stride", stride)):
        if not _is_int(v) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {v!r}")
    if batching not in BATCHINGS:
        raise ValueError(f"batching must be one of {BATCHINGS}; got {batching!r}")
    if workers is None:
        workers = (os.cpu_count() or 1) if jax.default_backend() == "cpu" else 1
    if not _is_int(workers) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1; got {workers!r}")
    if not is_concrete(keys):
        workers = 1
    return _in_chunks(lambda *a: _run_many_jit(config, *a, num_steps, stride, batching),
                      (keys, lrs, gammas), workers)


def _in_chunks(call, args, workers: int):
    """``call(*args)`` with the leading (batch) axis of every array of ``args`` split into
    ``workers`` contiguous chunks, each called from its own thread; the outputs are
    concatenated along the batch axis. ``call`` is a jitted or ahead-of-time compiled function
    (the benchmark passes a compiled one)."""
    b = args[0].shape[0]
    workers = min(workers, b)
    if workers == 1:
        return call(*args)
    bounds = np.linspace(0, b, workers + 1).round().astype(int)
    chunks = [tuple(a[i:j] for a in args) for i, j in zip(bounds[:-1], bounds[1:], strict=True)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        parts = list(pool.map(lambda c: jax.block_until_ready(call(*c)), chunks))
    return jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *parts)
