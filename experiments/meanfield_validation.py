"""Mean-field validation: the finite-group bandit's ensemble mean against the (p, y, z) ODEs.

For GRPO (G²RPO eq. 22), the good-only bonus (eq. 48) and the neutralized systems (eq. 56 with a
constant gain and schedules A / B), the ensemble mean of ``p`` and ``L_y`` over many seeds of
:class:`simplexlab.sim.Bandit` is compared with :func:`simplexlab.theory.solve` of the system
the bandit maps to (:meth:`Bandit.meanfield`, time map ``t = step · η``):

(a) error vs ``h`` along the ladder ``(η, G) = (0.2 h, 8 / h)`` (η halves while G doubles), with
    the fitted log-log slope: theory predicts slope 1 (``O(η)`` discretisation + ``O(1/G)``
    plug-in group statistics);
(b) error vs ``G`` at fixed η: where the bonus's plug-in estimates converge slowly (the
    neutralizer ∝ 1/p̂ is biased while ``G p`` is small);
(c) where mean-field fails: a rare good mode (mass τ) is unsampled in a reward-positive group
    with the F-GRPO tail-miss probability ``Pr(B_τ)`` (Lemma 3.1, :func:`theory.tail_miss`),
    and an unsampled mode gets no bonus (it is not a cluster of Algorithm 1), so its trajectory
    leaves the ODE's until ``G`` is large against ``1/τ``.

Panels (a) and (b) carry the seeds' own noise floor, predicted: the linear-noise approximation
(:func:`simplexlab.theory.linear_noise`, the covariance ODE ``dC/dt = J C + C Jᵀ + η Σ`` along
the finite-group mean, :meth:`Bandit.finite_group` at the run's own η and G) gives the across-seed
standard deviation ``σ(t)`` of ``p`` and ``L_y``; ``1.96 · max_t σ(t) / √seeds`` is the size of
an error the seeds alone would make. An error above the band is the mean field's bias; one
inside it is noise. The result file holds the predicted standard error beside the measured one
(``max_t`` of the seeds' standard deviation over ``√seeds``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from simplexlab import sweep, theory
from simplexlab import theory as mf
from simplexlab.lab import Context, experiment
from simplexlab.sim import Bandit

K, M = 3, 2
Y0, Z0, P0 = (0.5, 0.3, 0.2), (0.7, 0.3), 0.7
RARE_Y0 = (0.88, 0.1, 0.02)  # panel (c): the third good mode is rare
GAIN = 1.5
SYSTEMS = {  # label -> bandit settings (method, schedule, neutralize)
    "GRPO (eq. 22)": {"method": "grpo"},
    "good-only bonus, λ = 1.5 (eq. 48)": {"method": "g2rpo", "schedule": "constant",
                                          "neutralize": False},
    "neutralized, λ = 1.5 (eq. 56)": {"method": "g2rpo", "schedule": "constant",
                                      "neutralize": True},
    "schedule A, λ0 = 1.5 (eq. 62)": {"method": "g2rpo", "schedule": "A", "neutralize": True},
    "schedule B, λ0 = 1.5 (eq. 67)": {"method": "g2rpo", "schedule": "B", "neutralize": True},
}


def settings(quick: bool) -> dict:
    """``noise_systems``: the systems whose noise floor is predicted (quick: GRPO's alone, one
    compiled program per group size on its counts path; G²RPO's covariance is a larger table)."""
    if quick:
        return {"T": 6.0, "ladder": (1.0, 0.5, 0.25), "seeds": 128,
                "systems": ("GRPO (eq. 22)", "schedule B, λ0 = 1.5 (eq. 67)"),
                "noise_systems": ("GRPO (eq. 22)",),
                "G_sweep": (8, 16, 32), "rare_G": (4, 16, 64), "rare_seeds": 64}
    return {"T": 10.0, "ladder": (1.0, 0.5, 0.25, 0.125), "seeds": 1024,
            "systems": tuple(SYSTEMS), "noise_systems": tuple(SYSTEMS),
            "G_sweep": (8, 16, 32, 64, 128, 256),
            "rare_G": (4, 8, 16, 32, 64, 128, 256), "rare_seeds": 256}


#: the noise floor's finite-group systems: the table bound of an exact mean and covariance (the
#: default). Where the mean has no exact path within it there is no floor (G²RPO's schedules
#: here at K + M = 5, G >= 64: the partition tables need 4.9 million entries at G = 64); where
#: the mean fits and the covariance does not, the covariance is Monte Carlo of
#: ``NOISE_SAMPLES`` groups per evaluation (relative error ~ √(2 / NOISE_SAMPLES) ≈ 2 % on a
#: variance: nothing, for a noise floor)
NOISE_MAX_SIZE = 4_000_000
NOISE_SAMPLES = 4096
#: the covariance ODE's fixed step in t (it moves on the mean's time scale, ~1)
NOISE_DT = 0.5


def _slug(label: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in label.split(",")[0].split(" (")[0])


def _ensemble(ctx, label, system, *, etas, Gs, T, seeds, y0=Y0, tag=""):
    """One sweep over η × G (both array parameters: one compiled program), every run
    ``T / min(η)`` steps, recorded every ``stride`` steps where ``stride · η`` divides 1 for every
    η; and the ODE prediction on the common time grid. Runs with larger η go past T; only
    t <= T is compared."""
    eta_min = min(etas)
    inv = [int(round(1.0 / e)) for e in etas]
    stride = int(np.gcd.reduce(inv))
    steps = int(round(T / eta_min))
    steps -= steps % stride
    fixed = {**system, "K": K, "M": M, "y0": y0, "z0": Z0, "max_group_size": max(Gs),
             "p0": P0, "num_steps": steps, "stride": stride}
    if system["method"] == "g2rpo":
        fixed["gain"] = GAIN
    ds = sweep.run("bandit", {"eta": list(etas), "group_size": list(Gs)}, fixed=fixed,
                   seeds=seeds, seed=ctx.seed, out=ctx.out / "cache", progress=ctx.show_progress,
                   name=f"{ctx.name}-{ctx.mode}-{tag}{_slug(label)}")
    sim, params = Bandit.from_values({**fixed, "eta": eta_min, "group_size": max(Gs)})
    dyn, st0 = sim.meanfield(params)
    times = np.arange(0.0, T + 1e-9, stride * eta_min)
    sol = mf.solve(dyn, jax.tree_util.tree_map(lambda a: a[0], st0), t1=float(times[-1]),
                   saveat=jnp.asarray(times))
    return ds, times, sol.state


def _errors(ds, times, ode, eta, G):
    """sup over t <= T (on the ODE's time grid) of |seed mean - ODE| for p and L_y."""
    run = ds.sel(eta=eta, group_size=G)
    t_run = run["step"].values * eta
    keep = np.isin(np.round(t_run, 9), np.round(times, 9))
    at = np.searchsorted(np.round(times, 9), np.round(t_run[keep], 9))
    out = {}
    for q in ("p", "L_y"):
        a = run[q].values[:, keep, 0]
        ref = np.asarray(getattr(ode, q))[at]
        out[q] = float(np.abs(a.mean(0) - ref).max())
        out[q + "_se"] = float((a.std(0) / np.sqrt(a.shape[0])).max())
    return out


def _noise_floor(system, points, T, seeds):
    """``{(η, G): {"p": se, "L_y": se}}``: the linear-noise approximation's standard error of
    the seed mean, ``max_t σ(t) / √seeds`` over ``t = 0, NOISE_DT, ..., T``, at each ``(η, G)``
    of ``points``, for the bandit ``system`` (module docstring); one compiled program per ``G``
    (η is data of :class:`~simplexlab.theory.Diffusion`). The exact covariance where a table
    fits, else Monte Carlo (``NOISE_SAMPLES`` groups); each entry names its ``path``. Where the
    finite-G mean itself has no exact path within ``NOISE_MAX_SIZE``, no floor: ``None`` for
    both, path ``"none"``."""
    out = {}
    n_save = int(round(T / NOISE_DT)) + 1
    for G in sorted({G for _, G in points}):
        fixed = {**system, "K": K, "M": M, "y0": Y0, "z0": Z0, "max_group_size": G, "p0": P0,
                 "num_steps": 1, "eta": min(e for e, g in points if g == G), "group_size": G}
        if system["method"] == "g2rpo":
            fixed["gain"] = GAIN
        sim, params = Bandit.from_values(fixed)
        dyn, s0 = sim.finite_group(params, max_size=NOISE_MAX_SIZE)
        try:
            dyn.resolve_path(K, M)
        except ValueError:  # no exact finite-G mean at this G: no floor
            for eta in {e for e, g in points if g == G}:
                out[(eta, G)] = {"p": None, "L_y": None, "path": "none"}
            continue
        try:
            path = dyn.resolve_moments_path(K, M)
        except ValueError:  # no exact table fits: the covariance by Monte Carlo
            dyn, s0 = sim.finite_group(params, max_size=NOISE_MAX_SIZE,
                                       moments_path="montecarlo", num_samples=NOISE_SAMPLES)
            path = "montecarlo"
        s0 = jax.tree_util.tree_map(lambda a: a[0], s0)
        for eta in sorted({e for e, g in points if g == G}):
            ln = mf.linear_noise(mf.Diffusion(dyn, eta=eta), s0, t1=T, n_save=n_save,
                                 dt=NOISE_DT)
            out[(eta, G)] = {q: float(np.max(np.asarray(ln.std[q])) / np.sqrt(seeds))
                             for q in ("p", "L_y")}
            out[(eta, G)]["path"] = path
    return out


def _floor_bands(ax, x, errs, noisy):
    """Shade, for p and for L_y, what lies below ``1.96 ×`` the predicted standard error of the
    seed mean (the largest over the systems ``noisy`` that have one at that point; no band where
    none has): an error there is the seeds' noise."""
    rows = [es for label, es in errs.items() if label in noisy]
    if not rows:
        return
    y0, y1 = ax.get_ylim()
    who = f"{noisy[0].split(' (')[0]}'s" if len(noisy) == 1 else "largest over the systems"
    for q, hatch, name in (("p", None, "p"), ("L_y", "//", r"$L_y$")):
        se = np.array([[np.nan if e[q + "_se_predicted"] is None else e[q + "_se_predicted"]
                        for e in es] for es in rows], float)
        have = ~np.all(np.isnan(se), axis=0)
        if not have.any():
            continue
        top = 1.96 * np.where(have, np.nanmax(np.where(np.isnan(se), -np.inf, se), axis=0),
                              np.nan)
        ax.fill_between(x, 1e-12, top, where=have, color="gray", alpha=0.18, hatch=hatch,
                        lw=0, label=f"seeds' noise of {name}: 1.96 SE of the seed mean, "
                                    f"linear noise ({who})")
        y0, y1 = min(y0, 0.5 * float(np.nanmin(top))), max(y1, 1.5 * float(np.nanmax(top)))
    ax.set_ylim(y0, y1)  # the band's own top in view, not its floor at 1e-12


@experiment(
    "meanfield-validation",
    reproduces=(
        "no paper figure: the lab's test of the G²RPO mean-field ODEs (eq. 22, 48, 56, 62, 67) "
        "by the finite-group (K+M)-mode bandit; K = 3, M = 2, fixed start p0 = 0.7, "
        "y0 = (0.5, 0.3, 0.2), z0 = (0.7, 0.3), SGD on the mean-reduced log-likelihood"),
    cost={"quick": "~30 s", "full": "~20 min"},
)
def run(ctx: Context) -> dict:
    """Ensemble mean of the bandit vs the mean-field ODE: error against (η, G) with the fitted
    rate, error against G at fixed η, and the failure for a rare mode tied to the tail-miss
    probability."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    st = settings(ctx.quick)
    T = st["T"]
    hs = np.asarray(st["ladder"])
    ladder = [(0.2 * h, int(round(8 / h))) for h in hs]

    # (a) the (η, G) ladder and (b) G at the smallest η, from one sweep per system
    eta_b = float(ladder[-1][0])
    etas = sorted({eta for eta, _ in ladder})
    Gs = sorted({G for _, G in ladder} | set(st["G_sweep"]))
    errs_a, errs_b = {}, {}
    noisy = st.get("noise_systems", st["systems"])
    for label in st["systems"]:
        ds, times, ode = _ensemble(ctx, label, SYSTEMS[label], etas=etas, Gs=Gs, T=T,
                                   seeds=st["seeds"])
        errs_a[label] = [_errors(ds, times, ode, eta, G) for eta, G in ladder]
        errs_b[label] = [_errors(ds, times, ode, eta_b, G) for G in st["G_sweep"]]
        if label in noisy:  # the seeds' noise floor, predicted (module docstring)
            pts = [(float(e), int(G)) for e, G in ladder] + [(eta_b, int(G))
                                                            for G in st["G_sweep"]]
            floor = _noise_floor(SYSTEMS[label], pts, T, st["seeds"])
            for e, pt in zip(errs_a[label] + errs_b[label], pts, strict=True):
                pred = floor[pt]
                e.update({"p_se_predicted": pred["p"], "L_y_se_predicted": pred["L_y"],
                          "noise_path": pred["path"]})
    slopes = {label: {q: float(np.polyfit(np.log(hs), np.log([e[q] for e in es]), 1)[0])
                      for q in ("p", "L_y")} for label, es in errs_a.items()}

    # (c) a rare good mode under schedule B: its composition vs the ODE, and the tail miss
    label_c = "schedule B, λ0 = 1.5 (eq. 67)"
    tau = (1 - P0) * RARE_Y0[2]
    ds, times, ode = _ensemble(ctx, label_c, SYSTEMS[label_c], etas=[eta_b], Gs=st["rare_G"],
                               T=T, seeds=st["rare_seeds"], y0=RARE_Y0, tag="rare-")
    rare = []
    for G in st["rare_G"]:
        y3 = ds["y"].sel(eta=eta_b, group_size=G).values[..., 0, 2]
        ref = np.asarray(ode.y)[:, 2]
        rare.append({"G": G, "error_y_rare": float(np.abs(y3.mean(0) - ref).max()),
                     "final_y_rare_sim": float(y3[:, -1].mean()),
                     "final_y_rare_ode": float(ref[-1]),
                     "tail_miss_t0": float(theory.tail_miss(1 - P0, tau, G))})

    # ---------------- figure ----------------
    fig, axes = plt.subplots(1, 3, figsize=(18, 5.2))
    from simplexlab.lab import (
        claim_lines,
        figure_note,
        legend_outside,
        method_style,
        shades,
        use_style,
    )

    use_style()
    # GRPO in its registered colour; the four G²RPO systems as shades of G²RPO's
    colors = dict(zip(SYSTEMS, [method_style("grpo").color, *shades("g2rpo", len(SYSTEMS) - 1)],
                      strict=True))
    ax = axes[0]
    for label, es in errs_a.items():
        c = colors[label]
        ax.loglog(hs, [e["p"] for e in es], "o-", color=c,
                  label=f"{label}: p (slope {slopes[label]['p']:.2f})")
        ax.loglog(hs, [e["L_y"] for e in es], "s--", color=c, mfc="none",
                  label=f"L_y (slope {slopes[label]['L_y']:.2f})")
    ax.loglog(hs, 0.5 * max(e["L_y"] for es in errs_a.values() for e in es) * hs / hs[0], ":",
              color="gray", label="slope 1")
    _floor_bands(ax, hs, errs_a, noisy)
    ax.set_xlabel(r"$h$: step size $\eta = 0.2h$, group size $G = 8/h$")
    ax.set_ylabel(r"$\sup_t$ |ensemble mean − ODE|")
    ax.set_title(f"(a) error vs (η, G) ladder, {st['seeds']} seeds, t ∈ [0, {T:g}]")
    legend_outside(ax, where="below")
    ax.grid(alpha=0.3, which="both")

    ax = axes[1]
    Gs = np.asarray(st["G_sweep"])
    for label, es in errs_b.items():
        c = colors[label]
        ax.loglog(Gs, [e["p"] for e in es], "o-", color=c, label=f"{label}: p")
        ax.loglog(Gs, [e["L_y"] for e in es], "s--", color=c, mfc="none", label="L_y")
    ax.loglog(Gs, 0.5 * max(e["p"] for es in errs_b.values() for e in es) * Gs[0] / Gs, ":",
              color="gray", label="∝ 1/G")
    _floor_bands(ax, Gs, errs_b, noisy)
    ax.set_xlabel("group size G")
    ax.set_ylabel(r"$\sup_t$ |ensemble mean − ODE|")
    ax.set_title(f"(b) error vs G at η = {eta_b:g}, {st['seeds']} seeds")
    legend_outside(ax, where="below", ncol=2)
    ax.grid(alpha=0.3, which="both")

    ax = axes[2]
    Gr = np.asarray([r["G"] for r in rare])
    ax.loglog(Gr, [r["error_y_rare"] for r in rare], "o-", color="tab:red",
              label=r"$\sup_t |\bar y_3 - y_3^{ODE}|$ (rare good mode)")
    ax.set_xlabel("group size G")
    ax.set_ylabel("error of the rare mode's share", color="tab:red")
    ax2 = ax.twinx()
    ax2.semilogx(Gr, [r["tail_miss_t0"] for r in rare], "k^--",
                 label=r"tail miss $\Pr(\mathcal{B}_\tau)$ at t = 0 (F-GRPO Lemma 3.1)")
    ax2.set_ylabel(r"$\Pr(\mathcal{B}_\tau)$: a rewarded group misses the rare mode")
    ax2.set_ylim(0, 1)
    ax.set_title(f"(c) mean-field fails for a rare good mode\n(y0 = {RARE_Y0}, mass τ = "
                 f"{tau:.3g}; schedule B, η = {eta_b:g}, {st['rare_seeds']} seeds)", fontsize=10)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    legend_outside(ax, where="below", handles=h1 + h2, labels=l1 + l2)
    ax.grid(alpha=0.3, which="both")
    fig.suptitle(f"Finite-group bandit (K = {K}, M = {M}, SGD, log-likelihood surrogate) vs the "
                 f"G²RPO mean-field ODEs, time map t = step·η; p0 = {P0}, y0 = {Y0}, z0 = {Z0}")
    fig.tight_layout()
    figure_note(fig, claim_lines(ctx.name, ctx.out), differs=[
        "no paper figure: the lab's test of the mean-field ODEs by the finite-group bandit"])
    ctx.savefig(fig, "meanfield_validation")

    grpo = slopes.get("GRPO (eq. 22)", {})
    return {
        "parameters": {"K": K, "M": M, "p0": P0, "y0": Y0, "z0": Z0, "gain": GAIN, "T": T,
                       "ladder_eta_G": ladder, "seeds": st["seeds"], "eta_G_sweep": eta_b,
                       "G_sweep": list(st["G_sweep"]), "rare_y0": RARE_Y0,
                       "rare_G": list(st["rare_G"]), "rare_seeds": st["rare_seeds"],
                       "systems": {k: SYSTEMS[k] for k in st["systems"]},
                       "optimizer": "sgd", "surrogate": "log_likelihood", "reduction": "mean",
                       "error": "sup over t = 0, 1, ..., T of |seed mean - ODE|",
                       "noise_systems": list(noisy), "noise_dt": NOISE_DT,
                       "noise_max_size": NOISE_MAX_SIZE, "noise_samples": NOISE_SAMPLES,
                       "se": "max over t of the seeds' standard deviation / sqrt(seeds): "
                             "measured (p_se, L_y_se; the bandit's record times) and predicted "
                             "by the linear-noise approximation (p_se_predicted, "
                             "L_y_se_predicted; t = 0, noise_dt, ..., T)"},
        "results": {
            "ladder_errors": errs_a, "ladder_slopes": slopes, "G_errors": errs_b,
            "se_ratio": {label: {q: [None if e[q + "_se_predicted"] is None else
                                     e[q + "_se"] / e[q + "_se_predicted"]
                                     for e in errs_a[label] + errs_b[label]]
                                 for q in ("p", "L_y")} for label in noisy},
            "rare_mode": rare,
            "statements": {
                "GRPO error shrinks at rate 1 in (eta, 1/G)": {
                    "slopes": grpo, "reproduced": bool(grpo and all(
                        0.7 < s < 1.4 for s in grpo.values()))},
            },
        },
    }
