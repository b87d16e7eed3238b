r"""The five checks of a G²RPO gain schedule and :func:`verify_schedule`, which runs them.

:func:`verify_schedule` runs a :class:`~simplexlab.shaping.GainSchedule` through five checks and
returns a :class:`~simplexlab.verify.ScheduleReport` (numbers, a verdict, the reasons of any
failure, the inputs; :mod:`._report`). Writing and reading schedule files is :mod:`._files`.

The checks (G2: the G²RPO paper; every number is measured, none is assumed):

(a) **flip** -- along the mean-field ODE of the schedule
    (:class:`~simplexlab.theory.Neutralized`, eq. 56, when ``schedule.neutralize``;
    :class:`~simplexlab.theory.GoodBonus`, eq. 48, otherwise; gain
    ``schedule.theory_gain(eta)``: constant, A = eq. 62, B = eq. 67, with the warm-up) from the
    start ``(p0, y0, z0)``: the first time the coefficient ``a_y`` of the collision field
    ``V(y)`` turns negative (``ẏ = a_y V(y)``; ``a_y/κ = 1 − λ̃ ρ`` under the neutralizer,
    eq. 57/60, so this is ``λ̃ > λ̃_flip`` of eq. 61; ``1 − λ̃`` without it), in time ``t`` and
    in training steps ``t/η``. Required (``require_flip``): a schedule that never flips
    collision to anti-collision does not do what G²RPO is for.
(b) **neutral** -- does the bonus leave the bad mass alone (Prop. D.2, eq. 53/55: the
    neutralizer makes ``ṗ`` equal GRPO's baseline eq. 22 *at every state*)? Measured along the
    schedule's ODE trajectory: ``max |ṗ_schedule − ṗ_GRPO|`` at the visited states and the bad
    mass the bonus itself moves, ``max_t |∫_0^t (ṗ_schedule − ṗ_GRPO) ds|`` (``p_gap_direct``;
    passes when ``<= tol_neutral``). Also reported, not checked unless ``tol_p_vs_grpo`` is set:
    ``max_t |p_schedule(t) − p_GRPO(t)|`` against the GRPO ODE run from the same start, which is
    *not* zero even with an exact neutralizer -- the schedule flattens ``y`` (and ``z``), so the
    baseline decay rate ``∝ L_y + L_z`` is smaller on its trajectory (G2 Remark D.4). Required
    when ``schedule.neutralize`` (``require_neutral``).
(c) **bounded** -- the bad-rollout bonus ``B_b`` that the plug-in estimator
    (:func:`~simplexlab.shaping.g2rpo_stats`, Listing 1, with the schedule's safeguards, at full
    gain) gives when a group of ``G`` rollouts has exactly one incorrect rollout, ``p̂ = 1/G``,
    for ``G = 2 … 4096`` and three compositions of the correct rollouts over good clusters
    (uniform over ``K``, one dominant cluster with 80 %, all but one rollout in one cluster). The
    neutralizer (55) grows like ``1/p̂`` under a constant gain and like ``1/σ(p̂)`` under
    schedules A/B (eq. 65, 70) unless clipped (``B_max``), damped (``p_damp``: ``× 3(p̂/p_damp)²``
    for small ``p̂``) or switched off (``p_min``) -- the App. D.4 safeguards -- or ``σ(p̂)``
    stays away from 0 (schedules A/B with a verifier with ``δ_FN > 0``: the gain vanishes like
    ``p̂``). Passes when a safeguard bounds ``|B_b|`` by construction (finite ``B_max``,
    ``p_damp > 0``, ``p_min > 0``, no neutralizer) or when the measured growth exponent ``a`` of
    ``|B_b| ∝ G^a`` between ``G = 256`` and ``G = 4096`` is ``<= tol_growth``; and, if
    ``max_bad_bonus`` is given, ``max |B_b| <= max_bad_bonus`` over the ``G`` tried. What it
    means: the per-sample bonus of the rare groups with a single failure does not blow up as
    ``p → 0``. What it does not mean: a bound on the good bonus, a small bound (``B_max = 1e9``
    passes unless ``max_bad_bonus`` is set), or a proof for a gain the structural list does not
    cover (the exponent is measured on 256 ≤ G ≤ 4096 only).
(d) **concentration** -- the ``L_y`` the schedule reaches at the last step: the ODE's, the
    bandit ensemble mean's (and the GRPO ODE's for comparison), against ``1/K`` (uniform) and
    ``L_y(0)``. Checked only when ``max_L_y`` is given (ODE ``L_y`` at the end ``<= max_L_y``).
(e) **bandit** -- the finite-group bandit (:class:`~simplexlab.sim.Bandit`, ``seeds`` runs,
    group size ``G``, SGD step ``η``, the schedule's safeguards and warm-up, Algorithm 1's
    plug-in statistics) against the ODE with the time map ``t = step · η``:
    ``sup_step |mean p − p_ODE|`` and the same for ``L_y``; passes when each is
    ``<= tol + 3 SE`` (SE: the standard error of the ensemble mean). The ODE has no safeguards
    (clip, damping, floors), so this also measures what they change at this ``G``.

The ODE and the bandit are one system: both come from
:meth:`~simplexlab.sim.Bandit.meanfield` on the configuration
:meth:`~simplexlab.sim.Bandit.schedule_values` gives. The default verification (K = 3, M = 2,
G = 32, η = 0.05, 200 steps, 64 seeds) takes about 10–15 s on 2 CPU cores, most of it
compilation.
"""

from __future__ import annotations

import inspect
import math
import sys
import time
from types import SimpleNamespace
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import is_concrete, is_int, trusted_inputs
from ..shaping import GainSchedule, g2rpo_stats
from ..theory import GRPO, Verifier, flip_threshold, inner_gain, solve
from ._report import GROWTH_FROM, GROWTH_TO, ScheduleReport

__all__ = ["BOUND_GROUP_SIZES", "COMPOSITIONS", "VERIFY_OPTIONS", "bad_bonus_growth",
           "verify_schedule"]

BOUND_GROUP_SIZES = tuple(2**k for k in range(1, 13))  # 2 .. 4096
"""Group sizes of check (c): one incorrect rollout out of G, so p̂ = 1/G."""
_ZERO = 1e-9  # |B_b| below this counts as 0 in the growth ratio
#: the ODEs :func:`verify_schedule` can check a schedule on (``theory``)
THEORIES = ("limit", "finite")
_FLIP_EPS = 1e-9  # a_y/κ below −_FLIP_EPS is a flip (exact cancellation, λ0 = 1 under B, is not)


# ---- check (c): the bad bonus of the plug-in estimator as p̂ = 1/G → 0 ---------------------------


def _good_counts(comp: str, n: int, K: int) -> np.ndarray:
    """Cluster counts of ``n`` correct rollouts: ``uniform`` over K, ``dominant`` (80 % in one,
    the rest spread), ``all-but-one`` (n − 1 in one cluster, 1 in another)."""
    if comp == "all-but-one":
        c = np.array([n - 1, 1])
    else:
        frac = (np.full(K, 1.0 / K) if comp == "uniform"
                else np.r_[0.8, np.full(K - 1, 0.2 / (K - 1))])
        k = min(K, n)
        frac = frac[:k] / frac[:k].sum()
        c = np.maximum(1, np.floor(frac * n)).astype(int)
        c[0] += n - c.sum()
    return c[c > 0]


COMPOSITIONS = ("uniform", "dominant", "all-but-one")
"""How check (c) spreads the G − 1 correct rollouts of a group over the K good clusters:
``uniform``, ``dominant`` (80 % in one) and ``all-but-one`` (G − 2 in one, 1 in another)."""

_stats = eqx.filter_jit(g2rpo_stats)  # the gain goes in as an array: one compilation for all λ


def bad_bonus_growth(schedule: GainSchedule, *, K: int = 3, delta_fn: float = 0.0,
                     delta_fp: float = 0.0, tol_growth: float = 0.1,
                     group_sizes: tuple[int, ...] = BOUND_GROUP_SIZES) -> dict[str, Any]:
    r"""Check (c) of :func:`verify_schedule`: the neutralizer ``B_b`` (eq. 53 on the clipped
    good bonus, Listing 1 step (f)) that :func:`~simplexlab.shaping.g2rpo_stats` gives to the
    incorrect rollouts of a group of ``G`` rollouts with exactly one incorrect rollout
    (``p̂ = 1/G``), for every ``G`` in ``group_sizes`` and the compositions of
    :data:`COMPOSITIONS` of the ``G − 1`` correct ones over ``K`` good clusters, with
    ``schedule.config(schedule.ramp_steps)`` (full gain, all safeguards) and the verifier
    ``(delta_fn, delta_fp)`` (schedules A/B use its ``J`` and ``σ``).

    Returns ``G``, ``bad_bonus`` (composition → ``B_b`` per ``G``), ``max_abs_bad_bonus``,
    ``growth_ratio`` ``= max over compositions of |B_b(4096)| / |B_b(256)|`` (compositions with
    ``|B_b| < 1e-9`` at both ends left out; 1 when none is left) and
    ``growth_exponent`` ``= log(ratio)/log(16)`` (``None`` when ``|B_b|`` vanishes, ``inf``
    when it appears from 0), ``bounded_by`` (the safeguards that bound ``|B_b|`` by construction,
    and ``"measured"`` when the exponent is ``<= tol_growth``) and ``bounded`` (``bounded_by``
    is not empty). Unclipped, the exponent is 1 for a constant gain (``B_b ∝ 1/p̂``, eq. 55)
    and 1/2 for schedules A/B with a perfect verifier (``∝ 1/σ(p̂)``, eq. 65/70) -- as ``p̂ → 0``;
    on 256 ≤ G ≤ 4096 a bonus that a finite ``B_max`` clips only beyond it shows its unclipped
    exponent."""
    if not isinstance(schedule, GainSchedule):
        raise ValueError(f"schedule must be a GainSchedule; got {schedule!r}")
    if not (is_int(K) and K >= 2):
        raise ValueError(f"K (number of good modes) must be an integer >= 2; got {K!r}")
    Gs = tuple(int(g) for g in group_sizes)
    if any(g < 2 for g in Gs) or not {GROWTH_FROM, GROWTH_TO} <= set(Gs):
        raise ValueError(f"group_sizes must be integers >= 2 including {GROWTH_FROM} and "
                         f"{GROWTH_TO}; got {group_sizes!r}")
    Gmax = max(Gs)
    rows = []
    for comp in COMPOSITIONS:
        for G in Gs:
            n = G - 1  # correct rollouts; rollout n is the incorrect one
            c = _good_counts(comp, n, K)
            r = np.zeros(Gmax)
            good = np.full(Gmax, -1)
            bad = np.full(Gmax, -1)
            mask = np.zeros(Gmax, bool)
            mask[:G] = True
            r[:n] = 1.0
            good[:n] = np.repeat(np.arange(len(c)), c)
            bad[n] = 0
            rows.append((r, good, bad, mask))
    r, good, bad, mask = (np.stack(a) for a in zip(*rows, strict=True))
    config = schedule.config(schedule.ramp_steps, Verifier(float(delta_fn), float(delta_fp)))
    config = eqx.tree_at(lambda c: c.gain, config, jnp.asarray(config.gain))
    with trusted_inputs():  # rewards and cluster ids built above: no run-time checks, no callback
        st = _stats(r, good, bad if schedule.cluster_bad else None, mask, config=config,
                    num_clusters=max(K, 2))
    Bb = np.asarray(st.bad_bonus, float).reshape(len(COMPOSITIONS), len(Gs))
    # |B_b| below _ZERO is 0 (a uniform composition gives 0 up to round-off); compositions whose
    # bonus is 0 at both ends do not vote; none voting = nothing grows (ratio 1)
    lo, hi = np.abs(Bb[:, Gs.index(GROWTH_FROM)]), np.abs(Bb[:, Gs.index(GROWTH_TO)])
    lo, hi = np.where(lo > _ZERO, lo, 0.0), np.where(hi > _ZERO, hi, 0.0)
    vote = (lo > 0) | (hi > 0)
    with np.errstate(divide="ignore"):
        ratios = np.where(lo > 0, hi / np.where(lo > 0, lo, 1.0), np.inf)[vote]
    ratio = float(ratios.max()) if ratios.size else 1.0
    exponent = (None if ratio == 0 else
                math.inf if math.isinf(ratio) else math.log(ratio) / math.log(GROWTH_TO
                                                                              / GROWTH_FROM))
    by = []
    if not schedule.neutralize:
        by.append("no neutralizer (B_b = 0)")
    else:
        if math.isfinite(schedule.B_max):
            by.append(f"B_max = {schedule.B_max:g} clips |B_b|")
        if schedule.p_damp > 0:
            by.append(f"p_damp = {schedule.p_damp:g} damps B_b by 3(p̂/p_damp)² as p̂ → 0")
        if schedule.p_min > 0:
            by.append(f"p_min = {schedule.p_min:g} switches B_b off below p̂ = p_min")
    if exponent is None or exponent <= tol_growth:
        by.append(f"measured: |B_b| does not grow for G = {GROWTH_FROM}..{GROWTH_TO}"
                  + ("" if exponent is None else f" (exponent {exponent:.3f} <= {tol_growth:g})"))
    return {"G": list(Gs), "bad_bonus": {k: Bb[i].tolist() for i, k in enumerate(COMPOSITIONS)},
            "max_abs_bad_bonus": float(np.abs(Bb).max()), "growth_ratio": ratio,
            "growth_exponent": exponent, "bounded_by": by, "bounded": bool(by)}


# ---- compiled pieces (module level, so that repeated verifications reuse them) ----------------


@eqx.filter_jit
def _ensemble(sim, keys, params, num_steps, stride):
    """Records of one bandit run per key (leading axis seed). ``params`` were checked on the
    host (``sim.check_params``): traced without run-time checks, so that the program has no host
    callback and JAX's persistent compilation cache keeps it."""
    from ..sim import trajectory  # here: the planner imports this layer without the simulators

    with trusted_inputs():
        return jax.vmap(lambda k: trajectory(sim, k, params, num_steps=num_steps,
                                             stride=stride)[1])(keys)


@eqx.filter_jit
def _rates(dyn, ts, states):
    return jax.vmap(dyn.rates)(ts, states)


@eqx.filter_jit
def _fields(dyn, ts, states):
    with trusted_inputs():  # the solve's own times and states: no run-time checks, no callback
        return jax.vmap(dyn.vector_field)(ts, states)


def _as_arrays(tree):
    """Python-float leaves as arrays, so that a new gain value reuses the compiled solve."""
    return jax.tree_util.tree_map(
        lambda x: jnp.asarray(x) if isinstance(x, float | int) and not isinstance(x, bool)
        else x, tree)


def _stride(num_steps: int, most: int = 400) -> int:
    """The smallest divisor of ``num_steps`` that records at most ``most`` + 1 points."""
    for d in range(1, num_steps + 1):
        if num_steps % d == 0 and num_steps // d <= most:
            return d
    return num_steps


def _default_composition(n: int) -> tuple[float, ...]:
    """``∝ (2^{n−1}, ..., 2, 1)``: a definite, non-uniform start (K = 3: (4/7, 2/7, 1/7))."""
    w = 2.0 ** np.arange(n - 1, -1, -1)
    return tuple(float(v) for v in w / w.sum())


#: the most bandit runs (seeds) one verification starts, unless the machine's memory is the
#: tighter bound (a larger count is almost always a typo: 10**9)
MAX_SEEDS = 100_000


def _check_work(K: int, M: int, group_size: int, num_steps: int, seeds: int) -> None:
    """Refuse, before any compute, a verification that cannot finish: more than
    :data:`MAX_SEEDS` seeds, more than :data:`~simplexlab.sim.MAX_STEPS` steps, or bandit
    arrays (every seed's group of ``group_size`` rollouts over ``K + M`` modes at once, and the
    recorded trajectories) larger than this machine's memory: a ``ValueError`` with the
    estimate (XLA would otherwise end the process)."""
    from .._checks import host_memory_bytes
    from ..sim.internal import MAX_STEPS

    if seeds > MAX_SEEDS:
        raise ValueError(f"verify_schedule: seeds = {seeds:,} is more than {MAX_SEEDS:,} bandit "
                         "runs; a verification's interval needs tens to thousands")
    if num_steps > MAX_STEPS:
        raise ValueError(f"verify_schedule: num_steps = {num_steps:,} is more than "
                         f"{MAX_STEPS:,}")
    work = 8 * seeds * (group_size * (K + M + 4) + (num_steps // _stride(num_steps) + 1)
                        * (K + M + 4))
    memory = host_memory_bytes()
    if memory is not None and work > memory // 2:
        raise ValueError(f"verify_schedule: seeds = {seeds:,} × group_size = {group_size:,} "
                         f"(K + M = {K + M}) needs about {work:,} bytes of bandit arrays, more "
                         f"than half of this machine's memory ({memory:,} bytes)")


def _check_memory(sim, params, o, who: str) -> None:
    """Refuse, before any compute, a bandit ensemble whose compiled program XLA says needs more
    than half of this machine's memory: the program is lowered and compiled here (the call that
    runs it later reuses the compiled program) and its arguments, outputs and temporaries
    (``memory_analysis``: what XLA will allocate, the rule's own intermediates included, which
    :func:`_check_work`'s count of the bandit's arrays does not see) are added up; a
    ``ValueError`` with the estimate and the settings to lower (``[verify] group_size = 10^7``
    passed the count and ended the process inside XLA)."""
    from .._checks import host_memory_bytes

    memory = host_memory_bytes()
    if memory is None:
        return
    keys = jax.random.split(jax.random.key(o.seed), o.seeds)  # as _check_bandit's
    dt = sim.float_dtype()
    args = {k: jnp.asarray(v, dt) for k, v in params.items()}
    try:
        compiled = _ensemble.lower(sim, keys, args, o.num_steps, _stride(o.num_steps)).compile()
        stats = compiled.compiled.memory_analysis()
    except (AttributeError, NotImplementedError):  # a backend without memory analysis
        return
    if stats is None:
        return
    need = sum(int(getattr(stats, f, 0) or 0) for f in (
        "argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes",
        "generated_code_size_in_bytes"))
    if need > memory // 2:
        raise ValueError(f"{who}: the bandit ensemble (seeds = {o.seeds:,} × group_size = "
                         f"{o.group_size:,}, K + M = {o.K + o.M}, {o.num_steps:,} steps) needs "
                         f"about {need:,} bytes by XLA's memory analysis, more than half of "
                         f"this machine's memory ({memory:,} bytes); lower group_size or seeds")


def _tol(value, name: str, *, optional: bool = False):
    if value is None and optional:
        return None
    ok = isinstance(value, int | float | np.floating | np.integer) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value < 0:
        raise ValueError(f"verify_schedule: {name} must be a finite number >= 0"
                         f"{' or None' if optional else ''}; got {value!r}")
    return float(value)


def _say(progress: bool, msg: str, t0: float) -> None:
    if progress:
        print(f"[verify {time.perf_counter() - t0:5.1f}s] {msg}", file=sys.stderr, flush=True)


def _options(schedule, args: dict) -> SimpleNamespace:
    """:func:`verify_schedule`'s arguments, checked (``ValueError`` naming the bad one) and with
    the defaults filled in (``require_neutral``: ``schedule.neutralize``; the starts)."""
    if schedule is None:  # verify_rule: any rule, against its finite-group theory
        pass
    elif not isinstance(schedule, GainSchedule):
        raise ValueError(f"verify_schedule: schedule must be a GainSchedule; got {schedule!r}")
    elif not (is_concrete(schedule.gain) and np.ndim(schedule.gain) == 0):
        raise ValueError("verify_schedule: schedule.gain must be one concrete number; got "
                         f"{schedule.gain!r}")
    o = SimpleNamespace(**args)
    for name, lower in (("K", 2), ("M", 1), ("group_size", 2), ("num_steps", 1), ("seeds", 2),
                        ("seed", 0)):
        v = getattr(o, name)
        if not is_int(v) or v < lower:
            raise ValueError(f"verify_schedule: {name} must be an integer >= {lower}; got {v!r}")
    for name in ("require_flip", "progress"):
        if not isinstance(getattr(o, name), bool):
            raise ValueError(f"verify_schedule: {name} must be True or False; got "
                             f"{getattr(o, name)!r}")
    _check_work(o.K, o.M, o.group_size, o.num_steps, o.seeds)
    if o.theory not in THEORIES:
        raise ValueError(f"verify_schedule: theory must be one of {THEORIES}; got {o.theory!r}")
    if o.require_neutral is None:
        o.require_neutral = bool(schedule is not None and schedule.neutralize)
    elif not isinstance(o.require_neutral, bool):
        raise ValueError(f"verify_schedule: require_neutral must be True, False or None; got "
                         f"{o.require_neutral!r}")
    for name in ("tol_neutral", "tol_growth", "tol_p", "tol_L_y"):
        setattr(o, name, _tol(getattr(o, name), name))
    for name in ("tol_p_vs_grpo", "max_bad_bonus", "max_L_y"):
        setattr(o, name, _tol(getattr(o, name), name, optional=True))
    o.y0 = _default_composition(o.K) if o.y0 is None else o.y0
    o.z0 = _default_composition(o.M) if o.z0 is None else o.z0
    return o


def _bandit_values(o) -> dict:
    """The bandit's settings and parameters that every verification takes from its options
    (the rule's own come on top)."""
    return {"K": o.K, "M": o.M, "y0": o.y0, "z0": o.z0, "max_group_size": o.group_size,
            "group_size": o.group_size, "eta": o.eta, "p0": o.p0, "delta_fn": o.delta_fn,
            "delta_fp": o.delta_fp}


def _system(schedule, o):
    """The bandit and its parameters for the schedule (one configuration for the bandit and its
    ODE; ``Bandit`` validates ``y0``, ``z0``, ``p0``, ``eta`` and the verifier's rates), and the
    report's ``inputs``."""
    from ..sim import Bandit  # imported on use (simplexlab plan does not need the simulators)

    values = {**Bandit.schedule_values(schedule), "gain": float(schedule.gain),
              **_bandit_values(o)}
    try:
        sim, params = Bandit.from_values(values)
        sim.check_params(params)
    except ValueError as err:
        raise ValueError(f"verify_schedule: {err}") from None
    o.eta = float(o.eta)
    inputs = {"schedule": schedule.to_dict(), "K": o.K, "M": o.M, "y0": list(sim.y0),
              "z0": list(sim.z0), "p0": float(o.p0), "eta": o.eta, "group_size": o.group_size,
              "num_steps": o.num_steps, "seeds": o.seeds, "seed": o.seed,
              "delta_fn": float(o.delta_fn), "delta_fp": float(o.delta_fp),
              "require_flip": o.require_flip, "require_neutral": o.require_neutral,
              **{k: getattr(o, k) for k in ("tol_neutral", "tol_p_vs_grpo", "tol_growth",
                                            "max_bad_bonus", "max_L_y", "tol_p", "tol_L_y",
                                            "theory")},
              "x64": bool(jax.config.read("jax_enable_x64"))}
    return sim, params, inputs


def _odes(sim, params, o, grpo=None) -> SimpleNamespace:
    """The ODE of the schedule and GRPO's (the same system with gain 0; ``grpo``: GRPO's own
    finite-group system, for a rule that has no gain) from the same start, saved at every step,
    and along the schedule's trajectory the coefficient ``c_y`` of the collision field
    (``a_y/κ``; finite G: ``dL_y/dt`` over GRPO's) and ``ṗ`` with GRPO's ``ṗ`` at the same
    states."""
    finite = o.theory == "finite"
    dyn, st0 = sim.finite_group(params) if finite else sim.meanfield(params)
    st0 = jax.tree_util.tree_map(lambda a: a[0], st0)
    dyn = _as_arrays(dyn)
    T = o.num_steps * o.eta
    ts = jnp.asarray(np.arange(o.num_steps + 1) * o.eta)
    sol = solve(dyn, st0, t1=T, saveat=ts)
    if grpo is not None:
        dyn0 = _as_arrays(grpo)
    else:  # GRPO = the same system with gain 0 (B* = 0, B_b = 0): the compiled solve is reused
        gain_of = (lambda d: d.rule.schedule.gain) if finite else (lambda d: d.gain)
        dyn0 = eqx.tree_at(gain_of, dyn, jax.tree_util.tree_map(lambda x: x * 0, gain_of(dyn)))
    grpo_sol = solve(dyn0, st0, t1=T, saveat=ts)
    if finite:  # the fields at the schedule's visited states, and GRPO's (gain 0) there
        f, f0 = _fields(dyn, ts, sol.state), _fields(dyn0, ts, sol.state)
        y = np.asarray(sol.state.y, float)
        a_y = 2.0 * np.sum(y * np.asarray(f.y, float), -1)  # dL_y/dt
        g_y = 2.0 * np.sum(y * np.asarray(f0.y, float), -1)
        tiny = 1e-12 * max(float(np.abs(g_y).max()), 1e-300)
        c_y = np.where(np.abs(g_y) > tiny, a_y / np.where(np.abs(g_y) > tiny, g_y, 1.0), 1.0)
        p_dot, p_dot_grpo = np.asarray(f.p, float), np.asarray(f0.p, float)
    else:
        grpo = GRPO(eta=dyn.eta, verifier=dyn.verifier)
        r = _rates(dyn, ts, sol.state)
        r_grpo = _rates(grpo, ts, sol.state)  # GRPO's field at the schedule's visited states
        a_y = np.asarray(r.a_y, float)
        kap = np.asarray(grpo.kappa(sol.p), float)
        c_y = a_y / kap  # inner-time coefficient of V(y): 1 − λ̃ρ (neutralized), 1 − λ̃
        p_dot, p_dot_grpo = np.asarray(r.p_dot, float), np.asarray(r_grpo.p_dot, float)
    return SimpleNamespace(
        T=T, t=np.asarray(ts), p=np.asarray(sol.p, float), L_y=np.asarray(sol.L_y, float),
        L_z=np.asarray(sol.L_z, float), stopped=bool(sol.stopped), a_y=a_y, c_y=c_y,
        p_dot=p_dot, p_dot_grpo=p_dot_grpo, p_grpo=np.asarray(grpo_sol.p, float),
        L_y_grpo=np.asarray(grpo_sol.L_y, float))


def _flip_time(ode):
    """The first time ``c_y`` turns negative (linear interpolation; ``None``: never)."""
    t, c_y = ode.t, ode.c_y
    neg = np.flatnonzero(c_y < -_FLIP_EPS)
    if neg.size == 0:
        return None
    if neg[0] == 0:
        return 0.0
    i = int(neg[0])  # between the last point >= 0 and the first < 0
    return float(t[i - 1] + c_y[i - 1] / (c_y[i - 1] - c_y[i]) * (t[i] - t[i - 1]))


def _flip_numbers(ode, o, t_flip) -> dict:
    c_y = ode.c_y
    return {"passed": t_flip is not None, "required": o.require_flip,
            "flips": t_flip is not None, "t_flip": t_flip,
            "step_flip": None if t_flip is None else t_flip / o.eta,
            "flipped_at_end": bool(c_y[-1] < -_FLIP_EPS),
            "fraction_flipped": float(np.mean(c_y < -_FLIP_EPS)),
            "a_y_over_kappa_start": float(c_y[0]), "a_y_over_kappa_end": float(c_y[-1])}


def _check_flip(schedule, ode, o):
    """Check (a): the first time ``c_y`` turns negative (linear interpolation), and the inner
    gain against the flip threshold (eq. 61) at the start."""
    t_flip = _flip_time(ode)
    full = GainSchedule.from_dict({**schedule.to_dict(), "ramp_steps": 0}).theory_gain(o.eta)
    ver = Verifier(float(o.delta_fn), float(o.delta_fp))
    Ly0, Lz0, p_0 = float(ode.L_y[0]), float(ode.L_z[0]), float(ode.p[0])
    lam0 = float(full(0.0, p_0, Ly0, Lz0, o.K, ver))
    lam_tilde = float(inner_gain(p_0, lam0, ver))
    threshold = float(flip_threshold(Ly0, Lz0, o.K)) if schedule.neutralize else 1.0
    flip = {**_flip_numbers(ode, o, t_flip),
            "lambda_tilde_start": lam_tilde, "flip_threshold_start": threshold,
            "t_end": float(ode.T), "ode_stopped": ode.stopped,
            "system": (f"FiniteGroup (G = {o.group_size}; the read-out: dL_y/dt over GRPO's)"
                       if o.theory == "finite" else "Neutralized (eq. 56)"
                       if schedule.neutralize else "GoodBonus (eq. 48)")}
    reason = None
    if o.require_flip and not flip["passed"]:
        reason = (f"flip: a_y >= 0 along the whole ODE trajectory (t <= {ode.T:g}): collision "
                  f"is never flipped (inner gain λ̃ = {lam_tilde:.3g} vs threshold "
                  f"{threshold:.3g} at the start)")
    return flip, reason


def _check_neutral(ode, o):
    """Check (b): the bad mass the bonus itself moves, ``max_t |∫ (ṗ − ṗ_GRPO) ds|``."""
    t, dpdot = ode.t, ode.p_dot - ode.p_dot_grpo
    moved = np.concatenate([[0.0], np.cumsum(0.5 * (dpdot[1:] + dpdot[:-1]) * np.diff(t))])
    gap_vs_grpo = float(np.abs(ode.p - ode.p_grpo).max())
    pdot_scale = float(np.abs(ode.p_dot_grpo).max())
    ok = float(np.abs(moved).max()) <= o.tol_neutral and (
        o.tol_p_vs_grpo is None or gap_vs_grpo <= o.tol_p_vs_grpo)
    neutral = {"passed": bool(ok), "required": o.require_neutral,
               "p_gap_direct": float(np.abs(moved).max()),
               "pdot_gap": float(np.abs(dpdot).max()),
               "pdot_gap_relative": float(np.abs(dpdot).max() / pdot_scale)
               if pdot_scale > 0 else 0.0,
               "p_gap_vs_grpo": gap_vs_grpo, "p_end": float(ode.p[-1]),
               "p_end_grpo": float(ode.p_grpo[-1]), "tolerance": o.tol_neutral,
               "tolerance_vs_grpo": o.tol_p_vs_grpo}
    if not o.require_neutral or ok:
        return neutral, None
    msg = (f"neutral: the bonus moves the bad mass by {neutral['p_gap_direct']:.3g} > "
           f"{o.tol_neutral:g} (max |ṗ − ṗ_GRPO| = {neutral['pdot_gap']:.3g})")
    if o.tol_p_vs_grpo is not None and gap_vs_grpo > o.tol_p_vs_grpo:
        msg += f"; p leaves GRPO's ODE by {gap_vs_grpo:.3g} > {o.tol_p_vs_grpo:g}"
    return neutral, msg


def _check_bounded(schedule, o):
    """Check (c): the plug-in bad bonus as ``p̂ = 1/G → 0`` (:func:`bad_bonus_growth`)."""
    bb = bad_bonus_growth(schedule, K=o.K, delta_fn=o.delta_fn, delta_fp=o.delta_fp,
                          tol_growth=o.tol_growth)
    ok = bb["bounded"] and (o.max_bad_bonus is None or bb["max_abs_bad_bonus"] <= o.max_bad_bonus)
    bounded = {"passed": bool(ok), "required": True, **bb, "tolerance": o.tol_growth,
               "max_allowed": o.max_bad_bonus}
    if ok:
        return bounded, None
    if not bb["bounded"]:
        exp = bb["growth_exponent"]
        grow = ("appears from 0" if exp is not None and math.isinf(exp)
                else f"grows like G^{exp:.2f}")
        return bounded, (f"bounded: |B_b| {grow} as p̂ = 1/G → 0 (up to "
                         f"{bb['max_abs_bad_bonus']:.4g} at G <= {max(bb['G'])}; tol exponent "
                         f"{o.tol_growth:g}) and no safeguard bounds it: set B_max, p_damp or "
                         "p_min (App. D.4)")
    return bounded, (f"bounded: max |B_b| = {bb['max_abs_bad_bonus']:.4g} > max_bad_bonus ="
                     f" {o.max_bad_bonus:g}")


def _check_bandit(sim, params, ode, o):
    """Checks (d) and (e): the bandit ensemble against the ODE (``tol + 3 SE``), and the
    ``L_y`` reached; also the curves of the report."""
    stride = _stride(o.num_steps)
    keys = jax.random.split(jax.random.key(o.seed), o.seeds)
    dt = sim.float_dtype()
    rec = _ensemble(sim, keys, {k: jnp.asarray(v, dt) for k, v in params.items()},
                    o.num_steps, stride)
    pb = np.asarray(rec.p[..., 0], float)
    Lb = np.asarray(rec.L_y[..., 0], float)
    Kb = np.asarray(rec.K_hat[..., 0], float)  # good modes above the mode threshold (G2 Fig. 2)
    idx = np.arange(0, o.num_steps + 1, stride)
    pm, Lm = pb.mean(0), Lb.mean(0)
    pse, Lse = pb.std(0, ddof=1) / np.sqrt(o.seeds), Lb.std(0, ddof=1) / np.sqrt(o.seeds)
    dp, dL = np.abs(pm - ode.p[idx]), np.abs(Lm - ode.L_y[idx])
    ok = bool(np.all(dp <= o.tol_p + 3 * pse) and np.all(dL <= o.tol_L_y + 3 * Lse))
    bandit = {"passed": ok, "required": True, "error_p": float(dp.max()),
              "error_L_y": float(dL.max()), "se_p": float(pse.max()), "se_L_y": float(Lse.max()),
              "step_error_p": int(idx[dp.argmax()]), "step_error_L_y": int(idx[dL.argmax()]),
              "tolerance_p": o.tol_p, "tolerance_L_y": o.tol_L_y, "stride": stride}
    L_y = ode.L_y
    conc = {"passed": o.max_L_y is None or float(L_y[-1]) <= o.max_L_y,
            "required": o.max_L_y is not None, "L_y_start": float(L_y[0]),
            "L_y_end_ode": float(L_y[-1]), "L_y_end_bandit": float(Lm[-1]),
            "L_y_end_bandit_se": float(Lse[-1]), "L_y_end_grpo": float(ode.L_y_grpo[-1]),
            "one_over_K": 1.0 / o.K, "K_eff_end_ode": 1.0 / float(L_y[-1]),
            "K_hat_start_bandit": float(Kb[:, 0].mean()),
            "K_hat_end_bandit": float(Kb[:, -1].mean()),
            "K_hat_end_bandit_se": float(Kb[:, -1].std(ddof=1) / np.sqrt(o.seeds)),
            "max_allowed": o.max_L_y}
    curves = {"t": ode.t[idx], "step": idx, "p_ode": ode.p[idx], "L_y_ode": L_y[idx],
              "a_y": ode.a_y[idx], "p_grpo": ode.p_grpo[idx], "L_y_grpo": ode.L_y_grpo[idx],
              "p_bandit": pm, "L_y_bandit": Lm, "p_bandit_se": pse, "L_y_bandit_se": Lse,
              "K_hat_bandit": Kb.mean(0)}
    reasons = []
    if conc["required"] and not conc["passed"]:
        reasons.append(f"concentration: L_y = {conc['L_y_end_ode']:.4f} at the end > "
                       f"max_L_y = {o.max_L_y:g}")
    if not ok:
        reasons.append(f"bandit: the {o.seeds}-seed mean leaves the ODE by sup |Δp| = "
                       f"{bandit['error_p']:.3g} (tol {o.tol_p:g}), sup |ΔL_y| = "
                       f"{bandit['error_L_y']:.3g} (tol {o.tol_L_y:g}) + 3 SE at G = "
                       f"{o.group_size}, η = {o.eta:g}")
    return bandit, conc, curves, reasons


def verify_schedule(
    schedule: GainSchedule, *, K: int = 3, M: int = 2, y0=None, z0=None, p0: float = 0.5,
    eta: float = 0.05, group_size: int = 32, num_steps: int = 200, seeds: int = 64,
    seed: int = 0, delta_fn: float = 0.0, delta_fp: float = 0.0, require_flip: bool = True,
    require_neutral: bool | None = None, tol_neutral: float = 1e-3,
    tol_p_vs_grpo: float | None = None, tol_growth: float = 0.1,
    max_bad_bonus: float | None = None, max_L_y: float | None = None, tol_p: float = 0.02,
    tol_L_y: float = 0.02, theory: str = "limit", progress: bool = False,
) -> ScheduleReport:
    r"""Verify a G²RPO gain schedule: checks (a)–(e) of the module docstring.

    The system: ``K`` good and ``M`` bad modes, start ``p0`` (bad mass), ``y0`` / ``z0``
    (within-block compositions; default ``∝ (2^{K−1}, ..., 2, 1)``), a verifier with rates
    ``delta_fn``, ``delta_fp``; ``num_steps`` SGD steps of size ``eta`` with groups of
    ``group_size`` rollouts (ODE time ``t = step · eta``); ``seeds`` bandit runs (keys
    ``split(key(seed), seeds)``). Required for ``passed``: (a) when ``require_flip``; (b) when
    ``require_neutral`` (default: ``schedule.neutralize``); (c) and (e) always; (d) when
    ``max_L_y`` is given. Tolerances: ``tol_neutral`` and ``tol_p_vs_grpo`` (b), ``tol_growth``
    and ``max_bad_bonus`` (c), ``max_L_y`` (d), ``tol_p`` / ``tol_L_y`` (e, plus 3 standard
    errors). ``theory``: the ODE of (a), (b), (d), (e): ``"limit"`` (the papers' mean field, eq.
    48 / 56; (a) reads ``a_y/κ``) or ``"finite"`` (the finite-group system at ``group_size``,
    :meth:`~simplexlab.sim.Bandit.finite_group`; (a) reads ``dL_y/dt`` over GRPO's at the same
    state, (e) then measures the bandit's ``O(η)`` error alone). ``progress`` prints one line per
    stage to stderr. Bad arguments raise ``ValueError`` naming them; enable ``jax_enable_x64``
    for float64 (the command line does; in float32 the numbers are accurate to about 1e-6).
    """
    args = dict(locals())
    t_start = time.perf_counter()
    o = _options(args.pop("schedule"), args)
    sim, params, inputs = _system(schedule, o)
    _check_memory(sim, params, o, "verify_schedule")
    _say(progress, f"{'finite-group' if o.theory == 'finite' else 'mean-field'} ODE of the "
         "schedule and of GRPO", t_start)
    ode = _odes(sim, params, o)
    flip, r_flip = _check_flip(schedule, ode, o)
    neutral, r_neutral = _check_neutral(ode, o)
    _say(progress, "plug-in bad bonus as p̂ = 1/G → 0", t_start)
    bounded, r_bounded = _check_bounded(schedule, o)
    _say(progress, f"bandit: {seeds} seeds x {num_steps} steps, G = {group_size}", t_start)
    bandit, conc, curves, r_bandit = _check_bandit(sim, params, ode, o)
    reasons = [r for r in (r_flip, r_neutral, r_bounded) if r] + r_bandit
    checks = {"flip": flip, "neutral": neutral, "bounded": bounded, "concentration": conc,
              "bandit": bandit}
    elapsed = time.perf_counter() - t_start
    _say(progress, "done", t_start)
    return ScheduleReport(passed=not reasons, reasons=reasons, checks=checks, inputs=inputs,
                          curves=curves, elapsed_s=elapsed)


def verify_rule(
    method: str, *, params: dict | None = None, K: int = 3, M: int = 2, y0=None, z0=None,
    p0: float = 0.5, eta: float = 0.05, group_size: int = 32, num_steps: int = 200,
    seeds: int = 64, seed: int = 0, delta_fn: float = 0.0, delta_fp: float = 0.0,
    require_flip: bool = False, require_neutral: bool = False, tol_neutral: float = 1e-3,
    max_L_y: float | None = None, tol_p: float = 0.02, tol_L_y: float = 0.02,
    progress: bool = False,
) -> ScheduleReport:
    r"""Verify any advantage rule (a name of :data:`simplexlab.shaping.METHODS`, a rule
    registered from user code included; ``params``: its own parameters) as
    :func:`verify_schedule` verifies a G²RPO schedule, against its finite-group theory at
    ``group_size`` and GRPO's at the same ``G``: (a) ``flip``: ``dL_y/dt`` turns below GRPO's
    sign (the rule flips GRPO's collision; required with ``require_flip``); (b) ``neutral``:
    the bad mass the rule moves relative to GRPO (required with ``require_neutral``); (d)
    ``max_L_y``; (e) the bandit's ``seeds``-run mean follows the finite-group ODE within
    ``tol_p`` / ``tol_L_y`` + 3 standard errors (always required). (c), G²RPO's plug-in bad
    bonus, does not apply (reported as not required). The other arguments as in
    :func:`verify_schedule`."""
    args = {k: v for k, v in locals().items() if k not in ("method", "params")}
    from ..shaping import lookup_method
    from ..shaping.internal import check_method_params
    from ..sim import Bandit

    # a misspelt parameter, or one of another rule, would be verified at its default: refused
    params = check_method_params(method, lookup_method(method, "verify_rule: "), params,
                                 "verify_rule: ")
    t_start = time.perf_counter()
    o = _options(None, {**args, "tol_p_vs_grpo": None, "tol_growth": 0.1,
                        "max_bad_bonus": None, "theory": "finite"})
    values = {"method": method, **(params or {}), **_bandit_values(o)}
    try:
        sim, q = Bandit.from_values(values)
        sim.check_params(q)
        ref, q0 = Bandit.from_values({**values, "method": "grpo"})
    except ValueError as err:
        raise ValueError(f"verify_rule: {err}") from None
    o.eta = float(o.eta)
    _check_memory(sim, q, o, "verify_rule")
    _say(progress, f"finite-group ODE of {method!r} and of GRPO", t_start)
    ode = _odes(sim, q, o, grpo=ref.finite_group(q0)[0])
    flip = {**_flip_numbers(ode, o, _flip_time(ode)), "lambda_tilde_start": None,
            "flip_threshold_start": None, "t_end": float(ode.T), "ode_stopped": ode.stopped,
            "system": f"FiniteGroup (G = {o.group_size}; the read-out: dL_y/dt over GRPO's)"}
    r_flip = (f"flip: {method}'s dL_y/dt never turns below GRPO's sign (t <= {ode.T:g})"
              if o.require_flip and not flip["passed"] else None)
    neutral, r_neutral = _check_neutral(ode, o)
    bounded = {"passed": True, "required": False, "applies": False, "max_abs_bad_bonus": None,
               "growth_exponent": None}
    _say(progress, f"bandit: {seeds} seeds x {num_steps} steps, G = {group_size}", t_start)
    bandit, conc, curves, r_bandit = _check_bandit(sim, q, ode, o)
    reasons = [r for r in (r_flip, r_neutral) if r] + r_bandit
    inputs = {"method": method, "params": dict(params or {}),
              **{k: v for k, v in vars(o).items() if k != "progress"},
              "x64": bool(jax.config.read("jax_enable_x64"))}
    checks = {"flip": flip, "neutral": neutral, "bounded": bounded, "concentration": conc,
              "bandit": bandit}
    return ScheduleReport(passed=not reasons, reasons=reasons, checks=checks, inputs=inputs,
                          curves=curves, elapsed_s=time.perf_counter() - t_start)


VERIFY_OPTIONS = tuple(n for n in inspect.signature(verify_schedule).parameters
                       if n not in ("schedule", "progress"))
"""The keyword arguments of :func:`verify_schedule` (the ``[verify]`` table of a config file)."""
