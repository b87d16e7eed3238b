# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Advantage shaping: baselines, G²RPO on one group, pass@k
#
# A short tour of `simplexlab.shaping`: the advantage rules and the diversity metrics.

# %%
import os

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
from simplexlab import shaping  # noqa: E402

QUICK = os.environ.get("SIMPLEXLAB_QUICK") == "1"

# %% [markdown]
# ## Group-relative baselines on a batch of two groups (the second one ragged)

# %%
rewards = np.array([[1.0, 0.0, 0.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
mask = np.array([[True] * 6, [True, True, True, True, False, False]])
for name in ["raw", "mean_shifted", "grpo", "dr_grpo", "rloo", "reinforce_pp"]:
    fn = getattr(shaping, f"{name}_advantages")
    print(f"{name:>13}:", np.round(np.asarray(fn(rewards, mask)), 3).tolist())

# %% [markdown]
# ## G²RPO on one group (G² Algorithm 1)
# 16 rollouts: 12 correct in three reasoning modes (8/3/1), 4 incorrect in two bad modes.
# The rare correct mode gets a large bonus, the dominant one a negative bonus, and every incorrect
# rollout receives the same neutralizer (53) so that the bad-mass drift is unchanged.

# %%
r = np.array([1.0] * 12 + [0.0] * 4)
good = np.array([0] * 8 + [1] * 3 + [2] + [-1] * 4)
bad = np.array([-1] * 12 + [0, 0, 0, 1])
cfg = shaping.G2RPOConfig(gain=1.5, kind="B", rho=0.05, B_max=5.0)
st = shaping.g2rpo_stats(r, good, bad, config=cfg)
print("p_hat", float(st.p_hat), "y_hat", np.round(np.asarray(st.y_hat[:3]), 3),
      "L_y", round(float(st.L_y), 3), "L_z", round(float(st.L_z), 3),
      "lambda", round(float(st.gain), 3))
print("bonus     ", np.round(np.asarray(shaping.g2rpo_bonus(r, good, bad, config=cfg)), 3))
print("advantages", np.round(np.asarray(shaping.g2rpo_advantages(r, good, bad, config=cfg)), 3))

# %% [markdown]
# Compositions are explicit pipelines: F-GRPO (focal weight) and DAPO + IAC.

# %%
print("F-GRPO   ", np.round(np.asarray(shaping.f_grpo(0.5)(rewards, mask)), 3).tolist())
print("DAPO+IAC ", np.round(np.asarray(shaping.dapo_iac(1.0)(rewards, mask)), 3).tolist())

# %% [markdown]
# ## Unbiased pass@k (FG eq. 25), stable at n = 1024, k = 256

# %%
n = 64 if QUICK else 1024
c = np.arange(0, n + 1, n // 16)
for k in (1, 8, n // 4):
    print(f"pass@{k}:", np.round(np.asarray(shaping.pass_at_k(np.full(len(c), n), c, k)), 4))
y = shaping.cluster_distribution(good, 3)
print("K", float(shaping.num_modes(y)), "K_eff", round(float(shaping.effective_num_modes(y)), 3),
      "normalized entropy", round(float(shaping.normalized_entropy(y)), 3))
