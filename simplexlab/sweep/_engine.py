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

:func:`run` is three steps: :func:`_plan` (every name and value checked, the grid cut into
programs and chunks, before any compute), :func:`_execute` (chunk by chunk: load from the store or
compute, save, gather, report progress; a Ctrl-C waits for the chunk in flight
(:func:`simplexlab._interrupt.deferred`) and becomes :class:`SweepInterrupted`) and
:func:`_assemble` (the Dataset with its provenance), which ``run`` then writes.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import json
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from .._checks import is_int
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
from ._store import ChunkStore, chunk_digest
from ._targets import BATCHINGS, Batch, SweepTarget, make_target

__all__ = ["MAX_RESULT_BYTES", "MAX_RUNS", "SweepInterrupted", "parse_bytes", "run"]


class SweepInterrupted(KeyboardInterrupt):
    """Raised (a ``KeyboardInterrupt``) when a sweep is interrupted: says what was saved and how
    to resume."""

    def __init__(self, saved: int, total: int, store: Path | None):
        self.saved, self.total, self.store = saved, total, store
        where = f"in {store}" if store is not None else "nowhere (no output folder was given)"
        super().__init__(f"sweep interrupted: {saved} of {total} chunks saved {where}")


_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9,
          "kib": 2 ** 10, "mib": 2 ** 20, "gib": 2 ** 30, "tb": 1e12, "tib": 2 ** 40}


#: a size: a decimal number (``2``, ``1.5``, ``.5``, ``2e9``) and an optional unit
_SIZE = r"\s*((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*"


def parse_bytes(v, name: str = "memory_budget") -> int:
    """``2e9``, ``"2GB"``, ``"1.5 GiB"``, ``"512MiB"`` -> bytes; ``name`` is the setting the
    errors name (a bool, ``True``, is no size)."""
    if isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool):
        b = float(v)
    else:
        m = re.fullmatch(_SIZE, str(v)) if isinstance(v, str) else None
        if not m or m.group(2).lower() not in _UNITS:
            raise ValueError(f"{name} must be a number of bytes or a size like '2GB' "
                             f"or '1.5 GiB'; got {v!r}")
        b = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not math.isfinite(b) or b <= 0:
        raise ValueError(f"{name} must be > 0; got {v!r}")
    return int(b)


#: the most runs (grid points x seeds) :func:`run` plans unless ``max_runs`` says otherwise:
#: planning keeps a few hundred bytes of bookkeeping per run before any compute, so 10^7 runs
#: are seconds and ~2 GB; 10^9 would be minutes and then a ``MemoryError``
MAX_RUNS = 10**7
#: the largest result (bytes of every output of every run, held in memory on process 0 and
#: written to the result file) :func:`run` computes unless ``max_result_bytes`` says otherwise
MAX_RESULT_BYTES = "8GiB"


def _as_count(v, name: str) -> int:
    """A limit: an integer >= 1 (not a bool), ``ValueError`` naming ``name`` otherwise."""
    if not is_int(v) or v < 1:
        raise ValueError(f"{name} must be an integer >= 1; got {v!r}")
    return int(v)


def _same_key(v):
    """What makes two grid values the same value: numbers by value (``2`` and ``2.0`` are one
    value), bools apart from numbers, anything else by its JSON text."""
    if isinstance(v, bool | np.bool_):
        return ("bool", bool(v))
    if isinstance(v, int | float | np.integer | np.floating):
        return ("number", float(v))
    try:
        return ("json", json.dumps(v, default=repr, sort_keys=True))
    except (TypeError, ValueError):
        return ("repr", repr(v))


def _as_values(name: str, values) -> list:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence | np.ndarray):
        values = [values]
    values = list(np.asarray(values).tolist()) if isinstance(values, np.ndarray) else list(values)
    if len(values) == 0:
        raise ValueError(f"grid axis {name!r} has no values (length 0)")
    seen: dict = {}
    for v in values:
        k = _same_key(v)
        if k in seen:  # two coordinates of one value: the Dataset could not tell them apart
            same = "" if repr(seen[k]) == repr(v) else f" ({seen[k]!r} and {v!r} are one value)"
            raise ValueError(f"grid axis {name!r} has repeated values: {v!r} appears twice{same}")
        seen[k] = v
    return values


def _kind(default) -> str | None:
    """What a parameter's values are, from its (non-bool) default: ``"an integer"``, ``"a
    number"`` or ``"a string"``; ``None`` for any other default. Shared by :func:`_check_bools`
    and the sweep files' type checks (``_config``)."""
    if is_int(default):
        return "an integer"
    if isinstance(default, float | np.floating):
        return "a number"
    if isinstance(default, str):
        return "a string"
    return None


def _check_bools(target: SweepTarget, grid: dict, fixed: dict) -> None:
    """Booleans are never numbers: a ``True`` / ``False`` for a parameter whose default is not a
    bool (``eta = [true]`` in a TOML file would otherwise be the learning rate 1.0) raises
    ``ValueError`` naming the parameter and the value."""
    defaults = {**target.static_params(), **target.array_params()}
    for where, values in (("grid", grid), ("fixed", fixed)):
        for name, vals in values.items():
            default = defaults.get(name)
            if isinstance(default, bool | np.bool_):
                continue
            for v in (vals if where == "grid" else [vals]):
                if isinstance(v, bool | np.bool_):
                    raise ValueError(f"{target.name}: {where} {name} = {v!r} is a bool, not "
                                     f"{_kind(default) or f'a valid {name}'} (default {default!r})")


def _devices(devices):
    if devices is None:
        return list(jax.devices())
    if is_int(devices):
        local = jax.local_devices()
        if not 1 <= devices <= len(local):
            raise ValueError(f"devices must be between 1 and the {len(local)} local devices; "
                             f"got {devices}")
        return local[:devices]
    devs = list(devices)
    if not devs:
        raise ValueError("devices must not be empty")
    return devs


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
            simulator class of :mod:`simplexlab.sim` or a :class:`SweepTarget`.
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


# ---- plan: every name and value checked, the grid cut into programs and chunks ---------------

@dataclasses.dataclass(frozen=True)
class _Program:
    """One compiled program: its static settings, its runs (their Dataset index, parameter
    values and seed), its batch program and its chunks ``(lo, hi, size)`` of runs."""

    static: dict[str, Any]
    idx: list[tuple[int, ...]]
    arrays: dict[str, np.ndarray]
    seeds_of: np.ndarray
    batch: Batch
    chunks: list[tuple[int, int, int]]


@dataclasses.dataclass(frozen=True)
class _Plan:
    """Everything :func:`run` computes before any compute starts."""

    target: SweepTarget
    grid: dict[str, list]
    fixed: dict[str, Any]
    defaults: dict[str, Any]
    key_data: np.ndarray
    seed: int
    explicit_keys: bool
    batching: str
    devices: list
    programs: list[_Program]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(v) for v in self.grid.values()) + (self.key_data.shape[0],)

    @property
    def total_chunks(self) -> int:
        return sum(len(p.chunks) for p in self.programs)


def _plan(target, grid, fixed, *, seeds, seed, keys, format, memory_budget, chunk_size,
          batching, devices, max_runs=MAX_RUNS, max_steps=MAX_STEPS,
          max_result_bytes=MAX_RESULT_BYTES) -> _Plan:
    """Check every name and value and the size of the work, then cut the grid into programs and
    their chunks; raises ``ValueError`` before any compute."""
    target = make_target(target) if not isinstance(target, SweepTarget) else target
    grid = {str(k): _as_values(str(k), v) for k, v in dict(grid or {}).items()}
    fixed = dict(fixed or {})
    _check_names(target, grid, fixed)
    _check_bools(target, grid, fixed)
    if batching not in BATCHINGS:
        raise ValueError(f"batching must be one of {BATCHINGS}; got {batching!r}")
    if format not in ("nc", "zarr"):
        raise ValueError(f"format must be 'nc' or 'zarr'; got {format!r}")
    if format == "zarr" and importlib.util.find_spec("zarr") is None:
        raise ValueError("format = 'zarr' needs the zarr package (python -m pip install zarr); "
                         "it is not installed: use format = 'nc' or install it")
    budget = parse_bytes(memory_budget)
    max_runs = _as_count(max_runs, "max_runs")
    max_steps = _as_count(max_steps, "max_steps")
    max_result = parse_bytes(max_result_bytes, "max_result_bytes")
    explicit_keys = keys is not None
    if keys is None:
        if not is_int(seeds) or seeds < 1:
            raise ValueError(f"seeds must be an integer >= 1; got {seeds!r}")
        if not is_int(seed):
            raise ValueError(f"seed must be an integer; got {seed!r}")
        # before the split: jax.random.split(key, 10**12) ends the process inside XLA
        _check_runs(grid, int(seeds), max_runs)
        keys = jax.random.split(jax.random.key(seed), seeds)
    key_data = np.asarray(jax.random.key_data(keys))
    if key_data.ndim < 2:
        raise ValueError(f"keys must be a (seeds,) array of PRNG keys; got shape {key_data.shape}")
    if explicit_keys:
        _check_runs(grid, key_data.shape[0], max_runs)
    devs = _devices(devices)
    ndev = len(devs)
    if chunk_size is not None and (not is_int(chunk_size) or chunk_size < 1
                                   or chunk_size % ndev):
        raise ValueError(f"chunk_size must be a positive multiple of the {ndev} devices the "
                         f"sweep is sharded over; got {chunk_size!r}")
    programs = []
    for static, idx, arrays, seeds_of in _groups(target, grid, fixed, key_data.shape[0]):
        steps = target.steps_per_run(static)
        if steps is not None and steps > max_steps:
            raise ValueError(f"{target.name}: num_steps = {steps:,} steps per run is more than "
                             f"max_steps = {max_steps:,}; pass max_steps={steps} to allow it")
        batch = _batch(target, static, batching)
        n = len(idx)
        per_dev = _per_device(batch, n, ndev, min(target.block_size(static), n), chunk_size,
                              budget)
        size = per_dev * ndev
        chunks = [(lo, min(lo + size, n), size) for lo in range(0, n, size)]
        programs.append(_Program(static, idx, arrays, seeds_of, batch, chunks))
    _check_result_size(programs, max_result)
    defaults = {**target.static_params(), **target.array_params()}
    return _Plan(target, grid, fixed, defaults, key_data, seed, explicit_keys, batching, devs,
                 programs)


def _check_runs(grid: dict, n_seeds: int, max_runs: int) -> None:
    """Refuse more than ``max_runs`` runs (grid points × seeds), from the axes' lengths alone:
    before the seeds' keys are split and before the runs are listed one by one."""
    points = math.prod(len(v) for v in grid.values())
    runs = points * n_seeds
    if runs > max_runs:
        raise ValueError(f"the sweep has {runs:,} runs ({points:,} grid points x {n_seeds:,} "
                         f"seeds), more than max_runs = {max_runs:,}; pass max_runs={runs} to "
                         "allow it")


def _check_result_size(programs: list, limit: int) -> None:
    """Refuse a result (every output of every run: runs × recorded steps × bytes) larger than
    ``limit`` bytes, before any compute: it is held in memory on process 0 and written to the
    result file."""
    runs = sum(len(p.idx) for p in programs)
    total = sum(len(p.idx) * p.batch.bytes_out for p in programs)
    if total > limit:
        per = max((p.batch.bytes_out for p in programs), default=0)
        raise ValueError(f"the sweep's result would take {total:,} bytes ({runs:,} runs x up to "
                         f"{per:,} bytes of outputs each), more than max_result_bytes = "
                         f"{limit:,}; pass max_result_bytes={total} to allow it, or record less "
                         "(a larger stride, fewer outputs)")


def _check_names(target: SweepTarget, grid: dict, fixed: dict) -> None:
    known = set(target.array_params()) | set(target.static_params())
    for where, names in (("grid", grid), ("fixed", fixed)):
        unknown = sorted(set(names) - known)
        if unknown:
            raise ValueError(f"{target.name}: unknown parameter(s) {unknown} in {where}; known: "
                             f"{sorted(known)}")
    both = sorted(set(grid) & set(fixed))
    if both:
        raise ValueError(f"parameter(s) {both} are both swept (grid) and fixed")
    bad = sorted(set(grid) & set(target.unsweepable()))
    if bad:
        raise ValueError(f"{target.name}: parameter(s) {bad} fix the output layout and cannot "
                         "be swept; run one sweep per value")
    if "seed" in grid:
        raise ValueError("'seed' is not a parameter; use seeds= (number of seeds) and seed=")


def _groups(target: SweepTarget, grid: dict, fixed: dict, n_seeds: int):
    """``(static, idx, arrays, seeds_of)`` of every program, validated: the static axes walked
    one combination at a time, within one every (array-parameter point, seed) pair a run, in
    that order (seeds innermost), split into programs by ``target.groups``."""
    arr_def, st_def = target.array_params(), target.static_params()
    static_axes = [a for a in grid if a in st_def]
    array_axes = [a for a in grid if a in arr_def]
    axis_pos = {a: i for i, a in enumerate(grid)}
    for combo in itertools.product(*(range(len(grid[a])) for a in static_axes)):
        static = {**st_def, **{k: v for k, v in fixed.items() if k in st_def},
                  **{a: grid[a][i] for a, i in zip(static_axes, combo, strict=True)}}
        base = {**arr_def, **{k: v for k, v in fixed.items() if k in arr_def}}
        idx, vals = [], {k: [] for k in arr_def}
        for pt in itertools.product(*(range(len(grid[a])) for a in array_axes)):
            point = {**base, **{a: grid[a][i] for a, i in zip(array_axes, pt, strict=True)}}
            for s in range(n_seeds):
                full = [0] * (len(grid) + 1)
                for a, i in zip(static_axes, combo, strict=True):
                    full[axis_pos[a]] = i
                for a, i in zip(array_axes, pt, strict=True):
                    full[axis_pos[a]] = i
                full[-1] = s
                idx.append(tuple(full))
                for k in arr_def:
                    vals[k].append(point[k])
        arrays = {}
        for k, v in vals.items():
            try:
                arrays[k] = np.asarray(v, dtype=float)
            except (TypeError, ValueError):
                raise ValueError(f"{target.name}: parameter {k} must be a number; got "
                                 f"{sorted(set(map(repr, v)))}") from None
        seeds_of = np.asarray([i[-1] for i in idx])
        for sub, rows in target.groups(static, arrays, set(grid) | set(fixed)):
            if rows is None:
                rows = np.arange(len(idx))
            sub_arrays = {k: v[rows] for k, v in arrays.items()}
            target.validate(sub, sub_arrays)
            yield sub, [idx[i] for i in rows], sub_arrays, seeds_of[rows]


def _per_device(batch, n: int, ndev: int, block: int, chunk_size: int | None,
                budget: int) -> int:
    """Runs per device in every chunk of a program of ``n`` runs: ``chunk_size // ndev``, or the
    most the memory budget allows (no more than an even share of the ``n`` runs); always a
    whole number of the target's blocks of ``block`` runs (``block`` <= ``n``), and exactly one
    block when a block is the whole program. The blocks are then cut from the runs' global
    order whatever the device count or chunk size (a chunk starts at a multiple of
    ``per_dev * ndev``), and the last, partial block is padded the same way every time (by its
    last run, see :func:`_execute`)."""
    if chunk_size is not None:
        per_dev = chunk_size // ndev
    else:
        per_run = batch.bytes_out + (batch.bytes_per_run if batch.vmapped else 0)
        fixed_cost = 0 if per_run > batch.bytes_out else batch.bytes_per_run
        room = budget // ndev - fixed_cost
        if room < per_run * block:
            what = "one run" if block == 1 else f"one block of {block} runs"
            raise ValueError(
                f"memory_budget {budget:,} bytes is too small: {what} per device needs about "
                f"{(fixed_cost + per_run * block) * ndev:,} bytes over {ndev} devices")
        per_dev = int(min(max(1, -(-n // ndev)), room // per_run))
    if block == 1:
        return per_dev
    blocks = -(-n // block)
    return block * max(1, min(per_dev // block, -(-blocks // ndev)))


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
        store = ChunkStore(Path(out) / f"{name}.chunks")
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

    res = fn(put(kd), {k: put(v) for k, v in arrays.items()})
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        res = multihost_utils.process_allgather(res, tiled=True)
    return {k: np.asarray(v) for k, v in res.items()}


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


def _batch(target: SweepTarget, static: dict, batching: str):
    """``target.batch(static, batching)``, memoized on the target's name, version, the static
    values and the batching, so that repeated sweeps reuse their compiled programs."""
    key = ("batch", type(target).__qualname__, target.name, target.version,
           chunk_digest({"static": static}), batching)
    if key not in _PROGRAMS:
        _PROGRAMS[key] = target.batch(static, batching)
    return _PROGRAMS[key]


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
