"""The budget planner (``simplexlab.verify.plan_budget``, ``budget_curve``, ``simplexlab plan
--budget``): its progress-optimal rate and progress per step against Monte Carlo of the shared
bandit's step on a grid of rates, the single-state planner as its one-prompt case, the
compute-optimal ``G*`` as the argmax of its column, the regimes of the noise scale, its refusals
and the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from simplexlab.lab._cli import main
from simplexlab.sim import SharedBandit
from simplexlab.theory import PromptSet
from simplexlab.verify import bandit_progress, bandit_resolution, budget_curve, plan, plan_budget

BETA = PromptSet.from_beta(0.5, 1.5)
SMALL = {"pool_size": 8, "num_features": 4}


@pytest.fixture(scope="module")
def report():
    return plan_budget(32, BETA, **SMALL)


def test_g_star_is_the_argmax_of_the_progress_column_with_its_margin(report):
    r = report
    assert r.group_sizes == (2, 4, 8, 16, 32)
    assert r.num_prompts == (16, 8, 4, 2, 1)
    for o in r.optimizers:
        v = np.asarray(r.progress[o])
        i = int(np.argmax(v))
        assert r.best[o] == r.group_sizes[i]
        near = [v[j] for j in (i - 1, i + 1) if 0 <= j < len(v)]
        assert r.margin[o] == pytest.approx(v[i] / max(near) - 1)
        np.testing.assert_allclose(r.per_rollout[o], v / 32)
        # Φ(η) on the report's grid of rates: largest at η* (the optimum inside the grid)
        grid = r.eta_grid[o]
        assert max(grid, key=lambda kv: kv[1])[0] == 1.0
    np.testing.assert_allclose(r.silent, BETA.silent_fraction(np.asarray(r.group_sizes)))
    d = json.loads(json.dumps(r.to_dict()))
    G = r.best["sgd"]
    assert d["trl"] == {"num_generations": G, "generation_batch_size": 32}
    assert d["verl"] == {"actor_rollout_ref.rollout.n": G, "data.train_batch_size": 32 // G}
    text = r.to_text()
    assert f"num_generations={G}" in text and f"data.train_batch_size={32 // G}" in text


def test_the_progress_optimal_rate_and_progress_match_the_shared_bandits_step():
    """The bandit's one step from the start on the rates ``η*·{0.5, 1, 2}``: the measured
    ``E[ΔF] − β E[KL]`` (the pass rate over the pool, the exact KL of each prompt's policy) is
    largest at ``η*`` and, up to ``η*``, matches the second-order ``Φ`` within 4 standard errors
    plus 5 % of ``Φ*`` (at ``2η*`` the third-order terms are larger)."""
    s = SharedBandit(K=4, M=2, prompts=BETA, pool_size=8, num_features=4, num_prompts=4,
                     max_group_size=4)
    base = {**s.default_params(), "group_size": 4}
    kl = 1.0
    pr = s.progress({**base, "eta": 1.0}, "pass", kl=kl)
    n = 8000
    rates = (0.5, 1.0, 2.0)
    mean, se = bandit_progress(BETA, 16, 4, [k * float(pr.eta) for k in rates], seeds=n, seed=5,
                               kl=kl, K=4, M=2, pool_size=8, num_features=4)
    got = dict(zip(rates, mean, strict=True))
    for k, m, e in zip(rates[:2], mean, se, strict=False):
        assert 0 < e < 0.1 * abs(m)  # the standard error of the mean of n runs
        assert abs(m - float(pr.at(k * pr.eta))) < 4 * e + 0.05 * pr.progress, \
            (k, m, float(pr.at(k * pr.eta)))
    assert got[1.0] > got[0.5] and got[1.0] > got[2.0]


def test_one_prompt_is_the_single_state_planner():
    """``plan(mu)``'s sampling columns are the budget planner's for one prompt of pass rate
    ``mu``: signal = 1 − silent fraction, the same tail-miss (τ = μ/(2K))."""
    sizes = [2, 4, 8, 16]
    old = plan(0.3, K=4, method="grpo", group_sizes=sizes, drift_group_sizes=[4])
    new = plan_budget(16, PromptSet.single(0.3), K=4, group_sizes=sizes, **SMALL)
    np.testing.assert_allclose(old.signal, 1 - np.asarray(new.silent), rtol=1e-12)
    np.testing.assert_allclose(old.tail_miss, new.tail_miss, rtol=1e-10)


def test_the_noise_scale_sets_the_regime_and_the_progress_per_step():
    """SGD: ``Φ*(P) = Φ*_∞ / (1 + B_noise/P)`` with ``B_noise`` independent of ``P``; small
    budgets are noise-dominated, large ones small-noise (one-hot features)."""
    curve = budget_curve(BETA, budgets=(4, 64, 2**16), group_sizes=(4,), optimizers=("sgd",),
                         features="onehot", pool_size=8)
    reg = [row[0] for row in curve.regime["sgd"]]
    assert reg[0] == "noise-dominated" and reg[-1] == "small-noise"
    reports = [plan_budget(R, BETA, group_sizes=(4,), optimizers=("sgd",), features="onehot",
                           pool_size=8) for R in (8, 64)]
    B = [r.noise_scale["sgd"][0] for r in reports]
    assert B[0] == pytest.approx(B[1], rel=1e-9)
    P = np.array([2, 16])
    phi = np.array([r.progress["sgd"][0] for r in reports])
    inf = phi * (1 + B[0] / P)
    assert inf[0] == pytest.approx(inf[1], rel=1e-9)


@pytest.mark.parametrize("kwargs, match", [
    ({"budget": 1}, r"budget \(R, rollouts per step\) must be an integer >= 2"),
    ({"budget": 30, "num_prompts": 4}, r"R = 30 does not divide into P = 4"),
    ({"budget": 16, "num_prompts": 16}, r"leaves G = 1 rollouts per prompt"),
    ({"budget": 16, "group_sizes": (4, 6)}, r"group_sizes \[6\]: each must divide"),
    ({"budget": 16, "objective": "recall"}, r"unknown objective 'recall'"),
    ({"budget": 16, "kl": 0.0}, r"kl .* must be > 0"),
    ({"budget": 16, "objective": "diversity"}, r"'grpo' cannot reach the objective 'diversity'"),
    ({"budget": 16, "method": "reinforce_pp"}, r"normalises over its batch|num_groups"),
    ({"budget": 16, "optimizers": ("lion",)}, r"optimizers must be"),
])
def test_bad_input_is_refused_with_the_reason(kwargs, match):
    kw = {**SMALL, **kwargs}
    R = kw.pop("budget")
    with pytest.raises(ValueError, match=match):
        plan_budget(R, BETA, **kw)


@pytest.mark.parametrize("args, kwargs, match", [
    ((16, 3, [1.0]), {}, "group_size 3 does not divide the budget 16"),
    ((16, 4, [1.0, 0.0]), {}, r"etas must be finite rates > 0; got \[1.0, 0.0\]"),
    ((16, 4, []), {}, "etas must be finite rates > 0"),
    ((16, 4, [1.0]), {"seeds": 1}, "seeds"),
    ((1, 1, [1.0]), {}, "budget"),
])
def test_bandit_progress_refuses_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        bandit_progress(BETA, *args, **kwargs)


def test_the_bandits_resolution_is_the_sizes_whose_interval_reaches_the_best():
    # best 1.0 ± 0.1 at G = 4, its lower end 1.0 - 2·0.1 = 0.8: G = 2 reaches it (0.72 + 0.1),
    # G = 8 too (0.5 + 0.4), G = 16 not (0.6 + 0.1)
    best = {2: (0.72, 0.05), 4: (1.0, 0.1), 8: (0.5, 0.2), 16: (0.6, 0.05)}
    assert bandit_resolution(best) == (4, [2, 4, 8])
    assert bandit_resolution({6: (0.2, 0.0)}) == (6, [6])
    with pytest.raises(ValueError, match="no group sizes"):
        bandit_resolution({})


def test_prompts_must_be_a_prompt_set():
    with pytest.raises(ValueError, match="prompts must be a PromptSet"):
        plan_budget(16, (0.5, 1.5))


# --------------------------------------------------------------------------- the command line


def _one_error_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_cli_budget_prints_g_star_for_trl_and_verl_and_writes_json_and_figure(tmp_path, capsys):
    rows = tmp_path / "rollouts.csv"
    rng = np.random.default_rng(0)
    rows.write_text("prompt_id,reward\n" + "".join(
        f"p{i},{int(rng.uniform() < mu)}\n" for i, mu in enumerate(rng.beta(0.5, 1.5, 40))
        for _ in range(8)))
    out = tmp_path / "plan"
    assert main(["plan", "--budget", "16", "--pass-rates", str(rows), "--pool-size", "8",
                 "--num-features", "4", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    rec = json.loads((out / "budget.json").read_text())
    G = rec["best"]["sgd"]
    assert f"GRPOConfig(num_generations={G}, generation_batch_size=16)" in text
    assert f"actor_rollout_ref.rollout.n={G} data.train_batch_size={16 // G}" in text
    assert rec["curve"]["budgets"] and rec["provenance"]["simplexlab_version"]
    assert "40 prompts" in rec["inputs"]["prompts"]
    assert (out / "budget.png").stat().st_size > 10_000


@pytest.mark.parametrize("argv, match", [
    (["--budget", "16", "--beta", "0,1"], "Beta parameter a must be a finite number > 0"),
    (["--budget", "16", "--beta", "1"], "--beta wants two numbers"),
    (["--budget", "16"], "exactly one of --pass-rates FILE"),
    (["--budget", "16", "--beta", "1,1", "--mu", "0.3"], "got --beta and --mu"),
    (["--budget", "30", "--beta", "1,1", "--num-prompts", "4"], "does not divide"),
    (["--budget", "16", "--beta", "1,1", "--objective", "diversity"], "cannot reach"),
    (["--budget", "16", "--beta", "1,1", "--tau", "0.1"], "--tau: settings of the single"),
    (["--beta", "1,1"], "--beta go with --budget"),
    (["--mu", "0.3", "--discover-modes"], "--discover-modes go with --budget"),
    (["--budget", "16", "--beta", "1,1", "--discover-modes"], "give --pass-rates FILE"),
    ([], "plan needs --mu P"),
])
def test_cli_budget_bad_input_is_one_line(argv, match, capsys):
    assert main(["plan", *argv]) == 2
    assert match in _one_error_line(capsys)


def test_cli_budget_bad_files_are_one_line_with_line_and_column(tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt_id": "a", "reward": 1}\n{"prompt_id": "a", "reward": 2}\n')
    assert main(["plan", "--budget", "16", "--pass-rates", str(empty)]) == 2
    assert "no rollouts" in _one_error_line(capsys)
    assert main(["plan", "--budget", "16", "--pass-rates", str(bad)]) == 2
    assert "line 2, column 'reward'" in _one_error_line(capsys)
    assert main(["plan", "--budget", "16", "--pass-rates", str(tmp_path / "none.csv")]) == 2
    assert "none.csv" in _one_error_line(capsys)
    with pytest.raises(SystemExit) as exit_:  # argparse: R >= 2, before anything runs
        main(["plan", "--budget", "1", "--beta", "1,1"])
    assert exit_.value.code == 2 and "--budget: must be >= 2; got 1" in capsys.readouterr().err
