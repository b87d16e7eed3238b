"""The budget-planner experiment's shipped data: the rollouts file of the embedded arithmetic task
(``experiments/rollouts/arithmetic.csv``) is what its generator writes, and reads as a prompt
distribution with mode masses."""

from __future__ import annotations

import numpy as np
import pytest

from simplexlab.lab import load_experiment_module
from simplexlab.theory import PromptSet


def test_the_shipped_rollouts_file_is_its_generators_output(tmp_path):
    pytest.importorskip("torch")  # simplexlab.llm (the task) imports torch
    mod = load_experiment_module("budget_planner")
    fresh = mod.write_rollouts(tmp_path / "arithmetic.csv")
    assert fresh.read_bytes() == mod.ROLLOUTS.read_bytes()


def test_the_shipped_rollouts_file_is_a_prompt_distribution_with_modes():
    mod = load_experiment_module("budget_planner")
    ps = PromptSet.from_rollouts(mod.ROLLOUTS)
    assert ps.size == 9 * len(mod.ERROR_RATES) and set(ps.rollouts) == {16}
    assert ps.good_masses is not None and max(len(r) for r in ps.good_masses) <= 4
    assert ps.ids[:2] == ("n1-p0.1", "n1-p0.4")  # sorted: target, then error rate
    mu = np.asarray(ps.pass_rates).reshape(9, len(mod.ERROR_RATES))
    assert np.all(np.diff(mu.mean(0)) < 0)  # higher error rates, lower pass rates
    assert 0.3 < ps.silent_fraction(8) < 0.6
