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
Packets are decoded by the C wire-format walk (``_pftscan.c``) when it is built and
takes the file: first as columns (:mod:`.colwalk`, one record per slice and one column
per annotation name, the tables built with numpy in :mod:`.colbuild`), else
(``HIPSCOPE_PFTRACE_COLUMNS=0``, or what the column tables decline) as records
(:mod:`.fast`); else (``HIPSCOPE_PFTRACE_C=0``, or anything the C walk declines) with
the protobuf classes shipped in the ``perfetto`` package
(``perfetto.protos.perfetto.trace.perfetto_trace_pb2``). The record walks fill the same
:class:`~.walk.Walk` and share the table code; all three give the same Trace. The file
is read into memory, never memory-mapped: a file truncated while a map of it is read
kills the process (SIGBUS). The sniff and the track descriptors are read as plain wire
format (:mod:`.wire`), so the C paths import no protobuf.
"""


from __future__ import annotations

from pathlib import Path

from ...model import Trace
from ..base import (
    Cancelled,
    check_cancel,
    TraceFormatError,
    head_bytes,
    is_gzip,
    register,
)
from .proto import EXTENSIONS, perfetto_pb2, read_varint, scan_packets
from .wire import SNIFF_FIELDS, packet_fields

# the sniff needs only .proto's framing and .wire; the walks and tables (.colread,
# .fast, .walk, .tables) are imported when a file is read

__all__ = ["PftraceReader", "scan_packets"]


def _wire_good(head: bytes, ranges: list) -> int | None:
    """How many of the first 64 packets ``ranges`` carry a field of a Perfetto trace, read
    as wire format (no protobuf import); None (undecided: the protobuf classes look) where one
    is not plain wire format or none carries what only a Perfetto trace has (any
    protobuf is wire format: an XPlane ``.pb`` has fields 2 and 6 too)."""
    good, sure = 0, False
    for i, (a, b) in enumerate(ranges):  # the first 64 counted, every one looked at
        got = packet_fields(head, a, b)
        if got is None:
            return None
        good += i < 64 and not got[0].isdisjoint(SNIFF_FIELDS)
        sure |= got[1]
    return good if sure else None


def _protobuf_good(head: bytes, ranges: list) -> int | None:
    """:func:`_wire_good` with the protobuf classes (None: a packet does not decode)."""
    pb2 = perfetto_pb2()
    good = 0
    for a, b in ranges:
        try:
            pkt = pb2.TracePacket.FromString(head[a:b])
        except Exception:  # noqa: BLE001 - any decode failure means "not mine"
            return None
        if (pkt.HasField("track_event") or pkt.HasField("track_descriptor")
                or pkt.HasField("interned_data") or pkt.HasField("clock_snapshot")
                or pkt.HasField("trace_config") or pkt.HasField("trace_packet_defaults")
                or pkt.HasField("process_tree") or pkt.HasField("trace_stats")):
            good += 1
    return good


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
            length, p = read_varint(head, 1, len(head))
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
        ranges, _, _ = scan_packets(head)
        good = _wire_good(head, ranges)
        if good is None:
            good = _protobuf_good(head, ranges[:64])
        if good is None:
            return 0.0
        if not good:
            return 0.3 if ext else 0.0
        return 0.95 if ext else 0.8

    # ------------------------------------------------------------------ read
    def read(self, path, progress, cancelled) -> Trace:
        from .._json import gc_paused

        path = Path(path)
        try:
            with gc_paused():  # millions of small lists and dicts: no collector passes
                return self._read(path, progress, cancelled)
        except (TraceFormatError, Cancelled):
            raise
        except Exception as exc:  # noqa: BLE001 - the contract: nothing else escapes
            raise TraceFormatError(path, getattr(exc, "_where", None),
                                   "a Perfetto trace hipscope can read",
                                   f"{type(exc).__name__}: {exc}") from exc

    def _read(self, path: Path, progress, cancelled) -> Trace:
        """The column walk and numpy tables, else the record walk (C, else protobuf)."""
        from .._common import read_input
        from .colread import read_columns
        from .fast import walk as walk_fast
        from .tables import build
        from .walk import Walk

        warnings: list[str] = []
        dropped: dict[str, int] = {}
        # read, not memory-mapped: a file rewritten meanwhile (a profiler run again with
        # the same output name truncates it) must not kill the process with SIGBUS
        data: bytes = read_input(path, warnings)
        if not data:
            raise TraceFormatError(path, "byte 0", "a Perfetto Trace protobuf "
                                   "(TracePacket records, tag 0x0a)", "an empty file")
        check_cancel(cancelled)
        box = [data]
        del data  # the column path lets go of the bytes once they are walked
        got = read_columns(self.name, path, box, warnings, dropped, progress, cancelled)
        if got is not None:
            return got
        data = box[0] if box else read_input(path, [])
        del box
        fast = walk_fast(data, progress, cancelled)
        if fast is None:
            ranges, used, problem = scan_packets(data)
            n_packets = len(ranges)
        else:
            walk, n_packets, used, problem = fast
        if problem == "truncated":
            if not n_packets:
                raise TraceFormatError(path, "packet 0 at byte 0", "a whole TracePacket",
                                       f"a record cut short ({len(data)} bytes in the file)")
            lost = len(data) - used
            warnings.append(f"{path}: the file ends inside packet {n_packets} at byte "
                            f"{used:,} (truncated); read {n_packets:,} whole packets and "
                            f"dropped the last {lost:,} bytes")
            dropped["packets"] = dropped.get("packets", 0) + 1
            dropped["bytes"] = lost
        elif problem is not None:
            raise TraceFormatError(
                path, f"packet {n_packets} at byte {used}",
                "a TracePacket record (Trace field 1, tag 0x0a)", problem)
        if fast is None:
            walk = Walk()
            walk.run(path, data, ranges, progress, cancelled)
        del data, fast  # the packets are walked: the file's bytes are not needed now
        slices, clock_name = walk.finish(warnings, dropped)
        check_cancel(cancelled)
        progress(0.85)
        return build(self.name, path, slices, walk.tracks, walk.counters_seen, clock_name,
                     warnings, dropped, n_packets, progress, walk.hipscope_made)
