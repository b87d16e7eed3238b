"""The one place the package reads the environment (a base module: every layer may import it).

===========================  ======================================================================
``SIMPLEXLAB_PROGRESS``      ``0`` silences the progress bars (experiments, sweeps, schedule
                             verification); anything else, or unset, shows them
``SIMPLEXLAB_EXPERIMENTS``   the folder of experiment scripts the ``simplexlab`` CLI loads (before
                             ``./experiments``)
``XLA_FLAGS``                the ``simplexlab`` CLI adds one CPU device per core (one thread each)
                             unless it already sets the device count, and for quick runs
                             (``reproduce`` / ``claims`` without ``--full``) the fast-compiling
                             CPU code generation of :data:`FAST_COMPILE_FLAGS` unless it already
                             sets the optimisation level
``SIMPLEXLAB_FAST_COMPILE``  ``0`` keeps XLA's default code generation for quick runs too
``SIMPLEXLAB_JAX_CACHE``     the folder of JAX's persistent compilation cache that the CLI and the
                             sweep engine use (default ``$XDG_CACHE_HOME/simplexlab/jax``, else
                             ``~/.cache/simplexlab/jax``); ``0`` or ``off`` switches it off
===========================  ======================================================================

(``SIMPLEXLAB_QUICK=1``, read by the notebooks, runs them at a smaller size; ``EQX_ON_ERROR`` is
equinox's own.)
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_folder_problem", "compilation_cache_dir", "experiments_dir", "import_allowlist",
           "memory_maps", "progress_enabled", "release_programs_near_map_limit", "store_key_file",
           "use_compilation_cache", "use_every_cpu_core", "use_fast_compile"]

DEVICE_FLAG = "--xla_force_host_platform_device_count"
THREAD_FLAG = "--xla_cpu_multi_thread_eigen"


def progress_enabled() -> bool:
    """Whether progress bars are drawn (``SIMPLEXLAB_PROGRESS=0`` silences them)."""
    return os.environ.get("SIMPLEXLAB_PROGRESS", "1") != "0"


def experiments_dir() -> Path | None:
    """The folder ``SIMPLEXLAB_EXPERIMENTS`` names, or ``None`` when it is unset or empty."""
    value = os.environ.get("SIMPLEXLAB_EXPERIMENTS")
    return Path(value) if value else None


#: the modules a data file may name for import (comma-separated; :mod:`simplexlab._imports`)
IMPORT_VAR = "SIMPLEXLAB_IMPORT"


def import_allowlist() -> tuple[str, ...]:
    """The module names ``SIMPLEXLAB_IMPORT`` allows data files to import (comma-separated,
    blanks ignored; each also allows its submodules)."""
    return tuple(m.strip() for m in os.environ.get(IMPORT_VAR, "").split(",") if m.strip())


#: the file holding the per-user secret that keys the sweep store's chunk signatures
STORE_KEY_VAR = "SIMPLEXLAB_STORE_KEY"


def store_key_file() -> Path:
    """The file of the per-user secret keying the chunk signatures of the sweep store:
    ``SIMPLEXLAB_STORE_KEY`` when set, else ``$XDG_CONFIG_HOME/simplexlab/store.key``, else
    ``~/.config/simplexlab/store.key`` (outside every sweep folder: whoever can edit a chunk
    cannot forge its signature; created readable by its user only on first use)."""
    value = os.environ.get(STORE_KEY_VAR, "").strip()
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".config") / "simplexlab" / "store.key"


def use_every_cpu_core() -> None:
    """Before JAX is imported: one CPU device per core and one thread per device, written into
    ``XLA_FLAGS`` unless it already sets the device count."""
    flags = os.environ.get("XLA_FLAGS", "")
    if DEVICE_FLAG not in flags:
        flags = f"{flags} {DEVICE_FLAG}={os.cpu_count() or 1}"
        if THREAD_FLAG not in flags:
            flags = f"{flags} {THREAD_FLAG}=false"
        os.environ["XLA_FLAGS"] = flags.strip()


#: XLA's CPU code generation at LLVM optimisation level 0 (and, on jaxlib 0.10, the older loop
#: emitters): programs compile several times faster and run somewhat slower, a gain for quick
#: runs, whose programs mostly run once (measured in BENCHMARKS.md). The numbers may differ from
#: the default code generation's in the last bits (and a sampled trajectory that depends on
#: them, after that); quick runs always use the same flags.
OPT_FLAG = "--xla_backend_optimization_level"


def fast_compile_options() -> dict[str, int | bool]:
    """The XLA options of :func:`use_fast_compile` for the installed jaxlib (read from its
    metadata, without importing it: an unknown flag in ``XLA_FLAGS`` stops XLA), as compiler
    options (``jax.jit(...).lower(...).compile(compiler_options=...)``)."""
    from importlib.metadata import PackageNotFoundError, version

    options: dict[str, int | bool] = {OPT_FLAG.lstrip("-"): 0}
    try:
        major_minor = tuple(int(v) for v in version("jaxlib").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return options
    if major_minor == (0, 10):
        options["xla_cpu_use_fusion_emitters"] = False
    return options


def fast_compile_flags() -> tuple[str, ...]:
    """:func:`fast_compile_options` as ``XLA_FLAGS`` entries."""
    return tuple(f"--{k}={str(v).lower()}" for k, v in fast_compile_options().items())


def use_fast_compile() -> bool:
    """Before JAX starts: add :func:`fast_compile_flags` to ``XLA_FLAGS`` unless it already
    sets the optimisation level or ``SIMPLEXLAB_FAST_COMPILE=0``; whether they are set."""
    flags = os.environ.get("XLA_FLAGS", "")
    if os.environ.get("SIMPLEXLAB_FAST_COMPILE", "1") == "0":
        return False
    if OPT_FLAG not in flags:
        os.environ["XLA_FLAGS"] = " ".join([flags, *fast_compile_flags()]).strip()
    return True


CACHE_VAR = "SIMPLEXLAB_JAX_CACHE"
#: Size bound of the compilation cache folder (:func:`use_compilation_cache` removes the least
#: recently used entries beyond it when it turns the cache on).
CACHE_MAX_BYTES = 4 * 2**30


def compilation_cache_dir() -> Path | None:
    """The persistent compilation cache's folder: ``SIMPLEXLAB_JAX_CACHE`` when set (``0``, ``off``,
    ``false`` or ``no``: ``None``, no cache), else ``$XDG_CACHE_HOME/simplexlab/jax``, else
    ``~/.cache/simplexlab/jax``."""
    value = os.environ.get(CACHE_VAR, "").strip()
    if value.lower() in ("0", "off", "false", "no"):
        return None
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "simplexlab" / "jax"


def cache_folder_problem(folder: Path) -> str | None:
    """Why another user could put code in ``folder`` (an existing folder of compiled programs
    or secrets), or ``None``: it is not owned by this user, it or a folder above it (without the
    sticky bit, as ``/tmp`` has) is writable by other users or the group, as ssh refuses a key
    others can write."""
    import stat

    if not hasattr(os, "getuid"):  # no POSIX owners (Windows): nothing to compare
        return None
    uid = os.getuid()
    st = folder.stat()
    if st.st_uid != uid:
        return f"it is owned by user id {st.st_uid}, not by this user ({uid})"
    if st.st_mode & 0o022:
        return (f"other users can write in it (mode {stat.S_IMODE(st.st_mode):04o}); make it "
                f"yours alone: chmod go-w {str(folder)!r}")
    for parent in folder.resolve().parents:
        pst = parent.stat()
        if (pst.st_mode & 0o022 and not pst.st_mode & stat.S_ISVTX) or \
                pst.st_uid not in (uid, 0):
            return (f"the folder above it, {str(parent)!r}, lets other users replace it "
                    f"(owner {pst.st_uid}, mode {stat.S_IMODE(pst.st_mode):04o})")
    return None


def use_compilation_cache(min_compile_time: float = 0.0) -> Path | None:
    """Turn on JAX's persistent compilation cache in :func:`compilation_cache_dir` (call it before
    the first compilation: a second process running the same programs then loads them from disk
    instead of compiling them). Every program that took at least ``min_compile_time`` seconds to
    compile is stored (default: all; JAX never stores a program with host callbacks, e.g. an
    ``eqx.error_if`` left under ``jit``). The folder holds at most :data:`CACHE_MAX_BYTES`:
    JAX writes it through :class:`simplexlab._jax_cache.FolderCache` (each program written
    whole, so processes sharing the folder need no lock, and no scan of the folder at each
    write), whose least recently used entries beyond the bound are removed here, once; with a
    JAX that builds its file cache otherwise, JAX's own bounded cache (a lock, and a scan at
    each write). The folder is created readable by its user only (a compiled program is code
    JAX will run: never share the folder with users you do not trust). Returns the folder, or
    ``None`` when the cache is off, the folder cannot be written, JAX's own cache would be used
    and ``filelock`` (its lock between processes) is missing, or the process already set a
    cache folder of its own (that one is kept). An
    existing folder that another user could write to (:func:`cache_folder_problem`) is refused
    with a ``ValueError``: the programs in it are native code the lab would run."""
    folder = compilation_cache_dir()
    if folder is None:
        return None
    import jax

    if jax.config.jax_compilation_cache_dir:
        return None
    try:
        from . import _jax_cache
        ours = _jax_cache.supported()
    except ImportError:  # a JAX without the interface this was written against
        ours = False
    if not ours:
        try:
            import filelock  # noqa: F401  (JAX locks its bounded cache with it)
        except ImportError:
            return None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK | os.X_OK):
        return None
    problem = cache_folder_problem(folder)
    if problem is not None:
        raise ValueError(f"the compilation cache folder {str(folder)!r} ({CACHE_VAR}) is "
                         f"refused: {problem}; or choose another folder ({CACHE_VAR}=off: no "
                         "cache)")
    if ours:
        _jax_cache.install()
        _jax_cache.prune(folder, CACHE_MAX_BYTES)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    # JAX's own bound (a scan of the folder at each write) only where its own cache is used
    jax.config.update("jax_compilation_cache_max_size", -1 if ours else CACHE_MAX_BYTES)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_time))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return folder


def memory_maps() -> tuple[int, int] | None:
    """``(mappings, limit)``: this process's memory mappings (``/proc/self/maps``) and the
    kernel's bound on them (``vm.max_map_count``, 65,530 by default); ``None`` off Linux."""
    try:
        with open("/proc/self/maps", "rb") as f:
            n = sum(1 for _ in f)
        with open("/proc/sys/vm/max_map_count") as f:
            return n, int(f.read())
    except (OSError, ValueError):
        return None


def release_programs_near_map_limit(fraction: float = 0.5) -> bool:
    """Drop JAX's caches of compiled programs (``jax.clear_caches()``) when this process holds
    more than ``fraction`` of the kernel's memory mappings (:func:`memory_maps`); ``True`` if it
    did. XLA's CPU backend maps memory for every program it compiles or loads (about six
    mappings each on jax 0.10.2) and keeps it while the program is cached: a process that
    compiles ~10,000 programs (a test worker, ``simplexlab reproduce`` running every experiment
    in one process) reaches ``vm.max_map_count`` and dies in LLVM (``LLVM compilation error:
    Cannot allocate memory``, a SIGSEGV or an abort; NOTES.md). Dropped programs are compiled
    again when next called (or loaded from the persistent compilation cache): call it between
    independent pieces of work, never inside one."""
    maps = memory_maps()
    if maps is None or maps[0] <= fraction * maps[1]:
        return False
    import gc

    import jax

    jax.clear_caches()
    gc.collect()
    return True
