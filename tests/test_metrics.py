"""Diversity metrics against brute force, mpmath, numpy and pure-Python re-computations."""

import itertools
import math
from collections import Counter

import jax
import mpmath
import numpy as np
import pytest
from helpers import assert_close

from simplexlab import shaping as mt
from simplexlab import theory


def test_pass_at_k_brute_force():
    ns, cs, ks, exp = [], [], [], []
    for n in range(1, 7):
        for c in range(n + 1):
            samples = [1] * c + [0] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(range(n), k))
                hit = sum(any(samples[i] for i in s) for s in subsets) / len(subsets)
                ns.append(n)
                cs.append(c)
                ks.append(k)
                exp.append(hit)
    ns, cs, ks, exp = map(np.array, (ns, cs, ks, exp))
    for k in np.unique(ks):
        sel = ks == k
        assert_close(mt.pass_at_k(ns[sel], cs[sel], int(k)), exp[sel], atol=1e-13)


def test_pass_at_k_large_n_stable():
    n, k = 1024, 256
    c = np.array([0, 1, 2, 5, 50, 700, 768, 769, 1024])
    exact = [float(1 - mpmath.binomial(n - ci, k) / mpmath.binomial(n, k)) for ci in c]
    out = jax.jit(lambda n, c: mt.pass_at_k(n, c, k))(np.full(len(c), n), c)
    assert_close(out, exact, rtol=1e-12, atol=1e-15)


def test_pass_at_k_bad_input():
    with pytest.raises(ValueError, match="k <= n"):
        mt.pass_at_k(4, 1, 5)
    with pytest.raises(ValueError, match=r"\[0, n\]"):
        mt.pass_at_k(4, 5, 2)
    with pytest.raises(ValueError, match="k >= 1"):
        mt.pass_at_k(4, 1, 0)


def test_mode_metrics():
    ids = np.array([[0, 0, 1, -1, 2, 0], [3, 3, -1, -1, 3, 3]])
    y = mt.cluster_distribution(ids, 4)
    assert_close(y, [[0.6, 0.2, 0.2, 0.0], [0, 0, 0, 1.0]])
    assert_close(mt.num_modes(y), [3, 1])
    assert_close(mt.avg_num_modes(y), 2.0)
    L = np.array([0.36 + 0.04 + 0.04, 1.0])
    assert_close(theory.concentration(y), L)
    assert_close(mt.effective_num_modes(y), 1 / L)
    H = -(0.6 * np.log(0.6) + 2 * 0.2 * np.log(0.2))
    assert_close(mt.entropy(y), [H, 0.0])
    assert_close(mt.normalized_entropy(y), [H / np.log(3), 0.0])
    assert_close(mt.sequence_entropy(ids, 4), [H, 0.0])
    assert_close(jax.jit(mt.sequence_entropy, static_argnums=1)(ids, 4), [H, 0.0])
    with pytest.raises(ValueError, match="cluster ids"):
        mt.cluster_distribution(ids, 3)
    with pytest.raises(ValueError, match="simplex"):
        mt.entropy(np.array([0.5, 0.6]))


def test_answer_and_token_entropy(rng):
    ans = np.array([[7, 7, 3, -1, 7, 3, 9, -1]])  # -1 = "NA", its own answer
    p = np.array(list(Counter(ans[0].tolist()).values())) / 8
    assert_close(mt.answer_entropy(ans), [-(p * np.log(p)).sum()])
    logits = rng.normal(size=(2, 5, 6))
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    pr = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    Ht = -(pr * np.log(pr)).sum(-1)
    exp = np.array([Ht[0, :3].mean(), Ht[1].mean()])
    assert_close(mt.token_entropy(logits, mask), exp)
    assert_close(mt.token_entropy(logits, mask, normalize=True), exp / np.log(6))


def _distinct_py(seqs, n):
    grams = [tuple(s[i:i + n]) for s in seqs for i in range(len(s) - n + 1)]
    return len(set(grams)) / len(grams)


def _bleu_py(hyp, refs, max_n=4, eps=0.0):
    logp = 0.0
    for n in range(1, max_n + 1):
        h = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
        mx = Counter()
        for ref in refs:
            rc = Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
            for g in h:
                mx[g] = max(mx[g], rc[g])
        num = sum(min(c, mx[g]) for g, c in h.items())
        den = sum(h.values())
        if num == 0:
            num = eps
        if num == 0:
            return 0.0
        logp += math.log(num / den) / max_n
    c = len(hyp)
    r = min((abs(len(x) - c), len(x)) for x in refs)[1]
    bp = 1.0 if c >= r else math.exp(1 - r / c)
    return bp * math.exp(logp)


_SELF_BLEU = jax.jit(lambda t, m, e: mt.self_bleu(t, m, smoothing=e))


def test_distinct_n_and_self_bleu(rng):
    T = 9
    tok = rng.integers(0, 4, (4, T))
    tok[1, :6] = tok[0, :6]  # overlap so that BLEU is not trivially 0
    lens = [9, 7, 9, 5]
    mask = np.arange(T)[None] < np.array(lens)[:, None]
    seqs = [tok[i, :lens[i]].tolist() for i in range(4)]
    for n in (1, 2, 3):
        assert_close(mt.distinct_n(tok, mask, n=n), _distinct_py(seqs, n))
    for eps in (0.0, 0.1):
        exp = np.mean([_bleu_py(seqs[i], seqs[:i] + seqs[i + 1:], eps=eps) for i in range(4)])
        assert_close(_SELF_BLEU(tok, mask, eps), exp)
    same = np.tile(np.arange(6), (3, 1))
    assert_close(mt.self_bleu(same), 1.0)
    assert_close(mt.distinct_n(same, n=2), 5 / 15)
    with pytest.raises(ValueError, match="at least 2"):
        mt.self_bleu(same[:1])
    with pytest.raises(ValueError, match="n-gram order"):
        mt.distinct_n(same, n=7)


def test_metrics_jit_and_vmap_over_groups_equal_eager():
    """Every array metric jits and vmaps over a batch of groups, matching per-group eager calls."""
    rng = np.random.default_rng(5)
    ys = rng.dirichlet(np.ones(4), size=3)
    ys[1, 2] = 0.0
    ys[1] /= ys[1].sum()
    logits = rng.normal(size=(3, 6, 5))
    answers = rng.integers(0, 4, size=(3, 8))
    tokens = rng.integers(0, 6, size=(3, 4, 7))
    cases = [
        (mt.entropy, (ys,)),
        (mt.normalized_entropy, (ys,)),
        (mt.effective_num_modes, (ys,)),
        (mt.num_modes, (ys,)),
        (mt.token_entropy, (logits,)),
        (mt.answer_entropy, (answers,)),
        (lambda t: mt.distinct_n(t, n=2), (tokens,)),
        (lambda t: mt.self_bleu(t, max_n=2), (tokens,)),
    ]
    for fn, args in cases:
        batched = jax.jit(jax.vmap(fn))(*args)
        eager = np.array([np.asarray(fn(*(a[i] for a in args))) for i in range(3)])
        assert_close(batched, eager, rtol=1e-12, atol=1e-12, err_msg=str(fn))
