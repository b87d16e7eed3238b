r"""The lab's advantage rules as Tunix advantage estimators: JAX to JAX, no bridge, no torch.

Written against google-tunix 0.1.7 (and its newer ``valid_mask`` form). Tunix's learners look an
advantage estimator up in ``tunix.rl.function_registry`` by the name of
``GRPOConfig.advantage_estimator`` and call it on the batch's summed rewards:
``compute_advantages(rewards, num_generations[, valid_mask])``, rewards of shape
``(num_prompts · num_generations,)`` in contiguous groups (``grpo_learner.py``,
``_generate_and_compute_advantage``). :func:`register_tunix` registers each rule of
:data:`simplexlab.shaping.METHODS` -- every built-in rule and every rule registered from user code
with :func:`simplexlab.shaping.register_method` -- under ``"simplexlab_<method>"`` with
``function_registry.register_advantage_estimator``; ``GRPOConfig(advantage_estimator=
"simplexlab_grpo")`` then trains with the lab's rule. Each estimator (:class:`TunixEstimator`)
computes :func:`simplexlab.shaping.advantages` itself, under one ``jax.jit`` per group size: the
same JAX implementation the lab's theory and simulators use, traceable inside a caller's own
``jit`` (:meth:`TunixEstimator.pure`).

**Mode ids.** Tunix passes an estimator the rewards and the group size, nothing else of a rollout
(its reward manager sums the reward functions' outputs to one float per completion; 0.1.7 passes
no ``valid_mask`` either): no field carries a mode id to it. A mode-aware rule (G²RPO) therefore
takes its mode ids from the reward itself, as the verl adapter does for verl's default trainer
(:mod:`simplexlab.llm._verl_scores`): the reward function made by :func:`tunix_reward_with_mode`
returns ``reward + 4 · mode_id`` (:func:`~simplexlab.llm.score_with_mode`, exact in float32), and
the estimator (``modes_in_scores``, on by default for such a rule) takes ``m = ⌊(s + 1)/4⌋`` and
``r = s − 4m`` apart again in JAX, the ids renumbered within each group by first occurrence
(only equality within a group matters). Tunix's own reward metrics then average the encoded
floats.

**The training step** of a gain schedule's warm-up: Tunix passes none; the estimator counts its
own calls (:attr:`TunixEstimator.step`), or reads ``step_fn()`` (e.g. ``lambda:
learner.rl_cluster.global_steps``) when given -- Tunix calls the estimator on evaluation batches
too, which the count would include.

The gain schedule comes from a verified schedule JSON (``simplexlab schedule verify``; one that
failed verification is refused unless ``force=True``), a :class:`~simplexlab.shaping.GainSchedule`,
or the lab's default (:data:`~simplexlab.llm.DEFAULT_SCHEDULE`). Importing this module does not
import Tunix; :func:`register_tunix` does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import shaping
from .._checks import is_concrete, is_int, trusted_inputs
from .._version import install_command
from ..shaping import GainSchedule
from ..theory import Verifier
from ._bridge import _rates
from ._driver import resolve_schedule
from ._verl_scores import MODE_SCORE_BASE, _mode_id, score_with_mode

__all__ = ["PREFIX", "TunixEstimator", "register_tunix", "tunix_reward_with_mode",
           "unregister_tunix"]

#: the prefix of the registered names: ``"simplexlab_" + method``
PREFIX = "simplexlab_"

_NO_TUNIX = (f"Tunix cannot be imported (the tunix extra, in its own environment: "
             f"{install_command('llm', 'tunix')}); register_tunix registers the lab's rules in "
             "Tunix's function_registry")


def _registry():
    try:
        from tunix.rl import function_registry
    except ImportError as err:
        raise ImportError(f"{_NO_TUNIX}: {err}") from err
    return function_registry


def _split(scores):
    """The rewards and the mode ids that :func:`~simplexlab.llm.score_with_mode` put into the
    scores, in JAX: ``m = ⌊(s + 1)/4⌋``, ``r = s − 4m`` (the inverse of ``r + 4m`` for ``r`` in
    [−1, 2]; exact in float32 for the scores it writes)."""
    base = jnp.asarray(MODE_SCORE_BASE, scores.dtype)
    m = jnp.floor((scores + 1.0) / base)
    return scores - base * m, m


def _renumber(ids):
    """Mode ids ``(P, G)`` renumbered within each group by first occurrence: the index of the
    first rollout of the group with the same id (in ``[0, G)``)."""
    same = ids[..., :, None] == ids[..., None, :]
    return jnp.argmax(same, axis=-1).astype(jnp.int32)


class TunixEstimator:
    """The lab's rule ``method`` as a Tunix advantage estimator (module docstring).

    Called by Tunix as ``est(rewards=, num_generations=)`` (or with ``valid_mask=``, Tunix's
    newer form: a rejected rollout gets 0 and stays out of its group's statistics; a group with
    fewer than two valid rollouts gets 0); returns the advantages ``(N,)`` as a float32
    ``jax.Array``. ``step``: the training step of the schedule's warm-up (default: ``step_fn()``
    when given, else the count of calls). After each call :attr:`last` holds the ``(P, G)``
    rewards, mode ids and advantages.
    """

    def __init__(self, method: str, *, schedule: GainSchedule | None = None,
                 params: Mapping[str, float] | None = None, modes_in_scores: bool | None = None,
                 num_clusters: int | None = None, step_fn: Callable[[], int] | None = None,
                 delta_fn: float = 0.0, delta_fp: float = 0.0, name: str | None = None):
        rule = shaping.lookup_method(method, "register_tunix: ")
        if rule.logp:
            raise ValueError(f"method {method!r} needs the rollouts' log-probabilities, which "
                             "Tunix does not pass to an advantage estimator")
        modes_in_scores = rule.modes if modes_in_scores is None else modes_in_scores
        if not isinstance(modes_in_scores, bool):
            raise ValueError(f"modes_in_scores must be True or False; got {modes_in_scores!r}")
        if rule.modes and not modes_in_scores:
            raise ValueError(f"method {method!r} needs each rollout's mode id, which Tunix passes "
                             "an estimator only inside the reward (modes_in_scores=True, with "
                             "tunix_reward_with_mode as the reward function)")
        unknown = sorted(set(params or {}) - set(rule.params))
        if unknown:
            raise ValueError(f"register_tunix: method {method!r} has no parameter(s) {unknown}; "
                             f"its parameters: {list(rule.params)}")
        for k, v in (params or {}).items():
            shaping.METHOD_PARAMETERS[k].check(v, f"register_tunix: {method}: ")
        if num_clusters is not None and not (is_int(num_clusters) and num_clusters >= 1):
            raise ValueError(f"num_clusters must be an integer >= 1 (or None: the group size); "
                             f"got {num_clusters!r}")
        if step_fn is not None and not callable(step_fn):
            raise ValueError(f"step_fn must be callable() -> the training step; got {step_fn!r}")
        if schedule is not None and not isinstance(schedule, GainSchedule):
            raise ValueError(f"schedule must be a GainSchedule; got {schedule!r}")
        self.method = method
        self.rule = rule
        self.schedule = (schedule or resolve_schedule(None)) if rule.schedule else None
        self.params = dict(params or {})
        self.modes_in_scores = modes_in_scores
        self.num_clusters = num_clusters
        self.step_fn = step_fn
        self.verifier = Verifier(*_rates(delta_fn, delta_fp))
        self.name = name or PREFIX + method
        self.step = 0  #: the step the next call uses when neither ``step`` nor step_fn is given
        self.last: dict[str, Any] = {}
        self._programs: dict = {}

    def __repr__(self) -> str:
        return (f"TunixEstimator(name={self.name!r}, method={self.method!r}, "
                f"modes_in_scores={self.modes_in_scores})")

    def pure(self, rewards, num_generations: int, valid_mask=None, step=0):
        """The advantages as a pure JAX function of ``rewards`` ``(N,)``, ``valid_mask`` and
        ``step`` (traceable: use it inside your own ``jit``; ``num_generations`` static)."""
        G = int(num_generations)
        r = jnp.asarray(rewards)
        if not jnp.issubdtype(r.dtype, jnp.floating):
            r = r.astype(jnp.result_type(float))
        r = r.reshape(-1, G)
        modes = None
        if self.modes_in_scores:
            r, m = _split(r)
            modes = _renumber(m)
        valid = jnp.ones(r.shape, bool) if valid_mask is None else \
            jnp.asarray(valid_mask).astype(bool).reshape(r.shape)
        few = jnp.sum(valid, axis=-1, keepdims=True) < 2  # no group-relative signal: 0
        mask = valid | few
        groups = shaping.Groups(jnp.where(mask & ~few, r, jnp.zeros((), r.dtype)), modes,
                                None if valid_mask is None else mask)
        C = self.num_clusters or G
        adv = shaping.advantages(self.rule, groups, params=self.params or None,
                                 schedule=self.schedule, step=step, verifier=self.verifier,
                                 num_clusters=C)
        adv = jnp.where(valid & ~few, adv, jnp.zeros((), adv.dtype))
        return adv.astype(jnp.float32).reshape(-1), r, modes

    def _program(self, G: int, masked: bool):
        key = (G, masked)
        if key not in self._programs:
            def run(rewards, valid_mask, step):
                with trusted_inputs():  # checked on the host before the call
                    return self.pure(rewards, G, valid_mask if masked else None, step)
            self._programs[key] = jax.jit(run)
        return self._programs[key]

    def _check(self, rewards, G, valid_mask):
        r = np.asarray(rewards, dtype=np.float64).reshape(-1)
        if r.size == 0 or r.size % G:
            raise ValueError(f"{self.name}: {r.size} rewards do not form whole groups of "
                             f"num_generations = {G}")
        if not np.all(np.isfinite(r)):
            raise ValueError(f"{self.name}: non-finite rewards {r[~np.isfinite(r)][:8]}")
        if self.modes_in_scores:
            m = np.floor((r + 1.0) / MODE_SCORE_BASE)
            if np.any(m < 0) or np.any(m >= 2**16):
                raise ValueError(f"{self.name}: rewards {r[(m < 0) | (m >= 2**16)][:8]} carry "
                                 "no mode id (write them with tunix_reward_with_mode)")
            r = r - MODE_SCORE_BASE * m
        if self.rule.binary and np.any((r != 0) & (r != 1)):
            raise ValueError(f"{self.name}: method {self.method!r} takes rewards in {{0, 1}}; "
                             f"got {np.unique(r[(r != 0) & (r != 1)])[:8]}")
        if valid_mask is not None and np.shape(valid_mask) != np.shape(rewards):
            raise ValueError(f"{self.name}: valid_mask of shape {np.shape(valid_mask)} for "
                             f"rewards of shape {np.shape(rewards)}")

    def __call__(self, rewards, num_generations, valid_mask=None, *, step=None):
        if not (is_int(num_generations) and num_generations >= 2):
            raise ValueError(f"{self.name}: num_generations must be an integer >= 2; got "
                             f"{num_generations!r}")
        G = int(num_generations)
        if is_concrete(rewards) and (valid_mask is None or is_concrete(valid_mask)):
            self._check(rewards, G, valid_mask)
        if step is None:
            step = self.step_fn() if self.step_fn is not None else self.step
        r = jnp.asarray(rewards)
        mask = jnp.ones(r.shape, bool) if valid_mask is None else jnp.asarray(valid_mask)
        adv, plain, modes = self._program(G, valid_mask is not None)(r, mask, step)
        self.step = int(step) + 1 if is_concrete(step) else self.step + 1
        self.last = {"rewards": plain, "modes": modes, "advantages": adv.reshape(-1, G),
                     "step": step}
        return adv


def register_tunix(method: str | Sequence[str] | None = None, *, schedule=None,
                   force: bool = False, params: Mapping[str, float] | None = None,
                   modes_in_scores: bool | None = None, num_clusters: int | None = None,
                   step_fn: Callable[[], int] | None = None, delta_fn: float = 0.0,
                   delta_fp: float = 0.0, name: str | None = None) -> dict[str, TunixEstimator]:
    """Register the lab's rules as Tunix advantage estimators; returns them by name.

    Args:
        method: a name of :data:`simplexlab.shaping.METHODS`, several, or ``None``: every rule
            there that reads no log-probabilities (every built-in rule and every rule registered
            from user code), each under ``"simplexlab_<method>"``.
        schedule: the G²RPO gain schedule: the path of a verified schedule JSON (``simplexlab
            schedule verify``; refused when it failed verification, unless ``force``), a
            :class:`~simplexlab.shaping.GainSchedule`, or ``None`` (the lab's
            :data:`~simplexlab.llm.DEFAULT_SCHEDULE`); used by the rules that take one.
        force: accept a schedule file that failed verification (with a warning).
        params: the rule's own parameters (one method only).
        modes_in_scores: read mode ids out of the rewards (default: for the rules that need
            mode ids; pair with :func:`tunix_reward_with_mode`).
        num_clusters: the number of mode ids (default the group size).
        step_fn: ``step_fn() -> int``, the training step (default: the estimator's own count of
            calls).
        delta_fn: the verifier's false-negative rate (schedules A and B).
        delta_fp: its false-positive rate.
        name: the registry name (one method only; default ``"simplexlab_<method>"``).

    Returns:
        ``{name: TunixEstimator}``. Registering again under a name this adapter holds replaces
        its estimator; a name Tunix (or anyone else) holds is refused (``ValueError``).
    """
    registry = _registry()
    from tunix.rl import algo_core  # noqa: F401  (Tunix's own estimators, registered with it)

    if method is None:
        methods = [m for m, rule in shaping.METHODS.items() if not rule.logp]
    else:
        methods = [method] if isinstance(method, str) else list(method)
    if not methods:
        raise ValueError("register_tunix: no method to register")
    if (params or name) and len(methods) != 1:
        raise ValueError("register_tunix: params= and name= go with one method")
    rules = [shaping.lookup_method(m, "register_tunix: ") for m in methods]
    if schedule is not None and not any(r.schedule for r in rules):
        raise ValueError(f"register_tunix: a gain schedule is used by the G²RPO rules only; got "
                         f"method(s) {methods} with schedule {schedule!r}")
    sched = resolve_schedule(schedule, force) if any(r.schedule for r in rules) else None
    ests = [TunixEstimator(m, schedule=sched if r.schedule else None, params=params,
                           modes_in_scores=modes_in_scores, num_clusters=num_clusters,
                           step_fn=step_fn, delta_fn=delta_fn, delta_fp=delta_fp, name=name)
            for m, r in zip(methods, rules, strict=True)]
    held = registry.default_registry.list_functions("advantage_estimator")
    for est in ests:
        if est.name in held:
            old = registry.get_advantage_estimator(est.name)
            if not isinstance(old, TunixEstimator):
                raise ValueError(f"Tunix's advantage estimator {est.name!r} is already "
                                 f"registered ({old!r}); choose another name")
    for est in ests:
        _quiet_register(registry, est)
    return {e.name: e for e in ests}


def _quiet_register(registry, est) -> None:
    """Tunix's decorator, which logs a warning when it replaces a name (ours, here)."""
    from absl import logging

    level = logging.get_verbosity()
    logging.set_verbosity(logging.ERROR)
    try:
        registry.register_advantage_estimator(est.name)(est)
    finally:
        logging.set_verbosity(level)


def unregister_tunix(name: str) -> bool:
    """Remove a simplexlab estimator from Tunix's registry (Tunix has no unregister of its own:
    its registry's table, under its lock).

    Args:
        name: the registry name (``"simplexlab_<method>"``).

    Returns:
        ``True`` if a simplexlab estimator was there under ``name``, ``False`` if none was;
        Tunix's own estimators are never removed (``ValueError``).
    """
    registry = _registry()
    table = registry.default_registry._registry["advantage_estimator"]
    held = table.get(name)
    if held is None:
        return False
    if not isinstance(held, TunixEstimator):
        raise ValueError(f"{name!r} is not a simplexlab estimator ({held!r}); not removed")
    with registry.default_registry._lock:
        del table[name]
    return True


def tunix_reward_with_mode(reward_fn: Callable, mode_fn: Callable) -> Callable:
    """A Tunix reward function whose rewards carry each completion's mode id
    (``reward + 4 · mode_id``, :func:`~simplexlab.llm.score_with_mode`), for an estimator
    registered with ``modes_in_scores`` (a G²RPO rule's default).

    Args:
        reward_fn: the verifier, as Tunix calls a reward function: ``reward_fn(prompts,
            completions, **kwargs) -> list[float]`` (each reward in [−1, 2]: a verifier's 0/1).
        mode_fn: ``mode_fn(prompts, completions, **kwargs) -> list`` of one mode label per
            completion (an int in ``[0, 2**16)`` as it is; any other hashable label is hashed,
            the same in every process).

    Returns:
        ``fn(prompts, completions, **kwargs) -> list[float]``: the encoded rewards. Make it the
        only reward function of the learner (Tunix sums them, which would mix the codes).
    """
    for nm, fn in (("reward_fn", reward_fn), ("mode_fn", mode_fn)):
        if not callable(fn):
            raise ValueError(f"{nm} must be callable; got {fn!r}")

    def reward(prompts, completions, **kwargs):
        r = list(reward_fn(prompts=prompts, completions=completions, **kwargs))
        labels = list(mode_fn(prompts=prompts, completions=completions, **kwargs))
        if not len(r) == len(labels) == len(completions):
            raise ValueError(f"tunix_reward_with_mode: {len(r)} rewards and {len(labels)} mode "
                             f"labels for {len(completions)} completions (one each)")
        return [score_with_mode(float(v), _mode_id(_label(lab))) for v, lab in
                zip(r, labels, strict=True)]

    reward.__name__ = getattr(reward_fn, "__name__", "reward")  # Tunix logs it by name
    return reward


def _label(label) -> Hashable:
    if isinstance(label, float) and math.isfinite(label) and label == int(label):
        return int(label)
    return label
