"""Code and trust (issue 57, item 5): nothing is imported because a data file named it, the
compilation cache folder is refused when another user can write to it, and a chunk of the
sweep store edited together with its checksum entry is found out (the checksum is a signature
keyed with a per-user secret kept outside the store)."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simplexlab import sweep
from simplexlab.sweep import _store

ROOT = Path(__file__).resolve().parents[1]

#: a module that leaves a trace when it is imported (a data file must not make that happen)
EVIL = '''
from pathlib import Path
Path(__file__).with_name("IMPORTED").write_text("ran")
'''

#: a sweep file naming a rule by import path (the bandit's defaults otherwise)
TOML = 'simulator = "bandit"\nout = "out"\n[fixed]\nmethod = "{method}"\nnum_steps = 2\n'


@pytest.fixture
def evil(tmp_path, monkeypatch):
    """``evilrule_audit.py`` beside a sweep file that names it, on the Python path (as the
    folder of ``python -m simplexlab`` or ``PYTHONPATH`` puts it)."""
    (tmp_path / "evilrule_audit.py").write_text(EVIL)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("SIMPLEXLAB_IMPORT", raising=False)
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(TOML.format(method="evilrule_audit:x"))
    yield cfg
    sys.modules.pop("evilrule_audit", None)


def test_a_sweep_file_cannot_make_the_lab_import_a_module(evil, monkeypatch):
    """``method = "mod:name"`` imported ``mod`` before anything was checked: the module beside
    the file ran. Now it is refused, naming the file, the key, the module and how to allow it,
    and nothing ran; allowed through ``SIMPLEXLAB_IMPORT`` it is imported (and then the rule it
    failed to register is reported)."""
    with pytest.raises(ValueError) as info:
        sweep.load_config(evil)
    msg = str(info.value)
    assert str(evil) in msg and "fixed.method" in msg and "'evilrule_audit'" in msg, msg
    assert "--import evilrule_audit" in msg and "SIMPLEXLAB_IMPORT" in msg, msg
    assert not (evil.parent / "IMPORTED").exists()
    assert "evilrule_audit" not in sys.modules
    monkeypatch.setenv("SIMPLEXLAB_IMPORT", "other, evilrule_audit")
    with pytest.raises(ValueError, match="registered no rule 'x'"):
        sweep.load_config(evil)
    assert (evil.parent / "IMPORTED").read_text() == "ran"


def test_the_zen_of_python_is_not_printed(tmp_path, capfd):
    """``method = "this:x"`` printed the Zen of Python (``import this``) before the rule was
    checked."""
    if "this" in sys.modules:
        pytest.skip("this process imported 'this' already")
    cfg = tmp_path / "zen.toml"
    cfg.write_text(TOML.format(method="this:x"))
    with pytest.raises(ValueError, match="module 'this' is not allowed"):
        sweep.load_config(cfg)
    assert "Beautiful is better" not in capfd.readouterr().out
    assert "this" not in sys.modules


@pytest.mark.parametrize("method, what", [
    (":x", "'' is not a module name"), ("a..b:x", "'a..b' is not a module name"),
    (".rel:x", "'.rel' is not a module name"), ("os:", "'' is not a rule name"),
    ("class.x:r", "'class.x' is not a module name"),
])
def test_a_malformed_import_path_names_the_file_and_key(tmp_path, method, what):
    """``method = ":x"`` ended in ``Empty module name`` (no file or key named)."""
    cfg = tmp_path / "bad.toml"
    cfg.write_text(TOML.format(method=method))
    with pytest.raises(ValueError) as info:
        sweep.load_config(cfg)
    assert str(cfg) in str(info.value) and "fixed.method" in str(info.value)
    assert what in str(info.value)


def test_import_user_module_rules():
    """Allowed: a module the user's code imported already, one allowed by allow_import (with its
    submodules) or the environment; refused before import otherwise; names checked."""
    from simplexlab import _imports

    assert _imports.import_user_module("json", "f.toml: k") is sys.modules["json"]
    with pytest.raises(ValueError, match="f.toml: k: module 'xml.dom.minidom_audit' is not"):
        _imports.import_user_module("xml.dom.minidom_audit", "f.toml: k")
    _imports.allow_import("xml")
    try:
        assert "xml" in _imports.allowed_modules()
        with pytest.raises(ValueError, match="cannot import 'xml.dom.minidom_audit'"):
            _imports.import_user_module("xml.dom.minidom_audit", "f.toml: k")
    finally:
        _imports._ALLOWED.discard("xml")
    for bad in ("", "a b", "1x", "a.", "x-y", None, 3):
        assert not _imports.is_module_name(bad)
        with pytest.raises(ValueError, match="not a module name"):
            _imports.allow_import(bad)


def _cli(*args, cwd, env=None, timeout=240):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    env.pop("SIMPLEXLAB_IMPORT", None)
    return subprocess.run([sys.executable, "-m", "simplexlab", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_the_cli_refuses_the_module_and_takes_import(evil):
    """``python -m simplexlab sweep`` from the file's folder (which puts it on the path): one
    error line, exit 2, nothing ran; ``--import MODULE`` allows it."""
    proc = _cli("sweep", str(evil), cwd=evil.parent)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "--import" in lines[0], lines
    assert not (evil.parent / "IMPORTED").exists()
    proc = _cli("sweep", str(evil), "--import", "evilrule_audit", cwd=evil.parent)
    assert proc.returncode == 2 and "registered no rule 'x'" in proc.stderr, proc.stderr
    assert (evil.parent / "IMPORTED").exists()


# ---- the compilation cache folder

def test_a_cache_folder_others_can_write_is_refused(tmp_path):
    """An existing world-writable ``SIMPLEXLAB_JAX_CACHE`` folder was used unchecked (it holds
    compiled code the lab runs). Now refused (as ssh refuses a key others can write), by the
    library and by the command line (one line, exit 2); the user's own folder is used."""
    from simplexlab import _env

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert "other users can write" in _env.cache_folder_problem(shared)
    group = tmp_path / "group"
    group.mkdir()
    group.chmod(0o770)
    assert "other users can write" in _env.cache_folder_problem(group)
    inner = shared / "inner"  # the folder above it lets others swap it
    inner.mkdir(mode=0o700)
    assert "folder above it" in _env.cache_folder_problem(inner)
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    assert _env.cache_folder_problem(mine) is None
    code = ("from simplexlab._env import use_compilation_cache\n"
            "try:\n    print(use_compilation_cache())\n"
            "except ValueError as err:\n    print('refused:', err)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), _env.CACHE_VAR: str(shared)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120).stdout
    assert out.startswith("refused:") and str(shared) in out and "chmod go-w" in out, out
    env[_env.CACHE_VAR] = str(mine)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120).stdout
    assert out.strip() == str(mine), out
    proc = _cli("plan", "--mu", "0.5", "--drift-group-sizes", "4", "--group-sizes", "4",
                cwd=tmp_path, env={_env.CACHE_VAR: str(shared)})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "compilation cache folder" in lines[0], lines


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                    reason="giving a folder to another user takes root")
def test_a_cache_folder_of_another_user_is_refused(tmp_path):
    from simplexlab import _env

    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 4242, -1)
    assert "owned by user id 4242" in _env.cache_folder_problem(theirs)


# ---- the store's keyed signature

SMALL = {"num_actions": 40, "num_correct": 5, "group_size": 4, "num_steps": 4, "stride": 2,
         "optimizer": "adam"}


def _tiny(out):
    return sweep.run("categorical", {"focal_gamma": [0.0, 1.0]}, fixed=SMALL, seeds=1,
                     chunk_size=1, out=out, name="s", progress=False)


def test_a_chunk_edited_with_its_checksum_recomputed_is_found(tmp_path, capsys):
    """One number of a chunk changed and the hash entry recomputed from the arrays (as anyone
    with the files can): it loaded silently, a checksum is no signature. Now the entry is an
    HMAC keyed with the user's secret outside the store: the chunk is reported, set aside and
    computed again, with the fresh run's numbers."""
    fresh = _tiny(tmp_path / "a")
    _tiny(tmp_path / "b")
    chunk = sorted((tmp_path / "b" / "s.chunks").glob("*.npz"))[0]
    with np.load(chunk) as f:
        stored = {k: f[k] for k in f.files}
    arrays = {k: v for k, v in stored.items()
              if k not in (_store.DIGEST_ENTRY, _store.HASH_ENTRY)}
    q = arrays["q_pos"].copy()
    q.flat[0] += 0.25
    arrays["q_pos"] = q
    forged = {**arrays, _store.DIGEST_ENTRY: stored[_store.DIGEST_ENTRY],
              _store.HASH_ENTRY: np.array([_store.arrays_sha256(arrays)])}
    with open(chunk, "wb") as fh:
        np.savez(fh, **forged)
    capsys.readouterr()
    again = _tiny(tmp_path / "b")
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "corrupt" in ln]
    assert len(lines) == 1 and chunk.name in lines[0], lines
    assert again.attrs["chunks_computed"] == 1
    np.testing.assert_array_equal(again["q_pos"].values, fresh["q_pos"].values)


def test_the_secret_is_the_users_alone(tmp_path, monkeypatch):
    """Created on first use, readable by its user only, the same on every later read, named by
    ``SIMPLEXLAB_STORE_KEY``; a key file others can read is refused; another secret does not
    verify a chunk."""
    from simplexlab import _env

    key = tmp_path / "cfg" / "store.key"
    monkeypatch.setenv(_env.STORE_KEY_VAR, str(key))
    first = _store.ChunkStore.user_key()
    assert len(first) >= 16 and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert _store.ChunkStore.user_key() == first
    store = _store.ChunkStore(tmp_path / "chunks")
    store.save("d" * 64, {"x": np.arange(3.0)})
    assert store.check("d" * 64, store.load("d" * 64))[1] is None
    other = _store.ChunkStore(tmp_path / "chunks", key=b"k" * 32)
    assert "do not match their hash" in other.check("d" * 64, store.load("d" * 64))[1]
    key.chmod(0o644)
    with pytest.raises(ValueError, match="SIMPLEXLAB_STORE_KEY: the secret file .* refused: "
                                         "other users can read"):
        _store.ChunkStore.user_key()
    monkeypatch.delenv(_env.STORE_KEY_VAR)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert _env.store_key_file() == tmp_path / "xdg" / "simplexlab" / "store.key"
