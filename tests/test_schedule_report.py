"""The verdict of a verification report (``simplexlab.verify.ScheduleReport``): its headline never
says PASSED while a check that is not required stands failed (a warning), and it is decided in
one place (:meth:`ScheduleReport.verdict`), which the summary prints. Built by hand, no compute."""

import pytest

from simplexlab.verify import ScheduleReport


def _report(*, passed=True, flip=(True, False), concentration=(True, False), bandit=(True, True)):
    """A report of ``verify_rule``'s shape; each check given as ``(passed, required)``."""
    def chk(state, **numbers):
        return {"passed": state[0], "required": state[1], **numbers}

    checks = {
        "flip": chk(flip, flips=flip[0], t_flip=None if not flip[0] else 1.5, step_flip=30.0,
                    t_end=10.0, lambda_tilde_start=None, flip_threshold_start=None),
        "neutral": chk((True, False), p_gap_direct=1e-4, tolerance=1e-3, pdot_gap=2e-4,
                       p_gap_vs_grpo=0.01),
        "bounded": chk((True, False), applies=False),
        "concentration": chk(concentration, L_y_end_ode=0.5, L_y_end_bandit=0.51,
                             L_y_end_bandit_se=0.01, L_y_start=0.4, one_over_K=1 / 3,
                             L_y_end_grpo=0.6),
        "bandit": chk(bandit, error_p=0.01, error_L_y=0.01, tolerance_p=0.02,
                      tolerance_L_y=0.02),
    }
    inputs = {"method": "tempered", "params": {"tau": 2.0}, "num_steps": 200, "seeds": 8,
              "group_size": 8, "eta": 0.05}
    return ScheduleReport(passed=passed, reasons=[] if passed else ["bandit: off"],
                          checks=checks, inputs=inputs)


def test_a_clean_pass_says_passed():
    r = _report()
    assert r.warnings == [] and r.verdict() == "PASSED"
    assert r.summary().splitlines()[0].startswith("rule 'tempered' {'tau': 2.0}: PASSED")


def test_a_pass_with_a_failed_optional_check_says_so_not_passed():
    r = _report(flip=(False, False))  # verify_rule's default: the flip is not required
    assert r.passed  # every required check passed ...
    assert r.warnings == ["(a) flip"]
    head = r.summary().splitlines()[0]
    assert "PASSED" not in head and "passed with 1 warning: (a) flip" in head
    assert "[warn] (a) flip" in r.summary()  # the line the headline counts


def test_two_warnings_are_counted_and_named_in_order():
    r = _report(flip=(False, False), concentration=(False, False))
    assert r.verdict() == "passed with 2 warnings: (a) flip, (d) concentration"
    assert r.summary().count("[warn]") == 2


@pytest.mark.parametrize("warned", [False, True])
def test_a_failed_required_check_says_failed(warned):
    r = _report(passed=False, bandit=(False, True), flip=(not warned, False))
    assert r.verdict() == "FAILED"
    assert "FAILED" in r.summary().splitlines()[0] and "[FAIL] (e) bandit" in r.summary()
