r"""Mode discovery for free text, as G²RPO does it (§5 "Mode discovery", App. G.1 "Clustering
pipeline"): each prompt's rollouts are embedded (:mod:`simplexlab.llm._embed`: all-MiniLM-L6-v2,
offline) and clustered per prompt; each cluster is a reasoning mode and the cluster frequencies
estimate ŷ. Alg. 1 lines 3–4 and Listing 1 (b)–(c) cluster the *correct* rollouts of a prompt,
and (optionally, separately) the incorrect ones.

- :func:`discover_modes` -- clustering of the embeddings per prompt (and per correctness when
  ``rewards`` is given): ``method="agglomerative"`` (default) or ``"dbscan"`` (the paper's
  algorithm), returning integer mode ids that the bridge takes as ``modes``
  (:func:`simplexlab.llm.advantages`) together with the ``num_clusters`` it needs.
- :func:`mode_stats` -- per prompt ŷ, K̂ and L_y over the correct completions, computed by the
  package's diversity metrics (:func:`simplexlab.shaping.cluster_distribution`,
  :func:`~simplexlab.shaping.num_modes`, :func:`~simplexlab.theory.concentration`).

**The default** (chosen on the labelled benchmark ``tests/data/modes_benchmark.jsonl`` by
``benchmarks/modes_compare.py``; what was tried and how each scored: NOTES.md, "Mode discovery: how
the default was chosen"; the table: BENCHMARKS.md): word-piece vectors pooled with the
distinctiveness weights ``1 − df/n`` within the group
(:func:`~simplexlab.llm._embed.distinct_weights`), the group's mean embedding subtracted and
renormalised (``center``), a distance that mixes a token-matching F1 of the distinctive word pieces
(:func:`token_f1`, double-centred over the group, ``token_weight = 0.7``) with the centred cosine
distance, average-linkage agglomerative clustering cut at ``threshold = 0.99``, near-duplicates
(cosine distance ≤ ``merge = 0.05`` before centring) always together, and the first 5 of the model's
6 layers for long completions (``layers="auto"``). Held-out adjusted Rand index ≈ 0.69 on short
texts and ≈ 0.88 on long ones. Limits: centring needs a group to hold more than one method (a group
of one method's paraphrases is split), two completions that differ are always two modes, and the
distinct pooling makes a completion's vector depend on the rest of its group.

**DBSCAN's settings** (``method="dbscan"``). The paper names the algorithm and the library only:
§5, App. G.1 and Listing 1 (``labels = dbscan([E[i] for i in C])``) give no ``eps``,
``min_samples`` or metric, and say nothing about DBSCAN's noise label. The defaults are choices,
each with its reason:

* ``metric="euclidean"``, ``eps=0.5``: scikit-learn's own defaults (what a bare ``DBSCAN()``
  runs, the most literal reading of Listing 1). The embeddings are unit vectors, so this is the
  cosine distance ``1 − cos = ‖a − b‖²/2 ≤ 0.125``.
* ``min_samples=2`` (scikit-learn's default is 5), with noise points made singleton modes: the
  paper's modes can be as small as one rollout (App. F Table 5; App. B Remark B.10: ``ŷ_j ∈ [1/G,
  1]``). With 2, DBSCAN's noise is exactly the points with no neighbour within ``eps``.
* ``noise="singleton"``: every correct rollout belongs to some mode (Alg. 1 line 7, Listing 1 (g),
  Remark B.10), so a rollout DBSCAN calls noise is a mode of its own. ``"minus_one"`` keeps
  scikit-learn's ``−1`` (the metrics skip such rollouts; the bridge refuses them); ``"nearest"``
  puts a noise point in the cluster of its nearest clustered point.

Imports are lazy: importing :mod:`simplexlab.llm` imports neither scikit-learn nor
``transformers``; the first call loads them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Sequence
from typing import NamedTuple

import numpy as np

from ._embed import (
    _check_pooling,
    _check_texts,
    _embed,
    _pos_int,
)

__all__ = ["DISTANCES", "METHODS", "NOISE", "Modes", "discover_modes", "rollout_modes",
           "token_f1"]

#: DBSCAN defaults (module docstring: the paper gives none)
EPS, MIN_SAMPLES, METRIC = 0.5, 2, "euclidean"
#: what :func:`discover_modes` does with DBSCAN's noise points
NOISE = ("singleton", "minus_one", "nearest")
#: the clustering methods of :func:`discover_modes` (the first is the default)
METHODS = ("agglomerative", "dbscan")
#: agglomerative defaults (chosen on the development problems of the benchmark)
THRESHOLD, LINKAGE, MERGE, MASK_NUMBERS, POOLING = 0.95, "average", 0.05, False, "distinct"
LAYERS = "auto"
#: the distances of :func:`discover_modes`' agglomerative clustering (the first is the default):
#: the sentence distance mixed with a token-matching one (:func:`token_f1`), or the sentence
#: distance alone (the default before, with its own threshold)
DISTANCES = ("tokens", "sentence")
DISTANCE, TOKEN_WEIGHT = "tokens", 0.7
#: the default ``threshold`` of each distance (calibrated on the benchmark's development problems)
THRESHOLDS = {"tokens": 0.99, "sentence": THRESHOLD}
LINKAGES = ("average", "complete", "single")
#: the most pairs of completions :func:`discover_modes` clusters together (its ``max_pairs``):
#: one set of ``n`` completions costs ``n²`` distances, several ``(n, n)`` float64 matrices
#: (8192² is ~0.5 GB each); a group of 20,000 (3.2 GB each, and scikit-learn's own copies) ended
#: the process instead of raising
MAX_PAIRS = 8192**2
_NUMBER = re.compile(r"\d+(?:[.,/]\d+)*")


class Modes(NamedTuple):
    """Mode ids of :func:`discover_modes` (unpacks as ``ids, num_clusters``)."""

    #: int32 mode id of each completion, the shape of the input (``(n,)`` or ``(P, G)``);
    #: numbered ``0, 1, ...`` by first appearance within each group (and correctness class)
    ids: np.ndarray
    #: the bridge's ``num_clusters``: the most modes of any group (and class), at least 1
    num_clusters: int


# ---- groups ----------------------------------------------------------------------------------

def _layout(completions, groups):
    """``(flat texts, shape of the ids, list of index arrays, one per group, group keys)``."""
    if isinstance(completions, str) or not isinstance(completions, Sequence):
        raise ValueError(f"completions must be a list of strings or a (P, G) nested list; got "
                         f"{type(completions).__name__}")
    if len(completions) == 0:
        raise ValueError("completions is empty; nothing to cluster")
    for i, c in enumerate(completions):  # bytes are a Sequence too: not a group of texts
        if isinstance(c, bytes | bytearray):
            raise ValueError(f"completions[{i}] is {type(c).__name__} ({bytes(c)[:20]!r}), not a "
                             "string: decode the completions first (e.g. "
                             "tokenizer.decode or b.decode('utf-8'))")
    nested = [not isinstance(c, str) and isinstance(c, Sequence) for c in completions]
    if any(nested):
        if not all(nested):
            i = nested.index(False)
            raise ValueError(f"completions mixes lists and strings (completions[{i}] is a "
                             f"{type(completions[i]).__name__}); pass a flat list of strings or "
                             f"a (P, G) nested list")
        if groups is not None:
            raise ValueError("groups must be None for a (P, G) nested list (each inner list is "
                             "a group)")
        sizes = {len(c) for c in completions}
        if len(sizes) != 1 or 0 in sizes:
            raise ValueError(f"a nested list of completions must be rectangular (P, G) with "
                             f"G >= 1; got inner lengths {sorted(sizes)} (for ragged groups pass "
                             f"a flat list and groups=)")
        P, G = len(completions), sizes.pop()
        flat = [t for row in completions for t in row]
        _check_texts(flat, "completions (flattened)")
        return flat, (P, G), [np.arange(p * G, (p + 1) * G) for p in range(P)], None
    flat = _check_texts(completions, "completions")
    if groups is None:
        return flat, (len(flat),), [np.arange(len(flat))], None
    if isinstance(groups, str) or not isinstance(groups, Sequence | np.ndarray) or \
            len(groups) != len(flat):
        raise ValueError(f"groups must be a list of {len(flat)} group ids (one per completion); "
                         f"got {type(groups).__name__} of length "
                         f"{len(groups) if hasattr(groups, '__len__') else '?'}")
    where: dict[Hashable, list[int]] = {}
    for i, g in enumerate(list(groups)):
        if isinstance(g, np.ndarray) and g.ndim == 0:
            g = g.item()
        if not isinstance(g, Hashable) or isinstance(g, np.ndarray):
            raise ValueError(f"groups[{i}] = {g!r} is a {type(g).__name__}, not a group id: "
                             "one hashable id per completion (an int or a string, e.g. the "
                             "prompt's index), not a list of them")
        where.setdefault(g, []).append(i)
    return flat, (len(flat),), [np.asarray(v) for v in where.values()], list(where)


def _rewards(rewards, shape, what="rewards") -> np.ndarray | None:
    if rewards is None:
        return None
    r = np.asarray(rewards.detach().cpu() if hasattr(rewards, "detach") else rewards)
    if r.shape != shape:
        raise ValueError(f"{what} must have the shape of the completions {shape}; got {r.shape}")
    if r.dtype != bool and not (np.issubdtype(r.dtype, np.number) and np.isin(r, (0, 1)).all()):
        bad = r.ravel()[0] if r.dtype.kind not in "biuf" else \
            r[~np.isin(r, (0, 1))].ravel()[0]
        raise ValueError(f"{what} must be booleans or 0/1 (correct = 1); got "
                         f"{getattr(bad, 'item', lambda: bad)()!r}")
    return r.astype(bool).ravel()


# ---- clustering ------------------------------------------------------------------------------

def _finite_number(v) -> bool:
    """``v`` is a finite real scalar (a Python or NumPy number, not a bool)."""
    return (not isinstance(v, bool) and isinstance(v, int | float | np.integer | np.floating)
            and math.isfinite(v))


def _check_params(eps, min_samples, metric, noise):
    if not _finite_number(eps) or eps <= 0:
        raise ValueError(f"eps must be a finite number > 0; got {eps!r}")
    _pos_int(min_samples, "min_samples")
    if noise not in NOISE:
        raise ValueError(f"noise must be one of {NOISE}; got {noise!r}")
    if isinstance(metric, str):
        from sklearn.neighbors import VALID_METRICS

        valid = sorted(set(VALID_METRICS["brute"]) | set(VALID_METRICS["ball_tree"]))
        if metric not in valid or metric == "precomputed":
            raise ValueError(f"metric {metric!r} is not a scikit-learn metric for DBSCAN on "
                             f"embeddings; choose from {valid}")
    elif not callable(metric):
        raise ValueError(f"metric must be a scikit-learn metric name or a callable; got "
                         f"{metric!r}")


def _cluster(X: np.ndarray, eps, min_samples, metric, noise) -> np.ndarray:
    """DBSCAN labels of the rows of ``X`` after the noise rule, numbered by first appearance.

    The distances are computed first (``pairwise_distances``, NumPy/BLAS for the common metrics)
    and DBSCAN runs on them (``metric="precomputed"``): for a group of 16 that is ~2 ms, against
    ~30–50 ms for DBSCAN's own radius search, whose thread pool dominates at this size."""
    from sklearn.cluster import DBSCAN
    from sklearn.metrics import pairwise_distances

    D = pairwise_distances(X, metric=metric)
    lab = DBSCAN(eps=eps, min_samples=min_samples, metric="precomputed").fit_predict(D)
    is_noise = lab < 0
    if is_noise.any() and noise == "nearest" and not is_noise.all():
        near = np.argmin(D[np.ix_(is_noise, ~is_noise)], axis=1)
        lab[is_noise] = lab[~is_noise][near]
    elif is_noise.any() and noise != "minus_one":  # singleton (or nearest with no cluster)
        lab[is_noise] = lab.max(initial=-1) + 1 + np.arange(is_noise.sum())
    out = np.full(len(lab), -1, np.int32)
    seen: dict[int, int] = {}
    for i, v in enumerate(lab):
        if v >= 0:
            out[i] = seen.setdefault(int(v), len(seen))
    return out


def _check_method(method, threshold, linkage, center, merge, mask_numbers, quantize=False,
                  pooling=POOLING, layers=LAYERS, token_weight=TOKEN_WEIGHT):
    """The clustering options of :func:`discover_modes` (``distance`` is checked there, where
    it picks the default threshold)."""
    _check_pooling(pooling, layers)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    if not _finite_number(token_weight) or not 0 <= token_weight <= 1:
        raise ValueError(f"token_weight must be a number in [0, 1]; got {token_weight!r}")
    for name, v, lo, hi in (("threshold", threshold, 0.0, 2.0), ("merge", merge, 0.0, 2.0)):
        if not _finite_number(v) or not lo < v <= hi and not (name == "merge" and v == 0):
            raise ValueError(f"{name} must be a cosine distance in "
                             f"{'[' if name == 'merge' else '('}{lo:g}, {hi:g}]; got {v!r}")
    if linkage not in LINKAGES:
        raise ValueError(f"linkage must be one of {LINKAGES}; got {linkage!r}")
    for name, v in (("center", center), ("mask_numbers", mask_numbers), ("quantize", quantize)):
        if not isinstance(v, bool | np.bool_):
            raise ValueError(f"{name} must be True or False; got {v!r}")


def token_f1(toks: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Pairwise token-matching similarity of a group's texts (``distance="tokens"``
    of :func:`discover_modes`): a BERTScore F1 (Zhang et al. 2020, "BERTScore", eq. 1 with
    importance weights) over the distinctive word pieces.

    ``toks[i] = (U_i, w_i)``: the unit vectors ``U_i`` (``(m_i, d)``) of text ``i``'s word
    pieces and their weights ``w_i > 0`` (``m_i >= 1``; in :func:`discover_modes` the pieces
    whose :func:`distinct_weights` within the group is > 0). Precision of ``a`` against ``b``:
    ``P_ab = Σ_k w_ak max_l U_ak·U_bl / Σ_k w_ak`` (each piece of ``a`` greedily matched to its
    most similar piece of ``b``), clipped at 0; ``F_ab = 2 P_ab P_ba / (P_ab + P_ba)`` (0 where
    both are 0), ``F_aa = 1``. Returns the symmetric float64 ``(n, n)`` matrix ``F``."""
    n = len(toks)
    if n == 0:
        raise ValueError("token_f1 needs at least one text")
    U = np.concatenate([np.asarray(u, np.float32) for u, _ in toks])
    w = np.concatenate([np.asarray(v, np.float64) for _, v in toks])
    sizes = np.array([len(v) for _, v in toks])
    if (sizes < 1).any() or (w <= 0).any() or len(U) != len(w):
        raise ValueError("token_f1 needs every text with >= 1 word piece, weights > 0 and one "
                         "weight per vector")
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    best = np.maximum.reduceat((U @ U.T).astype(np.float64), start, axis=1)  # (pieces, n)
    P = np.add.reduceat(w[:, None] * best, start, axis=0) / np.add.reduceat(w, start)[:, None]
    P = np.maximum(P, 0.0)
    R = P.T
    S = P + R
    F = np.divide(2 * P * R, S, out=np.zeros_like(S), where=S > 1e-12)
    np.fill_diagonal(F, 1.0)
    return F


def _centred_cosine(K: np.ndarray) -> np.ndarray:
    """``1 − cos`` of the group-centred feature vectors of the similarity (kernel) matrix ``K``:
    ``Kc = J K J`` (``J = I − 11ᵀ/n``), distance ``1 − Kc_ab / sqrt(Kc_aa Kc_bb)`` in [0, 2]
    (for ``K = X Xᵀ`` exactly the cosine distance of the centred rows of ``X``)."""
    n = len(K)
    J = np.eye(n) - 1.0 / n
    Kc = J @ K @ J
    d = np.sqrt(np.clip(np.diag(Kc), 1e-12, None))
    return np.clip(1.0 - Kc / np.outer(d, d), 0.0, 2.0)


def _agglomerate(X: np.ndarray, threshold, linkage, center, merge, toks=None,
                 token_weight: float = 0.0) -> np.ndarray:
    """Agglomerative labels of the rows of ``X`` (unit vectors), numbered by first appearance.

    Cosine distances ``1 − cos`` of the group-centred rows (``center``: the group's mean
    embedding -- the problem's shared words -- subtracted, rows renormalised); with ``toks``
    (one ``(U, w)`` per row, :func:`token_f1`) the distance is ``(1 − token_weight)`` times that
    plus ``token_weight`` times the token distance (the centred cosine distance of the
    :func:`token_f1` kernel, ``1 − F`` without ``center``); rows within ``merge`` of each other
    *before* centring (sentence cosine) are at distance 0 (near-duplicates share a mode whatever
    the rest of the group looks like); then scikit-learn's agglomerative clustering with
    ``linkage`` cut at ``threshold``."""
    n = len(X)
    if n == 1:
        return np.zeros(1, np.int32)
    X = X.astype(np.float64)
    raw = np.clip(1.0 - X @ X.T, 0.0, 2.0)
    if center:
        Y = X - X.mean(0)
        norm = np.linalg.norm(Y, axis=1, keepdims=True)
        Y = np.divide(Y, norm, out=np.zeros_like(Y), where=norm > 1e-6)
        D = np.clip(1.0 - Y @ Y.T, 0.0, 2.0)
    else:
        D = raw.copy()
    if toks is not None and token_weight > 0:
        F = token_f1(toks)
        T = _centred_cosine(F) if center else np.clip(1.0 - F, 0.0, 2.0)
        D = (1.0 - token_weight) * D + token_weight * T
    D[raw <= merge] = 0.0
    np.fill_diagonal(D, 0.0)
    if not (D > threshold).any():
        return np.zeros(n, np.int32)
    from sklearn.cluster import AgglomerativeClustering

    lab = AgglomerativeClustering(n_clusters=None, distance_threshold=threshold,
                                  linkage=linkage, metric="precomputed").fit_predict(D)
    out = np.empty(n, np.int32)
    seen: dict[int, int] = {}
    for i, v in enumerate(lab):
        out[i] = seen.setdefault(int(v), len(seen))
    return out


def discover_modes(completions, *, groups=None, rewards=None, method: str = "agglomerative",
                   threshold: float | None = None, linkage: str = LINKAGE, center: bool = True,
                   merge: float = MERGE, mask_numbers: bool = MASK_NUMBERS, eps: float = EPS,
                   min_samples: int = MIN_SAMPLES, metric=METRIC, noise: str = "singleton",
                   embeddings=None, batch_size: int = 32, device="cpu",
                   quantize: bool = False, pooling: str = POOLING,
                   layers: int | str = LAYERS, distance: str | None = None,
                   token_weight: float = TOKEN_WEIGHT, max_pairs: int = MAX_PAIRS) -> Modes:
    """Reasoning modes of free-text completions: all-MiniLM-L6-v2 embeddings clustered within
    each prompt's group (G2 §5 "Mode discovery", App. G.1; Alg. 1 lines 3–4).

    ``completions``: a flat list of ``n`` strings -- one group, or with ``groups`` (a list of
    ``n`` hashable group ids, e.g. prompt ids; groups may differ in size) one per distinct id --
    or a ``(P, G)`` nested list (``P`` prompts × ``G`` rollouts, rectangular). Returns
    :class:`Modes` ``(ids, num_clusters)``: int32 ids of the input's shape (``(n,)`` or
    ``(P, G)``), numbered ``0, 1, ...`` by first appearance and restarting in every group, and the
    largest number of modes in any group -- exactly the bridge's ``modes`` and ``num_clusters``
    (``simplexlab.llm.advantages(rewards, torch.from_numpy(ids), num_clusters=C, ...)``).

    ``rewards`` (optional, the shape of the ids, booleans or 0/1): cluster each group's correct
    and incorrect completions separately (G2 Alg. 1 line 3: the correct ones give ŷ; line 4 and
    Listing 1 (c): the incorrect ones give ẑ), ids restarting in each class, as the bridge's
    G²RPO rule reads them (a correct rollout's id among the good modes, an incorrect one's among
    the bad). Without it every completion of a group is clustered together.

    ``method="agglomerative"`` (default; chosen on the labelled benchmark, ``python
    -m benchmarks.modes_compare``, module docstring): ``mask_numbers`` (default ``False``; it
    did not help there) replaces every number by ``N`` before embedding (``12.5`` → ``N``: the
    final answer and the problem's numbers do not separate or join methods); ``pooling``
    (default ``"distinct"``; ``"mean"`` is the model's own embedding, the default before)
    pools each completion's word pieces weighted by how many of the completions it is clustered
    with lack them (:func:`embed`; the set is the group, or the group's class with ``rewards``);
    ``layers`` (default ``"auto"``: the first 5 of the model's 6 layers for a set whose median
    completion has at least 40 words, all 6 below, :func:`auto_layers`; or 1–6): :func:`embed`
    runs only the first ``layers``; ``center``
    subtracts each group's (class's) mean embedding -- the words every completion of the prompt
    shares -- and renormalises; ``distance="tokens"`` (default) mixes
    that centred cosine distance (weight ``1 − token_weight``) with a token-matching distance
    (weight ``token_weight``, default 0.7): :func:`token_f1` of the completions' distinctive word
    pieces (the pooled layer's unit vectors of the pieces with weight ``1 − df/n > 0``, those
    weights), double-centred over the group (``Kc = J F J``) and turned into the distance
    ``1 − Kc_ab / sqrt(Kc_aa Kc_bb)`` (``1 − F`` without ``center``); ``distance="sentence"``
    (the default before) is the centred cosine distance alone. Average-``linkage``
    agglomerative clustering (scikit-learn) of those distances, cut at ``threshold`` (default
    ``None``: 0.99 for ``"tokens"``, 0.95 for ``"sentence"``, each calibrated on the
    benchmark's development problems; held-out ARI 0.69 / 0.88 on short / long texts with
    ``"tokens"``, 0.69 / 0.83 with ``"sentence"``); completions within cosine distance
    ``merge`` (default 0.05) *before* centring always share a mode. ``threshold`` in ``(0, 2]``,
    ``merge`` in ``[0, 2]``, ``token_weight`` in ``[0, 1]``, ``linkage`` ``"average"``,
    ``"complete"`` or ``"single"``.

    ``method="dbscan"``: the previous default, DBSCAN (scikit-learn) with ``eps``,
    ``min_samples`` and ``metric`` on the unit-norm embeddings of the raw texts (pass
    ``pooling="mean", layers=6`` for exactly the old behaviour; the defaults ``0.5``, ``2``,
    ``"euclidean"``: cosine similarity >= 0.875); ``noise``: what a point DBSCAN labels noise
    becomes -- ``"singleton"`` (default) a mode of its own, as the paper counts every correct
    rollout in some mode (Alg. 1 line 7, Listing 1 (g), App. B Remark B.10: ``ŷ_j >= 1/G``);
    ``"minus_one"`` keeps ``−1`` (the metrics skip it, the bridge refuses it); ``"nearest"``
    joins the cluster of its nearest clustered point (a singleton if there is none).

    ``embeddings``: precomputed rows ``(n, d)`` (or ``(P, G, d)``) in the flat order, used as
    given instead of calling :func:`embed` (``mask_numbers``, ``pooling`` and ``layers`` then
    have no effect, and without word pieces the default distance is ``"sentence"`` (its
    threshold 0.95 unless given; ``distance="tokens"`` is a ``ValueError``); ``batch_size``,
    ``device``, ``quantize`` (int8 feed-forward layers on the CPU, default ``False``): passed
    to :func:`embed`).

    ``max_pairs`` (default :data:`MAX_PAIRS`, 8192²): the most pairs ``n²`` of one clustered
    set (a group, or one class of a group with ``rewards``); a larger set is refused before
    anything is embedded (``ValueError`` naming the group and its size): split it with
    ``groups=`` (e.g. one group per prompt) or pass a larger ``max_pairs``.

    Bad input (an empty list or an empty group, a non-string, ragged nesting, an unknown
    ``method``, ``linkage``, ``pooling`` or ``distance``, ``threshold``, ``merge``,
    ``token_weight`` or ``layers`` outside their range, ``eps <= 0``, ``min_samples < 1``, an
    unknown metric or noise rule, mismatched ``groups``/``rewards``/``embeddings``) is a
    ``ValueError`` naming the value.
    """
    if distance is None:  # the default: without word pieces (embeddings given), the sentence's
        distance = DISTANCE if embeddings is None else "sentence"
    if not isinstance(distance, str) or distance not in DISTANCES:
        raise ValueError(f"distance must be one of {DISTANCES}; got {distance!r}")
    if embeddings is not None and distance == "tokens":
        raise ValueError("distance='tokens' needs the word pieces, which given embeddings do not "
                         "have: leave distance unset (the sentence distance) or pass texts only")
    if threshold is None:
        threshold = THRESHOLDS[distance]
    _check_method(method, threshold, linkage, center, merge, mask_numbers, quantize, pooling,
                  layers, token_weight)
    _check_params(eps, min_samples, metric, noise)
    max_pairs = _pos_int(max_pairs, "max_pairs")
    flat, shape, index, keys = _layout(completions, groups)
    correct = _rewards(rewards, shape)
    _check_set_sizes(index, keys, correct, max_pairs)
    toks = None
    if embeddings is None:
        part = np.zeros(len(flat), np.int64)  # the set each completion is clustered in
        for p, idx in enumerate(index):
            part[idx] = 2 * p + (0 if correct is None else correct[idx])
        tokens = method == "agglomerative" and distance == "tokens" and token_weight > 0
        X, toks = _embed([_NUMBER.sub("N", t) for t in flat] if mask_numbers else flat,
                         batch_size=batch_size, device=device, quantize=quantize,
                         pooling=pooling, groups=part.tolist(), layers=layers, tokens=tokens)
    else:
        X = np.asarray(embeddings.detach().cpu() if hasattr(embeddings, "detach")
                       else embeddings)
        if X.ndim != len(shape) + 1 or X.shape[:-1] != shape or X.shape[-1] < 1:
            raise ValueError(f"embeddings must have shape {(*shape, 'd')} (one row per "
                             f"completion); got {X.shape}")
        if not np.issubdtype(X.dtype, np.floating) or not np.isfinite(X).all():
            raise ValueError(f"embeddings must be finite floats; got dtype {X.dtype}"
                             + ("" if not np.issubdtype(X.dtype, np.floating) else
                                " with non-finite entries"))
        X = X.reshape(len(flat), X.shape[-1])
        if method == "agglomerative":
            norm = np.linalg.norm(X, axis=1, keepdims=True)
            X = np.divide(X, norm, out=np.zeros_like(X), where=norm > 0)
    ids = np.full(len(flat), -1, np.int32)
    C = 1
    for idx in index:
        parts = [idx] if correct is None else [idx[correct[idx]], idx[~correct[idx]]]
        for part in parts:
            if len(part):
                if method == "dbscan":
                    lab = _cluster(X[part], eps, min_samples, metric, noise)
                else:
                    lab = _agglomerate(X[part], threshold, linkage, center, merge,
                                       None if toks is None else [toks[i] for i in part],
                                       token_weight)
                ids[part] = lab
                C = max(C, int(lab.max(initial=-1)) + 1)
    return Modes(ids.reshape(shape), C)


def _check_set_sizes(index, keys, correct, max_pairs: int) -> None:
    """Refuse, before any embedding, a clustered set (a group, or one class of it with
    ``correct``) of ``n`` completions with ``n² > max_pairs``: its ``(n, n)`` distance matrices
    would not fit. The ``ValueError`` names the group, its size and how to split it."""
    for p, idx in enumerate(index):
        parts = [("", idx)] if correct is None else [
            ("the correct completions of ", idx[correct[idx]]),
            ("the incorrect completions of ", idx[~correct[idx]])]
        for what, part in parts:
            n = len(part)
            if n * n > max_pairs:
                name = f"group {keys[p]!r}" if keys is not None else (
                    f"group {p}" if len(index) > 1 else "the group")
                most = math.isqrt(max_pairs)
                raise ValueError(
                    f"discover_modes: {what}{name} are {n:,} completions, {n:,}² = {n * n:,} "
                    f"pairwise distances, more than max_pairs = {max_pairs:,} (sets of at most "
                    f"{most:,}); split them into groups of at most {most:,} (groups=, e.g. one "
                    f"id per prompt) or pass max_pairs={n * n} to allow it")


# ---- a rollouts file -------------------------------------------------------------------------

def rollout_modes(source, **options) -> dict:
    """The rollouts of a base model (a rollouts file, :func:`simplexlab._results.read_rollouts`,
    or its output) with a mode id for every rollout, discovered from its ``completion`` column
    by :func:`discover_modes` within each prompt (``options``: its keywords). With 0/1 rewards
    the correct and the incorrect completions of a prompt are clustered apart (ids ``c0, c1,
    ...`` and ``w0, w1, ...``); with rewards in between, all of them together (``m0, ...``).
    The result is what :meth:`simplexlab.theory.PromptSet.from_rollouts` takes (its good- and
    bad-mode masses). ``ValueError`` naming the file for a file without completions or one
    that gives the modes already."""
    from .._results import read_rollouts

    data = source if isinstance(source, dict) else read_rollouts(source)
    where = "the rollouts" if isinstance(source, dict) else str(source)
    if data.get("completion") is None:
        raise ValueError(f"{where}: no column 'completion' (each rollout's text) to discover "
                         "the modes from")
    if data.get("mode_id") is not None:
        raise ValueError(f"{where}: the file gives the modes already (column 'mode_id'); "
                         "discover them from a file of completions without one")
    reward = np.asarray(data["reward"], float)
    binary = bool(np.all((reward == 0) | (reward == 1)))
    ids = discover_modes(list(data["completion"]), groups=list(data["prompt_id"]),
                         rewards=(reward == 1) if binary else None, **options).ids
    prefix = np.where(reward == 1, "c", "w") if binary else np.full(reward.shape, "m")
    return {**data, "mode_id": [f"{a}{int(b)}" for a, b in zip(prefix, ids, strict=True)]}
