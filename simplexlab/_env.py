"""The one place the package reads the environment (a base module: every layer may import it).

===========================  ======================================================================
``SIMPLEXLAB_PROGRESS``      ``0`` silences the progress bars (experiments, sweeps, schedule
                             verification); anything else, or unset, shows them
``SIMPLEXLAB_EXPERIMENTS``   the folder of experiment scripts the ``simplexlab`` CLI loads (before
                             ``./experiments``)
``XLA_FLAGS``                the ``simplexlab`` CLI adds one CPU device per core (one thread each)
                             unless it already sets the device count
===========================  ======================================================================

(``SIMPLEXLAB_QUICK=1``, read by the notebooks, runs them at a smaller size; ``EQX_ON_ERROR`` is
equinox's own.)
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["experiments_dir", "progress_enabled", "use_every_cpu_core"]

DEVICE_FLAG = "--xla_force_host_platform_device_count"
THREAD_FLAG = "--xla_cpu_multi_thread_eigen"


def progress_enabled() -> bool:
    """Whether progress bars are drawn (``SIMPLEXLAB_PROGRESS=0`` silences them)."""
    return os.environ.get("SIMPLEXLAB_PROGRESS", "1") != "0"


def experiments_dir() -> Path | None:
    """The folder ``SIMPLEXLAB_EXPERIMENTS`` names, or ``None`` when it is unset or empty."""
    value = os.environ.get("SIMPLEXLAB_EXPERIMENTS")
    return Path(value) if value else None


def use_every_cpu_core() -> None:
    """Before JAX is imported: one CPU device per core and one thread per device, written into
    ``XLA_FLAGS`` unless it already sets the device count."""
    flags = os.environ.get("XLA_FLAGS", "")
    if DEVICE_FLAG not in flags:
        flags = f"{flags} {DEVICE_FLAG}={os.cpu_count() or 1}"
        if THREAD_FLAG not in flags:
            flags = f"{flags} {THREAD_FLAG}=false"
        os.environ["XLA_FLAGS"] = flags.strip()
