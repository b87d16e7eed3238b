"""Internal API of the ``theory`` layer (like ``equinox.internal``): what the layers above
need from ``theory`` (and the benchmarks and tests may use) beyond its public face
:mod:`simplexlab.theory`.

Unstable: no compatibility promise, not for users; names may change or go without notice. Each
name is re-exported from the layer's private modules.
"""

from ._closed_forms import unchecked
from ._ensemble import map_blocks, solve_block
from ._finite_paths import (
    STRUCTURES,
    active_cells,
    binomial_pmf,
    compositions,
    counts_totals,
    poisson_pmf,
)
from ._gains import SCHEDULE_KINDS, check_kind
from ._solve import check_result_codes, solve_each

__all__ = [
    "SCHEDULE_KINDS",
    "STRUCTURES",
    "active_cells",
    "binomial_pmf",
    "compositions",
    "counts_totals",
    "poisson_pmf",
    "check_kind",
    "check_result_codes",
    "map_blocks",
    "solve_block",
    "solve_each",
    "unchecked",
]
