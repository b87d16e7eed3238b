"""Benchmark: the full F-GRPO Fig. 4 sweep of the categorical simulator (SPEC C4, issue 6).

17 group sizes N ∈ {2, …, 131072} × γ ∈ {0, 1} × 4 seeds × 1000 steps at A = 128,000, with the
configuration of ``experiments/categorical_regimes.py`` (Adam lr 1e-2, log-likelihood surrogate,
mean over the group, float64, metrics every 10 steps): one compiled program per N, γ × seeds
batched as ``run_many`` does it (``lax.map`` on CPU, see ``--batching``; the 8 runs split over
``--workers`` threads, default one per core). Baseline: a straightforward
per-configuration loop (one jitted ``step`` called from a
Python loop per step, metrics every 10 steps), timed on a subset of configurations and
extrapolated to the whole sweep (printed as such).

    python benchmarks/bench_categorical.py [--steps 1000] [--baseline-steps 100]
        [--dtype float64|float32] [--workers W]

``--dtype float32`` runs the simulator in float32 (``CategoricalConfig(dtype=...)``; the bound
is then computed for 4-byte floats); the default float64 is the configuration of record.

Prints, measured in this one run: the machine; the final seed means of Q_pos and M_ret per N
and γ (what Fig. 4 (c) plots: runs of the two dtypes can be compared); the sweep wall time
after compilation (goal ≤ 60 s on a 2-core CPU, ≤ 3 s on an H100/H200); the baseline and the
ratio; peak memory (goal ≤ 2 GB); and the per-step cost against the memory-traffic bound (state
bytes read + written per step ÷ a bandwidth measured here by a large array copy,
single-threaded and with one copy per worker thread; goal within 2×).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
from concurrent.futures import ThreadPoolExecutor

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

from simplexlab import categorical as C  # noqa: E402
from simplexlab._categorical import _in_chunks, _run_many_jit  # noqa: E402

NS = tuple(2 ** k for k in range(1, 18))
GAMMAS = (0.0, 1.0)
SEEDS = 4
STRIDE = 10


DTYPE = None


def config(n: int) -> C.CategoricalConfig:
    return C.CategoricalConfig(group_size=n, surrogate="log_likelihood", reduction="mean",
                               optimizer=optax.adam, learning_rate=1e-2, dtype=DTYPE)


def measured_bandwidth(nbytes: int = 256 * 2**20, repeats: int = 5, threads: int = 1) -> float:
    """Bytes read + written per second by large NumPy copies, one per thread running at once
    (NumPy releases the GIL while copying), best of ``repeats``."""
    pairs = [(np.ones(nbytes // 8), np.empty(nbytes // 8)) for _ in range(threads)]
    best = np.inf
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in range(repeats):
            t0 = time.perf_counter()
            list(pool.map(lambda sd: np.copyto(sd[1], sd[0]), pairs))
            best = min(best, time.perf_counter() - t0)
    return 2 * nbytes * threads / best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--baseline-steps", type=int, default=100)
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    ap.add_argument("--batching", choices=("auto", "vmap", "map"), default="auto",
                    help="run_many batching of the 8 runs per N (auto: lax.map on CPU)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="threads the 8 runs per N are split over (run_many's workers)")
    args = ap.parse_args()
    global DTYPE
    DTYPE = jnp.dtype(args.dtype)
    a = C.CategoricalPolicy().num_actions
    keys = jnp.concatenate([jax.random.split(jax.random.key(0), SEEDS)] * len(GAMMAS))
    gammas = jnp.repeat(jnp.asarray(GAMMAS), SEEDS)
    lrs = jnp.full(keys.shape[0], 1e-2, DTYPE)
    gammas = gammas.astype(DTYPE)
    runs = keys.shape[0]

    # ---- compile every N ahead of time (one program per N, for one worker's chunk) ----
    w = min(args.workers, runs)
    if runs % w:
        raise SystemExit(f"--workers must divide the {runs} runs per N")
    chunk = runs // w  # _in_chunks then splits the batch into w chunks of exactly this size
    t0 = time.perf_counter()
    compiled = {n: _run_many_jit.lower(config(n), keys[:chunk], lrs[:chunk], gammas[:chunk],
                                       args.steps, STRIDE, args.batching).compile()
                for n in NS}
    compile_s = time.perf_counter() - t0

    # ---- the full sweep ----
    t0 = time.perf_counter()
    per_n, outs = {}, {}
    for n in NS:
        t1 = time.perf_counter()
        outs[n] = _in_chunks(lambda *a, n=n: compiled[n](config(n), *a), (keys, lrs, gammas), w)
        jax.block_until_ready(outs[n])
        per_n[n] = time.perf_counter() - t1
    sweep_s = time.perf_counter() - t0
    final = {n: {k: np.asarray(getattr(out, k)[:, -1], float).reshape(len(GAMMAS), SEEDS)
                 .mean(axis=1) for k in ("q_pos", "m_ret")} for n, out in outs.items()}
    total_steps = len(NS) * runs * args.steps
    per_step = sweep_s / total_steps

    # ---- baseline: per-configuration Python loop over a jitted step ----
    step = jax.jit(C.step)
    met = jax.jit(C.metrics)
    subset = (2, 1024, 131072)
    base = {}
    for n in subset:
        cfg = config(n)
        s = C.init(cfg, jax.random.key(1))
        jax.block_until_ready(met(cfg, step(cfg, s)))  # compile
        t1 = time.perf_counter()
        for t in range(args.baseline_steps):
            s = step(cfg, s)
            if (t + 1) % STRIDE == 0:
                met(cfg, s)
        jax.block_until_ready(s.logits)
        base[n] = (time.perf_counter() - t1) / args.baseline_steps
    base_per_step = float(np.mean(list(base.values())))
    base_sweep = base_per_step * total_steps

    # ---- memory-traffic bound ----
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    # (before the bandwidth probe, whose 256 MiB buffers would count in the process's peak)
    bw = measured_bandwidth()
    bw_w = measured_bandwidth(threads=w) if w > 1 else bw
    itemsize = DTYPE.itemsize
    # state read + written every step: logits, Adam mu and nu (A floats each, read and written)
    state_bytes = 3 * 2 * a * itemsize

    cpu = platform.processor() or platform.machine()
    print(f"machine: {platform.platform()} | {cpu} | {os.cpu_count()} logical CPUs | "
          f"jax {jax.__version__} backend={jax.default_backend()} devices={jax.devices()}")
    print(f"problem: A = {a:,}, {len(NS)} N x {len(GAMMAS)} gamma x {SEEDS} seeds x "
          f"{args.steps} steps = {total_steps:,} policy steps; Adam lr 1e-2, log-likelihood, "
          f"mean, {args.dtype}, metrics every {STRIDE} steps, batching={args.batching}, "
          f"{w} worker thread(s)")
    print(f"compile (17 programs, ahead of time): {compile_s:.1f} s")
    print("final seed means (what Fig. 4 (c) plots; compare runs of different --dtype): "
          + "; ".join(f"N={n}: Q_pos " + "/".join(f"{q:.3f}" for q in final[n]["q_pos"])
                      + " M_ret " + "/".join(f"{m:.3f}" for m in final[n]["m_ret"])
                      for n in NS) + "  (gamma = 0/1)")
    print("per-N wall (s): " + ", ".join(f"{n}: {per_n[n]:.2f}" for n in NS))
    print("per-N ms per policy step: " + ", ".join(
        f"{n}: {per_n[n] / (runs * args.steps) * 1e3:.2f}" for n in NS))
    full = sweep_s * 1000 / args.steps  # the Fig. 4 sweep is 1000 steps per run
    note = "" if args.steps == 1000 else (
        f" (measured with {args.steps} steps, scaled x{1000 / args.steps:g})")
    print(f"sweep wall after compilation ({args.steps} steps): {sweep_s:.1f} s; full 1000-step "
          f"sweep: {full:.1f} s{note} (goal <= 60 s on 2-core CPU: "
          f"{'MET' if full <= 60 else 'NOT MET'})")
    print(f"  -> {per_step * 1e3:.3f} ms of wall time per policy step (sweep wall / policy "
          f"steps; {w} thread(s) at once)")
    print(f"baseline per-configuration loop (jitted step called from Python), measured on "
          f"N in {subset}, {args.baseline_steps} steps each: "
          + ", ".join(f"N={n}: {base[n] * 1e3:.2f} ms/step" for n in subset))
    print(f"  extrapolated to the full sweep (mean of the subset x {total_steps:,} steps): "
          f"{base_sweep:.0f} s")
    print(f"ratio (baseline / batched sweep): {base_sweep / sweep_s:.2f}x")
    print(f"peak memory (ru_maxrss): {peak_rss / 2**30:.2f} GiB "
          f"(goal <= 2 GB: {'MET' if peak_rss <= 2e9 else 'NOT MET'})")
    print(f"memory bandwidth (NumPy copy of 256 MiB, read + write): {bw / 1e9:.1f} GB/s on "
          f"one thread, {bw_w / 1e9:.1f} GB/s with {w} copies at once")
    for label, b_ in (("single-thread bandwidth", bw), (f"{w}-thread bandwidth", bw_w)):
        bound = state_bytes / b_
        print(f"memory-traffic bound ({label}): state {state_bytes / 1e6:.2f} MB read+written "
              f"per step / {b_ / 1e9:.1f} GB/s = {bound * 1e3:.3f} ms/step; measured "
              f"{per_step * 1e3:.3f} ms/step; ratio {per_step / bound:.1f}x (goal <= 2x: "
              f"{'MET' if per_step <= 2 * bound else 'NOT MET'})")


if __name__ == "__main__":
    main()
