"""Main window: tabs, loading in a worker, errors, cancel, recent files, actions."""

from __future__ import annotations

import csv
import io
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication

from hipscope.app.main_window import EMPTY_TEXT, MainWindow
from hipscope.app.settings import Settings
from hipscope.cli.main import demo_trace_path
from hipscope.parsers import Cancelled, TraceFormatError, open_trace
from hipscope.qt.tasks import TaskRunner

from .conftest import make_tiny_trace, stand_in


def tiny_loader(paths, progress, cancelled):
    progress(0.5)
    return make_tiny_trace()


def blocking_loader(paths, progress, cancelled):
    """Reports some progress, then waits until cancelled (as a slow reader would)."""
    progress(0.25)
    ev = threading.Event()
    while not cancelled():
        ev.wait(0.005)
    raise Cancelled()


@pytest.fixture
def make_window(make_window):
    """The shared factory (tests/gui/conftest.py), windows at Qt's own size."""
    return lambda **kw: make_window(size=None, **kw)


@pytest.fixture
def tiny_file(tmp_path) -> Path:
    return stand_in(tmp_path)


def _wait_loaded(qtbot, window, tab):
    qtbot.waitUntil(lambda: tab.state != "loading", timeout=20_000)


def test_empty_window_create_resize_close(make_window, qtbot):
    w = make_window()
    qtbot.waitExposed(w)
    assert w.empty_label.text() == EMPTY_TEXT
    assert w._central_stack.currentWidget() is w.empty_page
    w.resize(900, 600)
    assert not w.grab().isNull()
    assert not w.action_by_id["export.kernels_csv"].isEnabled()
    assert w.close()


def test_load_tiny_trace_fills_docks_and_status(make_window, qtbot, tiny_file):
    w = make_window(loader=tiny_loader)
    (tab,) = w.open_paths([tiny_file])
    _wait_loaded(qtbot, w, tab)
    assert tab.state == "loaded"
    assert w._dock_stacks["kernels"].currentWidget() is tab.panels["kernels"]
    assert tab.panels["kernels"].model.rowCount() == 60
    assert tab.panels["summary"].model.rowCount() == 5
    assert w.format_label.text() == "format: tiny-test"
    assert w.kernels_label.text().startswith("60 kernels")
    w.resize(1200, 800)
    assert not w.grab().isNull()
    w.close_current_tab()
    assert w.tabs.count() == 0
    assert w._dock_stacks["kernels"].currentIndex() == 0


def test_open_demo_with_real_reader(make_window, qtbot):
    w = make_window()
    (tab,) = w.open_paths([demo_trace_path()])
    _wait_loaded(qtbot, w, tab)
    assert tab.state == "loaded", tab.error
    expect = open_trace(demo_trace_path())
    assert tab.panels["kernels"].model.rowCount() == len(expect.kernels) > 0
    assert w.tabs.tabText(0) == demo_trace_path().name


def test_bad_file_shows_one_sentence(make_window, qtbot, tmp_path):
    bad = tmp_path / "garbage.json"
    bad.write_bytes(b"\x00\x01 this is not a trace \xff" * 50)
    w = make_window()
    (tab,) = w.open_paths([bad])
    _wait_loaded(qtbot, w, tab)
    assert tab.state == "failed"
    with pytest.raises(TraceFormatError) as info:
        open_trace(bad)
    text = tab.error_label.text()
    assert text == str(info.value)
    assert str(bad) in text and "Traceback" not in text and "\n" not in text
    assert w.tabs.tabText(0).startswith("⚠")
    assert w._central_stack.currentWidget() is w.tabs


def test_cancel_closes_the_tab(make_window, qtbot, tiny_file):
    w = make_window(loader=blocking_loader)
    (tab,) = w.open_paths([tiny_file])
    qtbot.waitUntil(lambda: tab.progress_bar.value() == 250)
    assert tab.cancel_button.isVisible()
    qtbot.mouseClick(tab.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: w.tabs.count() == 0)
    qtbot.waitUntil(lambda: w.runner.active_count() == 0)


def test_closing_window_cancels_workers(qtbot, tiny_file):
    w = MainWindow(loader=blocking_loader)
    qtbot.addWidget(w)
    w.show()
    (tab,) = w.open_paths([tiny_file])
    qtbot.waitUntil(lambda: tab.progress_bar.value() == 250)
    assert w.runner.active_count() == 1
    w.close()                                      # cancels and waits for the worker
    assert w.runner.wait(0)


def test_latest_request_wins(qtbot):
    runner = TaskRunner()
    # the first task runs until cancelled (whether or not its worker started yet)
    first = runner.submit("k", lambda progress, cancelled: blocking_loader([], progress, cancelled))
    second = runner.submit("k", lambda progress, cancelled: 42)
    got = []
    second.succeeded.connect(got.append)
    with qtbot.waitSignals([first.cancelled, second.succeeded]):
        pass
    assert second.outcome == "succeeded" and first.outcome == "cancelled"
    assert got == [42]
    assert runner.shutdown(5000) and runner.active_count() == 0
    late = runner.submit("k", lambda progress, cancelled: 1)     # after shutdown: nothing runs
    assert late.done and late.outcome == "cancelled" and runner.active_count() == 0


def test_task_errors_are_sentences(qtbot):
    runner = TaskRunner()

    def boom(progress, cancelled):
        raise ValueError("bad value\nsecond line")

    h = runner.submit("x", boom)
    with qtbot.waitSignal(h.failed) as blocker:
        pass
    assert blocker.args == ["Unexpected error (ValueError): bad value"]
    runner.shutdown()


def test_recent_files_persist(make_window, qtbot, tiny_file):
    w = make_window(loader=tiny_loader)
    (tab,) = w.open_paths([tiny_file])
    _wait_loaded(qtbot, w, tab)
    w.close()
    assert Settings().recent_files()[0] == tiny_file.resolve()
    w2 = make_window(loader=tiny_loader)
    w2.recent_menu.aboutToShow.emit()          # as when the menu opens
    texts = [a.text() for a in w2.recent_menu.actions()]
    assert str(tiny_file.resolve()) in texts


def test_drop_opens_files(make_window, qtbot, tiny_file):
    w = make_window(loader=tiny_loader)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(tiny_file))])
    ev = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime,
                    Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    w.dropEvent(ev)
    assert w.tabs.count() == 1
    _wait_loaded(qtbot, w, w.current_tab())
    w.dropEvent(ev)                              # already open: no second tab
    assert w.tabs.count() == 1


def test_find_bar_and_combos_drive_view_state(make_window, qtbot, tiny_file):
    w = make_window(loader=tiny_loader)
    (tab,) = w.open_paths([tiny_file])
    _wait_loaded(qtbot, w, tab)
    vs = tab.document.view_state
    w.find_action.trigger()
    assert w.find_bar.isVisible()
    qtbot.keyClicks(w.find_edit, "gemm")
    assert (vs.find_text, vs.find_regex) == ("gemm", False)
    w.find_regex.setChecked(True)
    assert vs.find_regex
    w.color_combo.setCurrentIndex(w.color_combo.findData("queue_delay"))
    w.color_combo.activated.emit(w.color_combo.currentIndex())
    assert vs.color_mode == "queue_delay"
    w.group_combo.setCurrentIndex(w.group_combo.findData("stream"))
    w.group_combo.activated.emit(w.group_combo.currentIndex())
    assert vs.grouping == "stream"
    vs.set_color_mode("duration")                # and back from the state
    assert w.color_combo.currentData() == "duration"


def test_export_kernels_csv(make_window, qtbot, tiny_file, tmp_path):
    w = make_window(loader=tiny_loader)
    (tab,) = w.open_paths([tiny_file])
    _wait_loaded(qtbot, w, tab)
    tab.document.view_state.set_filters(name_regex="gemm")
    out = tmp_path / "kernels.csv"
    with qtbot.waitSignal(w.export_finished) as blocker:
        w.export_table_csv("kernels", out)
    assert blocker.args == [str(out)]
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == tab.panels["kernels"].model.rowCount() > 0
    assert {r["name"] for r in rows} == {"gemm_kernel"}
    out2 = tmp_path / "summary.csv"
    with qtbot.waitSignal(w.export_finished):
        w.export_table_csv("summary", out2)
    assert len(list(csv.DictReader(io.StringIO(out2.read_text())))) == 5


def test_no_windows_left_after_close(qtbot, tiny_file):
    w = MainWindow(loader=tiny_loader)
    w.show()
    (tab,) = w.open_paths([tiny_file])
    _wait_loaded(qtbot, w, tab)
    w.close()
    w.deleteLater()
    qtbot.waitUntil(lambda: not [x for x in QApplication.topLevelWidgets() if x.isVisible()])
    assert w.runner.active_count() == 0


def test_export_timeline_png_and_svg(make_window, qtbot, tiny_file, tmp_path):
    w = make_window(loader=tiny_loader)
    (tab,) = w.open_paths([tiny_file])
    _wait_loaded(qtbot, w, tab)
    assert tab.has_timeline
    w.update_actions()
    assert w.export_png_action.isEnabled()
    for kind in ("png", "svg"):
        out = tmp_path / f"t.{kind}"
        with qtbot.waitSignal(w.export_finished) as blocker:
            assert w.export_timeline(kind, out)
        assert blocker.args == [str(out)] and out.stat().st_size > 0


def test_big_summary_is_computed_in_a_worker(qtbot, tiny_trace, monkeypatch):
    from hipscope.qt.document import Document
    from hipscope.views.tables import views

    monkeypatch.setattr(views, "ASYNC_STATS_ROWS", 10)
    d = Document()
    v = views.KernelSummaryView(d)
    qtbot.addWidget(v)
    with qtbot.waitSignal(v.stats_ready):
        d.set_trace(tiny_trace)
    assert v.model.rowCount() == 5 and v.status.isHidden()
    v.close()


def test_export_pftrace_in_a_worker(make_window, qtbot, tiny_file, tmp_path):
    from hipscope.app.main_window import pftrace_writer_available

    assert pftrace_writer_available()
    w = make_window(loader=tiny_loader)
    (tab,) = w.open_paths([tiny_file])
    _wait_loaded(qtbot, w, tab)
    w.update_actions()
    assert w.export_pftrace_action.isEnabled()
    out = tmp_path / "t.pftrace"
    with qtbot.waitSignal(w.export_finished, timeout=30_000) as blocker:
        assert w.export_pftrace(out) is not None
    assert blocker.args == [str(out)] and out.stat().st_size > 0


TWIN = Path(__file__).resolve().parents[1] / "data" / "rocprofv3-csv-twin" / "node01"


def _csv_rows(pattern: str) -> int:
    n = 0
    for f in sorted(TWIN.glob(pattern)):
        with f.open(newline="") as fh:
            n += sum(1 for _ in csv.DictReader(fh))
    return n


def test_a_ruler_measurement_reaches_the_status_bar(make_window, qtbot):
    from hipscope.qt.timeline_api import RangeStats, Timeline

    w = make_window(loader=lambda paths, progress, cancelled: open_trace(paths))
    (tab,) = w.open_paths([TWIN])
    _wait_loaded(qtbot, w, tab)
    assert isinstance(tab.timeline, Timeline)
    t0, t1 = tab.document.full_range()
    with qtbot.waitSignal(tab.range_text_changed, timeout=10_000):
        tab.timeline.measure(t0, t1)          # the whole trace, as a ruler drag over it
    st = tab.range_stats
    assert isinstance(st, RangeStats) and (st.t0, st.t1) == (t0, t1)
    kernels, api = _csv_rows("*_kernel_trace.csv"), _csv_rows("*_hip_api_trace.csv")
    copies = _csv_rows("*_memory_copy_trace.csv")
    assert (st.kernels, st.api_calls, st.copies) == (kernels, api, copies)
    text = w.range_label.text()
    assert text.startswith("measured ") and text == st.text()
    assert f"{kernels:,} kernels, {api:,} API calls, {copies:,} copies, busy " in text
