r"""How to split a budget of ``R`` rollouts per step: :func:`plan_budget` answers from the theory.

For a distribution of prompts (a :class:`~simplexlab.theory.PromptSet`: a Beta law of pass
rates, a histogram, a rollouts file of the base model) and a budget of ``R`` rollouts per step
split as ``P`` prompts × ``G`` rollouts each (``R = P G``), the planner reports at each ``G``
that divides ``R``:

* the **silent fraction** ``E_prompts[μ^G + (1 − μ)^G]`` (the groups whose advantages all
  vanish) and the mean **tail-miss** (FG Lemma 3.1, eqs. 9, 11; exact, on the whole set);
* the **progress per step** of the objective ``Φ*`` (``"pass"``: the pass rate; ``"pass@k"``;
  ``"diversity"``: ``1 − L_y`` of the good modes), with the rate ``η`` at its progress-optimal
  value ``η* = aᵀd / c`` under a trust region of ``kl`` per nat of KL between successive
  policies (:func:`simplexlab.theory.step_progress`), for SGD and Adam, and per rollout
  ``Φ*/R``; the step's exact mean and covariance of the shared-parameter model
  (:class:`~simplexlab.sim.SharedBandit`'s: the prompts' pool, ``features``);
* the **regime**: small-noise or noise-dominated, by the gradient noise scale
  ``B_noise = tr(BΣ_1)/(mᵀBm)`` against ``P`` (McCandlish et al., arXiv 1812.06162; ``B`` the
  trust region's curvature);
* the compute-optimal ``G*`` (the largest ``Φ*``) with its margin over its neighbours in the
  grid, for SGD and Adam, in TRL's words (``num_generations = G*``, a generation batch of ``R``
  completions, ``R/G*`` prompts) and verl's (``actor_rollout_ref.rollout.n = G*``,
  ``data.train_batch_size = R/G*`` prompts).

:func:`budget_curve` gives ``G*(R)`` over a range of budgets from the same moments (one
compiled program per group size; the budgets cost nothing more). The single-state planner
:func:`~simplexlab.verify.plan` is this question's special case for one prompt
(:meth:`PromptSet.single`): its signal and tail-miss columns are ``1 −`` the silent fraction and
the tail-miss of that one prompt.

**Why a trust region.** Near a hard prompt the pass rate is convex in the logits (a sigmoid
below 1/2): its own second-order term rewards ever larger steps, which is what the per-prompt
bandit shows (the best ``η`` at the top of any grid). A step that pays for the KL it moves the
policy (PPO's clip, TRPO's constraint, a KL penalty) has a best rate; where ``∇²f`` is small
against ``β J`` that rate keeps a fixed expected KL per step, and ``G*`` does not depend on
``β``.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import os
from typing import Any

import numpy as np

from .._env import fast_compile_options
from ..shaping import group_rule, lookup_method
from ..theory import (
    FEATURES,
    PromptSet,
    Verifier,
    objective_value,
    progress_batch,
    shared_moments,
    shared_policy,
)
from ._plan import _compile, _count, _grid_index, _number

__all__ = ["BUDGET_GROUP_SIZES", "BudgetCurve", "BudgetReport", "bandit_progress",
           "bandit_resolution", "budget_curve", "plan_budget"]

BUDGET_GROUP_SIZES = (2, 4, 8, 16, 32, 64, 128, 256)
"""The group sizes of :func:`budget_curve` (those that divide each budget)."""
#: the default budgets of :func:`budget_curve`: 12 powers of 2, 4 .. 8192 rollouts per step
DEFAULT_BUDGETS = tuple(2**k for k in range(2, 14))
#: the optimizers the planner compares (small-step limits of the theory)
OPTIMIZERS = ("sgd", "adam")
#: the multiples of η* at which a report shows Φ(η) (the optimum inside the grid)
ETA_GRID = (0.25, 0.5, 1.0, 2.0, 4.0)
#: the largest group size the default grid holds
MAX_GROUP = 256
#: the expected KL per step (nats) above which a report notes that the step is large: the
#: second-order model then overestimates the progress (by ~20 % at 0.06-0.1 nats against the
#: shared bandit, experiment budget-planner, one-hot features)
LARGE_STEP_KL = 0.05


def _divisors(R: int, lower: int, upper: int = MAX_GROUP) -> tuple[int, ...]:
    return tuple(g for g in range(max(lower, 2), min(R, upper) + 1) if R % g == 0)


@dataclasses.dataclass(frozen=True)
class _Setting:
    """What the planner's programs are built from (checked)."""

    prompts: PromptSet
    rule: Any
    verifier: Verifier
    policy: Any
    objective: str
    kl: float
    inputs: dict[str, Any]


def _setting(prompts, *, method, objective, kl, features, num_features, feature_seed, K, M,
             rare_share, pool_size, delta_fn, delta_fp, params, gain) -> _Setting:
    if not isinstance(prompts, PromptSet):
        raise ValueError(f"prompts must be a PromptSet (PromptSet.from_beta(a, b), "
                         f".histogram(...), .from_rollouts(file)); got {prompts!r}")
    lookup_method(method, "plan: ")
    kl = _number(kl, "kl (β, the price of a nat of KL per step)")
    if kl <= 0:
        raise ValueError(f"kl (β, the price of a nat of KL per step) must be > 0; got {kl!r}")
    if features not in FEATURES:
        raise ValueError(f"features must be one of {FEATURES}; got {features!r}")
    K = _count(K, "K (number of good modes)", 1)
    M = _count(M, "M (number of bad modes)", 1)
    pool_size = _count(pool_size, "pool_size", 1)
    num_features = _count(num_features, "num_features", 1)
    delta_fn, delta_fp = _number(delta_fn, "delta_fn"), _number(delta_fp, "delta_fp")
    if not (0.0 <= delta_fn < 1.0 and 0.0 <= delta_fp < 1.0 and delta_fn + delta_fp < 1.0):
        raise ValueError(f"delta_fn, delta_fp must be rates in [0, 1) with delta_fn + delta_fp "
                         f"< 1; got delta_fn={delta_fn!r}, delta_fp={delta_fp!r}")
    verifier = Verifier(delta_fn, delta_fp)
    own = dict(params or {})
    if gain is not None:
        own["gain"] = _number(gain, "gain")
    rule = group_rule(method, params=own, verifier=verifier)
    if not rule.group_local:
        raise ValueError(f"method {method!r} normalises over its batch of groups; the budget "
                         "planner takes group-local rules")
    pool = prompts.pool(pool_size)
    policy = shared_policy(pool, K, M, features=features, num_features=num_features,
                           seed=feature_seed, rare_share=rare_share)
    objective_value(objective, policy)  # a known objective
    inputs = {"method": method, "objective": objective, "kl": kl, "features": features,
              "num_features": num_features if features == "random" else None,
              "feature_seed": feature_seed, "K": K, "M": M, "rare_share": rare_share,
              "pool_size": pool.size, "delta_fn": delta_fn, "delta_fp": delta_fp,
              "params": own, "prompts": prompts.describe()}
    return _Setting(prompts, rule, verifier, policy, objective, kl, inputs)


def _shared_bound(s: _Setting, sizes) -> int | None:
    """The largest of ``sizes`` where one program serves them all (the rule's second moment on
    a path that takes the group size as data: the counts path), else ``None``."""
    from ..theory.internal import MAX_SIZE, active_cells, choose_moments_path

    C = s.policy.base_logits.shape[-1]
    K, bound = s.policy.K, max(sizes)
    try:
        choose_moments_path(s.rule, K, C - K, bound, active_cells(s.verifier, K, C - K), "auto",
                            MAX_SIZE, allow_montecarlo=False, max_group_size=bound)
    except ValueError:
        return None
    return bound


def _moments_by_size(s: _Setting, sizes, *, fast_compile: bool, workers: int | None):
    """``{G: per-prompt StepMoments}``: one program for every size where the rule's path takes
    the group size as data (:func:`_shared_bound`: the largest size the bound, the others
    padded to it; the same numbers to round-off), else one program per size, traced here,
    compiled concurrently on the CPU cores; run."""
    import jax
    import jax.numpy as jnp

    from ..theory import prompt_moments

    th = np.asarray(s.policy.base_logits)  # W = 0: the base policy (on the host)
    probs = np.exp(th - th.max(-1, keepdims=True))
    probs = probs / probs.sum(-1, keepdims=True)
    options = fast_compile_options() if fast_compile else None
    sizes = list(sizes)
    bound = _shared_bound(s, sizes) if len(sizes) > 1 else None
    if bound is not None:
        fn = jax.jit(lambda p, G: prompt_moments(s.rule, p, s.policy.K, G, verifier=s.verifier,
                                                 max_group_size=bound))
        dt = jnp.result_type(float)
        program = _compile(fn.lower(probs, jnp.asarray(sizes[0], dt)), options)
        return {G: program(probs, jnp.asarray(G, dt)) for G in sizes}
    lowered = {}
    for G in sizes:
        fn = jax.jit(lambda p, G=G: prompt_moments(s.rule, p, s.policy.K, G,
                                                   verifier=s.verifier))
        lowered[G] = fn.lower(probs)
    workers = workers or max(1, min(len(lowered), os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futures = {G: pool.submit(_compile, low, options) for G, low in lowered.items()}
        return {G: f.result()(probs) for G, f in futures.items()}


def _progress(s: _Setting, moments, pairs, optimizers):
    """``{(optimizer, G, P): Progress}`` for the pairs ``(G, P)``, from one compiled program."""
    moms = [shared_moments(s.rule, s.policy, G, num_prompts=P, moments=moments[G])
            for G, P in pairs]
    out = progress_batch(moms, s.policy, s.objective, kl=s.kl, optimizers=optimizers)
    return {(o, G, P): out[i][j] for i, (G, P) in enumerate(pairs)
            for j, o in enumerate(optimizers)}


def _num(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _best(values, sizes):
    """``(G*, margin)``: the size of the largest value and its relative margin over its grid
    neighbours (``None`` where it has none); ``(None, None)`` where no value is positive."""
    v = np.asarray(values, float)
    if not np.any(v > 0):
        return None, None
    i = int(np.nanargmax(v))
    near = [v[j] for j in (i - 1, i + 1) if 0 <= j < len(v)]
    return int(sizes[i]), (float(v[i] / max(near) - 1.0) if near and max(near) > 0 else None)


@dataclasses.dataclass(frozen=True)
class BudgetReport:
    r"""What :func:`plan_budget` found (module docstring): one entry per group size of
    :attr:`group_sizes` in each column.

    ``budget`` ``R``; ``num_prompts`` ``P = R/G``; ``silent``, ``tail_miss``; for each optimizer
    of :attr:`optimizers`: ``progress`` ``Φ*`` per step, ``per_rollout`` ``Φ*/R``, ``eta``
    ``η*``, ``gain`` (the objective's expected gain at ``η*``), ``kl_step`` (the KL it pays),
    ``regime``, ``noise_scale`` ``B_noise`` (prompts per step), ``best`` ``G*`` and ``margin``
    (``Φ*(G*)`` over the best of its neighbours, minus 1); ``eta_grid``: ``Φ(η)`` at multiples
    of ``η*`` at each optimizer's ``G*`` (the optimum inside the grid); ``fixed_prompts``: the
    ``P`` the user fixed (``None``: free); ``objective_start`` ``F`` at the start; ``inputs``;
    ``notes``."""

    budget: int
    group_sizes: tuple[int, ...]
    num_prompts: tuple[int, ...]
    silent: tuple[float, ...]
    tail_miss: tuple[float, ...]
    optimizers: tuple[str, ...]
    progress: dict[str, tuple]
    per_rollout: dict[str, tuple]
    eta: dict[str, tuple]
    gain: dict[str, tuple]
    kl_step: dict[str, tuple]
    regime: dict[str, tuple]
    noise_scale: dict[str, tuple]
    best: dict[str, int | None]
    margin: dict[str, float | None]
    eta_grid: dict[str, list]
    fixed_prompts: int | None
    objective_start: float
    inputs: dict[str, Any]
    notes: tuple[str, ...] = ()

    def row(self, group_size: int) -> dict[str, Any]:
        """The columns at one group size."""
        i = _grid_index(self.group_sizes, group_size)
        out = {"group_size": group_size, "num_prompts": self.num_prompts[i],
               "silent": self.silent[i], "tail_miss": self.tail_miss[i]}
        for o in self.optimizers:
            out[o] = {k: getattr(self, k)[o][i] for k in
                      ("progress", "per_rollout", "eta", "gain", "kl_step", "regime",
                       "noise_scale")}
        return out

    def recommendation(self) -> str:
        """The answer in words, for TRL and verl."""
        R = self.budget
        lines = []
        for o in self.optimizers:
            G = self.best[o]
            if G is None:
                lines.append(f"{o}: no group size makes progress on {self.inputs['objective']}")
                continue
            m = self.margin[o]
            margin = (f"{100 * m:.1f} % more progress per step than its best neighbour"
                      if m is not None else "the only size of the grid")
            lines.append(f"{o}: G* = {G} ({R // G} prompts x {G} rollouts), {margin}")
        G = self.best[self.optimizers[0]]
        if G is not None:
            P = R // G
            lines += [f"  TRL:  GRPOConfig(num_generations={G}, generation_batch_size={R})  "
                      f"({P} prompts per step; per_device_train_batch_size x num_processes x "
                      f"steps_per_generation = {R} completions)",
                      f"  verl: actor_rollout_ref.rollout.n={G} data.train_batch_size={P}  "
                      f"({P} prompts x {G} = {R} rollouts per step)"]
        return "\n".join(lines)

    def to_text(self) -> str:
        """The table (one row per group size), what each column is, and ``G*``."""
        inp = self.inputs
        head = [f"plan --budget {self.budget}: method {inp['method']}, objective "
                f"{inp['objective']} (start {self.objective_start:.4g}), trust region kl "
                f"{inp['kl']:g} per nat",
                f"prompts: {inp['prompts']}; model: {inp['features']} features"
                + (f" (D = {inp['num_features']})" if inp["num_features"] else "")
                + f", pool of {inp['pool_size']} prompts, K = {inp['K']}, M = {inp['M']}"]
        opt = self.optimizers
        cols = (f"{'G':>5} {'P':>6} {'silent':>7} {'tail-miss':>9} "
                + " ".join(f"{o + ' /rollout':>14} {'eta*':>9}" for o in opt)
                + f" {'B_noise':>8} {'regime':>16}")
        lines = [*head, "", cols, "-" * len(cols)]
        first = opt[0]
        for i, G in enumerate(self.group_sizes):
            cells = " ".join(f"{_fmt(self.per_rollout[o][i]):>14} {_fmt(self.eta[o][i]):>9}"
                             for o in opt)
            marks = "".join(f" <- G* {o}" for o in opt if self.best[o] == G)
            lines.append(f"{G:>5} {self.num_prompts[i]:>6} {self.silent[i]:>7.3f} "
                         f"{self.tail_miss[i]:>9.3f} {cells} "
                         f"{_fmt(self.noise_scale[first][i]):>8} "
                         f"{self.regime[first][i] or '-':>16}{marks}")
        lines += [
            "  silent: share of groups whose rewards are all equal (no signal), E[mu^G + "
            "(1 - mu)^G] over the prompts",
            "  tail-miss: mean probability that a group is mixed yet misses its prompt's "
            "rarest good mode (FG Lemma 3.1)",
            "  /rollout: expected progress of the objective per step at eta*, minus kl x the "
            "KL it pays, over R (second order, exact moments)",
            "  eta*: the progress-optimal rate (trust region kl); B_noise: the gradient noise "
            "scale tr(B Sigma)/(m^T B m) in prompts per step (McCandlish et al. 2018)",
            f"  regime ({first}): noise-dominated where P < B_noise, else small-noise"]
        for o in opt:
            grid = self.eta_grid.get(o)
            if grid:
                lines.append(f"  {o} at G* = {self.best[o]}: Phi(eta) at eta*"
                             + ", ".join(f" x{k:g}: {_fmt(v)}" for k, v in grid)
                             + " (the optimum inside the grid)")
        if self.fixed_prompts is not None:
            lines.append(f"  P fixed at {self.fixed_prompts}: the grid holds G = "
                         f"{self.budget // self.fixed_prompts} only")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join([*lines, "", self.recommendation()])

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values (non-finite -> ``None``)."""
        def col(d):
            return {o: [_num(v) if isinstance(v, float) else v for v in d[o]] for o in d}

        G = self.best[self.optimizers[0]]
        return {
            "budget": self.budget, "group_sizes": list(self.group_sizes),
            "num_prompts": list(self.num_prompts), "silent": list(self.silent),
            "tail_miss": list(self.tail_miss), "optimizers": list(self.optimizers),
            "progress": col(self.progress), "per_rollout": col(self.per_rollout),
            "eta": col(self.eta), "gain": col(self.gain), "kl_step": col(self.kl_step),
            "regime": col(self.regime), "noise_scale": col(self.noise_scale),
            "best": dict(self.best), "margin": dict(self.margin),
            "eta_grid": {o: [[k, _num(v)] for k, v in g] for o, g in self.eta_grid.items()},
            "fixed_prompts": self.fixed_prompts, "objective_start": self.objective_start,
            "trl": None if G is None else {"num_generations": G,
                                           "generation_batch_size": self.budget},
            "verl": None if G is None else {"actor_rollout_ref.rollout.n": G,
                                            "data.train_batch_size": self.budget // G},
            "inputs": self.inputs, "notes": list(self.notes)}


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.3e}" if isinstance(v, float) else str(v)


def plan_budget(budget: int, prompts: PromptSet, *, method: str = "grpo",
                objective: str = "pass", num_prompts: int | None = None, group_sizes=None,
                kl: float = 1.0, features: str = "random", num_features: int = 8,
                feature_seed: int = 0, K: int = 4, M: int = 2, rare_share: float | None = None,
                pool_size: int = 32, delta_fn: float = 0.0, delta_fp: float = 0.0,
                params: dict[str, Any] | None = None, gain: float | None = None,
                optimizers=OPTIMIZERS, fast_compile: bool = True,
                workers: int | None = None) -> BudgetReport:
    r"""How to split ``budget`` rollouts per step as ``P × G`` for ``prompts`` (module
    docstring): a :class:`BudgetReport`.

    ``method``: a group-local rule of :data:`simplexlab.shaping.METHODS` (``params``, ``gain``:
    its own parameters); ``objective``: ``"pass"``, ``"pass@k"`` or ``"diversity"``;
    ``num_prompts``: fix ``P`` (then ``G = R/P``, and ``R`` must divide into ``P × G``);
    ``group_sizes``: the grid (default: every divisor of ``R`` in ``[2, 256]``; each must
    divide ``R``; one compiled program each); ``kl``: the trust region's price of a nat of KL
    per step; the model: ``features`` (:data:`~simplexlab.theory.FEATURES`), ``num_features``,
    ``feature_seed``, ``K`` good and ``M`` bad modes per prompt (``rare_share``: the rarest
    good mode's share where the prompts carry no mode masses, default ``1/(2K)``),
    ``pool_size`` (the prompts standing for the set: :meth:`PromptSet.pool`);
    ``delta_fn``, ``delta_fp``: the verifier's error rates; ``optimizers``: of ``("sgd",
    "adam")``. ``fast_compile``, ``workers``: as :func:`~simplexlab.verify.plan`.

    Refused with ``ValueError`` and the reason: ``R < 2``; ``R`` not divisible by a fixed
    ``P`` (or ``R/P < 2``), a grid size that does not divide ``R``; Beta parameters <= 0 and
    bad files (raised where the :class:`PromptSet` is built); an objective the rule cannot
    reach (its expected step lowers it at every ``G`` of the grid)."""
    R = _count(budget, "budget (R, rollouts per step)", 2)
    s = _setting(prompts, method=method, objective=objective, kl=kl, features=features,
                 num_features=num_features, feature_seed=feature_seed, K=K, M=M,
                 rare_share=rare_share, pool_size=pool_size, delta_fn=delta_fn,
                 delta_fp=delta_fp, params=params, gain=gain)
    minimum = max(2, s.rule.min_group_size)
    optimizers = tuple(optimizers)
    if not optimizers or any(o not in OPTIMIZERS for o in optimizers):
        raise ValueError(f"optimizers must be a non-empty subset of {OPTIMIZERS}; got "
                         f"{optimizers!r}")
    if num_prompts is not None:
        P = _count(num_prompts, "num_prompts (P, prompts per step)", 1)
        if R % P:
            raise ValueError(f"budget R = {R} does not divide into P = {P} prompts x G "
                             f"rollouts (R/P = {R / P:g}); choose R a multiple of P")
        if R // P < minimum:
            raise ValueError(f"budget R = {R} with P = {P} prompts leaves G = {R // P} "
                             f"rollouts per prompt; the rule needs G >= {minimum}")
        sizes = (R // P,)
    elif group_sizes is None:
        sizes = _divisors(R, minimum)
        if not sizes:
            raise ValueError(f"budget R = {R} has no group size in [{minimum}, {MAX_GROUP}] "
                             "that divides it")
    else:
        sizes = tuple(sorted({_count(g, "group_sizes: a group size", minimum)
                              for g in group_sizes}))
        bad = [g for g in sizes if R % g]
        if not sizes or bad:
            raise ValueError(f"group_sizes {bad or list(group_sizes)}: each must divide the "
                             f"budget R = {R} (R = P x G)")
    moments = _moments_by_size(s, sizes, fast_compile=fast_compile, workers=workers)
    notes = [f"G = {G}: the per-prompt moments by Monte Carlo ({m.path})"
             for G, m in moments.items() if "montecarlo" in np.atleast_1d(m.path).tolist()]
    cols: dict[str, dict[str, list]] = {k: {o: [] for o in optimizers} for k in (
        "progress", "per_rollout", "eta", "gain", "kl_step", "regime", "noise_scale")}
    table = _progress(s, moments, [(G, R // G) for G in sizes], optimizers)
    keep = {(o, G): table[o, G, R // G] for o in optimizers for G in sizes}
    for o in optimizers:
        for G in sizes:
            pr = keep[o, G]
            if float(pr.curvature) <= 0:
                raise ValueError(f"the trust region kl = {s.kl:g} is too weak for the "
                                 f"objective's own curvature at G = {G} ({o}): the step's "
                                 "second-order progress has no maximum; raise kl")
            cols["progress"][o].append(float(pr.progress))
            cols["per_rollout"][o].append(float(pr.per_rollout))
            cols["eta"][o].append(float(pr.eta))
            cols["gain"][o].append(float(pr.gain()))
            cols["kl_step"][o].append(float(pr.kl_step()))
            cols["regime"][o].append(pr.regime)
            cols["noise_scale"][o].append(float(pr.noise_scale))
    for o in optimizers:
        large = [G for G, k in zip(sizes, cols["kl_step"][o], strict=True) if k > LARGE_STEP_KL]
        if large:
            notes.append(f"{o}: at G = {large} the step at eta* moves the policy by more than "
                         f"{LARGE_STEP_KL:g} nats of KL: the second-order model overestimates "
                         "its progress there (the shared bandit measures ~20 % less at 0.06-0.1 "
                         "nats, more at small G); raise --kl for steps it describes well")
    firsts = [float(keep[optimizers[0], G].first) for G in sizes]
    if all(f <= 0 for f in firsts):
        raise ValueError(f"method {method!r} cannot reach the objective {objective!r}: its "
                         f"expected step lowers it at every G of the grid {list(sizes)} (the "
                         "rate of first-order progress aᵀE[ĝ] <= 0; for the diversity target "
                         "GRPO's collision concentrates the good modes: a rule that "
                         "anti-collides, e.g. g2rpo with a gain, can)")
    best, margin, grid = {}, {}, {}
    for o in optimizers:
        best[o], margin[o] = _best(cols["progress"][o], sizes)
        if best[o] is not None:
            pr = keep[o, best[o]]
            grid[o] = [(k, float(pr.at(k * pr.eta))) for k in ETA_GRID]
    silent = prompts.silent_fraction(np.asarray(sizes))
    tail = prompts.expected_tail_miss(np.asarray(sizes), rare_share=rare_share, K=s.policy.K)
    return BudgetReport(
        budget=R, group_sizes=sizes, num_prompts=tuple(R // G for G in sizes),
        silent=tuple(float(v) for v in silent), tail_miss=tuple(float(v) for v in tail),
        optimizers=optimizers, **{k: {o: tuple(v) for o, v in c.items()}
                                  for k, c in cols.items()},
        best=best, margin=margin, eta_grid=grid, fixed_prompts=num_prompts,
        objective_start=float(objective_value(s.objective, s.policy)),
        inputs={**s.inputs, "budget": R, "num_prompts": num_prompts,
                "group_sizes": list(sizes), "optimizers": list(optimizers)},
        notes=tuple(notes))


@dataclasses.dataclass(frozen=True)
class BudgetCurve:
    """``G*(R)`` over budgets (:func:`budget_curve`): ``budgets``, ``group_sizes``, for each
    optimizer ``progress[o][i][j]`` (``Φ*`` at budget ``i``, size ``j``; ``None`` where ``G``
    does not divide the budget), ``best[o][i]`` and ``margin[o][i]``; ``inputs``; ``moments``:
    the per-prompt step moments by group size (for another curve of the same setting; not in
    :meth:`to_dict`)."""

    budgets: tuple[int, ...]
    group_sizes: tuple[int, ...]
    optimizers: tuple[str, ...]
    progress: dict[str, list]
    regime: dict[str, list]
    best: dict[str, list]
    margin: dict[str, list]
    inputs: dict[str, Any]
    moments: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"budgets": list(self.budgets), "group_sizes": list(self.group_sizes),
                "optimizers": list(self.optimizers), "progress": self.progress,
                "regime": self.regime, "best": self.best, "margin": self.margin,
                "inputs": self.inputs}


def budget_curve(prompts: PromptSet, budgets=DEFAULT_BUDGETS, *, group_sizes=BUDGET_GROUP_SIZES,
                 method: str = "grpo", objective: str = "pass", kl: float = 1.0,
                 features: str = "random", num_features: int = 8, feature_seed: int = 0,
                 K: int = 4, M: int = 2, rare_share: float | None = None, pool_size: int = 32,
                 delta_fn: float = 0.0, delta_fp: float = 0.0,
                 params: dict[str, Any] | None = None, gain: float | None = None,
                 optimizers=OPTIMIZERS, fast_compile: bool = True,
                 workers: int | None = None, moments=None) -> BudgetCurve:
    r"""``G*(R)`` for each budget of ``budgets``: the group size of ``group_sizes`` that divides
    ``R`` with the most progress per step (:func:`plan_budget`'s settings), from one set of
    per-prompt moments per group size (``moments``: ``{G: StepMoments}`` already computed)."""
    s = _setting(prompts, method=method, objective=objective, kl=kl, features=features,
                 num_features=num_features, feature_seed=feature_seed, K=K, M=M,
                 rare_share=rare_share, pool_size=pool_size, delta_fn=delta_fn,
                 delta_fp=delta_fp, params=params, gain=gain)
    budgets = tuple(_count(R, "a budget", 2) for R in budgets)
    minimum = max(2, s.rule.min_group_size)
    sizes = tuple(sorted({_count(g, "group_sizes: a group size", minimum) for g in group_sizes}))
    if not budgets or not sizes:
        raise ValueError("budget_curve: budgets and group_sizes must not be empty")
    optimizers = tuple(optimizers)
    need = [G for G in sizes if any(R % G == 0 for R in budgets)]
    have = dict(moments or {})
    have.update(_moments_by_size(s, [G for G in need if G not in have],
                                 fast_compile=fast_compile, workers=workers))
    table = _progress(s, have, [(G, R // G) for R in budgets for G in sizes if R % G == 0],
                      optimizers)
    prog = {o: [] for o in optimizers}
    regime = {o: [] for o in optimizers}
    best = {o: [] for o in optimizers}
    margin = {o: [] for o in optimizers}
    for o in optimizers:
        for R in budgets:
            row, reg = [], []
            for G in sizes:
                if R % G:
                    row.append(None)
                    reg.append(None)
                    continue
                pr = table[o, G, R // G]
                row.append(_num(pr.progress) if float(pr.curvature) > 0 else None)
                reg.append(pr.regime)
            prog[o].append(row)
            regime[o].append(reg)
            ok = [j for j, v in enumerate(row) if v is not None]
            b, m = _best([row[j] for j in ok], [sizes[j] for j in ok])
            best[o].append(b)
            margin[o].append(m)
    return BudgetCurve(budgets, sizes, optimizers, prog, regime, best, margin,
                       {**s.inputs, "optimizers": list(optimizers)}, have)


def bandit_progress(prompts: PromptSet, budget: int, group_size: int, etas, *, seeds: int = 1000,
                    seed: int = 0, method: str = "grpo", kl: float = 1.0,
                    features: str = "random", num_features: int = 8, K: int = 4, M: int = 2,
                    pool_size: int = 32) -> tuple[np.ndarray, np.ndarray]:
    r"""What :func:`budget_curve` predicts, measured: the shared bandit's progress
    ``Φ = ΔF − β KL`` after one step from the start (``W = 0``; ``F`` the pool's pass rate, ``KL``
    the pool's mean ``KL(π⁰ ‖ π¹)``, ``β = kl``) with ``P = budget / group_size`` prompts × ``G``
    rollouts, at each rate of ``etas``: ``(mean, standard error)`` over ``seeds`` runs
    (:class:`~simplexlab.sim.SharedBandit` with the planner's model: ``features``,
    ``num_features``, ``K`` good and ``M`` bad modes per prompt, the prompts' pool of
    ``pool_size``). The theory's ``Φ*`` is the best of this curve over ``η`` in the limit of
    small steps. One program for every rate; the runs' keys are
    ``split(fold_in(key(seed), 7919 R + G), seeds)``, the same for every rate."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    from ..sim import SharedBandit

    R = _count(budget, "budget (rollouts per step)", 2)
    G = _count(group_size, "group_size", 2)
    if R % G:
        raise ValueError(f"bandit_progress: group_size {G} does not divide the budget {R}")
    seeds = _count(seeds, "seeds", 2)
    kl = _number(kl, "kl (β, the price of a nat of KL per step)")
    rates = np.asarray(etas, float).ravel()
    if rates.size == 0 or np.any(~np.isfinite(rates)) or np.any(rates <= 0):
        raise ValueError(f"bandit_progress: etas must be finite rates > 0; got {etas!r}")
    sim = SharedBandit(K=K, M=M, prompts=prompts, pool_size=pool_size, num_features=num_features,
                       features=features, num_prompts=R // G, max_group_size=G, method=method)
    pol = sim.policy()
    w = pol.weights
    p0 = pol.probs(pol.zeros())
    base = {**sim.default_params(), "group_size": G}

    @eqx.filter_jit
    def phi(keys, eta):
        q = {**base, "eta": eta}
        p1 = jax.vmap(lambda k: pol.probs(sim.step(sim.init(k, q), q).weights))(keys)
        gain = jnp.sum((p1[..., :K].sum(-1) - p0[:, :K].sum(-1)) * w, -1)
        div = jnp.sum(jnp.sum(p0 * (jnp.log(p0) - jnp.log(p1)), -1) * w, -1)
        v = gain - kl * div
        return jnp.mean(v), jnp.std(v, ddof=1) / jnp.sqrt(v.shape[0])

    keys = jax.random.split(jax.random.fold_in(jax.random.key(seed), 7919 * R + G), seeds)
    out = jax.vmap(lambda e: phi(keys, e))(jnp.asarray(rates))
    return np.asarray(out[0]), np.asarray(out[1])


def bandit_resolution(best: dict[int, tuple[float, float]]) -> tuple[int, list[int]]:
    """The bandit's best group size and its *resolution* from ``best = {G: (Φ, SE)}`` (each
    G's best :func:`bandit_progress` over its rates, with its standard error): ``(G_best, the
    G whose Φ + 2 SE reaches Φ(G_best) − 2 SE)``, in the order of ``best``. A theory's ``G*``
    agrees with the bandit where it lies in the resolution."""
    if not best:
        raise ValueError("bandit_resolution: no group sizes")
    top = max(best, key=lambda G: best[G][0])
    floor = best[top][0] - 2 * best[top][1]
    return top, [G for G, (phi, se) in best.items() if phi + 2 * se >= floor]
