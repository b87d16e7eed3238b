"""Goal 3: a batch of (p, y, z) trajectories per trajectory ≥ 200× faster than scipy
``solve_ivp`` looped per trajectory (the former ``bench_meanfield.py``); then ≥ 500× for
10^5 trajectories through ``solve_ensemble`` in shared-step blocks of 512 (``block=``; same law
of initial states, same tolerances), with Tsit5 and with ``solver="dopri8"``.

2,048 trajectories of G²RPO eq. (56) with schedule B (random λ0 ∈ [0, 3], p0 ∈ [0.2, 0.9] per
trajectory, noisy verifier δ = (0.05, 0.1)), K = 3, M = 2, t ∈ [0, 20], rtol = 1e-8,
atol = 1e-10, 11 save points, through ``eqx.filter_vmap(simplexlab.solve)`` (per-trajectory
adaptive steps) and ``simplexlab.solve_ensemble`` (one system, shared step, max-norm error), on
JAX's default single CPU device as before (times: best of 3 after a compiling call). Baseline:
``scipy.integrate.solve_ivp`` (RK45, same tolerances, a NumPy right-hand side) looped over 100
of the same trajectories; the suite checks that all of them agree (``solver="dopri8"``, the
order-8 Dormand–Prince pair, takes about a third of Tsit5's steps at these tolerances).

Measured 2026-11-25 14:54 UTC on an idle 2-core machine (load average 0.9 -> 1.4; after the
error norm became row-wise maxima, f11c58d): solve_ensemble 12.7 µs per trajectory (2,048,
Tsit5), 8.9 µs with dopri8; 10^5 in blocks of 512: 7.3 µs (Tsit5; 8.2 µs before), 5.0 µs
(dopri8); scipy 3.95 ms, so 312×, 445×, 540×, 784× (BENCHMARKS.md, the CPU goals).
"""

from __future__ import annotations

import functools
import time

from ._common import Row, fmt_seconds, machine_short, peak_rss
from .meanfield import DFN, DFP, ETA, K, M, T, numpy_rhs

NAME = "ensemble"
BEST = "ensemble_per_traj_s"
RTOL, ATOL = 1e-8, 1e-10
GOAL_RATIO = 200.0
BIG_GOAL_RATIO = 500.0
#: the 10^5 trajectories go through solve_ensemble in shared-step blocks of this many
BIG_BLOCK = 512


def shapes(quick: bool) -> dict:
    if quick:
        return {"batch": 256, "scipy": 20, "repeats": 2, "big": 1024}
    return {"batch": 2048, "scipy": 100, "repeats": 3, "big": 100_000}


def bench(opts: dict) -> dict:
    """Worker: both JAX paths and the scipy loop."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import numpy as np
    from scipy.integrate import solve_ivp

    import simplexlab as sl

    sh = shapes(opts["quick"])
    rng = np.random.default_rng(0)
    n = sh["batch"]
    p0 = rng.uniform(0.2, 0.9, n)
    y0 = rng.dirichlet(np.ones(K), n)
    z0 = rng.dirichlet(np.ones(M), n)
    lam0 = rng.uniform(0.0, 3.0, n)
    big = np.random.default_rng(1)
    nb_big = sh["big"]
    big_states = sl.State(jnp.asarray(big.uniform(0.2, 0.9, nb_big)),
                          jnp.asarray(big.dirichlet(np.ones(K), nb_big)),
                          jnp.asarray(big.dirichlet(np.ones(M), nb_big)))
    big_lam = jnp.asarray(big.uniform(0.0, 3.0, nb_big))
    ts = np.linspace(0.0, T, 11)
    ver = sl.Verifier(DFN, DFP)

    def one(s, lam):
        return sl.solve(sl.Neutralized(sl.ScheduleB(lam), verifier=ver, eta=ETA), s, t1=T,
                        saveat=jnp.asarray(ts), rtol=RTOL, atol=ATOL)

    def ensemble(s, lam, **options):  # options: solve_ensemble's solver=, block=
        return sl.solve_ensemble(sl.Neutralized(sl.ScheduleB(lam), verifier=ver, eta=ETA), s,
                                 t1=T, saveat=jnp.asarray(ts), rtol=RTOL, atol=ATOL, **options)

    def best_time(fn, *a):
        t0 = time.perf_counter()
        out = fn(*a)
        jax.block_until_ready(out.p)
        first = time.perf_counter() - t0
        times = []
        for _ in range(sh["repeats"]):
            t0 = time.perf_counter()
            out = fn(*a)
            jax.block_until_ready(out.p)
            times.append(time.perf_counter() - t0)
        return out, min(times), first

    states = sl.State(jnp.asarray(p0), jnp.asarray(y0), jnp.asarray(z0))
    lam = jnp.asarray(lam0)
    sols, vmap_s, vmap_first = best_time(eqx.filter_jit(eqx.filter_vmap(one)), states, lam)
    ens, ens_s, ens_first = best_time(ensemble, states, lam)
    # the same ensemble with diffrax's order-8 Dormand-Prince pair
    ens8, ens8_s, ens8_first = best_time(functools.partial(ensemble, solver="dopri8"), states,
                                         lam)
    big = {}
    for key, solver in (("big", "tsit5"), ("big8", "dopri8")):
        sol, big[f"{key}_s"], big[f"{key}_first_s"] = best_time(
            functools.partial(ensemble, block=BIG_BLOCK, solver=solver), big_states, big_lam)
        big[f"{key}_finite"] = bool(np.all(np.isfinite(np.asarray(sol.p))))
        big[f"{key}_steps"] = int(np.max(np.asarray(sol.num_steps)))
        del sol
    peak = peak_rss()

    nb = min(sh["scipy"], n)
    t0 = time.perf_counter()
    refs = [solve_ivp(numpy_rhs, (0.0, T), np.concatenate([[p0[i]], y0[i], z0[i]]),
                      method="RK45", t_eval=ts, rtol=RTOL, atol=ATOL, args=(lam0[i],))
            for i in range(nb)]
    scipy_per = (time.perf_counter() - t0) / nb
    max_err = 0.0
    for i, r in enumerate(refs):
        for sol in (sols, ens, ens8):
            ours = np.concatenate([np.asarray(sol.p[i])[:, None], np.asarray(sol.y[i]),
                                   np.asarray(sol.z[i])], axis=1)
            max_err = max(max_err, float(np.max(np.abs(r.y.T - ours))))
    return {"batch": n, "vmap_per_traj_s": vmap_s / n, "vmap_first_s": vmap_first,
            "ensemble_per_traj_s": ens_s / n, "ensemble_first_s": ens_first,
            "ensemble8_per_traj_s": ens8_s / n, "ensemble8_first_s": ens8_first,
            "ensemble8_steps": int(np.asarray(ens8.num_steps)[0]),
            "big_batch": nb_big, "big_per_traj_s": big["big_s"] / nb_big,
            "big_first_s": big["big_first_s"], "big_finite": big["big_finite"],
            "big_steps": big["big_steps"], "big8_per_traj_s": big["big8_s"] / nb_big,
            "big8_first_s": big["big8_first_s"], "big8_finite": big["big8_finite"],
            "big8_steps": big["big8_steps"],
            "vmap_max_steps": int(np.max(np.asarray(sols.num_steps))),
            "ensemble_steps": int(np.asarray(ens.num_steps)[0]),
            "scipy_n": nb, "scipy_per_traj_s": scipy_per, "max_abs_diff": max_err,
            "peak_rss": peak, "devices": len(jax.devices())}


WORKERS = {"bench": (bench, None)}


def rows(results: dict, opts: dict) -> list[Row]:
    from ._common import fmt_bytes

    sh = shapes(opts["quick"])
    r = results.get("bench")
    goal = (f"{sh['batch']:,} trajectories (eq. 56, schedule B, rtol 1e-8, atol 1e-10) ≥ "
            f"{GOAL_RATIO:.0f}× scipy per trajectory")
    if r is None:
        return [Row(NAME, goal, "failed", met="no")]
    base = (f"scipy solve_ivp RK45 looped: {fmt_seconds(r['scipy_per_traj_s'])} per trajectory "
            f"({r['scipy_n']} trajectories)")
    out = []
    for key, label, steps in (
            ("ensemble", "solve_ensemble (shared step)", f"{r['ensemble_steps']} steps"),
            ("ensemble8", "solve_ensemble (shared step), solver=\"dopri8\"",
             f"{r['ensemble8_steps']} steps"),
            ("vmap", "vmap(solve) (per-trajectory steps)", f"≤ {r['vmap_max_steps']} steps")):
        per = r[f"{key}_per_traj_s"]
        ratio = r["scipy_per_traj_s"] / per
        out.append(Row(
            f"{NAME}-{key}", goal + f": {label}",
            measured=(f"{fmt_seconds(per)} per trajectory ({steps}; first call with compile "
                      f"{fmt_seconds(r[f'{key}_first_s'])})"),
            baseline=base, ratio=f"{ratio:.0f}×", peak_memory=fmt_bytes(r["peak_rss"]),
            met=("yes" if ratio >= GOAL_RATIO else "no") if not opts["quick"] else
            "n/a (quick)",
            machine=machine_short(r.get("_jax", {})),
            notes=f"all four agree to {r['max_abs_diff']:.1e} (max abs over saved states)",
            values={**r, "ratio": ratio}))
    for key, label in (("big", ""), ("big8", ', solver="dopri8"')):
        per = r[f"{key}_per_traj_s"]
        ratio = r["scipy_per_traj_s"] / per
        out.append(Row(
            f"{NAME}-{key}", f"{r['big_batch']:,} trajectories (same law, same tolerances) ≥ "
            f"{BIG_GOAL_RATIO:.0f}× scipy per trajectory: solve_ensemble (shared step in blocks "
            f"of {BIG_BLOCK:,}){label}",
            measured=(f"{fmt_seconds(per)} per trajectory ({fmt_seconds(per * r['big_batch'])} "
                      f"in all, ≤ {r[f'{key}_steps']} steps per block; first call with compile "
                      f"{fmt_seconds(r[f'{key}_first_s'])})"),
            baseline=base, ratio=f"{ratio:.0f}×", peak_memory=fmt_bytes(r["peak_rss"]),
            met=("yes" if ratio >= BIG_GOAL_RATIO else "no") if not opts["quick"] else
            "n/a (quick)", machine=machine_short(r.get("_jax", {})),
            notes=f"every final p finite: {r[f'{key}_finite']}", values={**r, "ratio": ratio}))
    return out
