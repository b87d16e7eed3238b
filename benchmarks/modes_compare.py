"""Mode discovery methods side by side on the labelled benchmark (issue 25).

    python -m benchmarks.modes_compare [--quick] [--json PATH]

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

Timing (the last two columns): 256 prompts × 16 completions, fresh texts of the same generator
(other numbers), embedded once per text variant and clustered by each method; embed and cluster
seconds separately, on this machine, with the load average printed (a shared machine inflates
both; the ratios in one run are what compare).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
import warnings

import numpy as np

from .modes_data import load, synthetic_groups

NUM = re.compile(r"\d+(?:[.,/]\d+)*")
SENT = re.compile(r"(?<=[.!?])\s+|\n+")
EQ = re.compile(r"[^.;:\n]*[=×÷+*/^√±-][^.;:\n]*")


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


VARIANTS = {"raw": lambda t: t, "masked": _mask, "equations": _equations,
            "solution sentence": _solution_sentence}


def _embed(texts, variant, embed):
    if variant == "sentence pooling":
        sents = [[s for s in SENT.split(_mask(t)) if s.strip()] or [""] for t in texts]
        F = embed([s for ss in sents for s in ss])
        X, k = np.zeros((len(texts), F.shape[1]), np.float32), 0
        for i, ss in enumerate(sents):
            X[i] = F[k:k + len(ss)].mean(0)
            k += len(ss)
        return X / np.linalg.norm(X, axis=1, keepdims=True)
    return embed([VARIANTS[variant](t) for t in texts])


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


def _labels(X, algo, param, center=False, merge=0.0):
    """Cluster labels of the rows of X (unit rows) by ``algo`` with its free number ``param``."""
    from sklearn.cluster import DBSCAN, HDBSCAN, AgglomerativeClustering

    from simplexlab.llm import discover_modes

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


# name: (embedding, algorithm, grid of the free number or None, centre, merge)
DB = [0.05, 0.08, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3]
AGG = [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1]
METHODS = {
    "today's default: DBSCAN eps 0.5 (euclidean), raw text": ("raw", "old default", None),
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
    "TF-IDF words (masked) centred + average": ("tfidf", "average", AGG, True),
    "masked + centred + average, calibrated": ("masked", "average", AGG, True),
    "NEW DEFAULT: centred + average 0.95, merge 0.05 (raw text)": ("raw", "default", None),
    "new default's clustering on masked text": ("masked", "default", None),
}


def _groups(rows):
    out = {}
    for i, r in enumerate(rows):
        if r["correct"]:
            out.setdefault((r["split"], r["length"], r["problem"]), []).append(i)
    return out


def _score(rows, groups, E, spec, param, split, length):
    from sklearn.metrics import adjusted_rand_score

    emb, algo = spec[0], spec[1]
    center = len(spec) > 3 and spec[3]
    ari, kerr = [], []
    for (s, L, _), idx in groups.items():
        if s != split or L != length:
            continue
        X = _unit(_tfidf([rows[i]["text"] for i in idx])) if emb == "tfidf" else E[emb][idx]
        lab = _labels(X, algo, param, center)
        true = [rows[i]["mode"] for i in idx]
        ari.append(adjusted_rand_score(true, lab))
        kerr.append(abs(len(set(lab)) - len(set(true))))
    return float(np.mean(ari)), float(np.mean(kerr))


def _single(rows, groups, E, spec, param, length):
    emb, algo = spec[0], spec[1]
    center = len(spec) > 3 and spec[3]
    ks = []
    for (s, L, _), idx in groups.items():
        if s != "test" or L != length:
            continue
        for m in sorted({rows[i]["mode"] for i in idx}):
            sub = [i for i in idx if rows[i]["mode"] == m]
            X = _unit(_tfidf([rows[i]["text"] for i in sub])) if emb == "tfidf" else E[emb][sub]
            ks.append(len(set(_labels(X, algo, param, center))))
    return float(np.mean(ks))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="timing on 16 × 16 only")
    ap.add_argument("--json", help="write the numbers here")
    ap.add_argument("--no-timing", action="store_true")
    args = ap.parse_args(argv)
    import torch

    from simplexlab.llm import embed

    load0 = os.getloadavg()
    rows = load()
    groups = _groups(rows)
    texts = [r["text"] for r in rows]
    E = {}
    t0 = time.perf_counter()
    for v in ("raw", "masked", "equations", "solution sentence", "sentence pooling"):
        E[v] = _embed(texts, v, embed)
    print(f"embedded {len(texts)} benchmark texts in 5 variants: {time.perf_counter() - t0:.0f} s",
          flush=True)
    results = {}
    P = 16 if args.quick else 256
    G = 16
    tcache: dict = {}
    for name, spec in METHODS.items():
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
        if not args.no_timing and spec[1] in ("old default", "default"):
            r["timing"] = {}
            for length in ("short", "long"):
                tx, _ = synthetic_groups(P, G, length)
                flat = [t for row in tx for t in row]
                if (spec[0], length) not in tcache:
                    t0 = time.perf_counter()
                    X = _embed(flat, spec[0], embed)
                    tcache[spec[0], length] = X, time.perf_counter() - t0
                X, e_s = tcache[spec[0], length]
                t0 = time.perf_counter()
                for p in range(P):
                    _labels(X[p * G:(p + 1) * G], spec[1], None)
                r["timing"][length] = (e_s, time.perf_counter() - t0, len(set(flat)))
        results[name] = r
        print(_line(name, r), flush=True)
    load1 = os.getloadavg()
    print(f"\nload average at start {load0[0]:.1f}, at end {load1[0]:.1f} "
          f"({os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads); P × G = {P} × {G}")
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
        ts = f"{t['short'][0]:.1f} + {t['short'][1]:.2f}"
        tl = f"{t['long'][0]:.1f} + {t['long'][1]:.2f}"
    return (f"| {name} | {fmt(s['param'])} / {fmt(L['param'])} | {s['test'][0]:.3f} | "
            f"{s['test'][1]:.2f} | {L['test'][0]:.3f} | {L['test'][1]:.2f} | "
            f"{s['dev'][0]:.2f} / {L['dev'][0]:.2f} | {s['single_K']:.2f} / "
            f"{L['single_K']:.2f} | {ts} | {tl} |")


if __name__ == "__main__":
    print(HEADER)
    print("|" + "---|" * HEADER.count(" | ") + "---|")
    main()
