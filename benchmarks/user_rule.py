"""Goal: a rule from user code costs what a built-in costs.

The bandit grid (the bandit benchmark's shape: 32 step sizes × 8 group sizes
G ∈ {4, 8, 12, 16, 24, 32, 48, 64} × 64 seeds × 2,000 steps, K = 6, M = 2, float32, through
:func:`simplexlab.sweep.run`, one CPU device per core) with Dr. GRPO built in (``dr_grpo``)
and with the same rule written here, in a module outside the package, and registered with
:func:`simplexlab.shaping.register_method` (``user_dr_grpo``: ``r − mean r`` with one declared
parameter, a scale fixed at 1, so that the rule goes through the registry's parameter path too).
The two runs must agree to the last bit (the same arithmetic) and the user rule's wall time must
be within 10 % of the built-in's, measured in the same suite run (workers alternate in order
over ``--rounds``).
"""

from __future__ import annotations

import time

from ._common import CompileTimer, Row, cpu_seconds, fmt_seconds, machine_short, peak_rss

NAME = "user-rule"
BEST = "wall_s"
GOAL = 1.10
GS = (4, 8, 12, 16, 24, 32, 48, 64)
USER = "user_dr_grpo"


def shapes(quick: bool) -> dict:
    if quick:
        return {"etas": 4, "Gs": (4, 16), "seeds": 8, "steps": 200}
    return {"etas": 32, "Gs": GS, "seeds": 64, "steps": 2000}


def _register():
    """The user's rule, as a user writes it (the package is not edited)."""
    from simplexlab.shaping import (
        METHODS,
        Method,
        Param,
        mean_shifted_advantages,
        register_method,
        xp,
    )

    def rule(groups, q, *_):
        return q["user_scale"] * mean_shifted_advantages(groups.rewards, groups.mask)

    if USER not in METHODS:
        register_method(USER, Method(("user_scale",), rule, binary=True),
                        params=[Param("user_scale", 1.0,
                                      lambda a: ~(xp.isfinite(a) & (a > 0)), "finite and > 0")])


def _grid(method: str, opts: dict) -> dict:
    import jax
    import numpy as np
    import xarray  # noqa: F401  (imported by the engine on first use: not part of the timing)

    from simplexlab import sweep

    sh = shapes(opts["quick"])
    fixed = {"method": method, "K": 6, "M": 2, "p0": 0.7, "dtype": "float32",
             "num_steps": sh["steps"], "stride": sh["steps"]}
    timer = CompileTimer()
    c0 = cpu_seconds()
    t0 = time.perf_counter()
    ds = sweep.run("bandit", {"eta": np.geomspace(0.005, 0.2, sh["etas"]),
                              "group_size": list(sh["Gs"])},
                   fixed=fixed, seeds=sh["seeds"], seed=0, progress=False)
    wall = time.perf_counter() - t0
    cpu = cpu_seconds() - c0
    timer.close()
    p = np.asarray(ds["p"].values, np.float64)
    return {"wall_s": wall, "cpu_s": cpu, "compile_s": timer.total, "programs": timer.count,
            "run_s": wall - timer.total, "peak_rss": peak_rss(),
            "devices": len(jax.devices()), "p_sum": float(p.sum()),
            "p_bytes": p.tobytes().hex()[:64]}


def builtin(opts: dict) -> dict:
    """Worker: the grid with the built-in ``dr_grpo``."""
    return _grid("dr_grpo", opts)


def user(opts: dict) -> dict:
    """Worker: the grid with the same rule registered from this module."""
    _register()
    return _grid(USER, opts)


WORKERS = {"builtin": (builtin, "cores"), "user": (user, "cores")}


def rows(results: dict, opts: dict) -> list[Row]:
    b, u = results.get("builtin"), results.get("user")
    sh = shapes(opts["quick"])
    goal = (f"bandit grid ({sh['etas']} η × {len(sh['Gs'])} G × {sh['seeds']} seeds × "
            f"{sh['steps']} steps) with a rule registered from user code within 10 % of the "
            "same rule built in (dr_grpo), same bits")
    if b is None or u is None:
        return [Row(NAME, goal, "failed", met="no")]
    ratio = u["wall_s"] / b["wall_s"]
    same = u["p_sum"] == b["p_sum"] and u["p_bytes"] == b["p_bytes"]
    return [Row(NAME, goal,
                f"user rule {fmt_seconds(u['wall_s'])} ({fmt_seconds(u['compile_s'])} compiling)",
                baseline=(f"built-in {fmt_seconds(b['wall_s'])} "
                          f"({fmt_seconds(b['compile_s'])} compiling)"),
                ratio=f"{ratio:.3f}×; results {'bit-identical' if same else 'DIFFER'}",
                met="yes" if ratio <= GOAL and same else "no",
                machine=machine_short(u.get("_jax", {})),
                values={"builtin": b, "user": u})]
