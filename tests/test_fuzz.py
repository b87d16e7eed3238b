"""Fuzz the numerics' public entry points with bad values: never a NaN, never an
obscure error.

Hypothesis draws a bad value (NaN, ±inf, out-of-range numbers, strings, ``None``, bools, lists
of the wrong shape) for one parameter of a public constructor, simulator parameter or function,
passed eagerly or traced under ``eqx.filter_jit``, and asserts a ``ValueError`` (eagerly) or an
``eqx.error_if`` run-time error (traced) whose message names the parameter. The first section
holds the cases the issue lists, each as its own test.

Kept fast: tiny shapes, one compiled program per simulator (cached), few examples.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simplexlab as sl
from simplexlab import _checks, sim, sweep
from simplexlab import shaping as sh
from simplexlab import theory as mf

KEY = jax.random.key(0)
Y3, Z2 = np.array([0.5, 0.3, 0.2]), np.array([0.6, 0.4])
S0 = sl.make_state(0.4, Y3, Z2)
ENS = sl.make_state(np.array([0.4, 0.6]), np.tile(Y3, (2, 1)), np.tile(Z2, (2, 1)))
ERRORS = (ValueError, eqx.EquinoxRuntimeError)


def _refused(f, *names):
    """``f()`` raises a clear error (``ValueError`` / ``EquinoxRuntimeError``) naming one of
    ``names``; returns the message."""
    with pytest.raises(ERRORS) as info:
        out = f()
        jax.block_until_ready(out)
    msg = str(info.value)
    assert any(n in msg for n in names), f"message does not name {names}: {msg[:400]}"
    return msg


# --------------------------------------------------------------------------- the cases


@pytest.mark.parametrize("traced", [False, True])
def test_bandit_p0_nan_is_refused(traced):
    b = sim.Bandit()
    run = functools.partial(sim.trajectory, b, KEY, num_steps=1)
    if traced:
        _refused(lambda: _jitted_run(b)({"p0": jnp.asarray(np.nan)}), "p0")
    else:
        _refused(lambda: run({"p0": float("nan")}), "p0")


def test_nan_fails_every_bandit_rule():
    b = sim.Bandit(method="g2rpo")
    for name in b.default_params():
        _refused(lambda name=name: b.check_params({name: np.nan}), name)
        _refused(lambda name=name: _jitted_init(b)({**b.default_params(), name: np.nan}), name)


def test_sweep_with_a_nan_p0_is_refused(tmp_path):
    _refused(lambda: sweep.run("bandit", {"p0": [0.5, float("nan")]},
                               fixed={"num_steps": 1},
                               out=tmp_path, progress=False), "p0")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("value", ["0.1", "fast", "", None, True, [0.1, 0.2], [[0.1], [0.2, 0.3]],
                                   1j])
def test_bandit_eta_not_a_number(value):
    msg = _refused(lambda: sim.trajectory(sim.Bandit(), KEY, {"eta": value},
                                          num_steps=1), "eta")
    assert repr(value)[:8] in msg or "shape" in msg


@functools.cache
def _solver(ensemble: bool):
    """``solve`` (or ``solve_ensemble``) with ``rtol``, ``atol`` and ``t1`` traced: one
    compilation serves every case."""
    if ensemble:
        return eqx.filter_jit(lambda r, a, t: mf.solve_ensemble(mf.GRPO(), ENS, t1=t, rtol=r,
                                                                atol=a, n_save=2).p)
    return eqx.filter_jit(lambda r, a, t: sl.solve(mf.GRPO(), S0, t1=t, rtol=r, atol=a,
                                                   n_save=2).p)


GOOD_SOLVE = {"rtol": 1e-8, "atol": 1e-10, "t1": 0.1}


@pytest.mark.parametrize("ensemble", [False, True])
@pytest.mark.parametrize(("kw", "value", "names"), [
    ("rtol", -1e-6, "rtol"), ("rtol", np.nan, "rtol"), ("rtol", np.inf, "rtol"),
    ("atol", -1e-6, "atol"), ("atol", np.nan, "atol"),
    ("t1", -1.0, "t1 > t0"), ("t1", 0.0, "t1 > t0")])
def test_solve_traced_bad_tolerance_or_interval(ensemble, kw, value, names):
    args = {k: jnp.asarray(v) for k, v in {**GOOD_SOLVE, kw: value}.items()}
    msg = _refused(lambda: _solver(ensemble)(args["rtol"], args["atol"], args["t1"]), names)
    assert "maximum number of solver steps" not in msg


def test_solve_traced_tolerances_both_zero():
    _refused(lambda: _solver(False)(jnp.asarray(0.0), jnp.asarray(0.0), jnp.asarray(0.1)),
             "rtol and atol")


@pytest.mark.parametrize("ensemble", [False, True])
def test_solve_valid_traced_values_run(ensemble):
    """The checks refuse nothing valid (the same compiled program as the cases above)."""
    traced = _solver(ensemble)(*(jnp.asarray(v) for v in GOOD_SOLVE.values()))
    assert np.all(np.isfinite(np.asarray(traced)))


@pytest.mark.parametrize("w", [[1.0, np.nan, 1.0], [1.0, -1.0, 1.0], [1.0, np.inf, 0.0],
                               [0.0, 0.0, 0.0]])
def test_counts_from_weights_refuses_bad_weights(w):
    e = jnp.asarray(w)
    _refused(lambda: sim.counts_from_weights(KEY, e, 5), "weights e")
    _refused(lambda: eqx.filter_jit(lambda e: sim.counts_from_weights(KEY, e, 5))(e),
             "weights e")
    _refused(lambda: sim.counts_from_weights(KEY, e, 5, method="cdf"), "weights e")


def test_counts_from_weights_valid_unchanged():
    e = jnp.asarray([0.5, 0.0, 2.0, 1.0])
    c = sim.counts_from_weights(KEY, e, 7)
    assert int(c.sum()) == 7 and int(c[1]) == 0
    _refused(lambda: sim.counts_from_weights(KEY, e, 0), "number of draws n")
    _refused(lambda: sim.counts_from_weights(KEY, jnp.ones((2, 2)), 3), "weights e")


# --------------------------------------------------------------------------- bad values

NON_FINITE = st.sampled_from([np.nan, np.inf, -np.inf])
NOT_NUMBERS = st.one_of(st.sampled_from(["0.1", "fast", "", "nan", None, True, False, 1j,
                                         [0.1, 0.2], [[1.0], [1.0, 2.0]], {"a": 1}]),
                        st.text(max_size=4))
NEGATIVE = st.floats(-1e6, -1e-9)
NON_POSITIVE = st.one_of(st.just(0.0), NEGATIVE)
FRACTIONS = st.floats(0.01, 50.0).filter(lambda v: v != round(v))
OUTSIDE_UNIT = st.one_of(st.floats(1.0 + 1e-9, 1e3), NEGATIVE)
OUTSIDE_OPEN_UNIT = st.one_of(OUTSIDE_UNIT, st.sampled_from([0.0, 1.0]))


def _bad(*range_bad):
    """Bad numbers for a parameter: non-finite and ``range_bad``."""
    return st.one_of(NON_FINITE, *range_bad)


#: simulators (tiny) and, per array parameter, the numbers it refuses
SIMULATORS = {
    "bandit": (sim.Bandit(method="g2rpo"), {
        "eta": _bad(NON_POSITIVE), "group_size": _bad(FRACTIONS, st.sampled_from([1.0, 17.0])),
        "p0": _bad(OUTSIDE_OPEN_UNIT), "instance": _bad(NEGATIVE, FRACTIONS),
        "delta_fn": _bad(OUTSIDE_UNIT), "delta_fp": _bad(OUTSIDE_UNIT), "gain": _bad()}),
    "bandit_iac": (sim.Bandit(method="iac"), {"iac_alpha": _bad(NEGATIVE)}),
    "two_stage": (sim.TwoStage(max_group_size=4), {
        "eta": _bad(NON_POSITIVE), "group_size": _bad(FRACTIONS, st.sampled_from([0.0, 5.0])),
        "temperature": _bad(NON_POSITIVE), "reward_a1": _bad(), "logit0_a3": _bad()}),
    "classifier": (sim.SoftmaxClassifier(max_group_size=8, estimator=("grpo", "rloo")), {
        "eta": _bad(NON_POSITIVE), "group_size": _bad(FRACTIONS, st.sampled_from([1.0, 9.0])),
        "iac_alpha": _bad(NEGATIVE), "memory_weight": _bad(NEGATIVE),
        "memory_eta": _bad(NEGATIVE), "init_scale": _bad(),
        "estimator_index": _bad(NEGATIVE, FRACTIONS, st.just(2.0))}),
    "product": (sim.Product(probs=(0.5, 0.5), length=2, group_size=3), {
        "group_size": _bad(FRACTIONS, st.sampled_from([1.0, 4.0]))}),
    "categorical": (sim.Categorical.make(num_actions=8, num_correct=2, group_size=2), {
        "eta": _bad(NON_POSITIVE), "focal_gamma": _bad(NEGATIVE),
        "group_size": _bad(FRACTIONS, st.sampled_from([0.0, 3.0]))}),
}
PARAM_CASES = [(s, p) for s, (_, table) in SIMULATORS.items() for p in table]


@functools.cache
def _jitted_run(simulator):
    """``trajectory`` of one step, jitted once per simulator (the parameters traced)."""
    return eqx.filter_jit(lambda params: sim.trajectory(simulator, KEY, params,
                                                        num_steps=1)[1])


@functools.cache
def _jitted_init(simulator):
    return eqx.filter_jit(lambda params: simulator.init(KEY, params))


@pytest.mark.parametrize(("which", "name"), PARAM_CASES)
@settings(max_examples=6)
@given(data=st.data())
def test_simulator_parameter_refused_eagerly(which, name, data):
    simulator, table = SIMULATORS[which]
    value = data.draw(st.one_of(table[name], NOT_NUMBERS), label=name)
    _refused(lambda: sim.trajectory(simulator, KEY, {name: value}, num_steps=1), name)


@pytest.mark.parametrize(("which", "name"), PARAM_CASES)
@settings(max_examples=3)
@given(data=st.data())
def test_simulator_parameter_refused_traced(which, name, data):
    simulator, table = SIMULATORS[which]
    value = data.draw(table[name], label=name)
    params = {k: jnp.asarray(v, float) for k, v in simulator.default_params().items()}
    # the rules run in init; the categorical simulator checks eta and focal_gamma in its step
    jitted = _jitted_run if which == "categorical" else _jitted_init
    _refused(lambda: jitted(simulator)({**params, name: jnp.asarray(value, float)}), name)


@pytest.mark.parametrize("which", list(SIMULATORS))
def test_simulator_parameter_of_wrong_shape(which):
    simulator, table = SIMULATORS[which]
    name = next(iter(table))
    v = jnp.full((2,), simulator.default_params()[name], float)
    _refused(lambda: sim.trajectory(simulator, KEY, {name: v}, num_steps=1), name)
    params = {k: jnp.asarray(x, float) for k, x in simulator.default_params().items()}
    _refused(lambda: _jitted_run(simulator)({**params, name: v}), name)


@pytest.mark.parametrize("which", list(SIMULATORS))
def test_simulator_defaults_run(which):
    """So that no case passes by refusing everything: the defaults run, eagerly and traced."""
    simulator, _ = SIMULATORS[which]
    params = {k: jnp.asarray(v, float) for k, v in simulator.default_params().items()}
    state = _jitted_init(simulator)(params)
    assert all(np.all(np.isfinite(np.asarray(a))) for a in jax.tree_util.tree_leaves(state)
               if jnp.issubdtype(jnp.asarray(a).dtype, jnp.floating))


# --------------------------------------------------------------------------- constructors

#: a bool is not a number anywhere (True would pass as 1); no flat list here: the mean-field
#: parameters may be arrays (one value per trajectory of an ensemble)
NOT_NUM = st.one_of(st.sampled_from(["0.1", "fast", "", None, True, False, 1j,
                                     [[1.0], [1.0, 2.0]], {"a": 1}]), st.text(max_size=4))
CONSTRUCTORS = {
    # name -> (build(value), names the message may use, bad values)
    "Bandit.K": (lambda v: sim.Bandit(K=v), ("K",), st.one_of(NON_FINITE, NOT_NUM,
                                                              st.integers(-3, 0), FRACTIONS)),
    "Bandit.max_group_size": (lambda v: sim.Bandit(max_group_size=v), ("max_group_size",),
                              st.one_of(NON_FINITE, NOT_NUM, st.integers(-3, 1))),
    "Bandit.mode_threshold": (lambda v: sim.Bandit(mode_threshold=v), ("mode_threshold",),
                              st.one_of(NON_FINITE, NOT_NUM, NEGATIVE, st.floats(1.0, 9.0))),
    "Bandit.y0": (lambda v: sim.Bandit(y0=v), ("y0",),
                  st.one_of(st.just("x"), st.just((0.5, np.nan, 0.5)), st.just((1.0, -0.5, 0.5)),
                            st.just((0.5, 0.5)))),
    "TwoStage.num_actions": (lambda v: sim.TwoStage(num_actions=v), ("num_actions",),
                             st.one_of(NON_FINITE, NOT_NUM, st.integers(-2, 1))),
    "SoftmaxClassifier.max_group_size": (lambda v: sim.SoftmaxClassifier(max_group_size=v),
                                         ("max_group_size",),
                                         st.one_of(NON_FINITE, NOT_NUM, st.integers(-2, 1))),
    "SoftmaxClassifier.embeddings": (lambda v: sim.SoftmaxClassifier(embeddings=v),
                                     ("embeddings",),
                                     st.one_of(st.just(np.full((4, 2), np.nan)),
                                               st.just(np.ones((3, 2))), st.just("x"))),
    "Product.probs": (lambda v: sim.Product(probs=v), ("probs",),
                      st.one_of(NOT_NUM, st.just((0.5, np.nan)), st.just((1.5, -0.5)))),
    "Product.length": (lambda v: sim.Product(length=v), ("length",),
                       st.one_of(NON_FINITE, NOT_NUM, st.integers(-2, 0))),
    # None is valid there: the default group size (max_group_size, or 10)
    "Product.group_size": (lambda v: sim.Product(group_size=v), ("group_size",),
                           st.one_of(NON_FINITE, NOT_NUM.filter(lambda v: v is not None),
                                     st.integers(-2, 1), FRACTIONS)),
    "CategoricalPolicy.anchor_logit": (
        lambda v: sim.CategoricalPolicy(num_actions=8, num_correct=2, anchor_logit=v),
        ("anchor_logit",), st.one_of(NON_FINITE, NOT_NUM)),
    "CategoricalConfig.eta": (lambda v: sim.CategoricalConfig(eta=v), ("eta",),
                              st.one_of(NON_FINITE, NOT_NUM, NON_POSITIVE)),
    "CategoricalConfig.focal_gamma": (lambda v: sim.CategoricalConfig(focal_gamma=v),
                                      ("focal_gamma",),
                                      st.one_of(NON_FINITE, NOT_NUM, NEGATIVE)),
    "GainSchedule.gain": (lambda v: sh.GainSchedule(gain=v), ("gain",),
                          st.one_of(NON_FINITE, NOT_NUM)),
    "GainSchedule.B_max": (lambda v: sh.GainSchedule(B_max=v), ("B_max",),
                           st.one_of(NOT_NUM, NON_POSITIVE, st.just(np.nan))),
    "GainSchedule.rho": (lambda v: sh.GainSchedule(rho=v), ("rho",),
                         st.one_of(NON_FINITE, NOT_NUM, NEGATIVE, st.floats(1.0, 9.0))),
    "GainSchedule.p_min": (lambda v: sh.GainSchedule(p_min=v), ("p_min",),
                           st.one_of(NON_FINITE, NOT_NUM, OUTSIDE_UNIT)),
    "Verifier.delta_fn": (lambda v: sl.Verifier(v, 0.0), ("delta_fn",),
                          st.one_of(NON_FINITE, NOT_NUM, OUTSIDE_UNIT)),
    "Verifier.delta_fp": (lambda v: sl.Verifier(0.0, v), ("delta_fp",),
                          st.one_of(NON_FINITE, NOT_NUM, OUTSIDE_UNIT)),
    "GRPO.eta": (lambda v: mf.GRPO(eta=v), ("eta",), st.one_of(NON_FINITE, NOT_NUM,
                                                                NON_POSITIVE)),
    "GoodBonus.gain": (lambda v: mf.GoodBonus(gain=mf.ConstantGain(v)), ("gain",),
                       st.one_of(NON_FINITE, NOT_NUM)),
    "Neutralized.gain": (lambda v: mf.Neutralized(gain=mf.ScheduleB(v)), ("gain",),
                         st.one_of(NON_FINITE, NOT_NUM)),
    "make_state.p": (lambda v: sl.make_state(v, Y3, Z2), ("p",),
                     st.one_of(NON_FINITE, NOT_NUM, OUTSIDE_OPEN_UNIT)),
    "make_state.y": (lambda v: sl.make_state(0.4, v, Z2), ("y",),
                     st.one_of(NOT_NUM, st.just([0.5, np.nan, 0.5]),
                               st.just([1.5, -0.5, 0.0]), st.just([0.2, 0.2, 0.2]))),
}


@pytest.mark.parametrize("case", list(CONSTRUCTORS))
@settings(max_examples=8)
@given(data=st.data())
def test_constructor_refuses_bad_value(case, data):
    build, names, bad = CONSTRUCTORS[case]
    value = data.draw(bad, label=case)
    _refused(lambda: build(value), *names)


TRACED_CONSTRUCTORS = {
    "Verifier.delta_fn": (lambda v: sl.Verifier(v, 0.0).checked().delta_fn, "delta_fn",
                          st.one_of(NON_FINITE, OUTSIDE_UNIT)),
    "GRPO.eta": (lambda v: mf.GRPO(eta=v).checked().eta, "eta",
                 st.one_of(NON_FINITE, NON_POSITIVE)),
    "make_state.p": (lambda v: sl.make_state(v, Y3, Z2).p, "p",
                     st.one_of(NON_FINITE, OUTSIDE_OPEN_UNIT)),
    # not here: a traced GainSchedule(gain=...) -- its check in __check_init__ cannot attach
    # to the field (the bandit and the mean-field gains check the traced gain where they use it)
}


@pytest.mark.parametrize("case", list(TRACED_CONSTRUCTORS))
@settings(max_examples=3)
@given(data=st.data())
def test_constructor_refuses_bad_traced_value(case, data):
    build, name, bad = TRACED_CONSTRUCTORS[case]
    value = data.draw(bad, label=case)
    _refused(lambda: _jit_of(case)(jnp.asarray(value, float)), name)


@functools.cache
def _jit_of(case):
    return eqx.filter_jit(TRACED_CONSTRUCTORS[case][0])


NAN_CALLS = [  # rules written "a < 0" / "(a < 0) | (a > 1)": false for NaN, so the check itself
    # must refuse NaN (simplexlab._checks.check): the rules themselves let NaN through before
    ("x", lambda v: _checks.check(v, lambda a: a < 0, "x must be >= 0")),
    ("mass", lambda v: _checks.check_nonnegative(v, "mass")),
    ("q", lambda v: _checks.check_in_open_unit_interval(v, "q")),
    ("gamma", lambda v: sl.theory.focal_weight(0.5, v)),
    ("mu_hat", lambda v: sl.theory.focal_weight(v, 1.0)),
    ("tau", lambda v: sl.theory.tail_miss(mu=0.5, tau=v, group_size=8)),
    ("mu", lambda v: sl.theory.tail_miss(mu=v, tau=0.1, group_size=8)),
]


@pytest.mark.parametrize("name, call", NAN_CALLS, ids=[n for n, _ in NAN_CALLS])
def test_nan_fails_every_check_eager_and_traced(name, call):
    with pytest.raises(ValueError, match=name):
        call(float("nan"))
    with pytest.raises(eqx.EquinoxRuntimeError, match=name):
        jax.block_until_ready(eqx.filter_jit(call)(jnp.asarray(float("nan"))))
    assert np.all(np.isfinite(np.asarray(eqx.filter_jit(call)(jnp.asarray(0.3)))))


@pytest.mark.parametrize("name", ["B_max", "p_min", "p_damp", "rho", "Lz_min", "eps"])
@pytest.mark.parametrize("value", [[5.0], (0.1, 0.2), np.array([0.5]), True])
def test_schedule_safeguards_are_one_number(name, value):
    """A gain schedule's safeguards are static settings, one number each: a list (which used to
    pass the bounds check unread) or a bool is refused, naming the field."""
    with pytest.raises(ValueError, match=name):
        sh.GainSchedule(kind="B", **{name: value})


# --------------------------------------------------------------------------- files and the CLI
# The other surfaces a user types into: sweep TOML files (any key of any section given a value
# of any type) and the command line's options. Every bad input must be one line naming it
# (ValueError from the loader, exit 2 from the CLI), before any compute: never a traceback,
# never a silent run. Compute is blocked outright here (the engine's run is replaced), so a
# case that slipped past the checks fails the test instead of running.

_TOML_VALUES = st.one_of(
    st.booleans(), st.integers(-10**13, 10**13), st.floats(allow_nan=False, width=64),
    st.text(max_size=6), st.lists(st.one_of(st.booleans(), st.integers(-3, 10**12),
                                            st.text(max_size=3)), max_size=3),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3), max_size=2))


def _toml_value(v) -> str:
    import json as _json

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) if np.isfinite(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, str):
        return _json.dumps(v)
    return str(v)


@settings(max_examples=60, deadline=None)
@given(section=st.sampled_from(["top", "fixed", "grid"]),
       key=st.sampled_from(["seeds", "seed", "name", "format", "max_runs", "eta", "p0",
                            "group_size", "num_steps", "K", "method", "gain", "delta_fn"]),
       value=_TOML_VALUES)
def test_a_sweep_file_with_any_value_is_loaded_or_refused_in_one_line(tmp_path_factory,
                                                                     section, key, value):
    from simplexlab.sweep import load_config

    base = {"top": {"simulator": '"bandit"', "name": '"f"', "seeds": "2"},
            "fixed": {"K": "3", "M": "2", "num_steps": "4", "stride": "2"},
            "grid": {"eta": "[0.05, 0.1]"}}
    base[section][key] = _toml_value(value)
    text = "\n".join(f"{k} = {v}" for k, v in base["top"].items())
    for sec in ("fixed", "grid"):
        text += f"\n[{sec}]\n" + "\n".join(f"{k} = {v}" for k, v in base[sec].items())
    path = tmp_path_factory.mktemp("toml") / "f.toml"
    path.write_text(text + "\n")
    try:
        kw = load_config(path)
    except ValueError as err:
        assert "\n" not in str(err).strip(), str(err)
        assert str(path) in str(err) or key in str(err), str(err)
        return
    # accepted: never a boolean for a number, never a value of the wrong kind
    kw.pop("target")
    has_bool = isinstance(value, bool) or (isinstance(value, list)
                                            and any(isinstance(x, bool) for x in value))
    assert not (has_bool and key not in ("format", "name", "method")), (section, key, value)
    assert not (section == "grid" and not isinstance(value, list)), (key, value)
    assert kw["name"] and kw["seeds"] >= 1


def _is_int_text(s: str) -> bool:
    try:
        int(s)
    except ValueError:
        return False
    return True


_BAD_OPTIONS = st.one_of(
    st.tuples(st.just("--seed"), st.one_of(st.integers(-10**30, -1).map(str),
                                           st.integers(2**32, 2**80).map(str),
                                           st.text(min_size=1, max_size=5).filter(
                                               lambda s: not _is_int_text(s)
                                               and not s.startswith("-")))),
    st.tuples(st.just("--out"), st.sampled_from(["", " ", "  "])),
    st.tuples(st.just("--experiments-dir"), st.sampled_from(["", "/nonexistent/x", "/dev/null"])))


@settings(max_examples=40, deadline=None)
@given(command=st.sampled_from([["claims", "g2-app-e-tables"], ["reproduce", "focal-weight"]]),
       option=_BAD_OPTIONS)
def test_a_bad_cli_option_is_one_line_and_exit_2(command, option, monkeypatch_session):
    import contextlib
    import io

    from simplexlab.lab import main

    flag, value = option
    argv = ([flag, value] + command) if flag == "--experiments-dir" else \
        (command + [flag, value])
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's own refusal
            code = e.code
    lines = [ln for ln in err.getvalue().strip().splitlines() if not ln.startswith("usage:")
             and not ln.startswith("  ")]
    assert code == 2, (argv, err.getvalue())
    assert len(lines) == 1 and "Traceback" not in err.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def monkeypatch_session():
    """No compute may start in the CLI fuzz: the claims' and experiments' runners fail."""
    mp = pytest.MonkeyPatch()
    from simplexlab.lab import _claims, _registry

    def no_compute(*a, **k):
        raise AssertionError("compute started for a bad option")

    mp.setattr(_claims, "evaluate_claims", no_compute)
    mp.setattr(_registry, "run_experiment", no_compute)
    yield mp
    mp.undo()
