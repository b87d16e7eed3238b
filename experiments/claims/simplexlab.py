"""The lab's own predictions as claims: the finite-group theory against the bandit.

Not a paper's statements: predictions of :class:`simplexlab.meanfield.FiniteGroup` (the exact
expected SGD step of the bandit at group size G) checked on the bandit, at the collision setting
of the claims ``g2-anti-collision`` / ``g2-flip-at-one`` (G²RPO eq. 68 puts the flip at λ0 = 1 for
every G; the bandit's flip moves up as G falls). The numbers come from the experiment
``finite-group-flip`` (``experiments/finite_group_regimes.py``, :func:`flip_data`, memoised per
process so that ``simplexlab reproduce finite-group-flip`` computes them once).

Their source key is ``"SL"`` (the lab's own predictions) in :data:`simplexlab.lab.PAPERS`.
"""

from __future__ import annotations

import numpy as np

from simplexlab.lab import Verdict, claim, load_experiment_module

SOURCE = "SL"
PAPER_G = 16


def _data(ctx):
    mod = load_experiment_module("finite_group_regimes")
    mode = "tiny" if ctx.tiny else ctx.mode
    return mod, ctx.cached(("simplexlab-flip", mode, ctx.seed),
                           lambda: mod.flip_data(mode, ctx.seed, regimes=mode != "tiny"))


def flip_threshold(ctx):
    """Per G: the bandit's flip gain minus the theory's read with the bandit's estimator (its
    crossing on the bandit's gain grid); holds where the theory lies in the bandit's bootstrap
    interval (where the bandit has no flip on its grid: where the theory has none either)."""
    mod, r = _data(ctx)
    rows = r["comparison"]["per_G"]
    Gs = [row["group_size"] for row in rows]
    holds = [row["within_interval"] for row in rows]
    j = Gs.index(PAPER_G) if PAPER_G in Gs else 0
    x, lo, hi = rows[j]["bandit"]
    te = rows[j]["theory_bandit_estimator"]
    if x is None or te is None:
        status = "yes" if holds[j] else "no"
        eff, ci = np.nan, (np.nan, np.nan)
    else:
        eff = x - te
        ci = (lo - te, (np.inf if hi is None else hi) - te)
        status = "yes" if holds[j] else ("partly" if abs(eff) <= 0.1 else "no")
    parts = []
    for row in rows:
        b, t, e = row["bandit"], row["theory"], row["theory_bandit_estimator"]
        bt = "no flip" if b[0] is None else f"{b[0]:.2f} [{b[1]:.2f}, {b[2]:.2f}]"
        tt = "no flip" if t is None else f"{t:.2f} (read like the bandit {e:.2f})"
        parts.append(f"G = {row['group_size']}: bandit {bt}, theory {tt}")
    return Verdict(status, eff, ci,
                   "bandit's flip gain minus the finite-G theory's, both by linear "
                   "interpolation on the bandit's gain grid (holds: the theory lies in the "
                   "bandit's bootstrap 95 % interval)", {"group_size": Gs}, holds,
                   boundary="; ".join(parts),
                   reason="the theory is the η → 0 limit of the expected step: the bandit "
                          "keeps O(η) (and ensemble-mean vs mean-state) differences",
                   details={"per_G": rows})


def regime_signs(ctx):
    """At every (gain, G) of the bandit where its 95 % interval of the prompt-mean ΔL_y excludes
    0, the theory's ΔL_y has the same sign."""
    mod, r = _data(ctx)
    st, cmp_ = r["settings"], r["comparison"]
    signs = np.asarray(cmp_["bandit_signs"])
    th = np.array([r["theory"][G]["at_bandit_gains"] for G in st["G"]]).T  # (gain, G)
    holds = (signs == 0) | (np.sign(th) == signs)
    frac = cmp_["agreement"]
    status = "yes" if frac == 1.0 else ("partly" if frac >= 0.9 else "no")
    return Verdict(status, frac, (frac, frac),
                   "fraction of the bandit's resolved (gain, G) points (95 % interval of ΔL_y "
                   "excludes 0) where the finite-G theory's ΔL_y has the same sign",
                   {"gain": list(st["gains"]), "group_size": list(st["G"])}, holds,
                   grid_effect=th,
                   details={"resolved": cmp_["resolved"], "agree": cmp_["agree"]})


claim("simplexlab-flip-threshold", paper=SOURCE,
      source="finite-group theory (FiniteGroup) vs G²RPO eq. (68)",
      sentence="The finite-group theory predicts the bandit's collision → anti-collision "
               "flip gain λ0*(G) within the bandit's bootstrap interval at every G.",
      experiment="finite-group-flip",
      paper_setting={"schedule": "B", "neutralize": True, "K": 6, "M": 2,
                     "group_size": PAPER_G, "p0": 0.7},
      grid={"quick": {"group_size": [4, 8, 16]},
            "full": {"group_size": [4, 8, 16, 32, 64]}})(flip_threshold)
claim("simplexlab-regime-signs", paper=SOURCE,
      source="finite-group theory (FiniteGroup) vs G²RPO eq. (68)",
      sentence="Wherever the bandit resolves the sign of ΔL_y (collision or "
               "anti-collision), the finite-group theory predicts the same sign.",
      experiment="finite-group-flip",
      paper_setting={"schedule": "B", "neutralize": True, "K": 6, "M": 2, "p0": 0.7},
      grid={"quick": {"gain": [0, 1, 1.5, 2, 2.5, 3, 4], "group_size": [4, 8, 16]},
            "full": {"gain": [0, 0.5, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4],
                     "group_size": [4, 8, 16, 32, 64]}})(regime_signs)
