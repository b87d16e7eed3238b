r"""Many systems at once: ``solve_ensemble(dynamics, states, t1=...)`` integrates a batch of
states (and per-trajectory leaves of ``dynamics``) in one compiled program with a shared
controller norm (the max over the batch), in blocks (``map_blocks``); ``solve_block`` is one
block. The explicit Runge–Kutta stages are written out (``_AbstractUnrolled``: diffrax's solvers
wrapped, their tableaus unrolled) so that XLA fuses the batched field evaluations. Boundary rule
and clocks as in :func:`simplexlab.theory.solve` (:mod:`simplexlab.theory._solve`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import as_int
from .._upstream import result_code, with_result_code
from ._fields import AbstractDynamics
from ._solve import Solution, _checked_before, _prepare, _throw
from ._state import State

__all__ = ["map_blocks", "solve_block", "solve_ensemble"]


def _max_norm(x):
    """``max |x|`` of :func:`solve_ensemble`'s state array, taken first across its few rows as
    elementwise maxima (fused into the loop that computes the ratio) and then over the
    trajectories. A single reduce over the whole array was handed by XLA's CPU backend to a
    library call (YNNPACK) that cost ~6 µs of a ~58 µs step for 4,096 numbers (blocks of 512),
    and which rounded the error ratio differently from XLA's own loops."""
    r = jnp.abs(x[0])
    for row in range(1, x.shape[0]):
        r = jnp.maximum(r, jnp.abs(x[row]))
    return jnp.max(r)


def solve_ensemble(
    dynamics: AbstractDynamics,
    states: State,
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
    max_steps: int = 1_000_000,
    p_floor: float = 1e-12,
    block: int | None = None,
) -> Solution:
    r"""Solve a batch of trajectories as one ODE system with a shared adaptive step.

    ``states`` has a leading batch axis (``p`` of shape ``(n,)``, ``y`` ``(n, K)``, ``z``
    ``(n, M)``); array leaves of ``dynamics`` (gains, verifier rates, η) may be scalars or
    ``(n,)`` arrays, one value per trajectory. The error is controlled in the max-norm over the
    whole ensemble, so every trajectory meets ``rtol``/``atol`` (a stricter test than
    :func:`solve`'s RMS norm over one trajectory); the step count is that of the hardest
    trajectory. This is the fast path for sweeps: the same batch through ``vmap(solve)`` pays
    for batched control flow at every step. Inside, the batch is one array with the
    trajectories on its minor axis, and ``"tsit5"``, ``"dopri5"``, ``"dopri8"`` run with their
    stages written out (:class:`_AbstractUnrolled`: the same pairs, round-off apart), which keeps a
    block's bits independent of the program around it (the sweep engine's layout test: one
    device or four).

    Boundary rule: a trajectory whose ``p`` leaves ``[p_floor, 1 − p_floor]`` is frozen (its
    derivative, and its clocks', set to zero) while the others go on; ``stopped`` and ``t_end``
    are per trajectory. Returns a :class:`Solution` laid out like ``vmap(solve)``: leading axis
    = trajectory, then save points.

    ``block``: trajectories per shared-step system (``None``: one system of all of them). A large
    batch in blocks runs them one after another, each with the steps of its own hardest
    trajectory and a state that stays in the CPU's caches (16,384 trajectories of the ensemble
    benchmark: 5× less CPU time per trajectory in blocks of 512 than as one system); a
    trajectory's numbers then depend on its block (``[j·block, (j+1)·block)``, the last one
    padded with copies of the last trajectory, dropped from the result), as in the sweep
    engine's mean-field target. ``num_steps`` is that of the trajectory's block.
    """
    if block is not None:
        block = as_int(block, "block", lower=1)
    if not isinstance(states, State):
        raise ValueError(f"states must be a State with one batch axis (make_state(p, y, z) with p "
                         f"of shape (n,)); got {type(states).__name__}")
    if np.ndim(states.p) != 1:
        raise ValueError(f"states must have exactly one batch axis; got p of shape "
                         f"{np.shape(states.p)} (use solve for a single trajectory)")
    dynamics, states, t0, t1, saveat, solver, dt0, adjoint, rtol, atol, max_steps = _prepare(
        dynamics, states, t0, t1, time, saveat, n_save, solver, True, dt0, p_floor, None, rtol,
        atol, max_steps, ensemble=True)
    kw = dict(rtol=rtol, atol=atol, max_steps=max_steps, p_floor=float(p_floor), time=time)
    if block is None or block >= states.p.shape[0]:
        out = _solve_ensemble(dynamics, states, t0, t1, saveat, solver, dt0, adjoint, **kw)
    else:
        out = _solve_ensemble_blocks(dynamics, states, t0, t1, saveat, solver, dt0, adjoint,
                                     block=block, **kw)
    return _throw(*out, "solve_ensemble" if block is None else
                  f"solve_ensemble (blocks of {block}: a failed block counts all of its rows)")


def map_blocks(fn, block: int, *trees):
    """``fn`` on blocks of ``block`` rows of every leaf of ``trees`` (leading axis ``n``), one
    block after another (``lax.map``); the last block is padded by repeating the last row, and
    the padding is dropped from the result (leading axis ``n`` again). ``n <= block``: ``fn``
    on everything at once."""
    n = jax.tree_util.tree_leaves(trees)[0].shape[0]
    if n <= block:
        return fn(*trees)
    nb = -(-n // block)
    pad = nb * block - n

    def split(x):  # pad by repeating the last row, then (nb, block, ...)
        if pad:
            x = jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)])
        return x.reshape((nb, block) + x.shape[1:])

    out = jax.lax.map(lambda args: fn(*args), jax.tree_util.tree_map(split, trees))
    return jax.tree_util.tree_map(lambda x: x.reshape((nb * block,) + x.shape[2:])[:n], out)


@eqx.filter_jit
def _solve_ensemble_blocks(dynamics, states, t0, t1, saveat, solver, dt0, adjoint, *, block,
                           **kw):
    # the array leaves of ``dynamics`` are scalars (shared) or (n,) (one per trajectory)
    per, shared = eqx.partition(dynamics, lambda x: eqx.is_array(x) and jnp.ndim(x) >= 1)

    def one(per_block, s):
        sol, result = _solve_ensemble(eqx.combine(per_block, shared), s, t0, t1, saveat, solver,
                                      dt0, adjoint, **kw)
        # every leaf per trajectory (ts set below), the block's result code on each of its rows
        result = with_result_code(result, jnp.broadcast_to(result_code(result), s.p.shape))
        return eqx.tree_at(lambda x: x.ts, sol, s.p), result

    sol, result = map_blocks(one, block, per, states)
    return eqx.tree_at(lambda s: s.ts, sol, saveat), result


def _combine(coefficients, ks):
    """``Σ_j coefficients[j] · ks[j]`` in order, zero coefficients skipped."""
    out = None
    for a, k in zip(np.asarray(coefficients).tolist(), ks, strict=True):
        if a != 0:
            out = a * k if out is None else out + a * k
    return out


def _stage(y0, a_i, ks, rows):
    """Rows ``rows`` of a stage's input ``y0 + Σ_j a_ij k_j``."""
    return y0[rows] + _combine(a_i, [ks[j][rows] for j in range(len(a_i))])


class _AbstractUnrolled(diffrax.AbstractAdaptiveSolver):
    r"""A diffrax explicit Runge–Kutta pair with FSAL and SSAL (Tsit5, Dopri5, Dopri8), wrapped:
    its tableau, orders and dense interpolation are the wrapped ``solver``'s (one final class
    per solver, :data:`_UNROLLED`, names its interpolation), its stages written out, for
    :func:`solve_ensemble`'s state of one array. diffrax's own step loops over the stages and
    combines them as a matrix-vector product with a zero-padded tableau row; XLA's CPU backend
    gives that product to a library whose last bits, for the same block, differed between
    programs (one device or four: the sweep engine's guarantee that a result does not depend
    on the layout broke), and which reads every stage at every stage. Here a stage's input is
    ``y0 + Σ_j a_ij k_j`` over the stages before it, in order, as plain multiply-adds. Each is
    divided by a 1.0 that XLA cannot see is 1 (from the step size's sign: exact), so that XLA
    computes it once per stage, not once in every loop that reads it (it duplicates cheap
    producers into each reader, not a division). Same numbers as the diffrax solver up to
    round-off (its sums run in another order).

    ``reads``: the field reads only the state's first ``reads`` rows (:func:`solve_ensemble`'s
    two clocks are written, never read), so an inner stage divides only those; the rest of its
    rows, which no one reads, are left to XLA (the last stage's input, ``y1``, is divided
    whole; ``None``: all rows)."""

    #: the wrapped diffrax solver (``Tsit5()``, ``Dopri5()``, ``Dopri8()``): its tableau, its
    #: orders and (through the final class) its interpolation
    solver: diffrax.AbstractRungeKutta
    reads: int | None = eqx.field(static=True, default=None)
    #: run the stages after the first in a loop (``lax.fori_loop``) instead of written out: the
    #: program holds two copies of the field (the first stage's and the loop's) instead of one
    #: per stage, for fields whose compilation dominates (:attr:`AbstractDynamics.stage_loop`).
    #: Same arithmetic per stage (the tableau row's coefficients read from an array, zero ones
    #: adding an exact 0), so the same numbers up to XLA's contraction of multiply-adds.
    loop: bool = eqx.field(static=True, default=False)

    term_structure: ClassVar = diffrax.AbstractTerm

    @property
    def tableau(self):
        return self.solver.tableau

    def order(self, terms):
        return self.solver.order(terms)

    def error_order(self, terms):
        return self.solver.error_order(terms)

    def func(self, terms, t0, y0, args):
        return terms.vf(t0, y0, args)

    def init(self, terms, t0, t1, y0, args):
        return terms.vf(t0, y0, args)  # f(t0, y0): the first stage of the first step (FSAL)

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        f0 = solver_state
        if made_jump is not False:  # after a jump the stored f(t0, y0) is stale
            f0 = jax.lax.cond(made_jump, lambda: terms.vf(t0, y0, args), lambda: f0)
        tab = self.tableau
        control = terms.contr(t0, t1)
        dt = t1 - t0
        one = (dt > 0).astype(dt.dtype) + (dt <= 0).astype(dt.dtype)  # 1.0, opaque to XLA
        k0 = terms.prod(f0, control)
        ks = jnp.zeros((len(tab.c) + 1,) + k0.shape, k0.dtype).at[0].set(k0)
        if self.loop:
            yi, fi, ks = self._stages_in_a_loop(terms, t0, dt, y0, args, ks, one, control)
        else:
            last = len(tab.c) - 1
            for i, (a_i, c_i) in enumerate(zip(tab.a_lower, tab.c, strict=True)):
                if i == last or self.reads is None:
                    yi = _stage(y0, a_i, ks, slice(None)) / one
                else:
                    yi = jnp.concatenate([_stage(y0, a_i, ks, slice(self.reads)) / one,
                                          _stage(y0, a_i, ks, slice(self.reads, None))])
                fi = terms.vf(t0 + c_i * dt, yi, args)
                ks = ks.at[i + 1].set(terms.prod(fi, control))
        # SSAL: the last stage's input is y1, and its field f(t1, y1) the next step's first
        y_error = _combine(tab.b_error, [ks[j] for j in range(ks.shape[0])])
        return yi, y_error, dict(y0=y0, y1=yi, k=ks), fi, diffrax.RESULTS.successful

    def _stages_in_a_loop(self, terms, t0, dt, y0, args, ks, one, control):
        """The stages after the first as one loop body (:attr:`loop`); ``(y1, f(t1, y1), ks)``."""
        tab = self.tableau
        n = len(tab.c)
        A = np.zeros((n, n))
        for i, a_i in enumerate(tab.a_lower):
            A[i, :len(a_i)] = a_i
        A, c = jnp.asarray(A, y0.dtype), jnp.asarray(tab.c, y0.dtype)

        def stage(i, carry):
            ks, _, _ = carry
            acc = A[i, 0] * ks[0]
            for j in range(1, n):  # Σ_j a_ij k_j in order (a_ij = 0 past the row's end), as
                acc = acc + A[i, j] * ks[j]  # _stage sums it: the terms, then y0
            yi = (y0 + acc) / one
            fi = terms.vf(t0 + c[i] * dt, yi, args)
            return ks.at[i + 1].set(terms.prod(fi, control)), yi, fi

        init = (ks, y0, jnp.zeros_like(ks[0]))  # the field has the state's shape
        ks, yi, fi = jax.lax.fori_loop(0, n, stage, init)
        return yi, fi, ks


class _Tsit5Unrolled(_AbstractUnrolled):
    """:class:`diffrax.Tsit5` with its stages written out (:class:`_AbstractUnrolled`)."""

    interpolation_cls: ClassVar[Any] = diffrax.Tsit5.interpolation_cls


class _Dopri5Unrolled(_AbstractUnrolled):
    """:class:`diffrax.Dopri5` with its stages written out (:class:`_AbstractUnrolled`)."""

    interpolation_cls: ClassVar[Any] = diffrax.Dopri5.interpolation_cls


class _Dopri8Unrolled(_AbstractUnrolled):
    """:class:`diffrax.Dopri8` with its stages written out (:class:`_AbstractUnrolled`)."""

    interpolation_cls: ClassVar[Any] = diffrax.Dopri8.interpolation_cls


#: the diffrax solvers :func:`solve_ensemble` runs with their stages written out, by class
_UNROLLED = {diffrax.Tsit5: _Tsit5Unrolled, diffrax.Dopri5: _Dopri5Unrolled,
             diffrax.Dopri8: _Dopri8Unrolled}


def _unrolled(solver, reads: int, loop: bool = False):
    """``solver`` wrapped with its stages written out (:class:`_AbstractUnrolled`, the field
    reading the first ``reads`` rows; ``loop``: the stages in a loop) where it is one of
    :data:`_UNROLLED`'s (exactly that class), else ``solver``."""
    return (_UNROLLED[type(solver)](solver, reads=reads, loop=loop)
            if type(solver) in _UNROLLED else solver)


@eqx.filter_jit
def _solve_ensemble(dynamics, states, t0, t1, saveat, solver, dt0, adjoint, *, rtol, atol,
                    max_steps, p_floor, time):
    # the state is one array of rows p, y_1..y_K, z_1..z_M, clock, active time, the
    # trajectories on the minor axis: XLA's CPU loops vectorise across trajectories (not over
    # K = 3 or M = 2), and diffrax combines the stages of one leaf, not of five
    K, M = states.y.shape[-1], states.z.shape[-1]
    # Tsit5 / Dopri5 / Dopri8 with their stages written out, the field reading rows 0..K+M
    solver = _unrolled(solver, reads=1 + K + M, loop=dynamics.stage_loop)

    def f(t, x, args):
        p, y, z = x[0], x[1:1 + K], x[1 + K:1 + K + M]
        active = ((p >= p_floor) & (p <= 1.0 - p_floor) & jnp.isfinite(p)).astype(p.dtype)
        p_safe = jnp.where(active > 0, p, 0.5)  # keep frozen entries finite
        s = State(p_safe, y.T, z.T)
        k = dynamics.kappa(p_safe)
        if time == "physical":
            d, dclock = dynamics.vector_field(t, s), k
        else:
            d, dclock = dynamics.inner_vector_field(t, s), 1.0 / k
        return jnp.concatenate([(d.p * active)[None], (d.y * active[:, None]).T,
                                (d.z * active[:, None]).T, (dclock * active)[None],
                                active[None]])

    zeros = jnp.zeros_like(states.p)
    # the rows: p, the columns of y and z, the two clocks (stacked from slices, not transposed)
    x0 = jnp.stack([states.p, *(states.y[:, i] for i in range(K)),
                    *(states.z[:, i] for i in range(M)), zeros, zeros])
    with _checked_before():  # the arguments: by _prepare; the result: by the caller (_throw)
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(f), solver, t0, t1, dt0, x0,
            saveat=diffrax.SaveAt(ts=saveat, fn=lambda t, x, args: x.T),  # (n, rows)
            stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol, norm=_max_norm),
            max_steps=max_steps, adjoint=adjoint, throw=False,
        )
    ys = jnp.moveaxis(sol.ys, 0, 1)  # (n, T, 1 + K + M + 2)
    st = State(ys[..., 0], ys[..., 1:1 + K], ys[..., 1 + K:1 + K + M])
    clock = ys[..., -2]
    p_last = st.p[:, -1]
    stopped = (p_last < p_floor) | (p_last > 1.0 - p_floor) | ~jnp.isfinite(p_last)
    t_end = jnp.where(stopped, t0 + ys[:, -1, -1], t1)
    reached = jnp.minimum(saveat[None, :], t_end[:, None])
    t_phys, tau = (reached, clock) if time == "physical" else (clock, reached)
    n = states.p.shape[0]
    return Solution(ts=saveat, t=t_phys, tau=tau, state=st, stopped=stopped, t_end=t_end,
                    num_steps=jnp.broadcast_to(sol.stats["num_steps"], (n,)), time=time), \
        sol.result


def solve_block(dynamics: AbstractDynamics, states: State, *, saveat, time="physical",
                rtol: float = 1e-6, atol: float = 1e-9, max_steps: int = 1_000_000,
                p_floor: float = 1e-12) -> tuple[Solution, jax.Array]:
    r""":func:`solve_ensemble` without the eager argument checks and without a run-time check of
    the result, for callers that have validated their inputs already and call it inside a
    trace (the sweep engine, under ``shard_map`` and :func:`simplexlab._checks.trusted_inputs`).
    Tsit5, PID control in the max norm over the block; ``saveat`` is a concrete 1-D array whose
    ends are ``t0`` and ``t1``. Returns the solution and diffrax's result code, one per
    trajectory, for the caller to pass to :func:`check_result_codes` on the host once the
    program has run: a program with no host callback, which JAX's persistent compilation cache
    can keep."""
    saveat = jnp.asarray(saveat, dtype=float)
    sol, result = _solve_ensemble(dynamics.checked(), states, saveat[0], saveat[-1], saveat,
                                  diffrax.Tsit5(), None, diffrax.ForwardMode(),
                                  rtol=rtol, atol=atol, max_steps=max_steps, p_floor=p_floor,
                                  time=time)
    return sol, jnp.broadcast_to(result_code(result), states.p.shape)
