"""Goals: the finite-group theory (:class:`simplexlab.theory.FiniteGroup`, the exact
expected SGD step at group size G) must be cheap enough to replace the bandit it describes.

1. **One exact field evaluation** at K + M = 8 (K = 6, M = 2, the lab's collision setting, and
   K = 4, M = 4), G = 16, perfect verifier: ``jax.jit`` of ``vector_field`` at one state, after
   compilation, median of many calls: ≤ 1 ms for the reduced rules (every rule of ``METHODS``
   that the ``"counts"`` path covers: raw, mean_shifted, grpo, dr_grpo, rloo, f_grpo, iac,
   grpo_n; and ProGRPO's own reduction, the ``"rule"`` path), ≤ 20 ms for G²RPO with its
   neutralizer (schedule B: its own exact reduction, the ``"rule"`` path; constant gain: the
   ``"clusters"`` path). The state is the bandit's initial policy (``Bandit.finite_group``,
   p0 = 0.7, instance 0). Compile times are reported too (the first call). Baselines in the same
   run and process: the ``"enumerate"`` path of the same rule (every multinomial outcome of the
   16 draws over the 8 non-empty cells, 245,157 groups; ``jax.jit`` of
   ``simplexlab.theory.expected_update(..., path="enumerate")``), its Monte Carlo path with 4,096
   sampled groups, and one jitted step of the bandit itself (one prompt, G = 16, float64): the
   sampled step the exact one averages. The exact paths are checked against ``"enumerate"``.

2. **The (λ0, G) regime map** of G²RPO (schedule B, neutralizer on, K = 6, M = 2, p0 = 0.7, η =
   0.05, one prompt of instance 0): 32 gains λ0 ∈ [0, 3] × 8 group sizes G ∈ {4, 8, 12, 16, 24, 32,
   48, 64}. Theory: for each G one ``FiniteGroup`` with the 32 gains batched in it
   (``eqx.tree_at(lambda d: d.rule.schedule.gain, dyn, gains)``), integrated with ``solve_ensemble``
   over t ∈ [0, 2000 · η] = [0, 100] (the time map t = step · η; Tsit5, rtol 1e-4, atol 1e-7
   (:data:`MAP_TOL`), float64) from the bandit's own initial policy (drawn in float32, as the bandit
   grid runs): the sign of ΔL_y = L_y(t = 100) − L_y(0). Also the sign of the initial dL_y/dt (one
   batched field evaluation per G), which is not the same map (the flow turns on the way). Measured:
   the wall time of the theory's whole map, compilation included, and after it (every call repeated
   once compiled). Baseline: the bandit grid itself, 32 × 8 × 64 seeds × 2,000 steps through
   ``simplexlab.sweep.run("bandit", ...)`` (float32, the bandit row's timing configuration; one CPU
   device per core; runs grouped into power-of-two group-size buckets), whose ΔL_y (mean over seeds,
   95 % interval = mean ± 1.96 · sd / √64) is compared in sign with the theory's wherever its
   interval excludes 0. Goals (:data:`MAP_GOAL_END` …): the theory's time ≤ 1/2 of the bandit
   grid's end to end and ≤ 1/20 after compilation, ≤ 4 programs compiled in its solves.
"""

from __future__ import annotations

import time

from ._common import (
    CompileTimer,
    Row,
    cpu_seconds,
    fmt_bytes,
    fmt_seconds,
    machine_short,
    peak_rss,
)

NAME = "finite-group"
BEST = "wall_s"
SHAPES = ((6, 2), (4, 4))
G_FIELD = 16
P0, ETA, INSTANCE = 0.7, 0.05, 0.0
COUNT_RULES = ("raw", "mean_shifted", "grpo", "dr_grpo", "rloo", "f_grpo", "iac", "grpo_n")
OWN_RULES = ("progrpo",)
GOAL_REDUCED_S, GOAL_G2RPO_S = 1e-3, 20e-3
#: the regime map's goals: theory / bandit grid end to end, after compilation (both compiled),
#: and the programs the theory's solve compiles
MAP_GOAL_END, MAP_GOAL_RUN, MAP_GOAL_PROGRAMS = 0.5, 1 / 20, 4
GS = (4, 8, 12, 16, 24, 32, 48, 64)
MC_SAMPLES = 4096
#: the regime map's tolerances: at these, the sign of ΔL_y equals that at rtol 1e-6 / atol 1e-9
#: in all 256 cells (largest difference 4.2e-5 against a smallest |ΔL_y| of 3.4e-4; measured
#: 2026-11-27), at about half the steps (20 instead of 39 at G = 64)
MAP_TOL = (1e-4, 1e-7)


def shapes(quick: bool) -> dict:
    if quick:
        return {"calls": 20, "calls_slow": 3, "G": 8, "gains": 4, "Gs": (4, 16), "seeds": 8,
                "steps": 200}
    return {"calls": 300, "calls_slow": 5, "G": G_FIELD, "gains": 32, "Gs": GS, "seeds": 64,
            "steps": 2000}


def _bandit(K, M, max_group_size, num_prompts=1, dtype=None):
    from simplexlab.sim import Bandit

    return Bandit(K=K, M=M, method="g2rpo", schedule="B", neutralize=True,
                  num_prompts=num_prompts, max_group_size=max_group_size, dtype=dtype)


def _median_call(f, args, n):
    """``(first call s, median s, p10 s, p90 s)`` of ``f(*args)``, blocking on the result."""
    import jax
    import numpy as np

    t0 = time.perf_counter()
    jax.block_until_ready(f(*args))
    first = time.perf_counter() - t0
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        ts.append(time.perf_counter() - t0)
    return first, float(np.median(ts)), float(np.percentile(ts, 10)), \
        float(np.percentile(ts, 90))


def field(opts: dict) -> dict:
    """Worker: one exact field evaluation per rule and shape, against the enumeration, Monte
    Carlo and the bandit's own step."""
    import jax
    import jax.numpy as jnp

    import simplexlab.theory as mf
    from simplexlab.shaping import GainSchedule, group_rule, meanfield_system
    from simplexlab.theory import expected_update

    sh = shapes(opts["quick"])
    G = sh["G"]
    ver = mf.Verifier()
    vf = jax.jit(lambda d, s: d.vector_field(0.0, s))
    theta = jax.jit(lambda d, s: d.theta_drift(0.0, s))
    cases = [(m, None, m) for m in COUNT_RULES + OWN_RULES] + [
        ("g2rpo", GainSchedule(kind="B", neutralize=True, gain=1.5), "g2rpo-B"),
        ("g2rpo", GainSchedule(kind="constant", neutralize=True, gain=1.5), "g2rpo-constant")]
    out: dict = {"exact": {}, "enumerate": {}, "montecarlo": {}, "G": G}
    for K, M in SHAPES:
        _, s0 = _bandit(K, M, G).finite_group({"group_size": G, "gain": 1.5, "p0": P0,
                                              "eta": ETA, "instance": INSTANCE})
        s = jax.tree_util.tree_map(lambda a: a[0], s0)
        probs = s.policy()
        for method, sched, label in cases:
            key = f"{label}@{K},{M}"
            try:
                dyn = meanfield_system(method, sched, group_size=G, verifier=ver)
                first, med, p10, p90 = _median_call(vf, (dyn, s), sh["calls"])
            except Exception as err:  # a rule that does not build or run is reported, not fatal
                out["exact"][key] = {"error": f"{type(err).__name__}: {err}"[:300]}
                continue
            out["exact"][key] = {"path": dyn.resolve_path(K, M), "first_s": first,
                                 "median_s": med, "p10_s": p10, "p90_s": p90}
            if label not in ("grpo", "g2rpo-B", "g2rpo-constant"):
                continue
            # baselines: the enumeration (checked against the exact path) and Monte Carlo
            rule = group_rule(method, schedule=sched, verifier=ver)
            exact_theta = theta(dyn, s)
            for path in ("enumerate", "montecarlo"):
                f = jax.jit(lambda r, p, path=path, K=K: expected_update(
                    r, p, K, G, verifier=ver, path=path, num_samples=MC_SAMPLES).theta)
                first, med, p10, p90 = _median_call(
                    f, (rule, probs), sh["calls_slow"] if path == "enumerate" else 20)
                diff = float(jnp.max(jnp.abs(f(rule, probs) - exact_theta)))
                out[path][key] = {"first_s": first, "median_s": med, "p10_s": p10,
                                  "p90_s": p90, "max_abs_diff_theta": diff}
    # the bandit's own (sampled) step at the same shape and G, float64
    sim = _bandit(6, 2, G, dtype="float64")
    params = {**sim.default_params(), "group_size": float(G), "gain": 1.5, "p0": P0, "eta": ETA}
    st = sim.init(jax.random.key(0), params)
    step = jax.jit(lambda st, q: sim.step(st, q))
    first, med, p10, p90 = _median_call(step, (st, params), sh["calls"])
    out["bandit_step"] = {"first_s": first, "median_s": med, "p10_s": p10, "p90_s": p90}
    out["peak_rss"] = peak_rss()
    out["wall_s"] = 0.0
    return out


def _theory_map(opts: dict, data: bool) -> dict:
    """The (λ0, G) regime map from the finite-group theory: ``data`` -- one ``FiniteGroup``
    with the group size as data (``max_group_size`` the largest G; the gains and the group
    sizes one per trajectory, 256 trajectories in one ``solve_ensemble``: one program for the
    map); else one ``FiniteGroup`` per G (the gains batched in it: one program per G). Then the
    initial slope the same way."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import numpy as np

    import simplexlab.theory as mf

    sh = shapes(opts["quick"])
    gains = np.linspace(0.0, 3.0, sh["gains"])
    Gs = tuple(sh["Gs"])
    t1 = sh["steps"] * ETA
    slope_fn = jax.jit(lambda d, s: 2.0 * jnp.sum(s.y * d.vector_field(0.0, s).y, -1))
    sim = _bandit(6, 2, max(Gs), dtype="float32")
    point = {"gain": 1.0, "p0": P0, "eta": ETA, "instance": INSTANCE}

    def systems():
        """``(dynamics, states, rows)`` per program: ``rows`` the G of each block of gains."""
        if data:
            dyn, s0 = sim.finite_group({**point, "group_size": Gs[0]}, max_group_size=max(Gs))
            GG, LL = np.meshgrid(np.asarray(Gs, float), gains, indexing="ij")
            d = eqx.tree_at(lambda d: d.rule.schedule.gain, dyn, jnp.asarray(LL.ravel()))
            d = eqx.tree_at(lambda d: d.group_size, d, jnp.asarray(GG.ravel()))
            yield d, dyn, s0, GG.size, Gs
            return
        for G in Gs:
            dyn, s0 = sim.finite_group({**point, "group_size": G})
            yield (eqx.tree_at(lambda d: d.rule.schedule.gain, dyn, jnp.asarray(gains)), dyn,
                   s0, len(gains), (G,))

    solver_programs = [0]

    def run(record: bool):
        dLy, slope, steps, paths, t_slope, Ly0 = [], [], [], {}, 0.0, None
        for d, dyn, s0, n, rows in systems():
            S = jax.tree_util.tree_map(lambda a, n=n: jnp.broadcast_to(a, (n,) + a.shape[1:]),
                                       s0)
            solver = CompileTimer()  # the programs of the solve alone
            sol = mf.solve_ensemble(d, S, t1=t1, n_save=2, rtol=MAP_TOL[0], atol=MAP_TOL[1])
            solver.close()
            solver_programs[0] += solver.count
            Ly = jnp.sum(sol.state.y ** 2, -1)
            jax.block_until_ready(Ly)
            t0 = time.perf_counter()
            sl = np.asarray(jax.block_until_ready(slope_fn(d, S)))
            t_slope += time.perf_counter() - t0
            if record:
                dLy.append(np.asarray(Ly[:, -1] - Ly[:, 0]).reshape(len(rows), -1))
                slope.append(sl.reshape(len(rows), -1))
                steps += [int(np.max(sol.num_steps))] * len(rows)
                paths.update({str(G): dyn.resolve_path(6, 2) for G in rows})
                Ly0 = float(Ly[0, 0])
        return dLy, slope, steps, paths, t_slope, Ly0

    timer = CompileTimer()
    c_all = cpu_seconds()
    t_all = time.perf_counter()
    dLy, slope, steps, paths, _, Ly0 = run(True)
    wall = time.perf_counter() - t_all
    cpu = cpu_seconds() - c_all
    timer.close()
    compile_s, programs = timer.total, timer.count
    solve_programs = solver_programs[0]
    # the same again, compiled: the map's time after compilation
    c_all = cpu_seconds()
    t_all = time.perf_counter()
    t_slope_all = run(False)[4]
    rerun = time.perf_counter() - t_all
    rerun_cpu = cpu_seconds() - c_all
    return {"wall_s": wall, "cpu_s": cpu, "rerun_cpu_s": rerun_cpu, "compile_s": compile_s,
            "programs": programs, "solve_programs": solve_programs, "rerun_s": rerun,
            "slope_rerun_s": t_slope_all,
            "per_G": {G: {"path": paths[G], "steps": n} for G, n in
                      zip(paths, steps, strict=True)},
            "group_size_as_data": data, "gains": gains.tolist(), "Gs": list(Gs),
            "dLy": np.concatenate(dLy).tolist(), "slope": np.concatenate(slope).tolist(),
            "L_y0": Ly0, "t1": t1, "peak_rss": peak_rss()}


def theory(opts: dict) -> dict:
    """Worker: the regime map from the theory with the group size as data (one program)."""
    return _theory_map(opts, data=True)


def theory_per_G(opts: dict) -> dict:
    """Worker: the same map with one program per group size (the baseline of the design)."""
    return _theory_map(opts, data=False)


def bandit(opts: dict) -> dict:
    """Worker: the bandit grid through the sweep engine (one CPU device per core)."""
    import jax
    import numpy as np
    import xarray  # noqa: F401  (imported by the engine on first use: not part of the timing)

    from simplexlab import sweep

    sh = shapes(opts["quick"])
    gains = np.linspace(0.0, 3.0, sh["gains"])
    fixed = {"method": "g2rpo", "schedule": "B", "neutralize": True, "K": 6, "M": 2,
             "eta": ETA, "p0": P0, "instance": INSTANCE, "dtype": "float32",
             "num_steps": sh["steps"], "stride": sh["steps"]}
    timer = CompileTimer()
    c0 = cpu_seconds()
    t0 = time.perf_counter()
    ds = sweep.run("bandit", {"gain": gains, "group_size": list(sh["Gs"])}, fixed=fixed,
                   seeds=sh["seeds"], seed=0, progress=False)
    wall = time.perf_counter() - t0
    cpu = cpu_seconds() - c0
    timer.close()
    Ly = ds["L_y"].mean("prompt")
    d = (Ly.isel(step=-1) - Ly.isel(step=0)).transpose("group_size", "gain", "seed").values
    d = np.asarray(d, float)
    mean = d.mean(-1)
    half = 1.96 * d.std(-1, ddof=1) / np.sqrt(d.shape[-1])
    n = sh["gains"] * len(sh["Gs"]) * sh["seeds"]
    return {"wall_s": wall, "cpu_s": cpu, "compile_s": timer.total, "programs": timer.count,
            "run_s": wall - timer.total, "peak_rss": peak_rss(), "configs": n,
            "policy_steps": n * sh["steps"], "devices": len(jax.devices()),
            "mean": mean.tolist(), "half": half.tolist(),
            "L_y0": float(Ly.isel(step=0).values.ravel()[0])}


WORKERS = {"field": (field, None), "theory": (theory, None),
           "theory_per_G": (theory_per_G, None), "bandit": (bandit, "cores")}


def _ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s < 0.1 else fmt_seconds(s)


def _field_rows(f: dict, opts: dict) -> list[Row]:
    G = f["G"]
    quick = opts["quick"]
    mach = machine_short(f.get("_jax", {}))
    ex = f["exact"]
    bstep = f["bandit_step"]

    def shape_of(key):
        return key.split("@")[1].replace(",", ", M = ")

    def base_for(label):
        parts = []
        for K, M in SHAPES:
            key = f"{label}@{K},{M}"
            e, m = f["enumerate"].get(key), f["montecarlo"].get(key)
            if e is None:
                continue
            parts.append(f"K = {K}, M = {M}: enumerate {_ms(e['median_s'])} (first call "
                         f"{fmt_seconds(e['first_s'])}; |Δθ| vs exact "
                         f"{e['max_abs_diff_theta']:.1e}), Monte Carlo {MC_SAMPLES} groups "
                         f"{_ms(m['median_s'])} (first {fmt_seconds(m['first_s'])})")
        parts.append(f"bandit step (1 prompt, G = {G}, float64) {_ms(bstep['median_s'])}")
        return "; ".join(parts)

    def ratio_for(label, exact_s):
        rs = [f["enumerate"][f"{label}@{K},{M}"]["median_s"] / ex[f"{label}@{K},{M}"]["median_s"]
              for K, M in SHAPES if f"{label}@{K},{M}" in f["enumerate"]
              and "median_s" in ex.get(f"{label}@{K},{M}", {})]
        txt = ", ".join(f"{r:.0f}×" for r in rs) + " faster than enumerate" if rs else ""
        return (txt + f"; {exact_s / bstep['median_s']:.1f}× one bandit step").lstrip("; ")

    rows = []
    # reduced rules
    red = {k: v for k, v in ex.items() if k.split("@")[0] in COUNT_RULES + OWN_RULES}
    ok = {k: v for k, v in red.items() if "median_s" in v}
    failed = sorted(k for k, v in red.items() if "error" in v)
    goal = (f"one exact field evaluation (jit vector_field, after compilation), reduced rules "
            f"({', '.join(COUNT_RULES + OWN_RULES)}), K + M = 8, G = {G}, perfect verifier, "
            f"≤ 1 ms")
    if ok:
        slow = max(ok, key=lambda k: ok[k]["median_s"])
        sv = ok[slow]
        met = sv["median_s"] <= GOAL_REDUCED_S and not failed
        rows.append(Row(
            NAME + "-field", goal,
            measured=(f"slowest {slow.split('@')[0]} (K = {shape_of(slow)}, path "
                      f"'{sv['path']}'): {_ms(sv['median_s'])} median (p10–p90 "
                      f"{_ms(sv['p10_s'])}–{_ms(sv['p90_s'])}); compile "
                      f"{fmt_seconds(min(v['first_s'] for v in ok.values()))}–"
                      f"{fmt_seconds(max(v['first_s'] for v in ok.values()))} (first call)"),
            baseline=base_for("grpo"), ratio=ratio_for("grpo", ex["grpo@6,2"]["median_s"])
            if "median_s" in ex.get("grpo@6,2", {}) else "—",
            peak_memory=fmt_bytes(f["peak_rss"]),
            met=("yes" if met else "no") if not quick else "n/a (quick)", machine=mach,
            notes=("each rule's median (ms), K = 6, M = 2 / K = 4, M = 4: "
                   + "; ".join(
                       f"{m} {ex.get(f'{m}@6,2', {}).get('median_s', float('nan')) * 1e3:.3f}"
                       f" / {ex.get(f'{m}@4,4', {}).get('median_s', float('nan')) * 1e3:.3f}"
                       f" ({ex.get(f'{m}@6,2', {}).get('path', '?')})"
                       for m in COUNT_RULES + OWN_RULES)
                   + (f"; FAILED: {', '.join(failed)}: "
                      + " | ".join(red[k]["error"] for k in failed) if failed else "")
                   + "; the enumerate baseline is GRPO's"),
            values={"exact": red, "met": met}))
    for label, what in (("g2rpo-B", "G²RPO schedule B + neutralizer (its own reduction)"),
                        ("g2rpo-constant", "G²RPO constant gain + neutralizer")):
        vals = {f"{K},{M}": ex.get(f"{label}@{K},{M}", {}) for K, M in SHAPES}
        goal = (f"one exact field evaluation, {what}, K + M = 8, G = {G}, perfect verifier, "
                f"≤ 20 ms")
        if not all("median_s" in v for v in vals.values()):
            rows.append(Row(NAME + "-field", goal, "failed: " + "; ".join(
                v.get("error", "?") for v in vals.values() if "error" in v), met="no",
                machine=mach))
            continue
        worst = max(v["median_s"] for v in vals.values())
        met = worst <= GOAL_G2RPO_S
        rows.append(Row(
            NAME + "-field", goal,
            measured="; ".join(
                f"K = {k.replace(',', ', M = ')}: {_ms(v['median_s'])} median (p10–p90 "
                f"{_ms(v['p10_s'])}–{_ms(v['p90_s'])}, path '{v['path']}', compile "
                f"{fmt_seconds(v['first_s'])})" for k, v in vals.items()),
            baseline=base_for(label), ratio=ratio_for(label, vals["6,2"]["median_s"]),
            peak_memory=fmt_bytes(f["peak_rss"]),
            met=("yes" if met else "no") if not quick else "n/a (quick)", machine=mach,
            values={"exact": vals, "met": met}))
    return rows


def _map_row(t: dict | None, b: dict | None, opts: dict, per: dict | None = None) -> Row:
    import numpy as np

    sh = shapes(opts["quick"])
    goal = (f"(λ0, G) regime map of G²RPO (schedule B, neutralized, K = 6, M = 2, p0 = {P0}, "
            f"η = {ETA}): {sh['gains']} gains × {len(sh['Gs'])} G from the theory in ≤ "
            f"{MAP_GOAL_END:g} of the bandit grid's time end to end and ≤ 1/"
            f"{1 / MAP_GOAL_RUN:.0f} after compilation ({sh['gains']} × {len(sh['Gs'])} × "
            f"{sh['seeds']} seeds × {sh['steps']} steps), ≤ {MAP_GOAL_PROGRAMS} compiled "
            f"programs; signs agree where the bandit's 95 % interval excludes 0")
    if opts["quick"]:
        goal += " (--quick: small shapes)"
    if t is None:
        return Row(NAME + "-map", goal, "failed", met="no")
    how = ("one FiniteGroup with the group size as data (max_group_size = "
           f"{max(t['Gs'])}), every (λ0, G) one trajectory of one solve_ensemble"
           if t.get("group_size_as_data") else "solve_ensemble per G")
    measured = (f"theory (ΔL_y over t ∈ [0, {t['t1']:.0f}], {how}, 1 device): "
                f"{fmt_seconds(t['wall_s'])} end to end ({fmt_seconds(t['compile_s'])} "
                f"compiling {t['programs']} programs, {t['solve_programs']} of them in the "
                f"solves), {fmt_seconds(t['rerun_s'])} after compilation (of it the "
                f"initial-slope map {fmt_seconds(t['slope_rerun_s'])})")
    if per is not None:
        diff = np.max(np.abs(np.asarray(t["dLy"]) - np.asarray(per["dLy"])))
        same = int(np.sum(np.sign(t["dLy"]) == np.sign(per["dLy"])))
        measured += (f"; against one program per G in the same run ({fmt_seconds(per['wall_s'])}"
                     f" end to end, {fmt_seconds(per['compile_s'])} compiling "
                     f"{per['programs']} programs, {per['solve_programs']} in the solves, "
                     f"{fmt_seconds(per['rerun_s'])} after): "
                     f"{t['wall_s'] / per['wall_s']:.2f} end to end, "
                     f"{t['rerun_s'] / per['rerun_s']:.2f} after compilation; ΔL_y within "
                     f"{diff:.1e} (the shared steps of one ensemble; same sign at {same}/"
                     f"{np.size(t['dLy'])})")
    if b is None:
        return Row(NAME + "-map", goal, measured, baseline="bandit failed", met="no",
                   machine=machine_short(t.get("_jax", {})))
    theory_sign = np.sign(np.asarray(t["dLy"]))
    slope_sign = np.sign(np.asarray(t["slope"]))
    mean, half = np.asarray(b["mean"]), np.asarray(b["half"])
    decided = np.abs(mean) > half
    bsign = np.sign(mean)
    agree = int(np.sum((theory_sign == bsign) & decided))
    agree_slope = int(np.sum((slope_sign == bsign) & decided))
    nd = int(decided.sum())
    gains, Gs = np.asarray(t["gains"]), t["Gs"]
    bad = [f"(λ0 {gains[j]:.2f}, G {Gs[i]})" for i, j in zip(*np.nonzero(
        decided & (theory_sign != bsign)), strict=True)]
    r_end = t["wall_s"] / b["wall_s"]
    r_run = t["rerun_s"] / b["wall_s"]
    r_run_run = t["rerun_s"] / b["run_s"]
    met_end, met_run = r_end <= MAP_GOAL_END, r_run_run <= MAP_GOAL_RUN
    met_programs = t["solve_programs"] <= MAP_GOAL_PROGRAMS
    met = met_end and met_run and met_programs
    cpu_txt = ""
    if "cpu_s" in t and "cpu_s" in b:
        cpu_txt = (f"; CPU time (user + system, less sensitive to other jobs): theory "
                   f"{fmt_seconds(t['cpu_s'])} end to end, {fmt_seconds(t['rerun_cpu_s'])} "
                   f"compiled, bandit {fmt_seconds(b['cpu_s'])}: "
                   f"{t['cpu_s'] / b['cpu_s']:.2f} and {t['rerun_cpu_s'] / b['cpu_s']:.3f}")
    # the boundary λ0*(G): the first gain where ΔL_y < 0
    def boundary(sign):
        out = []
        for i, G in enumerate(Gs):
            neg = np.nonzero(sign[i] < 0)[0]
            out.append(f"{G}: {gains[neg[0]]:.2f}" if len(neg) else f"{G}: > {gains[-1]:.1f}")
        return ", ".join(out)

    return Row(
        NAME + "-map", goal,
        measured=measured + f"; signs agree at {agree}/{nd} cells where the bandit's interval "
                            f"excludes 0 ({len(theory_sign.ravel()) - nd} undecided); the "
                            f"initial-slope sign agrees at {agree_slope}/{nd}",
        baseline=(f"bandit grid via sweep.run (float32, {b['devices']} devices): "
                  f"{fmt_seconds(b['wall_s'])} end to end ({fmt_seconds(b['compile_s'])} "
                  f"compiling {b['programs']} programs, {fmt_seconds(b['run_s'])} after)"),
        ratio=(f"theory / bandit wall: {r_end:.2f} end to end; {r_run:.3f} theory compiled vs "
               f"bandit end to end ({r_run_run:.3f} vs the bandit after compilation)"
               + cpu_txt),
        peak_memory=f"{fmt_bytes(t['peak_rss'])} theory, {fmt_bytes(b['peak_rss'])} bandit",
        met=("yes" if met else
             f"no (end to end {'yes' if met_end else 'no'}, after compilation "
             f"{'yes' if met_run else 'no'}, programs {'yes' if met_programs else 'no'})")
        if not opts["quick"] else "n/a (quick)",
        machine=machine_short(t.get("_jax", {})),
        notes=(f"G ∈ {{{', '.join(map(str, Gs))}}}, λ0 = linspace(0, 3, {len(gains)}); "
               f"first λ0 with ΔL_y < 0 per G, theory: {boundary(theory_sign)}; bandit (mean "
               f"over seeds): {boundary(bsign)}; disagreements where decided: "
               f"{', '.join(bad) if bad else 'none'}; L_y(0) theory {t['L_y0']:.4f}, bandit "
               f"{b['L_y0']:.4f}; theory paths "
               f"{sorted({v['path'] for v in t['per_G'].values()})}, Tsit5 steps per G "
               f"{[v['steps'] for v in t['per_G'].values()]}"),
        values={"theory": t, "bandit": b, "agree": agree, "decided": nd, "met": met})


def rows(results: dict, opts: dict) -> list[Row]:
    out = []
    f = results.get("field")
    if f is None:
        out.append(Row(NAME + "-field", "one exact field evaluation", "failed", met="no"))
    else:
        out.extend(_field_rows(f, opts))
    out.append(_map_row(results.get("theory"), results.get("bandit"), opts,
                        results.get("theory_per_G")))
    return out


# --------------------------------------------------------------------------- plan cold start

#: the planner at a pass rate of 0.3, its other settings the defaults (the pass rate's flag is
#: ``--mu`` in the current command line, ``--pass-rate`` in its first version)
PLAN_CMD = ("plan", "--mu", "0.3")


def _plan_args(help_text: str) -> list[str]:
    return list(PLAN_CMD) if "--mu" in help_text else ["plan", "--pass-rate", "0.3"]


def _timed_process(args: list[str], env: dict, keep_stdout: bool = False) -> dict:
    """Wall and CPU (user + system) seconds of one fresh ``python -m simplexlab ...`` process."""
    import resource
    import subprocess
    import sys

    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "simplexlab", *args], env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    tail = proc.stdout.strip().splitlines()[-1:] or proc.stderr.strip().splitlines()[-1:]
    return {"wall_s": wall, "cpu_s": cpu, "rc": proc.returncode,
            "last_line": tail[0][:200] if tail else "", "args": args,
            **({"stdout": proc.stdout} if keep_stdout else {})}


def plan_cold(opts: dict) -> dict:
    """Worker: ``simplexlab plan`` in fresh processes: compile cache off (the cold start), then
    an empty persistent cache filled by a first run and read by a second; against the CLI's
    start-up floor (``python -m simplexlab plan --help``: the interpreter, the CLI's imports and
    its parser)."""
    import os
    import tempfile

    env = dict(os.environ)
    env["SIMPLEXLAB_JAX_CACHE"] = "0"
    floor = _timed_process(["plan", "--help"], env, keep_stdout=True)
    args = _plan_args(floor.pop("stdout"))
    out = {"floor": floor, "cold": _timed_process(args, env)}
    with tempfile.TemporaryDirectory() as cache:
        env["SIMPLEXLAB_JAX_CACHE"] = cache
        out["cache_fill"] = _timed_process(args, env)
        out["cache_warm"] = _timed_process(args, env)
    out["wall_s"] = out["cold"]["wall_s"]
    out["peak_rss"] = 0
    return out


def _plan_rows(results: dict, opts: dict) -> list[Row]:
    r = results.get("plan_cold")
    cmd = " ".join(r["cold"]["args"]) if r else " ".join(PLAN_CMD)
    goal = (f"`simplexlab {cmd}` cold start: a fresh process, persistent compilation cache off "
            f"(reference; the group-size planner's start-up)")
    if r is None or r["cold"]["rc"] != 0:
        return [Row(NAME + "-plan", goal, "failed" if r is None else
                    f"failed (exit {r['cold']['rc']}): {r['cold']['last_line']}", met="no")]

    def w(k):
        return f"{fmt_seconds(r[k]['wall_s'])} wall, {fmt_seconds(r[k]['cpu_s'])} CPU"

    return [Row(
        NAME + "-plan", goal,
        measured=f"{w('cold')} (exit {r['cold']['rc']}: {r['cold']['last_line']})",
        baseline=(f"start-up floor `simplexlab plan --help`: {w('floor')}; with an empty "
                  f"persistent cache: first run {w('cache_fill')}, second run "
                  f"{w('cache_warm')}"),
        ratio=(f"cold / floor {r['cold']['cpu_s'] / max(r['floor']['cpu_s'], 1e-9):.1f}× CPU; "
               f"cold / warm cache {r['cold']['cpu_s'] / max(r['cache_warm']['cpu_s'], 1e-9):.1f}"
               f"× CPU"),
        met="—", machine=machine_short(r.get("_jax", {})),
        notes="wall times on the shared machine are inflated by other jobs: compare CPU times",
        values=r)]


class _Sub:
    """A second entry of the suite from this module (``--only finite-group-plan``): its workers
    are functions of :mod:`benchmarks.finite_group`."""

    __name__ = __name__
    NAME = "finite-group-plan"
    BEST = "wall_s"
    WORKERS = {"plan_cold": (plan_cold, None)}

    @staticmethod
    def rows(results: dict, opts: dict) -> list[Row]:
        return _plan_rows(results, opts)


PLAN = _Sub()
