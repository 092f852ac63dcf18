"""Write a hipscope :class:`Trace` as a Perfetto ``.pftrace`` (opens in ui.perfetto.dev).

Layout (TrackDescriptor hierarchy through ``parent_uuid``):

* one process track per pid, one thread track per (pid, tid): API calls and markers
  as nested slices (slices that would cross another on their thread go to extra
  "overlap" tracks under the process, so every track nests properly);
* per device ``GPU <i> (<name>)`` -> ``Queue <q>`` -> ``Stream <s>`` tracks holding
  kernels and copies (extra lanes where slices on one stream overlap);
* SLICE_BEGIN/SLICE_END events (``TYPE_INSTANT`` for zero-length ones) with interned
  event names, categories and debug-annotation names on one packet sequence
  (first interned-data packet sets ``SEQ_INCREMENTAL_STATE_CLEARED``, every event
  packet ``SEQ_NEEDS_INCREMENTAL_STATE``);
* kernel/copy fields as debug annotations named as rocprofv3 names them where the
  meaning is the same (``corr_id``, ``agent``, ``queue``, ``stream_ID``, ``VGPR_Count``,
  ``LDS_Block_Size``, ``Scratch_Size`` ...) plus ``grid_x``.. ``block_z`` etc.;
* launch links as flows: the API slice carries ``flow_ids`` = the ids its kernels
  and copies carry in ``terminating_flow_ids`` (one id per launched item).

The event packets are encoded column-wise with numpy (no Python object per event):
``hipscope.parsers.pftrace`` reads the result back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..model import Trace

CHUNK = 1 << 18  # events encoded per numpy pass

_BEGIN, _END, _INSTANT = 1, 2, 3
SEQ_ID = 1
_SEQ_CLEARED, _SEQ_NEEDS = 1, 2

K_KERNEL, K_COPY, K_API, K_MARKER = 0, 1, 2, 3


# --------------------------------------------------------------------------- varints
def _varint_py(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _tag(field: int, wire: int) -> bytes:
    return _varint_py((field << 3) | wire)


def _varint_len(v: np.ndarray) -> np.ndarray:
    """Bytes of each uint64 as a varint (1..10)."""
    v = v.astype(np.uint64, copy=False)
    n = np.ones(len(v), dtype=np.int64)
    for k in range(1, 10):
        n += v >= np.uint64(1 << (7 * k))
    return n


def _write_varints(out: np.ndarray, pos: np.ndarray, v: np.ndarray, lens: np.ndarray):
    v = v.astype(np.uint64, copy=False)
    maxlen = int(lens.max()) if len(lens) else 0
    for k in range(maxlen):
        sel = lens > k
        if not sel.all():
            idx = np.nonzero(sel)[0]
            vk, pk, lk = v[idx], pos[idx], lens[idx]
        else:
            vk, pk, lk = v, pos, lens
        byte = ((vk >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        byte |= np.where(lk > k + 1, np.uint8(0x80), np.uint8(0))
        out[pk + k] = byte


def _write_const(out: np.ndarray, pos: np.ndarray, raw: bytes) -> None:
    for k, b in enumerate(raw):
        out[pos + k] = b


# --------------------------------------------------------------------------- fields
class _Field:
    """A protobuf field for every row of a chunk (absent where ``present`` is False)."""

    def sizes(self) -> np.ndarray:  # bytes per row
        raise NotImplementedError

    def write(self, out: np.ndarray, cur: np.ndarray) -> None:  # advances cur in place
        raise NotImplementedError


class _Const(_Field):
    def __init__(self, raw: bytes, n: int, present: np.ndarray | None = None):
        self.raw, self.n, self.present = raw, n, present

    def sizes(self):
        s = np.full(self.n, len(self.raw), dtype=np.int64)
        return s if self.present is None else np.where(self.present, s, 0)

    def write(self, out, cur):
        if self.present is None:
            _write_const(out, cur, self.raw)
            cur += len(self.raw)
        else:
            idx = np.nonzero(self.present)[0]
            _write_const(out, cur[idx], self.raw)
            cur[idx] += len(self.raw)


class _Varint(_Field):
    def __init__(self, tag: bytes, values: np.ndarray, present: np.ndarray | None = None):
        self.tag, self.values, self.present = tag, values.astype(np.uint64), present
        self.lens = _varint_len(self.values)

    def sizes(self):
        s = self.lens + len(self.tag)
        return s if self.present is None else np.where(self.present, s, 0)

    def write(self, out, cur):
        if self.present is None:
            idx = slice(None)
            pos = cur
        else:
            idx = np.nonzero(self.present)[0]
            pos = cur[idx]
        _write_const(out, pos, self.tag)
        _write_varints(out, pos + len(self.tag), self.values[idx], self.lens[idx])
        if self.present is None:
            cur += self.lens + len(self.tag)
        else:
            cur[idx] += self.lens[idx] + len(self.tag)


class _Fixed64(_Field):
    def __init__(self, tag: bytes, values: np.ndarray, present: np.ndarray):
        self.tag, self.values, self.present = tag, values.astype("<u8"), present

    def sizes(self):
        return np.where(self.present, len(self.tag) + 8, 0).astype(np.int64)

    def write(self, out, cur):
        idx = np.nonzero(self.present)[0]
        pos = cur[idx]
        _write_const(out, pos, self.tag)
        raw = self.values[idx].view(np.uint8).reshape(-1, 8)
        for k in range(8):
            out[pos + len(self.tag) + k] = raw[:, k]
        cur[idx] += len(self.tag) + 8


class _RaggedFixed64(_Field):
    """repeated fixed64 (non-packed): ``counts[i]`` values per row from ``flat``
    (row-major)."""

    def __init__(self, tag: bytes, counts: np.ndarray, flat: np.ndarray):
        self.tag, self.counts, self.flat = tag, counts.astype(np.int64), flat.astype("<u8")

    def sizes(self):
        return self.counts * (len(self.tag) + 8)

    def write(self, out, cur):
        if not len(self.flat):
            return
        rows = np.repeat(np.arange(len(self.counts)), self.counts)
        first = np.cumsum(self.counts) - self.counts
        rank = np.arange(len(self.flat)) - first[rows]
        step = len(self.tag) + 8
        pos = cur[rows] + rank * step
        _write_const(out, pos, self.tag)
        raw = self.flat.view(np.uint8).reshape(-1, 8)
        for k in range(8):
            out[pos + len(self.tag) + k] = raw[:, k]
        cur += self.counts * step


class _Lookup(_Field):
    """A pre-encoded byte string per row chosen by ``codes`` from ``table``."""

    def __init__(self, codes: np.ndarray, table: list[bytes], present: np.ndarray):
        self.codes, self.present = codes.astype(np.int64), present
        self.table = table
        self.tlen = np.array([len(t) for t in table], dtype=np.int64)

    def sizes(self):
        s = np.zeros(len(self.codes), dtype=np.int64)
        s[self.present] = self.tlen[self.codes[self.present]]
        return s

    def write(self, out, cur):
        for code, raw in enumerate(self.table):
            idx = np.nonzero(self.present & (self.codes == code))[0]
            if len(idx):
                _write_const(out, cur[idx], raw)
                cur[idx] += len(raw)


class _Message(_Field):
    """A nested message present on every row of the chunk."""

    def __init__(self, tag: bytes, fields: list[_Field]):
        self.tag, self.fields = tag, fields
        self.body = None

    def sizes(self):
        body = np.zeros(0, np.int64)
        for i, f in enumerate(self.fields):
            s = f.sizes()
            body = s if i == 0 else body + s
        self.body = body
        self.blen = _varint_len(body.astype(np.uint64))
        return len(self.tag) + self.blen + body

    def write(self, out, cur):
        if self.body is None:
            self.sizes()
        _write_const(out, cur, self.tag)
        _write_varints(out, cur + len(self.tag), self.body.astype(np.uint64), self.blen)
        cur += len(self.tag) + self.blen
        for f in self.fields:
            f.write(out, cur)


def _encode_rows(fields: list[_Field], n: int) -> bytes:
    """Each row as one ``Trace.packet`` record (tag 0x0a + length + TracePacket)."""
    body = np.zeros(n, dtype=np.int64)
    for f in fields:
        body += f.sizes()
    blen = _varint_len(body.astype(np.uint64))
    sizes = 1 + blen + body
    total = int(sizes.sum())
    out = np.zeros(total, dtype=np.uint8)
    cur = np.cumsum(sizes) - sizes
    out[cur] = 0x0A
    _write_varints(out, cur + 1, body.astype(np.uint64), blen)
    cur = cur + 1 + blen
    for f in fields:
        f.write(out, cur)
    return out.tobytes()


# --------------------------------------------------------------------------- lanes
def _lanes(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Lane per slice so that slices on one lane nest or are disjoint (given the
    event order END(t) < BEGIN(t), ends sorted inner-first)."""
    n = len(start)
    lane = np.zeros(n, dtype=np.int32)
    if n < 2:
        return lane
    order = np.lexsort((-end, start))
    s, e = start[order], end[order]
    if np.all(s[1:] >= e[:-1]):
        return lane
    stacks: list[list[int]] = []
    out = np.zeros(n, dtype=np.int32)
    sl, el = s.tolist(), e.tolist()
    for i in range(n):
        si, ei = sl[i], el[i]
        placed = -1
        for li, st in enumerate(stacks):
            while st and st[-1] <= si:
                st.pop()
            if not st or st[-1] >= ei:
                placed = li
                st.append(ei)
                break
        if placed < 0:
            stacks.append([ei])
            placed = len(stacks) - 1
        out[i] = placed
    lane[order] = out
    return lane


def _group_ids(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Group id per row for a tuple of int64 key columns, and the unique keys."""
    if not len(cols[0]):
        return np.zeros(0, dtype=np.int64), np.zeros((0, len(cols)), dtype=np.int64)
    combined = np.zeros(len(cols[0]), dtype=np.int64)
    for c in cols:  # mixed-radix code of the per-column dense ranks
        u, inv = np.unique(c, return_inverse=True)
        combined = combined * len(u) + inv.reshape(-1)
    _, first, gid = np.unique(combined, return_index=True, return_inverse=True)
    keys = np.stack([c[first] for c in cols], axis=1)
    return gid.reshape(-1), keys


# --------------------------------------------------------------------------- writer
def _i64(table, col: str, fill: int = -1) -> tuple[np.ndarray, np.ndarray]:
    valid = table.valid(col)
    vals = table.numpy(col, fill=fill).astype(np.int64)
    return vals, valid


def write_pftrace(trace: Trace, path: str | os.PathLike,
                  progress: Callable[[float], None] | None = None,
                  cancelled: Callable[[], bool] | None = None) -> None:
    """Write ``trace`` as a Perfetto protobuf trace at ``path``."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb2

    from ..parsers.base import Cancelled

    progress = progress or (lambda f: None)
    cancelled = cancelled or (lambda: False)
    path = Path(path)

    # ---------------------------------------------------------------- slices
    tabs = {K_KERNEL: trace.kernels, K_COPY: trace.copies, K_API: trace.api,
            K_MARKER: trace.markers}
    starts, ends = {}, {}
    for k, t in tabs.items():
        starts[k] = t.numpy("start", fill=0).astype(np.int64) if len(t) else \
            np.zeros(0, np.int64)
        ends[k] = np.maximum(t.numpy("end", fill=0).astype(np.int64), starts[k]) if len(t) \
            else np.zeros(0, np.int64)
    lo = min([int(v.min()) for v in starts.values() if len(v)] or [0])
    shift = -lo if lo < 0 else 0
    for k in tabs:
        starts[k] = starts[k] + shift
        ends[k] = ends[k] + shift

    # ---------------------------------------------------------------- interning
    name_iid: dict[str, int] = {}
    names_iid_col = {}
    for k, t in tabs.items():
        if not len(t):
            names_iid_col[k] = np.zeros(0, np.int64)
            continue
        if k == K_COPY and not t.has("name"):
            codes, cats = t.codes("direction")
        else:
            codes, cats = t.codes("name")
            if k == K_COPY:
                dcodes, dcats = t.codes("direction")
                miss = codes < 0
                if miss.any():
                    base = len(cats)
                    cats = list(cats) + list(dcats)
                    codes = np.where(miss, dcodes + base, codes)
        m = np.array([name_iid.setdefault(c, len(name_iid) + 1) for c in cats] or [0],
                     dtype=np.int64)
        names_iid_col[k] = np.where(codes >= 0, m[np.maximum(codes, 0)], 0)

    cat_iid: dict[str, int] = {}

    def cid(c: str) -> int:
        return cat_iid.setdefault(c, len(cat_iid) + 1)

    cid("hipscope")  # marks files written here (hipscope.parsers.pftrace reads it)
    if trace.meta.get("clock"):
        cid(f"hipscope-clock:{trace.meta['clock']}")
    cat1, cat2 = {}, {}
    cat1[K_KERNEL] = np.full(len(trace.kernels), cid("kernel_dispatch"), np.int64)
    cat2[K_KERNEL] = None
    cat1[K_COPY] = np.full(len(trace.copies), cid("memory_copy"), np.int64)
    cat2[K_COPY] = None
    if len(trace.api):
        dcodes, dcats = trace.api.codes("domain")
        c1 = np.array([cid(_api_category(d)) for d in dcats] or [0], np.int64)
        c2 = np.array([cid("api:" + d) for d in dcats] or [0], np.int64)
        cat1[K_API], cat2[K_API] = c1[dcodes], c2[dcodes]
    else:
        cat1[K_API], cat2[K_API] = np.zeros(0, np.int64), None
    if len(trace.markers):
        dcodes, dcats = trace.markers.codes("domain")
        c2 = np.array([cid("marker:" + d) for d in dcats] or [0], np.int64)
        cat1[K_MARKER] = np.full(len(trace.markers), cid("marker_api"), np.int64)
        cat2[K_MARKER] = c2[dcodes]
    else:
        cat1[K_MARKER], cat2[K_MARKER] = np.zeros(0, np.int64), None

    ann_iid: dict[str, int] = {}

    def aid(nm: str) -> int:
        return ann_iid.setdefault(nm, len(ann_iid) + 1)

    # ---------------------------------------------------------------- tracks
    tracks: list[Any] = []  # TrackDescriptor messages
    next_uuid = [1000]

    def new_uuid() -> int:
        next_uuid[0] += 1
        return next_uuid[0]

    dev_names = {}
    for i in range(len(trace.devices)):
        r = trace.devices.row(i)
        dev_names[r["index"]] = r
    dev_track: dict[int, int] = {}
    sub_track: dict[tuple, int] = {}

    def device_track(d: int) -> int:
        if d in dev_track:
            return dev_track[d]
        u = new_uuid()
        r = dev_names.get(d)
        td = pb2.TrackDescriptor(uuid=u)
        if d < 0:
            td.name = "Host copies"
        else:
            nm = r["name"] if r else None
            td.name = f"GPU {d} ({nm})" if nm and nm != f"GPU {d}" else f"GPU {d}"
            if r:
                td.description = json.dumps({"hipscope_device": r}, default=str)
        tracks.append(td)
        dev_track[d] = u
        return u

    def child(parent: int, name: str) -> int:
        key = (parent, name)
        if key in sub_track:
            return sub_track[key]
        u = new_uuid()
        tracks.append(pb2.TrackDescriptor(uuid=u, parent_uuid=parent, name=name))
        sub_track[key] = u
        return u

    # GPU work: kernels + copies grouped by (device, queue, stream), lanes within
    track_of: dict[int, np.ndarray] = {}
    gk = []
    for k in (K_KERNEL, K_COPY):
        t = tabs[k]
        dev, dv = _i64(t, "device")
        q, qv = _i64(t, "queue")
        s, sv = _i64(t, "stream")
        gk.append((np.where(dv, dev, -1), np.where(qv, q, -1), np.where(sv, s, -1)))
    dcol = np.concatenate([g[0] for g in gk])
    qcol = np.concatenate([g[1] for g in gk])
    scol = np.concatenate([g[2] for g in gk])
    gst = np.concatenate([starts[K_KERNEL], starts[K_COPY]])
    gen = np.concatenate([ends[K_KERNEL], ends[K_COPY]])
    gtrack = _assign_tracks(
        [dcol, qcol, scol], gst, gen,
        lambda key, lane: _gpu_leaf(key, lane, device_track, child))
    nk = len(trace.kernels)
    track_of[K_KERNEL], track_of[K_COPY] = gtrack[:nk], gtrack[nk:]

    # host: api + markers by (pid, tid), markers with a device on the GPU tree
    proc_track: dict[int, int] = {}
    thread_track: dict[tuple, int] = {}

    def process_track(pid: int) -> int:
        if pid in proc_track:
            return proc_track[pid]
        u = new_uuid()
        td = pb2.TrackDescriptor(uuid=u)
        if pid >= 0:
            td.process.pid = pid
        else:
            td.name = "Host"
        tracks.append(td)
        proc_track[pid] = u
        return u

    def host_leaf(key, lane) -> int:
        pid, tid, dev, stream = (int(x) for x in key)
        if dev >= 0:
            parent = device_track(dev)
            nm = f"Stream {stream} annotations" if stream >= 0 else "Annotations"
            return child(parent, nm if lane == 0 else f"{nm} #{lane + 1}")
        pt = process_track(pid)
        if tid >= 0 and pid >= 0 and lane == 0:
            kk = (pid, tid)
            if kk not in thread_track:
                u = new_uuid()
                td = pb2.TrackDescriptor(uuid=u, parent_uuid=pt)
                td.thread.pid = pid
                td.thread.tid = tid
                tracks.append(td)
                thread_track[kk] = u
            return thread_track[kk]
        nm = f"Thread {tid}" if tid >= 0 else "Calls"
        return child(pt, nm if lane == 0 else f"{nm} (overlap {lane})")

    hk = []
    for k in (K_API, K_MARKER):
        t = tabs[k]
        p, pv = _i64(t, "pid")
        ti, tv = _i64(t, "tid")
        dev, dv = _i64(t, "device")
        if k == K_MARKER:
            s, sv = _i64(t, "stream")
        else:
            s, sv = np.full(len(t), -1, np.int64), np.zeros(len(t), bool)
            dv = np.zeros(len(t), bool)  # API calls stay on their thread
        hk.append((np.where(pv, p, -1), np.where(tv, ti, -1), np.where(dv, dev, -1),
                   np.where(sv, s, -1)))
    htrack = _assign_tracks(
        [np.concatenate([h[i] for h in hk]) for i in range(4)],
        np.concatenate([starts[K_API], starts[K_MARKER]]),
        np.concatenate([ends[K_API], ends[K_MARKER]]), host_leaf)
    na = len(trace.api)
    track_of[K_API], track_of[K_MARKER] = htrack[:na], htrack[na:]
    progress(0.15)

    # ---------------------------------------------------------------- flows
    k_api, k_link = _i64(trace.kernels, "api_index")
    c_api, c_link = _i64(trace.copies, "api_index")
    k_link &= (k_api >= 0) & (k_api < na)
    c_link &= (c_api >= 0) & (c_api < na)
    k_fid = np.arange(1, nk + 1, dtype=np.uint64)
    c_fid = np.arange(nk + 1, nk + 1 + len(trace.copies), dtype=np.uint64)
    child_api = np.concatenate([k_api[k_link], c_api[c_link]])
    child_fid = np.concatenate([k_fid[k_link], c_fid[c_link]])
    o = np.argsort(child_api, kind="stable")
    flat_fids = child_fid[o]
    api_nflow = np.bincount(child_api, minlength=na).astype(np.int64) if na else \
        np.zeros(0, np.int64)
    api_fptr = np.cumsum(api_nflow) - api_nflow

    # ---------------------------------------------------------------- annotations
    ann_specs: list[tuple[int, str, np.ndarray, np.ndarray]] = []
    lookups: list[tuple[int, str, np.ndarray, list[str], np.ndarray]] = []

    def add_int(kind: int, nm: str, table, col: str):
        if not len(table) or not table.has(col):
            return
        vals, valid = _i64(table, col, 0)
        ann_specs.append((kind, nm, vals, valid))

    kt = trace.kernels
    for nm, col in (("corr_id", "correlation_id"), ("queue", "queue"),
                    ("stream_ID", "stream"), ("pid", "pid"), ("tid", "tid"),
                    ("dispatch_id", "dispatch_id"), ("dispatch_ns", "dispatch_ns"),
                    ("grid_x", "grid_x"), ("grid_y", "grid_y"), ("grid_z", "grid_z"),
                    ("block_x", "block_x"), ("block_y", "block_y"), ("block_z", "block_z"),
                    ("VGPR_Count", "vgpr"), ("Accum_VGPR_Count", "accum_vgpr"),
                    ("SGPR_Count", "sgpr"), ("registers", "registers"),
                    ("LDS_Block_Size", "lds_bytes"), ("dyn_lds_bytes", "dyn_lds_bytes"),
                    ("Scratch_Size", "scratch_bytes")):
        add_int(K_KERNEL, nm, kt, col)
    ct = trace.copies
    for nm, col in (("corr_id", "correlation_id"), ("copy_bytes", "bytes"),
                    ("queue", "queue"), ("stream_ID", "stream"), ("pid", "pid"),
                    ("tid", "tid"), ("device", "device")):
        add_int(K_COPY, nm, ct, col)
    for nm, col in (("corr_id", "correlation_id"), ("tid", "tid"), ("pid", "pid"),
                    ("stream_ID", "stream")):
        add_int(K_API, nm, trace.api, col)
    for nm, col in (("tid", "tid"), ("pid", "pid"), ("stream_ID", "stream")):
        add_int(K_MARKER, nm, trace.markers, col)

    def add_agent(kind: int, nm: str, table, col: str):
        if not len(table) or not table.has(col):
            return
        vals, valid = _i64(table, col, 0)
        uniq = sorted(set(vals[valid].tolist()))
        pos = {v: i for i, v in enumerate(uniq)}
        codes = np.array([pos.get(v, 0) for v in vals.tolist()], dtype=np.int64) \
            if len(uniq) < 64 else np.searchsorted(np.array(uniq), vals)
        lookups.append((kind, nm, codes, [f"GPU-{v}" for v in uniq], valid))

    add_agent(K_KERNEL, "agent", kt, "device")
    add_agent(K_COPY, "src_agent", ct, "src_device")
    add_agent(K_COPY, "dst_agent", ct, "dst_device")
    add_agent(K_API, "agent", trace.api, "device")
    add_agent(K_MARKER, "agent", trace.markers, "device")
    if len(ct):
        dc, dcat = ct.codes("direction")
        lookups.append((K_COPY, "direction", dc, list(dcat), dc >= 0))

    for _, nm, *_ in ann_specs:
        aid(nm)
    for _, nm, *_ in lookups:
        aid(nm)

    # pre-encode DebugAnnotation{name_iid, string_value} per lookup entry
    def da_string(nm: str, text: str) -> bytes:
        body = _tag(1, 0) + _varint_py(ann_iid[nm]) + _tag(6, 2) + \
            _varint_py(len(text.encode())) + text.encode()
        return _tag(4, 2) + _varint_py(len(body)) + body

    # ---------------------------------------------------------------- events
    kinds, rows, etype, ts, key2 = [], [], [], [], []
    for k in (K_KERNEL, K_COPY, K_API, K_MARKER):
        n = len(tabs[k])
        if not n:
            continue
        s, e = starts[k], ends[k]
        r = np.arange(n, dtype=np.int64)
        inst = s == e
        kinds.append(np.full(n, k, np.int8))
        rows.append(r)
        etype.append(np.where(inst, _INSTANT, _BEGIN).astype(np.int8))
        ts.append(s)
        key2.append(-e)
        nz = np.nonzero(~inst)[0]
        kinds.append(np.full(len(nz), k, np.int8))
        rows.append(nz)
        etype.append(np.full(len(nz), _END, np.int8))
        ts.append(e[nz])
        key2.append(-s[nz])
    if kinds:
        ev_kind = np.concatenate(kinds)
        ev_row = np.concatenate(rows)
        ev_type = np.concatenate(etype)
        ev_ts = np.concatenate(ts)
        ev_k2 = np.concatenate(key2)
        order = np.lexsort((np.arange(len(ev_ts)), ev_k2, ev_type != _END, ev_ts))
    else:
        order = np.zeros(0, np.int64)
    progress(0.25)

    # ---------------------------------------------------------------- output
    tmp = path.with_name(path.name + ".part")
    try:
        with open(tmp, "wb") as fh:
            def emit(pkt) -> None:
                raw = pkt.SerializeToString()
                fh.write(b"\x0a" + _varint_py(len(raw)) + raw)

            for td in tracks:
                pkt = pb2.TracePacket(trusted_packet_sequence_id=SEQ_ID)
                pkt.track_descriptor.CopyFrom(td)
                emit(pkt)
            # interned data, in pieces of 20k entries
            entries = ([("n", s, i) for s, i in name_iid.items()]
                       + [("c", s, i) for s, i in cat_iid.items()]
                       + [("a", s, i) for s, i in ann_iid.items()])
            first = True
            for j in range(0, max(1, len(entries)), 20000):
                pkt = pb2.TracePacket(trusted_packet_sequence_id=SEQ_ID)
                pkt.sequence_flags = _SEQ_CLEARED if first else _SEQ_NEEDS
                idata = pkt.interned_data
                for what, s, i in entries[j:j + 20000]:
                    coll = {"n": idata.event_names, "c": idata.event_categories,
                            "a": idata.debug_annotation_names}[what]
                    coll.add(iid=i, name=s)
                first = False
                emit(pkt)
            total = len(order)
            for c0 in range(0, total, CHUNK):
                if cancelled():
                    raise Cancelled()
                sel = order[c0:c0 + CHUNK]
                fh.write(_encode_chunk(
                    ev_kind[sel], ev_row[sel], ev_type[sel], ev_ts[sel], track_of,
                    names_iid_col, cat1, cat2, ann_specs, lookups, ann_iid, da_string,
                    k_fid, k_link, c_fid, c_link, api_nflow, api_fptr, flat_fids))
                progress(0.25 + 0.75 * min(1.0, (c0 + CHUNK) / max(1, total)))
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    progress(1.0)


def _api_category(domain: str) -> str:
    d = domain.upper()
    for key, cat in (("HIP", "hip_api"), ("HSA", "hsa_api"), ("RCCL", "rccl_api"),
                     ("ROCDECODE", "rocdecode_api"), ("ROCJPEG", "rocjpeg_api"),
                     ("ROCSHMEM", "rocshmem_api"), ("OMPT", "openmp")):
        if d.startswith(key):
            return cat
    return "host_api"


def _gpu_leaf(key, lane, device_track, child) -> int:
    dev, q, s = (int(x) for x in key)
    parent = device_track(dev)
    if q >= 0:
        parent = child(parent, f"Queue {q}")
    if s >= 0:
        nm = f"Stream {s}"
    elif q >= 0:
        nm = "Work"
    else:
        nm = "Kernels and copies"
    return child(parent, nm if lane == 0 else f"{nm} #{lane + 1}")


def _assign_tracks(keys: list[np.ndarray], start: np.ndarray, end: np.ndarray,
                   leaf) -> np.ndarray:
    out = np.zeros(len(start), dtype=np.uint64)
    if not len(start):
        return out
    gid, uniq = _group_ids(keys)
    order = np.argsort(gid, kind="stable")
    bounds = np.searchsorted(gid[order], np.arange(len(uniq) + 1))
    for g in range(len(uniq)):
        idx = order[bounds[g]:bounds[g + 1]]
        lanes = _lanes(start[idx], end[idx])
        for ln in np.unique(lanes).tolist():
            out[idx[lanes == ln]] = leaf(tuple(uniq[g].tolist()), ln)
    return out


def _encode_chunk(kind, row, etype, ts, track_of, names_iid_col, cat1, cat2, ann_specs,
                  lookups, ann_iid, da_string, k_fid, k_link, c_fid, c_link, api_nflow,
                  api_fptr, flat_fids) -> bytes:
    n = len(kind)
    begin = etype != _END
    track = np.zeros(n, np.uint64)
    name = np.zeros(n, np.int64)
    c1 = np.zeros(n, np.int64)
    c2 = np.zeros(n, np.int64)
    has_c2 = np.zeros(n, bool)
    masks = {}
    for k in (K_KERNEL, K_COPY, K_API, K_MARKER):
        m = kind == k
        masks[k] = m & begin
        if not m.any():
            continue
        r = row[m]
        track[m] = track_of[k][r]
        mb = masks[k]
        rb = row[mb]
        name[mb] = names_iid_col[k][rb]
        c1[mb] = cat1[k][rb]
        if cat2[k] is not None:
            c2[mb] = cat2[k][rb]
            has_c2[mb] = True
    te: list[_Field] = [
        _Varint(_tag(9, 0), etype.astype(np.uint64)),
        _Varint(_tag(11, 0), track),
        _Varint(_tag(3, 0), c1, begin),
        _Varint(_tag(3, 0), c2, has_c2),
        _Varint(_tag(10, 0), name, begin & (name > 0)),
    ]
    da_tag = _tag(4, 2)
    for k, nm, vals, valid in ann_specs:
        mb = masks[k]
        if not mb.any():
            continue
        v = np.zeros(n, np.int64)
        pres = np.zeros(n, bool)
        v[mb] = vals[row[mb]]
        pres[mb] = valid[row[mb]]
        if not pres.any():
            continue
        # DebugAnnotation {name_iid = 1; int_value = 4}
        name_part = _tag(1, 0) + _varint_py(ann_iid[nm])
        vlen = _varint_len(v.view(np.uint64))
        body = len(name_part) + 1 + vlen
        # all bodies < 128 bytes: one length byte
        te.append(_Const(da_tag, n, pres))
        te.append(_Varint(b"", body.astype(np.uint64), pres))
        te.append(_Const(name_part, n, pres))
        te.append(_Varint(_tag(4, 0), v.view(np.uint64), pres))
    for k, nm, codes, table, valid in lookups:
        mb = masks[k]
        if not mb.any():
            continue
        cc = np.zeros(n, np.int64)
        pres = np.zeros(n, bool)
        cc[mb] = codes[row[mb]]
        pres[mb] = valid[row[mb]]
        if pres.any():
            te.append(_Lookup(cc, [da_string(nm, t) for t in table], pres))
    # flows: API begin -> flow_ids (one per launched item); kernel/copy -> terminating
    cnt = np.zeros(n, np.int64)
    ma = masks[K_API]
    if ma.any() and len(flat_fids):
        cnt[ma] = api_nflow[row[ma]]
        rows_a = np.nonzero(cnt)[0]
        flat = (np.concatenate([flat_fids[api_fptr[row[i]]:api_fptr[row[i]] + cnt[i]]
                                for i in rows_a.tolist()])
                if len(rows_a) < 64 else _gather_ragged(flat_fids, api_fptr[row[rows_a]],
                                                        cnt[rows_a]))
        te.append(_RaggedFixed64(_tag(47, 1), cnt, flat))
    term = np.zeros(n, np.uint64)
    tp = np.zeros(n, bool)
    for k, fid, link in ((K_KERNEL, k_fid, k_link), (K_COPY, c_fid, c_link)):
        mb = masks[k]
        if mb.any():
            term[mb] = fid[row[mb]]
            tp[mb] = link[row[mb]]
    if tp.any():
        te.append(_Fixed64(_tag(48, 1), term, tp))
    fields: list[_Field] = [
        _Varint(_tag(8, 0), ts.astype(np.uint64)),
        _Message(_tag(11, 2), te),
        _Const(_tag(10, 0) + _varint_py(SEQ_ID) + _tag(13, 0) + _varint_py(_SEQ_NEEDS), n),
    ]
    return _encode_rows(fields, n)


def _gather_ragged(flat: np.ndarray, ptr: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    total = int(cnt.sum())
    if not total:
        return np.zeros(0, flat.dtype)
    first = np.cumsum(cnt) - cnt
    rows = np.repeat(np.arange(len(cnt)), cnt)
    idx = ptr[rows] + (np.arange(total) - first[rows])
    return flat[idx]
