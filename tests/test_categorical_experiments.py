"""Group-size regimes of the categorical simulator at small scale (F-GRPO Fig. 4, §5.1), and
the sweep engine that runs them for the ``categorical-*`` experiments.

Thresholds are the qualitative statements of F-GRPO §5.1 (regime I: M_ret high, Q_pos slow;
II: Q_pos → 1 while M_ret collapses; III: both high; γ = 1 raises M_ret in II), not numbers
produced by the code under test. Policy: App. J logits (5 / 3 / 0) on A = 2,000 actions.
"""

import jax
import optax
import pytest
from helpers import assert_close

from simplexlab import sim as C
from simplexlab import sweep

POL = C.CategoricalPolicy(num_actions=2_000, num_correct=156)


def _final(n, optimizer, surrogate, lr, steps=100):
    ds = sweep.run("categorical", {"focal_gamma": [0.0, 1.0]},
                   fixed={"num_actions": POL.num_actions, "num_correct": POL.num_correct,
                          "group_size": n, "optimizer": optimizer, "surrogate": surrogate,
                          "eta": lr, "num_steps": steps, "stride": steps},
                   keys=jax.random.key(3)[None], progress=False)
    q, m = ds.q_pos.values[:, 0], ds.m_ret.values[:, 0]
    return q[:, -1], m[:, -1], float(q[0, 0])


def test_three_regimes_and_focal_gain_at_small_scale():
    q0 = None
    res = {}
    for n in (2, 32, 8192):  # leaf 3.9e-3: tail-miss 0.46, 0.9, ~0 (Lemma 3.1)
        q, m, q0 = _final(n, "adam", "log_likelihood", 0.1)
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
        q, m, q0 = _final(n, "sgd", "probability", 1e-2)
        assert abs(q[0] - q0) < 1e-3 and m[0] > 0.999


def test_sweep_equals_run_per_configuration():
    """Every run of a sweep (array parameters batched, seeds paired) equals the unbatched
    ``run`` of its configuration with its key: 1e-12 (``lax.map``) and bit for bit here."""
    keys = jax.random.split(jax.random.key(5), 2)
    lrs, gammas = [0.01, 0.1, 0.05], [0.0, 1.0]
    ds = sweep.run("categorical", {"eta": lrs, "focal_gamma": gammas},
                   fixed={"num_actions": POL.num_actions, "num_correct": POL.num_correct,
                          "group_size": 16, "optimizer": "adam", "surrogate": "log_likelihood",
                          "num_steps": 6, "stride": 3}, keys=keys, progress=False)
    run = jax.jit(C.categorical_run, static_argnames=("num_steps", "stride"))
    for i, lr in enumerate(lrs):
        for j, g in enumerate(gammas):
            for s in range(2):
                one = C.CategoricalConfig(policy=POL, group_size=16, optimizer=optax.adam,
                                          surrogate="log_likelihood", eta=lr,
                                          focal_gamma=g)
                _, m = run(one, keys[s], 6, 3)
                for name in ("q_pos", "m_ret", "entropy", "anchor", "num_above"):
                    assert_close(ds[name].values[i, j, s], getattr(m, name), rtol=1e-12,
                                 atol=1e-14, err_msg=name)


@pytest.mark.parametrize("kw", [dict(eta=[0.1, -1.0]),
                                dict(eta=[0.1, float("nan")]),
                                dict(focal_gamma=[0.0, -1.0])])
def test_sweep_bad_values_refused_before_compute(kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        sweep.run("categorical", kw, fixed={"num_actions": 30, "num_correct": 3,
                                            "group_size": 4, "num_steps": 2}, progress=False)
