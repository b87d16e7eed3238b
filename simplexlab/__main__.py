"""``python -m simplexlab`` is the ``simplexlab`` command (:func:`main` is also its console
script). It installs the Ctrl-C handler (:func:`simplexlab._interrupt.install`) before it imports
anything that compiles, then imports and runs the command line inside a ``KeyboardInterrupt``
guard, so that Ctrl-C at any instant -- while NumPy and the package load, in an import, in a
compilation, in a command, as it ends -- prints one line and exits with status 130 (through
:func:`simplexlab._interrupt.exit_interrupted`: never an interpreter torn down under XLA's
threads). A command that returned ends through :func:`simplexlab._interrupt.finish` too."""

import sys


def main() -> int:
    from ._interrupt import ended, exit_interrupted, finish, install

    again = f"simplexlab {' '.join(sys.argv[1:])}".rstrip()
    install(again)  # SIGINT also sets a flag; the watchdog raises what an import held back
    try:
        from .lab import main as cli
    except KeyboardInterrupt:
        print(f"\ninterrupted before anything ran; run again with: {again}", file=sys.stderr)
        exit_interrupted(130)
    try:
        try:
            code = cli()
        finally:
            ended()  # a Ctrl-C from here on, as the interpreter ends: the one line, status 130
    except KeyboardInterrupt:  # one that reached past the command's own handlers
        print(f"\ninterrupted; nothing saved; run again with: {again}", file=sys.stderr)
        code = 130
    if code == 130:
        exit_interrupted(130)
    finish(code)  # the exit handlers run with the handler in place, then os._exit
    return code  # not reached


if __name__ == "__main__":
    raise SystemExit(main())
