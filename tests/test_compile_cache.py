"""JAX's persistent compilation cache as the CLI and the sweep engine turn it on
(``simplexlab._env.use_compilation_cache``, ``SIMPLEXLAB_JAX_CACHE``): the folder, the switch,
several processes at once. Each case runs in fresh processes (JAX reads its cache folder once)."""

import json
import os
import stat
import subprocess
import sys

import jax
import pytest

from simplexlab import _env

#: what every child runs first: count the programs XLA was asked for ("programs", compiled or
#: loaded), the persistent cache's hits and its misses (JAX counts a miss only when it writes the
#: entry: a program it refuses to store, one with host callbacks, compiles without a miss;
#: programs - hits is what compiled)
LISTENER = r"""
import json
import jax, jax.numpy as jnp
import jax.monitoring as mon
from simplexlab._env import use_compilation_cache
seen = {"programs": 0, "hits": 0, "misses": 0}
def on_event(event, **kw):
    if event.endswith("/cache_hits"):
        seen["hits"] += 1
    elif event.endswith("/cache_misses"):
        seen["misses"] += 1
def on_duration(event, seconds, **kw):
    seen["programs"] += event == "/jax/core/compile/backend_compile_duration"
mon.register_event_listener(on_event)
mon.register_event_duration_secs_listener(on_duration)
"""

#: a child: turn the cache on as the CLI does, compile three small programs, print what happened
CHILD = LISTENER + r"""
folder = use_compilation_cache()
x = jnp.arange(6.0)
out = [float(jax.jit(lambda v: jnp.sum(jnp.sin(v) * k))(x)) for k in (1.0, 2.0)]
out.append(float(jax.jit(lambda v: jnp.cumsum(v)[-1] ** 2)(x)))
from jax._src import compilation_cache as cc
print(json.dumps({"folder": None if folder is None else str(folder), "out": out,
                  "cache": type(cc._cache).__name__, **seen}))
"""


def _env_with(value):
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS",)}
    # no device count of the caller's; the suite's compile-speed flags kept (tests/conftest.py)
    level = [f for f in os.environ.get("XLA_FLAGS", "").split()
             if f.startswith(("--xla_backend_optimization_level", "--xla_cpu_use_fusion_emitters"))]
    if level:
        env["XLA_FLAGS"] = " ".join(level)
    env.update({"JAX_PLATFORMS": "cpu", _env.CACHE_VAR: str(value)})
    return env


def _child(value):
    return subprocess.Popen([sys.executable, "-c", CHILD], env=_env_with(value),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc):
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def test_cache_folder_rule_and_switch(monkeypatch, tmp_path):
    monkeypatch.delenv(_env.CACHE_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _env.compilation_cache_dir() == tmp_path / "xdg" / "simplexlab" / "jax"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _env.compilation_cache_dir() == tmp_path / "home" / ".cache" / "simplexlab" / "jax"
    monkeypatch.setenv(_env.CACHE_VAR, str(tmp_path / "mine"))
    assert _env.compilation_cache_dir() == tmp_path / "mine"
    before = jax.config.jax_compilation_cache_dir
    for off in ("0", "off", "OFF", "false", "no"):
        monkeypatch.setenv(_env.CACHE_VAR, off)
        assert _env.compilation_cache_dir() is None
        assert _env.use_compilation_cache() is None
        assert jax.config.jax_compilation_cache_dir == before  # nothing turned on


def test_two_processes_at_once_share_one_cache_then_a_third_compiles_nothing(tmp_path):
    """Two processes compile the same programs into one empty folder at the same time: both
    finish with the same numbers; the folder is the user's alone (no group or other access);
    a third process loads every program (hits, no misses) and gets the same numbers."""
    cache = tmp_path / "a" / "jax"
    first = [_child(cache), _child(cache)]
    a, b = (_result(p) for p in first)
    assert a["folder"] == b["folder"] == str(cache)
    assert a["out"] == b["out"]
    assert a["misses"] + b["misses"] >= 3  # both looked, neither found everything
    assert stat.S_IMODE(cache.stat().st_mode) & 0o077 == 0
    assert len(list(cache.glob("*-cache"))) >= 3
    # the lab's folder cache: no lock file, no time stamp files, no temporary file left
    assert a["cache"] == b["cache"] == "FolderCache"
    assert sorted(p.name for p in cache.iterdir() if not p.name.endswith("-cache")) == []
    c = _result(_child(cache))
    assert c["out"] == a["out"] and c["misses"] == 0 and c["hits"] == c["programs"] >= 3


def test_a_jax_built_otherwise_gets_its_own_bounded_cache(tmp_path):
    """Where the lab's folder cache cannot be installed, JAX's own bounded cache serves (its lock
    and its size bound): a child with ``supported`` patched to False compiles and loads as
    before, and the folder holds JAX's lock and time stamp files."""
    code = ("import simplexlab._jax_cache as c; c.supported = lambda: False\n" + CHILD +
            "print(jax.config.jax_compilation_cache_max_size)\n")
    cache = tmp_path / "jax"
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code], env=_env_with(cache),
                              capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stderr[-3000:]
        *_, line, bound = proc.stdout.strip().splitlines()
        runs.append(json.loads(line))
        assert int(bound) == _env.CACHE_MAX_BYTES
    assert runs[0]["cache"] == "LRUCache" and runs[0]["misses"] >= 3
    assert runs[1]["hits"] == runs[1]["programs"] >= 3 and runs[1]["out"] == runs[0]["out"]
    assert (cache / ".lockfile").exists() and list(cache.glob("*-atime"))


def test_jax_builds_the_folder_cache_unless_asked_to_verify(tmp_path):
    """In a process whose cache the lab turned on (this one: tests/conftest.py), JAX's file cache
    is the folder cache, and JAX's own where its verifying option asks for its wrapper."""
    from jax._src import compilation_cache as cc

    from simplexlab._jax_cache import FolderCache

    cache, path = cc.get_file_cache(str(tmp_path / "a"))
    assert isinstance(cache, FolderCache) and path == str(tmp_path / "a")
    with _verify(True):
        cache, _ = cc.get_file_cache(str(tmp_path / "b"))
    assert not isinstance(cache, FolderCache)


def _verify(value):
    import contextlib

    @contextlib.contextmanager
    def on():
        before = jax.config.jax_compilation_cache_check_contents
        jax.config.update("jax_compilation_cache_check_contents", value)
        try:
            yield
        finally:
            jax.config.update("jax_compilation_cache_check_contents", before)
    return on()


def test_a_program_is_read_whole_or_not_at_all(tmp_path):
    """A reader racing a writer of the same entry never gets part of it: ``put`` writes a
    temporary file and renames it onto the entry (written in place, as JAX's unbounded cache
    writes, a reader in another thread gets a prefix)."""
    import threading

    from simplexlab._jax_cache import FolderCache

    cache = FolderCache(tmp_path / "jax")
    value = os.urandom(1 << 24)  # 16 MB: its write takes long enough to be caught in the middle
    seen = []
    for round_ in range(6):
        key = f"k{round_}"
        stop = threading.Event()

        def read(key=key, stop=stop):
            while not stop.is_set():
                got = cache.get(key)
                if got is not None:
                    seen.append(len(got))

        reader = threading.Thread(target=read)
        reader.start()
        cache.put(key, value)
        stop.set()
        reader.join()
        assert cache.get(key) == value
    assert all(n == len(value) for n in seen), sorted(set(seen))[:5]
    assert sorted(p.name for p in (tmp_path / "jax").iterdir()) == [
        f"k{i}-cache" for i in range(6)]


def test_the_folder_is_pruned_least_recently_used_first(tmp_path):
    """``prune`` removes the entries read or written longest ago until the rest fits the bound
    (with JAX's time stamp file of each), and the temporary file a dead writer left (not a
    live one's); a read makes an entry recent."""
    import time

    from simplexlab._jax_cache import FolderCache, prune

    folder = tmp_path / "jax"
    cache = FolderCache(folder)
    now = time.time()
    for i, name in enumerate("abcde"):
        cache.put(name, bytes(100))
        os.utime(folder / f"{name}-cache", (now - 1000 + i, now - 1000 + i))  # a oldest
    (folder / "a-atime").write_bytes(bytes(8))
    assert cache.get("b") == bytes(100)  # b is now the most recent
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    live = f".f-cache.{os.getpid()}.abc.tmp"
    (folder / f".e-cache.{dead}.abc.tmp").write_bytes(b"part")  # its writer has ended
    (folder / live).write_bytes(b"part")  # this process is writing it
    assert prune(folder, 250) == 3  # 500 bytes held: a, c, d go; e and b stay
    assert sorted(p.name for p in folder.iterdir()) == [live, "b-cache", "e-cache"]
    assert prune(folder, 250) == 0


#: a child: a small sweep of each simulator the engine traces with run-time checks in their
#: steps' reach (bandit, classifier, two-stage, product, categorical) and of the mean-field target
#: (diffrax's result checked by the engine on the host), and the mean-field solvers,
#: with the cache on (every program kept)
SWEEP_CHILD = LISTENER + r"""
import sys
use_compilation_cache(min_compile_time=0.0)
from simplexlab import sweep
out = sys.argv[1]
for target, grid, fixed in [
        ("bandit", {"gain": [0.5, 1.5]}, {"method": "g2rpo", "num_steps": 4, "stride": 2,
                                           "group_size": 4, "max_group_size": 4}),
        ("classifier", {"eta": [0.1, 0.2]}, {"num_steps": 4, "stride": 2}),
        ("two_stage", {"eta": [0.1, 0.2]}, {"num_steps": 4, "stride": 2}),
        ("product", {"group_size": [2, 3]}, {"num_steps": 4, "stride": 2}),
        ("categorical", {"group_size": [2, 4]}, {"num_actions": 64, "num_correct": 8,
                                                 "num_steps": 4, "stride": 2}),
        ("meanfield", {"gain": [0.5, 1.5]}, {"t1": 1.0, "n_save": 3, "block": 2})]:
    sweep.run(target, grid=grid, fixed=fixed, seeds=2, out=out, name=target, resume=False,
              progress=False)
# the mean-field ODE solvers (diffrax; its result checked on the host, after the call): solve's
# program vmapped (solve_each), solve_ensemble's inside its blocks' program
from simplexlab import theory as th
from simplexlab.theory.internal import solve_each
ens = th.make_state(jnp.asarray([0.3, 0.4, 0.5]), jnp.full((3, 2), 0.5), jnp.full((3, 2), 0.5))
solve_each(th.GRPO(), ens, t1=1.0, n_save=3)
th.solve_ensemble(th.GRPO(), ens, t1=1.0, n_save=3, block=2)
print(json.dumps(seen))
"""


@pytest.mark.slow
def test_a_second_sweep_compiles_nothing(tmp_path):
    """The sweep engine checks every run's parameters on the host and traces the simulators
    without run-time checks (no ``eqx.error_if``, so no host callback, which JAX's persistent
    cache refuses to store), and ``solve`` / ``solve_ensemble`` / ``solve_each`` check diffrax's
    result on the host: a second process running the same sweeps and solves loads every program."""
    runs = []
    for i in range(2):
        proc = subprocess.run([sys.executable, "-c", SWEEP_CHILD, str(tmp_path / f"out{i}")],
                              env=_env_with(tmp_path / "cache"), capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert runs[0]["misses"] > 0
    assert runs[1]["hits"] == runs[1]["programs"] > 0 and runs[1]["misses"] == 0, runs
