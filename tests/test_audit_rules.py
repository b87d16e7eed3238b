"""Obscure errors of a rule from user code made clear (issue 57, "Obscure"): a rule that returns
a list, or that converts a traced array to NumPy (``np.asarray``) or to a Python value (an
``if`` on an array), is refused with an error that names the rule and says what to write,
wherever it runs (eagerly, under ``jit``, in the bandit, in the finite-group theory), instead of
JAX's anonymous ``TracerArrayConversionError`` or an ``AttributeError`` deep in the caller."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simplexlab import shaping
from simplexlab import theory as th
from simplexlab.shaping import Groups, Method, register_method, unregister_method
from simplexlab.sim import Bandit, trajectory


def _a_list(groups, q, *args):
    return [[0.0] * groups.rewards.shape[-1]] * groups.rewards.shape[0]


def _numpy(groups, q, *args):
    r = np.asarray(groups.rewards)
    return jnp.asarray(r - r.mean(-1, keepdims=True))


def _python_if(groups, q, *args):
    if groups.rewards.sum() > 0:
        return groups.rewards - 0.5
    return groups.rewards


def _complex_output(groups, q, *args):
    return jnp.ones(groups.rewards.shape, jnp.complex64)


R = jnp.array([[1.0, 0.0, 1.0, 0.0]])

WHERE = {
    "eager": lambda name: shaping.advantages(name, Groups(R)),
    "jit": lambda name: jax.jit(lambda r: shaping.advantages(name, Groups(r)))(R),
    "bandit": lambda name: trajectory(Bandit(K=2, M=1, method=name, max_group_size=4),
                                      jax.random.key(0), {"group_size": 4}, num_steps=1),
    "theory": lambda name: th.expected_update(shaping.group_rule(name),
                                              np.array([0.4, 0.3, 0.3]), 2, 4),
}

CASES = [(_a_list, r"returned list .*; it must return an array", ["eager", "jit", "bandit",
                                                                  "theory"]),
         (_numpy, r"cannot be traced: it converts a traced array to NumPy or to a Python value"
                  r".*write it with jax\.numpy \(TracerArrayConversionError\)",
          ["jit", "bandit", "theory"]),
         (_python_if, r"cannot be traced.*\(TracerBoolConversionError\)",
          ["jit", "bandit", "theory"]),
         (_complex_output, r"returned advantages of dtype complex64; they must be real numbers",
          ["eager", "jit", "bandit", "theory"])]


@pytest.mark.parametrize("fn, what, where", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_rule_that_cannot_run_is_named(fn, what, where):
    register_method("audit_obscure", Method((), fn, binary=True))
    try:
        for w in where:
            with pytest.raises(ValueError, match=rf"rule 'audit_obscure' {what}"):
                WHERE[w]("audit_obscure")
    finally:
        unregister_method("audit_obscure")


def test_a_rule_that_uses_numpy_still_runs_eagerly():
    """Eagerly nothing is traced: the NumPy rule is a rule there (only traced uses refuse it)."""
    register_method("audit_numpy", Method((), _numpy, binary=True))
    try:
        np.testing.assert_allclose(np.asarray(WHERE["eager"]("audit_numpy")),
                                   [[0.5, -0.5, 0.5, -0.5]])
    finally:
        unregister_method("audit_numpy")
