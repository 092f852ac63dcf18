"""The C walk of a Perfetto trace (``hipscope/parsers/_pftscan.c``): framing, packets,
interned state, clocks and slice pairing in one pass with the GIL released while the
bytes are decoded. It fills the same :class:`Walk` the protobuf path fills, so the
tables are built by the same code.

``walk`` returns ``None`` (and the caller reads the file with the protobuf classes,
exactly as before) when the extension was not built, ``HIPSCOPE_PFTRACE_C=0``, or the
scanner declines the file (anything it does not know; see the C file's header).
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from typing import Any

from ...model.progress import CancelledFn, ProgressFn, check_cancel, no_progress
from .proto import Buffer, perfetto_pb2
from .walk import Walk, track_descriptor_of
from .wire import oneof_bitmap, read_descriptors

_pftscan: Any
try:
    from .. import _pftscan  # type: ignore[attr-defined,unused-ignore]
except ImportError:  # pragma: no cover - the extension is optional (pure-Python install)
    _pftscan = None

log = logging.getLogger(__name__)

PROBLEMS = {0: None, 1: "truncated", 3: "a length varint longer than 10 bytes"}
_ONEOF: bytes | None = None


def available() -> bool:
    """Whether the C walk is built and not switched off (``HIPSCOPE_PFTRACE_C=0``)."""
    return _pftscan is not None and os.environ.get("HIPSCOPE_PFTRACE_C", "1") != "0"


def data_oneof() -> bytes:
    """Bitmap of the field numbers of ``TracePacket``'s ``data`` oneof (so the C walk
    knows which fields replace the event; :data:`.wire.DATA_ONEOF_FIELDS`)."""
    global _ONEOF
    if _ONEOF is None:
        _ONEOF = oneof_bitmap()
    return _ONEOF


def read_tracks(data: Buffer, descs: list, tracks: dict) -> bool:
    """The track descriptors ``(start, length)`` of ``data`` into ``tracks``: as plain
    wire format, else with the protobuf classes; False where protobuf cannot decode one."""
    if read_descriptors(data, descs, tracks):
        return True
    track_desc = perfetto_pb2().TrackDescriptor
    try:
        for a, ln in descs:
            track_descriptor_of(track_desc.FromString(data[a:a + ln]), tracks)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError: its path says where
        return False
    return True


def walk(data: Buffer, progress: ProgressFn = no_progress,
         cancelled: CancelledFn | None = None) -> tuple[Walk, int, int, str | None] | None:
    """(walk, whole packets, bytes used, framing problem) or None (declined); between
    chunks of packets it reports ``progress`` (0..0.8) and raises Cancelled."""
    if not available():
        return None
    w = Walk()

    def tick(fraction: float) -> None:
        check_cancel(cancelled)
        progress(0.8 * fraction)

    got = _pftscan.walk(data, data_oneof(), w.primary_clock[0], tick)
    if got is None:
        log.debug("pftrace: the C walk declined the file; reading it with protobuf")
        return None
    (n, used, problem, bad, slices, open_slices, counters, clocks_used, snaps, primary,
     unresolved, skipped, n_begun, unmatched, hipscope_made, source_clock, descs) = got
    if not read_tracks(data, descs, w.tracks):
        return None
    w.slices = slices
    w.open_slices = defaultdict(list, open_slices)
    w.counters_seen = defaultdict(int, counters)
    w.clock_ids_used = clocks_used
    w.global_snaps = snaps
    w.primary_clock = [primary]
    w.unresolved, w.skipped_invalid, w.n_begun = unresolved, skipped, n_begun
    w.unmatched_ends = unmatched
    w.hipscope_made, w.source_clock = bool(hipscope_made), source_clock
    text = PROBLEMS.get(problem) if problem != 2 else \
        f"tag byte 0x{bad:02x} (field {bad >> 3}, wire type {bad & 7})"
    return w, n, used, text
