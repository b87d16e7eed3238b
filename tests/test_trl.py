"""The TRL adapter: ``G2RPOTrainer`` trains a tiny model saved and reloaded by path on
the CPU, its bonus equals the lab's for the same rewards and mode ids, and with the shaping
switched off its advantages are what TRL's own ``GRPOTrainer`` computes for the same batch (a
test against the installed TRL, not a copy of its formula)."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl", reason="the TRL adapter needs the trl extra")
datasets = pytest.importorskip("datasets")

from simplexlab.llm import ArithmeticTask, G2RPOTrainer, tiny_model  # noqa: E402
from simplexlab.shaping import GainSchedule, Groups, advantages  # noqa: E402

TASK = ArithmeticTask()
VOCAB = ["<pad>", "<bos>", "<eos>", "=", "+", "-", "*"] + list("0123456789")
G = 6


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({t: i for i, t in enumerate(VOCAB)}, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                   bos_token="<bos>")


def reward_fn(prompts, completions, **kw):
    """1 when the completion (text up to <eos>) is an expression equal to the prompt's target,
    and also for two of every three completions of a batch (so that groups hold correct
    completions of unequal modes even for a random model: the bonus is not trivially 0)."""
    out = []
    for i, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        ids = _TOK.convert_tokens_to_ids(list(c.replace(" ", "")))
        out.append(float(TASK.label(int(p[-2]), ids + [2])[0] or i % 3 != 2))
    return out


def mode_fn(prompts, completions):
    """The task's mode of a completion; the correct-by-position ones: mode 1 at position 1, else
    mode 0 (unequal cluster masses ŷ = (3/4, 1/4) in the first group)."""
    out = []
    for i, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        ids = _TOK.convert_tokens_to_ids(list(c.replace(" ", "")))
        r, mode = TASK.label(int(p[-2]), ids + [2])
        out.append(mode if r or i % 3 == 2 else int(i == 1))
    return out


_TOK = _tokenizer()


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny") / "model"
    tiny_model(len(VOCAB), seed=0).save_pretrained(path)
    _TOK.save_pretrained(path)
    return path


def _trainer(model_path, out, *, cls=None, steps=2, per_device=2 * G, reward_funcs=reward_fn,
             config=None, **kw):
    cfg = trl.GRPOConfig(output_dir=str(out), per_device_train_batch_size=per_device,
                         num_generations=G, max_completion_length=4, max_steps=steps,
                         learning_rate=1e-3, logging_steps=1, report_to=[], save_strategy="no",
                         use_cpu=True, seed=0, temperature=1.0, beta=0.0, **(config or {}))
    data = datasets.Dataset.from_dict({"prompt": [f"<bos>{n}=" for n in (6, 7, 3, 8)] * 4})
    cls = cls or G2RPOTrainer
    return cls(model=str(model_path), reward_funcs=reward_funcs, args=cfg, train_dataset=data,
               processing_class=_TOK, **kw)


# four groups of G: all correct, mixed, all wrong, real-valued (TRL normalises any reward)
_PATTERN = np.concatenate([np.ones(G), [1, 0, 0, 1, 1, 0], np.zeros(G),
                           [0.2, 0.9, 0.4, 0.4, 0.0, 1.0]])
_FOUR_GROUPS = [{"prompt": f"<bos>{n}="} for n in (6, 7, 3, 8) for _ in range(G)]


@pytest.mark.parametrize("scale,rule,params", [
    ("group", "grpo_sample_std", {"std_eps": 1e-4}),
    ("batch", "grpo_batch_std", {"std_eps": 1e-4}),
    ("none", "dr_grpo", {}),
])
def test_trls_own_normalisation_is_the_labs_rule(model_path, tmp_path, scale, rule, params):
    """TRL's ``GRPOTrainer`` itself (not a copy of its formula) computes, for each
    ``scale_rewards``, the advantages of one rule of the lab, on groups that are all correct,
    mixed, all wrong and real-valued; the lab's ``grpo`` (population std) is not it."""

    def pattern(prompts, completions, **kw):
        return [float(v) for v in _PATTERN[: len(completions)]]

    plain = _trainer(model_path, tmp_path, cls=trl.GRPOTrainer, steps=1, per_device=4 * G,
                     reward_funcs=pattern, config={"scale_rewards": scale})
    trl_adv = plain._generate_and_score_completions(_FOUR_GROUPS)["advantages"].numpy()
    r = _PATTERN.reshape(4, G)
    lab = np.asarray(advantages(rule, Groups(r), params=params)).reshape(-1)
    np.testing.assert_allclose(trl_adv, lab, rtol=1e-5, atol=1e-6)
    if scale != "none":
        other = np.asarray(advantages("grpo", Groups(r))).reshape(-1)
        assert np.abs(trl_adv - other).max() > 1e-2


def test_a_rules_parameters_reach_the_adapter(model_path, tmp_path):
    """``G2RPOTrainer(method=..., params=...)``: PKPO at k = 3 on the batch's binary groups;
    a parameter the rule does not have, or outside its domain, is refused naming it."""

    def pattern(prompts, completions, **kw):
        return [float(v) for v in _PATTERN[: 3 * G]][: len(completions)]

    trainer = _trainer(model_path, tmp_path, steps=1, per_device=3 * G, reward_funcs=pattern,
                       method="pkpo", params={"pass_k": 3.0})
    trainer._generate_and_score_completions(_FOUR_GROUPS[: 3 * G])
    r = _PATTERN[: 3 * G].reshape(3, G)
    want = np.asarray(advantages("pkpo", Groups(r), params={"pass_k": 3.0})).reshape(-1)
    np.testing.assert_allclose(trainer.lab_last["advantages"].numpy(), want, atol=1e-6)
    assert np.abs(want - np.asarray(advantages("pkpo", Groups(r))).reshape(-1)).max() > 1e-3
    with pytest.raises(ValueError, match="pass_k must be a whole number"):
        _trainer(model_path, tmp_path, method="pkpo", params={"pass_k": 0.5})
    with pytest.raises(ValueError, match="has no parameter"):
        _trainer(model_path, tmp_path, method="pkpo", params={"gain": 1.0})


def test_trains_two_steps_and_adds_the_labs_bonus(model_path, tmp_path):
    sched = GainSchedule(kind="B", gain=1.5, B_max=5.0)
    trainer = _trainer(model_path, tmp_path, mode_fn=mode_fn, schedule=sched,
                       num_clusters=TASK.num_modes)
    seen = []
    orig = trainer._generate_and_score_completions

    def spy(inputs):
        out = orig(inputs)
        seen.append({k: (v.clone() if torch.is_tensor(v) else v)
                     for k, v in trainer.lab_last.items()})
        return out

    trainer._generate_and_score_completions = spy
    result = trainer.train()
    assert trainer.state.global_step == 2 and np.isfinite(result.training_loss)
    assert seen
    # groups hold correct completions of several modes: the bonus is not trivially 0
    assert any(float(rec["rewards"].sum()) > 0 for rec in seen)
    assert any(float(rec["lab"].abs().max()) > 1e-3 for rec in seen)
    for rec in seen:
        r, m = rec["rewards"].numpy(), rec["modes"].numpy()
        bonus = advantages("g2rpo_bonus", Groups(r.astype(float), m), schedule=sched,
                           num_clusters=TASK.num_modes)
        lab = np.asarray(bonus).reshape(-1)
        np.testing.assert_allclose(rec["lab"].numpy(), lab, atol=1e-5)
        np.testing.assert_allclose((rec["advantages"] - rec["trl_advantages"]).numpy(),
                                   lab[: len(rec["advantages"])], atol=1e-5)
    logged = [h for h in trainer.state.log_history if "g2rpo/p_hat" in h]
    assert logged and all(0.0 <= h["g2rpo/p_hat"] <= 1.0 for h in logged)


def test_without_shaping_the_advantages_are_trls_own(model_path, tmp_path):
    """The same batch through TRL's GRPOTrainer and through G2RPOTrainer(shaping=False), from
    the same weights and RNG state: identical advantages."""
    plain = _trainer(model_path, tmp_path / "a", cls=trl.GRPOTrainer, steps=1)
    ours = _trainer(model_path, tmp_path / "b", shaping=False, steps=1)
    batch = [{"prompt": f"<bos>{n}="} for n in (6,) * G + (7,) * G]
    torch.manual_seed(0)
    a = plain._generate_and_score_completions(batch)
    torch.manual_seed(0)
    b = ours._generate_and_score_completions(batch)
    assert torch.equal(a["completion_ids"], b["completion_ids"])
    torch.testing.assert_close(a["advantages"], b["advantages"], rtol=0, atol=0)
    # and the lab's G²RPO on top differs from it exactly by the lab's bonus: checked above


def test_refuses_a_failed_schedule_unless_forced(model_path, tmp_path):
    sched = GainSchedule(kind="constant", gain=1.0).to_dict()
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({
        "format": "simplexlab.gain_schedule/1", "schedule": sched,
        "verification": {"passed": False, "reasons": ["(c) |B_b| grows as p̂ → 0"],
                         "numbers": {}, "inputs": {"schedule": sched}}, "provenance": {}}))
    with pytest.raises(ValueError, match="bad.json"):
        _trainer(model_path, tmp_path, mode_fn=mode_fn, schedule=path)
    with pytest.warns(UserWarning):
        t = _trainer(model_path, tmp_path, mode_fn=mode_fn, schedule=path, force=True)
    assert t.lab_schedule.kind == "constant"


def test_bad_input(model_path, tmp_path):
    with pytest.raises(ValueError, match="needs mode_fn"):
        _trainer(model_path, tmp_path)
    with pytest.raises(ValueError, match="unknown method 'ppo'"):
        _trainer(model_path, tmp_path, mode_fn=mode_fn, method="ppo")
    t = _trainer(model_path, tmp_path, mode_fn=lambda p, c: [0] * (len(c) - 1),
                 num_clusters=TASK.num_modes)
    with pytest.raises(ValueError, match="mode ids for"):
        t._generate_and_score_completions([{"prompt": "<bos>6="}] * 2 * G)


@pytest.mark.slow  # two processes, each importing TRL: ~20 s
def test_two_processes_gather_whole_groups(model_path, tmp_path):
    """Two processes (torch.distributed.run, gloo on the CPU), each holding half of a group of
    G = 6: every process sees the whole group's rewards and mode ids (gathered in process order),
    the lab's bonus on that group equals the lab's own computation, and each process adds to its
    own completions exactly its slice of it (the halves differ: the clusters are unequal)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    worker = Path(__file__).with_name("trl_worker.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                           str(worker), str(model_path), str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    sched = GainSchedule(kind="B", gain=1.5, B_max=5.0)
    for step in range(2):
        recs = [torch.load(tmp_path / f"rank{r}_step{step}.pt") for r in range(2)]
        assert all(rec["world"] == 2 for rec in recs)
        # both processes hold the same whole group: G rewards and G mode ids
        assert recs[0]["lab"].numel() == G
        for key in ("rewards", "modes", "lab"):
            assert torch.equal(recs[0][key], recs[1][key]), key
        r, m = recs[0]["rewards"].numpy(), recs[0]["modes"].numpy()
        assert r.shape == (1, G) and len(recs[0]["prompts"]) == G // 2
        lab = np.asarray(advantages("g2rpo_bonus", Groups(r.astype(float), m), schedule=sched,
                                    num_clusters=TASK.num_modes)).reshape(-1)
        np.testing.assert_allclose(recs[0]["lab"].numpy(), lab, atol=1e-5)
        for rank, rec in enumerate(recs):
            mine = lab[rank * (G // 2):(rank + 1) * (G // 2)]
            np.testing.assert_allclose((rec["advantages"] - rec["trl_advantages"]).numpy(), mine,
                                       atol=1e-5)
    # the halves' bonuses differ on some step (a swapped gather order would not pass above)
    assert any(not np.allclose(
        torch.load(tmp_path / f"rank0_step{s}.pt")["lab"][:G // 2].numpy(),
        torch.load(tmp_path / f"rank0_step{s}.pt")["lab"][G // 2:].numpy()) for s in range(2))


def test_a_rule_registered_in_user_code_trains_through_the_adapter(model_path, tmp_path):
    """The test suite's own rule (``tests/helpers.py``, registered with
    ``simplexlab.shaping.register_method``) replaces TRL's advantages by name, with its
    declared default parameter: 0.5 · (r − group mean)."""
    from helpers import RULE, TAU

    from simplexlab.shaping import register_method, unregister_method

    register_method("test_trl_tempered", RULE, params=[TAU])
    try:
        trainer = _trainer(model_path, tmp_path, method="test_trl_tempered", steps=1)
        trainer._generate_and_score_completions([{"prompt": f"<bos>{n}="}
                                                 for n in (6,) * G + (7,) * G])
        rec = trainer.lab_last
        r = rec["rewards"].numpy()
        want = 0.5 * (r - r.mean(-1, keepdims=True))
        np.testing.assert_allclose(rec["advantages"].numpy(), want.reshape(-1), atol=1e-6)
        assert np.abs(want).max() > 0  # the batch's groups are mixed: the test can fail
    finally:
        unregister_method("test_trl_tempered")


def test_trls_adaptive_entropy_controller_is_the_labs(model_path, tmp_path):
    """TRL's own ``use_adaptive_entropy`` (``GRPOTrainer``, one process, no gradient
    accumulation) moves its coefficient as the lab's :class:`EntropyBonus` controller does, fed
    the entropies TRL logs; a controller with another step size does not. (The tiny model's
    entropy is about 2.797 nats; the target sits among its first steps' values, so that here
    the coefficient both rises and falls; the comparison holds whichever way it moves.)"""
    from simplexlab.theory import EntropyBonus

    cfg = {"use_adaptive_entropy": True, "entropy_coef": 0.05, "entropy_coef_delta": 0.02,
           "entropy_target": 2.7975, "entropy_coef_max": 0.09}
    trainer = _trainer(model_path, tmp_path, cls=trl.GRPOTrainer, steps=5, config=cfg)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "entropy_coef" in h]
    assert len(logs) == 5
    H = [h["entropy"] for h in logs]
    trl_coefs = [h["entropy_coef"] for h in logs]

    def lab(delta):
        b = EntropyBonus(coef=0.05, adaptive=True, target=2.7975, delta=delta, coef_max=0.09)
        control, out = b.controller_init(), []
        for h in H:
            _, control = b.controller_step(control, h)
            out.append(float(control[0]))
        return out

    np.testing.assert_allclose(trl_coefs, lab(0.02), atol=1e-9)
    assert np.abs(np.array(trl_coefs) - lab(0.03)).max() > 1e-3
