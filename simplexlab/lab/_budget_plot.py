"""The budget planner's figure (matplotlib; no numerics): progress per rollout against ``G`` at
the planned budget, and the compute-optimal ``G*(R)`` over the budget ``R``."""

from __future__ import annotations

import numpy as np

from ._plotting import use_style

__all__ = ["plot_budget"]

#: how each optimizer is drawn
_STYLE = {"sgd": ("#1f77b4", "o", "SGD"), "adam": ("#d62728", "s", "Adam")}


def plot_budget(report, curve):
    """Two panels: the progress per rollout ``Φ*/R`` of each optimizer against ``G`` at the
    report's budget (log axes; the silent fraction dotted on a second axis, ``G*`` marked), and
    ``G*(R)`` over the curve's budgets (log-log; where ``G*`` sits at the grid's edge its marker
    is hollow). Takes :class:`~simplexlab.verify.BudgetReport` and
    :class:`~simplexlab.verify.BudgetCurve` or their ``to_dict()``; returns the figure."""
    import matplotlib.pyplot as plt

    r = report.to_dict() if hasattr(report, "to_dict") else report
    c = curve.to_dict() if hasattr(curve, "to_dict") else curve
    use_style()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    G = np.asarray(r["group_sizes"], float)
    for o in r["optimizers"]:
        colour, marker, name = _STYLE.get(o, ("black", "x", o))
        v = np.array([np.nan if x is None else x for x in r["per_rollout"][o]], float)
        ax.plot(G, v, color=colour, marker=marker, ms=4, label=name)
        if r["best"][o] is not None:
            ax.axvline(r["best"][o], color=colour, ls="--", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("G (rollouts per prompt)")
    ax.set_ylabel("progress per rollout Φ*/R")
    ax.set_title(f"R = {r['budget']} rollouts per step ({r['inputs']['objective']})")
    ax.legend(fontsize=8, frameon=False, loc="lower left")
    tx = ax.twinx()
    tx.plot(G, r["silent"], color="grey", ls=":", lw=1)
    tx.set_ylabel("silent fraction (dotted)", color="grey")
    tx.set_ylim(0, 1)
    budgets = np.asarray(c["budgets"], float)
    sizes = c["group_sizes"]
    for o in c["optimizers"]:
        colour, marker, name = _STYLE.get(o, ("black", "x", o))
        best = np.array([np.nan if b is None else b for b in c["best"][o]], float)
        bx.plot(budgets, best, color=colour, lw=1, label=name)
        edge = np.isin(best, [sizes[0], sizes[-1]])
        bx.scatter(budgets[~edge], best[~edge], color=colour, marker=marker, s=24, zorder=3)
        bx.scatter(budgets[edge], best[edge], facecolors="none", edgecolors=colour,
                   marker=marker, s=24, zorder=3)
    bx.set_xscale("log", base=2)
    bx.set_yscale("log", base=2)
    bx.set_xlabel("budget R (rollouts per step)")
    bx.set_ylabel("compute-optimal G*")
    bx.set_title("G*(R) (hollow: at the grid's edge)")
    bx.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
