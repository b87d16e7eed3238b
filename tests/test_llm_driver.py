"""The GRPO driver for causal LMs: the embedded task's verifier and exact mode masses,
the loss against a hand computation, advantages equal to the lab's, loading a saved model by
path, checkpoint/resume, the mean-field time-scale fit, bad input. Tiny shapes only."""

import math
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from simplexlab.llm import (  # noqa: E402
    ArithmeticTask,
    TrainConfig,
    clipped_token_loss,
    fit_time_scale,
    load_model,
    predict,
    tiny_model,
    train,
    warm_start,
)
from simplexlab.llm._task import BOS, DIGIT0, EOS, EQ, MINUS, PLUS, TIMES  # noqa: E402
from simplexlab.shaping import GainSchedule, Groups, advantages  # noqa: E402

TASK = ArithmeticTask()


def d(n):
    return DIGIT0 + n


@pytest.mark.parametrize("n, completion, expected", [
    (6, [d(6), EOS], (1, 0)),
    (6, [d(5), EOS], (0, 4)),
    (6, [d(2), PLUS, d(4), EOS], (1, 1)),
    (6, [d(2), PLUS, d(5), EOS], (0, 5)),
    (6, [d(9), MINUS, d(3), EOS], (1, 2)),
    (6, [d(3), MINUS, d(9), EOS], (0, 6)),
    (6, [d(2), TIMES, d(3), EOS], (1, 3)),
    (7, [d(2), TIMES, d(3), EOS], (0, 7)),
    (6, [d(2), PLUS, d(4), d(1)], (0, 8)),  # no <eos>: malformed
    (6, [PLUS, EOS, 0, 0], (0, 8)),
    (6, [d(6), EOS, d(1), d(2)], (1, 0)),  # tokens after <eos> are ignored
])
def test_verifier_labels_hand_examples(n, completion, expected):
    assert TASK.label(n, completion) == expected


def test_every_target_has_an_answer_in_every_family():
    for n in TASK.targets:
        for fam in range(TASK.K):
            answers = TASK.correct_answers(n, fam)
            assert answers and all(TASK.label(n, a + [EOS]) == (1, fam) for a in answers)


def test_exact_mode_masses_match_sampling():
    """The enumerated mode masses of a random tiny model equal the frequencies of its own
    ``generate`` samples (4σ binomial bounds on 4,000 samples of one target)."""
    task = ArithmeticTask(targets=(6,))
    model = tiny_model(task.vocab_size, seed=3)
    pi = task.mode_probabilities(model)[0]
    assert pi.shape == (task.num_modes,) and abs(pi.sum() - 1) < 1e-9 and np.all(pi >= 0)
    torch.manual_seed(0)
    n = 4000
    x = torch.tensor([task.prompt(6)] * n)
    with torch.no_grad():
        out = model.generate(x, attention_mask=torch.ones_like(x), do_sample=True, top_k=0,
                             top_p=1.0, temperature=1.0, max_new_tokens=task.max_new_tokens,
                             pad_token_id=0, eos_token_id=EOS)
    comp = out[:, 3:].tolist()
    freq = np.bincount([task.label(6, c + [0] * 4)[1] for c in comp], minlength=task.num_modes)
    sigma = np.sqrt(pi * (1 - pi) / n)
    assert np.all(np.abs(freq / n - pi) <= 4 * sigma + 1e-3), (freq / n, pi)


def test_clipped_token_loss_equals_a_hand_computation():
    """A 2-prompt × 1-rollout batch: ratios e^{0.5}, e^{-0.5}, 1 (clipped on the high side at
    1.28 for A > 0, on the low side at 0.8 for A < 0), token-mean over the 5 unmasked tokens."""
    logp = torch.tensor([[0.0, 0.5, -1.0], [-0.5, 0.0, 0.0]])
    old = torch.tensor([[0.0, 0.0, -1.0], [0.0, 0.0, 0.3]])
    mask = torch.tensor([[True, True, True], [True, True, False]])
    adv = torch.tensor([2.0, -1.0])
    r = [[1.0, math.exp(0.5), 1.0], [math.exp(-0.5), 1.0]]
    # min(r A, clip(r) A): A = 2 > 0 → min(r, 1.28)·2; A = −1 < 0 → −max(r, 0.8)
    terms = [min(r[0][0], 1.28) * 2, min(r[0][1], 1.28) * 2, min(r[0][2], 1.28) * 2,
             -max(r[1][0], 0.8), -max(r[1][1], 0.8)]
    expected = -sum(terms) / 5
    got = clipped_token_loss(logp, old, adv, mask, eps_low=0.2, eps_high=0.28)
    assert abs(float(got) - expected) < 1e-6
    # accumulating micro-batches with the whole batch's token count gives the same loss
    parts = [clipped_token_loss(logp[i:i + 1], old[i:i + 1], adv[i:i + 1], mask[i:i + 1],
                                num_tokens=5) for i in range(2)]
    assert abs(float(sum(parts)) - expected) < 1e-6


def _small_cfg(**kw):
    base = dict(steps=2, prompts_per_step=4, group_size=4, eta=1e-3, checkpoint_every=1,
                pass_k=2)
    return TrainConfig(**{**base, **kw})


@pytest.mark.parametrize("method, schedule", [
    ("grpo", None), ("g2rpo", GainSchedule(kind="B", gain=1.5)),
    ("g2rpo", GainSchedule(kind="A", gain=2.0, ramp_steps=3, B_max=4.0)), ("rloo", None)])
def test_driver_applies_the_labs_advantages(method, schedule):
    seen = []
    model = tiny_model(TASK.vocab_size, seed=0)
    cfg = _small_cfg(method=method, schedule=schedule, steps=2)
    train(model, TASK, cfg, progress=False, callback=lambda s, b: seen.append((s, b)))
    assert len(seen) == 2
    for step, b in seen:
        lab = advantages(method, Groups(np.asarray(b["rewards"], float), b["modes"]),
                         schedule=schedule, step=step, num_clusters=TASK.num_modes)
        np.testing.assert_allclose(b["advantages"].numpy().reshape(4, 4), np.asarray(lab),
                                   rtol=1e-5, atol=1e-5)


def test_mode_fn_replaces_the_verifiers_modes_in_the_advantages():
    """``train(mode_fn=...)``: G²RPO's advantages read the ids it returns (num_clusters = G); the
    batch and the metrics keep the verifier's exact modes."""
    seen, calls = [], []
    schedule = GainSchedule(kind="B", gain=1.5)

    def mode_fn(targets, comp, rewards):
        calls.append((list(targets), tuple(comp.shape), rewards.shape))
        return (np.arange(16).reshape(4, 4) % 2) * rewards.astype(int)  # ids in [0, G)

    train(tiny_model(TASK.vocab_size, seed=0), TASK,
          _small_cfg(method="g2rpo", schedule=schedule), progress=False, mode_fn=mode_fn,
          callback=lambda s, b: seen.append((s, b)))
    assert [c[1:] for c in calls] == [((16, TASK.max_new_tokens), (4, 4))] * 2
    for (step, b), (targets, *_) in zip(seen, calls, strict=True):
        assert targets == b["targets"]
        ids = (np.arange(16).reshape(4, 4) % 2) * np.asarray(b["rewards"]).astype(int)
        lab = advantages("g2rpo", Groups(np.asarray(b["rewards"], float), ids),
                         schedule=schedule, step=step, num_clusters=4)
        np.testing.assert_allclose(b["advantages"].numpy().reshape(4, 4), np.asarray(lab),
                                   rtol=1e-5, atol=1e-5)


def test_saved_model_reloads_by_path_and_trains(tmp_path):
    model = tiny_model(TASK.vocab_size, seed=1)
    model.save_pretrained(tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    for a, b in zip(model.state_dict().values(), loaded.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    res = train(loaded, TASK, _small_cfg(method="g2rpo"), progress=False)
    assert [r["step"] for r in res["history"]] == [0, 1, 2]
    assert all(math.isfinite(r["loss"]) for r in res["history"][1:])
    with pytest.raises(ValueError, match="not a folder written by save_pretrained"):
        load_model(tmp_path / "nothing")


def test_resume_continues_the_same_run(tmp_path):
    cfg = _small_cfg(method="g2rpo", steps=4, checkpoint_every=2)
    full = train(tiny_model(TASK.vocab_size, seed=2), TASK, cfg, out=tmp_path / "a",
                 name="r", progress=False)
    # the same run interrupted after its step-2 checkpoint, then resumed
    cut = _small_cfg(method="g2rpo", steps=4, checkpoint_every=2)
    seen = []

    def stop(step, batch):
        seen.append(step)
        if step == 2:  # after the step-2 checkpoint
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(tiny_model(TASK.vocab_size, seed=2), TASK, cut, out=tmp_path / "b", name="r",
              progress=False, callback=stop)
    again = train(tiny_model(TASK.vocab_size, seed=2), TASK, cut, out=tmp_path / "b",
                  name="r", resume=True, progress=False)
    assert [r["step"] for r in again["history"]] == [0, 1, 2, 3, 4]
    for a, b in zip(full["history"], again["history"], strict=True):
        assert a.keys() == b.keys()
        for k in ("p", "L_y", "accuracy", "loss"):
            if k in a:
                assert a[k] == pytest.approx(b[k], rel=1e-5, abs=1e-6), (k, a["step"])
    with pytest.raises(ValueError, match="another configuration"):
        train(tiny_model(TASK.vocab_size, seed=2), TASK, _small_cfg(steps=4, eta=2e-3),
              out=tmp_path / "b", name="r", resume=True, progress=False)


class _Planted:
    """A pickle that, when unpickled, creates a file (a harmless stand-in for any code)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_resume_never_runs_code_from_a_planted_checkpoint(tmp_path):
    """A checkpoint placed in a run folder (shared, downloaded) is loaded with tensors,
    containers and numbers only: a pickle that would run code is refused in one line, and
    its code never runs."""
    import pickle

    marker = tmp_path / "ran"
    out = tmp_path / "runs"
    out.mkdir()
    with open(out / "r.ckpt", "wb") as f:
        pickle.dump({"config": _Planted(marker)}, f)
    with pytest.raises(ValueError, match="not a checkpoint this lab writes") as e:
        train(tiny_model(TASK.vocab_size, seed=2), TASK, _small_cfg(steps=2), out=out,
              name="r", resume=True, progress=False)
    assert not marker.exists()
    assert "\n" not in str(e.value)


@pytest.mark.slow
def test_warm_start_leaves_several_families():
    model = tiny_model(TASK.vocab_size, seed=0)
    losses = warm_start(model, TASK, steps=150, batch=64, seed=0)
    assert losses[-1] < losses[0]
    pi = TASK.mode_probabilities(model)
    y = pi[:, :TASK.K] / pi[:, :TASK.K].sum(-1, keepdims=True)
    assert np.mean(np.sum(y > 0.03, -1)) >= 2.0


def test_fit_time_scale_recovers_a_known_scale():
    """Synthetic GRPO history: p(step) of the ODE at t = 0.37·step, computed with the theory's
    solver directly; the fit must return 0.37."""
    import jax.numpy as jnp

    from simplexlab.theory import GRPO, make_state, solve

    rng = np.random.default_rng(0)
    K, M, targets = 4, 5, 3
    p0 = rng.uniform(0.3, 0.7, targets)
    y0 = rng.dirichlet(np.ones(K), targets)
    z0 = rng.dirichlet(np.ones(M), targets)
    steps = np.arange(0, 21, 2.0)
    ps = []
    for i in range(targets):
        sol = solve(GRPO(eta=1.0), make_state(p0[i], y0[i], z0[i]), t1=0.37 * steps[-1],
                    saveat=jnp.asarray(0.37 * steps))
        ps.append(np.asarray(sol.p))
    history = [{"step": int(s), "p": float(np.mean([p[j] for p in ps])),
                "p_per_target": p0.tolist(), "y_per_target": y0.tolist(),
                "z_per_target": z0.tolist()} for j, s in enumerate(steps)]
    c = fit_time_scale(history, K)
    assert c == pytest.approx(0.37, rel=0.01)
    pred = predict(history[0], K, steps, method="grpo", time_scale=c)
    np.testing.assert_allclose(pred["p"], [h["p"] for h in history], atol=2e-3)


@pytest.mark.parametrize("kw, match", [
    ({"method": "ppo"}, "unknown method 'ppo'"),
    ({"group_size": 1}, "group_size must be an integer >= 2"),
    ({"eta": float("nan")}, "eta must be a finite number > 0"),
    ({"eps_high": 1.5}, "eps_high must lie in"),
    ({"delta_fn": 0.6, "delta_fp": 0.5}, "delta_fn \\+ delta_fp"),
    ({"prompts_per_step": 6, "grad_accum": 4}, "multiple of grad_accum"),
    ({"pass_k": 32}, "pass_k = 32 must be <= group_size"),
])
def test_bad_config_names_the_value(kw, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kw)


def test_old_names_lr_and_scale_are_refused():
    """``lr`` and ``scale`` (0.x names of ``eta`` and ``time_scale``) are gone: refused."""
    with pytest.raises(TypeError, match="lr"):
        TrainConfig(lr=2e-3)
    with pytest.raises(ValueError, match="lr"):
        TrainConfig.from_dict({"lr": 2e-3})
    with pytest.raises(TypeError, match="scale"):
        predict({}, 3, [0.0], scale=0.5)

def test_task_bad_input():
    with pytest.raises(ValueError, match="targets must be digits"):
        ArithmeticTask(targets=(0, 12))
    with pytest.raises(ValueError, match="family_weights"):
        ArithmeticTask(family_weights=(1.0, 0.0))


def test_warm_start_batch_frequencies():
    task = ArithmeticTask(p_wrong=0.3, family_weights=(0.5, 0.3, 0.15, 0.05))
    rng = random.Random(0)
    seqs = task.warm_start_batch(4000, rng)
    labels = np.asarray([task.label(s[1] - DIGIT0, s[3:]) for s in seqs])
    assert seqs[0][:3] == [BOS, seqs[0][1], EQ]
    correct = labels[:, 0] == 1
    assert abs(1 - correct.mean() - 0.3) < 4 * np.sqrt(0.21 / 4000)
    fam = np.bincount(labels[correct, 1], minlength=4) / correct.sum()
    np.testing.assert_allclose(fam, [0.5, 0.3, 0.15, 0.05], atol=0.035)
