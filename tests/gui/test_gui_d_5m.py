"""Issue 16, what the look at the 5M set found (each on a small trace): the Range dock
shows no stale rows while a big range is counted, an area pick clears the ruler's
status text, kernel names read demangled as in the other tables, and proposing (the
Tuner dock's worker, which held a closing tab for 10 s) stops at the next analysis
once cancelled."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt

from hipscope.analysis.context import TraceAnalyses
from hipscope.model import Trace, build_table
from hipscope.model.progress import Cancelled
from hipscope.tuner.rules import propose
from hipscope.views import area_table

from .conftest import make_tiny_trace, open_loaded, stand_in

MANGLED = "_ZN7ck_tile6kentryILi142EEEvv"      # ck_tile::kentry<142>()


def mangled_trace() -> Trace:
    """The tiny trace with one kernel name mangled."""
    t = make_tiny_trace(120)
    k = t.kernels
    cols = {c: k.column(c) for c in k.present}
    names = k.column("name").to_pylist()
    cols["name"] = [MANGLED if n == "softmax_fwd" else n for n in names]
    return Trace(kernels=build_table("kernels", cols), api=t.api, devices=t.devices,
                 meta=dict(t.meta))


@pytest.fixture
def window(make_window, qtbot, tmp_path):
    w = make_window(loader=lambda paths, progress, cancelled: mangled_trace(), persist=False,
                    expose=True)
    tab = open_loaded(qtbot, w, stand_in(tmp_path, "tiny.trace"))
    qtbot.waitUntil(lambda: tab.timeline.model is not None)
    yield w, tab


def _pick(qtbot, tl, rows: int = 2) -> None:
    """Shift+drag over the first ``rows`` GPU 0 tracks, across the middle of the window."""
    gpu0 = [i for i, r in enumerate(tl.model.rows) if r.kind == "track" and r.table == "kernels"]
    ya, yb = tl.row_y(gpu0[0]), tl.row_y(gpu0[rows - 1])
    r = tl.track_rect
    a, b = QPoint(r.x() + 50, ya[0] + ya[1] // 2), QPoint(r.right() - 50, yb[0] + yb[1] // 2)
    qtbot.mousePress(tl, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier, a)
    qtbot.mouseMove(tl, b)
    qtbot.mouseRelease(tl, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier, b)


def test_a_range_counted_in_a_worker_shows_no_old_rows_meanwhile(qtbot, window, monkeypatch):
    w, tab = window
    monkeypatch.setattr(area_table, "ASYNC_EVENTS", 0)       # count in the worker, as 5M
    tl, panel = tab.timeline, tab.panels["area"]
    lo, hi = tab.document.full_range()
    with qtbot.waitSignal(panel.shown, timeout=30_000):
        tl.measure(lo, hi)
    assert panel.table.rowCount() > 0
    seen = []                    # the dock's state right after the change (its slot ran)
    tab.document.area_changed.connect(
        lambda _a: seen.append((panel.table.rowCount(), panel.title.text())))
    with qtbot.waitSignal(panel.shown, timeout=30_000):
        _pick(qtbot, tl)
    assert seen and seen[0][0] == 0 and seen[0][1].startswith("Counting what")
    assert panel.table.rowCount() > 0 and "on 2 tracks" in panel.title.text()


def test_an_area_pick_clears_the_rulers_status_text(qtbot, window):
    w, tab = window
    tl, panel = tab.timeline, tab.panels["area"]
    lo, hi = tab.document.full_range()
    with qtbot.waitSignal(panel.shown):
        tl.measure(lo, hi)
    assert tab.range_text.startswith("measured")
    with qtbot.waitSignal(panel.shown):
        _pick(qtbot, tl)
    assert tab.range_text == "" and tl.ruler is None


def test_the_range_dock_shows_kernel_names_demangled(qtbot, window):
    w, tab = window
    tl, panel = tab.timeline, tab.panels["area"]
    lo, hi = tab.document.full_range()
    with qtbot.waitSignal(panel.shown):
        tl.measure(lo, hi)
    cells = {panel.table.item(i, 1).text(): panel.table.item(i, 1)
             for i in range(panel.table.rowCount()) if panel.table.item(i, 0).text() == "kernel"}
    (shown,) = [t for t in cells if MANGLED in t]
    assert shown.startswith("ck_tile::kentry") and shown.endswith(MANGLED)
    assert cells[shown].toolTip() == MANGLED
    panel.table.itemDoubleClicked.emit(cells[shown])         # find still gets the raw name
    assert tab.document.view_state.find_text == f"^{MANGLED}$"


def test_proposing_stops_at_the_next_analysis_once_cancelled(caplog):
    trace = make_tiny_trace(400)
    svc = TraceAnalyses(trace)
    assert svc.store is None                                  # nothing served from disk

    def stop() -> bool:                                      # once one analysis is done
        return sum(svc.computed.values()) >= 1

    with pytest.raises(Cancelled):
        propose(trace, analyses=svc, cancelled=stop)
    assert sum(svc.computed.values()) == 1, svc.computed
    assert not [r for r in caplog.records if "failed" in r.getMessage()]   # not a bug
    unstopped = TraceAnalyses(trace)
    propose(trace, analyses=unstopped)
    assert sum(unstopped.computed.values()) > 1              # (it would have done more)
