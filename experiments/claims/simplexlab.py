"""The lab's own predictions as claims: the finite-group theory against the bandit.

Not a paper's statements: predictions of :class:`simplexlab.theory.FiniteGroup` (the exact
expected SGD step of the bandit at group size G) checked on the bandit, at the collision setting
of the claims ``g2-anti-collision`` / ``g2-flip-at-one`` (G²RPO eq. 68 puts the flip at λ0 = 1 for
every G; the bandit's flip moves up as G falls). The numbers come from the experiment
``finite-group-flip`` (``experiments/finite_group_regimes.py``, :func:`flip_data`, memoised per
process so that ``simplexlab reproduce finite-group-flip`` computes them once). The bandit's flip
depends on the draw of the prompts' initial compositions (its ``instance``), so the flip claim is
judged on every draw the experiment computes (the claims' instance 0 and its ``DRAWS``).

Their source key is ``"SL"`` (the lab's own predictions) in :data:`simplexlab.lab.PAPERS`.
"""

from __future__ import annotations

import numpy as np

from simplexlab.lab import Fault, Verdict, claim, load_experiment_module

SOURCE = "SL"
PAPER_G = 16


def _bandit_stats_fault(description, field):
    """A fault of the bandit's side only: its G²RPO statistics
    (:func:`simplexlab.shaping._g2rpo.g2rpo_stats`, which the bandit's bonus reads; the theory
    reduces the rule on its own, :class:`simplexlab.shaping.G2RPORule`) with ``field`` dropped
    (``"bad_bonus"``) or of the wrong sign (``"good_bonus"``). The experiment's memo keys on the
    injected faults (:func:`simplexlab.lab.injected_faults`), so the fault reaches the numbers."""
    scale = 0.0 if field == "bad_bonus" else -1.0

    def make(f):
        def faulty(*a, **k):
            st = f(*a, **k)
            return st._replace(**{field: scale * getattr(st, field)})
        return faulty
    return Fault(description, "simplexlab.shaping._g2rpo.g2rpo_stats", make)


def _data(ctx):
    mod = load_experiment_module("finite_group_regimes")
    mode = "tiny" if ctx.tiny else ctx.mode
    return mod, ctx.cached(("simplexlab-flip", mode, ctx.seed),
                           lambda: mod.flip_data(mode, ctx.seed, regimes=mode != "tiny"))


def _flip_text(row) -> str:
    b, t, e = row["bandit"], row["theory"], row["theory_bandit_estimator"]
    bt = "no flip" if b[0] is None else "{:.2f} [{:.2f}, {:.2f}]".format(
        *(np.inf if v is None else v for v in b))
    tt = "no flip" if t is None else (
        f"{t:.2f} (read like the bandit {'no flip' if e is None else f'{e:.2f}'})")
    return f"G = {row['group_size']}: bandit {bt}, theory {tt}"


def flip_threshold(ctx):
    """Per prompt draw (the bandit's ``instance``: draw 0 is the claims', the others are
    ``DRAWS`` of the experiment) and G: the theory's flip read with the bandit's estimator (its
    crossing on the bandit's gain grid) against that draw's bandit flip; holds where the theory
    lies in the bandit's bootstrap interval (where the bandit has no flip on its grid: where the
    theory has none either). One draw of the prompts moves the bandit's flip, so the status at
    the paper's G is judged over every draw: yes if within for all, no if for none, else partly;
    the effect and its interval are draw 0's."""
    mod, r = _data(ctx)
    rows = r["comparison"]["per_G"]  # draw 0, every group size of the claims' setting
    d = r["draws"]
    insts, Gs = d["instances"], d["group_sizes"]
    per = d["per_instance"]
    holds = [[bool(per[i][G]["within_interval"]) for G in Gs] for i in insts]
    G0 = [row["group_size"] for row in rows]
    j0 = G0.index(PAPER_G) if PAPER_G in G0 else 0
    Gp = PAPER_G if PAPER_G in Gs else Gs[0]
    at_paper = [per[i][Gp]["within_interval"] for i in insts]
    status = "yes" if all(at_paper) else ("no" if not any(at_paper) else "partly")
    x, lo, hi = rows[j0]["bandit"]
    te = rows[j0]["theory_bandit_estimator"]
    if x is None or te is None:
        eff, ci = np.nan, (np.nan, np.nan)
    else:
        eff = x - te
        ci = (lo - te, (np.inf if hi is None else hi) - te)
    spread = "; ".join(f"G = {G}: " + ("no flip" if v is None else f"{v[0]:.2f}–{v[1]:.2f}")
                       for G, v in d["spread"].items())
    parts = [f"prompt draw {i}: " + ", ".join(_flip_text(row) for row in
                                              (rows if k == 0 else per[i].values()))
             for k, i in enumerate(insts)]
    parts.append(f"the bandit's flips across draws: {spread}")
    return Verdict(status, eff, ci,
                   f"bandit's flip gain minus the finite-G theory's, both by linear "
                   f"interpolation on the bandit's gain grid, for prompt draw "
                   f"{insts[0]} (the claims' instance) at G = {Gp}; holds per (prompt draw, "
                   f"G): the theory lies in that draw's bandit bootstrap 95 % interval; the "
                   f"status at G = {Gp} over every draw (yes: all, no: none, else partly)",
                   {"instance": list(insts), "group_size": list(Gs)}, holds,
                   boundary="; ".join(parts),
                   reason="the theory is the η → 0 limit of the expected step: the bandit "
                          "keeps O(η) (and ensemble-mean vs mean-state) differences",
                   details={"per_G": rows, "within_at_paper_G": dict(zip(insts, at_paper,
                                                                          strict=True)),
                            "draws": {i: list(per[i].values()) for i in insts},
                            "bandit_flip_spread": d["spread"]})


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
               "flip gain λ0*(G) within the bandit's bootstrap interval at every G, for every "
               "draw of the prompts' initial compositions.",
      experiment="finite-group-flip",
      paper_setting={"schedule": "B", "neutralize": True, "K": 6, "M": 2,
                     "group_size": PAPER_G, "p0": 0.7},
      grid={"quick": {"instance": [0, 1, 2], "group_size": [8, 16]},
            "full": {"instance": [0, 1, 2, 3], "group_size": [8, 16, 32]}},
      faults=[_bandit_stats_fault("the bandit's neutralizer dropped (incorrect rollouts get no "
                                  "bonus; the theory keeps it)", "bad_bonus")])(flip_threshold)
claim("simplexlab-regime-signs", paper=SOURCE,
      source="finite-group theory (FiniteGroup) vs G²RPO eq. (68)",
      sentence="Wherever the bandit resolves the sign of ΔL_y (collision or "
               "anti-collision), the finite-group theory predicts the same sign.",
      experiment="finite-group-flip",
      paper_setting={"schedule": "B", "neutralize": True, "K": 6, "M": 2, "p0": 0.7},
      grid={"quick": {"gain": [0, 1, 1.5, 2, 2.5, 3, 4], "group_size": [4, 8, 16]},
            "full": {"gain": [0, 0.5, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4],
                     "group_size": [4, 8, 16, 32, 64]}},
      faults=[_bandit_stats_fault("the bandit's good-cluster bonus with the wrong sign (the "
                                  "theory's is right)", "good_bonus")])(regime_signs)
