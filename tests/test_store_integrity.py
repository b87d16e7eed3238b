"""Integrity of what a sweep keeps on disk: a chunk file copied over another or with edited
numbers is found out (its digest and the hash of its arrays), set aside and recomputed; the
temporary files of live writers survive the cleaning of a folder, those of dead ones do not; a
chunk folder that is a symbolic link is refused before any compute; the temporary of a result
file left by a killed run is removed by the next run."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import simplexlab._results as R
from simplexlab import sweep
from simplexlab.sweep import _store

SMALL = {"num_actions": 40, "num_correct": 5, "group_size": 4, "num_steps": 4, "stride": 2,
         "optimizer": "adam"}


def _tiny(out, **kw):
    """Two runs (``focal_gamma`` 0 and 1, one seed) in two chunks of one run each."""
    kw = {"fixed": SMALL, "seeds": 1, "chunk_size": 1, "out": out, "name": "s",
          "progress": False, **kw}
    return sweep.run("categorical", {"focal_gamma": [0.0, 1.0]}, **kw)


def _assert_same(a: xr.Dataset, b: xr.Dataset) -> None:
    assert set(a.data_vars) == set(b.data_vars)
    for v in a.data_vars:
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)


def _dead_pid() -> int:
    """The PID of a process that has finished (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def sleeper():
    """A live process of this machine (not this one): its PID."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """The tiny sweep computed from scratch."""
    ds = _tiny(tmp_path_factory.mktemp("fresh"))
    assert ds.attrs["chunks"] == 2 and ds.attrs["chunks_computed"] == 2
    return ds


def _stored(tmp_path) -> tuple[Path, list[Path]]:
    """A finished tiny sweep in ``tmp_path``: the folder and its two chunk files."""
    _tiny(tmp_path)
    chunks = sorted((tmp_path / "s.chunks").glob("*.npz"))
    assert len(chunks) == 2
    return tmp_path, chunks


def _corrupt_lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if "corrupt" in ln]


def test_chunk_copied_over_another_is_found_and_recomputed(tmp_path, fresh, capsys):
    """A valid chunk file copied over another chunk's file (right names, shapes and dtypes)
    was loaded as that chunk: the other grid point silently got its numbers. Now its stored
    digest names the other chunk: one line, set aside, recomputed, the fresh run's bits."""
    out, (a, b) = _stored(tmp_path)
    b.write_bytes(a.read_bytes())
    capsys.readouterr()
    again = _tiny(out)
    lines = _corrupt_lines(capsys)
    assert len(lines) == 1, lines
    assert b.name in lines[0] and "its digest names another chunk" in lines[0], lines
    assert f"moved to {b.name}.corrupt" in lines[0]
    assert b.with_name(b.name + ".corrupt").read_bytes() == a.read_bytes()
    assert again.attrs["chunks_computed"] == 1 and again.attrs["chunks_loaded"] == 1
    _assert_same(again, fresh)
    resumed = _tiny(out)  # the recomputed chunk is stored again, valid
    assert resumed.attrs["chunks_loaded"] == 2 and not _corrupt_lines(capsys)
    _assert_same(resumed, fresh)


def test_chunk_with_an_edited_number_is_found_and_recomputed(tmp_path, fresh, capsys):
    """One number of a chunk changed, every name, shape and dtype (and the digest and hash
    entries) kept: the arrays no longer match their hash."""
    out, (_, b) = _stored(tmp_path)
    with np.load(b) as f:
        arrays = {k: f[k] for k in f.files}
    q = arrays["q_pos"].copy()
    q.flat[0] += 0.25
    arrays["q_pos"] = q
    with open(b, "wb") as fh:
        np.savez(fh, **arrays)
    capsys.readouterr()
    again = _tiny(out)
    lines = _corrupt_lines(capsys)
    assert len(lines) == 1, lines
    assert b.name in lines[0] and "its arrays do not match their hash" in lines[0], lines
    assert b.with_name(b.name + ".corrupt").exists()
    assert again.attrs["chunks_computed"] == 1
    _assert_same(again, fresh)


def test_chunk_file_carries_its_digest_and_hash_without_pickling(tmp_path):
    """The two extra entries are plain unicode arrays (loadable with ``allow_pickle=False``)
    and never reach the results; the store format is part of every digest."""
    store = _store.ChunkStore(tmp_path)
    arrays = {"x": np.arange(3.0), "n": np.array([[1, 2]], np.int32)}
    store.save("d" * 64, arrays)
    with np.load(store.path("d" * 64), allow_pickle=False) as f:
        assert set(f.files) == {"x", "n", _store.DIGEST_ENTRY, _store.HASH_ENTRY}
        assert f[_store.DIGEST_ENTRY].dtype.kind == "U"
    part, problem = store.check("d" * 64, store.load("d" * 64))
    assert problem is None and set(part) == {"x", "n"}
    np.testing.assert_array_equal(part["x"], arrays["x"])
    assert store.check("e" * 64, store.load("d" * 64))[1].startswith("its digest names another")
    assert store.check("d" * 64, arrays)[1] == "it has no digest and hash entries"
    # the hash covers the dtype and shape, not only the bytes
    assert _store.arrays_sha256({"x": np.zeros(2)}) != _store.arrays_sha256(
        {"x": np.zeros((1, 2))})
    assert _store.arrays_sha256({"x": np.zeros(2, np.int64)}) != _store.arrays_sha256(
        {"x": np.zeros(2, np.float64)})
    with pytest.raises(ValueError, match=_store.HASH_ENTRY):
        store.save("f" * 64, {_store.HASH_ENTRY: np.zeros(1)})
    assert _store.STORE_FORMAT != "1"  # chunks of the format without the entries: not found


def test_remove_temporaries_keeps_live_writers_files(tmp_path, sleeper):
    """``remove_temporaries`` deleted every ``.*.tmp``: the in-flight temporaries of another
    live process writing to the same folder too. Now a temporary whose PID is a live process
    stays, one of a dead process goes (files and zarr folders alike); an old-format temporary
    (no PID) goes only once it is a day old; other files are never touched."""
    dead = _dead_pid()
    live = {f".a.npz.{os.getpid()}.k2j4h5g6.tmp", f".a.npz.{sleeper.pid}.k2j4h5g6.tmp",
            f".s.nc.{sleeper.pid}.tmp"}
    gone = {f".a.npz.{dead}.k2j4h5g6.tmp", f".s.nc.{dead}.tmp", f".s.nc.{dead}.0a1b2c3d.tmp"}
    other = {"a.npz", ".hidden.tmp", "notes.tmp", ".a.npz.corrupt"}
    fresh_old, stale_old = ".b.npz.x7k2m9q1.tmp", ".c.npz.x7k2m9q1.tmp"
    for n in live | gone | other | {fresh_old, stale_old}:
        (tmp_path / n).write_bytes(b"x")
    zarr = tmp_path / f".s.zarr.{dead}.0a1b2c3d.tmp"
    (zarr / "q").mkdir(parents=True)
    (zarr / "q" / "0").write_bytes(b"x")
    day_ago = time.time() - 2 * R.OLD_TEMPORARY_AGE
    os.utime(tmp_path / stale_old, (day_ago, day_ago))
    assert R.remove_temporaries(tmp_path) == len(gone) + 2
    left = {p.name for p in tmp_path.iterdir()}
    assert left == live | other | {fresh_old}


def test_remove_temporaries_of_one_name_only(tmp_path):
    dead = _dead_pid()
    names = [f".s.nc.{dead}.tmp", f".s.nc.{dead}.abc.tmp", f".t.nc.{dead}.tmp",
             f".s.zarr.{dead}.tmp", f".x.s.nc.{dead}.tmp"]
    for n in names:
        (tmp_path / n).write_bytes(b"x")
    assert R.remove_temporaries(tmp_path, "s.nc") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[2:])


def test_every_temporary_carries_its_writers_pid(tmp_path, monkeypatch):
    """The atomic writers (bytes, npz, the Dataset) name their temporaries
    ``.<name>.<pid>.<random>.tmp``, so that a cleaner can ask whether the writer lives."""
    seen = []
    replace = os.replace

    def spy(src, dst):
        seen.append(Path(src).name)
        return replace(src, dst)

    monkeypatch.setattr(R.os, "replace", spy)
    R.atomic_write_bytes(tmp_path / "a.bin", b"1")
    R.write_npz(tmp_path / "b.npz", {"x": np.zeros(2)})
    R.write_dataset(xr.Dataset({"x": ("i", np.zeros(2))}), tmp_path / "c.nc")
    assert len(seen) == 3
    for name, tmp in zip(("a.bin", "b.npz", "c.nc"), seen, strict=True):
        assert tmp.startswith(f".{name}.{os.getpid()}.") and tmp.endswith(".tmp"), tmp
        assert R._temporary_owner(tmp) == (name, os.getpid()), tmp
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_sweep_start_keeps_another_live_sweeps_chunk_temporary(tmp_path, sleeper, fresh):
    """Two sweeps writing to one folder: the second one's start deleted the first one's chunk
    in flight. Now it stays while its writer lives, and the next run after the writer died
    removes it."""
    chunks = tmp_path / "s.chunks"
    chunks.mkdir()
    tmp = chunks / f".{'0' * 64}.npz.{sleeper.pid}.k2j4h5g6.tmp"
    tmp.write_bytes(b"half a chunk")
    _assert_same(_tiny(tmp_path), fresh)
    assert tmp.exists()
    sleeper.kill()
    sleeper.wait()
    _tiny(tmp_path)
    assert not tmp.exists()


def _no_compute(monkeypatch):
    import simplexlab.sweep._engine as engine

    def fail(*a, **k):
        raise AssertionError("computed before the bad input was refused")

    monkeypatch.setattr(engine, "_compute", fail)


@pytest.mark.parametrize("target_exists", [True, False])
def test_symlinked_chunk_folder_is_refused_before_any_compute(tmp_path, monkeypatch,
                                                              target_exists):
    """``<out>/<name>.chunks`` as a symbolic link made the store write (and clean) chunks in
    the link's target, outside ``--out``: refused up front, naming the link and its target;
    nothing is written there."""
    _no_compute(monkeypatch)
    out, target = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    if target_exists:
        target.mkdir()
        (target / f".x.npz.{_dead_pid()}.k2j4h5g6.tmp").write_bytes(b"not ours")
    before = sorted(p.name for p in target.iterdir()) if target_exists else None
    (out / "s.chunks").symlink_to(target, target_is_directory=True)
    with pytest.raises(ValueError, match="symbolic link") as err:
        _tiny(out)
    assert str(out / "s.chunks") in str(err.value) and str(target) in str(err.value)
    if target_exists:
        assert sorted(p.name for p in target.iterdir()) == before
    else:
        assert not target.exists()
    assert sorted(p.name for p in out.iterdir()) == ["s.chunks"]


def test_killed_result_write_leaves_no_temporary_after_the_next_run(tmp_path, fresh):
    """A kill during the write of ``<name>.nc`` left ``.<name>.nc.<pid>.tmp`` forever: the next
    run of the sweep removes it (its writer is gone), and only it -- a live writer's and another
    name's stay."""
    dead = _dead_pid()
    leftovers = [tmp_path / f".s.nc.{dead}.tmp", tmp_path / f".s.nc.{dead}.0a1b2c3d.tmp"]
    kept = [tmp_path / f".s.nc.{os.getpid()}.0a1b2c3d.tmp", tmp_path / f".t.nc.{dead}.tmp"]
    for p in leftovers + kept:
        p.write_bytes(b"half a netCDF")
    _assert_same(_tiny(tmp_path), fresh)
    assert not any(p.exists() for p in leftovers)
    assert all(p.exists() for p in kept)
    _assert_same(xr.load_dataset(tmp_path / "s.nc"), fresh)


def test_a_full_disk_says_so(tmp_path, monkeypatch):
    """A write that fails for want of space names the file and says the disk is full: the
    atomic writer (ENOSPC) and the dataset writer (netCDF's bare "HDF error" on a full disk)."""
    import errno

    def no_space(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(R.os, "fsync", no_space)
        with pytest.raises(OSError, match="the disk is full: could not write .*x.json"):
            R.atomic_write_bytes(tmp_path / "x.json", b"{}")
    assert not list(tmp_path.glob(".*.tmp"))  # nothing half-written is left

    ds = xr.Dataset({"a": ("x", np.arange(3.0))})

    def hdf_error(*a, **k):
        raise RuntimeError("NetCDF: HDF error")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", hdf_error)
    monkeypatch.setattr(R.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(1, 1, 0))
    with pytest.raises(OSError, match="the disk is full: could not write .*r.nc"):
        R.write_dataset(ds, tmp_path / "r.nc")


def test_unwritable_chunk_folder_and_missing_zarr_are_refused_up_front(tmp_path, monkeypatch):
    import importlib.util

    from simplexlab.sweep import _engine

    folder = tmp_path / "t.chunks"
    folder.mkdir()
    real_access = os.access
    monkeypatch.setattr(_engine.os, "access",
                        lambda p, mode: False if Path(p) == folder else real_access(p, mode))
    with pytest.raises(ValueError, match="t.chunks.*not a folder this user can write"):
        _tiny(tmp_path, name="t")
    monkeypatch.setattr(_engine.os, "access", real_access)
    real_find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda n, *a: None if n == "zarr" else real_find(n, *a))
    with pytest.raises(ValueError, match="needs the zarr package"):
        _tiny(tmp_path, name="z", format="zarr")
