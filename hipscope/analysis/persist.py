"""The analysis cache: the analysis service's results kept beside the cached trace.

A trace that came from (or went into) the parsed-trace cache carries its entry's key
(``meta["cache_key"]``); its analyses are stored in that entry's ``analyses/`` folder,
one file per result, named by a digest of the result, its parameters,
``ANALYSIS_VERSION`` and the analysis code (an edited analysis never serves an older
one's figures). Same integrity rules as the trace cache: each file is written to a
temporary name and renamed into place (atomic), carries its size and CRC-32 in its
header and is verified on load; a damaged file is a miss that removes it, and a cache
that cannot be written is a logged warning, never an error. Values are encoded as
JSON plus raw numpy arrays at aligned offsets (no pickle); only the result types listed
in ``_classes`` are rebuilt, never an arbitrary class. Big results (the timeline's
level-of-detail arrays) load as read-only views of the file's memory map.

In the app (:func:`write_behind`) a result is written on a thread after it is handed
back: the first frame does not wait for its own 0.5 GB to reach the disk. The arrays
written are the value's own, made read-only (as a reopened trace gets them); a load
of the same file waits for its write; the threads are not daemons (the process ends
after its writes).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import mmap
import os
import tempfile
import threading
import zlib
from hashlib import blake2b
from pathlib import Path
from typing import Any

import numpy as np

from ..model import Trace
from ..parsers.crc import crc32

log = logging.getLogger(__name__)

ANALYSIS_VERSION = 2
MAGIC = b"HSAN2\n"
_MAX_HEADER = 4096


_BEHIND = False
_PENDING: dict[Path, threading.Thread] = {}
_PENDING_LOCK = threading.Lock()


def write_behind(on: bool = True) -> bool:
    """Write results saved from now on on threads, after ``save`` returned (the app;
    the command line writes in line). Off again: later saves write in line. Returns
    the setting it replaced (the app puts it back when it ends)."""
    global _BEHIND
    was, _BEHIND = _BEHIND, on
    return was


def flush() -> None:
    """Wait for every result being written behind."""
    with _PENDING_LOCK:
        threads = list(_PENDING.values())
    for t in threads:
        t.join()


def _wait_for(p: Path) -> None:
    with _PENDING_LOCK:
        t = _PENDING.get(p)
    if t is not None and t is not threading.current_thread():
        t.join()


def _behind(p: Path, write: Any) -> None:
    """Run ``write`` (the file ``p``) on its own thread, after any earlier one of p."""
    def run() -> None:
        if earlier is not None:
            earlier.join()
        try:
            write()
        finally:
            with _PENDING_LOCK:
                if _PENDING.get(p) is me:
                    del _PENDING[p]

    with _PENDING_LOCK:
        earlier = _PENDING.get(p)
        me = _PENDING[p] = threading.Thread(target=run, name="hipscope-analysis-write",
                                            daemon=False)
    me.start()


class NotStorable(TypeError):
    """A value the analysis cache does not encode (it is then simply not kept)."""


@functools.lru_cache(maxsize=1)
def _classes() -> dict[str, type]:
    from .graphs import GraphReplayGaps
    from .idle import DeviceIdle, IdleBreakdown
    from .ops import OpAttribution, OpForest
    from .queue_delay import QueueDelays
    from .stats import GroupStats
    from .steps import Steps
    from .timeline_model import ColorScale, Events, Row, TimelineModel

    return {c.__name__: c for c in (GraphReplayGaps, DeviceIdle, IdleBreakdown, QueueDelays,
                                    GroupStats, Steps, OpAttribution, OpForest,
                                    ColorScale, Events, Row, TimelineModel)}


@functools.lru_cache(maxsize=1)
def code_version() -> bytes:
    """A digest of the analysis code, its subpackages too (read once per process)."""
    h = blake2b(digest_size=8)
    h.update(str(ANALYSIS_VERSION).encode())
    root = Path(__file__).resolve().parent
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest().encode()


# --------------------------------------------------------------------------- codec
# A payload: the JSON tree (with the table of its arrays), then each array's raw bytes
# at a 64-byte aligned offset, so that a loaded file's arrays can be views of its
# memory map (the timeline's level-of-detail arrays: hundreds of MB, read lazily).
ALIGN = 64


class _Arrays:
    """The arrays of one value, each kept once (an alias is stored once)."""

    def __init__(self) -> None:
        self.items: list[np.ndarray] = []
        self._ids: dict[int, int] = {}

    def add(self, a: np.ndarray) -> int:
        i = self._ids.get(id(a))
        if i is None:
            i = self._ids[id(a)] = len(self.items)
            self.items.append(a)
        return i


def encode(value: Any, arrays: _Arrays) -> Any:
    """``value`` as a JSON tree; numpy arrays are added to ``arrays`` by reference."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject or value.dtype.fields is not None:
            raise NotStorable("object and record arrays are not stored")
        return {"$a": arrays.add(value)}
    if isinstance(value, list):
        return [encode(v, arrays) for v in value]
    if isinstance(value, tuple):
        return {"$t": [encode(v, arrays) for v in value]}
    if isinstance(value, dict):
        return {"$d": [[encode(k, arrays), encode(v, arrays)] for k, v in value.items()]}
    name = type(value).__name__
    if dataclasses.is_dataclass(value) and _classes().get(name) is type(value):
        return {"$c": name, "f": {f.name: encode(getattr(value, f.name), arrays)
                                  for f in dataclasses.fields(value)}}
    raise NotStorable(f"a {name} is not stored")


def decode(tree: Any, arrays: list[np.ndarray]) -> Any:
    if isinstance(tree, list):
        return [decode(v, arrays) for v in tree]
    if not isinstance(tree, dict):
        return tree
    if "$a" in tree:
        return arrays[int(tree["$a"])]
    if "$t" in tree:
        return tuple(decode(v, arrays) for v in tree["$t"])
    if "$d" in tree:
        return {_hashable(decode(k, arrays)): decode(v, arrays) for k, v in tree["$d"]}
    cls = _classes().get(str(tree.get("$c")))
    if cls is None:
        raise ValueError(f"unknown result type {tree.get('$c')!r}")
    return cls(**{k: decode(v, arrays) for k, v in tree["f"].items()})


def _hashable(k: Any) -> Any:
    return tuple(k) if isinstance(k, list) else k


def _pad(n: int) -> int:
    return -n % ALIGN


def parts(value: Any, freeze: bool = False) -> list[Any]:
    """The payload of ``value`` as pieces to write in order (bytes and array buffers);
    ``freeze``: its arrays are made read-only (written later, they must not change)."""
    arrays = _Arrays()
    tree = encode(value, arrays)
    if freeze:
        for a in arrays.items:
            a.flags.writeable = False
    items = [a if a.flags.c_contiguous else a.copy(order="C") for a in arrays.items]
    table, at = [], 0
    for a in items:
        table.append([a.dtype.str, list(a.shape), at])
        at += a.nbytes + _pad(a.nbytes)
    head = json.dumps({"tree": tree, "arrays": table}, allow_nan=True).encode()
    head += b" " * _pad(len(head) + 8)
    out: list[Any] = [len(head).to_bytes(8, "little"), head]
    for a in items:
        raw: Any = a.reshape(-1).view(np.uint8).data if a.nbytes else b""
        out += [raw, b"\0" * _pad(a.nbytes)]
    return out


def to_bytes(value: Any) -> bytes:
    return b"".join(bytes(p) for p in parts(value))


def from_bytes(payload: Any, copy: bool = True) -> Any:
    """The value of a payload (bytes, or a memory map's view); ``copy=False`` leaves
    its arrays as read-only views of ``payload``."""
    buf = memoryview(payload)
    n = int.from_bytes(buf[:8], "little")
    head = json.loads(bytes(buf[8:8 + n]))
    base = 8 + n
    arrays = []
    for dtype, shape, at in head["arrays"]:
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        if dt.hasobject or base + at + count * dt.itemsize > len(buf):
            raise ValueError("an array lies outside the payload")
        a = np.frombuffer(buf, dt, count, base + at).reshape(tuple(shape)) if count else \
            np.zeros(tuple(shape), dt)
        arrays.append(a.copy() if copy else a)
    return decode(head["tree"], arrays)


# --------------------------------------------------------------------------- the store
class DiskStore:
    """Results of one cached trace, in ``folder`` (the trace entry's ``analyses/``)."""

    def __init__(self, folder: Path, key: str, shape: tuple[int, ...] = ()):
        self.folder = folder
        self.key = key
        self.shape = shape       # rows per table: a trace changed under its key misses

    def _path(self, rkey: tuple) -> Path:
        h = blake2b(digest_size=12)
        h.update(code_version())
        h.update(json.dumps([self.key, self.shape, *rkey], default=str).encode())
        return self.folder / f"{rkey[0]}-{h.hexdigest()}.hsan"

    def load(self, rkey: tuple, mapped: bool = False) -> tuple[Any] | None:
        """(value,) when a verified result is on disk, else None. ``mapped``: its
        arrays stay read-only views of the file's memory map (read when touched)."""
        p = self._path(rkey)
        _wait_for(p)
        try:
            fh = p.open("rb")
        except OSError:
            return None
        try:
            with fh:
                mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            return (from_bytes(_verified(memoryview(mm), self.key), copy=not mapped),)
        except Exception as exc:  # noqa: BLE001 - a damaged result is a miss, removed
            log.warning("analysis cache: %s is damaged (%s); removed, computing it again",
                        p, exc)
            _unlink(p)
            return None

    def save(self, rkey: tuple, value: Any) -> bool:
        try:
            pieces = parts(value, freeze=_BEHIND)
        except NotStorable:
            return False
        except Exception as exc:  # noqa: BLE001 - a value the codec chokes on: not kept
            log.warning("analysis cache: cannot encode %s (%s); not kept", rkey[0], exc)
            return False
        from ..parsers import cache_jobs

        p = self._path(rkey)
        write = functools.partial(self._write, p, pieces, rkey[0])
        job = cache_jobs.job_of(self.key)     # the entry is still being stored: queued
        if job is not None:
            job.defer(write)
            return not job.failed()
        if _BEHIND:
            _behind(p, write)
            return True
        return write()

    def _write(self, p: Path, pieces: list[Any], name: str) -> bool:
        try:
            crc, size = 0, 0
            for piece in pieces:
                crc, size = zlib.crc32(piece, crc), size + len(piece)
            head = json.dumps({"key": self.key, "size": size, "crc32": crc}).encode()
            head += b" " * (-(len(MAGIC) + len(head) + 1) % ALIGN) + b"\n"  # aligned
            _write_atomic(p, [MAGIC + head, *pieces])
            return True
        except Exception as exc:  # noqa: BLE001 - a cache problem never fails an analysis
            log.warning("analysis cache %s: cannot store %s (%s)", self.folder, name, exc)
            return False


def _verified(raw: memoryview, key: str) -> memoryview:
    """The payload of a file's bytes, once its header, size and CRC-32 matched."""
    if bytes(raw[:len(MAGIC)]) != MAGIC:
        raise ValueError("not a hipscope analysis file")
    nl = bytes(raw[len(MAGIC):len(MAGIC) + _MAX_HEADER]).find(b"\n")
    if nl < 0:
        raise ValueError("its header is cut")
    head = json.loads(bytes(raw[len(MAGIC):len(MAGIC) + nl]))
    payload = raw[len(MAGIC) + nl + 1:]
    if not isinstance(head, dict) or head.get("key") != key:
        raise ValueError("it belongs to another trace")
    if head.get("size") != len(payload) or head.get("crc32") != crc32(payload):
        raise ValueError("it does not match its checksum")
    return payload


def _write_atomic(p: Path, pieces: list[Any]) -> None:
    if not p.parent.parent.is_dir():
        raise OSError(f"the trace cache entry {p.parent.parent} is gone")
    p.parent.mkdir(exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".tmp-", dir=p.parent)
    tmp: str | None = tmp_name
    try:
        with os.fdopen(fd, "wb") as fh:
            for piece in pieces:
                fh.write(piece)
        os.replace(tmp_name, p)
        tmp = None
    finally:
        if tmp is not None:
            _unlink(Path(tmp))


def _unlink(p: Path) -> None:
    try:
        p.unlink()
    except OSError:
        pass


def store_for(trace: Trace) -> DiskStore | None:
    """The disk store of a trace the parsed-trace cache keeps; None for any other."""
    key = trace.meta.get("cache_key")
    if not isinstance(key, str) or not key.isalnum():
        return None
    from ..parsers.cache import cache_dir

    shape = tuple(len(t) for t in trace.tables().values())
    return DiskStore(cache_dir() / key / "analyses", key, shape)
