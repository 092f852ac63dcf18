"""Issue 16 item 7: evidence figures read as text for people, not raw dicts."""

from __future__ import annotations

from hipscope.views.tuner_parts import fmt_figure


def test_counts_by_name_read_as_a_list():
    assert fmt_figure("by_name", {"cudaStreamSynchronize": 3, "hipDeviceSynchronize": 1200}) \
        == ("by name", "cudaStreamSynchronize × 3, hipDeviceSynchronize × 1,200")


def test_durations_in_a_list_use_the_one_formatter():
    assert fmt_figure("gaps_ns", [265_322_000, 44_603_100_000]) == ("gaps", "265 ms, 44.6 s")
    assert "{" not in fmt_figure("x", {"a": {"b": 1}})[1]


def test_a_run_of_one_line_says_one_line(qtbot, tmp_path, monkeypatch):
    import sys
    import threading

    from hipscope.app.main_window import MainWindow
    from hipscope.launchers import RunSpec

    monkeypatch.setenv("HIPSCOPE_DATA_DIR", str(tmp_path / "data"))
    w = MainWindow(persist=False)
    qtbot.addWidget(w)
    w.show()
    try:
        s = w.start_run(RunSpec([sys.executable, "-c", "print('only')"]))
        qtbot.waitUntil(lambda: s.result is not None, timeout=60_000)
        panel = w.runs_dock.panels[s.run_id]
        qtbot.waitUntil(lambda: "1 line" in panel.state_label.text(), timeout=10_000)
        assert "1 lines" not in panel.state_label.text()
    finally:
        w.ask_close_runs = lambda active: "cancel"
        w.close()
        for sess in w.run_manager.sessions:
            assert sess.launcher.wait(30) is not None
        qtbot.waitUntil(lambda: not [t for t in threading.enumerate()
                                     if t.name.startswith(("run-", "stdout-", "stderr-",
                                                           "wait-", "telemetry"))],
                        timeout=60_000)
