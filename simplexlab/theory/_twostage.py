r"""Two-stage probability-mass dynamics of the relative policy gradient (TS §3, App. B).

A softmax policy over ``A`` actions (tokens) with logits ``z`` at temperature ``τ``,
$\pi = \mathrm{softmax}(z/\tau)$ (TS App. C.4; ``τ = 1`` in §3).

- Lemma 1 (TS §3.1, proof App. B.2): one sampled action ``v`` with advantage $\hat A(v)$
  moves the logits by $\Delta z = \eta\,\hat A(v)\,\nabla_z \log\pi(v)$, i.e.
  $\Delta z_v = \eta\hat A(v)(1-\pi(v))$ and $\Delta z_u = -\eta\hat A(v)\pi(u)$
  (:func:`sampled_logit_update`).
- Theorem 1 (TS §3.1, proof App. B.4): the expected update is
  $E[\Delta z_v] = \eta\,\pi(v)\,[(1-\pi(v))\hat A(v) - \sum_{u\ne v}\pi(u)\hat A(u)]
  = \eta\,(J(\pi)\hat A)_v$ with $J(\pi) = \mathrm{Diag}(\pi) - \pi\pi^\top$
  (:func:`expected_logit_update`; the kernel is :func:`simplexlab.theory.logit_drift`'s).
- The advantage the theorem needs for mean-centred group advantages
  $\hat A_i = r(a_i) - \mathrm{mean}_j r(a_j)$ (TS §3.2, Algorithm 1):
  $E[\hat A_i \mid a_i = u] = \frac{G-1}{G}(r(u) - \pi\cdot r)$
  (:func:`expected_group_advantages`). The group mean contains ``r(a_i)`` itself, so the
  population advantage $r(u) - \pi\cdot r$ over-states the expected update by
  ``G/(G-1)`` (a factor 2 at the paper's ``G = 2``); App. B.4's "unbiased estimator" step
  drops this factor (computed here; the tests check it by Monte Carlo).
- Remark 3's two stages: the *relatively negative action* -- the action whose logit gets the
  most negative expected update, $\arg\min_v \pi(v)(r(v) - \pi\cdot r)$ -- is first the
  explored zero-reward action ``a3`` and later the explored positive action ``a1``
  (:func:`relatively_negative_action`, :func:`stage_switch`).
- :func:`expected_trajectory`: the deterministic map $z \leftarrow z + E[\Delta z]$
  with the expected group advantages (Algorithm 1's expected step; the toy's "mean field").

With ``temperature`` the update is the exact gradient of $\hat A\log\mathrm{softmax}
(z/\tau)_v$ with respect to ``z``, which carries a factor $1/\tau$ that TS App. C.4 does
not write; updating with the ``τ = 1`` formula instead is the same as multiplying ``eta`` by
``τ``.

All functions are pure JAX, broadcast over leading axes, and work under ``jit`` / ``vmap``. Bad
input (``temperature <= 0``, ``group_size < 1``, an action out of range, logits and rewards of
different last-axis lengths, non-finite values) raises a ``ValueError`` naming the value
eagerly and an ``eqx.error_if`` error under ``jit``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import as_int, check, check_finite, check_number, xp
from ._closed_forms import _eta
from ._geometry import _jac_action

__all__ = [
    "expected_group_advantages",
    "expected_logit_update",
    "expected_trajectory",
    "relatively_negative_action",
    "sampled_logit_update",
    "stage_switch",
]


def _float(x):
    return jnp.asarray(x, dtype=jax.dtypes.canonicalize_dtype(jnp.float64))


def _logits(logits):
    check_number(logits, "logits")
    shape = np.shape(logits)
    if len(shape) < 1 or shape[-1] < 2:
        raise ValueError(f"logits must have shape (..., A) with A >= 2 actions; got shape "
                         f"{shape}")
    return check_finite(_float(logits), "logits")


def _vector(x, logits, name: str):
    """A finite ``(..., A)`` array with the last-axis length of ``logits``."""
    check_number(x, name)
    if np.shape(x)[-1:] != np.shape(logits)[-1:]:
        raise ValueError(f"{name} must have one entry per action (the last-axis length of the "
                         f"logits): got shapes {np.shape(x)} and logits {np.shape(logits)}")
    return check_finite(_float(x), name)


def _temperature(temperature):
    check_number(temperature, "temperature")
    return check(_float(temperature), lambda a: ~xp.isfinite(a) | (a <= 0),
                 "temperature must be finite and > 0")


def _group_size(group_size):
    check_number(group_size, "group_size G")
    g = check_finite(_float(group_size), "group_size G")
    return check(g, lambda a: (a < 1) | (a != xp.round(a)),
                 "group_size G must be an integer >= 1")


def _policy(z, tau):
    return jax.nn.softmax(z / jnp.asarray(tau)[..., None], axis=-1)


def sampled_logit_update(logits, action, advantage, *, eta=1.0, temperature=1.0):
    r"""TS Lemma 1: the logit update of one sampled action ``action`` (``v``) with advantage
    ``advantage`` ($\hat A(v)$), $\Delta z = \frac{\eta}{\tau}\hat A(v)(e_v - \pi)$:
    ``+η Â(v)(1 − π(v))/τ`` on ``v`` and ``−η Â(v) π(u)/τ`` on every other ``u``.

    ``logits``: ``(..., A)``; ``action``: integers in ``[0, A)``; ``advantage``, ``eta``,
    ``temperature``: numbers; all broadcast over the leading axes. Returns ``(..., A)``.
    ``π = softmax(logits / temperature)``; ``temperature = 1`` is the lemma as printed."""
    z = _logits(logits)
    A = z.shape[-1]
    check_number(action, "action")
    a = check_finite(_float(action), "action")
    a = check(a, lambda x: (x < 0) | (x >= A) | (x != xp.round(x)),
              f"action must be an integer in [0, {A}) (an index into the {A} logits)")
    adv = check_finite(_float(check_number(advantage, "advantage")), "advantage")
    return _sampled_core(z, a, adv, _float(_eta(eta)), _temperature(temperature))


@jax.jit
def _sampled_core(z, a, adv, eta, tau):
    pi = _policy(z, tau)
    onehot = (jnp.arange(z.shape[-1], dtype=jnp.int32)
              == jnp.asarray(a).astype(jnp.int32)[..., None]).astype(z.dtype)
    return (eta * adv / tau)[..., None] * (onehot - pi)


def expected_logit_update(logits, advantages, *, eta=1.0, temperature=1.0):
    r"""TS Theorem 1: $E[\Delta z_v] = \frac{\eta}{\tau}\pi(v)[(1-\pi(v))\hat A(v) -
    \sum_{u\ne v}\pi(u)\hat A(u)] = \frac{\eta}{\tau}(J(\pi)\hat A)_v$, the mean of
    :func:`sampled_logit_update` over ``v ~ π`` for an advantage ``Â(v)`` that depends on the
    sampled action only.

    ``advantages``: ``(..., A)``, one per action. For Algorithm 1's mean-centred group
    advantages pass :func:`expected_group_advantages` (the conditional mean of ``Â`` given the
    action); the population advantage ``r − π·r`` over-states the update by ``G/(G−1)``."""
    z = _logits(logits)
    adv = _vector(advantages, z, "advantages")
    return _expected_core(z, adv, _float(_eta(eta)), _temperature(temperature))


@jax.jit
def _expected_core(z, adv, eta, tau):
    return (eta / tau)[..., None] * _jac_action(_policy(z, tau), adv)


def expected_group_advantages(logits, rewards, group_size, *, temperature=1.0):
    r"""$E[\hat A_i \mid a_i = u] = \frac{G-1}{G}\,(r(u) - \pi\cdot r)$ for the
    mean-centred group advantage $\hat A_i = r(a_i) - \frac1G\sum_j r(a_j)$ of TS §3.2 /
    Algorithm 1 with ``G = group_size`` i.i.d. actions from ``π = softmax(logits/τ)``.

    Derivation: the other ``G − 1`` rewards are independent of ``a_i`` with mean ``π·r``, so
    $E[\hat A_i\mid a_i=u] = r(u) - (r(u) + (G-1)\pi\cdot r)/G$. With it
    :func:`expected_logit_update` is the exact mean of Algorithm 1's step ``η g/G``."""
    z = _logits(logits)
    r = _vector(rewards, z, "rewards")
    return _group_adv_core(z, r, _group_size(group_size), _temperature(temperature))


@jax.jit
def _group_adv_core(z, r, g, tau):
    pi = _policy(z, tau)
    return ((g - 1.0) / g)[..., None] * (r - jnp.sum(pi * r, -1, keepdims=True))


def relatively_negative_action(logits, rewards, *, temperature=1.0):
    r"""The relatively negative action of TS Remark 3 / §3.2: the action whose logit gets the
    most negative expected update, $\arg\min_v \pi(v)\,(r(v) - \pi\cdot r)$ (Theorem 1
    with the expected group advantages; the positive factors ``η (G−1)/(G τ)`` do not change the
    arg-min). Integer ``(...)`` array of action indices."""
    z = _logits(logits)
    r = _vector(rewards, z, "rewards")
    return _negative_core(z, r, _temperature(temperature))


@jax.jit
def _negative_core(z, r, tau):
    return jnp.argmin(_jac_action(_policy(z, tau), r), axis=-1)


def stage_switch(logits, rewards, *, temperature=1.0, early_action: int = 2,
                 late_action: int = 0):
    r"""The two stages of TS Remark 3: the first index ``t`` along the trajectory axis (axis
    ``−2`` of ``logits (..., T, A)``) at which the relatively negative action
    (:func:`relatively_negative_action`) is ``late_action`` (``a1``, index 0) after being
    ``early_action`` (``a3``, index 2) at ``t = 0``. Returns an integer ``(...)`` array;
    ``−1`` where the trajectory does not start in the first stage or never switches.

    ``rewards``: ``(A,)`` or ``(..., A)`` broadcasting against the logits' leading axes."""
    z = _logits(logits)
    if z.ndim < 2:
        raise ValueError(f"logits must be a trajectory of shape (..., T, A); got shape "
                         f"{z.shape}")
    A = z.shape[-1]
    early = as_int(early_action, "early_action", lower=0)
    late = as_int(late_action, "late_action", lower=0)
    for name, v in (("early_action", early), ("late_action", late)):
        if v >= A:
            raise ValueError(f"{name} must be an action index in [0, {A}); got {v}")
    r = _vector(rewards, z, "rewards")
    tau = _temperature(temperature)
    return _switch_core(z, jnp.expand_dims(r, -2), jnp.expand_dims(tau, -1), early, late)


@functools.partial(jax.jit, static_argnums=(3, 4))
def _switch_core(z, r, tau, early, late):
    neg = _negative_core(z, r, tau)  # (..., T)
    hit = neg == late
    first = jnp.argmax(hit, axis=-1)
    ok = (neg[..., 0] == early) & jnp.any(hit, axis=-1)
    return jnp.where(ok, first, -1)


def expected_trajectory(logits0, rewards, group_size, *, eta=1.0, temperature=1.0,
                        num_steps: int, stride: int = 1):
    r"""The expected dynamics of TS Algorithm 1: iterate
    $z_{l+1} = z_l + E[\Delta z \mid z_l]$ (:func:`expected_logit_update` with
    :func:`expected_group_advantages`, i.e. Algorithm 1's plain step ``η g/G`` in expectation)
    for ``num_steps`` steps and return the logits at steps ``0, stride, 2·stride, ...``:
    ``(..., num_steps // stride + 1, A)``. The seed mean of the toy follows it up to the noise
    of ``G`` samples per step (``π`` is not linear in ``z``)."""
    z = _logits(logits0)
    r = _vector(rewards, z, "rewards")
    g = _group_size(group_size)
    eta = _float(_eta(eta))
    tau = _temperature(temperature)
    n = as_int(num_steps, "num_steps", lower=1)
    s = as_int(stride, "stride", lower=1)
    if n % s:
        raise ValueError(f"num_steps = {n} must be a multiple of stride = {s}")
    shape = jnp.broadcast_shapes(z.shape, r.shape, np.shape(g) + (1,), np.shape(eta) + (1,),
                                 np.shape(tau) + (1,))
    z, r = jnp.broadcast_to(z, shape), jnp.broadcast_to(r, shape)
    lead = shape[:-1]
    g, eta, tau = (jnp.broadcast_to(x, lead) for x in (g, eta, tau))
    return _trajectory_core(z, r, g, eta, tau, n // s, s)


@functools.partial(jax.jit, static_argnums=(5, 6))
def _trajectory_core(z, r, g, eta, tau, n_rec, stride):
    def one(z, _):
        adv = _group_adv_core(z, r, g, tau)
        return z + _expected_core(z, adv, eta, tau), None

    def rec(z, _):
        z = jax.lax.scan(one, z, None, length=stride)[0]
        return z, z

    out = jax.lax.scan(rec, z, None, length=n_rec)[1]  # (n_rec, ..., A)
    return jnp.moveaxis(jnp.concatenate([z[None], out]), 0, -2)
