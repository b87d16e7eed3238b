r"""The toy product "LLM" of G²RPO App. E as a simulator: batches of i.i.d.-token sequences.

A vocabulary of ``V`` tokens with fixed probabilities ``probs`` (the paper's
``(0.8, 0.1, 0.05, 0.03, 0.02)`` over ``{A, B, C, D, E}``) and sequences of ``length`` (``T = 80``)
tokens drawn i.i.d., so ``log10 π(h) = Σ_i n_i log10 p_i`` depends on a sequence only through its
token counts ``n``. Each step draws one batch of ``group_size`` (``G = 10``) sequences, "``G``
rollouts for a fixed prompt"; nothing is learned (the policy is fixed), so a run is a stream of
independent batches: 2,000 batches of ``G = 10`` are Table 2's ``N = 20,000`` sequences, 500 are
Table 3's batches, one is Table 4's example.

Implements the simulator protocol, so :mod:`simplexlab.sweep` runs replicate streams over seeds
and group sizes (an array parameter: batches are padded to ``max_group_size``) and over lengths
and vocabularies (static settings). Record ``s`` (of
:func:`~simplexlab.sim.trajectory`, at step ``s``) is batch ``s``: :meth:`Product.init` already
holds batch 0, so ``num_steps = B − 1`` gives ``B`` batches. Batch ``s`` is drawn from
``fold_in(key, s)``, so it does not depend on the stride. The exact laws these batches follow are
in :mod:`simplexlab.theory` (``product_log10_moments``, ``product_log10_distribution``,
``range_distribution``).
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import Param, is_int, trusted_inputs, xp
from ..theory import product_log10_prob
from ._protocol import AbstractSimulator, WithDtype, trajectory
from ._sampler import uniforms

__all__ = ["Product", "ProductMetrics", "ProductState"]

#: G²RPO App. E's token probabilities of A, B, C, D, E.
PAPER_PROBS = (0.8, 0.1, 0.05, 0.03, 0.02)

#: the one array parameter (G²RPO App. E: G = 10)
GROUP_SIZE = Param("group_size", 10, lambda g: ~(xp.isfinite(g) & (g >= 2) & (g == xp.round(g))),
                   "a whole number >= 2", "G", "sequences per batch", kind="int")


class ProductState(NamedTuple):
    """Simulator state: the run's key, the index of the current batch, its token counts and the
    run's group size."""

    key: jax.Array  #: the run's PRNG key (batch ``s`` uses ``fold_in(key, s)``)
    step: jax.Array  #: index of the current batch
    counts: jax.Array  #: token counts of the current batch ``(max_group_size, V)`` (int32)
    group_size: jax.Array  #: the run's group size ``G`` (rows ``g >= G`` are padding)


class ProductMetrics(NamedTuple):
    """One batch (axes ``sequence``, ``token``)."""

    step: jax.Array  #: index of the batch
    counts: jax.Array  #: token counts ``(max_group_size, V)`` (padding rows: 0)
    log10_prob: jax.Array  #: ``log10 π(h)`` of each sequence ``(max_group_size,)`` (padding: NaN)


def _as_probs(value) -> tuple[float, ...]:
    """``value`` as a tuple of floats: a vector of >= 1 positive probabilities summing to 1
    (within 1e-6; renormalized), else ``ValueError`` naming it."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 1 or arr.size < 1 or not np.all(np.isfinite(arr)) \
            or np.any(arr <= 0) or abs(arr.sum() - 1.0) > 1e-6:
        raise ValueError("product: probs must be a vector of positive token probabilities "
                         f"summing to 1 (within 1e-6); got {value!r}")
    return tuple(float(v) for v in arr / arr.sum())


class Product(AbstractSimulator, WithDtype):
    r"""The toy product model of G²RPO App. E (module docstring).

    Static settings (fields; one compilation per value): ``probs`` (token probabilities, > 0,
    summing to 1; a list or array is turned into a tuple), ``length`` (``T >= 1`` tokens per
    sequence), ``max_group_size`` (batches are padded to it, so every group size up to it runs
    in one program; ``None``, the default: the ``group_size`` given), ``dtype`` (of the uniforms
    and of ``log10_prob``; ``None``: JAX's default float).

    Array parameter (:meth:`default_params`; swept inside one program): ``group_size`` (``G``,
    sequences per batch, a whole number in ``[2, max_group_size]``; its default is the field
    ``group_size``: if not given, ``max_group_size``, or the paper's 10 when neither is given).
    Sequence ``g`` of a batch uses uniforms ``g T .. g T + T − 1`` of the batch's stream whatever
    ``max_group_size`` is, so padding leaves a run's ``counts`` unchanged bit for bit; the padding
    rows ``g >= G`` of ``counts`` are 0 and of ``log10_prob`` NaN. ``log10_prob`` is the same
    function of the same counts, a matrix-vector product whose summation order XLA picks by the
    array's shape: a padded run's values can differ from an unpadded one's in the last bit (1 ulp;
    an unpadded run, ``max_group_size == group_size``, the default, is the program of before).
    """

    name: ClassVar[str] = "product"
    version: ClassVar[str] = "1"
    cpu_batching: ClassVar[str] = "vmap"
    pad: ClassVar[tuple[str, str]] = ("group_size", "max_group_size")

    probs: tuple = eqx.field(default=PAPER_PROBS, kw_only=True, static=True)
    length: int = eqx.field(default=80, kw_only=True, static=True)
    group_size: int | None = eqx.field(default=None, kw_only=True)
    max_group_size: int | None = eqx.field(default=None, kw_only=True, static=True)
    dtype: Any = eqx.field(default=None, kw_only=True, static=True)

    def __post_init__(self):
        self.probs = _as_probs(self.probs)
        if self.group_size is None:
            self.group_size = 10 if self.max_group_size is None else self.max_group_size
        if self.max_group_size is None and is_int(self.group_size) and self.group_size >= 2:
            self.max_group_size = int(self.group_size)

    def __check_init__(self):
        if self.max_group_size is None:
            raise ValueError("product: group_size must be an integer >= 2 (without "
                             f"max_group_size it sets the padding bound); got "
                             f"{self.group_size!r}")
        for name, lower in (("length", 1), ("max_group_size", 2)):
            v = getattr(self, name)
            if not is_int(v) or v < lower:
                raise ValueError(f"product: {name} must be an integer >= {lower}; got {v!r}")
        self.check_params({"group_size": self.group_size})
        self.check_dtype()

    @classmethod
    def settings(cls) -> dict[str, Any]:
        """The static settings (``group_size`` is an array parameter, :meth:`default_params`)."""
        return {"probs": PAPER_PROBS, "length": 80, "max_group_size": None, "dtype": None}

    @classmethod
    def make(cls, **settings) -> Product:
        """Build from flat settings: :meth:`settings` and the default ``group_size``."""
        cls.check_settings(settings, {*cls.settings(), "group_size"})
        return cls(**settings)

    def param_specs(self) -> dict[str, Param]:
        """``group_size``, its default the field ``group_size``."""
        return {"group_size": GROUP_SIZE._replace(default=self.group_size)}

    @classmethod
    def all_param_specs(cls) -> dict[str, Param]:
        return {"group_size": GROUP_SIZE}

    def constraints(self):
        Gmax = self.max_group_size
        return [(("group_size",), lambda g: ~(g <= Gmax),
                 f"<= max_group_size = {Gmax} (the batches are padded to max_group_size, a "
                 "static setting: raise it to sweep larger groups)")]

    # ---- how a sweep runs it ---------------------------------------------------------------

    def working_bytes(self) -> int:
        """The ``(G, T, V)`` comparisons of the inverse CDF and the ``(G, T)`` uniforms."""
        G, T, V = self.max_group_size, self.length, len(self.probs)
        return 8 * G * T * (V + 2) + 4096

    def observe_dims(self):
        return {"counts": ("sequence", "token"), "log10_prob": ("sequence",)}

    # ---- protocol --------------------------------------------------------------------------

    def draw(self, key, index, group_size=None) -> jax.Array:
        r"""Token counts ``(max_group_size, V)`` of batch ``index``: ``G · T`` uniforms of the
        shared sampler from ``fold_in(key, index)``, token = ``#{c < V − 1 : cdf_c <= u}`` (exact
        inverse CDF; a token's probability is ``p_c`` up to the rounding of the ``cdf``), counted;
        rows ``g >= G`` (``G = group_size``, default the field) are 0."""
        dt = self.float_dtype()
        Gmax, T, V = self.max_group_size, self.length, len(self.probs)
        G = self.group_size if group_size is None else group_size
        cdf = jnp.asarray(np.cumsum(self.probs)[:-1], dt)
        u = uniforms(jax.random.fold_in(key, index), Gmax * T, dt).reshape(Gmax, T)
        tokens = jnp.sum(u[..., None] >= cdf, -1, dtype=jnp.int32)
        counts = jnp.sum(tokens[..., None] == jnp.arange(V, dtype=jnp.int32), 1, dtype=jnp.int32)
        return jnp.where(self._valid(G)[:, None], counts, 0)

    def _valid(self, group_size):
        """``(max_group_size,)`` mask of the batch's sequences ``g < group_size``."""
        G = jnp.asarray(group_size)
        if not jnp.issubdtype(G.dtype, jnp.integer):
            G = G.astype(jnp.int32)  # a whole number (checked)
        return jnp.arange(self.max_group_size, dtype=G.dtype) < G

    def init(self, key, params) -> ProductState:
        G = self.checked(jnp.asarray(params["group_size"]), params)
        step = jnp.zeros((), jnp.int32)
        return ProductState(key=key, step=step, counts=self.draw(key, step, G),
                            group_size=G.astype(jnp.int32))

    def step(self, state: ProductState, params) -> ProductState:
        step = state.step + 1
        return ProductState(key=state.key, step=step,
                            counts=self.draw(state.key, step, state.group_size),
                            group_size=state.group_size)

    def observe(self, state: ProductState) -> ProductMetrics:
        with trusted_inputs():  # counts drawn above: whole numbers >= 0 by construction
            lp = product_log10_prob(state.counts.astype(self.float_dtype()), self.probs)
        lp = jnp.where(self._valid(state.group_size), lp, jnp.nan)
        return ProductMetrics(step=state.step, counts=state.counts, log10_prob=lp)

    def batches(self, key, num_batches: int) -> ProductMetrics:
        """``num_batches`` batches of one run (records of :func:`trajectory` with
        ``num_steps = num_batches − 1``): fields with a leading ``batch`` axis."""
        if not is_int(num_batches) or num_batches < 1:
            raise ValueError(f"product: num_batches must be an integer >= 1; got "
                             f"{num_batches!r}")
        if num_batches == 1:
            first = self.observe(self.init(key, self.default_params()))
            return jax.tree_util.tree_map(lambda a: a[None], first)
        return trajectory(self, key, {}, num_steps=num_batches - 1)[1]
