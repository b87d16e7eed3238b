r"""Mode ids carried in verl's reward score, for verl's default (v1) trainer.

verl 0.9.1's default trainer (``trainer/ppo/v1/trainer_base.py``, ``_compute_advantage``) hands
an advantage estimator one float per response and nothing else of the reward side: the reward loop
scores each response as it is generated, the agent loop puts that float at the response's last
token of ``rm_scores`` (``experimental/agent_loop/agent_loop.py``), and the advantage step reads
``rm_scores`` as ``token_level_scores`` with the prompt id ``uid``. A mode-aware rule (G²RPO) needs
a mode id per response at that step, so the reward side writes it **into the score**, and the
lab's estimator (registered with ``modes_in_scores=True``) reads it back out:

$$
s = r + 4\,m, \qquad m = \lfloor (s + 1)/4 \rfloor, \qquad r = s - 4\,m,
$$

for a reward $r \in [-1, 2]$ and an integer mode id $0 \le m < 2^{16}$. The base 4 is
a power of two, so the sum and the difference are exact in float32 (the dtype of ``rm_scores``)
wherever the reward itself survives the sum: for a verifier's 0/1 reward always, for a
fractional one when it is a multiple of $2^{-5}$ (:func:`score_with_mode` refuses a pair it
cannot give back exactly, naming it). Mode ids need to agree only within a group: a label that is
not such an integer (a string, an answer) becomes ``crc32(str(label)) mod 2**16``, the same in
every reward worker; two different labels of one group share an id with probability about
$\binom{G}{2}/2^{16}$ (0.2 % at G = 16).

What the encoding costs: verl's own score metrics (``critic/score/*``) average the encoded
floats; the wrapper made by :func:`with_mode_in_score` also returns the plain reward under
``"acc"`` (and the id under ``"mode_id"``), which verl logs as ``reward_extra_info``. A KL
penalty added to the reward (``algorithm.use_kl_in_reward=True``) would shift the encoded float,
so the estimator refuses that setting.
"""

from __future__ import annotations

import inspect
import zlib
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np
import torch

__all__ = ["MODE_SCORE_BASE", "score_with_mode", "split_scores", "with_mode_in_score"]

MODE_SCORE_BASE = 4.0
"""The base of the encoding ``score = reward + MODE_SCORE_BASE * mode_id`` (a power of two)."""
_MODES = 2**16
_REWARDS = (-1.0, 2.0)


def _mode_id(label: Hashable) -> int:
    """An integer mode id in ``[0, 2**16)``: an int there as it is, any other label hashed."""
    if isinstance(label, (int, np.integer)) and not isinstance(label, bool) \
            and 0 <= int(label) < _MODES:
        return int(label)
    return zlib.crc32(str(label).encode()) % _MODES


def score_row(value: Any) -> dict[str, Any]:
    """A verifier's value as a reward row: a mapping's copy, else ``{"score": value}``
    (``ValueError`` for a mapping without ``"score"``, or a score that is not a real number: a
    string such as ``'1.0'``, ``None``, an array; a bool is a 0/1 reward)."""
    row = dict(value) if isinstance(value, Mapping) else {"score": value}
    if "score" not in row:
        raise ValueError(f"compute_score returned a dict without 'score': {value!r}")
    score = row["score"]
    if isinstance(score, torch.Tensor | np.ndarray) and score.ndim == 0:
        score = score.item()
    if not isinstance(score, int | float | np.integer | np.floating):
        raise ValueError(f"compute_score must return a number (or a dict whose 'score' is one); "
                         f"got {row['score']!r} ({type(row['score']).__name__})")
    row["score"] = float(score)
    return row


def score_with_mode(reward: float, mode_id: int) -> float:
    """The float that carries ``reward`` and ``mode_id`` through verl's reward score.

    Args:
        reward: the verifier's reward, in ``[-1, 2]``.
        mode_id: an integer in ``[0, 2**16)``.

    Returns:
        ``reward + 4 * mode_id``, checked to give both back exactly in float32 (``ValueError``
        naming the pair otherwise, as for a reward or id out of range).
    """
    r = float(reward)
    if not (np.isfinite(r) and _REWARDS[0] <= r <= _REWARDS[1]):
        raise ValueError(f"reward {reward!r} is outside [{_REWARDS[0]:g}, {_REWARDS[1]:g}], the "
                         "range a mode id can be carried beside in verl's score")
    if isinstance(mode_id, bool) or not isinstance(mode_id, (int, np.integer)) \
            or not 0 <= int(mode_id) < _MODES:
        raise ValueError(f"mode id {mode_id!r} must be an integer in [0, {_MODES})")
    s = np.float32(r + MODE_SCORE_BASE * int(mode_id))
    back_r, back_m = split_scores(torch.tensor([s]))
    if float(back_r[0]) != float(np.float32(r)) or int(back_m[0]) != int(mode_id):
        raise ValueError(f"reward {reward!r} with mode id {mode_id} does not survive float32 "
                         f"(read back as {float(back_r[0])!r}, {int(back_m[0])}): use a reward "
                         "that is a multiple of 2**-5, or smaller mode ids")
    return float(s)


def split_scores(scores: torch.Tensor) -> tuple[torch.Tensor, np.ndarray]:
    """The rewards and mode ids that :func:`score_with_mode` put into ``scores``.

    Args:
        scores: one encoded float per response (any shape; a score without a mode id reads as
            mode 0).

    Returns:
        ``(rewards, mode_ids)``: the rewards (float32, the shape of ``scores``) and the mode ids
        (int64 numpy array of that shape); ``ValueError`` for a non-finite score or one below
        the encoding's range.
    """
    s = torch.as_tensor(scores).detach().to(torch.float32).cpu()
    if not bool(torch.isfinite(s).all()):
        raise ValueError(f"reward scores must be finite to carry mode ids; got {s.reshape(-1)[:8]}")
    m = torch.floor((s + 1.0) / MODE_SCORE_BASE)
    if bool((m < 0).any()):
        raise ValueError(f"a reward score below {_REWARDS[0]:g} carries no mode id (scores "
                         f"{s[m < 0][:8].tolist()}); write scores with score_with_mode")
    if bool((m >= _MODES).any()):  # beyond the last mode id (and int64 for 1e30)
        raise ValueError(f"a reward score above {_REWARDS[1] + MODE_SCORE_BASE * (_MODES - 1):g} "
                         f"carries no mode id (scores {s[m >= _MODES][:8].tolist()}; mode ids "
                         f"are < {_MODES}); write scores with score_with_mode")
    return s - MODE_SCORE_BASE * m, m.to(torch.int64).numpy()


def with_mode_in_score(compute_score: Callable, mode_fn: Callable, *, reward_key: str = "acc",
                       mode_key: str = "mode_id") -> Callable[..., dict[str, Any]]:
    """A per-response reward function for verl's default trainer whose score carries a mode id.

    Args:
        compute_score: the verifier, called as verl's reward loop calls a custom reward
            function (``compute_score(data_source=, solution_str=, ground_truth=, extra_info=,
            **kwargs)``, a float or a dict with ``"score"``; a coroutine function stays one).
        mode_fn: ``mode_fn(solution_str, ground_truth, extra_info) -> label``: the response's
            mode (an int in ``[0, 2**16)`` as it is; any other hashable label is hashed).
        reward_key: the key under which the plain reward is returned (verl logs it).
        mode_key: the key under which the mode id is returned.

    Returns:
        The function to name as verl's custom reward function
        (``reward.custom_reward_function.path`` / ``.name``). It returns the verifier's dict (or
        ``{"score": ...}``) with ``"score"`` replaced by :func:`score_with_mode` of the reward
        and the mode id, plus ``reward_key`` and ``mode_key``. Pair it with the estimator
        registered as ``register_verl(..., modes_in_scores=True)``.
    """
    for nm, fn in (("compute_score", compute_score), ("mode_fn", mode_fn)):
        if not callable(fn):
            raise ValueError(f"{nm} must be callable; got {fn!r}")
    for nm, key in (("reward_key", reward_key), ("mode_key", mode_key)):
        if not isinstance(key, str) or not key:
            raise ValueError(f"{nm} must be a non-empty string; got {key!r}")
        if key == "score":  # the encoded score would be overwritten: the mode id lost
            raise ValueError(f"{nm} must not be 'score', the key of the encoded score (reward "
                             "and mode id); choose another name")
    if reward_key == mode_key:
        raise ValueError(f"reward_key and mode_key must differ; both are {reward_key!r}")

    def row(value: Any, solution_str, ground_truth, extra_info) -> dict[str, Any]:
        out = score_row(value)
        reward = out["score"]
        mode = _mode_id(mode_fn(solution_str, ground_truth, extra_info))
        out["score"] = score_with_mode(reward, mode)
        out[reward_key] = reward
        out[mode_key] = mode
        return out

    # a function, not a callable object: verl's reward loop tells a coroutine function from a
    # plain one with inspect.iscoroutinefunction, which does not look into __call__
    if inspect.iscoroutinefunction(compute_score):
        async def compute(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
            value = await compute_score(data_source=data_source, solution_str=solution_str,
                                        ground_truth=ground_truth, extra_info=extra_info,
                                        **kwargs)
            return row(value, solution_str, ground_truth, extra_info)
    else:
        def compute(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
            value = compute_score(data_source=data_source, solution_str=solution_str,
                                  ground_truth=ground_truth, extra_info=extra_info, **kwargs)
            return row(value, solution_str, ground_truth, extra_info)
    return compute
