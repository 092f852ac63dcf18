"""TimelineView: the QWidget that shows a Document's trace over time.

It follows the document's signals and changes state only through
``document.view_state`` (window, selection). Row preparation, colour keys, find
and big ruler measurements run in workers (the document's job runner, first in
its queue); results are applied on the GUI thread. ``paintEvent`` replays prepared numpy geometry
(see ``render.py``).
"""

from __future__ import annotations

import logging

import numpy as np
from PySide6.QtCore import QEvent, QRect, QSize, Qt, Signal
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QScrollBar, QWidget

from ...analysis import lod
from ...model.view_state import Selection
from ...qt.document import Document
from ...qt.timeline_api import RangeStats
from . import first_frame, track_state
from . import palette as pal
from . import render as rd
from .area_pick import TimelineArea
from .find_ctl import TimelineFind
from .flows import TimelineFlows
from .frame_state import Fonts, FrameState, PaintCache
from .interaction import TimelineInput
from .painting import paint_frame
from .render import AXIS_H, SCROLL_W
from .reveal import MIN_SPAN, reveal_event

log = logging.getLogger(__name__)

SYNC_LIMIT = 200_000      # events: below this, prepare on the GUI thread (instant)
RULER_SYNC = 300_000      # kernels: above this, ruler statistics run in a worker
TIMELINE_PRIORITY = 10    # the timeline's tasks start before the other panels' queued ones


class TimelineView(QWidget):
    """Timeline of one document's trace (see module docstring).

    Public API: :meth:`fit`, :meth:`navigate`, :meth:`reveal`, :meth:`find_next`,
    :meth:`find_prev`, :meth:`export_png`, :meth:`export_svg`; signals
    ``range_measured(RangeStats | None)`` (ruler statistics), ``prepared()`` (rows ready
    after a load or a regrouping) and ``find_status(FindStatus)`` (the find bar's text).
    """

    range_measured = Signal(object)
    prepared = Signal()
    find_status = Signal(object)

    def __init__(self, document: Document, parent: QWidget | None = None):
        super().__init__(parent)
        self.document = document
        self.model: lod.TimelineModel | None = None
        self.collapsed: set[str] = set()
        self._seen_keys: set[str] = set()
        self.layout = rd.Layout(None, self.collapsed)
        self.scroll = 0
        self.palette = pal.Palette(document.view_state.color_mode)
        self.scale = lod.ColorScale(document.view_state.color_mode)
        self.found: lod.FindResult | None = None
        self.find_starts: dict[int, np.ndarray] = {}
        self.ruler: tuple[int, int] | None = None
        self.ruler_stats: dict | None = None
        self.stats = rd.FrameStats()
        self.paint_cache = PaintCache()
        self.preparing = False
        # time 0 of the axis labels (None: the trace's start); a comparison sets each
        # run's alignment origin so that stacked timelines share one time axis
        self.axis_origin: int | None = None
        self._times: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.input = TimelineInput(self)
        self.area_pick = TimelineArea(self)     # Shift+drag: a range over chosen tracks
        self.pending_track_state: dict | None = None   # saved track choices (track_state.py)
        self.finder = TimelineFind(self)
        self.flows = TimelineFlows(self)
        self.fonts = Fonts(*rd.make_fonts())
        self.tasks = document.scope("timeline", priority=TIMELINE_PRIORITY)  # drawn first
        document.expect_first_frame()     # the docks wait for it (first_frame.py)
        self.vbar = QScrollBar(Qt.Orientation.Vertical, self)
        self.vbar.valueChanged.connect(self._on_vbar_value_changed)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(True)
        self.setMinimumSize(400, 200)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        d = document
        d.trace_to_draw.connect(self._on_document_trace_loaded)   # before the docks
        d.view_changed.connect(self._on_document_view_changed)
        d.selection_changed.connect(self._on_document_selection_changed)
        d.find_changed.connect(self._on_document_find_changed)
        d.color_mode_changed.connect(self._on_document_color_mode_changed)
        d.grouping_changed.connect(self._on_document_grouping_changed)
        d.reveal_requested.connect(lambda sel: self.reveal(sel.table, sel.row))
        d.highlight_requested.connect(self._on_document_highlight_requested)
        if d.trace is not None:
            self._prepare()

    # ------------------------------------------------------------------ geometry
    def sizeHint(self) -> QSize:
        return QSize(1200, 700)

    @property
    def track_rect(self) -> QRect:
        return self.input.tracks.track_rect()     # right of the (resizable) label column

    def x_of(self, t: float) -> float:
        t0, t1 = self.document.view_state.window
        r = self.track_rect
        return r.x() + (t - t0) * r.width() / max(t1 - t0, 1)

    def t_of(self, x: float) -> int:
        t0, t1 = self.document.view_state.window
        r = self.track_rect
        return int(round(t0 + (x - r.x()) * (t1 - t0) / r.width()))

    def row_y(self, row: int) -> tuple[int, int] | None:
        """Widget y and height of a shown row (None when collapsed away)."""
        p = self.layout.pos_of.get(row)
        if p is None:
            return None
        return AXIS_H + int(self.layout.y[p]) - self.scroll, int(self.layout.h[p])

    def resizeEvent(self, event) -> None:
        r = self.track_rect
        self.vbar.setGeometry(r.right() + 1, r.y(), SCROLL_W, r.height())
        self._update_scrollbar()
        super().resizeEvent(event)

    def _update_scrollbar(self) -> None:
        page = self.track_rect.height()
        top = max(self.layout.total - page, 0)
        self.vbar.setRange(0, top)
        self.vbar.setPageStep(page)
        self.vbar.setSingleStep(rd.ROW_H["track"])
        self.vbar.setVisible(top > 0)
        self.scroll = min(self.scroll, top)

    def _on_vbar_value_changed(self, v: int) -> None:
        self.scroll = int(v)
        self.update()

    # ------------------------------------------------------------------ preparation
    def _prepare(self) -> None:
        """(Re)build the rows of the document's trace; in a worker when big."""
        trace = self.document.trace
        if trace is None:
            return
        vs = self.document.view_state
        grouping, mode, text, regex = vs.grouping, vs.color_mode, vs.find_text, vs.find_regex
        values = vs.color_values

        def job(progress=None, cancelled=None):
            return lod.prepare(trace, grouping, mode, values, text, regex, cancelled)

        self.preparing = True
        n = sum(len(t) for t in (trace.kernels, trace.api, trace.copies, trace.markers))
        if n < SYNC_LIMIT:
            self._on_prepare_succeeded(job(None, lambda: False))
            self.document.first_frame_drawn()    # drawn at once: the docks need not wait
        else:
            h = self.tasks.submit("prepare", job)
            h.succeeded.connect(self._on_prepare_succeeded)
            h.failed.connect(lambda _msg: self.document.first_frame_drawn())
            self.update()

    def _on_prepare_succeeded(self, result) -> None:
        model, scale, found, starts = result
        trace = self.document.trace
        self.model, self.scale = model, scale
        self.palette = pal.Palette(scale.mode)
        self._times = {t: (getattr(trace, t).numpy("start", fill=0),
                           getattr(trace, t).numpy("end", fill=0)) for t in lod.EVENT_TABLES}
        self.paint_cache.elided.clear()
        self.preparing = False
        fresh = {r.key for r in model.rows if r.collapsed_default} - self._seen_keys
        self.collapsed |= fresh            # fold deep stacks once; the user's choice stays
        self._seen_keys |= {r.key for r in model.rows}
        self.relayout()
        track_state.apply_pending(self)     # the choices saved for this trace
        self.finder.set_result(found, starts)
        self._on_document_selection_changed(self.document.view_state.selection)
        first_frame.prepared(self)
        self.prepared.emit()

    def relayout(self) -> None:
        self.layout = rd.Layout(self.model, self.collapsed, self.input.tracks.options)
        self._update_scrollbar()
        self.update()

    def _on_document_trace_loaded(self, trace) -> None:
        self.model = None
        self.found, self.find_starts = None, {}
        self.clear_ruler()
        self.flows.targets = []
        self._prepare()
        self.update()

    def _on_document_view_changed(self, window) -> None:
        self.update()

    def _on_document_grouping_changed(self, grouping: str) -> None:
        self.area_pick.clear()                  # its rows are the old grouping's
        self._prepare()

    def _on_document_color_mode_changed(self, mode: str) -> None:
        model, trace = self.model, self.document.trace
        if model is None or trace is None:
            return
        values = self.document.view_state.color_values

        def job(progress=None, cancelled=None):
            scale = lod.color_scale(trace, model, mode, values)
            return model, scale, lod.color_keys(trace, model, scale, cancelled, values)

        if model.n_kernels + sum(len(r.events) for r in model.rows
                                 if r.events is not None) < SYNC_LIMIT:
            self._on_colors_succeeded(job(None, lambda: False))
        else:
            self.tasks.submit("colors", job).succeeded.connect(self._on_colors_succeeded)

    def _on_colors_succeeded(self, result) -> None:
        model, scale, keys = result
        if model is not self.model:
            return
        lod.apply_color_keys(model, keys)
        self.scale, self.palette = scale, pal.Palette(scale.mode)
        self.paint_cache.elided.clear()
        self.update()

    def _on_document_find_changed(self, value) -> None:
        self.finder.changed(value)

    def _on_document_highlight_requested(self, events) -> None:
        self.finder.highlight(events)      # a slot of the widget: gone when it is

    def _on_document_selection_changed(self, sel) -> None:
        if sel is not None:
            self.input.last_pick = "selection"
        self.flows.refresh()

    # ------------------------------------------------------------------ arrows

    def event_anchor(self, table: str, row: int) -> tuple[float, float, float, float] | None:
        """(x_start, x_end, y_mid, height) of an event in widget coordinates."""
        if self.model is None or table not in self._times:
            return None
        tr = int(self.model.track_of[table][row]) if row < len(
            self.model.track_of[table]) else -1
        if tr < 0:
            return None
        shown = self.layout.shown(tr)
        ry = self.row_y(shown) if shown >= 0 else None
        if ry is None:
            return None
        s, e = self._times[table]
        return self.x_of(int(s[row])), self.x_of(int(e[row])), ry[0] + ry[1] / 2, ry[1]

    def arrow_geometry(self) -> list[tuple[float, float, float, float]]:
        """Launch arrows of the selection: (x0, y0, x1, y1) from the API call's end to
        the kernel's (or copy's) start, widget coordinates (all flows:
        ``flows.geometry()``)."""
        return [g[:4] for g in self.flows.geometry() if g[4] == "launch"]

    # ------------------------------------------------------------------ window
    def set_window(self, t0: float, t1: float) -> None:
        """Show ``[t0, t1)``, kept to a sensible span around the trace."""
        m = self.model
        lo, hi = (m.t_min, m.t_max) if m is not None else self.document.full_range()
        span = min(max(t1 - t0, MIN_SPAN), max((hi - lo) * 1.5, MIN_SPAN))
        t0 = min(max(t0, lo - span * 0.5), hi - span * 0.5)
        self.document.view_state.set_window(int(round(t0)), int(round(t0 + span)))

    def zoom(self, factor: float, anchor_x: float | None = None) -> None:
        """Zoom by ``factor`` (<1 zooms in) keeping the time under ``anchor_x``."""
        t0, t1 = self.document.view_state.window
        r = self.track_rect
        ax = r.center().x() if anchor_x is None else anchor_x
        ta = t0 + (ax - r.x()) * (t1 - t0) / r.width()
        span = max((t1 - t0) * factor, MIN_SPAN)
        f = (ta - t0) / max(t1 - t0, 1)
        self.set_window(ta - f * span, ta - f * span + span)

    def pan(self, fraction: float) -> None:
        t0, t1 = self.document.view_state.window
        d = (t1 - t0) * fraction
        self.set_window(t0 + d, t1 + d)

    def fit(self) -> None:
        """Show the whole trace."""
        lo, hi = self.document.full_range()
        self.document.view_state.set_window(lo, hi)

    def reveal(self, table: str, row: int) -> None:
        """Select an event and scroll/zoom so that it is visible."""
        reveal_event(self, table, row)

    # ------------------------------------------------------------------ find, keys
    def find_next(self) -> None:
        """Select and reveal the next match in time order (F3); while a search runs,
        the first match when it arrives."""
        self.finder.step(True)

    def find_prev(self) -> None:
        """Select and reveal the previous match in time order (Shift+F3)."""
        self.finder.step(False)

    def navigate(self, what: str) -> None:
        """A keyboard move (zoom_in, zoom_out, pan_left, pan_right, zoom_selection,
        fit); the window's actions call this for the whole trace tab."""
        self.input.navigate(what)

    # ------------------------------------------------------------------ hit testing
    def hit(self, x: float, y: float) -> Selection | None:
        """The event under a widget position (None when none)."""
        if self.model is None or not self.track_rect.contains(int(x), int(y)):
            return None
        row = self.layout.at(y - AXIS_H + self.scroll)
        if row < 0:
            return None
        r = self.model.rows[row]
        if r.events is None or r.kind != "track":
            return None
        t0, t1 = self.document.view_state.window
        nspp = (t1 - t0) / self.track_rect.width()
        pos = lod.hit_test(r.events, self.t_of(x), int(max(2 * nspp, 1)))
        if pos < 0:
            return None
        return Selection(r.table, int(r.events.index[pos]))

    def knows(self, table: str) -> bool:
        """Whether the times of an event table are at hand (after a prepare)."""
        return table in self._times

    def span_of(self, table: str, row: int) -> tuple[int, int]:
        """Start and end (ns) of row ``row`` of an event table."""
        s, e = self._times[table]
        return int(s[row]), int(e[row])

    def toggle_group(self, row: int) -> None:
        key = self.model.rows[row].key
        if key in self.collapsed:
            self.collapsed.discard(key)
        else:
            self.collapsed.add(key)
        self.relayout()

    # ------------------------------------------------------------------ ruler
    def measure(self, t0: int, t1: int) -> None:
        """Ruler over ``[t0, t1)``: statistics shown and sent by ``range_measured``."""
        model = self.model
        if model is None:
            return
        self.ruler = (int(t0), int(t1))
        self.area_pick.box = None               # the ruler's range covers every track
        self.input.last_pick = "ruler"
        self.document.view_state.set_area(self.ruler)
        trace = self.document.trace

        def job(progress=None, cancelled=None):
            return lod.ruler_figures(trace, model, t0, t1, cancelled)

        if model.n_kernels < RULER_SYNC:
            self._on_measure_succeeded(job())
        else:
            self.ruler_stats = {"pending": True}
            self.tasks.submit("ruler", job).succeeded.connect(self._on_measure_succeeded)

    def clear_ruler(self, keep_area: bool = False) -> None:
        """Drop the ruler, an area pick and the document's area (``keep_area``: not
        these two, a new area pick replaces the ruler)."""
        self.ruler = self.ruler_stats = None
        if not keep_area:
            self.area_pick.box = None
            self.document.view_state.set_area(None)
        self.update()

    def _on_measure_succeeded(self, stats: dict) -> None:
        if self.ruler is None or (stats["t0"], stats["t1"]) != tuple(sorted(self.ruler)):
            return
        self.ruler_stats = stats
        self.range_measured.emit(RangeStats.from_ruler(stats))
        self.update()

    # ------------------------------------------------------------------ input
    # (mouse, wheel and keys turn into the operations above in :mod:`.interaction`)
    def wheelEvent(self, event) -> None:
        self.input.wheel(event)

    def mousePressEvent(self, event) -> None:
        self.input.press(event)

    def mouseMoveEvent(self, event) -> None:
        self.input.move(event)

    def mouseReleaseEvent(self, event) -> None:
        self.input.release(event)

    def mouseDoubleClickEvent(self, event) -> None:
        self.input.double_click(event)

    def keyPressEvent(self, event) -> None:
        if not self.input.key(event):
            super().keyPressEvent(event)

    def event(self, ev) -> bool:
        if ev.type() == QEvent.Type.ToolTip:
            self.input.tooltip(ev)
            return True
        return super().event(ev)

    def closeEvent(self, event) -> None:
        self.tasks.shutdown()
        super().closeEvent(event)

    # ------------------------------------------------------------------ painting
    def frame_state(self, w: int, h: int) -> FrameState:
        """What one paint at size ``w`` x ``h`` needs, taken once (the painters read
        this, never the view)."""
        trace, vs = self.document.trace, self.document.view_state
        sel = vs.selection
        box = self.event_anchor(sel.table, sel.row) if sel is not None else None
        return FrameState(
            device=self, dpr=self.devicePixelRatioF(), w=w, h=h,
            has_trace=trace is not None, preparing=self.preparing,
            n_kernels=len(trace.kernels) if trace is not None else 0, model=self.model,
            window=vs.window, layout=self.layout, scroll=self.scroll,
            collapsed=frozenset(self.collapsed), palette=self.palette, scale=self.scale,
            found=self.found, find_starts=self.find_starts, selection_box=box,
            arrows=tuple(self.flows.geometry()), axis_origin=self.axis_origin,
            ruler=self.ruler, ruler_stats=self.ruler_stats, area_box=self.area_pick.box,
            fonts=self.fonts,
            message_font=self.font(), cache=self.paint_cache, label_w=self.track_rect.x())

    def render_to(self, p: QPainter, w: int, h: int) -> rd.FrameStats:
        """Paint the whole view with ``p`` at size ``w`` x ``h`` (widget, image, SVG)."""
        self.stats = paint_frame(p, self.frame_state(w, h))
        return self.stats

    def _render_on(self, device) -> None:
        p = QPainter(device)
        try:
            self.render_to(p, self.width(), self.height())
        finally:
            p.end()

    def paintEvent(self, event) -> None:
        self._render_on(self)
        first_frame.painted(self, self.stats.rects + self.stats.density_columns)

    def export_png(self, path) -> bool:
        """Save the view as a PNG picture (the widget's current size)."""
        img = QImage(self.size(), QImage.Format.Format_RGB32)
        self._render_on(img)
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
        self._render_on(gen)
        return True
