"""Mode discovery methods side by side on the labelled benchmark.

    python -m benchmarks.modes_compare [--quick] [--json PATH] [--no-timing] [--cache DIR]
                                       [--only TEXT]

The data: ``tests/data/modes_benchmark.jsonl`` (:mod:`benchmarks.modes_data`: 44 problems of six
kinds, 3–5 solution methods each, every method written several ways; short texts 5–35 words,
long ones 38–89 words, ≥ 40 for all but one). A group is one problem and one length; a method is
scored on the *correct* completions of every group (what ŷ is computed from; the wrong ones are
a class of their own when ``rewards`` is given) by the adjusted Rand index against the methods
and the error |K̂ − K| in the number of modes, averaged over groups. Every setting with a free
number (eps, a distance threshold) is calibrated on the development problems -- one value for
all of them, the best mean ARI over a grid -- and reported on the held-out test problems, which
no setting was tuned on; the fixed rows (today's default, the new default) are not tuned here.
Also reported: ``K=1`` -- the mean K̂ when a group holds the completions of one method only (one
group per problem and method, test problems; the truth is 1), since a trained policy often has
one mode left.

Embeddings of the benchmark's texts are cached on disk per (model, text variant) under ``--cache``
(default: ``simplexlab-modes-compare`` in the system's temporary folder; keyed by a hash of the
texts, so a changed benchmark is embedded afresh), and all variants missing from the cache are
embedded in one call (each distinct text once). ``--quick``: the raw-text rows only and the
timing on 16 × 16.

Timing (the last two columns): 256 prompts × 16 completions, fresh texts of the same generator
(other numbers), never cached: embedded once per set of :func:`simplexlab.llm.embed` options
(``TIMED``: mean or distinct pooling, float or int8, 6 or 5 layers, with or without the word
pieces of the token distance) and clustered by each timed
method (today's default and the previous default share the float mean-pooled embedding, so they
share its time); embed and cluster seconds separately, on this machine, with the load average
printed before and after each (a shared machine inflates both; the ratios in one run are what
compare).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from .modes_data import load, synthetic_groups

NUM = re.compile(r"\d+(?:[.,/]\d+)*")
SENT = re.compile(r"(?<=[.!?])\s+|\n+")
EQ = re.compile(r"[^.;:\n]*[=×÷+*/^√±-][^.;:\n]*")
# generic final-answer statements and openers of written solutions (not the generator's lists):
# "\boxed{..}", "(So/Thus/Hence/Therefore) (the) (final) answer/result is/:/= ..." at the end;
# "Let's think/work ...", "We solve ...", "Okay.", "Solution:", "Here is my reasoning." first
ANSWER = re.compile(r"(?:^|(?<=\s))(?:\\boxed\{[^}]*\}|(?:(?:so|thus|hence|therefore),?\s+)?"
                    r"(?:the\s+)?(?:final\s+)?(?:answer|result)(?:\s+is|\s*:|\s*=)\s*"
                    r"[^.!?\n]*[.!?]?)\s*$", re.I)
OPENER = re.compile(r"^\s*(?:(?:let'?s|let us|we|i will|i'll)\s+(?:think|work|solve|reason)"
                    r"[^.!?:\n]*[.!?:]|(?:ok(?:ay)?|so|well|alright|sure|solution|answer|"
                    r"reasoning|here is my reasoning|here's my reasoning)\s*[.!?:,])\s*", re.I)
OPERATORS = [(r"\*\*|\^", " to the power "), (r"×|\*|·", " times "), (r"÷", " divided by "),
             (r"(?<=[\w)\]]) ?/ ?(?=[\w(])", " divided by "), (r"\s=\s|=", " equals "),
             (r"\+", " plus "), (r"(?<=\s)-(?=\s)|−", " minus "),
             (r"√|sqrt", " square root of "), (r"±", " plus or minus "), (r"%", " percent")]


def _mask(t: str) -> str:
    return NUM.sub("N", t)


def _equations(t: str) -> str:
    """Only the pieces of text with an operator (equations, code expressions), numbers masked."""
    parts = [p.strip() for p in EQ.findall(_mask(t)) if p.strip()]
    return " ; ".join(parts) if parts else _mask(t)


def _solution_sentence(t: str) -> str:
    """The sentence with the most operators (the step that carries the method), masked."""
    sents = [s for s in SENT.split(_mask(t)) if s.strip()] or [""]
    return max(sents, key=lambda s: (len(re.findall(r"[=×÷+*/^√±-]", s)), len(s)))


def _strip(t: str) -> str:
    """The text without a trailing final-answer statement and a leading generic opener."""
    prev = None
    while prev != t:
        prev, t = t, OPENER.sub("", ANSWER.sub("", t).rstrip())
    return t or prev


def _verbal(t: str) -> str:
    """Operators in words ("=" → "equals", "/" → "divided by", ...), numbers masked: an
    equation and its wording come closer."""
    t = _mask(t)
    for a, b in OPERATORS:
        t = re.sub(a, b, t)
    return re.sub(r"\s+", " ", t).strip()


VARIANTS = {"raw": lambda t: t, "masked": _mask, "equations": _equations,
            "solution sentence": _solution_sentence, "stripped": _strip,
            "stripped + verbal": lambda t: _verbal(_strip(t))}


def _pieces(texts, variant):
    """The strings to embed for ``texts`` in ``variant`` (sentences for sentence pooling)."""
    if variant == "sentence pooling":
        return [[s for s in SENT.split(_mask(t)) if s.strip()] or [""] for t in texts]
    return [[VARIANTS[variant](t)] for t in texts]


def _pool(pieces, F):
    X, k = np.zeros((len(pieces), F.shape[1]), np.float32), 0
    for i, ss in enumerate(pieces):
        X[i] = F[k:k + len(ss)].mean(0)
        k += len(ss)
    return _unit(X)


# embeddings beyond the text variants (all of raw text): name -> embed() options; "distinct"
# pools with distinctiveness weights (the groups: each problem's correct completions of one length,
# and for the K̂-on-1-method column each method's alone)
EMBEDDINGS = {"int8": dict(quantize=True), "distinct": dict(pooling="distinct"),
              "distinct int8": dict(pooling="distinct", quantize=True),
              "distinct 5 layers": dict(pooling="distinct", layers=5),
              "distinct auto": dict(pooling="distinct", layers="auto"),
              "5 layers": dict(layers=5)}


TOKENS = "distinct auto + tokens"  # the embedding of distance="tokens": vectors + word pieces


def _embed_tokens(texts, cache: Path | None, rows):
    """{name: (X, toks)} of :data:`TOKENS` (``simplexlab.llm.internal.embed_tokens``, distinct
    pooling, ``layers="auto"``), grouped as the clustering groups them (and per method for
    ``name + " /1-method"``), from the disk cache where present (``.npz``: the vectors, the
    word-piece vectors concatenated, their weights and each text's count)."""
    from simplexlab.llm.internal import embed_tokens

    out = {}
    for name, keys in ((TOKENS, _keys(rows)), (TOKENS + " /1-method", _keys(rows, True))):
        key = hashlib.sha1("\x00".join([TOKENS] + texts + keys).encode()).hexdigest()[:20]
        path = cache / f"{key}.npz" if cache else None
        if path is not None and path.is_file():
            with np.load(path) as z:  # each z[key] reads the file again
                X, U, w, sizes = z["X"], z["U"], z["w"], z["sizes"]
            start = np.concatenate([[0], np.cumsum(sizes)])
            toks = [(U[a:b], w[a:b]) for a, b in zip(start[:-1], start[1:], strict=True)]
            out[name] = (X, toks)
            continue
        X, toks = embed_tokens(texts, pooling="distinct", layers="auto", groups=keys,
                               tokens=True)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(path, X=X, U=np.concatenate([u for u, _ in toks]),
                     w=np.concatenate([w for _, w in toks]),
                     sizes=np.array([len(w) for _, w in toks]))
        out[name] = (X, toks)
    return out


def _keys(rows, by_method=False):
    """The group of each row for distinct pooling: the set it is clustered in."""
    return [f"{r['split']}|{r['length']}|{r['problem']}|{r['correct']}"
            + (f"|{r['mode']}" if by_method else "") for r in rows]


def _embed_variants(texts, variants, cache: Path | None, options=None, rows=None):
    """{variant: embeddings}, from the disk cache where present; every missing variant's
    distinct strings embedded in one :func:`simplexlab.llm.embed` call (per ``options``, a dict
    of its keyword arguments; with ``pooling="distinct"`` also ``variant + " /1-method"``, the
    rows pooled within each method's completions alone)."""
    from simplexlab.llm import embed

    options = options or {}
    distinct = options.get("pooling") == "distinct"
    tag = "all-MiniLM-L6-v2|" + "|".join(f"{k}={v}" for k, v in sorted(options.items())
                                          if (k, v) != ("quantize", False))
    if tag == "all-MiniLM-L6-v2|quantize=True":
        tag = "all-MiniLM-L6-v2|int8-ffn=True"  # the key of the first runs' cache
    elif tag == "all-MiniLM-L6-v2|":
        tag = "all-MiniLM-L6-v2|int8-ffn=False"
    out, todo = {}, {}
    for v in variants:
        pieces = _pieces(texts, v)
        for name, keys in ((v, _keys(rows)), (v + " /1-method", _keys(rows, True))) if distinct \
                else ((v, None),):
            key = hashlib.sha1("\x00".join([tag, v] + ["\x01".join(p) for p in pieces]
                                           + (keys or [])).encode()).hexdigest()[:20]
            path = cache / f"{key}.npy" if cache else None
            if path is not None and path.is_file():
                out[name] = np.load(path)
            else:
                todo[name] = (pieces, path, keys)
    if todo and not distinct:
        flat = list(dict.fromkeys(s for pieces, _, _ in todo.values() for p in pieces
                                  for s in p))
        F = embed(flat, **options)
        row = {s: i for i, s in enumerate(flat)}
        for v, (pieces, path, _) in todo.items():
            X = _pool(pieces, F[[row[s] for p in pieces for s in p]])
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                np.save(path, X)
            out[v] = X
    elif todo:  # one text per completion; the group ids keep the variants apart
        flat = [(v, p[0], k) for v, (pieces, _, keys) in todo.items()
                for p, k in zip(pieces, keys, strict=True)]
        F = embed([t for _, t, _ in flat], groups=[(v, k) for v, _, k in flat], **options)
        k = 0
        for v, (pieces, path, _) in todo.items():
            X = F[k:k + len(pieces)]
            k += len(pieces)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                np.save(path, X)
            out[v] = X
    return out


def _unit(Y):
    n = np.linalg.norm(Y, axis=1, keepdims=True)
    return np.divide(Y, n, out=np.zeros_like(Y), where=n > 1e-6)


def _tfidf(texts):
    from sklearn.feature_extraction.text import TfidfVectorizer

    try:
        return TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit_transform(
            [_mask(t) for t in texts]).toarray()
    except ValueError:  # no words at all
        return np.ones((len(texts), 1))


def _features(rows, idx, E, emb, single=False):
    """The rows of one group in embedding ``emb`` (``single``: a group of one method's
    completions, pooled within it where the pooling depends on the group); for :data:`TOKENS`
    ``(rows, their word pieces)``."""
    if emb == TOKENS:
        X, toks = E[emb + " /1-method" if single else emb]
        return X[idx], [toks[i] for i in idx]
    if single and emb + " /1-method" in E:
        return E[emb + " /1-method"][idx]
    if emb == "tfidf":
        return _unit(_tfidf([rows[i]["text"] for i in idx]))
    if emb == "tfidf + raw":  # MiniLM (weight 0.7) and TF-IDF (0.3) concatenated
        T = _unit(_tfidf([rows[i]["text"] for i in idx]))
        return _unit(np.hstack([np.sqrt(0.7) * E["raw"][idx], np.sqrt(0.3) * T]))
    if emb in ("lda leave-type-out", "lda same types"):  # centred, projected, renormalised
        r = rows[idx[0]]
        W = _lda(rows, E, r["length"], r["type"] if emb == "lda leave-type-out" else None)
        return _unit(_unit(E["raw"][idx] - E["raw"][idx].mean(0)).astype(np.float64) @ W)
    return E[emb][idx]


_LDA: dict = {}
LDA_DIMS, LDA_RIDGE = 64, 0.1


def _lda(rows, E, length, held_out):
    """A linear projection (Fisher LDA, ``LDA_DIMS`` dimensions, ridge ``LDA_RIDGE`` × the mean
    within-class variance) of the group-centred embeddings, learned on the development problems
    of ``length`` whose type is not ``held_out`` (``None``: all types) with the classes (problem,
    method): metric learning. Cached per (length, held-out type)."""
    import scipy.linalg

    key = (length, held_out)
    if key not in _LDA:
        Z, y = [], []
        for (s, L, p), idx in _groups(rows).items():
            if s == "dev" and L == length and rows[idx[0]]["type"] != held_out:
                Z.append(_unit(E["raw"][idx] - E["raw"][idx].mean(0)))
                y += [(p, rows[i]["mode"]) for i in idx]
        Z = np.vstack(Z).astype(np.float64)
        classes = {c: j for j, c in enumerate(dict.fromkeys(y))}
        yi = np.array([classes[c] for c in y])
        mu, d = Z.mean(0), Z.shape[1]
        Sw, Sb = np.zeros((d, d)), np.zeros((d, d))
        for c in range(len(classes)):
            Zc = Z[yi == c]
            m = Zc.mean(0)
            Sw += (Zc - m).T @ (Zc - m)
            Sb += len(Zc) * np.outer(m - mu, m - mu)
        Sw /= len(Z)
        w, U = scipy.linalg.eigh(Sb / len(Z), Sw + LDA_RIDGE * np.trace(Sw) / d * np.eye(d))
        _LDA[key] = U[:, np.argsort(w)[::-1][:LDA_DIMS]]
    return _LDA[key]


def _labels(X, algo, param, center=False, merge=0.0, weight=None):
    """Cluster labels of the rows of X (unit rows) by ``algo`` with its free number ``param``
    (``X`` a pair (rows, word pieces) for the token distance: ``algo`` "tokens default" is
    discover_modes' default, "tokens" average linkage at ``param`` with token weight
    ``weight``)."""
    from sklearn.cluster import DBSCAN, HDBSCAN, AgglomerativeClustering

    from simplexlab.llm import discover_modes
    from simplexlab.llm.internal import LINKAGE, MERGE, THRESHOLDS, TOKEN_WEIGHT, agglomerate

    if algo == "tokens default":
        return agglomerate(X[0], THRESHOLDS["tokens"], LINKAGE, True, MERGE, X[1], TOKEN_WEIGHT)
    if algo == "tokens":
        return agglomerate(X[0], param, "average", True, MERGE, X[1], weight)
    n = len(X)
    if algo == "default":
        return discover_modes([""] * n, embeddings=X).ids
    if algo == "old default":
        return discover_modes([""] * n, embeddings=X, method="dbscan").ids
    if n == 1:
        return np.zeros(1, int)
    raw = np.clip(1 - X @ X.T, 0, 2)
    Y = _unit(X - X.mean(0)) if center else X
    D = np.clip(1 - Y @ Y.T, 0, 2)
    D[raw <= merge] = 0
    np.fill_diagonal(D, 0)
    if algo == "dbscan":
        lab = DBSCAN(eps=param, min_samples=2, metric="precomputed").fit_predict(D)
    elif algo == "hdbscan":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lab = HDBSCAN(min_cluster_size=2, metric="precomputed").fit_predict(D)
    else:
        if not (D > param).any():
            return np.zeros(n, int)
        lab = AgglomerativeClustering(n_clusters=None, distance_threshold=param, linkage=algo,
                                      metric="precomputed").fit_predict(D)
    noise = lab < 0
    lab[noise] = lab.max(initial=-1) + 1 + np.arange(noise.sum())
    return lab


# name: (embedding, algorithm, grid of the free number or None, centre); embeddings: a text
# variant of MiniLM (float), "int8" (raw text, quantize=True), "tfidf", "tfidf + raw", "lda ..."
# (the LDA rows' development score is itself leave-type-out for the first, in-sample for the
# second; the threshold is calibrated on it)
DB = [0.05, 0.08, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3]
AGG = [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0, 1.05,
       1.1]
OLD = "today's default: DBSCAN eps 0.5 (euclidean), raw text"
PREV = "previous default: mean pooling, centred + average 0.95, merge 0.05 (pooling=\"mean\")"
NEW = ("third step's default: distinct pooling, layers=\"auto\" (5 of 6 for groups of >= 40 "
       "words), centred + average 0.95, merge 0.05 (distance=\"sentence\")")
TOK = ("NEW DEFAULT (fourth step): distance=\"tokens\": the third step's centred sentence distance "
       "(0.3) + centred token-matching F1 distance (0.7), average 0.99, merge 0.05")
# thresholds of the token-distance rows (their distances sit near 1)
TOKGRID = [round(0.8 + 0.01 * i, 2) for i in range(31)]
L6 = "distinct pooling, all 6 layers (layers=6), centred + average 0.95, merge 0.05"
PREV8 = "previous default, int8 feed-forward layers (quantize=True)"
INT8 = "distinct pooling (6 layers), int8 feed-forward layers (quantize=True)"
L5 = "distinct pooling, 5 of the 6 layers for every group (layers=5)"
METHODS = {
    OLD: ("raw", "old default", None),
    "DBSCAN, eps calibrated (cosine)": ("raw", "dbscan", DB),
    "HDBSCAN (min_cluster_size 2)": ("raw", "hdbscan", [0]),
    "agglomerative average, threshold calibrated": ("raw", "average", AGG),
    "agglomerative complete, threshold calibrated": ("raw", "complete", AGG),
    "masked numbers + DBSCAN calibrated": ("masked", "dbscan", DB),
    "masked numbers + agglomerative average": ("masked", "average", AGG),
    "equations only (masked) + average": ("equations", "average", AGG),
    "solution sentence (masked) + average": ("solution sentence", "average", AGG),
    "sentence pooling (masked) + average": ("sentence pooling", "average", AGG),
    "centred + average, calibrated": ("raw", "average", AGG, True),
    "centred + complete, calibrated": ("raw", "complete", AGG, True),
    "masked numbers + centred + average": ("masked", "average", AGG, True),
    "equations only (masked) + centred + average": ("equations", "average", AGG, True),
    "solution sentence (masked) + centred + average": ("solution sentence", "average", AGG,
                                                       True),
    "sentence pooling (masked) + centred + average": ("sentence pooling", "average", AGG, True),
    "answer and opener stripped + centred + average": ("stripped", "average", AGG, True),
    "stripped, operators in words, numbers masked + centred + average":
        ("stripped + verbal", "average", AGG, True),
    "TF-IDF words (masked) centred + average": ("tfidf", "average", AGG, True),
    "TF-IDF + MiniLM concatenated (0.3 / 0.7), centred + average":
        ("tfidf + raw", "average", AGG, True),
    "LDA projection learned on dev problems of the OTHER types (leave-type-out) + average":
        ("lda leave-type-out", "average", AGG),
    "LDA projection learned on all dev problems (LEAKS: test shares the templates) + average":
        ("lda same types", "average", AGG),
    PREV: ("raw", "default", None),
    "previous default's clustering on masked text": ("masked", "default", None),
    PREV8: ("int8", "default", None),
    "5 of 6 layers (mean pooling) + centred + average": ("5 layers", "average", AGG, True),
    "distinct pooling (word pieces weighted 1 − df/n in the group), not centred + average":
        ("distinct", "average", AGG),
    "distinct pooling + centred + average, calibrated": ("distinct", "average", AGG, True),
    "distinct pooling, 5 of 6 layers + centred + average": ("distinct 5 layers", "average", AGG,
                                                          True),
    L6: ("distinct", "default", None),
    NEW: ("distinct auto", "default", None),
    INT8: ("distinct int8", "default", None),
    L5: ("distinct 5 layers", "default", None),
    TOK: (TOKENS, "tokens default", None),
    **{f"sentence (1 − w) + token F1 (w = {w:g}) distances, centred + average, calibrated":
       (TOKENS, "tokens", TOKGRID, True, w) for w in (0.3, 0.5, 0.6, 0.7, 0.8, 1.0)},
}
QUICK = {OLD, "DBSCAN, eps calibrated (cosine)", "centred + average, calibrated", PREV, NEW, TOK,
         INT8}


def _groups(rows):
    out = {}
    for i, r in enumerate(rows):
        if r["correct"]:
            out.setdefault((r["split"], r["length"], r["problem"]), []).append(i)
    return out


def _unpack(spec):
    """A :data:`METHODS` entry as ``(embedding, algorithm, centre, token weight)``."""
    return spec[0], spec[1], len(spec) > 3 and spec[3], spec[4] if len(spec) > 4 else None


def _score(rows, groups, E, spec, param, split, length):
    from sklearn.metrics import adjusted_rand_score

    emb, algo, center, weight = _unpack(spec)
    ari, kerr = [], []
    for (s, L, _), idx in groups.items():
        if s != split or L != length:
            continue
        lab = _labels(_features(rows, idx, E, emb), algo, param, center, weight=weight)
        true = [rows[i]["mode"] for i in idx]
        ari.append(adjusted_rand_score(true, lab))
        kerr.append(abs(len(set(lab)) - len(set(true))))
    return float(np.mean(ari)), float(np.mean(kerr))


def _single(rows, groups, E, spec, param, length):
    emb, algo, center, weight = _unpack(spec)
    ks = []
    for (s, L, _), idx in groups.items():
        if s != "test" or L != length:
            continue
        for m in sorted({rows[i]["mode"] for i in idx}):
            sub = [i for i in idx if rows[i]["mode"] == m]
            ks.append(len(set(_labels(_features(rows, sub, E, emb, True), algo, param,
                                      center, weight=weight))))
    return float(np.mean(ks))


# the timed rows: name -> (embed() options, clustering); the groups of distinct pooling: prompts
TIMED = {OLD: ({}, "old default"), PREV: ({}, "default"),
         L6: (dict(pooling="distinct"), "default"),
         NEW: (dict(pooling="distinct", layers="auto"), "default"),
         INT8: (dict(pooling="distinct", quantize=True), "default"),
         L5: (dict(pooling="distinct", layers=5), "default"),
         TOK: (dict(pooling="distinct", layers="auto", tokens=True), "tokens default")}


def _timing(P, G, quick_note, names):
    """256 × 16 (or ``P`` × ``G``) fresh texts per length: embed seconds per embedding (rows
    sharing one share its time) and cluster seconds per method, with the load average around
    each embedding."""
    from sklearn.metrics import adjusted_rand_score

    from simplexlab.llm.internal import embed_tokens

    embeddings = {}
    for name in names:
        embeddings.setdefault(tuple(sorted(TIMED[name][0].items())), []).append(name)
    for key in embeddings:  # load and warm up every model first
        embed_tokens(["warm up the model"] * 4, **dict(key))
    out = {}
    for length in ("short", "long"):
        tx, labels = synthetic_groups(P, G, length)
        flat = [t for row in tx for t in row]
        words = float(np.mean([len(t.split()) for t in flat]))
        for key, rows in embeddings.items():
            options = dict(key)
            if options.get("pooling") == "distinct":
                options["groups"] = [p for p in range(P) for _ in range(G)]
            la = os.getloadavg()[0]
            t0 = time.perf_counter()
            X, toks = embed_tokens(flat, **options)  # (X, None) without tokens=True
            e_s = time.perf_counter() - t0
            lb = os.getloadavg()[0]
            for name in rows:
                t0 = time.perf_counter()
                labs = [_labels(X[p * G:(p + 1) * G] if toks is None else
                                (X[p * G:(p + 1) * G], toks[p * G:(p + 1) * G]),
                                TIMED[name][1], None) for p in range(P)]
                c_s = time.perf_counter() - t0
                ari = float(np.mean([adjusted_rand_score(labels[p], labs[p]) for p in range(P)]))
                print(f"#   {name}: cluster {c_s:.2f} s, mean ARI against the methods "
                      f"{ari:.3f}", flush=True)
                out.setdefault(name, {})[length] = dict(
                    embed_s=e_s, cluster_s=c_s, distinct=len(set(flat)), words=words,
                    load=[la, lb], ari=ari)
            print(f"# timing {length} {P}×{G} {dict(key) or 'float mean'}: embed {e_s:.1f} s "
                  f"({len(set(flat))} distinct texts, {words:.1f} words on average; load "
                  f"{la:.1f} → {lb:.1f}){quick_note}", flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="the raw-text rows only, timing on 16 × 16")
    ap.add_argument("--json", help="write the numbers here")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--only", help="the rows whose name contains this text (case-insensitive)")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir())
                                           / "simplexlab-modes-compare"),
                    help="folder of cached benchmark embeddings ('' for none)")
    args = ap.parse_args(argv)
    import torch

    load0 = os.getloadavg()
    print(f"# {os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads; load average "
          f"{load0[0]:.1f} {load0[1]:.1f} {load0[2]:.1f}", flush=True)
    rows = load()
    groups = _groups(rows)
    texts = [r["text"] for r in rows]
    methods = {k: v for k, v in METHODS.items() if (not args.quick or k in QUICK)
               and (not args.only or args.only.lower() in k.lower())}
    cache = Path(args.cache) if args.cache else None
    t0 = time.perf_counter()
    derived = {"tfidf", "tfidf + raw", "lda leave-type-out", "lda same types", TOKENS} | \
        set(EMBEDDINGS)
    need = {m[0] for m in methods.values()} - derived | {"raw"}
    E = _embed_variants(texts, sorted(need), cache)
    for name, options in EMBEDDINGS.items():
        if any(m[0] == name for m in methods.values()):
            for k, X in _embed_variants(texts, ["raw"], cache, options, rows).items():
                E[k.replace("raw", name)] = X
    if any(m[0] == TOKENS for m in methods.values()):
        E.update(_embed_tokens(texts, cache, rows))
    print(f"# benchmark texts ({len(texts)}) in {len(E)} embeddings: "
          f"{time.perf_counter() - t0:.0f} s (from the cache where present)", flush=True)
    P = 16 if args.quick else 256
    G = 16
    timed = [n for n in TIMED if n in methods]
    timing = {} if args.no_timing or not timed else \
        _timing(P, G, " (--quick)" if args.quick else "", timed)
    print(HEADER)
    print("|" + "---|" * (HEADER.count(" | ") + 1))
    results = {}
    for name, spec in methods.items():
        r = {}
        for length in ("short", "long"):
            if spec[2] is None:
                param = None
            else:
                dev = [(_score(rows, groups, E, spec, p, "dev", length)[0], p) for p in spec[2]]
                param = max(dev)[1]
            r[length] = {"param": param,
                         "dev": _score(rows, groups, E, spec, param, "dev", length),
                         "test": _score(rows, groups, E, spec, param, "test", length),
                         "single_K": _single(rows, groups, E, spec, param, length)}
        if name in timing:
            r["timing"] = timing[name]
        results[name] = r
        print(_line(name, r), flush=True)
    load1 = os.getloadavg()
    print(f"\nload average at start {load0[0]:.1f}, at end {load1[0]:.1f} "
          f"({os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads); timing P × G = "
          f"{P} × {G}; rows with the same embedding options share one embedding (and its time)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "load": [load0, load1]}, f, indent=1)
    return results


HEADER = ("| method | param (short / long) | test ARI short | |K̂ err| short | test ARI long | "
          "|K̂ err| long | dev ARI short / long | K̂ on 1-method groups short / long | "
          "256×16 short: embed + cluster s | long |")


def _line(name, r):
    s, L = r["short"], r["long"]
    fmt = (lambda p: "—" if p is None else f"{p:g}")
    t = r.get("timing")
    ts = tl = "—"
    if t:
        ts = f"{t['short']['embed_s']:.1f} + {t['short']['cluster_s']:.2f}"
        tl = f"{t['long']['embed_s']:.1f} + {t['long']['cluster_s']:.2f}"
    return (f"| {name} | {fmt(s['param'])} / {fmt(L['param'])} | {s['test'][0]:.3f} | "
            f"{s['test'][1]:.2f} | {L['test'][0]:.3f} | {L['test'][1]:.2f} | "
            f"{s['dev'][0]:.2f} / {L['dev'][0]:.2f} | {s['single_K']:.2f} / "
            f"{L['single_K']:.2f} | {ts} | {tl} |")


if __name__ == "__main__":
    main()
