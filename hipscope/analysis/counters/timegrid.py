"""Counter values laid along time per device (the heatmap's lower panel)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .clustering import normalise
from .columns import CounterColumn, CounterMatrix


@dataclass(frozen=True)
class CounterTimeGrid:
    """``grid[device][c, b]``: mean normalised value of column c over dispatches that
    overlap time bin b of ``[t0, t1)`` (NaN = none); ``edges`` the bin edges (ns)."""

    edges: np.ndarray
    columns: list[CounterColumn]
    grid: dict[int, np.ndarray]


def counter_time_grid(m: CounterMatrix, t0: int, t1: int, bins: int,
                      method: str = "minmax") -> CounterTimeGrid:
    """Counter values laid along time per device (``m`` must be per dispatch).

    Values are normalised per column over *all* dispatches first, so colours do not
    change when the window moves. Each dispatch adds its value to every bin its
    [start, end) overlaps (difference arrays: O(dispatches + bins) per column)."""
    if m.per != "dispatch":
        raise ValueError("the time grid needs a per-dispatch matrix")
    bins = max(1, int(bins))
    t0, t1 = int(t0), max(int(t1), int(t0) + 1)
    edges = np.linspace(t0, t1, bins + 1)
    norm = normalise(m, method) if method != "none" else m.values
    width = (t1 - t0) / bins
    out: dict[int, np.ndarray] = {}
    for dev in np.unique(m.devices):
        sel = np.flatnonzero((m.devices == dev) & (m.ends > t0) & (m.starts < t1))
        ncol = norm.shape[1]
        total = np.zeros((bins + 1, ncol))
        cnt = np.zeros((bins + 1, ncol))
        if len(sel):
            b0 = np.clip(((m.starts[sel] - t0) // width).astype(np.int64), 0, bins - 1)
            b1 = np.clip(np.ceil((m.ends[sel] - t0) / width).astype(np.int64), b0 + 1, bins)
            v = norm[sel]
            fin = np.isfinite(v)
            vz = np.where(fin, v, 0.0)
            np.add.at(total, b0, vz)
            np.subtract.at(total, b1, vz)
            np.add.at(cnt, b0, fin)
            np.subtract.at(cnt, b1, fin)
        s, c = np.cumsum(total, axis=0)[:bins], np.cumsum(cnt, axis=0)[:bins]
        with np.errstate(invalid="ignore", divide="ignore"):
            g = np.where(c > 0.5, s / np.maximum(c, 1), np.nan)
        out[int(dev)] = g.T
    return CounterTimeGrid(edges, list(m.columns), out)
