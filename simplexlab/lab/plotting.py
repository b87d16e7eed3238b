"""Plotting helpers (matplotlib) for simplex figures: the plotting part of :mod:`simplexlab.lab`'s
face, under the module path it has always had (the code is in the lab's private ``_plotting``)."""

from ._plotting import (
    FIXED_POINT_STYLE,
    mark_fixed_points,
    plot_training,
    simplex_grid,
    stream_on_simplex,
    ternary_axes,
    to_barycentric,
    to_cartesian,
)
from ._plotting import METHOD_STYLE as METHOD_STYLE  # not in __all__ (as before)
from ._plotting import TRAINING_PANELS as TRAINING_PANELS

__all__ = [
    "FIXED_POINT_STYLE",
    "mark_fixed_points",
    "plot_training",
    "simplex_grid",
    "stream_on_simplex",
    "ternary_axes",
    "to_barycentric",
    "to_cartesian",
]
