"""Ctrl-C honoured whenever it arrives (a base module: every layer may use it).

Python turns SIGINT into a ``KeyboardInterrupt`` raised wherever Python code happens to run, and
some places swallow it: JAX's garbage-collection callback (``Exception ignored in:
_xla_gc_callback``) and host callbacks inside a compiled program (equinox's run-time checks)
print the traceback and go on, so an early Ctrl-C used to let a sweep run to the end with exit
status 0; raised while XLA's threads still run a program, it can crash the interpreter at exit.

Raised inside an import it can come out as another error (``RuntimeError: Error calling
__set_name__``, from a class body).

So SIGINT also sets a flag: :func:`check` raises ``KeyboardInterrupt`` when one arrived (and was
swallowed or held back), and the command line and the sweep engine call it once JAX has loaded
and before each chunk. During an import, and inside a :func:`deferred` block, the first SIGINT
only sets the flag (the block raises when it ends); a second SIGINT raises at once. The engine
computes each chunk inside one, so Ctrl-C stops a sweep after the chunk in flight, which is
saved. The ``simplexlab`` command installs the handler first thing
(:func:`install`); library code gets it for the duration of each :func:`deferred` block.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

__all__ = ["check", "deferred", "install"]

_state = {"depth": 0, "pending": False}


def _importing(frame) -> bool:
    """Whether ``frame`` runs inside an import (a module's body, a class body it creates)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _handler(signum, frame):
    first = not _state["pending"]
    _state["pending"] = True
    if first and (_state["depth"] or _importing(frame)):
        return  # raised by check(), or when the outermost deferred block ends
    raise KeyboardInterrupt


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def install() -> None:
    """SIGINT sets the flag and raises (for a program's lifetime: the ``simplexlab`` command);
    a ``KeyboardInterrupt`` swallowed as "unraisable" (in a gc callback) is not printed, as
    :func:`check` raises it again."""
    if _main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _handler)
        previous = sys.unraisablehook

        def hook(unraisable):
            if not (_state["pending"] and issubclass(unraisable.exc_type, KeyboardInterrupt)):
                previous(unraisable)

        sys.unraisablehook = hook


def check() -> None:
    """Raise ``KeyboardInterrupt`` if a SIGINT arrived that nothing has acted on yet."""
    if _state["pending"]:
        _state["pending"] = False
        raise KeyboardInterrupt


@contextlib.contextmanager
def deferred():
    """Hold SIGINT back until the block ends, then raise ``KeyboardInterrupt``; a second SIGINT
    raises at once. In the main thread, while SIGINT has Python's default handler or this
    module's (a program that ignores SIGINT or handles it itself keeps its own behaviour)."""
    handler = signal.getsignal(signal.SIGINT)
    install_here = (_state["depth"] == 0 and _main_thread()
                    and handler is signal.default_int_handler)
    if not install_here and _state["depth"] == 0 and handler is not _handler:
        yield
        return
    if install_here:
        signal.signal(signal.SIGINT, _handler)
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
        if install_here:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if _state["depth"] == 0:
            check()
