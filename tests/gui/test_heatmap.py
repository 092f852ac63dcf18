"""Counter heatmap: create/load/resize/close, cell click -> selection, sort, cluster,
per-kernel toggle, tooltips, the time panel following the window, the empty state."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt

from hipscope.analysis import counters as ca
from hipscope.model.view_state import Selection
from hipscope.parsers import open_trace
from hipscope.qt.document import Document
from hipscope.views.heatmap import EMPTY_TEXT, CounterHeatmapView, HeatmapCanvas
from tests.conftest import SAMPLES

NCU = SAMPLES / "ncu-csv" / "h200-generated" / "ncu_details.csv"
RPC = SAMPLES / "rocprof-compute" / "vcopy-MI300X-rocpd"


@pytest.fixture
def view(qtbot):
    doc = Document()
    v = CounterHeatmapView(doc)
    qtbot.addWidget(v)
    v.resize(1200, 800)
    v.show()
    with qtbot.waitSignal(v.matrix_ready, timeout=20_000):
        doc.set_trace(open_trace(NCU))
    return v


def _cell_pos(view, row: int, col: int) -> QPoint:
    c = HeatmapCanvas
    return QPoint(c.LABEL_W + col * c.CELL_W + c.CELL_W // 2,
                  view.canvas.header_h + row * c.CELL_H + c.CELL_H // 2)


def test_create_load_resize_close(view, qtbot):
    assert not view.is_empty
    m = view.matrix
    assert m.shape[0] == 6 and m.shape[1] > 10
    assert m.columns[0].derived                       # derived metrics come first
    assert view.canvas.image is not None and view.canvas.image.width() == m.shape[1]
    view.resize(700, 500)
    qtbot.wait(1)
    assert view.grab().width() == 700
    view.close()


def test_cell_click_selects_the_kernel(view, qtbot):
    doc = view.document
    with qtbot.waitSignal(doc.selection_changed, timeout=2000) as blocker:
        qtbot.mouseClick(view.canvas, Qt.MouseButton.LeftButton, pos=_cell_pos(view, 4, 3))
    assert blocker.args[0] == Selection("kernels", int(view.matrix.kernel_rows[view.order[4]]))
    assert view.canvas.highlight == {4}


def test_header_click_sorts_rows_and_reverses(view, qtbot):
    col = view.matrix.column_index("Duration")
    x = HeatmapCanvas.LABEL_W + col * HeatmapCanvas.CELL_W + 4
    qtbot.mouseClick(view.canvas, Qt.MouseButton.LeftButton, pos=QPoint(x, 40))
    v = view.matrix.values[view.order, col]
    assert np.all(np.diff(v) <= 0) and view.canvas.sort_desc
    qtbot.mouseClick(view.canvas, Qt.MouseButton.LeftButton, pos=QPoint(x, 40))
    v = view.matrix.values[view.order, col]
    assert np.all(np.diff(v) >= 0) and not view.canvas.sort_desc


def test_cluster_keeps_every_row(view, qtbot):
    with qtbot.waitSignal(view.matrix_ready, timeout=10_000):
        view.cluster_button.click()
    assert sorted(view.order.tolist()) == list(range(view.matrix.shape[0]))
    # the two kernels (vadd, scale) end up as two contiguous blocks
    labels = [view.matrix.row_labels[i] for i in view.order]
    assert sum(a != b for a, b in zip(labels, labels[1:])) == 1


def test_per_kernel_toggle_and_normalisations(view, qtbot):
    with qtbot.waitSignal(view.matrix_ready, timeout=2000):
        view.per_combo.setCurrentIndex(1)
    assert view.matrix.per == "kernel" and view.matrix.shape[0] == 2
    with qtbot.waitSignal(doc_sel := view.document.selection_changed, timeout=2000):
        qtbot.mouseClick(view.canvas, Qt.MouseButton.LeftButton,
                         pos=QPoint(20, _cell_pos(view, 1, 0).y()))
    del doc_sel
    for i in range(view.norm_combo.count()):
        view.norm_combo.setCurrentIndex(i)
        assert view.canvas.image is not None


def test_tooltip_has_raw_value_unit_and_formula(view):
    m = view.matrix
    j = m.column_index("Occupancy achieved/theoretical")
    tip = view._tooltip(0, j)
    assert "%" in tip and "Achieved Occupancy / Theoretical Occupancy" in tip
    j = m.column_index("Duration")
    r = int(view.order[0])
    assert ca.format_value(m.values[r, j], "ns") in view._tooltip(0, j)


def test_filter_and_time_panel_follow_the_window(view, qtbot):
    view.filter_edit.setText("cycles")
    view.filter_edit.editingFinished.emit()
    assert all("cycles" in n.lower() for n in view.matrix.column_names())
    t0, t1 = view.document.full_range()
    with qtbot.waitSignal(view.time_updated, timeout=2000):
        view.document.view_state.set_window(t0, t0 + (t1 - t0) // 4)
    assert view.time_canvas.image is not None and view.time_canvas.rows


def test_rocprof_compute_many_counters(qtbot):
    doc = Document()
    v = CounterHeatmapView(doc)
    qtbot.addWidget(v)
    with qtbot.waitSignal(v.matrix_ready, timeout=20_000):
        doc.set_trace(open_trace(RPC))
    n_all = v.dispatch_matrix.shape[1]
    assert n_all > 2000 and v.matrix.shape[1] < 200       # instances and constants hidden
    with qtbot.waitSignal(v.matrix_ready, timeout=2000):
        v.instances_box.setChecked(True)
    assert v.matrix.shape[1] > 200


def test_empty_state(qtbot, tiny_trace):
    doc = Document()
    v = CounterHeatmapView(doc)
    qtbot.addWidget(v)
    with qtbot.waitSignal(v.matrix_ready, timeout=2000):
        doc.set_trace(tiny_trace)
    assert v.is_empty and v.empty.text() == EMPTY_TEXT
    assert "rocprofv3 --pmc" in EMPTY_TEXT
    v.resize(400, 300)
    v.grab()
