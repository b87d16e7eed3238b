r"""The Cat/Dog/Persian/Siamese softmax classifier of SC §2.4, App. G and App. H Algorithm 1.

A linear softmax classifier over the four labels (Cat, Dog, Persian, Siamese): logits
``f_θ(x, ·) = W e_x`` for an input with embedding ``e_x`` (``W`` is ``(4, d)``, no bias, so the
kernel of two inputs is ``∇_W f(x, o)ᵀ ∇_W f(x', o') = [o = o'] e_xᵀ e_x'``, the dot products
App. G uses). The embeddings are those of SC §2.4 (:func:`simplexlab.theory.toy_embeddings`,
the one definition). One step (SC §2.4 and Algorithm 1 with one query per step, ``B = 1``):

1. sample ``G = group_size`` labels for the Persian input from ``softmax(f̃)``,
   ``f̃ = f_θ(Persian, ·) − μ f_φ(Persian, ·)`` (Alg. 1 lines 5–6; ``μ = memory_weight``,
   ``μ = 0``: the policy itself, line 8);
2. reward 1 for Cat or Persian, 0 for Dog or Siamese (both the superclass and the subclass are
   correct for Persian, §2.4);
3. advantages from :func:`simplexlab.shaping.advantages` by name (``estimator``: ``"raw"``,
   ``"mean_shifted"``, ``"grpo"`` = normalized, ``"rloo"``, ``"reinforce_pp"`` =
   REINFORCE++ with the group-mean baseline, ...), then inverse-success calibration
   :func:`simplexlab.shaping.iac_advantages` with ``α = iac_alpha`` (SC §3.1, Alg. 1 lines
   11–18; ``α = 0`` leaves them unchanged);
4. ascend ``(1/G) Σ_s Ã_s log π_θ(o_s | Persian)`` (SC eq. 3 without the KL term) with an
   optax optimizer of rate ``eta`` (``"sgd"``, ``"momentum"`` = SGD with momentum 0.9,
   ``"adamw"``, ...); the gradient is that of the linear softmax classifier,
   ``∇_W = (w − π_θ Σ_o w_o) e_Persianᵀ``, ``w_o = (1/G) Σ_{s : o_s = o} Ã_s``;
5. distribution-level calibration (DLC, SC §3.2, Alg. 1 lines 21–22): the memory network, a
   second linear classifier ``f_φ(x, ·) = Φ e_x`` (``Φ`` starts at 0), takes one optimizer step
   of rate ``memory_eta`` on the cross-entropy of the sampled labels
   ``(1/G) Σ_s −log softmax(Φ e_Persian)[o_s]``, whose gradient is
   ``(softmax(Φ e_Persian) − N/G) e_Persianᵀ`` (``N`` the label counts; with SGD,
   ``Φ ← Φ + memory_eta (N/G − softmax(Φ e_Persian)) e_Persianᵀ``), so its softmax tracks the
   visit frequencies. Its optimizer is ``memory_optimizer`` (default: the policy's).

Choices the paper leaves open (stated here and in the experiments): no bias and ``W_0 =
init_scale · E`` (``E`` the embedding matrix, rows as label prototypes; the default
``init_scale = 0`` starts every input at the uniform policy, so Cat and Persian start tied and
the held-out Siamese accuracy starts at 1/4 whatever its embedding); no KL term and no
importance correction for sampling from ``f̃`` (Algorithm 1 samples from the calibrated
distribution and updates ``θ`` with the plain advantages); the memory network learns like the
policy (same optimizer unless ``memory_optimizer`` is set). With one query per step,
REINFORCE++'s batch normalization is over the one group, so ``"reinforce_pp"`` equals
``"grpo"`` up to ``ε``, and RLOO is ``G/(G − 1)`` times the mean-shifted advantage.

Under Adam / AdamW the kernel picture does not hold: every gradient is ``c_t e_Persianᵀ``, so
the per-entry normalization ``m/√v`` turns each row's step into a multiple of ``1ᵀ`` (every
entry of ``e_Persian`` is positive; up to ``ε`` and the weight decay), and the logits of an
input move in proportion to the *sum* of its embedding. Every Siamese variant sums to 1.6, as
Persian does, so from ``W_0 = 0`` the three held-out accuracies equal ``π(Siamese | Persian)``
(to ~1e-7): under AdamW the similarity has no effect.

Because only Persian is trained, the Siamese input never enters a step: :meth:`observe` reports
``π(Siamese | e_h)`` for every held-out embedding ``e_h`` (default: the High, Mid and Low
Siamese variants of §2.4) from one run. Under SGD every logit shift at ``e_h`` is exactly
``(e_hᵀ e_Persian / ‖e_Persian‖²)`` times the one at Persian (the kernel ratio ``ρ/λ`` of
App. G; Assumption 2.2's decay factor ``η`` in this model).

Implements the simulator protocol, so :mod:`simplexlab.sweep` batches it over seeds, group
sizes, rates, ``iac_alpha`` and ``memory_weight``.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import Param, is_int, trusted_inputs, xp
from ..shaping import METHODS as _RULES
from ..shaping import Groups, advantages, iac_advantages
from ..theory import TOY_LABELS, TOY_SIMILARITIES, toy_embeddings
from ._policy import (
    OPTIMIZERS,
    gradient_from_probs,
    lookup,
    optimizer_init,
    optimizer_update,
)
from ._protocol import AbstractSimulator, WithDtype
from ._sampler import uniforms

__all__ = ["ESTIMATORS", "ClassifierMetrics", "ClassifierState", "SoftmaxClassifier"]

#: Advantage estimators the toy accepts: the rules of :func:`simplexlab.shaping.advantages` that
#: need only the verifier outcomes (no parameter of their own; IAC is ``iac_alpha`` on top).
ESTIMATORS: tuple[str, ...] = tuple(name for name, m in _RULES.items() if m.function is not None)

def _nonneg(a):
    return ~(xp.isfinite(a) & (a >= 0))


#: Array parameters (swept inside one compiled program), declared once.
PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("eta", 0.5, lambda a: ~(xp.isfinite(a) & (a > 0)),
          "finite and > 0 (the optimizer rate)", "η", "the optimizer's rate"),
    Param("group_size", 8, lambda a: ~(xp.isfinite(a) & (a >= 2) & (a == xp.round(a))),
          "a whole number >= 2 (the group size G; group-relative advantages need two rollouts)",
          "G", "labels sampled per step", kind="int"),
    Param("iac_alpha", 0.0, _nonneg, "finite and >= 0 (IAC alpha)", "α",
          "IAC's exponent (SC §3.1, Alg. 1 lines 11–18; 0: none)"),
    Param("memory_weight", 0.0, _nonneg, "finite and >= 0 (DLC mu)", "μ",
          "DLC's weight of the memory network (SC §3.2; 0: sample from the policy)"),
    Param("memory_eta", 0.5, _nonneg, "finite and >= 0 (the memory network's rate)", "",
          "the memory network's rate"),
    Param("init_scale", 0.0, lambda a: ~xp.isfinite(a), "finite", "",
          "W_0 = init_scale · E (E the embedding matrix)"),
    Param("estimator_index", 0, lambda a: ~(xp.isfinite(a) & (a >= 0) & (a == xp.round(a))),
          "a whole number >= 0", "",
          "the run's estimator, its position in the tuple estimator (a tuple only)",
          kind="int"),
)}

_PERSIAN = TOY_LABELS.index("Persian")
_SIAMESE = TOY_LABELS.index("Siamese")
#: labels rewarded on a Persian input (SC §2.4): the superclass Cat and the subclass Persian
CORRECT = (TOY_LABELS.index("Cat"), _PERSIAN)


class ClassifierState(NamedTuple):
    """Simulator state (a pytree)."""

    W: jax.Array  #: classifier weights ``(4, d)``: logits ``W e_x``
    memory: jax.Array  #: memory-network weights ``Φ`` ``(4, d)`` (DLC)
    memory_weight: jax.Array  #: DLC ``μ`` (the run's parameter, for :meth:`observe`)
    opt_state: Any  #: optax state of ``W``
    memory_opt_state: Any  #: optax state of ``Φ``
    key: jax.Array  #: PRNG key of the sampling
    step: jax.Array  #: steps taken
    counts: jax.Array  #: label counts of the last group ``(4,)``
    advantage: jax.Array  #: advantage of each label in the last group (0 if unsampled) ``(4,)``


class ClassifierMetrics(NamedTuple):
    """Recorded every ``stride`` steps."""

    step: jax.Array  #: step at which they were recorded
    pi_persian: jax.Array  #: ``π_θ(label | Persian)`` ``(4,)``
    sampling: jax.Array  #: the sampling distribution ``softmax(f̃)`` at Persian ``(4,)``
    memory: jax.Array  #: the memory network's ``softmax(f_φ(Persian, ·))`` ``(4,)``
    pi_held_out: jax.Array  #: ``π_θ(label | e_h)`` for each held-out embedding ``(H, 4)``
    siamese_accuracy: jax.Array  #: ``π_θ(Siamese | e_h)`` ``(H,)``
    correct_mass: jax.Array  #: ``π_θ(Cat | Persian) + π_θ(Persian | Persian)``
    entropy: jax.Array  #: entropy of ``π_θ(· | Persian)`` (nats)
    counts: jax.Array  #: label counts of the last group ``(4,)``
    advantage: jax.Array  #: advantage of each label in the last group ``(4,)``


def _matrix(value, what: str, rows: int | None, dim: int | None = None) -> tuple | None:
    """A nested tuple of floats of shape ``(rows, d)`` (``rows=None``: any number >= 1), finite;
    ``dim`` fixes ``d``. ``ValueError`` naming ``what`` and the shape otherwise."""
    if value is None:
        return None
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"classifier: {what} must be a numeric matrix; got {value!r}") from None
    want = f"({'n' if rows is None else rows}, {'d' if dim is None else dim})"
    if arr.ndim != 2 or min(arr.shape) < 1 or (rows is not None and arr.shape[0] != rows) \
            or (dim is not None and arr.shape[1] != dim):
        raise ValueError(f"classifier: {what} must have shape {want} (rows "
                         f"{'Cat, Dog, Persian, Siamese' if rows == 4 else 'embeddings'}); got "
                         f"shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"classifier: {what} must be finite; got {value!r}")
    return tuple(tuple(float(v) for v in r) for r in arr)


def _matvec(M, v):
    """``M @ v`` over the last axis as an elementwise product summed: under ``vmap`` XLA's CPU
    matrix-vector kernel rounds a run's logits differently for different batch sizes (an odd
    batch takes another path), so a sweep's results would depend on its chunks and devices."""
    return jnp.sum(M * v, -1)


class SoftmaxClassifier(AbstractSimulator, WithDtype):
    r"""The SC §2.4 softmax classifier toy (module docstring).

    Static settings (fields; one compilation per value): ``estimator`` (a name in
    :data:`ESTIMATORS`, or a tuple of names: then every step computes each of them and the array
    parameter ``estimator_index`` picks one per run, so several estimators share one compiled
    program), ``optimizer`` (a name in ``OPTIMIZERS``: ``"sgd"``, ``"momentum"``,
    ``"adam"``, ``"adamw"``, or a callable ``rate -> optax.GradientTransformation``),
    ``memory_optimizer`` (the memory network's; ``None``: the same as ``optimizer``),
    ``max_group_size`` (groups are padded to it, so every ``group_size`` up to it runs in one
    program), ``embeddings`` (``None``: SC §2.4 with the Siamese row of ``similarity``; or a
    ``(4, d)`` matrix, rows Cat, Dog, Persian, Siamese, as nested tuples — :meth:`make` converts
    arrays and lists), ``similarity`` (``"High"``, ``"Mid"``,
    ``"Low"``), ``held_out`` (embeddings ``(H, d)`` at which ``π(Siamese | e_h)`` is reported;
    ``None``: the three Siamese variants of §2.4 with the paper's embeddings, the Siamese row
    otherwise), ``dtype``.

    Array parameters (:meth:`default_params`): ``eta`` (the optimizer's rate), ``group_size``
    (``G``, a whole number in ``[2, max_group_size]``: group-relative advantages need two
    rollouts), ``iac_alpha`` (IAC ``α >= 0``), ``memory_weight`` (DLC ``μ >= 0``; 0: sample
    from the policy), ``memory_eta`` (the memory network's rate, ``>= 0``), ``init_scale``
    (``W_0 = init_scale · E``), and with a tuple of estimators ``estimator_index`` (a whole
    number, the position of the run's estimator in the tuple).
    """

    name: ClassVar[str] = "classifier"
    #: 2: logits as elementwise products summed (:func:`_matvec`), not matrix products
    version: ClassVar[str] = "2"
    cpu_batching: ClassVar[str] = "vmap"

    estimator: str | tuple[str, ...] = eqx.field(default="grpo", kw_only=True, static=True)
    optimizer: Any = eqx.field(default="sgd", kw_only=True, static=True)
    memory_optimizer: Any = eqx.field(default=None, kw_only=True, static=True)
    max_group_size: int = eqx.field(default=64, kw_only=True, static=True)
    embeddings: tuple | None = eqx.field(default=None, kw_only=True, static=True)
    similarity: str = eqx.field(default="High", kw_only=True, static=True)
    held_out: tuple | None = eqx.field(default=None, kw_only=True, static=True)
    dtype: Any = eqx.field(default=None, kw_only=True, static=True)

    def __check_init__(self):
        who = "classifier"
        names = self.estimators()
        if not names or len(set(names)) != len(names):
            raise ValueError(f"{who}: estimator must be a name or a tuple of distinct names; got "
                             f"{self.estimator!r}")
        for name in names:
            if name not in ESTIMATORS:
                raise ValueError(f"{who}: unknown estimator {name!r}; choose one of "
                                 f"{sorted(ESTIMATORS)} (IAC: set iac_alpha)")
        lookup(OPTIMIZERS, self.optimizer, "optimizer", who)
        if self.memory_optimizer is not None:
            if isinstance(self.memory_optimizer, str) and \
                    self.memory_optimizer not in OPTIMIZERS:
                raise ValueError(f"{who}: unknown memory_optimizer {self.memory_optimizer!r}; "
                                 f"choose one of {sorted(OPTIMIZERS)} (None: the optimizer's)")
            lookup(OPTIMIZERS, self.memory_optimizer, "memory_optimizer", who)
        if not is_int(self.max_group_size) or self.max_group_size < 2:
            raise ValueError(f"{who}: max_group_size must be an integer >= 2 (the group size "
                             f"G); got {self.max_group_size!r}")
        if self.similarity not in TOY_SIMILARITIES:
            raise ValueError(f"{who}: similarity must be one of {TOY_SIMILARITIES}; got "
                             f"{self.similarity!r}")
        emb = _matrix(self.embeddings, "embeddings", 4)
        d = len(emb[0]) if emb is not None else 4
        _matrix(self.held_out, "held_out", None, d)
        self.check_dtype()

    @classmethod
    def make(cls, **settings) -> SoftmaxClassifier:
        cls.check_settings(settings)
        s = dict(settings)
        if isinstance(s.get("estimator"), list):  # from a TOML config
            s["estimator"] = tuple(s["estimator"])
        for name, rows in (("embeddings", 4), ("held_out", None)):
            if s.get(name) is not None:
                s[name] = _matrix(s[name], name, rows)
        return cls(**s)

    def estimators(self) -> tuple:
        """The estimator names: ``(estimator,)`` for one name, the tuple otherwise."""
        if isinstance(self.estimator, str):
            return (self.estimator,)
        return tuple(self.estimator) if isinstance(self.estimator, tuple | list) else ()

    def embedding_matrix(self) -> np.ndarray:
        """``E`` ``(4, d)``: rows Cat, Dog, Persian, Siamese (float64 NumPy)."""
        if self.embeddings is None:
            return toy_embeddings(self.similarity)
        return np.asarray(self.embeddings, dtype=np.float64)

    def held_out_matrix(self) -> np.ndarray:
        """The held-out embeddings ``(H, d)`` (float64 NumPy)."""
        if self.held_out is not None:
            return np.asarray(self.held_out, dtype=np.float64)
        if self.embeddings is None:
            return np.stack([toy_embeddings(s)[_SIAMESE] for s in TOY_SIMILARITIES])
        return self.embedding_matrix()[_SIAMESE][None]

    # ---- parameters ------------------------------------------------------------------------

    def param_specs(self) -> dict[str, Param]:
        """:data:`PARAMS`; ``estimator_index`` only with a tuple of estimators, its domain the
        positions in it."""
        q = dict(PARAMS)
        size = q["group_size"]  # the default group size within the static bound
        q["group_size"] = size._replace(default=min(size.default, self.max_group_size))
        if isinstance(self.estimator, str):
            del q["estimator_index"]  # one estimator: nothing to pick
        else:
            n = len(self.estimators())
            q["estimator_index"] = q["estimator_index"]._replace(
                bad=lambda a: ~((a >= 0) & (a < n) & (a == xp.round(a))),
                what=f"a whole number in [0, {n}) (the position in estimator = "
                     f"{self.estimator!r})")
        return q

    @classmethod
    def all_param_specs(cls) -> dict[str, Param]:
        return dict(PARAMS)

    def constraints(self):
        Gmax = self.max_group_size
        return [(("group_size",), lambda a: ~(a <= Gmax),
                 f"<= max_group_size = {Gmax} (a static setting: groups are padded to it)")]

    def _optimizer(self, params):
        rate = jnp.asarray(params["eta"], self.float_dtype())
        return lookup(OPTIMIZERS, self.optimizer, "optimizer", "classifier")(rate)

    def _memory_optimizer(self, params):
        rate = jnp.asarray(params["memory_eta"], self.float_dtype())
        opt = self.optimizer if self.memory_optimizer is None else self.memory_optimizer
        return lookup(OPTIMIZERS, opt, "memory_optimizer", "classifier")(rate)

    # ---- how a sweep runs it ---------------------------------------------------------------

    def working_bytes(self) -> int:
        G, d = self.max_group_size, self.embedding_matrix().shape[1]
        return 8 * (16 * G + 64 * d) + 4096

    def observe_dims(self):
        return {"pi_persian": ("label",), "sampling": ("label",), "memory": ("label",),
                "pi_held_out": ("held_out", "label"), "siamese_accuracy": ("held_out",),
                "counts": ("label",), "advantage": ("label",)}

    # ---- protocol --------------------------------------------------------------------------

    def init(self, key, params) -> ClassifierState:
        dt = self.float_dtype()
        E = jnp.asarray(self.embedding_matrix(), dt)
        W = self.checked(jnp.asarray(params["init_scale"], dt) * E, params)
        zeros = jnp.zeros((len(TOY_LABELS),), dt)
        return ClassifierState(W=W, memory=jnp.zeros_like(W),
                               memory_weight=jnp.asarray(params["memory_weight"], dt),
                               opt_state=optimizer_init(self._optimizer(params), W),
                               memory_opt_state=optimizer_init(self._memory_optimizer(params),
                                                               W),
                               key=key,
                               step=jnp.zeros((), jnp.int32), counts=zeros, advantage=zeros)

    def step(self, state: ClassifierState, params) -> ClassifierState:
        dt = self.float_dtype()
        Gmax, C = self.max_group_size, len(TOY_LABELS)
        G = jnp.asarray(params["group_size"]).astype(jnp.int32)  # checked in init
        Gf = G.astype(dt)
        e = jnp.asarray(self.embedding_matrix()[_PERSIAN], dt)
        key, sub = jax.random.split(state.key)
        logp = jax.nn.log_softmax(_matvec(state.W, e))
        probs = jnp.exp(logp)
        mem_logits = _matvec(state.memory, e)
        # Alg. 1 lines 5-6: sample from softmax(f_θ − μ f_φ); exact inverse CDF on hashed
        # uniforms (rollout g uses uniform g whatever max_group_size is)
        ps = jax.nn.softmax(_matvec(state.W, e) - state.memory_weight * mem_logits)
        cdf = jnp.cumsum(ps[:-1])
        labels = jnp.sum(uniforms(sub, Gmax, dt)[:, None] >= cdf[None, :], -1, dtype=jnp.int32)
        mask = jnp.arange(Gmax, dtype=jnp.int32) < G
        correct = (labels == CORRECT[0]) | (labels == CORRECT[1])
        rewards = jnp.where(mask & correct, jnp.ones((), dt), jnp.zeros((), dt))
        # the rule's inputs are built here and valid by construction (rewards in {0, 1}, >= 2
        # valid rollouts, iac_alpha checked in init)
        groups = Groups(rewards[None], labels[None], mask[None], logp[labels][None])
        with trusted_inputs():
            advs = [advantages(name, groups) for name in self.estimators()]
            if len(advs) == 1:
                adv = advs[0]
            else:  # the run's estimator (checked in init)
                pick = jnp.asarray(params["estimator_index"]).astype(jnp.int32)
                adv = jnp.stack(advs)[pick]
            adv = iac_advantages(adv, rewards[None], mask[None],
                                 alpha=jnp.asarray(params["iac_alpha"], dt))[0]
        adv = jnp.where(mask, jnp.asarray(adv, dt), 0.0)
        hit = (labels[:, None] == jnp.arange(C, dtype=jnp.int32)) & mask[:, None]
        counts = jnp.sum(hit, 0, dtype=jnp.int32).astype(dt)
        adv_sum = jnp.sum(jnp.where(hit, adv[:, None], 0.0), 0)
        # SC eq. (3) without KL, mean over the group: w_o = (1/G) Σ_{s: o_s = o} Ã_s; gradient
        # of (1/G) Σ_s Ã_s log π_θ(o_s) w.r.t. the logits, then W (logits = W e)
        grad = jnp.outer(gradient_from_probs(probs, adv_sum / Gf, "log_likelihood"), e)
        updates, opt_state = optimizer_update(self._optimizer(params), -grad, state.opt_state,
                                              state.W)
        # Alg. 1 lines 21-22: one step of the memory network on the cross-entropy of the
        # sampled labels, (1/G) Σ_s −log softmax(Φ e)[o_s] (its softmax tracks the visit
        # frequencies); gradient (softmax(Φ e) − N/G) e_Persianᵀ
        mem_grad = jnp.outer(jax.nn.softmax(mem_logits) - counts / Gf, e)
        mem_updates, mem_opt_state = optimizer_update(self._memory_optimizer(params), mem_grad,
                                                      state.memory_opt_state, state.memory)
        label_adv = jnp.where(counts > 0, adv_sum / jnp.maximum(counts, 1.0), 0.0)
        return ClassifierState(W=state.W + updates, memory=state.memory + mem_updates,
                               memory_weight=state.memory_weight, opt_state=opt_state,
                               memory_opt_state=mem_opt_state, key=key,
                               step=state.step + 1, counts=counts, advantage=label_adv)

    def observe(self, state: ClassifierState) -> ClassifierMetrics:
        dt = self.float_dtype()
        e = jnp.asarray(self.embedding_matrix()[_PERSIAN], dt)
        H = jnp.asarray(self.held_out_matrix(), dt)
        logp = jax.nn.log_softmax(_matvec(state.W, e))
        pi = jnp.exp(logp)
        pi_h = jax.nn.softmax(_matvec(state.W[None], H[:, None]), -1)
        mem = _matvec(state.memory, e)
        return ClassifierMetrics(
            step=state.step, pi_persian=pi,
            sampling=jax.nn.softmax(_matvec(state.W, e) - state.memory_weight * mem),
            memory=jax.nn.softmax(mem), pi_held_out=pi_h, siamese_accuracy=pi_h[:, _SIAMESE],
            correct_mass=pi[CORRECT[0]] + pi[CORRECT[1]],
            entropy=-jnp.sum(jnp.where(pi > 0, pi * logp, 0.0)),
            counts=state.counts, advantage=state.advantage)
