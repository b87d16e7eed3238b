# %% [markdown]
# # A first phase portrait
#
# A prompt's policy over `K` good and `M` bad modes is `P = ((1 − p) y, p z)`: bad mass `p`,
# within-good composition `y`, within-bad composition `z` (G²RPO §3,
# [the coordinates](../concepts/coordinates.html)). Under GRPO the good composition follows the
# collision field `V(y) = y ⊙ y − ‖y‖² y`, which concentrates the mass on one mode.

# %%
import jax

jax.config.update("jax_enable_x64", True)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import simplexlab as sl  # noqa: E402
from simplexlab.lab import stream_on_simplex, ternary_axes, to_cartesian  # noqa: E402

s0 = sl.make_state(p=0.8, y=np.array([0.5, 0.3, 0.2]), z=np.array([0.7, 0.3]))
grpo = sl.GRPO(eta=1.0)                                    # G²RPO eq. (22)
g2 = sl.Neutralized(sl.ScheduleB(2.0))                     # eq. (56) with schedule B (67)
sol, sol_g2 = sl.solve(grpo, s0, t1=40.0), sl.solve(g2, s0, t1=40.0)
print("GRPO  final y:", np.round(np.asarray(sol.y[-1]), 3), " L_y:", float(sol.L_y[-1]))
print("G²RPO final y:", np.round(np.asarray(sol_g2.y[-1]), 3), " L_y:", float(sol_g2.L_y[-1]))

# %% [markdown]
# The flow of `y` on the good simplex, with both trajectories: GRPO runs to a vertex (one mode
# wins), G²RPO's bonus reverses the collision and spreads the mass.

# %%
fig, ax = plt.subplots(figsize=(4.5, 4))
ternary_axes(ax, title="collision flow of y")
stream_on_simplex(ax, lambda y: np.asarray(sl.theory.collision_field(y)), n=20)
for s, label in ((sol, "GRPO"), (sol_g2, "G²RPO")):
    xy = to_cartesian(np.asarray(s.y))
    ax.plot(xy[:, 0], xy[:, 1], lw=2, label=label)
ax.legend(loc="upper right")
plt.show()
