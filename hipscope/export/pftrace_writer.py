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

The event packets are encoded column-wise with numpy (no Python object per event;
:mod:`hipscope.export.pftrace_fields`), one encoder per table: each chunk of events in
time order is split into the begin packets of each table and the end packets, each
group encoded on its own rows only, written at its rows' places of one buffer.
The track tree is :mod:`hipscope.export.pftrace_layout`. ``hipscope.parsers.pftrace``
reads the result back.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..model import Trace
from .pftrace_fields import (
    Const,
    Field,
    Fixed64,
    Lookup,
    Message,
    RaggedFixed64,
    Varint,
    encode_groups,
    field_tag,
    gather_ragged,
    varint_len,
    varint_py,
)
from .pftrace_layout import K_API, K_COPY, K_KERNEL, K_MARKER, Layout, i64

CHUNK = 1 << 18  # events encoded per numpy pass

_BEGIN, _END, _INSTANT = 1, 2, 3
SEQ_ID = 1
_SEQ_CLEARED, _SEQ_NEEDS = 1, 2
_KINDS = (K_KERNEL, K_COPY, K_API, K_MARKER)

# (annotation, column) per table, as rocprofv3 names them where the meaning is the same
_INT_ANNS = {
    K_KERNEL: (("corr_id", "correlation_id"), ("queue", "queue"), ("stream_ID", "stream"),
               ("pid", "pid"), ("tid", "tid"), ("dispatch_id", "dispatch_id"),
               ("dispatch_ns", "dispatch_ns"), ("grid_x", "grid_x"), ("grid_y", "grid_y"),
               ("grid_z", "grid_z"), ("block_x", "block_x"), ("block_y", "block_y"),
               ("block_z", "block_z"), ("VGPR_Count", "vgpr"),
               ("Accum_VGPR_Count", "accum_vgpr"), ("SGPR_Count", "sgpr"),
               ("registers", "registers"), ("LDS_Block_Size", "lds_bytes"),
               ("dyn_lds_bytes", "dyn_lds_bytes"), ("Scratch_Size", "scratch_bytes")),
    K_COPY: (("corr_id", "correlation_id"), ("copy_bytes", "bytes"), ("queue", "queue"),
             ("stream_ID", "stream"), ("pid", "pid"), ("tid", "tid"), ("device", "device")),
    K_API: (("corr_id", "correlation_id"), ("tid", "tid"), ("pid", "pid"),
            ("stream_ID", "stream")),
    K_MARKER: (("tid", "tid"), ("pid", "pid"), ("stream_ID", "stream")),
}
_AGENT_ANNS = ((K_KERNEL, "agent", "device"), (K_COPY, "src_agent", "src_device"),
               (K_COPY, "dst_agent", "dst_device"), (K_API, "agent", "device"),
               (K_MARKER, "agent", "device"))


def write_pftrace(trace: Trace, path: str | os.PathLike,
                  progress: Callable[[float], None] | None = None,
                  cancelled: Callable[[], bool] | None = None) -> None:
    """Write ``trace`` as a Perfetto protobuf trace at ``path``."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb2

    progress = progress or (lambda f: None)
    cancelled = cancelled or (lambda: False)
    path = Path(path)
    enc = _Encoding(trace, pb2)
    progress(0.25)
    tmp = path.with_name(path.name + ".part")
    try:
        with open(tmp, "wb") as fh:
            enc.write(fh, progress, cancelled)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    progress(1.0)


class _Encoding:
    """Everything the packets of one export need, computed column-wise once."""

    def __init__(self, trace: Trace, pb2):
        self.trace, self.pb2 = trace, pb2
        self.tabs = {K_KERNEL: trace.kernels, K_COPY: trace.copies, K_API: trace.api,
                     K_MARKER: trace.markers}
        self._times()
        self._names()
        self._categories()
        layout = Layout(trace, pb2)
        self.track_of: dict[int, np.ndarray] = {}
        layout.gpu(self.tabs, self.starts, self.ends, self.track_of)
        layout.host(self.tabs, self.starts, self.ends, self.track_of)
        self.tracks = layout.tracks
        self._flows()
        self._annotations()
        self._events()

    # ------------------------------------------------------------------ columns
    def _times(self) -> None:
        """Slice starts and ends (ends never before starts), shifted to be >= 0."""
        starts, ends = {}, {}
        for k, t in self.tabs.items():
            starts[k] = t.numpy("start", fill=0).astype(np.int64) if len(t) else \
                np.zeros(0, np.int64)
            ends[k] = np.maximum(t.numpy("end", fill=0).astype(np.int64), starts[k]) \
                if len(t) else np.zeros(0, np.int64)
        lo = min([int(v.min()) for v in starts.values() if len(v)] or [0])
        shift = -lo if lo < 0 else 0
        self.starts = {k: v + shift for k, v in starts.items()}
        self.ends = {k: v + shift for k, v in ends.items()}

    def _names(self) -> None:
        """Interned event names (a copy without a name is named by its direction)."""
        self.name_iid: dict[str, int] = {}
        self.names_iid_col = {}
        for k, t in self.tabs.items():
            if not len(t):
                self.names_iid_col[k] = np.zeros(0, np.int64)
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
            m = np.array([self.name_iid.setdefault(c, len(self.name_iid) + 1)
                          for c in cats] or [0], dtype=np.int64)
            self.names_iid_col[k] = np.where(codes >= 0, m[np.maximum(codes, 0)], 0)

    def cid(self, c: str) -> int:
        return self.cat_iid.setdefault(c, len(self.cat_iid) + 1)

    def _categories(self) -> None:
        """First category per slice (rocprofv3's) and a second one (the domain)."""
        trace, cid = self.trace, self.cid
        self.cat_iid: dict[str, int] = {}
        cid("hipscope")  # marks files written here (hipscope.parsers.pftrace reads it)
        if trace.meta.get("clock"):
            cid(f"hipscope-clock:{trace.meta['clock']}")
        cat1 = {K_KERNEL: np.full(len(trace.kernels), cid("kernel_dispatch"), np.int64),
                K_COPY: np.full(len(trace.copies), cid("memory_copy"), np.int64)}
        cat2 = {K_KERNEL: None, K_COPY: None}
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
        self.cat1, self.cat2 = cat1, cat2

    def _flows(self) -> None:
        """One flow id per launched kernel/copy: on it (terminating) and on its call."""
        trace = self.trace
        na, nk = len(trace.api), len(trace.kernels)
        k_api, k_link = i64(trace.kernels, "api_index")
        c_api, c_link = i64(trace.copies, "api_index")
        k_link &= (k_api >= 0) & (k_api < na)
        c_link &= (c_api >= 0) & (c_api < na)
        self.k_fid = np.arange(1, nk + 1, dtype=np.uint64)
        self.c_fid = np.arange(nk + 1, nk + 1 + len(trace.copies), dtype=np.uint64)
        self.k_link, self.c_link = k_link, c_link
        child_api = np.concatenate([k_api[k_link], c_api[c_link]])
        child_fid = np.concatenate([self.k_fid[k_link], self.c_fid[c_link]])
        o = np.argsort(child_api, kind="stable")
        self.flat_fids = child_fid[o]
        self.api_nflow = np.bincount(child_api, minlength=na).astype(np.int64) if na else \
            np.zeros(0, np.int64)
        self.api_fptr = np.cumsum(self.api_nflow) - self.api_nflow

    def _annotations(self) -> None:
        """Integer annotations and pre-encoded string ones (agents, direction)."""
        self.ann_specs: list[tuple[int, str, np.ndarray, np.ndarray]] = []
        self.lookups: list[tuple[int, str, np.ndarray, list[str], np.ndarray]] = []
        for k, pairs in _INT_ANNS.items():
            t = self.tabs[k]
            for nm, col in pairs:
                if len(t) and t.has(col):
                    vals, valid = i64(t, col, 0)
                    self.ann_specs.append((k, nm, vals, valid))
        for k, nm, col in _AGENT_ANNS:
            t = self.tabs[k]
            if len(t) and t.has(col):
                self.lookups.append(_agent_lookup(k, nm, t, col))
        ct = self.trace.copies
        if len(ct):
            dc, dcat = ct.codes("direction")
            self.lookups.append((K_COPY, "direction", dc, list(dcat), dc >= 0))
        self.ann_iid: dict[str, int] = {}
        for _, nm, *_ in self.ann_specs + self.lookups:
            self.ann_iid.setdefault(nm, len(self.ann_iid) + 1)
        self.lookup_raw = [[self._da_string(nm, text) for text in table]
                           for _, nm, _, table, _ in self.lookups]

    def _da_string(self, nm: str, text: str) -> bytes:
        """DebugAnnotation{name_iid, string_value} as a TrackEvent field."""
        raw = text.encode()
        body = field_tag(1, 0) + varint_py(self.ann_iid[nm]) + field_tag(6, 2) + \
            varint_py(len(raw)) + raw
        return field_tag(4, 2) + varint_py(len(body)) + body

    def _events(self) -> None:
        """BEGIN (or INSTANT) and END events of every slice, in file order."""
        kinds, rows, etype, ts, key2 = [], [], [], [], []
        for k in _KINDS:
            n = len(self.tabs[k])
            if not n:
                continue
            s, e = self.starts[k], self.ends[k]
            inst = s == e
            nz = np.nonzero(~inst)[0]
            kinds += [np.full(n, k, np.int8), np.full(len(nz), k, np.int8)]
            rows += [np.arange(n, dtype=np.int64), nz]
            etype += [np.where(inst, _INSTANT, _BEGIN).astype(np.int8),
                      np.full(len(nz), _END, np.int8)]
            ts += [s, e[nz]]
            key2 += [-e, -s[nz]]
        if kinds:
            self.ev_kind, self.ev_row = np.concatenate(kinds), np.concatenate(rows)
            self.ev_type, self.ev_ts = np.concatenate(etype), np.concatenate(ts)
            ev_k2 = np.concatenate(key2)
            self.order = np.lexsort((np.arange(len(self.ev_ts)), ev_k2,
                                     self.ev_type != _END, self.ev_ts))
        else:
            self.order = np.zeros(0, np.int64)

    # ------------------------------------------------------------------ output
    def write(self, fh, progress, cancelled) -> None:
        from ..model.progress import check_cancel

        pb2 = self.pb2

        def emit(pkt) -> None:
            raw = pkt.SerializeToString()
            fh.write(b"\x0a" + varint_py(len(raw)) + raw)

        for td in self.tracks:
            pkt = pb2.TracePacket(trusted_packet_sequence_id=SEQ_ID)
            pkt.track_descriptor.CopyFrom(td)
            emit(pkt)
        for pkt in self._interned_packets():
            emit(pkt)
        total = len(self.order)
        for c0 in range(0, total, CHUNK):
            check_cancel(cancelled)
            fh.write(self._chunk(self.order[c0:c0 + CHUNK]))
            progress(0.25 + 0.75 * min(1.0, (c0 + CHUNK) / max(1, total)))

    def _interned_packets(self) -> list:
        """The interned names, categories and annotation names, 20k entries a packet
        (the first one clears the sequence's incremental state)."""
        entries = ([("n", s, i) for s, i in self.name_iid.items()]
                   + [("c", s, i) for s, i in self.cat_iid.items()]
                   + [("a", s, i) for s, i in self.ann_iid.items()])
        out = []
        for j in range(0, max(1, len(entries)), 20000):
            pkt = self.pb2.TracePacket(trusted_packet_sequence_id=SEQ_ID)
            pkt.sequence_flags = _SEQ_CLEARED if j == 0 else _SEQ_NEEDS
            idata = pkt.interned_data
            for what, s, i in entries[j:j + 20000]:
                coll = {"n": idata.event_names, "c": idata.event_categories,
                        "a": idata.debug_annotation_names}[what]
                coll.add(iid=i, name=s)
            out.append(pkt)
        return out

    def _chunk(self, sel: np.ndarray) -> bytes:
        """The packets of events ``sel``: the begin packets of each table and the end
        packets encoded as separate groups, in ``sel``'s order."""
        kind, row = self.ev_kind[sel], self.ev_row[sel]
        etype, ts = self.ev_type[sel], self.ev_ts[sel]
        begin = etype != _END
        groups = []
        for k in _KINDS:
            idx = np.nonzero(begin & (kind == k))[0]
            if len(idx):
                groups.append((idx, self._packet(ts[idx], etype[idx], self.track_of[k][
                    row[idx]], self._begin_fields(k, row[idx]))))
        idx = np.nonzero(~begin)[0]
        if len(idx):
            track = np.zeros(len(idx), np.uint64)
            for k in _KINDS:
                m = kind[idx] == k
                track[m] = self.track_of[k][row[idx][m]]
            groups.append((idx, self._packet(ts[idx], etype[idx], track, [])))
        return encode_groups(groups, len(sel))

    @staticmethod
    def _packet(ts, etype, track, extra: list[Field]) -> list[Field]:
        """TracePacket{timestamp, track_event{type, track_uuid, extra...}, sequence}."""
        n = len(ts)
        te = [Varint(field_tag(9, 0), etype.astype(np.uint64)), Varint(field_tag(11, 0), track)]
        return [Varint(field_tag(8, 0), ts.astype(np.uint64)),
                Message(field_tag(11, 2), te + extra),
                Const(field_tag(10, 0) + varint_py(SEQ_ID) + field_tag(13, 0) +
                      varint_py(_SEQ_NEEDS), n)]

    def _begin_fields(self, k: int, rows: np.ndarray) -> list[Field]:
        """The TrackEvent fields after type and track of table ``k``'s begin events:
        categories, name, annotations, flows."""
        n = len(rows)
        name = self.names_iid_col[k][rows]
        te: list[Field] = [Varint(field_tag(3, 0), self.cat1[k][rows])]
        if self.cat2[k] is not None:
            te.append(Varint(field_tag(3, 0), self.cat2[k][rows]))
        te.append(Varint(field_tag(10, 0), name, name > 0))
        da_tag = field_tag(4, 2)
        for kk, nm, vals, valid in self.ann_specs:
            if kk != k:
                continue
            pres = valid[rows]
            if not pres.any():
                continue
            v = np.where(pres, vals[rows], 0)
            # DebugAnnotation {name_iid = 1; int_value = 4}; bodies < 128 bytes
            name_part = field_tag(1, 0) + varint_py(self.ann_iid[nm])
            body = len(name_part) + 1 + varint_len(v.view(np.uint64))
            te += [Const(da_tag, n, pres), Varint(b"", body.astype(np.uint64), pres),
                   Const(name_part, n, pres), Varint(field_tag(4, 0), v.view(np.uint64), pres)]
        for (kk, _nm, codes, _table, valid), raw in zip(self.lookups, self.lookup_raw):
            if kk == k:
                pres = valid[rows]
                if pres.any():
                    te.append(Lookup(np.where(pres, codes[rows], 0), raw, pres))
        te += self._flow_fields(k, rows)
        return te

    def _flow_fields(self, k: int, rows: np.ndarray) -> list[Field]:
        """API call -> flow_ids (one per launched item); kernel/copy -> terminating."""
        if k == K_API:
            if not len(self.flat_fids):
                return []
            cnt = self.api_nflow[rows]
            rows_a = np.nonzero(cnt)[0]
            if not len(rows_a):
                return []
            flat = gather_ragged(self.flat_fids, self.api_fptr[rows[rows_a]], cnt[rows_a])
            return [RaggedFixed64(field_tag(47, 1), cnt, flat)]
        if k in (K_KERNEL, K_COPY):
            fid, link = (self.k_fid, self.k_link) if k == K_KERNEL else \
                (self.c_fid, self.c_link)
            tp = link[rows]
            if tp.any():
                return [Fixed64(field_tag(48, 1), fid[rows], tp)]
        return []


def _agent_lookup(k: int, nm: str, table, col: str) -> tuple:
    """'GPU-<i>' string annotations of a device column: codes into the distinct ones."""
    vals, valid = i64(table, col, 0)
    uniq = sorted(set(vals[valid].tolist()))
    pos = {v: i for i, v in enumerate(uniq)}
    codes = np.array([pos.get(v, 0) for v in vals.tolist()], dtype=np.int64) \
        if len(uniq) < 64 else np.searchsorted(np.array(uniq), vals)
    return (k, nm, codes, [f"GPU-{v}" for v in uniq], valid)


def _api_category(domain: str) -> str:
    d = domain.upper()
    for key, cat in (("HIP", "hip_api"), ("HSA", "hsa_api"), ("RCCL", "rccl_api"),
                     ("ROCDECODE", "rocdecode_api"), ("ROCJPEG", "rocjpeg_api"),
                     ("ROCSHMEM", "rocshmem_api"), ("OMPT", "openmp")):
        if d.startswith(key):
            return cat
    return "host_api"
