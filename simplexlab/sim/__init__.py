"""The simulators layer: one protocol, simulators that implement it, the shared sampler.

- :class:`AbstractSimulator`: ``init(key, params) -> state``, ``step(state, params) -> state``,
  ``observe(state) -> metrics`` over pytrees, static configuration in the module's fields
  (jax-md style); :func:`trajectory` runs any of them with ``lax.scan``. :class:`WithDtype`:
  the mixin of a simulator with a floating ``dtype`` setting.
- :class:`Categorical`: the F-GRPO App. J softmax policy simulator (:mod:`simplexlab.categorical`
  holds its configuration classes and functions).
- :class:`Bandit`: the finite-group (K+M)-mode bandit of G²RPO (SPEC C7): noisy verifier, any
  advantage rule of :mod:`simplexlab.shaping` by name (:data:`METHODS`), optax optimizers; its
  ensemble mean follows the mean-field ODEs of :mod:`simplexlab.meanfield`.
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
- :func:`verify_schedule`: checks a G²RPO :class:`~simplexlab.shaping.GainSchedule` (flip,
  neutrality, bounded bad bonus, reached ``L_y``, bandit vs ODE) before training;
  :func:`save_schedule` / :func:`load_schedule` write and read it with its verification (JSON;
  a failed verification is refused unless ``force=True``).

Batches of runs (grids over parameters and seeds, sharded, chunked, resumable) are the job of
:mod:`simplexlab.sweep`, which holds what it needs to know about each simulator beyond this
protocol (batching, memory per run, output dims, bucketing) in its adapters
(:class:`simplexlab.sweep.SweepAdapter`).
"""

from ._bandit import METHODS, Bandit, BanditMetrics, BanditState
from ._categorical import Categorical
from ._classifier import ClassifierMetrics, ClassifierState, SoftmaxClassifier
from ._product import Product, ProductMetrics, ProductState
from ._protocol import AbstractSimulator, WithDtype, trajectory
from ._sampler import counts_from_weights, sample_counts
from ._twostage import TwoStage, TwoStageMetrics, TwoStageState
from ._verify import (
    ScheduleReport,
    bad_bonus_growth,
    load_schedule,
    load_schedule_config,
    save_schedule,
    verify_schedule,
)

#: Simulators by name, for sweep configuration files.
SIMULATORS = {Categorical.name: Categorical, Bandit.name: Bandit,
              SoftmaxClassifier.name: SoftmaxClassifier, Product.name: Product,
              TwoStage.name: TwoStage}

__all__ = [
    "METHODS",
    "SIMULATORS",
    "AbstractSimulator",
    "WithDtype",
    "Bandit",
    "BanditMetrics",
    "BanditState",
    "Categorical",
    "ClassifierMetrics",
    "ClassifierState",
    "Product",
    "ProductMetrics",
    "ProductState",
    "ScheduleReport",
    "SoftmaxClassifier",
    "TwoStage",
    "TwoStageMetrics",
    "TwoStageState",
    "bad_bonus_growth",
    "counts_from_weights",
    "load_schedule",
    "load_schedule_config",
    "sample_counts",
    "save_schedule",
    "trajectory",
    "verify_schedule",
]
