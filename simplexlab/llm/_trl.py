r"""The lab's shaping rules inside TRL's ``GRPOTrainer`` (G2 §5, App. G).

TRL has no advantage hook (TRL issue #4525): ``GRPOTrainer._generate_and_score_completions``
computes the group-normalized advantages inline. :class:`G2RPOTrainer` subclasses it and

1. keeps the rewards TRL gathered from every process (it wraps ``_calculate_rewards``, which
   returns them aggregated across processes, in TRL's order);
2. labels every completion with a mode id (a user callable ``mode_fn(prompts, completions) ->
   list[int]``, e.g. :func:`simplexlab.llm.discover_modes` on free text), gathered across
   processes the same way, so a prompt's group is whole even when its completions were generated
   on several processes;
3. adds the lab's G²RPO bonus (method ``"g2rpo_bonus"`` of :func:`simplexlab.shaping.advantages`,
   through the bridge: the one JAX implementation) to TRL's advantages **after** TRL's group
   normalization -- TRL's own z-score (its sample std and ε = 1e-4) is kept, as G2 §5 adds the
   bonus to the framework's advantages -- or, with ``method`` another lab rule, replaces them;
4. logs the plug-in ``p̂``, ``L̂_y``, ``K̂`` of the groups through TRL's logger
   (``g2rpo/p_hat``, ``g2rpo/L_y``, ``g2rpo/K_hat``, ``g2rpo/bonus_abs``).

The gain schedule comes from a verified schedule JSON (``simplexlab schedule verify``); one that
failed verification is refused unless ``force=True``. Rewards must be binary (the sum of the
weighted reward functions in {0, 1}) for G²RPO, or pass ``correct_fn(rewards) -> bool tensor``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .._checks import is_int
from ._bridge import advantages as bridge_advantages
from ._bridge import group_stats
from ._driver import resolve_schedule

__all__ = ["G2RPOTrainer"]  # noqa: F822 (built on first use by the module __getattr__)


def _check_settings(*, mode_fn, correct_fn, force, shaping, num_clusters) -> None:
    """The settings of :class:`G2RPOTrainer` that TRL never sees, checked at construction (not
    at the first step): callables callable, booleans booleans, ``num_clusters`` an integer
    >= 1 or ``None`` (never a silent default)."""
    for name, fn in (("mode_fn", mode_fn), ("correct_fn", correct_fn)):
        if fn is not None and not callable(fn):
            raise ValueError(f"G2RPOTrainer: {name} must be callable (or None); got {fn!r}")
    for name, v in (("force", force), ("shaping", shaping)):
        if not isinstance(v, bool):
            raise ValueError(f"G2RPOTrainer: {name} must be True or False; got {v!r}")
    if num_clusters is not None and not (is_int(num_clusters) and num_clusters >= 1):
        raise ValueError(f"G2RPOTrainer: num_clusters must be an integer >= 1 (or None: the "
                         f"group size); got {num_clusters!r}")


def _make_trainer_class():
    from trl import GRPOTrainer

    class G2RPOTrainer(GRPOTrainer):
        """``trl.GRPOTrainer`` with the lab's advantage shaping (module docstring).

        Extra keyword arguments: ``mode_fn(prompts, completions) -> list[int]`` (required for
        G²RPO: one non-negative mode id per completion, < ``num_clusters``), ``schedule`` (a
        :class:`~simplexlab.shaping.GainSchedule` or the path of a verified schedule JSON;
        default :data:`simplexlab.llm.DEFAULT_SCHEDULE`), ``force`` (accept a schedule that
        failed verification), ``method`` (``"g2rpo"``: TRL's advantages + the lab's bonus;
        another name of :data:`simplexlab.shaping.METHODS`: the lab's advantages instead of
        TRL's), ``params`` (the method's own parameters, names of
        :data:`simplexlab.shaping.METHOD_PARAMS`; defaults otherwise), ``num_clusters``
        (default: the group size), ``correct_fn`` (rewards -> correct mask; default: the rewards
        themselves, which must be 0 or 1), ``shaping`` (False: TRL's advantages unchanged, for
        comparisons)."""

        def __init__(self, *args, mode_fn: Callable | None = None, schedule=None,
                     force: bool = False, method: str = "g2rpo", num_clusters: int | None = None,
                     correct_fn: Callable | None = None, shaping: bool = True,
                     params: dict[str, float] | None = None, **kwargs):
            from ..shaping import METHOD_PARAMETERS, lookup_method

            _check_settings(mode_fn=mode_fn, correct_fn=correct_fn, force=force,
                            shaping=shaping, num_clusters=num_clusters)
            m = lookup_method(method, "G2RPOTrainer: ")
            unknown = sorted(set(params or {}) - set(m.params))
            if unknown:
                raise ValueError(f"G2RPOTrainer: method {method!r} has no parameter(s) "
                                 f"{unknown}; its parameters: {list(m.params)}")
            for k, v in (params or {}).items():
                METHOD_PARAMETERS[k].check(v, f"G2RPOTrainer: {method}: ")
            self.lab_params = dict(params or {})
            if m.modes and mode_fn is None and shaping:
                raise ValueError("G2RPOTrainer with method='g2rpo' needs mode_fn(prompts, "
                                 "completions) -> mode ids (e.g. simplexlab.llm.discover_modes)")
            try:
                self.lab_schedule = resolve_schedule(schedule, force)
            except ValueError as err:
                raise ValueError(f"G2RPOTrainer: {err}") from None
            self.lab_method = method
            self.lab_mode_fn = mode_fn
            self.lab_num_clusters = num_clusters
            self.lab_correct_fn = correct_fn
            self.lab_shaping = shaping
            self.lab_last: dict[str, Any] = {}
            super().__init__(*args, **kwargs)

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            rewards = super()._calculate_rewards(inputs, prompts, completions,
                                                 completion_ids_list)
            self._lab_rewards = rewards  # (all processes' completions, reward functions)
            self._lab_texts = (list(prompts), list(completions))
            return rewards

        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            if not self.lab_shaping:
                self.lab_last = {"trl_advantages": out["advantages"].detach().clone()}
                return out
            mode = "train" if self.model.training else "eval"
            G = self.num_generations if mode == "train" else self.num_generations_eval
            device = out["advantages"].device
            per_func = self._lab_rewards
            rewards = (per_func * self.reward_weights.to(per_func.device).unsqueeze(0)).nansum(1)
            n = rewards.numel()
            if n % G:
                raise ValueError(f"G2RPOTrainer: {n} completions do not form whole groups of "
                                 f"num_generations = {G} (mismatched group sizes)")
            if self.lab_correct_fn is not None:
                rewards = torch.as_tensor(self.lab_correct_fn(rewards)).to(rewards.dtype)
            prompts, completions = self._lab_texts
            local = len(prompts)
            if self.lab_mode_fn is not None:
                ids = list(self.lab_mode_fn(prompts, completions))
                if len(ids) != local:
                    raise ValueError(f"mode_fn returned {len(ids)} mode ids for {local} "
                                     "completions (one per completion expected)")
                modes = self.accelerator.gather(torch.as_tensor(ids, dtype=torch.int64,
                                                                device=device))
            else:
                modes = torch.zeros(n, dtype=torch.int64, device=device)
            if modes.numel() != n:
                raise ValueError(f"G2RPOTrainer: {modes.numel()} mode ids for {n} rewards")
            r = rewards.detach().float().cpu().reshape(-1, G).contiguous()
            m = modes.cpu().to(torch.int32).reshape(-1, G).contiguous()
            C = (max(G, int(m.max()) + 1) if self.lab_num_clusters is None
                 else self.lab_num_clusters)
            step = int(self.state.global_step)
            lab_method = "g2rpo_bonus" if self.lab_method == "g2rpo" else self.lab_method
            lab = bridge_advantages(r, m, method=lab_method, schedule=self.lab_schedule,
                                    step=step, num_clusters=C,
                                    params=self.lab_params or None).reshape(-1)
            sl = slice(self.accelerator.process_index * local,
                       (self.accelerator.process_index + 1) * local)
            trl_adv = out["advantages"]
            mine = lab[sl].to(device=device, dtype=trl_adv.dtype)
            shaped = trl_adv + mine if self.lab_method == "g2rpo" else mine
            self.lab_last = {"trl_advantages": trl_adv.detach().clone(), "rewards": r,
                             "modes": m, "lab": lab, "advantages": shaped.detach().clone()}
            out["advantages"] = shaped
            if self.lab_method == "g2rpo":
                st = group_stats(r, m, num_clusters=C, schedule=self.lab_schedule, step=step)
                has = (r > 0).any(-1)
                log = self._metrics[mode]
                log["g2rpo/p_hat"].append(float(st["p_hat"].mean()))
                if bool(has.any()):
                    log["g2rpo/L_y"].append(float(st["L_y"][has].mean()))
                    log["g2rpo/K_hat"].append(float(st["K"][has].mean()))
                log["g2rpo/bonus_abs"].append(float(lab.abs().mean()))
            return out

    return G2RPOTrainer


_CLASS = None


def __getattr__(name):  # the class is built on first use, so importing this module needs no TRL
    global _CLASS
    if name == "G2RPOTrainer":
        if _CLASS is None:
            _CLASS = _make_trainer_class()
        return _CLASS
    raise AttributeError(name)
