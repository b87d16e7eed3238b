"""Per-prompt statistics of discovered modes (G2 §5): ŷ, K̂ and L_y over the correct completions
(:func:`mode_stats`), computed by the package's diversity metrics
(:func:`simplexlab.shaping.cluster_distribution`, :func:`~simplexlab.shaping.num_modes`,
:func:`~simplexlab.theory.concentration`) from the mode ids of
:func:`simplexlab.llm.discover_modes` (or any integer ids)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._embed import _pos_int
from ._modes import Modes, _layout, _rewards

__all__ = ["ModeStats", "mode_stats"]


class ModeStats(NamedTuple):
    """Per-group statistics of the correct completions (:func:`mode_stats`); leading shape: one
    entry per group (none for a single group)."""

    y: np.ndarray  #: ŷ, cluster masses ``(…, num_clusters)``; zeros where ``n_good == 0``
    K: np.ndarray  #: K̂, occupied clusters (G2 App. G.2 ``rarity/avg_K``); 0 where no good
    L_y: np.ndarray  #: ``‖ŷ‖²`` (``rarity/avg_L2y``); NaN where ``n_good == 0``
    n_good: np.ndarray  #: correct (clustered) completions per group


def mode_stats(modes, rewards=None, *, groups=None, num_clusters: int | None = None) -> ModeStats:
    """Per group ŷ, K̂ and L_y of the correct completions (G2 §4 Alg. 1 line 3, App. G.2), by
    :func:`simplexlab.shaping.cluster_distribution`, :func:`~simplexlab.shaping.num_modes` and
    :func:`~simplexlab.theory.concentration` -- the quantities the paper logs (``rarity/avg_K``,
    ``rarity/avg_L2y``), without Listing 1's clip ρ (that belongs to the bonus:
    :func:`simplexlab.llm.group_stats`).

    ``modes``: the ids of :func:`discover_modes` (a :class:`Modes` or its ``ids``: ``(n,)`` for
    one group or, with ``groups`` as given there, several; or ``(P, G)``); ids ``−1`` are not
    counted. ``rewards``: booleans or 0/1 of the same shape (``None``: every completion counts as
    correct). ``num_clusters``: the width of ŷ (default: the :class:`Modes`' value, else the
    largest id + 1). Returns :class:`ModeStats` with one entry per group (in the order the groups
    first appear), none for a single group; feed ``y[n_good > 0]`` to the other metrics
    (``entropy``, ``normalized_entropy``, ``effective_num_modes``).
    """
    from ..shaping import cluster_distribution, num_modes
    from ..theory import concentration

    if isinstance(modes, Modes):
        num_clusters = modes.num_clusters if num_clusters is None else num_clusters
        modes = modes.ids
    ids = np.asarray(modes.detach().cpu() if hasattr(modes, "detach") else modes)
    if ids.ndim not in (1, 2) or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"modes must be a non-empty integer array (n,) or (P, G); got "
                         f"{ids.dtype} {ids.shape}")
    if ids.min() < -1:
        raise ValueError(f"mode ids must be >= -1; got {ids.min()}")
    correct = _rewards(rewards, ids.shape)
    correct = np.ones(ids.size, bool) if correct is None else correct
    if num_clusters is None:
        num_clusters = max(int(ids.max()) + 1, 1)
    num_clusters = _pos_int(num_clusters, "num_clusters")
    if groups is not None:
        if ids.ndim != 1:
            raise ValueError("groups is for flat (n,) ids only; (P, G) ids are grouped by row")
        _, _, index, _ = _layout([""] * ids.size, groups)
        width = max(len(i) for i in index)
        grid = np.full((len(index), width), -1, np.int64)
        good = np.zeros((len(index), width), bool)
        for p, i in enumerate(index):
            grid[p, :len(i)] = ids[i]
            good[p, :len(i)] = correct[i]
    else:
        grid, good = ids.astype(np.int64), correct.reshape(ids.shape)
    y = cluster_distribution(grid, num_clusters, mask=good & (grid >= 0))
    n_good = np.sum(good & (grid >= 0), axis=-1)
    K = np.asarray(num_modes(y)).astype(np.int64)
    L = np.where(n_good > 0, np.asarray(concentration(y)), np.nan)
    return ModeStats(np.asarray(y), K, L, n_good)
