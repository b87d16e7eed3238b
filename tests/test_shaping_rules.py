"""F-GRPO, IAC, GRPO-N, compositions, GRPO-TN (TS App. C.5 worked example), ProGRPO."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close

from simplexlab import shaping as sh

ALL4 = np.array(list(itertools.product([0.0, 1.0], repeat=4)))  # every binary group, G = 4


def _grpo_np(r, eps=1e-6):
    return (r - r.mean()) / (r.std() + eps)


@pytest.mark.parametrize("gamma", [0.0, 0.5, 2.0])
def test_focal_weight_enumerated(gamma):
    out = jax.jit(lambda r: sh.f_grpo(gamma)(r))(ALL4)
    for row, r in enumerate(ALL4):
        c = int(r.sum())
        g = 1.0 if gamma == 0 else (1 - c / 4) ** gamma  # FG eq. 15 by hand
        assert_close(out[row], g * _grpo_np(r))


@pytest.mark.parametrize("alpha", [0.0, 1.0, 0.5])
def test_iac_enumerated(alpha):
    out = jax.jit(lambda r: sh.Pipeline(transforms=(sh.IAC(alpha=alpha),))(r))(ALL4)
    for row, r in enumerate(ALL4):
        a = _grpo_np(r)
        npos = int((a > 0).sum())
        exp = np.array([x * (4 - npos) ** alpha if x > 0 else x for x in a])  # SC §3.1
        assert_close(out[row], exp)
    # e.g. one success of four, α = 1: positive advantage × 3, negatives unchanged
    if alpha == 1.0:
        r = np.array([1.0, 0.0, 0.0, 0.0])
        assert_close(sh.iac_advantages(sh.grpo_advantages(r), r, alpha=1.0),
                     np.array([3 * 0.75, -0.25, -0.25, -0.25]) / (math.sqrt(3) / 4 + 1e-6))


def test_grpo_n_and_compositions():
    r = np.array([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 0.0]])
    a = np.stack([_grpo_np(x) for x in r])
    assert_close(sh.grpo_n()(r), np.where(a < 0, a, 0.0))
    assert_close(sh.negative_only(np.array([[-1.0, 2.0], [0.0, -3.0]])), [[-1.0, 0.0], [0, -3]])
    keep = np.array([True, False, True])
    assert_close(sh.dapo_keep_mask(r), keep)
    assert_close(sh.dapo()(r), a * keep[:, None])
    g = (1 - r.mean(-1)) ** 0.5
    assert_close(sh.f_dapo(0.5)(r), a * g[:, None] * keep[:, None])
    npos = (a > 0).sum(-1)
    assert_close(sh.dapo_iac(1.0)(r), np.where(a > 0, a * (4 - npos)[:, None], a) * keep[:, None])


def test_rule_bad_input():
    r = np.array([1.0, 0.0, 0.5])
    with pytest.raises(ValueError, match=r"declared set \{0, 1\}"):
        sh.f_grpo(1.0)(r)
    with pytest.raises(ValueError, match="gamma"):
        sh.Focal(gamma=-1.0)
    with pytest.raises(ValueError, match="alpha"):
        sh.IAC(alpha=-0.5)
    with pytest.raises(ValueError, match="do not match"):
        sh.iac_advantages(np.zeros(4), np.zeros(3), alpha=1.0)
    with pytest.raises(ValueError, match="callable"):
        sh.Pipeline(transforms=(3,))


# --- GRPO-TN: TS App. C.5 worked example ------------------------------------------------------
# Sample 0: [A, B, C, D], Sample 1: [A, B, E, F], Sample 2: [A, G, H, I]; rewards 1, 0, 1.
TOK = np.array([[0, 1, 2, 3], [0, 1, 4, 5], [0, 6, 7, 8]])
R3 = np.array([1.0, 0.0, 1.0])
PAPER = np.array([[0.707, 0.353, 1.768, 1.768],
                  [0.707, -1.768, -2.475, -2.475],
                  [0.707, 1.414, 1.414, 1.414]])
# Sample 1's first token is not reproducible (see grpo_tn_advantages docstring): eq. (5) gives
# (0 − 2/3 + δ_A)/std with δ_A = 0 shared by all three samples, i.e. −1.414.
REPRODUCIBLE = np.ones_like(PAPER, bool)
REPRODUCIBLE[1, 0] = False


def test_grpo_tn_worked_example_before_decay():
    out = np.asarray(sh.grpo_tn_advantages(R3, TOK, decay=1.0))
    # 3 decimals: the paper truncates (0.35355 is listed as 0.353)
    np.testing.assert_allclose(out[REPRODUCIBLE], PAPER[REPRODUCIBLE], atol=1e-3)
    assert_close(out[1, 0], -(2 / 3) / math.sqrt(2 / 9))
    assert abs(out[1, 0] - PAPER[1, 0]) > 2.0


def test_grpo_tn_decay_applies_to_named_subpaths():
    full = np.asarray(sh.grpo_tn_advantages(R3, TOK, decay=1.0))
    dec = np.asarray(jax.jit(sh.grpo_tn_advantages)(R3, TOK))
    decayed = np.zeros_like(full, bool)
    decayed[0, 2:] = True  # C, D in Sample 0
    decayed[2, 1:] = True  # G, H, I in Sample 2
    assert_close(dec[decayed], 0.1 * full[decayed])
    assert_close(dec[~decayed], full[~decayed])


def test_grpo_tn_prefix_response_and_ragged():
    # response 1 is a strict prefix of response 0; response 2 identical to 0 (no branch between)
    tok = np.array([[0, 1, 2], [0, 1, 9], [0, 1, 2], [5, 5, 5]])
    tm = np.array([[1, 1, 1], [1, 1, 0], [1, 1, 1], [1, 1, 1]], bool)
    r = np.array([1.0, 0.0, 1.0, 0.0])
    gm = np.array([True, True, True, False])  # 4th rollout masked out
    out = np.asarray(sh.grpo_tn_advantages(r, tok, tm, gm, decay=0.5))
    mu, sd = 2 / 3, math.sqrt(2 / 9)
    # tree: root -> 0 -> 1 -> {2 (two samples, r=1), end (r=0)}
    # V(0) = V(01) = 2/3, V(012) = 1; node "01" branches (end vs 2); node "0" does not.
    exp0 = np.array([(1 / 3 + 0) / sd, (1 / 3 + 0) / sd, (1 / 3 + 1 / 3) / sd])
    exp1 = np.array([(-2 / 3) / sd, (-2 / 3) / sd, 0.0])
    exp0[2] *= 0.5  # tail sub-path (no branch below), positive -> decayed
    assert_close(out[0], exp0)
    assert_close(out[2], exp0)
    assert_close(out[1], exp1)
    assert_close(out[3], 0.0)
    del mu


def test_grpo_tn_bad_input():
    with pytest.raises(ValueError, match="shape"):
        sh.grpo_tn_advantages(R3, TOK[:2])
    with pytest.raises(ValueError, match=">= 0"):
        sh.grpo_tn_advantages(R3, -TOK - 1)
    with pytest.raises(ValueError, match="decay"):
        sh.grpo_tn_advantages(R3, TOK, decay=2.0)


# --- ProGRPO -----------------------------------------------------------------------------------
def _conf_np(lp, frac=0.2):
    k = max(1, math.ceil(frac * len(lp)))
    return math.exp(np.sort(lp)[:k].mean())


def test_progrpo_hand_computation_and_skip():
    rng = np.random.default_rng(0)
    G, T, Tq = 4, 10, 7
    lp_a = np.log(rng.uniform(0.05, 1.0, (3, G, T)))
    lp_q = np.log(rng.uniform(0.05, 1.0, (3, Tq)))
    am = np.ones((3, G, T), bool)
    am[0, 1, 6:] = False  # ragged answer: 6 tokens -> ceil(1.2) = 2 low tokens
    r = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    out = jax.jit(lambda *a: sh.progrpo_advantages(*a, alpha=0.7))(r, lp_a, lp_q, am)
    for g in range(3):
        a = _grpo_np(r[g])
        if 0 < r[g].sum() < G:
            cq = _conf_np(lp_q[g])
            co = np.array([_conf_np(lp_a[g, i][am[g, i]]) for i in range(G)])
            a = a + 0.7 * (cq - co)  # PG eq. (4)
        assert_close(out[g], a)  # all-correct / all-wrong groups skipped (PG Alg. 1 line 14)
    assert_close(sh.low_prob_confidence(np.log([0.5, 0.9, 0.99, 0.1, 0.95])), 0.1)
    # PG eq. (4) read literally: only the all-wrong group is skipped; the all-correct one gets
    # the pure confidence term (its z-scores are 0)
    eq4 = sh.progrpo_advantages(r, lp_a, lp_q, am, alpha=0.7, all_correct=True)
    assert_close(eq4[0], out[0])
    assert_close(eq4[2], out[2])
    co = np.array([_conf_np(lp_a[1, i]) for i in range(G)])
    assert_close(eq4[1], 0.7 * (_conf_np(lp_q[1]) - co))
    traced = jax.jit(lambda f: sh.progrpo_advantages(r, lp_a, lp_q, am, alpha=0.7,
                                                     all_correct=f))
    assert_close(traced(1.0), eq4)
    assert_close(traced(0.0), out)


def test_progrpo_bad_input():
    r = np.array([1.0, 0.0])
    with pytest.raises(ValueError, match="<= 0"):
        sh.progrpo_advantages(r, np.ones((2, 3)), np.zeros(3), alpha=1.0)
    with pytest.raises(ValueError, match="answer_logprobs"):
        sh.progrpo_advantages(r, np.zeros((3, 3)), np.zeros(3), alpha=1.0)
    with pytest.raises(ValueError, match="fraction"):
        sh.low_prob_confidence(np.zeros(3), fraction=0.0)
    with pytest.raises(Exception, match="finite"):
        # raised where the result is waited for (asynchronous backends)
        jax.block_until_ready(jax.jit(sh.low_prob_confidence)(jnp.array([0.0, jnp.nan])))


def test_groups_need_modes_only_for_the_rules_that_cluster():
    """``Groups(rewards)`` is enough for every rule that declares no need of mode ids (the same
    advantages as with any modes given); a rule that clusters (G²RPO) refuses ``modes=None`` by
    name instead of failing inside JAX."""
    import jax.numpy as jnp

    from simplexlab.shaping import METHODS, Groups, advantages

    rewards = jnp.array([[1, 0, 1, 0, 0, 1], [0, 0, 1, 1, 1, 0]])
    modes = jnp.array([[0, 3, 1, 3, 4, 0], [4, 3, 2, 2, 1, 3]])
    logp = -jnp.linspace(0.5, 3.0, 12).reshape(2, 6)
    for name, m in METHODS.items():
        if m.modes:
            with pytest.raises(ValueError, match=f"'{name}' needs each rollout's mode id"):
                advantages(name, Groups(rewards, logp=logp))
            continue
        without = advantages(name, Groups(rewards, logp=logp))
        with_modes = advantages(name, Groups(rewards, modes, logp=logp))
        assert jnp.array_equal(without, with_modes), name
    assert any(m.modes for m in METHODS.values())
