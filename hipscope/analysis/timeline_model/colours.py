"""Colour keys of the timeline's events (name, duration, queue delay, kernel class,
delta) and each row's binned key pyramid; colours themselves are the view's business."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from ...model import Trace
from ...model.progress import Cancelled
from ..kernel_class import CLASSES, COPY, class_codes
from .events import EVENT_TABLES, MAX_BINS, NO_KEY, Events, busy_until
from .rows import TimelineModel, int_column

_I64 = np.int64


def name_key(name: str) -> int:
    """Stable colour key of a name (the same across runs and machines)."""
    return zlib.crc32(name.encode("utf-8", "replace")) & 0xFFF


HASH_KEYS = 4096          # keys 0..4095: hashed names
DISTINCT_MAX = 9          # up to this many kernel names get keys HASH_KEYS + rank: the
                          # view's categorical colours, as far apart as colours go


def kernel_name_keys(names: list[str]) -> np.ndarray:
    """Colour keys of the kernel names: with few names, one distinct colour each (by
    the names' sorted order, so equal name sets colour alike in every run); else the
    stable hash of each name."""
    real = sorted({n for n in names if n})
    if 0 < len(real) <= DISTINCT_MAX:
        rank = {n: i for i, n in enumerate(real)}
        return np.array([HASH_KEYS + rank[n] if n in rank else name_key(n) for n in names],
                        np.uint16)
    return np.array([name_key(n) for n in names], np.uint16)


@dataclass(frozen=True)
class ColorScale:
    mode: str
    lo_ns: float = 1.0          # key 0 ..
    hi_ns: float = 1.0          # .. key 255 (log scale)
    top_names: tuple[tuple[str, int], ...] = ()   # (name, key) for the legend


def _log_keys(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    v = np.log(np.maximum(values, 1).astype(np.float64))
    f = (v - np.log(lo)) / max(np.log(hi) - np.log(lo), 1e-9)
    return np.clip(np.round(f * 255), 0, 255).astype(np.uint16)


def color_scale(trace: Trace, model: TimelineModel, mode: str,
                values: np.ndarray | None = None) -> ColorScale:
    """The scale of a colour mode. "delta" (fed by ``values``: per kernel row, its
    duration over the matched kernel's in another run) is symmetric in log space:
    ``lo_ns``/``hi_ns`` hold the ratios drawn fully green / fully red."""
    k = trace.kernels
    if mode == "delta":
        v = np.asarray(values, dtype=np.float64) if values is not None else np.zeros(0)
        lr = np.abs(np.log(v[np.isfinite(v) & (v > 0)]))
        hi = float(np.exp(np.clip(np.quantile(lr, 0.98), np.log(1.1), np.log(4.0)))
                   ) if len(lr) else 2.0
        return ColorScale(mode, 1.0 / hi, hi)
    if mode == "duration":
        d = (int_column(k, "end", 0) - int_column(k, "start", 0)) if len(k) else np.ones(1, _I64)
        lo, hi = np.quantile(np.maximum(d, 1), (0.01, 0.99)) if len(d) else (1, 2)
        return ColorScale(mode, float(lo), float(max(hi, lo * 2)))
    if mode == "queue_delay":
        qd = _queue_delay(trace)
        ok = qd[qd >= 0] if qd is not None else np.zeros(0)
        lo, hi = np.quantile(np.maximum(ok, 1), (0.01, 0.99)) if len(ok) else (1e3, 1e6)
        return ColorScale(mode, float(lo), float(max(hi, lo * 2)))
    if mode == "class":
        return ColorScale(mode, top_names=_class_legend(trace, model))
    top: list[tuple[str, int]] = []
    if len(k):
        codes, names = model.codes["kernels"], model.names["kernels"]
        dur = int_column(k, "end", 0) - int_column(k, "start", 0)
        tot = np.bincount(codes[codes >= 0], weights=dur[codes >= 0], minlength=len(names))
        keys = kernel_name_keys(names)
        for c in np.argsort(-tot)[:8]:
            if tot[c] > 0:
                top.append((names[c], int(keys[c])))
    return ColorScale(mode, top_names=tuple(top))


def name_luts(model: TimelineModel) -> dict[str, np.ndarray]:
    """Colour keys of the "name" mode per name code, per event table (the last entry
    is for events without a name)."""
    return {t: np.r_[kernel_name_keys(model.names[t]) if t == "kernels" else
                     np.array([name_key(n) for n in model.names[t]], np.uint16),
                     np.uint16(NO_KEY)].astype(np.uint16)
            for t in EVENT_TABLES}


def class_luts(model: TimelineModel) -> dict[str, np.ndarray]:
    """Colour keys of the "class" mode per name code (index into CLASSES; the last
    entry is for events without a name): kernels by their class, copies all
    copy/memset; host events have no key (drawn neutral, so the GPU work stands out)."""
    kernels = np.r_[class_codes(model.names["kernels"]).astype(np.uint16),
                    np.uint16(CLASSES.index("other"))]
    copies = np.full(len(model.names["copies"]) + 1, CLASSES.index(COPY), np.uint16)
    return {"kernels": kernels, "copies": copies}


def _class_legend(trace: Trace, model: TimelineModel) -> tuple[tuple[str, int], ...]:
    """The classes present, by GPU time (largest first): (class, key)."""
    tot = np.zeros(len(CLASSES))
    luts = class_luts(model)
    for t in ("kernels", "copies"):
        tab, codes = getattr(trace, t), model.codes[t]
        if len(tab):
            dur = int_column(tab, "end", 0) - int_column(tab, "start", 0)
            cls = luts[t][np.where(codes >= 0, codes, len(luts[t]) - 1)]
            tot += np.bincount(cls, weights=dur, minlength=len(CLASSES))
    return tuple((CLASSES[i], int(i)) for i in np.argsort(-tot, kind="stable") if tot[i] > 0)


def _queue_delay(trace: Trace) -> np.ndarray | None:
    k, a = trace.kernels, trace.api
    if not k.has("api_index") or len(a) == 0:
        return None
    ai = int_column(k, "api_index")
    ok = (ai >= 0) & (ai < len(a))
    out = np.full(len(k), -1, dtype=_I64)
    out[ok] = np.maximum(int_column(k, "start", 0)[ok] - int_column(a, "end", 0)[ai[ok]], 0)
    return out


def _delta_keys(values: np.ndarray, scale: ColorScale) -> np.ndarray:
    """Ratios -> keys 0..255 (128: equal; log scale from lo_ns to hi_ns); NaN: NO_KEY."""
    ok = np.isfinite(values) & (values > 0)
    f = np.log(np.where(ok, values, 1.0)) / np.log(max(scale.hi_ns, 1.0001))
    keys = np.clip(np.round(127.5 + 127.5 * f), 0, 255)
    return np.where(ok, keys, NO_KEY).astype(np.uint16)


def color_keys(trace: Trace, model: TimelineModel, scale: ColorScale, cancelled=None,
               values: np.ndarray | None = None
               ) -> dict[int, tuple[np.ndarray, np.ndarray, int, int]]:
    """Per track: (keys uint16, colour bins, bin busy, bin_t0, bin_span). Apply with
    :func:`apply_color_keys` on the thread that owns the model. ``values``: per kernel
    row, for the "delta" mode."""
    qd = _queue_delay(trace) if scale.mode == "queue_delay" else None
    dv = None
    if scale.mode == "delta" and values is not None and len(values) == len(trace.kernels):
        dv = np.asarray(values, dtype=np.float64)
    lut = class_luts(model) if scale.mode == "class" else name_luts(model)
    out = {}
    for i in model.tracks():
        if cancelled is not None and cancelled():
            raise Cancelled()
        r = model.rows[i]
        ev = r.events
        assert ev is not None                     # a track
        if scale.mode == "duration":
            keys = _log_keys(ev.end - ev.start, scale.lo_ns, scale.hi_ns)
        elif scale.mode == "queue_delay" and r.table in ("kernels",) and qd is not None:
            d = qd[ev.index]
            keys = np.where(d >= 0, _log_keys(d, scale.lo_ns, scale.hi_ns), NO_KEY
                            ).astype(np.uint16)
        elif scale.mode == "queue_delay":
            keys = np.full(len(ev), NO_KEY, np.uint16)
        elif scale.mode == "delta":
            keys = (_delta_keys(dv[ev.index], scale) if dv is not None and r.table == "kernels"
                    else np.full(len(ev), NO_KEY, np.uint16))
        elif r.table not in lut:          # telemetry samples: drawn by value, not name
            keys = np.full(len(ev), NO_KEY, np.uint16)
        else:
            c = model.codes[r.table][ev.index]
            keys = lut[r.table][np.where(c >= 0, c, len(lut[r.table]) - 1)]
        out[i] = (keys, *key_bins(ev, keys))
    return out


def key_bins(ev: Events, keys: np.ndarray):
    """The row's pyramid level: per time bin the longest event starting in it
    (encoded duration << 16 | key) and the busy time before each bin edge."""
    n = len(ev)
    if n == 0:
        return np.zeros(1, _I64), None, 0, 1
    nb = int(min(MAX_BINS, 1 << max(int(np.log2(max(n // 4, 1))), 4)))
    t0 = int(ev.start[0])
    span = int(ev.end.max()) - t0 + 1
    b = ((ev.start - t0) * nb) // span
    enc = ((ev.end - ev.start + 1) << 16) | keys
    counts = np.bincount(b, minlength=nb)
    bounds = np.cumsum(counts) - counts
    red = np.maximum.reduceat(enc, np.minimum(bounds, n - 1))
    red[counts == 0] = 0
    edges = _I64(t0) + (np.arange(nb + 1, dtype=_I64) * span) // nb
    return red, busy_until(ev, edges), t0, span


def apply_color_keys(model: TimelineModel, keys: dict) -> None:
    for i, (k, bins, busy, t0, span) in keys.items():
        ev = model.rows[i].events
        ev.keys, ev.bins, ev.bin_busy, ev.bin_t0, ev.bin_span = k, bins, busy, t0, span

