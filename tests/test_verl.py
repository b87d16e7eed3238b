"""The verl adapter: the lab's advantages as a verl advantage estimator, looked up
through verl's own registry, and Listing 1's rarity bonus behind verl's batch reward interface.

The tests that need verl are skipped, with the reason, when ``import verl`` fails; the rest (the
estimator object called as verl calls it, the rarity bonus, the refusals) run without it."""

import asyncio
import inspect
import subprocess
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the verl adapter needs the llm extra (torch)")

from schedule_files import schedule_file  # noqa: E402

from simplexlab.llm import (  # noqa: E402
    VerlEstimator,
    rarity_bonus,
    score_with_mode,
    split_scores,
    with_mode_in_score,
    with_rarity_bonus,
)
from simplexlab.llm import advantages as bridge_advantages  # noqa: E402
from simplexlab.llm import register_verl as register  # noqa: E402
from simplexlab.llm import unregister_verl as unregister  # noqa: E402
from simplexlab.llm import verl_compute_advantage as compute_advantage  # noqa: E402
from simplexlab.shaping import GainSchedule, Groups  # noqa: E402
from simplexlab.shaping import advantages as lab_advantages  # noqa: E402

#: a constant gain: all-correct groups get a (non-zero) bonus too
SCHED = GainSchedule(kind="constant", gain=1.0, neutralize=True, B_max=5.0)
G = 4
T = 6  # response length (padded)

# three prompts x G responses, interleaved in the batch as verl's shuffling/balancing may leave
# them: prompt "a" mixed, "b" all correct (two modes), "c" all wrong
UID = np.array(["a", "b", "c", "a", "b", "c", "a", "b", "c", "a", "b", "c"], dtype=object)
SCORE = np.array([1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0], dtype=np.float32)
MODE = np.array([0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 2], dtype=np.int64)
LENGTH = np.array([6, 1, 3, 2, 5, 6, 4, 2, 1, 3, 6, 5])  # valid response tokens


def _batch():
    """verl's tensors: the score at each response's last valid token (as verl's reward managers
    place it), a response mask of varying length."""
    n = len(UID)
    mask = (torch.arange(T)[None, :] < torch.as_tensor(LENGTH)[:, None]).to(torch.int64)
    rewards = torch.zeros(n, T)
    rewards[torch.arange(n), torch.as_tensor(LENGTH) - 1] = torch.as_tensor(SCORE)
    return rewards, mask


def _expected(method="g2rpo", schedule=SCHED, step=0, modes=MODE):
    """The lab's advantages per response (batch order), from the bridge on (P, G) groups."""
    order = np.array([np.flatnonzero(UID == u) for u in ("a", "b", "c")])
    r = torch.as_tensor(SCORE[order])
    m = None if modes is None else torch.as_tensor(modes[order].astype(np.int32))
    C = max(G, int(MODE.max()) + 1)
    lab = bridge_advantages(r, m, method=method, schedule=schedule, step=step,
                            num_clusters=C if m is not None else None)
    out = np.empty(len(UID))
    out[order.reshape(-1)] = lab.numpy().reshape(-1)
    return out


def _check_broadcast(adv, per_seq, mask):
    assert adv.shape == mask.shape
    np.testing.assert_array_equal(adv.numpy(), (per_seq[:, None] * mask.numpy()).astype(
        adv.numpy().dtype))


# ---- without verl -------------------------------------------------------------------------------

def test_importing_the_adapter_does_not_import_verl():
    code = ("import sys, simplexlab.llm, simplexlab.llm._verl; "
            "assert 'verl' not in sys.modules, 'verl imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_estimator_is_the_lab_rule_over_groups_and_masks():
    rewards, mask = _batch()
    est = VerlEstimator("g2rpo", schedule=SCHED)
    adv, ret = est(token_level_rewards=rewards, response_mask=mask, index=UID, config=None,
                   mode_ids=MODE)
    per_seq = _expected()
    _check_broadcast(adv, per_seq, mask)
    assert ret is adv
    # the all-correct group "b" gets the within-good bonus only (its z-score is 0), the
    # all-wrong group "c" nothing; the bridge's numbers are the package's rule
    assert np.all(per_seq[UID == "c"] == 0) and np.any(per_seq[UID == "b"] != 0)
    order = np.array([np.flatnonzero(UID == u) for u in ("a", "b", "c")])
    pkg = lab_advantages("g2rpo", Groups(SCORE[order].astype(float), MODE[order]),
                         schedule=SCHED, num_clusters=G)
    np.testing.assert_allclose(per_seq[order], np.asarray(pkg), rtol=1e-6, atol=1e-6)
    assert est.step == 1 and est.last["step"] == 0


def test_estimator_mode_free_methods_and_step_counter():
    rewards, mask = _batch()
    est = VerlEstimator("rloo")
    adv, _ = est(rewards, mask, UID)  # no mode ids needed
    _check_broadcast(adv, _expected("rloo", modes=None), mask)
    ramp = GainSchedule(kind="constant", gain=2.0, ramp_steps=4, B_max=5.0)
    est = VerlEstimator("g2rpo", schedule=ramp)
    for step in range(3):  # the warm-up follows the estimator's own count of calls
        adv, _ = est(rewards, mask, UID, non_tensor_batch={"mode_id": MODE})
        _check_broadcast(adv, _expected(schedule=ramp, step=step), mask)
    adv, _ = est(rewards, mask, UID, mode_ids=MODE, step=10)
    _check_broadcast(adv, _expected(schedule=ramp, step=10), mask)


def test_estimator_refuses_bad_groups_and_missing_modes():
    rewards, mask = _batch()
    est = VerlEstimator("g2rpo", schedule=SCHED)
    uneven = UID.copy()
    uneven[0] = "b"  # "a" has 3 responses, "b" 5
    with pytest.raises(ValueError, match="unequal size"):
        est(rewards, mask, uneven, mode_ids=MODE)
    with pytest.raises(ValueError, match="G >= 2"):
        est(rewards, mask, np.arange(len(UID)), mode_ids=MODE)
    with pytest.raises(ValueError, match="index"):
        est(rewards, mask, None, mode_ids=MODE)
    with pytest.raises(ValueError, match="mode id per response"):
        est(rewards, mask, UID)
    with pytest.raises(ValueError, match="11 mode ids for 12"):
        est(rewards, mask, UID, mode_ids=MODE[:-1])
    with pytest.raises(ValueError, match=r"\{0, 1\}|0 or 1|binary|in \{"):
        est(rewards * 0.5, mask, UID, mode_ids=MODE)
    with pytest.raises(ValueError, match="differ in shape"):
        est(rewards, mask[:, :-1], UID, mode_ids=MODE)
    with pytest.raises(ValueError, match="progrpo"):
        VerlEstimator("progrpo")


def test_rarity_bonus_is_the_lab_bonus():
    bonus = rarity_bonus(SCORE, MODE, list(UID), schedule=SCHED)
    np.testing.assert_array_equal(bonus, _expected("g2rpo_bonus"))
    # Listing 1 (g): every incorrect response of a prompt gets the same neutralizer
    assert len(set(bonus[(UID == "a") & (SCORE == 0)])) == 1
    with pytest.raises(ValueError, match="unequal size"):
        rarity_bonus(SCORE[:-1], MODE[:-1], list(UID[:-1]), schedule=SCHED)


def test_failed_schedule_refused_unless_forced(tmp_path):
    bad = schedule_file(tmp_path / "bad.json", SCHED, passed=False)
    good = schedule_file(tmp_path / "good.json", SCHED, passed=True)
    with pytest.raises(ValueError, match="bad.json.*failed verification"):
        rarity_bonus(SCORE, MODE, list(UID), schedule=bad)
    with pytest.raises(ValueError, match="failed verification"):
        with_rarity_bonus(lambda *a: 1.0, mode_fn=lambda *a: MODE, schedule=bad)
    with pytest.warns(UserWarning, match="force=True"):
        forced = rarity_bonus(SCORE, MODE, list(UID), schedule=bad, force=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(rarity_bonus(SCORE, MODE, list(UID), schedule=good),
                                      forced)


def _score(data_source, solution_str, ground_truth, extra_info, **kw):
    return float(solution_str.split()[-1] == str(ground_truth))


def _modes(solution_strs, extra_infos, scores):
    return [int(s.split()[0]) for s in solution_strs]


def _texts():
    """A response text per row: ``"<mode> ... <answer>"``; the ground truth is 7."""
    return [f"{m} x {7 if s else 3}" for m, s in zip(MODE, SCORE, strict=True)]


def test_mode_ids_ride_in_the_score_and_come_back():
    """score = reward + 4 · mode id, read back exactly in float32 over the encoding's range;
    what it cannot carry is refused, naming the value."""
    rewards = [-1.0, 0.0, 0.5, 1.0, 2.0, 0.25 + 2**-5]
    ids = [0, 1, 7, 1023, 65535]
    pairs = [(r, m) for r in rewards for m in ids]
    enc = torch.tensor([score_with_mode(r, m) for r, m in pairs], dtype=torch.float32)
    np.testing.assert_array_equal(enc.numpy(), np.float32([r + 4 * m for r, m in pairs]))
    back_r, back_m = split_scores(enc)
    np.testing.assert_array_equal(back_r.numpy(), np.float32([r for r, _ in pairs]))
    np.testing.assert_array_equal(back_m, [m for _, m in pairs])
    # a plain reward (no mode written) reads as mode 0
    np.testing.assert_array_equal(split_scores(torch.tensor([0.0, 1.0]))[1], [0, 0])
    for r, m, match in [(2.5, 0, "outside"), (-1.5, 0, "outside"), (float("nan"), 0, "outside"),
                        (0.0, -1, "mode id"), (0.0, 65536, "mode id"), (0.0, 1.0, "mode id"),
                        (0.3, 65535, "does not survive float32")]:
        with pytest.raises(ValueError, match=match):
            score_with_mode(r, m)
    with pytest.raises(ValueError, match="finite"):
        split_scores(torch.tensor([1.0, float("inf")]))
    with pytest.raises(ValueError, match="below -1"):
        split_scores(torch.tensor([-2.0]))


def _verifier(data_source, solution_str, ground_truth, extra_info, **kwargs):
    """A verifier as verl's reward loop calls a custom reward function (keywords)."""
    return {"score": float(solution_str.endswith(str(ground_truth))), "length": len(solution_str)}


def _first_word(solution_str, ground_truth, extra_info):
    return "method-" + solution_str.split()[0]  # a string label: hashed to a mode id


def test_reward_function_writes_the_mode_into_the_score():
    fn = with_mode_in_score(_verifier, _first_word)
    rows = [fn(data_source="src", solution_str=t, ground_truth=7, extra_info={}) for t in _texts()]
    r, m = split_scores(torch.tensor([row["score"] for row in rows]))
    np.testing.assert_array_equal(r.numpy(), SCORE)
    assert [row["acc"] for row in rows] == list(SCORE)  # the plain reward, for verl's logs
    assert [row["mode_id"] for row in rows] == list(m) and all(row["length"] for row in rows)
    # the same label, the same id; different labels, different ids (this batch's three)
    assert len({(int(a), int(b)) for a, b in zip(MODE, m, strict=True)}) == len(set(MODE))
    with pytest.raises(ValueError, match="mode_fn must be callable"):
        with_mode_in_score(_verifier, "first word")
    # an async verifier gives a coroutine function (what verl's reward loop awaits)
    async def verifier(**kw):
        return _verifier(**kw)

    afn = with_mode_in_score(verifier, _first_word)
    assert inspect.iscoroutinefunction(afn) and not inspect.iscoroutinefunction(fn)
    arow = asyncio.run(afn(data_source="src", solution_str=_texts()[0], ground_truth=7))
    assert arow == rows[0]


def _encoded_batch(hashed=True):
    """The test batch as verl's default trainer holds it: each response's reward score (with its
    mode id written in) at its last valid token."""
    fn = with_mode_in_score(_verifier, _first_word if hashed else
                            (lambda s, g, e: int(s.split()[0])))
    rewards, mask = _batch()
    scores = torch.tensor([fn(data_source="src", solution_str=t, ground_truth=7)["score"]
                           for t in _texts()])
    rewards[torch.arange(len(UID)), torch.as_tensor(LENGTH) - 1] = scores
    return rewards, mask


@pytest.mark.parametrize("hashed", [True, False])
def test_estimator_reads_modes_out_of_the_scores(hashed):
    """With ``modes_in_scores=True`` the estimator given only the encoded token rewards, the
    mask and the uids -- all that verl's default trainer passes -- computes the lab's G²RPO."""
    rewards, mask = _encoded_batch(hashed)
    est = VerlEstimator("g2rpo", schedule=SCHED, modes_in_scores=True)
    adv, _ = est(token_level_rewards=rewards, response_mask=mask, index=UID, config=None)
    _check_broadcast(adv, _expected(), mask)
    np.testing.assert_array_equal(est.last["rewards"].numpy(),
                                  SCORE[np.array([np.flatnonzero(UID == u) for u in "abc"])])
    # without the flag the estimator finds no mode ids (and would read the floats as rewards)
    with pytest.raises(ValueError):
        VerlEstimator("g2rpo", schedule=SCHED)(rewards, mask, UID)
    with pytest.raises(ValueError, match="use_kl_in_reward"):
        est(rewards, mask, UID, config={"use_kl_in_reward": True})
    with pytest.raises(ValueError, match="one of them"):
        VerlEstimator("g2rpo", schedule=SCHED, modes_in_scores=True, mode_fn=lambda i, s: s)


def test_batch_reward_function_adds_listing1_bonus():
    fn = with_rarity_bonus(_score, mode_fn=_modes, schedule=SCHED)
    n = len(UID)
    extra = [{"index": u, "split": "train"} for u in UID]
    rows = fn(["src"] * n, _texts(), [7] * n, extra)
    assert [r["score"] for r in rows] == list(SCORE.astype(float))
    np.testing.assert_array_equal([r["rarity_bonus"] for r in rows], _expected("g2rpo_bonus"))
    assert [r["mode_id"] for r in rows] == list(MODE)
    val = fn(["src"] * n, _texts(), [7] * n, [{"index": u, "split": "test"} for u in UID])
    assert all(r["rarity_bonus"] == 0.0 for r in val)
    with pytest.raises(ValueError, match="mixes splits"):
        fn(["src"] * n, _texts(), [7] * n, [{"index": u, "split": "train"} for u in UID[:-1]]
           + [{"index": UID[-1], "split": "test"}])
    with pytest.raises(ValueError, match="extra_info\\['index'\\]"):
        fn(["src"] * n, _texts(), [7] * n, [{}] * n)
    with pytest.raises(ValueError, match="unequal size"):
        fn(["src"] * (n - 1), _texts()[:-1], [7] * (n - 1), extra[:-1])


# ---- with verl ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def verl():
    return pytest.importorskip(
        "verl", reason="verl is not importable here: it is the opt-in verl extra (`pip install "
        "verl==0.9.1` pins transformers<5.11 and adds ray, ~600 MB), tested in its own CI step")


@pytest.fixture
def core(verl):
    from verl.trainer.ppo import core_algos

    yield core_algos
    for name in [k for k, v in core_algos.ADV_ESTIMATOR_REGISTRY.items()
                 if isinstance(v, VerlEstimator)]:
        unregister(name)


def _dataproto(verl, modes=True):
    rewards, mask = _batch()
    non = {"uid": UID.copy()}
    if modes:
        non["mode_id"] = MODE.copy()
    return verl.DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": mask}, non_tensors=non)


def test_registered_estimator_through_verls_registry(verl, core, tmp_path):
    est = register(schedule_file(tmp_path / "s.json", SCHED, passed=True))
    assert est.name == "simplexlab_g2rpo"
    fn = core.get_adv_estimator_fn("simplexlab_g2rpo")  # verl's own lookup
    assert fn is est
    data = _dataproto(verl)
    # the keyword arguments verl 0.9.1's ray_trainer.compute_advantage builds for a registered
    # estimator, plus the DataProto's non_tensor_batch (which carries the mode ids)
    adv, ret = fn(token_level_rewards=data.batch["token_level_rewards"],
                  response_mask=data.batch["response_mask"], config=None,
                  index=data.non_tensor_batch["uid"], non_tensor_batch=data.non_tensor_batch)
    _check_broadcast(adv, _expected(), data.batch["response_mask"])
    # the DataProto path
    data = compute_advantage(_dataproto(verl), step=0)
    _check_broadcast(data.batch["advantages"], _expected(), data.batch["response_mask"])
    assert torch.equal(data.batch["returns"], data.batch["advantages"])


def test_register_refusals(verl, core, tmp_path):
    bad = schedule_file(tmp_path / "bad.json", SCHED, passed=False)
    with pytest.raises(ValueError, match="failed verification"):
        register(bad)
    assert "simplexlab_g2rpo" not in core.ADV_ESTIMATOR_REGISTRY
    with pytest.warns(UserWarning):
        register(bad, force=True)
    register(SCHED)  # our own name: replaced
    with pytest.raises(ValueError, match="already registered"):
        register(SCHED, name="grpo")  # verl's own estimator is never replaced
    assert core.get_adv_estimator_fn("grpo") is core.compute_grpo_outcome_advantage
    with pytest.raises(ValueError, match="g2rpo' only"):
        register(SCHED, method="grpo")
    with pytest.raises(ValueError, match="Unknown advantage estimator"):
        register(SCHED, name="simplexlab_x", base="no_such_estimator")


def test_g2rpo_on_top_of_verls_grpo(verl, core):
    register(SCHED, base="grpo", name="simplexlab_grpo_plus_bonus")
    data = _dataproto(verl)
    data = compute_advantage(data, "simplexlab_grpo_plus_bonus", step=0)
    rewards, mask = _batch()
    grpo, _ = core.compute_grpo_outcome_advantage(rewards, mask, UID)
    np.testing.assert_allclose(data.batch["advantages"].numpy(),
                               grpo.numpy() + _expected("g2rpo_bonus")[:, None] * mask.numpy(),
                               rtol=1e-6, atol=1e-6)


def test_verls_own_compute_advantage(verl, core):
    ray_trainer = pytest.importorskip(
        "verl.trainer.ppo.ray_trainer",
        reason="verl==0.9.1 alone does not install its trainer's imports (cachetools, fastapi, "
        "uvicorn: the verl[verl-core] extra)")
    from verl.trainer.config import AlgoConfig

    register(name="simplexlab_rloo", method="rloo")
    register(SCHED)
    data = ray_trainer.compute_advantage(_dataproto(verl), adv_estimator="simplexlab_rloo",
                                         config=AlgoConfig())
    _check_broadcast(data.batch["advantages"], _expected("rloo", modes=None),
                     data.batch["response_mask"])
    # verl passes no non_tensor_batch to a registered estimator: G²RPO says how to get modes
    with pytest.raises(ValueError, match="compute_advantage"):
        ray_trainer.compute_advantage(_dataproto(verl), adv_estimator="simplexlab_g2rpo",
                                      config=AlgoConfig())


def test_verls_batch_reward_manager(verl):
    from verl.workers.reward_manager.batch import BatchRewardManager

    class Tok:  # decodes the ids this test encodes: one character per id
        def decode(self, ids, skip_special_tokens=True):
            return "".join(chr(int(i)) for i in ids)

    n = len(UID)
    texts = _texts()
    L = max(map(len, texts))
    responses = torch.zeros(n, L, dtype=torch.int64)
    attn = torch.zeros(n, 2 + L, dtype=torch.int64)
    attn[:, :2] = 1
    for i, t in enumerate(texts):
        responses[i, :len(t)] = torch.tensor([ord(c) for c in t])
        attn[i, 2:2 + len(t)] = 1
    data = verl.DataProto.from_dict(
        tensors={"prompts": torch.ones(n, 2, dtype=torch.int64), "responses": responses,
                 "attention_mask": attn},
        non_tensors={"data_source": np.array(["src"] * n, dtype=object),
                     "reward_model": np.array([{"ground_truth": 7}] * n, dtype=object),
                     "extra_info": np.array([{"index": u, "split": "train"} for u in UID],
                                            dtype=object)})
    fn = with_rarity_bonus(_score, mode_fn=_modes, schedule=SCHED)
    out = BatchRewardManager(Tok(), num_examine=0, compute_score=fn)(data, return_dict=True)
    info = out["reward_extra_info"]
    np.testing.assert_array_equal(info["rarity_bonus"], _expected("g2rpo_bonus"))
    assert list(info["mode_id"]) == list(MODE)
    lengths = [len(t) for t in texts]
    np.testing.assert_array_equal(out["reward_tensor"][torch.arange(n), torch.tensor(lengths) - 1],
                                  SCORE)


@pytest.mark.parametrize("name,norm,rule", [
    ("grpo", True, "grpo_sample_std"),  # verl's epsilon 1e-6 is the rule's default std_eps
    ("grpo", False, "dr_grpo"),
    ("grpo_vectorized", True, "grpo_sample_std"),
    ("rloo", True, "rloo"),
    ("rloo_vectorized", True, "rloo"),
])
def test_verls_own_estimators_are_the_labs_rules(core, name, norm, rule):
    """verl's built-in estimators, looked up in verl's registry and called as its trainer calls
    them, on groups that are mixed, all correct and all wrong, interleaved in the batch: each is
    a rule of the lab (per response, times the response mask); the lab's ``grpo`` (population
    std) is not verl's ``grpo``."""
    from verl.trainer.config import AlgoConfig

    rewards, mask = _batch()
    fn = core.get_adv_estimator_fn(name)
    cfg = AlgoConfig(norm_adv_by_std_in_grpo=norm)
    adv, _ = fn(token_level_rewards=rewards, response_mask=mask, index=UID.copy(),
                norm_adv_by_std_in_grpo=norm, config=cfg)
    want = _expected(rule, modes=None)
    np.testing.assert_allclose(adv.numpy(), want[:, None] * mask.numpy(), rtol=1e-6, atol=1e-6)
    if rule == "grpo_sample_std":
        assert np.abs(_expected("grpo", modes=None) - want).max() > 1e-2


def test_verls_default_trainer_path_carries_mode_ids(verl, core):
    """verl 0.9.1's default (v1) trainer, as far as it runs on a CPU: its reward loop's
    ``NaiveRewardManager.run_single`` scores each response with the lab's reward function, the
    score goes to the response's last token of ``rm_scores`` (as ``agent_loop.py`` puts it), and
    the v1 trainer's own advantage step (``compute_advantage_for_multi_trajectories``, what
    ``_compute_advantage`` calls) runs the estimator registered with ``modes_in_scores=True``:
    the result is the lab's G²RPO, and G²RPO on top of verl's GRPO."""
    v1 = pytest.importorskip(
        "verl.trainer.ppo.v1.utils",
        reason="verl's v1 trainer needs TransferQueue (pip install TransferQueue), installed in "
        "the CI's verl environment")
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
    from verl.trainer.config import AlgoConfig

    class Tok:  # decodes the ids this test encodes: one character per id
        def decode(self, ids, skip_special_tokens=True):
            return "".join(chr(int(i)) for i in ids)

    manager = NaiveRewardManager(None, Tok(), with_mode_in_score(_verifier, _first_word))
    n = len(UID)
    rm_scores = torch.zeros(n, T)
    extra = []
    for i, text in enumerate(_texts()):
        ids = torch.tensor([ord(c) for c in text])
        item = verl.DataProto.from_dict(
            tensors={"responses": ids[None], "attention_mask": torch.ones(1, 2 + len(ids),
                                                                          dtype=torch.int64)},
            non_tensors={"data_source": np.array(["src"], dtype=object),
                         "reward_model": np.array([{"ground_truth": 7}], dtype=object),
                         "extra_info": np.array([{}], dtype=object)})
        out = manager.loop.run_until_complete(manager.run_single(item))  # the manager's loop
        rm_scores[i, LENGTH[i] - 1] = out["reward_score"]  # agent_loop: rm_scores[-1] = score
        extra.append(out["reward_extra_info"])
    assert [e["acc"] for e in extra] == list(SCORE)
    _, mask = _batch()
    keys = [f"{u}_0_0" for u in UID]  # the v1 batch keys: {uid}_{session}_{index}
    for name, base, want in [("simplexlab_g2rpo", None, None),
                             ("simplexlab_grpo_plus_bonus", "grpo", "grpo")]:
        register(SCHED, name=name, base=base, modes_in_scores=True)
        data = verl.DataProto.from_dict(
            tensors={"token_level_scores": rm_scores.clone(),
                     "token_level_rewards": rm_scores.clone(), "response_mask": mask},
            non_tensors={"uid": UID.copy()})
        data = v1.compute_advantage_for_multi_trajectories(
            data, batch_keys=keys, adv_estimator=name, num_repeat=G, config=AlgoConfig())
        if want is None:
            _check_broadcast(data.batch["advantages"], _expected(), mask)
        else:
            plain, _ = _batch()
            grpo, _ = core.compute_grpo_outcome_advantage(plain, mask, UID)
            np.testing.assert_allclose(
                data.batch["advantages"].numpy(),
                grpo.numpy() + _expected("g2rpo_bonus")[:, None] * mask.numpy(),
                rtol=1e-6, atol=1e-6)


# ---- verl's estimators through the advantage oracle ---------------------------------------------

def test_the_oracle_on_verls_grpo(core):
    """verl's ``grpo``, looked up in its registry and called as its ``compute_advantage`` calls
    it, is the lab's ``grpo_sample_std`` on every check of whole groups, and a response with an
    empty response mask still votes in its group's mean and std (verl PR #6452's class)."""
    from simplexlab.llm._frameworks import verl_function
    from simplexlab.verify import check_advantages

    report = check_advantages(verl_function("grpo"), method="grpo_sample_std",
                              convention="verl")
    assert report.failed == ["masked rows", "one valid rollout"], report.summary()
    assert "rejected rows enter their group's statistics as rewards 0" in \
        report.deviations[0].why
    assert report.inferred.rule == ("grpo_sample_std", {"std_eps": 1e-6})


@pytest.mark.slow
def test_the_committed_verl_rows_are_a_fresh_run(verl):
    """The verl rows of docs/llm/take-a-rule.md's table (tests/framework_table.py) are a fresh
    run of verl's estimators through the oracle."""
    from framework_table import committed_rows, fresh_rows

    fresh = fresh_rows("verl")
    assert committed_rows("verl") == fresh, (
        f"the verl {verl.__version__} rows differ from a fresh run: run `python "
        "tests/framework_table.py --write` in the verl environment and review the change")
