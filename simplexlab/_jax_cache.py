"""The folder behind JAX's persistent compilation cache: programs written whole, no lock, no scan.

JAX's bounded file cache (``jax._src.lru_cache.LRUCache`` with a size bound) takes a file lock
around every read and write, and at every write lists the whole folder and reads one time stamp
file per entry to decide what to evict. That scan is what a write costs: 40 ms at 1,400 entries
on the 2-core CPU. The quick atlas stores about 1,400 programs, and its two processes listed
the folder in turn: 181–183 s with that cache, 169–172 s with this one. JAX's unbounded cache has
neither cost but writes each entry in place, where a second process reading it at that moment
gets a truncated program.

:class:`FolderCache` keeps what the lock was for and drops the scan: a program is written to a
temporary file in the folder and renamed onto its name
(:func:`simplexlab._results.atomic_write_bytes`), so a reader finds the whole program or none,
without a lock. A read touches the entry
(its modification time), and the folder's size is bounded once, when the cache is turned on
(:func:`prune`: the least recently used entries beyond the bound go), not at every write.
Entries are named as JAX's own file cache names them (``<key>-cache``), so a folder filled by
either reads in the other.
"""

from __future__ import annotations

import os
from pathlib import Path

from jax._src.compilation_cache_interface import CacheInterface

from ._results import atomic_write_bytes, remove_temporaries

__all__ = ["FolderCache", "install", "prune", "supported"]

#: the file name of an entry: JAX's own file cache's (``jax._src.lru_cache._CACHE_SUFFIX``)
SUFFIX = "-cache"
#: the time stamp files of JAX's bounded cache, removed with their entries
ATIME_SUFFIX = "-atime"


class FolderCache(CacheInterface):
    """JAX's ``CacheInterface`` on a folder: ``get`` reads ``<key>-cache`` (and touches it),
    ``put`` writes it whole (:func:`~simplexlab._results.atomic_write_bytes`)."""

    def __init__(self, path):
        self._path = Path(path)
        self._path.mkdir(mode=0o700, parents=True, exist_ok=True)

    def get(self, key: str) -> bytes | None:
        if not key:
            raise ValueError("key cannot be empty")
        path = self._path / f"{key}{SUFFIX}"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            os.utime(path)  # recently used: pruned last
        except OSError:
            pass
        return data

    def put(self, key: str, value: bytes) -> None:
        if not key:
            raise ValueError("key cannot be empty")
        path = self._path / f"{key}{SUFFIX}"
        if not path.exists():
            atomic_write_bytes(path, value)


def prune(folder: Path, max_bytes: int) -> int:
    """Remove the least recently used entries of ``folder`` (oldest modification time first)
    until the rest holds at most ``max_bytes``, with the time stamp files of JAX's bounded
    cache for them, and the temporary files a dead writer left
    (:func:`simplexlab._results.remove_temporaries`). Returns the number of entries removed."""
    remove_temporaries(folder)
    entries = []
    total = 0
    for entry in os.scandir(folder):
        name = entry.name
        try:
            st = entry.stat()
        except OSError:
            continue
        if name.endswith(SUFFIX):
            entries.append((st.st_mtime, st.st_size, name))
            total += st.st_size
    removed = 0
    for _mtime, size, name in sorted(entries):
        if total <= max_bytes:
            break
        _unlink(folder / name)
        _unlink(folder / (name[: -len(SUFFIX)] + ATIME_SUFFIX))
        total -= size
        removed += 1
    return removed


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def supported() -> bool:
    """Whether :func:`install` can take effect: this JAX builds its file cache the way this was
    written against (``compilation_cache.get_file_cache``) and has not built it yet."""
    from jax._src import compilation_cache as cc

    return callable(getattr(cc, "get_file_cache", None)) and getattr(cc, "_cache", None) is None


def install() -> bool:
    """Make JAX build its persistent cache on :class:`FolderCache` (call it before the first
    compilation). ``False`` where :func:`supported` is not: JAX's own cache is used then."""
    from jax._src import compilation_cache as cc

    if not supported():
        return False
    original = cc.get_file_cache
    if getattr(original, "_simplexlab", False):
        return True

    def get_file_cache(path, *args, **kwargs):
        check = getattr(getattr(cc, "config", None), "compilation_cache_check_contents", None)
        if args or kwargs or (check is not None and check.value):
            # called otherwise than written against, or JAX's verifying wrapper: its own cache
            return original(path, *args, **kwargs)
        return FolderCache(path), path

    get_file_cache._simplexlab = True
    cc.get_file_cache = get_file_cache
    return True
