"""The figures' status lines (lab/_status.py) and the one figure style (lab/plotting.py)."""

import json

import pytest

from simplexlab.lab._status import NOT_EVALUATED, claim_status, experiment_status


def _report(tmp_path, claims):
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "claims.json").write_text(
        json.dumps({"provenance": {}, "mode": "quick", "claims": claims}))
    return tmp_path


CLAIMS = [
    {"name": "a-yes", "experiment": "exp-1", "holds_at_paper": "yes", "robustness_fraction": 0.64},
    {"name": "b-no", "experiment": "exp-2", "holds_at_paper": "no", "robustness_fraction": 0.0},
    {"name": "c-partly", "experiment": "exp-1", "holds_at_paper": "partly",
     "robustness_fraction": 0.2},
]


def test_claim_status_lines(tmp_path):
    out = _report(tmp_path, CLAIMS)
    assert claim_status("a-yes", out) == "holds at the paper's setting; in 64 % of its grid"
    assert claim_status("b-no", out) == "does not hold at the paper's setting; in 0 % of its grid"
    assert claim_status("c-partly", out) == \
        "partly holds at the paper's setting; in 20 % of its grid"
    assert claim_status("zzz", out) == "claim not evaluated (run: simplexlab claims zzz)"


def test_experiment_status_by_experiment_in_report_order(tmp_path):
    out = _report(tmp_path, CLAIMS)
    assert [n for n, _ in experiment_status("exp-1", out)] == ["a-yes", "c-partly"]
    assert experiment_status("exp-1", out)[1][1].startswith("partly holds")
    assert experiment_status("exp-3", out) == []


@pytest.mark.parametrize("content", [None, "not json", '{"claims": 3}'])
def test_missing_or_broken_report_reads_as_not_evaluated(tmp_path, content):
    if content is not None:
        (tmp_path / "claims").mkdir()
        (tmp_path / "claims" / "claims.json").write_text(content)
    assert experiment_status("exp-1", tmp_path) == []
    assert claim_status("a-yes", tmp_path).startswith("claim not evaluated")
    assert NOT_EVALUATED == "claims not evaluated (run: simplexlab claims)"


# ---- the one figure style ---------------------------------------------------------------------

from pathlib import Path  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from simplexlab import lab  # noqa: E402
from simplexlab.lab import (  # noqa: E402
    METHOD_STYLES,
    figure_note,
    legend_outside,
    method_style,
    plot_training,
    shades,
)
from simplexlab.shaping import METHODS  # noqa: E402

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"


def _labelled_lines(fig):
    """``(label, colour)`` of every labelled line of ``fig``."""
    return [(ln.get_label(), to_hex(ln.get_color())) for ax in fig.axes for ln in ax.get_lines()
            if not ln.get_label().startswith("_")]


def _check_registered(fig, method_of_label):
    """Every line whose label names a rule (``method_of_label(label)``) has the rule's colour
    (or one of its shades, for a rule at several settings)."""
    seen = 0
    for label, color in _labelled_lines(fig):
        m = method_of_label(label)
        if m is None:
            continue
        ok = {METHOD_STYLES[m].color} | {c for n in range(2, 6) for c in shades(m, n)}
        assert color in ok, (label, color, METHOD_STYLES[m].color)
        seen += 1
    return seen


def test_the_style_table_covers_every_rule_once():
    assert set(METHOD_STYLES) == set(METHODS)
    colors = [s.color for s in METHOD_STYLES.values()]
    names = [s.name for s in METHOD_STYLES.values()]
    assert len(set(colors)) == len(colors) and len(set(names)) == len(names)
    assert method_style("grpo").name == "GRPO"
    with pytest.raises(ValueError, match="method"):
        method_style("no-such-rule")
    s = shades("g2rpo", 3)
    assert len(set(s)) == 3 and s[1] == METHOD_STYLES["g2rpo"].color


def test_plot_training_uses_the_registered_styles():
    steps = np.arange(0, 5)
    hist = [{"step": int(t), "p": 0.5 / (1 + t), "L_y": 0.3 + 0.1 * t, "K_hat": 4 - 0.5 * t}
            for t in steps]
    runs = {"grpo": [hist, hist], "g2rpo": [hist]}
    pred = {m: {"step": steps, "p": steps * 0.1, "L_y": steps * 0.1, "K_hat": steps * 1.0}
            for m in runs}
    fig = plot_training(runs, pred, K=4)
    try:
        n = _check_registered(fig, lambda lab_: "g2rpo" if lab_.startswith("G²RPO") else
                              "grpo" if lab_.startswith("GRPO") else None)
        assert n == 12  # 3 panels x 2 methods x (measured, prediction)
        assert all(ax.get_ylabel() for ax in fig.axes)  # every panel says what it plots
        assert any("min–max over seeds" in t.get_text() for t in fig.legends[0].get_texts())
    finally:
        plt.close(fig)


def test_method_zoo_draws_each_rule_in_its_style(tmp_path):
    zoo = lab.load_experiment_module("method_zoo", EXPERIMENTS)
    st = zoo.settings(True)
    etas = zoo.eta_grid(st)
    rng = np.random.default_rng(0)

    def iv(m):
        return {"mean": m, "lo": 0.9 * m, "hi": 1.1 * m}

    rows, tuning = [], {}
    for label, rule, _ in zoo.METHODS:
        metrics = {k: iv(rng.uniform(0.5, 0.9)) for k in ("accuracy", "pass@8", "K_eff",
                                                              "m_ret")}
        rows.append({"method": label, "rule": rule, "best_eta": etas[-1],
                     "best": {"metrics": metrics, "miss": {k: iv(rng.uniform(1e-3, 1e-2))
                                                           for k in ("accuracy", "pass@8")},
                              "vs_grpo": {}},
                     "matched": {"metrics": {k: iv(rng.uniform(1, 2))
                                             for k in ("steps", "K_eff", "m_ret")},
                                 "vs_grpo": {"K_eff": {"verdict": "wins"}}}})
        tuning[label] = [{"eta": e, "miss_p": rng.uniform(1e-3, 1e-1)} for e in etas]
    initial = {"K_eff": 3.5, "m_ret": 1.0}
    fig = zoo.draw(rows, tuning, initial, st, 0.9, ["claims not evaluated"], ["a difference"])
    try:
        rule = {label: r for label, r, _ in zoo.METHODS}
        n = _check_registered(fig, rule.get)
        assert n == len(rows) * 8  # one labelled line per rule in each of the 8 panels
        texts = [t.get_text() for t in fig.texts]
        assert any("claims not evaluated" in t and "differs from the paper: a difference" in t
                   for t in texts)
        titles = [ax.get_title() for ax in fig.axes]
        assert not any("pass@1" in t for t in titles)  # pass@1 = accuracy: drawn once
    finally:
        plt.close(fig)


def test_figure_note_and_legend_stay_off_the_data(tmp_path):
    out = _report(tmp_path, CLAIMS)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], **method_style("grpo").kwargs(marker=None))
    ax.set_xlabel("step")
    leg = legend_outside(ax, where="below")
    note = figure_note(fig, lab.claim_lines("exp-1", out), differs=["η = 1"])
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    box, lbox, nbox = ax.get_window_extent(r), leg.get_window_extent(r), note.get_window_extent(r)
    assert lbox.y1 < box.y0 and nbox.y1 < lbox.y0  # legend under the axes, note under both
    text = note.get_text()
    assert "claim a-yes: holds at the paper's setting; in 64 % of its grid" in text
    assert "claim c-partly: partly holds" in text and "differs from the paper: η = 1" in text
    # an experiment with claims absent from the report: not evaluated
    assert lab.claim_lines("collision", out) == [NOT_EVALUATED]
    plt.close(fig)


def test_plot_training_draws_a_rule_variant_in_its_rules_colour_dotted():
    """``"g2rpo-discovered"`` (G²RPO on discovered modes, llm-train-modes) is G²RPO's colour,
    dotted, beside G²RPO itself; an unknown rule is still refused."""
    import matplotlib.pyplot as plt

    from simplexlab.lab import method_style, plot_training

    h = [[{"step": s, "p": 0.5, "L_y": 0.5, "K_hat": 2.0} for s in range(3)]]
    fig = plot_training({"g2rpo": h, "g2rpo-discovered": h})
    lines = [ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("G²RPO")]
    assert {ln.get_color() for ln in lines} == {method_style("g2rpo").color}
    assert sorted(ln.get_linestyle() for ln in lines) == ["-", ":"]
    plt.close(fig)
    with pytest.raises(ValueError, match="method"):
        plot_training({"nope-variant": h})


def test_a_figure_without_a_registered_claim_says_so(tmp_path):
    """finite-group-zoo has no paper claim: its figure says so instead of "not evaluated"; an
    experiment with claims but no report says "not evaluated"."""
    from simplexlab.lab import claim_lines
    from simplexlab.lab._plotting import NO_CLAIM
    from simplexlab.lab._status import NOT_EVALUATED

    assert claim_lines("finite-group-zoo", tmp_path) == [NO_CLAIM]
    assert claim_lines("collision", tmp_path) == [NOT_EVALUATED]


def test_plot_solution_draws_the_trajectories_it_is_given(tmp_path):
    """Each quantity's panel holds exactly the finite save points of each solution (a run that
    stopped early leaves non-finite ones), one line per trajectory of a batch and per mode of
    ``y``, in the method's registered colour and name; the legend sits inside the figure, so a
    plain ``savefig`` keeps it; an unknown quantity is refused by name."""
    from types import SimpleNamespace

    import matplotlib.colors as mcolors
    import numpy as np

    from simplexlab.lab import METHOD_STYLES, plot_solution

    t = np.array([0.0, 1.0, 2.0, np.inf])
    y = np.array([[0.5, 0.5], [0.6, 0.4], [0.7, 0.3], [np.inf, np.inf]])
    one = SimpleNamespace(t=t, p=np.array([0.5, 0.4, 0.3, np.inf]), y=y, L_y=(y ** 2).sum(-1))
    batch = SimpleNamespace(t=np.stack([t, t + 1]), p=np.ones((2, 4)) * 0.2,
                            y=np.stack([y, y]), L_y=np.stack([(y ** 2).sum(-1)] * 2))
    fig = plot_solution({"grpo": one, "mine": batch})
    ax_p, ax_l, ax_y = fig.axes[:3]
    grpo_lines = [ln for ln in ax_p.get_lines()
                  if mcolors.same_color(ln.get_color(), METHOD_STYLES["grpo"].color)]
    assert len(grpo_lines) == 1 and np.allclose(grpo_lines[0].get_xydata(),
                                                 [[0, 0.5], [1, 0.4], [2, 0.3]])
    assert len(ax_p.get_lines()) == 1 + 2 and len(ax_y.get_lines()) == 2 + 2 * 2
    assert np.allclose(ax_l.get_lines()[0].get_ydata(), [0.5, 0.52, 0.58])
    labels = [tx.get_text() for tx in ax_p.get_legend().get_texts()]
    assert labels == [METHOD_STYLES["grpo"].name, "mine"]
    fig.savefig(tmp_path / "s.png")
    box = ax_p.get_legend().get_window_extent()
    assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1)
    with pytest.raises(ValueError, match="'q'"):
        plot_solution(one, quantities=("p", "q"))


def test_plot_training_draws_predictions_alone_and_keeps_its_legend_on_a_plain_savefig():
    """Predictions without measurements are drawn (three panels, one dashed line each), and a
    plain ``savefig`` keeps the legend that sits below the panels (tight bounding box)."""
    import matplotlib

    from simplexlab.lab import plot_training

    steps = np.arange(5)
    fig = plot_training({}, {"grpo": {"step": steps, "p": steps * 0.1, "L_y": steps * 0.2,
                                      "K_hat": steps * 1.0}})
    try:
        assert [len(ax.get_lines()) for ax in fig.axes] == [1, 1, 1]
        assert np.allclose(fig.axes[1].get_lines()[0].get_ydata(), steps * 0.2)
        assert matplotlib.rcParams["savefig.bbox"] == "tight"
    finally:
        plt.close(fig)
