# %% [markdown]
# # A first verified gain schedule
#
# Before a G²RPO gain schedule goes to training, `verify_schedule` runs five checks (the flip
# of the collision drift, neutrality of `p`, a bounded bad bonus, the `L_y` it reaches, the
# finite-group bandit against the ODE) and returns a report; `save_schedule` writes the schedule
# with its verification, and `load_schedule` refuses one that failed. The command line does the
# same: `simplexlab schedule verify experiments/schedules/g2rpo-b.toml --out g2rpo-b.json`.
# (Small settings here, so that the page builds fast.)

# %%
import tempfile
from pathlib import Path

from simplexlab.shaping import GainSchedule
from simplexlab.verify import load_schedule, save_schedule, verify_schedule

schedule = GainSchedule(kind="B", gain=1.5, neutralize=True, B_max=5.0)   # G²RPO eq. (67)
report = verify_schedule(schedule, num_steps=50, seeds=8)
print(report)

# %%
path = Path(tempfile.mkdtemp()) / "g2rpo-b.json"
save_schedule(path, schedule, report)
print(load_schedule(path))            # a failed (or edited) file is refused unless force=True
