r"""Closed-form building blocks of the G²RPO mean-field theory (one implementation each).

Notation (G²RPO §3, App. A–D): total bad mass ``p``, within-good composition ``y`` (K modes),
within-bad composition ``z`` (M modes), ``L_y = ||y||²``, ``L_z = ||z||²``.
All functions are pure, broadcast over leading batch axes, and jit/vmap.
"""

from __future__ import annotations

import jax.numpy as jnp

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


def concentration(u):
    r"""Within-block concentration ``L = ||u||_2^2`` (G²RPO §4; ``K_eff ≈ 1/L``)."""
    return jnp.sum(u * u, axis=-1)


def collision_field(u):
    r"""Collision field ``V(u) = u ⊙ u − ||u||² u``, G²RPO eq. (3)."""
    return u * u - concentration(u)[..., None] * u


def kappa(p, eta=1.0, verifier: Verifier | None = None):
    r"""Time-rescaling ``κ(p) = η J p(1−p)/σ(p)``, G²RPO eq. (23).

    With a perfect verifier (J = 1) this is ``η sqrt(p(1−p))`` (G²RPO eq. 2).
    """
    verifier = Verifier() if verifier is None else verifier
    return eta * verifier.J * p * (1.0 - p) / verifier.reward_std(p)


def inner_gain(p, gain, verifier: Verifier | None = None):
    r"""Inner-time gain ``λ̃ = σ(p) λ / (J p)``, G²RPO eq. (47)/(59)."""
    verifier = Verifier() if verifier is None else verifier
    return verifier.reward_std(p) * gain / (verifier.J * p)


def reciprocal_bonus(x, gain=1.0):
    r"""Centered reciprocal (anti-collision) bonus ``B_i = λ (1/(n x_i) − 1)``.

    G²RPO eq. (40) (general simplex), (44)/(48) for the good block (``x = y``, ``n = K``).
    """
    n = x.shape[-1]
    return jnp.asarray(gain)[..., None] * (1.0 / (n * x) - 1.0)


def neutralizer(p, y, z, good_bonus):
    r"""Multi-bad neutralizer for an arbitrary good-block bonus, G²RPO eq. (53).

    ``B_b = [S − m1((1−p)L_y − p L_z)] / [p (L_y + L_z)]`` with ``m1 = Σ y_j B_j`` and
    ``S = Σ y_j² B_j``: the block-uniform bad bonus that makes ``E[Δp]_bonus = 0`` (Prop. D.2).
    For a y-centered bonus (m1 = 0) this is eq. (54).
    """
    Ly, Lz = concentration(y), concentration(z)
    m1 = jnp.sum(y * good_bonus, axis=-1)
    S = jnp.sum(y * y * good_bonus, axis=-1)
    return (S - m1 * ((1.0 - p) * Ly - p * Lz)) / (p * (Ly + Lz))


def neutralizer_reciprocal(p, L_y, L_z, K, gain):
    r"""Neutralizer for the reciprocal bonus ``B*``, G²RPO eq. (55):
    ``B_b = λ (1/K − L_y) / (p (L_y + L_z))``."""
    return gain * (1.0 / K - L_y) / (p * (L_y + L_z))


def gain_schedule_a(p, lam0, verifier: Verifier | None = None):
    r"""Schedule A (p-adaptive, constant inner gain ``λ̃ ≡ λ0``): ``λ = λ0 J p / σ(p)``,
    G²RPO eq. (62); with J = 1 this is eq. (50), ``λ0 sqrt(p/(1−p))``."""
    verifier = Verifier() if verifier is None else verifier
    return lam0 * verifier.J * p / verifier.reward_std(p)


def gain_schedule_b(p, L_y, L_z, K, lam0, verifier: Verifier | None = None):
    r"""Schedule B ((p, y, z)-adaptive, constant within-good strength), G²RPO eq. (67):
    ``λ = λ0 (J p / σ(p)) (L_y + L_z) / (L_z + 1/K)``."""
    return gain_schedule_a(p, lam0, verifier) / attenuation(L_y, L_z, K)


def neutralizer_schedule_a(p, L_y, L_z, K, lam0, verifier: Verifier | None = None):
    r"""Neutralizer under schedule A, G²RPO eq. (65): ``λ0 (J/σ) (1/K − L_y)/(L_y + L_z)``."""
    verifier = Verifier() if verifier is None else verifier
    return lam0 * verifier.J / verifier.reward_std(p) * (1.0 / K - L_y) / (L_y + L_z)


def neutralizer_schedule_b(p, L_y, L_z, K, lam0, verifier: Verifier | None = None):
    r"""Neutralizer under schedule B, G²RPO eq. (70): ``λ0 (J/σ) (1/K − L_y)/(L_z + 1/K)``."""
    verifier = Verifier() if verifier is None else verifier
    return lam0 * verifier.J / verifier.reward_std(p) * (1.0 / K - L_y) / (L_z + 1.0 / K)


def attenuation(L_y, L_z, K):
    r"""Attenuation factor ``ρ(y, z) = (L_z + 1/K)/(L_y + L_z) ∈ (0, 1]``, G²RPO §D.6."""
    return (L_z + 1.0 / K) / (L_y + L_z)


def flip_threshold(L_y, L_z, K):
    r"""State-dependent flip threshold ``λ̃_flip = (L_y + L_z)/(L_z + 1/K)``, G²RPO eq. (61).

    Collision is cancelled iff ``λ̃ ρ = 1`` and flipped iff ``λ̃ ρ > 1`` (eq. 60).
    """
    return 1.0 / attenuation(L_y, L_z, K)


def global_flip_gain(K, M):
    r"""Global sufficient gain for schedule A, G²RPO eq. (66): ``K (M+1)/(K+M)``
    (worst case ``L_y = 1``, ``L_z = 1/M``)."""
    return K * (M + 1) / (K + M)
