"""One analysis service per trace: every analysis of an open trace, computed once.

:class:`TraceAnalyses` computes each result lazily, the first time someone asks, and
keeps it; the report, the tuner and every panel read from the same service (one per
trace: :func:`analyses_of`), so ``queue_delays`` runs once however many readers it
has. Results are lock-guarded (two threads asking for one result compute it once),
cancellable (``cancelled`` from :mod:`hipscope.model.progress`; a cancelled result is
not kept) and, when the trace came from the on-disk cache, kept beside it
(:mod:`.persist`), so a reopened trace computes nothing. Shared intermediates are results
too: the kernels grouped by device once (``device_order``: a radix sort of the device
codes), each device's rows, starts and ends in start order (``device_rows``,
``device_spans``) and busy unions, which the busy figures, the idle breakdown and
concurrency all read (none of them sorts or takes the columns again). Qt-free.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..model import Trace, intervals
from ..model.progress import CancelledFn, check_cancel

#: threads of :meth:`TraceAnalyses.prefetch` (two: what this kind of numpy work gains)
WORKERS = min(2, os.cpu_count() or 1)

# name -> (function(service, *params, cancelled) -> value, kept on disk, kept in memory)
_RESULTS: dict[str, tuple[Callable[..., Any], bool, bool]] = {}


def result(name: str, persist: bool = True, memo: bool = True):
    """Register a result of the service (``persist``: kept in the on-disk cache).
    ``memo=False``: not kept in memory; each call gets a fresh value (its caller may
    change it), from the disk cache as read-only views of the file's memory map (the
    timeline's level-of-detail arrays: read when drawn) or computed."""
    def deco(fn):
        _RESULTS[name] = (fn, persist, memo)
        return fn
    return deco


class TraceAnalyses:
    """The analyses of one trace. ``get(name, *params)`` computes or returns a result;
    the named methods below are the public spellings. ``computed`` counts what this
    service computed (not what it served from memory or disk), ``loaded`` what it
    read from the disk cache."""

    def __init__(self, trace: Trace, store: Any = None):
        from . import persist

        self.trace = trace
        self.store = store if store is not None else persist.store_for(trace)
        self.computed: Counter[str] = Counter()
        self.loaded: Counter[str] = Counter()
        self._values: dict[Hashable, Any] = {}
        self._once: dict[Hashable, Any] = {}     # preloaded, for the next get only
        self._locks: dict[Hashable, threading.RLock] = {}
        self._guard = threading.Lock()

    def get(self, name: str, *params: Hashable, cancelled: CancelledFn | None = None) -> Any:
        key = (name, *params)
        if key in self._values:
            return self._values[key]
        fn, persist, memo = _RESULTS[name]
        with self._lock_of(key):
            if key in self._values:
                return self._values[key]
            found = self._once.pop(key, None)        # counted when it was preloaded
            if found is None and persist:
                found = self._from_disk(key, memo)
            if found is not None:
                return found[0]
            check_cancel(cancelled)
            value = fn(self, *params, cancelled=cancelled)
            check_cancel(cancelled)
            self.computed[name] += 1
            if memo:
                self._values[key] = value
            if persist and self.store is not None:
                self.store.save(key, value)
            return value

    def preload(self, name: str, *params: Hashable) -> bool:
        """Read a kept result from the disk cache now, on this thread, for the next
        :meth:`get` of it (a result not kept in memory is handed to that one call);
        computes nothing: False when it is not on disk. The app's head start reads
        the first frame's rows this way while the window is still being built."""
        key = (name, *params)
        _fn, persist, memo = _RESULTS[name]
        if not persist or key in self._values:
            return key in self._values
        with self._lock_of(key):
            if key in self._values or key in self._once:
                return True
            found = self._from_disk(key, memo)
            if found is not None and not memo:
                self._once[key] = found
            return found is not None

    def _lock_of(self, key: Hashable) -> threading.RLock:
        with self._guard:
            return self._locks.setdefault(key, threading.RLock())

    def _from_disk(self, key: tuple, memo: bool) -> tuple[Any] | None:
        """(value,) of ``key`` from the disk cache, counted in ``loaded`` and kept in
        memory when ``memo``; None when the trace has no store or no such result."""
        found = self.store.load(key, mapped=not memo) if self.store is not None else None
        if found is not None:
            self.loaded[key[0]] += 1
            if memo:
                self._values[key] = found[0]
        return found

    def prefetch(self, names: Sequence[str], cancelled: CancelledFn | None = None) -> None:
        """Compute the results ``names`` (none with parameters) on up to ``WORKERS``
        threads: independent analyses overlap where numpy lets go of the GIL (sorts,
        unions, reductions); shared intermediates are still computed once (their
        locks). Values are the same as one by one; an error is raised as a call in
        ``names`` order would raise it."""
        todo = [n for n in names if (n,) not in self._values]
        if WORKERS < 2 or len(todo) < 2:
            for n in todo:
                self.get(n, cancelled=cancelled)
            return
        with ThreadPoolExecutor(min(WORKERS, len(todo)),
                                thread_name_prefix="hipscope-analysis") as pool:
            futures = [pool.submit(self.get, n, cancelled=cancelled) for n in todo]
        for f in futures:
            f.result()

    def peek(self, name: str, *params: Hashable) -> Any:
        """The result when already in memory, else None (never computes: GUI thread)."""
        return self._values.get((name, *params))

    # public spellings ---------------------------------------------------------------
    def queue_delays(self, cancelled: CancelledFn | None = None):
        return self.get("queue_delays", cancelled=cancelled)

    def queue_delay_summary(self, cancelled: CancelledFn | None = None) -> dict | None:
        """The report's queue-delay figures (percentiles: a sort of every delay), None
        when the kernels are not linked to their launches."""
        return self.get("queue_delay_summary", cancelled=cancelled)

    def idle(self, cancelled: CancelledFn | None = None):
        return self.get("idle", cancelled=cancelled)

    def idle_json(self, cancelled: CancelledFn | None = None) -> dict:
        """The idle breakdown's report figures (its wall-clock unions, computed once)."""
        return self.get("idle_json", cancelled=cancelled)

    def concurrency(self, cancelled: CancelledFn | None = None) -> dict:
        return self.get("concurrency", cancelled=cancelled)

    def launch_stats(self, cancelled: CancelledFn | None = None) -> dict:
        return self.get("launch_stats", cancelled=cancelled)

    def kernel_stats(self, cancelled: CancelledFn | None = None):
        return self.get("kernel_stats", cancelled=cancelled)

    def device_rows(self, cancelled: CancelledFn | None = None) -> dict[int, np.ndarray]:
        return self.get("device_rows", cancelled=cancelled)

    def device_spans(self, cancelled: CancelledFn | None = None
                     ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        return self.get("device_spans", cancelled=cancelled)

    def busy_unions(self, cancelled: CancelledFn | None = None
                    ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        return self.get("busy_unions", cancelled=cancelled)

    def busy_fraction(self, cancelled: CancelledFn | None = None) -> dict[int, float]:
        return self.get("busy_fraction", cancelled=cancelled)

    def busy_between(self, t0: int, t1: int, cancelled: CancelledFn | None = None
                     ) -> dict[int, float]:
        """Per device: share of ``[t0, t1)`` its kernels cover (the ruler's busy %)."""
        return {d: intervals.busy_fraction(us, ue, int(t0), int(t1))
                for d, (us, ue) in self.busy_unions(cancelled).items()}

    def steps(self, cancelled: CancelledFn | None = None):
        return self.get("steps", cancelled=cancelled)

    def gpu_step_ends(self, cancelled: CancelledFn | None = None):
        return self.get("gpu_step_ends", cancelled=cancelled)

    def graph_gaps(self, cancelled: CancelledFn | None = None):
        return self.get("graph_gaps", cancelled=cancelled)

    def sanity(self, cancelled: CancelledFn | None = None) -> list[str]:
        return self.get("sanity", cancelled=cancelled)

    def counter_matrix(self, per: str = "dispatch", derived: bool = True,
                       cancelled: CancelledFn | None = None):
        return self.get("counter_matrix", per, derived, cancelled=cancelled)

    def timeline_model(self, grouping: str = "queue", cancelled: CancelledFn | None = None):
        return self.get("timeline_model", grouping, cancelled=cancelled)

    def ops(self, cancelled: CancelledFn | None = None):
        """Op forest and launching op of every kernel/copy (analysis/ops)."""
        return self.get("ops", cancelled=cancelled)

    def timeline_frame(self, grouping: str = "queue", mode: str = "name",
                       cancelled: CancelledFn | None = None):
        """(TimelineModel, ColorScale): the timeline's rows by ``grouping`` with the
        colour keys of ``mode`` applied; a fresh model each call (the view recolours
        it), from the disk cache when the trace has one (its first frame)."""
        return self.get("timeline_frame", grouping, mode, cancelled=cancelled)


# --------------------------------------------------------------------------- one per trace
_ATTR = "_hipscope_analyses"
_OF_LOCK = threading.Lock()


def analyses_of(trace: Trace) -> TraceAnalyses:
    """The one service of ``trace``, created on first use and kept on the trace itself
    (so it lives exactly as long as the trace; a registry would keep every trace)."""
    svc = trace.__dict__.get(_ATTR)
    if svc is None:
        with _OF_LOCK:
            svc = trace.__dict__.get(_ATTR)
            if svc is None:
                svc = TraceAnalyses(trace)
                object.__setattr__(trace, _ATTR, svc)     # Trace is frozen: its own slot
    return svc


# --------------------------------------------------------------------------- the results
@result("queue_delays")
def _queue_delays(svc: TraceAnalyses, cancelled=None):
    from . import queue_delay as qd

    return qd.queue_delays(svc.trace)


@result("queue_delay_summary")
def _queue_delay_summary(svc: TraceAnalyses, cancelled=None) -> dict | None:
    from . import queue_delay as qd

    d = svc.queue_delays(cancelled)
    if not d.linked:
        return None
    out: dict[str, Any] = {"from_api_start": qd.summary(d.from_api_start),
                           "from_api_end": qd.summary(d.from_api_end)}
    if d.from_dispatch is not None:
        out["from_dispatch"] = qd.summary(d.from_dispatch)
    out["graph_launch_kernels"] = int(len(d.graph_rows))
    return out


@result("idle", persist=False)        # ~50 bytes a gap: cheaper to compute than to keep
def _idle(svc: TraceAnalyses, cancelled=None):
    from . import idle

    return idle.idle_breakdown(svc.trace, device_rows=svc.device_rows(cancelled),
                               spans=svc.device_spans(cancelled))


@result("idle_json")
def _idle_json(svc: TraceAnalyses, cancelled=None) -> dict:
    return svc.idle(cancelled).to_json()


@result("concurrency")
def _concurrency(svc: TraceAnalyses, cancelled=None) -> dict:
    from . import concurrency

    return concurrency.concurrency(svc.trace, busy_ns=_busy_ns(svc, cancelled),
                                   device_rows=svc.device_rows(cancelled),
                                   spans=svc.device_spans(cancelled))


@result("launch_stats")
def _launch_stats(svc: TraceAnalyses, cancelled=None) -> dict:
    from . import concurrency

    return concurrency.launch_stats(svc.trace)


@result("kernel_stats")
def _kernel_stats(svc: TraceAnalyses, cancelled=None):
    from . import stats

    return stats.kernel_stats(svc.trace, cancelled=cancelled)


@result("device_order", persist=False)
def _device_order(svc: TraceAnalyses, cancelled=None):
    """Kernel rows grouped by device, each device's in (stable) start order, by a radix
    sort of the device codes: (devices, rows, bounds, starts in that order)."""
    from ._groups import grouped

    k = svc.trace.kernels
    return grouped(k.numpy("device"), k.numpy("start"))


@result("device_rows", persist=False)
def _device_rows(svc: TraceAnalyses, cancelled=None) -> dict[int, np.ndarray]:
    """Per device: its kernel rows in start order (the sort every union needs)."""
    if len(svc.trace.kernels) == 0:
        return {}
    devs, rows, bounds, _ = svc.get("device_order", cancelled=cancelled)
    return {int(d): rows[bounds[i]:bounds[i + 1]] for i, d in enumerate(devs.tolist())}


@result("device_spans", persist=False)
def _device_spans(svc: TraceAnalyses, cancelled=None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per device: its kernels' starts and ends in start order (taken once, shared by the
    unions, the idle breakdown and concurrency)."""
    if len(svc.trace.kernels) == 0:
        return {}
    devs, rows, bounds, starts = svc.get("device_order", cancelled=cancelled)
    ends = svc.trace.kernels.numpy("end")[rows]
    return {int(d): (starts[bounds[i]:bounds[i + 1]], ends[bounds[i]:bounds[i + 1]])
            for i, d in enumerate(devs.tolist())}


@result("busy_unions", persist=False)   # an intermediate: one pass per device
def _busy_unions(svc: TraceAnalyses, cancelled=None) -> dict[int, tuple]:
    out = {}
    for d, (s, e) in svc.device_spans(cancelled).items():
        check_cancel(cancelled)
        out[d] = intervals.union(s, e)
    return out


def _busy_ns(svc: TraceAnalyses, cancelled=None) -> dict[int, int]:
    return {d: int((ue - us).sum()) for d, (us, ue) in svc.busy_unions(cancelled).items()}


@result("busy_fraction")
def _busy_fraction(svc: TraceAnalyses, cancelled=None) -> dict[int, float]:
    """Per device: union of its kernels over its own window (first start, last end)."""
    out = {}
    for d, (s, e) in svc.device_spans(cancelled).items():
        us, ue = svc.busy_unions(cancelled)[d]
        out[d] = intervals.busy_fraction(us, ue, int(s[0]), int(e.max()))
    return out


@result("steps")
def _steps(svc: TraceAnalyses, cancelled=None):
    from .steps import find_steps

    return find_steps(svc.trace)


@result("gpu_step_ends", persist=False)
def _gpu_step_ends(svc: TraceAnalyses, cancelled=None):
    from .steps import gpu_step_ends

    st = svc.steps(cancelled)
    return None if st is None else gpu_step_ends(svc.trace, st)


@result("graph_gaps")
def _graph_gaps(svc: TraceAnalyses, cancelled=None):
    from .graphs import graph_replay_gaps

    return graph_replay_gaps(svc.trace)


@result("sanity")
def _sanity(svc: TraceAnalyses, cancelled=None) -> list[str]:
    from .sanity import sanity_warnings

    return sanity_warnings(svc.trace)


@result("counter_matrix", persist=False)
def _counter_matrix(svc: TraceAnalyses, per: str, derived: bool, cancelled=None):
    from . import counters

    return counters.counter_matrix(svc.trace, per=per, derived=derived, cancelled=cancelled)


@result("timeline_model", persist=False)
def _timeline_model(svc: TraceAnalyses, grouping: str, cancelled=None):
    from . import lod

    return lod.build_model(svc.trace, grouping, cancelled)


@result("timeline_frame", memo=False)
def _timeline_frame(svc: TraceAnalyses, grouping: str, mode: str, cancelled=None):
    from .timeline_model.prepare import coloured_model

    return coloured_model(svc.trace, grouping, mode, None, cancelled)


@result("ops")
def _ops(svc: TraceAnalyses, cancelled=None):
    from .ops import attribute

    return attribute(svc.trace, cancelled=cancelled)
