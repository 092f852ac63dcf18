"""Level of detail for the timeline (Qt-free, numpy only).

The timeline shows rows of events: GPU -> hardware queue -> stream (or GPU -> stream),
copies per GPU, host process -> thread (annotations by depth, API calls), counter
tracks. :func:`build_model` sorts each row once (at data change); every frame then
only asks cheap questions of the sorted arrays:

- :func:`window` -- which events overlap ``[t0, t1)``: two ``searchsorted`` calls;
  overlapping (nested, concurrent) events are found through the row's *union*
  intervals (the busy interval holding ``t0`` bounds how far back they start).
- :func:`coverage` -- the busy fraction of each pixel column, exact at any zoom, from
  the cumulative busy time of the union intervals: ``O(pixels * log n)``.
- :func:`pixel_keys` -- a colour key per pixel column (the longest event starting in
  it), from the events when few are visible, else from a per-row binned pyramid.
- :func:`wide_events` -- events at least a few pixels wide (drawn exactly, labelled),
  found via per-block maximum durations without scanning every visible event.

Plus hit testing, ruler statistics, find (in time order) and colour keys. Colours
themselves are the view's business: here a colour *key* is a small integer.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field

import numpy as np

from ..model import Trace
from ..model.intervals import nesting_depth, union_length
from ..model.names import match_mask
from ..model.progress import Cancelled

BLOCK = 64                    # events per block for the max-duration index
MAX_BINS = 1 << 16            # colour bins per row (upper bound)
BINS_PER_PX = 8               # interpolate coverage from the bins above this
DIRECT_PER_PX = 4             # above this many visible events per pixel, use the bins
NO_KEY = 0xFFFF               # colour key meaning "unknown" (drawn neutral)
EVENT_TABLES = ("kernels", "api", "copies", "markers")
_I64 = np.int64


# --------------------------------------------------------------------------- events
@dataclass(eq=False)
class Events:
    """Events of one row, sorted by start, with the indexes every frame uses."""

    start: np.ndarray              # int64, sorted
    end: np.ndarray                # int64, >= start
    index: np.ndarray              # int32: row in the source table
    ustart: np.ndarray             # union (busy) intervals: starts (alias of start
                                   #   when no two events overlap)
    ucum: np.ndarray               # int64 (n_union + 1): busy time before each union
                                   #   interval; interval i ends at
                                   #   ustart[i] + ucum[i + 1] - ucum[i]
    blockmax: np.ndarray           # int64: max duration per BLOCK events
    maxdur: int
    value: np.ndarray | None = None        # counter tracks: value per event
    keys: np.ndarray | None = None         # uint16 colour key per event
    bins: np.ndarray | None = None         # int64 encoded (duration, key) per bin
    bin_busy: np.ndarray | None = None     # int64 busy time before each bin edge
    bin_t0: int = 0
    bin_span: int = 1

    def __len__(self) -> int:
        return len(self.start)

    @classmethod
    def build(cls, start: np.ndarray, end: np.ndarray, index: np.ndarray,
              value: np.ndarray | None = None) -> Events:
        """``start``/``end``/``index`` must already be sorted by start."""
        start = np.ascontiguousarray(start, dtype=_I64)
        end = np.maximum(np.ascontiguousarray(end, dtype=_I64), start)
        ustart, _, ucum = union_intervals(start, end)
        dur = end - start
        n = len(dur)
        nb = -(-n // BLOCK)
        pad = np.zeros(nb * BLOCK, dtype=_I64)
        pad[:n] = dur
        blockmax = pad.reshape(nb, BLOCK).max(axis=1) if nb else np.zeros(0, _I64)
        return cls(start, end, np.ascontiguousarray(index, dtype=np.int32), ustart,
                   ucum, blockmax, int(dur.max()) if n else 0, value)

    def buffers(self) -> list[np.ndarray]:
        return [a for a in (self.start, self.end, self.index, self.ustart, self.ucum,
                            self.blockmax, self.value, self.keys, self.bins, self.bin_busy)
                if a is not None]

    def uend(self, i):
        """End of union interval(s) ``i``."""
        return self.ustart[i] + (self.ucum[np.add(i, 1)] - self.ucum[i])


def union_intervals(start: np.ndarray, end: np.ndarray):
    """Disjoint busy intervals of events sorted by start: (ustart, uend, ucum) where
    ``ucum[i]`` is the busy time before interval ``i`` (``n_union + 1`` values).
    Without overlaps the union is the events themselves (no copy)."""
    n = len(start)
    if n == 0:
        return start, end, np.zeros(1, _I64)
    run = np.maximum.accumulate(end)
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.greater_equal(start[1:], run[:-1], out=new[1:])
    if new.all():
        ustart, uend = start, end
    else:
        first = np.flatnonzero(new)
        ustart = start[first]
        uend = run[np.r_[first[1:] - 1, n - 1]]
    ucum = np.empty(len(ustart) + 1, dtype=_I64)
    ucum[0] = 0
    np.cumsum(uend - ustart, out=ucum[1:])
    return ustart, uend, ucum


def busy_until(ev: Events, t: np.ndarray) -> np.ndarray:
    """Busy time (union of events) before each time in ``t`` (sorted int64 array)."""
    if len(ev.ustart) == 0:
        return np.zeros(len(t), dtype=_I64)
    # search only the union intervals between the first and last key (cache-resident)
    a = max(int(np.searchsorted(ev.ustart, t[0], side="right")) - 1, 0)
    b = int(np.searchsorted(ev.ustart, t[-1], side="right"))
    i = np.searchsorted(ev.ustart[a:b], t, side="right") + (a - 1)
    ic = np.maximum(i, 0)
    c0 = ev.ucum[ic]
    b = c0 + np.minimum(np.maximum(t - ev.ustart[ic], 0), ev.ucum[ic + 1] - c0)
    b[i < 0] = 0
    return b


def window(ev: Events, t0: int, t1: int) -> tuple[int, int]:
    """Positions ``[lo, hi)`` of the events that may overlap ``[t0, t1)``.

    Every overlapping event is inside; a few nested ones that end before ``t0`` may
    be too (they are clipped when drawn)."""
    if len(ev) == 0:
        return 0, 0
    t0, t1 = _I64(t0), _I64(t1)
    lb = t0 - _I64(ev.maxdur)
    i = int(np.searchsorted(ev.ustart, t0, side="right")) - 1
    if i >= 0 and ev.uend(i) > t0:
        lb = max(lb, ev.ustart[i])
    else:
        lb = t0
    lo = int(np.searchsorted(ev.start, lb, side="left"))
    hi = int(np.searchsorted(ev.start, t1, side="left"))
    return lo, max(lo, hi)


def pixel_edges(t0: int, t1: int, width: int) -> np.ndarray:
    """``width + 1`` int64 pixel-column edges spanning ``[t0, t1]``."""
    span = int(t1) - int(t0)
    return _I64(t0) + (np.arange(width + 1, dtype=_I64) * span) // max(width, 1)


def coverage(ev: Events, edges: np.ndarray, widths: np.ndarray | None = None) -> np.ndarray:
    """Busy fraction (0..1) of each pixel column.

    Exact (union intervals) when zoomed in; when a pixel spans many bins of the
    row's pyramid, the busy time inside the window is interpolated from the bins'
    cumulative busy time (exact at bin edges and at the window's ends, so the
    columns still sum to the busy time of the window)."""
    w = len(edges) - 1
    nb = len(ev.bin_busy) - 1 if ev.bin_busy is not None else 0
    span = int(edges[-1] - edges[0])
    if nb <= 0 or span * nb < BINS_PER_PX * w * ev.bin_span:
        b = busy_until(ev, edges)
    else:
        x = (edges - ev.bin_t0) * (nb / ev.bin_span)
        np.minimum(np.maximum(x, 0, out=x), nb, out=x)
        i = np.minimum(x.astype(np.intp), nb - 1)
        c0 = ev.bin_busy[i]
        b = c0 + (x - i) * (ev.bin_busy[i + 1] - c0)
        b[[0, -1]] = busy_until(ev, edges[[0, -1]])
    if widths is None:
        widths = np.maximum(np.diff(edges), 1)
    return np.diff(b) / widths


def pixel_keys(ev: Events, lo: int, hi: int, edges: np.ndarray,
               cov: np.ndarray | None = None) -> np.ndarray:
    """Colour key per pixel column (-1: none): the longest event starting in it,
    carried forward over columns that an earlier event still covers."""
    w = len(edges) - 1
    out = np.full(w, -1, dtype=np.int64)
    if hi <= lo or w <= 0:
        return out
    if hi - lo <= DIRECT_PER_PX * w or ev.bins is None:
        s = ev.start[lo:hi]
        keys = ev.keys[lo:hi] if ev.keys is not None else np.zeros(hi - lo, np.uint16)
        enc = ((ev.end[lo:hi] - s + 1) << 16) | keys
        px = _pixel_of(s, edges)
        counts = np.bincount(px, minlength=w)
        bounds = np.cumsum(counts) - counts
        nonempty = counts > 0
        red = np.maximum.reduceat(enc, np.minimum(bounds, hi - lo - 1))
    else:
        nb = len(ev.bins)
        bj = ((edges - ev.bin_t0) * nb) // ev.bin_span
        np.minimum(np.maximum(bj, 0, out=bj), nb, out=bj)
        red = np.maximum.reduceat(ev.bins, np.minimum(bj[:-1], nb - 1))
        nonempty = (edges[1:] > ev.bin_t0) & (edges[:-1] < ev.bin_t0 + ev.bin_span)
    red = np.where(nonempty & (red > 0), red & 0xFFFF, -1)
    if cov is not None:   # carry keys over columns covered by a long earlier event
        have = red >= 0
        src = np.maximum.accumulate(np.where(have, np.arange(w), -1))
        carry = (~have) & (cov > 0) & (src >= 0)
        red[carry] = red[src[carry]]
    out[:] = red
    return out


def _pixel_of(t: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Pixel column of each time (clipped to the window), by arithmetic."""
    w = len(edges) - 1
    span = max(int(edges[-1] - edges[0]), 1)
    px = ((t - edges[0]) * w) // span
    return np.minimum(np.maximum(px, 0, out=px), w - 1, out=px)


def wide_events(ev: Events, lo: int, hi: int, min_dur: float) -> np.ndarray:
    """Positions (sorted) in ``[lo, hi)`` of events lasting at least ``min_dur`` ns."""
    if hi <= lo:
        return np.zeros(0, dtype=np.int64)
    dmin = _I64(int(np.ceil(min_dur)))
    if hi - lo <= 4 * BLOCK * 16:
        pos = np.arange(lo, hi)
    else:
        b0, b1 = lo // BLOCK, (hi - 1) // BLOCK + 1
        blocks = np.flatnonzero(ev.blockmax[b0:b1] >= dmin) + b0
        pos = (blocks[:, None] * BLOCK + np.arange(BLOCK)).ravel()
        pos = pos[(pos >= lo) & (pos < hi)]
    return pos[(ev.end[pos] - ev.start[pos]) >= dmin]


def hit_test(ev: Events, t: int, tol: int) -> int:
    """Position of the event under time ``t`` (innermost/shortest containing it, else
    the nearest within ``tol`` ns); -1 when none."""
    lo, hi = window(ev, int(t) - int(tol), int(t) + int(tol) + 1)
    if hi <= lo:
        return -1
    s, e = ev.start[lo:hi], ev.end[lo:hi]
    t = _I64(t)
    inside = (s <= t) & (e > t)
    if inside.any():
        cand = np.flatnonzero(inside)
        return int(lo + cand[np.argmin((e - s)[cand])])
    dist = np.maximum(s - t, t - e)
    j = int(np.argmin(dist))
    return lo + j if dist[j] <= tol else -1


# --------------------------------------------------------------------------- rows
@dataclass(eq=False)
class Row:
    """One row of the timeline: a group header or a track of events."""

    key: str                    # stable id (survives re-grouping, keeps collapse state)
    label: str
    level: int                  # indentation depth in the tree
    kind: str                   # "group" | "track" | "counter"
    table: str | None = None    # source table of a track's events
    events: Events | None = None
    parent: int = -1
    children: list[int] = field(default_factory=list)
    device: int | None = None
    collapsed_default: bool = False   # groups that start folded (deep Python stacks)


@dataclass(eq=False)
class TimelineModel:
    """Everything the timeline draws, prepared once per (trace, grouping)."""

    rows: list[Row]
    t_min: int
    t_max: int
    names: dict[str, list[str]]           # table -> category strings
    codes: dict[str, np.ndarray]          # table -> name code per event
    track_of: dict[str, np.ndarray]       # table -> row index per event (-1: none)
    n_kernels: int
    grouping: str = "queue"
    labels: dict[str, list[str]] = field(default_factory=dict)   # short names

    def nbytes(self) -> int:
        """Bytes held by the render caches (shared buffers counted once)."""
        seen: dict[int, int] = {}
        for r in self.rows:
            if r.events is not None:
                for a in r.events.buffers():
                    seen[id(a)] = a.nbytes
        return sum(seen.values()) + sum(a.nbytes for a in self.track_of.values())

    def tracks(self) -> list[int]:
        return [i for i, r in enumerate(self.rows) if r.events is not None]


def _col(table, name: str, fill: int = -1) -> np.ndarray:
    if len(table) == 0 or not table.has(name):
        return np.full(len(table), fill, dtype=_I64)
    return table.numpy(name, fill=fill).astype(_I64, copy=False)


def _partition(keys: np.ndarray, start: np.ndarray):
    """Order sorting by (key, start) and the ``(key, lo, hi)`` runs of that order."""
    order = np.argsort(start, kind="stable")
    order = order[np.argsort(keys[order], kind="stable")]
    ks = keys[order]
    cuts = np.flatnonzero(ks[1:] != ks[:-1]) + 1
    los = np.r_[0, cuts] if len(ks) else np.zeros(0, np.int64)
    his = np.r_[cuts, len(ks)] if len(ks) else np.zeros(0, np.int64)
    return order, [(int(ks[lo]), int(lo), int(hi)) for lo, hi in zip(los, his)]


class _Builder:
    def __init__(self, trace: Trace, grouping: str, cancelled=None):
        self.trace, self.grouping = trace, grouping
        self.rows: list[Row] = []
        self.track_of: dict[str, np.ndarray] = {}
        self.cancelled = cancelled or (lambda: False)

    def add(self, row: Row, parent: int = -1) -> int:
        row.parent = parent
        if parent >= 0:
            row.level = self.rows[parent].level + 1
            self.rows[parent].children.append(len(self.rows))
        self.rows.append(row)
        return len(self.rows) - 1

    def track(self, key, label, table, order, lo, hi, parent, start, end, device=None):
        if self.cancelled():
            raise Cancelled()
        idx = order[lo:hi]
        ev = Events.build(start[idx], end[idx], idx)
        r = self.add(Row(key, label, 0, "track", table, ev, device=device), parent)
        self.track_of[table][idx] = r
        return r


def build_model(trace: Trace, grouping: str = "queue", cancelled=None) -> TimelineModel:
    """Rows of a trace for the timeline (run in a worker for big traces)."""
    b = _Builder(trace, grouping, cancelled)
    for t in EVENT_TABLES:
        b.track_of[t] = np.full(len(getattr(trace, t)), -1, dtype=np.int16)
    _gpu_rows(b)
    _host_rows(b)
    _counter_rows(b)
    _sample_rows(b)
    tr = trace.time_range() or (0, 1)
    names, codes = {}, {}
    for t in EVENT_TABLES:
        tab = getattr(trace, t)
        col = "direction" if t == "copies" and not tab.has("name") else "name"
        codes[t], names[t] = tab.codes(col) if len(tab) else (np.zeros(0, np.int32), [])
    labels = {t: [short_name(n or "") for n in names[t]] for t in EVENT_TABLES}
    return TimelineModel(b.rows, int(tr[0]), int(tr[1]), names, codes, b.track_of,
                         len(trace.kernels), grouping, labels)


def _stream_queue_map(trace: Trace) -> dict[tuple[int, int], set[int]]:
    """(device, queue) -> streams that used it, from trace.streams and kernel pairs."""
    out: dict[tuple[int, int], set[int]] = {}
    s = trace.streams
    if len(s) and s.has("queue"):
        dev, q, st = _col(s, "device"), _col(s, "queue"), _col(s, "stream")
        for d, qq, ss in zip(dev.tolist(), q.tolist(), st.tolist()):
            if qq >= 0:
                out.setdefault((d, qq), set()).add(ss)
    return out


def _dense(ids: np.ndarray) -> np.ndarray:
    """Ids that fit the 24-bit fields of a row key (huge handles are ranked)."""
    if len(ids) == 0 or ids.max() < (1 << 24) - 2:
        return ids
    u, inv = np.unique(ids, return_inverse=True)
    return np.where(ids < 0, -1, inv).astype(_I64)


def _gpu_rows(b: _Builder) -> None:
    tr = b.trace
    k, c = tr.kernels, tr.copies
    kdev, cdev = _col(k, "device"), _col(c, "device")
    devices = sorted(set(np.unique(kdev).tolist()) | set(np.unique(cdev).tolist()))
    kstart, kend = _col(k, "start", 0), _col(k, "end", 0)
    queue, stream = _col(k, "queue"), _col(k, "stream")
    by_queue = b.grouping == "queue" and k.has("queue")
    # key = device(16) | queue(24) | stream(24), each shifted +1 so -1 (null) -> 0
    qk = _dense(queue) if by_queue else np.full(len(k), -1, _I64)
    stream = _dense(stream)
    key = ((kdev + 1) << 48) | ((qk + 1) << 24) | (stream + 1)
    order, runs = _partition(key, kstart)
    corder, cruns = _partition(cdev, _col(c, "start", 0))
    cstart, cend = _col(c, "start", 0), _col(c, "end", 0)
    shared = _stream_queue_map(tr)
    for kk, lo, hi in runs:   # which streams share each queue, from the kernels too
        d, q, s = (kk >> 48) - 1, ((kk >> 24) & 0xFFFFFF) - 1, (kk & 0xFFFFFF) - 1
        if q >= 0 and s >= 0:
            shared.setdefault((d, q), set()).add(s)
    for d in devices:
        label = tr.device_name(d) if d >= 0 else "GPU (unknown)"
        g = b.add(Row(f"gpu/{d}", f"GPU {d} · {label}" if d >= 0 else label, 0, "group",
                      device=d))
        queue_rows: dict[int, int] = {}
        for kk, lo, hi in runs:
            if (kk >> 48) - 1 != d:
                continue
            q, s = ((kk >> 24) & 0xFFFFFF) - 1, (kk & 0xFFFFFF) - 1
            parent = g
            if by_queue and q >= 0:
                if q not in queue_rows:
                    streams = sorted(shared.get((d, q), ()))
                    extra = (" · streams " + ", ".join(map(str, streams))
                             if len(streams) > 1 else "")
                    queue_rows[q] = b.add(Row(f"gpu/{d}/q{q}", f"Queue {q}{extra}", 0,
                                              "group", device=d), g)
                parent = queue_rows[q]
            if s >= 0:
                lab = f"Stream {s}"
            elif q >= 0:
                lab = f"Queue {q}"
            else:
                lab = "Kernels"
            key_s = f"gpu/{d}/q{q}/s{s}" if by_queue else f"gpu/{d}/s{s}/q{q}"
            b.track(key_s, lab, "kernels", order, lo, hi, parent, kstart, kend, d)
        for cd, lo, hi in cruns:
            if cd == d:
                b.track(f"gpu/{d}/copies", "Copies", "copies", corder, lo, hi, g,
                        cstart, cend, d)
        _gpu_marker_rows(b, d, g)


def _gpu_marker_rows(b: _Builder, device: int, parent: int) -> None:
    m = b.trace.markers
    if len(m) == 0 or not m.has("device"):
        return
    mdev = _col(m, "device")
    sel = np.flatnonzero(mdev == device)
    if len(sel) == 0:
        return
    _marker_depth_rows(b, sel, f"gpu/{device}/ann", "Annotations", parent)


def _marker_depth_rows(b: _Builder, sel: np.ndarray, key: str, label: str,
                       parent: int, own_nesting: bool = False) -> None:
    """A track per nesting depth; ``own_nesting`` re-derives depth among ``sel`` alone
    (a domain's ranges nest among themselves, whatever other domains are around)."""
    m = b.trace.markers
    start, end = _col(m, "start", 0), _col(m, "end", 0)
    if own_nesting:
        o = sel[np.argsort(start[sel], kind="stable")]
        sel, depth = o, np.clip(nesting_depth(start[o], end[o]), 0, 63)
    else:
        depth = np.clip(_col(m, "depth", 0)[sel], 0, 63)
    order, runs = _partition(depth, start[sel])
    order = sel[order]
    for dd, lo, hi in runs:
        b.track(f"{key}/d{dd}", f"{label} · L{dd}" if dd else label, "markers",
                order, lo, hi, parent, start, end)


def _host_rows(b: _Builder) -> None:
    tr = b.trace
    a, m = tr.api, tr.markers
    apid, atid = _col(a, "pid"), _col(a, "tid")
    mpid, mtid = _col(m, "pid"), _col(m, "tid")
    host_m = np.ones(len(m), bool) if not m.has("device") else ~m.valid("device")
    procs = sorted(set(np.unique(apid).tolist()) | set(np.unique(mpid[host_m]).tolist()))
    if len(a) == 0 and not host_m.any():
        return
    astart, aend = _col(a, "start", 0), _col(a, "end", 0)
    for p in procs:
        g = b.add(Row(f"host/{p}", f"Process {p}" if p >= 0 else "Host", 0, "group"))
        sel_a = np.flatnonzero(apid == p)
        sel_m = np.flatnonzero((mpid == p) & host_m)
        tids = sorted(set(np.unique(atid[sel_a]).tolist()) |
                      set(np.unique(mtid[sel_m]).tolist()))
        for t in tids:
            tl = f"Thread {t}" if t >= 0 else "Thread ?"
            th = b.add(Row(f"host/{p}/t{t}", tl, 0, "group"), g)
            asel = sel_a[atid[sel_a] == t]
            if len(asel):      # API calls first: they carry the launch arrows
                o = asel[np.argsort(astart[asel], kind="stable")]
                depth = np.clip(nesting_depth(astart[o], aend[o]), 0, 15)
                dorder, runs = _partition(depth, astart[o])
                for dd, lo, hi in runs:
                    b.track(f"host/{p}/t{t}/api{dd}", "API" if dd == 0 else f"API · L{dd}",
                            "api", o[dorder], lo, hi, th, astart, aend)
            ms = sel_m[mtid[sel_m] == t]
            if len(ms):
                _host_marker_rows(b, ms, f"host/{p}/t{t}", th)


# Marker domains on host threads: label, and whether the group starts folded.
_DOMAIN_ROWS = {
    "roctx": ("roctx ranges", False), "nvtx": ("NVTX ranges", False),
    "user_annotation": ("Annotations", False), "cpu_op": ("PyTorch ops", False),
    "python_function": ("Python stack", True),
}


def _host_marker_rows(b: _Builder, ms: np.ndarray, key: str, parent: int) -> None:
    """One sub-group per marker domain (user ranges, operators, Python frames), each
    with a track per nesting depth; a thread with one domain gets its tracks directly."""
    codes, domains = b.trace.markers.codes("domain")
    present = [c for c in np.unique(codes[ms]).tolist() if c >= 0]
    order = sorted(present, key=lambda c: (list(_DOMAIN_ROWS).index(domains[c])
                                           if domains[c] in _DOMAIN_ROWS else 99, domains[c]))
    for c in order:
        label, folded = _DOMAIN_ROWS.get(domains[c], (domains[c], False))
        sel = ms[codes[ms] == c]
        if len(order) == 1 and not folded:
            _marker_depth_rows(b, sel, f"{key}/ann", label, parent)
            continue
        grp = b.add(Row(f"{key}/dom/{domains[c]}", label, 0, "group",
                        collapsed_default=folded), parent)
        _marker_depth_rows(b, sel, f"{key}/dom/{domains[c]}/ann", label, grp,
                           own_nesting=True)


def _counter_rows(b: _Builder) -> None:
    tr = b.trace
    c, k = tr.counters, tr.kernels
    if len(c) == 0 or not c.has("kernel_index") or len(k) == 0:
        return
    ki = _col(c, "kernel_index")
    ok = (ki >= 0) & (ki < len(k))
    codes, names = c.codes("counter")
    value = c.numpy("value", fill=np.nan)
    kstart, kend = _col(k, "start", 0), _col(k, "end", 0)
    g = b.add(Row("counters", "Counters", 0, "group"))
    for code in np.unique(codes[ok]).tolist():
        sel = np.flatnonzero(ok & (codes == code))
        o = sel[np.argsort(kstart[ki[sel]], kind="stable")]
        ev = Events.build(kstart[ki[o]], kend[ki[o]], ki[o], value=value[o])
        b.add(Row(f"counters/{names[code]}", names[code], 0, "counter", "kernels", ev), g)


def _sample_rows(b: _Builder) -> None:
    """Telemetry: one counter row per sample series (a step: each value holds until
    the next sample), grouped by device when several devices have samples."""
    s = b.trace.samples
    if len(s) == 0:
        return
    codes, names = s.codes("series")
    t = _col(s, "time", 0)
    dev = _col(s, "device", -1)
    value = s.numpy("value", fill=np.nan)
    g = b.add(Row("telemetry", "Telemetry", 0, "group"))
    devs = sorted(set(dev[dev >= 0].tolist()))
    parents = {d: g for d in devs}
    if len(devs) > 1 or (devs and (dev < 0).any()):
        for d in devs:
            parents[d] = b.add(Row(f"telemetry/{d}", f"GPU {d}: {b.trace.device_name(d)}",
                                   0, "group", device=d), g)
    key = dev.astype(_I64) * (len(names) + 1) + codes
    order, runs = _partition(key, t)
    for _, lo, hi in runs:
        idx = order[lo:hi]
        st = t[idx]
        gaps = np.diff(st)
        last = int(np.median(gaps)) if len(gaps) else 1
        en = np.r_[st[1:], st[-1] + max(last, 1)]
        d, name = int(dev[idx[0]]), names[codes[idx[0]]]
        ev = Events.build(st, en, idx, value=value[idx])
        b.add(Row(f"telemetry/{d}/{name}", name, 0, "counter", "samples", ev,
                  device=d if d >= 0 else None), parents.get(d, g))


# --------------------------------------------------------------------------- colours
def name_key(name: str) -> int:
    """Stable colour key of a name (the same across runs and machines)."""
    return zlib.crc32(name.encode("utf-8", "replace")) & 0xFFF


@dataclass(frozen=True)
class ColorScale:
    mode: str
    lo_ns: float = 1.0          # key 0 ..
    hi_ns: float = 1.0          # .. key 255 (log scale)
    top_names: tuple[tuple[str, int], ...] = ()   # (name, key) for the legend


def _log_keys(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    v = np.log(np.maximum(values, 1).astype(np.float64))
    f = (v - np.log(lo)) / max(np.log(hi) - np.log(lo), 1e-9)
    return np.clip(np.round(f * 255), 0, 255).astype(np.uint16)


def color_scale(trace: Trace, model: TimelineModel, mode: str,
                values: np.ndarray | None = None) -> ColorScale:
    """The scale of a colour mode. "delta" (fed by ``values``: per kernel row, its
    duration over the matched kernel's in another run) is symmetric in log space:
    ``lo_ns``/``hi_ns`` hold the ratios drawn fully green / fully red."""
    k = trace.kernels
    if mode == "delta":
        v = np.asarray(values, dtype=np.float64) if values is not None else np.zeros(0)
        lr = np.abs(np.log(v[np.isfinite(v) & (v > 0)]))
        hi = float(np.exp(np.clip(np.quantile(lr, 0.98), np.log(1.1), np.log(4.0)))
                   ) if len(lr) else 2.0
        return ColorScale(mode, 1.0 / hi, hi)
    if mode == "duration":
        d = (_col(k, "end", 0) - _col(k, "start", 0)) if len(k) else np.ones(1, _I64)
        lo, hi = np.quantile(np.maximum(d, 1), (0.01, 0.99)) if len(d) else (1, 2)
        return ColorScale(mode, float(lo), float(max(hi, lo * 2)))
    if mode == "queue_delay":
        qd = _queue_delay(trace)
        ok = qd[qd >= 0] if qd is not None else np.zeros(0)
        lo, hi = np.quantile(np.maximum(ok, 1), (0.01, 0.99)) if len(ok) else (1e3, 1e6)
        return ColorScale(mode, float(lo), float(max(hi, lo * 2)))
    top: list[tuple[str, int]] = []
    if len(k):
        codes, names = model.codes["kernels"], model.names["kernels"]
        tot = np.bincount(codes[codes >= 0],
                          weights=(_col(k, "end", 0) - _col(k, "start", 0))[codes >= 0],
                          minlength=len(names))
        for c in np.argsort(-tot)[:8]:
            if tot[c] > 0:
                top.append((names[c], name_key(names[c])))
    return ColorScale(mode, top_names=tuple(top))


def _queue_delay(trace: Trace) -> np.ndarray | None:
    k, a = trace.kernels, trace.api
    if not k.has("api_index") or len(a) == 0:
        return None
    ai = _col(k, "api_index")
    ok = (ai >= 0) & (ai < len(a))
    out = np.full(len(k), -1, dtype=_I64)
    out[ok] = np.maximum(_col(k, "start", 0)[ok] - _col(a, "end", 0)[ai[ok]], 0)
    return out


def _delta_keys(values: np.ndarray, scale: ColorScale) -> np.ndarray:
    """Ratios -> keys 0..255 (128: equal; log scale from lo_ns to hi_ns); NaN: NO_KEY."""
    ok = np.isfinite(values) & (values > 0)
    f = np.log(np.where(ok, values, 1.0)) / np.log(max(scale.hi_ns, 1.0001))
    keys = np.clip(np.round(127.5 + 127.5 * f), 0, 255)
    return np.where(ok, keys, NO_KEY).astype(np.uint16)


def color_keys(trace: Trace, model: TimelineModel, scale: ColorScale, cancelled=None,
               values: np.ndarray | None = None
               ) -> dict[int, tuple[np.ndarray, np.ndarray, int, int]]:
    """Per track: (keys uint16, colour bins, bin busy, bin_t0, bin_span). Apply with
    :func:`apply_color_keys` on the thread that owns the model. ``values``: per kernel
    row, for the "delta" mode."""
    qd = _queue_delay(trace) if scale.mode == "queue_delay" else None
    dv = None
    if scale.mode == "delta" and values is not None and len(values) == len(trace.kernels):
        dv = np.asarray(values, dtype=np.float64)
    lut = {t: np.array([name_key(n) for n in model.names[t]] + [NO_KEY], np.uint16)
           for t in EVENT_TABLES}
    out = {}
    for i in model.tracks():
        if cancelled is not None and cancelled():
            raise Cancelled()
        r = model.rows[i]
        ev = r.events
        if scale.mode == "duration":
            keys = _log_keys(ev.end - ev.start, scale.lo_ns, scale.hi_ns)
        elif scale.mode == "queue_delay" and r.table in ("kernels",) and qd is not None:
            d = qd[ev.index]
            keys = np.where(d >= 0, _log_keys(d, scale.lo_ns, scale.hi_ns), NO_KEY
                            ).astype(np.uint16)
        elif scale.mode == "queue_delay":
            keys = np.full(len(ev), NO_KEY, np.uint16)
        elif scale.mode == "delta":
            keys = (_delta_keys(dv[ev.index], scale) if dv is not None and r.table == "kernels"
                    else np.full(len(ev), NO_KEY, np.uint16))
        elif r.table not in lut:          # telemetry samples: drawn by value, not name
            keys = np.full(len(ev), NO_KEY, np.uint16)
        else:
            c = model.codes[r.table][ev.index]
            keys = lut[r.table][np.where(c >= 0, c, len(lut[r.table]) - 1)]
        out[i] = (keys, *_bins(ev, keys))
    return out


def _bins(ev: Events, keys: np.ndarray):
    """The row's pyramid level: per time bin the longest event starting in it
    (encoded duration << 16 | key) and the busy time before each bin edge."""
    n = len(ev)
    if n == 0:
        return np.zeros(1, _I64), None, 0, 1
    nb = int(min(MAX_BINS, 1 << max(int(np.log2(max(n // 4, 1))), 4)))
    t0 = int(ev.start[0])
    span = int(ev.end.max()) - t0 + 1
    b = ((ev.start - t0) * nb) // span
    enc = ((ev.end - ev.start + 1) << 16) | keys
    counts = np.bincount(b, minlength=nb)
    bounds = np.cumsum(counts) - counts
    red = np.maximum.reduceat(enc, np.minimum(bounds, n - 1))
    red[counts == 0] = 0
    edges = _I64(t0) + (np.arange(nb + 1, dtype=_I64) * span) // nb
    return red, busy_until(ev, edges), t0, span


def apply_color_keys(model: TimelineModel, keys: dict) -> None:
    for i, (k, bins, busy, t0, span) in keys.items():
        ev = model.rows[i].events
        ev.keys, ev.bins, ev.bin_busy, ev.bin_t0, ev.bin_span = k, bins, busy, t0, span


# --------------------------------------------------------------------------- find
@dataclass(eq=False)
class FindResult:
    """Matches in time order: start, table (index into EVENT_TABLES), row."""

    start: np.ndarray
    table: np.ndarray
    row: np.ndarray
    masks: dict[str, np.ndarray]      # table -> bool per event

    def __len__(self) -> int:
        return len(self.start)


def matching_codes(names: list[str], text: str, regex: bool) -> np.ndarray:
    """Codes of the names ``text`` matches: the one rule of :mod:`hipscope.model.names`."""
    return np.flatnonzero(match_mask(names, text, regex)[0]).astype(np.int32)


def find(trace: Trace, model: TimelineModel, text: str, regex: bool = False) -> FindResult:
    """Events whose name matches (substring, case-insensitive, or regex), by time."""
    starts, tables, rows, masks = [], [], [], {}
    if text:
        for ti, t in enumerate(EVENT_TABLES):
            codes = model.codes[t]
            if len(codes) == 0:
                continue
            match = np.zeros(len(model.names[t]) + 1, bool)
            match[matching_codes(model.names[t], text, regex)] = True
            mask = match[np.where(codes >= 0, codes, len(match) - 1)]
            masks[t] = mask
            r = np.flatnonzero(mask)
            starts.append(_col(getattr(trace, t), "start", 0)[r])
            tables.append(np.full(len(r), ti, np.int8))
            rows.append(r)
    if not starts:
        return FindResult(np.zeros(0, _I64), np.zeros(0, np.int8), np.zeros(0, _I64), masks)
    s, t, r = np.concatenate(starts), np.concatenate(tables), np.concatenate(rows)
    o = np.lexsort((r, t, s))
    return FindResult(s[o], t[o], r[o], masks)


def find_step(found: FindResult, current: tuple[int, int, int] | None, forward: bool
              ) -> int:
    """Index of the next (or previous) match after ``current`` = (start, table, row),
    wrapping around; -1 when there are no matches."""
    n = len(found)
    if n == 0:
        return -1
    if current is None:
        return 0 if forward else n - 1
    s, t, r = current
    # position of current in (start, table, row) order
    lo = int(np.searchsorted(found.start, _I64(s), "left"))
    hi = int(np.searchsorted(found.start, _I64(s), "right"))
    keys = list(zip(found.table[lo:hi].tolist(), found.row[lo:hi].tolist()))
    if forward:
        j = lo + sum(1 for k in keys if k <= (t, r))
        return j % n
    j = lo + sum(1 for k in keys if k < (t, r)) - 1
    return j % n


# --------------------------------------------------------------------------- ruler
def range_stats(model: TimelineModel, t0: int, t1: int) -> dict:
    """Ruler figures for ``[t0, t1)``: duration, kernels overlapping it, busy fraction
    per device (union of its kernel rows)."""
    t0, t1 = int(min(t0, t1)), int(max(t0, t1))
    dur = max(t1 - t0, 1)
    n_k, n_api, n_cp = 0, 0, 0
    per_dev: dict[int, list] = {}
    for r in model.rows:
        ev = r.events
        if ev is None or r.kind != "track":
            continue
        lo, hi = window(ev, t0, t1)
        n = int(np.count_nonzero(ev.end[lo:hi] > t0)) if hi > lo else 0
        if r.table == "kernels":
            n_k += n
            a = int(np.searchsorted(ev.ustart, _I64(t0), "right")) - 1
            a = max(a, 0)
            b = int(np.searchsorted(ev.ustart, _I64(t1), "left"))
            idx = np.arange(a, b)
            per_dev.setdefault(r.device, []).append(
                (np.clip(ev.ustart[a:b], t0, t1), np.clip(ev.uend(idx), t0, t1)))
        elif r.table == "api":
            n_api += n
        elif r.table == "copies":
            n_cp += n
    busy = {}
    for d, parts in per_dev.items():
        s = np.concatenate([p[0] for p in parts])
        e = np.concatenate([p[1] for p in parts])
        busy[d] = union_length(s, e) / dur
    return {"t0": t0, "t1": t1, "duration_ns": t1 - t0, "kernels": n_k,
            "api_calls": n_api, "copies": n_cp, "busy": busy}


# --------------------------------------------------------------------------- names
_NESTED = re.compile(r"(\d+)")


def short_name(name: str) -> str:
    """A readable label: Itanium-mangled nested names become a::b::c, template
    arguments and parameter lists are dropped."""
    if not name:
        return ""
    if name.startswith("_Z"):
        parts, i = [], 3 if name.startswith("_ZN") else 2
        while i < len(name) and name[i].isdigit():
            j = i
            while j < len(name) and name[j].isdigit():
                j += 1
            ln = int(name[i:j])
            parts.append(name[j:j + ln])
            i = j + ln
            if i < len(name) and name[i] in "IE":
                break
        if parts:
            return "::".join(parts)
        return name
    s = name
    for prefix in ("void ", "__global__ void "):
        if s.startswith(prefix):
            s = s[len(prefix):]
    out, depth = [], 0
    for ch in s:           # drop <...> and (...) (per name, not per event)
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    short = "".join(out).strip()
    while "::::" in short:          # "(anonymous namespace)" dropped above
        short = short.replace("::::", "::")
    return short or name


def track_match_starts(model: TimelineModel, found: FindResult) -> dict[int, np.ndarray]:
    """Per track row: sorted starts of its events that match (for highlights)."""
    out = {}
    for i in model.tracks():
        r = model.rows[i]
        mask = found.masks.get(r.table)
        if mask is None or r.kind != "track":
            continue
        ev = r.events
        pos = np.flatnonzero(mask[ev.index])
        if len(pos):
            out[i] = ev.start[pos]
    return out


def counter_pixels(ev: Events, lo: int, hi: int, edges: np.ndarray,
                   cov: np.ndarray) -> np.ndarray:
    """Counter value per pixel column (max of samples starting in it, carried over
    columns the sample's kernel still covers); NaN where none."""
    w = len(edges) - 1
    out = np.full(w, np.nan)
    if hi <= lo or ev.value is None:
        return out
    v = np.nan_to_num(ev.value[lo:hi], nan=-np.inf)
    px = _pixel_of(ev.start[lo:hi], edges)
    counts = np.bincount(px, minlength=w)
    bounds = np.cumsum(counts) - counts
    nonempty = counts > 0
    red = np.maximum.reduceat(v, np.minimum(bounds, hi - lo - 1))
    have = nonempty & np.isfinite(red)
    src = np.maximum.accumulate(np.where(have, np.arange(w), -1))
    fill = have | ((cov > 0) & (src >= 0))
    out[fill] = red[np.maximum(src, 0)][fill]
    return out
