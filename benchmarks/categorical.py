"""Goal 1: the F-GRPO Fig. 4 sweep of the categorical simulator through the sweep engine, against
the old ``run_many`` thread-pool path, and the per-step cost against the memory-traffic bound.

The sweep: A = 128,000 actions (10,000 correct, App. J logits), N ∈ {2, 4, …, 131072} (17
group sizes) × γ ∈ {0, 1} × 4 seeds × T = 1000 steps, metrics every 10 steps, the configuration
of ``experiments/categorical_regimes.py`` (``FIG4_CONFIG``: Adam lr 1e-2 on the log-likelihood
surrogate, mean over the group), float32 (the timing configuration; ``--dtype float64`` for the
figure's own dtype): 136,000 policy steps.

- *engine* (measured): ``simplexlab.sweep.run("categorical", {"group_size": Ns,
  "focal_gamma": [0, 1]}, seeds=4, ...)`` in a process with one CPU device per core
  (``XLA_FLAGS=--xla_force_host_platform_device_count=<cores>``): one program per bucket of
  group sizes (on a CPU, N ≤ 1024 in one and each larger N in its own: 8 programs; on an
  accelerator one), its runs sharded over the devices with ``jax.shard_map``, ``lax.map``
  within a device on a CPU (``vmap`` on an accelerator). The compile
  time inside the call (every ``/jax/core/compile/*`` duration that ``jax.monitoring`` reports:
  tracing, lowering, XLA) is counted separately and subtracted from its wall time.
- *baseline*: the old ``run_many`` path, removed from the package and rebuilt here from the
  public ``simplexlab.sim.categorical_run``: one jitted program per N (``lax.map`` over the runs of
  a chunk), compiled ahead of time (``.lower().compile()``, timed apart), the 8 runs split in
  contiguous chunks over one thread per core (``ThreadPoolExecutor``), in a process with JAX's
  default single CPU device, as the old package ran.

Both use the same keys (``split(key(0), 4)`` for every (N, γ)) and report the final seed means
of Q_pos and M_ret per N, so the suite checks that the two paths computed the same thing.

- *compiled step* (``hlo``): one policy step of the simulator (A = 128,000, the sweep's dtype,
  136 runs under ``vmap``, group sizes padded to 131,072 as on an accelerator and to 8) compiled
  for this machine with each sampler method (``"tree"``, the CPU's; ``"parallel"``, the
  accelerators'), and the counts read from the compiled HLO: ``while`` loops (each iteration a
  kernel launch on a GPU) and their total known trip count (the sequential iterations of a
  step), fusions (a proxy for kernels). The figures to watch without an accelerator.
"""

from __future__ import annotations

import time

from ._common import (
    GB,
    CompileTimer,
    Row,
    bandwidth,
    cpu_seconds,
    fmt_bytes,
    fmt_seconds,
    load_average,
    machine_short,
    peak_rss,
)

NAME = "categorical"
BEST = "run_s"  # with --rounds: each path's round with the least time after compilation
GAMMAS = (0.0, 1.0)
SEEDS = 4
STRIDE = 10


def shapes(quick: bool) -> dict:
    if quick:  # the quick setting of categorical-regimes: a 2,000-action policy, 100 steps
        return {"num_actions": 2_000, "num_correct": 156,
                "ns": [2, 64], "steps": 100}
    return {"num_actions": 128_000, "num_correct": 10_000,
            "ns": [2 ** k for k in range(1, 18)], "steps": 1000}


def fig4_config() -> dict:
    from simplexlab.lab import load_experiment_module

    return dict(load_experiment_module("categorical_regimes").FIG4_CONFIG)


def _finals(q, m) -> dict:
    """Seed means of the final Q_pos, M_ret: ``{N: [[γ0, γ1] Q_pos, [γ0, γ1] M_ret]}``."""
    import numpy as np

    return {"q_pos": np.asarray(q, float).mean(axis=-1).tolist(),
            "m_ret": np.asarray(m, float).mean(axis=-1).tolist()}


def engine(opts: dict) -> dict:
    """Worker: the sweep through ``simplexlab.sweep.run`` (one device per core)."""
    import jax
    import numpy as np
    import xarray  # noqa: F401  (imported by the engine on first use: not part of the timing)

    from simplexlab import sweep

    sh = shapes(opts["quick"])
    cfg = fig4_config()
    fixed = {"num_actions": sh["num_actions"], "num_correct": sh["num_correct"],
             "surrogate": cfg["surrogate"], "reduction": cfg["reduction"],
             "optimizer": cfg["optimizer"], "eta": cfg["eta"],
             "dtype": opts["dtype"], "num_steps": sh["steps"], "stride": STRIDE}
    runs = []
    for _ in range(_repeats(opts)):
        # the first call compiles one program per bucket of N on the way (timed apart by
        # CompileTimer); the engine keeps its compiled programs, so later calls of the same
        # sweep compile nothing: they time the engine alone
        timer = CompileTimer()
        load0, cpu0, t0 = load_average(), cpu_seconds(), time.perf_counter()
        ds = sweep.run("categorical", {"group_size": sh["ns"], "focal_gamma": list(GAMMAS)},
                       fixed=fixed, seeds=SEEDS, seed=0, progress=False)
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        timer.close()
        runs.append({"wall_s": wall, "compile_s": timer.total, "programs": timer.count,
                     "run_s": wall - timer.total, "cpu_s": cpu, "loadavg": [load0,
                                                                            load_average()]})
    peak = peak_rss()  # before the bandwidth probe, whose buffers would count
    best = min(runs, key=lambda r: r["run_s"])
    out = {**best, "compile_s": runs[0]["compile_s"], "programs": runs[0]["programs"],
           "runs": runs, "peak_rss": peak, "devices": len(jax.devices()),
           "chunks": int(ds.attrs["chunks"]),
           "finals": _finals(ds.q_pos.isel(step=-1).values, ds.m_ret.isel(step=-1).values)}
    out["policy_steps"] = len(sh["ns"]) * len(GAMMAS) * SEEDS * sh["steps"]
    if jax.default_backend() == "cpu":
        out["bandwidth_1"] = bandwidth()
        out["bandwidth_n"] = bandwidth(threads=len(jax.devices()))
    out["itemsize"] = int(np.dtype(opts["dtype"]).itemsize)
    return out


def baseline(opts: dict) -> dict:
    """Worker: the old ``run_many`` path (one compiled program per N, the batch split over one
    thread per core, ``lax.map`` inside), rebuilt from the public ``simplexlab.sim``."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import numpy as np

    from simplexlab import sim as C

    sh = shapes(opts["quick"])
    cfg = fig4_config()
    dt = jnp.dtype(opts["dtype"])

    def config(n):
        return C.Categorical.make(
            group_size=n, num_actions=sh["num_actions"], num_correct=sh["num_correct"],
            surrogate=cfg["surrogate"], reduction=cfg["reduction"],
            optimizer=cfg["optimizer"], eta=cfg["eta"],
            dtype=opts["dtype"]).config

    def run_many(config, keys, lrs, gammas, num_steps, stride, batching):
        def one(key, lr, gamma):
            c = eqx.tree_at(lambda c: (c.eta, c.focal_gamma), config, (lr, gamma))
            return C.categorical_run(c, key, num_steps, stride)[1]

        if batching == "auto":
            batching = "map" if jax.default_backend() == "cpu" else "vmap"
        if batching == "vmap":
            return jax.vmap(one)(keys, lrs, gammas)
        return jax.lax.map(lambda a: one(*a), (keys, lrs, gammas))

    run_many_jit = jax.jit(run_many, static_argnames=("num_steps", "stride", "batching"))

    def in_chunks(call, args, workers):
        b = args[0].shape[0]
        workers = min(workers, b)
        if workers == 1:
            return jax.block_until_ready(call(*args))
        bounds = np.linspace(0, b, workers + 1).round().astype(int)
        chunks = [tuple(a[i:j] for a in args) for i, j in zip(bounds[:-1], bounds[1:],
                                                               strict=True)]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(lambda c: jax.block_until_ready(call(*c)), chunks))
        return jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *parts)

    keys = jnp.concatenate([jax.random.split(jax.random.key(0), SEEDS)] * len(GAMMAS))
    gammas = jnp.repeat(jnp.asarray(GAMMAS, dt), SEEDS)
    lrs = jnp.full(keys.shape[0], cfg["eta"], dt)
    runs = keys.shape[0]
    # the old default: one worker per core on CPU, 1 elsewhere
    w = (os.cpu_count() or 1) if jax.default_backend() == "cpu" else 1
    w = min(w, runs)
    while runs % w:
        w -= 1
    chunk = runs // w
    t0 = time.perf_counter()
    compiled = {n: run_many_jit.lower(config(n), keys[:chunk], lrs[:chunk], gammas[:chunk],
                                      sh["steps"], STRIDE, "auto").compile()
                for n in sh["ns"]}
    compile_s = time.perf_counter() - t0
    runs = []
    for _ in range(_repeats(opts)):
        outs = {}
        load0, cpu0, t0 = load_average(), cpu_seconds(), time.perf_counter()
        for n in sh["ns"]:
            outs[n] = in_chunks(lambda *a, n=n: compiled[n](config(n), *a), (keys, lrs, gammas),
                                w)
        runs.append({"run_s": time.perf_counter() - t0, "cpu_s": cpu_seconds() - cpu0,
                     "loadavg": [load0, load_average()]})
    peak = peak_rss()
    q = np.stack([np.asarray(outs[n].q_pos[:, -1]).reshape(len(GAMMAS), SEEDS) for n in sh["ns"]])
    m = np.stack([np.asarray(outs[n].m_ret[:, -1]).reshape(len(GAMMAS), SEEDS) for n in sh["ns"]])
    best = min(runs, key=lambda r: r["run_s"])
    return {**best, "runs": runs, "compile_s": compile_s, "programs": len(compiled),
            "peak_rss": peak, "workers": w, "devices": len(jax.devices()),
            "finals": _finals(q, m)}


def hlo_counts(text: str) -> dict:
    """Counts of compiled HLO ``text``: ``while`` loops, the sum of their known trip counts
    (a loop inside another counts once per outer iteration only as far as XLA states its trip
    count), fusions and instructions."""
    import re

    whiles = [line for line in text.splitlines() if re.search(r"\bwhile\(", line)]
    trips = [int(m.group(1)) for line in whiles
             for m in [re.search(r'"known_trip_count":\{"n":"(\d+)"', line)] if m]
    key = [line for line in whiles if re.search(r"while\(", line)
           and "u32[" in line.split("while(")[0]]  # the PRNG key's threefry rounds
    return {"while": len(whiles), "key_while": len(key), "trip_sum": sum(trips),
            "trips": sorted(trips),
            "fusions": len(re.findall(r"\bfusion\(", text)),
            "instructions": len(re.findall(r"^\s*(?:ROOT )?%\S+ = ", text, re.M))}


def hlo(opts: dict) -> dict:
    """Worker: the compiled categorical step with each sampler method (module docstring)."""
    import jax
    import jax.numpy as jnp

    from simplexlab import sim as C

    sh = shapes(opts["quick"])
    cfg = fig4_config()
    runs = len(sh["ns"]) * len(GAMMAS) * SEEDS
    out = {"runs": runs, "num_actions": sh["num_actions"]}
    for bound in (max(sh["ns"]), 8):
        for method in ("tree", "parallel"):
            sim = C.Categorical.make(
                num_actions=sh["num_actions"], num_correct=sh["num_correct"],
                surrogate=cfg["surrogate"], reduction=cfg["reduction"],
                optimizer=cfg["optimizer"], eta=cfg["eta"], dtype=opts["dtype"],
                max_group_size=bound, sampler=method)
            params = {k: jnp.full((runs,), v) for k, v in sim.default_params().items()}
            keys = jax.random.split(jax.random.key(0), runs)
            states = jax.vmap(sim.init)(keys, params)
            t0 = time.perf_counter()
            text = jax.jit(jax.vmap(sim.step)).lower(states, params).compile().as_text()
            out[f"{method}@{bound}"] = {**hlo_counts(text),
                                        "compile_s": time.perf_counter() - t0}
    return out


WORKERS = {"engine": (engine, "cores"), "baseline": (baseline, None), "hlo": (hlo, None)}


def _repeats(opts: dict) -> int:
    """Timed runs per worker: ``--repeats``, default 2 (1 with ``--quick``)."""
    return int(opts.get("repeats") or (1 if opts["quick"] else 2))


def _timed_runs(res: dict) -> list[dict]:
    """Every timed run of a worker, over all ``--rounds``."""
    return [run for r in res.get("_all", [res]) for run in r.get("runs", [])]


def _cpu_clean(runs: list[dict]) -> list[float]:
    """CPU seconds of the runs that compiled nothing (the engine's first run compiles)."""
    return [r["cpu_s"] for r in runs if r.get("compile_s", 0.0) < 0.5]


def _verdict(eng_s: float, base_s: float, e_runs: list[dict], b_runs: list[dict]) -> str:
    """``yes`` if the engine's best is no slower than the baseline's; ``tie`` if it is slower by
    less than the run-to-run spread of either path in this run (max / min − 1 of its timed
    runs: the comparison cannot tell them apart); else ``no``."""
    if eng_s <= base_s:
        return "yes"
    spread = max((max(r["run_s"] for r in runs) / min(r["run_s"] for r in runs) - 1.0)
                 for runs in (e_runs, b_runs) if len(runs) > 1) if (
        len(e_runs) > 1 or len(b_runs) > 1) else 0.0
    if eng_s / base_s - 1.0 <= spread:
        return (f"tie: {100 * (eng_s / base_s - 1):.0f}% slower, within the "
                f"{100 * spread:.0f}% run-to-run spread")
    return "no"


def rows(results: dict, opts: dict) -> list[Row]:
    import numpy as np

    sh = shapes(opts["quick"])
    eng, base = results.get("engine"), results.get("baseline")
    scale = "" if not opts["quick"] else (
        f" (--quick: A = {sh['num_actions']:,}, N ≤ {max(sh['ns'])}, T = {sh['steps']})")
    goal = (f"Fig. 4 sweep, {len(sh['ns'])} N × 2 γ × {SEEDS} seeds × {sh['steps']} steps, "
            f"{opts['dtype']}, sweep engine ≤ old run_many path" + scale)
    out = []
    if eng is None or base is None:
        return [Row(NAME, goal, "failed" if eng is None else fmt_seconds(eng["run_s"]),
                    "failed" if base is None else fmt_seconds(base["run_s"]), met="no")]
    ratio = base["run_s"] / eng["run_s"]
    diff = max(float(np.max(np.abs(np.asarray(eng["finals"][k]) -
                                   np.asarray(base["finals"][k]))))
               for k in ("q_pos", "m_ret"))
    peak = max(eng["peak_rss"], base["peak_rss"])
    e_runs, b_runs = _timed_runs(eng), _timed_runs(base)
    e_cpu, b_cpu = _cpu_clean(e_runs), _cpu_clean(b_runs)
    cpu_ratio = min(b_cpu) / min(e_cpu) if e_cpu and b_cpu else None

    def show(runs):
        return ", ".join(fmt_seconds(r["run_s"]) for r in runs)

    notes = (f"timed runs after compilation (wall): engine {show(e_runs)}; baseline "
             f"{show(b_runs)}; the best of each is compared")
    if cpu_ratio is not None:
        notes += (f"; CPU time (user + system; less sensitive than wall time to other jobs): "
                  f"engine "
                  f"{fmt_seconds(min(e_cpu))}, baseline {fmt_seconds(min(b_cpu))}, ratio "
                  f"{cpu_ratio:.2f}×")
    if not opts["quick"]:
        notes += (f"; {'≤' if eng['run_s'] <= 60 else '>'} 60 s (the 60-second CPU goal of the "
                  "Fig. 4 sweep)")
    notes += (f"; final seed means of Q_pos, M_ret of the two paths agree to {diff:.1e}; "
              f"{eng['run_s'] / eng['policy_steps'] * 1e3:.3f} ms wall per policy step; "
              f"engine {load_span(e_runs)}; baseline {load_span(b_runs)}")
    out.append(Row(
        NAME, goal,
        measured=(f"{fmt_seconds(eng['run_s'])} after compilation (engine, {eng['devices']} "
                  f"devices; + {fmt_seconds(eng['compile_s'])} compiling {eng['programs']} "
                  f"programs)"),
        baseline=(f"{fmt_seconds(base['run_s'])} (run_many: {base['workers']} threads on "
                  f"{base['devices']} device; + {fmt_seconds(base['compile_s'])} compile)"),
        ratio=(f"{ratio:.2f}× (baseline / engine)"
               + (f"; CPU time {cpu_ratio:.2f}×" if cpu_ratio is not None else "")),
        peak_memory=(f"{fmt_bytes(eng['peak_rss'])} engine, {fmt_bytes(base['peak_rss'])} "
                     f"baseline"),
        met=_verdict(eng["run_s"], base["run_s"], e_runs, b_runs) if not opts["quick"] else
        "n/a (quick)",
        machine=(f"{machine_short(eng.get('_jax', {}))}; baseline "
                 f"{machine_short(base.get('_jax', {}))}"),
        notes=notes,
        values={"engine": eng, "baseline": base, "ratio": ratio, "cpu_ratio": cpu_ratio,
                "max_final_diff": diff, "peak_rss": peak}))
    h = results.get("hlo")
    if h is not None:
        def fmt(c):
            return (f"{c['while']} while loops ({c['key_while']} of them the PRNG key's; "
                    f"{c['trip_sum']} sequential iterations), {c['fusions']} fusions, "
                    f"compiled in {fmt_seconds(c['compile_s'])}")
        big = max(sh["ns"])
        out.append(Row(
            NAME + "-hlo",
            f"compiled policy step, {h['runs']} runs (vmap), A = {h['num_actions']:,}, "
            f"{opts['dtype']}: sequential depth O(log A), no loop (parallel sampler)",
            measured=(f"parallel: {fmt(h[f'parallel@{big}'])} (N ≤ {big}); "
                      f"{fmt(h['parallel@8'])} (N ≤ 8)"),
            baseline=(f"tree: {fmt(h[f'tree@{big}'])} (N ≤ {big}); "
                      f"{fmt(h['tree@8'])} (N ≤ 8)"),
            ratio=(f"{h[f'tree@{big}']['trip_sum']} → {h[f'parallel@{big}']['trip_sum']} "
                   f"sequential loop iterations"),
            met=("yes" if h[f"parallel@{big}"]["while"] == h[f"parallel@{big}"]["key_while"]
                 else "no"),
            machine=machine_short(h.get("_jax", {})),
            notes=("read from jax.jit(vmap(step)).lower(...).compile().as_text() on this "
                   "machine's backend; a loop left in the parallel step is the PRNG key's "
                   "threefry (rolled on CPU, unrolled on GPU); trip counts: tree "
                   f"{h[f'tree@{big}']['trips']}, parallel {h[f'parallel@{big}']['trips']}"),
            values=h))
    out.extend(bound_rows(eng, opts))
    return out


def load_span(runs: list[dict]) -> str:
    """The 1-minute load average over the timed runs (start of the first, end of the last):
    other jobs on the machine inflate wall times, not the CPU time of these runs."""
    loads = [r["loadavg"] for r in runs if r.get("loadavg")]
    if not loads or not loads[0][0] or not loads[-1][1]:
        return "load average unknown"
    return f"1-min load average {loads[0][0][0]:.2f} → {loads[-1][1][0]:.2f} over the timed runs"


def bound_rows(eng: dict, opts: dict) -> list[Row]:
    """The engine sweep's wall time per policy step against the memory-traffic bound (one step
    reads and writes the logits and Adam's two moments: 6 A-vectors of the dtype) and, since
    wall time on a shared machine counts other jobs, the same from the CPU time of the run
    that compiled nothing (CPU seconds per policy step ÷ devices: the wall time the step would
    take on as many idle cores)."""
    if "bandwidth_1" not in eng:
        return []
    sh = shapes(opts["quick"])
    scale = "" if not opts["quick"] else (
        f" (--quick: A = {sh['num_actions']:,}, N ≤ {max(sh['ns'])}, T = {sh['steps']})")
    per_step = eng["run_s"] / eng["policy_steps"]
    state = 3 * 2 * sh["num_actions"] * eng["itemsize"]  # logits, Adam mu, nu: read + write
    b1, bn = eng["bandwidth_1"], eng["bandwidth_n"]
    bound1, boundn = state / b1, state / bn
    clean = _cpu_clean(_timed_runs(eng))
    cpu_step = min(clean) / eng["policy_steps"] / eng["devices"] if clean else None
    ratio = f"{per_step / bound1:.2f}× (one-thread), {per_step / boundn:.2f}×"
    measured = f"{per_step * 1e3:.3f} ms per step (engine sweep wall / policy steps)"
    if cpu_step is not None:
        ratio += f"; CPU time {cpu_step / bound1:.2f}× (one-thread)"
        measured += (f"; CPU time {cpu_step * 1e3:.3f} ms per step per device (CPU seconds / "
                     f"policy steps / {eng['devices']} devices)")
    return [Row(
        NAME + "-bound" + ("" if opts["dtype"] == "float32" else f"-{opts['dtype']}"),
        f"per policy step within 2× of the memory-traffic bound ({opts['dtype']}){scale}",
        measured=measured,
        baseline=(f"bound {bound1 * 1e3:.3f} ms = {state / 1e6:.2f} MB ÷ {b1 / GB:.1f} GB/s "
                  f"(one-thread copy); {boundn * 1e3:.3f} ms ÷ {bn / GB:.1f} GB/s "
                  f"({eng['devices']} copies at once)"),
        ratio=ratio,
        peak_memory="—",
        met=("yes" if per_step <= 2 * bound1 else "no") if not opts["quick"] else
        "n/a (quick)",
        machine=machine_short(eng.get("_jax", {})),
        notes=(f"{load_span(_timed_runs(eng))}; met is judged on wall time, the CPU-time ratio "
               f"is what the step would take on idle cores"),
        values={"per_step_s": per_step, "state_bytes": state, "bandwidth_1": b1,
                "bandwidth_n": bn, "ratio_1": per_step / bound1,
                "ratio_n": per_step / boundn, "cpu_step_s": cpu_step,
                "cpu_ratio_1": cpu_step / bound1 if cpu_step is not None else None})]
