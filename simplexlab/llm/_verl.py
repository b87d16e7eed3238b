r"""The lab's advantage rules inside verl (G2 §5, Alg. 1, App. G Listing 1).

Written against verl 0.9.1. Two pieces, each computed by the bridge
(:func:`simplexlab.llm.advantages`: the one JAX implementation; no formula is copied here):

1. **An advantage estimator** registered in verl's own registry
   (``verl.trainer.ppo.core_algos.register_adv_est`` / ``get_adv_estimator_fn``) by
   :func:`register`, under a name such as ``"simplexlab_g2rpo"``: verl's trainer then uses it with
   ``algorithm.adv_estimator=simplexlab_g2rpo``. It receives what verl's
   ``ray_trainer.compute_advantage`` passes to a registered estimator -- ``token_level_rewards``
   ``(bs, T)``, ``response_mask`` ``(bs, T)``, ``index`` (``non_tensor_batch["uid"]``, one id per
   prompt) and ``config`` (the ``AlgoConfig``) -- and

   * sums each response's token-level rewards to one scalar (as verl's GRPO does),
   * groups the responses by ``uid`` (every group must have the same size ``G >= 2``; anything
     else is a ``ValueError`` naming the groups and their sizes),
   * takes one mode id per response (G²RPO only): the ``mode_ids`` keyword, else
     ``non_tensor_batch[mode_key]`` (default ``"mode_id"``), else ``mode_fn(index, scores)``,
   * computes the lab's advantages of ``method`` at training ``step`` (the gain schedule's
     warm-up) through the bridge -- or, with ``base="grpo"`` (any estimator in verl's registry),
     verl's own ``base`` advantages plus the lab's G²RPO bonus (G2 §5: "add the per-sample bonus
     to GRPO advantages"),
   * broadcasts each response's advantage over its tokens (× ``response_mask``) and returns
     ``(advantages, returns)`` with ``returns = advantages``, as verl's GRPO does.

   **Mode ids in verl 0.9.1.** verl's ``compute_advantage`` passes ``non_tensor_batch`` only to
   its own ``"gdpo"`` estimator, and the v1 trainer (``trainer/ppo/v1/trainer_base.py``,
   ``_compute_advantage``) hands the advantage step only ``uid``, ``response_mask`` and the
   reward tensor. A registered estimator therefore sees no mode ids through the stock trainer:
   mode-free rules (``grpo``, ``dr_grpo``, ``rloo``, ``f_grpo``, ``iac``, ...) work as they are;
   G²RPO needs a trainer that calls :func:`compute_advantage` (this module) on the ``DataProto``
   -- it reads ``non_tensor_batch["mode_id"]``, which the legacy ``RayPPOTrainer`` fills from the
   reward function's extra keys (``ray_trainer.py``: ``batch.non_tensor_batch.update(
   reward_extra_infos_dict)``) -- or a ``mode_fn``. With the default v1 trainer the mode id
   travels in the reward score itself: the reward function made by
   :func:`~simplexlab.llm.with_mode_in_score` writes ``reward + 4 * mode_id``
   (:mod:`simplexlab.llm._verl_scores`), and the estimator registered with
   ``modes_in_scores=True`` takes it out again before computing the advantages.

2. **The reward-side rarity bonus of Listing 1** (:func:`~simplexlab.llm.rarity_bonus`,
   :func:`~simplexlab.llm.with_rarity_bonus`: :mod:`simplexlab.llm._verl_reward`) and **the mode id
   carried in the reward score** for verl's default trainer
   (:func:`~simplexlab.llm.with_mode_in_score`: :mod:`simplexlab.llm._verl_scores`).

Registration is explicit (:func:`register`); importing :mod:`simplexlab.llm` does not import
verl. verl's trainer runs in a Ray actor: register in the process that runs it, e.g. in a module
named by verl's ``VERL_USE_EXTERNAL_MODULES`` environment variable (``verl/__init__.py`` imports
it with verl). The gain schedule comes from a verified schedule JSON
(:func:`simplexlab.verify.load_schedule`): one that failed verification is refused unless
``force=True``.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from .. import shaping
from .._checks import is_int
from .._version import install_command
from ..shaping import GainSchedule
from ._bridge import _rates
from ._bridge import advantages as bridge_advantages
from ._driver import resolve_schedule
from ._verl_scores import split_scores

__all__ = ["VerlEstimator", "compute_advantage", "register", "unregister"]

_NO_VERL = (f"verl cannot be imported (the verl extra, in its own environment: "
            f"{install_command('llm', 'verl')}); the simplexlab verl adapter registers its "
            "estimator in verl's own registry")


def _g2(method) -> bool:
    """Whether ``method`` is a G²RPO rule (mode ids and a gain schedule); unknown: ``False``."""
    m = shaping.METHODS.get(method) if isinstance(method, str) else None
    return m is not None and m.schedule


def _core_algos():
    try:
        from verl.trainer.ppo import core_algos
    except ImportError as err:
        raise ImportError(f"{_NO_VERL}: {err}") from err
    return core_algos


def _groups(index, n: int) -> tuple[np.ndarray, list]:
    """``order`` ``(P, G)`` (batch positions of each group, in batch order) and the group ids, for
    ``n`` responses with group ids ``index``; unequal group sizes or ``G < 2`` raise."""
    if index is None:
        raise ValueError("the responses' group ids (verl's index = non_tensor_batch['uid']) are "
                         "needed to form groups; got None (verl passes index only when the batch "
                         "has a 'uid' entry)")
    if isinstance(index, torch.Tensor):
        ids = index.reshape(-1).tolist()
    elif isinstance(index, np.ndarray):
        ids = list(index.reshape(-1))
    else:
        ids = list(index)
    if len(ids) != n:
        raise ValueError(f"{len(ids)} group ids (index/uid) for {n} responses")
    if n == 0:
        raise ValueError("an empty batch: no responses to group")
    where: dict[Hashable, list[int]] = {}
    for i, u in enumerate(ids):
        try:
            where.setdefault(u, []).append(i)
        except TypeError:
            raise ValueError(f"group id {u!r} of response {i} is not hashable") from None
    sizes = {u: len(v) for u, v in where.items()}
    if len(set(sizes.values())) > 1:
        shown = ", ".join(f"{u!r}: {s}" for u, s in list(sizes.items())[:8])
        raise ValueError(f"groups of unequal size (mismatched group sizes): responses per group "
                         f"id {{{shown}{', ...' if len(sizes) > 8 else ''}}}; every prompt needs "
                         f"the same number G >= 2 of responses")
    G = next(iter(sizes.values()))
    if G < 2:
        raise ValueError(f"every group has {G} response(s); a group-relative advantage needs "
                         f"G >= 2 responses per group id")
    return np.asarray(list(where.values()), dtype=np.int64), list(where)


def _mode_array(modes, n: int, what: str) -> np.ndarray:
    try:
        a = np.asarray(modes.detach().cpu() if isinstance(modes, torch.Tensor) else modes)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{what}: cannot read mode ids ({err})") from None
    a = a.reshape(-1)
    if a.shape[0] != n:
        raise ValueError(f"{what}: {a.shape[0]} mode ids for {n} responses (one per response)")
    if a.dtype.kind not in "iub":
        try:
            f = a.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: mode ids must be integers; got {a[:8]!r}") from None
        if not np.all(np.isfinite(f)) or np.any(f != np.round(f)):
            raise ValueError(f"{what}: mode ids must be integers; got {a[:8]!r}")
        a = f
    a = a.astype(np.int64)
    if a.size and (a.min() < 0 or a.max() >= 2**31 - 1):
        raise ValueError(f"{what}: mode ids must lie in [0, 2**31 - 1); got min {a.min()}, max "
                         f"{a.max()}")
    return a


def _num_clusters(num_clusters, G: int, modes: np.ndarray | None) -> int | None:
    if num_clusters is not None:
        return num_clusters
    if modes is None:
        return None
    return max(G, int(modes.max()) + 1 if modes.size else G)


def _scores_without_modes(token_level_rewards, response_mask, scores, order, config):
    """The mode ids that :func:`~simplexlab.llm.with_mode_in_score` wrote into the scores, taken
    out again: ``(token-level rewards, scores, mode ids)`` with the plain rewards (the difference
    taken off each response's last valid token, where verl's reward loop puts the score) and
    the ids renumbered 0, 1, ... within each group (only equality within a group matters)."""
    if config is not None and config.get("use_kl_in_reward", False):
        raise ValueError("modes_in_scores=True reads mode ids out of the reward scores, which "
                         "algorithm.use_kl_in_reward=True shifts by a KL penalty; use the KL "
                         "loss (actor_rollout_ref.actor.use_kl_loss) instead")
    rewards, carried = split_scores(scores)
    last = response_mask.to(torch.int64).cumsum(-1).argmax(-1)
    rows = torch.arange(token_level_rewards.shape[0], device=token_level_rewards.device)
    plain = token_level_rewards.detach().clone()
    plain[rows, last] -= (scores - rewards).to(plain.dtype).to(plain.device)
    ids = np.empty_like(carried)
    for row in order:
        ids[row] = np.unique(carried[row], return_inverse=True)[1].reshape(-1)
    return plain, rewards, ids


class VerlEstimator:
    """A verl advantage estimator computing the lab's rule ``method`` (module docstring).

    Called by verl as ``fn(token_level_rewards=, response_mask=, config=, index=)``; also takes
    ``non_tensor_batch`` (the ``DataProto``'s), ``mode_ids`` (one per response) and ``step``
    keywords. ``step``: the training step of the gain schedule's warm-up; when not given, the
    estimator counts its own calls (verl computes advantages once per training step; a resumed
    run restarts the count -- pass ``step``, or set :attr:`step`, to continue it). After each
    call :attr:`last` holds the ``(P, G)`` rewards, modes and lab advantages, for logging.
    ``modes_in_scores=True``: the rewards arrive as :func:`~simplexlab.llm.with_mode_in_score`
    encoded them (verl's default v1 trainer); the mode ids are read out of them.
    """

    def __init__(self, method: str = "g2rpo", *, schedule: GainSchedule | None = None,
                 base: str | None = None, mode_key: str = "mode_id",
                 mode_fn: Callable[[np.ndarray, torch.Tensor], Sequence[int]] | None = None,
                 num_clusters: int | None = None, params: Mapping[str, float] | None = None,
                 delta_fn: float = 0.0, delta_fp: float = 0.0, name: str | None = None,
                 modes_in_scores: bool = False):
        if shaping.lookup_method(method).logp:
            raise ValueError(f"method {method!r} needs the responses' log-probabilities, which "
                             "verl does not pass to an advantage estimator")
        if base is not None and not _g2(method):
            raise ValueError(f"base={base!r} adds the lab's G²RPO bonus to verl's {base!r} "
                             f"advantages; it needs method 'g2rpo' (got {method!r})")
        if mode_fn is not None and not callable(mode_fn):
            raise ValueError(f"mode_fn must be callable(index, scores) -> mode ids; got "
                             f"{mode_fn!r}")
        if not isinstance(modes_in_scores, bool):
            raise ValueError(f"modes_in_scores must be True or False; got {modes_in_scores!r}")
        if num_clusters is not None and not (is_int(num_clusters) and num_clusters >= 1):
            raise ValueError(f"num_clusters must be an integer >= 1 (or None: max(G, largest "
                             f"mode id + 1)); got {num_clusters!r}")
        _rates(delta_fn, delta_fp)  # real rates of a Verifier, whatever the method
        if modes_in_scores and mode_fn is not None:
            raise ValueError("modes_in_scores=True reads the mode ids from the reward scores; "
                             "mode_fn is a second source: pass one of them")
        self.method = method
        self.modes_in_scores = modes_in_scores
        if _g2(method) and schedule is None:
            schedule = resolve_schedule(None, False)
        self.schedule = schedule
        self.base = base
        self.mode_key = mode_key
        self.mode_fn = mode_fn
        self.num_clusters = num_clusters
        self.params = dict(params) if params else None
        self.delta_fn = delta_fn
        self.delta_fp = delta_fp
        self.name = name
        self.step = 0  #: the step the next call uses when none is given
        self.last: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (f"VerlEstimator(name={self.name!r}, method={self.method!r}, base={self.base!r}, "
                f"mode_key={self.mode_key!r}, modes_in_scores={self.modes_in_scores})")

    def _modes(self, n, index, scores, mode_ids, non_tensor_batch):
        if mode_ids is not None:
            return _mode_array(mode_ids, n, "mode_ids")
        if non_tensor_batch is not None and self.mode_key in non_tensor_batch:
            return _mode_array(non_tensor_batch[self.mode_key], n,
                               f"non_tensor_batch[{self.mode_key!r}]")
        if self.mode_fn is not None:
            return _mode_array(self.mode_fn(index, scores), n, "mode_fn(index, scores)")
        if not shaping.METHODS[self.method].modes:
            return None
        raise ValueError(
            f"{self!r} needs one mode id per response: pass mode_ids=, a non_tensor_batch with "
            f"{self.mode_key!r}, or register with mode_fn. verl 0.9.1's compute_advantage passes "
            f"only token_level_rewards, response_mask, index and config to a registered "
            f"estimator (non_tensor_batch only to 'gdpo'), so call "
            f"simplexlab.llm._verl.compute_advantage(data) from the trainer, which reads "
            f"data.non_tensor_batch[{self.mode_key!r}]")

    def __call__(self, token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
                 index=None, config=None, *, non_tensor_batch=None, mode_ids=None,
                 step: int | None = None, **kwargs) -> tuple[torch.Tensor, torch.Tensor]:
        for nm, t in (("token_level_rewards", token_level_rewards),
                      ("response_mask", response_mask)):
            if not isinstance(t, torch.Tensor) or t.ndim != 2:
                raise ValueError(f"{nm} must be a (batch, response_length) torch.Tensor; got "
                                 f"{getattr(t, 'shape', type(t).__name__)}")
        if tuple(token_level_rewards.shape) != tuple(response_mask.shape):
            raise ValueError(f"token_level_rewards {tuple(token_level_rewards.shape)} and "
                             f"response_mask {tuple(response_mask.shape)} differ in shape")
        n = token_level_rewards.shape[0]
        order, uids = _groups(index, n)
        P, G = order.shape
        with torch.no_grad():
            # one scalar per response, as verl's GRPO: the sum of its token-level rewards
            scores = token_level_rewards.detach().sum(-1).float().cpu()
        if self.modes_in_scores:
            token_level_rewards, scores, carried = _scores_without_modes(
                token_level_rewards, response_mask, scores, order, config)
            mode_ids = carried if mode_ids is None else mode_ids
        modes = self._modes(n, index, scores, mode_ids, non_tensor_batch)
        st = self.step if step is None else step
        r = scores[torch.from_numpy(order)].contiguous()
        m = None if modes is None else torch.from_numpy(modes[order].astype(np.int32))
        lab_method = "g2rpo_bonus" if self.base is not None else self.method
        try:
            lab = bridge_advantages(r, m, method=lab_method, schedule=self.schedule, step=st,
                                    num_clusters=_num_clusters(self.num_clusters, G, modes),
                                    params=self.params, delta_fn=self.delta_fn,
                                    delta_fp=self.delta_fp)
        except ValueError as err:
            raise ValueError(f"{err} (an entry [p, g] of the ({P}, {G}) groups is the g-th "
                             f"response of the p-th uid in batch order, at batch position "
                             f"order[p][g]; order[:3] = {order[:3].tolist()})") from None
        per_seq = torch.empty(n, dtype=torch.float32)
        per_seq[torch.from_numpy(order.reshape(-1))] = lab.reshape(-1).to(torch.float32)
        per_seq = per_seq.to(device=token_level_rewards.device)
        out_dtype = token_level_rewards.dtype if token_level_rewards.is_floating_point() \
            else torch.float32
        adv = per_seq.to(out_dtype).unsqueeze(-1) * response_mask.to(out_dtype)
        if self.base is not None:
            base_fn = _core_algos().get_adv_estimator_fn(self.base)
            kw = {}
            if config is not None and "norm_adv_by_std_in_grpo" in \
                    inspect.signature(base_fn).parameters:
                # verl's compute_advantage passes this flag to its GRPO itself
                kw["norm_adv_by_std_in_grpo"] = config.get("norm_adv_by_std_in_grpo", True)
            base_adv, _ = base_fn(token_level_rewards=token_level_rewards,
                                  response_mask=response_mask, index=index, config=config, **kw)
            adv = base_adv.to(out_dtype) + adv
        self.step = st + 1
        self.last = {"rewards": r, "modes": m, "lab": lab, "uids": uids, "order": order,
                     "step": st}
        return adv, adv


def register(schedule_path: str | os.PathLike | GainSchedule | None = None, *,
             force: bool = False, method: str = "g2rpo", name: str | None = None,
             base: str | None = None, mode_key: str = "mode_id",
             mode_fn: Callable | None = None, num_clusters: int | None = None,
             params: Mapping[str, float] | None = None, delta_fn: float = 0.0,
             delta_fp: float = 0.0, modes_in_scores: bool = False) -> VerlEstimator:
    """Register the lab's ``method`` as a verl advantage estimator; returns the estimator.

    ``name`` (default ``"simplexlab_<method>"``, e.g. ``"simplexlab_g2rpo"``) is the key in verl's
    registry (``verl.trainer.ppo.core_algos.register_adv_est``): verl's trainer uses it with
    ``algorithm.adv_estimator=<name>``, ``get_adv_estimator_fn(name)`` returns it. Registering
    again under a name this adapter holds replaces its estimator; a name verl (or anyone else)
    holds is refused (``ValueError``).

    ``schedule_path``: a verified schedule JSON (``simplexlab schedule verify``), read by
    :func:`simplexlab.verify.load_schedule` -- a schedule that failed verification is refused unless
    ``force=True``; or a :class:`~simplexlab.shaping.GainSchedule`; ``None``: the lab's
    :data:`~simplexlab.llm.DEFAULT_SCHEDULE`. Used by ``g2rpo`` only. ``base``: ``None`` -- the
    lab's advantages of ``method``; a verl estimator name (``"grpo"``) -- verl's advantages plus
    the lab's G²RPO bonus. ``mode_key``, ``mode_fn``, ``num_clusters`` (default: ``max(G, largest
    mode id + 1)``), ``params``, ``delta_fn``, ``delta_fp``: see :class:`VerlEstimator` and
    :func:`simplexlab.llm.advantages`. ``modes_in_scores``: read each response's mode id out of
    its reward score, where :func:`simplexlab.llm.with_mode_in_score` put it (verl's default v1
    trainer passes an estimator nothing else of the reward side).
    """
    core = _core_algos()
    name = f"simplexlab_{method}" if name is None else name
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string; got {name!r}")
    if schedule_path is not None and not _g2(method):
        raise ValueError(f"a gain schedule is used by method 'g2rpo' only; got method "
                         f"{method!r} with schedule {schedule_path!r}")
    schedule = resolve_schedule(schedule_path, force) if _g2(method) else None
    est = VerlEstimator(method, schedule=schedule, base=base, mode_key=mode_key,
                        mode_fn=mode_fn, num_clusters=num_clusters, params=params,
                        delta_fn=delta_fn, delta_fp=delta_fp, name=name,
                        modes_in_scores=modes_in_scores)
    if base is not None:
        core.get_adv_estimator_fn(base)  # an unknown base: verl's own ValueError, now
    held = core.ADV_ESTIMATOR_REGISTRY.get(name)
    if held is not None:
        if not isinstance(held, VerlEstimator):
            raise ValueError(f"verl's advantage estimator {name!r} is already registered "
                             f"({held!r}); choose another name")
        unregister(name)
    core.register_adv_est(name)(est)
    return est


def unregister(name: str) -> bool:
    """Remove a simplexlab estimator from verl's registry (``True`` if one was registered under
    ``name``); verl's own estimators are never removed (``ValueError``)."""
    core = _core_algos()
    held = core.ADV_ESTIMATOR_REGISTRY.get(name)
    if held is None:
        return False
    if not isinstance(held, VerlEstimator):
        raise ValueError(f"{name!r} is not a simplexlab estimator ({held!r}); not removed")
    del core.ADV_ESTIMATOR_REGISTRY[name]
    return True


def compute_advantage(data, name: str = "simplexlab_g2rpo", *, step: int | None = None,
                      config=None):
    """Fill ``data.batch["advantages"]`` and ``["returns"]`` of a verl ``DataProto`` with the
    estimator registered as ``name`` (looked up with verl's ``get_adv_estimator_fn``), passing it
    the ``non_tensor_batch`` too (so mode ids in ``non_tensor_batch[mode_key]`` reach it, which
    verl's own ``compute_advantage`` does not do for a registered estimator). ``step``: default
    ``data.meta_info["global_steps"]`` when present (verl counts from 1), else the estimator's
    own count. Returns ``data``."""
    core = _core_algos()
    fn = core.get_adv_estimator_fn(name)
    batch = data.batch
    for key in ("token_level_rewards", "response_mask"):
        if key not in batch.keys():
            raise ValueError(f"the DataProto has no batch[{key!r}] (keys: "
                             f"{sorted(batch.keys())})")
    nt = data.non_tensor_batch
    if "uid" not in nt:
        raise ValueError("the DataProto has no non_tensor_batch['uid'] (the prompt id that groups "
                         "its responses)")
    if step is None:
        step = (data.meta_info or {}).get("global_steps")
    kw = {"token_level_rewards": batch["token_level_rewards"],
          "response_mask": batch["response_mask"], "index": nt["uid"], "config": config}
    if isinstance(fn, VerlEstimator):
        kw.update(non_tensor_batch=nt, step=None if step is None else int(step))
    adv, ret = fn(**kw)
    data.batch["advantages"] = adv
    data.batch["returns"] = ret
    return data
