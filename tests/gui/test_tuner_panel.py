"""Tuner panel: proposals of real H200 traces, evidence links driving the ViewState,
A/B tests over real processes (result, chart, cancel), Apply, clean close."""

from __future__ import annotations

import os
import shlex
import sys
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from hipscope.launchers import RunSpec
from hipscope.model.view_state import Selection
from hipscope.parsers import open_trace
from hipscope.qt.document import Document
from hipscope.tuner.proposals import Confidence, Evidence, Experiment, Proposal
from hipscope.views.tuner_panel import TunerPanel, reveal_window

GPU = Path(__file__).resolve().parents[1] / "data" / "gpu"
# the program sleeps and reports its own time (HIPSCOPE_RESULT, with a little per-process
# jitter): the A/B verdict must not depend on the machine's load, as process wall time does
FAST = ("import os,time; s = 0.05 if os.environ.get('HIPSCOPE_FAST')=='1' else 0.1; "
        "time.sleep(s); print('HIPSCOPE_RESULT {\"wall_s\": %.6f}' % (s + os.getpid() % 7 * 1e-4))")


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_DATA_DIR", str(tmp_path / "data"))


@pytest.fixture(scope="module")
def eager():
    return open_trace([GPU / "eager.json.gz"], use_cache=False)


def make_panel(qtbot, trace=None, paths=None):
    doc = Document(paths or [Path("t.json")])
    panel = TunerPanel(doc)
    qtbot.addWidget(panel)
    if trace is not None:
        with qtbot.waitSignal(panel.proposals_ready, timeout=20_000):
            doc.set_trace(trace)
    panel.resize(1400, 420)
    return doc, panel


def fast_proposal(pid="fast", env=None, recipe=None) -> Proposal:
    return Proposal(id=pid, rule="test", title="Set HIPSCOPE_FAST=1 to shorten the sleep",
                    evidence=Evidence(figures={"sleep_ns": 100_000_000}),
                    estimated_gain_fraction=0.5, formula="sleep saved / span",
                    confidence=Confidence("high", "it is a test"),
                    experiment=Experiment(env=env if env is not None else {"HIPSCOPE_FAST": "1"},
                                          recipe=recipe))


def with_program(qtbot, panel, command, proposals):
    panel.state.set_proposals(proposals)
    panel.state.set_program(RunSpec(command))
    panel.state.select(proposals[0].id)
    qtbot.waitUntil(lambda: panel.tree.topLevelItemCount() == len(proposals)
                    and panel.tree.currentItem() is not None)


def test_lists_graph_capture_first_with_its_estimate(qtbot, eager):
    doc, panel = make_panel(qtbot, eager)
    first = panel.tree.topLevelItem(0)
    assert first.data(0, Qt.ItemDataRole.UserRole) == "graph-capture"
    g = panel.state.proposals[0]
    assert first.text(1) == f"{100 * g.estimated_gain_fraction:.1f} %"
    assert 0.7 < g.estimated_gain_fraction < 0.95
    assert "host_wait" in first.toolTip(1)              # the formula
    qtbot.waitUntil(lambda: panel.state.selected == "graph-capture")
    qtbot.waitUntil(lambda: "graph" in panel.title_label.text())
    assert "graph_node_ns" in panel.estimate_label.toolTip() or \
        "host_wait" in panel.estimate_label.toolTip()
    assert "reduce-overhead" in panel.experiment_box.toPlainText()
    # a code change: no automatic test, and the pane says why
    assert not panel.test_button.isEnabled()
    assert "code change" in panel.result_label.text()
    assert "href='ref:0'" in panel.refs_label.text()
    assert "pytorch.org" in panel.docs_label.text()


def test_evidence_links_move_the_timeline(qtbot, eager):
    doc, panel = make_panel(qtbot, eager)
    qtbot.waitUntil(lambda: panel.state.selected == "graph-capture")
    vs = doc.view_state
    full = vs.window
    refs = panel.state.selected_proposal.evidence.refs
    span = next(i for i, r in enumerate(refs) if r.t0 is not None)
    with qtbot.waitSignal(doc.view_changed, timeout=2000):
        panel.refs_label.linkActivated.emit(f"ref:{span}")
    assert vs.window != full
    assert vs.window[0] <= refs[span].t0 and vs.window[1] >= refs[span].t1
    row = next(i for i, r in enumerate(refs) if r.row is not None)
    with qtbot.waitSignal(doc.selection_changed, timeout=2000):
        panel.refs_label.linkActivated.emit(f"ref:{row}")
    assert vs.selection == Selection("kernels", refs[row].row)
    k0 = int(eager.kernels.numpy("start")[refs[row].row])
    assert vs.window[0] <= k0 <= vs.window[1]


def test_reveal_window_pads_and_keeps_a_minimum_width():
    assert reveal_window((0, 1), 1000, 2000) == (400, 2600)
    lo, hi = reveal_window((0, 1), 0, 10_000)
    assert lo == -500 and hi == 10_500


def test_ab_test_runs_real_processes_and_shows_the_verdict(qtbot, tiny_trace):
    doc, panel = make_panel(qtbot, tiny_trace)
    p = fast_proposal()
    with_program(qtbot, panel, [sys.executable, "-c", FAST], [p])
    assert panel.repeats == 5
    with qtbot.waitSignal(panel.experiment_done, timeout=60_000):
        qtbot.mouseClick(panel.test_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: panel.cancel_button.isEnabled())
    rec = panel.state.experiment("fast")
    assert rec.status == "finished", rec.message
    r = rec.result
    assert 0 < r.ratio < 0.8 and r.ci_high < 1 and r.verdict == "better"
    assert r.baseline.n == r.variant.n == 5 and len(rec.runs) == 10
    qtbot.waitUntil(lambda: "better" in panel.result_label.text())
    assert f"{r.ratio:.3f}" in panel.result_label.text()
    assert "HIPSCOPE_RESULT" in panel.result_label.text() and r.source == "program"
    assert "Noise floor (A/A control" in panel.run_label.text()
    assert panel.chart.isVisible() or not panel.isVisible()
    scatters = [i for i in panel.chart.listDataItems() if hasattr(i, "points")]
    assert sorted(len(s.points()) for s in scatters) == [5, 5]
    assert "×0." in panel.tree.topLevelItem(0).text(3)
    qtbot.waitUntil(lambda: not panel.cancel_button.isEnabled() and panel.test_button.isEnabled())
    assert panel.compare_label.text() == ""      # no profiler: no traces to compare


def test_cancel_mid_sweep_stops_the_processes(qtbot, tiny_trace, tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    code = (f"import os,time,pathlib; pathlib.Path({str(pids)!r}, str(os.getpid())).touch(); "
            "time.sleep(60)")
    doc, panel = make_panel(qtbot, tiny_trace)
    with_program(qtbot, panel, [sys.executable, "-c", code], [fast_proposal()])
    qtbot.mouseClick(panel.test_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: any(pids.iterdir()), timeout=20_000)
    with qtbot.waitSignal(panel.experiment_done, timeout=20_000):
        qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    assert panel.state.experiment("fast").status == "cancelled"
    started = [int(f.name) for f in pids.iterdir()]
    assert len(started) == 1                      # the sweep went no further
    for pid in started:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert panel.tasks.active_count() == 0
    qtbot.waitUntil(lambda: panel.test_button.isEnabled() and not panel.cancel_button.isEnabled())
    assert panel.tree.topLevelItem(0).text(3) == "cancelled"


def test_recipe_proposal_cannot_be_tested_and_apply_gives_a_shell_line(qtbot, tiny_trace):
    doc, panel = make_panel(qtbot, tiny_trace)
    code_change = fast_proposal("code", env={}, recipe="torch.compile(model)")
    knob = fast_proposal("knob", env={"HIPSCOPE_FAST": "1", "OLD_KNOB": None})
    knob.estimated_gain_fraction = 0.9                # best first
    with_program(qtbot, panel, [sys.executable, "-c", "pass"], [code_change, knob])
    assert panel.tree.topLevelItem(0).data(0, Qt.ItemDataRole.UserRole) == "knob"
    panel.state.select("code")
    qtbot.waitUntil(lambda: "torch.compile" in panel.experiment_box.toPlainText())
    assert not panel.test_button.isEnabled() and not panel.apply_button.isEnabled()
    panel.state.select("knob")
    qtbot.waitUntil(lambda: panel.apply_button.isEnabled())
    with qtbot.waitSignal(panel.apply_requested) as got:
        qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    spec = got.args[0]
    assert spec.env == {"HIPSCOPE_FAST": "1", "OLD_KNOB": None}
    line = QGuiApplication.clipboard().text()
    assert line == f"env -u OLD_KNOB HIPSCOPE_FAST=1 {shlex.join(spec.command)}"


def test_program_comes_from_the_trace_command(qtbot, tiny_trace):
    tiny_trace.meta["command"] = "python train.py --bs 8"
    doc, panel = make_panel(qtbot, tiny_trace)
    assert panel.state.program.command == ["python", "train.py", "--bs", "8"]
    qtbot.waitUntil(lambda: "train.py" in panel.program_label.text())


def test_evidence_with_a_compare_link(qtbot, tiny_trace):
    doc, panel = make_panel(qtbot, tiny_trace)
    p = fast_proposal()
    with_program(qtbot, panel, [sys.executable, "-c", "pass"], [p])
    from hipscope.tuner.stats import compare

    runs = [{"side": s, "repeat": i, "wall_s": w, "trace_path": f"/t/{s}-{i}.json"}
            for s, ws in ((0, [1.0, 1.1, 1.2]), (1, [0.5, 0.6, 0.7])) for i, w in enumerate(ws)]
    panel.state.update_experiment("fast", status="finished", runs=runs,
                                  result=compare([1.0, 1.1, 1.2], [0.5, 0.6, 0.7],
                                                 resamples=500))
    qtbot.waitUntil(lambda: "comparison" in panel.compare_label.text())
    with qtbot.waitSignal(panel.compare_requested) as got:
        panel.compare_label.linkActivated.emit("compare")
    assert got.args[0] == ["/t/0-1.json", "/t/1-1.json"]      # the median runs


def test_create_resize_close_without_leaks(qtbot, eager):
    before = threading.active_count()
    doc, panel = make_panel(qtbot, eager)
    panel.show()
    for w, h in ((300, 200), (1600, 500), (900, 300)):
        panel.resize(w, h)
        qtbot.wait(10)
    panel.grab()
    panel.close()
    assert panel.tasks.active_count() == 0
    qtbot.waitUntil(lambda: threading.active_count() <= before, timeout=5000)


# ---- the run a trace came from (issue 12 s.1) ---------------------------------------
CONN = "CUDA_DEVICE_MAX_CONNECTIONS"


def _streams_run(tmp_path, *env, args=()):
    from tests.data.runs import make_streams_run

    return make_streams_run(tmp_path / "data", *env, args=args)   # the autouse data dir


def _select(qtbot, panel, pid):
    qtbot.waitUntil(lambda: panel.state.proposal(pid) is not None, timeout=20_000)
    panel.state.select(pid)
    qtbot.waitUntil(lambda: panel.tree.currentItem() is not None and
                    panel.tree.currentItem().data(0, Qt.ItemDataRole.UserRole) == pid)


def test_program_is_the_run_and_test_works_in_one_click(qtbot, tmp_path):
    import json

    # one connection sleeps half a second more (far above start-up noise): 9 wins
    folder = _streams_run(tmp_path, f"{CONN}=1", args=("--sleep-if-one", "0.5"))
    spec = json.loads((folder / "spec.json").read_text())
    doc, panel = make_panel(qtbot, open_trace(folder), paths=[folder])
    prog = panel.state.program
    assert prog.command == spec["command"] == ["streams.py", "--sleep-if-one", "0.5"]
    assert prog.cwd == spec["cwd"] and prog.env == {CONN: "1"}
    assert prog.profiler.name == "torch" and prog.target.kind == "local"
    assert panel.command_edit.text() == "streams.py --sleep-if-one 0.5"
    assert panel.env_edit.text() == f"{CONN}=1"
    _select(qtbot, panel, "hw-queues")
    assert panel.state.selected_proposal.title.startswith(f"Raise {CONN} from 1 to at least 9")
    panel.repeats_spin.setValue(2)
    with qtbot.waitSignal(panel.experiment_done, timeout=60_000):
        qtbot.mouseClick(panel.test_button, Qt.MouseButton.LeftButton)
    rec = panel.state.experiment("hw-queues")
    assert rec.status == "finished", rec.message
    assert rec.result.verdict == "better"
    # every A/B run went through the run's spec: the baseline with 1, the variant with 9
    runs = [p for p in (tmp_path / "data" / "runs").iterdir() if p != folder]
    said = [(p / "stdout.log").read_text().strip() for p in runs]
    assert set(said) == {"connections: 1", "connections: 9"}
    assert said.count("connections: 9") >= 2 and said.count("connections: 1") >= 2


def test_a_secret_left_out_of_the_run_folder_blocks_test_with_the_reason(qtbot, tmp_path):
    folder = _streams_run(tmp_path, f"{CONN}=1", "HF_TOKEN=abc")
    doc, panel = make_panel(qtbot, open_trace(folder), paths=[folder])
    assert panel.state.program.env["HF_TOKEN"] == "<redacted>"
    _select(qtbot, panel, "hw-queues")
    qtbot.waitUntil(lambda: "HF_TOKEN" in panel.test_button.toolTip())
    assert not panel.test_button.isEnabled()


def test_command_and_env_fields_state_them_for_other_traces(qtbot, tmp_path):
    import shutil

    folder = _streams_run(tmp_path, f"{CONN}=1")
    (trace_file,) = (folder / "prof").glob("*.pt.trace.json")
    bare = shutil.copy(trace_file, tmp_path / "streams.pt.trace.json")
    doc, panel = make_panel(qtbot, open_trace(bare), paths=[Path(bare)])
    assert panel.state.program is None and panel.command_edit.text() == ""
    _select(qtbot, panel, "hw-queues")
    assert " from 8 to at least 9" in panel.state.selected_proposal.title
    panel.env_edit.setText("NOPE")
    assert not panel.use_stated()
    assert "NOPE" in panel.status_label.text() and panel.state.program is None
    panel.command_edit.setText(f"{sys.executable} streams.py --fast")
    panel.env_edit.setText(f"{CONN}=1 -OLD_KNOB")
    with qtbot.waitSignal(panel.proposals_ready, timeout=20_000):
        qtbot.mouseClick(panel.stated_button, Qt.MouseButton.LeftButton)
    prog = panel.state.program
    assert prog.command == [sys.executable, "streams.py", "--fast"]
    assert prog.env == {CONN: "1", "OLD_KNOB": None}
    p = panel.state.proposal("hw-queues")
    assert p.title.startswith(f"Raise {CONN} from 1 to at least 9")
    assert p.evidence.figures[f"{CONN}_from"] == "stated by the user"


def test_program_button_opens_the_run_dialog_and_uses_its_spec(qtbot):
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from hipscope.views.launch_dialog import LaunchDialog

    _doc, panel = make_panel(qtbot)
    seen = []

    def fill_and_use():
        d = QApplication.activeModalWidget()
        assert isinstance(d, LaunchDialog)
        seen.append((d.windowTitle(), d.run_button.text()))
        d.program_edit.setText(sys.executable)
        d.args_edit.setText("-c pass")
        d.run_button.click()

    QTimer.singleShot(0, fill_and_use)
    panel.program_button.click()
    assert seen == [("Program for A/B tests", "Use")]
    assert panel.state.program.command == [sys.executable, "-c", "pass"]
