"""Reader protocol, errors and the registry of readers.

A reader is registered once (``@register``) with a name, the file patterns it
claims for the Open dialog, a priority and a ``sniff(path)`` that looks at the
first bytes of a file (or the members of a directory) and returns a confidence in
[0, 1]. :func:`open_trace` picks the reader with the best (confidence, priority);
the app never chooses a reader by extension.

Readers take plain callables: ``progress(fraction)`` and ``cancelled() -> bool``;
they raise :class:`TraceFormatError` for bad input (one sentence naming the file,
the place and what was expected) and :class:`Cancelled` when asked to stop.
"""

from __future__ import annotations

import gzip
import os
import threading
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..model import Trace

ProgressFn = Callable[[float], None]
CancelledFn = Callable[[], bool]


def no_progress(_fraction: float) -> None:
    return None


def never_cancelled() -> bool:
    return False


class TraceFormatError(Exception):
    """The input is not a readable trace. ``str()`` is one sentence for people."""

    def __init__(self, path: str | os.PathLike, where: str | None, expected: str,
                 found: str | None = None):
        self.path = str(path)
        self.where = where
        self.expected = expected
        self.found = found
        place = f" at {where}" if where else ""
        got = f", found {found}" if found else ""
        super().__init__(f"{self.path}{place}: expected {expected}{got}.")


class Cancelled(Exception):
    """Reading was cancelled by the user."""


class Reader(Protocol):
    name: str            # short id, e.g. "rocprofv3-csv"
    description: str     # for people, e.g. "rocprofv3 CSV set"
    patterns: tuple[str, ...]   # glob patterns for the Open dialog
    priority: int        # tie-break between equally confident sniffs
    directories: bool    # whether it can open a directory

    def sniff(self, path: Path) -> float: ...

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace: ...


@dataclass(frozen=True)
class Candidate:
    reader: Reader
    confidence: float


_REGISTRY: dict[str, Reader] = {}


def register(cls):
    """Class decorator: instantiate and register a reader."""
    inst = cls()
    _REGISTRY[inst.name] = inst
    return cls


def readers() -> list[Reader]:
    _load_builtin()
    return sorted(_REGISTRY.values(), key=lambda r: (-r.priority, r.name))


def get_reader(name: str) -> Reader:
    _load_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no reader named {name!r}; known: {sorted(_REGISTRY)}") from None


def file_filters() -> list[str]:
    """Qt-style name filters for the Open dialog, one per reader plus 'all traces'."""
    rs = readers()
    out = [f"{r.description} ({' '.join(r.patterns)})" for r in rs if r.patterns]
    pats = sorted({p for r in rs for p in r.patterns})
    return [f"All traces ({' '.join(pats)})", *out, "All files (*)"]


def candidates(path: Path) -> list[Candidate]:
    _load_builtin()
    out = []
    for r in _REGISTRY.values():
        if path.is_dir() and not r.directories:
            continue
        try:
            conf = float(r.sniff(path))
        except (OSError, ValueError, EOFError):
            conf = 0.0
        if conf > 0:
            out.append(Candidate(r, conf))
    out.sort(key=lambda c: (-c.confidence, -c.reader.priority, c.reader.name))
    return out


def find_reader(path: str | os.PathLike) -> Reader:
    p = Path(path)
    if not p.exists():
        raise TraceFormatError(p, None, "an existing file or folder", "nothing at that path")
    cands = candidates(p)
    if not cands:
        what = "folder" if p.is_dir() else "file"
        raise TraceFormatError(
            p, None,
            "a trace hipscope can read (rocprofv3 CSV/JSON/rocpd/pftrace, legacy rocprof, "
            "PyTorch profiler JSON, rocprof-compute workload, Nsight Compute CSV)",
            f"a {what} no reader recognises")
    return cands[0].reader


def open_trace(paths: str | os.PathLike | Sequence[str | os.PathLike],
               progress: ProgressFn = no_progress,
               cancelled: CancelledFn = never_cancelled,
               reader: str | None = None,
               use_cache: bool = False) -> Trace:
    """Read one trace from a file, a folder, or several files of one run (merged).

    Several paths are read one by one and merged (one process/rank each). With
    ``use_cache`` the parsed tables are kept in hipscope's on-disk cache.
    """
    from ..model import merge_traces
    from . import _validate

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("no path given")
    traces, fresh = [], False
    for i, p in enumerate(paths):
        def sub(f: float, i=i) -> None:
            progress((i + max(0.0, min(1.0, f))) / len(paths))

        if use_cache:
            from . import cache

            # a hit needs no sniffing (and no reader imports): the key is the files,
            # taken once before the read; any cache problem reads without the cache
            tr = cache.read_through(
                reader, p, lambda p=p, sub=sub: _read_one(p, reader, sub, cancelled))
            fresh = fresh or not tr.meta.get("cached")
        else:
            tr = _read_one(p, reader, sub, cancelled)
            fresh = True
        traces.append(tr)
    trace = merge_traces(traces) if len(traces) > 1 else traces[0]
    if fresh or len(traces) > 1:
        _validate.validate(trace)   # cached traces were validated before they were stored
    progress(1.0)
    return trace


def _read_one(path: Path, reader: str | None, progress: ProgressFn,
              cancelled: CancelledFn) -> Trace:
    r = get_reader(reader) if reader else find_reader(path)
    return r.read(path, progress, cancelled)


# --------------------------------------------------------------------------- I/O helpers

def head_bytes(path: Path, n: int = 4096) -> bytes:
    """The first ``n`` bytes of a file, transparently un-gzipped."""
    with open(path, "rb") as fh:
        raw = fh.read(n)
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as gz:
                return gz.read(n)
        except (OSError, EOFError):
            return b""
    return raw


def head_text(path: Path, n: int = 4096) -> str:
    return head_bytes(path, n).decode("utf-8", errors="replace")


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def read_bytes_tolerant(path: Path) -> tuple[bytes, str | None]:
    """Whole file as bytes (un-gzipped). A gzip stream cut short or corrupt part-way
    returns everything that decompressed before the damage plus a warning; a file that
    yields nothing is a :class:`TraceFormatError`."""
    raw = path.read_bytes()
    if raw[:2] != b"\x1f\x8b":
        return raw, None
    out = bytearray()
    pos, warning = 0, None
    step = 1 << 14   # small input steps: corruption loses at most one step's output
    while pos < len(raw):            # members of a multi-member gzip, one by one
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            while pos < len(raw) and not d.eof:
                out += d.decompress(raw[pos:pos + step])
                pos = min(pos + step, len(raw))
        except zlib.error as exc:
            if not out:
                raise TraceFormatError(path, "byte 0", "a gzip stream", str(exc)) from None
            warning = (f"{path}: gzip data is corrupt after {len(out):,} uncompressed bytes "
                       f"({exc}); read what came before")
            break
        if not d.eof:
            warning = (f"{path}: the gzip stream ends early (truncated file); read the first "
                       f"{len(out):,} uncompressed bytes")
            out += d.flush()
            break
        pos -= len(d.unused_data)
        if not d.unused_data.strip(b"\x00"):
            break
    if not out and warning:
        raise TraceFormatError(path, "byte 0", "a complete gzip stream", "no whole data")
    return bytes(out), warning


def check_cancel(cancelled: CancelledFn) -> None:
    if cancelled():
        raise Cancelled()


_LOAD_LOCK = threading.Lock()
_LOADED = False


def _load_builtin() -> None:
    """Import the built-in reader modules (each registers itself), once, thread-safely:
    two traces loading in two workers must both see every reader."""
    global _LOADED
    if _LOADED:
        return
    with _LOAD_LOCK:
        if _LOADED:
            return
        import importlib

        for mod in BUILTIN_MODULES:
            importlib.import_module(f"{__package__}.{mod}")
        _LOADED = True


BUILTIN_MODULES: Iterable[str] = (
    "rocprofv3_csv", "rocprofv3_json", "rocpd", "pftrace", "legacy_rocprof",
    "kineto", "rocprof_compute", "ncu_csv",
)
