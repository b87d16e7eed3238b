r"""Maths behind the phase-portrait and regime-map figures (G²RPO App. A.3, §D.6).

- :func:`bad_mass_envelopes`: Corollary A.10's outer envelopes of ``p(τ)`` under GRPO;
- :func:`hitting_time_bracket`: Corollary A.10's bracket of the internal time at which ``p``
  reaches a target;
- :func:`within_good_field`: ``y ↦ dy/dτ`` of any system at fixed ``(p, z)`` (the field the
  ternary portraits stream);
- :func:`point_with_concentration`: points of the simplex with a given ``‖x‖²``;
- :func:`neutralized_inner_coefficient`: the coefficient ``a`` of ``dy/dτ = a V(y)`` of the
  schedule-A neutralized system (eq. 57 / 63) at given ``(λ̃, L_y, L_z)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import is_int
from ._fields import AbstractDynamics, Neutralized
from ._gains import ScheduleA
from ._state import State
from ._verifier import Verifier

__all__ = [
    "bad_mass_envelopes",
    "hitting_time_bracket",
    "neutralized_inner_coefficient",
    "point_with_concentration",
    "within_good_field",
]


def bad_mass_envelopes(tau, p0, K: int, M: int):
    r"""Corollary A.10 (G²RPO): under GRPO in internal time,

    ``1 / (1 + (1−p0)/p0 · e^{2τ}) ≤ p(τ) ≤ 1 / (1 + (1−p0)/p0 · e^{(1/K + 1/M) τ})``.

    Returns ``(lower, upper)`` broadcast over ``tau`` (NumPy)."""
    tau = np.asarray(tau, dtype=float)
    p0 = float(p0)
    if not 0.0 < p0 < 1.0:
        raise ValueError(f"p0 must be in (0, 1); got {p0}")
    for name, v in (("K", K), ("M", M)):
        if not is_int(v) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {v!r}")
    if np.any(tau < 0) or not np.all(np.isfinite(tau)):
        raise ValueError(f"tau must be finite and >= 0; got {tau}")
    odds = (1.0 - p0) / p0
    return (1.0 / (1.0 + odds * np.exp(2.0 * tau)),
            1.0 / (1.0 + odds * np.exp((1.0 / K + 1.0 / M) * tau)))


def hitting_time_bracket(p0, p_star, K: int, M: int):
    r"""Corollary A.10 (G²RPO): under GRPO the internal time ``τ⋆`` at which the bad mass falls
    from ``p0`` to ``p_star`` satisfies

    ``½ log(p0 (1−p⋆) / ((1−p0) p⋆)) ≤ τ⋆ ≤ log(p0 (1−p⋆) / ((1−p0) p⋆)) / (1/K + 1/M)``

    (the logit falls at a rate ``L_y + L_z ∈ [1/K + 1/M, 2]``, eq. 30). Returns ``(lower,
    upper)`` broadcast over ``p0`` and ``p_star`` (NumPy). ``p0, p_star ∈ (0, 1)`` with
    ``p_star ≤ p0``: ``p`` never rises under GRPO (eq. 29), so a larger target is never hit."""
    p0, p_star = np.broadcast_arrays(np.asarray(p0, dtype=float),
                                     np.asarray(p_star, dtype=float))
    for name, v in (("p0", p0), ("p_star", p_star)):
        if not np.all(np.isfinite(v)) or np.any((v <= 0.0) | (v >= 1.0)):
            raise ValueError(f"{name} must be in (0, 1); got {v}")
    if np.any(p_star > p0):
        raise ValueError(f"p_star must be <= p0 (p decreases under GRPO, eq. 29); got p0={p0}, "
                         f"p_star={p_star}")
    for name, v in (("K", K), ("M", M)):
        if not is_int(v) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {v!r}")
    drop = np.log(p0 / (1.0 - p0)) - np.log(p_star / (1.0 - p_star))
    return drop / 2.0, drop / (1.0 / K + 1.0 / M)


def within_good_field(dynamics: AbstractDynamics, p, z):
    r"""``(f, batched)``: ``f(y)`` is ``dy/dτ`` of ``dynamics`` at fixed bad mass ``p`` and
    within-bad composition ``z`` (JAX, one point); ``batched(Y)`` evaluates it over any leading
    axes of ``Y`` (NumPy in, NumPy out), for streamlines on the simplex."""
    p = jnp.asarray(p, dtype=float)
    z = jnp.asarray(z, dtype=float)

    def f(y):
        return dynamics.inner_vector_field(0.0, State(p, y, z)).y

    def batched(Y):
        Y = jnp.asarray(Y, dtype=float)
        flat = Y.reshape(-1, Y.shape[-1])
        return np.asarray(jax.vmap(f)(flat)).reshape(Y.shape)

    return f, batched


def point_with_concentration(L, n: int):
    r"""Points ``x ∈ Δ^{n−1}`` with ``‖x‖² = L`` (batched over ``L ∈ [1/n, 1]``):
    ``x = (1 − t) u + t e_1`` with ``u`` uniform and ``t = sqrt((L − 1/n)/(1 − 1/n))``
    (``‖x‖² = 1/n + t² (1 − 1/n)``). NumPy, shape ``L.shape + (n,)``."""
    if not is_int(n) or n < 2:
        raise ValueError(f"n must be an integer >= 2; got {n!r}")
    L = np.asarray(L, dtype=float)
    if np.any(L < 1.0 / n - 1e-12) or np.any(L > 1.0 + 1e-12) or not np.all(np.isfinite(L)):
        raise ValueError(f"L must be in [1/n, 1] = [{1.0 / n:.6g}, 1]; got {L}")
    t = np.sqrt(np.clip(L - 1.0 / n, 0.0, None) / (1.0 - 1.0 / n))
    x = np.repeat(((1.0 - t) / n)[..., None], n, axis=-1)
    x[..., 0] += t
    return x


def neutralized_inner_coefficient(K: int, gain, L_y, L_z, *, p=0.3, verifier=None,
                                  M: int = 64):
    r"""The coefficient ``a`` of ``dy/dτ = a V(y)`` of the schedule-A neutralized system
    (G²RPO eq. 57 / 63, ``a = 1 − λ̃ ρ(y, z)``) with ``λ̃ ≡ gain``, read from the mean-field
    field :meth:`~simplexlab.theory.Neutralized.inner_rates` at points ``y ∈ Δ^{K−1}``,
    ``z ∈ Δ^{M−1}`` of the given concentrations (``L_z ≥ 1/M``: ``M`` sets the smallest
    reachable ``L_z``). Broadcast over ``gain``, ``L_y``, ``L_z``; NumPy out."""
    gain, L_y, L_z = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (gain, L_y, L_z)))
    y, z = point_with_concentration(L_y, K), point_with_concentration(L_z, M)
    ver = Verifier() if verifier is None else verifier

    def one(g, y, z):
        s = State(jnp.asarray(p, dtype=float), y, z)
        return Neutralized(ScheduleA(g), verifier=ver).inner_rates(0.0, s).a_y

    out = jax.jit(jax.vmap(one))(jnp.asarray(gain.ravel()), jnp.asarray(y.reshape(-1, K)),
                                 jnp.asarray(z.reshape(-1, M)))
    return np.asarray(out).reshape(gain.shape)
