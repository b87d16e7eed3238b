"""Shared pieces of the test modules (``from helpers import ...``): the tolerance helper, and the
test suite's own advantage rule, written as a user writes one (not in the package): a tempered
Dr. GRPO with one declared parameter, registered by the tests that need it."""

from conftest import assert_close

from simplexlab.shaping import Method, Param, dr_grpo_advantages, xp

__all__ = ["RULE", "TAU", "assert_close", "tempered"]

#: the rule's parameter, declared once: the temperature τ (default 0.5, finite and > 0)
TAU = Param("test_tau", 0.5, lambda a: ~(xp.isfinite(a) & (a > 0)), "finite and > 0", "τ",
            "the temperature of the test rule")


def tempered(groups, q, schedule, step, verifier, num_clusters):
    """τ · (r − mean r): Dr. GRPO's advantage scaled by the rule's own parameter."""
    return q["test_tau"] * dr_grpo_advantages(groups.rewards, groups.mask)


#: the rule: its parameter, its function, what it needs
RULE = Method(("test_tau",), tempered, binary=True, structure="counts")
