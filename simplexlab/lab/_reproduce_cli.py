"""The experiment commands of the ``simplexlab`` command line: ``list`` (the registered
experiments and claims, with their costs), ``reproduce`` (experiments, in parallel jobs, their
claims evaluated after them, resumable) and ``claims`` (the claims report). Parsed in
:mod:`simplexlab.lab._cli`.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .._interrupt import check
from ._cli_args import _install_hint


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
    from ._claims import select_claims, split_claims

    claims = [] if args.no_claims else select_claims(experiments=names,
                                                      directory=args.experiments_dir)
    jobs = min(args.jobs, len(names)) if args.jobs else _default_jobs(len(names))
    if jobs > 1:
        return _reproduce_parallel(args, exps, names, claims, jobs=jobs, quick=quick, out=out)
    before, after = split_claims(claims)
    entries = []
    if before:  # before the experiments, so that their figures can show the claims' status
        entries = _run_claims(before, quick=quick, out=out, seed=args.seed,
                              directory=args.experiments_dir)[1]
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
    if after:  # the claims that check a committed run: after the run that rewrites it
        _run_claims(after, quick=quick, out=out, seed=args.seed, previous=entries,
                    directory=args.experiments_dir)
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


def _run_claims(claims, *, quick: bool, out: Path, seed: int, previous=(),
                directory=None) -> tuple[int, list]:
    """Evaluate ``claims`` and write the report under ``out/claims/`` (with the ``previous``
    entries of this run before them); ``(1 if one failed else 0, the entries)``."""
    from ._claims import evaluate_claims
    from ._report import write_report

    mode = "quick" if quick else "full"
    print(f"evaluating {len(claims)} claim{'s' * (len(claims) != 1)} ({mode}) -> "
          f"{out / 'claims'}", flush=True)
    t0 = time.perf_counter()
    entries = [*previous, *evaluate_claims(claims, quick=quick, seed=seed, directory=directory,
                                           log=lambda line: print(line, flush=True))]
    path = write_report(entries, out, quick=quick)
    return _claims_summary(entries, path, seconds=time.perf_counter() - t0), entries


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
    return _run_claims(claims, quick=quick, out=out, seed=args.seed,
                       directory=args.experiments_dir)[0]
