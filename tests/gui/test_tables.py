"""Kernel summary and all-kernels tables: model contract, sort/filter vs numpy,
selection both ways, copy as CSV."""

from __future__ import annotations

import csv
import io
import re

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QGuiApplication

from hipscope.analysis.stats import kernel_stats
from hipscope.model.view_state import Filters, Selection
from hipscope.qt.document import Document
from hipscope.views.tables import (
    KernelsTableModel,
    KernelsTableView,
    KernelSummaryModel,
    KernelSummaryView,
)
from hipscope.views.tables.columnar import stable_order
from tests.data.fixtures.big_trace import big_trace


@pytest.fixture
def doc(qtbot, tiny_trace):
    d = Document()
    d.set_trace(tiny_trace)
    return d


@pytest.fixture
def kview(qtbot, tiny_trace):
    d = Document()
    v = KernelsTableView(d)
    qtbot.addWidget(v)
    d.set_trace(tiny_trace)
    return v


def test_kernels_model_contract(qtmodeltester, tiny_trace):
    m = KernelsTableModel()
    qtmodeltester.check(m)                       # empty
    m.set_trace(tiny_trace)
    qtmodeltester.check(m)
    m.sort(m.column_of("duration_ns"), Qt.SortOrder.DescendingOrder)
    m.set_filters(Filters(name_regex="gemm|soft"))
    qtmodeltester.check(m)
    assert m.rowCount() > 0


def test_kernels_model_contract_async(qtmodeltester, qtbot, tiny_trace):
    """A model over the async threshold sorts and filters in a worker, same results."""
    m = KernelsTableModel()
    m.async_rows = 10
    m.set_trace(tiny_trace)
    assert m.is_async() and not m.busy
    qtmodeltester.check(m)
    dur_col = m.column_of("duration_ns")
    with qtbot.waitSignal(m.rows_ready):
        m.sort(dur_col, Qt.SortOrder.DescendingOrder)
        assert m.busy == "Sorting…"
    qtmodeltester.check(m)
    k = tiny_trace.kernels
    dur = k.numpy("end") - k.numpy("start")
    assert np.array_equal(m.view_index, np.argsort(-dur, kind="stable"))
    with qtbot.waitSignal(m.modelReset):
        m.set_filters(Filters(name_regex="gemm|soft("))
        assert m.busy == "Filtering…"
    assert m.filter_error and m.rowCount() == 0
    with qtbot.waitSignal(m.rows_ready):
        m.set_filters(Filters(name_regex="gemm|soft"))
    qtmodeltester.check(m)
    assert not m.filter_error and 0 < m.rowCount() < len(k)
    m.set_trace(None)                            # a pending request is dropped
    assert m.rowCount() == 0 and not m.busy
    m.shutdown()


def test_summary_model_contract(qtmodeltester, tiny_trace):
    m = KernelSummaryModel()
    qtmodeltester.check(m)
    m.set_trace(tiny_trace)
    qtmodeltester.check(m)
    m.sort(0)
    qtmodeltester.check(m)


def test_stable_order_matches_numpy_and_keeps_ties():
    key = np.array([3, 1, 2, 1, 3, 0, 2], dtype=np.int64)
    assert list(stable_order(key, False)) == list(np.argsort(key, kind="stable"))
    desc = stable_order(key, True)
    assert list(key[desc]) == sorted(key, reverse=True)
    assert list(desc) == [0, 4, 2, 6, 1, 3, 5]           # ties in source order
    f = np.array([2.0, np.nan, 1.0])
    assert list(stable_order(f, False)) == [2, 0, 1]     # NaN last both ways
    assert list(stable_order(f, True)) == [0, 2, 1]


@pytest.mark.parametrize("order", [Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder])
def test_sort_matches_numpy(tiny_trace, order):
    m = KernelsTableModel()
    m.set_trace(tiny_trace)
    k = tiny_trace.kernels
    dur = k.numpy("end") - k.numpy("start")
    m.sort(m.column_of("duration_ns"), order)
    desc = order == Qt.SortOrder.DescendingOrder
    expect = np.argsort(-dur if desc else dur, kind="stable")
    assert np.array_equal(m.view_index, expect)
    # names sort alphabetically, ties by source row
    codes, cats = k.codes("name")
    names = np.array([cats[c] for c in codes])
    m.sort(m.column_of("name"), Qt.SortOrder.AscendingOrder)
    assert np.array_equal(m.view_index, np.argsort(names, kind="stable"))
    # the displayed text follows the permutation
    r = m.view_index[0]
    assert m.data(m.index(0, 0)) == names[r]
    m.sort(-1)
    assert np.array_equal(m.view_index, np.arange(len(k)))


def test_filters_match_numpy(tiny_trace):
    m = KernelsTableModel()
    m.set_trace(tiny_trace)
    k = tiny_trace.kernels
    codes, cats = k.codes("name")
    names = np.array([cats[c] for c in codes])
    dur = k.numpy("end") - k.numpy("start")
    dev, stream = k.numpy("device"), k.numpy("stream")
    lo, hi = int(np.quantile(dur, 0.2)), int(np.quantile(dur, 0.9))
    f = Filters(name_regex="^(GEMM|soft)", devices=frozenset({1}), streams=frozenset({7, 8}),
                min_duration_ns=lo, max_duration_ns=hi)
    m.set_filters(f)
    rx = re.compile(f.name_regex, re.IGNORECASE)
    mask = (np.array([bool(rx.search(n)) for n in names]) & (dev == 1)
            & np.isin(stream, [7, 8]) & (dur >= lo) & (dur <= hi))
    assert mask.any() and not mask.all()
    assert np.array_equal(m.view_index, np.flatnonzero(mask))
    # filter + sort together
    m.sort(m.column_of("start_ns"), Qt.SortOrder.DescendingOrder)
    rows = np.flatnonzero(mask)
    start = k.numpy("start")
    assert np.array_equal(m.view_index, rows[np.argsort(-start[rows], kind="stable")])
    assert m.rowCount() == mask.sum()


def test_invalid_regex_is_matched_as_text(tiny_trace):
    m = KernelsTableModel()
    m.set_trace(tiny_trace)
    m.set_filters(Filters(name_regex="at::xyz<4"))        # '<' fine, now an invalid one:
    n_plain = m.rowCount()
    m.set_filters(Filters(name_regex="xyz<4>("))
    assert m.filter_error
    assert m.rowCount() == 0
    m.set_filters(Filters(name_regex="void at::xyz<4>"))
    assert m.rowCount() == n_plain > 0


def test_filters_follow_view_state(kview, qtbot):
    vs = kview.document.view_state
    vs.set_filters(name_regex="softmax")
    assert kview.name_edit.text() == "softmax"
    names = {kview.model.data(kview.model.index(r, 0)) for r in range(kview.model.rowCount())}
    assert names == {"softmax_fwd"}
    assert "of 60 kernels" in kview.count_label.text()
    # and the bar sets view_state
    kview.name_edit.setText("gemm")
    qtbot.waitUntil(lambda: vs.filters.name_regex == "gemm")
    kview.device_combo.setCurrentIndex(kview.device_combo.findData(1))
    kview.device_combo.activated.emit(kview.device_combo.currentIndex())
    assert vs.filters.devices == frozenset({1})
    kview.min_edit.setText("10us")
    kview.min_edit.editingFinished.emit()
    assert vs.filters.min_duration_ns == 10_000


def test_table_selection_sets_view_state(kview, qtbot):
    m = kview.model
    m.sort(m.column_of("duration_ns"), Qt.SortOrder.DescendingOrder)
    with qtbot.waitSignal(kview.document.selection_changed) as blocker:
        kview.table.selectRow(3)
    assert blocker.args == [Selection("kernels", int(m.view_index[3]))]


def test_view_state_selection_selects_and_scrolls(kview, qtbot):
    kview.resize(900, 200)
    kview.show()
    qtbot.waitExposed(kview)
    m = kview.model
    m.sort(m.column_of("start_ns"), Qt.SortOrder.DescendingOrder)
    kview.document.view_state.select(Selection("kernels", 0))   # last row in this order
    row = m.view_row(0)
    assert row == m.rowCount() - 1
    assert kview.table.currentIndex().row() == row
    assert kview.table.selectionModel().isRowSelected(row)
    rect = kview.table.visualRect(m.index(row, 0))
    assert kview.table.viewport().rect().intersects(rect)        # scrolled into view
    # a selection that is filtered out clears the table selection, no crash
    kview.document.view_state.set_filters(devices=frozenset({1}))
    assert not kview.table.selectionModel().hasSelection()


def test_copy_rows_as_csv(kview, qtbot, tiny_trace):
    m = kview.model
    m.sort(m.column_of("duration_ns"), Qt.SortOrder.AscendingOrder)
    kview.table.selectRow(2)
    kview.table.selectionModel().select(
        m.index(5, 0), kview.table.selectionModel().SelectionFlag.Select
        | kview.table.selectionModel().SelectionFlag.Rows)
    kview.table.setFocus()
    kview.table.copy_action.trigger()
    text = QGuiApplication.clipboard().text()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 2
    k = tiny_trace.kernels
    codes, cats = k.codes("name")
    t0 = tiny_trace.time_range()[0]
    for view_row, rec in zip((2, 5), rows):
        src = int(m.view_index[view_row])
        assert rec["name"] == cats[codes[src]]
        assert int(rec["duration_ns"]) == k.numpy("end")[src] - k.numpy("start")[src]
        assert int(rec["start_ns"]) == k.numpy("start")[src] - t0
        assert int(rec["stream"]) == k.numpy("stream")[src]
        assert rec["grid"] == "4096x1x1"
        api_start = tiny_trace.api.numpy("start")[src]
        assert int(rec["queue_delay_ns"]) == k.numpy("start")[src] - api_start


def test_kernels_view_create_load_resize_close(qtbot, tiny_trace):
    d = Document()
    v = KernelsTableView(d)
    qtbot.addWidget(v)
    v.show()
    d.set_trace(tiny_trace)
    v.resize(1000, 300)
    qtbot.waitExposed(v)
    assert v.model.rowCount() == len(tiny_trace.kernels)
    assert not v.grab().isNull()
    assert v.close()


def test_summary_view_create_load_resize_close(qtbot, tiny_trace):
    d = Document()
    v = KernelSummaryView(d)
    qtbot.addWidget(v)
    v.show()
    d.set_trace(tiny_trace)
    v.resize(800, 250)
    qtbot.waitExposed(v)
    st = kernel_stats(tiny_trace)
    m = v.model
    assert m.rowCount() == len(st.names)
    # shown by total time, largest first
    assert np.array_equal(m.view_index, np.argsort(-st.total, kind="stable"))
    top = int(np.argmax(st.total))
    assert m.data(m.index(0, 0)) == st.names[top]
    frac = m.data(m.index(0, 7), Qt.ItemDataRole.UserRole + 1)
    assert frac == pytest.approx(st.total[top] / st.total.sum())
    assert v.close()


def test_summary_double_click_filters_kernels(qtbot, tiny_trace):
    d = Document()
    s, k = KernelSummaryView(d), KernelsTableView(d)
    qtbot.addWidget(s)
    qtbot.addWidget(k)
    d.set_trace(tiny_trace)
    s.table.doubleClicked.emit(s.model.index(0, 0))
    name = s.model.data(s.model.index(0, 0))
    shown = {k.model.data(k.model.index(r, 0)) for r in range(k.model.rowCount())}
    assert shown == {name}
    assert k.model.rowCount() == int(s.model.data(s.model.index(0, 1)).replace(",", ""))


def _click_header(qtbot, view, column: int) -> None:
    header = view.table.horizontalHeader()
    x = header.sectionViewportPosition(column) + header.sectionSize(column) // 2
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton,
                     pos=QPoint(x, header.height() // 2))


def test_sorting_2m_rows_in_a_worker(qtbot):
    """Sorting a 2M-kernel table runs in a worker (a busy label shows meanwhile): the
    result is numpy's stable argsort, the selection stays on its kernel, and a second
    click cancels the first (latest wins). The GUI-thread stall is measured by
    benchmarks/gui_stall.py, not asserted here."""
    n = 2_000_000
    trace = big_trace(n)
    d = Document()
    v = KernelsTableView(d)
    qtbot.addWidget(v)
    v.resize(1600, 400)
    v.show()
    qtbot.waitExposed(v)
    m = v.model
    with qtbot.waitSignal(m.rows_ready, timeout=30_000):
        d.set_trace(trace)                       # sorted by start in a worker
    start = trace.kernels.numpy("start")
    assert np.array_equal(m.view_index, np.argsort(start, kind="stable"))
    d.view_state.select(Selection("kernels", 12_345))
    assert v.table.selectionModel().isRowSelected(m.view_row(12_345))

    # expected orders first, before the clicks start the workers
    dur = trace.kernels.numpy("end") - start
    stream = trace.kernels.numpy("stream")
    expect = {(key, desc): np.argsort(-a if desc else a, kind="stable")
              for key, a in (("dur", dur), ("stream", stream)) for desc in (False, True)}

    col = m.column_of("duration_ns")
    with qtbot.waitSignal(m.rows_ready, timeout=30_000):
        _click_header(qtbot, v, col)
        assert m.busy and v.busy_label.isVisible() and v.busy_label.text() == "Sorting…"
    assert v.table.horizontalHeader().sortIndicatorSection() == col
    desc = v.table.horizontalHeader().sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
    assert np.array_equal(m.view_index, expect["dur", desc])
    assert not m.busy and not v.busy_label.isVisible()
    row = m.view_row(12_345)                     # the selection followed its kernel
    assert v.table.currentIndex().row() == row
    assert v.table.selectionModel().isRowSelected(row)

    # two clicks in a row: the first request is cancelled, the second one is shown
    ready: list[int] = []
    m.rows_ready.connect(lambda: ready.append(1))
    _click_header(qtbot, v, m.column_of("name"))
    _click_header(qtbot, v, m.column_of("stream"))
    qtbot.waitUntil(lambda: not m.busy, timeout=30_000)
    assert ready == [1]
    desc = v.table.horizontalHeader().sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
    assert np.array_equal(m.view_index, expect["stream", desc])
    assert v.close()


def test_distinct_ids_equals_numpy_unique():
    """The filter combos' fast distinct ids (bincount for small ids) match np.unique."""
    from hipscope.views.tables.views import _distinct_ids

    rng = np.random.default_rng(3)
    for ids in (rng.integers(-1, 40, 10_000), rng.integers(0, 2**40, 100),
                np.array([7, 7, -1]), np.zeros(0, dtype=np.int64)):
        assert _distinct_ids(ids).tolist() == np.unique(ids).tolist()
