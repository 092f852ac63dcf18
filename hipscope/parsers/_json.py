"""JSON decoding helpers shared by the msgspec readers (Kineto, rocprofv3 JSON,
legacy rocprof results.json): the collector paused while millions of small objects
are made, and msgspec error messages turned into a place for TraceFormatError."""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager

_BYTE = re.compile(r"\(?byte (\d+)\)?")
_PATH = re.compile(r"at `([^`]*)`")
_RECORD = re.compile(r"\$\.traceEvents\[(\d+)\]")


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside (re-enabled after, if it was on)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def error_byte(msg: str) -> int | None:
    """The byte offset a msgspec DecodeError names, if any."""
    m = _BYTE.search(msg)
    return int(m.group(1)) if m else None


def error_place(msg: str, buf: bytes | None = None, records: bool = False,
                path_first: bool = False) -> str | None:
    """Where a msgspec error happened, for TraceFormatError: ``"byte N"`` (``"byte N
    (line L)"`` given the text), the JSON path of a ValidationError (``$.a[3].b``), or
    with ``records`` ``"record N of traceEvents"``. None when the message names none."""
    m = _PATH.search(msg) if path_first else None
    if m:
        return m.group(1)
    off = error_byte(msg)
    if off is not None:
        if buf is None:
            return f"byte {off}"
        line = buf.count(b"\n", 0, off) + 1
        return f"byte {off} (line {line})"
    if records:
        m = _RECORD.search(msg)
        if m:
            return f"record {m.group(1)} of traceEvents"
    return None
