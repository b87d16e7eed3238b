"""The torch side of simplexlab: a bridge and a small driver for LLM training loops.

The bridge (:mod:`simplexlab.llm._bridge`):

- :func:`to_jax`, :func:`to_torch` -- zero-copy DLPack exchange of CPU (and, where both libraries
  have one, GPU) buffers; the dtype, device, gradient, layout and donation rules are in the
  bridge module's docstring (:data:`DTYPES`: float32, float64, int32, int64, bool; the 64-bit
  types only with JAX's x64 mode).
- :func:`advantages` -- every advantage rule of :func:`simplexlab.shaping.advantages` by name
  (GRPO, G²RPO with its gain schedule, F-GRPO, ...) on a torch loop's ``(P, G)`` groups, computed
  by that one JAX implementation under a cached ``jax.jit``; returns a torch tensor.
- :func:`group_stats` -- G²RPO's plug-in group statistics (p̂, ŷ, K̂, L̂_y, L̂_z, gain, bonuses;
  G2 Alg. 1) as torch tensors, for logging (:data:`STATS` names them).

The driver: a toy task (:class:`ArithmeticTask`), a tiny model (:func:`tiny_model`,
:func:`load_model`), the training loop (:class:`TrainConfig`, :func:`train`, :func:`warm_start`,
:func:`clipped_token_loss`) and the mean-field prediction it is compared with
(:func:`predict`, :func:`fit_time_scale`, :func:`initial_states`).

The adapters: :class:`G2RPOTrainer` (TRL's ``GRPOTrainer`` with the lab's shaping;
built on first use, needs the ``trl`` extra), the verl advantage estimator
(:func:`register_verl`, :class:`VerlEstimator`, :func:`verl_compute_advantage`) and the
reward-side :func:`rarity_bonus` of G2 Listing 1 (:func:`with_rarity_bonus`; verl is imported only
when they run), the reward function that carries mode ids through verl's default trainer in the
reward score (:func:`with_mode_in_score`, :func:`score_with_mode`, :func:`split_scores`), the
Tunix advantage estimators (:func:`register_tunix`, :class:`TunixEstimator`,
:func:`tunix_reward_with_mode`: the lab's JAX rules in Tunix's registry, no bridge; Tunix is
imported only when they are registered), and mode discovery for free text
(:func:`discover_modes`; for a rollouts file, :func:`rollout_modes`).

Importing this package imports torch (``import simplexlab`` never does). It sits beside
:mod:`simplexlab.lab` and imports only the layers below (theory, shaping, sim, sweep,
verify); importing it serves the advantage oracle's torch conventions (``"trl"``, ``"verl"``
of :func:`simplexlab.verify.check_advantages`).
"""

from . import _conventions  # noqa: F401  (the oracle's trl and verl conventions)
from ._bridge import DTYPES, STATS, advantages, group_stats, to_jax, to_torch
from ._driver import (
    DEFAULT_SCHEDULE,
    TrainConfig,
    check_warm_start,
    clipped_token_loss,
    train,
    warm_start,
)
from ._embed import auto_layers, distinct_weights, embed
from ._mode_stats import ModeStats, mode_stats
from ._model import load_model, tiny_model
from ._modes import Modes, discover_modes, rollout_modes, token_f1
from ._prediction import fit_time_scale, initial_states, predict
from ._task import FAMILIES, ArithmeticTask
from ._tunix import TunixEstimator, register_tunix, tunix_reward_with_mode, unregister_tunix
from ._verl import VerlEstimator
from ._verl import compute_advantage as verl_compute_advantage
from ._verl import register as register_verl
from ._verl import unregister as unregister_verl
from ._verl_reward import rarity_bonus, with_rarity_bonus
from ._verl_scores import MODE_SCORE_BASE, score_with_mode, split_scores, with_mode_in_score


def __getattr__(name):
    # the TRL adapter is built on first use (importing simplexlab.llm needs no TRL)
    if name == "G2RPOTrainer":
        from . import _trl

        return _trl.G2RPOTrainer
    raise AttributeError(f"module 'simplexlab.llm' has no attribute {name!r}")

__all__ = [
    "DEFAULT_SCHEDULE",
    "DTYPES",
    "MODE_SCORE_BASE",
    "FAMILIES",
    "G2RPOTrainer",
    "ModeStats",
    "Modes",
    "STATS",
    "ArithmeticTask",
    "TrainConfig",
    "TunixEstimator",
    "VerlEstimator",
    "advantages",
    "auto_layers",
    "clipped_token_loss",
    "discover_modes",
    "distinct_weights",
    "embed",
    "fit_time_scale",
    "group_stats",
    "initial_states",
    "load_model",
    "mode_stats",
    "predict",
    "rarity_bonus",
    "score_with_mode",
    "split_scores",
    "register_tunix",
    "register_verl",
    "rollout_modes",
    "tiny_model",
    "to_jax",
    "to_torch",
    "token_f1",
    "train",
    "tunix_reward_with_mode",
    "unregister_tunix",
    "unregister_verl",
    "verl_compute_advantage",
    "warm_start",
    "check_warm_start",
    "with_mode_in_score",
    "with_rarity_bonus",
]
