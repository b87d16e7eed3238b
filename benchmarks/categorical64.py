"""The float64 goal: the F-GRPO Fig. 4 sweep of :mod:`benchmarks.categorical`
in the figure's own dtype (``experiments/categorical_regimes.py`` runs float64) in ≤ 60 s after
compilation on the 2-core CPU, and its step against the memory-traffic bound.

The same engine worker as ``categorical`` (``simplexlab.sweep.run``, one device per core, the
first call compiling, the later ones timed alone: ``--repeats``), forced to float64 whatever
``--dtype`` says, so that one run of ``python -m benchmarks`` prints the float32 rows
(``categorical``) and the float64 goal together. The baseline is the goal itself (60 s); the
CPU time of the timed run is printed beside the wall time, since other jobs on a shared
machine inflate the latter.
"""

from __future__ import annotations

from . import categorical
from ._common import Row, fmt_bytes, fmt_seconds, machine_short

NAME = "categorical-f64"
BEST = "run_s"
DTYPE = "float64"
GOAL_S = 60.0


def engine(opts: dict) -> dict:
    """Worker: :func:`benchmarks.categorical.engine` in float64."""
    return categorical.engine({**opts, "dtype": DTYPE})


WORKERS = {"engine": (engine, "cores")}


def rows(results: dict, opts: dict) -> list[Row]:
    opts = {**opts, "dtype": DTYPE}
    sh = categorical.shapes(opts["quick"])
    eng = results.get("engine")
    goal = (f"Fig. 4 sweep, {len(sh['ns'])} N × 2 γ × {categorical.SEEDS} seeds × "
            f"{sh['steps']} steps, {DTYPE} (the figure's dtype), ≤ {GOAL_S:.0f} s after "
            "compilation")
    if opts["quick"]:
        goal += (f" (--quick: A = {sh['num_actions']:,}, N ≤ {max(sh['ns'])}, "
                 f"T = {sh['steps']})")
    if eng is None:
        return [Row(NAME, goal, "failed", f"goal {GOAL_S:.0f} s", met="no")]
    runs = categorical._timed_runs(eng)
    clean = categorical._cpu_clean(runs)
    cpu = min(clean) if clean else None
    measured = (f"{fmt_seconds(eng['run_s'])} after compilation (engine, {eng['devices']} "
                f"devices; + {fmt_seconds(eng['compile_s'])} compiling {eng['programs']} "
                f"programs)")
    if cpu is not None:
        measured += (f"; CPU time {fmt_seconds(cpu)} (÷ {eng['devices']} devices = "
                     f"{fmt_seconds(cpu / eng['devices'])})")
    ratio = f"{eng['run_s'] / GOAL_S:.2f}× the goal (wall)"
    if cpu is not None:
        ratio += f"; {cpu / eng['devices'] / GOAL_S:.2f}× (CPU time ÷ devices)"
    out = [Row(
        NAME, goal, measured=measured,
        baseline=f"the goal, {GOAL_S:.0f} s",
        ratio=ratio, peak_memory=fmt_bytes(eng["peak_rss"]),
        met=("yes" if eng["run_s"] <= GOAL_S else "no") if not opts["quick"] else
        "n/a (quick)",
        machine=machine_short(eng.get("_jax", {})),
        notes=(f"timed runs after compilation (wall): "
               f"{', '.join(fmt_seconds(r['run_s']) for r in runs)}, the best counts; "
               f"{categorical.load_span(runs)}; met is judged on wall time; CPU time ÷ devices "
               f"is the wall time on as many idle cores"),
        values={"engine": eng, "cpu_s": cpu})]
    for row in categorical.bound_rows(eng, opts):
        row.benchmark = NAME + "-bound"
        out.append(row)
    return out
