"""Experiment registry: experiments in ``experiments/*.py`` register themselves with
:func:`experiment`; the CLI discovers, lists and runs them.

An experiment is a function ``run(ctx: Context) -> dict``. It computes (numerics live in the
package, never in the experiment), draws its figures with matplotlib, saves each with
``ctx.savefig(fig, stem)``, and returns a JSON-serialisable dict with at least ``parameters``.
The runner writes ``<out>/<name>.json`` with that dict plus provenance (version, git revision,
seed, mode, wall time) atomically, after the figures are written.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from .._env import experiments_dir, progress_enabled, release_programs_near_map_limit
from .._results import (
    atomic_write_bytes,
    atomic_write_json,
    check_file_name,
    provenance,
    writable_folder,
)
from ._progress import progress as _progress

T = TypeVar("T")

__all__ = [
    "Context",
    "Experiment",
    "experiment",
    "find_experiments_dir",
    "load_experiment_module",
    "load_experiments",
    "registry",
    "run_experiment",
]

_REGISTRY: dict[str, Experiment] = {}


_COST = re.compile(r"~?\s*([0-9]+(?:\.[0-9]+)?)\s*(s|min|h)")
_COST_UNITS = {"s": 1, "min": 60, "h": 3600}


def cost_seconds(cost: str) -> float:
    """``"~25 s"``, ``"~1.5 min"``, ``"~2 h"`` -> seconds."""
    m = _COST.fullmatch(cost.strip()) if isinstance(cost, str) else None
    if m is None:
        raise ValueError(f"cost must be a time like '~25 s', '~1.5 min' or '~2 h'; got {cost!r}")
    return float(m.group(1)) * _COST_UNITS[m.group(2)]


def format_seconds(seconds: float) -> str:
    """An estimate for people: ``"~25 s"``, ``"~7 min"``, ``"~1.3 h"``."""
    if seconds < 90:
        return f"~{seconds:.0f} s"
    if seconds < 5400:
        return f"~{seconds / 60:.0f} min"
    return f"~{seconds / 3600:.1f} h"


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A registered experiment (made by :func:`experiment`): its ``name``, the function ``func``
    that runs it, the paper figure it ``reproduces``, its ``cost`` estimate per mode
    (``{"quick": "~25 s", "full": "~3 min"}``), a one-line ``description``, the ``source`` file
    and the modules it ``requires`` beyond the core."""

    name: str
    func: Callable[[Context], dict[str, Any]]
    reproduces: str
    cost: dict[str, str]
    description: str
    source: str
    requires: tuple[str, ...] = ()  #: modules it needs beyond the core (an optional extra)

    def seconds(self, mode: str) -> float:
        """The estimated wall time of ``mode`` (``"quick"`` or ``"full"``) in seconds."""
        return cost_seconds(self.cost[mode])

    def missing(self) -> list[str]:
        """The modules of :attr:`requires` that cannot be imported here."""
        import importlib.util

        return [m for m in self.requires if importlib.util.find_spec(m) is None]


@dataclasses.dataclass
class Context:
    """What an experiment receives: mode, output folder, seed, and helpers."""

    name: str
    quick: bool
    out: Path
    seed: int = 0
    figures: list[str] = dataclasses.field(default_factory=list)

    @property
    def mode(self) -> str:
        return "quick" if self.quick else "full"

    def progress(self, iterable: Iterable[T], desc: str = "", total: int | None = None
                 ) -> Iterator[T]:
        return _progress(iterable, desc=f"[{self.name}] {desc}".strip(), total=total)

    @property
    def show_progress(self) -> bool:
        """Whether long loops should draw a progress bar (``SIMPLEXLAB_PROGRESS=0`` silences)."""
        return progress_enabled()

    def savefig(self, fig, stem: str, *, dpi: int = 150) -> Path:
        """Save a matplotlib figure as ``<out>/<stem>.png`` atomically and close it."""
        import io

        import matplotlib.pyplot as plt

        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight",
                    metadata={"Software": f"simplexlab experiment {self.name} ({self.mode})"})
        plt.close(fig)
        path = atomic_write_bytes(self.out / f"{check_file_name(stem, 'stem')}.png",
                                  buf.getvalue())
        self.figures.append(path.name)
        return path


def experiment(
    name: str,
    *,
    reproduces: str,
    cost: dict[str, str],
    description: str = "",
    requires: tuple[str, ...] = (),
) -> Callable[[Callable[[Context], dict[str, Any]]], Callable[[Context], dict[str, Any]]]:
    """Register ``run(ctx)`` under ``name``.

    ``reproduces``: which paper figure/table (and what differs); ``cost``: ``{"quick": "~20 s",
    "full": "~3 min"}``, the experiment's time with its claims in the last recorded reference
    run (``simplexlab reproduce``, 2 processes on a 2-core CPU; update it from that run's log);
    ``requires``: modules of an optional extra it needs
    (``("torch", "transformers")``: the ``llm`` extra); ``simplexlab reproduce`` without names
    skips it, saying so, where they are missing.
    """
    check_file_name(name, "experiment name")  # its result file is <out>/<name>.json
    if set(cost) != {"quick", "full"}:
        raise ValueError(f"cost must have exactly the keys 'quick' and 'full'; got {sorted(cost)}")
    for value in cost.values():
        cost_seconds(value)  # a time `simplexlab reproduce` can add up

    def register(func: Callable[[Context], dict[str, Any]]):
        src = getattr(sys.modules.get(func.__module__), "__file__", None) or func.__module__
        prev = _REGISTRY.get(name)
        if prev is not None and Path(prev.source).resolve() != Path(src).resolve():
            raise ValueError(f"experiment {name!r} registered twice ({prev.source} and {src})")
        doc = description or (func.__doc__ or "").strip().split("\n\n")[0]
        _REGISTRY[name] = Experiment(name, func, reproduces, dict(cost), " ".join(doc.split()),
                                     str(src), tuple(requires))
        return func

    return register


def registry() -> dict[str, Experiment]:
    """The registered experiments by name, sorted (see :func:`load_experiments`)."""
    return dict(sorted(_REGISTRY.items()))


def find_experiments_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The folder of experiment (and claim) scripts whose code the lab imports: ``explicit``
    (``--experiments-dir``), else ``$SIMPLEXLAB_EXPERIMENTS``, else the ``experiments/`` folder
    of the checkout the package is installed from (editable / source installs).

    Never the current directory's ``./experiments`` unless it is named: run inside someone
    else's checkout, ``simplexlab list`` would otherwise import (run) that checkout's code. A
    folder that is named but missing, not a folder, or without ``*.py`` files is a
    ``ValueError`` naming it (not a silent fall-back to another folder)."""
    named = [(Path(explicit), "--experiments-dir")] if explicit else []
    if experiments_dir() is not None:
        named.append((experiments_dir(), "SIMPLEXLAB_EXPERIMENTS"))
    if named:
        c, what = named[0]
        if not c.is_dir():
            raise ValueError(f"{what} {str(c)!r} is not a folder")
        if not any(c.glob("*.py")):
            raise ValueError(f"{what} {str(c)!r} holds no experiment scripts (*.py)")
        return c.resolve()
    own = Path(__file__).resolve().parents[2] / "experiments"
    if own.is_dir() and any(own.glob("*.py")):
        return own
    raise FileNotFoundError(
        f"no experiments/ folder next to the installed package ({own}): install simplexlab "
        "from a checkout (pip install -e .) or name the folder with --experiments-dir DIR or "
        "SIMPLEXLAB_EXPERIMENTS=DIR."
    )


def load_experiment_module(stem: str, directory: str | os.PathLike | None = None):
    """Import ``experiments/<stem>.py`` (once) and return the module, so that one experiment
    can use another's configuration (e.g. ``categorical-search`` reads the Fig. 4 setting of
    ``categorical_regimes``)."""
    modname = f"simplexlab_experiments.{stem.replace('-', '_')}"
    if modname in sys.modules:
        return sys.modules[modname]
    path = find_experiments_dir(directory) / f"{stem}.py"
    if not path.is_file():
        raise FileNotFoundError(f"no experiment module {path}")
    return import_file(modname, path)


def import_file(modname: str, path: Path):
    """Import the Python file ``path`` as module ``modname`` (registered in ``sys.modules``;
    removed again if it fails): the experiment and claim modules are files, not a package."""
    spec = importlib.util.spec_from_file_location(modname, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[modname]
        raise
    return module


def load_experiments(directory: str | os.PathLike | None = None) -> dict[str, Experiment]:
    """Import every ``experiments/*.py`` (not starting with ``_``) so that it registers."""
    d = find_experiments_dir(directory)
    for path in sorted(d.glob("*.py")):
        if not path.name.startswith("_"):
            load_experiment_module(path.stem, d)
    return registry()


def default_out_dir(quick: bool) -> Path:
    """Full runs write to ``figures/`` (committed); quick runs to ``figures/quick/`` (ignored)."""
    root = find_experiments_dir().parent
    return root / "figures" / ("quick" if quick else "")


def run_experiment(
    name: str, *, quick: bool, out: str | os.PathLike | None = None, seed: int = 0,
) -> dict[str, Any]:
    """Run one registered experiment and write its result file; returns the record."""
    exps = registry() or load_experiments()
    if name not in exps:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(exps) or '(none)'}")
    exp = exps[name]
    out_dir = writable_folder(out if out is not None else default_out_dir(quick), "out")
    release_programs_near_map_limit()  # many experiments in one process: NOTES.md
    ctx = Context(name=name, quick=quick, out=out_dir, seed=seed)
    t0 = time.perf_counter()
    payload = exp.func(ctx)
    if not isinstance(payload, dict) or "parameters" not in payload:
        raise TypeError(f"experiment {name!r} must return a dict with a 'parameters' key")
    record = {
        "experiment": name,
        "reproduces": exp.reproduces,
        "mode": ctx.mode,
        "seed": seed,
        **payload,
        "figures": ctx.figures,
        "wall_seconds": round(time.perf_counter() - t0, 3),
        "provenance": provenance(),
    }
    atomic_write_json(out_dir / f"{name}.json", record)
    return record
