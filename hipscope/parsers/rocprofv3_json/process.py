"""One process object of a rocprofv3 JSON file as a trace."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa

from ...model import Trace, build_table, categorical, link_by_correlation
from .._common import copy_directions, nesting_depth, number_per_device
from ..base import TraceFormatError
from .records import CopyRec, Process

_API_LISTS = ("hip_api", "hsa_api", "rccl_api", "rocdecode_api", "rocjpeg_api",
              "hipfile_api", "rocshmem_api")
_MARKER_RANGE_KINDS = ("MARKER_CORE_API", "MARKER_CORE_RANGE_API")


class _Kinds:
    """Kind and operation names of buffer records (strings.buffer_records)."""

    def __init__(self, proc: Process):
        self.kinds = proc.strings.buffer_records

    def kind_name(self, k: int) -> str:
        kinds = self.kinds
        return kinds[k].kind if 0 <= k < len(kinds) else f"kind {k}"

    def op_name(self, k: int, op: int) -> str:
        kinds = self.kinds
        if 0 <= k < len(kinds) and 0 <= op < len(kinds[k].operations):
            return kinds[k].operations[op]
        return f"{self.kind_name(k)} op {op}"


class _Names:
    """Kernel names as categorical codes (first-seen order)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.idx: dict[str, int] = {}

    def code(self, nm: str) -> int:
        c = self.idx.setdefault(nm, len(self.names))
        if c == len(self.names):
            self.names.append(nm)
        return c


def _devices(proc: Process, host: str | None):
    """GPU agents in node-id order (rocprofv3's gpu_index order)."""
    gpus = sorted((a for a in proc.agents if a.type == 2),
                  key=lambda a: (a.node_id if a.node_id is not None else 1 << 30,
                                 a.id.handle))
    dev_of_handle = {a.id.handle: i for i, a in enumerate(gpus)}
    devices = build_table("devices", {
        "index": np.arange(len(gpus), dtype=np.int16),
        "name": [a.product_name or a.name or f"GPU {i}" for i, a in enumerate(gpus)],
        "vendor": ["AMD"] * len(gpus),
        "arch": [a.name or None for a in gpus],
        "compute_units": [a.cu_count for a in gpus],
        "raw_id": [str(a.node_id if a.node_id is not None else a.id.handle) for a in gpus],
        "host": [host] * len(gpus),
        "memory_bytes": [sum(b.size_in_bytes for b in a.mem_banks) or None for a in gpus],
    }, n=len(gpus))
    return dev_of_handle, devices


def _symbols(proc: Process, names: _Names) -> SimpleNamespace:
    """Per kernel_id: name code and register counts (-1 = unknown)."""
    sym_max = max((s.kernel_id for s in proc.kernel_symbols), default=-1)
    sym = SimpleNamespace(code=np.full(sym_max + 2, -1, dtype=np.int32),
                          vgpr=np.full(sym_max + 2, -1, np.int64),
                          agpr=np.full(sym_max + 2, -1, np.int64),
                          sgpr=np.full(sym_max + 2, -1, np.int64))
    for s in proc.kernel_symbols:
        if s.kernel_id < 0:
            continue
        sym.code[s.kernel_id] = names.code(
            s.formatted_kernel_name or s.kernel_name or f"kernel {s.kernel_id}")
        for arr, v in ((sym.vgpr, s.arch_vgpr_count), (sym.agpr, s.accum_vgpr_count),
                       (sym.sgpr, s.sgpr_count)):
            if v is not None:
                arr[s.kernel_id] = v
    return sym


def _kernel_records(recs: list) -> SimpleNamespace:
    nk = len(recs)
    cols = np.empty((15, nk), dtype=np.int64)
    stream_valid = np.zeros(nk, dtype=bool)
    for j, r in enumerate(recs):
        di = r.dispatch_info
        wg, gr = di.workgroup_size, di.grid_size
        st = r.stream_id
        if st is not None:
            stream_valid[j] = True
        cols[:, j] = (r.start_timestamp, r.end_timestamp, di.agent_id.handle,
                      di.queue_id.handle, st.handle if st is not None else 0,
                      r.thread_id, r.correlation_id.internal, di.dispatch_id,
                      di.kernel_id, gr.x, gr.y, gr.z, wg.x, wg.y, wg.z)
    k = SimpleNamespace(n=nk, stream_valid=stream_valid)
    (k.start, k.end, k.agent, k.qh, k.stream, k.tid, k.corr, k.disp, k.kid,
     k.gx, k.gy, k.gz, k.bx, k.by, k.bz) = cols
    if nk and k.stream.max(initial=0) > np.iinfo(np.int32).max:
        _, k.stream = np.unique(k.stream, return_inverse=True)
    k.lds = np.fromiter((r.dispatch_info.group_segment_size for r in recs), np.int64, nk)
    k.scr = np.fromiter((r.dispatch_info.private_segment_size for r in recs), np.int64, nk)
    return k


def _kernel_codes(k: SimpleNamespace, recs: list, sym, names: _Names, rename: dict | None
                  ) -> np.ndarray:
    kid_ok = (k.kid >= 0) & (k.kid < len(sym.code))
    codes = np.where(kid_ok, sym.code[np.clip(k.kid, 0, len(sym.code) - 1)], -1)
    missing = codes < 0
    if missing.any():
        for j in np.nonzero(missing)[0].tolist():
            codes[j] = names.code(f"kernel {int(k.kid[j])}")
    if rename:
        for j, r in enumerate(recs):
            ext = r.correlation_id.external
            if ext and ext in rename:
                codes[j] = names.code(rename[ext])
    return codes


def _queues(k: SimpleNamespace):
    """Small queue ids per device, in handle order."""
    k_queue, (q_dev, q_handle), q_small = number_per_device(k.dev, k.qh)
    queues = build_table("queues", {
        "device": q_dev.astype(np.int16), "queue": q_small.astype(np.int32),
        "raw_id": [str(h) for h in q_handle.tolist()],
    }, n=len(q_dev))
    return k_queue, queues


def _api_and_markers(proc: Process, kinds: _Kinds) -> tuple[SimpleNamespace, SimpleNamespace]:
    a = SimpleNamespace(name=[], dom=[], rows=[])
    m = SimpleNamespace(name=[], rows=[])
    messages = {kv.key: kv.value for kv in proc.strings.marker_api}
    for lst in _API_LISTS:
        for r in getattr(proc.buffer_records, lst):
            a.name.append(kinds.op_name(r.kind, r.operation))
            a.dom.append(kinds.kind_name(r.kind))
            a.rows.append((r.start_timestamp, r.end_timestamp, r.thread_id,
                           r.correlation_id.internal))
    for r in proc.buffer_records.marker_api:
        kn = kinds.kind_name(r.kind)
        if kn in _MARKER_RANGE_KINDS:
            m.name.append(messages.get(r.correlation_id.internal)
                          or kinds.op_name(r.kind, r.operation))
            m.rows.append((r.start_timestamp, r.end_timestamp, r.thread_id))
        else:  # roctx control/naming calls are API calls, not annotations
            a.name.append(kinds.op_name(r.kind, r.operation))
            a.dom.append(kn)
            a.rows.append((r.start_timestamp, r.end_timestamp, r.thread_id,
                           r.correlation_id.internal))
    return a, m


def _api_table(a: SimpleNamespace, pid):
    na = len(a.rows)
    a_arr = np.array(a.rows, dtype=np.int64).reshape(na, 4)
    a_start, a_end, a_tid, a.corr = a_arr.T
    return build_table("api", {
        "name": a.name, "domain": a.dom, "start": a_start,
        "end": a_end,
        "pid": None if pid is None else np.full(na, pid, np.int32), "tid": a_tid,
        "correlation_id": a.corr,
    }, n=na)


def _marker_table(m: SimpleNamespace, pid):
    nm_ = len(m.rows)
    m_arr = np.array(m.rows, dtype=np.int64).reshape(nm_, 3)
    m_start, m_end, m_tid = m_arr.T
    return build_table("markers", {
        "name": m.name, "domain": ["roctx"] * nm_, "start": m_start, "end": m_end,
        "depth": nesting_depth(m_start, m_end, m_tid),
        "pid": None if pid is None else np.full(nm_, pid, np.int32), "tid": m_tid,
    }, n=nm_)


def _kernel_table(k: SimpleNamespace, codes, names: _Names, sym, a_corr, pid):
    nk = k.n
    k_api = link_by_correlation(k.corr, None, a_corr, None)
    return build_table("kernels", {
        "name": categorical(codes, names.names), "device": k.dev.astype(np.int16),
        "start": k.start, "end": k.end,
        "queue": k.queue.astype(np.int32),
        "stream": pa.array(k.stream, mask=~k.stream_valid, type=pa.int64())
        if nk and not k.stream_valid.all() else k.stream,
        "pid": None if pid is None else np.full(nk, pid, np.int32),
        "tid": k.tid, "correlation_id": k.corr, "dispatch_id": k.disp,
        "api_index": pa.array(k_api, mask=k_api < 0) if nk else None,
        "grid_x": k.gx, "grid_y": k.gy, "grid_z": k.gz,
        "block_x": k.bx, "block_y": k.by, "block_z": k.bz,
        "vgpr": _per_kernel(sym.vgpr, k.kid), "accum_vgpr": _per_kernel(sym.agpr, k.kid),
        "sgpr": _per_kernel(sym.sgpr, k.kid),
        "lds_bytes": k.lds, "scratch_bytes": k.scr,
    }, n=nk)


def _meta(name: str, path: Path, md, pid, host, rename: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "format": name, "sources": [str(path)], "clock": "CLOCK_BOOTTIME",
        "tool": "rocprofv3",
        "pids": [pid] if pid is not None else [],
        "provenance": {
            "kernels.name": "kernel_symbols[kernel_id].formatted_kernel_name "
                            "(as rocprofv3 CSV Kernel_Name)"
                            + ("; kernel-rename names from strings.correlation_id.external"
                               if rename else ""),
            "kernels.queue": "dispatch_info.queue_id.handle, numbered per device",
            "kernels.api_index": "correlation_id.internal within the process",
            "devices.raw_id": "agent node_id",
            "markers.name": "strings.marker_api[correlation_id.internal]",
        },
    }
    if host:
        meta["host"] = host
    if md.command:
        meta["command"] = (" ".join(md.command) if isinstance(md.command, list)
                           else str(md.command))
    if md.config:
        meta["config"] = md.config
    if md.init_time is not None:
        meta["init_time"] = md.init_time
    if md.fini_time is not None:
        meta["fini_time"] = md.fini_time
    return meta


def process(name: str, path: Path, proc: Process) -> Trace:
    """The trace of one process object (``rocprofiler-sdk-tool[i]``)."""
    md = proc.metadata
    pid = md.pid
    host = md.node.hostname if md.node else None
    kinds = _Kinds(proc)
    dev_of_handle, devices = _devices(proc, host)
    rename = bool((md.config or {}).get("kernel_rename"))
    names = _Names()
    sym = _symbols(proc, names)
    rename_names = {kv.key: kv.value for kv in proc.strings.correlation_id.external}
    recs = proc.buffer_records.kernel_dispatch
    k = _kernel_records(recs)
    codes = _kernel_codes(k, recs, sym, names, rename_names if rename else None)
    k.dev = _agent_to_device(path, k.agent, dev_of_handle, "kernel_dispatch")
    k.queue, queues = _queues(k)
    a, m = _api_and_markers(proc, kinds)
    api = _api_table(a, pid)
    kernels = _kernel_table(k, codes, names, sym, a.corr, pid)
    sv = k.stream_valid
    streams = _streams(k.stream[sv], k.dev[sv], k.queue[sv], pid)
    markers = _marker_table(m, pid)
    copies = _copies(path, proc.buffer_records.memory_copy, kinds.op_name, dev_of_handle,
                     a.corr, pid)
    counters = _counters(proc, k.disp, k.corr)
    return Trace(kernels=kernels, api=api, copies=copies, markers=markers,
                 counters=counters, devices=devices, queues=queues, streams=streams,
                 meta=_meta(name, path, md, pid, host, rename))


def _per_kernel(table: np.ndarray, kid: np.ndarray):
    if len(kid) == 0:
        return None
    ok = (kid >= 0) & (kid < len(table))
    vals = np.where(ok, table[np.clip(kid, 0, len(table) - 1)], -1)
    if (vals < 0).all():
        return None
    return pa.array(vals, mask=vals < 0)

def _agent_to_device(path: Path, handles: np.ndarray, dev_of_handle: dict[int, int],
                     what: str, allow_cpu: bool = False) -> np.ndarray:
    out = np.full(len(handles), -1, dtype=np.int64)
    for h, d in dev_of_handle.items():
        out[handles == h] = d
    if not allow_cpu and (out < 0).any():
        bad = int(handles[np.nonzero(out < 0)[0][0]])
        raise TraceFormatError(path, f"buffer_records.{what}",
                               "agent_id.handle of a GPU agent listed in agents",
                               f"handle {bad}")
    return out

def _streams(stream: np.ndarray, dev: np.ndarray, queue: np.ndarray, pid):
    if len(stream) == 0:
        return build_table("streams", {}, n=0)
    ids = np.unique(stream)
    rows_dev, rows_q = [], []
    for s in ids.tolist():
        m = stream == s
        d = np.unique(dev[m])
        q = np.unique(queue[m])
        rows_dev.append(int(d[0]) if len(d) == 1 else None)
        rows_q.append(int(q[0]) if len(q) == 1 and len(d) == 1 else None)
    return build_table("streams", {
        "stream": ids.astype(np.int32), "device": rows_dev, "queue": rows_q,
        "pid": None if pid is None else [pid] * len(ids),
        "raw_id": [str(s) for s in ids.tolist()],
        "name": ["Default Stream" if s == 0 else f"Stream {s}" for s in ids.tolist()],
    }, n=len(ids))

def _copies(path, recs: list[CopyRec], op_name, dev_of_handle, a_corr, pid):
    n = len(recs)
    if n == 0:
        return build_table("copies", {}, n=0)
    names = [op_name(r.kind, r.operation) for r in recs]
    direction = copy_directions(names)
    arr = np.array([(r.start_timestamp, r.end_timestamp, r.thread_id,
                     r.correlation_id.internal,
                     r.src_agent_id.handle if r.src_agent_id else -1,
                     r.dst_agent_id.handle if r.dst_agent_id else -1,
                     r.bytes if r.bytes is not None else -1,
                     r.stream_id.handle if r.stream_id else -1) for r in recs],
                   dtype=np.int64)
    start, end, tid, corr, src_h, dst_h, nbytes, stream = arr.T
    src = _agent_to_device(path, src_h, dev_of_handle, "memory_copy", True)
    dst = _agent_to_device(path, dst_h, dev_of_handle, "memory_copy", True)
    # the engine that ran it: the GPU side (source GPU for DtoD/PtoP)
    dev = np.where(src >= 0, src, dst)
    dev = np.where(np.array([d == "HtoD" for d in direction]) & (dst >= 0), dst, dev)
    api_idx = link_by_correlation(corr, None, a_corr, None)
    return build_table("copies", {
        "direction": direction, "start": start, "end": end,
        "name": names, "bytes": pa.array(nbytes, mask=nbytes < 0),
        "device": pa.array(dev, mask=dev < 0, type=pa.int64()),
        "src_device": pa.array(src, mask=src < 0, type=pa.int64()),
        "dst_device": pa.array(dst, mask=dst < 0, type=pa.int64()),
        "stream": pa.array(stream, mask=stream < 0),
        "pid": None if pid is None else np.full(n, pid, np.int32),
        "tid": tid, "correlation_id": corr,
        "api_index": pa.array(api_idx, mask=api_idx < 0),
    }, n=n)

def _counters(proc: Process, k_disp: np.ndarray, k_corr: np.ndarray):
    recs = proc.callback_records.counter_collection
    if not recs:
        return build_table("counters", {}, n=0)
    cname = {c.id.handle: c.name for c in proc.counters}
    names: list[str] = []
    values: list[float] = []
    disp: list[int] = []
    for r in recs:
        d = r.dispatch_data.dispatch_info.dispatch_id
        # sum over dimension instances, as rocprofv3's counter_collection.csv does
        acc: dict[int, float] = {}
        for v in r.records:
            acc[v.counter_id.handle] = acc.get(v.counter_id.handle, 0.0) + v.value
        for h, v in acc.items():
            names.append(cname.get(h, f"counter {h}"))
            values.append(v)
            disp.append(d)
    disp_a = np.array(disp, dtype=np.int64)
    kidx = np.full(len(disp_a), -1, np.int64)
    if len(k_disp):
        order = np.argsort(k_disp, kind="stable")
        pos = np.clip(np.searchsorted(k_disp[order], disp_a), 0, len(order) - 1)
        hit = k_disp[order][pos] == disp_a
        kidx = np.where(hit, order[pos], -1)
    return build_table("counters", {
        "counter": names, "value": np.array(values, dtype=np.float64),
        "kernel_index": pa.array(kidx, mask=kidx < 0) if (kidx >= 0).any() else None,
        "dispatch_id": disp_a,
    }, n=len(names))
