"""Sweep configuration files (TOML) for ``simplexlab sweep CONFIG.toml``.

::

    simulator = "categorical"        # or "meanfield"
    name = "fig4-small"              # result file <out>/<name>.nc (default: the file's stem);
                                     # a file name, not a path
    out = "sweeps"                   # output folder (relative to the config file)
    seeds = 2                        # number of seeds
    seed = 0                         # base seed
    memory_budget = "2GB"            # optional; or chunk_size = 8
    batching = "auto"                # optional: "auto", "map", "vmap"

    [fixed]                          # parameters held fixed
    num_steps = 100
    optimizer = "adam"

    [grid]                           # swept parameters, in the order of the Dataset's dims
    group_size = [2, 8, 32]
    focal_gamma = [0.0, 1.0]

Unknown keys (a typo) raise ``ValueError`` naming the key and what is allowed, before any compute.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._results import check_file_name, read_toml
from ._targets import make_target

__all__ = ["load_config", "run_config"]

TOP_KEYS = {"simulator", "name", "out", "seeds", "seed", "memory_budget", "chunk_size",
            "batching", "format", "fixed", "grid", "description"}


def load_config(path: str | os.PathLike) -> dict[str, Any]:
    """Read and check a sweep TOML file; returns the keyword arguments of
    :func:`simplexlab.sweep.run` (plus ``target``). Paths are relative to the file."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"sweep config {str(path)!r} is a folder, not a TOML file (e.g. "
                         f"{str(path / 'my-sweep.toml')!r})")
    if not path.is_file():
        raise ValueError(f"sweep config {str(path)!r} does not exist")
    cfg = read_toml(path)
    unknown = sorted(set(cfg) - TOP_KEYS)
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {unknown}; allowed: {sorted(TOP_KEYS)}")
    if "simulator" not in cfg:
        raise ValueError(f"{path}: missing 'simulator' (e.g. simulator = \"categorical\")")
    target = make_target(cfg["simulator"])
    for section in ("fixed", "grid"):
        if not isinstance(cfg.get(section, {}), dict):
            raise ValueError(f"{path}: [{section}] must be a table of parameter = value")
    for section in ("fixed", "grid"):  # deprecated old names, with a DeprecationWarning
        cfg[section] = target.renamed(cfg.get(section, {}))
    known = set(target.array_params()) | set(target.static_params())
    for section in ("fixed", "grid"):
        bad = sorted(set(cfg.get(section, {})) - known)
        if bad:
            raise ValueError(f"{path}: unknown parameter(s) {bad} in [{section}] for simulator "
                             f"{target.name!r}; known: {sorted(known)}")
    for k, v in cfg.get("grid", {}).items():
        if not isinstance(v, list):
            raise ValueError(f"{path}: grid.{k} must be a list of values; got {v!r}")
    out = Path(cfg.get("out", "sweeps"))
    if not out.is_absolute():
        out = path.parent / out
    kwargs = {
        "target": target,
        "grid": cfg.get("grid", {}),
        "fixed": cfg.get("fixed", {}),
        "seeds": cfg.get("seeds", 1),
        "seed": cfg.get("seed", 0),
        "out": out,
        "name": check_file_name(cfg.get("name", path.stem), f"{path}: name"),
        "batching": cfg.get("batching", "auto"),
        "format": cfg.get("format", "nc"),
    }
    if "memory_budget" in cfg:
        kwargs["memory_budget"] = cfg["memory_budget"]
    if "chunk_size" in cfg:
        kwargs["chunk_size"] = cfg["chunk_size"]
    return kwargs


def run_config(path: str | os.PathLike, **overrides):
    """:func:`load_config` then :func:`simplexlab.sweep.run` (``overrides`` win, e.g.
    ``out=...``, ``resume=False``, ``progress=False``)."""
    from ._engine import run

    kwargs = {**load_config(path), **overrides}
    return run(kwargs.pop("target"), **kwargs)
