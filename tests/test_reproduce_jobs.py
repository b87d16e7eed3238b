"""``simplexlab reproduce --jobs N``: experiments and their claims in worker processes give the
same result files and the same claims report as one process, every figure sees its own claims,
a failing experiment is reported without stopping the others, and ``--resume`` skips what is
done. On a folder of three tiny experiments (one raises) with two claims, run as commands."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

EXPERIMENTS = '''
import jax.numpy as jnp

from simplexlab.lab import experiment
from simplexlab.lab import claim_lines


def _run(ctx, scale):
    x = jnp.linspace(0.0, 1.0, 101) ** 2 * scale  # float64: the CLI turns x64 on
    return {"parameters": {"scale": scale}, "value": float(jnp.sum(jnp.sin(x))),
            "footer": claim_lines(ctx.name, ctx.out)}


@experiment("alpha", reproduces="a test experiment", cost={"quick": "~1 s", "full": "~1 s"})
def alpha(ctx):
    return _run(ctx, 1.0)


@experiment("beta", reproduces="a test experiment", cost={"quick": "~2 s", "full": "~2 s"})
def beta(ctx):
    return _run(ctx, 3.0)


@experiment("broken", reproduces="a test experiment", cost={"quick": "~1 s", "full": "~1 s"})
def broken(ctx):
    raise ValueError("this experiment is broken on purpose")
'''

CLAIMS = '''
import jax.numpy as jnp

from simplexlab.lab import Verdict, claim


def _verdict(scale, status):
    effect = float(jnp.mean(jnp.arange(5.0) * scale))
    return Verdict(status, effect, (effect - 1.0, effect + 1.0), "a test criterion",
                   {"scale": [1.0, 2.0]}, [True, False])


for name, exp, scale, status in (("alpha-holds", "alpha", 1.0, "yes"),
                                 ("beta-fails", "beta", 2.0, "no")):
    claim(name, paper="SL", source="a test", sentence="a test claim", experiment=exp,
          paper_setting={}, grid={"scale": [1.0, 2.0]})(
              lambda ctx, s=scale, st=status: _verdict(s, st))


def _reads_its_run(ctx):  # a check of beta's run in figures/: there only after beta ran
    there = (ctx.root / "figures" / "beta.json").is_file()
    return Verdict("yes" if there else "no", float(there), (0.0, 1.0), "the run is there",
                   {"scale": [1.0]}, [there])


claim("beta-run-checked", paper="SL", source="a test", sentence="a test claim",
      experiment="beta", paper_setting={}, grid={"scale": [1.0]},
      uses_committed_result=True)(_reads_its_run)
'''


def _folder(tmp_path) -> Path:
    """The experiments' folder ``tmp_path/exps`` (the claims' root is ``tmp_path``)."""
    d = tmp_path / "exps"
    (d / "claims").mkdir(parents=True)
    (d / "tiny.py").write_text(textwrap.dedent(EXPERIMENTS))
    (d / "claims" / "tiny.py").write_text(textwrap.dedent(CLAIMS))
    return d


def _reproduce(d: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, SIMPLEXLAB_PROGRESS="0", MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "simplexlab", "--experiments-dir", str(d),
                           "reproduce", "--out", str(out), *extra], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def _claims(out: Path) -> dict:
    report = json.loads((out / "claims" / "claims.json").read_text())
    return {c["name"]: (c["experiment"], c["holds_at_paper"], c["effect"], c["ci"])
            for c in report["claims"]}


@pytest.mark.filterwarnings("ignore")
def test_two_processes_give_what_one_gives(tmp_path):
    """... and a claim that checks its experiment's run in figures/ is evaluated after the run
    (each command on a root of its own, writing into its figures/)."""
    d1, d2 = _folder(tmp_path / "a"), _folder(tmp_path / "b")
    one, two = tmp_path / "a" / "figures", tmp_path / "b" / "figures"
    p1 = _reproduce(d1, one, "--jobs", "1")
    p2 = _reproduce(d2, two, "--jobs", "2")
    for p in (p1, p2):  # the broken experiment fails the command, the others are done
        assert p.returncode == 1, p.stderr[-3000:]
        assert "broken" in p.stderr and "failed" in p.stderr
    assert "in 2 processes" in p2.stdout and "broken on purpose" in p2.stdout
    for name in ("alpha", "beta"):
        r1 = json.loads((one / f"{name}.json").read_text())
        r2 = json.loads((two / f"{name}.json").read_text())
        assert r1["value"] == r2["value"]  # the same bits
        assert r1["parameters"] == r2["parameters"]
        # the figure of each experiment saw its own claim in the report, in both runs
        want = "alpha-holds: holds" if name == "alpha" else "beta-fails: does not hold"
        for r in (r1, r2):
            assert len(r["footer"]) == 1 and want in r["footer"][0], r["footer"]
    assert not (two / "broken.json").exists()
    assert _claims(one) == _claims(two)
    assert set(_claims(two)) == {"alpha-holds", "beta-fails", "beta-run-checked"}
    assert _claims(one)["beta-run-checked"][1] == "yes"  # evaluated after beta wrote its run
    assert (two / "claims" / "claims.md").exists()
    assert "broken on purpose" in (two / "logs" / "broken.log").read_text()
    assert "alpha-holds" in (two / "logs" / "alpha.log").read_text()
    assert not list(two.rglob("*.tmp"))
    # --resume: the finished experiments are skipped, their claims evaluated again
    p3 = _reproduce(d2, two, "--jobs", "2", "--resume", "alpha", "beta")
    assert p3.returncode == 0, p3.stderr[-3000:]
    assert p3.stdout.count("experiment skipped (--resume)") == 2
    assert _claims(two) == _claims(one)


def test_jobs_must_be_a_positive_integer(capsys):
    from simplexlab.lab import main

    for bad in ("0", "-1", "two"):
        with pytest.raises(SystemExit) as e:
            main(["reproduce", "--jobs", bad])
        assert e.value.code == 2
        assert "--jobs" in capsys.readouterr().err


def test_the_printed_estimate_is_the_longest_first_schedule():
    """``reproduce``'s estimate is the wall time of the longest-first schedule on N workers
    (what the workers do), not the sum: a unit goes to the worker that is free first."""
    from simplexlab.lab._parallel import makespan

    assert makespan([3, 3, 2, 2, 2], 2) == 7  # 3+2+2 | 3+2
    assert makespan([2, 2, 2, 3, 3], 2) == 7  # the order given does not matter
    assert makespan([10, 1, 1, 1], 2) == 10 and makespan([4, 4], 1) == 8
    assert makespan([], 2) == 0
