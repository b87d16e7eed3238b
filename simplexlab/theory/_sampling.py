r"""Sampling theory of group-relative RLVR updates (F-GRPO §3, App. A–E, Fig. 3).

Trajectory level (F-GRPO §3.1, Lemma 3.1, App. A): with ``N`` i.i.d. rollouts, success probability
``mu`` ($\mu_{pos}$) and rare-correct mass ``tau`` ($0 \le \tau \le \mu$),

- activity $\Pr(\mathcal A_N) = 1 - \mu^N - (1-\mu)^N$ (F-GRPO eq. 9 and the line after it);
- tail-miss $\Pr(\mathcal B_\tau) = (1-\tau)^N - (\mu-\tau)^N - (1-\mu)^N$ (F-GRPO eq. 11).

Both are evaluated in log space without cancellation, using two exact rewritings:

1. $1 - a^N - b^N = a(1 - a^{N-1}) + b(1 - b^{N-1})$ whenever $a + b = 1$; both terms
   are non-negative for $N \ge 1$, so the sum (``logaddexp``) never cancels, and
   $1 - a^{N-1} = -\mathrm{expm1}((N-1)\log a)$ is accurate even for ``N`` near 1.
2. $\Pr(\mathcal B_\tau) = (1-\tau)^N \cdot \Pr(\mathcal A_N)\big|_{\mu \to u}$ with
   $u = (\mu-\tau)/(1-\tau)$, $1-u = (1-\mu)/(1-\tau)$: the tail-miss probability is the
   coverage factor times the activity of the rare-excluded conditional success rate ``u``.
   ``log u`` and ``log(1-u)`` are each formed from whichever of ``u``/``1-u`` is small, so no
   ``1 - (1 - small)`` rounding enters.

Categorical level (F-GRPO §2.3, §3.2, App. B–D): explicit softmax policies over a finite action set
with a correctness mask and a sampled (distinct) set; Lemma B.1 conditional sampled masses,
Corollary B.2, the one-step logit update (7), the mass balance (8) and the unsampled-correct
identity (13). Fig. 3: the focal-scaled population advantage magnitude.

All functions are pure JAX, broadcast over their arguments and work under ``jit``/``vmap``.
Bad input raises ``ValueError`` eagerly and ``eqx.error_if`` errors under ``jit``.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import (
    as_int,
    check,
    check_broadcast,
    check_finite,
    check_number,
    check_pair,
    check_simplex,
    xp,
)
from ._focal import focal_weight

__all__ = [
    "CategoricalBatch",
    "TailMissPeak",
    "activity",
    "batch_statistics",
    "conditional_baseline",
    "conditional_sampled_masses",
    "focal_scaled_advantage",
    "grpo_advantage_magnitude",
    "log_activity",
    "log_tail_miss",
    "logit_update",
    "mass_balance",
    "tail_miss",
    "tail_miss_peak",
    "unsampled_correct_change",
]

_LN2 = float(np.log(2.0))


def _float(x):
    """Cast to the default float dtype (float64 under x64); ints are cast explicitly."""
    return jnp.asarray(x, dtype=jax.dtypes.canonicalize_dtype(jnp.float64))


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------


def _check_mu(mu):
    check_number(mu, "mu (success probability mu_pos)")
    mu = check_finite(_float(mu), "mu (success probability mu_pos)")
    return check(mu, lambda a: (a < 0) | (a > 1),
                 "mu (success probability mu_pos) must lie in [0, 1]")


def _check_group_size(group_size, continuous: bool = False):
    """``group_size`` (N) finite, ``>= 1`` and a whole number unless ``continuous``."""
    check_number(group_size, "group_size")
    n = check_finite(_float(group_size), "group_size")
    n = check(n, lambda a: a < 1, "group_size must be >= 1")
    if not continuous:
        n = check(n, lambda a: a != xp.round(a),
                  "group_size must be an integer (pass continuous=True to evaluate the "
                  "formula's analytic continuation at non-integer N)")
    return n


def _check_tau(tau, mu):
    check_number(tau, "tau (rare-correct mass)")
    tau = check_finite(_float(tau), "tau (rare-correct mass)")
    tau = check(tau, lambda a: a < 0, "tau (rare-correct mass) must be >= 0")
    return check_pair(tau, mu, lambda t, m: t > m,
                       "tau (rare-correct mass) must satisfy tau <= mu (the rare-correct region "
                       "is part of the correct set): (tau, mu)")


# --------------------------------------------------------------------------------------------
# log-space kernels
# --------------------------------------------------------------------------------------------


def _log1mexp(x):
    """``log(1 - exp(x))`` for ``x <= 0`` without cancellation (Mächler 2012)."""
    x = jnp.minimum(x, 0.0)
    safe_hi = jnp.where(x > -_LN2, x, -1.0)
    safe_lo = jnp.where(x > -_LN2, -1.0, x)
    return jnp.where(x > -_LN2, jnp.log(-jnp.expm1(safe_hi)), jnp.log1p(-jnp.exp(safe_lo)))


def _xlogy_safe(m, log_a):
    """``m * log_a`` with ``0 * (-inf) = 0``."""
    return jnp.where(m == 0, 0.0, m * jnp.where(m == 0, 0.0, log_a))


def _log_activity_from_logs(log_a, log_b, n):
    r"""``log(1 - a^n - b^n)`` for ``a + b = 1`` given ``log a``, ``log b`` (rewriting 1 above)."""
    m = n - 1.0
    t1 = log_a + _log1mexp(_xlogy_safe(m, log_a))
    t2 = log_b + _log1mexp(_xlogy_safe(m, log_b))
    return jnp.logaddexp(t1, t2)


def _log_split(mu, tau):
    r"""``(log u, log(1-u), log(1-tau))`` for ``u = (mu-tau)/(1-tau)``, accurate at both ends."""
    one_m_tau = 1.0 - tau
    safe_den = jnp.where(one_m_tau > 0, one_m_tau, 1.0)
    log_1m_tau = jnp.log1p(-tau)
    u = (mu - tau) / safe_den
    v = (1.0 - mu) / safe_den
    log_u = jnp.where(u > 0.5, jnp.log1p(-jnp.minimum(v, 0.5)),
                      jnp.log(mu - tau) - jnp.where(one_m_tau > 0, log_1m_tau, 0.0))
    log_v = jnp.where(v > 0.5, jnp.log1p(-jnp.minimum(u, 0.5)),
                      jnp.log1p(-mu) - jnp.where(one_m_tau > 0, log_1m_tau, 0.0))
    return log_u, log_v, log_1m_tau


# --------------------------------------------------------------------------------------------
# Lemma 3.1
# --------------------------------------------------------------------------------------------


def log_activity(mu, group_size, *, continuous: bool = False):
    r"""``log Pr(A_N)``, $\Pr(\mathcal A_N) = 1 - \mu^N - (1-\mu)^N$ (F-GRPO eq. 9).

    The probability that a group of ``N = group_size`` i.i.d. binary-reward rollouts with success
    probability ``mu`` is not all-correct and not all-incorrect (GRPO advantages are non-zero).
    Broadcasts over ``mu`` and ``group_size``; ``group_size`` is an integer ``>= 1``, or any real
    ``>= 1`` with ``continuous=True`` (the formula's analytic continuation). Returns ``-inf``
    where the probability is zero (``N = 1``, ``mu`` in ``{0, 1}``).
    """
    check_broadcast(mu=mu, group_size=group_size)
    mu = _check_mu(mu)
    n = _check_group_size(group_size, continuous)
    return _log_activity_core(mu, n)


@jax.jit
def _log_activity_core(mu, n):
    return _log_activity_from_logs(jnp.log(mu), jnp.log1p(-mu), n)


def activity(mu, group_size, *, continuous: bool = False):
    r"""Activity $\Pr(\mathcal A_N) = 1 - \mu^N - (1-\mu)^N$ (F-GRPO eq. 9); see
    :func:`log_activity`."""
    return jnp.exp(log_activity(mu, group_size, continuous=continuous))


def log_tail_miss(mu, tau, group_size, *, continuous: bool = False):
    r"""``log Pr(B_tau)``, F-GRPO Lemma 3.1 eq. (11):
    $\Pr(\mathcal B_\tau) = (1-\tau)^N - (\mu-\tau)^N - (1-\mu)^N$.

    $\mathcal B_\tau$ is the event that the group is active (mixed rewards) *and* no rollout
    falls in the rare-correct region of mass ``tau``. Computed as
    ``N log(1-tau) + log Pr(A_N)|_{mu -> u}``, ``u = (mu-tau)/(1-tau)`` (see module docstring);
    accurate to ~1e-13 relative for ``N`` up to 2^20 and beyond, ``tau`` down to 1e-300, and it
    stays finite where the probability underflows float64. Requires ``0 <= tau <= mu <= 1`` and
    an integer ``N = group_size >= 1`` (any real ``N >= 1`` with ``continuous=True``, the
    analytic continuation); broadcasts over all three.
    """
    check_broadcast(mu=mu, tau=tau, group_size=group_size)
    mu = _check_mu(mu)
    tau = _check_tau(tau, mu)
    n = _check_group_size(group_size, continuous)
    return _log_tail_miss_core(mu, tau, n)


@jax.jit
def _log_tail_miss_core(mu, tau, n):
    log_u, log_v, log_1m_tau = _log_split(mu, tau)
    out = _xlogy_safe(n, log_1m_tau) + _log_activity_from_logs(log_u, log_v, n)
    return jnp.where(tau >= 1.0, -jnp.inf, out)


def tail_miss(mu, tau, group_size, *, continuous: bool = False):
    r"""Tail-miss probability $\Pr(\mathcal B_\tau)$, F-GRPO Lemma 3.1 eq. (11); see
    :func:`log_tail_miss`."""
    return jnp.exp(log_tail_miss(mu, tau, group_size, continuous=continuous))


class TailMissPeak(NamedTuple):
    """Maximiser of the tail-miss probability over the group size (F-GRPO Fig. 2 stars)."""

    n_star: jax.Array
    """Continuous maximiser ``N*`` (root of ``d/dN log Pr(B_tau) = 0``)."""
    n_star_int: jax.Array
    """Best integer group size (``floor`` or ``ceil`` of ``n_star``, whichever is larger)."""
    peak: jax.Array
    """``Pr(B_tau)`` at ``n_star``."""
    peak_int: jax.Array
    """``Pr(B_tau)`` at ``n_star_int``."""


def _dlog_gap(log_u, log_v, log_1m_tau, log_n):
    r"""``log(-d/dN log Pr(A_N)|_u) - log(-log(1-tau))`` at ``N = exp(log_n)``.

    $\frac{d}{dN}\log\Pr(\mathcal B_\tau) = \log(1-\tau) + \frac{-u^N\log u - v^N \log v}
    {\Pr(\mathcal A_N)|_u}$; its sign equals the sign of this gap. Both numerator terms are
    positive, so the numerator is a ``logaddexp``.
    """
    n = jnp.exp(log_n)
    num = jnp.logaddexp(n * log_u + jnp.log(-log_u), n * log_v + jnp.log(-log_v))
    return num - _log_activity_from_logs(log_u, log_v, n) - jnp.log(-log_1m_tau)


def tail_miss_peak(mu, tau, *, iters: int = 200) -> TailMissPeak:
    r"""Group size maximising $\Pr(\mathcal B_\tau)$ (F-GRPO §3.1, Fig. 2 stars, Fig. 5).

    Bisection in ``log N`` on the sign of $\frac{d}{dN}\log\Pr(\mathcal B_\tau)$, which is
    ``+inf`` at ``N = 1`` (``Pr = 0`` there) and tends to ``log(1 - tau) < 0`` as ``N -> inf``;
    the bracket is ``[1, e^160]``. Uniqueness of the root (one sign change) is checked by the
    test-suite on a dense ``(mu, tau)`` grid, not assumed. Requires ``0 < tau < mu < 1``.
    Broadcasts over ``mu`` and ``tau``; pure JAX (jit/vmap). ``iters``: a static integer >= 1.
    """
    iters = as_int(iters, "iters (bisection steps)", lower=1)
    check_broadcast(mu=mu, tau=tau)
    mu = _check_mu(mu)
    mu = check(mu, lambda a: (a <= 0) | (a >= 1),
               "mu must lie in the open interval (0, 1) for the tail-miss peak")
    tau = _check_tau(tau, mu)
    tau = check(tau, lambda a: a <= 0, "tau must be > 0 for the tail-miss peak (tau = 0 has "
                "no finite maximiser: Pr(B_0) = Pr(A_N) increases to 1)")
    tau = check_pair(tau, mu, lambda t, m: t >= m,
                      "tau must be < mu for the tail-miss peak: (tau, mu)")
    return _peak_core(mu, tau, iters)


@functools.partial(jax.jit, static_argnums=2)
def _peak_core(mu, tau, iters):
    mu, tau = jnp.broadcast_arrays(mu, tau)
    log_u, log_v, log_1m_tau = _log_split(mu, tau)

    lo = jnp.zeros_like(mu)
    hi = jnp.full_like(mu, 160.0)

    def body(_, carry):
        lo, hi = carry
        mid = 0.5 * (lo + hi)
        up = _dlog_gap(log_u, log_v, log_1m_tau, mid) > 0
        return jnp.where(up, mid, lo), jnp.where(up, hi, mid)

    lo, hi = jax.lax.fori_loop(0, iters, body, (lo, hi))
    n_star = jnp.exp(0.5 * (lo + hi))

    def f(n):
        return _xlogy_safe(n, log_1m_tau) + _log_activity_from_logs(log_u, log_v, n)

    n_lo = jnp.maximum(jnp.floor(n_star), 1.0)
    n_hi = jnp.ceil(n_star)
    f_lo, f_hi = f(n_lo), f(n_hi)
    n_int = jnp.where(f_hi > f_lo, n_hi, n_lo)
    return TailMissPeak(n_star=n_star, n_star_int=n_int, peak=jnp.exp(f(n_star)),
                        peak_int=jnp.exp(jnp.maximum(f_lo, f_hi)))


# --------------------------------------------------------------------------------------------
# Categorical policy: Lemma B.1, Cor. B.2, eqs. (7), (8), (13)
# --------------------------------------------------------------------------------------------


def _check_policy(pi, correct):
    pi = check_simplex(_float(check_number(pi, "pi (categorical policy)")),
                       "pi (categorical policy)")
    correct = jnp.asarray(correct)
    if correct.dtype != jnp.bool_:
        raise ValueError(f"correct must be a boolean mask; got dtype {correct.dtype}")
    try:
        np.broadcast_shapes(np.shape(correct), np.shape(pi))
    except ValueError:
        raise ValueError(f"correct mask shape {np.shape(correct)} does not broadcast with pi "
                         f"shape {np.shape(pi)}") from None
    return pi, correct


def conditional_sampled_masses(pi, correct, group_size, k):
    r"""F-GRPO Lemma B.1, eqs. (18)–(19): $E[P_{pos}\mid X=k]$ and
    $E[P_{neg}\mid X=k]$.

    ``pi``: one policy over the action set, shape ``(A,)`` (``vmap`` for batches); ``correct``:
    boolean mask of correct actions; ``group_size``: the group size ``N`` (an integer >= 1);
    ``k``: number of correct rollouts, an integer ``0 <= k <= N``, any shape (the results have
    ``k``'s shape). $P_{pos}$ ($P_{neg}$)
    is the policy mass of the *distinct* sampled correct (incorrect) actions.

    $$
      E[P_{pos}\mid X=k] = \sum_{o\in\mathcal C}\pi(o)\,(1-(1-q_{pos}(o))^k),\quad
      q_{pos} = \pi/\mu_{pos},
    $$

    and likewise for $P_{neg}$ with $q_{neg} = \pi/(1-\mu_{pos})$ and ``n - k``.
    """
    pi, correct = _check_policy(pi, correct)
    if pi.ndim != 1:
        raise ValueError(f"pi must be a single policy of shape (A,); got shape {pi.shape} "
                         "(use jax.vmap for batches)")
    n = _check_group_size(group_size)
    check_number(k, "k (number of correct rollouts)")
    k = check_finite(_float(k), "k (number of correct rollouts)")
    k = check(k, lambda a: (a < 0) | (a != xp.round(a)),
              "k (number of correct rollouts) must be an integer >= 0")
    k = check_pair(k, n, lambda a, b: a > b,
                   "k (number of correct rollouts) must be <= group_size: (k, group_size)")
    return _cond_masses_core(pi, correct, n, k)


@jax.jit
def _cond_masses_core(pi, correct, n, k):
    mu = jnp.sum(jnp.where(correct, pi, 0.0))
    nu = jnp.sum(jnp.where(correct, 0.0, pi))
    q_pos = jnp.where(correct, pi / jnp.where(mu > 0, mu, 1.0), 0.0)
    q_neg = jnp.where(correct, 0.0, pi / jnp.where(nu > 0, nu, 1.0))
    kk = k[..., None]
    hit_pos = -jnp.expm1(_xlogy_safe(kk, jnp.log1p(-jnp.minimum(q_pos, 1.0))))
    hit_neg = -jnp.expm1(_xlogy_safe(n - kk, jnp.log1p(-jnp.minimum(q_neg, 1.0))))
    e_pos = jnp.sum(jnp.where(correct, pi * hit_pos, 0.0), axis=-1)
    e_neg = jnp.sum(jnp.where(correct, 0.0, pi * hit_neg), axis=-1)
    return e_pos, e_neg


def conditional_baseline(pi, correct, group_size, k, r_correct=1.0, r_wrong=-1.0):
    r"""F-GRPO Corollary B.2: $E[S_R\mid X=k] = R_c E[P_{pos}\mid X=k] + R_w
    E[P_{neg}\mid X=k]$ (eq. 17 and Lemma B.1); non-decreasing in ``k`` when ``R_c > R_w``,
    ``R_w <= 0``."""
    rc, rw = _check_rewards(r_correct, r_wrong)
    e_pos, e_neg = conditional_sampled_masses(pi, correct, group_size, k)
    return rc * e_pos + rw * e_neg


class CategoricalBatch(NamedTuple):
    """Masses and second moments of a sampled batch (F-GRPO §2.3, eq. 6 and the lines after)."""

    q_pos: jax.Array  #: total correct mass Q_pos (eq. 6)
    q_neg: jax.Array  #: Q_neg = 1 - Q_pos
    p_pos: jax.Array  #: sampled correct mass P_pos (sum over A)
    p_neg: jax.Array  #: sampled incorrect mass P_neg (sum over B)
    a2: jax.Array  #: A_2 = sum_{A} p_i^2
    b2: jax.Array  #: B_2 = sum_{B} p_i^2
    u_pos2: jax.Array  #: U_{pos,2} = sum_{U ∩ P} p_i^2
    u_neg2: jax.Array  #: U_{neg,2} = sum_{U ∩ N} p_i^2
    q_u_pos: jax.Array  #: unsampled-correct mass Q_{u,pos} = Q_pos - P_pos (eq. 12)
    s_r: jax.Array  #: batch baseline S_R = R_c P_pos + R_w P_neg


def _check_sampled(sampled, pi):
    sampled = jnp.asarray(sampled)
    if sampled.dtype != jnp.bool_:
        raise ValueError(f"sampled must be a boolean mask of distinct sampled actions; got dtype "
                         f"{sampled.dtype}")
    try:
        np.broadcast_shapes(np.shape(sampled), np.shape(pi))
    except ValueError:
        raise ValueError(f"sampled mask shape {np.shape(sampled)} does not broadcast with pi "
                         f"shape {np.shape(pi)}") from None
    return sampled


def _check_rewards(r_correct, r_wrong):
    return (check_finite(_float(check_number(r_correct, "r_correct")), "r_correct"),
            check_finite(_float(check_number(r_wrong, "r_wrong")), "r_wrong"))


def batch_statistics(pi, correct, sampled, r_correct=1.0, r_wrong=-1.0) -> CategoricalBatch:
    r"""Sampled/unsampled masses and second moments of F-GRPO §2.3 for a policy ``pi`` (last
    axis), a boolean ``correct`` mask (the set $\mathcal P$) and a boolean ``sampled`` mask
    (the distinct sampled set $A \cup B$). $S_R = R_c P_{pos} + R_w P_{neg}$."""
    pi, correct, sampled = _check_batch(pi, correct, sampled)
    rc, rw = _check_rewards(r_correct, r_wrong)
    return _batch_stats_core(pi, correct, sampled, rc, rw)


def _check_batch(pi, correct, sampled):
    pi, correct = _check_policy(pi, correct)
    return pi, correct, _check_sampled(sampled, pi)


@jax.jit
def _batch_stats_core(pi, correct, sampled, rc, rw):
    def s(mask, x):
        return jnp.sum(jnp.where(mask, x, 0.0), axis=-1)

    a, b = correct & sampled, ~correct & sampled
    up, un = correct & ~sampled, ~correct & ~sampled
    p2 = pi * pi
    q_pos = s(correct, pi)
    p_pos, p_neg = s(a, pi), s(b, pi)
    return CategoricalBatch(
        q_pos=q_pos, q_neg=s(~correct, pi), p_pos=p_pos, p_neg=p_neg, a2=s(a, p2), b2=s(b, p2),
        u_pos2=s(up, p2), u_neg2=s(un, p2), q_u_pos=s(up, pi), s_r=rc * p_pos + rw * p_neg)


def _categorical(core):
    """Validate (pi, correct, sampled, group_size, eta, rewards) eagerly / with error_if, then
    call a jitted core."""

    def wrapped(pi, correct, sampled, group_size, eta=1.0, r_correct=1.0, r_wrong=-1.0):
        pi, correct, sampled = _check_batch(pi, correct, sampled)
        n = _check_group_size(group_size)
        check_number(eta, "eta (step size)")
        eta = check(_float(eta), lambda a: ~xp.isfinite(a) | (a <= 0),
                    "eta (step size) must be finite and > 0")
        rc, rw = _check_rewards(r_correct, r_wrong)
        return core(pi, correct, sampled, n, eta, rc, rw)

    wrapped.__name__ = core.__name__.lstrip("_")
    wrapped.__qualname__ = wrapped.__name__
    wrapped.__doc__ = core.__doc__
    wrapped.__module__ = __name__
    return wrapped


@_categorical
@jax.jit
def logit_update(pi, correct, sampled, n, eta, rc, rw):
    r"""One-step logit update, F-GRPO eq. (7): $\Delta z_i = \frac{\eta}{N} p_i (R_i - S_R)$,
    with $R_i = R_c$ on sampled correct, $R_w$ on sampled incorrect and 0 on unsampled
    actions. Arguments: ``(pi, correct, sampled, group_size, eta=1, r_correct=1, r_wrong=-1)``."""
    st = _batch_stats_core(pi, correct, sampled, rc, rw)
    r = jnp.where(sampled, jnp.where(correct, rc, rw), 0.0)
    return (eta / n)[..., None] * pi * (r - st.s_r[..., None])


@_categorical
@jax.jit
def mass_balance(pi, correct, sampled, n, eta, rc, rw):
    r"""First-order change of the correct mass, F-GRPO eq. (8) (Hu et al. 2025):

    $$
      \Delta Q_{pos} = \frac{\eta}{N}\Big[(R_c - S_R) Q_{neg} A_2 + (S_R - R_w) Q_{pos} B_2
      + S_R (Q_{pos} U_{neg,2} - Q_{neg} U_{pos,2})\Big].
    $$

    Arguments: ``(pi, correct, sampled, group_size, eta=1, r_correct=1, r_wrong=-1)``;
    ``sampled`` is the boolean mask of distinct sampled actions.
    """
    st = _batch_stats_core(pi, correct, sampled, rc, rw)
    return eta / n * ((rc - st.s_r) * st.q_neg * st.a2 + (st.s_r - rw) * st.q_pos * st.b2
                      + st.s_r * (st.q_pos * st.u_neg2 - st.q_neg * st.u_pos2))


@_categorical
@jax.jit
def unsampled_correct_change(pi, correct, sampled, n, eta, rc, rw):
    r"""First-order change of the unsampled-correct mass, F-GRPO Proposition 3.2, eq. (13):

    $$
      \Delta Q_{u,pos} = \frac{\eta}{N}\Big[-S_R U_{pos,2} - Q_{u,pos}\big((R_c - S_R) A_2
      + (R_w - S_R) B_2 - S_R U_2\big)\Big],\quad U_2 = U_{pos,2} + U_{neg,2}.
    $$

    Arguments: ``(pi, correct, sampled, group_size, eta=1, r_correct=1, r_wrong=-1)``.
    """
    st = _batch_stats_core(pi, correct, sampled, rc, rw)
    u2 = st.u_pos2 + st.u_neg2
    return eta / n * (-st.s_r * st.u_pos2 - st.q_u_pos * (
        (rc - st.s_r) * st.a2 + (rw - st.s_r) * st.b2 - st.s_r * u2))


# --------------------------------------------------------------------------------------------
# Fig. 3
# --------------------------------------------------------------------------------------------


def grpo_advantage_magnitude(mu):
    r"""Population-limit GRPO advantage magnitudes for binary rewards (F-GRPO Fig. 3, eq. 4).

    With success probability ``mu`` the reward has mean $R_w + \mu(R_c-R_w)$ and standard
    deviation $(R_c-R_w)\sqrt{\mu(1-\mu)}$, so the z-scored advantage is
    $|\hat A| = \sqrt{(1-\mu)/\mu}$ for a correct rollout and
    $\sqrt{\mu/(1-\mu)}$ for an incorrect one, independent of $R_c > R_w$. This is
    the infinite-group limit, not the sample z-score of a finite group. Returns
    ``(correct, incorrect)``; ``mu`` in ``(0, 1)``.
    """
    mu = check_finite(_float(check_number(mu, "mu (success probability)")),
                      "mu (success probability)")
    mu = check(mu, lambda a: (a <= 0) | (a >= 1), "mu (success probability) must lie in (0, 1)")
    return jnp.sqrt((1.0 - mu) / mu), jnp.sqrt(mu / (1.0 - mu))


def focal_scaled_advantage(mu, gamma):
    r"""F-GRPO Fig. 3: $g\cdot|\hat A^{GRPO}|$ with $g = (1-\mu)^\gamma$ (eq. 15–16),
    evaluated at the population success rate (``mu_hat -> mu``). Returns ``(correct,
    incorrect)``: $(1-\mu)^{\gamma+1/2}\mu^{-1/2}$ and
    $(1-\mu)^{\gamma-1/2}\mu^{1/2}$."""
    a_c, a_w = grpo_advantage_magnitude(mu)
    g = focal_weight(_float(mu), gamma)
    return g * a_c, g * a_w
