"""Hypothesis strategies shared by the test suite (simplex points, sizes, gains, verifier noise).

Append new strategies in a delimited section; keep each strategy cheap to draw.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

__all__ = [
    "NON_FINITE",
    "bonus_vectors",
    "block_states",
    "SMALL_SHAPES",
    "etas",
    "gains",
    "interior_simplex_points",
    "negatives",
    "non_finite",
    "non_integers",
    "non_positive",
    "not_numbers",
    "off_simplex_points",
    "outside_open_unit_interval",
    "outside_unit_interval",
    "simplex_points",
    "sizes",
    "verifier_noise",
]


def sizes(min_value: int = 1, max_value: int = 8):
    """Number of modes K or M."""
    return st.integers(min_value=min_value, max_value=max_value)


@st.composite
def simplex_points(draw, n: int | None = None, *, min_n: int = 1, max_n: int = 8,
                   min_entry: float = 0.0, near_faces: bool = True):
    """A point of the (n−1)-simplex as a float64 NumPy vector.

    Mixes Dirichlet-like interior points with points close to faces and vertices (some entries
    of order 1e-9) when ``near_faces``; every entry is at least ``min_entry`` (then renormalised).
    """
    n = draw(st.integers(min_n, max_n)) if n is None else n
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["dirichlet", "sparse", "vertex"] if near_faces else ["dirichlet"]))
    alpha = draw(st.sampled_from([0.3, 1.0, 5.0]))
    x = rng.gamma(alpha, size=n) + 1e-300
    if kind == "sparse" and n > 1:
        k = rng.integers(1, n)
        x[rng.choice(n, size=k, replace=False)] *= 1e-9
    elif kind == "vertex":
        x = np.full(n, 1e-9)
        x[rng.integers(n)] = 1.0
    x = x / x.sum()
    if min_entry > 0:
        x = np.maximum(x, min_entry)
        x = x / x.sum()
    return x


def interior_simplex_points(n: int | None = None, *, min_n: int = 1, max_n: int = 8,
                            min_entry: float = 1e-3):
    """Simplex points bounded away from the faces (every entry >= ~min_entry)."""
    return simplex_points(n, min_n=min_n, max_n=max_n, min_entry=min_entry)


def gains(min_value: float = 0.0, max_value: float = 5.0):
    return st.floats(min_value=min_value, max_value=max_value, allow_nan=False,
                     allow_infinity=False)


@st.composite
def verifier_noise(draw, max_total: float = 0.45):
    """``(delta_fn, delta_fp)`` with ``delta_fn + delta_fp <= max_total`` (J >= 1 − max_total)."""
    fn = draw(st.floats(0.0, max_total))
    fp = draw(st.floats(0.0, max_total - fn))
    return fn, fp


# ----------------------------------------------------------------- block states and bonuses


@st.composite
def block_states(draw, *, min_K: int = 1, max_K: int = 6, min_M: int = 1, max_M: int = 6,
                 shapes: list[tuple[int, int]] | None = None, min_entry: float = 1e-3,
                 near_faces: bool = False, p_min: float = 0.01, p_max: float = 0.99):
    """``(p, y, z)`` as NumPy values: ``y ∈ Δ^{K−1}``, ``z ∈ Δ^{M−1}``, ``p ∈ [p_min, p_max]``.

    ``shapes`` (a list of ``(K, M)``) restricts the sizes to a few pairs — JAX compiles once per
    shape, so a short fixed list keeps property tests fast. With ``near_faces`` the compositions
    may have entries of order 1e-9 (faces and vertices); otherwise every entry is at least
    ~``min_entry``."""
    if shapes is not None:
        K, M = draw(st.sampled_from(shapes))
    else:
        K = draw(sizes(min_K, max_K))
        M = draw(sizes(min_M, max_M))
    if near_faces:
        y, z = draw(simplex_points(K)), draw(simplex_points(M))
    else:
        y = draw(simplex_points(K, min_entry=min_entry))
        z = draw(simplex_points(M, min_entry=min_entry))
    p = draw(st.floats(p_min, p_max))
    return p, y, z


@st.composite
def bonus_vectors(draw, n: int, *, scale: float = 5.0):
    """An arbitrary (uncentered) bonus vector of length ``n``, entries in ``[−scale, scale]``."""
    seed = draw(st.integers(0, 2**32 - 1))
    return np.random.default_rng(seed).uniform(-scale, scale, size=n)


#: three (K, M) pairs covering K = 1, M = 1, K > M and K < M (see ``block_states(shapes=...)``)
SMALL_SHAPES = [(1, 3), (3, 1), (4, 5)]


def etas(min_value: float = 0.1, max_value: float = 2.0):
    """Learning rates η."""
    return st.floats(min_value, max_value)


# ----------------------------------------------------------------- invalid values (bad input)
# Strategies for values a public function must refuse (tests/test_bad_input.py).

NON_FINITE = (float("nan"), float("inf"), float("-inf"))


def non_finite():
    """NaN, +inf or −inf."""
    return st.sampled_from(NON_FINITE)


def not_numbers():
    """Things that are not a (real) number: strings, None, a complex number."""
    return st.sampled_from(["0.5", "a", None, 1 + 2j])


def negatives(max_value: float = -1e-9, min_value: float = -1e6):
    """Finite negative floats."""
    return st.floats(min_value, max_value, allow_nan=False, allow_infinity=False)


def non_positive():
    """0, finite negatives and non-finite values (for a quantity that must be finite and > 0)."""
    return st.one_of(st.just(0.0), negatives(), non_finite())


def outside_open_unit_interval():
    """Values not in (0, 1): the end points, below, above, non-finite."""
    return st.one_of(st.sampled_from([0.0, 1.0]), negatives(),
                     st.floats(1.0, 1e6, exclude_min=True), non_finite())


def outside_unit_interval():
    """Values not in [0, 1]."""
    return st.one_of(negatives(), st.floats(1.0, 1e6, exclude_min=True), non_finite())


def non_integers(min_value: float = 0.0, max_value: float = 1e3):
    """Finite floats with a fractional part (``k + f``, ``f ∈ [0.01, 0.99]``)."""
    return st.builds(lambda k, f: k + f, st.integers(int(min_value), int(max_value)),
                     st.floats(0.01, 0.99))


@st.composite
def off_simplex_points(draw, n: int | None = None, *, min_n: int = 1, max_n: int = 6):
    """A length-``n`` vector that is not a simplex point: a point rescaled so its sum is off by
    more than 1e-4, a point with one negative entry, or one with a NaN/inf entry."""
    x = draw(simplex_points(n, min_n=min_n, max_n=max_n))
    kind = draw(st.sampled_from(["scaled", "negative", "non_finite"]))
    x = x.copy()
    if kind == "scaled":
        x = x * draw(st.one_of(st.floats(0.0, 0.9999), st.floats(1.0001, 10.0)))
    elif kind == "negative":
        i = draw(st.integers(0, len(x) - 1))
        x[i] = -draw(st.floats(1e-3, 1.0))
    else:
        i = draw(st.integers(0, len(x) - 1))
        x[i] = draw(non_finite())
    return x
