"""Compile once: ``simplexlab reproduce --quick`` of a few experiments
(:data:`EXPERIMENTS`: their claims, then the experiments; the whole set takes minutes per run on
2 cores) run twice,
each time in a fresh process, sharing one persistent compilation cache that starts empty.

Each run is ``python -c`` calling the CLI's ``main(["reproduce", *NAMES, ...])`` in a process of its
own (the command line's own path: one CPU device per core, float64, the cache of
``SIMPLEXLAB_JAX_CACHE``, here a new temporary folder), with ``jax.monitoring`` listeners that add
up the XLA compile time (``/jax/core/compile/backend_compile_duration``: compiling, or loading
from the cache on a hit), the tracing and lowering time (not cached by JAX: every process traces
again), and count the programs and the cache's hits. The first run fills the cache, the second
should compile nothing: its backend time is loading. JAX 0.10.2 never stores a program with host
callbacks ("Not writing persistent cache entry ... because it uses host callbacks"): every
``eqx.error_if`` left in a compiled program (run-time input checks, diffrax's ``throw=True``)
makes its program compile again in every process; those are counted as "compiled again" with
their XLA time and named (JAX's log). The baseline is the first run, in the same suite run.
``--quick`` changes nothing: the experiments run their quick settings either way (the programs
are the point, not the size).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ._common import Row, fmt_seconds, machine_short

NAME = "compile-cache"
BEST = "second_backend_s"
#: the experiments reproduced (quick): a tiny one, a bandit simulation, the ODE layer (solve,
#: solve_ensemble) with the claims of each
EXPERIMENTS = ("focal-weight", "neutrality", "phase-portraits")

#: the child: CLI main with compile-time listeners, the sums printed as one JSON line
CHILD = r"""
import json, sys, time
import jax.monitoring as mon
tot = {"backend_s": 0.0, "trace_s": 0.0, "lower_s": 0.0, "programs": 0, "hits": 0, "misses": 0,
       "saved_s": 0.0, "load_s": 0.0}
names = {"/jax/core/compile/backend_compile_duration": "backend_s",
         "/jax/core/compile/jaxpr_trace_duration": "trace_s",
         "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s"}
def on_duration(event, seconds, **kw):
    if event == "/jax/compilation_cache/cache_retrieval_time_sec":
        tot["load_s"] += seconds
    if event in names:
        tot[names[event]] += seconds
        tot["programs"] += event.endswith("backend_compile_duration")
def on_event(event, **kw):
    if event == "/jax/compilation_cache/cache_hits":
        tot["hits"] += 1
    elif event == "/jax/compilation_cache/cache_misses":
        tot["misses"] += 1
mon.register_event_duration_secs_listener(on_duration)
mon.register_event_listener(on_event)
import logging
tot["not_stored"] = []
class NotStored(logging.Handler):  # the programs JAX refuses to store, named
    def emit(self, record):
        msg = record.getMessage()
        if msg.startswith("Not writing persistent cache entry for"):
            tot["not_stored"].append(msg[:200])
log = logging.getLogger("jax._src.compiler")
log.addHandler(NotStored())
log.setLevel(logging.DEBUG)
from simplexlab.lab._cli import main
t0 = time.perf_counter()
rc = main(["reproduce", *sys.argv[2:], "--quick", "--out", sys.argv[1]])
tot["wall_s"] = time.perf_counter() - t0
tot["rc"] = rc
print("COMPILE-TIMES " + json.dumps(tot))
"""


def _run_once(names, out: Path, cache: Path) -> dict:
    env = dict(os.environ)
    env["SIMPLEXLAB_JAX_CACHE"] = str(cache)
    env.pop("XLA_FLAGS", None)  # the CLI's own device setting
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-c", CHILD, str(out), *names], cwd=root, env=env,
                          capture_output=True, text=True)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("COMPILE-TIMES ")]
    if proc.returncode != 0 or not line:
        raise RuntimeError(f"reproduce {' '.join(names)} failed (exit {proc.returncode}):\n"
                           + (proc.stdout + proc.stderr)[-3000:])
    return json.loads(line[-1].split(" ", 1)[1])


def bench(opts: dict) -> dict:
    """Worker: the same experiments twice, fresh processes, one cache starting empty."""
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "jax-cache"
        first = _run_once(EXPERIMENTS, Path(tmp) / "out1", cache)
        entries = len(list(cache.glob("*-cache")))
        second = _run_once(EXPERIMENTS, Path(tmp) / "out2", cache)
    return {"experiments": list(EXPERIMENTS), "cache_entries": entries,
            **{f"first_{k}": v for k, v in first.items()},
            **{f"second_{k}": v for k, v in second.items()}}


WORKERS = {"bench": (bench, None)}


def rows(results: dict, opts: dict) -> list[Row]:
    r = results.get("bench")
    goal = f"a second `simplexlab reproduce {' '.join(EXPERIMENTS)} --quick` compiles nothing"
    if r is None:
        return [Row(NAME, goal, "failed", met="no")]

    def part(k):
        compiled = r[f"{k}_programs"] - r[f"{k}_hits"]
        return (f"{r[f'{k}_programs']} programs: {r[f'{k}_hits']} loaded from the cache "
                f"({fmt_seconds(r[f'{k}_load_s'])}), {compiled} compiled (XLA "
                f"{fmt_seconds(r[f'{k}_backend_s'] - r[f'{k}_load_s'])}); trace + lower "
                f"{fmt_seconds(r[f'{k}_trace_s'] + r[f'{k}_lower_s'])}; run wall "
                f"{fmt_seconds(r[f'{k}_wall_s'])}")

    ratio = r["first_backend_s"] / max(r["second_backend_s"], 1e-9)
    again = r["second_programs"] - r["second_hits"]
    return [Row(NAME, goal, measured="second run: " + part("second"),
                baseline="first run (empty cache): " + part("first"),
                ratio=f"{ratio:.0f}× less XLA time",
                met="yes" if again == 0 else
                f"no: {again} compiled again ({'; '.join(sorted(set(r['second_not_stored'])))})",
                machine=machine_short(r.get("_jax", {})),
                notes=(f"{r['cache_entries']} cache entries after the first run; the second "
                       f"run's XLA time is loading them"),
                values=r)]
