# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Bonus-to-drift geometry (G²RPO App. B, D) — a short tour
#
# GRPO moves the policy by `E[ΔP] = η J(P)² (A + B)` (eq. 31). `simplexlab.theory` gives the
# generic map and the paper's closed forms; here we check a few of them against each other and
# look at the fixed points of the within-good field. Run with
# `MPLBACKEND=Agg SIMPLEXLAB_QUICK=1 python notebooks/geometry.py` (writes nothing).

# %%
import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

import simplexlab as sl  # noqa: E402
from simplexlab import theory as G  # noqa: E402

rng = np.random.default_rng(0)
K, M = 3, 4
s = sl.make_state(0.3, rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(M)))
ver = sl.Verifier(0.1, 0.05)

# %% [markdown]
# ## Baseline drift (19)–(21) = generic η J(P)² A, pushed to (p, y, z) by (15)

# %%
gen = G.grpo_drift(s, eta=1.0, verifier=ver)
field = sl.GRPO(verifier=ver).vector_field(0.0, s)
print("max |closed form − generic|:",
      max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
          for a, b in zip(jax.tree.leaves(field), jax.tree.leaves(gen), strict=True)))

# %% [markdown]
# ## Reciprocal bonus: C_y(B*) = −λ V(y) (Lemma B.6), and the neutralizer (55) stops the p-leak

# %%
lam = 0.8
Bg = np.asarray(G.reciprocal_bonus(s.y, lam))
print("C_y(B*) + λV(y):", np.asarray(G.collision_operator(s.y, Bg) + lam * G.collision_field(s.y)))
Bb = float(G.neutralizer_reciprocal(s.p, s.L_y, s.L_z, K, lam))
leak = G.grpo_drift(s, np.concatenate([Bg, np.zeros(M)]), advantages=False).p
neutral = G.grpo_drift(s, np.concatenate([Bg, np.full(M, Bb)]), advantages=False).p
print(f"Δp from B* alone: {float(leak):.3e};  with the neutralizer: {float(neutral):.1e}")

# %% [markdown]
# ## Essential uniqueness (Theorem B.8): a non-reciprocal bonus f(s) = s² is not V-aligned

# %%
x, defect = G.noncollinearity_witness(lambda u: u**2, 4, seed=0)
print("witness", np.round(x, 3), "defect", round(defect, 3),
      "| reciprocal defect there:", float(G.alignment_defect(x, 2.0 / x - 1.0)))

# %% [markdown]
# ## Fixed points of the within-good field (Theorem A.7; schedule-A field (63))

# %%
for fp in G.find_fixed_points(G.collision_field, K):
    print(fp.support, fp.kind, np.round(fp.eigenvalues.real, 3))
f63 = G.block_field(sl.Neutralized(sl.ScheduleA(1.5)), s)  # z frozen: ρ depends on L_y
kinds = [fp.kind for fp in G.find_fixed_points(f63, K)]
print("schedule A, λ0 = 1.5:", {k: kinds.count(k) for k in set(kinds)},
      "| flip threshold (61) here:", round(float(G.flip_threshold(s.L_y, s.L_z, K)), 3))

# %% [markdown]
# ## Regime of the neutralized y-drift along λ̃ at this state (eq. 60–61)

# %%
import matplotlib.pyplot as plt  # noqa: E402

lts = np.linspace(0, 4, 81)
coef = [float(sl.Neutralized(sl.ScheduleA(lt)).inner_rates(0.0, s).a_y) for lt in lts[::4]]
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(lts[::4], coef, "o-", label="coefficient of V(y) in dy/dτ (57)")
thr = float(G.flip_threshold(s.L_y, s.L_z, K))
ax.axvline(thr, color="k", ls="--", label="flip threshold (61)")
ax.axhline(0, color="0.6", lw=0.8)
ax.set_xlabel(r"$\tilde\lambda$")
ax.legend(fontsize=8)
plt.close(fig)
