"""Plotting helpers (matplotlib): the one figure style of the lab, and simplex figures.
No numerics live here.

One style for every figure: :data:`METHOD_STYLES` gives each advantage rule of
:data:`simplexlab.shaping.METHODS` its colour, line style, marker and display name (GRPO is the
same colour in every figure); :func:`use_style` sets readable font sizes; :func:`legend_outside`
puts a legend beside or below the data, never on it; :func:`figure_note` prints, under the
figure, the status of the experiment's claims (:func:`claim_lines`, from the claims report) and
every setting that differs from the paper.

Ternary convention: vertex ``e_0`` at the bottom left, ``e_1`` at the bottom right, ``e_2`` on top.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

__all__ = [
    "FIXED_POINT_STYLE",
    "METHOD_STYLES",
    "MethodStyle",
    "claim_lines",
    "figure_note",
    "legend_outside",
    "method_style",
    "shades",
    "use_style",
    "mark_fixed_points",
    "plot_plan",
    "plot_solution",
    "plot_training",
    "simplex_grid",
    "stream_on_simplex",
    "ternary_axes",
    "to_barycentric",
    "to_cartesian",
]

@dataclasses.dataclass(frozen=True)
class MethodStyle:
    """How one advantage rule is drawn: colour, line style, marker and display name."""

    color: str
    ls: str
    marker: str
    name: str

    def kwargs(self, **override) -> dict:
        """``color``/``ls``/``marker``/``label`` for ``ax.plot`` (``override`` wins)."""
        return {"color": self.color, "ls": self.ls, "marker": self.marker, "label": self.name,
                **override}


METHOD_STYLES: dict[str, MethodStyle] = {
    "grpo": MethodStyle("#1f77b4", "-", "o", "GRPO"),
    "g2rpo": MethodStyle("#ff7f0e", "-", "s", "G²RPO"),
    "g2rpo_bonus": MethodStyle("#d62728", "-.", "D", "G²RPO (bonus)"),
    "raw": MethodStyle("#7f7f7f", "-", "v", "raw reward"),
    "mean_shifted": MethodStyle("#2ca02c", "-", "^", "mean-shifted"),
    "dr_grpo": MethodStyle("#9467bd", "-", "P", "Dr.GRPO"),
    "rloo": MethodStyle("#8c564b", "-", "X", "RLOO"),
    "reinforce_pp": MethodStyle("#e377c2", "-", "h", "REINFORCE++"),
    "f_grpo": MethodStyle("#bcbd22", "-", "<", "F-GRPO"),
    "iac": MethodStyle("#17becf", "-", ">", "DAPO-IAC"),
    "grpo_n": MethodStyle("#393b79", "--", "p", "GRPO-N"),
    "progrpo": MethodStyle("#b8860b", "-", "*", "ProGRPO"),
    "grpo_sample_std": MethodStyle("#5f8fc0", ":", "o", "GRPO (sample std: verl, TRL)"),
    "grpo_batch_std": MethodStyle("#aec7e8", "--", "o", "GRPO (batch std: TRL)"),
    "loo_std": MethodStyle("#c49c94", "--", "X", "LOO + std (NeMo-RL)"),
    "w_reinforce": MethodStyle("#98df8a", "-", "d", "W-REINFORCE"),
    "nsr": MethodStyle("#ff9896", "--", "d", "NSR"),
    "pass_at_k": MethodStyle("#c5b0d5", "-", "8", "pass@k training"),
    "pkpo": MethodStyle("#8c6d31", "--", "8", "PKPO"),
    "unlikeliness": MethodStyle("#f7b6d2", "-", "H", "unlikeliness reward"),
}
"""The one style table of the lab, keyed by the rule names of :data:`simplexlab.shaping.METHODS`
(a test checks that the keys are exactly those names): colour, line style, marker and display
name of each rule, the same in every figure."""


def method_style(method: str) -> MethodStyle:
    """The registered style of the rule ``method`` (``ValueError`` for an unknown rule)."""
    try:
        return METHOD_STYLES[method]
    except KeyError:
        raise ValueError(f"method must be one of {sorted(METHOD_STYLES)}; got {method!r}") from None


def shades(method: str, n: int) -> list[str]:
    """``n`` shades of the registered colour of ``method``, from lighter (mixed with white) to
    darker (mixed with black), the registered colour in the middle (alone when ``n = 1``): for
    one rule at several settings (e.g. G²RPO at several λ0)."""
    from matplotlib.colors import to_hex, to_rgb

    base = np.asarray(to_rgb(method_style(method).color))
    out = []
    for t in np.linspace(0.45, -0.45, n) if n > 1 else [0.0]:
        out.append(to_hex(base + (1.0 - base) * t if t >= 0 else base * (1.0 + t)))
    return out


#: readable sizes for every figure (points)
FONT_SIZES = {"font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10,
              "xtick.labelsize": 9, "ytick.labelsize": 9, "legend.fontsize": 9,
              "figure.titlesize": 12}


def use_style() -> None:
    """Set the lab's font sizes (:data:`FONT_SIZES`), a tight bounding box for ``savefig`` (so a
    plain ``fig.savefig`` keeps a legend placed outside the axes) and the Agg backend; call
    before drawing."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update(FONT_SIZES)
    matplotlib.rcParams["savefig.bbox"] = "tight"


def legend_outside(target, *, where: str = "right", handles=None, labels=None, ncol: int = 1,
                   title: str | None = None, fontsize: float | None = None):
    """A legend outside the data: ``where="right"`` beside the axes ``target`` (or the figure),
    ``"below"`` under it. ``target`` is an ``Axes`` or a ``Figure`` (then ``handles``/``labels``
    default to the first axes' entries). Returns the legend."""
    if where not in ("right", "below"):
        raise ValueError(f"where must be 'right' or 'below'; got {where!r}")
    is_fig = hasattr(target, "axes") and not hasattr(target, "plot")
    if handles is None:
        src = target.axes[0] if is_fig else target
        handles, labels = src.get_legend_handles_labels()
    kw = dict(frameon=False, ncol=ncol, title=title, fontsize=fontsize)
    if where == "right":
        kw.update(loc="center left", bbox_to_anchor=(1.01, 0.5))
    elif is_fig:
        kw.update(loc="upper center", bbox_to_anchor=(0.5, -0.02))
    else:  # below the axes' tick labels and x label, a fixed distance in points
        from matplotlib.transforms import offset_copy

        drop = 22 + (16 if target.get_xlabel() else 0)
        kw.update(loc="upper center", bbox_to_anchor=(0.5, 0.0),
                  bbox_transform=offset_copy(target.transAxes, fig=target.figure, y=-drop,
                                             units="points"))
    return target.legend(handles, labels, **kw)


def claim_lines(experiment: str, out_dir) -> list[str]:
    """The claim status lines of ``experiment`` from the claims report of ``out_dir``
    (:func:`simplexlab.lab._status.experiment_status`), or the one line saying they were not
    evaluated -- or, for an experiment no registered claim belongs to (a new comparison, a
    search), that no paper claim is checked on it."""
    from ._status import NOT_EVALUATED, experiment_status

    status = experiment_status(experiment, out_dir)
    if status:
        return [f"claim {name}: {line}" for name, line in status]
    from ._claims import load_claims

    try:
        claimed = {c.experiment for c in load_claims().values()}
    except FileNotFoundError:  # no experiments/claims folder here: nothing to say more
        return [NOT_EVALUATED]
    return [NOT_EVALUATED if experiment in claimed else NO_CLAIM]


#: what a figure says when no registered claim belongs to its experiment
NO_CLAIM = "no paper claim is checked on this figure (not a paper's figure: see simplexlab claims)"


def figure_note(fig, lines, *, differs=(), fontsize: float = 8.5):
    """Print ``lines`` (the claim status lines, :func:`claim_lines`) and, after
    ``"differs from the paper: "``, each setting of ``differs`` under everything already drawn
    on ``fig`` (legends below the axes included). Call it last, before saving. Returns the
    text artist."""
    text = [str(x) for x in lines]
    text += [f"differs from the paper: {d}" for d in differs]
    if not text:
        return None
    box = fig.get_tightbbox(fig.canvas.get_renderer())
    y = box.y0 / fig.get_size_inches()[1] - 0.01  # the bottom of what is drawn, in fig coords
    x = max(box.x0 / fig.get_size_inches()[0], 0.0)
    return fig.text(x, y, "\n".join(text), ha="left", va="top", fontsize=fontsize,
                    color="0.15", wrap=False)


_CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])

FIXED_POINT_STYLE = {
    "sink": dict(marker="o", facecolor="black", edgecolor="black", label="sink"),
    "source": dict(marker="o", facecolor="white", edgecolor="black", label="source"),
    "saddle": dict(marker="s", facecolor="tab:orange", edgecolor="black", label="saddle"),
    "non-hyperbolic": dict(marker="D", facecolor="0.7", edgecolor="black",
                           label="non-hyperbolic"),
}
"""Matplotlib marker style of a fixed point by stability label (the labels of
:func:`simplexlab.theory.fixed_points`), as :func:`mark_fixed_points` draws them."""


def to_cartesian(y) -> np.ndarray:
    """Barycentric ``(..., 3)`` → Cartesian ``(..., 2)``."""
    return np.asarray(y) @ _CORNERS


def to_barycentric(xy) -> np.ndarray:
    """Cartesian ``(..., 2)`` → barycentric ``(..., 3)`` (inverse of :func:`to_cartesian`)."""
    xy = np.asarray(xy)
    y2 = xy[..., 1] / _CORNERS[2, 1]
    y1 = xy[..., 0] - 0.5 * y2
    return np.stack([1.0 - y1 - y2, y1, y2], axis=-1)


def ternary_axes(ax, labels=("$y_1$", "$y_2$", "$y_3$"), *, title: str | None = None) -> None:
    """Draw the triangle, vertex labels and a light barycentric grid; hide the Cartesian axes."""
    tri = np.vstack([_CORNERS, _CORNERS[:1]])
    ax.plot(tri[:, 0], tri[:, 1], color="black", lw=1.0, zorder=3)
    for t in (0.25, 0.5, 0.75):
        for i in range(3):
            a = np.zeros(3)
            b = np.zeros(3)
            a[i], b[i] = t, t
            a[(i + 1) % 3], b[(i + 2) % 3] = 1 - t, 1 - t
            seg = to_cartesian(np.stack([a, b]))
            ax.plot(seg[:, 0], seg[:, 1], color="0.88", lw=0.6, zorder=0)
    offsets = [(-0.04, -0.05), (0.04, -0.05), (0.0, 0.04)]
    for (x, y), (dx, dy), lab in zip(_CORNERS, offsets, labels, strict=True):
        ax.text(x + dx, y + dy, lab, ha="center", va="center", fontsize=11)
    ax.set_xlim(-0.08, 1.08)
    ax.set_ylim(-0.1, 0.95)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=11)


def simplex_grid(n: int = 40, margin: float = 1e-3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A Cartesian grid over the triangle's bounding box, its barycentric coordinates, and a mask
    of the points inside the triangle (at least ``margin`` from each face)."""
    xs = np.linspace(0.0, 1.0, n)
    ys = np.linspace(0.0, _CORNERS[2, 1], n)
    X, Y = np.meshgrid(xs, ys)
    bary = to_barycentric(np.stack([X, Y], axis=-1))
    inside = np.all(bary >= margin, axis=-1)
    return np.stack([X, Y], axis=-1), bary, inside


def stream_on_simplex(ax, field: Callable[[np.ndarray], np.ndarray], *, n: int = 40,
                      density: float = 1.0, color="0.45", **kwargs):
    """Streamlines of a within-simplex field ``f(y) -> dy`` (batched over ``(..., 3)``).

    Returns the streamplot, or ``None`` when the field vanishes identically on the grid (every
    point an equilibrium), in which case nothing is drawn.
    """
    xy, bary, inside = simplex_grid(n)
    dy = np.asarray(field(np.where(inside[..., None], bary, 1.0 / 3)))
    dxy = dy @ _CORNERS  # tangent vectors map linearly
    U = np.where(inside, dxy[..., 0], np.nan)
    W = np.where(inside, dxy[..., 1], np.nan)
    if not np.any(np.abs(np.nan_to_num(U)) + np.abs(np.nan_to_num(W)) > 1e-14):
        return None
    speed = np.hypot(U, W)
    return ax.streamplot(xy[0, :, 0], xy[:, 0, 1], U, W, density=density, color=color,
                         linewidth=0.6 + 1.4 * np.nan_to_num(speed / np.nanmax(speed)),
                         arrowsize=0.8, **kwargs)


def mark_fixed_points(ax, fixed_points, *, size: float = 60.0, legend: bool = False) -> None:
    """Mark ``FixedPoint``s (``.point``, ``.kind``) with :data:`FIXED_POINT_STYLE`."""
    seen = set()
    for fp in fixed_points:
        style = dict(FIXED_POINT_STYLE[fp.kind])
        label = style.pop("label")
        x, y = to_cartesian(fp.point)
        ax.scatter([x], [y], s=size, zorder=5, linewidths=1.2,
                   label=label if label not in seen else None, **style)
        seen.add(label)
    if legend:
        ax.legend(loc="upper right", fontsize=8, frameon=False)


#: ``(history key, panel title, y-axis label)`` of :func:`plot_training`
#: what :func:`plot_solution` can draw: a ``Solution`` attribute -> its panel title
SOLUTION_PANELS = {"p": "bad mass p", "L_y": "concentration L_y = ||y||²",
                   "L_z": "concentration L_z = ||z||²", "K_eff": "effective good modes 1/L_y",
                   "y": "good composition y_j", "z": "bad composition z_j"}


def plot_solution(solutions, *, quantities=("p", "L_y", "y"), title: str = ""):
    """Trajectories of :func:`simplexlab.theory.solve` against physical time ``t``, one panel per
    quantity (``"p"``, ``"L_y"``, ``"L_z"``, ``"K_eff"``, or ``"y"`` / ``"z"``: one line per
    mode). ``solutions``: one ``Solution`` or ``{label: Solution}``, each labelled in the legend
    (a method name of :data:`METHOD_STYLES`, e.g. ``"grpo"``, draws in that method's colour);
    a vmapped ``Solution`` draws every trajectory of its batch thinly. Save points after a run
    stopped early (non-finite) are left out. The legend sits inside the first panel, so a plain
    ``fig.savefig`` keeps it. Returns the figure."""
    import matplotlib.pyplot as plt

    unknown = [q for q in quantities if q not in SOLUTION_PANELS]
    if unknown or not quantities:
        raise ValueError(f"quantities {list(quantities)}: each one of {list(SOLUTION_PANELS)}")
    solutions = solutions if isinstance(solutions, dict) else {"": solutions}
    use_style()
    fig, axes = plt.subplots(1, len(quantities), figsize=(4.6 * len(quantities), 3.8),
                             squeeze=False)
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, sol) in enumerate(solutions.items()):
        color = METHOD_STYLES[label].color if label in METHOD_STYLES else cycle[i % len(cycle)]
        shown = METHOD_STYLES[label].name if label in METHOD_STYLES else label
        t = np.asarray(sol.t, float).reshape(-1, np.shape(sol.t)[-1])  # (batch, save points)
        one = len(t) == 1
        for ax, q in zip(axes[0], quantities, strict=True):
            per_mode = q in ("y", "z")
            v = np.asarray(getattr(sol, q), float)
            v = v.reshape(len(t), t.shape[1], -1)  # (batch, save points, lines)
            for b in range(len(t)):
                for j in range(v.shape[-1]):
                    ok = np.isfinite(t[b]) & np.isfinite(v[b, :, j])
                    name = f"{shown} {q}_{j + 1}".strip() if per_mode else shown
                    ax.plot(t[b, ok], v[b, ok, j], color=color, lw=1.8 if one else 0.7,
                            alpha=1.0 if one else 0.5,
                            ls=("-", "--", ":", "-.")[j % 4] if per_mode else "-",
                            label=name if b == 0 and name else None)
            ax.set_title(SOLUTION_PANELS[q])
            ax.set_xlabel("time t")
            ax.grid(alpha=0.3)
    for ax, q in zip(axes[0], quantities, strict=True):
        if q in ("y", "z") or (ax is axes[0][0] and any(solutions)):
            ax.legend(fontsize=7 if q in ("y", "z") else 8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


TRAINING_PANELS = (("p", "bad mass p (1 − accuracy)", "bad mass p (probability)"),
                   ("L_y", "concentration L_y = ||y||²", "L_y (1/K uniform … 1 one mode)"),
                   ("K_hat", "good modes K̂ (y_j > {threshold:g})", "K̂ (number of modes)"))


def plot_training(histories: dict, predictions: dict | None = None, *, K: int | None = None,
                  labels: dict | None = None, title: str = "", mode_threshold: float = 0.05):
    """Training curves of the LLM driver: ``p``, ``L_y`` and ``K̂`` against the step, one line
    per method in its registered style (:data:`METHOD_STYLES`; seed mean, and with more than
    one seed a min–max band over seeds) and, dashed, its mean-field prediction.

    ``histories``: ``{method: [history, ...]}`` (one history per seed: the rows of
    :func:`simplexlab.llm.train`; a key ``"rule-variant"``, e.g. ``"g2rpo-discovered"``, is
    drawn in its rule's colour, dotted); ``predictions``:
    ``{method: {"step", "p", "L_y", "K_hat"}}``; ``K`` draws the ``1/K`` floor of ``L_y``;
    ``mode_threshold`` is K̂'s (for the title).
    Returns the figure."""
    import matplotlib.pyplot as plt

    use_style()
    labels = labels or {}
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.8))
    banded = False
    for ax, (key, name, ylabel) in zip(axes, TRAINING_PANELS, strict=True):
        for m in {**histories, **(predictions or {})}:  # a prediction alone is drawn too
            runs = histories.get(m, [])
            rule, _, variant = m.partition("-")
            style = method_style(rule)
            if variant:  # the same rule another way: its colour, dotted
                style = dataclasses.replace(style, ls=":")
            rows = [[r for r in h if key in r] for h in runs]
            if runs:
                steps = np.asarray([r["step"] for r in rows[0]], float)
                v = np.asarray([[r[key] for r in h] for h in rows], float)
                n = len(v)
                ax.plot(steps, v.mean(0), color=style.color, ls=style.ls, lw=2,
                        label=f"{labels.get(m, style.name)} (measured, "
                              f"{'mean of ' if n > 1 else ''}{n} seed{'s' * (n > 1)})")
                if n > 1:
                    ax.fill_between(steps, v.min(0), v.max(0), color=style.color, alpha=0.2, lw=0)
                    banded = True
            if predictions and m in predictions:
                pr = predictions[m]
                ax.plot(pr["step"], pr[key], color=style.color, ls="--", lw=1.5,
                        label=f"{style.name} mean-field prediction")
        if key == "L_y" and K:
            ax.axhline(1 / K, color="grey", lw=0.8, ls=":")
            ax.annotate("1/K", (1.0, 1 / K), xycoords=("axes fraction", "data"), fontsize=8,
                        color="grey", va="bottom", ha="right")
        ax.set_title(name.format(threshold=mode_threshold))
        ax.set_xlabel("training step")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    handles, names = axes[0].get_legend_handles_labels()
    if banded:
        handles.append(plt.matplotlib.patches.Patch(color="grey", alpha=0.3))
        names.append("shaded band: min–max over seeds")
    legend_outside(fig, where="below", handles=handles, labels=names, ncol=2)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_plan(report):
    """The group-size planner's report (:func:`simplexlab.verify.plan`) against ``G`` (log
    axis), in four panels: the probability that a group carries signal, the rarest mode's
    tail-miss probability (each with its target as a dotted line), the expected number of good
    modes a group sees (``K`` dotted) and the drift ``dL_y/dt`` of the finite-group field at
    the representative state (markers coloured by regime, the cancel band shaded, the G → ∞
    drift dashed). The recommended ``G`` is marked by a vertical line on every panel. Takes the
    report or its :meth:`~simplexlab.verify.PlanReport.to_dict`; returns the figure."""
    import matplotlib.pyplot as plt

    d = report.to_dict() if hasattr(report, "to_dict") else report
    use_style()
    G = np.asarray(d["group_sizes"], float)
    inp = d["inputs"]
    style = method_style(inp["method"])
    fig, axes = plt.subplots(1, 4, figsize=(16, 4.2))
    panels = (("signal", "P(group carries signal)", inp["min_signal"], "min"),
              ("tail_miss", "tail-miss of the rarest mode", inp["max_tail_miss"], "max"),
              ("modes_seen", "good modes a group sees", inp["K"], "K"))
    for ax, (key, title, target, what) in zip(axes[:3], panels, strict=True):
        ax.plot(G, np.asarray(d[key], float), color=style.color, marker=style.marker, ms=4)
        ax.axhline(target, color="grey", ls=":", lw=1)
        ax.annotate(f"{what} {target:g}", (1.0, target), xycoords=("axes fraction", "data"),
                    fontsize=8, color="grey", ha="right", va="bottom")
        ax.set_title(title)
    ax = axes[3]
    drift = np.array([np.nan if v is None else v for v in d["drift"]], float)
    known = np.isfinite(drift)
    ax.plot(G[known], drift[known], color=style.color, lw=1)
    colours = {"collision": "#d62728", "cancel": "#7f7f7f", "anti-collision": "#2ca02c"}
    for regime, colour in colours.items():
        sel = np.array([r == regime for r in d["regime"]])
        if sel.any():
            ax.scatter(G[sel], drift[sel], color=colour, zorder=3, s=28, label=regime)
    band = inp["cancel_tol"] * (d["scale"] or 0.0)
    ax.axhspan(-band, band, color="grey", alpha=0.15, lw=0)
    ax.axhline(0.0, color="black", lw=0.6)
    if d["limit_drift"] is not None:
        ax.axhline(d["limit_drift"], color=style.color, ls="--", lw=1, label="G → ∞")
    ax.set_title("dL_y/dt (finite-G field)")
    ax.legend(fontsize=8, frameon=False)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("group size G")
        ax.grid(alpha=0.3)
        if d["recommended"] is not None:
            ax.axvline(d["recommended"], color="black", ls="--", lw=1)
    if d["recommended"] is not None:
        axes[0].annotate(f"G = {d['recommended']}", (d["recommended"], 0.02),
                         xycoords=("data", "axes fraction"), fontsize=9, ha="left")
    fig.suptitle(f"{style.name}: pass rate {1 - d['state']['p']:.3g}, K = "
                 f"{inp['K']}, rarest mass {inp['tau']:.3g} — recommended "
                 f"G = {d['recommended'] if d['recommended'] is not None else 'none'}",
                 fontsize=10)
    fig.tight_layout()
    return fig
