r"""The sweep engine's plan: every name and value of a sweep checked, and its grid cut into
compiled programs and chunks of runs, before any compute (what :func:`simplexlab.sweep.run` does
first; :mod:`simplexlab.sweep._engine` then executes the plan and assembles the Dataset).

The guards on the size of the work (:data:`MAX_RUNS`, :data:`MAX_RESULT_BYTES`, the simulators'
step bound) and the parsing of sizes (:func:`parse_bytes`) live here, with the checks of every
grid and fixed name against the target's parameters.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import json
import math
import re
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from .._checks import is_int
from ..sim.internal import MAX_STEPS
from ._store import chunk_digest
from ._targets import BATCHINGS, AbstractSweepTarget, Batch, make_target

__all__ = ["MAX_RESULT_BYTES", "MAX_RUNS", "parse_bytes"]

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


def _check_bools(target: AbstractSweepTarget, grid: dict, fixed: dict) -> None:
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

    target: AbstractSweepTarget
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
    target = make_target(target) if not isinstance(target, AbstractSweepTarget) else target
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


def _check_names(target: AbstractSweepTarget, grid: dict, fixed: dict) -> None:
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


def _groups(target: AbstractSweepTarget, grid: dict, fixed: dict, n_seeds: int):
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
            yield sub, [idx[i] for i in rows], target.cast(sub_arrays), seeds_of[rows]


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



_BATCHES: dict = {}


def _batch(target: AbstractSweepTarget, static: dict, batching: str):
    """``target.batch(static, batching)``, memoized on the target's name, version, the static
    values and the batching, so that repeated sweeps reuse their compiled programs."""
    key = ("batch", type(target).__qualname__, target.name, target.version,
           chunk_digest({"static": static}), batching)
    if key not in _BATCHES:
        _BATCHES[key] = target.batch(static, batching)
    return _BATCHES[key]


