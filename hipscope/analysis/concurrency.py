"""Concurrency and launch statistics (definitions in docs/analysis.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import Trace
from ..model.api_names import LAUNCH_RE, is_launch, per_code  # noqa: F401 - LAUNCH_RE re-exported
from ._groups import dense_codes, group_order, grouped, rows_by_key
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
                device_rows: dict[int, np.ndarray] | None = None,
                spans: dict[int, tuple[np.ndarray, np.ndarray]] | None = None) -> dict:
    """Per device: busy time, time with 2+ kernels running, and stream pairs that
    never overlap although their work interleaves in time. ``busy_ns``: the per-device
    busy time when already known (the analysis service's unions); ``device_rows``: each
    device's kernel rows in start order, ``spans`` their starts and ends (the service's:
    then nothing here sorts)."""
    k = trace.kernels
    out: dict = {"per_device": {}, "serialized_stream_pairs": []}
    if len(k) == 0:
        return out
    s, e = k.numpy("start"), k.numpy("end")
    if device_rows is None:
        device_rows, spans = rows_by_key(k.numpy("device"), s), None
    stream = k.numpy("stream", fill=-1).astype(np.int64)
    queue = k.numpy("queue", fill=-1).astype(np.int64)
    for d, r in device_rows.items():        # one take per column, not a mask each use
        sd, ed = spans[d] if spans is not None else (s[r], e[r])
        ids, code = dense_codes(stream[r])
        busy = busy_ns[int(d)] if busy_ns is not None else union_length(sd, ed)
        two = _two_plus(sd, np.sort(np.maximum(ed, sd)))   # = time_at_least(sd, ed, 2)
        out["per_device"][str(int(d))] = {
            "busy_ns": busy, "concurrent_ns": two,
            "concurrent_fraction_of_busy": (two / busy) if busy else 0.0,
            "streams": int(np.count_nonzero(ids >= 0)),
        }
        for pair in _serialized_pairs(int(d), sd, ed, queue[r], ids, code):
            out["serialized_stream_pairs"].append(pair.__dict__)
    return out


def _serialized_pairs(device: int, s: np.ndarray, e: np.ndarray, queue: np.ndarray,
                      ids: np.ndarray, code: np.ndarray, min_switches: int = 4
                      ) -> list[StreamPair]:
    """Stream pairs of one device (kernels in start order; ``code``: each kernel's
    index in the distinct streams ``ids``) that never run at once (the time with 2+ of
    the pair's kernels is the sum of each stream's own) but switch at least
    ``min_switches`` times. Each stream's starts and ends are sorted once; a pair's
    are a merge of two sorted runs (:func:`_two_plus`)."""
    keep = [i for i, x in enumerate(ids.tolist()) if x >= 0]
    if len(keep) < 2 or len(keep) > 64:
        return []
    order, bounds = group_order(code, len(ids))     # each stream's rows, in start order
    per = {}
    for i in keep:
        r = order[bounds[i]:bounds[i + 1]]
        ends = np.sort(np.maximum(e[r], s[r]))       # an end before its start: empty
        per[i] = (r, s[r], ends, _two_plus(s[r], ends))
    out = []
    for x, i in enumerate(keep):
        for j in keep[x + 1:]:
            (ra, sa, *a), (rb, sb, *b) = per[i], per[j]
            if _run_at_once((sa, *a), (sb, *b)):
                continue
            switches = _switches(sa, sb)
            if switches < min_switches:
                continue
            qa, qb = set(queue[ra].tolist()) - {-1}, set(queue[rb].tolist()) - {-1}
            shared = (bool(qa & qb) if qa and qb else None)
            out.append(StreamPair(device, int(ids[i]), int(ids[j]), switches, shared))
    return out


_PREFIX = 4096      # kernels per stream that usually show two streams running at once


def _run_at_once(a: tuple, b: tuple) -> bool:
    """Whether two streams (each: sorted starts, sorted ends, its own 2+ time) run
    kernels at once: the 2+ time of both exceeds the sum of their own. That excess is
    the time each runs one kernel less the time each runs 2+; so when the kernels
    before a cut (ends past it end there) show more of it than either stream's own 2+
    time after the cut, it holds, whatever comes after."""
    for cut in _cuts(a, b):
        pa, pb = _before(*a[:2], cut), _before(*b[:2], cut)
        own_a, own_b = _two_plus(*pa), _two_plus(*pb)
        if _merged_two_plus(pa, pb) - own_a - own_b > min(a[2] - own_a, b[2] - own_b):
            return True
    return _merged_two_plus(a[:2], b[:2]) > a[2] + b[2]


def _cuts(a: tuple, b: tuple) -> list[int]:
    """Where to look first: after each stream's first ``_PREFIX`` kernels (enough when
    a stream never runs two at once: the excess then only grows); when both do, also
    half-way (the first look rarely settles it then)."""
    big = [x[0] for x in (a, b) if len(x[0]) > _PREFIX]
    if not big:
        return []
    cuts = [min(int(x[_PREFIX]) for x in big)]
    if a[2] and b[2] and all(len(x[0]) > 4 * _PREFIX for x in (a, b)):
        cuts.append(min(int(x[0][len(x[0]) // 2]) for x in (a, b)))
    return cuts


def _before(starts: np.ndarray, ends: np.ndarray, cut: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted starts and ends of the intervals starting before ``cut``, ending there at
    the latest (an end before ``cut`` belongs to one of them: ends are not before
    their start)."""
    n = int(np.searchsorted(starts, cut, side="left"))
    m = int(np.searchsorted(ends, cut, side="left"))
    return starts[:n], np.concatenate((ends[:m], np.full(n - m, cut, ends.dtype)))


def _merged_two_plus(a: tuple, b: tuple) -> int:
    """2+ time of two sets of intervals, each given as sorted starts and sorted ends."""
    return _two_plus(np.sort(np.concatenate((a[0], b[0])), kind="stable"),
                     np.sort(np.concatenate((a[1], b[1])), kind="stable"))


def _two_plus(starts: np.ndarray, ends: np.ndarray) -> int:
    """Time under 2+ intervals from their starts and (not before their start) ends,
    each sorted on its own. Pairing the i-th start with the i-th end gives intervals
    of the same coverage, sorted by both ends, under which t is under 2+ iff
    S[j] <= t < E[j-1]: the union of those pieces, whose ends are in order."""
    if len(starts) < 2:
        return 0
    reach = ends[:-1].astype(np.int64, copy=False)   # E[j-1], j = 1..n-1
    lo = starts[1:].astype(np.int64)                 # a copy: worked in place
    np.maximum(lo[1:], reach[:-1], out=lo[1:])      # from where piece j adds: E[j-2]
    np.subtract(reach, lo, out=lo)
    return int(np.maximum(lo, 0, out=lo).sum())


def _switches(sa: np.ndarray, sb: np.ndarray) -> int:
    """How often the start order of two streams' kernels (sorted starts; at equal
    starts ``a``'s first) switches between them: from the runs of ``b``."""
    c = np.searchsorted(sa, sb, side="right")       # a's kernels before each of b's
    runs = 1 + int(np.count_nonzero(c[1:] != c[:-1]))
    return 2 * runs - 2 + int(c[0] > 0) + int(c[-1] < len(sa))


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
    every = bool(launch.all())                # every call a launch: no masks
    cols = [api.numpy("start"), api.numpy("end"), api.numpy("tid", fill=-1)]
    a_s, a_e, tid = cols if every else [c[launch] for c in cols]
    overhead = float(np.median(a_e - a_s))
    out["launch_overhead_ns"] = int(round(overhead))
    out["kernels_shorter_than_launch_fraction"] = float(np.mean((e - s) < overhead))
    rows = np.arange(len(api)) if every else np.flatnonzero(launch)
    gaps = _longest_gaps(a_s, a_e, tid, rows, top)
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
