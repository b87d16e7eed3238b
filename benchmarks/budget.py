"""Goals: ``simplexlab plan --budget R --beta a,b`` in ≤ 5 s cold on the 2-core CPU (a fresh
process: the CLI's start, its imports and every compilation included), and with a rollouts file
of 10,000 prompts × 16 rollouts in ≤ 10 s (no mode ids: mode discovery excluded). And
(``--only budget-curve``) the theory's ``G*(R)`` curve over 12 budgets × 12 group sizes in
≤ 1/10 of the time of the shared bandit on the same grid, end to end.

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


# -- budget-curve: the theory's G*(R) against the bandit on the same grid --------------------------
#: the G*(R) grid: 12 budgets (6 .. 12,288 rollouts per step: 3 · 2^k) × 12 group sizes (2 ..
#: 256, the planner's range: powers of 2 and 3 · 2^k, as TRL users set num_generations), every
#: (R, G) with G dividing R; the model of experiments/budget_planner.py (GRPO, SGD, K = 4 good
#: and M = 2 bad modes per prompt, random unit features of R^8, a pool of 16 prompts of a
#: Beta(0.5, 1.5) law, β = 1 per nat of KL). (The theory's exact paths stop at the planner's
#: G = 256: at G = 4,096 its moments fall back to Monte Carlo, 30 GB for the pool.)
CURVE_NAME = "budget-curve"
CURVE_GOAL = 0.1
CURVE_MODEL = {"method": "grpo", "kl": 1.0, "K": 4, "M": 2, "pool_size": 16, "num_features": 8}
#: the bandit's rate grid (the experiment's quick grid: 2^-1 .. 2^4.5)
CURVE_ETAS = tuple(2.0 ** (k / 2) for k in range(-2, 10))


def curve_shapes(quick: bool) -> dict:
    if quick:
        return {"budgets": (4, 8, 16, 32, 64), "sizes": (2, 4, 8, 16, 32), "seeds": 64}
    return {"budgets": tuple(3 * 2**k for k in range(1, 13)),
            "sizes": (2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256), "seeds": 128}


def _curve_prompts():
    from simplexlab.theory import PromptSet

    return PromptSet.from_beta(0.5, 1.5)


def curve_theory(opts: dict) -> dict:
    """Worker: :func:`simplexlab.verify.budget_curve` on the grid, SGD only (the bandit's
    optimizer), from its first call (every compilation included; imports excluded)."""
    import time

    from simplexlab.verify import budget_curve

    from ._common import CompileTimer, cpu_seconds, peak_rss

    sh = curve_shapes(opts["quick"])
    ps = _curve_prompts()
    timer = CompileTimer()
    c0, t0 = cpu_seconds(), time.perf_counter()
    curve = budget_curve(ps, sh["budgets"], group_sizes=sh["sizes"], optimizers=("sgd",),
                         **CURVE_MODEL)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    timer.close()
    return {"wall_s": wall, "cpu_s": cpu, "compile_s": timer.total, "programs": timer.count,
            "best": list(curve.best["sgd"]), "progress": curve.progress["sgd"],
            "shapes": {k: list(v) if isinstance(v, tuple) else v for k, v in sh.items()},
            "peak_rss": peak_rss()}


def curve_bandit(opts: dict) -> dict:
    """Worker: :func:`simplexlab.verify.bandit_progress` at every (R, G) of the grid (one step
    from the start at each rate of :data:`CURVE_ETAS`, the best rate per G), the best G per
    budget and its resolution (:func:`simplexlab.verify.bandit_resolution`)."""
    import time

    import numpy as np

    from simplexlab.verify import bandit_progress, bandit_resolution

    from ._common import CompileTimer, cpu_seconds, peak_rss

    sh = curve_shapes(opts["quick"])
    ps = _curve_prompts()
    timer = CompileTimer()
    c0, t0 = cpu_seconds(), time.perf_counter()
    best, resolution = [], []
    for R in sh["budgets"]:
        runs = {}
        for G in sh["sizes"]:
            if R % G == 0:
                mean, se = bandit_progress(ps, R, G, CURVE_ETAS, seeds=sh["seeds"], **CURVE_MODEL)
                j = int(np.argmax(mean))
                runs[G] = (float(mean[j]), float(se[j]))
        top, resolved = bandit_resolution(runs)
        best.append(top)
        resolution.append(resolved)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    timer.close()
    return {"wall_s": wall, "cpu_s": cpu, "compile_s": timer.total, "programs": timer.count,
            "best": best, "resolution": resolution, "peak_rss": peak_rss()}


def curve_rows(results: dict, opts: dict) -> list[Row]:
    t, b = results.get("curve_theory"), results.get("curve_bandit")
    sh = curve_shapes(opts["quick"])
    n_b, n_g = len(sh["budgets"]), len(sh["sizes"])
    goal = (f"the theory's G*(R) over {n_b} budgets × {n_g} group sizes "
            f"({sh['budgets'][0]} .. {sh['budgets'][-1]:,} rollouts per step, G = "
            f"{sh['sizes'][0]} .. {sh['sizes'][-1]}; GRPO, SGD, the budget-planner experiment's "
            f"model) ≤ {CURVE_GOAL:g} of the shared bandit's time on the same grid, end to end")
    if t is None or b is None:
        return [Row(CURVE_NAME, goal, "failed", met="no")]
    ratio = t["wall_s"] / b["wall_s"]
    within = sum(g in r for g, r in zip(t["best"], b["resolution"], strict=True))
    met = "n/a" if opts["quick"] else ("yes" if ratio <= CURVE_GOAL else "no")
    return [Row(
        CURVE_NAME, goal,
        measured=(f"budget_curve: {fmt_seconds(t['wall_s'])} wall ({fmt_seconds(t['compile_s'])} "
                  f"compiling {t['programs']} programs), {fmt_seconds(t['cpu_s'])} CPU"),
        baseline=(f"bandit_progress at every (R, G), {sh['seeds']} seeds × {len(CURVE_ETAS)} "
                  f"rates: {fmt_seconds(b['wall_s'])} wall ({fmt_seconds(b['compile_s'])} "
                  f"compiling {b['programs']} programs), {fmt_seconds(b['cpu_s'])} CPU"),
        ratio=f"{ratio:.3f} wall, {t['cpu_s'] / b['cpu_s']:.3f} CPU",
        met=met, machine=machine_short(t.get("_jax", {})),
        notes=(f"the theory's G* inside the bandit's resolution at {within} of {n_b} budgets "
               f"(with {sh['seeds']} seeds the bandit resolves G* coarsely: the budget-planner "
               "experiment uses 1,500-4,000; more seeds would only slow the baseline)"),
        values={"theory": t, "bandit": b})]


class _Curve:
    """The second entry of the suite from this module (``--only budget-curve``)."""

    __name__ = __name__
    NAME = CURVE_NAME
    BEST = "wall_s"
    WORKERS = {"curve_theory": (curve_theory, None), "curve_bandit": (curve_bandit, None)}

    @staticmethod
    def rows(results: dict, opts: dict) -> list[Row]:
        return curve_rows(results, opts)


CURVE = _Curve()
