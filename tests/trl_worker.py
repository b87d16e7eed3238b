"""One process of the two-process TRL run of ``test_trl.py`` (``torch.distributed.run
--nproc_per_node 2``, gloo on the CPU). Not a test module.

    python -m torch.distributed.run --nproc_per_node 2 trl_worker.py MODEL OUT

Each process holds half of one group (``per_device_train_batch_size = G / 2``), so a group is
whole only after the adapter's gather. Every step, each process saves what the adapter saw and
did (``lab_last``) and its own prompts, to ``OUT/rank{r}_step{k}.pt``.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_trl import TASK, G, _trainer, mode_fn  # noqa: E402

from simplexlab.shaping import GainSchedule  # noqa: E402

model, out = Path(sys.argv[1]), Path(sys.argv[2])
sched = GainSchedule(kind="B", gain=1.5, B_max=5.0)
trainer = None


def rank_mode_fn(prompts, completions):
    """``test_trl.mode_fn``, but mode 1 only at position 1 of process 1: the group's correct
    completions then have unequal cluster masses (3 : 1), so the bonus is not 0 and it differs
    between the processes' halves -- a wrong gather order would show."""
    ids = mode_fn(prompts, completions)
    if trainer.accelerator.process_index == 0:
        ids = [0 if i == 1 and m == 1 else m for i, m in enumerate(ids)]
    return ids


trainer = _trainer(model, out / "trainer", per_device=G // 2, steps=2, mode_fn=rank_mode_fn,
                   schedule=sched, num_clusters=TASK.num_modes)
rank, calls = trainer.accelerator.process_index, []
orig = trainer._generate_and_score_completions


def spy(inputs):
    res = orig(inputs)
    rec = {k: (v.detach().cpu().clone() if torch.is_tensor(v) else v)
           for k, v in trainer.lab_last.items()}
    rec["prompts"] = [x["prompt"] for x in inputs]
    rec["world"] = trainer.accelerator.num_processes
    torch.save(rec, out / f"rank{rank}_step{len(calls)}.pt")
    calls.append(1)
    return res


trainer._generate_and_score_completions = spy
trainer.train()
assert trainer.state.global_step == 2
trainer.accelerator.wait_for_everyone()
if torch.distributed.is_initialized():
    torch.distributed.destroy_process_group()
