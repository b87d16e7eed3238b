"""The table "What each framework calls GRPO" (docs/llm/take-a-rule.md) is what the advantage
oracle finds when it runs the frameworks' own code: its TRL rows against a fresh run of TRL's
``GRPOTrainer`` here (verl's and Tunix's rows are checked in their own environments:
tests/test_verl.py, tests/test_tunix.py), and one row read as a finding in its own right."""

import pytest
from framework_table import committed_rows, fresh_rows, header_lines

from simplexlab.llm._frameworks import FRAMEWORKS, HEADER


def test_the_table_has_every_frameworks_rows():
    """The committed table holds rows of every framework (also where it is not installed), under
    the header the generator writes."""
    assert header_lines() == HEADER.splitlines()
    for fw in FRAMEWORKS:
        rows = committed_rows(fw)
        assert len(rows) >= 3, fw
        assert all(r.count(" | ") == 3 and r.endswith(" |") for r in rows), fw


@pytest.mark.slow
def test_the_committed_trl_rows_are_a_fresh_run():
    pytest.importorskip("torch")
    trl = pytest.importorskip("trl", reason="the TRL rows need the trl extra")
    fresh = fresh_rows("TRL")
    assert committed_rows("TRL") == fresh, (
        f"the TRL {trl.__version__} rows differ from a fresh run: run `python "
        "tests/framework_table.py --write` and review the change")
    # read as findings: TRL's default is the lab's grpo_sample_std with ε = 1e-4, and every
    # loss_type counts the zero-variance groups in its denominator (TRL #6367)
    group = next(r for r in fresh if '`scale_rewards="group"`' in r)
    assert "`grpo_sample_std` (`std_eps=0.0001`) | — |" in group
    dapo = next(r for r in fresh if '`loss_type="dapo"' in r)
    assert "the loss denominator counts the zero-variance groups' rollouts" in dapo
