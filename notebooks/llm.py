# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # From the lab to a language model: the bridge and the GRPO driver
#
# `simplexlab.llm` (the `llm` extra: torch, transformers) takes what the lab verified into a
# torch training loop:
#
# 1. **the bridge** — zero-copy DLPack between torch and JAX, and every advantage rule of
#    `simplexlab.shaping` callable on a torch batch of `(P, G)` rewards and mode ids (computed by
#    the one JAX implementation);
# 2. **the driver** — GRPO for any `transformers` causal LM: `generate` at temperature 1, a
#    verifier with mode labels, advantages through the bridge, the clipped surrogate with
#    ε = (0.20, 0.28), token-mean loss, AdamW, no KL;
# 3. **the embedded task** — a tiny GPT-2 (built from a config, nothing downloaded) writing
#    expressions equal to a target, with four exactly-labelled correct families, so the policy's
#    mode masses p, y, L_y, K̂ are computed exactly and compared with the mean-field ODE.
#
# Run it as a script with `SIMPLEXLAB_QUICK=1` for a fast check (the test suite does this).

# %%
import copy
import os

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from simplexlab.lab import plot_training  # noqa: E402
from simplexlab.llm import (  # noqa: E402
    ArithmeticTask,
    TrainConfig,
    advantages,
    fit_time_scale,
    predict,
    tiny_model,
    to_jax,
    to_torch,
    train,
    warm_start,
)
from simplexlab.shaping import GainSchedule  # noqa: E402

QUICK = os.environ.get("SIMPLEXLAB_QUICK") == "1"

# %% [markdown]
# ## 1. The bridge
# A torch tensor becomes a JAX array without a copy (same buffer), and back.

# %%
t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
a = to_jax(t)
back = to_torch(a)
print("same buffer:", back.data_ptr() == t.data_ptr(), "| values:", np.asarray(a).tolist())

# %% [markdown]
# G²RPO advantages for two prompts × four rollouts: rewards and the mode of every rollout
# (modes 0–3 good families, 4–8 bad). The rare correct family (mode 2 in prompt 0) gets the
# largest bonus; with the neutralizer the incorrect rollouts get a bonus that keeps ṗ at GRPO's.

# %%
rewards = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 1.0]])
modes = torch.tensor([[0, 0, 2, 5], [1, 8, 4, 1]])
for method in ("grpo", "g2rpo"):
    adv = advantages(rewards, modes, method=method, schedule=GainSchedule(kind="B", gain=1.5),
                     num_clusters=9)
    print(f"{method:6s}", np.round(adv.numpy(), 3).tolist())

# %% [markdown]
# ## 2. The driver on the embedded task
# A short supervised warm start leaves several correct families of unequal mass; from the same
# weights GRPO and G²RPO then train with the same sampling seed.

# %%
task = ArithmeticTask()
model = tiny_model(task.vocab_size, seed=0)
warm_start(model, task, steps=60 if QUICK else 800, seed=0)
start = copy.deepcopy(model.state_dict())
pi = task.mode_probabilities(model)
y = pi[:, :task.K] / pi[:, :task.K].sum(-1, keepdims=True)
print("after warm start: p =", round(float(pi[:, task.K:].sum(-1).mean()), 3),
      "| y (mean over targets) =", np.round(y.mean(0), 3).tolist())

runs = {}
for method in ("grpo", "g2rpo"):
    model.load_state_dict(start)
    cfg = TrainConfig(method=method, steps=4 if QUICK else 40, prompts_per_step=8 if QUICK else 16,
                      group_size=8 if QUICK else 16, eta=1e-3, seed=0)
    runs[method] = [train(model, task, cfg, progress=False)["history"]]
    last = runs[method][0][-1]
    print(f"{method:6s} step {last['step']}: accuracy {last['accuracy']:.2f}, "
          f"L_y {last['L_y']:.3f}, K̂ {last['K_hat']:.2f}")

# %% [markdown]
# ## 3. The mean-field prediction
# One number is fitted — the time scale t = c·step, on GRPO's bad mass p — and L_y, K̂ of both
# methods are then predicted from the measured initial (p, y, z) of every target.

# %%
c = fit_time_scale(runs["grpo"][0], task.K)
steps = [r["step"] for r in runs["grpo"][0]]
pred = {m: predict(runs[m][0][0], task.K, steps, method=m, time_scale=c,
                   schedule=TrainConfig(method=m).schedule) for m in runs}
print(f"time scale c = {c:.3g}")
fig = plot_training(runs, pred, K=task.K, title="GRPO vs G²RPO on the tiny model")
if not QUICK:
    import matplotlib.pyplot as plt

    plt.show()
