"""Result files that say how they were made, written atomically, and the readers of the files
the package reads (the one place below ``lab`` that touches files).

Every file is written to a temporary sibling and then renamed (``os.replace``), so a reader never
sees a half-written result and an interrupted run leaves the previous file intact. The readers
(:func:`read_json`, :func:`read_toml`, :func:`read_rollouts`) raise ``ValueError`` naming the file
when its text does not parse or it is a folder (``OSError`` as usual when it cannot be read);
:func:`read_rollouts` names the line and the column of a bad entry too.

Every file is written with the user's normal permissions (``0o666`` less the process umask, as
``open`` would give), whichever writer made it. Names that become files (a sweep's ``name``, an
experiment's figure stem) pass :func:`check_file_name` -- a file name, never a path -- and
output folders pass :func:`writable_folder` (created and checked writable before any compute).

Temporary files are named ``.<name>.<pid>.<random>.tmp`` (``<pid>``: the writing process), so
that :func:`remove_temporaries` can tell the leftovers of a killed writer from the files that a
live process -- another sweep writing to the same folder -- is writing right now.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["atomic_write_bytes", "atomic_write_json", "check_file_name", "file_mode",
           "provenance", "read_json", "read_npz", "read_rollouts", "read_toml",
           "remove_temporaries", "set_aside", "to_jsonable", "user_secret", "writable_file",
           "writable_folder", "write_dataset", "write_npz"]


def check_file_name(name: Any, what: str = "name") -> str:
    """``name`` if it is a plain file name (a non-empty string with no folder separator, not
    ``.``/``..``, not starting with ``.`` -- a hidden file --, no control character such as a
    newline or a tab, no leading or trailing blank); ``ValueError`` naming ``what`` and the
    value otherwise, so that a name can never put a file outside its folder nor write a name
    that a listing or a shell shows as something else."""
    seps = {"/", "\\", os.sep, os.altsep} - {None}
    if (not isinstance(name, str) or not name.strip() or name.startswith(".")
            or any(c in name for c in seps) or name != name.strip()
            or any(not c.isprintable() for c in name)):
        raise ValueError(f"{what} must be a file name (not empty, no folder separator, not "
                         f"starting with '.', no control character or surrounding blank); "
                         f"got {name!r}")
    return name


def _folder_problem(folder: Path) -> str | None:
    """Why files cannot be written in ``folder`` (created if missing), or ``None``."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        return "it is a file, not a folder"
    except OSError as err:
        return f"cannot create it ({err.strerror or err})"
    if not folder.is_dir():
        return "it is not a folder"
    try:  # the only sure test of writability (access() ignores read-only mounts, ACLs)
        fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix("write-test"), suffix=".tmp",
                                   dir=folder)
        os.close(fd)
        os.unlink(tmp)
    except OSError as err:
        return f"cannot write in it ({err.strerror or err})"
    return None


def writable_folder(folder: str | os.PathLike, what: str = "out") -> Path:
    """Create ``folder`` if missing and check that files can be written in it, before any
    compute; ``ValueError`` naming ``what``, the folder and why not."""
    folder = Path(folder)
    problem = _folder_problem(folder)
    if problem:
        raise ValueError(f"{what}: the output folder {str(folder)!r} cannot be used: {problem}")
    return folder


def writable_file(path: str | os.PathLike, what: str = "out") -> Path:
    """Check, before any compute, that ``path`` can be written (atomically: its folder is
    created if missing and must be writable; ``path`` must not be a folder); ``ValueError``
    naming ``what``, the path and why not."""
    path = Path(path)
    problem = ("it is a folder, not a file" if path.is_dir() else
               "it names no file" if not path.name or path.name in (".", "..") else
               _folder_problem(path.parent))
    if problem:
        raise ValueError(f"{what}: cannot write {str(path)!r}: {problem}")
    return path


def user_secret(path: str | os.PathLike, what: str, nbytes: int = 32) -> bytes:
    """The per-user secret kept in ``path``: created on first use (``nbytes`` random bytes, the
    file readable and writable by its user only, written whole before it appears under its
    name, so that two processes creating it at once agree on one secret), read afterwards. A
    file that another user could read or write, that is not this user's, that is not a regular
    file or that holds fewer than 16 bytes is refused with a ``ValueError`` naming ``what`` (the
    setting that names the file) and the file."""
    path = Path(path)
    if not path.exists():
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(path.name), suffix=".tmp",
                                       dir=path.parent)  # mode 0600
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(secrets.token_bytes(nbytes))
                    f.flush()
                    os.fsync(f.fileno())
                try:
                    os.link(tmp, path)  # never replaces a secret another process made first
                except FileExistsError:
                    pass
            finally:
                os.unlink(tmp)
        except OSError as err:
            raise ValueError(f"{what}: cannot create the secret file {str(path)!r} "
                             f"({err.strerror or err}); set {what} to a file you can "
                             "write") from None
    try:
        st = path.lstat()
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    except OSError as err:
        raise ValueError(f"{what}: cannot read the secret file {str(path)!r} "
                         f"({err.strerror or err})") from None
    problem = (
        "it is not a regular file" if data is None else
        f"it is owned by user id {st.st_uid}, not by this user"
        if hasattr(os, "getuid") and st.st_uid != os.getuid() else
        f"other users can read or write it (mode {st.st_mode & 0o777:04o}; chmod 600 it)"
        if st.st_mode & 0o077 else
        f"it holds {len(data)} bytes, fewer than 16" if len(data) < 16 else None)
    if problem:
        raise ValueError(f"{what}: the secret file {str(path)!r} is refused: {problem}")
    return data


def _umask() -> int:
    """The process umask, read without changing it where the system allows (Linux
    ``/proc/self/status``); elsewhere set and restored at once."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The permissions of a new file: ``0o666`` less the umask (what ``open`` gives)."""
    return 0o666 & ~_umask()


def _disk_full(path: Path, err: BaseException) -> OSError | None:
    """An ``OSError`` saying in words that the disk is full when ``err`` is a write that failed
    for want of space (``ENOSPC``, or a library's own error -- netCDF's "HDF error" -- while the
    folder's file system has less than 1 MiB free); ``None`` otherwise."""
    import errno

    if not isinstance(err, RuntimeError | OSError):  # an interrupt, a bug: not the disk
        return None
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        free = None
    full = (isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)) or (
        free is not None and free < 2**20)
    if not full:
        return None
    free = "free space unknown" if free is None else f"{free:,} bytes free"
    return OSError(errno.ENOSPC, f"the disk is full: could not write {path} ({free}); free "
                                 "some space or choose another output folder")


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder (the user's
    usual permissions), flushed to disk, then renamed over ``path``; parent folders are
    created. A reader sees the old file or the new one, never a part. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(path.name), suffix=".tmp",
                               dir=path.parent)
    try:
        # mkstemp creates 0o600: give the file the user's normal permissions, like open()
        os.chmod(tmp, file_mode())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        if os.path.exists(tmp):
            os.unlink(tmp)
        full = _disk_full(path, err)
        if full is not None:
            raise full from None
        raise
    return path


def set_aside(path: str | os.PathLike, suffix: str = ".corrupt") -> Path:
    """Rename ``path`` to ``<path><suffix>`` (replacing an earlier one), so that it is kept for
    inspection but never read again; returns the new path."""
    path = Path(path)
    aside = path.with_name(path.name + suffix)
    os.replace(path, aside)
    return aside


#: a temporary of this module: ``.<name>.<pid>.<random>.tmp`` (``<random>``: mkstemp's letters,
#: digits and ``_``, or :func:`write_dataset`'s hex), or ``.<name>.<pid>.tmp`` (what
#: :func:`write_dataset` wrote before the random part)
_TEMPORARY = (re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]+)\.[a-z0-9_]+\.tmp"),
              re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]+)\.tmp"))
#: the temporaries of the writers from before the PID was in the name: ``.<name>.<random>.tmp``
_OLD_TEMPORARY = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]+\.tmp")
#: how old (seconds) an old-format temporary must be to be removed: no write takes this long
OLD_TEMPORARY_AGE = 24 * 3600.0


def _temporary_prefix(name: str) -> str:
    """``.<name>.<pid>.``: the start of the name of a temporary that this process writes for
    ``name`` (``mkstemp`` adds the random part and ``.tmp``)."""
    return f".{name}.{os.getpid()}."


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a process on this machine (``os.kill(pid, 0)``: no such process ->
    ``False``; a process of another user -> ``True``). PID 0 and out-of-range numbers are never a
    writer: ``False``."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, OSError):  # not a PID this system can have
        return False
    return True


def _temporary_owner(file_name: str) -> tuple[str, int | None] | None:
    """``(name, pid)`` of a temporary's file name (``pid`` ``None`` for the old format without
    one), or ``None`` when ``file_name`` is no temporary of this module."""
    for pattern in _TEMPORARY:
        m = pattern.fullmatch(file_name)
        if m:
            return m["name"], int(m["pid"])
    m = _OLD_TEMPORARY.fullmatch(file_name)
    return (m["name"], None) if m else None


def remove_temporaries(folder: str | os.PathLike, name: str | None = None) -> int:
    """Remove the temporary files (or, for zarr, folders) that interrupted atomic writes left in
    ``folder`` -- only those of ``name`` (e.g. ``"sweep.nc"``) when it is given; returns how many.

    Only a dead writer's temporaries are removed, never one that a live process is writing:

    * ``.<name>.<pid>.<random>.tmp`` and ``.<name>.<pid>.tmp`` (every writer of this module puts
      its PID in the name): removed when no process ``<pid>`` runs on this machine. A live PID
      keeps its file (if the PID was reused, the file is removed by a later call).
    * ``.<name>.<random>.tmp`` (the writers from before the PID was in the name): removed only
      when older than :data:`OLD_TEMPORARY_AGE` (one day) -- no write takes that long, so it
      belongs to no live writer.
    * every other file is left alone.

    On Windows (no ``os.kill(pid, 0)`` test) every temporary follows the one-day rule.

    The PID test is of this machine only: a folder shared by writers on several hosts can lose
    a live temporary of another host's process, so such writers should use separate folders."""
    import time

    folder = Path(folder)
    n = 0
    if not folder.is_dir():
        return 0
    now = time.time()
    for p in folder.iterdir():
        owner = _temporary_owner(p.name)
        if owner is None or (name is not None and owner[0] != name):
            continue
        # Windows' os.kill(pid, 0) would end the process: there, every temporary is aged out
        pid = owner[1] if os.name != "nt" else None
        try:
            if pid is not None:
                if _pid_alive(pid):
                    continue
            elif now - p.lstat().st_mtime < OLD_TEMPORARY_AGE:
                continue
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
        except FileNotFoundError:  # removed meanwhile (by its writer, or another cleaner)
            continue
        n += 1
    return n


def to_jsonable(obj: Any) -> Any:
    """Convert NumPy/JAX arrays and scalars (recursively) to plain JSON types."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "__array__") and not isinstance(obj, str | bytes):
        arr = np.asarray(obj)
        if arr.dtype.kind == "b":
            return arr.tolist()
        if arr.dtype.kind in "iu":
            return arr.tolist()
        if arr.dtype.kind == "f":
            return np.where(np.isfinite(arr), arr, np.nan).tolist() if arr.ndim else float(arr)
        return arr.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def atomic_write_json(path: str | os.PathLike, payload: Any) -> Path:
    """Write ``payload`` as indented JSON (through :func:`to_jsonable`: NumPy and JAX arrays
    and scalars, paths) atomically with :func:`atomic_write_bytes`. Returns the path."""
    text = json.dumps(to_jsonable(payload), indent=2, sort_keys=False, allow_nan=True)
    return atomic_write_bytes(path, (text + "\n").encode())


def write_npz(path: str | os.PathLike, arrays: dict[str, np.ndarray]) -> Path:
    """Write ``arrays`` as one ``.npz`` file, atomically."""
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return atomic_write_bytes(path, buf.getvalue())


def read_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file, loaded."""
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def write_dataset(ds, path: str | os.PathLike) -> Path:
    """Write an :class:`xarray.Dataset` atomically: netCDF, or zarr when ``path`` ends in
    ``.zarr``, to a temporary sibling ``.<name>.<pid>.<random>.tmp`` that then replaces ``path``
    (a kill leaves the temporary: :func:`remove_temporaries` of ``path.name`` removes it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{_temporary_prefix(path.name)}{secrets.token_hex(4)}.tmp")
    try:
        if path.suffix == ".zarr":
            ds.to_zarr(tmp, mode="w")
            if path.exists():
                shutil.rmtree(path)
        else:
            ds.to_netcdf(tmp)
        os.replace(tmp, path)
    except BaseException as err:
        if tmp.exists():
            shutil.rmtree(tmp) if tmp.is_dir() else tmp.unlink()
        full = _disk_full(path, err)
        if full is not None:
            raise full from None
        raise
    return path


def _read_text(path: str | os.PathLike, kind: str, loads, errors) -> Any:
    """Parse the text file ``path`` with ``loads``; ``ValueError`` naming the file when it is a
    folder, not text, or ``loads`` raises one of ``errors`` (``OSError`` as usual when it cannot
    be read)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: is a folder, not a {kind} file")
    try:
        return loads(path.read_text())
    except errors as err:
        raise ValueError(f"{path}: not a {kind} file ({err})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a {kind} text file") from None


def read_json(path: str | os.PathLike) -> Any:
    """The JSON value of the text file ``path`` (:func:`_read_text`'s errors)."""
    return _read_text(path, "JSON", json.loads, json.JSONDecodeError)


def read_toml(path: str | os.PathLike) -> dict[str, Any]:
    """The tables of the TOML file ``path`` (:func:`_read_text`'s errors)."""
    return _read_text(path, "TOML", tomllib.loads, tomllib.TOMLDecodeError)


#: the columns of a rollouts file (:func:`read_rollouts`): each one's accepted names, first the
#: canonical one
ROLLOUT_COLUMNS = {"prompt_id": ("prompt_id", "prompt"), "reward": ("reward", "score"),
                   "mode_id": ("mode_id", "mode"), "completion": ("completion", "response")}


def _rollout_column(names, column: str):
    """The name ``names`` (a record's keys or a header) uses for ``column``, or ``None``."""
    return next((n for n in ROLLOUT_COLUMNS[column] if n in names), None)


def _rollout_reward(value, where: str) -> float:
    """A reward: a finite number in [0, 1] (``ValueError`` naming ``where`` otherwise)."""
    shown = value
    if isinstance(value, str):
        shown = value.strip()
        try:
            value = float(shown)
        except ValueError:
            raise ValueError(f"{where}: {shown!r} is not a number") from None
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: {value!r} is not a number")
    r = float(value)
    if not np.isfinite(r):
        raise ValueError(f"{where}: {shown!r} is not finite")
    if not 0.0 <= r <= 1.0:
        raise ValueError(f"{where}: {r!r} is outside [0, 1] (a reward is a score in "
                         "[0, 1]: 1 correct, 0 wrong)")
    return r


def _rollout_id(value, where: str) -> str:
    """A prompt or mode id: a non-empty string or an integer, as a string."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{where}: {value!r} is not an id (a string or an integer)")
    text = str(value).strip()
    if not text:
        raise ValueError(f"{where}: the id is empty")
    return text


def _rollout_records(path: Path, text: str):
    """``(line, record)`` of every rollout of ``text``: JSON lines (a ``.jsonl`` / ``.json``
    file, or text whose first non-blank character is ``{``) or CSV with a header row."""
    import csv
    import io

    first = text.lstrip()[:1]
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson") or (
            path.suffix.lower() != ".csv" and first == "{"):
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}, line {n}: not a JSON object ({err.msg})") from None
            if not isinstance(rec, dict):
                raise ValueError(f"{path}, line {n}: not a JSON object (got "
                                 f"{type(rec).__name__}); a rollouts file holds one object "
                                 "per line")
            yield n, rec
        return
    rows = csv.reader(io.StringIO(text))
    header = None
    for n, row in enumerate(rows, 1):
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [cell.strip() for cell in row]
            for column in ("prompt_id", "reward"):
                if _rollout_column(header, column) is None:
                    raise ValueError(
                        f"{path}, line {n} (the header): no column {column!r} (columns: "
                        f"{header}); a rollouts file has the columns prompt_id, reward and, "
                        "optionally, mode_id")
            continue
        if len(row) != len(header):
            raise ValueError(f"{path}, line {n}: {len(row)} fields, the header has "
                             f"{len(header)} ({header})")
        yield n, {k: v for k, v in zip(header, row, strict=True)
                  if k != "" and not (k in ROLLOUT_COLUMNS["mode_id"] + ROLLOUT_COLUMNS[
                      "completion"] and not v.strip())}


def read_rollouts(path: str | os.PathLike) -> dict[str, Any]:
    """The rollouts of a base model, sampled once, from a JSON-lines or CSV file: one rollout a
    line (a JSON object, or a CSV row under a header) with the columns ``prompt_id`` (or
    ``prompt``: a string or an integer), ``reward`` (or ``score``: a finite number in
    ``[0, 1]``) and, optionally, ``mode_id`` (or ``mode``: which answer or strategy the rollout
    took) and ``completion`` (or ``response``: the rollout's text, from which the modes can be
    discovered, ``simplexlab.llm.discover_modes``), each given for every rollout or for none.

    Returns ``{"prompt_id": [str], "reward": float array, "mode_id": [str] or None,
    "completion": [str] or None, "line": int array}`` (the file's line of each rollout). Refused
    with ``ValueError`` naming the file, the line and the column: a missing column, a reward
    that is not a number, not finite or outside ``[0, 1]``, an empty id, a mode or a completion
    given on some lines only, a completion that is not a string; an empty file."""
    path = Path(path)
    text = _read_text(path, "rollouts", lambda t: t, ())
    prompts, rewards, modes, texts, lines = [], [], [], [], []
    seen = {}  # the optional columns: the first line with it and the first line without it
    for n, rec in _rollout_records(path, text):
        where = f"{path}, line {n}, column"
        cols = {c: _rollout_column(rec, c) for c in ROLLOUT_COLUMNS}
        for column in ("prompt_id", "reward"):
            if cols[column] is None:
                raise ValueError(f"{where} {column!r}: missing (the line has {sorted(rec)}); "
                                 "a rollouts file has the columns prompt_id, reward and, "
                                 "optionally, mode_id")
        prompts.append(_rollout_id(rec[cols["prompt_id"]], f"{where} {cols['prompt_id']!r}"))
        rewards.append(_rollout_reward(rec[cols["reward"]], f"{where} {cols['reward']!r}"))
        mode, text = cols["mode_id"], cols["completion"]
        if mode is not None and rec[mode] is not None:
            modes.append(_rollout_id(rec[mode], f"{where} {mode!r}"))
        if text is not None and rec[text] is not None:
            if not isinstance(rec[text], str):
                raise ValueError(f"{where} {text!r}: {rec[text]!r} is not a completion (a "
                                 "string)")
            texts.append(rec[text])
        for column, what in (("mode_id", "a mode"), ("completion", "a completion")):
            given = cols[column] is not None and rec[cols[column]] is not None
            seen.setdefault((column, given), n)
            other = seen.get((column, not given))
            if other is not None:
                raise ValueError(f"{path}, line {n}, column {column!r}: line {other} "
                                 + (f"gives no {what[2:]} and this one does" if given else
                                    f"gives {what} and this one does not")
                                 + f"; give {what} for every rollout or for none")
        lines.append(n)
    if not prompts:
        raise ValueError(f"{path}: no rollouts (the file holds no rollout lines)")
    return {"prompt_id": prompts, "reward": np.asarray(rewards, float),
            "mode_id": modes if ("mode_id", True) in seen else None,
            "completion": texts if ("completion", True) in seen else None,
            "line": np.asarray(lines, int)}


def _git_revision() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=here, capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        # the result files under figures/ are outputs, not code: writing them during a
        # `reproduce --full` must not mark the experiments after the first as -dirty
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ":(top)",
             ":(top,exclude)figures"],
            cwd=here, capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def provenance() -> dict[str, Any]:
    """Version, git revision, platform and time: what every result file records."""
    import jax

    from ._version import __version__

    return {
        "simplexlab_version": __version__,
        "git_revision": _git_revision(),
        "jax_version": jax.__version__,
        "jax_backend": jax.default_backend(),
        "x64": bool(jax.config.read("jax_enable_x64")),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "created_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else None,
    }
