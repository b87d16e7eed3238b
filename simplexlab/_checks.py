"""Input validation that works both eagerly and under ``jit``/``vmap``.

At the API boundary, concrete (non-traced) inputs are checked with NumPy and a ``ValueError`` naming
the offending value is raised. Traced inputs are checked with :func:`equinox.error_if`, which raises
at run time under ``jit`` and ``vmap`` (never a silent NaN).

Every check returns the (possibly error-wrapped) array, which callers must use in place of the
input so that the runtime check is not dead-code eliminated under ``jit``.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "check",
    "check_finite",
    "check_in_open_unit_interval",
    "check_parameter",
    "check_nonnegative",
    "check_simplex",
    "is_concrete",
]

SIMPLEX_ATOL = 1e-6


def is_concrete(x) -> bool:
    """True when ``x`` holds actual values (not a JAX tracer)."""
    return not isinstance(x, jax.core.Tracer)


def _describe(x) -> str:
    arr = np.asarray(x)
    if arr.size <= 12:
        return np.array2string(arr, precision=6, separator=", ")
    return f"array of shape {arr.shape} (min={np.nanmin(arr):.6g}, max={np.nanmax(arr):.6g})"


def check(
    x,
    bad: Callable[[np.ndarray | jax.Array], np.ndarray | jax.Array],
    message: str,
    *,
    show: bool = True,
):
    """Raise if ``bad(x)`` is true anywhere.

    ``bad`` must work on NumPy and JAX arrays (use ``jnp``-compatible operators only).
    Eagerly: ``ValueError(f"{message}; got {x}")``. Traced: ``eqx.error_if`` with ``message``.
    """
    if is_concrete(x):
        arr = np.asarray(x)
        # evaluate eagerly even inside a jit trace (concrete constants stay concrete)
        with jax.ensure_compile_time_eval():
            flagged = bool(np.any(np.asarray(bad(arr))))
        if flagged:
            raise ValueError(f"{message}; got {_describe(arr)}" if show else message)
        return jnp.asarray(x) if isinstance(x, jax.Array) else x
    return eqx.error_if(x, jnp.any(bad(x)), message)


def check_finite(x, name: str):
    return check(x, lambda a: ~jnp.isfinite(a), f"{name} must be finite")


def check_parameter(x, name: str, *, lower: float | None = None, strict: bool = False):
    """A hyperparameter (gain, rate, exponent): finite and, with ``lower``, ``>= lower``
    (``> lower`` when ``strict``). Used in ``__check_init__`` of configuration modules."""
    if lower is None:
        return check(x, lambda a: ~jnp.isfinite(a), f"{name} must be finite")
    op = ">" if strict else ">="
    return check(
        x,
        lambda a: ~jnp.isfinite(a) | ((a <= lower) if strict else (a < lower)),
        f"{name} must be finite and {op} {lower:g}",
    )


def check_nonnegative(x, name: str):
    return check(x, lambda a: a < 0, f"{name} must be non-negative (probabilities/masses)")


def check_in_open_unit_interval(x, name: str):
    return check(x, lambda a: (a <= 0) | (a >= 1), f"{name} must lie in the open interval (0, 1)")


def check_simplex(x, name: str, *, atol: float = SIMPLEX_ATOL):
    """``x`` (last axis) must be a point of the probability simplex: finite, >= 0, sums to 1."""
    if np.ndim(x) < 1 or np.shape(x)[-1] < 1:
        raise ValueError(f"{name} must have a last axis of length >= 1; got shape {np.shape(x)}")
    x = check_finite(x, name)
    x = check_nonnegative(x, name)
    return check(
        x,
        lambda a: abs(a.sum(-1) - 1.0) > atol,
        f"{name} must lie on the probability simplex (entries sum to 1 within {atol:g})",
    )
