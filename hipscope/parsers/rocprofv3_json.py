"""rocprofv3 JSON (``--output-format json``, ``<pid>_results.json[.gz]``).

Layout (rocprofiler-sdk ``source/lib/output/generateJSON.cpp``, schema
``source/docs/rocprofv3-schema.json``)::

    {"rocprofiler-sdk-tool": [ {one object per process:
        metadata {node{hostname,...}, pid, init_time, fini_time, command[], config{}},
        agents [{id{handle}, type 1=CPU 2=GPU, node_id, logical_node_id, name, product_name,
                 cu_count, mem_banks[{size_in_bytes}], ...}],
        counters [{id{handle}, name, ...}],
        strings {buffer_records [{kind, operations[]}] (indexed by kind, then operation),
                 marker_api [{key: correlation_id.internal, value: roctx message}],
                 correlation_id {external [{key, value}]} (kernel-rename names)},
        kernel_symbols [{kernel_id, kernel_name (mangled, ".kd"), formatted_kernel_name, ...}],
        callback_records {counter_collection [{dispatch_data{correlation_id, dispatch_info},
                                               records [{counter_id{handle}, value}], ...}]},
        buffer_records {kernel_dispatch, hip_api, hsa_api, marker_api, rccl_api, memory_copy,
                        rocdecode_api, rocjpeg_api, ...}}]}

All timestamps are CLOCK_BOOTTIME nanoseconds. Kernel names are
``formatted_kernel_name`` -- what rocprofv3's CSV prints as Kernel_Name
(``metadata::get_kernel_name`` returns it), or the kernel-rename string when the run used
``--kernel-rename`` (then ``correlation_id.external`` keys ``strings.correlation_id.external``).
Kernels and copies link to the API call with the same ``correlation_id.internal`` in the
same process.
"""

from __future__ import annotations

import gc
import re
import zlib
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from ..model import Trace, build_table, categorical, link_by_correlation, merge_traces
from .base import (
    TraceFormatError,
    check_cancel,
    head_text,
    read_bytes_tolerant,
    register,
)

# --------------------------------------------------------------------------- typed records


class _Handle(msgspec.Struct):
    handle: int = 0


class _Corr(msgspec.Struct):
    internal: int = 0
    external: int = 0


class _Dim3(msgspec.Struct):
    x: int = 0
    y: int = 0
    z: int = 0


class _DispatchInfo(msgspec.Struct):
    agent_id: _Handle
    queue_id: _Handle = msgspec.field(default_factory=_Handle)
    kernel_id: int = 0
    dispatch_id: int = 0
    private_segment_size: int = 0
    group_segment_size: int = 0
    workgroup_size: _Dim3 = msgspec.field(default_factory=_Dim3)
    grid_size: _Dim3 = msgspec.field(default_factory=_Dim3)


class _KernelRec(msgspec.Struct):
    start_timestamp: int
    end_timestamp: int
    dispatch_info: _DispatchInfo
    kind: int = 0
    operation: int = 0
    thread_id: int = 0
    correlation_id: _Corr = msgspec.field(default_factory=_Corr)
    stream_id: _Handle | None = None


class _ApiRec(msgspec.Struct):
    kind: int
    operation: int
    start_timestamp: int
    end_timestamp: int
    thread_id: int = 0
    correlation_id: _Corr = msgspec.field(default_factory=_Corr)


class _CopyRec(msgspec.Struct):
    kind: int
    operation: int
    start_timestamp: int
    end_timestamp: int
    thread_id: int = 0
    correlation_id: _Corr = msgspec.field(default_factory=_Corr)
    src_agent_id: _Handle | None = None
    dst_agent_id: _Handle | None = None
    bytes: int | None = None
    stream_id: _Handle | None = None


class _CounterValue(msgspec.Struct):
    counter_id: _Handle
    value: float = 0.0


class _DispatchData(msgspec.Struct):
    dispatch_info: _DispatchInfo
    correlation_id: _Corr = msgspec.field(default_factory=_Corr)


class _CounterRec(msgspec.Struct):
    dispatch_data: _DispatchData
    records: list[_CounterValue] = []
    thread_id: int = 0


class _KindNames(msgspec.Struct):
    kind: str = ""
    operations: list[str] = []


class _KeyValue(msgspec.Struct):
    key: int
    value: str


class _CorrStrings(msgspec.Struct):
    external: list[_KeyValue] = []


class _Strings(msgspec.Struct):
    buffer_records: list[_KindNames] = []
    marker_api: list[_KeyValue] = []
    correlation_id: _CorrStrings = msgspec.field(default_factory=_CorrStrings)


class _MemBank(msgspec.Struct):
    size_in_bytes: int = 0


class _Agent(msgspec.Struct):
    id: _Handle
    type: int = 0
    node_id: int | None = None
    logical_node_id: int | None = None
    name: str = ""
    product_name: str = ""
    vendor_name: str = ""
    cu_count: int | None = None
    mem_banks: list[_MemBank] = []


class _KernelSymbol(msgspec.Struct):
    kernel_id: int
    kernel_name: str = ""
    formatted_kernel_name: str | None = None
    demangled_kernel_name: str | None = None
    sgpr_count: int | None = None
    arch_vgpr_count: int | None = None
    accum_vgpr_count: int | None = None


class _Counter(msgspec.Struct):
    id: _Handle
    name: str = ""


class _Node(msgspec.Struct):
    hostname: str | None = None


class _Metadata(msgspec.Struct):
    pid: int | None = None
    init_time: int | None = None
    fini_time: int | None = None
    command: list[str] | str | None = None
    node: _Node | None = None
    config: dict[str, Any] | None = None


class _Callbacks(msgspec.Struct):
    counter_collection: list[_CounterRec] = []


class _Buffers(msgspec.Struct):
    kernel_dispatch: list[_KernelRec] = []
    hip_api: list[_ApiRec] = []
    hsa_api: list[_ApiRec] = []
    marker_api: list[_ApiRec] = []
    rccl_api: list[_ApiRec] = []
    rocdecode_api: list[_ApiRec] = []
    rocjpeg_api: list[_ApiRec] = []
    hipfile_api: list[_ApiRec] = []
    rocshmem_api: list[_ApiRec] = []
    memory_copy: list[_CopyRec] = []


class _Process(msgspec.Struct):
    metadata: _Metadata = msgspec.field(default_factory=_Metadata)
    agents: list[_Agent] = []
    counters: list[_Counter] = []
    strings: _Strings = msgspec.field(default_factory=_Strings)
    kernel_symbols: list[_KernelSymbol] = []
    callback_records: _Callbacks = msgspec.field(default_factory=_Callbacks)
    buffer_records: _Buffers = msgspec.field(default_factory=_Buffers)


class _Top(msgspec.Struct):
    tool: list[_Process] = msgspec.field(name="rocprofiler-sdk-tool")


_DECODER = msgspec.json.Decoder(_Top)
_API_LISTS = ("hip_api", "hsa_api", "rccl_api", "rocdecode_api", "rocjpeg_api",
              "hipfile_api", "rocshmem_api")
_MARKER_RANGE_KINDS = ("MARKER_CORE_API", "MARKER_CORE_RANGE_API")
_DIRECTIONS = {
    "MEMORY_COPY_HOST_TO_DEVICE": "HtoD", "MEMORY_COPY_DEVICE_TO_HOST": "DtoH",
    "MEMORY_COPY_DEVICE_TO_DEVICE": "DtoD", "MEMORY_COPY_HOST_TO_HOST": "HtoH",
    "MEMORY_COPY_PEER_TO_PEER": "PtoP",
}


# --------------------------------------------------------------------------- helpers


def marker_depth(start: np.ndarray, end: np.ndarray, pid: np.ndarray | None,
                 tid: np.ndarray | None) -> np.ndarray:
    """Nesting depth of ranges on each (pid, tid): 0 = outermost."""
    n = len(start)
    depth = np.zeros(n, dtype=np.int16)
    if n == 0:
        return depth
    p = np.zeros(n, np.int64) if pid is None else np.asarray(pid, np.int64)
    t = np.zeros(n, np.int64) if tid is None else np.asarray(tid, np.int64)
    order = np.lexsort((-np.asarray(end, np.int64), np.asarray(start, np.int64), t, p))
    stack: list[int] = []
    key_prev = None
    s_l, e_l, p_l, t_l = start.tolist(), end.tolist(), p.tolist(), t.tolist()
    for i in order.tolist():
        key = (p_l[i], t_l[i])
        if key != key_prev:
            stack = []
            key_prev = key
        s = s_l[i]
        while stack and stack[-1] <= s:
            stack.pop()
        depth[i] = min(len(stack), 32767)
        stack.append(e_l[i])
    return depth


_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _cut_to_whole(data: bytes) -> tuple[bytes, int] | None:
    """Cut a torn JSON text back to its last complete array element and close every
    container still open there. Returns (repaired text, bytes dropped) or None."""
    stack: list[int] = []
    best: tuple[int, bytes] | None = None
    open_b, close_b = ord("["), ord("]")
    open_c, close_c = ord("{"), ord("}")
    for m in _TOKEN.finditer(data):
        c = data[m.start()]
        if c == open_b or c == open_c:
            stack.append(c)
        elif c == close_b or c == close_c:
            if not stack:
                return None
            stack.pop()
            if stack and stack[-1] == open_b:
                best = (m.end(), bytes(stack))
    if best is None:
        return None
    pos, st = best
    closers = bytes(close_b if c == open_b else close_c for c in reversed(st))
    return data[:pos] + closers, len(data) - pos


def _where_from(exc: Exception) -> str:
    msg = str(exc)
    m = re.search(r"at `([^`]*)`", msg)
    if m:
        return m.group(1)
    m = re.search(r"\(byte (\d+)\)", msg)
    if m:
        return f"byte {m.group(1)}"
    return "the top level"


# --------------------------------------------------------------------------- reader


@register
class RocprofV3JsonReader:
    name = "rocprofv3-json"
    description = "rocprofv3 JSON"
    patterns = ("*_results.json", "*_results.json.gz", "*.json", "*.json.gz")
    priority = 60
    directories = False

    def sniff(self, path: Path) -> float:
        if path.is_dir():
            return 0.0
        head = head_text(path, 2048)
        if '"rocprofiler-sdk-tool"' in head:
            return 1.0
        return 0.0

    def read(self, path, progress, cancelled) -> Trace:
        path = Path(path)
        try:
            return self._read(path, progress, cancelled)
        except TraceFormatError:
            raise
        except (OSError, EOFError, zlib.error) as exc:
            # zlib.error: read_bytes_tolerant lets it through for corrupt deflate data
            raise TraceFormatError(path, None, "a readable rocprofv3 JSON file",
                                   str(exc)) from None
        except (ValueError, TypeError, KeyError, IndexError, OverflowError,
                msgspec.MsgspecError) as exc:
            raise TraceFormatError(path, None, "a well-formed rocprofv3 JSON file",
                                   f"{type(exc).__name__}: {exc}") from None

    # ------------------------------------------------------------------
    def _read(self, path: Path, progress, cancelled) -> Trace:
        warnings: list[str] = []
        dropped: dict[str, int] = {}
        data, warn = read_bytes_tolerant(path)
        if warn:
            warnings.append(warn)
        progress(0.2)
        check_cancel(cancelled)
        top = self._decode(path, data, warnings, dropped)
        del data
        progress(0.6)
        check_cancel(cancelled)
        if not top.tool:
            raise TraceFormatError(path, "rocprofiler-sdk-tool", "at least one process object",
                                   "an empty list")
        traces = []
        for i, proc in enumerate(top.tool):
            check_cancel(cancelled)
            traces.append(self._process(path, i, proc))
            progress(0.6 + 0.35 * (i + 1) / len(top.tool))
        meta: dict[str, Any] = {
            "format": self.name, "sources": [str(path)], "clock": "CLOCK_BOOTTIME",
            "tool": "rocprofv3",
            "pids": sorted({p for t in traces for p in t.meta.get("pids", [])}),
            "warnings": warnings,
        }
        if dropped:
            meta["dropped"] = dropped
        trace = merge_traces(traces, meta=meta) if len(traces) > 1 else traces[0].with_meta(**meta)
        return trace

    def _decode(self, path: Path, data: bytes, warnings: list[str],
                dropped: dict[str, int]) -> _Top:
        was = gc.isenabled()
        gc.disable()
        try:
            try:
                return _DECODER.decode(data)
            except msgspec.ValidationError as exc:
                raise TraceFormatError(path, _where_from(exc),
                                       "the rocprofv3 JSON layout "
                                       '{"rocprofiler-sdk-tool": [process objects]}',
                                       str(exc)) from None
            except msgspec.DecodeError as exc:
                first = exc
            fixed = _cut_to_whole(data) if data.lstrip()[:1] == b"{" else None
            if fixed is None:
                raise TraceFormatError(path, _where_from(first), "JSON text",
                                       str(first)) from None
            text, lost = fixed
            try:
                top = _DECODER.decode(text)
            except msgspec.MsgspecError:
                raise TraceFormatError(path, _where_from(first), "JSON text",
                                       str(first)) from None
            warnings.append(f"{path}: the JSON text is cut short ({first}); kept every "
                            f"whole record, dropped the last {lost:,} bytes")
            dropped["bytes"] = lost
            return top
        finally:
            if was:
                gc.enable()

    # ------------------------------------------------------------------
    def _process(self, path: Path, index: int, proc: _Process) -> Trace:
        md = proc.metadata
        pid = md.pid
        host = md.node.hostname if md.node else None
        kinds = proc.strings.buffer_records

        def kind_name(k: int) -> str:
            return kinds[k].kind if 0 <= k < len(kinds) else f"kind {k}"

        def op_name(k: int, op: int) -> str:
            if 0 <= k < len(kinds) and 0 <= op < len(kinds[k].operations):
                return kinds[k].operations[op]
            return f"{kind_name(k)} op {op}"

        # ---- devices: GPU agents in node-id order (rocprofv3's gpu_index order)
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

        # ---- kernel names
        rename = bool((md.config or {}).get("kernel_rename"))
        sym_max = max((s.kernel_id for s in proc.kernel_symbols), default=-1)
        sym_code = np.full(sym_max + 2, -1, dtype=np.int32)
        names: list[str] = []
        name_idx: dict[str, int] = {}
        vgpr = np.full(sym_max + 2, -1, np.int64)
        agpr = np.full(sym_max + 2, -1, np.int64)
        sgpr = np.full(sym_max + 2, -1, np.int64)
        for s in proc.kernel_symbols:
            if s.kernel_id < 0:
                continue
            nm = s.formatted_kernel_name or s.kernel_name or f"kernel {s.kernel_id}"
            c = name_idx.setdefault(nm, len(names))
            if c == len(names):
                names.append(nm)
            sym_code[s.kernel_id] = c
            for arr, v in ((vgpr, s.arch_vgpr_count), (agpr, s.accum_vgpr_count),
                           (sgpr, s.sgpr_count)):
                if v is not None:
                    arr[s.kernel_id] = v
        rename_names = {kv.key: kv.value for kv in proc.strings.correlation_id.external}

        # ---- kernels
        recs = proc.buffer_records.kernel_dispatch
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
        (k_start, k_end, k_agent, k_qh, k_stream, k_tid, k_corr, k_disp, k_kid,
         gx, gy, gz, bx, by, bz) = cols
        if nk and k_stream.max(initial=0) > np.iinfo(np.int32).max:
            _, k_stream = np.unique(k_stream, return_inverse=True)
        k_lds = np.fromiter((r.dispatch_info.group_segment_size for r in recs), np.int64, nk)
        k_scr = np.fromiter((r.dispatch_info.private_segment_size for r in recs), np.int64, nk)

        kid_ok = (k_kid >= 0) & (k_kid < len(sym_code))
        codes = np.where(kid_ok, sym_code[np.clip(k_kid, 0, len(sym_code) - 1)], -1)
        missing = codes < 0
        if missing.any():
            for j in np.nonzero(missing)[0].tolist():
                nm = f"kernel {int(k_kid[j])}"
                c = name_idx.setdefault(nm, len(names))
                if c == len(names):
                    names.append(nm)
                codes[j] = c
        if rename and rename_names:
            for j, r in enumerate(recs):
                ext = r.correlation_id.external
                if ext and ext in rename_names:
                    nm = rename_names[ext]
                    c = name_idx.setdefault(nm, len(names))
                    if c == len(names):
                        names.append(nm)
                    codes[j] = c

        k_dev = self._agent_to_device(path, k_agent, dev_of_handle, "kernel_dispatch")

        # queues: small ints per device, in handle order
        qpairs = np.unique(np.stack([k_dev, k_qh]), axis=1) if nk else np.empty((2, 0), np.int64)
        q_dev, q_handle = qpairs[0], qpairs[1]
        q_small = np.zeros(len(q_dev), dtype=np.int64)
        for d in np.unique(q_dev).tolist():
            m = q_dev == d
            q_small[m] = np.arange(int(m.sum()))
        if nk:
            qkey = q_dev * (1 << 48) + q_handle
            k_queue = q_small[np.searchsorted(qkey, k_dev * (1 << 48) + k_qh)]
        else:
            k_queue = np.empty(0, np.int64)
        queues = build_table("queues", {
            "device": q_dev.astype(np.int16), "queue": q_small.astype(np.int32),
            "raw_id": [str(h) for h in q_handle.tolist()],
        }, n=len(q_dev))

        # ---- API calls
        a_name: list[str] = []
        a_dom: list[str] = []
        a_rows: list[tuple[int, int, int, int]] = []
        m_name: list[str] = []
        m_rows: list[tuple[int, int, int]] = []
        messages = {kv.key: kv.value for kv in proc.strings.marker_api}
        for lst in _API_LISTS:
            for r in getattr(proc.buffer_records, lst):
                a_name.append(op_name(r.kind, r.operation))
                a_dom.append(kind_name(r.kind))
                a_rows.append((r.start_timestamp, r.end_timestamp, r.thread_id,
                               r.correlation_id.internal))
        for r in proc.buffer_records.marker_api:
            kn = kind_name(r.kind)
            if kn in _MARKER_RANGE_KINDS:
                m_name.append(messages.get(r.correlation_id.internal)
                              or op_name(r.kind, r.operation))
                m_rows.append((r.start_timestamp, r.end_timestamp, r.thread_id))
            else:  # roctx control/naming calls are API calls, not annotations
                a_name.append(op_name(r.kind, r.operation))
                a_dom.append(kn)
                a_rows.append((r.start_timestamp, r.end_timestamp, r.thread_id,
                               r.correlation_id.internal))
        na = len(a_rows)
        a_arr = np.array(a_rows, dtype=np.int64).reshape(na, 4)
        a_start, a_end, a_tid, a_corr = a_arr.T
        a_end = np.maximum(a_end, a_start)
        pid_col = None if pid is None else np.full(na, pid, np.int32)
        api = build_table("api", {
            "name": a_name, "domain": a_dom, "start": a_start, "end": a_end,
            "pid": pid_col, "tid": a_tid, "correlation_id": a_corr,
        }, n=na)

        k_api = link_by_correlation(k_corr, None, a_corr, None)
        kernels = build_table("kernels", {
            "name": categorical(codes, names), "device": k_dev.astype(np.int16),
            "start": k_start, "end": np.maximum(k_end, k_start),
            "queue": k_queue.astype(np.int32),
            "stream": pa.array(k_stream, mask=~stream_valid, type=pa.int64())
            if nk and not stream_valid.all() else k_stream,
            "pid": None if pid is None else np.full(nk, pid, np.int32),
            "tid": k_tid, "correlation_id": k_corr, "dispatch_id": k_disp,
            "api_index": pa.array(k_api, mask=k_api < 0) if nk else None,
            "grid_x": gx, "grid_y": gy, "grid_z": gz,
            "block_x": bx, "block_y": by, "block_z": bz,
            "vgpr": self._per_kernel(vgpr, k_kid), "accum_vgpr": self._per_kernel(agpr, k_kid),
            "sgpr": self._per_kernel(sgpr, k_kid),
            "lds_bytes": k_lds, "scratch_bytes": k_scr,
        }, n=nk)

        # ---- streams
        streams = self._streams(k_stream[stream_valid], k_dev[stream_valid],
                                k_queue[stream_valid], pid)

        # ---- markers
        nm_ = len(m_rows)
        m_arr = np.array(m_rows, dtype=np.int64).reshape(nm_, 3)
        m_start, m_end, m_tid = m_arr.T
        m_end = np.maximum(m_end, m_start)
        markers = build_table("markers", {
            "name": m_name, "domain": ["roctx"] * nm_, "start": m_start, "end": m_end,
            "depth": marker_depth(m_start, m_end, None, m_tid),
            "pid": None if pid is None else np.full(nm_, pid, np.int32), "tid": m_tid,
        }, n=nm_)

        # ---- copies
        copies = self._copies(path, proc.buffer_records.memory_copy, op_name, dev_of_handle,
                              a_corr, pid)

        # ---- counters
        counters = self._counters(proc, k_disp, k_corr)

        meta: dict[str, Any] = {
            "format": self.name, "sources": [str(path)], "clock": "CLOCK_BOOTTIME",
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
        return Trace(kernels=kernels, api=api, copies=copies, markers=markers,
                     counters=counters, devices=devices, queues=queues, streams=streams,
                     meta=meta)

    # ------------------------------------------------------------------
    @staticmethod
    def _per_kernel(table: np.ndarray, kid: np.ndarray):
        if len(kid) == 0:
            return None
        ok = (kid >= 0) & (kid < len(table))
        vals = np.where(ok, table[np.clip(kid, 0, len(table) - 1)], -1)
        if (vals < 0).all():
            return None
        return pa.array(vals, mask=vals < 0)

    @staticmethod
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

    @staticmethod
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

    def _copies(self, path, recs: list[_CopyRec], op_name, dev_of_handle, a_corr, pid):
        n = len(recs)
        if n == 0:
            return build_table("copies", {}, n=0)
        names = [op_name(r.kind, r.operation) for r in recs]
        direction = [_DIRECTIONS.get(nm, "other") for nm in names]
        arr = np.array([(r.start_timestamp, r.end_timestamp, r.thread_id,
                         r.correlation_id.internal,
                         r.src_agent_id.handle if r.src_agent_id else -1,
                         r.dst_agent_id.handle if r.dst_agent_id else -1,
                         r.bytes if r.bytes is not None else -1,
                         r.stream_id.handle if r.stream_id else -1) for r in recs],
                       dtype=np.int64)
        start, end, tid, corr, src_h, dst_h, nbytes, stream = arr.T
        src = self._agent_to_device(path, src_h, dev_of_handle, "memory_copy", True)
        dst = self._agent_to_device(path, dst_h, dev_of_handle, "memory_copy", True)
        # the engine that ran it: the GPU side (source GPU for DtoD/PtoP)
        dev = np.where(src >= 0, src, dst)
        dev = np.where(np.array([d == "HtoD" for d in direction]) & (dst >= 0), dst, dev)
        api_idx = link_by_correlation(corr, None, a_corr, None)
        return build_table("copies", {
            "direction": direction, "start": start, "end": np.maximum(end, start),
            "name": names, "bytes": pa.array(nbytes, mask=nbytes < 0),
            "device": pa.array(dev, mask=dev < 0, type=pa.int64()),
            "src_device": pa.array(src, mask=src < 0, type=pa.int64()),
            "dst_device": pa.array(dst, mask=dst < 0, type=pa.int64()),
            "stream": pa.array(stream, mask=stream < 0),
            "pid": None if pid is None else np.full(n, pid, np.int32),
            "tid": tid, "correlation_id": corr,
            "api_index": pa.array(api_idx, mask=api_idx < 0),
        }, n=n)

    @staticmethod
    def _counters(proc: _Process, k_disp: np.ndarray, k_corr: np.ndarray):
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
