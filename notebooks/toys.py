# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Toy laboratories: the worlds the papers make their point in
#
# Three small simulators under the simulator protocol (`simplexlab.sim`), each run through the
# sweep engine with advantages from `simplexlab.shaping`:
#
# 1. `TwoStage`: the three-action logit toy of the two-stage paper (TS §3.2, App. C.1 Alg. 1);
# 2. `SoftmaxClassifier`: the Cat/Dog/Persian/Siamese classifier of the sharpening paper (SC §2.4,
#    App. G–H), with IAC and the memory-network DLC;
# 3. `Product`: G²RPO App. E's i.i.d. token product model (Tables 2–4).
#
# The registered experiments (`simplexlab reproduce two-stage sharpening-collapse
# sharpening-coupling sharpening-mitigation product-model`) reproduce the papers' figures and
# tables with seed bands. Run this file as a script with `SIMPLEXLAB_QUICK=1` for a fast check
# (the test suite does this).

# %%
import os

import jax

jax.config.update("jax_enable_x64", True)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from simplexlab import sweep  # noqa: E402
from simplexlab import theory as S  # noqa: E402
from simplexlab.sim import Product, TwoStage  # noqa: E402

QUICK = os.environ.get("SIMPLEXLAB_QUICK") == "1"

# %% [markdown]
# ## 1. The two-stage toy (TS §3.2, App. C.1 Algorithm 1)
# Three actions: a1 explored (r = 0.5), a2 unexplored (best, r = 1), a3 explored (r = 0).
# Algorithm 1 (G = 2, η = 0.1, Â = r − mean, z ← z + η g/G) first pushes π(a1) up and π(a3)
# down (exploitation); once a1 saturates, a2 takes over and π(a1) falls (exploration). The
# stage switch: the step at which the relatively negative action becomes a1 instead of a3.

# %%
seeds, r, p0 = (8 if QUICK else 32), (0.5, 1, 0), (.45, .05, .5)
fixed = {"eta": 0.1, "group_size": 2.0, "num_steps": 2000, "stride": 20,
         **TwoStage.action_params(r, p0)}
ds = sweep.run("two_stage", {}, fixed=fixed, seeds=seeds, progress=False)
steps, probs = ds["step"].values, ds["probs"].values  # (seed, step, action)
mf = S.expected_trajectory(np.log(p0), r, 2, eta=0.1, num_steps=2000, stride=20)  # Theorem 1
switch = np.asarray(S.stage_switch(ds["logits"].values, r)) * 20  # per seed
print("stage switch per seed:", switch, "| expected dynamics:", int(S.stage_switch(mf, r)) * 20)

# %%
fig, ax = plt.subplots(figsize=(7, 4))
for k, c in enumerate(("tab:blue", "tab:green", "tab:red")):
    lo, hi = np.percentile(probs[..., k], [2.5, 97.5], axis=0)
    ax.fill_between(steps, lo, hi, color=c, alpha=0.2, lw=0)
    ax.plot(steps, probs[..., k].mean(0), color=c, label=f"π(a{k + 1})")
    ax.plot(steps, jax.nn.softmax(mf, -1)[:, k], "--", color=c, lw=1)
ax.axvline(switch.mean(), color="k", label="stage switch (seed mean)")
ax.set(xlabel="step", ylabel="π(a)", title=f"TS Fig. 1 base case ({seeds} seeds, 2.5–97.5 %)")
ax.legend()
plt.show()

# %% [markdown]
# ## 2. The Cat/Dog/Persian/Siamese classifier (SC §2.4, App. G–H)
# A linear softmax classifier over four labels with the paper's fixed embeddings
# (`S.toy_embeddings()`), trained on Persian inputs only, reward 1 for Cat or Persian. Raw
# rewards and SGD sharpen onto one of the two correct labels; IAC (α = 1) slows that, IAC + the
# memory-network DLC (μ = 0.5) stops it. The held-out Siamese accuracy falls faster the more
# Siamese resembles Persian: under SGD each Siamese logit moves by exactly ρ/λ = e_Sᵀe_P/‖e_P‖²
# times the Persian one (App. G's λ/ρ is 1.394 / 1.580 / 1.735; the paper prints 1.38 / 1.57 /
# 1.72). `simplexlab reproduce sharpening-collapse sharpening-coupling sharpening-mitigation`.

# %%
kv = S.toy_kernel_values()
print("λ/ρ:", {s: round(v, 3) for s, v in kv["lam_over_rho"].items()})
seeds = 16 if QUICK else 128
ds = sweep.run("classifier", {"iac_alpha": [0.0, 1.0], "memory_weight": [0.0, 0.5]},
               fixed={"estimator": "raw", "optimizer": "sgd", "eta": 1.0, "memory_eta": 1.0,
                      "group_size": 8.0, "max_group_size": 8, "num_steps": 500, "stride": 10},
               seeds=seeds, progress=False)
steps, pi = ds["step"].values, ds["pi_persian"].values  # (α, μ, seed, step, label)
lead = np.maximum(pi[..., 0], pi[..., 2])  # π(leading correct label | Persian)
acc = ds["siamese_accuracy"].values[0, 0]  # no mitigation: (seed, step, High/Mid/Low)

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4))
runs = {(0, 0): "raw rewards, SGD", (1, 0): "+ IAC (α = 1)", (1, 1): "+ IAC + DLC (μ = 0.5)"}
for k, ((i, j), lab) in enumerate(runs.items()):
    m, se = lead[i, j].mean(0), 2 * lead[i, j].std(0, ddof=1) / np.sqrt(seeds)
    a.fill_between(steps, m - se, m + se, color=f"C{k}", alpha=0.2, lw=0)
    a.plot(steps, m, color=f"C{k}", label=lab)
a.set(xlabel="step", ylabel="π(leading correct label | Persian)",
      title=f"SC Fig. 5, G = 8 ({seeds} seeds, ± 2 SE)")
for h, s in enumerate(S.TOY_SIMILARITIES):
    b.plot(steps, acc[..., h].mean(0), label=f"{s}: ρ/λ = {1 / kv['lam_over_rho'][s]:.3f}")
b.set(yscale="log", xlabel="step", ylabel="held-out π(Siamese | Siamese) (seed mean)",
      title="SC Fig. 2: training on Persian squeezes Siamese")
a.legend()
b.legend()
plt.show()

# %% [markdown]
# ## 3. The toy product model (G²RPO App. E, Tables 2–4)
#
# Tokens A–E with probabilities (.8, .1, .05, .03, .02), T = 80 i.i.d. tokens: log10 π(h) is a
# sum of 80 i.i.d. terms. `simplexlab.theory` gives its closed-form moments, its exact law over
# the 1,929,501 token-count vectors and the exact law of the range of a batch of G = 10;
# `simplexlab.sim.Product` draws the batches (`simplexlab reproduce product-model`: Tables 2–4).

# %%
probs, T, G = (0.8, 0.1, 0.05, 0.03, 0.02), 80, 10
print(S.product_log10_moments(probs, T))  # mean -25.780, sd 4.153 (Table 2: -25.81, 4.16)
law = S.product_log10_distribution(probs, T)  # exact, ~0.7 s
range_law = S.range_distribution(law, G, resolution=0.05 if QUICK else 0.01)
rec = Product(probs=probs, length=T, group_size=G).batches(jax.random.key(0), 500)
ranges = np.ptp(np.asarray(rec.log10_prob), axis=-1)  # 500 batches, as in Table 3
laws = S.summary_statistic_laws(range_law, 500)
for k, v in {"mean": ranges.mean(), "max": ranges.max()}.items():  # Table 3: 12.70, 22.20
    print(f"{k} range {v:.2f}: law {laws[k].expected:.2f} ± {laws[k].se:.2f}, "
          f"inside its 4σ interval: {laws[k].contains(v)}")
edges = np.arange(0.0, 36.0)
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.hist(ranges, edges, density=True, color="0.7", label="500 batches")
ax.stairs(np.diff(range_law.cdf(edges)), edges, label="exact law")
ax.set(xlabel="range of log10 π(h) in a batch of G = 10", ylabel="density")
ax.legend()
plt.show()
