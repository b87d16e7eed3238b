"""GRPO vs G²RPO on a tiny language model, with the mean-field prediction.

A tiny GPT-2 (2 layers, 64 wide, built from a config: nothing downloaded) learns the embedded
arithmetic task (:class:`simplexlab.llm.ArithmeticTask`: write an expression over digits equal to
a target; four exactly-labelled correct families -- literal, sum, difference, product -- and five
bad modes). A supervised warm start leaves it with several correct families of unequal mass; from
the same warm-started weights and the same sampling seed, GRPO and G²RPO then train, G²RPO with
the schedule of ``experiments/schedules/g2rpo-b.toml`` (schedule B, λ0 = 1.5, the neutralizer,
``B_max = 5``), verified here first on the (K, M) = (4, 5) bandit and its ODE
(:func:`simplexlab.verify.verify_schedule`; the run stops if it fails), then used unchanged, with
the driver of :mod:`simplexlab.llm` (clipped surrogate ε = (0.20, 0.28), token-mean, AdamW, no
KL). The policy's mode masses are computed exactly every step (all 310 well-formed completions of
every target are scored).

The figure plots the bad mass ``p``, the concentration ``L_y`` and the number of modes ``K̂``
(good families with ``y_j > 0.05``), means over the nine targets, seed means with min–max bands,
next to the mean-field prediction (dashed) integrated from the measured initial ``(p, y, z)`` of
every target: GRPO eq. (22), G²RPO eq. (56). Its one free number, the time scale ``t = c·step``,
is fitted on GRPO's ``p`` only; ``L_y`` and ``K̂`` of both methods are predicted, not fitted.
Reproduces the claim of G² §5 / Fig. 2 (GRPO loses modes, G²RPO keeps them) on a model small
enough to train on a laptop CPU; not a figure of the paper.

Run: ``simplexlab train`` (quick, one seed) or ``simplexlab train --full`` (three seeds; the
committed ``figures/llm-train.png``); both are ``simplexlab reproduce llm-train [--full]``.
"""

from __future__ import annotations

import copy

import numpy as np

from simplexlab.lab import Context, experiment

METHODS = ("grpo", "g2rpo")
LABELS = {"grpo": "GRPO", "g2rpo": "G²RPO (schedule B, λ0 = 1.5, neutralizer, B_max = 5)"}


def settings(quick: bool) -> dict:
    common = {"prompts_per_step": 16, "group_size": 16, "lr": 1e-3, "warm_batch": 64,
              "warm_lr": 3e-3}
    if quick:
        return {**common, "seeds": 1, "warm_steps": 800, "steps": 40}
    return {**common, "seeds": 3, "warm_steps": 1500, "steps": 150}


def _warm_model(ctx: Context, st: dict, seed: int, task):
    """The warm-started tiny model of ``seed`` (cached in ``<out>/cache/``, written atomically,
    so a resumed run does not redo it)."""
    import torch

    from simplexlab.lab import atomic_write_bytes
    from simplexlab.llm import tiny_model, warm_start

    model = tiny_model(task.vocab_size, seed=seed)
    path = ctx.out / "cache" / f"llm-train-{ctx.mode}-warm-{seed}.pt"
    if path.exists():
        model.load_state_dict(torch.load(path, weights_only=True))
        return model
    torch.manual_seed(seed)
    warm_start(model, task, steps=st["warm_steps"], batch=st["warm_batch"], eta=st["warm_lr"],
               seed=seed, progress=lambda it: ctx.progress(it, desc=f"warm start, seed {seed}"))
    import io

    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    atomic_write_bytes(path, buf.getvalue())
    return model


@experiment(
    "llm-train",
    reproduces="G² §5 claim (GRPO loses solution modes, G²RPO keeps them) on a tiny GPT-2 and "
               "the embedded arithmetic task, with the mean-field prediction; not a paper figure",
    cost={"quick": "~3 min", "full": "~24.5 min"},
    requires=("torch", "transformers"),
)
def run(ctx: Context) -> dict:
    """GRPO vs G²RPO on a tiny GPT-2 with exact mode masses and the mean-field prediction."""
    from simplexlab.lab import claim_lines, figure_note, plot_training
    from simplexlab.llm import (
        DEFAULT_SCHEDULE,
        ArithmeticTask,
        TrainConfig,
        fit_time_scale,
        predict,
        train,
    )
    from simplexlab.verify import verify_schedule

    st = settings(ctx.quick)
    task = ArithmeticTask()
    schedule = DEFAULT_SCHEDULE
    report = verify_schedule(schedule, K=task.K, M=task.M, progress=ctx.show_progress)
    if not report.passed:
        raise RuntimeError(f"the G²RPO schedule failed verification: {report.reasons}")
    runs: dict[str, list] = {m: [] for m in METHODS}
    for s in range(st["seeds"]):
        seed = ctx.seed + s
        warm = _warm_model(ctx, st, seed, task)
        for method in METHODS:
            model = copy.deepcopy(warm)
            cfg = TrainConfig(method=method, steps=st["steps"], eta=st["lr"], seed=seed,
                              schedule=schedule if method == "g2rpo" else None,
                              prompts_per_step=st["prompts_per_step"],
                              group_size=st["group_size"])
            res = train(model, task, cfg, out=ctx.out / "cache",
                        name=f"llm-train-{ctx.mode}-seed{seed}-{method}", resume=True,
                        progress=ctx.show_progress)
            runs[method].append(res["history"])

    steps = np.asarray([r["step"] for r in runs["grpo"][0]], float)
    # the mean-field prediction from seed 0's measured start (both methods share it)
    time_scale = fit_time_scale(runs["grpo"][0], task.K)
    pred = {m: predict(runs[m][0][0], task.K, steps, method=m, time_scale=time_scale,
                       schedule=schedule)
            for m in METHODS}

    fig = plot_training(runs, pred, K=task.K, labels=LABELS, title=(
        f"Tiny GPT-2 on the arithmetic task (K = 4 families, M = 5 bad modes): GRPO vs G²RPO, "
        f"P = {st['prompts_per_step']} prompts × G = {st['group_size']}; mean-field time scale "
        f"t = {time_scale:.3g}·step fitted on GRPO's p only"))
    figure_note(fig, claim_lines(ctx.name, ctx.out), differs=[
        "G² §5 trains 7B/14B LLMs and clusters modes by embedding; here a 2-layer GPT-2 "
        "(n_embd 64) on an arithmetic task with known modes and exact mode masses",
        f"{st['seeds']} seed{'s' * (st['seeds'] > 1)}, {st['steps']} steps, "
        f"learning rate {st['lr']:g}"])
    ctx.savefig(fig, "llm-train")

    final = {m: {k: [float(h[-1][k]) for h in runs[m]] for k in ("p", "L_y", "K_hat",
                                                                   "accuracy")}
             for m in METHODS}
    start = {k: float(runs["grpo"][0][0][k]) for k in ("p", "L_y", "K_hat")}
    return {
        "parameters": {**st, "task": "arithmetic", "model": "GPT-2, 2 layers, n_embd 64",
                       "schedule": schedule.to_dict()},
        "schedule_verification": report.key_numbers(),
        "time_scale": time_scale,
        "start": start,
        "final": final,
        "prediction_final": {m: {k: float(pred[m][k][-1]) for k in ("p", "L_y", "K_hat")}
                             for m in METHODS},
        "histories": {m: [[{k: r[k] for k in ("step", "p", "L_y", "K_hat", "accuracy")
                            if k in r} for r in h] for h in runs[m]] for m in METHODS},
    }
