"""The (λ0, G) regime map of G²RPO on the finite-group (K+M)-mode bandit.

Final within-good concentration ``L_y`` and accuracy ``1 − p`` over a grid of base gains λ0 and
group sizes G, for G²RPO with schedule B (eq. 67) and the bad-mass neutralizer (eq. 70), next to
plain GRPO at every G. Schedule B makes the neutralized inner gain λ̃ρ ≡ λ0, so the mean-field
within-good drift is ``(1 − λ0) V(y)`` (G²RPO §4 eq. (5), §D.6 eq. (60)): collision
(winner-take-all, ``L_y → 1``) for λ0 < 1, anti-collision (``L_y → 1/K``) for λ0 > 1, cancelled
at λ0 = 1. The finite group departs from it at small G: the bonus is computed from the plug-in
``K̂`` of the good modes *sampled* in the group, so unsampled good modes get no bonus.
"""

from __future__ import annotations

import numpy as np

from simplexlab import sweep
from simplexlab.lab import Context, experiment

#: Schedule B with the neutralizer: the setting whose flip line is exactly λ0 = 1.
G2RPO = {"method": "g2rpo", "schedule": "B", "neutralize": True}
K, M = 4, 4
#: Sweep batching: ``lax.map`` over runs compiles faster than ``vmap`` here and the per-run work
#: (``num_prompts × G × (K+M)``) is large enough; the run is compile-bound in quick mode.
BATCHING = "map"


def settings(quick: bool) -> dict:
    if quick:
        return {"gains": (0.0, 1.0, 3.0), "group_sizes": (2, 8, 32), "eta": 0.1, "steps": 400,
                "stride": 400, "num_prompts": 8, "seeds": 4, "p0": 0.8}
    return {"gains": (0.0, 0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0),
            "group_sizes": (2, 4, 8, 16, 32, 64), "eta": 0.05, "steps": 1000, "stride": 1000,
            "num_prompts": 16, "seeds": 8, "p0": 0.8}


def _fixed(st: dict) -> dict:
    return {"K": K, "M": M, "max_group_size": max(st["group_sizes"]),
            "num_prompts": st["num_prompts"], "eta": st["eta"], "p0": st["p0"], "instance": 0,
            "delta_fn": 0.0, "delta_fp": 0.0, "optimizer": "sgd", "surrogate": "log_likelihood",
            "reduction": "mean", "num_steps": st["steps"], "stride": st["stride"]}


def simulate(ctx: Context, st: dict):
    """Two sweeps with the same seeds, instance and prompts: G²RPO over (λ0, G) and GRPO over G.
    Every finished chunk is kept in ``<out>/cache/`` and reused by a resumed run."""
    common = dict(seeds=st["seeds"], seed=ctx.seed, out=ctx.out / "cache",
                  progress=ctx.show_progress, batching=BATCHING)
    g2 = sweep.run("bandit", {"gain": list(st["gains"]), "group_size": list(st["group_sizes"])},
                   fixed={**_fixed(st), **G2RPO}, name=f"{ctx.name}-{ctx.mode}-g2rpo", **common)
    grpo = sweep.run("bandit", {"group_size": list(st["group_sizes"])},
                     fixed={**_fixed(st), "method": "grpo"}, name=f"{ctx.name}-{ctx.mode}-grpo",
                     **common)
    return g2, grpo


def small_group_diagnostics(y0: np.ndarray, p0: float, group_sizes) -> dict:
    """Why small G departs from the mean-field flip line, at the initial policy (mean over
    prompts): the expected number of distinct good modes in a group, ``E[K̂] = Σ_j (1 − (1 −
    (1−p0) y_j)^G)`` (the bonus sees only these), and the F-GRPO Lemma 3.1 tail-miss probability
    ``Pr(B_τ)`` of the rarest good mode (``μ = 1 − p0``, ``τ = (1 − p0) min_j y_j``): the group
    is active (it updates the policy) and that mode is not sampled, so the GRPO update pushes it
    down and no G²RPO bonus protects it."""
    from simplexlab.theory import tail_miss

    gs = np.asarray(group_sizes)
    mass = (1.0 - p0) * y0  # (P, K) probability of each good mode
    e_khat = np.sum(1.0 - (1.0 - mass[:, None, :]) ** gs[None, :, None], -1).mean(0)
    mu = np.full(mass.shape[0], 1.0 - p0)
    tau = mass.min(-1)
    pb = np.asarray(tail_miss(mu[:, None], tau[:, None], gs[None, :])).mean(0)
    return {"group_size": gs.tolist(), "expected_K_hat": e_khat.tolist(),
            "tail_miss_rarest_good_mode": pb.tolist()}


@experiment(
    "regime-sweep",
    reproduces=(
        "The lab's (λ0, G) regime plot: no paper figure. G²RPO schedule B (eq. 67) with the "
        "neutralizer (eq. 70) on the finite-group (K+M)-mode bandit (K = 4, M = 4), final L_y "
        "and accuracy over a (λ0, G) grid, with the mean-field flip line λ̃ = λ0 = 1 (G²RPO §4 "
        "eq. (5), §D.6 eq. (60)) and a GRPO column at every G; SGD on the mean-reduced "
        "log-likelihood surrogate (the mean-field setting), perfect verifier."),
    cost={"quick": "~28 s", "full": "~2.5 min"},
)
def run(ctx: Context) -> dict:
    """Runs G²RPO (schedule B, neutralizer on) over the (λ0, G) grid and GRPO over G on the same
    instance, seeds and prompts, and draws the final ``L_y`` (colour range ``1/K … 1``) and
    accuracy as heatmaps with the flip line λ0 = 1 and the GRPO column, plus a panel on why small
    groups depart (expected plug-in ``K̂`` and the F-GRPO tail-miss probability of the rarest good
    mode at the initial policy). ``results.checks`` records: G²RPO with λ0 = 0 equals GRPO (the
    gain multiplies both the good bonus and the neutralizer, so λ0 = 0 adds exactly 0 to the GRPO
    z-score: the trajectories agree to rounding), G = 2 is GRPO for every λ0 (an active group of
    two has one correct rollout, ``K̂ = 1``, and the bonus ``λ(1/(K̂ŷ) − 1)`` is 0), and at the
    largest G the final ``L_y`` falls with λ0 across the flip line."""
    import matplotlib.pyplot as plt

    from simplexlab.lab import (
        claim_lines,
        figure_note,
        legend_outside,
        method_style,
        use_style,
    )

    use_style()

    st = settings(ctx.quick)
    gains, gs = np.asarray(st["gains"], float), np.asarray(st["group_sizes"])
    g2, grpo = simulate(ctx, st)

    def final(ds, name):  # seed and prompt mean at the last record
        return ds[name].isel(step=-1).mean(("seed", "prompt")).values

    Ly, acc, khat = final(g2, "L_y"), final(g2, "accuracy"), final(g2, "K_hat")  # (λ0, G)
    Ly_grpo, acc_grpo = final(grpo, "L_y"), final(grpo, "accuracy")  # (G,)
    Ly_seed = g2["L_y"].isel(step=-1).mean("prompt").values  # (λ0, G, seed)
    Ly_sd = Ly_seed.std(-1, ddof=1) / np.sqrt(st["seeds"])
    y0 = g2["y"].isel(step=0, gain=0, group_size=0, seed=0).values  # (P, K), same everywhere
    Ly0 = float(g2["L_y"].isel(step=0).mean().values)
    acc0 = float(g2["accuracy"].isel(step=0).mean().values)
    diag = small_group_diagnostics(y0, st["p0"], gs)

    # measured flip per G: the λ0 (linear interpolation) where final L_y crosses the initial L_y
    emp_flip = []
    for j in range(len(gs)):
        below = np.flatnonzero(Ly[:, j] < Ly0)
        i = int(below[0]) if below.size else None
        if i is None or i == 0:
            emp_flip.append(None if i is None else float(gains[0]))
            continue
        a, b = Ly[i - 1, j], Ly[i, j]
        emp_flip.append(float(gains[i - 1] + (a - Ly0) / (a - b) * (gains[i] - gains[i - 1])))

    # ---- checks ----------------------------------------------------------------------------
    checks = {}
    if 0.0 in st["gains"]:
        i0 = list(st["gains"]).index(0.0)
        d = {n: float(np.max(np.abs(g2[n].isel(gain=i0).values - grpo[n].values)))
             for n in ("L_y", "accuracy", "p")}
        checks["g2rpo_gain_0_equals_grpo"] = {"max_abs_diff_over_all_records": d,
                                              "equal": bool(max(d.values()) < 1e-9)}
        gain0_diff = max(d.values())
    else:
        gain0_diff = float("nan")
    if 2 in st["group_sizes"]:
        j2 = list(st["group_sizes"]).index(2)
        spread = float(np.ptp(g2["L_y"].isel(group_size=j2).values, axis=0).max())
        checks["G2_is_grpo_for_every_gain"] = {"max_spread_of_L_y_over_gain": spread,
                                               "equal": bool(spread < 1e-9)}
    big = Ly[:, -1]
    checks["largest_G_L_y_falls_across_flip"] = {
        "G": int(gs[-1]), "L_y_at_gain_0": float(big[0]), "L_y_at_largest_gain": float(big[-1]),
        "below": bool(big[-1] < big[0])}
    above, below = gains > 1.0, gains < 1.0
    checks["mean_field_side_of_flip_at_largest_G"] = {
        "gains_below_1_final_L_y_above_initial": [bool(v > Ly0) for v in big[below]],
        "gains_above_1_final_L_y_below_initial": [bool(v < Ly0) for v in big[above]],
        "initial_L_y": Ly0}

    # ---- figure ----------------------------------------------------------------------------
    cols = ["GRPO"] + [f"{g:g}" for g in gains]
    L_img = np.concatenate([Ly_grpo[None, :], Ly], 0).T  # (G, 1 + n_gain)
    A_img = np.concatenate([acc_grpo[None, :], acc], 0).T
    # positions on the categorical λ0 axis (column 0 is GRPO, column 1 + i is gains[i])
    flip_x = 1.0 + float(np.interp(1.0, gains, np.arange(len(gains))))
    emp_x = [None if f is None else 1.0 + float(np.interp(f, gains, np.arange(len(gains))))
             for f in emp_flip]
    w = 0.62 * len(cols) + 3.0
    fig, axes = plt.subplots(2, 2, figsize=(w + 6.5, 10.0),
                             gridspec_kw={"width_ratios": [w, 5.5]})
    fs = 8 if len(cols) <= 8 else 7
    for ax, img, title, vmin, vmax, cmap, fmt in (
            (axes[0, 0], L_img, r"final $L_y=\|y\|^2$ (colour range $1/K$ … 1)", 1.0 / K, 1.0,
             "viridis", "{:.2f}"),
            (axes[1, 0], A_img, r"final accuracy $1-p$", float(min(A_img.min(), 0.999)), 1.0,
             "magma", "{:.3f}")):
        im = ax.imshow(img, origin="lower", aspect="auto", cmap=cmap, vmin=vmin, vmax=vmax,
                       interpolation="nearest")
        cb = fig.colorbar(im, ax=ax, pad=0.01)
        if img is L_img:
            cb.ax.axhline(Ly0, color="w", lw=2)
            cb.set_label(rf"$L_y$ ($1/K$: uniform over good modes, 1: one mode); white: "
                         rf"initial {Ly0:.2f}", fontsize=8)
        else:
            cb.set_label(f"accuracy (initial {acc0:.2f})")
        for i in range(img.shape[0]):
            for j in range(img.shape[1]):
                v = img[i, j]
                light = (v - vmin) / (vmax - vmin) > 0.6
                ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=fs,
                        color="k" if light else "w")
        ax.set_xticks(range(len(cols)), cols)
        ax.set_yticks(range(len(gs)), [str(g) for g in gs])
        ax.axvline(0.5, color="w", lw=3)
        ax.axvline(flip_x, color="red", ls="--", lw=2,
                   label=r"mean-field flip line $\tilde\lambda=\lambda_0=1$")
        if img is L_img:
            for j, x in enumerate(emp_x):
                if x is not None:
                    ax.plot([x, x], [j - 0.45, j + 0.45], color="orange", lw=3,
                            label="measured flip: final $L_y$ = initial" if j == min(
                                k for k, e in enumerate(emp_x) if e is not None) else None)
        ax.set_xlabel(r"G²RPO base gain $\lambda_0$  (first column: GRPO)")
        ax.set_ylabel("group size $G$")
        ax.set_title(title, fontsize=11)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, fontsize=8,
                  frameon=False)
    ax = axes[0, 1]
    ax.plot(gs, np.asarray(diag["expected_K_hat"]) / K, "o-", color="0.15",
            label=r"$E[\hat K]/K$: good modes in a group (seen by the bonus)")
    ax.plot(gs, diag["tail_miss_rarest_good_mode"], "s-", color="#b2182b",
            label=r"$\Pr(\mathcal{B}_\tau)$: group active, rarest good mode unsampled")
    ax.plot(gs, khat[-1] / K, "^:", color=method_style("g2rpo").color,
            label=rf"final $\hat K/K$ (modes with $y_j>0.05$), $\lambda_0={gains[-1]:g}$")
    ax.set_xscale("log", base=2)
    ax.set_xticks(gs, [str(g) for g in gs])
    ax.set_ylim(-0.03, 1.05)
    ax.set_xlabel("group size $G$")
    ax.set_ylabel("probability / fraction of the K good modes")
    ax.set_title("why small G departs (initial policy, mean over prompts)")
    ax.grid(alpha=0.3)
    legend_outside(ax, where="below")
    ax = axes[1, 1]
    fx = np.asarray([np.nan if f is None else f for f in emp_flip], float)
    ok = np.isfinite(fx)
    ax.plot(gs[ok], fx[ok], "o-", color=method_style("g2rpo").color, ms=7,
            label="measured flip λ0 (final $L_y$ = initial)")
    if (~ok).any():
        ax.plot(gs[~ok], np.full((~ok).sum(), gains[-1]), marker="^", ls="none", ms=9,
                mfc="white", color=method_style("g2rpo").color,
                label=f"no flip up to λ0 = {gains[-1]:g} (censored)")
    ax.axhline(1.0, color="red", ls="--", lw=2, label=r"mean field (G → ∞): $\lambda_0 = 1$")
    ax.set_xscale("log", base=2)
    ax.set_xticks(gs, [str(g) for g in gs])
    ax.set_ylim(0, gains[-1] * 1.1)
    ax.set_xlabel("group size $G$")
    ax.set_ylabel("base gain $\\lambda_0$ where $L_y$ stops rising")
    ax.set_title("where the collision flips: measured vs mean field")
    ax.grid(alpha=0.3)
    legend_outside(ax, where="below")
    fig.suptitle(
        f"G²RPO (schedule B + neutralizer) (λ0, G) regime map on the (K+M)-mode bandit: K = {K}, "
        f"M = {M}, η = {st['eta']:g} (SGD), {st['steps']} steps, p0 = {st['p0']:g}, "
        f"{st['num_prompts']} prompts × {st['seeds']} seeds (mean), perfect verifier")
    fig.tight_layout()
    figure_note(fig, claim_lines(ctx.name, ctx.out) + [
        "finite G: the bonus λ(1/(K̂ŷ_j) − 1) uses the plug-in K̂ of good modes sampled in the "
        "group; unsampled good modes get no bonus, so small G needs a larger λ0 to spread mass; "
        "at G = 2 an active group has one correct rollout (K̂ = 1, bonus 0): every λ0 is GRPO",
        f"λ0 = 0 is GRPO exactly: max |Δ| vs the GRPO column = {gain0_diff:.1e}"], differs=[
        "no paper figure: the lab's (λ0, G) regime plot on the (K+M)-mode bandit"])
    ctx.savefig(fig, "regime_sweep")

    return {
        "parameters": {**_fixed(st), **G2RPO, "gain_lambda0": gains.tolist(),
                       "group_size": gs.tolist(), "seeds": st["seeds"], "seed": ctx.seed,
                       "batching": BATCHING,
                       "initial_composition": "Dirichlet(1) per prompt from instance 0",
                       "flip_line": "lambda0 = 1 (schedule B: inner gain times attenuation "
                                    "= lambda0)"},
        "results": {
            "final_L_y": Ly.tolist(), "final_L_y_stderr_over_seeds": Ly_sd.tolist(),
            "final_accuracy": acc.tolist(), "final_K_hat": khat.tolist(),
            "grpo_final_L_y": Ly_grpo.tolist(), "grpo_final_accuracy": acc_grpo.tolist(),
            "initial_L_y": Ly0, "initial_accuracy": acc0,
            "small_group_diagnostics": diag, "checks": checks,
            "measured_flip_gain_per_G": emp_flip,
            "layout": "final_* arrays are [gain index][group_size index], seed and prompt mean",
        },
    }
