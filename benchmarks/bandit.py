"""Goal: a 32 × 8 (λ0, G) grid × 64 seeds × 2,000 steps of the finite-group bandit,
K + M = 8 and G ≤ 64, in ≤ 60 s on the 2-core CPU, with its ratio to a straightforward
per-configuration loop.

The sweep: G²RPO (schedule B, neutralizer on, the paper's default) on ``simplexlab.sim.Bandit``
with K = 4, M = 4, 32 base gains λ0 ∈ [0, 3] × G ∈ {2, 4, 8, 16, 24, 32, 48, 64} × 64 seeds,
η = 0.05, 2,000 SGD steps, p0 = 0.5, y0/z0 ~ Dirichlet(1) (instance 0), float32, metrics every 100
steps (21 records): ``simplexlab.sweep.run("bandit", {"gain": ..., "group_size": ...}, ...)`` in a
process with one CPU device per core. ``group_size`` is an array parameter; with
``max_group_size`` left unset the engine groups the runs into power-of-two group-size buckets (the
bandit's ``sweep.adapter(Bandit).bucket``: 2, 4, 8, 16, 32, 64 -- six programs, each vmapped over
its gains, group sizes and seeds), so a G = 2 run does not pay for 64 padded rollouts. Measured: the
wall time of the call, compilation included, and apart from it the compile time; the peak resident
memory.

Baseline: the straightforward loop a researcher would write first -- for each configuration, the
jitted ``trajectory`` of a ``Bandit`` with ``max_group_size = G`` (one compilation per G, not
counted) called from Python, one configuration at a time, on JAX's default single device. Timed on
2 configurations per G (after compilation) and extrapolated to the 16,384 configurations.
"""

from __future__ import annotations

import time

from ._common import CompileTimer, Row, fmt_bytes, fmt_seconds, machine_short, peak_rss

NAME = "bandit"
BEST = "wall_s"
K, M, ETA, P0 = 4, 4, 0.05, 0.5
GS = (2, 4, 8, 16, 24, 32, 48, 64)
GOAL_S = 60.0


def shapes(quick: bool) -> dict:
    if quick:
        return {"gains": 4, "Gs": (2, 8, 32), "seeds": 8, "steps": 200, "stride": 50,
                "loop_per_G": 1}
    return {"gains": 32, "Gs": GS, "seeds": 64, "steps": 2000, "stride": 100, "loop_per_G": 2}


def _fixed(sh: dict) -> dict:
    return {"method": "g2rpo", "schedule": "B", "neutralize": True, "K": K, "M": M,
            "eta": ETA, "p0": P0, "dtype": "float32",
            "num_steps": sh["steps"], "stride": sh["stride"]}


def engine(opts: dict) -> dict:
    """Worker: the whole grid through the sweep engine."""
    import jax
    import numpy as np
    import xarray  # noqa: F401  (imported by the engine on first use: not part of the timing)

    from simplexlab import sweep

    sh = shapes(opts["quick"])
    gains = np.linspace(0.0, 3.0, sh["gains"])
    timer = CompileTimer()
    t0 = time.perf_counter()
    ds = sweep.run("bandit", {"gain": gains, "group_size": list(sh["Gs"])}, fixed=_fixed(sh),
                   seeds=sh["seeds"], seed=0, progress=False)
    wall = time.perf_counter() - t0
    timer.close()
    n = sh["gains"] * len(sh["Gs"]) * sh["seeds"]
    final_Ly = ds["L_y"].isel(step=-1).mean(("seed", "prompt")).values
    return {"wall_s": wall, "compile_s": timer.total, "programs": timer.count,
            "run_s": wall - timer.total, "peak_rss": peak_rss(), "configs": n,
            "policy_steps": n * sh["steps"], "devices": len(jax.devices()),
            "chunks": int(ds.attrs["chunks"]),
            "final_L_y_gain0_gainmax": [float(final_Ly[0].mean()), float(final_Ly[-1].mean())]}


def loop(opts: dict) -> dict:
    """Worker: one jitted trajectory per configuration, called from Python (timed on a few
    configurations per G after compiling, extrapolated)."""
    import jax
    import numpy as np

    from simplexlab.sim import Bandit, trajectory

    sh = shapes(opts["quick"])
    fixed = _fixed(sh)
    gains = np.linspace(0.0, 3.0, sh["gains"])
    per_G, compile_s = {}, 0.0
    for G in sh["Gs"]:
        sim, params = Bandit.from_values({**fixed, "max_group_size": G, "group_size": G})
        f = jax.jit(lambda key, gain, sim=sim, params=params: trajectory(
            sim, key, {**params, "gain": gain}, num_steps=fixed["num_steps"],
            stride=fixed["stride"])[1])
        t0 = time.perf_counter()
        jax.block_until_ready(f(jax.random.key(0), gains[0]))
        compile_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in range(sh["loop_per_G"]):
            jax.block_until_ready(f(jax.random.key(i + 1), gains[(i * 7) % len(gains)]))
        per_G[G] = (time.perf_counter() - t0) / sh["loop_per_G"]
    n_per_G = sh["gains"] * sh["seeds"]
    extrapolated = sum(t * n_per_G for t in per_G.values())
    return {"per_config_s": {str(k): v for k, v in per_G.items()}, "compile_s": compile_s,
            "extrapolated_s": extrapolated, "peak_rss": peak_rss(),
            "timed": sh["loop_per_G"] * len(sh["Gs"])}


WORKERS = {"engine": (engine, "cores"), "loop": (loop, None)}


def rows(results: dict, opts: dict) -> list[Row]:
    sh = shapes(opts["quick"])
    e, b = results.get("engine"), results.get("loop")
    goal = (f"bandit: {sh['gains']} × {len(sh['Gs'])} (λ0, G) grid × {sh['seeds']} seeds × "
            f"{sh['steps']} steps, K + M = 8, G ≤ {max(sh['Gs'])}, in ≤ 60 s")
    if opts["quick"]:
        goal += " (--quick: the goal is for 32 × 8 × 64 × 2000)"
    if e is None:
        return [Row(NAME, goal, "failed", met="no")]
    met = e["wall_s"] <= GOAL_S
    base = ratio = "—"
    if b is not None:
        base = (f"per-configuration loop (jit per G, one call per configuration, 1 device): "
                f"{1e3 * min(b['per_config_s'].values()):.0f}–"
                f"{1e3 * max(b['per_config_s'].values()):.0f} ms per configuration → "
                f"{fmt_seconds(b['extrapolated_s'])} extrapolated (+ "
                f"{fmt_seconds(b['compile_s'])} compiling {len(sh['Gs'])} programs)")
        ratio = (f"{b['extrapolated_s'] / e['wall_s']:.0f}× end to end, "
                 f"{b['extrapolated_s'] / e['run_s']:.0f}× after compilation")
    return [Row(
        NAME, goal,
        measured=(f"{fmt_seconds(e['wall_s'])} end to end ({fmt_seconds(e['compile_s'])} "
                  f"compiling {e['programs']} program(s), {fmt_seconds(e['run_s'])} after), "
                  f"{e['devices']} devices, "
                  f"{1e9 * e['run_s'] / e['policy_steps']:.0f} ns per policy step"),
        baseline=base, ratio=ratio, peak_memory=fmt_bytes(e["peak_rss"]),
        met=("yes" if met else "no") if not opts["quick"] else "n/a (quick)",
        machine=machine_short(e.get("_jax", {})),
        notes=(f"G²RPO schedule B with the neutralizer, η = {ETA}, float32, runs grouped into "
               f"power-of-two group-size buckets (one program each); final L_y at λ0 = 0 / "
               f"λ0 = 3 (mean over G, seeds): "
               + " / ".join(f"{x:.3f}" for x in e["final_L_y_gain0_gainmax"])),
        values={**e, "loop": b, "met": met})]
