"""The command line refuses bad options up front, in one line (exit 2), and never imports code
the user did not name: seeds out of range, empty paths, a missing ``--experiments-dir``, the
current directory's ``./experiments``; a claim whose evaluation raises is reported as failed,
never as "does not hold"."""

import json
from pathlib import Path

import pytest

from simplexlab.lab import main
from simplexlab.lab._claims import Claim, Verdict, evaluate_claims
from simplexlab.lab._report import write_report
from simplexlab.lab._status import status_line

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("seed", ["-1", str(2**70), "1.5", "x"])
def test_seed_out_of_range_is_one_line_before_any_compute(seed, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["claims", "g2-app-e-tables", "--seed", seed, "--out", str(tmp_path)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--seed" in err and seed in err
    assert not (tmp_path / "claims").exists()  # nothing ran, nothing written


@pytest.mark.parametrize("argv", [["claims", "--out", ""], ["reproduce", "--out", " "],
                                  ["--experiments-dir", "", "list"]])
def test_empty_paths_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "non-empty path" in capsys.readouterr().err


def test_a_named_experiments_folder_must_exist_and_hold_scripts(tmp_path, capsys):
    missing = tmp_path / "nope"
    assert main(["--experiments-dir", str(missing), "list"]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "not a folder" in err and "Traceback" not in err
    a_file = tmp_path / "f.py"
    a_file.write_text("")
    assert main(["--experiments-dir", str(a_file), "claims", "list"]) == 2
    assert "not a folder" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["--experiments-dir", str(empty), "reproduce", "x"]) == 2
    assert "no experiment scripts" in capsys.readouterr().err


def test_the_current_directory_experiments_are_not_imported(tmp_path, monkeypatch, capsys):
    """An untrusted checkout's ./experiments runs nothing unless the user names it."""
    planted = tmp_path / "experiments"
    planted.mkdir()
    marker = tmp_path / "ran"
    (planted / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SIMPLEXLAB_EXPERIMENTS", raising=False)
    assert main(["list"]) == 0
    assert not marker.exists()
    assert "phase-portraits" in capsys.readouterr().out  # the installed checkout's experiments
    # named explicitly, it is the user's choice
    main(["--experiments-dir", str(planted), "list"])
    assert marker.exists()


def _claim(evaluate):
    return Claim("x-claim", "G2", "eq. 1", "a sentence long enough to be a claim", None,
                 {"a": 1}, {"a": [1, 2]}, evaluate)


def test_a_failed_evaluation_is_failed_not_no(tmp_path):
    def boom(ctx):
        raise RuntimeError("the seed 123 broke it")

    def ok(ctx):
        return Verdict("no", -1.0, (-2.0, -0.5), "effect", {"a": [1, 2]}, [False, True])

    failed, = evaluate_claims([_claim(boom)], log=None)
    assert failed["holds_at_paper"] == "failed" and "seed 123" in failed["error"]
    assert failed["robustness_fraction"] is None
    assert status_line(failed).startswith("evaluation failed")
    no, = evaluate_claims([_claim(ok)], log=None)
    assert no["holds_at_paper"] == "no"
    path = write_report([failed], tmp_path, quick=True, merge=False)
    md = path.with_suffix(".md").read_text()
    assert "0 do not hold" in md and "1 could not be evaluated" in md
    assert json.loads(path.read_text())["claims"][0]["holds_at_paper"] == "failed"


def test_a_full_disk_during_reproduce_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    import errno

    from simplexlab.lab import _registry

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "the disk is full: could not write x.json (0 bytes free)")

    monkeypatch.setattr(_registry, "run_experiment", full)
    assert main(["reproduce", "focal-weight", "--no-claims", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "the disk is full" in err and "Traceback" not in err
