r"""One call each for the two first looks at a rule: its phase portrait (:func:`plot_portrait`)
and a batch of finite-group bandit runs against the rule's finite-group theory
(:func:`bandit_vs_theory`, which returns a :class:`BanditVsTheory` that plots itself).

Both work for any advantage rule by name, one registered from user code included
(:func:`simplexlab.shaping.register_method`): the portrait streams the within-good flow
``y ↦ dy/dτ`` of the rule's mean-field system (its exact finite-group field at ``group_size``,
:class:`simplexlab.theory.FiniteGroup`, or the papers' ``G → ∞`` limit where the package has
one) with the other coordinates frozen, and marks its fixed points; the bandit comparison runs
``seeds`` runs of a :class:`simplexlab.sim.Bandit` and integrates the system the bandit's mean
follows as ``η → 0`` (:meth:`simplexlab.sim.Bandit.finite_group`, time map ``t = step · η``)
over the same time.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .._checks import is_int

__all__ = ["BanditVsTheory", "bandit_vs_theory", "plot_portrait"]

#: the most grid points per side of :func:`plot_portrait`'s stream plot (its field is evaluated
#: on ``n x n`` points; the default is 20)
MAX_GRID = 400


def plot_portrait(system, *, group_size: float = math.inf, params: dict | None = None,
                  schedule=None, verifier=None, p: float = 0.5, z=(0.5, 0.5),
                  time: str = "inner", n: int = 20, fixed_points: bool = True,
                  title: str | None = None, ax=None):
    r"""The phase portrait of the within-good composition ``y`` (``K = 3`` good modes) in one
    call: streamlines of ``y ↦ dy/dτ`` (``time="physical"``: ``dy/dt``) at the frozen bad
    mass ``p`` and bad composition ``z``, on the simplex, with the fixed points marked by
    stability (:func:`simplexlab.theory.find_fixed_points`).

    ``system``: a method name of :data:`simplexlab.shaping.METHODS` (one of your own included)
    -- its finite-group system at ``group_size`` (``params``: its own parameters), or with
    ``group_size = inf`` (the default) its ``G → ∞`` limit (``grpo``, ``g2rpo`` with
    ``schedule``) --, or a
    mean-field system of :mod:`simplexlab.theory` itself. ``n``: grid points per side of the
    stream plot. Returns the figure (drawn into ``ax`` when given)."""
    import matplotlib.pyplot as plt

    from ..shaping import meanfield_system
    from ..theory import block_field, find_fixed_points, make_state
    from ._plotting import mark_fixed_points, stream_on_simplex, ternary_axes

    if isinstance(system, str):
        name = system
        kw = {"group_size": group_size, "params": params}
        if verifier is not None:
            kw["verifier"] = verifier
        system = meanfield_system(name, schedule, **{k: v for k, v in kw.items()
                                                     if v is not None})
        where = "G → ∞" if group_size == math.inf else f"G = {group_size}"
        label = f"{name!r}" + (f" {params}" if params else "") + f" at {where}"
    else:
        if group_size != math.inf or params or schedule is not None or verifier is not None:
            raise ValueError("plot_portrait: group_size, params, schedule and verifier build "
                             "the system of a method name; a system is given whole")
        label = type(system).__name__
    if isinstance(p, bool) or not isinstance(p, int | float | np.integer | np.floating) \
            or not 0.0 < float(p) < 1.0:
        raise ValueError(f"plot_portrait: p (the frozen bad mass) must be in (0, 1); got "
                         f"{p!r}")
    if not is_int(n) or not 2 <= n <= MAX_GRID:
        raise ValueError(f"plot_portrait: n (grid points per side of the stream plot) must be "
                         f"an integer in [2, {MAX_GRID}]; got {n!r}")
    if not isinstance(fixed_points, bool):
        raise ValueError(f"plot_portrait: fixed_points must be True or False; got "
                         f"{fixed_points!r}")
    state = make_state(p=float(p), y=np.full(3, 1.0 / 3), z=np.asarray(z, float))
    field = block_field(system, state, "y", time=time)
    if ax is None:
        fig, ax = plt.subplots(figsize=(4.6, 4.2))
    else:
        fig = ax.figure
    ternary_axes(ax, title=title if title is not None else f"{label}: flow of y (p = {p:g})")
    stream_on_simplex(ax, lambda y: np.asarray(field(y)), n=n)
    if fixed_points:
        mark_fixed_points(ax, find_fixed_points(field, 3, n_starts=2), legend=True)
    return fig


@dataclasses.dataclass(frozen=True)
class BanditVsTheory:
    """``seeds`` runs of the bandit against its finite-group theory (:func:`bandit_vs_theory`).

    ``step``: the recorded steps; ``bandit`` / ``se``: per quantity (``"p"``, ``"L_y"``) the
    mean over seeds and prompts and its standard error over seeds (of each seed's prompt
    mean); ``theory``: the system's prediction at the same steps (``t = step · η``), averaged
    over the prompts' starts; ``eta``, ``seeds``, ``group_size``, ``method``: the run's."""

    step: np.ndarray
    bandit: dict[str, np.ndarray]
    se: dict[str, np.ndarray]
    theory: dict[str, np.ndarray]
    eta: float
    seeds: int
    group_size: int
    method: str

    def gap(self, quantity: str = "L_y") -> float:
        """The largest ``|bandit mean − theory|`` over the recorded steps."""
        return float(np.max(np.abs(self.bandit[quantity] - self.theory[quantity])))

    def plot(self, quantities=("p", "L_y")):
        """One panel per quantity: the bandit's mean ± 2 SE (markers) over the theory (line)
        against the step. Returns the figure."""
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(quantities), figsize=(4.6 * len(quantities), 3.3),
                                 squeeze=False)
        for ax, q in zip(axes[0], quantities, strict=True):
            ax.errorbar(self.step, self.bandit[q], yerr=2 * self.se[q], fmt="o", ms=4,
                        label=f"bandit, mean of {self.seeds} seeds (± 2 SE)")
            ax.plot(self.step, self.theory[q], "-", label=f"finite-group ODE (G = "
                                                           f"{self.group_size})")
            ax.set(xlabel="step", ylabel=q, title=f"{q}: largest gap {self.gap(q):.2g}")
        axes[0, 0].legend(fontsize=8, frameon=False)
        fig.suptitle(f"{self.method!r} (η = {self.eta:g}): bandit against its theory",
                     fontsize=10)
        fig.tight_layout()
        return fig


def bandit_vs_theory(bandit, params: dict[str, Any] | None = None, *, seeds: int = 32,
                     seed: int = 0, num_steps: int = 400, stride: int = 40) -> BanditVsTheory:
    r"""``seeds`` runs of ``bandit`` (a :class:`simplexlab.sim.Bandit`; ``params``: its array
    parameters, defaults otherwise) for ``num_steps`` steps, recorded every ``stride``, and
    the finite-group system its ensemble mean follows as ``η → 0``
    (:meth:`~simplexlab.sim.Bandit.finite_group`: the exact expected SGD step at its group
    size) integrated over the same time ``t = step · η``, in one call. Run ``i`` uses key ``i``
    of ``jax.random.split(jax.random.key(seed), seeds)``. Returns a :class:`BanditVsTheory`
    (``.plot()``, ``.gap()``)."""
    import jax

    from .._checks import as_int
    from ..sim import Bandit, trajectory
    from ..theory import solve_ensemble

    if not isinstance(bandit, Bandit):
        raise ValueError(f"bandit_vs_theory: bandit must be a simplexlab.sim.Bandit; got "
                         f"{bandit!r}")
    seeds = as_int(seeds, "seeds", lower=2)  # a standard error needs two
    if not is_int(seed) or not -2**63 <= seed < 2**63:  # jax.random.key's seeds (int64)
        raise ValueError(f"bandit_vs_theory: seed must be an integer in [-2**63, 2**63 - 1]; "
                         f"got {seed!r}")
    num_steps = as_int(num_steps, "num_steps", lower=1)
    stride = as_int(stride, "stride", lower=1)
    if num_steps % stride:
        raise ValueError(f"bandit_vs_theory: num_steps = {num_steps} must be a multiple of "
                         f"stride = {stride}")
    q = {**bandit.default_params(), **(params or {})}
    dyn, s0 = bandit.finite_group(q)  # checks the parameters, names the bad one
    keys = jax.random.split(jax.random.key(seed), seeds)
    run = jax.jit(jax.vmap(lambda k: trajectory(bandit, k, q, num_steps=num_steps,
                                                stride=stride)[1]))
    rec = run(keys)
    steps = np.arange(0, num_steps + 1, stride)
    eta = float(q["eta"])
    sol = solve_ensemble(dyn, s0, t1=num_steps * eta, saveat=steps * eta)
    mean, se, theory = {}, {}, {}
    for name in ("p", "L_y"):
        per_seed = np.asarray(getattr(rec, name), float).mean(axis=-1)  # (seed, step)
        mean[name] = per_seed.mean(0)
        se[name] = per_seed.std(0, ddof=1) / np.sqrt(seeds)
        theory[name] = np.asarray(getattr(sol, name), float).mean(axis=0)
    return BanditVsTheory(step=steps, bandit=mean, se=se, theory=theory, eta=eta, seeds=seeds,
                          group_size=int(q["group_size"]), method=bandit.method)
