r"""The reward side of G²RPO in verl: Listing 1's rarity bonus (G2 App. G) as verl's batch reward.

Written against verl 0.9.1, beside the advantage estimator (:mod:`simplexlab.llm._verl`), and
computed by the bridge (:func:`simplexlab.llm.advantages`: the one JAX implementation).
:func:`rarity_bonus` gives the per-sample bonus of a batch of groups (numpy in / numpy out);
:func:`with_rarity_bonus` wraps a per-sample ``compute_score(data_source, solution_str,
ground_truth, extra_info)`` into the batch reward function of verl's ``BatchRewardManager``
(``verl/workers/reward_manager/batch.py``: ``compute_score(data_sources=, solution_strs=,
ground_truths=, extra_infos=, **kwargs)``), returning Listing 1's ``{"score", "rarity_bonus"}``
dicts (and ``"mode_id"``). In verl 0.9.1 the trainer builds its reward managers from the
reward-loop registry (``verl/experimental/reward_loop``: ``naive``, ``dapo``, ``gdpo``,
``limited``, ``remote``), which score one response at a time; a group statistic like the rarity
bonus cannot be computed there, so the batch function serves the legacy ``BatchRewardManager``
(still shipped) and custom loops. The bonus equals :func:`simplexlab.llm.advantages` with method
``"g2rpo_bonus"``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from .._checks import is_int
from ..shaping import GainSchedule
from ._bridge import _rates
from ._bridge import advantages as bridge_advantages
from ._driver import resolve_schedule
from ._verl import _NO_VERL, _groups, _mode_array, _num_clusters
from ._verl_scores import score_row

__all__ = ["rarity_bonus", "with_rarity_bonus"]


def rarity_bonus(scores, modes, groups, *,
                 schedule: str | os.PathLike | GainSchedule | None = None, force: bool = False,
                 step: int = 0, num_clusters: int | None = None, delta_fn: float = 0.0,
                 delta_fp: float = 0.0) -> np.ndarray:
    """Listing 1's per-sample ``rarity_bonus`` (G2 Alg. 1 lines 5–11) of a flat batch.

    ``scores``: ``n`` verifier outcomes in {0, 1}; ``modes``: ``n`` integer mode ids (a correct
    response's mode among the good modes of its group, an incorrect one's among the bad, as
    :func:`simplexlab.llm.discover_modes` with ``rewards`` numbers them); ``groups``: ``n`` group
    (prompt) ids, every group of the same size ``G >= 2``. ``schedule``: a verified schedule JSON
    path (refused when it failed verification, unless ``force``), a ``GainSchedule`` or ``None``
    (:data:`~simplexlab.llm.DEFAULT_SCHEDULE`). Returns ``(n,)`` float64 bonuses in the input
    order: :func:`simplexlab.llm.advantages` with method ``"g2rpo_bonus"`` (correct responses get
    their cluster's bonus, incorrect ones the neutralizer)."""
    sched = resolve_schedule(schedule, force)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    n = s.shape[0]
    order, _ = _groups(list(groups), n)
    G = order.shape[1]
    m = _mode_array(modes, n, "modes")
    r = torch.from_numpy(s[order].astype(np.float32))
    out = bridge_advantages(r, torch.from_numpy(m[order].astype(np.int32)),
                            method="g2rpo_bonus", schedule=sched, step=step,
                            num_clusters=_num_clusters(num_clusters, G, m), delta_fn=delta_fn,
                            delta_fp=delta_fp)
    bonus = np.empty(n, dtype=np.float64)
    bonus[order.reshape(-1)] = out.numpy().reshape(-1)
    return bonus


class _RarityScore:
    """The batch reward function made by :func:`with_rarity_bonus`."""

    def __init__(self, compute_score, mode_fn, schedule, group_key, num_clusters, bonus_key,
                 mode_key, train_split, step, delta_fn, delta_fp):
        self.compute_score = compute_score
        self.mode_fn = mode_fn
        self.schedule = schedule
        self.group_key = group_key
        self.num_clusters = num_clusters
        self.bonus_key = bonus_key
        self.mode_key = mode_key
        self.train_split = train_split
        self.step = 0 if step is None else step
        self.auto_step = step is None
        self.delta_fn = delta_fn
        self.delta_fp = delta_fp

    def _base(self, data_sources, solution_strs, ground_truths, extra_infos, kwargs):
        fn = self.compute_score
        if fn is None:
            try:
                from verl.utils.reward_score import default_compute_score as fn
            except ImportError as err:
                raise ImportError(f"{_NO_VERL}; or pass compute_score: {err}") from err
        out = []
        for src, sol, gt, ex in zip(data_sources, solution_strs, ground_truths, extra_infos,
                                    strict=True):
            out.append(score_row(fn(src, sol, gt, ex, **kwargs)))
        return out

    def __call__(self, data_sources, solution_strs, ground_truths, extra_infos, **kwargs):
        n = len(solution_strs)
        extra_infos = [{} if e is None else e for e in extra_infos]
        if not (len(data_sources) == len(ground_truths) == len(extra_infos) == n):
            raise ValueError(f"data_sources, solution_strs, ground_truths, extra_infos differ in "
                             f"length ({len(data_sources)}, {n}, {len(ground_truths)}, "
                             f"{len(extra_infos)})")
        rows = self._base(data_sources, solution_strs, ground_truths, extra_infos, kwargs)
        splits = {e.get("split") for e in extra_infos}
        if self.train_split is not None and self.train_split not in splits and splits != {None}:
            # Listing 1 step 2: no rarity bonus outside the training split (validation batches)
            for row in rows:
                row[self.bonus_key] = 0.0
            return rows
        if self.train_split is not None and not splits <= {self.train_split, None}:
            raise ValueError(f"a batch mixes splits {sorted(map(str, splits))}; the rarity bonus "
                             f"is computed on {self.train_split!r} batches only")
        missing = [i for i, e in enumerate(extra_infos) if self.group_key not in e]
        if missing:
            raise ValueError(f"extra_info[{self.group_key!r}] (the prompt id that groups the "
                             f"responses) is missing for response(s) {missing[:8]}")
        groups = [e[self.group_key] for e in extra_infos]
        scores = np.asarray([float(row["score"]) for row in rows])
        if self.mode_fn is None:
            from ._modes import discover_modes

            modes = discover_modes(list(solution_strs), groups=groups, rewards=scores).ids
        else:
            modes = self.mode_fn(list(solution_strs), extra_infos, scores)
        modes = _mode_array(modes, n, "mode_fn")
        bonus = rarity_bonus(scores, modes, groups, schedule=self.schedule, step=self.step,
                             num_clusters=self.num_clusters, delta_fn=self.delta_fn,
                             delta_fp=self.delta_fp)
        if self.auto_step:
            self.step += 1
        for row, b, m in zip(rows, bonus, modes, strict=True):
            row[self.bonus_key] = float(b)
            if self.mode_key:
                row[self.mode_key] = int(m)
        return rows


def with_rarity_bonus(compute_score: Callable | None = None, *,
                      mode_fn: Callable | None = None,
                      schedule: str | os.PathLike | GainSchedule | None = None,
                      force: bool = False, group_key: str = "index",
                      num_clusters: int | None = None, bonus_key: str = "rarity_bonus",
                      mode_key: str | None = "mode_id", train_split: str | None = "train",
                      step: int | None = None, delta_fn: float = 0.0,
                      delta_fp: float = 0.0) -> Callable[..., list[dict[str, Any]]]:
    """A batch reward function for verl (G2 Listing 1): ``fn(data_sources, solution_strs,
    ground_truths, extra_infos, **kwargs) -> [{"score", "rarity_bonus", "mode_id"}, ...]`` -- the
    signature verl's ``BatchRewardManager`` calls (``verl/workers/reward_manager/batch.py``).

    * ``compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)``: the
      per-sample verifier (default: verl's ``default_compute_score``); its ``score`` (a float or
      a dict's ``"score"``) must be 0 or 1; a dict's other keys are kept.
    * ``mode_fn(solution_strs, extra_infos, scores) -> mode ids``: default
      :func:`simplexlab.llm.discover_modes` (sentence embeddings + DBSCAN per prompt, correct and
      incorrect responses apart, as Listing 1 (b)–(c)).
    * responses are grouped by ``extra_info[group_key]`` (Listing 1's problem id; verl's example
      datasets store the row index as ``"index"``); all groups must have the same size.
    * ``train_split``: Listing 1 step 2 -- the bonus is 0 in batches whose ``extra_info["split"]``
      is another split (validation); a batch mixing splits raises. ``None``: always computed.
    * ``schedule``/``force``: as :func:`rarity_bonus`; ``step``: the schedule's warm-up step
      (default: the number of training batches scored so far).

    The bonus is :func:`rarity_bonus` (the lab's ``g2rpo_bonus``); ``"mode_id"`` (``mode_key``)
    carries the mode ids to ``non_tensor_batch`` for :func:`compute_advantage`.
    """
    if compute_score is not None and not callable(compute_score):
        raise ValueError(f"compute_score must be callable; got {compute_score!r}")
    if mode_fn is not None and not callable(mode_fn):
        raise ValueError(f"mode_fn must be callable; got {mode_fn!r}")
    if num_clusters is not None and not (is_int(num_clusters) and num_clusters >= 1):
        raise ValueError(f"num_clusters must be an integer >= 1 (or None); got {num_clusters!r}")
    if step is not None and not (is_int(step) and step >= 0):
        raise ValueError(f"step must be an integer >= 0 (or None: counted); got {step!r}")
    _rates(delta_fn, delta_fp)
    sched = resolve_schedule(schedule, force)
    return _RarityScore(compute_score, mode_fn, sched, group_key, num_clusters, bonus_key,
                        mode_key, train_split, step, delta_fn, delta_fp)
