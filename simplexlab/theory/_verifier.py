"""The noisy binary verifier of G²RPO App. A.2 (following Rad et al., 2026)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check, check_finite, check_real, float_leaf, is_concrete

__all__ = ["Verifier"]


def _labels(correct):
    correct = jnp.asarray(correct)
    if correct.dtype != jnp.bool_:
        raise ValueError(f"correct must be a boolean array (the latent labels); got dtype "
                         f"{correct.dtype}")
    return correct


def _checked_rates(delta_fn, delta_fp, allow_flipped: bool):
    """``(delta_fn, delta_fp)`` with run-time checks attached: finite, in ``[0, 1]``, and (unless
    ``allow_flipped``) ``delta_fn + delta_fp < 1``."""
    fn = check_finite(float_leaf(delta_fn), "Verifier.delta_fn")
    fp = check_finite(float_leaf(delta_fp), "Verifier.delta_fp")
    fn = check(fn, lambda a: (a < 0) | (a > 1), "Verifier.delta_fn must be in [0, 1]")
    fp = check(fp, lambda a: (a < 0) | (a > 1), "Verifier.delta_fp must be in [0, 1]")
    if not allow_flipped:
        fn = check(fn, lambda a: a + fp >= 1,
                   "delta_fn + delta_fp >= 1 (J <= 0) flips the flow; use allow_flipped=True")
    return fn, fp


class Verifier(eqx.Module):
    r"""Binary verifier with false-negative rate ``delta_fn`` and false-positive rate ``delta_fp``.

    ``J = 1 - delta_fn - delta_fp`` (G²RPO App. A.2). ``J <= 0`` reverses the direction of the flow
    (the verifier is no better than chance, or inverted); it is refused unless
    ``allow_flipped=True`` is passed explicitly.
    """

    #: false-negative rate ``δ_FN = P(r = 0 | good)``, in [0, 1]
    delta_fn: float | jnp.ndarray = 0.0
    #: false-positive rate ``δ_FP = P(r = 1 | bad)``, in [0, 1]
    delta_fp: float | jnp.ndarray = 0.0
    #: allow ``J <= 0`` (a verifier no better than chance, or inverted: the flow runs backwards)
    allow_flipped: bool = eqx.field(static=True, default=False, kw_only=True)

    def __check_init__(self):
        for name in ("delta_fn", "delta_fp"):
            v = getattr(self, name)
            if is_concrete(v):
                check_real(v, f"Verifier.{name}")
                arr = np.asarray(v)
                if not np.all(np.isfinite(arr)):
                    raise ValueError(f"Verifier.{name} must be finite; got {arr}")
                if np.any((arr < 0) | (arr > 1)):
                    raise ValueError(f"Verifier.{name} must be a rate in [0, 1]; got {arr}")
        if is_concrete(self.delta_fn) and is_concrete(self.delta_fp) and not self.allow_flipped:
            s = np.asarray(self.delta_fn) + np.asarray(self.delta_fp)
            if np.any(s >= 1):
                raise ValueError(
                    f"delta_fn + delta_fp = {s} >= 1 gives J <= 0, which flips the GRPO flow; "
                    "pass allow_flipped=True to study that regime on purpose"
                )

    def __post_init__(self):
        # built from traced rates (inside jit / vmap): the host checks of __check_init__ cannot
        # run, so the same rules are attached as run-time checks to the rates themselves (within
        # simplexlab._checks.trusted_inputs, where a simulator builds its own verifier from
        # parameters it checked already, they are skipped)
        if not (is_concrete(self.delta_fn) and is_concrete(self.delta_fp)):
            self.delta_fn, self.delta_fp = _checked_rates(self.delta_fn, self.delta_fp,
                                                          self.allow_flipped)

    def checked(self) -> Verifier:
        """The same verifier with run-time checks attached (for traced parameters)."""
        fn, fp = _checked_rates(self.delta_fn, self.delta_fp, self.allow_flipped)
        return Verifier(fn, fp, allow_flipped=self.allow_flipped)

    @property
    def J(self):
        """Verifier informativeness ``J = 1 - delta_fn - delta_fp`` (G²RPO App. A.2)."""
        return 1.0 - jnp.asarray(self.delta_fn) - jnp.asarray(self.delta_fp)

    def reward_mean(self, p):
        """``q(p) = (1 - delta_fn) - J p``, the Bernoulli mean of the reward (App. A.2)."""
        return (1.0 - jnp.asarray(self.delta_fn)) - self.J * p

    def sample(self, key, correct, dtype=None):
        r"""Verifier outcomes ``r ∈ {0, 1}`` for rollouts whose latent label is ``correct``
        (bool array): ``P(r = 0 | good) = delta_fn``, ``P(r = 1 | bad) = delta_fp`` (App. A.2),
        independently per rollout. Returns floats of ``dtype`` (default: JAX's default float)
        of the shape of ``correct``; :meth:`outcome` does the same from given uniforms."""
        dt = jnp.result_type(float) if dtype is None else jnp.dtype(dtype)
        return self.outcome(jax.random.uniform(key, jnp.shape(correct), dt), correct)

    def outcome(self, u, correct):
        r""":meth:`sample` from uniforms ``u ∈ [0, 1)`` (one per rollout, the shape of
        ``correct``): ``r = [u >= delta_fn]`` for a good rollout, ``[u < delta_fp]`` for a bad
        one; floats of the dtype of ``u``."""
        correct = _labels(correct)
        u = jnp.asarray(u)
        if u.shape != correct.shape:
            raise ValueError(f"u {u.shape} and correct {correct.shape} must have the same shape")
        fn = jnp.asarray(self.delta_fn, u.dtype)
        fp = jnp.asarray(self.delta_fp, u.dtype)
        return jnp.where(correct, u >= fn, u < fp).astype(u.dtype)

    def reward_std(self, p):
        """``sigma(p) = sqrt(q (1 - q))`` (App. A.2)."""
        q = self.reward_mean(p)
        return jnp.sqrt(q * (1.0 - q))
