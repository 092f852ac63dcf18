"""Interval primitives, one home: the union of [start, end) intervals and its length,
optionally clipped to a window, and the nesting depth of ranges. The report's busy
fraction, the ruler's busy %, the analysis service's per-device unions, the readers'
marker depths and the timeline's track depths all use these, so they cannot disagree.

An interval whose end is before its start counts as empty (never negative time).
Qt-free; numpy only.
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


def nesting_depth(start: np.ndarray, end: np.ndarray, group: np.ndarray | None = None,
                  instant_depth_zero: bool = False) -> np.ndarray:
    """Nesting depth of ranges per group (0 = outermost): how many ranges of the same
    group are open when each one starts. A range ending exactly when another starts
    does not enclose it; of ranges starting together the longer encloses the shorter;
    a zero-length mark encloses nothing and gets the depth of the ranges open around
    it (0 with ``instant_depth_zero``). Ranges that cross without nesting count as
    open while they last. int16."""
    start = np.asarray(start, _I64)
    end = np.asarray(end, _I64)
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype=np.int16)
    if group is not None and len(group) and np.any(np.asarray(group) != np.asarray(group)[0]):
        depth = _grouped_depth(start, end, np.asarray(group, _I64))
    else:
        depth = _one_group_depth(start, end)
    if instant_depth_zero:
        depth[end <= start] = 0
    return np.clip(depth, 0, 32767).astype(np.int16)


def _one_group_depth(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Depth = ranges opened before (in start order, longer first) - ranges closed by
    then: one sort of the ends and, unless the starts come sorted, of the starts (the
    timeline calls this on millions of API calls)."""
    nz = end > start
    every = bool(nz.all())
    s_nz, e_nz = (start, end) if every else (start[nz], end[nz])
    # ends come nearly in order (calls end in about the order they start): timsort
    # ("stable") takes those runs in one pass, ~6x quicker than the default introsort
    closed = np.searchsorted(np.sort(e_nz, kind="stable"), start, side="right")
    rank = np.arange(len(s_nz), dtype=_I64)
    if len(s_nz) > 1:
        step = s_nz[1:] - s_nz[:-1]
        if not (step >= 0).all():
            rank[np.lexsort((-e_nz, s_nz))] = rank.copy()
        elif not (step > 0).all():                 # sorted: reorder equal starts only
            same = step == 0
            tie = np.zeros(len(s_nz), bool)
            tie[1:] |= same
            tie[:-1] |= same
            pos = np.flatnonzero(tie)
            rank[pos[np.lexsort((-e_nz[pos], s_nz[pos]))]] = pos
    if every:
        return rank - closed
    opened = np.empty(len(start), _I64)
    opened[nz] = rank        # a mark: every range started by then, those at its time too
    opened[~nz] = np.searchsorted(np.sort(s_nz, kind="stable"), start[~nz], side="right")
    return opened - closed


def _grouped_depth(start: np.ndarray, end: np.ndarray, group: np.ndarray) -> np.ndarray:
    """The general case: one lexsort of starts and ends per (group, time)."""
    n = len(start)
    zero = end <= start
    # events: starts (+1) and ends (-1); zero-length ranges are queries only (0).
    # Order: group, time, ends before starts before zero-length queries, longer first
    g = np.concatenate([group, group])
    t = np.concatenate([start, end])
    kind = np.concatenate([np.where(zero, 2, 1), np.zeros(n, _I64)]).astype(np.int8)
    neg_end = np.concatenate([-end, np.zeros(n, _I64)])
    order = np.lexsort((neg_end, kind, t, g))
    is_start = order < n
    step = np.where(is_start, 1, -1).astype(_I64)
    step[np.concatenate([zero, zero])[order]] = 0
    open_before = np.cumsum(step) - step
    depth = np.empty(n, dtype=_I64)
    depth[order[is_start]] = open_before[is_start]
    return depth
