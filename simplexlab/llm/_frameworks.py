r"""The frameworks' own advantage code, run through the advantage oracle
(:func:`simplexlab.verify.check_advantages`), and the table of what each framework calls GRPO.

Each framework's code is called as the framework calls it, in the oracle's conventions -- never a
copy of its formula:

* :func:`trl_function` -- TRL's ``GRPOTrainer`` itself (a tiny GPT-2 made on the spot, nothing
  downloaded): the rewards go in through a reward function, ``_generate_and_score_completions``
  returns TRL's advantages; with ``loss_type`` given, ``compute_loss`` runs on them and each
  completion's weight in the loss gradient is read off by autograd (the gradient of the loss with
  respect to the per-token log-probabilities, at ratio 1, completions of one token).
* :func:`verl_function` -- an estimator of verl's registry (``get_adv_estimator_fn``), called
  with the keywords verl's ``compute_advantage`` passes (``norm_adv_by_std_in_grpo`` to those
  that take it, an ``AlgoConfig``).
* :func:`tunix_function` -- an estimator of Tunix's registry
  (``function_registry.get_advantage_estimator``), as its GRPO learner calls it.

:func:`framework_rows` runs every setting of the frameworks installed here (:func:`settings`)
and names, for each, the lab's rule it computes (the convention inferred from probe groups, then
every check of the battery) and what differs at the edges (rejected rows, one valid rollout,
ragged groups), or "no lab rule" and how it differs from the nearest one; :func:`framework_table`
writes the rows as the Markdown table of ``docs/llm/take-a-rule.md``
(``tests/framework_table.py`` writes it there; a test checks the committed rows of the installed
frameworks against a fresh run).
"""

from __future__ import annotations

import importlib.metadata
import inspect
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["FRAMEWORKS", "Setting", "framework_rows", "framework_table", "installed",
           "settings", "trl_function", "tunix_function", "verl_function"]

#: the frameworks, by their package name
FRAMEWORKS = {"TRL": "trl", "verl": "verl", "Tunix": "google-tunix"}

#: the checks that decide which rule a setting computes; the others are its edges
CORE = ("whole groups", "zero variance", "std convention", "ties", "large G", "float32",
        "shuffled order", "batch locality")
#: the checks of a loss-weight row (the advantage itself is the scale_rewards rows')
LOSS_CHECKS = ("whole groups", "zero variance", "masked rows")


def installed(framework: str) -> str | None:
    """The installed version of ``framework`` (a key of :data:`FRAMEWORKS`), or ``None``."""
    try:
        return importlib.metadata.version(FRAMEWORKS[framework])
    except importlib.metadata.PackageNotFoundError:
        return None


# ---- TRL ---------------------------------------------------------------------------------------

_VOCAB = ["<pad>", "<bos>", "<eos>", "a", "b"]


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({t: i for i, t in enumerate(_VOCAB)}, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                   bos_token="<bos>")


class TRLFunction:
    """TRL's ``GRPOTrainer`` as ``fn(rewards, num_generations)`` (the oracle's ``"trl"``
    convention): :func:`trl_function`. The trainer is built on the first call and kept
    (:attr:`trainer`); ``NaN`` rewards come back from the reward function as ``None`` (TRL's
    unscorable completion)."""

    def __init__(self, config: dict, loss_type: str | None):
        self.config = dict(config)
        self.loss_type = loss_type
        self.trainer = None
        self._rewards = None
        self._folder = None

    def __repr__(self) -> str:
        return f"TRLFunction({self.config}, loss_type={self.loss_type!r})"

    def _build(self):
        import datasets
        import trl

        from ._model import tiny_model

        def reward(prompts, completions, **kw):
            return [None if np.isnan(v) else float(v) for v in self._rewards]

        self._folder = tempfile.TemporaryDirectory(prefix="simplexlab-trl-")
        kw = dict(per_device_train_batch_size=4, num_generations=2, max_completion_length=1,
                  max_steps=1, report_to=[], save_strategy="no", use_cpu=True, seed=0,
                  beta=0.0, logging_steps=1)
        if self.loss_type is not None:
            kw["loss_type"] = self.loss_type
            if self.loss_type == "luspo":  # TRL requires the sequence-level ratio for it
                kw["importance_sampling_level"] = "sequence"
        cfg = trl.GRPOConfig(output_dir=self._folder.name, **{**kw, **self.config})
        data = datasets.Dataset.from_dict({"prompt": ["<bos>a"] * 4})
        model = tiny_model(len(_VOCAB), n_layer=1, n_embd=16, n_head=2)
        self.trainer = trl.GRPOTrainer(model=model, reward_funcs=reward, args=cfg,
                                       train_dataset=data, processing_class=_tokenizer())

    def __call__(self, rewards, num_generations):
        import torch

        if self.trainer is None:
            self._build()
        tr = self.trainer
        self._rewards = np.asarray(rewards.detach().cpu(), dtype=np.float64)
        tr.num_generations = int(num_generations)
        inputs = [{"prompt": "<bos>a"}] * len(self._rewards)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # a model this small runs fastest on one thread
        try:
            with torch.no_grad():
                out = tr._generate_and_score_completions(inputs)
            return out["advantages"] if self.loss_type is None else self._loss_weights(out)
        finally:
            torch.set_num_threads(threads)

    def _loss_weights(self, inputs):
        tr = self.trainer
        real = tr._get_per_token_logps_and_entropies
        leaf = {}

        def logps(model, input_ids, attention_mask, logits_to_keep, **kw):
            lp, ent, aux = real(model, input_ids, attention_mask, logits_to_keep, **kw)
            leaf["lp"] = lp.detach().clone().requires_grad_(True)  # ratio 1: on-policy
            return leaf["lp"], ent, aux

        tr._get_per_token_logps_and_entropies = logps
        tr.current_gradient_accumulation_steps = 1  # what TRL's training step sets
        try:
            tr.model.train()
            loss = tr.compute_loss(tr.model, inputs)
        finally:
            del tr._get_per_token_logps_and_entropies
        loss.backward()
        return -leaf["lp"].grad.sum(-1)


def trl_function(*, scale_rewards: str = "group", loss_type: str | None = None,
                 **config) -> TRLFunction:
    """TRL's ``GRPOTrainer`` (the installed TRL) in the oracle's ``"trl"`` convention.

    Args:
        scale_rewards: TRL's ``GRPOConfig.scale_rewards`` (``"group"``, ``"batch"``,
            ``"none"``).
        loss_type: ``None``: the function returns TRL's advantages; a ``GRPOConfig.loss_type``:
            each completion's weight in that loss's gradient (check it with
            ``returns="loss_weights"``).
        **config: other ``GRPOConfig`` fields.

    Returns:
        A :class:`TRLFunction` (the trainer is built on its first call).
    """
    return TRLFunction({"scale_rewards": scale_rewards, **config}, loss_type)


# ---- verl --------------------------------------------------------------------------------------

def verl_function(name: str, *, norm_adv_by_std_in_grpo: bool = True) -> Callable:
    """The estimator ``name`` of verl's registry in the oracle's ``"verl"`` convention, called
    with the keywords verl's ``compute_advantage`` passes: ``token_level_rewards``,
    ``response_mask``, ``index``, an ``AlgoConfig`` and, where the estimator takes it,
    ``norm_adv_by_std_in_grpo``.

    Args:
        name: the registry's name (``"grpo"``, ``"rloo"``, ...).
        norm_adv_by_std_in_grpo: verl's ``algorithm.norm_adv_by_std_in_grpo``.

    Returns:
        ``fn(token_level_rewards, response_mask, index, config=None) -> (advantages, returns)``.
    """
    from verl.trainer.config import AlgoConfig
    from verl.trainer.ppo import core_algos

    est = core_algos.get_adv_estimator_fn(name)
    cfg = AlgoConfig(adv_estimator=name, norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo)
    takes = inspect.signature(est).parameters

    def fn(token_level_rewards, response_mask, index, config=None):
        kw = {"norm_adv_by_std_in_grpo": norm_adv_by_std_in_grpo} \
            if "norm_adv_by_std_in_grpo" in takes else {}
        return est(token_level_rewards=token_level_rewards, response_mask=response_mask,
                   index=index, config=cfg, **kw)

    return fn


# ---- Tunix -------------------------------------------------------------------------------------

def tunix_function(name: str) -> Callable:
    """The estimator ``name`` of Tunix's registry (``function_registry.get_advantage_estimator``)
    in the oracle's ``"tunix"`` convention (its own: ``compute_advantages(rewards,
    num_generations[, valid_mask])``).

    Args:
        name: the registry's name (``"grpo"``, ``"rloo"``, ``"drgrpo"``).

    Returns:
        Tunix's function.
    """
    from tunix.rl import (
        algo_core,  # noqa: F401  (registers Tunix's own estimators)
        function_registry,
    )

    return function_registry.get_advantage_estimator(name)


# ---- the settings and the table ----------------------------------------------------------------

@dataclass(frozen=True)
class Setting:
    """One framework setting the table reports: ``make()`` builds its function, called in
    ``convention``; ``returns`` what it returns; ``nearest`` the lab rules ``(method, params)``
    tried beside the inferred one; ``checks`` the checks run (default all)."""

    framework: str
    label: str
    make: Callable
    convention: str
    returns: str = "advantages"
    nearest: tuple = ()
    checks: tuple | None = None


_TRL_GROUP = ("grpo_sample_std", {"std_eps": 1e-4})


def settings(framework: str) -> list[Setting]:
    """The settings of ``framework`` (a key of :data:`FRAMEWORKS`) the table reports."""
    if framework == "TRL":
        out = [Setting("TRL", f'scale_rewards="{s}"',
                       lambda s=s: trl_function(scale_rewards=s), "trl", nearest=(rule,))
               for s, rule in (("group", _TRL_GROUP), ("batch", ("grpo_batch_std",
                                                                {"std_eps": 1e-4})),
                               ("none", ("dr_grpo", {})))]
        out += [Setting("TRL", f'loss_type="{t}" (the loss weights)',
                        lambda t=t: trl_function(loss_type=t), "trl", returns="loss_weights",
                        nearest=(_TRL_GROUP,), checks=LOSS_CHECKS)
                for t in ("grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "luspo")]
        return out
    if framework == "verl":
        return [
            Setting("verl", "grpo", lambda: verl_function("grpo"), "verl",
                    nearest=(("grpo_sample_std", {}),)),
            Setting("verl", "grpo, norm_adv_by_std_in_grpo=False",
                    lambda: verl_function("grpo", norm_adv_by_std_in_grpo=False), "verl",
                    nearest=(("dr_grpo", {}),)),
            Setting("verl", "grpo_vectorized", lambda: verl_function("grpo_vectorized"),
                    "verl", nearest=(("grpo_sample_std", {}),)),
            Setting("verl", "rloo", lambda: verl_function("rloo"), "verl",
                    nearest=(("rloo", {}),)),
            Setting("verl", "rloo_vectorized", lambda: verl_function("rloo_vectorized"),
                    "verl", nearest=(("rloo", {}),)),
            Setting("verl", "reinforce_plus_plus_baseline",
                    lambda: verl_function("reinforce_plus_plus_baseline"), "verl",
                    nearest=(("reinforce_pp", {}),)),
            Setting("verl", "grpo_passk", lambda: verl_function("grpo_passk"), "verl",
                    nearest=(("pass_at_k", {}),)),
        ]
    if framework == "Tunix":
        return [Setting("Tunix", n, lambda n=n: tunix_function(n), "tunix", nearest=(rule,))
                for n, rule in (("grpo", ("grpo_sample_std", {})), ("rloo", ("rloo", {})),
                                ("drgrpo", ("dr_grpo", {})))]
    raise ValueError(f"unknown framework {framework!r}; choose one of {list(FRAMEWORKS)}")


@dataclass(frozen=True)
class Row:
    """One row of the table: the framework and version, the setting, the lab's rule it computes
    (or ``"no lab rule"``), and what differs."""

    framework: str
    setting: str
    rule: str
    differs: str
    reports: list = field(default_factory=list, compare=False, repr=False)

    def line(self) -> str:
        return f"| {self.framework} | `{self.setting}` | {self.rule} | {self.differs} |"


def _rule_text(method: str, params: dict) -> str:
    p = ", ".join(f"{k}={v:g}" for k, v in params.items())
    return f"`{method}`" + (f" (`{p}`)" if p else "")


def _edges(report, core: bool = False) -> str:
    parts = [f"{d.check}: {d.why or 'differs'}" for d in report.deviations
             if (d.check in CORE) == core]
    if not core:  # the edges the function cannot be asked (no mask argument)
        skipped = {c: v.split(": ", 1)[1] for c, v in report.checks.items()
                   if v.startswith("skipped: the function takes no")}
        if skipped:
            arg = next(iter(skipped.values())).split("takes no ", 1)[1].split(",")[0]
            parts.append(f"not asked: {', '.join(skipped)} (it takes no {arg})")
    return "; ".join(parts)


def _row(setting: Setting, version: str) -> Row:
    from ..verify import check_advantages, infer_convention

    fn = setting.make()
    name = f"{setting.framework} {setting.label}"
    candidates, conv = [], None
    if setting.returns == "advantages":
        conv = infer_convention(fn, convention=setting.convention, name=name)
        if conv.rule is not None:
            candidates.append(conv.rule)
    candidates += [c for c in setting.nearest if c not in candidates]
    reports = []
    for method, params in candidates:
        rep = check_advantages(fn, method=method, params=params, convention=setting.convention,
                               returns=setting.returns, name=name, infer=False,
                               checks=setting.checks, errors="report")
        reports.append(rep)
        if not any(c in CORE for c in rep.failed):
            return Row(f"{setting.framework} {version}", setting.label,
                       _rule_text(method, params), _edges(rep) or "—", reports)
    best = min(reports, key=lambda r: sum(c in CORE for c in r.failed))
    core = [c for c in best.failed if c in CORE]
    if len(core) <= 2:  # near a rule of the lab: say how
        differs = "; ".join(x for x in (_edges(best, core=True), _edges(best)) if x)
    else:
        differs = "fails " + ", ".join(best.failed)
        if conv is not None and conv.rule is None:
            differs += f" (its form: {conv.text})"
    return Row(f"{setting.framework} {version}", setting.label, "no lab rule",
               f"nearest {_rule_text(best.method, best.params)}: {differs}", reports)


def framework_rows(frameworks=None) -> list[Row]:
    """Every setting of the frameworks installed here (``frameworks``: a subset of the keys of
    :data:`FRAMEWORKS`; default all of them), run through the oracle: one :class:`Row` each."""
    rows = []
    for fw in frameworks or FRAMEWORKS:
        version = installed(fw)
        if version is None:
            continue
        rows += [_row(s, version) for s in settings(fw)]
    return rows


HEADER = ("| framework | setting | the lab's rule | what differs (the check: what the oracle "
          "found) |\n|---|---|---|---|")


def framework_table(rows: list[Row]) -> str:
    """The rows as a Markdown table (:data:`HEADER` and one line per row)."""
    return "\n".join([HEADER, *(r.line() for r in rows)])
