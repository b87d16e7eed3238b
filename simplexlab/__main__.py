"""``python -m simplexlab`` is the ``simplexlab`` command."""

from .lab._cli import main

raise SystemExit(main())
