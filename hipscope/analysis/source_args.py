"""Every arg the source file has for one event, read back on demand (Kineto JSON).

The readers keep the args the tables need; the Details panel shows all of them
(Input Dims, Input type, Strides, Concrete Inputs, External id...) and the flows use
the cross-stream waits (``wait_on_cuda_event_record_corr_id``). The file is read once
per trace, in a worker, and its index lives as long as the trace does.

Matching: GPU work, runtime calls and GPU syncs by (category, correlation id); host
ops and annotations by their rank in time among the events of the same category and
name, checked against the duration.
"""

from __future__ import annotations

import gzip
import json
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..model import Trace

GPU_CATS = {"kernels": ("kernel",), "copies": ("gpu_memcpy", "gpu_memset")}
API_CATS = ("cuda_runtime", "cuda_driver", "cuda_sync")
DUR_SLACK_NS = 1_000          # the file's microseconds against the table's ns

_CACHE: dict[int, SourceIndex | None] = {}
_LOCK = threading.Lock()


@dataclass
class SourceIndex:
    """The args of one Kineto file: by (category, correlation id), and per
    (category, name) the (ts us, dur us, args) of the events in time order."""

    by_corr: dict[tuple[str, int], dict] = field(default_factory=dict)
    by_name: dict[tuple[str, str], list[tuple[float, float, dict]]] = field(
        default_factory=dict)


def _read_json(path: Path) -> Any:
    with open(path, "rb") as fh:
        head = fh.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        return json.load(fh)


def build_index(path: Path) -> SourceIndex | None:
    """The index of a Kineto JSON file; None when it is not one (or cannot be read)."""
    try:
        doc = _read_json(path)
    except (OSError, ValueError, EOFError):
        return None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        return None
    idx = SourceIndex()
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        args = e.get("args")
        if not isinstance(args, dict):
            args = {}
        cat = str(e.get("cat") or "")
        corr = args.get("correlation")
        if isinstance(corr, int) and cat in ("kernel", "gpu_memcpy", "gpu_memset", *API_CATS):
            idx.by_corr[(cat, corr)] = args
        else:
            idx.by_name.setdefault((cat, str(e.get("name") or "")), []).append(
                (float(e.get("ts") or 0), float(e.get("dur") or 0), args))
    for evs in idx.by_name.values():
        evs.sort(key=lambda x: x[0])
    return idx


def source_index(trace: Trace) -> SourceIndex | None:
    """The (cached) index of a one-file Kineto trace; None for any other trace.
    Slow the first time (reads the file): call it from a worker."""
    key = id(trace)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    sources = trace.meta.get("sources") or []
    idx = None
    if trace.format == "kineto" and len(sources) == 1:
        idx = build_index(Path(sources[0]))
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = idx
            weakref.finalize(trace, _CACHE.pop, key, None)
    return idx


def event_args(trace: Trace, idx: SourceIndex | None, table: str, row: int) -> dict | None:
    """All args the file has for row ``row`` of ``table`` (None when not found)."""
    if idx is None or table not in ("kernels", "copies", "api", "markers"):
        return None
    t = getattr(trace, table)
    if not 0 <= row < len(t):
        return None
    r = t.row(row)
    corr = r.get("correlation_id")
    cats = GPU_CATS.get(table) or (API_CATS if table == "api" else ())
    if table == "markers" and r.get("domain") == "cuda_sync":
        cats = ("cuda_sync",)
    if cats:
        if corr is None:
            return None
        return next((idx.by_corr[(c, corr)] for c in cats if (c, corr) in idx.by_corr), None)
    return _marker_args(t, idx, row, r)


def _marker_args(m, idx: SourceIndex, row: int, r: dict) -> dict | None:
    evs = idx.by_name.get((str(r.get("domain") or ""), str(r.get("name") or "")))
    if not evs:
        return None
    names, domains = m.column("name").to_pylist(), m.column("domain").to_pylist()
    same = np.flatnonzero([n == r["name"] and d == r["domain"] for n, d in zip(names, domains)])
    starts = m.numpy("start")[same]
    rank = int(np.flatnonzero(same[np.argsort(starts, kind="stable")] == row)[0])
    if rank >= len(evs):
        return None
    _ts, dur, args = evs[rank]
    if abs(dur * 1000 - (r["end"] - r["start"])) > DUR_SLACK_NS:
        return None                          # the ranks do not line up: show nothing
    return args
