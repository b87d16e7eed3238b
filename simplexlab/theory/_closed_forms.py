r"""Closed-form building blocks of the G²RPO mean-field theory (one implementation each).

Notation (G²RPO §3, App. A–D): total bad mass ``p``, within-good composition ``y`` (K modes),
within-bad composition ``z`` (M modes), ``L_y = ||y||²``, ``L_z = ||z||²``, gain ``λ`` (keyword
``gain``; the base gain ``λ0`` of schedules A/B is ``gain`` too), step size ``η`` (``eta``).
All functions are pure, broadcast over leading batch axes, and jit/vmap.

Each public function validates its arguments (``p ∈ (0, 1)``, ``L_y, L_z ∈ (0, 1]`` with
``L_y ≥ 1/K``, integer ``K, M ≥ 1``, finite gains, points on the simplex): a ``ValueError`` naming
the value eagerly, an ``eqx.error_if`` run-time error under ``jit``. The un-validated kernels
(``_kappa``, ``_gain_schedule_a``, ...) are what the vector fields, the solver and the G²RPO
estimator call inside their loops, where the arguments are internal and already valid.
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import (
    check,
    check_broadcast,
    check_finite,
    check_in_open_unit_interval,
    check_integer_valued,
    check_pair,
    check_simplex,
    is_concrete,
    xp,
)
from .._types import BadSimplex, BatchScalar, GoodSimplex, ScalarLike, Simplex
from ._verifier import Verifier

__all__ = [
    "attenuation",
    "collision_field",
    "concentration",
    "flip_threshold",
    "gain_schedule_a",
    "gain_schedule_b",
    "global_flip_gain",
    "inner_gain",
    "kappa",
    "neutralizer",
    "neutralizer_reciprocal",
    "neutralizer_schedule_a",
    "neutralizer_schedule_b",
    "reciprocal_bonus",
]

_L_TOL = 1e-9  # round-off allowance of the concentration bounds 1/K <= L <= 1


# --------------------------------------------------------------------------- validation


def _verifier(verifier) -> Verifier:
    if verifier is None:
        return Verifier()
    if not isinstance(verifier, Verifier):
        raise ValueError(f"verifier must be a Verifier(delta_fn, delta_fp) or None; "
                         f"got {verifier!r}")
    return verifier if is_concrete(verifier.delta_fn) and is_concrete(verifier.delta_fp) \
        else verifier.checked()


def _p(p):
    p = check_finite(p, "p (total bad mass)")
    return check_in_open_unit_interval(p, "p (total bad mass)")


def _eta(eta):
    return check(eta, lambda a: ~xp.isfinite(a) | (a <= 0),
                 "eta (step size) must be finite and > 0")


def _gain(gain, name="gain"):
    return check_finite(gain, f"{name} (λ)")


def _K(K, name="K (number of good modes)"):
    return check_integer_valued(K, name, lower=1)


def _L(L, name):
    L = check_finite(L, name)
    return check(L, lambda a: (a <= 0) | (a > 1.0 + _L_TOL),
                 f"{name} must be a concentration ||u||² in (0, 1]")


def _LyLzK(L_y, L_z, K):
    L_y = _L(L_y, "L_y (within-good concentration)")
    L_z = _L(L_z, "L_z (within-bad concentration)")
    K = _K(K)
    L_y = check_pair(L_y, K, lambda ly, k: ly * k < 1.0 - _L_TOL,
                     "L_y (within-good concentration) must be >= 1/K (||y||² of K modes): "
                     "(L_y, K)")
    return L_y, L_z, K


def _nonzero_J(x, verifier, what):
    """``x`` with a check attached that ``J ≠ 0`` (an uninformative verifier, possible only with
    ``allow_flipped=True``), for ``what`` that divides by ``J``."""
    with jax.ensure_compile_time_eval():  # concrete for a concrete verifier, even under jit
        J = verifier.J
    return check_pair(x, J, lambda _, j: j == 0,
                      f"{what} divides by J = 1 − delta_fn − delta_fp, which is 0 for this "
                      "verifier: (value, J)")


# --------------------------------------------------------------------------- kernels


def concentration(u: Simplex) -> BatchScalar:
    r"""Within-block concentration ``L = ||u||_2^2`` (G²RPO §4; ``K_eff ≈ 1/L``).

    Plain algebra on any real vector (it is also applied to drifts and to trial points of the
    fixed-point search), so it does not validate its argument."""
    return jnp.sum(u * u, axis=-1)


def collision_field(u: Simplex) -> Simplex:
    r"""Collision field ``V(u) = u ⊙ u − ||u||² u``, G²RPO eq. (3).

    Plain algebra on any real vector (used as a field by :func:`find_fixed_points` and the
    streamline plots, which evaluate it off the simplex), so it does not validate its argument."""
    return u * u - concentration(u)[..., None] * u


def _kappa(p, eta, verifier: Verifier):
    return eta * verifier.J * p * (1.0 - p) / verifier.reward_std(p)


def kappa(p: ScalarLike, eta: ScalarLike = 1.0,
          verifier: Verifier | None = None) -> BatchScalar:
    r"""Time-rescaling ``κ(p) = η J p(1−p)/σ(p)``, G²RPO eq. (23).

    With a perfect verifier (J = 1) this is ``η sqrt(p(1−p))`` (G²RPO eq. 2). Needs
    ``p ∈ (0, 1)`` and a finite ``eta > 0`` (a reversed flow is
    ``GRPO(eta=..., allow_reversed=True).kappa(p)``).
    """
    verifier = _verifier(verifier)
    check_broadcast(p=p, eta=eta)
    return _kappa(_p(p), _eta(eta), verifier)


def _inner_gain(p, gain, verifier: Verifier):
    return verifier.reward_std(p) * gain / (verifier.J * p)


def inner_gain(p: ScalarLike, gain: ScalarLike,
               verifier: Verifier | None = None) -> BatchScalar:
    r"""Inner-time gain ``λ̃ = σ(p) λ / (J p)``, G²RPO eq. (47)/(59). Needs ``p ∈ (0, 1)``, a
    finite ``gain`` and ``J ≠ 0``."""
    verifier = _verifier(verifier)
    check_broadcast(p=p, gain=gain)
    p = _nonzero_J(_p(p), verifier, "inner_gain")
    return _inner_gain(p, _gain(gain), verifier)


def _reciprocal_bonus(x, gain):
    n = x.shape[-1]
    return jnp.asarray(gain)[..., None] * (1.0 / (n * x) - 1.0)


def reciprocal_bonus(x: Simplex, gain: ScalarLike = 1.0) -> Simplex:
    r"""Centered reciprocal (anti-collision) bonus ``B_i = λ (1/(n x_i) − 1)``.

    G²RPO eq. (40) (general simplex), (44)/(48) for the good block (``x = y``, ``n = K``).
    ``x`` must lie on the simplex with every entry ``> 0`` (the bonus of an empty mode is
    infinite); ``gain`` finite."""
    x = check_simplex(x, "x (simplex point)")
    x = check(x, lambda a: a <= 0, "x (simplex point) must be > 0 entrywise (the reciprocal "
              "bonus of an empty mode is infinite)")
    return _reciprocal_bonus(jnp.asarray(x, dtype=float) if is_concrete(x) else x, _gain(gain))


def _neutralizer(p, y, z, good_bonus):
    Ly, Lz = concentration(y), concentration(z)
    m1 = jnp.sum(y * good_bonus, axis=-1)
    S = jnp.sum(y * y * good_bonus, axis=-1)
    return (S - m1 * ((1.0 - p) * Ly - p * Lz)) / (p * (Ly + Lz))


def neutralizer(p: ScalarLike, y: GoodSimplex, z: BadSimplex,
                good_bonus: GoodSimplex) -> BatchScalar:
    r"""Multi-bad neutralizer for an arbitrary good-block bonus, G²RPO eq. (53).

    ``B_b = [S − m1((1−p)L_y − p L_z)] / [p (L_y + L_z)]`` with ``m1 = Σ y_j B_j`` and
    ``S = Σ y_j² B_j``: the block-uniform bad bonus that makes ``E[Δp]_bonus = 0`` (Prop. D.2).
    For a y-centered bonus (m1 = 0) this is eq. (54). ``good_bonus`` has ``y``'s last axis.
    """
    p = _p(p)
    y = check_simplex(y, "y (within-good composition)")
    z = check_simplex(z, "z (within-bad composition)")
    good_bonus = check_finite(good_bonus, "good_bonus")
    if np.shape(good_bonus)[-1:] != np.shape(y)[-1:]:
        raise ValueError(f"good_bonus must have K = {np.shape(y)[-1]} entries (one per good mode, "
                         f"like y); got shape {np.shape(good_bonus)}")
    return _neutralizer(p, jnp.asarray(y), jnp.asarray(z), jnp.asarray(good_bonus))


def _neutralizer_reciprocal(p, L_y, L_z, K, gain):
    return gain * (1.0 / K - L_y) / (p * (L_y + L_z))


def neutralizer_reciprocal(p: ScalarLike, L_y: ScalarLike, L_z: ScalarLike, K: int,
                           gain: ScalarLike) -> BatchScalar:
    r"""Neutralizer for the reciprocal bonus ``B*``, G²RPO eq. (55):
    ``B_b = λ (1/K − L_y) / (p (L_y + L_z))``."""
    check_broadcast(p=p, L_y=L_y, L_z=L_z, K=K, gain=gain)
    L_y, L_z, K = _LyLzK(L_y, L_z, K)
    return _neutralizer_reciprocal(_p(p), L_y, L_z, K, _gain(gain))


def _gain_schedule_a(p, gain, verifier: Verifier):
    return gain * verifier.J * p / verifier.reward_std(p)


def gain_schedule_a(p: ScalarLike, gain: ScalarLike,
                    verifier: Verifier | None = None) -> BatchScalar:
    r"""Schedule A (p-adaptive, constant inner gain ``λ̃ ≡ λ0``): ``λ = λ0 J p / σ(p)``,
    G²RPO eq. (62); with J = 1 this is eq. (50), ``λ0 sqrt(p/(1−p))``. ``gain`` is ``λ0``."""
    verifier = _verifier(verifier)
    check_broadcast(p=p, gain=gain)
    return _gain_schedule_a(_p(p), _gain(gain, "gain"), verifier)


def _attenuation(L_y, L_z, K):
    return (L_z + 1.0 / K) / (L_y + L_z)


def _gain_schedule_b(p, L_y, L_z, K, gain, verifier: Verifier):
    return _gain_schedule_a(p, gain, verifier) / _attenuation(L_y, L_z, K)


def gain_schedule_b(p: ScalarLike, L_y: ScalarLike, L_z: ScalarLike, K: int, gain: ScalarLike,
                    verifier: Verifier | None = None) -> BatchScalar:
    r"""Schedule B ((p, y, z)-adaptive, constant within-good strength), G²RPO eq. (67):
    ``λ = λ0 (J p / σ(p)) (L_y + L_z) / (L_z + 1/K)``. ``gain`` is ``λ0``."""
    verifier = _verifier(verifier)
    check_broadcast(p=p, L_y=L_y, L_z=L_z, K=K, gain=gain)
    L_y, L_z, K = _LyLzK(L_y, L_z, K)
    return _gain_schedule_b(_p(p), L_y, L_z, K, _gain(gain), verifier)


def neutralizer_schedule_a(p: ScalarLike, L_y: ScalarLike, L_z: ScalarLike, K: int,
                           gain: ScalarLike, verifier: Verifier | None = None) -> BatchScalar:
    r"""Neutralizer under schedule A, G²RPO eq. (65): ``λ0 (J/σ) (1/K − L_y)/(L_y + L_z)``.
    ``gain`` is ``λ0``."""
    verifier = _verifier(verifier)
    check_broadcast(p=p, L_y=L_y, L_z=L_z, K=K, gain=gain)
    L_y, L_z, K = _LyLzK(L_y, L_z, K)
    p, gain = _p(p), _gain(gain)
    return gain * verifier.J / verifier.reward_std(p) * (1.0 / K - L_y) / (L_y + L_z)


def neutralizer_schedule_b(p: ScalarLike, L_y: ScalarLike, L_z: ScalarLike, K: int,
                           gain: ScalarLike, verifier: Verifier | None = None) -> BatchScalar:
    r"""Neutralizer under schedule B, G²RPO eq. (70): ``λ0 (J/σ) (1/K − L_y)/(L_z + 1/K)``.
    ``gain`` is ``λ0``."""
    verifier = _verifier(verifier)
    check_broadcast(p=p, L_y=L_y, L_z=L_z, K=K, gain=gain)
    L_y, L_z, K = _LyLzK(L_y, L_z, K)
    p, gain = _p(p), _gain(gain)
    return gain * verifier.J / verifier.reward_std(p) * (1.0 / K - L_y) / (L_z + 1.0 / K)


def attenuation(L_y: ScalarLike, L_z: ScalarLike, K: int) -> BatchScalar:
    r"""Attenuation factor ``ρ(y, z) = (L_z + 1/K)/(L_y + L_z) ∈ (0, 1]``, G²RPO §D.6.
    Needs ``L_y, L_z ∈ (0, 1]``, ``L_y ≥ 1/K`` and an integer ``K ≥ 1``."""
    check_broadcast(L_y=L_y, L_z=L_z, K=K)
    L_y, L_z, K = _LyLzK(L_y, L_z, K)
    return _attenuation(L_y, L_z, K)


def flip_threshold(L_y: ScalarLike, L_z: ScalarLike, K: int) -> BatchScalar:
    r"""State-dependent flip threshold ``λ̃_flip = (L_y + L_z)/(L_z + 1/K)``, G²RPO eq. (61).

    Collision is cancelled iff ``λ̃ ρ = 1`` and flipped iff ``λ̃ ρ > 1`` (eq. 60).
    """
    return 1.0 / attenuation(L_y, L_z, K)


def global_flip_gain(K: int, M: int) -> float:
    r"""Global sufficient gain for schedule A, G²RPO eq. (66): ``K (M+1)/(K+M)``
    (worst case ``L_y = 1``, ``L_z = 1/M``). ``K`` and ``M`` are integers ``≥ 1``."""
    check_broadcast(K=K, M=M)
    K = _K(K)
    M = _K(M, "M (number of bad modes)")
    return K * (M + 1) / (K + M)


#: The un-validated kernels, for callers in other layers whose arguments are internal and valid
#: by construction (the G²RPO estimator evaluates them at clipped plug-in estimates, off the
#: simplex by a known factor): ``unchecked.gain_schedule_a(p, gain, verifier)`` etc. Served to the
#: other layers by :mod:`simplexlab.theory.internal`.
unchecked = SimpleNamespace(
    attenuation=_attenuation,
    gain_schedule_a=_gain_schedule_a,
    gain_schedule_b=_gain_schedule_b,
    inner_gain=_inner_gain,
    kappa=_kappa,
    neutralizer=_neutralizer,
    neutralizer_reciprocal=_neutralizer_reciprocal,
    reciprocal_bonus=_reciprocal_bonus,
)
