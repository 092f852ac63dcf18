"""Opening a run folder's trace shows the run's telemetry as counter rows."""

from __future__ import annotations

from hipscope.app.main_window import MainWindow
from hipscope.parsers import open_trace

from ..unit.test_samples import KINETO, make_run


def test_run_trace_shows_telemetry_rows(qtbot, tmp_path):
    t0 = open_trace(KINETO).time_range()[0]
    run, trace_file = make_run(tmp_path, KINETO, shift_to_ns=t0 - 10**9)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    try:
        tab = w.open_run_trace([trace_file])
        qtbot.waitUntil(lambda: tab.state != "loading", timeout=20_000)
        assert tab.state == "loaded", tab.error
        assert len(tab.document.trace.samples) == 5 * 51
        view = tab.timeline
        qtbot.waitUntil(lambda: view.model is not None, timeout=20_000)
        rows = view.model.rows
        (g,) = [r for r in rows if r.key == "telemetry"]
        kids = [rows[c] for c in g.children]
        assert g.label == "Telemetry"
        assert "Power (W)" in [r.label for r in kids]
        assert all(r.kind == "counter" for r in kids)
        # the rows are laid out (visible) and the frame draws them
        shown = {int(i) for i in view.layout.rows}
        assert {c for c in g.children} <= shown
        w.resize(1400, 900)
        assert not view.grab().isNull()
    finally:
        w.close()
        qtbot.waitUntil(lambda: w.runner.active_count() == 0)
