"""The per-rank task: what a worker computes from one rank's trace, and sends back.

The worker reads the trace through the normal reader path with the on-disk cache
(``open_trace(use_cache=True)``; the cache folder is the one the engine names, so the
client's later open of the rank is a cache hit), computes the rank's figures from the
analysis service (steps, idle, ops, kernel classes, busy) and its collective
instances, and returns a :class:`RankResult`: a few KiB of plain values, never the
trace. The result itself is kept in the trace's cache entry (``analyses/``), so a
second run over unchanged files reads neither the trace nor its analyses.

A file that cannot be read is a :class:`~hipscope.ranks.model.RankFailure` with the
reader's one sentence, returned (not raised), so it costs only that rank.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from hashlib import blake2b
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.collectives import (
    RankCollectives,
    collectives_of,
    compact,
    short_kernel_name,
)
from ..analysis.kernel_class import CLASSES, COMM
from ..model import Trace, intervals
from .grid import fine_bins
from .model import RankFailure

RESULT_VERSION = 1
STEP_OPS_KEPT = 32          # op names kept per step window (the rest are dropped)
TOP_OPS = 10

__all__ = ["RESULT_VERSION", "RankResult", "analyse_rank"]


@dataclass
class RankResult:
    """One rank's figures as the worker computed them (see :class:`RankSummary`); the
    client adds the rank number and the job grid's bins."""

    source: str
    meta_rank: int | None
    host: str | None
    devices: list[str]
    start_ns: int
    end_ns: int
    kernels: int
    gpu_busy_ns: int
    step_ns: list[int]
    idle: dict[str, int]
    comm_ns: int
    classes: dict[str, int]
    top_ops: list[dict[str, Any]]
    fine_width: int
    fine_first: int
    fine_busy: list[int] | np.ndarray      # an array once compacted on the client
    collectives: RankCollectives
    step_bounds: list[int]                 # start of each step window (GPU clock)
    step_ops: list[dict[str, int]]         # per window: op name -> GPU ns (no comm)
    warnings: list[str] = field(default_factory=list)
    cache: str | None = None
    from_cache: bool = False
    rank_from: str = "distributedInfo"     # where meta_rank came from (or "process")

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(dataclasses.replace(self, collectives=RankCollectives()))
        out.pop("from_cache")
        out["fine_busy"] = np.asarray(self.fine_busy).tolist()
        out["collectives"] = self.collectives.to_json()
        return out

    def compact(self) -> RankResult:
        """The result as the client keeps it while the other ranks come in: its fine
        bins and collectives as arrays (:func:`~hipscope.analysis.collectives.compact`)."""
        return dataclasses.replace(self, fine_busy=np.asarray(self.fine_busy, np.int64),
                                   collectives=compact(self.collectives))

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RankResult:
        d = dict(d)
        d["collectives"] = RankCollectives(**d["collectives"])
        return cls(**d)


def analyse_rank(source: str, cache_dir: str | None = None) -> RankResult | RankFailure:
    """The task a worker runs for one rank file (module docstring)."""
    from ..parsers import TraceFormatError, open_trace
    from ..parsers import cache as trace_cache

    with _cache_dir(cache_dir):
        store = _store(trace_cache.cache_key(None, source))
        found = store.load(_rkey()) if store is not None else None
        if found is not None:
            return dataclasses.replace(RankResult.from_json(found[0]), from_cache=True,
                                       cache=str(store.folder.parent))
        try:
            trace = open_trace(source, use_cache=True)
        except TraceFormatError as exc:
            return RankFailure(source, str(exc))
        res = summarise(trace, source)
        store = _store(trace.meta.get("cache_key"))
        if store is not None:
            store.save(_rkey(), res.to_json())
            res = dataclasses.replace(res, cache=str(store.folder.parent))
        return res


@contextlib.contextmanager
def _cache_dir(folder: str | None) -> Iterator[None]:
    """``$HIPSCOPE_CACHE_DIR`` (what ``parsers.cache`` reads) set to ``folder`` for the
    task, then restored: a serial run must not move its own process's cache."""
    if not folder:
        yield
        return
    old = os.environ.get("HIPSCOPE_CACHE_DIR")
    os.environ["HIPSCOPE_CACHE_DIR"] = str(folder)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("HIPSCOPE_CACHE_DIR", None)
        else:
            os.environ["HIPSCOPE_CACHE_DIR"] = old


@functools.lru_cache(maxsize=1)
def _code() -> str:
    """A digest of this package's code: an edited rank analysis never serves an older
    one's results (the analysis store already keys ``analysis/*.py``)."""
    h = blake2b(digest_size=8)
    for f in sorted(Path(__file__).resolve().parent.glob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()


def _rkey() -> tuple:
    return ("rank_result", RESULT_VERSION, _code())


def _store(key: Any):
    """The analysis store of a trace cache entry (None when the trace is not cached)."""
    if not isinstance(key, str) or not key.isalnum():
        return None
    from ..analysis import persist
    from ..parsers.cache import cache_dir

    return persist.DiskStore(cache_dir() / key / "analyses", key)


def summarise(trace: Trace, source: str) -> RankResult:
    """A rank's figures from its trace and its analysis service."""
    from ..analysis.context import analyses_of
    from ..analysis.ops import ops_report

    svc = analyses_of(trace)
    att = svc.ops()
    t0, t1 = trace.time_range() or (0, 0)   # (0, 0): a rank with no timed events
    us, ue = _busy_union(trace)
    width, first, busy = fine_bins(us, ue, t0, t1)
    steps = svc.steps()
    bounds = [int(s) for s in np.sort(steps.start)] if steps is not None and len(steps) else []
    rep = ops_report(trace, att, top=TOP_OPS)
    classes = _class_ns(att)
    rank, rank_from, note = _meta_rank(trace)
    return RankResult(
        source=source, meta_rank=rank, rank_from=rank_from, host=_host(trace),
        devices=_devices(trace), start_ns=t0, end_ns=t1, kernels=len(trace.kernels),
        gpu_busy_ns=int((ue - us).sum()),
        step_ns=[int(e - s) for s, e in zip(steps.start, steps.end)] if steps else [],
        idle={k: int(v) for k, v in svc.idle_json()["total"].items()},
        comm_ns=classes.get(COMM, 0), classes=classes,
        top_ops=[{"name": r["name"], "count": int(r["count"]), "gpu_ns": int(r["gpu_ns"])}
                 for r in rep["ops"]],
        fine_width=width, fine_first=first, fine_busy=[int(b) for b in busy],
        collectives=collectives_of(trace, att), step_bounds=bounds,
        step_ops=_step_ops(trace, att, bounds),
        warnings=[str(w) for w in trace.meta.get("warnings", [])] + note)


def _meta_rank(trace: Trace) -> tuple[int | None, str, list[str]]:
    """The rank the trace records, where from, and a note when its processes disagree
    (a rocpd database of several ranks: ``parsers/rocpd/process_rank.py``)."""
    m = trace.meta
    if m.get("rank_variable"):
        return _int_or_none(m.get("rank")), "process", []
    pairs = m.get("process_ranks") or []
    if len({r for _, r in pairs}) > 1:
        ranks = ", ".join(str(r) for r in sorted({r for _, r in pairs}))
        return None, "process", [f"its processes record different ranks ({ranks}) in their "
                                 "environment; the file is counted as one rank"]
    return _int_or_none(m.get("rank")), "distributedInfo", []


def _int_or_none(v: Any) -> int | None:
    try:
        return None if v is None or isinstance(v, bool) else int(v)
    except (TypeError, ValueError):
        return None


def _busy_union(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Union of the rank's kernel and copy intervals, all devices together."""
    parts = [t for t in (trace.kernels, trace.copies) if len(t)]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    s = np.concatenate([t.numpy("start").astype(np.int64) for t in parts])
    e = np.concatenate([t.numpy("end").astype(np.int64) for t in parts])
    return intervals.union(s, e)


def _devices(trace: Trace) -> list[str]:
    used: set[int] = set()
    for t in (trace.kernels, trace.copies):
        if len(t):
            used.update(int(d) for d in np.unique(t.numpy("device", fill=-1)) if d >= 0)
    rows = trace.devices.data.to_pylist() if len(trace.devices) else []
    names = {int(r["index"]): str(r["name"]) for r in rows}
    return [names.get(d, f"GPU {d}") for d in sorted(used)]


def _host(trace: Trace) -> str | None:
    d = trace.devices
    if len(d) and "host" in d.data.column_names:
        hosts = [h for h in d.data.column("host").to_pylist() if h]
        if hosts:
            return str(hosts[0])
    h = trace.meta.get("host")
    return str(h) if h else None


def _class_ns(att) -> dict[str, int]:
    _, _, ns, cls = att.events()
    sums = np.bincount(cls.astype(np.int64), weights=ns, minlength=len(CLASSES))
    return {c: int(v) for c, v in zip(CLASSES, sums) if v > 0}


def _step_ops(trace: Trace, att, bounds: list[int]) -> list[dict[str, int]]:
    """Per step window (kernel start in [bound_i, bound_i+1)): GPU ns by launching-op
    name (the kernel's short name when it has none), communication kernels left out;
    the ``STEP_OPS_KEPT`` largest per window."""
    k = trace.kernels
    n_win = max(1, len(bounds))
    if len(k) == 0:
        return [{} for _ in range(n_win)]
    codes, cats = k.codes("name")
    keep = att.kernel_class != CLASSES.index(COMM)
    win = np.clip(np.searchsorted(np.asarray(bounds, np.int64), k.numpy("start"),
                                  side="right") - 1, 0, n_win - 1) if bounds else \
        np.zeros(len(k), np.int64)
    f = att.forest
    n_names = len(f.names)
    op = att.kernel_op
    key = np.where(op >= 0, f.name[np.maximum(op, 0)] if len(f) else 0,
                   n_names + np.maximum(codes, 0))
    flat = win[keep] * (n_names + len(cats) + 1) + key[keep]
    uniq, inv = np.unique(flat, return_inverse=True)
    sums = np.bincount(inv, weights=att.kernel_ns[keep])
    out: list[dict[str, int]] = [{} for _ in range(n_win)]
    for u, v in zip(uniq.tolist(), sums.tolist()):
        w, kk = divmod(u, n_names + len(cats) + 1)
        name = f.names[kk] if kk < n_names else short_kernel_name(cats[kk - n_names])
        out[w][name] = out[w].get(name, 0) + int(v)
    return [dict(sorted(d.items(), key=lambda kv: -kv[1])[:STEP_OPS_KEPT]) for d in out]


def result_size(res: RankResult) -> int:
    """Bytes of the result's JSON form (what one rank moves to the client, about)."""
    import json

    return len(json.dumps(res.to_json()))

