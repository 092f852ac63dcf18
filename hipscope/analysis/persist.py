"""The analysis cache: the analysis service's results kept beside the cached trace.

A trace that came from (or went into) the parsed-trace cache carries its entry's key
(``meta["cache_key"]``); its analyses are stored in that entry's ``analyses/`` folder,
one file per result, named by a digest of the result, its parameters,
``ANALYSIS_VERSION`` and the analysis code (an edited analysis never serves an older
one's figures). Same integrity rules as the trace cache: each file is written to a
temporary name and renamed into place (atomic), carries its size and CRC-32 in its
header and is verified on load; a damaged file is a miss that removes it, and a cache
that cannot be written is a logged warning, never an error. Values are encoded as
JSON plus numpy arrays (``np.load`` without pickle); only the result types listed in
``_CLASSES`` are rebuilt, never an arbitrary class.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import logging
import os
import tempfile
import zlib
from hashlib import blake2b
from pathlib import Path
from typing import Any

import numpy as np

from ..model import Trace

log = logging.getLogger(__name__)

ANALYSIS_VERSION = 1
MAGIC = b"HSAN1\n"
_MAX_HEADER = 4096


class NotStorable(TypeError):
    """A value the analysis cache does not encode (it is then simply not kept)."""


@functools.lru_cache(maxsize=1)
def _classes() -> dict[str, type]:
    from .graphs import GraphReplayGaps
    from .idle import DeviceIdle, IdleBreakdown
    from .queue_delay import QueueDelays
    from .stats import GroupStats
    from .steps import Steps

    return {c.__name__: c for c in (GraphReplayGaps, DeviceIdle, IdleBreakdown, QueueDelays,
                                    GroupStats, Steps)}


@functools.lru_cache(maxsize=1)
def code_version() -> bytes:
    """A digest of the analysis code (read once per process)."""
    h = blake2b(digest_size=8)
    h.update(str(ANALYSIS_VERSION).encode())
    for f in sorted(Path(__file__).resolve().parent.glob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest().encode()


# --------------------------------------------------------------------------- codec
def encode(value: Any, arrays: list[np.ndarray]) -> Any:
    """``value`` as a JSON tree; numpy arrays are appended to ``arrays`` by reference."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise NotStorable("object arrays are not stored")
        arrays.append(value)
        return {"$a": len(arrays) - 1}
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


def decode(tree: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(tree, list):
        return [decode(v, arrays) for v in tree]
    if not isinstance(tree, dict):
        return tree
    if "$a" in tree:
        return arrays[f"a{int(tree['$a'])}"]
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


def to_bytes(value: Any) -> bytes:
    arrays: list[np.ndarray] = []
    tree = json.dumps(encode(value, arrays), allow_nan=True).encode()
    buf = io.BytesIO()
    named: dict[str, Any] = {f"a{i}": a for i, a in enumerate(arrays)}
    np.savez(buf, tree=np.frombuffer(tree, dtype=np.uint8), **named)
    return buf.getvalue()


def from_bytes(payload: bytes) -> Any:
    with np.load(io.BytesIO(payload), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return decode(json.loads(arrays.pop("tree").tobytes()), arrays)


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
        return self.folder / f"{rkey[0]}-{h.hexdigest()}.npz"

    def load(self, rkey: tuple) -> tuple[Any] | None:
        """(value,) when a verified result is on disk, else None."""
        p = self._path(rkey)
        try:
            raw = p.read_bytes()
        except OSError:
            return None
        try:
            return (from_bytes(_verified(raw, self.key)),)
        except Exception as exc:  # noqa: BLE001 - a damaged result is a miss, removed
            log.warning("analysis cache: %s is damaged (%s); removed, computing it again",
                        p, exc)
            _unlink(p)
            return None

    def save(self, rkey: tuple, value: Any) -> bool:
        try:
            payload = to_bytes(value)
        except NotStorable:
            return False
        except Exception as exc:  # noqa: BLE001 - a value the codec chokes on: not kept
            log.warning("analysis cache: cannot encode %s (%s); not kept", rkey[0], exc)
            return False
        head = json.dumps({"key": self.key, "size": len(payload),
                           "crc32": zlib.crc32(payload)}).encode() + b"\n"
        try:
            _write_atomic(self._path(rkey), MAGIC + head + payload)
            return True
        except Exception as exc:  # noqa: BLE001 - a cache problem never fails an analysis
            log.warning("analysis cache %s: cannot store %s (%s)", self.folder, rkey[0], exc)
            return False


def _verified(raw: bytes, key: str) -> bytes:
    if not raw.startswith(MAGIC):
        raise ValueError("not a hipscope analysis file")
    nl = raw.find(b"\n", len(MAGIC), len(MAGIC) + _MAX_HEADER)
    if nl < 0:
        raise ValueError("its header is cut")
    head = json.loads(raw[len(MAGIC):nl])
    payload = raw[nl + 1:]
    if not isinstance(head, dict) or head.get("key") != key:
        raise ValueError("it belongs to another trace")
    if head.get("size") != len(payload) or head.get("crc32") != zlib.crc32(payload):
        raise ValueError("it does not match its checksum")
    return payload


def _write_atomic(p: Path, data: bytes) -> None:
    if not p.parent.parent.is_dir():
        raise OSError(f"the trace cache entry {p.parent.parent} is gone")
    p.parent.mkdir(exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".tmp-", dir=p.parent)
    tmp: str | None = tmp_name
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
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
