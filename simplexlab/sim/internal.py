"""Internal API of the ``sim`` layer (like ``equinox.internal``): what the layers above
need from ``sim`` (and the benchmarks and tests may use) beyond its public face
:mod:`simplexlab.sim`.

Unstable: no compatibility promise, not for users; names may change or go without notice. Each
name is re-exported from the layer's private modules.
"""

from ._protocol import MAX_STEPS

__all__ = [
    "MAX_STEPS",
]
