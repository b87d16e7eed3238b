"""``python -m simplexlab`` is the ``simplexlab`` command (:func:`main` is also its console
script): it imports the command line inside a ``KeyboardInterrupt`` guard, so that Ctrl-C in the
first instant (while NumPy and the package load) prints one line, not an import traceback."""

import sys


def main() -> int:
    from ._interrupt import install

    install()  # SIGINT also sets a flag, checked once JAX has loaded and before each chunk
    try:
        from .lab import main as cli
    except KeyboardInterrupt:
        print(f"\ninterrupted before anything ran; run again with: simplexlab "
              f"{' '.join(sys.argv[1:])}".rstrip(), file=sys.stderr)
        return 130
    return cli()


if __name__ == "__main__":
    raise SystemExit(main())
