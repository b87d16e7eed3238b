"""Test configuration: float64 everywhere, strict dtype promotion, shared tolerance helpers, and
JAX's persistent compilation cache as the command line uses it (``SIMPLEXLAB_JAX_CACHE``; ``0``
switches it off): a second run of the suite, and every subprocess running programs the suite
compiled already (the CLI's tests), load those programs instead of compiling them. Only programs
that took 0.2 s or more to compile are stored (most of the suite's thousands of programs compile
in milliseconds, and every write scans the folder)."""

import os

import jax

from simplexlab._env import use_compilation_cache

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("SIMPLEXLAB_PROGRESS", "0")
use_compilation_cache(min_compile_time=0.2)

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# CI draws the same examples on every run (a failure there is reproducible); "dev" explores
settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.register_profile(
    "dev", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def assert_close(actual, expected, *, rtol=1e-12, atol=1e-12, err_msg=""):
    """``np.testing.assert_allclose`` on NumPy copies (works for JAX arrays and pytrees leaves)."""
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol,
                               err_msg=err_msg)


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)
