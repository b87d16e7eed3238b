r"""The two-stage toy of TS §3.2 and App. C.1 (Algorithm 1): a softmax policy over a few actions.

One run is one prompt with ``A`` actions (three in TS §3.2: ``a1`` explored with ``r(a1) > 0``,
``a2`` unexplored with ``r(a2) > r(a1)``, ``a3`` explored with ``r(a3) = 0``; four in App. C.4,
Fig. 7), logits ``z`` and policy ``π = softmax(z/τ)`` (``τ = temperature``, App. C.4). One step
is TS Algorithm 1's loop body:

1. ``π ← softmax(z/τ)``; sample ``G = group_size`` actions ``a_1..a_G`` i.i.d. from ``π`` (exact
   inverse CDF on counter-hashed uniforms keyed by one draw from the run's PRNG key);
2. advantages from the rewards ``r(a_i)`` with a rule of :mod:`simplexlab.shaping`
   (``method="mean_shifted"``: Algorithm 1's ``Â_i = r(a_i) − mean_j r(a_j)``);
3. ``g = Σ_i Â_i (e_{a_i} − π)`` (Algorithm 1's double loop: TS Lemma 1 summed over the group,
   :func:`simplexlab.sim._policy.gradient_from_probs` on the count form), divided by ``τ`` (the
   chain rule of ``softmax(z/τ)``; 1 in Algorithm 1);
4. ``optimizer="plain"``: ``z ← z + η g/(Gτ)``, the update as Algorithm 1 writes it (``τ = 1``);
   any optax optimizer of ``OPTIMIZERS`` (``"sgd"``, ``"adam"``, ``"adamw"``, ``"momentum"``)
   instead ascends ``g/(Gτ)`` at rate ``η``. Algorithm 1's last line is titled "Apply Adam
   update" but writes the plain step; ``"sgd"`` equals ``"plain"`` (to rounding), ``"adam"`` is
   the title.

With mean-centred advantages ``Σ_i Â_i = 0``, so the ``−π Σ Â`` part of ``g`` cancels and only
the sampled actions' logits move: ``Δz_v = (η/(Gτ)) Σ_{i : a_i = v} Â_i``. The best action's
logit therefore never decreases and the worst's never increases, path by path (TS App. C.4
states it in expectation). The expected step is TS Theorem 1 with the advantage
``(G−1)/G (r − π·r)`` (:func:`simplexlab.theory.expected_group_advantages`,
:func:`simplexlab.theory.expected_trajectory`).

Implements the simulator protocol: :mod:`simplexlab.sweep` batches it over seeds, step sizes,
group sizes, temperatures, rewards and initial logits in one program per number of actions,
method and optimizer (the per-action values are scalar array parameters ``reward_a1``,
``logit0_a1``, ... for that reason; :meth:`TwoStage.action_params` builds them from vectors).
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import Param, is_int, trusted_inputs, xp
from ..shaping import METHODS as _RULES
from ..shaping import Groups, advantages
from ._policy import (
    OPTIMIZERS,
    gradient_from_probs,
    lookup,
    optimizer_init,
    optimizer_update,
)
from ._protocol import AbstractSimulator, WithDtype
from ._sampler import _mix32, mix32_uniforms, splitmix64_uniforms

__all__ = ["MAX_ACTIONS", "TWO_STAGE_METHODS", "TWO_STAGE_OPTIMIZERS", "TwoStage",
           "TwoStageMetrics", "TwoStageState", "logit0_name", "reward_name"]

#: Advantage rules of :mod:`simplexlab.shaping` the toy accepts (functions of one group's
#: real-valued rewards alone) and the smallest group size each is defined for.
TWO_STAGE_METHODS: dict[str, int] = {name: m.min_group_size for name, m in _RULES.items()
                                     if m.group_function is not None}

#: Optimizers: ``"plain"`` is TS Algorithm 1's ``z ← z + η g/G``; the rest are optax's.
TWO_STAGE_OPTIMIZERS: tuple[str, ...] = ("plain", *OPTIMIZERS)

#: Largest number of actions (the per-action values are scalar array parameters).
MAX_ACTIONS = 8

#: Rewards and initial logits of the actions ``a1..a8`` (the defaults of the per-action array
#: parameters). TS §3.2 gives no numbers; ``(a1, a2, a3)`` default to ``r = (0.5, 1, 0)``,
#: ``π0 = (0.45, 0.05, 0.5)`` (``r(a1) < r(a2)``, ``π(a1) > π(a2)``, ``r(a3) = 0``), ``a4`` to
#: a second explored correct action with ``r = 0.75`` and weight 0.1 (Fig. 7's four actions).
DEFAULT_REWARDS = (0.5, 1.0, 0.0, 0.75, 0.0, 0.0, 0.0, 0.0)
DEFAULT_LOGITS0 = tuple(float(np.log(w)) for w in (0.45, 0.05, 0.5, 0.1, 0.05, 0.05, 0.05, 0.05))


def reward_name(i: int) -> str:
    """The array parameter holding the reward of action ``a_{i+1}``."""
    return f"reward_a{i + 1}"


def logit0_name(i: int) -> str:
    """The array parameter holding the initial logit of action ``a_{i+1}``."""
    return f"logit0_a{i + 1}"


def _finite(a):
    return ~xp.isfinite(a)


#: Array parameters (swept inside one program), declared once: TS §3.2's ``G = 2``,
#: ``η = 0.1``, temperature 1, and the reward and initial logit of each action.
PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("eta", 0.1, lambda a: ~(xp.isfinite(a) & (a > 0)), "finite and > 0 (the step size η)",
          "η", "the step size"),
    Param("group_size", 2, lambda a: ~(xp.isfinite(a) & (a >= 1) & (a == xp.round(a))),
          "a whole number >= 1 (the group size G)", "G", "actions sampled per step", kind="int"),
    Param("temperature", 1.0, lambda a: ~(xp.isfinite(a) & (a > 0)),
          "finite and > 0 (π = softmax(z / temperature))", "τ", "the sampling temperature "
          "(TS App. C.4)"),
    *(Param(reward_name(i), DEFAULT_REWARDS[i], _finite, "finite", f"r(a{i + 1})",
            f"the reward of action a{i + 1}") for i in range(MAX_ACTIONS)),
    *(Param(logit0_name(i), DEFAULT_LOGITS0[i], _finite, "finite", f"z_0(a{i + 1})",
            f"the initial logit of action a{i + 1}") for i in range(MAX_ACTIONS)),
)}


class TwoStageState(NamedTuple):
    """Simulator state (a pytree); ``A`` actions, ``Gmax = max_group_size``."""

    logits: jax.Array  #: ``z`` ``(A,)``
    opt_state: Any  #: optax state (``()`` for ``"plain"``)
    seed: jax.Array  #: two uint32 words drawn from the run's key: the sampling stream's seed
    step: jax.Array  #: number of steps taken
    temperature: jax.Array  #: ``τ`` (constant; ``observe`` needs it for ``π``)
    rewards: jax.Array  #: ``r(a)`` ``(A,)`` (constant)
    actions: jax.Array  #: the last group's actions ``(Gmax,)`` (``−1`` beyond ``G``)
    advantages: jax.Array  #: the last group's advantages ``(Gmax,)`` (0 beyond ``G``)
    negative_advantage: jax.Array  #: ``Σ_steps (1/G) Σ_{i: a_i = v, Â_i < 0} Â_i`` ``(A,)``


class TwoStageMetrics(NamedTuple):
    """Recorded every ``stride`` steps."""

    step: jax.Array  #: step at which they were recorded
    probs: jax.Array  #: ``π = softmax(z/τ)`` ``(A,)``
    logits: jax.Array  #: ``z`` ``(A,)``
    expected_reward: jax.Array  #: ``π · r``
    #: cumulative relatively negative advantage per action ``(A,)``: on which action the
    #: relative negative gradients (TS App. B.5) fell
    negative_advantage: jax.Array


def _vector(value, name: str, n: int) -> np.ndarray:
    """``n`` finite floats, or a ``ValueError`` naming ``value``."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"two_stage: {name} must be a sequence of numbers; got "
                         f"{value!r}") from None
    if arr.shape != (n,):
        raise ValueError(f"two_stage: {name} must have one entry per action ({n} = "
                         f"num_actions); got {value!r} (shape {arr.shape})")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"two_stage: {name} must be finite; got {value!r}")
    return arr


#: rollout ``i`` of step ``l`` uses counter ``l · _STRIDE + i`` of the run's stream
_STRIDE = 1 << 20


def _stream_uniforms(seed, step, n: int, dtype):
    """``n`` uniforms on ``[0, 1)`` for step ``step``: a counter-based hash (SplitMix64's
    finalizer, 53 bits, in float64; two rounds of the 32-bit hash of the shared sampler in
    float32) of ``(seed, step, i)``. One ``jax.random.bits`` draw per run (in :meth:`init`)
    instead of a threefry split per step, which would dominate the step's compile time."""
    i = jnp.arange(n, dtype=jnp.uint32)
    if jnp.dtype(dtype) == jnp.dtype(jnp.float64):
        s = (seed[0].astype(jnp.uint64) << jnp.uint64(32)) | seed[1].astype(jnp.uint64)
        c = step.astype(jnp.uint64) * jnp.uint64(_STRIDE) + i.astype(jnp.uint64) + jnp.uint64(1)
        return splitmix64_uniforms(s, c)
    return mix32_uniforms(_mix32(i + seed[0]) ^ seed[1] ^ _mix32(step.astype(jnp.uint32)), dtype)


class TwoStage(AbstractSimulator, WithDtype):
    r"""The TS two-stage toy (module docstring): TS Algorithm 1 as a simulator.

    Static settings (one compilation per value): ``num_actions`` (``A``, 2 to
    :data:`MAX_ACTIONS`), ``method`` (a name of :data:`TWO_STAGE_METHODS`), ``optimizer`` (a
    name of :data:`TWO_STAGE_OPTIMIZERS` or a callable ``rate -> optax.GradientTransformation``),
    ``max_group_size`` (the rollout arrays are padded to it; padding is inert), ``dtype``.

    Array parameters (:meth:`default_params`; all values with the same static settings run in
    one compiled program): ``eta`` (η > 0), ``group_size`` (``G``, a whole number in
    ``[1, max_group_size]``; ``rloo`` needs ``G >= 2``), ``temperature`` (``τ > 0``), and per
    action ``a_k`` (``k = 1..A``) its reward ``reward_ak`` and initial logit ``logit0_ak``
    (Algorithm 1 initialises the logits; the initial policy is ``softmax(z_0/τ)``, so raising
    the temperature flattens a given model's policy). :meth:`action_params` builds them from
    vectors of rewards and initial probabilities.
    """

    name: ClassVar[str] = "two_stage"
    version: ClassVar[str] = "1"
    cpu_batching: ClassVar[str] = "vmap"

    num_actions: int = eqx.field(default=3, kw_only=True, static=True)
    method: str = eqx.field(default="mean_shifted", kw_only=True, static=True)
    optimizer: Any = eqx.field(default="plain", kw_only=True, static=True)
    max_group_size: int = eqx.field(default=16, kw_only=True, static=True)
    dtype: Any = eqx.field(default=None, kw_only=True, static=True)

    def __check_init__(self):
        who = "two_stage"
        A = self.num_actions
        if not is_int(A) or not 2 <= A <= MAX_ACTIONS:
            raise ValueError(f"{who}: num_actions must be an integer in [2, {MAX_ACTIONS}]; "
                             f"got {A!r}")
        if self.method not in TWO_STAGE_METHODS:
            raise ValueError(f"{who}: unknown method {self.method!r}; choose one of "
                             f"{sorted(TWO_STAGE_METHODS)}")
        if not (isinstance(self.optimizer, str) and self.optimizer == "plain"):
            lookup(OPTIMIZERS, self.optimizer, "optimizer (or 'plain', TS Algorithm 1)", who)
        v = self.max_group_size
        if not is_int(v) or not 2 <= v <= _STRIDE:
            raise ValueError(f"{who}: max_group_size must be an integer in [2, {_STRIDE}] (a "
                             f"group of one is group_size = 1 padded to 2); got {v!r}")
        self.check_dtype()

    @staticmethod
    def action_params(rewards, probs0=None, *, logits0=None) -> dict[str, float]:
        """The per-action array parameters from a vector of rewards and the initial policy,
        given as probabilities ``probs0`` (positive, summing to 1 within 1e-6; the logits are
        their logs) or as logits ``logits0``. The lengths must agree (``num_actions`` is that
        length). A bad value raises ``ValueError`` naming it."""
        A = np.size(rewards) if np.ndim(rewards) == 1 else -1
        if not 2 <= A <= MAX_ACTIONS:
            raise ValueError(f"two_stage: rewards must be a 1-d sequence of 2 to {MAX_ACTIONS} "
                             f"numbers (one per action); got {rewards!r}")
        r = _vector(rewards, "rewards", A)
        if (probs0 is None) == (logits0 is None):
            raise ValueError("two_stage: give exactly one of probs0 and logits0")
        if probs0 is not None:
            p = _vector(probs0, "probs0", A)
            if np.any(p <= 0) or abs(p.sum() - 1.0) > 1e-6:
                raise ValueError(f"two_stage: probs0 must be {A} positive numbers summing to 1; "
                                 f"got {probs0!r}")
            z = np.log(p / p.sum())
        else:
            z = _vector(logits0, "logits0", A)
        return {**{reward_name(i): float(r[i]) for i in range(A)},
                **{logit0_name(i): float(z[i]) for i in range(A)}}

    # ---- parameters ------------------------------------------------------------------------

    def param_specs(self) -> dict[str, Param]:
        A = self.num_actions
        names = ("eta", "group_size", "temperature", *map(reward_name, range(A)),
                 *map(logit0_name, range(A)))
        return {k: PARAMS[k] for k in names}

    @classmethod
    def all_param_specs(cls) -> dict[str, Param]:
        return dict(PARAMS)

    def constraints(self):
        Gmin, Gmax = TWO_STAGE_METHODS[self.method], self.max_group_size
        rules = [(("group_size",), lambda a: ~(a <= Gmax),
                  f"<= max_group_size = {Gmax} (a static setting: the rollout arrays are padded "
                  "to it; raise it for larger groups)")]
        if Gmin > 1:
            rules.append((("group_size",), lambda a: ~(a >= Gmin),
                          f">= {Gmin} (the group size G of {self.method})"))
        return rules

    def rewards_of(self, params):
        """``r(a)`` ``(A,)`` from the parameters."""
        dt = self.float_dtype()
        return jnp.stack([jnp.asarray(params[reward_name(i)], dt)
                          for i in range(self.num_actions)])

    def initial_logits(self, params):
        """``z_0`` ``(A,)`` from the parameters."""
        dt = self.float_dtype()
        return jnp.stack([jnp.asarray(params[logit0_name(i)], dt)
                          for i in range(self.num_actions)])

    def _optimizer(self, params):
        rate = jnp.asarray(params["eta"], self.float_dtype())
        return lookup(OPTIMIZERS, self.optimizer, "optimizer", "two_stage")(rate)

    # ---- how a sweep runs it ---------------------------------------------------------------

    def working_bytes(self) -> int:
        return 8 * (8 * self.num_actions + 4 * self.max_group_size) + 4096

    def observe_dims(self):
        return {"probs": ("action",), "logits": ("action",), "expected_reward": (),
                "negative_advantage": ("action",)}

    # ---- protocol --------------------------------------------------------------------------

    def init(self, key, params) -> TwoStageState:
        dt = self.float_dtype()
        z = self.initial_logits(params)
        r = self.rewards_of(params)
        # run-time checks of traced parameters (each rule by itself, so the error names it)
        z = self.checked(z, params)
        opt = () if self.optimizer == "plain" else optimizer_init(self._optimizer(params), z)
        G = self.max_group_size
        return TwoStageState(logits=z, opt_state=opt,
                             seed=jax.random.bits(key, (2,), jnp.uint32),
                             step=jnp.zeros((), jnp.int32),
                             temperature=jnp.asarray(params["temperature"], dt),
                             rewards=r,
                             actions=jnp.full((G,), -1, jnp.int32),
                             advantages=jnp.zeros((G,), dt),
                             negative_advantage=jnp.zeros((self.num_actions,), dt))

    def sample_actions(self, state: TwoStageState, params):
        """The step's actions ``(Gmax,)``: ``G = group_size`` i.i.d. draws from
        ``softmax(z/τ)`` by inverse CDF on the run's stream (rollout ``i`` of step ``l`` uses
        counter ``l · 2^20 + i``, whatever ``max_group_size`` is), ``−1`` beyond ``G``."""
        probs = jax.nn.softmax(state.logits / state.temperature)
        u = _stream_uniforms(state.seed, state.step, self.max_group_size, self.float_dtype())
        cdf = jnp.cumsum(probs[:-1])
        actions = jnp.sum(u[:, None] >= cdf[None, :], -1, dtype=jnp.int32)
        G = jnp.asarray(params["group_size"]).astype(jnp.int32)  # checked in init
        mask = jnp.arange(self.max_group_size, dtype=jnp.int32) < G
        return jnp.where(mask, actions, -1)

    def update(self, state: TwoStageState, actions, params) -> TwoStageState:
        """TS Algorithm 1's update for the sampled ``actions`` ``(Gmax,)`` (``−1``: no rollout):
        advantages by ``method``, ``g = Σ_i Â_i (e_{a_i} − π)``, then ``z ← z + η g/(Gτ)``
        (``"plain"``) or the optax step on ``g/(Gτ)``."""
        dt = self.float_dtype()
        A = self.num_actions
        actions = jnp.asarray(actions, jnp.int32)
        mask = actions >= 0
        G = jnp.sum(mask).astype(dt)
        tau = state.temperature
        probs = jax.nn.softmax(state.logits / tau)
        rew = jnp.where(mask, state.rewards[jnp.clip(actions, 0, A - 1)], 0.0)
        with trusted_inputs():  # rewards and mask built above; parameters checked in init
            adv = advantages(self.method, Groups(rew[None], jnp.maximum(actions, 0)[None],
                                                 mask[None]))[0]
        adv = jnp.where(mask, jnp.asarray(adv, dt), 0.0)
        hit = actions[:, None] == jnp.arange(A, dtype=jnp.int32)  # (Gmax, A)
        w = jnp.sum(jnp.where(hit, adv[:, None], 0.0), 0) / G  # (1/G) Σ_{i: a_i = v} Â_i
        neg = jnp.sum(jnp.where(hit & (adv[:, None] < 0), adv[:, None], 0.0), 0) / G
        grad = gradient_from_probs(probs, w, "log_likelihood") / tau  # g / (G τ)
        if isinstance(self.optimizer, str) and self.optimizer == "plain":
            new, opt = state.logits + jnp.asarray(params["eta"], dt) * grad, state.opt_state
        else:
            upd, opt = optimizer_update(self._optimizer(params), -grad, state.opt_state,
                                        state.logits)
            new = state.logits + upd
        return state._replace(logits=new, opt_state=opt, step=state.step + 1, actions=actions,
                              advantages=adv, negative_advantage=state.negative_advantage + neg)

    def step(self, state: TwoStageState, params) -> TwoStageState:
        return self.update(state, self.sample_actions(state, params), params)

    def observe(self, state: TwoStageState) -> TwoStageMetrics:
        probs = jax.nn.softmax(state.logits / state.temperature)
        return TwoStageMetrics(step=state.step, probs=probs, logits=state.logits,
                               expected_reward=jnp.sum(probs * state.rewards),
                               negative_advantage=state.negative_advantage)
