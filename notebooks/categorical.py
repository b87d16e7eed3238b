# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # The categorical policy simulator: a short tour
#
# `simplexlab.sim` simulates RLVR on a softmax policy over A actions (F-GRPO §5.1,
# App. J): each step draws N i.i.d. actions as a count vector, forms group-relative advantages
# with any `simplexlab.shaping` method, and ascends the chosen surrogate in count form with an
# optax optimizer. Here a policy 64x smaller than App. J's (same logits 5 / 3 / 0), so the
# group sizes are scaled down too. Run as a script:
# `MPLBACKEND=Agg SIMPLEXLAB_QUICK=1 python notebooks/categorical.py`.

# %%
import os

import jax

jax.config.update("jax_enable_x64", True)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

from simplexlab import sim as C  # noqa: E402
from simplexlab import sweep  # noqa: E402
from simplexlab import theory as S  # noqa: E402

QUICK = os.environ.get("SIMPLEXLAB_QUICK", "0") == "1"
policy = C.CategoricalPolicy(num_actions=2_000, num_correct=156)

# %% [markdown]
# ## 1. The initial policy and its metrics
# Q_pos (correct mass), M_ret (eq. 26: the fraction of initial correct mass still at or above its
# starting value), entropy, anchor mass.

# %%
cfg = C.CategoricalConfig(policy=policy, group_size=8)
s0 = C.categorical_init(cfg, jax.random.key(0))
m0 = C.categorical_metrics(cfg, s0)
p0 = np.asarray(s0.probs0)
leaf = float(p0[1])
print(f"Q_pos = {float(m0.q_pos):.3f}, M_ret = {float(m0.m_ret):.3f}, "
      f"anchor = {float(m0.anchor):.2e}, leaf = {leaf:.2e}, entropy = {float(m0.entropy):.2f}")

# %% [markdown]
# ## 2. Sampling N draws as counts, O(A + N log A)
# The counts of N = 100,000 draws match N π (never an (N, A) array).

# %%
counts = np.asarray(C.sample_counts(jax.random.key(1), s0.logits, 100_000))
print("anchor: drawn", counts[0], "expected", round(100_000 * p0[0], 1),
      "| correct drawn:", counts[:156].sum(), "expected", round(100_000 * p0[:156].sum(), 1))

# %% [markdown]
# ## 3. The literal App. J reading barely moves the policy
# SGD lr 1e-2 on the probability-linear surrogate averaged over the group: the logit step is
# ~ lr · π², i.e. nothing in 1000 steps. Adam on the log-likelihood surrogate (what
# `categorical-search` found to reproduce Fig. 4) moves it.

# %%
steps = 100 if QUICK else 1000
key = jax.random.key(2)
for name, kw in [("literal: SGD, probability, mean", dict(optimizer=optax.sgd,
                                                          surrogate="probability")),
                 ("Adam, log-likelihood, mean", dict(optimizer=optax.adam,
                                                     surrogate="log_likelihood"))]:
    c = C.CategoricalConfig(policy=policy, group_size=64, eta=1e-2 * 1000 / steps,
                            **kw)
    _, m = jax.jit(C.categorical_run, static_argnames=("num_steps", "stride"))(c, key, steps, steps)
    print(f"{name:35s} Q_pos {float(m.q_pos[-1]):.3f}  M_ret {float(m.m_ret[-1]):.3f}")

# %% [markdown]
# ## 4. Three regimes in group size
# Tail-miss probability of a leaf (Lemma 3.1) against the simulated final Q_pos and M_ret:
# small N moves little (regime I), intermediate N concentrates (II: Q_pos → 1, M_ret → 0),
# N large enough to sample every leaf keeps M_ret high (III). γ = 1 (focal weight) vmapped.

# %%
ns = (2, 32, 8192) if QUICK else (2, 8, 32, 128, 512, 2048, 8192, 32768)
ds = sweep.run("categorical", {"group_size": list(ns), "focal_gamma": [0.0, 1.0]},
               fixed={"num_actions": policy.num_actions, "num_correct": policy.num_correct,
                      "optimizer": "adam", "surrogate": "log_likelihood",
                      "eta": 1e-2 * 1000 / steps, "num_steps": steps,
                      "stride": steps},
               keys=key[None], progress=False)  # one seed, the same key for every N and gamma
res = []
for n in ns:
    final = ds.sel(group_size=n, seed=0).isel(step=-1)
    res.append((final.q_pos.values, final.m_ret.values))
    print(f"N = {n:6d}: Q_pos {res[-1][0].round(3)}  M_ret {res[-1][1].round(3)}  "
          f"(gamma 0, 1); leaf tail-miss {float(S.tail_miss(float(p0[:156].sum()), leaf, n)):.3f}")

fig, ax = plt.subplots(figsize=(6.5, 4))
q = np.array([r[0] for r in res])
mr = np.array([r[1] for r in res])
ax.plot(ns, q[:, 0], "o-", label=r"$Q_{pos}$, $\gamma=0$")
ax.plot(ns, mr[:, 0], "s-", label=r"$\mathcal{M}_{ret}$, $\gamma=0$")
ax.plot(ns, mr[:, 1], "s--", label=r"$\mathcal{M}_{ret}$, $\gamma=1$")
ax.set_xscale("log", base=2)
ax.set_xlabel("group size N")
ax.set_ylabel("final value")
ax.legend()
ax.set_title(f"A = {policy.num_actions}, T = {steps}: regimes I / II / III")
plt.show()
