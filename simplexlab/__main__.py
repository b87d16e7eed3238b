"""``python -m simplexlab`` is the ``simplexlab`` command."""

from .lab import main

raise SystemExit(main())
