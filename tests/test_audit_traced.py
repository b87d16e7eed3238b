"""One check, everywhere it runs (issue 57, item 1): a check that holds eagerly holds traced
too, under ``jit`` and ``vmap``, in the bandit, in a sweep and in the finite-group theory.

- A rule from user code has its advantages checked wherever they are computed: eagerly a
  ``ValueError``, traced an ``eqx.error_if`` that ``trusted_inputs()`` does not skip (the
  bandit and the sweep engine run the rule inside it). The sweep engine reports it in one line.
  A built-in rule's programs stay free of host callbacks (JAX's persistent cache keeps them);
  a program that runs a user's rule carries the check (and is compiled in each process).
- The finite-group theory's traced inputs: ``probs`` off the simplex or NaN, a parameter outside
  its declared domain, ``gain = nan``, ``t = nan``, a state off the state space, an entropy
  bonus's ``coef = nan`` or ``coef_min > coef_max``: refused at run time, never a NaN.
- A rule's declared ``structure`` is checked against the rule before the theory takes its
  ``"counts"`` or ``"clusters"`` path (a rule reading mode ids under ``"counts"`` was 0.08 off
  the exact enumeration, silently).

The Hypothesis properties hold the same property eagerly, under ``eqx.filter_jit`` and under
``eqx.filter_vmap``."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simplexlab import shaping
from simplexlab import theory as th
from simplexlab.shaping import Groups, Method, register_method, unregister_method
from simplexlab.sim import Bandit, trajectory

REFUSED = (ValueError, eqx.EquinoxRuntimeError)
PI = np.array([0.3, 0.3, 0.2, 0.2])  # K = 2 good, M = 2 bad


def _nan_when_all_wrong(groups, q, schedule, step, verifier, num_clusters):
    """Dr. GRPO's advantage, NaN for every rollout of a group with no correct rollout."""
    r = groups.rewards
    adv = r - jnp.mean(r, -1, keepdims=True)
    return jnp.where(jnp.sum(r, -1, keepdims=True) > 0, adv, jnp.nan)


@pytest.fixture
def nan_rule():
    register_method("audit_nan", Method((), _nan_when_all_wrong, binary=True))
    try:
        yield "audit_nan"
    finally:
        unregister_method("audit_nan")


MIXED = np.array([[1.0, 0.0, 1.0, 0.0]])
WRONG = np.array([[0.0, 0.0, 0.0, 0.0]])


def _advantages(name, r):
    return shaping.advantages(name, Groups(jnp.asarray(r)))


@pytest.mark.parametrize("how", ["eager", "jit", "vmap", "jax.jit"])
def test_a_user_rules_nan_is_refused_however_it_is_called(nan_rule, how):
    """Eagerly the NaN was refused; under ``jit`` it came back as advantages."""
    call = {"eager": _advantages,
            "jit": eqx.filter_jit(_advantages),
            "vmap": lambda n, r: eqx.filter_vmap(lambda x: _advantages(n, x[None]))(r),
            "jax.jit": lambda n, r: jax.jit(lambda x: _advantages(n, x))(r)}[how]
    np.testing.assert_allclose(np.asarray(call(nan_rule, MIXED)).reshape(-1),
                               [0.5, -0.5, 0.5, -0.5])
    with pytest.raises((*REFUSED, jax.errors.JaxRuntimeError),
                       match="rule 'audit_nan' returned non-finite advantages"):
        jax.block_until_ready(call(nan_rule, WRONG))


@pytest.mark.parametrize("how", ["jit", "vmap"])
def test_a_user_rules_traced_parameter_is_checked_against_its_domain(how):
    """Its declared domain was checked on concrete values only: a traced ``τ = −1`` ran."""
    from helpers import RULE as TEMPERED
    from helpers import TAU

    register_method("audit_tempered", TEMPERED, params=[TAU])
    try:
        def adv(tau):
            return shaping.advantages("audit_tempered", Groups(jnp.asarray(MIXED)),
                                      params={"test_tau": tau})

        f = _traced(adv, how)
        np.testing.assert_allclose(np.asarray(f(2.0)).reshape(-1, 4)[-1], [1.0, -1, 1, -1])
        with pytest.raises(eqx.EquinoxRuntimeError, match="test_tau must be finite and > 0"):
            jax.block_until_ready(f(-1.0))
    finally:
        unregister_method("audit_tempered")


def test_a_user_rules_nan_is_refused_in_the_bandit(nan_rule):
    """The bandit runs the rule inside ``trusted_inputs()``: its NaN became the policy's."""
    sim = Bandit(K=2, M=1, method=nan_rule, max_group_size=2, num_prompts=8)
    run = eqx.filter_jit(lambda key: trajectory(sim, key, {"group_size": 2, "p0": 0.9},
                                                num_steps=20)[1].p)
    with pytest.raises(eqx.EquinoxRuntimeError, match="rule 'audit_nan' returned non-finite"):
        jax.block_until_ready(run(jax.random.key(0)))


def test_a_user_rules_nan_is_refused_in_a_sweep(nan_rule):
    """``sweep.run`` gave a Dataset with 80 NaN; now one line naming the rule, no Dataset."""
    from simplexlab import sweep

    with pytest.raises(ValueError, match=r"^sweep: a run-time check in the program failed: rule "
                                         r"'audit_nan' returned non-finite advantages$"):
        sweep.run("bandit", {"eta": [0.1, 0.2]},
                  fixed={"method": nan_rule, "K": 2, "M": 1, "group_size": 2,
                         "max_group_size": 2, "num_prompts": 8, "p0": 0.9, "num_steps": 20,
                         "stride": 20}, seeds=2, progress=False)


def test_a_user_rules_nan_is_refused_by_the_finite_group_theory(nan_rule):
    """``expected_update`` enumerates groups with no correct rollout: their NaN reached theta."""
    rule = shaping.group_rule(nan_rule)
    with pytest.raises(eqx.EquinoxRuntimeError, match="rule 'audit_nan' returned non-finite"):
        th.expected_update(rule, PI, 2, 4)
    dyn = th.FiniteGroup(rule, group_size=4)
    s0 = th.make_state(0.4, np.array([0.5, 0.5]), np.array([0.5, 0.5]))
    with pytest.raises(eqx.EquinoxRuntimeError, match="rule 'audit_nan' returned non-finite"):
        dyn.vector_field(0.0, s0)


def test_a_user_rules_nan_is_refused_by_a_solve_and_verify_rule(nan_rule):
    """A solve traces its field with equinox's checks off (diffrax's are made on the host): the
    rule's check is not one of them. With a fixed step the NaN was the solution; with an
    adaptive one, verify_rule said "the maximum number of solver steps was reached"."""
    from simplexlab.verify import verify_rule

    dyn = shaping.meanfield_system(nan_rule, group_size=2)
    s0 = th.make_state(0.9, np.array([0.5, 0.5]), np.array([0.5, 0.5]))
    with pytest.raises(eqx.EquinoxRuntimeError, match="rule 'audit_nan' returned non-finite"):
        th.solve(dyn, s0, t1=0.2, n_save=2, solver="euler", adaptive=False, dt0=0.1)
    with pytest.raises(eqx.EquinoxRuntimeError, match="rule 'audit_nan' returned non-finite"):
        verify_rule(nan_rule, K=2, M=1, num_steps=2, seeds=2, group_size=2, p0=0.9)


def test_groups_of_probability_zero_may_be_anything(nan_rule):
    """Outcomes the enumeration weighs by 0 (a mode of probability 0, log-probability −inf) are
    exempt; with a correct rollout in every group of positive probability the NaN never counts
    (a perfect verifier on a policy with all its mass on the good modes)."""
    rule = shaping.group_rule(nan_rule)
    out = th.expected_update(rule, np.array([0.6, 0.4, 0.0, 0.0]), 2, 3, path="enumerate")
    assert np.all(np.isfinite(np.asarray(out.theta)))


def _lowered(name):
    """The HLO text of the bandit's sweep program for rule ``name`` (as the engine builds it)."""
    from simplexlab.sweep import SimulatorTarget

    target = SimulatorTarget(Bandit)
    static = {**target.static_params(), "method": name, "K": 2, "M": 1, "max_group_size": 4,
              "num_steps": 2, "stride": 2}
    batch = target.batch(static, "vmap")
    kd = jax.random.key_data(jax.random.split(jax.random.key(0), 2))
    sim = Bandit.make(**{k: v for k, v in static.items() if k not in ("num_steps", "stride")})
    arrays = target.cast({k: np.full(2, v) for k, v in sim.default_params().items()})
    return jax.jit(batch.fn).lower(kd, {k: jnp.asarray(v) for k, v in arrays.items()}).as_text()


def test_built_in_sweep_programs_stay_callback_free(nan_rule):
    """The design: a user's rule output is checked by an ``eqx.error_if`` that is never skipped
    (it cannot be trusted), so a sweep program that runs one has a host callback (JAX's
    persistent cache does not keep it: it is compiled in each new process); a built-in rule's
    program has none (tests/test_compile_cache.py: a second process compiles nothing)."""
    assert "callback" not in _lowered("grpo")
    assert "callback" in _lowered(nan_rule)


# --------------------------------------------------------------------------- the theory, traced

RULE = shaping.group_rule("f_grpo", params={"focal_gamma": 1.0})
S0 = th.make_state(0.4, np.array([0.5, 0.5]), np.array([0.5, 0.5]))


def _theta(probs, t=0.0, rule=RULE):
    return th.expected_update(rule, probs, 2, 4, t=t).theta


_JITTED: dict = {}


def _traced(f, how, key=None):
    """``f`` of one argument eagerly, under ``eqx.filter_jit`` (the argument traced), or under
    ``eqx.filter_vmap`` over a batch of two; ``key`` names ``f`` so that its compiled program
    is built once for all the examples."""
    if how == "eager":
        return f
    if key is not None:
        key = (key, how)
        if key not in _JITTED:
            _JITTED[key] = _traced(f, how)
        return _JITTED[key]
    if how == "jit":
        jitted = eqx.filter_jit(f)
        return lambda v: jitted(jnp.asarray(v))
    vmapped = eqx.filter_jit(eqx.filter_vmap(f))
    return lambda v: vmapped(jnp.stack([jnp.asarray(v), jnp.asarray(v)]))


HOWS = ["eager", "jit", "vmap"]


OFF_SIMPLEX = st.one_of(
    st.lists(st.floats(-2.0, 2.0), min_size=4, max_size=4).map(np.array).filter(
        lambda a: np.any(a < 0) or abs(a.sum() - 1) > 1e-9),
    st.sampled_from([np.nan, np.inf, -0.1]).map(lambda x: np.array([0.3, 0.3, 0.4, x])))


@pytest.mark.parametrize("how", HOWS)
@settings(max_examples=15, deadline=None)
@given(probs=OFF_SIMPLEX)
def test_expected_update_refuses_probs_off_the_simplex(how, probs):
    """Traced ``probs`` off the simplex or NaN gave NaN (or wrong) theta, unchecked."""
    with pytest.raises(REFUSED, match="probs must be a point of the simplex"):
        jax.block_until_ready(_traced(_theta, how, "theta")(probs))


@pytest.mark.parametrize("how", HOWS)
@settings(max_examples=10, deadline=None)
@given(t=st.sampled_from([np.nan, np.inf, -np.inf]))
def test_expected_update_refuses_a_time_that_is_not_finite(how, t):
    """``t = nan`` traced: GRPO, which does not read ``t``, returned numbers."""
    with pytest.raises(REFUSED, match=r"t \(the mean-field time\) must be finite"):
        jax.block_until_ready(_traced(lambda v: _theta(PI, v), how, "theta_t")(t))


PARAMS = [("f_grpo", "focal_gamma", st.one_of(st.floats(-1e3, -1e-6), st.just(np.nan)),
           "focal_gamma must be finite and >= 0"),
          ("iac", "iac_alpha", st.one_of(st.floats(-1e3, -1e-6), st.just(np.inf)),
           "iac_alpha must be finite and >= 0"),
          ("g2rpo", "gain", st.sampled_from([np.nan, np.inf, -np.inf]), "gain must be finite")]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("method, name, bad, what", PARAMS, ids=[p[1] for p in PARAMS])
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_the_theory_refuses_a_parameter_outside_its_domain(how, method, name, bad, what, data):
    """``focal_gamma = −1`` and ``gain = nan`` traced passed ``expected_update`` and
    ``vector_field`` (the rule ran inside ``trusted_inputs()``, which skipped its checks)."""
    v = data.draw(bad)

    def update(x):
        return _theta(PI, rule=shaping.group_rule(method, params={name: x}))

    def field(x):
        dyn = shaping.meanfield_system(method, group_size=4, params={name: x})
        return dyn.vector_field(0.0, S0).p

    for f in (update, field):
        with pytest.raises(REFUSED, match=what):
            jax.block_until_ready(_traced(f, how, (f.__name__, method, name))(v))


OFF_STATE = st.one_of(
    st.floats(1.01, 3.0).map(lambda a: ("y", np.array([a, 0.5]))),
    st.floats(-2.0, -1e-3).map(lambda a: ("y", np.array([a, 1.0 - a]))),
    st.floats(-2.0, -1e-3).map(lambda a: ("z", np.array([a, 1.0 - a]))),
    st.sampled_from([0.0, 1.0, 1.5, -0.2, np.inf]).map(lambda p: ("p", p)))


def _field_at(which):
    dyn = shaping.meanfield_system("grpo", group_size=4)

    def field(x):
        s = th.State(*(jnp.asarray(x if k == which else getattr(S0, k)) for k in "pyz"))
        return dyn.vector_field(0.0, s).p

    return field


@pytest.mark.parametrize("how", HOWS)
@settings(max_examples=12, deadline=None)
@given(bad=OFF_STATE)
def test_the_finite_group_field_refuses_a_state_off_the_state_space(how, bad):
    """A traced state with ``y`` off the simplex gave NaN out (the policy's logarithm)."""
    which, v = bad
    with pytest.raises(REFUSED, match=r"\b[pyz] \((total bad mass|within-)"):
        jax.block_until_ready(_traced(_field_at(which), how, ("state", which))(v))


def test_a_nan_state_is_refused_eagerly_and_stays_nan_traced():
    """Eagerly a NaN state is refused; traced it gives NaN (NaN in, NaN out: a fixed-point
    search's diverged iterate, which it discards), not an error."""
    with pytest.raises(ValueError, match=r"y \(within-good composition\) must be finite"):
        _field_at("y")(np.array([np.nan, 0.5]))
    out = _traced(_field_at("y"), "jit", ("state", "y"))(np.array([np.nan, 0.5]))
    assert np.isnan(float(out))


@pytest.mark.parametrize("how", HOWS)
@settings(max_examples=6, deadline=None)
@given(t=st.sampled_from([np.nan, np.inf]))
def test_the_finite_group_field_refuses_a_time_that_is_not_finite(how, t):
    dyn = shaping.meanfield_system("grpo", group_size=4)
    with pytest.raises(REFUSED, match=r"t \(the mean-field time\) must be finite"):
        jax.block_until_ready(_traced(lambda v: dyn.vector_field(v, S0).p, how, "field_t")(t))


BONUS = [(lambda v: th.EntropyBonus(coef=v), st.sampled_from([np.nan, np.inf]),
          "EntropyBonus.coef must be finite"),
         (lambda v: th.EntropyBonus(adaptive=True, coef_min=v, coef_max=0.5),
          st.floats(0.51, 10.0), "coef_min .* must be <= coef_max"),
         (lambda v: th.EntropyBonus(adaptive=True, coef_max=v), st.floats(-10.0, -0.01),
          "coef_min .* must be <= coef_max"),
         (lambda v: th.EntropyBonus(adaptive=True, target=v),
          st.one_of(st.floats(-10.0, 0.0), st.just(np.nan)), "EntropyBonus.target .* > 0")]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("make, bad, what", BONUS, ids=["coef", "coef_min", "coef_max",
                                                        "target"])
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_the_field_refuses_an_entropy_bonus_outside_its_domain(how, make, bad, what, data):
    """``EntropyBonus(coef = nan)`` built traced gave NaN out; ``coef_min > coef_max`` passed."""
    v = data.draw(bad)

    def field(x):
        dyn = th.FiniteGroup(RULE, group_size=4, entropy_bonus=make(x))
        return dyn.vector_field(0.0, S0).p

    with pytest.raises(REFUSED, match=what):
        jax.block_until_ready(_traced(field, how, ("bonus", id(make)))(v))


@pytest.mark.parametrize("how", HOWS)
def test_valid_traced_inputs_give_the_eager_numbers(how):
    """So that no check above refuses everything: the same calls with valid values."""
    np.testing.assert_allclose(np.asarray(_traced(_theta, how)(PI)).reshape(-1, 4)[-1],
                               np.asarray(_theta(PI)), rtol=1e-12)
    dyn = shaping.meanfield_system("f_grpo", group_size=4, params={"focal_gamma": 0.5})
    ref = float(dyn.vector_field(0.0, S0).p)

    def field(g):
        d = shaping.meanfield_system("f_grpo", group_size=4, params={"focal_gamma": g})
        return d.vector_field(0.0, S0).p

    np.testing.assert_allclose(np.asarray(_traced(field, how)(0.5)).reshape(-1)[-1], ref,
                               rtol=1e-12)


def test_a_solve_does_not_check_its_own_stage_states():
    """The solvers evaluate the field at their own stages, on the copy ``checked()`` gives them
    (``solver_states``): its field has no run-time state check (no host callback in a solve's
    loop), the field called on a traced state has one."""
    dyn = shaping.meanfield_system("grpo", group_size=4)
    solver = dyn.checked()
    assert solver.solver_states and not dyn.solver_states
    text = jax.jit(lambda s: solver.vector_field(0.0, s).p).lower(S0).as_text()
    assert "callback" not in text
    assert "callback" in jax.jit(lambda s: dyn.vector_field(0.0, s).p).lower(S0).as_text()


# --------------------------------------------------------------------------- the structure


def _reads_modes(groups, q, schedule, step, verifier, num_clusters):
    """GRPO's z-score plus 0.5 for the correct rollouts of mode 0: reads the mode ids."""
    r = groups.rewards
    return shaping.grpo_advantages(r) + 0.5 * r * (groups.modes == 0).astype(r.dtype)


def _reads_logp(groups, q, schedule, step, verifier, num_clusters):
    return shaping.grpo_advantages(groups.rewards) * (1.0 - jnp.exp(groups.logp))


def _by_position(groups, q, schedule, step, verifier, num_clusters):
    G = groups.rewards.shape[-1]
    return shaping.grpo_advantages(groups.rewards) * (1.0 + jnp.arange(G) / G)


def _symmetric_clusters(groups, q, schedule, step, verifier, num_clusters):
    """A bonus for a correct rollout of a rare mode: cluster-symmetric, not a count rule."""
    r = groups.rewards
    same = (groups.modes[..., :, None] == groups.modes[..., None, :]) & (
        r[..., :, None] == r[..., None, :])
    n = jnp.sum(same, -1).astype(r.dtype)
    return shaping.grpo_advantages(r) + r / n


STRUCTURES = [(_reads_modes, "counts", "other mode ids", "general"),
              (_reads_logp, "counts", "the log-probabilities", "general"),
              (_by_position, "counts", "reordered", "general"),
              (_symmetric_clusters, "counts", "other mode ids", "clusters"),
              (_reads_logp, "clusters", "the log-probabilities", "general"),
              (_by_position, "clusters", "reordered", "general")]


@pytest.mark.parametrize("fn, structure, why, alt", STRUCTURES,
                         ids=[f"{s[0].__name__}-{s[1]}" for s in STRUCTURES])
def test_a_declared_structure_the_rule_does_not_have_is_refused(fn, structure, why, alt):
    """A rule that reads the mode ids but declares ``structure="counts"`` took the counts path
    and was 0.08 off the exact enumeration, silently; now the theory refuses it, saying what the
    rule depends on and which structure to declare."""
    register_method("audit_structure", Method((), fn, binary=True, modes=True, logp=True,
                                              structure=structure))
    try:
        with pytest.raises(ValueError, match=rf"rule 'audit_structure' declares structure="
                                             rf"'{structure}'.*{why}.*structure='{alt}'"):
            shaping.group_rule("audit_structure")
        with pytest.raises(ValueError, match="declares structure"):
            shaping.meanfield_system("audit_structure", group_size=4)
    finally:
        unregister_method("audit_structure")


def test_the_mode_reading_rule_was_off_the_enumeration_on_its_declared_path():
    """What the refusal prevents: the same rule declared ``"general"`` is computed right (the
    enumeration), and its counts-path value (the rule run on the counts path's groups) is off
    by about 0.08, the audit's number."""
    register_method("audit_general", Method((), _reads_modes, binary=True, modes=True))
    try:
        rule = shaping.group_rule("audit_general")
        exact = np.asarray(th.expected_update(rule, PI, 2, 4, path="enumerate").theta)
        from simplexlab.theory.internal import counts_totals

        q1, q0 = PI * np.array([1, 1, 0, 0]), PI * np.array([0, 0, 1, 1])
        W = counts_totals(rule, jnp.asarray(q1), jnp.asarray(q0), jnp.asarray(PI), 4, 0.0, 4)
        w = np.asarray(jnp.sum(W, 0)) / 4
        assert np.abs((w - PI * w.sum()) - exact).max() > 0.05
    finally:
        unregister_method("audit_general")


@pytest.mark.parametrize("name", [n for n, r in shaping.METHODS.items()
                                  if r.structure != "general" and r.group_local])
def test_every_built_in_rule_has_the_structure_it_declares(name):
    """The check's soundness: it accepts every built-in rule's declaration (which the exact
    paths are tested against the enumeration for) and refuses it where it is wrong (G²RPO
    reads the mode ids: not a count rule)."""
    from simplexlab.shaping.internal import check_structure

    rule = shaping.METHODS[name]
    check_structure(rule, name)
    if name.startswith("g2rpo"):
        from simplexlab.shaping._finite import _violation

        assert "other mode ids" in _violation(rule, name, "counts")
