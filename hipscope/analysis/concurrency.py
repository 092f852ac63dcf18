"""Concurrency and launch statistics (definitions in docs/analysis.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import Trace
from ..model.api_names import LAUNCH_RE, is_launch, per_code  # noqa: F401 - LAUNCH_RE re-exported
from ._groups import grouped
from .stats import union_length


def time_at_least(starts: np.ndarray, ends: np.ndarray, k: int = 2,
                  in_order: bool = False) -> int:
    """Total time during which at least ``k`` of the intervals run at once.
    ``in_order``: ``starts`` are sorted already (k = 2 then needs no sort at all)."""
    if len(starts) < k:
        return 0
    starts, ends = starts.astype(np.int64, copy=False), ends.astype(np.int64, copy=False)
    if k != 2:
        return _sweep(starts, ends, k)
    if not in_order:
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], ends[order]
    # t is under 2+ intervals iff some interval j holds it and an earlier-starting one
    # is still running: the pieces [s_j, min(e_j, max end before j)), in start order
    before = np.maximum.accumulate(ends)[:-1]
    a, b = starts[1:], np.minimum(ends[1:], before)
    ok = b > a
    return _sorted_union_length(a[ok], b[ok])


def _sorted_union_length(a: np.ndarray, b: np.ndarray) -> int:
    """Length of the union of intervals sorted by start: each adds what reaches past
    the furthest end before it."""
    if len(a) == 0:
        return 0
    reach = np.maximum.accumulate(b)
    lo = a.copy()
    np.maximum(lo[1:], reach[:-1], out=lo[1:])
    return int(np.maximum(reach - lo, 0).sum())


def _sweep(starts: np.ndarray, ends: np.ndarray, k: int) -> int:
    """Time at ``k``+ by a sweep over the sorted start and end points."""
    lim = 1 << 61
    if max(int(starts.max()), int(ends.max())) < lim and min(int(starts.min()),
                                                              int(ends.min())) > -lim:
        # one sort of 2*t + is_start: at equal times ends (-1) come before starts (+1)
        key = np.sort(np.concatenate((starts * 2 + 1, ends * 2)), kind="stable")
        t, delta = key >> 1, (key & 1) * 2 - 1
    else:
        t = np.concatenate((starts, ends))
        delta = np.concatenate((np.ones(len(starts), np.int64),
                                -np.ones(len(ends), np.int64)))
        order = np.lexsort((delta, t))
        t, delta = t[order], delta[order]
    level = np.cumsum(delta)
    dur = np.diff(t)
    return int(dur[level[:-1] >= k].sum())


@dataclass(frozen=True)
class StreamPair:
    device: int
    stream_a: int
    stream_b: int
    interleavings: int          # times execution switched between the two streams
    shared_queue: bool | None   # both streams on one hardware queue (None: unknown)


def concurrency(trace: Trace, busy_ns: dict[int, int] | None = None,
                device_rows: dict[int, np.ndarray] | None = None) -> dict:
    """Per device: busy time, time with 2+ kernels running, and stream pairs that
    never overlap although their work interleaves in time. ``busy_ns``: the per-device
    busy time when already known (the analysis service's unions); ``device_rows``: each
    device's kernel rows in start order (its sweeps then sort runs that are in order)."""
    k = trace.kernels
    out: dict = {"per_device": {}, "serialized_stream_pairs": []}
    if len(k) == 0:
        return out
    dev = k.numpy("device")
    s, e = k.numpy("start"), k.numpy("end")
    stream = k.numpy("stream", fill=-1).astype(np.int64)
    queue = k.numpy("queue", fill=-1).astype(np.int64)
    sorted_rows = device_rows is not None
    if device_rows is None:
        device_rows = {int(d): np.flatnonzero(dev == d) for d in np.unique(dev)}
    for d, r in device_rows.items():        # one take per column, not a mask each use
        sd, ed, st = s[r], e[r], stream[r]
        ids = np.unique(st)
        busy = busy_ns[int(d)] if busy_ns is not None else union_length(sd, ed)
        two = time_at_least(sd, ed, 2, in_order=sorted_rows)
        out["per_device"][str(int(d))] = {
            "busy_ns": busy, "concurrent_ns": two,
            "concurrent_fraction_of_busy": (two / busy) if busy else 0.0,
            "streams": int(np.count_nonzero(ids >= 0)),
        }
        for pair in _serialized_pairs(int(d), sd, ed, st, queue[r], in_order=sorted_rows,
                                      ids=ids):
            out["serialized_stream_pairs"].append(pair.__dict__)
    return out


def _serialized_pairs(device, s, e, stream, queue, min_switches: int = 4,
                      in_order: bool = False, ids: np.ndarray | None = None
                      ) -> list[StreamPair]:
    ids = [x for x in (np.unique(stream) if ids is None else ids) if x >= 0]
    if len(ids) < 2 or len(ids) > 64:
        return []
    out = []
    rows = {a: np.flatnonzero(stream == a) for a in ids}
    # a stream's rows keep the device's order: in start order when the device's are
    own = {a: time_at_least(s[r], e[r], 2, in_order) for a, r in rows.items()}
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            ma, mb = rows[a], rows[b]
            sa, sb = s[ma], s[mb]
            both = np.concatenate((sa, sb))
            order = np.argsort(both, kind="stable")    # two runs when in order: a merge
            ends = np.concatenate((e[ma], e[mb]))[order]
            if time_at_least(both[order], ends, 2, in_order=True) > own[a] + own[b]:
                continue                   # they do overlap somewhere
            who = np.concatenate((np.zeros(len(sa), np.int8), np.ones(len(sb), np.int8)))
            who = who[order]
            switches = int(np.count_nonzero(np.diff(who)))
            if switches < min_switches:
                continue
            qa, qb = set(queue[ma].tolist()) - {-1}, set(queue[mb].tolist()) - {-1}
            shared = (bool(qa & qb) if qa and qb else None)
            out.append(StreamPair(device, int(a), int(b), switches, shared))
    return out


def launch_stats(trace: Trace, top: int = 10) -> dict:
    """Kernels per second, share of kernels shorter than the launch overhead (median
    duration of launch calls), and the longest gaps between consecutive launches."""
    k, api = trace.kernels, trace.api
    out: dict = {"kernels_per_second": None, "launch_overhead_ns": None,
                 "kernels_shorter_than_launch_fraction": None, "longest_launch_gaps": []}
    if len(k) == 0:
        return out
    s, e = k.numpy("start"), k.numpy("end")
    span = int(e.max() - s.min())
    out["kernels_per_second"] = (len(k) / (span / 1e9)) if span > 0 else None
    if len(api) == 0:
        return out
    codes, names = api.codes("name")
    launch = per_code(names, is_launch)[codes]
    if not launch.any():
        return out
    a_s, a_e = api.numpy("start")[launch], api.numpy("end")[launch]
    overhead = float(np.median(a_e - a_s))
    out["launch_overhead_ns"] = int(round(overhead))
    out["kernels_shorter_than_launch_fraction"] = float(np.mean((e - s) < overhead))
    tid = api.numpy("tid", fill=-1)[launch]
    gaps = _longest_gaps(a_s, a_e, tid, np.flatnonzero(launch), top)
    gaps.sort(reverse=True)
    out["longest_launch_gaps"] = [
        {"gap_ns": g, "after_api_row": a, "before_api_row": b, "tid": t, "start": int(
            api.numpy("end")[a])} for g, a, b, t in gaps[:top]]
    return out


def _longest_gaps(st: np.ndarray, en: np.ndarray, tid: np.ndarray, rows: np.ndarray,
                  top: int) -> list[tuple[int, int, int, int]]:
    """Per thread, its ``top`` longest gaps between consecutive launches (in start
    order; of equal gaps the earliest): (gap, row before, row after, tid). One grouping
    of every launch by thread, not a mask and a sort per thread."""
    uniq, order, bounds, st = grouped(tid, st)
    gap = st[1:] - en[order[:-1]]               # across a thread boundary: not used
    out = []
    for i, t in enumerate(uniq.tolist()):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        if hi - lo < 2:
            continue
        g = gap[lo:hi - 1]
        j = _smallest(-g, top)
        a, b = rows[order[lo + j]].tolist(), rows[order[lo + j + 1]].tolist()
        out.extend(zip(g[j].tolist(), a, b, [int(t)] * len(j)))
    return out


def _smallest(v: np.ndarray, top: int) -> np.ndarray:
    """The positions of ``np.argsort(v, kind="stable")[:top]`` (in another order):
    the ``top`` smallest values, of equal ones the first."""
    if len(v) <= top or top <= 0:
        return np.arange(min(len(v), max(top, 0)))
    kth = np.partition(v, top - 1)[top - 1]
    less = np.flatnonzero(v < kth)
    return np.concatenate((less, np.flatnonzero(v == kth)[:top - len(less)]))
