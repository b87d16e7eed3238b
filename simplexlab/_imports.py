"""Which modules a data file may make the lab import (a base module: every layer may use it).

A sweep file names a rule from the user's own code by its import path (``method =
"mypkg.rules:tempered"``), and importing a module runs its code. A data file (a TOML someone
sent, a file beside a downloaded result) must not be able to make the lab run code the user
did not choose, so :func:`import_user_module` imports a module only when

- it is a dotted name of Python identifiers (``mypkg.rules``; no relative or empty name), and
- the user made it importable on purpose: the module or one of its parent packages was allowed
  by the user's own code (:func:`allow_import`), by the command line (``--import MODULE`` of
  ``simplexlab sweep``, repeatable) or by the environment (``SIMPLEXLAB_IMPORT``, a
  comma-separated list of module names: :func:`simplexlab._env.import_allowlist`), or the module
  is already imported (``sys.modules``: the user's own code imported it, so naming it runs
  nothing new).

Both are checked before anything is imported; a refusal is a ``ValueError`` naming the file and
key (``who``), the module, and how to allow it.
"""

from __future__ import annotations

import importlib
import keyword
import sys
import types

from ._env import IMPORT_VAR, import_allowlist

__all__ = ["allow_import", "allowed_modules", "import_user_module", "is_module_name"]

#: the modules allowed in this process by :func:`allow_import` (the user's code, ``--import``)
_ALLOWED: set[str] = set()


def is_module_name(name) -> bool:
    """Whether ``name`` is an absolute dotted module name (``a``, ``a.b_c``): identifiers that
    are not keywords, joined by dots."""
    return (isinstance(name, str) and bool(name)
            and all(part.isidentifier() and not keyword.iskeyword(part)
                    for part in name.split(".")))


def allow_import(*modules: str) -> None:
    """Allow data files to name ``modules`` (and every submodule of each) for import: a call in
    the user's own code, or ``--import MODULE`` on the command line. ``ValueError`` for a name
    that is not a dotted module name."""
    for module in modules:
        if not is_module_name(module):
            raise ValueError(f"allow_import: {module!r} is not a module name (dotted Python "
                             "identifiers, e.g. 'mypkg.rules')")
    _ALLOWED.update(modules)


def allowed_modules() -> frozenset[str]:
    """The module names allowed now: :func:`allow_import`'s and ``SIMPLEXLAB_IMPORT``'s."""
    return frozenset(_ALLOWED | set(import_allowlist()))


def _allowed(module: str) -> bool:
    parts = module.split(".")
    allowed = allowed_modules()
    return any(".".join(parts[:i]) in allowed for i in range(1, len(parts) + 1))


def import_user_module(module: str, who: str) -> types.ModuleType:
    """Import ``module``, named by a data file at ``who`` (e.g. ``"sweep.toml: fixed.method"``),
    if the user allowed it (module docstring); else ``ValueError`` naming ``who``, the module
    and how to allow it, raised before anything is imported. A module that cannot be imported
    is a ``ValueError`` too."""
    if not is_module_name(module):
        raise ValueError(f"{who}: {module!r} is not a module name (dotted Python identifiers, "
                         "e.g. 'mypkg.rules')")
    if module not in sys.modules and not _allowed(module):
        raise ValueError(
            f"{who}: module {module!r} is not allowed to be imported (a data file cannot make "
            f"the lab run code on its own); allow it with --import {module} on the command "
            f"line, {IMPORT_VAR}={module} in the environment, or "
            f"simplexlab.sweep.allow_import({module!r}) / importing it in your own code first")
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ValueError(f"{who}: cannot import {module!r} ({err}); the module must be "
                         "installed or on the Python path") from None
