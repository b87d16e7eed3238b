r"""The shared-parameter bandit: prompts drawn from a distribution, one set of parameters for all.

A finite set of prompts (the pool of a :class:`~simplexlab.theory.PromptSet`: a histogram of
pass rates, a Beta law's Gauss–Jacobi nodes, a rollouts file binned by pass rate), each with
the (K+M)-mode structure of :class:`~simplexlab.sim.Bandit`: prompt ``i`` has the logits
``θ_i = θ⁰_i + W x_i`` (:class:`~simplexlab.theory.SharedPolicy`), base logits ``θ⁰_i = log π⁰_i``
(its pass rate and mode masses at ``W = 0``), features ``x_i`` and one trained weight matrix
``W`` ``(K + M, D)`` shared by every prompt. One step:

1. draws ``num_prompts`` prompts ``P`` i.i.d. from the pool's weights
   (``sampling="replacement"``; ``"all"``: every prompt once, weighted);
2. for each, draws ``G = group_size`` rollouts from ``softmax(θ_i)``, verifies them with the
   noisy verifier and computes the advantages of a rule of :mod:`simplexlab.shaping` -- what
   :class:`~simplexlab.sim.Bandit` does per prompt, from the same sampler;
3. ascends the batch's mean surrogate ``(1/P) Σ_p L_p`` (weights ``w_i`` with ``"all"``) in
   ``W`` with an optax optimizer of rate ``eta``: ``∇_W = Σ_p b_p ∇_{θ_p} L_p x_pᵀ``.

With one-hot features (``features="onehot"``) each prompt owns a column of ``W``: the run is
:class:`~simplexlab.sim.Bandit` with the pool's prompts (with ``sampling="all"``, equal weights
and ``eta`` ``N`` times the bandit's, SGD takes the same steps from the same draws); with
``"random"`` unit features (``D = num_features``) the prompts share parameters and their
gradients interfere through ``x_iᵀ x_j``, the model that the budget question needs
(:mod:`simplexlab.theory` ``_budget``: its finite-group mean and covariance,
:meth:`SharedBandit.moments`, and the progress of a step, :meth:`SharedBandit.progress`).
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import Param, is_int
from ..shaping import METHOD_PARAMETERS, GainSchedule, group_rule, lookup_method
from ..shaping import METHODS as _RULES
from ..theory import (
    FEATURES,
    SAMPLING,
    PromptSet,
    SharedPolicy,
    Verifier,
    shared_moments,
    shared_policy,
    step_progress,
)
from ._bandit import METHODS, OWN_PARAMS, Bandit
from ._groups import group_gradient
from ._policy import OPTIMIZERS, REDUCTIONS, SURROGATES, lookup, optimizer_init, optimizer_update
from ._protocol import AbstractSimulator, WithDtype

__all__ = ["SharedBandit", "SharedBanditMetrics", "SharedBanditState"]

#: the prompt distribution of the default configuration: the issue's Beta(0.5, 1.5) pass rates
DEFAULT_PROMPTS = PromptSet.from_beta(0.5, 1.5, nodes=16)
#: the bandit's own parameters that this simulator shares (its prompts fix the initial policy)
_OWN = {k: OWN_PARAMS[k] for k in ("eta", "group_size", "delta_fn", "delta_fp")}


class SharedBanditState(NamedTuple):
    """Simulator state (a pytree); ``C = K + M``, ``D`` features, ``P = num_prompts``."""

    weights: jax.Array  #: ``W`` ``(C, D)``
    opt_state: Any  #: optax optimizer state
    key: jax.Array  #: PRNG key of the prompt draws, the sampling and the verifier noise
    step: jax.Array  #: number of steps taken
    prompts: jax.Array  #: the pool indices of the last batch's prompts ``(P,)``
    reward: jax.Array  #: mean verifier outcome of the last batch


class SharedBanditMetrics(NamedTuple):
    """Recorded over the whole pool (the objective is the pool's, trained prompts or not)."""

    step: jax.Array  #: step at which they were recorded
    pass_rate: jax.Array  #: ``Σ_i w_i (1 − p_i)``, the pool's pass rate
    diversity: jax.Array  #: ``Σ_i w_i (1 − L_y,i)``, the Gini–Simpson index of the good modes
    accuracy: jax.Array  #: each pool prompt's pass rate ``(N,)``
    L_y: jax.Array  #: each pool prompt's ``||y||²`` ``(N,)``
    reward: jax.Array  #: mean verifier outcome of the last batch


class SharedBandit(AbstractSimulator, WithDtype):
    r"""The shared-parameter bandit (module docstring).

    Static settings: ``K >= 1`` good and ``M >= 1`` bad modes; ``prompts`` (a
    :class:`~simplexlab.theory.PromptSet`, default Beta(0.5, 1.5) by 16 Gauss–Jacobi nodes),
    ``pool_size`` (the prompts the run holds: :meth:`PromptSet.pool`), ``rare_share`` (the
    composition of prompts without known mode masses: :meth:`PromptSet.policies`);
    ``features`` (:data:`~simplexlab.theory.FEATURES`), ``num_features`` (``D`` of random
    ones), ``feature_seed``; ``num_prompts`` ``P`` per step, ``sampling``
    (:data:`~simplexlab.theory.SAMPLING`); ``max_group_size`` (the rollout arrays' padding),
    ``method`` (a rule of :mod:`simplexlab.shaping`; G²RPO's ``schedule``), ``optimizer``,
    ``surrogate``, ``reduction``, ``allow_flipped``, ``dtype``.

    Array parameters: ``eta``, ``group_size``, ``delta_fn``, ``delta_fp`` (as the bandit's) and
    the method's own."""

    name: ClassVar[str] = "shared_bandit"
    version: ClassVar[str] = "1"
    cpu_batching: ClassVar[str] = "vmap"  # a few hundred numbers per run: batch them
    bucket: ClassVar[tuple[str, str]] = ("group_size", "max_group_size")

    K: int = eqx.field(default=3, kw_only=True, static=True)
    M: int = eqx.field(default=2, kw_only=True, static=True)
    prompts: PromptSet = eqx.field(default=DEFAULT_PROMPTS, kw_only=True, static=True)
    pool_size: int = eqx.field(default=16, kw_only=True, static=True)
    rare_share: float | None = eqx.field(default=None, kw_only=True, static=True)
    features: str = eqx.field(default="random", kw_only=True, static=True)
    num_features: int = eqx.field(default=8, kw_only=True, static=True)
    feature_seed: int = eqx.field(default=0, kw_only=True, static=True)
    num_prompts: int = eqx.field(default=4, kw_only=True, static=True)
    sampling: str = eqx.field(default="replacement", kw_only=True, static=True)
    max_group_size: int = eqx.field(default=16, kw_only=True, static=True)
    method: str = eqx.field(default="grpo", kw_only=True, static=True)
    schedule: GainSchedule = eqx.field(default=GainSchedule(kind="constant"), kw_only=True,
                                       static=True)
    optimizer: Any = eqx.field(default="sgd", kw_only=True, static=True)
    surrogate: str = eqx.field(default="log_likelihood", kw_only=True, static=True)
    reduction: str = eqx.field(default="mean", kw_only=True, static=True)
    allow_flipped: bool = eqx.field(default=False, kw_only=True, static=True)
    dtype: Any = eqx.field(default=None, kw_only=True, static=True)

    def __check_init__(self):
        who = "shared_bandit"
        for name, lower in (("K", 1), ("M", 1), ("max_group_size", 2), ("num_prompts", 1),
                            ("pool_size", 1), ("num_features", 1), ("feature_seed", 0)):
            v = getattr(self, name)
            if not is_int(v) or v < lower:
                raise ValueError(f"{who}: {name} must be an integer >= {lower}; got {v!r}")
        if not isinstance(self.prompts, PromptSet):
            raise ValueError(f"{who}: prompts must be a PromptSet; got {self.prompts!r}")
        for name, choices in (("features", FEATURES), ("sampling", SAMPLING),
                              ("surrogate", SURROGATES), ("reduction", REDUCTIONS)):
            if getattr(self, name) not in choices:
                raise ValueError(f"{who}: {name} must be one of {choices}; got "
                                 f"{getattr(self, name)!r}")
        n = self.pool().size
        if self.sampling == "all" and self.num_prompts != n:
            raise ValueError(f"{who}: sampling='all' takes every prompt of the pool once a "
                             f"step: num_prompts must be the pool's size {n}; got "
                             f"{self.num_prompts}")
        lookup_method(self.method, f"{who}: ")
        if not _RULES[self.method].group_local:
            raise ValueError(f"{who}: method {self.method!r} normalises over its batch of "
                             "groups; the shared bandit takes group-local rules")
        lookup(OPTIMIZERS, self.optimizer, "optimizer", who)
        if not isinstance(self.allow_flipped, bool | np.bool_):
            raise ValueError(f"{who}: allow_flipped must be True or False; got "
                             f"{self.allow_flipped!r}")
        self.policy()  # the pool's policies: rare_share checked
        self.check_dtype()

    # ---- parameters ------------------------------------------------------------------------

    def param_specs(self) -> dict[str, Param]:
        """``eta``, ``group_size`` (default 16 or the static bound), ``delta_fn``,
        ``delta_fp`` and the method's own parameters."""
        own = {k: METHOD_PARAMETERS[k] for k in METHODS[self.method]}
        if "gain" in own:
            own["gain"] = own["gain"]._replace(default=float(self.schedule.gain))
        size = _OWN["group_size"]
        return {**_OWN, **own,
                "group_size": size._replace(default=min(size.default, self.max_group_size))}

    @classmethod
    def all_param_specs(cls) -> dict[str, Param]:
        return {**_OWN, **METHOD_PARAMETERS}

    def constraints(self):
        """``group_size <= max_group_size``; the method's joint rules; ``delta_fn + delta_fp
        < 1`` unless ``allow_flipped``."""
        Gmax = self.max_group_size
        rules = [(("group_size",), lambda a: ~(a <= Gmax),
                  f"<= max_group_size = {Gmax} (a static setting: the rollout arrays are padded "
                  "to it; raise it to sweep larger groups)")]
        rules += _RULES[self.method].constraints("group_size")
        if not self.allow_flipped:
            rules.append((("delta_fn", "delta_fp"), lambda fn, fp: ~(fn + fp < 1),
                          "< 1 (J = 1 − delta_fn − delta_fp <= 0 flips the flow; set "
                          "allow_flipped=True to study that regime)"))
        return rules

    # ---- the model -------------------------------------------------------------------------

    def pool(self) -> PromptSet:
        """The prompts the run holds: ``prompts.pool(pool_size)``."""
        return self.prompts.pool(self.pool_size)

    def policy(self) -> SharedPolicy:
        """The shared-parameter policy of the pool (:func:`~simplexlab.theory.shared_policy`)."""
        return shared_policy(self.pool(), self.K, self.M, features=self.features,
                             num_features=self.num_features, seed=self.feature_seed,
                             rare_share=self.rare_share, dtype=self.float_dtype())

    # the bandit's: the run's verifier (rates checked in init) and optimizer at rate eta
    verifier = Bandit.verifier
    _optimizer = Bandit._optimizer

    def _rule_inputs(self, params):
        q = {**self.default_params(), **(params or {})}
        self.check_params(q)
        verifier = Verifier(float(q["delta_fn"]), float(q["delta_fp"]),
                            allow_flipped=self.allow_flipped)
        own = {k: float(q[k]) for k in METHODS[self.method]}
        rule = group_rule(self.method, params=own, verifier=verifier,
                          schedule=self.schedule if _RULES[self.method].schedule else None)
        return q, rule, verifier

    def moments(self, params: dict[str, Any] | None = None, W=None, **options):
        r"""The finite-group mean and covariance of one step's gradient in ``W`` at ``W``
        (default the start, 0): :func:`~simplexlab.theory.shared_moments` of the run's rule,
        verifier, surrogate, reduction, ``P`` and sampling at its group size (``options``: its
        ``path``, ``max_size``, ...)."""
        q, rule, verifier = self._rule_inputs(params)
        return shared_moments(rule, self.policy(), int(q["group_size"]),
                              num_prompts=self.num_prompts, sampling=self.sampling, W=W,
                              verifier=verifier, surrogate=self.surrogate,
                              reduction=self.reduction, **options)

    def progress(self, params: dict[str, Any] | None = None, objective: str = "pass", *,
                 kl: float = 1.0, W=None, **options):
        r"""The expected progress of one step (:func:`~simplexlab.theory.step_progress`) of
        the run's optimizer (by name: SGD, momentum, Adam) on ``objective`` with the trust
        region ``kl``."""
        if not isinstance(self.optimizer, str) or self.optimizer == "adamw":
            raise ValueError(f"shared_bandit: the progress theory covers the optimizers sgd, "
                             f"momentum and adam by name; got {self.optimizer!r}")
        return step_progress(self.moments(params, W, **options), self.policy(), objective,
                             kl=kl, optimizer=self.optimizer, W=W)

    # ---- how a sweep runs it ---------------------------------------------------------------

    def working_bytes(self) -> int:
        P, G, C = self.num_prompts, self.max_group_size, self.K + self.M
        N, D = self.pool().size, self.features_dim()
        return 8 * (P * (4 * G * C + 16 * G + 16 * C) + 4 * N * (C + D) + 8 * C * D) + 4096

    def features_dim(self) -> int:
        """``D``."""
        return {"onehot": self.pool().size, "shared": 1}.get(self.features, self.num_features)

    def observe_dims(self):
        return {"accuracy": ("prompt",), "L_y": ("prompt",)}

    # ---- protocol --------------------------------------------------------------------------

    def init(self, key, params) -> SharedBanditState:
        dt = self.float_dtype()
        pol = self.policy()
        W = self.checked(pol.zeros(), params)
        return SharedBanditState(weights=W, opt_state=optimizer_init(self._optimizer(params), W),
                                 key=key, step=jnp.zeros((), jnp.int32),
                                 prompts=jnp.zeros((self.num_prompts,), jnp.int32),
                                 reward=jnp.zeros((), dt))

    def step(self, state: SharedBanditState, params) -> SharedBanditState:
        dt = self.float_dtype()
        pol = self.policy()
        P = self.num_prompts
        G = jnp.asarray(params["group_size"]).astype(jnp.int32)  # checked in init
        key, sub = jax.random.split(state.key)
        if self.sampling == "all":
            idx = jnp.arange(P, dtype=jnp.int32)
            batch = pol.weights
        else:
            idx = jax.random.categorical(jax.random.fold_in(sub, 1), jnp.log(pol.weights),
                                         shape=(P,)).astype(jnp.int32)
            batch = jnp.full((P,), 1.0 / P, dt)
        logp = jax.nn.log_softmax(pol.logits(state.weights, idx), -1)
        # the bandit's draws (one-hot features and sampling="all" replay its run draw for draw)
        grad, rewards = group_gradient(
            logp, sub, G, max_group_size=self.max_group_size, K=self.K, method=self.method,
            params={k: params[k] for k in METHODS[self.method]},
            schedule=self.schedule if _RULES[self.method].schedule else None,
            verifier=self.verifier(params), step=state.step, reduction=self.reduction,
            surrogate=self.surrogate)
        grad_W = jnp.einsum("p,pc,pd->cd", batch, grad, pol.features[idx])
        updates, opt_state = optimizer_update(self._optimizer(params), -grad_W, state.opt_state,
                                              state.weights)
        return SharedBanditState(weights=state.weights + updates, opt_state=opt_state, key=key,
                                 step=state.step + 1, prompts=idx,
                                 reward=jnp.sum(batch * jnp.sum(rewards, -1)) / G.astype(dt))

    def observe(self, state: SharedBanditState) -> SharedBanditMetrics:
        pol = self.policy()
        pi = pol.probs(state.weights)
        good = pi[:, :self.K]
        acc = jnp.sum(good, -1)
        L_y = jnp.sum((good / acc[:, None]) ** 2, -1)
        w = pol.weights
        return SharedBanditMetrics(step=state.step, pass_rate=jnp.sum(w * acc),
                                   diversity=jnp.sum(w * (1.0 - L_y)), accuracy=acc, L_y=L_y,
                                   reward=state.reward)
