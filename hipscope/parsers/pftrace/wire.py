"""Protobuf wire format in plain Python for what the column path needs besides the C walk:
the sniff's look at the first packets and the few ``TrackDescriptor`` packets, so that
opening a pftrace imports no protobuf classes (the import alone is about 0.1-0.5 s).

Anything unusual (a malformed or over-long field, a group, a known field with another
wire type, invalid UTF-8, a nested descriptor this code does not read) gives None: the
caller then uses the protobuf classes, exactly as before. Field numbers are those of
perfetto_trace.proto (the tests check them against the protobuf descriptors).
"""

from __future__ import annotations

from collections.abc import Iterator

from .proto import Buffer, read_varint

# TracePacket's ``data`` oneof (a bitmap for the C walk: which fields replace the event)
DATA_ONEOF_FIELDS = (
    1, 2, 4, 5, 6, 7, 9, 11, 33, 34, 35, 36, 37, 38, 39, 40, 43, 44, 45, 46, 47, 48, 49,
    50, 51, 52, 53, 54, 57, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74,
    75, 77, 78, 82, 83, 84, 86, 89, 90, 91, 95, 99, 100, 101, 102, 103, 107, 109, 110,
    111, 113, 115, 117, 118, 119, 120, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131,
    132, 133, 134, 135, 138, 900)
# TracePacket fields the sniff takes as a Perfetto trace's: track_event, track_descriptor,
# interned_data, clock_snapshot, trace_config, trace_packet_defaults, process_tree,
# trace_stats
SNIFF_FIELDS = frozenset({11, 60, 12, 6, 33, 59, 2, 35})
# TrackDescriptor: uuid 1, parent_uuid 5, name 2 / static_name 10 / atrace_name 13 (one
# oneof), description 14, process 3, thread 4, counter 8; chrome_process 6,
# chrome_thread 7 and state 18 are messages this code does not read (None)
_TD_VARINT = {1: "uuid", 5: "parent"}
_TD_NAMES = (2, 10, 13)
_TD_UNREAD = frozenset({6, 7, 18})


class Bad(Exception):
    """Not wire format this module reads (the caller takes the protobuf classes)."""


def varint(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """(value, next position) (:func:`.proto.read_varint`); Bad when cut short or
    beyond 64 bits."""
    try:
        value, pos = read_varint(buf, pos, end)
    except ValueError:
        raise Bad("varint beyond 64 bits") from None
    if pos < 0:
        raise Bad("varint cut short")
    if value >> 64:
        raise Bad("varint beyond 64 bits")
    return value, pos


def fields(buf: Buffer, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field, wire type, value or start, end) of each field of one message; for wire
    type 2 the value is where the bytes start. Bad on anything malformed or a group."""
    while pos < end:
        key, pos = varint(buf, pos, end)
        f, wt = key >> 3, key & 7
        if f == 0 or f > 0x1FFFFFFF:
            raise Bad("field number 0 or beyond 2^29")
        if wt == 0:
            v, pos = varint(buf, pos, end)
            yield f, 0, v, pos
        elif wt == 2:
            n, pos = varint(buf, pos, end)
            if n > end - pos:
                raise Bad("length beyond the message")
            yield f, 2, pos, pos + n
            pos += n
        elif wt in (1, 5):
            width = 8 if wt == 1 else 4
            if end - pos < width:
                raise Bad("fixed field cut short")
            yield f, wt, int.from_bytes(buf[pos:pos + width], "little"), pos + width
            pos += width
        else:
            raise Bad(f"wire type {wt}")


def _text(buf: Buffer, a: int, b: int) -> str:
    try:
        return bytes(buf[a:b]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Bad("invalid UTF-8") from exc


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _sub(buf: Buffer, a: int, b: int, out: dict, spec: dict) -> None:
    """Merge a ProcessDescriptor / ThreadDescriptor into ``out`` (the last value wins)."""
    for f, wt, v, e in fields(buf, a, b):
        got = spec.get(f)
        if got is None:
            continue
        key, kind = got
        if (wt != 2) if kind == "str" else (wt != 0):
            raise Bad("a known field with another wire type")
        out[key] = _text(buf, v, e) if kind == "str" else _signed(v, 32 if kind == "i32"
                                                                   else 64)


_PROCESS = {1: ("pid", "i32"), 6: ("process_name", "str")}
_THREAD = {1: ("pid", "i32"), 2: ("tid", "i64"), 5: ("thread_name", "str")}


def track_descriptor(buf: Buffer, a: int, b: int) -> dict | None:
    """The fields of the TrackDescriptor at ``buf[a:b]`` that the tables read, as
    ``{"uuid", "parent"?, "name"?, "description"?, "process"?, "thread"?, "counter"?}``
    (present keys = set fields), or None (the caller decodes it with protobuf)."""
    td: dict = {"uuid": 0}
    try:
        for f, wt, v, e in fields(buf, a, b):
            if f in _TD_VARINT or f in _TD_NAMES or f in (14, 3, 4, 8) or f in _TD_UNREAD:
                if f in _TD_UNREAD or wt != (0 if f in _TD_VARINT else 2):
                    return None
            if f in _TD_VARINT:
                td[_TD_VARINT[f]] = v
            elif f in _TD_NAMES:
                td["name"] = _text(buf, v, e)
            elif f == 14:
                td["description"] = _text(buf, v, e)
            elif f == 3:
                _sub(buf, v, e, td.setdefault("process", {}), _PROCESS)
            elif f == 4:
                _sub(buf, v, e, td.setdefault("thread", {}), _THREAD)
            elif f == 8:
                for _ in fields(buf, v, e):  # CounterDescriptor: presence only, but whole
                    pass
                td["counter"] = True
    except Bad:
        return None
    return td


def add_track(td: dict, tracks: dict) -> None:
    """What :func:`.walk.track_descriptor_of` records of a descriptor, from
    :func:`track_descriptor`'s dict."""
    t = tracks.setdefault(td["uuid"], {})
    if "parent" in td:
        t["parent"] = td["parent"]
    if "name" in td:
        t["name"] = td["name"]
    if "description" in td:
        t["description"] = td["description"]
    if "process" in td:
        t["pid"] = td["process"].get("pid", 0)
        if td["process"].get("process_name"):
            t["process_name"] = td["process"]["process_name"]
    if "thread" in td:
        t["pid"] = td["thread"].get("pid", 0)
        t["tid"] = td["thread"].get("tid", 0)
        if td["thread"].get("thread_name"):
            t["thread_name"] = td["thread"]["thread_name"]
    if td.get("counter"):
        t["counter"] = True


def read_descriptors(data: Buffer, descs: list, tracks: dict) -> bool:
    """Add every descriptor ``(start, length)`` of ``data`` to ``tracks``; False (and
    ``tracks`` untouched) where one is not plain wire format this module reads."""
    got = []
    for a, ln in descs:
        td = track_descriptor(data, a, a + ln)
        if td is None:
            return False
        got.append(td)
    for td in got:
        add_track(td, tracks)
    return True


# what only a Perfetto trace has: track_event, track_descriptor, interned_data
PERFETTO_ONLY = frozenset({11, 60, 12})
# TracePacket varints: timestamp, trusted_packet_sequence_id, sequence_flags,
# timestamp_clock_id
_PACKET_VARINTS = frozenset({8, 10, 13, 58})


def packet_fields(head: Buffer, a: int, b: int) -> tuple[set[int], bool] | None:
    """The length-delimited fields of the packet ``head[a:b]`` and whether one of them is
    a :data:`PERFETTO_ONLY` message whose bytes parse as fields (None: malformed)."""
    try:
        got, sure = set(), False
        for f, wt, v, e in fields(head, a, b):
            if f in _PACKET_VARINTS and wt != 0:
                return None  # protobuf would not decode it as a TracePacket either
            if wt != 2:
                continue
            got.add(f)
            if f in PERFETTO_ONLY:
                for _ in fields(head, v, e):
                    pass
                sure = True
        return got, sure
    except Bad:
        return None


def oneof_bitmap() -> bytes:
    """:data:`DATA_ONEOF_FIELDS` as the C walk's bitmap (128 bytes)."""
    bits = bytearray(128)
    for n in DATA_ONEOF_FIELDS:
        if n < 1024:
            bits[n >> 3] |= 1 << (n & 7)
    return bytes(bits)
