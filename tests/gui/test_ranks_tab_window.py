"""The Ranks tab in the main window: File > Open Ranks…, double-clicks that open a rank's
timeline (a real Kineto rank file, through the window's normal open path) at the time
asked, Compare of two selected ranks, and the real engine on the two-rank HTA folder."""

from __future__ import annotations

import gzip
import json
import sys
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QItemSelectionModel, QPointF, Qt

from hipscope.app import ranks_ui
from hipscope.app.actions import ActionId
from hipscope.app.compare_tab import CompareTab
from hipscope.app.trace_tab import TraceTab
from hipscope.model.progress import Cancelled
from hipscope.views.ranks import RanksTab

from ..conftest import SAMPLES
from . import ranks_fixture as fx

HTA = SAMPLES / "kineto" / "multirank-sampled-hta"
RANK_FILES = [HTA / "sampled_rank-0.json.gz", HTA / "sampled_rank-1.json.gz"]


def first_kernel_ns(path: Path) -> int:
    """The file's first kernel start, ns (Kineto µs since the epoch), by plain json."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    return int(min(e["ts"] for e in events if e.get("cat") == "kernel") * 1000)


@pytest.fixture(scope="module")
def t0() -> int:
    return first_kernel_ns(RANK_FILES[0])


@pytest.fixture
def window(make_window):
    return make_window(persist=False)


def open_fixture(qtbot, w, t0: int) -> RanksTab:
    """The fixture job whose ranks' files are the two real HTA ranks (even, odd)."""
    ov = fx.make_overview(sources={r: str(RANK_FILES[r % 2]) for r in range(fx.RANKS)}, t0=t0)

    def analyse(paths, *, progress, cancelled, **options):
        return ov

    tab = ranks_ui.open_ranks(w, [str(HTA)], analyse=analyse)
    qtbot.waitUntil(lambda: tab.state == "loaded", timeout=10_000)
    return tab


def double_click(qtbot, widget, pos) -> None:
    """The events a person's double-click makes: press, release, double-click, release
    (Qt 6's QTest.mouseDClick sends the double-click event alone; item views act on the
    index pressed first, pyqtgraph's scene on the release)."""
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton, pos=pos)
    qtbot.mouseDClick(widget, Qt.MouseButton.LeftButton, pos=pos)
    qtbot.mouseRelease(widget, Qt.MouseButton.LeftButton, pos=pos)


def trace_tab_for(qtbot, w, path: Path) -> TraceTab:
    def found():
        return next((t for t in w.tab_list() if isinstance(t, TraceTab)
                     and t.paths == [path] and t.state == "loaded"), None)
    qtbot.waitUntil(lambda: found() is not None, timeout=60_000)
    return found()


def test_file_open_ranks_opens_a_ranks_tab_with_the_dialogs_choice(qtbot, window, monkeypatch):
    from hipscope.views.ranks.open_dialog import OpenRanksDialog

    def pick(dialog) -> int:           # the person types a folder, picks "in this process"
        dialog.path_edit.setText(str(HTA))
        dialog.engine.setCurrentIndex(dialog.engine.findData("serial"))
        return OpenRanksDialog.DialogCode.Accepted

    monkeypatch.setattr(OpenRanksDialog, "exec", pick)
    monkeypatch.setitem(sys.modules, "hipscope.ranks.engine", None)   # a fixed outcome
    window.action_by_id[ActionId.OPEN_RANKS].trigger()
    tab = window.tabs.currentWidget()
    assert isinstance(tab, RanksTab)
    assert (tab.job_paths, tab.controller.options) == ([str(HTA)], {"workers": 0})
    qtbot.waitUntil(lambda: tab.state == "failed", timeout=10_000)


def test_the_ranks_tab_takes_the_window(qtbot, window, t0):
    tab = open_fixture(qtbot, window, t0)
    assert window.tabs.currentWidget() is tab
    assert window.tabs.tabText(window.tabs.indexOf(tab)) == "Ranks: multirank-sampled-hta"
    assert window.windowTitle() == "Ranks: multirank-sampled-hta — hipscope"
    assert not any(d.isVisible() for d in window.docks.values())   # its panels are inside


def test_double_click_a_rank_row_opens_its_timeline_over_its_span(qtbot, window, t0):
    tab = open_fixture(qtbot, window, t0)
    table = tab.view.rank_table
    row = next(i for i, r in enumerate(table.shown_rows()) if r.rank == 1)
    rect = table.visualRect(table.model().index(row, 0))
    double_click(qtbot, table.viewport(), rect.center())
    trace = trace_tab_for(qtbot, window, RANK_FILES[1])
    assert window.tabs.currentWidget() is trace
    # rank 1's span in the fixture: t0 + 1 µs .. t0 + 200 ms - 1 µs
    assert trace.document.view_state.window == (t0 + 1_000, t0 + fx.BINS * fx.BIN - 1_000)


def test_double_click_a_heatmap_cell_opens_that_rank_there(qtbot, window, t0):
    tab = open_fixture(qtbot, window, t0)
    hm = tab.view.heatmap
    rank, col = 2, 50                  # rank 2 is the even file
    scene = hm.plotItem.vb.mapViewToScene(QPointF((col + 0.5) * fx.BIN / 1e9, rank))
    pos = hm.mapFromScene(scene)
    with qtbot.waitSignal(hm.activated, timeout=5_000) as sig:
        double_click(qtbot, hm.viewport(), pos)
    assert sig.args == [(rank, col)]
    trace = trace_tab_for(qtbot, window, RANK_FILES[0])
    # the cell's bin, with 2 bins either side
    assert trace.document.view_state.window == (t0 + (col - 2) * fx.BIN,
                                                t0 + (col + 3) * fx.BIN)


def test_double_click_a_collective_opens_its_last_rank_at_it(qtbot, window, t0):
    tab = open_fixture(qtbot, window, t0)
    sk = tab.view.skew
    i = 7                               # the straggler (rank 5, odd file) is last
    arrivals = [fx.arrival(i, r, t0) for r in range(fx.RANKS)]
    x = (min(arrivals) - t0) / 1e9
    y = (max(arrivals) - min(arrivals)) / 1e9
    pos = sk.mapFromScene(sk.plotItem.vb.mapViewToScene(QPointF(x, y)))
    with qtbot.waitSignal(sk.activated, timeout=5_000):
        double_click(qtbot, sk.viewport(), pos)
    trace = trace_tab_for(qtbot, window, RANK_FILES[1])
    first, last_end = min(arrivals), max(arrivals) + 300_000
    pad = int((last_end - first) * 0.25)
    assert trace.document.view_state.window == (first - pad, last_end + pad)


def test_an_open_rank_tab_is_reused_and_moved_to_the_new_time(qtbot, window, t0):
    tab = open_fixture(qtbot, window, t0)
    tab.view.open_cell(0, 10)
    trace = trace_tab_for(qtbot, window, RANK_FILES[0])
    tab.view.open_cell(4, 100)           # rank 4: the same file
    assert trace.document.view_state.window == (t0 + 98 * fx.BIN, t0 + 103 * fx.BIN)
    assert sum(isinstance(t, TraceTab) for t in window.tab_list()) == 1


def test_compare_two_selected_ranks_opens_a_comparison_tab(qtbot, window, t0):
    tab = open_fixture(qtbot, window, t0)
    table = tab.view.rank_table
    sel = table.selectionModel()
    flags = QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
    assert not tab.view.compare_button.isEnabled()
    for rank in (0, 1):
        row = next(i for i, r in enumerate(table.shown_rows()) if r.rank == rank)
        sel.select(table.model().index(row, 0), flags)
    assert tab.view.compare_button.isEnabled()
    tab.view.compare_button.click()
    cmp = window.tabs.currentWidget()
    assert isinstance(cmp, CompareTab)
    assert cmp.paths == RANK_FILES                        # rank 0 is A
    qtbot.waitUntil(lambda: cmp.state != "loading", timeout=120_000)
    assert cmp.state == "loaded", cmp.error


def test_the_real_engine_on_the_two_rank_hta_folder(qtbot, window):
    pytest.importorskip("hipscope.ranks.engine")
    tab = ranks_ui.open_ranks(window, [str(HTA)], options={"workers": 0})
    qtbot.waitUntil(lambda: tab.state != "loading", timeout=120_000)
    assert tab.state == "loaded", tab.error
    ranks = []
    for p in RANK_FILES:                 # the ranks the files say, by plain json
        with gzip.open(p, "rt") as f:
            ranks.append(json.load(f)["distributedInfo"]["rank"])
    shown = tab.view.rank_table.shown_rows()
    assert [r.rank for r in shown] == ranks
    assert [Path(r.source).name for r in shown] == [p.name for p in RANK_FILES]
    assert tab.view.heatmap.matrix.shape[0] == 2
    tab.view.open_rank(shown[0])
    trace = trace_tab_for(qtbot, window, Path(shown[0].source))
    assert trace.document.view_state.window == (shown[0].start_ns, shown[0].end_ns)


def test_hipscope_path_ranks_opens_a_ranks_tab(qapp, tmp_path, capsys, monkeypatch):
    """``hipscope FOLDER --ranks`` routes to a Ranks tab (here in a build without the
    engine, so the outcome is fixed: the tab says why, the screenshot run exits 2)."""
    from hipscope.cli.main import main
    from hipscope.qt.ranks import ENGINE_MISSING

    monkeypatch.setitem(sys.modules, "hipscope.ranks.engine", None)      # import fails
    out = tmp_path / "ranks.png"
    assert main([str(HTA), "--ranks", "--screenshot", str(out)]) == 2
    state = json.loads(out.with_suffix(".json").read_text())
    assert state["tabs"] == [{"title": "⚠ Ranks: multirank-sampled-hta", "state": "failed",
                              "kind": "ranks", "current": True}]
    assert f"hipscope: {ENGINE_MISSING}" in capsys.readouterr().err


def test_cancel_in_the_window_closes_the_tab_and_stops_the_job(qtbot, window):
    stopped = threading.Event()

    def analyse(paths, *, progress, cancelled, **options):
        progress(0.5)
        poll = threading.Event()
        while not cancelled():
            poll.wait(0.005)
        stopped.set()
        raise Cancelled()

    tab = ranks_ui.open_ranks(window, [str(HTA)], analyse=analyse)
    qtbot.waitUntil(lambda: tab.progress_bar.value() == 500, timeout=10_000)
    tab.cancel_button.click()
    qtbot.waitUntil(lambda: tab not in window.tab_list(), timeout=10_000)
    assert stopped.wait(10)
    qtbot.waitUntil(lambda: window.runner.active_count() == 0, timeout=10_000)
    assert window.statusBar().currentMessage() == "Cancelled loading Ranks: multirank-sampled-hta."
