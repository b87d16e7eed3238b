r"""Bonus-to-drift geometry of GRPO on the simplex (G²RPO App. A.2, B, D.1).

Two layers, which the test suite compares against each other:

* **generic machinery** — the softmax Jacobian ``J(P) = Diag(P) − P Pᵀ``, the logit drift
  ``η J(P) A``, the probability drift ``η J(P)² (A + B)`` (eq. 31) for *any* advantage/bonus
  vector, and the first-order push-forward of a full-vector drift ``ΔP`` to ``(Δp, Δy, Δz)``
  (quotient rule, eq. 15);
* **closed forms** — the collision operator ``C_x(u)`` (eq. 38), the centered good/bad bonus
  drifts of Lemma B.3 / Corollary B.4 (eqs. 33–37), the block-uniform drift (39) and the
  bad-mass drift of Lemma D.1 (eq. 52).

Everything is a pure function that broadcasts over leading batch axes and jits/vmaps.
Drifts are per unit step (``E[Δ·]``), i.e. the physical-time mean-field rates ``d/dt``.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from .._checks import as_int, check, check_finite, check_number, check_simplex, is_concrete, xp
from .._types import Array, Float, Logits, Policy, ScalarLike, Simplex
from ._closed_forms import _eta, _p, _verifier, collision_field, concentration
from ._state import State, check_state
from ._verifier import Verifier

__all__ = [
    "alignment_defect",
    "bad_mass_drift",
    "baseline_advantages",
    "block_advantages",
    "block_uniform_drift",
    "centered_bad_bonus_drift",
    "centered_good_bonus_drift",
    "collision_operator",
    "grpo_drift",
    "logit_drift",
    "noncollinearity_witness",
    "probability_drift",
    "push_forward",
    "softmax_jacobian",
]


# --------------------------------------------------------------------------- validation


def _check_last_axis(u, x, u_name: str, x_name: str) -> None:
    check_number(u, u_name)
    if np.shape(u)[-1:] != np.shape(x)[-1:]:
        raise ValueError(
            f"{u_name} must have the same last-axis length as {x_name}: "
            f"got shapes {np.shape(u)} and {np.shape(x)}")


def _vector(u, x, u_name: str, x_name: str):
    """A finite vector ``u`` with the last-axis length of ``x``, as a JAX array."""
    _check_last_axis(u, x, u_name, x_name)
    return jnp.asarray(check_finite(u, u_name))


def _simplex(x, name: str):
    x = check_simplex(x, name)
    return jnp.asarray(x, dtype=float) if is_concrete(x) else jnp.asarray(x)


def _jac_action(P, v):
    r"""``J(P) v = P ⊙ (v − ⟨P, v⟩ 1)`` (G²RPO §D.1), without forming the matrix."""
    return P * (v - jnp.sum(P * v, axis=-1, keepdims=True))


# --------------------------------------------------------------------------- generic machinery


def softmax_jacobian(P: Policy) -> Float[Array, "*batch n n"]:
    r"""Softmax Jacobian ``J(P) = Diag(P) − P Pᵀ`` (G²RPO App. A.2, Lemma A.2), shape
    ``(*batch, n, n)``. ``P`` must lie on the simplex (last axis)."""
    P = _simplex(P, "P (policy)")
    return jnp.eye(P.shape[-1], dtype=P.dtype) * P[..., None, :] - P[..., :, None] * P[..., None, :]


def logit_drift(P: Policy, A: Float[Array, "*batch n"], eta: ScalarLike = 1.0) -> Logits:
    r"""Expected logit update ``E[Δθ] = η J(P) A`` (G²RPO App. A.2, Rad et al. Prop. C.1).

    ``A`` is the arm-wise (pseudo-)advantage vector, same last-axis length as ``P``."""
    P = _simplex(P, "P (policy)")
    A = _vector(A, P, "A (advantages)", "P (policy)")
    return jnp.asarray(_eta(eta))[..., None] * _jac_action(P, A)


def probability_drift(P: Policy, A: Float[Array, "*batch n"],
                      B: Float[Array, "*batch n"] | None = None,
                      eta: ScalarLike = 1.0) -> Simplex:
    r"""First-order probability drift ``E[ΔP] = η J(P)² (A + B)`` (G²RPO eq. 31 / 35).

    ``B`` (optional) is the bonus vector; ``J(P)² 1 = 0`` makes a global constant invisible
    (Lemma B.1)."""
    P = _simplex(P, "P (policy)")
    v = _vector(A, P, "A (advantages)", "P (policy)")
    if B is not None:
        v = v + _vector(B, P, "B (bonus)", "P (policy)")
    return jnp.asarray(_eta(eta))[..., None] * _jac_action(P, _jac_action(P, v))


def push_forward(state: State, dP) -> State:
    r"""First-order push-forward of a full-vector drift ``ΔP = (ΔP_good, ΔP_bad)`` to the block
    coordinates (G²RPO eq. 15):

    ``Δp = Σ_m ΔP_{b_m}``, ``Δy = (ΔP_good + y Δp)/(1−p)``, ``Δz = (ΔP_bad − z Δp)/p``.

    Returns a :class:`State` holding the drift ``(Δp, Δy, Δz)``. Works for any ``ΔP`` (not only
    GRPO drifts); ``Σ Δz = 0`` always and ``Σ Δy = Σ ΔP/(1−p)``, so both are tangent when
    ``Σ ΔP = 0``.
    """
    state = check_state(state)
    K, M = state.K, state.M
    check_number(dP, "dP (drift of the full policy)")
    if np.shape(dP)[-1:] != (K + M,):
        raise ValueError(f"dP must have K + M = {K + M} entries on its last axis (K={K}, M={M}); "
                         f"got shape {np.shape(dP)}")
    dP = jnp.asarray(check_finite(dP, "dP (drift of the full policy)"))
    p = state.p[..., None]
    dp = jnp.sum(dP[..., K:], axis=-1)
    dy = (dP[..., :K] + state.y * dp[..., None]) / (1.0 - p)
    dz = (dP[..., K:] - state.z * dp[..., None]) / p
    return State(dp, dy, dz)


def block_advantages(p, verifier: Verifier | None = None):
    r"""Block advantages of group-normalised noisy GRPO (G²RPO App. A.2):
    ``a_g = J p/σ(p)``, ``a_b = −J (1−p)/σ(p)`` (so ``Δr = a_b − a_g = −J/σ``); ``p ∈ (0, 1)``."""
    verifier = _verifier(verifier)
    p = _p(p)
    s = verifier.reward_std(p)
    return verifier.J * p / s, -verifier.J * (1.0 - p) / s


def baseline_advantages(state: State, verifier: Verifier | None = None):
    r"""Full advantage vector ``A = (a_g 1_K, a_b 1_M)`` (block symmetry, G²RPO App. A.2)."""
    state = check_state(state)
    a_g, a_b = block_advantages(state.p, verifier)
    return jnp.concatenate([jnp.broadcast_to(a_g[..., None], state.y.shape),
                            jnp.broadcast_to(a_b[..., None], state.z.shape)], axis=-1)


def grpo_drift(state: State, bonus=None, *, eta=1.0, verifier: Verifier | None = None,
               advantages: bool = True) -> State:
    r"""Generic first-order GRPO drift in block coordinates: ``η J(P)² (A + B)`` (eq. 31) with
    the noisy-verifier block advantages (App. A.2), pushed to ``(p, y, z)`` by eq. (15).

    ``bonus`` is the full ``(K + M)`` bonus vector (or ``None``). With ``advantages=False`` only
    the bonus part ``η J(P)² B`` is returned. This is the reference every closed form (19)–(21),
    (33)–(39), (45)–(46), (52), (56) is tested against.
    """
    state = check_state(state)
    P = state.policy()
    A = baseline_advantages(state, verifier) if advantages else jnp.zeros_like(P)
    if bonus is not None:
        A = A + _vector(bonus, P, "bonus (length K + M)", "the policy")
    return push_forward(state, jnp.asarray(_eta(eta))[..., None]
                        * _jac_action(P, _jac_action(P, A)))


# --------------------------------------------------------------------------- closed forms


def collision_operator(x, u):
    r"""Collision operator ``C_x(u) = x ⊙ (x ⊙ u) − ⟨x, x ⊙ u⟩ x`` (G²RPO eq. 38).

    ``Σ_i C_x(u)_i = 0`` on the simplex; ``C_x(1) = V(x)`` and, for the centered reciprocal
    bonus (40), ``C_x(B) = −a V(x)`` (Lemma B.6)."""
    x = _simplex(x, "x (within-block composition)")
    xu = x * _vector(u, x, "u (within-block bonus)", "x")
    return x * xu - jnp.sum(x * xu, axis=-1, keepdims=True) * x


def centered_good_bonus_drift(state: State, good_bonus, eta=1.0) -> State:
    r"""Lemma B.3: drift of a y-centered good-only bonus (``B_b = 0``, ``Σ y_j B_j = 0``),
    eqs. (33)–(34):

    ``E[Δy] = η (1−p) C_y(B_g)``, ``E[Δp] = −η p (1−p)² Σ_j y_j² B_j``, ``E[Δz] = 0``.

    The centering is an assumption of the lemma and is *not* enforced here (for a non-centered
    bonus use :func:`grpo_drift`)."""
    state = check_state(state)
    good_bonus = _vector(good_bonus, state.y, "good_bonus (length K)", "y")
    p, eta = state.p, jnp.asarray(_eta(eta))
    dy = (eta * (1.0 - p))[..., None] * collision_operator(state.y, good_bonus)
    S = jnp.sum(state.y**2 * good_bonus, axis=-1)
    return State(-eta * p * (1.0 - p) ** 2 * S, dy, jnp.zeros_like(state.z))


def centered_bad_bonus_drift(state: State, bad_bonus, eta=1.0) -> State:
    r"""Corollary B.4: drift of a z-centered bad-only bonus ``C(z)`` (``B_j = 0``,
    ``Σ z_m C_m = 0``), eqs. (36)–(37):

    ``E[Δz] = η p C_z(C)``, ``E[Δp] = +η p² (1−p) Σ_m z_m² C_m``, ``E[Δy] = 0``."""
    state = check_state(state)
    bad_bonus = _vector(bad_bonus, state.z, "bad_bonus (length M)", "z")
    p, eta = state.p, jnp.asarray(_eta(eta))
    dz = (eta * p)[..., None] * collision_operator(state.z, bad_bonus)
    S = jnp.sum(state.z**2 * bad_bonus, axis=-1)
    return State(eta * p**2 * (1.0 - p) * S, jnp.zeros_like(state.y), dz)


def block_uniform_drift(state: State, c_g, c_b, eta=1.0) -> State:
    r"""Block-uniform bonus ``B = (c_g 1_K, c_b 1_M)``, G²RPO eq. (39):

    ``E[Δy] = η p(1−p)(c_g − c_b) V(y)``, ``E[Δz] = η p(1−p)(c_b − c_g) V(z)``,
    ``E[Δp] = η [p(1−p)]² (L_y + L_z)(c_b − c_g)``.

    With ``c_g = a_g``, ``c_b = a_b`` (:func:`block_advantages`) this is the baseline GRPO drift
    (19)–(21)."""
    state = check_state(state)
    p, eta = state.p, jnp.asarray(_eta(eta))
    pq = p * (1.0 - p)
    d = jnp.asarray(check_finite(c_g, "c_g")) - jnp.asarray(check_finite(c_b, "c_b"))
    return State(-eta * pq**2 * (state.L_y + state.L_z) * d,
                 (eta * pq * d)[..., None] * collision_field(state.y),
                 (-eta * pq * d)[..., None] * collision_field(state.z))


def bad_mass_drift(state: State, good_bonus, bad_bonus, eta=1.0):
    r"""Lemma D.1, G²RPO eq. (52): bonus-induced bad-mass drift for
    ``B = (B_1, …, B_K, B_b, …, B_b)``:

    ``E[Δp] = η p (1−p)² [−S + m1((1−p) L_y − p L_z) + p B_b (L_y + L_z)]``,
    ``m1 = Σ y_j B_j``, ``S = Σ y_j² B_j`` (no centering assumed). The neutralizer that zeroes it
    is :func:`simplexlab.theory.neutralizer` (53)."""
    state = check_state(state)
    good_bonus = _vector(good_bonus, state.y, "good_bonus (length K)", "y")
    bad_bonus = check_finite(bad_bonus, "bad_bonus (B_b)")
    eta = _eta(eta)
    p, y, Ly, Lz = state.p, state.y, state.L_y, state.L_z
    m1 = jnp.sum(y * good_bonus, axis=-1)
    S = jnp.sum(y * y * good_bonus, axis=-1)
    return jnp.asarray(eta) * p * (1.0 - p) ** 2 * (
        -S + m1 * ((1.0 - p) * Ly - p * Lz) + p * jnp.asarray(bad_bonus) * (Ly + Lz))


# --------------------------------------------------------------------------- Theorem B.8


def alignment_defect(x, u):
    r"""Relative distance of ``C_x(u)`` from the line spanned by ``V(x)`` (0 iff collinear,
    the condition (41) of Theorem B.8): ``||C − (⟨C,V⟩/⟨V,V⟩) V|| / ||C||``.

    Returns 0 where ``C_x(u) = 0`` (up to round-off: ``||C||`` within 1000 ulps of the size of
    its two terms, ``||x ⊙ (x ⊙ u)|| + |⟨x, x ⊙ u⟩| ||x||``, as for ``u = c/x``, whose drift
    ``C = 0 · V`` is the rescaling α = 0) and ``||C||`` where ``V(x) = 0`` but ``C ≠ 0``."""
    C = collision_operator(x, u)
    xa = jnp.asarray(x, dtype=C.dtype)
    V = collision_field(xa)
    vv = concentration(V)
    coef = jnp.where(vv > 0, jnp.sum(C * V, axis=-1) / jnp.where(vv > 0, vv, 1.0), 0.0)
    r = jnp.sqrt(concentration(C - coef[..., None] * V))
    nc = jnp.sqrt(concentration(C))
    xu = xa * jnp.asarray(u, dtype=C.dtype)
    size = (jnp.sqrt(concentration(xa * xu))
            + jnp.abs(jnp.sum(xa * xu, axis=-1)) * jnp.sqrt(concentration(xa)))
    noise = 1e3 * jnp.finfo(C.dtype).eps * size
    return jnp.where(nc > noise, r / jnp.where(nc > noise, nc, 1.0), 0.0)


def noncollinearity_witness(f: Callable, n: int, *, seed: int = 0, n_points: int = 512,
                            min_entry: float = 1e-3):
    r"""Deterministic search (seeded) for a simplex point where the coordinate-wise bonus
    ``B_i = f(x_i)`` violates (41): returns ``(x, defect)`` maximising :func:`alignment_defect`
    over Dirichlet points of ``Δ^{n−1}`` (Theorem B.8, essential uniqueness; ``n >= 3``)."""
    if not callable(f):
        raise ValueError(f"f (the coordinate-wise bonus s -> B(s)) must be callable; got {f!r}")
    n = as_int(n, "n (simplex dimension + 1)")
    if n < 3:
        raise ValueError(
            f"Theorem B.8 needs n >= 3 (every bonus is collinear for n <= 2); got n={n}")
    n_points = as_int(n_points, "n_points", lower=1)
    check(min_entry, lambda a: ~xp.isfinite(a) | (a < 0) | (a * n >= 1),
          f"min_entry must be finite and in [0, 1/n) = [0, {1 / n:.4g})")
    rng = np.random.default_rng(seed)
    x = rng.dirichlet(np.ones(n), size=n_points)
    x = np.maximum(x, min_entry)
    x = x / x.sum(-1, keepdims=True)
    d = np.asarray(alignment_defect(x, f(jnp.asarray(x))))
    i = int(np.argmax(d))
    return x[i], float(d[i])
