"""The chunk store: every finished chunk of a sweep as one ``.npz`` file, written atomically.

A chunk's file name is the SHA-256 of everything that determines its numbers (target and its code
version, every static and array parameter value of its runs, the PRNG key data of each run, the
chunk's layout), so a change of any of them -- a different ``--seed``, mode, parameter or simulator
version -- is a different file and is recomputed, never confused with an old result.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._results import read_npz, remove_temporaries, set_aside, write_npz

__all__ = ["ChunkStore", "chunk_digest"]

STORE_FORMAT = "1"


def _canonical(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _canonical(x) for k, x in sorted(v.items())}
    if isinstance(v, list | tuple):
        return [_canonical(x) for x in v]
    if isinstance(v, np.ndarray):
        return {"dtype": str(v.dtype), "shape": list(v.shape),
                "sha256": hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()}
    if isinstance(v, np.generic):
        return _canonical(v.item())
    if isinstance(v, float):
        return repr(v)
    if v is None or isinstance(v, bool | int | str):
        return v
    if callable(v):
        return f"{getattr(v, '__module__', '')}.{getattr(v, '__qualname__', repr(v))}"
    return repr(v)


def chunk_digest(record: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``record`` (arrays by dtype, shape and content)."""
    text = json.dumps(_canonical({"store_format": STORE_FORMAT, **record}), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class ChunkStore:
    """``<root>/<digest>.npz`` files; :meth:`clean` removes temporary files left by a killed
    run (the atomic writer's ``.*.tmp``), so an interrupted sweep leaves no half-written file."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def path(self, digest: str) -> Path:
        return self.root / f"{digest}.npz"

    def has(self, digest: str) -> bool:
        return self.path(digest).exists()

    def load(self, digest: str) -> dict[str, np.ndarray]:
        return read_npz(self.path(digest))

    def save(self, digest: str, arrays: dict[str, np.ndarray]) -> Path:
        return write_npz(self.path(digest), arrays)

    def set_aside(self, digest: str) -> Path:
        """Rename a corrupt chunk file to ``<digest>.npz.corrupt`` (kept for inspection, never
        read again); returns the new path."""
        return set_aside(self.path(digest), ".corrupt")

    def clean(self) -> int:
        """Remove leftover temporary files; returns how many."""
        return remove_temporaries(self.root)
