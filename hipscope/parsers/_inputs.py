"""What a path given to :func:`~hipscope.parsers.base.open_trace` may be, checked before
any reader sees it, and the cap on decompressed data.

Decisions (RELIABILITY.md F2, F3, H1, M1):

* A missing path, a file that cannot be opened and a folder that cannot be listed are
  refused with the real reason, naming the path itself (never its parent).
* Character/block devices and sockets are refused at once (reading a terminal or a
  socket would block or never end).
* A pipe or FIFO is opened with ``O_NONBLOCK`` (so the open itself never waits for a
  writer), then read to its end once into a temporary file that the readers sniff and
  read: ``/dev/stdin``, ``<(zcat ...)`` and a FIFO with a live writer work. A FIFO with
  no writer reads as empty at once and is refused.
* Decompressed data (and data read from a pipe) is capped at a quarter of the memory
  available (``MemAvailable`` and ``RLIMIT_AS``), at most 32 GiB, or at
  ``HIPSCOPE_MAX_DECOMPRESSED_MB`` megabytes when that is set: a small gzip that
  expands to gigabytes is refused instead of exhausting memory.
"""

from __future__ import annotations

import os
import resource
import stat
from pathlib import Path

from .base import TraceFormatError

CAP_ENV = "HIPSCOPE_MAX_DECOMPRESSED_MB"
_MB = 1 << 20
_MAX_CAP = 32 << 30
_FALLBACK_CAP = 4 << 30


class TooLarge(TraceFormatError):
    """Decompressed (or piped) data is larger than the cap: one sentence with the cap
    and how to raise it."""

    def __init__(self, path: str | os.PathLike, cap: int, what: str = "decompressed data"):
        mb = f"{cap / _MB:,.0f}" if cap >= 10 * _MB else f"{cap / _MB:.2g}"
        super().__init__(path, None, f"at most {mb} MB of {what}", "more")
        self.args = (f"{path}: its {what} is larger than hipscope's cap of {mb} MB "
                     f"(set {CAP_ENV} to raise it).",)


def max_decompressed_bytes() -> int:
    """The cap in bytes: ``HIPSCOPE_MAX_DECOMPRESSED_MB`` when set to a positive number,
    else a quarter of the available memory, at most 32 GiB."""
    text = os.environ.get(CAP_ENV, "").strip()
    if text:
        try:
            mb = float(text)
        except ValueError:
            mb = 0.0
        if mb > 0:
            return max(1, int(mb * _MB))
    avail = [_mem_available()]
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft not in (resource.RLIM_INFINITY, -1):
        avail.append(soft)
    known = [a for a in avail if a]
    return min(min(known) // 4, _MAX_CAP) if known else _FALLBACK_CAP


def _mem_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_path(path: Path) -> bool:
    """Refuse what no reader can read, naming ``path`` and why; True for a pipe/FIFO
    (to be read once with :func:`read_stream`), False for a file or folder."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise TraceFormatError(path, None, "an existing file or folder",
                               "nothing at that path") from None
    except OSError as exc:
        raise TraceFormatError(path, None, "a file or folder hipscope can reach",
                               _reason(exc)) from None
    mode = st.st_mode
    if stat.S_ISFIFO(mode):
        return True
    if stat.S_ISDIR(mode):
        try:
            with os.scandir(path):
                pass
        except OSError as exc:
            raise TraceFormatError(path, None, "a folder hipscope can list",
                                   _reason(exc)) from None
        return False
    if not stat.S_ISREG(mode):
        kind = ("a character device" if stat.S_ISCHR(mode) else
                "a block device" if stat.S_ISBLK(mode) else
                "a socket" if stat.S_ISSOCK(mode) else "a special file")
        raise TraceFormatError(path, None, "a file, a folder or a pipe", kind)
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise TraceFormatError(path, None, "a file hipscope can read", _reason(exc)) from None
    return False


def read_stream(path: Path, dest: Path) -> Path:
    """Read a pipe or FIFO once, to its end, into ``dest`` (at most the cap); a FIFO
    with no writer gives nothing at once and is refused."""
    cap = max_decompressed_bytes()
    total = 0
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)   # never waits for a writer
        try:
            os.set_blocking(fd, True)                      # now read until EOF
            with open(dest, "wb") as out:
                while chunk := os.read(fd, 1 << 20):
                    total += len(chunk)
                    if total > cap:
                        raise TooLarge(path, cap, "data")
                    out.write(chunk)
        finally:
            os.close(fd)
    except OSError as exc:
        raise TraceFormatError(path, None, "a pipe hipscope can read", _reason(exc)) from None
    if not total:
        raise TraceFormatError(path, None, "a pipe with a trace in it",
                               "nothing (no program is writing to it)")
    return dest


def _reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()
