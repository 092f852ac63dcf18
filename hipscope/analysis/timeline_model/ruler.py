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


# ----------------------------------------------------------------------------- axis
_MIN, _H, _D = 60_000_000_000, 3_600_000_000_000, 86_400_000_000_000
_LONG_STEPS = ([m * _MIN for m in (1, 2, 5, 10, 15, 30)] + [h * _H for h in (1, 2, 3, 6, 12)]
               + [d * _D for d in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)])
_SHORT_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))
BASE_DIGITS = 4           # offsets needing more digits than this get a base time


def nice_step(raw: float) -> int:
    """A tick step (ns) of at least ``raw``: 1-2-5 below a minute, then whole minutes,
    hours and days."""
    if raw > 45e9:
        return next((s for s in _LONG_STEPS if s >= raw), _LONG_STEPS[-1])
    mag = 10 ** np.floor(np.log10(max(raw, 1.0)))
    return max(int(next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)), 1)


def _fmt_long(ns: int, step: int) -> str:
    """A time of minutes or more: '2 d 6 h', '1 h 05 min', '15 min'."""
    sign, a = ("-" if ns < 0 else ""), abs(int(ns))
    d, rest = divmod(a, _D)
    h, rest = divmod(rest, _H)
    m = rest // _MIN
    if d:
        return f"{sign}{d:,} d {h} h" if h or step < _D else f"{sign}{d:,} d"
    if h:
        return f"{sign}{h} h {m:02d} min" if m or step < _H else f"{sign}{h} h"
    return f"{sign}{m} min"


def _decimals(step: float, scale: float) -> int:
    return max(0, int(np.ceil(-np.log10(step / scale) - 1e-9)))


def fmt_offset(ns: float, step: int, unit_ref: float | None = None) -> str:
    """A relative time with as many decimals as ``step`` needs, in the unit that suits
    ``unit_ref`` (default: the value itself); minutes and more as 'h min'."""
    ref = abs(unit_ref if unit_ref is not None else ns)
    if step >= _MIN and ref >= _MIN:
        return _fmt_long(int(ns), step) if ns else "0"
    if ref >= 2 * _MIN:                       # minutes, then seconds with decimals
        s_part, dec = (abs(ns) % _MIN) / 1e9, _decimals(step, 1e9)
        head = _fmt_long(int(ns) - int(np.sign(ns) * (abs(ns) % _MIN)), _MIN)
        return f"{head} {s_part:0{3 + dec if dec else 2}.{dec}f} s"
    scale, unit = next(((s, u) for s, u in _SHORT_UNITS if ref >= s), (1.0, "ns"))
    return f"{ns / scale:,.{_decimals(step, scale)}f} {unit}"


def axis_ticks(t0: int, t1: int, origin: int, width: int, spacing: int = 110
               ) -> tuple[str, list[tuple[int, str]]]:
    """Ticks of the time axis over ``[t0, t1]`` (ns, absolute) about every ``spacing``
    px: ``(base, [(t, label)])``. Labels are relative to ``origin`` in one unit; deep in
    a long trace (offsets that would need many digits) ``base`` is the first tick's
    time and the labels are short offsets from it ('+20 µs'); else ``base`` is ''."""
    span = max(t1 - t0, 1)
    step = nice_step(span * spacing / max(width, 1))
    first = -(-(t0 - origin) // step) * step + origin
    times = list(range(int(first), int(t1) + 1, step))[:200]
    rel_max = max(abs(t1 - origin), abs(t0 - origin), 1)
    if rel_max / step < 10 ** BASE_DIGITS or not times:
        return "", [(t, fmt_offset(t - origin, step, rel_max)) for t in times]
    base = times[0]
    last = max(times[-1] - base, step)
    labels = [(t, "+" + fmt_offset(t - base, step, last) if t > base else "+0")
              for t in times]
    return fmt_offset(base - origin, step), labels
