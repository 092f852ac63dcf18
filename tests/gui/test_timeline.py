"""TimelineView: load, zoom/pan, hit testing, find, collapse, grouping, arrows,
responsiveness with 5M kernels, exports, and the PySide6 refcount trap."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QWheelEvent
from PySide6.QtWidgets import QApplication

from hipscope.model.view_state import Selection
from hipscope.qt.document import Document
from hipscope.views.timeline import TimelineView
from hipscope.views.timeline.render import AXIS_H, LABEL_W

from .conftest import make_tiny_trace


@pytest.fixture
def view(qtbot):
    doc = Document()
    v = TimelineView(doc)
    qtbot.addWidget(v)
    v.resize(1200, 700)
    v.show()
    qtbot.waitExposed(v)
    yield v
    v.close()


@pytest.fixture
def loaded(view):
    view.document.set_trace(make_tiny_trace(120))
    assert view.model is not None            # tiny traces are prepared at once
    return view


def _wheel(view, x, y, dy, mods=Qt.KeyboardModifier.NoModifier):
    pos = QPointF(x, y)
    ev = QWheelEvent(pos, view.mapToGlobal(pos), QPoint(0, 0), QPoint(0, dy),
                     Qt.MouseButton.NoButton, mods, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(view, ev)


def _kernel_point(view, row):
    """Widget point in the middle of kernel ``row`` (on its own track)."""
    s, e = (int(a[row]) for a in view._times["kernels"])
    tr = int(view.model.track_of["kernels"][row])
    y, h = view.row_y(tr)
    return QPoint(int(round(view.x_of((s + e) / 2))), y + h // 2)


def test_create_load_resize_close(qtbot, view):
    assert view.model is None
    img = view.grab().toImage()                         # the empty state paints
    assert not img.isNull()
    view.document.set_trace(make_tiny_trace())
    assert view.model is not None and len(view.layout.rows) > 0
    view.resize(800, 400)
    view.repaint()
    assert view.stats.rows > 0 and view.stats.density_columns + view.stats.rects > 0
    view.resize(1600, 900)
    view.repaint()
    assert view.stats.rows > 0
    view.close()
    assert view.tasks.active_count() == 0


def test_empty_state_says_open_a_trace(view):
    view.repaint()
    assert view.stats.rows == 0
    img = view.grab().toImage()
    # something was drawn in the centre (the message), on the background colour
    h = img.height()
    centre = {img.pixelColor(x, y).rgb() for x in range(450, 750, 2)
              for y in range(h // 2 - 30, h // 2 + 30, 2)}
    edge = {img.pixelColor(x, 10).rgb() for x in range(450, 750, 2)}
    assert len(edge) == 1 and len(centre) > 3


def test_wheel_zooms_at_cursor(loaded):
    loaded.input.wheel_zooms = True                     # the classic mapping (a setting)
    vs = loaded.document.view_state
    t0, t1 = vs.window
    x = LABEL_W + 300
    t_under = loaded.t_of(x)
    _wheel(loaded, x, 200, 120)
    n0, n1 = vs.window
    assert (n1 - n0) < (t1 - t0) * 0.85                 # zoomed in
    assert abs(loaded.t_of(x) - t_under) <= (n1 - n0) / loaded.track_rect.width() * 2
    _wheel(loaded, x, 200, -120, Qt.KeyboardModifier.ControlModifier)
    m0, m1 = vs.window
    assert (m1 - m0) > (n1 - n0)                        # Ctrl+wheel zooms too


def test_drag_pans_and_keys(qtbot, loaded):
    vs = loaded.document.view_state
    loaded.zoom(0.25)
    t0, t1 = vs.window
    span = t1 - t0
    start = QPoint(LABEL_W + 600, AXIS_H + 30)
    qtbot.mousePress(loaded, Qt.MouseButton.LeftButton, pos=start)
    qtbot.mouseMove(loaded, start + QPoint(-100, 0))
    qtbot.mouseRelease(loaded, Qt.MouseButton.LeftButton, pos=start + QPoint(-100, 0))
    n0, n1 = vs.window
    assert n1 - n0 == span
    assert n0 - t0 == pytest.approx(100 * span / loaded.track_rect.width(), rel=0.05)
    assert vs.selection is None                         # a drag does not select
    qtbot.keyClick(loaded, Qt.Key.Key_D)
    assert vs.window[0] > n0
    qtbot.keyClick(loaded, Qt.Key.Key_A)
    assert vs.window[0] == pytest.approx(n0, abs=2)
    qtbot.keyClick(loaded, Qt.Key.Key_W)
    assert vs.window[1] - vs.window[0] < span
    qtbot.keyClick(loaded, Qt.Key.Key_S)
    qtbot.keyClick(loaded, Qt.Key.Key_S)
    assert vs.window[1] - vs.window[0] > span


def test_home_fits(qtbot, loaded):
    vs = loaded.document.view_state
    loaded.zoom(0.01)
    assert vs.window != loaded.document.full_range()
    qtbot.keyClick(loaded, Qt.Key.Key_Home)
    assert vs.window == loaded.document.full_range()


def test_click_selects_kernel_under_cursor(qtbot, loaded):
    trace = loaded.document.trace
    k = trace.kernels
    ks, ke = k.numpy("start"), k.numpy("end")
    track = loaded.model.track_of["kernels"]

    def innermost_at_middle(r):      # the shortest event of its track under its middle
        mid = (ks[r] + ke[r]) // 2
        under = np.flatnonzero((track == track[r]) & (ks <= mid) & (ke > mid))
        return under[np.argmin((ke - ks)[under])] == r

    row = int(next(r for r in np.argsort(ks - ke) if innermost_at_middle(r)))
    s, e = int(ks[row]), int(ke[row])
    loaded.document.view_state.set_window(s - (e - s) // 4, e + (e - s) // 4)
    loaded.repaint()
    pt = _kernel_point(loaded, row)
    hit = loaded.hit(pt.x(), pt.y())
    assert hit == Selection("kernels", row)
    with qtbot.waitSignal(loaded.document.selection_changed, timeout=2000) as blocker:
        qtbot.mouseClick(loaded, Qt.MouseButton.LeftButton, pos=pt)
    assert blocker.args == [Selection("kernels", row)]
    # clicking empty space (the trace's left margin) clears the selection
    loaded.fit()
    loaded.document.view_state.set_window(s - 10 * (e - s), s - 9 * (e - s))
    qtbot.mouseClick(loaded, Qt.MouseButton.LeftButton, pos=QPoint(LABEL_W + 5, pt.y()))
    assert loaded.document.view_state.selection is None


def test_selected_kernel_gets_launch_arrow(loaded):
    trace = loaded.document.trace
    row = 5
    api_row = int(trace.kernels.numpy("api_index")[row])
    loaded.reveal("kernels", row)
    arrows = loaded.arrow_geometry()
    assert len(arrows) == 1
    x0, y0, x1, y1 = arrows[0]
    assert x0 == pytest.approx(loaded.x_of(int(trace.api.numpy("end")[api_row])))
    assert x1 == pytest.approx(loaded.x_of(int(trace.kernels.numpy("start")[row])))
    ktrack = int(loaded.model.track_of["kernels"][row])
    atrack = int(loaded.model.track_of["api"][api_row])
    ky, kh = loaded.row_y(ktrack)
    ay, ah = loaded.row_y(atrack)
    assert (y0, y1) == (ay + ah / 2, ky + kh / 2)
    # selecting the API call draws the arrow to its kernel too
    loaded.document.view_state.select(Selection("api", api_row))
    assert len(loaded.arrow_geometry()) == 1
    loaded.document.view_state.select(None)
    assert loaded.arrow_geometry() == []


def test_find_steps_through_matches_in_time_order(loaded):
    vs = loaded.document.view_state
    vs.set_find("gemm")
    assert loaded.found is not None and len(loaded.found) > 3
    k = loaded.document.trace.kernels
    codes, names = k.codes("name")
    want = np.flatnonzero(np.array(["gemm" in names[c] for c in codes]))
    want = want[np.lexsort((want, k.numpy("start")[want]))]
    loaded.fit()
    got = []
    for _ in range(len(want)):
        loaded.find_next()
        got.append(vs.selection.row)
    assert got == want.tolist()
    loaded.find_next()                                  # wraps to the first
    assert vs.selection.row == want[0]
    loaded.find_prev()
    assert vs.selection.row == want[-1]
    loaded.find_prev()
    assert vs.selection.row == want[-2]
    loaded.repaint()                                    # highlights are painted
    assert loaded.find_starts
    vs.set_find("")
    assert loaded.found is None


def test_collapse_group_hides_rows(qtbot, loaded):
    n = len(loaded.layout.rows)
    gpu0 = next(i for i, r in enumerate(loaded.model.rows) if r.key == "gpu/0")
    children = [i for i, r in enumerate(loaded.model.rows) if r.key.startswith("gpu/0/")]
    y, h = loaded.row_y(gpu0)
    qtbot.mouseClick(loaded, Qt.MouseButton.LeftButton, pos=QPoint(40, y + h // 2))
    assert "gpu/0" in loaded.collapsed
    assert len(loaded.layout.rows) == n - len(children)
    assert all(c not in loaded.layout.pos_of for c in children)
    loaded.repaint()
    assert loaded.stats.rows == len(loaded.layout.rows)
    # a kernel under the collapsed group: reveal expands it again
    row = int(np.flatnonzero(loaded.document.trace.kernels.numpy("device") == 0)[0])
    loaded.reveal("kernels", row)
    assert "gpu/0" not in loaded.collapsed and len(loaded.layout.rows) == n


def test_grouping_switch_changes_rows(loaded):
    keys_q = [r.key for r in loaded.model.rows]
    assert any(k.startswith("gpu/0/q") for k in keys_q)   # rows by queue (one stream each)
    loaded.document.view_state.set_grouping("stream")
    keys_s = [r.key for r in loaded.model.rows]
    assert keys_s != keys_q
    assert not any(r.kind == "group" and r.level == 1 and r.key.startswith("gpu/")
                   for r in loaded.model.rows)
    assert loaded.model.grouping == "stream"


def test_colour_modes_change_palette_and_legend(loaded):
    vs = loaded.document.view_state
    loaded.repaint()
    for mode in ("duration", "queue_delay", "name"):
        vs.set_color_mode(mode)
        assert loaded.scale.mode == mode and loaded.palette.mode == mode
        loaded.repaint()
        assert loaded.stats.rects > 0


def test_ruler_drag_measures_range(qtbot, loaded):
    a, b = QPoint(LABEL_W + 100, 10), QPoint(LABEL_W + 700, 10)
    ta, tb = loaded.t_of(a.x()), loaded.t_of(b.x())
    with qtbot.waitSignal(loaded.range_measured, timeout=3000) as blocker:
        qtbot.mousePress(loaded, Qt.MouseButton.LeftButton, pos=a)
        qtbot.mouseMove(loaded, b)
        qtbot.mouseRelease(loaded, Qt.MouseButton.LeftButton, pos=b)
    st = blocker.args[0]
    assert st.t0 == ta and st.t1 == tb and st.duration_ns == tb - ta
    k = loaded.document.trace.kernels
    s, e = k.numpy("start"), k.numpy("end")
    assert st.kernels == int(np.count_nonzero((s < tb) & (e > ta)))
    assert set(st.busy) == {0, 1} and all(0 <= f <= 1 for f in st.busy.values())


def test_exports(tmp_path, loaded):
    loaded.reveal("kernels", 3)
    png, svg = tmp_path / "t.png", tmp_path / "t.svg"
    assert loaded.export_png(png)
    img = QImage(str(png))
    assert img.width() == loaded.width() and img.height() == loaded.height()
    assert loaded.export_svg(svg)
    text = svg.read_text()
    assert "<svg" in text and "<image" in text


def test_5m_kernel_preparation_and_zoom(qtbot, view):
    """A 5M-kernel trace is prepared (in a worker) and then zoomed and panned through
    the event loop: every step paints rows. The GUI-thread stall during this is a
    benchmark (benchmarks/gui_stall.py), not a test: it depends on the machine's load."""
    from benchmarks._qt import zoom_and_pan
    from benchmarks.timeline import synthetic_trace

    trace = synthetic_trace(5_000_000)
    with qtbot.waitSignal(view.prepared, timeout=120_000):
        view.document.set_trace(trace)
    assert view.model is not None and view.model.n_kernels == 5_000_000
    # zoom and pan steps arrive through the event loop, as input does
    done = zoom_and_pan(view, lambda pred: qtbot.waitUntil(pred, timeout=20_000))
    assert len(done) == 26
    assert min(done) > 0                                # every step painted rows
    assert view.model.nbytes() / 5_000_000 < 50


def test_pyside_fillrect_does_not_leak_none_refcounts(qapp):
    """PySide6 6.12.0 on CPython 3.11 drops a reference to None on every Qt call that
    returns nothing; after a few thousand calls the interpreter aborts."""
    img = QImage(64, 64, QImage.Format.Format_ARGB32_Premultiplied)
    p = QPainter(img)
    colour = QColor(10, 20, 30)
    before = sys.getrefcount(None)
    for i in range(100_000):
        p.fillRect(i & 31, 0, 4, 4, colour)
    after = sys.getrefcount(None)
    p.end()
    assert abs(after - before) < 1_000, f"refcount of None drifted by {after - before}"
