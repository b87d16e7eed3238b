"""The report of a verification: :class:`ScheduleReport` (numbers, verdict, reasons, inputs,
curves), its JSON form, its key numbers and its one-screen summary."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .._results import to_jsonable
from ..shaping import GainSchedule

__all__ = ["GROWTH_FROM", "GROWTH_TO", "ScheduleReport", "describe_schedule"]

#: check (c) measures the growth exponent of ``|B_b|`` between these two group sizes (the
#: summary quotes them)
GROWTH_FROM, GROWTH_TO = 256, 4096
#: the letter of each check in the summary (the module docstring of :mod:`._verify`)
_LETTERS = {"flip": "a", "neutral": "b", "bounded": "c", "concentration": "d", "bandit": "e"}


@dataclasses.dataclass
class ScheduleReport:
    """What :func:`~simplexlab.verify.verify_schedule` found.

    ``passed``: every required check passed; ``reasons``: one line per failed required check;
    ``checks``: the numbers of each check (``flip``, ``neutral``, ``bounded``, ``concentration``,
    ``bandit``), each with ``passed`` and ``required``; ``inputs``: the schedule (as
    :meth:`~simplexlab.shaping.GainSchedule.to_dict`) and every argument; ``curves``: the
    trajectories behind the numbers (``t``, ``step``, ODE ``p`` / ``L_y`` / ``a_y``, GRPO ODE
    ``p`` / ``L_y``, bandit mean ``p`` / ``L_y`` and their standard errors at the recorded
    steps), NumPy arrays;
    ``elapsed_s``: wall time of the verification.
    """

    passed: bool
    reasons: list[str]
    checks: dict[str, dict[str, Any]]
    inputs: dict[str, Any]
    curves: dict[str, np.ndarray] = dataclasses.field(default_factory=dict, repr=False)
    elapsed_s: float = 0.0

    def to_dict(self, *, curves: bool = False) -> dict[str, Any]:
        """Plain JSON-able values (``curves=True`` adds the trajectories as lists)."""
        out = {"passed": bool(self.passed), "reasons": list(self.reasons),
               "checks": _finite(to_jsonable(self.checks)),
               "inputs": _finite(to_jsonable(self.inputs)), "elapsed_s": float(self.elapsed_s)}
        if curves:
            out["curves"] = _finite(to_jsonable(self.curves))
        return out

    def key_numbers(self) -> dict[str, Any]:
        """The headline number of each check (what a saved schedule file records)."""
        c = self.checks
        return _finite({
            "t_flip": c["flip"]["t_flip"], "step_flip": c["flip"]["step_flip"],
            "lambda_tilde_start": c["flip"]["lambda_tilde_start"],
            "flip_threshold_start": c["flip"]["flip_threshold_start"],
            "p_gap_direct": c["neutral"]["p_gap_direct"],
            "pdot_gap": c["neutral"]["pdot_gap"],
            "p_gap_vs_grpo": c["neutral"]["p_gap_vs_grpo"],
            "max_abs_bad_bonus": c["bounded"]["max_abs_bad_bonus"],
            "bad_bonus_growth_exponent": c["bounded"]["growth_exponent"],
            "L_y_start": c["concentration"]["L_y_start"],
            "L_y_end_ode": c["concentration"]["L_y_end_ode"],
            "L_y_end_bandit": c["concentration"]["L_y_end_bandit"],
            "error_p": c["bandit"]["error_p"], "error_L_y": c["bandit"]["error_L_y"],
        })

    @property
    def warnings(self) -> list[str]:
        """The checks that did not pass but are not required (``[warn]`` in the summary), as
        ``"(a) flip"``, in the checks' order."""
        return [f"({_LETTERS.get(k, '?')}) {k}" for k, chk in self.checks.items()
                if not chk["required"] and not chk["passed"]]

    def verdict(self) -> str:
        """The summary's headline, decided here alone: ``"FAILED"`` (a required check failed),
        ``"PASSED"`` (every check passed), or ``"passed with N warning(s): ..."`` (the required
        checks passed, N checks that are not required did not)."""
        if not self.passed:
            return "FAILED"
        warned = self.warnings
        if not warned:
            return "PASSED"
        return (f"passed with {len(warned)} warning{'s' if len(warned) > 1 else ''}: "
                + ", ".join(warned))

    def summary(self) -> str:
        """A short human-readable verdict: the headline (:meth:`verdict`), then one line per
        check with its numbers."""
        c, inp = self.checks, self.inputs
        f, n, b, d, e = (c[k] for k in ("flip", "neutral", "bounded", "concentration", "bandit"))

        def tag(chk):
            if not chk["required"]:
                return "info" if chk["passed"] else "warn"
            return "pass" if chk["passed"] else "FAIL"

        who = (describe_schedule(inp["schedule"]) if "schedule" in inp else
               f"rule {inp['method']!r} {inp.get('params') or ''}".rstrip())
        lines = [f"{who}: {self.verdict()}  ({self.elapsed_s:.1f} s)"]
        if f["flips"]:
            when = ("from the start" if f["t_flip"] == 0 else
                    f"at t = {f['t_flip']:.4g} (step {f['step_flip']:.1f})")
            what = f"collision flips to anti-collision {when}"
        else:
            what = f"no flip: a_y >= 0 up to t = {f['t_end']:.4g} (collision all along)"
        gain = ("" if f["lambda_tilde_start"] is None else
                f"; inner gain λ̃ = {f['lambda_tilde_start']:.3g} vs threshold "
                f"{f['flip_threshold_start']:.3g} at the start")
        lines.append(f"  [{tag(f)}] (a) flip: {what}{gain}")
        lines.append(f"  [{tag(n)}] (b) neutral: the bonus moves p by {n['p_gap_direct']:.2g} "
                     f"(tol {n['tolerance']:.2g}), max |ṗ − ṗ_GRPO| = {n['pdot_gap']:.2g}; "
                     f"p vs GRPO's ODE: up to {n['p_gap_vs_grpo']:.3g} (through L_y + L_z, "
                     "Remark D.4)")
        if not b.get("applies", True):
            lines.append(f"  [{tag(b)}] (c) bounded: not applicable (G²RPO's plug-in bad bonus)")
        else:
            exp = b["growth_exponent"]
            grow = "vanishes" if exp is None else f"∝ G^{exp:.2f}"
            by = "; ".join(b["bounded_by"]) or "no safeguard bounds it"
            lines.append(f"  [{tag(b)}] (c) bounded: max |B_b| = {b['max_abs_bad_bonus']:.4g} "
                         f"over G = {b['G'][0]}..{b['G'][-1]} with one incorrect rollout; |B_b| "
                         f"{grow} for G = {GROWTH_FROM}..{GROWTH_TO}; {by}")
        lines.append(f"  [{tag(d)}] (d) L_y at step {inp['num_steps']}: ODE "
                     f"{d['L_y_end_ode']:.4f}, bandit {d['L_y_end_bandit']:.4f} ± "
                     f"{d['L_y_end_bandit_se']:.1g} (start {d['L_y_start']:.4f}, 1/K = "
                     f"{d['one_over_K']:.4f}, GRPO's ODE {d['L_y_end_grpo']:.4f})")
        if d.get("K_hat_end_bandit") is not None:  # reports saved before K̂ was recorded lack it
            lines.append(f"         K̂ (good modes above the mode threshold, G2 Fig. 2), bandit: "
                         f"{d['K_hat_start_bandit']:.3g} at the start, "
                         f"{d['K_hat_end_bandit']:.3g} ± {d['K_hat_end_bandit_se']:.1g} at the "
                         "end")
        lines.append(f"  [{tag(e)}] (e) bandit vs ODE ({inp['seeds']} seeds, G = "
                     f"{inp['group_size']}, η = {inp['eta']:g}): sup |Δp| = {e['error_p']:.3g},"
                     f" sup |ΔL_y| = {e['error_L_y']:.3g} (tol {e['tolerance_p']:g}, "
                     f"{e['tolerance_L_y']:g} + 3 SE)")
        for r in self.reasons:
            lines.append(f"  reason: {r}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def _finite(obj):
    """Non-finite floats as ``None`` (strict JSON: an infinite growth ratio, B_max = inf)."""
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def describe_schedule(d: dict[str, Any]) -> str:
    """``schedule B, λ0 = 1.5, neutralizer, B_max = 5`` from
    :meth:`~simplexlab.shaping.GainSchedule.to_dict`."""
    sym = "λ" if d["kind"] == "constant" else "λ0"
    parts = [f"schedule {d['kind']}, {sym} = {d['gain']:g}",
             "neutralizer" if d["neutralize"] else "no neutralizer"]
    if d["ramp_steps"]:
        parts.append(f"warm-up {d['ramp_steps']} steps")
    default = GainSchedule().to_dict()
    for k in ("B_max", "p_min", "p_damp", "rho", "floor_inverse_G", "Lz_min", "cluster_bad"):
        if d[k] != default[k]:
            parts.append(f"{k} = {d[k]}")
    return ", ".join(parts)
