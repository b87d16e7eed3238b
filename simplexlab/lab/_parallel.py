"""``simplexlab reproduce --jobs N``: the experiments (each after its own claims; a claim that
checks a committed run, after it) in N worker processes.

Most of a quick run is XLA compiling programs, one at a time on one core; a second process
compiles beside it. Each *unit* is one experiment with the claims that belong to it
(``Claim.experiment``), run in one worker in that order, so that what a claim computes for its
experiment (a memo of the experiment's module, e.g. ``finite_group_regimes.flip_data``) is still
computed once. The parent is the only writer of the claims report: a worker sends its claims'
entries, the parent merges them into ``OUT/claims/claims.json`` (without the robustness maps) and
answers, and only then does the worker run the experiment, whose figure prints the status of its
claims from that report. When every unit is done the parent writes the report once more, with
the maps. Every unit's output (progress bars, warnings, tracebacks) goes to ``OUT/logs/NAME.log``.

A result does not depend on the number of processes: every worker has the same devices
(``XLA_FLAGS``, set by the parent before it starts them) and runs the same code on the same
inputs as a serial run; the order in which units finish changes nothing but the log.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

__all__ = ["run_units"]


def makespan(seconds, jobs: int) -> float:
    """The wall time of running units of ``seconds`` on ``jobs`` workers, longest first, each to
    the worker free first (what :func:`run_units` does): the estimate ``reproduce`` prints."""
    free = [0.0] * max(1, int(jobs))
    for sec in sorted(seconds, reverse=True):
        free[free.index(min(free))] += sec
    return max(free)


def _redirect(path: Path) -> None:
    """Send this process's stdout and stderr (file descriptors 1 and 2: XLA's warnings too) to
    ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _worker(conn, experiments_dir, quick: bool, out: str, seed: int) -> None:
    """One worker: asks for a unit, evaluates its claims, sends their entries, waits for the
    parent to merge them, runs the experiment, reports; until the parent says stop."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the workers on Ctrl-C
    from ._cli_args import _setup_jax

    _setup_jax()
    from ._claims import evaluate_claims, select_claims, split_claims
    from ._registry import load_experiments, run_experiment

    load_experiments(experiments_dir)
    outp = Path(out)
    while True:
        conn.send(("ready",))
        msg = conn.recv()
        if msg[0] == "stop":
            return
        _, name, claim_names, run = msg
        _redirect(outp / "logs" / f"{name}.log")
        t0 = time.perf_counter()
        def claims_of(which, name=name):  # evaluate, send, wait until the report has them
            t = time.perf_counter()
            entries = evaluate_claims(which, quick=quick, seed=seed, directory=experiments_dir,
                                      log=lambda line: print(line, flush=True))
            conn.send(("claims", name, entries, time.perf_counter() - t))
            conn.recv()

        try:
            claims = select_claims(claim_names, directory=experiments_dir) if claim_names else []
            before, after = split_claims(claims)
            claims_of(before)
        except Exception:  # a claims file that does not load: report, no experiment
            conn.send(("failed", name, traceback.format_exc(), time.perf_counter() - t0))
            continue
        if not run:
            claims_of(after)
            conn.send(("skipped", name, None, 0.0))
            continue
        t1 = time.perf_counter()
        try:
            rec = run_experiment(name, quick=quick, out=outp, seed=seed)
        except Exception:
            traceback.print_exc()
            claims_of(after)
            conn.send(("failed", name, traceback.format_exc(), time.perf_counter() - t1))
            continue
        seconds = time.perf_counter() - t1
        claims_of(after)  # the claims that check a committed run: after the run rewrote it
        conn.send(("done", name, list(rec["figures"]), seconds))


def run_units(units, *, jobs: int, experiments_dir, quick: bool, out: Path, seed: int,
              write_entries, log) -> tuple[list[dict], list[str]]:
    """Run ``units`` (``(experiment, claim names, run it?)``, longest first) in ``jobs`` worker
    processes. ``write_entries(entries, final)`` writes the claims report (``final``: with the
    maps); ``log`` prints a line. Returns the claims' entries and the failed experiments."""
    import multiprocessing as mp
    from multiprocessing.connection import wait

    ctx = mp.get_context("spawn")  # JAX is not fork-safe
    if jobs > 1:  # two processes must not each take most of an accelerator's memory
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    pending = list(units)
    n = len(pending)
    procs, conns = [], []
    for _ in range(min(jobs, n)):
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_worker, args=(child, experiments_dir, quick, str(out), seed),
                        daemon=True)
        p.start()
        child.close()
        procs.append(p)
        conns.append(parent)
    entries: list[dict] = []
    failed: list[str] = []
    started: dict = {}
    finished = 0
    try:
        live = list(conns)
        while live:
            for conn in wait(live):
                try:
                    msg = conn.recv()
                except EOFError:  # the worker died (out of memory, a crash in XLA)
                    live.remove(conn)
                    lost = [nm for nm, (c, _) in started.items() if c is conn]
                    for nm in lost:
                        failed.append(nm)
                        started.pop(nm)
                        log(f"[{nm}] FAILED: its worker process died (see "
                            f"{out / 'logs' / (nm + '.log')})")
                    continue
                kind = msg[0]
                if kind == "ready":
                    if pending:
                        name, claim_names, run = pending.pop(0)
                        started[name] = (conn, time.perf_counter())
                        conn.send(("unit", name, claim_names, run))
                        log(f"[{name}] started ({len(claim_names)} claim"
                            f"{'s' * (len(claim_names) != 1)}"
                            f"{'' if run else ', experiment already done'}) -> "
                            f"{out / 'logs' / (name + '.log')}")
                    else:
                        conn.send(("stop",))
                        live.remove(conn)
                    continue
                name = msg[1]
                if kind == "claims":
                    entries.extend(msg[2])
                    if msg[2]:
                        write_entries(entries, False)
                    conn.send(("merged",))
                    bad = [e["name"] for e in msg[2] if e.get("error")]
                    if bad:
                        log(f"[{name}] claims whose evaluation failed: {', '.join(bad)}")
                    continue
                finished += 1
                total = time.perf_counter() - started.pop(name)[1]
                if kind == "failed":
                    failed.append(name)
                    log(f"[{finished}/{n}] {name} FAILED after {total:.1f}s:\n{msg[2]}")
                elif kind == "done":
                    log(f"[{finished}/{n}] {name} done in {total:.1f}s (experiment "
                        f"{msg[3]:.1f}s): {', '.join(msg[2]) or 'no figures'}, {name}.json")
                else:
                    log(f"[{finished}/{n}] {name}: claims done in {total:.1f}s; experiment "
                        f"skipped (--resume)")
    except KeyboardInterrupt:
        for p in procs:
            p.terminate()
        raise
    finally:
        for p in procs:
            p.join(timeout=30)
    if entries:
        write_entries(entries, True)
    return entries, failed
