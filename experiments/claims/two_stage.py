"""Two-stage RLVR (TS) claims: the two stages of §3.2 (Fig. 1), their robustness to group size,
step size and temperature (Figs. 5–6), four actions and App. C.4's signs (Fig. 7), Theorem 1's
expected logit update, and App. C.5's GRPO-TN worked example; the LLM results are listed as not
checkable.

The dynamics are computed from :class:`simplexlab.sim.TwoStage` (TS Algorithm 1) runs through
:func:`simplexlab.sweep.run`, with intervals over seeds; Theorem 1 from
:mod:`simplexlab.theory`; GRPO-TN from :func:`simplexlab.shaping.grpo_tn_advantages` (exact).
Each claim declares a fault of the library it rests on (``faults=``).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from simplexlab import shaping, sweep, theory
from simplexlab.lab import (
    Fault,
    Verdict,
    claim,
    combine,
    mean_ci,
    not_checkable,
    paired_ci,
    side,
)

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


def _above(x, direction=1):
    """The side of 0 the seed interval of ``x`` lies on (:func:`side` of :func:`mean_ci`)."""
    m, lo, hi = mean_ci(x)
    return side(lo, m, hi, direction)


_AXES_DOC = {"reward_a1": list(R1), "pi0_weight_a1": list(W1)}


def _flip(f):
    return lambda *a, **k: -f(*a, **k)


#: the simulator applies its advantages with the wrong sign (descends the reward)
SIGN = Fault("the two-stage simulator applies its advantages with the wrong sign",
             "simplexlab.sim._twostage.advantages", _flip)
#: the update divides each action's summed advantage by its probability (an importance weight
#: 1/π left in the log-likelihood gradient): rare actions move as fast as common ones
INV_P = Fault("the update divides each action's advantage by its probability (a stray "
              "importance weight 1/π in the log-likelihood gradient)",
              "simplexlab.sim._twostage.gradient_from_probs",
              lambda f: lambda p, w, s, *a: f(p, w / p, s))
#: the simulator ascends the probability surrogate Σ Â π instead of Σ Â log π
PROB = Fault("the simulator ascends Σ Â π (the probability surrogate) instead of Σ Â log π: "
             "each logit moves π times slower",
             "simplexlab.sim._twostage.gradient_from_probs",
             lambda f: lambda p, w, s, *a: f(p, w, "probability", *a))
#: one uniform per group instead of one per rollout: every group is all one action
SHARED_U = Fault("the sampler draws one uniform per group instead of one per rollout (every "
                 "group is a single action, so no advantage is ever non-zero)",
                 "simplexlab.sim._twostage._stream_uniforms",
                 lambda f: lambda seed, step, n, dtype: jnp.full((n,), f(seed, step, n,
                                                                        dtype)[0]))


@claim("ts-stage1-a1-rises-then-falls", paper="TS", source="§3.2, Fig. 1",
       sentence="In stage 1 the probability of the high-probability sub-optimal action a1 first "
                "rises (the relatively negative gradient falls on a3), then falls once a1 "
                "becomes the relatively negative action (stage 2).",
       experiment="two-stage",
       paper_setting={**BASE, "note": "the paper prints no r or π0; r = (0.5, 1, 0), "
                      "π0 = (0.45, 0.05, 0.5) chosen to meet its conditions"},
       grid={"quick": {**_AXES_DOC, "group_size": [2, 5]},
             "full": {**_AXES_DOC, "group_size": [2, 3, 5, 10]}},
       faults=[SIGN])
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
             "full": {**_AXES_DOC, "group_size": [2, 3, 5, 10]}},
       faults=[INV_P])
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
             "full": {**_AXES_DOC, "group_size": [2, 3, 5, 10]}},
       faults=[PROB])
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
       grid={"temperature": list(TAUS)}, faults=[SHARED_U])
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
                     "simplexlab.theory.expected_logit_update",
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
    predicted = np.asarray(theory.expected_logit_update(z0, np.asarray(rewards) - pi @ rewards,
                                                       eta=BASE["eta"]))
    v = 1  # a2, the action with the largest expected change
    ratio = dz[..., v] / predicted[v] - 1.0  # (G, seed)
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


# ---- App. C.4: group size (Fig. 5), the signs and four actions (Fig. 7) ------------------------

GS5 = (2, 3, 5, 10)  # TS Fig. 5


def _fig5_runs(ctx):
    """Logits over time on the grid r(a1) × w × G ∈ {2, 3, 5, 10} (τ = 1, the base rewards of
    a2, a3): ``(r1, w, G, seed, step, action)``; stride 10, fine enough to time the switch."""
    st = ctx.pick({"seeds": 16, "steps": 3000, "stride": 10},
                  {"seeds": 64, "steps": 8000, "stride": 10},
                  tiny={"seeds": 8, "steps": 2000, "stride": 10})

    def compute():
        fixed = {"num_steps": st["steps"], "stride": st["stride"], "eta": BASE["eta"],
                 "max_group_size": max(GS5), "reward_a2": 1.0, "reward_a3": 0.0,
                 "logit0_a2": float(np.log(0.05)), "logit0_a3": float(np.log(0.5))}
        ds = sweep.run("two_stage", {"reward_a1": list(R1),
                                     "logit0_a1": [float(np.log(w)) for w in W1],
                                     "group_size": list(GS5)},
                       fixed=fixed, seeds=st["seeds"], seed=ctx.seed, progress=False)
        return {"logits": ds["logits"].values, "probs": ds["probs"].values,
                "steps": ds["step"].values}

    return st, ctx.cached(("ts-fig5", tuple(sorted(ctx.overrides.items()))), compute)


@claim("ts-fig5-group-size", paper="TS", source="§3.2, App. C.4, Fig. 5",
       sentence="A larger G leads to more stable optimization and does not affect the two-stage "
                "dynamic of exploitation and exploration.",
       experiment="two-stage",
       paper_setting={**BASE, "group_size": list(GS5),
                      "stable": "the lab's reading: a narrower spread of π(a1) over seeds, "
                                "measured over twice the mean stage-switch step of each G (the "
                                "paper gives no measure; a larger G is also faster)"},
       grid={**_AXES_DOC}, faults=[SHARED_U])
def fig5_group_size(ctx):
    """Two parts at each (r(a1), π0(a1)), on the same runs for G ∈ {2, 3, 5, 10}:

    - the two stages at every G: every seed's relatively negative action switches from a3 to a1
      (:func:`simplexlab.theory.stage_switch` on its own logits) and π(a1) rises then falls
      (per seed min(peak − start, peak − end), interval above :data:`RISE_FALL`);
    - more stable at larger G: per seed the mean of |π(a1) − its seed mean| over the steps up
      to twice the seed-mean switch step of that G (each G on its own time scale: a larger G
      also switches earlier) is smaller at G = 10 than at G = 2 (interval of the difference over
      seeds; the two G's runs are independent).

    A grid point where some seed of G = 2 or G = 10 has not switched by the horizon while that
    G's run has not finished (seed-mean π(a2) < 0.9 at the end) cannot tell (censored); a seed
    that never switches in a finished run fails the two-stage part."""
    st, r = _fig5_runs(ctx)
    rewards = np.stack([np.asarray(R1), np.ones(len(R1)), np.zeros(len(R1))], -1)
    sw = np.asarray(theory.stage_switch(r["logits"], rewards[:, None, None, None, :],
                                          early_action=2, late_action=0))
    steps = r["steps"]
    t = np.where(sw >= 0, steps[np.maximum(sw, 0)], np.nan)  # (r1, w, G, seed)
    a1 = r["probs"][..., 0]  # (r1, w, G, seed, step)
    rf = _rise_fall(r["probs"])  # (r1, w, G, seed)
    shape = t.shape[:2]
    holds = np.zeros(shape, bool)
    inform = np.zeros(shape, bool)
    eff = np.full(shape, np.nan)
    at = None
    for idx in np.ndindex(*shape):
        switched = np.isfinite(t[idx])  # (G, seed)
        two = ["yes" if switched[g].all() else "no" for g in range(len(GS5))]
        two += [_above(rf[idx][g] - RISE_FALL) for g in range(len(GS5))]
        finished = r["probs"][idx][:, :, -1, 1].mean(-1) >= 0.9  # (G,): stage 2 done
        censored = [not (switched[g].all() or finished[g]) for g in (0, len(GS5) - 1)]
        inform[idx] = not any(censored)
        if inform[idx] and switched[0].any() and switched[-1].any():
            band = []
            for g in (0, len(GS5) - 1):
                win = steps <= 2.0 * np.nanmean(t[idx][g])
                x = a1[idx][g][:, win]
                band.append(np.abs(x - x.mean(0)).mean(-1))
            m, lo, hi = paired_ci(band[0], band[1])
            stable = side(lo, m, hi, 1)
        else:
            m = lo = hi = np.nan
            stable = "no"
        holds[idx] = combine([*two, stable]) == "yes"
        eff[idx] = m
        if idx == (1, 1):
            at = (combine(two), stable, (m, lo, hi))
    two, stable, (m, lo, hi) = at
    return Verdict(combine([two, stable]), m, (lo, hi),
                   "per seed mean |π(a1) − seed mean| up to twice the mean switch step, G = 2 "
                   "minus G = 10 (> 0: larger G more stable), with every seed switching a3 → a1 "
                   f"and π(a1) rising then falling (> {RISE_FALL}) at every G ∈ {{2, 3, 5, 10}}",
                   {"reward_a1": list(R1), "pi0_weight_a1": list(W1)}, holds, grid_effect=eff,
                   grid_informative=inform,
                   details={"two_stages_at_every_G": two, "more_stable": stable,
                            "mean_switch_step_per_G": [
                                float(np.mean(t[1, 1, g])) for g in range(len(GS5))],
                            "horizon_steps": int(steps[-1]), "seeds": st["seeds"]})


#: TS Fig. 7's four actions (the lab's values; the paper prints none): a2 best, a3 worst, a1 and
#: a4 in between
FOUR_R = (0.5, 1.0, 0.0, 0.75)
FOUR_P0 = (0.4, 0.05, 0.45, 0.1)
FOUR = {"rewards": FOUR_R, "probs0": FOUR_P0, "eta": 0.1, "group_size": 2,
        "note": "the paper prints no r or π0 for Fig. 7; these are the experiment's"}


def _four_fixed():
    """The fixed sweep settings of Fig. 7's four-action toy (G = 2)."""
    return {"num_actions": 4, "eta": FOUR["eta"], "max_group_size": 2,
            **{f"reward_a{i + 1}": float(v) for i, v in enumerate(FOUR_R)},
            **{f"logit0_a{i + 1}": float(np.log(p)) for i, p in enumerate(FOUR_P0)}}


@claim("ts-c4-signs", paper="TS", source="App. C.4 (more than three actions)",
       sentence="E(Δz(a_max)) is always greater than or equal to 0, while E(Δz(a_min)) is "
                "consistently less than 0.",
       experiment="two-stage", paper_setting={**FOUR},
       grid={"num_actions": [3, 4, 6], "group_size": [2, 5, 10], "temperature": [1.0, 5.0]},
       faults=[SIGN, Fault("the expected group advantage with the factor (1 − G)/G for "
                           "(G − 1)/G", "simplexlab.theory.expected_group_advantages",
                           _flip)])
def c4_signs(ctx):
    """At the paper's setting (Fig. 7's four actions, G = 2): one step of TS Algorithm 1
    (:class:`simplexlab.sim.TwoStage`) from π0 over many seeds, the mean Δz of the best action
    a2 (interval above 0) and of the worst a3 (interval below 0), and Theorem 1 with the exact
    expected group advantage (:func:`simplexlab.theory.expected_logit_update`,
    :func:`~simplexlab.theory.expected_group_advantages`) with the same signs there. Grid:
    Theorem 1 on random states (Dirichlet(1) policies, uniform rewards, 256 per point) for
    A actions, group size G and temperature τ: holds where every state has
    E[Δz(a_max)] ≥ 0 and E[Δz(a_min)] < 0."""
    n = ctx.pick(10_000, 40_000, tiny=2_000)

    def compute():
        ds = sweep.run("two_stage", {"group_size": [2.0]},
                       fixed={"num_steps": 1, "stride": 1, **_four_fixed()}, seeds=n,
                       seed=ctx.seed, progress=False)
        z = ds["logits"].values[0]  # (seed, step, A)
        return z[:, -1] - z[:, 0]

    dz = ctx.cached(("ts-c4-one-step", tuple(sorted(ctx.overrides.items()))), compute)
    best, worst = int(np.argmax(FOUR_R)), int(np.argmin(FOUR_R))
    mb, lob, hib = mean_ci(dz[:, best])
    mw, low, hiw = mean_ci(dz[:, worst])
    z0 = np.log(np.asarray(FOUR_P0))
    predicted = np.asarray(theory.expected_logit_update(
        z0, theory.expected_group_advantages(z0, np.asarray(FOUR_R), 2), eta=FOUR["eta"]))
    parts = [side(lob, mb, hib, 1), side(low, mw, hiw, -1),
             "yes" if predicted[best] >= 0 and predicted[worst] < 0 else "no"]

    rng = np.random.default_rng(ctx.seed)
    As, Gs, taus = [3, 4, 6], [2, 5, 10], [1.0, 5.0]
    h = np.zeros((3, 3, 2), bool)
    eff = np.zeros(h.shape)
    for a, A in enumerate(As):
        pi = rng.dirichlet(np.ones(A), size=256)
        r = rng.uniform(0.0, 1.0, size=(256, A))
        for b, G in enumerate(Gs):
            for c, tau in enumerate(taus):
                z = tau * np.log(pi)  # π = softmax(z/τ)
                e = np.asarray(theory.expected_logit_update(
                    z, theory.expected_group_advantages(z, r, G, temperature=tau),
                    eta=0.1, temperature=tau))
                hi_r = np.take_along_axis(e, r.argmax(-1)[:, None], -1)[:, 0]
                lo_r = np.take_along_axis(e, r.argmin(-1)[:, None], -1)[:, 0]
                right = (hi_r >= 0) & (lo_r < 0)
                h[a, b, c] = bool(right.all())
                eff[a, b, c] = float(right.mean())
    return Verdict(combine(parts), mw, (low, hiw),
                   "mean one-step Δz of the worst action a3 over seeds (< 0), with the best "
                   "action's Δz(a2) > 0 and Theorem 1's signs at the same state (Fig. 7's π0, "
                   "G = 2); grid effect: the share of random states with both signs right",
                   {"num_actions": As, "group_size": Gs, "temperature": taus}, h,
                   grid_effect=eff,
                   reason="with mean-centred group advantages the −π Σ Â term cancels, so only "
                          "sampled logits move: z(a_max) never falls and z(a_min) never rises on "
                          "every path, not only in expectation; E[Δz(a_min)] = 0 only where π "
                          "puts no mass above r_min",
                   details={"mean_dz_best": [mb, lob, hib], "theorem1": predicted.tolist(),
                            "seeds": n, "states_per_point": 256})


def _fig7_runs(ctx):
    """π over time for the grid r(a4) × π0(a4) weight (the other actions at Fig. 7's values,
    π0 renormalised by the softmax): ``(r4, w4, seed, step, action)``."""
    st = ctx.pick({"seeds": 16, "steps": 4000, "stride": 20},
                  {"seeds": 64, "steps": 12000, "stride": 25},
                  tiny={"seeds": 8, "steps": 2500, "stride": 25})

    def compute():
        fixed = {k: v for k, v in _four_fixed().items() if k not in ("reward_a4", "logit0_a4")}
        ds = sweep.run("two_stage", {"reward_a4": list(R4), "logit0_a4": [
            float(np.log(w)) for w in W4]},
                       fixed={"num_steps": st["steps"], "stride": st["stride"], **fixed},
                       seeds=st["seeds"], seed=ctx.seed, progress=False)
        return {"probs": ds["probs"].values, "steps": ds["step"].values}

    return st, ctx.cached(("ts-fig7", tuple(sorted(ctx.overrides.items()))), compute)


R4 = (0.6, 0.75, 0.9)  # r(a4)
W4 = (0.05, 0.1, 0.2)  # π0(a4) weight (π0 ∝ (0.4, 0.05, 0.45, w))


@claim("ts-fig7-four-actions", paper="TS", source="App. C.4, Fig. 7",
       sentence="For other actions, the probabilities generally exhibit a two-stage dynamic.",
       experiment="two-stage", paper_setting={**FOUR},
       grid={"reward_a4": list(R4), "pi0_weight_a4": list(W4)}, faults=[PROB])
def fig7_four_actions(ctx):
    """Fig. 7's four actions under TS Algorithm 1: the two middle actions a1 (r = 0.5) and a4
    (r = 0.75) each rise then fall (per seed min(peak − start, peak − end) of π, interval above
    :data:`RISE_FALL`). Grid: r(a4) and its initial weight (the paper prints neither); a point
    whose run has not finished (seed-mean π(a2) < 0.5 at the horizon: the middle actions cannot
    have fallen yet) cannot tell."""
    st, r = _fig7_runs(ctx)
    p = r["probs"]  # (r4, w4, seed, step, A)
    rf1 = _rise_fall(p)
    rf4 = _rise_fall(p[..., [3]])
    holds = np.zeros(p.shape[:2], bool)
    eff = np.zeros(p.shape[:2])
    for idx in np.ndindex(*p.shape[:2]):
        holds[idx] = combine([_above(rf1[idx] - RISE_FALL), _above(rf4[idx] - RISE_FALL)]) \
            == "yes"
        eff[idx] = min(rf1[idx].mean(), rf4[idx].mean())
    inform = p[:, :, :, -1, 1].mean(-1) >= 0.5
    i, j = R4.index(0.75), W4.index(0.1)
    m4, lo4, hi4 = mean_ci(rf4[i, j])
    status = combine([_above(rf1[i, j] - RISE_FALL), _above(rf4[i, j] - RISE_FALL)])
    return Verdict(status, m4, (lo4, hi4),
                   f"per seed min(peak − start, peak − end) of π(a4) (holds above {RISE_FALL}, "
                   "and so must π(a1)'s)", {"reward_a4": list(R4), "pi0_weight_a4": list(W4)},
                   holds, grid_effect=eff, grid_informative=inform,
                   details={"rise_fall_a1": mean_ci(rf1[i, j]), "seeds": st["seeds"],
                            "horizon_steps": int(r["steps"][-1])})


# ---- App. C.5: the GRPO-TN worked example ------------------------------------------------------

#: TS App. C.5: Sample 0 [A, B, C, D], Sample 1 [A, B, E, F], Sample 2 [A, G, H, I]; rewards
#: 1, 0, 1; the advantages the paper lists (before the 0.1 decay)
TN_TOKENS = ((0, 1, 2, 3), (0, 1, 4, 5), (0, 6, 7, 8))
TN_REWARDS = (1.0, 0.0, 1.0)
TN_PAPER = ((0.707, 0.353, 1.768, 1.768), (0.707, -1.768, -2.475, -2.475),
            (0.707, 1.414, 1.414, 1.414))
#: the tokens the paper says are decayed: C, D in Sample 0; G, H, I in Sample 2
TN_DECAYED = ((False, False, True, True), (False,) * 4, (False, True, True, True))
TN_NAMES = ("A", "B", "C", "D", "A", "B", "E", "F", "A", "G", "H", "I")


@claim("ts-c5-grpo-tn-example", paper="TS", source="App. C.5 (GRPO-TN worked example)",
       sentence="Sample 0: [0.707, 0.353, 1.768, 1.768], Sample 1: [0.707, −1.768, −2.475, "
                "−2.475], Sample 2: [0.707, 1.414, 1.414, 1.414]; the decay applies to C, D in "
                "Sample 0 and G, H, I in Sample 2.",
       experiment="two-stage",
       paper_setting={"tokens": [list(t) for t in TN_TOKENS], "rewards": list(TN_REWARDS),
                      "std": "population (ddof = 0), ε = 0 (the only convention that gives "
                             "the listed 0.707)", "decay": 0.1},
       grid={"token": [f"s{i // 4}:{n}" for i, n in enumerate(TN_NAMES)], "std_ddof": [0, 1]},
       faults=[Fault("the group std of eq. (5) with Bessel's correction (ddof = 1) whatever "
                     "the caller asks", "simplexlab.shaping._token.group_std",
                     lambda f: lambda r, m, ddof=0: f(r, m, 1))])
def c5_grpo_tn(ctx):
    """The library's GRPO-TN advantages (:func:`simplexlab.shaping.grpo_tn_advantages`, eq. 5
    on the compressed prefix tree) against the twelve listed values (to the paper's three
    decimals, which truncate: 0.35355 is listed 0.353), and the decayed tokens (the library's
    0.1 decay against no decay) against the paper's list. Two parts: the values, the decay.
    Exact (no sampling). Grid: token × the std convention (the paper does not say)."""
    import jax

    tok, rew = np.asarray(TN_TOKENS), np.asarray(TN_REWARDS)
    paper = np.asarray(TN_PAPER)
    # one compiled program per (decay, ddof): eager ops would compile one by one
    tn_jit = jax.jit(shaping.grpo_tn_advantages, static_argnames=("decay", "ddof"))

    def tn(decay, ddof):
        return np.asarray(tn_jit(rew, tok, decay=decay, ddof=ddof))

    vals = {d: tn(1.0, d) for d in (0, 1)}
    ok = {d: np.abs(vals[d] - paper) < 1.5e-3 for d in (0, 1)}
    dec = tn(0.1, 0)
    decayed = ~np.isclose(dec, vals[0])
    parts = ["yes" if ok[0].all() else ("partly" if ok[0].any() else "no"),
             "yes" if np.array_equal(decayed, np.asarray(TN_DECAYED)) else "no"]
    dev = vals[0] - paper
    worst = np.unravel_index(np.argmax(np.abs(dev)), dev.shape)
    return Verdict(combine(parts), float(dev[worst]), (float(dev[worst]),) * 2,
                   "the library's advantage minus the listed one at the worst token (exact; "
                   "holds within 1.5e-3, the listed values truncate to 3 decimals), with the "
                   "decay on exactly the named tokens",
                   {"token": [f"s{i // 4}:{n}" for i, n in enumerate(TN_NAMES)],
                    "std_ddof": [0, 1]},
                   np.stack([ok[0].ravel(), ok[1].ravel()], -1),
                   grid_effect=np.stack([(vals[d] - paper).ravel() for d in (0, 1)], -1),
                   reason=f"{int(ok[0].sum())} of the 12 listed values reproduce; Sample 1's "
                          "first token A is "
                          f"listed {paper[1, 0]:g}, eq. (5) gives (0 − 2/3 + δ_A)/std(r) = "
                          f"{vals[0][1, 0]:.3f}: node A is shared by all three samples, so δ_A "
                          "is the same for all (0), and 0.707 for the reward-0 sample would need "
                          "δ_A = 1 while the reward-1 samples need δ_A = 0. The listed values "
                          f"need the population std (ddof = 1 reproduces {int(ok[1].sum())})",
                   details={"library": vals[0].tolist(), "paper": paper.tolist(),
                            "decayed_tokens": decayed.tolist(),
                            "library_ddof1": vals[1].tolist()})


# ---- statements the lab cannot check -----------------------------------------------------------

_LLM = ("an LLM training and benchmark run (Qwen2.5-Math-7B, Llama-3.2-3B-Instruct trained on "
        "MATH with verl); the lab has no such models, data or compute, and the three-action toy "
        "is no stand-in for them")

not_checkable("ts-table1-pass-at-k", paper="TS", source="§4.2, Tables 1–3",
              sentence="GRPO-N and GSPO-N reliably improve the reasoning performance of the base "
                       "model on ID tasks for every value of k, and achieve a favorable "
                       "trade-off across k on ID and OOD tasks.", why=_LLM)
not_checkable("ts-fig2-entropy-dynamics", paper="TS", source="§4.2, Figs. 2 and 4",
              sentence="GRPO causes the entropy of the base model to collapse; GRPO-N, GSPO and "
                       "GSPO-N all exhibit a pattern where entropy initially decreases and then "
                       "increases, and the entropy of GRPO-N significantly surpasses that of the "
                       "base model.", why=_LLM)
not_checkable("ts-table4-grpo-tn", paper="TS", source="App. C.5, Table 4",
              sentence="GRPO-TN's pass@k of Qwen2.5-Math-7B on AMC 2023, AIME 2024 and AIME "
                       "2025 (e.g. 80.0 at k = 256 on AIME 2024).",
              why=_LLM + " (the advantage rule itself is checked by ts-c5-grpo-tn-example)")
not_checkable("ts-table5-entropy", paper="TS", source="App. C.6, Table 5",
              sentence="Answer-level and token-level entropy of the base and trained models on "
                       "AMC 2023, AIME 2024 and AIME 2025.", why=_LLM)
not_checkable("ts-fig3-case-study", paper="TS", source="§4.3, Fig. 3, App. C.7",
              sentence="Unlike GRPO, which reinforces the entire trajectory including "
                       "error-prone steps, GRPO-N effectively prevents such reinforcement: it "
                       "produces fewer erroneous code generations.",
              why="a qualitative case study of LLM outputs: no criterion, and no such model in "
                  "the lab")
