"""Launching runs from the GUI: the Run dialog's RunSpec, real local runs streaming into
the run panel (failed, cancelled, profiled with the rocprofv3 replay stand-in, with the
stand-in nvidia-smi's telemetry), the Runs panel over a temporary data directory, Test
connection against a real sshd, and closing the window with runs in progress."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from hipscope.app.main_window import MainWindow
from hipscope.app.settings import Settings
from hipscope.app.trace_tab import TraceTab
from hipscope.launchers import RunSpec, make_launcher
from hipscope.launchers.spec import ProfilerSpec, SlurmOptions, Target
from hipscope.launchers.telemetry import COMMANDS
from hipscope.views.launch_dialog import LaunchDialog
from hipscope.views.run_panel import MAX_LINE_CHARS
from hipscope.views.runs_panel import RunsPanel
from tests.unit.launcher_fixtures import (
    DATA,
    alive,
    install_rocprofv3_standin,
    key_fingerprint,
    start_sshd,
    stop_sshd,
)

PY = sys.executable
WAIT = 60_000
RUN_THREADS = ("run-", "stdout-", "stderr-", "wait-", "telemetry")


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    d = tmp_path / "data"
    monkeypatch.setenv("HIPSCOPE_DATA_DIR", str(d))
    return d


def run_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(RUN_THREADS)]


@pytest.fixture
def window(qtbot):
    w = MainWindow(persist=False)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.ask_close_runs = lambda active: "cancel"
    w.close()
    for s in w.run_manager.sessions:
        assert s.launcher.wait(30) is not None, "a launcher was left running"
    qtbot.waitUntil(lambda: not run_threads(), timeout=WAIT)     # no thread leaked
    assert w.runner.active_count() == 0


def wait_final(qtbot, session):
    qtbot.waitUntil(lambda: session.result is not None, timeout=WAIT)
    return session.result


# --------------------------------------------------------------------------- dialog

def test_dialog_builds_the_run_spec(qtbot, tmp_path):
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host gpu-box\n  HostName 10.0.0.7\nHost login1\n  User me\nHost *\n  "
                   "ServerAliveInterval 5\n")
    settings = Settings()
    d = LaunchDialog(settings)
    qtbot.addWidget(d)
    d.kind_combo.setCurrentIndex(d.kind_combo.findData("ssh"))
    d.ssh_config_edit.setText(str(cfg))
    d.ssh_config_edit.editingFinished.emit()
    assert [d.host_combo.itemText(i) for i in range(d.host_combo.count())] == \
        ["gpu-box", "login1"]                                  # no patterns
    d.host_combo.setEditText("gpu-box")
    d.program_edit.setText("./bench")
    d.args_edit.setText("-n 10 --label 'a b'")
    d.cwd_edit.setText("~/work")
    d.env_editor.add_row("HIP_VISIBLE_DEVICES", "0,1")
    d.env_editor.add_row("OMP_NUM_THREADS", "8")
    r = d.env_editor.add_row("HSA_XNACK", "")
    d.env_editor.table.item(r, 2).setCheckState(Qt.CheckState.Checked)   # unset it
    d.env_editor.add_row("", "")                                          # blank: ignored
    d.profiler_combo.setCurrentIndex(d.profiler_combo.findData("rocprofv3"))
    page = d.option_pages["rocprofv3"]
    page.findChild(type(d.telemetry_check), "opt_rocprofv3_traces_marker").setChecked(False)
    page.findChild(type(d.telemetry_check), "opt_rocprofv3_traces_sys").setChecked(True)
    page.findChild(type(d.telemetry_check), "opt_rocprofv3_output_format_rocpd").setChecked(True)
    page.findChild(type(d.program_edit), "opt_rocprofv3_pmc").setText("SQ_WAVES, GRBM_GUI_ACTIVE")
    page.findChild(type(d.telemetry_check), "opt_rocprofv3_stats").setChecked(True)
    d.extra_args_edit.setText("--kernel-include-regex gemm")
    d.telemetry_spin.setValue(0.5)
    spec = d.spec()
    assert spec.command == ["./bench", "-n", "10", "--label", "a b"]
    assert spec.cwd == "~/work"
    assert spec.env == {"HIP_VISIBLE_DEVICES": "0,1", "OMP_NUM_THREADS": "8", "HSA_XNACK": None}
    assert spec.target.kind == "ssh" and spec.target.host == "gpu-box"
    assert spec.target.ssh_config == str(cfg)
    assert spec.profiler == ProfilerSpec("rocprofv3", {
        "traces": ["kernel", "hip", "memory_copy", "sys"],
        "pmc": ["SQ_WAVES", "GRBM_GUI_ACTIVE"], "output_format": ["csv", "rocpd"],
        "stats": True, "extra_args": ["--kernel-include-regex", "gemm"]})
    assert spec.telemetry_interval == 0.5
    d.accept()                                     # remembered (no secrets in a spec)
    again = LaunchDialog(settings)
    qtbot.addWidget(again)
    assert again.spec() == spec
    again.reject()


def test_dialog_slurm_torch_and_errors(qtbot):
    d = LaunchDialog()
    qtbot.addWidget(d)
    d.kind_combo.setCurrentIndex(d.kind_combo.findData("slurm"))
    d.host_combo.setEditText("me@login1:2222")
    d.slurm_spins["nodes"].setValue(2)
    d.slurm_spins["gpus_per_task"].setValue(1)
    d.slurm_edits["partition"].setText("mi300")
    d.slurm_edits["time"].setText("00:10:00")
    d.profiler_combo.setCurrentIndex(d.profiler_combo.findData("torch"))
    d.option_pages["torch"].set_options({"active": 5, "record_shapes": True})
    d.telemetry_check.setChecked(False)
    d.accept()                                     # no program: stays open, says why
    assert d.error_label.text() == "give the program to run" and not d.error_label.isHidden()
    d.program_edit.setText("python3")
    d.args_edit.setText("train.py --lr 'unclosed")
    with pytest.raises(ValueError, match="cannot be split"):
        d.spec()
    d.args_edit.setText("train.py")
    spec = d.spec()
    assert spec.target == Target("slurm", host="login1", user="me", port=2222,
                                 slurm=SlurmOptions(nodes=2, gpus_per_task=1,
                                                    partition="mi300", time="00:10:00"))
    assert spec.profiler.options == {"wait": 1, "warmup": 1, "active": 5, "repeat": 1,
                                     "step_on": "optimizer", "record_shapes": True}
    assert spec.telemetry_interval is None
    d.set_spec(spec)                                # a re-run fills the form back
    assert d.spec() == spec
    d.reject()


def test_detected_profilers_enable_the_choices(qtbot):
    d = LaunchDialog()
    qtbot.addWidget(d)
    d._show_detection({"host": "h", "gpus": [], "tools": {},
                       "profilers": {"ncu": {"path": "/usr/bin/ncu", "version": "2025.1"}}})
    model = d.profiler_combo.model()
    enabled = {d.profiler_combo.itemData(i): model.item(i).isEnabled()
               for i in range(d.profiler_combo.count())}
    assert enabled == {"none": True, "rocprofv3": False, "rocprof": False, "torch": False,
                       "ncu": True, "nsys": False}
    i = d.profiler_combo.findData("rocprofv3")
    assert "not found" in d.profiler_combo.itemData(i, Qt.ItemDataRole.ToolTipRole)
    d.profiler_combo.setCurrentIndex(i)
    assert "not found" in d.profiler_warning.text()
    d.kind_combo.setCurrentIndex(d.kind_combo.findData("ssh"))   # another target: unknown
    assert model.item(i).isEnabled()
    d.reject()


# --------------------------------------------------------------------------- runs

def test_local_run_streams_output_and_fails_with_its_status(window, qtbot):
    code = "import sys\nfor i in range(3000): print('line', i)\nprint('oops', file=sys.stderr)\n" \
           "sys.exit(3)"
    s = window.start_run(RunSpec([PY, "-c", code]))
    batches = []
    s.lines_appended.connect(lambda b: batches.append(len(b)))
    panel = window.runs_dock.panels[s.run_id]
    res = wait_final(qtbot, s)
    assert res.state.value == "failed" and res.exit_status == 3
    text = panel.console.toPlainText().splitlines()
    assert [ln for ln in text if ln.startswith("line ")] == [f"line {i}" for i in range(3000)]
    assert "oops" in text
    assert len(batches) < 3000 / 10          # batched on a timer, not a signal per line
    state = panel.state_label.text()
    assert "failed" in state and "exited with status 3" in state
    assert str(s.folder) in state and s.folder.is_dir()     # the folder is kept, and said
    assert not panel.cancel_button.isVisible() and not panel.open_button.isEnabled()
    assert window.tabs.count() == 0                          # nothing to open


def test_cancel_ends_the_run_and_its_process(window, qtbot):
    code = "import time\nprint('ready', flush=True)\ntime.sleep(600)"
    s = window.start_run(RunSpec([PY, "-c", code]))
    panel = window.runs_dock.panels[s.run_id]
    qtbot.waitUntil(lambda: "ready" in panel.console.toPlainText(), timeout=WAIT)
    pid = json.loads((s.folder / "status.json").read_text())["pid"]
    assert alive(pid)
    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    res = wait_final(qtbot, s)
    assert res.state.value == "cancelled"
    assert not alive(pid)
    assert "cancelled" in panel.state_label.text() and str(s.folder) in panel.state_label.text()


def test_profiled_run_opens_its_trace_in_a_new_tab(window, qtbot, tmp_path, monkeypatch):
    """rocprofv3 is the replay STAND-IN (no AMD GPU here): it replays real output."""
    install_rocprofv3_standin(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    spec = RunSpec([PY, "-c", "print('app ran')"],
                   profiler=ProfilerSpec("rocprofv3", {"pmc": ["SQ_WAVES"]}))
    s = window.start_run(spec)
    res = wait_final(qtbot, s)
    assert res.state.value == "finished", res.reason
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=WAIT)
    tab = window.tabs.widget(0)
    assert isinstance(tab, TraceTab) and tab.paths == res.trace_inputs
    qtbot.waitUntil(lambda: tab.state != "loading", timeout=WAIT)
    assert tab.state == "loaded", tab.error
    assert tab.document.trace.meta["format"] == "rocprofv3-csv"
    assert len(tab.document.trace.kernels) == 9
    panel = window.runs_dock.panels[s.run_id]
    assert panel.open_button.isEnabled()
    panel.open_button.click()                     # already open: brought to front, not twice
    assert window.tabs.count() == 1


@pytest.fixture
def fake_nvidia_smi(tmp_path, monkeypatch):
    """STAND-IN nvidia-smi (no NVIDIA GPU here) printing the 8×H200 recording, as in
    tests/unit/test_launchers_telemetry.py."""
    bindir = tmp_path / "smi"
    bindir.mkdir()
    exe = bindir / "nvidia-smi"
    expected = " ".join(COMMANDS["nvidia-smi"][1:])
    exe.write_text("#!/bin/sh\n"
                   f"[ \"$*\" = '{expected}' ] || {{ echo unexpected args: \"$*\" >&2; exit 9; }}\n"
                   f"cat {DATA / 'telemetry' / 'nvidia-smi_query_8xH200.csv'}\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    return exe


def test_telemetry_charts_receive_samples(window, qtbot, tmp_path, fake_nvidia_smi):
    gate = tmp_path / "gate"
    code = f"import os, time\nwhile not os.path.exists({str(gate)!r}): time.sleep(0.02)\n"
    s = window.start_run(RunSpec([PY, "-c", code], telemetry_interval=0.05))
    panel = window.runs_dock.panels[s.run_id]
    charts = panel.charts
    assert charts.isVisible()
    try:
        qtbot.waitUntil(lambda: len(charts.curves) == 8 * 5 and
                        len(charts.curves[("util_pct", 7)].getData()[0]) >= 3, timeout=WAIT)
    finally:
        gate.touch()
    x, y = charts.curves[("util_pct", 0)].getData()
    assert list(y[:3]) == [87, 87, 87] and (x[1:] >= x[:-1]).all()
    _x, mem = charts.curves[("mem_used_mib", 0)].getData()
    assert mem[0] == pytest.approx(71234 / 1024)            # GiB
    assert "GPU 7" in charts.legend.text()
    res = wait_final(qtbot, s)
    assert res.state.value == "finished"
    assert "telemetry samples" in panel.state_label.text()


def test_console_caps_a_long_line_and_the_log_is_exact(window, qtbot):
    """A 5 MB line without newline: the console shows its first MAX_LINE_CHARS and how
    much more there is; the log keeps every byte."""
    n = 5_000_000
    code = f"import sys\nsys.stdout.write('z' * {n})\nprint('after', file=sys.stderr)\n"
    s = window.start_run(RunSpec([PY, "-c", code]))
    panel = window.runs_dock.panels[s.run_id]
    res = wait_final(qtbot, s)
    assert res.state.value == "finished"
    assert (s.folder / "stdout.log").read_bytes() == b"z" * n
    lines = panel.console.toPlainText().split("\n")
    head = "z" * MAX_LINE_CHARS
    assert f"{head} … ({n - MAX_LINE_CHARS:,} bytes more; see stdout.log)" in lines
    assert "after" in lines
    assert len(panel.console.toPlainText()) < 2 * MAX_LINE_CHARS


def test_console_updates_a_progress_line_in_place(window, qtbot, tmp_path):
    """``\\r`` progress (tqdm) shows while the program runs, one line updated in place."""
    gate = tmp_path / "gate"
    code = ("import os, sys, time\n"
            "for i in range(1, 6):\n    sys.stderr.write(f'\\rstep {i}'); sys.stderr.flush()\n"
            f"while not os.path.exists({str(gate)!r}): time.sleep(0.02)\n"
            "sys.stderr.write('\\ndone\\n')\n")
    s = window.start_run(RunSpec([PY, "-c", code]))
    panel = window.runs_dock.panels[s.run_id]
    try:
        qtbot.waitUntil(lambda: panel.console.toPlainText() == "step 5", timeout=WAIT)
        assert s.state == "running" and panel.console.blockCount() == 1
    finally:
        gate.touch()
    res = wait_final(qtbot, s)
    assert res.state.value == "finished"
    assert panel.console.toPlainText() == "step 5\ndone"
    assert (s.folder / "stderr.log").read_bytes() == \
        b"".join(b"\rstep %d" % i for i in range(1, 6)) + b"\ndone\n"


# --------------------------------------------------------------------------- runs panel

def _past_run(command, data_dir):
    launcher = make_launcher(RunSpec(command))
    return launcher.run()


def test_runs_panel_lists_past_runs(qtbot, qtmodeltester, data_dir, monkeypatch):
    ok = _past_run([PY, "-c", "print(1)"], data_dir)
    bad = _past_run([PY, "-c", "import sys; sys.exit(4)"], data_dir)
    panel = RunsPanel()
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.refreshed, timeout=WAIT):
        panel.refresh()
    m = panel.model
    qtmodeltester.check(m)
    assert m.rowCount() == 2
    cells = [[m.index(r, c).data() for c in range(m.columnCount())] for r in range(2)]
    assert cells[0][7] == bad.folder.name and cells[1][7] == ok.folder.name   # newest first
    assert cells[0][0].endswith("failed") and cells[0][6] == "4"
    assert cells[1][0].endswith("finished") and cells[1][3] == "local"
    assert cells[1][4] == "—" and "print(1)" in cells[1][5]
    assert re.fullmatch(r"[\d.,]+ (ns|µs|ms|s|min|h)", cells[1][2])      # one duration text
    panel.view.selectAll()
    assert not panel.actions_["compare"].isEnabled()          # neither wrote a trace
    assert "trace" in panel.actions_["compare"].toolTip()
    assert not panel.actions_["open"].isEnabled()
    panel.view.selectRow(1)
    with qtbot.waitSignal(panel.rerun_requested) as sig:
        panel.actions_["rerun"].trigger()
    assert sig.args[0].command == [PY, "-c", "print(1)"]
    monkeypatch.setattr(QMessageBox, "question",
                        staticmethod(lambda *a, **k: QMessageBox.StandardButton.Yes))
    with qtbot.waitSignal(panel.refreshed, timeout=WAIT):
        panel.actions_["delete"].trigger()
    assert not ok.folder.exists() and bad.folder.exists()
    assert m.rowCount() == 1
    qtmodeltester.check(m)
    panel.shutdown()


def test_runs_panel_lists_damaged_runs(qtbot, qtmodeltester, data_dir):
    ok = _past_run([PY, "-c", "print(1)"], data_dir)
    bad = _past_run([PY, "-c", "print(2)"], data_dir)
    (bad.folder / "status.json").write_text("[]")
    panel = RunsPanel()
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.refreshed, timeout=WAIT):
        panel.refresh()
    m = panel.model
    qtmodeltester.check(m)
    rows = {m.index(r, 7).data(): r for r in range(m.rowCount())}
    assert set(rows) == {ok.folder.name, bad.folder.name}
    assert m.index(rows[ok.folder.name], 0).data().endswith("finished")
    assert m.index(rows[bad.folder.name], 0).data() == "⚠ damaged"
    assert m.index(rows[bad.folder.name], 0).data(Qt.ItemDataRole.ToolTipRole) == \
        "damaged: status.json holds a list, not a JSON object"
    panel.shutdown()


def test_runs_panel_compares_and_opens_runs_with_traces(window, qtbot, tmp_path, monkeypatch):
    install_rocprofv3_standin(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    for code in ("print('a')", "print('b')"):
        make_launcher(RunSpec([PY, "-c", code], profiler=ProfilerSpec("rocprofv3"))).run()
    panel = window.runs_dock.runs_panel
    window.show_runs_panel()
    qtbot.waitUntil(lambda: panel.model.rowCount() == 2, timeout=WAIT)
    panel.view.selectAll()
    a = panel.actions_["compare"]
    assert a.isEnabled(), a.toolTip()
    got = []
    monkeypatch.setattr(window, "compare_paths", lambda paths: got.append(paths))
    a.trigger()
    older, newer = panel.model.rows[1], panel.model.rows[0]
    assert got == [[older.trace_inputs[0], newer.trace_inputs[0]]]      # older one is A
    panel.view.selectRow(0)
    panel.actions_["open"].trigger()
    assert window.tabs.count() == 1 and window.tabs.widget(0).paths == list(newer.trace_inputs)
    qtbot.waitUntil(lambda: window.tabs.widget(0).state != "loading", timeout=WAIT)


TWIN = Path(__file__).resolve().parents[1] / "data" / "rocprofv3-csv-twin" / "node01"


def _two_rank_run(code: str) -> Path:
    """A finished run folder whose trace is two processes' rocprofv3 CSV files (the
    twin fixture, one folder per process), as a two-rank run leaves it."""
    folder = make_launcher(RunSpec([PY, "-c", code])).run().folder
    inputs = []
    for pid in ("4242", "4243"):
        d = folder / "prof" / "node01" / pid
        d.mkdir(parents=True)
        for f in TWIN.glob(f"{pid}_*.csv"):
            (d / f.name).write_bytes(f.read_bytes())
        inputs.append(str(d))
    status = json.loads((folder / "status.json").read_text())
    status["trace_inputs"] = inputs
    (folder / "status.json").write_text(json.dumps(status))
    return folder


def _csv_rows(paths) -> int:
    import csv

    n = 0
    for p in paths:
        with p.open(newline="") as fh:
            n += sum(1 for _ in csv.DictReader(fh))
    return n


def test_runs_panel_compares_two_multi_file_runs(window, qtbot):
    from hipscope.app.compare_tab import CompareTab

    older, newer = _two_rank_run("print('a')"), _two_rank_run("print('b')")
    panel = window.runs_dock.runs_panel
    window.show_runs_panel()
    qtbot.waitUntil(lambda: panel.model.rowCount() == 2, timeout=WAIT)
    panel.view.selectAll()
    a = panel.actions_["compare"]
    assert a.isEnabled(), a.toolTip()
    a.trigger()
    tab = window.tabs.currentWidget()
    assert isinstance(tab, CompareTab)
    assert tab.groups == [sorted((older / "prof" / "node01").iterdir()),
                          sorted((newer / "prof" / "node01").iterdir())]      # older is A
    qtbot.waitUntil(lambda: tab.state != "loading", timeout=WAIT)
    assert tab.state == "loaded", tab.error
    kernels = _csv_rows(sorted(TWIN.glob("*_kernel_trace.csv")))
    assert [len(t.kernels) for t in tab.traces] == [kernels, kernels]    # both ranks each


# --------------------------------------------------------------------------- SSH

@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    d = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield d
    stop_sshd(d)


def test_test_connection_asks_about_an_unknown_host_then_succeeds(qtbot, sshd, monkeypatch):
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    kh = sshd.known_hosts("gui_empty_kh", key=False)
    cfg = sshd.ssh_config("gui_cfg_unknown", kh)
    asked = []

    def answer(parent, title, text, *a, **k):
        asked.append(text)
        return QMessageBox.StandardButton.Yes
    monkeypatch.setattr(QMessageBox, "question", staticmethod(answer))
    d = LaunchDialog()
    qtbot.addWidget(d)
    d.kind_combo.setCurrentIndex(d.kind_combo.findData("ssh"))
    d.ssh_config_edit.setText(str(cfg))
    d.ssh_config_edit.editingFinished.emit()
    assert d.host_combo.findText("testhost") >= 0
    d.host_combo.setEditText("testhost")
    with qtbot.waitSignal(d.detection_finished, timeout=WAIT) as sig:
        qtbot.mouseClick(d.test_button, Qt.MouseButton.LeftButton)
    info = sig.args[0]
    assert "error" not in info, info.get("error")
    assert len(asked) == 1
    assert key_fingerprint(sshd.host_key.with_suffix(".pub")) in asked[0]
    assert sshd.label in kh.read_text()                     # trusted: added to known_hosts
    assert d.detect_label.text().startswith("✔ ") and info["host"] in d.detect_label.text()
    with qtbot.waitSignal(d.detection_finished, timeout=WAIT) as sig:   # known now: no question
        d.test_button.click()
    assert "error" not in sig.args[0] and len(asked) == 1
    d.reject()


def test_test_connection_shows_a_changed_host_key_refusal(qtbot, sshd, monkeypatch):
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    monkeypatch.setattr(QMessageBox, "question", staticmethod(
        lambda *a, **k: pytest.fail("a changed key must not be asked about")))
    kh = sshd.known_hosts("gui_changed_kh", key=sshd.other_host_key)
    d = LaunchDialog()
    qtbot.addWidget(d)
    d.set_spec(RunSpec(["true"], target=Target("ssh", host="testhost", ssh_config=str(
        sshd.ssh_config("gui_cfg_changed", kh)))))
    with qtbot.waitSignal(d.detection_finished, timeout=WAIT) as sig:
        d.test_button.click()
    assert "CHANGED" in sig.args[0]["error"]
    assert d.detect_label.text().startswith("✖ ") and "ssh-keygen" in d.detect_label.text()
    d.reject()


# --------------------------------------------------------------------------- closing

def test_closing_the_window_asks_and_cancels_local_runs(qtbot):
    w = MainWindow(persist=False)
    qtbot.addWidget(w)
    w.show()
    s = w.start_run(RunSpec([PY, "-c", "import time\nprint('up', flush=True)\ntime.sleep(600)"]))
    panel = w.runs_dock.panels[s.run_id]
    qtbot.waitUntil(lambda: "up" in panel.console.toPlainText(), timeout=WAIT)
    pid = json.loads((s.folder / "status.json").read_text())["pid"]
    asked = []
    w.ask_close_runs = lambda active: asked.append(list(active)) or None     # "Don't close"
    assert not w.close() and w.isVisible() and alive(pid)
    w.ask_close_runs = lambda active: asked.append(list(active)) or "detach"  # local: ended
    assert w.close()
    assert [x.run_id for x in asked[0]] == [s.run_id]
    assert s.launcher.wait(30).state.value == "cancelled"
    assert not alive(pid)
    qtbot.waitUntil(lambda: not run_threads(), timeout=WAIT)
    assert json.loads((Path(s.folder) / "status.json").read_text())["state"] == "cancelled"
