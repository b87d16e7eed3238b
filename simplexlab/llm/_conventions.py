"""The advantage oracle's calling conventions that pass torch tensors (``"trl"``, ``"verl"``;
:data:`simplexlab.verify.CONVENTIONS`): the case laid out as the framework lays out a batch,
registered with the oracle when :mod:`simplexlab.llm` is imported (the ``verify`` layer itself
never imports torch).

* ``"trl"``: TRL's ``GRPOTrainer`` (``_generate_and_score_completions``) calls its advantage
  computation on a torch tensor of contiguous groups with ``num_generations``; a rejected
  (unscorable) rollout is a ``NaN`` reward, as TRL marks a completion every reward function
  returned ``None`` for.
* ``"verl"``: a function of verl's estimator registry (``register_adv_est``) gets
  ``token_level_rewards`` and ``response_mask`` of shape ``(batch, response_length)``: each score
  at its response's last valid token (responses of unequal lengths, 1 to 3 tokens), groups by
  ``index`` (verl's ``uid``), a rejected response with an empty mask; its advantage is read at its
  last valid token.
"""

from __future__ import annotations

import numpy as np
import torch

from ..verify.internal import register_convention

#: the responses' lengths in the verl layout cycle through 1 .. _VERL_LENGTH tokens
_VERL_LENGTH = 3


def trl_call(fn, rewards, valid, group, size):
    """``fn(rewards, num_generations)`` on TRL's tensor (rejected rows ``NaN``)."""
    return fn(torch.tensor(np.where(valid, rewards, np.nan)), size)


def verl_call(fn, rewards, valid, group, size):
    """``fn(token_level_rewards=, response_mask=, index=, config=None)`` in verl's layout; its
    advantages (the first of a returned pair) at each response's last valid token."""
    n, T = len(rewards), _VERL_LENGTH
    length = 1 + np.arange(n) % T  # responses of unequal lengths
    mask = (np.arange(T)[None, :] < length[:, None]) & valid[:, None]
    tok = np.zeros((n, T))
    tok[np.arange(n), length - 1] = np.where(valid, rewards, 0.0)
    dt = torch.float32 if rewards.dtype == np.float32 else torch.float64
    index = np.array([f"uid{g}" for g in group], dtype=object)
    out = fn(token_level_rewards=torch.tensor(tok, dtype=dt),
             response_mask=torch.tensor(mask, dtype=torch.int64), index=index, config=None)
    adv = out[0] if isinstance(out, tuple | list) else out
    shape = tuple(getattr(adv, "shape", ()))
    if shape != (n, T):
        raise ValueError(f"returned advantages of shape {shape}; verl's are (batch, "
                         f"response_length) = {(n, T)}")
    return adv[torch.arange(n), torch.as_tensor(length - 1)] if hasattr(adv, "detach") \
        else np.asarray(adv)[np.arange(n), length - 1]


register_convention("trl", trl_call)
register_convention("verl", verl_call)
