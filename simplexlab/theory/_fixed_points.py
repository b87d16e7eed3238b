r"""Fixed points of within-block simplex fields and their stability (G²RPO Prop. A.5, Thm. A.7).

A *within-block field* is a callable ``f: Δ^{n−1} → T Δ`` (one block, the others frozen), e.g.
``V``, ``−V``, ``(1 − λ0) V`` (eq. 68) or the schedule-A neutralized y-field (63), whose
coefficient depends on ``L_y`` and can vanish on a whole level set. :func:`block_field` builds one
from any mean-field system; :func:`find_fixed_points` finds the zeros on the interior and on
every face (uniform-on-support candidates plus a damped Gauss–Newton root finder restricted to
each face); :func:`classify` labels them.

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

from .._checks import as_int, check, xp

__all__ = [
    "FixedPoint",
    "block_field",
    "classify",
    "find_fixed_points",
    "support_of",
    "tangent_basis",
    "tangent_jacobian",
    "uniform_on_support",
]


class FixedPoint(NamedTuple):
    """A zero of a within-block field: the point, its support (indices of nonzero entries), the
    eigenvalues of :func:`tangent_jacobian` there and the label from :func:`classify`."""

    point: np.ndarray
    support: tuple[int, ...]
    eigenvalues: np.ndarray
    kind: str


def tangent_basis(n: int) -> np.ndarray:
    """Orthonormal basis (``n × (n−1)``) of ``{v ∈ R^n : Σ v = 0}``."""
    n = as_int(n, "n (dimension)", lower=1)
    q, _ = np.linalg.qr(np.eye(n) - 1.0 / n)
    # the first n−1 columns of the QR of the centering projector span its range
    basis = q[:, : n - 1]
    return basis


def tangent_jacobian(field: Callable, x) -> np.ndarray:
    """``Qᵀ (∂f/∂x) Q`` with ``Q`` an orthonormal tangent basis: the linearisation of
    ``dx/dτ = f(x)`` on the simplex at ``x``."""
    if not callable(field):
        raise ValueError(f"field must be callable; got {field!r}")
    x = jnp.asarray(check(x, lambda a: ~xp.isfinite(a), "x (point) must be finite"),
                    dtype=float)
    if x.ndim != 1:
        raise ValueError(f"x must be one point of shape (n,); got shape {x.shape}")
    n = x.shape[-1]
    if n < 2:
        return np.zeros((0, 0))
    Jf = np.asarray(jax.jacfwd(field)(x))
    Q = tangent_basis(n)
    P = np.eye(n) - 1.0 / n  # project the image onto the tangent space too
    return Q.T @ P @ Jf @ Q


def classify(field: Callable, x, *, tol: float = 1e-9) -> tuple[np.ndarray, str]:
    """Eigenvalues of :func:`tangent_jacobian` and the label sink/source/saddle/non-hyperbolic."""
    check(tol, lambda a: ~xp.isfinite(a) | (a < 0), "tol must be finite and >= 0")
    eig = np.linalg.eigvals(tangent_jacobian(field, x))
    return eig, _label(eig, tol)


def _label(eig: np.ndarray, tol: float) -> str:
    re = eig.real
    if eig.size == 0 or np.any(np.abs(re) <= tol):
        kind = "non-hyperbolic"
    elif np.all(re < 0):
        kind = "sink"
    elif np.all(re > 0):
        kind = "source"
    else:
        kind = "saddle"
    return kind


def uniform_on_support(n: int, field: Callable | None = None, *, tol: float = 1e-9
                       ) -> list[FixedPoint]:
    """All points uniform on a support (the equilibria ``E_m`` of ``c V``, G²RPO Prop. A.5),
    classified under ``field`` (default: the collision field ``V``)."""
    from ._closed_forms import collision_field

    n = as_int(n, "n (simplex dimension + 1)", lower=1)
    if n > 12:
        raise ValueError(f"n = {n} has {2**n - 1} supports to classify; uniform_on_support is "
                         "meant for n <= 12")
    if field is not None and not callable(field):
        raise ValueError(f"field must be callable (x -> dx/dτ); got {field!r}")
    field = collision_field if field is None else field
    out = []
    for m in range(1, n + 1):
        for support in itertools.combinations(range(n), m):
            x = np.zeros(n)
            x[list(support)] = 1.0 / m
            eig, kind = classify(field, x, tol=tol)
            out.append(FixedPoint(x, support, eig, kind))
    return out


def support_of(x, *, tol: float = 1e-9) -> tuple[int, ...]:
    """Indices ``i`` with ``x_i > tol``."""
    return tuple(int(i) for i in np.flatnonzero(np.asarray(x) > tol))


def block_field(dynamics, state, block: str = "y", *, time: str = "inner", t=0.0) -> Callable:
    r"""The within-block field ``x ↦ d(block)/dτ`` (or ``d/dt``) of a mean-field system with the
    other coordinates frozen at ``state`` — e.g. ``block_field(Neutralized(ScheduleA(λ0)), s)`` is
    the y-field (63) ``[1 − λ0 (L_z + 1/K)/(L_y + L_z)] V(y)`` at the frozen ``(p, z)``.
    Batched over leading axes of ``x``; usable by :func:`find_fixed_points` and for plotting."""
    from ._fields import AbstractDynamics
    from ._state import State, check_state

    if block not in ("y", "z"):
        raise ValueError(f"block must be 'y' or 'z'; got {block!r}")
    if time not in ("inner", "physical"):
        raise ValueError(f"time must be 'inner' or 'physical'; got {time!r}")
    if not isinstance(dynamics, AbstractDynamics):
        raise ValueError(f"dynamics must be a mean-field system (GRPO, GoodBonus, Neutralized, "
                         f"...); got {dynamics!r}")
    state = check_state(state)
    vf = dynamics.inner_vector_field if time == "inner" else dynamics.vector_field

    def field(x):
        x = jnp.asarray(x)
        batch = x.shape[:-1]
        p = jnp.broadcast_to(state.p, batch)
        if block == "y":
            z = jnp.broadcast_to(state.z, (*batch, state.z.shape[-1]))
            return vf(t, State(p, x, z)).y
        y = jnp.broadcast_to(state.y, (*batch, state.y.shape[-1]))
        return vf(t, State(p, y, x)).z

    return field


def _newton_solver(field: Callable, n: int, n_iter: int):
    """Compiled, vmapped damped Gauss–Newton on the faces given by 0/1 masks."""

    def one(x0, mask):
        m = jnp.sum(mask)
        Pf = jnp.diag(mask) - jnp.outer(mask, mask) / m  # projector onto the face's tangent space

        def body(_, x):
            r = field(x)
            Jf = jax.jacfwd(field)(x)
            # Levenberg–Marquardt step with a tiny damping: a pseudo-inverse step on the face
            A = Jf @ Pf
            AtA = A.T @ A
            mu = 1e-13 * (1.0 + jnp.trace(AtA))
            d = -Pf @ jnp.linalg.solve(AtA + mu * jnp.eye(n), A.T @ r)
            # fraction-to-boundary: stay in the relative interior of the face
            ratio = jnp.where((d < 0) & (mask > 0), x / jnp.where(d < 0, -d, 1.0), jnp.inf)
            alpha = jnp.minimum(1.0, 0.9 * jnp.min(ratio))
            x = (x + alpha * d) * mask
            return x / jnp.sum(x)

        x = jax.lax.fori_loop(0, n_iter, body, x0)
        return x, jnp.max(jnp.abs(field(x)))

    return jax.jit(jax.vmap(one))


def find_fixed_points(field: Callable, n: int, *, n_starts: int = 6, seed: int = 0,
                      n_iter: int = 40, tol: float = 1e-11, dedupe_tol: float = 1e-7,
                      classify_tol: float = 1e-9, max_faces: int = 1023) -> list[FixedPoint]:
    r"""All zeros of the within-block ``field`` on ``Δ^{n−1}`` found on the interior and on every
    face, classified by :func:`classify`.

    Candidates per face (support ``S``): the uniform point on ``S`` (the equilibria ``E_m`` of any
    ``a(x) V(x)``, Prop. A.5) and ``n_starts`` seeded Dirichlet points of the face, each refined
    by ``n_iter`` damped Gauss–Newton (Levenberg–Marquardt) steps restricted to the face (so
    non-isolated zeros — e.g. where the coefficient of (63) vanishes on a level set of ``L_y`` —
    are reached too; those come out ``"non-hyperbolic"``). Kept: ``max |f| <= tol`` and every
    support entry ``> 1e-8``; points closer than ``dedupe_tol`` are merged. Sorted by support
    size, then support, then point. Deterministic for a given ``seed``.
    """
    if not callable(field):
        raise ValueError(f"field must be callable (x -> dx/dτ on the simplex); got {field!r}")
    if not (isinstance(n, int | np.integer) and not isinstance(n, bool)) or n < 1:
        raise ValueError(f"n (simplex dimension + 1) must be an integer >= 1; got {n!r}")
    n = int(n)
    n_starts = as_int(n_starts, "n_starts", lower=0)
    n_iter = as_int(n_iter, "n_iter", lower=1)
    max_faces = as_int(max_faces, "max_faces", lower=1)
    for name, v in (("tol", tol), ("dedupe_tol", dedupe_tol), ("classify_tol", classify_tol)):
        check(v, lambda a: ~xp.isfinite(a) | (a <= 0), f"{name} must be finite and > 0")
    if 2**n - 1 > max_faces:  # before enumerating them
        raise ValueError(f"n={n} has {2**n - 1} faces > max_faces={max_faces}")
    faces = [s for m in range(1, n + 1) for s in itertools.combinations(range(n), m)]
    if len(faces) > max_faces:
        raise ValueError(f"n={n} has {len(faces)} faces > max_faces={max_faces}")
    rng = np.random.default_rng(seed)
    x0s, masks = [], []
    for s in faces:
        mask = np.zeros(n)
        mask[list(s)] = 1.0
        starts = [mask / len(s)]
        if len(s) > 1:
            for _ in range(n_starts):
                w = np.zeros(n)
                w[list(s)] = rng.dirichlet(np.ones(len(s)))
                starts.append(w)
        x0s += starts
        masks += [mask] * len(starts)
    solver = _newton_solver(field, n, n_iter)
    xs, res = solver(jnp.asarray(np.array(x0s)), jnp.asarray(np.array(masks)))
    xs, res, masks = np.asarray(xs), np.asarray(res), np.array(masks)
    keep = (res <= tol) & np.all((xs > 1e-8) | (masks == 0), axis=-1)
    found: list[np.ndarray] = []
    for x in xs[keep]:
        if not any(np.max(np.abs(x - f)) < dedupe_tol for f in found):
            found.append(x)
    out = []
    if found:
        jac = np.asarray(jax.jit(jax.vmap(jax.jacfwd(field)))(jnp.asarray(np.array(found))))
        Q = tangent_basis(n)
        P = np.eye(n) - 1.0 / n
        for x, Jf in zip(found, jac, strict=True):
            eig = np.linalg.eigvals(Q.T @ P @ Jf @ Q) if n > 1 else np.zeros(0)
            out.append(FixedPoint(x, support_of(x), eig, _label(eig, classify_tol)))
    out.sort(key=lambda fp: (len(fp.support), fp.support, tuple(fp.point)))
    return out
