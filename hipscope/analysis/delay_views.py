"""Data behind the queue-delay view (Qt-free): histograms per stream or queue,
delay density over a time window, the worst launches and the headline numbers.

Delays come from the trace's analysis service (:mod:`.context`; definitions in
docs/analysis.md). Histograms use log-spaced bins over the positive delays; zero or
negative delays (``from_api_end`` can be negative: the kernel began before the
launch call returned) are counted apart, never dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model import Trace
from ..model.progress import CancelledFn, check_cancel
from . import queue_delay as qd
from .context import TraceAnalyses, analyses_of

KINDS = ("from_api_start", "from_api_end", "from_dispatch")


@dataclass(frozen=True)
class DelayData:
    """Per-kernel delays of one kind, aligned arrays."""

    kind: str
    rows: np.ndarray          # trace.kernels rows
    delay: np.ndarray         # ns (int64)
    start: np.ndarray         # kernel start, ns
    group: np.ndarray         # stream (or queue) id per kernel, -1 unknown
    group_key: str            # "stream" or "queue"


def delay_data(trace: Trace, kind: str = "from_api_start", delays: qd.QueueDelays | None = None,
               by: str = "stream") -> DelayData | None:
    """The delays of one kind (None when the trace cannot give them)."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} not in {KINDS}")
    d = delays if delays is not None else analyses_of(trace).queue_delays()
    k = trace.kernels
    values = getattr(d, kind)
    if values is None:
        return None
    if kind == "from_dispatch":
        rows = np.flatnonzero(k.valid("dispatch_ns"))
    else:
        rows = d.kernel_rows
    key = by if k.has(by) else ("queue" if k.has("queue") else "stream")
    group = k.numpy(key, fill=-1).astype(np.int64)[rows] if len(rows) else np.zeros(0, np.int64)
    start = k.numpy("start")[rows] if len(rows) else np.zeros(0, np.int64)
    return DelayData(kind, rows.astype(np.int64), np.asarray(values, np.int64), start,
                     group, key)


@dataclass(frozen=True)
class DelayHistograms:
    edges: np.ndarray                      # ns, log-spaced, len(bins) + 1
    counts: dict[int, np.ndarray]          # group id -> counts per bin
    nonpositive: dict[int, int]            # group id -> delays <= 0
    group_key: str


def log_edges(values: np.ndarray, per_decade: int = 20) -> np.ndarray:
    """Log-spaced edges covering the positive values (whole decades)."""
    pos = values[values > 0]
    if len(pos) == 0:
        return np.array([1.0, 10.0])
    lo = np.floor(np.log10(pos.min()))
    hi = max(np.ceil(np.log10(pos.max())), lo + 1)
    if 10 ** hi == pos.max():
        hi += 1.0 / per_decade
    n = int(round((hi - lo) * per_decade)) + 1
    return np.logspace(lo, hi, max(n, 2))


def histograms(data: DelayData, per_decade: int = 20) -> DelayHistograms:
    """Counts per log bin, per group (stream or queue)."""
    edges = log_edges(data.delay.astype(np.float64), per_decade)
    counts, nonpos = {}, {}
    for g in np.unique(data.group):
        v = data.delay[data.group == g]
        counts[int(g)] = np.histogram(v[v > 0], bins=edges)[0]
        nonpos[int(g)] = int((v <= 0).sum())
    return DelayHistograms(edges, counts, nonpos, data.group_key)


@dataclass(frozen=True)
class DelayDensity:
    """``counts[x, y]``: kernels starting in time bin x with delay in log bin y."""

    t_edges: np.ndarray
    d_edges: np.ndarray
    counts: np.ndarray
    nonpositive: np.ndarray        # per time bin
    median: np.ndarray             # per time bin, NaN where empty


def density(data: DelayData, t0: int, t1: int, tbins: int = 200,
            d_edges: np.ndarray | None = None) -> DelayDensity:
    """Delay over time in the window [t0, t1) (kernel start decides the bin)."""
    t1 = max(int(t1), int(t0) + 1)
    tbins = max(1, int(tbins))
    if d_edges is None:
        d_edges = log_edges(data.delay.astype(np.float64))
    lo, hi = np.searchsorted(data.start, [t0, t1]) if _sorted(data.start) else (None, None)
    if lo is None:
        m = (data.start >= t0) & (data.start < t1)
        s, v = data.start[m], data.delay[m]
    else:
        s, v = data.start[lo:hi], data.delay[lo:hi]
    t_edges = np.linspace(t0, t1, tbins + 1)
    pos = v > 0
    counts = np.histogram2d(s[pos].astype(np.float64), v[pos].astype(np.float64),
                            bins=(t_edges, d_edges))[0] if pos.any() else np.zeros(
        (tbins, len(d_edges) - 1))
    xb = np.clip(((s - t0) * tbins // (t1 - t0)).astype(np.int64), 0, tbins - 1)
    nonpos = np.bincount(xb[~pos], minlength=tbins)
    med = np.full(tbins, np.nan)
    if len(v):
        order = np.lexsort((v, xb))
        xs, vs = xb[order], v[order]
        b = np.flatnonzero(np.diff(xs)) + 1
        starts = np.concatenate(([0], b))
        ends = np.concatenate((b, [len(xs)]))
        med[xs[starts]] = (vs[(starts + ends - 1) // 2] + vs[(starts + ends) // 2]) / 2
    return DelayDensity(t_edges, d_edges, counts, nonpos, med)


def _sorted(a: np.ndarray) -> bool:
    return len(a) < 2 or bool(np.all(a[1:] >= a[:-1]))


def sort_by_start(data: DelayData) -> DelayData:
    """The same data ordered by kernel start (so windows slice with searchsorted)."""
    o = np.argsort(data.start, kind="stable")
    return DelayData(data.kind, data.rows[o], data.delay[o], data.start[o], data.group[o],
                     data.group_key)


def worst(trace: Trace, data: DelayData, n: int = 20) -> list[dict[str, Any]]:
    """The ``n`` kernels with the longest delay, longest first."""
    order = np.argsort(-data.delay, kind="stable")[:n]
    codes, names = trace.kernels.codes("name")
    api = trace.api
    api_idx = trace.kernels.numpy("api_index", fill=-1).astype(np.int64)
    acodes, anames = api.codes("name") if len(api) else (np.zeros(0, np.int32), [])
    out = []
    for i in order:
        r = int(data.rows[i])
        a = int(api_idx[r])
        out.append({
            "kernel_row": r, "kernel": names[codes[r]] if codes[r] >= 0 else "?",
            "delay_ns": int(data.delay[i]), "start": int(data.start[i]),
            data.group_key: int(data.group[i]),
            "launch": anames[acodes[a]] if 0 <= a < len(acodes) and acodes[a] >= 0 else None,
        })
    return out


@dataclass
class Headline:
    summaries: dict[str, dict | None]
    graph_launch_kernels: int
    linked: bool
    idle: dict[int, dict[str, int]] = field(default_factory=dict)
    busy: dict[int, int] = field(default_factory=dict)
    window: dict[int, int] = field(default_factory=dict)


def headline(trace: Trace, delays: qd.QueueDelays | None = None,
             analyses: TraceAnalyses | None = None) -> Headline:
    """p50/p95/max per delay kind, graph-launch kernels, idle breakdown per device."""
    an = analyses if analyses is not None else analyses_of(trace)
    d = delays if delays is not None else an.queue_delays()
    h = Headline({k: qd.summary(getattr(d, k)) for k in KINDS}, int(len(d.graph_rows)),
                 d.linked)
    if len(trace.kernels):
        ib = an.idle()
        for dev, di in sorted(ib.devices.items()):
            h.idle[dev] = dict(di.breakdown)
            h.busy[dev] = di.busy_ns
            h.window[dev] = di.window_ns
    return h


@dataclass
class DelayViewData:
    """Everything the view draws for one delay kind (computed in a worker)."""

    kind: str
    data: DelayData | None
    hist: DelayHistograms | None
    worst: list[dict[str, Any]]
    headline: Headline


def compute_view_data(trace: Trace, kind: str = "from_api_start", by: str = "stream",
                      n_worst: int = 20, analyses: TraceAnalyses | None = None,
                      cancelled: CancelledFn | None = None) -> DelayViewData:
    """One call for the view's worker: delays, histograms, worst N and the headline,
    from the trace's analysis service (``analyses``, default :func:`analyses_of`);
    ``cancelled`` is checked between the steps (raises
    :class:`~hipscope.model.progress.Cancelled`)."""
    an = analyses if analyses is not None else analyses_of(trace)
    d = an.queue_delays(cancelled)
    check_cancel(cancelled)
    data = delay_data(trace, kind, d, by)
    if data is not None:
        data = sort_by_start(data)
    check_cancel(cancelled)
    hist = histograms(data) if data is not None and len(data.delay) else None
    check_cancel(cancelled)
    top = worst(trace, data, n_worst) if data is not None else []
    check_cancel(cancelled)
    return DelayViewData(kind, data, hist, top, headline(trace, d, an))
