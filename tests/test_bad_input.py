"""Bad input across the public API: every constructor and function refuses it clearly.

Each case feeds one argument of one public function an invalid value drawn by hypothesis
(non-finite floats, negatives, off-simplex vectors, ``p`` outside ``(0, 1)``, non-integers,
strings, ...) and expects

* eagerly: a ``ValueError`` whose message names the argument;
* under ``eqx.filter_jit`` (cases marked ``jit``, the value traced): an ``eqx.error_if`` run-time
  error (``equinox.EquinoxRuntimeError``) with the same clean message -- never a silent NaN;

and, so that no case can pass by refusing everything, a valid value for the same argument must
be accepted (``good``). Jitted functions are built once per case (module-level cache) and the
jit cases use few examples, so the module stays fast.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    negatives,
    non_finite,
    non_integers,
    non_positive,
    not_numbers,
    off_simplex_points,
    outside_open_unit_interval,
    outside_unit_interval,
)

import simplexlab as sl
from simplexlab import shaping as me
from simplexlab import shaping as sh
from simplexlab import sim as cat
from simplexlab import theory as G
from simplexlab import theory as S
from simplexlab import theory as mf

# --------------------------------------------------------------------------- shared inputs

Y3 = np.array([0.5, 0.3, 0.2])
Z2 = np.array([0.6, 0.4])
S0 = sl.make_state(0.4, Y3, Z2)
P5 = np.asarray(S0.policy())
LY, LZ = float(S0.L_y), float(S0.L_z)
ENS = sl.make_state(np.array([0.4, 0.6]), np.tile(Y3, (2, 1)), np.tile(Z2, (2, 1)))
PI = np.array([0.1, 0.2, 0.3, 0.4])
CORRECT = np.array([True, True, False, False])
SAMPLED = np.array([True, False, True, False])
REWARDS = np.array([[1.0, 0.0, 1.0, 0.0]])
POLICY = cat.CategoricalPolicy(num_actions=16, num_correct=4)
CFG = cat.CategoricalConfig(policy=POLICY, group_size=4)
COUNTS = np.array([1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0])
TOKENS = np.array([[[1, 2, 3], [1, 2, 4], [1, 5, 6], [7, 8, 9]]])
FLIPPED_HALF = sl.Verifier(0.5, 0.5, allow_flipped=True)  # J = 0

# invalid values
P_BAD = st.one_of(outside_open_unit_interval(), not_numbers())
POS_BAD = st.one_of(non_positive(), not_numbers())  # must be finite and > 0
NONNEG_BAD = st.one_of(negatives(), non_finite(), not_numbers())  # must be finite and >= 0
FINITE_BAD = st.one_of(non_finite(), not_numbers())
UNIT_BAD = st.one_of(outside_unit_interval(), not_numbers())  # must lie in [0, 1]
L_BAD = st.one_of(st.just(0.0), negatives(), st.floats(1.001, 1e3), non_finite())
INT_BAD = st.one_of(non_integers(1.0, 50.0), st.integers(-50, 0), non_finite())  # integer >= 1
SIMPLEX3_BAD = off_simplex_points(3)


def _on_rewards(baseline):
    return lambda v: baseline(jnp.array([[1.0, v, 0.0]]))


@dataclass(frozen=True)
class Case:
    """``f(value)`` must refuse every value of ``bad`` (a ``ValueError`` matching ``match``) and
    accept ``good``. With ``jit``, ``eqx.filter_jit(f)`` must raise at run time for the numeric
    values of ``jit_bad`` (default: ``bad`` without the non-numbers)."""

    id: str
    f: Callable[[Any], Any]
    bad: st.SearchStrategy
    match: str
    good: Any = None
    jit: bool = False
    jit_bad: st.SearchStrategy | None = None


CASES = [
    # ---------------------------------------------------------------- meanfield: state, params
    Case("make_state.p", lambda v: sl.make_state(v, Y3, Z2), P_BAD, r"\bp \(total bad mass\)",
         0.3, jit=True, jit_bad=outside_open_unit_interval()),
    Case("make_state.y", lambda v: sl.make_state(0.4, v, Z2), SIMPLEX3_BAD, r"\by \(within-good",
         Y3, jit=True),
    Case("make_state.z", lambda v: sl.make_state(0.4, Y3, v), off_simplex_points(2),
         r"\bz \(within-bad", Z2, jit=True, jit_bad=off_simplex_points(2)),
    Case("state_from_policy.K", lambda v: mf.state_from_policy(P5, v),
         st.one_of(non_integers(1, 3), st.sampled_from([0, 5, -1])), r"\bK\b", 3),
    Case("state_from_policy.P", lambda v: mf.state_from_policy(v, 1), SIMPLEX3_BAD, r"\bP ", Y3),
    Case("Verifier.delta_fn", lambda v: sl.Verifier(delta_fn=v), UNIT_BAD, "delta_fn", 0.1),
    Case("Verifier.delta_fp", lambda v: sl.Verifier(0.0, v), UNIT_BAD, "delta_fp", 0.1),
    Case("Verifier.J<=0", lambda v: sl.Verifier(0.5, v), st.floats(0.5, 1.0), "allow_flipped",
         0.2),
    Case("GRPO.eta", lambda v: sl.GRPO(eta=v), POS_BAD, r"GRPO\.eta", 0.5),
    Case("GoodBonus.eta", lambda v: sl.GoodBonus(sl.ConstantGain(1.0), eta=v), POS_BAD,
         r"GoodBonus\.eta", 2.0),
    Case("Neutralized.eta", lambda v: sl.Neutralized(sl.ScheduleB(1.0), eta=v), POS_BAD,
         r"Neutralized\.eta", 0.1),
    Case("GRPO.eta.checked", lambda v: sl.GRPO(eta=v).checked().eta, POS_BAD, r"GRPO\.eta",
         1.0, jit=True),
    Case("GRPO.eta.reversed", lambda v: sl.GRPO(eta=v, allow_reversed=True),
         st.one_of(st.just(0.0), non_finite()), r"GRPO\.eta", -1.0),
    Case("GoodBonus.gain", lambda v: sl.GoodBonus(v), st.sampled_from([2.0, "B", None]),
         r"GoodBonus\.gain", sl.ScheduleA(1.0)),
    Case("ConstantGain.gain", lambda v: sl.ConstantGain(v), FINITE_BAD, r"ConstantGain\.gain",
         -0.5),
    Case("ScheduleA.gain", lambda v: sl.ScheduleA(v), FINITE_BAD, r"ScheduleA\.gain", 2.0),
    Case("ScheduleB.gain", lambda v: sl.ScheduleB(gain=v), FINITE_BAD, r"ScheduleB\.gain", 2.0),
    Case("ScheduleB.gain.checked", lambda v: sl.ScheduleB(v).checked().gain, non_finite(),
         r"ScheduleB\.gain", 2.0, jit=True),
    # ---------------------------------------------------------------- meanfield: solve
    Case("solve.rtol", lambda v: sl.solve(sl.GRPO(), S0, t1=1.0, rtol=v),
         st.one_of(negatives(), non_finite(), not_numbers()), r"\brtol\b"),
    Case("solve.atol", lambda v: sl.solve(sl.GRPO(), S0, t1=1.0, atol=v),
         st.one_of(negatives(), non_finite(), not_numbers()), r"\batol\b"),
    Case("solve.n_save", lambda v: sl.solve(sl.GRPO(), S0, t1=1.0, n_save=v),
         st.one_of(st.integers(-5, 0), non_integers(1, 20), not_numbers()), r"\bn_save\b"),
    Case("solve.max_steps", lambda v: sl.solve(sl.GRPO(), S0, t1=1.0, max_steps=v),
         st.one_of(st.integers(-5, 0), non_integers(1, 20)), r"\bmax_steps\b"),
    Case("solve.t1", lambda v: sl.solve(sl.GRPO(), S0, t1=v),
         st.one_of(non_finite(), negatives(), st.just(0.0), not_numbers()), r"\bt1\b"),
    Case("solve.p_floor", lambda v: sl.solve(sl.GRPO(), S0, t1=1.0, p_floor=v),
         st.one_of(non_positive(), st.floats(0.5, 10.0), not_numbers()), r"\bp_floor\b"),
    Case("solve.dt0", lambda v: sl.solve(sl.GRPO(), S0, t1=1.0, dt0=v),
         st.one_of(non_positive(), st.sampled_from(["0.1", 1j])), r"\bdt0\b"),  # None: default
    Case("solve.state0", lambda v: sl.solve(sl.GRPO(), v, t1=1.0),
         st.sampled_from([(0.4, Y3, Z2), P5, None, ENS]), r"state0"),
    Case("solve.dynamics_params", lambda v: sl.solve(sl.GRPO(eta=v), S0, t1=1.0),
         st.sampled_from([jnp.array([1.0, 2.0]), jnp.ones((1,))]), r"dynamics\.eta.*"
         r"solve_ensemble"),
    Case("solve.inner_reversed",
         lambda v: sl.solve(sl.GRPO(eta=v, allow_reversed=True), S0, t1=1.0, time="inner"),
         st.floats(-5.0, -1e-3), r"eta \* J > 0"),
    Case("solve_ensemble.shapes", lambda v: sl.solve_ensemble(sl.GRPO(eta=v), ENS, t1=1.0),
         st.integers(3, 6).map(lambda n: jnp.ones(n)), r"dynamics\.eta has shape"),
    Case("solve_ensemble.eta", lambda v: sl.solve_ensemble(sl.GRPO(eta=v), ENS, t1=1.0),
         st.sampled_from([np.array([1.0, -1.0]), np.array([0.0, 1.0]), np.array([np.nan, 1.0])]),
         r"GRPO\.eta"),
    Case("solve_ensemble.n_save", lambda v: sl.solve_ensemble(sl.GRPO(), ENS, t1=1.0, n_save=v),
         st.integers(-3, 0), r"\bn_save\b"),
    Case("solve_ensemble.rtol", lambda v: sl.solve_ensemble(sl.GRPO(), ENS, t1=1.0, rtol=v),
         st.one_of(negatives(), non_finite()), r"\brtol\b"),
    Case("solve_ensemble.states", lambda v: sl.solve_ensemble(sl.GRPO(), v, t1=1.0),
         st.sampled_from([S0, (0.4, Y3, Z2)]), r"\bstates\b"),
    # ---------------------------------------------------------------- meanfield: closed forms
    Case("kappa.p", lambda v: mf.kappa(v), P_BAD, r"\bp \(total bad mass\)", 0.3, jit=True,
         jit_bad=outside_open_unit_interval()),
    Case("kappa.eta", lambda v: mf.kappa(0.3, v), POS_BAD, r"\beta\b", 0.5, jit=True,
         jit_bad=non_positive()),
    Case("kappa.shapes", lambda v: mf.kappa(np.full(2, 0.3), np.ones(v)), st.integers(3, 6),
         r"p \(2,\), eta \(\d,\)", 2),
    Case("neutralizer_reciprocal.shapes",
         lambda v: mf.neutralizer_reciprocal(np.full(2, 0.5), np.full(v, 0.5), LZ, 3, 1.0),
         st.integers(3, 6), r"p \(2,\), L_y \(\d,\)", 2),
    Case("kappa.verifier", lambda v: mf.kappa(0.3, 1.0, v), st.sampled_from([0.1, "v"]),
         r"\bverifier\b", sl.Verifier(0.1, 0.1)),
    Case("inner_gain.p", lambda v: mf.inner_gain(v, 1.0), P_BAD, r"\bp \(total", 0.5, jit=True,
         jit_bad=outside_open_unit_interval()),
    Case("inner_gain.gain", lambda v: mf.inner_gain(0.5, v), FINITE_BAD, r"\bgain\b", -1.0,
         jit=True, jit_bad=non_finite()),
    Case("inner_gain.J=0", lambda v: mf.inner_gain(v, 1.0, FLIPPED_HALF), st.floats(0.05, 0.95),
         r"\bJ\b"),
    Case("reciprocal_bonus.x", lambda v: mf.reciprocal_bonus(v), SIMPLEX3_BAD,
         r"\bx \(simplex point\)", Y3, jit=True),
    Case("reciprocal_bonus.x_zero", lambda v: mf.reciprocal_bonus(np.array([v, 1.0 - v])),
         st.just(0.0), r"\bx \(simplex point\).*> 0", 0.5),
    Case("reciprocal_bonus.gain", lambda v: mf.reciprocal_bonus(Y3, v), FINITE_BAD, r"\bgain\b",
         2.0, jit=True, jit_bad=non_finite()),
    Case("neutralizer.p", lambda v: mf.neutralizer(v, Y3, Z2, Y3), P_BAD, r"\bp \(total", 0.2,
         jit=True, jit_bad=outside_open_unit_interval()),
    Case("neutralizer.y", lambda v: mf.neutralizer(0.5, v, Z2, Y3), SIMPLEX3_BAD, r"\by \(",
         Y3, jit=True),
    Case("neutralizer.good_bonus", lambda v: mf.neutralizer(0.5, Y3, Z2, v),
         st.one_of(st.just(np.ones(2)), st.just(np.array([0.0, np.nan, 1.0]))), r"good_bonus",
         np.ones(3)),
    Case("neutralizer_reciprocal.p", lambda v: mf.neutralizer_reciprocal(v, LY, LZ, 3, 1.0),
         P_BAD, r"\bp \(total", 0.5, jit=True, jit_bad=outside_open_unit_interval()),
    Case("neutralizer_reciprocal.L_y", lambda v: mf.neutralizer_reciprocal(0.5, v, LZ, 3, 1.0),
         st.one_of(L_BAD, st.floats(0.01, 0.33)), r"\bL_y\b", 0.5, jit=True),
    Case("neutralizer_reciprocal.K", lambda v: mf.neutralizer_reciprocal(0.5, 0.5, LZ, v, 1.0),
         INT_BAD, r"\bK\b", 3, jit=True, jit_bad=non_integers(1, 9)),
    Case("gain_schedule_a.p", lambda v: mf.gain_schedule_a(v, 1.0), P_BAD, r"\bp \(total", 0.5,
         jit=True, jit_bad=outside_open_unit_interval()),
    Case("gain_schedule_a.gain", lambda v: mf.gain_schedule_a(0.5, v), FINITE_BAD, r"\bgain\b",
         0.0),
    Case("gain_schedule_b.L_z", lambda v: mf.gain_schedule_b(0.5, LY, v, 3, 1.0), L_BAD,
         r"\bL_z\b", 0.3, jit=True),
    Case("neutralizer_schedule_a.K", lambda v: mf.neutralizer_schedule_a(0.5, LY, LZ, v, 1.0),
         INT_BAD, r"\bK\b", 3),
    Case("neutralizer_schedule_b.gain",
         lambda v: mf.neutralizer_schedule_b(0.5, LY, LZ, 3, v), FINITE_BAD, r"\bgain\b", 1.5),
    Case("attenuation.L_y", lambda v: mf.attenuation(v, LZ, 3), L_BAD, r"\bL_y\b", LY, jit=True),
    Case("flip_threshold.L_z", lambda v: mf.flip_threshold(LY, v, 3), L_BAD, r"\bL_z\b", LZ),
    Case("global_flip_gain.K", lambda v: mf.global_flip_gain(v, 2), INT_BAD, r"\bK\b", 2,
         jit=True, jit_bad=st.one_of(non_integers(1, 9), st.just(0.0))),
    Case("global_flip_gain.M", lambda v: mf.global_flip_gain(2, v), INT_BAD, r"\bM\b", 5),
    Case("good_bonus_field_j1.gain", lambda v: mf.good_bonus_field_j1(S0, v), FINITE_BAD,
         r"\bgain\b", 1.0),
    Case("good_bonus_field_j1.eta", lambda v: mf.good_bonus_field_j1(S0, 1.0, v), POS_BAD,
         r"\beta\b", 2.0),
    Case("adaptive_field_j1.state", lambda v: mf.adaptive_field_j1(v, 1.0),
         st.sampled_from([None, (0.4, Y3, Z2),
                          sl.State(jnp.asarray(1.5), jnp.asarray(Y3), jnp.asarray(Z2))]),
         r"\bstate\b|\bp \(total", S0),
    # ---------------------------------------------------------------- geometry
    Case("softmax_jacobian.P", lambda v: G.softmax_jacobian(v), SIMPLEX3_BAD, r"\bP \(policy",
         Y3, jit=True),
    Case("logit_drift.A", lambda v: G.logit_drift(Y3, v),
         st.one_of(non_finite().map(lambda x: np.array([0.0, x, 1.0])), st.just(np.ones(2))),
         r"\bA \(advantages", np.ones(3), jit=True,
         jit_bad=non_finite().map(lambda x: np.array([0.0, x, 1.0]))),
    Case("logit_drift.eta", lambda v: G.logit_drift(Y3, np.ones(3), v), POS_BAD, r"\beta\b",
         0.5, jit=True, jit_bad=non_positive()),
    Case("probability_drift.A", lambda v: G.probability_drift(Y3, jnp.array([0.0, v, 1.0])),
         non_finite(), r"\bA \(advantages", 1.0, jit=True),
    Case("probability_drift.B", lambda v: G.probability_drift(Y3, np.ones(3), v),
         st.one_of(non_finite().map(lambda x: np.array([x, 0.0, 1.0])), st.just(np.ones(4))),
         r"\bB \(bonus", np.zeros(3)),
    Case("push_forward.dP", lambda v: G.push_forward(S0, v),
         st.one_of(non_finite().map(lambda x: np.array([0.0, x, 1.0, 0.0, 0.0])),
                   st.just(np.ones(4)), not_numbers()), r"\bdP\b", np.ones(5)),
    Case("push_forward.state", lambda v: G.push_forward(v, np.ones(5)),
         st.sampled_from([(0.4, Y3, Z2), P5]), r"\bstate\b", S0),
    Case("block_advantages.p", lambda v: G.block_advantages(v), P_BAD, r"\bp \(total", 0.5,
         jit=True, jit_bad=outside_open_unit_interval()),
    Case("grpo_drift.bonus", lambda v: G.grpo_drift(S0, v),
         st.one_of(non_finite().map(lambda x: np.array([x, 0.0, 1.0, 0.0, 0.0])),
                   st.just(np.ones(3))), r"\bbonus\b", np.ones(5)),
    Case("grpo_drift.eta", lambda v: G.grpo_drift(S0, eta=v), POS_BAD, r"\beta\b", 3.0),
    Case("collision_operator.x", lambda v: G.collision_operator(v, np.ones(3)), SIMPLEX3_BAD,
         r"\bx \(within-block", Y3, jit=True),
    Case("collision_operator.u", lambda v: G.collision_operator(Y3, np.array([v, 0.0, 0.0])),
         non_finite(), r"\bu \(within-block", 1.0),
    Case("centered_good_bonus_drift.bonus", lambda v: G.centered_good_bonus_drift(S0, v),
         st.sampled_from([np.ones(2), np.array([np.nan, 0.0, 0.0])]), r"good_bonus",
         np.zeros(3)),
    Case("centered_bad_bonus_drift.eta", lambda v: G.centered_bad_bonus_drift(S0, np.ones(2), v),
         POS_BAD, r"\beta\b", 1.0),
    Case("block_uniform_drift.c_g", lambda v: G.block_uniform_drift(S0, v, 0.0), FINITE_BAD,
         r"\bc_g\b", 1.0),
    Case("bad_mass_drift.bad_bonus", lambda v: G.bad_mass_drift(S0, np.ones(3), v), FINITE_BAD,
         r"bad_bonus", 0.5, jit=True, jit_bad=non_finite()),
    Case("noncollinearity_witness.n", lambda v: G.noncollinearity_witness(jnp.log, v),
         st.one_of(st.integers(-2, 2), non_integers(3, 9)), r"\bn\b", 3),
    Case("find_fixed_points.n", lambda v: G.find_fixed_points(mf.collision_field, v),
         st.one_of(st.integers(-2, 0), non_integers(1, 5), st.just(True)), r"\bn\b"),
    Case("find_fixed_points.field", lambda v: G.find_fixed_points(v, 2),
         st.sampled_from([None, 1.0]), r"\bfield\b"),
    Case("find_fixed_points.n_iter", lambda v: G.find_fixed_points(mf.collision_field, 2,
                                                                   n_iter=v),
         st.one_of(st.integers(-3, 0), non_integers(1, 9)), r"\bn_iter\b"),
    Case("uniform_on_support.n", lambda v: G.uniform_on_support(v),
         st.one_of(st.integers(-2, 0), non_integers(1, 5), st.integers(13, 40)), r"\bn\b", 2),
    Case("tangent_basis.n", lambda v: G.tangent_basis(v),
         st.one_of(st.integers(-2, 0), non_integers(1, 5)), r"\bn\b", 3),
    Case("block_field.dynamics", lambda v: G.block_field(v, S0), st.sampled_from([None, 1.0]),
         r"\bdynamics\b", sl.GRPO()),
    Case("block_field.state", lambda v: G.block_field(sl.GRPO(), v),
         st.sampled_from([None, (0.4, Y3, Z2)]), r"\bstate\b", S0),
    # ---------------------------------------------------------------- sampling
    Case("activity.mu", lambda v: S.activity(v, 4), UNIT_BAD, r"\bmu\b", 0.3, jit=True,
         jit_bad=outside_unit_interval()),
    Case("activity.group_size", lambda v: S.activity(0.3, v),
         st.one_of(non_integers(1, 100), st.floats(-5, 0.99), non_finite(), not_numbers()),
         r"\bgroup_size\b", 8, jit=True,
         jit_bad=st.one_of(non_integers(1, 100), st.floats(-5, 0.99))),
    Case("tail_miss.mu", lambda v: S.tail_miss(v, 0.0, 4), UNIT_BAD, r"\bmu\b", 0.5, jit=True,
         jit_bad=outside_unit_interval()),
    Case("tail_miss.tau", lambda v: S.tail_miss(0.5, v, 4),
         st.one_of(negatives(), st.floats(0.50001, 1e3), non_finite(), not_numbers()),
         r"\btau\b", 0.1, jit=True,
         jit_bad=st.one_of(negatives(), st.floats(0.50001, 1e3), non_finite())),
    Case("tail_miss.group_size", lambda v: S.tail_miss(0.5, 0.1, v),
         st.one_of(non_integers(1, 1000), st.floats(-5, 0.99), non_finite()), r"\bgroup_size\b",
         16, jit=True),
    Case("log_tail_miss.shapes", lambda v: S.log_tail_miss(np.full(2, 0.5), np.full(v, 0.1), 4),
         st.integers(3, 6), r"mu \(2,\), tau \(\d,\)", 2),
    Case("tail_miss_peak.tau", lambda v: S.tail_miss_peak(0.5, v),
         st.one_of(st.just(0.0), st.floats(0.5, 2.0), negatives(), non_finite()), r"\btau\b",
         0.01),
    Case("tail_miss_peak.iters", lambda v: S.tail_miss_peak(0.5, 0.1, iters=v),
         st.one_of(st.integers(-3, 0), non_integers(1, 50)), r"\biters\b", 50),
    Case("conditional_sampled_masses.k", lambda v: S.conditional_sampled_masses(PI, CORRECT, 4, v),
         st.one_of(non_integers(0, 3), st.integers(-5, -1), st.integers(5, 50), non_finite()),
         r"\bk \(number of correct", 2, jit=True),
    Case("conditional_sampled_masses.group_size",
         lambda v: S.conditional_sampled_masses(PI, CORRECT, v, 1),
         st.one_of(non_integers(1, 50), st.floats(-5, 0.99)), r"\bgroup_size\b", 4, jit=True),
    Case("conditional_sampled_masses.pi",
         lambda v: S.conditional_sampled_masses(v, CORRECT[:3], 4, 1), SIMPLEX3_BAD, r"\bpi\b",
         Y3),
    Case("conditional_baseline.r_correct",
         lambda v: S.conditional_baseline(PI, CORRECT, 4, 1, r_correct=v), FINITE_BAD,
         r"\br_correct\b", 2.0),
    Case("batch_statistics.sampled", lambda v: S.batch_statistics(PI, CORRECT, v),
         st.sampled_from([np.ones(4), np.ones(3, bool)]), r"\bsampled\b", SAMPLED),
    Case("batch_statistics.r_wrong", lambda v: S.batch_statistics(PI, CORRECT, SAMPLED,
                                                                  r_wrong=v),
         FINITE_BAD, r"\br_wrong\b", 0.0, jit=True, jit_bad=non_finite()),
    Case("logit_update.eta", lambda v: S.logit_update(PI, CORRECT, SAMPLED, 4, v), POS_BAD,
         r"\beta\b", 0.1, jit=True, jit_bad=non_positive()),
    Case("mass_balance.group_size", lambda v: S.mass_balance(PI, CORRECT, SAMPLED, v),
         st.one_of(non_integers(1, 50), st.floats(-5, 0.99)), r"\bgroup_size\b", 8, jit=True),
    Case("unsampled_correct_change.r_correct",
         lambda v: S.unsampled_correct_change(PI, CORRECT, SAMPLED, 4, 1.0, v), FINITE_BAD,
         r"\br_correct\b", 1.0),
    Case("grpo_advantage_magnitude.mu", lambda v: S.grpo_advantage_magnitude(v), P_BAD,
         r"\bmu\b", 0.5, jit=True, jit_bad=outside_open_unit_interval()),
    Case("focal_scaled_advantage.gamma", lambda v: S.focal_scaled_advantage(0.5, v), NONNEG_BAD,
         r"\bgamma\b", 1.0),
    Case("mc_activity.group_size",
         lambda v: S.mc_activity(0.5, v, 100, np.random.default_rng(0)),
         st.one_of(non_integers(1, 50), st.integers(-5, 0), not_numbers()), r"\bgroup_size\b",
         4),
    Case("mc_tail_miss.n_groups", lambda v: S.mc_tail_miss(0.5, 0.1, 4, v,
                                                           np.random.default_rng(0)),
         st.one_of(st.integers(-5, 1), non_integers(2, 50)), r"\bn_groups\b", 10),
    Case("mc_activity.rng", lambda v: S.mc_activity(0.5, 4, 10, v),
         st.sampled_from([0, None, "seed"]), r"\brng\b", np.random.default_rng(1)),
    Case("mc_grpo_advantage_magnitude.mu",
         lambda v: S.mc_grpo_advantage_magnitude(v, 8, 100, np.random.default_rng(0)), UNIT_BAD,
         r"\bmu\b", 0.5),
    Case("mc_conditional_sampled_masses.pi",
         lambda v: S.mc_conditional_sampled_masses(v, CORRECT[:3], 4, 10,
                                                   np.random.default_rng(0)),
         SIMPLEX3_BAD, r"\bpi\b", Y3),
    # sharpening collapse
    Case("batch_optimal_policy.beta",
         lambda v: S.batch_optimal_policy(PI, np.array([1, 0, 2, 1]), np.ones(4), v), POS_BAD,
         r"\bbeta\b", 0.5, jit=True, jit_bad=non_positive()),
    Case("batch_optimal_policy.counts",
         lambda v: S.batch_optimal_policy(PI, jnp.array([1.0, v, 2.0, 1.0]), np.ones(4), 1.0),
         st.one_of(non_integers(0, 5), negatives(), non_finite()), r"\bcounts\b", 3.0, jit=True),
    Case("batch_optimal_policy.shapes",
         lambda v: S.batch_optimal_policy(PI, np.ones(v), np.ones(4), 1.0), st.integers(2, 3),
         r"pi_ref \(4,\), counts", 4),
    Case("theorem24_bounds.group_size",
         lambda v: S.theorem24_bounds(0.5, 1.0, 1, v, 0.9, 1.0, 0.1, 0.2),
         st.one_of(non_integers(1, 50), st.floats(-5, 0.99), non_finite()), r"\bgroup_size\b",
         8, jit=True),
    Case("theorem24_bounds.eta",
         lambda v: S.theorem24_bounds(0.5, 1.0, 1, 8, 0.9, 1.0, 0.1, 0.2, eta=v), POS_BAD,
         r"\beta\b", 0.1),
    Case("ratio_r.n_o", lambda v: S.ratio_r(0.5, 1.0, v, 8, 0.9, 1.0, 0.1, 0.2),
         st.one_of(non_integers(0, 7), st.integers(9, 100), negatives()), r"\bn_o\b", 2,
         jit=True),
    Case("ratio_r_simplified.group_size", lambda v: S.ratio_r_simplified(0.5, 1.0, 1, v, 2.0),
         st.one_of(non_integers(1, 50), st.floats(-5, 0.99)), r"\bgroup_size\b", 4),
    Case("normalized_binary_advantages.p_plus", lambda v: S.normalized_binary_advantages(v),
         P_BAD, r"\bp_plus\b", 0.25, jit=True, jit_bad=outside_open_unit_interval()),
    Case("z_prime_lower_bound.a_neg",
         lambda v: S.z_prime_lower_bound(PI, np.array([1, 0, 2, 1]), CORRECT, 1.0, v, 1.0),
         st.one_of(st.floats(0.0, 10.0), non_finite()), r"\ba_neg\b", -1.0),
    # ---------------------------------------------------------------- metrics
    Case("pass_at_k.n", lambda v: me.pass_at_k(v, 2, 1),
         st.one_of(non_integers(2, 100), non_finite(), not_numbers()), r"\bnumber of samples n\b",
         10, jit=True, jit_bad=non_integers(2, 100)),
    Case("pass_at_k.c", lambda v: me.pass_at_k(10, v, 2),
         st.one_of(non_integers(0, 9), st.integers(11, 50), negatives()), r"correct samples c",
         3, jit=True),
    Case("pass_at_k.k", lambda v: me.pass_at_k(10, 2, v),
         st.one_of(non_integers(1, 9), st.integers(-3, 0), st.integers(11, 30)), r"\bk\b", 3),
    Case("pass_at_k.shapes", lambda v: me.pass_at_k(np.full(2, 10), np.ones(v), 1),
         st.integers(3, 6), r"\bn \(2,\), c \(\d,\)", 2),
    Case("num_modes.y", lambda v: me.num_modes(jnp.array([0.5, v, 0.0])),
         st.one_of(negatives(), non_finite()), r"\by must", 0.5, jit=True),
    Case("effective_num_modes.y", lambda v: me.effective_num_modes(v),
         st.one_of(SIMPLEX3_BAD, st.just(np.zeros(3))), r"\by must", Y3, jit=True),
    Case("entropy.y", lambda v: me.entropy(v), SIMPLEX3_BAD, r"\by must", Y3, jit=True),
    Case("normalized_entropy.y", lambda v: me.normalized_entropy(v), SIMPLEX3_BAD, r"\by must",
         Y3),
    Case("cluster_distribution.num_clusters",
         lambda v: me.cluster_distribution(np.array([0, 1, -1]), v),
         st.one_of(non_integers(2, 9), st.integers(-3, 0)), r"\bnum_clusters\b", 3),
    Case("cluster_distribution.ids", lambda v: me.cluster_distribution(jnp.array([0, v, -1]), 3),
         st.one_of(st.integers(3, 50), st.integers(-50, -2)), r"cluster ids", 2, jit=True),
    Case("token_entropy.logits", lambda v: me.token_entropy(jnp.array([[0.0, v, 1.0]])),
         st.sampled_from([np.nan, np.inf]), r"\blogits\b", -np.inf, jit=True),
    Case("token_entropy.all_-inf", lambda v: me.token_entropy(jnp.full((2, 3), v)),
         st.just(-np.inf), r"\blogits\b", 0.0, jit=True),
    Case("distinct_n.n", lambda v: me.distinct_n(TOKENS[0], n=v),
         st.one_of(non_integers(1, 3), st.integers(-3, 0), st.integers(4, 9)), r"\bn\b", 2),
    Case("self_bleu.max_n", lambda v: me.self_bleu(TOKENS[0], max_n=v),
         st.one_of(non_integers(1, 3), st.integers(-3, 0)), r"\bmax_n\b", 2),
    Case("self_bleu.smoothing", lambda v: me.self_bleu(TOKENS[0], max_n=2, smoothing=v),
         NONNEG_BAD,
         r"\bsmoothing\b", 0.1),
    # ---------------------------------------------------------------- shaping: baselines
    *[Case(f"{f.__name__}.rewards", _on_rewards(f),
           st.one_of(non_finite(), st.floats(1e101, 1e308), st.floats(-1e308, -1e101)),
           r"\brewards\b", 0.5, jit=f in (sh.grpo_advantages, sh.rloo_advantages))
      for f in (sh.raw_advantages, sh.mean_shifted_advantages, sh.grpo_advantages,
                sh.dr_grpo_advantages, sh.rloo_advantages, sh.reinforce_pp_advantages)],
    Case("rloo_advantages.overflow", lambda v: sh.rloo_advantages(jnp.array([[v, -v]])),
         st.floats(1e101, 1e308), r"\brewards\b", 1e50, jit=True),
    Case("grpo_advantages.mask", lambda v: sh.grpo_advantages(REWARDS, jnp.array([[1, v, 1, 1]])),
         st.one_of(st.floats(0.01, 0.99), st.integers(2, 9), st.just(-1)), r"\bmask\b", 0,
         jit=True),
    Case("grpo_advantages.eps", lambda v: sh.grpo_advantages(REWARDS, eps=v), NONNEG_BAD,
         r"\beps\b", 0.0),
    Case("grpo_advantages.ddof", lambda v: sh.grpo_advantages(REWARDS, ddof=v),
         st.one_of(st.integers(2, 5), st.integers(-3, -1), non_integers(0, 1)), r"\bddof\b", 1),
    Case("reinforce_pp_advantages.eps", lambda v: sh.reinforce_pp_advantages(REWARDS, eps=v),
         NONNEG_BAD, r"\beps\b", 1e-3),
    Case("success_rate.rewards", lambda v: sh.success_rate(jnp.array([[1.0, v, 0.0]])),
         st.floats(0.01, 0.99), r"\brewards\b", 1.0, jit=True),
    # shaping: rules
    Case("focal_advantages.gamma",
         lambda v: sh.focal_advantages(np.ones((1, 4)), REWARDS, gamma=v), NONNEG_BAD,
         r"\bgamma\b", 0.5, jit=True, jit_bad=st.one_of(negatives(), non_finite())),
    Case("focal_advantages.advantages",
         lambda v: sh.focal_advantages(jnp.array([[1.0, v, 0.0, 0.0]]), REWARDS, gamma=1.0),
         non_finite(), r"\badvantages\b", 2.0, jit=True),
    Case("iac_advantages.alpha", lambda v: sh.iac_advantages(np.ones((1, 4)), REWARDS, alpha=v),
         NONNEG_BAD, r"\balpha\b", 1.0),
    Case("Focal.gamma", lambda v: sh.Focal(gamma=v), NONNEG_BAD, r"\bgamma\b", 0.0),
    Case("IAC.alpha", lambda v: sh.IAC(alpha=v), NONNEG_BAD, r"\balpha\b", 2.0),
    Case("f_grpo.gamma", lambda v: sh.f_grpo(v), NONNEG_BAD, r"\bgamma\b", 1.0),
    Case("dapo_iac.alpha", lambda v: sh.dapo_iac(v), NONNEG_BAD, r"\balpha\b", 0.5),
    Case("Pipeline.transforms", lambda v: sh.Pipeline(transforms=v),
         st.sampled_from([sh.Focal(gamma=1.0), 1.0, (1.0,)]), r"transforms", (sh.IAC(alpha=1.0),)),
    # shaping: G²RPO
    Case("G2RPOConfig.gain", lambda v: sh.G2RPOConfig(gain=v), FINITE_BAD, r"\bgain\b", 0.5),
    Case("G2RPOConfig.rho", lambda v: sh.G2RPOConfig(rho=v),
         st.one_of(negatives(), st.floats(1.0, 10.0), non_finite(), not_numbers()), r"\brho\b",
         0.05),
    Case("G2RPOConfig.B_max", lambda v: sh.G2RPOConfig(B_max=v),
         st.one_of(st.just(0.0), negatives(), st.just(np.nan), not_numbers()), r"\bB_max\b", 2.0),
    Case("G2RPOConfig.p_min", lambda v: sh.G2RPOConfig(p_min=v), UNIT_BAD, r"\bp_min\b", 0.1),
    Case("G2RPOConfig.eps", lambda v: sh.G2RPOConfig(eps=v), NONNEG_BAD, r"\beps\b", 0.0),
    Case("G2RPOConfig.kind", lambda v: sh.G2RPOConfig(kind=v),
         st.sampled_from(["a", "C", None, 1]), r"\bkind\b", "A"),
    Case("G2RPOConfig.verifier", lambda v: sh.G2RPOConfig(verifier=v),
         st.sampled_from([0.1, "v"]), r"\bverifier\b", sl.Verifier(0.1, 0.0)),
    Case("g2rpo_bonus.rewards",
         lambda v: sh.g2rpo_bonus(jnp.array([[1.0, v, 0.0]]), np.array([[0, -1, -1]])),
         st.floats(0.01, 0.99), r"\brewards\b", 0.0, jit=True),
    Case("g2rpo_bonus.good_cluster",
         lambda v: sh.g2rpo_bonus(np.array([[1.0, 1.0, 0.0]]), jnp.array([[0, v, -1]])),
         st.one_of(st.integers(3, 50), st.integers(-50, -1)), r"good_cluster", 2, jit=True),
    Case("g2rpo_bonus.num_clusters",
         lambda v: sh.g2rpo_bonus(REWARDS, np.array([[0, -1, 0, -1]]), num_clusters=v),
         st.one_of(st.integers(-3, 0), non_integers(1, 9)), r"\bnum_clusters\b", 2),
    # shaping: token level
    Case("grpo_tn_advantages.decay", lambda v: sh.grpo_tn_advantages(REWARDS, TOKENS, decay=v),
         UNIT_BAD, r"\bdecay\b", 0.5),
    Case("grpo_tn_advantages.tokens", lambda v: sh.grpo_tn_advantages(REWARDS, v),
         st.sampled_from([TOKENS.astype(float), TOKENS[0], "abc"]), r"\btokens\b", TOKENS),
    Case("low_prob_confidence.fraction",
         lambda v: sh.low_prob_confidence(-np.ones((2, 5)), fraction=v),
         st.one_of(non_positive(), st.floats(1.0, 5.0, exclude_min=True), not_numbers()),
         r"\bfraction\b", 0.5),
    Case("low_prob_confidence.logprobs",
         lambda v: sh.low_prob_confidence(jnp.array([[-1.0, v, -0.5]])),
         st.one_of(st.floats(1e-6, 10.0), non_finite()), r"\blogprobs\b", -2.0, jit=True,
         jit_bad=st.one_of(st.floats(1e-6, 10.0), st.sampled_from([np.nan, np.inf]))),
    Case("progrpo_advantages.alpha",
         lambda v: sh.progrpo_advantages(REWARDS, -np.ones((1, 4, 3)), -np.ones((1, 5)),
                                         alpha=v),
         FINITE_BAD, r"\balpha\b", 0.5),
    # ---------------------------------------------------------------- categorical
    Case("CategoricalPolicy.num_actions", lambda v: cat.CategoricalPolicy(num_actions=v),
         st.one_of(st.integers(-3, 1), non_integers(2, 9)), r"\bnum_actions\b", 20_000),
    Case("CategoricalPolicy.num_correct",
         lambda v: cat.CategoricalPolicy(num_actions=8, num_correct=v),
         st.one_of(st.integers(-3, 0), st.integers(9, 20), non_integers(1, 7)), r"num_correct",
         3),
    Case("CategoricalPolicy.anchor_logit", lambda v: cat.CategoricalPolicy(anchor_logit=v),
         FINITE_BAD, r"\banchor_logit\b", -1.0),
    Case("CategoricalPolicy.r_wrong", lambda v: cat.CategoricalPolicy(r_wrong=v),
         st.one_of(st.floats(1.0, 10.0), non_finite(), not_numbers()), r"\br_wrong\b", 0.0),
    Case("CategoricalConfig.group_size", lambda v: cat.CategoricalConfig(group_size=v),
         st.one_of(st.integers(-3, 0), non_integers(1, 9)), r"\bgroup_size\b", 16),
    Case("CategoricalConfig.eta", lambda v: cat.CategoricalConfig(eta=v),
         POS_BAD, r"\beta\b", 0.5),
    Case("CategoricalConfig.focal_gamma", lambda v: cat.CategoricalConfig(focal_gamma=v),
         NONNEG_BAD, r"\bfocal_gamma\b", 2.0),
    Case("CategoricalConfig.surrogate", lambda v: cat.CategoricalConfig(surrogate=v),
         st.sampled_from(["prob", None, 1]), r"\bsurrogate\b", "log_likelihood"),
    Case("CategoricalConfig.dtype", lambda v: cat.CategoricalConfig(dtype=v),
         st.sampled_from([jnp.int32, "float16", 3]), r"\bdtype\b", jnp.float32),
    Case("sample_counts.logits", lambda v: cat.sample_counts(jax.random.key(0),
                                                            jnp.array([0.0, v, 1.0]), 5),
         st.sampled_from([np.nan, np.inf]), r"\blogits\b", -np.inf, jit=True),
    Case("sample_counts.all_-inf", lambda v: cat.sample_counts(jax.random.key(0), v, 5),
         st.integers(1, 4).map(lambda n: np.full(n, -np.inf)), r"\blogits\b", np.zeros(3),
         jit=True, jit_bad=st.just(np.full(3, -np.inf))),
    Case("sample_counts.key", lambda v: cat.sample_counts(v, np.zeros(3), 4),
         st.sampled_from([0, None, "key", np.uint32(3)]), r"\bkey\b", jax.random.key(1)),
    Case("sample_counts.n", lambda v: cat.sample_counts(jax.random.key(0), np.zeros(3), v),
         st.one_of(st.integers(-3, 0), non_integers(1, 9), st.just(True)), r"\bn\b", 4),
    Case("action_advantages.k", lambda v: cat.action_advantages(CFG, v),
         st.one_of(st.integers(5, 50), st.integers(-50, -1), non_integers(0, 4)),
         r"num_correct_drawn", 2, jit=True),
    Case("count_gradient.weights",
         lambda v: cat.count_gradient(np.zeros(3), jnp.array([0.0, v, 1.0]), "probability"),
         non_finite(), r"\bweights\b", 2.0, jit=True),
    Case("count_gradient.surrogate", lambda v: cat.count_gradient(np.zeros(3), np.ones(3), v),
         st.sampled_from(["prob", None]), r"\bsurrogate\b", "log_likelihood"),
    Case("count_weights.counts",
         lambda v: cat.count_weights(CFG, jnp.where(jnp.arange(16) == 0, v, COUNTS)),
         st.one_of(st.integers(-5, -1), st.integers(2, 9)), r"\bcounts\b", 1, jit=True),
    Case("count_weights.shape", lambda v: cat.count_weights(CFG, np.zeros(v, np.int32)),
         st.integers(1, 15), r"\bcounts\b"),
]

# heavy functions (many small ops, compiled op by op): their valid use is covered by the
# module's own tests, so no ``good`` run here
_HEAVY = {"self_bleu.max_n", "self_bleu.smoothing", "grpo_tn_advantages.decay",
          "grpo_tn_advantages.tokens", "progrpo_advantages.alpha", "distinct_n.n",
          "sample_counts.n", "g2rpo_bonus.num_clusters", "tail_miss_peak.tau",
          "tail_miss_peak.iters", "low_prob_confidence.fraction", "uniform_on_support.n",
          "noncollinearity_witness.n"}
_IDS = [c.id for c in CASES]
assert len(set(_IDS)) == len(_IDS), "duplicate case ids"
JIT_CASES = [c for c in CASES if c.jit]


def _numeric(value) -> bool:
    try:
        return np.asarray(value).dtype.kind in "biuf"
    except Exception:
        return False


@pytest.mark.parametrize("case", CASES, ids=_IDS)
@settings(max_examples=15)
@given(data=st.data())
def test_refused_eagerly(case, data):
    value = data.draw(case.bad, label="bad value")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(ValueError, match=case.match):
            jax.block_until_ready(case.f(value))


def _assert_finite(case, out):
    for leaf in jax.tree_util.tree_leaves(out):
        if eqx.is_array(leaf) and jnp.issubdtype(leaf.dtype, jnp.floating):
            arr = np.asarray(leaf)
            if case.id.startswith("mc_"):  # Monte Carlo: NaN where a count has < 2 groups
                continue
            assert np.all(np.isfinite(arr) | (arr == -np.inf)), f"{case.id}: {arr}"


_VALID = [c for c in CASES if c.good is not None and not c.jit and c.id not in _HEAVY]


@pytest.mark.parametrize("case", _VALID, ids=[c.id for c in _VALID])
def test_valid_value_is_accepted(case):
    """The same call with a valid value for the argument runs (so no case passes by refusing
    everything) and returns finite numbers. (Jit cases check their ``good`` value compiled.)"""
    _assert_finite(case, case.f(case.good))


_JITTED: dict[str, Callable] = {}


def _jitted(case: Case) -> Callable:
    if case.id not in _JITTED:
        _JITTED[case.id] = eqx.filter_jit(case.f)
    return _JITTED[case.id]


@pytest.mark.parametrize("case", JIT_CASES, ids=[c.id for c in JIT_CASES])
@settings(max_examples=3)
@given(data=st.data())
def test_refused_under_jit(case, data):
    """Traced values: an ``eqx.error_if`` run-time error with the clean message."""
    strategy = case.jit_bad if case.jit_bad is not None else case.bad.filter(_numeric)
    value = data.draw(strategy, label="bad value")
    arg = jnp.asarray(np.asarray(value))  # strong dtype: one compilation per case
    with pytest.raises(eqx.EquinoxRuntimeError, match=case.match):
        jax.block_until_ready(_jitted(case)(arg))
    if case.good is not None:  # the same compiled function accepts a valid value
        _assert_finite(case, _jitted(case)(jnp.asarray(np.asarray(case.good, arg.dtype))))


# --------------------------------------------------------------------------- beyond the table


@eqx.filter_jit
def _solve_p(eta, allow_reversed: bool = False):
    dyn = eqx.tree_at(lambda d: d.eta, sl.GRPO(eta=1.0, allow_reversed=allow_reversed), eta)
    return sl.solve(dyn, S0, t1=1.0, n_save=3).p


@settings(max_examples=3)
@given(eta=st.floats(-5.0, -0.05))
def test_negative_eta_under_jit_solve_raises_at_run_time(eta):
    """A traced negative η reaches ``solve`` through ``tree_at`` (no ``__check_init__``): the
    run-time check of ``dynamics.checked()`` refuses it instead of running the flow backwards."""
    with pytest.raises(eqx.EquinoxRuntimeError, match=r"GRPO\.eta"):
        jax.block_until_ready(_solve_p(jnp.asarray(eta)))
    assert float(_solve_p(jnp.asarray(1.0))[-1]) < float(S0.p)


def test_reversed_flow_needs_the_explicit_flag():
    """``allow_reversed=True`` admits η < 0, which runs GRPO backwards (ṗ > 0, the y-field
    flips sign)."""
    with pytest.raises(ValueError, match="allow_reversed"):
        sl.GRPO(eta=-1.0)
    back = sl.GRPO(eta=-1.0, allow_reversed=True)
    fwd = sl.GRPO(eta=1.0)
    assert float(back.vector_field(0.0, S0).p) > 0 > float(fwd.vector_field(0.0, S0).p)
    np.testing.assert_allclose(back.vector_field(0.0, S0).y, -fwd.vector_field(0.0, S0).y)
    assert float(back.kappa(0.3)) == -float(fwd.kappa(0.3))


@settings(max_examples=4)
@given(lr=st.one_of(non_positive()))
def test_negative_categorical_eta_under_jit_raises(lr):
    """``CategoricalConfig.eta`` swapped for a traced non-positive value (as a sweep
    does) errors at run time instead of descending the surrogate."""
    def one_step(rate):
        config = eqx.tree_at(lambda c: c.eta, CFG, rate)
        return cat.categorical_step(config, cat.categorical_init(config, jax.random.key(0))).logits

    f = _JITTED.setdefault("categorical_lr", eqx.filter_jit(one_step))
    with pytest.raises(eqx.EquinoxRuntimeError, match="eta"):
        jax.block_until_ready(f(jnp.asarray(lr)))
    assert np.all(np.isfinite(np.asarray(f(jnp.asarray(0.1)))))


def test_plain_jax_jit_shows_the_message_too():
    """Under a plain ``jax.jit`` the error is a ``JaxRuntimeError`` whose text still contains
    the message."""
    with pytest.raises(Exception, match=r"p \(total bad mass\) must lie in the open interval"):
        jax.block_until_ready(jax.jit(mf.kappa)(jnp.asarray(1.5)))


def test_continuous_group_size_is_opt_in():
    """Non-integer N is the analytic continuation of Lemma 3.1: refused unless asked for."""
    with pytest.raises(ValueError, match="continuous=True"):
        S.tail_miss(0.5, 0.1, 2.5)
    assert np.isfinite(float(S.tail_miss(0.5, 0.1, 2.5, continuous=True)))


# --------------------------------------------------------------------------- removed names
# One name per quantity (group size ``group_size``, gain ``gain``, step size ``eta``): the old
# keywords and attributes of 0.x are gone (CHANGELOG.md) and refused, never silently ignored.

REMOVED = [
    ("ConstantGain(lam=)", lambda: sl.ConstantGain(lam=0.7), TypeError),
    ("ScheduleA(lam0=)", lambda: sl.ScheduleA(lam0=2.0), TypeError),
    ("G2RPOConfig(lam0=)", lambda: sh.G2RPOConfig(lam0=1.2), TypeError),
    ("gain_schedule_a(lam0=)", lambda: mf.gain_schedule_a(0.3, lam0=1.5), TypeError),
    ("good_bonus_field_j1(lam=)", lambda: mf.good_bonus_field_j1(S0, lam=0.5), TypeError),
    ("tail_miss(n=)", lambda: S.tail_miss(0.5, 0.1, n=16), TypeError),
    ("logit_update(n=)", lambda: S.logit_update(PI, CORRECT, SAMPLED, n=4), TypeError),
    ("mc_activity(n=)", lambda: S.mc_activity(0.3, n=8, n_groups=10, rng=np.random.default_rng(0)),
     TypeError),
    ("ScheduleB().lam0", lambda: sl.ScheduleB(2.0).lam0, AttributeError),
    ("CategoricalConfig(learning_rate=)",
     lambda: sl.sim.CategoricalConfig(learning_rate=0.3), TypeError),
    ("Categorical.make(learning_rate=)",
     lambda: sl.sim.Categorical.make(learning_rate=0.3), ValueError),
    ("sweep categorical learning_rate",
     lambda: sl.sweep.run("categorical", {"learning_rate": [0.1]}, seeds=1, progress=False),
     ValueError),
    ("simplexlab.sim.verify_schedule", lambda: sl.sim.verify_schedule, AttributeError),
]


@pytest.mark.parametrize("call,error", [(c, e) for _, c, e in REMOVED],
                         ids=[i for i, _, _ in REMOVED])
def test_removed_old_names_are_refused(call, error):
    with pytest.raises(error):
        call()


# ---- run-time errors on an asynchronous backend -------------------------------------------------

ASYNC_CHILD = r"""
import equinox as eqx, jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, PartitionSpec as P
jax.config.update("jax_enable_x64", True)
from simplexlab import shaping as sh
mesh = Mesh(np.array(jax.devices()), ("d",))
assert len(mesh.devices) == 2
nan = jnp.nan
cases = {  # public function, bad input (one group per device), its message
    "grpo_advantages": (sh.grpo_advantages, (jnp.array([[1.0, nan], [1.0, 0.0]]),),
                        "rewards must be finite"),
    "g2rpo_bonus": (sh.g2rpo_bonus, (jnp.array([[1.0, 0.0, 1.0]] * 2),
                                     jnp.array([[0, 0, 1], [0, -1, 1]])),
                    "must be -1 for incorrect"),
    "low_prob_confidence": (sh.low_prob_confidence, (jnp.array([[0.0, nan], [0.0, -1.0]]),),
                            "finite"),
}
for name, (fn, args, match) in cases.items():
    prog = jax.shard_map(jax.vmap(fn), mesh=mesh, in_specs=P("d"), out_specs=P("d"),
                         check_vma=False)
    out = jax.jit(prog)(*args)  # a parallel program: dispatched asynchronously, even on CPU
    print(name, "call: returned")  # the GPU's symptom: no error yet
    try:
        jax.block_until_ready(out)
        print(name, "wait: returned")
    except Exception as e:
        print(name, "wait: raised", match in str(e))
    try:
        jax.block_until_ready(eqx.filter_jit(prog)(*args))
        print(name, "filter_jit: returned")
    except eqx.EquinoxRuntimeError as e:
        print(name, "filter_jit: raised", match in str(e))
"""


def test_run_time_errors_reach_the_caller_on_an_asynchronous_backend():
    """A program on two CPU devices is dispatched asynchronously, as every program is on a GPU
    (on one CPU device a program with an ``eqx.error_if`` runs at once, and
    ``jax_cpu_enable_async_dispatch`` does not change that): there the bad input of each public
    function behind the GPU failures seen on a lent accelerator is not refused by the call that
    dispatched it (what
    ``pytest.raises`` around a bare ``jax.jit`` call saw on the H100) but where the result is waited
    for, with the function's message; under ``eqx.filter_jit`` (which waits for its error marker)
    at the call. The tests of bad input under ``jit`` therefore wait for the result."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} "
                        "--xla_force_host_platform_device_count=2".strip()}
    proc = subprocess.run([sys.executable, "-c", ASYNC_CHILD], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.split(" ")[0] in
             ("grpo_advantages", "g2rpo_bonus", "low_prob_confidence")]
    for name in ("grpo_advantages", "g2rpo_bonus", "low_prob_confidence"):
        assert f"{name} call: returned" in lines
        assert f"{name} wait: raised True" in lines, proc.stdout
        assert f"{name} filter_jit: raised True" in lines, proc.stdout


def test_a_verifier_built_inside_jit_checks_its_rates():
    """Traced rates cannot be checked on the host: the same rules run inside the program (a
    rate outside [0, 1], NaN, J <= 0 raise; allow_flipped admits J <= 0)."""
    import equinox as eqx

    from simplexlab.theory import Verifier

    a = jnp.asarray
    f = eqx.filter_jit(lambda fn, fp: Verifier(fn, fp).J)  # arrays: traced rates
    assert float(f(a(0.2), a(0.1))) == pytest.approx(0.7)
    for fn, fp, what in ((1.5, 0.0, "in \\[0, 1\\]"), (float("nan"), 0.0, "finite"),
                         (0.6, 0.5, "flips the flow")):
        with pytest.raises(Exception, match=what):
            jax.block_until_ready(f(a(fn), a(fp)))
    g = eqx.filter_jit(lambda fn, fp: Verifier(fn, fp, allow_flipped=True).J)
    assert float(g(a(0.6), a(0.5))) == pytest.approx(-0.1)


def test_a_state_built_without_make_state_is_checked_where_it_is_used():
    """A :class:`State` of JAX arrays built directly (or by ``tree_map``) skips ``make_state``;
    ``check_state`` refuses it off the state space, eagerly with the value (p outside (0, 1),
    y off the simplex, NaN in z) and under ``jit`` at run time, and hands a good one back as
    the same object (its arrays not copied)."""
    from simplexlab.theory import State
    from simplexlab.theory._state import check_state

    f = jnp.asarray
    good = State(f(0.4), f(Y3), f(Z2))
    assert check_state(good) is good
    bad = ((State(f(1.2), f(Y3), f(Z2)), r"\bp \(total bad mass\).*1\.2"),
           (State(f(0.4), f([0.5, 0.5, 0.5]), f(Z2)), r"\by \(within-good.*0\.5"),
           (State(f(0.4), f(Y3), f([float("nan"), 1.0])), r"\bz \(within-bad.*nan"),
           (State(f(0.4), f(Y3), f([-0.5, 1.5])), r"\bz \(within-bad.*-0\.5"))
    for state, what in bad:
        with pytest.raises(ValueError, match=what):
            check_state(state)
        traced = eqx.filter_jit(check_state)
        with pytest.raises(Exception, match=what.split(".*")[0]):
            jax.block_until_ready(traced(state))
    # a state of NumPy or Python values is rebuilt as JAX arrays of the default float
    s = check_state(State(0.4, np.asarray(Y3), np.asarray(Z2)))
    assert isinstance(s.y, jax.Array) and s.y.dtype == jnp.result_type(float)
