"""Painting of the timeline from one :class:`~.frame_state.FrameState`: tracks image,
labels, overlays (selection, launch arrows, find outlines, ruler), label column, axis,
legend. The painters read the frame state only, never the view."""

from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QLinearGradient, QPainter, QPen, QPixmap

from ...analysis.timeline_model.names import readable_labels
from ...analysis.timeline_model.ruler import axis_ticks
from ...model.units import fmt_duration
from . import palette as pal
from . import render as rd
from .flows import FLOW_COLOURS
from .frame_state import FrameState
from .layout import sticky_rows as layout_sticky_rows
from .render import AXIS_H, LEGEND_H, SCROLL_W

AREA_FILL = (255, 170, 60, 55)      # an area pick's rows (RGBA; reads on both canvases)
AREA_EDGE = (255, 150, 40, 230)


def paint_frame(p: QPainter, fs: FrameState) -> rd.FrameStats:
    """Paint the whole view with ``p`` (widget, image, SVG) from ``fs``."""
    t_start = time.perf_counter()
    stats = rd.FrameStats()
    w, h = fs.w, fs.h
    p.fillRect(0, 0, w, h, rd.qcolor(pal.BG))
    if not fs.has_trace or (fs.model is None and not fs.preparing):
        _paint_message(p, fs, "Open a trace…", "File ▸ Open (Ctrl+O), or drop a trace file here")
        return stats
    if fs.model is None:
        _paint_message(p, fs, "Preparing timeline…", f"{fs.n_kernels:,} kernels")
        return stats
    tw, th = fs.tw, fs.th
    t0, t1 = fs.window
    frame = rd.Frame(fs.model, t0, t1, tw)
    labels = rd.paint_tracks(p, fs, frame, fs.label_w, AXIS_H, tw, th, stats)
    p.save()
    p.setClipRect(fs.label_w, AXIS_H, tw, th)
    rd.paint_labels(p, fs, labels, fs.label_w, AXIS_H, stats)
    for k, _row in enumerate(sticky_rows(fs)):       # sticky group headers' bands
        p.fillRect(QRectF(fs.label_w, AXIS_H + k * rd.ROW_H["group"], tw, rd.ROW_H["group"]),
                   rd.qcolor(pal.GROUP_BG))
    _paint_find_outlines(p, fs, stats)
    _paint_selection(p, fs)
    _paint_ruler_band(p, fs)
    _paint_area(p, fs)
    _paint_origin(p, fs)
    p.restore()
    _paint_label_column(p, fs)
    _paint_axis(p, fs, stats)
    _paint_legend(p, fs)
    _paint_ruler_box(p, fs)
    stats.ms = (time.perf_counter() - t_start) * 1e3
    return stats


def _paint_message(p: QPainter, fs: FrameState, title: str, sub: str) -> None:
    w, h = fs.w, fs.h
    p.setPen(rd.qcolor(pal.TEXT))
    f = QFont(fs.message_font)
    f.setPointSizeF(15)
    p.setFont(f)
    p.drawText(QRectF(0, 0, w, h / 2 + 10), Qt.AlignmentFlag.AlignHCenter |
               Qt.AlignmentFlag.AlignBottom, title)
    p.setPen(rd.qcolor(pal.TEXT_DIM))
    p.setFont(fs.fonts.normal)
    p.drawText(QRectF(0, h / 2 + 18, w, 30), Qt.AlignmentFlag.AlignHCenter, sub)

def _paint_find_outlines(p: QPainter, fs: FrameState, stats: rd.FrameStats) -> None:
    if fs.found is None:
        return
    p.setPen(QPen(rd.qcolor(pal.HIGHLIGHT), 1.5))
    p.setBrush(Qt.BrushStyle.NoBrush)
    for row, (x0, x1, pos) in stats.wide.items():
        r = fs.model.rows[row]
        mask = fs.found.masks.get(r.table)
        ry = fs.row_y(row)
        if mask is None or ry is None:
            continue
        hit = np.flatnonzero(mask[r.events.index[pos]])
        for j in hit[:2000].tolist():
            p.drawRect(QRectF(fs.label_w + x0[j] + .5, ry[0] + 1.5, x1[j] - x0[j] - 1,
                              ry[1] - 4))


def _paint_selection(p: QPainter, fs: FrameState) -> None:
    if fs.selection_box is not None:
        x0, x1, ym, hh = fs.selection_box
        x1 = max(x1, x0 + 2)
        p.setPen(QPen(rd.qcolor(pal.SELECT), 2))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(QRectF(x0 - 1, ym - hh / 2 + 1, x1 - x0 + 2, hh - 2))
    for x0, y0, x1, y1, kind in fs.arrows:        # flows.py: launch, op, wait
        rd.draw_arrow(p, x0, y0, x1, y1, QColor(*FLOW_COLOURS[kind]))


def _paint_origin(p: QPainter, fs: FrameState) -> None:
    """A dashed line at the alignment origin (set by a comparison)."""
    if fs.axis_origin is None:
        return
    x = fs.x_of(fs.axis_origin)
    p.setPen(QPen(QColor(255, 213, 79, 170), 1, Qt.PenStyle.DashLine))
    p.drawLine(QPointF(x, AXIS_H), QPointF(x, AXIS_H + fs.th))


def _paint_ruler_band(p: QPainter, fs: FrameState) -> None:
    if fs.ruler is None:
        return
    th = fs.th
    a, b = sorted(fs.ruler)
    xa, xb = fs.x_of(a), fs.x_of(b)
    p.fillRect(QRectF(xa, AXIS_H, max(xb - xa, 1), th), QColor(120, 170, 255, 40))
    p.setPen(QPen(QColor(120, 170, 255, 200), 1))
    p.drawLine(QPointF(xa, AXIS_H), QPointF(xa, AXIS_H + th))
    p.drawLine(QPointF(xb, AXIS_H), QPointF(xb, AXIS_H + th))


def _paint_area(p: QPainter, fs: FrameState) -> None:
    """An area pick: its time range shaded on each picked row, outlined as one box."""
    if fs.area_box is None:
        return
    a, b, rows = fs.area_box
    xa, xb = fs.x_of(a), fs.x_of(b)
    ys = [ry for ry in (fs.row_y(r) for r in rows) if ry is not None]
    if not ys:
        return
    for y, h in ys:
        p.fillRect(QRectF(xa, y, max(xb - xa, 1), h), QColor(*AREA_FILL))
    top, bottom = min(y for y, _h in ys), max(y + h for y, h in ys)
    p.setPen(QPen(QColor(*AREA_EDGE), 1.5))
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawRect(QRectF(xa, top, max(xb - xa, 1), bottom - top))


def _ruler_lines(fs: FrameState) -> list[str]:
    """The ruler box's text: the span, then the measured figures (or "measuring…")."""
    a, b = sorted(fs.ruler)
    lines = [f"Δ {fmt_duration(b - a)}"]
    st = fs.ruler_stats
    if st and st.get("pending"):
        lines.append("measuring…")
    elif st:
        lines.append(f"{st['kernels']:,} kernels")
        names = st.get("device_names", {})
        for d, f in sorted(st["busy"].items(), key=lambda kv: (kv[0] is None, kv[0])):
            lines.append(f"GPU {d}: {100 * f:.1f} % busy" if d is not None and d >= 0
                         else f"{names.get(d, 'GPU ?')}: {100 * f:.1f} % busy")
    return lines


def _paint_ruler_box(p: QPainter, fs: FrameState) -> None:
    if fs.ruler is None:
        return
    lines = _ruler_lines(fs)
    b = max(fs.ruler)
    p.setFont(fs.fonts.small)
    fm = fs.fonts.small_metrics
    bw = max(fm.horizontalAdvance(s) for s in lines) + 12
    bh = fm.height() * len(lines) + 8
    x = min(max(fs.x_of(b) + 6, fs.label_w + 4), fs.label_w + fs.tw - bw - 4)
    rect = QRectF(x, AXIS_H + 4, bw, bh)
    p.fillRect(rect, QColor(20, 24, 32, 230))
    p.setPen(QColor(120, 170, 255))
    p.drawRect(rect)
    p.setPen(rd.qcolor(pal.TEXT))
    for i, s in enumerate(lines):
        p.drawText(QPointF(x + 6, AXIS_H + 4 + fm.ascent() + 4 + i * fm.height()), s)


def _paint_label_column(p: QPainter, fs: FrameState) -> None:
    """Row labels; cached as a pixmap while rows, scroll and height stay."""
    th = fs.th
    if p.device() is not fs.device:
        _draw_label_column(p, fs, AXIS_H)        # images, SVG: draw directly
        return
    dpr = fs.dpr
    key = (id(fs.layout), fs.scroll, th, dpr, fs.layout.total, fs.label_w)
    cache = fs.cache
    if cache.label_pixmap is None or cache.label_pixmap[0] != key:
        pm = QPixmap(int(fs.label_w * dpr), int(th * dpr))
        pm.setDevicePixelRatio(dpr)
        q = QPainter(pm)
        try:
            _draw_label_column(q, fs, 0)
        finally:
            q.end()
        cache.label_pixmap = (key, pm)
    p.drawPixmap(0, AXIS_H, cache.label_pixmap[1])


def _draw_label_column(p: QPainter, fs: FrameState, oy: int) -> None:
    th = fs.th
    p.fillRect(0, oy, fs.label_w, th, rd.qcolor(pal.LABEL_BG))
    p.save()
    p.setClipRect(0, oy, fs.label_w, th)
    lay = fs.layout
    first = max(int(np.searchsorted(lay.y + lay.h, fs.scroll, side="right")), 0)
    for i in range(first, len(lay.rows)):
        y = oy + int(lay.y[i]) - fs.scroll
        if y >= oy + th:
            break
        row = int(lay.rows[i])
        _draw_row_label(p, fs, fs.model.rows[row], y, int(lay.h[i]))
        if row in lay.pinned:                     # pinned: an accent bar on the left
            p.fillRect(0, y + 2, 3, int(lay.h[i]) - 4, rd.qcolor(pal.HIGHLIGHT))
    gh = rd.ROW_H["group"]
    for k, row in enumerate(sticky_rows(fs)):    # the groups scrolled past stay on top
        _draw_row_label(p, fs, fs.model.rows[row], oy + k * gh, gh)
    p.restore()
    p.setPen(rd.qcolor(pal.SEPARATOR))
    p.drawLine(fs.label_w - 1, oy, fs.label_w - 1, oy + th)


def sticky_rows(fs: FrameState) -> list[int]:
    """The groups drawn as sticky headers at the top (see :func:`.layout.sticky_rows`)."""
    return layout_sticky_rows(fs.layout, fs.scroll)


def _draw_row_label(p: QPainter, fs: FrameState, r, y: int, h: int) -> None:
    """One row's label: a fold arrow and bold level-0 names for groups."""
    fonts = fs.fonts
    indent = 8 + 14 * r.level
    if r.kind in ("group", "fold"):              # a fold row: the quiet tracks' stand-in
        if r.kind == "group":
            p.fillRect(0, y, fs.label_w, h, rd.qcolor(pal.GROUP_BG))
        p.setPen(rd.qcolor(pal.TEXT_DIM))
        p.setFont(fonts.normal)
        p.drawText(QRectF(indent - 2, y, 12, h), Qt.AlignmentFlag.AlignCenter,
                   "▸" if r.key in fs.collapsed else "▾")
        p.setFont(fonts.bold if r.level == 0 and r.kind == "group" else fonts.normal)
        p.setPen(rd.qcolor(pal.TEXT if r.kind == "group" else pal.TEXT_DIM))
        indent += 12
    else:
        p.setFont(fonts.normal)
        p.setPen(rd.qcolor(pal.TEXT if r.kind == "track" else pal.TEXT_DIM))
    lw = fs.label_w
    text = fonts.metrics.elidedText(r.label, Qt.TextElideMode.ElideRight, lw - indent - 6)
    p.drawText(QRectF(indent, y, fs.label_w - indent - 4, h),
               Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)
    p.setPen(rd.qcolor(pal.SEPARATOR))
    p.drawLine(0, y + h - 1, fs.label_w, y + h - 1)


def _paint_axis(p: QPainter, fs: FrameState, stats: rd.FrameStats) -> None:
    """Ticks relative to the trace start (or a comparison's origin); deep in a long
    trace a base time box at the left and short '+offset' labels; the window's length
    at the right (the label column holds the track filter)."""
    tw = fs.tw
    p.fillRect(0, 0, fs.label_w + tw + SCROLL_W, AXIS_H, rd.qcolor(pal.LABEL_BG))
    t0, t1 = fs.window
    origin = fs.axis_origin if fs.axis_origin is not None else fs.model.t_min
    p.setFont(fs.fonts.small)
    fm = fs.fonts.small_metrics
    base, ticks = axis_ticks(t0, t1, origin, tw)
    window = f"window {fmt_duration(t1 - t0)}"
    right = fs.label_w + tw - fm.horizontalAdvance(window) - 8
    p.setPen(rd.qcolor(pal.TEXT_DIM))
    p.drawText(QPointF(right + 4, AXIS_H - 11), window)
    p.save()
    p.setClipRect(fs.label_w, 0, tw, AXIS_H)
    last_right, drawn = -1e9, []
    if base:
        text = f"{base} +"
        bw = fm.horizontalAdvance(text) + 10
        p.fillRect(QRectF(fs.label_w + 2, 4, bw, AXIS_H - 10), rd.qcolor(pal.GROUP_BG))
        p.setPen(rd.qcolor(pal.TEXT))
        p.drawText(QPointF(fs.label_w + 7, AXIS_H - 11), text)
        last_right = fs.label_w + 2 + bw
    for t, label in ticks:
        x = fs.x_of(t)
        p.setPen(rd.qcolor(pal.SEPARATOR))
        p.drawLine(QPointF(x, AXIS_H - 8), QPointF(x, AXIS_H))
        lw = fm.horizontalAdvance(label)
        if x + 3 > last_right + 6 and x + 3 + lw <= right:
            p.setPen(rd.qcolor(pal.TEXT_DIM))
            p.drawText(QPointF(x + 3, AXIS_H - 11), label)
            last_right = x + 3 + lw
            drawn.append(label)
    stats.axis = (base, drawn)
    p.restore()
    p.setPen(rd.qcolor(pal.SEPARATOR))
    p.drawLine(0, AXIS_H - 1, fs.label_w + tw + SCROLL_W, AXIS_H - 1)


def _paint_legend(p: QPainter, fs: FrameState) -> None:
    """Colour legend strip; cached as a pixmap per (mode, scale, width)."""
    w, h = fs.w, fs.h
    if p.device() is not fs.device:
        _draw_legend(p, fs, h - LEGEND_H)
        return
    dpr = fs.dpr
    key = (fs.scale, w, dpr)
    cache = fs.cache
    if cache.legend_pixmap is None or cache.legend_pixmap[0] != key:
        pm = QPixmap(int(w * dpr), int(LEGEND_H * dpr))
        pm.setDevicePixelRatio(dpr)
        q = QPainter(pm)
        try:
            _draw_legend(q, fs, 0)
        finally:
            q.end()
        cache.legend_pixmap = (key, pm)
    p.drawPixmap(0, h - LEGEND_H, cache.legend_pixmap[1])


_LEGEND_TITLES = {"name": "Colour by name", "duration": "Colour by duration",
                  "queue_delay": "Colour by queue delay (launch end → start)",
                  "delta": "Colour by time vs. the matched kernel",
                  "class": "Colour by kernel class"}


LEGEND_CHARS = 30          # a legend entry: names cut where they differ


def legend_entries(fonts, scale, w: int) -> list[tuple[float, float, str, str, int]]:
    """The name legend's entries as drawn: (x0, x1, text, full name, colour key);
    the tooltip of the legend strip reads them back."""
    fm = fonts.small_metrics
    x = 8 + fm.horizontalAdvance(_LEGEND_TITLES[scale.mode]) + 14
    names = [n for n, _ in scale.top_names]
    out = []
    for short, (name, key) in zip(readable_labels(names, LEGEND_CHARS), scale.top_names):
        short = fm.elidedText(short, Qt.TextElideMode.ElideMiddle, 200)
        x1 = x + 14 + fm.horizontalAdvance(short)
        if x1 + 2 > w - 8:
            break
        out.append((x, x1, short, name, key))
        x = x1 + 14
    return out


def _draw_legend(p: QPainter, fs: FrameState, y: int) -> None:
    w = fs.w
    p.fillRect(0, y, w, LEGEND_H, rd.qcolor(pal.LABEL_BG))
    p.setFont(fs.fonts.small)
    fm = fs.fonts.small_metrics
    mode = fs.scale.mode
    title = _LEGEND_TITLES[mode]
    p.setPen(rd.qcolor(pal.TEXT_DIM))
    x = 8
    p.drawText(QPointF(x, y + 15), title)
    x += fm.horizontalAdvance(title) + 14
    if mode in ("name", "class"):
        for x0, _x1, short, _name, key in legend_entries(fs.fonts, fs.scale, w):
            p.fillRect(QRectF(x0, y + 6, 10, 10), rd.qcolor(fs.palette.rgb[key]))
            p.setPen(rd.qcolor(pal.TEXT))
            p.drawText(QPointF(x0 + 14, y + 15), short)
    elif mode == "delta":
        _draw_delta_legend(p, fs, x, y)
    else:
        _draw_ramp_legend(p, fs, x, y)


def _draw_ramp_legend(p: QPainter, fs: FrameState, x: float, y: int) -> None:
    """Duration and queue-delay modes: the log-scale ramp from lo to hi."""
    fm = fs.fonts.small_metrics
    lo_s, hi_s = fmt_duration(fs.scale.lo_ns), fmt_duration(fs.scale.hi_ns)
    p.setPen(rd.qcolor(pal.TEXT))
    p.drawText(QPointF(x, y + 15), f"≤ {lo_s}")
    x += fm.horizontalAdvance(f"≤ {lo_s}") + 6
    g = QLinearGradient(x, 0, x + 160, 0)
    for i in range(9):
        g.setColorAt(i / 8, rd.qcolor(pal.ramp_rgb(np.array([i / 8]))[0]))
    p.fillRect(QRectF(x, y + 6, 160, 10), g)
    x += 166
    p.drawText(QPointF(x, y + 15), f"≥ {hi_s}  (log scale)")
    if fs.scale.mode == "queue_delay":
        x += fm.horizontalAdvance(f"≥ {hi_s}  (log scale)") + 14
        p.fillRect(QRectF(x, y + 6, 10, 10), rd.qcolor(pal.NEUTRAL))
        p.drawText(QPointF(x + 14, y + 15), "no launch link")


def _draw_delta_legend(p: QPainter, fs: FrameState, x: float, y: int) -> None:
    fm = fs.fonts.small_metrics
    lo = f"{fs.scale.hi_ns:.2f}× faster"
    hi = f"{fs.scale.hi_ns:.2f}× slower"
    p.setPen(rd.qcolor(pal.TEXT))
    p.drawText(QPointF(x, y + 15), lo)
    x += fm.horizontalAdvance(lo) + 6
    g = QLinearGradient(x, 0, x + 160, 0)
    for i in range(9):
        g.setColorAt(i / 8, rd.qcolor(pal.delta_rgb(np.array([i / 8]))[0]))
    p.fillRect(QRectF(x, y + 6, 160, 10), g)
    x += 166
    p.drawText(QPointF(x, y + 15), hi)
    x += fm.horizontalAdvance(hi) + 14
    p.fillRect(QRectF(x, y + 6, 10, 10), rd.qcolor(pal.DELTA_NEUTRAL))
    p.drawText(QPointF(x + 14, y + 15), "no matched kernel (or not a kernel)")
