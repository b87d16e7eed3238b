r"""What the sweep engine knows about each simulator beyond ``init`` / ``step`` / ``observe``.

A simulator class declares how a sweep runs it (class attributes and methods of
:class:`simplexlab.sim.AbstractSimulator`, no central list here): :func:`adapter` reads them into
one :class:`SweepAdapter` per class, which the engine uses:

- ``cpu_batching``: ``"map"`` (``lax.map``, run by run: best for large per-run states) or
  ``"vmap"`` (best for small ones) on CPU; accelerators always use ``vmap``;
- ``params``: every array parameter any configuration takes, as
  :class:`~simplexlab._checks.Param` specs (the names a sweep accepts, their defaults and the
  kind of their values: integers stay integers; the class's ``all_param_specs()``);
- ``working_bytes(sim)``: an upper estimate of one run's working memory, for the memory budget
  (the simulator's ``working_bytes()``);
- ``dims(sim)``: names of the trailing axes of each ``observe`` field, for the Dataset (the
  simulator's ``observe_dims()``; fields left out get ``<field>_0``, ...);
- ``bucket = (parameter, bound)``: runs are grouped by ``parameter`` into power-of-two buckets,
  each one program with the static setting ``bound`` set to the bucket's bound, unless the sweep
  sets ``bound`` itself (a step costs what the bound says, so a group of 2 padded to 64 would
  pay for 64 rollouts). Padding is inert: a run's result does not depend on its bucket beyond
  the order of floating-point sums, and its bucket depends only on its own value (and
  ``bucket_floor``), never on the chunking;
- ``bucket_floor(static, values) -> F``: with ``bucket``, every run whose power-of-two bound is
  at most ``F`` goes to the one bucket of bound ``F`` (fewer programs where padding a small
  group costs little next to the rest of a step); ``F`` may depend on the static settings and
  on the values of the whole sweep, never on the chunking;
- ``pad = (parameter, bound)``: one program for every run, with the static setting ``bound`` set
  to the largest value of ``parameter`` among the runs (for simulators whose outputs have the
  bound's length, so that every run of the Dataset has the same shape), unless the sweep sets
  ``bound`` itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .._checks import Param

__all__ = ["SweepAdapter", "adapter"]


@dataclasses.dataclass(frozen=True)
class SweepAdapter:
    """How the sweep engine runs one simulator class (module docstring)."""

    cpu_batching: str = "map"
    params: Mapping[str, Param] | None = None
    working_bytes: Callable[[Any], int] | None = None
    dims: Callable[[Any], Mapping[str, tuple[str, ...]]] | None = None
    bucket: tuple[str, str] | None = None
    pad: tuple[str, str] | None = None
    bucket_floor: Callable[[dict, np.ndarray], int] | None = None

    def __post_init__(self):
        if self.cpu_batching not in ("map", "vmap"):
            raise ValueError(f"cpu_batching must be 'map' or 'vmap'; got {self.cpu_batching!r}")
        for field in ("bucket", "pad"):
            v = getattr(self, field)
            if v is not None and (not isinstance(v, tuple) or len(v) != 2
                                  or not all(isinstance(b, str) for b in v)):
                raise ValueError(f"{field} must be a pair (parameter, bound) of names; got {v!r}")
        if self.bucket is not None and self.pad is not None:
            raise ValueError("give bucket or pad, not both")

    def all_params(self, cls) -> dict[str, Any]:
        """Every array parameter of ``cls`` and its default."""
        return {k: p.default for k, p in self.param_specs(cls).items()}

    def param_specs(self, cls) -> dict[str, Param]:
        """Every array parameter of ``cls`` as its :class:`~simplexlab._checks.Param`."""
        return dict(cls.all_param_specs() if self.params is None else self.params)

    def run_bytes(self, sim) -> int:
        """Working memory of one run of ``sim`` (bytes)."""
        return (1 << 20) if self.working_bytes is None else int(self.working_bytes(sim))

    def observe_dims(self, sim) -> dict[str, tuple[str, ...]]:
        return {} if self.dims is None else dict(self.dims(sim))

    def groups(self, static: dict[str, Any], arrays: dict[str, np.ndarray],
               given: set[str]) -> list[tuple[dict[str, Any], Any]]:
        """The programs of one static configuration: ``[(static_i, rows_i)]``, ``rows_i`` an
        index array into the ``(n,)`` parameter ``arrays`` (``None``: every run). ``given``: the
        names the sweep sets (fixed or swept), never overridden."""
        rule = self.bucket or self.pad
        if rule is None:
            return [(static, None)]
        name, bound = rule
        if bound in given or name not in arrays:
            return [(static, None)]
        v = np.asarray(arrays[name], dtype=float)
        ok = np.isfinite(v) & (v >= 2)
        if self.pad is not None:  # bad values are named by the program's validation
            return [({**static, bound: int(np.ceil(v[ok].max())) if ok.any() else 2}, None)]
        # bad values stay with the first bucket, whose validation names them
        b = np.where(ok, 2.0 ** np.ceil(np.log2(np.where(ok, v, 2.0))), 2.0).astype(int)
        floor = None if self.bucket_floor is None else self.bucket_floor(static, v)
        if floor is not None:
            b = np.maximum(b, int(floor))
        return [({**static, bound: int(x)}, np.flatnonzero(b == x)) for x in np.unique(b)]


_ADAPTERS: dict[type, SweepAdapter] = {}


def adapter(cls: type) -> SweepAdapter:
    """The :class:`SweepAdapter` of simulator class ``cls``, read from what the class declares
    (:class:`simplexlab.sim.AbstractSimulator`'s ``cpu_batching``, ``bucket``, ``pad``,
    ``bucket_floor``, ``working_bytes``, ``observe_dims``, ``all_param_specs``); one per class."""
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = SweepAdapter(
            cpu_batching=cls.cpu_batching, working_bytes=lambda sim: sim.working_bytes(),
            dims=lambda sim: sim.observe_dims(), bucket=cls.bucket, pad=cls.pad,
            bucket_floor=cls.bucket_floor)
    return _ADAPTERS[cls]
