# %% [markdown]
# # Your own rule, end to end
#
# One rule written in your own code, from the function to its phase portrait, a bandit run
# checked against its finite-group theory, and a TRL trainer, on one page (executed when the
# site is built). The rule is one the papers do not have: Dr. GRPO's centred reward scaled by a
# temperature τ > 0. What each part of the declaration means is in
# [Write your own rule](own-rule.html).

# %%
import jax

jax.config.update("jax_enable_x64", True)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from simplexlab import shaping, theory  # noqa: E402
from simplexlab.lab import mark_fixed_points, stream_on_simplex, ternary_axes  # noqa: E402
from simplexlab.shaping import Groups, Method, Param, dr_grpo_advantages, xp  # noqa: E402
from simplexlab.sim import Bandit, trajectory  # noqa: E402


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
# **Its phase portrait at the group size you train with.** The finite-group theory gives any
# rule's exact expected step at group size G (`Bandit.finite_group`: the system and the bandit's
# initial state); here the flow of the good-mode composition `y` at G = 8, the other
# coordinates frozen at the bandit's first prompt, with its fixed points. A count rule like this
# one collides (the flow runs to the vertices), as GRPO does.

# %%
G, ETA, STEPS = 8, 0.05, 400
bandit = Bandit(K=3, M=2, method="tempered", num_prompts=4)
params = {"group_size": G, "tau": 2.0, "eta": ETA, "p0": 0.7}
dyn, s0 = bandit.finite_group(params)
first = jax.tree_util.tree_map(lambda a: a[0], s0)
field = theory.block_field(dyn, first, "y")
fig, ax = plt.subplots(figsize=(4.5, 4))
ternary_axes(ax, title=f"'tempered' (τ = 2) at G = {G}: flow of y")
stream_on_simplex(ax, lambda y: np.asarray(field(y)), n=20)
mark_fixed_points(ax, theory.find_fixed_points(field, 3, n_starts=2), legend=True)
plt.show()

# %% [markdown]
# **A bandit run against its theory.** The bandit samples groups of G rollouts and takes SGD
# steps with the rule; the finite-group ODE, integrated over the same time `t = step · η`,
# predicts its seed mean (to O(η)).

# %%
run = jax.jit(jax.vmap(lambda k: trajectory(bandit, k, params, num_steps=STEPS,
                                            stride=40)[1]))
rec = run(jax.random.split(jax.random.key(0), 32))
Ly_bandit = np.asarray(rec.L_y).mean(axis=(0, 2))  # over seeds and prompts
sol = theory.solve_ensemble(dyn, s0, t1=STEPS * ETA, n_save=len(Ly_bandit))
Ly_theory = np.asarray(sol.L_y).mean(axis=0)
steps = np.arange(len(Ly_bandit)) * 40
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(steps, Ly_bandit, "o", label="bandit, mean of 32 seeds × 4 prompts")
ax.plot(steps, Ly_theory, "-", label=f"finite-group ODE (G = {G})")
ax.set(xlabel="step", ylabel="L_y = ‖y‖²")
ax.legend()
plt.show()
print("largest gap:", float(np.abs(Ly_bandit - Ly_theory).max()))

# %% [markdown]
# **A TRL trainer with it.** `G2RPOTrainer` (TRL's `GRPOTrainer` with the lab's advantages)
# takes the rule by name and its parameters; here two steps of a tiny GPT-2 made on the spot
# (nothing downloaded, on the CPU) with a toy verifier that an untrained model passes about
# half the time: a completion is "correct" when it starts with a digit. Put your own reward
# functions in its place.

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
