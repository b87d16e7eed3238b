"""The ``simplexlab`` command line: ``list`` and ``reproduce``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ._registry import default_out_dir, load_experiments, run_experiment


def _cmd_list(args) -> int:
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
        lines = textwrap.wrap(text, width - len(indent)) or [""]
        print(f"{name:<{w}}  {e.cost['quick']:>8}  {e.cost['full']:>8}  {lines[0]}")
        for line in lines[1:]:
            print(indent + line)
        if args.verbose and e.description:
            for line in textwrap.wrap(e.description, width - len(indent)):
                print(indent + line)
    return 0


def _cmd_reproduce(args) -> int:
    exps = load_experiments(args.experiments_dir)
    names = args.names or list(exps)
    unknown = [n for n in names if n not in exps]
    if unknown:
        print(f"error: unknown experiment(s) {', '.join(map(repr, unknown))}; "
              f"known: {', '.join(exps)}", file=sys.stderr)
        return 2
    quick = not args.full
    out = Path(args.out) if args.out else default_out_dir(quick)
    failed = []
    for name in names:
        result_file = out / f"{name}.json"
        if args.resume and result_file.exists():
            try:
                rec = json.loads(result_file.read_text())
                same_mode = rec.get("mode") == ("quick" if quick else "full")
                if same_mode and rec.get("seed") == args.seed:
                    print(f"[{name}] already done ({result_file}); skipping (--resume)")
                    continue
            except (OSError, json.JSONDecodeError):
                pass
        print(f"[{name}] running ({'quick' if quick else 'full'}) -> {out}", flush=True)
        t0 = time.perf_counter()
        try:
            rec = run_experiment(name, quick=quick, out=out, seed=args.seed)
        except Exception as err:  # report, continue with the others, fail at the end
            import traceback

            traceback.print_exc()
            print(f"[{name}] FAILED: {err}", file=sys.stderr)
            failed.append(name)
            continue
        figs = ", ".join(rec["figures"]) or "no figures"
        print(f"[{name}] done in {time.perf_counter() - t0:.1f}s: {figs}, {name}.json", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="simplexlab",
        description="Reproduce the figures of the mean-field RLVR papers (see `simplexlab list`).",
    )
    parser.add_argument("--experiments-dir", default=None,
                        help="folder with experiment scripts (default: ./experiments)")
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
    p_rep.add_argument("--out", default=None, help="output folder (default figures/ or "
                       "figures/quick/)")
    p_rep.add_argument("--seed", type=int, default=0)
    p_rep.add_argument("--resume", action="store_true",
                       help="skip experiments whose result file for this mode and seed exists")
    p_rep.set_defaults(func=_cmd_reproduce)
    args = parser.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)  # experiments compare against exact closed forms
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
