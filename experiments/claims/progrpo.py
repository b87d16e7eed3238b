"""ProGRPO claims (PG: "Back to Basics: Revisiting Exploration in RL for LLM Reasoning via
Generative Probabilities"): the uniform equilibrium over the correct modes (Thm A.2), no
reinforcement of incorrect rollouts below the α bound (Thm A.4, eq. 15), the entropy over the
correct outputs against GRPO (Thm A.5), Table 6's α trend and Fig. 2's entropy dip-then-rise.

Every criterion is computed on the finite-group (K+M)-mode bandit (:class:`simplexlab.sim.Bandit`
with ``method="progrpo"``, run by :func:`simplexlab.sweep.run`; ``progrpo_alpha = 0`` is GRPO's
z-score, with the same keys: paired seeds) from the method zoo's starts (K = 6, M = 2, p0 = 0.8,
Dirichlet(1) compositions per prompt: intervals over seeds and prompt starts,
:func:`simplexlab.lab.crossed_ci`). A bandit rollout is one token, so its confidence ``c(o)``
(PG eq. 6) is its probability ``π``, and the prompt's ``c(q)`` (eq. 5; the bandit has no prompt
tokens) the geometric mean of the group's confidences (``simplexlab.shaping``'s ProGRPO rule).

The paper states its rule twice: eq. (4) skips only the all-wrong groups; Alg. 1 (line 14) also
skips the all-correct ones. The two readings differ where the paper's statements are decided
(as p → 0 every group is all-correct), so each dynamic claim is judged under both (the bandit's
``progrpo_all_correct`` = 0: Alg. 1, the lab's default; 1: eq. 4), and holds at the paper's
setting only where it holds under both ("partly" where under one).
"""

from __future__ import annotations

import numpy as np

from simplexlab import shaping, sweep
from simplexlab.lab import (
    Fault,
    Verdict,
    boundary_text,
    claim,
    combine,
    interval,
    mean_ci,
    not_checkable,
    side,
)

PAPER = "PG"
#: the method zoo's bandit (experiments/method_zoo.py): K good, M bad modes, p0, one instance
SETTING = {"K": 6, "M": 2, "p0": 0.8, "instance": 0}
PAPER_G = 8  #: PG Table 1: N = 8 rollouts per prompt
PAPER_ALPHA = 0.3  #: PG §4.5, Table 6
#: the paper's two readings of its rule -> the bandit's ``progrpo_all_correct``
READINGS = {"Alg. 1": 0.0, "eq. (4)": 1.0}
NOISE = 1e-6  #: effects below this (float32 sums of ~1e3 terms) cannot tell

_SETTING_TEXT = {
    "rule": "both readings of the paper's rule: Alg. 1 (all-wrong and all-correct groups "
            "skipped; the lab's default) and eq. (4) read literally (only all-wrong groups "
            "skipped)",
    "group_size": PAPER_G,
    "alpha": PAPER_ALPHA,
    "c(o), c(q)": "the lab's choice: a bandit answer is one token, so c(o) = π(o) (eq. 6 with "
                  "its one low-probability token); c(q) = the geometric mean of the group's "
                  "c(o) (the bandit has no prompt tokens for eq. 5)",
    "K, M, p0, starts": "the lab's choice: the method zoo's K = 6 good, M = 2 bad modes, "
                        "p0 = 0.8, Dirichlet(1) compositions per prompt (instance 0)",
    "optimizer, eta, steps": "the lab's choice: plain SGD on the mean-reduced log-likelihood "
                             "(one on-policy step per batch: the clip of eq. 7 is inactive, no "
                             "KL as in Table 1), η = 0.2, 600 steps (quick)",
}


def _settings(ctx):
    return ctx.pick(
        {"alphas": (0.0, 0.1, 0.3, 0.7, 1.0), "G": (4, 8, 16), "seeds": 8, "prompts": 8,
         "eta": 0.2, "steps": 600, "draws": 8, "G_draw": (4, 8, 16, 64),
         "p0_draw": (0.8, 0.95, 0.99)},
        {"alphas": (0.0, 0.1, 0.3, 0.7, 1.0), "G": (4, 8, 16, 32), "seeds": 12,
         "prompts": 12, "eta": 0.2, "steps": 1200, "draws": 8, "G_draw": (4, 8, 16, 32, 64),
         "p0_draw": (0.8, 0.9, 0.95, 0.99)},
        tiny={"alphas": (0.0, 0.3, 0.7), "G": (PAPER_G,), "seeds": 4, "prompts": 4,
              "eta": 0.2, "steps": 400, "draws": 8, "G_draw": (8, 64), "p0_draw": (0.8, 0.99)})


def _runs(ctx):
    """The shared bandit sweep over (reading, α, G) with the same keys: per
    ``(reading, alpha, G, seed, step, prompt)`` the bad mass ``p``, ``L_y``, the entropy of the
    whole policy ``H`` and of the within-good composition ``H_y`` (the entropy over the correct
    outputs, PG eq. 17), and the compositions ``y``, ``z``."""
    st = _settings(ctx)
    key = ("pg-runs", tuple(sorted(ctx.overrides.items())))

    def compute():
        fixed = {"method": "progrpo", **SETTING, "num_prompts": st["prompts"],
                 "eta": ctx.setting("eta", st["eta"]), "num_steps": st["steps"],
                 "stride": st["steps"] // 20}
        ds = sweep.run("bandit", {"progrpo_all_correct": list(READINGS.values()),
                                  "progrpo_alpha": list(st["alphas"]),
                                  "group_size": list(st["G"])},
                       fixed=fixed, seeds=st["seeds"], seed=ctx.seed, progress=False,
                       batching="map")
        y = np.asarray(ds["y"].values, float)
        return {"p": np.asarray(ds["p"].values, float),
                "L_y": np.asarray(ds["L_y"].values, float),
                "H": np.asarray(ds["entropy"].values, float),
                "H_y": np.asarray(shaping.entropy(y / y.sum(-1, keepdims=True))),
                "y": y, "z": np.asarray(ds["z"].values, float),
                "steps": np.asarray(ds["step"].values)}

    return st, ctx.cached(key, compute)


def _idx(values, v, default=0):
    values = list(values)
    return values.index(v) if v in values else default


def _informative(x) -> bool:
    return bool(abs(np.mean(x)) > NOISE or np.std(x) > NOISE)


def _by_reading(x, ia, ig, alphas, Gs, direction):
    """A criterion ``x`` ``(reading, α, G, seed, prompt)`` judged on the claimed side
    (``direction``) at the paper's (α, G) = ``(alphas[ia], Gs[ig])`` under each reading, and
    over the grid of the α > 0 rows: ``(parts, effects by reading, axes, holds, informative,
    boundary)``."""
    parts, effs = [], {}
    for k, name in enumerate(READINGS):
        lo, m, hi = interval(x[k, ia, ig])
        parts.append(side(lo, m, hi, direction))
        effs[name] = (m, lo, hi)
    rows = [i for i, a in enumerate(alphas) if a > 0]
    cells = [[[x[k, i, j] for j in range(len(Gs))] for i in rows] for k in range(len(READINGS))]
    holds = np.array([[[side(*interval(c), direction) == "yes" for c in row] for row in blk]
                      for blk in cells])
    inf = np.array([[[_informative(c) for c in row] for row in blk] for blk in cells])
    axes = {"reading": list(READINGS), "alpha": [alphas[i] for i in rows], "group_size": Gs}
    return (parts, effs, axes, holds, inf, rows,
            boundary_text(axes, holds, along="alpha", informative=inf))


# ---- faults (the library ProGRPO rests on) ---------------------------------------------------

_RULE = "simplexlab.shaping._token.progrpo_advantages"  # looked up by the rule's __call__
SIGN = Fault("the re-weighting's sign flipped: Ã = A − α (c(q) − c(o|q))", _RULE,
             lambda f: lambda *a, alpha, **k: f(*a, alpha=-alpha, **k))
DROPPED = Fault("the confidence term dropped (Ã = A: α read as 0)", _RULE,
                lambda f: lambda *a, alpha, **k: f(*a, alpha=0.0 * alpha, **k))


def _no_sigma(f):
    def mean_shifted(rewards, mask=None, *, eps=1e-6, ddof=0):
        return shaping.mean_shifted_advantages(rewards, mask)
    return mean_shifted


SIGMA = Fault("Alg. 1 line 12's σ dropped: ProGRPO on mean-shifted rewards r − μ",
              "simplexlab.shaping._token.grpo_advantages", _no_sigma)


# ---- Thm A.2: the uniform equilibrium over the correct modes ---------------------------------

def _uniform_stability(st) -> tuple[str, dict]:
    """The finite-group theory (the exact expected SGD step at group size G) at states near
    the uniform y: ``(dL_y/dt)/ε²`` at ``y = 1/K + ε v`` (4 random tangent directions v,
    ε = 0.02, z uniform) for p = 0.2, 0.05, 0.01, 0.001, α = 0.3, G = 8, under both readings:
    > 0: the uniform is unstable (collision), < 0: it attracts."""
    import equinox as eqx
    import jax.numpy as jnp

    from simplexlab.sim import Bandit
    from simplexlab.theory import make_state

    K, M = SETTING["K"], SETTING["M"]
    rng = np.random.default_rng(0)
    v = rng.normal(size=(4, K))
    v -= v.mean(-1, keepdims=True)
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    eps, ps = 0.02, np.array([0.2, 0.05, 0.01, 0.001])
    s = make_state(jnp.asarray(np.repeat(ps, 4)), jnp.asarray(np.tile(1 / K + eps * v, (4, 1))),
                   jnp.full((16, M), 1.0 / M))
    rate = eqx.filter_jit(lambda d, x: 2.0 * jnp.sum(x.y * d.vector_field(0.0, x).y, -1))
    out = {}
    for name, flag in READINGS.items():
        dyn, _ = Bandit(K=K, M=M, method="progrpo", max_group_size=PAPER_G).finite_group(
            {"group_size": PAPER_G, "eta": st["eta"], "progrpo_alpha": PAPER_ALPHA,
             "progrpo_all_correct": flag, "p0": SETTING["p0"]})
        out[name] = (np.asarray(rate(dyn, s)).reshape(4, 4).mean(-1) / eps**2).tolist()
    txt = ("finite-group theory at y = 1/K + 0.02 v (α = 0.3, G = 8): (dL_y/dt)/ε² = " + "; ".join(
        f"{name}: " + ", ".join(f"{r:+.4f} at p = {p:g}" for r, p in zip(out[name], ps,
                                                                          strict=True))
        for name in out))
    return txt, {"uniform_stability": out, "p": ps.tolist()}


@claim("pg-thm-a2-uniform-equilibrium", paper=PAPER, source="Thm A.2 (Part 1), App. A.5.3",
       sentence="The AMR mechanism induces a maximum-entropy state within the correct outputs "
                "through negative feedback: equilibrium is reached only when the confidences "
                "of the correct outputs are equal, a uniform distribution over the success "
                "manifold (where GRPO's equal advantages concentrate it, Lemma A.1).",
       experiment="method-zoo",
       paper_setting=_SETTING_TEXT,
       grid={"quick": {"reading": list(READINGS), "alpha": [0.1, 0.3, 0.7, 1.0],
                       "group_size": [4, 8, 16]},
             "full": {"reading": list(READINGS), "alpha": [0.1, 0.3, 0.7, 1.0],
                      "group_size": [4, 8, 16, 32]}},
       faults=[SIGN, DROPPED])
def uniform_equilibrium(ctx):
    """The policy within the correct modes moves towards the uniform (L_y falls towards 1/K)
    in the second half of training, from the Dirichlet starts; GRPO's (α = 0) L_y rises."""
    st, r = _runs(ctx)
    alphas, Gs = list(st["alphas"]), list(st["G"])
    Ly = r["L_y"]
    h = Ly.shape[-2] // 2
    late = Ly[..., -1, :] - Ly[..., h, :]  # (reading, alpha, G, seed, prompt)
    ia, ig = _idx(alphas, PAPER_ALPHA), _idx(Gs, PAPER_G)
    parts, effs, axes, holds, inf, rows, boundary = _by_reading(late, ia, ig, alphas, Gs, -1)
    grpo = interval(late[0, 0, ig])
    final = {name: float(Ly[k, ia, ig, :, -1].mean()) for k, name in enumerate(READINGS)}
    theory, det = ("", {}) if ctx.tiny else _uniform_stability(st)
    m, lo, hi = effs["Alg. 1"]
    return Verdict(
        combine(parts), m, (lo, hi),
        "change of the prompt-mean L_y over the second half of training (< 0: towards the "
        "uniform 1/K) at α = 0.3, G = 8, under Alg. 1 (shown) and eq. (4) (details); "
        "intervals over seeds and prompt starts",
        axes, holds, grid_effect=late[:, rows].mean((-2, -1)), grid_informative=inf,
        boundary=boundary,
        reason=("the paper's argument (equal Ã ⇒ equilibrium ⇒ equal confidences) ignores the "
                "softmax: equal advantages still move the logits ∝ π (Lemma A.1's own "
                "collapse), and with Alg. 1's skip of the all-correct groups the re-weighting "
                "acts only on mixed groups, whose share vanishes as p → 0, so every p → 0 "
                "state is at rest and the uniform is not an attractor at α = 0.3; read as "
                "eq. (4), the all-correct groups keep Ã = α (c(q) − c(o)) and spread the good "
                f"modes. Final L_y (1/K = {1 / SETTING['K']:.3f}): " + ", ".join(
                    f"{n} {v:.3f}" for n, v in final.items())
                + f"; GRPO's second-half change {grpo[1]:+.4f} [{grpo[0]:+.4f}, {grpo[2]:+.4f}]"
                + (f". {theory}" if theory else "")),
        details={"second_half_dLy": effs, "grpo_second_half_dLy": grpo, "final_L_y": final,
                 **det})


# ---- Thm A.4, eq. (15): incorrect rollouts are not reinforced --------------------------------

def _draw_groups(pi, G, n, rng):
    """``n`` groups of ``G`` modes drawn i.i.d. from each policy ``pi`` (``(..., C)``), by
    inverse CDF: ``(modes, logp)`` of shape ``(..., n, G)``."""
    u = rng.random(pi.shape[:-1] + (n, G))
    cdf = np.cumsum(pi, -1)[..., :-1]
    modes = np.sum(u[..., None] >= cdf[..., None, None, :], -1)
    logp = np.log(np.take_along_axis(pi[..., None, :], modes.reshape(
        pi.shape[:-1] + (1, n * G)), -1)).reshape(modes.shape)
    return modes, logp


def _rule_and_bound(rewards, modes, logp, mask, alpha):
    """ProGRPO's advantages of a batch of groups (:func:`simplexlab.shaping.advantages`, the
    bandit's rule), GRPO's z-scores and the prompt confidence ``c(q)`` it uses (for eq. 15)."""
    adv = shaping.advantages("progrpo", shaping.Groups(rewards, modes, mask, logp),
                             params={"progrpo_alpha": alpha})
    return (adv, shaping.grpo_advantages(rewards, mask),
            shaping.low_prob_confidence(logp, mask, fraction=1.0))


def _incorrect(ctx):
    """Per (α, p0, G) of the grid and seed: groups of G rollouts drawn at every recorded state
    of a ProGRPO training run (Alg. 1, G = 8) at that α from starts with that bad mass p0;
    their ProGRPO advantages; in the mixed groups (where the re-weighting acts) the largest
    advantage of an incorrect rollout (per seed), how often one is > 0, and eq. (15)'s bound
    per group. One draw of ``max(G)`` rollouts per group serves every G (the first G)."""
    import jax
    import jax.numpy as jnp

    st = _settings(ctx)
    K = SETTING["K"]
    alphas = [a for a in st["alphas"] if a > 0]
    key = ("pg-incorrect", tuple(sorted(ctx.overrides.items())))

    def compute():
        steps = st["steps"] // 2
        fixed = {"method": "progrpo", **SETTING, "num_prompts": st["prompts"],
                 "group_size": PAPER_G, "eta": st["eta"], "num_steps": steps,
                 "stride": steps // 10}
        fixed.pop("p0")
        ds = sweep.run("bandit", {"progrpo_alpha": alphas, "p0": list(st["p0_draw"])},
                       fixed=fixed, seeds=st["seeds"], seed=ctx.seed, progress=False,
                       batching="map")
        p = np.asarray(ds["p"].values, float)[..., None]  # (alpha, p0, seed, step, prompt, 1)
        pi = np.concatenate([(1 - p) * np.asarray(ds["y"].values, float),
                             p * np.asarray(ds["z"].values, float)], -1)
        pi = pi / pi.sum(-1, keepdims=True)
        rule = jax.jit(_rule_and_bound)
        Gmax = max(st["G_draw"])
        out = {}
        for i, a in enumerate(alphas):
            for j, p0 in enumerate(st["p0_draw"]):
                rng = np.random.default_rng([ctx.seed, i, j])
                modes, logp = _draw_groups(pi[i, j], Gmax, st["draws"], rng)
                shape = modes.shape  # (seed, step, prompt, draw, Gmax)
                rew = (modes < K).astype(float)
                for G in st["G_draw"]:
                    valid = np.broadcast_to(np.arange(Gmax) < G, shape)
                    adv, A, cq = (np.asarray(x) for x in rule(
                        rew.reshape(-1, Gmax), modes.reshape(-1, Gmax), logp.reshape(-1, Gmax),
                        valid.reshape(-1, Gmax), jnp.asarray(a)))
                    adv, A, cq = adv.reshape(shape), A.reshape(shape), cq.reshape(shape[:-1])
                    wrong, right = valid & (rew == 0), valid & (rew == 1)
                    mixed = wrong.any(-1) & right.any(-1)
                    mx = np.where(mixed, np.where(wrong, adv, -np.inf).max(-1), -np.inf)
                    # eq. (15): α < |A_neg| / sup |c(q) − c| guarantees Ã_neg < 0
                    sup = np.where(valid, np.abs(cq[..., None] - np.exp(logp)), 0.0).max(-1)
                    a_neg = np.where(wrong, np.abs(A), 0.0).max(-1)
                    covered = mixed & (a * sup < a_neg)
                    pos = mixed & (mx > 0)
                    succ = right.sum(-1)
                    out[(a, p0, G)] = {
                        "max": mx.reshape(shape[0], -1).max(-1),  # per seed
                        "positive_share": float(pos.sum() / max(mixed.sum(), 1)),
                        "positive_groups": int(pos.sum()),
                        "violations_of_eq15": int(np.sum(covered & (mx >= 0))),
                        "eq15_covers": float(covered.sum() / max(mixed.sum(), 1)),
                        "successes_when_positive": (
                            np.bincount(succ[pos], minlength=4)[:4].tolist() if pos.any()
                            else []),
                        "first_step_positive": (
                            int(ds["step"].values[np.argmax(pos.any((0, 2, 3)))])
                            if pos.any() else None)}
        return alphas, out

    return st, ctx.cached(key, compute)


@claim("pg-thm-a4-incorrect-not-reinforced", paper=PAPER, source="Thm A.4, eq. (14)–(15)",
       sentence="The AMR mechanism does not encourage incorrect responses: Ã_neg < 0 when "
                "α < |A_neg| / sup|c̄_G − c_θ|; since |A_neg| is significantly negative in the "
                "early-to-mid training stages and α is small, incorrect paths are never "
                "reinforced.",
       experiment="method-zoo",
       paper_setting={**_SETTING_TEXT,
                      "rule": "either reading (an all-correct group has no incorrect rollout); "
                              "Alg. 1's training runs",
                      "states": "the lab's choice: groups drawn at every 30th step of a ProGRPO "
                                "training run (G = 8, 300 steps quick) from the method zoo's "
                                "starts (p0 = 0.8)"},
       grid={"quick": {"alpha": [0.1, 0.3, 0.7, 1.0], "p0": [0.8, 0.95, 0.99],
                       "group_size": [4, 8, 16, 64]},
             "full": {"alpha": [0.1, 0.3, 0.7, 1.0], "p0": [0.8, 0.9, 0.95, 0.99],
                      "group_size": [4, 8, 16, 32, 64]}},
       faults=[SIGMA])
def incorrect_not_reinforced(ctx):
    """In the mixed groups (where the re-weighting acts; an all-wrong group keeps A = 0), the
    largest advantage any incorrect rollout receives over training, per seed: < 0 (interval
    over seeds) means never reinforced. The grid: α, the prompts' difficulty (p0 of the starts)
    and the group size of the draws."""
    st, (alphas, out) = _incorrect(ctx)
    Gd, P0 = list(st["G_draw"]), list(st["p0_draw"])
    a0 = PAPER_ALPHA if PAPER_ALPHA in alphas else alphas[0]
    p00 = SETTING["p0"]
    m, lo, hi = mean_ci(out[(a0, p00, PAPER_G)]["max"])
    holds = np.array([[[mean_ci(out[(a, p0, G)]["max"])[2] < 0 for G in Gd] for p0 in P0]
                      for a in alphas])
    eff = np.array([[[float(np.mean(out[(a, p0, G)]["max"])) for G in Gd] for p0 in P0]
                    for a in alphas])
    viol = sum(v["violations_of_eq15"] for v in out.values())
    fails = [k for k, v in out.items() if v["positive_share"] > 0]
    g_max = int(np.floor(1 + 1 / PAPER_ALPHA**2))
    reason = (f"eq. (15) is exact (no mixed group inside its bound gave an incorrect rollout "
              f"Ã ≥ 0: {viol} violations), but the paper's reading of it is backwards: with "
              f"eq. (8)'s statistics |A_neg| = μ/σ = sqrt(μ/(1 − μ)), smallest when the "
              f"group's accuracy is low (one success in G: 1/sqrt(G − 1)), i.e. early in "
              f"training and on hard prompts, not late; since sup|c(q) − c| < 1, "
              f"α = {PAPER_ALPHA:g} is safe for every group only for G ≤ {g_max}")
    if fails:
        worst = max(fails, key=lambda k: out[k]["positive_share"])
        counts = np.sum([np.pad(out[k]["successes_when_positive"], (0, 4))[:4] for k in fails], 0)
        reason += (f"; in the bandit an incorrect rollout gets Ã > 0 in some mixed group at "
                   f"{len(fails)} of {len(out)} (α, p0, G) points, most often at "
                   f"(α, p0, G) = ({worst[0]:g}, {worst[1]:g}, {worst[2]}): "
                   f"{100 * out[worst]['positive_share']:.2g} % of its mixed groups; "
                   f"of all {sum(out[k]['positive_groups'] for k in fails)} such groups "
                   f"{int(counts[1])} had one success, {int(counts[2])} two, {int(counts[3])} "
                   f"three")
    return Verdict(side(lo, m, hi, -1), m, (lo, hi),
                   f"largest ProGRPO advantage of an incorrect rollout in the mixed groups "
                   f"drawn along training (per seed; < 0: never reinforced) at α = {a0:g}, "
                   f"G = {PAPER_G}, p0 = {p00:g}; interval over seeds",
                   {"alpha": alphas, "p0": P0, "group_size": Gd}, holds, grid_effect=eff,
                   reason=reason,
                   details={f"alpha={a:g},p0={p0:g},G={G}":
                            {k: v for k, v in d.items() if k != "max"}
                            | {"max_per_seed": d["max"].tolist()}
                            for (a, p0, G), d in out.items()})


# ---- Thm A.5: entropy over the correct outputs against GRPO ----------------------------------

@claim("pg-thm-a5-entropy-over-correct", paper=PAPER, source="Thm A.5, eq. (17)–(19)",
       sentence="AMR induces an implicit entropy-maximizing bias over the correct solutions: "
                "it promotes a high-entropy policy over O+, where standard GRPO drives "
                "H(π_θ | O+) → 0.",
       experiment="method-zoo",
       paper_setting=_SETTING_TEXT,
       grid={"quick": {"reading": list(READINGS), "alpha": [0.1, 0.3, 0.7, 1.0],
                       "group_size": [4, 8, 16]},
             "full": {"reading": list(READINGS), "alpha": [0.1, 0.3, 0.7, 1.0],
                      "group_size": [4, 8, 16, 32]}},
       faults=[SIGN, DROPPED])
def entropy_over_correct(ctx):
    st, r = _runs(ctx)
    alphas, Gs = list(st["alphas"]), list(st["G"])
    Hy = r["H_y"][..., -1, :]  # (reading, alpha, G, seed, prompt)
    diff = Hy - Hy[:, :1]  # minus GRPO's (α = 0, same keys and starts)
    ia, ig = _idx(alphas, PAPER_ALPHA), _idx(Gs, PAPER_G)
    parts, effs, axes, holds, inf, rows, boundary = _by_reading(diff, ia, ig, alphas, Gs, 1)
    m, lo, hi = effs["Alg. 1"]
    return Verdict(
        combine(parts), m, (lo, hi),
        "final entropy of the within-good composition H(y) (eq. 17) under ProGRPO minus "
        "GRPO's (same seeds and starts; > 0), α = 0.3, G = 8, Alg. 1 (shown) and eq. (4); "
        "intervals over seeds and prompt starts",
        axes, holds, grid_effect=diff[:, rows].mean((-2, -1)), grid_informative=inf,
        boundary=boundary,
        reason=("relative to GRPO the claim holds, but not as a maximum: under Alg. 1 H(y) "
                "still falls over training (final H(y) " + ", ".join(
                    f"{n} {float(Hy[k, ia, ig].mean()):.3f}" for k, n in enumerate(READINGS))
                + f", GRPO {float(Hy[0, 0, ig].mean()):.3f}, log K = "
                f"{np.log(SETTING['K']):.3f}; see pg-thm-a2-uniform-equilibrium)"),
        details={"H_y_minus_grpo": effs,
                 "final_H_y": {n: float(Hy[k, ia, ig].mean()) for k, n in enumerate(READINGS)},
                 "final_H_y_grpo": float(Hy[0, 0, ig].mean())})


# ---- Table 6: the α trend --------------------------------------------------------------------

@claim("pg-table6-alpha-trend", paper=PAPER, source="Table 6, §4.5",
       sentence="α = 0 (pure GRPO) yields relatively weak performance; increasing α to 0.3 "
                "improves Pass@1 and Pass@32 substantially; further increasing α (0.7, 1) "
                "degrades performance: α = 0.3 achieves the best balance.",
       experiment="method-zoo",
       paper_setting={**_SETTING_TEXT,
                      "metric": "the lab's choice: exact pass@1 = 1 − p and pass@32 = 1 − p^32 "
                                "of the final policy, prompt mean (the bandit's verifier is "
                                "perfect, so every good mode is a correct answer)"},
       grid={"quick": {"reading": list(READINGS), "group_size": [4, 8, 16],
                       "horizon": ["T/4", "T/2", "T"]},
             "full": {"reading": list(READINGS), "group_size": [4, 8, 16, 32],
                      "horizon": ["T/4", "T/2", "T"]}},
       faults=[DROPPED])
def alpha_trend(ctx):
    """Pass@1 at α = 0.3 against α = 0 (it should be higher) and against every larger α of the
    grid (higher too); paired seeds and starts. Pass@32 = 1 − p^32 is 1 to within float
    rounding at every α in the bandit (reported, cannot tell)."""
    st, r = _runs(ctx)
    alphas, Gs = list(st["alphas"]), list(st["G"])
    ia = _idx(alphas, PAPER_ALPHA)
    acc = 1.0 - r["p"]  # (reading, alpha, G, seed, step, prompt)
    n = acc.shape[-2] - 1
    horizons = {"T/4": n // 4, "T/2": n // 2, "T": n}

    def parts(k, j, t):
        out = []
        for b, a in enumerate(alphas):
            if b == ia:
                continue
            d = acc[k, ia, j, :, t] - acc[k, b, j, :, t]  # α = 0.3 minus the other (> 0)
            out.append((a, interval(d)))
        return out

    ig = _idx(Gs, PAPER_G)
    status, effs = [], {}
    for k, name in enumerate(READINGS):
        ps = parts(k, ig, n)
        status.append(combine([side(*c, 1) for _, c in ps]))
        effs[name] = {f"alpha=0.3 minus alpha={a:g}": (c[1], c[0], c[2]) for a, c in ps}
    holds = np.array([[[combine([side(*c, 1) for _, c in parts(k, j, t)]) == "yes"
                        for t in horizons.values()] for j in range(len(Gs))]
                      for k in range(len(READINGS))])
    inf = np.array([[[any(_informative(acc[k, ia, j, :, t] - acc[k, b, j, :, t])
                          for b in range(len(alphas)) if b != ia)
                      for t in horizons.values()] for j in range(len(Gs))]
                    for k in range(len(READINGS))])
    lo, m, hi = interval(acc[0, ia, ig, :, n] - acc[0, 0, ig, :, n])
    p32 = {f"alpha={a:g}": float(np.mean(1.0 - r["p"][0, b, ig, :, n] ** 32))
           for b, a in enumerate(alphas)}
    hy = {f"alpha={a:g}": float(r["H_y"][0, b, ig, :, n].mean()) for b, a in enumerate(alphas)}
    acc_end = {f"alpha={a:g}": float(acc[0, b, ig, :, n].mean()) for b, a in enumerate(alphas)}
    return Verdict(
        combine(status), m, (lo, hi),
        "final pass@1 (1 − p) at α = 0.3 minus GRPO's (α = 0) under Alg. 1 (shown; > 0), and "
        "minus every larger α (> 0), under both readings; paired seeds and starts",
        {"reading": list(READINGS), "group_size": Gs, "horizon": list(horizons)}, holds,
        grid_informative=inf,
        reason=("in the bandit α trades accuracy for diversity monotonically: the confidence "
                "term spreads the good mass (H(y) at the end, Alg. 1: " + ", ".join(
                    f"{k} {v:.3f}" for k, v in hy.items()) + ") and keeps L_y lower, which "
                "slows the bad-mass decay (its rate is ∝ L_y + L_z), so pass@1 falls with α "
                "from α = 0 on (" + ", ".join(f"{k} {v:.5f}" for k, v in acc_end.items())
                + "); the bandit's pass@32 = 1 − p^32 is 1 to float rounding at every α (it "
                "cannot tell: a diversity gain is a pass@k gain only when the modes differ in "
                "correctness across prompts, which the perfect-verifier bandit does not model)"),
        details={"differences": effs, "pass@32": p32, "final_H_y": hy, "final_pass@1": acc_end})


# ---- Fig. 2: the entropy dips, then rises ----------------------------------------------------

def _dip_rise(H, steps):
    """``H``: ``(seed, step, prompt)``. ``t*`` = the argmin of the seed- and prompt-mean path
    over the recorded steps up to 3T/4 (after step 0), ``t0`` its maximum before ``t*`` (the
    bandit's entropy first rises while the mass leaves the bad modes); returns
    ``(t*, dip, rise)`` with ``dip = H(t*) − H(t0)`` and ``rise = H(T) − H(t*)`` per
    (seed, prompt)."""
    path = H.mean((0, 2))
    last = int(0.75 * (len(path) - 1))
    t = 1 + int(np.argmin(path[1:last + 1]))
    t0 = int(np.argmax(path[:t]))
    return int(steps[t]), H[:, t] - H[:, t0], H[:, -1] - H[:, t]


@claim("pg-fig2-entropy-dip-rise", paper=PAPER, source="Fig. 2, §4.4",
       sentence="Entropy first decreases, then increases, and eventually stabilizes: as the "
                "number of correct answers within a group increases, the model allocates "
                "probabilities more evenly; GRPO consistently reinforces the most confident "
                "answers, resulting in entropy collapse.",
       experiment="method-zoo",
       paper_setting={**_SETTING_TEXT,
                      "entropy": "the lab's choice: the bandit policy's entropy over its "
                                 "K + M modes (a one-token answer's training entropy), prompt "
                                 "mean"},
       grid={"quick": {"reading": list(READINGS), "alpha": [0.1, 0.3, 0.7, 1.0],
                       "group_size": [4, 8, 16]},
             "full": {"reading": list(READINGS), "alpha": [0.1, 0.3, 0.7, 1.0],
                      "group_size": [4, 8, 16, 32]}},
       faults=[SIGN])
def entropy_dip_rise(ctx):
    """Per reading at α = 0.3, G = 8: the entropy rises after its minimum (H(T) > H(t*), t*
    the path's minimum up to 3T/4): the status. On the grid a point holds where, besides, the
    entropy dipped to t* (H(t*) < H(t0), t0 the path's maximum before t*) and ends above
    GRPO's (same seeds and starts)."""
    st, r = _runs(ctx)
    alphas, Gs = list(st["alphas"]), list(st["G"])
    H, steps = r["H"], r["steps"]
    ia, ig = _idx(alphas, PAPER_ALPHA), _idx(Gs, PAPER_G)

    def judge(k, i, j):
        t, dip, rise = _dip_rise(H[k, i, j], steps)
        above = H[k, i, j, :, -1] - H[k, 0, j, :, -1]
        cis = [interval(dip), interval(rise), interval(above)]
        return [side(*cis[0], -1), side(*cis[1], 1), side(*cis[2], 1)], cis, t, rise

    status, effs = [], {}
    for k, name in enumerate(READINGS):
        s, cis, t, _ = judge(k, ia, ig)
        status.append(s[1])
        effs[name] = {"t_min": t, "dip": cis[0][1], "rise": (cis[1][1], cis[1][0], cis[1][2]),
                      "above_grpo": cis[2][1], "parts (dip, rise, above GRPO)": s}
    rows = [i for i, a in enumerate(alphas) if a > 0]
    cells = [[[judge(k, i, j) for j in range(len(Gs))] for i in rows]
             for k in range(len(READINGS))]
    holds = np.array([[[combine(c[0]) == "yes" for c in row] for row in blk] for blk in cells])
    inf = np.array([[[_informative(c[3]) for c in row] for row in blk] for blk in cells])
    rise = np.array([[[c[1][1][1] for c in row] for row in blk] for blk in cells])
    _, g_dip, g_rise = _dip_rise(H[0, 0, ig], steps)
    m, lo, hi = effs["Alg. 1"]["rise"]
    path = {n: np.round(H[k, ia, ig].mean((0, 2))[:: max(1, H.shape[-2] // 10)], 3).tolist()
            for k, n in enumerate(READINGS)}
    return Verdict(
        combine(status), m, (lo, hi),
        "rise of the policy entropy after its minimum, H(T) − H(t*) (> 0), under Alg. 1 "
        "(shown) and eq. (4), at α = 0.3, G = 8; on the grid also the dip H(t*) − H(t0) < 0 "
        "from the preceding maximum and the final entropy above GRPO's; intervals over seeds "
        "and prompt starts",
        {"reading": list(READINGS), "alpha": [alphas[i] for i in rows], "group_size": Gs},
        holds, grid_effect=rise, grid_informative=inf,
        boundary=boundary_text({"reading": list(READINGS), "alpha": [alphas[i] for i in rows],
                                "group_size": Gs}, holds, along="alpha", informative=inf),
        reason=("the paper's own explanation (more correct answers per group → more even "
                "allocation) needs eq. (4): Alg. 1 skips the all-correct groups, so as the "
                "groups fill with correct answers the re-weighting switches off and the "
                "entropy keeps falling; read as eq. (4) the all-correct groups get "
                "Ã = α (c(q) − c(o)) and the entropy turns up (paths every T/10: " + "; ".join(
                    f"{n} {v}" for n, v in path.items()) + f"; GRPO's rise after its minimum "
                f"{float(g_rise.mean()):+.4f})"),
        details={"parts": effs, "entropy_paths": path,
                 "grpo_rise": list(interval(g_rise))})


# ---- what the lab cannot check ---------------------------------------------------------------

_LLM = ("an LLM training run and benchmark evaluation (the paper's models, data and compute); "
        "the lab has no such models or benchmarks")
not_checkable("pg-table2-math-pass-at-k", paper=PAPER, source="Table 2, Abstract",
              sentence="On Qwen2.5-7B ProGRPO reaches an average Pass@1 of 43.3 % and Pass@32 "
                       "of 68.5 % over six math benchmarks, +5.7 and +13.8 over GRPO (and gains "
                       "on Qwen2.5-32B and DeepSeek-R1-Distill-Qwen-1.5B).",
              why=_LLM)
not_checkable("pg-table3-code", paper=PAPER, source="Table 3",
              sentence="On DeepSeek-R1-Distill-Qwen-7B ProGRPO reaches LiveCodeBench Avg@16 "
                       "36.47, a CodeForces rating of 1422.49 and HumanEval+ 84.01, above GRPO "
                       "and FlowRL.",
              why=_LLM)
not_checkable("pg-table4-ood", paper=PAPER, source="Table 4",
              sentence="Out of distribution, ProGRPO scores 54.3 on MMLU-Pro and 42.3 on GPQA "
                       "against GRPO's 52.1 and 38.9 (Qwen2.5-7B).",
              why=_LLM)
not_checkable("pg-table5-text-diversity", paper=PAPER, source="Table 5",
              sentence="On AIME 2024 ProGRPO's correct solutions have lower Self-BLEU (0.6746 "
                       "vs 0.9299) and semantic cosine (0.9233 vs 0.9725) than GRPO's.",
              why="text-diversity metrics of an LLM's generated solutions; the bandit's modes "
                  "have no text (its diversity counterpart, H(y), is "
                  "pg-thm-a5-entropy-over-correct)")
not_checkable("pg-fig1-pass-at-k-curves", paper=PAPER, source="Fig. 1, Fig. 5",
              sentence="ProGRPO's Pass@k stays above the base model's, GRPO's and FlowRL's for "
                       "every k on AIME 2024/2025 and AMC 23, across advantage formulations.",
              why=_LLM)
not_checkable("pg-table7-formulations", paper=PAPER, source="Table 7, §4.5",
              sentence="Relative confidence re-weighting c(q) − c(o|q) beats the absolute "
                       "penalties 1 − c(o|q) and 1 − c(q) − c(o|q) in Acc / Pass@32.",
              why="needs the prompt's own token confidence c(q) (eq. 5), which a bandit prompt "
                  "does not have, and the LLM benchmarks; the library implements only the "
                  "relative form")
not_checkable("pg-thm-a3-functional-tokens", paper=PAPER, source="Thm A.3, eq. (12)–(13)",
              sentence="AMR induces semantic-level diversity while preserving the syntactic "
                       "certainty of functional segments: functional tokens (p ≈ 1) are never "
                       "in T_low, so ∂Ã/∂π(t) = 0 there.",
              why="a statement about which tokens of an LLM's answers are near-certain; the "
                  "lab's answers are single tokens (bandit) or short token trees without "
                  "functional segments")
not_checkable("pg-thm-a2-difficulty-calibration", paper=PAPER, source="Thm A.2 (Part 2), "
              "eq. (11)",
              sentence="A prompt-specific baseline c̄_G cancels the prompt difficulty f(q) in "
                       "c = f(q) + δ(o), where a global threshold τ would not.",
              why="an identity of the additive model for the group-mean baseline c̄_G "
                  "(no criterion to measure); the rule of eq. (4)–(5) uses the prompt's own "
                  "confidence c(q) instead, which the bandit does not have")
not_checkable("pg-fig3-4-7-8-token-statistics", paper=PAPER, source="Figs. 3, 4, 7, 8, 6",
              sentence="ProGRPO's rollouts have higher token-level entropy, average probability "
                       "and lowest-20 % token probability than GRPO's on AIME 2024 and "
                       "MATH 500; KL-Cov's training is unstable (Fig. 6).",
              why="token-level statistics of the paper's trained LLMs (and a reproduction of "
                  "another method's LLM training)")
