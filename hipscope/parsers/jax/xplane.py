"""XLA's native XSpace protobuf (``<host>.xplane.pb``) turned into the same events as
the trace-viewer JSON, so one table builder serves both.

Only the fields hipscope needs are decoded, straight from the protobuf wire format
(message definitions: openxla/xla ``xla/tsl/profiler/protobuf/xplane.proto``):
XSpace.planes(1); XPlane id(1) name(2) lines(3) event_metadata(4) stat_metadata(5);
XLine id(1) display_id(10) name(2) display_name(11) timestamp_ns(3) events(4); XEvent
metadata_id(1) offset_ps(2) duration_ps(3) stats(4); XStat metadata_id(1) double(2)
uint64(3) int64(4) str(5) ref(7); XEventMetadata id(1) name(2) display_name(4)
stats(5); XStatMetadata id(1) name(2). The planes and ids follow
``xla/tsl/profiler/convert/xplane_to_trace_events.cc``: ``/host:CPU`` is pid 701,
``/device:GPU:N`` (else TPU, else custom planes) pid 1 + plane id; a line's display id
is its tid; an event's time is its line's ``timestamp_ns`` plus ``offset_ps``.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from ..base import TraceFormatError
from .decode import Args, Ev, Top

HOST_PID = 701
_ARG_KEYS = set(Args.__struct_fields__)


class _Bad(Exception):
    pass


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise _Bad(pos)
        b = buf[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        if b < 0x80:
            return out, pos
        shift += 7


def fields(buf: bytes, pos: int = 0, end: int | None = None):
    """``(field number, value)`` of one message: ints for varints, bytes otherwise."""
    end = len(buf) if end is None else end
    while pos < end:
        key, pos = _varint(buf, pos)
        wt = key & 7
        if wt == 0:
            v, pos = _varint(buf, pos)
        elif wt == 2:
            n, pos = _varint(buf, pos)
            if pos + n > end:
                raise _Bad(pos)
            v, pos = buf[pos:pos + n], pos + n
        elif wt in (1, 5):
            size = 8 if wt == 1 else 4
            v, pos = buf[pos:pos + size], pos + size
        else:
            raise _Bad(pos)
        yield key >> 3, v


def _i64(v: Any) -> int:
    """A varint as int64 (0 for a field of the wrong wire type)."""
    if not isinstance(v, int):
        return 0
    return v - (1 << 64) if v >= 1 << 63 else v


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else ""


def _stat(buf: bytes, stat_names: dict[int, str]) -> tuple[str, str] | None:
    mid, value = 0, None
    for f, v in fields(buf):
        if f == 1:
            mid = _i64(v)
        elif f == 2 and isinstance(v, bytes) and len(v) == 8:
            value = repr(struct.unpack("<d", v)[0])
        elif f in (3, 4):
            value = str(v if f == 3 else _i64(v))
        elif f == 5:
            value = _text(v)
        elif f == 7:
            value = stat_names.get(_i64(v), "")
    name = stat_names.get(mid)
    return (name, value) if name and value is not None else None


def _metadata(plane: bytes) -> tuple[dict[int, str], dict[int, tuple[str, list]]]:
    """stat id -> name, event metadata id -> (name, raw stats)."""
    stat_names: dict[int, str] = {}
    event_raw: dict[int, tuple[str, list]] = {}
    for f, v in fields(plane):
        if f in (4, 5) and isinstance(v, bytes):
            for ef, ev in fields(v):
                if ef != 2 or not isinstance(ev, bytes):
                    continue
                m = dict(fields(ev))
                if f == 5:
                    stat_names[_i64(m.get(1, 0))] = _text(m.get(2))
                else:
                    name = _text(m.get(4)) or _text(m.get(2))
                    event_raw[_i64(m.get(1, 0))] = (name, [sv for sf, sv in fields(ev)
                                                           if sf == 5])
    return stat_names, event_raw


def _line_events(line: bytes, pid: int, stat_names, event_meta, out: list) -> tuple[int, str]:
    lid = disp = ts_ns = None
    name = disp_name = ""
    events = []
    for f, v in fields(line):
        if f == 1:
            lid = _i64(v)
        elif f == 10:
            disp = _i64(v)
        elif f == 2:
            name = _text(v)
        elif f == 11:
            disp_name = _text(v)
        elif f == 3:
            ts_ns = _i64(v)
        elif f == 4:
            events.append(v)
    tid = (disp or lid or 0) & 0xFFFFFFFF
    for ev in events:
        mid = off = dur = 0
        stats = []
        for f, v in fields(ev):
            if f == 1:
                mid = _i64(v)
            elif f == 2:
                off = _i64(v)
            elif f == 3:
                dur = _i64(v)
            elif f == 4:
                stats.append(v)
        ename, mstats = event_meta.get(mid, ("", []))
        args = dict(s for s in (_stat(b, stat_names) for b in [*mstats, *stats]) if s)
        start_ps = (ts_ns or 0) * 1000 + off
        out.append(Ev(ph="X", name=args.get("step_name", ename), pid=pid, tid=tid,
                      ts=start_ps / 1e6, dur=max(dur, 1) / 1e6,
                      args=Args(**{k: v for k, v in args.items() if k in _ARG_KEYS})))
    return tid, disp_name or name


def _planes(buf: bytes) -> list[tuple[int, str, bytes]]:
    planes = []
    for f, v in fields(buf):
        if f == 1 and isinstance(v, bytes):
            pid, name = 0, ""
            for pf, pv in fields(v):
                if pf == 1:
                    pid = _i64(pv)
                elif pf == 2:
                    name = _text(pv)
            planes.append((pid, name, v))
    return planes


def _chosen(planes: list[tuple[int, str, bytes]]) -> list[tuple[int, str, bytes]]:
    """The planes the trace viewer shows, with their pids."""
    out = [(HOST_PID, n, b) for _i, n, b in planes if n == "/host:CPU"]
    for prefix in ("/device:GPU:", "/device:TPU:", "/device:CUSTOM:"):
        dev = [(1 + i, n, b) for i, n, b in planes if n.startswith(prefix)]
        if dev:
            return out + dev
    return out


def load_xspace(path: Path, warnings: list[str]) -> Top:
    """The events of an XSpace file, as the trace-viewer JSON would hold them."""
    buf = path.read_bytes()
    evs: list[Ev] = []
    try:
        for pid, pname, plane in _chosen(_planes(buf)):
            evs.append(Ev(ph="M", name="process_name", pid=pid, args=Args(name=pname)))
            stat_names, event_meta = _metadata(plane)
            for f, v in fields(plane):
                if f == 3 and isinstance(v, bytes):
                    tid, tname = _line_events(v, pid, stat_names, event_meta, evs)
                    evs.append(Ev(ph="M", name="thread_name", pid=pid, tid=tid,
                                  args=Args(name=tname)))
    except (_Bad, struct.error, RecursionError) as exc:
        raise TraceFormatError(path, f"byte {exc.args[0] if exc.args else '?'}",
                               "an XLA XSpace protobuf", "a damaged protobuf message") from None
    return Top(traceEvents=evs)
