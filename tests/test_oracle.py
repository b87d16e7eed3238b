"""The advantage oracle (:func:`simplexlab.verify.check_advantages`) finds each of six bug classes
the frameworks shipped in 2026 when they are planted in a small reference implementation written
here (NumPy, one loop per group, independent of the lab's JAX rules), and passes the same
reference without the plant:

- partial groups mis-grouped by a fixed stride (AReaL #1419),
- rejected / zero-action rows shifting their siblings' baseline (verl PR #6452, OpenRLHF #1239),
- a float32 leave-one-out std residue inflating advantages ~4000× (NeMo-RL PR #4161),
- zero-variance groups counted in the loss denominator (TRL #6367),
- the std convention (ddof, ε), inferred and named,
- batch- instead of group-level scaling.

Then the calling conventions (TRL, verl, Tunix, plain) on the same reference, the bad inputs (one
line naming the function and the group) and ``simplexlab verify-advantages``."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from simplexlab.verify import CHECKS, check_advantages, infer_convention


def reference(rewards, group_ids, mask=None, *, plant=None, rule="grpo", ddof=0, eps=1e-6):
    """A small GRPO-family advantage step, ``plant`` naming the bug to plant (``None``: none).

    ``rule``: ``"grpo"`` (z-score, ``ddof``, ``eps``), ``"loo_std"`` (leave-one-out mean and std,
    unscaled where that std is 0) or ``"loss"`` (each rollout's weight in the loss: the z-score
    over the number of rollouts that carry signal)."""
    r = np.asarray(rewards)
    dtype = r.dtype
    ids = np.asarray(group_ids)
    valid = np.ones(len(r), bool) if mask is None else np.asarray(mask, bool)
    if plant == "stride":  # AReaL #1419: groups of the first group's size, by position
        size = int(np.sum(ids == ids[0]))
        ids = np.arange(len(r)) // size
    out = np.zeros(len(r), dtype=np.float64)
    groups = [np.flatnonzero(ids == g) for g in dict.fromkeys(ids.tolist())]
    if plant == "batch_scale":  # one std for every group of the batch
        batch_sd = np.std(r[valid].astype(np.float64), ddof=ddof)
    for rows in groups:
        use = rows if plant == "masked_baseline" else rows[valid[rows]]
        if len(use) < 2:
            continue
        work = np.float64 if plant != "float32_residue" else dtype
        x = r[use].astype(work)
        if rule == "loo_std":
            out[use] = _loo_std(x, closed_form=plant == "float32_residue")
        else:
            sd = batch_sd if plant == "batch_scale" else np.std(x, ddof=ddof)
            out[use] = (x - x.mean()) / (sd + eps)
    out[~valid] = 0.0
    if rule == "loss":  # TRL #6367: the denominator counts the zero-variance groups' rows
        signal = sum(int(valid[rows].sum()) for rows in groups if np.any(out[rows] != 0))
        out /= int(valid.sum()) if plant == "zero_var_denominator" else max(signal, 1)
    return out.astype(dtype)


def _loo_std(x, *, closed_form):
    """The leave-one-out baseline and std of each rollout (NeMo-RL's default): exact (the others'
    deviations from their own mean, in float64), or the closed form from the group's sums in the
    rewards' dtype (NeMo-RL PR #4161: a residue where the others agree)."""
    n = len(x)
    if closed_form:
        s, q, k = x.sum(), (x * x).sum(), x.dtype.type(n - 1)
        mean = (s - x) / k
        var = ((q - x * x) - k * mean * mean) / x.dtype.type(max(n - 2, 1))
        sd = np.sqrt(np.maximum(var, 0)) if n > 2 else np.zeros_like(x)
    else:
        mean = np.array([np.delete(x, i).mean() for i in range(n)])
        sd = np.array([np.delete(x, i).std(ddof=1) if n > 2 else 0.0 for i in range(n)])
    d = x - mean
    return np.where(sd > 0, d / np.where(sd > 0, sd, 1), d)


def _fn(**kw):
    def fn(rewards, group_ids, mask=None):
        return reference(rewards, group_ids, mask, **kw)
    return fn


# ---- the six bug classes: each found when planted, the clean reference passes -----------------

def test_partial_groups_mis_grouped_by_a_fixed_stride():
    """AReaL #1419: with ragged (partial) groups, rows grouped by a fixed stride."""
    assert check_advantages(_fn(), method="grpo").passed
    report = check_advantages(_fn(plant="stride"), method="grpo")
    assert "ragged groups" in report.failed
    dev = next(d for d in report.deviations if d.check == "ragged groups")
    assert "fixed stride of 4" in dev.why or "fixed stride of 2" in dev.why, dev.why
    assert report.checks["whole groups"] == "pass"  # whole groups hide it


def test_rejected_rows_must_not_move_their_siblings():
    """verl PR #6452, OpenRLHF PR #1239: a rejected row votes in its siblings' baseline."""
    report = check_advantages(_fn(plant="masked_baseline"), method="grpo")
    assert report.failed == ["masked rows", "one valid rollout"], report.summary()
    dev = report.deviations[0]
    assert "rejected rows enter their group's statistics" in dev.why
    assert len(dev.group) == 4 and None in dev.group  # the smallest group that shows it
    assert check_advantages(_fn(), method="grpo").checks["masked rows"] == "pass"


def test_float32_leave_one_out_residue():
    """NeMo-RL PR #4161: the leave-one-out std from the group's sums in float32 leaves a residue
    where the others agree; dividing by it inflates the advantage thousands of times."""
    # the checks on real-valued ties aside: there the lab's own loo_std rounds (below)
    usable = [c for c in CHECKS if c not in ("zero variance", "ties")]
    clean = check_advantages(_fn(rule="loo_std"), method="loo_std", checks=usable)
    assert clean.passed, clean.summary()
    report = check_advantages(_fn(rule="loo_std", plant="float32_residue"), method="loo_std",
                              checks=usable)
    assert report.failed == ["float32"]
    dev = next(d for d in report.deviations if d.check == "float32")
    assert max(abs(v) for v in dev.got) > 1000 * max(abs(v) for v in dev.expected)
    assert "grow" in dev.why and "residue" in dev.why


def test_the_labs_own_loo_std_where_the_others_agree():
    """The definition (loo_std's docstring): where the others' std is 0, ``A_i = r_i − b_i``
    unscaled; [0.7, 0.7, 0.7] is 0 and [0.3, 0.3, 0.3, 0.9] ends in 0.9 − 0.3 = 0.6 (the oracle
    found the lab's formula dividing by a rounding residue there, 8.8e15: fixed)."""
    report = check_advantages(_fn(rule="loo_std"), method="loo_std",
                              checks=["zero variance", "ties"])
    assert report.passed, report.summary()


def test_zero_variance_groups_in_the_loss_denominator():
    """TRL #6367: each rollout's loss weight is its advantage over every rollout of the batch, so
    zero-variance groups dilute the others."""
    clean = check_advantages(_fn(rule="loss"), method="grpo", returns="loss_weights")
    assert clean.passed, clean.summary()
    report = check_advantages(_fn(rule="loss", plant="zero_var_denominator"), method="grpo",
                              returns="loss_weights")
    assert "zero variance" in report.failed
    dev = next(d for d in report.deviations if d.check == "zero variance")
    assert "the loss denominator counts the zero-variance groups' rollouts: the weights " \
        "shrink by 8/16" in dev.why, dev.why
    # read as advantages, the same weights are a batch-size scale: every check fails
    assert not check_advantages(_fn(rule="loss"), method="grpo").passed


@pytest.mark.parametrize("ddof,eps,text", [(1, 1e-4, "std(ddof=1) + 0.0001"),
                                           (0, 1e-4, "std(ddof=0) + 0.0001"),
                                           (1, 1e-6, "std(ddof=1) + 1e-06")])
def test_the_std_convention_is_inferred_and_named(ddof, eps, text):
    """The std's ddof and ε, read from the function's answers and named; a convention other than
    the rule's fails, and the deviation names the lab rule it is (where there is one)."""
    fn = _fn(ddof=ddof, eps=eps)
    conv = infer_convention(fn)
    assert (conv.ddof, conv.level) == (ddof, "group")
    assert conv.eps == pytest.approx(eps, rel=1e-6)
    assert text in conv.text
    report = check_advantages(fn, method="grpo")
    assert "std convention" in report.failed or "ties" in report.failed
    if ddof == 1:
        assert conv.rule == ("grpo_sample_std", {"std_eps": eps})
        assert check_advantages(fn, method="grpo_sample_std", params={"std_eps": eps}).passed
        assert "the lab's grpo_sample_std" in report.deviations[0].why
    else:
        assert conv.rule is None  # the lab's grpo has ε = 1e-6
    clean = check_advantages(_fn(), method="grpo")
    assert clean.passed and clean.inferred.rule == ("grpo", {})


def test_batch_level_scaling():
    """One std for the whole batch instead of each group's."""
    report = check_advantages(_fn(plant="batch_scale"), method="grpo")
    assert "batch locality" in report.failed
    assert report.checks["std convention"] == "pass"  # a group alone does not show it
    dev = next(d for d in report.deviations if d.check == "batch locality")
    assert "one scale for every group of the batch: the batch's std(ddof=0)" in dev.why, dev.why
    assert report.inferred.level == "batch"
    assert check_advantages(_fn(), method="grpo").checks["batch locality"] == "pass"


# ---- the conventions ---------------------------------------------------------------------------

def _contiguous(rewards, G, valid=None):
    r = np.asarray(rewards)
    return reference(r, np.arange(len(r)) // G, valid)


def test_the_tunix_convention_with_and_without_valid_mask():
    def with_mask(rewards, num_generations, valid_mask=None):
        return _contiguous(rewards, num_generations, valid_mask)

    def without(rewards, num_generations):
        return _contiguous(rewards, num_generations)

    report = check_advantages(with_mask, method="grpo", convention="tunix")
    assert report.passed, report.summary()
    assert report.checks["shuffled order"].startswith("skipped: the tunix convention groups")
    report = check_advantages(without, method="grpo", convention="tunix")
    assert report.passed
    assert "takes no valid_mask" in report.checks["masked rows"]
    assert "takes no valid_mask" in report.checks["ragged groups"]


def _torch():
    """torch, with :mod:`simplexlab.llm` imported (it serves the trl and verl conventions)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("simplexlab.llm")
    return torch


def test_the_trl_convention_marks_rejected_rows_nan():
    torch = _torch()

    def trl_like(rewards, num_generations):  # NaN rewards: unscorable, as TRL marks them
        r = rewards.numpy()
        return torch.tensor(_contiguous(np.nan_to_num(r), num_generations, ~np.isnan(r)))

    report = check_advantages(trl_like, method="grpo", convention="trl")
    assert report.passed, report.summary()
    assert report.checks["masked rows"] == "pass"


def test_the_verl_convention_groups_by_uid_over_tokens():
    torch = _torch()

    def verl_like(token_level_rewards, response_mask, index, config=None, plant=None):
        scores = token_level_rewards.sum(-1).numpy()
        valid = response_mask.sum(-1).numpy() > 0
        ids = np.unique(index, return_inverse=True)[1]
        a = reference(scores, ids, None if plant else valid, plant=plant)
        adv = torch.tensor(a)[:, None] * response_mask
        return adv, adv

    report = check_advantages(verl_like, method="grpo", convention="verl")
    assert report.passed, report.summary()
    planted = check_advantages(lambda **kw: verl_like(**kw, plant="masked_baseline"),
                               method="grpo", convention="verl")
    assert "masked rows" in planted.failed
    assert "as rewards 0" in planted.deviations[0].why  # verl's empty row scores 0


def test_the_torch_conventions_are_served_by_the_llm_package_only():
    """Without :mod:`simplexlab.llm` imported, a torch convention is refused saying what to
    import (the verify layer builds no torch tensor), and importing it serves the convention."""
    pytest.importorskip("torch")
    code = ("import numpy as np, sys\n"
            "from simplexlab.verify import check_advantages\n"
            "fn = lambda rewards, num_generations: rewards.nan_to_num() * 0\n"
            "try:\n"
            "    check_advantages(fn, method='grpo', convention='trl')\n"
            "except ValueError as err:\n"
            "    print('refused:', err)\n"
            "print('torch' in sys.modules)\n"
            "import simplexlab.llm\n"
            "print(check_advantages(fn, method='grpo', convention='trl').passed)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0].startswith("refused: ") and "import simplexlab.llm first" in out[0], out
    assert out[1:] == ["False", "False"], out  # no torch before; served (and failing) after


# ---- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,match", [
    (lambda r, g: r[:-1], r"returned advantages of shape \(1,\); expected .* \(2,\)"),
    (lambda r, g: r / 0.0, "returned non-finite advantages at rows"),
    (lambda r, g: 1 / 0, "raised ZeroDivisionError: division by zero"),
    (lambda r, g: "x", "not an array of numbers"),
])
def test_bad_functions_are_one_line_naming_the_function_and_the_group(fn, match):
    with pytest.raises(ValueError, match=match) as err:
        check_advantages(fn, method="grpo", name="mine")
    text = str(err.value)
    assert "\n" not in text and text.startswith("mine on 'whole groups' case 'a group of 2'")
    assert "(rewards [1, 0])" in text


def test_bad_arguments():
    with pytest.raises(ValueError, match="must be callable"):
        check_advantages(3)
    with pytest.raises(ValueError, match="unknown convention"):
        check_advantages(_fn(), convention="openrlhf")
    with pytest.raises(ValueError, match="unknown method"):
        check_advantages(_fn(), method="nope")
    with pytest.raises(ValueError, match="needs the rollouts' mode ids"):
        check_advantages(_fn(), method="g2rpo")
    with pytest.raises(ValueError, match="has no parameter"):
        check_advantages(_fn(), method="grpo", params={"std_eps": 1e-4})


def test_the_report():
    report = check_advantages(_fn(ddof=1, eps=1e-4), method="grpo")
    assert list(report.checks) == list(CHECKS)
    text = report.summary()
    assert "inferred: (r − mean r) / (std(ddof=1) + 0.0001)" in text
    assert "Smallest group (a group of 2): rewards [1, 0]" in text
    d = report.to_dict()
    assert d["passed"] is False and d["inferred"]["rule"] == ["grpo_sample_std",
                                                            {"std_eps": 1e-4}]


# ---- the command line --------------------------------------------------------------------------

def _cli(tmp_path, *args, env_import=None):
    import os

    (tmp_path / "mymod.py").write_text(textwrap.dedent("""
        import numpy as np

        def grpo(rewards, group_ids, mask=None):
            out = np.zeros(len(rewards))
            valid = np.ones(len(rewards), bool) if mask is None else mask
            for g in np.unique(group_ids):
                rows = np.flatnonzero((group_ids == g) & valid)
                if len(rows) > 1:
                    x = rewards[rows].astype(float)
                    out[rows] = (x - x.mean()) / (x.std(ddof=1) + 1e-4)
            return out.astype(rewards.dtype)

        def broken(rewards, group_ids):
            return rewards[:1]

        def trl_grpo(rewards, num_generations):  # TRL's convention: a tensor, NaN = rejected
            r = rewards.numpy()
            ids = np.arange(len(r)) // num_generations
            return rewards.new_tensor(grpo(np.nan_to_num(r), ids, ~np.isnan(r)))
    """))
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop("SIMPLEXLAB_IMPORT", None)
    if env_import:
        env["SIMPLEXLAB_IMPORT"] = env_import
    return subprocess.run([sys.executable, "-m", "simplexlab", "verify-advantages", *args],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)


def test_cli_verify_advantages(tmp_path):
    proc = _cli(tmp_path, "mymod:grpo", "--method", "grpo_sample_std", "--param",
                "std_eps=1e-4", "--import", "mymod", "--json", "out.json")
    assert proc.returncode == 0, proc.stderr
    assert "every check passes" in proc.stdout
    assert '"passed": true' in (tmp_path / "out.json").read_text()
    proc = _cli(tmp_path, "mymod:grpo", "--method", "grpo", env_import="mymod")
    assert proc.returncode == 1
    assert "the lab's grpo_sample_std std_eps=0.0001" in proc.stdout


def test_cli_verify_advantages_in_trl_convention(tmp_path):
    """The command imports :mod:`simplexlab.llm` for a torch convention (the verify layer
    builds no tensor)."""
    _torch()
    proc = _cli(tmp_path, "mymod:trl_grpo", "--method", "grpo_sample_std", "--param",
                "std_eps=1e-4", "--import", "mymod", "--convention", "trl")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "every check passes" in proc.stdout


@pytest.mark.parametrize("args,match", [
    (["mymod:grpo"], "module 'mymod' is not allowed to be imported"),
    (["nomod:grpo", "--import", "nomod"], "cannot import 'nomod'"),
    (["mymod:nothing", "--import", "mymod"], "module 'mymod' has no attribute 'nothing'"),
    (["mymod", "--import", "mymod"], "MODULE:FUNC"),
    (["mymod:broken", "--import", "mymod"], "mymod:broken on 'whole groups' case"),
    (["mymod:grpo", "--import", "mymod", "--param", "x"], "--param wants NAME=VALUE"),
    (["mymod:grpo", "--import", "mymod", "--method", "nope"], "unknown method 'nope'"),
])
def test_cli_bad_input_is_one_line_exit_2(tmp_path, args, match):
    proc = _cli(tmp_path, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert match in lines[0]
