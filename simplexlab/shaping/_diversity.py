r"""Diversity and exploration metrics (G2 §5 / App. G.2, FG eq. 25, TS App. C.6, PG Table 5).

All functions are pure and jit/vmap; cluster ids use ``−1`` for "not in any cluster / masked".
"""

from __future__ import annotations

from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np

from .._checks import (
    as_int,
    check,
    check_broadcast,
    check_finite,
    check_number,
    check_simplex,
    is_concrete,
    xp,
)
from .._types import BatchScalar, ClusterIds, Mask, Simplex
from ..theory import concentration
from ._advantages import _float

__all__ = [
    "answer_entropy",
    "avg_num_modes",
    "cluster_distribution",
    "distinct_n",
    "effective_num_modes",
    "entropy",
    "normalized_entropy",
    "num_modes",
    "pass_at_k",
    "retained_mass",
    "self_bleu",
    "sequence_entropy",
    "token_entropy",
]


def pass_at_k(n, c, k: int):
    r"""Unbiased pass@k estimator ``1 − C(n−c, k)/C(n, k)`` (FG eq. 25; Chen et al., 2021).

    Computed as ``1 − Π_{j=0}^{k−1} (1 − c/(n−j))`` in log space (``Σ log1p``), stable for
    ``n = 1024, k = 256``; exactly 1 when ``n − c < k``. ``n``, ``c``: integer arrays (number of
    samples and of correct samples per problem, whole numbers, broadcast together); ``k``: static
    int. Average over problems for eq. (25)'s expectation.
    """
    k = as_int(k, "pass@k k")
    if k < 1:
        raise ValueError(f"pass@k needs k >= 1; got k = {k}")
    check_broadcast(n=n, c=c)
    check_number(n, "number of samples n")
    check_number(c, "number of correct samples c")
    n = check_finite(_float(n), "number of samples n")
    c = check_finite(_float(c), "number of correct samples c")
    n, c = jnp.broadcast_arrays(n, c)
    n = check(n, lambda a: a != xp.round(a), "number of samples n must be an integer")
    n = check(n, lambda a: a < k, f"pass@k needs k <= n (k = {k}); number of samples n")
    c = check(c, lambda a: (a < 0) | (a > n) | (a != xp.round(a)),
              "number of correct samples c must be an integer in [0, n]")
    all_fail = all_fail_ratio(n, c, jnp.asarray(k, n.dtype), terms=k)
    return jnp.where(n - c < k, 1.0, 1.0 - all_fail)


def all_fail_ratio(n, c, k, *, terms: int):
    r"""``C(n − c, k) / C(n, k) = Π_{j<k} (1 − c/(n − j))``, summed in log space: the chance
    that ``k`` of ``n`` samples drawn without replacement, ``c`` of them correct, are all
    wrong (0 when ``n − c < k``). ``n``, ``c``, ``k``: float arrays of whole numbers that
    broadcast, ``1 <= k <= n`` (``k = 0``: 1); ``k`` may be traced, at most ``terms`` (static).
    Unchecked: callers check their inputs."""
    n, c, k = jnp.broadcast_arrays(n, c, k)
    j = jnp.arange(terms).astype(n.dtype)
    live = j < k[..., None]
    denom = jnp.where(live, n[..., None] - j, 1.0)
    term = jnp.where(live, jnp.log1p(-jnp.minimum(c[..., None] / denom, 1.0)), 0.0)
    return jnp.exp(jnp.sum(term, -1))


def cluster_distribution(cluster_ids: ClusterIds, num_clusters: int,
                         mask: Mask | None = None) -> Simplex:
    r"""Empirical cluster masses ``ŷ_j = n_j / Σ n`` (G2 §4, Alg. 1 line 3) over ``num_clusters``.

    ``cluster_ids``: int ``(…, G)``, ``−1`` = not clustered (e.g. an incorrect rollout); ids
    ``≥ num_clusters`` are an error. A group with no clustered rollout gives all zeros.
    """
    num_clusters = as_int(num_clusters, "num_clusters", lower=1)
    check_number(cluster_ids, "cluster_ids")
    ids = jnp.asarray(cluster_ids)
    if not jnp.issubdtype(ids.dtype, jnp.integer):
        raise ValueError(f"cluster ids must be integers; got dtype {ids.dtype}")
    ids = check(ids, lambda a: (a < -1) | (a >= num_clusters),
                f"cluster ids must lie in [-1, {num_clusters})")
    member = ids >= 0
    if mask is not None:
        if np.shape(mask) != ids.shape:
            raise ValueError(f"mask must have shape {ids.shape}; got {np.shape(mask)}")
        member = member & jnp.asarray(mask).astype(bool)
    onehot = (ids[..., None] == jnp.arange(num_clusters, dtype=ids.dtype)) & member[..., None]
    counts = jnp.sum(onehot.astype(jnp.result_type(float)), -2)
    tot = jnp.sum(counts, -1, keepdims=True)
    return counts / jnp.maximum(tot, 1.0)


def num_modes(y: Simplex) -> BatchScalar:
    r"""Number of occupied modes ``K = #{j : y_j > 0}`` (G2 App. G.2 ``rarity/avg_K``).

    ``y``: masses or counts over the last axis, finite and ``>= 0``."""
    y = _masses(y, "y")
    return jnp.sum((y > 0).astype(y.dtype), -1)


def _masses(y, name):
    check_number(y, name)
    if np.ndim(y) < 1:
        raise ValueError(f"{name} must have a last axis of modes; got a scalar {y!r}")
    y = check_finite(_float(y), name)
    return check(y, lambda a: a < 0, f"{name} must be non-negative (masses or counts)")


def avg_num_modes(y):
    r"""Avg K: batch mean of :func:`num_modes` over prompts (G2 §5 "Metrics", Table 1)."""
    return jnp.mean(num_modes(y))


def effective_num_modes(y: Simplex) -> BatchScalar:
    r"""``K_eff = 1/L_y = 1/||y||²`` (G2 §5 and App. G.2 ``rarity/avg_effK``); ``y`` must lie
    on the simplex (last axis)."""
    y = check_simplex(y, "y")
    return 1.0 / concentration(jnp.asarray(y))


def entropy(y: Simplex) -> BatchScalar:
    r"""Shannon entropy ``H(y) = −Σ y_j log y_j`` (natural log, ``0 log 0 = 0``), G2 App. G.2."""
    y = check_simplex(y, "y")
    y = jnp.asarray(y)
    pos = y > 0
    return -jnp.sum(jnp.where(pos, y * jnp.log(jnp.where(pos, y, 1.0)), 0.0), -1)


def normalized_entropy(y: Simplex) -> BatchScalar:
    r"""``H̃(y) = H(y)/log K ∈ [0, 1]`` with ``K`` the number of occupied modes (G2 App. G.2).

    ``K ≤ 1`` gives 0 (a single observed mode carries no diversity; the paper leaves 0/0 open).
    """
    H = entropy(y)
    y = jnp.asarray(y)
    K = num_modes(y)
    return jnp.where(K > 1, H / jnp.log(jnp.maximum(K, 2.0)), 0.0)


def _retained_mass(p0, p, mask=None):
    mask = True if mask is None else mask
    zero = jnp.zeros((), p.dtype)
    lost = jnp.sum(jnp.where(mask, jnp.maximum(zero, p0 - p), zero), -1)
    return 1.0 - lost / jnp.sum(jnp.where(mask, p0, zero), -1)


def retained_mass(p0, p, mask=None):
    r"""Retained positive mass ``M_ret = 1 − Σ_{i∈A+} max(0, π_0(i) − π_t(i)) / Σ_{i∈A+} π_0(i)``
    (F-GRPO eq. 26): the share of the initial correct mass that no correct action has lost.

    ``p0``, ``p``: initial and current masses over the last axis (finite, ``>= 0``, same shape);
    ``mask``: bool over the last axis marking the correct set ``A+`` (default: every entry).
    1 when no correct action lost mass; 0 when every one lost all of it."""
    p0 = _masses(p0, "p0 (initial masses)")
    p = _masses(p, "p (current masses)")
    if p0.shape != p.shape:
        raise ValueError(f"p0 {p0.shape} and p {p.shape} must have the same shape")
    if mask is not None:
        mask = jnp.asarray(mask)
        if mask.dtype != jnp.bool_ or mask.shape[-1:] != p.shape[-1:]:
            raise ValueError(f"mask must be a boolean array over the last axis of p "
                             f"({p.shape[-1]} entries); got {mask.dtype} {mask.shape}")
    return _retained_mass(p0, p, mask)


#: The formulas above without argument checks, for simulators that call them inside a compiled
#: step on arrays they made themselves. Served to the other layers by
#: :mod:`simplexlab.shaping.internal`.
unchecked = SimpleNamespace(retained_mass=_retained_mass)


def sequence_entropy(cluster_ids, num_clusters: int, mask=None):
    r"""Sequence-level entropy: ``H(ŷ)`` of the observed good-mode distribution (G2 §5,
    App. G.2). 0 for a group with no clustered rollout."""
    y = cluster_distribution(cluster_ids, num_clusters, mask)
    pos = y > 0
    return -jnp.sum(jnp.where(pos, y * jnp.log(jnp.where(pos, y, 1.0)), 0.0), -1)


def token_entropy(logits, mask=None, *, normalize: bool = False):
    r"""Token-level entropy of a rollout, ``H_tok = (1/T) Σ_t H(π(·|x, a_<t))`` (G2 App. G.2;
    TS App. C.6 averages it over the group as well: take the mean of the result).

    ``logits``: ``(…, T, V)`` next-token logits; ``mask``: bool ``(…, T)``. ``normalize`` divides
    by ``log |V|``.
    """
    check_number(logits, "logits")
    if np.ndim(logits) < 1:
        raise ValueError(f"logits must have shape (..., T, V); got a scalar {logits!r}")
    lg = _float(logits)
    lg = check(lg, lambda a: xp.isnan(a) | (a == xp.inf),
               "logits must not be NaN or +inf (−inf marks an impossible token)")
    lg = check(lg, lambda a: xp.all(a == -xp.inf, axis=-1),
               "logits: every distribution needs at least one finite logit (all −inf)")
    logp = lg - jnp.max(lg, -1, keepdims=True)
    logp = logp - jnp.log(jnp.sum(jnp.exp(logp), -1, keepdims=True))
    p = jnp.exp(logp)
    H = -jnp.sum(jnp.where(p > 0, p * logp, 0.0), -1)
    mk = jnp.ones(H.shape, bool) if mask is None else jnp.asarray(mask).astype(bool)
    if mk.shape != H.shape:
        raise ValueError(f"mask must have shape {H.shape}; got {mk.shape}")
    n = jnp.sum(mk.astype(H.dtype), -1)
    out = jnp.sum(jnp.where(mk, H, 0.0), -1) / jnp.maximum(n, 1.0)
    if normalize:
        out = out / jnp.log(float(lg.shape[-1]))
    return out


def answer_entropy(answers, mask=None):
    r"""Answer-level entropy ``−Σ_j p_j log p_j``, ``p_j = f_j / G`` over the distinct answers
    (TS App. C.6). ``answers``: int ids ``(…, G)``; an "NA" (invalid) output is just one more id.
    Computed without a vocabulary: ``H = −(1/G) Σ_i log(f(a_i)/G)``.
    """
    a = jnp.asarray(answers)
    if not jnp.issubdtype(a.dtype, jnp.integer):
        raise ValueError(f"answers must be integer ids; got dtype {a.dtype}")
    mk = jnp.ones(a.shape, bool) if mask is None else jnp.asarray(mask).astype(bool)
    if mk.shape != a.shape:
        raise ValueError(f"mask must have shape {a.shape}; got {mk.shape}")
    f = jnp.result_type(float)
    mf = mk.astype(f)
    same = ((a[..., :, None] == a[..., None, :]) & mk[..., None, :]).astype(f)
    G = jnp.sum(mf, -1, keepdims=True)
    freq = jnp.sum(same, -1) / jnp.maximum(G, 1.0)
    return -jnp.sum(jnp.where(mk, jnp.log(jnp.where(mk, freq, 1.0)), 0.0), -1) / jnp.maximum(
        G[..., 0], 1.0)


def _ngrams(tokens, mask, n):
    T = tokens.shape[-1]
    L = T - n + 1
    grams = jnp.stack([tokens[..., i:i + L] for i in range(n)], -1)  # (…, L, n)
    valid = jnp.stack([mask[..., i:i + L] for i in range(n)], -1).all(-1)
    return grams, valid


def _seq_inputs(tokens, mask, n, name="n"):
    check_number(tokens, "tokens")
    tok = jnp.asarray(tokens)
    if tok.ndim < 2 or not jnp.issubdtype(tok.dtype, jnp.integer):
        raise ValueError(f"tokens must be integer ids of shape (…, N, T); got {tok.shape}, "
                         f"{tok.dtype}")
    n = as_int(n, f"n-gram order {name}", lower=1)
    if n > tok.shape[-1]:
        raise ValueError(f"n-gram order {name} must lie in [1, T = {tok.shape[-1]}]; "
                         f"got {name} = {n}")
    mk = jnp.ones(tok.shape, bool) if mask is None else jnp.asarray(mask).astype(bool)
    if mk.shape != tok.shape:
        raise ValueError(f"mask must have shape {tok.shape}; got {mk.shape}")
    return tok, mk


def distinct_n(tokens, mask=None, *, n: int = 2):
    r"""Distinct-n (Li et al., 2016; PG Table 5): number of distinct n-grams divided by the total
    number of n-grams, pooled over the ``N`` sequences ``tokens[..., N, T]`` (dataset level).
    0 when there is no n-gram."""
    tok, mk = _seq_inputs(tokens, mask, n)
    n = int(n)
    grams, valid = _ngrams(tok, mk, n)
    grams = grams.reshape(grams.shape[:-3] + (-1, n))
    valid = valid.reshape(valid.shape[:-2] + (-1,))
    eq = jnp.all(grams[..., :, None, :] == grams[..., None, :, :], -1) & valid[..., None, :]
    first = ~jnp.any(jnp.tril(eq, k=-1), -1) & valid  # no equal valid n-gram earlier
    f = jnp.result_type(float)
    total = jnp.sum(valid.astype(f), -1)
    return jnp.sum(first.astype(f), -1) / jnp.maximum(total, 1.0)


def self_bleu(tokens, mask=None, *, max_n: int = 4, smoothing: float = 0.0):
    r"""Self-BLEU (Zhu et al., 2018; PG Table 5): mean over sequences of sentence-BLEU of each
    sequence against all the others as references.

    BLEU-``max_n`` with uniform weights, clipped n-gram precisions (count clipped by the maximum
    count in any single reference), brevity penalty with the closest reference length (ties → the
    shorter). A zero precision gives BLEU 0 unless ``smoothing > 0``, which replaces a zero
    numerator by ``smoothing`` (NLTK ``SmoothingFunction().method1`` with ``epsilon``).
    ``tokens``: ``(…, N, T)`` with ``N ≥ 2``.
    """
    tok, mk = _seq_inputs(tokens, mask, max_n, "max_n")
    max_n = int(max_n)
    N = tok.shape[-2]
    if N < 2:
        raise ValueError(f"Self-BLEU needs at least 2 sequences; got N = {N}")
    check_number(smoothing, "smoothing")
    if is_concrete(smoothing) and not (np.isfinite(smoothing) and smoothing >= 0):
        raise ValueError(f"smoothing must be finite and >= 0; got {smoothing!r}")
    f = jnp.result_type(float)
    lens = jnp.sum(mk.astype(f), -1)  # (…, N)
    logp = 0.0
    for n in range(1, max_n + 1):
        grams, valid = _ngrams(tok, mk, n)  # (…, N, L, n), (…, N, L)
        # eq[i, a, j, b]: n-gram a of sequence i equals n-gram b of sequence j
        eq = jnp.all(grams[..., :, :, None, None, :] == grams[..., None, None, :, :, :], -1)
        eq = eq & valid[..., :, :, None, None] & valid[..., None, None, :, :]
        cnt = jnp.sum(eq.astype(f), -1)  # (…, N, L, N): count of gram (i,a) in sequence j
        own = jnp.diagonal(cnt, axis1=-3, axis2=-1)  # (…, L, N) -> count in itself
        own = jnp.moveaxis(own, -1, -2)  # (…, N, L)
        other = ~jnp.eye(N, dtype=bool)
        ref = jnp.max(jnp.where(other[..., :, None, :], cnt, 0.0), -1)  # (…, N, L)
        clipped = jnp.where(valid, jnp.minimum(own, ref) / jnp.maximum(own, 1.0), 0.0)
        num = jnp.sum(clipped, -1)
        den = jnp.sum(valid.astype(f), -1)
        num = jnp.where((num == 0) & (den > 0), smoothing, num)
        pn = jnp.where(den > 0, num / jnp.maximum(den, 1.0), 0.0)
        logp = logp + jnp.log(pn) / max_n
    # brevity penalty: closest reference length (ties -> shorter)
    d = jnp.abs(lens[..., None, :] - lens[..., :, None])  # (…, i, j)
    scale = 4.0 * (tok.shape[-1] + 1)
    key = jnp.where(~jnp.eye(N, dtype=bool), d * scale + lens[..., None, :], jnp.inf)
    jbest = jnp.argmin(key, -1)
    r = jnp.take_along_axis(lens, jbest, -1)
    c = lens
    bp = jnp.where(c < r, jnp.exp(1.0 - r / jnp.maximum(c, 1.0)), 1.0)
    bleu = bp * jnp.exp(logp)
    return jnp.mean(bleu, -1)
