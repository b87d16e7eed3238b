# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Getting started with simplexlab
#
# The mean-field model of G²RPO §3: a prompt's policy over K good and M bad modes is
# `P = ((1 − p) y, p z)`. Under GRPO the good composition `y` follows the *collision* field
# `V(y) = y ⊙ y − ‖y‖² y` (eq. 2–3), which concentrates mass on one mode; the G²RPO bonus
# rescales it by `(1 − λ̃)`.
#
# Run as a script with `SIMPLEXLAB_QUICK=1` for a fast check (the test suite does this).

# %%
import os

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import simplexlab as sl  # noqa: E402
from simplexlab.lab import stream_on_simplex, ternary_axes, to_cartesian  # noqa: E402

QUICK = os.environ.get("SIMPLEXLAB_QUICK", "0") == "1"

# %% [markdown]
# ## One trajectory in physical time
# `make_state` validates the input (try `p=1.2` or a `y` that does not sum to 1).

# %%
s0 = sl.make_state(0.8, np.array([0.5, 0.3, 0.2]), np.array([0.7, 0.3]))
grpo = sl.GRPO(eta=1.0, verifier=sl.Verifier(delta_fn=0.05, delta_fp=0.05))
sol = sl.solve(grpo, s0, t1=40.0, n_save=81)
print("final p", float(sol.p[-1]), " final y", np.round(np.asarray(sol.y[-1]), 4))

# %% [markdown]
# ## Internal time τ versus physical time t
# `dτ/dt = κ(p) = η J p(1−p)/σ(p)` (eq. 23–24); `solve` always reports both clocks.

# %%
g2 = sl.Neutralized(sl.ScheduleB(2.0), verifier=grpo.verifier)
sol_g2 = sl.solve(g2, s0, t1=40.0, n_save=81)
fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
axes[0].plot(sol.t, sol.tau, label="GRPO")
axes[0].plot(sol_g2.t, sol_g2.tau, "--", label="G²RPO (neutralized, schedule B, λ0=2)")
axes[0].set(xlabel="t", ylabel="τ(t)", title="internal time")
axes[0].legend(fontsize=8)
axes[1].plot(sol.t, sol.p, label="GRPO")
axes[1].plot(sol_g2.t, sol_g2.p, "--", label="G²RPO")
axes[1].set(xlabel="t", ylabel="p", yscale="log", title="bad mass (identical: neutrality)")
axes[2].plot(sol.t, sol.L_y, label="GRPO")
axes[2].plot(sol_g2.t, sol_g2.L_y, "--", label="G²RPO")
axes[2].set(xlabel="t", ylabel="$L_y$", title="within-good concentration")
fig.tight_layout()
print("max |p_GRPO − p_G2| =", float(np.max(np.abs(sol.p - sol_g2.p))))

# %% [markdown]
# ## A phase portrait: many trajectories at once with vmap

# %%
n = 12 if QUICK else 60
rng = np.random.default_rng(0)
Y0 = rng.dirichlet(np.ones(3), size=n)
states = sl.State(jnp.full(n, 0.5), jnp.asarray(Y0), jnp.tile(jnp.array([0.7, 0.3]), (n, 1)))
sols = eqx.filter_vmap(lambda s: sl.solve(sl.GRPO(), s, t1=10.0, time="inner", n_save=61))(
    states)

fig, ax = plt.subplots(figsize=(4.5, 4))
ternary_axes(ax, title="GRPO collision flow (inner time)")
stream_on_simplex(ax, lambda y: np.asarray(sl.theory.collision_field(jnp.asarray(y))), n=25)
for traj in np.asarray(sols.y):
    xy = to_cartesian(traj)
    ax.plot(xy[:, 0], xy[:, 1], color="tab:blue", lw=0.8)
print("winners:", np.bincount(np.argmax(np.asarray(sols.y[:, -1]), -1), minlength=3))
# Theorem A.7: each trajectory goes to the vertex of its initial largest coordinate
assert np.all(np.argmax(np.asarray(sols.y[:, -1]), -1) == np.argmax(Y0, -1))

# %%
plt.close("all")
