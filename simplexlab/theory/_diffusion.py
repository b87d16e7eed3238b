r"""The noise of the bandit's SGD run: the diffusion approximation and the linear-noise
approximation of :class:`~simplexlab.theory.FiniteGroup`.

An SGD run at rate ``η`` steps ``θ ← θ + η ĝ``, the step's gradient ``ĝ`` with mean ``f(θ)``
(:class:`~simplexlab.theory.FiniteGroup`'s field) and covariance ``Σ(θ)/P``
(:func:`~simplexlab.theory.expected_moments`, ``P`` groups per step on the same parameters). In
the time ``t = step · η`` one step lasts ``η`` and adds the variance ``η² Σ/P = η dt Σ/P``, so
the run is approximated by the Itô SDE

    ``dθ = f(θ) dt + √(η/P) Σ(θ)^{1/2} dW``

(the diffusion approximation; Li, Tai & E, arXiv 1511.06251, Thm. 1: weak error ``O(η)``).
With ``modified=True`` the drift is the second-order stochastic modified equation's
``f − (η/2)(∂f) f`` (ibid., Thm. 3, written for a field that need not be a gradient: the SDE's
weak error is then ``O(η²)``, the ``O(η)`` bias of the ensemble mean closed; an ODE with that
drift alone is not, see below).

The **linear-noise approximation** follows the mean ``θ̄`` and the covariance ``C`` of ``θ``
across seeds without sampling, ``dθ̄/dt = f(θ̄)``,
``dC/dt = J C + C Jᵀ + (η/P) Σ(θ̄)`` (``J = ∂f/∂θ``, by forward-mode differentiation), and
pushes ``C`` to the coordinates ``(p, y, z, L_y)`` with their Jacobian ``D``: ``D C Dᵀ``. Its
error is of the order of the spread itself (``√η``): it holds while the seeds stay close.

**The mean to O(η²).** The seeds' spread (``C = O(η)``) shifts the mean of a nonlinear flow by
``O(η)`` too, as much as the modified drift does and often the other way: the ensemble mean of
the bandit is ``E[φ(θ)] = φ(θ̄) + ½ ∂²φ(θ̄) : C + O(η²)``, with
``dθ̄/dt = f̃(θ̄) + ½ ∂²f(θ̄) : C`` (``f̃`` the modified drift; third central moments are
``O(η²)``). :func:`linear_noise` with ``mean_correction=True`` on a ``Diffusion(...,
modified=True)`` integrates that: the second-order mean (weak error ``O(η²)``); the modified
drift alone leaves the noise's ``O(η)`` shift (measured on the bandit: it moves the mean the
wrong way, NOTES.md).

``θ`` is the policy's log-probabilities (``θ = log π``; the softmax forgets a constant, which
neither the field nor the noise moves: both sum to zero on the log-likelihood surrogate). Only
SGD is covered here.
"""

from __future__ import annotations

import math

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import as_int, error_if, is_concrete
from ._closed_forms import concentration
from ._finite import FiniteGroup
from ._optimizers import SGD
from ._rk4 import rk4
from ._state import State, check_state

__all__ = ["Diffusion", "LinearNoise", "NoisePaths", "Survival", "curvature", "linear_noise",
           "mode_survival", "modified_drift", "observables", "sde_paths", "state_from_theta",
           "theta_from_state"]

#: the coordinates :func:`observables` returns, in order (``y`` and ``z`` one entry per mode)
OBSERVABLES = ("p", "y", "z", "L_y")


def theta_from_state(state: State):
    """``θ = log π`` of a state (one point or a batch)."""
    return jnp.log(state.policy())


def state_from_theta(theta, K: int) -> State:
    """The ``(p, y, z)`` state of the softmax policy of logits ``θ`` (the first ``K`` good),
    without validation (inside a trace)."""
    pi = jax.nn.softmax(theta, -1)
    good, bad = pi[..., :K], pi[..., K:]
    p = jnp.sum(bad, -1)
    return State(p, good / jnp.sum(good, -1, keepdims=True), bad / p[..., None])


def observables(theta, K: int):
    """``(p, y_1..y_K, z_1..z_M, L_y)`` of the logits ``θ`` (last axis), one vector."""
    s = state_from_theta(theta, K)
    return jnp.concatenate([s.p[..., None], s.y, s.z, concentration(s.y)[..., None]], -1)


def _split(obs, K: int) -> dict:
    return {"p": obs[..., 0], "y": obs[..., 1:K + 1], "z": obs[..., K + 1:-1],
            "L_y": obs[..., -1]}


def _step_size(e, who: str):
    """The run's step size ``η`` as a 0-d array, refused unless a finite number ``> 0``."""
    if isinstance(e, jax.Array) and np.ndim(e) == 0 and is_concrete(e):
        e = float(e)
    if isinstance(e, bool) or not isinstance(e, int | float | np.integer | np.floating) \
            or not (math.isfinite(e) and e > 0):
        raise ValueError(f"{who}: eta (the run's step size η) must be a finite number > 0; got "
                         f"{e!r}")
    return jnp.asarray(float(e), jnp.result_type(float))


def modified_drift(field, theta, eta):
    r"""The second-order stochastic modified equation's drift ``f − (η/2)(∂f) f`` of the field
    ``field`` (a function of ``θ``) at ``θ`` (Li, Tai & E, arXiv 1511.06251, Thm. 3; the
    directional derivative by forward mode)."""
    f, jf = jax.jvp(field, (theta,), (field(theta),))
    return f - 0.5 * eta * jf


def curvature(fun, x, cov):
    r"""``½ ∂²fun(x) : cov = ½ Σ_ij cov_ij ∂_i ∂_j fun(x)`` (the mean shift of ``fun`` under a
    spread of covariance ``cov`` about ``x``): with ``cov = Σ_k l_k l_kᵀ`` (its symmetric
    eigendecomposition, round-off negative eigenvalues clipped), ``½ Σ_k D²fun(x)[l_k, l_k]`` by
    forward over forward mode."""
    lam, vec = jnp.linalg.eigh(0.5 * (cov + cov.T))
    cols = vec * jnp.sqrt(jnp.clip(lam, 0.0))[None, :]

    def second(v):
        return jax.jvp(lambda z: jax.jvp(fun, (z,), (v,))[1], (x,), (v,))[1]

    return 0.5 * jnp.sum(jax.vmap(second, in_axes=1)(cols), 0)


class Diffusion(eqx.Module):
    r"""The diffusion approximation of an SGD run of :attr:`dynamics` at rate ``eta`` (module
    docstring): ``dynamics`` a :class:`~simplexlab.theory.FiniteGroup` (SGD; its own ``eta`` 1,
    the time map ``t = step · η``; its ``num_groups`` ``P`` and ``moments_path`` set the noise),
    ``eta`` the run's step size ``η > 0``, ``modified`` the second-order drift
    ``f − (η/2)(∂f) f`` (Li, Tai & E, arXiv 1511.06251, Thm. 3)."""

    dynamics: FiniteGroup
    #: a 0-d array (checked to be a finite number > 0 when built): one compiled program serves
    #: every step size
    eta: jax.Array = eqx.field(kw_only=True, converter=lambda e: _step_size(e, "Diffusion"))
    modified: bool = eqx.field(default=False, static=True, kw_only=True)

    def __check_init__(self):
        if not isinstance(self.dynamics, FiniteGroup):
            raise ValueError(f"Diffusion: dynamics must be a FiniteGroup; got "
                             f"{type(self.dynamics).__name__}")
        opt = self.dynamics.optimizer
        if opt is not None and not isinstance(opt, SGD):
            raise ValueError(f"Diffusion: the diffusion approximation here is SGD's; got "
                             f"optimizer={opt!r}")
        d = self.dynamics.eta
        if is_concrete(d) and np.any(np.asarray(d) != 1.0):
            raise ValueError(f"Diffusion: the system's own eta must be 1 (the time map t = step "
                             f"· η; the run's η is Diffusion.eta); got {d!r}")
        if not isinstance(self.modified, bool):
            raise ValueError(f"Diffusion: modified must be True or False; got "
                             f"{self.modified!r}")

    def field(self, t, theta, K: int):
        """``f(θ)``: the mean step per unit time (:meth:`FiniteGroup.theta_drift`)."""
        return self.dynamics._theta_one(t, state_from_theta(theta, K))

    def drift(self, t, theta, K: int):
        """The SDE's drift: ``f``, or ``f − (η/2)(∂f) f`` with ``modified``."""
        if not self.modified:
            return self.field(t, theta, K)
        return modified_drift(lambda th: self.field(t, th, K), theta, self.eta)

    def step_covariance(self, t, theta, K: int):
        """``Σ(θ)/P``: the covariance of one step's gradient (checked finite at run time)."""
        probs = jax.nn.softmax(theta, -1)
        cov = self.dynamics._moments_one(t, probs, K, self.dynamics.moments_path,
                                         jax.random.key(self.dynamics.seed), False).covariance
        return error_if(cov, ~jnp.all(jnp.isfinite(cov)),
                        "Diffusion: the step covariance is not finite (the rule's advantages "
                        "are not finite at this policy, or the path left every finite policy: "
                        "a smaller eta or dt)")

    def diffusion(self, t, theta, K: int):
        """``√η (Σ/P)^{1/2}`` (symmetric square root; the covariance's round-off negative
        eigenvalues clipped to 0)."""
        lam, vec = jnp.linalg.eigh(self.step_covariance(t, theta, K))
        return jnp.sqrt(self.eta) * (vec * jnp.sqrt(jnp.clip(lam, 0.0))[None, :]) @ vec.T


class NoisePaths(eqx.Module):
    """Sample paths of the diffusion approximation: ``ts`` ``(n_save,)``, ``theta`` ``(paths,
    n_save, C)`` and the coordinates ``p``, ``y``, ``z``, ``L_y`` at the save points."""

    ts: jax.Array
    theta: jax.Array
    p: jax.Array
    y: jax.Array
    z: jax.Array
    L_y: jax.Array


class LinearNoise(eqx.Module):
    """The linear-noise approximation along the mean (a batch of starts: a leading axis on
    every array but ``ts``): ``ts``; the mean ``theta`` ``(n_save, C)``
    and its coordinates ``mean`` (``p``, ``y``, ``z``, ``L_y``); ``theta_cov`` ``C`` ``(n_save,
    C, C)``; ``cov`` the covariance of the coordinates ``(p, y, z, L_y)`` ``(n_save, n, n)``;
    ``std`` their across-seed standard deviations (a dict of ``p``, ``y``, ``z``, ``L_y``)."""

    ts: jax.Array
    theta: jax.Array
    theta_cov: jax.Array
    mean: dict
    cov: jax.Array
    std: dict


def _prepare(who, diffusion, state0, t1, n_save, batch=False):
    if not isinstance(diffusion, Diffusion):
        raise ValueError(f"{who}: diffusion must be a Diffusion; got {diffusion!r}")
    state0 = check_state(state0)
    if np.ndim(state0.p) > (1 if batch else 0):
        raise ValueError(f"{who}: state0 must be one point{' or one batch axis' if batch else ''}"
                         f"; got p of shape {np.shape(state0.p)}")
    if not (isinstance(t1, int | float | np.floating) and math.isfinite(t1) and t1 > 0):
        raise ValueError(f"{who}: t1 must be a finite number > 0; got {t1!r}")
    n_save = as_int(n_save, f"{who}: n_save", lower=2)
    C = state0.K + state0.M
    # one path's saved states (linear_noise: and its covariances; per start of a batch), before
    # anything is built
    _check_paths_fit(who, int(np.shape(state0.p)[0]) if np.ndim(state0.p) else 1, n_save, C)
    # the save points on the host, in float64 (an eager jnp.linspace is a program call of its
    # own; a compiled function takes them in the default float)
    return state0, np.linspace(0.0, float(t1), n_save)


#: the most Euler–Maruyama steps :func:`sde_paths` takes per path (``t1 / dt``): a smaller
#: ``dt`` is almost always a typo, and the Brownian tree refines to ``dt / 4`` at every step
MAX_SDE_STEPS = 10**7


def _dt(who, dt, t1):
    if dt is None:
        return float(t1) / 200
    if isinstance(dt, bool) or not (isinstance(dt, int | float | np.floating)
                                    and math.isfinite(dt) and 0 < dt <= t1):
        raise ValueError(f"{who}: dt must be a finite number in (0, t1]; got {dt!r}")
    if t1 / dt > MAX_SDE_STEPS:
        raise ValueError(f"{who}: dt = {dt!r} takes t1 / dt = {t1 / dt:.3g} steps per path, more "
                         f"than {MAX_SDE_STEPS:,}; raise dt")
    return float(dt)


def _key(who, key):
    """``key`` (``None``: ``jax.random.key(0)``), a JAX PRNG key: a ``ValueError`` otherwise."""
    if key is None:
        return jax.random.key(0)
    if not (isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
            and key.ndim == 0):
        raise ValueError(f"{who}: key must be one JAX PRNG key (jax.random.key(seed)); got "
                         f"{key!r}")
    return key


def _check_paths_fit(who, num_paths: int, n_save: int, C: int) -> None:
    """Refuse paths whose saved states (the linear-noise covariance too, ``C x C`` per save
    point) and per-path working arrays (the step covariance and its square root) cannot fit in
    half of this machine's memory."""
    from .._checks import host_memory_bytes

    need = 8 * num_paths * (n_save * (2 * C + 1 + C * C) + 8 * C * C)
    memory = host_memory_bytes()
    if memory is not None and need > memory // 2:
        raise ValueError(f"{who}: num_paths = {num_paths:,} paths with n_save = {n_save:,} save "
                         f"points over C = {C} modes need about {need:,} bytes, more than half "
                         f"of this machine's memory ({memory:,} bytes); lower num_paths or "
                         "n_save")


def _tolerances(who, rtol, atol):
    """``(rtol, atol)``: finite numbers >= 0, not both 0 (diffrax's step-size controller)."""
    for name, v in (("rtol", rtol), ("atol", atol)):
        if isinstance(v, bool) or not (isinstance(v, int | float | np.floating)
                                       and math.isfinite(v) and v >= 0):
            raise ValueError(f"{who}: {name} must be a finite number >= 0; got {v!r}")
    if rtol == 0 and atol == 0:
        raise ValueError(f"{who}: rtol and atol cannot both be 0 (no step would be accepted)")
    return float(rtol), float(atol)


def sde_paths(diffusion: Diffusion, state0: State, *, t1: float, num_paths: int, key=None,
              n_save: int = 11, dt: float | None = None,
              solver: diffrax.AbstractSolver | None = None) -> NoisePaths:
    r"""``num_paths`` sample paths of the diffusion approximation from ``state0`` over
    ``[0, t1]``: Euler–Maruyama (Itô; ``solver``: another diffrax SDE solver) at step ``dt``
    (default ``t1/200``) on a :class:`diffrax.VirtualBrownianTree` per path (keys split from
    ``key``): a path's Brownian motion is fixed by its key, whatever the save points, the step
    and the interval asked for, so a run is reproducible and can be resumed or refined.
    Returns :class:`NoisePaths`."""
    who = "sde_paths"
    state0, ts = _prepare(who, diffusion, state0, t1, n_save)
    num_paths = as_int(num_paths, f"{who}: num_paths", lower=1)
    dt = _dt(who, dt, t1)
    _check_paths_fit(who, num_paths, ts.shape[0], state0.K + state0.M)
    key = _key(who, key)
    keys = jax.random.split(key, num_paths)
    theta = _sde_paths(diffusion, theta_from_state(state0), keys, ts, dt,
                       diffrax.Euler() if solver is None else solver, state0.K)
    obs = _split(observables(theta, state0.K), state0.K)
    return NoisePaths(jnp.asarray(ts), theta, **obs)


@eqx.filter_jit
def _sde_paths(diffusion, theta0, keys, ts, dt, solver, K):
    t1 = ts[-1]

    def one(key):
        bm = diffrax.VirtualBrownianTree(0.0, t1, tol=dt / 4, shape=theta0.shape, key=key)
        terms = diffrax.MultiTerm(
            diffrax.ODETerm(lambda t, th, a: diffusion.drift(t, th, K)),
            diffrax.ControlTerm(lambda t, th, a: diffusion.diffusion(t, th, K), bm))
        sol = diffrax.diffeqsolve(terms, solver, 0.0, t1, dt, theta0,
                                  saveat=diffrax.SaveAt(ts=ts), max_steps=None)
        return sol.ys

    return jax.vmap(one)(keys)


def linear_noise(diffusion: Diffusion, state0: State, *, t1: float, n_save: int = 11,
                 rtol: float = 1e-7, atol: float = 1e-10,
                 mean_correction: bool = False, dt: float | None = None) -> LinearNoise:
    r"""The linear-noise approximation from ``state0`` (seeds start together: ``C(0) = 0``)
    over ``[0, t1]`` (module docstring): the mean by ``dθ̄/dt = f(θ̄)`` (the drift of
    ``diffusion``, modified or not), the covariance by ``dC/dt = J C + C Jᵀ + (η/P) Σ``,
    integrated together with diffrax's Tsit5 at ``rtol``/``atol``; pushed to ``(p, y, z, L_y)``.
    ``mean_correction``: the noise's shift of the mean too, ``dθ̄/dt`` gains ``½ ∂²f : C`` and
    the coordinates' means ``½ ∂²φ : C`` (:func:`curvature`): with ``diffusion.modified``, the
    ensemble mean to ``O(η²)`` (module docstring; about ``2 (K + M)`` more field evaluations
    per step). ``state0``: one point, or a batch along one leading axis (one program, the
    points solved side by side; every array of the result gains that axis first). ``dt``: a
    fixed step of the classical Runge–Kutta method instead of the adaptive Tsit5
    (``rtol``/``atol`` then unused; the save points must be multiples of it): the covariance
    moves smoothly, and a few dozen steps over a run give its spread to a few digits at a
    fraction of the cost. Returns :class:`LinearNoise`."""
    state0, ts = _prepare("linear_noise", diffusion, state0, t1, n_save, batch=True)
    rtol, atol = _tolerances("linear_noise", rtol, atol)
    if not isinstance(mean_correction, bool):
        raise ValueError(f"linear_noise: mean_correction must be True or False; got "
                         f"{mean_correction!r}")
    if dt is not None:
        dt = _dt("linear_noise", dt, float(t1))  # the save points: linspace(0, t1, n_save)
        steps = ts / dt
        if np.max(np.abs(steps - np.round(steps))) > 1e-9:
            raise ValueError(f"linear_noise: the save points {np.asarray(ts).tolist()} must be "
                             f"multiples of dt = {dt!r}")
        per = int(round(steps[1]))  # steps between save points (n_save >= 2)
    else:
        per = None
    return _linear_noise(diffusion, state0, ts, rtol, atol, state0.K, mean_correction, dt, per)


@eqx.filter_jit
def _linear_noise(diffusion, state0, ts, rtol, atol, K, mean_correction=False, dt=None,
                  steps_per_save=None):
    """:func:`linear_noise`'s one program, from the start's logits to the result (nothing
    eager after the check of the inputs: at a fixed step the solve costs about a millisecond,
    as much as a dozen eager operations)."""
    def rhs(t, y, args):
        th, C = y
        f, J = jax.linearize(lambda x: diffusion.drift(t, x, K), th)
        JC = jax.vmap(J, in_axes=1, out_axes=1)(C)  # J C, column by column
        dC = JC + JC.T + diffusion.eta * diffusion.step_covariance(t, th, K)
        if mean_correction:
            f = f + curvature(lambda x: diffusion.field(t, x, K), th, C)
        return f, dC

    def one(th0):
        n = th0.shape[-1]
        y0 = (th0, jnp.zeros((n, n), th0.dtype))
        if dt is None:
            sol = diffrax.diffeqsolve(diffrax.ODETerm(rhs), diffrax.Tsit5(), 0.0, ts[-1], None,
                                      y0, saveat=diffrax.SaveAt(ts=ts),
                                      stepsize_controller=diffrax.PIDController(rtol=rtol,
                                                                                atol=atol),
                                      max_steps=100_000)
            theta, C = sol.ys
        else:  # the save points are multiples of dt (linear_noise checked)
            theta, C = rk4(lambda t, y: rhs(t, y, None), y0, 0.0, dt, steps_per_save, len(ts))
        D = jax.vmap(jax.jacfwd(lambda th: observables(th, K)))(theta)
        cov = jnp.einsum("tia,tab,tjb->tij", D, C, D)
        mean = observables(theta, K)
        if mean_correction:
            mean = mean + jax.vmap(lambda th, c: curvature(lambda x: observables(x, K), th, c))(
                theta, C)
        return theta, C, mean, cov

    theta0 = theta_from_state(state0)
    theta, C, mean, cov = one(theta0) if theta0.ndim == 1 else jax.vmap(one)(theta0)
    var = jnp.clip(jnp.diagonal(cov, axis1=-2, axis2=-1), 0.0)
    return LinearNoise(ts, theta, C, _split(mean, K), cov, _split(jnp.sqrt(var), K))


class Survival(eqx.Module):
    r"""Mode extinction in an ensemble of paths, at each save point ``ts``: ``extinct``
    ``(n_save, K)`` the fraction of paths whose good mode ``j`` has ``y_j <= threshold`` there;
    ``ever`` the fraction that have had it at some save point up to there (first passage on the
    save grid: a lower bound on the continuous-time one); ``expected_modes`` ``E[K̂]``, the mean
    number of good modes above the threshold; ``*_stderr`` their standard errors (binomial; the
    sample's for ``expected_modes``)."""

    ts: jax.Array
    extinct: jax.Array
    extinct_stderr: jax.Array
    ever: jax.Array
    ever_stderr: jax.Array
    expected_modes: jax.Array
    expected_modes_stderr: jax.Array
    threshold: float = eqx.field(static=True)


def mode_survival(paths: NoisePaths, threshold: float = 0.05) -> Survival:
    r"""The probability that a good mode's within-good mass ``y_j`` falls to ``threshold`` or
    below (by each save point, and at it) and the expected number of surviving good modes
    ``E[K̂(t)] = E #{j : y_j(t) > threshold}`` (the bandit's ``K_hat`` with ``mode_threshold =
    threshold``), from the sample paths of :func:`sde_paths`. Returns :class:`Survival`."""
    if not isinstance(paths, NoisePaths):
        raise ValueError(f"mode_survival: paths must be NoisePaths (from sde_paths); got "
                         f"{type(paths).__name__}")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float | np.floating) \
            or not 0.0 < threshold < 1.0:
        raise ValueError(f"mode_survival: threshold must be a number in (0, 1); got "
                         f"{threshold!r}")
    y = paths.y  # (paths, n_save, K)
    n = y.shape[0]
    below = y <= threshold
    ever = jax.lax.cummax(below.astype(y.dtype), axis=1)
    frac, frac_ever = jnp.mean(below, 0), jnp.mean(ever, 0)

    def binomial(q):
        return jnp.sqrt(q * (1.0 - q) / n)

    modes = jnp.sum(~below, -1).astype(y.dtype)
    spread = jnp.std(modes, 0, ddof=1) if n > 1 else jnp.zeros(modes.shape[1:], y.dtype)
    return Survival(paths.ts, frac, binomial(frac), frac_ever, binomial(frac_ever),
                    jnp.mean(modes, 0), spread / jnp.sqrt(n), float(threshold))
