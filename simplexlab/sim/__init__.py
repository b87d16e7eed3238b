"""The simulators layer: one protocol, simulators that implement it, the shared sampler.

- :class:`AbstractSimulator`: ``init(key, params) -> state``, ``step(state, params) -> state``,
  ``observe(state) -> metrics`` over pytrees, static configuration in the module's fields
  (jax-md style); :func:`trajectory` runs any of them with ``lax.scan``. :class:`WithDtype`:
  the mixin of a simulator with a floating ``dtype`` setting.
- :class:`Categorical`: the F-GRPO App. J softmax policy simulator; its configuration
  (:class:`CategoricalConfig`, :class:`CategoricalPolicy`) and functional form
  (:func:`categorical_init`, :func:`categorical_step`, :func:`categorical_run`, ...) are
  re-exported under their short names by :mod:`simplexlab.sim`.
- :class:`Bandit`: the finite-group (K+M)-mode bandit of G²RPO: noisy verifier, any
  advantage rule of :mod:`simplexlab.shaping` by name (:data:`METHODS`), optax optimizers; its
  ensemble mean follows the mean-field ODEs of :mod:`simplexlab.theory`.
- :class:`SharedBandit`: the (K+M)-mode bandit over a distribution of prompts that share one
  weight matrix (logits = base logits + ``W x_i``): ``P`` prompts drawn per step, the same rules
  and verifier; its finite-group mean and covariance (:meth:`SharedBandit.moments`) and the
  progress of a step (:meth:`SharedBandit.progress`); one-hot features give the per-prompt
  :class:`Bandit`.
- :class:`Product`: the toy product "LLM" of G²RPO App. E (i.i.d. tokens, fixed policy): each
  step draws one batch of ``group_size`` sequences (token counts and ``log10 π(h)``).
- :class:`SoftmaxClassifier`: the Cat/Dog/Persian/Siamese linear softmax classifier of SC §2.4
  (App. G–H): raw / mean-shifted / normalized / RLOO / REINFORCE++ advantages, IAC, the memory
  network's distribution-level calibration (DLC), SGD / momentum / AdamW.
- :class:`TwoStage`: the TS two-stage toy (§3.2, App. C.1 Algorithm 1): a softmax policy over a
  few actions, ``G`` sampled actions, advantages by a rule of :mod:`simplexlab.shaping`, the plain
  update as written or an optax optimizer, temperature (App. C.4).
- :func:`sample_counts`: exact multinomial counts over many categories in O(A + N log A)
  (hashed uniforms, block-tree inverse CDF), reusable by any simulator.
- :data:`SIMULATORS`: simulators by name (``simplexlab sweep`` configs).

Batches of runs (grids over parameters and seeds, sharded, chunked, resumable) are the job of
:mod:`simplexlab.sweep`, which holds what it needs to know about each simulator beyond this
protocol (batching, memory per run, output dims, bucketing) in its adapters
(:class:`simplexlab.sweep.SweepAdapter`); checking a G²RPO gain schedule before training
(``verify_schedule``, ``save_schedule`` / ``load_schedule``, ...) is the job of
:mod:`simplexlab.verify`, the layer above.
"""

from ._bandit import METHODS, Bandit, BanditMetrics, BanditState
from ._categorical import ADVANTAGES as CATEGORICAL_ADVANTAGES
from ._categorical import Categorical
from ._categorical import Metrics as CategoricalMetrics
from ._categorical import SimState as CategoricalState
from ._categorical import init as categorical_init
from ._categorical import metrics as categorical_metrics
from ._categorical import run as categorical_run
from ._categorical import step as categorical_step
from ._categorical_model import (
    CategoricalConfig,
    CategoricalPolicy,
    action_advantages,
    count_gradient,
    count_weights,
)
from ._classifier import ClassifierMetrics, ClassifierState, SoftmaxClassifier
from ._policy import OPTIMIZERS
from ._product import Product, ProductMetrics, ProductState
from ._protocol import AbstractSimulator, WithDtype, trajectory
from ._sampler import counts_from_weights, sample_counts
from ._shared_bandit import SharedBandit, SharedBanditMetrics, SharedBanditState
from ._twostage import TwoStage, TwoStageMetrics, TwoStageState

SIMULATORS = {Categorical.name: Categorical, Bandit.name: Bandit,
              SoftmaxClassifier.name: SoftmaxClassifier, Product.name: Product,
              TwoStage.name: TwoStage, SharedBandit.name: SharedBandit}
"""Simulators by name, for sweep configuration files."""

__all__ = [
    "CATEGORICAL_ADVANTAGES",
    "METHODS",
    "OPTIMIZERS",
    "SIMULATORS",
    "AbstractSimulator",
    "Bandit",
    "BanditMetrics",
    "BanditState",
    "Categorical",
    "CategoricalConfig",
    "CategoricalMetrics",
    "CategoricalPolicy",
    "CategoricalState",
    "ClassifierMetrics",
    "ClassifierState",
    "Product",
    "ProductMetrics",
    "ProductState",
    "SharedBandit",
    "SharedBanditMetrics",
    "SharedBanditState",
    "SoftmaxClassifier",
    "TwoStage",
    "TwoStageMetrics",
    "TwoStageState",
    "WithDtype",
    "action_advantages",
    "categorical_init",
    "categorical_metrics",
    "categorical_run",
    "categorical_step",
    "count_gradient",
    "count_weights",
    "counts_from_weights",
    "sample_counts",
    "trajectory",
]
