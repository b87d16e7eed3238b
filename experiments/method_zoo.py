"""Method zoo: ten advantage rules of group-relative RLVR, same bandit, same budget.

GRPO, Dr.GRPO, RLOO, REINFORCE++, F-GRPO (γ = 1), DAPO-IAC (α = 1), GRPO-N, G²RPO (schedule B,
λ0 = 1.5) with and without the bad-mass neutralizer and ProGRPO (α = 0.3) train the finite-group
(K+M)-mode bandit (SPEC C7) from the same initial policies (one ``instance``: the same Dirichlet
draws per prompt), with the same seeds (the same sampling-noise keys), K, M, G, η, number of steps
and prompts, a perfect verifier and plain SGD on the mean-reduced log-likelihood surrogate (the
mean-field setting: ``E[Δθ] = η J(π) A``; Adam would rescale every rule's step per coordinate
and hide the differences in advantage scale that SGD keeps). Each rule is one sweep (its own
compiled program), all with the same keys.

At the end of training, per seed, the prompt mean of: accuracy ``1 − p``; ``L_y = ||y||²``;
``K_eff = 1/L_y`` (:func:`simplexlab.metrics.effective_num_modes`, mean over prompts of
``1/L_y``); retained correct mass ``m_ret`` (F-GRPO eq. 26); and pass@k for k ∈ {1, 8} of the
final policy, exactly: ``1 − p^k`` per prompt (the probability that one of k samples is correct;
the population value that :func:`simplexlab.metrics.pass_at_k`, the unbiased estimator from
``n`` samples, estimates). Reported as mean and 95 % Student-t interval over seeds (clipped to
the metric's range). The seeds drive only the sampling noise: every method and seed starts from
the same ``num_prompts`` initial policies (instance 0), so the intervals say how reproducible a
difference is under sampling noise on this instance, not how it varies across instances.
"""

from __future__ import annotations

import numpy as np

from simplexlab import sweep
from simplexlab.lab import Context, experiment

#: ``(label, method, method settings/parameters)``; every label is unique.
METHODS = (
    ("GRPO", "grpo", {}),
    ("Dr.GRPO", "dr_grpo", {}),
    ("RLOO", "rloo", {}),
    ("REINFORCE++", "reinforce_pp", {}),
    ("F-GRPO γ=1", "f_grpo", {"focal_gamma": 1.0}),
    ("IAC α=1", "iac", {"iac_alpha": 1.0}),
    ("GRPO-N", "grpo_n", {}),
    ("G²RPO B λ0=1.5", "g2rpo", {"gain": 1.5, "schedule": "B", "neutralize": True}),
    ("G²RPO B λ0=1.5 no-neutr.", "g2rpo", {"gain": 1.5, "schedule": "B", "neutralize": False}),
    ("ProGRPO α=0.3", "progrpo", {"progrpo_alpha": 0.3}),
)
#: ``(key, column header, axis label)`` of the reported metrics.
METRICS = (
    ("accuracy", "accuracy 1−p", "accuracy $1-p$"),
    ("L_y", "L_y", r"$L_y=\|y\|^2$"),
    ("K_eff", "K_eff=1/L_y", r"$K_{eff}=1/L_y$"),
    ("m_ret", "m_ret", r"retained correct mass $m_{ret}$"),
    ("pass@1", "pass@1", "pass@1 $=1-p$ (= accuracy)"),
    ("pass@8", "pass@8", "pass@8 $=1-p^8$"),
)
PASS_K = (1, 8)
#: Metrics that end near 1, drawn as their complement on a log axis.
MISS_PLOTTED = {"accuracy": "$p=1-$accuracy", "pass@1": "$1-$pass@1 $=p$",
                "pass@8": "$1-$pass@8 = mean $p^8$"}
#: Sweep batching: ``lax.map`` over runs compiles faster than ``vmap`` here, and compiling the
#: ten programs, not running them, is most of the cost.
BATCHING = "map"

# Student-t 0.975 quantiles for 1..30 degrees of freedom (95 % two-sided interval)
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    """0.975 quantile of Student's t with ``df`` degrees of freedom: the table for df <= 30,
    beyond it 1.96 + 2.4/df (equal to the exact value to 3 decimals at df = 40, 60, 120)."""
    if df < 1:
        return float("nan")
    return _T975[df - 1] if df <= 30 else 1.96 + 2.4 / df


def settings(quick: bool) -> dict:
    if quick:
        return {"K": 6, "M": 2, "G": 16, "eta": 0.1, "steps": 300, "stride": 300,
                "num_prompts": 8, "seeds": 4, "p0": 0.8}
    return {"K": 6, "M": 2, "G": 16, "eta": 0.05, "steps": 2000, "stride": 2000,
            "num_prompts": 32, "seeds": 16, "p0": 0.8}


def fixed(st: dict) -> dict:
    """The settings every method shares (the identical budget)."""
    return {"K": st["K"], "M": st["M"], "max_group_size": st["G"], "group_size": st["G"],
            "num_prompts": st["num_prompts"], "eta": st["eta"], "p0": st["p0"], "instance": 0,
            "delta_fn": 0.0, "delta_fp": 0.0, "optimizer": "sgd",
            "surrogate": "log_likelihood", "reduction": "mean",
            "num_steps": st["steps"], "stride": st["stride"]}


def _slug(label: str) -> str:
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in label).strip("-").lower()


def simulate(ctx: Context, st: dict) -> dict:
    """``{label: Dataset}``, one sweep per method with the same keys (``seed=ctx.seed``)."""
    out = {}
    for label, method, extra in ctx.progress(METHODS, desc="methods"):
        out[label] = sweep.run(
            "bandit", {}, fixed={**fixed(st), "method": method, **extra}, seeds=st["seeds"],
            seed=ctx.seed, out=ctx.out / "cache", name=f"{ctx.name}-{ctx.mode}-{_slug(label)}",
            progress=False, batching=BATCHING)
    return out


def per_seed_metrics(ds, record: int = -1) -> dict[str, np.ndarray]:
    """Prompt means at one record, ``(seeds,)`` per metric."""
    from simplexlab.metrics import effective_num_modes

    at = ds.isel(step=record)
    p = at["p"].values  # (seed, prompt)
    out = {"accuracy": at["accuracy"].values.mean(-1), "L_y": at["L_y"].values.mean(-1),
           "K_eff": np.asarray(effective_num_modes(at["y"].values)).mean(-1),
           "m_ret": at["m_ret"].values.mean(-1)}
    for k in PASS_K:
        out[f"pass@{k}"] = (1.0 - p ** k).mean(-1)
    return out


def per_seed_misses(ds, record: int = -1) -> dict[str, np.ndarray]:
    """``1 −`` the accuracy-type metrics, computed directly (``mean p^k``; ``1 − pass@k`` would
    round to 0 in float64 once ``p^k < 1e-16``), ``(seeds,)`` per metric."""
    p = ds.isel(step=record)["p"].values
    return {"accuracy": p.mean(-1), **{f"pass@{k}": (p ** k).mean(-1) for k in PASS_K}}


#: The range of each metric; intervals are clipped to it.
RANGES = {"accuracy": (0.0, 1.0), "L_y": (0.0, 1.0), "K_eff": (1.0, np.inf),
          "m_ret": (0.0, 1.0), **{f"pass@{k}": (0.0, 1.0) for k in PASS_K}}


def interval(x: np.ndarray, bounds=(-np.inf, np.inf)) -> dict:
    """Mean and 95 % Student-t interval of the mean of ``x`` (one value per seed), clipped to
    ``bounds``."""
    n = x.size
    m = float(x.mean())
    h = t975(n - 1) * float(x.std(ddof=1)) / np.sqrt(n) if n > 1 else float("nan")
    return {"mean": m, "lo": float(max(m - h, bounds[0])), "hi": float(min(m + h, bounds[1]))}


def _cell(v: dict, key: str) -> str:
    d = 4 if key in ("accuracy", "pass@1", "pass@8") else 3
    return f"{v['mean']:.{d}f} [{v['lo']:.{d}f}, {v['hi']:.{d}f}]"


def markdown_table(rows: list[dict], initial: dict) -> str:
    """One row per method, ``mean [lo, hi]``; the last column is ``1 − pass@k`` of the largest
    k (``mean p^k``), which pass@k itself rounds to 1."""
    k = max(PASS_K)
    head = ("| method | " + " | ".join(h for _, h, _ in METRICS)
            + f" | 1−pass@{k} = mean p^{k} |")
    sep = "|" + "---|" * (len(METRICS) + 2)
    lines = [head, sep,
             "| initial policy | " + " | ".join(f"{initial[key]:.4f}" if key in MISS_PLOTTED
                                                else f"{initial[key]:.3f}"
                                                for key, _, _ in METRICS)
             + f" | {1.0 - initial[f'pass@{k}']:.3g} |"]
    for r in rows:
        w = r["miss"][f"pass@{k}"]
        lines.append(f"| {r['method']} | " + " | ".join(_cell(r[key], key) for key, _, _ in METRICS)
                     + f" | {w['mean']:.2e} [{w['lo']:.1e}, {w['hi']:.1e}] |")
    return "\n".join(lines)


@experiment(
    "method-zoo",
    reproduces=(
        "New comparison (no paper has it): GRPO, Dr.GRPO, RLOO, REINFORCE++, F-GRPO, DAPO-IAC, "
        "GRPO-N, G²RPO (schedule B, λ0 = 1.5, with and without the neutralizer) and ProGRPO on "
        "the finite-group (K+M)-mode bandit of SPEC C7 under identical budgets (same instances, "
        "seeds, K, M, G, η, steps, prompts; SGD, perfect verifier): final accuracy, L_y, K_eff, "
        "retained correct mass (F-GRPO eq. 26) and exact pass@1/pass@8 with 95 % seed "
        "intervals."),
    cost={"quick": "~45 s", "full": "~1.5 min"},
)
def run(ctx: Context) -> dict:
    """Trains every rule of :data:`METHODS` on the same bandit instance with the same seeds
    and budget, prints the markdown table of final metrics (mean [95 % t-interval] over seeds
    of the prompt mean; first row: the shared initial policy) and draws one panel per metric
    with methods on the axis and interval error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    st = settings(ctx.quick)
    data = simulate(ctx, st)
    labels = [lab for lab, _, _ in METHODS]
    first = data[labels[0]]
    initial = {k: float(v.mean()) for k, v in per_seed_metrics(first, 0).items()}
    # every method starts from the same policies (same instance): check it, do not assume it
    same_start = max(float(np.max(np.abs(data[lab]["y"].isel(step=0).values
                                         - first["y"].isel(step=0).values))) for lab in labels)
    rows, per_seed = [], {}
    for label, method, extra in METHODS:
        ps = per_seed_metrics(data[label])
        per_seed[label] = {k: v.tolist() for k, v in ps.items()}
        rows.append({"method": label, "rule": method, "settings": dict(extra),
                     **{k: interval(v, RANGES[k]) for k, v in ps.items()},
                     "miss": {k: interval(v, (0.0, 1.0))
                              for k, v in per_seed_misses(data[label]).items()}})
    table = markdown_table(rows, initial)
    title = (f"Method zoo on the (K+M)-mode bandit: K = {st['K']}, M = {st['M']}, "
             f"G = {st['G']}, η = {st['eta']:g} (SGD), {st['steps']} steps, p0 = {st['p0']:g}, "
             f"{st['num_prompts']} prompts × {st['seeds']} seeds, perfect verifier")
    print(f"\n{title}\nfinal metrics, mean [95 % t-interval over {st['seeds']} seeds of the "
          f"prompt mean]\n\n{table}\n", flush=True)

    # ---------------- figure ----------------
    ncol = 3
    nrow = -(-len(METRICS) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.6 * ncol, 4.3 * nrow), squeeze=False)
    x = np.arange(len(labels))
    colors = plt.cm.tab10(np.arange(len(labels)) % 10)
    for ax, (key, _, axis_label) in zip(axes.flat, METRICS, strict=False):
        # accuracy-type metrics end near 1: plot the miss probability 1 − metric on a log axis
        miss = key in MISS_PLOTTED
        for i, r in enumerate(rows):
            v = r[key]
            if miss:
                w = r["miss"][key]
                m, lo, hi = w["mean"], max(w["lo"], 0.5 * w["mean"]), w["hi"]  # log axis: > 0
            else:
                m, lo, hi = v["mean"], v["lo"], v["hi"]
            ax.errorbar(i, m, yerr=[[m - lo], [hi - m]], fmt="o", color=colors[i], ms=6,
                        capsize=4, lw=1.5)
        ax.axhline(1.0 - initial[key] if miss else initial[key], color="gray", ls="--", lw=1,
                   label=f"initial policy ({initial[key]:.3g})")
        if key == "L_y":
            ax.axhline(1.0 / st["K"], color="gray", ls=":", lw=1, label="1/K (uniform)")
        if key == "K_eff":
            ax.axhline(st["K"], color="gray", ls=":", lw=1, label="K (uniform)")
        ax.set_xticks(x, labels, rotation=55, ha="right", fontsize=8)
        if miss:
            ax.set_yscale("log")
            ax.set_ylabel(MISS_PLOTTED[key] + " (log; lower is better)")
            ax.set_title(f"final {axis_label}, plotted as {MISS_PLOTTED[key]}", fontsize=10)
        else:
            ax.set_ylabel(axis_label)
            ax.set_title(f"final {axis_label}", fontsize=10)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=7, loc="best")
    for ax in list(axes.flat)[len(METRICS):]:
        ax.set_visible(False)
    fig.suptitle(title + f"\nmean and 95 % t-interval over seeds of the prompt mean "
                 f"(step {st['steps']}); every method starts from the same {st['num_prompts']} "
                 "initial policies, so the intervals are sampling noise only", fontsize=11)
    fig.tight_layout()
    ctx.savefig(fig, "method_zoo")

    return {
        "parameters": {**fixed(st), "seeds": st["seeds"], "seed": ctx.seed,
                       "methods": [{"label": lab, "method": m, **e} for lab, m, e in METHODS],
                       "pass_k": list(PASS_K), "batching": BATCHING,
                       "initial_composition": "Dirichlet(1) per prompt from instance 0 (the "
                                              "same policies for every method)",
                       "interval": "mean +- t_{0.975, seeds-1} * sd / sqrt(seeds) of the "
                                   "per-seed prompt mean",
                       "pass_at_k": "exact from the final policy: mean over prompts of "
                                    "1 - p^k"},
        "results": {"rows": rows, "table_markdown": table, "initial": initial,
                    "per_seed": per_seed,
                    "max_initial_difference_between_methods": same_start},
    }
