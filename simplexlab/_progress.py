"""A dependency-free progress bar for long loops (experiments, sweeps, benchmarks).

Writes to stderr. On a terminal it redraws one line; elsewhere (CI logs) it prints a line at most
every ``min_interval`` seconds so that logs stay short. ``SIMPLEXLAB_PROGRESS=0`` silences it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

__all__ = ["progress"]


def _fmt_seconds(s: float) -> str:
    if s < 60:
        return f"{s:4.1f}s"
    m, s = divmod(int(s), 60)
    return f"{m}m{s:02d}s" if m < 60 else f"{m // 60}h{m % 60:02d}m"


def progress(
    iterable: Iterable[T],
    desc: str = "",
    total: int | None = None,
    *,
    min_interval: float = 0.5,
    stream=None,
) -> Iterator[T]:
    """Yield from ``iterable`` while drawing ``desc  [####....] i/total  elapsed  eta``."""
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    stream = stream if stream is not None else sys.stderr
    enabled = os.environ.get("SIMPLEXLAB_PROGRESS", "1") != "0"
    tty = hasattr(stream, "isatty") and stream.isatty()
    interval = min_interval if tty else max(min_interval, 10.0)
    start = last = time.perf_counter()

    def draw(i: int, final: bool = False) -> None:
        elapsed = time.perf_counter() - start
        if total:
            frac = i / total
            bar = "#" * int(24 * frac) + "." * (24 - int(24 * frac))
            eta = elapsed / frac - elapsed if frac > 0 else float("nan")
            eta_s = _fmt_seconds(eta) if frac > 0 and not final else "  -  "
            line = f"{desc} [{bar}] {i}/{total} {_fmt_seconds(elapsed)} eta {eta_s}"
        else:
            line = f"{desc} {i} it {_fmt_seconds(elapsed)}"
        if tty:
            stream.write("\r" + line + ("\n" if final else ""))
        else:
            stream.write(line + "\n")
        stream.flush()

    i = 0
    for item in iterable:
        yield item
        i += 1
        now = time.perf_counter()
        if enabled and now - last >= interval and (total is None or i < total):
            draw(i)
            last = now
    if enabled and (time.perf_counter() - start) >= min_interval:
        draw(i, final=True)
