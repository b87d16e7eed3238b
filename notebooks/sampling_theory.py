# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Sampling theory of group-relative RLVR: a short tour
#
# `simplexlab.theory` implements F-GRPO §3 / App. A–E (activity, tail-miss, N*, Lemma B.1,
# the mass-balance identities) and sharpening-collapse §2 (batch-optimal policy, Z' bounds,
# ratio R). Run as a script:
# `MPLBACKEND=Agg SIMPLEXLAB_QUICK=1 python notebooks/sampling_theory.py`.

# %%
import os

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from simplexlab import theory as S  # noqa: E402

QUICK = os.environ.get("SIMPLEXLAB_QUICK", "0") == "1"
rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. Lemma 3.1: a group is useful only if it is active, and harmful to rare modes if it
# misses them. `Pr(B_tau) = (1-tau)^N - (mu-tau)^N - (1-mu)^N`, evaluated in log space.

# %%
mu, tau = 0.64, 6.3e-5  # F-GRPO App. J: a non-anchor correct action
for n in (2, 8, 32, 2**10, 2**15, 2**17, 2**20):
    print(f"N = {n:>8}: Pr(A_N) = {float(S.activity(mu, n)):.6f}   "
          f"Pr(B_tau) = {float(S.tail_miss(mu, tau, n)):.3e}   "
          f"log Pr(B_tau) = {float(S.log_tail_miss(mu, tau, n)):.4f}")

# %% [markdown]
# Monte Carlo over simulated groups agrees (counts are drawn directly, so N = 2^17 is cheap):

# %%
n_groups = 200_000 if QUICK else 1_000_000
for n in (20, 2**17):
    est = S.mc_tail_miss(mu, tau, n, n_groups, rng)
    exact = float(S.tail_miss(mu, tau, n))
    print(f"N = {n}: MC {est.mean:.5f} ± {est.stderr:.1e}   exact {exact:.5f}")

# %% [markdown]
# ## 2. The maximising group size N* moves right and up as rho = tau/mu shrinks (Fig. 2)

# %%
rhos = np.array([0.5, 0.1, 0.01, 1e-3, 1e-4])
peak = S.tail_miss_peak(0.5, 0.5 * rhos)
for r, ns, ni, p in zip(rhos, peak.n_star, peak.n_star_int, peak.peak_int, strict=True):
    print(f"rho = {r:g}: N* = {float(ns):8.3f} (best integer {int(ni)}), peak Pr = {float(p):.4f}")

n_grid = np.logspace(0, 12, 300, base=2)
fig, ax = plt.subplots(figsize=(6, 3.5))
for r in rhos:
    ax.plot(n_grid, S.tail_miss(0.5, 0.5 * r, n_grid, continuous=True), label=f"rho={r:g}")
ax.set_xscale("log", base=2)
ax.set_xlabel("N")
ax.set_ylabel("Pr(B_tau)")
ax.set_title("mu = 0.5")
ax.legend(fontsize=7)
plt.show()

# %% [markdown]
# ## 3. Categorical policy: who loses mass after one update? (eqs. 7, 8, 13)

# %%
a = 50
z = jnp.asarray(rng.normal(size=a))
pi = np.asarray(jax.nn.softmax(z))
correct = jnp.asarray(np.arange(a) < 20)
counts = rng.multinomial(8, pi)
sampled = jnp.asarray(counts > 0)
args = (pi, correct, sampled, 8.0, 1.0)
stats = S.batch_statistics(pi, correct, sampled)
print(f"Q_pos = {float(stats.q_pos):.3f}, S_R = {float(stats.s_r):+.4f}")
print(f"dQ_pos (eq. 8)    = {float(S.mass_balance(*args)):+.3e}")
print(f"dQ_u,pos (eq. 13) = {float(S.unsampled_correct_change(*args)):+.3e}")
_, dp = jax.jvp(jax.nn.softmax, (z,), (S.logit_update(*args),))
print(f"check via jvp:      {float(dp[correct].sum()):+.3e}, "
      f"{float(dp[np.asarray(correct) & ~np.asarray(sampled)].sum()):+.3e}")

# %% [markdown]
# ## 4. Lemma B.1 / Cor. B.2: E[S_R | X = k] is non-decreasing in k (for R_c > 0 >= R_w)

# %%
k = jnp.arange(9.0)
print(np.round(np.asarray(S.conditional_baseline(pi, correct, 8.0, k)), 4))

# %% [markdown]
# ## 5. Sharpening collapse: the batch-optimal policy suppresses every unsampled mode when Z' > 1
# (here the probability gap Delta_pi = min sampled-correct - max sampled-incorrect = 0.1 > 0)

# %%
pi_ref = np.array([0.4, 0.2, 0.05, 0.05, 0.2, 0.1])
is_correct = np.array([True, True, True, True, False, False])
cnt = np.array([4.0, 2.0, 0.0, 0.0, 0.0, 2.0])  # G = 8; rare correct modes 2, 3 unsampled
a_pos, a_neg = (float(x) for x in S.normalized_binary_advantages(6 / 8))
adv = np.where(is_correct, a_pos, a_neg)
p_hat = np.asarray(S.batch_optimal_policy(pi_ref, cnt, adv, 1.0))
print("pi_ref :", pi_ref)
print("pi_hat :", np.round(p_hat, 4))
print(f"Z' = {float(np.exp(S.log_batch_partition_function(pi_ref, cnt, adv, 1.0))):.4f} >= "
      f"{float(S.z_prime_lower_bound_normalized(pi_ref, cnt, jnp.asarray(is_correct), 1.0)):.4f}"
      " (Theorem 2.3)")
print("App. G kernel values:", S.toy_kernel_values()["lam_over_rho"])
