"""Plotting helpers (matplotlib) for simplex figures. No numerics live here.

Ternary convention: vertex ``e_0`` at the bottom left, ``e_1`` at the bottom right, ``e_2`` on top.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = [
    "FIXED_POINT_STYLE",
    "mark_fixed_points",
    "plot_training",
    "simplex_grid",
    "stream_on_simplex",
    "ternary_axes",
    "to_barycentric",
    "to_cartesian",
]

_CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])

FIXED_POINT_STYLE = {
    "sink": dict(marker="o", facecolor="black", edgecolor="black", label="sink"),
    "source": dict(marker="o", facecolor="white", edgecolor="black", label="source"),
    "saddle": dict(marker="s", facecolor="tab:orange", edgecolor="black", label="saddle"),
    "non-hyperbolic": dict(marker="D", facecolor="0.7", edgecolor="black",
                           label="non-hyperbolic"),
}
"""Matplotlib marker style of a fixed point by stability label (the labels of
:func:`simplexlab.geometry.fixed_points`), as :func:`mark_fixed_points` draws them."""


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


#: colours and labels of the training methods in :func:`plot_training`
METHOD_STYLE = {"grpo": ("tab:blue", "GRPO"), "g2rpo": ("tab:orange", "G²RPO")}
TRAINING_PANELS = (("p", "bad mass p (1 − accuracy)"), ("L_y", "concentration L_y = ||y||²"),
                   ("K_hat", "good modes K̂ (y_j > {threshold:g})"))


def plot_training(histories: dict, predictions: dict | None = None, *, K: int | None = None,
                  labels: dict | None = None, title: str = "", mode_threshold: float = 0.05):
    """Training curves of the LLM driver: ``p``, ``L_y`` and ``K̂`` against the step, one line
    per method (seed mean, min–max band over seeds) and, dashed, its mean-field prediction.

    ``histories``: ``{method: [history, ...]}`` (one history per seed: the rows of
    :func:`simplexlab.llm.train`); ``predictions``: ``{method: {"step", "p", "L_y", "K_hat"}}``;
    ``K`` draws the ``1/K`` floor of ``L_y``; ``mode_threshold`` is K̂'s (for the title).
    Returns the figure."""
    import matplotlib.pyplot as plt

    labels = labels or {}
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.8))
    for ax, (key, name) in zip(axes, TRAINING_PANELS, strict=True):
        for i, (m, runs) in enumerate(histories.items()):
            color, short = METHOD_STYLE.get(m, (f"C{i + 2}", m))
            rows = [[r for r in h if key in r] for h in runs]
            steps = np.asarray([r["step"] for r in rows[0]], float)
            v = np.asarray([[r[key] for r in h] for h in rows], float)
            n = len(v)
            ax.plot(steps, v.mean(0), color=color, lw=2,
                    label=f"{labels.get(m, short)} (measured, {n} seed{'s' * (n > 1)})")
            if n > 1:
                ax.fill_between(steps, v.min(0), v.max(0), color=color, alpha=0.2)
            if predictions and m in predictions:
                pr = predictions[m]
                ax.plot(pr["step"], pr[key], color=color, ls="--", lw=1.5,
                        label=f"{short} mean-field")
        if key == "L_y" and K:
            ax.axhline(1 / K, color="grey", lw=0.8, ls=":")
            ax.annotate("1/K", (1.0, 1 / K), xycoords=("axes fraction", "data"), fontsize=8,
                        color="grey", va="bottom", ha="right")
        ax.set_title(name.format(threshold=mode_threshold))
        ax.set_xlabel("training step")
        ax.grid(alpha=0.3)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=2, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, -0.02))
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig
