"""The utilisation grid of a job: per-rank fine bins, re-binned on the client.

A worker cannot know the job's time range while it analyses its rank, so it bins its
rank's GPU busy time (the union of its kernels and copies) into *fine bins* of its own:
``FINE_BINS`` or fewer bins of a power-of-two width, aligned to multiples of that
width on the traces' clock. The client picks the job's bin width: the smallest power
of two that is at least every rank's fine width and gives at most ``GRID_BINS`` bins
over the job's span. Since both widths are powers of two aligned at 0, every fine bin
lies inside exactly one job bin, so re-binning is an exact sum (no second pass over the
traces, no interpolation). A rank sends ``FINE_BINS`` int64s (8 KiB).
"""

from __future__ import annotations

import numpy as np

FINE_BINS = 1024
GRID_BINS = 512

__all__ = ["FINE_BINS", "GRID_BINS", "busy_before", "fine_bins", "job_grid", "rebin"]


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def busy_before(us: np.ndarray, ue: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Busy ns before each time ``t`` of the sorted disjoint intervals ``[us, ue)``."""
    us, ue, t = (np.asarray(x, np.int64) for x in (us, ue, t))
    if len(us) == 0:
        return np.zeros(len(t), np.int64)
    full = np.concatenate([[0], np.cumsum(ue - us)])     # full[j]: the first j intervals
    i = np.searchsorted(us, t, side="right")           # intervals starting at or before t
    j = np.maximum(i - 1, 0)
    part = np.minimum(t, ue[j]) - us[j]                  # of the last of them
    return np.where(i > 0, full[j] + part, 0)


def fine_bins(us: np.ndarray, ue: np.ndarray, t0: int, t1: int
              ) -> tuple[int, int, np.ndarray]:
    """(width, index of the first bin, busy ns per bin) over ``[t0, t1)`` for the union
    ``[us, ue)``; bin ``i`` covers ``[(first + i) * width, (first + i + 1) * width)``."""
    width = _pow2_at_least(max(1, -(-(t1 - t0) // FINE_BINS)))
    first, last = t0 // width, max(t0, t1 - 1) // width
    edges = np.arange(first, last + 2, dtype=np.int64) * width
    return width, int(first), np.diff(busy_before(us, ue, edges)).astype(np.int64)


def job_grid(spans: list[tuple[int, int]], widths: list[int]) -> tuple[int, int, int]:
    """(grid start, bin width, number of bins) for the ranks' spans and fine widths."""
    if not spans:
        return 0, 1, 0
    t0, t1 = min(s for s, _ in spans), max(e for _, e in spans)
    width = max(max(widths, default=1), _pow2_at_least(max(1, -(-(t1 - t0) // GRID_BINS))))
    start = (t0 // width) * width
    return int(start), int(width), int((max(t0, t1 - 1) - start) // width + 1)


def rebin(width: int, first: int, busy: np.ndarray, grid: tuple[int, int, int]
          ) -> list[float]:
    """A rank's fine bins as busy fractions of the job grid's bins."""
    start, gw, n = grid
    if n == 0:
        return []
    idx = (np.arange(first, first + len(busy), dtype=np.int64) * width - start) // gw
    ok = (idx >= 0) & (idx < n)
    sums = np.bincount(idx[ok], weights=np.asarray(busy, np.float64)[ok], minlength=n)
    return [round(float(v), 6) for v in np.clip(sums / gw, 0.0, 1.0)]
