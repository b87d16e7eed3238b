"""A sweep run in a subprocess by ``test_sweep.py`` (several host devices, or a run that the
test kills). Not a test module. Its grid is ``WORKER_TOML`` of ``test_sweep.py``.

    python sweep_worker.py OUT NAME [--devices N] [--slow] [--chunk-size C]
"""

import argparse
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("name")
ap.add_argument("--devices", type=int, default=1)
ap.add_argument("--slow", action="store_true")
ap.add_argument("--chunk-size", type=int, default=None)
args = ap.parse_args()
# the device count alone: XLA's default optimization level, not the suite's level 0
# (tests/conftest.py), since these workers check that the bits of the programs users run
# do not depend on the layout
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

from simplexlab import sweep  # noqa: E402

GRID = {"group_size": [3, 8], "eta": [0.05, 0.2], "focal_gamma": [0.0, 1.0]}
FIXED = {"num_actions": 300, "num_correct": 30, "optimizer": "adam",
         "surrogate": "log_likelihood", "num_steps": 20, "stride": 5}
if args.slow:
    FIXED = {**FIXED, "num_actions": 4000, "num_correct": 300, "num_steps": 1500, "stride": 500}

ds = sweep.run("categorical", GRID, fixed=FIXED, seeds=3, seed=7, out=args.out, name=args.name,
               chunk_size=args.chunk_size, progress=False)
if ds is not None:
    print(f"devices={ds.attrs['devices']} processes={ds.attrs['processes']} "
          f"computed={ds.attrs['chunks_computed']} loaded={ds.attrs['chunks_loaded']}")
sys.stdout.flush()
