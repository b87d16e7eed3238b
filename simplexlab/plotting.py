"""Plotting helpers: trajectories of a solved system (:func:`plot_solution`), simplex figures
(ternary axes, streamlines, fixed points), training curves and the group-size planner's report.

Lives in the lab layer (:mod:`simplexlab.lab.plotting`); this module re-exports it.
"""

from .lab import (
    FIXED_POINT_STYLE,
    mark_fixed_points,
    plot_plan,
    plot_solution,
    plot_training,
    simplex_grid,
    stream_on_simplex,
    ternary_axes,
    to_barycentric,
    to_cartesian,
)

__all__ = [
    "FIXED_POINT_STYLE",
    "mark_fixed_points",
    "plot_plan",
    "plot_solution",
    "plot_training",
    "simplex_grid",
    "stream_on_simplex",
    "ternary_axes",
    "to_barycentric",
    "to_cartesian",
]
