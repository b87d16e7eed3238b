# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Verified gain schedules: from the lab to a training run
#
# A G²RPO gain schedule (`simplexlab.shaping.GainSchedule`: constant λ, schedule A eq. 62 or
# schedule B eq. 67, a warm-up, the App. D.4 safeguards) is what a training loop needs from the
# lab. Before it goes there, `simplexlab.verify.verify_schedule` checks it, each check with numbers:
#
# * (a) **flip** -- along its mean-field ODE (eq. 56 with the neutralizer), when does the
#   collision drift of the good block turn into anti-collision (eq. 60–61)?
# * (b) **neutral** -- does the neutralizer (eq. 53/55) keep ṗ at GRPO's baseline (eq. 22)?
# * (c) **bounded** -- does the bad-rollout bonus of the plug-in estimator stay bounded as p̂ → 0?
# * (d) the L_y it reaches, and (e) how far the finite-group bandit is from the ODE.
#
# The schedule and its verification are saved as a small JSON file that `load_schedule` reads
# back (refusing a failed one). The command line does the same:
# `simplexlab schedule verify experiments/schedules/g2rpo-b.toml --out g2rpo-b.json`.
#
# Run it as a script with `SIMPLEXLAB_QUICK=1` for a fast check (the test suite does this).

# %%
import os
import tempfile
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from simplexlab.shaping import GainSchedule  # noqa: E402
from simplexlab.verify import load_schedule, save_schedule, verify_schedule  # noqa: E402

QUICK = os.environ.get("SIMPLEXLAB_QUICK") == "1"
SETTINGS = {"num_steps": 100, "seeds": 16} if QUICK else {"num_steps": 200, "seeds": 64}

# %% [markdown]
# ## 1. Build and verify a schedule
#
# Schedule B with λ0 = 1.5 (the paper's default gain), the neutralizer, Listing 1's clip
# B_max = 5, and a warm-up over the first 40 steps: the gain grows linearly, so the flip comes
# when the inner gain (t / t_ramp) λ̃ crosses the threshold λ̃_flip of eq. (61) -- under B at
# t = t_ramp / λ0, step 40 / 1.5 ≈ 26.7.

# %%
schedule = GainSchedule(kind="B", gain=1.5, neutralize=True, B_max=5.0, ramp_steps=40)
report = verify_schedule(schedule, **SETTINGS)
print(report.summary())
assert report.passed
assert abs(report.checks["flip"]["step_flip"] - 40 / 1.5) < 0.1

# %% [markdown]
# The numbers behind the verdict are in `report.checks` (and `report.key_numbers()`); the
# trajectories in `report.curves`. Note (b): with the neutralizer the bonus moves p by nothing
# (to round-off), yet p still differs from a GRPO run from the same start -- the schedule keeps
# y (and z) flatter, and the baseline decay rate is proportional to L_y + L_z (Remark D.4).

# %%
for k, v in report.key_numbers().items():
    print(f"{k:>28}: {v}")

c = report.curves
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for ax, q, label in ((axes[0], "p", "bad mass p"), (axes[1], "L_y", "L_y")):
    ax.plot(c["step"], c[f"{q}_ode"], "k-", label="ODE of the schedule (eq. 56, 67)")
    ax.errorbar(c["step"], c[f"{q}_bandit"], yerr=2 * c[f"{q}_bandit_se"], fmt=".",
                color="tab:red", ms=3, label=f"bandit, {SETTINGS['seeds']} seeds (±2 SE)")
    ax.plot(c["step"], c[f"{q}_grpo"], "--", color="tab:blue", label="GRPO's ODE (eq. 22)")
    ax.set_xlabel("training step")
    ax.set_ylabel(label)
    ax.grid(alpha=0.3)
axes[1].axhline(1 / 3, color="gray", ls=":", label="1/K")
axes[1].axvline(report.checks["flip"]["step_flip"], color="tab:green", ls=":", label="flip")
axes[1].legend(fontsize=7)
fig.tight_layout()

# %% [markdown]
# ## 2. A schedule that fails, and why
#
# A constant gain with the neutralizer and no safeguard: the mean-field flow is fine, but the
# neutralizer (55) scales like 1/p̂, so a group with a single incorrect rollout out of G gives
# that rollout a bonus ∝ G (check (c)).

# %%
unclipped = GainSchedule(kind="constant", gain=1.5, neutralize=True)
bad_report = verify_schedule(unclipped, **SETTINGS)
print(bad_report.summary())
assert not bad_report.passed and bad_report.reasons[0].startswith("bounded")
b = bad_report.checks["bounded"]
fig, ax = plt.subplots(figsize=(5, 3.5))
for comp, values in b["bad_bonus"].items():
    ax.loglog(b["G"], np.abs(values) + 1e-12, "o-", ms=3, label=comp)
ax.set_xlabel("group size G (one incorrect rollout: p̂ = 1/G)")
ax.set_ylabel("|B_b| of the incorrect rollout")
ax.set_ylim(1e-3, None)
ax.legend(fontsize=8)
ax.grid(alpha=0.3, which="both")

# %% [markdown]
# ## 3. Save and load
#
# `save_schedule` writes the schedule, its verification (verdict, reasons, key numbers, inputs)
# and provenance atomically; `load_schedule` gives back the `GainSchedule` -- and refuses one
# whose verification failed unless `force=True`.

# %%
out = Path(tempfile.mkdtemp())
save_schedule(out / "g2rpo-b.json", schedule, report)
save_schedule(out / "unclipped.json", unclipped, bad_report)
print((out / "g2rpo-b.json").read_text()[:600], "...")
loaded = load_schedule(out / "g2rpo-b.json")
assert loaded.to_dict() == schedule.to_dict()
print("loaded:", loaded.to_dict())
try:
    load_schedule(out / "unclipped.json")
except ValueError as err:
    print("refused:", err)
else:
    raise AssertionError("a failed schedule must be refused")
