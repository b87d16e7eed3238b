r"""The mean-field prediction for a trained language model (G2 §3–4).

A language model is not a tabular softmax over modes, and its learning rate does not map to the
ODE's step size η by any formula. What the mean-field theory does predict is the *path*: from the
measured initial state ``(p, y, z)`` of every prompt, GRPO follows eq. (22) and G²RPO with a
schedule follows eq. (56) (with the neutralizer) or (48) -- the same time ``t`` for both, since
both scale with η. So the driver's prediction has one free number, the time scale ``c`` in
``t = c · step``, fitted on GRPO's measured bad mass ``p`` alone (:func:`fit_time_scale`); the
concentration ``L_y`` and the number of modes ``K̂`` of both methods are then predicted, not
fitted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..shaping import GainSchedule, meanfield_system

__all__ = ["fit_time_scale", "initial_states", "predict"]


def initial_states(row: dict[str, Any], K: int):
    """``(p, y, z)`` arrays per prompt from a history row of :func:`simplexlab.llm.train`
    (``p_per_target``, ``y_per_target`` and the per-target bad composition), clipped into the
    open simplex so the ODE's checks accept them."""
    p = np.clip(np.asarray(row["p_per_target"], float), 1e-6, 1 - 1e-6)
    y = np.clip(np.asarray(row["y_per_target"], float), 1e-9, None)
    y = y / y.sum(-1, keepdims=True)
    z = np.clip(np.asarray(row["z_per_target"], float), 1e-9, None)
    z = z / z.sum(-1, keepdims=True)
    if y.shape[-1] != K:
        raise ValueError(f"y_per_target has {y.shape[-1]} good modes; expected K = {K}")
    return p, y, z


def predict(row0: dict[str, Any], K: int, times, *, method: str = "grpo",
            schedule: GainSchedule | None = None, time_scale: float = 1.0,
            mode_threshold: float = 0.05) -> dict[str, np.ndarray]:
    r"""Mean-field ``p``, ``L_y`` and ``K̂`` (means over prompts) at training steps ``times``
    from the measured initial state ``row0``: GRPO eq. (22), or G²RPO -- eq. (56) with
    ``schedule.neutralize`` else (48) -- with the schedule's gain (its warm-up in steps becomes
    ``t_ramp = ramp_steps · time_scale``), at ``t = time_scale · step``; perfect verifier,
    ``η = 1``. ``time_scale``: the ``c`` of :func:`fit_time_scale`."""
    import jax.numpy as jnp

    from ..theory import make_state, solve_ensemble

    p0, y0, z0 = initial_states(row0, K)
    steps = np.asarray(times, float)
    dyn = meanfield_system(method, schedule, eta=1.0, step_time=time_scale)
    t = time_scale * steps
    # every prompt in one system (one program, one call: fit_time_scale calls this ~100 times)
    sol = solve_ensemble(dyn, make_state(p0, y0, z0), t1=float(t[-1]), saveat=jnp.asarray(t),
                         rtol=1e-6, atol=1e-9)
    out = {"p": np.asarray(sol.p), "L_y": np.asarray(sol.L_y),
           "K_hat": np.sum(np.asarray(sol.y) > mode_threshold, -1)}
    return {k: np.mean(v, 0) for k, v in out.items()} | {"step": steps, "t": t}


def fit_time_scale(history: list[dict[str, Any]], K: int, *, method: str = "grpo",
                   schedule: GainSchedule | None = None, lo: float = 1e-3, hi: float = 10.0,
                   num: int = 61) -> float:
    """The time scale ``c`` (``t = c · step``) that best fits the measured mean bad mass ``p``
    of a ``method`` run (default GRPO; least squares over the logged steps, a log-spaced grid
    then a golden-section refinement)."""
    rows = [r for r in history if "p_per_target" in r]
    if len(rows) < 2:
        raise ValueError("fit_time_scale needs at least two logged steps with exact mode masses")
    steps = np.asarray([r["step"] for r in rows], float)
    meas = np.asarray([r["p"] for r in rows], float)

    def err(c):
        pred = predict(rows[0], K, steps, method=method, schedule=schedule,
                       time_scale=c)["p"]
        return float(np.mean((pred - meas) ** 2))

    grid = np.geomspace(lo, hi, num)
    errs = [err(c) for c in grid]
    i = int(np.argmin(errs))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, num - 1)]
    g = (np.sqrt(5) - 1) / 2
    for _ in range(20):
        c1, c2 = b - g * (b - a), a + g * (b - a)
        if err(c1) < err(c2):
            b = c2
        else:
            a = c1
    return float(np.sqrt(a * b))
