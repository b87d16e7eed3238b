# %% [markdown]
# # A first sweep
#
# A sweep is a grid over parameters and seeds of a simulator (or of the mean-field ODEs),
# run in chunks sharded over every device, cached so that an interrupted run resumes, and
# returned as an `xarray.Dataset` ([how it works](../concepts/sweeps.html)). Here: the F-GRPO
# App. J categorical policy on 2,000 actions, group size × focal γ, two seeds.

# %%
import tempfile

from simplexlab import sweep

out = tempfile.mkdtemp()
ds = sweep.run("categorical", {"group_size": [2, 32], "focal_gamma": [0.0, 1.0]},
               fixed={"num_actions": 2000, "num_correct": 156, "num_steps": 100, "stride": 5},
               seeds=2, out=out, memory_budget="2GB", progress=False)
print(ds.sizes)
ds.q_pos.sel(focal_gamma=1.0).mean("seed").to_pandas().T.tail(3)

# %% [markdown]
# The same sweep from a TOML file, from the command line:
# `simplexlab sweep experiments/sweeps/categorical-small.toml --out results`.
# Running it again reuses every finished chunk; a changed setting never reuses a stale one.

# %%
again = sweep.run("categorical", {"group_size": [2, 32], "focal_gamma": [0.0, 1.0]},
                  fixed={"num_actions": 2000, "num_correct": 156, "num_steps": 100, "stride": 5},
                  seeds=2, out=out, memory_budget="2GB", progress=False)
print("identical:", bool((again.q_pos == ds.q_pos).all()), "| attributes:", sorted(ds.attrs)[:6])
