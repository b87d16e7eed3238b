"""Goals: ``simplexlab plan --budget R --beta a,b`` in ≤ 5 s cold on the 2-core CPU (a fresh
process: the CLI's start, its imports and every compilation included), and with a rollouts file
of 10,000 prompts × 16 rollouts in ≤ 10 s (no mode ids: mode discovery excluded).

Each run is a fresh ``python -m simplexlab`` process with the persistent compilation cache off
(``SIMPLEXLAB_JAX_CACHE=0``: a first run), beside the CLI's start-up floor
(``python -m simplexlab plan --help``: the interpreter, the CLI's imports and its parser). The
rollouts file is written here first (outside the timing): 10,000 prompts whose pass rates are
drawn from Beta(0.5, 1.5), 16 rewards each (Bernoulli at the prompt's rate; seed 0). Wall
times on a shared machine are inflated by other jobs: the CPU times (user + system) are given
beside them.
"""

from __future__ import annotations

from ._common import Row, fmt_seconds, machine_short

NAME = "budget-plan"
BEST = "wall_s"
BUDGET = 256
BETA = "0.5,1.5"
GOAL_COLD = 5.0
GOAL_FILE = 10.0


def shapes(quick: bool) -> dict:
    return {"prompts": 200 if quick else 10_000, "rollouts": 16}


def _rollouts_file(path, prompts: int, rollouts: int) -> None:
    """``prompt_id,reward`` rows: ``prompts`` prompts × ``rollouts`` Bernoulli rewards at pass
    rates drawn from Beta(0.5, 1.5) (seed 0)."""
    import numpy as np

    rng = np.random.default_rng(0)
    mu = rng.beta(0.5, 1.5, prompts)
    rewards = (rng.random((prompts, rollouts)) < mu[:, None]).astype(int)
    lines = ["prompt_id,reward"]
    lines += [f"p{i},{r}" for i in range(prompts) for r in rewards[i]]
    path.write_text("\n".join(lines) + "\n")


def plan(opts: dict) -> dict:
    """Worker: the start-up floor, ``plan --budget`` on a Beta law, and on the rollouts file,
    each in a fresh process with the compilation cache off."""
    import os
    import tempfile
    from pathlib import Path

    from .finite_group import _timed_process

    sh = shapes(opts["quick"])
    env = dict(os.environ, SIMPLEXLAB_JAX_CACHE="0", SIMPLEXLAB_PROGRESS="0")
    out = {"floor": _timed_process(["plan", "--help"], env)}
    out["beta"] = _timed_process(["plan", "--budget", str(BUDGET), "--beta", BETA], env)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rollouts.csv"
        _rollouts_file(path, sh["prompts"], sh["rollouts"])
        out["file"] = _timed_process(["plan", "--budget", str(BUDGET), "--pass-rates",
                                      str(path)], env)
    out["shapes"] = sh
    out["wall_s"] = out["beta"]["wall_s"]
    out["peak_rss"] = 0
    return out


WORKERS = {"plan": (plan, None)}


def rows(results: dict, opts: dict) -> list[Row]:
    r = results.get("plan")
    sh = shapes(opts["quick"])
    goals = {"beta": (f"`simplexlab plan --budget {BUDGET} --beta {BETA}` cold (a fresh process, "
                      f"compilation cache off) ≤ {GOAL_COLD:g} s", GOAL_COLD),
             "file": (f"`simplexlab plan --budget {BUDGET} --pass-rates FILE`, a rollouts file of "
                      f"{sh['prompts']:,} prompts × {sh['rollouts']} rollouts, cold ≤ "
                      f"{GOAL_FILE:g} s", GOAL_FILE)}
    if r is None:
        return [Row(NAME, text, "failed", met="no") for text, _ in goals.values()]
    floor = r["floor"]
    out = []
    for key, (text, goal) in goals.items():
        run = r[key]
        if run["rc"] != 0:
            out.append(Row(NAME, text, f"failed (exit {run['rc']}): {run['last_line']}",
                           met="no"))
            continue
        met = "n/a" if opts["quick"] else ("yes" if run["wall_s"] <= goal else "no")
        out.append(Row(
            NAME, text,
            measured=f"{fmt_seconds(run['wall_s'])} wall, {fmt_seconds(run['cpu_s'])} CPU",
            baseline=(f"start-up floor `simplexlab plan --help`: {fmt_seconds(floor['wall_s'])} "
                      f"wall, {fmt_seconds(floor['cpu_s'])} CPU"),
            ratio=f"{run['wall_s'] / goal:.2f} of the goal",
            met=met, machine=machine_short(r.get("_jax", {})),
            notes=("" if out else "wall times on a shared machine are inflated by other jobs: "
                   "compare CPU times"),
            values=run))
    return out
