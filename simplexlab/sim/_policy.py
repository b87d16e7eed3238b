r"""What every softmax-policy simulator shares: surrogates, the count-form gradient, optimizers.

A simulator's policy-gradient step ascends ``L = s Σ_j Â_j f(π(a_j))`` over the ``N`` rollouts of
a group (``s = 1/N`` for ``reduction="mean"``, ``1`` for ``"sum"``). Grouping the rollouts by
action, ``w_i = s Σ_{j : a_j = i} Â_j`` (the *count form*), the gradient with respect to the
logits ``z`` of ``π = softmax(z)`` is

- ``surrogate="probability"`` (``f = π``, F-GRPO eq. 7): ``∇ = w ⊙ π − π (w · π)``;
- ``surrogate="log_likelihood"`` (``f = log π``, TS Lemma 1 summed over rollouts; in expectation
  ``J(π) A`` with ``J(π) = Diag(π) − ππᵀ``, G²RPO App. A.2): ``∇ = w − π Σ_i w_i``.

Both are O(A) (:func:`gradient_from_probs`). Optimizers are optax transformations built from a
(possibly traced) rate; :func:`optimizer_init` / :func:`optimizer_update` run them under
standard dtype promotion (optax mixes Python scalars and int32 counters with float arrays).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

__all__ = ["OPTIMIZERS", "REDUCTIONS", "SURROGATES", "default_float", "gradient_from_probs",
           "lookup", "optimizer_init", "optimizer_update"]

SURROGATES = ("probability", "log_likelihood")
REDUCTIONS = ("mean", "sum")

OPTIMIZERS: dict[str, Callable[[Any], optax.GradientTransformation]] = {
    "sgd": optax.sgd, "adam": optax.adam, "adamw": optax.adamw,
    "momentum": lambda lr: optax.sgd(lr, momentum=0.9)}
"""Optimizers by name (``make(optimizer=...)`` of the simulators, sweep configs)."""


def default_float():
    """JAX's default floating dtype (float64 with x64 enabled, else float32)."""
    return jnp.result_type(float)


def lookup(table: dict, value, what: str, who: str):
    """``table[value]`` for a name, ``value`` itself for a callable; a ``ValueError`` naming the
    unknown name and the choices otherwise."""
    if isinstance(value, str):
        if value not in table:
            raise ValueError(f"{who}: unknown {what} {value!r}; choose one of {sorted(table)}")
        return table[value]
    if not callable(value):
        raise ValueError(f"{who}: {what} must be a name in {sorted(table)} or a callable; got "
                         f"{value!r}")
    return value


def gradient_from_probs(p, weights, surrogate: str, weights_sum=None):
    r"""``∇_z L`` of the count-form surrogate from ``π = softmax(z)`` and the weights ``w``
    (module docstring); ``weights_sum``: ``Σ w`` when the caller already has it."""
    if surrogate == "probability":
        return weights * p - p * jnp.sum(weights * p, -1, keepdims=True)
    total = jnp.sum(weights, -1, keepdims=True) if weights_sum is None else weights_sum
    return weights - p * total


def optimizer_init(optimizer: optax.GradientTransformation, params):
    """``optimizer.init(params)`` under standard dtype promotion."""
    with jax.numpy_dtype_promotion("standard"):
        return optimizer.init(params)


def optimizer_update(optimizer: optax.GradientTransformation, updates, opt_state, params):
    """``optimizer.update(...)`` under *standard* dtype promotion (optax transforms mix Python
    scalars and int32 step counters with float arrays, e.g. ``optax.adam``'s ``1 − β^t``, which
    fails under ``jax_numpy_dtype_promotion="strict"``, the test suite's setting); the updates
    are cast to the dtype of ``params``, so the simulator's own numerics stay strict."""
    with jax.numpy_dtype_promotion("standard"):
        upd, state = optimizer.update(updates, opt_state, params)
    upd = jax.tree_util.tree_map(lambda u, p: jnp.asarray(u, p.dtype), upd, params)
    return upd, state
