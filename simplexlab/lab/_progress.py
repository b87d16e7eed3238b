"""Progress bars for long loops (experiments, sweeps, benchmarks): :mod:`tqdm` with an ETA.

Writes to stderr. On a terminal the bar redraws in place; elsewhere (CI logs) it redraws at most
every 10 s so that logs stay short. ``SIMPLEXLAB_PROGRESS=0`` silences it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from .._env import progress_enabled

T = TypeVar("T")

__all__ = ["progress"]


def progress(iterable: Iterable[T], desc: str = "", total: int | None = None) -> Iterator[T]:
    """Yield from ``iterable`` while drawing ``desc  42%|####   | 5/12 [00:03<00:04]``."""
    from tqdm.auto import tqdm

    enabled = progress_enabled()
    tty = sys.stderr.isatty()
    yield from tqdm(iterable, desc=desc, total=total, disable=not enabled, dynamic_ncols=True,
                    mininterval=0.5 if tty else 10.0, file=sys.stderr)
