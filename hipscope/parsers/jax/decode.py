"""JAX / XLA trace-viewer JSON decoded by msgspec into small Structs (only the ``args``
keys the tables use), with recovery of a text cut short.

The layout (openxla/xla ``xla/tsl/profiler/convert/trace_events_to_json.cc`` and
``xplane_to_trace_events.cc``): ``{"displayTimeUnit":"ns","metadata":{...},
"traceEvents":[...,{}]}``; one process per XPlane (``/host:CPU`` as pid 701 or 501,
``/device:GPU:N`` as pid N+1), one thread per XLine (``Stream #7(Kernel,MemcpyH2D)``,
``XLA Ops``, ``XLA Modules``, host threads by name); only ``ph`` ``M`` and ``X``
events; ``ts``/``dur`` in µs with up to ps precision; every arg value a string.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from .._common import read_input
from .._json import error_byte, error_place
from ..base import TraceFormatError


class Args(msgspec.Struct, gc=False):
    """The args the tables use (values untyped: coerced later, nothing fails)."""

    name: Any = None            # ph M process_name / thread_name
    correlation_id: Any = None
    hlo_op: Any = None
    hlo_module: Any = None
    kernel_details: Any = None
    memcpy_details: Any = None
    memset_details: Any = None
    cuda_graph_exec_id: Any = None
    device_id: Any = None


class Ev(msgspec.Struct, gc=False):
    ph: Any = ""
    name: Any = ""
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: Args | None = None


class Top(msgspec.Struct, gc=False):
    traceEvents: list[Ev] = []
    displayTimeUnit: Any = None


class _LooseTop(msgspec.Struct, gc=False):
    traceEvents: list[Any] = []
    displayTimeUnit: Any = None


_EXPECTED = "JSON text: an object with a 'traceEvents' list"


def _decode_any(path: Path, buf: bytes) -> tuple[Top, int]:
    """Typed decode; elements that are not objects are skipped (counted)."""
    try:
        return msgspec.json.decode(buf, type=Top), 0
    except msgspec.ValidationError as exc:
        try:
            loose = msgspec.json.decode(buf, type=_LooseTop)
        except msgspec.ValidationError:
            raise TraceFormatError(path, error_place(str(exc), path_first=True) or "the top level",
                                   _EXPECTED, str(exc)) from None
    evs, bad = [], 0
    for obj in loose.traceEvents:
        try:
            evs.append(msgspec.convert(obj, Ev))
        except msgspec.ValidationError:
            bad += 1
    return Top(traceEvents=evs, displayTimeUnit=loose.displayTimeUnit), bad


def _recover_truncated(path: Path, buf: bytes) -> tuple[Top, int, int] | None:
    """A text cut short: close it after one of the last whole events and decode.
    Returns (top, elements skipped, bytes dropped) or None."""
    start = buf.find(b'"traceEvents"')
    if start < 0:
        return None
    lo = max(start, len(buf) - (1 << 20))
    cuts = [m.start(1) for m in re.finditer(rb"(\})\s*,", buf[lo:])][-10:]
    for pos in reversed(cuts):
        pos += lo
        try:
            top, bad = _decode_any(path, buf[:pos + 1] + b"]}")
        except (msgspec.DecodeError, TraceFormatError):
            continue
        return top, bad, len(buf) - pos - 1
    return None


def load(path: Path, warnings: list[str], dropped: dict[str, int]) -> Top:
    """The decoded file (gzip or plain), whole events of a text cut short kept."""
    buf = read_input(path, warnings)
    if not buf.strip():
        raise TraceFormatError(path, "byte 0", _EXPECTED, "an empty file")
    try:
        top, bad = _decode_any(path, buf)
    except msgspec.DecodeError as exc:
        msg = str(exc)
        off = error_byte(msg)
        cut_short = "truncated" in msg or (off is not None and off >= len(buf) - 64)
        rec = _recover_truncated(path, buf) if cut_short else None
        if rec is None:
            where = error_place(msg, buf) or f"byte {len(buf)} (end of data)"
            raise TraceFormatError(path, where, _EXPECTED, msg) from None
        top, bad, lost = rec
        warnings.append(f"{path}: the JSON text ends early ({msg}); kept {len(top.traceEvents):,} "
                        f"whole events and dropped the last {lost:,} bytes")
        dropped["bytes"] = lost
    if bad:
        dropped["records that are not objects"] = bad
        warnings.append(f"{path}: {bad:,} elements of traceEvents are not objects and were "
                        "skipped")
    return top
