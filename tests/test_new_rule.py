"""A new built-in rule is one file beside the others plus its line in the registry: in a copy of
the package with exactly that edit, the rule is a method name everywhere a built-in's is (the
advantages, the bandit, the finite-group theory, the toys that take functions of the rewards),
with no other file touched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RULE_FILE = '''
"""A test rule: GRPO's z-score, doubled."""

from ._advantages import grpo_advantages
from ._rule import AbstractRewardRule


def doubled_advantages(rewards, mask=None):
    """``2 (r − mean r) / (std r + ε)``."""
    return 2.0 * grpo_advantages(rewards, mask)


class DoubledRule(AbstractRewardRule):
    """``doubled``: :func:`doubled_advantages`."""

    formula = staticmethod(doubled_advantages)
'''

CHECK = '''
import jax, numpy as np
jax.config.update("jax_enable_x64", True)
import simplexlab.shaping as sh
from simplexlab import sim
from simplexlab.sim._twostage import TWO_STAGE_METHODS

r = np.array([[1.0, 0.0, 1.0, 1.0]])
np.testing.assert_allclose(sh.advantages("doubled", sh.Groups(r)),
                           2 * sh.advantages("grpo", sh.Groups(r)), rtol=1e-14)
s0 = sh.meanfield_system("grpo", group_size=4)
import simplexlab as sl
st = sl.make_state(0.4, np.array([0.6, 0.4]), np.array([0.5, 0.5]))
d2 = sh.meanfield_system("doubled", group_size=4).expected_update(st)
np.testing.assert_allclose(d2.theta, 2 * s0.expected_update(st).theta, rtol=1e-12)
assert d2.path == "counts"
b = sim.Bandit(K=2, M=2, method="doubled", max_group_size=4)
rec = sim.trajectory(b, jax.random.key(0), {"group_size": 4, "eta": 0.1}, num_steps=3)[1]
assert np.all(np.isfinite(np.asarray(rec.p)))
assert "doubled" in TWO_STAGE_METHODS and "doubled" in sim.CATEGORICAL_ADVANTAGES
print("ok")
'''


def test_a_new_built_in_rule_is_one_file_and_its_registry_line(tmp_path):
    pkg = tmp_path / "simplexlab"
    shutil.copytree(ROOT / "simplexlab", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.relative_to(pkg): p.read_bytes() for p in pkg.rglob("*.py")}
    (pkg / "shaping" / "_doubled.py").write_text(textwrap.dedent(RULE_FILE))
    registry = pkg / "shaping" / "_registry.py"
    text = registry.read_text()
    assert text.count('    "unlikeliness": UnlikelinessRule(),\n') == 1
    text = text.replace('from ._g2rpo import', 'from ._doubled import DoubledRule\n'
                        'from ._g2rpo import', 1)
    text = text.replace('    "unlikeliness": UnlikelinessRule(),\n',
                        '    "unlikeliness": UnlikelinessRule(),\n    "doubled": DoubledRule(),\n')
    registry.write_text(text)
    after = {p.relative_to(pkg): p.read_bytes() for p in pkg.rglob("*.py")}
    changed = sorted(str(k) for k in after if before.get(k) != after[k])
    assert changed == ["shaping/_doubled.py", "shaping/_registry.py"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", CHECK], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
