"""Which reading of F-GRPO App. J reproduces the three group-size regimes of Fig. 4?

A known ambiguity of F-GRPO App. J: it gives lr 1e-2 and "gradient ascent on
L = (1/N) Σ r̃_j p_j" but names neither the optimizer nor whether p_j is a probability or a
log-likelihood. This experiment
sweeps surrogate × reduction × optimizer × learning rate on the App. J policy (A = 128,000,
T = 1000, one seed, γ = 0, advantages r̃ = R − mean R) at a few group sizes and records final
Q_pos and M_ret, so the choice made in ``categorical-regimes`` is documented by the sweep that
found it.
"""

from __future__ import annotations

import itertools

import jax
import numpy as np

from simplexlab import sim as C
from simplexlab import sweep
from simplexlab.lab import Context, experiment, load_experiment_module

SURROGATES = ("probability", "log_likelihood")
REDUCTIONS = ("mean", "sum")
OPTIMIZERS = ("sgd", "adam")
LRS = (1e-3, 1e-2, 1e-1)
FIG4_CONFIG = load_experiment_module("categorical_regimes").FIG4_CONFIG
CHOSEN = tuple(FIG4_CONFIG[k] for k in ("surrogate", "reduction", "optimizer",
                                        "eta"))  # what categorical-regimes uses


def settings(quick: bool) -> dict:
    """Full: the App. J policy. Quick: a 64x smaller policy with the same logits (the leaf
    probability is ~60x larger, so the group sizes are scaled down), 10x fewer steps with 10x
    the learning rates (so Adam can travel as far)."""
    if quick:
        pol = C.CategoricalPolicy(num_actions=2_000, num_correct=156)
        return {"policy": pol, "ns": (2, 32, 8192), "steps": 100, "stride": 10,
                "lr_scale": 10.0}
    return {"policy": C.CategoricalPolicy(), "ns": (2, 128, 2048, 16384, 131072),
            "steps": 1000, "stride": 50, "lr_scale": 1.0}


@experiment(
    "categorical-search",
    reproduces=(
        "the search behind F-GRPO Fig. 4: which surrogate / reduction / optimizer / learning "
        "rate reproduces the three group-size regimes (the paper does not say)"),
    cost={"quick": "~29 s", "full": "~6 min"},
)
def run(ctx: Context) -> dict:
    """For every surrogate (probability-linear, log-likelihood) × reduction (mean, sum) ×
    optimizer (SGD, Adam) × learning rate (1e-3, 1e-2, 1e-1) and a few group sizes N, runs the
    App. J simulation for T steps (one seed, γ = 0) and plots final Q_pos and M_ret vs N.
    A configuration reproduces Fig. 4 when (I) the smallest N keeps M_ret ≈ 1 with slow Q_pos
    growth, (II) some intermediate N drives Q_pos → ~1 while M_ret collapses, and (III) the
    largest N keeps both high. The verdict per configuration is computed and stored."""
    import matplotlib.pyplot as plt

    from simplexlab.lab import claim_lines, figure_note, legend_outside, use_style

    use_style()

    st = settings(ctx.quick)
    ns, steps, stride = st["ns"], st["steps"], st["stride"]
    key = jax.random.key(ctx.seed)
    pol = st["policy"]
    ds = sweep.run(  # one seed, the same key for every configuration
        "categorical",
        {"surrogate": list(SURROGATES), "reduction": list(REDUCTIONS),
         "optimizer": list(OPTIMIZERS), "eta": [lr * st["lr_scale"] for lr in LRS],
         "group_size": list(ns)},
        fixed={"num_actions": pol.num_actions, "num_correct": pol.num_correct,
               "num_steps": steps, "stride": stride},
        keys=key[None], out=ctx.out / "cache", name=f"{ctx.name}-{ctx.mode}",
        progress=ctx.show_progress)
    combos = list(itertools.product(SURROGATES, REDUCTIONS, OPTIMIZERS))
    # (surrogate, reduction, optimizer, lr, N, seed, step) -> (combo, lr, N)
    q = ds["q_pos"].values[..., 0, :].reshape(len(combos), len(LRS), len(ns), -1)
    m = ds["m_ret"].values[..., 0, :].reshape(len(combos), len(LRS), len(ns), -1)
    final_q, final_m, min_m = q[..., -1], m[..., -1], m.min(axis=-1)

    q0 = float(C.categorical_metrics(C.CategoricalConfig(policy=st["policy"]),
                         C.categorical_init(C.CategoricalConfig(policy=st["policy"]), key)).q_pos)

    def verdict(q, m):
        moved = bool(np.max(np.abs(q - q0)) > 0.01 or np.min(m) < 0.99)
        regime1 = bool(m[0] > 0.9 and q[0] < 0.9)
        mid = [i for i in range(1, len(ns) - 1) if q[i] > 0.9 and m[i] < 0.5]
        regime3 = bool(m[-1] > 0.9 and q[-1] > 0.9)
        return {"policy_moves": moved, "regime_I": regime1, "concentration_zone": bool(mid),
                "concentration_N": [ns[i] for i in mid], "regime_III": regime3,
                "reproduces_three_regimes": bool(regime1 and mid and regime3)}

    table = {}
    for ci, (sur, red, opt) in enumerate(combos):
        for li, lr in enumerate(LRS):
            table[f"{sur}/{red}/{opt}/lr={lr:g}"] = {
                "final_q_pos": final_q[ci, li].tolist(), "final_m_ret": final_m[ci, li].tolist(),
                "min_m_ret": min_m[ci, li].tolist(),
                **verdict(final_q[ci, li], final_m[ci, li])}

    # ---------------- figure: one panel per (surrogate, reduction, optimizer) ----------------
    fig, axes = plt.subplots(2, 4, figsize=(18, 8), sharex=True, sharey=True)
    colors = plt.cm.plasma(np.linspace(0.0, 0.8, len(LRS)))
    for ci, (sur, red, opt) in enumerate(combos):
        ax = axes.flat[ci]
        for li, lr in enumerate(LRS):
            v = table[f"{sur}/{red}/{opt}/lr={lr:g}"]
            lr_used = lr * st["lr_scale"]
            ax.plot(ns, final_q[ci, li], "-o", color=colors[li], ms=4,
                    label=rf"$Q_{{pos}}$, lr={lr_used:g}")
            ax.plot(ns, final_m[ci, li], "--s", color=colors[li], ms=4,
                    label=rf"$\mathcal{{M}}_{{ret}}$, lr={lr_used:g}")
            if v["reproduces_three_regimes"]:
                ax.plot(ns, final_m[ci, li], "s", ms=11, mfc="none", mec="limegreen", mew=2)
        ax.axhline(q0, color="gray", lw=0.8, ls=":")
        chosen = (sur, red, opt) == CHOSEN[:3]
        lit = (sur, red, opt) == ("probability", "mean", "sgd")
        tag = " [used in categorical-regimes]" if chosen else (
            " [App. J literal]" if lit else "")
        ax.set_title(f"{sur} / {red} / {opt.upper()}{tag}", fontsize=9.5,
                     color="darkgreen" if chosen else "k")
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3, which="both")
        ax.set_ylim(-0.03, 1.05)
    for ax in axes[1]:
        ax.set_xlabel("group size $N$ (log$_2$)")
    for ax in axes[:, 0]:
        ax.set_ylabel(rf"final value after T = {steps} steps")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    handles.append(plt.Line2D([], [], ls="none", marker="s", ms=11, mfc="none",
                              mec="limegreen", mew=2))
    labels.append("shows regimes I, II, III")
    handles.append(plt.Line2D([], [], color="gray", ls=":"))
    labels.append(rf"initial $Q_{{pos}}$ = {q0:.3f}")
    pol = st["policy"]
    fig.suptitle(
        f"Search over the options App. J leaves open: A = {pol.num_actions:,} "
        f"({pol.num_correct:,} correct), T = {steps}, one seed, γ = 0, advantage R − mean R. "
        r"Solid: $Q_{pos}$; dashed: $\mathcal{M}_{ret}$ (eq. 26)")
    fig.tight_layout()
    legend_outside(fig, where="below", handles=handles, labels=labels, ncol=4)
    figure_note(fig, claim_lines(ctx.name, ctx.out), differs=[
        "one seed per configuration, γ = 0; the options App. J leaves open are searched, the "
        "chosen one is used by categorical-regimes"]
        + ([f"quick mode: learning rates × {st['lr_scale']:g}"] if st["lr_scale"] != 1 else []))
    ctx.savefig(fig, "categorical_search")

    n_ok = [k for k, v in table.items() if v["reproduces_three_regimes"]]
    return {
        "parameters": {"A": pol.num_actions, "num_correct": pol.num_correct, "N": list(ns),
                       "T": steps, "stride": stride, "seeds": 1, "gamma": 0.0,
                       "advantage": "mean_shifted (R - mean R, App. J)",
                       "surrogates": list(SURROGATES), "reductions": list(REDUCTIONS),
                       "optimizers": list(OPTIMIZERS), "learning_rates": list(LRS),
                       "learning_rate_scale": st["lr_scale"],
                       "criteria": "I: M_ret(N_min) > 0.9 and Q_pos(N_min) < 0.9; II: some "
                                   "intermediate N with Q_pos > 0.9 and M_ret < 0.5; III: "
                                   "M_ret(N_max) > 0.9 and Q_pos(N_max) > 0.9",
                       "chosen_for_categorical_regimes": dict(zip(
                           ("surrogate", "reduction", "optimizer", "learning_rate"), CHOSEN,
                           strict=True))},
        "results": {"initial_q_pos": q0, "configurations": table,
                    "reproducing_configurations": n_ok},
    }
