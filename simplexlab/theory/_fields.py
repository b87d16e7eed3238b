r"""Mean-field (p, y, z) vector fields of GRPO and G²RPO (G²RPO §3, App. A.2, C, D).

Every field here keeps the within-block shape dynamics collinear with the collision field
``V`` (eq. 3), so a field is fully described by three scalars, its *rates*::

    ẏ = a_y V(y),   ż = a_z V(z),   ṗ = p_dot                       (physical time t)

:meth:`AbstractDynamics.vector_field` assembles ``d(p, y, z)/dt`` from the rates and
:meth:`AbstractDynamics.inner_vector_field` gives ``d(p, y, z)/dτ`` with the internal time
``dτ/dt = κ(p)`` of eq. (24). All are pure functions of ``(t, state)`` with the parameters held
by the module, so they jit and vmap (``eqx.filter_vmap`` over a batch of modules).

The learning rate ``η`` multiplies every term, baseline and bonus (G²RPO eq. 31: the bonus drift is
``η J(P)² B``). App. D.5 writes (56) with ``κ = (J/σ) p(1−p)``, i.e. ``η = 1``; we keep η.
"""

from __future__ import annotations

import abc
from typing import ClassVar, NamedTuple

import equinox as eqx
import jax.numpy as jnp

from .._checks import check, check_finite, float_leaf, xp
from ._closed_forms import _kappa, _neutralizer_reciprocal, collision_field, concentration
from ._gains import AbstractGain
from ._state import State, check_state
from ._verifier import Verifier


def _V(u):
    """``V(u)`` for the integrator: ``u ⊙ u − (||u||²/Σu) u``.

    Equal to the collision field (eq. 3) on the simplex, but keeps ``Σu`` an exact invariant off
    it too. With the literal ``u ⊙ u − ||u||² u`` the normal direction obeys
    ``d(1 − Σu)/dτ = −a L_u (1 − Σu)``, which amplifies round-off exponentially under strong
    anti-collision (``a ≪ 0``, e.g. constant λ as p → 0); with this form it stays at round-off.
    """
    return u * u - (concentration(u) / jnp.sum(u, axis=-1))[..., None] * u


__all__ = [
    "AbstractDynamics",
    "GRPO",
    "GoodBonus",
    "Neutralized",
    "Rates",
    "adaptive_field_j1",
    "good_bonus_field_j1",
]


def _check_eta(eta, owner: str, allow_reversed: bool):
    name = f"{owner}.eta (step size η)"
    if allow_reversed:
        return check(eta, lambda a: ~xp.isfinite(a) | (a == 0),
                     f"{name} must be finite and nonzero (allow_reversed=True)")
    return check(eta, lambda a: ~xp.isfinite(a) | (a <= 0),
                 f"{name} must be finite and > 0 (a negative eta runs the flow backwards in time, "
                 "eta = 0 freezes it; pass allow_reversed=True to study a reversed flow)")


def _check_gain_module(gain, owner: str):
    if not isinstance(gain, AbstractGain):
        raise ValueError(f"{owner}.gain must be a gain schedule (ConstantGain(λ), ScheduleA(λ0), "
                         f"ScheduleB(λ0) or an AbstractGain); got {gain!r}")


class Rates(NamedTuple):
    """``ẏ = a_y V(y)``, ``ż = a_z V(z)``, ``ṗ = p_dot`` (physical time)."""

    a_y: jnp.ndarray
    a_z: jnp.ndarray
    p_dot: jnp.ndarray


class AbstractDynamics(eqx.Module):
    """A mean-field GRPO-type system on (p, y, z). Subclasses implement :meth:`rates`.

    ``eta`` (the step size η) must be finite and ``> 0``: a negative η runs the flow backwards in
    time and ``η = 0`` freezes it (and makes the internal time of eq. 24 undefined). Pass
    ``allow_reversed=True`` to study a reversed flow on purpose (then any finite ``η ≠ 0``).
    """

    eta: float | jnp.ndarray = eqx.field(default=1.0, kw_only=True)
    verifier: Verifier = eqx.field(default_factory=Verifier, kw_only=True)
    allow_reversed: bool = eqx.field(default=False, kw_only=True, static=True)
    #: :func:`solve_ensemble` runs its Runge–Kutta stages in a loop (one copy of the field in
    #: the compiled program instead of one per stage): for fields whose compilation, not their
    #: evaluation, dominates a solve (the finite-group theory's)
    stage_loop: ClassVar[bool] = False

    def __check_init__(self):
        if not isinstance(self.verifier, Verifier):
            raise ValueError(f"{type(self).__name__}.verifier must be a Verifier(delta_fn, "
                             f"delta_fp); got {self.verifier!r}")
        _check_eta(self.eta, type(self).__name__, self.allow_reversed)

    @abc.abstractmethod
    def rates(self, t, state: State) -> Rates:
        """Scalar rates ``(a_y, a_z, p_dot)`` at ``state`` (physical time)."""

    def checked(self) -> AbstractDynamics:
        """This system with run-time parameter checks attached (used by ``solve``)."""
        eta = _check_eta(float_leaf(self.eta), type(self).__name__, self.allow_reversed)
        return eqx.tree_at(lambda d: (d.eta, d.verifier), self, (eta, self.verifier.checked()),
                           is_leaf=lambda x: x is None)

    def kappa(self, p):
        r"""``κ(p) = η J p(1−p)/σ(p)``, G²RPO eq. (23)."""
        return _kappa(p, self.eta, self.verifier)

    def baseline_p_dot(self, state: State):
        r"""Baseline bad-mass drift ``ṗ = −η (J/σ) [p(1−p)]² (L_y + L_z)``, G²RPO eq. (22)."""
        p = state.p
        return -self.kappa(p) * p * (1.0 - p) * (state.L_y + state.L_z)

    def vector_field(self, t, state: State) -> State:
        """``d(p, y, z)/dt`` in physical time."""
        r = self.rates(t, state)
        return State(r.p_dot, r.a_y[..., None] * _V(state.y), r.a_z[..., None] * _V(state.z))

    def inner_vector_field(self, tau, state: State) -> State:
        r"""``d(p, y, z)/dτ`` in the internal time ``dτ/dt = κ(p)`` (G²RPO eq. 24): the
        inner-time forms (25)–(27), (47), (57)–(58), (63)–(64), (68)–(69). ``tau`` is passed to
        time-dependent gains as-is (they see the integration variable)."""
        r = self.rates(tau, state)
        k = self.kappa(state.p)
        return State(r.p_dot / k, (r.a_y / k)[..., None] * _V(state.y),
                     (r.a_z / k)[..., None] * _V(state.z))

    def inner_rates(self, t, state: State) -> Rates:
        """Rates divided by ``κ(p)``: ``dy/dτ = a_y V(y)`` etc."""
        r = self.rates(t, state)
        k = self.kappa(state.p)
        return Rates(r.a_y / k, r.a_z / k, r.p_dot / k)


class GRPO(AbstractDynamics):
    r"""Baseline mean-field GRPO with a noisy verifier, G²RPO eq. (22) (eq. 2 when J = 1):

    ``ẏ = κ V(y)``, ``ż = −κ V(z)``, ``ṗ = −η (J/σ) [p(1−p)]² (L_y + L_z)``.
    """

    def rates(self, t, state):
        k = self.kappa(state.p)
        return Rates(k, -k, self.baseline_p_dot(state))


class GoodBonus(AbstractDynamics):
    r"""GRPO plus the good-only anti-collision bonus ``B*_j = λ (1/(K y_j) − 1)``, G²RPO eq. (48):

    ``ẏ = [κ − η(1−p)λ] V(y)``, ``ż = −κ V(z)``,
    ``ṗ = −η (J/σ)[p(1−p)]²(L_y + L_z) + η λ p(1−p)² (L_y − 1/K)``.

    With ``gain=ScheduleA(λ0)`` and a perfect verifier this is the adaptive system (51).
    """

    gain: AbstractGain

    def __check_init__(self):
        _check_gain_module(self.gain, "GoodBonus")

    def checked(self):
        return eqx.tree_at(lambda d: d.gain, super().checked(), self.gain.checked())

    def rates(self, t, state):
        p = state.p
        lam = self.gain(t, p, state.L_y, state.L_z, state.K, self.verifier)
        k = self.kappa(p)
        a_y = k - self.eta * (1.0 - p) * lam
        leak = self.eta * lam * p * (1.0 - p) ** 2 * (state.L_y - 1.0 / state.K)
        return Rates(a_y, -k, self.baseline_p_dot(state) + leak)


class Neutralized(AbstractDynamics):
    r"""GRPO plus ``B*`` and the multi-bad neutralizer ``B_b`` of eq. (55) on every bad mode,
    G²RPO eq. (56). Built by superposing the good-only bonus drift (Prop. C.1) and the
    block-uniform drift (39) with ``c_g = 0``, ``c_b = B_b``; the two ``ṗ`` contributions cancel,
    so ``ṗ`` equals the baseline. With ``ScheduleA`` this gives (63)–(65), with ``ScheduleB``
    (68)–(70).
    """

    gain: AbstractGain

    def __check_init__(self):
        _check_gain_module(self.gain, "Neutralized")

    def checked(self):
        return eqx.tree_at(lambda d: d.gain, super().checked(), self.gain.checked())

    def bad_bonus(self, t, state):
        """The per-bad-mode neutralizer ``B_b`` of eq. (55) at the current gain."""
        lam = self.gain(t, state.p, state.L_y, state.L_z, state.K, self.verifier)
        return _neutralizer_reciprocal(state.p, state.L_y, state.L_z, state.K, lam)

    def rates(self, t, state):
        p, Ly, Lz, K = state.p, state.L_y, state.L_z, state.K
        lam = self.gain(t, p, Ly, Lz, K, self.verifier)
        b_b = _neutralizer_reciprocal(p, Ly, Lz, K, lam)
        k, eta = self.kappa(p), self.eta
        pq = p * (1.0 - p)
        # good-only bonus (Prop. C.1) + block-uniform bad bonus (39) with c_g = 0, c_b = B_b
        a_y = k - eta * (1.0 - p) * lam - eta * pq * b_b
        a_z = -k + eta * pq * b_b
        p_dot = (self.baseline_p_dot(state)
                 + eta * lam * p * (1.0 - p) ** 2 * (Ly - 1.0 / K)
                 + eta * pq**2 * (Ly + Lz) * b_b)
        return Rates(a_y, a_z, p_dot)


def good_bonus_field_j1(state: State, gain, eta=1.0) -> State:
    r"""The perfect-verifier (J = 1) closed form (49) of the good-only bonus system:

    ``ẏ = η(1−p)(sqrt(p/(1−p)) − λ) V(y)``, ``ż = −η sqrt(p(1−p)) V(z)``,
    ``ṗ = −η [p(1−p)]^{3/2}(L_y + L_z) + η λ p(1−p)²(L_y − 1/K)``.

    Kept as the paper writes it, to check the general form :class:`GoodBonus` against.
    ``gain`` is λ (finite), ``eta`` finite and > 0; ``state`` a valid :class:`State`.
    """
    state = check_state(state)
    lam = check_finite(gain, "gain (λ)")
    eta = _check_eta(eta, "good_bonus_field_j1", False)
    p, Ly, Lz, K = state.p, state.L_y, state.L_z, state.K
    a_y = eta * (1.0 - p) * (jnp.sqrt(p / (1.0 - p)) - lam)
    a_z = -eta * jnp.sqrt(p * (1.0 - p))
    p_dot = (-eta * (p * (1.0 - p)) ** 1.5 * (Ly + Lz)
             + eta * lam * p * (1.0 - p) ** 2 * (Ly - 1.0 / K))
    return State(p_dot, a_y[..., None] * collision_field(state.y),
                 a_z[..., None] * collision_field(state.z))


def adaptive_field_j1(state: State, gain, eta=1.0) -> State:
    r"""The adaptive-gain closed form (51), J = 1, ``λ = λ0 sqrt(p/(1−p))`` (``gain`` is λ0):

    ``ẏ = η sqrt(p(1−p)) (1 − λ0) V(y)``, ``ż = −η sqrt(p(1−p)) V(z)``,
    ``ṗ = −η [p(1−p)]^{3/2} (L_z + (1 − λ0) L_y + λ0/K)``.
    """
    state = check_state(state)
    lam0 = check_finite(gain, "gain (λ0)")
    eta = _check_eta(eta, "adaptive_field_j1", False)
    p, Ly, Lz, K = state.p, state.L_y, state.L_z, state.K
    s = jnp.sqrt(p * (1.0 - p))
    p_dot = -eta * s**3 * (Lz + (1.0 - lam0) * Ly + lam0 / K)
    return State(p_dot, (eta * s * (1.0 - lam0))[..., None] * collision_field(state.y),
                 (-eta * s)[..., None] * collision_field(state.z))
