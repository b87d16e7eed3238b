r"""How many generations per prompt? :func:`plan` answers from the finite-group theory.

For each group size ``G`` of a grid the planner reports, at a *representative state* built from
the user's pass rate, the mass of the rarest good mode worth keeping and the number of good
modes:

* **signal**: the probability that a group carries a learning signal, i.e. is mixed (FG
  Lemma 3.1, eq. 9): ``1 − μ^G − (1 − μ)^G`` with ``μ`` the probability that a rollout is
  *scored* correct, ``μ = (1 − δ_FN)(1 − p) + δ_FP p`` (:func:`simplexlab.theory.activity`);
* **tail-miss**: the probability that a group is mixed yet misses the rarest mode
  (FG Lemma 3.1, eq. 11, ``Pr(B_τ) = (1 − τ)^G − (μ − τ)^G − (1 − μ)^G`` with ``τ`` that
  mode's correct-scored mass; :func:`simplexlab.theory.tail_miss`): such a group pushes the
  rare mode down;
* **modes seen**: the expected number of distinct good modes among a group's correct-scored
  rollouts, ``Σ_j 1 − (1 − q_j)^G`` with ``q_j = (1 − p) y_j (1 − δ_FN)``;
* **the within-good drift** ``dL_y/dt`` of the finite-group mean field
  (:class:`simplexlab.theory.FiniteGroup`, the exact expected SGD step at ``G``, log-likelihood
  surrogate, mean reduction, ``t = step · η``) at the representative state, and its regime:
  *collision* (``L_y`` grows: the good modes concentrate, the rare one is lost), *cancel*
  (``|dL_y/dt|`` within ``cancel_tol`` of the G → ∞ GRPO collision drift at the same state, G2
  eq. 22) or *anti-collision* (``L_y`` falls: the rare mode gains);
* **cost**: ``G`` relative to the recommended ``G`` (a step's generation cost is ``∝ G``).

The recommended ``G`` is the smallest of the grid that meets every target: ``signal >=
min_signal``, ``tail_miss <= max_tail_miss`` and, with ``avoid_collision``, a drift regime other
than collision (only the sizes whose drift was computed qualify then).

**The representative state.** ``p = 1 − mu``; the rarest good mode has policy mass
``tau`` (so ``y_1 = tau / mu``), the other ``K − 1`` good modes share the rest of
the good mass equally; ``z`` is uniform over ``M`` bad modes. ``tau`` must lie strictly below
the average good mass ``mu / K`` (at the average the state is uniform and every drift
vanishes by symmetry); its default is half the average, ``mu / (2K)``. Along this family
``ẏ`` keeps the one-rare-mode form, so ``dL_y/dt = 2 ẏ_1 (y_1 − y_2)`` has the sign of the rare
mode's own loss: collision means the rare mode shrinks.

**Compiled programs.** ``G`` is static in the finite-group field, so each drift size is one
compiled program (the state, the gain and the verifier's rates are its arguments, so JAX's
persistent compilation cache serves them again to any pass rate, rarest mass, gain or nonzero
error rate at the same ``K``, ``M``, method and schedule kind; a zero rate empties cells and is
part of the program). The sampling columns are computed at every size of the
grid, the drift only at ``drift_group_sizes`` (default: the powers of 4 of the grid: 4, 16, 64,
256), compiled concurrently on the CPU cores; with ``avoid_collision`` the planner then bisects
the sizes that meet the sampling targets below the first one known not to collide (``refine``),
one program per step, taking the regime to change once as ``G`` grows, from collision to not.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import os
from typing import Any

import numpy as np

from .._checks import trusted_inputs
from .._env import fast_compile_options
from ..shaping import METHODS, GainSchedule, group_rule, lookup_method, meanfield_system
from ..theory import FiniteGroup, State, Verifier, activity, tail_miss

__all__ = ["DEFAULT_GROUP_SIZES", "MAX_MODES", "MAX_PROGRAMS", "PlanReport", "REGIMES", "plan"]

DEFAULT_GROUP_SIZES = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
"""The planner's default grid of group sizes: a coarse grid of 2 .. 256 (each size whose drift
is computed is one compiled program)."""
REGIMES = ("collision", "cancel", "anti-collision")
"""The regimes of the within-good drift, by the sign of ``dL_y/dt`` (``L_y`` grows, stays
within the cancel band, falls)."""
#: methods with a G → ∞ mean-field system in the package (the report's reference column)
_LIMIT_METHODS = tuple(k for k, v in METHODS.items() if v.has_limit_system)
#: bound on the table of an exact path of the finite-group field (the library's default: the
#: enumerate / clusters paths hold a few arrays of this many entries)
_MAX_SIZE = 4_000_000
#: bound on the size of a rule's own reduction (G²RPO's is its largest intermediate, ``K²(G+1)G``
#: entries: 16M, 128 MB, reaches K = 15 at G = 256)
_MAX_RULE_SIZE = 16_000_000
MAX_MODES = 64
"""The most modes ``K + M`` :func:`plan` takes unless ``max_modes`` says otherwise: each drift
program unrolls the exact field over the cells, so its tracing, compilation and memory grow with
the modes (the default grid's four G²RPO programs: K = 8 in 11 s, K = 24 in 24 s, K = 48 in 91 s
and 1.2 GB on a 2-core CPU; K = 300 ended the process in ``std::bad_alloc`` after 73 s)."""
MAX_PROGRAMS = 64
"""The most drift programs (each one compilation, seconds to minutes) :func:`plan` compiles
unless ``max_programs`` says otherwise: the drift sizes plus the bisection's steps."""
#: bytes per (group size, mode) entry of the sampling columns (a few float64 intermediates)
_SAMPLING_ENTRY_BYTES = 32


@dataclasses.dataclass(frozen=True)
class PlanReport:
    r"""What :func:`plan` found (module docstring): one entry per group size of
    :attr:`group_sizes` in each column, ``None`` / NaN where the drift was not computed.

    ``signal``, ``tail_miss``, ``modes_seen``, ``drift`` (``dL_y/dt`` of the finite-group field),
    ``regime`` (:data:`REGIMES` or ``None``), ``cost`` (``G`` over the recommended ``G``, or over
    the smallest when none is recommended); ``recommended`` (``None``: no size of the grid meets
    the targets; ``reasons`` says which target fails); ``limit_drift`` / ``limit_regime``: the
    G → ∞ field's drift at the same state (``grpo`` and ``g2rpo`` only); ``scale``: the G → ∞
    GRPO collision drift there (the unit of ``cancel_tol``); ``state``: the representative
    ``(p, y, z)``; ``inputs``: every argument; ``notes``: sizes whose drift could not be
    computed, and why. What set the recommended ``G``: :meth:`first_met` (each target alone)
    and :meth:`set_by`; :meth:`collides_everywhere`: no size avoids collision."""

    group_sizes: tuple[int, ...]
    signal: tuple[float, ...]
    tail_miss: tuple[float, ...]
    modes_seen: tuple[float, ...]
    drift: tuple[float, ...]
    regime: tuple[str | None, ...]
    cost: tuple[float, ...]
    recommended: int | None
    reasons: tuple[str, ...]
    limit_drift: float | None
    limit_regime: str | None
    scale: float
    state: dict[str, Any]
    inputs: dict[str, Any]
    notes: tuple[str, ...] = ()

    def row(self, group_size: int) -> dict[str, Any]:
        """The columns at one group size of the grid."""
        i = _grid_index(self.group_sizes, group_size)
        return {"group_size": group_size, "signal": self.signal[i],
                "tail_miss": self.tail_miss[i], "modes_seen": self.modes_seen[i],
                "drift": self.drift[i], "regime": self.regime[i], "cost": self.cost[i]}

    def _targets(self) -> dict[str, tuple[str, list[bool]]]:
        """Each target of the recommendation: its name -> (its words, met at each size)."""
        inp = self.inputs
        targets = {
            "signal": (f"signal >= {inp['min_signal']:g}",
                       [s >= inp["min_signal"] for s in self.signal]),
            "tail-miss": (f"tail-miss <= {inp['max_tail_miss']:g}",
                          [m <= inp["max_tail_miss"] for m in self.tail_miss])}
        if inp["avoid_collision"]:
            targets["no collision"] = ("no collision",
                                       [r is not None and r != "collision" for r in self.regime])
        return targets

    def first_met(self) -> dict[str, int | None]:
        """Each target alone (``"signal"``, ``"tail-miss"`` and, with ``avoid_collision``,
        ``"no collision"``): the smallest size of the grid that meets it (``None``: none)."""
        return {name: next((g for g, ok in zip(self.group_sizes, met, strict=True) if ok), None)
                for name, (_, met) in self._targets().items()}

    def set_by(self) -> tuple[str, ...]:
        """The targets that set the recommended ``G``: those that no smaller size of the grid
        meets (empty when the recommended ``G`` is the grid's smallest, or when the targets set it
        only together; also when there is no recommendation)."""
        G = self.recommended
        if G is None or G == self.group_sizes[0]:
            return ()
        return tuple(name for name, g in self.first_met().items() if g == G)

    def collides_everywhere(self) -> bool:
        """Whether the drift collides at every size where it was computed (at least one) and in
        the G → ∞ limit, where the report has it: then no group size avoids collision."""
        known = [r for r in self.regime if r is not None]
        return (bool(known) and all(r == "collision" for r in known)
                and self.limit_regime in (None, "collision"))

    def _why(self) -> str:
        """Which target set the recommended ``G``, in words."""
        G, first = self.recommended, self.first_met()
        words = {name: w for name, (w, _) in self._targets().items()}
        if G == self.group_sizes[0]:
            return "the grid's smallest size, where every target already holds"
        alone = "; ".join(f"{words[n]} from G = {g}" if g is not None else f"{words[n]} nowhere"
                          for n, g in first.items())
        if "no collision" in first:
            alone += ", of the sizes whose drift was computed"
        by = self.set_by()
        if not by:
            return f"set by the targets together (each alone: {alone})"
        return (f"set by the {' and '.join(by)} target{'s' if len(by) > 1 else ''} "
                f"(each alone: {alone})")

    def recommendation(self) -> str:
        """The answer in words, for TRL and verl: the recommended ``G``, the target that set it,
        and, where the drift collides at every size, that no ``G`` avoids collision."""
        method = self.inputs["method"]
        collides = self.collides_everywhere()
        limit = " and at G → ∞" if self.limit_regime is not None else ""
        never = (f"no group size avoids collision for {method}: L_y grows at every G whose "
                 f"drift was computed{limit}")
        if self.recommended is None:
            text = ("no group size of the grid meets the targets: " + "; ".join(self.reasons)
                    + ". Relax a target, or widen the grid.")
            return text + (f"\n  {never[0].upper()}{never[1:]}." if collides else "")
        G = self.recommended
        r = self.row(G)
        regime = f", drift regime {r['regime']}" if r["regime"] else ""
        text = (f"recommended group size G = {G} (signal {r['signal']:.3f}, tail-miss "
                f"{r['tail_miss']:.3f}{regime}), {self._why()}.\n")
        if collides and not self.inputs["avoid_collision"]:
            text += (f"  Note: {never}; this G meets the sampling targets only (a rule that "
                     "anti-collides, e.g. --method g2rpo with a gain, is needed for that).\n")
        return (text + f"  TRL:  GRPOConfig(num_generations={G})  (the generation batch size "
                f"must be a multiple of {G})\n"
                f"  verl: actor_rollout_ref.rollout.n={G}")

    def legend(self) -> list[str]:
        """One line per column of :meth:`to_text`: what it is."""
        inp = self.inputs
        tau = inp["tau"]
        default = math.isclose(tau, inp["mu"] / (2 * inp["K"]))
        of = "the recommended G" if self.recommended is not None else "the grid's smallest G"
        return [
            "signal: probability that a group is mixed (some rollouts scored correct, some "
            "not), so that its advantages are not all zero (FG Lemma 3.1, eq. 9)",
            f"tail-miss: probability that a group is mixed yet has no correct rollout of the "
            f"rarest good mode (policy mass tau = {tau:.4g}"
            + (", the default: half the average good mode, mu/(2K)" if default else "")
            + "); such a group pushes that mode down (FG Lemma 3.1, eq. 11)",
            "modes seen: expected number of distinct good modes among a group's correct "
            "rollouts",
            "dL_y/dt, regime: drift of the concentration L_y = ||y||^2 of the exact expected "
            "SGD step at G (collision: the good modes concentrate, the rarest is lost)",
            f"cost: G over {of} (a step's generation cost is proportional to G)",
        ]

    def to_text(self) -> str:
        """The table (one row per group size), what each column is, and the recommendation."""
        s = self.state
        inp = self.inputs
        head = [f"plan: method {inp['method']}"
                + (f", schedule {inp['schedule']['kind']} gain {inp['schedule']['gain']:g}"
                   f"{' + neutralizer' if inp['schedule']['neutralize'] else ''}"
                   if inp.get("schedule") else "")
                + f", delta_fn {inp['delta_fn']:g}, delta_fp {inp['delta_fp']:g}",
                f"state: pass rate {1 - s['p']:.4g}, K = {len(s['y'])} good modes (rarest "
                f"mass {inp['tau']:.4g}, y_1 = {s['y'][0]:.4g}), M = {len(s['z'])} bad "
                f"modes; targets: signal >= {inp['min_signal']:g}, tail-miss <= "
                f"{inp['max_tail_miss']:g}"
                + (", no collision" if inp["avoid_collision"] else "")]
        cols = f"{'G':>5} {'signal':>8} {'tail-miss':>10} {'modes seen':>11} " \
               f"{'dL_y/dt':>11} {'regime':>15} {'cost':>7}"
        lines = [*head, "", cols, "-" * len(cols)]
        for i, G in enumerate(self.group_sizes):
            d = self.drift[i]
            mark = "  <-" if G == self.recommended else ""
            lines.append(f"{G:>5} {self.signal[i]:>8.3f} {self.tail_miss[i]:>10.3f} "
                         f"{self.modes_seen[i]:>11.2f} "
                         f"{f'{d:.3e}' if math.isfinite(d) else '-':>11} "
                         f"{self.regime[i] or '-':>15} {self.cost[i]:>6.2f}x{mark}")
        if self.limit_drift is not None:
            lines.append(f"{'G→∞':>5} {'':>8} {'':>10} {'':>11} {self.limit_drift:>11.3e} "
                         f"{self.limit_regime:>15}")
        lines += [f"(regime: sign of dL_y/dt of the exact finite-G field; cancel when "
                  f"|dL_y/dt| <= {inp['cancel_tol']:g} x {self.scale:.3e}, the G→∞ GRPO "
                  f"collision drift)"]
        lines += [f"  {line}" for line in self.legend()]
        lines += [f"note: {n}" for n in self.notes]
        lines += ["", self.recommendation()]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values (NaN -> ``None``)."""
        def num(x):
            return None if x is None or not math.isfinite(x) else float(x)

        return {
            "group_sizes": list(self.group_sizes),
            "signal": [num(v) for v in self.signal],
            "tail_miss": [num(v) for v in self.tail_miss],
            "modes_seen": [num(v) for v in self.modes_seen],
            "drift": [num(v) for v in self.drift],
            "regime": list(self.regime),
            "cost": [num(v) for v in self.cost],
            "recommended": self.recommended,
            "set_by": list(self.set_by()),
            "first_met": self.first_met(),
            "collides_everywhere": self.collides_everywhere(),
            "trl": None if self.recommended is None else {"num_generations": self.recommended},
            "verl": (None if self.recommended is None
                     else {"actor_rollout_ref.rollout.n": self.recommended}),
            "reasons": list(self.reasons),
            "limit_drift": num(self.limit_drift),
            "limit_regime": self.limit_regime,
            "scale": num(self.scale),
            "state": {"p": float(self.state["p"]), "y": [float(v) for v in self.state["y"]],
                      "z": [float(v) for v in self.state["z"]]},
            "inputs": self.inputs,
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------- validation


def _number(x, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a real number; got {x!r}")
    if not math.isfinite(float(x)):
        raise ValueError(f"{name} must be finite; got {x!r}")
    return float(x)


def _count(x, name: str, lower: int) -> int:
    if isinstance(x, bool) or not isinstance(x, int | np.integer) or x < lower:
        raise ValueError(f"{name} must be an integer >= {lower}; got {x!r}")
    return int(x)


def _sizes(values, name: str, minimum: int, modes: int | None = None) -> tuple[int, ...]:
    """The sorted distinct group sizes of ``values``, each an integer >= ``minimum``; with
    ``modes`` (``K + M``), a grid whose sampling columns cannot fit in half of this machine's
    memory is refused before they are computed."""
    from .._checks import host_memory_bytes

    if isinstance(values, str | bytes):
        raise ValueError(f"{name} must be a sequence of integers; got {values!r}")
    memory = host_memory_bytes()

    def check_length(n: int) -> None:  # before a sequence of known length is listed
        need = n * ((modes or 0) + 8) * _SAMPLING_ENTRY_BYTES
        if modes is not None and memory is not None and need > memory // 2:
            raise ValueError(f"{name}: {n:,} group sizes × {modes} modes need about {need:,} "
                             f"bytes of sampling columns, more than half of this machine's "
                             f"memory ({memory:,} bytes); use a coarser grid")

    if hasattr(values, "__len__"):
        check_length(len(values))
    try:
        values = list(values)
    except TypeError:
        raise ValueError(f"{name} must be a sequence of integers; got {values!r}") from None
    if not values:
        raise ValueError(f"{name} must not be empty")
    check_length(len(values))
    for g in values:
        if isinstance(g, bool) or not isinstance(g, int | np.integer):
            raise ValueError(f"{name}: a group size must be an integer; got {g!r}")
        if g < minimum:
            raise ValueError(f"{name}: group size {g!r} is below the rule's minimum "
                             f"{minimum}")
    return tuple(sorted({int(g) for g in values}))


def _schedule_of(method, schedule, gain):
    m = lookup_method(method, "plan: ")
    if schedule is not None and not isinstance(schedule, GainSchedule):
        raise ValueError(f"schedule must be a GainSchedule (or None); got {schedule!r}")
    if not m.schedule:
        if schedule is not None or gain is not None:
            raise ValueError(f"gain and schedule are G²RPO settings; method {method!r} takes "
                             f"neither (got gain={gain!r}, schedule={schedule!r})")
        return None
    import equinox as eqx
    import jax.numpy as jnp

    schedule = GainSchedule() if schedule is None else schedule
    gain = schedule.gain if gain is None else gain
    if np.ndim(gain) != 0:
        raise ValueError(f"gain must be one number; got {gain!r}")
    gain = _number(gain.item() if hasattr(gain, "item") else gain, "gain")
    # an array, so that the compiled drift programs take it as an argument (cache across gains)
    return eqx.tree_at(lambda s: s.gain, schedule, jnp.asarray(gain, jnp.result_type(float)))


def _representative(mu: float, tau: float, K: int, M: int):
    y = np.full(K, (1.0 - tau / mu) / (K - 1))
    y[0] = tau / mu
    return 1.0 - mu, y, np.full(M, 1.0 / M)


# --------------------------------------------------------------------------- drift programs


def _drift_args(dyn, state: State):
    """``(args, static)``: a drift program's arguments ``(dyn arrays, p, y, z)`` and the
    system's static part, which the program closes over."""
    import equinox as eqx

    arrays, static = eqx.partition(dyn, eqx.is_array)
    return (arrays, state.p, state.y, state.z), static


def _drift_program(static, t: float, args):
    """``(dyn arrays, p, y, z) -> dL_y/dt`` (``t`` fixed), lowered at ``args``
    (:func:`_drift_args`)."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    def drift(arrays, p, y, z):
        d = eqx.combine(arrays, static)
        # the planner's own states, checked on the host: no run-time check (a host callback),
        # so that JAX's persistent cache keeps the program
        with trusted_inputs():
            v = d.vector_field(t, State(p, y, z))
        return 2.0 * jnp.sum(y * v.y)

    return jax.jit(drift).lower(*args)


def _grid_index(group_sizes: tuple[int, ...], group_size: int) -> int:
    """The index of ``group_size`` in a report's grid; a ``ValueError`` naming the grid if it
    is not there."""
    if group_size not in group_sizes:
        raise ValueError(f"group_size {group_size!r} is not in the report's grid "
                         f"{list(group_sizes)}")
    return group_sizes.index(group_size)

def _compile(lowered, options):
    if options:
        try:
            return lowered.compile(compiler_options=options)
        except Exception:  # an XLA without the option: its defaults
            pass
    return lowered.compile()


def _program_key(static, t: float, args):
    """What a drift program depends on beyond its array arguments (the system's static part,
    ``t``, the arguments' structure, shapes and dtypes; :func:`_drift_args`): jobs with one key
    share one program (systems whose group size is data, one per size); ``None`` where the
    static part is not hashable."""
    import jax

    leaves, treedef = jax.tree_util.tree_flatten(static)
    shapes = tuple((np.shape(a), np.dtype(a.dtype).str) for a in jax.tree_util.tree_leaves(args))
    key = (treedef, tuple(leaves), float(t), jax.tree_util.tree_structure(args), shapes)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _run_programs(jobs, *, fast_compile: bool, workers: int | None, programs=None):
    """``{key: float}``: each job ``(key, dyn, t, state)`` traced here, compiled concurrently,
    run. Jobs whose programs are one (:func:`_program_key`) compile it once; ``programs``: a
    dict of the programs compiled so far (reused, and the new ones added)."""
    # the drift programs run once, in milliseconds: compiled with the fast-compiling CPU code
    # generation of quick runs (BENCHMARKS.md has the compile times); the same program, the
    # same numbers up to the last bits
    options = fast_compile_options() if fast_compile else None
    programs = {} if programs is None else programs
    lowered, args, of = {}, {}, {}
    for key, dyn, t, state in jobs:
        args[key], static = _drift_args(dyn, state)
        pk = _program_key(static, t, args[key])
        pk = ("job", key) if pk is None else pk
        of[key] = pk
        if pk not in programs and pk not in lowered:
            lowered[pk] = _drift_program(static, t, args[key])
    if lowered:
        workers = workers or max(1, min(len(lowered), os.cpu_count() or 1))
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            futures = {k: pool.submit(_compile, low, options) for k, low in lowered.items()}
            programs.update({k: f.result() for k, f in futures.items()})
    return {k: float(programs[of[k]](*args[k])) for k in of}


def _finite_system(rule, G, verifier, K, M, max_group_size=None):
    """The finite-group system of ``rule`` (the one rule of the plan, built once) at ``G`` with
    an exact path that fits (``None``: none does); ``max_group_size``: the group size as data
    below it (one program for every size)."""
    for bound in (_MAX_SIZE, _MAX_RULE_SIZE):
        dyn = FiniteGroup(rule, group_size=G, verifier=verifier, max_size=bound,
                          max_group_size=max_group_size)
        try:
            path = dyn.resolve_path(K, M)
        except ValueError:
            continue
        if bound == _MAX_SIZE or path == "rule":
            return dyn
    return None


def _regime(drift: float, scale: float, tol: float) -> str:
    if abs(drift) <= tol * scale:
        return "cancel"
    return "collision" if drift > 0 else "anti-collision"


# --------------------------------------------------------------------------- the planner


def plan(mu, *, tau=None, K: int | None = None, method: str = "g2rpo",
         gain=None, schedule: GainSchedule | None = None, delta_fn=0.0, delta_fp=0.0,
         M: int = 2, group_sizes=None, drift_group_sizes=None,
         min_signal: float = 0.9, max_tail_miss: float = 0.2, avoid_collision: bool = False,
         refine: bool = True, cancel_tol: float = 0.05, params: dict[str, Any] | None = None,
         num_groups: int | None = None, fast_compile: bool = True,
         workers: int | None = None, max_modes: int = MAX_MODES,
         max_programs: int = MAX_PROGRAMS) -> PlanReport:
    r"""How many generations per prompt: the sampling statistics and the finite-group drift of
    ``method`` at each group size, and the smallest size that meets the targets (module
    docstring).

    ``mu``: the policy's success probability ``1 − p`` on the prompts, in (0, 1);
    ``tau``: the policy mass of the rarest good mode worth keeping, in ``(0, mu/K)``
    (default ``mu/(2K)``); ``K``: the number of good modes (default 4, at least 2);
    ``M``: the number of bad modes; ``method``: a name of :data:`simplexlab.shaping.METHODS`;
    ``gain`` (λ or λ0; G²RPO only) replaces the ``schedule``'s (:class:`GainSchedule`, default
    schedule B with the neutralizer); ``delta_fn``, ``delta_fp``: the verifier's error rates;
    ``params``: the method's own parameters; ``num_groups``: groups per batch (REINFORCE++).

    ``group_sizes``: the grid (default :data:`DEFAULT_GROUP_SIZES`); ``drift_group_sizes``: the
    sizes at which the drift is computed (default: the powers of 4 of the grid; ``"all"``: every
    size; each is one compiled program); ``min_signal``, ``max_tail_miss``,
    ``avoid_collision``: the targets (``refine``: bisect the grid for the first size that does
    not collide);
    ``cancel_tol``: the "cancel" band, a fraction of the G → ∞ GRPO collision drift at the same
    state. ``fast_compile``: compile the drift programs with XLA's backend optimisation off
    (they run once; same numbers); ``workers``: compiling threads (default: one per core).
    ``max_modes`` (:data:`MAX_MODES`) and ``max_programs`` (:data:`MAX_PROGRAMS`): size guards,
    checked before any compute, on ``K + M`` and on the number of drift programs compiled (the
    error states the count and the keyword to raise); a grid whose sampling columns cannot fit
    in memory is refused too.

    Every bad input raises ``ValueError`` naming the value."""
    import equinox as eqx
    import jax.numpy as jnp

    dt = jnp.result_type(float)  # float64 where x64 is on
    mu = _number(mu, "mu")
    if not 0.0 < mu < 1.0:
        raise ValueError(f"mu must be in the open interval (0, 1); got {mu!r}")
    K = 4 if K is None else _count(K, "K (number of good modes)", 2)
    M = _count(M, "M (number of bad modes)", 1)
    max_modes = _count(max_modes, "max_modes", 3)
    max_programs = _count(max_programs, "max_programs", 1)
    if K + M > max_modes:
        raise ValueError(f"K + M = {K + M:,} modes is more than max_modes = {max_modes}: each "
                         "drift program's tracing, compilation and memory grow with the modes "
                         f"(K = 48: 91 s, 1.2 GB); pass max_modes={K + M} (--max-modes) to "
                         "plan it anyway")
    tau = mu / (2 * K) if tau is None else _number(tau, "tau")
    if not 0.0 < tau < mu / K:
        raise ValueError(f"tau (the rarest good mode's mass) must be in (0, mu/K) = "
                         f"(0, {mu / K:.6g}) (below the average good mode; use a "
                         f"smaller K for a larger one); got {tau!r}")
    schedule = _schedule_of(method, schedule, gain)
    delta_fn = _number(delta_fn, "delta_fn")
    delta_fp = _number(delta_fp, "delta_fp")
    if not (0.0 <= delta_fn < 1.0 and 0.0 <= delta_fp < 1.0 and delta_fn + delta_fp < 1.0):
        raise ValueError(f"delta_fn, delta_fp must be rates in [0, 1) with delta_fn + delta_fp "
                         f"< 1; got delta_fn={delta_fn!r}, delta_fp={delta_fp!r}")
    verifier = Verifier(jnp.asarray(delta_fn, dt), jnp.asarray(delta_fp, dt))
    for name, v in (("min_signal", min_signal), ("max_tail_miss", max_tail_miss)):
        if not 0.0 <= _number(v, name) <= 1.0:
            raise ValueError(f"{name} must be a probability in [0, 1]; got {v!r}")
    if not 0.0 <= _number(cancel_tol, "cancel_tol") < 1.0:
        raise ValueError(f"cancel_tol must be in [0, 1); got {cancel_tol!r}")
    for name, v in (("avoid_collision", avoid_collision), ("refine", refine),
                    ("fast_compile", fast_compile)):
        if not isinstance(v, bool):
            raise ValueError(f"{name} must be True or False; got {v!r}")
    rule = group_rule(method, params=params, schedule=schedule, verifier=verifier,
                      num_groups=num_groups)
    minimum = rule.min_group_size
    sizes = _sizes(DEFAULT_GROUP_SIZES if group_sizes is None else group_sizes,
                   "group_sizes", minimum, K + M)
    if drift_group_sizes is None:  # the powers of 4 of the grid (else its largest)
        drift_sizes = tuple(g for g in sizes if g & (g - 1) == 0 and g.bit_length() % 2 == 1)
        drift_sizes = drift_sizes or (sizes[-1],)
    elif isinstance(drift_group_sizes, str) and drift_group_sizes == "all":
        drift_sizes = sizes
    else:
        drift_sizes = _sizes(drift_group_sizes, "drift_group_sizes", minimum)
        outside = sorted(set(drift_sizes) - set(sizes))
        if outside:
            raise ValueError(f"drift_group_sizes {outside} are not in group_sizes {list(sizes)}")
    # the drift sizes and the bisection's steps (avoid_collision), one compilation each
    programs = len(drift_sizes) + (math.ceil(math.log2(len(sizes) + 1))
                                   if avoid_collision and refine else 0)
    if programs > max_programs:
        raise ValueError(f"the plan compiles up to {programs:,} drift programs ("
                         f"{len(drift_sizes):,} drift sizes"
                         + (", plus the bisection's steps" if avoid_collision and refine else "")
                         + f"), more than max_programs = {max_programs} (each is one "
                         f"compilation, seconds to minutes); pass max_programs={programs} "
                         "(--max-programs), or fewer drift_group_sizes")

    # ---- the representative state and the sampling columns (FG Lemma 3.1)
    p, y, z = _representative(mu, tau, K, M)
    mu_scored = (1.0 - delta_fn) * mu + delta_fp * p  # a rollout scored correct
    tau_scored = (1.0 - delta_fn) * tau  # the rarest mode, scored correct
    G = np.asarray(sizes, float)
    signal = np.asarray(activity(mu_scored, G), float)
    miss = np.asarray(tail_miss(mu_scored, tau_scored, G), float)
    q = (1.0 - delta_fn) * mu * y
    seen = np.sum(-np.expm1(G[:, None] * np.log1p(-q[None, :])), -1)

    # ---- the drift: one compiled program per size, plus the G → ∞ references
    state = State(jnp.asarray(p, dt), jnp.asarray(y, dt), jnp.asarray(z, dt))
    t = float(schedule.ramp_steps) if schedule is not None else 0.0  # after any warm-up
    notes: list[str] = []

    # the group size as data where the rule's path takes it: one drift program for every size
    # (the bisection's too), its arrays padded to the largest; else one program per size
    shared = _finite_system(rule, sizes[-1], verifier, K, M, max_group_size=sizes[-1])
    programs: dict = {}

    def drifts(sizes_now, references=()):
        jobs = list(references)
        for g in sizes_now:
            dyn = (_finite_system(rule, g, verifier, K, M) if shared is None else
                   eqx.tree_at(lambda d: d.group_size, shared, jnp.asarray(g, dt)))
            if dyn is None:
                notes.append(f"G = {g}: no exact path of the finite-group field fits at K = {K}, "
                             f"M = {M} (the rule's own reduction up to {_MAX_RULE_SIZE:,} "
                             f"entries, the other paths up to {_MAX_SIZE:,}); drift not computed")
                continue
            jobs.append((g, dyn, t, state))
        return _run_programs(jobs, fast_compile=fast_compile, workers=workers,
                             programs=programs)

    references = [("scale", meanfield_system("grpo", verifier=verifier), 0.0, state)]
    if method in _LIMIT_METHODS:
        references.append(("limit", meanfield_system(method, schedule, verifier=verifier), t,
                           state))
    values = drifts(drift_sizes, references)
    scale = abs(values.pop("scale"))
    limit = values.pop("limit", None)
    sampled_ok = (signal >= min_signal) & (miss <= max_tail_miss)
    tried = set(drift_sizes)
    if avoid_collision and refine:
        # bisect the sizes that meet the sampling targets, below the first one known not to
        # collide, taking the regime to change once, from collision to not (a size below one
        # that collides collides too)
        candidates = [g for g, ok in zip(sizes, sampled_ok, strict=True) if ok]
        while True:
            collides = [g for g in values if _regime(values[g], scale, cancel_tol) == "collision"]
            first_good = min((g for g in candidates if g in values and g not in collides),
                             default=math.inf)
            pending = [g for g in candidates if g not in tried and g < first_good
                       and not any(h >= g for h in collides)]
            if not pending:
                break
            g = pending[len(pending) // 2]
            tried.add(g)
            values.update(drifts([g]))
    drift = np.array([values.get(g, math.nan) for g in sizes])
    regime = tuple(_regime(d, scale, cancel_tol) if math.isfinite(d) else None for d in drift)

    # ---- the recommendation
    ok = sampled_ok.copy()
    if avoid_collision:
        ok &= np.array([r is not None and r != "collision" for r in regime])
    recommended = int(G[np.argmax(ok)]) if ok.any() else None
    reasons = []
    if recommended is None:
        if not (signal >= min_signal).any():
            reasons.append(f"signal < {min_signal:g} at every G (max {signal.max():.3f})")
        if not (miss <= max_tail_miss).any():
            reasons.append(f"tail-miss > {max_tail_miss:g} at every G (min {miss.min():.3f})")
        if avoid_collision and all(r in (None, "collision") for r in regime):
            reasons.append("collision at every G whose drift was computed")
        if not reasons:
            reasons.append("no single G meets every target at once")
    ref = recommended or sizes[0]
    inputs = {
        "mu": mu, "tau": tau, "K": K, "M": M,
        "method": method, "schedule": None if schedule is None else schedule.to_dict(),
        "delta_fn": delta_fn, "delta_fp": delta_fp, "params": dict(params or {}),
        "num_groups": num_groups, "group_sizes": list(sizes),
        "drift_group_sizes": sorted(g for g in sizes if math.isfinite(values.get(g, math.nan))),
        "refine": refine, "min_signal": float(min_signal),
        "max_tail_miss": float(max_tail_miss), "avoid_collision": avoid_collision,
        "cancel_tol": float(cancel_tol),
    }
    return PlanReport(
        group_sizes=sizes, signal=tuple(signal.tolist()), tail_miss=tuple(miss.tolist()),
        modes_seen=tuple(seen.tolist()), drift=tuple(drift.tolist()), regime=regime,
        cost=tuple((G / ref).tolist()), recommended=recommended, reasons=tuple(reasons),
        limit_drift=limit,
        limit_regime=None if limit is None else _regime(limit, scale, cancel_tol),
        scale=scale, state={"p": p, "y": y.tolist(), "z": z.tolist()}, inputs=inputs,
        notes=tuple(notes))
