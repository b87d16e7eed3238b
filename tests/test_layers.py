"""The package's layers: maths (``theory``) → ``shaping`` → ``sim`` → ``sweep`` → ``lab``,
each importing only the layers before it (and the base modules ``_checks``, ``_types``,
``_results``, ``_version``, ``_env``); no module imports another layer's private names.

``llm`` (the torch bridge) is a layer beside ``lab``: it imports theory, shaping, sim and sweep,
never ``lab``; ``lab`` may import llm's public package ``simplexlab.llm``, but only lazily (inside
a function, for the CLI's ``train`` command), so that importing ``lab`` never imports torch; no
layer below them imports ``llm``."""

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "simplexlab"
ORDER = ["theory", "shaping", "sim", "sweep", "verify", "lab"]
#: layers beside the last one of ORDER: name -> the layer of ORDER they sit beside
SIBLINGS = {"llm": "lab"}
BASE = {"_checks", "_env", "_types", "_results", "_version"}
#: upward imports allowed as deprecation shims, lazily only: (module, layer it may import);
#: ``sim/__init__.py``'s ``__getattr__`` serves the names that moved to ``simplexlab.verify``
SHIMS = {("sim/__init__.py", "verify")}


def _nodes(tree):
    """``(node, lazy)`` for every node of ``tree``; ``lazy``: inside a function (runs on call,
    not on import)."""
    stack = [(tree, False)]
    while stack:
        node, lazy = stack.pop()
        yield node, lazy
        inner = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def _imports(path: Path, *, with_lazy: bool = False):
    """(target module path under simplexlab as a list, imported names) for every relative or
    absolute import of simplexlab in ``path``; with ``with_lazy``, also whether the import sits
    inside a function."""
    for mod, names, lazy in _all_imports(path):
        yield (mod, names, lazy) if with_lazy else (mod, names)


def _all_imports(path: Path):
    pkg_parts = path.relative_to(PKG.parent).with_suffix("").parts[:-1]
    tree = ast.parse(path.read_text())
    for node, lazy in _nodes(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(pkg_parts[: len(pkg_parts) - node.level + 1])
                mod = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "simplexlab":
                mod = node.module.split(".")
            else:
                continue
            names = [a.name for a in node.names]
            if len(mod) == 1:  # from simplexlab import x / from . import x
                for n in names:
                    yield [*mod, n], [], lazy
            else:
                yield mod, names, lazy
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "simplexlab":
                    yield a.name.split("."), [], lazy


def _allowed(layer: str) -> set[str]:
    """The layers ``layer`` may import: those before it and itself (a sibling: those before the
    layer it sits beside, and itself)."""
    if layer in SIBLINGS:
        return set(ORDER[: ORDER.index(SIBLINGS[layer])]) | {layer}
    return set(ORDER[: ORDER.index(layer) + 1])


@pytest.mark.parametrize("layer", ORDER + list(SIBLINGS))
def test_layers_import_only_downward(layer):
    allowed = _allowed(layer) | BASE
    for path in sorted((PKG / layer).rglob("*.py")):
        for mod, names, lazy in _imports(path, with_lazy=True):
            top = mod[1] if len(mod) > 1 else None
            if SIBLINGS.get(top) == layer:  # lab -> llm: the public package, lazily
                where = f"{path.relative_to(PKG)} imports {'.'.join(mod)}"
                assert len(mod) == 2, f"{where}: only the public package simplexlab.{top}"
                assert lazy, f"{where} at import time (only inside a function)"
                assert not [n for n in names if n.startswith("_")], f"{where} private {names}"
                continue
            if (path.relative_to(PKG).as_posix(), top) in SHIMS:
                assert lazy and len(mod) == 2, f"{path.relative_to(PKG)}: shim import of " \
                                               f"{'.'.join(mod)} must be lazy and public"
                continue
            assert top in allowed, f"{path.relative_to(PKG)} imports {'.'.join(mod)} " \
                                   f"(layer {layer} may import only {sorted(allowed)})"
            if top != layer and top not in BASE:
                private = [n for n in names if n.startswith("_")]
                assert not private, f"{path.relative_to(PKG)} imports private {private} " \
                                    f"from layer {top}"


def test_base_modules_import_no_layer():
    for name in BASE:
        for mod, _ in _imports(PKG / f"{name}.py"):
            assert len(mod) < 2 or mod[1] in BASE, f"{name}.py imports {'.'.join(mod)}"


def test_every_module_belongs_to_a_layer_or_is_a_public_facade():
    facades = {"__init__", "__main__", "meanfield", "geometry", "sampling", "metrics",
               "categorical", "plotting"}
    top = {p.stem for p in PKG.glob("*.py")}
    assert top <= facades | BASE, sorted(top - facades - BASE)
    assert {p.name for p in PKG.iterdir() if p.is_dir() and p.name != "__pycache__"} \
        == set(ORDER) | set(SIBLINGS)


def test_sibling_layers_are_imported_lazily_elsewhere():
    """Outside ``llm`` itself no module imports it at import time (it imports torch): not the
    top-level facades, not the layer beside it (checked above), not the layers below."""
    for sibling in SIBLINGS:
        for path in sorted(PKG.rglob("*.py")):
            if path.relative_to(PKG).parts[0] == sibling:
                continue
            for mod, _, lazy in _imports(path, with_lazy=True):
                if len(mod) > 1 and mod[1] == sibling:
                    assert lazy, f"{path.relative_to(PKG)} imports {'.'.join(mod)} at import " \
                                 f"time"


def test_import_walker_sees_lazy_and_sibling_imports(tmp_path):
    """The checks above see what they are meant to see (a guard against a silent no-op)."""
    mods = {tuple(m): lazy for m, _, lazy in _imports(PKG / "llm" / "_bridge.py",
                                                     with_lazy=True)}
    assert mods[("simplexlab", "shaping")] is False
    assert _allowed("llm") == {"theory", "shaping", "sim", "sweep", "verify", "llm"}
    assert "llm" not in _allowed("lab") and "lab" not in _allowed("llm")
