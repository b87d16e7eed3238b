# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Sweeps: grids over any simulator or the mean-field ODEs
#
# `simplexlab.sweep.run(target, grid, fixed=..., seeds=...)` runs every grid point × seed,
# sharded over all devices, chunked under a memory budget, resumable from a chunk store, and
# returns an `xarray.Dataset`. This notebook sweeps (1) the G²RPO schedule-B gain of the
# mean-field ODE (eq. 56 + 67) and (2) the categorical simulator's group size and focal γ, and
# shows a resumed sweep reusing its chunks.
#
# Run as a script with `SIMPLEXLAB_QUICK=1` for a fast check (the test suite does this). For one
# device per CPU core, set `XLA_FLAGS=--xla_force_host_platform_device_count=<cores>` before
# JAX starts (the `simplexlab` command does this for you).

# %%
import os
import tempfile

import jax

jax.config.update("jax_enable_x64", True)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from simplexlab import sweep  # noqa: E402

QUICK = os.environ.get("SIMPLEXLAB_QUICK") == "1"
print(jax.devices())

# %% [markdown]
# ## 1. Mean-field: the gain that cancels collision
# Schedule B (eq. 67) makes the inner-time within-good drift `(1 − λ0) V(y)` (eq. 68): below
# λ0 = 1 the good composition concentrates (L_y → 1), above it spreads (L_y → 1/K). Each seed
# draws random initial compositions y0, z0.

# %%
gains = np.linspace(0.0, 2.0, 9 if QUICK else 41)
ds = sweep.run("meanfield", {"gain": gains},
               fixed={"system": "neutralized", "schedule": "B", "K": 3, "M": 2,
                      "t1": 10.0 if QUICK else 20.0, "n_save": 11},
               seeds=8 if QUICK else 64, seed=0, progress=False)
print(ds)
final_ly = ds.L_y.isel(time=-1)
fig, ax = plt.subplots(figsize=(6, 3.8))
ax.plot(gains, final_ly.mean("seed"), "o-", label="mean over initial compositions")
ax.fill_between(gains, final_ly.min("seed"), final_ly.max("seed"), alpha=0.2, label="range")
ax.axvline(1.0, color="k", ls="--", lw=1)
ax.axhline(1 / 3, color="gray", ls=":", label="uniform y: 1/K")
ax.set_xlabel(r"base gain $\lambda_0$ (schedule B)")
ax.set_ylabel(r"$L_y = \|y\|^2$ at $t_1$")
ax.legend()
plt.show()
below = float(final_ly.sel(gain=gains[gains < 0.9]).mean())
above = float(final_ly.sel(gain=gains[gains > 1.1]).mean())
assert below > above, (below, above)  # collision below the cancel gain, anti-collision above

# %% [markdown]
# ## 2. Categorical simulator: group size × focal γ, and resuming
# A small App. J policy. The chunk store in `out` makes a second identical call load every
# chunk instead of computing it; a change of any setting (here the seed) recomputes.

# %%
out = tempfile.mkdtemp()
grid = {"group_size": [2, 32, 512], "focal_gamma": [0.0, 1.0]}
fixed = {"num_actions": 2000, "num_correct": 156, "optimizer": "adam",
         "surrogate": "log_likelihood", "eta": 0.1, "num_steps": 50 if QUICK else 200,
         "stride": 10}
first = sweep.run("categorical", grid, fixed=fixed, seeds=2, out=out, name="demo",
                  progress=False)
again = sweep.run("categorical", grid, fixed=fixed, seeds=2, out=out, name="demo",
                  progress=False)
other = sweep.run("categorical", grid, fixed=fixed, seeds=2, seed=1, out=out, name="demo",
                  progress=False)
for ds_ in (first, again, other):
    print({k: ds_.attrs[k] for k in ("seed", "chunks", "chunks_computed", "chunks_loaded")})
assert again.attrs["chunks_computed"] == 0 and other.attrs["chunks_loaded"] == 0
print(first.q_pos.isel(step=-1).mean("seed").to_pandas())
