"""The ``simplexlab`` command line: ``list``, ``reproduce``, ``claims`` (the experiment
commands: :mod:`simplexlab.lab._reproduce_cli`), ``sweep``, ``schedule verify``, ``plan`` (how
many generations per prompt), ``verify-advantages`` (the advantage oracle), ``train``
(:mod:`simplexlab.lab._train_cli`; the torch side is imported only when it runs) and ``docs``
(the documentation site, with MkDocs: the ``docs`` extra); the argument types and the JAX
set-up they share: :mod:`simplexlab.lab._cli_args`.

Arguments are parsed before JAX is imported (``simplexlab --help`` answers at once). Before the
first JAX import the CLI asks XLA for one host device per CPU core
(``--xla_force_host_platform_device_count``), so sweeps shard over every core, and then gives
each device one thread (``--xla_cpu_multi_thread_eigen=false``: the devices already fill the
cores); an ``XLA_FLAGS`` that already sets the device count is kept as it is. Quick runs of
``reproduce`` and ``claims`` also ask for XLA's fast-compiling CPU code generation
(:func:`simplexlab._env.use_fast_compile`: their programs mostly run once); ``--full`` keeps the
default, so the committed figures are made as before. What each choice saves is measured in
BENCHMARKS.md. Ctrl-C prints one line (what was saved, how to resume) and exits with status 130.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .._env import progress_enabled
from .._imports import allow_import
from .._interrupt import check, install
from ._cli_args import (
    MAX_SEED,
    _experiments_folder,
    _int_arg,
    _jobs_arg,
    _path_arg,
    _seed_arg,
    _setup_jax,
)
from ._reproduce_cli import _cmd_claims, _cmd_list, _cmd_reproduce


def _cmd_sweep(args) -> int:
    from ..sweep import SweepInterrupted, load_config, run

    given = [a is not None for a in (args.coordinator, args.num_processes, args.process_id)]
    if any(given) and not all(given):
        print("error: --coordinator, --num-processes and --process-id go together",
              file=sys.stderr)
        return 2
    if all(given) or args.distributed:
        import jax

        kw = {} if not all(given) else dict(coordinator_address=args.coordinator,
                                            num_processes=args.num_processes,
                                            process_id=args.process_id)
        jax.distributed.initialize(**kw)

    check()  # a Ctrl-C while the sweep engine was imported
    try:
        allow_import(*args.imports)  # the modules the file may name (method = "mod:rule")
        kwargs = load_config(args.config)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.out is not None:
        kwargs["out"] = Path(args.out)
    if args.memory_budget is not None:
        kwargs["memory_budget"] = args.memory_budget
    out = kwargs["out"]
    t0 = time.perf_counter()
    try:
        ds = run(kwargs.pop("target"), resume=args.resume, **kwargs)
    except (ValueError, OSError) as err:  # bad input, or a full / unwritable disk
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:  # SweepInterrupted, or a Ctrl-C while the sweep is planned
        what = err if isinstance(err, SweepInterrupted) else "sweep interrupted before any chunk"
        print(f"\n{what}; resume with: simplexlab sweep {args.config} --resume"
              f"{'' if args.out is None else f' --out {args.out}'}", file=sys.stderr)
        return 130
    if ds is not None:
        print(f"sweep {kwargs['name']}: {ds.attrs['chunks_computed']} chunks computed, "
              f"{ds.attrs['chunks_loaded']} loaded, {time.perf_counter() - t0:.1f}s -> "
              f"{out / (kwargs['name'] + '.' + kwargs['format'])}")
    return 0


def _cmd_schedule_verify(args) -> int:
    """``simplexlab schedule verify CONFIG --out schedule.json [--report report.json]``: verify
    the G²RPO gain schedule of a TOML file (``[schedule]``: GainSchedule fields; ``[verify]``:
    verify_schedule keyword arguments) and save it with its verification. Exit status 0 when
    it passed, 1 when it failed (the file is still written, marked failed: ``load_schedule``
    refuses it), 2 on bad input."""
    from .._results import atomic_write_json, provenance, writable_file
    from ..verify import load_schedule_config, save_schedule, verify_schedule

    try:
        schedule, options = load_schedule_config(args.config)
        writable_file(args.out, "--out")  # before the verification's compute
        if args.report:
            writable_file(args.report, "--report")
        report = verify_schedule(schedule, **options, progress=progress_enabled())
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(report.summary())
    save_schedule(args.out, schedule, report)
    print(f"wrote {args.out} ({'verified' if report.passed else 'FAILED verification'})")
    if args.report:
        atomic_write_json(args.report, {**report.to_dict(curves=True),
                                        "provenance": provenance()})
        print(f"wrote {args.report}")
    return 0 if report.passed else 1


def _sizes_arg(text: str, what: str):
    """``"2,4,8"`` -> ``[2, 4, 8]`` (``ValueError`` naming the bad entry)."""
    out = []
    for part in text.split(","):
        try:
            out.append(int(part))
        except ValueError:
            raise ValueError(f"{what}: {part.strip()!r} is not an integer group size") from None
    return out


def _prompts_arg(args):
    """The prompt distribution of ``plan --budget``: ``--pass-rates FILE`` (a rollouts file),
    ``--beta a,b`` or ``--mu P`` (one prompt), exactly one of them."""
    from ..theory import PromptSet

    given = [n for n, v in (("--pass-rates", args.pass_rates), ("--beta", args.beta),
                            ("--mu", args.mu)) if v is not None]
    if len(given) != 1:
        raise ValueError("plan --budget needs the prompts' pass rates: exactly one of "
                         "--pass-rates FILE (a rollouts file: prompt_id, reward[, mode_id]), "
                         "--beta a,b (a Beta law) or --mu P (one prompt)"
                         + (f"; got {' and '.join(given)}" if given else ""))
    if args.discover_modes and args.pass_rates is None:
        raise ValueError("--discover-modes reads the completions of a rollouts file: give "
                         "--pass-rates FILE")
    if args.pass_rates is not None:
        if not args.discover_modes:
            return PromptSet.from_rollouts(args.pass_rates, estimator=args.estimator)
        try:
            from ..llm import rollout_modes
        except ImportError as err:
            raise ValueError(f"--discover-modes embeds the completions with all-MiniLM-L6-v2: "
                             f"{err} (install the llm and modes extras)") from None
        data = rollout_modes(args.pass_rates)
        return PromptSet.from_rollouts(data, estimator=args.estimator, name=f"{args.pass_rates}, "
                                       "modes discovered from its completions")
    if args.beta is not None:
        parts = args.beta.split(",")
        if len(parts) != 2:
            raise ValueError(f"--beta wants two numbers a,b; got {args.beta!r}")
        try:
            a, b = (float(x) for x in parts)
        except ValueError:
            raise ValueError(f"--beta wants two numbers a,b; got {args.beta!r}") from None
        return PromptSet.from_beta(a, b)
    if not 0.0 < args.mu < 1.0:
        raise ValueError(f"--mu must be in the open interval (0, 1); got {args.mu!r}")
    return PromptSet.single(args.mu)


def _cmd_plan_budget(args, params) -> int:
    """``simplexlab plan --budget R (--pass-rates FILE | --beta a,b | --mu P) [...]``: how to
    split ``R`` rollouts per step into prompts x ``G`` (:func:`simplexlab.verify.plan_budget`);
    prints the table and ``G*`` for TRL and verl, writes ``budget.json`` (with provenance and
    the ``G*(R)`` curve, :func:`simplexlab.verify.budget_curve`) and ``budget.png`` under
    ``--out``. Exit status 0 with a ``G*``, 2 on bad input."""
    from .._results import writable_file, writable_folder
    from ..verify import budget_curve, plan_budget

    ignored = [flag for flag, v in (("--tau", args.tau), ("--schedule", args.schedule),
                                    ("--drift-group-sizes", args.drift_group_sizes),
                                    ("--num-groups", args.num_groups),
                                    ("--max-modes", args.max_modes),
                                    ("--max-programs", args.max_programs)) if v is not None]
    ignored += [flag for flag, v in (("--avoid-collision", args.avoid_collision),
                                     ("--no-neutralize", args.no_neutralize)) if v]
    if ignored:
        raise ValueError(f"{', '.join(ignored)}: settings of the single-state planner, not of "
                         "plan --budget")
    out = writable_folder(args.out, "--out") if args.out else None  # before any compute
    if out is not None:
        for file in ("budget.json", "budget.png"):
            writable_file(out / file, "--out")
    prompts = _prompts_arg(args)
    settings = dict(method=args.method or "grpo", objective=args.objective, kl=args.kl,
                    features=args.features, num_features=args.num_features, K=args.K or 4,
                    M=args.M, pool_size=args.pool_size, delta_fn=args.delta_fn,
                    delta_fp=args.delta_fp, params=params or None, gain=args.gain,
                    optimizers=tuple(args.optimizers.split(",")))
    report = plan_budget(args.budget, prompts, num_prompts=args.num_prompts,
                         group_sizes=None if args.group_sizes is None
                         else _sizes_arg(args.group_sizes, "--group-sizes"), **settings)
    print(report.to_text())
    if out is not None:
        from ._budget_plot import plot_budget

        curve = budget_curve(prompts, **settings)
        _write_plan(out, "budget", {**report.to_dict(), "curve": curve.to_dict()},
                    lambda: plot_budget(report, curve), "simplexlab plan --budget")
    return 0 if report.best[report.optimizers[0]] is not None else 1


def _write_plan(out, stem: str, payload: dict, figure, software: str) -> None:
    """``out/<stem>.json`` (``payload`` with provenance) and ``out/<stem>.png`` (the figure
    ``figure()`` draws), each written atomically; prints where."""
    import io

    import matplotlib.pyplot as plt

    from .._results import atomic_write_bytes, atomic_write_json, provenance

    path = atomic_write_json(out / f"{stem}.json", {**payload, "provenance": provenance()})
    fig = figure()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight",
                metadata={"Software": software})
    plt.close(fig)
    png = atomic_write_bytes(out / f"{stem}.png", buf.getvalue())
    print(f"wrote {path}, {png}")


def _cmd_plan(args) -> int:
    """``simplexlab plan --mu P [...] [--out DIR]``: how many generations per prompt
    (:func:`simplexlab.verify.plan`); prints the table and the recommendation for TRL and verl,
    writes ``plan.json`` (with provenance) and ``plan.png`` under ``--out``. Exit status 0 with
    a recommendation, 1 when no group size of the grid meets the targets, 2 on bad input. With
    ``--budget R``: the budget planner (:func:`_cmd_plan_budget`)."""
    from .._results import (
        writable_file,
        writable_folder,
    )
    from ..shaping import GainSchedule
    from ..verify import plan

    try:
        params = {}
        for item in args.param or ():
            name, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"--param wants NAME=VALUE; got {item!r}")
            name = name.strip()
            if name in params:  # the last one would silently win
                raise ValueError(f"--param {name} is given twice ({params[name]:g} and "
                                 f"{value.strip()}); give each parameter once")
            try:
                params[name] = float(value)
            except ValueError:
                raise ValueError(f"--param {name}: {value!r} is not a number") from None
        if args.budget is not None:
            return _cmd_plan_budget(args, params)
        budget_only = [flag for flag, v in (("--pass-rates", args.pass_rates),
                                            ("--beta", args.beta),
                                            ("--num-prompts", args.num_prompts)) if v is not None]
        budget_only += ["--discover-modes"] if args.discover_modes else []
        if budget_only:
            raise ValueError(f"{', '.join(budget_only)} go with --budget R (rollouts per step)")
        if args.mu is None:
            raise ValueError("plan needs --mu P (the pass rate of one prompt) or --budget R "
                             "with the prompts' pass rates (--pass-rates FILE or --beta a,b)")
        out = writable_folder(args.out, "--out") if args.out else None  # before any compute
        if out is not None:  # the two files too (a folder named plan.json: before, not after)
            for file in ("plan.json", "plan.png"):
                writable_file(out / file, "--out")
        schedule = None
        if args.schedule is not None or args.no_neutralize:
            schedule = GainSchedule(kind=args.schedule or "B", neutralize=not args.no_neutralize)
        drift_sizes = args.drift_group_sizes
        if drift_sizes is not None and drift_sizes != "all":
            drift_sizes = _sizes_arg(drift_sizes, "--drift-group-sizes")
        report = plan(
            args.mu, tau=args.tau, K=args.K,
            method=args.method or "g2rpo", gain=args.gain, schedule=schedule,
            delta_fn=args.delta_fn, delta_fp=args.delta_fp, M=args.M,
            group_sizes=None if args.group_sizes is None
            else _sizes_arg(args.group_sizes, "--group-sizes"),
            drift_group_sizes=drift_sizes, min_signal=args.min_signal,
            max_tail_miss=args.max_tail_miss, avoid_collision=args.avoid_collision,
            cancel_tol=args.cancel_tol, params=params or None, num_groups=args.num_groups,
            **{k: v for k, v in (("max_modes", args.max_modes),
                                 ("max_programs", args.max_programs)) if v is not None})
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(report.to_text())
    if out is not None:
        from ._plotting import plot_plan

        _write_plan(out, "plan", report.to_dict(), lambda: plot_plan(report), "simplexlab plan")
    return 0 if report.recommended is not None else 1


def _cmd_verify_advantages(args) -> int:
    """``simplexlab verify-advantages MODULE:FUNC --method NAME``: the advantage oracle
    (:func:`simplexlab.verify.check_advantages`) on a function of the user's module, imported
    only through the import gate (``--import`` / ``SIMPLEXLAB_IMPORT``). Exit status 0 when
    every check passes, 1 when one fails, 2 on bad input (one line)."""
    from .._imports import import_user_module
    from .._results import atomic_write_json, provenance, writable_file
    from ..shaping import import_method
    from ..verify import check_advantages

    try:
        module, sep, attr = args.function.partition(":")
        if not sep or not module or not attr:
            raise ValueError(f"{args.function!r}: name the function as MODULE:FUNC (e.g. "
                             "mypkg.adv:compute_advantages)")
        who = f"verify-advantages {args.function}"
        allow_import(*args.imports)
        fn = import_user_module(module, who)
        for part in attr.split("."):
            if not hasattr(fn, part):
                raise ValueError(f"{who}: module {module!r} has no attribute {attr!r}")
            fn = getattr(fn, part)
        method = import_method(args.method, "--method: ")
        params = {}
        for item in args.param or ():
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise ValueError(f"--param wants NAME=VALUE; got {item!r}")
            try:
                params[key.strip()] = float(value)
            except ValueError:
                raise ValueError(f"--param {key.strip()}: {value!r} is not a number") from None
        if args.json:
            writable_file(args.json, "--json")
        if args.convention in ("trl", "verl"):  # torch tensors: simplexlab.llm serves them
            try:
                import simplexlab.llm  # noqa: F401
            except ImportError as err:
                raise ValueError(f"--convention {args.convention} passes torch tensors: "
                                 f"{err} (install the llm extra)") from None
        report = check_advantages(fn, method=method, params=params or None,
                                  convention=args.convention, returns=args.returns,
                                  name=args.function)
    except (OSError, ValueError) as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    print(report.summary())
    if args.json:
        atomic_write_json(args.json, {**report.to_dict(), "provenance": provenance()})
        print(f"wrote {args.json}")
    return 0 if report.passed else 1


def _cmd_docs(args) -> int:
    import importlib.util
    import subprocess

    config = Path(__file__).resolve().parents[2] / "mkdocs.yml"
    if not config.is_file():
        print(f"simplexlab docs: no {config.name} next to the package ({config.parent}); the "
              "site builds from a source checkout", file=sys.stderr)
        return 2
    if importlib.util.find_spec("mkdocs") is None:
        print('simplexlab docs: MkDocs is not installed; install the docs extra: '
              'python -m pip install -e ".[docs]"', file=sys.stderr)
        return 2
    if args.serve:
        command = ["serve", "--strict", "--dev-addr", args.dev_addr]
    else:
        command = ["build", "--strict", "--site-dir", str(Path(args.out).resolve())]
    # MkDocs runs the tutorials (quick mode) and reads the faces; its own process, its own flags
    proc = subprocess.run([sys.executable, "-m", "mkdocs", *command, "-f", str(config)],
                          cwd=config.parent)
    if proc.returncode == 0 and not args.serve:
        print(f"wrote {Path(args.out) / 'index.html'}")
    return proc.returncode


def main(argv: list[str] | None = None) -> int:
    """The ``simplexlab`` command line (``argv`` defaults to the process's arguments); returns
    the exit status: 0 done, 1 failed, 2 bad input, 130 interrupted."""
    if argv is None:  # the command itself (not a call from Python): SIGINT also sets a flag
        install()
    parser = argparse.ArgumentParser(
        prog="simplexlab",
        description="Reproduce the figures of the mean-field RLVR papers (see `simplexlab list`).",
    )
    parser.add_argument("--experiments-dir", default=None, type=_path_arg,
                        help="folder of experiment scripts to import (default: the "
                        "experiments/ of the checkout simplexlab is installed from; never "
                        "./experiments unless named)")
    sub = parser.add_subparsers(dest="command", required=True)
    p_list = sub.add_parser("list", help="registered experiments, what each reproduces, cost")
    p_list.add_argument("-v", "--verbose", action="store_true")
    p_list.set_defaults(func=_cmd_list)
    p_rep = sub.add_parser("reproduce", help="run experiments (all by default), write figures")
    p_rep.add_argument("names", nargs="*", metavar="NAME", help="experiments to run (default all)")
    mode = p_rep.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", default=True,
                      help="small, fast settings (default); writes to figures/quick/")
    mode.add_argument("--full", action="store_true", help="paper-scale settings; writes figures/")
    p_rep.add_argument("--out", type=_path_arg, default=None,
                       help="output folder (default figures/ or "
                       "figures/quick/)")
    p_rep.add_argument("--seed", type=_seed_arg, default=0, help=f"run seed, 0 .. {MAX_SEED}")
    p_rep.add_argument("--resume", action="store_true",
                       help="skip experiments whose result file for this mode and seed exists")
    p_rep.add_argument("--jobs", type=_jobs_arg, default=None, metavar="N",
                       help="worker processes (default 2 on a machine with 2 cores or more; "
                       "1: one process, in order); each experiment runs after its claims in "
                       "one of them, and writes its output to OUT/logs/NAME.log")
    p_rep.add_argument("--no-claims", action="store_true",
                       help="do not evaluate the experiments' claims first (simplexlab claims)")
    p_rep.set_defaults(func=_cmd_reproduce)
    p_cl = sub.add_parser(
        "claims", help="evaluate the papers' claims (all by default); `claims list` lists them",
        description="Evaluate each claim at the paper's setting and over its robustness grid "
        "and write OUT/claims/claims.json, claims.md and the robustness maps "
        "(robustness_*.png). `simplexlab claims list` lists the claims.")
    p_cl.add_argument("names", nargs="*", metavar="NAME",
                      help="claims to evaluate (default all), or `list`")
    cmode = p_cl.add_mutually_exclusive_group()
    cmode.add_argument("--quick", action="store_true", default=True,
                       help="small, fast settings (default); writes to figures/quick/claims/")
    cmode.add_argument("--full", action="store_true",
                       help="paper-scale settings; writes figures/claims/")
    p_cl.add_argument("--out", type=_path_arg, default=None,
                      help="output folder (default figures/ or "
                      "figures/quick/); the report goes to OUT/claims/")
    p_cl.add_argument("-v", "--verbose", action="store_true",
                      help="with `claims list`: the faults each claim declares")
    p_cl.add_argument("--seed", type=_seed_arg, default=0, help=f"run seed, 0 .. {MAX_SEED}")
    p_cl.add_argument("--redraw", action="store_true",
                      help="evaluate nothing: draw claims.md and the robustness maps again from "
                      "OUT/claims/claims.json with this revision's code")
    p_cl.set_defaults(func=_cmd_claims)
    p_sw = sub.add_parser("sweep", help="run a sweep from a TOML file (see experiments/sweeps/)",
                          description="Run the sweep a TOML file describes; the Dataset is "
                          "written to <out>/<name>.nc, finished chunks to <out>/<name>.chunks/.")
    p_sw.add_argument("config", help="the sweep's TOML file")
    p_sw.add_argument("--out", type=_path_arg, default=None,
                      help="output folder (overrides the file's 'out')")
    p_sw.add_argument("--memory-budget", default=None, help="e.g. 2GB (overrides the file)")
    p_sw.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                      help="allow the file to name a rule from MODULE (method = "
                      "\"MODULE:rule\"), or from a submodule of it; repeat for several "
                      "(also: SIMPLEXLAB_IMPORT=MODULE,...). A module the file names is "
                      "imported only when allowed")
    resume = p_sw.add_mutually_exclusive_group()
    resume.add_argument("--resume", dest="resume", action="store_true", default=True,
                        help="reuse finished chunks of the same sweep (default)")
    resume.add_argument("--fresh", dest="resume", action="store_false",
                        help="recompute every chunk")
    dist = p_sw.add_argument_group(
        "several processes or hosts (jax.distributed; every process runs the same command)")
    dist.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                      help="address of process 0's coordinator")
    dist.add_argument("--num-processes", type=int, default=None, metavar="N")
    dist.add_argument("--process-id", type=int, default=None, metavar="I",
                      help="this process's rank, 0 .. N-1 (process 0 writes the results)")
    dist.add_argument("--distributed", action="store_true",
                      help="call jax.distributed.initialize() with no arguments (cluster "
                      "auto-detection, e.g. SLURM)")
    p_sw.set_defaults(func=_cmd_sweep)
    p_sch = sub.add_parser("schedule", help="verify G²RPO gain schedules for training")
    sch = p_sch.add_subparsers(dest="schedule_command", required=True)
    p_ver = sch.add_parser(
        "verify", help="check a gain schedule (flip, neutrality, bounded bonus, L_y, bandit vs "
        "ODE) and save it as JSON", description="Verify the gain schedule of a TOML file "
        "([schedule]: GainSchedule fields; [verify]: verify_schedule options; see "
        "experiments/schedules/) and write it with its verification. Exit status: 0 passed, "
        "1 failed (the JSON is written, marked failed), 2 bad input.")
    p_ver.add_argument("config", help="the schedule's TOML file")
    p_ver.add_argument("--out", type=_path_arg, required=True,
                       help="the schedule file to write (JSON)")
    p_ver.add_argument("--report", default=None,
                       help="also write the full report with the trajectories (JSON)")
    p_ver.set_defaults(func=_cmd_schedule_verify)
    p_plan = sub.add_parser(
        "plan", help="how many generations per prompt: the group size G for TRL / verl",
        description="For each group size G: the probability that a group carries signal, the "
        "rarest good mode's tail-miss probability, the good modes a group sees and the drift "
        "of L_y of the exact finite-group field (collision / cancel / anti-collision) at a "
        "representative state; then the smallest G that meets the targets, as TRL's "
        "num_generations and verl's actor_rollout_ref.rollout.n. Exit status: 0 recommended, "
        "1 no G of the grid meets the targets, 2 bad input.")
    p_plan.add_argument("--mu", type=float, default=None,
                        help="μ: the policy's pass rate (success probability) on the prompts, "
                        "in (0, 1) (with --budget: one prompt of this pass rate)")
    bud = p_plan.add_argument_group(
        "budget", "plan --budget R: how to split R rollouts per step into P prompts x G for a "
        "distribution of prompts (the progress per rollout of the shared-parameter model, "
        "SGD and Adam, and the compute-optimal G*)")
    bud.add_argument("--budget", type=lambda t: _int_arg(t, 2), default=None, metavar="R",
                     help="rollouts per step (R = P x G, R >= 2)")
    bud.add_argument("--pass-rates", type=_path_arg, default=None, metavar="FILE",
                     help="a rollouts file of the base model (JSONL or CSV: prompt_id, reward "
                     "in [0, 1], optional mode_id)")
    bud.add_argument("--beta", default=None, metavar="a,b",
                     help="pass rates from a Beta(a, b) law (a, b > 0)")
    bud.add_argument("--discover-modes", action="store_true",
                     help="the file's modes discovered from its completion column "
                     "(simplexlab.llm.rollout_modes; the llm and modes extras)")
    bud.add_argument("--estimator", choices=("mean", "jeffreys"), default="mean",
                     help="a prompt's pass rate from its file rollouts: k/n or (k+1/2)/(n+1)")
    bud.add_argument("--objective", default="pass", metavar="pass|pass@k|diversity",
                     help="what a step should raise: the pass rate (default), pass@k, or the "
                     "diversity of the good modes (1 - L_y)")
    bud.add_argument("--num-prompts", type=lambda t: _int_arg(t, 1), default=None, metavar="P",
                     help="fix P, prompts per step (then G = R/P)")
    bud.add_argument("--kl", type=float, default=1.0,
                     help="the trust region: the price of a nat of KL per step (default 1)")
    bud.add_argument("--features", choices=("random", "onehot", "shared"), default="random",
                     help="how the prompts share parameters (default random unit features; "
                     "onehot: each prompt its own logits)")
    bud.add_argument("--num-features", type=lambda t: _int_arg(t, 1), default=8, metavar="D",
                     help="D of the random features (default 8)")
    bud.add_argument("--pool-size", type=lambda t: _int_arg(t, 1), default=32, metavar="N",
                     help="prompts standing for the distribution in the model (default 32)")
    bud.add_argument("--optimizers", default="sgd,adam", metavar="sgd,adam",
                     help="the optimizers compared (default sgd,adam)")
    p_plan.add_argument("--tau", type=float, default=None,
                        help="τ: policy mass of the rarest good mode worth keeping, below "
                        "μ/K (default μ/(2K))")
    p_plan.add_argument("--K", "-K", type=int, default=None,
                        help="K, distinct correct answers / strategies (default 4)")
    p_plan.add_argument("--M", "-M", type=int, default=2, help="M (default 2)")
    p_plan.add_argument("--method", default=None,
                        help="advantage rule, a name of simplexlab.shaping.METHODS "
                        "(default g2rpo; with --budget grpo)")
    p_plan.add_argument("--gain", type=float, default=None,
                        help="G²RPO gain λ (constant) or λ0 (schedules A, B); default 1.5")
    p_plan.add_argument("--schedule", choices=("A", "B", "constant"), default=None,
                        help="G²RPO gain schedule (default B)")
    p_plan.add_argument("--no-neutralize", action="store_true",
                        help="G²RPO without the bad-mass neutralizer")
    p_plan.add_argument("--delta-fn", type=float, default=0.0, help="verifier false-negative rate")
    p_plan.add_argument("--delta-fp", type=float, default=0.0, help="verifier false-positive rate")
    p_plan.add_argument("--param", action="append", metavar="NAME=VALUE",
                        help="a parameter of the method (focal_gamma, iac_alpha, progrpo_alpha, "
                             "progrpo_all_correct, ...; one the method does not use is refused, "
                             "naming its own); repeat for several")
    p_plan.add_argument("--num-groups", type=int, default=None,
                        help="groups per batch (reinforce_pp)")
    p_plan.add_argument("--group-sizes", default=None, metavar="G,G,...",
                        help="the grid (default 2,3,4,6,8,12,16,24,32,48,64,96,128,192,256)")
    p_plan.add_argument("--drift-group-sizes", default=None, metavar="G,G,...|all",
                        help="where the drift is computed, one compiled program each (default: "
                        "the powers of 4 of the grid)")
    p_plan.add_argument("--min-signal", type=float, default=0.9,
                        help="target: P(group carries signal) >= this (default 0.9)")
    p_plan.add_argument("--max-tail-miss", type=float, default=0.2,
                        help="target: tail-miss of the rarest mode <= this (default 0.2)")
    p_plan.add_argument("--avoid-collision", action="store_true",
                        help="target: a drift regime other than collision (bisects the grid)")
    p_plan.add_argument("--cancel-tol", type=float, default=0.05,
                        help="the cancel band, a fraction of the G→∞ GRPO collision drift")
    p_plan.add_argument("--max-modes", type=int, default=None, metavar="N",
                        help="size guard: the most modes K + M (default 64; each drift program "
                        "grows with them)")
    p_plan.add_argument("--max-programs", type=int, default=None, metavar="N",
                        help="size guard: the most drift programs compiled (default 64)")
    p_plan.add_argument("--out", type=_path_arg, default=None, metavar="DIR",
                        help="also write DIR/plan.json (with provenance) and DIR/plan.png")
    p_plan.set_defaults(func=_cmd_plan)
    p_va = sub.add_parser(
        "verify-advantages", help="check an advantage function against the lab's exact rule",
        description="Run an advantage function (a framework's, your own) on a battery of groups "
        "-- zero-variance, one valid rollout, ragged, rejected rows, shuffled order, ties, "
        "G = 256, float32 -- against the lab's exact rule; report every deviation with the "
        "smallest group that shows it, and the std convention (ddof, eps) inferred. Exit "
        "status: 0 every check passes, 1 a check fails, 2 bad input.")
    p_va.add_argument("function", metavar="MODULE:FUNC",
                      help="the function, in a module allowed with --import")
    p_va.add_argument("--method", default="grpo",
                      help="the lab's rule it should compute (a name of "
                      "simplexlab.shaping.METHODS, or MODULE:RULE; default grpo)")
    p_va.add_argument("--param", action="append", metavar="NAME=VALUE",
                      help="a parameter of the rule (e.g. std_eps=1e-4); repeat for several")
    p_va.add_argument("--convention", default="plain",
                      choices=("plain", "trl", "verl", "tunix"),
                      help="how the function is called: plain fn(rewards, group_ids[, mask]) "
                      "(default), TRL's (rewards, num_generations) with NaN for a rejected "
                      "row, verl's registered estimator, Tunix's compute_advantages")
    p_va.add_argument("--returns", default="advantages", choices=("advantages", "loss_weights"),
                      help="what the function returns (loss_weights: each rollout's weight in "
                      "the loss gradient)")
    p_va.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                      help="allow MODULE (and its submodules) to be imported; repeat for "
                      "several (also: SIMPLEXLAB_IMPORT=MODULE,...)")
    p_va.add_argument("--json", type=_path_arg, default=None, metavar="PATH",
                      help="also write the report as JSON (with provenance)")
    p_va.set_defaults(func=_cmd_verify_advantages)
    from ._train_cli import add_parser as add_train_parser

    add_train_parser(sub)
    p_docs = sub.add_parser(
        "docs", help="build the documentation site (strict) or preview it (the docs extra)",
        description="Build the documentation site with MkDocs in strict mode (the API reference "
        "from the layer faces, the gallery from figures/, the notebooks executed in quick mode), "
        "or serve a live preview.")
    p_docs.add_argument("--serve", action="store_true",
                        help="preview on --dev-addr, rebuilt on every change")
    p_docs.add_argument("--out", type=_path_arg, default="site",
                        help="output folder of the build (default site/)")
    p_docs.add_argument("--dev-addr", default="127.0.0.1:8000", metavar="HOST:PORT",
                        help="address of the preview (default 127.0.0.1:8000)")
    p_docs.set_defaults(func=_cmd_docs)
    args = parser.parse_args(argv)
    try:
        if args.command != "docs":  # the docs build runs in its own process
            try:
                _setup_jax(fast_compile=args.command in ("reproduce", "claims")
                           and not getattr(args, "full", False))
            except ValueError as err:  # a compilation cache folder others can write to
                print(f"error: {err}", file=sys.stderr)
                return 2
        check()  # a Ctrl-C while JAX loaded (its gc callback swallows the KeyboardInterrupt)
        if args.command in ("list", "reproduce", "claims"):
            problem = _experiments_folder(args)
            if problem is not None:
                print(f"error: {problem}", file=sys.stderr)
                return 2
        return int(args.func(args))
    except KeyboardInterrupt:  # outside the commands' own handlers: nothing was saved
        again = " ".join(sys.argv[1:] if argv is None else argv)
        print(f"\ninterrupted; nothing saved; run again with: simplexlab {again}",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
