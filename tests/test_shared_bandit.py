"""The shared-parameter bandit (``simplexlab.sim.SharedBandit``) and its finite-group theory
(``simplexlab.theory.shared_moments``, ``step_progress``): the per-prompt bandit as its one-hot
special case (the same steps from the same draws), the mean and covariance of a step's gradient
in the shared weights against Monte Carlo of the simulator itself, and the progress terms in the
kernel form against the explicit Kronecker products."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simplexlab.shaping import group_rule
from simplexlab.sim import Bandit, SharedBandit, trajectory
from simplexlab.theory import PromptSet, shared_moments, shared_policy, step_progress

KEYS = 20_000


@pytest.mark.parametrize("method", ["grpo", "f_grpo"])
def test_one_hot_features_are_the_per_prompt_bandit(method):
    """One-hot features, every prompt once a step, SGD at ``N`` times the bandit's rate: the
    shared bandit takes the bandit's steps draw for draw (its prompts built from the bandit's
    initial policies)."""
    b = Bandit(K=2, M=2, num_prompts=5, max_group_size=6, method=method)
    pb = {**b.default_params(), "group_size": 5, "eta": 0.3}
    probs = np.asarray(jax.nn.softmax(b.initial_logits(pb), -1))
    s = SharedBandit(K=2, M=2, prompts=PromptSet.from_policies(probs, 2), pool_size=5,
                     features="onehot", sampling="all", num_prompts=5, max_group_size=6,
                     method=method)
    ps = {**s.default_params(), "group_size": 5, "eta": 0.3 * 5}
    key = jax.random.key(3)
    _, rb = trajectory(b, key, pb, num_steps=24, stride=4)
    _, rs = trajectory(s, key, ps, num_steps=24, stride=4)
    np.testing.assert_allclose(rs.accuracy, rb.accuracy, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rs.L_y, rb.L_y, rtol=0, atol=1e-12)
    assert float(np.abs(np.asarray(rb.accuracy[-1]) - rb.accuracy[0]).max()) > 0.01  # it moved
    np.testing.assert_allclose(rs.pass_rate, np.asarray(rb.accuracy).mean(-1), atol=1e-12)


def _one_step(sim, params, n=KEYS):
    """``W`` after one SGD step of rate 1 from ``W = 0`` for ``n`` seeds: ``ĝ_W`` itself."""
    keys = jax.random.split(jax.random.key(11), n)

    @eqx.filter_jit
    def run(keys):
        return jax.vmap(lambda k: sim.step(sim.init(k, params), params).weights)(keys)

    return np.asarray(run(keys)).reshape(n, -1)


@pytest.mark.parametrize("method, sampling, features", [
    ("grpo", "replacement", "random"), ("rloo", "all", "random"), ("g2rpo", "replacement",
                                                                    "shared")])
def test_the_step_moments_match_monte_carlo_of_the_simulator(method, sampling, features):
    """``E[ĝ_W]`` and ``Cov[vec ĝ_W]`` of the theory against 20 000 one-step runs: every entry
    within 5 standard errors (G²RPO by its exact enumeration path)."""
    pool = 5
    s = SharedBandit(K=2, M=2, prompts=PromptSet.from_beta(0.7, 1.3, nodes=pool),
                     pool_size=pool, features=features, num_features=3, sampling=sampling,
                     num_prompts=pool if sampling == "all" else 3, max_group_size=4,
                     method=method)
    params = {**s.default_params(), "group_size": 4, "eta": 1.0}
    mom = s.moments(params)
    g = _one_step(s, params)
    mean, cov = np.asarray(mom.mean_W).ravel(), np.asarray(mom.covariance_W)
    se = g.std(0, ddof=1) / np.sqrt(len(g))
    z = (g.mean(0) - mean) / np.maximum(se, 1e-12)
    assert np.abs(z).max() < 5, z
    dev = g - g.mean(0)
    prods = dev[:, :, None] * dev[:, None, :]
    cse = prods.std(0, ddof=1) / np.sqrt(len(g))
    zc = (prods.mean(0) - cov) / np.maximum(cse, 1e-12)
    assert np.abs(zc[cse > 1e-12]).max() < 5
    assert np.abs(cov).max() > 1e-4  # the step is noisy


def test_the_progress_terms_in_kernel_form_match_the_explicit_kronecker_products():
    """``aᵀd``, ``dᵀBd`` and ``tr(BV)`` for SGD and Adam, both samplings: the per-prompt kernel
    form against the full ``(C D, C D)`` matrices ``Σ_i w_i B_i ⊗ x_i x_iᵀ``."""
    ps = PromptSet.from_beta(0.5, 1.5, nodes=6)
    K, C = 3, 5
    pol = shared_policy(ps, K, 2, features="random", num_features=4)
    rule = group_rule("grpo")
    th = np.asarray(pol.logits(pol.zeros()))
    X, w = np.asarray(pol.features), np.asarray(pol.weights)
    p = np.exp(th) / np.exp(th).sum(-1, keepdims=True)
    # the pass rate's derivatives in closed form: ∂μ/∂θ = π_good − μ π, and its Hessian
    good = (np.arange(C) < K).astype(float)
    mu = p[:, :K].sum(-1)
    a = p * good - mu[:, None] * p
    hess = np.stack([np.diag(ai) - np.outer(ai, pi) - np.outer(pi, ai)
                     for ai, pi in zip(a, p, strict=True)])
    J = np.stack([np.diag(q) - np.outer(q, q) for q in p])

    def kron(blocks):
        return sum(w[i] * np.kron(blocks[i], np.outer(X[i], X[i])) for i in range(len(w)))

    aW = sum(w[i] * np.kron(a[i], X[i]) for i in range(len(w)))
    for sampling, P in (("replacement", 3), ("all", 6)):
        mom = shared_moments(rule, pol, 4, num_prompts=P, sampling=sampling)
        m, V = np.asarray(mom.mean_W).ravel(), np.asarray(mom.covariance_W)
        for opt in ("sgd", "adam"):
            pr = step_progress(mom, pol, "pass", optimizer=opt, kl=2.0)
            scale = 1 / (np.sqrt(m**2 + np.diag(V)) + 1e-8) if opt == "adam" else np.ones_like(m)
            d, Vd = scale * m, scale[:, None] * V * scale[None, :]
            np.testing.assert_allclose(float(pr.first), aW @ d, rtol=1e-10)
            np.testing.assert_allclose(float(pr.mean_fisher), d @ kron(J) @ d, rtol=1e-10)
            np.testing.assert_allclose(float(pr.noise_fisher), np.trace(kron(J) @ Vd), rtol=1e-9)
            np.testing.assert_allclose(float(pr.mean_hessian), d @ kron(hess) @ d, rtol=1e-9)
            np.testing.assert_allclose(float(pr.noise_hessian), np.trace(kron(hess) @ Vd),
                                       rtol=1e-9)
            c = float(pr.curvature)
            assert c == pytest.approx(2.0 * (d @ kron(J) @ d + np.trace(kron(J) @ Vd))
                                      - d @ kron(hess) @ d - np.trace(kron(hess) @ Vd))
            assert float(pr.eta) == pytest.approx(aW @ d / c)
            assert float(pr.progress) == pytest.approx((aW @ d) ** 2 / (2 * c))
            grid = float(pr.eta) * np.array([0.5, 0.9, 1.0, 1.1, 2.0])
            assert np.argmax(np.asarray(pr.at(grid))) == 2  # η* is the grid's optimum


def test_a_steps_gain_and_kl_match_monte_carlo_to_second_order():
    """At a small rate the bandit's mean pass-rate gain and mean KL between successive policies
    (over the pool) against the second-order theory: within 5 standard errors plus the
    third-order remainder's allowance (5 % of the KL)."""
    s = SharedBandit(K=2, M=2, prompts=PromptSet.from_beta(0.7, 1.3, nodes=5), pool_size=5,
                     features="random", num_features=3, num_prompts=2, max_group_size=4)
    eta = 0.1
    params = {**s.default_params(), "group_size": 4, "eta": eta}
    pr = s.progress(params, "pass")
    pol = s.policy()
    W = _one_step(s, params).reshape(KEYS, *pol.shape)
    p0 = np.asarray(pol.probs(pol.zeros()))
    p1 = np.asarray(jax.vmap(pol.probs)(jnp.asarray(W)))
    w = np.asarray(pol.weights)
    gain = ((p1[..., :2].sum(-1) - p0[:, :2].sum(-1)) * w).sum(-1)
    kl = ((p0 * (np.log(p0) - np.log(p1))).sum(-1) * w).sum(-1)
    se = gain.std(ddof=1) / np.sqrt(KEYS)
    assert abs(gain.mean() - float(pr.gain(eta))) < 5 * se + 0.05 * abs(float(pr.gain(eta)))
    assert kl.mean() == pytest.approx(float(pr.kl_step(eta)), rel=0.05)
    assert abs(gain.mean()) > 5 * se  # the step gains measurably


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="num_prompts must be the pool's size 16"):
        SharedBandit(sampling="all", num_prompts=4)
    with pytest.raises(ValueError, match="features must be one of"):
        SharedBandit(features="learned")
    with pytest.raises(ValueError, match="normalises over its batch"):
        SharedBandit(method="reinforce_pp")
    with pytest.raises(ValueError, match="prompts must be a PromptSet"):
        SharedBandit(prompts=(0.2, 0.5))
    with pytest.raises(ValueError, match="M must be an integer >= 1"):
        SharedBandit(M=0)
