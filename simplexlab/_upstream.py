"""Every use of a private name of diffrax or equinox, in one place.

simplexlab reads four things that diffrax and equinox do not document: equinox's switch for
``error_if`` (``equinox._errors.EQX_ON_ERROR``, turned off while tracing a solve so that the
program carries no host callback and the persistent compilation cache can keep it), the integer
inside a diffrax result (``RESULTS.x._value``), diffrax's table from result code to message
(``RESULTS._index_to_message``), and, to write the stages of an explicit Runge–Kutta pair out
(:mod:`simplexlab.theory`'s ensemble solver), the fields of its Butcher tableau and the layout of
its solver state and dense output. :func:`check_upstream` checks each of these against the
installed versions and says, in one message, which one an upgrade broke;
``tests/test_upstream.py`` runs it, and ``pyproject.toml`` bounds both packages above at the
minor versions tested.
"""

from __future__ import annotations

import contextlib

import diffrax
import equinox as eqx
import equinox._errors as _eqx_errors
import jax.numpy as jnp
import numpy as np

__all__ = ["check_upstream", "error_checks_off", "result_code", "result_message",
           "with_result_code"]


@contextlib.contextmanager
def error_checks_off():
    """equinox's ``error_if`` off while the block traces (equinox reads ``EQX_ON_ERROR`` when an
    ``error_if`` is traced, not when the program runs)."""
    before = _eqx_errors.EQX_ON_ERROR
    _eqx_errors.EQX_ON_ERROR = "off"
    try:
        yield
    finally:
        _eqx_errors.EQX_ON_ERROR = before


def result_code(result):
    """The integer code (an array) inside a diffrax result."""
    return result._value


def with_result_code(result, code):
    """``result`` holding ``code`` instead (e.g. broadcast to one code per trajectory)."""
    return eqx.tree_at(lambda r: r._value, result, code)


def result_message(code: int) -> str:
    """diffrax's message for the integer result ``code``."""
    return diffrax.RESULTS._index_to_message[int(code)]


def check_upstream() -> None:
    """Raise ``RuntimeError`` naming each private name of diffrax / equinox that simplexlab
    relies on and the installed versions lack or have changed (what an upgrade broke)."""
    problems = []
    if not isinstance(getattr(_eqx_errors, "EQX_ON_ERROR", None), str):
        problems.append("equinox._errors.EQX_ON_ERROR (a string: 'raise', 'off', ...) is gone")
    try:
        ok = int(np.asarray(result_code(diffrax.RESULTS.successful)))
        msg = result_message(int(np.asarray(result_code(diffrax.RESULTS.max_steps_reached))))
        if ok != 0 or "steps" not in msg:
            problems.append(f"diffrax's result codes changed (successful = {ok}, "
                            f"max_steps_reached's message {msg!r})")
        swapped = with_result_code(diffrax.RESULTS.successful, jnp.zeros((2,), jnp.int32))
        if np.shape(result_code(swapped)) != (2,):
            problems.append("a diffrax result no longer holds its code in `_value`")
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        problems.append(f"diffrax's results: `RESULTS.x._value` / `RESULTS._index_to_message` "
                        f"({type(err).__name__}: {err})")
    for solver in (diffrax.Tsit5, diffrax.Dopri5, diffrax.Dopri8):
        tab = getattr(solver, "tableau", None)
        fields = ("a_lower", "c", "b_sol", "b_error")
        if tab is None or not all(hasattr(tab, f) for f in fields):
            problems.append(f"diffrax.{solver.__name__}.tableau lacks {fields}")
        elif len(tab.a_lower) != len(tab.c) or not np.isclose(float(tab.c[-1]), 1.0):
            problems.append(f"diffrax.{solver.__name__}'s tableau is no longer FSAL/SSAL "
                            "(its last stage at c = 1)")
    if problems:
        raise RuntimeError(
            f"diffrax {diffrax.__version__} / equinox {eqx.__version__}: simplexlab relies on "
            "private names that changed (simplexlab/_upstream.py): " + "; ".join(problems)
            + ". Install the versions pyproject.toml allows, or update _upstream.py.")
