"""Group-size regimes of the categorical simulator at small scale (F-GRPO Fig. 4, §5.1), and
the batched runner ``run_many`` used by the ``categorical-*`` experiments.

Thresholds are the qualitative statements of F-GRPO §5.1 (regime I: M_ret high, Q_pos slow;
II: Q_pos → 1 while M_ret collapses; III: both high; γ = 1 raises M_ret in II), not numbers
produced by the code under test. Policy: App. J logits (5 / 3 / 0) on A = 2,000 actions.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from helpers import assert_close

from simplexlab import categorical as C

POL = C.CategoricalPolicy(num_actions=2_000, num_correct=156)


def _final(n, optimizer, surrogate, lr, steps=100):
    cfg = C.CategoricalConfig(policy=POL, group_size=n, optimizer=optimizer,
                              surrogate=surrogate, learning_rate=lr)
    key = jax.random.key(3)
    m = C.run_many(cfg, jnp.stack([key, key]), num_steps=steps, stride=steps,
                   focal_gammas=jnp.asarray([0.0, 1.0]))
    return np.asarray(m.q_pos[:, -1]), np.asarray(m.m_ret[:, -1]), float(m.q_pos[0, 0])


def test_three_regimes_and_focal_gain_at_small_scale():
    q0 = None
    res = {}
    for n in (2, 32, 8192):  # leaf 3.9e-3: tail-miss 0.46, 0.9, ~0 (Lemma 3.1)
        q, m, q0 = _final(n, optax.adam, "log_likelihood", 0.1)
        res[n] = (q, m)
    (q_i, m_i), (q_ii, m_ii), (q_iii, m_iii) = res[2], res[32], res[8192]
    assert m_i[0] > 0.8 and q_i[0] < q_ii[0]          # I: diversity kept, slow Q_pos
    assert q_ii[0] > 0.9 and m_ii[0] < 0.5            # II: concentration
    assert q_iii[0] > 0.9 and m_iii[0] > 0.9          # III: both high
    assert m_ii[1] > m_ii[0]                          # focal γ = 1 retains more in II
    assert all(r[0][0] > q0 for r in res.values())    # Q_pos grows for every N


def test_literal_app_j_reading_leaves_policy_unchanged():
    """SGD, lr 1e-2, probability-linear surrogate, mean over the group: the logit step is
    ~ lr π² per step, so Q_pos and M_ret do not move at the 1e-3 level."""
    for n in (2, 64, 4096):
        q, m, q0 = _final(n, optax.sgd, "probability", 1e-2)
        assert abs(q[0] - q0) < 1e-3 and m[0] > 0.999


def test_run_many_equals_run_per_configuration():
    cfg = C.CategoricalConfig(policy=POL, group_size=16, optimizer=optax.adam,
                              surrogate="log_likelihood")
    keys = jax.random.split(jax.random.key(5), 3)
    lrs, gammas = jnp.asarray([0.01, 0.1, 0.05]), jnp.asarray([0.0, 1.0, 0.5])
    batched = C.run_many(cfg, keys, num_steps=6, stride=3, learning_rates=lrs,
                         focal_gammas=gammas)
    for i in range(3):
        one = C.CategoricalConfig(policy=POL, group_size=16, optimizer=optax.adam,
                                  surrogate="log_likelihood", learning_rate=float(lrs[i]),
                                  focal_gamma=float(gammas[i]))
        _, m = jax.jit(C.run, static_argnames=("num_steps", "stride"))(one, keys[i], 6, 3)
        for a, b in zip(batched, m, strict=True):
            assert_close(np.asarray(a)[i], b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kw", [dict(learning_rates=jnp.asarray([0.1, -1.0])),
                                dict(learning_rates=jnp.asarray([0.1, jnp.nan])),
                                dict(focal_gammas=jnp.asarray([0.0, -1.0]))])
def test_run_many_bad_input(kw):
    cfg = C.CategoricalConfig(policy=POL, group_size=4)
    with pytest.raises(ValueError):
        C.run_many(cfg, jax.random.split(jax.random.key(0), 2), num_steps=2, **kw)
