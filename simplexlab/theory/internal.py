"""Internal API of the ``theory`` layer (like ``equinox.internal``): what the layers above
need from ``theory`` (and the benchmarks and tests may use) beyond its public face
:mod:`simplexlab.theory`.

Unstable: no compatibility promise, not for users; names may change or go without notice. Each
name is re-exported from the layer's private modules.
"""

from ._closed_forms import unchecked
from ._ensemble import map_blocks, solve_block
from ._finite_moments import (
    cell_second_moments,
    choose_moments_path,
    counts_second_moments,
    gradient_map,
    group_step_moments,
)
from ._finite_paths import (
    MAX_SIZE,
    STRUCTURES,
    active_cells,
    binomial_pmf,
    compositions,
    count_advantages,
    counts_totals,
    enumeration_outcomes,
    group_index,
    log_factorial,
    poisson_pmf,
    sampled_cell_totals,
)
from ._gains import SCHEDULE_KINDS, check_kind
from ._optimizers import LIMITS
from ._solve import check_result_codes, solve_each

__all__ = [
    "LIMITS",
    "MAX_SIZE",
    "SCHEDULE_KINDS",
    "STRUCTURES",
    "active_cells",
    "binomial_pmf",
    "cell_second_moments",
    "choose_moments_path",
    "compositions",
    "count_advantages",
    "counts_second_moments",
    "counts_totals",
    "enumeration_outcomes",
    "gradient_map",
    "group_index",
    "group_step_moments",
    "log_factorial",
    "poisson_pmf",
    "sampled_cell_totals",
    "check_kind",
    "check_result_codes",
    "map_blocks",
    "solve_block",
    "solve_each",
    "unchecked",
]
