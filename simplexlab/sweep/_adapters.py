r"""What the sweep engine knows about each simulator beyond the simulator protocol.

A simulator of :mod:`simplexlab.sim` is ``init`` / ``step`` / ``observe`` with its settings and
array parameters; how a sweep batches, sizes, splits and labels its runs is the sweep's business,
held here as one :class:`SweepAdapter` per simulator class (:func:`register`; a class without one
gets the default adapter, that of its nearest registered base class first):

- ``cpu_batching``: ``"map"`` (``lax.map``, run by run: best for large per-run states) or
  ``"vmap"`` (best for small ones) on CPU; accelerators always use ``vmap``;
- ``params``: every array parameter any configuration takes, with its default (the names a sweep
  accepts; default: ``cls.make().default_params()``);
- ``working_bytes(sim)``: an upper estimate of one run's working memory, for the memory budget
  (default 1 MiB);
- ``dims(sim)``: names of the trailing axes of each ``observe`` field, for the Dataset (fields
  left out get ``<field>_0``, ...);
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

__all__ = ["SweepAdapter", "adapter", "register"]


@dataclasses.dataclass(frozen=True)
class SweepAdapter:
    """How the sweep engine runs one simulator class (module docstring)."""

    cpu_batching: str = "map"
    params: Mapping[str, Any] | None = None
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
        return dict(cls.make().default_params() if self.params is None else self.params)

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
        if self.bucket_floor is not None:
            b = np.maximum(b, int(self.bucket_floor(static, v)))
        return [({**static, bound: int(x)}, np.flatnonzero(b == x)) for x in np.unique(b)]


#: the registered adapters, by simulator class
ADAPTERS: dict[type, SweepAdapter] = {}
DEFAULT = SweepAdapter()


def register(cls: type, adapter: SweepAdapter | None = None, **fields) -> SweepAdapter:
    """Register how the sweep engine runs simulator class ``cls``: an adapter, or the fields of
    one (``register(MySim, cpu_batching="vmap", bucket=("group_size", "max_group_size"))``).
    Returns the adapter."""
    if adapter is None:
        adapter = SweepAdapter(**fields)
    elif fields:
        raise ValueError("give an adapter or its fields, not both")
    if not isinstance(adapter, SweepAdapter):
        raise ValueError(f"adapter must be a SweepAdapter; got {adapter!r}")
    ADAPTERS[cls] = adapter
    return adapter


def adapter(cls: type) -> SweepAdapter:
    """The adapter of simulator class ``cls`` (its own, its nearest base class's, or the
    default)."""
    for base in getattr(cls, "__mro__", (cls,)):
        if base in ADAPTERS:
            return ADAPTERS[base]
    return DEFAULT


def _register_simulators() -> None:
    from ..sim import Bandit, BanditMetrics, Categorical, Product, SoftmaxClassifier, TwoStage
    from ..sim.internal import BANDIT_PARAMS, CLASSIFIER_PARAMS, TWO_STAGE_PARAMS

    def categorical_bytes(sim):
        """:meth:`CategoricalConfig.working_bytes`: about a dozen ``(A,)`` arrays live at once
        plus ``(N,)`` draws."""
        return sim.config.working_bytes()

    def categorical_floor(static, values):
        """On a CPU (runs one after another) a draw costs about as much as 13 actions of the
        rest of a step (measured, float32, A = 128,000), so groups up to ~A/128 draws share one
        program at < 10% extra cost; on an accelerator (runs batched) every group size of the
        sweep shares one program."""
        import jax

        ok = np.isfinite(values) & (values >= 1)
        top = int(2 ** np.ceil(np.log2(values[ok].max()))) if ok.any() else 2
        if jax.default_backend() != "cpu":
            return top
        a = int(static.get("num_actions") or 2)
        return min(top, max(64, 2 ** int(np.round(np.log2(max(a / 128, 1))))))

    def bandit_bytes(sim):
        """The ``(P, G, C)`` one-hot of the rollouts and a few ``(P, G)`` / ``(P, C)``
        arrays."""
        P, G, C = sim.num_prompts, sim.max_group_size, sim.K + sim.M
        return 8 * P * (4 * G * C + 16 * G + 16 * C) + 4096

    def bandit_dims(sim):
        dims = {k: ("prompt",) for k in BanditMetrics._fields if k != "step"}
        dims.update(y=("prompt", "good_mode"), z=("prompt", "bad_mode"))
        return dims

    def classifier_bytes(sim):
        G, d = sim.max_group_size, sim.embedding_matrix().shape[1]
        return 8 * (16 * G + 64 * d) + 4096

    def product_bytes(sim):
        """The ``(G, T, V)`` comparisons of the inverse CDF and the ``(G, T)`` uniforms."""
        G, T, V = sim.max_group_size, sim.length, len(sim.probs)
        return 8 * G * T * (V + 2) + 4096

    register(Categorical, working_bytes=categorical_bytes,
             bucket=("group_size", "max_group_size"), bucket_floor=categorical_floor)
    # a few dozen numbers per run: batch them
    register(Bandit, cpu_batching="vmap", params=BANDIT_PARAMS, working_bytes=bandit_bytes,
             dims=bandit_dims, bucket=("group_size", "max_group_size"))
    register(SoftmaxClassifier, cpu_batching="vmap", params=CLASSIFIER_PARAMS,
             working_bytes=classifier_bytes,
             dims=lambda sim: {"pi_persian": ("label",), "sampling": ("label",),
                               "memory": ("label",), "pi_held_out": ("held_out", "label"),
                               "siamese_accuracy": ("held_out",), "counts": ("label",),
                               "advantage": ("label",)})
    register(Product, cpu_batching="vmap", working_bytes=product_bytes,
             pad=("group_size", "max_group_size"),
             dims=lambda sim: {"counts": ("sequence", "token"), "log10_prob": ("sequence",)})
    register(TwoStage, cpu_batching="vmap", params=TWO_STAGE_PARAMS,
             working_bytes=lambda sim: 8 * (8 * sim.num_actions + 4 * sim.max_group_size) + 4096,
             dims=lambda sim: {"probs": ("action",), "logits": ("action",),
                               "expected_reward": (), "negative_advantage": ("action",)})


_register_simulators()
