"""The (p, y, z) state of G²RPO §3 / App. A.1 and conversions to and from the full policy."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import (
    as_int,
    check_finite,
    check_in_open_unit_interval,
    check_simplex,
    in_open_unit_interval,
    is_concrete,
    on_simplex,
)
from ._closed_forms import concentration

__all__ = ["State", "check_state", "make_state", "state_from_policy"]


class State(eqx.Module):
    r"""Mean-field state: total bad mass ``p``, within-good ``y ∈ Δ^{K−1}``, within-bad
    ``z ∈ Δ^{M−1}`` (G²RPO eq. 1); the policy is ``P = ((1−p) y, p z)`` (eq. 7).

    Also used for time derivatives of the state (then ``y``, ``z`` sum to 0, not 1), so no
    validation happens here: use :func:`make_state` at the API boundary.
    Leading batch axes are allowed: ``p`` has shape ``(*batch,)``, ``y`` ``(*batch, K)``.
    """

    #: total bad mass ``p ∈ (0, 1)``, shape ``(*batch,)``
    p: jnp.ndarray
    #: within-good composition ``y ∈ Δ^{K−1}``, shape ``(*batch, K)``
    y: jnp.ndarray
    #: within-bad composition ``z ∈ Δ^{M−1}``, shape ``(*batch, M)``
    z: jnp.ndarray

    @property
    def K(self) -> int:
        return self.y.shape[-1]

    @property
    def M(self) -> int:
        return self.z.shape[-1]

    @property
    def L_y(self):
        """Within-good concentration ``L_y = ||y||²`` (G²RPO §4)."""
        return concentration(self.y)

    @property
    def L_z(self):
        """Within-bad concentration ``L_z = ||z||²``."""
        return concentration(self.z)

    def policy(self):
        """The full mode policy ``P = ((1−p) y, p z) ∈ Δ^{K+M−1}`` (G²RPO eq. 7)."""
        p = self.p[..., None]
        return jnp.concatenate([(1.0 - p) * self.y, p * self.z], axis=-1)


def make_state(p, y, z) -> State:
    """Build a validated :class:`State`.

    Raises ``ValueError`` (eagerly, naming the value) or a runtime error under ``jit`` for:
    ``p`` not finite or outside the open interval (0, 1); ``y``/``z`` empty (K < 1 or M < 1),
    non-finite, negative, or not summing to 1; batch shapes of ``p``, ``y``, ``z`` that disagree.
    """
    return State(*_validated(p, y, z))


def _validated(p, y, z):
    """:func:`make_state`'s arrays: checked, a concrete value as a JAX array of the default
    float (one already, as a checked state's arrays are, kept as it is: nothing to dispatch),
    a traced one as it is."""
    if np.ndim(y) < 1 or np.shape(y)[-1] < 1:
        raise ValueError(f"y must have K >= 1 entries on its last axis; got shape {np.shape(y)}")
    if np.ndim(z) < 1 or np.shape(z)[-1] < 1:
        raise ValueError(f"z must have M >= 1 entries on its last axis; got shape {np.shape(z)}")
    if not (np.shape(p) == np.shape(y)[:-1] == np.shape(z)[:-1]):
        raise ValueError(
            f"batch shapes disagree: p {np.shape(p)}, y {np.shape(y)[:-1]} (+K), "
            f"z {np.shape(z)[:-1]} (+M)"
        )
    dtype = jnp.result_type(float)

    def as_float(a):
        if not is_concrete(a):
            return jnp.asarray(a)
        if isinstance(a, jax.Array) and a.dtype == dtype:
            return a
        return jnp.asarray(a, dtype=float)

    return tuple(map(as_float, _checked(p, y, z)))


def _checked(p, y, z):
    """``(p, y, z)`` through :func:`make_state`'s value checks (the shapes checked already)."""
    if all(map(is_concrete, (p, y, z))) and in_open_unit_interval(np.asarray(p)) \
            and on_simplex(np.asarray(y)) and on_simplex(np.asarray(z)):
        return p, y, z  # a good point: one pass in NumPy
    p = check_finite(p, "p (total bad mass)")
    p = check_in_open_unit_interval(p, "p (total bad mass)")
    return (p, check_simplex(y, "y (within-good composition)"),
            check_simplex(z, "z (within-bad composition)"))


def state_from_policy(P, K: int) -> State:
    """Split a full policy ``P ∈ Δ^{K+M−1}`` (first ``K`` entries good) into ``(p, y, z)``
    (G²RPO eq. 1). Requires ``1 <= K < len(P)`` and ``0 < p < 1``."""
    K = as_int(K, "K (number of good modes)", lower=1)
    P = check_simplex(P, "P (full policy)")
    n = np.shape(P)[-1]
    if not 1 <= K < n:
        raise ValueError(f"need 1 <= K < {n} (= K + M) good modes; got K={K}")
    P = jnp.asarray(P)
    good, bad = P[..., :K], P[..., K:]
    p = bad.sum(-1)
    return make_state(p, good / (1.0 - p)[..., None], bad / p[..., None])


def check_state(state, name: str = "state") -> State:
    """``state`` re-validated as by :func:`make_state` (for functions that take a :class:`State`):
    a ``ValueError`` (or run-time error under ``jit``) for a point off the state space, and for
    anything that is not a :class:`State` at all."""
    if not isinstance(state, State):
        raise ValueError(f"{name} must be a State (build one with make_state(p, y, z)); got "
                         f"{type(state).__name__} {state!r}"[:300])
    leaves = (state.p, state.y, state.z)
    checked = _validated(*leaves)
    # the same arrays (a state of JAX arrays of the default float): the state itself
    return state if all(a is b for a, b in zip(checked, leaves, strict=True)) else State(*checked)
