"""Verified gain schedules: GainSchedule, verify_schedule, save / load, the CLI.

Expectations come from outside the code under test: the closed forms of G²RPO (eq. 55, 61, 62,
67: :mod:`simplexlab.theory`), ODEs built here by hand (not through ``Bandit.meanfield``), and
plain NumPy arithmetic. The verifications share one small setting (100 steps, 16 seeds) so their
compiled programs are reused.
"""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simplexlab import theory as mf
from simplexlab.lab._cli import main
from simplexlab.shaping import GainSchedule, RampedGain, g2rpo_bonus
from simplexlab.verify import (
    bad_bonus_growth,
    load_schedule,
    load_schedule_config,
    save_schedule,
    verify_schedule,
)

K, M, P0, ETA = 3, 2, 0.5, 0.05
Y0, Z0 = np.array([4, 2, 1]) / 7, np.array([2, 1]) / 3  # verify_schedule's default start
SMALL = {"num_steps": 100, "seeds": 16}  # T = 5
B_RAMP = {"kind": "B", "gain": 1.5, "B_max": 5.0, "ramp_steps": 40}  # t_ramp = 40 η = 2


def _verify(schedule, **kw):
    return verify_schedule(schedule, **kw)


@pytest.fixture(scope="module")
def report_b():
    return _verify(GainSchedule(**B_RAMP), **SMALL)


@pytest.fixture(scope="module")
def report_half():
    return _verify(GainSchedule(**{**B_RAMP, "gain": 0.5}), **SMALL)


# ---- GainSchedule ------------------------------------------------------------------------------


@pytest.mark.parametrize("fields", [
    {}, {"kind": "constant", "gain": 0.7, "ramp_steps": 25, "p_damp": 0.05},
    {"kind": "A", "gain": 2.0, "B_max": 3.5, "neutralize": False, "rho": 0.01,
     "floor_inverse_G": True, "Lz_min": 0.1, "cluster_bad": False, "p_min": 0.02}])
def test_json_round_trip(fields):
    s = GainSchedule(**fields)
    text = json.dumps(s.to_dict(), allow_nan=False)  # strict JSON: inf must not leak through
    d = json.loads(text)
    back = GainSchedule.from_dict(d)
    for name in GainSchedule.FIELDS:
        assert getattr(back, name) == getattr(s, name), name
    assert d["B_max"] is None if math.isinf(s.B_max) else d["B_max"] == s.B_max
    assert math.isinf(back.B_max) == math.isinf(s.B_max)


@pytest.mark.parametrize("step", [0, 3, 10, 25])
def test_config_warm_up_factor(step):
    """``config(step)`` scales the gain by min(1, step/ramp_steps); the constant schedule's good
    bonus λ(1/(K ŷ_j) − 1) (eq. 44) scales with it, computed here by hand."""
    s = GainSchedule(kind="constant", gain=2.0, ramp_steps=10, neutralize=False)
    lam = 2.0 * min(1.0, step / 10)
    assert float(s.config(step).gain) == pytest.approx(lam, rel=1e-12)
    rewards = np.array([1, 1, 1, 1, 0, 1.0])
    good = np.array([0, 0, 0, 1, -1, 2])
    y = np.array([3, 1, 1]) / 5
    expected = lam * (1 / (3 * y) - 1)  # centered already: Σ y_j (1/(3 y_j) − 1) = 0
    b = np.asarray(g2rpo_bonus(rewards, good, config=s.config(step), num_clusters=3))
    np.testing.assert_allclose(b, [*expected[[0, 0, 0, 1]], 0.0, expected[2]], atol=1e-12)


def test_warm_up_under_strict_promotion():
    """Inside the bandit the step is a traced int32 and the gain a float64 array."""
    f = jax.jit(lambda step, gain: GainSchedule(ramp_steps=10, gain=gain).config(step).gain)
    out = f(jnp.int32(3), jnp.asarray(1.5, jnp.float64))
    assert out.dtype == jnp.float64 and float(out) == pytest.approx(0.45, rel=1e-15)


def test_ramped_gain_is_linear_warm_up_of_inner():
    ver = mf.Verifier(0.1, 0.05)
    J = 1 - 0.15
    inner = mf.ScheduleB(1.5)
    ramp = RampedGain(inner, 2.0)
    rng = np.random.default_rng(0)
    for t in (0.0, 0.5, 1.999, 2.0, 7.0):
        p, Ly, Lz = rng.uniform(0.05, 0.95), rng.uniform(1 / 3, 1), rng.uniform(0.5, 1)
        q = (1 - 0.1) - J * p
        lam_b = 1.5 * J * p / np.sqrt(q * (1 - q)) * (Ly + Lz) / (Lz + 1 / 3)  # eq. 67
        assert float(ramp(t, p, Ly, Lz, 3, ver)) == pytest.approx(min(1, t / 2) * lam_b,
                                                                  rel=1e-12)
    assert float(RampedGain(inner, 0.0)(0.0, 0.3, 0.5, 0.6, 3, ver)) == pytest.approx(
        float(inner(0.0, 0.3, 0.5, 0.6, 3, ver)))
    # the time map t = step · η: a warm-up over 40 steps lasts t = 40 η
    assert GainSchedule(ramp_steps=40).theory_gain(0.05).t_ramp == pytest.approx(2.0)
    assert isinstance(GainSchedule(ramp_steps=0).theory_gain(0.05), mf.ScheduleB)


# ---- verify_schedule ---------------------------------------------------------------------------


def _V(u):
    return u * u - (u @ u) * u


def _fields(system, lam0, t_ramp=40 * ETA):
    """G²RPO eq. (56) (``"neutralized"``), (48) (``"good"``) or (22) (``"grpo"``) with J = 1,
    η = 1 and schedule B (eq. 67) warmed up over ``t_ramp``, written out in NumPy."""
    def f(t, p, y, z):
        Ly, Lz = y @ y, z @ z
        kap = np.sqrt(p * (1 - p))
        base = -(p * (1 - p)) ** 1.5 * (Ly + Lz)
        lam = min(1.0, t / t_ramp) * lam0 * np.sqrt(p / (1 - p)) * (Ly + Lz) / (Lz + 1 / K)
        if system == "grpo":
            return base, kap * _V(y), -kap * _V(z)
        if system == "good":
            return (base + lam * p * (1 - p) ** 2 * (Ly - 1 / K), (kap - (1 - p) * lam) * _V(y),
                    -kap * _V(z))
        return (base, (kap - (1 - p) * lam * (Lz + 1 / K) / (Ly + Lz)) * _V(y),
                (-kap + (1 - p) * lam * (1 / K - Ly) / (Ly + Lz)) * _V(z))
    return f


def _rk4(f, num_steps=SMALL["num_steps"], sub=50):
    """Classical RK4 from (P0, Y0, Z0), ``sub`` steps per η; the state at t = 0, η, 2η, ..."""
    x = (P0, Y0.copy(), Z0.copy())
    out, h, t = [x], ETA / sub, 0.0
    add = lambda x, k, c: tuple(a + c * b for a, b in zip(x, k, strict=True))  # noqa: E731
    for _ in range(num_steps):
        for _ in range(sub):
            k1 = f(t, *x)
            k2 = f(t + h / 2, *add(x, k1, h / 2))
            k3 = f(t + h / 2, *add(x, k2, h / 2))
            k4 = f(t + h, *add(x, k3, h))
            x = tuple(a + h / 6 * (b1 + 2 * b2 + 2 * b3 + b4)
                      for a, b1, b2, b3, b4 in zip(x, k1, k2, k3, k4, strict=True))
            t += h
        out.append(x)
    p = np.array([o[0] for o in out])
    Ly = np.array([o[1] @ o[1] for o in out])
    Lz = np.array([o[2] @ o[2] for o in out])
    return p, Ly, Lz


def test_schedule_b_passes_and_flips_when_the_warm_up_crosses_the_threshold(report_b):
    """Schedule B (eq. 67) with λ0 = 1.5 and the neutralizer passes; under the warm-up the
    inner gain is (t/t_ramp) λ̃, and collision flips when it crosses λ̃_flip (eq. 60/61). At the
    start state λ̃ / λ̃_flip = λ0 (eq. 62, 67, 61), and under B that ratio is the same in every
    state (eq. 68), so the flip time is t_ramp λ̃_flip / λ̃ = t_ramp / λ0 exactly."""
    r = report_b
    assert r.passed and r.reasons == [], r.summary()
    f = r.checks["flip"]
    Ly0, Lz0 = float(Y0 @ Y0), float(Z0 @ Z0)
    lam = float(mf.gain_schedule_b(P0, Ly0, Lz0, K, 1.5))
    lam_tilde = float(mf.inner_gain(P0, lam))
    thr = float(mf.flip_threshold(Ly0, Lz0, K))
    assert lam_tilde / thr == pytest.approx(1.5, rel=1e-12)
    t_pred = 40 * ETA * thr / lam_tilde
    assert f["flips"] and f["t_flip"] > 0
    assert f["t_flip"] == pytest.approx(t_pred, rel=1e-3)
    assert f["step_flip"] == pytest.approx(t_pred / ETA, rel=1e-3)
    assert f["lambda_tilde_start"] == pytest.approx(lam_tilde, rel=1e-9)
    assert f["flip_threshold_start"] == pytest.approx(thr, rel=1e-9)
    assert f["flipped_at_end"]


def test_report_numbers_match_odes_written_out_here(report_b):
    """(b) and (d) against eq. (56) with B (67) and the warm-up t_ramp = 40 η, and GRPO's
    eq. (22), integrated here from the same start on t = 0, η, ..., 100 η (NumPy RK4)."""
    p, Ly, _ = _rk4(_fields("neutralized", 1.5))
    p_grpo, Ly_grpo, _ = _rk4(_fields("grpo", 1.5))
    n, d = report_b.checks["neutral"], report_b.checks["concentration"]
    gap = np.abs(p - p_grpo).max()
    assert n["p_gap_vs_grpo"] == pytest.approx(gap, rel=1e-6)
    assert gap > 5e-3  # not zero: p decays slower on the flatter trajectory (Remark D.4)
    assert n["p_gap_direct"] < 1e-12 and n["pdot_gap"] < 1e-12 and n["passed"]
    assert d["L_y_end_ode"] == pytest.approx(Ly[-1], rel=1e-7)
    assert d["L_y_end_grpo"] == pytest.approx(Ly_grpo[-1], rel=1e-7)
    assert d["L_y_start"] == pytest.approx(float(Y0 @ Y0), rel=1e-12)
    assert d["L_y_end_ode"] < d["L_y_start"] < d["L_y_end_grpo"]  # G²RPO spreads, GRPO sharpens
    e = report_b.checks["bandit"]
    assert e["passed"] and e["error_p"] < 0.02 and e["error_L_y"] < 0.02
    assert abs(d["L_y_end_bandit"] - d["L_y_end_ode"]) <= e["error_L_y"] + 1e-12
    c = report_b.curves
    np.testing.assert_allclose(c["p_ode"], p[c["step"]], rtol=1e-7)
    np.testing.assert_allclose(c["p_grpo"], p_grpo[c["step"]], rtol=1e-7)


def test_small_gain_does_not_flip(report_half):
    """λ0 = 0.5 < 1: under schedule B the inner coefficient is 1 − (t/t_ramp) λ0 >= 0.5."""
    r = report_half
    Ly0, Lz0 = float(Y0 @ Y0), float(Z0 @ Z0)
    ratio = float(mf.inner_gain(P0, mf.gain_schedule_b(P0, Ly0, Lz0, K, 0.5))
                  / mf.flip_threshold(Ly0, Lz0, K))
    assert ratio == pytest.approx(0.5, rel=1e-12)
    f = r.checks["flip"]
    assert not f["flips"] and f["t_flip"] is None and f["step_flip"] is None
    assert f["a_y_over_kappa_end"] >= 0.5 - 1e-9
    assert not r.passed and len(r.reasons) == 1 and r.reasons[0].startswith("flip")
    assert r.checks["concentration"]["L_y_end_ode"] > r.checks["concentration"]["L_y_start"]


def test_without_neutralizer_p_drifts_off_grpo():
    """Good-only bonus (eq. 48): ṗ gains λ p(1−p)²(L_y − 1/K) > 0, so the bonus itself moves the
    bad mass; the moved mass is integrated here along an ODE built by hand."""
    s = GainSchedule(**B_RAMP, neutralize=False)
    r = _verify(s, **SMALL)
    n = r.checks["neutral"]
    assert not n["passed"] and not n["required"]  # measured, not required by default
    assert n["p_gap_direct"] > 10 * n["tolerance"]
    ts = np.arange(SMALL["num_steps"] + 1) * ETA
    p, Ly, Lz = _rk4(_fields("good", 1.5))
    lam = np.minimum(1, ts / 2.0) * 1.5 * np.sqrt(p / (1 - p)) * (Ly + Lz) / (Lz + 1 / 3)
    leak = lam * p * (1 - p) ** 2 * (Ly - 1 / 3)
    moved = np.concatenate([[0], np.cumsum((leak[1:] + leak[:-1]) / 2 * np.diff(ts))])
    assert n["p_gap_direct"] == pytest.approx(np.abs(moved).max(), rel=1e-6)
    strict = _verify(s, **SMALL, require_neutral=True)
    assert not strict.passed
    assert [x.split(":")[0] for x in strict.reasons] == ["neutral"]
    assert f"{n['p_gap_direct']:.3g}" in strict.reasons[0]


def _one_failure_closed_form(lam, G):
    """B_b of eq. (55) for p̂ = 1/G, ŷ = ((G−2)/(G−1), 1/(G−1)) (two clusters), L_z = 1."""
    y = np.array([G - 2, 1]) / (G - 1)
    Ly = y @ y
    return lam * (1 / 2 - Ly) / ((1 / G) * (Ly + 1))


def test_bounded_check_tells_unclipped_from_clipped():
    unclipped = bad_bonus_growth(GainSchedule(kind="constant", gain=1.5))
    clipped = bad_bonus_growth(GainSchedule(kind="constant", gain=1.5, B_max=5.0))
    Gs = unclipped["G"]
    expected = [_one_failure_closed_form(1.5, G) if G > 2 else 0.0 for G in Gs]
    np.testing.assert_allclose(unclipped["bad_bonus"]["all-but-one"], expected, rtol=1e-9)
    assert not unclipped["bounded"] and unclipped["bounded_by"] == []
    assert unclipped["growth_exponent"] == pytest.approx(1.0, abs=0.02)  # |B_b| ∝ 1/p̂ = G
    assert unclipped["max_abs_bad_bonus"] == pytest.approx(abs(expected[-1]), rel=1e-9)
    assert clipped["bounded"] and clipped["max_abs_bad_bonus"] <= 5.0
    assert any("B_max" in b for b in clipped["bounded_by"])
    np.testing.assert_allclose(np.abs(clipped["bad_bonus"]["uniform"]), 0.0, atol=0.2)


def test_schedule_b_bonus_grows_like_one_over_sigma_unless_the_verifier_is_noisy():
    """Eq. (70): |B_b| ∝ 1/σ(p̂); σ(p̂) = sqrt(p̂(1−p̂)) → 0 with a perfect verifier (exponent
    1/2 in G), σ → sqrt(δ_FN(1−δ_FN)) > 0 with δ_FN > 0 (bounded, no safeguard needed)."""
    perfect = bad_bonus_growth(GainSchedule(kind="B", gain=1.5))
    noisy = bad_bonus_growth(GainSchedule(kind="B", gain=1.5), delta_fn=0.1)
    damped = bad_bonus_growth(GainSchedule(kind="B", gain=1.5, p_damp=0.05))
    assert perfect["growth_exponent"] == pytest.approx(0.5, abs=0.03) and not perfect["bounded"]
    assert noisy["bounded"] and noisy["growth_exponent"] < 0.05
    assert noisy["bounded_by"] and noisy["bounded_by"][0].startswith("measured")
    assert damped["bounded"] and damped["growth_exponent"] < 0  # damped like p̂² → 0


def test_save_and_load(tmp_path, report_b, report_half):
    good = tmp_path / "b.json"
    save_schedule(good, GainSchedule(**B_RAMP), report_b)
    data = json.loads(good.read_text())
    assert data["format"] == "simplexlab.gain_schedule/1"
    assert data["verification"]["passed"] is True and "git_revision" in data["provenance"]
    assert data["verification"]["numbers"]["t_flip"] == pytest.approx(
        report_b.checks["flip"]["t_flip"])
    assert load_schedule(good).to_dict() == GainSchedule(**B_RAMP).to_dict()

    bad = tmp_path / "half.json"
    half = GainSchedule(**{**B_RAMP, "gain": 0.5})
    save_schedule(bad, half, report_half)
    with pytest.raises(ValueError, match=r"half\.json.*failed verification.*flip"):
        load_schedule(bad)
    with pytest.warns(UserWarning, match="force=True"):
        assert load_schedule(bad, force=True).to_dict() == half.to_dict()
    # the report must be the verification of the schedule being saved
    with pytest.raises(ValueError, match="another schedule"):
        save_schedule(tmp_path / "x.json", half, report_b)
    # a schedule edited after its verification is refused
    data["schedule"]["gain"] = 3.0
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="not the one verified"):
        load_schedule(edited)


def test_load_rejects_malformed_files(tmp_path):
    cases = {"notjson.json": "{not json", "list.json": "[1, 2]",
             "fmt.json": json.dumps({"format": "other/2", "schedule": {}}),
             "noverify.json": json.dumps({"format": "simplexlab.gain_schedule/1",
                                          "schedule": GainSchedule().to_dict()}),
             "badfield.json": json.dumps({"format": "simplexlab.gain_schedule/1",
                                          "schedule": {"kind": "B", "gian": 1.0},
                                          "verification": {"passed": True, "reasons": []}})}
    match = {"notjson.json": "not a JSON file", "list.json": "no 'format'",
             "fmt.json": "unknown format 'other/2'", "noverify.json": "no 'verification'",
             "badfield.json": "gian"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=match[name]) as err:
            load_schedule(tmp_path / name, force=True)
        assert name in str(err.value)


def test_bad_inputs_name_the_value(tmp_path):
    with pytest.raises(ValueError, match="'Z'"):
        GainSchedule(kind="Z")
    with pytest.raises(ValueError, match="ramp_steps.*-3"):
        GainSchedule(ramp_steps=-3)
    with pytest.raises(ValueError, match="K .*got 1"):
        verify_schedule(GainSchedule(), K=1)
    with pytest.raises(ValueError, match="p0.*1.5"):
        verify_schedule(GainSchedule(), p0=1.5)
    with pytest.raises(ValueError, match="tol_p .*-0.1"):
        verify_schedule(GainSchedule(), tol_p=-0.1)
    for text, what in (('[schedule]\nkind = "B"\ngian = 1.5\n', "gian"),
                       ('[schedule]\nkind = "B"\n[verify]\nseed_count = 3\n', "seed_count"),
                       ('[schedule]\nkind = "B"\n[train]\nx = 1\n', "train"),
                       ('[schedule]\nkind = "Q"\n', "'Q'"),
                       ('[schedule]\nramp_steps = -5\n', "-5"),
                       ('[verify]\nseeds = 4\n', r"\[schedule\]")):
        cfg = tmp_path / "c.toml"
        cfg.write_text(text)
        with pytest.raises(ValueError, match=what):
            load_schedule_config(cfg)


def test_example_configs_parse():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "experiments" / "schedules"
    s, opts = load_schedule_config(root / "g2rpo-b.toml")
    assert (s.kind, s.gain, s.neutralize, s.B_max) == ("B", 1.5, True, 5.0)
    s, opts = load_schedule_config(root / "constant-unclipped.toml")
    assert s.kind == "constant" and math.isinf(s.B_max) and s.p_damp == 0 and s.p_min == 0
    assert not bad_bonus_growth(s)["bounded"]  # why it fails: check (c)


# ---- the command line --------------------------------------------------------------------------


def _config(path, gain):
    path.write_text(f'[schedule]\nkind = "B"\ngain = {gain}\nB_max = 5.0\nramp_steps = 40\n'
                    f'[verify]\nnum_steps = {SMALL["num_steps"]}\nseeds = {SMALL["seeds"]}\n')
    return path


@pytest.fixture
def standard_promotion():
    with jax.numpy_dtype_promotion("standard"):  # see _verify
        yield


def test_cli_schedule_verify(tmp_path, capsys, monkeypatch, standard_promotion):
    monkeypatch.setenv("SIMPLEXLAB_PROGRESS", "0")
    out, rep = tmp_path / "b.json", tmp_path / "b-report.json"
    code = main(["schedule", "verify", str(_config(tmp_path / "b.toml", 1.5)), "--out", str(out),
                 "--report", str(rep)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "PASSED" in text and "(a) flip" in text and "(e) bandit" in text
    data = json.loads(out.read_text())
    assert data["verification"]["passed"] and data["schedule"]["gain"] == 1.5
    assert data["verification"]["inputs"]["num_steps"] == SMALL["num_steps"]
    assert load_schedule(out).gain == 1.5
    full = json.loads(rep.read_text())
    assert len(full["curves"]["p_ode"]) == SMALL["num_steps"] + 1

    # a failing schedule: exit status 1, the file is written and marked failed
    code = main(["schedule", "verify", str(_config(tmp_path / "h.toml", 0.5)), "--out",
                 str(tmp_path / "h.json")])
    text = capsys.readouterr().out
    assert code == 1 and "FAILED" in text and "reason: flip" in text
    assert json.loads((tmp_path / "h.json").read_text())["verification"]["passed"] is False
    with pytest.raises(ValueError, match="failed verification"):
        load_schedule(tmp_path / "h.json")

    # bad input: exit status 2, the message names the key, nothing is written
    bad = tmp_path / "bad.toml"
    bad.write_text('[schedule]\nkind = "B"\n[verify]\ngroupsize = 8\n')
    code = main(["schedule", "verify", str(bad), "--out", str(tmp_path / "bad.json")])
    assert code == 2 and "groupsize" in capsys.readouterr().err
    assert not (tmp_path / "bad.json").exists()
    assert main(["schedule", "verify", str(tmp_path / "missing.toml"), "--out",
                 str(tmp_path / "m.json")]) == 2
    assert "missing.toml" in capsys.readouterr().err


def test_jit_reuse_keeps_reports_independent(report_b, report_half):
    """The compiled programs are shared between verifications: the gain must not leak."""
    assert report_b.inputs["schedule"]["gain"] == 1.5
    assert report_half.inputs["schedule"]["gain"] == 0.5
    assert report_b.checks["flip"]["flips"] and not report_half.checks["flip"]["flips"]
    assert jax.config.read("jax_enable_x64")


def test_finite_group_theory_sees_that_a_small_group_does_not_flip():
    """``theory="finite"``: at G = 4 the mean field says schedule B with λ0 = 1.5 flips
    collision from the start (λ̃ρ > 1), while the exact finite-group field keeps collision (a
    group of 4 samples too few good modes for the bonus to reach the rare ones); the bandit
    follows the finite-group ODE to O(η), and leaves the mean field's L_y by an O(1/G) gap."""
    kw = dict(K=3, M=2, group_size=4, num_steps=60, seeds=8, eta=0.05, y0=(0.6, 0.3, 0.1))
    sched = GainSchedule(kind="B", gain=1.5, neutralize=True)
    limit = verify_schedule(sched, **kw)
    finite = verify_schedule(sched, theory="finite", **kw)
    assert limit.checks["flip"]["flips"] and not finite.checks["flip"]["flips"]
    assert finite.checks["flip"]["a_y_over_kappa_start"] > 0.5  # close to GRPO's collision (1)
    assert finite.inputs["theory"] == "finite" and "FiniteGroup" in finite.checks["flip"]["system"]
    e_lim, e_fin = limit.checks["bandit"]["error_L_y"], finite.checks["bandit"]["error_L_y"]
    assert e_fin < e_lim / 5, (e_fin, e_lim)
    assert finite.checks["bandit"]["passed"]
    with pytest.raises(ValueError, match="theory must be one of"):
        verify_schedule(sched, theory="exact", **kw)


def test_verify_schedule_is_one_short_function_of_named_checks():
    """verify_schedule reads as the list of its checks (each one function returning its part of
    the report and its reason), not as one long body."""
    import inspect

    from simplexlab.verify import _verify

    src = inspect.getsource(_verify.verify_schedule)
    assert len(src.splitlines()) <= 60
    for check in ("_check_flip", "_check_neutral", "_check_bounded", "_check_bandit"):
        assert check in src and callable(getattr(_verify, check))
