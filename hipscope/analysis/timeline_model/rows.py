"""The timeline's rows (GPU -> queue -> stream, copies, host process -> thread ->
domains by depth, counters, telemetry), built once per (trace, grouping)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...model import Trace
from ...model.intervals import nesting_depth
from ...model.progress import Cancelled
from .events import EVENT_TABLES, Events
from .names import short_name

_I64 = np.int64


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


def int_column(table, name: str, fill: int = -1) -> np.ndarray:
    """A column as int64 (``fill`` for nulls; all ``fill`` when the column is absent)."""
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
        dev, q, st = int_column(s, "device"), int_column(s, "queue"), int_column(s, "stream")
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
    kdev, cdev = int_column(k, "device"), int_column(c, "device")
    devices = sorted(set(np.unique(kdev).tolist()) | set(np.unique(cdev).tolist()))
    kstart, kend = int_column(k, "start", 0), int_column(k, "end", 0)
    queue, stream = int_column(k, "queue"), int_column(k, "stream")
    by_queue = b.grouping == "queue" and k.has("queue")
    # key = device(16) | queue(24) | stream(24), each shifted +1 so -1 (null) -> 0
    qk = _dense(queue) if by_queue else np.full(len(k), -1, _I64)
    stream = _dense(stream)
    key = ((kdev + 1) << 48) | ((qk + 1) << 24) | (stream + 1)
    order, runs = _partition(key, kstart)
    corder, cruns = _partition(cdev, int_column(c, "start", 0))
    cstart, cend = int_column(c, "start", 0), int_column(c, "end", 0)
    shared = _stream_queue_map(tr)
    for kk, _lo, _hi in runs:   # which streams share each queue, from the kernels too
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
    mdev = int_column(m, "device")
    sel = np.flatnonzero(mdev == device)
    if len(sel) == 0:
        return
    _marker_depth_rows(b, sel, f"gpu/{device}/ann", "Annotations", parent)


def _marker_depth_rows(b: _Builder, sel: np.ndarray, key: str, label: str,
                       parent: int, own_nesting: bool = False) -> None:
    """A track per nesting depth; ``own_nesting`` re-derives depth among ``sel`` alone
    (a domain's ranges nest among themselves, whatever other domains are around)."""
    m = b.trace.markers
    start, end = int_column(m, "start", 0), int_column(m, "end", 0)
    if own_nesting:
        o = sel[np.argsort(start[sel], kind="stable")]
        sel, depth = o, np.clip(nesting_depth(start[o], end[o]), 0, 63)
    else:
        depth = np.clip(int_column(m, "depth", 0)[sel], 0, 63)
    order, runs = _partition(depth, start[sel])
    order = sel[order]
    for dd, lo, hi in runs:
        b.track(f"{key}/d{dd}", f"{label} · L{dd}" if dd else label, "markers",
                order, lo, hi, parent, start, end)


def _host_rows(b: _Builder) -> None:
    tr = b.trace
    a, m = tr.api, tr.markers
    apid, atid = int_column(a, "pid"), int_column(a, "tid")
    mpid, mtid = int_column(m, "pid"), int_column(m, "tid")
    host_m = np.ones(len(m), bool) if not m.has("device") else ~m.valid("device")
    procs = sorted(set(np.unique(apid).tolist()) | set(np.unique(mpid[host_m]).tolist()))
    if len(a) == 0 and not host_m.any():
        return
    astart, aend = int_column(a, "start", 0), int_column(a, "end", 0)
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
    ki = int_column(c, "kernel_index")
    ok = (ki >= 0) & (ki < len(k))
    codes, names = c.codes("counter")
    value = c.numpy("value", fill=np.nan)
    kstart, kend = int_column(k, "start", 0), int_column(k, "end", 0)
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
    t = int_column(s, "time", 0)
    dev = int_column(s, "device", -1)
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

