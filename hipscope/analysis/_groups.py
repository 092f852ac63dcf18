"""Grouping helpers shared by the analyses: rows grouped by a small integer key (thread,
stream, device) in a stable order, without a stable argsort of int64 keys (numpy's
timsort: ~130 ms per million random rows). Keys of a bounded range get dense codes
from a count table, and codes sort by radix (numpy's stable sort of 8/16-bit ints:
~5 ms per million). Qt-free; numpy only.
"""

from __future__ import annotations

import numpy as np


def dense_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``: the sorted distinct values and each
    value's index in them; integer keys of a range up to ~2x their count by a count
    table (no sort)."""
    v = np.asarray(values)
    if len(v) and v.dtype.kind in "iu":
        lo, hi = int(v.min()), int(v.max())
        if hi - lo < max(1 << 16, 2 * len(v)) and hi < 1 << 63:
            off = v.astype(np.int64, copy=False) - lo
            present = np.bincount(off, minlength=hi - lo + 1) > 0
            lut = np.cumsum(present) - 1
            uniq = (np.flatnonzero(present) + lo).astype(v.dtype)
            return uniq, lut[off]
    uniq, inv = np.unique(v, return_inverse=True)
    return uniq, inv.reshape(-1)


def group_order(codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows in a stable order by code (0 <= code < n_groups) and the ``n_groups + 1``
    bounds of each code's run in it."""
    narrow = (np.uint8 if n_groups <= 1 << 8 else np.uint16 if n_groups <= 1 << 16
              else np.int64)
    order = np.argsort(codes.astype(narrow, copy=False), kind="stable")
    bounds = np.zeros(n_groups + 1, np.intp)
    np.cumsum(np.bincount(codes, minlength=n_groups), out=bounds[1:])
    return order, bounds


def sort_within(order: np.ndarray, bounds: np.ndarray, key: np.ndarray) -> np.ndarray:
    """``order`` (of :func:`group_order`) with each group's run in stable ``key``
    order: the rows of ``np.lexsort((key, codes))``. Runs already in order (the usual
    case) cost one comparison pass."""
    k = key[order]
    down = np.flatnonzero(k[1:] < k[:-1]) + 1          # a row below the one before it
    g = np.searchsorted(bounds, down, side="right") - 1
    g = g[bounds[g] != down]                           # not merely a group's first row
    if len(g) == 0:
        return order
    order = order.copy()
    for i in np.unique(g).tolist():
        lo, hi = bounds[i], bounds[i + 1]
        order[lo:hi] = order[lo:hi][np.argsort(k[lo:hi], kind="stable")]
    return order
