"""Concurrency and launch statistics (definitions in docs/analysis.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import Trace
from ..model.api_names import LAUNCH_RE, is_launch, per_code  # noqa: F401 - LAUNCH_RE re-exported
from .stats import union_length


def time_at_least(starts: np.ndarray, ends: np.ndarray, k: int = 2) -> int:
    """Total time during which at least ``k`` of the intervals run at once."""
    if len(starts) < k:
        return 0
    starts, ends = starts.astype(np.int64, copy=False), ends.astype(np.int64, copy=False)
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


def concurrency(trace: Trace, busy_ns: dict[int, int] | None = None) -> dict:
    """Per device: busy time, time with 2+ kernels running, and stream pairs that
    never overlap although their work interleaves in time. ``busy_ns``: the per-device
    busy time when already known (the analysis service's unions)."""
    k = trace.kernels
    out: dict = {"per_device": {}, "serialized_stream_pairs": []}
    if len(k) == 0:
        return out
    dev = k.numpy("device")
    s, e = k.numpy("start"), k.numpy("end")
    stream = k.numpy("stream", fill=-1).astype(np.int64)
    queue = k.numpy("queue", fill=-1).astype(np.int64)
    for d in np.unique(dev):
        r = np.flatnonzero(dev == d)        # one take per column, not a mask each use
        sd, ed, st = s[r], e[r], stream[r]
        busy = busy_ns[int(d)] if busy_ns is not None else union_length(sd, ed)
        two = time_at_least(sd, ed, 2)
        out["per_device"][str(int(d))] = {
            "busy_ns": busy, "concurrent_ns": two,
            "concurrent_fraction_of_busy": (two / busy) if busy else 0.0,
            "streams": int(len(np.unique(st[st >= 0]))),
        }
        for pair in _serialized_pairs(int(d), sd, ed, st, queue[r]):
            out["serialized_stream_pairs"].append(pair.__dict__)
    return out


def _serialized_pairs(device, s, e, stream, queue, min_switches: int = 4) -> list[StreamPair]:
    ids = [x for x in np.unique(stream) if x >= 0]
    if len(ids) < 2 or len(ids) > 64:
        return []
    out = []
    rows = {a: np.flatnonzero(stream == a) for a in ids}
    own = {a: time_at_least(s[r], e[r], 2) for a, r in rows.items()}   # within one stream
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            ma, mb = rows[a], rows[b]
            sa, ea, sb, eb = s[ma], e[ma], s[mb], e[mb]
            if time_at_least(np.concatenate((sa, sb)), np.concatenate((ea, eb)), 2) > (
                    own[a] + own[b]):
                continue                   # they do overlap somewhere
            both = np.concatenate((sa, sb))
            who = np.concatenate((np.zeros(len(sa), np.int8), np.ones(len(sb), np.int8)))
            who = who[np.argsort(both, kind="stable")]
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
    rows = np.flatnonzero(launch)
    gaps = []
    for t in np.unique(tid):
        m = tid == t
        order = np.argsort(a_s[m], kind="stable")
        st, en, r = a_s[m][order], a_e[m][order], rows[m][order]
        if len(st) < 2:
            continue
        g = st[1:] - en[:-1]
        best = np.argsort(-g, kind="stable")[:top]
        gaps.extend((int(g[i]), int(r[i]), int(r[i + 1]), int(t)) for i in best)
    gaps.sort(reverse=True)
    out["longest_launch_gaps"] = [
        {"gap_ns": g, "after_api_row": a, "before_api_row": b, "tid": t, "start": int(
            api.numpy("end")[a])} for g, a, b, t in gaps[:top]]
    return out
