"""Diversity and exploration metrics: pass@k (FG eq. 25), Avg K, L_y, K_eff,
(normalized) entropy, sequence/token-level entropy (G2 App. G.2), answer-level entropy
(TS App. C.6), distinct-n and Self-BLEU (PG Table 5)."""

from .shaping import (
    answer_entropy,
    avg_num_modes,
    cluster_distribution,
    concentration,
    distinct_n,
    effective_num_modes,
    entropy,
    normalized_entropy,
    num_modes,
    pass_at_k,
    retained_mass,
    self_bleu,
    sequence_entropy,
    token_entropy,
)

__all__ = [
    "answer_entropy",
    "avg_num_modes",
    "cluster_distribution",
    "concentration",
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
