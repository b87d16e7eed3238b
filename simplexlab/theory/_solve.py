r"""Integrate a mean-field system with diffrax: ``solve(dynamics, state0, t1=...)``.

Integration variable: physical time ``t`` (``time="physical"``) or the internal time ``τ`` of
G²RPO eq. (24) (``time="inner"``). The other clock is integrated alongside (``dτ/dt = κ(p)``, or
``dt/dτ = 1/κ(p)``) so both are always reported.

Boundary rule (documented, never NaN): integration stops at the first time the bad mass leaves
``[p_floor, 1 − p_floor]`` (a diffrax terminating event). Save points after that time hold the
state (and both clocks) at the stopping point; ``Solution.stopped`` and ``Solution.t_end`` say
so (``t_end`` is where integration ended: ``t1``, or the stopping time). The simplex faces
``y_j = 0`` are invariant for every field here (Lemma A.3), so no clamp is applied to ``y``
or ``z``.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Literal

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import (
    as_int,
    check,
    check_finite,
    check_number,
    check_pair,
    float_leaf,
    is_concrete,
    trusted_inputs,
    xp,
)
from .._upstream import error_checks_off, result_code, result_message
from ._closed_forms import concentration
from ._fields import AbstractDynamics
from ._state import State, make_state

__all__ = ["Solution", "check_result_codes", "solve", "solve_each"]


class Solution(eqx.Module):
    """A solved trajectory (leading axis: save points; extra leading axes when vmapped).

    ``ts`` are the save points in the integration variable; ``t`` and ``tau`` are the physical
    and internal times there; ``state`` holds ``p``, ``y``, ``z`` at the save points.
    """

    ts: jnp.ndarray
    t: jnp.ndarray
    tau: jnp.ndarray
    state: State
    stopped: jnp.ndarray
    t_end: jnp.ndarray
    num_steps: jnp.ndarray
    time: str = eqx.field(static=True)

    @property
    def p(self):
        return self.state.p

    @property
    def y(self):
        return self.state.y

    @property
    def z(self):
        return self.state.z

    @property
    def L_y(self):
        return concentration(self.state.y)

    @property
    def L_z(self):
        return concentration(self.state.z)

    @property
    def K_eff(self):
        """Effective number of good modes ``1/L_y`` (G²RPO §4)."""
        return 1.0 / self.L_y


class _Aug(eqx.Module):
    state: State
    clock: jnp.ndarray  # tau when integrating in t; t when integrating in tau


def _default_solver(name):
    return {"tsit5": diffrax.Tsit5, "dopri5": diffrax.Dopri5, "dopri8": diffrax.Dopri8,
            "heun": diffrax.Heun, "euler": diffrax.Euler, "bosh3": diffrax.Bosh3}[name]()


_SOLVERS = ("tsit5", "dopri5", "dopri8", "heun", "euler", "bosh3")


@contextlib.contextmanager
def _checked_before():
    """While tracing ``diffeqsolve``: diffrax's own argument checks off (``saveat`` increasing
    and inside ``[t0, t1]``, ``(t1 - t0) · dt0 >= 0``). Each is an ``eqx.error_if`` on traced
    values, i.e. a host callback, and JAX's persistent compilation cache never stores a program
    with one; :func:`_prepare` checks the same arguments first (``ValueError`` on the host, or its
    own ``error_if`` in a caller's trace). Scoped to the trace: equinox reads ``EQX_ON_ERROR``
    when an ``error_if`` is traced, not when the program runs."""
    with error_checks_off():
        yield


def _throw(sol, result, who: str):
    """diffrax's ``throw=True``, outside the compiled program: the solvers run with
    ``throw=False`` and return diffrax's result code, checked here. A concrete result (the usual
    eager call) is checked on the host, raising ``equinox.EquinoxRuntimeError`` with diffrax's
    message (e.g. "The maximum number of solver steps was reached"): the compiled program then
    has no host callback, and JAX's persistent compilation cache can keep it (a second process
    loads it instead of compiling it). A traced result (``solve`` called inside the caller's
    ``jit`` or ``vmap``) gets diffrax's own run-time check (``error_if``). Returns ``sol``."""
    if result.is_traced():
        return result.error_if(sol, ~diffrax.is_okay(result))
    check_result_codes(result_code(result), who)  # on the host: no compiled comparison, no callback
    return sol


def check_result_codes(codes, who: str) -> None:
    """Raise ``equinox.EquinoxRuntimeError`` naming diffrax's message(s) if any of the (host)
    result ``codes`` of an integration is a failure (neither successful nor an event): the
    host half of :func:`_throw`, also for the sweep engine, which gets :func:`solve_block`'s
    codes as an output of its compiled program."""
    codes = np.asarray(codes)
    okay = [int(result_code(r)) for r in (diffrax.RESULTS.successful,
                                          diffrax.RESULTS.event_occurred)]
    bad = ~np.isin(codes, okay)
    if np.any(bad):
        messages = sorted({result_message(c) for c in codes[bad]})
        where = f" ({int(np.sum(bad))} of the {bad.size} trajectories)" if bad.ndim else ""
        raise eqx.EquinoxRuntimeError(f"{who}: the integration failed{where}: "
                                      + " / ".join(messages))


def solve(
    dynamics: AbstractDynamics,
    state0: State,
    *,
    t1,
    t0=0.0,
    time: Literal["physical", "inner"] = "physical",
    saveat=None,
    n_save: int = 101,
    solver: str | diffrax.AbstractSolver = "tsit5",
    rtol: float = 1e-8,
    atol: float = 1e-10,
    dt0=None,
    adaptive: bool = True,
    max_steps: int = 1_000_000,
    p_floor: float = 1e-12,
    adjoint: diffrax.AbstractAdjoint | None = None,
) -> Solution:
    r"""Solve the (p, y, z) system ``dynamics`` from ``state0`` over ``[t0, t1]``.

    Args:
        dynamics: :class:`GRPO`, :class:`GoodBonus`, :class:`Neutralized` or any
            :class:`AbstractDynamics`.
        state0: initial :class:`State` (validated: p ∈ (0, 1), y and z on their simplices).
        t1: end of the interval in the integration variable (``time``).
        t0: start of the interval.
        time: ``"physical"`` integrates in t; ``"inner"`` in τ (G²RPO eq. 24), which needs
            ``J > 0`` so that τ increases with t.
        saveat: array of save points in ``[t0, t1]``; default ``n_save`` equispaced points.
        n_save: number of equispaced save points when ``saveat`` is not given.
        solver: a diffrax solver or one of ``"tsit5"`` (default), ``"dopri5"``, ``"dopri8"``,
            ``"heun"``, ``"bosh3"``, ``"euler"``.
        rtol: relative tolerance of the adaptive PID controller (``adaptive=True``).
        atol: absolute tolerance of the adaptive PID controller.
        dt0: initial (adaptive) or fixed (``adaptive=False``) step size.
        adaptive: adaptive steps (PID control) or fixed steps of ``dt0``.
        max_steps: the most steps the solver may take.
        p_floor: the boundary rule's threshold (see module docstring).
        adjoint: diffrax adjoint; default ``diffrax.ForwardMode()`` (a plain while loop: fastest
            for forward simulation, supports ``jax.jvp``). Pass
            ``diffrax.RecursiveCheckpointAdjoint()`` to differentiate in reverse mode.

    Works under ``jax.jit`` and ``jax.vmap`` over ``state0`` and the array leaves of
    ``dynamics`` (use ``eqx.filter_vmap``); bad inputs raise eagerly (``ValueError``) or at run
    time: ``state0`` must be one trajectory (a batch goes to :func:`solve_ensemble`) and every
    parameter of ``dynamics`` a scalar; ``rtol``, ``atol`` finite and ``>= 0`` (not both 0);
    ``n_save``, ``max_steps`` integers ``>= 1``; ``dt0 > 0``; ``time="inner"`` needs
    ``η J > 0``.
    """
    return _throw(*_checked_solve(dynamics, state0, t0=t0, t1=t1, time=time, saveat=saveat,
                                  n_save=n_save, solver=solver, rtol=rtol, atol=atol, dt0=dt0,
                                  adaptive=adaptive, max_steps=max_steps, p_floor=p_floor,
                                  adjoint=adjoint), "solve")


def _checked_solve(dynamics, state0, *, t0, t1, time, saveat, n_save, solver, rtol, atol, dt0,
                   adaptive, max_steps, p_floor, adjoint):
    """:func:`solve`'s work before its result check: the arguments checked (:func:`_prepare`),
    then the integration; returns ``(Solution, diffrax result)``."""
    *args, rtol, atol, max_steps = _prepare(dynamics, state0, t0, t1, time, saveat, n_save,
                                            solver, adaptive, dt0, p_floor, adjoint, rtol, atol,
                                            max_steps)
    return _solve(*args, rtol=rtol, atol=atol, adaptive=adaptive, max_steps=max_steps,
                  p_floor=float(p_floor), time=time)


def solve_each(dynamics: AbstractDynamics, states: State, **kwargs) -> Solution:
    r"""``eqx.filter_vmap(lambda s: solve(dynamics, s, **kwargs))(states)``: the same numbers,
    trajectory by trajectory, with the checks on the host. ``states`` has one leading batch
    axis; ``dynamics`` (its array leaves scalars) and ``kwargs`` (those of :func:`solve`,
    concrete) are shared. The states are checked on the host (:func:`make_state` on the whole
    batch, ``ValueError``) and diffrax's result after the batched call (``EquinoxRuntimeError``
    naming the failure), so the compiled programs have no host callback (a vmapped
    :func:`solve` checks its traced states and results with ``eqx.error_if``, a host callback
    in every program it compiles, and JAX's persistent compilation cache stores none of them)."""
    if not isinstance(states, State) or np.ndim(states.p) != 1:
        raise ValueError("states must be a State with one batch axis (make_state(p, y, z) with p "
                         f"of shape (n,)); got {type(states).__name__} with p of shape "
                         f"{np.shape(getattr(states, 'p', None))}")
    states = make_state(states.p, states.y, states.z)  # checked here, on the host

    unknown = set(kwargs) - set(_SOLVE_OPTIONS)
    if unknown or "t1" not in kwargs:
        raise TypeError(f"solve_each takes solve's keyword arguments, t1 among them; got "
                        f"{sorted(kwargs)}")
    kw = {**_SOLVE_OPTIONS, **kwargs}  # solve's own defaults (its signature: one source)

    def one(s):
        with trusted_inputs():  # the batch was checked above
            return _checked_solve(dynamics, s, **kw)

    return _throw(*eqx.filter_vmap(one)(states), "solve_each")


#: solve's keyword arguments and their defaults, read from its signature (solve_each shares them)
_SOLVE_OPTIONS = {name: (None if prm.default is inspect.Parameter.empty else prm.default)
                  for name, prm in inspect.signature(solve).parameters.items()
                  if prm.kind is inspect.Parameter.KEYWORD_ONLY}


def _leaf_shapes(dynamics):
    """``(path, shape)`` of every array-like leaf of ``dynamics`` (η, gains, verifier rates)."""
    leaves = jax.tree_util.tree_flatten_with_path(dynamics)[0]
    return [(jax.tree_util.keystr(path), np.shape(leaf)) for path, leaf in leaves
            if eqx.is_array_like(leaf)]


def _prepare(dynamics, state0, t0, t1, time, saveat, n_save, solver, adaptive, dt0, p_floor,
             adjoint, rtol, atol, max_steps, *, ensemble: bool = False):
    """Validate the arguments shared by :func:`solve` and :func:`solve_ensemble`."""
    if time not in ("physical", "inner"):
        raise ValueError(f"time must be 'physical' or 'inner'; got {time!r}")
    if isinstance(solver, str):
        if solver not in _SOLVERS:
            raise ValueError(f"unknown solver {solver!r}; choose one of {_SOLVERS} or pass a "
                             "diffrax solver")
        solver = _default_solver(solver)
    elif not isinstance(solver, diffrax.AbstractSolver):
        raise ValueError(f"solver must be a name in {_SOLVERS} or a diffrax solver; got "
                         f"{solver!r}")
    if not isinstance(dynamics, AbstractDynamics):
        raise TypeError("dynamics must be an AbstractDynamics (GRPO, GoodBonus, Neutralized, "
                        f"...); got {type(dynamics).__name__}")
    if not isinstance(state0, State):
        who = "states" if ensemble else "state0"
        raise ValueError(f"{who} must be a State (build one with make_state(p, y, z)); got "
                         f"{type(state0).__name__}")
    if not adaptive and dt0 is None:
        raise ValueError("adaptive=False needs a fixed step size dt0")
    check_number(p_floor, "p_floor")
    if not is_concrete(p_floor) or not 0.0 < float(p_floor) < 0.5:
        raise ValueError(f"p_floor must be a number in (0, 0.5); got {p_floor!r}")
    # every check's result is used below (under jit an unused eqx.error_if is dead code)
    rtol, atol = (
        check(v, lambda a: ~(xp.isfinite(a) & (a >= 0)),
              f"{name} (tolerance of the adaptive step-size controller) must be finite and >= 0")
        for name, v in (("rtol", rtol), ("atol", atol)))
    if is_concrete(rtol) and is_concrete(atol) and float(rtol) == 0 and float(atol) == 0:
        raise ValueError("rtol and atol cannot both be 0")
    rtol = check_pair(rtol, atol, lambda r, a: ~((r > 0) | (a > 0)),
                      "rtol and atol cannot both be 0: (rtol, atol)")
    n_save = as_int(n_save, "n_save (number of save points)", lower=1)
    max_steps = as_int(max_steps, "max_steps", lower=1)
    t0, t1 = check_finite(t0, "t0"), check_finite(t1, "t1")
    if is_concrete(t0) and is_concrete(t1) and not float(t1) > float(t0):
        raise ValueError(f"need t1 > t0; got t0={t0}, t1={t1}")
    t1 = check_pair(t1, t0, lambda b, a: ~(b > a), "need t1 > t0 (a traced t1 <= t0 would "
                    "integrate backwards): (t1, t0)")
    # shapes: one trajectory (solve) or one batch axis shared by states and parameters
    batch = np.shape(state0.p)
    if not ensemble and batch != ():
        raise ValueError(
            f"solve integrates one trajectory, but state0 has batch shape {batch} (p of shape "
            f"{np.shape(state0.p)}); use solve_ensemble for a batch of states (the fast path), or "
            "eqx.filter_vmap(solve)")
    for path, shape in _leaf_shapes(dynamics):
        if ensemble:
            if shape not in ((), batch):
                raise ValueError(
                    f"dynamics{path} has shape {shape}, but states holds {batch[0]} "
                    f"trajectories: every array parameter of the dynamics must be a scalar or "
                    f"have shape {batch} (one value per trajectory)")
        elif shape != ():
            raise ValueError(
                f"dynamics{path} has shape {shape}: solve integrates one trajectory with scalar "
                "parameters; use solve_ensemble (one value per trajectory) or "
                "eqx.filter_vmap(solve) over the dynamics")
    if time == "inner":
        J = dynamics.verifier.J
        if is_concrete(J) and np.any(np.asarray(J) <= 0):
            raise ValueError(f"inner time needs J > 0 (dτ/dt = κ > 0); got J = {np.asarray(J)}")
    state0 = make_state(state0.p, state0.y, state0.z)
    if saveat is None:
        # made here, not inside the solve's program: inside, XLA compiles the program with other
        # contractions of its multiply-adds (the trajectories moved in their last bits with the
        # test suite's fast code generation; the stage loop of the finite-group ensembles by up
        # to 2e-10 with the default one), and the committed results would change
        saveat = jnp.linspace(t0, t1, n_save)
    else:
        check_number(saveat, "saveat")
        saveat = check_finite(saveat, "saveat")
        saveat = jnp.asarray(saveat, dtype=float)
        if saveat.ndim != 1 or saveat.shape[0] < 1:
            raise ValueError(f"saveat must be a non-empty 1-D array; got shape {saveat.shape}")
        if is_concrete(saveat):
            s = np.asarray(saveat)
            lo = float(t0) if is_concrete(t0) else -np.inf  # a traced end: no static bound
            hi = float(t1) if is_concrete(t1) else np.inf
            if np.any(np.diff(s) < 0) or s[0] < lo or s[-1] > hi:
                raise ValueError(f"saveat must be non-decreasing and inside [t0, t1] = "
                                 f"[{t0}, {t1}]; got {s}")
        # what is traced is checked at run time (diffrax's own checks are off: _checked_before)
        if not is_concrete(saveat):
            saveat = check(saveat, lambda a: a[1:] < a[:-1], "saveat must be non-decreasing")
        if not (is_concrete(saveat) and is_concrete(t0)):
            saveat = check_pair(saveat, t0, lambda v, a: v < a, "saveat must lie inside [t0, "
                                "t1]: (saveat, t0)")
        if not (is_concrete(saveat) and is_concrete(t1)):
            saveat = check_pair(saveat, t1, lambda v, b: v > b, "saveat must lie inside [t0, "
                                "t1]: (saveat, t1)")
    if dt0 is not None:
        dt0 = check(dt0, lambda a: ~xp.isfinite(a) | (a <= 0), "dt0 (step size) must be finite "
                    "and > 0")
        dt0 = float_leaf(dt0)
    dynamics = dynamics.checked()
    if time == "inner":  # dτ/dt = κ ∝ η J must be > 0 (also for a reversed or traced η)
        eta = check_pair(jnp.asarray(dynamics.eta), dynamics.verifier.J, lambda e, j: e * j <= 0,
                         "inner time needs eta * J > 0 (dτ/dt = κ > 0): (eta, J)")
        dynamics = eqx.tree_at(lambda d: d.eta, dynamics, eta)
    adjoint = diffrax.ForwardMode() if adjoint is None else adjoint
    return (dynamics, state0, float_leaf(t0), float_leaf(t1), saveat, solver, dt0, adjoint, rtol,
            atol, max_steps)


@eqx.filter_jit
def _solve(dynamics, state0, t0, t1, saveat, solver, dt0, adjoint, *, rtol, atol, adaptive,
           max_steps, p_floor, time):
    if time == "physical":
        def f(t, aug, args):
            return _Aug(dynamics.vector_field(t, aug.state), dynamics.kappa(aug.state.p))
    else:
        def f(t, aug, args):
            k = dynamics.kappa(aug.state.p)
            return _Aug(dynamics.inner_vector_field(t, aug.state), 1.0 / k)

    def boundary(t, aug, args, **kwargs):
        p = aug.state.p
        return (p < p_floor) | (p > 1.0 - p_floor) | ~jnp.isfinite(p)

    controller = (diffrax.PIDController(rtol=rtol, atol=atol) if adaptive
                  else diffrax.ConstantStepSize())
    y0 = _Aug(state0, jnp.zeros_like(state0.p))
    with _checked_before():  # the arguments: by _prepare; the result: by _throw, after the call
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(f), solver, t0, t1, dt0, y0,
            saveat=diffrax.SaveAt(ts=saveat, t1=True),
            stepsize_controller=controller,
            event=diffrax.Event(boundary),
            max_steps=max_steps,
            adjoint=adjoint,
            throw=False,
        )
    ys, ts = sol.ys, sol.ts
    # with an event, diffrax stores the stopping point right after the last save point it
    # reached and fills the rest with inf: the last finite entry is where integration ended
    last = jnp.sum(jnp.isfinite(ts)) - 1
    final = jax.tree_util.tree_map(lambda a: a[last], ys)
    t_end = ts[last]
    stopped = sol.result == diffrax.RESULTS.event_occurred
    # hold the state at the stopping point for save points past it (diffrax fills them with inf)
    past = saveat > t_end
    held = jax.tree_util.tree_map(
        lambda a, b: jnp.where(past.reshape((-1,) + (1,) * (a.ndim - 1)), b[None], a[:-1]),
        ys, final)
    reached = jnp.where(past, t_end, saveat)
    t_phys, tau = (reached, held.clock) if time == "physical" else (held.clock, reached)
    return Solution(ts=saveat, t=t_phys, tau=tau, state=held.state, stopped=stopped,
                    t_end=t_end, num_steps=sol.stats["num_steps"], time=time), sol.result
