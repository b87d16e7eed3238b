"""The group size as data in the finite-group theory (``max_group_size``): one compiled program
serves every group size up to a static bound, and gives the per-G program's numbers to
round-off. Checked against the per-G programs themselves (the static path, which the rest of
the suite checks against enumeration, brute force and Monte Carlo), for every count rule of
METHODS, G²RPO's own reduction and its partition path (mean and second moments); the compile
count by ``jax.monitoring``; a rule that ignores the padding is caught."""

import equinox as eqx
import jax
import jax.monitoring
import jax.numpy as jnp
import numpy as np
import pytest

from simplexlab.shaping import METHODS, GainSchedule, group_rule
from simplexlab.theory import (
    AbstractGroupRule,
    FiniteGroup,
    Verifier,
    expected_moments,
    expected_update,
    make_state,
    solve_ensemble,
)

PI = np.array([0.3, 0.2, 0.1, 0.25, 0.15])  # K = 3 good, M = 2 bad
K = 3
NOISY = Verifier(0.1, 0.05)
BOUND = 12
COUNT_METHODS = [m for m, d in METHODS.items() if d.structure == "counts" and d.group_local]
#: G²RPO schedules whose own reduction applies (its "rule" path), perfect verifier
G2RPO_SCHEDULES = [GainSchedule(kind="B", neutralize=True),
                   GainSchedule(kind="B", p_damp=0.3, p_min=0.1, Lz_min=0.6, gain=2.5,
                                cluster_bad=False),
                   GainSchedule(kind="constant", neutralize=False),
                   GainSchedule(kind="A", neutralize=False)]

_COMPILES = []


def _listen(event, duration, **kwargs):
    if event.endswith("backend_compile_duration"):
        _COMPILES.append(event)


jax.monitoring.register_event_duration_secs_listener(_listen)


def _close(a, b, scale):
    """Equal to round-off: float64 sums in another order (the padded arrays)."""
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-13 * scale)


#: the methods whose paths are built for one group size: refused with the group size as data
ONE_SIZE = {"reinforce_pp", "grpo_batch_std", "unlikeliness"}


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_with_the_group_size_as_data_equals_the_per_G_program(method):
    """Every rule of METHODS (noisy verifier): the counts path and the rules' own reductions
    give the per-G numbers at G = 2, 7 and the bound from one program; the rest are refused,
    saying why."""
    rule = group_rule(method, verifier=NOISY, num_groups=None if METHODS[method].group_local
                      else 3)
    if method in ONE_SIZE:
        with pytest.raises(ValueError, match="no exact path serves the group size as data"):
            expected_update(rule, PI, K, 4, verifier=NOISY, max_group_size=BOUND)
        return
    for G in (max(2, rule.min_group_size), 7, BOUND):
        ref = expected_update(rule, PI, K, G, verifier=NOISY)
        out = expected_update(rule, PI, K, G, verifier=NOISY, max_group_size=BOUND)
        assert ref.path == out.path
        assert out.path == ("counts" if method in COUNT_METHODS else "rule")
        _close(out.theta, ref.theta, 1.0 + np.max(np.abs(ref.theta)))
        _close(out.cell_totals, ref.cell_totals, 1.0 + np.max(np.abs(ref.cell_totals)))


@pytest.mark.parametrize("schedule", G2RPO_SCHEDULES, ids=["B", "B-damped", "constant", "A"])
def test_g2rpo_own_reduction_with_the_group_size_as_data(schedule):
    rule = group_rule("g2rpo", schedule=schedule)
    for G in (2, 5, BOUND):
        ref = expected_update(rule, PI, K, G)
        out = expected_update(rule, PI, K, G, max_group_size=BOUND)
        assert ref.path == out.path == "rule"
        _close(out.theta, ref.theta, 1.0 + np.max(np.abs(ref.theta)))


@pytest.mark.parametrize(("schedule", "verifier"),
                         [(GainSchedule(kind="A"), NOISY),
                          (GainSchedule(kind="B", B_max=0.5), Verifier())],
                         ids=["A-neutralized-noisy", "B-clipped"])
def test_the_partition_path_with_the_group_size_as_data(schedule, verifier):
    """G²RPO where its own reduction does not apply (neutralized schedule A; B with its bonus
    clipped): the partition path's mean and second moments from one program for every G up to the
    bound (the tables of every total, the groups padded and masked) against the per-G
    programs, whose second moments come from the enumeration of every outcome at these sizes
    (an independent path); no new program for a new G."""
    rule = group_rule("g2rpo", schedule=schedule, verifier=verifier)
    v = {"verifier": verifier}
    for G in (2, 5, BOUND):
        ref = expected_update(rule, PI, K, G, **v)
        out = expected_update(rule, PI, K, G, max_group_size=BOUND, **v)
        assert ref.path == out.path == "clusters"
        _close(out.theta, ref.theta, 1.0 + np.max(np.abs(ref.theta)))
        ref = expected_moments(rule, PI, K, G, num_groups=2, **v)
        out = expected_moments(rule, PI, K, G, num_groups=2, max_group_size=BOUND, **v)
        assert out.path == "clusters"
        assert ref.path == "enumerate" or G == BOUND  # the noisy verifier's 10 cells at 12
        _close(out.covariance, ref.covariance, 1.0)
        _close(out.cell_second, ref.cell_second, 1.0 + np.max(np.abs(ref.cell_second)))
    _COMPILES.clear()
    for G in (3, 7):
        expected_moments(rule, PI, K, G, num_groups=2, max_group_size=BOUND, **v)
    assert _COMPILES == []


def test_one_program_serves_every_group_size():
    rule = group_rule("grpo", verifier=NOISY)
    expected_update(rule, PI, K, 3, verifier=NOISY, max_group_size=BOUND)  # compiles once
    _COMPILES.clear()
    for G in (2, 5, 9, BOUND):
        expected_update(rule, PI, K, G, verifier=NOISY, max_group_size=BOUND)
    assert _COMPILES == []
    for G in (3, 4):  # against: the per-G programs compile one each
        expected_update(rule, PI, K, G, verifier=NOISY)
    assert len(_COMPILES) >= 2


def test_second_moments_with_the_group_size_as_data():
    rule = group_rule("dr_grpo", verifier=NOISY)
    for G in (2, 6, BOUND):
        ref = expected_moments(rule, PI, K, G, verifier=NOISY, num_groups=3)
        out = expected_moments(rule, PI, K, G, verifier=NOISY, num_groups=3,
                               max_group_size=BOUND)
        assert ref.path == out.path == "counts"
        _close(out.covariance, ref.covariance, 1.0)
        _close(out.cell_second, ref.cell_second, 1.0 + np.max(np.abs(ref.cell_second)))


def _state(n):
    rng = np.random.default_rng(3)
    return make_state(np.full(n, 0.6), rng.dirichlet(np.ones(3), n), rng.dirichlet(np.ones(2), n))


def test_finite_group_field_and_solve_with_one_group_size_per_trajectory():
    """One FiniteGroup, one group size per state: each row's field is the per-G system's (to
    round-off), and one ``solve_ensemble`` follows the per-G solves (to the solver's tolerance:
    the ensemble shares its steps)."""
    Gs = np.array([2.0, 5.0, 8.0])
    rule = group_rule("grpo", verifier=NOISY)
    dyn = FiniteGroup(rule, group_size=Gs, max_group_size=8, verifier=NOISY)
    S = _state(3)
    field = dyn.vector_field(0.0, S)
    sol = solve_ensemble(dyn, S, t1=2.0, n_save=2, rtol=1e-10, atol=1e-12)
    for i, G in enumerate(Gs):
        one = FiniteGroup(rule, group_size=int(G), verifier=NOISY)
        s = jax.tree_util.tree_map(lambda a, i=i: a[i], S)
        f = one.vector_field(0.0, s)
        _close(field.y[i], f.y, 1.0)
        _close(field.p[i], f.p, 1.0)
        if G == 5:  # one trajectory's solve against its per-G system's
            ref = solve_ensemble(one, jax.tree_util.tree_map(lambda a, i=i: a[i:i + 1], S),
                                 t1=2.0, n_save=2, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(sol.state.y[i, -1], ref.state.y[0, -1], atol=1e-8)
    # the group size of a system given as data takes a new value without a new program
    f = eqx.filter_jit(lambda d, s: d.vector_field(0.0, s))
    f(dyn, S)
    other = eqx.tree_at(lambda d: d.group_size, dyn, jnp.asarray([3.0, 4.0, 6.0]))
    _COMPILES.clear()
    f(other, S)
    assert _COMPILES == []


def test_bad_group_sizes_are_refused():
    rule = group_rule("grpo")
    for bad in (13, 3.5, 1, np.nan):
        with pytest.raises(ValueError, match="group_size must be whole numbers in"):
            expected_update(rule, PI, K, bad, max_group_size=BOUND)
    with pytest.raises(ValueError, match="group_size must be whole numbers in"):
        FiniteGroup(rule, group_size=[2, 20], max_group_size=BOUND)
    with pytest.raises(ValueError, match="max_group_size"):
        FiniteGroup(rule, group_size=4, max_group_size=1)
    # traced: a run-time check inside the program
    f = jax.jit(lambda G: expected_update(rule, PI, K, G, max_group_size=BOUND).theta)
    assert np.all(np.isfinite(f(jnp.asarray(4.0))))
    with pytest.raises(Exception, match="group_size must be a whole number"):
        jax.block_until_ready(f(jnp.asarray(13.0)))
    # paths built for one group size say so
    for path, why in (("enumerate", "outcome tables"), ("montecarlo", "sampled groups")):
        with pytest.raises(ValueError, match=why):
            expected_update(rule, PI, K, 4, path=path, max_group_size=BOUND)


class _NoMask(AbstractGroupRule):
    """GRPO's z-score as a theory-level rule that takes no ``mask``."""

    structure = "counts"

    def advantages(self, rewards, modes, logp, t, num_clusters):
        return group_rule("grpo").advantages(rewards, modes, logp, t, num_clusters)


class _IgnoresMask(_NoMask):
    """... and one that takes ``mask`` and ignores it (z-scores the padding too)."""

    def advantages(self, rewards, modes, logp, t, num_clusters, mask=None):
        return super().advantages(rewards, modes, logp, t, num_clusters)


class _ClustersIgnoresMask(_IgnoresMask):
    """... declared with the cluster symmetry (z-scores are symmetric in the mode ids): the
    partition path with the group size as data."""

    structure = "clusters"


def test_a_rule_that_cannot_or_does_not_mask_is_caught():
    with pytest.raises(ValueError, match="take no mask"):
        expected_update(_NoMask(), PI, K, 4, path="counts", max_group_size=BOUND)
    with pytest.raises(ValueError, match="take no mask"):
        expected_update(_NoMask(), PI, K, 4, path="clusters", max_group_size=BOUND)
    ref = expected_update(_NoMask(), PI, K, 4).theta
    for rule in (_IgnoresMask(), _ClustersIgnoresMask()):
        out = expected_update(rule, PI, K, 4, max_group_size=BOUND)
        assert out.path == rule.structure
        assert np.max(np.abs(out.theta - ref)) > 1e-3  # the comparisons above can fail


def test_the_budget_planner_compiles_one_moments_program_for_every_group_size(monkeypatch):
    """``plan_budget``'s per-prompt moments: one program for the whole grid of group sizes
    (the counts path), the same report as one program per size to round-off."""
    from simplexlab.theory import PromptSet
    from simplexlab.verify import _budget, plan_budget

    prompts = PromptSet.from_beta(0.5, 1.5, nodes=4)
    small = {"pool_size": 6, "num_features": 3}
    compiled = []
    real = _budget._compile
    monkeypatch.setattr(_budget, "_compile", lambda low, options: compiled.append(1) or real(
        low, options))
    shared = plan_budget(8, prompts, **small)  # sizes 2, 4, 8
    assert len(compiled) == 1
    monkeypatch.setattr(_budget, "_shared_bound", lambda s, sizes: None)
    compiled.clear()
    per = plan_budget(8, prompts, **small)
    assert len(compiled) == 3  # against: one program per size
    for o in shared.optimizers:
        np.testing.assert_allclose(shared.progress[o], per.progress[o], rtol=1e-11)
        np.testing.assert_allclose(shared.eta[o], per.eta[o], rtol=1e-11)
        assert shared.best[o] == per.best[o]


def test_the_single_state_planner_compiles_one_drift_program_for_every_size(monkeypatch):
    """``plan``: G²RPO's drift at every size (and the bisection's) from one program with the
    group size as data; the same drifts as one program per size to round-off."""
    from simplexlab.verify import _plan, plan

    compiled = []
    real = _plan._compile
    monkeypatch.setattr(_plan, "_compile", lambda low, options: compiled.append(1) or real(
        low, options))
    kw = {"group_sizes": (4, 6, 8, 12), "drift_group_sizes": "all"}
    shared = plan(0.3, **kw)
    n_shared = len(compiled)
    real_system = _plan._finite_system
    monkeypatch.setattr(_plan, "_finite_system", lambda *a, max_group_size=None: None
                        if max_group_size is not None else real_system(*a))
    compiled.clear()
    per = plan(0.3, **kw)
    assert n_shared == len(compiled) - 3  # four drift programs against one
    np.testing.assert_allclose(shared.drift, per.drift, rtol=1e-10)
    assert shared.regime == per.regime and shared.recommended == per.recommended


def test_the_counts_coefficients_are_the_binomial_and_poisson_laws():
    """The counts' and partitions' coefficients come from a host table of ``log k!``
    (``log_factorial``), not ``lgamma`` in the program: against ``math.comb`` and
    ``math.factorial`` (exact integers), with ``n`` static, and traced below a bound (zero
    beyond ``n``, the same numbers for every ``n`` under one program); a fraction refused."""
    import math

    from simplexlab.theory.internal import binomial_pmf, log_factorial, poisson_pmf

    q = jnp.asarray(0.3)
    for n in (0, 1, 7, 40):
        exact = [math.comb(n, s) * 0.3**s * 0.7 ** (n - s) for s in range(n + 1)]
        np.testing.assert_allclose(np.asarray(binomial_pmf(n, q)), exact, rtol=1e-12)
    traced = jax.jit(lambda n: binomial_pmf(n, q, 16))
    for n in (0, 5, 16):
        got = np.asarray(traced(jnp.asarray(float(n))))
        exact = [math.comb(n, s) * 0.3**s * 0.7 ** (n - s) if s <= n else 0.0
                 for s in range(17)]
        np.testing.assert_allclose(got, exact, rtol=1e-12, atol=1e-300)
    lam = jnp.asarray([0.5, 3.0])
    k = np.arange(12)
    want = [[math.exp(-r) * r**i / math.factorial(i) for i in k] for r in (0.5, 3.0)]
    np.testing.assert_allclose(np.asarray(poisson_pmf(lam[:, None], k)), want, rtol=1e-12)
    at = jax.jit(lambda n: poisson_pmf(jnp.asarray(3.0), n, 11))(jnp.asarray(7.0))
    assert float(at) == pytest.approx(math.exp(-3.0) * 3.0**7 / math.factorial(7), rel=1e-12)
    assert log_factorial(np.asarray([0, 1, 20]))[2] == pytest.approx(math.log(math.factorial(20)),
                                                                      rel=1e-15)
    with pytest.raises(ValueError, match="log_factorial: n must be non-negative integers"):
        log_factorial(np.asarray([2.5]))
