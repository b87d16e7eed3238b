"""Categorical softmax policy simulator (F-GRPO §5.1, Fig. 4, App. J).

A pure ``(init, step)`` pair over a :class:`SimState` pytree, :func:`run` with ``lax.scan`` and
strided :class:`Metrics` (``Q_pos``, ``M_ret`` of F-GRPO eq. 26, entropy, anchor mass, correct
actions above their initial probability); an exact O(A + N log A) multinomial count sampler
(inverse CDF on a block tree of sequential prefix sums, branch-free search, hashed uniforms);
the count-form surrogate gradient (probability-linear or log-likelihood, mean or sum over the
group) with advantages from :mod:`simplexlab.shaping` and any ``optax`` optimizer. Options for
speed: ``CategoricalConfig(dtype=jnp.float32)`` (faster on CPU, less accurate; float64 stays
the default under x64). :class:`Categorical` is the simulator in the protocol of
:mod:`simplexlab.sim`; batches of runs go through :mod:`simplexlab.sweep`.
"""

from .sim import CATEGORICAL_ADVANTAGES as ADVANTAGES
from .sim import (
    OPTIMIZERS,
    Categorical,
    CategoricalConfig,
    CategoricalPolicy,
    action_advantages,
    count_gradient,
    count_weights,
    sample_counts,
)
from .sim import CategoricalMetrics as Metrics
from .sim import CategoricalState as SimState
from .sim import categorical_init as init
from .sim import categorical_metrics as metrics
from .sim import categorical_run as run
from .sim import categorical_step as step

__all__ = [
    "ADVANTAGES",
    "OPTIMIZERS",
    "Categorical",
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
    "sample_counts",
    "step",
]
