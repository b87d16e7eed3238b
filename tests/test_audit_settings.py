"""No setting dropped (issue 57, item 2): a parameter no rule declares (a misspelling) is
refused everywhere with the known names and the nearest one; a parameter of another rule is
refused by the rule's entry points (the advantages, the finite-group theory, ``verify_rule``,
``simplexlab plan``), naming the rule's own; an entropy bonus's settings lie in their domain
and are not dropped when the bonus is off; a declared structure is one of the three."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simplexlab import shaping
from simplexlab import theory as th
from simplexlab.lab import main
from simplexlab.shaping import Groups, Method
from simplexlab.sim import Bandit

R = np.array([[1.0, 0.0, 1.0, 0.0]])

MISSPELT = [("f_grpo", "focal_gama", "focal_gamma"), ("iac", "iac_alpa", "iac_alpha"),
            ("g2rpo", "gian", "gain"), ("pkpo", "pass_K", "pass_k")]


@pytest.mark.parametrize("method, wrong, right", MISSPELT)
def test_a_misspelt_parameter_is_refused_with_the_nearest_name(method, wrong, right):
    """``verify_rule('f_grpo', params={'focal_gama': 2.0})`` verified the default and reported
    passed; every entry point now names the known parameters and the nearest one."""
    from simplexlab.verify import verify_rule

    hint = rf"unknown method parameter '{wrong}' \(did you mean '{right}'\?\); method " \
           rf"'{method}' takes \['{right}'\]"
    calls = [lambda: shaping.group_rule(method, params={wrong: 1.0}),
             lambda: shaping.meanfield_system(method, group_size=4, params={wrong: 1.0}),
             lambda: shaping.meanfield_system(method, params={wrong: 1.0}),
             lambda: verify_rule(method, params={wrong: 1.0}, num_steps=2, seeds=2)]
    if method != "g2rpo":  # G²RPO needs mode ids
        calls.append(lambda: shaping.advantages(method, Groups(R), params={wrong: 1.0}))
    for call in calls:
        with pytest.raises(ValueError, match=hint):
            call()


@settings(max_examples=25, deadline=None)
@given(name=st.text(min_size=1, max_size=12).filter(
    lambda s: s not in shaping.METHOD_PARAMETERS))
def test_any_name_no_rule_declares_is_refused(name):
    with pytest.raises(ValueError, match="unknown method parameter"):
        shaping.group_rule("grpo", params={name: 1.0})
    with pytest.raises(ValueError, match="unknown method parameter"):
        shaping.advantages("grpo", Groups(R), params={name: 1.0})


OTHER = [("grpo", "iac_alpha"), ("grpo", "focal_gamma"), ("f_grpo", "gain"),
         ("iac", "focal_gamma"), ("dr_grpo", "std_eps")]


@pytest.mark.parametrize("method, name", OTHER)
def test_a_parameter_the_method_does_not_use_is_refused(method, name):
    """``group_rule('grpo', params={'iac_alpha': 1.0})`` was accepted (and the parameter
    dropped); ``shaping.advantages`` too. Both refuse it, naming the method's own."""
    own = list(shaping.METHODS[method].params)
    what = rf"method '{method}' does not use parameter\(s\) \['{name}'\].*" + (
        rf"takes {own}".replace("[", r"\[").replace("]", r"\]") if own else "takes no")
    for call in (lambda: shaping.group_rule(method, params={name: 1.0}),
                 lambda: shaping.advantages(method, Groups(R), params={name: 1.0}),
                 lambda: shaping.meanfield_system(method, group_size=4, params={name: 1.0})):
        with pytest.raises(ValueError, match=what):
            call()


def test_verify_rule_refuses_a_parameter_of_another_rule():
    from simplexlab.verify import verify_rule

    with pytest.raises(ValueError, match=r"verify_rule: method 'grpo' does not use parameter"):
        verify_rule("grpo", params={"focal_gamma": 2.0}, num_steps=2, seeds=2)


def test_the_papers_limit_takes_the_rules_parameters_or_refuses_them():
    """At ``G → ∞`` a parameter was dropped silently (``params={'gain': 3.0}`` gave G²RPO's
    default gain); now it is the limit's gain, and the finite-group settings are refused."""
    a = shaping.meanfield_system("g2rpo", params={"gain": 3.0})
    b = shaping.meanfield_system("g2rpo", gain=3.0)
    s0 = th.make_state(0.4, np.array([0.2, 0.3, 0.5]), np.array([0.5, 0.5]))
    assert float(a.vector_field(0.0, s0).p) == float(b.vector_field(0.0, s0).p)
    c = shaping.meanfield_system("g2rpo")
    assert float(c.vector_field(0.0, s0).p) != float(a.vector_field(0.0, s0).p)
    with pytest.raises(ValueError, match="give the gain once"):
        shaping.meanfield_system("g2rpo", gain=2.0, params={"gain": 3.0})
    for kw in ({"surrogate": "probability"}, {"num_groups": 2}, {"max_size": 10}):
        with pytest.raises(ValueError, match="finite-group system's"):
            shaping.meanfield_system("grpo", **kw)


def test_plan_refuses_a_parameter_the_method_does_not_use(capsys):
    """``simplexlab plan --method grpo --param focal_gamma=1`` ignored it; a parameter given
    twice kept the last one."""
    assert main(["plan", "--mu", "0.5", "--method", "grpo", "--param", "focal_gamma=1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "method 'grpo' does not use parameter(s) ['focal_gamma']" in err[0]
    assert main(["plan", "--mu", "0.5", "--method", "f_grpo", "--param", "focal_gama=1"]) == 2
    assert "did you mean 'focal_gamma'?" in capsys.readouterr().err
    assert main(["plan", "--mu", "0.5", "--method", "f_grpo", "--param", "focal_gamma=1",
                 "--param", "focal_gamma=2"]) == 2
    assert "--param focal_gamma is given twice" in capsys.readouterr().err


@pytest.mark.parametrize("call, hint", [
    (lambda: Bandit.make(KK=3), r"unknown setting\(s\) \['KK'\] \(did you mean 'K'\?\)"),
    (lambda: Bandit(max_group_sise=8), r"\(did you mean 'max_group_size'\?\)"),
    (lambda: Bandit().check_params({"etaa": 0.1}),
     r"unknown parameter\(s\) \['etaa'\] \(did you mean 'eta'\?\)"),
])
def test_a_misspelt_simulator_setting_or_parameter_names_the_nearest(call, hint):
    with pytest.raises((ValueError, TypeError), match=hint):
        call()


# --------------------------------------------------------------------------- the entropy bonus


@settings(max_examples=20, deadline=None)
@given(target=st.one_of(st.floats(-10.0, 0.0), st.sampled_from([math.nan, math.inf])))
def test_an_entropy_target_outside_its_domain_is_refused(target):
    """``Bandit(entropy_adaptive=True, entropy_target=-1.0)`` ran: the entropy of a softmax
    policy is positive, so the controller never switched the bonus on."""
    with pytest.raises(ValueError, match=r"EntropyBonus\.target .* must be finite and > 0"):
        th.EntropyBonus(adaptive=True, target=target)
    with pytest.raises(ValueError, match=r"bandit: EntropyBonus\.target"):
        Bandit(entropy_adaptive=True, entropy_target=target)


def test_an_entropy_target_above_the_largest_entropy_is_refused():
    """Above ``log(K + M)`` (the uniform policy's entropy) every step is below the target: the
    coefficient only rises (the target has no effect)."""
    with pytest.raises(ValueError, match=r"above log\(K \+ M\) = 1.609"):
        Bandit(K=3, M=2, entropy_adaptive=True, entropy_target=1.7)
    Bandit(K=3, M=2, entropy_adaptive=True, entropy_target=1.6)  # below: accepted


@pytest.mark.parametrize("flat", [{"entropy_target": 0.5}, {"entropy_delta": 0.1},
                                  {"entropy_coef_max": 0.5}, {"entropy_decay_steps": 10},
                                  {"entropy_coef": 0.1, "entropy_target": 0.5}])
def test_an_entropy_setting_is_not_dropped_when_it_has_no_effect(flat):
    """``Bandit(entropy_target=0.5)`` (no coefficient, not adaptive) ran without a bonus, the
    target dropped; a constant bonus dropped its controller's settings."""
    with pytest.raises(ValueError, match="entropy_|adaptive controller"):
        Bandit(**flat)


def test_the_adaptive_controllers_settings_need_the_controller():
    with pytest.raises(ValueError, match=r"target set the adaptive controller, which is off"):
        th.EntropyBonus(coef=0.1, target=0.5)
    th.EntropyBonus(coef=0.1, adaptive=True, target=0.5)  # with it: accepted
    assert Bandit(entropy_coef=0.1).entropy_bonus == th.EntropyBonus(coef=0.1)


def test_a_structure_that_is_not_one_of_the_three_is_refused():
    """``Method(structure="nonsense")`` registered (fixed with the rule objects)."""
    with pytest.raises(ValueError, match=r"structure must be one of \('counts', 'clusters', "
                                         r"'general'\); got 'nonsense'"):
        Method((), lambda g, *a: g.rewards, structure="nonsense")
