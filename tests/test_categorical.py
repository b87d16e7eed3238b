"""Categorical policy simulator (F-GRPO §5.1, App. J; TS Lemma 1).

References are independent of the code under test: ``jax.grad`` of the explicit per-sample
surrogate over a list of sampled actions (advantages from the shaping function on the unsorted
reward vector, focal weight coded by hand); chi-square against the exact multinomial law
(``scipy.stats``); TS Lemma 1 and F-GRPO eq. 7 (``simplexlab.theory.logit_update``, itself
tested against an independent eq. 7) for one update; metrics recomputed with NumPy.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from helpers import assert_close
from scipy import stats

from simplexlab import shaping as SH
from simplexlab import sim as C
from simplexlab import sweep
from simplexlab import theory as S

SMALL = C.CategoricalPolicy(num_actions=30, num_correct=8, anchor_logit=2.0, correct_logit=1.0,
                            incorrect_logit=0.0)
run_jit = jax.jit(C.categorical_run, static_argnames=("num_steps", "stride"))


# ---------------------------------------------------------------------------------------------
# count-form gradient == jax.grad of the explicit per-sample surrogate
# ---------------------------------------------------------------------------------------------

METHODS = {
    "mean_shifted": (SH.mean_shifted_advantages, 0.0),
    "grpo": (SH.grpo_advantages, 0.0),
    "rloo": (SH.rloo_advantages, 0.0),
    "raw": (SH.raw_advantages, 0.0),
    "focal_mean_shifted": (SH.mean_shifted_advantages, 1.0),
    "focal_grpo_half": (SH.grpo_advantages, 0.5),
    "iac": (SH.Pipeline(transforms=(SH.IAC(alpha=1.0),)), 0.0),
    "grpo_n": (SH.grpo_n(), 0.0),
}


def _explicit_grad(z, actions, policy, method, gamma, surrogate, reduction):
    """jax.grad of s g Σ_j Â_j f(π(a_j)) over the explicit list of rollouts."""
    n = len(actions)
    correct = actions < policy.num_correct
    rewards = np.where(correct, policy.r_correct, policy.r_wrong)
    adv = np.asarray(method(jnp.asarray(rewards)[None]))[0]
    g = 1.0 if gamma == 0 else (1.0 - correct.sum() / n) ** gamma
    s = 1.0 / n if reduction == "mean" else 1.0
    idx = jnp.asarray(actions)

    def loss(zz):
        p = jax.nn.softmax(zz)[idx]
        f = p if surrogate == "probability" else jnp.log(p)
        return s * g * jnp.sum(jnp.asarray(adv) * f)

    return jax.grad(loss)(z)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_count_gradient_equals_grad_of_per_sample_surrogate(rng, name):
    method, gamma = METHODS[name]
    a, k = SMALL.num_actions, SMALL.num_correct
    for n, kind in [(7, "mixed"), (5, "all_correct"), (5, "all_wrong"), (2, "mixed")]:
        if kind == "all_correct":
            actions = rng.integers(0, k, n)
        elif kind == "all_wrong":
            actions = rng.integers(k, a, n)
        else:  # a few repeated actions and both rewards present
            actions = rng.integers(0, 12, n)
            actions[0], actions[1] = 0, a - 1
            rng.shuffle(actions)
        z = jnp.asarray(rng.normal(size=a) * 2.0)
        counts = jnp.asarray(np.bincount(actions, minlength=a))
        for surrogate in ("probability", "log_likelihood"):
            for reduction in ("mean", "sum"):
                cfg = C.CategoricalConfig(policy=SMALL, group_size=n, advantage=method,
                                          focal_gamma=gamma, surrogate=surrogate,
                                          reduction=reduction)
                w, kk = C.count_weights(cfg, counts)
                assert int(kk) == int((actions < k).sum())
                got = C.count_gradient(z, w, surrogate)
                want = _explicit_grad(z, actions, SMALL, method, gamma, surrogate, reduction)
                assert_close(got, want, rtol=1e-10, atol=1e-13,
                             err_msg=f"{name} {kind} n={n} {surrogate} {reduction}")


def test_count_gradient_agrees_with_fgrpo_eq7_logit_update(rng):
    """Probability-linear surrogate, raw rewards, mean over N, distinct draws: η ∇L is eq. (7)."""
    a = SMALL.num_actions
    correct = np.asarray(SMALL.correct_mask())
    for _ in range(5):
        n = 9
        sampled = np.zeros(a, bool)
        sampled[rng.permutation(a)[:n]] = True
        z = jnp.asarray(rng.normal(size=a))
        cfg = C.CategoricalConfig(policy=SMALL, group_size=n, advantage=SH.raw_advantages,
                                  surrogate="probability", reduction="mean")
        w, _ = C.count_weights(cfg, jnp.asarray(sampled.astype(np.int64)))
        eta = 0.37
        got = eta * C.count_gradient(z, w, "probability")
        want = S.logit_update(jax.nn.softmax(z), jnp.asarray(correct), jnp.asarray(sampled), n, eta)
        assert_close(got, want, rtol=1e-10, atol=1e-15)


def test_simulator_step_agrees_with_fgrpo_eq7():
    """One SGD step with counts all <= 1 moves the logits by eq. (7) (F-GRPO §2.3)."""
    pol = C.CategoricalPolicy(num_actions=200, num_correct=50, anchor_logit=0.5,
                              correct_logit=0.2, incorrect_logit=0.0)
    eta, n = 0.3, 4
    cfg = C.CategoricalConfig(policy=pol, group_size=n, advantage=SH.raw_advantages,
                              surrogate="probability", reduction="mean",
                              optimizer=optax.sgd, eta=eta)
    done = 0
    step = jax.jit(C.categorical_step)
    for seed in range(20):
        s0 = C.categorical_init(cfg, jax.random.key(seed))
        s1 = step(cfg, s0)
        delta = np.asarray(s1.logits - s0.logits)
        counts = np.asarray(C.sample_counts(jax.random.split(s0.key)[1], s0.logits, n))
        if counts.max() > 1:
            continue
        want = S.logit_update(s0.probs0, pol.correct_mask(), jnp.asarray(counts > 0), n, eta)
        assert_close(delta, want, rtol=1e-9, atol=1e-15)
        done += 1
    assert done >= 5


# ---------------------------------------------------------------------------------------------
# TS Lemma 1: N = 1, raw reward, log-likelihood surrogate, SGD
# ---------------------------------------------------------------------------------------------


def test_one_step_n1_is_ts_lemma1():
    eta = 0.25
    cfg = C.CategoricalConfig(policy=SMALL, group_size=1, advantage=SH.raw_advantages,
                              surrogate="log_likelihood", reduction="mean",
                              optimizer=optax.sgd, eta=eta)
    z0 = np.asarray(SMALL.initial_logits())
    pi = np.exp(z0) / np.exp(z0).sum()
    seen = set()
    step = jax.jit(C.categorical_step)
    for seed in range(12):
        s0 = C.categorical_init(cfg, jax.random.key(seed))
        s1 = step(cfg, s0)
        counts = np.asarray(C.sample_counts(jax.random.split(s0.key)[1], s0.logits, 1))
        assert counts.sum() == 1
        v = int(np.argmax(counts))
        adv = SMALL.r_correct if v < SMALL.num_correct else SMALL.r_wrong
        seen.add(adv)
        want = z0 + eta * adv * (-pi)                    # z_u ← z_u + η Â(v) (−π(u)), u ≠ v
        want[v] = z0[v] + eta * adv * (1.0 - pi[v])      # z_v ← z_v + η Â(v) (1 − π(v))
        assert_close(s1.logits, want, rtol=1e-12, atol=1e-14)
        assert int(s1.batch_correct) == int(v < SMALL.num_correct)
    assert seen == {SMALL.r_correct, SMALL.r_wrong}


# ---------------------------------------------------------------------------------------------
# Sampler: exactly multinomial
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["tree", "parallel"])
def test_sampler_joint_law_is_multinomial_chi_square(method):
    """Joint law of the count vector (A = 3, N = 4: 15 compositions) vs the exact pmf."""
    logits = jnp.asarray([0.3, -0.4, 1.1])
    p = np.asarray(jax.nn.softmax(logits))
    n, reps = 4, 20_000
    keys = jax.random.split(jax.random.key(7), reps)
    counts = np.asarray(jax.jit(jax.vmap(lambda k: C.sample_counts(k, logits, n, method)))(
        keys))
    assert (counts.sum(1) == n).all()
    comps = [(i, j, n - i - j) for i in range(n + 1) for j in range(n + 1 - i)]
    index = {c: t for t, c in enumerate(comps)}
    obs = np.bincount([index[tuple(c)] for c in counts], minlength=len(comps))
    exp = reps * np.array([stats.multinomial.pmf(c, n, p) for c in comps])
    assert_close(exp.sum(), reps, rtol=1e-12)
    assert stats.chisquare(obs, exp).pvalue > 1e-3


def test_sampler_marginals_chi_square_and_zero_mass(rng):
    a, n = 200, 200_000
    z = rng.normal(size=a)
    z[5] = -np.inf  # zero probability: never drawn
    counts = np.asarray(C.sample_counts(jax.random.key(3), jnp.asarray(z), n))
    assert counts.shape == (a,) and counts.sum() == n and counts[5] == 0
    p = np.exp(z - z[np.isfinite(z)].max())
    p /= p.sum()
    keep = p > 0
    assert stats.chisquare(counts[keep], n * p[keep]).pvalue > 1e-3


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("method", ["tree", "parallel", "cdf"])
def test_sampler_methods_marginals_and_zero_mass(rng, method, dtype):
    """Both count samplers (block tree: A = 5000 gives three levels, with a whole zero-mass
    block, zero-mass first and last actions, and a tiny-mass action; global CDF) against the
    exact marginals, and with zero-probability actions never drawn."""
    from simplexlab.sim._sampler import counts_from_weights as _counts_from_weights

    a, n, reps = 5000, 4096, 50
    z = rng.normal(size=a)
    r_len = -(-a // 64)
    z[3::r_len] = -np.inf  # every entry of one strided level-0 block
    z[[0, a - 1, 17]] = -np.inf
    z[40] = -30.0  # tiny but positive mass
    p = jax.nn.softmax(jnp.asarray(z, dtype))
    keys = jax.random.split(jax.random.key(11), reps)
    counts = np.asarray(jax.jit(jax.vmap(lambda k: _counts_from_weights(k, p, n, method)))(keys))
    assert (counts.sum(1) == n).all()
    total = counts.sum(0)
    pn = np.asarray(p, float)
    assert total[pn == 0].sum() == 0
    pn = pn / pn.sum()
    # pool actions into 100 bins of ~50 actions so that every expected count is large
    bins = np.arange(a) % 100
    obs = np.bincount(bins, weights=total, minlength=100)
    exp = np.bincount(bins, weights=pn * n * reps, minlength=100)
    assert stats.chisquare(obs, exp).pvalue > 1e-3
    top = np.argsort(pn)[-20:]  # the largest individual actions
    assert stats.chisquare(np.append(total[top], n * reps - total[top].sum()),
                           np.append(pn[top] * n * reps, n * reps * (1 - pn[top].sum()))
                           ).pvalue > 1e-3


def test_sampler_tree_and_cdf_agree_on_app_j_policy():
    """At A = 128,000 (App. J policy) the samplers give counts with the same law: correct-set
    counts k ~ Binomial(N, Q_pos) (mean and variance)."""
    from simplexlab.sim._sampler import counts_from_weights as _counts_from_weights

    pol = C.CategoricalPolicy()
    p = jax.nn.softmax(pol.initial_logits())
    q = float(jnp.sum(p[: pol.num_correct]))
    n, reps = 64, 400
    keys = jax.random.split(jax.random.key(5), reps)
    for method in ("tree", "parallel", "cdf"):
        c = jax.jit(jax.vmap(lambda k, m=method: _counts_from_weights(k, p, n, m)))(keys)
        k = np.asarray(c[:, : pol.num_correct].sum(1))
        assert (np.asarray(c).sum(1) == n).all()
        # mean of k: Binomial(n, q) -> z-test at 5 sigma; its variance n q (1 - q) within 25%
        assert abs(k.mean() - n * q) < 5 * np.sqrt(n * q * (1 - q) / reps)
        assert abs(k.var() / (n * q * (1 - q)) - 1) < 0.25


def test_parallel_sampler_draws_what_the_tree_draws_and_no_loop():
    """float64: the parallel form of the tree maps every uniform to the tree's action (the
    prefix sums differ only in rounding), through a compiled program without a loop of its own
    (the tree has a prefix-sum loop per level and a search loop per level below the top), and
    ``num_valid`` counts exactly the first draws."""
    import re

    from simplexlab.sim._sampler import counts_from_weights as _counts_from_weights

    e = jnp.exp(jax.random.normal(jax.random.key(0), (5000,), jnp.float64)).at[::7].set(0.0)
    keys = jax.random.split(jax.random.key(1), 8)
    tree, par = (jax.jit(jax.vmap(lambda k, m=m: _counts_from_weights(k, e, 512, m)))(keys)
                 for m in ("tree", "parallel"))
    np.testing.assert_array_equal(np.asarray(tree), np.asarray(par))
    assert int(np.asarray(par)[:, ::7].sum()) == 0

    def loops(m):
        hlo = jax.jit(lambda k: _counts_from_weights(k, e, 512, m)).lower(
            jax.random.key(0)).compile().as_text()
        return len(re.findall(r"\bwhile\(", hlo))
    # 5000 actions: a three-level tree, a prefix-sum loop per level and a search loop per level
    # below the top (whose one block is searched by a count); the key's own loop is in both
    assert loops("tree") - loops("parallel") == 5
    few = jax.jit(jax.vmap(lambda k, v: _counts_from_weights(k, e, 512, num_valid=v)))(
        keys[:3], jnp.asarray([512, 100, 0]))
    first = jax.jit(jax.vmap(lambda k: _counts_from_weights(k, e, 100)))(keys[:3])
    np.testing.assert_array_equal(np.asarray(few[1]), np.asarray(first[1]))
    np.testing.assert_array_equal(np.asarray(few).sum(1), [512, 100, 0])
    with pytest.raises(ValueError, match="num_valid"):
        _counts_from_weights(keys[0], e, 16, num_valid=17)
    with pytest.raises(ValueError, match="method"):
        _counts_from_weights(keys[0], e, 16, "bogus")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_hashed_uniforms_are_uniform_and_independent(dtype):
    """The sampler's counter-hash uniforms: in [0, 1), uniform (Kolmogorov-Smirnov), consecutive
    pairs uniform on a 16 x 16 grid (chi-square), and streams of different keys uncorrelated."""
    from simplexlab.sim._sampler import uniforms as _uniforms

    n = 200_000
    u = np.asarray(_uniforms(jax.random.key(0), n, jnp.dtype(dtype)), float)
    v = np.asarray(_uniforms(jax.random.key(1), n, jnp.dtype(dtype)), float)
    assert u.dtype == np.float64 and (u >= 0).all() and (u < 1).all()
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    pairs = np.floor(u[: n - 1 : 2] * 16) * 16 + np.floor(u[1::2] * 16)
    obs = np.bincount(pairs.astype(int), minlength=256)
    assert stats.chisquare(obs).pvalue > 1e-3
    assert abs(np.corrcoef(u, v)[0, 1]) < 5 / np.sqrt(n)
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 5 / np.sqrt(n)


@pytest.mark.parametrize("method", ["tree", "parallel"])
@pytest.mark.parametrize("a", [2, 63, 64, 65, 4096, 4097])
def test_tree_sampler_at_block_boundaries(rng, a, method):
    """The block tree at sizes around powers of its fan-out 64 (one level, a padded level, an
    exact 64 x 64 tree, one action more), from unnormalized weights: exact marginals."""
    from simplexlab.sim._sampler import counts_from_weights as _counts_from_weights

    n, reps = 2048, 40
    e = np.exp(rng.normal(size=a)) * 1e3
    keys = jax.random.split(jax.random.key(a), reps)
    counts = np.asarray(jax.jit(jax.vmap(
        lambda k: _counts_from_weights(k, jnp.asarray(e), n, method)))(keys))
    assert (counts.sum(1) == n).all() and counts.shape == (reps, a)
    bins = np.arange(a) % min(a, 50)
    obs = np.bincount(bins, weights=counts.sum(0))
    exp = np.bincount(bins, weights=e / e.sum() * n * reps)
    assert stats.chisquare(obs, exp).pvalue > 1e-3


# ---------------------------------------------------------------------------------------------
# Metrics and initial policy
# ---------------------------------------------------------------------------------------------


def test_default_policy_matches_fgrpo_app_j():
    pol = C.CategoricalPolicy()
    z = np.where(np.arange(128_000) < 10_000, 3.0, 0.0)
    z[0] = 5.0
    assert_close(pol.initial_logits(), z, rtol=0, atol=0)
    p = np.exp(z) / np.exp(z).sum()
    assert abs(p[:10_000].sum() - 0.63) < 0.005
    assert abs(p[0] - 4.7e-4) < 0.05e-4 and abs(p[1] - 6.3e-5) < 0.05e-5


def test_metrics_equal_direct_computation(rng):
    cfg = C.CategoricalConfig(policy=SMALL, group_size=4)
    s = C.categorical_init(cfg, jax.random.key(0))
    z = np.asarray(s.logits) + rng.normal(size=SMALL.num_actions)
    s = s._replace(logits=jnp.asarray(z), step=jnp.asarray(17, jnp.int32))
    m = C.categorical_metrics(cfg, s)
    z0 = np.asarray(SMALL.initial_logits())
    p0, p = np.exp(z0) / np.exp(z0).sum(), np.exp(z) / np.exp(z).sum()
    k = SMALL.num_correct
    assert_close(m.q_pos, p[:k].sum())
    assert_close(m.m_ret, 1 - np.maximum(0, p0[:k] - p[:k]).sum() / p0[:k].sum())  # eq. 26
    assert_close(m.entropy, -(p * np.log(p)).sum())
    assert_close(m.anchor, p[0])
    assert int(m.num_above) == int((p[:k] > p0[:k]).sum())
    assert int(m.step) == 17
    m0 = C.categorical_metrics(cfg, C.categorical_init(cfg, jax.random.key(0)))
    assert_close(m0.m_ret, 1.0) and int(m0.num_above) == 0


# ---------------------------------------------------------------------------------------------
# run: strided recording, jit/vmap over seeds, learning rate and gamma
# ---------------------------------------------------------------------------------------------


def test_strided_recording_subsamples_the_full_trajectory():
    cfg = C.CategoricalConfig(policy=SMALL, group_size=6, eta=jnp.asarray(0.5))
    key = jax.random.key(1)
    f1, m1 = run_jit(cfg, key, num_steps=12, stride=1)
    f4, m4 = run_jit(cfg, key, num_steps=12, stride=4)
    assert m1.q_pos.shape == (13,) and m4.q_pos.shape == (4,)
    assert_close(f1.logits, f4.logits, rtol=0, atol=0)
    for a, b in zip(m1, m4, strict=True):
        assert_close(np.asarray(a)[::4], b, rtol=0, atol=0)
    assert_close(m4.step, [0, 4, 8, 12], rtol=0, atol=0)
    assert np.ptp(np.asarray(m1.q_pos)) > 0  # the policy moves


def test_vmap_over_seeds_eta_and_gamma_equals_loop():
    optimizer = optax.adam  # under the suite's strict dtype promotion
    base = C.CategoricalConfig(policy=SMALL, group_size=5, optimizer=optimizer,
                               advantage=SH.grpo_advantages, surrogate="log_likelihood")
    keys = jax.random.split(jax.random.key(2), 3)
    lrs = jnp.asarray([0.05, 0.2, 1.0])
    gammas = jnp.asarray([0.0, 1.0, 0.5])

    def one(key, lr, gamma):
        cfg = eqx.tree_at(lambda c: (c.eta, c.focal_gamma), base, (lr, gamma))
        return C.categorical_run(cfg, key, num_steps=6, stride=3)

    batched = jax.jit(jax.vmap(one))(keys, lrs, gammas)
    for i in range(3):
        cfg = C.CategoricalConfig(policy=SMALL, group_size=5, optimizer=optimizer,
                                  advantage=SH.grpo_advantages, surrogate="log_likelihood",
                                  eta=lrs[i], focal_gamma=gammas[i])
        # eta, gamma traced and the group size static, as in `one` (a traced group size pads
        # the group: GRPO's std then rounds differently, test_padded_group_equals_unpadded)
        single = eqx.filter_jit(
            lambda c, k: C.categorical_run(c, k, num_steps=6, stride=3))(cfg, keys[i])
        for a, b in zip(jax.tree_util.tree_leaves(batched), jax.tree_util.tree_leaves(single),
                        strict=True):
            if jnp.issubdtype(b.dtype, jax.dtypes.prng_key):
                a, b = jax.random.key_data(a), jax.random.key_data(b)
            assert_close(np.asarray(a)[i], b, rtol=1e-12, atol=1e-14)
    assert not np.allclose(batched[1].q_pos[0], batched[1].q_pos[1])


def test_one_compilation_per_group_size_bound():
    traced = []

    def f(cfg, key):
        traced.append(cfg.max_group_size)
        return C.categorical_run(cfg, key, num_steps=1, stride=1)[1].q_pos

    jf = jax.jit(f)
    for bound, n in ((8, 2), (8, 5), (4, 4), (8, 8), (4, 3)):
        for lr in (0.1, 0.3):
            jf(C.CategoricalConfig(policy=SMALL, group_size=n, max_group_size=bound,
                                   eta=jnp.asarray(lr)), jax.random.key(0))
    assert traced == [8, 4]


@pytest.mark.parametrize("advantage", ["mean_shifted", "grpo"])
def test_padded_group_equals_unpadded(advantage):
    """A group of N padded to a larger bound (traced N, masked draws and rewards) runs the
    unpadded group's trajectory: bit for bit with ±1 rewards and R − mean R at N = 4 (exact
    statistics); to rounding with GRPO's std at N = 5; and a sweep over N (one bucket) equals
    runs one N at a time."""
    kw = dict(policy=SMALL, optimizer=optax.adam, eta=0.2, surrogate="log_likelihood",
              advantage=C.CATEGORICAL_ADVANTAGES[advantage])
    n = 4 if advantage == "mean_shifted" else 5
    one = run_jit(C.CategoricalConfig(group_size=n, **kw), jax.random.key(3), 12, 4)[1]
    padded = run_jit(C.CategoricalConfig(group_size=n, max_group_size=16, **kw),
                     jax.random.key(3), 12, 4)[1]
    for a, b in zip(one, padded, strict=True):
        if advantage == "mean_shifted":
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        else:
            assert_close(np.asarray(b), np.asarray(a), rtol=1e-12, atol=1e-14)
    assert np.ptp(np.asarray(one.q_pos)) > 0
    with pytest.raises(ValueError, match="group_size must be"):
        C.CategoricalConfig(group_size=17, max_group_size=16, **kw)
    with pytest.raises(ValueError, match="group_size must be"):
        C.Categorical(config=C.CategoricalConfig(max_group_size=16, **kw)).check_params(
            {"group_size": 2.5})
    cfg = C.CategoricalConfig(group_size=n, max_group_size=16, **kw)
    traced = jax.jit(lambda g: C.categorical_run(eqx.tree_at(lambda c: c.group_size, cfg, g),
                                     jax.random.key(3), 2, 1)[1].q_pos)
    with pytest.raises(Exception, match="group_size must be"):
        jax.block_until_ready(traced(jnp.asarray(20)))


def test_adam_under_strict_promotion_matches_hand_coded_adam():
    """optax.adam (int32 step counter, Python-float betas) works under strict promotion and
    equals Adam written out by hand on the count-form gradient of the sampled groups."""
    assert jax.config.jax_numpy_dtype_promotion == "strict"
    lr, b1, b2, eps = 0.05, 0.9, 0.999, 1e-8
    cfg = C.CategoricalConfig(policy=SMALL, group_size=6, optimizer=optax.adam, eta=lr,
                              advantage=SH.grpo_advantages, surrogate="log_likelihood")
    s = C.categorical_init(cfg, jax.random.key(4))
    z = np.asarray(s.logits)
    m = np.zeros_like(z)
    v = np.zeros_like(z)
    step = jax.jit(C.categorical_step)
    moved = False
    for t in range(1, 5):
        counts = np.asarray(C.sample_counts(jax.random.split(s.key)[1], s.logits, 6))
        k = int(counts[:SMALL.num_correct].sum())
        r = np.where(np.arange(SMALL.num_actions) < SMALL.num_correct, 1.0, -1.0)
        mu = (2 * k - 6) / 6  # group mean of ±1 rewards
        sd = np.sqrt(max(0.0, 1 - mu * mu))
        adv = (r - mu) / (sd + 1e-6) if 0 < k < 6 else np.zeros_like(r)
        w = counts * adv / 6  # mean reduction
        pz = np.exp(z - z.max())
        pz /= pz.sum()
        g = -(w - pz * w.sum())  # descent direction of -L (log-likelihood surrogate)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat, vhat = m / (1 - b1**t), v / (1 - b2**t)
        z = z - lr * mhat / (np.sqrt(vhat) + eps)
        s = step(cfg, s)
        assert s.logits.dtype == jnp.float64
        assert_close(s.logits, z, rtol=1e-9, atol=1e-10, err_msg=f"step {t}")  # Σw ≈ 0: ε-level
        moved |= 0 < k < 6
    assert moved


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: C.CategoricalPolicy(num_actions=1, num_correct=1), "num_actions A"),
        (lambda: C.CategoricalPolicy(num_actions=10, num_correct=0), "at least one correct"),
        (lambda: C.CategoricalPolicy(num_actions=10, num_correct=11), "exceeds"),
        (lambda: C.CategoricalPolicy(anchor_logit=float("nan")), "anchor_logit must be finite"),
        (lambda: C.CategoricalConfig(group_size=0), "group_size must be an integer"),
        (lambda: C.CategoricalConfig(group_size=1), "group_size = 1"),
        (lambda: C.CategoricalConfig(eta=float("nan")), "eta"),
        (lambda: C.CategoricalConfig(eta=float("inf")), "eta"),
        (lambda: C.CategoricalConfig(eta=0.0), "eta"),
        (lambda: C.CategoricalConfig(focal_gamma=-1.0), "focal_gamma"),
        (lambda: C.CategoricalConfig(surrogate="ratio"), "surrogate"),
        (lambda: C.CategoricalConfig(reduction="max"), "reduction"),
        (lambda: C.sample_counts(jax.random.key(0), jnp.zeros(5), 0), "n must be"),
        (lambda: C.categorical_run(C.CategoricalConfig(policy=SMALL), jax.random.key(0), 10, 3),
         "multiple"),
    ],
)
def test_bad_input_raises(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_non_finite_eta_under_jit_raises():
    cfg = eqx.tree_at(lambda c: c.eta, C.CategoricalConfig(policy=SMALL, group_size=6),
                      jnp.asarray(jnp.nan))
    with pytest.raises(Exception, match="eta must be finite"):
        jax.block_until_ready(run_jit(cfg, jax.random.key(0), num_steps=12, stride=4))


def test_full_size_app_j_run_is_cheap():
    """A = 128,000, N = 131,072 (the largest Fig. 4 group): counts, never an (N, A) array."""
    cfg = C.CategoricalConfig(group_size=131_072)
    final, m = run_jit(cfg, jax.random.key(0), num_steps=2, stride=2)
    assert int(final.step) == 2 and m.q_pos.shape == (2,)
    assert_close(m.q_pos[0], 0.63, atol=5e-3)
    assert 0.5 < int(m.batch_correct[1]) / 131_072 < 0.75


def test_float32_mode_runs_and_tracks_float64():
    """``dtype=float32``: state, sampler and metrics in float32; the initial metrics agree with
    float64 to float32 accuracy (the draws differ: the uniforms are drawn in float32)."""
    kw = dict(policy=SMALL, group_size=6, optimizer=optax.adam, eta=0.05,
              surrogate="log_likelihood")
    c32 = C.CategoricalConfig(dtype=jnp.float32, **kw)
    c64 = C.CategoricalConfig(**kw)
    f32, m32 = run_jit(c32, jax.random.key(2), num_steps=20, stride=5)
    f64, m64 = run_jit(c64, jax.random.key(2), num_steps=20, stride=5)
    assert f32.logits.dtype == jnp.float32 and m32.q_pos.dtype == jnp.float32
    assert np.all(np.isfinite(np.asarray(m32.entropy)))
    for a, b in zip(m32[1:5], m64[1:5], strict=True):
        assert_close(np.asarray(a[0], float), np.asarray(b[0], float), rtol=1e-5)
    assert np.all(np.isfinite(np.asarray(f32.logits)))
    ds = sweep.run("categorical", fixed={"num_actions": SMALL.num_actions, "num_correct": 8,
                                         "dtype": "float32", "num_steps": 10, "stride": 5},
                   seeds=2, progress=False)
    assert ds.q_pos.shape == (2, 3) and ds.q_pos.dtype == np.float32
    with pytest.raises(ValueError, match="dtype"):
        C.CategoricalConfig(dtype=jnp.int32)


def test_sweep_batching_modes_agree():
    """``vmap`` and ``lax.map`` batching of the same runs agree to rounding."""
    kw = dict(fixed={"num_actions": SMALL.num_actions, "num_correct": 8, "group_size": 5,
                     "optimizer": "adam", "eta": 0.05, "surrogate": "log_likelihood",
                     "num_steps": 12, "stride": 4},
              seeds=3, seed=9, progress=False)
    grid = {"focal_gamma": [0.0, 1.0, 0.5]}
    mv = sweep.run("categorical", grid, batching="vmap", **kw)
    mm = sweep.run("categorical", grid, batching="map", **kw)
    for name in ("q_pos", "m_ret", "entropy"):
        assert_close(mv[name].values, mm[name].values, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="batching"):
        sweep.run("categorical", grid, batching="pmap", **kw)


def test_sweep_buckets_small_group_sizes_together():
    """On a CPU the sweep puts F-GRPO Fig. 4's group sizes N ≤ 1024 (A = 128,000: a draw costs
    ~13 actions, so padding them costs < 3% of a step) in one program and each larger power of
    two in its own: 8 programs for 17 N; every run's bound is at least its N and depends only on
    its own value and the static settings."""
    from simplexlab.sweep import adapter

    ad = adapter(C.Categorical)
    ns = np.asarray([2.0 ** k for k in range(1, 18)])
    static = {**C.Categorical.settings(), "num_actions": 128_000}
    groups = ad.groups(static, {"group_size": ns}, {"group_size"})
    bounds = {g["max_group_size"]: list(ns[rows].astype(int)) for g, rows in groups}
    if jax.default_backend() != "cpu":  # accelerators: one program for the whole sweep
        assert bounds == {2 ** 17: list(ns.astype(int))}
        return
    assert bounds[1024] == [2 ** k for k in range(1, 11)]
    assert sorted(bounds) == [2 ** k for k in range(10, 18)]
    assert all(bounds[b] == [b] for b in bounds if b > 1024)
    small = ad.groups({**static, "num_actions": 2_000}, {"group_size": np.asarray([3.0, 5.0])},
                      {"group_size"})
    assert [g["max_group_size"] for g, _ in small] == [8]
