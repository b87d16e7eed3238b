"""Plotting helpers for simplex figures (ternary axes, streamlines, fixed points).

Lives in the lab layer (:mod:`simplexlab.lab.plotting`); this module re-exports it.
"""

from .lab import (
    FIXED_POINT_STYLE,
    mark_fixed_points,
    simplex_grid,
    stream_on_simplex,
    ternary_axes,
    to_barycentric,
    to_cartesian,
)

__all__ = [
    "FIXED_POINT_STYLE",
    "mark_fixed_points",
    "simplex_grid",
    "stream_on_simplex",
    "ternary_axes",
    "to_barycentric",
    "to_cartesian",
]
