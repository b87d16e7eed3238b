r"""The second moment of one group step at group size G: ``E[g gᵀ]`` and ``Cov[g]``, ``g = Δθ/η``.

One SGD step of the (K+M)-mode bandit ascends the count-form surrogate with weights
``w_c = s Σ_{i : a_i = c} A_i`` (``s = 1/G`` for the mean reduction, 1 for the sum), so the
step over the rate is ``g = L(π) w`` with ``L = I − π 1ᵀ`` (log-likelihood surrogate,
``g = w − π Σ_c w_c``) or ``L = J(π) = Diag(π) − ππᵀ`` (probability surrogate). ``g`` is a linear
image of the *cell totals* ``T_{rc} = Σ_{i ∈ (c, r)} A_i`` (cell = mode ``c`` × score ``r``), so
its mean and covariance are linear images of the first and second moments of ``T``:

    ``E[g] = s L E[u]``,   ``E[g gᵀ] = s² L E[u uᵀ] Lᵀ``,   ``u_c = T_{0c} + T_{1c}``.

A step that averages the gradients of ``P`` groups drawn on the same parameters (``num_groups``)
has the same mean and, for a group-local rule, the covariance ``Σ / P`` (``Σ`` of one group).
The second moments of ``T`` along these paths (each result names its own):

- ``"counts"``: for a rule that sees only a rollout's own reward ``r`` and the group's success
  count ``S`` (``A_i = A(r_i, S)``): given ``S = k`` the ``k`` correct rollouts fall in the
  cells ``(c, 1)`` multinomially with probabilities ``∝ q_{1c} = π_c P(1 | c)``, the ``G − k``
  incorrect ones in ``(c, 0)`` ``∝ q_{0c}``, so ``T_{rc} = n_{rc} A(r, k)`` and
  ``E[n_{rc} n_{r'c'} | k]`` is a multinomial moment (``n(n − 1) p_c p_{c'} + δ_{cc'} n p_c``
  within a score, ``k (G − k) p_c p'_{c'}`` across). Summed over ``S ~ Bin(G, Q)``
  (``Q = Σ_c q_{1c}``) with ``k (k − 1) C(G, k) = G (G − 1) C(G − 2, k − 2)`` and its kin:

      ``E[T_{1c} T_{1c'}] = G(G−1) q_{1c} q_{1c'} Σ_k A(1,k)² b_{G−2}(k−2)
      + δ_{cc'} G q_{1c} Σ_k A(1,k)² b_{G−1}(k−1)``,

      ``E[T_{1c} T_{0c'}] = G(G−1) q_{1c} q_{0c'} Σ_k A(1,k) A(0,k) b_{G−2}(k−1)``

  (``b_n`` the ``Bin(n, Q)`` pmf; ``(0, 0)`` alike), ``O(G + C²)`` once the rule has run on the
  ``G + 1`` groups of the mean's ``"counts"`` path.
- ``"enumerate"``: every multinomial outcome of the ``G`` draws over the cells, the rule run on
  one representative group per outcome: ``E[T Tᵀ] = Σ_outcomes P · t tᵀ``; exact, for small ``G``
  and few cells.
- ``"clusters"``: for a rule with G²RPO's cluster symmetry (its advantages depend on the
  partitions of the correct-scored and of the incorrect-scored counts, a rollout's on its own
  cluster's count: ``T_{rc} = n_{rc} A_r(n_{rc}, λ)``), the mean's partition programme
  (Poissonised cell counts conditioned on their total ``G``) with one cell taken out for
  ``E[T_{rc}²]`` and two for ``E[T_{rc} T_{r'c'}]``; exact, every safeguard included, where the
  enumeration does not fit (G²RPO at K + M = 8, G = 16).
- ``"montecarlo"``: ``num_samples`` sampled groups (for a rule that is not group-local, batches of
  ``rule.num_groups`` groups), with the standard error of every entry of the mean and the
  covariance; the fallback of ``"auto"`` where no exact path fits, never silent (the result
  names its path).

A rule that normalises over its batch of groups (REINFORCE++) couples the groups: its
covariance comes from sampled batches, for one group's step (``num_groups=1``: the bandit, whose
prompts each hold their own parameters) or the whole batch's mean (``num_groups =
rule.num_groups``: one set of parameters for the batch).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import as_int, check_simplex
from ._finite_paths import (
    MAX_SIZE,
    AbstractGroupRule,
    _cells,
    _check_memory,
    _enumeration_tables,
    active_cells,
    binomial_pmf,
    check_settings,
    check_time,
    checked_one_group_size,
    cluster_second_size,
    clusters_second_moments,
    count_advantages,
    enumeration_outcomes,
    enumeration_size,
    known_zero_rates,
    montecarlo_bytes,
    pick_path,
    sampled_cell_totals,
    takes_mask,
)
from ._verifier import Verifier

__all__ = ["MOMENT_PATHS", "StepMoments", "cell_second_moments", "check_num_groups",
           "choose_moments_path", "counts_second_moments", "expected_moments", "gradient_map",
           "group_step_moments", "moments_size", "step_moments"]

MOMENT_PATHS = ("auto", "counts", "enumerate", "clusters", "montecarlo")
"""The ways :func:`expected_moments` computes the second moment ("auto" picks one)."""


class StepMoments(eqx.Module):
    r"""The first two moments of one step's gradient ``ĝ = Δθ/η`` (the mean of the gradients of
    ``num_groups`` groups on the same parameters) at a policy ``π`` (module docstring).

    ``mean`` ``E[ĝ]`` ``(C,)``; ``second_moment`` ``E[ĝ ĝᵀ]`` ``(C, C)``; ``covariance``
    ``Cov[ĝ]`` (``Σ / P`` for a group-local rule, ``Σ`` the covariance of one group's ``g``);
    ``mean_stderr`` and ``stderr``: the standard errors of ``mean`` and of every entry of
    ``covariance`` (Monte Carlo; zeros on an exact path); ``cell_totals`` ``E[T]`` ``(2, C)``
    and ``cell_second`` ``E[T_{rc} T_{r'c'}]`` ``(2, C, 2, C)`` of one group; ``num_groups``
    ``P``; ``path`` the path that computed them."""

    mean: jax.Array
    second_moment: jax.Array
    covariance: jax.Array
    mean_stderr: jax.Array
    stderr: jax.Array
    cell_totals: jax.Array
    cell_second: jax.Array
    num_groups: int = eqx.field(static=True)
    path: str = eqx.field(static=True)

    @property
    def squared(self):
        """``E[ĝ ∘ ĝ] = E[ĝ]² + diag Cov[ĝ]`` (what Adam's second-moment estimate tracks)."""
        return jnp.diagonal(self.second_moment, axis1=-2, axis2=-1)


def gradient_map(probs, surrogate: str):
    """``L(π)`` with ``g = L w`` (module docstring): ``I − π 1ᵀ`` or ``J(π)``."""
    C = probs.shape[-1]
    if surrogate == "probability":
        return jnp.diag(probs) - jnp.outer(probs, probs)
    return jnp.eye(C, dtype=probs.dtype) - jnp.outer(probs, jnp.ones((C,), probs.dtype))


# --------------------------------------------------------------------------- the paths


def counts_second_moments(rule, q1, q0, probs, G, t, C, max_group_size: int | None = None):
    """The ``"counts"`` path: ``(W, M2)``, ``E[T]`` ``(2, C)`` and ``E[T_{rc} T_{r'c'}]``
    ``(2, C, 2, C)`` of a count rule (module docstring); ``max_group_size``: ``G`` is data
    below it (:func:`~simplexlab.theory._finite_paths.count_advantages`)."""
    # A(0, k), k = 0..G−1; A(1, k), k = 1..G (zero beyond G, where G is data)
    a0, a1 = count_advantages(rule, probs, G, t, C, max_group_size)
    Q = jnp.sum(q1)
    pad = max_group_size is not None
    b1 = binomial_pmf(G - 1, Q, max_group_size - 1 if pad else None)  # successes of G − 1
    b2 = binomial_pmf(G - 2, Q, max_group_size - 2 if pad else None)  # successes of G − 2
    W = jnp.stack([G * q0 * jnp.sum(b1 * a0), G * q1 * jnp.sum(b1 * a1)])
    pair = G * (G - 1.0)
    s11 = jnp.sum(a1[1:] ** 2 * b2)  # k = 2..G
    s00 = jnp.sum(a0[:-1] ** 2 * b2)  # k = 0..G−2
    s10 = jnp.sum(a1[:-1] * a0[1:] * b2)  # k = 1..G−1
    d1, d0 = jnp.sum(a1**2 * b1), jnp.sum(a0**2 * b1)
    m11 = pair * s11 * jnp.outer(q1, q1) + jnp.diag(G * d1 * q1)
    m00 = pair * s00 * jnp.outer(q0, q0) + jnp.diag(G * d0 * q0)
    m10 = pair * s10 * jnp.outer(q1, q0)
    M2 = jnp.stack([jnp.stack([m00, m10.T]), jnp.stack([m10, m11])])  # [r, r', c, c']
    return W, jnp.transpose(M2, (0, 2, 1, 3))


def _enumerate_second_moments(rule, q1, q0, probs, G, t, C, cells):
    """The ``"enumerate"`` path: ``(W, M2)`` from every outcome's cell totals."""
    cell_of = _enumeration_tables(G, cells)[3]
    dt = probs.dtype
    prob, adv = enumeration_outcomes(rule, q1, q0, probs, G, t, C, cells)
    n = len(cells)
    # an outcome of probability 0 may have a non-finite advantage (a log-probability of -inf)
    a = jnp.where(prob[:, None] > 0, adv, 0.0)
    rows = jax.lax.broadcasted_iota(jnp.int32, cell_of.shape, 0)
    per = jnp.zeros((cell_of.shape[0], n), dt).at[rows, jnp.asarray(cell_of)].add(a)
    mean = prob @ per
    second = (per * prob[:, None]).T @ per
    idx = np.array([rr * C + mm for rr, mm in cells])
    W = jnp.zeros((2 * C,), dt).at[idx].set(mean).reshape(2, C)
    M2 = jnp.zeros((2 * C, 2 * C), dt).at[idx[:, None], idx[None, :]].set(second)
    return W, M2.reshape(2, C, 2, C)


def moments_size(rule: AbstractGroupRule, K: int, M: int, G: int, active,
                 bound: int = MAX_SIZE, *, traced: bool = False) -> dict:
    """Table entries of each second-moment path at these sizes (``None``: does not apply; the
    partition programme's counted up to ``bound``, a lower bound beyond it). ``traced``: the
    group size is data below ``G`` (the counts and clusters paths serve it)."""
    n = len(active[0]) + len(active[1])
    local = rule.group_local
    symmetric = rule.structure in ("counts", "clusters") and local
    return {"counts": ((G + 1) * G if rule.structure == "counts" and local
                       and (not traced or takes_mask(rule)) else None),
            "enumerate": enumeration_size(G, n) * (G + n) if local and not traced else None,
            "clusters": (cluster_second_size(G, len(active[0]), len(active[1]),
                                             bound=bound, traced=traced)
                         if symmetric and (not traced or takes_mask(rule)) else None)}


def choose_moments_path(rule: AbstractGroupRule, K, M, G, active, path, max_size, *,
                        allow_montecarlo: bool, max_group_size: int | None = None) -> str:
    """The second-moment path to take (static): ``path`` itself, checked, or the first exact one
    that fits within ``max_size`` table entries ("auto"), else Monte Carlo where allowed.
    ``max_group_size``: the group size is data below it (the counts and clusters paths)."""
    if path not in MOMENT_PATHS:
        extra = " (the rules' own reductions give the mean only)" if path == "rule" else ""
        raise ValueError(f"unknown second-moment path {path!r}{extra}; choose one of "
                         f"{MOMENT_PATHS}")
    traced = max_group_size is not None
    G = max_group_size if traced else G
    return pick_path(moments_size(rule, K, M, G, active, max_size, traced=traced), path, G, K, M,
                     max_size, allow_montecarlo=allow_montecarlo, what="second-moment path",
                     applies=" to the second moment", per_entry=8,
                     max_group_size=max_group_size)


def cell_second_moments(rule: AbstractGroupRule, probs, K: int, group_size, *,
                        verifier: Verifier, path: str = "auto", t=0.0,
                        max_size: int = MAX_SIZE, zero_rates=None,
                        max_group_size: int | None = None):
    """``(W, M2, path)``: ``E[T]`` ``(2, C)`` and ``E[T_{rc} T_{r'c'}]`` ``(2, C, 2, C)`` of one
    group of ``rule`` at ``probs`` on an exact path (module docstring); ``max_group_size``:
    ``group_size`` is data below it (the counts and clusters paths)."""
    probs = jnp.asarray(probs)
    C = probs.shape[-1]
    G = group_size
    active = active_cells(verifier, K, C - K, zero_rates)
    chosen = choose_moments_path(rule, K, C - K, G, active, path, max_size,
                                 allow_montecarlo=False, max_group_size=max_group_size)
    q1, q0 = _cells(verifier, probs, K)
    if max_group_size is not None:
        G = jnp.asarray(G, probs.dtype)
    if chosen == "counts":
        W, M2 = counts_second_moments(rule, q1, q0, probs, G, t, C, max_group_size)
    elif chosen == "clusters":
        W, M2 = clusters_second_moments(rule, q1, q0, probs, G, t, C, *active,
                                        max_group_size)
    else:
        cells = tuple((1, m) for m in active[0]) + tuple((0, m) for m in active[1])
        W, M2 = _enumerate_second_moments(rule, q1, q0, probs, G, t, C, cells)
    return W, M2, chosen


def _symmetric(a):
    return 0.5 * (a + jnp.swapaxes(a, -1, -2))


def _montecarlo_moments(rule, probs, verifier, K, G, t, P, L, scale, num_samples, key):
    """``StepMoments`` from sampled batches (module docstring)."""
    C = probs.shape[-1]
    per = sampled_cell_totals(rule, probs, verifier, K, G, t, C, num_samples, key)  # (N, B, 2C)
    N, B = per.shape[:2]
    g = scale * jnp.einsum("ij,nbj->nbi", L, per[..., :C] + per[..., C:])  # one group's g
    cells = per.reshape(N * B, 2 * C)
    W = jnp.mean(cells, 0).reshape(2, C)
    M2 = (cells.T @ cells / (N * B)).reshape(2, C, 2, C)
    if not rule.group_local and P == B > 1:  # the batch's mean gradient: one per batch
        g = jnp.mean(g, 1, keepdims=True)
    n = g.shape[0] * g.shape[1]
    mean = jnp.mean(g, (0, 1))
    dev = g - mean
    prods = dev[..., :, None] * dev[..., None, :]  # (N, B', C, C)
    per_batch = jnp.mean(prods, 1)  # the groups of one batch are not independent
    cov = jnp.sum(prods, (0, 1)) / (n - 1)
    se = jnp.std(per_batch, 0, ddof=1) / jnp.sqrt(N)
    mean_se = jnp.std(jnp.mean(g, 1), 0, ddof=1) / jnp.sqrt(N)
    if rule.group_local and P > 1:  # independent groups: Σ / P
        cov, se, mean_se = cov / P, se / P, mean_se / jnp.sqrt(P)
    cov = _symmetric(cov)
    return StepMoments(mean, cov + jnp.outer(mean, mean), cov, mean_se, se, W, M2, P,
                       "montecarlo")


def step_moments(W, M2, probs, scale, surrogate, num_groups: int, path: str) -> StepMoments:
    """:class:`StepMoments` of a group-local rule from one group's cell moments ``(W, M2)``
    (exact paths): the linear image of module docstring, the covariance over ``num_groups``."""
    L = gradient_map(probs, surrogate)
    u = jnp.sum(W, 0)
    U = jnp.sum(M2, (0, 2))  # E[u uᵀ], u = T_0 + T_1
    mean = scale * (L @ u)
    cov = _symmetric(scale**2 * (L @ U @ L.T) - jnp.outer(mean, mean)) / num_groups
    zero = jnp.zeros_like(cov)
    return StepMoments(mean, cov + jnp.outer(mean, mean), cov, jnp.zeros_like(mean), zero, W,
                       M2, num_groups, path)


def check_num_groups(rule: AbstractGroupRule, num_groups, who: str) -> int:
    """``P`` (groups per step on the same parameters), checked: an integer ``>= 1``; for a rule
    that normalises over its batch, 1 (one group's step) or the rule's ``num_groups``."""
    P = as_int(num_groups, f"{who}: num_groups (P, groups per step on the same parameters)",
               lower=1)
    if not rule.group_local and P not in (1, rule.num_groups):
        raise ValueError(f"{who}: the rule normalises over its batch of {rule.num_groups} "
                         f"groups: num_groups must be 1 (one group's step, as the bandit's "
                         f"prompts take it) or {rule.num_groups} (the batch's mean step); got "
                         f"{P}")
    return P


def expected_moments(rule: AbstractGroupRule, probs, K: int, group_size: int, *,
                     verifier: Verifier | None = None, surrogate: str = "log_likelihood",
                     reduction: str = "mean", num_groups: int = 1, path: str = "auto", t=0.0,
                     max_size: int = MAX_SIZE, num_samples: int = 4096, key=None,
                     zero_rates: tuple | None = None,
                     max_group_size: int | None = None) -> StepMoments:
    r"""The mean, second moment and covariance of one step's gradient ``ĝ = Δθ/η`` of ``rule``
    at the full policy ``probs`` (``C`` modes, the first ``K`` good), the step averaging
    ``num_groups`` groups drawn on the same parameters (module docstring). ``path="auto"``
    takes ``"counts"``, then ``"enumerate"``, then ``"clusters"`` where they apply within
    ``max_size`` table entries, else Monte Carlo (``num_samples`` groups or batches, ``key``);
    the result names the path and, for Monte Carlo, the standard errors. One compiled program
    per setting; with ``max_group_size`` (a static bound) ``group_size`` is data and one program
    serves every group size up to the bound (the counts and clusters paths; their arrays padded
    to the bound, equal to the per-G program's to round-off)."""
    verifier = Verifier() if verifier is None else verifier
    G = check_settings("expected_moments", group_size, surrogate, reduction, "auto", rule,
                       max_group_size)
    P = check_num_groups(rule, num_groups, "expected_moments")
    if np.ndim(probs) != 1:
        raise ValueError(f"expected_moments: probs must be one policy of shape (C,); got shape "
                         f"{np.shape(probs)}")
    # finite, >= 0 and summing to 1: a ValueError here, a run-time error under a trace
    probs = check_simplex(jnp.asarray(probs, dtype=jnp.result_type(float)),
                          "expected_moments: probs (the policy)")
    K = as_int(K, "expected_moments: K", lower=1)
    if K > probs.shape[0]:
        raise ValueError(f"expected_moments: need K <= C = {probs.shape[0]} good modes; got "
                         f"K = {K}")
    C = probs.shape[0]
    probs = check_time(t, "expected_moments", probs)
    rule = rule.checked()  # its parameters' domains, where they are traced
    num_samples = as_int(num_samples, "expected_moments: num_samples", lower=2)
    max_size = as_int(max_size, "expected_moments: max_size", lower=1)
    zero_rates = known_zero_rates(verifier) if zero_rates is None else zero_rates
    chosen = choose_moments_path(rule, K, C - K, G, active_cells(verifier, K, C - K, zero_rates),
                                 path, max_size, allow_montecarlo=True,
                                 max_group_size=max_group_size)
    probs = checked_one_group_size(G, max_group_size, rule, probs, "expected_moments")
    if chosen == "montecarlo":  # its arrays, before they are built (G = 10^9: 327 TB)
        B = rule.num_groups
        _check_memory(f"expected_moments: path='montecarlo' at G = {G} with C = {C} modes, "
                      f"num_samples = {num_samples:,} batches of {B * G:,} rollouts",
                      montecarlo_bytes(num_samples, B, G, C) + 8 * num_samples * B * C * C,
                      "lower num_samples (the standard error grows as 1/sqrt(num_samples)) or "
                      "the group size")
    key = jax.random.key(0) if key is None else key
    return _expected_moments(rule, probs, verifier, t, key, G, K=K, P=P, path=chosen,
                             surrogate=surrogate, reduction=reduction, max_size=max_size,
                             num_samples=num_samples, zero_rates=zero_rates,
                             max_group_size=max_group_size)


@eqx.filter_jit
def _expected_moments(rule, probs, verifier, t, key, G, *, K, P, path, surrogate, reduction,
                      max_size, num_samples, zero_rates, max_group_size):
    """:func:`expected_moments` after its checks, as one compiled program per setting (``G``
    an array where the group size is data: one program for every value)."""
    return group_step_moments(rule, probs, K, G, verifier=verifier, surrogate=surrogate,
                              reduction=reduction, num_groups=P, path=path, t=t,
                              max_size=max_size, num_samples=num_samples, key=key,
                              zero_rates=zero_rates, max_group_size=max_group_size)


def group_step_moments(rule, probs, K, G, *, verifier, surrogate, reduction, num_groups, path,
                       t, max_size, num_samples, key, zero_rates,
                       allow_montecarlo: bool = True,
                       max_group_size: int | None = None) -> StepMoments:
    """:func:`expected_moments` without its checks (inside a trace: the finite-group system's
    optimizer fields call it; there ``"auto"`` does not take Monte Carlo)."""
    scale = 1.0 / G if reduction == "mean" else 1.0
    C = probs.shape[-1]
    active = active_cells(verifier, K, C - K, zero_rates)
    chosen = choose_moments_path(rule, K, C - K, G, active, path, max_size,
                                 allow_montecarlo=allow_montecarlo,
                                 max_group_size=max_group_size)
    if chosen == "montecarlo":
        return _montecarlo_moments(rule, probs, verifier, K, G, t, num_groups,
                                   gradient_map(probs, surrogate), scale, num_samples,
                                   jax.random.key(0) if key is None else key)
    W, M2, chosen = cell_second_moments(rule, probs, K, G, verifier=verifier, path=chosen,
                                        t=t, max_size=max_size, zero_rates=zero_rates,
                                        max_group_size=max_group_size)
    return step_moments(W, M2, probs, scale, surrogate, num_groups, chosen)

