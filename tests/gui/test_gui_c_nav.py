"""Issue 16 item 8: navigation as Nsight Systems and Perfetto users expect (wheel
scrolls, Ctrl+wheel zooms, timeline keys anywhere in the trace tab, F and Home,
double click zooms, the shortcut sheet)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication

from hipscope.app.main_window import MainWindow
from hipscope.model.view_state import Selection
from hipscope.qt.document import Document
from hipscope.views.timeline import TimelineView
from hipscope.views.timeline.render import LABEL_W

from .conftest import make_tiny_trace, tiny_loader


@pytest.fixture
def view(qtbot):
    v = TimelineView(Document())
    qtbot.addWidget(v)
    v.resize(1200, 260)                  # short: the tracks need scrolling
    v.show()
    qtbot.waitExposed(v)
    v.document.set_trace(make_tiny_trace(120))
    yield v
    v.close()


@pytest.fixture
def window(tiny_window):
    return tiny_window(size=(1400, 900), active=True)


def _wheel(view, x, y, dy, mods=Qt.KeyboardModifier.NoModifier):
    pos = QPointF(x, y)
    ev = QWheelEvent(pos, view.mapToGlobal(pos), QPoint(0, 0), QPoint(0, dy),
                     Qt.MouseButton.NoButton, mods, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(view, ev)


def test_wheel_scrolls_tracks_and_ctrl_wheel_zooms(view):
    vs = view.document.view_state
    assert view.vbar.maximum() > 0
    window = vs.window
    _wheel(view, LABEL_W + 300, 150, -240)            # plain wheel down: scroll
    assert vs.window == window
    assert view.vbar.value() > 0
    x = LABEL_W + 300
    t_under = view.t_of(x)
    _wheel(view, x, 150, 120, Qt.KeyboardModifier.ControlModifier)
    n0, n1 = vs.window
    assert n1 - n0 < (window[1] - window[0]) * 0.85   # zoomed in at the cursor
    assert abs(view.t_of(x) - t_under) <= (n1 - n0) / view.track_rect.width() * 2
    _wheel(view, x, 150, -120, Qt.KeyboardModifier.ShiftModifier)
    assert vs.window[1] - vs.window[0] == n1 - n0 and vs.window[0] > n0   # panned


def test_classic_wheel_setting_keeps_zoom(qtbot, tmp_path):
    w = MainWindow(loader=tiny_loader, persist=False)
    qtbot.addWidget(w)
    a = w.action_by_id["view.wheel_zooms"]
    assert not a.isChecked()
    a.setChecked(True)
    try:
        v = TimelineView(Document())
        qtbot.addWidget(v)
        v.resize(1200, 500)
        v.document.set_trace(make_tiny_trace(120))
        span = v.document.view_state.window
        _wheel(v, LABEL_W + 300, 150, 120)
        s = v.document.view_state.window
        assert s[1] - s[0] < span[1] - span[0]
        assert w.settings.store.value("timeline/wheel_zooms", type=bool) is True
    finally:
        a.setChecked(False)
        w.close()


def test_keys_work_anywhere_in_the_trace_tab(qtbot, window):
    w, tab = window
    vs = tab.document.view_state
    table = tab.panels["kernels"].table
    table.setFocus()
    qtbot.waitUntil(table.hasFocus)
    span = vs.window[1] - vs.window[0]
    qtbot.keyClick(table, Qt.Key.Key_W)
    assert vs.window[1] - vs.window[0] < span
    zoomed = vs.window
    qtbot.keyClick(table, Qt.Key.Key_D)
    assert vs.window[0] > zoomed[0]
    qtbot.keyClick(table, Qt.Key.Key_Home)
    assert vs.window == tab.document.full_range()
    # typing in a text field types, it does not zoom
    w.show_find_bar()
    qtbot.waitUntil(w.find_edit.hasFocus)
    qtbot.keyClicks(w.find_edit, "wasd")
    assert w.find_edit.text() == "wasd"
    assert vs.window == tab.document.full_range()


def test_f_zooms_to_selection_then_ruler(qtbot, window):
    w, tab = window
    vs = tab.document.view_state
    k = tab.document.trace.kernels
    s, e = int(k.numpy("start")[5]), int(k.numpy("end")[5])
    vs.select(Selection("kernels", 5))
    tab.timeline.setFocus()
    qtbot.keyClick(tab.timeline, Qt.Key.Key_F)
    a, b = vs.window
    assert a <= s and b >= e and (b - a) <= (e - s) * 1.3
    tab.timeline.measure(s - 10_000, s + 30_000)
    qtbot.keyClick(tab.panels["summary"].table, Qt.Key.Key_F)
    assert vs.window == (s - 10_000, s + 30_000)          # the ruler came later
    vs.select(Selection("kernels", 7))
    qtbot.keyClick(tab.panels["summary"].table, Qt.Key.Key_F)
    s7, e7 = int(k.numpy("start")[7]), int(k.numpy("end")[7])
    a, b = vs.window
    assert a <= s7 and b >= e7 and (b - a) <= (e7 - s7) * 1.3   # then the selection
    qtbot.keyClick(tab.panels["summary"].table, Qt.Key.Key_Home)
    assert vs.window == tab.document.full_range()


def test_double_click_zooms_to_event(qtbot, view):
    view.resize(1200, 700)
    trace = view.document.trace
    ks, ke = trace.kernels.numpy("start"), trace.kernels.numpy("end")
    view.vbar.setValue(0)

    def point(r):
        y, h = view.row_y(int(view.model.track_of["kernels"][r]))
        return int(view.x_of((ks[r] + ke[r]) / 2)), y + h // 2

    # a long kernel that is the one under its own middle at fit-all
    row = next(int(r) for r in (ke - ks).argsort()[::-1]
               if view.hit(*point(r)) == Selection("kernels", int(r)))
    x, y = point(row)
    qtbot.mouseDClick(view, Qt.MouseButton.LeftButton, pos=QPoint(x, y))
    a, b = view.document.view_state.window
    assert view.document.view_state.selection == Selection("kernels", row)
    assert a <= ks[row] and b >= ke[row] and (b - a) <= (ke[row] - ks[row]) * 1.3


def test_shortcut_sheet_from_help_and_question_mark(qtbot, window):
    w, tab = window
    help_menu = next(a.menu() for a in w.menuBar().actions() if "Help" in a.text())
    assert any("Shortcuts" in a.text() for a in help_menu.actions())
    qtbot.keyClick(tab.panels["summary"].table, Qt.Key.Key_Question)
    sheet = w.shortcut_sheet
    qtbot.waitUntil(sheet.isVisible)
    keys = {sheet.table.item(i, 0).text() for i in range(sheet.table.rowCount())}
    assert {"W / S", "A / D", "F", "Home", "Ctrl+wheel", "?"} <= keys
    sheet.close()


def test_navigate_rejects_unknown_moves(view):
    with pytest.raises(ValueError):
        view.navigate("zoom_sideways")
