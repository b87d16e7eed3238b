r"""The toy product "LLM" of G²RPO App. E as a simulator: batches of i.i.d.-token sequences.

A vocabulary of ``V`` tokens with fixed probabilities ``probs`` (the paper's
``(0.8, 0.1, 0.05, 0.03, 0.02)`` over ``{A, B, C, D, E}``) and sequences of ``length`` (``T = 80``)
tokens drawn i.i.d., so ``log10 π(h) = Σ_i n_i log10 p_i`` depends on a sequence only through its
token counts ``n``. Each step draws one batch of ``group_size`` (``G = 10``) sequences, "``G``
rollouts for a fixed prompt"; nothing is learned (the policy is fixed), so a run is a stream of
independent batches: 2,000 batches of ``G = 10`` are Table 2's ``N = 20,000`` sequences, 500 are
Table 3's batches, one is Table 4's example.

Implements the simulator protocol, so :mod:`simplexlab.sweep` runs replicate streams over seeds
(and over lengths, group sizes, vocabularies as static settings). Record ``s`` (of
:func:`~simplexlab.sim.trajectory`, at step ``s``) is batch ``s``: :meth:`Product.init` already
holds batch 0, so ``num_steps = B − 1`` gives ``B`` batches. Batch ``s`` is drawn from
``fold_in(key, s)``, so it does not depend on the stride. The exact laws these batches follow are
in :mod:`simplexlab.sampling` (``product_log10_moments``, ``product_log10_distribution``,
``range_distribution``).
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import is_int, trusted_inputs
from ..theory._product import product_log10_prob
from ._protocol import AbstractSimulator, WithDtype, trajectory
from ._sampler import uniforms

__all__ = ["Product", "ProductMetrics", "ProductState"]

#: G²RPO App. E's token probabilities of A, B, C, D, E.
PAPER_PROBS = (0.8, 0.1, 0.05, 0.03, 0.02)


class ProductState(NamedTuple):
    """Simulator state: the run's key, the index of the current batch and its token counts."""

    key: jax.Array  #: the run's PRNG key (batch ``s`` uses ``fold_in(key, s)``)
    step: jax.Array  #: index of the current batch
    counts: jax.Array  #: token counts of the current batch ``(G, V)`` (int32, rows sum to T)


class ProductMetrics(NamedTuple):
    """One batch (axes ``sequence``, ``token``)."""

    step: jax.Array  #: index of the batch
    counts: jax.Array  #: token counts ``(G, V)``
    log10_prob: jax.Array  #: ``log10 π(h)`` of each sequence ``(G,)``


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
    sequence), ``group_size`` (``G >= 2`` sequences per batch), ``dtype`` (of the uniforms and
    of ``log10_prob``; ``None``: JAX's default float). No array parameters: the policy is fixed.
    """

    name: ClassVar[str] = "product"
    version: ClassVar[str] = "1"

    probs: tuple = eqx.field(default=PAPER_PROBS, kw_only=True, static=True)
    length: int = eqx.field(default=80, kw_only=True, static=True)
    group_size: int = eqx.field(default=10, kw_only=True, static=True)
    dtype: Any = eqx.field(default=None, kw_only=True, static=True)

    def __post_init__(self):
        self.probs = _as_probs(self.probs)

    def __check_init__(self):
        for name, lower in (("length", 1), ("group_size", 2)):
            v = getattr(self, name)
            if not is_int(v) or v < lower:
                raise ValueError(f"product: {name} must be an integer >= {lower}; got {v!r}")
        self.check_dtype()

    def default_params(self) -> dict[str, Any]:
        return {}

    # ---- protocol --------------------------------------------------------------------------

    def draw(self, key, index) -> jax.Array:
        r"""Token counts ``(G, V)`` of batch ``index``: ``G · T`` uniforms of the shared
        sampler from ``fold_in(key, index)``, token = ``#{c < V − 1 : cdf_c <= u}`` (exact inverse
        CDF; a token's probability is ``p_c`` up to the rounding of the ``cdf``), counted."""
        dt = self.float_dtype()
        G, T, V = self.group_size, self.length, len(self.probs)
        cdf = jnp.asarray(np.cumsum(self.probs)[:-1], dt)
        u = uniforms(jax.random.fold_in(key, index), G * T, dt).reshape(G, T)
        tokens = jnp.sum(u[..., None] >= cdf, -1, dtype=jnp.int32)
        return jnp.sum(tokens[..., None] == jnp.arange(V, dtype=jnp.int32), 1, dtype=jnp.int32)

    def init(self, key, params) -> ProductState:
        step = jnp.zeros((), jnp.int32)
        return ProductState(key=key, step=step, counts=self.draw(key, step))

    def step(self, state: ProductState, params) -> ProductState:
        step = state.step + 1
        return ProductState(key=state.key, step=step, counts=self.draw(state.key, step))

    def observe(self, state: ProductState) -> ProductMetrics:
        with trusted_inputs():  # counts drawn above: whole numbers >= 0 by construction
            lp = product_log10_prob(state.counts.astype(self.float_dtype()), self.probs)
        return ProductMetrics(step=state.step, counts=state.counts, log10_prob=lp)

    def batches(self, key, num_batches: int) -> ProductMetrics:
        """``num_batches`` batches of one run (records of :func:`trajectory` with
        ``num_steps = num_batches − 1``): fields with a leading ``batch`` axis."""
        if not is_int(num_batches) or num_batches < 1:
            raise ValueError(f"product: num_batches must be an integer >= 1; got "
                             f"{num_batches!r}")
        if num_batches == 1:
            return jax.tree_util.tree_map(lambda a: a[None], self.observe(self.init(key, {})))
        return trajectory(self, key, {}, num_steps=num_batches - 1)[1]
