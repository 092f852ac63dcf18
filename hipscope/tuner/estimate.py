"""Gains on one wall clock, in the unit the user compares (docs/tuning.md, "Estimates").

A rule hands over *where* time could be recovered: intervals on the trace's clock,
each tagged with its GPU and its host thread (:class:`Pieces`). The estimate counts
the union of those intervals, so time that several GPUs wait at once is counted once
and no gain exceeds its window, and keeps each GPU's and thread's own figure beside
it. The window is the steady-state steps where the trace marks steps
(``analysis.steps``), else the kernel window (first kernel start to last kernel end:
set-up before the first kernel is not what the user tunes). :func:`launch_capped` bounds
a gain by the host's launch rate: a step cannot get shorter than the time its launching
thread takes to issue the step's launches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.idle import Coverage
from ..analysis.steps import Steps
from ..model.api_names import LAUNCH_RE, is_sync_call
from .context import TraceContext
from .proposals import Estimate


@dataclass
class Pieces:
    """Recoverable intervals [start, end) with the GPU and host thread of each."""

    start: np.ndarray
    end: np.ndarray
    device: np.ndarray                 # int64
    thread: np.ndarray                 # int64 index into ``labels``
    labels: list[str]                  # "pid/tid" ('' unknown)

    @classmethod
    def of(cls, groups: list[tuple[Coverage, int, str]]) -> Pieces:
        """Pieces from (coverage, device, thread) groups."""
        z = np.zeros(0, np.int64)
        if not groups:
            return cls(z, z, z, z, [])
        labels = sorted({t for _, _, t in groups})
        n = np.array([len(c.s) for c, _, _ in groups])
        return cls(np.concatenate([c.s for c, _, _ in groups]),
                   np.concatenate([c.e for c, _, _ in groups]),
                   np.repeat(np.array([d for _, d, _ in groups], np.int64), n),
                   np.repeat(np.array([labels.index(t) for _, _, t in groups], np.int64), n),
                   labels)

    def scaled(self, f: float) -> Pieces:
        """Each piece shortened to ``f`` of its length (a gain below the idle it uses)."""
        f = min(max(float(f), 0.0), 1.0)
        return Pieces(self.start, self.start + ((self.end - self.start) * f).astype(np.int64),
                      self.device, self.thread, self.labels)

    @property
    def wall(self) -> Coverage:
        return Coverage(self.start, self.end)


def thread_label(pid: int, tid: int) -> str:
    return "" if pid < 0 and tid < 0 else f"{pid}/{tid}"


def steps_of(ctx: TraceContext) -> Steps | None:
    """The trace's steps (the analysis service's, computed once per trace)."""
    return ctx.analyses.steps(ctx.cancelled)


def _windows(ctx: TraceContext) -> tuple[str, np.ndarray, np.ndarray, Steps | None]:
    """(basis, starts, ends, steps) of the window estimates are measured over."""
    st = steps_of(ctx)
    k0, k1 = ctx.kernel_window
    if st is not None and st.steady_count:
        ws, we = st.start[st.steady], st.end[st.steady]
        ks = np.sort(ctx.trace.kernels.numpy("start"))
        if np.any(np.searchsorted(ks, we) > np.searchsorted(ks, ws)):   # steps hold kernels
            return "steps", ws, we, st
    return "kernel window", np.array([k0], np.int64), np.array([k1], np.int64), st


def gpu_step_ns(ctx: TraceContext, st: Steps) -> int:
    """Median steady-state step on the GPU: from the end of the previous step's GPU
    work to the end of this one's (0 when the trace cannot tell)."""
    ends = ctx.analyses.gpu_step_ends(ctx.cancelled)   # once per trace, not per proposal
    if ends is None or len(ends) < 2:
        return 0
    period = np.diff(ends)[st.steady[1:]]
    return int(np.median(period)) if len(period) else 0


def estimate(ctx: TraceContext, pieces: Pieces) -> Estimate:
    """The gain of ``pieces`` per steady-state step (or over the kernel window)."""
    basis, ws, we, st = _windows(ctx)
    t0, t1 = ctx.span
    wall = pieces.wall
    per_device = {str(int(d)): int(Coverage(pieces.start[m], pieces.end[m]).within(ws, we).sum())
                  for d in np.unique(pieces.device) for m in [pieces.device == d]}
    per_thread = {t: int(Coverage(pieces.start[m], pieces.end[m]).within(ws, we).sum())
                  for i, t in enumerate(pieces.labels) if t
                  for m in [pieces.thread == i]}
    return Estimate(
        gain_ns=int(wall.within(ws, we).sum()), window_ns=int((we - ws).sum()), basis=basis,
        span_ns=t1 - t0, span_gain_ns=int(wall.within(np.array([t0]), np.array([t1]))[0]),
        steps=st.steady_count if basis == "steps" else 0,
        step_ns=int(st.median_ns) if basis == "steps" else 0,
        gpu_step_ns=gpu_step_ns(ctx, st) if basis == "steps" else 0,
        step_source=st.source if st else "",
        per_device={k: v for k, v in per_device.items() if v},
        per_thread={k: v for k, v in per_thread.items() if v})


def spread_estimate(ctx: TraceContext, span_gain_ns: float) -> Estimate:
    """The estimate of a gain a rule gives only as a total: spread evenly over the
    kernel window (the rule does not say where it is), at most the window."""
    k0, k1 = ctx.kernel_window
    if k1 <= k0:
        return estimate(ctx, Pieces.of([]))
    dens = min(1.0, max(0.0, float(span_gain_ns)) / (k1 - k0))
    pieces = Pieces(np.array([k0], np.int64), np.array([k0 + int(dens * (k1 - k0))], np.int64),
                    np.array([-1], np.int64), np.array([0], np.int64), [""])
    basis, ws, we, _ = _windows(ctx)
    est = estimate(ctx, pieces)
    inside = np.clip(np.minimum(we, k1) - np.maximum(ws, k0), 0, None).sum()
    est.gain_ns = int(dens * inside)
    est.per_device = {}
    return est


def launch_floor(ctx: TraceContext, ws: np.ndarray, we: np.ndarray) -> np.ndarray:
    """Per window [ws, we): the longest time one host thread takes to issue its kernel
    launches in it, from its first launch call's start to its last one's end, less the
    time it waited there (in synchronising calls, and in launch calls beyond the
    thread's median call: those waited for queue space, which the GPU side may free).
    A change on the GPU side (more hardware queues) cannot make the step shorter."""
    api = ctx.trace.api
    floor = np.zeros(len(ws), np.int64)
    if len(api) == 0 or len(ws) == 0:
        return floor
    codes, names = api.codes("name")
    launch = np.array([bool(LAUNCH_RE.search(n)) for n in names] + [False])[codes]
    sync = np.array([is_sync_call(n) for n in names] + [False])[codes]
    s, e = api.numpy("start"), api.numpy("end")
    who = api.numpy("pid", fill=-1).astype(np.int64) * (1 << 32) + api.numpy("tid", fill=-1)
    for t in np.unique(who[launch]):
        mine = who == t
        m = launch & mine
        order = np.argsort(s[m], kind="stable")
        ls, le = s[m][order], e[m][order]
        med = int(np.median(le - ls))
        waits = Coverage(np.concatenate((s[sync & mine], ls + med)),
                         np.concatenate((e[sync & mine], le)))
        i0, i1 = np.searchsorted(ls, ws), np.searchsorted(ls, we)
        has = i1 > i0
        first = ls[i0[has]]
        last = np.minimum(np.maximum.accumulate(le)[i1[has] - 1], we[has])
        busy = (last - first) - waits.within(first, last)
        floor[has] = np.maximum(floor[has], busy)
    return floor


def launch_capped(ctx: TraceContext, est: Estimate) -> tuple[Estimate, int]:
    """``est`` with its gain bounded by the host's launch rate: in each window at most
    the window less :func:`launch_floor`. Returns (estimate, launch floor per step, ns:
    the median over the windows)."""
    _, ws, we, _ = _windows(ctx)
    floor = launch_floor(ctx, ws, we)
    room = int(np.clip((we - ws) - floor, 0, None).sum())
    if est.gain_ns > room:
        f = room / est.gain_ns if est.gain_ns else 0.0
        est.gain_ns = room
        est.span_gain_ns = int(est.span_gain_ns * f)
        est.per_thread = {k: int(v * f) for k, v in est.per_thread.items()}
        est.per_device = {k: int(v * f) for k, v in est.per_device.items()}
    return est, int(np.median(floor)) if len(floor) else 0
