"""Input of the timeline: mouse, wheel and keys become the view's operations.

Wheel zooms at the cursor (Shift or over the labels: scrolls), dragging the tracks
pans, a click selects, dragging the axis strip measures (the ruler), a click on a
group's label folds it; W/S zoom, A/D pan, Home fits, F3/Shift+F3 step through find
matches, Escape clears the ruler, then the selection. The view owns the state; this
holds only the gesture in progress.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolTip

from ...model.units import fmt_duration
from .render import AXIS_H
from .tracks import TrackControls

if TYPE_CHECKING:
    from .view import TimelineView

ZOOM_STEP = 0.8           # per wheel notch / key press
PAN_STEP = 0.1            # fraction of the window per A/D press


class TimelineInput:
    """The gesture in progress (a pan or ruler drag) and the last cursor x."""

    def __init__(self, view: TimelineView):
        self.view = view
        self.drag: dict | None = None
        self.mouse_x: float | None = None
        self.tracks = TrackControls(view)       # filter box and track menu (tracks.py)

    def wheel(self, event) -> None:
        v = self.view
        pos = event.position()
        d = event.angleDelta()
        mods = event.modifiers()
        if pos.x() < self.tracks.label_w or mods & Qt.KeyboardModifier.ShiftModifier:
            v.vbar.setValue(v.vbar.value() - (d.y() or d.x()) // 2)
        elif d.y():
            v.zoom(ZOOM_STEP ** (d.y() / 120.0), pos.x())
        elif d.x():
            v.pan(-d.x() / 1200.0)
        event.accept()

    def press(self, event) -> None:
        v = self.view
        pos = event.position()
        v.setFocus()
        if event.button() != Qt.MouseButton.LeftButton or v.model is None:
            return
        x, y = pos.x(), pos.y()
        if y < AXIS_H and x >= self.tracks.label_w:
            t = v.t_of(x)
            self.drag = {"kind": "ruler", "t": t, "x": x}
            v.ruler, v.ruler_stats = (t, t), None
        elif x < self.tracks.label_w and y >= AXIS_H:
            row = self.tracks.label_row_at(y)       # sticky group headers included
            if row >= 0 and v.model.rows[row].kind in ("group", "fold"):
                v.toggle_group(row)
        elif y >= AXIS_H:
            self.drag = {"kind": "pan", "x": x, "y": y, "moved": False,
                         "window": v.document.view_state.window, "scroll": v.scroll}
        v.update()

    def move(self, event) -> None:
        v = self.view
        pos = event.position()
        self.mouse_x = pos.x()
        d = self.drag
        if d is None:
            return
        if d["kind"] == "ruler":
            v.ruler = (d["t"], v.t_of(pos.x()))
            v.update()
        elif d["kind"] == "pan":
            dx, dy = pos.x() - d["x"], pos.y() - d["y"]
            if not d["moved"] and abs(dx) + abs(dy) < 4:
                return
            d["moved"] = True
            t0, t1 = d["window"]
            dt = -dx * (t1 - t0) / v.track_rect.width()
            v.set_window(t0 + dt, t1 + dt)
            v.vbar.setValue(int(d["scroll"] - dy))

    def release(self, event) -> None:
        v = self.view
        d, self.drag = self.drag, None
        if d is None:
            return
        pos = event.position()
        if d["kind"] == "pan" and not d["moved"]:
            v.document.view_state.select(v.hit(pos.x(), pos.y()))
        elif d["kind"] == "ruler":
            a, b = d["t"], v.t_of(pos.x())
            if abs(pos.x() - d["x"]) < 3:
                v.ruler = v.ruler_stats = None
                v.range_measured.emit(None)
            else:
                v.measure(min(a, b), max(a, b))
        v.update()

    def key(self, event) -> bool:
        """Handle a key press; False when the key is not the timeline's."""
        v = self.view
        k = event.key()
        ax = (self.mouse_x if self.mouse_x is not None and self.mouse_x > self.tracks.label_w
              else None)
        if k == Qt.Key.Key_W:
            v.zoom(ZOOM_STEP, ax)
        elif k == Qt.Key.Key_S:
            v.zoom(1 / ZOOM_STEP, ax)
        elif k == Qt.Key.Key_A:
            v.pan(-PAN_STEP)
        elif k == Qt.Key.Key_D:
            v.pan(PAN_STEP)
        elif k == Qt.Key.Key_Home:
            v.fit()
        elif k == Qt.Key.Key_F3:
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                v.find_prev()
            else:
                v.find_next()
        elif k == Qt.Key.Key_Escape:
            if v.ruler is not None:
                v.ruler = v.ruler_stats = None
                v.update()
            else:
                v.document.view_state.select(None)
        else:
            return False
        return True

    def tooltip(self, ev) -> None:
        """The name, duration and start of the event under the cursor."""
        v = self.view
        pos = ev.pos()
        text = self.tracks.label_tooltip(pos.x(), pos.y())   # a row label, uncut
        if text:
            QToolTip.showText(ev.globalPos(), text, v)
            return
        sel = v.hit(pos.x(), pos.y())
        if sel is None or v.document.trace is None:
            QToolTip.hideText()
            return
        s, e = v.span_of(sel.table, sel.row)
        codes, names = v.model.codes[sel.table], v.model.names[sel.table]
        c = int(codes[sel.row])
        name = names[c] if c >= 0 else "?"
        if len(name) > 160:
            name = name[:157] + "…"
        QToolTip.showText(ev.globalPos(), f"{name}\n{fmt_duration(e - s)}  "
                          f"(at +{fmt_duration(s - v.model.t_min)})", v)
