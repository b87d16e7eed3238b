"""The lab layer's face, the public API for experiment scripts in ``experiments/``: register with
:func:`experiment`, receive a :class:`Context` (mode, output folder, seed, ``progress``,
``savefig``); the command line (:func:`main`); result files (:func:`atomic_write_json`,
:func:`provenance`, ...); plotting helpers for simplex figures (:func:`ternary_axes`,
:func:`stream_on_simplex`, :func:`plot_training`, ...; re-exported by :mod:`simplexlab.plotting`).

The registry and the plotting helpers load on first access, so that importing this package (or
:mod:`simplexlab.plotting`) loads neither the experiment registry nor the experiments.
"""

import importlib as _importlib
from typing import TYPE_CHECKING

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
    "FIXED_POINT_STYLE": "plotting",
    "METHOD_STYLES": "plotting",
    "MethodStyle": "plotting",
    "claim_lines": "plotting",
    "figure_note": "plotting",
    "legend_outside": "plotting",
    "method_style": "plotting",
    "shades": "plotting",
    "use_style": "plotting",
    "claim_status": "_status",
    "experiment_status": "_status",
    "mark_fixed_points": "plotting",
    "plot_training": "plotting",
    "simplex_grid": "plotting",
    "stream_on_simplex": "plotting",
    "ternary_axes": "plotting",
    "to_barycentric": "plotting",
    "to_cartesian": "plotting",
}

__all__ = [
    "Context",
    "Experiment",
    "FIXED_POINT_STYLE",
    "METHOD_STYLES",
    "MethodStyle",
    "atomic_write_bytes",
    "atomic_write_json",
    "claim_lines",
    "claim_status",
    "experiment",
    "experiment_status",
    "figure_note",
    "legend_outside",
    "load_experiment_module",
    "load_experiments",
    "main",
    "mark_fixed_points",
    "method_style",
    "plot_training",
    "progress",
    "provenance",
    "registry",
    "run_experiment",
    "shades",
    "simplex_grid",
    "stream_on_simplex",
    "ternary_axes",
    "to_barycentric",
    "to_cartesian",
    "to_jsonable",
    "use_style",
]


def __getattr__(name):
    if name in _LAZY:
        return getattr(_importlib.import_module(f".{_LAZY[name]}", __name__), name)
    if name == "plotting":  # the public submodule simplexlab.lab.plotting
        return _importlib.import_module(".plotting", __name__)
    raise AttributeError(f"module 'simplexlab.lab' has no attribute {name!r}")


def __dir__():
    return __all__


if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names above load lazily
    from ._cli import main
    from ._registry import (
        Context,
        Experiment,
        experiment,
        load_experiment_module,
        load_experiments,
        registry,
        run_experiment,
    )
    from ._status import claim_status, experiment_status
    from .plotting import (
        FIXED_POINT_STYLE,
        METHOD_STYLES,
        MethodStyle,
        claim_lines,
        figure_note,
        legend_outside,
        mark_fixed_points,
        method_style,
        plot_training,
        shades,
        simplex_grid,
        stream_on_simplex,
        ternary_axes,
        to_barycentric,
        to_cartesian,
        use_style,
    )
