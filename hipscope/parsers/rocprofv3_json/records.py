"""rocprofv3 JSON records as msgspec Structs, and decoding (a text cut short is closed
after its last whole record)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from .._json import error_place, gc_paused
from ..base import TraceFormatError

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


class CopyRec(msgspec.Struct):
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
    memory_copy: list[CopyRec] = []


class Process(msgspec.Struct):
    metadata: _Metadata = msgspec.field(default_factory=_Metadata)
    agents: list[_Agent] = []
    counters: list[_Counter] = []
    strings: _Strings = msgspec.field(default_factory=_Strings)
    kernel_symbols: list[_KernelSymbol] = []
    callback_records: _Callbacks = msgspec.field(default_factory=_Callbacks)
    buffer_records: _Buffers = msgspec.field(default_factory=_Buffers)


class _Top(msgspec.Struct):
    tool: list[Process] = msgspec.field(name="rocprofiler-sdk-tool")


_DECODER = msgspec.json.Decoder(_Top)
_API_LISTS = ("hip_api", "hsa_api", "rccl_api", "rocdecode_api", "rocjpeg_api",
              "hipfile_api", "rocshmem_api")
_MARKER_RANGE_KINDS = ("MARKER_CORE_API", "MARKER_CORE_RANGE_API")

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
    return error_place(str(exc), path_first=True) or "the top level"


def decode(path: Path, data: bytes, warnings: list[str], dropped: dict[str, int]) -> _Top:
    with gc_paused():
        try:
            return _DECODER.decode(data)
        except msgspec.ValidationError as exc:
            raise TraceFormatError(path, _where_from(exc),
                                   "the rocprofv3 JSON layout "
                                   '{"rocprofiler-sdk-tool": [process objects]}',
                                   str(exc)) from None
        except msgspec.DecodeError as exc:
            first = exc
        # only a text that ends early can be cut back to its last whole record; an error
        # part-way (a damaged file) cannot, and scanning 40 MB for a cut took ~35 s
        torn = "truncated" in str(first) and data.lstrip()[:1] == b"{"
        fixed = _cut_to_whole(data) if torn else None
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
