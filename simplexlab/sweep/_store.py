"""The chunk store: every finished chunk of a sweep as one ``.npz`` file, written atomically.

A chunk's file name is the SHA-256 of everything that determines its numbers (target and its code
version, every static and array parameter value of its runs, the PRNG key data of each run, the
chunk's layout), so a change of any of them -- a different ``--seed``, mode, parameter or simulator
version -- is a different file and is recomputed, never confused with an old result.

Every chunk file also carries, as two more ``.npz`` entries (one-element unicode arrays, so no
pickling), its own digest (:data:`DIGEST_ENTRY`) and the signature of its digest and arrays
(:data:`HASH_ENTRY`, :func:`chunk_signature`: an HMAC-SHA256 of the digest and
:func:`arrays_sha256`, keyed with a per-user secret kept outside every store,
:func:`simplexlab._env.store_key_file`). :meth:`ChunkStore.check` compares them with the file's
name and its arrays, so that a chunk copied over another chunk's file, or a chunk whose numbers
were edited -- even with its hash entry recomputed, which takes the secret --, is found out
instead of silently giving wrong results. A chunk written under another user's secret (a store
copied from elsewhere) does not check either: it is set aside and computed again.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._env import STORE_KEY_VAR, store_key_file
from .._results import read_npz, remove_temporaries, set_aside, user_secret, write_npz

__all__ = ["ChunkStore", "arrays_sha256", "chunk_digest", "chunk_signature"]

#: part of every digest: a change of the file layout makes the old chunks unknown names (they
#: are recomputed, not rejected). "2": the digest and hash entries; "3": the hash entry is a
#: keyed signature.
STORE_FORMAT = "3"
#: the ``.npz`` entry holding the chunk's own digest
DIGEST_ENTRY = "__chunk_digest__"
#: the ``.npz`` entry holding :func:`chunk_signature` of the chunk's digest and arrays
HASH_ENTRY = "__chunk_hmac__"


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


def arrays_sha256(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 of ``arrays``: every array's name, dtype (with byte order), shape and bytes, in
    sorted name order -- what a chunk's numbers are, independent of how the ``.npz`` was
    zipped."""
    h = hashlib.sha256()
    for k in sorted(arrays):
        v = np.ascontiguousarray(arrays[k])
        h.update(json.dumps([k, v.dtype.str, list(v.shape)]).encode() + b"\n")
        h.update(v.tobytes())
    return h.hexdigest()


def chunk_signature(digest: str, arrays: dict[str, np.ndarray], key: bytes) -> str:
    """HMAC-SHA256, keyed with ``key``, of the chunk's ``digest`` and :func:`arrays_sha256` of
    its ``arrays``: only the holder of the key can make it."""
    message = f"{digest}\n{arrays_sha256(arrays)}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _entry(v: Any) -> str | None:
    """The string of a one-element unicode entry, or ``None`` when it is not one."""
    v = np.asarray(v)
    return str(v.reshape(-1)[0]) if v.dtype.kind == "U" and v.size == 1 else None


class ChunkStore:
    """``<root>/<digest>.npz`` files, each with its digest and the hash of its arrays
    (:meth:`save`, :meth:`check`); :meth:`clean` removes the temporary files left by a killed
    run (the atomic writer's ``.<name>.<pid>.<random>.tmp`` of a dead process), so an
    interrupted sweep leaves no half-written file, while a live sweep writing to the same folder
    keeps its own. ``key``: the secret of the signatures (default: the user's,
    :func:`simplexlab._env.store_key_file`, read or created on first use)."""

    def __init__(self, root: str | os.PathLike, key: bytes | None = None):
        self.root = Path(root)
        self._key = key

    @property
    def key(self) -> bytes:
        """The secret that keys the chunks' signatures."""
        if self._key is None:
            self._key = self.user_key()
        return self._key

    @staticmethod
    def user_key() -> bytes:
        """The user's secret (:func:`simplexlab._env.store_key_file`), read or created now;
        ``ValueError`` naming ``SIMPLEXLAB_STORE_KEY`` when it cannot be used."""
        return user_secret(store_key_file(), STORE_KEY_VAR)

    def path(self, digest: str) -> Path:
        return self.root / f"{digest}.npz"

    def has(self, digest: str) -> bool:
        return self.path(digest).exists()

    def load(self, digest: str) -> dict[str, np.ndarray]:
        """Every entry of the chunk file, as stored (the digest and hash entries included: see
        :meth:`check`)."""
        return read_npz(self.path(digest))

    def save(self, digest: str, arrays: dict[str, np.ndarray]) -> Path:
        """Write ``arrays`` atomically as ``<digest>.npz``, with the digest and the signature
        (:func:`chunk_signature`) as two more entries; ``ValueError`` if an array already has one
        of their names."""
        clash = sorted({DIGEST_ENTRY, HASH_ENTRY} & set(arrays))
        if clash:
            raise ValueError(f"chunk {digest}: output name(s) {clash} are reserved by the store")
        # one-element arrays, not 0-d: tools that slice every array of a chunk keep working
        entries = {DIGEST_ENTRY: np.array([digest]),
                   HASH_ENTRY: np.array([chunk_signature(digest, arrays, self.key)])}
        return write_npz(self.path(digest), {**arrays, **entries})

    def check(self, digest: str, stored: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray],
                                                                         str | None]:
        """``(arrays, problem)`` of the ``stored`` entries of chunk file ``digest``: the arrays
        without the digest and hash entries, and why they cannot be trusted (no digest or hash
        entries, the stored digest names another chunk, the arrays do not match their signed
        hash: edited, or signed with another secret) or ``None``."""
        arrays = {k: v for k, v in stored.items() if k not in (DIGEST_ENTRY, HASH_ENTRY)}
        own, sha = _entry(stored.get(DIGEST_ENTRY)), _entry(stored.get(HASH_ENTRY))
        if own is None or sha is None:
            return arrays, "it has no digest and hash entries"
        if own != digest:
            return arrays, f"its digest names another chunk, {own[:16]}..."
        if not hmac.compare_digest(sha, chunk_signature(digest, arrays, self.key)):
            return arrays, ("its arrays do not match their hash (the signature keyed with "
                            f"this user's secret, {STORE_KEY_VAR}: edited, or written by "
                            "someone else)")
        return arrays, None

    def set_aside(self, digest: str) -> Path:
        """Rename a corrupt chunk file to ``<digest>.npz.corrupt`` (kept for inspection, never
        read again); returns the new path."""
        return set_aside(self.path(digest), ".corrupt")

    def clean(self) -> int:
        """Remove the temporary files of dead writers (:func:`remove_temporaries`); returns how
        many."""
        return remove_temporaries(self.root)
