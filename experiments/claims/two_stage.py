"""Two-stage RLVR (TS) claims: the two stages of §3.2 (Fig. 1), their robustness to group size,
step size and temperature (Figs. 5–6), and Theorem 1's expected logit update.

Every criterion is computed from :class:`simplexlab.sim.TwoStage` (TS Algorithm 1) runs through
:func:`simplexlab.sweep.run`, with intervals over seeds.
"""

from __future__ import annotations

import numpy as np

from simplexlab import sampling, sweep
from simplexlab.lab import Fault, Verdict, claim, combine, mean_ci, side

BASE = {"rewards": (0.5, 1.0, 0.0), "probs0": (0.45, 0.05, 0.5), "eta": 0.1, "group_size": 2}
#: π(a1) "rises then falls" when its peak exceeds its start and its end by this (per seed)
RISE_FALL = 0.05
#: "π(a2) almost unchanged" in stage 1: it rises by at most this until π(a1) peaks
A2_CHANGE = 0.05
R1 = (0.25, 0.5, 0.75)  # r(a1) (r(a2) = 1, r(a3) = 0)
W1 = (0.2, 0.45, 0.8)  # π0 ∝ (w, 0.05, 0.5)
TAUS = (1.0, 2.0, 5.0, 20.0)


def _runs(ctx):
    """π over time for the grid r(a1) × w × G (τ = 1) and the temperature row: arrays
    ``(r1, w, G, seed, step, action)`` and ``(tau, seed, step, action)``."""
    st = ctx.pick({"seeds": 8, "steps": 3000, "stride": 20, "G": (2, 5), "eta": 0.1},
                  {"seeds": 32, "steps": 12000, "stride": 40, "G": (2, 3, 5, 10), "eta": 0.1},
                  tiny={"seeds": 4, "steps": 1500, "stride": 30, "G": (2,), "eta": 0.1})

    def compute():
        eta = ctx.setting("eta", st["eta"])
        fixed = {"num_steps": st["steps"], "stride": st["stride"], "eta": eta,
                 "max_group_size": max(st["G"]), "reward_a2": 1.0, "reward_a3": 0.0,
                 "logit0_a2": float(np.log(0.05)), "logit0_a3": float(np.log(0.5))}
        ds = sweep.run("two_stage", {"reward_a1": list(R1),
                                     "logit0_a1": [float(np.log(w)) for w in W1],
                                     "group_size": list(st["G"]), "temperature": list(TAUS)},
                       fixed=fixed, seeds=st["seeds"], seed=ctx.seed, progress=False)
        probs = ds["probs"].values  # (r1, w, G, tau, seed, step, A)
        return {"grid": probs[:, :, :, 0], "tau": probs[1, 1, 0], "steps":
                ds["step"].values}

    return st, ctx.cached(("ts-runs", tuple(sorted(ctx.overrides.items()))), compute)


def _rise_fall(pi):
    """Per seed: min(peak − start, peak − end) of π(a1) ``(..., seed, step)``."""
    a1 = pi[..., 0]
    peak = a1.max(-1)
    return np.minimum(peak - a1[..., 0], peak - a1[..., -1])


def _a2_rise(pi):
    """Per seed: the rise of π(a2) from the start until π(a1) peaks."""
    a1, a2 = pi[..., 0], pi[..., 1]
    k = a1.argmax(-1)
    at = np.take_along_axis(a2, k[..., None], -1)[..., 0]
    return at - a2[..., 0]


def _grid_status(arr, direction=1, shift=0.0):
    """Per grid point (all but the seed axis): the claim holds (interval on the claimed side of
    ``shift``) and the seed-mean effect."""
    shape = arr.shape[:-1]
    holds = np.zeros(shape, bool)
    eff = np.zeros(shape)
    for idx in np.ndindex(*shape):
        m, lo, hi = mean_ci(arr[idx] - shift)
        holds[idx] = side(lo, m, hi, direction) == "yes"
        eff[idx] = m
    return holds, eff


_AXES_DOC = {"reward_a1": list(R1), "pi0_weight_a1": list(W1)}


@claim("ts-stage1-a1-rises-then-falls", paper="TS", source="§3.2, Fig. 1",
       sentence="In stage 1 the probability of the high-probability sub-optimal action a1 first "
                "rises (the relatively negative gradient falls on a3), then falls once a1 "
                "becomes the relatively negative action (stage 2).",
       experiment="two-stage",
       paper_setting={**BASE, "note": "the paper prints no r or π0; r = (0.5, 1, 0), "
                      "π0 = (0.45, 0.05, 0.5) chosen to meet its conditions"},
       grid={"quick": {**_AXES_DOC, "group_size": [2, 5]},
             "full": {**_AXES_DOC, "group_size": [2, 3, 5, 10]}})
def stage1_rise_fall(ctx):
    st, r = _runs(ctx)
    d = _rise_fall(r["grid"])  # (r1, w, G, seed)
    m, lo, hi = mean_ci(d[1, 1, 0] - RISE_FALL)
    holds, eff = _grid_status(d, 1, RISE_FALL)
    return Verdict(side(lo, m, hi, 1), m + RISE_FALL, (lo + RISE_FALL, hi + RISE_FALL),
                   f"per seed min(peak − start, peak − end) of π(a1) (holds above {RISE_FALL})",
                   {"reward_a1": list(R1), "pi0_weight_a1": list(W1),
                    "group_size": list(st["G"])}, holds, grid_effect=eff)


@claim("ts-stage1-a2-unchanged", paper="TS", source="§3.2, Fig. 1",
       sentence="In stage 1 π(a2) remains almost unchanged.",
       experiment="two-stage",
       paper_setting={**BASE},
       grid={"quick": {**_AXES_DOC, "group_size": [2, 5]},
             "full": {**_AXES_DOC, "group_size": [2, 3, 5, 10]}})
def stage1_a2_unchanged(ctx):
    st, r = _runs(ctx)
    d = _a2_rise(r["grid"])
    m, lo, hi = mean_ci(A2_CHANGE - d[1, 1, 0])
    holds, eff = _grid_status(A2_CHANGE - d, 1)
    return Verdict(side(lo, m, hi, 1), A2_CHANGE - m, (A2_CHANGE - hi, A2_CHANGE - lo),
                   f"rise of π(a2) until π(a1) peaks (holds below {A2_CHANGE})",
                   {"reward_a1": list(R1), "pi0_weight_a1": list(W1),
                    "group_size": list(st["G"])}, holds, grid_effect=A2_CHANGE - eff,
                   reason="π(a2) is small, so its logit can rise a lot (0.6–0.8) while π(a2) "
                          "moves little; with large r(a1) or small π0(a1) the rise exceeds "
                          f"{A2_CHANGE}")


@claim("ts-stage2-best-action-wins", paper="TS", source="§3.2, Fig. 1 (stage 2)",
       sentence="In stage 2 the optimal action a2 takes over: its probability rises towards 1.",
       experiment="two-stage", paper_setting={**BASE},
       grid={"quick": {**_AXES_DOC, "group_size": [2, 5]},
             "full": {**_AXES_DOC, "group_size": [2, 3, 5, 10]}})
def stage2_best_wins(ctx):
    """Time to π(a2) ≥ 0.5, censored at the horizon: the fraction of seeds with the event by
    the horizon (the Kaplan–Meier estimate with every censoring at the horizon) and its
    interval; holds when the interval lies above 1/2."""
    from simplexlab.lab import first_event

    st, r = _runs(ctx)
    t = first_event(r["grid"][..., 1], r["steps"], 0.5)  # (r1, w, G, seed)
    ev = np.isfinite(t).astype(float)
    m, lo, hi = mean_ci(ev[1, 1, 0] - 0.5)
    holds, eff = _grid_status(ev, 1, 0.5)
    return Verdict(side(lo, m, hi, 1) if np.std(ev[1, 1, 0]) > 0 else
                   ("yes" if m > 0 else "no"), m + 0.5, (lo + 0.5, hi + 0.5),
                   "fraction of seeds with π(a2) ≥ 0.5 by the horizon (time to event, censored "
                   "at the horizon; holds above 1/2)",
                   {"reward_a1": list(R1), "pi0_weight_a1": list(W1),
                    "group_size": list(st["G"])}, holds, grid_effect=eff + 0.5,
                   details={"horizon_steps": int(r["steps"][-1])})


@claim("ts-fig6-temperature", paper="TS", source="App. C.4, Fig. 6",
       sentence="The two stages appear at every sampling temperature (τ = 1, 2, 5, 20).",
       experiment="two-stage",
       paper_setting={**BASE, "temperature": list(TAUS),
                      "note": "the paper does not say whether z or π is held fixed across τ; "
                              "the lab holds z0 = log π0"},
       grid={"temperature": list(TAUS)})
def fig6_temperature(ctx):
    st, r = _runs(ctx)
    d = _rise_fall(r["tau"])  # (tau, seed)
    holds, eff = _grid_status(d, 1, RISE_FALL)
    parts = ["yes" if h else "no" for h in holds]
    m, lo, hi = mean_ci(d[TAUS.index(20.0)])
    return Verdict(combine(parts), m, (lo, hi),
                   f"per seed min(peak − start, peak − end) of π(a1) at τ = 20 (holds above "
                   f"{RISE_FALL} at every τ)", {"temperature": list(TAUS)}, holds,
                   grid_effect=eff,
                   reason="with z0 fixed, a larger τ flattens π0 and the gradient carries 1/τ: "
                          "the stages slow down by about τ and do not finish within the horizon",
                   details={"horizon_steps": int(r["steps"][-1])})


@claim("ts-thm1-expected-update", paper="TS", source="Theorem 1, App. B.4",
       sentence="E[Δz_v] = η π(v)[(1 − π(v)) Â(v) − Σ_{u≠v} π(u) Â(u)] with the advantage "
                "Â = r − mean.",
       experiment="two-stage",
       paper_setting={**BASE, "advantage": "r − π·r (population)", "group_size": 2},
       grid={"group_size": [2, 3, 5, 10, 50]},
       faults=[Fault("the expected update (Thm 1) twice too large",
                     "simplexlab.sampling.expected_logit_update",
                     lambda f: lambda *a, **k: 2.0 * f(*a, **k))])
def thm1(ctx):
    Gs = [2, 3, 5, 10, 50]
    n = ctx.pick(4000, 20000, tiny=1000)
    rewards, probs0 = BASE["rewards"], BASE["probs0"]
    z0 = np.log(np.asarray(probs0))
    eta = ctx.setting("eta", BASE["eta"])
    fixed = {"num_steps": 1, "stride": 1, "eta": eta, "max_group_size": max(Gs),
             **{f"reward_a{i + 1}": rewards[i] for i in range(3)},
             **{f"logit0_a{i + 1}": float(z0[i]) for i in range(3)}}

    def compute():
        ds = sweep.run("two_stage", {"group_size": Gs}, fixed=fixed, seeds=n, seed=ctx.seed,
                       progress=False)
        z = ds["logits"].values  # (G, seed, step, A)
        return z[:, :, -1] - z[:, :, 0]

    dz = ctx.cached(("ts-thm1", tuple(sorted(ctx.overrides.items()))), compute)
    pi = np.asarray(probs0)
    theory = np.asarray(sampling.expected_logit_update(z0, np.asarray(rewards) - pi @ rewards,
                                                       eta=BASE["eta"]))
    v = 1  # a2, the action with the largest expected change
    ratio = dz[..., v] / theory[v] - 1.0  # (G, seed)
    tol = 0.05

    def ok(x):
        m, lo, hi = mean_ci(x)
        return (lo <= 0 <= hi) or (abs(lo) <= tol and abs(hi) <= tol)

    m, lo, hi = mean_ci(ratio[0])
    status = "yes" if ok(ratio[0]) else ("partly" if abs(m) <= 2 * tol else "no")
    return Verdict(status, m, (lo, hi),
                   "Monte Carlo mean Δz(a2) over one step / Theorem 1 at Â = r − π·r, minus 1 "
                   f"(holds: interval contains 0 or lies within ±{tol})",
                   {"group_size": Gs}, [ok(x) for x in ratio], grid_effect=ratio.mean(-1),
                   reason="with Â_i = r(a_i) − group mean, E[Â_i | a_i = u] = (G − 1)/G "
                          "(r(u) − π·r): Theorem 1 at r − π·r overstates the update by "
                          "G/(G − 1), ×2 at the paper's G = 2",
                   details={"expected_ratio_(G-1)/G": [(g - 1) / g for g in Gs]})
