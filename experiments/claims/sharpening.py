"""Sharpening-collapse (SC) claims on the Cat/Dog/Persian/Siamese softmax classifier (§2.4,
App. G–H): Figs. 1–5, the coupling ratio λ/ρ and Cor. 2.2's R against the toy; §2.2's theory
(eq. 3, Theorems 2.1, 2.2, 2.3, Cor. 2.1 and App. B's Theorem B.1) on random batches, and §2.3's
Theorem 2.4 on random kernels (:mod:`simplexlab.theory`).

Collapse is a time-to-event: the first recorded step at which π(leading correct label |
Persian) ≥ 0.95; a run that has not collapsed by the horizon is censored there, and arms are
compared by the restricted mean time to collapse (the area under the Kaplan–Meier curve up to
the horizon), paired over seeds (the same keys in every arm).
"""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np
from scipy.special import logsumexp

from simplexlab import sweep, theory
from simplexlab.lab import (
    Fault,
    Verdict,
    claim,
    combine,
    first_event,
    mean_ci,
    not_checkable,
    paired_ci,
    side,
)

ESTIMATORS = ("raw", "mean_shifted", "grpo", "rloo", "reinforce_pp")
OPTIMIZERS = ("sgd", "momentum", "adamw")
GS = (4, 8, 16, 64)
ETAS = (0.1, 1.0)
COLLAPSED = 0.95
CAT, PERSIAN = theory.TOY_LABELS.index("Cat"), theory.TOY_LABELS.index("Persian")
PAPER = {"optimizer": "sgd", "eta": 1.0, "group_size": 16, "init": "W = 0 (uniform)",
         "note": "the paper gives no learning rate, initialisation or G"}


def _st(ctx):
    return ctx.pick({"seeds": 16, "steps": 200, "stride": 5},
                    {"seeds": 64, "steps": 500, "stride": 5},
                    tiny={"seeds": 8, "steps": 150, "stride": 5})


def _main(ctx):
    """One sweep: optimizer × estimator × G × η; per run the collapse time, π(trailing) at the
    middle and the end, and the Siamese accuracies at the end."""
    st = _st(ctx)

    def compute():
        eta_scale = ctx.setting("eta_scale", 1.0)
        ds = sweep.run("classifier",
                       {"optimizer": list(OPTIMIZERS),
                        "estimator_index": [float(i) for i in range(len(ESTIMATORS))],
                        "group_size": [float(g) for g in GS],
                        "eta": [eta_scale * e for e in ETAS],
                        "iac_alpha": [0.0, 1.0], "memory_weight": [0.0, 0.5]},
                       fixed={"estimator": ESTIMATORS, "max_group_size": max(GS),
                              "num_steps": st["steps"], "stride": st["stride"]},
                       seeds=st["seeds"], seed=ctx.seed, progress=False)
        # (opt, est, G, eta, iac, dlc, seed, step, label); the plain runs (no IAC, no DLC)
        # serve Figs. 1-4, the G = 8 runs with IAC / DLC Fig. 5: one sweep, three programs
        pi = ds["pi_persian"].values
        steps = ds["step"].values
        lead = np.maximum(pi[..., CAT], pi[..., PERSIAN])
        trail = np.minimum(pi[..., CAT], pi[..., PERSIAN])
        mid = steps.size // 2
        sia = ds["siamese_accuracy"].values  # (..., seed, step, H)
        t = first_event(lead, steps, COLLAPSED)
        g8 = GS.index(8)
        plain = (slice(None),) * 4 + (0, 0)  # (opt, est, G, eta) without IAC / DLC
        return {"t": t[plain], "H": float(steps[-1]),
                "lam_rho": _realized_lam_over_rho(ds["pi_persian"].values[plain][..., -1, :],
                                                  ds["pi_held_out"].values[plain][..., -1, :, :]),
                "R": _median_r(ds["counts"].values[plain][..., 1:, :],
                               ds["advantage"].values[plain][..., 1:, :]),
                "trail_mid": trail[:, :, :, :, 0, 0, :, mid],
                "trail_end": trail[:, :, :, :, 0, 0, :, -1],
                "sia0": sia[:, :, :, :, 0, 0, :, 0, :], "sia": sia[:, :, :, :, 0, 0, :, -1, :],
                "steps": steps,
                # Fig. 5: (opt in sgd/adamw, est in raw/grpo, iac, dlc, eta, seed)
                "mitigation": np.moveaxis(
                    t[[_o("sgd"), _o("adamw")]][:, [_e("raw"), _e("grpo")], g8], 1, 1
                ).transpose(0, 1, 3, 4, 2, 5)}

    return st, ctx.cached(("sc-main", tuple(sorted(ctx.overrides.items()))), compute)


def _realized_lam_over_rho(pi_p, pi_h):
    """λ/ρ as training realises it, per run and held-out embedding ``(..., H)``: the size of the
    centred logit shift at Persian over the one at each Siamese variant (from ``W = 0`` the
    centred log-probabilities are the centred logits). Under SGD (and momentum) every update is
    ``u e_Persianᵀ``, so the ratio is ``‖e_P‖² / e_Pᵀe_h``, App. G's λ/ρ, exactly."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lp, lh = np.log(pi_p), np.log(pi_h)
        cp = lp - lp.mean(-1, keepdims=True)
        ch = lh - lh.mean(-1, keepdims=True)
        return np.linalg.norm(cp, axis=-1)[..., None] / np.linalg.norm(ch, axis=-1)


def _median_r(counts, adv):
    """Cor. 2.2's R (:func:`simplexlab.theory.batch_ratio_r`, App. F's form) on every
    recorded Persian batch, with λ/ρ of App. G (:func:`simplexlab.theory.toy_kernel_values`)
    for each Siamese variant; o' = the more sampled correct label. The median over a run's
    batches that carry an update, ``(..., H)`` (NaN where none does)."""
    kv = theory.toy_kernel_values()
    seen = np.where(counts[..., CAT] >= counts[..., PERSIAN], CAT, PERSIAN)
    out = []
    for s in theory.TOY_SIMILARITIES:
        r = np.asarray(theory.batch_ratio_r(counts, adv, seen, float(kv["lam_over_rho"][s])))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a run without any update: NaN
            out.append(np.nanmedian(r, axis=-1))
    return np.stack(out, -1)


def _nanmean(x, axis=None):
    """``np.nanmean`` without the warning on an all-NaN slice (NaN there)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=axis)


def _rmst(r, idx):
    return np.minimum(r["t"][idx], r["H"])


def _o(name):
    return OPTIMIZERS.index(name)


def _e(name):
    return ESTIMATORS.index(name)


def _g(G):
    return GS.index(G)


def _k(eta):
    return ETAS.index(eta)


# ---- faults: plausible bugs of the library the claims rest on (tests/test_claims.py injects
# each and checks that the claim's verdict changes) ------------------------------------------

def _one_draw_per_group(f):
    """The sampler hands every rollout of a group the group's first uniform: G copies of one
    label, so a binary group is all-correct or all-wrong and has no relative signal."""
    return lambda key, n, dtype: jnp.broadcast_to(f(key, n, dtype)[:1], (n,))


def _counter_wraps_at_4(f):
    """The rollout counter of the hashed uniforms wraps at 4: rollout g draws uniform g mod 4, so
    a group of G is G/4 copies of a group of 4."""
    return lambda key, n, dtype: jnp.tile(f(key, 4, dtype), -(-n // 4))[:n]


def _no_group_baseline(f):
    """The group mean (the baseline of mean-shifted, GRPO and REINFORCE++) returned as 0."""
    return lambda r, mf: jnp.zeros_like(f(r, mf))


def _no_std_normalization(f):
    """The group std returned as 1: the normalized advantage is the mean-shifted one."""
    return lambda r, mf, ddof=0: jnp.ones_like(f(r, mf, ddof))


def _optimizer_served_as(wrong, right):
    """The classifier's optimizer table serves ``right`` for the name ``wrong``."""
    return lambda f: lambda table, value, what, who: f(
        {**table, wrong: table[right]} if wrong in table else table, value, what, who)


def _memory_never_learns(f):
    """DLC's memory network takes no step (its optimizer's updates are zero), so
    ``μ f_φ = 0`` and the calibrated sampler is the policy."""
    import optax

    return lambda table, value, what, who: (
        (lambda rate: optax.set_to_zero()) if what == "memory_optimizer"
        else f(table, value, what, who))


def _iac_by_successes(f):
    """IAC's weight inverted: positives scaled by the success count ``|S+|^α`` instead of the
    failure count ``(G − |S+|)^α`` (easy groups up-weighted, the opposite of SC §3.1)."""
    def iac(advantages, rewards, mask=None, *, alpha):
        adv = jnp.asarray(advantages)
        pos = (adv > 0) & (jnp.ones(adv.shape, bool) if mask is None else mask)
        n_pos = jnp.sum(pos, -1, keepdims=True).astype(adv.dtype)
        return jnp.where(pos, adv * n_pos ** alpha, adv)
    return iac


def _siamese_axes_swapped(f):
    """The Siamese rows of the toy with the Persian-specific and the Siamese-specific
    coordinates (first and third) swapped: High becomes e_Persian itself and Low overlaps it
    most, so the semantic coupling runs the other way."""
    def emb(similarity="High"):
        e = np.array(f(similarity), dtype=np.float64)
        e[3, [0, 2]] = e[3, [2, 0]]
        return e
    return emb


def _similarity_labels_swapped(f):
    """App. G's kernel table with the High and Low Siamese variants' labels swapped."""
    def kv():
        out = f()
        swap = {"High": "Low", "Low": "High"}
        return {**out, **{k: {swap.get(s, s): v for s, v in out[k].items()}
                          for k in ("rho", "lam_over_rho")}}
    return kv


SIAMESE_SWAP = Fault("the toy's Siamese embeddings with the Persian- and Siamese-specific "
                     "coordinates swapped (the semantic coupling reversed)",
                     "simplexlab.sim._classifier.toy_embeddings", _siamese_axes_swapped)


#: a grid point's status when it cannot tell: the effect is within numerical noise, or the
#: horizon censors every run of both arms (left out of the robustness fraction, drawn grey)
CANNOT = "cannot tell"
#: effects (and their intervals) below this are float rounding, not effects: under Adam the
#: three Siamese variants move alike in exact arithmetic, and their accuracies differ by
#: 1e-16 to 1e-12 after rounding
NOISE = 1e-9


def _holds(f, axes):
    """``f(*index) -> (status, effect)`` over the grid ``axes``: the holds, effects and
    informative arrays (a point whose status is :data:`CANNOT` is not informative)."""
    shape = tuple(len(v) for v in axes.values())
    h, e, inf = np.zeros(shape, bool), np.zeros(shape), np.ones(shape, bool)
    for idx in np.ndindex(*shape):
        s, x = f(*idx)
        h[idx], e[idx], inf[idx] = s == "yes", x, s != CANNOT
    return h, e, inf


def _combine(parts):
    """:func:`combine` of a compound criterion whose parts may be :data:`CANNOT`: a part that
    fails decides; otherwise a part that cannot tell makes the whole point unable to tell."""
    known = [p for p in parts if p != CANNOT]
    if len(known) < len(parts) and all(p == "yes" for p in known):
        return CANNOT
    return combine(known)


def _at_paper(parts) -> str:
    """The status at the paper's setting: :func:`combine` with a part that cannot tell counted
    as not shown ("no"): a verdict is yes / partly / no."""
    return combine(["no" if p == CANNOT else p for p in parts])


def _cmp(a, b, direction):
    """Paired comparison ``a − b`` (seeds): its status on the claimed side and ``(m, lo, hi)``;
    :data:`CANNOT` when the effect and its interval are within :data:`NOISE`."""
    m, lo, hi = paired_ci(a, b)
    if max(abs(m), abs(lo), abs(hi)) < NOISE:
        return CANNOT, (m, lo, hi)
    return side(lo, m, hi, direction), (m, lo, hi)


@claim("sc-fig1-sharpening", paper="SC", source="§2.4, Fig. 1",
       sentence="Group-relative RL on the toy sharpens onto one correct label: the trailing "
                "correct label keeps losing probability, whatever the advantage estimator.",
       experiment="sharpening-collapse", paper_setting={**PAPER, "estimator": "grpo"},
       grid={"estimator": list(ESTIMATORS[:3]), "group_size": list(GS), "eta": list(ETAS)},
       faults=[Fault("the sampler gives every rollout of a group the same uniform (G copies of "
                     "one label: no relative signal)",
                     "simplexlab.sim._classifier.uniforms", _one_draw_per_group)])
def fig1_sharpening(ctx):
    st, r = _main(ctx)
    o = _o("sgd")

    def f(e, g, k):
        s, (m, _, _) = _cmp(r["trail_end"][o, e, g, k], r["trail_mid"][o, e, g, k], -1)
        return s, m

    axes = {"estimator": list(ESTIMATORS[:3]), "group_size": list(GS), "eta": list(ETAS)}
    h, eff, inf = _holds(f, axes)
    s, (m, lo, hi) = _cmp(r["trail_end"][o, _e("grpo"), _g(16), _k(1.0)],
                          r["trail_mid"][o, _e("grpo"), _g(16), _k(1.0)], -1)
    frac = float(np.isfinite(r["t"][o, _e("grpo"), _g(16), _k(1.0)]).mean())
    return Verdict(_at_paper([s]), m, (lo, hi),
                   "change of π(trailing correct label) over the second half "
                   "of the run, paired seeds (< 0: still sharpening)", axes, h,
                   grid_effect=eff, grid_informative=inf,
                   details={"fraction_collapsed_by_horizon": frac,
                            "horizon_steps": r["H"]})


def _censored(r, *idx) -> bool:
    """Whether no run of the arms ``idx`` collapsed by the horizon (nothing to compare)."""
    return all(not np.isfinite(r["t"][i]).any() for i in idx)


def _rmst_claim(r, a_idx, b_idx, direction):
    """Restricted mean times to collapse, ``a − b`` (paired seeds); :data:`CANNOT` where the
    horizon censors every run of both arms."""
    s, eff = _cmp(_rmst(r, a_idx), _rmst(r, b_idx), direction)
    return (CANNOT if _censored(r, a_idx, b_idx) else s), eff


@claim("sc-fig1-raw-most-aggressive", paper="SC", source="§2.4, Fig. 1",
       sentence="Raw rewards collapse fastest; the mean-shifted and normalized baselines slow "
                "collapse.",
       experiment="sharpening-collapse", paper_setting={**PAPER},
       grid={"group_size": list(GS), "eta": list(ETAS)},
       faults=[Fault("the group-mean baseline dropped (mean-shifted = raw, GRPO = r / std)",
                     "simplexlab.shaping._advantages.group_mean", _no_group_baseline)])
def fig1_raw(ctx):
    st, r = _main(ctx)
    o = _o("sgd")

    def f(g, k):
        parts = [_rmst_claim(r, (o, _e("raw"), g, k), (o, _e(b), g, k), -1)
                 for b in ("mean_shifted", "grpo")]
        return _combine([p[0] for p in parts]), parts[1][1][0]

    axes = {"group_size": list(GS), "eta": list(ETAS)}
    h, eff, inf = _holds(f, axes)
    parts = [_rmst_claim(r, (o, _e("raw"), _g(16), _k(1.0)), (o, _e(b), _g(16), _k(1.0)), -1)
             for b in ("mean_shifted", "grpo")]
    m, lo, hi = parts[1][1]
    return Verdict(_at_paper([p[0] for p in parts]), m, (lo, hi),
                   "restricted mean time to collapse (π(leading) ≥ 0.95, censored at the "
                   "horizon): raw minus normalized (< 0); raw minus mean-shifted too",
                   axes, h, grid_effect=eff, grid_informative=inf,
                   details={"raw_minus_mean_shifted": parts[0][1], "horizon_steps": r["H"]})


@claim("sc-fig1-larger-g-delays", paper="SC", source="§2.4, Fig. 1, Cor. 2.1",
       sentence="Larger group sizes delay collapse.",
       experiment="sharpening-collapse", paper_setting={**PAPER, "estimator": "grpo"},
       grid={"estimator": list(ESTIMATORS), "optimizer": list(OPTIMIZERS), "eta": list(ETAS)},
       faults=[Fault("the sampler's rollout counter wraps at 4 (a group of G is G/4 copies of "
                     "a group of 4)",
                     "simplexlab.sim._classifier.uniforms", _counter_wraps_at_4)])
def fig1_larger_g(ctx):
    st, r = _main(ctx)

    def f(e, o, k):
        s, (m, _, _) = _rmst_claim(r, (o, e, _g(64), k), (o, e, _g(4), k), 1)
        return s, m

    axes = {"estimator": list(ESTIMATORS), "optimizer": list(OPTIMIZERS), "eta": list(ETAS)}
    h, eff, inf = _holds(f, axes)
    s, (m, lo, hi) = _rmst_claim(r, (0, _e("grpo"), _g(64), _k(1.0)),
                                 (0, _e("grpo"), _g(4), _k(1.0)), 1)
    return Verdict(_at_paper([s]), m, (lo, hi),
                   "restricted mean time to collapse at G = 64 minus G = 4, "
                   "paired seeds (> 0)", axes, h, grid_effect=eff, grid_informative=inf,
                   details={"horizon_steps": r["H"]})


@claim("sc-fig1-normalized-slower", paper="SC", source="§2.4, Fig. 1",
       sentence="Normalized advantages slow collapse further than mean-shifted ones.",
       experiment="sharpening-collapse", paper_setting={**PAPER},
       grid={"group_size": list(GS), "eta": list(ETAS)},
       faults=[Fault("GRPO's std normalization removed (normalized = mean-shifted)",
                     "simplexlab.shaping._advantages.group_std", _no_std_normalization)])
def fig1_normalized(ctx):
    st, r = _main(ctx)
    o = _o("sgd")

    def f(g, k):
        s, (m, _, _) = _rmst_claim(r, (o, _e("grpo"), g, k), (o, _e("mean_shifted"), g, k), 1)
        return s, m

    axes = {"group_size": list(GS), "eta": list(ETAS)}
    h, eff, inf = _holds(f, axes)
    s, (m, lo, hi) = _rmst_claim(r, (o, _e("grpo"), _g(16), _k(1.0)),
                                 (o, _e("mean_shifted"), _g(16), _k(1.0)), 1)
    return Verdict(_at_paper([s]), m, (lo, hi),
                   "restricted mean time to collapse, normalized minus "
                   "mean-shifted (> 0)", axes, h, grid_effect=eff, grid_informative=inf,
                   reason="normalized = mean-shifted / group std (≤ 1/2): at equal η its steps "
                          "are larger, so it collapses faster, the reverse of the paper")


@claim("sc-fig3-rloo-reinforce-slight-delay", paper="SC", source="§3, Fig. 3",
       sentence="RLOO and REINFORCE++ also collapse; their delays relative to GRPO are slight.",
       experiment="sharpening-collapse", paper_setting={**PAPER},
       grid={"estimator": ["rloo", "reinforce_pp"], "group_size": list(GS),
             "eta": list(ETAS)},
       faults=[Fault("GRPO's std normalization removed (the reference becomes mean-shifted)",
                     "simplexlab.shaping._advantages.group_std", _no_std_normalization)])
def fig3(ctx):
    st, r = _main(ctx)
    o = _o("sgd")
    tol = 0.1 * r["H"]

    def f(e, g, k):
        a, b = (o, _e(("rloo", "reinforce_pp")[e]), g, k), (o, _e("grpo"), g, k)
        m, lo, hi = paired_ci(_rmst(r, a), _rmst(r, b))
        ok = (lo >= -tol) and (hi <= tol)
        return (CANNOT if _censored(r, a, b) else "yes" if ok else "no"), m

    axes = {"estimator": ["rloo", "reinforce_pp"], "group_size": list(GS), "eta": list(ETAS)}
    h, eff, inf = _holds(f, axes)
    m, lo, hi = paired_ci(_rmst(r, (o, _e("rloo"), _g(16), _k(1.0))),
                          _rmst(r, (o, _e("grpo"), _g(16), _k(1.0))))
    ok = (lo >= -tol) and (hi <= tol)
    return Verdict("yes" if ok else ("partly" if abs(m) <= tol else "no"), m, (lo, hi),
                   f"RLOO's restricted mean time to collapse minus GRPO's (slight: the interval "
                   f"within ±{tol:g} steps, 10 % of the horizon); REINFORCE++ on the grid",
                   axes, h, grid_effect=eff, grid_informative=inf,
                   reason="one query per step: RLOO = G/(G−1) × mean-shifted and REINFORCE++ "
                          "= normalized, so RLOO inherits the mean-shifted delay")


@claim("sc-fig4-momentum-accelerates", paper="SC", source="App. H, Fig. 4",
       sentence="Momentum accelerates collapse compared with SGD.",
       experiment="sharpening-collapse",
       paper_setting={**PAPER, "estimator": "raw", "momentum": 0.9},
       grid={"group_size": list(GS), "eta": list(ETAS)},
       faults=[Fault("the optimizer's momentum ignored (momentum served as plain SGD)",
                     "simplexlab.sim._classifier.lookup",
                     _optimizer_served_as("momentum", "sgd"))])
def fig4_momentum(ctx):
    st, r = _main(ctx)
    e = _e("raw")

    def f(g, k):
        s, (m, _, _) = _rmst_claim(r, (_o("momentum"), e, g, k), (_o("sgd"), e, g, k), -1)
        return s, m

    axes = {"group_size": list(GS), "eta": list(ETAS)}
    h, eff, inf = _holds(f, axes)
    s, (m, lo, hi) = _rmst_claim(r, (_o("momentum"), e, _g(16), _k(1.0)),
                                 (_o("sgd"), e, _g(16), _k(1.0)), -1)
    return Verdict(_at_paper([s]), m, (lo, hi),
                   "restricted mean time to collapse, momentum minus SGD at "
                   "the same η (< 0)", axes, h, grid_effect=eff)


@claim("sc-fig4-adamw-accelerates", paper="SC", source="App. H, Fig. 4",
       sentence="AdamW accelerates collapse compared with SGD.",
       experiment="sharpening-collapse",
       paper_setting={**PAPER, "estimator": "raw", "adamw_eta": 1.0, "sgd_eta": 1.0},
       grid={"adamw_eta": list(ETAS), "group_size": list(GS)},
       faults=[Fault("AdamW's moment normalization ignored (adamw served as plain SGD)",
                     "simplexlab.sim._classifier.lookup", _optimizer_served_as("adamw", "sgd"))])
def fig4_adamw(ctx):
    st, r = _main(ctx)
    e = _e("raw")

    def f(k, g):
        s, (m, _, _) = _rmst_claim(r, (_o("adamw"), e, g, k), (_o("sgd"), e, g, _k(1.0)), -1)
        return s, m

    axes = {"adamw_eta": list(ETAS), "group_size": list(GS)}
    h, eff, inf = _holds(f, axes)
    s, (m, lo, hi) = _rmst_claim(r, (_o("adamw"), e, _g(16), _k(1.0)),
                                 (_o("sgd"), e, _g(16), _k(1.0)), -1)
    return Verdict(_at_paper([s]), m, (lo, hi),
                   "restricted mean time to collapse, AdamW at adamw_eta "
                   "minus SGD at η = 1 (< 0)", axes, h, grid_effect=eff, grid_informative=inf,
                   reason="Adam moves every weight by about η per step whatever the gradient's "
                          "size: the comparison depends on the two step sizes")


@claim("sc-fig4-momentum-within-20-steps", paper="SC", source="App. H, Fig. 4",
       sentence="With momentum the policy collapses within 20 steps regardless of the group "
                "size.",
       experiment="sharpening-collapse",
       paper_setting={**PAPER, "estimator": "raw", "group_size": list(GS)},
       grid={"group_size": list(GS), "eta": list(ETAS)},
       faults=[Fault("the optimizer's momentum ignored (momentum served as plain SGD)",
                     "simplexlab.sim._classifier.lookup",
                     _optimizer_served_as("momentum", "sgd"))])
def fig4_20(ctx):
    st, r = _main(ctx)
    e, o = _e("raw"), _o("momentum")

    def f(g, k):
        ev = (r["t"][o, e, g, k] <= 20).astype(float)  # collapsed by step 20 (else censored)
        m, lo, hi = mean_ci(ev - 0.5)
        return (side(lo, m, hi, 1) if ev.std() > 0 else ("yes" if m > 0 else "no")), m + 0.5

    axes = {"group_size": list(GS), "eta": list(ETAS)}
    h, eff, inf = _holds(f, axes)
    parts = [f(g, _k(1.0))[0] for g in range(len(GS))]
    frac = [float(eff[g, _k(1.0)]) for g in range(len(GS))]
    m, lo, hi = mean_ci((r["t"][o, e, _g(64), _k(1.0)] <= 20).astype(float))
    return Verdict(combine(parts), m, (lo, hi),
                   "fraction of seeds collapsed (π(leading) ≥ 0.95) by step 20 at G = 64 "
                   "(holds where the interval lies above 1/2, at every G)", axes, h,
                   grid_effect=eff, grid_informative=inf,
                   details={"fraction_by_step_20": dict(zip(GS, frac, strict=True))})


@claim("sc-fig2-siamese-degrades", paper="SC", source="§2.4, Fig. 2",
       sentence="Training on Persian inputs only degrades the accuracy on the unseen, "
                "semantically coupled Siamese inputs, faster for larger G.",
       experiment="sharpening-coupling",
       paper_setting={**PAPER, "estimator": "grpo", "similarity": "High"},
       grid={"estimator": list(ESTIMATORS[:3]), "optimizer": list(OPTIMIZERS)},
       faults=[Fault("the sampler's rollout counter wraps at 4 (a group of G is G/4 copies of "
                     "a group of 4)",
                     "simplexlab.sim._classifier.uniforms", _counter_wraps_at_4)])
def fig2_degrade(ctx):
    st, r = _main(ctx)
    k = _k(1.0)

    def f(e, o):
        a64 = r["sia"][o, e, _g(64), k, :, 0]
        a4 = r["sia"][o, e, _g(4), k, :, 0]
        s1, (m, _, _) = _cmp(a64, r["sia0"][o, e, _g(64), k, :, 0], -1)
        s2, _ = _cmp(a64, a4, -1)
        return _combine([s1, s2]), m

    axes = {"estimator": list(ESTIMATORS[:3]), "optimizer": list(OPTIMIZERS)}
    h, eff, inf = _holds(f, axes)
    e, o = _e("grpo"), _o("sgd")
    s1, (m, lo, hi) = _cmp(r["sia"][o, e, _g(16), k, :, 0], r["sia0"][o, e, _g(16), k, :, 0],
                           -1)
    s2, g_eff = _cmp(r["sia"][o, e, _g(64), k, :, 0], r["sia"][o, e, _g(4), k, :, 0], -1)
    return Verdict(_at_paper([s1, s2]), m, (lo, hi),
                   "change of π(Siamese | e_Siamese, High) over the run (< 0); and its final "
                   "value at G = 64 minus G = 4 (< 0: larger G degrades faster)", axes, h,
                   grid_effect=eff, grid_informative=inf, details={"G64_minus_G4": g_eff})


@claim("sc-fig2-overlap-order", paper="SC", source="§2.4, Fig. 2, Cor. 2.2",
       sentence="More Persian–Siamese overlap degrades the Siamese accuracy faster "
                "(High > Mid > Low).",
       experiment="sharpening-coupling", paper_setting={**PAPER, "estimator": "grpo"},
       grid={"optimizer": list(OPTIMIZERS), "group_size": list(GS)},
       faults=[SIAMESE_SWAP])
def fig2_order(ctx):
    st, r = _main(ctx)
    k, e = _k(1.0), _e("grpo")

    def f(o, g):
        a = r["sia"][o, e, g, k]  # (seed, H): High, Mid, Low
        s1, (m, _, _) = _cmp(a[:, 2], a[:, 1], 1)
        s2, _ = _cmp(a[:, 1], a[:, 0], 1)
        return _combine([s1, s2]), m

    axes = {"optimizer": list(OPTIMIZERS), "group_size": list(GS)}
    h, eff, inf = _holds(f, axes)
    a = r["sia"][_o("sgd"), e, _g(16), k]
    s1, _ = _cmp(a[:, 2], a[:, 1], 1)
    s2, (m, lo, hi) = _cmp(a[:, 1], a[:, 0], 1)
    return Verdict(_at_paper([s1, s2]), m, (lo, hi),
                   "final Siamese accuracy Mid minus High (> 0), Low minus Mid (> 0)",
                   axes, h, grid_effect=eff, grid_informative=inf,
                   reason="under SGD each Siamese logit moves ρ/λ times the Persian one "
                          "(0.718 / 0.633 / 0.576): the ordering follows ρ/λ, not Cor. 2.2's R "
                          "(largest for Low); under Adam every Siamese variant moves alike "
                          "(their embeddings sum to the same value)")


# ---- Fig. 5: IAC and DLC -------------------------------------------------------------------

def _mitigation(ctx):
    st, r = _main(ctx)
    return st, {"t": r["mitigation"], "H": r["H"]}


@claim("sc-fig5-iac-delays", paper="SC", source="§3.1, Fig. 5",
       sentence="Inverse-accuracy calibration (IAC) delays collapse.",
       experiment="sharpening-mitigation",
       paper_setting={"estimator": "raw", "optimizer": "sgd", "eta": 1.0, "group_size": 8,
                      "iac_alpha": 1.0},
       grid={"estimator": ["raw", "grpo"], "optimizer": ["sgd", "adamw"], "eta": list(ETAS)},
       faults=[Fault("IAC's weight inverted: the success count |S+|^α for (G − |S+|)^α",
                     "simplexlab.sim._classifier.iac_advantages", _iac_by_successes)])
def fig5_iac(ctx):
    st, r = _mitigation(ctx)

    def f(e, o, k):
        s, (m, _, _) = _rmst_claim(r, (o, e, 1, 0, k), (o, e, 0, 0, k), 1)
        return s, m

    axes = {"estimator": ["raw", "grpo"], "optimizer": ["sgd", "adamw"], "eta": list(ETAS)}
    h, eff, inf = _holds(f, axes)
    s, (m, lo, hi) = _rmst_claim(r, (0, 0, 1, 0, 1), (0, 0, 0, 0, 1), 1)
    return Verdict(_at_paper([s]), m, (lo, hi),
                   "restricted mean time to collapse with IAC (α = 1) minus "
                   "without, paired seeds (> 0)", axes, h, grid_effect=eff, grid_informative=inf,
                   reason="on normalized advantages IAC's weights are divided by the group "
                          "std as well, which enlarges the steps of the winning label")


@claim("sc-fig5-dlc-arrests", paper="SC", source="§3.2, Fig. 5",
       sentence="IAC with distribution-level calibration (DLC, memory network) arrests "
                "collapse.",
       experiment="sharpening-mitigation",
       paper_setting={"estimator": "raw", "optimizer": "sgd", "eta": 1.0, "group_size": 8,
                      "iac_alpha": 1.0, "memory_weight": 0.5},
       grid={"optimizer": ["sgd", "adamw"], "eta": list(ETAS)},
       faults=[Fault("DLC's memory network never learns (μ f_φ = 0: the memory weight has "
                     "no effect)",
                     "simplexlab.sim._classifier.lookup", _memory_never_learns)])
def fig5_dlc(ctx):
    st, r = _mitigation(ctx)

    def f(o, k):
        plain = np.isfinite(r["t"][o, 0, 0, 0, k]).astype(float)
        dlc = np.isfinite(r["t"][o, 0, 1, 1, k]).astype(float)
        s1, (m, _, _) = _cmp(plain, dlc, 1)
        _, lo, hi = mean_ci(dlc)
        s2 = "yes" if hi <= 0.1 else "no"
        if not plain.any():  # nothing collapses without DLC: nothing to arrest
            return CANNOT, m
        return combine([s1 if plain.std() + dlc.std() > 0 else
                        ("yes" if m > 0 else "no"), s2]), m

    axes = {"optimizer": ["sgd", "adamw"], "eta": list(ETAS)}
    h, eff, inf = _holds(f, axes)
    status = _at_paper([f(0, 1)[0]])
    dlc = np.isfinite(r["t"][0, 0, 1, 1, 1]).astype(float)
    _, lo, hi = mean_ci(dlc)
    m, dlo, dhi = paired_ci(np.isfinite(r["t"][0, 0, 0, 0, 1]).astype(float), dlc)
    return Verdict(status, m, (dlo, dhi), "fraction of seeds collapsed by the horizon, plain minus "
                   "IAC + DLC (> 0), and IAC + DLC's fraction's interval below 0.1", axes, h,
                   grid_effect=eff, grid_informative=inf,
                   details={"dlc_fraction_collapsed_ci": [lo, hi],
                            "horizon_steps": r["H"]})


# ---- §2.2 theory: eq. (3), Theorems 2.2 and 2.3 on random batches ---------------------------

#: the lab's instances of SC §2.1's setting: 6 modes, the first 3 correct
MODES, CORRECT_MODES = 6, 3
BETAS = (0.1, 1.0, 10.0)
THEORY_GS = (4, 8, 16, 64)
THEORY = {"beta": "the lab's choice: 1 (the statements hold for any β > 0)",
          "group_size": "the lab's choice: 8 (the paper's LLM runs' G)",
          "modes": "the lab's choice: K1 = 3 correct, K2 = 3 incorrect modes",
          "pi_ref": "the lab's choice: Dirichlet(1) draws",
          "batch": "G draws from π_ref with a correct and an incorrect one (0 < p+ < 1)",
          "advantages": "normalized binary, A+ = (1 − p+)/σ, A− = −p+/σ (Thm 2.3)"}
_CORRECT = np.arange(MODES) < CORRECT_MODES


def _batches(ctx, G: int, n: int):
    """``n`` random instances (one per seed of the interval): π_ref ~ Dirichlet(1), a batch of
    ``G`` draws from it with both a correct and an incorrect mode, its counts ``N`` and the
    normalized binary advantages of Thm 2.3 (:func:`simplexlab.theory.
    normalized_binary_advantages`) per mode."""
    rng = np.random.default_rng([ctx.seed, G])
    pi, N = [], []
    while len(pi) < n:
        p = rng.dirichlet(np.ones(MODES))
        c = rng.multinomial(G, p)
        if 0 < c[_CORRECT].sum() < G:
            pi.append(p)
            N.append(c)
    pi, N = np.asarray(pi), np.asarray(N, float)
    p_plus = N[:, _CORRECT].sum(-1) / G
    a_pos, a_neg = (np.asarray(a) for a in theory.normalized_binary_advantages(p_plus))
    A = np.where(_CORRECT, a_pos[:, None], a_neg[:, None])
    return pi, N, A


def _n_instances(ctx):
    return ctx.pick(200, 1000, tiny=60)


def _kl(logq, pi_ref):
    q = np.exp(logq)
    return np.sum(np.where(q > 0, q * (logq - np.log(pi_ref)), 0.0), -1)


def _eq3(logq, pi_ref, N, A, beta):
    """SC eq. (3) at the policy ``exp(logq)`` (log-probabilities, so a mode may sit at
    ``log q = −10⁶``): ``(1/G) Σ_s A_s log q(o_s) − β KL(q ‖ π_ref)``."""
    G = N.sum(-1)
    ll = np.sum(np.where(N > 0, N * A * logq, 0.0), -1) / G
    return ll - beta * _kl(logq, pi_ref)


def _linear(logq, pi_ref, N, A, beta):
    """The probability-linear batch objective App. B differentiates:
    ``Σ_i q_i N_i A_i / G − β KL(q ‖ π_ref)``."""
    return np.sum(np.exp(logq) * N * A, -1) / N.sum(-1) - beta * _kl(logq, pi_ref)


#: the robustness grid of the §2.2 theory claims: β and G
BETA_G = {"beta": list(BETAS), "group_size": list(THEORY_GS)}


def _over_beta_g(point):
    """:func:`_holds` over :data:`BETA_G`, ``point(beta, G) -> (status, effect)`` called with the
    grid's values: the axes and the holds, effects and informative arrays."""
    return (BETA_G, *_holds(lambda b, g: point(BETAS[b], THEORY_GS[g]), BETA_G))


def _never(viol) -> tuple[str, tuple[float, float, float]]:
    """A universal statement on random instances: ``"yes"`` when no instance violates it, else
    ``"no"`` (one counterexample refutes a theorem); the violating fraction and its interval."""
    m, lo, hi = mean_ci(np.asarray(viol, float))
    return ("yes" if m == 0 else "no"), (m, lo, hi)


def _batch_optimal_without_counts(f):
    """Thm 2.2's exponent without the count: ``π_ref exp(A_i/(βG))`` for ``exp(N_i A_i/(βG))``."""
    return lambda pi_ref, counts, adv, beta: f(
        pi_ref, counts, np.asarray(adv) / np.maximum(np.asarray(counts), 1.0), beta)


def _bound_without_g(f):
    """Thm 2.3's first bound with ``1/β`` for ``1/(βG)``."""
    return lambda pi_ref, counts, correct, a_pos, a_neg, beta: 1.0 + np.sum(counts, -1) * (
        np.asarray(f(pi_ref, counts, correct, a_pos, a_neg, beta)) - 1.0)


def _sign_of_a_neg_dropped(f):
    """Normalized binary advantages with ``|A−|`` returned for ``A−``."""
    return lambda p_plus, sigma=None: tuple(jnp.abs(a) for a in f(p_plus, sigma))


#: the emptied mode's log-probabilities along eq. (3)'s ray
EMPTY = (-1e3, -1e6)


@claim("sc-eq3-batch-objective", paper="SC", source="§2.2, eq. (3), Thm 2.2",
       sentence="The update pushes the model towards the stationary point of Equation (3), "
                "the batch-optimal policy π̂(o_i) ∝ π_ref(o_i) exp(N_i A(q, o_i)/(βG)): the "
                "policy that maximizes Equation (3).",
       experiment="sharpening-collapse", paper_setting=THEORY,
       grid=BETA_G,
       faults=[Fault("normalized binary advantages with |A−| returned for A− (no negative "
                     "advantage)",
                     "simplexlab.theory.normalized_binary_advantages",
                     _sign_of_a_neg_dropped)])
def eq3_objective(ctx):
    n = _n_instances(ctx)

    def rise(beta, G):
        """Per instance: how fast eq. (3) rises as π̂'s most negatively weighted sampled mode
        o_j is emptied (its mass moved to the others in proportion): the growth per unit of
        −log π(o_j) between log π(o_j) = −10³ and −10⁶; and the gain over π̂ at −10⁶."""
        pi, N, A = _batches(ctx, G, n)
        logp = np.log(np.asarray(theory.batch_optimal_policy(pi, N, A, beta)))
        j = np.argmin(np.where(N > 0, N * A, np.inf), -1)[:, None]
        rest = logp - np.log1p(-np.take_along_axis(np.exp(logp), j, -1))

        def at(log_j):
            logq = rest.copy()
            np.put_along_axis(logq, j, log_j, -1)
            return _eq3(logq, pi, N, A, beta)

        return (at(EMPTY[1]) - at(EMPTY[0])) / (EMPTY[0] - EMPTY[1]), \
            at(EMPTY[1]) - _eq3(logp, pi, N, A, beta)

    def f(beta, G):
        x, _ = rise(beta, G)
        m, lo, hi = mean_ci(x)
        return side(lo, m, hi, -1), m

    axes, h, eff, inf = _over_beta_g(f)
    x, gain = rise(1.0, 8)
    m, lo, hi = mean_ci(x)
    return Verdict(side(lo, m, hi, -1), m, (lo, hi),
                   "rise of eq. (3) per unit of −log π(o_j) as π̂'s most negatively weighted "
                   "sampled mode o_j is emptied (≤ 0 if π̂ maximizes eq. 3; > 0: eq. 3 is "
                   "unbounded above), over random batches", axes, h, grid_effect=eff,
                   grid_informative=inf,
                   reason="eq. (3) (Σ A log π / G − β KL) is unbounded above whenever a sampled "
                          "advantage is negative: emptying that mode o_j raises it by "
                          "(N_j |A_j| / G) · log(1/π(o_j)) − O(β), without limit; so it has no "
                          "maximizer and π̂ is not its stationary point. The closed form (4) "
                          "maximizes the probability-linear Σ π_i N_i A_i / G − β KL, the "
                          "objective App. B differentiates (sc-thm22-batch-optimal)",
                   details={"smallest_gain_over_pi_hat_at_log_pi_-1e6": float(np.min(gain)),
                            "instances": n})


@claim("sc-thm22-batch-optimal", paper="SC", source="Thm 2.2, eq. (4), App. B",
       sentence="The batch-optimal policy is π̂(o_i|q) = π_ref(o_i|q) exp(N_i A(q, o_i)/(βG)) / "
                "Z'(q), with Z'(q) = Σ_j π_ref(o_j|q) exp(N_j A(q, o_j)/(βG)).",
       experiment="sharpening-collapse",
       paper_setting={**THEORY, "objective": "the lab's reading: Σ π_i N_i A_i / G − β KL(π ‖ "
                      "π_ref), the objective App. B differentiates (eq. 3 as printed has no "
                      "maximizer: sc-eq3-batch-objective)"},
       grid=BETA_G,
       faults=[Fault("the batch-optimal exponent without the count N_i (Thm 2.1's form)",
                     "simplexlab.theory.batch_optimal_policy",
                     _batch_optimal_without_counts)])
def thm22(ctx):
    n = _n_instances(ctx)

    def beaten(beta, G):
        """Per instance: whether one of 16 nearby policies (logits of π̂ moved by 0.05 N(0, 1))
        or 8 Dirichlet(1) policies reaches a higher batch objective than π̂; and
        ``|objective(π̂) − β log Z'|`` (Gibbs: the maximum is β log Z')."""
        pi, N, A = _batches(ctx, G, n)
        rng = np.random.default_rng([ctx.seed, G, 1])
        logp = np.log(np.asarray(theory.batch_optimal_policy(pi, N, A, beta)))
        best = _linear(logp, pi, N, A, beta)
        near = logp[:, None] + 0.05 * rng.standard_normal((n, 16, MODES))
        near -= np.log(np.exp(near).sum(-1, keepdims=True))
        far = np.log(rng.dirichlet(np.ones(MODES), (n, 8)))
        others = np.concatenate([near, far], 1)
        top = _linear(others, pi[:, None], N[:, None], A[:, None], beta).max(-1)
        log_z = np.asarray(theory.log_batch_partition_function(pi, N, A, beta))
        return top > best, np.abs(best - beta * log_z)

    def f(beta, G):
        s, (m, _, _) = _never(beaten(beta, G)[0])
        return s, m

    axes, h, eff, inf = _over_beta_g(f)
    viol, gibbs = beaten(1.0, 8)
    s, (m, lo, hi) = _never(viol)
    return Verdict(s, m, (lo, hi),
                   "fraction of random batches where a nearby or random policy beats π̂ on "
                   "Σ π_i N_i A_i / G − β KL (0: π̂ is the maximizer)", axes, h,
                   grid_effect=eff, grid_informative=inf,
                   reason="π̂ maximizes the probability-linear objective (Gibbs: its maximum is "
                          "β log Z'), not eq. (3) as printed, which has none "
                          "(sc-eq3-batch-objective)",
                   details={"max_abs_objective_minus_beta_log_z": float(gibbs.max()),
                            "instances": n})


@claim("sc-thm23-partition-bound", paper="SC", source="Thm 2.3, App. C, Table 1",
       sentence="Z'(q) ≥ 1 + [A+ Σ_{S+} N_i π_ref(o_i) − |A−| Σ_{S−} N_j π_ref(o_j)]/(βG); with "
                "normalized binary advantages Z'(q) ≥ 1 + p+(1 − p+)Δπ/(βσ), so whenever "
                "Δπ > 0, Z'(q) > 1 and every unsampled mode is suppressed.",
       experiment="sharpening-collapse",
       paper_setting={**THEORY, "first_bound": "the lab's choice: A+ ~ U(0, 3), A− ~ −U(0.01, 3)"},
       grid=BETA_G,
       faults=[Fault("Thm 2.3's first bound with 1/β for 1/(βG)",
                     "simplexlab.theory.z_prime_lower_bound", _bound_without_g)])
def thm23(ctx):
    n = _n_instances(ctx)

    def parts(beta, G):
        """Per instance, the violations of the three parts: the general bound (random binary
        advantages), the normalized bound, and Δπ > 0 ⇒ Z' > 1 and π̂ < π_ref on every
        unsampled mode (NaN where Δπ ≤ 0: nothing to check)."""
        pi, N, A = _batches(ctx, G, n)
        rng = np.random.default_rng([ctx.seed, G, 2])
        a_pos, a_neg = rng.uniform(0, 3, n), -rng.uniform(0.01, 3, n)
        z1 = np.exp(np.asarray(theory.log_batch_partition_function(
            pi, N, np.where(_CORRECT, a_pos[:, None], a_neg[:, None]), beta)))
        b1 = np.asarray(theory.z_prime_lower_bound(pi, N, _CORRECT, a_pos, a_neg, beta))
        z2 = np.exp(np.asarray(theory.log_batch_partition_function(pi, N, A, beta)))
        b2 = np.asarray(theory.z_prime_lower_bound_normalized(pi, N, _CORRECT, beta))
        tol = 1e-12
        v1 = z1 < b1 - tol * np.maximum(1.0, z1)
        v2 = z2 < b2 - tol * np.maximum(1.0, z2)
        sampled = N > 0
        gap = (np.where(sampled & _CORRECT, pi, np.inf).min(-1)
               - np.where(sampled & ~_CORRECT, pi, -np.inf).max(-1))
        hat = np.asarray(theory.batch_optimal_policy(pi, N, A, beta))
        kept = np.any(~sampled & (hat >= pi), -1)
        v3 = np.where(gap > 0, (z2 <= 1.0) | kept, np.nan)
        return v1, v2, v3, (z2 - b2) / z2

    def status(v1, v2, v3):
        s3 = CANNOT if np.all(np.isnan(v3)) else _never(v3[np.isfinite(v3)])[0]
        return [_never(v1)[0], _never(v2)[0], s3]

    def f(beta, G):
        v1, v2, v3, _ = parts(beta, G)
        return _combine(status(v1, v2, v3)), float(np.mean(v1 | v2 | (v3 == 1)))

    axes, h, eff, inf = _over_beta_g(f)
    v1, v2, v3, slack = parts(1.0, 8)
    _, (m, lo, hi) = _never(v1 | v2 | (v3 == 1))
    return Verdict(_at_paper(status(v1, v2, v3)), m, (lo, hi),
                   "fraction of random batches violating the first bound, the normalized "
                   "bound, or Δπ > 0 ⇒ (Z' > 1 and every unsampled mode suppressed) (0: holds)",
                   axes, h, grid_effect=eff, grid_informative=inf,
                   details={"violations": {"first_bound": int(v1.sum()),
                                           "normalized_bound": int(v2.sum()),
                                           "suppression": int(np.nansum(v3))},
                            "batches_with_positive_gap": int(np.isfinite(v3).sum()),
                            "relative_slack_normalized_bound": mean_ci(slack),
                            "instances": n})


# ---- §2.2 theory: Thm 2.1 / Cor. 2.1 (the infinite-sample optimum), App. B (Thm B.1) -------

#: the number of modes of the Thm 2.1 instances (the robustness grid's other axis)
THM21_MODES = (3, 6, 12)
THM21_GRID = {"beta": list(BETAS), "modes": list(THM21_MODES)}


def _eq1(logq, pi_ref, A, beta):
    """SC eq. (1) for one query at the policy ``exp(logq)``: ``E_q[A] − β KL(q ‖ π_ref)``."""
    return np.sum(np.exp(logq) * A, -1) - beta * _kl(logq, pi_ref)


def _kl_pi_ref_dropped(f):
    """Thm 2.1's closed form without the reference: ``softmax(A/β)`` (a uniform π_ref)."""
    return lambda pi_ref, adv, beta: f(np.full(np.shape(pi_ref), 1.0 / np.shape(pi_ref)[-1]),
                                       adv, beta)


def _kl_sign_flipped(f):
    """Thm 2.1's exponent with the advantage's sign flipped: ``π_ref exp(−A/β)``."""
    return lambda pi_ref, adv, beta: f(pi_ref, -np.asarray(adv), beta)


@claim("sc-thm21-kl-optimal", paper="SC", source="Thm 2.1, eq. (2), App. A",
       sentence="The maximizer of Equation (1) is π*(o|q) = π_ref(o|q) exp(A(q, o)/β) / Z(q).",
       experiment="sharpening-collapse",
       paper_setting={"beta": "the lab's choice: 1 (the statement holds for any β > 0)",
                      "modes": "the lab's choice: 6",
                      "pi_ref": "the lab's choice: Dirichlet(1) draws",
                      "advantages": "the lab's choice: A(q, o) ~ U(−3, 3) per mode (any "
                                    "advantages)"},
       grid=THM21_GRID,
       faults=[Fault("Thm 2.1's closed form without the reference policy (softmax(A/β))",
                     "simplexlab.theory.kl_optimal_policy", _kl_pi_ref_dropped)])
def thm21(ctx):
    n = _n_instances(ctx)

    def trial(beta, m):
        """Per instance: whether π* (:func:`simplexlab.theory.kl_optimal_policy`) fails the
        stationarity condition of eq. (1) on the simplex (A_i − β log(π*_i/π_ref,i) the same on
        every mode, the Lagrange condition, sufficient as eq. 1 is strictly concave), or one of
        16 nearby policies (logits of π* moved by 0.05 N(0, 1)) or 8 Dirichlet(1) policies
        reaches a higher eq. (1); the stationarity spread; |eq. (1) at π* − β log Z|."""
        rng = np.random.default_rng([ctx.seed, m, 21])
        pi, A = rng.dirichlet(np.ones(m), n), rng.uniform(-3, 3, (n, m))
        logp = np.log(np.asarray(theory.kl_optimal_policy(pi, A, beta)))
        u = A - beta * (logp - np.log(pi))
        spread = (u.max(-1) - u.min(-1)) / np.maximum(1.0, np.abs(u).max(-1))
        best = _eq1(logp, pi, A, beta)
        near = logp[:, None] + 0.05 * rng.standard_normal((n, 16, m))
        near -= np.log(np.exp(near).sum(-1, keepdims=True))
        others = np.concatenate([near, np.log(rng.dirichlet(np.ones(m), (n, 8)))], 1)
        top = _eq1(others, pi[:, None], A[:, None], beta).max(-1)
        gibbs = np.abs(best - beta * logsumexp(np.log(pi) + A / beta, -1))
        return (spread > 1e-9) | (top > best + 1e-12 * np.maximum(1.0, np.abs(best))), \
            spread, gibbs

    def f(b, k):
        s, (m, _, _) = _never(trial(BETAS[b], THM21_MODES[k])[0])
        return s, m

    axes = THM21_GRID
    h, eff, inf = _holds(f, axes)
    viol, spread, gibbs = trial(1.0, 6)
    s, (m, lo, hi) = _never(viol)
    return Verdict(s, m, (lo, hi),
                   "fraction of random (π_ref, A) where π* fails eq. (1)'s stationarity on the "
                   "simplex or a nearby or random policy beats it on eq. (1) (0: π* is the "
                   "maximizer)", axes, h, grid_effect=eff, grid_informative=inf,
                   details={"max_relative_stationarity_spread": float(spread.max()),
                            "max_abs_objective_minus_beta_log_z": float(gibbs.max()),
                            "instances": n})


#: Cor. 2.1's advantages: §2.1's A+ > 0 > A− (the paper's setting) and the Corollary's own
#: boundary A+ ≥ 0, A− ≤ 0
COR21_ADVANTAGES = ("A+ > 0 > A-", "A+ = 0 > A-", "A+ > 0 = A-", "A+ = A- = 0")
#: a relative change of π(o) below this is rounding, not an increase
ROUNDING = 1e-12
COR21_GRID = {"beta": list(BETAS), "advantages": list(COR21_ADVANTAGES)}


@claim("sc-cor21-moderate-sharpening", paper="SC", source="Cor. 2.1, Table 1",
       sentence="With A(q, o_i) = A+ ≥ 0 on the correct modes and A− ≤ 0 on the incorrect ones, "
                "Equation (2) yields moderate sharpening: the probability of every correct mode "
                "is strictly increased.",
       experiment="sharpening-collapse",
       paper_setting={"advantages": "A+ > 0 > A− (§2.1: A+ ≥ 0, A− < 0); the lab's choice: "
                                    "A+ ~ U(0, 3), A− ~ −U(0, 3)",
                      "beta": "the lab's choice: 1", "modes": "the lab's choice: 6",
                      "K1, K2": "the lab's choice: a random split with K1, K2 ≥ 1",
                      "pi_ref": "the lab's choice: Dirichlet(1) draws"},
       grid=COR21_GRID,
       faults=[Fault("Thm 2.1's exponent with the advantage's sign flipped (π_ref exp(−A/β))",
                     "simplexlab.theory.kl_optimal_policy", _kl_sign_flipped)])
def cor21(ctx):
    n = _n_instances(ctx)

    def rise(beta, which):
        """Per instance: the smallest relative change π*(o)/π_ref(o) − 1 over the correct
        modes (> 0: every correct mode strictly gains), for random K1 ∈ [1, 5] of 6 modes."""
        rng = np.random.default_rng([ctx.seed, 2, 1])
        pi = rng.dirichlet(np.ones(MODES), n)
        k1 = rng.integers(1, MODES, n)
        correct = np.arange(MODES) < k1[:, None]
        a_pos, a_neg = rng.uniform(0, 3, n), -rng.uniform(0, 3, n)
        a_pos = np.where(which in ("A+ = 0 > A-", "A+ = A- = 0"), 0.0, a_pos)
        a_neg = np.where(which in ("A+ > 0 = A-", "A+ = A- = 0"), 0.0, a_neg)
        A = np.where(correct, a_pos[:, None], a_neg[:, None])
        star = np.asarray(theory.kl_optimal_policy(pi, A, beta))
        return np.where(correct, star / pi - 1, np.inf).min(-1)

    def f(b, a):
        r = rise(BETAS[b], COR21_ADVANTAGES[a])
        return _never(r <= ROUNDING)[0], float(np.mean(r))

    axes = COR21_GRID
    h, eff, inf = _holds(f, axes)
    r = rise(1.0, COR21_ADVANTAGES[0])
    s, _ = _never(r <= ROUNDING)
    m, lo, hi = mean_ci(r)
    weak = [int(np.sum(rise(b, a) < -ROUNDING)) for b in BETAS for a in COR21_ADVANTAGES]
    return Verdict(s, m, (lo, hi),
                   "smallest relative gain π*(o)/π_ref(o) − 1 over the correct modes, over random "
                   "π_ref, K1 and A± (holds when it exceeds rounding on every instance)", axes, h,
                   grid_effect=eff, grid_informative=inf,
                   reason="the strict increase needs A+ > A− (with an incorrect mode): at "
                          "A+ = A− = 0, which Cor. 2.1's A− ≤ 0 admits and §2.1's A− < 0 "
                          "excludes, π* = π_ref and nothing moves; Def. 2.1's weak form "
                          "(π* ≥ π_ref on every correct mode) holds at every grid point",
                   details={"weak_form_violations_over_the_grid": int(sum(weak)),
                            "instances": n})


#: the step of Thm B.1's comparison (first order: the effect of a larger η is O(η) smaller)
B1_ETA = 1e-6
#: a first-order mismatch above this is not the second-order remainder of a step of B1_ETA
B1_TOL = 1e-3
B1_STEPS = ("gradient", "natural")
B1_SURROGATES = ("log_likelihood", "probability")
B1_GRID = {"step": list(B1_STEPS), "surrogate": list(B1_SURROGATES), "beta": list(BETAS)}


def _b1_mismatch(ctx, beta, natural, surrogate, G=8):
    """Per instance (π_t a Dirichlet(1) draw, the batch of ``G`` drawn from it as in
    :func:`_batches`, π_ref another Dirichlet(1) draw): the relative distance between the
    centred log-policy change of one step of rate :data:`B1_ETA`
    (:func:`simplexlab.theory.batch_objective_step`) and of eq. (6)'s interpolation
    (:func:`simplexlab.theory.geometric_interpolation` towards
    :func:`simplexlab.theory.batch_optimal_policy`, c = ηβ), both divided by η."""
    n = _n_instances(ctx)
    pi, N, A = _batches(ctx, G, n)
    pi_ref = np.random.default_rng([ctx.seed, G, 3]).dirichlet(np.ones(MODES), n)
    hat = theory.batch_optimal_policy(pi_ref, N, A, beta)
    ends = [theory.batch_objective_step(pi, pi_ref, N, A, beta, B1_ETA, surrogate=surrogate,
                                          natural=natural),
            theory.geometric_interpolation(pi, hat, B1_ETA * beta)]
    d = [np.log(np.asarray(e)) - np.log(pi) for e in ends]
    d = [(x - x.mean(-1, keepdims=True)) / B1_ETA for x in d]
    return np.linalg.norm(d[0] - d[1], axis=-1) / np.linalg.norm(d[1], axis=-1)


@claim("sc-thmb1-geometric-interpolation", paper="SC", source="Thm B.1, eq. (6), §2.2",
       sentence="A single gradient ascent step θ+ = θ + η∇θ Ĵ(θ) on the empirical objective "
                "is, to first order, a geometric interpolation between the current policy and "
                "the batch-optimal policy: π_{t+1}(o|q) ∝ π_t(o|q)^{1−ηβ} π̂(o|q)^{ηβ}.",
       experiment="sharpening-collapse",
       paper_setting={**THEORY, "step": "θ the logits of a tabular softmax policy, θ+ = θ + "
                      "η∇θĴ (a plain gradient step); η → 0 (first order)",
                      "objective": "Ĵ = Σ_i (N_i/G) A_i log π(o_i) − β KL(π ‖ π_ref) (eq. 3, "
                                   "App. B)",
                      "pi_t": "the lab's choice: a Dirichlet(1) draw apart from π_ref (at "
                              "π_t = π_ref the KL term has no gradient)"},
       grid=B1_GRID,
       faults=[Fault("the batch-optimal exponent without the count N_i (Thm 2.1's form)",
                     "simplexlab.theory.batch_optimal_policy",
                     _batch_optimal_without_counts)])
def thmb1(ctx):
    def f(t, u, b):
        x = _b1_mismatch(ctx, BETAS[b], B1_STEPS[t] == "natural", B1_SURROGATES[u])
        return _never(x > B1_TOL)[0], float(np.mean(x))

    axes = B1_GRID
    h, eff, inf = _holds(f, axes)
    x = _b1_mismatch(ctx, 1.0, False, "log_likelihood")
    s, _ = _never(x > B1_TOL)
    m, lo, hi = mean_ci(x)
    return Verdict(s, m, (lo, hi),
                   f"relative distance between the first-order log-policy change of the step "
                   f"(η = {B1_ETA:g}) and of π_t^(1−ηβ) π̂^(ηβ), over random batches (holds "
                   f"where it is below {B1_TOL:g} on every instance)", axes, h,
                   grid_effect=eff, grid_informative=inf,
                   reason="App. B differentiates the likelihood term with respect to log π and "
                          "the KL term with respect to π: its ∂Ĵ/∂w_i = N_i A_i/G − β(log π_i − "
                          "log π_ref,i + 1) is the gradient of no one objective in one "
                          "coordinate. A gradient step on the logits moves log π by η[N A/G − "
                          "π Σ_s A_s/G − β π ⊙ log(π/π_ref)] + const: the KL pull on o_i carries "
                          "the factor π_i, so the step is not the interpolation (the mismatch is "
                          "first order). Eq. (6) is exact for the natural-gradient (mirror) "
                          "step on the probability-linear Σ π_i N_i A_i/G − β KL, whose "
                          "maximizer π̂ is (sc-thm22-batch-optimal); the grid shows that step "
                          "and no other")


# ---- §2.3 theory: Thm 2.4's logit-shift bounds on random kernels ---------------------------

#: how far Assumption 2.3 holds: λ_i − max(ρ_max, the entry's shared part) drawn log-uniform
#: in these multiples of ρ_max (tight: near λ_min = ρ_max, which Assumption 2.3 allows)
MARGINS = {"tight": (0.01, 0.2), "loose": (0.2, 3.0)}
#: batch-unseen modes per instance
UNSEEN = 4
THM24_GRID = {"group_size": list(THEORY_GS), "margin": list(MARGINS)}


def _kernel_instances(ctx, G, margin, n):
    """``n`` random gradient sets satisfying SC §2.3's assumptions, for a batch of ``G`` distinct
    modes (``N_i = 1``) and :data:`UNSEEN` batch-unseen modes: batch gradients ``c_s e_0 + ε w_s
    + σ_s e_s`` (``c_s ~ U(0.5, 1.5)``, ``w_s ~ U(0, 1)^8``, ``ε ~ U(0, 1)``, a private
    direction of size ``σ_s`` that puts ``λ_s = K_ss`` above ρ_max by the :data:`MARGINS`
    multiple): every entry of ``K_qq`` is ≥ 0.25 (Assumption 2.1) and ``λ_min > ρ_max``
    (Assumption 2.3); an unseen mode's kernel with the batch is ``ρ_max U(0, 1)^G`` (≤ ρ_max, the
    premise of Case 1), realised by a gradient with its own private direction. Returns the batch
    gradients ``(n, G, D)`` and the unseen ones ``(n, U, D)``."""
    rng = np.random.default_rng([ctx.seed, G, 24, list(MARGINS).index(margin)])
    lo, hi = MARGINS[margin]
    U, P = UNSEEN, 8
    base = np.concatenate([rng.uniform(0.5, 1.5, (n, G, 1)),
                           rng.uniform(0, 1, (n, 1, 1)) * rng.uniform(0, 1, (n, G, P))], -1)
    K0 = base @ np.swapaxes(base, -1, -2)
    rho_max = np.where(np.eye(G, dtype=bool), -np.inf, K0).max((-1, -2))[:, None]
    s2 = (np.maximum(0, rho_max - np.diagonal(K0, 0, -2, -1))
          + rho_max * np.exp(rng.uniform(np.log(lo), np.log(hi), (n, G))))
    Jb = np.concatenate([base, np.sqrt(s2)[..., None] * np.eye(G), np.zeros((n, G, U))], -1)
    K = Jb @ np.swapaxes(Jb, -1, -2)
    k = rho_max[..., None] * rng.uniform(0, 1, (n, U, G))
    Ju = np.einsum("nug,ngd->nud", np.swapaxes(np.linalg.solve(K, np.swapaxes(k, -1, -2)), -1,
                                                -2), Jb)
    Ju[..., P + 1 + G:] = np.sqrt(rho_max[..., None] * rng.uniform(0.01, 1, (n, U, 1))) * np.eye(U)
    return Jb, Ju


def _thm24_violations(ctx, G, margin):
    """Per instance: whether a batch-unseen mode's induced shift
    (:func:`simplexlab.theory.induced_logit_shift`, q' = q with gradients scaled by η ~
    U(0.1, 1), Assumption 2.2 exactly) exceeds Case 1's upper bound, and whether a batch mode's
    falls below Case 2's lower bound (:func:`simplexlab.theory.theorem24_bounds`, λ and ρ read
    off K_qq), for normalized binary advantages on a batch with a correct and an incorrect
    entry and y from :func:`simplexlab.theory.target_logit_shifts` (β = 1: both sides scale
    with 1/β)."""
    n = _n_instances(ctx)
    Jb, Ju = _kernel_instances(ctx, G, margin, n)
    rng = np.random.default_rng([ctx.seed, G, 25])
    correct = rng.random((n, G)) < 0.5
    correct[:, 0], correct[:, 1] = True, False
    p_plus = correct.mean(-1)
    a_pos, a_neg = (np.asarray(a) for a in theory.normalized_binary_advantages(p_plus))
    y = np.asarray(theory.target_logit_shifts(np.ones((n, G)),
                                                np.where(correct, a_pos[:, None],
                                                         a_neg[:, None]), 1.0))
    eta = rng.uniform(0.1, 1.0, (n, 1))
    shift = np.asarray(theory.induced_logit_shift(
        Jb, eta[..., None] * np.concatenate([Jb, Ju], 1), y))
    K = Jb @ np.swapaxes(Jb, -1, -2)
    off = np.eye(G, dtype=bool)
    lam = np.diagonal(K, 0, -2, -1)
    rho_min = np.where(off, np.inf, K).min((-1, -2))[:, None]
    rho_max = np.where(off, -np.inf, K).max((-1, -2))[:, None]
    a_sum = y.sum(-1, keepdims=True)
    upper, lower = (np.asarray(b) for b in theory.theorem24_bounds(
        y, a_sum, 1, G, lam.min(-1, keepdims=True), lam.max(-1, keepdims=True), rho_min,
        rho_max, eta))
    v1 = np.any(shift[:, G:] > upper * (1 + 1e-9), -1)
    v2 = np.any(shift[:, :G] < lower - 1e-9 * np.abs(lower), -1)
    return v1, v2


def _plain_gradient_update(f):
    """App. D's update a plain gradient step ``Δθ = J_qᵀ y`` (no ``K_qq⁻¹``): the shifts
    ``V J_qᵀ y``."""
    return lambda J, V, y: np.einsum("...up,...gp,...g->...u", V, J, y)


@claim("sc-thm24-logit-shift-bounds", paper="SC", source="Thm 2.4, App. E (Thm E.1)",
       sentence="Under Assumptions 2.1–2.3, the induced logit shift Δf(q', o') of a batch-unseen "
                "o' is at most ηρ_max A_sum/(λ_min + (G−1)ρ_min), and that of a batch mode "
                "o' = o^(k) is at least ηN_o'(λ_min − ρ_min)/(λ_max − ρ_max) · (y_k − "
                "ρ_max A_sum/(λ_max + (G−1)ρ_max)).",
       experiment="sharpening-coupling",
       paper_setting={"group_size": "the lab's choice: 8", "margin": "the lab's choice: tight "
                      "(λ_i up to 0.2 ρ_max above ρ_max; Assumption 2.3 allows λ_min = ρ_max)",
                      "batch": "G distinct modes (N_i = 1): a repeated mode gives two equal "
                               "rows of K_qq (one gradient), so K_qq is singular and ρ_max ≥ "
                               "λ_min, outside Assumption 2.3",
                      "kernel": "the lab's choice: random gradients (_kernel_instances)",
                      "advantages": "normalized binary, A+ = (1 − p+)/σ, A− = −p+/σ",
                      "eta": "Assumption 2.2 exactly, η ~ U(0.1, 1)"},
       grid=THM24_GRID,
       faults=[Fault("App. D's update a plain gradient step J_qᵀ y (no K_qq⁻¹)",
                     "simplexlab.theory.induced_logit_shift", _plain_gradient_update)])
def thm24(ctx):
    def f(g, k):
        v1, v2 = _thm24_violations(ctx, THEORY_GS[g], list(MARGINS)[k])
        return combine([_never(v1)[0], _never(v2)[0]]), float(np.mean(v1 | v2))

    axes = THM24_GRID
    h, eff, inf = _holds(f, axes)
    v1, v2 = _thm24_violations(ctx, 8, "tight")
    _, (m, lo, hi) = _never(v1 | v2)
    return Verdict(combine([_never(v1)[0], _never(v2)[0]]), m, (lo, hi),
                   "fraction of random kernels satisfying Assumptions 2.1–2.3 where the induced "
                   "shift of a batch-unseen mode exceeds Case 1's bound or that of a batch mode "
                   "falls below Case 2's (0: holds)", axes, h, grid_effect=eff,
                   grid_informative=inf,
                   reason="App. E's Step 1 bounds Σ_s α_s and each α_k through K_qq ⪰ "
                          "M(λ_min, ρ_min), which entrywise bounds do not give, and Step 2 "
                          "multiplies bounds on k by α_s of either sign. Counterexamples (G = 3, "
                          "η = 1, p+ = 1/3, y = (0.471, 0.236, 0.236)): Case 2 with K_qq = [[1, "
                          ".9, .1], [.9, 1, .1], [.1, .1, 1]]: the batch mode's shift is y_k = "
                          "0.471 exactly (K α = y), the bound 9 (0.471 − 0.9·0.943/2.8) = 1.515; "
                          "Case 1 with K_qq = 0.4 I + 0.6 11ᵀ and an unseen mode with kernel "
                          "(0.6, 0, 0) with the batch: Δf = 0.321 > 0.6·0.943/2.2 = 0.257",
                   details={"violations": {"case1_unseen_upper": int(v1.sum()),
                                           "case2_seen_lower": int(v2.sum())},
                            "instances": int(v1.size)})


# ---- §2.3–2.4: the coupling ratio λ/ρ and Cor. 2.2's R against the toy ---------------------

@claim("sc-fig2-lam-rho-grows-with-overlap", paper="SC", source="§2.4, App. G",
       sentence="As we increase the overlap between Persian and Siamese features, the empirical "
                "ratio λ/ρ estimated from the gradient Gram matrix also increases (which in turn "
                "raises R).",
       experiment="sharpening-coupling",
       paper_setting={**PAPER, "estimator": "grpo", "overlap": "High > Mid > Low (§2.4: "
                      "High shares the most features with Persian)",
                      "lambda, rho": "App. G: λ = ‖e_Persian‖², ρ = e_Persianᵀ e_Siamese"},
       grid={"optimizer": ["sgd", "momentum"], "estimator": list(ESTIMATORS[:3]),
             "eta": list(ETAS)},
       faults=[Fault("App. G's kernel table with the High and Low variants' labels swapped",
                     "simplexlab.theory.toy_kernel_values", _similarity_labels_swapped),
               SIAMESE_SWAP])
def fig2_lam_rho(ctx):
    st, r = _main(ctx)
    kv = theory.toy_kernel_values()
    lor = [kv["lam_over_rho"][s] for s in theory.TOY_SIMILARITIES]  # High, Mid, Low
    closed = combine(["yes" if lor[0] > lor[1] else "no", "yes" if lor[1] > lor[2] else "no"])

    def realized(o, e, k):
        x = r["lam_rho"][o, e, _g(16), k]  # (seed, H): High, Mid, Low
        s1, (m, lo, hi) = _cmp(x[:, 0], x[:, 1], 1)
        s2, _ = _cmp(x[:, 1], x[:, 2], 1)
        return _combine([s1, s2]), (m, lo, hi)

    def f(o, e, k):
        s, (m, _, _) = realized(o, e, k)
        return s, m

    axes = {"optimizer": ["sgd", "momentum"], "estimator": list(ESTIMATORS[:3]),
            "eta": list(ETAS)}
    h, eff, inf = _holds(f, axes)
    s, (m, lo, hi) = realized(_o("sgd"), _e("grpo"), _k(1.0))
    x = r["lam_rho"][_o("sgd"), _e("grpo"), _g(16), _k(1.0)]
    return Verdict(_at_paper([closed, s]), m, (lo, hi),
                   "λ/ρ realized in training (centred logit shift at Persian over the one at "
                   "the Siamese variant), High minus Mid (> 0), Mid minus Low (> 0); and App. "
                   "G's λ/ρ from the embeddings", axes, h, grid_effect=eff, grid_informative=inf,
                   reason=f"App. G's own numbers: λ = {kv['lambda']:g}, ρ = "
                          + " / ".join(f"{kv['rho'][s]:g}" for s in theory.TOY_SIMILARITIES)
                          + " and λ/ρ = " + " / ".join(f"{v:.3f}" for v in lor)
                          + " for High / Mid / Low: more overlap means a larger ρ and a smaller "
                          "λ/ρ (App. G says so itself), and training realizes exactly these "
                          "ratios under SGD and momentum (the grid); under Adam the realized "
                          "ratio is 1 for every variant up to Adam's ε (each row moves along "
                          "1ᵀ and every embedding sums to 1.6), which says nothing of the kernel",
                   details={"lam_over_rho_app_g": dict(zip(theory.TOY_SIMILARITIES, lor,
                                                           strict=True)),
                            "lam_over_rho_printed": kv["paper"]["lam_over_rho"],
                            "realized_mean": dict(zip(theory.TOY_SIMILARITIES,
                                                      _nanmean(x, 0).tolist(), strict=True))})


@claim("sc-cor22-r-governs-coupling", paper="SC", source="Cor. 2.2, §2.4, Fig. 2",
       sentence="The propagation of collapse is governed by R, which grows with the group size "
                "G and with semantic coupling through the ratio λ/ρ: a larger R degrades the "
                "held-out Siamese accuracy faster.",
       experiment="sharpening-coupling",
       paper_setting={**PAPER, "estimator": "grpo", "R": "App. F's form on every recorded "
                      "Persian batch (theory.batch_ratio_r), o' = the more sampled correct "
                      "label, the run's median; λ/ρ of App. G",
                      "G_part": "G = 64 against G = 4 (High)", "similarity_part": "G = 16"},
       grid={"estimator": list(ESTIMATORS[:3]), "optimizer": list(OPTIMIZERS),
             "eta": list(ETAS)},
       faults=[SIAMESE_SWAP])
def cor22(ctx):
    st, r = _main(ctx)

    def parts(e, o, k):
        """(G part, similarity part): the arm with the larger mean R should end with the lower
        Siamese accuracy (paired seeds, < 0)."""
        R, acc = r["R"][o, e, :, k], r["sia"][o, e, :, k]  # (G, seed, H)
        big, small = (_g(64), _g(4)) if _nanmean(R[_g(64), :, 0]) >= _nanmean(
            R[_g(4), :, 0]) else (_g(4), _g(64))
        sg, g_eff = _cmp(acc[big, :, 0], acc[small, :, 0], -1)
        mr = _nanmean(R[_g(16)], 0)
        if not np.isfinite(mr).all():
            return sg, CANNOT, g_eff, (np.nan,) * 3
        sh, h_eff = _cmp(acc[_g(16), :, int(np.argmax(mr))], acc[_g(16), :, int(np.argmin(mr))],
                         -1)
        if np.all(np.isnan(R[_g(64), :, 0])) or np.all(np.isnan(R[_g(4), :, 0])):
            sg = CANNOT
        return sg, sh, g_eff, h_eff

    def f(e, o, k):
        sg, sh, _, (m, _, _) = parts(e, o, k)
        return _combine([sg, sh]), m

    axes = {"estimator": list(ESTIMATORS[:3]), "optimizer": list(OPTIMIZERS),
            "eta": list(ETAS)}
    h, eff, inf = _holds(f, axes)
    e, o, k = _e("grpo"), _o("sgd"), _k(1.0)
    sg, sh, g_eff, (m, lo, hi) = parts(e, o, k)
    R = r["R"][o, e, :, k]
    return Verdict(_at_paper([sg, sh]), m, (lo, hi),
                   "final Siamese accuracy of the variant with the largest mean R minus the one "
                   "with the smallest (G = 16, < 0); and of the G with the larger R minus the "
                   "other (G = 64 vs 4, High, < 0)", axes, h, grid_effect=eff,
                   grid_informative=inf,
                   reason="R grows with λ/ρ, so it is largest for Low similarity, the variant "
                          "that degrades slowest; the degradation follows ρ/λ (under SGD every "
                          "Siamese logit moves ρ/λ times the Persian one), the opposite. R does "
                          "grow with G, as the Siamese degradation does. (Cor. 2.2's general "
                          "form as printed also puts N_{o'} on its first term only; dividing "
                          "Thm 2.4's bounds gives it on both, as App. F's simplified form has.)",
                   details={"G_part": g_eff,
                            "median_R_mean_over_seeds": {
                                f"G={G}": dict(zip(theory.TOY_SIMILARITIES,
                                                   _nanmean(R[j], 0).tolist(), strict=True))
                                for j, G in enumerate(GS)}})


# ---- statements the lab cannot check -------------------------------------------------------

_LLM = ("RLVR training of Qwen3 models on DeepScaleR with verl (32 H200 GPUs, 2,000 steps) and "
        "their benchmark scores; the lab has no such run, and its toy has no benchmark")
not_checkable("sc-tables-2-3-iac-best", paper="SC", source="§4.2, Tables 2–3",
              sentence="IAC attains the best AVG@8 and PASS@8 in almost all settings across six "
                       "math benchmarks and the Qwen3-4B/8B/14B backbones, with larger gains on "
                       "harder benchmarks (AIME24, Minerva, O-Bench).",
              why=_LLM)
not_checkable("sc-table4-dapo-compatibility", paper="SC", source="§4.2, Table 4",
              sentence="IAC alone outperforms DAPO, DAPO+IAC adds to it, and DAPO+IAC+DLC "
                       "(memory network Qwen3-1.7B, μ = 0.5) gives the best scores.",
              why=_LLM)
not_checkable("sc-table5-alpha-sensitivity", paper="SC", source="App. I, Table 5",
              sentence="AVG@8 and PASS@8 peak at α = 1 (Math500) or α = 1.5 (O-Bench) and degrade "
                       "beyond; filtering the easiest 25 % of queries is weaker than IAC.",
              why=_LLM)
not_checkable("sc-fig6-entropy-dapo-iac", paper="SC", source="App. I, Fig. 6",
              sentence="Under DAPO the policy entropy falls to about 0.08, under DAPO+IAC it "
                       "stays between 0.20 and 0.24.",
              why=_LLM + "; the toy's one query has no counterpart of DAPO's filtering")
not_checkable("sc-dlc-rollout-overhead", paper="SC", source="§3.2",
              sentence="Without kernel support for synchronized multi-model sampling in vLLM, "
                       "the memory network costs a 5× rollout overhead.",
              why="a wall-clock measurement of an LLM serving stack (vLLM), not a property of "
                  "the method the lab can compute")
not_checkable("sc-entropy-collapse-limit", paper="SC", source="§2.1, Definition 2.1",
              sentence="Entropy collapse is the asymptotic limit of severe over-sharpening.",
              why="an interpretation with no criterion: over-sharpening is defined by one "
                  "update's effect on the correct modes, and the statement names no quantity or "
                  "limit to compute (the toy's collapse itself is sc-fig1-sharpening)")
