"""Public API for experiment scripts in ``experiments/``: register with :func:`experiment`,
receive a :class:`Context` (mode, output folder, seed, ``progress``, ``savefig``)."""

from .._results import atomic_write_bytes, atomic_write_json, provenance, to_jsonable
from ._progress import progress
from ._registry import (
    Context,
    Experiment,
    experiment,
    load_experiment_module,
    load_experiments,
    registry,
    run_experiment,
)

__all__ = [
    "Context",
    "Experiment",
    "atomic_write_bytes",
    "atomic_write_json",
    "experiment",
    "load_experiment_module",
    "load_experiments",
    "progress",
    "provenance",
    "registry",
    "run_experiment",
    "to_jsonable",
]
