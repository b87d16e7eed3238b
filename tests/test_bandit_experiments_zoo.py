"""The ``method-zoo`` and ``regime-sweep`` experiments in quick mode, through the registry.

Expectations are the theory's, not numbers produced by the code under test: G²RPO's within-good
drift under schedule B with the neutralizer is ``(1 − λ0) V(y)`` (G²RPO §4 eq. (5), §D.6), so
λ0 < 1 concentrates (``L_y`` rises) and λ0 > 1 spreads (``L_y`` falls); λ0 = 0 adds nothing to
GRPO's z-score; at G = 2 an active group has one correct rollout, so the plug-in bonus
``λ(1/(K̂ŷ) − 1)`` is 0; GRPO collapses onto one good mode (Lemma 4.1) while the anti-collision
bonus keeps ``L_y`` low; every rule ascends the expected reward from the same start; F-GRPO's
focal weight retains more correct mass than GRPO (F-GRPO §5.1).
"""

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from simplexlab import lab

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"


def _run(name, out):
    lab.load_experiments(EXPERIMENTS)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rec = lab.run_experiment(name, quick=True, out=out)
    return rec, buf.getvalue()


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    out = tmp_path_factory.mktemp("zoo")
    rec, stdout = _run("method-zoo", out)
    return rec, stdout, out


@pytest.fixture(scope="module")
def regimes(tmp_path_factory):
    out = tmp_path_factory.mktemp("regimes")
    rec, _ = _run("regime-sweep", out)
    return rec, out


# ---- method-zoo -------------------------------------------------------------------------------


def _check_zoo_writes_record_figure_and_prints_the_table(zoo):
    rec, stdout, out = zoo
    on_disk = json.loads((out / "method-zoo.json").read_text())
    assert on_disk["mode"] == "quick" and on_disk["results"]["rows"] == rec["results"]["rows"]
    assert (out / "method_zoo.png").stat().st_size > 20_000
    table = rec["results"]["table_markdown"]
    assert table in stdout  # `simplexlab reproduce method-zoo` shows it
    rows = rec["results"]["rows"]
    assert len(table.splitlines()) == 3 + len(rows)  # header, rule, initial policy, methods
    methods = {r["rule"] for r in rows}
    assert methods == {"grpo", "dr_grpo", "rloo", "reinforce_pp", "f_grpo", "iac", "grpo_n",
                       "g2rpo", "progrpo"}
    p = rec["parameters"]
    for key in ("K", "M", "group_size", "eta", "num_steps", "num_prompts", "seeds", "seed",
                "instance", "optimizer", "delta_fn", "delta_fp"):
        assert key in p, key
    assert p["optimizer"] == "sgd" and p["delta_fn"] == p["delta_fp"] == 0.0


def _check_zoo_methods_share_the_start_and_improve_accuracy(zoo):
    rec = zoo[0]
    res = rec["results"]
    assert res["max_initial_difference_between_methods"] == 0.0  # same instance, same policies
    acc0 = res["initial"]["accuracy"]
    np.testing.assert_allclose(acc0, 1.0 - rec["parameters"]["p0"], atol=1e-12)
    for r in res["rows"]:
        assert r["accuracy"]["lo"] > acc0 + 0.3, r["method"]  # interval clear of the start
        assert r["accuracy"]["lo"] <= r["accuracy"]["mean"] <= r["accuracy"]["hi"]
        # exact pass@k of the policy: pass@1 is the accuracy, pass@8 >= pass@1
        assert r["pass@1"]["mean"] == pytest.approx(r["accuracy"]["mean"], abs=1e-12)
        assert r["pass@8"]["mean"] >= r["pass@1"]["mean"]
        assert r["K_eff"]["mean"] >= 1.0 / r["L_y"]["mean"] - 1e-9  # Jensen: E[1/L] >= 1/E[L]


def _check_zoo_g2rpo_keeps_diversity_grpo_collapses(zoo):
    rows = {r["method"]: r for r in zoo[0]["results"]["rows"]}
    grpo = rows["GRPO"]
    L0 = zoo[0]["results"]["initial"]["L_y"]
    assert grpo["L_y"]["mean"] > L0 + 0.3  # winner-take-all (Lemma 4.1)
    for label in ("G²RPO B λ0=1.5", "G²RPO B λ0=1.5 no-neutr."):
        g2 = rows[label]
        assert g2["L_y"]["hi"] < grpo["L_y"]["lo"], label  # intervals separated
        assert g2["m_ret"]["mean"] > grpo["m_ret"]["mean"], label
    assert rows["F-GRPO γ=1"]["m_ret"]["mean"] > grpo["m_ret"]["mean"]


# ---- regime-sweep -----------------------------------------------------------------------------


def _check_regime_sweep_record_and_figure(regimes):
    rec, out = regimes
    assert (out / "regime_sweep.png").stat().st_size > 20_000
    p = rec["parameters"]
    assert p["method"] == "g2rpo" and p["schedule"] == "B" and p["neutralize"] is True
    Ly = np.asarray(rec["results"]["final_L_y"])
    assert Ly.shape == (len(p["gain_lambda0"]), len(p["group_size"]))
    assert np.all((Ly >= 1.0 / p["K"] - 1e-9) & (Ly <= 1.0 + 1e-9))


def _check_regime_sweep_gain_zero_is_grpo_and_G2_gets_no_bonus(regimes):
    rec = regimes[0]
    res, p = rec["results"], rec["parameters"]
    gains, gs = p["gain_lambda0"], p["group_size"]
    Ly = np.asarray(res["final_L_y"])
    i0, j2 = gains.index(0.0), gs.index(2)
    np.testing.assert_allclose(Ly[i0], res["grpo_final_L_y"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.asarray(res["final_accuracy"])[i0], res["grpo_final_accuracy"],
                               rtol=0, atol=1e-9)
    assert res["checks"]["g2rpo_gain_0_equals_grpo"]["equal"]
    np.testing.assert_allclose(Ly[:, j2], Ly[i0, j2], rtol=0, atol=1e-9)


def _check_regime_sweep_flip_at_gain_one(regimes):
    rec = regimes[0]
    res, p = rec["results"], rec["parameters"]
    gains, gs = np.asarray(p["gain_lambda0"]), np.asarray(p["group_size"])
    Ly = np.asarray(res["final_L_y"])
    L0 = res["initial_L_y"]
    for j in np.flatnonzero(gs >= 8):  # groups large enough to see several good modes
        assert Ly[-1, j] < Ly[0, j] - 0.2, (gs[j], Ly[:, j])
    big = Ly[:, -1]  # largest G: the mean-field side of the flip line
    assert np.all(big[gains < 1.0] > L0) and np.all(big[gains > 1.0] < L0), (big, L0)
    acc = np.asarray(res["final_accuracy"])
    assert np.all(acc > res["initial_accuracy"] + 0.3)  # the neutralizer leaves p to GRPO


# One test per experiment, so that xdist runs each experiment once (a module-scoped fixture is
# per worker: split tests would run the ~45 s zoo on both workers).


@pytest.mark.slow  # ten compiled programs: ~45 s on 2 cores, almost all XLA compile
def test_method_zoo(zoo):
    _check_zoo_writes_record_figure_and_prints_the_table(zoo)
    _check_zoo_methods_share_the_start_and_improve_accuracy(zoo)
    _check_zoo_g2rpo_keeps_diversity_grpo_collapses(zoo)


def test_regime_sweep(regimes):
    _check_regime_sweep_record_and_figure(regimes)
    _check_regime_sweep_gain_zero_is_grpo_and_G2_gets_no_bonus(regimes)
    _check_regime_sweep_flip_at_gain_one(regimes)
