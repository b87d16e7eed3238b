r"""Exact multinomial counts from a softmax over many categories, in O(A + n log A).

The sampler every simulator of this layer shares: counter-based hashed uniforms keyed by one
``jax.random.bits`` draw (:func:`uniforms`) and inverse CDF, by one of two exact methods chosen
for the machine (:func:`weighted_counts`, ``method="auto"``): on a CPU the descent of a block
tree of *sequential* prefix sums (``"tree"``: cache-friendly, its loops cost nothing there); on
an accelerator the same tree built and descended in parallel (``"parallel"``: prefix sums by a
parallel scan made flat over zero mass by a running maximum, the binary searches unrolled:
O(log A) dependent vectorized operations and no loop, so a step is a few kernels instead of a
kernel per loop iteration). Both draw action ``i`` with
probability ``π_i`` up to the rounding of their prefix sums, never a zero-probability action,
and consume the same uniforms. :func:`sample_counts` is the public entry point.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._checks import check, check_number, check_real, is_int, xp

__all__ = ["counts_from_weights", "sample_counts", "uniforms", "unnormalized", "weighted_counts"]




def sample_counts(key, logits, n: int, method: str = "auto"):
    r"""Counts ``c`` of ``n`` i.i.d. draws from ``softmax(logits)`` (last axis of length ``A``):
    ``c ~ Multinomial(n, softmax(logits))`` exactly, in O(A + n log A) work.

    Inverse CDF on a block tree (no global ``cumsum``): the unnormalized weights
    ``e = exp(z − max z)`` are split into 64 strided blocks, blocks of blocks, ...; every level
    keeps *sequential* prefix sums within each block (nondecreasing, exactly flat over zero-mass
    entries). A draw takes one uniform ``u ∈ [0, Σe)``, picks a block at the top level by inverse
    CDF, then an entry within it with the residual ``u``, and so on down (⌈log₆₄ A⌉ levels of 6
    branch-free binary-search steps, O(n log A); O(A) to build the tree); the probability of
    action ``i`` is the product of its within-block conditionals, i.e. ``π_i`` up to the
    rounding of the prefix sums, and zero-probability actions are never drawn. A scatter-add
    (``bincount``, O(n + A)) gives the counts. Inverse CDF is chosen over binomial splitting
    because it is exact for any ``n`` with no sequential chain of ``A`` binomial draws.

    The ``n`` uniforms come from a counter-based hash (SplitMix64's finalizer in float64,
    53 bits per uniform; a 32-bit two-round hash in float32) keyed by bits drawn from ``key``
    with :func:`jax.random.bits`: ~20x cheaper on CPU than ``n`` threefry uniforms, and
    deterministic given ``key``. Draws are independent given ``key``; ``n`` is static.
    ``logits`` may hold ``−inf`` (actions never drawn) but no NaN or ``+inf``, and not only
    ``−inf``: a ``ValueError`` eagerly, a run-time error under ``jit``.
    Precision: an action's effective probability is ``π_i`` up to the rounding of the prefix
    sums (≈ ulp(1)/π_i relative: ~1e-3 for the App. J leaf ``6.3e-5`` in float32, ~1e-12 in
    float64); enable x64 for quantitative runs.

    ``method``: ``"auto"`` (default: ``"tree"`` on a CPU, ``"parallel"`` on GPU / TPU, chosen
    when the program is lowered for its platform), ``"tree"`` (above), ``"parallel"`` (the same
    tree, its prefix sums by a parallel scan made exactly flat over zero-mass entries by a
    running maximum, its binary searches unrolled: sequential depth O(log A), no loop, for
    accelerators) or ``"cdf"`` (a plain global ``cumsum`` + ``searchsorted``, a reference). All
    consume the same uniforms; the tree and the parallel method give the same counts up to the
    rounding of their prefix sums (identical in float64 in the tests; in float32 ~0.2% of the
    draws at A = 128,000 fall on a neighbouring action; ``Σe`` may differ in its last bits),
    with the same precision.
    """
    _check_method(method)
    logits = _draw_arguments(key, logits, n, "logits")
    logits = check(logits, lambda a: xp.isnan(a) | (a == xp.inf),
                   "logits must not be NaN or +inf (−inf marks a zero-probability action)")
    logits = check(logits, lambda a: xp.all(a == -xp.inf),
                   "logits: at least one action needs a finite logit (all are −inf)")
    return weighted_counts(key, unnormalized(logits), n, method)


def unnormalized(z):
    """Unnormalized softmax weights ``exp(z − max z)`` (one definition shared by
    :func:`sample_counts` and :func:`step`, so both draw the same counts from the same key)."""
    return jnp.exp(z - jax.lax.stop_gradient(jnp.max(z)))


_BLOCK = 64  # fan-out of the block tree of the sampler (6 branch-free search steps per level)
_LOG2_BLOCK = 6
_MIX64 = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)  # SplitMix64 constants


def _mix32(x):
    """A 32-bit integer hash (two xor-shift-multiply rounds, "lowbias32")."""
    x = (x ^ (x >> 16)) * jnp.uint32(0x7FEB352D)
    x = (x ^ (x >> 15)) * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def uniforms(key, n: int, dtype):
    """``n`` uniforms on ``[0, 1)`` of ``dtype`` from a counter-based hash keyed by ``key``.

    float64: ``x_i = seed + i·φ`` (φ the 64-bit golden ratio, SplitMix64's increment) through
    SplitMix64's finalizer, top 53 bits; float32: a 32-bit counter through two rounds of
    :func:`_mix32` keyed by two 32-bit words, top 24 bits. The seed words come from
    ``jax.random.bits(key)``, so distinct keys give independent-looking streams."""
    dt = jnp.dtype(dtype)
    if dt == jnp.dtype(jnp.float64):
        return splitmix64_uniforms(jax.random.bits(key, (), jnp.uint64),
                                   jnp.arange(1, n + 1, dtype=jnp.uint64))
    seed = jax.random.bits(key, (2,), jnp.uint32)
    return mix32_uniforms(_mix32(jnp.arange(n, dtype=jnp.uint32) + seed[0]) ^ seed[1], dt)


def splitmix64_uniforms(seed, counter):
    """float64 uniforms on ``[0, 1)``: ``seed + counter·φ`` (uint64; φ the 64-bit golden ratio,
    SplitMix64's increment) through SplitMix64's finalizer, top 53 bits."""
    g, m1, m2 = (jnp.uint64(c) for c in _MIX64)
    x = seed + counter * g
    x = (x ^ (x >> jnp.uint64(30))) * m1
    x = (x ^ (x >> jnp.uint64(27))) * m2
    x = x ^ (x >> jnp.uint64(31))
    return (x >> jnp.uint64(11)).astype(jnp.float64) * jnp.asarray(2.0 ** -53, jnp.float64)


def mix32_uniforms(x, dtype):
    """Uniforms of ``dtype`` on ``[0, 1)``: the uint32 words ``x`` through one more round of
    :func:`_mix32`, top 24 bits."""
    dt = jnp.dtype(dtype)
    return (_mix32(x) >> jnp.uint32(8)).astype(dt) * jnp.asarray(2.0 ** -24, dt)


def uniforms_below(key, n: int, total):
    """``n`` uniforms on ``[0, total)``: :func:`_uniforms` scaled by ``total`` and clamped below
    it (the product can round up to ``total``)."""
    return jnp.minimum(uniforms(key, n, total.dtype) * total,
                       jnp.nextafter(total, jnp.zeros((), total.dtype)))


def _seq_prefix(x):
    """Prefix sums of ``x`` ``(C, R)`` along axis 0, *sequential* in each column
    (``out[c] = fl(out[c-1] + x[c])``): nondecreasing for ``x >= 0`` and exactly flat over zero
    entries, so a zero-probability entry never owns a non-empty interval."""
    def add(carry, row):
        carry = carry + row
        return carry, carry

    return jax.lax.scan(add, jnp.zeros_like(x[0]), x)[1]


def _par_prefix(x):
    """Prefix sums of ``x >= 0`` ``(C, R)`` along axis 0 with sequential depth O(log C): a
    parallel ``cumsum`` (its rounding is not that of a sequential sum, so it may rise over a zero
    entry), made exactly flat over zero entries and nondecreasing by a running maximum over the
    positive entries (``out[c] = max_{c' <= c, x[c'] > 0} s[c']``, 0 before the first), so a
    zero-probability entry never owns a non-empty interval either."""
    s = jnp.cumsum(x, axis=0)
    return jax.lax.cummax(jnp.where(x > 0, s, jnp.zeros((), x.dtype)), axis=0)


def _block_tree(e, parallel: bool = False):
    """Levels of the block tree of the weights ``e`` ``(A,)``, bottom first: level ``l`` is a
    ``(64, R)`` array of sequential prefix sums; entry ``c * R + r`` of a level's input belongs
    to block ``r`` (strided blocks keep every scan contiguous); the input of level ``l + 1`` is
    the block totals ``levels[l][-1]`` (exactly the last prefix sum). The top level has
    ``R = 1``. Inputs are zero-padded to a multiple of 64: a padded entry has zero mass and a
    prefix equal to its block's total, so it is never chosen."""
    levels = []
    x = e
    while True:
        size = x.shape[0]
        r = -(-size // _BLOCK)
        local = (_par_prefix if parallel else _seq_prefix)(
            jnp.pad(x, (0, _BLOCK * r - size)).reshape(_BLOCK, r))
        levels.append(local)
        if r == 1:
            return levels
        x = local[-1]


def _tree_draws(key, e, n: int, parallel: bool = False):
    """``n`` i.i.d. indices drawn from ``e / Σe`` by descending the block tree: one uniform
    ``u ∈ [0, total)`` per draw; at each level the entry ``c`` of the current block with
    ``prefix[c-1] <= u < prefix[c]`` is found by a branch-free binary search (``c`` = the number
    of the block's prefix sums ``<= u``; six steps over 64 entries; in the top block, the one
    block every draw starts from, that number is counted directly) and ``u`` becomes the residual
    ``u − prefix[c-1]`` (clamped below the chosen entry's mass, which is exactly the next level's
    block total). Each level is inverse-CDF sampling within a block, so the draw is action ``i``
    with probability ``π_i`` up to the rounding of the prefix sums. Returns the indices and the
    total ``Σe`` (the top of the tree).

    ``parallel``: the ``"parallel"`` method: the same tree with its prefix sums by
    :func:`_par_prefix` (depth O(log 64) per level instead of 64 sequential additions) and the
    six search steps unrolled, so the whole descent is O(log A) dependent vectorized operations
    and no loop (on an accelerator, a loop iteration is a kernel launch). Same uniforms, same
    order of the actions: the same draws up to the rounding of the prefix sums."""
    levels = _block_tree(e, parallel)
    dt = e.dtype
    zero = jnp.zeros((), dt)
    total = levels[-1][-1, 0]
    u = uniforms_below(key, n, total)
    r = jnp.zeros((n,), jnp.int32)
    top_size = e.shape[0]  # entries of the top block that hold mass (the rest are padding)
    for _ in levels[1:]:
        top_size = -(-top_size // _BLOCK)
    for lvl in range(len(levels) - 1, -1, -1):
        flat = levels[lvl].reshape(-1)
        r_len = levels[lvl].shape[1]

        def get(c, flat=flat, r_len=r_len, r=r):
            return flat.at[c * r_len + r].get(mode="promise_in_bounds")

        def search(i, pos, get=get, u=u):  # invariant: the first `pos` prefix sums are <= u
            s = jnp.right_shift(jnp.int32(_BLOCK // 2), i)
            return jnp.where(get(pos + (s - 1)) <= u, pos + s, pos)

        if r_len == 1:
            # the top block, the same for every draw: the search's answer, the number of its
            # prefix sums <= u, counted directly (no dependent gathers); its padding entries
            # hold the total, > u, and are left out
            pos = jnp.sum(levels[lvl][:top_size, 0] <= u[:, None], axis=1, dtype=jnp.int32)
        else:
            # a rolled loop on CPU: XLA compiles the six dependent gathers faster than unrolled
            pos = jax.lax.fori_loop(0, _LOG2_BLOCK, search, jnp.zeros((n,), jnp.int32),
                                    unroll=parallel)
        prev = jnp.where(pos > 0, get(jnp.maximum(pos, 1) - 1), zero)
        r = pos * r_len + r
        if lvl > 0:
            mass = levels[lvl - 1][-1].at[r].get(mode="promise_in_bounds")
            u = jnp.minimum(u - prev, jnp.nextafter(mass, zero))
    return r, total


#: the sampling methods (:func:`sample_counts`)
METHODS = ("auto", "tree", "parallel", "cdf")


def _check_method(method):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")


def counts_from_weights(key, e, n: int, method: str = "auto", return_total: bool = False,
                        num_valid=None):
    """:func:`sample_counts` from unnormalized weights ``e`` (the simulator step computes
    them once and shares them with the gradient). ``method``: as in :func:`sample_counts`
    (``"auto"``, ``"tree"``, ``"parallel"``, ``"cdf"``); all are exact inverse-CDF samplers on
    the same uniforms. ``return_total``: also return ``Σe`` as the sampler summed it (the step
    normalizes with it: no extra pass over ``e``). ``num_valid``: an integer ``<= n`` (may be
    traced): only the first ``num_valid`` of the ``n`` draws are counted (a group padded to the
    static bound ``n``; the counted draws are those of ``n = num_valid``, whatever ``n`` is).

    ``e`` has shape ``(A,)``, every weight finite and ``>= 0``, at least one ``> 0``: a
    ``ValueError`` eagerly, a run-time error (``eqx.error_if``) under ``jit``."""
    _check_method(method)
    e = _draw_arguments(key, e, n, "weights e")
    e = check(e, lambda a: ~(xp.isfinite(a) & (a >= 0)), "weights e must be finite and >= 0")
    e = check(e, lambda a: ~xp.any(a > 0), "weights e: at least one weight must be > 0")
    if num_valid is not None:
        # a count: never a bool, never a fraction (2.5 would be cut to 2 draws silently)
        check_real(num_valid, "num_valid")
        num_valid = check(jnp.asarray(num_valid),
                          lambda a: (a < 0) | (a > n) | (a != xp.round(a)),
                          f"num_valid must be a whole number in [0, n = {n}]")
    return weighted_counts(key, e, n, method, return_total, num_valid)


def _draw_arguments(key, x, n, name: str):
    """The checks every sampler entry point shares: ``n`` a static integer ``>= 1``, ``key`` a
    JAX PRNG key, ``x`` (``name``) a real ``(A,)`` array, returned as a floating array."""
    if not is_int(n) or n < 1:
        raise ValueError(f"number of draws n must be an integer >= 1; got {n!r}")
    if not isinstance(key, jax.Array):
        raise ValueError(f"key must be a JAX PRNG key (jax.random.key(seed)); got {key!r}")
    check_number(x, name)
    x = jnp.asarray(x)
    if x.ndim != 1 or x.shape[0] < 1:
        raise ValueError(f"{name} must have shape (A,); got {x.shape}")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    return x


def _draws(key, e, n: int, method: str):
    if method == "tree":
        return _tree_draws(key, e, n)
    if method == "parallel":
        return _tree_draws(key, e, n, parallel=True)
    cdf = jnp.cumsum(e)  # "cdf"
    total = cdf[-1]
    return jnp.searchsorted(cdf, uniforms_below(key, n, total), side="right"), total


def weighted_counts(key, e, n: int, method: str = "auto", return_total: bool = False,
                    num_valid=None):
    """:func:`counts_from_weights` without its checks, for weights valid by construction (the
    categorical step's ``exp(z − max z)``, :func:`sample_counts` after checking its logits).
    ``method="auto"``: ``"tree"`` when the program is lowered for a CPU, ``"parallel"``
    otherwise (:func:`jax.lax.platform_dependent`)."""
    _check_method(method)
    if method == "auto":
        idx, total = jax.lax.platform_dependent(
            key, e, cpu=lambda k, x: _draws(k, x, n, "tree"),
            default=lambda k, x: _draws(k, x, n, "parallel"))
    else:
        idx, total = _draws(key, e, n, method)
    a = e.shape[0]
    idx = jnp.clip(idx, 0, a - 1)
    if num_valid is not None:  # draws past num_valid land out of bounds: dropped
        idx = jnp.where(jnp.arange(n, dtype=jnp.int32) < jnp.asarray(num_valid, jnp.int32),
                        idx, a)
    counts = jnp.zeros((a,), jnp.int32).at[idx].add(1, mode="drop")
    return (counts, total) if return_total else counts
