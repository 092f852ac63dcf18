"""The timeline's rows (GPU -> queue -> stream, copies, host process -> thread ->
domains by depth, counters, telemetry), built once per (trace, grouping)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ...model import Trace
from ...model.intervals import nesting_depth
from ...model.progress import Cancelled
from ...model.table import distinct
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
    quiet: bool = False               # a near-empty track, folded under its "fold" row
    members: list[int] = field(default_factory=list)   # a fold row: its quiet tracks


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


def _ranks(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each key's place among the distinct keys (int16 when they are fewer than 32768:
    a stable sort of the places is then numpy's radix sort) and those keys in order."""
    if len(keys) == 0:
        return np.zeros(0, np.int16), np.zeros(0, _I64)
    lo, hi = int(keys.min()), int(keys.max())
    if lo == hi:                                   # one key (one process, say)
        return np.zeros(len(keys), np.int16), np.array([lo], _I64)
    if hi - lo <= max(1 << 16, 2 * len(keys)):     # a table over the range
        off = keys - lo if lo else keys
        seen = np.zeros(hi - lo + 1, bool)
        seen[off] = True
        uniq = np.flatnonzero(seen) + lo
        table = (np.cumsum(seen) - 1).astype(np.int16 if len(uniq) < 32768 else _I64)
        return table[off], uniq                    # the places in their final type
    uniq = np.unique(keys)
    place = np.searchsorted(uniq, keys)
    return place.astype(np.int16 if len(uniq) < 32768 else _I64, copy=False), uniq


def _partition(keys: np.ndarray, start: np.ndarray):
    """Order sorting by (key, start) and the ``(key, lo, hi)`` runs of that order."""
    order = np.argsort(start, kind="stable")
    place, uniq = _ranks(keys)
    if len(uniq) == 1:
        return order, [(int(uniq[0]), 0, len(keys))]
    order = order[np.argsort(place[order], kind="stable")]
    counts = np.bincount(place, minlength=len(uniq))     # every key occurs: no empty run
    his = np.cumsum(counts)
    return order, list(zip(uniq.tolist(), (his - counts).tolist(), his.tolist()))


class _Builder:
    def __init__(self, trace: Trace, grouping: str, cancelled, tables):
        self.trace, self.grouping = trace, grouping
        self.rows: list[Row] = []
        self.track_of: dict[str, np.ndarray] = {    # row per event of ``tables``
            t: np.full(len(getattr(trace, t)), -1, dtype=np.int16) for t in tables}
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
    b = _Builder(trace, grouping, cancelled, EVENT_TABLES)
    if _in_parallel(trace):      # the host rows on a thread beside the GPU rows
        hb = _Builder(trace, grouping, cancelled, ("api", "markers"))
        with ThreadPoolExecutor(1, thread_name_prefix="hipscope-host-rows") as pool:
            host = pool.submit(_host_rows, hb)
            _gpu_rows(b)
            host.result()
        _adopt(b, hb)
    else:
        _gpu_rows(b)
        _host_rows(b)
    _counter_rows(b)
    _sample_rows(b)
    _merge_single_children(b)
    tr = trace.time_range() or (0, 1)
    _fold_quiet_tracks(b, max(int(tr[1]) - int(tr[0]), 1))
    names, codes = {}, {}
    for t in EVENT_TABLES:
        tab = getattr(trace, t)
        col = "direction" if t == "copies" and not tab.has("name") else "name"
        codes[t], names[t] = tab.codes(col) if len(tab) else (np.zeros(0, np.int32), [])
    labels = {t: [short_name(n or "") for n in names[t]] for t in EVENT_TABLES}
    return TimelineModel(b.rows, int(tr[0]), int(tr[1]), names, codes, b.track_of,
                         len(trace.kernels), grouping, labels)


PARALLEL_MIN = 200_000     # GPU and host events each, for the two sides on two threads


def _in_parallel(trace: Trace) -> bool:
    return ((os.cpu_count() or 1) >= 2
            and len(trace.kernels) + len(trace.copies) >= PARALLEL_MIN
            and len(trace.api) + len(trace.markers) >= PARALLEL_MIN)


def _adopt(b: _Builder, hb: _Builder) -> None:
    """Append ``hb``'s rows (built on their own) to ``b``'s as if ``b`` had built them."""
    off = len(b.rows)
    for r in hb.rows:
        r.parent = r.parent + off if r.parent >= 0 else -1
        r.children = [c + off for c in r.children]
        r.members = [c + off for c in r.members]
        b.rows.append(r)
    for t, rows in hb.track_of.items():
        mine = b.track_of[t]
        b.track_of[t] = np.where(rows >= 0, rows.astype(_I64) + off, mine).astype(mine.dtype)


def _merge_single_children(b: _Builder) -> None:
    """A group below the top level with one child gives way to it, the labels joined
    ("Queue 1 › Stream 568"; "Queue 0" over its one "Queue 0" track stays "Queue 0"):
    no header row for a level that tells nothing apart."""
    rows = b.rows
    drop = [r.kind == "group" and r.level >= 1 and len(r.children) == 1 for r in rows]
    if not any(drop):
        return
    for i, r in enumerate(rows):            # parents come before their children
        if drop[i]:
            child = rows[r.children[0]]
            if not child.label.startswith(r.label):
                child.label = f"{r.label} › {child.label}"
            child.collapsed_default = child.collapsed_default or r.collapsed_default
    remap = np.full(len(rows) + 1, -1, np.int64)       # old index -> new (-1: dropped)
    kept = [i for i in range(len(rows)) if not drop[i]]
    remap[kept] = np.arange(len(kept))
    out: list[Row] = []
    for i in kept:
        r = rows[i]
        parent = r.parent
        while parent >= 0 and drop[parent]:
            parent = rows[parent].parent
        r.parent = int(remap[parent]) if parent >= 0 else -1
        r.level = out[r.parent].level + 1 if r.parent >= 0 else 0
        r.children = []
        if r.parent >= 0:
            out[r.parent].children.append(len(out))
        out.append(r)
    b.rows[:] = out
    for t, arr in b.track_of.items():
        b.track_of[t] = remap[arr.astype(np.int64)].astype(arr.dtype)


QUIET_EVENTS = 3          # a track with at most this many events ...
QUIET_BUSY = 0.001        # ... busy for less than this share of the trace is "quiet"
QUIET_FOLD_MIN = 3        # a group folds its quiet tracks from this many on


def _fold_quiet_tracks(b: _Builder, span: int) -> None:
    """Mark near-empty tracks quiet and give each group with several of them one
    "fold" row (kind "fold", starts folded) that stands in for them: the MI350 trace's
    hundreds of one-kernel streams become one row with a count."""
    for g in range(len(b.rows)):
        r = b.rows[g]
        if r.kind != "group":
            continue
        quiet = []
        for c in r.children:
            ev = b.rows[c].events
            if (b.rows[c].kind == "track" and ev is not None and len(ev) <= QUIET_EVENTS
                    and int((ev.end - ev.start).sum()) < QUIET_BUSY * span):
                quiet.append(c)
        if len(quiet) < QUIET_FOLD_MIN:
            continue
        for c in quiet:
            b.rows[c].quiet = True
        label = f"{len(quiet)} quiet tracks (≤ {QUIET_EVENTS} events each)"
        b.rows.append(Row(f"{r.key}/quiet", label, r.level + 1, "fold", parent=g,
                          device=r.device, collapsed_default=True, members=quiet))


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
    return np.where(ids < 0, -1, _ranks(ids)[0]).astype(_I64)


def _bits(ids: np.ndarray) -> int:
    """Bits that hold ``ids + 1`` (ids >= -1)."""
    return max(int(ids.max()) + 1, 1).bit_length() if len(ids) else 1


def _gpu_rows(b: _Builder) -> None:
    tr = b.trace
    k, c = tr.kernels, tr.copies
    kdev, cdev = int_column(k, "device"), int_column(c, "device")
    devices = sorted(set(distinct(kdev).tolist()) | set(distinct(cdev).tolist()))
    kstart, kend = int_column(k, "start", 0), int_column(k, "end", 0)
    queue, stream = int_column(k, "queue"), int_column(k, "stream")
    by_queue = b.grouping == "queue" and k.has("queue")
    # key = device | queue | stream, each shifted +1 so -1 (null) -> 0, in as few bits
    # as they need (a small key range is ranked through a table, not a sort)
    qk = _dense(queue) if by_queue else np.full(len(k), -1, _I64)
    stream = _dense(stream)
    qb, sb = _bits(qk), _bits(stream)
    key = ((kdev + 1) << (qb + sb)) | ((qk + 1) << sb) | (stream + 1)
    order, runs = _partition(key, kstart)

    def split(kk: int) -> tuple[int, int, int]:
        return ((kk >> (qb + sb)) - 1, ((kk >> sb) & ((1 << qb) - 1)) - 1,
                (kk & ((1 << sb) - 1)) - 1)
    corder, cruns = _partition(cdev, int_column(c, "start", 0))
    cstart, cend = int_column(c, "start", 0), int_column(c, "end", 0)
    shared = _stream_queue_map(tr)
    for kk, _lo, _hi in runs:   # which streams share each queue, from the kernels too
        d, q, s = split(kk)
        if q >= 0 and s >= 0:
            shared.setdefault((d, q), set()).add(s)
    for d in devices:
        label = tr.device_name(d) if d >= 0 else "GPU (unknown)"
        if d >= 0 and label != f"GPU {d}":           # never "GPU 0 · GPU 0"
            label = f"GPU {d} · {label}"
        g = b.add(Row(f"gpu/{d}", label, 0, "group", device=d))
        queue_rows: dict[int, int] = {}
        for kk, lo, hi in runs:
            kd, q, s = split(kk)
            if kd != d:
                continue
            parent = g
            if by_queue and q >= 0:
                if q not in queue_rows:
                    queue_rows[q] = b.add(Row(f"gpu/{d}/q{q}", _queue_label(
                        q, sorted(shared.get((d, q), ()))), 0, "group", device=d), g)
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


def _queue_label(q: int, streams: list[int]) -> str:
    """'Queue 2 · streams 2, 4, 5, 567'; six streams at most, then the count."""
    if len(streams) < 2:
        return f"Queue {q}"
    more = f", … ({len(streams)} streams)" if len(streams) > 6 else ""
    return f"Queue {q} · streams " + ", ".join(map(str, streams[:6])) + more


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


def _calls_by_thread(pid: np.ndarray, tid: np.ndarray, start: np.ndarray
                     ) -> dict[int, dict[int, np.ndarray]]:
    """pid -> tid -> that thread's API calls in start order (one partition of them all)."""
    pp, pu = _ranks(pid)
    tp, tu = _ranks(tid)
    order, runs = _partition(pp.astype(_I64) * max(len(tu), 1) + tp, start)
    out: dict[int, dict[int, np.ndarray]] = {}
    for key, lo, hi in runs:
        p, t = divmod(key, len(tu))
        out.setdefault(int(pu[p]), {})[int(tu[t])] = order[lo:hi]
    return out


def _host_rows(b: _Builder) -> None:
    tr = b.trace
    a, m = tr.api, tr.markers
    mpid, mtid = int_column(m, "pid"), int_column(m, "tid")
    host_m = np.ones(len(m), bool) if not m.has("device") else ~m.valid("device")
    if len(a) == 0 and not host_m.any():
        return
    astart, aend = int_column(a, "start", 0), int_column(a, "end", 0)
    calls = _calls_by_thread(int_column(a, "pid"), int_column(a, "tid"), astart)
    procs = sorted(set(calls) | set(np.unique(mpid[host_m]).tolist()))
    for p in procs:
        g = b.add(Row(f"host/{p}", f"Process {p}" if p >= 0 else "Host", 0, "group"))
        threads = calls.get(p, {})
        sel_m = np.flatnonzero((mpid == p) & host_m)
        for t in sorted(set(threads) | set(np.unique(mtid[sel_m]).tolist())):
            tl = f"Thread {t}" if t >= 0 else "Thread (id not recorded)"
            th = b.add(Row(f"host/{p}/t{t}", tl, 0, "group"), g)
            o = threads.get(t)
            if o is not None:      # API calls first: they carry the launch arrows
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

