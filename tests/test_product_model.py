"""G²RPO App. E toy product model: the laws of log10 π(h) and of the within-batch range, the
``Product`` simulator, the paper's Tables 2–4, bad input, and the ``product-model`` experiment.

References, computed here independently of the code under test: brute-force enumeration of
every sequence (small T) and of every group of draws (small laws); the App. E closed form
``T E[log10 p]``, ``sqrt(T Var)`` re-typed with ``math.log10``; ``0.8^80`` for the likeliest
sequence; the exact integer representation of ``log10 p`` over ``{1, log10 2, log10 3}`` for the
number of distinct values; ``math.log10`` of the paper's printed counts (Table 4); a NumPy Monte
Carlo of the sample standard deviation. The printed values are the paper's (App. E).
"""

import contextlib
import io
import itertools
import json
import math

import jax
import numpy as np
import pytest

from simplexlab import lab, sweep
from simplexlab import theory as S
from simplexlab.sim import SIMULATORS, Product

P = (0.8, 0.1, 0.05, 0.03, 0.02)
T, G, N, B = 80, 10, 20_000, 500
LOG10 = [math.log10(p) for p in P]
MEAN1 = sum(p * x for p, x in zip(P, LOG10, strict=True))  # E[log10 p(X)], one token
VAR1 = sum(p * (x - MEAN1) ** 2 for p, x in zip(P, LOG10, strict=True))
MU4_1 = sum(p * (x - MEAN1) ** 4 for p, x in zip(P, LOG10, strict=True))
MEAN, SD = T * MEAN1, math.sqrt(T * VAR1)
# kurtosis of a sum of T i.i.d. terms: μ4 = T κ4 + 3 (T σ²)², κ4 = μ4 − 3σ⁴ of one term
KURT = (T * (MU4_1 - 3 * VAR1**2) + 3 * (T * VAR1) ** 2) / (T * VAR1) ** 2


@pytest.fixture(scope="module")
def dist():
    return S.product_log10_distribution(P, T)


@pytest.fixture(scope="module")
def range_law(dist):
    return S.range_distribution(dist, G, resolution=0.01)


def _brute_law(probs, length):
    """The law of log10 π(h) over every one of the V^T sequences (values rounded to merge)."""
    law, exact = {}, {}
    for seq in itertools.product(range(len(probs)), repeat=length):
        x = sum(math.log10(probs[i]) for i in seq)
        k = round(x, 9)
        exact.setdefault(k, x)
        law[k] = law.get(k, 0.0) + math.prod(probs[i] for i in seq)
    keys = sorted(law)
    return np.array([exact[k] for k in keys]), np.array([law[k] for k in keys])


# ---- the law of log10 π(h) -------------------------------------------------------------------


@pytest.mark.parametrize("probs,length", [(P, 3), ((0.5, 0.3, 0.2), 5), ((0.6, 0.4), 7),
                                          ((1.0,), 4)])
def test_exact_law_and_moments_equal_brute_force(probs, length):
    v, w = _brute_law(probs, length)
    d = S.product_log10_distribution(probs, length)
    np.testing.assert_allclose(d.values, v, atol=1e-8)
    np.testing.assert_allclose(d.pmf, w, rtol=1e-12, atol=1e-15)
    mean = float(w @ v)
    c = v - mean
    m = S.product_log10_moments(probs, length)
    assert m.mean == pytest.approx(mean, abs=1e-12)
    assert m.sd == pytest.approx(math.sqrt(w @ c**2), abs=1e-12)
    if len(probs) > 1:
        sd = math.sqrt(w @ c**2)
        assert m.skewness == pytest.approx((w @ c**3) / sd**3, abs=1e-10)
        assert m.excess_kurtosis == pytest.approx((w @ c**4) / sd**4 - 3, abs=1e-10)


def test_closed_form_and_exact_law_at_paper_scale(dist):
    """T = 80: the App. E closed form, the exact enumeration and 0.8^80 agree."""
    m = S.product_log10_moments(P, T)
    assert m.mean == pytest.approx(MEAN, abs=1e-12) and m.sd == pytest.approx(SD, abs=1e-12)
    assert round(MEAN, 3) == -25.780 and round(SD, 3) == 4.153
    assert dist.pmf.sum() == pytest.approx(1.0, abs=1e-14)
    assert dist.mean() == pytest.approx(MEAN, abs=1e-10)
    assert dist.sd() == pytest.approx(SD, abs=1e-10)
    assert dist.kurtosis() == pytest.approx(KURT, abs=1e-9)
    assert dist.values[-1] == pytest.approx(T * math.log10(0.8), abs=1e-12)
    assert dist.pmf[-1] == pytest.approx(0.8**T, rel=1e-10)
    assert dist.values[0] == pytest.approx(T * math.log10(0.02), abs=1e-10)
    assert dist.pmf[0] == pytest.approx(0.02**T, rel=1e-9)


def test_distinct_values_are_the_distinct_exact_representations(dist):
    """log10 p = (3L2 − 1, −1, −L2 − 1, L3 − 2, L2 − 2) with L2 = log10 2, L3 = log10 3, and
    {1, L2, L3} are linearly independent over Q: two count vectors have the same value iff they
    have the same integer triple (3a − c + e, d, a + b + c + 2d + 2e)."""
    n = np.arange(T + 1)
    b, c, d = (x.ravel() for x in np.meshgrid(n, n, n, indexing="ij"))
    order = np.argsort(b + c + d, kind="stable")
    b, c, d = b[order], c[order], d[order]
    s = (b + c + d)
    keys = []
    for a in range(T + 1):  # every (b, c, d) with b + c + d <= T - a, then e = T - a - b - c - d
        m = np.searchsorted(s, T - a, side="right")
        bb, cc, dd = b[:m], c[:m], d[:m]
        e = T - a - bb - cc - dd
        # the triple's coordinates are whole numbers in [-80, 240], [0, 80], [0, 160]
        keys.append(((3 * a - cc + e + 80) * 81 + dd) * 161 + (a + bb + cc + 2 * dd + 2 * e))
    key = np.concatenate(keys)
    assert key.size == math.comb(T + 4, 4)
    assert dist.values.size == np.unique(key).size == 347_921
    assert np.all(np.diff(dist.values) > 1e-5)


# ---- the range law and the extremes --------------------------------------------------------


def _brute_group(values, pmf, n):
    """Laws of (min, max, range) of n i.i.d. draws, by enumerating every n-tuple."""
    mins, maxs, rngs = {}, {}, {}
    for idx in itertools.product(range(len(values)), repeat=n):
        w = math.prod(pmf[i] for i in idx)
        lo, hi = min(values[i] for i in idx), max(values[i] for i in idx)
        for tab, k in ((mins, lo), (maxs, hi), (rngs, round(hi - lo, 12))):
            tab[k] = tab.get(k, 0.0) + w
    return mins, maxs, rngs


SMALL = S.DiscreteDistribution(np.array([-3.7, -2.05, -1.0, -0.61, 0.0]),
                               np.array([0.1, 0.25, 0.3, 0.15, 0.2]))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_range_law_and_extremes_equal_brute_force(n):
    mins, maxs, rngs = _brute_group(SMALL.values.tolist(), SMALL.pmf.tolist(), n)
    lo, hi = SMALL.extremes(n)
    np.testing.assert_allclose(lo.pmf, [mins.get(v, 0.0) for v in SMALL.values], atol=1e-15)
    np.testing.assert_allclose(hi.pmf, [maxs.get(v, 0.0) for v in SMALL.values], atol=1e-15)
    h = 1e-3
    law = S.range_distribution(SMALL, n, resolution=h)
    r = np.array(sorted(rngs))
    w = np.array([rngs[x] for x in r])
    mean = w @ r
    assert abs(law.mean() - mean) <= h
    assert abs(law.sd() - math.sqrt(w @ (r - mean) ** 2)) <= h
    for x in r:  # the CDF between the exact atoms is exact (the lattice moves each by <= h)
        exact = w[r <= x + 1e-12].sum()
        assert law.cdf(x + 2 * h) == pytest.approx(exact, abs=1e-12)
        assert law.cdf(x - 2 * h) == pytest.approx(exact - rngs[x], abs=1e-12)


def test_range_law_mean_equals_exact_difference_of_extremes(dist, range_law):
    """E[range] = E[max] − E[min], both exact sums over the 347,921 values; the lattice law
    is within its resolution 0.01."""
    F = np.cumsum(dist.pmf)
    Fm = np.concatenate([[0.0], F[:-1]])
    e_max = dist.values @ (F**G - Fm**G)
    e_min = dist.values @ ((1 - Fm) ** G - (1 - F) ** G)
    assert abs(range_law.mean() - (e_max - e_min)) <= 0.01
    assert range_law.pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert 12.7 < range_law.mean() < 12.8 and 3.25 < range_law.sd() < 3.35


def test_sample_sd_standard_error_against_monte_carlo(rng):
    """σ sqrt((κ − 1)/(4n)) against 4,000 replicate samples of size 400 of a skewed law
    (κ ≈ 4.4); the Monte Carlo sd has a relative error of ~1.3 %, we allow 8 %."""
    d = S.DiscreteDistribution(np.array([0.0, 1.0, 4.0]), np.array([0.5, 0.4, 0.1]))
    laws = S.summary_statistic_laws(d, 400)
    x = rng.choice(d.values, size=(4000, 400), p=d.pmf)
    sds = x.std(1, ddof=1)
    assert np.std(sds) == pytest.approx(laws["std"].se, rel=0.08)
    assert np.mean(sds) == pytest.approx(laws["std"].expected, abs=4 * np.std(sds) / 63)
    means = x.mean(1)
    assert np.std(means) == pytest.approx(laws["mean"].se, rel=0.08)
    # a z = 1 interval of the exact min law excludes at most 2Φ(−1) = 31.7 % of replicates
    law1 = S.summary_statistic_laws(d, 400, z=1.0)["max"]
    outside = np.mean([not law1.contains(v) for v in x.max(1)])
    assert outside <= 0.317 + 4 * math.sqrt(0.317 * 0.683 / 4000)


# ---- the simulator -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One quick run of the ``product-model`` experiment (its stdout captured); its sweep's
    Dataset (``cache/product-model-quick.nc``) is the simulator's raw output, which the
    simulator tests below check on their own (8 replicate streams of 2,500 batches: 2,000 for
    Table 2's 20,000 sequences, 500 for Table 3)."""
    out = tmp_path_factory.mktemp("product-model")
    lab.load_experiment_module("product_model")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rec = lab.run_experiment("product-model", quick=True, out=out)
    return out, rec, buf.getvalue()


@pytest.fixture(scope="module")
def stream(run):
    import xarray as xr

    with xr.open_dataset(run[0] / "cache" / "product-model-quick.nc") as ds:
        ds = ds.load()
    return ds


@pytest.fixture(scope="module")
def batches(stream):
    """Replicate stream 0: counts ``(2500, G, 5)``, log10 π ``(2500, G)``, steps."""
    return (stream.counts.values[0], stream.log10_prob.values[0], stream.step.values)


def test_simulator_batches_are_multinomial_sequences(batches):
    counts, lp, step = batches
    assert counts.shape == (N // G + B, G, 5) and step.tolist() == list(range(N // G + B))
    assert np.all(counts.sum(-1) == T) and np.all(counts >= 0)
    np.testing.assert_allclose(lp, counts @ np.array(LOG10), atol=1e-12)
    total = counts.reshape(-1, 5).sum(0)
    n_tok = counts.shape[0] * G * T
    expected = n_tok * np.array(P)
    assert np.all(np.abs(total - expected) <= 4 * np.sqrt(expected * (1 - np.array(P))))


def test_simulator_statistics_match_the_exact_laws_within_4_se(batches, dist, range_law):
    """Table 2 and Table 3 statistics of one stream within 4 standard errors of the closed form
    (mean, sd) and inside the exact central 1 − 2Φ(−4) intervals (min, max)."""
    _, lp, _ = batches
    x = lp[: N // G].ravel()
    assert abs(x.mean() - MEAN) <= 4 * SD / math.sqrt(N)
    assert abs(x.std(ddof=1) - SD) <= 4 * SD * math.sqrt((KURT - 1) / (4 * N))
    laws = S.summary_statistic_laws(dist, N)
    assert laws["mean"].se == pytest.approx(SD / math.sqrt(N), rel=1e-9)
    assert laws["min"].contains(x.min()) and laws["max"].contains(x.max())
    r = np.ptp(lp[N // G:], axis=-1)
    laws3 = S.summary_statistic_laws(range_law, B)
    for k, v in (("min", r.min()), ("max", r.max()), ("mean", r.mean()),
                 ("std", r.std(ddof=1))):
        assert laws3[k].contains(v), (k, v, laws3[k][:4])


def test_simulator_through_the_sweep_engine(stream):
    """Registered by name; the Dataset's layout; replicate streams differ; batch s of a stream
    is ``draw(key, s)`` (independent of the stride and of the batch before it)."""
    assert SIMULATORS["product"] is Product
    assert stream.log10_prob.dims == ("seed", "step", "sequence")
    assert stream.counts.dims == ("seed", "step", "sequence", "token")
    assert stream.counts.shape == (8, N // G + B, G, 5)
    assert not np.array_equal(stream.counts.values[0], stream.counts.values[1])
    key = jax.random.wrap_key_data(stream.key_data.values[3])
    draw = jax.jit(Product().draw)
    for s in (0, 1234, N // G + B - 1):
        np.testing.assert_array_equal(np.asarray(draw(key, s)),
                                      stream.counts.values[3, s])


def test_group_size_is_an_array_parameter_and_padding_is_inert():
    """A run padded to a larger ``max_group_size`` draws the same sequences bit for bit (the
    padding rows are 0 counts and NaN ``log10_prob``; ``log10_prob``, a matrix-vector product
    whose summation order XLA picks by shape, within 1 ulp); one sweep program covers several
    group sizes, each equal to its own unpadded run; a traced bad group size is a run-time
    error."""
    key = jax.random.key(7)
    for dtype in ("float64", "float32"):
        ref = Product(group_size=6, length=9, dtype=dtype).batches(key, 3)
        assert ref.counts.shape == (3, 6, 5)
        pad = Product(group_size=6, max_group_size=16, length=9, dtype=dtype).batches(key, 3)
        np.testing.assert_array_equal(np.asarray(pad.counts[:, :6]), np.asarray(ref.counts))
        np.testing.assert_array_equal(np.asarray(pad.log10_prob[:, :6]),
                                      np.asarray(ref.log10_prob))
        assert np.all(np.asarray(pad.counts[:, 6:]) == 0)
        assert np.all(np.isnan(np.asarray(pad.log10_prob[:, 6:])))
    ds = sweep.run("product", {"group_size": [2, 6, 11]},
                   fixed={"max_group_size": 12, "length": 9, "num_steps": 2}, seeds=2,
                   progress=False)
    assert ds.counts.shape == (3, 2, 3, 12, 5)
    for i, g in enumerate((2, 6, 11)):
        one = sweep.run("product", {}, fixed={"group_size": g, "max_group_size": g, "length": 9,
                                              "num_steps": 2}, seeds=2, progress=False)
        np.testing.assert_array_equal(ds.counts.values[i][..., :g, :], one.counts.values)
        np.testing.assert_array_max_ulp(ds.log10_prob.values[i][..., :g],
                                        one.log10_prob.values, maxulp=1)
        assert np.all(np.asarray(ds.counts.values[i][..., g:, :]) == 0)
    sim = Product(max_group_size=8)
    run = jax.jit(lambda g: sim.init(key, {"group_size": g}).counts)
    assert run(3.0).shape == (8, 5)
    for bad in (1.0, 9.0, 2.5):
        with pytest.raises(Exception, match="group_size"):
            jax.block_until_ready(run(bad))


# ---- the paper's tables --------------------------------------------------------------------

TABLE2 = {"min": -44.06, "max": -10.76, "mean": -25.81, "std": 4.16}
TABLE3 = {"min": 4.12, "max": 22.20, "mean": 12.70, "std": 3.25}


def test_paper_tables_2_and_3_within_sampling_noise(dist, range_law):
    """Each printed value lies in the central 1 − 2Φ(−4) interval of its statistic's law
    (mean, sd: ±4 SE with SE = σ/√n, σ sqrt((κ − 1)/(4n)) computed here), ± the rounding."""
    assert abs(TABLE2["mean"] - MEAN) <= 4 * SD / math.sqrt(N) + 0.005
    assert abs(TABLE2["std"] - SD) <= 4 * SD * math.sqrt((KURT - 1) / (4 * N)) + 0.005
    laws2 = S.summary_statistic_laws(dist, N)
    laws3 = S.summary_statistic_laws(range_law, B)
    for laws, table in ((laws2, TABLE2), (laws3, TABLE3)):
        for k, v in table.items():
            assert laws[k].contains(v, 0.005), (k, v, laws[k][:4])
    # the min of 20,000 sits mid-law: P(min <= -44.06) = 1 − P(X > -44.06)^N
    assert laws2["min"].cdf(-44.06) == pytest.approx(1 - (1 - dist.cdf(-44.06)) ** N,
                                                     abs=1e-9)


def test_paper_table4_rows_follow_from_their_counts():
    rows = [((69, 7, 2, 0, 2), -19.69, 2.06e-20), ((68, 7, 4, 1, 0), -20.32, 4.82e-21),
            ((67, 7, 2, 1, 3), -22.71, 1.93e-23), ((66, 7, 4, 2, 1), -23.34, 4.52e-24),
            ((65, 5, 5, 3, 2), -25.77, 1.69e-26), ((62, 10, 4, 3, 1), -27.48, 3.31e-28),
            ((60, 11, 5, 2, 2), -29.76, 1.72e-30), ((60, 9, 6, 4, 1), -30.41, 3.88e-31),
            ((60, 7, 10, 2, 1), -30.57, 2.69e-31), ((60, 8, 8, 2, 2), -30.67, 2.16e-31)]
    counts = np.array([r[0] for r in rows])
    ours = S.product_log10_prob(counts, P)
    for (c, lg, pr), v in zip(rows, ours, strict=True):
        ref = sum(n * x for n, x in zip(c, LOG10, strict=True))
        assert sum(c) == T and v == pytest.approx(ref, abs=1e-12)
        assert abs(ref - lg) <= 0.005 and abs(10**ref / pr - 1) <= 0.006
    jx = S.product_log10_prob(jax.numpy.asarray(counts), P)
    np.testing.assert_allclose(np.asarray(jx), ours, atol=1e-12)


# ---- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize("probs,match", [
    ((0.8, 0.3), "simplex"), ((0.9, 0.2, -0.1), "non-negative"), ((1.0, 0.0), "> 0"),
    ((0.5, float("nan")), "finite"), ([[0.5, 0.5]], "vector"), ("abc", "number"),
])
def test_bad_probabilities(probs, match):
    with pytest.raises(ValueError, match=match):
        S.product_log10_moments(probs, T)
    with pytest.raises(ValueError, match=match):
        S.product_log10_distribution(probs, 3)
    with pytest.raises(ValueError, match="probs"):
        Product(probs=probs)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "80"])
def test_bad_length(bad):
    with pytest.raises(ValueError, match="length"):
        S.product_log10_moments(P, bad)
    with pytest.raises(ValueError, match="length"):
        Product(length=bad)


def test_bad_group_size_and_other_arguments(dist):
    for bad in (1, 0, 2.5):
        with pytest.raises(ValueError, match="group_size"):
            Product(group_size=bad)
        with pytest.raises(ValueError, match="group_size"):
            S.range_distribution(SMALL, bad)
    with pytest.raises(ValueError, match="group_size"):
        sweep.run("product", {"group_size": [10, 1]}, fixed={"num_steps": 2}, progress=False)
    with pytest.raises(ValueError, match="max_group_size = 10"):  # a bound the sweep sets
        sweep.run("product", {"group_size": [10, 11]}, fixed={"num_steps": 2,
                  "max_group_size": 10}, progress=False)


def test_sweep_over_group_sizes_pads_to_the_largest():
    """Without a bound, a product sweep is one program padded to its largest group size (the
    sweep adapter's ``pad``): every run has the same shape, a run's counts are those of the
    unpadded run of its group size, the padding rows are 0."""
    ds = sweep.run("product", {"group_size": [3, 5]}, fixed={"num_steps": 2}, seeds=2,
                   progress=False)
    counts = ds["counts"].values  # (group_size, seed, step, sequence, token)
    assert counts.shape[-2] == 5
    assert (counts[0, :, :, 3:] == 0).all() and (counts[0, :, :, :3].sum(-1) == 80).all()
    for i, G in enumerate((3, 5)):
        ref = sweep.run("product", {}, fixed={"num_steps": 2, "group_size": G}, seeds=2,
                        progress=False)["counts"].values
        np.testing.assert_array_equal(counts[i, ..., :G, :], ref)
    for bad in (1, 11, 2.5, True):
        with pytest.raises(ValueError, match="group_size"):
            Product(group_size=bad, max_group_size=10)
    with pytest.raises(ValueError, match="max_group_size"):
        Product(max_group_size=1)
    with pytest.raises(ValueError, match="unknown setting"):
        Product.make(G=10)
    with pytest.raises(ValueError, match="resolution"):
        S.range_distribution(SMALL, 3, resolution=0.0)
    with pytest.raises(ValueError, match="sample_size"):
        S.summary_statistic_laws(SMALL, 1)
    with pytest.raises(ValueError, match="z must"):
        S.summary_statistic_laws(SMALL, 10, z=-1.0)
    with pytest.raises(ValueError, match="count vectors"):
        S.product_log10_distribution(P, 1000)
    with pytest.raises(ValueError, match="counts"):
        S.product_log10_prob(np.array([79, 1, 0, 0, -0]) - np.array([0, 2, 0, 0, 0]), P)
    with pytest.raises(ValueError, match="counts"):
        S.product_log10_prob(np.array([1.5, 0, 0, 0, 0]), P)
    with pytest.raises(ValueError, match="last axis"):
        S.product_log10_prob(np.array([1, 2]), P)
    with pytest.raises(ValueError, match="strictly increasing"):
        S.range_distribution(S.DiscreteDistribution(np.array([1.0, 0.0]), np.array([.5, .5])), 2)
    with pytest.raises(ValueError, match="sum to 1"):
        S.summary_statistic_laws(S.DiscreteDistribution(np.array([0.0, 1.0]),
                                                        np.array([.5, .6])), 10)
    with pytest.raises(ValueError, match="num_batches"):
        Product().batches(jax.random.key(0), 0)


# ---- the experiment ------------------------------------------------------------------------


def test_experiment_quick(run):
    tmp_path, rec, out = run
    assert rec["figures"] == ["product_model.png"]
    assert (tmp_path / "product_model.png").stat().st_size > 20_000
    on_disk = json.loads((tmp_path / "product-model.json").read_text())
    assert on_disk["results"] == json.loads(json.dumps(rec["results"]))
    res = rec["results"]
    for t, table in (("table2", TABLE2), ("table3", TABLE3)):
        assert {k: v["paper"] for k, v in res[t].items()} == table
    assert res["table2"]["mean"]["expected"] == pytest.approx(MEAN, abs=1e-10)
    assert res["table2"]["mean"]["se"] == pytest.approx(SD / math.sqrt(N), rel=1e-9)
    s = res["statements"]
    for k in ("closed_form_equals_exact_enumeration", "table2_paper_within_noise",
              "table3_paper_within_noise", "table2_ours_within_noise",
              "table3_ours_within_noise", "table4_paper_rows_consistent"):
        assert s[k] is True, k
    rows = res["table4"]["ours"]["rows"]
    assert len(rows) == G and all(sum(r["counts"]) == T for r in rows)
    lps = [r["log10_prob"] for r in rows]
    assert lps == sorted(lps, reverse=True)
    assert "Table 2" in out and "Table 3" in out and "Table 4" in out and "-44.06" in out
