"""Benchmark: a vmapped batch of (p, y, z) trajectories vs scipy ``solve_ivp`` looped per
trajectory.

Both integrate the same system (G²RPO eq. 56, neutralized bonus with schedule B, random λ0 per
trajectory, noisy verifier), K = 3, M = 2, physical time t ∈ [0, T], rtol = 1e-8, atol = 1e-10,
11 save points. The baseline's right-hand side is plain NumPy (what one would write for scipy);
the script checks that both agree before it reports a ratio.

    python benchmarks/bench_meanfield.py [--batch 2048] [--baseline-n 100]

Prints the machine, both per-trajectory costs, and their ratio, measured in this one run.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

import simplexlab as sl  # noqa: E402

K, M, T = 3, 2, 20.0
RTOL, ATOL = 1e-8, 1e-10
DFN, DFP, ETA = 0.05, 0.1, 1.0


def numpy_rhs(t, x, lam0):
    """The same field written directly in NumPy for scipy: eq. (56) with gain (67)."""
    p, y, z = x[0], x[1:1 + K], x[1 + K:]
    Jv = 1 - DFN - DFP
    q = (1 - DFN) - Jv * p
    sig = np.sqrt(q * (1 - q))
    Ly, Lz = y @ y, z @ z
    kap = ETA * Jv * p * (1 - p) / sig
    lam = lam0 * Jv * p / sig * (Ly + Lz) / (Lz + 1 / K)
    bb = lam * (1 / K - Ly) / (p * (Ly + Lz))
    a_y = kap - ETA * (1 - p) * lam - ETA * p * (1 - p) * bb
    a_z = -kap + ETA * p * (1 - p) * bb
    pdot = -kap * p * (1 - p) * (Ly + Lz)
    return np.concatenate([[pdot], a_y * (y * y - Ly * y), a_z * (z * z - Lz * z)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--baseline-n", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    n = args.batch
    p0 = rng.uniform(0.2, 0.9, n)
    y0 = rng.dirichlet(np.ones(K), n)
    z0 = rng.dirichlet(np.ones(M), n)
    lam0 = rng.uniform(0.0, 3.0, n)
    ts = np.linspace(0.0, T, 11)
    ver = sl.Verifier(DFN, DFP)

    def one(s, lam):
        return sl.solve(sl.Neutralized(sl.ScheduleB(lam), verifier=ver, eta=ETA), s, t1=T,
                        saveat=jnp.asarray(ts), rtol=RTOL, atol=ATOL)

    def best_time(fn, *a):
        t0 = time.perf_counter()
        out = fn(*a)
        jax.block_until_ready(out.p)
        compile_s = time.perf_counter() - t0
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            out = fn(*a)
            jax.block_until_ready(out.p)
            times.append(time.perf_counter() - t0)
        return out, min(times), compile_s

    states = sl.State(jnp.asarray(p0), jnp.asarray(y0), jnp.asarray(z0))
    vmapped = eqx.filter_jit(eqx.filter_vmap(one))
    sols, vmap_total, vmap_compile = best_time(vmapped, states, jnp.asarray(lam0))

    def ensemble(s, lam):
        return sl.solve_ensemble(sl.Neutralized(sl.ScheduleB(lam), verifier=ver, eta=ETA), s,
                                 t1=T, saveat=jnp.asarray(ts), rtol=RTOL, atol=ATOL)

    ens, ens_total, ens_compile = best_time(ensemble, states, jnp.asarray(lam0))

    nb = min(args.baseline_n, n)
    t0 = time.perf_counter()
    max_err = 0.0
    for i in range(nb):
        x0 = np.concatenate([[p0[i]], y0[i], z0[i]])
        r = solve_ivp(numpy_rhs, (0.0, T), x0, method="RK45", t_eval=ts, rtol=RTOL, atol=ATOL,
                      args=(lam0[i],))
        for sol in (sols, ens):
            ours = np.concatenate([np.asarray(sol.p[i])[:, None], np.asarray(sol.y[i]),
                                   np.asarray(sol.z[i])], axis=1)
            max_err = max(max_err, float(np.max(np.abs(r.y.T - ours))))
    scipy_per = (time.perf_counter() - t0) / nb

    cpu = platform.processor() or platform.machine()
    print(f"machine: {platform.platform()} | {cpu} | {os.cpu_count()} logical CPUs | "
          f"jax {jax.__version__} backend={jax.default_backend()} devices={jax.devices()}")
    print(f"problem: G²RPO eq. (56) + schedule B, K={K}, M={M}, t in [0, {T}], rtol={RTOL}, "
          f"atol={ATOL}, 11 save points")
    for label, total, comp, steps in [
        ("vmap(solve), per-trajectory steps", vmap_total, vmap_compile,
         int(np.max(np.asarray(sols.num_steps)))),
        ("solve_ensemble, shared step", ens_total, ens_compile, int(ens.num_steps[0])),
    ]:
        print(f"simplexlab {label}: batch {n}: {total * 1e3:.1f} ms total (best of "
              f"{args.repeats}; compile {comp:.1f} s) -> {total / n * 1e6:.1f} us/trajectory, "
              f"max steps {steps}")
    print(f"baseline scipy solve_ivp RK45 looped: {nb} trajectories -> "
          f"{scipy_per * 1e6:.1f} us/trajectory")
    print(f"max |difference| scipy vs simplexlab (both paths, {nb} trajectories): {max_err:.2e}")
    print(f"ratio (baseline / vmap(solve), per trajectory): {scipy_per / (vmap_total / n):.0f}x")
    print(f"ratio (baseline / solve_ensemble, per trajectory): {scipy_per / (ens_total / n):.0f}x")


if __name__ == "__main__":
    main()
