"""Tiny sweeps of every simulator of ``sim.SIMULATORS`` and of the mean-field target under several
chunk layouts, run in a subprocess by ``test_sweep.py`` with a given number of host devices.
Not a test module.

    python sweep_layout_worker.py OUT --devices N [--only CASE ...]

Writes ``OUT/<case>.<layout>.npz`` (every data variable of the Dataset) for each case of
:data:`CASES` and each layout: the default memory budget, and on one device also one run per
device; for the blocked mean-field sweep also three runs per device and a memory budget of about
five runs per device.
``test_sweep.py`` asserts that all of them, at every device count, are bit-identical.
"""

import argparse
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--devices", type=int, default=1)
ap.add_argument("--only", nargs="*", default=None, help="run only these cases")
args = ap.parse_args()
# the device count alone: XLA's default optimization level, not the suite's level 0
# (tests/conftest.py), since these workers check that the bits of the programs users run
# do not depend on the layout
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

from simplexlab import sim, sweep  # noqa: E402

STEPS = {"num_steps": 4, "stride": 2}
#: ``{case: (target, grid, fixed, seeds)}``, one per simulator and two mean-field ones (blocks of
#: 4 trajectories with a partial last block; the default block, larger than the whole sweep)
CASES = {
    "categorical": ("categorical", {"group_size": [2, 4], "focal_gamma": [0.0, 1.0]},
                    {"num_actions": 40, "num_correct": 5, "optimizer": "adam", **STEPS}, 3),
    # group sizes 2, 3: two power-of-two buckets (2, 4), each its own program
    "bandit": ("bandit", {"eta": [0.05, 0.2], "group_size": [2, 3]},
               {"num_prompts": 2, **STEPS}, 3),
    "shared_bandit": ("shared_bandit", {"eta": [0.5, 1.0], "group_size": [2, 3]},
                      {"num_prompts": 2, "pool_size": 4, **STEPS}, 3),
    "classifier": ("classifier", {"eta": [0.1, 0.5], "group_size": [4, 8]},
                   {"max_group_size": 8, **STEPS}, 3),
    "product": ("product", {}, {"length": 6, "group_size": 3, **STEPS}, 7),
    "two_stage": ("two_stage", {"eta": [0.1, 0.3], "group_size": [2, 4]},
                  {"max_group_size": 4, **STEPS}, 3),
    "meanfield": ("meanfield", {"gain": [0.5, 1.0, 2.0]},
                  {"t1": 2.0, "n_save": 3, "block": 4}, 5),
    "meanfield_one_block": ("meanfield", {"gain": [0.5, 2.0]}, {"t1": 2.0, "n_save": 3}, 5),
}
missing = set(sim.SIMULATORS) - {c[0] for c in CASES.values()}
assert not missing, f"add a case for {sorted(missing)}"

n = args.devices
# one device: the default chunks (12 runs per device) and one run per device; four devices: the
# default chunks (3 runs per device; one program compiled per case, the test's time)
LAYOUTS = {"default": {}, "chunk1": {"chunk_size": n}} if n == 1 else {"default": {}}
for case, (target, grid, fixed, seeds) in CASES.items():
    if args.only is not None and case not in args.only:
        continue
    layouts = dict(LAYOUTS)
    if case == "meanfield":  # blocks of 4: also 3 runs per device, and a budget of 5 per device
        t = sweep.make_target(target)
        b = t.batch({**t.static_params(), **fixed}, "auto")
        layouts.update(chunk3={"chunk_size": 3 * n},
                       budget={"memory_budget": n * (b.bytes_per_run + 5 * b.bytes_out)})
    for layout, kw in layouts.items():
        ds = sweep.run(target, grid, fixed=fixed, seeds=seeds, seed=3, progress=False, **kw)
        np.savez(os.path.join(args.out, f"{case}.{layout}.npz"),
                 **{k: v.values for k, v in ds.data_vars.items()},
                 chunks=np.asarray(ds.attrs["chunks"]))
print("done", n)
sys.stdout.flush()
