r"""The advantage oracle: any advantage function -- a framework's, a user's -- run on a battery of
groups against the lab's exact rule (:func:`simplexlab.shaping.advantages`), every deviation
reported with the smallest group that shows it.

The frameworks keep shipping advantage code that is wrong in the same few ways: partial groups
mis-grouped by a fixed stride (AReaL #1419), rejected or zero-action rows shifting their
siblings' baseline (verl PR #6452, OpenRLHF PR #1239), a float32 leave-one-out std residue
inflating advantages ~4000× (NeMo-RL PR #4161), zero-variance groups counted in the loss
denominator (TRL #6367), the std convention (ddof, ε), batch- instead of group-level scaling.
:func:`check_advantages` runs a function on groups built to show each of them (:data:`CHECKS`),
compares it with the lab's rule of the same meaning, explains a deviation where it can (which
alternative reproduces it: masked rows counted, a fixed stride, another std convention, one
scale for the batch, a denominator that counts zero-variance groups) and infers the function's
std convention from probe groups (:func:`infer_convention`: the baseline, ddof, ε, group or
batch level, named as a rule of the lab where there is one).

A function is called in one of four conventions (:data:`CONVENTIONS`), the frameworks':

* ``"plain"``: ``fn(rewards, group_ids[, mask]) -> advantages``, NumPy arrays of one row per
  rollout (``mask``: ``True`` = the rollout is valid; passed when ``fn`` takes a ``mask``);
  groups by id, rows in any order.
* ``"trl"``: TRL's ``GRPOTrainer`` (``_generate_and_score_completions``): ``fn(rewards,
  num_generations)`` on a torch tensor of contiguous groups; a rejected (unscorable) rollout is
  a ``NaN`` reward, as TRL marks a completion every reward function returned ``None`` for.
* ``"verl"``: a function of verl's advantage-estimator registry (``register_adv_est``):
  ``fn(token_level_rewards=, response_mask=, index=, config=)`` -> ``(advantages, returns)``,
  torch tensors ``(batch, response_length)``; each score at its response's last valid token
  (responses of unequal lengths), groups by ``index`` (verl's ``uid``), a rejected response has an
  empty response mask; a response's advantage is read at its last valid token.
* ``"tunix"``: Tunix's ``compute_advantages(rewards, num_generations[, valid_mask])``
  (``@function_registry.register_advantage_estimator``): contiguous groups, NumPy arrays;
  rejected rollouts through ``valid_mask`` where the function takes it.

The two that pass torch tensors (trl, verl) are served by :mod:`simplexlab.llm` (the llm extra),
which registers them when it is imported; this module never imports torch.

A convention that cannot say something is not asked it: the contiguous ones (trl, tunix) have no
shuffled order and say a ragged group by masked padding; one without masks (tunix before
``valid_mask``, a plain function without ``mask``) skips the masked checks, each skip reported
with its reason. ``returns="loss_weights"``: the function returns each rollout's weight in the
batch's loss gradient (the coefficient of ``∇ log π(o_i)``, equal completion lengths) instead of
its advantage; the lab's weight is the advantage over the number of valid rollouts of the groups
that carry signal (a group whose every advantage is 0 adds nothing to the gradient and must not
dilute the others: TRL #6367).

Bad input, one line naming the function and the group (``ValueError``): ``fn`` not callable, a
function that raises, returns another shape or non-finite values; a rule that needs mode ids or
log-probabilities (the conventions pass rewards only), an unknown convention or method.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import jax
import numpy as np

from .. import shaping

__all__ = ["CHECKS", "CONVENTIONS", "AdvantageReport", "Convention", "Deviation",
           "check_advantages", "infer_convention"]

CONVENTIONS = ("plain", "trl", "verl", "tunix")
"""The calling conventions of :func:`check_advantages` (the module docstring says each)."""

CHECKS = {
    "whole groups": "mixed groups of 2 to 8 rollouts, alone and in a batch",
    "zero variance": "all-0 and all-1 groups, alone and beside mixed groups",
    "std convention": "groups of 2, 3 and 5 rollouts: the std's ddof and its ε",
    "ties": "real-valued rewards with ties, and a small spread (where ε shows)",
    "large G": "one group of 256 rollouts",
    "float32": "the cases above in float32 (the lab's rule on the rounded rewards)",
    "shuffled order": "three groups interleaved in the batch, grouped by id",
    "ragged groups": "groups of unequal sizes",
    "masked rows": "rejected rows: advantage 0, their siblings as without them",
    "one valid rollout": "a group with one valid rollout: no group-relative signal, 0",
    "batch locality": "a group's advantages in batches with other groups, as alone",
}
"""The checks of the oracle's battery, in order: name -> what its cases ask."""

_TOL = {"float64": (1e-6, 1e-6), "float32": (2e-4, 2e-4)}  # (rtol, atol) on advantages


@dataclass(frozen=True)
class Deviation:
    """A failed check, shown by its smallest group: ``group`` (the rewards, ``None`` for a
    rejected row), what the lab's rule gives (``expected``) and the function (``got``), the case
    of the battery it is from and, where an alternative reproduces it, ``why``."""

    check: str
    case: str
    group: list
    expected: list
    got: list
    max_error: float
    why: str = ""

    def line(self) -> str:
        why = f": {self.why}" if self.why else ""
        return f"{self.check}{why}. {self.where()}"

    def where(self) -> str:
        """The smallest group, what the lab's rule gives and what the function gave."""
        if not self.got:  # the function failed on the case
            return f"Smallest group ({self.case}): rewards {_fmt(self.group)}"
        return (f"Smallest group ({self.case}): rewards {_fmt(self.group)}; the lab's rule "
                f"{_fmt(self.expected)}; got {_fmt(self.got)} (max error {self.max_error:.3g})")

    def to_dict(self) -> dict:
        return dict(check=self.check, case=self.case, group=self.group,
                    expected=self.expected, got=self.got, why=self.why,
                    max_error=self.max_error if math.isfinite(self.max_error) else None)


@dataclass(frozen=True)
class Convention:
    """A function's baseline and scale as inferred from probe groups (:func:`infer_convention`):
    ``baseline`` (``"mean"``, ``"leave-one-out mean"``, ``"other"``), ``scale`` (``"none"``,
    ``"std"``, ``"other"``), ``ddof`` and ``eps`` of the std, ``level`` (``"group"`` or
    ``"batch"``: one std for the whole batch); :attr:`text` names it, :attr:`rule` is the lab's
    rule of the same meaning (``(method, params)``, or ``None``)."""

    baseline: str
    scale: str
    ddof: int | None = None
    eps: float | None = None
    level: str = "group"

    @property
    def text(self) -> str:
        if self.baseline == "other" or self.scale == "other":
            return "not (r − mean r) times a constant per group"
        if self.baseline == "leave-one-out mean":
            return "r − mean of the other rollouts (RLOO)"
        if self.scale == "none":
            return "r − mean r (no scale)"
        std = "the batch's std" if self.level == "batch" else "std"
        return f"(r − mean r) / ({std}(ddof={self.ddof}) + {_num(self.eps)})"

    @property
    def rule(self) -> tuple[str, dict] | None:
        if self.baseline == "leave-one-out mean":
            return "rloo", {}
        if self.baseline != "mean" or self.scale == "other":
            return None
        if self.scale == "none":
            return "dr_grpo", {}
        if self.level == "batch":
            return ("grpo_batch_std", {"std_eps": self.eps}) if self.ddof == 1 else None
        if self.ddof == 1:
            return "grpo_sample_std", {"std_eps": self.eps}
        return ("grpo", {}) if _close_eps(self.eps, 1e-6) else None

    def to_dict(self) -> dict:
        return dict(baseline=self.baseline, scale=self.scale, ddof=self.ddof, eps=self.eps,
                    level=self.level, text=self.text,
                    rule=None if self.rule is None else list(self.rule))


@dataclass
class AdvantageReport:
    """What :func:`check_advantages` found: each check's outcome (``"pass"``, ``"fail"``,
    ``"skipped: <why>"``), one :class:`Deviation` per failed check (its smallest group), the
    inferred :class:`Convention` (``None`` where the rule is not a z-score-like one or the
    probes could not be run). ``passed``: no check failed."""

    function: str
    method: str
    params: dict
    convention: str
    returns: str
    checks: dict[str, str]
    deviations: list[Deviation]
    inferred: Convention | None = None
    cases: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.deviations

    @property
    def failed(self) -> list[str]:
        """The names of the failed checks, in :data:`CHECKS` order."""
        return [c for c, v in self.checks.items() if v == "fail"]

    def summary(self) -> str:
        """One screen: a line per check, then every deviation with its smallest group."""
        params = f" {self.params}" if self.params else ""
        head = (f"{self.function} ({self.convention} convention, {self.returns}) against the "
                f"lab's {self.method}{params}: "
                + ("every check passes" if self.passed
                   else f"{len(self.deviations)} check(s) fail") + f" ({self.cases} cases)")
        lines = [head]
        if self.inferred is not None:
            rule = self.inferred.rule
            named = (f" = the lab's {rule[0]}{' ' + _params(rule[1]) if rule[1] else ''}"
                     if rule else " (no rule of the lab)")
            lines.append(f"  inferred: {self.inferred.text}{named}")
        for name, verdict in self.checks.items():
            lines.append(f"  {verdict.split(':')[0]:7s} {name}"
                         + (f" ({verdict.split(': ', 1)[1]})" if ": " in verdict else ""))
        by_why: dict[str, list[Deviation]] = {}
        for d in self.deviations:  # one line per explanation: the checks it fails, its group
            by_why.setdefault(d.why or f"({d.check})", []).append(d)
        for why, devs in by_why.items():
            d = min(devs, key=lambda x: len(x.group))
            if len(devs) == 1:
                lines.append(f"  - {d.line()}")
            else:
                names = ", ".join(x.check for x in devs)
                lines.append(f"  - {names}: {why}. {d.where()}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return dict(function=self.function, method=self.method, params=self.params,
                    convention=self.convention, returns=self.returns, passed=self.passed,
                    checks=self.checks, deviations=[d.to_dict() for d in self.deviations],
                    inferred=None if self.inferred is None else self.inferred.to_dict(),
                    cases=self.cases, notes=self.notes)


# ---- the battery -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Case:
    """Groups of one batch (each a 1-d array of rewards, ``NaN`` = a rejected row, whose reward
    the convention passes as ``masked_value``), the dtype the function gets, whether the rows are
    interleaved, and the check the case belongs to."""

    check: str
    name: str
    groups: tuple
    dtype: str = "float64"
    shuffle: bool = False
    masked_value: float = 0.0

    @property
    def masked(self) -> bool:
        return any(np.isnan(g).any() for g in self.groups)

    @property
    def ragged(self) -> bool:
        return len({len(g) for g in self.groups}) > 1

    @property
    def size(self) -> int:
        return sum(len(g) for g in self.groups)


def _g(*v):
    return np.asarray(v, dtype=np.float64)


N = np.nan


def _battery(binary: bool) -> list[_Case]:
    """The cases, smallest first within each check (``binary``: the rule takes 0/1 rewards
    only)."""
    rng = np.random.default_rng(0)
    mixed = (_g(1, 0), _g(1, 0, 0), _g(1, 1, 0, 0), _g(1, 0, 0, 0, 0, 0, 0, 1))
    batch = (_g(1, 0, 0, 0), _g(1, 1, 0, 1), _g(0, 1, 1, 0))
    real = (_g(0.2, 0.9, 0.4), _g(0.1, 0.5, 0.3, 0.8))
    cases = [_Case("whole groups", f"a group of {len(g)}", (g,)) for g in mixed]
    cases.append(_Case("whole groups", "3 groups of 4", batch))
    if not binary:
        cases += [_Case("whole groups", f"real-valued, a group of {len(g)}", (g,)) for g in real]
    zero = [_Case("zero variance", "all 0", (_g(0, 0, 0, 0),)),
            _Case("zero variance", "all 1", (_g(1, 1, 1, 1),)),
            _Case("zero variance", "all 0 and all 1 beside mixed groups",
                  (_g(1, 0, 0, 1), _g(0, 0, 0, 0), _g(1, 1, 1, 1), _g(1, 1, 1, 0)))]
    if not binary:
        zero.append(_Case("zero variance", "real-valued, all equal", (_g(0.7, 0.7, 0.7),)))
    cases += zero
    std = [_Case("std convention", f"a group of {len(g)}", (g,))
           for g in (_g(1, 0), _g(0, 1, 1), _g(1, 0, 0, 1, 0))]
    if not binary:
        std += [_Case("std convention", f"real-valued, a group of {len(g)}", (g,))
                for g in (_g(0.0, 0.3), _g(0.1, 0.4, 1.0), _g(0.0, 0.2, 0.9, 0.5, 0.3))]
    cases += std
    if not binary:
        cases += [_Case("ties", "ties", (_g(0.5, 0.5, 1.0, 0.0),)),
                  _Case("ties", "ties, three equal", (_g(0.3, 0.3, 0.3, 0.9),)),
                  _Case("ties", "small spread (1e-3)", (_g(0.0, 1e-3, 2e-3, 1e-3),)),
                  _Case("ties", "small spread (1e-6)", (_g(0.5, 0.5 + 1e-6, 0.5, 0.5 + 3e-6),))]
    big = np.zeros(256)
    big[rng.choice(256, 37, replace=False)] = 1.0
    cases.append(_Case("large G", "one group of 256", (big,)))
    if not binary:
        cases.append(_Case("large G", "real-valued, one group of 256", (rng.uniform(size=256),)))
    f32 = [c for c in cases if c.check in ("whole groups", "zero variance", "ties")]
    cases += [_Case("float32", f"{c.name} (float32)", c.groups, dtype="float32") for c in f32]
    if not binary:  # the others agree exactly (their std is 0) but their float32 mean rounds
        cases += [_Case("float32", "float32: the others of one rollout agree",
                        (_g(0.9, 0.9, 0.9, 0.1),), dtype="float32"),
                  _Case("float32", "float32: the others of one rollout agree, G = 8",
                        (_g(0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.9),), dtype="float32")]
    cases.append(_Case("shuffled order", "3 groups of 4, interleaved", batch, shuffle=True))
    cases += [_Case("ragged groups", "groups of 4 and 3", (_g(1, 0, 0, 1), _g(1, 1, 0))),
              _Case("ragged groups", "groups of 2, 5, 3",
                    (_g(1, 0), _g(0, 1, 1, 0, 1), _g(1, 0, 0))),
              _Case("ragged groups", "groups of 3, 4, 2, interleaved",
                    (_g(0, 1, 1), _g(1, 0, 0, 0), _g(0, 1)), shuffle=True)]
    for value in (0.0, 1.0):
        cases += [_Case("masked rows", f"one rejected row (its reward {value:g})",
                        (_g(1, 0, N, 1),), masked_value=value),
                  _Case("masked rows", f"two rejected rows, a mixed sibling (reward {value:g})",
                        (_g(N, 1, 0, 0), _g(0, 1, 1, 0)), masked_value=value),
                  _Case("masked rows", f"two rejected of 6 (reward {value:g})",
                        (_g(0, 1, N, N, 1, 0),), masked_value=value)]
    cases += [_Case("one valid rollout", "one valid of 4", (_g(1, N, N, N), _g(1, 0, 0, 1))),
              _Case("one valid rollout", "one valid of 4, its reward 0",
                    (_g(N, N, 0, N), _g(1, 0, 0, 1)), masked_value=1.0),
              _Case("one valid rollout", "a group of one rollout", (_g(1), _g(1, 0, 0, 1)))]
    alone = _g(1, 0, 0, 1, 0, 0)
    wide = _g(1, 1, 1, 1, 1, 0) if binary else _g(0.0, 1.0, 0.1, 0.9, 0.0, 1.0)
    cases += [_Case("batch locality", "a mixed group alone", (alone,)),
              _Case("batch locality", "beside 3 zero-variance groups",
                    (alone, _g(0, 0, 0, 0, 0, 0), _g(1, 1, 1, 1, 1, 1), _g(0, 0, 0, 0, 0, 0))),
              _Case("batch locality", "beside a group of another spread", (alone, wide))]
    return cases


# ---- the conventions ---------------------------------------------------------------------------

def _accepts(fn, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


@dataclass(frozen=True)
class _Layout:
    """One case laid out as a batch: flat rewards (rejected rows carry the masked value), the
    validity of each row, the group index of each row, and the (padded) group size."""

    rewards: np.ndarray
    valid: np.ndarray
    group: np.ndarray
    pos: np.ndarray  #: the row's place in its group
    size: int


def _layout(case: _Case, contiguous: bool, seed: int = 1) -> _Layout:
    """Rows group after group (a contiguous convention pads every group to the largest size with
    rejected rows), or interleaved (``case.shuffle``)."""
    G = max(len(g) for g in case.groups)
    rows, group, pos = [], [], []
    for i, g in enumerate(case.groups):
        pad = np.full(G - len(g), np.nan) if contiguous else np.zeros(0)
        rows.append(np.concatenate([g, pad]))
        group.append(np.full(len(rows[-1]), i))
        pos.append(np.arange(len(rows[-1])))
    r, grp, pos = np.concatenate(rows), np.concatenate(group), np.concatenate(pos)
    if case.shuffle:
        perm = np.random.default_rng(seed).permutation(len(r))
        r, grp, pos = r[perm], grp[perm], pos[perm]
    valid = ~np.isnan(r)
    r = np.where(valid, r, case.masked_value)
    return _Layout(r.astype(case.dtype), valid, grp, pos, G)


def _to_numpy(x, what: str) -> tuple[np.ndarray, bool]:
    """``(values as float64, whether they came in a dtype narrower than float64)``."""
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        x = x.numpy()
    narrow = getattr(getattr(x, "dtype", None), "itemsize", 8) < 8 and \
        np.issubdtype(x.dtype, np.floating)
    try:
        return np.asarray(x, dtype=np.float64), narrow
    except (TypeError, ValueError) as err:
        raise ValueError(f"{what} returned {type(x).__name__}, not an array of numbers "
                         f"({err})") from None


#: the conventions that pass torch tensors (``"trl"``, ``"verl"``): ``name -> call(fn, rewards,
#: valid, group, size) -> values``, registered by :mod:`simplexlab.llm` when it is
#: imported (this layer never imports torch); :func:`register_convention`
_TENSOR_CALLS: dict[str, Callable] = {}


def register_convention(name: str, call: Callable) -> None:
    """Serve the calling convention ``name`` (one of :data:`CONVENTIONS` that passes torch
    tensors: ``"trl"``, ``"verl"``) by ``call(fn, rewards, valid, group, size)``: ``fn`` called
    with the laid-out case (flat NumPy rewards, the validity and the group index of each row,
    the padded group size), returning its values one per row (a tensor or an array; a
    ``ValueError`` starting "returned " for a value of the wrong form)."""
    if name not in ("trl", "verl"):
        raise ValueError(f"register_convention: {name!r} is not a tensor convention ('trl', "
                         "'verl')")
    _TENSOR_CALLS[name] = call


class _Caller:
    """``fn`` in one convention: :meth:`run` gives its flat advantages of a laid-out case;
    :meth:`cannot` says why the convention cannot express a case (``None``: it can)."""

    def __init__(self, fn, convention: str):
        self.fn = fn
        self.convention = convention
        self.contiguous = convention in ("trl", "tunix")
        self.narrow = False
        self.mask = {"plain": _accepts(fn, "mask"), "trl": True, "verl": True,
                     "tunix": _accepts(fn, "valid_mask")}[convention]

    def cannot(self, case: _Case) -> str | None:
        if case.shuffle and self.contiguous:
            return f"the {self.convention} convention groups rows by position"
        needs_mask = case.masked or (case.ragged and self.contiguous)
        if needs_mask and not self.mask:
            arg = "valid_mask" if self.convention == "tunix" else "mask"
            return f"the function takes no {arg}, so rejected rows cannot be passed"
        return None

    def run(self, lay: _Layout) -> np.ndarray:
        """The function's values on ``lay``; :attr:`narrow` tells whether they came in a
        float dtype narrower than float64."""
        out, self.narrow = self._run(lay)
        return out

    def _run(self, lay: _Layout):
        conv = self.convention
        if conv == "plain":
            kw = {"mask": lay.valid.copy()} if self.mask else {}
            out = self.fn(lay.rewards.copy(), lay.group.copy(), **kw)
        elif conv == "tunix":
            kw = {"valid_mask": lay.valid.copy()} if self.mask else {}
            out = self.fn(rewards=lay.rewards.copy(), num_generations=lay.size, **kw)
        else:
            call = _TENSOR_CALLS.get(conv)
            if call is None:
                raise ValueError(f"the {conv} convention passes torch tensors, which "
                                 "simplexlab.llm builds: import simplexlab.llm first (the llm "
                                 "extra)")
            out = call(self.fn, lay.rewards.copy(), lay.valid.copy(), lay.group.copy(),
                       lay.size)
        return _to_numpy(out, "the function")


# ---- the lab's rule ----------------------------------------------------------------------------

#: the lab's values of the battery's groups, kept between calls (key: the rule object, its
#: parameters and the groups' bytes)
_CACHE: dict = {}


class _Rule:
    """The lab's exact rule ``method`` with ``params``, in float64: :meth:`groups_values` gives
    its value for every row of a case's groups; ``returns="loss_weights"`` divides by the valid
    rollouts of the groups that carry signal."""

    def __init__(self, method: str, params: dict, returns: str):
        self.method = method
        self.rule = shaping.lookup_method(method, "check_advantages: ")
        self.params = dict(params)
        self.returns = returns
        self.bound = int(self.rule.group_size_bound({**shaping.METHOD_PARAMS, **self.params}))

    def usable(self, case: _Case) -> str | None:
        if self.rule.binary and any(np.any((g != 0) & (g != 1) & ~np.isnan(g))
                                    for g in case.groups):
            return f"{self.method} takes 0/1 rewards only"
        small = [g for g in case.groups if 2 <= int((~np.isnan(g)).sum()) < self.bound]
        if small:
            return f"{self.method} needs groups of at least {self.bound} valid rollouts"
        if not self.rule.group_local and any(int((~np.isnan(g)).sum()) < 2
                                             for g in case.groups):
            return (f"{self.method} is normalised over the batch, whose every group needs two "
                    "valid rollouts")
        return None

    def groups_values(self, groups: Sequence[np.ndarray], dtype: str,
                      masked_as=None) -> list[np.ndarray]:
        """The rule's value for each row of each group (0 for a rejected row, and for every row
        of a group with fewer than two valid rollouts); ``masked_as``: treat rejected rows as
        valid rows of that reward (a diagnosis)."""
        groups = [np.asarray(g, dtype=dtype).astype(np.float64) for g in groups]
        key = (id(self.rule), self.method, tuple(sorted(self.params.items())), self.returns,
               masked_as, tuple(g.tobytes() for g in groups))
        hit = _CACHE.get(key)
        if hit is None:
            if len(_CACHE) > 20_000:
                _CACHE.clear()
            hit = _CACHE[key] = self._values(groups, masked_as)
        return [h.copy() for h in hit]

    def _values(self, groups, masked_as):
        if masked_as is not None:
            groups = [np.where(np.isnan(g), masked_as, g) for g in groups]
        out = [np.zeros(len(g)) for g in groups]
        live = [i for i, g in enumerate(groups) if int((~np.isnan(g)).sum()) >= 2]
        if not live:
            return out
        if self.rule.group_local:
            batches = [[i] for i in live]
        else:
            batches = [live]
        for idx in batches:
            G = max(len(groups[i]) for i in idx)
            r = np.zeros((len(idx), G))
            m = np.zeros((len(idx), G), dtype=bool)
            for k, i in enumerate(idx):
                g = groups[i]
                r[k, :len(g)] = np.where(np.isnan(g), 0.0, g)
                m[k, :len(g)] = ~np.isnan(g)
            with jax.enable_x64(True):
                a = np.asarray(shaping.advantages(
                    self.method, shaping.Groups(r, mask=None if m.all() else m),
                    params=self.params or None), dtype=np.float64)
            for k, i in enumerate(idx):
                out[i] = np.where(m[k, :len(groups[i])], a[k, :len(groups[i])], 0.0)
        if self.returns == "loss_weights":
            signal = sum(int((~np.isnan(groups[i])).sum()) for i in live
                         if np.any(np.abs(out[i]) > 1e-12))
            out = [o / max(signal, 1) for o in out]
        return out


def _per_group(values: np.ndarray, lay: _Layout, case: _Case) -> list[np.ndarray]:
    """Flat values back to the case's groups (the rows of the padding dropped)."""
    out = []
    for i, g in enumerate(case.groups):
        rows = np.flatnonzero(lay.group == i)
        rows = rows[np.argsort(lay.pos[rows])]
        out.append(values[rows][:len(g)])
    return out


def _fmt(values, most: int = 8) -> str:
    values = list(values)
    shown = values if len(values) <= most else values[:most - 2] + values[-1:]
    text = ["·" if v is None else f"{v:.4g}" for v in shown]
    if len(values) > most:
        text.insert(most - 2, "…")
    return "[" + ", ".join(text) + "]" + (f" ({len(values)} rollouts)" if len(values) > most
                                          else "")


def _num(x) -> str:
    if x is None:
        return "?"
    return "0" if x == 0 else f"{x:.2g}"


def _params(p: dict) -> str:
    return ", ".join(f"{k}={_num(v) if isinstance(v, float) else v}" for k, v in p.items())


def _close_eps(a, b) -> bool:
    return a is not None and abs(a - b) <= 0.05 * max(abs(b), 1e-12) + 1e-12


def _name(fn) -> str:
    mod = getattr(fn, "__module__", None)
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if qual is None:
        return repr(fn)
    return f"{mod}:{qual}" if mod else qual


# ---- running a case ----------------------------------------------------------------------------

def _call(caller: _Caller, lay: _Layout, case: _Case, name: str) -> np.ndarray:
    where = f"{name} on {case.check!r} case {case.name!r} (rewards {_show(case)})"
    try:
        out = caller.run(lay)
    except ValueError as err:
        if str(err).startswith(("the ", "returned ")):
            raise ValueError(f"{where}: {err}") from None
        raise ValueError(f"{where}: raised ValueError: {_one_line(err)}") from None
    except Exception as err:  # the function's own failure, named with its group
        raise ValueError(f"{where}: raised {type(err).__name__}: {_one_line(err)}") from None
    if out.shape != lay.rewards.shape:
        raise ValueError(f"{where}: returned advantages of shape {out.shape}; expected one per "
                         f"rollout, shape {lay.rewards.shape}")
    if not np.all(np.isfinite(out)):
        bad = np.flatnonzero(~np.isfinite(out))[:4].tolist()
        raise ValueError(f"{where}: returned non-finite advantages at rows {bad} "
                         f"({_fmt(out[bad])})")
    return out


def _shown(group, dtype="float64") -> list:
    """A group as the report shows it: its rewards, ``None`` for a rejected row."""
    return [None if np.isnan(v) else float(np.asarray(v, dtype)) for v in group]


def _one_line(err) -> str:
    text = " ".join(str(err).split())
    return text[:300] + ("…" if len(text) > 300 else "")


def _show(case: _Case) -> str:
    return "; ".join(_fmt([None if np.isnan(v) else v for v in g]) for g in case.groups)


def _compare(case, got_groups, want_groups):
    """``(max error, index of the worst group)``, or ``None`` when they agree. In float32 the
    tolerance grows with each group's conditioning ``max |r| / (max r − min r)`` (the rewards'
    own rounding, relative to their spread: what any float32 computation loses)."""
    rtol, atol = _TOL[case.dtype]
    worst, where = 0.0, None
    scale = max(1.0, max(float(np.max(np.abs(w))) if len(w) else 0.0 for w in want_groups))
    for i, (got, want) in enumerate(zip(got_groups, want_groups, strict=True)):
        err = np.abs(got - want)
        tol = atol * scale + rtol * np.abs(want)
        r = case.groups[i][~np.isnan(case.groups[i])]
        if case.dtype == "float32" and len(r) > 1 and np.ptp(r) > 0:
            cond = float(np.max(np.abs(r)) / np.ptp(r))
            tol = tol + 50 * float(np.finfo(np.float32).eps) * cond * float(np.max(np.abs(want)))
        bad = err > tol
        if np.any(bad) and float(err.max()) > worst:
            worst, where = float(err.max()), i
    return None if where is None else (worst, where)


def _agrees(case, got_groups, want_groups) -> bool:
    return _compare(case, got_groups, want_groups) is None


def _why(case, lay, got, rules, caller) -> str:
    """The alternative that reproduces a deviation, in words ('' when none does). ``rules``:
    ``[(the lab's rule, None), (the inferred convention's rule, its Convention)]``; each
    alternative is tried with each (a function of another std convention with masked rows
    counted shows both)."""
    groups = _per_group(got, lay, case)
    check = case.check
    for rule, conv in rules[1:]:
        if _agrees(case, groups, rule.groups_values(case.groups, case.dtype)):
            return f"the function computes {conv.text} ({_rule_name(conv)})"
    for rule, conv in rules:
        also = "" if conv is None else f" (and it computes {conv.text})"
        if case.masked or (case.ragged and caller.contiguous):
            for value in dict.fromkeys((case.masked_value, 0.0)):
                alt = rule.groups_values(case.groups, case.dtype, masked_as=value)
                alt = [np.where(np.isnan(c), g, a)  # the siblings: the rejected rows aside
                       for c, g, a in zip(case.groups, groups, alt, strict=True)]
                if _agrees(case, groups, alt):
                    return (f"the rejected rows enter their group's statistics as rewards "
                            f"{value:g}{also}")
        if check in ("ragged groups", "shuffled order", "one valid rollout") \
                and not caller.contiguous:
            stride = _stride(case, lay, got, rule)
            if stride is not None:
                return (f"the rows are grouped by a fixed stride of {stride}, not by their "
                        f"group ids{also}")
        alone = rule.groups_values(case.groups, case.dtype)
        factor = _common_factor(groups, alone)
        if factor is not None and not math.isclose(factor, 1.0, rel_tol=1e-4):
            if rule.returns == "loss_weights":
                n_live = sum(int((~np.isnan(g)).sum()) for g, a in
                             zip(case.groups, alone, strict=True) if np.any(np.abs(a) > 1e-12))
                for n, what in ((int(lay.valid.sum()), "the zero-variance groups' rollouts"),
                                (len(lay.rewards), "every row of the batch (rejected rows "
                                 "and zero-variance groups too)")):
                    if n != n_live and math.isclose(factor, n_live / n, rel_tol=1e-4):
                        return (f"the loss denominator counts {what}: the weights shrink by "
                                f"{n_live}/{n}{also}")
            if len(case.groups) > 1:
                return (f"every group of the batch is off by one factor {factor:.4g}: the "
                        f"scale is the batch's, not each group's{also}")
            return f"off by a factor {factor:.4g}{also}"
    if len(case.groups) > 1:
        scale = _batch_scale(case, groups)
        if scale is not None:
            return scale
    if check == "one valid rollout":
        single = [i for i, g in enumerate(case.groups) if int((~np.isnan(g)).sum()) < 2]
        if single and all(np.allclose(groups[i], np.nan_to_num(case.groups[i]))
                          for i in single):
            return "a group with one valid rollout gets its reward as advantage"
        if single and any(np.any(np.abs(groups[i]) > 1e-6) for i in single):
            return "a group with one valid rollout gets a non-zero advantage"
    if case.masked and any(np.any(np.abs(g[np.isnan(c)]) > 1e-6)
                           for g, c in zip(groups, case.groups, strict=True)):
        return "a rejected row gets a non-zero advantage"
    want = rules[0][0].groups_values(case.groups, case.dtype)
    if case.dtype == "float64":
        as32 = dataclasses.replace(case, dtype="float32")
        if _agrees(as32, groups, rules[0][0].groups_values(case.groups, "float32")):
            return ("the function computes in float32: it agrees with the rule on the "
                    "float32-rounded rewards, to float32 round-off")
    flat = [(g, w) for g, w in zip(groups, want, strict=True) if len(w)]
    if any(np.max(np.abs(w)) < 1e-6 < np.max(np.abs(g)) for g, w in flat):
        top = max(float(np.max(np.abs(g))) for g, w in flat if np.max(np.abs(w)) < 1e-6)
        return f"non-zero advantages (up to {top:.3g}) where the rule's are 0"
    if case.dtype == "float32":
        ratio = max(float(np.max(np.abs(g)) / max(np.max(np.abs(w)), 1e-12))
                    for g, w in zip(groups, want, strict=True) if len(g))
        f64 = rules[0][0].groups_values(case.groups, "float64")
        if ratio > 2:
            return (f"in float32 the advantages grow {ratio:.3g}× past the rule's: a "
                    "round-off residue divides where a std is exactly 0")
        if not _agrees(case, groups, f64):
            return "float32 round-off beyond the tolerance"
    if len(case.groups) > 1 and rules[0][0].rule.group_local:
        return "a group's values depend on the other groups of its batch"
    return ""


def _rule_name(conv: Convention) -> str:
    rule = conv.rule
    if rule is None:
        return "no rule of the lab"
    return f"the lab's {rule[0]}{' ' + _params(rule[1]) if rule[1] else ''}"


def _stride(case, lay, got, rule) -> int | None:
    """The fixed stride whose contiguous chunks, taken as groups, reproduce ``got``."""
    n = len(lay.rewards)
    for stride in sorted({len(case.groups[0]), max(len(g) for g in case.groups)}):
        if n % stride or stride < 2:
            continue
        flat = lay.rewards.astype(np.float64)
        flat = np.where(lay.valid, flat, np.nan)
        chunks = [flat[i:i + stride] for i in range(0, n, stride)]
        alt = np.concatenate(rule.groups_values(chunks, case.dtype))
        if np.allclose(alt, got, rtol=1e-5, atol=1e-6):
            return stride
    return None


def _batch_scale(case, groups) -> str | None:
    """'one scale for the batch' when every group with signal is ``(r − mean r) / c`` with one
    ``c`` (named as the batch's std where it is one)."""
    cs = []
    for g, a in zip(case.groups, groups, strict=True):
        v = ~np.isnan(g)
        if v.sum() >= 2 and np.ptp(g[v]) > 0:
            c = _implied_scale(g[v].astype(np.float64), a[v])
            if c is None:
                return None
            cs.append(c)
    if len(cs) < 2 or not np.allclose(cs, cs[0], rtol=1e-4):
        return None
    every = np.concatenate([g[~np.isnan(g)] for g in case.groups])
    for ddof in (0, 1):
        eps = cs[0] - float(np.std(every, ddof=ddof))
        if -1e-9 <= eps <= 1e-2:
            return (f"one scale for every group of the batch: the batch's std(ddof={ddof}) + "
                    f"{_num(eps if eps > 1e-12 else 0.0)}, not each group's")
    return f"one scale {cs[0]:.4g} for every group of the batch, not each group's"


def _common_factor(groups, alone) -> float | None:
    """The one factor ``f`` with ``groups ≈ f · alone`` for every group with signal."""
    num = sum(float(np.dot(g, a)) for g, a in zip(groups, alone, strict=True))
    den = sum(float(np.dot(a, a)) for a in alone)
    if den < 1e-12:
        return None
    f = num / den
    if abs(f) < 1e-6:  # the function gives 0 where the rule does not: no factor
        return None
    if all(np.allclose(g, f * a, rtol=1e-4, atol=1e-7) for g, a in zip(groups, alone,
                                                                       strict=True)):
        return f
    return None


# ---- the convention, inferred ------------------------------------------------------------------

_PROBES = [(_g(0.0, 1.0, 1.0, 3.0), 1.0), (_g(0.0, 1.0, 3.0), 1.0), (_g(0.0, 1.0), 1.0),
           (_g(0.0, 1.0, 1.0, 3.0), 1e-3), (_g(0.0, 2.0, 1.0, 0.0, 5.0), 1e-3),
           (_g(0.0, 1.0, 3.0), 1e-6), (_g(0.0, 1.0, 1.0, 3.0, 0.5, 2.0, 1.0, 0.0), 1e-6)]


def infer_convention(fn: Callable, *, convention: str = "plain",
                     name: str | None = None) -> Convention:
    r"""The baseline and scale of ``fn``, read from its answers on probe groups of 2 to 8
    real-valued rewards at three spreads (1, 1e-3, 1e-6, so that an ε of 1e-9 … 1e-2 shows
    beside the std): the implied scale ``c = (r_i − mean r) / A_i`` of each group; ``c = 1``: no
    scale; ``c = (n − 1)/n``: the leave-one-out mean (RLOO); ``c = std_ddof + ε`` with one ddof
    in {0, 1} and one ε for every probe: the z-score, named with its ddof and ε (to two
    significant digits); the same ``c`` for two groups of different spread in one batch: the
    batch's std.

    Args:
        fn: the advantage function.
        convention: how it is called (:data:`CONVENTIONS`).
        name: how errors name it (default its module and name).

    Returns:
        A :class:`Convention` (``"other"`` where no such form fits).

    Raises:
        ValueError: as :func:`check_advantages`, one line naming ``fn`` and the probe.
    """
    caller = _Caller(fn, _conv(convention))
    name = name or _name(fn)
    cs, stds = [], []
    for base, scale in _PROBES:
        g = base * scale
        case = _Case("std convention", f"probe of {len(g)} rollouts, spread {scale:g}", (g,))
        got = _call(caller, _layout(case, caller.contiguous), case, name)
        c = _implied_scale(g, got)
        if c is None:
            return Convention("other", "other")
        cs.append(c)
        stds.append((np.std(g, ddof=0), np.std(g, ddof=1), len(g)))
    cs = np.asarray(cs)
    if np.allclose(cs, 1.0, rtol=1e-5):
        return Convention("mean", "none")
    if np.allclose(cs, [(n - 1) / n for *_, n in stds], rtol=1e-5):
        return Convention("leave-one-out mean", "none")
    fits = []
    for ddof in (0, 1):
        s = np.asarray([st[ddof] for st in stds])
        eps = cs - s
        w = 1.0 / cs**2
        e = float(np.sum(w * eps) / np.sum(w))
        resid = float(np.max(np.abs(eps - e) / cs))
        fits.append((resid, ddof, e))
    resid, ddof, eps = min(fits)
    if resid > 1e-4 or eps < -1e-12:
        return Convention("mean", "other")
    eps = 0.0 if abs(eps) < 1e-12 else float(f"{eps:.2g}")
    level = "group"
    pair = _Case("std convention", "probe: two spreads in one batch",
                 (_g(0.0, 1.0, 1.0, 3.0), _g(0.0, 2.0, 1.0, 0.0) * 1e-2))
    lay = _layout(pair, caller.contiguous)
    got = _per_group(_call(caller, lay, pair, name), lay, pair)
    c = [_implied_scale(g, a) for g, a in zip(pair.groups, got, strict=True)]
    if None not in c and math.isclose(c[0], c[1], rel_tol=1e-4):
        level = "batch"
        everything = np.concatenate(pair.groups)
        s = float(np.std(everything, ddof=ddof))
        if not math.isclose(c[0], s + eps, rel_tol=1e-3):  # one scale, but not the batch std
            return Convention("mean", "other", level="batch")
    return Convention("mean", "std", ddof=ddof, eps=eps, level=level)


def _implied_scale(g, a) -> float | None:
    d = g - g.mean()
    use = np.abs(d) > 1e-3 * np.max(np.abs(d))
    if not np.any(use) or np.any(np.abs(a[use]) < 1e-300):
        return None
    c = d[use] / a[use]
    if not np.allclose(c, c[0], rtol=1e-5) or c[0] <= 0:
        return None
    return float(np.median(c))


def _conv(convention) -> str:
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}; choose one of {list(CONVENTIONS)}")
    return convention


# ---- the oracle --------------------------------------------------------------------------------

def check_advantages(fn: Callable, *, method: str = "grpo", params: dict | None = None,
                     convention: str = "plain", returns: str = "advantages",
                     name: str | None = None, infer: bool = True,
                     checks: Sequence[str] | None = None,
                     errors: str = "raise") -> AdvantageReport:
    r"""Run the advantage function ``fn`` on the battery of :data:`CHECKS` and compare it with
    the lab's exact rule ``method`` (a name of :data:`simplexlab.shaping.METHODS`, a rule of the
    rewards alone) with ``params``.

    Args:
        fn: the function, called in ``convention`` (:data:`CONVENTIONS`, module docstring).
        method: the lab's rule it should compute.
        params: the rule's own parameters (e.g. ``{"std_eps": 1e-4}``).
        convention: ``"plain"``, ``"trl"``, ``"verl"`` or ``"tunix"`` (trl and verl pass torch
            tensors: import :mod:`simplexlab.llm` first).
        returns: ``"advantages"``, or ``"loss_weights"`` (each rollout's weight in the loss
            gradient: the lab's advantage over the valid rollouts of the groups with signal).
        name: how the report and errors name ``fn`` (default its module and name).
        infer: also infer the function's std convention (:func:`infer_convention`; only where
            the rule is one of the rewards of real value).
        checks: the names of :data:`CHECKS` to run (default all).
        errors: ``"raise"`` (default): a case the function fails on (it raises, returns another
            shape or non-finite values) is a ``ValueError``; ``"report"``: a failed check whose
            deviation says so, and the battery goes on (a framework's table row).

    Returns:
        An :class:`AdvantageReport`: each check passed, failed or skipped (with the reason),
        every failed check's smallest deviating group with what the lab's rule gives there and,
        where an alternative reproduces the deviation, which. The float32 cases are compared
        with the lab's rule on the float32-rounded rewards (relative and absolute tolerance
        2e-4, 1e-6 in float64).

    Raises:
        ValueError: one line naming ``fn`` and the group, when ``fn`` raises, returns another
            shape or non-finite values; or for an unknown method / convention, a rule that needs
            mode ids or log-probabilities, ``fn`` not callable.
    """
    if not callable(fn):
        raise ValueError(f"check_advantages: the advantage function must be callable; got "
                         f"{fn!r}")
    convention = _conv(convention)
    if errors not in ("raise", "report"):
        raise ValueError(f"errors must be 'raise' or 'report'; got {errors!r}")
    if returns not in ("advantages", "loss_weights"):
        raise ValueError(f"returns must be 'advantages' or 'loss_weights'; got {returns!r}")
    rule = _Rule(method, dict(params or {}), returns)
    unknown = sorted(set(params or {}) - set(rule.rule.params))
    if unknown:
        raise ValueError(f"check_advantages: method {method!r} has no parameter(s) {unknown}; "
                         f"its parameters: {list(rule.rule.params)}")
    if rule.rule.modes or rule.rule.logp:
        need = "mode ids" if rule.rule.modes else "log-probabilities"
        raise ValueError(f"check_advantages: method {method!r} needs the rollouts' {need}, "
                         f"which the {convention} convention does not pass; the oracle checks "
                         "rules of the rewards alone")
    selected = list(CHECKS) if checks is None else list(checks)
    if unknown := [c for c in selected if c not in CHECKS]:
        raise ValueError(f"check_advantages: unknown check(s) {unknown}; the checks: "
                         f"{list(CHECKS)}")
    label = name or _name(fn)
    caller = _Caller(fn, convention)
    inferred, notes = None, []
    if infer and rule.rule.binary:
        notes.append(f"the std convention is inferred only against a rule of real-valued "
                     f"rewards ({method} takes 0/1 rewards)")
    elif infer and returns == "advantages":
        try:
            inferred = infer_convention(fn, convention=convention, name=label)
        except ValueError as err:
            notes.append(f"the std convention was not inferred: {err}")
    rules = [(rule, None)]
    if inferred is not None and inferred.rule is not None \
            and inferred.rule != (method, dict(params or {})):
        rules.append((_Rule(*inferred.rule, returns), inferred))
    outcome: dict[str, str] = {}
    found: dict[str, Deviation] = {}
    count = 0
    for case in _battery(rule.rule.binary):
        if case.check not in selected:
            outcome[case.check] = "skipped: not selected"
            continue
        reason = caller.cannot(case) or rule.usable(case)
        if reason is not None:
            outcome.setdefault(case.check, f"skipped: {reason}")
            continue
        lay = _layout(case, caller.contiguous)
        try:
            got = _call(caller, lay, case, label)
        except ValueError as err:
            if errors == "raise":
                raise
            outcome[case.check] = "fail"
            found.setdefault(case.check, Deviation(
                check=case.check, case=case.name,
                group=_shown(min(case.groups, key=len)),
                expected=[], got=[], max_error=math.inf,
                why=str(err).split("): ", 1)[-1]))
            continue
        count += 1
        if caller.narrow and case.dtype == "float64":  # the function computes in float32
            case = dataclasses.replace(case, dtype="float32")
            if not any("float32" in n for n in notes):
                notes.append("the function returns float32 for float64 rewards: every case is "
                             "compared as float32 (the lab's rule on the rounded rewards)")
        want = rule.groups_values(case.groups, case.dtype)
        got_groups = _per_group(got, lay, case)
        bad = _compare(case, got_groups, want)
        if outcome.get(case.check, "skipped").startswith("skipped"):
            outcome[case.check] = "pass"
        if bad is None:
            continue
        outcome[case.check] = "fail"
        err, i = bad
        old = found.get(case.check)  # the smallest group; of those, the largest error
        if old is not None and (len(old.group), -old.max_error) <= (len(case.groups[i]), -err):
            continue
        found[case.check] = Deviation(
            check=case.check, case=case.name, group=_shown(case.groups[i], case.dtype),
            expected=[float(v) for v in want[i]], got=[float(v) for v in got_groups[i]],
            max_error=err, why=_why(case, lay, got, rules, caller))
    ordered = {c: outcome.get(c, "skipped: no case applies to this rule") for c in CHECKS}
    if inferred is not None and inferred.rule is None and found:
        notes.append(f"the inferred convention, {inferred.text}, is no rule of the lab")
    return AdvantageReport(function=label, method=method, params=dict(params or {}),
                           convention=convention, returns=returns, checks=ordered,
                           deviations=[found[c] for c in CHECKS if c in found],
                           inferred=inferred, cases=count, notes=notes)
