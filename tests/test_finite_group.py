"""The finite-group theory (simplexlab.theory._finite, simplexlab.shaping._finite and the rules'
own reductions): the exact expected SGD step of every advantage rule at a finite group size G,
checked against independent computations: a brute-force sum over every ordered group and
verifier outcome (NumPy, the rule run on each group), the O(G) binomial formula for GRPO written
out here, Monte Carlo within its bound, the bandit's own empirical mean step, the G → ∞ limits
(G²RPO eq. 22 / 48 / 56)."""

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import simplexlab as sl
from simplexlab.shaping import METHODS, GainSchedule, group_rule, meanfield_system
from simplexlab.sim import Bandit
from simplexlab.theory import AbstractGroupRule, FiniteGroup, Verifier, expected_update

PI = np.array([0.3, 0.2, 0.1, 0.25, 0.15])  # K = 3 good, M = 2 bad
NOISY = Verifier(0.1, 0.05)
COUNT_METHODS = [m for m, d in METHODS.items() if d.structure == "counts"]
SCHEDULES = [GainSchedule(kind="constant", neutralize=False), GainSchedule(kind="A"),
             GainSchedule(kind="B", p_damp=0.3, p_min=0.1, Lz_min=0.6, gain=2.5,
                          cluster_bad=False),
             GainSchedule(kind="constant", B_max=0.5, rho=0.3)]


def _brute_force(rule, probs, K, G, verifier):
    """E[w] (mean reduction) by summing over every ordered tuple of G modes and G verifier
    outcomes, the rule run on each group (NumPy; independent of the library's tables)."""
    C = len(probs)
    p1 = np.where(np.arange(C) < K, 1 - float(verifier.delta_fn), float(verifier.delta_fp))
    groups, weights = [], []
    for modes in itertools.product(range(C), repeat=G):
        for rew in itertools.product((0, 1), repeat=G):
            w = np.prod([probs[m] * (p1[m] if r else 1 - p1[m])
                         for m, r in zip(modes, rew, strict=True)])
            if w > 0:
                groups.append((modes, rew))
                weights.append(w)
    modes = np.array([g[0] for g in groups], np.int32)
    rew = np.array([g[1] for g in groups], float)
    adv = np.asarray(rule.advantages(jnp.asarray(rew), jnp.asarray(modes),
                                     jnp.log(jnp.asarray(probs))[modes], 0.0, C))
    w = np.zeros(C)
    for g in range(G):
        np.add.at(w, modes[:, g], np.asarray(weights) * adv[:, g])
    return w / G


def _theta(w, probs):
    return w - probs * w.sum()


@pytest.mark.parametrize("method", ["grpo", "rloo", "f_grpo", "g2rpo", "progrpo"])
@pytest.mark.parametrize("verifier", [Verifier(), NOISY], ids=["perfect", "noisy"])
def test_enumeration_equals_brute_force_over_ordered_groups(method, verifier):
    pi = np.array([0.45, 0.3, 0.25])  # K = 2, M = 1
    rule = group_rule(method, verifier=verifier,
                      schedule=GainSchedule(kind="B") if method == "g2rpo" else None)
    ref = _theta(_brute_force(rule, pi, 2, 4, verifier), pi)
    out = expected_update(rule, pi, 2, 4, verifier=verifier, path="enumerate")
    assert out.path == "enumerate"
    np.testing.assert_allclose(out.theta, ref, rtol=0, atol=1e-14)


def _grpo_reduction_numpy(probs, K, G, verifier, eps=1e-6):
    """An independent restatement of the O(G) reduction for the GRPO z-score, in NumPy: with
    S' ~ Bin(G − 1, q), ā_r = E[A(r, r + S')], A(r, S) = (r − S/G)/(sqrt(S/G (1 − S/G)) + ε)."""
    from math import comb
    C = len(probs)
    p1 = np.where(np.arange(C) < K, 1 - float(verifier.delta_fn), float(verifier.delta_fp))
    q = float(np.sum(probs * p1))
    pmf = np.array([comb(G - 1, s) * q**s * (1 - q) ** (G - 1 - s) for s in range(G)])

    def A(r, S):
        mu = S / G
        return (r - mu) / (np.sqrt(mu * (1 - mu)) + eps)

    a1 = sum(pmf[s] * A(1, s + 1) for s in range(G))
    a0 = sum(pmf[s] * A(0, s) for s in range(G))
    abar = p1 * a1 + (1 - p1) * a0
    return probs * (abar - np.sum(probs * abar))


@pytest.mark.parametrize("G", [2, 5, 16, 64])
def test_grpo_counts_path_equals_the_binomial_formula(G):
    for verifier in (Verifier(), NOISY):
        out = expected_update(group_rule("grpo"), PI, 3, G, verifier=verifier)
        assert out.path == "counts"
        np.testing.assert_allclose(out.theta, _grpo_reduction_numpy(PI, 3, G, verifier),
                                   atol=1e-13)


@pytest.mark.parametrize("method", COUNT_METHODS)
def test_count_rules_three_paths_agree(method):
    for verifier in (Verifier(), NOISY):
        rule = group_rule(method, verifier=verifier)
        ref = expected_update(rule, PI, 3, 5, verifier=verifier, path="enumerate").theta
        for path in ("counts", "clusters"):
            out = expected_update(rule, PI, 3, 5, verifier=verifier, path=path)
            np.testing.assert_allclose(out.theta, ref, atol=1e-14, err_msg=path)


@pytest.mark.parametrize("method,schedule",
                         [("g2rpo", s) for s in SCHEDULES] + [("g2rpo_bonus", GainSchedule())],
                         ids=lambda s: s if isinstance(s, str) else
                         f"{s.kind}-{s.neutralize}-{s.cluster_bad}-{s.B_max}")
def test_g2rpo_reduction_and_partitions_equal_enumeration(method, schedule):
    for verifier, G in ((Verifier(), 6), (NOISY, 4)):
        rule = group_rule(method, schedule=schedule, verifier=verifier)
        ref = expected_update(rule, PI, 3, G, verifier=verifier, path="enumerate").theta
        out = expected_update(rule, PI, 3, G, verifier=verifier, path="clusters")
        np.testing.assert_allclose(out.theta, ref, atol=1e-14)
        exact = rule.reduction_size(3, 2, G, ((0, 1, 2), (3, 4))) is not None
        assert exact == (schedule.B_max == np.inf and (schedule.kind == "B"
                                                        or not schedule.neutralize))
        if exact:
            out = expected_update(rule, PI, 3, G, verifier=verifier, path="rule")
            np.testing.assert_allclose(out.theta, ref, atol=1e-14)


def test_progrpo_and_reinforce_pp_reductions():
    for verifier in (Verifier(), NOISY):
        for eq4 in (0.0, 1.0):  # all-correct groups skipped (PG Alg. 1) / re-weighted (eq. 4)
            rule = group_rule("progrpo", params={"progrpo_alpha": 0.7,
                                                 "progrpo_all_correct": eq4}, verifier=verifier)
            ref = expected_update(rule, PI, 3, 5, verifier=verifier, path="enumerate").theta
            out = expected_update(rule, PI, 3, 5, verifier=verifier)
            assert out.path == "rule"
            np.testing.assert_allclose(out.theta, ref, atol=1e-14)

@pytest.mark.parametrize("method,G", [("reinforce_pp", 2), ("grpo_batch_std", 3)])
def test_batch_rules_reductions_equal_brute_force_over_two_groups(method, G):
    """The rules that normalise over the batch (REINFORCE++; TRL's batch std) over 2 groups:
    brute force over both groups' modes jointly, K = 2 good modes, M = 1 bad."""
    pi = np.array([0.5, 0.2, 0.3])
    rule = group_rule(method, num_groups=2)
    w = np.zeros(3)
    for modes in itertools.product(range(3), repeat=2 * G):
        rew = np.array([[float(m < 2) for m in modes[:G]], [float(m < 2) for m in modes[G:]]])
        adv = np.asarray(rule.advantages(jnp.asarray(rew), jnp.asarray(np.reshape(modes, (2, G))),
                                         jnp.zeros((2, G)), 0.0, 3))
        prob = np.prod(pi[list(modes)])
        for g in range(G):  # the first group's rollouts, mean reduction
            w[modes[g]] += prob * adv[0, g] / G
    out = expected_update(rule, pi, 2, G)
    assert out.path == "rule"
    np.testing.assert_allclose(out.theta, _theta(w, pi), atol=1e-14)


@pytest.mark.parametrize("method,kw", [("g2rpo", {"schedule": GainSchedule(kind="constant")}),
                                       ("reinforce_pp", {"num_groups": 3}),
                                       ("iac", {})])
def test_montecarlo_within_its_bound(method, kw):
    rule = group_rule(method, verifier=NOISY, **kw)
    exact = expected_update(rule, PI, 3, 5, verifier=NOISY)
    mc = expected_update(rule, PI, 3, 5, verifier=NOISY, path="montecarlo", num_samples=40_000,
                         key=jax.random.key(7))
    assert mc.path == "montecarlo" and exact.path != "montecarlo"
    assert np.all(mc.stderr > 0)
    assert np.all(np.abs(mc.theta - exact.theta) < 4.5 * mc.stderr), (mc.theta, exact.theta)


class _ModeLeak(AbstractGroupRule):
    """GRPO plus a term that depends on the mode ids: declared "counts" / "clusters" falsely."""

    size: float
    structure = "counts"

    def advantages(self, rewards, modes, logp, t, num_clusters):
        base = group_rule("grpo").advantages(rewards, modes, logp, t, num_clusters)
        return base + jnp.where(modes == 1, self.size, 0.0)


def test_a_perturbed_rule_is_detected():
    """A rule that breaks its declared structure makes the reduced paths disagree with the
    enumeration (the agreement tests above can fail)."""
    rule = _ModeLeak(0.05)
    ref = expected_update(rule, PI, 3, 4, path="enumerate").theta
    for path in ("counts", "clusters"):
        out = expected_update(rule, PI, 3, 4, path=path).theta
        assert np.max(np.abs(out - ref)) > 1e-3
    # and a G2RPO gain perturbed by 1 % moves the expectation far beyond round-off
    a = expected_update(group_rule("g2rpo", params={"gain": 1.5}), PI, 3, 6).theta
    b = expected_update(group_rule("g2rpo", params={"gain": 1.515}), PI, 3, 6).theta
    assert np.max(np.abs(a - b)) > 1e-4


def test_reductions_and_surrogates():
    rule = group_rule("rloo")
    mean = expected_update(rule, PI, 3, 6)
    total = expected_update(rule, PI, 3, 6, reduction="sum")
    np.testing.assert_allclose(total.theta, 6 * mean.theta, atol=1e-14)
    prob = expected_update(rule, PI, 3, 6, surrogate="probability")
    w = mean.weights
    np.testing.assert_allclose(prob.theta, PI * w - PI * np.sum(PI * w), atol=1e-15)
    np.testing.assert_allclose(mean.probs, PI * (mean.theta - np.sum(PI * mean.theta)),
                               atol=1e-15)


def test_tends_to_the_papers_fields_like_one_over_g():
    """|finite-G field − eq. (22)| · G converges (error ∝ 1/G); G²RPO's (48) and (56) too."""
    s0 = sl.make_state(0.6, np.array([0.5, 0.3, 0.2]), np.array([0.7, 0.3]))
    for method, sch, Gs in (("grpo", None, (32, 128, 512)),
                            ("g2rpo", GainSchedule(kind="constant", neutralize=False),
                             (32, 128, 512)),
                            ("g2rpo", GainSchedule(kind="B"), (32, 128, 512))):
        lim = meanfield_system(method, sch).vector_field(0.0, s0)
        errs = []
        for G in Gs:
            d = meanfield_system(method, sch, group_size=G).vector_field(0.0, s0)
            errs.append(max(abs(float(d.p - lim.p)), float(jnp.max(jnp.abs(d.y - lim.y)))))
        errs = np.array(errs)
        assert errs[-1] < 0.3 / Gs[-1], (method, errs)
        assert 2.5 < errs[0] / errs[1] < 6 and 2.5 < errs[1] / errs[2] < 6, (method, errs)


def test_bandit_mean_step_matches_the_expected_update():
    """One SGD step of the bandit from one policy, 20,000 prompts (independent groups): the
    empirical mean logit step over η equals E[Δθ]/η within 4.5 standard errors."""
    for method, sch in (("rloo", None), ("g2rpo", GainSchedule(kind="B", gain=2.0))):
        kw = {} if sch is None else {"schedule": sch}
        sim = Bandit(K=3, M=2, method=method, num_prompts=20_000, max_group_size=6,
                     y0=(0.5, 0.3, 0.2), z0=(0.6, 0.4), **kw)
        params = {**sim.default_params(), "group_size": 6.0, "eta": 0.01, "p0": 0.4,
                  "delta_fn": 0.1, "delta_fp": 0.05}
        st = sim.init(jax.random.key(3), params)
        st1 = sim.step(st, params)
        d = np.asarray(st1.logits - st.logits) / 0.01
        dyn, s0 = sim.finite_group(params)
        theta = np.asarray(dyn.theta_drift(0.0, sl.make_state(s0.p[:1], s0.y[:1], s0.z[:1])))[0]
        se = d.std(0, ddof=1) / np.sqrt(d.shape[0])
        assert np.all(np.abs(d.mean(0) - theta) < 4.5 * se + 1e-12), (method, d.mean(0), theta)


def test_system_solves_batches_and_fixed_points():
    s0 = sl.make_state(0.6, np.array([0.5, 0.3, 0.2]), np.array([0.7, 0.3]))
    dyn = meanfield_system("grpo", group_size=8)
    sol = sl.solve(dyn, s0, t1=5.0, n_save=3)
    assert np.all(np.diff(np.asarray(sol.p)) < 0) and np.all(np.diff(np.asarray(sol.L_y)) > 0)
    batch = sl.make_state(np.array([0.6, 0.3]), np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6]]),
                          np.array([[0.7, 0.3], [0.5, 0.5]]))
    ens = sl.solve_ensemble(dyn, batch, t1=5.0, n_save=3)
    np.testing.assert_allclose(ens.p[0], sol.p, rtol=1e-6)
    # GRPO at finite G keeps block-uniform advantages: the uniform y is a (source) fixed point
    f = sl.theory.block_field(dyn, s0, "y")
    fps = sl.theory.find_fixed_points(f, 3, n_starts=1)
    full = [fp for fp in fps if len(fp.support) == 3]
    assert len(full) == 1 and full[0].kind == "source"
    np.testing.assert_allclose(full[0].point, np.full(3, 1 / 3), atol=1e-9)


def test_bad_input_is_refused_with_a_clear_error():
    rule = group_rule("grpo")
    with pytest.raises(ValueError, match="group_size"):
        expected_update(rule, PI, 3, 1)
    with pytest.raises(ValueError, match="unknown path"):
        expected_update(rule, PI, 3, 4, path="exact")
    with pytest.raises(ValueError, match="max_size.*montecarlo"):
        expected_update(group_rule("progrpo"), PI, 3, 12, path="enumerate", max_size=1000)
    with pytest.raises(ValueError, match="num_samples"):
        expected_update(rule, PI, 3, 4, path="montecarlo", num_samples=0)
    with pytest.raises(ValueError, match="simplex"):
        expected_update(rule, np.array([0.5, 0.6, -0.1]), 1, 4)
    with pytest.raises(ValueError, match="finite"):
        group_rule("g2rpo", params={"gain": np.inf})
    with pytest.raises(ValueError, match="num_groups"):
        group_rule("reinforce_pp")
    with pytest.raises(ValueError, match="does not apply"):
        expected_update(group_rule("progrpo"), PI, 3, 4, path="counts")
    with pytest.raises(ValueError, match="no exact path fits"):
        FiniteGroup(group_rule("progrpo"), group_size=40, max_size=10).resolve_path(3, 2)
    with pytest.raises(ValueError, match="callable optimizer"):
        Bandit(K=3, M=2, optimizer=lambda lr: optax.sgd(lr)).finite_group()
    with pytest.raises(ValueError, match="group_size"):
        meanfield_system("rloo", group_size=1)
    with pytest.raises(ValueError, match="pass group_size"):
        meanfield_system("rloo")


def test_every_method_has_a_finite_group_system():
    s0 = sl.make_state(0.5, np.array([0.5, 0.3, 0.2]), np.array([0.7, 0.3]))
    for method in METHODS:
        dyn = meanfield_system(method, group_size=6, num_groups=2)
        d = dyn.vector_field(0.0, s0)
        assert np.isfinite(float(d.p)) and abs(float(jnp.sum(d.y))) < 1e-12, method
        assert dyn.resolve_path(3, 2) != "montecarlo"
    # a gain per trajectory (an array leaf) runs in one ensemble
    dyn = meanfield_system("g2rpo", GainSchedule(kind="B"), group_size=6)
    dyn2 = eqx.tree_at(lambda d: d.rule.schedule.gain, dyn, jnp.array([0.5, 3.0]))
    batch = sl.make_state(np.array([0.5, 0.5]), np.array([[0.5, 0.3, 0.2]] * 2),
                          np.array([[0.7, 0.3]] * 2))
    out = dyn2.vector_field(0.0, batch)
    one = eqx.tree_at(lambda d: d.rule.schedule.gain, dyn, 3.0).vector_field(0.0, s0)
    np.testing.assert_allclose(out.y[1], one.y, atol=1e-14)


@pytest.mark.parametrize("n0", [1, 2, 3])
def test_incorrect_side_sums_by_total_equal_brute_force(n0):
    """G²RPO's incorrect-scored side: the rows of every composition and their sums by total
    of a product of two row functions (grouped rows for one or two parts, a scatter for more)
    against a sum over every count
    vector (itertools); a row that lands on the wrong total fails."""
    from simplexlab.shaping._g2rpo import _bad_rows, _by_total_dot

    G = 5
    m, b, keep = (np.asarray(x) for x in _bad_rows(G, n0, jnp.float64))
    rng = np.random.default_rng(n0)
    f = rng.uniform(0.1, 1.0, (G + 1,) * n0)  # any function of the count vector
    vals = np.where(keep, f[tuple(m.astype(int).T)], 0.0)
    y = rng.uniform(0.5, 2.0, (len(b), 2))  # the second factor of the product
    got = np.asarray(_by_total_dot(jnp.asarray(vals)[:, None], jnp.asarray(y), jnp.asarray(b),
                                   G, n0))[:, 0]  # (G+1, 2)
    want = np.zeros((G + 1, 2))
    row = {tuple(r): i for i, r in enumerate(m.astype(int)) if keep[i]}
    for counts in itertools.product(range(G + 1), repeat=n0):
        if sum(counts) <= G:
            want[sum(counts)] += f[counts] * y[row[counts]]
    np.testing.assert_allclose(got, want, rtol=1e-14)
