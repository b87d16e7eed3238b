"""The private names of diffrax and equinox that simplexlab uses live in one module
(``simplexlab/_upstream.py``), whose check says which one an upgrade broke."""

import re
from pathlib import Path

import diffrax
import pytest

from simplexlab import _upstream

PKG = Path(_upstream.__file__).parent
PRIVATE = re.compile(r"equinox\._|diffrax\._|\._value\b|_index_to_message|_eqx_errors")


def test_the_installed_versions_have_what_simplexlab_reads():
    _upstream.check_upstream()


def test_a_changed_private_name_is_reported_by_name(monkeypatch):
    monkeypatch.delattr(_upstream._eqx_errors, "EQX_ON_ERROR")
    monkeypatch.setattr(diffrax.RESULTS, "_index_to_message", {}, raising=False)
    with pytest.raises(RuntimeError) as err:
        _upstream.check_upstream()
    msg = str(err.value)
    assert "EQX_ON_ERROR" in msg and "_index_to_message" in msg and "pyproject.toml" in msg


def test_no_other_module_uses_a_private_name_of_diffrax_or_equinox():
    found = [f"{p.relative_to(PKG)}:{i}" for p in sorted(PKG.rglob("*.py"))
             if p.name != "_upstream.py"
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if PRIVATE.search(line.split("#")[0])]
    assert not found, found


def test_pyproject_bounds_both_packages_above():
    text = (PKG.parent / "pyproject.toml").read_text()
    for pkg in ("diffrax", "equinox"):
        spec = re.search(rf'"{pkg}([^"]*)"', text).group(1)
        assert ">=" in spec and "<" in spec.replace("<=", "<"), (pkg, spec)
