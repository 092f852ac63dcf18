"""Ruler figures of a time range: kernels, API calls, copies, busy fraction per device."""

from __future__ import annotations

import numpy as np

from ...model import Trace
from ...model.intervals import union_length
from ...model.progress import CancelledFn
from .events import window
from .rows import TimelineModel

_I64 = np.int64


def range_stats(model: TimelineModel, t0: int, t1: int) -> dict:
    """Ruler figures for ``[t0, t1)``: duration, kernels overlapping it, busy fraction
    per device (union of its kernel rows)."""
    t0, t1 = int(min(t0, t1)), int(max(t0, t1))
    dur = max(t1 - t0, 1)
    n_k, n_api, n_cp = 0, 0, 0
    per_dev: dict[int | None, list] = {}
    for r in model.rows:
        ev = r.events
        if ev is None or r.kind != "track":
            continue
        lo, hi = window(ev, t0, t1)
        n = int(np.count_nonzero(ev.end[lo:hi] > t0)) if hi > lo else 0
        if r.table == "kernels":
            n_k += n
            a = int(np.searchsorted(ev.ustart, _I64(t0), "right")) - 1
            a = max(a, 0)
            b = int(np.searchsorted(ev.ustart, _I64(t1), "left"))
            idx = np.arange(a, b)
            per_dev.setdefault(r.device, []).append(
                (np.clip(ev.ustart[a:b], t0, t1), np.clip(ev.uend(idx), t0, t1)))
        elif r.table == "api":
            n_api += n
        elif r.table == "copies":
            n_cp += n
    busy = {}
    for d, parts in per_dev.items():
        s = np.concatenate([p[0] for p in parts])
        e = np.concatenate([p[1] for p in parts])
        busy[d] = union_length(s, e) / dur
    return {"t0": t0, "t1": t1, "duration_ns": t1 - t0, "kernels": n_k,
            "api_calls": n_api, "copies": n_cp, "busy": busy}



def ruler_figures(trace: Trace, model: TimelineModel, t0: int, t1: int,
                  cancelled: CancelledFn | None = None) -> dict:
    """:func:`range_stats` plus what the ruler shows and sends: the busy fraction per
    device from the trace's analysis service (the report's interval union, clipped to
    the range), its mean over the devices and the devices' names."""
    from ..context import analyses_of

    st = range_stats(model, t0, t1)
    st["busy"] = analyses_of(trace).busy_between(t0, t1, cancelled)
    st["busy_fraction"] = float(np.mean(list(st["busy"].values()))) if st["busy"] else 0.0
    st["device_names"] = {d: trace.device_name(d) for d in st["busy"] if d is not None and d >= 0}
    return st
