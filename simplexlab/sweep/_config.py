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
    max_runs = 10_000_000            # optional size guards (simplexlab.sweep.run): runs,
    max_steps = 100_000_000          # steps per run and bytes of the result
    max_result_bytes = "8GiB"

    [fixed]                          # parameters held fixed
    num_steps = 100
    optimizer = "adam"

    [grid]                           # swept parameters, in the order of the Dataset's dims
    group_size = [2, 8, 32]
    focal_gamma = [0.0, 1.0]

A rule from the user's own code: ``method = "mypkg.rules:my_rule"`` in ``[fixed]`` imports
``mypkg.rules`` (installed or on the Python path), whose import registers ``my_rule``
(:func:`simplexlab.shaping.register_method`); its declared parameters can then be fixed or swept
like any other. A data file cannot make the lab import a module on its own: the module must be
allowed by the user (``simplexlab sweep --import mypkg.rules``, ``SIMPLEXLAB_IMPORT=mypkg.rules``,
or imported by the user's own code before the file is read; :mod:`simplexlab._imports`), checked
before anything is imported.

Unknown keys (a typo) raise ``ValueError`` naming the key and what is allowed, before any compute;
so does a value of the wrong TOML type (naming the file, the key and the type expected: a boolean
is never a number, an integer setting takes no float, a parameter's values follow its default)
and a grid axis that lists one value twice (``[2, 2.0]``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._checks import is_int
from .._results import check_file_name, read_toml
from ..shaping import import_method
from ._plan import _as_values, _kind
from ._targets import make_target

__all__ = ["load_config", "run_config"]

TOP_KEYS = {"simulator", "name", "out", "seeds", "seed", "memory_budget", "chunk_size",
            "batching", "format", "fixed", "grid", "description", "max_runs", "max_steps",
            "max_result_bytes"}

_INTEGER, _NUMBER, _STRING, _BOOLEAN = "an integer", "a number", "a string", "a boolean"
_SIZE = "a number of bytes or a size string like '2GB'"
#: the TOML type each top-level key takes (fixed and grid are tables, checked apart)
TOP_TYPES = {"simulator": _STRING, "name": _STRING, "out": _STRING, "seeds": _INTEGER,
             "seed": _INTEGER, "memory_budget": _SIZE, "chunk_size": _INTEGER,
             "batching": _STRING, "format": _STRING, "description": _STRING,
             "max_runs": _INTEGER, "max_steps": _INTEGER, "max_result_bytes": _SIZE}


def _toml_type(v) -> str:
    """The TOML name of ``v``'s type, for messages."""
    for t, name in ((bool, "a boolean"), (int, "an integer"), (float, "a float"),
                    (str, "a string"), (list, "an array"), (dict, "a table")):
        if isinstance(v, t):
            return name
    return f"a {type(v).__name__}"


def _is(v, expected: str) -> bool:
    """Whether the TOML value ``v`` is of the ``expected`` kind (a bool is never a number)."""
    if expected == _INTEGER:
        return is_int(v)
    if expected == _NUMBER:
        return isinstance(v, int | float) and not isinstance(v, bool)
    if expected == _STRING:
        return isinstance(v, str)
    if expected == _BOOLEAN:
        return isinstance(v, bool)
    if expected == _SIZE:
        return isinstance(v, int | float | str) and not isinstance(v, bool)
    return True


def _expected(default, array: bool) -> str | None:
    """The TOML kind a parameter takes, from its default (``None``: no rule here, the target
    checks it): array parameters are numbers, static ones follow their default's type."""
    if array:
        return _NUMBER
    if isinstance(default, bool):
        return _BOOLEAN
    return _kind(default)


def _check_types(path: Path, cfg: dict, target) -> None:
    """Every top-level key and every fixed / grid value of the expected TOML type: a
    ``ValueError`` naming the file, the key (``grid.eta[0]``), the type expected and the value
    given otherwise."""
    for key, expected in TOP_TYPES.items():
        if key in cfg and not _is(cfg[key], expected):
            raise ValueError(f"{path}: {key} must be {expected}; got {cfg[key]!r} "
                             f"({_toml_type(cfg[key])})")
    for key in ("seeds", "max_runs", "max_steps", "chunk_size"):
        if key in cfg and cfg[key] < 1:
            raise ValueError(f"{path}: {key} must be an integer >= 1; got {cfg[key]!r}")
    if "seed" in cfg and not -(2**63) <= cfg["seed"] < 2**63:  # what a PRNG key is made from
        raise ValueError(f"{path}: seed must be an integer in [-2**63, 2**63 - 1]; got "
                         f"{cfg['seed']!r}")
    arrays, statics = target.array_params(), target.static_params()
    for section in ("fixed", "grid"):
        for name, value in cfg.get(section, {}).items():
            expected = _expected(arrays.get(name, statics.get(name)), name in arrays)
            if expected is None:
                continue
            items = enumerate(value) if section == "grid" else [(None, value)]
            for i, v in items:
                if not _is(v, expected):
                    where = f"{section}.{name}" + ("" if i is None else f"[{i}]")
                    raise ValueError(f"{path}: {where} must be {expected}; got {v!r} "
                                     f"({_toml_type(v)})")


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
    if not isinstance(cfg["simulator"], str):
        raise ValueError(f"{path}: simulator must be {_STRING} (a simulator's name, e.g. "
                         f"simulator = \"categorical\"); got {cfg['simulator']!r} "
                         f"({_toml_type(cfg['simulator'])})")
    try:
        target = make_target(cfg["simulator"])
    except ValueError as err:
        raise ValueError(f"{path}: simulator: {err}") from None
    for section in ("fixed", "grid"):
        if not isinstance(cfg.get(section, {}), dict):
            raise ValueError(f"{path}: [{section}] must be a table of parameter = value")
        cfg[section] = dict(cfg.get(section, {}))
    # a rule from the user's own module ("package.module:name"): imported here, in every
    # process that reads the file, so that its parameters are known below
    if isinstance(cfg["fixed"].get("method"), str):
        cfg["fixed"]["method"] = import_method(cfg["fixed"]["method"], f"{path}: fixed.")
    known = set(target.array_params()) | set(target.static_params())
    for section in ("fixed", "grid"):
        bad = sorted(set(cfg.get(section, {})) - known)
        if bad:
            raise ValueError(f"{path}: unknown parameter(s) {bad} in [{section}] for simulator "
                             f"{target.name!r}; known: {sorted(known)}")
    for k, v in cfg.get("grid", {}).items():
        if not isinstance(v, list):
            raise ValueError(f"{path}: grid.{k} must be a list of values; got {v!r}")
    _check_types(path, cfg, target)
    for k, v in cfg.get("grid", {}).items():
        try:
            _as_values(k, v)  # no axis empty, no value twice (2 and 2.0 are one value)
        except ValueError as err:
            raise ValueError(f"{path}: grid.{k}: {err}") from None
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
    for key in ("memory_budget", "chunk_size", "max_runs", "max_steps", "max_result_bytes"):
        if key in cfg:
            kwargs[key] = cfg[key]
    return kwargs


def run_config(path: str | os.PathLike, **overrides):
    """:func:`load_config` then :func:`simplexlab.sweep.run` (``overrides`` win, e.g.
    ``out=...``, ``resume=False``, ``progress=False``)."""
    from ._engine import run

    kwargs = {**load_config(path), **overrides}
    return run(kwargs.pop("target"), **kwargs)
