"""Housekeeping of the parsed-trace cache (:mod:`.cache`): what killed stores left
(``sweep``), least-recently-used eviction above the cap (``evict``) and removal of an
entry without a reader ever seeing it half-deleted (``discard``)."""

from __future__ import annotations

import os
import shutil
import socket
import time
import uuid
from pathlib import Path

MANIFEST = "manifest.json"
LAST_USED = "last_used"      # its mtime is the entry's last use (LRU eviction)
OWNER = "owner"              # "<host> <pid>" of the process writing a .tmp- folder
TMP_PREFIX = ".tmp-"
ABANDONED_S = 3600           # a .tmp- folder of an unknown owner untouched this long is swept


def discard(d: Path) -> None:
    """Remove an entry: renamed away first, so no reader sees it half-deleted."""
    gone = d.with_name(f"{TMP_PREFIX}gone-{uuid.uuid4().hex}")
    try:
        os.rename(d, gone)
    except OSError:
        return
    shutil.rmtree(gone, ignore_errors=True)


# --------------------------------------------------------------------------- housekeeping

def sweep(root: Path, now: float | None = None) -> int:
    """Remove ``.tmp-*`` folders whose writer died (this host) or that nobody touched
    for ``ABANDONED_S``: what a killed store left. Returns how many were removed."""
    now = time.time() if now is None else now
    host, n = socket.gethostname(), 0
    with os.scandir(root) as it:
        tmps = [e for e in it if e.name.startswith(TMP_PREFIX)]
    for e in tmps:
        try:
            age = now - e.stat(follow_symlinks=False).st_mtime
            owner = _owner(Path(e.path))
        except OSError:
            continue
        dead = owner is not None and owner[0] == host and not _alive(owner[1])
        if dead or age > ABANDONED_S:
            shutil.rmtree(e.path, ignore_errors=True)
            n += 1
    return n


def _owner(tmp: Path) -> tuple[str, int] | None:
    try:
        host, pid = (tmp / OWNER).read_text().split()
        return host, int(pid)
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True                   # exists, owned by another user
    return True


def evict(root: Path, cap: int, keep: str | None = None) -> None:
    """Remove the least recently used entries until the cache holds at most ``cap``
    bytes (``keep``, the entry just stored, stays), and entries of an older layout
    (no ``last_used``) untouched for ``ABANDONED_S``."""
    entries, total = [], 0
    old = time.time_ns() - ABANDONED_S * 10**9
    with os.scandir(root) as it:
        dirs = [e for e in it if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)]
    for e in dirs:
        used, size, ours = _usage(Path(e.path))
        if not ours and used < old and e.name != keep:
            discard(Path(e.path))
            continue
        entries.append((used, e.name, size))
        total += size
    for _used, name, size in sorted(entries):
        if total <= cap:
            break
        if name != keep:
            discard(root / name)
            total -= size


def _usage(d: Path) -> tuple[int, int, bool]:
    """(last use in ns, bytes with its ``analyses/`` files, whether it has a
    ``last_used`` file) of one entry (a 5M-kernel trace's timeline rows: ~470 MB)."""
    size, used = 0, 0
    try:
        with os.scandir(d) as it:
            for e in it:
                st = e.stat(follow_symlinks=False)
                size += st.st_size
                if e.name == "analyses" and e.is_dir(follow_symlinks=False):
                    size += sum(f.stat(follow_symlinks=False).st_size for f in os.scandir(e.path))
                if e.name == LAST_USED:
                    used = st.st_mtime_ns
        if used:
            return used, size, True
        return d.stat().st_mtime_ns, size, False
    except OSError:
        return 0, size, bool(used)
