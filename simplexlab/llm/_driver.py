r"""A small GRPO driver for ``transformers`` causal LMs (G2 §5, App. G).

One training step (:func:`train`):

1. ``P = prompts_per_step`` prompts, ``G = group_size`` rollouts each, sampled with ``generate``
   at temperature 1 (``top_k = 0``, ``top_p = 1``: the policy itself, no truncation);
2. the verifier labels each completion with a reward in {0, 1} and a mode id (optionally through
   a noisy verifier: a correct completion scores 0 with probability ``delta_fn``, an incorrect
   one 1 with probability ``delta_fp``);
3. advantages from the rewards and mode ids by any rule of :mod:`simplexlab.shaping`
   (``method``; G²RPO with a verified :class:`~simplexlab.shaping.GainSchedule`), computed by the
   one JAX implementation through the bridge (:func:`simplexlab.llm.advantages`);
4. ``ppo_epochs`` passes of the clipped surrogate with asymmetric ε (``eps_low = 0.20``,
   ``eps_high = 0.28``, DAPO), token-mean over every completion token of the batch, no KL term
   (G2 App. G), AdamW, gradients accumulated over ``grad_accum`` micro-batches.

Logged every step: the verifier's reward and the true accuracy, pass@k, token entropy, the
normalized sequence (mode) entropy of the groups, and -- when the task can enumerate its
completions (:meth:`ArithmeticTask.mode_probabilities`) -- the policy's exact mode masses: ``p``,
``y``, ``L_y``, ``K̂``. Checkpoints (model, optimizer, RNG states, step, history) are written
atomically and resumed with ``resume=True``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from .._checks import is_int
from .._results import (
    atomic_write_bytes,
    atomic_write_json,
    check_file_name,
    provenance,
    writable_folder,
)
from ..shaping import GainSchedule
from ..theory import Verifier, concentration
from ._bridge import advantages as bridge_advantages

__all__ = ["DEFAULT_SCHEDULE", "TrainConfig", "clipped_token_loss", "train", "warm_start"]

DEFAULT_SCHEDULE = GainSchedule(kind="B", gain=1.5, neutralize=True, B_max=5.0)
"""The driver's default G²RPO schedule (that of ``experiments/schedules/g2rpo-b.toml``)."""


def resolve_schedule(schedule, force: bool = False) -> GainSchedule:
    """A :class:`GainSchedule` from the path of a verified schedule JSON (``load_schedule``:
    one that failed verification is refused unless ``force``), a ``GainSchedule``, or ``None``
    (:data:`DEFAULT_SCHEDULE`). Used by the driver's CLI and both adapters. ``force`` must be
    a bool (``"yes"`` is not ``True``)."""
    if not isinstance(force, bool):
        raise ValueError(f"force must be True or False; got {force!r}")
    if schedule is None:
        return DEFAULT_SCHEDULE
    if isinstance(schedule, GainSchedule):
        return schedule
    if isinstance(schedule, str | os.PathLike):
        from ..verify import load_schedule

        return load_schedule(schedule, force=force)
    raise ValueError(f"schedule must be the path of a verified schedule JSON, a GainSchedule or "
                     f"None; got {schedule!r}")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of :func:`train` (keyword-only; validated on construction). ``eta``:
    AdamW's rate (the step size; a neural network's rate, so the mean-field prediction fits its
    own time scale ``t = c·step``)."""

    method: str = "grpo"
    #: G²RPO's schedule (default :data:`DEFAULT_SCHEDULE`: schedule B, λ0 = 1.5, neutralizer,
    #: B_max = 5 -- experiments/schedules/g2rpo-b.toml, which passes ``simplexlab schedule
    #: verify``; without the clip |B_b| grows like sqrt(G) on groups with one failure)
    schedule: GainSchedule | None = None
    steps: int = 100
    prompts_per_step: int = 16
    group_size: int = 16
    eta: float = 3e-4
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps_low: float = 0.2
    eps_high: float = 0.28
    grad_accum: int = 1
    ppo_epochs: int = 1
    max_grad_norm: float = 1.0
    temperature: float = 1.0
    delta_fn: float = 0.0
    delta_fp: float = 0.0
    pass_k: int = 4
    mode_threshold: float = 0.05
    eval_every: int = 1
    checkpoint_every: int = 25
    seed: int = 0

    def __post_init__(self):
        from ..shaping import lookup_method

        lookup_method(self.method)
        if self.method == "g2rpo" and self.schedule is None:
            object.__setattr__(self, "schedule", DEFAULT_SCHEDULE)
        if self.schedule is not None and not isinstance(self.schedule, GainSchedule):
            raise ValueError(f"schedule must be a GainSchedule; got {self.schedule!r}")
        ints = {"steps": 1, "prompts_per_step": 1, "group_size": 2, "grad_accum": 1,
                "ppo_epochs": 1, "pass_k": 1, "eval_every": 1, "checkpoint_every": 1}
        for name, lo in ints.items():
            v = getattr(self, name)
            if not is_int(v) or v < lo:
                raise ValueError(f"{name} must be an integer >= {lo}; got {v!r}")
        if self.pass_k > self.group_size:
            raise ValueError(f"pass_k = {self.pass_k} must be <= group_size = {self.group_size}")
        if self.prompts_per_step % self.grad_accum:
            raise ValueError(f"prompts_per_step = {self.prompts_per_step} must be a multiple of "
                             f"grad_accum = {self.grad_accum}")
        for name in ("eta", "temperature", "max_grad_norm"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a finite number > 0; got {v!r}")
        for name in ("eps_low", "eps_high"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and 0 <= v < 1):
                raise ValueError(f"{name} must lie in [0, 1); got {v!r}")
        if not (is_int(self.seed) and 0 <= self.seed < 2**63):  # numpy's and torch's seeds
            raise ValueError(f"seed must be an integer in [0, 2**63 - 1]; got {self.seed!r}")
        if not (isinstance(self.betas, tuple | list) and len(self.betas) == 2
                and all(isinstance(b, int | float) and not isinstance(b, bool) and 0 <= b < 1
                        for b in self.betas)):
            raise ValueError(f"betas must be two numbers in [0, 1) (AdamW's); got "
                             f"{self.betas!r}")
        for name in ("delta_fn", "delta_fp", "mode_threshold"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise ValueError(f"{name} must be a number; got {v!r}")
        self.verifier  # noqa: B018  (Verifier validates the rates: in [0, 1], sum < 1)
        if not (isinstance(self.weight_decay, int | float) and self.weight_decay >= 0):
            raise ValueError(f"weight_decay must be >= 0; got {self.weight_decay!r}")

    @property
    def verifier(self) -> Verifier:
        """The noisy verifier of ``delta_fn``, ``delta_fp`` (G2 App. A.2)."""
        return Verifier(self.delta_fn, self.delta_fp)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["schedule"] = None if self.schedule is None else self.schedule.to_dict()
        d["betas"] = list(self.betas)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"TrainConfig: unknown field(s) {unknown}; known: {sorted(known)}")
        d = dict(d)
        if isinstance(d.get("schedule"), dict):
            d["schedule"] = GainSchedule.from_dict(d["schedule"])
        if isinstance(d.get("betas"), list | tuple):
            d["betas"] = tuple(d["betas"])
        return cls(**d)


# ---- the loss ---------------------------------------------------------------------------------

def clipped_token_loss(logp, old_logp, adv, mask, *, eps_low: float = 0.2,
                       eps_high: float = 0.28, num_tokens=None):
    r"""The clipped surrogate with asymmetric ε, token-mean (DAPO; G2 App. G):

    ``L = −(1/N) Σ_{i,t} m_{i,t} min(ρ_{i,t} A_i, clip(ρ_{i,t}, 1 − ε_low, 1 + ε_high) A_i)``,
    ``ρ = exp(logp − old_logp)``, ``N = num_tokens`` (default ``Σ m``: the tokens of this batch;
    pass the whole batch's count when accumulating micro-batches). ``logp``, ``old_logp``,
    ``mask``: ``(B, T)``; ``adv``: ``(B,)``, one advantage per sequence."""
    import torch

    ratio = torch.exp(logp - old_logp)
    a = adv[:, None]
    per_token = -torch.minimum(ratio * a, torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high) * a)
    m = mask.to(per_token.dtype)
    n = m.sum() if num_tokens is None else num_tokens
    return (per_token * m).sum() / max(float(n), 1.0)


def _completion_logp(model, seqs, prompt_len: int):
    """Per-token log-probabilities ``(B, T)`` of ``seqs[:, prompt_len:]`` and the logits."""
    import torch

    # every position attends to all earlier ones (pads after <eos> only follow masked tokens)
    logits = model(seqs, attention_mask=torch.ones_like(seqs)).logits[:, prompt_len - 1:-1]
    logits = logits.float()
    logp = torch.log_softmax(logits, -1)
    return logp.gather(-1, seqs[:, prompt_len:, None])[..., 0], logits


def _completion_mask(comp, eos: int):
    """Tokens up to and including the first ``<eos>`` (all, when there is none)."""
    import torch

    is_eos = comp == eos
    before = torch.cumsum(is_eos.int(), -1) - is_eos.int()  # eos seen strictly before t
    return before == 0


# ---- warm start ----------------------------------------------------------------------------

def check_warm_start(steps=300, batch=64, eta=3e-3, *, where: str = "warm_start") -> None:
    """``steps`` an integer >= 0, ``batch`` an integer >= 1, ``eta`` a finite number > 0
    (booleans are neither): ``ValueError`` naming ``where``, the setting and its value (a
    negative ``steps`` would otherwise be a silent no-op, ``range(-1)``)."""
    for name, v, lower in (("steps", steps, 0), ("batch", batch, 1)):
        if not is_int(v) or v < lower:
            raise ValueError(f"{where}: {name} must be an integer >= {lower}; got {v!r}")
    if isinstance(eta, bool) or not isinstance(eta, int | float) or not (
            math.isfinite(eta) and eta > 0):
        raise ValueError(f"{where}: eta must be a finite number > 0; got {eta!r}")


def warm_start(model, task, *, steps: int = 300, batch: int = 64, eta: float = 3e-3,
               seed: int = 0, progress=None) -> list[float]:
    """Supervised warm start on :meth:`task.warm_start_batch` (cross-entropy on the answer
    tokens), so the policy starts with several correct families of unequal mass; ``eta``:
    AdamW's rate. Returns the losses. Bad settings:
    :func:`check_warm_start`."""
    check_warm_start(steps, batch, eta)
    import torch

    rng = random.Random(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=eta, weight_decay=0.0)
    plen = len(task.prompt(task.targets[0]))
    losses = []
    model.train()
    it = range(steps) if progress is None else progress(range(steps))
    for _ in it:
        seqs = task.warm_start_batch(batch, rng)
        L = max(map(len, seqs))
        x = torch.tensor([s + [0] * (L - len(s)) for s in seqs])
        mask = torch.tensor([[0] * plen + [1] * (len(s) - plen) + [0] * (L - len(s))
                             for s in seqs], dtype=torch.bool)[:, plen:]
        logp, _ = _completion_logp(model, x, plen)
        loss = -(logp * mask).sum() / mask.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


# ---- training ----------------------------------------------------------------------------

def _noisy(rewards: np.ndarray, cfg: TrainConfig, rng: np.random.Generator) -> np.ndarray:
    """The verifier's outcomes of completions whose true reward is ``rewards``
    (:meth:`Verifier.outcome` on the driver's own uniforms)."""
    if cfg.delta_fn == 0 and cfg.delta_fp == 0:
        return rewards
    return np.asarray(cfg.verifier.outcome(rng.random(rewards.shape), rewards == 1))


def _checkpoint_path(out: Path, name: str) -> Path:
    return out / f"{name}.ckpt"


def _save_checkpoint(path: Path, model, opt, step, history, rngs, cfg):
    import io

    import torch

    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
                "history": history, "torch_rng": torch.get_rng_state(),
                "python_rng": rngs[0].getstate(), "numpy_rng": rngs[1].bit_generator.state,
                "config": cfg.to_dict()}, buf)
    atomic_write_bytes(path, buf.getvalue())


def _sequence_metrics(task, cfg, rewards_true, modes, comp_mask, logits):
    """Batch-level metrics of the sampled groups (the lab's formulas, on host arrays)."""
    import torch

    from ..shaping import pass_at_k, sequence_entropy, token_entropy

    P, G = rewards_true.shape
    c = rewards_true.sum(-1)
    good_ids = np.where(rewards_true == 1, modes, -1)
    with torch.no_grad():
        lg = logits.detach().double().numpy()
    tok_H = np.asarray(token_entropy(lg, comp_mask.numpy())).mean()
    seq_H = np.asarray(sequence_entropy(good_ids, task.K))
    Kmax = math.log(task.K)
    return {
        "accuracy": float(rewards_true.mean()),
        f"pass@{cfg.pass_k}": float(np.mean(pass_at_k(np.full(P, float(G)), c.astype(float),
                                                      cfg.pass_k))),
        "token_entropy": float(tok_H),
        "sequence_entropy": float(seq_H.mean() / Kmax),
        "groups_with_correct": float(np.mean(c > 0)),
    }


def train(model, task, cfg: TrainConfig, *, out: str | os.PathLike | None = None,
          name: str = "train", resume: bool = False, progress: bool = True,
          mode_probabilities=None, callback=None, mode_fn=None) -> dict[str, Any]:
    r"""Train ``model`` (a ``transformers`` causal LM) on ``task`` with GRPO-family advantages.

    ``task`` provides ``prompt(n)``, ``prompts(count, rng)``, ``label(n, completion) ->
    (reward, mode)``, ``num_modes``, ``K``, ``max_new_tokens`` and optionally
    ``mode_probabilities(model)`` (exact per-target mode masses, logged every ``eval_every``
    steps). ``out``: folder for ``<name>.json`` (the history with its configuration and
    provenance, rewritten atomically every checkpoint) and ``<name>.ckpt``; ``resume`` continues
    from the checkpoint. ``callback(step, batch)``, if given, sees every step's batch (a dict:
    ``targets``, ``sequences``, ``rewards``, ``modes``, ``advantages``, ``loss``) after the
    update. ``mode_fn(targets, completions, rewards) -> ids``, if given, replaces the verifier's
    mode labels in the advantages (e.g. :func:`simplexlab.llm.discover_modes` on the decoded
    completions, G2 Alg. 1 line 3): ``targets`` the ``P`` prompts' targets, ``completions`` the
    ``(P·G, max_new_tokens)`` token ids, ``rewards`` the ``(P, G)`` rewards the update sees; it
    returns ``(P, G)`` integer ids in ``[0, G)`` (``num_clusters = G``); the logged metrics keep
    the verifier's exact modes. Returns the result dict."""
    import torch

    if not isinstance(cfg, TrainConfig):
        raise ValueError(f"cfg must be a TrainConfig; got {cfg!r}")
    if out is not None:  # <out>/<name>.json and .ckpt: checked before the first step
        out = writable_folder(out, "out")
        check_file_name(name, "name")
    probe = mode_probabilities or getattr(task, "mode_probabilities", None)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.eta, betas=cfg.betas,
                            weight_decay=cfg.weight_decay)
    rng, nprng = random.Random(cfg.seed), np.random.default_rng(cfg.seed)
    torch.manual_seed(cfg.seed)
    history: list[dict[str, Any]] = []
    start = 0
    if resume and out is not None and _checkpoint_path(out, name).exists():
        # weights_only: tensors, containers and numbers only, never a pickled object
        path = _checkpoint_path(out, name)
        try:
            ck = torch.load(path, weights_only=True)
        except Exception as err:  # an object beyond tensors / containers / numbers, or no file
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ValueError(f"cannot resume {name!r}: {path} is not a checkpoint this lab "
                             f"writes (only tensors, containers and numbers are loaded; "
                             f"nothing in it was run): {first}") from None
        if ck["config"] != cfg.to_dict():
            raise ValueError(f"cannot resume {name!r}: the checkpoint was made with another "
                             "configuration (start afresh, or use the same settings)")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        torch.set_rng_state(ck["torch_rng"])
        rng.setstate(ck["python_rng"])
        nprng.bit_generator.state = ck["numpy_rng"]
        start, history = ck["step"], ck["history"]

    def record(step, row):
        if probe is not None and (step % cfg.eval_every == 0 or step == cfg.steps):
            with torch.no_grad():
                pi = np.asarray(probe(model), float)  # (targets, K + M)
            good, bad = pi[:, :task.K], pi[:, task.K:]
            p = bad.sum(-1)
            y = good / np.maximum(good.sum(-1, keepdims=True), 1e-300)
            row.update(p=float(p.mean()), L_y=float(np.mean(concentration(y))),
                       K_hat=float(np.mean(np.sum(y > cfg.mode_threshold, -1))),
                       y=y.mean(0).tolist(), p_per_target=p.tolist(),
                       y_per_target=y.tolist(),
                       z_per_target=(bad / np.maximum(p[:, None], 1e-300)).tolist())
        history.append({"step": step, **row})

    def result():
        return {"name": name, "config": cfg.to_dict(), "task": getattr(task, "name", "task"),
                "history": history, "provenance": provenance()}

    if start == 0:
        history.clear()
        record(0, {})
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.steps, initial=start, desc=f"{name} ({cfg.method})",
                   dynamic_ncols=True, leave=False)
    plen = len(task.prompt(task.targets[0]))
    P, G = cfg.prompts_per_step, cfg.group_size
    t_start = time.perf_counter()
    for step in range(start, cfg.steps):
        model.eval()
        targets = task.prompts(P, rng)
        prompts = torch.tensor([task.prompt(n) for n in targets for _ in range(G)])
        with torch.no_grad():
            seqs = model.generate(prompts, attention_mask=torch.ones_like(prompts),
                                  do_sample=True, temperature=cfg.temperature, top_k=0,
                                  top_p=1.0, max_new_tokens=task.max_new_tokens,
                                  pad_token_id=0, eos_token_id=2)
        comp = seqs[:, plen:]
        if comp.shape[1] < task.max_new_tokens:  # generation stopped early: pad
            pad = torch.zeros(comp.shape[0], task.max_new_tokens - comp.shape[1], dtype=comp.dtype)
            comp = torch.cat([comp, pad], 1)
            seqs = torch.cat([prompts, comp], 1)
        lab = np.asarray([task.label(n, comp[i * G + g].tolist())
                          for i, n in enumerate(targets) for g in range(G)]).reshape(P, G, 2)
        rewards_true, modes = lab[..., 0].astype(np.float32), lab[..., 1].astype(np.int32)
        rewards = _noisy(rewards_true, cfg, nprng).astype(np.float32)
        used, C = modes, task.num_modes
        if mode_fn is not None:
            used = np.asarray(mode_fn(targets, comp, rewards), np.int32).reshape(P, G)
            C = G
        adv = bridge_advantages(torch.from_numpy(rewards), torch.from_numpy(used),
                                method=cfg.method, schedule=cfg.schedule, step=step,
                                delta_fn=cfg.delta_fn, delta_fp=cfg.delta_fp,
                                num_clusters=C).reshape(-1).float()
        cmask = _completion_mask(comp, 2)
        with torch.no_grad():
            old_logp, logits = _completion_logp(model, seqs, plen)
        n_tok = int(cmask.sum())
        model.train()
        losses = []
        mb = P * G // cfg.grad_accum
        for _ in range(cfg.ppo_epochs):
            opt.zero_grad()
            for k in range(cfg.grad_accum):
                sl = slice(k * mb, (k + 1) * mb)
                logp, _ = _completion_logp(model, seqs[sl], plen)
                loss = clipped_token_loss(logp, old_logp[sl], adv[sl], cmask[sl],
                                          eps_low=cfg.eps_low, eps_high=cfg.eps_high,
                                          num_tokens=n_tok)
                loss.backward()
                losses.append(float(loss.detach()))
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            opt.step()
        if callback is not None:
            callback(step, {"targets": targets, "sequences": seqs, "rewards": rewards,
                            "modes": modes, "advantages": adv, "loss": losses})
        row = _sequence_metrics(task, cfg, rewards_true, modes, cmask, logits)
        row.update(reward=float(rewards.mean()), loss=float(np.sum(losses) / cfg.ppo_epochs),
                   adv_abs=float(adv.abs().mean()))
        record(step + 1, row)
        if bar is not None:
            last = history[-1]
            bar.set_postfix({k: f"{last[k]:.3f}" for k in ("accuracy", "L_y", "K_hat")
                             if k in last}, refresh=False)
            bar.update(1)
        if out is not None and ((step + 1) % cfg.checkpoint_every == 0 or step + 1 == cfg.steps):
            out.mkdir(parents=True, exist_ok=True)
            _save_checkpoint(_checkpoint_path(out, name), model, opt, step + 1, history,
                             (rng, nprng), cfg)
            atomic_write_json(out / f"{name}.json", {**result(), "wall_seconds": round(
                time.perf_counter() - t_start, 2)})
    if bar is not None:
        bar.close()
    return result()


def load_result(path: str | os.PathLike) -> dict[str, Any]:
    """A result file written by :func:`train`."""
    return json.loads(Path(path).read_text())
