"""Models for the driver: a tiny GPT-2 built from a config (no download) and any local
``transformers`` causal LM loaded with ``from_pretrained(path)``."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["load_model", "tiny_model"]


def tiny_model(vocab_size: int, *, n_layer: int = 2, n_head: int = 4, n_embd: int = 64,
               n_positions: int = 16, bos_token_id: int = 1, eos_token_id: int = 2,
               pad_token_id: int = 0, seed: int = 0):
    """A randomly initialised ``GPT2LMHeadModel`` from a ``GPT2Config`` (nothing downloaded).
    ``seed`` fixes the initial weights."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    for name, v in (("vocab_size", vocab_size), ("n_layer", n_layer), ("n_head", n_head),
                    ("n_embd", n_embd), ("n_positions", n_positions)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"tiny_model: {name} must be an integer >= 1; got {v!r}")
    if n_embd % n_head:
        raise ValueError(f"tiny_model: n_embd = {n_embd} must be a multiple of n_head = {n_head}")
    cfg = GPT2Config(vocab_size=vocab_size, n_positions=n_positions, n_layer=n_layer,
                     n_head=n_head, n_embd=n_embd, bos_token_id=bos_token_id,
                     eos_token_id=eos_token_id, pad_token_id=pad_token_id,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(cfg)
    model.generation_config.pad_token_id = pad_token_id
    return model


def load_model(path: str | os.PathLike):
    """``AutoModelForCausalLM.from_pretrained(path)`` of a local folder (``save_pretrained``
    output); a missing folder is a ``ValueError`` naming it (nothing is downloaded)."""
    from transformers import AutoModelForCausalLM

    p = Path(path)
    if not (p / "config.json").is_file():
        raise ValueError(f"model path {str(path)!r} is not a folder written by save_pretrained "
                         "(no config.json); the driver loads local models only")
    return AutoModelForCausalLM.from_pretrained(p, local_files_only=True)
