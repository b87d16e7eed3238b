"""Simulated trajectories of the finite-group bandit over the mean-field stream plot (G²RPO Fig. 1).

The within-good composition ``y`` of the (3 + 2)-mode bandit, trained with GRPO and with the
good-only bonus under schedule A (λ̃ ≡ λ0 = 1, 2; G²RPO eq. 50–51: ``dy/dτ = (1 − λ0) V(y)``),
drawn on the 2-simplex over the streamlines of the mean-field inner-time field
(:func:`simplexlab.theory.within_good_field`), with the ODE trajectories from the same starts
(:meth:`simplexlab.sim.Bandit.meanfield`, dashed) and the fixed points classified by stability.
The y-field in inner time does not depend on p for these systems, so a simulated path should run
along the streamlines whatever its speed.
"""

from __future__ import annotations

import numpy as np

from simplexlab import sweep
from simplexlab import theory as mf
from simplexlab.lab import (
    Context,
    experiment,
    mark_fixed_points,
    stream_on_simplex,
    ternary_axes,
    to_cartesian,
)
from simplexlab.sim import Bandit
from simplexlab.theory import uniform_on_support, within_good_field
from simplexlab.theory.internal import solve_each

K, M, P0, Z0 = 3, 2, 0.9, (0.6, 0.4)
PANELS = (("GRPO: collision", None), (r"$\tilde\lambda = \lambda_0 = 1$: cancelled", 1.0),
          (r"$\tilde\lambda = \lambda_0 = 2$: anti-collision", 2.0))


def settings(quick: bool) -> dict:
    if quick:
        return {"prompts": 10, "seeds": 4, "G": 16, "eta": 0.1, "steps": 600, "stride": 20,
                "grid": 21}
    return {"prompts": 40, "seeds": 16, "G": 32, "eta": 0.05, "steps": 4000, "stride": 40,
            "grid": 41}


def _simulate(ctx, st, gain):
    fixed = {"K": K, "M": M, "z0": Z0, "p0": P0, "num_prompts": st["prompts"],
             "max_group_size": st["G"], "group_size": st["G"], "eta": st["eta"],
             "num_steps": st["steps"], "stride": st["stride"]}
    if gain is None:
        fixed["method"] = "grpo"
    else:
        fixed.update(method="g2rpo", schedule="A", neutralize=False, gain=gain)
    ds = sweep.run("bandit", {}, fixed=fixed, seeds=st["seeds"], seed=ctx.seed,
                   out=ctx.out / "cache", progress=ctx.show_progress,
                   name=f"{ctx.name}-{ctx.mode}-{'grpo' if gain is None else f'A{gain:g}'}")
    sim, params = Bandit.from_values(fixed)
    dyn, st0 = sim.meanfield(params)
    T = st["steps"] * st["eta"]
    ode = solve_each(dyn, st0, t1=T, n_save=201)
    return ds, dyn, np.asarray(ode.state.y)


@experiment(
    "phase-portraits-sim",
    reproduces=(
        "G²RPO Fig. 1 with simulated trajectories: the finite-group bandit (K = 3, M = 2, SGD "
        "on the log-likelihood surrogate) under GRPO and the good-only bonus with schedule A "
        "(λ̃ ≡ λ0), seed-mean paths per start point over the computed mean-field streamlines; "
        "the paper's panels are sketches of the ODE alone"),
    cost={"quick": "~20 s", "full": "~41 s"},
)
def run(ctx: Context) -> dict:
    """Seed-mean paths of the bandit's within-good composition on the simplex, with the
    mean-field streamlines, ODE paths from the same starts and classified fixed points."""
    import matplotlib.pyplot as plt

    from simplexlab.lab import claim_lines, figure_note, use_style

    use_style()

    st = settings(ctx.quick)
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.4))
    panels = []
    from simplexlab.lab import legend_outside, method_style

    for ax, (title, gain) in zip(axes, PANELS, strict=True):
        ds, dyn, ode_y = _simulate(ctx, st, gain)
        sty = method_style("grpo" if gain is None else "g2rpo")
        field_dyn = mf.GRPO() if gain is None else mf.GoodBonus(gain=mf.ScheduleA(gain))
        f, batched = within_good_field(field_dyn, P0, np.asarray(Z0))
        ternary_axes(ax, title=title)
        if stream_on_simplex(ax, batched, n=st["grid"], density=0.8) is None:
            ax.text(0.5, 0.12, "dy/dτ = 0: every point is an equilibrium", ha="center",
                    fontsize=9, color="0.3")
        Y = ds["y"].values.mean(0)  # (step, prompt, K): seed mean per start point
        dev = []
        for j in range(Y.shape[1]):
            sim_xy = to_cartesian(Y[:, j])
            ode_xy = to_cartesian(ode_y[j])
            ax.plot(ode_xy[:, 0], ode_xy[:, 1], "--", color="0.25", lw=0.9,
                    label="mean-field ODE" if j == 0 else None)
            ax.plot(sim_xy[:, 0], sim_xy[:, 1], color=sty.color, lw=1.3, alpha=0.85,
                    label=f"{sty.name} bandit, mean of {st['seeds']} seeds" if j == 0 else None)
            ax.scatter(*sim_xy[0], s=10, color=sty.color, zorder=5)
            # distance of the simulated endpoint to the ODE path (a shape comparison)
            dev.append(float(np.min(np.linalg.norm(ode_y[j] - Y[-1, j], axis=-1))))
        fps = uniform_on_support(K, f)
        mark_fixed_points(ax, fps, legend=gain is not None)
        legend_outside(ax, where="below", ncol=2)
        L_y = ds["L_y"].values[:, -1].mean()
        panels.append({"gain": gain, "final_L_y_mean": float(L_y),
                       "max_endpoint_distance_to_ode_path": float(np.max(dev)),
                       "median_endpoint_distance_to_ode_path": float(np.median(dev)),
                       "fixed_points": [{"support": list(fp.support), "kind": fp.kind}
                                        for fp in fps]})
    fig.suptitle(
        f"Within-good composition y of the finite-group bandit (K = {K}, M = {M}, G = {st['G']}, "
        f"η = {st['eta']:g}, {st['steps']} steps, p0 = {P0}, z0 = {Z0}; {st['prompts']} random "
        "starts)\nover the mean-field inner-time streamlines dy/dτ = (1 − λ̃) V(y) "
        "[G²RPO Fig. 1]")
    fig.tight_layout()
    figure_note(fig, claim_lines(ctx.name, ctx.out), differs=[
        "the paper's panels sketch the ODE alone; here seed-mean paths of the finite-group "
        "bandit (SGD, log-likelihood surrogate) under GRPO and the good-only bonus (schedule A)"])
    ctx.savefig(fig, "phase_portraits_sim")
    return {
        "parameters": {"K": K, "M": M, "p0": P0, "z0": Z0, "schedule": "A (good-only bonus)",
                       **{k: st[k] for k in ("prompts", "seeds", "G", "eta", "steps",
                                             "stride")},
                       "starts": "y0 ~ Dirichlet(1) per prompt (instance 0)"},
        "results": {"panels": panels},
    }
