"""Kineto JSON decoded by msgspec into typed Structs (``args`` reduced to the keys the
tables use), with a generic fallback for odd value types and recovery of a text cut
short."""

from __future__ import annotations

import re
from collections import deque
from itertools import compress, repeat
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec

from .._json import error_byte, error_place, gc_paused
from ..base import TraceFormatError, read_bytes_tolerant

__all__ = [
    "API_CATS", "ARG_FIELDS", "CAT_ALIASES", "CHUNK_BYTES", "EMPTY_ARGS", "GPU_CATS",
    "GPU_MARKER_CATS", "HOST_MARKER_CATS", "Top", "canonical_cat", "decode", "decode_chunked",
    "load"
]

# --------------------------------------------------------------------------- structs


class _Args(msgspec.Struct, gc=False):
    """The args the tables use; every other key is skipped while decoding. Values are
    left untyped (coerced later, vectorised) so that no odd value fails the decode."""

    correlation: Any = None
    device: Any = None
    stream: Any = None
    grid: Any = None
    block: Any = None
    registers: Any = msgspec.field(default=None, name="registers per thread")
    shared: Any = msgspec.field(default=None, name="shared memory")
    bytes: Any = None
    size: Any = None
    kind: Any = None
    name: Any = None      # ph M process_name / thread_name
    labels: Any = None    # ph M process_labels
    # PyTorch op fields (ops by shape: analysis/ops); shapes and types stay raw JSON
    # text (msgspec.Raw: as cheap as skipping them), the ids are small ints
    input_dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input Dims")
    input_type: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input type")
    external_id: Any = msgspec.field(default=None, name="External id")
    sequence_number: Any = msgspec.field(default=None, name="Sequence number")
    fwd_thread_id: Any = msgspec.field(default=None, name="Fwd thread id")
    # record_param_comms (c10d) fields: which collective, of which process group
    coll_name: Any = msgspec.field(default=None, name="Collective name")
    pg_name: Any = msgspec.field(default=None, name="Process Group Name")
    pg_ranks: Any = msgspec.field(default=None, name="Process Group Ranks")
    seq: Any = msgspec.field(default=None, name="Seq")


RAW_ARGS = ("Input Dims", "Input type")
_ARGS, _DIMS = attrgetter("args"), attrgetter("input_dims")


def own_raw(evs: list, seen: dict) -> None:
    """Raw args point into the buffer they were decoded from (a reused piece, a memory
    map): give the ops that have them values of their own, one object per distinct
    text (``seen``: an op's shapes and types repeat across the trace)."""
    args = list(filter(None, map(_ARGS, evs)))       # C-level loops over the events
    for a in compress(args, map(_DIMS, args)):        # the ops with shapes
        for f in ("input_dims", "input_type"):
            b = bytes(getattr(a, f))
            r = seen.get(b)
            if r is None:
                r = seen[b] = msgspec.Raw(b)
            setattr(a, f, r)


EMPTY_ARGS = _Args()


class _Ev(msgspec.Struct, gc=False):
    ph: Any = ""
    cat: Any = ""
    name: Any = ""
    pid: Any = -1
    tid: Any = -1
    ts: Any = None
    dur: Any = None
    id: Any = None
    bp: Any = None
    args: _Args | None = None


# top-level keys besides traceEvents (metadata; every value kept as decoded)
_TOP_FIELDS = ("schemaVersion", "deviceProperties", "distributedInfo", "baseTimeNanoseconds",
               "displayTimeUnit", "traceName", "trace_id", "cupti_version",
               "cuda_runtime_version", "cuda_driver_version", "roctracer_version",
               "hip_runtime_version", "hip_driver_version")
_TOP_TAIL = [(f, Any, None) for f in _TOP_FIELDS]
# typed events; and the generic form for files whose values have odd types
Top = msgspec.defstruct("Top", [("traceEvents", list[_Ev]), *_TOP_TAIL])
_LooseTop = msgspec.defstruct("_LooseTop", [("traceEvents", list[Any]), *_TOP_TAIL])


ARG_FIELDS = ("correlation", "device", "stream", "registers", "shared", "bytes", "size")

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
API_CATS = ("cuda_runtime", "cuda_driver", "cuda_sync")
HOST_MARKER_CATS = ("user_annotation", "cpu_op", "python_function")
GPU_MARKER_CATS = ("gpu_user_annotation",)

# Older spellings of the categories, matched case-insensitively (TensorBoard plugin's
# torch_tb_profiler/profiler/trace.py EventTypeMap reads them the same way): PyTorch
# 1.8/1.9 (2021) Kineto wrote "Operator", "Runtime", "Kernel", "Memcpy", "Memset".
CAT_ALIASES = {"operator": "cpu_op", "runtime": "cuda_runtime", "memcpy": "gpu_memcpy",
               "memset": "gpu_memset", "python": "python_function", "trace": "Trace"}
_CANONICAL = (*GPU_CATS, *API_CATS, *HOST_MARKER_CATS, *GPU_MARKER_CATS, "ac2g")


def canonical_cat(cat: object) -> object:
    """The current spelling of a Kineto category (unknown ones unchanged)."""
    if not isinstance(cat, str) or cat in _CANONICAL:
        return cat
    low = cat.strip().lower()
    return low if low in _CANONICAL else CAT_ALIASES.get(low, cat)


# --------------------------------------------------------------------------- decoding


def _decode_strict(buf: bytes) -> Top:
    with gc_paused():
        return msgspec.json.decode(buf, type=Top)


def _loose_event(obj: Any) -> _Ev | None:
    if not isinstance(obj, dict):
        return None
    args = obj.get("args")
    try:
        if isinstance(args, dict):   # the raw-JSON fields take Raw, not lists
            args = {k: msgspec.Raw(msgspec.json.encode(v)) if k in RAW_ARGS else v
                    for k, v in args.items()}
        a = msgspec.convert(args, _Args) if isinstance(args, dict) else None
    except msgspec.ValidationError:
        a = None
    return _Ev(ph=obj.get("ph", ""), cat=obj.get("cat", ""), name=obj.get("name", ""),
               pid=obj.get("pid", -1), tid=obj.get("tid", -1), ts=obj.get("ts"),
               dur=obj.get("dur"), id=obj.get("id"), bp=obj.get("bp"), args=a)


def _decode_loose(path: Path, buf: bytes) -> tuple[Top, int]:
    """Decode with generic types and coerce: for files whose values have unusual
    types. Returns the top object and the count of records that were not objects."""
    try:
        loose = msgspec.json.decode(buf, type=_LooseTop)
    except msgspec.ValidationError as exc:
        msg = str(exc)
        raise TraceFormatError(path, "top level",
                               "a JSON object with a 'traceEvents' list (PyTorch profiler trace)",
                               msg) from None
    evs = []
    bad = 0
    for obj in loose.traceEvents:
        ev = _loose_event(obj)
        if ev is None:
            bad += 1
        else:
            evs.append(ev)
    fields = {f: getattr(loose, f) for f in Top.__struct_fields__ if f != "traceEvents"}
    return Top(traceEvents=evs, **fields), bad


def _decode_any(path: Path, buf: bytes) -> tuple[Top, int]:
    """Typed decode, falling back to a generic one when values have odd types.
    Raises msgspec.DecodeError for text that is not JSON (or cut short)."""
    try:
        return _decode_strict(buf), 0
    except msgspec.ValidationError:
        return _decode_loose(path, buf)


def _recover_truncated(path: Path, buf: bytes) -> tuple[Top, int, int] | None:
    """A JSON text cut short: close it after the last whole element and decode.
    Returns (top, records that were not objects, bytes dropped) or None when no cut
    point works."""
    start = buf.find(b'"traceEvents"')
    if start < 0:
        return None
    tries = 0
    window = 1 << 20
    seen: set[int] = set()
    while tries < 10:
        lo = max(start, len(buf) - window)
        cands = []
        for m in re.finditer(rb"([}\]])\s*,", buf[lo:]):
            pos = lo + m.start(1)
            if pos not in seen:
                cands.append((pos, m.group(1)))
        for pos, ch in reversed(cands):
            seen.add(pos)
            tail = b"]}" if ch == b"}" else b"}"
            tries += 1
            try:
                top, bad = _decode_any(path, buf[:pos + 1] + tail)
            except (msgspec.DecodeError, TraceFormatError):
                if tries >= 10:
                    break
                continue
            return top, bad, len(buf) - pos - 1
        if lo == start:
            break
        window *= 16
    return None


CHUNK_BYTES = 32 << 20  # traceEvents decoded this much at a time (see decode_chunked)
_SEP = b"},\n"
_NAME = attrgetter("name")  # an event's end: a newline is never inside a JSON string


def _head_tail(buf, key: int, open_: int) -> Top | None:
    """The top-level keys before ``traceEvents`` (its list cut to ``[]``)."""
    if bytes(buf[key + len(b'"traceEvents"'):open_]).strip() != b":":
        return None
    head = msgspec.json.decode(bytes(buf[:open_ + 1]) + b"]}", type=Top)
    return head if not head.traceEvents else None


def _intern(evs: list, seen: dict) -> None:
    """One string object per distinct event name (1M events hold ~1,000 names: ~300 MB
    of copies at 1M events otherwise)."""
    names = list(map(_NAME, evs))
    try:  # C-level loops: map over setdefault and setattr
        deque(map(setattr, evs, repeat("name"), map(seen.setdefault, names, names)), 0)
    except TypeError:  # an odd, unhashable name: the rest left as they are
        pass


def decode_chunked(buf) -> Top | None:
    """The strict typed decode, ``CHUNK_BYTES`` of traceEvents at a time: split after
    an event's closing ``},`` at a line end, each piece decoded as a list of events (a
    piece that does not end at an event's end cannot parse), the keys before and after
    the list decoded with the first and last piece. None when the file is not laid out
    so, or any piece fails: the caller then decodes it whole (and reports what is
    wrong). A top-level key
    given both before and after traceEvents keeps its later value, as a whole decode
    does, unless that value is null."""
    key = buf.find(b'"traceEvents"')
    open_ = buf.find(b"[", key) if key >= 0 else -1
    if open_ < 0:
        return None
    try:
        head = _head_tail(buf, key, open_)
        if head is None:
            return None
        events: list = []
        seen: dict = {}
        pos, n = open_ + 1, len(buf)
        piece = bytearray(b"[") + bytearray(CHUNK_BYTES + (1 << 20))  # reused: no faults
        with memoryview(buf) as view, memoryview(piece) as out:
            while True:
                sep = buf.find(_SEP, pos + CHUNK_BYTES) if pos + CHUNK_BYTES < n else -1
                if sep < 0 or sep + 1 - pos > len(piece) - 2:
                    break
                k = sep + 1 - pos
                out[1:1 + k] = view[pos:sep + 1]
                out[1 + k] = 0x5D  # "]"
                evs = msgspec.json.decode(out[:k + 2], type=list[_Ev])
                own_raw(evs, seen)    # the piece's buffer is reused
                _intern(evs, seen)
                events.extend(evs)
                pos = sep + 2
            del piece
            tail = msgspec.json.decode(b'{"traceEvents":[' + bytes(view[pos:]), type=Top)
        _intern(tail.traceEvents, seen)
        events.extend(tail.traceEvents)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    fields = {f: getattr(tail, f) if getattr(tail, f) is not None else getattr(head, f)
              for f in _TOP_FIELDS}
    return Top(traceEvents=events, **fields)


def read_text(path: Path) -> tuple[bytes, str | None]:
    """The file's text (un-gzipped) and the gzip warning, if any. Read into memory, never
    memory-mapped: a file truncated while a map of it is read kills the process (SIGBUS)."""
    try:
        return read_bytes_tolerant(path)
    except OSError as exc:
        raise TraceFormatError(path, None, "a readable file", str(exc)) from None


def load(path: Path, warnings: list[str], dropped: dict[str, int],
         text: tuple[bytes, str | None] | None = None) -> Top:
    """The decoded file (gzip or plain JSON); ``text``: :func:`read_text`'s, when read."""
    buf, gz_warn = text if text is not None else read_text(path)
    if gz_warn:
        warnings.append(gz_warn)
    if not buf:
        raise TraceFormatError(path, "byte 0", "a JSON object with a 'traceEvents' list",
                               "an empty file")
    with gc_paused():
        top = decode_chunked(buf)
    return top if top is not None else decode(path, buf, warnings, dropped)


def decode(path: Path, buf, warnings: list[str], dropped: dict[str, int]) -> Top:
    """Decode, keeping the whole events of a text cut short (reported)."""
    bad = 0
    try:
        top, bad = _decode_any(path, buf)
    except msgspec.DecodeError as exc:
        msg = str(exc)
        buf = bytes(buf)
        if not buf.strip():
            raise TraceFormatError(path, "byte 0", "a JSON object with a 'traceEvents' "
                                   "list", "an empty file") from None
        off = error_byte(msg)
        cut_short = "truncated" in msg or (off is not None and off >= len(buf) - 64)
        rec = _recover_truncated(path, buf) if cut_short else None
        if rec is None:
            where = error_place(msg, buf, records=True) or f"byte {len(buf)} (end of data)"
            raise TraceFormatError(path, where,
                                   "JSON text: an object with a 'traceEvents' list",
                                   msg) from None
        top, bad, lost = rec
        n_ok = len(top.traceEvents)
        warnings.append(
            f"{path}: the JSON text ends early ({msg}); kept {n_ok:,} whole events of "
            f"traceEvents and dropped the last {lost:,} bytes (a partial event and any "
            "top-level keys after it)")
        dropped["bytes"] = lost
    if bad:
        dropped["records that are not objects"] = bad
        warnings.append(f"{path}: {bad:,} elements of traceEvents are not objects "
                        "and were skipped")
    own_raw(top.traceEvents, {})
    return top
