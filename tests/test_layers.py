"""The package's layers: maths (``theory``) → ``shaping`` → ``sim`` → ``sweep`` → ``lab``,
each importing only the layers before it (and the base modules ``_checks``, ``_types``,
``_results``, ``_version``); no module imports another layer's private names."""

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "simplexlab"
ORDER = ["theory", "shaping", "sim", "sweep", "lab"]
BASE = {"_checks", "_types", "_results", "_version"}


def _imports(path: Path):
    """(target top-level name under simplexlab, imported names) for every relative or absolute
    import of simplexlab in ``path``."""
    pkg_parts = path.relative_to(PKG.parent).with_suffix("").parts[:-1]
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
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
                    yield [*mod, n], []
            else:
                yield mod, names
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "simplexlab":
                    yield a.name.split("."), []


@pytest.mark.parametrize("layer", ORDER)
def test_layers_import_only_downward(layer):
    allowed = set(ORDER[: ORDER.index(layer) + 1]) | BASE
    for path in sorted((PKG / layer).rglob("*.py")):
        for mod, names in _imports(path):
            top = mod[1] if len(mod) > 1 else None
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
        == set(ORDER)
