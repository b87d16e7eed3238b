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
saved. Library code gets the handler for the duration of each :func:`deferred` block.

The ``simplexlab`` command installs it first thing, before anything that compiles is imported
(:func:`install` with the command's line), and then a watchdog thread makes sure no interrupt is
lost, whatever the command: one held back by an import is raised as soon as the import is done
(an interrupt 2.5–3.5 s into ``plan`` or ``schedule verify`` landed in an import and the command
ran to the end), one swallowed is raised again, and a command still running
:data:`GRACE_SECONDS` after its interrupt was raised (waiting on compilations in other threads)
is ended with the one line and exit status 130. The command itself ends through
:func:`exit_interrupted`: ``os._exit`` after the line, so that the interpreter is never torn down
while XLA's threads still compile or run (that crashed ``schedule verify`` with SIGSEGV after
its line, 4 of 6 tries); what an interrupt cancels is only ever computation (results and chunks
are written atomically, and the sweep engine finishes the chunk in flight first). Once the
command has returned (:func:`ended`), a SIGINT while it ends does the same at once, and it ends
through :func:`finish`, so that SIGINT never falls back to its default before the process is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

__all__ = ["GRACE_SECONDS", "check", "deferred", "ended", "exit_interrupted", "install"]

#: how long a command may take to end after its interrupt was raised (its own line printed, its
#: workers stopped) before the watchdog ends it with the one line
GRACE_SECONDS = 3.0
#: how often the watchdog looks at the main thread while an interrupt waits
_POLL_SECONDS = 0.02

_state = {"depth": 0, "pending": False, "delivered": False, "delivered_at": 0.0,
          "redelivering": False, "command": None, "ended": False}
_wake = threading.Event()
_watchdog: list[threading.Thread] = []


def _importing(frame) -> bool:
    """Whether ``frame`` runs inside an import (a module's body, a class body it creates)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _deliver() -> None:
    """Mark the interrupt raised (the watchdog then gives the command its grace) and raise."""
    _state["delivered"] = True
    _state["delivered_at"] = time.monotonic()
    _wake.set()
    raise KeyboardInterrupt


def _handler(signum, frame):
    if _state["ended"] and _state["command"] is not None:
        _exit_now()  # the command has returned: nothing left to raise into (:func:`ended`)
    if _state["redelivering"]:  # the watchdog's: raise where it is safe, else let it retry
        _state["redelivering"] = False
        if not _state["pending"] or _state["delivered"] or _state["depth"] or _importing(frame):
            return
        _deliver()
    if _state["delivered"] and _state["command"] is not None:
        _exit_now()  # a second Ctrl-C while the command ends: at once
    first = not _state["pending"]
    _state["pending"] = True
    if first and (_state["depth"] or _importing(frame)):
        _state["delivered"] = False
        _wake.set()
        return  # raised by check(), when the outermost deferred block ends, or the watchdog
    _deliver()


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _line() -> str:
    return f"\ninterrupted; run again with: {_state['command']}".rstrip()


def exit_interrupted(code: int = 130) -> None:
    """End the command now with status ``code``: flush the output and leave with ``os._exit``
    (no interpreter teardown while XLA's threads still compile or run)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def finish(code: int) -> None:
    """End a command that returned ``code`` (it never returns): what the interpreter's own end
    does first -- its other threads joined, its exit handlers run, the output flushed -- with
    this module's handler still in place (a SIGINT meanwhile: the one line, status 130), then
    ``os._exit``. The interpreter's own end resets SIGINT to its default before it tears down
    the rest (XLA's client among it), and an interrupt there killed the process without a word
    (exit status −2: seen when ``plan`` had printed its table and was ending as its interrupt
    came, 3.5 s after its start)."""
    import atexit

    main = threading.main_thread()
    for thread in threading.enumerate():
        if thread is not main and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()  # the interpreter's exit handlers, as it runs them
    exit_interrupted(code)


def _exit_now() -> None:
    """The watchdog's end of a command that did not end: the one line, exit status 130."""
    with contextlib.suppress(Exception):
        print(_line(), file=sys.stderr)
    exit_interrupted(130)


def _watch() -> None:
    """Deliver an interrupt held back by an import or swallowed, once the main thread is outside
    any import and :func:`deferred` block; end the command :data:`GRACE_SECONDS` after its
    interrupt was raised if it is still running."""
    main = threading.main_thread()
    while True:
        _wake.wait()
        _wake.clear()
        while _state["pending"] or _state["delivered"]:
            frame = sys._current_frames().get(main.ident)
            if frame is None:  # the main thread has ended
                return
            if _state["delivered"]:
                if time.monotonic() - _state["delivered_at"] > GRACE_SECONDS:
                    _exit_now()
            elif not (_state["depth"] or _state["redelivering"] or _importing(frame)):
                _state["redelivering"] = True
                signal.pthread_kill(main.ident, signal.SIGINT)
            time.sleep(_POLL_SECONDS)


def install(command: str | None = None) -> None:
    """SIGINT sets the flag and raises (for a program's lifetime: the ``simplexlab`` command);
    a ``KeyboardInterrupt`` swallowed as "unraisable" (in a gc callback) is not printed, as
    :func:`check` (or the watchdog) raises it again. With ``command`` (the command line, for the
    message): the watchdog of the module docstring runs too, for the rest of the process."""
    if not _main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _handler)
        previous = sys.unraisablehook

        def hook(unraisable):
            if not (_state["pending"] and issubclass(unraisable.exc_type, KeyboardInterrupt)):
                previous(unraisable)
                return
            _state["delivered"] = False  # swallowed: to be raised again
            _wake.set()

        sys.unraisablehook = hook
    if command is not None and signal.getsignal(signal.SIGINT) is _handler:
        _state["command"] = command
        if not _watchdog and hasattr(signal, "pthread_kill"):
            thread = threading.Thread(target=_watch, name="simplexlab-interrupt", daemon=True)
            thread.start()
            _watchdog.append(thread)


def ended() -> None:
    """The command has returned: a SIGINT from now on (while the interpreter ends: its threads
    joined, its exit handlers run) ends the process at once with the one line and status 130.
    Raised there, the ``KeyboardInterrupt`` reached the top of the interpreter, which then
    killed itself with SIGINT (exit status −2, a traceback: seen when ``plan`` had printed its
    table and was ending as its interrupt came)."""
    _state["ended"] = True


def check() -> None:
    """Raise ``KeyboardInterrupt`` if a SIGINT arrived that nothing has acted on yet."""
    if _state["pending"]:
        _state["pending"] = False
        _deliver()


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
