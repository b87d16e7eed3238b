"""Goal 2: a 10^6-trajectory mean-field ensemble through the sweep engine in ≤ 60 s and ≤ 2 GB on
the 2-core CPU, with its ratio to scipy ``solve_ivp``.

The sweep: G²RPO eq. (56) (``system="neutralized"``) with schedule B (eq. 67), K = 3, M = 2,
t ∈ [0, 20], noisy verifier δ = (0.05, 0.1), p0 = 0.5; a grid of 1000 base gains λ0 ∈ [0, 3] ×
1000 seeds (each seed draws y0 ~ Dirichlet(1_3), z0 ~ Dirichlet(1_2)) = 10^6 trajectories,
Tsit5 with rtol = 1e-6, atol = 1e-9 (max norm over a block), float64, 11 save points
(t = 0, 2, …, 20), outputs p, y, z (``outputs="p,y,z"``: 528 bytes per trajectory, 0.53 GB in
all). ``simplexlab.sweep.run("meanfield", {"gain": ...}, seeds=1000, chunk_size=100_000, ...)``
in a process with one CPU device per core; ``block = 1000`` on CPU (one gain × its 1000 seeds
per shared-step block), one block per device elsewhere. Measured: the wall time of the whole
call, compilation included (the goal is the time to the Dataset), and apart from it the compile
time (``jax.monitoring``); the peak resident memory of the process.

Baseline: ``scipy.integrate.solve_ivp`` (RK45, the same rtol / atol, a NumPy right-hand side,
RMS error norm per trajectory) looped over a random subset of the same trajectories (200; the
initial states are read back from the Dataset), timed per trajectory and extrapolated to 10^6;
the suite also reports how far apart the two are at the save points.
"""

from __future__ import annotations

import time

from ._common import (
    GB,
    CompileTimer,
    Row,
    fmt_bytes,
    fmt_seconds,
    machine_short,
    peak_rss,
)

NAME = "meanfield"
BEST = "wall_s"  # with --rounds: the round with the least wall time
K, M, T = 3, 2, 20.0
RTOL, ATOL = 1e-6, 1e-9
DFN, DFP, ETA, P0 = 0.05, 0.1, 1.0, 0.5
N_SAVE = 11
GOAL_S, GOAL_BYTES = 60.0, 2 * GB


def shapes(quick: bool) -> dict:
    if quick:
        return {"gains": 100, "seeds": 100, "chunk": 2_000, "scipy": 20}
    return {"gains": 1000, "seeds": 1000, "chunk": 100_000, "scipy": 200}


def numpy_rhs(t, x, lam0, k=K, dfn=DFN, dfp=DFP, eta=ETA):
    """G²RPO eq. (56) with gain (67), written directly in NumPy for scipy."""
    import numpy as np

    p, y, z = x[0], x[1:1 + k], x[1 + k:]
    jv = 1 - dfn - dfp
    q = (1 - dfn) - jv * p
    sig = np.sqrt(q * (1 - q))
    ly, lz = y @ y, z @ z
    kap = eta * jv * p * (1 - p) / sig
    lam = lam0 * jv * p / sig * (ly + lz) / (lz + 1 / k)
    bb = lam * (1 / k - ly) / (p * (ly + lz))
    a_y = kap - eta * (1 - p) * lam - eta * p * (1 - p) * bb
    a_z = -kap + eta * p * (1 - p) * bb
    pdot = -kap * p * (1 - p) * (ly + lz)
    return np.concatenate([[pdot], a_y * (y * y - ly * y), a_z * (z * z - lz * z)])


def engine(opts: dict) -> dict:
    """Worker: the 10^6-trajectory sweep, then the scipy loop on a subset."""
    import jax
    import numpy as np
    import xarray  # noqa: F401  (imported by the engine on first use: not part of the timing)
    from scipy.integrate import solve_ivp

    from simplexlab import sweep

    sh = shapes(opts["quick"])
    ndev = len(jax.devices())
    chunk = opts.get("chunk") or sh["chunk"]
    block = opts.get("block") or (
        sh["seeds"] if jax.default_backend() == "cpu" else chunk // ndev)
    gains = np.linspace(0.0, 3.0, sh["gains"])
    fixed = {"system": "neutralized", "schedule": "B", "K": K, "M": M, "t1": T,
             "n_save": N_SAVE, "rtol": RTOL, "atol": ATOL, "block": int(block),
             "outputs": "p,y,z", "delta_fn": DFN, "delta_fp": DFP, "p0": P0}
    timer = CompileTimer()
    t0 = time.perf_counter()
    ds = sweep.run("meanfield", {"gain": gains}, fixed=fixed, seeds=sh["seeds"], seed=0,
                   chunk_size=chunk, progress=False)
    wall = time.perf_counter() - t0
    timer.close()
    peak = peak_rss()
    n = sh["gains"] * sh["seeds"]

    # ---- baseline: scipy on a random subset of the same trajectories ----
    rng = np.random.default_rng(0)
    flat = np.sort(rng.choice(n, sh["scipy"], replace=False))
    gi, si = np.divmod(flat, sh["seeds"])
    ts = ds.time.values
    p_all, y_all, z_all = ds.p.values, ds.y.values, ds.z.values
    max_err = 0.0
    t0 = time.perf_counter()
    sols = []
    for g, s in zip(gi, si, strict=True):
        x0 = np.concatenate([[p_all[g, s, 0]], y_all[g, s, 0], z_all[g, s, 0]])
        sols.append(solve_ivp(numpy_rhs, (0.0, T), x0, method="RK45", t_eval=ts, rtol=RTOL,
                              atol=ATOL, args=(gains[g],)))
    scipy_s = time.perf_counter() - t0
    for (g, s), r in zip(zip(gi, si, strict=True), sols, strict=True):
        ours = np.concatenate([p_all[g, s][:, None], y_all[g, s], z_all[g, s]], axis=1)
        max_err = max(max_err, float(np.max(np.abs(r.y.T - ours))))
    return {"wall_s": wall, "compile_s": timer.total, "programs": timer.count,
            "run_s": wall - timer.total, "peak_rss": peak, "trajectories": n,
            "devices": ndev, "block": int(block), "chunk_size": chunk,
            "chunks": int(ds.attrs["chunks"]), "dataset_bytes": int(ds.nbytes),
            "scipy_n": int(sh["scipy"]), "scipy_s": scipy_s,
            "scipy_per_traj_s": scipy_s / sh["scipy"], "max_abs_diff": max_err}


WORKERS = {"engine": (engine, "cores")}


def rows(results: dict, opts: dict) -> list[Row]:
    sh = shapes(opts["quick"])
    r = results.get("engine")
    n = sh["gains"] * sh["seeds"]
    goal = (f"{n:,}-trajectory mean-field sweep (eq. 56, schedule B, K=3, M=2, t ∈ [0, 20]) "
            f"in ≤ 60 s, ≤ 2 GB")
    if opts["quick"]:
        goal += " (--quick: 100 gains × 100 seeds; the goal is for 10^6)"
    if r is None:
        return [Row(NAME, goal, "failed", met="no")]
    extrap = r["scipy_per_traj_s"] * n
    met = r["wall_s"] <= GOAL_S and r["peak_rss"] <= GOAL_BYTES
    return [Row(
        NAME, goal,
        measured=(f"{fmt_seconds(r['wall_s'])} end to end ({fmt_seconds(r['compile_s'])} "
                  f"compiling, {fmt_seconds(r['run_s'])} after), {r['devices']} devices"),
        baseline=(f"scipy solve_ivp RK45 looped: {r['scipy_per_traj_s'] * 1e3:.2f} ms per "
                  f"trajectory on {r['scipy_n']} of them → {fmt_seconds(extrap)} extrapolated "
                  f"to {n:,}"),
        ratio=(f"{extrap / r['wall_s']:.0f}× end to end, {extrap / r['run_s']:.0f}× after "
               f"compilation"),
        peak_memory=fmt_bytes(r["peak_rss"]),
        met=("yes" if met else "no") if not opts["quick"] else "n/a (quick)",
        machine=machine_short(r.get("_jax", {})),
        notes=((f"best of {len(r['_rounds'])} rounds ("
                + ", ".join(f"{x:.1f}" for x in r["_rounds"]) + " s); "
                if len(r.get("_rounds", [])) > 1 else "")
               + f"rtol {RTOL:g}, atol {ATOL:g}, float64, Tsit5 (shared step per block of "
               f"{r['block']}, max norm), {N_SAVE} save points, outputs p, y, z "
               f"({fmt_bytes(r['dataset_bytes'])} Dataset), chunks of {r['chunk_size']:,}; "
               f"max |scipy − sweep| at the save points {r['max_abs_diff']:.1e}"),
        values={**r, "scipy_extrapolated_s": extrap, "ratio_end_to_end": extrap / r["wall_s"],
                "ratio_after_compile": extrap / r["run_s"], "met": met})]
