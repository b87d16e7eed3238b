"""Obscure errors made clear (issue 57, "Obscure" and item 6): every bad input the audit found
ending in a traceback, an anonymous exception or a half-done computation is now one line
naming what is wrong (exit 2 on the command line, ``train`` included), before any compute."""

import math
from pathlib import Path

import numpy as np
import pytest

from simplexlab import sweep
from simplexlab.lab import main

BANDIT = '''
simulator = "bandit"
{top}
[fixed]
num_steps = 2
stride = 2
'''


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("top, what", [
    ("seed = 1180591620717411303424", "seed must be an integer in [-2**63, 2**63 - 1]"),
    ("seed = -9223372036854775809", "seed must be an integer in"),
    ('simulator = ["bandit"]', "simulator must be a string"),
    ('name = "a\\nb"', "name must be a file name"),
    ('name = "a\\tb"', "name must be a file name"),
    ('name = " a"', "name must be a file name"),
])
def test_a_sweep_file_error_names_the_file_and_key(tmp_path, top, what, capsys):
    """``seed = 2**70`` ended in an ``OverflowError`` naming nothing, ``simulator = ["bandit"]``
    in a ``TypeError`` traceback, and a ``name`` with a newline wrote ``a⏎b.nc``."""
    text = BANDIT.format(top=top)
    if top.startswith("simulator"):
        text = text.replace('simulator = "bandit"\n', "", 1)
    cfg = tmp_path / "s.toml"
    cfg.write_text(text)
    with pytest.raises(ValueError) as info:
        sweep.load_config(cfg)
    assert str(cfg) in str(info.value) and what in str(info.value), str(info.value)
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "out")]) == 2
    assert what in _one_error_line(capsys)
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_a_file_name_with_a_control_character_is_refused():
    from simplexlab._results import check_file_name

    for bad in ("a\nb", "a\rb", "a\x1bb", "a\u2028b", "x ", "\ta"):
        with pytest.raises(ValueError, match="must be a file name"):
            check_file_name(bad, "name")
    assert check_file_name("fig-4 small_é", "name") == "fig-4 small_é"


def test_plan_tau_errors_name_tau(capsys):
    """``plan --tau`` errors called the option "rarest"."""
    for tau in ("0.5", "-0.1", "nan"):
        assert main(["plan", "--mu", "0.5", "--tau", tau]) == 2
        line = _one_error_line(capsys)
        assert "tau" in line and "rarest (" not in line, line


def test_plan_out_whose_plan_json_is_a_folder_is_refused_before_computing(tmp_path, capsys,
                                                                         monkeypatch):
    """``plan --out DIR`` with ``DIR/plan.json`` a folder computed the whole plan, then ended
    in a traceback. Now one line before anything is computed."""
    from simplexlab import verify

    (tmp_path / "plan.json").mkdir()
    calls = []
    monkeypatch.setattr(verify, "plan", lambda *a, **k: calls.append(1))
    assert main(["plan", "--mu", "0.5", "--out", str(tmp_path)]) == 2
    line = _one_error_line(capsys)
    assert "plan.json" in line and "folder" in line, line
    assert not calls


def test_expected_update_refuses_a_verifier_that_is_not_one():
    """``expected_update(verifier=(0.1, 0.1))`` ended in an ``AttributeError``."""
    from simplexlab import shaping, theory

    rule = shaping.group_rule("grpo")
    with pytest.raises(ValueError, match="verifier must be a Verifier"):
        theory.expected_update(rule, np.full(3, 1 / 3), 1, 4, verifier=(0.1, 0.1))


def test_a_param_domain_that_raises_is_a_clear_error():
    """A ``Param`` whose domain raises (a predicate that cannot judge the value) ended in its
    own traceback; now a ``ValueError`` naming the parameter, the domain and what it raised."""
    from simplexlab._checks import Param

    p = Param("tau", 1.0, lambda a: a.no_such_attribute, "finite and > 0")
    with pytest.raises(ValueError, match=r"tau: its domain \(finite and > 0\) could not be "
                                         r"checked .* AttributeError"):
        p.check(2.0, "rule 'x': ")
    with pytest.raises(ValueError, match="tau must be a number"):
        Param("tau", 1.0, lambda a: ~(a > 0), "> 0").check("x")
    Param("tau", 1.0, lambda a: ~(a > 0), "> 0").check(math.pi)  # a good value passes


# ---- simplexlab train: every input error one line, exit 2

TRAIN = '''
name = "t"
out = "{out}"
{model}
[warm_start]
steps = 0
[train]
steps = 1
group_size = 2
prompts_per_step = 1
pass_k = 1
{train}
'''


@pytest.mark.parametrize("model, train, what", [
    ('[model]\nseed = "x"', "", "[model] seed must be an integer"),
    ("[model]\nseed = 1e300", "", "[model] seed must be an integer"),
    ('[model]\npath = "no-such-model-folder"', "", "is not a folder written by save_pretrained"),
    ("[model]\npath = 3", "", "[model] path must be"),
    ("model = 3", "", "[model] must be a table"),
    ("", "betas = 3", "betas must be two numbers"),
])
def test_train_input_errors_are_one_line(tmp_path, model, train, what, capsys):
    """Four ``simplexlab train`` input errors ended in tracebacks (the run sat outside the CLI's
    error handling)."""
    pytest.importorskip("torch")
    cfg = tmp_path / "t.toml"
    cfg.write_text(TRAIN.format(out=tmp_path / "runs", model=model, train=train))
    assert main(["train", str(cfg)]) == 2
    assert what in _one_error_line(capsys)


def test_train_seed_out_of_range_is_refused_by_argparse(tmp_path, capsys):
    cfg = tmp_path / "t.toml"
    cfg.write_text(TRAIN.format(out=tmp_path / "runs", model="", train=""))
    with pytest.raises(SystemExit) as e:
        main(["train", str(cfg), "--seed", str(2**70)])
    assert e.value.code == 2 and "--seed" in capsys.readouterr().err


def test_train_refusing_a_planted_checkpoint_is_one_line(tmp_path, capsys):
    """A checkpoint that is not one the lab writes (a pickled object) is refused (nothing in it
    runs): that refusal was a traceback."""
    torch = pytest.importorskip("torch")
    runs = tmp_path / "runs"
    runs.mkdir()
    torch.save({"x": Path("/")}, runs / "t.ckpt")  # a pickled object, not weights
    cfg = tmp_path / "t.toml"
    cfg.write_text(TRAIN.format(out=runs, model="", train=""))
    assert main(["train", str(cfg), "--resume"]) == 2
    line = _one_error_line(capsys)
    assert "cannot resume 't'" in line and "nothing in it was run" in line, line
