"""No setting of the llm layer silently dropped or coerced (issue 57, item 2): booleans are
booleans, counts >= 1 are not replaced by a default, callables are checked at construction,
verifiers return numbers, the encoded verl score is never overwritten, and the verifier's rates
are checked whichever rule reads them. The TRL adapter's checks run before TRL's own
construction, so they are tested without a model or a training step."""

import math

import numpy as np
import pytest
import torch

from simplexlab import llm

pytest.importorskip("trl")


@pytest.mark.parametrize("kwargs, what", [
    ({"num_clusters": 0}, "num_clusters must be an integer >= 1"),
    ({"num_clusters": 2.0}, "num_clusters must be an integer >= 1"),
    ({"shaping": "no"}, "shaping must be True or False"),
    ({"force": "yes"}, "force must be True or False"),
    ({"mode_fn": 3}, "mode_fn must be callable"),
    ({"correct_fn": "x", "mode_fn": lambda p, c: [0] * len(c)}, "correct_fn must be callable"),
])
def test_the_trl_adapter_refuses_a_setting_it_would_drop(kwargs, what):
    """``num_clusters=0`` became the default, ``shaping='no'`` and ``force='yes'`` became True,
    a non-callable ``mode_fn`` failed at the first step: each is refused at construction, before
    TRL's constructor (which would need a model)."""
    kwargs = {"mode_fn": lambda prompts, completions: [0] * len(completions), **kwargs}
    with pytest.raises(ValueError, match=f"G2RPOTrainer: {what}"):
        llm.G2RPOTrainer(**kwargs)


def test_with_mode_in_score_keeps_the_encoded_score():
    """``reward_key='score'`` overwrote the encoded score with the plain reward (the mode id
    lost); the keys must differ from ``score`` and from each other."""
    def verifier(**kw):
        return 1.0

    def mode(*a):
        return 3

    for kw in ({"reward_key": "score"}, {"mode_key": "score"},
               {"reward_key": "m", "mode_key": "m"}, {"reward_key": ""}):
        with pytest.raises(ValueError, match="score|differ|non-empty"):
            llm.with_mode_in_score(verifier, mode, **kw)
    row = llm.with_mode_in_score(verifier, mode)("src", "text", "gt")
    rewards, ids = llm.split_scores(torch.tensor([row["score"]]))
    assert float(rewards[0]) == 1.0 and int(ids[0]) == 3 and row["acc"] == 1.0


def test_split_scores_refuses_a_score_beyond_the_last_mode_id():
    """``split_scores(1e30)`` gave mode id −2⁶³ (an int64 overflow); a score above the largest
    that :func:`score_with_mode` writes carries no mode id."""
    top = llm.score_with_mode(2.0, 2**16 - 1)
    assert int(llm.split_scores(torch.tensor([top]))[1][0]) == 2**16 - 1
    for bad in (1e30, top + 4.0):
        with pytest.raises(ValueError, match="carries no mode id"):
            llm.split_scores(torch.tensor([bad]))


@pytest.mark.parametrize("value", ["1.0", None, [1.0], {"score": "1"}, {"score": None}])
def test_a_verifier_must_return_a_number(value):
    """A verifier returning the string ``'1.0'`` was taken as the reward 1.0."""
    fn = llm.with_mode_in_score(lambda **kw: value, lambda *a: 0)
    with pytest.raises(ValueError, match="compute_score must return a number"):
        fn("src", "text", "gt")


def test_a_verifier_may_return_numbers_of_any_kind():
    for value, reward in ((True, 1.0), (np.float32(0.5), 0.5), (torch.tensor(1.0), 1.0),
                          ({"score": 0, "extra": "kept"}, 0.0)):
        row = llm.with_mode_in_score(lambda v=value, **kw: v, lambda *a: 1)("s", "t", "g")
        assert row["acc"] == reward and isinstance(row["score"], float)


@pytest.mark.parametrize("kw, what", [
    ({"delta_fn": math.nan}, "delta_fn must be finite"),
    ({"delta_fp": "0.1"}, "delta_fp must be a real number"),
    ({"delta_fn": 1.5}, "delta_fn"),
    ({"validate": "no"}, "validate must be True or False"),
])
def test_advantages_check_the_rates_whichever_rule_reads_them(kw, what):
    """``llm.advantages(R, delta_fn=nan)`` with GRPO (which does not read the rates) returned
    advantages; so did ``validate='no'`` (as True)."""
    R = torch.tensor([[1.0, 0.0, 1.0, 0.0]])
    with pytest.raises(ValueError, match=what):
        llm.advantages(R, method="grpo", **kw)
    with pytest.raises(ValueError, match=what):
        llm.group_stats(R, torch.zeros(1, 4, dtype=torch.int32), **kw)
    if "validate" not in kw:  # the verl estimator, at construction
        with pytest.raises(ValueError, match=what):
            llm.VerlEstimator("grpo", **kw)


def test_the_other_adapters_refuse_dropped_settings():
    with pytest.raises(ValueError, match="num_clusters must be an integer >= 1"):
        llm.VerlEstimator("grpo", num_clusters=0)
    with pytest.raises(ValueError, match="modes_in_scores must be True or False"):
        llm.VerlEstimator("g2rpo", modes_in_scores="yes")
    with pytest.raises(ValueError, match="num_clusters must be an integer >= 1"):
        llm.with_rarity_bonus(lambda *a: 1.0, num_clusters=0)
    with pytest.raises(ValueError, match="force must be True or False"):
        llm.with_rarity_bonus(lambda *a: 1.0, force="yes")


@pytest.mark.parametrize("kw, what", [
    ({"seed": -1}, "seed must be an integer in"), ({"seed": 2**70}, "seed must be an integer in"),
    ({"seed": 1.5}, "seed must be an integer in"), ({"betas": 3}, "betas must be two numbers"),
    ({"betas": (0.9, 1.5)}, "betas must be two numbers"),
    ({"mode_threshold": "0.1"}, "mode_threshold must be a number"),
])
def test_train_config_refuses_what_training_would_choke_on(kw, what):
    with pytest.raises(ValueError, match=what):
        llm.TrainConfig(**kw)
