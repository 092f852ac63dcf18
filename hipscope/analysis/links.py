"""Links between events beyond the launch: the host ops enclosing a launch, the
kernels an op launched, and cross-stream waits (a GPU sync on the work that an event
record marked). Qt-free; the timeline draws them as flows, Details lists them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..model import Trace
from .source_args import SourceIndex

# host ranges that count as ops (the Python stack, python_function, does not)
HOST_OP_DOMAINS = ("cpu_op", "user_annotation", "roctx", "nvtx")
MAX_LINKS = 64


def _host_markers(trace: Trace) -> np.ndarray:
    m = trace.markers
    if len(m) == 0 or not m.has("tid"):
        return np.zeros(0, np.int64)
    ops = pc.is_in(m.column("domain"), value_set=pa.array(HOST_OP_DOMAINS))
    ops = pc.fill_null(ops, False).to_numpy(zero_copy_only=False)
    return np.flatnonzero(ops & (m.numpy("tid", fill=-1) >= 0))


def enclosing_ops(trace: Trace, api_row: int) -> list[int]:
    """Marker rows (host ops, annotations) on the API call's thread that enclose it,
    outermost first."""
    a = trace.api
    if not 0 <= api_row < len(a):
        return []
    r = a.row(api_row)
    if r.get("tid") is None:
        return []
    m = trace.markers
    sel = _host_markers(trace)
    if len(sel) == 0:
        return []
    s, e = m.numpy("start")[sel], m.numpy("end")[sel]
    tid, pid = m.numpy("tid", fill=-1)[sel], m.numpy("pid", fill=-1)[sel]
    ok = (tid == r["tid"]) & (s <= r["start"]) & (e >= r["end"])
    if r.get("pid") is not None:
        ok &= (pid == r["pid"]) | (pid < 0)
    hit = sel[ok]
    order = np.lexsort((-m.numpy("end")[hit], m.numpy("start")[hit]))
    return [int(x) for x in hit[order]]


def op_launches(trace: Trace, marker_row: int) -> list[tuple[str, int]]:
    """(table, row) of the kernels and copies launched by API calls inside a host op
    (same thread), at most MAX_LINKS per table."""
    m = trace.markers
    if not 0 <= marker_row < len(m):
        return []
    r = m.row(marker_row)
    a = trace.api
    if r.get("tid") is None or len(a) == 0 or not a.has("tid"):
        return []
    ok = (a.numpy("tid", fill=-1) == r["tid"]) & (a.numpy("start") >= r["start"]) \
        & (a.numpy("end") <= r["end"])
    if r.get("pid") is not None and a.has("pid"):
        ok &= a.numpy("pid", fill=-1) == r["pid"]
    calls = np.flatnonzero(ok)
    out: list[tuple[str, int]] = []
    for name in ("kernels", "copies"):
        t = getattr(trace, name)
        if len(calls) and t.has("api_index"):
            rows = np.flatnonzero(np.isin(t.numpy("api_index", fill=-1), calls))[:MAX_LINKS]
            out += [(name, int(x)) for x in rows]
    return out


def wait_source(trace: Trace, idx: SourceIndex | None, marker_row: int
                ) -> tuple[str, int] | None:
    """The GPU work a sync waits for: the last kernel or copy on the recorded stream
    launched before the event record (Kineto ``wait_on_cuda_event_record_corr_id``)."""
    m = trace.markers
    if idx is None or not 0 <= marker_row < len(m):
        return None
    r = m.row(marker_row)
    corr = r.get("correlation_id")
    args = idx.by_corr.get(("cuda_sync", int(corr))) if corr is not None else None
    if not args or "wait_on_cuda_event_record_corr_id" not in args:
        return None
    rec, stream = args["wait_on_cuda_event_record_corr_id"], args.get("wait_on_stream")
    best: tuple[int, str, int] | None = None
    for name in ("kernels", "copies"):
        t = getattr(trace, name)
        if len(t) == 0 or not t.has("correlation_id"):
            continue
        corr = t.numpy("correlation_id", fill=-1)
        ok = (corr >= 0) & (corr < rec)
        if stream is not None and t.has("stream"):
            ok &= t.numpy("stream", fill=-1) == stream
        rows = np.flatnonzero(ok)
        if len(rows):
            j = int(rows[np.argmax(corr[rows])])
            if best is None or corr[j] > best[0]:
                best = (int(corr[j]), name, j)
    return None if best is None else (best[1], best[2])


def recorded_waits(trace: Trace, table: str, row: int) -> list[tuple[str, int, str, int]]:
    """Cross-stream waits the markers table holds (``wait_on_correlation_id``, e.g. rocpd
    HIP event records): (record marker -> wait marker) links of a selected record (every
    wait on it) or wait (its record); the record is the marker with that correlation
    id, of the same process."""
    m = trace.markers
    if table != "markers" or not 0 <= row < len(m) or not (
            m.has("wait_on_correlation_id") and m.has("correlation_id")):
        return []
    won, corr = m.numpy("wait_on_correlation_id", fill=-1), m.numpy("correlation_id", fill=-1)
    pid = m.numpy("pid", fill=-1) if m.has("pid") else np.full(len(m), -1)
    same = pid == pid[row]
    if won[row] >= 0:
        rec = np.flatnonzero(same & (corr == won[row]) & (won < 0))
        return [("markers", int(rec[0]), "markers", row)] if len(rec) else []
    if corr[row] < 0:
        return []
    waits = np.flatnonzero(same & (won == corr[row]))[:MAX_LINKS]
    return [("markers", row, "markers", int(w)) for w in waits]


def wait_targets(trace: Trace, idx: SourceIndex | None, table: str, row: int
                 ) -> list[int]:
    """Marker rows of the GPU syncs that wait for this kernel or copy."""
    m = trace.markers
    if idx is None or len(m) == 0 or table not in ("kernels", "copies"):
        return []
    syncs = pc.fill_null(pc.equal(m.column("domain"), "cuda_sync"), False)
    out = []
    for i in np.flatnonzero(syncs.to_numpy(zero_copy_only=False)).tolist():
        if wait_source(trace, idx, i) == (table, row):
            out.append(i)
    return out[:MAX_LINKS]


def shown_level(trace: Trace, marker_row: int) -> int:
    """The timeline row ("L<n>") a marker is drawn on: its depth in the file, or on a
    host thread with several domains its nesting among its own domain's markers."""
    m = trace.markers
    r = m.row(marker_row)
    depth = int(r.get("depth") or 0)
    if r.get("tid") is None or r.get("device") is not None:
        return depth
    tid, pid = m.numpy("tid", fill=-1), m.numpy("pid", fill=-1)
    same = (tid == r["tid"]) & (pid == (r.get("pid") if r.get("pid") is not None else -1))
    dom = m.column("domain")
    if len(pc.unique(dom.filter(pa.array(same)))) <= 1:
        return depth
    s, e = m.numpy("start"), m.numpy("end")
    mine = pc.fill_null(pc.equal(dom, r["domain"]), False).to_numpy(zero_copy_only=False)
    enclosing = same & mine & (s <= r["start"]) & (e >= r["end"])
    enclosing[marker_row] = False
    return int(np.count_nonzero(enclosing))
