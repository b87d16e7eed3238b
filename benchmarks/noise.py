"""Goals: the second moment of one group step (:func:`simplexlab.theory.expected_moments`) and
the fields built on it must cost about what the mean costs, and the optimizers' small-step
fields must be the limit the bandit approaches as η shrinks.

1. **The covariance of one step** at K + M = 8 (K = 6, M = 2 and K = 4, M = 4), G = 16, perfect
   verifier, at the bandit's initial policy (p0 = 0.7, instance 0), for every count rule of the
   finite-group benchmark (``"counts"`` path): ``jax.jit`` of ``expected_moments(...)
   .covariance``, after compilation, median of many calls: ≤ 2 ms, and within 10× of the mean's
   cost on the same path (``expected_update(..., path="counts").theta``, measured in the same
   run and process). G²RPO (schedule B + neutralizer) has no exact second-moment path that fits
   at this size (its enumeration needs 5.9 million table entries): its Monte Carlo path (4,096
   groups) is reported beside its exact mean (the ``"rule"`` path).
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
"""

from __future__ import annotations

import time

from ._common import Row, fmt_bytes, fmt_seconds, machine_short, peak_rss
from .finite_group import COUNT_RULES, INSTANCE, P0, SHAPES, _median_call

NAME = "noise"
BEST = "wall_s"
G_STEP = 16
GOAL_COV_S, GOAL_COV_RATIO, GOAL_ADAM_RATIO = 2e-3, 10.0, 3.0
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
        # G²RPO: its exact mean beside the Monte Carlo covariance
        rule = group_rule("g2rpo", schedule=GainSchedule(kind="B", neutralize=True, gain=1.5))
        cov = jax.jit(lambda r, p, K=K: expected_moments(r, p, K, G, num_samples=MC_SAMPLES)
                      .covariance)
        mean = jax.jit(lambda r, p, K=K: expected_update(r, p, K, G).theta)
        for name, f in (("cov", cov), ("mean", mean)):
            first, med, p10, p90 = _median_call(f, (rule, probs), max(5, n // 10))
            out[name][f"g2rpo-B@{K},{M}"] = {"first_s": first, "median_s": med, "p10_s": p10,
                                             "p90_s": p90}
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


WORKERS = {"moments": (moments, None), "ladder": (ladder, None)}


def _ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s < 0.1 else fmt_seconds(s)


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
                for k in keys) + "; G²RPO schedule B + neutralizer (no exact second-moment path "
                "fits at this size): Monte Carlo covariance of 4,096 groups / exact mean ('rule' "
                "path): " + "; ".join(f"{k} {a['median_s'] * 1e3:.2f} / {b['median_s'] * 1e3:.3f}"
                                      for k, (a, b) in g2.items())),
            values={"cov": m["cov"], "mean": m["mean"], "met": met}))
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
