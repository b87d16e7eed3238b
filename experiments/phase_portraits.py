"""Phase portraits of the within-good flow on the 2-simplex (G²RPO Fig. 1 analogue).

Reproduces G²RPO Fig. 1: GRPO is a collision field on the good simplex; the inverse-probability
bonus cancels it (λ̃ = 1) or flips it into anti-collision (λ̃ > 1). What differs from the paper:
our panels are computed, not sketched: streamlines are the model's inner-time field dy/dτ, the
trajectories are solved with ``simplexlab.solve``, fixed points are the uniform-on-support points
classified by the eigenvalues of the tangent Jacobian, and a fourth panel checks p(τ) against the
Corollary A.10 envelopes. The gain is the adaptive schedule λ = λ0 sqrt(p/(1−p)) (eq. 50), for
which λ̃ ≡ λ0 and dy/dτ = (1 − λ0) V(y) (eq. 51); the neutralized schedule B gives the same
y-portraits (eq. 68).
"""

from __future__ import annotations

import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import simplexlab as sl  # noqa: E402
from simplexlab.lab import (  # noqa: E402
    Context,
    experiment,
    mark_fixed_points,
    stream_on_simplex,
    ternary_axes,
    to_cartesian,
)
from simplexlab.theory import (  # noqa: E402
    bad_mass_envelopes,
    uniform_on_support,
    within_good_field,
)
from simplexlab.theory.internal import solve_each  # noqa: E402

PANELS = [
    ("GRPO: collision", 0.0),
    (r"$\tilde\lambda = 1$: collision cancelled", 1.0),
    (r"$\tilde\lambda = 2$: anti-collision", 2.0),
]


@experiment(
    "phase-portraits",
    reproduces="G²RPO Fig. 1 (computed, with fixed points and Cor. A.10 envelopes added)",
    cost={"quick": "~58 s", "full": "~2.5 min"},
)
def run(ctx: Context) -> dict:
    """Within-good phase portraits on the 2-simplex under GRPO (collision), λ̃ = 1 (cancel) and
    λ̃ = 2 (anti-collision), plus p(τ) against the Corollary A.10 envelopes."""
    rng = np.random.default_rng(ctx.seed)
    n_traj = 24 if ctx.quick else 80
    grid = 25 if ctx.quick else 45
    tau_max = 12.0
    p0, z0 = 0.5, np.array([0.6, 0.4])
    y0s = rng.dirichlet(np.ones(3), size=n_traj)

    fig, axes = plt.subplots(1, 4, figsize=(19, 4.9),
                             gridspec_kw={"width_ratios": [1, 1, 1, 1.15]})
    results: dict = {"panels": []}
    for ax, (title, lam0) in zip(axes[:3], PANELS, strict=True):
        dyn = sl.GRPO() if lam0 == 0.0 else sl.GoodBonus(sl.ScheduleA(lam0))
        f, batched = within_good_field(dyn, p0, z0)
        ternary_axes(ax, title=title)
        sp = stream_on_simplex(ax, batched, n=grid, density=0.9)
        if sp is None:
            ax.text(0.5, 0.12, "dy/dτ = 0 everywhere:\nevery point is an equilibrium",
                    ha="center", va="center", fontsize=9, color="0.3",
                    bbox=dict(facecolor="white", edgecolor="none", alpha=0.8))
        states = sl.State(jnp.full(n_traj, p0), jnp.asarray(y0s), jnp.tile(z0, (n_traj, 1)))
        sols = solve_each(dyn, states, t1=tau_max, time="inner", n_save=121)
        Y = np.asarray(sols.y)
        for traj in ctx.progress(Y, desc=f"trajectories λ0={lam0}"):
            xy = to_cartesian(traj)
            ax.plot(xy[:, 0], xy[:, 1], color="tab:blue", lw=0.8, alpha=0.7)
            ax.scatter(xy[0, 0], xy[0, 1], s=6, color="tab:blue", zorder=4)
        fps = uniform_on_support(3, f)
        mark_fixed_points(ax, fps, legend=(lam0 > 0.0))
        results["panels"].append({
            "lambda_tilde": lam0,
            "fixed_points": [{"support": list(fp.support), "kind": fp.kind,
                              "eigenvalues": np.real(fp.eigenvalues).round(12).tolist()}
                             for fp in fps],
            "final_L_y_mean": float(np.mean(np.sum(Y[:, -1] ** 2, -1))),
        })

    # (d) p(τ) under GRPO vs the Corollary A.10 envelopes
    ax = axes[3]
    K, M, p_start = 3, 2, 0.9
    n_p = 8 if ctx.quick else 20
    ys = rng.dirichlet(np.full(K, 0.4), size=n_p)
    zs = rng.dirichlet(np.full(M, 0.4), size=n_p)
    states = sl.State(jnp.full(n_p, p_start), jnp.asarray(ys), jnp.asarray(zs))
    sols = solve_each(sl.GRPO(), states, t1=10.0, time="inner", n_save=201)
    tau = np.asarray(sols.tau[0])
    lower, upper = bad_mass_envelopes(tau, p_start, K, M)
    ax.fill_between(tau, lower, upper, color="tab:green", alpha=0.15,
                    label="Cor. A.10 envelope")
    ax.plot(tau, lower, color="tab:green", lw=1.2)
    ax.plot(tau, upper, color="tab:green", lw=1.2)
    P = np.asarray(sols.p)
    for i, pt in enumerate(P):
        ax.plot(tau, pt, color="tab:purple", lw=0.8, alpha=0.8,
                label="GRPO trajectories" if i == 0 else None)
    ax.set_yscale("log")
    ax.set_xlabel("internal time τ")
    ax.set_ylabel("bad mass p(τ)")
    ax.set_title(f"p(τ) within Cor. A.10 bounds (K={K}, M={M})", fontsize=11)
    ax.legend(fontsize=8, frameon=False, loc="lower left")
    violation = float(np.max(np.maximum(lower - P, 0) / lower) + np.max(np.maximum(P - upper, 0)
                                                                         / upper))
    fig.suptitle("Within-good flow on the simplex, inner time dy/dτ = (1 − λ̃) V(y) "
                 "[G²RPO Fig. 1 analogue]")
    fig.tight_layout()
    from simplexlab.lab import claim_lines, figure_note

    figure_note(fig, claim_lines(ctx.name, ctx.out), differs=[
        "computed streamlines with fixed points and Cor. A.10 envelopes (the paper sketches "
        "the flow)"])
    ctx.savefig(fig, "phase_portraits")
    results["envelope_max_relative_violation"] = violation
    return {
        "parameters": {"n_trajectories": n_traj, "grid": grid, "tau_max": tau_max, "p0": p0,
                       "z0": z0, "gain": "adaptive λ = λ0 sqrt(p/(1−p)) (eq. 50)",
                       "envelope_K_M_p0": [K, M, p_start], "envelope_trajectories": n_p},
        "results": results,
    }
