"""On-disk cache of parsed traces: Arrow IPC files memory-mapped on reopen.

Key: the reader, hipscope's schema version, a digest of the reader and model code
(``code_version``: an edited or upgraded reader never serves an older reader's result),
the trace's resolved path and, for every
file a read may depend on, its name, device, inode, mode, size, mtime_ns and ctime_ns
(a user can set mtime back, not ctime or the inode). The files a read may depend on:

- a folder: every entry below it (symlinked folders followed once, loops skipped);
- a file: the file, and those siblings a reader may open: names ending in a trace or
  side-file extension (``SIDE_SUFFIXES``: .csv, .txt, .db and its -wal/-journal, .json,
  .gz, ...) or sharing the trace's run prefix (``4242_`` of ``4242_kernel_trace.csv``).
  Other siblings (``tmp.813``, ``frame_0001.png``) are listed but never stat'ed, so a
  folder of 50,000 of them costs one directory listing.

The key is computed before the read and again after it: a file that changed during the
read is not stored (C2). Each entry has a ``manifest.json`` with the size and CRC-32 of
every file; a hit verifies them and runs the schema check, and any disagreement is a
miss that removes the entry (C3, C4). A cache that cannot be written is a logged
warning, never an error of the trace (C5). Stores sweep abandoned ``.tmp-*`` folders and
evict the least recently used entries above ``$HIPSCOPE_CACHE_MAX_MB`` (C7).
Location: ``$HIPSCOPE_CACHE_DIR`` or the user cache directory (platformdirs).
"""

from __future__ import annotations

import functools

import json
import logging
import os
import re
import shutil
import socket
import stat
import tempfile
import zlib
from collections.abc import Callable
from hashlib import blake2b
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from ..model import SPECS, TABLES, Trace
from ..model.diagnostics import add_diagnostic
from ..model.table import Table
from . import cache_jobs
from .cache_sweep import (ABANDONED_S, LAST_USED, MANIFEST, OWNER,  # noqa: F401 - public here
                          TMP_PREFIX, discard, evict, sweep)
from .crc import crc32

log = logging.getLogger(__name__)

SCHEMA_VERSION = 4
DEFAULT_MAX_MB = 20480
MAX_DEPTH = 8                # folder levels keyed below an opened folder
SIDE_SUFFIXES = (b".csv", b".tsv", b".txt", b".log", b".json", b".gz", b".db", b".db-wal",
                 b".db-shm", b".db-journal", b".sqlite", b".sqlite3", b".pftrace",
                 b".perfetto-trace", b".perfetto", b".pb", b".yaml", b".yml", b".sql")


class BadEntry(Exception):
    """A cache entry that must not be served (damaged, foreign or wrong-shaped)."""


def cache_dir() -> Path:
    env = os.environ.get("HIPSCOPE_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("hipscope")) / "traces"


def max_bytes() -> int:
    """The size cap: ``$HIPSCOPE_CACHE_MAX_MB`` MiB (default 20 GiB)."""
    try:
        mb = float(os.environ.get("HIPSCOPE_CACHE_MAX_MB", DEFAULT_MAX_MB))
    except ValueError:
        mb = DEFAULT_MAX_MB
    if not 0 <= mb < 2**40:          # nan, inf, negative: the default
        mb = DEFAULT_MAX_MB
    return int(mb * 2**20)


# --------------------------------------------------------------------------- key

def _stat_bytes(st: os.stat_result) -> bytes:
    return b"%d %d %o %d %d %d" % (st.st_dev, st.st_ino, st.st_mode, st.st_size,
                                   st.st_mtime_ns, st.st_ctime_ns)


def _member(path: bytes, name: bytes) -> tuple[bytes, bool] | None:
    """One member's record (``name NUL stat``) and whether it is a folder; None when it
    vanished since the listing (the race with a program deleting its temp files)."""
    try:
        st = os.stat(path)
        return name + b"\0" + _stat_bytes(st), stat.S_ISDIR(st.st_mode)
    except OSError:                   # gone, dangling or looping link, no permission
        pass
    try:
        st = os.lstat(path)
        link = os.readlink(path) if stat.S_ISLNK(st.st_mode) else b""
    except OSError:
        return None
    return name + b"\0link " + _stat_bytes(st) + b" " + link, False


def _siblings(path: bytes) -> list[bytes] | None:
    """Records of the siblings a reader of the file ``path`` may open; None when the
    folder cannot be listed (nothing safe to key: the trace is read uncached)."""
    folder, own = os.path.split(path)
    stem = own.replace(b".", b"_").split(b"_", 1)[0]
    run = tuple(stem + sep for sep in (b"_", b".", b"-")) if stem else ()
    try:
        names = os.listdir(folder or b".")   # names only: cheaper than scandir entries
    except OSError as exc:
        log.info("trace cache: cannot list %s (%s); reading %s uncached",
                 os.fsdecode(folder), exc, os.fsdecode(path))
        return None
    out = []
    for name in _side_names(names, run) - {own}:
        rec = _member(os.path.join(folder, name), name)
        if rec is not None:
            out.append(rec[0])
    return out


_SIDE_END = re.compile(b"(?:%s)\0" % b"|".join(
    re.escape(s) for s in sorted(SIDE_SUFFIXES, key=len, reverse=True)))


def _side_names(names: list[bytes], run: tuple[bytes, ...]) -> set[bytes]:
    """The names ending in a side suffix (any case) or starting with the run prefix.
    One regex pass over the NUL-joined listing: 50,000 names in a few ms, where a
    Python loop over them costs 30 ms."""
    blob = b"\0" + b"\0".join(names) + b"\0"
    out = set()
    for m in _SIDE_END.finditer(blob.lower()):
        out.add(blob[blob.rfind(b"\0", 0, m.start()) + 1:m.end() - 1])
    if run:
        starts = re.compile(b"\0(?:%s)" % b"|".join(re.escape(r) for r in run))
        for m in starts.finditer(blob):
            out.add(blob[m.start() + 1:blob.index(b"\0", m.start() + 1)])
    return out


def _tree(top: bytes) -> list[bytes] | None:
    """Records of every entry below the folder ``top``; None when it cannot be listed."""
    out: list[bytes] = []
    seen: set[tuple[int, int]] = set()
    stack = [(top, b"", 0)]
    while stack:
        d, rel, depth = stack.pop()
        try:
            st = os.stat(d)
            if (st.st_dev, st.st_ino) in seen:
                out.append(rel + b"/\0loop")
                continue
            seen.add((st.st_dev, st.st_ino))
            names = os.listdir(d)
        except OSError as exc:
            if not rel:
                return None
            out.append(rel + b"/\0unlistable " + os.fsencode(type(exc).__name__))
            continue
        for name in names:
            full, sub = os.path.join(d, name), (rel + b"/" + name if rel else name)
            rec = _member(full, sub)
            if rec is None:
                continue
            if rec[1] and depth < MAX_DEPTH:
                stack.append((full, sub, depth + 1))
            else:
                out.append(rec[0])
    return out


def members(reader: str | None, path: os.PathLike | str) -> list[bytes] | None:
    """The records a key is made of (first the trace itself); None: do not cache."""
    raw = os.fsencode(os.path.abspath(path))
    try:
        st = os.stat(raw)
    except OSError:
        return None                   # missing, a symlink loop...: the reader says why
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return None                   # a pipe or a device: its bytes are not the same twice
    head = b"\0".join([b"hipscope-cache", os.fsencode(reader or "*"), b"%d" % SCHEMA_VERSION,
                       code_version(), os.fsencode(os.path.realpath(raw)), _stat_bytes(st)])
    rest = _tree(raw) if stat.S_ISDIR(st.st_mode) else _siblings(raw)
    return None if rest is None else [head, *sorted(rest)]


@functools.lru_cache(maxsize=1)
def code_version() -> bytes:
    """A digest of the code that turns files into a Trace (the readers and the model), so
    an upgraded or edited hipscope never serves what an older reader made of a file: a
    reader fix would otherwise stay invisible until the file changed. Read once per
    process (~100 small files)."""
    root = Path(__file__).resolve().parents[1]
    h = blake2b(digest_size=8)
    for sub in ("parsers", "model"):
        for f in sorted((root / sub).rglob("*")):
            if f.suffix in (".py", ".c") and f.is_file():
                h.update(os.fsencode(f.relative_to(root)))
                h.update(f.read_bytes())
    return h.hexdigest().encode()


def key_of(records: list[bytes]) -> str:
    h = blake2b(digest_size=16)
    for r in records:
        h.update(r)
        h.update(b"\n")
    return h.hexdigest()


def cache_key(reader: str | None, path: os.PathLike | str) -> str | None:
    """Key of ``path`` read by ``reader`` (None: whichever reader sniffing picks);
    None when the trace cannot be keyed safely (then it is not cached)."""
    recs = _members_or_none(reader, path)
    return None if recs is None else key_of(recs)


# --------------------------------------------------------------------------- read through

def read_through(reader: str | None, path: Path, read: Callable[[], Trace]) -> Trace:
    """A cache hit for ``path``, or ``read()`` stored when the files held still.

    The key is taken before the read; the files are keyed again after it, and a
    trace read while a file changed (a profiler still writing) is not stored and
    carries a warning. What is stored has passed the schema check first.
    """
    from . import _validate

    recs = _members_or_none(reader, path)
    if recs is None:
        return read()
    key = key_of(recs)
    cache_jobs.wait(key)              # this process is storing it: see the entry
    tr = load(key)
    if tr is not None:
        tr.meta["cache_key"] = key      # the analysis cache sits beside the entry
        return tr
    tr = read()
    _validate.validate(tr)
    after = _members_or_none(reader, path)
    if after != recs:
        what = _changed(path, recs, after or [])
        log.warning("trace cache: %s changed while the trace was read; not cached", what)
        if _was_read(what, path, tr):
            add_diagnostic(tr.meta, "cache.changed_during_read", "warning",
                           f"{what} changed while the trace was read (still being "
                           "written?); the figures may not include its latest data", what)
        return tr
    cache_jobs.forget(key)
    if not _fits(tr):
        return tr
    if cache_jobs.enabled():
        meta = json.dumps(tr.meta, default=str).encode()      # as read, before the key
        cache_jobs.start(key, lambda: store(key, tr, meta))
        tr.meta["cache_key"] = key    # analyses saved before it lands wait (cache_jobs)
    elif store(key, tr):
        tr.meta["cache_key"] = key
    return tr


def _members_or_none(reader: str | None, path: Path) -> list[bytes] | None:
    try:
        return members(reader, path)
    except Exception:  # noqa: BLE001 - keying never stops a trace from opening
        log.warning("trace cache: cannot key %s; reading it uncached", path, exc_info=True)
        return None


def _changed(path: Path, before: list[bytes], after: list[bytes]) -> str:
    """The first file whose record differs between two keyings (``path`` itself when
    it is the trace, or nothing can tell)."""
    diff = sorted(set(before[1:]) ^ set(after[1:]))
    if not diff or before[:1] != after[:1]:
        return str(path)
    name = os.fsdecode(diff[0].split(b"\0", 1)[0])
    return str((path if path.is_dir() else path.parent) / name)


def _was_read(what: str, path: Path, tr: Trace) -> bool:
    """Whether ``what`` is the trace or one of the files its reader read (its sources)."""
    sources = tr.meta.get("sources")
    names = [str(path), *(sources if isinstance(sources, list) else [])]
    return os.path.abspath(what) in {os.path.abspath(str(n)) for n in names}


# --------------------------------------------------------------------------- load

def load(key: str) -> Trace | None:
    """The cached trace of ``key``, verified; None on a miss. A damaged or wrong-shaped
    entry is a miss too: it is removed, with one logged warning."""
    d = cache_dir() / key
    try:
        raw = (d / MANIFEST).read_bytes()
    except OSError:
        return None                   # no entry (or no usable cache folder): a plain miss
    try:
        tr = _load_entry(d, key, raw)
    except Exception as exc:  # noqa: BLE001 - whatever is wrong with it, it is not served
        log.warning("trace cache: entry %s is damaged (%s); removed, reading the trace again",
                    d, exc)
        discard(d)
        return None
    try:
        os.utime(d / LAST_USED)
    except OSError:
        pass                          # a read-only cache still serves hits
    return tr


def _load_entry(d: Path, key: str, raw: bytes) -> Trace:
    from . import _validate

    man = json.loads(raw)
    if not isinstance(man, dict) or man.get("version") != SCHEMA_VERSION \
            or man.get("key") != key or not isinstance(man.get("files"), dict):
        raise BadEntry("its manifest is not hipscope's")
    files = man["files"]
    tables = {}
    for name in TABLES:
        buf = _verified(d / f"{name}.arrow", files)
        tables[name] = Table(SPECS[name], ipc.open_file(buf).read_all())
    meta = json.loads(_verified(d / "meta.json", files).to_pybytes())
    if not isinstance(meta, dict):
        raise BadEntry(f"meta.json holds a {type(meta).__name__}, not an object")
    if meta.get("format") != man.get("format"):
        raise BadEntry(f"meta.json says format {meta.get('format')!r}, "
                       f"the manifest {man.get('format')!r}")
    tr = Trace(meta={**meta, "cached": True}, **tables)
    _validate.validate(tr)
    return tr


def _verified(p: Path, files: dict) -> pa.Buffer:
    """``p`` memory-mapped, after its size and CRC-32 matched the manifest."""
    want = files.get(p.name)
    if not isinstance(want, dict):
        raise BadEntry(f"{p.name} is not in the manifest")
    buf = pa.memory_map(str(p), "r").read_buffer()
    if buf.size != want.get("size") or crc32(buf) != want.get("crc32"):
        raise BadEntry(f"{p.name} does not match its checksum")
    return buf


# --------------------------------------------------------------------------- store

def _fits(trace: Trace) -> bool:
    """Whether the trace's tables fit under the cache's cap (else: logged, not cached)."""
    cap = max_bytes()
    size = sum(t.data.nbytes for t in trace.tables().values())
    if size > cap:
        log.info("trace cache: a trace of %d MiB is over the %d MiB cap; not cached",
                 size >> 20, cap >> 20)
    return size <= cap


def store(key: str, trace: Trace, meta: bytes | None = None) -> bool:
    """Keep ``trace`` under ``key`` (``meta``: its metadata as JSON, when taken
    earlier); False (and a logged warning) when the cache cannot be written. Whatever
    happens, including Ctrl+C, its temp folder is removed."""
    root = cache_dir()
    try:
        root.mkdir(parents=True, exist_ok=True)
        sweep(root)
        cap = max_bytes()
        if not _fits(trace):
            return False
        _store_entry(root, key, trace, meta)
        evict(root, cap, keep=key)
        return True
    except Exception as exc:  # noqa: BLE001 - a cache problem never fails the trace
        log.warning("trace cache %s: cannot store the parsed trace (%s); "
                    "it was read without the cache", root, exc)
        return False


def _store_entry(root: Path, key: str, trace: Trace, meta: bytes | None) -> None:
    tmp: Path | None = None
    try:
        tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=root))
        (tmp / OWNER).write_text(f"{socket.gethostname()} {os.getpid()}\n")
        _write_entry(tmp, key, trace, meta)
        dest = root / key
        try:
            os.replace(tmp, dest)
        except OSError:
            if (dest / MANIFEST).is_file():
                return                # another process stored it first (C8): keep theirs
            discard(dest)             # a leftover without a manifest
            os.replace(tmp, dest)
        tmp = None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _write_entry(d: Path, key: str, trace: Trace, meta: bytes | None = None) -> None:
    files = {}
    for name, table in trace.tables().items():
        p = d / f"{name}.arrow"
        with pa.OSFile(str(p), "wb") as sink:
            with ipc.new_file(sink, table.data.schema) as writer:
                writer.write_table(table.data)
        buf = pa.memory_map(str(p), "r").read_buffer()
        files[p.name] = {"size": buf.size, "crc32": crc32(buf)}
    meta = meta if meta is not None else json.dumps(trace.meta, default=str).encode()
    (d / "meta.json").write_bytes(meta)
    files["meta.json"] = {"size": len(meta), "crc32": zlib.crc32(meta)}
    man = {"version": SCHEMA_VERSION, "key": key,
           "format": json.loads(meta).get("format"), "files": files}
    (d / LAST_USED).touch()
    (d / MANIFEST).write_text(json.dumps(man))
