"""JAX / XLA profiler output: the trace-viewer JSON that ``jax.profiler.trace`` writes
(``<host>.trace.json.gz``; with ``create_perfetto_trace=True`` also
``perfetto_trace.json.gz``, the same JSON), XLA's native XSpace protobuf
(``<host>.xplane.pb``, decoded by :mod:`.xplane` into the same events) and the log
folder holding them.

Sniffed by content: the trace viewer names its processes after XPlanes
(``/host:CPU``, ``/device:GPU:0``), which no PyTorch (Kineto) trace does.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

from ...model import Trace
from ..base import Cancelled, TraceFormatError, check_cancel, head_bytes, register
from .folder import run_files, the_trace_file

# the sniff needs only the first bytes and .folder; the decoders and the table builder
# (.decode, .xplane, .tables) are imported when a file is read

_PLANE_NAME = re.compile(r'"name"\s*:\s*"/(?:host:[A-Za-z_-]+|device:[A-Za-z_]+:\d+)"')
_PROCESS_NAME = re.compile(r'"process_name"')
_KINETO = ('"schemaVersion"', '"deviceProperties"', '"baseTimeNanoseconds"', '"cpu_op"')


def _head_text(path: Path, n: int) -> str:
    """The first ``n`` characters, un-gzipped; a gzip stream cut short still gives what
    decompressed (a torn trace is still sniffed as what it is)."""
    with open(path, "rb") as fh:
        raw = fh.read(1 << 20)
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, n)
        except zlib.error:
            return ""
    return raw[:n].decode("utf-8", errors="replace")


@register
class JaxReader:
    name = "jax"
    description = "JAX / XLA profiler trace (trace viewer JSON)"
    patterns = ("*.trace.json.gz", "*.trace.json", "perfetto_trace.json.gz")
    priority = 60
    directories = True

    def sniff(self, path: Path) -> float:
        if path.is_dir():
            runs = run_files(path)
            files = [f for fs in runs.values() for f in fs]
            if not runs or (files and not all(self.sniff(f) > 0.9 for f in files)):
                return 0.0
            return 0.9      # a jax.profiler log dir (or one only of .xplane.pb: refused)
        head = _head_text(path, 1 << 16)
        if not head.lstrip().startswith("{") or '"traceEvents"' not in head:
            return 0.0
        if not (_PROCESS_NAME.search(head) and _PLANE_NAME.search(head)):
            return 0.0
        if any(m in head for m in _KINETO):
            return 0.5      # a Kineto trace that mentions a plane name somewhere
        return 0.97         # above Kineto's 0.95 for any Chrome trace with traceEvents

    def read(self, path, progress, cancelled) -> Trace:
        path = Path(path)
        if path.is_dir():
            path = the_trace_file(path)
            if path.name.endswith(".pb"):
                return _read(path, progress, cancelled, xspace=True)
        return _read(path, progress, cancelled)


def _read(path: Path, progress, cancelled, xspace: bool = False) -> Trace:
    """One trace-viewer JSON or XSpace file; anything unexpected as one sentence."""
    from .._json import gc_paused
    from .decode import load
    from .tables import build
    from .xplane import load_xspace

    with gc_paused():
        try:
            warnings: list[str] = []
            dropped: dict[str, int] = {}
            top = load_xspace(path, warnings) if xspace else load(path, warnings, dropped)
            progress(0.5)
            check_cancel(cancelled)
            if xspace:
                return build(path, top, warnings, dropped, progress, cancelled, "xplane",
                             "JAX / XLA profiler (XSpace protobuf)")
            return build(path, top, warnings, dropped, progress, cancelled)
        except (TraceFormatError, Cancelled):
            raise
        except MemoryError:
            raise TraceFormatError(path, None, "a trace that fits in memory",
                                   "not enough memory") from None
        except Exception as exc:  # noqa: BLE001 - contract: nothing else escapes read()
            what = "XLA XSpace protobuf" if xspace else "JAX / XLA trace-viewer JSON"
            raise TraceFormatError(path, None, f"a readable {what}",
                                   f"{type(exc).__name__}: {exc}") from exc


@register
class XPlaneReader:
    """XLA's XSpace protobuf, read into the same tables as its trace-viewer JSON."""

    name = "xplane"
    description = "XLA XSpace protobuf (jax.profiler .xplane.pb)"
    patterns = ("*.xplane.pb",)
    priority = 55
    directories = False

    def sniff(self, path: Path) -> float:
        if path.is_dir():
            return 0.0
        head = head_bytes(path, 4096)
        # XSpace field 1 (planes, length-delimited) first; plane names inside
        if head[:1] != b"\x0a" or not (b"/host:" in head or b"/device:" in head):
            return 0.0
        return 0.9 if path.name.endswith(".xplane.pb") else 0.6

    def read(self, path, progress, cancelled) -> Trace:
        return _read(Path(path), progress, cancelled, xspace=True)


__all__ = ["JaxReader", "XPlaneReader"]
