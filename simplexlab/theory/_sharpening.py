r"""Sharpening-collapse theory (SC §2, App. A–G).

- Theorem 2.2 (eq. 4): batch-optimal policy
  $\hat\pi(o_i) \propto \pi_{ref}(o_i)\exp(N_i A_i/(\beta G))$ and its partition function
  $Z'(q)$;
- Theorem 2.3: the lower bounds on $Z'(q)$ (general advantages; normalised binary
  advantages with the probability gap $\Delta_\pi$);
- Theorem 2.4 / E.1: the Case-1 upper and Case-2 lower bounds on the induced logit shift, and the
  Corollary 2.2 / F.1 ratio $\mathcal R$ (general and well-conditioned forms);
- Theorem 2.1 (eq. 2): the KL-optimal (infinite-sample) policy
  $\pi^* \propto \pi_{ref}\exp(A/\beta)$, which by Corollary 2.1 never lowers a correct
  mode;
- App. B (Theorem B.1, eq. 6): one ascent step of a tabular softmax policy on the batch objective
  (:func:`batch_objective_step`) and the geometric interpolation
  $\pi_t^{1-c}\hat\pi^{c}$ it is compared with (:func:`geometric_interpolation`);
- §2.3 / App. D: the target logit shifts $y_i = N_i|A_i|/(\beta G)$
  (:func:`target_logit_shifts`) and the logit shift a minimum-norm parameter update that fits
  them induces elsewhere (:func:`induced_logit_shift`), the quantity Theorem 2.4 bounds;
- §2.4 / App. G: the Cat/Dog/Persian/Siamese toy's embeddings (one definition, used by the
  simulator :class:`simplexlab.sim.SoftmaxClassifier`), its kernel values $\lambda$,
  $\rho$, and $\mathcal R$ evaluated on a sampled batch (:func:`batch_ratio_r`).

Paper vs computation (the computation wins, see the tests):

- Theorem 2.2 says $\hat\pi$ maximises Eq. (3), the *log-likelihood* surrogate
  $\frac1G\sum_s A_s\log\pi(o^{(s)}) - \beta\,KL$. It does not: with any sampled negative
  advantage that objective is unbounded above (send that mode's probability to 0). The closed
  form (4) is the maximiser of the *probability-linear* surrogate
  $\sum_i \pi(o_i) N_i A_i / G - \beta\,KL(\pi\|\pi_{ref})$ (Gibbs variational principle),
  which is what App. B's proof actually differentiates.
- Corollary 2.2 (and F.1) print $\mathcal R$ with $N_{o'}$ multiplying only the first
  term, but dividing the two bounds of Theorem 2.4 multiplies *both* terms by $N_{o'}$, as
  App. F's own simplified form $N_{o'}[\frac{y_k}{A_{sum}}(\lambda/\rho + G - 1) - 1]$
  does; the main-text simplified form drops that factor. :func:`ratio_r` defaults to the actual
  ratio of the Theorem 2.4 bounds (``form="bounds"``); ``form="printed"`` gives the printed one.
- App. G states $\lambda \approx \|e_{Persian}\|^2 = 0.8775$; for
  $e_{Persian} = [0.75, 0.5, 0.25, 0.1]$ it is $0.885$, so the ratios
  $\lambda/\rho$ are 1.394 / 1.580 / 1.735, not 1.38 / 1.57 / 1.72 (see
  :func:`toy_kernel_values`).
"""

from __future__ import annotations

from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import (
    check,
    check_broadcast,
    check_finite,
    check_number,
    check_pair,
    check_simplex,
    xp,
)
from ._geometry import _jac_action

__all__ = [
    "TOY_LABELS",
    "TOY_SIMILARITIES",
    "batch_objective_step",
    "batch_optimal_policy",
    "batch_ratio_r",
    "geometric_interpolation",
    "induced_logit_shift",
    "kl_optimal_policy",
    "log_batch_partition_function",
    "normalized_binary_advantages",
    "ratio_r",
    "ratio_r_simplified",
    "target_logit_shifts",
    "theorem24_bounds",
    "toy_embeddings",
    "toy_kernel_values",
    "z_prime_lower_bound",
    "z_prime_lower_bound_normalized",
]


def _float(x):
    return jnp.asarray(x, dtype=jax.dtypes.canonicalize_dtype(jnp.float64))


def _num(x, name):
    """A finite real number or array (strings and the like refused), as float64."""
    return check_finite(_float(check_number(x, name)), name)


def _check_group_size(group_size):
    g = _num(group_size, "group_size G")
    return check(g, lambda a: (a < 1) | (a != xp.round(a)), "group_size G must be an integer >= 1")


def _check_beta(beta):
    beta = _num(beta, "beta (KL coefficient)")
    return check(beta, lambda a: a <= 0, "beta (KL coefficient) must be > 0")


def _check_counts(counts):
    counts = _num(counts, "counts N_i")
    counts = check(counts, lambda a: (a < 0) | (a != xp.round(a)),
                   "counts N_i must be non-negative integers")
    return check(counts.sum(-1), lambda a: a <= 0, "counts must sum to G >= 1"), counts


def _check_ref(pi_ref):
    pi_ref = check_simplex(_float(check_number(pi_ref, "pi_ref (reference policy)")),
                           "pi_ref (reference policy)")
    return check(pi_ref, lambda a: a <= 0, "pi_ref must be > 0 on every mode")


def log_batch_partition_function(pi_ref, counts, advantages, beta):
    r"""``log Z'(q)``, Theorem 2.2: $Z' = \sum_j \pi_{ref}(o_j)\exp(N_j A_j/(\beta G))$,
    $G = \sum_j N_j$. Last axis = modes; ``advantages`` $A_j$ per mode (unused where
    ``N_j = 0``)."""
    check_broadcast(pi_ref=pi_ref, counts=counts, advantages=advantages)
    pi_ref = _check_ref(pi_ref)
    g, counts = _check_counts(counts)
    adv = _num(advantages, "advantages")
    beta = _check_beta(beta)
    logits = jnp.log(pi_ref) + counts * adv / (beta[..., None] * g[..., None])
    return jax.nn.logsumexp(logits, axis=-1)


def kl_optimal_policy(pi_ref, advantages, beta):
    r"""KL-optimal (infinite-sample) policy, Theorem 2.1 eq. (2):
    $\pi^*(o) = \pi_{ref}(o)\exp(A(q,o)/\beta) / Z(q)$, the maximiser of eq. (1)
    $E_{o\sim\pi}[A] - \beta KL(\pi\|\pi_{ref})$. Last axis = modes.

    Corollary 2.1: with a common $A_+ \ge 0$ on the correct modes and $A_- \le 0$
    elsewhere, $\pi^*(o) \ge \pi_{ref}(o)$ for every correct mode (moderate sharpening)."""
    check_broadcast(pi_ref=pi_ref, advantages=advantages)
    pi_ref = _check_ref(pi_ref)
    adv = _num(advantages, "advantages")
    beta = _check_beta(beta)
    return jax.nn.softmax(jnp.log(pi_ref) + adv / beta[..., None], axis=-1)


def batch_optimal_policy(pi_ref, counts, advantages, beta):
    r"""Batch-optimal policy, Theorem 2.2 eq. (4):
    $\hat\pi(o_i) = \pi_{ref}(o_i)\exp(N_i A_i/(\beta G)) / Z'(q)$.

    It is the maximiser of $\sum_i \pi(o_i) N_i A_i/G - \beta KL(\pi\|\pi_{ref})$ (the
    probability-linear surrogate; see the module docstring on Eq. 3). Unsampled modes
    (``N_i = 0``) are all scaled by the same factor $1/Z'$.
    """
    check_broadcast(pi_ref=pi_ref, counts=counts, advantages=advantages)
    pi_ref = _check_ref(pi_ref)
    g, counts = _check_counts(counts)
    adv = _num(advantages, "advantages")
    beta = _check_beta(beta)
    return jax.nn.softmax(jnp.log(pi_ref) + counts * adv / (beta[..., None] * g[..., None]),
                          axis=-1)


SURROGATES = ("log_likelihood", "probability")


def _check_positive_policy(pi, name):
    pi = check_simplex(_float(check_number(pi, name)), name)
    return check(pi, lambda a: a <= 0, f"{name} must be > 0 on every mode")


def batch_objective_step(pi, pi_ref, counts, advantages, beta, eta, *,
                         surrogate: str = "log_likelihood", natural: bool = False):
    r"""One ascent step of rate ``eta`` on the logits $z$ of a tabular softmax policy
    $\pi = \mathrm{softmax}(z)$ (at the current policy ``pi``) on the batch objective of SC
    App. B, $\hat J(\pi) = \sum_i \frac{N_i}{G} A_i\, s(\pi_i) - \beta\,KL(\pi\|\pi_{ref})$;
    returns the updated policy $\mathrm{softmax}(\log\pi + \eta\,d)$.

    ``surrogate="log_likelihood"``: $s = \log$ (eq. 3, the form App. B writes);
    ``"probability"``: $s(\pi_i) = \pi_i$ (the objective whose maximiser is eq. 4, see
    :func:`batch_optimal_policy`). With $u = \partial\hat J/\partial\pi$ (``N A/(G\pi) -
    \beta\log(\pi/\pi_{ref})`` resp. ``N A/G - \beta\log(\pi/\pi_{ref})``, up to a constant),
    ``natural=False`` is the plain gradient $d = \nabla_z\hat J = \pi\odot u -
    \pi\,(\pi\cdot u)$ (Theorem B.1's $\theta^+ = \theta + \eta\nabla_\theta\hat J$ with
    $\theta = z$), ``natural=True`` the natural-gradient (mirror-ascent) step
    $d = u$, the Fisher matrix $\mathrm{Diag}(\pi) - \pi\pi^\top$ pseudo-inverted
    (the constant it leaves is dropped by the softmax). Last axis = modes; ``pi`` and ``pi_ref``
    > 0 on every mode."""
    if surrogate not in SURROGATES:
        raise ValueError(f"surrogate must be one of {SURROGATES}; got {surrogate!r}")
    check_broadcast(pi=pi, pi_ref=pi_ref, counts=counts, advantages=advantages)
    pi = _check_positive_policy(pi, "pi (current policy)")
    pi_ref = _check_ref(pi_ref)
    g, counts = _check_counts(counts)
    adv = _num(advantages, "advantages")
    beta = _check_beta(beta)
    eta = check(_num(eta, "eta (step size)"), lambda a: a <= 0, "eta (step size) must be > 0")
    w = counts * adv / g[..., None]
    if surrogate == "log_likelihood":
        w = w / pi
    u = w - beta[..., None] * (jnp.log(pi) - jnp.log(pi_ref))
    d = u if natural else _jac_action(pi, u)  # J(π) u, the plain gradient on the logits
    return jax.nn.softmax(jnp.log(pi) + eta[..., None] * d, axis=-1)


def geometric_interpolation(pi, target, weight):
    r"""Theorem B.1 eq. (6): $\pi_{t+1} \propto \pi_t^{1-c}\,\hat\pi^{c}$, the geometric
    interpolation of weight $c$ (``weight``; $c = \eta\beta$ in eq. 6) between the
    current policy ``pi`` and the target ``target`` (the batch-optimal $\hat\pi$), i.e.
    $\mathrm{softmax}((1-c)\log\pi_t + c\log\hat\pi)$. Last axis = modes; both > 0."""
    check_broadcast(pi=pi, target=target)
    pi = _check_positive_policy(pi, "pi (current policy)")
    target = _check_positive_policy(target, "target")
    c = _num(weight, "weight (c)")[..., None]
    return jax.nn.softmax((1 - c) * jnp.log(pi) + c * jnp.log(target), axis=-1)


def target_logit_shifts(counts, advantages, beta):
    r"""SC §2.3's target logit shifts $y_i = N_i|A(q, o_i)|/(\beta G)$ per mode (last axis),
    $G = \sum_i N_i$: the shift of $\log\hat\pi$ eq. (4) asks of mode $o_i$
    (the advantage's sign absorbed into the gradient direction, footnote 1); 0 where
    $N_i = 0$. Theorem 2.4's $A_{sum} = \sum_{s=1}^G y_s$ sums them over the batch
    entries, i.e. $\sum_i N_i y_i$."""
    check_broadcast(counts=counts, advantages=advantages)
    g, counts = _check_counts(counts)
    adv = _num(advantages, "advantages")
    beta = _check_beta(beta)
    return counts * jnp.abs(adv) / (beta[..., None] * g[..., None])


def induced_logit_shift(batch_gradients, gradients, y):
    r"""SC §2.3 / App. D: the logit shifts $\Delta f(q', o') = \nabla_\theta f(q',
    o')^\top\Delta\theta$ that the minimum-norm parameter update fitting the batch's target shifts
    induces, $\Delta\theta = \arg\min\{\|\delta\|_2 : \mathbf J_q\delta = \mathbf y\}
    = \mathbf J_q^\top\mathbf K_{qq}^{-1}\mathbf y$, $\mathbf K_{qq} = \mathbf J_q\mathbf
    J_q^\top$, so $\Delta f = \mathbf k_{q'}^\top\mathbf K_{qq}^{-1}\mathbf y$. Needs
    $\mathbf K_{qq}$ invertible (linearly independent batch gradients, as §2.3's
    $\mathbf K_{qq}^{-1}$ does; a mode repeated in the batch gives two equal rows).

    ``batch_gradients`` $\mathbf J_q$ ``(..., G, P)`` (row $s$: $\nabla_\theta
    f(q, o^{(s)})$), ``gradients`` ``(..., U, P)`` (row: $\nabla_\theta f(q', o')$ of each
    pair whose shift is wanted), ``y`` ``(..., G)``; returns ``(..., U)``."""
    J = _num(batch_gradients, "batch_gradients (J_q)")
    V = _num(gradients, "gradients")
    y = _num(y, "y (target shifts)")
    if J.ndim < 2 or V.ndim < 2 or J.shape[-1] != V.shape[-1] or y.shape[-1:] != J.shape[-2:-1]:
        raise ValueError(f"need batch_gradients (..., G, P), gradients (..., U, P) and y (..., G);"
                         f" got shapes {J.shape}, {V.shape}, {y.shape}")
    K = jnp.einsum("...gp,...hp->...gh", J, J)
    alpha = jnp.linalg.solve(K, y[..., None])[..., 0]
    return jnp.einsum("...up,...gp,...g->...u", V, J, alpha)


def _split(pi_ref, counts, correct):
    correct = jnp.asarray(correct)
    if correct.dtype != jnp.bool_:
        raise ValueError(f"correct must be a boolean mask; got dtype {correct.dtype}")
    check_broadcast(pi_ref=pi_ref, counts=counts, correct=correct)
    sampled = counts > 0
    return correct & sampled, ~correct & sampled


def z_prime_lower_bound(pi_ref, counts, correct, a_pos, a_neg, beta):
    r"""Theorem 2.3, first bound:
    $Z'(q) \ge 1 + \frac{1}{\beta G}[A_+\sum_{S^+} N_i\pi_{ref}(o_i) -
    |A_-|\sum_{S^-} N_j\pi_{ref}(o_j)]$ for binary advantages ``a_pos >= 0 > a_neg`` on correct /
    incorrect modes; ``correct`` is a boolean mask, $S^\pm$ the sampled correct/incorrect
    modes."""
    pi_ref = _check_ref(pi_ref)
    g, counts = _check_counts(counts)
    beta = _check_beta(beta)
    a_pos = check(_num(a_pos, "a_pos (A_+)"), lambda a: a < 0, "a_pos (A_+) must be >= 0")
    a_neg = check(_num(a_neg, "a_neg (A_-)"), lambda a: a >= 0, "a_neg (A_-) must be < 0")
    s_pos, s_neg = _split(pi_ref, counts, correct)
    w = counts * pi_ref
    return 1.0 + (a_pos * jnp.sum(jnp.where(s_pos, w, 0.0), -1)
                  - jnp.abs(a_neg) * jnp.sum(jnp.where(s_neg, w, 0.0), -1)) / (beta * g)


def normalized_binary_advantages(p_plus, sigma=None):
    r"""Normalised binary advantages of Theorem 2.3: $A_+ = (1-p^+)/\sigma$,
    $A_- = -p^+/\sigma$, with $\sigma = \sqrt{p^+(1-p^+)}$ (the group's population std)
    unless given. ``p_plus`` in ``(0, 1)``."""
    p = check(_num(p_plus, "p_plus"), lambda a: (a <= 0) | (a >= 1),
              "p_plus (batch accuracy) must lie in (0, 1)")
    sigma = jnp.sqrt(p * (1 - p)) if sigma is None else check(
        _num(sigma, "sigma"), lambda a: a <= 0, "sigma must be > 0")
    return (1 - p) / sigma, -p / sigma


def z_prime_lower_bound_normalized(pi_ref, counts, correct, beta, sigma=None):
    r"""Theorem 2.3, simplified bound for normalised binary advantages:
    $Z'(q) \ge 1 + \frac{p^+(1-p^+)}{\beta\sigma}\Delta_\pi$,
    $\Delta_\pi = \min_{S^+}\pi_{ref} - \max_{S^-}\pi_{ref}$, $p^+ = \sum_{S^+}N_i/G$.
    Needs at least one sampled correct and one sampled incorrect mode. Single instance (1-D)."""
    pi_ref = _check_ref(pi_ref)
    g, counts = _check_counts(counts)
    beta = _check_beta(beta)
    s_pos, s_neg = _split(pi_ref, counts, correct)
    p = jnp.sum(jnp.where(s_pos, counts, 0.0), -1) / g
    p = check(p, lambda a: (a <= 0) | (a >= 1),
              "the batch needs both sampled correct and sampled incorrect modes (0 < p+ < 1)")
    sigma = jnp.sqrt(p * (1 - p)) if sigma is None else check(
        _num(sigma, "sigma"), lambda a: a <= 0, "sigma must be > 0")
    gap = (jnp.min(jnp.where(s_pos, pi_ref, jnp.inf), -1)
           - jnp.max(jnp.where(s_neg, pi_ref, -jnp.inf), -1))
    return 1.0 + p * (1 - p) / (beta * sigma) * gap


def _check_kernel(lam_min, lam_max, rho_min, rho_max):
    lam_min, lam_max, rho_min, rho_max = (_num(x, n) for x, n in (
        (lam_min, "lam_min"), (lam_max, "lam_max"), (rho_min, "rho_min"), (rho_max, "rho_max")))
    rho_min = check(rho_min, lambda a: a <= 0, "rho_min must be > 0 (Theorem E.1, Step 1)")
    rho_max = check_pair(rho_max, rho_min, lambda a, b: a < b,
                          "need rho_max >= rho_min: (rho_max, rho_min)")
    lam_max = check_pair(lam_max, lam_min, lambda a, b: a < b,
                          "need lam_max >= lam_min: (lam_max, lam_min)")
    lam_min = check_pair(lam_min, rho_max, lambda a, b: a <= b,
                          "need lam_min > rho_max (Assumption 2.3, strict so lam - rho > 0): "
                          "(lam_min, rho_max)")
    return lam_min, lam_max, rho_min, rho_max


def _common(a_sum, group_size, y_k, n_o):
    """``A_sum > 0``, an integer ``G >= 1``, finite ``y_k`` and an integer ``0 <= N_{o'} <= G``."""
    a_sum = check(_num(a_sum, "a_sum (A_sum)"), lambda a: a <= 0, "a_sum (A_sum) must be > 0")
    g = _check_group_size(group_size)
    y_k = _num(y_k, "y_k")
    n_o = check(_num(n_o, "n_o (N_o')"), lambda a: (a < 0) | (a != xp.round(a)),
                "n_o (N_o', the count of o' in the batch) must be an integer >= 0")
    n_o = check_pair(n_o, g, lambda a, b: a > b,
                     "n_o (N_o') must be <= group_size G: (n_o, group_size)")
    return a_sum, g, y_k, n_o


def theorem24_bounds(y_k, a_sum, n_o, group_size, lam_min, lam_max, rho_min, rho_max, eta=1.0):
    r"""Theorem 2.4 (= E.1) bounds on the induced logit shift at $q'$; returns
    ``(case1_upper, case2_lower)``:

    - batch-unseen $o'$: $\Delta f \le \eta\rho_{max}A_{sum}/(\lambda_{min} +
      (G-1)\rho_{min})$;
    - batch-seen $o' = o^{(k)}$: $\Delta f \ge \frac{\eta N_{o'}(\lambda_{min} -
      \rho_{min})}{\lambda_{max}-\rho_{max}}\big(y_k - \frac{\rho_{max}A_{sum}}{\lambda_{max} +
      (G-1)\rho_{max}}\big)$.
    """
    lam_min, lam_max, rho_min, rho_max = _check_kernel(lam_min, lam_max, rho_min, rho_max)
    a_sum, g, y_k, n_o = _common(a_sum, group_size, y_k, n_o)
    eta = check(_num(eta, "eta (step size)"), lambda a: a <= 0, "eta (step size) must be > 0")
    upper = eta * rho_max * a_sum / (lam_min + (g - 1) * rho_min)
    lower = (eta * n_o * (lam_min - rho_min) / (lam_max - rho_max)
             * (y_k - rho_max * a_sum / (lam_max + (g - 1) * rho_max)))
    return upper, lower


def ratio_r(y_k, a_sum, n_o, group_size, lam_min, lam_max, rho_min, rho_max, *,
            form: str = "bounds"):
    r"""Corollary 2.2 (= F.1) ratio $\mathcal R$ of the Case-2 lower bound to the Case-1
    upper bound of Theorem 2.4.

    ``form="bounds"`` (default) is that ratio as computed:
    $N_{o'}\frac{\lambda_{min}-\rho_{min}}{\lambda_{max}-\rho_{max}}\big[\frac{y_k}{A_{sum}}
    \frac{\lambda_{min}+(G-1)\rho_{min}}{\rho_{max}} - \frac{\lambda_{min}+(G-1)\rho_{min}}
    {\lambda_{max}+(G-1)\rho_{max}}\big]$. ``form="printed"`` is the formula as printed in
    Cor. 2.2 / F.1, with $N_{o'}$ on the first term only; the two agree iff
    $N_{o'} = 1$.
    """
    lam_min, lam_max, rho_min, rho_max = _check_kernel(lam_min, lam_max, rho_min, rho_max)
    a_sum, g, y_k, n_o = _common(a_sum, group_size, y_k, n_o)
    c = lam_min + (g - 1) * rho_min
    first = y_k / a_sum * c / rho_max
    second = c / (lam_max + (g - 1) * rho_max)
    damp = (lam_min - rho_min) / (lam_max - rho_max)
    if form == "bounds":
        return damp * n_o * (first - second)
    if form == "printed":
        return damp * (n_o * first - second)
    raise ValueError(f"form must be 'bounds' or 'printed'; got {form!r}")


def ratio_r_simplified(y_k, a_sum, n_o, group_size, lam_over_rho, *, form: str = "appendix"):
    r"""Well-conditioned kernel ($\lambda_{min}=\lambda_{max}=\lambda$,
    $\rho_{min}=\rho_{max}=\rho$) form of $\mathcal R$.

    ``form="appendix"`` (App. F, and the exact limit of :func:`ratio_r`):
    $N_{o'}[\frac{y_k}{A_{sum}}(\lambda/\rho + G - 1) - 1]$; ``form="main"`` (Cor. 2.2 main
    text): $\frac{N_{o'} y_k}{A_{sum}}(\lambda/\rho + G - 1) - 1$.
    """
    a_sum, g, y_k, n_o = _common(a_sum, group_size, y_k, n_o)
    r = check(_num(lam_over_rho, "lam_over_rho"), lambda a: a <= 1,
              "lam_over_rho (lam/rho) must be > 1 (Assumption 2.3)")
    if form == "appendix":
        return n_o * (y_k / a_sum * (r + g - 1) - 1)
    if form == "main":
        return n_o * y_k / a_sum * (r + g - 1) - 1
    raise ValueError(f"form must be 'appendix' or 'main'; got {form!r}")


TOY_LABELS = ("Cat", "Dog", "Persian", "Siamese")
"""The toy's labels, in the row order of :func:`toy_embeddings` (SC §2.4)."""
TOY_SIMILARITIES = ("High", "Mid", "Low")
"""The Siamese variants of SC §2.4 / App. G, most to least similar to Persian."""
_E_CAT = ("0.5", "0.5", "0.5", "0.1")
_E_DOG = ("0.1", "0.1", "0.1", "0.9")
_E_PERSIAN = ("0.75", "0.5", "0.25", "0.1")
_E_SIAMESE = {"High": ("0.25", "0.5", "0.75", "0.1"), "Mid": ("0.1", "0.5", "0.9", "0.1"),
              "Low": ("0.0", "0.5", "1.0", "0.1")}
_PAPER = {"lambda": 0.8775, "rho": {"High": 0.635, "Mid": 0.56, "Low": 0.51},
          "lam_over_rho": {"High": 1.38, "Mid": 1.57, "Low": 1.72}}


def toy_kernel_values() -> dict:
    r"""App. G kernel values of the Cat/Dog/Persian/Siamese toy, computed in exact decimal
    arithmetic: $\lambda = \|e_{Persian}\|^2$, $\rho = e_{Persian}^\top e_{Siamese}$
    for the High/Mid/Low Siamese embeddings, and $\lambda/\rho$; alongside the values the
    paper prints (``"paper"``). The paper's $\lambda = 0.8775$ is an arithmetic slip:
    $0.75^2+0.5^2+0.25^2+0.1^2 = 0.885$.
    """
    ep = [Fraction(x) for x in _E_PERSIAN]
    lam = sum(x * x for x in ep)
    out = {"lambda": float(lam), "rho": {}, "lam_over_rho": {},
           "e_persian": [float(x) for x in ep], "paper": _PAPER}
    for name, es in _E_SIAMESE.items():
        rho = sum(a * Fraction(b) for a, b in zip(ep, es, strict=True))
        out["rho"][name] = float(rho)
        out["lam_over_rho"][name] = float(lam / rho)
    return out


def toy_embeddings(similarity: str = "High"):
    r"""The fixed feature embeddings of SC §2.4, rows in :data:`TOY_LABELS` order (Cat, Dog,
    Persian, Siamese), as a float64 NumPy ``(4, 4)`` array: $e_{Cat} = [0.5, 0.5, 0.5,
    0.1]$, $e_{Dog} = [0.1, 0.1, 0.1, 0.9]$, $e_{Persian} = [0.75, 0.5, 0.25, 0.1]$
    and the Siamese row of the chosen ``similarity`` (``"High"`` $[0.25, 0.5, 0.75, 0.1]$,
    ``"Mid"`` $[0.1, 0.5, 0.9, 0.1]$, ``"Low"`` $[0.0, 0.5, 1.0, 0.1]$). The one
    definition of the toy's embeddings: :func:`toy_kernel_values` and the simulator
    :class:`simplexlab.sim.SoftmaxClassifier` read the same constants."""
    if similarity not in _E_SIAMESE:
        raise ValueError(f"similarity must be one of {TOY_SIMILARITIES}; got {similarity!r}")
    rows = (_E_CAT, _E_DOG, _E_PERSIAN, _E_SIAMESE[similarity])
    return np.array([[float(Fraction(x)) for x in r] for r in rows], dtype=np.float64)


def batch_ratio_r(counts, advantages, seen, lam_over_rho):
    r"""Corollary 2.2's $\mathcal R$ (App. F well-conditioned form,
    :func:`ratio_r_simplified`) evaluated on one sampled batch.

    ``counts`` $N_m$ and ``advantages`` $A_m$ per mode (last axis; every rollout of a
    mode carries its mode's advantage, as with binary rewards), ``seen`` the index of the
    batch-seen mode $o'$. With Theorem 2.4's target shifts $y_i = N_i|A_i|/(\beta
    G)$ per batch entry ($\beta$ cancels in $\mathcal R$; ``β = 1``),
    $A_{sum} = \sum_{i=1}^G y_i = \sum_m N_m y_m$, $G = \sum_m N_m$:
    $\mathcal R = N_{o'}[\frac{y_{o'}}{A_{sum}}(\lambda/\rho + G - 1) - 1]$. NaN where
    the batch carries no update ($A_{sum} = 0$) or $o'$ is not in it."""
    check_broadcast(counts=counts, advantages=advantages)
    g, counts = _check_counts(counts)
    adv = _num(advantages, "advantages")
    seen = jnp.asarray(seen)
    if not jnp.issubdtype(seen.dtype, jnp.integer):
        raise ValueError(f"seen must be an integer mode index; got dtype {seen.dtype}")
    counts, adv = jnp.broadcast_arrays(counts, adv)
    y = target_logit_shifts(counts, adv, 1.0)
    a_sum = jnp.sum(counts * y, -1)
    pick = jnp.broadcast_to(seen, a_sum.shape)[..., None]
    n_o = jnp.take_along_axis(counts, pick, -1)[..., 0]
    y_k = jnp.take_along_axis(y, pick, -1)[..., 0]
    ok = (a_sum > 0) & (n_o > 0)
    r = ratio_r_simplified(y_k, jnp.where(ok, a_sum, 1.0), n_o, g, lam_over_rho)
    return jnp.where(ok, r, jnp.nan)
