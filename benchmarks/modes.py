"""Goal: mode discovery for free text -- all-MiniLM-L6-v2 embeddings + DBSCAN per
prompt (``simplexlab.llm.discover_modes``, G² §5) -- for one training step's rollouts, 256
prompts × 16 short completions, in ≤ 30 s on the 2-core CPU.

The completions are synthetic solutions of word problems ("Ana has 37 marbles and gets 48 more"):
each prompt draws 2–4 of six solution methods (direct sum, counting on, tens and ones, an
equation, guess and check, a table) with Dirichlet masses, and every completion fills its
method's template (three wordings each) with random closings, so that few completions are exact
duplicates (the count of distinct texts is reported). Two lengths, both measured and reported:

- ``short`` (the goal's workload): the solution sentence and the answer sentence, 9–30 words
  ("Adding 37 and 48 directly gives 85. Final answer: 85.");
- ``long``: the same with an opener, a restatement of the problem and a concluding sentence,
  22–47 words (the workload of the first measurement, 2026-11-24: 37.3 s, goal not met). The
  encoder's cost is linear in word pieces (dense layers: ~21 MFLOP per word piece), so the two
  rows bracket the length up to which the goal holds.
 Timed, after the
model is loaded and warmed up (load time reported apart): :func:`embed` of all completions, and
:func:`discover_modes` on those embeddings (DBSCAN with the module's defaults, one group per
prompt). Also reported: how well the clusters match the methods (adjusted Rand index per prompt).

Baseline (same run, its own worker): the same model one text at a time (``embed([t])``, the
naive loop) on a subset, extrapolated to all completions; and, where importable,
``SentenceTransformer(...).encode`` (batch 32, its default) of the package's folder on a subset,
extrapolated -- the reference implementation of the same embedding.
"""

from __future__ import annotations

import time

from ._common import Row, cpu_seconds, fmt_bytes, fmt_seconds, machine_short, peak_rss

NAME = "modes"
BEST = "run_s"
P, G = 256, 16
GOAL_S = 30.0
BATCH = 32

NAMES = ["Ana", "Ben", "Carla", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun"]
OBJECTS = ["apples", "marbles", "coins", "books", "stamps", "pencils", "cards", "shells"]
OPEN = ["", "Step by step. ", "We need the total. ", "My reasoning: ", "Read it carefully. "]
CONN = ["So", "Therefore", "Hence", "Thus", "This means"]
CLOSE = ["The answer is {s}.", "Final answer: {s}.", "So the answer is {s}.", "Answer: {s}.",
         "That gives {s}."]
METHODS = [
    ["Add the two amounts directly: {a} + {b} = {s}.",
     "Adding {a} and {b} directly gives {s}.",
     "The sum of {a} and {b} is {s}."],
    ["Start from {a} {obj} and count on {b} more until we reach {s}.",
     "Counting on {b} from {a}, one at a time, we arrive at {s}.",
     "Begin at {a} and count up {b} steps to get {s}."],
    ["Split into tens and ones: {at} + {bt} tens and {ao} + {bo} ones make {s}.",
     "Break {a} and {b} into tens and ones, add each part, and recombine to get {s}.",
     "Tens first: {at} + {bt} tens, then ones: {ao} + {bo}; together that is {s}."],
    ["Let x be the total number of {obj}. Then x = {a} + {b}, so x = {s}.",
     "Write the equation x = {a} + {b} for the total and solve it: x = {s}.",
     "Call the total x; the equation x - {b} = {a} gives x = {s}."],
    ["Guess the total is {s} and check by subtraction: {s} - {b} = {a}, which matches.",
     "Try {s}: subtracting the {b} new {obj} leaves {a}, so the guess checks out.",
     "Check the guess {s} backwards: {s} minus {b} is {a}, as required."],
    ["Make a table with a row for the {a} old {obj} and a row for the {b} new ones; the "
     "column sum is {s}.",
     "In a two-row table, {a} old {obj} and {b} new {obj} add down the column to {s}.",
     "Tabulate: old {obj} {a}, new {obj} {b}, total row {s}."],
]


def shapes(quick: bool) -> dict:
    if quick:
        return {"P": 16, "single": 16, "st": 64}
    return {"P": P, "single": 64, "st": 512}


def synthetic(n_prompts: int, seed: int = 0, length: str = "short"):
    """``(P, G)`` nested list of completions (``length`` ``"short"`` or ``"long"``, see the
    module docstring) and the ``(P, G)`` method of each. The random draws do not depend on
    ``length``: the long text of a completion contains its short text."""
    import numpy as np

    rng = np.random.default_rng(seed)
    texts, methods = [], []
    for _ in range(n_prompts):
        a, b = (int(v) for v in rng.integers(11, 99, 2))
        name, obj = NAMES[rng.integers(len(NAMES))], OBJECTS[rng.integers(len(OBJECTS))]
        k = int(rng.integers(2, 5))
        chosen = rng.choice(len(METHODS), k, replace=False)
        w = rng.dirichlet(np.ones(k))
        row, lab = [], []
        for _ in range(G):
            j = int(chosen[rng.choice(k, p=w)])
            slot = {"a": a, "b": b, "s": a + b, "at": a // 10, "ao": a % 10, "bt": b // 10,
                    "bo": b % 10, "obj": obj, "name": name}
            body = METHODS[j][rng.integers(3)].format(**slot)
            opener, conn = OPEN[rng.integers(len(OPEN))], CONN[rng.integers(len(CONN))]
            close = CLOSE[rng.integers(len(CLOSE))].format(s=a + b)
            if length == "short":
                text = f"{body} {close}"
            else:
                text = (f"{opener}{name} has {a} {obj} and gets {b} more. {body} {conn} {name} "
                        f"has {a + b} {obj}. {close}")
            row.append(text)
            lab.append(j)
        texts.append(row)
        methods.append(lab)
    return texts, np.array(methods)


def modes(opts: dict, length: str = "short") -> dict:
    """Worker: embed all completions, then DBSCAN per prompt."""
    import numpy as np
    import torch
    from sklearn.metrics import adjusted_rand_score

    from simplexlab.llm import discover_modes, embed
    from simplexlab.llm.internal import MAX_SEQ_LENGTH, encoder

    sh = shapes(opts["quick"])
    texts, methods = synthetic(sh["P"], length=length)
    flat = [t for row in texts for t in row]
    words = np.array([len(t.split()) for t in flat])
    t0 = time.perf_counter()
    tok, model = encoder("cpu")
    # multiply-adds of the encoder's dense layers per token (attention scores, GELU, layer norms
    # come on top): the arithmetic floor of the embedding
    dense = sum(p.numel() for n, p in model.named_parameters()
                if n.startswith("encoder.") and p.dim() == 2)
    embed(flat[:BATCH], batch_size=BATCH)  # warm-up (first-call allocations)
    discover_modes(["a", "b"], embeddings=np.eye(2))  # imports scikit-learn
    load_s = time.perf_counter() - t0
    tokens = np.array([len(ids) for ids in tok(flat, truncation=True,
                                                max_length=MAX_SEQ_LENGTH)["input_ids"]])
    distinct = list({t: i for i, t in enumerate(flat)}.values())  # embed() does each text once
    c0, t0 = cpu_seconds(), time.perf_counter()
    E = embed(flat, batch_size=BATCH)
    embed_s, embed_cpu = time.perf_counter() - t0, cpu_seconds() - c0
    t0 = time.perf_counter()
    ids, C = discover_modes(texts, embeddings=E.reshape(sh["P"], G, -1))
    cluster_s = time.perf_counter() - t0
    ari = np.array([adjusted_rand_score(m, i) for m, i in zip(methods, ids, strict=True)])
    found = np.array([len(set(r)) for r in ids])
    true = np.array([len(set(r)) for r in methods])
    return {"run_s": embed_s + cluster_s, "embed_s": embed_s, "embed_cpu_s": embed_cpu,
            "cluster_s": cluster_s, "load_s": load_s, "texts": len(flat),
            "distinct": len(set(flat)), "words_min": int(words.min()),
            "words_mean": float(words.mean()), "words_max": int(words.max()),
            "tokens_mean": float(tokens.mean()), "tokens_max": int(tokens.max()),
            "ari_mean": float(ari.mean()), "ari_exact": float((ari == 1.0).mean()),
            "modes_found_mean": float(found.mean()), "modes_true_mean": float(true.mean()),
            "num_clusters": int(C), "torch_threads": torch.get_num_threads(),
            "tokens_embedded": int(tokens[distinct].sum()),
            "dense_flop": float(2 * dense * tokens[distinct].sum()),
            "batch_size": BATCH, "peak_rss": peak_rss()}


def baseline(opts: dict) -> dict:
    """Worker: one text at a time, and sentence-transformers' encode, on subsets."""
    import numpy as np
    import torch

    from simplexlab.llm import embed
    from simplexlab.llm.internal import model_path

    sh = shapes(opts["quick"])
    texts, _ = synthetic(sh["P"])
    flat = [t for row in texts for t in row]
    n = len(flat)
    embed(flat[:8])  # load + warm-up
    sub = flat[:: max(1, n // sh["single"])][: sh["single"]]
    t0 = time.perf_counter()
    one = np.concatenate([embed([t], batch_size=1) for t in sub])
    single_s = (time.perf_counter() - t0) / len(sub)
    out = {"single_per_text_s": single_s, "single_n": len(sub), "single_total_s": single_s * n,
           "torch_threads": torch.get_num_threads(), "texts": n}
    try:
        import sentence_transformers
        from sentence_transformers import SentenceTransformer
    except ImportError:
        out.update(st=None, run_s=single_s * n, peak_rss=peak_rss())
        return out
    model = SentenceTransformer(str(model_path()), device="cpu")
    model.encode(flat[:8])
    sub = flat[:: max(1, n // sh["st"])][: sh["st"]]
    t0 = time.perf_counter()
    ref = model.encode(sub, batch_size=32, convert_to_numpy=True)
    st_s = (time.perf_counter() - t0) / len(sub)
    ours = embed(sub, batch_size=BATCH)
    out.update(st=sentence_transformers.__version__, st_per_text_s=st_s, st_n=len(sub),
               st_total_s=st_s * n, st_max_abs_diff=float(np.abs(ref - ours).max()),
               single_max_abs_diff=float(np.abs(one - embed(flat[:: max(1, n // sh[
                   "single"])][: sh["single"]])).max()),
               run_s=st_s * n, peak_rss=peak_rss())
    return out


def modes_long(opts: dict) -> dict:
    """Worker: the same on the long texts."""
    return modes(opts, "long")


WORKERS = {"modes": (modes, None), "modes_long": (modes_long, None),
           "baseline": (baseline, None)}


def _measured(m: dict) -> str:
    return (f"{fmt_seconds(m['run_s'])} ({m['texts'] / m['run_s']:.0f} completions/s, "
            f"{m['tokens_embedded'] / m['embed_s'] / 1e3:.1f} k word pieces/s): embed "
            f"{fmt_seconds(m['embed_s'])} (CPU time {fmt_seconds(m['embed_cpu_s'])}), DBSCAN "
            f"{fmt_seconds(m['cluster_s'])} for {m['texts'] // G} groups; model load + "
            f"warm-up {fmt_seconds(m['load_s'])} (once per process)")


def _notes(m: dict) -> str:
    return (f"{m['texts']} completions ({m['distinct']} distinct), {m['words_min']}–"
            f"{m['words_max']} words (mean {m['words_mean']:.1f}), {m['tokens_mean']:.1f} word "
            f"pieces on average (max {m['tokens_max']}); batch {m['batch_size']}, "
            f"{m['torch_threads']} torch threads, float32; the encoder's dense layers alone are "
            f"{m['dense_flop'] / 1e12:.2f} TFLOP ({m['dense_flop'] / m['embed_s'] / 1e9:.0f} "
            f"GFLOP/s wall, {m['dense_flop'] / m['embed_cpu_s'] / 1e9:.0f} per CPU second); "
            f"DBSCAN eps 0.5 euclidean, min_samples 2, noise → singletons; clusters vs the 2–4 "
            f"methods per prompt: {m['modes_found_mean']:.2f} modes found per prompt (true "
            f"{m['modes_true_mean']:.2f}), adjusted Rand index mean {m['ari_mean']:.3f}, "
            f"= 1 on {m['ari_exact'] * 100:.0f} % of prompts")


def rows(results: dict, opts: dict) -> list[Row]:
    m, long, base = results.get("modes"), results.get("modes_long"), results.get("baseline")
    n = shapes(opts["quick"])["P"] * G
    goal = (f"modes: all-MiniLM-L6-v2 embeddings + DBSCAN per prompt of {n // G} prompts × {G} "
            f"short completions (9–30 words) in ≤ {GOAL_S:.0f} s on the CPU")
    if m is None:
        return [Row(NAME, goal, "failed", met="no")]
    met = m["run_s"] <= GOAL_S
    baseline = ratio = "—"
    if base is not None:
        parts = [f"one text at a time: {fmt_seconds(base['single_per_text_s'])} per text "
                 f"({base['single_n']} texts) → {fmt_seconds(base['single_total_s'])} "
                 f"extrapolated"]
        ratios = [f"{base['single_total_s'] / m['embed_s']:.1f}× the one-at-a-time loop"]
        if base.get("st"):
            parts.append(f"sentence-transformers {base['st']} encode (batch 32): "
                         f"{fmt_seconds(base['st_per_text_s'] * 1e3)} per 1000 texts "
                         f"({base['st_n']} texts) → {fmt_seconds(base['st_total_s'])} "
                         f"extrapolated")
            ratios.append(f"{base['st_total_s'] / m['embed_s']:.2f}× sentence-transformers")
        baseline = "; ".join(parts)
        ratio = "; ".join(ratios) + " (embedding only)"
    notes = _notes(m)
    if base is not None and base.get("st"):
        notes += (f"; max |ours − sentence-transformers| {base['st_max_abs_diff']:.1e}, "
                  f"one-at-a-time vs batched {base['single_max_abs_diff']:.1e}")
    limit = None
    if long is not None and long["tokens_mean"] > m["tokens_mean"]:
        # run time is affine in the mean word pieces per completion: where does it reach the goal?
        slope = (long["run_s"] - m["run_s"]) / (long["tokens_mean"] - m["tokens_mean"])
        limit = m["tokens_mean"] + (GOAL_S - m["run_s"]) / slope if slope > 0 else None
        limit = limit if limit is not None and limit > 0 else None
        notes += (f"; long texts below: the goal holds up to ~{limit:.0f} word pieces per "
                  f"completion on average (linear between the two lengths)" if limit else "")
    out = [Row(
        NAME, goal + (" (--quick: 16 prompts)" if opts["quick"] else ""),
        measured=_measured(m), baseline=baseline, ratio=ratio,
        peak_memory=fmt_bytes(max(m["peak_rss"], base["peak_rss"] if base else 0)),
        met=("yes" if met else "no") if not opts["quick"] else "n/a (quick)",
        machine=machine_short(m.get("_jax", {})), notes=notes,
        values={**m, "baseline": base, "met": met, "long": long, "goal_word_pieces": limit})]
    if long is not None:
        out.append(Row(
            NAME + "-long", f"modes, the same on long completions (22–47 words; reference, "
            f"no goal): {n // G} prompts × {G}", measured=_measured(long), baseline="—",
            ratio=f"{long['run_s'] / m['run_s']:.2f}× the short texts' time for "
                  f"{long['tokens_mean'] / m['tokens_mean']:.2f}× their word pieces",
            peak_memory=fmt_bytes(long["peak_rss"]), met="n/a (reference)",
            machine=machine_short(long.get("_jax", {})), notes=_notes(long), values=long))
    return out
