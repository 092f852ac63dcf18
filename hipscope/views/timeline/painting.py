"""Painting of the TimelineView (a mixin): tracks image, labels, overlays (selection,
launch arrows, find outlines, ruler), label column, axis, legend, exports."""

from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QImage, QLinearGradient, QPainter, QPen, QPixmap

from ...analysis import lod
from ...model.units import fmt_duration
from . import palette as pal
from . import render as rd
from .render import AXIS_H, LABEL_W, LEGEND_H, SCROLL_W


class PaintingMixin:
    """Everything :class:`TimelineView` draws; reads the view's state only."""

    def render_to(self, p: QPainter, w: int, h: int) -> rd.FrameStats:
        """Paint the whole view with ``p`` at size ``w`` x ``h`` (widget, image, SVG)."""
        t_start = time.perf_counter()
        self.stats = stats = rd.FrameStats()
        p.fillRect(0, 0, w, h, rd.qcolor(pal.BG))
        if self.document.trace is None or (self.model is None and not self.preparing):
            self._paint_message(p, w, h, "Open a trace…",
                                "File ▸ Open (Ctrl+O), or drop a trace file here")
            return stats
        if self.model is None:
            self._paint_message(p, w, h, "Preparing timeline…",
                                f"{len(self.document.trace.kernels):,} kernels")
            return stats
        tw, th = max(w - LABEL_W - SCROLL_W, 1), max(h - AXIS_H - LEGEND_H, 1)
        t0, t1 = self.document.view_state.window
        frame = rd.Frame(self.model, t0, t1, tw)
        labels = rd.paint_tracks(p, self, frame, LABEL_W, AXIS_H, tw, th, stats)
        p.save()
        p.setClipRect(LABEL_W, AXIS_H, tw, th)
        rd.paint_labels(p, self, labels, LABEL_W, AXIS_H, stats)
        self._paint_find_outlines(p, stats)
        self._paint_selection(p)
        self._paint_ruler_band(p, th)
        self._paint_origin(p, th)
        p.restore()
        self._paint_label_column(p, th)
        self._paint_axis(p, tw)
        self._paint_legend(p, w, h)
        self._paint_ruler_box(p, tw)
        stats.ms = (time.perf_counter() - t_start) * 1e3
        return stats

    def _paint_message(self, p: QPainter, w: int, h: int, title: str, sub: str) -> None:
        p.setPen(rd.qcolor(pal.TEXT))
        f = self.font()
        f.setPointSizeF(15)
        p.setFont(f)
        p.drawText(QRectF(0, 0, w, h / 2 + 10), Qt.AlignmentFlag.AlignHCenter |
                   Qt.AlignmentFlag.AlignBottom, title)
        p.setPen(rd.qcolor(pal.TEXT_DIM))
        p.setFont(self.font_)
        p.drawText(QRectF(0, h / 2 + 18, w, 30), Qt.AlignmentFlag.AlignHCenter, sub)

    def _paint_find_outlines(self, p: QPainter, stats: rd.FrameStats) -> None:
        if self.found is None:
            return
        p.setPen(QPen(rd.qcolor(pal.HIGHLIGHT), 1.5))
        p.setBrush(Qt.BrushStyle.NoBrush)
        for row, (x0, x1, pos) in stats.wide.items():
            r = self.model.rows[row]
            mask = self.found.masks.get(r.table)
            ry = self.row_y(row)
            if mask is None or ry is None:
                continue
            hit = np.flatnonzero(mask[r.events.index[pos]])
            for j in hit[:2000].tolist():
                p.drawRect(QRectF(LABEL_W + x0[j] + .5, ry[0] + 1.5, x1[j] - x0[j] - 1,
                                  ry[1] - 4))

    def _paint_selection(self, p: QPainter) -> None:
        sel = self.document.view_state.selection
        if sel is None:
            return
        a = self._event_anchor(sel.table, sel.row)
        if a is not None:
            x0, x1, ym, hh = a
            x1 = max(x1, x0 + 2)
            p.setPen(QPen(rd.qcolor(pal.SELECT), 2))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRect(QRectF(x0 - 1, ym - hh / 2 + 1, x1 - x0 + 2, hh - 2))
        for x0, y0, x1, y1 in self.arrow_geometry():
            rd.draw_arrow(p, x0, y0, x1, y1, QColor(255, 140, 60))

    def _paint_origin(self, p: QPainter, th: int) -> None:
        """A dashed line at the alignment origin (set by a comparison)."""
        if self.axis_origin is None:
            return
        x = self.x_of(self.axis_origin)
        p.setPen(QPen(QColor(255, 213, 79, 170), 1, Qt.PenStyle.DashLine))
        p.drawLine(QPointF(x, AXIS_H), QPointF(x, AXIS_H + th))

    def _paint_ruler_band(self, p: QPainter, th: int) -> None:
        if self.ruler is None:
            return
        a, b = sorted(self.ruler)
        xa, xb = self.x_of(a), self.x_of(b)
        p.fillRect(QRectF(xa, AXIS_H, max(xb - xa, 1), th), QColor(120, 170, 255, 40))
        p.setPen(QPen(QColor(120, 170, 255, 200), 1))
        p.drawLine(QPointF(xa, AXIS_H), QPointF(xa, AXIS_H + th))
        p.drawLine(QPointF(xb, AXIS_H), QPointF(xb, AXIS_H + th))

    def _paint_ruler_box(self, p: QPainter, tw: int) -> None:
        if self.ruler is None:
            return
        a, b = sorted(self.ruler)
        lines = [f"Δ {fmt_duration(b - a)}"]
        st = self.ruler_stats
        if st and st.get("pending"):
            lines.append("measuring…")
        elif st:
            lines.append(f"{st['kernels']:,} kernels")
            names = st.get("device_names", {})
            for d, f in sorted(st["busy"].items(), key=lambda kv: (kv[0] is None, kv[0])):
                lines.append(f"GPU {d}: {100 * f:.1f} % busy" if d is not None and d >= 0
                             else f"{names.get(d, 'GPU ?')}: {100 * f:.1f} % busy")
        p.setFont(self.small_font)
        fm = self.small_metrics
        bw = max(fm.horizontalAdvance(s) for s in lines) + 12
        bh = fm.height() * len(lines) + 8
        x = min(max(self.x_of(b) + 6, LABEL_W + 4), LABEL_W + tw - bw - 4)
        rect = QRectF(x, AXIS_H + 4, bw, bh)
        p.fillRect(rect, QColor(20, 24, 32, 230))
        p.setPen(QColor(120, 170, 255))
        p.drawRect(rect)
        p.setPen(rd.qcolor(pal.TEXT))
        for i, s in enumerate(lines):
            p.drawText(QPointF(x + 6, AXIS_H + 4 + fm.ascent() + 4 + i * fm.height()), s)

    def _paint_label_column(self, p: QPainter, th: int) -> None:
        """Row labels; cached as a pixmap while rows, scroll and height stay."""
        if p.device() is not self:
            self._draw_label_column(p, AXIS_H, th)    # images, SVG: draw directly
            return
        dpr = self.devicePixelRatioF()
        key = (id(self.layout), self.scroll, th, dpr, self.layout.total)
        if self._label_pixmap is None or self._label_pixmap[0] != key:
            pm = QPixmap(int(LABEL_W * dpr), int(th * dpr))
            pm.setDevicePixelRatio(dpr)
            q = QPainter(pm)
            try:
                self._draw_label_column(q, 0, th)
            finally:
                q.end()
            self._label_pixmap = (key, pm)
        p.drawPixmap(0, AXIS_H, self._label_pixmap[1])

    def _draw_label_column(self, p: QPainter, oy: int, th: int) -> None:
        p.fillRect(0, oy, LABEL_W, th, rd.qcolor(pal.LABEL_BG))
        p.save()
        p.setClipRect(0, oy, LABEL_W, th)
        lay, model = self.layout, self.model
        fm = self.metrics
        first = max(int(np.searchsorted(lay.y + lay.h, self.scroll, side="right")), 0)
        for i in range(first, len(lay.rows)):
            y = oy + int(lay.y[i]) - self.scroll
            if y >= oy + th:
                break
            r = model.rows[int(lay.rows[i])]
            h = int(lay.h[i])
            indent = 8 + 14 * r.level
            if r.kind == "group":
                p.fillRect(0, y, LABEL_W, h, rd.qcolor(pal.GROUP_BG))
                p.setPen(rd.qcolor(pal.TEXT_DIM))
                p.setFont(self.font_)
                p.drawText(QRectF(indent - 2, y, 12, h), Qt.AlignmentFlag.AlignCenter,
                           "▸" if r.key in self.collapsed else "▾")
                p.setFont(self.bold_font if r.level == 0 else self.font_)
                p.setPen(rd.qcolor(pal.TEXT))
                indent += 12
            else:
                p.setFont(self.font_)
                p.setPen(rd.qcolor(pal.TEXT if r.kind == "track" else pal.TEXT_DIM))
            text = fm.elidedText(r.label, Qt.TextElideMode.ElideRight, LABEL_W - indent - 6)
            p.drawText(QRectF(indent, y, LABEL_W - indent - 4, h),
                       Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)
            p.setPen(rd.qcolor(pal.SEPARATOR))
            p.drawLine(0, y + h - 1, LABEL_W, y + h - 1)
        p.restore()
        p.setPen(rd.qcolor(pal.SEPARATOR))
        p.drawLine(LABEL_W - 1, oy, LABEL_W - 1, oy + th)

    def _paint_axis(self, p: QPainter, tw: int) -> None:
        p.fillRect(0, 0, LABEL_W + tw + SCROLL_W, AXIS_H, rd.qcolor(pal.LABEL_BG))
        t0, t1 = self.document.view_state.window
        origin = self.axis_origin if self.axis_origin is not None else self.model.t_min
        p.setFont(self.small_font)
        fm = self.small_metrics
        p.setPen(rd.qcolor(pal.TEXT_DIM))
        p.drawText(QRectF(8, 0, LABEL_W - 12, AXIS_H), Qt.AlignmentFlag.AlignVCenter,
                   f"window {fmt_duration(t1 - t0)}  ·  drag here to measure")
        p.save()
        p.setClipRect(LABEL_W, 0, tw, AXIS_H)
        last_right = -1e9
        for t, label in rd.ticks(t0, t1, origin, tw):
            x = self.x_of(t)
            p.setPen(rd.qcolor(pal.SEPARATOR))
            p.drawLine(QPointF(x, AXIS_H - 8), QPointF(x, AXIS_H))
            lw = fm.horizontalAdvance(label)
            if x + 3 > last_right + 6 and x + 3 + lw <= LABEL_W + tw:
                p.setPen(rd.qcolor(pal.TEXT_DIM))
                p.drawText(QPointF(x + 3, AXIS_H - 11), label)
                last_right = x + 3 + lw
        p.restore()
        p.setPen(rd.qcolor(pal.SEPARATOR))
        p.drawLine(0, AXIS_H - 1, LABEL_W + tw + SCROLL_W, AXIS_H - 1)

    def _paint_legend(self, p: QPainter, w: int, h: int) -> None:
        """Colour legend strip; cached as a pixmap per (mode, scale, width)."""
        if p.device() is not self:
            self._draw_legend(p, w, h - LEGEND_H)
            return
        dpr = self.devicePixelRatioF()
        key = (self.scale, w, dpr)
        if self._legend_pixmap is None or self._legend_pixmap[0] != key:
            pm = QPixmap(int(w * dpr), int(LEGEND_H * dpr))
            pm.setDevicePixelRatio(dpr)
            q = QPainter(pm)
            try:
                self._draw_legend(q, w, 0)
            finally:
                q.end()
            self._legend_pixmap = (key, pm)
        p.drawPixmap(0, h - LEGEND_H, self._legend_pixmap[1])

    def _draw_legend(self, p: QPainter, w: int, y: int) -> None:
        p.fillRect(0, y, w, LEGEND_H, rd.qcolor(pal.LABEL_BG))
        p.setFont(self.small_font)
        fm = self.small_metrics
        mode = self.scale.mode
        title = {"name": "Colour by name", "duration": "Colour by duration",
                 "queue_delay": "Colour by queue delay (launch end → start)",
                 "delta": "Colour by time vs. the matched kernel"}[mode]
        p.setPen(rd.qcolor(pal.TEXT_DIM))
        x = 8
        p.drawText(QPointF(x, y + 15), title)
        x += fm.horizontalAdvance(title) + 14
        if mode == "name":
            for name, key in self.scale.top_names:
                short = fm.elidedText(lod.short_name(name), Qt.TextElideMode.ElideRight, 150)
                if x + 16 + fm.horizontalAdvance(short) > w - 8:
                    break
                p.fillRect(QRectF(x, y + 6, 10, 10), rd.qcolor(self.palette.rgb[key]))
                p.setPen(rd.qcolor(pal.TEXT))
                p.drawText(QPointF(x + 14, y + 15), short)
                x += 14 + fm.horizontalAdvance(short) + 14
        elif mode == "delta":
            self._draw_delta_legend(p, x, y)
        else:
            lo_s, hi_s = fmt_duration(self.scale.lo_ns), fmt_duration(self.scale.hi_ns)
            p.setPen(rd.qcolor(pal.TEXT))
            p.drawText(QPointF(x, y + 15), f"≤ {lo_s}")
            x += fm.horizontalAdvance(f"≤ {lo_s}") + 6
            g = QLinearGradient(x, 0, x + 160, 0)
            for i in range(9):
                g.setColorAt(i / 8, rd.qcolor(pal.ramp_rgb(np.array([i / 8]))[0]))
            p.fillRect(QRectF(x, y + 6, 160, 10), g)
            x += 166
            p.drawText(QPointF(x, y + 15), f"≥ {hi_s}  (log scale)")
            if mode == "queue_delay":
                x += fm.horizontalAdvance(f"≥ {hi_s}  (log scale)") + 14
                p.fillRect(QRectF(x, y + 6, 10, 10), rd.qcolor(pal.NEUTRAL))
                p.drawText(QPointF(x + 14, y + 15), "no launch link")

    def _draw_delta_legend(self, p: QPainter, x: float, y: int) -> None:
        fm = self.small_metrics
        lo = f"{self.scale.hi_ns:.2f}× faster"
        hi = f"{self.scale.hi_ns:.2f}× slower"
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

    # ------------------------------------------------------------------ export
    def export_png(self, path) -> bool:
        """Save the view as a PNG picture (the widget's current size)."""
        img = QImage(self.size(), QImage.Format.Format_RGB32)
        p = QPainter(img)
        try:
            self.render_to(p, self.width(), self.height())
        finally:
            p.end()
        return img.save(str(path))

    def export_svg(self, path) -> bool:
        """Save the view as SVG (tracks as an embedded image, text and overlays as
        vectors). QSvgGenerator comes with PySide6-Essentials (QtSvg)."""
        from PySide6.QtSvg import QSvgGenerator

        gen = QSvgGenerator()
        gen.setFileName(str(path))
        gen.setSize(self.size())
        gen.setViewBox(QRect(0, 0, self.width(), self.height()))
        gen.setTitle("hipscope timeline")
        p = QPainter(gen)
        try:
            self.render_to(p, self.width(), self.height())
        finally:
            p.end()
        return True
