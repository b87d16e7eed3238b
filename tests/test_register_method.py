"""The test suite's own rule (``tests/helpers.py``, not in the package), with one parameter
declared once: registered with ``simplexlab.shaping.register_method``, it runs wherever a method
name is taken (the advantages, the bandit, a sweep over its parameter, the finite-group theory)
and its parameter's domain is checked everywhere from its one declaration."""

import numpy as np
import pytest
from helpers import RULE, TAU, tempered

from simplexlab import shaping
from simplexlab.shaping import (
    METHOD_PARAMS,
    METHODS,
    Groups,
    Method,
    register_method,
    unregister_method,
)

NAME = "tempered_dr_grpo"


@pytest.fixture
def registered():
    register_method(NAME, RULE, params=[TAU])
    try:
        yield NAME
    finally:
        unregister_method(NAME)
    assert NAME not in METHODS and "test_tau" not in METHOD_PARAMS


def test_a_registered_rule_runs_everywhere_a_method_runs(registered):
    from simplexlab import sweep
    from simplexlab.sim import Bandit

    r = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0]])
    adv = np.asarray(shaping.advantages(NAME, Groups(r), params={"test_tau": 2.0}))
    np.testing.assert_allclose(adv, 2.0 * (r - r.mean(-1, keepdims=True)), atol=1e-12)
    # the default comes from the declaration
    np.testing.assert_allclose(np.asarray(shaping.advantages(NAME, Groups(r))), adv / 4.0)
    # the bandit (its parameters and their defaults come from the registry)
    sim = Bandit(K=2, M=1, method=NAME, num_prompts=1, max_group_size=4)
    assert sim.default_params()["test_tau"] == 0.5
    with pytest.raises(ValueError, match="test_tau must be finite and > 0"):
        sim.check_params({"test_tau": -1.0, "group_size": 4.0})
    # a sweep over the rule's own parameter: larger τ, larger steps (same keys: paired)
    ds = sweep.run("bandit", {"test_tau": [0.0001, 2.0]},
                   fixed={"method": NAME, "K": 2, "M": 1, "num_prompts": 1, "group_size": 4,
                          "max_group_size": 4, "num_steps": 20, "stride": 20, "p0": 0.5},
                   seeds=4, progress=False)
    drop = (ds["p"].isel(step=0) - ds["p"].isel(step=-1)).mean(("seed", "prompt")).values
    assert drop[1] > drop[0] + 1e-3, drop
    # the finite-group theory: its exact "counts" path, which equals the enumeration
    from simplexlab.theory import expected_update
    rule = shaping.group_rule(NAME, params={"test_tau": 2.0})
    pi = np.array([0.3, 0.2, 0.5])
    exact = expected_update(rule, pi, 2, 4, path="counts").theta
    ref = expected_update(rule, pi, 2, 4, path="enumerate").theta
    np.testing.assert_allclose(exact, ref, atol=1e-14)
    mc = expected_update(rule, pi, 2, 4, path="montecarlo", num_samples=4096)
    assert mc.path == "montecarlo" and np.all(np.abs(mc.theta - ref) <= 5 * mc.stderr + 1e-12)
    dyn = shaping.meanfield_system(NAME, group_size=4, params={"test_tau": 2.0})
    assert dyn.resolve_path(2, 1) == "counts"
    with pytest.raises(ValueError, match="tempered_dr_grpo: parameter test_tau must be"):
        shaping.group_rule(NAME, params={"test_tau": 0.0})


def test_a_value_outside_the_declared_domain_is_refused_naming_the_rule(registered):
    r = np.array([[1.0, 0.0, 1.0, 1.0]])
    with pytest.raises(ValueError, match="tempered_dr_grpo: test_tau must be finite and > 0"):
        shaping.advantages(NAME, Groups(r), params={"test_tau": float("nan")})
    # a built-in's parameter: its declared domain, in the same words
    with pytest.raises(ValueError, match="f_grpo: focal_gamma must be finite and >= 0"):
        shaping.advantages("f_grpo", Groups(r), params={"focal_gamma": -1.0})


def test_bad_registrations_are_refused_naming_the_rule():
    with pytest.raises(ValueError, match="'grpo' is a built-in rule"):
        register_method("grpo", RULE, params=[TAU])
    with pytest.raises(ValueError, match="uses parameter\\(s\\) \\['test_tau'\\] that no one"):
        register_method(NAME, RULE)
    with pytest.raises(ValueError, match="the default of test_tau must be finite and > 0"):
        register_method(NAME, RULE, params=[TAU._replace(default=-1.0)])
    with pytest.raises(ValueError, match="declares parameter 'gain', which is declared"):
        register_method(NAME, Method(("gain",), tempered), params=[TAU._replace(name="gain")])
    with pytest.raises(ValueError, match="declares parameter\\(s\\) \\['test_tau'\\] that its"):
        register_method(NAME, Method((), tempered), params=[TAU])
    with pytest.raises(ValueError, match="must be a Method"):
        register_method(NAME, tempered, params=[TAU])
    with pytest.raises(ValueError, match="built-in"):
        unregister_method("grpo")
    assert NAME not in METHODS and "test_tau" not in METHOD_PARAMS


def test_a_rule_that_returns_the_wrong_shape_or_nan_is_named():
    r = np.array([[1.0, 0.0, 1.0, 1.0]])
    for name, rule, match in (
            ("test_wrong_shape", lambda g, *_: g.rewards[..., :2], "returned advantages of "
             "shape \\(1, 2\\); they must have the rewards' shape \\(1, 4\\)"),
            ("test_nan", lambda g, *_: np.full(np.shape(g.rewards), np.nan),
             "returned non-finite")):
        register_method(name, Method((), rule))
        try:
            with pytest.raises(ValueError, match=f"rule '{name}' {match}"):
                shaping.advantages(name, Groups(r))
        finally:
            unregister_method(name)


_USER_MODULE = '''
"""A user's rules module: importing it registers one rule with one parameter."""
from simplexlab.shaping import Method, Param, dr_grpo_advantages, register_method, xp


def _scaled(groups, q, *_):
    return q["toml_scale"] * dr_grpo_advantages(groups.rewards, groups.mask)


register_method("toml_scaled", Method(("toml_scale",), _scaled, binary=True),
                params=[Param("toml_scale", 1.0, lambda a: ~(xp.isfinite(a) & (a > 0)),
                              "finite and > 0")])
'''

_TOML = '''
simulator = "bandit"
out = "out"
seeds = 2
[fixed]
method = "{method}"
K = 2
M = 1
group_size = 4
max_group_size = 4
num_steps = 20
stride = 20
p0 = 0.5
eta = 0.1
[grid]
{grid} = [1.0, 3.0]
'''


def test_a_toml_sweep_takes_a_rule_by_its_import_path(tmp_path, monkeypatch):
    """``method = "module:name"`` in a sweep file imports the user's module (which registers
    the rule) and sweeps the rule's declared parameter; at scale 1 the run is bit-identical to
    the built-in Dr. GRPO's. A module that cannot be imported, or that registers no such rule,
    is refused naming the file and the rule."""
    import sys

    from simplexlab import sweep

    (tmp_path / "user_rules_toml.py").write_text(_USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    # the user allows the modules the file may name (tests/test_audit_trust.py: else refused)
    monkeypatch.setenv("SIMPLEXLAB_IMPORT", "user_rules_toml,no_such_module_here")
    cfg = tmp_path / "user.toml"
    cfg.write_text(_TOML.format(method="user_rules_toml:toml_scaled", grid="toml_scale"))
    try:
        ds = sweep.run_config(cfg, progress=False)
        ref = sweep.run("bandit", {"eta": [0.1]}, fixed={
            "method": "dr_grpo", "K": 2, "M": 1, "group_size": 4, "max_group_size": 4,
            "num_steps": 20, "stride": 20, "p0": 0.5}, seeds=2, progress=False)
        np.testing.assert_array_equal(ds["p"].sel(toml_scale=1.0).values,
                                      ref["p"].isel(eta=0).values)
        assert not np.array_equal(ds["p"].sel(toml_scale=3.0).values,
                                  ds["p"].sel(toml_scale=1.0).values)
    finally:
        if "toml_scaled" in METHODS:
            unregister_method("toml_scaled")
        sys.modules.pop("user_rules_toml", None)
    cfg.write_text(_TOML.format(method="no_such_module_here:rule", grid="toml_scale"))
    with pytest.raises(ValueError, match="fixed.method 'no_such_module_here:rule': cannot "
                                         "import"):
        sweep.load_config(cfg)
    cfg.write_text(_TOML.format(method="json:rule", grid="toml_scale"))
    with pytest.raises(ValueError, match="importing 'json' registered no rule 'rule'"):
        sweep.load_config(cfg)


def test_verify_rule_checks_a_registered_rule_against_its_theory(registered):
    """``verify_rule``: the rule of this module through the checks of a schedule, against its
    finite-group theory and GRPO's at the same G; the bandit follows the theory; at τ = 1 the
    rule is Dr. GRPO and moves the bad mass unlike GRPO (z-scored), at τ → 0 it moves nothing."""
    from simplexlab.verify import verify_rule

    kw = {"K": 2, "M": 1, "group_size": 4, "num_steps": 20, "seeds": 16, "eta": 0.1,
          "tol_p": 0.05, "tol_L_y": 0.05}
    rep = verify_rule(NAME, params={"test_tau": 1.0}, **kw)
    assert rep.checks["bandit"]["passed"], rep.summary()
    assert rep.checks["bounded"]["applies"] is False and "not applicable" in rep.summary()
    assert rep.inputs["method"] == NAME and rep.inputs["params"] == {"test_tau": 1.0}
    assert rep.checks["neutral"]["p_gap_vs_grpo"] > 1e-3
    small = verify_rule(NAME, params={"test_tau": 1e-6}, require_neutral=True, **kw)
    assert not small.passed and "neutral" in small.reasons[0]  # it moves much less than GRPO
    # K̂ (G2 Fig. 2) of the rule's bandit: recorded and summarised; a rule that barely moves
    # the policy leaves it where it started
    c = small.checks["concentration"]
    assert 1 <= c["K_hat_start_bandit"] <= kw["K"] and "K̂" in small.summary()
    assert c["K_hat_end_bandit"] == c["K_hat_start_bandit"]
    assert len(small.curves["K_hat_bandit"]) == len(small.curves["step"])
    with pytest.raises(ValueError, match="verify_rule: bandit: test_tau must be"):
        verify_rule(NAME, params={"test_tau": -1.0}, **kw)
