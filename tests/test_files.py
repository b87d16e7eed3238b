"""Files: an output name is a file name, never a path; output folders are created and
checked writable before any compute; a corrupt or foreign chunk is reported, moved aside and
recomputed; a damaged schedule file is refused; every file is written with the user's normal
permissions (the umask), all alike; bad sizes and a folder given as a config get clear errors."""

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from simplexlab import lab, sweep
from simplexlab.lab._cli import main
from simplexlab.shaping import GainSchedule
from simplexlab.verify import FORMAT, ScheduleReport, load_schedule, save_schedule

ROOT = Path(__file__).resolve().parent.parent
SMALL = {"num_actions": 40, "num_correct": 5, "group_size": 4, "num_steps": 4, "stride": 2,
         "optimizer": "adam"}
TOML = """simulator = "categorical"
{name}seeds = 1

[fixed]
num_actions = 40
num_correct = 5
group_size = 4
num_steps = 4
stride = 2

[grid]
focal_gamma = [0.0, 1.0]
"""
BAD_NAMES = ["../../evil", "../evil", "a/b", "a\\b", "", " ", ".", "..", ".hidden", "x\0y"]


def _tiny(out, **kw):
    kw = {"fixed": SMALL, "seeds": 2, "out": out, "name": "s", "progress": False, **kw}
    return sweep.run("categorical", {"focal_gamma": [0.0, 1.0]}, **kw)


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def _no_compute(monkeypatch):
    import simplexlab.sweep._engine as engine

    def fail(*a, **k):
        raise AssertionError("computed before the bad input was refused")

    monkeypatch.setattr(engine, "_compute", fail)


@pytest.mark.parametrize("bad", [*BAD_NAMES, "ABS"])
def test_a_name_is_a_file_name_never_a_path(tmp_path, monkeypatch, capsys, bad):
    """``name = "../../evil"`` wrote outside the output folder and ``name = ""`` a hidden
    ``.nc``: every such name (Python, TOML, CLI) is refused naming ``name`` and the value, before
    any compute, and no file appears anywhere but the config written by the test."""
    _no_compute(monkeypatch)
    if bad == "ABS":
        bad = str(tmp_path / "abs" / "evil")
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    out = work / "out"
    with pytest.raises(ValueError, match=r"name must be a file name.*got " + "'"):
        _tiny(out, name=bad)
    cfg = work / "c.toml"
    cfg.write_text(TOML.format(name=f"name = {json.dumps(bad)}\n"))
    with pytest.raises(ValueError, match="name must be a file name"):
        sweep.load_config(cfg)
    assert main(["sweep", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "name must be a file name" in err and repr(bad) in err and "Traceback" not in err
    assert _tree(tmp_path) == ["a", "a/b", "a/b/c.toml"]


def test_experiment_names_and_figure_stems_are_file_names(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for bad in ("../evil", "", ".x", "a/b"):
        with pytest.raises(ValueError, match="experiment name"):
            lab.experiment(bad, reproduces="nothing", cost={"quick": "1 s", "full": "1 s"})
    ctx = lab.Context(name="t", quick=True, out=tmp_path / "out")
    for bad in ("../evil", str(tmp_path / "evil"), "", ".x"):
        with pytest.raises(ValueError, match="stem"):
            ctx.savefig(plt.figure(), bad)
    assert _tree(tmp_path) == []


def test_output_folder_is_checked_before_any_compute(tmp_path, monkeypatch, capsys):
    """An unwritable ``--out`` was found after the first chunk (a long traceback) and after a
    whole ``schedule verify``: now a one-line error, exit status 2, before any compute."""
    _no_compute(monkeypatch)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    for out in (blocker, blocker / "sub"):
        with pytest.raises(ValueError, match="out: the output folder"):
            _tiny(out)
    if os.geteuid() != 0:  # root writes in a read-only folder anyway
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        with pytest.raises(ValueError, match="cannot write in it"):
            _tiny(ro)
    cfg = tmp_path / "c.toml"
    cfg.write_text(TOML.format(name=""))
    import simplexlab.verify as verify

    monkeypatch.setattr(verify, "verify_schedule", lambda *a, **k: pytest.fail("verified"))
    sched = str(ROOT / "experiments" / "schedules" / "g2rpo-b.toml")
    ok = str(tmp_path / "ok.json")
    for argv in (["sweep", str(cfg), "--out", str(blocker / "sub")],
                 ["reproduce", "phase-portraits", "--out", str(blocker)],
                 ["schedule", "verify", sched, "--out", str(blocker / "s.json")],
                 ["schedule", "verify", sched, "--out", str(tmp_path)],
                 ["schedule", "verify", sched, "--out", ok, "--report", str(blocker / "r")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and "\n" not in err and "out" in err, err
    assert _tree(tmp_path) == ["c.toml", "file"] + (["ro"] if os.geteuid() != 0 else [])


@pytest.mark.parametrize("bad", ["E", "1e", "1..5GB", "e9", ".", "1.5.5", "2 G B"])
def test_memory_budget_that_is_no_size_is_named(tmp_path, capsys, bad):
    with pytest.raises(ValueError, match=r"memory_budget must be .*got " + repr(bad)):
        sweep.parse_bytes(bad)
    cfg = tmp_path / "c.toml"
    cfg.write_text(TOML.format(name=""))
    assert main(["sweep", str(cfg), "--memory-budget", bad]) == 2
    err = capsys.readouterr().err
    assert "memory_budget" in err and repr(bad) in err and "Traceback" not in err


def test_memory_budget_sizes_still_parse():
    sizes = {"2GB": 2e9, "1.5 GiB": 1.5 * 2 ** 30, ".5GB": 5e8, "2e9": 2e9, "512MiB": 2 ** 29,
             "1E+3kb": 1e6, 4096: 4096, 2e9: 2e9}
    for v, n in sizes.items():
        assert sweep.parse_bytes(v) == int(n), v


def test_sweep_of_a_folder_says_it_is_a_folder(tmp_path, capsys):
    assert main(["sweep", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a folder, not a TOML file" in err and "does not exist" not in err
    assert main(["sweep", str(tmp_path / "missing.toml")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A finished tiny sweep and its one chunk file."""
    out = tmp_path_factory.mktemp("stored")
    ds = _tiny(out, seeds=1, chunk_size=2)
    chunks = sorted((out / "s.chunks").glob("*.npz"))
    return out, ds, chunks


@pytest.mark.parametrize("damage", ["truncated", "foreign keys", "foreign shape"])
def test_corrupt_or_foreign_chunk_is_set_aside_and_recomputed(stored, capsys, damage):
    """A truncated chunk made ``--resume`` die with ``BadZipFile``: now one line names the
    file and the problem, the file becomes ``<digest>.npz.corrupt`` and the chunk is computed
    again, with the same numbers."""
    out, ds, chunks = stored
    path = chunks[0]
    good = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(good[: len(good) // 2])
    else:
        with np.load(path) as f:
            arrays = {k: f[k] for k in f.files}
        if damage == "foreign keys":
            arrays = {"x": np.zeros(3)}
        else:
            arrays = {k: v[..., :1] if v.ndim > 1 else v[:1] for k, v in arrays.items()}
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
    capsys.readouterr()
    again = _tiny(out, seeds=1, chunk_size=2)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "corrupt" in ln]
    assert len(lines) == 1 and path.name in lines[0], lines
    assert again.attrs["chunks_computed"] == 1
    assert path.with_name(path.name + ".corrupt").exists() and path.read_bytes() == good
    for v in ds.data_vars:
        np.testing.assert_array_equal(ds[v].values, again[v].values, err_msg=v)
    path.with_name(path.name + ".corrupt").unlink()


def test_schedule_file_without_a_field_is_refused(tmp_path):
    """A schedule file with ``gain`` deleted loaded with the default gain."""
    full = GainSchedule(kind="B", gain=1.5).to_dict()
    for field in ("gain", "kind"):
        sched = {k: v for k, v in full.items() if k != field}
        p = tmp_path / f"no-{field}.json"
        p.write_text(json.dumps({"format": FORMAT, "schedule": sched, "verification": {
            "passed": True, "reasons": [], "inputs": {"schedule": full}}}))
        with pytest.raises(ValueError, match=f"lacks the required field.*'{field}'"):
            load_schedule(p)
        with pytest.raises(ValueError, match="lacks the required field"):
            load_schedule(p, force=True)


def _report(schedule):
    zero = {"t_flip": 0.0, "step_flip": 0, "lambda_tilde_start": 0.0, "flip_threshold_start": 0.0,
            "p_gap_direct": 0.0, "pdot_gap": 0.0, "p_gap_vs_grpo": 0.0, "max_abs_bad_bonus": 0.0,
            "growth_exponent": 0.0, "L_y_start": 0.0, "L_y_end_ode": 0.0, "L_y_end_bandit": 0.0,
            "error_p": 0.0, "error_L_y": 0.0}
    checks = {c: zero for c in ("flip", "neutral", "bounded", "concentration", "bandit")}
    return ScheduleReport(passed=True, reasons=[], checks=checks,
                          inputs={"schedule": schedule.to_dict()})


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_every_file_is_written_with_the_umask(tmp_path, umask):
    """Result JSON, PNG, chunk and schedule files were 0600 (mkstemp) while ``.nc`` was 0644:
    every file now gets ``0o666 & ~umask``, as ``open`` would give."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    old = os.umask(umask)
    try:
        _tiny(tmp_path / "sweep", seeds=1)
        lab.atomic_write_json(tmp_path / "exp" / "result.json", {"a": 1})
        lab.Context(name="t", quick=True, out=tmp_path / "exp").savefig(plt.figure(), "fig")
        schedule = GainSchedule(kind="B", gain=1.5)
        save_schedule(tmp_path / "schedule.json", schedule, _report(schedule))
    finally:
        os.umask(old)
    assert load_schedule(tmp_path / "schedule.json").to_dict() == schedule.to_dict()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"s.nc", "result.json", "fig.png", "schedule.json"} <= names
    assert any(n.endswith(".npz") for n in names)
    modes = {p.relative_to(tmp_path).as_posix(): oct(stat.S_IMODE(p.stat().st_mode))
             for p in files}
    assert set(modes.values()) == {oct(0o666 & ~umask)}, modes


def test_train_config_name_and_out_are_checked_before_training(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cfg = tmp_path / "t.toml"
    for text, what in ((f'name = "../evil"\nout = "{tmp_path / "runs"}"\n', "name"),
                       (f'out = "{blocker}"\n', "out")):
        cfg.write_text(text + "[train]\nsteps = 1\n")
        assert main(["train", str(cfg)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and what in err and "\n" not in err, err
    assert _tree(tmp_path) == ["file", "t.toml"]
