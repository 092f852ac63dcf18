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


def grouped(key: np.ndarray, order_by: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows grouped by ``key``, each group in stable ``order_by`` order (the rows of
    ``np.lexsort((order_by, key))``): (distinct keys ascending, rows, the bounds of
    each key's run in them, ``order_by[rows]``). Runs already in order (the usual case)
    cost one comparison pass."""
    uniq, code = dense_codes(key)
    order, bounds = group_order(code, len(uniq))
    k = order_by[order]
    down = np.flatnonzero(k[1:] < k[:-1]) + 1          # a row below the one before it
    g = np.searchsorted(bounds, down, side="right") - 1
    g = g[bounds[g] != down]                           # not merely a group's first row
    for i in np.unique(g).tolist():
        lo, hi = bounds[i], bounds[i + 1]
        o = np.argsort(k[lo:hi], kind="stable")
        order[lo:hi], k[lo:hi] = order[lo:hi][o], k[lo:hi][o]
    return uniq, order, bounds, k


def rows_by_key(key: np.ndarray, order_by: np.ndarray) -> dict[int, np.ndarray]:
    """Per distinct ``key`` (ascending), its rows in stable ``order_by`` order."""
    uniq, order, bounds, _ = grouped(key, order_by)
    return {int(u): order[bounds[i]:bounds[i + 1]] for i, u in enumerate(uniq.tolist())}
