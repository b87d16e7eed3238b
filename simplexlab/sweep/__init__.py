"""The sweep layer: one engine for grids over any simulator or the mean-field ODE ensemble.

:func:`run` takes a target (a simulator name or class of :mod:`simplexlab.sim`, or
``"meanfield"``), a grid ``{parameter: values}``, fixed parameters and a number of seeds, and
returns an :class:`xarray.Dataset` (dims named after the swept parameters, ``seed`` and the
target's own axes such as ``step``; the provenance in its attributes). It shards every chunk over
all devices with ``jax.shard_map`` (on CPU, one device per core with
``XLA_FLAGS=--xla_force_host_platform_device_count=N``), spans processes and hosts after
:func:`jax.distributed.initialize`, sizes chunks to a memory budget, writes each finished chunk
atomically and resumes an interrupted sweep without recomputing finished chunks.
:func:`load_config` / :func:`run_config` read the TOML files of ``simplexlab sweep``.
:class:`SweepAdapter` (:func:`adapter`) reads what each simulator class declares about how a sweep
runs it (batching, memory per run, output dims, bucketing of runs).
"""

from .._imports import allow_import
from ._adapters import SweepAdapter, adapter
from ._config import load_config, run_config
from ._engine import SweepInterrupted, run
from ._plan import parse_bytes
from ._store import ChunkStore, chunk_digest
from ._targets import (
    AbstractSweepTarget,
    Batch,
    MeanFieldTarget,
    SimulatorTarget,
    import_simulator,
    make_target,
)

__all__ = [
    "AbstractSweepTarget",
    "Batch",
    "ChunkStore",
    "MeanFieldTarget",
    "SimulatorTarget",
    "SweepAdapter",
    "SweepInterrupted",
    "adapter",
    "allow_import",
    "chunk_digest",
    "load_config",
    "make_target",
    "import_simulator",
    "parse_bytes",
    "run",
    "run_config",
]
