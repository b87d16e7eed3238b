"""The figures' status lines (lab/_status.py) and the one figure style (lab/plotting.py)."""

import json

import pytest

from simplexlab.lab._status import NOT_EVALUATED, claim_status, experiment_status


def _report(tmp_path, claims):
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "claims.json").write_text(
        json.dumps({"provenance": {}, "mode": "quick", "claims": claims}))
    return tmp_path


CLAIMS = [
    {"name": "a-yes", "experiment": "exp-1", "holds_at_paper": "yes", "robustness_fraction": 0.64},
    {"name": "b-no", "experiment": "exp-2", "holds_at_paper": "no", "robustness_fraction": 0.0},
    {"name": "c-partly", "experiment": "exp-1", "holds_at_paper": "partly",
     "robustness_fraction": 0.2},
]


def test_claim_status_lines(tmp_path):
    out = _report(tmp_path, CLAIMS)
    assert claim_status("a-yes", out) == "holds at the paper's setting; in 64 % of its grid"
    assert claim_status("b-no", out) == "does not hold at the paper's setting; in 0 % of its grid"
    assert claim_status("c-partly", out) == \
        "partly holds at the paper's setting; in 20 % of its grid"
    assert claim_status("zzz", out) == "claim not evaluated (run: simplexlab claims zzz)"


def test_experiment_status_by_experiment_in_report_order(tmp_path):
    out = _report(tmp_path, CLAIMS)
    assert [n for n, _ in experiment_status("exp-1", out)] == ["a-yes", "c-partly"]
    assert experiment_status("exp-1", out)[1][1].startswith("partly holds")
    assert experiment_status("exp-3", out) == []


@pytest.mark.parametrize("content", [None, "not json", '{"claims": 3}'])
def test_missing_or_broken_report_reads_as_not_evaluated(tmp_path, content):
    if content is not None:
        (tmp_path / "claims").mkdir()
        (tmp_path / "claims" / "claims.json").write_text(content)
    assert experiment_status("exp-1", tmp_path) == []
    assert claim_status("a-yes", tmp_path).startswith("claim not evaluated")
    assert NOT_EVALUATED == "claims not evaluated (run: simplexlab claims)"
