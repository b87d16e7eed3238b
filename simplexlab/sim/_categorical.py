r"""The categorical simulator's functional API and its :class:`~simplexlab.sim.AbstractSimulator`
face (F-GRPO §5.1, Fig. 4, App. J): a pure ``(init, step)`` pair over a :class:`SimState` pytree
(jax-md style), :func:`metrics`, and :func:`run`, which scans ``step`` with
:func:`jax.lax.scan` and records :class:`Metrics` every ``stride`` steps; :class:`Categorical`.
The policy, its configuration, the advantages and the count-form gradient are in
:mod:`simplexlab.sim._categorical_model`.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from .._checks import Param, error_if, is_concrete, trusted_inputs, xp
from ..shaping import METHODS as _RULES
from ..shaping import raw_advantages
from ..shaping.internal import unchecked
from ._categorical_model import (
    CategoricalConfig,
    CategoricalPolicy,
    _bad_group_size,
    _count_weights_and_sum,
)
from ._policy import (
    OPTIMIZERS,
    gradient_from_probs,
    lookup,
)
from ._protocol import MAX_STEPS, AbstractSimulator, trajectory
from ._sampler import unnormalized, weighted_counts

__all__ = ["ADVANTAGES", "Categorical", "Metrics", "SimState", "init", "metrics", "run", "step"]

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
    """Initial state: App. J logits, fresh optimizer state, the given PRNG key. A traced
    ``group_size`` outside ``[1, max_group_size]`` is a run-time error here."""
    z = config.policy.initial_logits(config.float_dtype())
    if config.padded() and not is_concrete(config.group_size):
        # skipped within trusted_inputs (the sweep engine checked it on the host): no callback
        z = error_if(z, jnp.any(_bad_group_size(jnp.asarray(config.group_size),
                                               config.max_group_size)),
                     f"group_size must be a whole number in [1, max_group_size = "
                     f"{config.max_group_size}]")
    return SimState(logits=z, opt_state=config.optimizer_init(z), key=key,
                    step=jnp.zeros((), jnp.int32), probs0=jax.nn.softmax(z),
                    batch_correct=jnp.zeros((), jnp.int32))


def step(config: CategoricalConfig, state: SimState) -> SimState:
    r"""One update: sample ``N`` actions as counts (:func:`sample_counts`), advantages from the
    shaping function (:func:`action_advantages`), ascend the count-form surrogate
    (:func:`count_gradient`) with the optax optimizer (updates from ``−∇L``)."""
    key, sub = jax.random.split(state.key)
    e = unnormalized(state.logits)  # once per step, shared by sampler and gradient
    counts, total = weighted_counts(
        sub, e, config.max_group_size, config.sampler, return_total=True,
        num_valid=jnp.asarray(config.group_size) if config.padded() else None)
    p = e * (1.0 / total)
    w, k, w_sum = _count_weights_and_sum(config, counts)
    grad = gradient_from_probs(p, w, config.surrogate, w_sum)
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
    return Metrics(
        step=state.step,
        q_pos=jnp.sum(jnp.where(correct, p, zero)),
        m_ret=unchecked.retained_mass(p0, p, correct),
        entropy=-jnp.sum(p * logp),
        anchor=p[0],
        num_above=jnp.sum(correct & (p > p0), dtype=jnp.int32),
        batch_correct=state.batch_correct,
    )


def run(config: CategoricalConfig, key, num_steps: int, stride: int = 1, *,
        max_steps: int = MAX_STEPS):
    r"""Run ``num_steps`` steps with :func:`jax.lax.scan`, recording :class:`Metrics` at step 0
    and every ``stride`` steps (``num_steps // stride + 1`` records; ``num_steps`` must be a
    multiple of ``stride``). Returns ``(final_state, metrics)``. Pure: jit it with
    ``static_argnames=("num_steps", "stride")`` and vmap it over keys and config arrays.
    (:func:`simplexlab.sim.trajectory` of :class:`Categorical`, with its size guards:
    ``num_steps`` at most ``max_steps``, records that fit in memory; batches of runs go through
    :mod:`simplexlab.sweep`.)"""
    sim = Categorical(config=config)
    return trajectory(sim, key, sim.default_params(), num_steps=num_steps, stride=stride,
                      max_steps=max_steps)


ADVANTAGES = {name: m.group_function for name, m in _RULES.items()
              if m.group_function is not None}
"""Group-level advantage functions by name (``Categorical.make(advantage=...)``): the rules of
:data:`simplexlab.shaping.METHODS` that map one group's real-valued rewards alone."""
_POLICY_FIELDS = ("num_actions", "num_correct", "anchor_logit", "correct_logit",
                  "incorrect_logit", "r_correct", "r_wrong")
_CONFIG_FIELDS = ("max_group_size", "advantage", "surrogate", "reduction", "optimizer", "dtype",
                  "sampler")


ETA = Param("eta", 1e-2, lambda a: ~(xp.isfinite(a) & (a > 0)), "finite and > 0", "η",
            "the optimizer's rate (F-GRPO App. J: 1e-2)")
FOCAL_GAMMA = Param("focal_gamma", 0.0, lambda a: ~(xp.isfinite(a) & (a >= 0)),
                    "finite and >= 0", "γ", "F-GRPO's focal exponent (FG eq. 15; 0: none)")
GROUP_SIZE = Param("group_size", 8, lambda a: ~(xp.isfinite(a) & (a >= 1) & (a == xp.round(a))),
                   "a whole number >= 1", "N", "draws per step (F-GRPO App. J's N)", kind="int")


class Categorical(AbstractSimulator):
    r"""The categorical policy simulator as a :class:`~simplexlab.sim.AbstractSimulator`.

    Static configuration: ``config`` (:class:`CategoricalConfig`). Array parameters (swept in
    one compiled program): ``group_size`` (up to the static ``max_group_size``), ``eta`` and
    ``focal_gamma``. ``init`` / ``step`` / ``observe`` are :func:`init`, :func:`step` and
    :func:`metrics` with those three fields of the configuration replaced by ``params``.
    """

    name: ClassVar[str] = "categorical"
    version: ClassVar[str] = "1"
    bucket: ClassVar[tuple[str, str]] = ("group_size", "max_group_size")
    config: CategoricalConfig = eqx.field(default_factory=CategoricalConfig, kw_only=True)

    @classmethod
    def make(cls, **settings) -> Categorical:
        """Build from flat settings: the fields of :class:`CategoricalPolicy` and
        :class:`CategoricalConfig`, with ``advantage`` / ``optimizer`` given by name
        (:data:`ADVANTAGES`, :data:`OPTIMIZERS`) or as callables and ``dtype`` as
        ``"float32"`` / ``"float64"``. Unknown names raise ``ValueError``."""
        s = dict(settings)
        cls.check_settings(s, set(_POLICY_FIELDS) | set(_CONFIG_FIELDS)
                           | {"eta", "focal_gamma", "group_size"})
        for field, table in (("advantage", ADVANTAGES), ("optimizer", OPTIMIZERS)):
            if isinstance(s.get(field), str):
                s[field] = lookup(table, s[field], field, "categorical")
        if isinstance(s.get("dtype"), str):
            if s["dtype"] not in ("float32", "float64"):
                raise ValueError(f"categorical: dtype must be 'float32' or 'float64'; got "
                                 f"{s['dtype']!r}")
            s["dtype"] = jnp.dtype(s["dtype"])
        policy = CategoricalPolicy(**{k: s.pop(k) for k in _POLICY_FIELDS if k in s})
        return cls(config=CategoricalConfig(policy=policy, **s))

    @classmethod
    def settings(cls) -> dict[str, Any]:
        pol, cfg = CategoricalPolicy(), CategoricalConfig()
        out = {k: getattr(pol, k) for k in _POLICY_FIELDS}
        out.update({k: getattr(cfg, k) for k in _CONFIG_FIELDS})
        out["max_group_size"] = None
        out.update(advantage="mean_shifted", optimizer="sgd", dtype=None)
        return out

    def __check_init__(self):
        if not isinstance(self.config, CategoricalConfig):
            raise ValueError(f"config must be a CategoricalConfig; got {self.config!r}")

    def param_specs(self) -> dict[str, Param]:
        """``eta``, ``focal_gamma``, ``group_size``; their defaults the configuration's."""
        c = self.config
        return {"eta": ETA._replace(default=c.eta),
                "focal_gamma": FOCAL_GAMMA._replace(default=c.focal_gamma),
                "group_size": GROUP_SIZE._replace(default=c.group_size)}

    @classmethod
    def all_param_specs(cls) -> dict[str, Param]:
        return {p.name: p for p in (ETA, FOCAL_GAMMA, GROUP_SIZE)}

    def constraints(self):
        Gmax = self.config.max_group_size
        rules = [(("group_size",), lambda g: ~(g <= Gmax),
                  f"<= max_group_size = {Gmax} (the draws are padded to max_group_size, a static "
                  "setting: raise it for larger groups)")]
        if self.config.advantage is not raw_advantages:
            rules.append((("group_size",), lambda g: ~(g >= 2),
                          ">= 2: group_size = 1 admits no group-relative advantage; use "
                          "advantage=raw_advantages"))
        return rules

    # ---- how a sweep runs it ---------------------------------------------------------------

    @classmethod
    def bucket_floor(cls, static, values):
        """On a CPU (runs one after another) a draw costs about as much as 13 actions of the
        rest of a step (measured, float32, A = 128,000), so groups up to ~A/128 draws share one
        program at < 10% extra cost; on an accelerator (runs batched) every group size of the
        sweep shares one program."""
        ok = np.isfinite(values) & (values >= 1)
        top = int(2 ** np.ceil(np.log2(values[ok].max()))) if ok.any() else 2
        if jax.default_backend() != "cpu":
            return top
        a = int(static.get("num_actions") or 2)
        return min(top, max(64, 2 ** int(np.round(np.log2(max(a / 128, 1))))))

    def working_bytes(self) -> int:
        """:meth:`CategoricalConfig.working_bytes`: about a dozen ``(A,)`` arrays live at once
        plus ``(N,)`` draws."""
        return self.config.working_bytes()

    def _config(self, params) -> CategoricalConfig:
        dt = self.config.float_dtype()
        g = params.get("group_size", self.config.group_size)
        if not (is_concrete(g) and np.ndim(g) == 0 and g == self.config.max_group_size):
            g = jnp.asarray(g)  # checked in init (a fraction too); else the unpadded program
        else:
            g = self.config.max_group_size
        return eqx.tree_at(lambda c: (c.eta, c.focal_gamma, c.group_size), self.config,
                           (jnp.asarray(params["eta"], dt),
                            jnp.asarray(params["focal_gamma"], dt), g))

    def init(self, key, params) -> SimState:
        with trusted_inputs():  # the run-time checks of the parameters: the one below
            state = init(self._config(params), key)
        return state._replace(logits=self.checked(state.logits, params))

    def step(self, state: SimState, params) -> SimState:
        # the parameters were checked in init, the group's rewards and mask are built by the
        # step itself (valid by construction): no run-time check per step
        with trusted_inputs():
            return step(self._config(params), state)

    def observe(self, state: SimState) -> Metrics:
        return metrics(self.config, state)
