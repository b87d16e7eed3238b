"""Every simulator declares its parameters once (``Param`` specs and joint rules) and the one
mechanism of ``AbstractSimulator`` checks them: a walk over every simulator of
``simplexlab.sim.SIMULATORS`` and a user's simulator (defined here, run in a TOML sweep by its
``"module:Class"`` name with no package edit) shows each declared parameter refused outside
its own domain, eagerly (``ValueError``) and traced (``eqx.error_if`` at run time), each
message naming the parameter."""

from __future__ import annotations

import functools
import sys
import textwrap

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simplexlab import sim, sweep

KEY = jax.random.key(0)
#: candidate values, from which each parameter's own domain picks the ones it refuses
CANDIDATES = (np.nan, np.inf, -np.inf, -1.0, 0.0, 0.5, 1.0, 1.5, 2.5, 3.0, 1e9)

#: the simulators, tiny (and with every parameter they can declare: a tuple of estimators)
SIMULATORS = {
    "bandit": sim.Bandit(K=2, M=2, max_group_size=4, method="g2rpo"),
    "bandit_pass_k": sim.Bandit(K=2, M=1, max_group_size=4, method="pass_at_k"),
    "shared_bandit": sim.SharedBandit(K=2, M=1, max_group_size=4, pool_size=4, num_prompts=2,
                                      method="g2rpo"),
    "classifier": sim.SoftmaxClassifier(max_group_size=4, estimator=("grpo", "rloo")),
    "two_stage": sim.TwoStage(max_group_size=4),
    "product": sim.Product(probs=(0.5, 0.5), length=2, group_size=3),
    "categorical": sim.Categorical.make(num_actions=8, num_correct=2, group_size=2,
                                        max_group_size=4),
}


def test_the_walk_covers_every_simulator_class():
    assert {type(s) for s in SIMULATORS.values()} == set(sim.SIMULATORS.values())


def _bad_values(spec):
    """The candidates outside ``spec``'s own domain (NaN always among them)."""
    out = [v for v in CANDIDATES if np.any(spec.bad(np.asarray(v)))]
    assert out and np.isnan(out[0]), spec.name
    return out


@functools.cache
def _traced_init(simulator):
    return eqx.filter_jit(lambda params: simulator.init(KEY, params))


@pytest.mark.parametrize("which", list(SIMULATORS))
def test_every_declared_parameter_is_refused_outside_its_domain_eagerly_and_traced(which):
    s = SIMULATORS[which]
    specs = s.param_specs()
    defaults = s.default_params()
    assert set(specs) == set(defaults) and specs, which
    s.check_params(defaults)  # the defaults lie inside every rule
    traced = {k: jnp.asarray(v, spec.dtype) for (k, v), spec in
              zip(defaults.items(), specs.values(), strict=True)}
    jax.block_until_ready(_traced_init(s)(traced))
    for name, spec in specs.items():
        assert spec.kind in ("float", "int") and spec.what and spec.doc, (which, name)
        bad = _bad_values(spec)
        for v in bad:
            with pytest.raises(ValueError, match=rf"\b{name}\b"):
                s.check_params({name: v})
        # traced: a finite bad value where there is one (NaN is refused by every rule alike)
        v = next((x for x in bad if np.isfinite(x)), bad[0])
        with pytest.raises(eqx.EquinoxRuntimeError, match=rf"\b{name}\b"):
            jax.block_until_ready(_traced_init(s)({**traced, name: jnp.asarray(v, float)}))


@pytest.mark.parametrize("which", ["bandit", "shared_bandit", "classifier", "two_stage", "product",
                                   "categorical"])
def test_the_joint_rules_are_checked_both_ways(which):
    """``group_size`` above the static bound the rollouts are padded to: refused on the host and
    at run time, naming the bound."""
    s = SIMULATORS[which]
    bound = getattr(s, "max_group_size", None) or s.config.max_group_size
    with pytest.raises(ValueError, match=r"max_group_size"):
        s.check_params({"group_size": bound + 1})
    traced = {k: jnp.asarray(v, float) for k, v in s.default_params().items()}
    with pytest.raises(eqx.EquinoxRuntimeError, match=r"max_group_size"):
        jax.block_until_ready(_traced_init(s)({**traced,
                                               "group_size": jnp.asarray(bound + 1.0)}))


# --------------------------------------------------------------------------- a user's simulator

_MODULE = '''
"""A user's simulator: a counter that adds ``rate`` per successful draw, ``draws`` draws of
success probability ``prob`` per step (its parameters declared once)."""
from typing import ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp

from simplexlab.shaping import Param, xp
from simplexlab.sim import AbstractSimulator

PARAMS = {p.name: p for p in (
    Param("rate", 1.0, lambda a: ~(xp.isfinite(a) & (a > 0)), "finite and > 0", "r",
          "what a success adds"),
    Param("prob", 0.5, lambda a: ~((a >= 0) & (a <= 1)), "a probability in [0, 1]", "q",
          "the success probability of a draw"),
    Param("draws", 2, lambda a: ~(xp.isfinite(a) & (a >= 1) & (a == xp.round(a))),
          "a whole number >= 1", "n", "draws per step", kind="int"),
)}


class State(NamedTuple):
    x: jax.Array
    key: jax.Array
    int_draws: jax.Array


class Counter(AbstractSimulator):
    name: ClassVar[str] = "user_counter"
    cpu_batching: ClassVar[str] = "vmap"
    bucket: ClassVar[tuple] = ("draws", "max_draws")
    max_draws: int = eqx.field(default=8, kw_only=True, static=True)

    def param_specs(self):
        return dict(PARAMS)

    def constraints(self):
        n = self.max_draws
        return [(("draws",), lambda a: ~(a <= n), f"<= max_draws = {n}")]

    def init(self, key, params):
        x = self.checked(jnp.zeros(()), params)
        return State(x, key, jnp.asarray(jnp.issubdtype(jnp.asarray(params["draws"]).dtype,
                                                        jnp.integer)))

    def step(self, state, params):
        key, sub = jax.random.split(state.key)
        u = jax.random.uniform(sub, (self.max_draws,))
        on = jnp.arange(self.max_draws) < params["draws"]
        hits = jnp.sum(jnp.where(on & (u < params["prob"]), 1.0, 0.0))
        return State(state.x + params["rate"] * hits, key, state.int_draws)

    def observe(self, state):
        return {"x": state.x, "int_draws": state.int_draws}
'''

_TOML = '''
simulator = "user_sim_counter:Counter"
out = "out"
seeds = 200
[fixed]
num_steps = 10
stride = 10
rate = 0.5
[grid]
prob = [0.2, 0.7]
draws = [1, 3]
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "user_sim_counter.py").write_text(textwrap.dedent(_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("user_sim_counter", None)


def test_a_users_simulator_runs_in_a_toml_sweep_by_its_import_path(user_module, monkeypatch):
    """The simulator class of user code, its parameters declared once, runs in a TOML sweep as
    ``"module:Class"`` (the module allowed by ``SIMPLEXLAB_IMPORT``): integer parameters reach
    its kernel as integers, its bucket declaration splits the programs, the result follows the
    binomial law it simulates (mean ``rate · prob · draws · steps`` within 5 standard errors),
    and a bad value is refused naming it. No file of the package is edited."""
    cfg = user_module / "counter.toml"
    cfg.write_text(_TOML)
    with pytest.raises(ValueError, match="user_sim_counter.*not allowed"):
        sweep.load_config(cfg)
    monkeypatch.setenv("SIMPLEXLAB_IMPORT", "user_sim_counter")
    ds = sweep.run_config(cfg, progress=False)
    assert ds.attrs["target"] == "user_counter"
    assert bool(np.all(ds["int_draws"].values))  # draws stayed an integer
    x = ds["x"].isel(step=-1)
    for q in (0.2, 0.7):
        for n in (1, 3):
            got = x.sel(prob=q, draws=n).values
            mean, var = 0.5 * q * n * 10, 0.25 * q * (1 - q) * n * 10
            assert abs(got.mean() - mean) < 5 * np.sqrt(var / got.size), (q, n, got.mean())
    from user_sim_counter import Counter

    one = sim.trajectory(Counter(max_draws=4), jax.random.wrap_key_data(
        ds["key_data"].values[0]), {"prob": 0.7, "draws": 3, "rate": 0.5}, num_steps=10)[1]
    assert float(one["x"][-1]) == float(x.sel(prob=0.7, draws=3).values[0])  # bucket of 4
    cfg.write_text(_TOML.replace("prob = [0.2, 0.7]", "prob = [0.2, 1.7]"))
    with pytest.raises(ValueError, match=r"prob must be a probability in \[0, 1\]"):
        sweep.run_config(cfg, progress=False)
    cfg.write_text(_TOML.replace("draws = [1, 3]", "draws = [1, 2.5]"))
    with pytest.raises(ValueError, match=r"draws must be a whole number"):
        sweep.run_config(cfg, progress=False)


def test_a_simulator_import_path_that_names_no_simulator_is_refused(user_module, monkeypatch):
    monkeypatch.setenv("SIMPLEXLAB_IMPORT", "user_sim_counter")
    for spec, match in (("user_sim_counter:State", "has no simulator class 'State'"),
                        ("user_sim_counter:Nope", "has no simulator class 'Nope'"),
                        ("user_sim_counter:", "is not a class name")):
        with pytest.raises(ValueError, match=match):
            sweep.make_target(spec)
