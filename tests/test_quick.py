"""A rule's first looks in one call each (``simplexlab.lab.plot_portrait``,
``simplexlab.lab.bandit_vs_theory``): the portrait's fixed points against G²RPO Prop. A.5 / Thm
A.7 (GRPO's collision flow: the vertices attract, every point uniform on a larger support
repels), the bandit's mean against its finite-group theory within its standard error, the time
map ``t = step · η``, and the refusals."""

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from simplexlab.lab import bandit_vs_theory, plot_portrait, to_cartesian  # noqa: E402
from simplexlab.sim import Bandit  # noqa: E402
from simplexlab.theory import GRPO  # noqa: E402

#: face colour of each stability label (simplexlab.lab.FIXED_POINT_STYLE)
COLOURS = {(0, 0, 0): "sink", (1, 1, 1): "source", (1.0, 0.498, 0.055): "saddle"}


def _drawn_fixed_points(fig):
    """``{(x, y): kind}`` of the fixed-point markers of the portrait's axes."""
    out = {}
    for coll in fig.axes[0].collections:
        offsets = np.asarray(coll.get_offsets())
        face = coll.get_facecolor()
        if offsets.shape != (1, 2) or len(face) != 1:
            continue  # the streamlines
        rgb = tuple(round(float(c), 3) for c in face[0][:3])
        out[tuple(np.round(offsets[0], 6))] = COLOURS[rgb]
    return out


@pytest.mark.parametrize("system", ["grpo", GRPO(eta=1.0)])
def test_the_grpo_portrait_marks_prop_a5s_equilibria_with_their_stability(system):
    fig = plot_portrait(system, p=0.6)
    drawn = _drawn_fixed_points(fig)
    expected = {}
    for support in ([0], [1], [2], [0, 1], [0, 2], [1, 2], [0, 1, 2]):
        y = np.zeros(3)
        y[support] = 1.0 / len(support)
        kind = {1: "sink", 2: "saddle", 3: "source"}[len(support)]
        expected[tuple(np.round(to_cartesian(y), 6))] = kind
    assert drawn == expected
    assert "flow of y" in fig.axes[0].get_title()


def test_a_finite_group_portrait_by_name_and_the_refusals():
    fig = plot_portrait("dr_grpo", group_size=4, p=0.5)
    assert "'dr_grpo' at G = 4" in fig.axes[0].get_title()
    assert set(_drawn_fixed_points(fig).values()) <= {"sink", "source", "saddle",
                                                      "non-hyperbolic"}
    with pytest.raises(ValueError, match="a system is given whole"):
        plot_portrait(GRPO(eta=1.0), group_size=8)
    with pytest.raises(ValueError, match="p .* must be in"):
        plot_portrait("grpo", p=1.0)


@pytest.fixture(scope="module")
def comparison():
    bandit = Bandit(K=3, M=2, method="dr_grpo", num_prompts=2)
    params = {"group_size": 4, "eta": 0.05, "p0": 0.7}
    return bandit, params, bandit_vs_theory(bandit, params, seeds=24, num_steps=60, stride=20)


def test_the_bandit_mean_follows_its_finite_group_theory(comparison):
    bandit, params, r = comparison
    assert list(r.step) == [0, 20, 40, 60] and r.seeds == 24 and r.group_size == 4
    assert r.theory["p"][0] == pytest.approx(0.7) == r.bandit["p"][0]  # the same start
    assert r.se["p"][0] < 1e-12  # every seed starts at the prompts' one draw
    assert r.bandit["p"][-1] < 0.7 - 0.02  # the run moves ...
    for q in ("p", "L_y"):  # ... and its mean stays on the theory (O(η) + noise)
        assert np.all(np.abs(r.bandit[q] - r.theory[q]) <= 4 * r.se[q] + 0.01), q
    assert r.gap("p") == pytest.approx(np.max(np.abs(r.bandit["p"] - r.theory["p"])))


def test_the_theory_is_read_at_t_equal_step_times_eta(comparison):
    """The prediction at the recorded steps is the system integrated to ``t = step · η``."""
    from simplexlab.theory import solve_ensemble

    bandit, params, r = comparison
    dyn, s0 = bandit.finite_group({**bandit.default_params(), **params})
    sol = solve_ensemble(dyn, s0, t1=60 * 0.05, n_save=4)
    np.testing.assert_allclose(r.theory["p"], np.asarray(sol.p).mean(0), rtol=1e-6)
    fig = r.plot()
    assert len(fig.axes) == 2 and "largest gap" in fig.axes[1].get_title()


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"seeds": 1}, "seeds"), ({"num_steps": 50, "stride": 20}, "multiple of stride"),
])
def test_bandit_vs_theory_refuses_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bandit_vs_theory(Bandit(), **kwargs)
    with pytest.raises(ValueError, match="must be a simplexlab.sim.Bandit"):
        bandit_vs_theory("bandit")
