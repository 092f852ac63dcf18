"""Perfetto protobuf framing and the pieces of rocprofv3's conventions the slices need:
packet records, per-sequence interned state, track-name patterns, annotations."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .._common import copy_direction
from ...model.schema import DIRECTIONS

EXTENSIONS = (".pftrace", ".perfetto-trace", ".pb", ".perfetto")
Buffer = bytes  # a whole file, read into memory (a map of it dies of SIGBUS if it is cut)

# TrackEvent.Type
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4
# TracePacket.SequenceFlags
SEQ_INCREMENTAL_STATE_CLEARED = 1
SEQ_NEEDS_INCREMENTAL_STATE = 2
# BuiltinClock
CLOCK_NAMES = {1: "CLOCK_REALTIME", 2: "CLOCK_REALTIME_COARSE", 3: "CLOCK_MONOTONIC",
                4: "CLOCK_MONOTONIC_COARSE", 5: "CLOCK_MONOTONIC_RAW", 6: "CLOCK_BOOTTIME",
                9: "TSC", 10: "perf clock", 11: "trace file clock"}
BOOTTIME = 6

API_CATEGORIES = {
    "hip_api": "HIP_RUNTIME_API", "hsa_api": "HSA_CORE_API", "rccl_api": "RCCL_API",
    "rocdecode_api": "ROCDECODE_API", "rocjpeg_api": "ROCJPEG_API",
    "rocshmem_api": "ROCSHMEM_API", "hipfile_api": "HIPFILE_API", "openmp": "OMPT",
}
IGNORED_CATEGORIES = {"memory_allocation", "scratch_memory", "counter_collection",
                      "kfd_events", "none"}

# Kernel annotations the writer sets (everything else on a kernel slice is a PMC value)
# [generatePerfetto.cpp, kernel_dispatch TRACE_EVENT_BEGIN].
KERNEL_KNOWN = {
    "begin_ns", "end_ns", "delta_ns", "kind", "agent", "agent_type", "corr_id", "queue",
    "tid", "kernel_id", "Scratch_Size", "LDS_Block_Size", "VGPR_Count", "Accum_VGPR_Count",
    "SGPR_Count", "workgroup_size", "grid_size", "stream_ID", "operation",
    # hipscope writer extras
    "pid", "dispatch_id", "dispatch_ns", "grid_x", "grid_y", "grid_z", "block_x", "block_y",
    "block_z", "registers", "dyn_lds_bytes", "device", "name", "direction", "copy_bytes",
    "src_agent", "dst_agent", "ancestor_id", "domain",
}

RE_COMPUTE = re.compile(r"^COMPUTE\s+(\w+)\s*\[\s*(\d+)\s*\]\s*QUEUE\s*\[\s*(\d+)\s*\]")
RE_STREAM = re.compile(r'^STREAM\s*\[\s*"?\s*(\d+)\s*"?\s*\]')
RE_COPY = re.compile(r"^COPY to AGENT\s*\[\s*(\d+)\s*\]")
RE_THREAD = re.compile(r"^THREAD\s+\d+\s*\((\d+)\)")
_RE_AGENT = re.compile(r"^\s*(Agent|GPU|CPU|UNK)\s*[-\s\[]\s*(\d+)\s*\]?\s*$", re.I)
_RE_HS_DEVICE = re.compile(r"^GPU\s+(\d+)\b")


def perfetto_pb2():
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2

    return perfetto_trace_pb2


def read_varint(buf: Buffer | memoryview, pos: int, end: int) -> tuple[int, int]:
    """Decode a varint at ``pos``; (value, new_pos); new_pos = -1 when cut short."""
    result = shift = 0
    while pos < end:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")
    return result, -1


def scan_packets(data: Buffer) -> tuple[list[tuple[int, int]], int, str | None]:
    """Split a ``Trace`` into TracePacket (start, end) byte ranges.

    Returns (ranges, bytes_used, problem): ``problem`` is None for a clean file,
    ``"truncated"`` when the last record is cut short, or a text describing a
    record that is not ``TracePacket packet = 1`` (ranges then hold what preceded it).
    """
    ranges: list[tuple[int, int]] = []
    n = len(data)
    pos = 0
    while pos < n:
        tag = data[pos]
        if tag != 0x0A:
            return ranges, pos, f"tag byte 0x{tag:02x} (field {tag >> 3}, wire type {tag & 7})"
        try:
            length, p = read_varint(data, pos + 1, n)
        except ValueError:
            return ranges, pos, "a length varint longer than 10 bytes"
        if p < 0 or p + length > n:
            return ranges, pos, "truncated"
        ranges.append((p, p + length))
        pos = p + length
    return ranges, pos, None


class Seq:
    """Incremental state of one packet sequence (trusted_packet_sequence_id)."""

    __slots__ = ("names", "cats", "ann_names", "ann_strings", "default_track",
                 "default_clock", "valid", "clocks")

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.cats: dict[int, str] = {}
        self.ann_names: dict[int, str] = {}
        self.ann_strings: dict[int, str] = {}
        self.default_track: int | None = None
        self.default_clock: int | None = None
        self.valid = True
        # sequence-scoped clocks: id -> [last_value, mult, incremental, ref_clock, ref_ts, base]
        self.clocks: dict[int, list] = {}

    def clear(self) -> None:
        self.names.clear()
        self.cats.clear()
        self.ann_names.clear()
        self.ann_strings.clear()
        self.default_track = None
        self.default_clock = None
        self.valid = True


NESTED = frozenset({"nested_value", "legacy_json_value", "proto_value"})


def ann_as_int(v: Any) -> int | None:
    if type(v) is int:
        return v
    if v is None or isinstance(v, bool):
        return None if v is None else int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(round(v)) if np.isfinite(v) else None
    if isinstance(v, str):
        try:
            return int(v.strip(), 0)
        except ValueError:
            return None
    return None


def agent_key(text: Any) -> tuple[str, int] | None:
    """('GPU'|'AGENT', n) from 'Agent-2', 'Agent 2', 'GPU-0', 'GPU [0]'."""
    if text is None:
        return None
    m = _RE_AGENT.match(str(text))
    if not m:
        return None
    label = m.group(1).upper()
    if label in ("CPU", "UNK"):
        return None
    return ("GPU" if label == "GPU" else "AGENT", int(m.group(2)))


def slice_copy_direction(name: str | None, ann: dict) -> str:
    d = ann.get("direction")
    if isinstance(d, str) and d in DIRECTIONS:
        return d
    return copy_direction(name)


def int_column(values: list, dtype, what: str, warnings: list[str]) -> Any:
    """A list of int|None as a pyarrow array of ``dtype``; out-of-range values -> null."""
    import pyarrow as pa

    from ...model.table import from_numpy  # pa.array imports pandas (~1 s)

    if not all(v is None or type(v) is int for v in values):
        return fit_int(pa.array(values, type=pa.int64()), dtype, what, warnings)
    vals = [v if v is None or -(1 << 63) <= v < (1 << 63) else None for v in values]
    mask = np.fromiter((v is None for v in vals), bool, len(vals))
    arr = from_numpy(np.array([0 if v is None else v for v in vals], np.int64), mask)
    return fit_int(arr, dtype, what, warnings)


def fit_int(arr, dtype, what: str, warnings: list[str]) -> Any:
    """An int64 pyarrow array as ``dtype``; values out of its range -> null (counted)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    target = pa.from_numpy_dtype(dtype)
    if target == pa.int64():
        return arr
    info = np.iinfo(dtype)
    from ...model.table import scalar  # pa.scalar imports pandas (~1 s)

    lo, hi = scalar(int(info.min), pa.int64()), scalar(int(info.max), pa.int64())
    bad = pc.or_(pc.less(arr, lo), pc.greater(arr, hi))
    nbad = pc.sum(bad).as_py() or 0
    if nbad:
        warnings.append(f"{nbad} value(s) of {what} do not fit {np.dtype(dtype).name}; "
                        f"left null")
        arr = pc.if_else(bad, pa.nulls(1, pa.int64())[0], arr)
    return arr.cast(target)


def api_domain(cat: str, name: str | None) -> str:
    n = name or ""
    if cat.startswith("api:"):
        return cat[4:]
    if cat == "hip_api":
        return "HIP_COMPILER_API" if n.startswith("__hip") else "HIP_RUNTIME_API"
    if cat == "hsa_api":
        if n.startswith("hsa_amd_"):
            return "HSA_AMD_EXT_API"
        if n.startswith("hsa_ext_image"):
            return "HSA_IMAGE_EXT_API"
        if n.startswith("hsa_ext_"):
            return "HSA_FINALIZE_EXT_API"
        return "HSA_CORE_API"
    return API_CATEGORIES.get(cat, cat.upper())


def decode_error():
    from google.protobuf.message import DecodeError

    return DecodeError
