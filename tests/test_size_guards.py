"""Size guards and silently accepted values: work that cannot finish is refused before any
compute, with a one-line ``ValueError`` stating the estimate and the limit (a sweep of 10^12
seeds used to end the interpreter inside XLA, a grid of 10^9 runs to die with a bare
``MemoryError`` after minutes of planning), and values of the wrong kind are refused naming the
input (``eta = [true]`` was the learning rate 1.0, ``group_size = [2, 2.0]`` two coordinates of
one value, ``num_valid = 2.5`` two draws).

No test here allocates anything large: where the code before these guards would have started
the work, the work's entry point (``jax.random.split``, the planner's ``_groups``,
``jax.shard_map``, the clustering) is replaced by one that fails the test at once, and
simulator runs are only traced (``jax.eval_shape``), never run.
"""

import jax
import numpy as np
import pytest

from simplexlab import sweep
from simplexlab.sim import (
    Categorical,
    CategoricalConfig,
    CategoricalPolicy,
    TwoStage,
    categorical_run,
    counts_from_weights,
    trajectory,
)
from simplexlab.sweep import _plan as sweep_plan

SMALL = {"num_actions": 40, "num_correct": 5, "num_steps": 4, "stride": 2}


def _one_line(err) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    return text


@pytest.fixture
def no_compute(monkeypatch):
    """Any chunk's program being built fails the test: every refusal must come first."""
    def boom(*a, **k):
        raise AssertionError("compute started")

    monkeypatch.setattr(jax, "shard_map", boom)


# ---- A. work that cannot finish ----------------------------------------------------------------

def test_huge_seed_count_is_refused_before_the_keys_are_split(monkeypatch, no_compute):
    """``seeds = 10**12`` aborted the interpreter inside ``jax.random.split``."""
    split = jax.random.split

    def guarded(key, num=2):
        assert num <= 10**6, f"jax.random.split called with {num} keys"
        return split(key, num)

    monkeypatch.setattr(jax.random, "split", guarded)
    with pytest.raises(ValueError, match=r"max_runs = 10,000,000; pass max_runs=") as err:
        sweep.run("categorical", {}, fixed=SMALL, seeds=10**12, progress=False)
    assert "1,000,000,000,000 seeds" in _one_line(err)


def test_huge_grid_is_refused_before_planning(monkeypatch, no_compute):
    """A grid of 10^9 runs was planned run by run for ~115 s, then a bare ``MemoryError``."""
    def planning(*a, **k):
        raise AssertionError("planning started")

    monkeypatch.setattr(sweep_plan, "_groups", planning)
    grid = {"eta": list(np.linspace(0.01, 1.0, 1000)),
            "focal_gamma": list(np.linspace(0.0, 2.0, 1000))}
    with pytest.raises(ValueError, match="max_runs") as err:
        sweep.run("categorical", grid, fixed=SMALL, seeds=1000, progress=False)
    assert "1,000,000,000 runs (1,000,000 grid points x 1,000 seeds)" in _one_line(err)
    # explicit keys count as seeds too
    keys = jax.random.split(jax.random.key(0), 1000)
    with pytest.raises(ValueError, match="max_runs"):
        sweep.run("categorical", grid, fixed=SMALL, keys=keys, progress=False)


def test_max_runs_can_be_raised(no_compute):
    grid = {"eta": [0.1, 0.2, 0.3]}
    with pytest.raises(ValueError, match=r"6 runs .* max_runs = 5; pass max_runs=6"):
        sweep.run("categorical", grid, fixed=SMALL, seeds=2, max_runs=5, progress=False)
    with pytest.raises(AssertionError, match="compute started"):
        sweep.run("categorical", grid, fixed=SMALL, seeds=2, max_runs=6, progress=False)
    with pytest.raises(ValueError, match="max_runs must be an integer >= 1; got True"):
        sweep.run("categorical", grid, fixed=SMALL, max_runs=True, progress=False)


def test_result_too_large_is_refused_before_any_compute(no_compute):
    """10^5 runs of 10,001 records: ~5.6e10 bytes of result, more than the default 8 GiB
    (the memory budget only bounds one chunk, so this used to start computing)."""
    fixed = {**SMALL, "num_steps": 10_000, "stride": 1}
    grid = {"eta": list(np.linspace(0.01, 1.0, 100))}
    with pytest.raises(ValueError, match=r"max_result_bytes = 8,589,934,592; pass "
                                         r"max_result_bytes=") as err:
        sweep.run("categorical", grid, fixed=fixed, seeds=1000, progress=False)
    assert "100,000 runs" in _one_line(err)
    with pytest.raises(ValueError, match="max_result_bytes"):
        sweep.run("categorical", {}, fixed=SMALL, seeds=2, max_result_bytes=100,
                  progress=False)
    with pytest.raises(AssertionError, match="compute started"):
        sweep.run("categorical", {}, fixed=SMALL, seeds=2, max_result_bytes="1GB",
                  progress=False)
    with pytest.raises(ValueError, match="max_result_bytes must be a number of bytes"):
        sweep.run("categorical", {}, fixed=SMALL, max_result_bytes="lots", progress=False)


def test_huge_step_count_in_a_sweep_is_refused(no_compute):
    """``num_steps = 10**12`` (one record at the end: the memory budget saw nothing wrong)
    would have run for days."""
    fixed = {**SMALL, "num_steps": 10**12, "stride": 10**12}
    with pytest.raises(ValueError, match=r"num_steps = 1,000,000,000,000 steps per run is more "
                                         r"than max_steps = 100,000,000") as err:
        sweep.run("categorical", {}, fixed=fixed, progress=False)
    _one_line(err)
    with pytest.raises(AssertionError, match="compute started"):
        sweep.run("categorical", {}, fixed=fixed, max_steps=10**12, progress=False)


def test_simulator_run_refuses_a_huge_step_count():
    """``categorical_run(..., num_steps=10**12)`` ended the process; traced only here."""
    config = CategoricalConfig(policy=CategoricalPolicy(num_actions=40, num_correct=5))
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="max_steps = 100,000,000") as err:
        jax.eval_shape(lambda k: categorical_run(config, k, 10**12), key)
    _one_line(err)
    sim = TwoStage.make()
    with pytest.raises(ValueError, match="num_steps = 1,000,000,000,000 is more than"):
        jax.eval_shape(lambda k: trajectory(sim, k, num_steps=10**12), key)


def test_simulator_run_refuses_records_that_cannot_fit():
    """With the step bound raised, 10^12 records still cannot fit in any memory."""
    sim = TwoStage.make()
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=r"records 1,000,000,000,001 x \d+ bytes .* more than "
                                         r"this machine's memory") as err:
        jax.eval_shape(lambda k: trajectory(sim, k, num_steps=10**12, max_steps=10**13), key)
    _one_line(err)
    # a stride that records little is fine (traced only)
    out = jax.eval_shape(lambda k: trajectory(sim, k, num_steps=10**9, stride=10**9,
                                              max_steps=10**9), key)
    assert jax.tree_util.tree_leaves(out[1])[0].shape[0] == 2


def test_normal_trajectories_still_run():
    sim = TwoStage.make()
    _, rec = trajectory(sim, jax.random.key(0), num_steps=4, stride=2)
    assert jax.tree_util.tree_leaves(rec)[0].shape[0] == 3
    with pytest.raises(ValueError, match="max_steps must be an integer >= 1; got 0"):
        trajectory(sim, jax.random.key(0), num_steps=4, max_steps=0)


def test_categorical_refuses_an_action_count_that_cannot_fit():
    """``num_actions = 10**10``: ~1.3e12 bytes of per-run arrays; refused when the
    configuration is built, before anything is allocated."""
    policy = CategoricalPolicy(num_actions=10**10, num_correct=5)
    with pytest.raises(ValueError, match=r"num_actions = 10,000,000,000 .* more than this "
                                         r"machine's memory") as err:
        CategoricalConfig(policy=policy)
    _one_line(err)
    with pytest.raises(ValueError, match="num_actions"):
        Categorical.make(num_actions=10**10, num_correct=5)
    # the paper's size is fine, and the sweep adapter's estimate is the config's
    config = CategoricalConfig()
    assert sweep.adapter(Categorical).run_bytes(Categorical(config=config)) == \
        config.working_bytes()


def test_discover_modes_refuses_a_group_too_large_to_cluster(monkeypatch):
    """One group of 20,000 texts: 4e8 pairwise distances, several 3.2 GB matrices."""
    pytest.importorskip("torch", reason="simplexlab.llm needs torch (the llm extra)")
    from simplexlab.llm import _modes

    def clustering(*a, **k):
        raise AssertionError("embedding or clustering started")

    for name in ("_embed", "_agglomerate", "_cluster"):
        monkeypatch.setattr(_modes, name, clustering)
    texts = ["a"] * 20_000
    X = np.zeros((20_000, 2))
    with pytest.raises(ValueError, match=r"the group are 20,000 completions, 20,000² = "
                                         r"400,000,000 pairwise distances, more than max_pairs "
                                         r"= 67,108,864 .*split them") as err:
        _modes.discover_modes(texts, embeddings=X)
    _one_line(err)
    with pytest.raises(ValueError, match="max_pairs"):  # before the model is loaded
        _modes.discover_modes(texts)
    groups = ["p1"] * 19_000 + ["p2"] * 1_000
    with pytest.raises(ValueError, match="group 'p1' are 19,000 completions"):
        _modes.discover_modes(texts, groups=groups, embeddings=X)
    rewards = np.arange(20_000) % 2
    with pytest.raises(ValueError, match="the correct completions of the group are 10,000"):
        _modes.discover_modes(texts, rewards=rewards, embeddings=X)
    with pytest.raises(AssertionError, match="clustering started"):  # the limit raised
        _modes.discover_modes(texts, embeddings=X, max_pairs=20_000**2)
    with pytest.raises(ValueError, match="max_pairs must be an integer >= 1; got 0.5"):
        _modes.discover_modes(["a", "b"], embeddings=np.eye(2), max_pairs=0.5)


def test_discover_modes_keeps_its_behaviour_for_normal_groups():
    pytest.importorskip("torch", reason="simplexlab.llm needs torch (the llm extra)")
    pytest.importorskip("sklearn", reason="clustering needs scikit-learn")
    from simplexlab.llm._modes import discover_modes

    e = np.eye(3)
    assert discover_modes(["a", "b", "c", "d"], embeddings=e[[0, 0, 1, 1]]).ids.tolist() == \
        [0, 0, 1, 1]


# ---- B. silently accepted values ---------------------------------------------------------------

@pytest.mark.parametrize("grid, fixed, match", [
    ({"eta": [True]}, {}, r"categorical: grid eta = True is a bool, not a number"),
    ({}, {"focal_gamma": False}, r"fixed focal_gamma = False is a bool"),
    ({}, {"num_actions": True, "num_correct": 1}, r"fixed num_actions = True is a bool, not "
                                                  r"an integer"),
    ({}, {"max_group_size": True}, r"max_group_size = True is a bool, not a valid "
                                   r"max_group_size \(default None\)"),
    ({"group_size": [2, 2.0]}, {}, r"grid axis 'group_size' has repeated values: 2.0 appears "
                                   r"twice \(2 and 2.0 are one value\)"),
    ({"group_size": [2.5]}, {}, r"group_size must be a whole number"),
])
def test_sweep_refuses_bools_duplicates_and_fractions(grid, fixed, match, no_compute):
    base = {k: v for k, v in SMALL.items() if k not in fixed}
    with pytest.raises(ValueError, match=match) as err:
        sweep.run("categorical", grid, fixed={**base, **fixed}, progress=False)
    _one_line(err)


def test_meanfield_settings_are_no_bools(no_compute):
    for name in ("t1", "rtol", "atol"):
        with pytest.raises(ValueError, match=f"{name}"):
            sweep.run("meanfield", {}, fixed={name: True, "n_save": 2}, progress=False)
    with pytest.raises(ValueError, match="repeated values"):
        sweep.run("meanfield", {"group_size": [2, 2.0]}, progress=False)


def _toml(tmp_path, text: str):
    path = tmp_path / "bad.toml"
    path.write_text('simulator = "categorical"\n' + text)
    return path


@pytest.mark.parametrize("text, match", [
    ("[grid]\neta = [true]\n", r"grid\.eta\[0\] must be a number; got True \(a boolean\)"),
    ("[grid]\ngroup_size = [2, 2.0]\n", r"grid\.group_size: grid axis 'group_size' has "
                                        r"repeated values: 2.0 appears twice"),
    ("[fixed]\nnum_steps = 2.5\n", r"fixed\.num_steps must be an integer; got 2.5 \(a float\)"),
    ("[fixed]\nnum_actions = true\n", r"fixed\.num_actions must be an integer; got True"),
    ("[fixed]\noptimizer = 1\n", r"fixed\.optimizer must be a string; got 1 \(an integer\)"),
    ('seeds = "2"\n', r"seeds must be an integer; got '2' \(a string\)"),
    ("seeds = 0\n", r"seeds must be an integer >= 1; got 0"),
    ("out = 1\n", r"out must be a string; got 1 \(an integer\)"),
    ("memory_budget = true\n", r"memory_budget must be a number of bytes or a size"),
    ("max_runs = 2.5\n", r"max_runs must be an integer; got 2.5"),
])
def test_sweep_config_type_errors_name_the_file_key_and_type(tmp_path, text, match):
    path = _toml(tmp_path, text)
    with pytest.raises(ValueError, match=match) as err:
        sweep.load_config(path)
    assert _one_line(err).startswith(f"{path}: ")


def test_sweep_config_passes_its_limits_on(tmp_path):
    path = _toml(tmp_path, 'max_runs = 5\nmax_steps = 10\nmax_result_bytes = "1MB"\n'
                           "[grid]\neta = [0.1, 0.2]\n")
    kwargs = sweep.load_config(path)
    assert (kwargs["max_runs"], kwargs["max_steps"], kwargs["max_result_bytes"]) == \
        (5, 10, "1MB")
    # a boolean setting takes booleans
    path.write_text('simulator = "bandit"\n[grid]\nneutralize = [true, false]\n')
    assert sweep.load_config(path)["grid"] == {"neutralize": [True, False]}


def test_num_valid_is_a_whole_number():
    """``num_valid = 2.5`` counted 2 draws, ``True`` one."""
    key, e = jax.random.key(0), np.ones(8)
    for bad in (2.5, True):
        with pytest.raises(ValueError, match="num_valid") as err:
            counts_from_weights(key, e, 4, num_valid=bad)
        _one_line(err)
    assert int(np.asarray(counts_from_weights(key, e, 4, num_valid=3)).sum()) == 3


@pytest.mark.parametrize("line, match", [
    ("seeds = true", r"\[verify\] seeds must be an integer; got True \(bool\)"),
    ("group_size = 2.5", r"\[verify\] group_size must be an integer; got 2.5 \(float\)"),
    ("p0 = true", r"\[verify\] p0 must be a number; got True"),
    ("require_flip = 1", r"\[verify\] require_flip must be a boolean; got 1 \(int\)"),
    ("tol_p_vs_grpo = false", r"\[verify\] tol_p_vs_grpo must be a number; got False"),
    ("theory = 2", r"\[verify\] theory must be a string; got 2"),
])
def test_schedule_config_type_errors_name_the_file_key_and_type(tmp_path, line, match):
    from simplexlab.verify import load_schedule_config

    path = tmp_path / "schedule.toml"
    path.write_text(f'[schedule]\nkind = "B"\n[verify]\n{line}\n')
    with pytest.raises(ValueError, match=match) as err:
        load_schedule_config(path)
    assert _one_line(err).startswith(f"{path}: ")
    path.write_text('[schedule]\nkind = "B"\n[verify]\nseeds = 4\np0 = 1\ntol_p_vs_grpo = 0.1\n')
    assert load_schedule_config(path)[1] == {"seeds": 4, "p0": 1, "tol_p_vs_grpo": 0.1}


@pytest.mark.parametrize(("kw", "match"), [
    ({"seeds": 10**9}, "seeds = 1,000,000,000"),
    ({"group_size": 10**7, "seeds": 64}, "group_size = 10,000,000"),
    ({"num_steps": 10**12}, "num_steps = 1,000,000,000,000"),
])
def test_verify_schedule_refuses_work_that_cannot_finish(kw, match, monkeypatch):
    from simplexlab.shaping import GainSchedule
    from simplexlab.verify import _verify, verify_schedule

    def no_compute(*a, **k):  # nothing may be solved or simulated
        raise AssertionError("compute started")

    monkeypatch.setattr(_verify, "solve", no_compute)
    with pytest.raises(ValueError, match=match) as e:
        verify_schedule(GainSchedule(), **kw)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(("text", "match"), [
    ("steps = -1", "steps must be an integer >= 0; got -1"),
    ("steps = 2.5", "steps must be an integer >= 0; got 2.5"),
    ("batch = 0", "batch must be an integer >= 1; got 0"),
    ("eta = true", "eta must be a finite number > 0; got True"),
])
def test_warm_start_settings_are_checked_with_the_file_named(text, match, tmp_path):
    pytest.importorskip("torch")
    import argparse

    from simplexlab.lab._train_cli import _plan

    cfg = tmp_path / "run.toml"
    cfg.write_text(f"[warm_start]\n{text}\n[train]\nmethod = \"grpo\"\n")
    args = argparse.Namespace(seed=0, force=False, out=str(tmp_path / "runs"))
    with pytest.raises(ValueError, match=match) as e:
        _plan(cfg, args)
    assert "run.toml [warm_start]" in str(e.value)


def test_the_example_train_config_is_a_valid_plan(tmp_path):
    """The example of the training page (``experiments/train/tiny-g2rpo.toml``) parses into a
    plan: the file a newcomer copies is checked like any other."""
    pytest.importorskip("torch")
    import argparse
    from pathlib import Path

    from simplexlab.lab._train_cli import _plan

    path = Path(__file__).resolve().parent.parent / "experiments" / "train" / "tiny-g2rpo.toml"
    plan = _plan(path, argparse.Namespace(seed=0, force=False, out=str(tmp_path / "runs")))
    assert plan["name"] == "tiny-g2rpo" and plan["cfg"].method == "g2rpo"
    assert plan["cfg"].group_size == 8 and plan["warm"] == {"steps": 200, "eta": 3e-3}
