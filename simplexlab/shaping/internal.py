"""Internal API of the ``shaping`` layer (like ``equinox.internal``): what the layers above
need from ``shaping`` (and the benchmarks and tests may use) beyond its public face
:mod:`simplexlab.shaping`.

Unstable: no compatibility promise, not for users; names may change or go without notice. Each
name is re-exported from the layer's private modules.
"""

from ._diversity import unchecked
from ._finite import check_structure
from ._methods import checked_output, rule_advantages
from ._registry import check_method_params, nearest

__all__ = [
    "check_method_params",
    "check_structure",
    "checked_output",
    "nearest",
    "rule_advantages",
    "unchecked",
]
