"""The lab layer's face, the public API for experiment scripts in ``experiments/``: register with
:func:`experiment`, receive a :class:`Context` (mode, output folder, seed, ``progress``,
``savefig``); the command line (:func:`main`); result files (:func:`atomic_write_json`,
:func:`provenance`, ...); claims as code (:func:`claim`, :class:`Verdict`, the statistics
:func:`mean_ci`, :func:`restricted_mean`, ...; :func:`evaluate_claims`, :func:`write_report`, and
the report's readers :func:`claim_status`, :func:`experiment_status`); the bibliography of the
papers the lab implements, by key (:data:`BIBLIOGRAPHY`, :class:`Paper`, :func:`cite`); plotting
helpers for simplex figures (:func:`ternary_axes`, :func:`stream_on_simplex`,
:func:`plot_training`, ...); a rule's first looks in one call each (:func:`plot_portrait`,
:func:`bandit_vs_theory`).

The registry and the plotting helpers load on first access, so that importing this package (or
one plotting helper) loads neither the experiment registry nor the experiments.
"""

import importlib as _importlib
from typing import TYPE_CHECKING

from .._bibliography import BIBLIOGRAPHY, Paper, cite
from .._results import atomic_write_bytes, atomic_write_json, provenance, to_jsonable
from ._progress import progress

#: names served on first access: name -> the private module that holds it
_LAZY = {
    "Context": "_registry",
    "Experiment": "_registry",
    "experiment": "_registry",
    "load_experiment_module": "_registry",
    "load_experiments": "_registry",
    "registry": "_registry",
    "run_experiment": "_registry",
    "main": "_cli",
    "Claim": "_claims",
    "ClaimContext": "_claims",
    "Fault": "_claims",
    "Verdict": "_claims",
    "boundary_text": "_stats",
    "claim": "_claims",
    "combine": "_stats",
    "crossed_ci": "_stats",
    "crossed_resamples": "_stats",
    "crossing": "_stats",
    "evaluate_claims": "_claims",
    "first_event": "_stats",
    "injected_faults": "_claims",
    "interval": "_stats",
    "kaplan_meier": "_stats",
    "load_claims": "_claims",
    "mean_ci": "_stats",
    "not_checkable": "_claims",
    "paired_ci": "_stats",
    "restricted_mean": "_stats",
    "side": "_stats",
    "write_report": "_report",
    "claim_status": "_status",
    "experiment_status": "_status",
    "FIXED_POINT_STYLE": "_plotting",
    "METHOD_STYLES": "_plotting",
    "MethodStyle": "_plotting",
    "claim_lines": "_plotting",
    "figure_note": "_plotting",
    "legend_outside": "_plotting",
    "method_style": "_plotting",
    "shades": "_plotting",
    "use_style": "_plotting",
    "mark_fixed_points": "_plotting",
    "plot_plan": "_plotting",
    "plot_solution": "_plotting",
    "plot_training": "_plotting",
    "simplex_grid": "_plotting",
    "stream_on_simplex": "_plotting",
    "ternary_axes": "_plotting",
    "to_barycentric": "_plotting",
    "to_cartesian": "_plotting",
    "BanditVsTheory": "_quick",
    "bandit_vs_theory": "_quick",
    "plot_portrait": "_quick",
}

__all__ = [
    "atomic_write_bytes",
    "atomic_write_json",
    "bandit_vs_theory",
    "BanditVsTheory",
    "BIBLIOGRAPHY",
    "boundary_text",
    "Claim",
    "claim",
    "claim_lines",
    "claim_status",
    "ClaimContext",
    "cite",
    "combine",
    "Context",
    "crossed_ci",
    "crossed_resamples",
    "crossing",
    "evaluate_claims",
    "Experiment",
    "experiment",
    "experiment_status",
    "Fault",
    "figure_note",
    "first_event",
    "injected_faults",
    "interval",
    "kaplan_meier",
    "FIXED_POINT_STYLE",
    "legend_outside",
    "load_claims",
    "load_experiment_module",
    "load_experiments",
    "main",
    "mark_fixed_points",
    "mean_ci",
    "not_checkable",
    "method_style",
    "METHOD_STYLES",
    "MethodStyle",
    "paired_ci",
    "Paper",
    "plot_plan",
    "plot_portrait",
    "plot_solution",
    "plot_training",
    "progress",
    "provenance",
    "registry",
    "restricted_mean",
    "run_experiment",
    "shades",
    "side",
    "simplex_grid",
    "stream_on_simplex",
    "ternary_axes",
    "to_barycentric",
    "to_cartesian",
    "to_jsonable",
    "use_style",
    "Verdict",
    "write_report",
]


def __getattr__(name):
    if name in _LAZY:
        return getattr(_importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'simplexlab.lab' has no attribute {name!r}")


def __dir__():
    return __all__


if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names above load lazily
    from ._claims import (
        Claim,
        ClaimContext,
        Fault,
        Verdict,
        claim,
        evaluate_claims,
        injected_faults,
        load_claims,
        not_checkable,
    )
    from ._cli import main
    from ._plotting import (
        FIXED_POINT_STYLE,
        METHOD_STYLES,
        MethodStyle,
        claim_lines,
        figure_note,
        legend_outside,
        mark_fixed_points,
        method_style,
        plot_plan,
        plot_solution,
        plot_training,
        shades,
        simplex_grid,
        stream_on_simplex,
        ternary_axes,
        to_barycentric,
        to_cartesian,
        use_style,
    )
    from ._quick import BanditVsTheory, bandit_vs_theory, plot_portrait
    from ._registry import (
        Context,
        Experiment,
        experiment,
        load_experiment_module,
        load_experiments,
        registry,
        run_experiment,
    )
    from ._report import write_report
    from ._stats import (
        boundary_text,
        combine,
        crossed_ci,
        crossed_resamples,
        crossing,
        first_event,
        interval,
        kaplan_meier,
        mean_ci,
        paired_ci,
        restricted_mean,
        side,
    )
    from ._status import claim_status, experiment_status
