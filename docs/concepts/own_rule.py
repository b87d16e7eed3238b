# %% [markdown]
# # Your own rule, end to end
#
# One rule written in your own code, from the function to its phase portrait, a bandit run
# checked against its finite-group theory (one call each), a verl estimator and a TRL trainer,
# on one page (executed when the site is built). The rule is one the papers do not have:
# Dr. GRPO's centred reward scaled by a temperature τ > 0. What each part of the declaration
# means is in [Write your own rule](own-rule.html).

# %%
import jax

jax.config.update("jax_enable_x64", True)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from simplexlab import shaping  # noqa: E402
from simplexlab.lab import bandit_vs_theory, plot_portrait  # noqa: E402
from simplexlab.shaping import Groups, Method, Param, dr_grpo_advantages, xp  # noqa: E402
from simplexlab.sim import Bandit  # noqa: E402


def tempered(groups, params, schedule, step, verifier, num_clusters):
    """Dr. GRPO's centred reward r − mean(r), times τ."""
    return params["tau"] * dr_grpo_advantages(groups.rewards, groups.mask)


if "tempered" in shaping.METHODS:  # the registry lives in the process: re-running this cell
    shaping.unregister_method("tempered")
shaping.register_method(
    "tempered", Method(("tau",), tempered, binary=True, structure="counts"),
    params=[Param("tau", 0.5, lambda a: ~(xp.isfinite(a) & (a > 0)), "finite and > 0",
                  "τ", "the temperature")])
print(shaping.advantages("tempered", Groups(np.array([[1.0, 0.0, 1.0, 1.0]])),
                         params={"tau": 2.0}))

# %% [markdown]
# **Its phase portrait at the group size you train with**, in one call: `plot_portrait` streams
# the flow of the good-mode composition `y` of the rule's exact finite-group field at G = 8
# (`shaping.meanfield_system("tempered", group_size=8, params=...)`), the bad mass and the bad
# composition frozen, and marks its fixed points. A count rule like this one collides (the flow
# runs to the vertices), as GRPO does.

# %%
plot_portrait("tempered", group_size=8, params={"tau": 2.0}, p=0.7)
plt.show()

# %% [markdown]
# **A bandit run against its theory**, in one call: `bandit_vs_theory` runs 32 seeds of the
# finite-group bandit with the rule (groups of G rollouts, SGD steps) and integrates the
# finite-group ODE its seed mean follows over the same time `t = step · η` (to O(η)).

# %%
bandit = Bandit(K=3, M=2, method="tempered", num_prompts=4)
result = bandit_vs_theory(bandit, {"group_size": 8, "tau": 2.0, "eta": 0.05, "p0": 0.7},
                          seeds=32, num_steps=400, stride=40)
result.plot()
plt.show()
print("largest gap in L_y:", result.gap("L_y"))

# %% [markdown]
# A sweep over the rule's parameter is one call too:
# `simplexlab.sweep.run("bandit", {"tau": [0.5, 1.0, 2.0]}, fixed={"method": "tempered", ...},
# seeds=32)` returns an `xarray.Dataset` with a seed axis ([sweeps](sweeps.html)).

# %% [markdown]
# **In verl**, the rule goes by its name too, with no subclass: `register_verl(method="tempered",
# params=...)` registers the estimator below under `simplexlab_tempered` in verl's registry
# (`algorithm.adv_estimator=simplexlab_tempered`); here it is called as verl calls an estimator,
# on two groups of four responses (verl itself is not needed for this).

# %%
try:
    import torch
except ImportError as err:  # the llm extra
    print(f"skipped: {err} (pip install 'simplexlab[llm]')")
else:
    from simplexlab.llm import VerlEstimator

    estimator = VerlEstimator("tempered", params={"tau": 0.5})
    scores = torch.tensor([[1.0], [0.0], [1.0], [1.0], [0.0], [0.0], [1.0], [0.0]])
    adv, _ = estimator(scores, torch.ones_like(scores), index=np.array(["a"] * 4 + ["b"] * 4))
    print(adv.squeeze(-1))  # 0.5 (r − group mean): group a's mean is 0.75, group b's 0.25

# %% [markdown]
# **A TRL trainer with it**, with no subclass of your own: `G2RPOTrainer` (TRL's
# `GRPOTrainer` with the lab's advantages) takes the rule by name and its parameters; here two
# steps of a tiny GPT-2 made on the spot (nothing downloaded, on the CPU) with a toy verifier
# that an untrained model passes about half the time: a completion is "correct" when it starts
# with a digit. Put your own reward functions in its place.

# %%
import tempfile  # noqa: E402

try:
    import datasets
    import trl
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
except ImportError as err:  # the llm / trl extras
    print(f"skipped: {err} (pip install 'simplexlab[llm,trl]')")
else:
    from simplexlab.llm import G2RPOTrainer, tiny_model

    vocab = ["<pad>", "<bos>", "<eos>", "=", "+", "-", "*"] + list("0123456789")
    tok = Tokenizer(models.WordLevel({t: i for i, t in enumerate(vocab)}, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                  bos_token="<bos>")

    def reward(prompts, completions, **kw):
        """1 when the completion starts with a digit (a toy verifier)."""
        return [float(c.replace(" ", "")[:1].isdigit()) for c in completions]

    with tempfile.TemporaryDirectory() as out:
        tiny_model(len(vocab), seed=0).save_pretrained(f"{out}/model")
        tok.save_pretrained(f"{out}/model")
        args = trl.GRPOConfig(output_dir=out, per_device_train_batch_size=12, num_generations=6,
                              max_completion_length=4, max_steps=2, learning_rate=1e-3,
                              logging_steps=1, report_to=[], save_strategy="no", use_cpu=True,
                              seed=0, beta=0.0)
        data = datasets.Dataset.from_dict({"prompt": [f"<bos>{n}=" for n in (6, 7, 3, 8)] * 3})
        trainer = G2RPOTrainer(model=f"{out}/model", reward_funcs=reward, args=args,
                               train_dataset=data, processing_class=tok, method="tempered",
                               params={"tau": 0.5})
        trainer.train()
        for h in trainer.state.log_history:
            if "loss" in h:
                print(f"step {h['step']}: mean reward {h['reward']:.3f}, loss {h['loss']:.4f}")
