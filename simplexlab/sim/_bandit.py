r"""The finite-group (K+M)-mode bandit (G²RPO §3, App. A.2, Algorithm 1).

Each run holds ``num_prompts`` independent prompts; a prompt is a softmax policy ``π = softmax(θ)``
over ``K`` good modes (indices ``0..K−1``) and ``M`` bad modes (``K..K+M−1``). One step, for every
prompt:

1. draws ``G = group_size`` rollouts i.i.d. from ``π`` (exact inverse-CDF multinomial over the
   ``K + M`` modes);
2. verifies them with the noisy verifier (:meth:`Verifier.sample`: a good rollout scores 0 with
   probability ``delta_fn``, a bad one scores 1 with probability ``delta_fp``);
3. computes per-rollout advantages with a rule of :mod:`simplexlab.shaping` from what G²RPO
   Algorithm 1 sees -- the verifier outcomes and the mode (cluster) of each rollout, never the true
   probabilities (ProGRPO also sees its own log-probability of the rollout, as in PG eq. 5–6);
4. ascends the chosen surrogate in count form (:mod:`simplexlab.sim._policy`) with an optax
   optimizer of rate ``eta``.

With ``optimizer="sgd"``, ``surrogate="log_likelihood"`` and ``reduction="mean"`` (the defaults) the
expected logit step is ``E[Δθ] = η J(π) A`` (G²RPO App. A.2, ``J(π) = Diag(π) − ππᵀ``, ``A`` the
conditional advantages), so the ensemble mean follows the mean-field ODEs of
:mod:`simplexlab.theory` with the time map ``t = step · η`` (ODE with ``eta = 1``), up to
``O(η)`` (discretisation and noise) and ``O(1/G)`` (plug-in group statistics) errors.

Implements the simulator protocol, so :mod:`simplexlab.sweep` batches and shards it over seeds,
gains, group sizes and step sizes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import Param, is_concrete, is_int, trusted_inputs, xp
from ..shaping import (
    METHOD_PARAMETERS,
    METHOD_PARAMS,
    GainSchedule,
    Groups,
    advantages,
    entropy,
    lookup_method,
    meanfield_system,
    num_modes,
)
from ..shaping import METHODS as _RULES
from ..shaping.internal import unchecked
from ..theory import (
    EntropyBonus,
    Verifier,
    concentration,
    entropy_gradient,
    make_state,
    optimizer_limit,
)
from ..theory.internal import check_kind
from ._policy import (
    OPTIMIZERS,
    REDUCTIONS,
    SURROGATES,
    gradient_from_probs,
    lookup,
    optimizer_init,
    optimizer_update,
)
from ._protocol import AbstractSimulator, WithDtype, suggest
from ._sampler import uniforms

__all__ = ["METHODS", "Bandit", "BanditMetrics", "BanditState"]


class _MethodParams(Mapping):
    """Advantage rule name -> the array parameters it uses, read from
    :data:`simplexlab.shaping.METHODS` at each access (a rule added by
    :func:`simplexlab.shaping.register_method` is here at once)."""

    def __getitem__(self, name):
        return _RULES[name].params

    def __iter__(self):
        return iter(_RULES)

    def __len__(self):
        return len(_RULES)

    def __repr__(self):
        return repr(dict(self))


METHODS: Mapping[str, tuple[str, ...]] = _MethodParams()
"""Advantage rules by name: the array parameters each uses (the rules themselves are those of
:func:`simplexlab.shaping.advantages`, shared with the torch bridge)."""

def _whole(lower):
    return lambda a: ~(xp.isfinite(a) & (a >= lower) & (a == xp.round(a)))


#: The bandit's own array parameters (swept inside one compiled program), declared once; a
#: method's come from :data:`simplexlab.shaping.METHOD_PARAMETERS`.
OWN_PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("eta", 0.05, lambda a: ~(xp.isfinite(a) & (a > 0)), "finite and > 0 (the step size η)",
          "η", "the optimizer's rate; with SGD the mean-field step size (t = step · η)"),
    Param("group_size", 16, _whole(2), "a whole number >= 2 (the group size G)", "G",
          "rollouts per group", kind="int"),
    Param("p0", 0.5, lambda a: ~((a > 0) & (a < 1)), "in (0, 1) (the initial bad mass)", "p_0",
          "the initial bad mass of every prompt"),
    Param("instance", 0, _whole(0), "a whole number >= 0", "",
          "which random initial compositions (y0, z0 ~ Dirichlet(1)) the prompts start from",
          kind="int"),
    Param("delta_fn", 0.0, lambda a: ~((a >= 0) & (a <= 1)), "a rate in [0, 1]", "δ_FN",
          "the verifier's false-negative rate (G2 App. A.2)"),
    Param("delta_fp", 0.0, lambda a: ~((a >= 0) & (a <= 1)), "a rate in [0, 1]", "δ_FP",
          "the verifier's false-positive rate (G2 App. A.2)"),
)}
_SCHEDULE = GainSchedule(kind="constant", gain=METHOD_PARAMS["gain"])  # the default schedule
_INSTANCE_KEY = 0x5EED  # initial compositions: key(_INSTANCE_KEY) folded with `instance`


class BanditState(NamedTuple):
    """Simulator state (a pytree); ``P = num_prompts``, ``C = K + M``."""

    logits: jax.Array  #: ``θ`` ``(P, C)``, good modes first
    opt_state: Any  #: optax optimizer state
    key: jax.Array  #: PRNG key of the sampling and verifier noise
    step: jax.Array  #: number of steps taken
    probs0: jax.Array  #: initial policy ``π_0`` ``(P, C)``
    reward: jax.Array  #: mean verifier outcome of the last group ``(P,)``
    #: the adaptive entropy controller's ``(coefficient, last mean entropy)`` (an
    #: :class:`~simplexlab.theory.EntropyBonus` with ``adaptive=True``; else ``None``)
    entropy_control: Any = None


class BanditMetrics(NamedTuple):
    """Recorded per prompt (leading axis ``prompt``)."""

    step: jax.Array  #: step at which they were recorded
    p: jax.Array  #: total bad mass (G²RPO eq. 1)
    y: jax.Array  #: within-good composition ``(P, K)``
    z: jax.Array  #: within-bad composition ``(P, M)``
    L_y: jax.Array  #: ``||y||²``
    L_z: jax.Array  #: ``||z||²`` (0 when M = 0)
    K_hat: jax.Array  #: good modes with ``y_j > mode_threshold``
    entropy: jax.Array  #: entropy of the whole policy over the K + M modes (nats)
    accuracy: jax.Array  #: probability of a correct rollout, ``1 − p``
    m_ret: jax.Array  #: retained correct mass (F-GRPO eq. 26) over the good modes
    reward: jax.Array  #: mean verifier outcome of the last group


def _same(value, default) -> bool:
    """Whether a flat setting is at its default (``None`` only ``None``, a bool only a bool)."""
    if value is None or default is None:
        return value is default
    if isinstance(default, bool):
        return isinstance(value, bool | np.bool_) and bool(value) == default
    try:
        return bool(np.all(np.asarray(value) == default))
    except (TypeError, ValueError):
        return False


def _composition(value, n: int, name: str):
    if value is None:
        return None
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"bandit: {name} must be a sequence of {n} positive numbers summing to "
                         f"1; got {value!r}") from None
    if arr.shape != (n,) or not np.all(np.isfinite(arr)) or np.any(arr <= 0) or \
            abs(arr.sum() - 1.0) > 1e-6:
        raise ValueError(f"bandit: {name} must be {n} positive numbers summing to 1; got "
                         f"{value!r}")
    return tuple(float(v) for v in arr / arr.sum())


class Bandit(AbstractSimulator, WithDtype):
    r"""The finite-group (K+M)-mode bandit (module docstring).

    Static settings (fields; one compilation per value): ``K >= 1`` good and ``M >= 0`` bad modes,
    ``max_group_size`` (rollout arrays are padded to it, so every group size up to it runs in one
    program; the cost of a step follows it, not ``group_size``; a sweep that leaves it unset
    buckets its runs by group size, see :class:`~simplexlab.sweep.SweepAdapter`),
    ``num_prompts``, ``method`` (a name in :data:`METHODS`), ``schedule`` (G²RPO only: the
    :class:`~simplexlab.shaping.GainSchedule` -- kind ``"constant"`` (the default), ``"A"``
    eq. 62 or ``"B"`` eq. 67, neutralizer, clustering of the bad rollouts, warm-up and
    safeguards; its ``gain`` is the default of the ``gain`` parameter. Also given flat, as a
    sweep gives it: ``schedule="B"`` names the kind and ``neutralize``, ``cluster_bad``,
    ``ramp_steps``, ``B_max``, ``p_min``, ``p_damp``, ``rho``, ``floor_inverse_G``, ``Lz_min``,
    ``eps`` the rest, :attr:`SCHEDULE_SETTINGS`; see :meth:`gain_schedule` and
    :meth:`schedule_values`), ``optimizer`` (a name in ``OPTIMIZERS`` or
    a callable ``rate -> optax.GradientTransformation``), ``surrogate``, ``reduction``,
    ``y0`` / ``z0`` (initial within-block compositions; ``None``: each prompt draws
    ``Dirichlet(1)`` from the ``instance`` parameter), ``mode_threshold`` (``K̂`` counts good
    modes with ``y_j`` above it), ``allow_flipped`` (admit ``delta_fn + delta_fp >= 1``),
    ``dtype``.

    Array parameters (:meth:`default_params`; swept inside one program): ``eta`` (the optimizer's
    rate; with SGD the mean-field step size η), ``group_size`` (``G``, a whole number in
    ``[2, max_group_size]``), ``p0`` (initial bad mass), ``instance`` (which random initial
    compositions; the run's seed drives only the sampling and verifier noise, so methods compared
    on one ``instance`` start from the same policies), ``delta_fn``, ``delta_fp``, and the
    method's own: ``gain`` (G²RPO λ or λ0), ``focal_gamma`` (F-GRPO), ``iac_alpha`` (IAC),
    ``progrpo_alpha`` and ``progrpo_all_correct`` (ProGRPO: 0 skips the all-correct groups as
    PG Alg. 1 does, 1 re-weights them as PG eq. 4 read literally).
    """

    name: ClassVar[str] = "bandit"
    version: ClassVar[str] = "1"
    cpu_batching: ClassVar[str] = "vmap"  # a few dozen numbers per run: batch them
    bucket: ClassVar[tuple[str, str]] = ("group_size", "max_group_size")

    K: int = eqx.field(default=3, kw_only=True, static=True)
    M: int = eqx.field(default=2, kw_only=True, static=True)
    max_group_size: int = eqx.field(default=16, kw_only=True, static=True)
    num_prompts: int = eqx.field(default=1, kw_only=True, static=True)
    method: str = eqx.field(default="grpo", kw_only=True, static=True)
    schedule: GainSchedule = eqx.field(default=_SCHEDULE, kw_only=True, static=True)
    optimizer: Any = eqx.field(default="sgd", kw_only=True, static=True)
    surrogate: str = eqx.field(default="log_likelihood", kw_only=True, static=True)
    reduction: str = eqx.field(default="mean", kw_only=True, static=True)
    y0: tuple | None = eqx.field(default=None, kw_only=True, static=True)
    z0: tuple | None = eqx.field(default=None, kw_only=True, static=True)
    mode_threshold: float = eqx.field(default=0.05, kw_only=True, static=True)
    allow_flipped: bool = eqx.field(default=False, kw_only=True, static=True)
    dtype: Any = eqx.field(default=None, kw_only=True, static=True)
    #: an entropy bonus ``c(step) H(π)`` added to the objective each step ascends
    #: (:class:`~simplexlab.theory.EntropyBonus`: TRL's ``entropy_coef``, constant, decaying or
    #: adaptive -- TRL's ``use_adaptive_entropy``, on the mean entropy over the prompts);
    #: ``None``: none
    entropy_bonus: EntropyBonus | None = eqx.field(default=None, kw_only=True, static=True)

    #: the flat settings that make up the G²RPO :class:`~simplexlab.shaping.GainSchedule`
    #: (every field but ``gain``, an array parameter; its ``kind`` goes by ``schedule``)
    SCHEDULE_SETTINGS: ClassVar[dict[str, str]] = {
        "schedule" if k == "kind" else k: k for k in GainSchedule.FIELDS if k != "gain"}
    #: the flat settings that make up the :class:`~simplexlab.theory.EntropyBonus` (sweeps and
    #: TOML files give the bonus by these; ``entropy_coef = 0`` without ``entropy_adaptive`` or a
    #: nonzero ``entropy_final``: no bonus) and their defaults (TRL's)
    ENTROPY_SETTINGS: ClassVar[dict[str, tuple[str, Any]]] = {
        "entropy_coef": ("coef", 0.0), "entropy_final": ("final", None),
        "entropy_decay_steps": ("decay_steps", 0), "entropy_adaptive": ("adaptive", False),
        "entropy_target": ("target", 0.2), "entropy_delta": ("delta", 0.005),
        "entropy_coef_min": ("coef_min", 0.0), "entropy_coef_max": ("coef_max", 1.0)}

    def __init__(self, *, schedule: GainSchedule | str | None = None, **settings):
        """Keyword-only: the fields; ``schedule`` a :class:`~simplexlab.shaping.GainSchedule`
        or, flat, its kind with its other settings as keywords (:attr:`SCHEDULE_SETTINGS`)."""
        flat = {v: settings.pop(k) for k, v in self.SCHEDULE_SETTINGS.items() if k in settings}
        bonus = {v[0]: settings.pop(k) for k, v in self.ENTROPY_SETTINGS.items()
                 if k in settings}
        if bonus:
            if settings.get("entropy_bonus") is not None:
                raise ValueError("bandit: give the entropy bonus either as entropy_bonus or by "
                                 f"its flat settings {sorted(self.ENTROPY_SETTINGS)}, not both")
            on = (bonus.get("adaptive", False) or bonus.get("coef", 0.0) != 0
                  or bonus.get("final") not in (None, 0))  # a ramp up from 0 is a bonus
            if not on:  # no bonus: a setting of one would be dropped
                flat_of = {v[0]: k for k, v in self.ENTROPY_SETTINGS.items()}
                given = [flat_of[k] for k, v in bonus.items()
                         if not _same(v, self.ENTROPY_SETTINGS[flat_of[k]][1])]
                if given:
                    raise ValueError(f"bandit: {', '.join(given)} set an entropy bonus, which "
                                     "is off (entropy_coef = 0 without entropy_adaptive or a "
                                     "nonzero entropy_final): give it a coefficient, or leave "
                                     "them at their defaults")
            try:
                settings["entropy_bonus"] = EntropyBonus(**bonus) if on else None
            except ValueError as err:
                raise ValueError(f"bandit: {err}") from None
        if isinstance(schedule, GainSchedule):
            base = schedule
        else:
            base = _SCHEDULE
            if schedule is not None:
                flat["kind"] = check_kind(schedule, "bandit: schedule")
        try:
            base = dataclasses.replace(base, **flat) if flat else base
        except ValueError as err:
            raise ValueError(f"bandit: {err}") from None
        if not (is_concrete(base.gain) and np.ndim(base.gain) == 0):
            raise ValueError(f"bandit: the schedule's gain is the default of the gain parameter "
                             f"and must be a number; got {base.gain!r}")
        self.schedule = eqx.tree_at(lambda s: s.gain, base, float(base.gain))
        for f in dataclasses.fields(Bandit):
            if f.name != "schedule":
                setattr(self, f.name, settings.pop(f.name, f.default))
        if settings:
            known = [*(f.name for f in dataclasses.fields(Bandit)), *self.SCHEDULE_SETTINGS,
                     *self.ENTROPY_SETTINGS]
            raise TypeError(f"Bandit() got unexpected keyword argument(s) {sorted(settings)}"
                            f"{suggest(sorted(settings), known)}")

    def __check_init__(self):
        who = "bandit"
        for name, lower in (("K", 1), ("M", 0), ("max_group_size", 2), ("num_prompts", 1)):
            v = getattr(self, name)
            if not is_int(v) or v < lower:
                raise ValueError(f"{who}: {name} must be an integer >= {lower}; got {v!r}")
        lookup_method(self.method, f"{who}: ")
        if not isinstance(self.allow_flipped, bool | np.bool_):
            raise ValueError(f"{who}: allow_flipped must be True or False; got "
                             f"{self.allow_flipped!r}")
        lookup(OPTIMIZERS, self.optimizer, "optimizer", who)
        if self.entropy_bonus is not None and not isinstance(self.entropy_bonus, EntropyBonus):
            raise ValueError(f"{who}: entropy_bonus must be an EntropyBonus or None; got "
                             f"{self.entropy_bonus!r}")
        if self._adaptive_entropy and is_int(self.K) and is_int(self.M):
            top = float(np.log(self.K + self.M))  # the entropy of the uniform policy
            target = self.entropy_bonus.target
            if is_concrete(target) and np.any(np.asarray(target) > top):
                raise ValueError(f"{who}: entropy_target = {target!r} is above log(K + M) = "
                                 f"{top:.6g}, the largest entropy a policy over the K + M = "
                                 f"{self.K + self.M} modes has: the controller would never "
                                 "lower its coefficient")
        if self.surrogate not in SURROGATES:
            raise ValueError(f"{who}: surrogate must be one of {SURROGATES}; got "
                             f"{self.surrogate!r}")
        if self.reduction not in REDUCTIONS:
            raise ValueError(f"{who}: reduction must be one of {REDUCTIONS}; got "
                             f"{self.reduction!r}")
        _composition(self.y0, self.K, "y0")
        if self.M > 0:
            _composition(self.z0, self.M, "z0")
        if self.M == 0 and self.z0 not in (None, ()):
            raise ValueError(f"{who}: z0 must be None when M = 0; got {self.z0!r}")
        t = self.mode_threshold
        if not isinstance(t, int | float) or not 0.0 <= t < 1.0:
            raise ValueError(f"{who}: mode_threshold must be a number in [0, 1); got {t!r}")
        self.check_dtype()

    @classmethod
    def settings(cls) -> dict[str, Any]:
        """The flat static settings (the schedule as :attr:`SCHEDULE_SETTINGS`, what a sweep
        and its store record) and their defaults."""
        out = {}
        for k, v in super().settings().items():
            if k == "entropy_bonus":  # flat, as its settings
                out.update({n: d for n, (_, d) in cls.ENTROPY_SETTINGS.items()})
                continue
            out.update(cls._flat(v) if k == "schedule" else {k: v})
        return out

    @classmethod
    def _flat(cls, schedule: GainSchedule) -> dict[str, Any]:
        return {k: getattr(schedule, v) for k, v in cls.SCHEDULE_SETTINGS.items()}

    @classmethod
    def make(cls, **settings) -> Bandit:
        cls.check_settings(settings)
        s = dict(settings)
        for name, n in (("y0", s.get("K", 3)), ("z0", s.get("M", 2))):
            if s.get(name) is not None and is_int(n):
                s[name] = _composition(s[name], n, name)
        return cls(**s)

    # ---- parameters ------------------------------------------------------------------------

    def param_specs(self) -> dict[str, Param]:
        """Its own array parameters (:data:`OWN_PARAMS`; ``group_size`` defaults to 16 or the
        static bound, whichever is smaller) and its method's (as the rule declares them,
        :data:`simplexlab.shaping.METHOD_PARAMETERS`; ``gain`` defaults to the schedule's
        gain)."""
        own = {k: METHOD_PARAMETERS[k] for k in METHODS[self.method]}
        if "gain" in own:
            own["gain"] = own["gain"]._replace(default=self.schedule.gain)
        size = OWN_PARAMS["group_size"]
        return {**OWN_PARAMS, **own,  # the default group size within the static bound
                "group_size": size._replace(default=min(size.default, self.max_group_size))}

    @classmethod
    def all_param_specs(cls) -> dict[str, Param]:
        """Its own array parameters and every method's (a rule registered later included)."""
        return {**OWN_PARAMS, **METHOD_PARAMETERS}

    def constraints(self):
        """``group_size <= max_group_size``; the method's own joint rules (pass@k: ``k <= G``);
        ``delta_fn + delta_fp < 1`` unless ``allow_flipped``."""
        Gmax = self.max_group_size
        rules = [(("group_size",), lambda a: ~(a <= Gmax),
                  f"<= max_group_size = {Gmax} (a static setting: the rollout arrays are padded "
                  "to it; raise it to sweep larger groups)")]
        rules += _RULES[self.method].constraints("group_size")  # e.g. pass@k: k <= G
        if not self.allow_flipped:
            rules.append((("delta_fn", "delta_fp"), lambda fn, fp: ~(fn + fp < 1),
                          "< 1 (J = 1 − delta_fn − delta_fp <= 0 flips the flow; set "
                          "allow_flipped=True to study that regime)"))
        return rules

    def gain_schedule(self, params) -> GainSchedule:
        """The run's G²RPO schedule: the ``schedule`` setting with the ``gain`` parameter."""
        return dataclasses.replace(self.schedule, gain=params["gain"])

    @classmethod
    def schedule_values(cls, schedule: GainSchedule) -> dict[str, Any]:
        """The flat bandit settings and ``gain`` parameter that run ``schedule`` (for
        :meth:`from_values` or a sweep's ``fixed``)."""
        return {"method": "g2rpo", "gain": schedule.gain, **cls._flat(schedule)}

    def verifier(self, params) -> Verifier:
        """The run's verifier. Its rates are parameters :meth:`init` checked (traced ones by
        run-time checks there), so the one built inside each step carries none."""
        dt = self.float_dtype()
        with trusted_inputs():
            return Verifier(jnp.asarray(params["delta_fn"], dt),
                            jnp.asarray(params["delta_fp"], dt), allow_flipped=self.allow_flipped)

    def _optimizer(self, params):
        """The optax optimizer at rate ``eta`` (checked once, in :meth:`init`)."""
        rate = jnp.asarray(params["eta"], self.float_dtype())
        return lookup(OPTIMIZERS, self.optimizer, "optimizer", "bandit")(rate)

    # ---- the mean-field prediction ---------------------------------------------------------

    def meanfield(self, params: dict[str, Any] | None = None):
        r"""The mean-field system this run follows as ``η → 0``, ``G → ∞`` and its initial state:
        ``(dynamics, state0)`` for :func:`simplexlab.theory.solve` with the time map
        ``t = step · η`` (the system has ``eta = 1``). ``state0`` has one entry per prompt.

        ``grpo`` → :class:`~simplexlab.theory.GRPO` (eq. 22); ``g2rpo`` →
        :class:`~simplexlab.theory.GoodBonus` (eq. 48, ``neutralize=False``) or
        :class:`~simplexlab.theory.Neutralized` (eq. 56) with ``ConstantGain`` /
        ``ScheduleA`` / ``ScheduleB`` (eq. 62 / 67) of ``gain``; both with the run's verifier.
        Other methods have no ``G → ∞`` system in the package (``ValueError``; every method has
        a finite-group system, :meth:`finite_group`); so has a run
        with ``M = 0`` (the bad block is empty) or with an optimizer other than SGD on the
        mean-reduced log-likelihood surrogate (the ODE describes ``E[Δθ] = η J(π) A``).

        With a noisy verifier the GRPO system matches (the reduced margin ``J``), but G²RPO's
        does not: Algorithm 1 clusters the rollouts *scored* correct, so with ``delta_fp > 0`` a
        bad mode's false positives form a rare "good" cluster and get the largest reciprocal
        bonus, which the ODE (bonus on the latent good modes) does not model -- measured: the
        ensemble's ``p`` leaves eq. (48) by 0.1–0.25 at ``δ = (0.1, 0.1)`` (NOTES.md)."""
        q, verifier = self._theory_inputs(params)
        if not _RULES[self.method].has_limit_system:
            meanfield_system(self.method)  # raises, naming the methods that have one
        if self.M == 0:
            raise ValueError("bandit: the mean-field (p, y, z) system needs M >= 1 bad modes")
        if (self.optimizer, self.surrogate, self.reduction) != ("sgd", "log_likelihood",
                                                                 "mean"):
            raise ValueError("bandit: the mean-field system describes SGD on the mean-reduced "
                             "log-likelihood surrogate; got optimizer="
                             f"{self.optimizer!r}, surrogate={self.surrogate!r}, "
                             f"reduction={self.reduction!r} (finite_group covers the others: "
                             "both surrogates and reductions, momentum, Adam, AdamW)")
        # the time map t = step · η: one step lasts η (a warm-up over ramp_steps steps, t_ramp)
        dyn = meanfield_system(self.method, self.schedule, verifier=verifier, eta=1.0,
                               gain=float(q["gain"]) if "gain" in q else None,
                               step_time=float(q["eta"]), entropy_bonus=self.entropy_bonus)
        return dyn, self._state0(q)

    def finite_group(self, params: dict[str, Any] | None = None, **options):
        r"""The finite-group system this run follows as ``η → 0`` at its own group size ``G``
        and its initial state: ``(dynamics, state0)`` as :meth:`meanfield` returns them (time map
        ``t = step · η``), with :class:`~simplexlab.theory.FiniteGroup`: the exact expected
        step of the run's rule (any method; its schedule, verifier, surrogate and reduction; for
        REINFORCE++ the batch is the run's ``num_prompts`` groups, taken as drawn from one
        policy). No ``O(1/G)`` error is left: the ensemble mean follows it up to ``O(η)``.
        ``options`` go to :class:`~simplexlab.theory.FiniteGroup` (``path``, ``max_size``,
        ...). The optimizer by name: SGD's field, or the small-step limit of momentum, Adam or
        AdamW (:func:`~simplexlab.theory.optimizer_limit`, optax's defaults as
        :data:`OPTIMIZERS` builds them; a prompt's parameters see one group per step, ``P = 1``);
        an optimizer given as a callable has no limit the theory knows (``ValueError``), and
        ``M >= 1``."""
        q, verifier = self._theory_inputs(params)
        if not isinstance(self.optimizer, str):
            raise ValueError(f"bandit: the finite-group theory covers the optimizers by name "
                             f"({sorted(OPTIMIZERS)}: their small-step limits); got the callable "
                             f"optimizer={self.optimizer!r}")
        if self.optimizer != "sgd":
            limit = optimizer_limit(self.optimizer, **(
                {"eta": float(q["eta"])} if self.optimizer == "momentum" else {}))
            options = {"optimizer": limit, **options}
        if self.M == 0:
            raise ValueError("bandit: the (p, y, z) system needs M >= 1 bad modes")
        own = {k: float(q[k]) for k in METHODS[self.method] if k != "gain"}
        dyn = meanfield_system(self.method, self.schedule, verifier=verifier, eta=1.0,
                               gain=float(q["gain"]) if "gain" in q else None,
                               step_time=float(q["eta"]), group_size=int(q["group_size"]),
                               params=own, num_groups=self.num_prompts,
                               surrogate=self.surrogate, reduction=self.reduction,
                               entropy_bonus=self.entropy_bonus, **options)
        return dyn, self._state0(q)

    def _theory_inputs(self, params):
        """The run's parameters (defaults filled in, checked) and its verifier with concrete
        rates: what :meth:`meanfield` and :meth:`finite_group` build their systems from."""
        q = {**self.default_params(), **(params or {})}
        self.check_params(q)
        return q, Verifier(float(q["delta_fn"]), float(q["delta_fp"]),
                           allow_flipped=self.allow_flipped)

    def _state0(self, q):
        pi = np.asarray(jax.nn.softmax(self.initial_logits(q), -1), float)
        p = pi[:, self.K:].sum(-1)
        return make_state(p, pi[:, :self.K] / (1.0 - p)[:, None], pi[:, self.K:] / p[:, None])

    # ---- how a sweep runs it ---------------------------------------------------------------

    def working_bytes(self) -> int:
        """The ``(P, G, C)`` one-hot of the rollouts and a few ``(P, G)`` / ``(P, C)``
        arrays."""
        P, G, C = self.num_prompts, self.max_group_size, self.K + self.M
        return 8 * P * (4 * G * C + 16 * G + 16 * C) + 4096

    def observe_dims(self):
        dims = {k: ("prompt",) for k in BanditMetrics._fields if k != "step"}
        dims.update(y=("prompt", "good_mode"), z=("prompt", "bad_mode"))
        return dims

    # ---- protocol --------------------------------------------------------------------------

    def initial_logits(self, params):
        r"""``θ_0 = (log((1 − p0) y0), log(p0 z0))`` per prompt; ``y0``/``z0`` from the settings
        or ``Dirichlet(1)`` (normalized i.i.d. exponentials) from ``key(0x5EED)`` folded with
        ``instance``. The exponentials are drawn in float32 whatever the run's dtype, so one
        ``instance`` is the same set of prompts (up to float32 rounding) in float32 and float64
        runs."""
        dt = self.float_dtype()
        P, K, M = self.num_prompts, self.K, self.M
        key = jax.random.fold_in(jax.random.key(_INSTANCE_KEY),
                                 jnp.asarray(params["instance"]).astype(jnp.int32))
        ky, kz = jax.random.split(key)

        def block(fixed, k, n):
            if fixed is not None:
                return jnp.broadcast_to(jnp.asarray(fixed, dt), (P, n))
            # float32 draw: JAX's samplers draw different bits per dtype
            e = jax.random.exponential(k, (P, n), jnp.float32).astype(dt)
            return e / jnp.sum(e, -1, keepdims=True)

        p0 = jnp.asarray(params["p0"], dt) if M > 0 else jnp.zeros((), dt)
        good = jnp.log(block(self.y0, ky, K)) + jnp.log1p(-p0)
        if M == 0:
            return good
        return jnp.concatenate([good, jnp.log(block(self.z0, kz, M)) + jnp.log(p0)], -1)

    @property
    def _adaptive_entropy(self) -> bool:
        return self.entropy_bonus is not None and self.entropy_bonus.adaptive

    def init(self, key, params) -> BanditState:
        dt = self.float_dtype()
        # run-time checks of every (possibly traced) parameter, once per run: the step adds none
        # (a branch per step costs a batch-wide reduction) and the rule's inputs, which the step
        # builds itself, are not re-checked (trusted_inputs); so step assumes parameters that
        # init has accepted
        theta = self.checked(self.initial_logits(params), params)
        return BanditState(logits=theta, opt_state=optimizer_init(self._optimizer(params), theta),
                           key=key, step=jnp.zeros((), jnp.int32),
                           probs0=jax.nn.softmax(theta, -1),
                           reward=jnp.zeros((self.num_prompts,), dt),
                           entropy_control=(self.entropy_bonus.controller_init(dt)
                                            if self._adaptive_entropy else None))

    def step(self, state: BanditState, params) -> BanditState:
        dt = self.float_dtype()
        P, Gmax, K, C = self.num_prompts, self.max_group_size, self.K, self.K + self.M
        G = jnp.asarray(params["group_size"]).astype(jnp.int32)  # checked in init
        key, sub = jax.random.split(state.key)
        logp = jax.nn.log_softmax(state.logits, -1)
        probs = jnp.exp(logp)
        # exact inverse-CDF draws (mode = #{c < C−1 : cdf_c <= u}) and verifier outcomes, from
        # the shared sampler's hashed uniforms (one key per step); rollout g of prompt q uses
        # uniforms 2(gP + q) and 2(gP + q) + 1, whatever max_group_size is, so padding a run to
        # a larger max_group_size leaves its valid rollouts unchanged
        u = uniforms(sub, 2 * Gmax * P, dt).reshape(Gmax, P, 2).transpose(2, 1, 0)
        cdf = jnp.cumsum(probs[:, :-1], -1)
        modes = jnp.sum(u[0][..., None] >= cdf[:, None, :], -1, dtype=jnp.int32)
        mask = jnp.broadcast_to(jnp.arange(Gmax, dtype=jnp.int32) < G, (P, Gmax))
        rewards = jnp.where(mask, self.verifier(params).outcome(u[1], modes < K), 0.0)
        ro = Groups(rewards, modes, mask, jnp.take_along_axis(logp, modes, -1))
        # the rule's inputs are built above and valid by construction (rewards in {0, 1}, ids in
        # range, >= 2 valid rollouts); the user's parameters were checked in init
        with trusted_inputs():
            adv = advantages(self.method, ro, num_clusters=C, step=state.step,
                             params={k: params[k] for k in METHODS[self.method]},
                             schedule=(self.gain_schedule(params)
                                       if _RULES[self.method].schedule else None),
                             verifier=self.verifier(params))
        adv = jnp.where(mask, jnp.asarray(adv, dt), 0.0)
        scale = 1.0 / G.astype(dt) if self.reduction == "mean" else jnp.ones((), dt)
        # w_c = s Σ_{g : mode_g = c} Â_g: a masked sum (one fused reduction, no one-hot matrix)
        hit = modes[..., None] == jnp.arange(C, dtype=jnp.int32)
        weights = scale * jnp.sum(jnp.where(hit, adv[..., None], 0.0), -2)
        grad = gradient_from_probs(probs, weights, self.surrogate)
        control = state.entropy_control
        if self.entropy_bonus is not None:
            if self._adaptive_entropy:  # TRL's controller: the mean entropy over the prompts
                c, control = self.entropy_bonus.controller_step(control,
                                                                jnp.mean(entropy(probs)))
            else:
                c = jnp.asarray(self.entropy_bonus.coefficient(state.step.astype(dt)), dt)
            grad = grad + c * entropy_gradient(probs)
        updates, opt_state = optimizer_update(self._optimizer(params), -grad, state.opt_state,
                                              state.logits)
        return BanditState(logits=state.logits + updates, opt_state=opt_state, key=key,
                           step=state.step + 1, probs0=state.probs0,
                           reward=jnp.sum(rewards, -1) / G.astype(dt), entropy_control=control)

    def observe(self, state: BanditState) -> BanditMetrics:
        K = self.K
        pi = jax.nn.softmax(state.logits, -1)
        good, bad = pi[:, :K], pi[:, K:]
        p = jnp.sum(bad, -1)
        y = good / jnp.sum(good, -1, keepdims=True)
        z = bad / jnp.where(p > 0, p, 1.0)[:, None]
        L_y = concentration(y)
        L_z = concentration(z) if self.M > 0 else jnp.zeros_like(p)
        above = jnp.where(y > self.mode_threshold, y, 0.0)
        with trusted_inputs():  # the policy's own distributions: valid by construction
            K_hat, H = num_modes(above), entropy(pi)
        return BanditMetrics(
            step=state.step, p=p, y=y, z=z, L_y=L_y, L_z=L_z, K_hat=K_hat, entropy=H,
            accuracy=1.0 - p,
            m_ret=unchecked.retained_mass(state.probs0[:, :K], good), reward=state.reward)
