"""Grouping helpers shared by the analyses: rows grouped by a small integer key (thread,
stream, device) in a stable order, without a stable argsort of int64 keys (numpy's
timsort: ~130 ms per million random rows). Keys of a bounded range get dense codes
from a count table, and codes sort by radix (numpy's stable sort of 8/16-bit ints:
~5 ms per million). Qt-free; numpy only.
"""

from __future__ import annotations

import numpy as np


def _narrow(n: int) -> type:
    """The narrowest code type for ``n`` groups (8/16-bit codes sort by radix)."""
    return np.uint8 if n <= 1 << 8 else np.uint16 if n <= 1 << 16 else np.int64


def _dense(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted distinct values, each value's index in them as the narrowest type, how
    many of each); integer keys of a range up to ~2x their count by a count table."""
    if len(v) and v.dtype.kind in "iu":
        lo, hi = int(v.min()), int(v.max())
        if hi - lo < max(1 << 16, 2 * len(v)) and hi < 1 << 63:
            off = v.astype(np.int64, copy=False) - lo
            counts = np.bincount(off, minlength=hi - lo + 1)
            present = counts > 0
            uniq = (np.flatnonzero(present) + lo).astype(v.dtype)
            lut: np.ndarray = (np.cumsum(present) - 1).astype(_narrow(len(uniq)))
            return uniq, lut[off], counts[present]
    uniq, inv = np.unique(v, return_inverse=True)
    inv = inv.reshape(-1)
    return uniq, inv.astype(_narrow(len(uniq))), np.bincount(inv, minlength=len(uniq))


def dense_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``: the sorted distinct values and each
    value's index in them (no sort for integer keys of a bounded range)."""
    uniq, code, _ = _dense(np.asarray(values))
    return uniq, code


def group_order(codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows in a stable order by code (0 <= code < n_groups) and the ``n_groups + 1``
    bounds of each code's run in it."""
    return _order(codes.astype(_narrow(n_groups), copy=False),
                  np.bincount(codes, minlength=n_groups))


def _order(codes: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bounds = np.zeros(len(counts) + 1, np.intp)
    np.cumsum(counts, out=bounds[1:])
    return np.argsort(codes, kind="stable"), bounds


def grouped(key: np.ndarray, order_by: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows grouped by ``key``, each group in stable ``order_by`` order (the rows of
    ``np.lexsort((order_by, key))``): (distinct keys ascending, rows, the bounds of
    each key's run in them, ``order_by[rows]``). Runs already in order (the usual case)
    cost one comparison pass."""
    uniq, code, counts = _dense(np.asarray(key))
    order, bounds = _order(code, counts)
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
