"""Shared pieces of the benchmark suite: the machine, peak memory, compile-time accounting, the
worker environment (host device count) and the result rows.

Every measurement runs in a worker process of its own (``python -m benchmarks --worker ...``),
so its peak resident memory (``ru_maxrss``) is its own and its JAX configuration (x64, the
number of host devices) is set before JAX is imported.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import resource
import sys
import time
from typing import Any

GB = 1e9
GIB = 2**30
DEVICE_FLAG = "--xla_force_host_platform_device_count"


def cpu_count() -> int:
    """Cores this process may run on (the affinity mask), else ``os.cpu_count()``."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_total() -> float | None:
    """Physical memory in bytes (Linux), else ``None``."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def load_average() -> tuple[float, float, float] | None:
    try:
        return tuple(round(x, 2) for x in os.getloadavg())
    except (AttributeError, OSError):
        return None


def speed_probe(n: int = 10_000_000) -> float:
    """Seconds for a fixed pure-Python loop of ``n`` additions on one core, best of 3: how fast
    the machine runs *now* (a shared virtual machine's speed per core varies from day to day
    and with its neighbours' load), so that runs on different days can be compared."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        acc = 0
        for i in range(n):
            acc += i
        best = min(best, time.perf_counter() - t0)
    return round(best, 3)


def host_info() -> dict[str, Any]:
    """The machine, without importing JAX."""
    mem = memory_total()
    return {"cpu": cpu_model(), "cores": cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(),
            "memory_gib": round(mem / GIB, 1) if mem else None, "loadavg": load_average(),
            "speed_probe_s": speed_probe()}


def jax_info() -> dict[str, Any]:
    """JAX's view of the machine (call after the worker has configured JAX)."""
    import jax
    import jaxlib

    devs = jax.devices()
    kinds = sorted({d.device_kind for d in devs})
    return {"jax": jax.__version__, "jaxlib": jaxlib.__version__,
            "backend": jax.default_backend(), "devices": len(devs),
            "device_kind": ", ".join(kinds), "x64": bool(jax.config.read("jax_enable_x64"))}


def worker_env(host_devices: int | None) -> dict[str, str]:
    """The environment of a worker: ``host_devices`` CPU devices (``XLA_FLAGS``), or ``None`` for
    JAX's default of one CPU device (the old thread-pool baseline ran that way)."""
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(DEVICE_FLAG)]
    if host_devices is not None:
        flags.append(f"{DEVICE_FLAG}={host_devices}")
    if flags:
        env["XLA_FLAGS"] = " ".join(flags)
    else:
        env.pop("XLA_FLAGS", None)
    env.setdefault("SIMPLEXLAB_PROGRESS", "0")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["SIMPLEXLAB_JAX_CACHE"] = "0"  # first calls compile, as on a first run
    return env


def configure_jax():
    """In a worker, before anything else uses JAX: float64 available (the mean-field solves need
    it; the categorical simulator takes its dtype from its configuration)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def peak_rss() -> int:
    """Peak resident memory of this process in bytes (``ru_maxrss``: KiB on Linux, bytes on
    macOS)."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(r if sys.platform == "darwin" else r * 1024)


def cpu_seconds() -> float:
    """User + system CPU time of this process so far (every thread). Unlike wall time it does not
    grow while other jobs hold the cores, so it compares two paths on a shared machine."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class CompileTimer:
    """Sums JAX's compile-phase durations (tracing, lowering to MLIR, backend compilation) as they
    happen, from :mod:`jax.monitoring`, so the wall time of a call that compiles on the way (the
    sweep engine compiles one program per static combination) splits into compile and run."""

    PREFIX = "/jax/core/compile/"

    def __init__(self):
        import jax.monitoring

        self.total = 0.0
        self.count = 0
        self._mon = jax.monitoring
        self._mon.register_event_duration_secs_listener(self._listen)

    def _listen(self, event, duration, **kwargs):
        if event.startswith(self.PREFIX):
            self.total += float(duration)
            if event.endswith("backend_compile_duration"):
                self.count += 1

    def close(self):
        unregister = getattr(self._mon, "unregister_event_duration_listener", None)
        if unregister is not None:
            try:
                unregister(self._listen)
            except (ValueError, KeyError, AssertionError):
                pass


class Stopwatch:
    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0


def bandwidth(nbytes: int = 256 * 2**20, repeats: int = 5, threads: int = 1) -> float:
    """Bytes read + written per second by large NumPy copies, one per thread running at once
    (NumPy releases the GIL while copying), best of ``repeats``."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    pairs = [(np.ones(nbytes // 8), np.empty(nbytes // 8)) for _ in range(threads)]
    best = float("inf")
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in range(repeats):
            t0 = time.perf_counter()
            list(pool.map(lambda sd: np.copyto(sd[1], sd[0]), pairs))
            best = min(best, time.perf_counter() - t0)
    return 2 * nbytes * threads / best


@dataclasses.dataclass
class Row:
    """One line of the suite's table."""

    benchmark: str
    goal: str
    measured: str
    baseline: str = "—"
    ratio: str = "—"
    peak_memory: str = "—"
    met: str = "—"  # "yes", "no", "—" (no goal), "n/a"
    machine: str = ""
    notes: str = ""
    values: dict[str, Any] = dataclasses.field(default_factory=dict)


def fmt_seconds(s: float) -> str:
    if s >= 100:
        return f"{s:.0f} s"
    if s >= 1:
        return f"{s:.1f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"


def fmt_bytes(b: float) -> str:
    return f"{b / GB:.2f} GB" if b >= 0.1 * GB else f"{b / 1e6:.0f} MB"


def machine_short(info: dict[str, Any]) -> str:
    """``jax 0.10.2 cpu ×2`` (the rest of the machine is printed once, under the table)."""
    if not info:
        return ""
    kind = info.get("backend", "?")
    if kind != "cpu" and info.get("device_kind"):
        kind = info["device_kind"]
    return f"jax {info.get('jax', '?')}, {kind} ×{info.get('devices', '?')}"
