"""Array type aliases (jaxtyping) used across simplexlab.

One place for shapes: ``k`` is the number of good modes K, ``m`` the number of bad modes M,
``n`` a generic simplex dimension, ``g`` a group size, ``*batch`` any leading batch shape.
"""

from __future__ import annotations

from jaxtyping import Array, ArrayLike, Bool, Float, Int

Scalar = Float[Array, ""]
ScalarLike = float | Float[ArrayLike, ""]
BatchScalar = Float[Array, "*batch"]
Simplex = Float[Array, "*batch n"]
GoodSimplex = Float[Array, "*batch k"]
BadSimplex = Float[Array, "*batch m"]
Policy = Float[Array, "*batch n"]
Logits = Float[Array, "*batch n"]
Rewards = Float[Array, "*groups g"]
Mask = Bool[Array, "*groups g"]
ClusterIds = Int[Array, "*groups g"]

__all__ = [
    "Array",
    "ArrayLike",
    "BadSimplex",
    "BatchScalar",
    "Bool",
    "ClusterIds",
    "Float",
    "GoodSimplex",
    "Int",
    "Logits",
    "Mask",
    "Policy",
    "Rewards",
    "Scalar",
    "ScalarLike",
    "Simplex",
]
