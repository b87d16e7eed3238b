"""The sweep engine: sharding over devices and processes, chunking under a memory
budget, resumable chunk store keyed on everything that determines a chunk, bad input refused
before any compute, and the Dataset it returns.

The multi-device and multi-process cases run in subprocesses (``sweep_worker.py``), so the
``XLA_FLAGS`` device count and ``jax.distributed`` do not leak into the rest of the suite.
"""

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest
import xarray as xr

from simplexlab import sim as C
from simplexlab import sweep

WORKER = Path(__file__).with_name("sweep_worker.py")
# the subprocess tests are about host (CPU) devices: ``--xla_force_host_platform_device_count``
# does not change a GPU's device count, so they force the CPU platform on every host
ENV = {**os.environ, "SIMPLEXLAB_PROGRESS": "0", "PYTHONUNBUFFERED": "1", "JAX_PLATFORMS": "cpu"}
VARS = ("q_pos", "m_ret", "entropy", "anchor", "num_above", "batch_correct")


def _worker(out, name, *args, timeout=300):
    proc = subprocess.run([sys.executable, str(WORKER), str(out), name, *map(str, args)],
                          capture_output=True, text=True, env=ENV, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _assert_same(a: xr.Dataset, b: xr.Dataset, rtol=0.0):
    """Every data variable of ``VARS`` and every coordinate equal (the variables within ``rtol``,
    NaN where the other is NaN; ``0``: the same bits)."""
    for v in VARS:
        if rtol:
            np.testing.assert_allclose(a[v].values, b[v].values, rtol=rtol, atol=0, err_msg=v)
        else:
            np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)
    for c in a.coords:
        np.testing.assert_array_equal(a[c].values, b[c].values, err_msg=c)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The worker's sweep on one device in one process."""
    out = tmp_path_factory.mktemp("ref")
    text = _worker(out, "ref", "--devices", 1)
    assert "devices=1 processes=1" in text
    return xr.load_dataset(out / "ref.nc")


LAYOUT_WORKER = Path(__file__).with_name("sweep_layout_worker.py")


@pytest.mark.slow
def test_every_target_is_bit_identical_whatever_the_devices_and_chunks(tmp_path):
    """Every simulator of ``sim.SIMULATORS`` and the mean-field target (blocks of 4 runs with a
    partial last block, and one block of the whole sweep), each a tiny sweep with 1 and with 4
    host devices: default chunks on both, one run per device on one, and for the blocked
    mean-field sweep 3 runs per device and a tight memory budget on both: every Dataset's data
    variables are bit-identical (NaN positions included). The two device counts run side by
    side in two subprocesses. Fails on be4dd33 (mean-field blocks followed the shards: 8e-8 in
    ``p``; the one-device program rounded differently: 1e-14; the classifier's batched
    matrix-vector products: 6e-17)."""
    outs = {n: tmp_path / f"dev{n}" for n in (1, 4)}
    env = ENV
    procs = {}
    for n, out in outs.items():
        out.mkdir()
        procs[n] = subprocess.Popen([sys.executable, str(LAYOUT_WORKER), str(out), "--devices",
                                     str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, env=env)
    for proc in procs.values():
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
    refs = sorted(outs[1].glob("*.default.npz"))
    assert len(refs) == 8  # 6 simulators, 2 mean-field sweeps
    for ref_path in refs:
        case = ref_path.name.split(".")[0]
        runs = sorted(p for out in outs.values() for p in out.glob(f"{case}.*.npz"))
        assert len(runs) >= 3
        with np.load(ref_path) as ref:
            for path in runs:
                with np.load(path) as other:
                    assert set(other.files) == set(ref.files)
                    for k in ref.files:
                        if k == "chunks":
                            continue
                        a, b = ref[k], other[k]
                        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), \
                            f"{case}: {k} differs in {path.parent.name}/{path.name}"
        chunks = {int(np.load(p)["chunks"]) for p in runs}
        if case != "meanfield_one_block":  # one block: one chunk, whatever the layout
            assert len(chunks) > 1, f"{case}: every layout cut the sweep the same way"


def test_non_divisible_shard_layout_is_refused(tmp_path):
    proc = subprocess.run([sys.executable, str(WORKER), str(tmp_path), "bad", "--devices", "8",
                           "--chunk-size", "12"], capture_output=True, text=True, env=ENV,
                          timeout=300)
    assert proc.returncode != 0
    assert "chunk_size must be a positive multiple of the 8 devices" in proc.stderr
    assert not (tmp_path / "bad.chunks").exists() or not list((tmp_path / "bad.chunks").iterdir())


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


WORKER_TOML = """simulator = "categorical"
name = "dist"
seeds = 3
seed = 7
[fixed]
num_actions = 300
num_correct = 30
optimizer = "adam"
surrogate = "log_likelihood"
num_steps = 20
stride = 5
[grid]
group_size = [3, 8]
eta = [0.05, 0.2]
focal_gamma = [0.0, 1.0]
"""


def _documented_cluster_commands():
    """The two command lines of the sweeps page's "Several processes or hosts" block."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "concepts" / "sweeps.md").read_text()
    section = page.split("## Several processes or hosts", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [x.strip() for x in block.splitlines() if x.strip() and not x.startswith("#")]
    assert len(lines) == 2 and lines[1].startswith("srun "), lines
    return lines


_FAKE_SRUN = """import os, subprocess, sys
# srun for a test: start SLURM_NTASKS copies of the command on this host, with the variables
# SLURM sets for each task (jax.distributed reads them), and fail if any copy fails
n = int(os.environ.get("SLURM_NTASKS", "2"))
procs = [subprocess.Popen(sys.argv[1:], env={**os.environ, "SLURM_PROCID": str(i),
                                            "SLURM_LOCALID": str(i), "SLURM_NTASKS": str(n)})
         for i in range(n)]
sys.exit(max(p.wait() for p in procs))
"""


@pytest.mark.slow
def test_the_cluster_commands_give_the_one_process_dataset(reference, tmp_path):
    """The multi-host recipe of ``docs/concepts/sweeps.md``, run as written on localhost (host0
    -> 127.0.0.1, N -> 2, i -> 0, 1): two processes of ``simplexlab sweep CONFIG.toml
    --coordinator ... --num-processes 2 --process-id I`` (``jax.distributed.initialize``, CPU
    collectives), one device each; then
    its SLURM form under a stand-in ``srun`` that starts two tasks with SLURM's variables. The
    mesh spans both processes, each computes its half of every chunk, process 0 gathers the
    results and writes the Dataset: the worker's one-process sweep, bit for bit, both times."""
    manual, slurm = _documented_cluster_commands()
    # XLA's default optimization level, as the reference (sweep_worker.py), not the suite's 0
    env = {**ENV, "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
           "JAX_PLATFORMS": "cpu", "PATH": os.pathsep.join(
               (str(tmp_path / "bin"), str(Path(sys.executable).parent), os.environ["PATH"]))}
    running = {}
    for form in ("manual", "slurm"):  # both at once: four processes, two sweeps
        out = tmp_path / form
        out.mkdir()
        cfg = out / "CONFIG.toml"
        cfg.write_text(f"out = {str(out)!r}\n" + WORKER_TOML)
        if form == "manual":
            command = (manual.replace("CONFIG.toml", str(cfg))
                       .replace("host0:1234", f"127.0.0.1:{_free_port()}").replace(" N ", " 2 "))
            assert command.endswith(" i")
            commands, form_env = [command[:-1] + str(i) for i in range(2)], env
        else:
            (tmp_path / "bin").mkdir()
            srun = tmp_path / "bin" / "srun"
            srun.write_text(f"#!{sys.executable}\n{_FAKE_SRUN}")
            srun.chmod(0o755)
            # jax takes the coordinator's port from the job id: 61440 + id % 4096
            job = _free_port_in(61440, 65535) - 61440
            commands = [slurm.replace("CONFIG.toml", str(cfg))]
            form_env = {**env, "SLURM_JOB_ID": str(job), "SLURM_STEP_NODELIST": "127.0.0.1",
                        "SLURM_NTASKS": "2", "SLURM_STEP_NUM_NODES": "1"}
        running[form] = [subprocess.Popen(shlex.split(c), cwd=out, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True, env=form_env)
                         for c in commands]
    for form, procs in running.items():
        outs = [p.communicate(timeout=300) for p in procs]
        for p, (_, e) in zip(procs, outs, strict=True):
            assert p.returncode == 0, (form, e[-3000:])
        text = "".join(o for o, _ in outs)
        assert text.count("chunks computed") == 1, (form, text)  # process 0 alone reports
        ds = xr.load_dataset(tmp_path / form / "dist.nc")
        assert ds.attrs["processes"] == 2 and ds.attrs["devices"] == 2, form
        _assert_same(ds, reference)


def _free_port_in(lo, hi):
    for port in range(hi, lo - 1, -1):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in [{lo}, {hi}]")


@pytest.mark.slow
def test_killed_sweep_resumes_only_unfinished_chunks(tmp_path):
    """SIGKILL a sweep after a few chunks: no result file, no temporary file survives the
    resume, the resumed run loads exactly the finished chunks, computes the rest, and the
    Dataset equals an uninterrupted run's."""
    args = [sys.executable, str(WORKER), str(tmp_path), "killed", "--slow", "--chunk-size", "1"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    chunks = tmp_path / "killed.chunks"
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if chunks.is_dir() and len(list(chunks.glob("*.npz"))) >= 3:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the sweep finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = len(list(chunks.glob("*.npz")))
    assert 3 <= finished < 24
    assert not (tmp_path / "killed.nc").exists()
    for f in chunks.glob("*.npz"):  # every stored chunk is complete
        with np.load(f) as z:
            assert set(z.files) >= set(VARS)
    text = _worker(tmp_path, "killed", "--slow", "--chunk-size", 1)
    assert f"computed={24 - finished} loaded={finished}" in text
    assert not list(tmp_path.rglob(".*.tmp"))
    fresh = tmp_path / "fresh"
    _worker(fresh, "fresh", "--slow", "--chunk-size", 1)
    _assert_same(xr.load_dataset(tmp_path / "killed.nc"), xr.load_dataset(fresh / "fresh.nc"))


SMALL = {"num_actions": 40, "num_correct": 5, "group_size": 4, "num_steps": 4, "stride": 2,
         "optimizer": "adam"}


def _small(tmp, **kw):
    args = dict(fixed=SMALL, seeds=2, seed=0, out=tmp, name="s", progress=False)
    grid = kw.pop("grid", {"focal_gamma": [0.0, 1.0]})
    args.update(kw)
    return sweep.run("categorical", grid, **args)


def test_chunk_store_keys_on_everything_that_determines_a_chunk(tmp_path, monkeypatch):
    """The bug this fixes: a chunk cache that ignored --seed returned seed-0 numbers for
    seed 1. Same settings: every chunk loaded. A change of seed, of a fixed parameter, of a
    grid value, of the number of seeds, or of the simulator's code version: recomputed."""
    base = _small(tmp_path)
    assert base.attrs["chunks_computed"] == base.attrs["chunks"] >= 1
    again = _small(tmp_path)
    assert again.attrs["chunks_loaded"] == again.attrs["chunks"]
    assert again.attrs["chunks_computed"] == 0
    _assert_same(again, base)
    changes = [dict(seed=1), dict(fixed={**SMALL, "eta": 0.5}),
               dict(fixed={**SMALL, "group_size": 6}), dict(grid={"focal_gamma": [0.0, 2.0]}),
               dict(seeds=3), dict(batching="vmap")]
    for change in changes:
        ds = _small(tmp_path, **change)
        assert ds.attrs["chunks_loaded"] == 0, change
    seed1 = _small(tmp_path, seed=1)
    assert not np.array_equal(seed1.q_pos.values, base.q_pos.values)
    monkeypatch.setattr(C.Categorical, "version", "test-bumped")
    assert _small(tmp_path).attrs["chunks_loaded"] == 0


def test_reproduce_with_another_seed_recomputes(tmp_path, monkeypatch):
    """``simplexlab reproduce categorical-regimes --seed 1`` into a folder holding seed-0
    chunks computes seed 1 (the issue's reproduction, on a tiny setting)."""
    from simplexlab.lab import load_experiment_module, run_experiment

    mod = load_experiment_module("categorical_regimes")
    tiny = {"policy": C.CategoricalPolicy(num_actions=60, num_correct=6), "ns": (2, 16),
            "steps": 10, "stride": 5, "seeds": 2, "lr_scale": 10.0}
    monkeypatch.setattr(mod, "settings", lambda quick: tiny)
    r0 = run_experiment("categorical-regimes", quick=True, out=tmp_path, seed=0)
    r1 = run_experiment("categorical-regimes", quick=True, out=tmp_path, seed=1)
    fresh = run_experiment("categorical-regimes", quick=True, out=tmp_path / "fresh", seed=1)
    assert r1["results"]["final_q_pos"] == fresh["results"]["final_q_pos"]
    assert r1["results"]["final_q_pos"] != r0["results"]["final_q_pos"]


def test_memory_budget_chunks_instead_of_crashing(tmp_path):
    sim = C.Categorical.make(**{k: v for k, v in SMALL.items()
                                if k not in ("num_steps", "stride")})
    per_run = sweep.adapter(C.Categorical).run_bytes(sim)
    whole = _small(None, grid={"focal_gamma": [0.0, 0.5, 1.0, 2.0]}, seeds=3)
    small = _small(None, grid={"focal_gamma": [0.0, 0.5, 1.0, 2.0]}, seeds=3,
                   memory_budget=per_run + 3 * 2000, batching="vmap")
    assert whole.attrs["chunks"] == 1 and small.attrs["chunks"] > 1
    # the same numbers; that they are the same *bits* whatever the chunks is the layout test's
    # (test_every_target_is_bit_identical_whatever_the_devices_and_chunks, XLA's default build:
    # this process compiles with the suite's faster settings, whose loops may round a batch of 12
    # and one of 3 differently in the last bit, tests/conftest.py)
    _assert_same(small, _small(None, grid={"focal_gamma": [0.0, 0.5, 1.0, 2.0]}, seeds=3,
                               batching="vmap"), rtol=1e-14)
    with pytest.raises(ValueError, match="memory_budget"):
        _small(None, memory_budget=100, batching="vmap")


@pytest.mark.parametrize("kwargs, match", [
    (dict(grid={"focal_gama": [0.0]}), "unknown parameter"),
    (dict(grid={"focal_gamma": []}), "length 0"),
    (dict(grid={"focal_gamma": [0.0, 0.0]}), "repeated"),
    (dict(grid={"num_steps": [2, 4]}, fixed={"num_actions": 40, "num_correct": 5}),
     "cannot be swept"),
    (dict(fixed={**SMALL, "optimizer": "adamm"}), "unknown optimizer"),
    (dict(fixed={**SMALL, "group_size": 0}), "group_size"),
    (dict(grid={"eta": [0.1, -0.1]}), "eta"),
    (dict(grid={"eta": ["fast"]}), "eta"),
    (dict(chunk_size=0), "multiple"),
    (dict(seeds=0), "seeds"),
    (dict(memory_budget="lots"), "memory_budget"),
])
def test_bad_input_is_refused_before_any_compute(kwargs, match, monkeypatch):
    def boom(*a, **k):
        raise AssertionError("compute started")

    monkeypatch.setattr(jax, "shard_map", boom)
    with pytest.raises(ValueError, match=match):
        _small(None, **kwargs)


def test_unknown_simulator():
    with pytest.raises(ValueError, match="unknown simulator 'categoricl'"):
        sweep.run("categoricl", {})


@pytest.mark.slow
def test_meanfield_target_matches_solve_ensemble():
    """The ODE target's trajectories are ``solve_ensemble``'s for the same initial states
    (Dirichlet compositions drawn from each seed's key) and gains."""
    import jax.numpy as jnp

    import simplexlab as sl

    ds = sweep.run("meanfield", {"gain": [0.5, 2.0]}, fixed={"t1": 5.0, "n_save": 6},
                   seeds=3, seed=4, progress=False)
    assert ds.p.dims == ("gain", "seed", "time") and ds.y.shape == (2, 3, 6, 3)
    keys = jax.random.split(jax.random.key(4), 3)
    ky, kz = jax.vmap(jax.random.split, out_axes=1)(keys)
    def dirichlet1(k, n):  # Dirichlet(1_n) as normalised exponentials (the target's law)
        e = jax.random.exponential(k, (n,))
        return e / e.sum()

    y0 = jax.vmap(lambda k: dirichlet1(k, 3))(ky)
    z0 = jax.vmap(lambda k: dirichlet1(k, 2))(kz)
    for i, g in enumerate((0.5, 2.0)):
        ref = sl.solve_ensemble(sl.Neutralized(sl.ScheduleB(g)),
                                sl.State(jnp.full(3, 0.5), y0, z0), t1=5.0, n_save=6,
                                rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(ds.p.values[i], np.asarray(ref.p), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(ds.L_y.values[i], np.asarray(ref.L_y), rtol=1e-6,
                                   atol=1e-9)


def test_meanfield_bad_values():
    with pytest.raises(ValueError, match="p0"):
        sweep.run("meanfield", {"p0": [0.5, 1.5]}, progress=False)
    with pytest.raises(ValueError, match="unknown schedule"):
        sweep.run("meanfield", fixed={"schedule": "C"}, progress=False)


def test_toml_config_and_errors(tmp_path):
    cfg = tmp_path / "s.toml"
    cfg.write_text('simulator = "categorical"\nseeds = 2\nout = "res"\n[fixed]\n'
                   'num_actions = 40\nnum_correct = 5\nnum_steps = 4\nstride = 2\n'
                   '[grid]\ngroup_size = [2, 4]\n')
    ds = sweep.run_config(cfg, progress=False)
    assert (tmp_path / "res" / "s.nc").exists() and ds.q_pos.dims[:2] == ("group_size", "seed")
    bad = tmp_path / "bad.toml"
    bad.write_text('simulator = "categorical"\nseed = 1\n[grid]\ngroup_sise = [2]\n')
    with pytest.raises(ValueError, match="group_sise"):
        sweep.load_config(bad)
    bad.write_text('simulator = "categorical"\nseedz = 1\n')
    with pytest.raises(ValueError, match="seedz"):
        sweep.load_config(bad)


def test_sweep_adapters_read_what_each_simulator_declares_and_bucket_generically():
    """A simulator class declares how a sweep runs it (no central list of adapters): the
    adapter reads its class attributes and methods, a subclass inherits them and may override
    one. Bucketing by a parameter into power-of-two programs is one adapter field, never
    overriding a bound the sweep sets, and a run's bucket follows its own value only."""
    from simplexlab import sim

    assert sweep.adapter(sim.Bandit).bucket == ("group_size", "max_group_size")
    assert sweep.adapter(sim.Bandit).cpu_batching == "vmap"
    assert sweep.adapter(sim.Categorical).cpu_batching == "map"
    assert sweep.adapter(sim.Product).pad == ("group_size", "max_group_size")
    bandit = sim.Bandit(K=2, M=3, max_group_size=8, num_prompts=3)
    assert sweep.adapter(sim.Bandit).observe_dims(bandit)["z"] == ("prompt", "bad_mode")
    assert sweep.adapter(sim.Bandit).run_bytes(bandit) == bandit.working_bytes() > 4096

    class Sub(sim.Product):  # a subclass: its base's declarations, one of them overridden
        cpu_batching = "map"

    assert sweep.adapter(Sub).pad == sweep.adapter(sim.Product).pad
    assert sweep.adapter(Sub).cpu_batching == "map" != sweep.adapter(sim.Product).cpu_batching
    ad = sweep.SweepAdapter(bucket=("group_size", "max_group_size"))
    G = np.asarray([2.0, 3.0, 4.0, 5.0, 16.0, 3.0])
    groups = ad.groups({"max_group_size": 16}, {"group_size": G}, {"group_size"})
    assert [(s["max_group_size"], rows.tolist()) for s, rows in groups] == \
        [(2, [0]), (4, [1, 2, 5]), (8, [3]), (16, [4])]
    for n in range(1, len(G)):  # a run's bucket does not depend on which runs come with it
        sub = {int(r): s["max_group_size"] for s, rows in
               ad.groups({}, {"group_size": G[:n]}, set()) for r in rows}
        assert all(sub[r] == b for s, rows in groups for r in rows if r < n
                   for b in [s["max_group_size"]])
    assert ad.groups({"max_group_size": 16}, {"group_size": G}, {"max_group_size"}) == \
        [({"max_group_size": 16}, None)]
    with pytest.raises(ValueError, match="bucket"):
        sweep.SweepAdapter(bucket="group_size")
    with pytest.raises(ValueError, match="cpu_batching"):
        sweep.SweepAdapter(cpu_batching="pmap")
