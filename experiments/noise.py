"""The noise of a group step, predicted by the theory and checked on the bandit.

The finite-group theory (:class:`simplexlab.theory.FiniteGroup`) gives the exact mean step of a
rule at any G; its second moment (:func:`simplexlab.theory.expected_moments`) gives what lies
beyond the mean. Four experiments, each against the finite-group bandit (:class:`Bandit`, time
``t = step · η``, one group per step on a prompt's parameters: ``P = 1``; the prompts of one
policy, or the seeds, are independent replicates):

- ``noise-spread``: the across-seed standard deviation of ``p`` and ``L_y`` over time from the
  linear-noise approximation (:func:`simplexlab.theory.linear_noise`: the covariance ODE
  ``dC/dt = JC + CJᵀ + η Σ`` along the mean) against the bandit's seed ensemble, with the
  ensemble's 95 % interval on the variance, over (η, G): where it holds (small η) and where it
  breaks (large η, small G).
- ``noise-extinction``: the probability that a rare good mode's ``y`` falls to the ``K̂``
  threshold by ``T`` and ``E[K̂(T)]`` from the SDE ensemble (:func:`simplexlab.theory.sde_paths`,
  :func:`simplexlab.theory.mode_survival`) against the bandit's, for GRPO, Dr. GRPO, RLOO,
  F-GRPO and G²RPO at several G and η.
- ``noise-second-order``: the bandit's ``O(η)`` bias of the mean, closed to ``O(η²)``: the
  finite-group ladder's mean error against η for the ODE, the ODE with the modified drift
  ``f − (η/2)(∂f)f`` alone, and the second-order mean (modified drift and the noise's shift of
  the mean, ``linear_noise(..., mean_correction=True)``), with the measured slopes; and (full
  mode) the flip thresholds of ``finite-group-flip`` recomputed with the second-order mean.
- ``noise-optimizers``: the small-step fields of Adam and heavy-ball momentum
  (:func:`simplexlab.theory.optimizer_limit`) followed by the bandit with optax's optimizer at
  decreasing η (the error's measured order), and SC App. H's "momentum and AdamW accelerate
  collapse" judged on the bandit by the optimizer fields and by simulation side by side.

The computations are memoised per process (keyed on the faults injected into the library,
:func:`simplexlab.lab.injected_faults`), so that the claims of ``experiments/claims/noise.py``
and the experiments share them in one ``simplexlab reproduce``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from simplexlab.lab import Context, experiment

_MEMO: dict = {}


def _x64():
    import jax

    jax.config.update("jax_enable_x64", True)


def _memo(key, compute):
    """``compute()`` once per process for ``key`` and the faults injected now."""
    from simplexlab.lab import injected_faults

    k = (key, injected_faults())
    if k not in _MEMO:
        _MEMO[k] = compute()
    return _MEMO[k]


def variance_and_se(x, axis=0):
    """The across-seed variance of ``x`` along ``axis`` and its standard error from the fourth
    central moment (no normality assumed)."""
    x = np.asarray(x, float)
    n = x.shape[axis]
    v = x.var(axis=axis, ddof=1)
    m4 = np.mean((x - x.mean(axis=axis, keepdims=True)) ** 4, axis=axis)
    return v, np.sqrt(np.maximum(m4 - v**2, 0.0) / n)


def _z(level: float, tests: int) -> float:
    """The two-sided normal quantile of ``tests`` simultaneous intervals at ``level``
    (Bonferroni)."""
    from scipy.stats import norm

    return float(norm.ppf(1.0 - (1.0 - level) / (2 * tests)))


def _bandit_runs(fixed: dict, grid: dict, seeds: int, seed: int):
    """``sweep.run`` of the bandit over ``grid`` (in memory, no progress bar)."""
    from simplexlab import sweep

    return sweep.run("bandit", grid, fixed=fixed, seeds=seeds, seed=seed, progress=False)


def _log_ticks(ax, values):
    """Major ticks at ``values`` on a log x axis, labelled plainly (``1/3`` rather than
    ``0.333333``), no minor labels."""
    from matplotlib.ticker import NullFormatter

    def label(v):
        plain, n = f"{v:g}", round(1 / v)
        return f"1/{n}" if len(plain) > 6 and abs(n * v - 1) < 1e-9 else plain

    ax.set_xticks(list(values), [label(v) for v in values])
    ax.xaxis.set_minor_formatter(NullFormatter())


def _state(K, y0, z0, p0):
    import simplexlab as sl

    return sl.make_state(float(p0), np.asarray(y0, float), np.asarray(z0, float))


# ============================================================================ noise-spread

#: GRPO on the (3 + 2)-mode bandit from one policy (the design note's linear-noise check)
SPREAD = {"method": "grpo", "K": 3, "M": 2, "y0": (0.5, 0.3, 0.2), "z0": (0.6, 0.4), "p0": 0.5}
#: the settings where the linear-noise approximation is claimed to hold (small η; G >= 4)
SPREAD_PAPER = ((0.05, 4), (0.05, 16), (0.125, 16))
#: the setting whose variance ratio is the claim's effect
SPREAD_EFFECT = (0.05, 4)


def spread_settings(mode: str) -> dict:
    """``etas`` (each a divisor of the save interval 0.5), ``G``, horizon ``T``, ``seeds`` (the
    bandit's independent replicates) per mode."""
    if mode == "full":
        return {"etas": (0.025, 0.05, 0.125, 0.25, 0.5), "G": (2, 4, 8, 16, 32), "T": 2.0,
                "seeds": 8000}
    if mode == "tiny":
        return {"etas": (0.05, 0.5), "G": (4,), "T": 1.0, "seeds": 600}
    return {"etas": (0.05, 0.125, 0.5), "G": (4, 16), "T": 2.0, "seeds": 2000}


def spread_data(mode: str = "quick", seed: int = 0) -> dict:
    """The bandit's across-seed variance of ``p`` and ``L_y`` (with its standard error) and the
    linear-noise prediction at every (η, G) of :func:`spread_settings` and save time
    ``t = 0.5, 1, ...`` (memoised)."""
    return _memo(("spread", mode, seed), lambda: _spread(mode, seed))


def _spread(mode, seed):
    import simplexlab.theory as th
    from simplexlab.shaping import group_rule

    _x64()
    st = spread_settings(mode)
    T, etas, Gs = st["T"], st["etas"], st["G"]
    times = np.arange(0.5, T + 1e-9, 0.5)
    s0 = _state(SPREAD["K"], SPREAD["y0"], SPREAD["z0"], SPREAD["p0"])
    t0 = time.perf_counter()
    bandit = {}
    for eta in etas:  # one program per η (the record stride follows it)
        stride = int(round(0.5 / eta))
        ds = _bandit_runs({**SPREAD, "eta": eta, "max_group_size": max(Gs), "stride": stride,
                           "num_steps": int(round(T / eta))},
                          {"group_size": list(Gs)}, st["seeds"], seed)
        for j, G in enumerate(Gs):
            run = ds.isel(group_size=j)
            bandit[(eta, G)] = {q: run[q].values[:, 1:, 0] for q in ("p", "L_y")}
    t_bandit = time.perf_counter() - t0
    t0 = time.perf_counter()
    theory = {}
    for G in Gs:  # one program per G (η is an array leaf of Diffusion)
        dyn = th.FiniteGroup(group_rule(SPREAD["method"]), group_size=G)
        for eta in etas:
            ln = th.linear_noise(th.Diffusion(dyn, eta=eta), s0, t1=T,
                                 n_save=len(times) + 1)
            theory[(eta, G)] = {q: np.asarray(ln.std[q])[1:] ** 2 for q in ("p", "L_y")}
            theory[(eta, G)]["mean"] = {q: np.asarray(ln.mean[q])[1:] for q in ("p", "L_y")}
    t_theory = time.perf_counter() - t0
    rows = {}
    z = _z(0.95, 2 * len(times))
    for key in bandit:
        b, p = bandit[key], theory[key]
        row = {}
        ok = True
        for q in ("p", "L_y"):
            v, se = variance_and_se(b[q])
            pred = p[q]
            within = np.abs(v - pred) <= z * se
            ok &= bool(np.all(within))
            row[q] = {"variance": v.tolist(), "se": se.tolist(), "predicted": pred.tolist(),
                      "ratio": (v / pred).tolist(), "ratio_se": (se / pred).tolist(),
                      "within": within.tolist(), "mean": b[q].mean(0).tolist(),
                      "predicted_mean": p["mean"][q].tolist()}
        row["holds"] = ok
        rows[key] = row
    return {"settings": {**st, "times": times.tolist()}, "rows": rows, "z": z,
            "seconds": {"bandit": round(t_bandit, 1), "theory": round(t_theory, 1)}}


@experiment(
    "noise-spread",
    reproduces=(
        "no paper figure: the lab's linear-noise approximation of the finite-group bandit (the "
        "covariance ODE dC/dt = JC + CJᵀ + ηΣ along the mean, Σ the exact covariance of one "
        "group step) predicts the across-seed standard deviation of p and L_y at small η; the "
        "figure shows where it breaks (large η, small G)"),
    cost={"quick": "~30 s", "full": "~2.5 min"},
)
def spread(ctx: Context) -> dict:
    """The across-seed spread of ``p`` and ``L_y`` of GRPO on the bandit (K = 3, M = 2, one
    policy, ``P = 1``) against the linear-noise prediction over (η, G)."""
    import matplotlib.pyplot as plt

    from simplexlab.lab import claim_lines, figure_note, legend_outside, shades, use_style

    use_style()
    r = spread_data(ctx.mode, ctx.seed)
    st, rows = r["settings"], r["rows"]
    times = np.asarray(st["times"])
    etas, Gs = st["etas"], st["G"]
    fig, axes = plt.subplots(2, 2, figsize=(13, 9.5), constrained_layout=True)
    colors = dict(zip(Gs, shades("grpo", len(Gs)), strict=True))
    styles = dict(zip(etas, ("-", "--", ":", "-.", (0, (1, 3)))[:len(etas)], strict=True))
    label = {"p": "p (bad mass)", "L_y": r"$L_y = \|y\|^2$"}
    # the time course at a few settings: the smallest and largest G at the smallest, a middle
    # and the largest η (every setting is in the lower panels)
    shown = [(e, G) for e in dict.fromkeys((etas[0], etas[len(etas) // 2], etas[-1]))
             for G in dict.fromkeys((Gs[0], Gs[-1]))]
    for k, q in enumerate(("p", "L_y")):
        ax = axes[0, k]
        for (eta, G), row in ((key, rows[key]) for key in shown):
            v = np.asarray(row[q]["variance"])
            se = np.asarray(row[q]["se"])
            lo = np.sqrt(np.maximum(v - 1.96 * se, 0.0))
            hi = np.sqrt(v + 1.96 * se)
            ax.errorbar(times + 0.02 * (Gs.index(G) - 0.5), np.sqrt(v),
                        yerr=[np.sqrt(v) - lo, hi - np.sqrt(v)], fmt="o", ms=3.5,
                        color=colors[G], capsize=2, lw=0.9)
            ax.plot(np.concatenate([[0.0], times]),
                    np.concatenate([[0.0], np.sqrt(row[q]["predicted"])]), ls=styles[eta],
                    color=colors[G], lw=1.3, label=f"G = {G}, η = {eta:g}")
        ax.set_xlabel("t = step · η")
        ax.set_ylabel(f"across-seed std of {label[q]}")
        ax.set_title(f"{label[q]}: bandit (points, 95 % interval of the variance)\nand the "
                     f"linear-noise prediction (lines); every setting below", fontsize=10)
        ax.grid(alpha=0.3)
        if k == 1:
            legend_outside(ax, fontsize=8)
        ax = axes[1, k]
        for G in Gs:
            x = np.asarray(etas, float)
            ratio = np.array([rows[(e, G)][q]["ratio"][-1] for e in etas])
            rse = np.array([rows[(e, G)][q]["ratio_se"][-1] for e in etas])
            ax.fill_between(x, ratio - 1.96 * rse, ratio + 1.96 * rse, color=colors[G],
                            alpha=0.2, lw=0)
            ax.plot(x, ratio, "o-", color=colors[G], label=f"G = {G}")
        ax.axhline(1.0, color="k", lw=1.0, ls="--", label="prediction")
        ax.set_xscale("log")
        _log_ticks(ax, etas)
        ax.set_xlabel("step size η")
        ax.set_ylabel(f"bandit variance / predicted, {label[q]} at t = {times[-1]:g}")
        ax.set_title("where the approximation breaks: the ratio leaves 1 at large η\n(bands: "
                     "95 % intervals)", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        if k == 1:
            legend_outside(ax, fontsize=8)
    held = "; ".join(f"η = {e:g}: {sum(rows[(e, G)]['holds'] for G in Gs)} of {len(Gs)} G"
                     for e in etas)
    fig.suptitle(
        f"Seed spread of GRPO on the bandit (K = 3, M = 2, p0 = {SPREAD['p0']}, y0 = "
        f"{SPREAD['y0']}, z0 = {SPREAD['z0']}; {st['seeds']} seeds, one group per step), "
        "predicted by the linear-noise approximation", fontsize=11)
    fig.canvas.draw()  # the constrained layout settled: the note goes under it
    figure_note(fig, claim_lines(ctx.name, ctx.out) + [
        f"prediction within the bandit's simultaneous 95 % intervals (p and L_y at every t): "
        f"{held}"],
        differs=["no paper figure: the lab's own prediction (linear-noise approximation of "
                 "the finite-group theory, P = 1 group per step)"])
    ctx.savefig(fig, "noise_spread")
    return {"parameters": {**SPREAD, **{k: list(v) if isinstance(v, tuple) else v
                                        for k, v in st.items()},
                           "optimizer": "sgd", "surrogate": "log_likelihood",
                           "reduction": "mean", "num_groups": 1,
                           "interval": f"bandit variance ± z · SE (fourth-moment SE), z = "
                                       f"{r['z']:.3f}: simultaneous 95 % over p, L_y and the "
                                       "save times"},
            "results": {f"eta={e:g},G={G}": row for (e, G), row in rows.items()},
            "seconds": r["seconds"]}


# ============================================================================ noise-extinction

#: a rare third good mode (y0 = 0.065) on the (3 + 2)-mode bandit; K̂ counts y_j > 0.05
EXTINCTION = {"K": 3, "M": 2, "y0": (0.635, 0.3, 0.065), "z0": (0.6, 0.4), "p0": 0.5,
              "mode_threshold": 0.05}
#: label -> (method, bandit settings beyond the method): G²RPO with schedule B and the
#: neutralizer at λ0 = 1.5 (anti-collision: it protects the rare mode)
EXT_METHODS = {"GRPO": ("grpo", {}), "Dr. GRPO": ("dr_grpo", {}), "RLOO": ("rloo", {}),
               "F-GRPO (γ = 1)": ("f_grpo", {"focal_gamma": 1.0}),
               "G²RPO (B, neutralizer, λ0 = 1.5)": ("g2rpo", {"schedule": "B",
                                                            "neutralize": True,
                                                            "gain": 1.5})}
#: the rules without GRPO's division by the group's std (Dr. GRPO, RLOO) or with F-GRPO's focal
#: weight take steps about half as large at p ≈ 0.5: they run at twice the step size, so that
#: every rule drifts and diffuses about as fast (the step size each ran at is in the results)
EXT_SCALE = {"Dr. GRPO": 2.0, "RLOO": 2.0, "F-GRPO (γ = 1)": 2.0}
#: the setting at which the claim is judged (every method there)
EXT_PAPER = {"group_size": 4, "eta": 0.1}


def extinction_settings(mode: str) -> dict:
    if mode == "full":
        return {"methods": tuple(EXT_METHODS), "G": (4, 8), "etas": (0.1, 0.2), "T": 1.2,
                "n_save": 4, "seeds": 4000, "paths": 1000, "dt": 0.025}
    if mode == "tiny":
        return {"methods": ("GRPO",), "G": (4,), "etas": (0.2,), "T": 1.2, "n_save": 4,
                "seeds": 1200, "paths": 300, "dt": 0.025}
    return {"methods": ("GRPO", "G²RPO (B, neutralizer, λ0 = 1.5)"), "G": (4,),
            "etas": (0.1, 0.2), "T": 1.2, "n_save": 4, "seeds": 2000, "paths": 400,
            "dt": 0.025}


def _rule(method: str, extra: dict):
    """The rule of ``method`` with the bandit's settings ``extra`` (its parameters; G²RPO's
    schedule): the same rule the bandit runs, with the default step time (no warm-up)."""
    from simplexlab.shaping import METHODS, GainSchedule, group_rule

    params = {k: v for k, v in extra.items() if k in METHODS[method].params}
    kw = {}
    if "schedule" in extra:
        kw["schedule"] = GainSchedule(kind=extra["schedule"], neutralize=extra["neutralize"],
                                      gain=extra["gain"])
    return group_rule(method, params=params, **kw)


def extinction_data(mode: str = "quick", seed: int = 0) -> dict:
    """Per (method, G, η): the probability that the rare good mode's ``y`` has fallen to the
    ``K̂`` threshold by each save point (first passage on the save grid) and ``E[K̂]`` at the
    last, from the SDE ensemble and from the bandit, with their standard errors (memoised)."""
    return _memo(("extinction", mode, seed), lambda: _extinction(mode, seed))


def _extinction(mode, seed):
    import jax

    import simplexlab.theory as th

    _x64()
    st = extinction_settings(mode)
    T, n_save, thr = st["T"], st["n_save"], EXTINCTION["mode_threshold"]
    K = EXTINCTION["K"]
    s0 = _state(K, EXTINCTION["y0"], EXTINCTION["z0"], EXTINCTION["p0"])
    dt_save = T / (n_save - 1)
    rows = {}
    seconds = {"bandit": 0.0, "sde": 0.0}
    for label in st["methods"]:
        method, extra = EXT_METHODS[label]
        scale = EXT_SCALE.get(label, 1.0)
        run_etas = [scale * e for e in st["etas"]]
        t0 = time.perf_counter()
        for G in st["G"]:  # one program per G (η is an array leaf of Diffusion)
            dyn = th.FiniteGroup(_rule(method, extra), group_size=G)
            for eta, run_eta in zip(st["etas"], run_etas, strict=True):
                paths = th.sde_paths(th.Diffusion(dyn, eta=run_eta), s0, t1=T,
                                     num_paths=st["paths"], n_save=n_save, dt=st["dt"],
                                     key=jax.random.fold_in(jax.random.key(seed), 7))
                surv = th.mode_survival(paths, threshold=thr)
                rows[(label, G, eta)] = {
                    "eta_run": run_eta,
                    "sde": {"ever": np.asarray(surv.ever)[:, K - 1].tolist(),
                            "ever_se": np.asarray(surv.ever_stderr)[:, K - 1].tolist(),
                            "K_hat": float(surv.expected_modes[-1]),
                            "K_hat_se": float(surv.expected_modes_stderr[-1]),
                            "y_mean": np.asarray(paths.y)[:, :, K - 1].mean(0).tolist()}}
        seconds["sde"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        # one program per method: every (η, G) recorded each step, read at the save points
        ds = _bandit_runs({**EXTINCTION, "method": method, **extra,
                           "max_group_size": max(st["G"]), "stride": 1,
                           "num_steps": int(round(T / min(run_etas)))},
                          {"eta": run_etas, "group_size": list(st["G"])},
                          st["seeds"], seed)
        for i, (eta, run_eta) in enumerate(zip(st["etas"], run_etas, strict=True)):
            at = np.rint(np.arange(n_save) * dt_save / run_eta).astype(int)
            for j, G in enumerate(st["G"]):
                run = ds.isel(eta=i, group_size=j)
                y = run["y"].values[:, at, 0, K - 1]  # (seed, save point)
                k_hat = run["K_hat"].values[:, at[-1], 0]
                ever = np.maximum.accumulate(y <= thr, axis=1).mean(0)
                n = y.shape[0]
                rows[(label, G, eta)]["bandit"] = {
                    "ever": ever.tolist(), "ever_se": np.sqrt(ever * (1 - ever) / n).tolist(),
                    "K_hat": float(k_hat.mean()),
                    "K_hat_se": float(k_hat.std(ddof=1) / np.sqrt(n)),
                    "y_mean": y.mean(0).tolist()}
        seconds["bandit"] += time.perf_counter() - t0
    z = _z(0.95, 2)
    for row in rows.values():
        s, b = row["sde"], row["bandit"]
        d_ext = s["ever"][-1] - b["ever"][-1]
        se_ext = math.hypot(s["ever_se"][-1], b["ever_se"][-1])
        d_k = s["K_hat"] - b["K_hat"]
        se_k = math.hypot(s["K_hat_se"], b["K_hat_se"])
        row.update({"extinct_diff": d_ext, "extinct_diff_se": se_ext, "K_hat_diff": d_k,
                    "K_hat_diff_se": se_k,
                    "holds": bool(abs(d_ext) <= z * se_ext and abs(d_k) <= z * se_k)})
    return {"settings": st, "times": (np.arange(n_save) * dt_save).tolist(), "rows": rows,
            "z": z, "seconds": {k: round(v, 1) for k, v in seconds.items()}}


@experiment(
    "noise-extinction",
    reproduces=(
        "no paper figure: the lab's prediction of mode extinction (the 'diversity collapse' by "
        "noise) from the SDE ensemble of the finite-group theory (dθ = f dt + √η Σ^½ dW): the "
        "probability that a rare good mode's y falls to the K̂ threshold by T and E[K̂(T)] "
        "against the bandit, for GRPO, Dr. GRPO, RLOO, F-GRPO and G²RPO"),
    cost={"quick": "~30 s", "full": "~10 min"},
)
def extinction(ctx: Context) -> dict:
    """A rare good mode (y0 = 0.065, K̂ threshold 0.05) under each rule on the bandit (K = 3,
    M = 2): its extinction probability by t and E[K̂(T)], SDE ensemble against the bandit."""
    import matplotlib.pyplot as plt

    from simplexlab.lab import claim_lines, figure_note, legend_outside, method_style, use_style

    use_style()
    r = extinction_data(ctx.mode, ctx.seed)
    st, rows, times = r["settings"], r["rows"], np.asarray(r["times"])
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.2), constrained_layout=True)
    color = {lab: method_style(EXT_METHODS[lab][0]).color for lab in st["methods"]}
    ax = axes[0]
    G0 = EXT_PAPER["group_size"] if EXT_PAPER["group_size"] in st["G"] else max(st["G"])
    e0 = max(st["etas"])
    for lab in st["methods"]:
        row = rows[(lab, G0, e0)]
        b, s = row["bandit"], row["sde"]
        ax.plot(times, s["ever"], "-", color=color[lab], lw=1.6, label=f"{lab}: SDE")
        ax.errorbar(times, b["ever"], yerr=1.96 * np.asarray(b["ever_se"]), fmt="o", ms=4,
                    color=color[lab], capsize=2, label=f"{lab}: bandit, 95 %")
    ax.set_xlabel("t = step · η")
    ax.set_ylabel(f"P(rare mode's y ≤ {EXTINCTION['mode_threshold']:g} by t)")
    ax.set_title(f"(a) extinction by t at G = {G0}, η = {e0:g} (rules at 2× marked so in "
                 "(b, c))", fontsize=10)
    ax.grid(alpha=0.3)
    legend_outside(ax, where="below", fontsize=8, ncol=2)
    for k, (key, se_key, name) in enumerate((
            ("ever", "ever_se", f"P(extinct by T = {st['T']:g})"),
            ("K_hat", "K_hat_se", r"$E[\hat K(T)]$"))):
        ax = axes[k + 1]
        lo, hi = np.inf, -np.inf
        for (lab, G, eta), row in rows.items():
            b, s = row["bandit"], row["sde"]
            x = b[key][-1] if key == "ever" else b[key]
            y = s[key][-1] if key == "ever" else s[key]
            xe = 1.96 * (b[se_key][-1] if key == "ever" else b[se_key])
            ye = 1.96 * (s[se_key][-1] if key == "ever" else s[se_key])
            mk = "o" if eta == min(st["etas"]) else "s"
            ax.errorbar([x], [y], xerr=[xe], yerr=[ye], fmt=mk, color=color[lab], ms=6,
                        capsize=2, mfc="none" if G != max(st["G"]) else color[lab],
                        label=f"{lab}, G = {G}, η = {row['eta_run']:g}" + ("" if row["holds"] else
                                                               " (outside)"))
            lo, hi = min(lo, x - xe, y - ye), max(hi, x + xe, y + ye)
        pad = 0.05 * (hi - lo + 1e-9)
        ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], "k--", lw=1, label="SDE = bandit")
        ax.set_xlabel(f"bandit: {name}")
        ax.set_ylabel(f"SDE ensemble: {name}")
        ax.set_title(f"({'bc'[k]}) {name}: every rule, G and η (95 % intervals)", fontsize=10)
        ax.grid(alpha=0.3)
        if k == 1:
            legend_outside(ax, fontsize=7)
    held = sum(row["holds"] for row in rows.values())
    fig.suptitle(
        f"Mode extinction by noise: a rare good mode (y0 = {EXTINCTION['y0']}, p0 = "
        f"{EXTINCTION['p0']}, K̂ threshold {EXTINCTION['mode_threshold']:g}; the mean keeps "
        f"it above the threshold to t = {st['T']:g}), SDE ensemble of the theory "
        f"({st['paths']} paths) against the bandit ({st['seeds']} seeds)", fontsize=10)
    fig.canvas.draw()  # the constrained layout settled: the note goes under it
    figure_note(fig, claim_lines(ctx.name, ctx.out) + [
        f"SDE within the bandit's interval (extinction by T and E[K̂(T)], simultaneous 95 %) "
        f"at {held} of {len(rows)} (rule, G, η) points; first passage read on the save grid "
        f"t = {', '.join(f'{t:g}' for t in times)} for both"],
        differs=["no paper figure: the lab's own prediction (Euler–Maruyama on a virtual "
                 f"Brownian tree, step {st['dt']:g}; P = 1 group per step); "
                 + ", ".join(f"{lab} at {k:g}× the step size" for lab, k in EXT_SCALE.items()
                             if lab in st["methods"])
                 + (" (its steps are about half as large)" if any(
                     lab in st["methods"] for lab in EXT_SCALE) else "")])
    ctx.savefig(fig, "noise_extinction")
    return {"parameters": {**EXTINCTION, **{k: list(v) if isinstance(v, tuple) else v
                                            for k, v in st.items()},
                           "methods": {lab: {"method": EXT_METHODS[lab][0],
                                             **EXT_METHODS[lab][1],
                                             "eta_scale": EXT_SCALE.get(lab, 1.0)}
                                       for lab in st["methods"]},
                           "times": r["times"], "optimizer": "sgd", "num_groups": 1},
            "results": {f"{lab}|G={G}|eta={eta:g}": row for (lab, G, eta), row in rows.items()},
            "seconds": r["seconds"]}


# ============================================================================ noise-second-order

#: the finite-group ladder's η panel (experiments/finite_group_ladder.py): K = 3, M = 2, the
#: start STATES[0], G = 4, t = 1, ..., 4; its systems "grpo" and "neutral_B"
SECOND_G, SECOND_T = 4, 4.0
#: the group size of the full run's second ladder, where the second-order slope is resolved:
#: the seeds' noise shrinks with G (the step covariance is about 1/G) while the discrete steps'
#: O(η²) does not, so 2^21 seeds separate the second-order error from the noise down to
#: η = 1/4 (at G = 4, 65,536 seeds do only at η = 1)
SLOPE_G = 32
#: the theories compared: (label, Diffusion's modified drift, linear_noise's mean correction)
ORDERS = (("ODE (first order)", False, False),
          ("modified drift f − (η/2)(∂f)f alone", True, False),
          ("second-order mean (modified drift + noise shift)", True, True))


def second_settings(mode: str, G: int = SECOND_G) -> dict:
    """The ladder at group size ``G`` (:data:`SECOND_G`; :data:`SLOPE_G` in full mode only):
    ``etas`` (each ``1/η`` a whole number: the ladder's times t = 1, ..., T are steps),
    ``seeds``, the theories ``orders`` (indices into :data:`ORDERS`), ``flip`` (full mode: the
    flip thresholds too)."""
    if G not in (SECOND_G, SLOPE_G) or (G == SLOPE_G and mode != "full"):
        raise ValueError(f"second_settings: no ladder at G = {G!r} in {mode!r} mode (G = "
                         f"{SECOND_G}; G = {SLOPE_G} in full mode)")
    if G == SLOPE_G:  # the full ladder's systems and theories at more seeds and η
        return {**second_settings(mode), "etas": (1.0, 1 / 2, 1 / 3, 1 / 4, 1 / 6, 1 / 8),
                "seeds": 2**21}
    if mode == "full":
        return {"systems": ("grpo", "neutral_B"), "etas": (1.0, 0.5, 0.25, 0.125, 0.0625),
                "seeds": 65536, "orders": (0, 1, 2), "flip": True}
    if mode == "tiny":  # the claim's two theories only
        return {"systems": ("grpo",), "etas": (0.5, 0.25), "seeds": 8192, "orders": (0, 2),
                "flip": False}
    return {"systems": ("grpo",), "etas": (0.5, 0.25), "seeds": 16384, "orders": (0, 1, 2),
            "flip": False}


def _ladder():
    from simplexlab.lab import load_experiment_module

    return load_experiment_module("finite_group_ladder")


def second_ladder_data(mode: str = "quick", seed: int = 0, G: int = SECOND_G) -> dict:
    """Per system and η of :func:`second_settings` at group size ``G``: the bandit's seed-mean
    error (the ladder's sup over t = 1..T of max(|Δp|, |ΔL_y|), its 95 % interval and noise
    floor) against each theory of :data:`ORDERS`, and the measured slopes (memoised)."""
    return _memo(("second-ladder", mode, seed, G), lambda: _second_ladder(mode, seed, G))


def _second_ladder(mode, seed, G=SECOND_G):
    import simplexlab.theory as th

    _x64()
    lad = _ladder()
    st = second_settings(mode, G)
    times = np.arange(0.0, SECOND_T + 1e-9, 1.0)
    p0, y0, z0 = lad.STATES[0]
    s0 = _state(lad.K, y0, z0, p0)
    out = {}
    seconds = {"bandit": 0.0, "theory": 0.0}
    for key in st["systems"]:
        t0 = time.perf_counter()
        bandit = {}
        fixed = {**lad.SYSTEMS[key][1], "K": lad.K, "M": lad.M, "y0": y0, "z0": z0, "p0": p0,
                 "max_group_size": G, "group_size": G}
        if st["seeds"] * len(st["etas"]) <= 65536:  # one program: every step recorded
            ds = _bandit_runs({**fixed, "stride": 1,
                               "num_steps": int(round(SECOND_T / min(st["etas"])))},
                              {"eta": list(st["etas"])}, st["seeds"], seed)
            for i, eta in enumerate(st["etas"]):
                at = np.rint(times[1:] / eta).astype(int)
                bandit[eta] = np.concatenate([ds[q].values[i][:, at, 0] for q in ("p", "L_y")],
                                             -1)
        else:  # one program per η (the record stride follows it)
            for eta in st["etas"]:
                ds = _bandit_runs({**fixed, "eta": eta, "stride": int(round(1.0 / eta)),
                                   "num_steps": int(round(SECOND_T / eta))}, {}, st["seeds"],
                                  seed)
                bandit[eta] = np.concatenate([ds[q].values[:, 1:, 0] for q in ("p", "L_y")],
                                             -1)
        seconds["bandit"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        dyn, _ = lad._systems(key, G)  # the bandit's own finite-group system
        rows = {eta: {} for eta in st["etas"]}
        orders = [ORDERS[i] for i in st["orders"]]
        for label, modified, corrected in orders:
            for eta in st["etas"]:
                ln = th.linear_noise(th.Diffusion(dyn, eta=eta, modified=modified), s0,
                                     t1=SECOND_T, n_save=len(times), rtol=1e-9, atol=1e-12,
                                     mean_correction=corrected)
                ref = np.concatenate([np.asarray(ln.mean[q])[1:] for q in ("p", "L_y")])
                rows[eta][label] = lad._sup_error(bandit[eta], ref)
        seconds["theory"] += time.perf_counter() - t0
        slopes = {}
        for label, _, _ in orders:
            e = np.array([rows[eta][label]["error"] for eta in st["etas"]])
            noise = np.array([rows[eta][label]["noise"] for eta in st["etas"]])
            res = e > 2 * noise  # resolved above the seeds' noise
            x = np.log(np.asarray(st["etas"], float))
            slopes[label] = {
                "all": float(np.polyfit(x, np.log(e), 1)[0]),
                "resolved": (float(np.polyfit(x[res], np.log(e[res]), 1)[0])
                             if res.sum() >= 2 else None),
                "resolved_etas": [float(v) for v in np.asarray(st["etas"])[res]]}
        out[key] = {"rows": rows, "slopes": slopes}
    return {"settings": st, "systems": out,
            "seconds": {k: round(v, 1) for k, v in seconds.items()}}


#: the flip points the second-order mean is computed at: every G of finite-group-flip's prompt
#: draws
FLIP_SECOND_G = (8, 16, 32)
#: the table bound of the flips' finite-group systems: at G = 32 the exact covariance of
#: G²RPO's step (K = 6, M = 2) needs 8.7 million table entries (0.56 GB) per evaluation, above
#: the default 4 million; a prompt's solve over T = 100 then takes about 8 s on the CPU
FLIP_MAX_SIZE = 10_000_000


def _committed(root, name: str) -> dict:
    import json
    from pathlib import Path

    path = Path(root) / "figures" / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"figures/{name}.json (run: simplexlab reproduce {name} "
                                "--full)")
    rec = json.loads(path.read_text())
    if rec.get("mode") != "full":
        raise ValueError(f"figures/{name}.json is a {rec.get('mode')} run; the comparison "
                         "needs the full one")
    return rec


def second_order_flip(G: int, gain: float, st: dict, instance: int) -> dict:
    """The second-order mean's prompt-mean ``ΔL_y`` over the run at the collision setting
    ``st`` of ``finite-group-flip`` (G²RPO schedule B with the neutralizer, K = 6, M = 2,
    p0 = 0.7) at base gain ``gain`` for the prompts' draw ``instance`` (``dLy``): one
    ``linear_noise(Diffusion(..., modified=True), mean_correction=True)`` solve per prompt;
    and, from the same solves, the predicted standard error of the bandit's estimate of it
    (``se``: the mean over ``st["prompts"]`` independent prompts and ``st["seeds"]`` seeds, so
    ``√(Σ_j Var ΔL_y,j / seeds) / prompts``, ``Var ΔL_y,j`` the prompt's variance of ``L_y``
    at ``T``: the seeds start together)."""
    import jax

    import simplexlab.theory as th
    from simplexlab.sim import Bandit

    _x64()
    reg = _regimes()
    c = reg._g2().COLLISION
    sim = Bandit(K=c["K"], M=c["M"], method="g2rpo", schedule=c["schedule"],
                 neutralize=c["neutralize"], num_prompts=st["prompts"], max_group_size=G)
    dyn, s0 = sim.finite_group({"group_size": G, "eta": st["eta"], "p0": c["p0"],
                                "gain": float(gain), "instance": instance},
                               max_size=FLIP_MAX_SIZE)
    d = th.Diffusion(dyn, eta=st["eta"], modified=True)
    T = st["steps"] * st["eta"]
    out, var = [], []
    for j in range(st["prompts"]):
        ln = th.linear_noise(d, jax.tree_util.tree_map(lambda a, j=j: a[j], s0), t1=T,
                             n_save=2, rtol=reg.RTOL, atol=reg.ATOL, mean_correction=True)
        out.append(float(ln.mean["L_y"][-1] - ln.mean["L_y"][0]))
        var.append(float(ln.std["L_y"][-1]) ** 2)
    return {"dLy": float(np.mean(out)),
            "se": float(np.sqrt(np.sum(var) / st["seeds"]) / st["prompts"])}


def predicted_half_width(gains, dly, flip: float, se: float) -> float | None:
    """The half-width of a 95 % interval on the flip gain that the seeds' noise alone gives:
    ``1.96 · se / |dΔL_y/dλ0|``, the slope of ``dly`` (on ``gains``) across the bracket that
    holds ``flip`` (``None`` where ``flip`` is outside the gains or the slope is 0)."""
    if flip is None:
        return None
    g, v = np.asarray(gains, float), np.asarray(dly, float)
    i = int(np.searchsorted(g, flip)) - 1
    if i < 0 or i + 1 >= g.size:
        return None
    slope = (v[i + 1] - v[i]) / (g[i + 1] - g[i])
    return None if slope == 0 else float(1.96 * se / abs(slope))


def _regimes():
    from simplexlab.lab import load_experiment_module

    return load_experiment_module("finite_group_regimes")


def second_flip_data(root, seed: int = 0, *, log=print) -> dict:
    """The flip thresholds of ``finite-group-flip`` (its committed full run: the bandit's flip
    and bootstrap interval per prompt draw and G) against the theory read like the bandit
    (linear interpolation of the prompt-mean ΔL_y on the bandit's gains), first order and with
    the second-order mean: the latter is the first order's ΔL_y at the bandit's gains shifted
    by the second-order correction computed at the first order's crossing (the correction
    varies little across one bracket of gains), at the group sizes :data:`FLIP_SECOND_G`."""
    reg = _regimes()
    rec = _committed(root, "finite-group-flip")
    dr = rec["parameters"]["prompt_draws"]
    st = {k: dr[k] for k in ("gains", "G", "prompts", "seeds", "eta", "steps")}
    bgains = np.asarray(st["gains"], float)
    gmax = float(bgains.max())
    rows = []
    for inst, comp in rec["results"]["prompt_draws"]["comparison"].items():
        for row in comp:
            G = int(row["group_size"])
            if G not in dr["G"]:
                continue
            t0 = time.perf_counter()
            plain = reg.theory_dly(G, bgains, st, instance=int(inst))
            te = reg.crossing(bgains, plain)
            entry = {"instance": int(inst), "group_size": G, "bandit": row["bandit"],
                     "first_order": reg.flip_row(G, row["bandit"],
                                                 {"flip": te, "flip_bandit_estimator": te},
                                                 gmax),
                     "first_order_dLy": plain.tolist()}
            if G in FLIP_SECOND_G and te is not None:
                at = float(reg.theory_dly(G, [te], st, instance=int(inst))[0])
                second = second_order_flip(G, te, st, int(inst))
                delta = second["dLy"] - at
                corrected = plain + delta
                tc = reg.crossing(bgains, corrected)
                x, lo, hi = row["bandit"]
                entry.update({"correction": delta, "correction_at_gain": te,
                              "predicted_se": second["se"],
                              "predicted_half_width": (None if tc is None else
                                                       predicted_half_width(
                                                           bgains, corrected, tc, second["se"])),
                              "bandit_half_width": (None if x is None or hi is None
                                                    else (hi - lo) / 2),
                              "second_order": reg.flip_row(
                                  G, row["bandit"], {"flip": tc, "flip_bandit_estimator": tc},
                                  gmax),
                              "second_order_dLy": corrected.tolist()})
            elif G in FLIP_SECOND_G:  # no first-order flip on the grid: ΔL_y keeps its sign
                entry["second_order"] = entry["first_order"]
                entry["correction"] = None
            entry["seconds"] = round(time.perf_counter() - t0, 1)
            rows.append(entry)
            if log is not None:
                so = entry.get("second_order", {}).get("theory_bandit_estimator")
                log(f"[noise-second-order] draw {inst}, G = {G}: bandit {row['bandit']}, first "
                    f"order {te}, second order {so} ({entry['seconds']} s)")
    return {"settings": st, "rows": rows, "source": "figures/finite-group-flip.json",
            "source_revision": rec["provenance"].get("git_revision")}


# ============================================================================ noise-optimizers

#: the small-step Adam check (GRPO, K = 3, M = 2, G = 8, π0 = (0.15, 0.1, 0.05 | 0.4, 0.3))
OPT_LADDER = {"method": "grpo", "K": 3, "M": 2, "y0": (0.5, 1 / 3, 1 / 6), "z0": (4 / 7, 3 / 7),
              "p0": 0.7, "group_size": 8}
#: SC App. H on the bandit: two good labels (SC's Cat and Persian for a Persian image) and two
#: bad, raw rewards (SC Fig. 4's estimator); collapse: π(leading good) = (1 − p) max y ≥ 0.95.
#: The toy starts uniform (W = 0); from a uniform y the mean flow never leaves it, so the bandit
#: starts from y0 = (0.6, 0.4)
SC_H = {"method": "raw", "K": 2, "M": 2, "y0": (0.6, 0.4), "z0": (0.5, 0.5), "p0": 0.5}
SC_COLLAPSED = 0.95
#: SC App. H's optimizers beside SGD (optax defaults; momentum β = 0.9) and the paper's settings
SC_OPTIMIZERS = ("momentum", "adamw")
SC_PAPER = {"group_size": 16, "eta": 1.0}


def optimizer_settings(mode: str) -> dict:
    if mode == "full":
        return {"ladder": {"adam": (2e-4, 1e-4, 5e-5), "momentum": (1.6e-2, 8e-3, 4e-3, 2e-3)},
                "t": {"adam": 2.0, "momentum": 1.0}, "seeds": {"adam": 256, "momentum": 4096},
                "sc": {"G": (4, 8, 16, 64), "etas": (0.1, 1.0), "steps": 500, "seeds": 64}}
    if mode == "tiny":
        return {"ladder": {"adam": (2e-4, 1e-4, 5e-5)}, "t": {"adam": 0.5}, "seeds": {"adam": 32},
                "sc": {"G": (16,), "etas": (1.0,), "steps": 100, "seeds": 16}}
    return {"ladder": {"adam": (2e-4, 1e-4, 5e-5), "momentum": (1.6e-2, 8e-3, 4e-3)},
            "t": {"adam": 0.5, "momentum": 0.5}, "seeds": {"adam": 64, "momentum": 1024},
            "sc": {"G": (16,), "etas": (1.0,), "steps": 200, "seeds": 16}}


def optimizer_ladder_data(mode: str = "quick", seed: int = 0) -> dict:
    """Per optimizer of :func:`optimizer_settings` and η: the bandit's (optax) seed-mean good
    mass ``1 − p`` at ``t`` with its 95 % interval, the optimizer's small-step field there and
    the SGD field's, the error and its measured order in η (memoised)."""
    return _memo(("opt-ladder", mode, seed), lambda: _optimizer_ladder(mode, seed))


def _optimizer_ladder(mode, seed):
    import jax

    import simplexlab as sl
    import simplexlab.theory as th
    from simplexlab.shaping import group_rule
    from simplexlab.sim import Bandit

    _x64()
    st = optimizer_settings(mode)
    c = OPT_LADDER
    s0 = _state(c["K"], c["y0"], c["z0"], c["p0"])
    out = {}
    t0 = time.perf_counter()
    for opt, etas in st["ladder"].items():
        t = st["t"][opt]
        sim = Bandit(K=c["K"], M=c["M"], method=c["method"], num_prompts=st["seeds"][opt],
                     max_group_size=c["group_size"], y0=c["y0"], z0=c["z0"], optimizer=opt)
        # one program for every η: the run advanced by a traced number of steps
        run = jax.jit(lambda s, q, n, sim=sim: jax.lax.fori_loop(
            0, n, lambda i, x: sim.step(x, q), s))
        rows = []
        for eta in etas:
            params = {**sim.default_params(), "group_size": float(c["group_size"]),
                      "eta": eta, "p0": c["p0"]}
            # the optimizer's small-step field, as Bandit.finite_group builds it (optax's
            # defaults; momentum's transient at this η), on the rule without a step time
            limit = th.optimizer_limit(opt, **({"eta": eta} if opt == "momentum" else {}))
            dyn = th.FiniteGroup(group_rule(c["method"]), group_size=c["group_size"],
                                 optimizer=limit)
            field = 1.0 - float(sl.solve(dyn, s0, t1=t, n_save=2).p[-1])
            st0 = sim.init(jax.random.fold_in(jax.random.key(seed), 11), params)
            good = 1.0 - np.asarray(sim.observe(run(st0, params, int(round(t / eta)))).p)
            m, h = float(good.mean()), float(1.96 * good.std(ddof=1) / np.sqrt(good.size))
            rows.append({"eta": eta, "lag": float(limit.lag(eta)), "bandit": m,
                         "half": h, "field": field, "error": abs(m - field)})
        e = np.array([r["error"] for r in rows])
        sgd = sl.solve(th.FiniteGroup(group_rule(c["method"]), group_size=c["group_size"]),
                       s0, t1=t, n_save=2)
        out[opt] = {"t": t, "rows": rows, "sgd_field": 1.0 - float(sgd.p[-1]),
                    "order": float(np.polyfit(np.log(etas), np.log(np.maximum(e, 1e-12)),
                                              1)[0]),
                    "shrinks": bool(np.all(np.diff(e) < 0))}
    return {"settings": st, "optimizers": out, "seconds": round(time.perf_counter() - t0, 1)}


def sc_collapse_data(mode: str = "quick", seed: int = 0) -> dict:
    """SC App. H on the bandit (:data:`SC_H`): per optimizer (SGD, momentum, AdamW), G and η,
    the theory's collapse step (the optimizer's small-step field solved to the horizon,
    ``t*/η``; censored there) and the bandit's collapse step per seed (first recorded step with
    π(leading good) ≥ 0.95; censored at the horizon), and each verdict on "accelerates collapse
    against SGD at the same η" (memoised)."""
    return _memo(("sc-collapse", mode, seed), lambda: _sc_collapse(mode, seed))


def _lead(p, y):
    """π(leading good) = (1 − p) max y."""
    return (1.0 - np.asarray(p)) * np.max(np.asarray(y), -1)


def _verdict_theory(opt_steps, sgd_steps, horizon):
    if opt_steps >= horizon and sgd_steps >= horizon:
        return "no collapse"
    if opt_steps < 0.95 * sgd_steps:
        return "accelerates"
    return "slows" if opt_steps > 1.05 * sgd_steps else "no difference"


def _verdict_bandit(lo, hi, opt_t, sgd_t, horizon):
    if np.all(opt_t >= horizon) and np.all(sgd_t >= horizon):
        return "no collapse"
    if hi < 0:
        return "accelerates"
    return "slows" if lo > 0 else "no difference"


def _sc_collapse(mode, seed):
    import simplexlab as sl
    import simplexlab.theory as th
    from simplexlab.lab import first_event, paired_ci
    from simplexlab.shaping import group_rule

    _x64()
    st = optimizer_settings(mode)["sc"]
    c = SC_H
    H = st["steps"]
    s0 = _state(c["K"], c["y0"], c["z0"], c["p0"])
    t0 = time.perf_counter()
    theory, bandit = {}, {}
    for opt in ("sgd", *SC_OPTIMIZERS):
        for G in st["G"]:
            for eta in st["etas"]:
                # the optimizer's small-step field as Bandit.finite_group builds it (optax's
                # defaults, momentum's transient at this η), on the rule without a step time
                limit = None if opt == "sgd" else th.optimizer_limit(
                    opt, **({"eta": eta} if opt == "momentum" else {}))
                dyn = th.FiniteGroup(group_rule(c["method"]), group_size=G, optimizer=limit)
                ts = np.arange(0, H + 1) * eta
                sol = sl.solve(dyn, s0, t1=float(ts[-1]), saveat=ts)
                lead = _lead(sol.p, sol.y)
                hit = np.flatnonzero(lead >= SC_COLLAPSED)
                theory[(opt, G, eta)] = int(hit[0]) if hit.size else H
        ds = _bandit_runs({**c, "optimizer": opt, "max_group_size": max(st["G"]),
                           "num_steps": H, "stride": 1},
                          {"group_size": list(st["G"]), "eta": list(st["etas"])},
                          st["seeds"], seed)
        lead = _lead(ds["p"].values[..., 0], ds["y"].values[..., 0, :])  # (G, η, seed, step)
        t = first_event(lead, ds["step"].values, SC_COLLAPSED)
        for j, G in enumerate(st["G"]):
            for k, eta in enumerate(st["etas"]):
                bandit[(opt, G, eta)] = np.minimum(t[j, k], H)
    rows = {}
    for opt in SC_OPTIMIZERS:
        for G in st["G"]:
            for eta in st["etas"]:
                a, b = bandit[(opt, G, eta)], bandit[("sgd", G, eta)]
                m, lo, hi = paired_ci(a, b) if np.any(a != b) else (0.0, 0.0, 0.0)
                tv = _verdict_theory(theory[(opt, G, eta)], theory[("sgd", G, eta)], H)
                bv = _verdict_bandit(lo, hi, a, b, H)
                rows[(opt, G, eta)] = {
                    "theory_steps": theory[(opt, G, eta)],
                    "theory_sgd_steps": theory[("sgd", G, eta)],
                    "bandit_rmst": float(a.mean()), "bandit_sgd_rmst": float(b.mean()),
                    "bandit_diff": [float(m), float(lo), float(hi)],
                    "bandit_censored": float(np.mean(a >= H)),
                    "theory_verdict": tv, "bandit_verdict": bv,
                    "agree": tv == bv, "informative": not (tv == bv == "no collapse")}
    return {"settings": st, "rows": rows, "horizon": H,
            "seconds": round(time.perf_counter() - t0, 1)}


def _root():
    """The checkout this file belongs to (its committed ``figures/``)."""
    from pathlib import Path

    return Path(__file__).resolve().parent.parent


def _flip_counts(rows, which):
    pts = [r for r in rows if which in r]
    return sum(bool(r[which]["within_interval"]) for r in pts), len(pts)


@experiment(
    "noise-second-order",
    reproduces=(
        "no paper figure: the bandit's O(η) bias of the mean against the finite-group theory "
        "(the ladder of finite-group-ladder, K = 3, M = 2, G = 4; full mode G = 32 too), closed "
        "to O(η²) by the second-order mean (Li, Tai & E's modified drift f − (η/2)(∂f)f and the "
        "noise's shift of the mean ½∂²f:C); full mode: the flip thresholds of "
        "finite-group-flip with it"),
    cost={"quick": "~30 s", "full": "~45 min"},
)
def second_order(ctx: Context) -> dict:
    """The ladder's mean error against η for the first-order ODE, the modified drift alone and
    the second-order mean, with their measured slopes, at G = :data:`SECOND_G` (and, full mode,
    at G = :data:`SLOPE_G`, where the seeds' noise lets the slope be resolved); full mode adds
    the flip thresholds of ``finite-group-flip`` (its committed full run's bandit intervals)
    read with the second-order mean at G = 8, 16 and 32."""
    import matplotlib.pyplot as plt

    from simplexlab.lab import claim_lines, figure_note, legend_outside, use_style

    use_style()
    ladders = {SECOND_G: second_ladder_data(ctx.mode, ctx.seed)}
    st = ladders[SECOND_G]["settings"]
    if ctx.mode == "full":
        ladders[SLOPE_G] = second_ladder_data(ctx.mode, ctx.seed, G=SLOPE_G)
    flip = second_flip_data(_root(), ctx.seed) if st["flip"] else None
    lad = _ladder()
    n_sys = len(st["systems"])
    fig = plt.figure(figsize=(6.2 * (n_sys + (flip is not None)), 5.6 * len(ladders)),
                     constrained_layout=True)
    gs = fig.add_gridspec(len(ladders), n_sys + (flip is not None))
    colors = dict(zip([o[0] for o in ORDERS], ("C3", "C1", "C0"), strict=True))
    for row, (G, r) in enumerate(ladders.items()):
        lst = r["settings"]
        etas = np.asarray(lst["etas"], float)
        for col, (key, sysr) in enumerate(r["systems"].items()):
            ax = fig.add_subplot(gs[row, col])
            rows = sysr["rows"]
            floor = np.inf
            for label in rows[lst["etas"][0]]:
                e = np.array([rows[eta][label]["error"] for eta in lst["etas"]])
                ci = np.array([rows[eta][label]["ci"] for eta in lst["etas"]])
                floor = min(floor, float(e.min()))
                sl_ = sysr["slopes"][label]
                res = ("" if sl_["resolved"] is None else
                       f", {sl_['resolved']:.2f} where resolved (η ≥ "
                       f"{min(sl_['resolved_etas']):.3g})")
                ax.fill_between(etas, np.maximum(ci[:, 0], 1e-7), ci[:, 1],
                                color=colors[label], alpha=0.18, lw=0)
                ax.loglog(etas, e, "o-", color=colors[label],
                          label=f"{label}: slope {sl_['all']:.2f}{res}")
            noise = np.array([max(rows[eta][lab]["noise"] for lab in rows[eta])
                              for eta in lst["etas"]])
            ax.loglog(etas, 2 * noise, color="0.5", ls=":", lw=1,
                      label="resolved above: 2 × 1.96 SE (the seeds' noise)")
            top = max(rows[lst["etas"][0]][lab]["error"] for lab in rows[lst["etas"][0]])
            ax.loglog(etas, top * etas / etas.max(), "k--", lw=0.8, label="∝ η")
            ax.loglog(etas, 0.5 * top * (etas / etas.max()) ** 2, "k-.", lw=0.8, label="∝ η²")
            _log_ticks(ax, etas)
            ax.set_ylim(bottom=0.3 * min(floor, float(noise.min())))
            ax.set_xlabel("step size η")
            ax.set_ylabel(r"$\sup_t \max(|\Delta p|, |\Delta L_y|)$, bandit seed mean − theory")
            ax.set_title(f"{lad.SYSTEMS[key][0]}, G = {G}, t = 1, …, {SECOND_T:g}\n"
                         f"{lst['seeds']:,} seeds, 95 % intervals", fontsize=10)
            ax.grid(alpha=0.3, which="both")
            legend_outside(ax, where="below", fontsize=8)
    notes = []
    if flip is not None:
        ax = fig.add_subplot(gs[:, -1])
        pts = [p for p in flip["rows"] if "second_order" in p]
        ax.axhspan(-1, 1, color="C3", alpha=0.12, lw=0,
                   label="inside the bandit's bootstrap 95 % interval")
        ax.axhline(0, color="C3", lw=1, label="the bandit's seed-mean flip")
        for k, p in enumerate(pts):
            x, lo, hi = p["bandit"]
            for which, mk, col in (("first_order", "s", "C1"), ("second_order", "o", "C0")):
                v = p[which]["theory_bandit_estimator"]
                if v is None or x is None:
                    continue
                half = (hi - x) if v >= x else (x - lo)
                ax.plot([k + (0.15 if which == "second_order" else -0.15)], [(v - x) / half],
                        mk, mfc="none", color=col, ms=8,
                        label=(None if k else f"theory ({which.replace('_', ' ')}), read "
                                              "like the bandit"))
            if x is None:
                ax.text(k, 0, "no flip\n(both)", ha="center", va="center", fontsize=7)
            else:
                ph = p.get("predicted_half_width")
                ax.text(k, -2.9, f"{x:.3f}\n±{(hi - lo) / 2:.3f}"
                        + ("" if ph is None else f"\npred. ±{ph:.3f}"), ha="center",
                        va="bottom", fontsize=7)
        ax.set_ylim(-3, 3)
        ax.set_xlim(-0.7, len(pts) - 0.3)
        ax.set_xticks(range(len(pts)), [f"draw {p['instance']}\nG = {p['group_size']}"
                                        for p in pts], fontsize=8)
        ax.set_ylabel("theory − bandit flip gain λ0*, in half-widths of the bandit's interval")
        a, n = _flip_counts(flip["rows"], "first_order")
        b, m = _flip_counts(flip["rows"], "second_order")
        fs = flip["settings"]
        ax.set_title(f"finite-group-flip's thresholds (T = {fs['steps'] * fs['eta']:g}, "
                     f"η = {fs['eta']:g}):\n"
                     f"within the bandit's interval: first order {a}/{n}, second order {b}/{m} "
                     f"(G = {', '.join(map(str, FLIP_SECOND_G))})", fontsize=10)
        ax.grid(alpha=0.3)
        legend_outside(ax, where="below", fontsize=8)
        notes.append("flips (the numbers: the bandit's flip gain ± half its bootstrap interval; "
                     "pred.: the half-width the seeds' noise gives, 1.96 SE / |dΔL_y/dλ0|, the SE "
                     "of the bandit's prompt-and-seed mean ΔL_y from the linear-noise "
                     "covariance of the same solves): "
                     f"the bandit's intervals from {flip['source']} (revision "
                     f"{flip['source_revision']}); no flip for λ0 ≤ 4 at draw 0, G = 8 (bandit "
                     "and theory)")
    fig.suptitle("The O(η) bias of the bandit's mean closed to O(η²): the finite-group ODE, "
                 "the modified drift alone and the second-order mean (modified drift + the "
                 "noise's shift ½∂²f:C, linear_noise(..., mean_correction=True))", fontsize=10)
    fig.canvas.draw()  # the constrained layout settled: the note goes under it
    figure_note(fig, claim_lines(ctx.name, ctx.out) + notes,
                differs=["no paper figure: Li, Tai & E's second-order stochastic modified "
                         "equation applied to the finite-group theory (SGD, P = 1)"])
    ctx.savefig(fig, "noise_second_order")

    def ladder_result(r):
        return {key: {"rows": {f"eta={eta:g}": v for eta, v in sysr["rows"].items()},
                      "slopes": sysr["slopes"]} for key, sysr in r["systems"].items()}

    res = {"ladder": ladder_result(ladders[SECOND_G])}
    params = {"K": lad.K, "M": lad.M, "start": lad.STATES[0], "G": SECOND_G, "T": SECOND_T,
              **{k: list(v) if isinstance(v, tuple) else v for k, v in st.items()},
              "orders": [o[0] for o in ORDERS]}
    if SLOPE_G in ladders:
        res["slope_ladder"] = {"group_size": SLOPE_G, **ladder_result(ladders[SLOPE_G])}
        params["slope_ladder"] = {"G": SLOPE_G, **{
            k: list(v) if isinstance(v, tuple) else v
            for k, v in ladders[SLOPE_G]["settings"].items() if k in ("etas", "seeds")}}
    if flip is not None:
        res["flip"] = flip
        res["flip_within"] = {w: _flip_counts(flip["rows"], w)
                              for w in ("first_order", "second_order")}
        res["flip_half_width_ratio"] = {
            f"draw {p['instance']}, G = {p['group_size']}":
                p["predicted_half_width"] / p["bandit_half_width"]
            for p in flip["rows"] if p.get("predicted_half_width") and p.get("bandit_half_width")}
        params["flip_G"] = list(FLIP_SECOND_G)
    seconds = {f"G={G}": r["seconds"] for G, r in ladders.items()}
    return {"parameters": params, "results": res, "seconds": seconds}


@experiment(
    "noise-optimizers",
    reproduces=(
        "SC App. H, Fig. 4 ('momentum and AdamW accelerate collapse'), judged on the "
        "finite-group bandit by the optimizers' small-step fields (theory) and by simulation "
        "side by side; and the η ladder of the Adam and heavy-ball fields against the bandit "
        "with optax's optimizer (the error's order)"),
    cost={"quick": "~60 s", "full": "~4 min"},
)
def optimizers(ctx: Context) -> dict:
    """(a, b) the bandit with optax's Adam and heavy ball (GRPO, K = 3, M = 2, G = 8) against
    the optimizers' small-step fields at decreasing η; (c) SC App. H on the bandit (raw
    rewards, K = 2, M = 2): the collapse step of momentum and AdamW against SGD's, theory and
    simulation."""
    import matplotlib.pyplot as plt

    from simplexlab.lab import claim_lines, figure_note, legend_outside, use_style

    use_style()
    lad = optimizer_ladder_data(ctx.mode, ctx.seed)
    sc = sc_collapse_data(ctx.mode, ctx.seed)
    fig, axes = plt.subplots(1, 3, figsize=(18, 5.4), constrained_layout=True)
    col = {"adam": "C0", "momentum": "C2", "adamw": "C4", "sgd": "0.4"}
    ax = axes[0]
    for opt, v in lad["optimizers"].items():
        eta = np.array([r["eta"] for r in v["rows"]])
        e = np.array([r["error"] for r in v["rows"]])
        h = np.array([r["half"] for r in v["rows"]])
        lags = ", ".join(format(r["lag"], ".2g") for r in v["rows"])
        ax.errorbar(eta, e, yerr=h, fmt="o-", color=col[opt], capsize=3,
                    label=f"{opt} (t = {v['t']:g}): order {v['order']:.2f}, lag η/(1 − β) "
                          f"{lags}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("step size η")
    ax.set_ylabel("|bandit seed mean − field|, good mass 1 − p")
    ax.set_title(f"(a) the bandit follows the optimizer's small-step field as η shrinks\n"
                 f"GRPO, K = 3, M = 2, G = {OPT_LADDER['group_size']}, seeds "
                 f"{lad['settings']['seeds']} (bars: the mean's 95 % half-width)",
                 fontsize=10)
    ax.grid(alpha=0.3, which="both")
    legend_outside(ax, where="below", fontsize=8)
    ax = axes[1]
    drawn = set()
    for k, (opt, v) in enumerate(lad["optimizers"].items()):
        x = np.arange(len(v["rows"])) + 4 * k
        ax.errorbar(x, [r["bandit"] for r in v["rows"]], yerr=[r["half"] for r in v["rows"]],
                    fmt="D", color=col[opt], capsize=3, label=f"bandit, {opt}")
        ax.plot(x, [r["field"] for r in v["rows"]], "_", ms=22, mew=2, color="k",
                label="optimizer's field" if k == 0 else None)
        if v["t"] not in drawn:
            drawn.add(v["t"])
            ax.axhline(v["sgd_field"], color=col["sgd"], ls=":", lw=1,
                       label=f"SGD field at t = {v['t']:g} (what the limit is not)")
        for xx, r in zip(x, v["rows"], strict=True):
            ax.annotate(f"η = {r['eta']:g}", (xx, r["bandit"]), textcoords="offset points",
                        xytext=(0, 9), ha="center", fontsize=7)
    ax.set_xticks([])
    ax.set_ylabel("good mass 1 − p at t")
    ax.set_title("(b) the values: bandit (95 %), the optimizer's field, the SGD field",
                 fontsize=10)
    ax.grid(alpha=0.3)
    legend_outside(ax, where="below", fontsize=8)
    ax = axes[2]
    rows = sc["rows"]
    keys = list(rows)
    for k, key in enumerate(keys):
        r = rows[key]
        opt = key[0]
        m, lo, hi = r["bandit_diff"]
        ax.errorbar([k], [m], yerr=[[m - lo], [hi - m]], fmt="D", color=col[opt], capsize=3,
                    label="bandit (paired 95 %)")
        none = r["theory_verdict"] == "no collapse"
        ax.plot([k + 0.2], [r["theory_steps"] - r["theory_sgd_steps"]], "x" if none else "o",
                mfc="none", ms=8, color=col[opt],
                label=("small-step fields: no collapse by the horizon" if none else
                       "small-step fields (collapse step minus SGD's)"))
    ax.axhline(0.0, color="k", lw=0.8)
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles, strict=True))
    legend_outside(ax, where="below", handles=list(uniq.values()), labels=list(uniq),
                   fontsize=8)
    ax.set_xticks(range(len(keys)), [f"{o}\nG = {G}\nη = {e:g}" for o, G, e in keys],
                  fontsize=7)
    ax.set_ylabel("collapse step minus SGD's at the same η (< 0: accelerates)")
    agree = sum(r["agree"] for r in rows.values() if r["informative"])
    inf = sum(r["informative"] for r in rows.values())
    ax.set_title(f"(c) SC App. H on the bandit (raw rewards, K = 2, M = 2, y0 = {SC_H['y0']})\n"
                 f"verdicts agree at {agree} of {inf} points (horizon {sc['horizon']} steps)",
                 fontsize=10)
    ax.grid(alpha=0.3)
    fig.suptitle("Optimizers in the finite-group theory: the small-step limits of Adam and "
                 "heavy ball, and SC App. H's 'momentum and AdamW accelerate collapse'",
                 fontsize=11)
    from collections import Counter

    def _counts(opt, which):
        c = Counter(r[which] for (o, _, _), r in rows.items() if o == opt)
        return ", ".join(f"{v} × {n}" for v, n in c.items())

    verdicts = "; ".join(
        f"{opt}: verdicts agree at {sum(r['agree'] for (o, _, _), r in rows.items() if o == opt)}"
        f" of {sum(o == opt for o, _, _ in rows)} (theory: {_counts(opt, 'theory_verdict')}; "
        f"bandit: {_counts(opt, 'bandit_verdict')})" for opt in SC_OPTIMIZERS)
    fig.canvas.draw()  # the constrained layout settled: the note goes under it
    figure_note(fig, claim_lines(ctx.name, ctx.out) + [verdicts],
                differs=["SC App. H's classifier toy replaced by the bandit (two good and two "
                         f"bad modes, raw rewards, start y0 = {SC_H['y0']} instead of "
                         f"uniform; collapse π(leading good) ≥ {SC_COLLAPSED}); "
                         f"{sc['settings']['seeds']} seeds"])
    ctx.savefig(fig, "noise_optimizers")
    return {"parameters": {"ladder": {**OPT_LADDER, **{
                               k: v for k, v in lad["settings"].items() if k != "sc"}},
                           "sc": {**SC_H, **sc["settings"], "collapsed": SC_COLLAPSED,
                                  "optimizers": ["sgd", *SC_OPTIMIZERS]}},
            "results": {"ladder": lad["optimizers"],
                        "sc": {f"{o}|G={G}|eta={e:g}": r for (o, G, e), r in rows.items()}},
            "seconds": {"ladder": lad["seconds"], "sc": sc["seconds"]}}
