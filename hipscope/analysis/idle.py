"""Why the GPU waits: idle-time breakdown per device (definitions in docs/analysis.md).

A device is *idle* when none of its kernels runs, between its first kernel start and
its last kernel end. Each idle gap ``[g0, g1)`` ends when kernel N starts; N was
launched by host call L (``api_index``). The gap is split, in this order:

* ``sync``: the part of ``[g0, submitted)`` (``submitted = L.end``, the moment N was
  queued) during which N's launching thread (its process, when the thread is
  unknown) was inside a blocking call: device / stream / event / context synchronize,
  a synchronous copy (``cudaMemcpy``, ``hipMemcpy`` without Async, or any copy call
  that returned only after its copy had finished, e.g. from pageable memory), or any
  API of a ``cuda_sync`` domain. Once N is queued, a sync call no longer delays it.
* ``host_wait``: the rest of ``[g0, submitted)``: the host had not launched N yet
  and was not blocked on the GPU (Python, CPU work, other API calls).
* ``launch_overhead``: the rest of ``[max(g0, submitted), g1)`` (N was queued, the
  GPU had not started it) when that piece is at most ``threshold_ns`` (default 30 µs,
  the scale of launch latency); longer, it is ``other`` (N waited for something
  else: an event, a copy, another stream).
* Kernels with no linked launch call: gap (less sync) <= threshold -> launch_overhead,
  else ``other``. Kernels of one graph launch are all queued when the graph launch
  returns, so gaps between graph nodes fall into launch_overhead / other.

Several devices are on one wall clock: :meth:`IdleBreakdown.total` counts the time
during which at least one device idled for a reason once (a union across devices),
never a sum of the devices' overlapping gaps, so no total exceeds the span. To place
a category's time on that clock, each gap is laid out in the order its parts happen:
sync (the host blocked until the GPU drained), host wait, then launch overhead or
other (after N was queued); :func:`category_pieces` gives those intervals.

Idle time inside a window of an incomplete graph replay (:mod:`.graphs`: the profiler
dropped the graph's kernels, so the GPU may have been busy) is none of these: it is
``unknown`` (``gap_unknown``), taken from the front of its gap (a window starts at its
graph launch call, before the next kernel was queued).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model import Trace
from ..model.api_names import is_sync_call, per_code  # noqa: F401 - is_sync_call re-exported
from ._groups import rows_by_key
from .graphs import graph_replay_gaps

DEFAULT_THRESHOLD_NS = 30_000
CATEGORIES = ("host_wait", "launch_overhead", "sync", "other")



@dataclass
class DeviceIdle:
    device: int
    window_ns: int
    busy_ns: int
    breakdown: dict[str, int]
    gap_start: np.ndarray = field(repr=False)     # int64
    gap_end: np.ndarray = field(repr=False)
    gap_category: np.ndarray = field(repr=False)  # index into CATEGORIES: dominant part
    gap_next_kernel: np.ndarray = field(repr=False)  # row in trace.kernels
    gap_parts: np.ndarray | None = field(default=None, repr=False)  # (4, gaps) ns per CATEGORY
    gap_pid: np.ndarray | None = field(default=None, repr=False)    # launching thread of N
    gap_tid: np.ndarray | None = field(default=None, repr=False)
    gap_unknown: np.ndarray | None = field(default=None, repr=False)  # incomplete graph replay

    @property
    def unknown_ns(self) -> int:
        return 0 if self.gap_unknown is None else int(self.gap_unknown.sum())

    @property
    def idle_ns(self) -> int:
        return sum(self.breakdown.values())


@dataclass
class IdleBreakdown:
    threshold_ns: int
    devices: dict[int, DeviceIdle]
    _total: dict[str, int] | None = field(default=None, repr=False, compare=False)

    def total(self) -> dict[str, int]:
        """Per category: wall-clock time during which at least one device idled for
        that reason (time several devices wait at once counts once). Computed once."""
        if self._total is None:
            self._total = {c: v for c, v in self._wall_lengths().items() if c in CATEGORIES}
        return dict(self._total)

    def _wall_lengths(self) -> dict[str, int]:
        """``wall((c,)).length`` for each category and ``wall().length`` (``"any"``):
        every gap's parts laid out by one running sum per device, empty pieces left out
        before the devices' pieces are merged."""
        edges = [_edges(d) for d in self.devices.values()]
        out = {}
        for k, c in enumerate((*_LAID, "any")):
            lo, hi = (k, k + 1) if k < len(_LAID) else (0, len(_LAID))
            out[c] = _union_length([(x[lo], x[hi]) for x in edges if x[hi] is not x[lo]])
        return out

    def wall(self, cats: tuple[str, ...] = CATEGORIES) -> Coverage:
        """The union over devices of the gap pieces of ``cats``, on the wall clock."""
        pieces = [category_pieces(d, cats) for d in self.devices.values()]
        if not pieces:
            return Coverage(np.zeros(0, np.int64), np.zeros(0, np.int64))
        return Coverage(np.concatenate([p[0] for p in pieces]),
                        np.concatenate([p[1] for p in pieces]))

    def to_json(self) -> dict:
        per = {str(d): dict(v.breakdown) for d, v in sorted(self.devices.items())}
        lengths = self._wall_lengths()
        if self._total is None:
            self._total = {c: lengths[c] for c in CATEGORIES}
        return {"threshold_ns": self.threshold_ns, "per_device": per, "total": self.total(),
                "any_idle_ns": lengths["any"],
                "unknown_incomplete_graph_replay_ns": self.unknown().length}

    def unknown(self) -> Coverage:
        """Idle time (any device) inside incomplete graph-replay windows, wall clock."""
        s = [d.gap_start for d in self.devices.values() if d.gap_unknown is not None]
        u = [d.gap_unknown for d in self.devices.values() if d.gap_unknown is not None]
        if not s:
            return Coverage(np.zeros(0, np.int64), np.zeros(0, np.int64))
        s0 = np.concatenate(s)
        return Coverage(s0, s0 + np.concatenate(u))


_LAID = ("sync", "host_wait", "launch_overhead", "other")     # the order parts happen


def _edges(di: DeviceIdle) -> list[np.ndarray]:
    """Where each gap's sync, host wait, launch overhead and other parts begin, and
    where the last ends (:func:`category_pieces` for every category); a part that no
    gap has repeats the array before it (the same object)."""
    n = len(di.gap_start)
    parts = di.gap_parts if di.gap_parts is not None else np.zeros((4, n), np.int64)
    out = [di.gap_start if di.gap_unknown is None else di.gap_start + di.gap_unknown]
    for c in _LAID:
        row = parts[CATEGORIES.index(c)]
        out.append(out[-1] + row if row.any() else out[-1])
    return out


def _union_length(runs: list[tuple[np.ndarray, np.ndarray]]) -> int:
    """``Coverage(concat(starts), concat(ends)).length`` for runs of sorted pieces (one
    per device), none ending before it starts: the i-th smallest start with the i-th
    smallest end covers the same time, and those intervals are sorted by both ends."""
    kept = []
    for s, e in runs:
        keep = e > s
        kept.append((s, e) if keep.all() else (s[keep], e[keep]))
    if not kept:
        return 0
    s, e = np.concatenate([r[0] for r in kept]), np.concatenate([r[1] for r in kept])
    if len(s) == 0:
        return 0
    if len(kept) > 1:              # fresh arrays (concatenate copies): sorted in place
        s.sort()
        e.sort()
    np.maximum(s[1:], e[:-1], out=s[1:])           # where each piece adds from
    np.subtract(e, s, out=s)
    return int(np.maximum(s, 0, out=s).sum())


def category_pieces(di: DeviceIdle, cats: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per gap of ``di``, the interval (possibly empty) holding its parts of ``cats``,
    the parts laid out in the order they happen: sync, host wait, launch overhead,
    other. ``cats`` must be a contiguous run of that order (one interval per gap)."""
    order = ("sync", "host_wait", "launch_overhead", "other")
    idx = sorted(order.index(c) for c in cats)
    if idx != list(range(idx[0], idx[-1] + 1)):
        raise ValueError(f"categories {cats} are not contiguous in {order}")
    parts = di.gap_parts if di.gap_parts is not None else np.zeros((4, len(di.gap_start)), np.int64)
    laid = parts[[CATEGORIES.index(c) for c in order]]
    before = laid[: idx[0]].sum(axis=0)
    length = laid[idx[0]: idx[-1] + 1].sum(axis=0)
    start = di.gap_start + before
    if di.gap_unknown is not None:
        start = start + di.gap_unknown
    return start, start + length


class Coverage:
    """Union of intervals with O(log n) 'covered length inside [a, b)' queries; ``s``
    and ``e`` are the merged, disjoint, sorted intervals. The one home of the wall-clock
    interval arithmetic the idle breakdown and the tuner's gains use."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray):
        starts = np.asarray(starts, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        keep = ends > starts
        starts, ends = starts[keep], ends[keep]
        if len(starts) == 0:
            self.s = self.e = self.before = np.zeros(0, dtype=np.int64)
            return
        if (starts[1:] < starts[:-1]).any():          # pieces of several devices
            order = np.argsort(starts, kind="stable")   # sorted runs, one per device
            starts, ends = starts[order], ends[order]
        cm = np.maximum.accumulate(ends)
        new = np.ones(len(starts), dtype=bool)
        new[1:] = starts[1:] > cm[:-1]
        first = np.flatnonzero(new)
        self.s = starts[first]
        self.e = cm[np.r_[first[1:] - 1, len(starts) - 1]]   # cm grows: a run's max is last
        lengths = self.e - self.s
        self.before = np.concatenate(([0], np.cumsum(lengths)[:-1]))

    def upto(self, t: np.ndarray) -> np.ndarray:
        """Covered length in (-inf, t)."""
        if len(self.s) == 0:
            return np.zeros(len(t), dtype=np.int64)
        i = np.searchsorted(self.s, t, side="right") - 1
        ic = np.maximum(i, 0)
        part = np.clip(t - self.s[ic], 0, self.e[ic] - self.s[ic])
        return np.where(i >= 0, self.before[ic] + part, 0)

    def within(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.upto(b) - self.upto(a)

    @property
    def length(self) -> int:
        return int((self.e - self.s).sum())

    def _contains(self, t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self.s, t, side="right") - 1
        return (i >= 0) & (t < self.e[np.maximum(i, 0)]) if len(self.s) else np.zeros(len(t), bool)

    def _combine(self, other: Coverage, keep_other: bool) -> Coverage:
        pts = np.unique(np.concatenate((self.s, self.e, other.s, other.e)))
        if len(pts) < 2:
            return Coverage(pts[:0], pts[:0])
        a, b = pts[:-1], pts[1:]
        mid = a + (b - a) // 2              # elementary segments are at least 1 ns long
        keep = self._contains(mid) & (other._contains(mid) == keep_other)
        return Coverage(a[keep], b[keep])

    def intersect(self, other: Coverage) -> Coverage:
        return self._combine(other, True)

    def minus(self, other: Coverage) -> Coverage:
        return self._combine(other, False)

    def clip(self, t0: int, t1: int) -> Coverage:
        return self.intersect(Coverage(np.array([t0]), np.array([t1])))




def _sync_coverage(trace: Trace) -> tuple[dict, Coverage]:
    """Sync-call coverage per (pid, tid), per pid, and overall."""
    api = trace.api
    if len(api) == 0:
        return {}, Coverage(np.zeros(0, np.int64), np.zeros(0, np.int64))
    codes, names = api.codes("name")
    dcodes, domains = api.codes("domain")
    sync_name = per_code(names, is_sync_call)
    sync_dom = np.array([d == "cuda_sync" for d in domains] + [False])
    m = sync_name[codes] | sync_dom[dcodes]
    m |= blocking_copy_calls(trace)
    s, e = api.numpy("start")[m], api.numpy("end")[m]
    pid = api.numpy("pid", fill=-1)[m].astype(np.int64)
    tid = api.numpy("tid", fill=-1)[m].astype(np.int64)
    per: dict = {}
    for key in set(zip(pid.tolist(), tid.tolist())):
        sel = (pid == key[0]) & (tid == key[1])
        per[key] = Coverage(s[sel], e[sel])
    for p in set(pid.tolist()):
        sel = pid == p
        per[(p, None)] = Coverage(s[sel], e[sel])
    return per, Coverage(s, e)


def blocking_copy_calls(trace: Trace) -> np.ndarray:
    """API rows that stayed inside the call for most (>= half) of the copy they issued:
    copies that were synchronous for the host whatever the call's name (e.g.
    cudaMemcpyAsync from pageable memory, whose last staged chunk may still land a few
    µs after the call returns)."""
    out = np.zeros(len(trace.api), dtype=bool)
    c = trace.copies
    if len(c) == 0 or not c.has("api_index"):
        return out
    ai = c.numpy("api_index", fill=-1).astype(np.int64)
    ok = ai >= 0
    a = ai[ok]
    cs, ce = c.numpy("start")[ok], c.numpy("end")[ok]
    overlap = (np.minimum(trace.api.numpy("end")[a], ce)
               - np.maximum(trace.api.numpy("start")[a], cs))
    blocking = (ce > cs) & (2 * overlap >= ce - cs)
    out[ai[ok][blocking]] = True
    return out


def _thread_coverage(per_thread: dict, overall: Coverage, pid: int, tid: int) -> Coverage:
    cov = per_thread.get((pid, tid)) if tid != -1 else None
    if cov is None:
        cov = per_thread.get((pid, None), overall) if pid != -1 else overall
    return cov


def _graph_windows(trace: Trace):
    """device -> Coverage of the incomplete graph-replay windows on that device; None
    when the trace has none."""
    s, e, dev = graph_replay_gaps(trace).windows()
    if len(s) == 0:
        return None
    return lambda d: Coverage(s[(dev == d) | (dev < 0)], e[(dev == d) | (dev < 0)])


def _pairs(pid: np.ndarray, tid: np.ndarray) -> list[tuple[int, int]]:
    """The distinct (pid, tid) pairs (without a Python tuple per gap)."""
    if len(pid) == 0:
        return []
    if int(tid.min()) >= 0 and int(tid.max()) < 1 << 32 and int(np.abs(pid).max()) < 1 << 30:
        u = np.unique((pid << 32) + tid)
        return [(int(k >> 32), int(k & 0xFFFFFFFF)) for k in u]
    u = np.unique(np.stack([pid, tid], axis=1), axis=0)
    return [(int(a), int(b)) for a, b in u]


def _take_unknown(parts: np.ndarray, unknown: np.ndarray) -> np.ndarray:
    """Remove ``unknown`` ns per gap from ``parts`` (in place), from the gap's front
    (sync, host wait, launch overhead, other); returns ``unknown``."""
    left = unknown.astype(np.int64)
    for i in (CATEGORIES.index(c) for c in ("sync", "host_wait", "launch_overhead", "other")):
        take = np.minimum(parts[i], left)
        parts[i] -= take
        left = left - take
    return unknown.astype(np.int64)


def _unlaunched(gap_len: np.ndarray, threshold_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """Parts and dominant part of gaps (all longer than 0) whose next kernels no host
    call launched: launch overhead up to the threshold, else other."""
    small = gap_len <= threshold_ns
    zero = np.zeros(len(gap_len), np.int64)
    launch = np.where(small, gap_len, 0)
    category = np.where(small, CATEGORIES.index("launch_overhead"),
                        CATEGORIES.index("other")).astype(np.int8)
    return np.stack([zero, launch, zero, gap_len - launch]), category


def _dominant(parts: np.ndarray) -> np.ndarray:
    """``np.argmax(parts, axis=0)`` as int8 (of equal parts the first): row by row
    (argmax down the short axis of a (4, gaps) array walks it column by column)."""
    best = parts[0].copy()
    out = np.zeros(parts.shape[1], np.int8)
    for i in range(1, len(parts)):
        more = parts[i] > best
        out[more] = i
        np.maximum(best, parts[i], out=best)
    return out


def idle_breakdown(trace: Trace, threshold_ns: int = DEFAULT_THRESHOLD_NS,
                   device_rows: dict[int, np.ndarray] | None = None,
                   spans: dict[int, tuple[np.ndarray, np.ndarray]] | None = None
                   ) -> IdleBreakdown:
    """Per device, its idle gaps and their parts. ``device_rows``: each device's kernel
    rows in (stable) start order when already known, ``spans`` their starts and ends
    (the analysis service's)."""
    k = trace.kernels
    out: dict[int, DeviceIdle] = {}
    if len(k) == 0:
        return IdleBreakdown(threshold_ns, out)
    ctx = _IdleInputs(trace, threshold_ns)
    if device_rows is None:
        device_rows, spans = rows_by_key(k.numpy("device"), k.numpy("start")), None
    starts, ends = k.numpy("start"), k.numpy("end")
    for d, rows in device_rows.items():
        s, e = spans[d] if spans is not None else (starts[rows], ends[rows])
        out[int(d)] = ctx.device(int(d), rows, s, e)
    return IdleBreakdown(threshold_ns, out)


class _IdleInputs:
    """What every device's gaps look up: the launch calls (ends, threads), the kernels'
    own threads, the sync-call coverage and the incomplete graph-replay windows. Columns
    stay in their stored types; only the values at gaps are widened to int64."""

    def __init__(self, trace: Trace, threshold_ns: int):
        k, api = trace.kernels, trace.api
        self.threshold_ns = threshold_ns
        self.per_thread, self.overall = _sync_coverage(trace)
        self.unknown_cov = _graph_windows(trace)
        self.api_idx = k.numpy("api_index", fill=-1)
        self.k_pid, self.k_tid = k.numpy("pid", fill=-1), k.numpy("tid", fill=-1)
        self.has_api = len(api) > 0
        if self.has_api:
            self.api_end = api.numpy("end")
            self.api_pid, self.api_tid = api.numpy("pid", fill=-1), api.numpy("tid", fill=-1)

    def _threads(self, nxt: np.ndarray, linked: np.ndarray, aic: np.ndarray):
        """Launching thread of each next kernel: the API call's, else the kernel's own."""
        if linked.all():
            return self.api_pid[aic].astype(np.int64), self.api_tid[aic].astype(np.int64)
        k_pid, k_tid = self.k_pid[nxt].astype(np.int64), self.k_tid[nxt].astype(np.int64)
        return (np.where(linked, self.api_pid[aic].astype(np.int64), k_pid),
                np.where(linked, self.api_tid[aic].astype(np.int64), k_tid))

    def _parts(self, g0, g1, linked, aic, pid, tid) -> np.ndarray:
        """(4, gaps) ns per CATEGORY of gaps whose next kernels were (``linked``) launched
        by the calls ``aic`` from threads ``pid``/``tid``."""
        gap_len = g1 - g0
        sub_c = np.clip(np.where(linked, self.api_end[aic], g0), g0, g1)
        # Blocked time only matters before N was queued: once queued, the host's
        # being in a sync call does not keep the GPU from starting N.
        until = np.where(linked, sub_c, g1)
        sync = np.zeros(len(g0), dtype=np.int64)
        if self.per_thread or self.overall.length:       # no sync calls: nothing to look up
            for key in _pairs(pid, tid):
                sel = (pid == key[0]) & (tid == key[1])
                sync[sel] = _thread_coverage(self.per_thread, self.overall, *key).within(
                    g0[sel], until[sel])
        host_wait = np.where(linked, sub_c - g0 - sync, 0)
        rest = gap_len - sync - host_wait
        small = np.where(linked, g1 - sub_c, gap_len - sync) <= self.threshold_ns
        launch = np.where(small, rest, 0)
        return np.stack([host_wait, launch, sync, rest - launch]).astype(np.int64, copy=False)

    def device(self, d: int, rows: np.ndarray, s: np.ndarray, e: np.ndarray) -> DeviceIdle:
        """The gaps of one device (``rows``, starts ``s`` and ends ``e`` in start order)."""
        cm = np.maximum.accumulate(e)
        gi = np.flatnonzero(s[1:] > cm[:-1]) + 1          # kernel that ends each gap
        g0, g1 = cm[gi - 1], s[gi]
        nxt = rows[gi]
        window = int(cm[-1] - s[0])
        gap_len = g1 - g0
        category = None
        if self.has_api:
            ai = self.api_idx[nxt].astype(np.int64)
            linked = ai >= 0
            aic = np.maximum(ai, 0)
            pid, tid = self._threads(nxt, linked, aic)
            parts = self._parts(g0, g1, linked, aic, pid, tid)
        else:                     # no host calls: nothing queued late, nothing blocked
            pid, tid = self.k_pid[nxt].astype(np.int64), self.k_tid[nxt].astype(np.int64)
            parts, category = _unlaunched(gap_len, self.threshold_ns)
        if self.unknown_cov is None:
            unknown = np.zeros(len(gi), np.int64)
        else:
            unknown = _take_unknown(parts, self.unknown_cov(d).within(g0, g1))
            category = None
        return DeviceIdle(
            device=d, window_ns=window, busy_ns=window - int(gap_len.sum()),
            breakdown={c: int(parts[i].sum()) for i, c in enumerate(CATEGORIES)},
            gap_start=g0, gap_end=g1,
            gap_category=_dominant(parts) if category is None else category,
            gap_next_kernel=nxt, gap_parts=parts, gap_pid=pid, gap_tid=tid,
            gap_unknown=unknown,
        )
