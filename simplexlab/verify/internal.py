"""Internal API of the ``verify`` layer (like ``equinox.internal``): what the layers above
need from ``verify`` (and the benchmarks and tests may use) beyond its public face
:mod:`simplexlab.verify`.

Unstable: no compatibility promise, not for users; names may change or go without notice. Each
name is re-exported from the layer's private modules.
"""

from ._oracle import register_convention

__all__ = [
    "register_convention",
]
