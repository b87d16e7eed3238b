"""Sampling theory of group-relative RLVR.

F-GRPO §3 and App. A–E: activity and tail-miss probabilities (Lemma 3.1) in log space, the
maximising group size N*, Lemma B.1 / Cor. B.2 conditional sampled masses, the one-step logit
update (7), the mass balance (8), the unsampled-correct identity (13) and the focal-scaled
advantage magnitude of Fig. 3. Sharpening-collapse §2 and App. A–G: the KL-optimal policy
(Thm 2.1, Cor. 2.1), the batch-optimal policy (Thm 2.2), the Z'(q) lower bounds (Thm 2.3), the
Thm 2.4 logit-shift bounds and the Cor. 2.2 ratio R (also on a sampled batch), and the toy's
embeddings and kernel values (§2.4, App. G). Monte Carlo estimators with confidence intervals
for each sampling quantity. Two-stage dynamics (TS §3, App. B–C): Lemma 1's sampled logit
update, Theorem 1's expected update, the expected mean-centred group advantage that makes it
exact, the relatively negative action and the stage switch of Remark 3, and the expected
trajectory of Algorithm 1.
G²RPO App. E: the toy product model's law of log10 π(h) (closed-form moments and the exact
law over token-count vectors), the law of the within-batch range, and the sampling laws of the
summary statistics of its Tables 2–3.
"""

from .theory import (
    TOY_LABELS,
    TOY_SIMILARITIES,
    CategoricalBatch,
    DiscreteDistribution,
    MCEstimate,
    ProductMoments,
    StatisticLaw,
    TailMissPeak,
    activity,
    batch_optimal_policy,
    batch_ratio_r,
    batch_statistics,
    conditional_baseline,
    conditional_sampled_masses,
    expected_group_advantages,
    expected_logit_update,
    expected_trajectory,
    focal_scaled_advantage,
    grpo_advantage_magnitude,
    kl_optimal_policy,
    log_activity,
    log_batch_partition_function,
    log_tail_miss,
    logit_update,
    mass_balance,
    mc_activity,
    mc_conditional_sampled_masses,
    mc_grpo_advantage_magnitude,
    mc_tail_miss,
    normalized_binary_advantages,
    product_log10_distribution,
    product_log10_moments,
    product_log10_prob,
    range_distribution,
    ratio_r,
    ratio_r_simplified,
    relatively_negative_action,
    sampled_logit_update,
    stage_switch,
    summary_statistic_laws,
    tail_miss,
    tail_miss_peak,
    theorem24_bounds,
    toy_embeddings,
    toy_kernel_values,
    unsampled_correct_change,
    z_prime_lower_bound,
    z_prime_lower_bound_normalized,
)

__all__ = [
    "CategoricalBatch",
    "DiscreteDistribution",
    "MCEstimate",
    "ProductMoments",
    "StatisticLaw",
    "TailMissPeak",
    "TOY_LABELS",
    "TOY_SIMILARITIES",
    "activity",
    "batch_optimal_policy",
    "batch_ratio_r",
    "batch_statistics",
    "conditional_baseline",
    "conditional_sampled_masses",
    "expected_group_advantages",
    "expected_logit_update",
    "expected_trajectory",
    "focal_scaled_advantage",
    "grpo_advantage_magnitude",
    "kl_optimal_policy",
    "log_activity",
    "log_batch_partition_function",
    "log_tail_miss",
    "logit_update",
    "mass_balance",
    "mc_activity",
    "mc_conditional_sampled_masses",
    "mc_grpo_advantage_magnitude",
    "mc_tail_miss",
    "normalized_binary_advantages",
    "product_log10_distribution",
    "product_log10_moments",
    "product_log10_prob",
    "range_distribution",
    "ratio_r",
    "ratio_r_simplified",
    "relatively_negative_action",
    "sampled_logit_update",
    "stage_switch",
    "summary_statistic_laws",
    "tail_miss",
    "tail_miss_peak",
    "theorem24_bounds",
    "toy_embeddings",
    "toy_kernel_values",
    "unsampled_correct_change",
    "z_prime_lower_bound",
    "z_prime_lower_bound_normalized",
]
