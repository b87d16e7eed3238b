r"""The simulator protocol (jax-md style): a pure ``init`` / ``step`` / ``observe`` triple.

A simulator is an :class:`equinox.Module` holding its *static* configuration (validated in
``__check_init__``); its *array* parameters -- the ones a sweep may vary inside one compiled
program -- travel separately as a dict ``params`` of scalars, so that one simulator object serves
a whole batch under ``vmap`` / ``lax.map``:

- ``init(key, params) -> state``: the initial state pytree;
- ``step(state, params) -> state``: one update (pure; any randomness comes from ``state``);
- ``observe(state) -> metrics``: a pytree (``NamedTuple``) of scalars or small arrays.

:meth:`AbstractSimulator.default_params` names the array parameters and their defaults;
:meth:`AbstractSimulator.check_params` validates concrete values (a ``ValueError`` naming the
value). :func:`trajectory` runs any simulator with :func:`jax.lax.scan` and records ``observe``
at step 0 and every ``stride`` steps.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from .._checks import is_int, renamed_keys
from ._policy import default_float

__all__ = ["AbstractSimulator", "trajectory"]


class AbstractSimulator(eqx.Module):
    """Base class of every simulator (static configuration as fields)."""

    #: short name used by the sweep engine and ``simplexlab sweep`` configs
    name: ClassVar[str] = ""
    #: bump when the simulator's numerics change: the sweep store keys every chunk on it
    version: ClassVar[str] = "1"

    #: deprecated old names of settings and array parameters -> their names (``make`` and the
    #: sweep configs accept them with a ``DeprecationWarning``, :meth:`renamed`)
    renamed_names: ClassVar[dict[str, str]] = {}

    @classmethod
    def renamed(cls, values: dict[str, Any]) -> dict[str, Any]:
        """``values`` with the deprecated old names of :attr:`renamed_names` replaced by their
        new ones (a ``DeprecationWarning`` naming the new name)."""
        return renamed_keys(values, cls.renamed_names, cls.name)

    @classmethod
    def make(cls, **settings) -> AbstractSimulator:
        """Build from flat static settings (names of :meth:`settings`); the sweep engine and
        ``simplexlab sweep`` configs use it. Default: :meth:`check_settings`, then
        ``cls(**settings)``."""
        cls.check_settings(settings)
        return cls(**settings)

    @classmethod
    def check_settings(cls, settings, known=None) -> None:
        """Raise ``ValueError`` naming every setting not in ``known`` (default
        :meth:`settings`)."""
        known = cls.settings() if known is None else known
        unknown = sorted(set(settings) - set(known))
        if unknown:
            raise ValueError(f"{cls.name}: unknown setting(s) {unknown}; known: {sorted(known)}")

    @classmethod
    def settings(cls) -> dict[str, Any]:
        """The static settings :meth:`make` accepts and their defaults. Default: the module's
        fields that have a default."""
        return {f.name: f.default for f in dataclasses.fields(cls)
                if f.default is not dataclasses.MISSING}

    def float_dtype(self):
        """The floating dtype of a simulator with a ``dtype`` setting (``None``, ``"float32"``
        or ``"float64"``; ``None``: JAX's default float)."""
        dtype = getattr(self, "dtype", None)
        return default_float() if dtype is None else jnp.dtype(dtype)

    def check_dtype(self) -> None:
        """Raise ``ValueError`` unless the ``dtype`` setting is ``None``, ``"float32"`` or
        ``"float64"`` (for :meth:`__check_init__`)."""
        dtype = getattr(self, "dtype", None)
        if dtype not in (None, "float32", "float64"):
            raise ValueError(f"{self.name}: dtype must be None, 'float32' or 'float64'; got "
                             f"{dtype!r}")

    @classmethod
    def from_values(cls, values: dict[str, Any]):
        """``(simulator, params)`` from one flat dict of static settings and array parameters
        (a sweep's ``fixed`` values): the settings build the simulator with :meth:`make`, its
        own array parameters form ``params``; other names (``num_steps``, ...) are ignored."""
        settings = cls.settings()
        sim = cls.make(**{k: v for k, v in values.items() if k in settings})
        own = sim.default_params()
        return sim, {k: v for k, v in values.items() if k in own}

    @classmethod
    def sweep_groups(cls, static: dict[str, Any], arrays: dict[str, Any],
                     given: set[str]) -> list[tuple[dict[str, Any], Any]]:
        """How the sweep engine splits the runs of one static configuration into programs:
        ``[(static_i, rows_i), ...]`` with ``rows_i`` an index array into the ``(n,)`` parameter
        ``arrays`` (``None``: every run). ``given``: the names the user set (fixed or swept),
        which a simulator must not override. Default: one program for every run. A simulator
        whose cost follows a static bound that array values may undercut (the bandit's
        ``max_group_size``) groups runs into cheaper programs here."""
        return [(static, None)]

    #: how the sweep engine batches runs on CPU (``"map"``: ``lax.map``, run by run, best for
    #: large per-run states; ``"vmap"``: best for small ones); accelerators always use ``vmap``
    cpu_batching: ClassVar[str] = "map"

    def observe_dims(self) -> dict[str, tuple[str, ...]]:
        """Names of the trailing axes of each :meth:`observe` field (after ``step``), for the
        sweep engine's Dataset; fields left out get ``<field>_0``, ``<field>_1``, ..."""
        return {}

    def working_bytes(self) -> int:
        """An upper estimate of the memory one run needs while it runs (state, optimizer state,
        temporaries); the sweep engine sizes its chunks with it. Default: 1 MiB."""
        return 1 << 20

    @classmethod
    def all_params(cls) -> dict[str, Any]:
        """Every array parameter any configuration of this simulator takes, with its default
        (the sweep engine's list of names). Default: ``cls.make().default_params()``; a
        simulator whose parameters depend on its settings (the bandit's method) lists all."""
        return cls.make().default_params()

    @abc.abstractmethod
    def default_params(self) -> dict[str, Any]:
        """The array parameters and their default values (scalars)."""

    def check_params(self, params: dict[str, Any]) -> None:
        """Raise ``ValueError`` naming any unknown parameter or bad concrete value."""
        unknown = sorted(set(params) - set(self.default_params()))
        if unknown:
            raise ValueError(f"{type(self).__name__}: unknown parameter(s) {unknown}; array "
                             f"parameters are {sorted(self.default_params())}")

    @abc.abstractmethod
    def init(self, key, params: dict[str, Any]):
        """The initial state."""

    @abc.abstractmethod
    def step(self, state, params: dict[str, Any]):
        """One update of ``state``."""

    @abc.abstractmethod
    def observe(self, state):
        """Metrics of ``state`` (a pytree of arrays)."""


def trajectory(sim: AbstractSimulator, key, params: dict[str, Any] | None = None, *,
               num_steps: int, stride: int = 1):
    r"""Run ``num_steps`` steps of ``sim`` with :func:`jax.lax.scan`, recording
    ``sim.observe`` at step 0 and every ``stride`` steps (``num_steps // stride + 1`` records;
    ``num_steps`` must be a multiple of ``stride``). Returns ``(final_state, records)``.
    ``params`` overrides :meth:`~AbstractSimulator.default_params` (missing names take their
    defaults). Pure: jit it with ``num_steps`` and ``stride`` static, vmap it over keys and
    parameter values."""
    for name, v in (("num_steps", num_steps), ("stride", stride)):
        if not is_int(v) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {v!r}")
    if num_steps % stride:
        raise ValueError(f"num_steps = {num_steps} must be a multiple of stride = {stride}")
    full = {**sim.default_params(), **(params or {})}
    sim.check_params(full)
    state = sim.init(key, full)

    def inner(s, _):
        return sim.step(s, full), None

    def outer(s, _):
        s, _ = jax.lax.scan(inner, s, None, length=stride)
        return s, sim.observe(s)

    final, rec = jax.lax.scan(outer, state, None, length=num_steps // stride)
    first = sim.observe(state)
    rec = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b]), first, rec)
    return final, rec
