# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # The finite-group bandit: testing the mean-field prediction
#
# `simplexlab.sim.Bandit` is the (K+M)-mode bandit of G²RPO §3 with finite groups: every step
# draws G rollouts from the softmax policy, verifies them (noisy verifier optional), computes
# advantages with any rule of `simplexlab.shaping` from what Algorithm 1 sees (verifier outcomes
# and mode ids), and takes an SGD (or any optax) step on the log-likelihood surrogate. Its
# ensemble mean follows the mean-field ODEs of `simplexlab.theory` with t = step · η.
#
# This notebook (1) runs GRPO and G²RPO from the same start, (2) overlays the ODE, and (3) runs a
# small (λ0, G) sweep through the sweep engine. Run it as a script with `SIMPLEXLAB_QUICK=1` for a
# fast check (the test suite does this).

# %%
import os
import tempfile

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from simplexlab import sweep  # noqa: E402
from simplexlab import theory as mf  # noqa: E402
from simplexlab.sim import METHODS, Bandit, trajectory  # noqa: E402

QUICK = os.environ.get("SIMPLEXLAB_QUICK") == "1"
SEEDS = 32 if QUICK else 256
print("advantage rules:", sorted(METHODS))

# %% [markdown]
# ## 1. GRPO collapses, G²RPO spreads
#
# K = 3 good and M = 2 bad modes, start y0 = (0.5, 0.3, 0.2), p0 = 0.8; G = 16, η = 0.1.
# `group_size` is an array parameter (padded to the static `max_group_size`).

# %%
K, M, G, ETA, STEPS = 3, 2, 16, 0.1, 400 if QUICK else 1500
common = dict(K=K, M=M, max_group_size=G, y0=(0.5, 0.3, 0.2), z0=(0.7, 0.3))
runs = {
    "GRPO": (Bandit(method="grpo", **common), {"eta": ETA, "group_size": G, "p0": 0.8}),
    "G²RPO, schedule B, λ0 = 3": (Bandit(method="g2rpo", schedule="B", **common),
                                 {"eta": ETA, "group_size": G, "p0": 0.8, "gain": 3.0}),
}
records = {}
for label, (sim, q) in runs.items():
    f = jax.jit(jax.vmap(lambda k, sim=sim, q=q: trajectory(sim, k, q, num_steps=STEPS,
                                                             stride=20)[1]))
    records[label] = f(jax.random.split(jax.random.key(0), SEEDS))
    print(f"{label}: final L_y = {float(records[label].L_y[:, -1].mean()):.3f} (1/K = {1/K:.3f}),"
          f" final accuracy = {float(records[label].accuracy[:, -1].mean()):.3f}")

# %% [markdown]
# ## 2. The ensemble mean against the mean-field ODE
#
# `Bandit.meanfield(params)` returns the system the run follows (here eq. 22 and eq. 56 with
# schedule B, eq. 67) and its initial state; the time map is t = step · η.

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for (label, (sim, q)), color in zip(runs.items(), ("tab:blue", "tab:red"), strict=True):
    rec = records[label]
    t = np.asarray(rec.step[0]) * ETA
    dyn, st0 = sim.meanfield(q)
    sol = mf.solve(dyn, jax.tree_util.tree_map(lambda a: a[0], st0), t1=float(t[-1]),
                   saveat=jnp.asarray(t))
    for ax, name in zip(axes, ("p", "L_y"), strict=True):
        mean = np.asarray(getattr(rec, name))[:, :, 0].mean(0)
        ax.plot(t, mean, color=color, label=f"{label}: bandit, {SEEDS} seeds")
        ax.plot(t, np.asarray(getattr(sol.state, name)), "--", color=color, label="ODE")
        err = np.abs(mean - np.asarray(getattr(sol.state, name))).max()
        print(f"{label}: sup |mean {name} - ODE| = {err:.4f}")
axes[0].set_ylabel("bad mass p")
axes[1].set_ylabel("within-good concentration L_y")
for ax in axes:
    ax.set_xlabel("t = step · η")
    ax.grid(alpha=0.3)
axes[1].legend(fontsize=7)
fig.tight_layout()

# %% [markdown]
# ## 3. A (λ0, G) sweep through the sweep engine
#
# Every (gain, group size) point is batched in one compiled program (both are array
# parameters); the result is an `xarray.Dataset` with dims (gain, group_size, seed, step,
# prompt).

# %%
out = tempfile.mkdtemp()
gains = [0.0, 1.0, 3.0] if QUICK else [0.0, 0.5, 1.0, 1.5, 2.0, 3.0]
Gs = [4, 16] if QUICK else [2, 4, 8, 16, 32]
ds = sweep.run("bandit", {"gain": gains, "group_size": Gs},
               fixed={"method": "g2rpo", "schedule": "B", "K": 4, "M": 4,
                      "max_group_size": max(Gs), "num_prompts": 4, "eta": 0.1, "p0": 0.8,
                      "num_steps": 200 if QUICK else 1000, "stride": 50},
               seeds=4 if QUICK else 16, seed=0, out=out, name="bandit-demo", progress=False)
final = ds["L_y"].isel(step=-1).mean(("seed", "prompt"))
print(final.to_pandas().round(3))
fig, ax = plt.subplots(figsize=(5, 3.5))
for G in Gs:
    ax.plot(gains, final.sel(group_size=G), "o-", label=f"G = {G}")
ax.axhline(1 / 4, color="gray", ls=":", label="1/K")
ax.set_xlabel("base gain λ0 (schedule B)")
ax.set_ylabel("final L_y")
ax.legend(fontsize=8)
ax.grid(alpha=0.3)
assert float(final.sel(gain=gains[-1]).min()) < float(final.sel(gain=0.0).min())
