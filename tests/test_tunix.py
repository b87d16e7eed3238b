"""The Tunix adapter: the lab's rules as Tunix advantage estimators, computed by the lab's JAX
implementation (no bridge, no torch in the computation).

Without Tunix (the main environment): the estimator is the lab's rule in Tunix's calling
convention, checked by the advantage oracle; it jits; mode ids ride in the reward and come back;
bad input is refused. With Tunix (its own CI environment, ``.venv-tunix``; skipped here with the
reason otherwise): the estimators sit in Tunix's own registry; Tunix's GRPO learner trains a tiny
flax model made here (no download) for a few steps, and the advantages its loss trains on are the
lab's to float32 round-off, while a learner running another rule is caught by the same check."""

import dataclasses
import subprocess
import sys

import jax
import numpy as np
import pytest
from schedule_files import schedule_file

from simplexlab.llm import (
    TunixEstimator,
    register_tunix,
    score_with_mode,
    tunix_reward_with_mode,
    unregister_tunix,
)
from simplexlab.shaping import GainSchedule, Groups, advantages
from simplexlab.verify import check_advantages

SCHED = GainSchedule(kind="constant", gain=1.0, neutralize=True, B_max=5.0)
G = 4
R = np.array([1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 1, 0], dtype=np.float64)  # three groups of 4
MODE = np.array([3, 0, 7, 3, 5, 5, 9, 2, 0, 1, 1, 0])


def _ids(modes):
    """Mode ids renumbered per group (np.unique: another numbering than the adapter's; G²RPO
    depends on the ids through equality within a group only)."""
    return np.array([np.unique(row, return_inverse=True)[1] for row in
                     np.asarray(modes).reshape(-1, G)])


# ---- without Tunix ------------------------------------------------------------------------------

def test_importing_the_adapter_does_not_import_tunix():
    code = ("import sys, simplexlab.llm, simplexlab.llm._tunix; "
            "assert 'tunix' not in sys.modules, 'tunix imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("method,params", [("grpo", None), ("rloo", None),
                                           ("grpo_sample_std", {"std_eps": 1e-4})])
def test_the_estimator_is_the_labs_rule_by_the_oracle(method, params):
    """Tunix's calling convention, with and without valid_mask: every check of the battery
    passes against the lab's rule (shuffled order aside: Tunix's groups are contiguous)."""
    est = TunixEstimator(method, params=params)
    report = check_advantages(est, method=method, params=params, convention="tunix",
                              name=est.name)
    assert report.passed, report.summary()
    assert report.checks["masked rows"] == "pass"  # it takes Tunix's newer valid_mask


def test_a_wrong_rule_is_caught_by_the_oracle():
    report = check_advantages(TunixEstimator("grpo"), method="grpo_sample_std",
                              convention="tunix")
    assert "whole groups" in report.failed
    assert report.inferred.rule == ("grpo", {})


def test_the_estimator_jits_and_returns_float32():
    est = TunixEstimator("dr_grpo")
    eager = est(R, G)
    assert eager.dtype == np.float32 and eager.shape == R.shape
    traced = jax.jit(lambda r: est.pure(r, G)[0])(R)
    np.testing.assert_array_equal(np.asarray(traced), np.asarray(eager))
    want = np.asarray(advantages("dr_grpo", Groups(R.reshape(-1, G)))).reshape(-1)
    np.testing.assert_allclose(np.asarray(eager), want, rtol=1e-6, atol=1e-7)


def test_mode_ids_ride_in_the_reward_and_come_back():
    """tunix_reward_with_mode writes reward + 4 · mode id; the G²RPO estimator reads the ids
    back (any labels: ints, strings) and computes the lab's G²RPO on them."""
    labels = [f"m{m}" for m in MODE]

    def verifier(prompts, completions, **kw):
        return list(R)

    def mode_of(prompts, completions, **kw):
        return labels

    reward = tunix_reward_with_mode(verifier, mode_of)
    scores = np.array(reward(prompts=[""] * len(R), completions=[""] * len(R)))
    assert reward.__name__ == "verifier"
    est = TunixEstimator("g2rpo", schedule=SCHED)
    got = np.asarray(est(scores, G))
    want = np.asarray(advantages("g2rpo", Groups(R.reshape(-1, G), _ids(labels)),
                                 schedule=SCHED, num_clusters=G)).reshape(-1)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(est.last["rewards"]).reshape(-1), R)
    # the ids matter: all in one mode, the bonus is another
    one = np.array([score_with_mode(r, 0) for r in R])
    assert np.abs(np.asarray(est(one, G)) - got).max() > 1e-3


def test_the_warm_up_follows_the_step():
    ramp = GainSchedule(kind="constant", gain=2.0, ramp_steps=4, B_max=5.0)
    scores = np.array([score_with_mode(r, int(m)) for r, m in zip(R, MODE, strict=True)])
    est = TunixEstimator("g2rpo_bonus", schedule=ramp)

    def lab(step):
        return np.asarray(advantages("g2rpo_bonus", Groups(R.reshape(-1, G), _ids(MODE)),
                                     schedule=ramp, step=step, num_clusters=G)).reshape(-1)

    for step in range(3):  # its own count of calls
        np.testing.assert_allclose(np.asarray(est(scores, G)), lab(step), atol=1e-6)
    clock = {"step": 10}
    est = TunixEstimator("g2rpo_bonus", schedule=ramp, step_fn=lambda: clock["step"])
    np.testing.assert_allclose(np.asarray(est(scores, G)), lab(10), atol=1e-6)
    assert np.abs(lab(10) - lab(1)).max() > 1e-3


def test_bad_input():
    est = TunixEstimator("grpo")
    with pytest.raises(ValueError, match="do not form whole groups of num_generations = 5"):
        est(R, 5)
    with pytest.raises(ValueError, match="num_generations must be an integer >= 2"):
        est(R, 1)
    with pytest.raises(ValueError, match="non-finite"):
        est(np.where(R > 0, np.nan, 0.0), G)
    with pytest.raises(ValueError, match=r"takes rewards in \{0, 1\}"):
        TunixEstimator("g2rpo", schedule=SCHED)(np.full(12, 0.5), G)
    with pytest.raises(ValueError, match="carry no mode id"):
        TunixEstimator("g2rpo", schedule=SCHED)(np.full(12, -3.0), G)
    with pytest.raises(ValueError, match="log-probabilities"):
        TunixEstimator("progrpo")
    with pytest.raises(ValueError, match="needs each rollout's mode id"):
        TunixEstimator("g2rpo", modes_in_scores=False)
    with pytest.raises(ValueError, match="has no parameter"):
        TunixEstimator("grpo", params={"std_eps": 1e-4})
    with pytest.raises(ValueError, match="mode labels for"):
        tunix_reward_with_mode(lambda **kw: [1.0], lambda **kw: [])(prompts=[""],
                                                                   completions=[""])


def test_register_without_tunix_says_how_to_install():
    try:
        import tunix  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"\[llm,tunix\]"):
            register_tunix("grpo")
    else:
        pytest.skip("Tunix is installed here: the refusal is for an environment without it")


# ---- with Tunix ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tunix():
    return pytest.importorskip(
        "tunix", reason="Tunix is not importable here: it is the opt-in tunix extra "
        "(google-tunix 0.1.7 pins safetensors<0.8, which the main environment's transformers "
        "needs), tested in its own CI step")


@pytest.fixture
def registry(tunix):
    from tunix.rl import function_registry

    yield function_registry
    for name in list(function_registry.default_registry.list_functions("advantage_estimator")):
        if isinstance(function_registry.get_advantage_estimator(name), TunixEstimator):
            unregister_tunix(name)


def test_every_rule_in_tunixs_registry(registry):
    """register_tunix() puts every rule of METHODS (a user's registered rule too; not the one
    that reads log-probabilities) in Tunix's registry, looked up by Tunix's own function."""
    from simplexlab.shaping import (
        METHODS,
        Method,
        dr_grpo_advantages,
        register_method,
        unregister_method,
    )

    def halved(groups, params, schedule, step, verifier, num_clusters):
        return 0.5 * dr_grpo_advantages(groups.rewards, groups.mask)

    register_method("tunix_halved", Method((), halved))
    try:
        ests = register_tunix(schedule=SCHED)
        names = {f"simplexlab_{m}" for m, rule in METHODS.items() if not rule.logp}
        assert set(ests) == names and "simplexlab_tunix_halved" in names
        fn = registry.get_advantage_estimator("simplexlab_tunix_halved")
        assert fn is ests["simplexlab_tunix_halved"]
        want = 0.5 * np.asarray(advantages("dr_grpo", Groups(R.reshape(-1, G)))).reshape(-1)
        np.testing.assert_allclose(np.asarray(fn(rewards=R, num_generations=G)), want,
                                   atol=1e-7)
        assert ests["simplexlab_g2rpo"].schedule == SCHED
    finally:
        unregister_method("tunix_halved")
    # Tunix's own estimators stay
    assert not isinstance(registry.get_advantage_estimator("grpo"), TunixEstimator)
    with pytest.raises(ValueError, match="already registered"):
        register_tunix("grpo", name="grpo")
    with pytest.raises(ValueError, match="not a simplexlab estimator"):
        unregister_tunix("grpo")
    assert unregister_tunix("simplexlab_grpo") and not unregister_tunix("simplexlab_grpo")


def test_verified_schedules_load(registry, tmp_path):
    good = schedule_file(tmp_path / "good.json", SCHED, passed=True)
    ests = register_tunix("g2rpo", schedule=good)
    assert ests["simplexlab_g2rpo"].schedule == SCHED
    bad = schedule_file(tmp_path / "bad.json", SCHED, passed=False)
    with pytest.raises(ValueError, match="failed verification"):
        register_tunix("g2rpo", schedule=bad)
    with pytest.warns(UserWarning):
        register_tunix("g2rpo", schedule=bad, force=True)
    with pytest.raises(ValueError, match="G²RPO rules only"):
        register_tunix("grpo", schedule=good)


def test_tunixs_own_estimators_by_the_oracle(registry):
    """Tunix's grpo is the lab's grpo_sample_std (ε = 1e-6); its rloo and drgrpo the lab's."""
    from simplexlab.llm._frameworks import tunix_function

    for name, method, params in [("grpo", "grpo_sample_std", {"std_eps": 1e-6}),
                                 ("rloo", "rloo", {}), ("drgrpo", "dr_grpo", {})]:
        report = check_advantages(tunix_function(name), method=method, params=params,
                                  convention="tunix")
        assert not [c for c in report.failed], (name, report.summary())


# ---- Tunix's GRPO learner on a tiny model -------------------------------------------------------

VOCAB = ["<pad>", "<s>", "</s>", "a", "b", "c", "d"]


class _Tokenizer:
    """Words of VOCAB (Tunix's tokenizer adapter takes any object with these methods)."""

    def encode(self, text, **kw):
        return [VOCAB.index(w) for w in text.split() if w in VOCAB]

    def decode(self, ids, **kw):
        return " ".join(VOCAB[int(i)] for i in ids if 0 <= int(i) < len(VOCAB))

    def bos_id(self):
        return 1

    def eos_id(self):
        return 2

    def pad_id(self):
        return 0


@dataclasses.dataclass(frozen=True)
class _Config:  # what Tunix's vanilla rollout reads of a model's config
    num_layers: int = 1
    num_kv_heads: int = 1
    head_dim: int = 8


def _model(seed):
    from flax import nnx

    class Bigram(nnx.Module):
        """The next token's logits from the current token alone (no cache needed)."""

        def __init__(self, rngs):
            self.config = _Config()
            self.emb = nnx.Embed(len(VOCAB), 8, rngs=rngs)
            self.out = nnx.Linear(8, len(VOCAB), rngs=rngs)

        def __call__(self, x, positions=None, cache=None, attention_mask=None,
                     output_hidden_states=False, **kw):
            return self.out(self.emb(x)), cache

        @property
        def num_embed(self):
            return len(VOCAB)

    return Bigram(nnx.Rngs(seed))


def _train(estimator, reward_fn, steps=3):
    """Tunix's GRPOLearner for ``steps`` steps (2 prompts x G completions of up to 3 tokens) with
    ``estimator``; returns the advantages its policy loss received at each step (through a
    policy loss that wraps Tunix's own and records them)."""
    import optax
    from jax.interpreters import pxla
    from tunix.rl import function_registry
    from tunix.rl import rl_cluster as rl
    from tunix.rl.grpo import grpo_learner
    from tunix.rl.rollout import base_rollout

    trained = []
    base = function_registry.get_policy_loss_fn("grpo")

    def recording(model, train_example, **kw):
        jax.debug.callback(lambda a: trained.append(np.asarray(a)), train_example.advantages)
        return base(model, train_example, **kw)

    function_registry.register_policy_loss_fn("simplexlab_test_recording")(recording)
    mesh = pxla.thread_resources.env.physical_mesh
    cfg = rl.ClusterConfig(
        role_to_mesh={r: mesh for r in (rl.Role.ACTOR, rl.Role.REFERENCE, rl.Role.ROLLOUT)},
        rollout_engine="vanilla", offload_to_cpu=False,
        training_config=rl.RLTrainingConfig(actor_optimizer=optax.sgd(1e-2),
                                            eval_every_n_steps=100, max_steps=steps),
        rollout_config=base_rollout.RolloutConfig(max_tokens_to_generate=3,
                                                  max_prompt_length=4, kv_cache_size=16,
                                                  temperature=1.0))
    cluster = rl.RLCluster(actor=_model(0), reference=_model(0), tokenizer=_Tokenizer(),
                           cluster_config=cfg)
    learner = grpo_learner.GRPOLearner(
        rl_cluster=cluster, reward_fns=reward_fn,
        algo_config=grpo_learner.GRPOConfig(num_generations=G, num_iterations=1, beta=0.0,
                                            advantage_estimator=estimator,
                                            policy_loss_fn="simplexlab_test_recording"))
    data = [{"prompts": np.array(["a b", "c d"])} for _ in range(steps)]
    # Tunix mixes dtypes (the tests run strict), in threads of its own: the global setting
    promotion = jax.config.jax_numpy_dtype_promotion
    jax.config.update("jax_numpy_dtype_promotion", "standard")
    try:
        learner.train(data)
    finally:
        jax.config.update("jax_numpy_dtype_promotion", promotion)
    return trained


def _assert_trained_on(trained, rewards, method, modes=None, **kw):
    assert len(trained) == len(rewards) >= 3
    for adv, r, m in zip(trained, rewards, modes or [None] * len(rewards), strict=True):
        r = np.asarray(r).reshape(-1, G)
        want = np.asarray(advantages(method, Groups(r, None if m is None else _ids(m)), **kw))
        np.testing.assert_allclose(adv.reshape(-1, G), want, rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_tunixs_learner_trains_on_the_labs_advantages(registry):
    """G²RPO through Tunix's GRPO learner: the mode ids ride in the reward
    (tunix_reward_with_mode), the registered estimator computes the lab's rule, and the advantages
    Tunix's loss trains on are the lab's on the same rewards and modes, to float32 round-off
    (the rewards are mixed: a rule that computed something else would not pass). The same check
    catches a learner that runs another rule: Tunix's own grpo (the sample std) is not the lab's
    grpo (the population std)."""
    seen = {"rewards": [], "modes": []}

    def verifier(prompts, completions, **kw):
        r = [float(len(c.split()) % 2) for c in completions]
        seen["rewards"].append(r)
        return r

    def mode_of(prompts, completions, **kw):
        m = [(c.split() or ["-"])[0] for c in completions]
        seen["modes"].append(m)
        return m

    register_tunix("g2rpo", schedule=SCHED)
    trained = _train("simplexlab_g2rpo", tunix_reward_with_mode(verifier, mode_of))
    assert any(0 < np.mean(r) < 1 for r in seen["rewards"])  # groups with signal
    _assert_trained_on(trained, seen["rewards"], "g2rpo", seen["modes"], schedule=SCHED,
                       num_clusters=G)
    assert any(np.abs(a).max() > 0.1 for a in trained)
    # a wrong rule is detected: Tunix's own grpo claimed as the lab's grpo
    seen["rewards"].clear()
    trained = _train("grpo", verifier)
    with pytest.raises(AssertionError, match="Mismatched elements"):
        _assert_trained_on(trained, seen["rewards"], "grpo")
    _assert_trained_on(trained, seen["rewards"], "grpo_sample_std")


@pytest.mark.slow
def test_the_committed_tunix_rows_are_a_fresh_run(tunix):
    """The Tunix rows of docs/llm/take-a-rule.md's table (tests/framework_table.py)."""
    from framework_table import committed_rows, fresh_rows

    fresh = fresh_rows("Tunix")
    assert committed_rows("Tunix") == fresh, (
        "the Tunix rows differ from a fresh run: run `python tests/framework_table.py --write` "
        "in the Tunix environment and review the change")
