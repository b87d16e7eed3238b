"""``python -m benchmarks``: run the suite and print one table (see :mod:`benchmarks`)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import BENCHMARKS
from ._common import (
    Row,
    configure_jax,
    cpu_count,
    host_info,
    jax_info,
    load_average,
    speed_probe,
    worker_env,
)

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = (("goal", "goal"), ("measured", "measured"), ("baseline", "baseline (same run)"),
           ("ratio", "ratio"), ("peak_memory", "peak memory"), ("met", "met"),
           ("machine", "machine"))


# ---- worker side -----------------------------------------------------------------------------

def _worker(spec: str, opts: dict, result: str) -> int:
    """Run ``benchmarks.<module>.<function>(opts)`` in this process and write its JSON."""
    load0 = load_average()
    configure_jax()
    module, func = spec.rsplit(".", 1)
    fn = getattr(importlib.import_module(f"benchmarks.{module}"), func)
    out = fn(opts)
    out["_jax"] = jax_info()
    out["_loadavg"] = [load0, load_average()]
    out["_xla_flags"] = os.environ.get("XLA_FLAGS", "")
    Path(result).write_text(json.dumps(out, default=float))
    return 0


# ---- suite side ------------------------------------------------------------------------------

def _run_worker(spec: str, host_devices: int | None, opts: dict, log) -> dict | None:
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "benchmarks", "--worker", spec, "--opts", json.dumps(opts),
               "--result", str(result)]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=worker_env(host_devices), capture_output=True,
                              text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0 or not result.exists():
            log(f"  {spec} FAILED (exit {proc.returncode}) after {wall:.0f} s; its output ends:")
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-25:]
            log("\n".join("    " + line for line in tail))
            return None
        log(f"  {spec}: {wall:.1f} s")
        out = json.loads(result.read_text())
        out["_process_wall_s"] = wall
        return out


def _best(runs: list, key: str) -> dict | None:
    """The round with the least ``key`` (all rounds' values kept under ``_rounds``)."""
    ok = [r for r in runs if r is not None]
    if not ok:
        return None
    best = dict(min(ok, key=lambda r: r.get(key, 0.0)))
    best["_rounds"] = [r.get(key) for r in ok]
    best["_all"] = ok
    return best


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def format_table(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(h for _, h in COLUMNS) + " |",
             "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(_cell(getattr(r, k)) for k, _ in COLUMNS) + " |")
    return "\n".join(lines)


def machine_line(host: dict, results: dict) -> str:
    jx = next((r["_jax"] for per in results.values() for r in per.values()
               if r and "_jax" in r), {})
    devices = sorted({f"{name}.{w}: {r['_jax']['devices']} {r['_jax']['backend']} device(s)"
                      for name, per in results.items() for w, r in per.items()
                      if r and "_jax" in r})
    mem = f", {host['memory_gib']} GiB" if host.get("memory_gib") else ""
    return (f"machine: {host['cpu']}, {host['cores']} cores{mem}, {host['platform']}, "
            f"Python {host['python']}; jax {jx.get('jax', '?')} (jaxlib {jx.get('jaxlib', '?')}),"
            f" backend {jx.get('backend', '?')}, x64 {jx.get('x64', '?')}; "
            + "; ".join(devices))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    ap.add_argument("--quick", action="store_true",
                    help="small shapes (a smoke test, < 2 min); says nothing about the goals")
    ap.add_argument("--only", action="append", default=None, metavar="NAME",
                    help=f"run only these benchmarks (repeat or comma-separate): "
                         f"{', '.join(BENCHMARKS)}")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                    help="dtype of the categorical simulator (float32: the timing "
                         "configuration; float64: the figure's)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every worker this many times, alternating the order of a "
                         "benchmark's workers (A B, B A, ...), and report each one's best")
    ap.add_argument("--repeats", type=int, default=None,
                    help="timed runs of the categorical sweep in each worker (default 2, 1 with "
                         "--quick; the engine's first run compiles, later ones reuse its "
                         "programs)")
    ap.add_argument("--block", type=int, default=None,
                    help="mean-field trajectories per shared-step block (default: 1000 seeds "
                         "on CPU, a whole device batch elsewhere)")
    ap.add_argument("--chunk", type=int, default=None,
                    help="mean-field trajectories per chunk of the sweep (default 100,000, 2,000 "
                         "with --quick; on an accelerator the block is a chunk's share of one "
                         "device)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--opts", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker(args.worker, json.loads(args.opts), args.result)

    names = list(BENCHMARKS)
    if args.only:
        names = [n.strip() for spec in args.only for n in spec.split(",") if n.strip()]
        unknown = sorted(set(names) - set(BENCHMARKS))
        if unknown:
            ap.error(f"unknown benchmark(s) {unknown}; choose from {list(BENCHMARKS)}")
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    for flag in ("repeats", "block", "chunk"):  # optional sizes: absent, or a count >= 1
        value = getattr(args, flag)
        if value is not None and value < 1:
            ap.error(f"--{flag} must be >= 1; got {value}")
    opts = {"quick": args.quick, "rounds": args.rounds, "repeats": args.repeats,
            "dtype": args.dtype, "block": args.block, "chunk": args.chunk}
    cores = cpu_count()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    host = host_info()
    started = datetime.datetime.now(datetime.UTC)
    t0 = time.perf_counter()
    log(f"benchmarks: {', '.join(names)}{' (--quick)' if args.quick else ''}; engine workers get "
        f"{cores} host devices; load average {host['loadavg']}")
    results: dict[str, dict] = {}
    rows: list[Row] = []
    for name in names:
        mod = BENCHMARKS[name]
        log(f"[{name}]")
        runs: dict[str, list] = {w: [] for w in mod.WORKERS}
        for i in range(args.rounds):
            # alternate the order (A B, B A, ...) so that a drift in the machine's load
            # hits both paths alike
            order = list(mod.WORKERS) if i % 2 == 0 else list(reversed(mod.WORKERS))
            for wname in order:
                devices = mod.WORKERS[wname][1]
                ndev = cores if devices == "cores" else devices
                runs[wname].append(_run_worker(f"{mod.__name__.rsplit('.', 1)[1]}.{wname}",
                                               ndev, opts, log))
        results[name] = {w: _best(r, getattr(mod, "BEST", "run_s")) for w, r in runs.items()}
        rows.extend(mod.rows(results[name], opts))
    total = time.perf_counter() - t0
    host_end = load_average()
    probe_end = speed_probe()

    print()
    print(f"simplexlab benchmarks, {started:%Y-%m-%d %H:%M} UTC"
          f"{' (--quick: small shapes, not the goals)' if args.quick else ''}; "
          f"suite wall {total:.0f} s")
    print()
    print(format_table(rows))
    print()
    for r in rows:
        if r.notes:
            print(f"- {r.benchmark}: {r.notes}")
    print(f"- {machine_line(host, results)}")
    print(f"- load average (1, 5, 15 min) at start {host['loadavg']}, at end {host_end} "
          f"(other jobs on the machine slow every number here); speed probe (a 10^7-iteration "
          f"Python loop, one core) {host['speed_probe_s']} s at start, {probe_end} s at end")
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({
            "date": started.isoformat(timespec="seconds"),
            "command": "python -m benchmarks " + " ".join(sys.argv[1:] if argv is None
                                                          else argv),
            "options": opts, "host": {**host, "loadavg_end": host_end,
                                      "speed_probe_end_s": probe_end},
            "suite_wall_s": total,
            "rows": [dataclasses.asdict(r) for r in rows], "results": results,
        }, indent=1, default=float))
        log(f"wrote {path}")
    failed = [r.benchmark for r in rows if r.measured == "failed"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
