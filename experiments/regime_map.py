"""Collision / cancel / anti-collision regimes of the neutralized within-good drift (G²RPO §D.6)."""

import numpy as np

from simplexlab.lab import Context, experiment
from simplexlab.theory import flip_threshold, global_flip_gain, neutralized_inner_coefficient

M_BIG = 64  # bad-block size used to realise every L_z ∈ [1/64, 1]


@experiment(
    "regime-map",
    reproduces=(
        "G²RPO §D.6, eqs. (57), (60)-(61), (63), (66): no paper figure. Shows, in the (λ̃, L_z) "
        "plane for several K, where the schedule-A neutralized within-good drift "
        "[1 − λ̃ ρ(y, z)] V(y) is collision for every y, anti-collision for every y, or "
        "state-dependent (cancelled on the curve λ̃ = λ̃_flip(L_y, L_z)); the regions are "
        "computed from the mean-field field and the closed forms (61) and (66) are overlaid."
    ),
    cost={"quick": "~16 s", "full": "~21 s"},
)
def run(ctx: Context) -> dict:
    """For each K, evaluates the inner-time y-coefficient of the schedule-A neutralized system
    (read from ``Neutralized(ScheduleA(λ̃)).inner_rates``) on a (λ̃, L_z, L_y) grid, and labels
    each (λ̃, L_z) as collision (coefficient > 0 for every non-uniform y), anti-collision (< 0 for
    every y) or state-dependent. The region boundaries are compared with λ̃ = 1 (L_y → 1/K) and
    the flip threshold (61) at the worst case L_y = 1; the global sufficient gains (66)
    K(M+1)/(K+M) are marked at L_z = 1/M."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    from simplexlab.lab import claim_lines, figure_note, legend_outside, use_style

    use_style()

    Ks = (2, 4, 8) if ctx.quick else (2, 3, 5, 10)
    n_lam, n_lz, n_ly = (121, 81, 25) if ctx.quick else (241, 161, 41)
    Ms = (2, 4, 8, 16, 64)
    lam_max = 1.15 * max(global_flip_gain(K, 64) for K in Ks)
    results = {}
    fig, axes = plt.subplots(1, len(Ks), figsize=(4.6 * len(Ks), 4.6), sharey=True,
                             constrained_layout=True)
    cmap = ListedColormap(["#f4a582", "#fde8a6", "#92c5de"])
    for ax, K in ctx.progress(list(zip(axes, Ks, strict=True)), desc="K"):
        lam = np.linspace(0.0, lam_max, n_lam)
        lz = np.linspace(1.0 / M_BIG, 1.0, n_lz)
        # L_y → 1/K (y uniform, V(y) = 0 there) is approached geometrically
        ly = 1.0 / K + (1.0 - 1.0 / K) * np.geomspace(1e-6, 1.0, n_ly)
        LAM, LZ, LY = np.meshgrid(lam, lz, ly, indexing="ij")
        a = neutralized_inner_coefficient(K, LAM, LY, LZ, p=0.3, M=M_BIG)
        collision = np.all(a > 0, axis=-1)
        anti = np.all(a < 0, axis=-1)
        region = np.where(collision, 0, np.where(anti, 2, 1))  # (n_lam, n_lz)
        ax.pcolormesh(lam, lz, region.T, cmap=cmap, vmin=-0.5, vmax=2.5, shading="nearest",
                      rasterized=True)
        # closed forms: λ̃ = 1 (the L_y → 1/K end of (61)) and (61) at L_y = 1
        ax.axvline(1.0, color="k", lw=1.3, ls="--")
        ax.plot(flip_threshold(1.0, lz, K), lz, color="k", lw=1.8,
                label="(61) at $L_y=1$: $(1+L_z)/(L_z+1/K)$")
        ax.plot(flip_threshold(0.5 * (1 + 1 / K), lz, K), lz, color="0.35", lw=1.0, ls=":",
                label="cancel curve (61) at $L_y=(1+1/K)/2$")
        for M in Ms:
            g = global_flip_gain(K, M)
            ax.plot([g], [1.0 / M], "v", color="purple", ms=6,
                    label="(66) $K(M+1)/(K+M)$ at $L_z=1/M$" if M == Ms[0] else None)
            ax.annotate(f"M={M}", (g, 1.0 / M), textcoords="offset points", xytext=(4, 4),
                        fontsize=7, color="purple")
        ax.text(0.5, 0.5, "collision for every y", ha="center", va="center", rotation=90,
                fontsize=9)
        mid = 0.5 * (1.0 + float(flip_threshold(1.0, 0.85, K)))
        label = r"$\tilde\lambda=\tilde\lambda_{flip}(L_y,L_z)$"
        ax.annotate("state-dependent:\ncancelled where\n" + label,
                    (mid, 0.85), xytext=(0.45 * lam_max, 0.62), fontsize=8.5, ha="center",
                    arrowprops=dict(arrowstyle="->", lw=0.8))
        ax.text(0.78 * lam_max, 0.3, "anti-collision\nfor every y", ha="center", fontsize=9)
        ax.set_xlim(0, lam_max)
        ax.set_ylim(0, 1.0)
        ax.set_title(f"K = {K} good modes")
        ax.set_xlabel(r"inner-time gain $\tilde\lambda$ (schedule A: $\tilde\lambda=\lambda_0$)")
        # boundaries read from the grid vs the closed forms
        dl = lam[1] - lam[0]
        lo = np.array([lam[np.argmax(~collision[:, j])] for j in range(n_lz)])
        hi = np.array([lam[np.argmax(anti[:, j])] if anti[:, j].any() else np.nan
                       for j in range(n_lz)])
        thr = np.asarray(flip_threshold(1.0, lz, K))
        ok = thr < lam_max - dl
        results[f"K={K}"] = {
            "collision_boundary_max_error_vs_lambda_1": float(np.max(np.abs(lo - 1.0))),
            "anticollision_boundary_max_error_vs_eq61_at_Ly1": float(
                np.nanmax(np.abs(hi[ok] - thr[ok]))),
            "grid_step": float(dl),
            "global_flip_gain_eq66": {str(M): float(global_flip_gain(K, M)) for M in Ms},
        }
    axes[0].set_ylabel(r"within-bad concentration $L_z=\|z\|^2$  ($L_z\geq 1/M$)")
    legend_outside(axes[-1])
    fig.suptitle(r"Neutralized within-good drift $dy/d\tau=[1-\tilde\lambda\,\rho(y,z)]\,V(y)$: "
                 r"regimes over all $y$ (dashed: $\tilde\lambda=1$)")
    figure_note(fig, claim_lines(ctx.name, ctx.out), differs=[
        "no paper figure: G²RPO §D.6 eqs. (57), (60)-(61), (63), (66) computed on a grid"])
    ctx.savefig(fig, "regime_map")
    plt.close(fig)
    return {"parameters": {"K": list(Ks), "grid": [n_lam, n_lz, n_ly], "M_marks": list(Ms),
                           "p": 0.3, "M_big": M_BIG},
            "results": results}
