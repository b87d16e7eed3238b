"""Advantage baselines and shaping rules.

Group-relative baselines (raw, mean-shifted, GRPO, Dr.GRPO, RLOO, REINFORCE++), G²RPO
(G2 Alg. 1, Listing 1), F-GRPO (FG eq. 15–16), IAC (SC §3.1), GRPO-N (TS App. B.5),
GRPO-TN (TS App. C.5), ProGRPO (PG eq. 4–6), the rules people train with (the frameworks' std
conventions: sample std, batch std, leave-one-out with std; W-REINFORCE and NSR; pass@k training
and PKPO; the unlikeliness reward), and a small composition API (:class:`Pipeline`).
Every rule by name on what a training loop sees (:func:`advantages`, :data:`METHODS`: what each
rule needs, declared once), the one map from a rule to its mean-field system
(:func:`meanfield_system`), and the G²RPO settings (:class:`GainSchedule`: constant / A / B,
warm-up, safeguards; :class:`G2RPOConfig` is its value at one training step).
Diversity and exploration metrics (re-exported by :mod:`simplexlab.metrics`): pass@k,
Avg K, L_y, K_eff, entropies, distinct-n, Self-BLEU. What the layers above need beyond this face
is in :mod:`simplexlab.shaping.internal`.
"""

from .._checks import Param
from ..theory import focal_weight
from ._advantages import (
    dr_grpo_advantages,
    grpo_advantages,
    grpo_batch_std_advantages,
    loo_std_advantages,
    mean_shifted_advantages,
    raw_advantages,
    reinforce_pp_advantages,
    rloo_advantages,
)
from ._diversity import (
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
from ._finite import MethodRule, group_rule
from ._g2rpo import G2RPOStats, g2rpo_advantages, g2rpo_bonus, g2rpo_stats
from ._methods import (
    METHOD_PARAMETERS,
    METHOD_PARAMS,
    METHODS,
    Groups,
    Method,
    advantages,
    g2rpo_clusters,
    lookup_method,
    meanfield_system,
    register_method,
    unregister_method,
)
from ._passk import pass_at_k_advantages, pkpo_advantages, pkpo_rewards
from ._rules import (
    IAC,
    Focal,
    G2RPOBonus,
    NegativeOnly,
    Pipeline,
    dapo,
    dapo_iac,
    dapo_keep_mask,
    f_dapo,
    f_grpo,
    focal_advantages,
    g2rpo,
    grpo,
    grpo_n,
    iac_advantages,
    negative_only,
    nsr_advantages,
    success_rate,
    unlikeliness_advantages,
    w_reinforce_advantages,
)
from ._schedule import G2RPOConfig, GainSchedule, RampedGain
from ._token import (
    grpo_tn_advantages,
    low_prob_confidence,
    prefix_tree,
    progrpo_advantages,
)

__all__ = [
    "Focal",
    "G2RPOBonus",
    "G2RPOConfig",
    "G2RPOStats",
    "GainSchedule",
    "Groups",
    "IAC",
    "METHODS",
    "METHOD_PARAMETERS",
    "METHOD_PARAMS",
    "Method",
    "MethodRule",
    "NegativeOnly",
    "Param",
    "Pipeline",
    "RampedGain",
    "advantages",
    "answer_entropy",
    "avg_num_modes",
    "cluster_distribution",
    "concentration",
    "dapo",
    "dapo_iac",
    "dapo_keep_mask",
    "distinct_n",
    "dr_grpo_advantages",
    "effective_num_modes",
    "entropy",
    "f_dapo",
    "f_grpo",
    "focal_advantages",
    "focal_weight",
    "g2rpo",
    "g2rpo_advantages",
    "g2rpo_bonus",
    "g2rpo_clusters",
    "g2rpo_stats",
    "group_rule",
    "grpo",
    "grpo_advantages",
    "grpo_batch_std_advantages",
    "grpo_n",
    "grpo_tn_advantages",
    "iac_advantages",
    "loo_std_advantages",
    "lookup_method",
    "low_prob_confidence",
    "mean_shifted_advantages",
    "meanfield_system",
    "negative_only",
    "normalized_entropy",
    "nsr_advantages",
    "num_modes",
    "pass_at_k",
    "pass_at_k_advantages",
    "pkpo_advantages",
    "pkpo_rewards",
    "prefix_tree",
    "progrpo_advantages",
    "raw_advantages",
    "register_method",
    "reinforce_pp_advantages",
    "retained_mass",
    "rloo_advantages",
    "self_bleu",
    "sequence_entropy",
    "success_rate",
    "token_entropy",
    "unlikeliness_advantages",
    "unregister_method",
    "w_reinforce_advantages",
]
