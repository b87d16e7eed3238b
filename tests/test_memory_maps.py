"""A process that compiles many programs keeps memory mappings for each (XLA's CPU backend) and
dies at the kernel's ``vm.max_map_count``: ``simplexlab._env.release_programs_near_map_limit``
drops JAX's caches past a fraction of the bound (tests/conftest.py between test files,
``run_experiment`` and ``evaluate_claims`` between experiments and claims; NOTES.md)."""

import subprocess
import sys

import jax
import pytest

from simplexlab import _env

CHILD = r"""
import gc, jax, jax.numpy as jnp
from simplexlab._env import memory_maps, release_programs_near_map_limit
start = memory_maps()[0]
fs = []
for i in range(120):
    f = jax.jit(lambda x, i=i: jnp.sin(x) * i + jnp.cos(x) ** (i % 7))
    f(jnp.ones(3 + i)).block_until_ready()
    fs.append(f)
held = memory_maps()[0]
kept = release_programs_near_map_limit(fraction=1.0)  # far below the bound: nothing dropped
cached = fs[0]._cache_size()
dropped = release_programs_near_map_limit(fraction=0.0)
print(start, held, memory_maps()[0], kept, cached, dropped, fs[0]._cache_size())
"""


@pytest.mark.skipif(_env.memory_maps() is None, reason="no /proc/self/maps (not Linux)")
def test_compiled_programs_hold_mappings_until_the_caches_are_dropped():
    n, limit = _env.memory_maps()
    assert 0 < n < limit
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         check=True).stdout.split()
    start, held, after = (int(v) for v in out[:3])
    kept, cached, dropped, left = out[3], int(out[4]), out[5], int(out[6])
    assert held - start >= 3 * 120, (start, held)  # a few mappings per program
    assert kept == "False" and cached == 1
    assert dropped == "True" and left == 0
    assert after - start < 0.25 * (held - start), (start, held, after)  # given back


def test_the_caches_are_dropped_only_past_the_fraction(monkeypatch):
    calls = []
    monkeypatch.setattr(jax, "clear_caches", lambda: calls.append(1))
    monkeypatch.setattr(_env, "memory_maps", lambda: (20_000, 65_530))
    assert not _env.release_programs_near_map_limit() and not calls
    monkeypatch.setattr(_env, "memory_maps", lambda: (40_000, 65_530))
    assert _env.release_programs_near_map_limit() and calls == [1]
    monkeypatch.setattr(_env, "memory_maps", lambda: None)  # not Linux: never
    assert not _env.release_programs_near_map_limit(fraction=0.0) and calls == [1]
