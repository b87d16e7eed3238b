"""SC §2.4 / App. G–H: the Cat/Dog/Persian/Siamese softmax classifier (``SoftmaxClassifier``),
SC Corollary 2.1, the App. G kernel ratios, and the ``sharpening-*`` experiments (Figs. 1–5).

References are independent of the code under test: the embeddings and kernel values are typed
from the paper and summed in exact fractions; advantages, the gradient of the linear softmax
classifier, the optimizer steps (SGD, momentum, AdamW) and the memory network's cross-entropy
step are written out in NumPy from the label counts a step drew; the sampling distribution is
checked by Monte Carlo against ``softmax(W e − μ Φ e)`` computed in NumPy.
"""

import json
from fractions import Fraction

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import interior_simplex_points

from simplexlab import lab, sweep
from simplexlab import theory as S
from simplexlab.sim import SIMULATORS, SoftmaxClassifier, trajectory

# Scheduled with the long tests, first in a worker's life: in three clean-clone runs of the
# suite (2-core machine, 2026-12-02) a worker that reached this file after ~700 other tests died
# of a SIGSEGV inside XLA's CPU backend (twice serialising, once compiling a classifier
# program): the worker had used up the kernel's memory mappings (NOTES.md: "XLA's CPU backend
# crashes in a long-lived test worker"; tests/conftest.py now drops programs between files).
pytestmark = pytest.mark.slow

# SC §2.4, typed from the paper (rows Cat, Dog, Persian, Siamese)
E_CAT, E_DOG, E_PERSIAN = (0.5, 0.5, 0.5, 0.1), (0.1, 0.1, 0.1, 0.9), (0.75, 0.5, 0.25, 0.1)
E_SIAMESE = {"High": (0.25, 0.5, 0.75, 0.1), "Mid": (0.1, 0.5, 0.9, 0.1),
             "Low": (0.0, 0.5, 1.0, 0.1)}
CORRECT = np.array([1.0, 0.0, 1.0, 0.0])  # reward of each label on a Persian input
ALL = ("raw", "mean_shifted", "grpo", "rloo", "reinforce_pp")


@eqx.filter_jit
def _steps_jit(sim, key, params, n):
    states = [sim.init(key, params)]
    for _ in range(n):
        states.append(sim.step(states[-1], params))
    return states


def _steps(sim, key, params, n: int = 1):
    """``init`` and ``n`` steps, compiled once per simulator configuration and ``n`` (cheaper
    than the op-by-op eager path; parameters as arrays, so new values do not recompile);
    returns the ``n + 1`` states."""
    return _steps_jit(sim, key, {k: jnp.asarray(v) for k, v in params.items()}, n)


#: every estimator in one compiled program (``estimator_index`` picks)
MULTI = SoftmaxClassifier(estimator=ALL, max_group_size=16)


def _softmax(z):
    z = z - z.max()
    return np.exp(z) / np.exp(z).sum()


# ---------------------------------------------------------------------------------------------
# Corollary 2.1 and the kernel ratios
# ---------------------------------------------------------------------------------------------


@settings(max_examples=25)
@given(pi_ref=interior_simplex_points(min_n=2, max_n=6), data=st.data())
def test_corollary_2_1_kl_optimal_policy_never_lowers_a_correct_mode(pi_ref, data):
    """Theorem 2.1's π* ∝ π_ref exp(A/β) with A_+ ≥ 0 on the correct modes and A_- ≤ 0 on the
    others raises (or keeps) every correct mode; it is the batch-optimal policy of Theorem 2.2
    with every mode seen once (N_i = 1, G = n) at β/n."""
    n = pi_ref.size
    k1 = data.draw(st.integers(1, n))
    correct = np.zeros(n, bool)
    correct[data.draw(st.permutations(range(n)))[:k1]] = True
    a_pos = data.draw(st.floats(0.0, 5.0))
    a_neg = data.draw(st.floats(-5.0, 0.0))
    beta = data.draw(st.floats(0.05, 10.0))
    adv = np.where(correct, a_pos, a_neg)
    ref = pi_ref * np.exp(adv / beta)
    ref /= ref.sum()  # eq. (2) in NumPy
    pi = np.asarray(S.kl_optimal_policy(pi_ref, adv, beta))
    np.testing.assert_allclose(pi, ref, rtol=1e-12, atol=1e-15)
    assert np.all(pi[correct] >= pi_ref[correct] * (1 - 1e-12))
    np.testing.assert_allclose(S.batch_optimal_policy(pi_ref, np.ones(n), adv, beta / n), pi,
                               rtol=1e-12, atol=1e-15)


def test_finite_batch_can_lower_an_unsampled_correct_mode():
    """The contrast Corollary 2.1 draws: Theorem 2.2's batch-optimal policy scales every unsampled
    mode by 1/Z', and Z' > 1 when only a confident correct mode is sampled, so the unsampled
    correct mode 1 loses mass (over-sharpening), while the infinite-sample π* raises it."""
    pi_ref = np.array([0.5, 0.3, 0.2])  # modes 0, 1 correct, 2 incorrect
    counts, adv, beta = np.array([4.0, 0.0, 0.0]), np.array([1.0, 1.0, -1.0]), 1.0
    z = 0.5 * np.exp(4 * 1.0 / 4) + 0.3 + 0.2  # Theorem 2.2's Z' by hand
    hat = np.asarray(S.batch_optimal_policy(pi_ref, counts, adv, beta))
    np.testing.assert_allclose(hat[1], 0.3 / z, rtol=1e-13)
    assert hat[1] < pi_ref[1]
    assert S.kl_optimal_policy(pi_ref, adv, beta)[1] > pi_ref[1]


def test_kernel_ratios_follow_from_the_simulators_embeddings():
    """The simulator reads the paper's embeddings (one definition); λ = ‖e_P‖² and
    ρ = e_Pᵀe_S from them, in exact fractions, are App. G's kernel values (λ = 177/200, not the
    printed 0.8775); and one SGD step moves every Siamese logit by exactly ρ/λ times the Persian
    one (the kernel of the linear classifier is [o = o'] e_xᵀ e_x')."""
    sim = MULTI
    np.testing.assert_array_equal(sim.embedding_matrix(),
                                  np.array([E_CAT, E_DOG, E_PERSIAN, E_SIAMESE["High"]]))
    np.testing.assert_array_equal(sim.held_out_matrix(),
                                  np.array([E_SIAMESE[s] for s in ("High", "Mid", "Low")]))
    for s in ("Mid", "Low"):
        np.testing.assert_array_equal(SoftmaxClassifier(similarity=s).embedding_matrix()[3],
                                      E_SIAMESE[s])
    ep = [Fraction(str(x)) for x in E_PERSIAN]
    lam = sum(x * x for x in ep)
    assert lam == Fraction(177, 200)
    kv = S.toy_kernel_values()
    coupling = {}
    for s, e in E_SIAMESE.items():
        rho = sum(a * Fraction(str(b)) for a, b in zip(ep, e, strict=True))
        assert kv["rho"][s] == float(rho) and kv["lam_over_rho"][s] == float(lam / rho)
        coupling[s] = float(rho / lam)
    np.testing.assert_allclose([kv["lam_over_rho"][s] for s in E_SIAMESE],
                               [177 / 127, 177 / 112, 177 / 102], rtol=1e-15)
    params = {**sim.default_params(), "init_scale": 0.8, "eta": 0.7, "estimator_index": 1.0}
    s0, s1 = _steps(sim, jax.random.key(3), params)
    dW = np.asarray(s1.W - s0.W)
    df_p = dW @ np.array(E_PERSIAN)
    assert np.abs(df_p).max() > 1e-3  # the step moved the Persian logits
    for s, e in E_SIAMESE.items():
        np.testing.assert_allclose(dW @ np.array(e), coupling[s] * df_p, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# one step against NumPy
# ---------------------------------------------------------------------------------------------


def _advantages_by_hand(estimator, counts, alpha):
    """Per-label advantages of one group with these label counts (binary rewards)."""
    G = counts.sum()
    npos = counts @ CORRECT
    mean = npos / G
    std = np.sqrt(mean * (1 - mean))
    r = CORRECT
    adv = {"raw": r, "mean_shifted": r - mean, "grpo": (r - mean) / (std + 1e-6),
           "rloo": r - (npos - r) / (G - 1), "reinforce_pp": (r - mean) / (std + 1e-8)}[estimator]
    n_adv_pos = counts @ (adv > 0)  # IAC: S+ = {s : A_s > 0}
    return np.where(adv > 0, adv * (G - n_adv_pos) ** alpha, adv)


def _ascent_direction(W, counts, adv):
    """∇_W of (1/G) Σ_s A_s log softmax(W e_P)[o_s] for the linear softmax classifier."""
    e = np.array(E_PERSIAN)
    pi = _softmax(W @ e)
    w = counts * adv / counts.sum()
    return np.outer(w - pi * w.sum(), e)


@pytest.mark.parametrize("estimator, alpha", [("raw", 0.0), ("mean_shifted", 0.0),
                                              ("grpo", 0.0), ("rloo", 0.0),
                                              ("reinforce_pp", 0.0), ("raw", 1.0),
                                              ("grpo", 0.5)])
def test_one_sgd_step_matches_numpy(estimator, alpha):
    """Through the all-estimator program (``estimator_index``); for one estimator also the
    single-estimator simulator, which must give the same numbers."""
    params = {**MULTI.default_params(), "group_size": 12.0, "eta": 0.3, "iac_alpha": alpha,
              "init_scale": 0.6, "estimator_index": float(ALL.index(estimator))}
    s0, s1 = _steps(MULTI, jax.random.key(7), params)
    counts = np.asarray(s1.counts)
    assert counts.sum() == 12 and 0 < counts @ CORRECT < 12  # a mixed group
    W0 = 0.6 * np.array([E_CAT, E_DOG, E_PERSIAN, E_SIAMESE["High"]])
    np.testing.assert_allclose(np.asarray(s0.W), W0, rtol=1e-15)
    adv = _advantages_by_hand(estimator, counts, alpha)
    np.testing.assert_allclose(np.asarray(s1.advantage), np.where(counts > 0, adv, 0.0),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(s1.W), W0 + 0.3 * _ascent_direction(W0, counts, adv),
                               rtol=1e-12, atol=1e-14)
    if (estimator, alpha) == ("grpo", 0.5):
        single = SoftmaxClassifier(estimator="grpo", max_group_size=16)
        q = {k: v for k, v in params.items() if k != "estimator_index"}
        np.testing.assert_array_equal(np.asarray(_steps(single, jax.random.key(7), q)[1].W),
                                      np.asarray(s1.W))


def test_momentum_and_adamw_steps_match_numpy():
    """Momentum (0.9): the second step moves by η (g₂ + 0.9 g₁); AdamW's first step (optax
    defaults: eps 1e-8, weight decay 1e-4) by η (g / (|g| + eps) − 1e-4 W)."""
    params = {"group_size": 8.0, "eta": 0.2, "init_scale": 0.5}
    W0 = 0.5 * np.array([E_CAT, E_DOG, E_PERSIAN, E_SIAMESE["High"]])
    sim = SoftmaxClassifier(estimator="raw", optimizer="momentum", max_group_size=8)
    q = {**sim.default_params(), **params}
    _, s1, s2 = _steps(sim, jax.random.key(1), q, 2)
    c1, c2 = np.asarray(s1.counts), np.asarray(s2.counts)
    g1 = _ascent_direction(W0, c1, _advantages_by_hand("raw", c1, 0.0))
    W1 = W0 + 0.2 * g1
    np.testing.assert_allclose(np.asarray(s1.W), W1, rtol=1e-12, atol=1e-14)
    g2 = _ascent_direction(W1, c2, _advantages_by_hand("raw", c2, 0.0))
    np.testing.assert_allclose(np.asarray(s2.W), W1 + 0.2 * (g2 + 0.9 * g1), rtol=1e-12,
                               atol=1e-14)

    sim = SoftmaxClassifier(estimator="raw", optimizer="adamw", max_group_size=8)
    _, s1 = _steps(sim, jax.random.key(1), q)
    c1 = np.asarray(s1.counts)
    g = _ascent_direction(W0, c1, _advantages_by_hand("raw", c1, 0.0))
    np.testing.assert_allclose(np.asarray(s1.W), W0 + 0.2 * (g / (np.abs(g) + 1e-8) - 1e-4 * W0),
                               rtol=1e-10, atol=1e-12)
    # Adam's per-entry normalization makes the step (less weight decay) a multiple of 1ᵀ per row:
    # an input's logits move with the sum of its embedding, 1.6 for Persian and every Siamese
    step = np.asarray(s1.W) - W0 + 0.2 * 1e-4 * W0
    for e in E_SIAMESE.values():
        np.testing.assert_allclose(step @ np.array(e), step @ np.array(E_PERSIAN), rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# distribution-level calibration (memory network)
# ---------------------------------------------------------------------------------------------


def test_dlc_memory_update_and_calibrated_sampling():
    """Alg. 1 lines 5–6 and 21–22: labels are drawn from softmax(W e − μ Φ e) (Monte Carlo over
    2000 groups of 64, every frequency within 5 SE), and the memory takes one SGD step on the
    cross-entropy of the drawn labels: Φ' = Φ + η_m (N/G − softmax(Φ e)) eᵀ."""
    sim = SoftmaxClassifier(estimator="raw", max_group_size=64)
    params = {**sim.default_params(), "group_size": 64.0, "memory_weight": 0.5,
              "memory_eta": 0.3, "eta": 0.1}
    rng = np.random.default_rng(5)
    W, Phi = rng.normal(size=(4, 4)), 2.0 * rng.normal(size=(4, 4))
    e = np.array(E_PERSIAN)
    s0 = _steps(sim, jax.random.key(0), params, 0)[0]._replace(W=jnp.asarray(W),
                                                              memory=jnp.asarray(Phi))
    p_sample = _softmax(W @ e - 0.5 * Phi @ e)
    assert np.abs(p_sample - _softmax(W @ e)).max() > 0.05  # the memory changes the sampling

    n = 2000
    one = jax.jit(jax.vmap(lambda k: sim.step(s0._replace(key=k), params)))
    s1 = one(jax.random.split(jax.random.key(9), n))
    counts = np.asarray(s1.counts)
    freq = counts.sum(0) / (64 * n)
    se = np.sqrt(p_sample * (1 - p_sample) / (64 * n))
    assert np.all(np.abs(freq - p_sample) < 5 * se), (freq, p_sample)
    expected = Phi[None] + 0.3 * np.einsum("bo,j->boj", counts / 64 - _softmax(Phi @ e), e)
    np.testing.assert_allclose(np.asarray(s1.memory), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(jax.jit(sim.observe)(s0).sampling), p_sample,
                               rtol=1e-12)


def test_memory_network_learns_visit_frequencies():
    """With a frozen policy (η ≈ 0) and μ = 0, the memory's softmax at Persian approaches the
    policy's label distribution (the visit frequencies) under its cross-entropy steps."""
    sim = SoftmaxClassifier(estimator="raw", max_group_size=64)
    params = {"group_size": 64.0, "eta": 1e-12, "memory_eta": 0.5, "init_scale": 2.0}
    pi = _softmax(2.0 * np.array([E_CAT, E_DOG, E_PERSIAN, E_SIAMESE["High"]]) @ E_PERSIAN)
    rec = trajectory(sim, jax.random.key(2), params, num_steps=400, stride=400)[1]
    mem = np.asarray(rec.memory)
    np.testing.assert_allclose(mem[0], 0.25)  # Φ = 0: uniform
    np.testing.assert_allclose(mem[-1], pi, atol=0.03)


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


def test_bad_input():
    sim = SoftmaxClassifier()
    for g in (0.0, -3.0, 0.5):
        with pytest.raises(ValueError, match="group_size"):
            trajectory(sim, jax.random.key(0), {"group_size": g}, num_steps=1)
    with pytest.raises(ValueError, match="group_size"):
        sim.check_params({"group_size": 65.0})
    with pytest.raises(ValueError, match="unknown estimator 'normalised'"):
        SoftmaxClassifier(estimator="normalised")
    with pytest.raises(ValueError, match="unknown estimator 'rlo'"):
        SoftmaxClassifier(estimator=("raw", "rlo"))
    with pytest.raises(ValueError, match="distinct names"):
        SoftmaxClassifier(estimator=("raw", "raw"))
    with pytest.raises(ValueError, match=r"estimator_index must be a whole number in \[0, 2\)"):
        SoftmaxClassifier(estimator=("raw", "grpo")).check_params({"estimator_index": 2.0})
    with pytest.raises(ValueError, match="no effect"):  # one estimator: nothing to pick
        sweep.run("classifier", {"estimator_index": [1.0]}, progress=False)
    with pytest.raises(ValueError, match="unknown optimizer 'adamx'"):
        SoftmaxClassifier(optimizer="adamx")
    with pytest.raises(ValueError, match="unknown memory_optimizer 'sdg'"):
        SoftmaxClassifier(memory_optimizer="sdg")
    with pytest.raises(ValueError, match=r"embeddings must have shape \(4, d\).*\(3, 4\)"):
        SoftmaxClassifier.make(embeddings=np.ones((3, 4)))
    with pytest.raises(ValueError, match=r"embeddings must have shape.*\(4,\)"):
        SoftmaxClassifier.make(embeddings=np.ones(4))
    with pytest.raises(ValueError, match=r"held_out must have shape \(n, 3\).*\(2, 4\)"):
        SoftmaxClassifier.make(embeddings=np.ones((4, 3)), held_out=np.ones((2, 4)))
    with pytest.raises(ValueError, match="similarity"):
        SoftmaxClassifier(similarity="Very high")
    for name, v in (("iac_alpha", -1.0), ("memory_weight", -0.5), ("eta", 0.0),
                    ("memory_eta", float("nan"))):
        with pytest.raises(ValueError, match=name):
            sim.check_params({name: v})
    with pytest.raises(ValueError, match="unknown parameter"):
        sim.check_params({"gain": 1.0})
    with pytest.raises(ValueError, match="unknown estimator 'nope'"):
        sweep.run("classifier", {"estimator": ["nope"]}, progress=False)
    with pytest.raises(ValueError, match="seen"):
        S.batch_ratio_r(np.ones(4), np.ones(4), 0.5, 1.4)


def test_bad_traced_group_size_fails_under_jit():
    sim = SoftmaxClassifier(max_group_size=8)
    f = jax.jit(lambda G: trajectory(sim, jax.random.key(0), {"group_size": G},
                                     num_steps=1)[1].pi_persian)
    with pytest.raises(Exception, match="group_size"):
        jax.block_until_ready(f(jnp.asarray(0.0)))


def test_custom_embeddings_and_registration():
    """Any (4, d) embeddings: Siamese (row 3) is then the held-out input; the simulator is in the
    sweep registry."""
    emb = np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0], [1.0, 0.2, 0, 0], [0.8, 0.4, 0, 0.5]])
    sim = SoftmaxClassifier.make(embeddings=emb, max_group_size=8)
    np.testing.assert_array_equal(sim.held_out_matrix(), emb[3:])
    q = {**sim.default_params(), "init_scale": 1.0}
    s0, s1 = _steps(sim, jax.random.key(0), q)
    obs = jax.jit(sim.observe)(s1)
    np.testing.assert_allclose(np.asarray(jax.jit(sim.observe)(s0).siamese_accuracy),
                               [_softmax(emb @ emb[3])[3]], rtol=1e-14)
    assert np.asarray(obs.pi_held_out).shape == (1, 4)
    assert float(np.asarray(obs.pi_persian).sum()) == pytest.approx(1.0, abs=1e-14)
    assert SIMULATORS["classifier"] is SoftmaxClassifier


def test_batch_ratio_r_by_hand():
    """Cor. 2.2 (App. F form) on a batch: counts (3, 1, 2, 2), |A| = 1, o' = label 0, G = 8:
    y = N/8, A_sum = Σ N y = 18/8, R = 3 [(3/8)/(18/8) (λ/ρ + 7) − 1]."""
    lor = 177 / 127
    r = S.batch_ratio_r(np.array([3.0, 1, 2, 2]), np.array([1.0, -1, 1, -1]), 0, lor)
    np.testing.assert_allclose(r, 3 * ((3 / 18) * (lor + 7) - 1), rtol=1e-14)
    none = S.batch_ratio_r(np.array([0.0, 0, 4, 4]), np.zeros(4), 2, lor)  # no update
    assert np.isnan(none)


# ---------------------------------------------------------------------------------------------
# the experiments (quick mode, as `simplexlab reproduce` runs them)
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow  # three compiled programs shared by the three experiments: ~20 s on 2 cores
def test_sharpening_experiments_quick(tmp_path):
    """Figs. 1–5 in quick mode. What is asserted follows from the mechanics of the toy, not from
    a run of it: raw rewards keep a noise-driven push on all-correct groups that every
    group-mean baseline removes; momentum accumulates and AdamW normalizes the same gradient;
    under SGD the Siamese logits move by ρ/λ times the Persian ones; R (Cor. 2.2) is increasing
    in λ/ρ for fixed batches; IAC zeroes all-correct groups; DLC's memory down-weights the
    frequent label."""
    lab.load_experiment_module("sharpening_toy")
    res = {}
    for name, figs in (("sharpening-collapse", ["sharpening-fig1-estimators",
                                                "sharpening-fig3-rloo-reinforcepp",
                                                "sharpening-fig4-optimizers"]),
                       ("sharpening-coupling", ["sharpening-fig2-coupling"]),
                       ("sharpening-mitigation", ["sharpening-fig5-mitigation"])):
        rec = lab.run_experiment(name, quick=True, out=tmp_path)
        assert rec["figures"] == [f"{f}.png" for f in figs]
        for f in figs:
            assert (tmp_path / f"{f}.png").stat().st_size > 20_000
        on_disk = json.loads((tmp_path / f"{name}.json").read_text())
        assert on_disk["results"] == json.loads(json.dumps(rec["results"]))
        assert "Fig." in on_disk["reproduces"] and on_disk["parameters"]["seeds"] >= 16
        res[name] = rec["results"]

    st = res["sharpening-collapse"]["statements"]
    assert st["every_estimator_sharpens_onto_one_label"]["reproduced"]
    assert st["winning_label_is_random"]["reproduced"]
    assert st["larger_G_delays_collapse"]["raw"]["reproduced"]
    assert st["raw_most_aggressive"] and st["momentum_and_adamw_accelerate_collapse"]["reproduced"]
    assert st["rloo_and_reinforce_pp_collapse_slower_than_raw_but_still_sharpen"]
    assert res["sharpening-collapse"]["sgd_raw_runs_identical_in_both_sweeps"]
    est = res["sharpening-collapse"]["estimators"]
    assert est["raw"]["G=4"]["fraction_collapsed"] >= 0.5  # raw, G = 4: most seeds collapse

    st = res["sharpening-coupling"]["statements"]
    assert st["higher_similarity_faster_degradation"] and st["larger_G_faster_degradation"]
    assert st["R_orders_like_degradation"]["R_increases_with_lambda_over_rho"]
    assert res["sharpening-coupling"]["lam_over_rho"] == {
        s: float(Fraction(177, 200) / Fraction(r, 200))
        for s, r in (("High", 127), ("Mid", 112), ("Low", 102))}

    st = res["sharpening-mitigation"]["statements"]
    for k in ("iac_delays_collapse_sgd", "iac_delays_collapse_adamw",
              "iac_dlc_arrests_collapse_sgd", "iac_dlc_arrests_collapse_adamw",
              "baseline_collapses"):
        assert st[k], k
