"""Issue 16 item 10: a measured range gives a per-name table (count, time, mean,
share); the kernel summary drives the timeline; sorting by duration starts with the
longest and shows the top."""

from __future__ import annotations

from collections import defaultdict

import pytest
from PySide6.QtCore import QPoint, Qt

from hipscope.analysis.area import area_rows
from hipscope.model.view_state import Selection
from hipscope.views.timeline.render import AXIS_H, LABEL_W

from .conftest import make_tiny_trace


def _raw_area(trace, kind, t0, t1):
    """name -> [count, clipped time] from the raw columns, plain Python."""
    tab = getattr(trace, kind)
    out = defaultdict(lambda: [0, 0])
    for n, s, e in zip(tab.column("name").to_pylist(), tab.column("start").to_pylist(),
                       tab.column("end").to_pylist()):
        if s < t1 and e > t0:
            out[n][0] += 1
            out[n][1] += min(e, t1) - max(s, t0)
    return dict(out)


@pytest.fixture
def window(tiny_window):
    return tiny_window()


def test_area_rows_match_the_raw_events():
    trace = make_tiny_trace(120)
    lo, hi = trace.time_range()
    t0, t1 = lo + (hi - lo) // 5, lo + (hi - lo) // 2
    rows = area_rows(trace, t1, t0)                     # either order
    for kind in ("kernels", "api"):
        want = _raw_area(trace, kind, t0, t1)
        got = {r.name: r for r in rows if r.kind == kind}
        assert set(got) == set(want)
        total = sum(v[1] for v in want.values())
        for name, (count, clipped) in want.items():
            r = got[name]
            assert (r.count, r.total_ns) == (count, clipped)
            assert r.mean_ns == pytest.approx(clipped / count)
            assert r.share == pytest.approx(clipped / total)
        totals = [got[n].total_ns for n in got]
    kern = [r.total_ns for r in rows if r.kind == "kernels"]
    assert kern == sorted(kern, reverse=True) and totals


def test_dragging_the_ruler_fills_the_range_panel(qtbot, window):
    w, tab = window
    tl = tab.timeline
    panel = tab.panels["area"]
    a, b = QPoint(LABEL_W + 200, AXIS_H // 2), QPoint(LABEL_W + 600, AXIS_H // 2)
    with qtbot.waitSignal(panel.shown):
        qtbot.mousePress(tl, Qt.MouseButton.LeftButton, pos=a)
        qtbot.mouseMove(tl, b)
        qtbot.mouseRelease(tl, Qt.MouseButton.LeftButton, pos=b)
    t0, t1 = tab.document.view_state.area
    assert (t0, t1) == tuple(sorted(tl.ruler))
    want = _raw_area(tab.document.trace, "kernels", t0, t1)
    shown = {panel.table.item(i, 1).text(): panel.table.item(i, 2).text()
             for i in range(panel.table.rowCount())
             if panel.table.item(i, 0).text() == "kernel"}
    assert shown == {n: f"{c:,}" for n, (c, _t) in want.items()}
    assert f"{sum(c for c, _t in want.values()):,} kernels" in panel.title.text()
    # a click on the axis clears the ruler, and the table
    with qtbot.waitSignal(panel.shown):
        qtbot.mouseClick(tl, Qt.MouseButton.LeftButton, pos=a)
    assert tab.document.view_state.area is None and panel.table.rowCount() == 0


def test_summary_click_highlights_and_double_click_raises_kernels(qtbot, window):
    w, tab = window
    summary = tab.panels["summary"]
    names = tab.document.trace.kernels.column("name").to_pylist()
    view_row = next(i for i in range(summary.model.rowCount())
                    if summary.model.name(summary.model.source_row(i)) == "softmax_fwd")
    idx = summary.model.index(view_row, 0)
    rect = summary.table.visualRect(idx)
    qtbot.mouseClick(summary.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: tab.timeline.found is not None)
    mask = tab.timeline.found.masks["kernels"]
    assert mask.tolist() == [n == "softmax_fwd" for n in names]
    assert (w.find_edit.text(), w.find_regex.isChecked()) == ("^softmax_fwd$", True)
    assert w.find_bar.count.text() == f"{names.count('softmax_fwd')} matches"
    qtbot.mouseDClick(summary.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    kernels = tab.panels["kernels"]
    qtbot.waitUntil(lambda: kernels.model.rowCount() == names.count("softmax_fwd"))
    qtbot.waitUntil(lambda: not w.docks["kernels"].visibleRegion().isEmpty())
    assert w.docks["summary"].visibleRegion().isEmpty()   # behind the raised kernels


def test_sorting_by_duration_starts_descending_at_the_top(qtbot, window):
    w, tab = window
    kernels = tab.panels["kernels"]
    w.docks["kernels"].raise_()
    w.resizeDocks([w.docks["kernels"]], [220], Qt.Orientation.Vertical)
    k = tab.document.trace.kernels
    dur = (k.numpy("end") - k.numpy("start")).tolist()
    shortest = min(range(len(dur)), key=dur.__getitem__)
    tab.document.view_state.select(Selection("kernels", shortest))
    col = kernels.model.column_of("duration_ns")
    hh = kernels.table.horizontalHeader()
    x = hh.sectionViewportPosition(col) + hh.sectionSize(col) // 2
    qtbot.mouseClick(hh.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, hh.height() // 2))
    assert hh.sortIndicatorSection() == col
    assert hh.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
    first = kernels.model.source_row(0)
    assert dur[first] == max(dur)
    assert kernels.table.verticalScrollBar().value() == 0
    assert kernels.table.rowAt(0) == 0                      # the top row is shown


def test_range_table_sorts_numbers_biggest_first(qtbot, window):
    w, tab = window
    panel = tab.panels["area"]
    lo, hi = tab.document.full_range()
    with qtbot.waitSignal(panel.shown):
        tab.timeline.measure(lo, hi)
    hh = panel.table.horizontalHeader()
    x = hh.sectionViewportPosition(2) + hh.sectionSize(2) // 2
    qtbot.mouseClick(hh.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, hh.height() // 2))
    assert hh.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
    counts = [int(panel.table.item(i, 2).text().replace(",", ""))
              for i in range(panel.table.rowCount())]
    assert counts == sorted(counts, reverse=True) and counts[0] == len(tab.document.trace.api)
