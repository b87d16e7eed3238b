"""``simplexlab train [CONFIG]``: the LLM driver from the command line.

Without ``CONFIG`` it runs the registered experiment ``llm-train`` (the embedded tiny GPT-2 and
arithmetic task, GRPO vs G²RPO, the mean-field prediction; ``--quick`` one seed, ``--full``
three). With a TOML ``CONFIG`` it trains one model as the file says::

    name = "my-run"              # result files <out>/<name>.json, .ckpt, .png
    out = "runs"                 # output folder (default runs/; --out overrides)

    [model]
    path = "path/to/model"       # a local save_pretrained folder; omit for the embedded tiny GPT-2
    seed = 0                     # initial weights of the tiny model

    [task]                       # the embedded arithmetic task and its options
    family_weights = [0.55, 0.25, 0.13, 0.07]

    [warm_start]                 # supervised warm start before RL (steps = 0: none)
    steps = 800
    eta = 3e-3                   # AdamW's rate

    [train]                      # simplexlab.llm.TrainConfig fields
    method = "g2rpo"
    eta = 3e-4                   # AdamW's rate
    schedule = "schedule.json"   # from `simplexlab schedule verify` (--force: accept a failed one)
    steps = 100

A local model must use the task's token ids (a model saved from an earlier run of the embedded
task, or any causal LM whose vocabulary covers ids 0–16). Progress bar with ETA; ``--resume``
continues from ``<out>/<name>.ckpt``.

The llm layer (torch) is imported only when the command runs.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from .._version import install_command
from ._cli_args import MAX_SEED, _path_arg, _seed_arg

SECTIONS = {"name", "out", "model", "task", "warm_start", "train"}


def add_parser(sub) -> None:
    p = sub.add_parser(
        "train", help="train a causal LM with GRPO / G²RPO (needs the llm extra)",
        description="Without CONFIG: the embedded tiny GPT-2 on the arithmetic task, GRPO vs "
        "G²RPO with the mean-field prediction (the experiment llm-train). With a TOML CONFIG: "
        "one training run as the file says (example: experiments/train/tiny-g2rpo.toml).")
    p.add_argument("config", nargs="?", default=None, help="a TOML file (optional)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", default=True,
                      help="one seed, short runs (default); figures/quick/")
    mode.add_argument("--full", action="store_true", help="three seeds; figures/")
    p.add_argument("--out", type=_path_arg, default=None, help="output folder")
    p.add_argument("--seed", type=_seed_arg, default=0, help=f"run seed, 0 .. {MAX_SEED}")
    p.add_argument("--resume", action="store_true",
                   help="continue from the checkpoints of an interrupted run")
    p.add_argument("--force", action="store_true",
                   help="accept a schedule JSON whose verification failed")
    p.set_defaults(func=cmd_train)


def cmd_train(args) -> int:
    from importlib.util import find_spec

    missing = [m for m in ("torch", "transformers") if find_spec(m) is None]
    if missing:
        print(f"error: `simplexlab train` needs {' and '.join(missing)}: "
              f"{install_command('llm')}", file=sys.stderr)
        return 2
    if args.config is None:
        from .._results import writable_folder
        from ._registry import default_out_dir, run_experiment

        quick = not args.full
        out = Path(args.out) if args.out else default_out_dir(quick)
        try:
            writable_folder(out, "--out")
            rec = run_experiment("llm-train", quick=quick, out=out, seed=args.seed)
        except (OSError, ValueError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        print(f"[llm-train] done in {rec['wall_seconds']:.0f}s: {', '.join(rec['figures'])}, "
              f"llm-train.json in {out}")
        return 0
    try:
        plan = _plan(Path(args.config), args)
        return _run(plan, args)
    except (OSError, ValueError, tomllib.TOMLDecodeError) as err:  # bad input, a refused
        print(f"error: {err}", file=sys.stderr)  # checkpoint, an unwritable disk: one line
        return 2


def _plan(path: Path, args) -> dict:
    from .._checks import is_int
    from .._results import check_file_name, read_toml, writable_folder
    from ..llm import ArithmeticTask, TrainConfig
    from ..verify import load_schedule

    raw = read_toml(path)  # a ValueError naming the file when it does not parse or is a folder
    unknown = sorted(set(raw) - SECTIONS)
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {unknown}; known: {sorted(SECTIONS)}")
    for key in ("model", "task", "warm_start", "train"):
        if not isinstance(raw.get(key, {}), dict):
            raise ValueError(f"{path}: [{key}] must be a table; got {raw[key]!r}")
    model = dict(raw.get("model", {}))
    bad = sorted(set(model) - {"path", "seed"})
    if bad:
        raise ValueError(f"{path}: unknown [model] key(s) {bad}; known: ['path', 'seed']")
    if "seed" in model and not (is_int(model["seed"]) and 0 <= model["seed"] <= MAX_SEED):
        raise ValueError(f"{path}: [model] seed must be an integer in [0, {MAX_SEED}]; got "
                         f"{model['seed']!r}")
    if "path" in model:
        if not isinstance(model["path"], str) or not model["path"].strip():
            raise ValueError(f"{path}: [model] path must be a folder's path (a string); got "
                             f"{model['path']!r}")
        if not (Path(model["path"]).expanduser() / "config.json").is_file():
            raise ValueError(f"{path}: [model] path {model['path']!r} is not a folder written "
                             "by save_pretrained (no config.json); the driver loads local "
                             "models only")
    task_opts = dict(raw.get("task", {}))
    if task_opts.pop("name", "arithmetic") != "arithmetic":
        raise ValueError(f"{path}: the only built-in task is 'arithmetic'")
    try:
        task = ArithmeticTask(**{k: tuple(v) if isinstance(v, list) else v
                                 for k, v in task_opts.items()})
    except TypeError as err:
        raise ValueError(f"{path}: [task]: {err}") from None
    warm = dict(raw.get("warm_start", {}))
    bad = sorted(set(warm) - {"steps", "batch", "eta"})
    if bad:
        raise ValueError(f"{path}: unknown [warm_start] key(s) {bad}")
    from ..llm import check_warm_start  # before the model is built or loaded

    check_warm_start(**warm, where=f"{path} [warm_start]")
    train = dict(raw.get("train", {}))
    if isinstance(train.get("schedule"), str):
        sched = Path(train["schedule"])
        if not sched.is_absolute():
            sched = path.parent / sched
        train["schedule"] = load_schedule(sched, force=args.force)
    try:
        cfg = TrainConfig.from_dict({**train, **({"seed": args.seed} if "seed" not in train
                                                  else {})})
    except (TypeError, ValueError) as err:  # e.g. betas = 3: not a pair
        raise ValueError(f"{path}: [train]: {err}") from None
    name = check_file_name(raw.get("name", path.stem), f"{path}: name")
    out = writable_folder(args.out or raw.get("out", "runs"),
                          "--out" if args.out else f"{path}: out")
    return {"name": name, "out": out, "model": model, "task": task,
            "warm": warm, "cfg": cfg}


def _run(plan: dict, args) -> int:
    from .._results import atomic_write_bytes
    from ..llm import fit_time_scale, load_model, predict, tiny_model, train, warm_start
    from ._plotting import plot_training
    from ._progress import progress

    task, cfg, name, out = plan["task"], plan["cfg"], plan["name"], plan["out"]
    ckpt = out / f"{name}.ckpt"
    resuming = args.resume and ckpt.exists()
    if "path" in plan["model"]:
        model = load_model(plan["model"]["path"])
    else:
        model = tiny_model(task.vocab_size, seed=int(plan["model"].get("seed", 0)))
    if plan["warm"].get("steps", 0) and not resuming:
        warm_start(model, task, seed=cfg.seed, progress=lambda it: progress(it, "warm start"),
                   **plan["warm"])
    try:
        res = train(model, task, cfg, out=out, name=name, resume=args.resume)
    except KeyboardInterrupt:
        print(f"\ninterrupted; the last checkpoint is {ckpt}; resume with: simplexlab train "
              f"{args.config} --resume", file=sys.stderr)
        return 130
    hist = res["history"]
    pred = None
    if cfg.method in ("grpo", "g2rpo") and sum("p_per_target" in r for r in hist) > 2:
        time_scale = fit_time_scale(hist, task.K, method=cfg.method, schedule=cfg.schedule)
        steps = [r["step"] for r in hist if "p_per_target" in r]
        pred = {cfg.method: predict(hist[0], task.K, steps, method=cfg.method,
                                    schedule=cfg.schedule, time_scale=time_scale)}
    import io

    fig = plot_training({cfg.method: [hist]}, pred, K=task.K, title=(
        f"{name}: {cfg.method}, {cfg.steps} steps, P = {cfg.prompts_per_step} × G = "
        f"{cfg.group_size}" + ("" if pred is None else
                               "; mean-field time scale fitted on this run's p")))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=130, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    atomic_write_bytes(out / f"{name}.png", buf.getvalue())
    last = hist[-1]
    print(f"{name}: step {last['step']}, accuracy {last.get('accuracy', float('nan')):.3f}, "
          f"L_y {last.get('L_y', float('nan')):.3f}, K̂ {last.get('K_hat', float('nan')):.2f} "
          f"-> {out / (name + '.json')}, {out / (name + '.png')}")
    return 0
