"""Focal-scaled GRPO advantage magnitude g(x)·|Â| versus success probability (F-GRPO Fig. 3)."""

import numpy as np

from simplexlab import theory as S
from simplexlab.lab import Context, experiment

GAMMAS = (0.0, 0.5, 1.0, 2.0)


@experiment(
    "focal-weight",
    reproduces=(
        "F-GRPO Fig. 3 (g(x)·|Â_GRPO| vs mu_pos for binary rewards; solid: correct rollouts, "
        "dashed: incorrect). What differs: the paper does not list its gamma values, so gamma in "
        "{0, 0.5, 1, 2} (the values of its App. F sweep plus gamma = 0 = GRPO) is our choice; the "
        "curves are the population limit (mu_hat = mu, population std); Monte Carlo points over "
        "finite groups (N = 256, active groups only, g from the group's mu_hat) are overlaid."
    ),
    cost={"quick": "~16 s", "full": "~56 s"},
)
def run(ctx: Context) -> dict:
    """Plots the population-limit GRPO advantage magnitudes sqrt((1-mu)/mu) (correct) and
    sqrt(mu/(1-mu)) (incorrect), scaled by the focal weight g = (1-mu)^gamma (F-GRPO eq. 15-16),
    for several gamma, with Monte Carlo estimates of the finite-group magnitudes."""
    import matplotlib.pyplot as plt

    from simplexlab.lab import (
        claim_lines,
        figure_note,
        legend_outside,
        method_style,
        shades,
        use_style,
    )

    use_style()
    rng = np.random.default_rng(ctx.seed)
    mu = np.linspace(0.01, 0.99, 491)
    mc_mu = (0.1, 0.3, 0.5, 0.7, 0.9)
    n_groups = 5_000 if ctx.quick else 50_000
    mc = {gamma: [S.mc_grpo_advantage_magnitude(m, 256, n_groups, rng, gamma=gamma)
                  for m in mc_mu] for gamma in ctx.progress(GAMMAS, desc="MC")}

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    # γ = 0 is GRPO (its registered colour); γ > 0 are F-GRPO, shades of its colour
    colors = [method_style("grpo").color, *shades("f_grpo", len(GAMMAS) - 1)]
    curves = {}
    for gamma, c in zip(GAMMAS, colors, strict=True):
        f_c, f_w = (np.asarray(x) for x in S.focal_scaled_advantage(mu, gamma))
        label = rf"$\gamma={gamma:g}$" + (" (GRPO)" if gamma == 0 else "")
        ax.plot(mu, f_c, color=c, lw=2, label=label)
        ax.plot(mu, f_w, color=c, lw=2, ls="--")
        ax.plot(mc_mu, [e[0].mean for e in mc[gamma]], "o", color=c, ms=5, mec="k", mew=0.5)
        ax.plot(mc_mu, [e[1].mean for e in mc[gamma]], "s", color=c, ms=5, mec="k", mew=0.5)
        curves[f"gamma={gamma:g}"] = {
            "correct": f_c[::49].tolist(), "incorrect": f_w[::49].tolist(),
            "mc_correct": [float(e[0].mean) for e in mc[gamma]],
            "mc_incorrect": [float(e[1].mean) for e in mc[gamma]]}
    ax.plot([], [], "k-", label="correct rollouts")
    ax.plot([], [], "k--", label="incorrect rollouts")
    ax.plot([], [], "o", color="0.4", mec="k", mew=0.5, ms=5,
            label=r"Monte Carlo, correct ($N=256$, $g=(1-\hat\mu)^\gamma$)")
    ax.plot([], [], "s", color="0.4", mec="k", mew=0.5, ms=5,
            label=r"Monte Carlo, incorrect ($N=256$)")
    ax.set_ylim(0, 3)
    ax.set_xlim(0, 1)
    ax.set_xlabel(r"success probability $\mu_{pos}(x)$")
    ax.set_ylabel(r"scaled advantage magnitude $g(x)\cdot|\hat A^{GRPO}|$")
    ax.set_title(r"F-GRPO Fig. 3: focal-weighted advantage magnitude, $g=(1-\mu_{pos})^\gamma$")
    ax.grid(alpha=0.3)
    legend_outside(ax, where="right")
    fig.tight_layout()
    figure_note(fig, claim_lines(ctx.name, ctx.out), differs=[
        "γ ∈ {" + ", ".join(f"{g:g}" for g in GAMMAS) + "} is our choice (the paper lists no "
        "γ values); curves are the population limit, points Monte Carlo over finite groups"])
    ctx.savefig(fig, "focal_weight_fig3")

    a_c, a_w = (np.asarray(x) for x in S.grpo_advantage_magnitude(np.asarray(mc_mu)))
    return {
        "parameters": {"gamma": list(GAMMAS), "mu_grid": [0.01, 0.99, 491],
                       "mc": {"mu": list(mc_mu), "N": 256, "n_groups": n_groups}},
        "results": {
            "curves_every_49th_mu": {"mu": mu[::49].tolist(), **curves},
            "monte_carlo_gamma0": {
                "correct": [float(e[0].mean) for e in mc[0.0]],
                "correct_stderr": [float(e[0].stderr) for e in mc[0.0]],
                "incorrect": [float(e[1].mean) for e in mc[0.0]],
                "incorrect_stderr": [float(e[1].stderr) for e in mc[0.0]],
                "population_correct": a_c.tolist(), "population_incorrect": a_w.tolist()},
        },
    }
