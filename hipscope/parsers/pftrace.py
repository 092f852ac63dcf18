"""Reader for rocprofv3 Perfetto traces (``<pid>_results.pftrace``).

rocprofv3 writes its ``.pftrace`` with the Perfetto SDK, ``track_event`` data source
only [ROCm/rocm-systems projects/rocprofiler-sdk/source/lib/output/generatePerfetto.cpp]:
slices (``TYPE_SLICE_BEGIN``/``TYPE_SLICE_END``) on custom tracks, categories from
``rocprofiler-sdk/cxx/perfetto.hpp`` (``hip_api``, ``hsa_api``, ``marker_api``,
``rccl_api``, ``kernel_dispatch``, ``memory_copy`` ...), debug annotations with the
record's fields, ``Flow::ProcessScoped(correlation_id.internal)`` on every API call
and on the kernel/copy it produced, and counter tracks (copy / allocation / scratch
bytes, PMC values). Event names, categories and annotation names are interned per
packet sequence. This module also reads what :mod:`hipscope.export.pftrace_writer`
writes (the same conventions plus a few hipscope annotations).

The ``Trace`` proto is ``repeated TracePacket packet = 1``; the file is walked record
by record (tag 0x0a, varint length), so a file cut short keeps its whole packets.
Packets are decoded with the protobuf classes shipped in the ``perfetto`` package
(``perfetto.protos.perfetto.trace.perfetto_trace_pb2``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ..model import Trace, build_table, link_by_correlation
from ..model.schema import DIRECTIONS, SPECS
from .base import (
    Cancelled,
    TraceFormatError,
    check_cancel,
    head_bytes,
    is_gzip,
    read_bytes_tolerant,
    register,
)

EXTENSIONS = (".pftrace", ".perfetto-trace", ".pb", ".perfetto")

# TrackEvent.Type
_BEGIN, _END, _INSTANT, _COUNTER = 1, 2, 3, 4
# TracePacket.SequenceFlags
SEQ_INCREMENTAL_STATE_CLEARED = 1
SEQ_NEEDS_INCREMENTAL_STATE = 2
# BuiltinClock
_CLOCK_NAMES = {1: "CLOCK_REALTIME", 2: "CLOCK_REALTIME_COARSE", 3: "CLOCK_MONOTONIC",
                4: "CLOCK_MONOTONIC_COARSE", 5: "CLOCK_MONOTONIC_RAW", 6: "CLOCK_BOOTTIME",
                9: "TSC", 10: "perf clock", 11: "trace file clock"}
_BOOTTIME = 6

API_CATEGORIES = {
    "hip_api": "HIP_RUNTIME_API", "hsa_api": "HSA_CORE_API", "rccl_api": "RCCL_API",
    "rocdecode_api": "ROCDECODE_API", "rocjpeg_api": "ROCJPEG_API",
    "rocshmem_api": "ROCSHMEM_API", "hipfile_api": "HIPFILE_API", "openmp": "OMPT",
}
IGNORED_CATEGORIES = {"memory_allocation", "scratch_memory", "counter_collection",
                      "kfd_events", "none"}

# Kernel annotations the writer sets (everything else on a kernel slice is a PMC value)
# [generatePerfetto.cpp, kernel_dispatch TRACE_EVENT_BEGIN].
_KERNEL_KNOWN = {
    "begin_ns", "end_ns", "delta_ns", "kind", "agent", "agent_type", "corr_id", "queue",
    "tid", "kernel_id", "Scratch_Size", "LDS_Block_Size", "VGPR_Count", "Accum_VGPR_Count",
    "SGPR_Count", "workgroup_size", "grid_size", "stream_ID", "operation",
    # hipscope writer extras
    "pid", "dispatch_id", "dispatch_ns", "grid_x", "grid_y", "grid_z", "block_x", "block_y",
    "block_z", "registers", "dyn_lds_bytes", "device", "name", "direction", "copy_bytes",
    "src_agent", "dst_agent", "ancestor_id", "domain",
}

_RE_COMPUTE = re.compile(r"^COMPUTE\s+(\w+)\s*\[\s*(\d+)\s*\]\s*QUEUE\s*\[\s*(\d+)\s*\]")
_RE_STREAM = re.compile(r'^STREAM\s*\[\s*"?\s*(\d+)\s*"?\s*\]')
_RE_COPY = re.compile(r"^COPY to AGENT\s*\[\s*(\d+)\s*\]")
_RE_THREAD = re.compile(r"^THREAD\s+\d+\s*\((\d+)\)")
_RE_AGENT = re.compile(r"^\s*(Agent|GPU|CPU|UNK)\s*[-\s\[]\s*(\d+)\s*\]?\s*$", re.I)
_RE_HS_DEVICE = re.compile(r"^GPU\s+(\d+)\b")


def _pb2():
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2

    return perfetto_trace_pb2


def _varint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
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


def scan_packets(data: bytes) -> tuple[list[tuple[int, int]], int, str | None]:
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
            length, p = _varint(data, pos + 1, n)
        except ValueError:
            return ranges, pos, "a length varint longer than 10 bytes"
        if p < 0 or p + length > n:
            return ranges, pos, "truncated"
        ranges.append((p, p + length))
        pos = p + length
    return ranges, pos, None


class _Seq:
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


_NESTED = frozenset({"nested_value", "legacy_json_value", "proto_value"})


def _as_int(v: Any) -> int | None:
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


def _agent_key(text: Any) -> tuple[str, int] | None:
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


def _direction(name: str | None, ann: dict) -> str:
    d = ann.get("direction")
    if isinstance(d, str) and d in DIRECTIONS:
        return d
    s = (name or "").upper().replace("-", "_").replace(" ", "_")
    if "HOST_TO_DEVICE" in s or s in ("HTOD", "MEMCPY_HTOD") or "HTOD" in s:
        return "HtoD"
    if "DEVICE_TO_HOST" in s or "DTOH" in s:
        return "DtoH"
    if "DEVICE_TO_DEVICE" in s or "DTOD" in s:
        return "DtoD"
    if "HOST_TO_HOST" in s or "HTOH" in s:
        return "HtoH"
    if "PEER" in s or "PTOP" in s:
        return "PtoP"
    if "MEMSET" in s or "FILL" in s:
        return "memset"
    return "other"


def _int_column(values: list, dtype, what: str, warnings: list[str]) -> Any:
    """A list of int|None as a pyarrow array of ``dtype``; out-of-range values -> null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    target = pa.from_numpy_dtype(dtype)
    try:
        arr = pa.array(values, type=pa.int64())
    except (OverflowError, pa.ArrowInvalid):  # beyond int64: go one by one
        arr = pa.array([v if v is None or -(1 << 63) <= v < (1 << 63) else None
                        for v in values], type=pa.int64())
    if target == pa.int64():
        return arr
    info = np.iinfo(dtype)
    bad = pc.or_(pc.less(arr, int(info.min)), pc.greater(arr, int(info.max)))
    nbad = pc.sum(bad).as_py() or 0
    if nbad:
        warnings.append(f"{nbad} value(s) of {what} do not fit {np.dtype(dtype).name}; "
                        f"left null")
        arr = pc.if_else(bad, pa.scalar(None, pa.int64()), arr)
    return arr.cast(target)


@register
class PftraceReader:
    name = "pftrace"
    description = "rocprofv3 Perfetto trace"
    patterns = ("*.pftrace", "*.perfetto-trace", "*.pb", "*.pftrace.gz")
    priority = 40
    directories = False

    # ------------------------------------------------------------------ sniff
    def sniff(self, path: Path) -> float:
        path = Path(path)
        if not path.is_file():
            return 0.0
        head = head_bytes(path, 1 << 16)
        if len(head) < 2 or head[0] != 0x0A:
            return 0.0
        try:
            length, p = _varint(head, 1, len(head))
        except ValueError:
            return 0.0
        if p < 0 or length == 0:
            return 0.0
        size = path.stat().st_size
        gz = is_gzip(path)
        if not gz and p + length > size:
            return 0.0
        ext = any(str(path).lower().endswith(e) or str(path).lower().endswith(e + ".gz")
                  for e in EXTENSIONS)
        if p + length > len(head):
            # first packet bigger than the head: framing fits, content unchecked
            return 0.6 if ext else 0.2
        pb2 = _pb2()
        ranges, _, _ = scan_packets(head)
        good = 0
        for a, b in ranges[:64]:
            try:
                pkt = pb2.TracePacket.FromString(head[a:b])
            except Exception:  # noqa: BLE001 - any decode failure means "not mine"
                return 0.0
            if (pkt.HasField("track_event") or pkt.HasField("track_descriptor")
                    or pkt.HasField("interned_data") or pkt.HasField("clock_snapshot")
                    or pkt.HasField("trace_config") or pkt.HasField("trace_packet_defaults")
                    or pkt.HasField("process_tree") or pkt.HasField("trace_stats")):
                good += 1
        if not good:
            return 0.3 if ext else 0.0
        return 0.95 if ext else 0.8

    # ------------------------------------------------------------------ read
    def read(self, path, progress, cancelled) -> Trace:
        path = Path(path)
        try:
            return self._read(path, progress, cancelled)
        except (TraceFormatError, Cancelled):
            raise
        except Exception as exc:  # noqa: BLE001 - the contract: nothing else escapes
            raise TraceFormatError(path, getattr(exc, "_where", None),
                                   "a Perfetto trace hipscope can read",
                                   f"{type(exc).__name__}: {exc}") from exc

    def _read(self, path: Path, progress, cancelled) -> Trace:
        warnings: list[str] = []
        dropped: dict[str, int] = {}
        try:
            data, gz_warning = read_bytes_tolerant(path)
        except OSError as exc:
            raise TraceFormatError(path, None, "a readable file", str(exc)) from None
        if gz_warning:
            warnings.append(gz_warning)
        if not data:
            raise TraceFormatError(path, "byte 0", "a Perfetto Trace protobuf "
                                   "(TracePacket records, tag 0x0a)", "an empty file")
        ranges, used, problem = scan_packets(data)
        if problem == "truncated":
            if not ranges:
                raise TraceFormatError(path, "packet 0 at byte 0", "a whole TracePacket",
                                       f"a record cut short ({len(data)} bytes in the file)")
            lost = len(data) - used
            warnings.append(f"{path}: the file ends inside packet {len(ranges)} at byte "
                            f"{used:,} (truncated); read {len(ranges):,} whole packets and "
                            f"dropped the last {lost:,} bytes")
            dropped["packets"] = dropped.get("packets", 0) + 1
            dropped["bytes"] = lost
        elif problem is not None:
            raise TraceFormatError(
                path, f"packet {len(ranges)} at byte {used}",
                "a TracePacket record (Trace field 1, tag 0x0a)", problem)
        pb2 = _pb2()
        TracePacket = pb2.TracePacket
        DecodeError = _decode_error()

        seqs: dict[int, _Seq] = defaultdict(_Seq)
        tracks: dict[int, dict[str, Any]] = {}
        open_slices: dict[int, list] = defaultdict(list)
        # finished slices: [track, start, end, name, cats, ann, flows, seq_depth]
        slices: list[list] = []
        counters_seen: dict[int, int] = defaultdict(int)
        clock_ids_used: set[int] = set()
        global_snaps: list[dict[int, int]] = []
        primary_clock = [_BOOTTIME]
        pending_ts: list = []  # (slice, field, clock, raw) needing global conversion
        n_packets = len(ranges)
        step = max(1, n_packets // 100)
        unresolved = 0
        skipped_invalid = 0
        slices_begun: list = []
        hipscope_made = False
        source_clock = None

        fromstring = TracePacket.FromString
        for i, (a, b) in enumerate(ranges):
            if i % step == 0:
                check_cancel(cancelled)
                progress(0.8 * i / max(1, n_packets))
            try:
                pkt = fromstring(data[a:b])
            except DecodeError as exc:
                raise TraceFormatError(path, f"packet {i} at byte {a}",
                                       "a valid TracePacket protobuf", str(exc)) from None
            seq = seqs[pkt.trusted_packet_sequence_id]
            flags = pkt.sequence_flags
            if flags & SEQ_INCREMENTAL_STATE_CLEARED or pkt.incremental_state_cleared:
                seq.clear()
            elif pkt.previous_packet_dropped:
                seq.valid = False
            if pkt.HasField("trace_packet_defaults"):
                d = pkt.trace_packet_defaults
                if d.HasField("timestamp_clock_id"):
                    seq.default_clock = d.timestamp_clock_id
                if d.HasField("track_event_defaults") and \
                        d.track_event_defaults.HasField("track_uuid"):
                    seq.default_track = d.track_event_defaults.track_uuid
            if pkt.HasField("interned_data"):
                idata = pkt.interned_data
                for e in idata.event_names:
                    seq.names[e.iid] = e.name
                for e in idata.event_categories:
                    seq.cats[e.iid] = e.name
                    if e.name == "hipscope":
                        hipscope_made = True
                    elif e.name.startswith("hipscope-clock:"):
                        source_clock = e.name[len("hipscope-clock:"):]
                for e in idata.debug_annotation_names:
                    seq.ann_names[e.iid] = e.name
                for e in idata.debug_annotation_string_values:
                    seq.ann_strings[e.iid] = e.str.decode("utf-8", "replace")
            which = pkt.WhichOneof("data")
            if which != "track_event":
                if which == "clock_snapshot":
                    self._clock_snapshot(pkt.clock_snapshot, seq, global_snaps,
                                         primary_clock)
                elif which == "track_descriptor":
                    self._track_descriptor(pkt.track_descriptor, tracks)
                continue
            if flags & SEQ_NEEDS_INCREMENTAL_STATE and not seq.valid:
                skipped_invalid += 1
                continue
            ev = pkt.track_event
            # ---- timestamp
            if pkt.HasField("timestamp"):
                ts = pkt.timestamp
                if pkt.HasField("timestamp_clock_id"):
                    clock = pkt.timestamp_clock_id
                else:
                    clock = seq.default_clock
                    if clock is None:
                        clock = primary_clock[0]
                if 64 <= clock <= 127:
                    st = seq.clocks.get(clock)
                    if st is None:
                        unresolved += 1
                        continue
                    if st[2]:
                        st[0] += ts
                        ts = st[0]
                    ts = st[4] + (ts - st[5]) * st[1]
                    clock = st[3]
            elif ev.HasField("timestamp_absolute_us"):
                ts, clock = ev.timestamp_absolute_us * 1000, primary_clock[0]
            else:
                ts, clock = None, primary_clock[0]
            if clock not in clock_ids_used:
                clock_ids_used.add(clock)
            track = ev.track_uuid if ev.HasField("track_uuid") else seq.default_track
            if track is None:
                track = 0
            etype = ev.type
            if etype == _END:
                stack = open_slices.get(track)
                if not stack:
                    dropped["slice ends without a begin"] = \
                        dropped.get("slice ends without a begin", 0) + 1
                    continue
                s = stack.pop()
                s[2] = (ts, clock)
                slices.append(s)
                continue
            if etype == _COUNTER:
                counters_seen[track] += 1
                continue
            if etype != _BEGIN and etype != _INSTANT:
                continue
            # ---- name / categories
            iid = ev.name_iid
            if iid:
                name = seq.names.get(iid)
                if name is None:
                    unresolved += 1
                    if etype == _BEGIN:
                        open_slices[track].append([track, None, None, None, (), {}, (), -1])
                    continue
            else:
                name = ev.name
            cids = ev.category_iids
            if cids:
                cget = seq.cats.get
                cats = (cget(cids[0], ""),) if len(cids) == 1 else \
                    tuple([cget(c, "") for c in cids])
            else:
                cats = tuple(ev.categories)
            ann: dict[str, Any] = {}
            aget = seq.ann_names.get
            for da in ev.debug_annotations:
                aiid = da.name_iid
                an = aget(aiid) if aiid else da.name
                if an is None:
                    continue
                w = da.WhichOneof("value")
                if w is None or w in _NESTED:
                    ann[an] = None
                elif w == "string_value_iid":
                    ann[an] = seq.ann_strings.get(da.string_value_iid)
                else:
                    ann[an] = getattr(da, w)
            flows = tuple(ev.flow_ids)
            tf = ev.terminating_flow_ids
            if tf:
                flows += tuple(tf)
            if not flows:
                flows = tuple(ev.flow_ids_old) + tuple(ev.terminating_flow_ids_old)
            rec = [track, (ts, clock), None, name, cats, ann, flows, len(slices_begun)]
            slices_begun.append(None)
            if etype == _INSTANT:
                rec[2] = rec[1]
                slices.append(rec)
            else:
                open_slices[track].append(rec)

        unterminated = sum(len(v) for v in open_slices.values())
        if unterminated:
            dropped["slices without an end"] = unterminated
            warnings.append(f"{unterminated} slice(s) have a begin but no end (file cut "
                            f"short?); dropped")
        if unresolved:
            dropped["events with unknown interned ids or clocks"] = unresolved
            warnings.append(f"{unresolved} event(s) refer to interned names or clocks that "
                            f"were never defined on their sequence; dropped")
        if skipped_invalid:
            dropped["events after lost incremental state"] = skipped_invalid
            warnings.append(f"{skipped_invalid} event(s) need interned state that was lost "
                            f"(previous_packet_dropped); dropped")
        # drop placeholder records for unresolved begins
        slices = [s for s in slices if s[3] is not None]
        check_cancel(cancelled)
        progress(0.85)

        # ---- clocks: put every timestamp on the primary trace clock
        target = primary_clock[0]
        conv: dict[int, int] = {}
        for c in clock_ids_used:
            if c == target:
                continue
            off = None
            for snap in global_snaps:
                if c in snap and target in snap:
                    off = snap[target] - snap[c]
                    break
            if off is None:
                warnings.append(f"no clock snapshot relates clock {c} to clock {target}; "
                                f"its timestamps are used unconverted")
                off = 0
            conv[c] = off

        def tconv(t):
            return None if t[0] is None else t[0] + conv.get(t[1], 0)

        for s in slices:
            s[1] = tconv(s[1])
            s[2] = tconv(s[2])
        slices = [s for s in slices if s[1] is not None and s[2] is not None]
        slices.sort(key=lambda s: (s[1], s[7]))
        clock_name = _CLOCK_NAMES.get(target, f"clock {target}")
        if hipscope_made and source_clock:
            clock_name = source_clock  # hipscope's export keeps the source's clock

        return self._build(path, slices, tracks, counters_seen, clock_name, warnings,
                           dropped, n_packets, progress, hipscope_made)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _clock_snapshot(cs, seq: _Seq, global_snaps: list, primary_clock: list) -> None:
        if cs.HasField("primary_trace_clock"):
            primary_clock[0] = int(cs.primary_trace_clock)
        builtin: dict[int, int] = {}
        scoped = []
        for c in cs.clocks:
            if 64 <= c.clock_id <= 127:
                scoped.append(c)
            else:
                builtin[c.clock_id] = c.timestamp
        if builtin:
            global_snaps.append(builtin)
        if scoped and builtin:
            ref = primary_clock[0] if primary_clock[0] in builtin else next(iter(builtin))
            for c in scoped:
                mult = c.unit_multiplier_ns or 1
                seq.clocks[c.clock_id] = [c.timestamp, mult, bool(c.is_incremental), ref,
                                          builtin[ref], c.timestamp]

    @staticmethod
    def _track_descriptor(td, tracks: dict) -> None:
        t = tracks.setdefault(td.uuid, {})
        if td.HasField("parent_uuid"):
            t["parent"] = td.parent_uuid
        nm = None
        if td.HasField("name"):
            nm = td.name
        elif td.HasField("static_name"):
            nm = td.static_name
        elif td.HasField("atrace_name"):
            nm = td.atrace_name
        if nm is not None:
            t["name"] = nm
        if td.HasField("description"):
            t["description"] = td.description
        if td.HasField("process"):
            t["pid"] = td.process.pid
            if td.process.process_name:
                t["process_name"] = td.process.process_name
        if td.HasField("thread"):
            t["pid"] = td.thread.pid
            t["tid"] = td.thread.tid
            if td.thread.thread_name:
                t["thread_name"] = td.thread.thread_name
        if td.HasField("counter"):
            t["counter"] = True

    # ------------------------------------------------------------------ tables
    def _build(self, path: Path, slices: list, tracks: dict, counters_seen: dict,
               clock_name: str, warnings: list[str], dropped: dict, n_packets: int,
               progress, hipscope_made: bool = False) -> Trace:
        # resolve per-track facts through the parent chain
        info_cache: dict[int, dict] = {}

        def tinfo(uuid: int) -> dict:
            got = info_cache.get(uuid)
            if got is not None:
                return got
            out: dict[str, Any] = {}
            cur, seen = uuid, set()
            chain = []
            while cur is not None and cur not in seen:
                seen.add(cur)
                t = tracks.get(cur)
                if t is None:
                    break
                chain.append(t)
                cur = t.get("parent")
            own = chain[0] if chain else {}
            out["name"] = own.get("name")
            for t in chain:
                out.setdefault("pid", t.get("pid"))
                if out["pid"] is None:
                    out["pid"] = t.get("pid")
                if "tid" in t and out.get("tid") is None:
                    out["tid"] = t["tid"]
                nm = t.get("name") or ""
                if out.get("compute") is None:
                    m = _RE_COMPUTE.match(nm)
                    if m:
                        out["compute"] = (m.group(1), int(m.group(2)), int(m.group(3)))
                if out.get("stream") is None:
                    m = _RE_STREAM.match(nm)
                    if m:
                        out["stream"] = int(m.group(1))
                if out.get("copy_agent") is None:
                    m = _RE_COPY.match(nm)
                    if m:
                        out["copy_agent"] = int(m.group(1))
                if out.get("tid") is None:
                    m = _RE_THREAD.match(nm)
                    if m:
                        out["tid"] = int(m.group(1))
                desc = t.get("description")
                if desc and out.get("hs_device") is None and desc.startswith("{"):
                    try:
                        d = json.loads(desc)
                    except ValueError:
                        d = None
                    if isinstance(d, dict) and isinstance(d.get("hipscope_device"), dict):
                        out["hs_device"] = d["hipscope_device"]
            info_cache[uuid] = out
            return out

        kern, copies, api, marks = [], [], [], []
        ignored = defaultdict(int)
        tools = set()
        for s in slices:
            cats = s[4]
            cat = cats[0] if cats else ""
            if cat == "kernel_dispatch":
                kern.append(s)
            elif cat == "memory_copy":
                copies.append(s)
            elif cat == "marker_api":
                marks.append(s)
            elif cat in API_CATEGORIES or cat.endswith("_api") or cat.startswith("api:"):
                api.append(s)
            else:
                ignored[cat or "(no category)"] += 1
            if not hipscope_made and (cat in API_CATEGORIES or cat in (
                    "kernel_dispatch", "memory_copy", "marker_api")):
                tools.add("rocprofiler-sdk")
        for cat, n in ignored.items():
            if cat not in IGNORED_CATEGORIES:
                warnings.append(f"{n} slice(s) of category {cat!r} are not GPU work or "
                                f"API calls hipscope knows; skipped")
        progress(0.9)

        # ---- devices: collect raw keys from kernels and copies
        dev_keys: dict[tuple, dict] = {}

        def dev_of(ann_val, ti: dict, hs_fallback=True) -> tuple | None:
            key = _agent_key(ann_val)
            if key is None and ti.get("compute") is not None:
                label, idx, _q = ti["compute"]
                key = ("GPU" if label.upper() == "GPU" else "AGENT", idx)
            if key is None and hs_fallback and ti.get("hs_device") is not None:
                idx = _as_int(ti["hs_device"].get("index"))
                if idx is not None:
                    key = ("GPU", idx)
            if key is not None and key not in dev_keys:
                dev_keys[key] = {"raw": str(ann_val) if ann_val is not None else
                                 f"{'GPU' if key[0] == 'GPU' else 'Agent'} {key[1]}",
                                 "hs": ti.get("hs_device")}
            elif key is not None and dev_keys[key]["hs"] is None and ti.get("hs_device"):
                dev_keys[key]["hs"] = ti["hs_device"]
            return key

        k_dev = [dev_of(s[5].get("agent"), tinfo(s[0])) for s in kern]
        n_nodev = sum(k is None for k in k_dev)
        if n_nodev:
            unknown = ("UNKNOWN", 0)
            dev_keys.setdefault(unknown, {"raw": None, "hs": None})
            k_dev = [unknown if k is None else k for k in k_dev]
            warnings.append(f"{n_nodev} kernel(s) name no agent (no agent annotation, no "
                            f"COMPUTE track); put on an 'unknown device'")
        c_src, c_dst, c_dir = [], [], []
        for s in copies:
            ann = s[5]
            d = _direction(s[3], ann)
            c_dir.append(d)
            ti = tinfo(s[0])
            src = dst = None
            if d in ("DtoH", "DtoD", "PtoP"):
                src = dev_of(ann.get("src_agent"), {}, False)
            if d in ("HtoD", "DtoD", "PtoP", "memset"):
                dst = dev_of(ann.get("dst_agent"), {}, False)
            if d in ("HtoD", "DtoD", "PtoP", "memset") and dst is None and \
                    ti.get("copy_agent") is not None:
                dst = dev_of(f"Agent {ti['copy_agent']}", {}, False)
            if src is None and dst is None and ti.get("hs_device") is not None:
                dst = dev_of(None, ti)
            c_src.append(src)
            c_dst.append(dst)
        a_dev = [dev_of(s[5].get("agent"), {}, False) if "agent" in s[5] else None
                 for s in api]
        m_dev = [dev_of(s[5].get("agent"), {}, False) if "agent" in s[5] else None
                 for s in marks]

        keys = sorted(dev_keys)
        if keys and all(k[0] == "GPU" for k in keys):
            dev_index = {k: k[1] for k in keys}
        else:
            dev_index = {k: i for i, k in enumerate(keys)}
        dev_rows = []
        for k in keys:
            hs = dev_keys[k]["hs"] or {}
            dev_rows.append({
                "index": dev_index[k],
                "name": hs.get("name") or dev_keys[k]["raw"] or "unknown device",
                "vendor": hs.get("vendor", "AMD" if "rocprofiler-sdk" in tools else None),
                "arch": hs.get("arch"),
                "compute_units": _as_int(hs.get("compute_units")),
                "raw_id": hs.get("raw_id", dev_keys[k]["raw"]),
                "host": hs.get("host"),
                "memory_bytes": _as_int(hs.get("memory_bytes")),
            })

        def di(k):
            return None if k is None else dev_index[k]

        # ---- API table (flows + corr ids)
        api_flow: dict[int, int] = {}
        a_cols: dict[str, list] = {c: [] for c in ("name", "domain", "start", "end", "pid",
                                                   "tid", "correlation_id", "stream",
                                                   "device")}
        for j, s in enumerate(api):
            ann = s[5]
            ti = tinfo(s[0])
            cat = s[4][0]
            dom = next((c[4:] for c in s[4][1:] if c.startswith("api:")), None)
            if dom is None:
                dom = _api_domain(cat, s[3])
            a_cols["name"].append(s[3])
            a_cols["domain"].append(dom)
            a_cols["start"].append(s[1])
            a_cols["end"].append(max(s[1], s[2]))
            a_cols["pid"].append(_as_int(ann.get("pid")) if "pid" in ann else ti.get("pid"))
            tid = _as_int(ann.get("tid"))
            a_cols["tid"].append(tid if tid is not None else ti.get("tid"))
            a_cols["correlation_id"].append(_as_int(ann.get("corr_id")))
            a_cols["stream"].append(_as_int(ann.get("stream_ID")))
            a_cols["device"].append(di(a_dev[j]))
            for f in s[6]:
                api_flow.setdefault(f, j)

        def link(rows: list) -> tuple[list, int, int]:
            out = []
            by_flow = 0
            for s in rows:
                hit = None
                for f in s[6]:
                    hit = api_flow.get(f)
                    if hit is not None:
                        break
                out.append(-1 if hit is None else hit)
                by_flow += hit is not None
            return out, by_flow, 0

        # ---- kernels
        k_cols: dict[str, list] = defaultdict(list)
        pmc_rows: list[tuple[int, str, float]] = []
        ann_times = 0
        for j, s in enumerate(kern):
            ann = s[5]
            ti = tinfo(s[0])
            start, end = s[1], s[2]
            b_ns, e_ns = _as_int(ann.get("begin_ns")), _as_int(ann.get("end_ns"))
            if b_ns is not None and e_ns is not None and e_ns >= b_ns:
                if (b_ns, e_ns) != (start, end):
                    ann_times += 1
                start, end = b_ns, e_ns
            k_cols["name"].append(s[3])
            k_cols["device"].append(di(k_dev[j]))
            k_cols["start"].append(start)
            k_cols["end"].append(max(start, end))
            q = _as_int(ann.get("queue"))
            if q is None and ti.get("compute") is not None:
                q = ti["compute"][2]
            k_cols["queue"].append(q)
            st = _as_int(ann.get("stream_ID"))
            k_cols["stream"].append(st if st is not None else ti.get("stream"))
            k_cols["pid"].append(_as_int(ann.get("pid")) if "pid" in ann else ti.get("pid"))
            tid = _as_int(ann.get("tid"))
            k_cols["tid"].append(tid if tid is not None else ti.get("tid"))
            k_cols["correlation_id"].append(_as_int(ann.get("corr_id")))
            k_cols["dispatch_id"].append(_as_int(ann.get("dispatch_id")))
            k_cols["dispatch_ns"].append(_as_int(ann.get("dispatch_ns")))
            gx = _as_int(ann.get("grid_x"))
            k_cols["grid_x"].append(gx if gx is not None else _as_int(ann.get("grid_size")))
            k_cols["grid_y"].append(_as_int(ann.get("grid_y")))
            k_cols["grid_z"].append(_as_int(ann.get("grid_z")))
            bx = _as_int(ann.get("block_x"))
            k_cols["block_x"].append(bx if bx is not None else
                                     _as_int(ann.get("workgroup_size")))
            k_cols["block_y"].append(_as_int(ann.get("block_y")))
            k_cols["block_z"].append(_as_int(ann.get("block_z")))
            k_cols["vgpr"].append(_as_int(ann.get("VGPR_Count")))
            k_cols["accum_vgpr"].append(_as_int(ann.get("Accum_VGPR_Count")))
            k_cols["sgpr"].append(_as_int(ann.get("SGPR_Count")))
            k_cols["registers"].append(_as_int(ann.get("registers")))
            k_cols["lds_bytes"].append(_as_int(ann.get("LDS_Block_Size")))
            k_cols["dyn_lds_bytes"].append(_as_int(ann.get("dyn_lds_bytes")))
            k_cols["scratch_bytes"].append(_as_int(ann.get("Scratch_Size")))
            for an, v in ann.items():
                if an not in _KERNEL_KNOWN and isinstance(v, (int, float)) and \
                        not isinstance(v, bool):
                    pmc_rows.append((j, an, float(v)))
        k_api, k_by_flow, _ = link(kern)

        # ---- copies
        c_cols: dict[str, list] = defaultdict(list)
        for j, s in enumerate(copies):
            ann = s[5]
            ti = tinfo(s[0])
            c_cols["direction"].append(c_dir[j])
            c_cols["start"].append(s[1])
            c_cols["end"].append(max(s[1], s[2]))
            c_cols["name"].append(ann.get("name") if isinstance(ann.get("name"), str)
                                  else s[3])
            c_cols["bytes"].append(_as_int(ann.get("copy_bytes")))
            src, dst = di(c_src[j]), di(c_dst[j])
            dev = _as_int(ann.get("device"))
            dev = dev if dev is not None and dev in dev_index.values() else (
                dst if dst is not None else src)
            c_cols["device"].append(dev)
            c_cols["src_device"].append(src)
            c_cols["dst_device"].append(dst)
            c_cols["queue"].append(_as_int(ann.get("queue")))
            st = _as_int(ann.get("stream_ID"))
            c_cols["stream"].append(st if st is not None else ti.get("stream"))
            c_cols["pid"].append(_as_int(ann.get("pid")) if "pid" in ann else ti.get("pid"))
            tid = _as_int(ann.get("tid"))
            c_cols["tid"].append(tid if tid is not None else ti.get("tid"))
            c_cols["correlation_id"].append(_as_int(ann.get("corr_id")))
        c_api, c_by_flow, _ = link(copies)

        # corr_id fallback where no flow linked
        api_corr = np.array([-1 if v is None else v for v in a_cols["correlation_id"]],
                            dtype=np.int64)
        api_pid = np.array([-1 if v is None else v for v in a_cols["pid"]], dtype=np.int64)
        by_corr = 0
        for cols, links in ((k_cols, k_api), (c_cols, c_api)):
            if not links or not len(api_corr):
                continue
            need = [i for i, v in enumerate(links) if v < 0 and
                    cols["correlation_id"][i] is not None]
            if not need:
                continue
            kc = np.array([cols["correlation_id"][i] for i in need], dtype=np.int64)
            kp = np.array([-1 if cols["pid"][i] is None else cols["pid"][i] for i in need],
                          dtype=np.int64)
            hit = link_by_correlation(kc, kp, np.where(api_corr < 0, -2, api_corr), api_pid)
            for i, h in zip(need, hit.tolist()):
                if h >= 0:
                    links[i] = h
                    by_corr += 1

        # ---- markers (depth per thread / stream)
        m_cols: dict[str, list] = defaultdict(list)
        for j, s in enumerate(marks):
            ann = s[5]
            ti = tinfo(s[0])
            dom = None
            for c in s[4][1:]:
                if c.startswith("marker:"):
                    dom = c[len("marker:"):]
            m_cols["name"].append(s[3])
            m_cols["domain"].append(dom or "roctx")
            m_cols["start"].append(s[1])
            m_cols["end"].append(max(s[1], s[2]))
            m_cols["pid"].append(_as_int(ann.get("pid")) if "pid" in ann else ti.get("pid"))
            tid = _as_int(ann.get("tid"))
            m_cols["tid"].append(tid if tid is not None else ti.get("tid"))
            m_cols["device"].append(di(m_dev[j]))
            m_cols["stream"].append(_as_int(ann.get("stream_ID")))
        m_cols["depth"] = _depths(m_cols)

        # ---- queues / streams
        qset = {}
        for d, q in zip(k_cols["device"], k_cols["queue"]):
            if d is not None and q is not None:
                qset.setdefault((d, q), None)
        sset: dict[int, dict] = {}
        for cols in (k_cols, c_cols):
            for d, q, st, p in zip(cols["device"], cols["queue"], cols["stream"],
                                   cols["pid"]):
                if st is None:
                    continue
                e = sset.setdefault(st, {"device": d, "queues": set(), "pid": p})
                if q is not None:
                    e["queues"].add(q)

        # ---- tables
        import pyarrow as pa

        def mk(spec: str, cols: dict, n: int) -> Any:
            out: dict[str, Any] = {}
            for c, vals in cols.items():
                col = SPECS[spec].by_name[c]
                if pa.types.is_integer(col.type) and c not in ("start", "end"):
                    out[c] = _int_column(vals, col.type.to_pandas_dtype(), f"{spec}.{c}",
                                         warnings)
                else:
                    out[c] = vals
            return build_table(spec, out, n=n)

        k_cols["api_index"] = [None if v < 0 else v for v in k_api]
        c_cols["api_index"] = [None if v < 0 else v for v in c_api]
        kernels_t = mk("kernels", k_cols, len(kern))
        copies_t = mk("copies", c_cols, len(copies))
        api_t = mk("api", a_cols, len(api))
        markers_t = mk("markers", m_cols, len(marks))
        devices_t = build_table("devices", {c: [r[c] for r in dev_rows]
                                            for c in SPECS["devices"].by_name},
                                n=len(dev_rows))
        queues_t = build_table("queues", {"device": [k[0] for k in qset],
                                          "queue": [k[1] for k in qset]}, n=len(qset))
        streams_t = build_table("streams", {
            "stream": list(sset),
            "device": [e["device"] for e in sset.values()],
            "queue": [next(iter(e["queues"])) if len(e["queues"]) == 1 else None
                      for e in sset.values()],
            "pid": [e["pid"] for e in sset.values()],
        }, n=len(sset))
        counters_t = build_table("counters", {
            "counter": [r[1] for r in pmc_rows],
            "value": np.array([r[2] for r in pmc_rows], dtype=np.float64),
            "kernel_index": np.array([r[0] for r in pmc_rows], dtype=np.int32),
        }, n=len(pmc_rows))

        # ---- meta
        pids = sorted({p for t in (k_cols, a_cols, c_cols, m_cols) for p in t.get("pid", [])
                       if p is not None})
        provenance = {
            "kernels.start/end": (
                "begin_ns/end_ns debug annotations where present, else the slice times. "
                "rocprofv3 rewrites overlapping kernels on one queue to meet at their "
                "midpoint before writing (firmware-timestamp work-around in "
                "generatePerfetto.cpp) and its begin_ns/end_ns annotations carry the same "
                "rewritten values, so such kernels can differ from CSV/JSON/rocpd"),
            "kernels.grid_x": "grid_size annotation = product x*y*z of the grid in "
                              "work-items (grid_y/z left null) unless grid_x/y/z annotations",
            "kernels.block_x": "workgroup_size annotation = product x*y*z of the workgroup "
                               "(block_y/z left null) unless block_x/y/z annotations",
            "kernels.device": "agent annotation ('Agent-N'/'GPU-N') or the "
                              "'COMPUTE <Agent|GPU> [N] QUEUE [q]' track name",
            "kernels.queue": "queue annotation (handle - 1) or the COMPUTE track name",
            "kernels.stream": "stream_ID annotation or the 'STREAM [\" N \"]' track name",
            "kernels.lds_bytes": "LDS_Block_Size annotation (dispatch group segment size)",
            "kernels.scratch_bytes": "Scratch_Size annotation (private segment size)",
            "kernels.api_index": "shared flow id (Flow::ProcessScoped(correlation id)), "
                                 "else equal corr_id annotations within a pid",
            "copies.direction": "direction annotation or the copy slice name "
                                "(MEMORY_COPY_HOST_TO_DEVICE ...)",
            "copies.bytes": "copy_bytes annotation",
            "api.domain": "slice category (hip_api -> HIP_RUNTIME_API, __hip* names -> "
                          "HIP_COMPILER_API; hsa_api -> HSA_CORE_API, hsa_amd_* -> "
                          "HSA_AMD_EXT_API ...)",
            "markers.depth": "computed from the nesting of ranges per pid/tid/device/stream; "
                             "instant marks get 0",
            "counters": "kernel slice annotations other than the writer's known fields "
                        "(one per PMC)",
        }
        n_cnt = sum(counters_seen.values())
        meta: dict[str, Any] = {
            "format": self.name,
            "sources": [str(path)],
            "clock": clock_name,
            "pids": pids,
            "provenance": provenance,
            "warnings": warnings,
            "packets": n_packets,
        }
        if "rocprofiler-sdk" in tools:
            meta["tool"] = "rocprofv3"
        elif hipscope_made:
            meta["tool"] = "hipscope (pftrace export)"
        if dropped:
            meta["dropped"] = dropped
        if n_cnt:
            meta["counter_track_values_skipped"] = n_cnt
        if ignored:
            meta["skipped_slices"] = dict(ignored)
        links = {"kernels_by_flow": k_by_flow, "copies_by_flow": c_by_flow,
                 "by_corr_id": by_corr}
        meta["api_links"] = links
        if ann_times:
            meta["kernels_times_from_annotations"] = ann_times
        progress(1.0)
        return Trace(kernels=kernels_t, api=api_t, copies=copies_t, markers=markers_t,
                     counters=counters_t, devices=devices_t, queues=queues_t,
                     streams=streams_t, meta=meta)


def _api_domain(cat: str, name: str | None) -> str:
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


def _depths(cols: dict) -> list[int]:
    n = len(cols["start"])
    if n == 0:
        return []
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i in range(n):
        groups[(cols["pid"][i], cols["tid"][i], cols["device"][i],
                cols["stream"][i])].append(i)
    depth = [0] * n
    for idx in groups.values():
        # ranges only: instant marks (roctxMark) never enter the range stack -> depth 0
        idx = [i for i in idx if cols["end"][i] > cols["start"][i]]
        idx.sort(key=lambda i: (cols["start"][i], -cols["end"][i]))
        stack: list[int] = []
        for i in idx:
            s = cols["start"][i]
            while stack and stack[-1] <= s:
                stack.pop()
            depth[i] = min(len(stack), 32767)
            stack.append(cols["end"][i])
    return depth


def _decode_error():
    from google.protobuf.message import DecodeError

    return DecodeError
