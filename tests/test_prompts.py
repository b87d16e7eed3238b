"""A distribution of prompts (``simplexlab.theory.PromptSet``): the silent-group fraction and the
tail-miss against independent computations (numerical integration of the Beta law, enumeration
of every reward vector, Monte Carlo with confidence bounds), and the rollouts file of a base
model read through ``simplexlab._results.read_rollouts``, a bad file refused with its line and
column."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy import integrate, stats

from simplexlab._results import read_rollouts
from simplexlab.theory import PromptSet


def _beta_expect(a, b, f):
    """``E[f(μ)]`` under Beta(a, b) by adaptive quadrature (the density's endpoint
    singularities split off)."""
    pdf = stats.beta(a, b).pdf
    parts = [integrate.quad(lambda m: f(m) * pdf(m), lo, hi, limit=400)[0]
             for lo, hi in ((0, 1e-6), (1e-6, 0.5), (0.5, 1 - 1e-6), (1 - 1e-6, 1))]
    return sum(parts)


@pytest.mark.parametrize("a, b", [(0.5, 1.5), (2.0, 2.0), (0.3, 0.7)])
def test_beta_silent_fraction_is_the_closed_form_and_matches_numerical_integration(a, b):
    ps = PromptSet.from_beta(a, b)
    G = np.array([1, 2, 3, 8, 33, 128])
    closed = ps.silent_fraction(G)
    numeric = [_beta_expect(a, b, lambda m, g=g: m**g + (1 - m) ** g) for g in G]
    np.testing.assert_allclose(closed, numeric, rtol=1e-6, atol=1e-9)
    assert closed[0] == pytest.approx(1.0)  # one rollout is always "silent"
    B = math.exp(math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
    for g, c in zip(G, closed, strict=True):  # B(a + G, b)/B(a, b) + B(a, b + G)/B(a, b)
        Bg = (math.exp(math.lgamma(a + g) + math.lgamma(b) - math.lgamma(a + b + g))
              + math.exp(math.lgamma(a) + math.lgamma(b + g) - math.lgamma(a + b + g)))
        assert c == pytest.approx(Bg / B, rel=1e-12)


def test_the_gauss_jacobi_nodes_carry_the_beta_moments_up_to_their_degree():
    """A Beta law's ``n`` nodes, taken as a histogram, give its silent fraction exactly for
    ``G <= 2n − 1`` (a polynomial of degree ``G``) and not beyond: the test can fail."""
    n = 4
    law = PromptSet.from_beta(0.5, 1.5, nodes=n)
    nodes = PromptSet.histogram(law.pass_rates, law.weights)
    G = np.arange(1, 2 * n)
    np.testing.assert_allclose(nodes.silent_fraction(G), law.silent_fraction(G), rtol=1e-12)
    far = 4 * n
    assert abs(nodes.silent_fraction(far) - law.silent_fraction(far)) > 1e-3


@pytest.mark.parametrize("a, b", [(0.5, 1.5), (0.5, 0.5), (1.0, 1.0), (0.05, 3.0), (40.0, 0.3)])
@pytest.mark.parametrize("n", [1, 2, 5, 16, 129])
def test_the_gauss_jacobi_nodes_are_scipys_and_integrate_the_beta_moments(a, b, n):
    """The nodes and weights (Golub–Welsch on the Jacobi matrix) against scipy's
    ``roots_jacobi`` (Newton on the recurrence), and their moments ``E[μ^j]`` against the closed
    form ``B(a + j, b)/B(a, b)`` for every ``j <= 2n − 1`` (up to 40): ``a + b = 1`` and
    ``a + b = 2`` are the Jacobi matrix's cancelled cases (α + β = −1, 0)."""
    from scipy.special import roots_jacobi

    from simplexlab.theory._prompts import _beta_nodes

    x, w = _beta_nodes(a, b, n)
    xs, ws = roots_jacobi(n, b - 1.0, a - 1.0)
    np.testing.assert_allclose(x, (xs + 1) / 2, rtol=0, atol=1e-8)
    np.testing.assert_allclose(w, ws / ws.sum(), rtol=0, atol=1e-8)
    j = np.arange(min(2 * n, 41))
    exact = np.exp([math.lgamma(a + k) - math.lgamma(a + b + k) - math.lgamma(a)
                    + math.lgamma(a + b) for k in j])
    np.testing.assert_allclose([np.sum(w * x**k) for k in j], exact, rtol=1e-11, atol=1e-14)


def test_a_histograms_silent_fraction_and_signal_by_enumerating_every_reward_vector():
    ps = PromptSet.histogram([0.0, 0.2, 0.55, 0.9, 1.0], [1, 3, 2, 2, 1])
    mu, w = ps.arrays()
    for G in (2, 3, 5, 8):
        silent = 0.0
        for i, m in enumerate(mu):
            for r in itertools.product((0, 1), repeat=G):
                p = np.prod([m if x else 1 - m for x in r])
                silent += w[i] * p * (len(set(r)) == 1)
        assert ps.silent_fraction(G) == pytest.approx(silent, abs=1e-14)
        assert ps.signal(G) == pytest.approx(1 - silent, abs=1e-14)


def test_tail_miss_per_prompt_against_monte_carlo_of_groups_over_the_modes():
    """Each prompt's tail-miss (a mixed group with no rollout of its rarest good mode): the
    closed form against 40 000 sampled groups per prompt, within 4.5 standard errors."""
    good = [(0.3, 0.1, 0.02), (0.5, 0.2), (0.05,)]
    mu = [sum(g) for g in good]
    ps = PromptSet(tuple(mu), (1 / 3,) * 3, good_masses=tuple(tuple(g) for g in good))
    rng = np.random.default_rng(0)
    n = 40_000
    for G in (4, 16):
        exact = ps.tail_miss(G)
        for i, g in enumerate(good):
            p = np.array([*g, 1 - sum(g)])
            draws = rng.choice(p.size, size=(n, G), p=p)
            correct = draws < len(g)
            mixed = correct.any(1) & ~correct.all(1)
            miss = ~(draws == len(g) - 1).any(1)  # the rarest good mode is the last
            hit = mixed & miss
            se = max(hit.std() / np.sqrt(n), 1e-4)
            assert abs(hit.mean() - exact[i]) < 4.5 * se, (G, i, hit.mean(), exact[i])
    expected = ps.expected_tail_miss(16)
    assert expected == pytest.approx(ps.tail_miss(16).mean(), rel=1e-12)


def test_beta_expected_tail_miss_matches_numerical_integration():
    ps = PromptSet.from_beta(0.5, 1.5)
    s = 0.125
    for G in (2, 8, 64, 200):
        numeric = _beta_expect(0.5, 1.5, lambda m, g=G: (1 - s * m) ** g - (m - s * m) ** g
                               - (1 - m) ** g)
        assert ps.expected_tail_miss(G, rare_share=s) == pytest.approx(numeric, rel=1e-6,
                                                                       abs=1e-10)


def test_pool_keeps_the_weights_and_the_mean_pass_rate():
    rng = np.random.default_rng(1)
    mu = rng.beta(0.5, 1.5, 1000)
    ps = PromptSet.histogram(mu)
    pool = ps.pool(16)
    assert pool.size == 16 and sum(pool.weights) == pytest.approx(1.0)
    assert pool.mean_pass_rate() == pytest.approx(ps.mean_pass_rate(), rel=1e-12)
    assert list(pool.pass_rates) == sorted(pool.pass_rates)
    assert ps.pool(2000) is ps
    law = PromptSet.from_beta(2, 3, nodes=8).pool(5)
    assert law.size == 5 and law.beta == (2.0, 3.0)


def test_policies_hold_the_pass_rates_and_the_representative_composition():
    ps = PromptSet.histogram([0.2, 0.7])
    pi = ps.policies(4, 2)
    np.testing.assert_allclose(pi.sum(-1), 1.0)
    np.testing.assert_allclose(pi[:, :4].sum(-1), [0.2, 0.7])
    np.testing.assert_allclose(pi[:, 0] / pi[:, :4].sum(-1), 1 / 8)  # rare_share = 1/(2K)
    np.testing.assert_allclose(pi[:, 1:4] / pi[:, :4].sum(-1, keepdims=True), 7 / 24)
    np.testing.assert_allclose(pi[:, 4:], np.outer([0.8, 0.3], [0.5, 0.5]))
    with pytest.raises(ValueError, match="rare_share"):
        ps.policies(4, 2, rare_share=0.3)
    probs = np.array([[0.1, 0.3, 0.2, 0.4], [0.25, 0.25, 0.4, 0.1]])
    np.testing.assert_allclose(PromptSet.from_policies(probs, 2).policies(2, 2), probs)


@pytest.mark.parametrize("bad", [(0.0, 1.0), (-1.0, 2.0), (1.0, math.inf), (math.nan, 1.0)])
def test_beta_parameters_must_be_positive(bad):
    with pytest.raises(ValueError, match="Beta parameter"):
        PromptSet.from_beta(*bad)


# --------------------------------------------------------------------------- rollouts files


def _write_jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_a_rollouts_file_gives_each_prompts_pass_rate_and_mode_masses(tmp_path):
    rows = []
    for r, m in ((1, "a"), (1, "a"), (1, "b"), (0, "x"), (0, "y"), (0, "y"), (1, "a"), (0, "x")):
        rows.append({"prompt_id": "p1", "reward": r, "mode_id": m})
    rows += [{"prompt_id": 7, "reward": 0.5, "mode_id": "a"},
             {"prompt_id": 7, "reward": 0.0, "mode_id": "z"}]
    ps = PromptSet.from_rollouts(_write_jsonl(tmp_path / "r.jsonl", rows))
    assert ps.ids == ("7", "p1") and ps.rollouts == (2, 8)
    np.testing.assert_allclose(ps.pass_rates, [0.25, 0.5])
    np.testing.assert_allclose(ps.good_masses[1], [3 / 8, 1 / 8])  # a: 3 of 8, b: 1 of 8
    np.testing.assert_allclose(ps.bad_masses[1], [2 / 8, 2 / 8])
    np.testing.assert_allclose(ps.good_masses[0], [0.25])  # half a reward over 2 rollouts
    assert ps.rarest_masses().tolist() == [0.25, 0.125]
    csv = tmp_path / "r.csv"
    csv.write_text("prompt_id,reward,mode_id\n" + "".join(
        f"{r['prompt_id']},{r['reward']},{r['mode_id']}\n" for r in rows))
    same = PromptSet.from_rollouts(csv)
    for field in ("pass_rates", "good_masses", "bad_masses", "ids", "rollouts"):
        assert getattr(same, field) == getattr(ps, field), field
    jeff = PromptSet.from_rollouts(csv, estimator="jeffreys")
    np.testing.assert_allclose(jeff.pass_rates, [(0.5 + 0.5) / 3, (4 + 0.5) / 9])
    assert sum(jeff.good_masses[1]) == pytest.approx(jeff.pass_rates[1])
    # a name for the source: in the result and in an error (the file's own line numbers)
    named = PromptSet.from_rollouts(csv, name="my base model")
    assert named.source == "my base model (2 prompts, 10 rollouts)"
    assert str(csv) in same.source
    with pytest.raises(ValueError, match=r"^my base model, line 1, column 'prompt_id': prompt '7'"):
        PromptSet.from_rollouts(_write_jsonl(tmp_path / "one.jsonl", rows[-1:] + rows[:2]),
                                name="my base model")


def test_a_rollouts_file_without_modes_and_its_silent_fraction(tmp_path):
    rng = np.random.default_rng(2)
    mu = rng.uniform(size=50)
    lines = ["prompt,score"] + [f"q{i},{int(rng.uniform() < m)}" for i, m in enumerate(mu)
                                for _ in range(16)]
    (tmp_path / "r.csv").write_text("\n".join(lines))
    ps = PromptSet.from_rollouts(tmp_path / "r.csv")
    assert ps.good_masses is None and ps.size == 50
    rewards = read_rollouts(tmp_path / "r.csv")["reward"].reshape(50, 16)
    k = rewards.sum(1)
    silent = np.mean((k / 16) ** 8 + (1 - k / 16) ** 8)
    assert ps.silent_fraction(8) == pytest.approx(silent, rel=1e-12)


@pytest.mark.parametrize("text, suffix, where", [
    ("prompt_id,mode_id\np,a\np,b\n", ".csv", r"line 1 \(the header\): no column 'reward'"),
    ('{"prompt_id": "p", "reward": 1}\n{"prompt_id": "p", "reward": 0}\n{"reward": 1}\n',
     ".jsonl", r"line 3, column 'prompt_id': missing"),
    ("prompt_id,reward\np,1\np,0\np,1.5\n", ".csv",
     r"line 4, column 'reward': 1.5 is outside \[0, 1\]"),
    ("prompt_id,reward\np,1\np,nan\n", ".csv", r"line 3, column 'reward': 'nan' is not finite"),
    ('{"prompt_id": "p", "reward": 1}\n{"prompt_id": "p", "reward": -0.1}\n', ".jsonl",
     r"line 2, column 'reward': -0.1 is outside"),
    ('{"prompt_id": "p", "reward": "yes"}\n', ".jsonl",
     r"line 1, column 'reward': 'yes' is not a number"),
    ("prompt_id,reward\np,1\n\nq,0\nq,1\n", ".csv",
     r"line 2, column 'prompt_id': prompt 'p' has 1 rollout"),
    ("", ".csv", r"no rollouts"),
    ("prompt_id,reward\n", ".csv", r"no rollouts"),
    ('{"prompt_id": "p", "reward": 1, "mode_id": "a"}\n{"prompt_id": "p", "reward": 0}\n',
     ".jsonl", r"line 2, column 'mode_id': line 1 gives a mode and this one does not"),
    ('{"prompt_id": "a", "reward": 1}\n{"prompt_id": "a", "reward": 0, "completion": "x"}\n',
     ".jsonl", r"line 2, column 'completion': line 1 gives no completion and this one does"),
    ('{"prompt_id": "a", "reward": 1, "completion": 3}\n', ".jsonl",
     r"line 1, column 'completion': 3 is not a completion"),
    ("prompt_id,reward\np,1,3\n", ".csv", r"line 2: 3 fields, the header has 2"),
    ('{"prompt_id": "p", "reward": 1}\n[1, 2]\n', ".jsonl", r"line 2: not a JSON object"),
    ('{"prompt_id": "", "reward": 1}\n', ".jsonl", r"line 1, column 'prompt_id': the id is empty"),
])
def test_a_bad_rollouts_file_is_refused_with_its_line_and_column(tmp_path, text, suffix, where):
    path = tmp_path / f"bad{suffix}"
    path.write_text(text)
    with pytest.raises(ValueError, match=where) as err:
        PromptSet.from_rollouts(path)
    assert str(path) in str(err.value)


def test_a_folder_is_not_a_rollouts_file(tmp_path):
    with pytest.raises(ValueError, match="is a folder"):
        read_rollouts(tmp_path)
