"""Frame rendering of the timeline: prepared numpy geometry -> one image + a few
bounded QPainter calls.

Per visible row the frame asks :mod:`hipscope.analysis.lod` for the pixel columns
(coverage and colour key per column, exact rectangles for events a few pixels
wide) and writes them into one ``uint32`` image of the track area, which Qt draws
with a single ``drawImage``. Python loops here run per row, per tick or per
labelled wide rectangle (bounded by pixels), never per event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import (QColor, QFont, QFontMetrics, QImage, QPainter, QPainterPath, QPen,
                           QStaticText, QTransform)

from ...analysis import lod
from ...analysis.timeline_model.ruler import axis_ticks
from . import palette as pal
from .find_ctl import dim_non_matches
from .layout import LABEL_W, ROW_H, Layout, TrackOptions  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from .frame_state import FrameState

# LABEL_W: the label column's default width (in .layout; the view's own: FrameState)
AXIS_H = 30              # time axis + ruler strip
LEGEND_H = 22            # colour legend strip
SCROLL_W = 12            # vertical scroll bar
MIN_WIDE_PX = 3.0        # events at least this wide are drawn exactly
MIN_LABEL_PX = 28        # ... and labelled from this width on


def qcolor(rgb) -> QColor:
    return QColor(int(rgb[0]), int(rgb[1]), int(rgb[2]))


@dataclass
class FrameStats:
    """What the last frame drew (benchmarks and tests check it really painted)."""

    rows: int = 0
    density_columns: int = 0
    rects: int = 0
    labels: int = 0
    ms: float = 0.0
    axis: tuple[str, list[str]] = ("", [])     # base time and the tick labels drawn
    wide: dict[int, tuple] = field(default_factory=dict, repr=False)  # row -> (x0, x1, pos)


# ----------------------------------------------------------------------------- axis
def ticks(t0: int, t1: int, origin: int, width: int, spacing: int = 110):
    """Tick times (absolute ns) and labels relative to ``origin`` (see
    :func:`hipscope.analysis.timeline_model.ruler.axis_ticks`, which also gives the
    base time of deep zooms)."""
    return axis_ticks(t0, t1, origin, width, spacing)[1]


# ----------------------------------------------------------------------------- rows
def _coverage(frame, row: int):
    """Coverage and keys of one row for this frame (cached per frame)."""
    got = frame.cache.get(row)
    if got is None:
        r = frame.model.rows[row]
        if r.events is not None:
            ev = r.events
            lo, hi = lod.window(ev, frame.t0, frame.t1)
            cov = lod.coverage(ev, frame.edges, frame.widths)
            keys = lod.pixel_keys(ev, lo, hi, frame.edges, cov)
            got = (cov, keys, lo, hi)
        else:
            kids = r.members if r.kind == "fold" else r.children
            covs = [_coverage(frame, c) for c in kids]
            if covs:
                stack = np.vstack([c[0] for c in covs])
                best = np.argmax(stack, axis=0)
                cov = stack[best, np.arange(stack.shape[1])]
                keys = np.vstack([c[1] for c in covs])[best, np.arange(stack.shape[1])]
            else:
                cov = np.zeros(frame.w)
                keys = np.full(frame.w, -1, np.int64)
            got = (cov, keys, 0, 0)
        frame.cache[row] = got
    return got


class Frame:
    """One frame's shared inputs (window, pixel edges, per-row coverage cache)."""

    def __init__(self, model, t0: int, t1: int, w: int):
        self.model, self.t0, self.t1, self.w = model, int(t0), int(t1), int(w)
        self.edges = lod.pixel_edges(t0, t1, w)
        self.widths = np.maximum(np.diff(self.edges), 1)
        self.nspp = (t1 - t0) / max(w, 1)
        self.cache: dict[int, tuple] = {}

    def x_of(self, t: np.ndarray) -> np.ndarray:
        return (np.asarray(t, dtype=np.int64) - self.t0) / self.nspp


def row_columns(frame: Frame, row: int, palette: pal.Palette, rowbg: int,
                collapsed: bool, matches: np.ndarray | None, stats: FrameStats):
    """Pixel colours (uint32, one per column) of a row, its wide rects and the
    columns holding find matches."""
    r = frame.model.rows[row]
    cov, keys, lo, hi = _coverage(frame, row)
    cols = palette.columns(cov, keys)
    stats.density_columns += int(np.count_nonzero(cov > 0))
    wide = None
    if r.events is not None and r.kind == "track":
        ev = r.events
        pos = lod.wide_events(ev, lo, hi, MIN_WIDE_PX * frame.nspp)
        if len(pos):
            x0 = np.minimum(np.maximum(np.floor(frame.x_of(ev.start[pos])), 0),
                            frame.w).astype(np.int64)
            x1 = np.minimum(np.maximum(np.ceil(frame.x_of(ev.end[pos])), 0),
                            frame.w).astype(np.int64)
            keep = x1 > x0
            pos, x0, x1 = pos[keep], x0[keep], x1[keep]
            k = ev.keys[pos] if ev.keys is not None else np.full(len(pos), lod.NO_KEY)
            colour = palette.solid[palette.index(k)]
            n = x1 - x0
            idx = np.repeat(np.arange(len(pos)), n)
            px = x0[idx] + np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
            cols[px] = colour[idx]
            gap = x1[n >= 4] - 1
            cols[gap] = rowbg
            wide = (x0, x1, pos)
            stats.rects += len(pos)
    mcols = None
    if matches is not None and len(matches):
        c = np.searchsorted(matches, frame.edges)
        mcols = np.diff(c) > 0
    return cols, wide, mcols


def counter_column_heights(frame: Frame, row: int, height: int) -> np.ndarray:
    r = frame.model.rows[row]
    ev = r.events
    cov, _, lo, hi = _coverage(frame, row)
    vals = lod.counter_pixels(ev, lo, hi, frame.edges, cov)
    vmax = getattr(ev, "_vmax", None)
    if vmax is None:
        fin = ev.value[np.isfinite(ev.value)] if ev.value is not None else np.zeros(0)
        vmax = float(fin.max()) if len(fin) and fin.max() > 0 else 1.0
        ev._vmax = vmax
    hgt = np.where(np.isfinite(vals), np.clip(vals / vmax, 0, 1) * (height - 4), 0)
    return np.ceil(hgt).astype(np.int64)


# ----------------------------------------------------------------------------- image
_STRIP = pal.pack(np.array(pal.GROUP_BG, float)[None, :]
                  + (np.array((0x6F, 0xA8, 0xDC), float) - np.array(pal.GROUP_BG, float))[None, :]
                  * np.r_[0, 0.3 + 0.6 * np.arange(1, 16) / 15][:, None])


def _band(img: np.ndarray, y0: int, rh: int, h: int, fill, body=None, pad: int = 2,
          sep: int | None = None) -> None:
    """Write one row band: ``pad`` rows of ``fill``, the ``body`` columns (or fill),
    ``pad - 1`` rows of fill, then a separator line; clipped to the image."""
    def put(a, b, v):
        a, b = max(a, 0), min(b, h)
        if b > a:
            img[a:b] = v
    put(y0, y0 + pad, fill)
    put(y0 + pad, y0 + rh - pad, fill if body is None else body)
    put(y0 + rh - pad, y0 + rh - 1, fill)
    put(y0 + rh - 1, y0 + rh, fill if sep is None else sep)


def paint_tracks(p: QPainter, fs: FrameState, frame: Frame, x: int, y: int, w: int, h: int,
                 stats: FrameStats) -> list:
    """Draw the track area image from the frame state ``fs``; return the label
    requests of wide rectangles."""
    img = np.empty((h, w), dtype=np.uint32)
    bg = pal.packed(pal.BG)
    group_bg = pal.packed(pal.GROUP_BG)
    sep = pal.packed(pal.SEPARATOR)
    lay: Layout = fs.layout
    model = frame.model
    palette = fs.palette
    labels = []
    first = max(int(np.searchsorted(lay.y + lay.h, fs.scroll, side="right")), 0)
    bottom = 0
    for p_i in range(first, len(lay.rows)):
        y0 = int(lay.y[p_i]) - fs.scroll
        if y0 >= h:
            break
        row = int(lay.rows[p_i])
        r = model.rows[row]
        rh = int(lay.h[p_i])
        bottom = y0 + rh
        stats.rows += 1
        if r.kind == "counter":
            hgt = counter_column_heights(frame, row, rh)
            yy = np.arange(rh)[:, None] >= (rh - 2 - hgt)[None, :]
            yy &= (np.arange(rh)[:, None] < rh - 2)
            band = np.where(yy, np.uint32(pal.packed((0x4D, 0xB6, 0xAC))), np.uint32(bg))
            band[-1] = sep
            a, b = max(y0, 0), min(y0 + rh, h)
            img[a:b] = band[a - y0:b - y0]
            continue
        is_collapsed = r.kind == "group" and r.key in fs.collapsed
        if r.kind == "group" and not is_collapsed:
            cov, _, _, _ = _coverage(frame, row)      # a thin busy strip on the header
            lvl = np.ceil(cov * (len(_STRIP) - 1)).astype(np.intp)
            strip = _STRIP[np.minimum(lvl, len(_STRIP) - 1, out=lvl)]
            _band(img, y0, rh, h, group_bg, strip, pad=rh - 5, sep=sep)
            continue
        cols, wide, mcols = row_columns(frame, row, palette, bg, is_collapsed,
                                        fs.find_starts.get(row), stats)
        if fs.found is not None and len(fs.found):     # find: dim what does not match
            dim_non_matches(cols, bg, mcols, wide, fs.found.masks.get(r.table),
                            None if r.events is None else r.events.index)
        _band(img, y0, rh, h, bg, cols, sep=sep)
        if mcols is not None and mcols.any():
            ha, hb = max(y0 + rh - 4, 0), min(y0 + rh - 1, h)
            if hb > ha:
                img[ha:hb, mcols] = pal.packed(pal.HIGHLIGHT)
        if wide is not None:
            stats.wide[row] = wide
            x0, x1, pos = wide
            # a label ends where the next rectangle begins (nested/overlapping events)
            room = np.minimum(x1, np.append(x0[1:], frame.w))
            big = np.flatnonzero((room - x0) >= MIN_LABEL_PX)
            if len(big):
                labels.append((row, y0, rh, x0[big], room[big], pos[big]))
    if bottom < h:
        img[max(bottom, 0):] = bg
    qimg = QImage(img.data, w, h, w * 4, QImage.Format.Format_ARGB32_Premultiplied)
    p.drawImage(x, y, qimg)
    fs.cache.last_image = img         # keep the buffer alive while Qt may read it
    return labels


def paint_labels(p: QPainter, fs: FrameState, labels, x: int, y: int, stats: FrameStats) -> None:
    """Names on wide rectangles: elided static texts, cached per (name, width)."""
    model = fs.model
    fm = fs.fonts.small_metrics
    small_font = fs.fonts.small
    p.setFont(small_font)
    dark, light = QColor(20, 20, 24), QColor(245, 245, 245)
    cache = fs.cache.elided
    if len(cache) > 20_000:
        cache.clear()
    th = fm.height()
    for row, y0, rh, x0s, x1s, poss in labels:
        r = model.rows[row]
        ev = r.events
        codes = model.codes[r.table][ev.index[poss]]
        keys = ev.keys[poss] if ev.keys is not None else np.full(len(poss), lod.NO_KEY)
        dark_text = fs.palette.dark_text[fs.palette.index(keys)]
        names = model.labels[r.table]
        ty = y + y0 + (rh - th) / 2
        pen = None
        for x0, x1, code, dk in zip(x0s.tolist(), x1s.tolist(), codes.tolist(),
                                    dark_text.tolist()):
            wpx = ((x1 - x0 - 6) >> 2) << 2
            ck = (r.table, code, wpx)
            st = cache.get(ck)
            if st is None:
                full = names[code] if 0 <= code < len(names) else "?"
                text = fm.elidedText(full, Qt.TextElideMode.ElideMiddle, wpx)
                st = QStaticText(text) if text else False
                if st:
                    st.setTextFormat(Qt.TextFormat.PlainText)
                    st.prepare(QTransform(), small_font)
                cache[ck] = st
            if not st:
                continue
            if pen is not dk:
                p.setPen(dark if dk else light)
                pen = dk
            p.drawStaticText(QPointF(x + x0 + 3, ty), st)
            stats.labels += 1


def draw_arrow(p: QPainter, x0: float, y0: float, x1: float, y1: float,
               colour: QColor) -> None:
    path = QPainterPath(QPointF(x0, y0))
    dx = max(abs(x1 - x0) * 0.5, 20)
    path.cubicTo(QPointF(x0 + dx, y0), QPointF(x1 - dx, y1), QPointF(x1, y1))
    p.setPen(QPen(colour, 1.6))
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawPath(path)
    head = QPainterPath(QPointF(x1, y1))
    head.lineTo(QPointF(x1 - 8, y1 - 4))
    head.lineTo(QPointF(x1 - 8, y1 + 4))
    head.closeSubpath()
    p.setBrush(colour)
    p.drawPath(head)
    p.setBrush(Qt.BrushStyle.NoBrush)


def make_fonts():
    f = QFont()
    f.setPointSizeF(8.5)
    small = QFont(f)
    small.setPointSizeF(8.0)
    bold = QFont(f)
    bold.setBold(True)
    return f, small, bold, QFontMetrics(f), QFontMetrics(small)
