"""The partition programme's second moment (simplexlab.theory._finite_paths,
``clusters_second_moments``): the cell second moments of G²RPO (schedules B and constant, with
the neutralizer) and of a count rule equal the enumeration of every multinomial outcome at small
sizes, with a perfect and a noisy verifier; its cell totals are the mean's partition path's,
bit for bit; its size estimate counts the rows it builds; and "auto" takes it where the
enumeration does not fit (G²RPO at K + M = 8, G = 16)."""

import jax
import numpy as np
import pytest

from simplexlab.shaping import GainSchedule, group_rule
from simplexlab.sim import Bandit
from simplexlab.theory import Verifier, expected_moments, expected_update
from simplexlab.theory._finite_paths import (
    _cluster_second_tables,
    _cluster_tables,
    cluster_second_size,
)

PI = np.array([0.3, 0.2, 0.1, 0.25, 0.15])  # K = 3 good, M = 2 bad
NOISY = Verifier(0.1, 0.05)
RULES = {"g2rpo-B": ("g2rpo", GainSchedule(kind="B", neutralize=True, gain=1.5)),
         "g2rpo-constant": ("g2rpo", GainSchedule(kind="constant", neutralize=True, gain=1.2)),
         "grpo": ("grpo", None)}


@pytest.mark.parametrize("name,verifier", [("g2rpo-B", Verifier()), ("g2rpo-B", NOISY),
                                            ("g2rpo-constant", NOISY), ("grpo", NOISY)],
                         ids=["g2rpo-B-perfect", "g2rpo-B-noisy", "g2rpo-constant-noisy",
                              "grpo-noisy"])
def test_clusters_second_moment_equals_the_enumeration(name, verifier):
    method, schedule = RULES[name]
    kw = {} if schedule is None else {"schedule": schedule}
    rule = group_rule(method, verifier=verifier, **kw)
    G = 4
    a = expected_moments(rule, PI, 3, G, verifier=verifier, path="clusters")
    b = expected_moments(rule, PI, 3, G, verifier=verifier, path="enumerate")
    assert (a.path, b.path) == ("clusters", "enumerate")
    np.testing.assert_allclose(a.cell_second, b.cell_second, rtol=0, atol=5e-14)
    np.testing.assert_allclose(a.covariance, b.covariance, rtol=0, atol=1e-15)
    assert np.max(np.abs(a.covariance)) > 1e-2  # not a comparison of zeros
    if name == "g2rpo-B" and verifier == NOISY:
        # the first moment is the mean's partition path, bit for bit
        mean = expected_update(rule, PI, 3, G, verifier=verifier, path="clusters")
        np.testing.assert_array_equal(a.cell_totals, mean.cell_totals)


def test_a_rule_that_breaks_the_symmetry_is_detected():
    """ProGRPO weighs a rollout by its own log-probability (structure 'general'): run on the
    partition programme's representative groups anyway (declared 'clusters' by a subclass), its
    second moment misses the enumeration's (the comparison can fail)."""
    import equinox as eqx

    from simplexlab.theory._finite_paths import _cells, active_cells, clusters_second_moments

    rule = group_rule("progrpo", params={"progrpo_alpha": 0.5})
    probs = jax.numpy.asarray(PI)

    @eqx.filter_jit
    def clusters(r, p):
        q1, q0 = _cells(Verifier(), p, 3)
        return clusters_second_moments(r, q1, q0, p, 4, 0.0, 5, *active_cells(Verifier(), 3, 2))

    M2 = np.asarray(clusters(rule, probs)[1])
    ref = np.asarray(expected_moments(rule, PI, 3, 4, path="enumerate").cell_second)
    assert np.max(np.abs(M2 - ref)) > 1e-3


@pytest.mark.parametrize("G,n1,n0", [(5, 3, 2), (6, 5, 5), (7, 1, 3), (8, 4, 0)])
def test_the_size_counts_the_rows_it_builds(G, n1, n0):
    from simplexlab.theory._finite_paths import cluster_size

    good, bad = tuple(range(n1)), tuple(range(n1, n1 + n0))
    s1, s0, cross = _cluster_second_tables(G, n1, n0, good, bad)
    built = (len(s1) * (n1 * (n1 - 1) // 2) + len(s0) * (n0 * (n0 - 1) // 2)
             + len(cross) * (n1 + n0))
    assert cluster_second_size(G, n1, n0) == cluster_size(G, n1, n0) + built
    assert cluster_second_size(10**9, 4, 2, bound=4_000_000) > 4_000_000  # bounded, fast
    # the group size as data: the tables of every total up to the bound G
    s1, s0, cross = _cluster_second_tables(G, n1, n0, good, bad, True)
    built = (len(s1) * (n1 * (n1 - 1) // 2) + len(s0) * (n0 * (n0 - 1) // 2)
             + len(cross) * (n1 + n0))
    pairs = _cluster_tables(G, n1, n0, good, bad, True)[4]
    assert cluster_size(G, n1, n0, traced=True) == pairs * G
    assert cluster_second_size(G, n1, n0, traced=True) == pairs * G + built


def test_auto_takes_the_partition_programme_where_the_enumeration_does_not_fit():
    """G²RPO, schedule B with the neutralizer, at the bandit's initial policy (K = 6, M = 2,
    G = 16): the enumeration needs 5.9 million table entries, the partition programme fits;
    its covariance is positive semi-definite, sums to zero on the log-likelihood surrogate and
    matches Monte Carlo within 4.5 standard errors."""
    _, s0 = Bandit(K=6, M=2, max_group_size=16).finite_group(
        {"group_size": 16, "p0": 0.7, "instance": 0})
    probs = np.asarray(s0.policy())[0]
    rule = group_rule("g2rpo", schedule=GainSchedule(kind="B", neutralize=True, gain=1.5))
    out = expected_moments(rule, probs, 6, 16)
    assert out.path == "clusters"
    cov = np.asarray(out.covariance)
    np.testing.assert_allclose(cov @ np.ones(8), 0.0, atol=1e-12)
    assert np.min(np.linalg.eigvalsh(cov)) > -1e-12
    mc = expected_moments(rule, probs, 6, 16, path="montecarlo", num_samples=20_000,
                          key=jax.random.key(5))
    assert np.all(np.abs(mc.covariance - cov) <= 4.5 * mc.stderr + 1e-12)
    assert np.all(np.abs(mc.mean - out.mean) <= 4.5 * mc.mean_stderr + 1e-12)
