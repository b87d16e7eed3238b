"""Schedules as optax-style ``step -> value`` callables (what optax, brax and Tunix take): a
verified gain schedule's gain (``GainSchedule.gain_schedule``) and the entropy bonus's
coefficient (``EntropyBonus.schedule``), each checked against optax's own schedules of the same
form, and taken back from such a callable (``from_schedule``), where every other form is refused
naming the step where it differs."""

import jax
import numpy as np
import optax
import pytest

from simplexlab.shaping import GainSchedule
from simplexlab.theory import EntropyBonus
from simplexlab.verify import load_schedule

STEPS = np.arange(40)


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                               rtol=1e-6, atol=1e-7)


def test_a_gain_schedule_is_optax_linear_warm_up():
    s = GainSchedule(kind="B", gain=1.5, ramp_steps=10, B_max=5.0)
    fn = s.gain_schedule()
    _close(fn(STEPS), optax.linear_schedule(0.0, 1.5, 10)(STEPS))
    _close([fn(k) for k in (0, 5, 10, 30)], [s.config(k).gain for k in (0, 5, 10, 30)])
    _close(jax.jit(fn)(7), 1.05)  # traceable
    _close(GainSchedule(gain=2.0).gain_schedule()(STEPS), optax.constant_schedule(2.0)(STEPS))


def test_a_verified_schedule_file_exports_its_gain(tmp_path):
    from schedule_files import schedule_file

    s = GainSchedule(kind="constant", gain=1.2, ramp_steps=4, B_max=5.0)
    fn = load_schedule(schedule_file(tmp_path / "s.json", s, passed=True)).gain_schedule()
    _close(fn(STEPS), optax.linear_schedule(0.0, 1.2, 4)(STEPS))


@pytest.mark.parametrize("schedule,gain,ramp", [
    (optax.linear_schedule(0.0, 1.5, 100), 1.5, 100),
    (optax.constant_schedule(0.7), 0.7, 0),
    (lambda step: min(1.0, step / 8) * 2.0, 2.0, 8),  # a plain function of one step
])
def test_a_gain_schedule_back_from_a_callable(schedule, gain, ramp):
    s = GainSchedule.from_schedule(schedule, kind="A", B_max=4.0)
    assert (s.kind, s.B_max, s.ramp_steps) == ("A", 4.0, ramp)
    assert s.gain == pytest.approx(gain, rel=1e-6)
    again = GainSchedule.from_schedule(s.gain_schedule(), kind="A", B_max=4.0)
    assert again == s  # the round trip


@pytest.mark.parametrize("schedule,match", [
    (optax.cosine_decay_schedule(1.5, 100), "neither a constant gain nor a linear warm-up"),
    (optax.linear_schedule(0.5, 1.5, 10), "at step 0"),
    (optax.linear_schedule(0.0, 1.5, 20_000), "has not settled at step 10000"),
    (lambda step: float("nan"), "non-finite"),
    (1.5, "must be callable"),
])
def test_a_gain_schedule_of_another_form_is_refused(schedule, match):
    with pytest.raises(ValueError, match=match):
        GainSchedule.from_schedule(schedule)


def test_the_entropy_coefficient_is_optax_linear():
    decay = EntropyBonus(coef=0.01, final=0.001, decay_steps=30)
    _close(decay.schedule()(STEPS), optax.linear_schedule(0.01, 0.001, 30)(STEPS))
    _close(EntropyBonus(coef=0.02).schedule()(STEPS), optax.constant_schedule(0.02)(STEPS))
    with pytest.raises(ValueError, match="adaptive coefficient follows"):
        EntropyBonus(coef=0.01, adaptive=True).schedule()


def test_the_entropy_bonus_back_from_a_callable():
    b = EntropyBonus.from_schedule(optax.linear_schedule(0.01, 0.001, 30), step_time=0.5)
    assert b.decay_steps == 30 and b.step_time == 0.5
    assert (b.coef, b.final) == (pytest.approx(0.01, rel=1e-6), pytest.approx(0.001, rel=1e-5))
    again = EntropyBonus.from_schedule(b.schedule())  # the round trip, to the line's rounding
    assert again.decay_steps == 30 and again.coef == b.coef
    assert again.final == pytest.approx(b.final, rel=1e-12)
    c = EntropyBonus.from_schedule(optax.constant_schedule(0.02))
    assert c.final is None and c.coef == pytest.approx(0.02)
    with pytest.raises(ValueError, match="neither constant nor linear"):
        EntropyBonus.from_schedule(optax.cosine_decay_schedule(0.01, 100))
    with pytest.raises(ValueError, match="has not settled at step 10000"):
        EntropyBonus.from_schedule(optax.exponential_decay(0.01, 10, 0.5))
