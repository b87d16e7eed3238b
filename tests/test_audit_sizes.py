"""Sizes bounded up front (issue 57, item 3): the planner's modes, grid and drift programs, the
finite-group theory's exact tables and Monte Carlo arrays, and the ``[verify]`` bandit ensemble
(by XLA's own memory analysis) are estimated before anything is built, and work that cannot
finish is refused in one line naming the estimate and the keyword to change.

No test allocates anything large or compiles a large program: where the code before these
guards would have started the work, the work's entry point is replaced by one that fails the
test at once."""

import numpy as np
import pytest

from simplexlab import shaping, theory
from simplexlab.theory import _finite_paths
from simplexlab.verify import _plan, plan


def _one_line(err) -> None:
    assert "\n" not in str(err.value), str(err.value)


def _forbid(monkeypatch, owner, name: str) -> None:
    """``owner.name`` being called fails the test: the work it starts comes after every
    refusal."""
    monkeypatch.setattr(owner, name, lambda *a, **k: pytest.fail("compute started"))


@pytest.fixture
def no_drift(monkeypatch):
    """The planner's drift programs being compiled fails the test."""
    _forbid(monkeypatch, _plan, "_run_programs")


@pytest.fixture
def small_partition_counts(monkeypatch):
    """A count of partitions beyond 10^7 table cells fails the test (at G = 10^9 the count's
    table was 37 GiB; at K = 100,000 it ran for minutes)."""
    count = _finite_paths._count_partitions

    def guarded(G, max_parts):
        assert (G + 1) * (max_parts + 1) <= 10**7, f"partition count table {G} x {max_parts}"
        return count(G, max_parts)

    monkeypatch.setattr(_finite_paths, "_count_partitions", guarded)


@pytest.mark.parametrize("K", [300, 100_000])
def test_plan_refuses_more_modes_than_it_can_compile(K, no_drift, small_partition_counts):
    """``plan -K 300`` ended the process (``std::bad_alloc``) after 73 s, ``-K 100000`` ran
    forever: refused at once, naming the keyword to raise; raised, the plan goes on."""
    with pytest.raises(ValueError, match=rf"K \+ M = {K + 2:,} modes is more than "
                                         rf"max_modes = 64: .*; pass max_modes={K + 2}") as err:
        plan(0.5, K=K)
    _one_line(err)
    with pytest.raises(pytest.fail.Exception, match="compute started"):
        plan(0.5, K=K, max_modes=K + 2, drift_group_sizes=[4])


def test_plan_at_a_huge_group_size_skips_the_drift_without_counting_partitions(
        small_partition_counts):
    """``plan --group-sizes 10^9`` ended in a 37 GiB numpy traceback (the partition path's
    size was counted cell by cell): now its drift is a note, its sampling columns are
    computed (closed forms), and the count of partitions is never started."""
    rep = plan(0.5, group_sizes=[10**9])
    assert rep.group_sizes == (10**9,) and np.isnan(rep.drift[0])
    assert "G = 1000000000: no exact path" in rep.notes[0]
    assert rep.signal[0] == pytest.approx(1.0)


class _Huge:
    """A grid of a billion group sizes that must never be listed."""

    def __len__(self):
        return 10**9

    def __iter__(self):
        raise AssertionError("the grid was listed")


def test_plan_refuses_a_grid_whose_columns_cannot_fit(no_drift):
    with pytest.raises(ValueError, match=r"group_sizes: 1,000,000,000 group sizes × 6 modes "
                                         r"need about [\d,]+ bytes") as err:
        plan(0.5, group_sizes=_Huge())
    _one_line(err)


def test_plan_bounds_the_drift_programs(no_drift):
    grid = list(range(2, 101))
    with pytest.raises(ValueError, match=r"up to 99 drift programs .* max_programs = 64 .*; "
                                         r"pass max_programs=99") as err:
        plan(0.5, group_sizes=grid, drift_group_sizes="all")
    _one_line(err)
    with pytest.raises(ValueError, match="up to 73 drift programs"):  # + the bisection's steps
        plan(0.5, group_sizes=grid, drift_group_sizes=grid[:66], avoid_collision=True,
             min_signal=0.0, max_tail_miss=1.0)
    with pytest.raises(pytest.fail.Exception, match="compute started"):
        plan(0.5, group_sizes=grid, drift_group_sizes="all", max_programs=99)
    for bad in (0, True, 2.5):
        with pytest.raises(ValueError, match="max_programs must be an integer >= 1"):
            plan(0.5, max_programs=bad)


@pytest.fixture
def no_montecarlo(monkeypatch):
    _forbid(monkeypatch, _finite_paths, "_montecarlo_totals")


@pytest.mark.parametrize("method", ["grpo", "g2rpo"])
@pytest.mark.parametrize("G", [10**6, 10**9])
def test_expected_update_refuses_monte_carlo_that_cannot_fit(method, G, no_montecarlo,
                                                             small_partition_counts):
    """``expected_update`` at G = 10^6 / 10^9 fell back to Monte Carlo and died allocating
    393 GB / 426 TB: the estimate names num_samples; a smaller num_samples goes on."""
    rule = shaping.group_rule(method)
    probs = np.full(3, 1 / 3)
    with pytest.raises(ValueError, match=r"path='montecarlo' at G = [\d,]+ .* num_samples = "
                                         r"4,096 .* needs about [\d,]+ bytes, more than half "
                                         r"of this machine's memory .*; lower num_samples") as err:
        theory.expected_update(rule, probs, 1, G)
    _one_line(err)
    if G == 10**6:
        with pytest.raises(pytest.fail.Exception, match="compute started"):
            theory.expected_update(rule, probs, 1, G, num_samples=2)


def test_finite_group_refuses_monte_carlo_that_cannot_fit(no_montecarlo):
    dyn = theory.FiniteGroup(shaping.group_rule("grpo"), group_size=10**7, path="montecarlo")
    with pytest.raises(ValueError, match="lower num_samples"):
        dyn.resolve_path(2, 1)


def test_exact_tables_beyond_the_memory_are_refused(monkeypatch):
    """A ``max_size`` raised past the machine's memory: the enumeration's tables are refused
    before they are built (naming max_size)."""
    from simplexlab import _checks

    monkeypatch.setattr(_checks, "host_memory_bytes", lambda: 10**6)
    rule = shaping.group_rule("grpo")
    with pytest.raises(ValueError, match=r"path='enumerate' .* lower max_size"):
        theory.expected_update(rule, np.full(3, 1 / 3), 1, 40, path="enumerate",
                               max_size=10**9)


def _partition_pairs(G, n1, n0):
    """The pairs of partitions (at most ``n1`` / ``n0`` parts) whose totals add up to ``G``,
    listed one by one (independent of the counting in _finite_paths)."""
    def parts(n, k, largest=None):
        largest = n if largest is None else largest
        if n == 0:
            yield ()
            return
        if k == 0:
            return
        for first in range(min(n, largest), 0, -1):
            for rest in parts(n - first, k - 1, first):
                yield (first, *rest)

    return sum(len(list(parts(a, n1))) * len(list(parts(G - a, n0))) for a in range(G + 1))


@pytest.mark.parametrize("G, n1, n0", [(6, 3, 2), (7, 100, 2), (5, 4, 0), (8, 9, 9)])
def test_cluster_size_counts_the_pairs_and_bounds_cheaply(G, n1, n0, small_partition_counts):
    assert _finite_paths.cluster_size(G, n1, n0) == _partition_pairs(G, n1, n0) * G
    # the group size as data below the bound G: the pairs of every total 1..G, each padded to G
    assert (_finite_paths.cluster_size(G, n1, n0, traced=True)
            == sum(_partition_pairs(g, n1, n0) for g in range(1, G + 1)) * G)
    assert _finite_paths.cluster_size(10**9, 4, 2, bound=4_000_000) > 4_000_000


def test_verify_counts_what_xla_will_allocate(monkeypatch):
    """``[verify] group_size = 10^7`` passed the memory guard (which counted the bandit's own
    arrays) and died in XLA: the guard now adds up XLA's memory analysis of the compiled
    ensemble (2.7 GB here at 2 seeds, against a 4 GiB machine), before anything is solved or
    simulated."""
    from simplexlab import _checks
    from simplexlab.shaping import GainSchedule
    from simplexlab.verify import _verify, verify_schedule

    monkeypatch.setattr(_checks, "host_memory_bytes", lambda: 4 * 2**30)
    _forbid(monkeypatch, _verify, "solve")
    with pytest.raises(ValueError, match=r"verify_schedule: the bandit ensemble \(seeds = 2 × "
                                         r"group_size = 10,000,000.* XLA's memory analysis") as e:
        verify_schedule(GainSchedule(), group_size=10**7, seeds=2, num_steps=20)
    _one_line(e)
