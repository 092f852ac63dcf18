"""Reading helpers every reader and the sniffer share: the head of a file (gzip
transparent), whether a gzip is damaged, and a whole file read tolerantly (a torn gzip
gives what came before the damage and a warning). Re-exported by
:mod:`hipscope.parsers.base`."""

from __future__ import annotations

import gzip
import os
import stat
import zlib
from pathlib import Path

from ..model.diagnostics import coded
from .errors import TraceFormatError


def head_bytes(path: Path, n: int = 4096) -> bytes:
    """The first ``n`` bytes of a file, transparently un-gzipped."""
    with open(path, "rb") as fh:
        raw = fh.read(n)
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as gz:
                return gz.read(n)
        except (OSError, EOFError, zlib.error):
            return b""
    return raw


def gzip_damage(path: Path) -> str | None:
    """Why a file that starts like a gzip does not decompress (None when it does)."""
    try:
        with gzip.open(path, "rb") as gz:
            gz.read(1)
    except (OSError, EOFError, zlib.error) as exc:
        return f"corrupt data ({exc})" if is_gzip(path) else None
    return None


def head_text(path: Path, n: int = 4096) -> str:
    return head_bytes(path, n).decode("utf-8", errors="replace")


SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite(path: Path) -> bool:
    """Whether ``path`` is a file that starts with the SQLite 3 header (no sqlite3 import:
    every open sniffs with the SQLite readers)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


PARALLEL_MIN = 32 << 20      # a file this big is read in pieces on several threads


def _fastread():
    try:
        from . import _fastread as mod
    except ImportError:          # not built (no C compiler at install): read() reads all
        return None
    return mod


def read_whole(path: Path) -> bytes:
    """``path.read_bytes()``: a big regular file read in pieces on up to four threads
    at once (``_fastread.c``: 0.11 s instead of 0.34 s for a 573 MB file here). A file
    that changed size while it was read is read again plainly, so the bytes are what
    one read() to its end gives."""
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        mod = _fastread() if st.st_size >= PARALLEL_MIN and stat.S_ISREG(st.st_mode) \
            else None
        if mod is not None:
            data = mod.read(fh.fileno(), st.st_size, min(4, os.cpu_count() or 1))
            if data is not None and os.fstat(fh.fileno()).st_size == st.st_size:
                return data
        return fh.read()


def read_bytes_tolerant(path: Path) -> tuple[bytes, str | None]:
    """Whole file as bytes (un-gzipped). A gzip stream cut short or corrupt part-way
    returns everything that decompressed before the damage plus a warning; a file that
    yields nothing is a :class:`TraceFormatError`, and so is one that decompresses to
    more than ``_inputs.max_decompressed_bytes()`` (M1: a gzip bomb)."""
    from ._inputs import TooLarge, max_decompressed_bytes

    raw = read_whole(path)
    if raw[:2] != b"\x1f\x8b":
        return raw, None
    cap = max_decompressed_bytes()
    out = bytearray()
    pos, warning = 0, None
    step = 1 << 14   # small input steps: corruption loses at most one step's output
    while pos < len(raw):            # members of a multi-member gzip, one by one
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            while pos < len(raw) and not d.eof:
                out += d.decompress(raw[pos:pos + step])
                pos = min(pos + step, len(raw))
                if len(out) > cap:    # one step adds at most ~16 MiB (deflate's 1032:1)
                    raise TooLarge(path, cap)
        except zlib.error as exc:
            if not out:
                raise TraceFormatError(path, "byte 0", "a gzip stream", str(exc)) from None
            warning = coded("input.truncated", f"{path}: gzip data is corrupt after "
                            f"{len(out):,} uncompressed bytes ({exc}); read what came before", path)
            break
        if not d.eof:
            warning = coded("input.truncated", f"{path}: the gzip stream ends early (truncated "
                            f"file); read the first {len(out):,} uncompressed bytes", path)
            out += d.flush()
            break
        pos -= len(d.unused_data)
        if not d.unused_data.strip(b"\x00"):
            break
    if not out and warning:
        raise TraceFormatError(path, "byte 0", "a complete gzip stream", "no whole data")
    return bytes(out), warning
