"""Issue 16 item 4: default docks per tab kind at 1920x1080 leave the timeline most
of the screen, and every dock shows its data at its default size."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget

from hipscope.app.main_window import MainWindow

from .conftest import make_tiny_trace

DATA = Path(__file__).resolve().parents[1] / "data"
EAGER, GRAPH = DATA / "eager.json.gz", DATA / "graph.json.gz"


def tiny_loader(paths, progress, cancelled):
    return make_tiny_trace()


@pytest.fixture
def window(qtbot):
    w = MainWindow(persist=False, loader=tiny_loader)
    qtbot.addWidget(w)
    w.resize(1920, 1080)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.close()
    assert w.runner.active_count() == 0


def _open(qtbot, w, tmp_path):
    p = tmp_path / "tiny.trace"
    p.write_text("stand-in; the injected loader builds the trace")
    (tab,) = w.open_paths([p])
    qtbot.waitUntil(lambda: tab.state == "loaded", timeout=20_000)
    qtbot.waitUntil(lambda: all(not tl.preparing for tl in tab.timelines), timeout=20_000)
    return tab


def test_trace_tab_gives_the_timeline_most_of_the_screen(window, qtbot, tmp_path):
    tab = _open(qtbot, window, tmp_path)
    timeline = tab.timelines[0]
    details = window.docks["details"]
    summary = window.docks["summary"]
    assert window.dockWidgetArea(details) == Qt.DockWidgetArea.BottomDockWidgetArea
    assert details.isVisible() and summary.isVisible()
    # Details sits beside the tables, not in a full-height column
    assert details.geometry().left() >= summary.geometry().right()
    assert details.geometry().top() >= timeline.mapTo(window, timeline.rect().bottomLeft()).y()
    assert timeline.width() >= 0.95 * window.width()
    from hipscope.views.timeline.render import LABEL_W
    assert timeline.track_rect.x() == LABEL_W          # the label column at its default
    assert timeline.height() >= 0.5 * window.height()
    # the bottom strip still shows a table's rows
    assert summary.height() >= 250


def test_queue_delay_worst_launches_show_many_rows(window, qtbot, tmp_path):
    tab = _open(qtbot, window, tmp_path)
    window.docks["queue_delay"].raise_()
    view = tab.panels["queue_delay"]
    qtbot.waitUntil(lambda: view.table.rowCount() > 0, timeout=20_000)
    qtbot.waitUntil(lambda: view.table.isVisible(), timeout=5_000)
    t = view.table
    shown = t.viewport().height() // max(t.rowHeight(0), 1)
    assert shown >= 8, f"only {shown} rows of the worst launches fit"


def test_comparison_tab_has_the_whole_window(window, qtbot, tmp_path):
    _open(qtbot, window, tmp_path)
    window.runs_dock.show()
    window.runs_dock.raise_()
    tab = window.compare_paths([EAGER, GRAPH])
    qtbot.waitUntil(lambda: tab.state != "loading", timeout=60_000)
    shown = [d for d in window.findChildren(QDockWidget) if d.isVisible()]
    assert shown == []                         # the Runs dock stepped aside too
    assert tab.height() >= 0.85 * window.centralWidget().height()
    window.tabs.setCurrentIndex(0)             # back on the trace tab: docks return
    assert window.runs_dock.isVisible() and window.docks["summary"].isVisible()


NCU = Path("/work/shared/samples/ncu-csv/h200-generated/ncu_raw_metrics.csv")


@pytest.mark.skipif(not NCU.exists(), reason="real ncu sample not present")
def test_counters_dock_shows_rows_and_distinct_column_names(qtbot):
    import csv

    with open(NCU, newline="") as f:        # the counters the file has (raw csv)
        lines = [ln for ln in f if not ln.startswith("==") and ln.strip() != "ok"]
    header = next(csv.reader(lines))
    w = MainWindow(persist=False)
    qtbot.addWidget(w)
    w.resize(1920, 1080)
    w.show()
    try:
        (tab,) = w.open_paths([NCU])
        qtbot.waitUntil(lambda: tab.state == "loaded", timeout=30_000)
        w.docks["counters"].raise_()
        view = tab.panels["counters"]
        canvas = view.canvas
        qtbot.waitUntil(lambda: len(canvas.rows) > 0, timeout=30_000)
        qtbot.waitUntil(lambda: view.scroll.isVisible(), timeout=5_000)
        # rows of data below the column names, at the dock's default height
        rows_visible = (view.scroll.viewport().height() - canvas.header_h) // canvas.CELL_H
        assert rows_visible >= 3
        # every column name as drawn is told apart from the others
        assert len(set(canvas.col_texts)) == len(canvas.cols)
        raw = [c for c in canvas.cols if c in header]
        assert raw, "the drawn columns are the file's counters"
        longest = max(canvas.cols, key=len)
        assert len(longest) > 20 and longest not in canvas.col_texts   # cut, not clipped
    finally:
        w.close()
