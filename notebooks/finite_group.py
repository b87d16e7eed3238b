# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Finite-group theory: what a rule does at the G you train with
#
# The papers' mean field (G²RPO eq. 22 / 48 / 56) is the limit G → ∞ of two rules. One SGD step
# of the (K+M)-mode bandit has an exact expectation at every group size G and for every
# advantage rule: `meanfield_system(method, group_size=G)` integrates it as an ODE
# (`simplexlab.theory.FiniteGroup`, time t = step · η), and `expected_update` evaluates it at
# one policy, naming the path that computed it (the rule's own reduction, the binomial
# reduction of count rules, a dynamic programme over cluster partitions, full enumeration, or
# Monte Carlo with a stated error). Run it as a script with `SIMPLEXLAB_QUICK=1` (the test suite
# does this).

# %%
import os

import jax

jax.config.update("jax_enable_x64", True)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import simplexlab as sl  # noqa: E402
from simplexlab.shaping import METHODS, GainSchedule, group_rule, meanfield_system  # noqa: E402

QUICK = os.environ.get("SIMPLEXLAB_QUICK") == "1"

# %% [markdown]
# ## 1. One step, exactly, by three paths
#
# GRPO at G = 6 from a policy over K = 3 good and M = 2 bad modes: the binomial reduction
# (O(G)), the partition programme and the full enumeration of the 6 draws agree to round-off;
# Monte Carlo agrees within its standard error.

# %%
pi = np.array([0.3, 0.2, 0.1, 0.25, 0.15])
rule = group_rule("grpo")
for path in ("counts", "clusters", "enumerate", "montecarlo"):
    out = sl.theory.expected_update(rule, pi, 3, 6, path=path, num_samples=20_000)
    print(f"{out.path:>10}: E[Δθ]/η = {np.round(np.asarray(out.theta), 5)}"
          + (f"  ± {np.asarray(out.stderr).max():.1e}" if path == "montecarlo" else ""))

# %% [markdown]
# ## 2. G → ∞: the papers' fields, with an O(1/G) error
#
# The bad-mass drift ṗ of the finite-group system against GRPO's eq. (22) and G²RPO's eq. (56)
# (schedule B, λ0 = 1.5, with the neutralizer). With `max_group_size` the group size is data:
# one compiled program serves every G up to the bound (the same numbers as one program per G,
# to round-off).

# %%
s0 = sl.make_state(0.6, np.array([0.5, 0.3, 0.2]), np.array([0.7, 0.3]))
Gs = [2, 8, 32] if QUICK else [2, 4, 8, 16, 32, 64, 128, 256]
fig, ax = plt.subplots(figsize=(5.5, 3.6))
for method, sch in (("grpo", None), ("g2rpo", GainSchedule(kind="B", gain=1.5))):
    lim = meanfield_system(method, sch).vector_field(0.0, s0)
    err = [max(abs(float(d.p - lim.p)), float(np.max(np.abs(d.y - lim.y))))
           for d in (meanfield_system(method, sch, group_size=G, max_group_size=max(Gs))
                     .vector_field(0.0, s0) for G in Gs)]
    ax.loglog(Gs, err, "o-", label=method)
ax.loglog(Gs, [0.1 / G for G in Gs], "k:", label="∝ 1/G")
ax.set_xlabel("group size G")
ax.set_ylabel("max |finite-G field − G → ∞ field|")
ax.legend()
plt.show()

# %% [markdown]
# ## 3. The collision → anti-collision flip moves with G
#
# The mean field flips at λ0 = 1 whatever G (eq. 68). At finite G the within-good drift of
# L_y at the start of training changes sign at a larger gain, because a group samples only some
# good modes and the plug-in bonus reaches only those.

# %%
state = sl.make_state(0.7, np.array([0.4, 0.25, 0.15, 0.1, 0.06, 0.04]), np.array([0.6, 0.4]))
gains = np.linspace(0.5, 4.0, 8 if QUICK else 15)
for G in (8, 16, 64):
    drift = []
    for g in gains:
        d = meanfield_system("g2rpo", GainSchedule(kind="B"), gain=float(g), group_size=G,
                             max_group_size=64).vector_field(0.0, state)
        drift.append(float(2 * np.sum(state.y * d.y)))  # dL_y/dt
    drift = np.array(drift)
    flip = gains[np.argmax(drift < 0)] if np.any(drift < 0) else None
    print(f"G = {G:3d}: dL_y/dt < 0 from λ0 ≈ {flip}")

# %% [markdown]
# ## 4. Every rule has a finite-group system
#
# The within-good drift dL_y/dt at the same state for every rule of `METHODS` at G = 8
# (REINFORCE++ normalises over a batch of 8 groups): positive is collision.

# %%
for method in METHODS:
    dyn = meanfield_system(method, group_size=8, num_groups=8)
    d = dyn.vector_field(0.0, state)
    print(f"{method:>13} ({dyn.resolve_path(6, 2):>9}): dL_y/dt = "
          f"{float(2 * np.sum(state.y * d.y)):+.4f}, dp/dt = {float(d.p):+.4f}")
