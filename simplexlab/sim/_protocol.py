r"""The simulator protocol (jax-md style): a pure ``init`` / ``step`` / ``observe`` triple.

A simulator is an :class:`equinox.Module` holding its *static* configuration (validated in
``__check_init__``); its *array* parameters -- the ones a sweep may vary inside one compiled
program -- travel separately as a dict ``params`` of scalars, so that one simulator object serves
a whole batch under ``vmap`` / ``lax.map``:

- ``init(key, params) -> state``: the initial state pytree;
- ``step(state, params) -> state``: one update (pure; any randomness comes from ``state``);
- ``observe(state) -> metrics``: a pytree (``NamedTuple``) of scalars or small arrays.

A simulator declares its array parameters once, as :class:`~simplexlab._checks.Param` specs
(:meth:`AbstractSimulator.param_specs`, with the joint rules of
:meth:`AbstractSimulator.constraints`); the defaults, the host check of concrete values (a
``ValueError`` naming the value) and the traced check (``eqx.error_if``) all derive from them in
:class:`AbstractSimulator`. :func:`trajectory` runs any simulator with :func:`jax.lax.scan` and
records ``observe`` at step 0 and every ``stride`` steps.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import Param, error_if, host_memory_bytes, is_concrete, is_int
from ..shaping.internal import nearest
from ._policy import default_float

__all__ = ["MAX_STEPS", "AbstractSimulator", "Constraint", "WithDtype", "trajectory"]


#: a joint rule between array parameters (and static settings): ``(names, bad, what)``,
#: ``bad(*values)`` written with :data:`~simplexlab._checks.xp` as ``~(ok)`` (NaN fails it)
Constraint = tuple[tuple[str, ...], Callable, str]


class AbstractSimulator(eqx.Module):
    """Base class of every simulator (static configuration as fields).

    **Parameters, declared once.** A simulator declares its array parameters as
    :class:`~simplexlab._checks.Param` specs (:meth:`param_specs`: name, default, domain, kind of
    value, the paper's symbol, one line of doc) and the rules that join several of them or a
    static setting (:meth:`constraints`); from these alone this class derives the defaults
    (:meth:`default_params`), the host check of concrete values (:meth:`check_params`, a
    ``ValueError`` naming the value) and the traced check (:meth:`checked`, ``eqx.error_if`` at
    run time), so every simulator checks its parameters by the one mechanism.

    **How a sweep runs it**, declared by the class (read by :mod:`simplexlab.sweep`, no central
    list): :attr:`cpu_batching`, :attr:`bucket`, :attr:`pad`, :meth:`bucket_floor`,
    :meth:`working_bytes`, :meth:`observe_dims`, :meth:`all_param_specs` (see
    :class:`simplexlab.sweep.SweepAdapter`, which reads them)."""

    #: short name used by the sweep engine and ``simplexlab sweep`` configs
    name: ClassVar[str] = ""
    #: bump when the simulator's numerics change: the sweep store keys every chunk on it
    version: ClassVar[str] = "1"
    #: on CPU, a sweep batches its runs with ``"map"`` (``lax.map``, run by run: large per-run
    #: states) or ``"vmap"`` (small ones); accelerators always use ``vmap``
    cpu_batching: ClassVar[str] = "map"
    #: ``(parameter, bound)``: a sweep groups runs by ``parameter`` into power-of-two buckets,
    #: each one program with the static setting ``bound`` set to the bucket's bound
    bucket: ClassVar[tuple[str, str] | None] = None
    #: ``(parameter, bound)``: one program for every run of a sweep, the static setting
    #: ``bound`` set to the largest value of ``parameter`` (outputs of the bound's length)
    pad: ClassVar[tuple[str, str] | None] = None

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
            raise ValueError(f"{cls.name}: unknown setting(s) {unknown}"
                             f"{suggest(unknown, known)}; known: {sorted(known)}")

    @classmethod
    def settings(cls) -> dict[str, Any]:
        """The static settings :meth:`make` accepts and their defaults. Default: the module's
        fields that have a default."""
        return {f.name: f.default for f in dataclasses.fields(cls)
                if f.default is not dataclasses.MISSING}

    @classmethod
    def from_values(cls, values: dict[str, Any]):
        """``(simulator, params)`` from one flat dict of static settings and array parameters
        (e.g. a sweep's ``fixed`` values): the settings build the simulator with :meth:`make`, its
        own array parameters form ``params``; other names (``num_steps``, ...) are ignored."""
        settings = cls.settings()
        sim = cls.make(**{k: v for k, v in values.items() if k in settings})
        own = sim.default_params()
        return sim, {k: v for k, v in values.items() if k in own}

    # ---- parameters ----------------------------------------------------------------------

    @abc.abstractmethod
    def param_specs(self) -> dict[str, Param]:
        """The array parameters of this configuration, by name (:class:`Param` specs)."""

    @classmethod
    def all_param_specs(cls) -> dict[str, Param]:
        """Every array parameter any configuration of the class takes (the names a sweep
        accepts). Default: those of the default configuration, ``cls.make()``."""
        return cls.make().param_specs()

    def constraints(self) -> list[Constraint]:
        """Rules joining several array parameters, or one with a static setting (default
        none)."""
        return []

    def default_params(self) -> dict[str, Any]:
        """The array parameters and their default values (scalars)."""
        return {k: p.default for k, p in self.param_specs().items()}

    def _rules(self) -> list[Constraint]:
        """Every rule: each parameter's own domain, then the joint rules."""
        return [((p.name,), p.bad, p.what) for p in self.param_specs().values()] \
            + list(self.constraints())

    def check_params(self, params: dict[str, Any]) -> None:
        """Raise ``ValueError`` naming any unknown parameter or bad concrete value: unknown
        names, values that are not real numbers (or arrays of them: a sweep checks a whole grid
        at once) -- strings, ``None``, bools, ragged lists --, and every rule of
        :meth:`param_specs` and :meth:`constraints` on the concrete values (the defaults fill in
        the missing ones). Traced values are left to :meth:`checked`."""
        who = self.name or type(self).__name__
        specs = self.param_specs()
        unknown = sorted(set(params) - set(specs))
        if unknown:
            raise ValueError(f"{type(self).__name__}: unknown parameter(s) {unknown}"
                             f"{suggest(unknown, specs)}; array parameters are "
                             f"{sorted(specs)}")
        for k, v in params.items():
            if is_concrete(v):
                _numbers(v, f"{who}: {k}")
        q = {k: np.asarray(v, float) for k, v in {**self.default_params(), **params}.items()
             if is_concrete(v)}
        for names, bad, what in self._rules():
            if all(n in q for n in names) and np.any(bad(*(q[n] for n in names))):
                raise ValueError(f"{who}: {' + '.join(names)} must be {what}; got "
                                 + ", ".join(f"{n} = {_show(q[n])}" for n in names))

    def checked(self, x, params: dict[str, Any]):
        """``x`` with run-time checks (``eqx.error_if``) of every rule on the (possibly traced)
        ``params`` attached, one per rule so that the error names it (none within
        :func:`simplexlab._checks.trusted_inputs`: values checked on the host already)."""
        who = self.name or type(self).__name__
        for names, bad, what in self._rules():
            if all(n in params for n in names):
                pred = jnp.any(bad(*(jnp.asarray(params[n]) for n in names)))
                x = error_if(x, pred, f"{who} {' + '.join(names)} must be {what}")
        return x

    # ---- how a sweep runs it ---------------------------------------------------------------

    @classmethod
    def bucket_floor(cls, static: dict[str, Any], values) -> int | None:
        """With :attr:`bucket`: every run whose power-of-two bound is at most the returned ``F``
        goes to the one bucket of bound ``F`` (``None``: no floor); it may depend on the static
        settings and the values of the whole sweep, never on its chunking."""
        return None

    def working_bytes(self) -> int:
        """An upper estimate of one run's working memory, for a sweep's memory budget."""
        return 1 << 20

    def observe_dims(self) -> dict[str, tuple[str, ...]]:
        """Names of the trailing axes of each ``observe`` field, for a sweep's Dataset (fields
        left out get ``<field>_0``, ...)."""
        return {}

    # ---- the protocol ----------------------------------------------------------------------

    @abc.abstractmethod
    def init(self, key, params: dict[str, Any]):
        """The initial state."""

    @abc.abstractmethod
    def step(self, state, params: dict[str, Any]):
        """One update of ``state``."""

    @abc.abstractmethod
    def observe(self, state):
        """Metrics of ``state`` (a pytree of arrays)."""


def suggest(unknown, known) -> str:
    """The nearest known name to the first unknown one that has a near name (difflib)."""
    return next((hint for hint in (nearest(k, known) for k in unknown) if hint), "")


def _show(a: np.ndarray) -> str:
    """A value for an error message: a scalar as itself, a grid of values as an array."""
    return str(a.item()) if a.ndim == 0 else str(a)


def _numbers(v, what: str) -> None:
    """``v`` must be a real number or an array of real numbers (``ValueError`` naming ``what``
    and the value otherwise: no string, ``None``, bool, ragged list, complex number)."""
    bad = isinstance(v, str | bytes | bool | np.bool_) or v is None
    if not bad:
        try:
            bad = np.asarray(v).dtype.kind not in "iuf"
        except (TypeError, ValueError):
            bad = True
    if bad:
        raise ValueError(f"{what} must be a real number; got {v!r}")


class WithDtype(eqx.Module):
    """Mixin of a simulator with a floating ``dtype`` setting, a field it declares: ``None``
    (JAX's default float), ``"float32"`` or ``"float64"``."""

    dtype: eqx.AbstractVar[Any]

    def float_dtype(self):
        """The floating dtype: ``dtype``, or JAX's default float if it is ``None``."""
        return default_float() if self.dtype is None else jnp.dtype(self.dtype)

    def check_dtype(self) -> None:
        """Raise ``ValueError`` unless ``dtype`` is ``None``, ``"float32"`` or ``"float64"``
        (for ``__check_init__``)."""
        if self.dtype not in (None, "float32", "float64"):
            raise ValueError(f"{self.name}: dtype must be None, 'float32' or 'float64'; got "
                             f"{self.dtype!r}")


#: the most steps :func:`trajectory` runs unless its ``max_steps`` says otherwise: at a
#: microsecond a step (the smallest simulators) 10^8 steps are minutes, at the categorical
#: simulator's milliseconds days; a larger count is almost always a typo (``1e12``)
MAX_STEPS = 10**8


def check_num_steps(num_steps, stride, max_steps) -> None:
    """``num_steps`` and ``stride`` integers >= 1, ``num_steps`` a multiple of ``stride`` and at
    most ``max_steps`` (itself an integer >= 1): a ``ValueError`` naming the value otherwise,
    before anything is traced or run."""
    if not is_int(max_steps) or max_steps < 1:
        raise ValueError(f"max_steps must be an integer >= 1; got {max_steps!r}")
    for name, v in (("num_steps", num_steps), ("stride", stride)):
        if not is_int(v) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {v!r}")
    if num_steps % stride:
        raise ValueError(f"num_steps = {num_steps} must be a multiple of stride = {stride}")
    if num_steps > max_steps:
        raise ValueError(f"num_steps = {num_steps:,} is more than max_steps = {max_steps:,} "
                         f"steps per run; pass max_steps={num_steps} to allow it")


def record_bytes(records) -> int:
    """Bytes of one record (a pytree of arrays or shape-dtype structs, e.g. ``observe``'s
    output; under ``vmap`` the shapes of one run)."""
    return sum(int(np.prod(np.shape(a))) * getattr(a.dtype, "itemsize", 8)
               for a in jax.tree_util.tree_leaves(records))


def check_records_fit(sim, per_record: int, num_steps: int, stride: int) -> None:
    """Refuse (``ValueError`` naming ``num_steps``, ``stride`` and the estimate) a run whose
    ``num_steps // stride + 1`` records of ``per_record`` bytes each exceed this machine's
    physical memory (:func:`simplexlab._checks.host_memory_bytes`): such a scan's output can
    never be allocated, and XLA would end the process instead of raising."""
    memory = host_memory_bytes()
    n_rec = num_steps // stride + 1
    need = per_record * n_rec
    if memory is not None and need > memory:
        raise ValueError(f"{sim.name or type(sim).__name__}: num_steps = {num_steps:,} with "
                         f"stride = {stride:,} records {n_rec:,} x {per_record:,} bytes = "
                         f"{need:,} bytes per run, more than this machine's memory "
                         f"({memory:,} bytes); raise stride or lower num_steps")


def trajectory(sim: AbstractSimulator, key, params: dict[str, Any] | None = None, *,
               num_steps: int, stride: int = 1, max_steps: int = MAX_STEPS):
    r"""Run ``num_steps`` steps of ``sim`` with :func:`jax.lax.scan`, recording
    ``sim.observe`` at step 0 and every ``stride`` steps (``num_steps // stride + 1`` records;
    ``num_steps`` must be a multiple of ``stride``). Returns ``(final_state, records)``.
    ``params`` overrides :meth:`~AbstractSimulator.default_params` (missing names take their
    defaults). Pure: jit it with ``num_steps`` and ``stride`` static, vmap it over keys and
    parameter values.

    Size guards, before the scan is built: ``num_steps`` above ``max_steps`` (default
    :data:`MAX_STEPS`, 10^8; pass a larger one to allow more) and records whose total size
    (one ``observe`` record's bytes × ``num_steps // stride + 1``) exceeds this machine's
    memory raise ``ValueError`` naming the value and the estimate."""
    check_num_steps(num_steps, stride, max_steps)
    full = {**sim.default_params(), **(params or {})}
    sim.check_params(full)
    for k, v in full.items():  # one run: one value per parameter (traced ones too)
        if np.ndim(v) != 0:
            raise ValueError(f"{sim.name or type(sim).__name__}: {k} must be a scalar (one value "
                             f"per run; a grid of values goes to simplexlab.sweep.run); got "
                             f"shape {np.shape(v)}")
    state = sim.init(key, full)
    first = sim.observe(state)
    check_records_fit(sim, record_bytes(first), num_steps, stride)

    def inner(s, _):
        return sim.step(s, full), None

    def outer(s, _):
        s, _ = jax.lax.scan(inner, s, None, length=stride)
        return s, sim.observe(s)

    final, rec = jax.lax.scan(outer, state, None, length=num_steps // stride)
    rec = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b]), first, rec)
    return final, rec
