"""The package's layers: maths (``theory``) → ``shaping`` → ``sim`` → ``sweep`` → ``verify`` →
``lab``, each importing only the layers before it (and the base modules ``_checks``, ``_types``,
``_results``, ``_version``, ``_env``, ``_interrupt``, ``_upstream``, ``_bibliography``).

Each layer's ``__init__`` is its only public door: no module imports another layer's private
``_module`` path (nor a private name from it); what a layer above needs beyond the public face is
served by the layer's one internal module, ``<layer>.internal``. ``experiments/``,
``benchmarks/`` and ``notebooks/`` sit outside every layer: they import only faces (and
``<layer>.internal``), never a private module nor a base module. Every public object has one
address, the face of its layer (the top-level ``simplexlab`` re-exports a few names of
``theory``: :data:`TOP_LEVEL`).

``llm`` (the torch bridge) is a layer beside ``lab``: it imports the layers below ``lab``, never
``lab``; ``lab`` may import llm's public package ``simplexlab.llm``, but only lazily (inside a
function, for the CLI's ``train`` command), so that importing ``lab`` never imports torch; no
layer below them imports ``llm``.

No module below ``lab`` reads or writes files: file I/O goes through ``simplexlab._results``."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "simplexlab"
ORDER = ["theory", "shaping", "sim", "sweep", "verify", "lab"]
#: layers beside the last one of ORDER: name -> the layer of ORDER they sit beside
SIBLINGS = {"llm": "lab"}
BASE = {"_checks", "_types", "_results", "_version", "_env", "_interrupt", "_upstream", "_imports",
        "_bibliography", "_jax_cache"}
#: folders outside the package whose imports of simplexlab are checked (outside every layer)
OUTSIDE = ("experiments", "benchmarks", "notebooks")
#: the names the top-level ``simplexlab`` re-exports from ``simplexlab.theory``
TOP_LEVEL = {"GRPO", "ConstantGain", "GoodBonus", "Neutralized", "ScheduleA", "ScheduleB",
             "Solution", "State", "Verifier", "make_state", "solve", "solve_ensemble"}


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
    for mod, names, lazy, _ in _all_imports(path.relative_to(ROOT).as_posix(), path.read_text()):
        yield (mod, names, lazy) if with_lazy else (mod, names)


def _all_imports(rel: str, source: str):
    """``(module path, names, lazy, line)`` of every import of simplexlab in ``source``, the
    text of the file ``rel`` (a path relative to the repository root, e.g.
    ``simplexlab/sim/_bandit.py``; relative imports are resolved from it)."""
    pkg_parts = Path(rel).with_suffix("").parts[:-1]
    tree = ast.parse(source)
    for node, lazy in _nodes(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(pkg_parts[: len(pkg_parts) - node.level + 1])
                mod = base + (node.module.split(".") if node.module else [])
                if not mod or mod[0] != "simplexlab":
                    continue
            elif node.module and node.module.split(".")[0] == "simplexlab":
                mod = node.module.split(".")
            else:
                continue
            names = [a.name for a in node.names]
            if len(mod) == 1:  # from simplexlab import x / from . import x
                for n in names:
                    yield [*mod, n], [], lazy, node.lineno
            else:
                yield mod, names, lazy, node.lineno
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "simplexlab":
                    yield a.name.split("."), [], lazy, node.lineno


def private_imports(rel: str, source: str) -> list[str]:
    """The imports of ``source`` (the file ``rel``) that go through another layer's private
    door: a ``_module`` path of another layer (or a private name imported from it) other than a
    base module; outside the package (experiments, benchmarks, notebooks), any private path,
    base modules included."""
    parts = Path(rel).parts
    inside = parts[0] == "simplexlab"
    here = parts[1] if inside and len(parts) > 2 else None  # None: outside every layer
    found = []
    for mod, names, _, line in _all_imports(rel, source):
        paths = [mod] + [[*mod, n] for n in names if n.startswith("_")]
        for path in paths:
            where = f"{rel}:{line} imports {'.'.join(path)}"
            top = path[1] if len(path) > 1 else None
            if top in BASE:
                if not inside:
                    found.append(f"{where} (a base module: use a face)")
                continue
            if top == here:
                continue
            if any(p.startswith("_") for p in path[2:]) or (top or "").startswith("_"):
                found.append(f"{where} (another layer's private module: use "
                             f"simplexlab.{top} or simplexlab.{top}.internal)")
    return found


def _checked_files():
    yield from sorted(PKG.rglob("*.py"))
    for folder in OUTSIDE:
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_no_import_crosses_a_private_door():
    found = [v for path in _checked_files()
             for v in private_imports(path.relative_to(ROOT).as_posix(), path.read_text())]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("rel, source", [
    ("simplexlab/sim/_x.py", "from ..theory._solve import solve\n"),
    ("simplexlab/sim/_x.py", "def f():\n    from simplexlab.theory._solve import solve\n"),
    ("simplexlab/sweep/_x.py", "from ..shaping import _methods\n"),
    ("simplexlab/shaping/__init__.py", "from ..theory._focal import focal_weight\n"),
    ("simplexlab/lab/_x.py", "from ..sim import _private_name\n"),
    ("simplexlab/__init__.py", "from .theory._solve import solve\n"),
    ("simplexlab/sim/_x.py", "from ..sweep._engine import run\n"),
    ("experiments/x.py", "from simplexlab.sim._bandit import Bandit\n"),
    ("experiments/x.py", "from simplexlab._results import atomic_write_json\n"),
    ("benchmarks/x.py", "from simplexlab.llm import _bridge\n"),
    ("notebooks/x.py", "import simplexlab.lab._registry as reg\n"),
])
def test_private_import_check_can_fail(rel, source):
    """The check above reports an injected cross-layer private import (a guard against a
    silent no-op) ..."""
    assert len(private_imports(rel, source)) == 1, private_imports(rel, source)


@pytest.mark.parametrize("rel, source", [
    ("simplexlab/sim/_x.py", "from ..theory import solve\nfrom ..theory.internal import x\n"),
    ("simplexlab/sim/_x.py", "from .._checks import is_int\nfrom ._bandit import Bandit\n"),
    ("simplexlab/sim/__init__.py", "from ._bandit import Bandit\n"),
    ("experiments/x.py", "from simplexlab.lab import Context\nimport simplexlab.lab\n"),
    ("benchmarks/x.py", "from simplexlab.llm.internal import schedule_key\n"
                        "from ._common import Row\n"),
])
def test_private_import_check_passes_faces(rel, source):
    """... and passes faces, internal modules, base modules inside the package, and a layer's
    own private modules."""
    assert private_imports(rel, source) == []


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
            assert top in allowed, f"{path.relative_to(PKG)} imports {'.'.join(mod)} " \
                                   f"(layer {layer} may import only {sorted(allowed)})"


def test_base_modules_import_no_layer():
    for name in BASE:
        for mod, _ in _imports(PKG / f"{name}.py"):
            assert len(mod) < 2 or mod[1] in BASE, f"{name}.py imports {'.'.join(mod)}"


def test_every_module_belongs_to_a_layer():
    top = {p.stem for p in PKG.glob("*.py")}
    assert top <= BASE | {"__init__", "__main__"}, sorted(top - BASE)
    layers = {p.name for p in PKG.iterdir() if p.is_dir() and p.name != "__pycache__"}
    expected = set(ORDER) | set(SIBLINGS)
    assert layers == expected, sorted(layers ^ expected)
    for layer in layers:  # private modules, the face, and at most one internal module
        for path in (PKG / layer).iterdir():
            if path.suffix == ".py" and path.stem not in {"__init__", "internal"}:
                assert path.stem.startswith("_"), \
                    f"simplexlab/{layer}/{path.name}: a layer's modules are private"


def public_addresses() -> dict[str, list[str]]:
    """Every public object of the package (outside ``<layer>.internal``) with its addresses:
    ``{first address: [every address]}``, an address ``module.name`` for each public module
    (the package, each layer's face, and any other module without a private part in its path)
    that lists the object in ``__all__``."""
    import importlib
    import pkgutil
    import types

    import simplexlab

    modules = ["simplexlab"] + [
        m.name for m in pkgutil.walk_packages(simplexlab.__path__, "simplexlab.")
        if not any(p.startswith("_") for p in m.name.split(".")[1:])
        and not m.name.endswith(".internal")]
    by_object: dict[int, list[str]] = {}
    for name in modules:
        mod = importlib.import_module(name)
        for attr in getattr(mod, "__all__", []):
            obj = getattr(mod, attr)
            if isinstance(obj, types.ModuleType):
                continue
            by_object.setdefault(id(obj), []).append(f"{name}.{attr}")
    return {v[0]: v for v in by_object.values()}


def test_every_public_object_has_one_address():
    """One import path per public object: its layer's face; the top-level package adds only
    :data:`TOP_LEVEL` (from ``simplexlab.theory``). The listing is printed on failure."""
    table = public_addresses()
    assert len(table) > 300, len(table)  # the walk found the faces
    extra = {k: v for k, v in table.items() if len(v) > 1
             and not (len(v) == 2 and v[0].split(".")[1] in TOP_LEVEL
                      and v[1] == f"simplexlab.theory.{v[0].split('.')[1]}")}
    assert not extra, "objects with several public addresses:\n" + "\n".join(
        "  " + ", ".join(v) for v in extra.values())


def test_one_address_check_can_fail(monkeypatch):
    """A second public address of an object is seen (a guard against a walk that sees
    nothing)."""
    import simplexlab.shaping as shaping
    import simplexlab.theory as theory

    monkeypatch.setattr(shaping, "concentration", theory.concentration, raising=False)
    monkeypatch.setattr(shaping, "__all__", [*shaping.__all__, "concentration"])
    rows = [v for v in public_addresses().values() if "simplexlab.theory.concentration" in v]
    assert rows and sorted(rows[0]) == ["simplexlab.shaping.concentration",
                                        "simplexlab.theory.concentration"], rows


def test_plotting_does_not_load_the_registry():
    """A plotting helper of the lab's face is light: no experiment registry, no JAX, no
    torch."""
    code = ("import sys\nfrom simplexlab.lab import ternary_axes, plot_training\n"
            "print(sorted(m for m in sys.modules if m.startswith(('simplexlab.lab._registry', "
            "'jax', 'torch', 'experiments'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip() == "[]", out


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


def test_only_the_torch_bridge_imports_torch():
    """torch is ``llm``'s alone: no other module of the package imports it, not even inside a
    function (what another layer needs done with torch tensors, ``llm`` registers with it, as
    the advantage oracle's trl and verl conventions)."""
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if path.relative_to(PKG).parts[0] == "llm":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [f"{path.relative_to(PKG)}: {n}" for n in names
                      if n.split(".")[0] == "torch"]
    assert found == [], found


def test_import_walker_sees_lazy_and_sibling_imports(tmp_path):
    """The checks above see what they are meant to see (a guard against a silent no-op)."""
    mods = {tuple(m): lazy for m, _, lazy in _imports(PKG / "llm" / "_bridge.py",
                                                     with_lazy=True)}
    assert mods[("simplexlab", "shaping")] is False
    assert _allowed("llm") == {"theory", "shaping", "sim", "sweep", "verify", "llm"}
    assert "llm" not in _allowed("lab") and "lab" not in _allowed("llm")


# -- file I/O below lab ---------------------------------------------------------------------
#: calls that read or write files: attribute names on any object ...
_IO_ATTRS = {"read_text", "write_text", "read_bytes", "write_bytes", "to_netcdf", "to_zarr",
             "open_dataset", "open_mfdataset", "open_zarr", "load_dataset", "tofile", "mkdir",
             "unlink", "makedirs", "rmtree"}
#: ... and attribute names on these modules
_IO_MODULE_ATTRS = {
    "np": {"save", "load", "savez", "savez_compressed", "loadtxt", "savetxt", "genfromtxt",
           "fromfile"},
    "json": {"load", "dump"}, "tomllib": {"load"}, "pickle": {"load", "dump"},
    "os": {"replace", "rename", "remove", "fdopen"}, "tempfile": {"mkstemp",
                                                                  "NamedTemporaryFile"},
}
_IO_MODULE_ATTRS["numpy"] = _IO_MODULE_ATTRS["np"]


def file_io(rel: str, source: str) -> list[str]:
    """The calls in ``source`` (the file ``rel``) that read or write files."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        what = None
        if isinstance(f, ast.Name) and f.id == "open":
            what = "open"
        elif isinstance(f, ast.Attribute):
            owner = f.value.id if isinstance(f.value, ast.Name) else None
            if f.attr in _IO_ATTRS or f.attr in _IO_MODULE_ATTRS.get(owner, ()):
                what = f"{owner + '.' if owner else '.'}{f.attr}"
            elif f.attr == "open" and owner not in {"np", "jnp"}:
                what = f"{owner + '.' if owner else '.'}open"
        if what:
            found.append(f"{rel}:{node.lineno} {what}(...)")
    return found


def test_file_io_check_can_fail():
    src = ("import json, numpy as np\nfrom pathlib import Path\n"
           "def f(p, ds):\n    json.dump({}, open(p, 'w'))\n    Path(p).write_text('x')\n"
           "    np.save(p, 1)\n    ds.to_netcdf(p)\n    json.dumps({})\n    np.asarray(1)\n")
    assert len(file_io("simplexlab/sim/_x.py", src)) == 5, file_io("simplexlab/sim/_x.py", src)


def test_no_file_io_below_lab():
    """Below ``lab`` (theory, shaping, sim, sweep, verify), files are read and written only
    through the results module ``simplexlab/_results.py``."""
    below = ORDER[: ORDER.index("lab")]
    found = [v for layer in below for path in sorted((PKG / layer).rglob("*.py"))
             for v in file_io(path.relative_to(ROOT).as_posix(), path.read_text())]
    assert not found, "\n".join(found)


def test_public_annotations_resolve_and_the_shape_aliases_are_used():
    """Every public function's annotations resolve (a typo in a string annotation, or a name
    imported only for type checkers, fails here), and the array aliases of ``simplexlab._types``
    annotate the kernels (the closed forms, the group advantages, the diversity metrics)."""
    import importlib
    import inspect
    import typing

    from simplexlab import _types

    seen = set()
    for face in ("theory", "shaping", "sim", "sweep", "verify", "lab"):
        mod = importlib.import_module(f"simplexlab.{face}")
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                todo = list(typing.get_type_hints(obj).values())
                while todo:  # the hints and what they are built of (``Mask | None``)
                    h = todo.pop()
                    seen.add(id(h))
                    todo += typing.get_args(h)
    aliases = {n: getattr(_types, n) for n in ("Simplex", "Rewards", "Mask", "BatchScalar")}
    assert all(id(a) in seen for a in aliases.values()), [n for n, a in aliases.items()
                                                          if id(a) not in seen]


def test_every_lazily_loaded_name_of_a_face_is_in_its_all():
    """A face that loads names on first access (``_LAZY``) lists each in ``__all__``: a name
    left out works in code but is missing from ``dir()``, ``import *`` and the API pages."""
    import simplexlab.lab as lab

    assert set(lab._LAZY) <= set(lab.__all__), sorted(set(lab._LAZY) - set(lab.__all__))


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(files=None) -> dict[str, set[str]]:
    """``{module: modules it imports}`` over the package's modules, from every import statement
    (module level and inside functions alike; ``from pkg import name`` counts as an import of
    ``pkg.name`` when that is a module of the package, else of ``pkg``). ``files``: ``{module
    name: source}`` (default: the package's files)."""
    if files is None:
        files = {_module_name(p): (p.relative_to(ROOT).as_posix(), p.read_text())
                 for p in sorted(PKG.rglob("*.py"))}
    known = set(files)
    graph: dict[str, set[str]] = {m: set() for m in known}
    for mod, (rel, source) in files.items():
        for target, _names, _lazy, _line in _all_imports(rel, source):
            name = ".".join(target)
            while name and name not in known:  # a name imported from a module: the module
                name = name.rpartition(".")[0]
            if name and name != mod:
                graph[mod].add(name)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    """No two modules of the package import each other, directly or through others, at import
    time or lazily inside a function (a lazy import that closes a circle hides the circle; it
    does not remove it)."""
    cycles = import_cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join("  " + " <-> ".join(c) for c in cycles)


def test_import_cycle_check_can_fail():
    """A circle through a lazy import is seen."""
    files = {"simplexlab.shaping._a": ("simplexlab/shaping/_a.py", "from ._b import x\n"),
             "simplexlab.shaping._b": ("simplexlab/shaping/_b.py",
                                       "def f():\n    from ._a import y\n"),
             "simplexlab.shaping._c": ("simplexlab/shaping/_c.py", "from ._a import x\n")}
    assert import_cycles(import_graph(files)) == [["simplexlab.shaping._a",
                                                   "simplexlab.shaping._b"]]


def name_switches(source: str, names) -> list[str]:
    """Comparisons (``==``, ``!=``, ``in``, ``not in``, ``match``) of a value with a string that
    names a rule or a schedule kind: a switch on a name where a method of the object belongs."""
    found = []
    for node in ast.walk(ast.parse(source)):
        consts = []
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                elts = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
                consts += [e.value for e in elts if isinstance(e, ast.Constant)]
        elif isinstance(node, ast.match_case) and isinstance(node.pattern, ast.MatchValue):
            v = node.pattern.value
            consts += [v.value] if isinstance(v, ast.Constant) else []
        hits = [c for c in consts if isinstance(c, str) and c in names]
        if hits:
            found.append(f"line {node.lineno if hasattr(node, 'lineno') else '?'}: {hits}")
    return found


def _rule_and_kind_names():
    from simplexlab.shaping import METHODS
    from simplexlab.theory.internal import SCHEDULE_KINDS

    return set(METHODS) | set(SCHEDULE_KINDS)


def test_no_method_name_switch_in_shaping():
    """The rules dispatch on objects: nowhere in ``shaping/`` is a value compared with a rule's
    name or a schedule's kind (their behaviour is a method of the rule or of the gain class)."""
    names = _rule_and_kind_names()
    found = {p.name: hits for p in sorted((PKG / "shaping").glob("*.py"))
             if (hits := name_switches(p.read_text(), names))}
    assert not found, found


def test_name_switch_check_can_fail():
    names = _rule_and_kind_names()
    assert name_switches("if self.method in ('g2rpo', 'g2rpo_bonus'):\n    pass\n", names)
    assert name_switches("lam = a if s.kind == 'B' else b\n", names)
    assert name_switches("match kind:\n    case 'constant':\n        pass\n", names)
    assert not name_switches("if method == 'plain':\n    pass\n", names)
