"""Categorical softmax policy simulator (SPEC C4; F-GRPO §5.1, Fig. 4, App. J).

A pure ``(init, step)`` pair over a :class:`SimState` pytree, :func:`run` with ``lax.scan`` and
strided :class:`Metrics` (``Q_pos``, ``M_ret`` of F-GRPO eq. 26, entropy, anchor mass, correct
actions above their initial probability); an exact O(A + N log A) multinomial count sampler; the
count-form surrogate gradient (probability-linear or log-likelihood, mean or sum over the group)
with advantages from :mod:`simplexlab.shaping` and any ``optax`` optimizer.
"""

from ._categorical import (
    CategoricalConfig,
    CategoricalPolicy,
    Metrics,
    SimState,
    action_advantages,
    count_gradient,
    count_weights,
    init,
    metrics,
    run,
    run_many,
    sample_counts,
    step,
)

__all__ = [
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
