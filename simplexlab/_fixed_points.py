r"""Fixed points of within-block simplex fields and their stability.

Stability is read from the eigenvalues of the field's Jacobian restricted to the tangent space
of the simplex, ``{v : Σ v = 0}`` (the whole simplex, so a face point's transverse directions
count): all real parts ``< −tol`` → ``"sink"``, all ``> tol`` → ``"source"``, both signs →
``"saddle"``, any ``|Re| ≤ tol`` → ``"non-hyperbolic"``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["FixedPoint", "classify", "tangent_basis", "tangent_jacobian", "uniform_on_support"]


class FixedPoint(NamedTuple):
    point: np.ndarray
    support: tuple[int, ...]
    eigenvalues: np.ndarray
    kind: str


def tangent_basis(n: int) -> np.ndarray:
    """Orthonormal basis (``n × (n−1)``) of ``{v ∈ R^n : Σ v = 0}``."""
    q, _ = np.linalg.qr(np.eye(n) - 1.0 / n)
    # the first n−1 columns of the QR of the centering projector span its range
    basis = q[:, : n - 1]
    return basis


def tangent_jacobian(field: Callable, x) -> np.ndarray:
    """``Qᵀ (∂f/∂x) Q`` with ``Q`` an orthonormal tangent basis: the linearisation of
    ``dx/dτ = f(x)`` on the simplex at ``x``."""
    x = jnp.asarray(x, dtype=float)
    n = x.shape[-1]
    if n < 2:
        return np.zeros((0, 0))
    Jf = np.asarray(jax.jacfwd(field)(x))
    Q = tangent_basis(n)
    P = np.eye(n) - 1.0 / n  # project the image onto the tangent space too
    return Q.T @ P @ Jf @ Q


def classify(field: Callable, x, *, tol: float = 1e-9) -> tuple[np.ndarray, str]:
    """Eigenvalues of :func:`tangent_jacobian` and the label sink/source/saddle/non-hyperbolic."""
    eig = np.linalg.eigvals(tangent_jacobian(field, x))
    re = eig.real
    if eig.size == 0 or np.any(np.abs(re) <= tol):
        kind = "non-hyperbolic"
    elif np.all(re < 0):
        kind = "sink"
    elif np.all(re > 0):
        kind = "source"
    else:
        kind = "saddle"
    return eig, kind


def uniform_on_support(n: int, field: Callable | None = None, *, tol: float = 1e-9
                       ) -> list[FixedPoint]:
    """All points uniform on a support (the equilibria ``E_m`` of ``c V``, G²RPO Prop. A.5),
    classified under ``field`` (default: the collision field ``V``)."""
    from ._closed_forms import collision_field

    field = collision_field if field is None else field
    out = []
    for m in range(1, n + 1):
        for support in itertools.combinations(range(n), m):
            x = np.zeros(n)
            x[list(support)] = 1.0 / m
            eig, kind = classify(field, x, tol=tol)
            out.append(FixedPoint(x, support, eig, kind))
    return out
