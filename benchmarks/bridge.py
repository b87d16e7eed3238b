"""Goal: the G²RPO bonus + advantages of 256 prompts × 16 rollouts, called from torch
through the bridge (``simplexlab.llm.advantages``), in ≤ 2 ms per call on the CPU; and its ratio
to the rollout step it serves.

The call: float32 rewards in {0, 1} and int64 mode ids (torch's default integer dtype; 8 modes) of
a ``(256, 16)`` batch of groups, G²RPO schedule B (G² eq. 67) with a 100-step warm-up, the
neutralizer (eq. 53) and clustered bad rollouts (G² Alg. 1), noisy verifier δ = (0.05, 0.1),
value checks on (``validate=True``: one flag vector computed in the same program, read back once).
Timed: the first call (it compiles), then the median (and 10th / 90th percentiles) of many calls
at successive training steps (the step is a run-time argument, so none recompiles). Profile of one
call, each part timed alone the same way: the conversions (two ``to_jax`` of the inputs, one
``to_torch`` of the result), and the compiled rule on already-converted arrays (dispatch +
compute); the rest is the bridge's Python (argument checks, cache look-ups). Also timed:
``group_stats`` (the driver's logging).

Baseline (same run, its own worker): the same rule as a JAX user would call it -- ``jax.jit`` of
``simplexlab.shaping.advantages`` on JAX arrays (with the package's run-time checks) -- and the
rollout step it serves: one ``generate`` of 256 × 16 sequences (8 prompt tokens, 8 new tokens,
``do_sample``, temperature 1) by a randomly initialised 2-layer GPT-2 (``n_embd`` 64, 2 heads,
vocabulary 32, built from its config: no download), median of a few calls after a warm-up. The
ratio is bridge time / rollout time.
"""

from __future__ import annotations

import time

from ._common import Row, fmt_bytes, fmt_seconds, machine_short, peak_rss

NAME = "bridge"
BEST = "median_s"
P, G, MODES, PROMPT_LEN, NEW_TOKENS = 256, 16, 8, 8, 8
GOAL_S = 2e-3
RATES = (0.05, 0.1)


def shapes(quick: bool) -> dict:
    if quick:
        return {"calls": 50, "parts": 50, "generate": 1}
    return {"calls": 1000, "parts": 500, "generate": 5}


def _schedule():
    from simplexlab.shaping import GainSchedule

    return GainSchedule(kind="B", gain=1.5, ramp_steps=100)


def _inputs():
    import torch

    gen = torch.Generator().manual_seed(0)
    rewards = (torch.rand(P, G, generator=gen) < 0.4).to(torch.float32)
    modes = torch.randint(0, MODES, (P, G), generator=gen)  # int64
    return rewards, modes


def _median(fn, n: int) -> dict:
    import numpy as np

    ts = np.empty(n)
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        ts[i] = time.perf_counter() - t0
    return {"median": float(np.median(ts)), "p10": float(np.percentile(ts, 10)),
            "p90": float(np.percentile(ts, 90))}


def bridge(opts: dict) -> dict:
    """Worker: ``simplexlab.llm.advantages`` from torch, and its parts."""
    import jax
    import numpy as np
    import torch

    from simplexlab import llm
    from simplexlab.llm.internal import advantages_program, schedule_key

    sh = shapes(opts["quick"])
    rewards, modes = _inputs()
    sched = _schedule()
    kw = {"method": "g2rpo", "schedule": sched, "num_clusters": G, "delta_fn": RATES[0],
          "delta_fp": RATES[1]}
    t0 = time.perf_counter()
    first = llm.advantages(rewards, modes, step=0, **kw)
    first_s = time.perf_counter() - t0
    for i in range(20):  # warm-up
        llm.advantages(rewards, modes, step=i, **kw)
    call = _median(lambda i: llm.advantages(rewards, modes, step=i, **kw), sh["calls"])
    unchecked = _median(lambda i: llm.advantages(rewards, modes, step=i, validate=False, **kw),
                        sh["parts"])

    # the parts of one call: conversions, and the compiled rule on converted arrays
    program = advantages_program("g2rpo", G, schedule_key(sched), (), RATES, True)
    jr, jm = llm.to_jax(rewards), llm.to_jax(modes)
    out, flags = program(jr, jm, None, None, 5)
    to_jax = _median(lambda i: (llm.to_jax(rewards), llm.to_jax(modes)), sh["parts"])
    to_torch = _median(lambda i: llm.to_torch(out), sh["parts"])

    def compiled(i):
        a, f = program(jr, jm, None, None, i)
        np.asarray(f)
        a.block_until_ready()

    compiled_t = _median(compiled, sh["parts"])
    stats_kw = {k: v for k, v in kw.items() if k != "method"}
    llm.group_stats(rewards, modes, step=0, **stats_kw)
    stats = _median(lambda i: llm.group_stats(rewards, modes, step=i, **stats_kw), sh["parts"])
    return {"median_s": call["median"], "p10_s": call["p10"], "p90_s": call["p90"],
            "first_s": first_s, "unchecked_s": unchecked["median"],
            "to_jax_s": to_jax["median"], "to_torch_s": to_torch["median"],
            "compiled_s": compiled_t["median"], "group_stats_s": stats["median"],
            "programs": program._cache_size(), "dtype": str(first.dtype),
            "torch_threads": torch.get_num_threads(), "peak_rss": peak_rss(),
            "devices": len(jax.devices()), "calls": sh["calls"]}


def baseline(opts: dict) -> dict:
    """Worker: the rule jitted in JAX on JAX arrays, and one rollout step of a tiny GPT-2."""
    import jax
    import jax.numpy as jnp
    import torch
    import transformers

    from simplexlab import shaping
    from simplexlab.theory import Verifier

    sh = shapes(opts["quick"])
    rewards, modes = _inputs()
    r, m = jnp.asarray(rewards.numpy()), jnp.asarray(modes.numpy())
    sched, verifier = _schedule(), Verifier(*RATES)
    rule = jax.jit(lambda r, m, step: shaping.advantages(
        "g2rpo", shaping.Groups(r, m), schedule=sched, step=step, verifier=verifier,
        num_clusters=G))
    rule(r, m, 0).block_until_ready()
    jax_t = _median(lambda i: rule(r, m, i).block_until_ready(), shapes(opts["quick"])["parts"])

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=32, n_positions=64,
                                  bos_token_id=0, eos_token_id=1, pad_token_id=1)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    prompts = torch.randint(2, cfg.vocab_size, (P, PROMPT_LEN))
    ids = prompts.repeat_interleave(G, 0)
    gen_kw = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
              "max_new_tokens": NEW_TOKENS, "min_new_tokens": NEW_TOKENS, "do_sample": True,
              "temperature": 1.0, "top_k": 0, "top_p": 1.0, "pad_token_id": cfg.pad_token_id}
    with torch.no_grad():
        shape = tuple(model.generate(**gen_kw).shape)  # warm-up
        gen = _median(lambda i: model.generate(**gen_kw), sh["generate"])
    return {"jax_s": jax_t["median"], "generate_s": gen["median"], "generate_p90_s": gen["p90"],
            "sequences": shape[0], "tokens": shape[1], "torch": torch.__version__,
            "transformers": transformers.__version__, "torch_threads": torch.get_num_threads(),
            "peak_rss": peak_rss(), "run_s": gen["median"]}


WORKERS = {"bridge": (bridge, None), "baseline": (baseline, None)}


def rows(results: dict, opts: dict) -> list[Row]:
    b, base = results.get("bridge"), results.get("baseline")
    goal = (f"bridge: G²RPO bonus + advantages of {P} prompts × {G} rollouts from torch "
            f"through simplexlab.llm, ≤ {GOAL_S * 1e3:.0f} ms per call on the CPU")
    if b is None:
        return [Row(NAME, goal, "failed", met="no")]
    met = b["median_s"] <= GOAL_S
    rest = b["median_s"] - b["to_jax_s"] - b["to_torch_s"] - b["compiled_s"]
    measured = (f"{fmt_seconds(b['median_s'])} median per call (p10–p90 "
                f"{fmt_seconds(b['p10_s'])}–{fmt_seconds(b['p90_s'])}, {b['calls']} calls; "
                f"first call with compile {fmt_seconds(b['first_s'])}); parts: 2 × to_jax "
                f"{fmt_seconds(b['to_jax_s'])}, to_torch {fmt_seconds(b['to_torch_s'])}, "
                f"compiled rule {fmt_seconds(b['compiled_s'])}, the bridge's Python "
                f"{fmt_seconds(max(rest, 0.0))}")
    baseline = ratio = "—"
    if base is not None:
        baseline = (f"the rollout it serves: generate {base['sequences']} sequences × "
                    f"{NEW_TOKENS} new tokens, 2-layer GPT-2 (n_embd 64, vocab 32, "
                    f"{base['torch_threads']} torch threads): "
                    f"{fmt_seconds(base['generate_s'])}; the same rule jitted in JAX on JAX "
                    f"arrays: {fmt_seconds(base['jax_s'])}")
        ratio = (f"{b['median_s'] / base['generate_s'] * 100:.2f} % of the rollout step "
                 f"({base['generate_s'] / b['median_s']:.0f}× shorter); "
                 f"{b['median_s'] / base['jax_s']:.2f}× the JAX-native call")
    return [Row(
        NAME, goal + (" (--quick: fewer calls)" if opts["quick"] else ""),
        measured=measured, baseline=baseline, ratio=ratio,
        peak_memory=fmt_bytes(max(b["peak_rss"], base["peak_rss"] if base else 0)),
        met=("yes" if met else "no") if not opts["quick"] else "n/a (quick)",
        machine=machine_short(b.get("_jax", {})),
        notes=(f"float32 rewards, int64 mode ids (JAX x64 on: zero-copy), schedule B with a "
               f"100-step warm-up, noisy verifier δ = {RATES}; {b['programs']} compiled "
               f"program over all steps; without the value checks "
               f"{fmt_seconds(b['unchecked_s'])} per call; group_stats "
               f"{fmt_seconds(b['group_stats_s'])} per call"),
        values={**b, "baseline": base, "met": met})]
