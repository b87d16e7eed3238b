"""Group-relative baselines: hand computations, masks, invariances, jit/vmap, bad input."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close
from hypothesis import given
from hypothesis import strategies as st

from simplexlab import shaping as sh

R = np.array([[1.0, 0.0, 1.0, 1.0], [0.5, 2.0, -1.0, 0.0], [3.0, 3.0, 3.0, 3.0]])


def _np_grpo(r, eps=1e-6, ddof=0):
    return (r - r.mean()) / (r.std(ddof=ddof) + eps)


def test_hand_values():
    for row, r in enumerate(R):
        assert_close(sh.raw_advantages(R)[row], r)
        assert_close(sh.mean_shifted_advantages(R)[row], r - r.mean())
        assert_close(sh.dr_grpo_advantages(R)[row], r - r.mean())
        assert_close(sh.grpo_advantages(R)[row], _np_grpo(r))
        assert_close(sh.grpo_advantages(R, ddof=1, eps=0.1)[row], _np_grpo(r, 0.1, 1))
        loo = np.array([r[i] - np.delete(r, i).mean() for i in range(len(r))])
        assert_close(sh.rloo_advantages(R)[row], loo)
    a = R - R.mean(-1, keepdims=True)
    assert_close(sh.reinforce_pp_advantages(R), (a - a.mean()) / (a.std() + 1e-8))
    assert_close(sh.reinforce_pp_advantages(R, group_baseline=False),
                 (R - R.mean()) / (R.std() + 1e-8))


def test_zero_variance_group_gives_zero():
    assert_close(sh.grpo_advantages(R)[2], np.zeros(4))


@pytest.mark.parametrize("fn", [sh.raw_advantages, sh.mean_shifted_advantages,
                                sh.grpo_advantages, sh.rloo_advantages])
def test_mask_equals_subgroup(fn):
    mask = np.array([[True, True, False, True], [True, True, True, True],
                     [False, True, True, True]])
    out = np.asarray(fn(R, mask))
    for row in range(3):
        sub = R[row][mask[row]]
        assert_close(out[row][mask[row]], fn(sub[None])[0])
        assert_close(out[row][~mask[row]], 0.0)


def test_masked_nan_padding_ignored():
    r = np.array([[1.0, 0.0, np.nan]])
    m = np.array([[True, True, False]])
    assert_close(sh.grpo_advantages(r, m), [[0.5 / (0.5 + 1e-6), -0.5 / (0.5 + 1e-6), 0.0]])


ALL = [sh.raw_advantages, sh.mean_shifted_advantages, sh.dr_grpo_advantages,
       sh.grpo_advantages, sh.rloo_advantages, sh.reinforce_pp_advantages]
_JIT = {fn: jax.jit(fn) for fn in ALL}


@pytest.mark.parametrize("fn", ALL)
def test_jit_and_vmap(fn):
    assert_close(_JIT[fn](R), fn(R))
    if fn is not sh.reinforce_pp_advantages:  # batch-normalized by definition
        assert_close(jax.vmap(fn)(R[:, None, :])[:, 0], fn(R))


SHIFT_INVARIANT = [sh.mean_shifted_advantages, sh.dr_grpo_advantages, sh.grpo_advantages,
                   sh.rloo_advantages, sh.reinforce_pp_advantages]


@st.composite
def reward_batches(draw):
    g = draw(st.sampled_from([2, 5]))
    n = draw(st.sampled_from([1, 3]))
    kind = draw(st.sampled_from(["binary", "real"]))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    r = rng.integers(0, 2, (n, g)).astype(float) if kind == "binary" else rng.normal(size=(n, g))
    shift = np.array(draw(st.lists(st.floats(-5, 5), min_size=n, max_size=n)))
    return r, shift


@given(reward_batches())
def test_per_group_shift_invariance(batch):
    """Every baseline with a group-mean baseline is invariant to r -> r + c_group."""
    r, c = batch
    for fn in SHIFT_INVARIANT:
        assert_close(_JIT[fn](r + c[:, None]), _JIT[fn](r), atol=1e-9, rtol=1e-7,
                     err_msg=fn.__name__)


@given(reward_batches())
def test_global_shift_invariance_reinforce_pp_without_group_baseline(batch):
    r, c = batch
    assert_close(_RPP_GLOBAL(r + c[0]), _RPP_GLOBAL(r), atol=1e-9, rtol=1e-7)


_RPP_GLOBAL = jax.jit(functools.partial(sh.reinforce_pp_advantages, group_baseline=False))


def test_raw_is_not_shift_invariant():
    assert not np.allclose(sh.raw_advantages(R + 1.0), sh.raw_advantages(R))


@pytest.mark.parametrize("fn", ALL)
def test_bad_input(fn):
    with pytest.raises(ValueError, match="G must be >= 2"):
        fn(np.ones((3, 1)))
    with pytest.raises(ValueError, match="shape"):
        fn(R, np.ones((3, 3), bool))
    with pytest.raises(ValueError, match="finite"):
        fn(np.array([[1.0, np.inf]]))
    with pytest.raises(ValueError, match="at least 2 valid"):
        fn(R, np.array([[True, False, False, False]] + [[True] * 4] * 2))
    with pytest.raises(ValueError, match="scalar"):
        fn(np.float64(1.0))


def test_bad_input_under_jit():
    with pytest.raises(Exception, match="rewards must be finite"):
        # the error travels with the result: it is raised where the result is waited for (at once
        # on a 1-device CPU, later on an asynchronous backend: a GPU, a multi-device program)
        jax.block_until_ready(_JIT[sh.grpo_advantages](jnp.array([[1.0, jnp.nan]])))
