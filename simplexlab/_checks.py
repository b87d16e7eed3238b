"""Input validation that works both eagerly and under ``jit``/``vmap``.

At the API boundary, concrete (non-traced) inputs are checked with NumPy and a ``ValueError`` naming
the offending value is raised. Traced inputs are checked with :func:`equinox.error_if`, which raises
at run time under ``jit`` and ``vmap`` (never a silent NaN).

Every check returns the (possibly error-wrapped) array, which callers must use in place of the
input so that the runtime check is not dead-code eliminated under ``jit``.

On an asynchronous backend (a GPU; on a CPU, a program over several devices) a traced check's
error travels with the result: the call that dispatched the program returns, and the error is
raised where the result is first waited for (``jax.block_until_ready``, ``np.asarray``), or at the
call under ``eqx.filter_jit``, which waits for its error marker. The package's own compiled entry
points wait before returning (the torch bridge checks one flag vector on the host, ``verify`` and
``solve`` run under ``eqx.filter_jit``, the sweep engine converts every chunk to NumPy); a user's
own ``jax.jit`` around a public function gets the error where it uses the result
(``tests/test_bad_input.py`` shows both on a two-device CPU program).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "as_int",
    "check",
    "check_broadcast",
    "check_finite",
    "check_in_open_unit_interval",
    "check_integer_valued",
    "check_nonnegative",
    "check_number",
    "check_pair",
    "check_parameter",
    "check_real",
    "check_simplex",
    "on_simplex",
    "error_if",
    "float_leaf",
    "host_memory_bytes",
    "is_concrete",
    "is_int",
    "xp",
    "Param",
    "inputs_trusted",
]

SIMPLEX_ATOL = 1e-6


class _Namespace:
    """``xp.f(a, ...)`` is NumPy's ``f`` when ``a`` is a NumPy array or scalar and
    ``jax.numpy``'s ``f`` otherwise; ``xp.inf`` etc. are the constants.

    The predicates handed to :func:`check` are written with ``xp``, so an eager check (NumPy
    input) runs in NumPy -- no JAX dispatch, no compilation for every new shape -- and a traced
    check builds the same predicate in ``jax.numpy`` for ``eqx.error_if``."""

    def __init__(self):
        self._cache = {}

    def __getattr__(self, name):
        try:
            return self._cache[name]
        except KeyError:
            pass
        jf = getattr(jnp, name)
        if not callable(jf):
            out = jf
        else:
            nf = getattr(np, name)

            def out(a, *args, **kwargs):
                f = nf if isinstance(a, np.ndarray | np.generic | float | int) else jf
                return f(a, *args, **kwargs)

            out.__name__ = name
        self._cache[name] = out
        return out


xp = _Namespace()
"""An array namespace that is NumPy for NumPy inputs and ``jax.numpy`` for JAX ones: a
parameter's domain (:class:`Param`'s ``bad``) written with it, e.g.
``lambda a: ~(xp.isfinite(a) & (a > 0))``, runs in the host check on NumPy values and in the
traced check on JAX values alike (NaN fails it: every comparison with NaN is false)."""


class Param(NamedTuple):
    """One parameter, declared once: its ``name``, ``default``, domain (``bad``: a predicate
    written with :data:`xp` as ``~(ok)``, so that NaN fails it; ``what``: the domain in words,
    for the error), the paper's ``symbol``, one line of ``doc`` and the ``kind`` of its values
    (``"float"``, or ``"int"`` for a count: a sweep keeps it an integer from its TOML file to the
    kernel). The host check (:meth:`check`), the traced checks (:func:`checked_params`), the
    defaults and the documentation of the parameter all come from here."""

    name: str
    default: Any
    bad: Callable
    what: str
    symbol: str = ""
    doc: str = ""
    kind: str = "float"

    @property
    def dtype(self):
        """The dtype of its values: JAX's default integer for ``kind="int"`` (``int64`` with
        x64, else ``int32``), JAX's default float otherwise."""
        return jnp.result_type(int) if self.kind == "int" else jnp.result_type(float)

    def check(self, value, who: str = "") -> None:
        """Raise ``ValueError`` naming ``who``, the parameter and the value when a concrete
        ``value`` is outside the domain (a traced one is left to :meth:`checked`)."""
        if not is_concrete(value):
            return
        try:
            arr = np.asarray(value, float)
        except (TypeError, ValueError):
            raise ValueError(f"{who}{self.name} must be a number ({self.what}); got "
                             f"{value!r}") from None
        try:
            flagged = np.any(self.bad(arr))
        except Exception as err:  # a domain that cannot judge the value: never a traceback
            raise ValueError(f"{who}{self.name}: its domain ({self.what}) could not be checked "
                             f"at {_describe(value)}: the predicate raised "
                             f"{type(err).__name__}: {err}") from None
        if flagged:
            raise ValueError(f"{who}{self.name} must be {self.what}; got {_describe(value)}")


def is_int(x) -> bool:
    """True for a Python or NumPy integer (not a bool)."""
    return isinstance(x, int | np.integer) and not isinstance(x, bool)


def host_memory_bytes() -> int | None:
    """This machine's physical memory in bytes (``None`` where the OS does not say). Size
    guards compare an estimate of an allocation with it: work whose arrays can never fit is
    refused up front with a ``ValueError`` instead of ending the process inside XLA."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * size if pages > 0 and size > 0 else None


def is_concrete(x) -> bool:
    """True when ``x`` holds actual values (not a JAX tracer)."""
    return not isinstance(x, jax.core.Tracer)


def float_leaf(x):
    """``jnp.asarray(x, dtype=float)`` without a program of its own for a host value: a Python
    number or NumPy array becomes a NumPy array of JAX's default float, which a compiled
    function takes as it takes a JAX array (an eager ``jnp.asarray`` of a Python number compiles
    a small program, once per process and type); a JAX array or a tracer goes through
    ``jnp.asarray``."""
    if isinstance(x, jax.Array) or not is_concrete(x):
        return jnp.asarray(x, dtype=float)
    return np.asarray(x, dtype=jnp.result_type(float))


def _describe(x) -> str:
    arr = np.asarray(x)
    if arr.size <= 12:
        return np.array2string(arr, precision=6, separator=", ")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return (f"array of shape {arr.shape} (min={np.nanmin(arr):.6g}, "
                f"max={np.nanmax(arr):.6g})")


def _numeric_array(x, what: str) -> np.ndarray:
    """``np.asarray(x)`` for a concrete number or array of numbers (bool, int, float); anything
    else (a string, ``None``, a ragged list, complex numbers) raises ``ValueError`` naming it."""
    if isinstance(x, str | bytes) or x is None:
        raise ValueError(f"{what} must be a number (or an array of numbers); got {x!r}")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number (or an array of numbers); got {x!r}") from None
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{what} must be a number (or an array of real numbers); got {x!r}")
    return arr


def check_number(x, name: str):
    """``x`` must be a real number or array of real numbers (not a string, ``None``, ...)."""
    if is_concrete(x):
        _numeric_array(x, name)
    return x


def check_real(x, name: str):
    """A parameter: a real number or array of real numbers, and not a bool (``True`` would pass
    as 1; rewards and masks, which may be bools, use :func:`check_number`)."""
    check_number(x, name)
    if is_concrete(x) and np.asarray(x).dtype == np.bool_:
        raise ValueError(f"{name} must be a real number, not a bool; got {x!r}")
    return x


_TRUSTED = contextvars.ContextVar("simplexlab_trusted_inputs", default=False)


@contextlib.contextmanager
def trusted_inputs():
    """Within this block, *traced* arguments skip their run-time checks (concrete ones are still
    checked while tracing). For simulators that call the public functions inside a compiled step
    on arrays they built themselves (rewards in {0, 1}, valid cluster ids, masks): those inputs
    are valid by construction, and every ``eqx.error_if`` adds a batch-wide reduction and a
    branch to each step. The user's own parameters must be checked outside the block."""
    token = _TRUSTED.set(True)
    try:
        yield
    finally:
        _TRUSTED.reset(token)


def inputs_trusted() -> bool:
    """Inside :func:`trusted_inputs` (the caller built the inputs itself: no checks)."""
    return _TRUSTED.get()


def error_if(x, pred, message: str):
    """``eqx.error_if(x, pred, message)``, except within :func:`trusted_inputs` (inputs checked
    on the host already, e.g. by the sweep engine): then ``x`` itself. A program without
    ``eqx.error_if`` has no host callback, which JAX's persistent compilation cache needs."""
    return x if _TRUSTED.get() else eqx.error_if(x, pred, message)


def check(
    x,
    bad: Callable[[np.ndarray | jax.Array], np.ndarray | jax.Array],
    message: str,
    *,
    show: bool = True,
):
    """Raise if ``bad(x)`` is true anywhere.

    ``bad`` must work on NumPy and JAX arrays: operators, methods and :data:`xp` functions (so
    that the eager check runs in NumPy).
    Eagerly: ``ValueError(f"{message}; got {x}")``. Traced: ``eqx.error_if`` with ``message``.
    A concrete ``x`` that is not a number (a string, ``None``) raises a ``ValueError`` too, and
    NaN fails every check (no checked input may be NaN, whatever ``bad`` says of it: a rule
    written ``a < 0`` is false for NaN).
    """
    if is_concrete(x):
        arr = _numeric_array(x, message.split(" must ")[0] if " must " in message else message)
        # evaluate eagerly even inside a jit trace (concrete constants stay concrete)
        with jax.ensure_compile_time_eval():
            res = bad(arr)
        if isinstance(res, jax.core.Tracer):  # ``bad`` closes over a traced value
            return error_if(jnp.asarray(x), jnp.any(res) | _any_nan(arr), message)
        flagged = bool(np.any(res)) or bool(_any_nan(arr))
        if flagged:
            raise ValueError(f"{message}; got {_describe(arr)}" if show else message)
        return x
    if _TRUSTED.get():  # not even the predicate: under an eager vmap it would run op by op
        return x
    return error_if(x, jnp.any(bad(x)) | _any_nan(x), message)


def _any_nan(a):
    """Whether a floating array holds a NaN (``False`` for integer and bool arrays)."""
    if isinstance(a, np.ndarray | np.generic):  # the host check: NumPy alone
        return a.dtype.kind == "f" and bool(np.isnan(a).any())
    if jnp.issubdtype(a.dtype, jnp.floating):
        return xp.any(xp.isnan(a))
    return False


def check_pair(x, y, bad, message: str):
    """Raise if ``bad(x, y)`` anywhere (``x``, ``y`` broadcast); eagerly a ``ValueError`` naming
    the first offending pair, traced an ``eqx.error_if`` on ``x``. Returns ``x``."""
    if is_concrete(x) and is_concrete(y):
        a, b = np.broadcast_arrays(np.asarray(x), np.asarray(y))
        with jax.ensure_compile_time_eval():
            mask = np.asarray(bad(a, b))
        if np.any(mask):
            i = tuple(np.argwhere(mask)[0]) if mask.ndim else ()
            raise ValueError(f"{message}; got {a[i].item()!r} and {b[i].item()!r}")
        return x
    if _TRUSTED.get():  # as in check(): no predicate
        return x
    return error_if(jnp.asarray(x), jnp.any(bad(x, y)), message)


def check_finite(x, name: str):
    return check(x, lambda a: ~xp.isfinite(a), f"{name} must be finite")


def check_parameter(x, name: str, *, lower: float | None = None, strict: bool = False):
    """A hyperparameter (gain, rate, exponent): finite and, with ``lower``, ``>= lower``
    (``> lower`` when ``strict``). Used in ``__check_init__`` of configuration modules."""
    check_real(x, name)
    if lower is None:
        return check(x, lambda a: ~xp.isfinite(a), f"{name} must be finite")
    op = ">" if strict else ">="
    return check(
        x,
        lambda a: ~xp.isfinite(a) | ((a <= lower) if strict else (a < lower)),
        f"{name} must be finite and {op} {lower:g}",
    )


def check_nonnegative(x, name: str):
    # written as "not ok" so that NaN fails too
    return check(x, lambda a: ~(a >= 0), f"{name} must be non-negative (probabilities/masses)")


def in_open_unit_interval(a: np.ndarray) -> bool:
    """Whether every entry of the NumPy float array ``a`` lies in the open interval (0, 1) (NaN
    does not): the host's fast accept of :func:`check_in_open_unit_interval`."""
    if a.dtype.kind != "f":
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.all((a > 0) & (a < 1)))


def check_in_open_unit_interval(x, name: str):
    if is_concrete(x) and in_open_unit_interval(np.asarray(x)):
        return x
    return check(x, lambda a: ~((a > 0) & (a < 1)),
                 f"{name} must lie in the open interval (0, 1)")


def check_integer_valued(x, name: str, *, lower: int | None = None):
    """Every entry of ``x`` is a finite whole number (and ``>= lower``): for counts and group
    sizes that may be arrays (or traced)."""
    x = check_finite(x, name)
    msg = f"{name} must be an integer" + ("" if lower is None else f" >= {lower}")
    return check(x, lambda a: (a != xp.round(a)) | ((a < lower) if lower is not None else False),
                 msg)


def as_int(x, name: str, *, lower: int | None = None) -> int:
    """A static (Python-level) integer argument: an ``int``, a NumPy integer or a whole float;
    returns it as ``int``. Bools, fractions, non-finite values, strings and tracers raise
    ``ValueError`` naming ``name``."""
    bound = "" if lower is None else f" >= {lower}"
    if isinstance(x, jax.core.Tracer):
        raise ValueError(f"{name} must be a static Python integer{bound}, not a traced value")
    ok = is_int(x)
    if not ok and isinstance(x, float | np.floating) and math.isfinite(x) and x == int(x):
        ok = True
    if not ok and isinstance(x, np.ndarray | jax.Array) and np.ndim(x) == 0:
        v = np.asarray(x)
        ok = v.dtype.kind in "iu" or (v.dtype.kind == "f" and np.isfinite(v) and v == np.round(v))
    if not ok or (lower is not None and int(x) < lower):
        raise ValueError(f"{name} must be an integer{bound}; got {x!r}")
    return int(x)


def check_broadcast(**arrays) -> tuple[int, ...]:
    """The common broadcast shape of the named arguments, or a ``ValueError`` naming each
    argument's shape (instead of NumPy's anonymous "objects cannot be broadcast")."""
    shapes = {k: np.shape(v) for k, v in arrays.items()}
    try:
        return np.broadcast_shapes(*shapes.values())
    except ValueError:
        desc = ", ".join(f"{k} {s}" for k, s in shapes.items())
        raise ValueError(f"the shapes of {', '.join(shapes)} do not broadcast together: "
                         f"{desc}") from None


def on_simplex(a: np.ndarray, atol: float = SIMPLEX_ATOL) -> bool:
    """Whether every row of the NumPy float array ``a`` passes :func:`check_simplex` (one pass,
    no message: the host's fast accept, the checks themselves name what is wrong)."""
    if a.dtype.kind != "f" or a.ndim < 1 or a.shape[-1] < 1:
        return False
    with np.errstate(invalid="ignore"):  # NaN fails ``>= 0``, inf the sum
        return bool(np.all(a >= 0)) and bool(np.all(np.abs(a.sum(-1) - 1.0) <= atol))


def check_simplex(x, name: str, *, atol: float = SIMPLEX_ATOL):
    """``x`` (last axis) must be a point of the probability simplex: finite, >= 0, sums to 1."""
    check_number(x, name)
    if np.ndim(x) < 1 or np.shape(x)[-1] < 1:
        raise ValueError(f"{name} must have a last axis of length >= 1; got shape {np.shape(x)}")
    if is_concrete(x) and on_simplex(np.asarray(x), atol):  # a bad point: the checks below
        return x
    x = check_finite(x, name)
    x = check_nonnegative(x, name)
    return check(
        x,
        lambda a: abs(a.sum(-1) - 1.0) > atol,
        f"{name} must lie on the probability simplex (entries sum to 1 within {atol:g})",
    )
