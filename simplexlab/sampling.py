"""Sampling theory of group-relative RLVR (SPEC C3).

F-GRPO §3 and App. A–E: activity and tail-miss probabilities (Lemma 3.1) in log space, the
maximising group size N*, Lemma B.1 / Cor. B.2 conditional sampled masses, the one-step logit
update (7), the mass balance (8), the unsampled-correct identity (13) and the focal-scaled
advantage magnitude of Fig. 3. Sharpening-collapse §2 and App. A–G: the batch-optimal policy
(Thm 2.2), the Z'(q) lower bounds (Thm 2.3), the Thm 2.4 logit-shift bounds and the Cor. 2.2
ratio R, and the toy's kernel values (App. G). Monte Carlo estimators with confidence intervals
for each sampling quantity.
"""

from .theory._montecarlo import (
    MCEstimate,
    mc_activity,
    mc_conditional_sampled_masses,
    mc_grpo_advantage_magnitude,
    mc_tail_miss,
)
from .theory._sampling import (
    CategoricalBatch,
    TailMissPeak,
    activity,
    batch_statistics,
    conditional_baseline,
    conditional_sampled_masses,
    focal_scaled_advantage,
    grpo_advantage_magnitude,
    log_activity,
    log_tail_miss,
    logit_update,
    mass_balance,
    tail_miss,
    tail_miss_peak,
    unsampled_correct_change,
)
from .theory._sharpening import (
    batch_optimal_policy,
    log_batch_partition_function,
    normalized_binary_advantages,
    ratio_r,
    ratio_r_simplified,
    theorem24_bounds,
    toy_kernel_values,
    z_prime_lower_bound,
    z_prime_lower_bound_normalized,
)

__all__ = [
    "CategoricalBatch",
    "MCEstimate",
    "TailMissPeak",
    "activity",
    "batch_optimal_policy",
    "batch_statistics",
    "conditional_baseline",
    "conditional_sampled_masses",
    "focal_scaled_advantage",
    "grpo_advantage_magnitude",
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
    "ratio_r",
    "ratio_r_simplified",
    "tail_miss",
    "tail_miss_peak",
    "theorem24_bounds",
    "toy_kernel_values",
    "unsampled_correct_change",
    "z_prime_lower_bound",
    "z_prime_lower_bound_normalized",
]
