r"""Every advantage rule by name: the one registry (:data:`METHODS`) and every rule parameter,
declared once (:data:`METHOD_PARAMETERS`).

A built-in rule is one final class beside its formula and one line below; a rule from user code
is registered with :func:`register_method` (nothing of the package edited) and is then a method
name wherever a built-in's is: the simulators and their sweeps, :func:`advantages`, the
finite-group theory, the torch bridge and the TRL / verl adapters.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from .._checks import Param
from .._imports import import_user_module
from ._advantages import (
    DrGRPORule,
    GRPOBatchStdRule,
    GRPORule,
    GRPOSampleStdRule,
    LooStdRule,
    MeanShiftedRule,
    RawRule,
    ReinforcePPRule,
    RLOORule,
)
from ._g2rpo import G2RPOBonusRule, G2RPORule
from ._passk import PassAtKRule, PKPORule
from ._rule import AbstractRule
from ._rules import FGRPORule, GRPONRule, IACRule, NSRRule, UnlikelinessRule, WReinforceRule
from ._token import ProGRPORule

__all__ = ["METHODS", "METHOD_PARAMETERS", "METHOD_PARAMS", "check_method_params",
           "import_method", "is_registered", "lookup_method", "nearest", "register_method",
           "unregister_method"]

METHODS: dict[str, AbstractRule] = {
    "raw": RawRule(),
    "mean_shifted": MeanShiftedRule(),
    "grpo": GRPORule(),
    "dr_grpo": DrGRPORule(),
    "rloo": RLOORule(),
    "reinforce_pp": ReinforcePPRule(),
    "f_grpo": FGRPORule(),
    "iac": IACRule(),
    "grpo_n": GRPONRule(),
    "g2rpo": G2RPORule(),
    "g2rpo_bonus": G2RPOBonusRule(),
    "progrpo": ProGRPORule(),
    "grpo_sample_std": GRPOSampleStdRule(),
    "grpo_batch_std": GRPOBatchStdRule(),
    "loo_std": LooStdRule(),
    "w_reinforce": WReinforceRule(),
    "nsr": NSRRule(),
    "pass_at_k": PassAtKRule(),
    "pkpo": PKPORule(),
    "unlikeliness": UnlikelinessRule(),
}
"""Every advantage rule by name (an :class:`AbstractRule`: what it needs, its formula, its
finite-group reductions)."""

METHOD_PARAMETERS: dict[str, Param] = {p.name: p for rule in METHODS.values()
                                       for p in rule.PARAMS}
"""Every parameter of a method, declared once beside its rule
(:class:`simplexlab._checks.Param`: default, domain, symbol, doc): the defaults
(:data:`METHOD_PARAMS`), the checks of :func:`advantages`, of the simulators and of the
finite-group theory all read it; :func:`register_method` adds a new rule's."""

METHOD_PARAMS: dict[str, Any] = {k: p.default for k, p in METHOD_PARAMETERS.items()}
"""Defaults of the methods' own parameters (from :data:`METHOD_PARAMETERS`)."""

_BUILTIN = frozenset(METHODS)
_REGISTERED: dict[str, tuple[str, ...]] = {}  # a registered rule -> the parameters it declared


def is_registered(name: str) -> bool:
    """Whether ``name`` is a rule registered from user code (:func:`register_method`)."""
    return name in _REGISTERED


def register_method(name: str, method: AbstractRule, *, params=()) -> str:
    r"""Add the advantage rule ``method`` (an :class:`AbstractRule`, e.g. a :class:`Method`
    written as a function) under ``name``, with the parameters it declares (``params``:
    :class:`simplexlab._checks.Param`\ s, each named in ``method.params``; a rule class may
    declare them as its ``PARAMS`` instead), so that every place that takes a method name takes
    it: the bandit and its sweeps, :func:`advantages`, the finite-group theory
    (:func:`meanfield_system` with ``group_size``), the torch bridge. Nothing of the package is
    edited. Returns ``name``.

    Refused with a ``ValueError`` naming the rule: a name that is not an identifier, that of a
    built-in rule or of one registered already; a parameter of ``method.params`` that no one
    declares, a declared one it does not use, one whose name another rule declared differently,
    or a default outside its own domain. :func:`unregister_method` takes it back."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"register_method: the name must be an identifier; got {name!r}")
    if name in _BUILTIN:
        raise ValueError(f"register_method: {name!r} is a built-in rule of METHODS; choose "
                         "another name")
    if name in METHODS:
        raise ValueError(f"register_method: {name!r} is registered already "
                         "(unregister_method first)")
    if not isinstance(method, AbstractRule):
        raise ValueError(f"register_method: rule {name!r} must be a Method (or another "
                         f"AbstractRule); got {method!r}")
    new = {}
    for p in (*params, *method.PARAMS):
        if not isinstance(p, Param):
            raise ValueError(f"register_method: rule {name!r}: params must be Param "
                             f"declarations; got {p!r}")
        old = METHOD_PARAMETERS.get(p.name, new.get(p.name))
        if old is not None and old != p:
            raise ValueError(f"register_method: rule {name!r} declares parameter {p.name!r}, "
                             f"which is declared already as {old}")
        p.check(p.default, f"register_method: rule {name!r}: the default of ")
        new[p.name] = p
    if undeclared := [k for k in method.params if k not in METHOD_PARAMETERS and k not in new]:
        raise ValueError(f"register_method: rule {name!r} uses parameter(s) {undeclared} that "
                         "no one declares: pass params=[Param(...)]")
    if unused := sorted({p.name for p in (*params, *method.PARAMS)} - set(method.params)):
        raise ValueError(f"register_method: rule {name!r} declares parameter(s) {unused} that "
                         f"its Method does not list in params {method.params}")
    METHODS[name] = method
    METHOD_PARAMETERS.update(new)
    METHOD_PARAMS.update({k: p.default for k, p in new.items()})
    _REGISTERED[name] = tuple(new)
    return name


def unregister_method(name: str) -> None:
    """Remove a rule added by :func:`register_method` (and the parameters it declared, where
    no other registered rule uses them); a built-in rule cannot be removed."""
    if name in _BUILTIN:
        raise ValueError(f"unregister_method: {name!r} is a built-in rule")
    if name not in _REGISTERED:
        raise ValueError(f"unregister_method: no registered rule {name!r}")
    declared = _REGISTERED.pop(name)
    del METHODS[name]
    still = {k for m in METHODS.values() for k in m.params}
    for k in declared:
        if k not in still:
            METHOD_PARAMETERS.pop(k, None)
            METHOD_PARAMS.pop(k, None)


def import_method(spec, who: str = "") -> str:
    """The rule a config file names: ``"package.module:name"`` imports ``package.module`` (the
    user's own module; importing it registers ``name`` with :func:`register_method`) and returns
    ``name``; a plain name is returned as it is. The module must be one the user allowed
    (:func:`simplexlab._imports.import_user_module`: ``--import``, ``SIMPLEXLAB_IMPORT``, or
    already imported by the user's own code), checked before it is imported. Refused with a
    ``ValueError`` naming ``who`` and the rule: a module that is not allowed or cannot be
    imported, an empty module or rule name, or a module that registers no rule ``name``."""
    if not isinstance(spec, str) or ":" not in spec:
        return spec
    module, _, name = spec.partition(":")
    if not name.isidentifier():
        raise ValueError(f"{who}method {spec!r}: {name!r} is not a rule name (write "
                         "\"package.module:rule\")")
    import_user_module(module, f"{who}method {spec!r}")
    if name not in METHODS:
        raise ValueError(f"{who}method {spec!r}: importing {module!r} registered no rule "
                         f"{name!r} (the module should call register_method({name!r}, ...)); "
                         f"registered: {sorted(set(METHODS) - _BUILTIN) or 'none'}")
    return name


def lookup_method(name, who: str = "") -> AbstractRule:
    """``METHODS[name]``; anything else raises ``ValueError`` naming it (``who``: a prefix such
    as ``"bandit: "``)."""
    if not isinstance(name, str) or name not in METHODS:
        raise ValueError(f"{who}unknown method {name!r}; choose one of {sorted(METHODS)}")
    return METHODS[name]


def nearest(name, choices) -> str:
    """``" (did you mean 'x'?)"`` for the nearest of ``choices`` (difflib), or ``""``."""
    near = difflib.get_close_matches(str(name), list(choices), n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


def check_method_params(method: str, rule: AbstractRule, params, who: str = "") -> dict:
    """``params`` (``None``: none) as a dict, refused with a ``ValueError`` naming ``who`` when
    it is not a mapping, names a parameter no rule declares (a misspelling: the known names and
    the nearest one), or one that ``rule`` (the method ``method``) does not use (naming the
    method's own parameters): a parameter is never silently dropped."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise ValueError(f"{who}params must be a mapping of parameter names to values; got "
                         f"{params!r}")
    own = tuple(rule.params)
    takes = f"method {method!r} takes {list(own)}" if own else \
        f"method {method!r} takes no parameter"
    for k in params:
        if not isinstance(k, str) or k not in METHOD_PARAMETERS:
            raise ValueError(f"{who}unknown method parameter {k!r}"
                             f"{nearest(k, own) or nearest(k, METHOD_PARAMETERS)}; {takes} "
                             f"(every rule's: {sorted(METHOD_PARAMETERS)})")
    if unused := [k for k in params if k not in own]:
        raise ValueError(f"{who}method {method!r} does not use parameter(s) {unused} (a "
                         f"parameter of another rule); {takes}")
    return dict(params)
