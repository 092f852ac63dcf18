"""Interval primitives, one home: the union of [start, end) intervals and its length,
optionally clipped to a window. The report's busy fraction, the ruler's busy % and the
analysis service's per-device unions all use these, so they cannot disagree.

An interval whose end is before its start counts as empty (never negative time).
"""

from __future__ import annotations

import numpy as np

_I64 = np.int64


def union(start: np.ndarray, end: np.ndarray, t0: int | None = None, t1: int | None = None
          ) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint, sorted (ustart, uend) covering the intervals (any order), clipped to
    ``[t0, t1)`` when given. Touching intervals merge."""
    s = np.asarray(start, dtype=_I64)
    e = np.maximum(np.asarray(end, dtype=_I64), s)
    if t0 is not None:
        s, e = np.maximum(s, t0), np.maximum(e, t0)
    if t1 is not None:
        s, e = np.minimum(s, t1), np.minimum(e, t1)
    keep = e > s
    if not keep.all():
        s, e = s[keep], e[keep]
    if len(s) == 0:
        return np.zeros(0, _I64), np.zeros(0, _I64)
    if len(s) > 1 and np.any(s[1:] < s[:-1]):
        o = np.argsort(s, kind="stable")
        s, e = s[o], e[o]
    run = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    np.greater(s[1:], run[:-1], out=new[1:])
    first = np.flatnonzero(new)
    return s[first], run[np.r_[first[1:] - 1, len(s) - 1]]


def union_length(start: np.ndarray, end: np.ndarray, t0: int | None = None,
                 t1: int | None = None) -> int:
    """Total length of the union of the intervals, clipped to ``[t0, t1)`` when given."""
    us, ue = union(start, end, t0, t1)
    return int((ue - us).sum())


def clipped_length(ustart: np.ndarray, uend: np.ndarray, t0: int, t1: int) -> int:
    """Length of an already disjoint, sorted union inside ``[t0, t1)``: O(log n)."""
    if len(ustart) == 0 or t1 <= t0:
        return 0
    a = max(int(np.searchsorted(uend, t0, side="right")), 0)
    b = int(np.searchsorted(ustart, t1, side="left"))
    if b <= a:
        return 0
    s = np.maximum(ustart[a:b], t0)
    e = np.minimum(uend[a:b], t1)
    return int(np.maximum(e - s, 0).sum())


def busy_fraction(ustart: np.ndarray, uend: np.ndarray, t0: int, t1: int) -> float:
    """Share of ``[t0, t1)`` covered by the union; 1.0 for an empty window (a device
    whose kernels all have zero length is not 'idle')."""
    if t1 <= t0:
        return 1.0
    return clipped_length(ustart, uend, t0, t1) / (t1 - t0)
