"""Goals: the second moment of one group step (:func:`simplexlab.theory.expected_moments`) and
the fields built on it must cost about what the mean costs, and the optimizers' small-step
fields must be the limit the bandit approaches as η shrinks.

1. **The covariance of one step** at K + M = 8 (K = 6, M = 2 and K = 4, M = 4), G = 16, perfect
   verifier, at the bandit's initial policy (p0 = 0.7, instance 0), for every count rule of the
   finite-group benchmark (``"counts"`` path): ``jax.jit`` of ``expected_moments(...)
   .covariance``, after compilation, median of many calls: ≤ 2 ms, and within 10× of the mean's
   cost on the same path (``expected_update(..., path="counts").theta``, measured in the same
   run and process). G²RPO (schedule B + neutralizer), whose enumeration needs 5.9 million
   table entries at this size, on its exact partition programme (``"clusters"``): ≤ 50 ms,
   beside its exact mean (the ``"rule"`` path) and its Monte Carlo covariance (4,096 groups).
2. **The Adam field** (``FiniteGroup(optimizer=Adam())``: ``E[g]/(√E[g∘g] + ε)`` with the exact
   second moment) at the same sizes, GRPO: ``jax.jit`` of ``vector_field``, ≤ 3× the SGD field
   on the same path.
3. **The η ladder** of the optimizers' fields (no timing goal): GRPO, K = 3, M = 2, G = 8,
   π0 = (0.15, 0.1, 0.05 | 0.4, 0.3), 256 seeds (prompts of one policy), the bandit with optax's
   Adam (β = (0.9, 0.999)) at η ∈ {2, 1, 0.5}·10⁻⁴ (the lag of its second-moment estimate
   η/(1 − β2) = 0.2, 0.1, 0.05: the limit needs it small against the flow's time; at a lag
   beyond the time elapsed, η = 8·10⁻⁴ and 1.6·10⁻³ at t = 0.5, the error stays at 0.003
   whatever η) and heavy ball (β = 0.9) at η ∈ {4, 2, 1}·10⁻³, against the fields (Tsit5): the
   good mass ``1 − p`` at t = 0.5, 2, 4, the absolute error of the ensemble mean, its 95 %
   interval, and the error's order in η (the least-squares slope of log error against log η
   over the ladder). The SGD field at the same times shows what the limit is not.
4. **The seed spread from the covariance ODE** (:func:`simplexlab.theory.linear_noise`): the
   across-seed standard deviation of ``L_y`` along a ``T = 20`` trajectory (GRPO, K = 3, M = 2,
   G = 8, η = 0.05: 400 steps; and K = 6, M = 2, G = 16) against the 256-seed bandit ensemble
   it predicts (the bandit's ``trajectory`` of 256 prompts from one policy, jitted), both
   compiled (the minimum of 20 repeated calls, their median beside it) and end to end (the
   first call, compilation included):
   the ODE ≤ 1/20 of the ensemble's time compiled, ≤ 1/2 end to end. The ODE by the classical
   Runge–Kutta method at a fixed step, the interval between the :data:`SPREAD_SAVES` save
   points (2 at T = 20; the step 1 timed beside it).
"""

from __future__ import annotations

import time

from ._common import Row, fmt_bytes, fmt_seconds, machine_short, peak_rss
from .finite_group import COUNT_RULES, INSTANCE, P0, SHAPES, _median_call

NAME = "noise"
BEST = "wall_s"
G_STEP = 16
GOAL_COV_S, GOAL_COV_RATIO, GOAL_ADAM_RATIO = 2e-3, 10.0, 3.0
GOAL_G2_COV_S = 50e-3
GOAL_SPREAD_COMPILED, GOAL_SPREAD_END = 1 / 20, 1 / 2
#: the spread benchmark's settings: (K, M, G), η, T, seeds
SPREAD_SHAPES = ((3, 2, 8), (6, 2, 16))
SPREAD_ETA, SPREAD_T, SPREAD_SEEDS = 0.05, 20.0, 256
#: the ODE's fixed step (the classical Runge–Kutta method) and save points (every step): along
#: T = 20 the standard deviation within 6.2e-3 (K = 3, M = 2, G = 8) and 1.2e-3 (K = 6, M = 2,
#: G = 16) relative of the adaptive solve at rtol 1e-11, a seventh of the 256 seeds' own
#: standard error on it (1/√(2 · 255) = 4.4 %); at a step of 1 (also timed, ``ode_dt1``):
#: 3.3e-4 and 9e-5
SPREAD_SAVES, SPREAD_FINE_SAVES = 11, 21  # the steps T / 10 = 2 and (``ode_dt1``) T / 20 = 1
MC_SAMPLES = 4096
#: the ladder's policy (G²RPO/SC's small-step Adam check) and settings
PI0 = (0.15, 0.1, 0.05, 0.4, 0.3)
LADDER = {"adam": (2e-4, 1e-4, 5e-5), "momentum": (4e-3, 2e-3, 1e-3)}
TIMES = (0.5, 2.0, 4.0)


def shapes(quick: bool) -> dict:
    if quick:
        return {"calls": 20, "G": 8, "seeds": 32, "times": (0.5,),
                "ladder": {"adam": (4e-4, 2e-4), "momentum": (4e-3, 2e-3)}}
    return {"calls": 300, "G": G_STEP, "seeds": 256, "times": TIMES, "ladder": LADDER}


def _state(K, M, G):
    import jax

    from simplexlab.sim import Bandit

    _, s0 = Bandit(K=K, M=M, max_group_size=G).finite_group(
        {"group_size": G, "p0": P0, "instance": INSTANCE})
    return jax.tree_util.tree_map(lambda a: a[0], s0)


def moments(opts: dict) -> dict:
    """Worker: the covariance of one step against the mean on the same path; the Adam field
    against the SGD field."""
    import jax

    from simplexlab.shaping import GainSchedule, group_rule
    from simplexlab.theory import Adam, FiniteGroup, expected_moments, expected_update

    sh = shapes(opts["quick"])
    G = sh["G"]
    n = sh["calls"]
    out: dict = {"cov": {}, "mean": {}, "adam": {}, "sgd": {}, "G": G}
    for K, M in SHAPES:
        s = _state(K, M, G)
        probs = s.policy()
        for method in COUNT_RULES:
            rule = group_rule(method)
            cov = jax.jit(lambda r, p, K=K: expected_moments(r, p, K, G).covariance)
            mean = jax.jit(lambda r, p, K=K: expected_update(r, p, K, G, path="counts").theta)
            for name, f in (("cov", cov), ("mean", mean)):
                first, med, p10, p90 = _median_call(f, (rule, probs), n)
                out[name][f"{method}@{K},{M}"] = {"first_s": first, "median_s": med,
                                                  "p10_s": p10, "p90_s": p90}
        # G²RPO: its exact covariance (the partition programme) beside its exact mean and the
        # Monte Carlo covariance
        rule = group_rule("g2rpo", schedule=GainSchedule(kind="B", neutralize=True, gain=1.5))
        cov = jax.jit(lambda r, p, K=K: expected_moments(r, p, K, G).covariance)
        mc = jax.jit(lambda r, p, K=K: expected_moments(r, p, K, G, path="montecarlo",
                                                        num_samples=MC_SAMPLES).covariance)
        mean = jax.jit(lambda r, p, K=K: expected_update(r, p, K, G).theta)
        # the mean on the covariance's own path (the partition programme's first moment)
        same = jax.jit(lambda r, p, K=K: expected_update(r, p, K, G, path="clusters").theta)
        out.setdefault("g2_path", {})[f"{K},{M}"] = expected_moments(rule, probs, K, G).path
        for name, f in (("cov", cov), ("mc", mc), ("mean", mean), ("mean_same_path", same)):
            first, med, p10, p90 = _median_call(f, (rule, probs), max(5, n // 10))
            out.setdefault(name, {})[f"g2rpo-B@{K},{M}"] = {
                "first_s": first, "median_s": med, "p10_s": p10, "p90_s": p90}
        vf = jax.jit(lambda d, s: d.vector_field(0.0, s))
        for name, opt in (("adam", Adam()), ("sgd", None)):
            dyn = FiniteGroup(group_rule("grpo"), group_size=G, optimizer=opt)
            first, med, p10, p90 = _median_call(vf, (dyn, s), n)
            out[name][f"grpo@{K},{M}"] = {"first_s": first, "median_s": med, "p10_s": p10,
                                          "p90_s": p90}
    out["peak_rss"] = peak_rss()
    out["wall_s"] = 0.0
    return out


def ladder(opts: dict) -> dict:
    """Worker: the bandit with optax's Adam and heavy ball at decreasing η against the fields."""
    import jax
    import numpy as np

    import simplexlab as sl
    from simplexlab.shaping import group_rule
    from simplexlab.sim import Bandit
    from simplexlab.theory import Adam, FiniteGroup, Momentum

    sh = shapes(opts["quick"])
    times = sh["times"]
    pi = np.asarray(PI0)
    y0, z0 = tuple(float(v) for v in pi[:3] / pi[:3].sum()), \
        tuple(float(v) for v in pi[3:] / pi[3:].sum())
    s0 = sl.make_state(float(pi[3:].sum()), np.array(y0), np.array(z0))
    t0 = time.perf_counter()
    out: dict = {"times": list(times), "seeds": sh["seeds"], "fields": {}, "runs": {}}
    sgd = FiniteGroup(group_rule("grpo"), group_size=8)
    out["fields"]["sgd"] = (1 - np.asarray(sl.solve(sgd, s0, t1=times[-1],
                                                    saveat=np.array(times)).p)).tolist()
    for opt, etas in sh["ladder"].items():
        out["runs"][opt] = []
        sim = Bandit(K=3, M=2, method="grpo", num_prompts=sh["seeds"], max_group_size=8,
                     y0=y0, z0=z0, optimizer=opt)
        # one program for every η and stretch: the run continued from one time to the next
        run = jax.jit(lambda s, q, n, sim=sim: jax.lax.fori_loop(
            0, n, lambda i, x: sim.step(x, q), s))
        for eta in etas:
            limit = Adam() if opt == "adam" else Momentum(beta=0.9, eta=eta)
            dyn = FiniteGroup(group_rule("grpo"), group_size=8, optimizer=limit)
            field = 1 - np.asarray(sl.solve(dyn, s0, t1=times[-1], saveat=np.array(times)).p)
            params = {**sim.default_params(), "group_size": 8.0, "eta": eta,
                      "p0": float(pi[3:].sum())}
            good = []
            st = sim.init(jax.random.key(0), params)
            done = 0
            for t in times:
                n = int(round(t / eta)) - done
                st = run(st, params, n)
                done += n
                good.append(1 - np.asarray(sim.observe(st).p))
            good = np.stack(good)  # (times, seeds)
            mean = good.mean(1)
            half = 1.96 * good.std(1, ddof=1) / np.sqrt(good.shape[1])
            out["runs"][opt].append({"eta": eta, "bandit": mean.tolist(), "half": half.tolist(),
                                     "field": field.tolist(),
                                     "error": np.abs(mean - field).tolist()})
    for opt, runs in out["runs"].items():
        etas = np.log([r["eta"] for r in runs])
        errs = np.asarray([r["error"] for r in runs])  # (etas, times)
        out.setdefault("order", {})[opt] = [
            float(np.polyfit(etas, np.log(np.maximum(errs[:, j], 1e-12)), 1)[0])
            for j in range(errs.shape[1])]
    out["wall_s"] = time.perf_counter() - t0
    out["peak_rss"] = peak_rss()
    return out


def spread(opts: dict) -> dict:
    """Worker: the covariance ODE's seed spread of L_y along T = 20 against the 256-seed bandit
    ensemble it predicts, compiled and end to end, each in its own process-fresh state."""
    import jax
    import numpy as np

    from simplexlab.sim import Bandit, trajectory
    from simplexlab.theory import Diffusion, linear_noise

    quick = opts["quick"]
    T = 2.0 if quick else SPREAD_T
    reps = 2 if quick else 20
    out: dict = {"T": T, "eta": SPREAD_ETA, "seeds": SPREAD_SEEDS, "shapes": {}}
    for K, M, G in SPREAD_SHAPES[:1] if quick else SPREAD_SHAPES:
        sim = Bandit(K=K, M=M, method="grpo", num_prompts=SPREAD_SEEDS, max_group_size=G)
        params = {**sim.default_params(), "group_size": float(G), "eta": SPREAD_ETA,
                  "p0": 0.7}
        n = int(round(T / SPREAD_ETA))
        dyn, s0 = sim.finite_group(params)
        s = jax.tree_util.tree_map(lambda a: a[0], s0)
        # the prompts of one policy: every prompt starts at prompt 0's composition
        one = Bandit(K=K, M=M, method="grpo", num_prompts=SPREAD_SEEDS, max_group_size=G,
                     y0=tuple(float(v) for v in np.asarray(s.y)),
                     z0=tuple(float(v) for v in np.asarray(s.z)))
        run = jax.jit(lambda k, one=one, n=n, q=params: trajectory(
            one, k, q, num_steps=n, stride=n // 20)[1].L_y)
        d = Diffusion(dyn, eta=SPREAD_ETA)

        def ode(d=d, s=s, n_save=SPREAD_SAVES):  # a step between save points: T / 10
            return linear_noise(d, s, t1=T, n_save=n_save, dt=T / (n_save - 1)).std["L_y"]

        row = {}
        saves = {"ode": SPREAD_SAVES, "ode_dt1": SPREAD_FINE_SAVES}  # (and so the steps)
        for name, f in (("ode", ode), ("bandit", lambda run=run: run(jax.random.key(0))),
                        ("ode_dt1", lambda d=d, s=s: ode(d, s, SPREAD_FINE_SAVES))):
            t0 = time.perf_counter()
            first = np.asarray(jax.block_until_ready(f()))
            end = time.perf_counter() - t0
            ts = []
            for _ in range(reps):
                t0 = time.perf_counter()
                jax.block_until_ready(f())
                ts.append(time.perf_counter() - t0)
            # the minimum of the repeats (diffrax's protocol); the median beside it
            row[name] = {"end_to_end_s": end, "compiled_s": float(np.min(ts)),
                         "compiled_median_s": float(np.median(ts))}
            if name in saves:
                row[name]["step"] = T / (saves[name] - 1)
            if name.startswith("ode"):
                row[name + "_std_final"] = float(first[-1])
            else:
                row["bandit_std_final"] = float(np.std(first[-1], ddof=1))
        out["shapes"][f"{K},{M},{G}"] = row
    out["peak_rss"] = peak_rss()
    out["wall_s"] = 0.0
    return out


WORKERS = {"moments": (moments, None), "ladder": (ladder, None), "spread": (spread, None)}


def _ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s < 0.1 else fmt_seconds(s)


def _spread_row(sp, quick) -> Row:
    goal = ("seed std of L_y along T = 20 from the covariance ODE (linear_noise) ≤ 1/20 of the "
            "256-seed bandit ensemble it predicts compiled vs compiled, ≤ 1/2 end to end")
    if sp is None:
        return Row(NAME + "-spread", goal, "failed", met="no")
    parts, ratios = [], []
    for shape, r in sp["shapes"].items():
        K, M, G = shape.split(",")
        rc = r["ode"]["compiled_s"] / r["bandit"]["compiled_s"]
        re = r["ode"]["end_to_end_s"] / r["bandit"]["end_to_end_s"]
        ratios.append((rc, re))
        fine = r.get("ode_dt1")
        parts.append(f"K = {K}, M = {M}, G = {G}: ODE (step {r['ode']['step']:g}) "
                     f"{_ms(r['ode']['compiled_s'])} compiled, "
                     f"{fmt_seconds(r['ode']['end_to_end_s'])} end to end (std "
                     f"{r['ode_std_final']:.4g} at t = {sp['T']:g}"
                     + (f"; step {fine['step']:g}: {_ms(fine['compiled_s'])}, std "
                        f"{r['ode_dt1_std_final']:.4g}" if fine else "") + "); bandit "
                     f"{_ms(r['bandit']['compiled_s'])}, "
                     f"{fmt_seconds(r['bandit']['end_to_end_s'])} (std "
                     f"{r['bandit_std_final']:.4g})")
    met = all(rc <= GOAL_SPREAD_COMPILED and re <= GOAL_SPREAD_END for rc, re in ratios)
    return Row(NAME + "-spread", goal, measured="; ".join(parts),
               baseline=f"the bandit ensemble ({sp['seeds']} prompts from one policy, "
                        f"η = {sp['eta']:g}, {int(round(sp['T'] / sp['eta']))} steps, jitted)",
               ratio=", ".join(f"{rc:.2f}× compiled, {re:.2f}× end to end" for rc, re in ratios),
               peak_memory=fmt_bytes(sp["peak_rss"]),
               met=("yes" if met else "no") if not quick else "n/a (quick)",
               machine=machine_short(sp.get("_jax", {})), values=sp)


def rows(results: dict, opts: dict) -> list[Row]:
    m, lad = results.get("moments"), results.get("ladder")
    quick = opts["quick"]
    out = []
    G = shapes(quick)["G"]
    goal = (f"covariance of one group step (jit expected_moments, after compilation), count "
            f"rules ({', '.join(COUNT_RULES)}), K + M = 8, G = {G}: ≤ 2 ms and ≤ 10× the mean "
            f"on the same path")
    if m is None:
        out.append(Row(NAME + "-moments", goal, "failed", met="no"))
    else:
        mach = machine_short(m.get("_jax", {}))
        keys = [k for k in m["cov"] if k.split("@")[0] in COUNT_RULES]
        slow = max(keys, key=lambda k: m["cov"][k]["median_s"])
        ratios = {k: m["cov"][k]["median_s"] / m["mean"][k]["median_s"] for k in keys}
        worst = max(ratios, key=ratios.get)
        met = m["cov"][slow]["median_s"] <= GOAL_COV_S and ratios[worst] <= GOAL_COV_RATIO
        c = m["cov"][slow]
        g2 = {k: (m["cov"][k], m["mean"][k]) for k in m["cov"] if k.startswith("g2rpo")}
        out.append(Row(
            NAME + "-moments", goal,
            measured=(f"slowest {slow.split('@')[0]} (K = "
                      f"{slow.split('@')[1].replace(',', ', M = ')}): {_ms(c['median_s'])} "
                      f"median (p10–p90 {_ms(c['p10_s'])}–"
                      f"{_ms(c['p90_s'])}; first call {fmt_seconds(c['first_s'])})"),
            baseline=(f"the mean on the 'counts' path: {slow.split('@')[0]} "
                      f"{_ms(m['mean'][slow]['median_s'])}"),
            ratio=f"worst {ratios[worst]:.1f}× the mean ({worst})",
            peak_memory=fmt_bytes(m["peak_rss"]),
            met=("yes" if met else "no") if not quick else "n/a (quick)", machine=mach,
            notes=("covariance / mean medians (ms): " + "; ".join(
                f"{k} {m['cov'][k]['median_s'] * 1e3:.3f} / {m['mean'][k]['median_s'] * 1e3:.3f}"
                for k in keys)),
            values={"cov": m["cov"], "mean": m["mean"], "met": met}))
        goal = (f"covariance of one group step, G²RPO schedule B + neutralizer, K + M = 8, "
                f"G = {G}, after compilation: ≤ 50 ms (exact), ≤ 10× the mean on the same path")
        worst = max(g2, key=lambda k: g2[k][0]["median_s"])
        same = m.get("mean_same_path", {})
        same_ratio = {k: g2[k][0]["median_s"] / same[k]["median_s"] for k in g2 if k in same}
        met = all(a["median_s"] <= GOAL_G2_COV_S for a, _ in g2.values()) and bool(
            same_ratio) and max(same_ratio.values()) <= GOAL_COV_RATIO
        paths = m.get("g2_path", {})
        out.append(Row(
            NAME + "-g2rpo-covariance", goal,
            measured="; ".join(f"K = {k.split('@')[1].replace(',', ', M = ')}: "
                               f"{_ms(a['median_s'])} median (path "
                               f"'{paths.get(k.split('@')[1], '?')}')"
                               for k, (a, _) in g2.items()),
            baseline=("exact mean on the same path ('clusters'): " + "; ".join(
                f"{_ms(same[k]['median_s'])}" for k in g2 if k in same)
                + "; by its own reduction ('rule' path): " + "; ".join(
                f"{_ms(b['median_s'])}" for _, b in g2.values()) + "; Monte Carlo covariance "
                f"of {MC_SAMPLES:,} groups: " + "; ".join(
                f"{_ms(m['mc'][k]['median_s'])}" for k in g2)),
            ratio=(", ".join(f"{v:.1f}×" for v in same_ratio.values())
                   + " the mean on the same path; "
                   f"{g2[worst][0]['median_s'] / g2[worst][1]['median_s']:.0f}× the own "
                   f"reduction's ({worst})"),
            met=("yes" if met else "no") if not quick else "n/a (quick)", machine=mach,
            values={k: {"cov": a, "mean": b, "mean_same_path": same.get(k),
                        "mc": m["mc"][k]} for k, (a, b) in g2.items()}))
        goal = f"Adam field (jit vector_field), GRPO, K + M = 8, G = {G}: ≤ 3× the SGD field"
        r = {k: m["adam"][k]["median_s"] / m["sgd"][k]["median_s"] for k in m["adam"]}
        met = max(r.values()) <= GOAL_ADAM_RATIO
        out.append(Row(
            NAME + "-adam", goal,
            measured="; ".join(f"K = {k.split('@')[1].replace(',', ', M = ')}: "
                               f"{_ms(m['adam'][k]['median_s'])}" for k in m["adam"]),
            baseline="; ".join(f"SGD {_ms(m['sgd'][k]['median_s'])}" for k in m["sgd"]),
            ratio=", ".join(f"{v:.2f}×" for v in r.values()),
            met=("yes" if met else "no") if not quick else "n/a (quick)", machine=mach,
            values={"adam": m["adam"], "sgd": m["sgd"], "met": met}))
    goal = ("optimizers' small-step fields against the bandit with optax's optimizer (GRPO, "
            "K = 3, M = 2, G = 8): good-mass error at decreasing η, and its order")
    out.append(_spread_row(results.get("spread"), quick))
    if lad is None:
        out.append(Row(NAME + "-ladder", goal, "failed", met="no"))
        return out
    parts = []
    for opt, runs in lad["runs"].items():
        for r in runs:
            parts.append(f"{opt} η = {r['eta']:g}: " + ", ".join(
                f"t = {t:g} bandit {b:.4f} ± {h:.4f} / field {f:.4f}"
                for t, b, h, f in zip(lad["times"], r["bandit"], r["half"], r["field"],
                                      strict=True)))
    order = "; ".join(f"{opt}: " + ", ".join(f"t = {t:g} {o:.2f}" for t, o in
                                              zip(lad["times"], lad["order"][opt], strict=True))
                      for opt in lad["order"])
    out.append(Row(
        NAME + "-ladder", goal,
        measured="error order in η (slope of log error): " + order,
        baseline="SGD field " + ", ".join(f"t = {t:g} {g:.4f}" for t, g in
                                          zip(lad["times"], lad["fields"]["sgd"], strict=True)),
        peak_memory=fmt_bytes(lad["peak_rss"]), machine=machine_short(lad.get("_jax", {})),
        notes="; ".join(parts) + f" ({lad['seeds']} seeds, 95 % intervals)",
        values=lad))
    return out
