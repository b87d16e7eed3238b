r"""What a sweep can run: any simulator of :mod:`simplexlab.sim`, or the mean-field ODE ensemble.

A *target* names its parameters, says which are *array* parameters (varied inside one compiled
program, batched with ``vmap`` / ``lax.map``) and which are *static* (one compilation per value:
group size, optimizer, K, ...), validates values before any compute starts, and builds the batch
program ``(key_data (b, ...), arrays {name: (b,)}) -> {output: (b, ...)}`` the engine shards.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import is_int, trusted_inputs
from .._imports import import_user_module
from ..shaping import METHOD_PARAMS, METHODS, GainSchedule, meanfield_system
from ..sim import SIMULATORS, AbstractSimulator, trajectory
from ..theory.internal import SCHEDULE_KINDS
from ._adapters import adapter
from ._store import chunk_digest

__all__ = ["AbstractSweepTarget", "Batch", "MeanFieldTarget", "SimulatorTarget",
           "import_simulator", "make_target"]

BATCHINGS = ("auto", "vmap", "map")


@dataclasses.dataclass(frozen=True)
class Batch:
    """A compiled-once batch program and the layout of its outputs.

    ``fn(key_data, arrays)``: ``key_data`` ``(b, *key_shape)`` raw PRNG key data, ``arrays`` a
    dict of ``(b,)`` parameter values; returns a dict of ``(b, *trailing)`` arrays. ``dims``: the
    trailing dimension names of each output; ``coords``: coordinates of those dimensions;
    ``bytes_per_run``: an upper estimate of the working memory of one run (for the memory
    budget); ``bytes_out``: bytes of one run's outputs."""

    fn: Any
    dims: dict[str, tuple[str, ...]]
    coords: dict[str, np.ndarray]
    bytes_per_run: int
    bytes_out: int
    vmapped: bool = False  #: runs batched with vmap (working memory per run) or one at a time
    #: XLA options of the compiled program (``jax.jit(..., compiler_options=...)``)
    compiler_options: dict[str, Any] | None = None
    #: a host check of each computed chunk, ``check(outputs) -> outputs``: raises on a failed
    #: run and returns the outputs that ``dims`` names (dropping the program's status outputs).
    #: Checking on the host keeps host callbacks out of the program, which JAX's persistent
    #: compilation cache needs.
    check: Any = None


class AbstractSweepTarget(abc.ABC):
    """Base class of sweep targets."""

    name: str = ""
    version: str = "1"

    @abc.abstractmethod
    def array_params(self) -> dict[str, Any]:
        """Array parameters and their defaults."""

    @abc.abstractmethod
    def static_params(self) -> dict[str, Any]:
        """Static parameters and their defaults."""

    def unsweepable(self) -> tuple[str, ...]:
        """Static parameters that fix the output layout and cannot be swept."""
        return ()

    def groups(self, static: dict[str, Any], arrays: dict[str, np.ndarray],
               given: set[str]) -> list[tuple[dict[str, Any], Any]]:
        """Split the runs of one static combination into programs: ``[(static_i, rows_i)]``,
        ``rows_i`` indices into the ``(n,)`` arrays or ``None`` for all (default: one program).
        ``given``: the parameter names the user fixed or swept."""
        return [(static, None)]

    def cast(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The ``(n,)`` parameter arrays in the dtypes the program takes them in, after
        :meth:`validate` has accepted their values (default: as they are, float64)."""
        return arrays

    @abc.abstractmethod
    def validate(self, static: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Raise ``ValueError`` naming any bad value (called before any compute)."""

    @abc.abstractmethod
    def batch(self, static: dict[str, Any], batching: str) -> Batch:
        """The batch program for one combination of static parameters."""

    def block_size(self, static: dict[str, Any]) -> int:
        """Runs computed together whose results depend on one another (the mean-field target's
        ODE blocks, with a shared adaptive step); default 1 (every run on its own). The engine
        cuts blocks from the global order of the runs of a program, ``[j b, (j + 1) b)``, and
        gives each device whole blocks, so a result never depends on how many devices,
        processes or chunks computed it; the last, partial block is padded with its last run."""
        return 1

    def steps_per_run(self, static: dict[str, Any]) -> int | None:
        """Steps each run of the program ``static`` takes (the engine refuses more than its
        ``max_steps`` before any compute); ``None`` (the default) for a target without a step
        count of its own (the mean-field ODEs' adaptive steps)."""
        return None

    def describe(self) -> dict[str, Any]:
        return {"target": self.name, "target_version": self.version}


def resolve_batching(batching: str, cpu: str = "map") -> str:
    """``"vmap"`` or ``"map"``; ``"auto"`` is ``cpu`` on CPU (``"map"``, i.e. ``lax.map``, for
    large per-run states, where batched scans and gathers are slower than the same work done run
    by run; ``"vmap"`` for small ones) and ``"vmap"`` on accelerators."""
    if batching == "auto":
        return cpu if jax.default_backend() == "cpu" else "vmap"
    return batching


def _map_or_vmap(one, batching: str):
    """``one(kd, arrays) -> outputs`` over a leading batch axis, by ``vmap`` or ``lax.map``
    (``batching`` already resolved by :func:`resolve_batching`)."""
    if batching == "vmap":
        return jax.vmap(one)
    return lambda kd, arrays: jax.lax.map(lambda a: one(*a), (kd, arrays))


class SimulatorTarget(AbstractSweepTarget):
    """A simulator class of :mod:`simplexlab.sim` (``cls.make(**settings)`` builds one from its
    static settings; ``default_params()`` names its array parameters), run as its
    :class:`~simplexlab.sweep.SweepAdapter` says. Static run settings: ``num_steps`` and
    ``stride`` (records at step 0 and every ``stride`` steps)."""

    def __init__(self, cls: type[AbstractSimulator]):
        self.cls = cls
        self.name = cls.name or f"{cls.__module__}:{cls.__qualname__}"
        self.version = cls.version
        self.adapter = adapter(cls)
        self._sims: dict[str, AbstractSimulator] = {}

    def array_params(self):
        return self.adapter.all_params(self.cls)

    def cast(self, arrays):
        """Integer parameters (a :class:`~simplexlab._checks.Param` of kind ``"int"``: group
        sizes, counts, indices) in JAX's default integer dtype, the rest as they are: an integer
        stays an integer from the sweep file to the kernel (its values were checked whole
        numbers by :meth:`validate`)."""
        specs = self.adapter.param_specs(self.cls)
        return {k: (v.astype(specs[k].dtype) if k in specs and specs[k].kind == "int" else v)
                for k, v in arrays.items()}

    def static_params(self):
        return {**self.cls.settings(), "num_steps": 100, "stride": 1}

    def unsweepable(self):
        return ("num_steps", "stride", "dtype")

    def groups(self, static, arrays, given):
        return self.adapter.groups(static, arrays, given)

    def _make(self, static):
        """The simulator of the static settings ``static``, built once per setting."""
        settings = {k: v for k, v in static.items() if k not in ("num_steps", "stride")}
        key = chunk_digest({"settings": settings})
        if key not in self._sims:
            self._sims[key] = self.cls.make(**settings)
        return self._sims[key]

    def steps_per_run(self, static):
        return static["num_steps"]

    def validate(self, static, arrays):
        for name in ("num_steps", "stride"):
            v = static[name]
            if not is_int(v) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1; got {v!r}")
        if static["num_steps"] % static["stride"]:
            raise ValueError(f"num_steps = {static['num_steps']} must be a multiple of stride = "
                             f"{static['stride']}")
        sim = self._make(static)
        own = sim.default_params()
        defaults = self.array_params()
        for k, v in arrays.items():
            if k not in own and np.any(np.asarray(v) != defaults[k]):
                raise ValueError(f"{self.name}: parameter {k!r} has no effect with these "
                                 f"settings (its array parameters are {sorted(own)})")
        sim.check_params({k: np.asarray(v) for k, v in arrays.items() if k in own})

    def batch(self, static, batching):
        sim = self._make(static)
        num_steps, stride = static["num_steps"], static["stride"]

        own = sim.default_params()

        def one(kd, arrays):
            arrays = {k: v for k, v in arrays.items() if k in own}
            # checked on the host above (sim.check_params): no run-time checks in the program,
            # so that it has no host callback and JAX's persistent cache can keep it
            with trusted_inputs():
                # the step count was checked against the sweep's own max_steps (the engine)
                rec = trajectory(sim, jax.random.wrap_key_data(kd), arrays,
                                 num_steps=num_steps, stride=stride, max_steps=num_steps)[1]
            rec = rec._asdict() if hasattr(rec, "_asdict") else dict(rec)
            rec.pop("step", None)  # the step is the coordinate
            return rec

        batching = resolve_batching(batching, self.adapter.cpu_batching)
        fn = _map_or_vmap(one, batching)
        shapes = jax.eval_shape(
            one, jax.random.key_data(jax.random.key(0)),
            {k: jnp.asarray(v) for k, v in sim.default_params().items()})
        n_rec = num_steps // stride + 1
        named = self.adapter.observe_dims(sim)
        dims = {k: ("step",) + tuple(named.get(k, ())) if len(named.get(k, ())) == s.ndim - 1
                else ("step",) + tuple(f"{k}_{i}" for i in range(s.ndim - 1))
                for k, s in shapes.items()}
        bytes_out = sum(int(np.prod(s.shape)) * s.dtype.itemsize for s in shapes.values())
        return Batch(fn=fn, dims=dims,
                     coords={"step": np.arange(0, num_steps + 1, stride)[:n_rec]},
                     bytes_per_run=self.adapter.run_bytes(sim), bytes_out=bytes_out,
                     vmapped=batching == "vmap")


SYSTEMS = ("grpo", "good_bonus", "neutralized")
#: XLA's algebraic simplifier reassociates products and quotients of the ODE's vector field
#: differently when it compiles one program for one device or a program partitioned over
#: several (``shard_map``): the last bits of the trajectories then depend on the device count
#: (seen on CPU: ~1e-14 relative in ``p`` under schedule B). Without that pass the programs
#: compute the same operations for every device count.
COMPILER_OPTIONS = {"xla_disable_hlo_passes": "algsimp"}
SCHEDULES = tuple(SCHEDULE_KINDS)


class MeanFieldTarget(AbstractSweepTarget):
    r"""The mean-field (p, y, z) ODEs of G²RPO as a sweep target.

    Static: ``system`` (``"grpo"`` eq. 22, ``"good_bonus"`` eq. 48, ``"neutralized"`` eq. 56),
    ``schedule`` (``"constant"``, ``"A"`` eq. 62, ``"B"`` eq. 67), ``K``, ``M``, ``t1``,
    ``n_save``, ``time`` (``"physical"`` / ``"inner"``), ``rtol``, ``atol``, ``block`` (how
    many trajectories are integrated together as one system with a shared adaptive step,
    :func:`simplexlab.theory.solve_ensemble`; the blocks of a device run one after another),
    ``outputs`` (which of :attr:`OUTPUTS` to return: ``"all"``, a comma-separated
    string or a list; fewer outputs, less memory: ``"p,y,z"`` is 6/10 of the bytes of
    ``"all"``, the rest can be recomputed from it). Array: ``gain`` (λ, or λ0 of a schedule;
    default G2's 1.5), ``delta_fn``, ``delta_fp``, ``p0``. The time is the lab's mean-field time
    ``t = step · η`` (the systems have ``eta = 1``), so no parameter is the step size.
    ``group_size``: ``inf`` for the papers' ``G → ∞`` systems (the default; TOML's ``inf``),
    ``G >= 2`` for the finite-group system
    (:class:`~simplexlab.theory.FiniteGroup`) of ``method`` (any rule of
    :data:`simplexlab.shaping.METHODS` with its default parameters; ``""``: ``grpo`` or
    ``g2rpo`` by ``system``; REINFORCE++ as one group per batch). Each seed draws the initial
    compositions ``y0 ~ Dirichlet(1_K)``, ``z0 ~ Dirichlet(1_M)``, as normalised i.i.d.
    standard exponentials (the same law as ``jax.random.dirichlet`` with unit concentrations,
    whose gamma rejection loop cost ~20 µs per trajectory and ~7 s of compilation):
    ``y0 = e / Σe`` with ``e = jax.random.exponential(ky, (K,))``,
    ``(ky, kz) = jax.random.split(key)``.

    A block shares one step sequence, so a trajectory's numbers depend on its block. Blocks are
    cut from the global order of the sweep's runs (grid point by grid point, seeds innermost):
    ``[j·block, (j+1)·block)`` of each program, the last one padded with copies of its last run
    (the padding is dropped); a sweep of fewer than ``block`` runs is one block of all of them.
    The engine gives every device whole blocks (:meth:`block_size`), so the Dataset is
    bit-identical whatever the device count, process count, chunk size or memory budget
    (``block`` = the number of seeds makes every block one grid point: the fewer steps its
    hardest trajectory needs, the cheaper the block). The program is compiled without XLA's
    algebraic simplifier (:data:`COMPILER_OPTIONS`), whose rewrites of the vector field
    otherwise differ between a one-device and a partitioned program.
    """

    name = "meanfield"
    # 2: initial compositions from normalised exponentials; `outputs`. 3: blocks cut from the
    # runs' global order, compiled without the algebraic simplifier (the same bits on any machine)
    version = "3"
    #: every output, per trajectory: ``p``, ``L_y``, ``L_z``, ``y``, ``z``, the physical and
    #: internal times ``t`` and ``tau`` at the save points (dim ``time``), whether and when
    #: integration stopped at the boundary (``stopped``, ``t_end``)
    OUTPUTS = ("p", "L_y", "L_z", "y", "z", "t", "tau", "stopped", "t_end")

    def array_params(self):
        return {"gain": METHOD_PARAMS["gain"], "delta_fn": 0.0, "delta_fp": 0.0, "p0": 0.5}

    def static_params(self):
        return {"system": "neutralized", "schedule": "B", "K": 3, "M": 2, "t1": 20.0,
                "n_save": 21, "time": "physical", "rtol": 1e-6, "atol": 1e-9, "block": 1024,
                "outputs": "all", "group_size": math.inf, "method": ""}

    def unsweepable(self):
        return ("K", "M", "t1", "n_save", "time", "outputs", "method")

    @staticmethod
    def _outputs(value) -> tuple[str, ...]:
        if isinstance(value, str):
            names = MeanFieldTarget.OUTPUTS if value == "all" else tuple(
                v.strip() for v in value.split(",") if v.strip())
        elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            names = tuple(value)
        else:
            raise ValueError(f"meanfield: outputs must be 'all', a comma-separated string or a "
                             f"list of names from {MeanFieldTarget.OUTPUTS}; got {value!r}")
        bad = sorted(set(names) - set(MeanFieldTarget.OUTPUTS))
        if bad or not names or len(set(names)) != len(names):
            raise ValueError(f"meanfield: outputs must be distinct names from "
                             f"{MeanFieldTarget.OUTPUTS}; got {value!r}")
        return tuple(n for n in MeanFieldTarget.OUTPUTS if n in names)

    def validate(self, static, arrays):
        if static["system"] not in SYSTEMS:
            raise ValueError(f"meanfield: unknown system {static['system']!r}; choose one of "
                             f"{SYSTEMS}")
        if static["schedule"] not in SCHEDULES:
            raise ValueError(f"meanfield: unknown schedule {static['schedule']!r}; choose one of "
                             f"{SCHEDULES}")
        for name in ("K", "M", "n_save", "block"):
            v = static[name]
            if not is_int(v) or v < 1:
                raise ValueError(f"meanfield: {name} must be an integer >= 1; got {v!r}")
        if static["n_save"] < 2:
            raise ValueError(f"meanfield: n_save must be >= 2; got {static['n_save']}")
        G = static["group_size"]
        infinite = isinstance(G, float) and G == math.inf
        if not infinite and (not is_int(G) or G < 2):
            raise ValueError(f"meanfield: group_size must be inf (the G → ∞ limit; TOML's inf) "
                             f"or an integer >= 2 (the finite-group system); got {G!r}")
        if static["method"] not in ("", *METHODS):
            raise ValueError(f"meanfield: unknown method {static['method']!r}; choose one of "
                             f"{sorted(METHODS)} (or '' for the system's own)")
        if static["method"] and infinite and not METHODS[static["method"]].has_limit_system:
            raise ValueError(f"meanfield: method {static['method']!r} has no G → ∞ system; "
                             "give group_size >= 2 for its finite-group system")
        for name in ("t1", "rtol", "atol"):
            v = static[name]
            if (not isinstance(v, int | float) or isinstance(v, bool) or not np.isfinite(v)
                    or v <= 0):  # a bool is no number (True would be 1.0)
                raise ValueError(f"meanfield: {name} must be a finite number > 0; got {v!r}")
        if static["time"] not in ("physical", "inner"):
            raise ValueError(f"meanfield: time must be 'physical' or 'inner'; got "
                             f"{static['time']!r}")
        self._outputs(static["outputs"])
        a = {k: np.asarray(v, dtype=float) for k, v in arrays.items()}
        for k, v in a.items():
            if not np.all(np.isfinite(v)):
                raise ValueError(f"meanfield: {k} must be finite; got {v}")
        if np.any(a["gain"] < 0):
            raise ValueError(f"meanfield: gain must be >= 0; got {a['gain']}")
        for k in ("delta_fn", "delta_fp"):
            if np.any((a[k] < 0) | (a[k] >= 1)):
                raise ValueError(f"meanfield: {k} must be in [0, 1); got {a[k]}")
        if np.any(a["delta_fn"] + a["delta_fp"] >= 1):
            raise ValueError("meanfield: delta_fn + delta_fp must be < 1 (J > 0)")
        if np.any((a["p0"] <= 0) | (a["p0"] >= 1)):
            raise ValueError(f"meanfield: p0 must be in (0, 1); got {a['p0']}")

    def batch(self, static, batching):
        from ..theory import State, Verifier
        from ..theory.internal import check_result_codes, map_blocks, solve_block

        K, M, block = static["K"], static["M"], static["block"]
        n_save = static["n_save"]
        outputs = self._outputs(static["outputs"])
        saveat = jnp.linspace(0.0, float(static["t1"]), n_save)
        method = static["method"] or ("grpo" if static["system"] == "grpo" else "g2rpo")
        schedule = GainSchedule(kind=static["schedule"],
                                neutralize=static["system"] == "neutralized")
        G = static["group_size"]

        def dynamics(a):
            verifier = Verifier(a["delta_fn"], a["delta_fp"])
            if G == math.inf:
                return meanfield_system(method, schedule, gain=a["gain"], verifier=verifier)
            gain = a["gain"] if METHODS[method].schedule else None
            # the verifier's rates are traced here: every cell counts as fillable
            return meanfield_system(method, schedule, gain=gain, verifier=verifier,
                                    group_size=G, num_groups=1)

        def simplex(key, n):
            e = jax.random.exponential(key, (n,))
            return e / jnp.sum(e)

        def solve_one_block(kd, a):
            keys = jax.vmap(jax.random.wrap_key_data)(kd)
            ky, kz = jax.vmap(jax.random.split, out_axes=1)(keys)
            y0 = jax.vmap(lambda k: simplex(k, K))(ky)
            z0 = jax.vmap(lambda k: simplex(k, M))(kz)
            with trusted_inputs():  # every parameter checked on the host (validate)
                sol, code = solve_block(dynamics(a), State(a["p0"], y0, z0), saveat=saveat,
                                        time=static["time"], rtol=static["rtol"],
                                        atol=static["atol"])
            return {**{k: getattr(sol, k) for k in outputs}, "_result": code}

        def check(part):  # diffrax's result codes, on the host after the program has run
            part = dict(part)
            check_result_codes(part.pop("_result"), "the meanfield sweep")
            return part

        def fn(kd, arrays):  # blocks padded by repeating the last run, one after another
            return map_blocks(solve_one_block, block, kd, arrays)

        all_dims = {"p": ("time",), "L_y": ("time",), "L_z": ("time",), "y": ("time", "k"),
                    "z": ("time", "m"), "t": ("time",), "tau": ("time",), "stopped": (),
                    "t_end": ()}
        dims = {k: all_dims[k] for k in outputs}
        width = {"p": 1, "L_y": 1, "L_z": 1, "y": K, "z": M, "t": 1, "tau": 1}
        per = 8 * sum(n_save * width[k] if k in width else 1 for k in outputs)
        # working memory of one trajectory inside a block: the solver's state, its 7 stages and
        # the step's temporaries (~ 60 (K + M + 4) floats, measured ~5 KiB at K = 3, M = 2)
        # plus its saved states; with lax.map one block at a time, with vmap all of them
        work = 8 * (60 * (K + M + 4) + n_save * (K + M + 4))
        coords = {"time": np.asarray(saveat)}
        if "y" in outputs:
            coords["k"] = np.arange(K)
        if "z" in outputs:
            coords["m"] = np.arange(M)
        vmapped = resolve_batching(batching) == "vmap"
        if vmapped:
            work_per_run = work + per  # the engine counts it per run: blocks of >= 1 run
        else:
            work_per_run = block * work + per  # the engine counts it once: one block at a time
        return Batch(fn=fn, dims=dims, coords=coords, bytes_out=per,
                     bytes_per_run=work_per_run, vmapped=vmapped,
                     compiler_options=COMPILER_OPTIONS, check=check)

    def block_size(self, static) -> int:
        return static["block"]


TARGETS: dict[str, AbstractSweepTarget] = {}


def make_target(name_or_target) -> AbstractSweepTarget:
    """A :class:`AbstractSweepTarget` from a name (``"meanfield"``, a simulator of
    :data:`simplexlab.sim.SIMULATORS`, or a simulator class of the user's own code by its import
    path ``"package.module:Class"``, the module one the user allowed:
    :func:`simplexlab._imports.import_user_module`), a simulator class, or a target (returned as
    is)."""
    if isinstance(name_or_target, AbstractSweepTarget):
        return name_or_target
    if isinstance(name_or_target, type) and issubclass(name_or_target, AbstractSimulator):
        return SimulatorTarget(name_or_target)
    if name_or_target == MeanFieldTarget.name:
        return MeanFieldTarget()
    if name_or_target in SIMULATORS:
        return SimulatorTarget(SIMULATORS[name_or_target])
    if isinstance(name_or_target, str) and ":" in name_or_target:
        return SimulatorTarget(import_simulator(name_or_target))
    raise ValueError(f"unknown simulator {name_or_target!r}; known: "
                     f"{sorted([MeanFieldTarget.name, *SIMULATORS])}, or a simulator class of "
                     "your own code as \"package.module:Class\"")


def import_simulator(spec: str, who: str = "simulator") -> type[AbstractSimulator]:
    """The simulator class ``"package.module:Class"`` names: the module imported if the user
    allowed it (``--import``, ``SIMPLEXLAB_IMPORT``, or imported already by the user's own
    code; checked before it is imported), the class a subclass of
    :class:`~simplexlab.sim.AbstractSimulator` with its parameters declared (its own
    ``param_specs``). Anything else is a ``ValueError`` naming ``who`` and the class."""
    module, _, name = spec.partition(":")
    if not name.isidentifier():
        raise ValueError(f"{who} {spec!r}: {name!r} is not a class name (write "
                         "\"package.module:Class\")")
    mod = import_user_module(module, f"{who} {spec!r}")
    cls = getattr(mod, name, None)
    if not (isinstance(cls, type) and issubclass(cls, AbstractSimulator)):
        raise ValueError(f"{who} {spec!r}: {module!r} has no simulator class {name!r} (a "
                         f"subclass of simplexlab.sim.AbstractSimulator); got {cls!r}")
    if getattr(cls, "__abstractmethods__", None):
        raise ValueError(f"{who} {spec!r}: {name} is abstract: it does not implement "
                         f"{sorted(cls.__abstractmethods__)}")
    return cls
