r"""The sweep engine: a grid over any parameters and seeds of any target, sharded, chunked,
resumable, returned and saved as an xarray ``Dataset``.

Layout of the work. The grid's *static* axes (one compilation per value) are walked one
combination at a time; within a combination, every (array-parameter point, seed) pair is one
*run*, and the runs are cut into *chunks*. A chunk is one call of one compiled program:
``jax.shard_map`` over a one-axis :class:`jax.sharding.Mesh` of every device of every process
(``jax.devices()``), each device running its slice with ``lax.map`` (CPU) or ``vmap``
(accelerators). On CPU, ``XLA_FLAGS=--xla_force_host_platform_device_count=<cores>`` makes one
device per core. Across processes and hosts, call :func:`jax.distributed.initialize` first: the
mesh then spans every process, each computes its devices' runs, and the results are gathered with
CPU (gloo) or accelerator collectives; process 0 stores chunks and writes the Dataset.

Each finished chunk is written atomically to ``<out>/<name>.chunks/<digest>.npz``; the digest
covers everything that determines the chunk (see :mod:`._store`), so an interrupted sweep
resumes where it stopped and a changed setting never reuses a stale chunk.

:func:`run` is three steps: ``_plan`` (:mod:`simplexlab.sweep._plan`: every name and value
checked, the grid cut into programs and chunks, before any compute), :func:`_execute` (chunk by
chunk: load from the store or compute, save, gather, report progress; a Ctrl-C waits for the
chunk in flight (:func:`simplexlab._interrupt.deferred`) and becomes :class:`SweepInterrupted`)
and :func:`_assemble` (the Dataset with its provenance), which ``run`` then writes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np

from .._env import progress_enabled, use_compilation_cache
from .._interrupt import check, deferred
from .._results import (
    check_file_name,
    provenance,
    remove_temporaries,
    writable_folder,
    write_dataset,
)
from ..sim.internal import MAX_STEPS
from ._plan import MAX_RESULT_BYTES, MAX_RUNS, _Plan, _plan
from ._store import ChunkStore, chunk_digest
from ._targets import Batch

__all__ = ["SweepInterrupted", "run"]


class SweepInterrupted(KeyboardInterrupt):
    """Raised (a ``KeyboardInterrupt``) when a sweep is interrupted: says what was saved and how
    to resume."""

    def __init__(self, saved: int, total: int, store: Path | None):
        self.saved, self.total, self.store = saved, total, store
        where = f"in {store}" if store is not None else "nowhere (no output folder was given)"
        super().__init__(f"sweep interrupted: {saved} of {total} chunks saved {where}")


def _progress_bar(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    enabled = enabled and progress_enabled()
    return tqdm(total=total, desc=desc, unit="chunk", disable=not enabled, dynamic_ncols=True,
                mininterval=0.5 if os.isatty(2) else 10.0)


def run(
    target,
    grid: Mapping[str, Any] | None = None,
    *,
    fixed: Mapping[str, Any] | None = None,
    seeds: int = 1,
    seed: int = 0,
    keys=None,
    out: str | os.PathLike | None = None,
    name: str = "sweep",
    format: str = "nc",
    memory_budget: int | str = "2GiB",
    chunk_size: int | None = None,
    batching: str = "auto",
    devices=None,
    resume: bool = True,
    progress: bool = True,
    max_runs: int = MAX_RUNS,
    max_steps: int = MAX_STEPS,
    max_result_bytes: int | str = MAX_RESULT_BYTES,
):
    r"""Run ``target`` over the cartesian product of ``grid`` and ``seeds`` seeds.

    Args:
        target: a simulator name (``"categorical"``), ``"meanfield"`` (the ODE ensemble), a
            simulator class of :mod:`simplexlab.sim` or a :class:`AbstractSweepTarget`.
        grid: ``{parameter: [values]}``, the swept axes in the order of the Dataset's dims.
            Static parameters (group size, optimizer, ...) compile once per value; array
            parameters (learning rate, focal γ, gain, ...) are batched in one program.
        fixed: ``{parameter: value}`` for parameters held fixed (defaults otherwise).
        seeds: number of seeds; run ``i`` of every grid point uses key ``keys[i]``, by default
            ``jax.random.split(jax.random.key(seed), seeds)`` (the same keys at every point:
            paired comparisons).
        seed: the root seed the ``seeds`` keys are split from.
        keys: explicit ``(seeds,)`` PRNG keys instead of ``seed``.
        out: folder for the result file ``<name>.<format>`` and the chunk store
            ``<name>.chunks/``; ``None`` keeps everything in memory. The folder is created and
            checked writable before any compute; ``<name>.chunks`` must not be a symbolic link.
            Temporaries of ``<name>.<format>`` left by a killed earlier run (their writer's
            process is gone) are removed.
        name: the result's file name (no folder separator, not empty, not starting with ``.``).
        format: netCDF ``"nc"`` or ``"zarr"``.
        memory_budget: bytes (or ``"2GB"``) the chunks may use; the chunk size is the largest
            that fits. A target whose runs share work in blocks (the mean-field ODE's
            ``block``) gets whole blocks per device: the share is rounded down to a whole number
            of blocks, at least one.
        chunk_size: runs per chunk instead of ``memory_budget`` (a multiple of the device
            count).
        batching: ``"auto"`` (on CPU the simulator adapter's ``cpu_batching``: ``lax.map`` for large
            per-run states, ``vmap`` for small ones; ``vmap`` elsewhere), ``"vmap"`` or ``"map"``.
        devices: ``None`` (every device of every process), a number of local devices, or a list.
        resume: reuse chunks already in the store (their digest says they are the same work).
            A stored chunk that cannot be read, does not hold this program's outputs, names
            another chunk or whose numbers do not match their hash is reported in one line,
            renamed ``<digest>.npz.corrupt`` and recomputed.
        progress: a progress bar over the chunks.
        max_runs: size guard, checked before any compute and before the seeds' keys are split:
            the number of runs (grid points × seeds; default at most 10^7, :data:`MAX_RUNS`).
        max_steps: size guard: a simulator's ``num_steps`` per run (default at most 10^8,
            :data:`simplexlab.sim.internal.MAX_STEPS`).
        max_result_bytes: size guard: the size of the result (every output of every run, in
            memory on process 0 and in the result file; default at most ``"8GiB"``,
            :data:`MAX_RESULT_BYTES`). Work beyond a guard raises ``ValueError`` stating the
            estimate and the limit; pass a larger limit to allow it.

    Returns an :class:`xarray.Dataset` with dims ``(*grid, "seed", ...)`` and the provenance in
    its attributes (on process 0; other processes of a multi-process run return ``None``).
    Every bad name or value raises ``ValueError`` before any compute starts; so does work that
    cannot finish (the size guards above): such a sweep used to end the interpreter inside XLA
    (``seeds = 10**12``) or with a bare ``MemoryError`` after minutes of planning.

    The compiled programs go to JAX's persistent compilation cache (``SIMPLEXLAB_JAX_CACHE``,
    see :func:`simplexlab._env.use_compilation_cache`; a process that set a cache folder of its
    own keeps it), so a second process running the same sweep compiles nothing.
    """
    t_start = time.perf_counter()
    use_compilation_cache()
    check_file_name(name, "name")  # <out>/<name>.<format>: never a path out of the folder
    plan = _plan(target, grid, fixed, seeds=seeds, seed=seed, keys=keys, format=format,
                 memory_budget=memory_budget, chunk_size=chunk_size, batching=batching,
                 devices=devices, max_runs=max_runs, max_steps=max_steps,
                 max_result_bytes=max_result_bytes)
    if out is not None and jax.process_index() == 0:
        writable_folder(out, "out")  # before any compute, not after the first chunk
        _chunk_folder(out, name)
        # a write of the result file killed in an earlier run left its temporary
        remove_temporaries(out, f"{name}.{format}")
    results, computed, loaded = _execute(plan, out=out, name=name, resume=resume,
                                         progress=progress)
    if jax.process_index() != 0:
        return None
    ds = _assemble(plan, results, name=name, computed=computed, loaded=loaded,
                   seconds=time.perf_counter() - t_start)
    if out is not None:
        write_dataset(ds, Path(out) / f"{name}.{format}")
    return ds


def _chunk_folder(out, name: str) -> Path:
    """``<out>/<name>.chunks``, checked before any compute: ``ValueError`` naming it and its
    target when it is a symbolic link or resolves outside ``out`` (the store writes and removes
    files there, which must stay inside the output folder)."""
    folder = Path(out) / f"{name}.chunks"
    if folder.is_symlink():
        raise ValueError(f"out: the chunk folder {str(folder)!r} is a symbolic link to "
                         f"{os.readlink(folder)!r}; the chunks are kept inside the output "
                         "folder: remove the link or choose another out or name")
    real, base = folder.resolve(), Path(out).resolve()
    if not real.is_relative_to(base):
        raise ValueError(f"out: the chunk folder {str(folder)!r} resolves to {str(real)!r}, "
                         f"outside the output folder {str(base)!r}")
    if folder.exists() and not (folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)):
        raise ValueError(f"out: the chunk folder {str(folder)!r} exists but is not a folder "
                         "this user can write (its permissions); fix them or choose another "
                         "out or name")
    return folder


# ---- execute: chunk by chunk, stored, resumed, gathered --------------------------------------

def _execute(plan: _Plan, *, out, name: str, resume: bool, progress: bool):
    """Compute (or load from the store) every chunk of ``plan``; returns ``(results,
    computed, loaded)``, ``results`` the ``{output: (*grid, seed, ...)}`` arrays on process 0
    (empty elsewhere). A ``KeyboardInterrupt`` becomes :class:`SweepInterrupted`."""
    from jax.sharding import Mesh

    mesh = Mesh(np.asarray(plan.devices), ("batch",))
    lead = jax.process_index() == 0
    store = None
    if out is not None:
        # the signatures' secret, read (or created) before any compute, by the process that
        # reads and writes the chunks
        store = ChunkStore(Path(out) / f"{name}.chunks", key=ChunkStore.user_key() if lead
                           else None)
        if lead:
            store.clean()
    describe = plan.target.describe()
    results: dict[str, np.ndarray] = {}
    computed = loaded = 0
    bar = _progress_bar(plan.total_chunks, f"sweep {name} ({plan.target.name}, "
                        f"{len(plan.devices)} devices)", progress and lead)
    try:
        for prog in plan.programs:
            fn = None
            for lo, hi, size in prog.chunks:
                # the tail of the last chunk repeats the program's last run: a partial block is
                # padded the same way whatever the chunking
                sel = np.arange(lo, hi)
                sel = np.concatenate([sel, np.full(size - sel.size, hi - 1)])
                kd = plan.key_data[prog.seeds_of[sel]]
                arr = {k: v[sel] for k, v in prog.arrays.items()}
                digest = chunk_digest({**describe, "static": prog.static, "arrays": arr,
                                       "key_data": kd, "batching": plan.batching})
                check()  # a Ctrl-C that arrived (and was swallowed) since the last chunk
                part = _load(store, digest, prog.batch, size,
                             results, plan.shape) if resume else None
                if part is not None:
                    loaded += 1
                else:
                    # Ctrl-C waits for the chunk (compiled, computed, saved): raised inside the
                    # program it would land in a host callback or under XLA's running threads
                    with deferred():
                        fn = fn or _program(prog.batch, mesh)
                        part = _compute(fn, mesh, kd, arr)
                        if prog.batch.check is not None:
                            part = prog.batch.check(part)
                        if store is not None and lead:
                            store.save(digest, part)
                        computed += 1
                if lead:
                    _scatter(results, part, prog.idx[lo:hi], plan.shape)
                bar.update(1)
    except KeyboardInterrupt:
        bar.close()
        raise SweepInterrupted(computed + loaded if store is not None else 0, plan.total_chunks,
                               store.root if store is not None else None) from None
    bar.close()
    return results, computed, loaded


def _load(store: ChunkStore | None, digest: str, batch: Batch, size: int, results: dict,
          shape: tuple):
    """The stored chunk ``digest`` (on process 0; ``{}`` on the others; without the store's
    digest and hash entries), or ``None`` if it has to be computed (every process agrees). A
    stored file that cannot be read, whose digest entry names another chunk (a chunk file copied
    over another), whose arrays do not match their hash (edited numbers), or that does not hold
    the ``size`` runs of ``batch``'s outputs, is reported in one line, moved aside
    (``<digest>.npz.corrupt``) and computed again."""
    lead = jax.process_index() == 0
    part = None
    if store is not None and lead and store.has(digest):
        path = store.path(digest)
        try:
            part, problem = store.check(digest, store.load(digest))
            if problem is None:
                problem = _chunk_problem(part, batch, size, results, shape)
        except Exception as err:  # a truncated or foreign file: BadZipFile, EOFError, ...
            problem = f"unreadable ({type(err).__name__}: {err})"
        if problem is not None:
            part = None
            aside = store.set_aside(digest)
            _say(f"sweep: stored chunk {path.name} is corrupt or foreign ({problem}); moved to "
                 f"{aside.name}, computing it again")
    have = part is not None
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        have = bool(multihost_utils.broadcast_one_to_all(np.asarray(have)))
    if not have:
        return None
    return part if lead else {}


def _chunk_problem(part: dict, batch: Batch, size: int, results: dict,
                   shape: tuple) -> str | None:
    """What is wrong with a loaded chunk ``part`` as the ``size`` runs of ``batch``'s outputs
    (names, dimensions, coordinate lengths, number dtype, the trailing shape of the outputs
    gathered so far), or ``None``."""
    if set(part) != set(batch.dims):
        return f"outputs {sorted(part)}, expected {sorted(batch.dims)}"
    for k, v in part.items():
        dims = batch.dims[k]
        if v.dtype.kind not in "biufc":
            return f"{k} has dtype {v.dtype}"
        if v.ndim != 1 + len(dims) or v.shape[0] != size:
            return f"{k} has shape {v.shape}, expected ({size}, <{', '.join(dims)}>)"
        for d, n in zip(dims, v.shape[1:], strict=True):
            if d in batch.coords and len(batch.coords[d]) != n:
                return f"{k} has {n} {d!r} entries, expected {len(batch.coords[d])}"
        if k in results and results[k].shape[len(shape):] != v.shape[1:]:
            return f"{k} has shape {v.shape[1:]} per run, expected {results[k].shape[len(shape):]}"
    return None


def _say(line: str) -> None:
    """One line on stderr, clear of the progress bar."""
    import sys

    from tqdm.auto import tqdm

    tqdm.write(line, file=sys.stderr)


def _compute(fn, mesh, kd: np.ndarray, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One chunk through the sharded program, gathered to every process as NumPy arrays."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    sharding = NamedSharding(mesh, P("batch"))

    def put(x):
        return jax.make_array_from_callback(x.shape, sharding, lambda i: x[i])

    with _quiet_callbacks():
        try:
            res = fn(put(kd), {k: put(v) for k, v in arrays.items()})
            if jax.process_count() > 1:
                from jax.experimental import multihost_utils

                res = multihost_utils.process_allgather(res, tiled=True)
            return {k: np.asarray(v) for k, v in res.items()}
        except jax.errors.JaxRuntimeError as err:
            what = _check_failure(err)
            if what is None:
                raise
            raise ValueError(f"sweep: a run-time check in the program failed: {what}") from None


#: the message of a failed ``eqx.error_if`` inside a program run by ``jax.jit``
_CHECK_FAILED = re.compile(r"EquinoxRuntimeError: (.+)")


def _check_failure(err: Exception) -> str | None:
    """The message of the run-time check (``eqx.error_if``) that ``err`` reports, or ``None``.
    The only such checks in a sweep's program are the ones its host checks cannot make: the
    output of a rule from user code (:func:`simplexlab.shaping.advantages`)."""
    found = _CHECK_FAILED.search(str(err))
    return found.group(1).strip() if found else None


@contextlib.contextmanager
def _quiet_callbacks():
    """JAX's callback logger off while a chunk runs: a failed run-time check is reported once,
    as the engine's one-line error, not also as a logged traceback."""
    log = logging.getLogger("jax._src.callback")
    before = log.disabled
    log.disabled = True
    try:
        yield
    finally:
        log.disabled = before


def _scatter(results: dict, part: dict, idx: list, shape: tuple) -> None:
    """Write the chunk's runs (the first ``len(idx)`` rows of ``part``; the rest is padding)
    at their Dataset indices ``idx``."""
    rows = tuple(np.asarray(c) for c in zip(*idx, strict=True))
    for k, v in part.items():
        if k not in results:
            results[k] = np.zeros(shape + v.shape[1:], v.dtype)
        results[k][rows] = v[: len(idx)]


# ---- assemble: the Dataset and its provenance --------------------------------------------------

def _assemble(plan: _Plan, results: dict, *, name: str, computed: int, loaded: int,
              seconds: float):
    """The :class:`xarray.Dataset` of the sweep: dims ``(*grid, "seed", ...)``, coordinates, the
    key data, and the provenance in its attributes."""
    import xarray as xr

    batch = plan.programs[0].batch
    grid = plan.grid
    dims0 = tuple(grid) + ("seed",)
    coords: dict[str, Any] = {a: np.asarray(grid[a]) for a in grid}
    coords["seed"] = np.arange(plan.key_data.shape[0])
    data_vars = {}
    for k, v in results.items():
        data_vars[k] = (dims0 + batch.dims[k], v)
        for d in batch.dims[k]:
            if d in batch.coords:
                coords[d] = batch.coords[d]
    data_vars["key_data"] = (("seed", "key_word"), plan.key_data)
    prov = provenance()
    attrs = {
        "title": f"simplexlab sweep {name!r} of {plan.target.name}",
        "target": plan.target.name,
        "target_version": plan.target.version,
        "grid": json.dumps({k: [_jsonable(x) for x in v] for k, v in grid.items()}),
        "fixed": json.dumps({k: _jsonable(v) for k, v in plan.fixed.items()}),
        "defaults": json.dumps({k: _jsonable(v) for k, v in plan.defaults.items()}),
        "seeds": int(plan.key_data.shape[0]),
        "seed": int(plan.seed),
        "keys": "explicit" if plan.explicit_keys else "split(key(seed), seeds)",
        "batching": plan.batching,
        "devices": len(plan.devices),
        "processes": int(jax.process_count()),
        "chunks": int(plan.total_chunks),
        "chunks_computed": int(computed),
        "chunks_loaded": int(loaded),
        "wall_seconds": round(seconds, 3),
        "simplexlab_version": prov["simplexlab_version"],
        "git_revision": str(prov["git_revision"]),
        "provenance": json.dumps(prov),
    }
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)


_PROGRAMS: dict = {}


def _program(batch, mesh):
    """The jitted ``shard_map`` of ``batch.fn`` over ``mesh`` (memoized)."""
    from jax.sharding import PartitionSpec as P

    key = ("program", id(batch), tuple(d.id for d in mesh.devices.flat))
    if key not in _PROGRAMS:
        spec = P("batch")
        _PROGRAMS[key] = (batch, jax.jit(jax.shard_map(batch.fn, mesh=mesh,
                                                       in_specs=(spec, spec), out_specs=spec,
                                                       check_vma=False),
                                         compiler_options=batch.compiler_options))
    return _PROGRAMS[key][1]


def _jsonable(v):
    if isinstance(v, np.generic):
        return v.item()
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if callable(v):
        return getattr(v, "__qualname__", repr(v))
    return repr(v)
