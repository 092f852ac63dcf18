"""Input of the timeline: mouse, wheel and keys become the view's operations.

As in Nsight Systems and Perfetto: the wheel scrolls the tracks, Ctrl+wheel zooms at
the cursor, Shift+wheel (or a sideways wheel) pans; with ``view.wheel_zooms`` (the
"classic" setting) the wheel zooms and Shift or the label column scrolls. Dragging the
tracks pans, Shift+dragging them picks a time range over the tracks crossed (an area
selection, :mod:`.area_pick`), a click selects, a double click zooms to the event,
dragging the axis strip measures (the ruler), a click on a group's label folds it;
W/S zoom, A/D pan, F zooms to the ruler, the area or the selection, Home fits,
F3/Shift+F3 step through find matches, Escape clears the ruler or the area, then the
selection. The window binds the same keys
for the whole trace tab (``app.actions``) through :meth:`TimelineView.navigate`. The
view owns the state; this holds only the gesture in progress.
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


# keys of the timeline -> the name of the move (``TimelineView.navigate``)
KEY_ACTIONS = {Qt.Key.Key_W: "zoom_in", Qt.Key.Key_S: "zoom_out", Qt.Key.Key_A: "pan_left",
               Qt.Key.Key_D: "pan_right", Qt.Key.Key_F: "zoom_selection",
               Qt.Key.Key_Home: "fit", Qt.Key.Key_Plus: "zoom_in",
               Qt.Key.Key_Minus: "zoom_out"}


class TimelineInput:
    """The gesture in progress (a pan or ruler drag) and the last cursor x.

    ``wheel_zooms`` (class-wide: the app sets it from its setting; a view may
    override it) keeps the classic mapping where the plain wheel zooms."""

    wheel_zooms: bool = False

    def __init__(self, view: TimelineView):
        self.view = view
        self.drag: dict | None = None
        self.mouse_x: float | None = None
        self.last_pick = "selection"     # or "ruler": what F zooms to
        self.tracks = TrackControls(view)       # filter box and track menu (tracks.py)

    def wheel(self, event) -> None:
        v = self.view
        pos = event.position()
        d = event.angleDelta()
        mods = event.modifiers()
        ctrl = bool(mods & Qt.KeyboardModifier.ControlModifier)
        shift = bool(mods & Qt.KeyboardModifier.ShiftModifier)
        if self.wheel_zooms:                                  # the classic mapping
            if pos.x() < self.tracks.label_w or shift:
                v.vbar.setValue(v.vbar.value() - (d.y() or d.x()) // 2)
            elif d.y():
                v.zoom(ZOOM_STEP ** (d.y() / 120.0), pos.x())
            elif d.x():
                v.pan(-d.x() / 1200.0)
        elif ctrl and d.y():
            ax = pos.x() if pos.x() >= self.tracks.label_w else None
            v.zoom(ZOOM_STEP ** (d.y() / 120.0), ax)
        elif shift and (d.y() or d.x()):
            v.pan(-(d.y() or d.x()) / 1200.0)
        elif d.y():
            v.vbar.setValue(v.vbar.value() - d.y() // 2)
        elif d.x():
            v.pan(-d.x() / 1200.0)
        event.accept()

    def double_click(self, event) -> None:
        """Zoom to the event under the cursor (and select it)."""
        v = self.view
        pos = event.position()
        if event.button() != Qt.MouseButton.LeftButton or pos.y() < AXIS_H:
            return
        sel = v.hit(pos.x(), pos.y())
        if sel is not None:
            v.document.view_state.select(sel)
            self.zoom_to_event(sel.table, sel.row)

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
        elif y >= AXIS_H and event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.drag = {"kind": "area"}
            v.area_pick.begin(x, y)
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
        elif d["kind"] == "area":
            v.area_pick.drag_to(pos.x(), pos.y())
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
        elif d["kind"] == "area":
            v.area_pick.finish(pos.x(), pos.y())
        elif d["kind"] == "ruler":
            a, b = d["t"], v.t_of(pos.x())
            if abs(pos.x() - d["x"]) < 3:
                v.clear_ruler()
                v.range_measured.emit(None)
            else:
                v.measure(min(a, b), max(a, b))
        v.update()

    def key(self, event) -> bool:
        """Handle a key press; False when the key is not the timeline's."""
        v = self.view
        k = event.key()
        if event.modifiers() & ~(Qt.KeyboardModifier.ShiftModifier
                                 | Qt.KeyboardModifier.KeypadModifier):
            return False
        if k in KEY_ACTIONS:
            v.navigate(KEY_ACTIONS[k])
        elif k == Qt.Key.Key_F3:
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                v.find_prev()
            else:
                v.find_next()
        elif k == Qt.Key.Key_Escape:
            if v.ruler is not None or v.area_pick.box is not None:
                v.clear_ruler()
            else:
                v.document.view_state.select(None)
        else:
            return False
        return True

    def navigate(self, what: str) -> None:
        """One keyboard move: zoom_in/zoom_out (at the cursor when over the tracks),
        pan_left/pan_right, zoom_selection, fit."""
        v = self.view
        x = self.mouse_x
        ax = x if x is not None and x > self.tracks.label_w else None
        if what == "zoom_in":
            v.zoom(ZOOM_STEP, ax)
        elif what == "zoom_out":
            v.zoom(1 / ZOOM_STEP, ax)
        elif what == "pan_left":
            v.pan(-PAN_STEP)
        elif what == "pan_right":
            v.pan(PAN_STEP)
        elif what == "zoom_selection":
            self.zoom_to_selection()
        elif what == "fit":
            v.fit()
        else:
            raise ValueError(f"unknown timeline move {what!r}")

    def zoom_to_selection(self) -> None:
        """Show the selected event or the ruler's range, whichever came last (F)."""
        v = self.view
        sel = v.document.view_state.selection
        span = v.ruler or (v.area_pick.box[:2] if v.area_pick.box else None)
        if span and span[0] != span[1] and (sel is None or self.last_pick == "ruler"):
            a, b = sorted(span)
            v.set_window(a, b)
            return
        if sel is not None:
            self.zoom_to_event(sel.table, sel.row)

    def zoom_to_event(self, table: str, row: int) -> None:
        """Show one event with a margin of a tenth of its length each side."""
        v = self.view
        if v.model is None or not v.knows(table):
            return
        s, e = v.span_of(table, row)
        pad = max((e - s) / 10, 10)
        v.set_window(s - pad, e + pad)

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
