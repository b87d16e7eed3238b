r"""Finite-group expected dynamics: the exact mean step of a group rule at any group size G.

One SGD step of the (K+M)-mode bandit draws ``G`` rollouts ``a_i ~ π`` i.i.d., scores each with
the verifier (``P(r = 1 | good) = 1 − δ_FN``, ``P(r = 1 | bad) = δ_FP``), computes the rule's
advantages ``A_i`` from what G²RPO Algorithm 1 sees, and ascends the count-form surrogate with
weights ``w_c = s Σ_{i : a_i = c} A_i`` (``s = 1/G`` for the mean reduction, 1 for the sum). With
the log-likelihood surrogate ``Δθ = η (w − π Σ_c w_c)``, with the probability surrogate
``Δθ = η J(π) w`` (``J(π) = Diag(π) − ππᵀ``). Both are linear in ``w``, so

    ``E[Δθ]/η = E[w] − π Σ_c E[w_c]``   or   ``J(π) E[w]``,

exactly, at every ``G``. Everything rests on the *cell totals* ``W[r, c] = E[Σ_{i ∈ (c, r)} A_i]``,
the expected advantage carried by the rollouts of mode ``c`` scored ``r`` (a *cell*):
``E[w_c] = s (W[0, c] + W[1, c])``. :mod:`simplexlab.theory._finite_paths` computes them, exactly
(enumeration of the group's outcomes; a sum over the success count for rules that see only it;
a dynamic programme over partitions for G²RPO's cluster symmetry; a rule's own reduction) or by
Monte Carlo with stated standard errors, and the result names the path it took.

:class:`FiniteGroup` integrates ``dθ/dt = E[Δθ]/η`` (time ``t = step · η``) as a mean-field system
on ``(p, y, z)``: an :class:`~simplexlab.theory.AbstractDynamics`, so :func:`solve`,
:func:`solve_ensemble`, the portraits, the fixed points and the sweeps take it unchanged. As
``G → ∞`` it tends to the papers' fields (G²RPO eq. 22 / 48 / 56) with an ``O(1/G)`` error.

The rule itself is the layer above's (:mod:`simplexlab.shaping`): the theory sees it through
the small interface :class:`AbstractGroupRule` and never imports it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from .._checks import SIMPLEX_ATOL, as_int, check, error_if, is_concrete, xp
from ._entropy import EntropyBonus
from ._fields import AbstractDynamics
from ._finite_moments import (
    MOMENT_PATHS,
    check_num_groups,
    choose_moments_path,
    expected_moments,
    group_step_moments,
)
from ._finite_paths import (
    MAX_SIZE,
    AbstractGroupRule,
    StaticInt,
    active_cells,
    cell_totals,
    check_group_size,
    check_settings,
    check_time,
    checked_group_size,
    checked_one_group_size,
    choose_path,
    known_zero_rates,
)
from ._optimizers import AbstractOptimizerLimit
from ._state import State, check_state
from ._verifier import Verifier

__all__ = ["ExpectedUpdate", "FiniteGroup", "expected_update"]



class ExpectedUpdate(eqx.Module):
    r"""The exact (or Monte Carlo) expectation of one group step at a policy ``π``.

    ``cell_totals`` ``W[r, c]`` (module docstring); ``weights`` ``E[w]``; ``theta``
    ``E[Δθ]/η``; ``probs`` the first-order ``E[Δπ]/η = J(π) E[Δθ]/η``; ``stderr``: the
    standard errors of ``theta`` (Monte Carlo; zeros on an exact path); ``path``: the path that
    computed it."""

    cell_totals: jax.Array
    weights: jax.Array
    theta: jax.Array
    probs: jax.Array
    stderr: jax.Array
    path: str = eqx.field(static=True)


def _checked_traced_state(state: State) -> State:
    """A traced ``state`` with run-time checks: ``p`` in ``(0, 1)``, ``y`` and ``z`` on the
    simplex (>= 0, summing to 1 within :data:`~simplexlab._checks.SIMPLEX_ATOL`). A NaN passes
    (NaN in, NaN out: a fixed-point search's diverged iterate, which it discards); a finite point
    off the state space, whose policy's logarithm would be NaN, does not."""
    if not isinstance(state, State):
        check_state(state)  # refuses it, naming its type
    p = error_if(state.p, jnp.any((state.p <= 0) | (state.p >= 1)),
                 "p (total bad mass) must lie in the open interval (0, 1)")
    out = [p]
    for name, what in (("y", "within-good"), ("z", "within-bad")):
        a = getattr(state, name)
        off = jnp.any(a < 0) | jnp.any(jnp.abs(jnp.sum(a, -1) - 1.0) > SIMPLEX_ATOL)
        out.append(error_if(a, off, f"{name} ({what} composition) must lie on the probability "
                                    f"simplex (entries >= 0 summing to 1 within "
                                    f"{SIMPLEX_ATOL:g})"))
    return State(*out)


def _theta(W, probs, scale, surrogate):
    """``E[Δθ]/η`` from the cell totals (module docstring)."""
    w = scale * jnp.sum(W, 0)
    if surrogate == "probability":
        return probs * w - probs * jnp.sum(probs * w)
    return w - probs * jnp.sum(w)


def expected_update(rule: AbstractGroupRule, probs, K: int, group_size: int, *,
                    verifier: Verifier | None = None, surrogate: str = "log_likelihood",
                    reduction: str = "mean", path: str = "auto", t=0.0,
                    max_size: int = MAX_SIZE, num_samples: int = 4096, key=None,
                    zero_rates: tuple | None = None,
                    max_group_size: int | None = None) -> ExpectedUpdate:
    r"""The expectation of one group step of ``rule`` at the full policy ``probs`` (``C``
    modes, the first ``K`` good), per unit step size (module docstring). ``path="auto"`` takes
    the rule's own reduction, then ``"counts"``, ``"clusters"``, ``"enumerate"`` where they
    apply within ``max_size`` table entries, else Monte Carlo (``num_samples`` groups,
    ``key``); the result names the path and, for Monte Carlo, the standard errors.
    ``zero_rates``: ``(δ_FN == 0, δ_FP == 0)`` if known (default: read from ``verifier``).
    One compiled program per setting; with ``max_group_size`` (a static bound) ``group_size``
    is data, and one program serves every group size up to the bound (the ``"counts"`` path and
    the rules' own reductions that take the bound; equal to the per-G program's to round-off)."""
    verifier = Verifier() if verifier is None else verifier
    if not isinstance(verifier, Verifier):
        raise ValueError(f"expected_update: verifier must be a Verifier(delta_fn, delta_fp) (or "
                         f"None: a perfect one); got {verifier!r}")
    G = check_settings("expected_update", group_size, surrogate, reduction, path, rule,
                       max_group_size)
    probs = jnp.asarray(probs, dtype=jnp.result_type(float))
    if probs.ndim != 1:
        raise ValueError(f"expected_update: probs must be one policy of shape (C,); got shape "
                         f"{probs.shape}")
    C = probs.shape[0]
    K = as_int(K, "expected_update: K", lower=1)
    if K >= C + 1:
        raise ValueError(f"expected_update: need K <= C = {C} good modes; got K = {K}")
    # eagerly a ValueError naming the values, traced (jit, vmap) a run-time check
    probs = check(probs, lambda a: ~xp.all(xp.isfinite(a) & (a >= 0)) | (abs(a.sum() - 1) > 1e-9),
                  "expected_update: probs must be a point of the simplex (finite, >= 0, summing "
                  "to 1 within 1e-9)")
    probs = check_time(t, "expected_update", probs)
    rule = rule.checked()  # its parameters' domains, where they are traced
    num_samples = as_int(num_samples, "expected_update: num_samples", lower=1)
    if path == "montecarlo" and num_samples < 2:
        raise ValueError(f"expected_update: Monte Carlo needs num_samples >= 2 for its error "
                         f"bound; got {num_samples}")
    zero_rates = known_zero_rates(verifier) if zero_rates is None else zero_rates
    # the sizes before anything is built: an exact path's tables, or Monte Carlo's arrays (at
    # G = 10^6 its default 4,096 groups were 393 GB), refused when they cannot fit
    max_size = as_int(max_size, "expected_update: max_size", lower=1)
    chosen = choose_path(rule, K, C - K, G, active_cells(verifier, K, C - K, zero_rates), path,
                         max_size, allow_montecarlo=True, num_samples=num_samples,
                         max_group_size=max_group_size)
    probs = checked_one_group_size(G, max_group_size, rule, probs, "expected_update")
    key = jax.random.key(0) if key is None else key
    return _expected_update(rule, probs, verifier, t, key, G, K=K, path=chosen,
                            surrogate=surrogate, reduction=reduction, max_size=max_size,
                            num_samples=num_samples, zero_rates=zero_rates,
                            max_group_size=max_group_size)


@eqx.filter_jit
def _expected_update(rule, probs, verifier, t, key, G, *, K, path, surrogate, reduction,
                     max_size, num_samples, zero_rates, max_group_size):
    """:func:`expected_update` after its checks, as one compiled program per setting (``G``
    an array where the group size is data: one program for every value)."""
    W, se, chosen = cell_totals(rule, probs, K, G, verifier=verifier, path=path, t=t,
                                max_size=max_size, num_samples=num_samples, key=key,
                                zero_rates=zero_rates, max_group_size=max_group_size)
    scale = 1.0 / G if reduction == "mean" else 1.0
    theta = _theta(W, probs, scale, surrogate)
    # the standard error of theta: w's entries are per-cell sums; a linear map of them
    se_theta = scale * jnp.sqrt(jnp.sum(se**2, 0))
    dP = probs * (theta - jnp.sum(probs * theta))
    return ExpectedUpdate(W, scale * jnp.sum(W, 0), theta, dP, se_theta, chosen)


# --------------------------------------------------------------------------- the system


def _push(state: State, g):
    r"""``d(p, y, z)/dt`` of ``dθ/dt = g`` (exact for the ODE): ``ẏ = y ⊙ g_y − ⟨y, g_y⟩ y``,
    ``ż`` alike, ``ṗ = p(1 − p)(⟨z, g_z⟩ − ⟨y, g_y⟩)``; written to keep ``Σy``, ``Σz`` invariant
    off the simplex too (the mean divides by ``Σy``)."""
    K = state.y.shape[-1]
    gy, gz = g[..., :K], g[..., K:]
    my = jnp.sum(state.y * gy, -1) / jnp.sum(state.y, -1)
    mz = jnp.sum(state.z * gz, -1) / jnp.sum(state.z, -1)
    p = state.p
    return State(p * (1.0 - p) * (mz - my), state.y * (gy - my[..., None]),
                 state.z * (gz - mz[..., None]))


@eqx.filter_jit
def _theta_drift(dyn, t, state):
    return dyn._batched(lambda d, s: d._theta_one(t, s), state)


class FiniteGroup(AbstractDynamics):
    r"""The finite-group mean field of an advantage rule: ``dθ/dt = η E[Δθ]/η_step`` on the
    (K+M)-mode softmax policy, pushed to ``(p, y, z)`` (module docstring). One step of the
    bandit with SGD at rate ``η_step`` moves the ensemble mean by ``η_step`` in ``t`` (the time
    map ``t = step · η``, ``eta = 1`` here), up to ``O(η)``; no ``O(1/G)`` error remains.

    ``rule`` (a :class:`AbstractGroupRule`: :func:`simplexlab.shaping.group_rule` makes one for
    every method), ``group_size`` ``G``, ``surrogate`` (``"log_likelihood"`` or ``"probability"``),
    ``reduction`` (``"mean"`` or ``"sum"``), ``max_group_size`` (``None``: ``group_size`` is a
    static integer, one compiled program per value; a static bound: ``group_size`` is data, a
    whole number up to the bound or an array of them, one per trajectory of
    :func:`~simplexlab.theory.solve_ensemble`, and one program serves every group size up to it:
    the ``"counts"`` and ``"clusters"`` paths and the rules' own reductions that take the
    bound, G²RPO's among them, their arrays padded to the bound, equal to the per-G field to
    round-off; the bandit's ``max_group_size`` alike), ``path`` (:data:`PATHS`; ``"auto"``
    never takes Monte Carlo here: it raises, naming the sizes; an explicit ``"montecarlo"``
    gives a field that is piecewise constant in the state, for fixed-step solvers),
    ``max_size``,
    ``num_samples``, ``seed``. ``optimizer``: ``None`` (SGD) or the small-step limit of another
    optimizer (:class:`~simplexlab.theory.Adam`, :class:`~simplexlab.theory.Momentum`, ...;
    :func:`~simplexlab.theory.optimizer_limit`), whose field may need the second moment of the
    step (:func:`~simplexlab.theory.expected_moments`, on ``moments_path`` with ``num_groups``
    groups per step on the same parameters; :meth:`moments`).
    """

    rule: AbstractGroupRule
    #: ``G``: a static integer, or (``max_group_size`` set) data: a float array of whole numbers
    group_size: Any = eqx.field(kw_only=True)
    #: the static bound below which ``group_size`` is data (``None``: ``group_size`` is static)
    max_group_size: int | None = eqx.field(default=None, kw_only=True, static=True)
    surrogate: str = eqx.field(default="log_likelihood", kw_only=True, static=True)
    reduction: str = eqx.field(default="mean", kw_only=True, static=True)
    path: str = eqx.field(default="auto", kw_only=True, static=True)
    max_size: int = eqx.field(default=MAX_SIZE, kw_only=True, static=True)
    num_samples: int = eqx.field(default=4096, kw_only=True, static=True)
    seed: int = eqx.field(default=0, kw_only=True, static=True)
    #: ``(δ_FN == 0, δ_FP == 0)`` known before tracing (a perfect verifier leaves half the cells
    #: empty, which the exact paths' static tables use); ``None``: read from the verifier when
    #: this system is built (:func:`known_zero_rates`)
    zero_rates: tuple | None = eqx.field(default=None, kw_only=True, static=True)
    #: an entropy bonus ``c(t) H(π)`` added to the objective (:class:`EntropyBonus`; ``None``:
    #: none): the field gains ``η c(t) ∇_θ H``, exactly
    entropy_bonus: EntropyBonus | None = eqx.field(default=None, kw_only=True)
    #: the optimizer's small-step limit (:mod:`simplexlab.theory._optimizers`); ``None``: SGD,
    #: ``dθ/dt = E[Δθ]/η``
    optimizer: AbstractOptimizerLimit | None = eqx.field(default=None, kw_only=True)
    #: groups per step on the same parameters (``P``: the step's covariance is ``Σ / P``; the
    #: bandit's prompts hold their own parameters, ``P = 1``)
    num_groups: int = eqx.field(default=1, kw_only=True, static=True)
    #: the path of the second moment (:data:`~simplexlab.theory.MOMENT_PATHS`; ``"auto"`` never
    #: takes Monte Carlo here)
    moments_path: str = eqx.field(default="auto", kw_only=True, static=True)
    #: ``True`` on the copy :meth:`checked` hands the solvers: the times and states they
    #: evaluate the field at are their own (a stage's state may leave the simplex by round-off),
    #: not re-checked at each evaluation; ``False`` (the default): :meth:`vector_field` and
    #: :meth:`theta_drift` check ``t`` and the state (eagerly a ``ValueError``, traced a
    #: run-time check; off the simplex the policy's logarithm would be NaN)
    solver_states: bool = eqx.field(default=False, kw_only=True, static=True)
    #: the exact field compiles to a large program: one copy per solve, not one per stage
    stage_loop: ClassVar[bool] = True

    def __post_init__(self):
        if self.zero_rates is None:
            object.__setattr__(self, "zero_rates", known_zero_rates(self.verifier))
        if isinstance(self.rule, AbstractGroupRule):  # else __check_init__ names it
            # a static G as an int that JAX leaves static (StaticInt); data as a float array
            # (one program for every value)
            G = check_group_size("FiniteGroup", self.group_size, self.rule, self.max_group_size)
            object.__setattr__(self, "group_size",
                               StaticInt(G) if self.max_group_size is None else G)

    def __check_init__(self):
        check_settings("FiniteGroup", self.group_size, self.surrogate, self.reduction,
                        self.path, self.rule, self.max_group_size)
        as_int(self.max_size, "FiniteGroup: max_size", lower=1)
        as_int(self.num_samples, "FiniteGroup: num_samples", lower=1)
        if self.entropy_bonus is not None and not isinstance(self.entropy_bonus, EntropyBonus):
            raise ValueError("FiniteGroup: entropy_bonus must be an EntropyBonus or None; got "
                             f"{self.entropy_bonus!r}")
        self._check_optimizer()

    def _check_optimizer(self):

        check_num_groups(self.rule, self.num_groups, "FiniteGroup")
        if self.moments_path not in MOMENT_PATHS:
            raise ValueError(f"FiniteGroup: moments_path must be one of {MOMENT_PATHS}; got "
                             f"{self.moments_path!r}")
        if self.optimizer is None:
            return
        if not isinstance(self.optimizer, AbstractOptimizerLimit):
            raise ValueError("FiniteGroup: optimizer must be None (SGD) or an optimizer's "
                             "small-step limit (simplexlab.theory.optimizer_limit(name)); got "
                             f"{self.optimizer!r}")
        if self.entropy_bonus is not None and self.entropy_bonus.adaptive:
            raise ValueError("FiniteGroup: an adaptive entropy bonus is covered under SGD only "
                             f"(its controller's limit is SGD's); got optimizer="
                             f"{self.optimizer!r}")

    def checked(self):
        """This system as the solvers take it: the rule's parameters and the entropy bonus's
        values checked (at run time where they are traced), the states and times left to the
        solver (:attr:`solver_states`)."""
        out = eqx.tree_at(lambda d: d.rule, super().checked(), self.rule.checked())
        if self.entropy_bonus is not None:
            out = eqx.tree_at(lambda d: d.entropy_bonus, out, self.entropy_bonus.checked())
        return dataclasses.replace(out, solver_states=True)

    @property
    def _G(self):
        """The group size as the computation takes it: a plain ``int`` (static) or the array."""
        return int(self.group_size) if self.max_group_size is None else self.group_size

    def rates(self, t, state):
        raise NotImplementedError("FiniteGroup's field is not collinear with V(y): use "
                                  "vector_field (the rates a_y, a_z of the G → ∞ systems do not "
                                  "exist at finite G)")

    def resolve_path(self, K: int, M: int) -> str:
        """The path the field takes for ``K`` good and ``M`` bad modes (``ValueError`` where
        none fits)."""
        return choose_path(self.rule, K, M, self._G,
                           active_cells(self.verifier, K, M, self.zero_rates), self.path,
                           self.max_size, allow_montecarlo=False, num_samples=self.num_samples,
                           max_group_size=self.max_group_size)

    def theta_drift(self, t, state: State):
        """``dθ/dt`` at ``state`` (one point, or a batch like :meth:`vector_field`); one
        compiled program per shape when called outside a trace. ``t`` must be finite and
        ``state`` a point of the state space (:func:`~simplexlab.theory.make_state`'s rules;
        eagerly a ``ValueError``, traced a run-time check), unless :attr:`solver_states`."""
        if not self.solver_states:
            if all(map(is_concrete, (state.p, state.y, state.z))):
                check_state(state)  # on the host: a ValueError naming the value
            else:
                state = _checked_traced_state(state)
            state = eqx.tree_at(lambda s: s.p, state, check_time(t, "FiniteGroup", state.p))
        return _theta_drift(self, t, state)

    def _theta_one(self, t, state: State):
        K = state.y.shape[-1]
        probs = state.policy()
        if self.max_group_size is None and not isinstance(self.group_size, int):
            raise ValueError(f"FiniteGroup: group_size is static (max_group_size=None) but "
                             f"became {type(self.group_size).__name__} (an array leaf: a "
                             f"tree_map over the system?); give max_group_size for a group "
                             f"size as data")
        if self.max_group_size is not None:  # data: a whole number within the bound
            probs = checked_group_size(self._G, self.max_group_size,
                                       max(2, self.rule.min_group_size), probs, "FiniteGroup")
        W, _, _ = cell_totals(self.rule, probs, K, self._G, verifier=self.verifier,
                              path=self.path, t=t, max_size=self.max_size,
                              num_samples=self.num_samples,
                              key=jax.random.key(self.seed), allow_montecarlo=False,
                              zero_rates=self.zero_rates, max_group_size=self.max_group_size)
        scale = 1.0 / self._G if self.reduction == "mean" else 1.0
        drift = _theta(W, probs, scale, self.surrogate)
        if self.entropy_bonus is not None:
            drift = drift + self.entropy_bonus.field_term(t, probs, drift, self.eta)
        if self.optimizer is not None:
            drift = self._optimizer_drift(t, probs, K, drift)
        return self.eta * drift

    def _optimizer_drift(self, t, probs, K, mean):
        """The optimizer's field from the step's mean ``E[ĝ]`` (the SGD drift, bonus included)
        and, where it needs it, ``E[ĝ∘ĝ] = E[ĝ]² + diag Cov[ĝ]``."""
        squared = None
        if self.optimizer.uses_second_moment:
            cov = self._moments_one(t, probs, K, self.moments_path,
                                    jax.random.key(self.seed), False).covariance
            squared = mean**2 + jnp.diagonal(cov)
        return self.optimizer.drift(t, mean, squared, probs)

    def _moments_one(self, t, probs, K, path, key, allow_montecarlo):

        return group_step_moments(self.rule, probs, K, self._G, verifier=self.verifier,
                                  surrogate=self.surrogate, reduction=self.reduction,
                                  num_groups=self.num_groups, path=path, t=t,
                                  max_size=self.max_size, num_samples=self.num_samples, key=key,
                                  zero_rates=self.zero_rates, allow_montecarlo=allow_montecarlo,
                                  max_group_size=self.max_group_size)

    def resolve_moments_path(self, K: int, M: int) -> str:
        """The second-moment path for ``K`` good and ``M`` bad modes (``ValueError`` where no
        exact one fits and ``moments_path`` is ``"auto"``)."""

        return choose_moments_path(self.rule, K, M, self._G,
                                   active_cells(self.verifier, K, M, self.zero_rates),
                                   self.moments_path, self.max_size, allow_montecarlo=False,
                                   max_group_size=self.max_group_size)

    def moments(self, state: State, t=0.0, *, path: str | None = None, key=None):
        """The moments of one step's gradient at ``state`` (one point):
        :func:`~simplexlab.theory.expected_moments` of this system's rule, settings and
        ``num_groups``, the entropy bonus (a deterministic part of the gradient) added to the
        mean. Per unit step size, whatever this system's ``eta``."""

        state = check_state(state)
        probs = state.policy()
        out = expected_moments(self.rule, probs, state.K, self._G,
                               verifier=self.verifier, surrogate=self.surrogate,
                               reduction=self.reduction, num_groups=self.num_groups,
                               path=path or self.moments_path, t=t, max_size=self.max_size,
                               num_samples=self.num_samples, key=key,
                               zero_rates=self.zero_rates, max_group_size=self.max_group_size)
        if self.entropy_bonus is None:
            return out
        mean = out.mean + self.entropy_bonus.field_term(t, probs, out.mean, self.eta)
        return eqx.tree_at(lambda m: (m.mean, m.second_moment), out,
                           (mean, out.covariance + jnp.outer(mean, mean)))

    def _batched(self, f, state: State):
        """``f(self, state)`` on one point, vmapped over one leading batch axis of ``state``
        (and of the array parameters that have it: one value per trajectory)."""
        if jnp.ndim(state.p) == 0:
            return f(self, state)
        batch = jnp.shape(state.p)
        flat = State(jnp.reshape(state.p, (-1,)), jnp.reshape(state.y, (-1, state.y.shape[-1])),
                     jnp.reshape(state.z, (-1, state.z.shape[-1])))
        per, shared = eqx.partition(self, lambda x: eqx.is_array(x) and jnp.ndim(x) >= 1)
        out = jax.vmap(lambda d, s: f(eqx.combine(d, shared), s))(per, flat) \
            if jax.tree_util.tree_leaves(per) else jax.vmap(lambda s: f(self, s))(flat)
        return jax.tree_util.tree_map(lambda a: jnp.reshape(a, batch + a.shape[1:]), out)

    def vector_field(self, t, state: State) -> State:
        return _push(state, self.theta_drift(t, state))

    def inner_vector_field(self, tau, state: State) -> State:
        d = self.vector_field(tau, state)
        k = self.kappa(state.p)
        return State(d.p / k, d.y / k[..., None], d.z / k[..., None])

    def expected_update(self, state: State, t=0.0, *, path: str | None = None,
                        key=None) -> ExpectedUpdate:
        """:func:`expected_update` of this system's rule at ``state`` (one point)."""
        state = check_state(state)
        return expected_update(self.rule, state.policy(), state.K, self._G,
                               verifier=self.verifier, surrogate=self.surrogate,
                               reduction=self.reduction, path=path or self.path, t=t,
                               max_size=self.max_size, num_samples=self.num_samples, key=key,
                               zero_rates=self.zero_rates, max_group_size=self.max_group_size)
