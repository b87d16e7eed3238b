"""The rules people train with, each against an independent computation: the papers' worked
values (PKPO's ±1/12), brute force over every k-subset of a group (pass@k training, PKPO),
NumPy transcriptions of what the frameworks and the authors' releases compute (TRL's batch std,
NeMo-RL's leave-one-out std, the unlikeliness reward's double argsort). The batch std's
finite-group theory (the one rule here that is not group-local) is tested in
tests/test_finite_group.py with REINFORCE++'s."""

import itertools
import math

import jax.numpy as jnp
import numpy as np
import pytest

from simplexlab import shaping
from simplexlab.shaping import (
    METHODS,
    Groups,
    grpo_advantages,
    pass_at_k,
    pass_at_k_advantages,
    pkpo_advantages,
    pkpo_rewards,
)

RNG = np.random.default_rng(7)


def _groups(shape=(6, 7), p=0.45):
    r = (RNG.random(shape) < p).astype(float)
    r[0] = 1.0  # an all-correct group
    r[1] = 0.0  # an all-wrong one
    mask = RNG.random(shape) < 0.85
    mask[:, :3] = True  # at least three valid rollouts per group
    return r, mask


def _subsets(r, k):
    """Brute force over the k-subsets of one group's rollouts: the mean pass@k reward of the
    subsets through each rollout, the mean over all subsets and their population std."""
    n = len(r)
    subs = list(itertools.combinations(range(n), k))
    val = np.array([max(r[j] for j in s) for s in subs])
    through = np.array([np.mean([v for s, v in zip(subs, val, strict=True) if i in s])
                        for i in range(n)])
    return through, val.mean(), val.std()


# ---- PKPO and pass@k training ------------------------------------------------------------------

def test_pkpo_worked_example_is_plus_minus_one_twelfth():
    """PKPO's binary case at n = 4, c = 2, k = 2: effective rewards 1/2 (correct) and 1/3
    (incorrect, (k/n) ρ(3, 2, 1)), ±1/12 after centring."""
    r = jnp.array([1.0, 0.0, 1.0, 0.0])
    np.testing.assert_allclose(pkpo_rewards(r, k=2), [1 / 2, 1 / 3, 1 / 2, 1 / 3], atol=1e-15)
    np.testing.assert_allclose(pkpo_advantages(r, k=2), [1 / 12, -1 / 12, 1 / 12, -1 / 12],
                               atol=1e-15)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_pass_at_k_rules_equal_brute_force_over_subsets(k):
    r, mask = _groups()
    passk = np.asarray(pass_at_k_advantages(r, mask, k=k))
    pkpo = np.asarray(pkpo_advantages(r, mask, k=k))
    s = np.asarray(pkpo_rewards(r, mask, k=k))
    for g in range(r.shape[0]):
        idx = np.flatnonzero(mask[g])
        n = len(idx)
        through, mean, sd = _subsets(r[g, idx], k)
        want = (through - mean) / sd if sd > 0 else np.zeros(n)
        np.testing.assert_allclose(passk[g, idx], want, atol=1e-12, err_msg=f"group {g}")
        # PKPO: every subset's reward shared by its k members, over C(n, k) subsets
        eff = through * math.comb(n - 1, k - 1) / math.comb(n, k)
        np.testing.assert_allclose(s[g, idx], eff, atol=1e-12)
        np.testing.assert_allclose(pkpo[g, idx], eff - eff.mean(), atol=1e-12)
        assert np.all(passk[g, ~mask[g]] == 0) and np.all(pkpo[g, ~mask[g]] == 0)


def test_pass_at_1_training_is_grpo_with_the_population_std():
    r, mask = _groups()
    np.testing.assert_allclose(pass_at_k_advantages(r, mask, k=1),
                               grpo_advantages(r, mask, eps=0.0), atol=1e-12)


def test_pass_at_k_estimator_is_unbiased():
    """E[ρ(n, c, k)] over c ~ Binomial(n, p) is 1 − (1 − p)^k (exact sum, the estimator that
    PKPO's effective rewards rest on)."""
    n, p = 9, 0.3
    c = np.arange(n + 1)
    pmf = np.array([math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in c])
    for k in (1, 3, 9):
        est = np.asarray(pass_at_k(np.full(n + 1, float(n)), c.astype(float), k))
        assert abs(pmf @ est - (1 - (1 - p) ** k)) < 1e-13


def test_the_bandit_refuses_k_above_its_group_size():
    from simplexlab.sim import Bandit

    sim = Bandit(method="pkpo", max_group_size=8)
    with pytest.raises(ValueError, match="pass_k \\+ group_size must be <= the group size"):
        sim.check_params({**sim.default_params(), "pass_k": 6.0, "group_size": 4.0})
    sim.check_params({**sim.default_params(), "pass_k": 4.0, "group_size": 4.0})
    # and the finite-group theory
    with pytest.raises(ValueError, match="group_size must be >= 6 for this rule"):
        shaping.meanfield_system("pkpo", group_size=4, params={"pass_k": 6.0})


def test_pass_k_outside_its_domain_is_refused():
    r = jnp.array([[1.0, 0.0, 1.0]])
    with pytest.raises(ValueError, match="pass@k k must be <= the number of valid rollouts"):
        pass_at_k_advantages(r, k=4)
    with pytest.raises(ValueError, match="pass@k k must be an integer >= 1"):
        pkpo_advantages(r, k=1.5)
    with pytest.raises(ValueError, match="pass_k must be a whole number >= 1"):
        shaping.advantages("pkpo", Groups(r), params={"pass_k": 0.0})


# ---- the frameworks' std conventions -----------------------------------------------------------

def test_batch_std_is_trls_scale_rewards_batch():
    """TRL 1.16 ``scale_rewards="batch"``: (r − group mean) / (sample std of every reward of the
    batch + 1e-4)."""
    r = RNG.random((5, 4))
    want = (r - r.mean(-1, keepdims=True)) / (r.std(ddof=1) + 1e-4)
    out = shaping.advantages("grpo_batch_std", Groups(r), params={"std_eps": 1e-4})
    np.testing.assert_allclose(out, want, atol=1e-13)


def test_sample_std_is_verls_grpo():
    r = RNG.random((5, 4))
    want = (r - r.mean(-1, keepdims=True)) / (r.std(-1, ddof=1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(shaping.advantages("grpo_sample_std", Groups(r)), want,
                               atol=1e-13)


def _nemo_loo_std(r):
    """NeMo-RL's leave-one-out baseline and std as its ``calculate_baseline_and_std_per_prompt``
    writes them (mean of the others, E[r²] − E[r]² of the others times n_o / (n_o − 1)), then a
    division only where the std is positive."""
    n = len(r)
    out = np.zeros(n)
    for i in range(n):
        o = np.delete(r, i)
        b, sq = o.mean(), (o**2).mean()
        var = (sq - b * b) * (len(o) / (len(o) - 1)) if len(o) > 1 else np.nan
        sd = 0.0 if not np.isfinite(var) else math.sqrt(max(var, 0.0))
        out[i] = (r[i] - b) / sd if sd > 1e-12 else r[i] - b
    return out


@pytest.mark.parametrize("G", [2, 3, 5])
def test_loo_std_is_nemo_rls_default(G):
    for r in [*map(np.array, itertools.product([0.0, 1.0], repeat=G)), RNG.random(G)]:
        out = np.asarray(shaping.advantages("loo_std", Groups(r[None])))[0]
        np.testing.assert_allclose(out, _nemo_loo_std(r), atol=1e-12, err_msg=str(r))


# ---- W-REINFORCE, NSR, the unlikeliness reward -------------------------------------------------

def test_w_reinforce_and_nsr():
    r, mask = _groups()
    out = shaping.advantages("w_reinforce", Groups(r, mask=mask))
    np.testing.assert_array_equal(out, np.where(mask, np.where(r == 1, 0.1, -1.0), 0.0))
    out = shaping.advantages("nsr", Groups(r, mask=mask))
    np.testing.assert_array_equal(out, np.where(mask, np.where(r == 1, 0.0, -1.0), 0.0))
    with pytest.raises(ValueError, match="w_reinforce_lambda must be finite and >= 0"):
        shaping.advantages("w_reinforce", Groups(r), params={"w_reinforce_lambda": -1.0})


def _release_unlikeliness(r, logp, beta):
    """The authors' ``_compute_advantages`` for one group, in NumPy: ranks from a double
    argsort of the log-probabilities, scores times (1 − rank / n · β), then (s − mean) / (sample
    std + 1e-6)."""
    rank = np.argsort(np.argsort(logp, kind="stable"), kind="stable") / len(r)
    s = r * (1 - rank * beta)
    return (s - s.mean()) / (s.std(ddof=1) + 1e-6)


def test_unlikeliness_is_the_release_and_penalises_likely_correct_rollouts():
    r = (RNG.random((6, 5)) < 0.6).astype(float)
    logp = np.log(RNG.dirichlet(np.ones(5), 6))
    out = np.asarray(shaping.advantages("unlikeliness", Groups(r, logp=logp)))
    for g in range(6):
        np.testing.assert_allclose(out[g], _release_unlikeliness(r[g], logp[g], 0.25),
                                   atol=1e-12)
    # two correct rollouts in a mixed group: the less likely one gets the larger advantage
    two = np.asarray(shaping.advantages("unlikeliness", Groups(
        jnp.array([[1.0, 1.0, 0.0]]), logp=jnp.log(jnp.array([[0.6, 0.1, 0.3]])))))[0]
    assert two[1] > two[0] > two[2]
    # β = 0: GRPO with the sample std
    np.testing.assert_allclose(
        shaping.advantages("unlikeliness", Groups(r, logp=logp), params={"rank_penalty": 0.0}),
        shaping.advantages("grpo_sample_std", Groups(r)), atol=1e-12)
    with pytest.raises(ValueError, match="needs the rollouts' log-probabilities"):
        shaping.advantages("unlikeliness", Groups(r))


def test_every_new_rule_is_declared_with_its_needs():
    assert METHODS["unlikeliness"].logp and not METHODS["grpo_batch_std"].group_local
    for name in ("w_reinforce", "nsr", "pass_at_k", "pkpo"):
        assert METHODS[name].binary and METHODS[name].structure == "counts", name
