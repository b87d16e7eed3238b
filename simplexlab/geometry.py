"""Bonus-to-drift geometry and fixed points (G²RPO App. A.2–A.3, B, D.1; SPEC C2).

Generic machinery: :func:`softmax_jacobian`, :func:`logit_drift`, :func:`probability_drift`
(eq. 31), :func:`push_forward` (eq. 15), :func:`grpo_drift`. Closed forms:
:func:`collision_operator` (38), :func:`centered_good_bonus_drift` (33–34),
:func:`centered_bad_bonus_drift` (36–37), :func:`block_uniform_drift` (39),
:func:`bad_mass_drift` (52); the neutralizers, attenuation and flip thresholds (53–55, 60–70)
are re-exported from :mod:`simplexlab.meanfield`. Fixed points: :func:`find_fixed_points`,
:func:`uniform_on_support`, :func:`classify`, :func:`block_field`.
"""

from .theory._closed_forms import (
    attenuation,
    collision_field,
    flip_threshold,
    global_flip_gain,
    neutralizer,
    neutralizer_reciprocal,
    neutralizer_schedule_a,
    neutralizer_schedule_b,
    reciprocal_bonus,
)
from .theory._fixed_points import (
    FixedPoint,
    block_field,
    classify,
    find_fixed_points,
    support_of,
    tangent_basis,
    tangent_jacobian,
    uniform_on_support,
)
from .theory._geometry import (
    alignment_defect,
    bad_mass_drift,
    baseline_advantages,
    block_advantages,
    block_uniform_drift,
    centered_bad_bonus_drift,
    centered_good_bonus_drift,
    collision_operator,
    grpo_drift,
    logit_drift,
    noncollinearity_witness,
    probability_drift,
    push_forward,
    softmax_jacobian,
)
from .theory._portraits import (
    bad_mass_envelopes,
    neutralized_inner_coefficient,
    point_with_concentration,
    within_good_field,
)

__all__ = [
    "bad_mass_envelopes",
    "neutralized_inner_coefficient",
    "point_with_concentration",
    "within_good_field",
    "FixedPoint",
    "alignment_defect",
    "attenuation",
    "bad_mass_drift",
    "baseline_advantages",
    "block_advantages",
    "block_field",
    "block_uniform_drift",
    "centered_bad_bonus_drift",
    "centered_good_bonus_drift",
    "classify",
    "collision_field",
    "collision_operator",
    "find_fixed_points",
    "flip_threshold",
    "global_flip_gain",
    "grpo_drift",
    "logit_drift",
    "neutralizer",
    "neutralizer_reciprocal",
    "neutralizer_schedule_a",
    "neutralizer_schedule_b",
    "noncollinearity_witness",
    "probability_drift",
    "push_forward",
    "reciprocal_bonus",
    "softmax_jacobian",
    "support_of",
    "tangent_basis",
    "tangent_jacobian",
    "uniform_on_support",
]
