"""Comparison tab: real H200 traces (eager vs CUDA-graph) side by side; headline and
kernel tables against the core, synchronised timelines, alignment, matched selection,
delta colours, not-comparable warning, CLI screenshot, clean shutdown."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QImage
from PySide6.QtWidgets import QApplication

from hipscope.analysis import compare_state as cs
from hipscope.analysis import diff, lod
from hipscope.app.compare_tab import CompareTab
from hipscope.app.main_window import MainWindow
from hipscope.model.view_state import Selection
from hipscope.parsers import open_trace
from hipscope.views.compare_models import (
    BETTER,
    WORSE,
    HeadlineModel,
    InstanceModel,
    KernelDiffModel,
    ProvenanceModel,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
EAGER, GRAPH = DATA / "eager.json.gz", DATA / "graph.json.gz"
SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples" / "kineto"
AMD = next(iter(sorted((SAMPLES / "amd-mi300x-bert-tracelens").glob("*.json.gz"))), None)
NVIDIA = next(iter(sorted((SAMPLES / "nvidia-h100-bert-tracelens").glob("*.json.gz"))), None)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def traces():
    return open_trace(EAGER), open_trace(GRAPH)


@pytest.fixture
def window(qtbot):
    w = MainWindow(persist=False)
    qtbot.addWidget(w)
    w.resize(1500, 950)
    w.show()
    yield w
    tabs = [t for t in w.tab_list() if isinstance(t, CompareTab)]
    w.close()
    assert w.runner.active_count() == 0
    for t in tabs:
        if t.controller is not None:
            assert t.controller.runner.active_count() == 0
        for tl in t.timelines:
            assert tl.tasks.active_count() == 0


def _compare(qtbot, window, paths, **kw) -> CompareTab:
    tab = window.compare_paths(paths, **kw)
    qtbot.waitUntil(lambda: tab.state != "loading", timeout=60_000)
    assert tab.state == "loaded", tab.error
    qtbot.waitUntil(lambda: all(not tl.preparing and tl.model is not None
                                for tl in tab.timelines), timeout=60_000)
    return tab


@pytest.fixture
def cmp_tab(qtbot, window) -> CompareTab:
    return _compare(qtbot, window, [EAGER, GRAPH])


def _docs(tab):
    return tab.controller.documents


# --------------------------------------------------------------------------- tables


def test_headline_span_ratio_equals_the_core(cmp_tab, traces):
    core = diff.compare(*traces)
    got = cmp_tab.view.headline_model.figure("span_ns")
    assert got["ratio"] == pytest.approx(core.headline["span_ns"]["ratio"], rel=1e-12)
    assert got["ratio"] < 0.5                       # CUDA graphs: much shorter span
    m = cmp_tab.view.headline_model
    row = next(i for i, (k, _, _) in enumerate(m.rows) if k == "span_ns")
    assert m.index(row, 4).data() == f"×{core.headline['span_ns']['ratio']:.3f}"
    # lower span is better: B's shorter span is green; higher busy is better: green too
    assert m.index(row, 3).data(Qt.ItemDataRole.ForegroundRole) == BETTER
    busy = next(i for i, (k, _, _) in enumerate(m.rows) if k == "gpu_busy_fraction")
    assert m.index(busy, 3).data(Qt.ItemDataRole.ForegroundRole) == BETTER
    assert not cmp_tab.view.banner.isVisibleTo(cmp_tab.view)


def test_kernel_table_rows_match_the_core(cmp_tab, traces, qtmodeltester):
    kd = diff.compare(*traces).kernels
    m = cmp_tab.view.kernel_model
    assert m.rowCount() == len(kd.names)
    assert [m.name_at(i) for i in range(m.rowCount())] == kd.names     # by impact
    for i in range(m.rowCount()):
        assert m.index(i, 2).data() == f"{int(kd.a_count[i]):,}"
        assert m.index(i, 3).data() == f"{int(kd.b_count[i]):,}"
    qtmodeltester.check(m)
    cmp_tab.view.filter_edit.setText("sgemm")
    assert 0 < m.rowCount() < len(kd.names)
    assert all("sgemm" in m.name_at(i) for i in range(m.rowCount()))
    qtmodeltester.check(m)
    cmp_tab.view.filter_edit.setText("")
    m.sort(7, Qt.SortOrder.DescendingOrder)          # by ratio
    ratios = [kd.ratio[kd.names.index(m.name_at(i))] for i in range(m.rowCount())]
    assert ratios == sorted(ratios, reverse=True)


def test_kernel_diff_model_marks_added_and_removed(qtmodeltester):
    kd = diff.KernelDiff(["a", "gone", "new"], ["matched", "removed", "added"],
                         np.array([2, 3, 0]), np.array([2, 0, 1]), np.array([10., 30, 0]),
                         np.array([20., 0, 5]), np.array([5., 10, np.nan]),
                         np.array([10., np.nan, 5]), np.array([5., 10, np.nan]),
                         np.array([10., np.nan, 5]), [["a"], ["gone"], ["new"]])
    m = KernelDiffModel()
    qtmodeltester.check(m)                           # empty
    m.set_diff(kd)
    qtmodeltester.check(m)
    assert [m.index(i, 0).data() for i in range(3)] == ["", "removed", "added"]
    assert m.index(1, 1).data(Qt.ItemDataRole.FontRole).strikeOut()
    assert m.index(0, 6).data(Qt.ItemDataRole.ForegroundRole) == WORSE    # B slower
    for other in (HeadlineModel(), InstanceModel(), ProvenanceModel()):
        qtmodeltester.check(other)


def test_instance_table_and_provenance(qtbot, cmp_tab, traces, qtmodeltester):
    v = cmp_tab.view
    name = v.kernel_model.name_at(0)
    v.kernel_table.setCurrentIndex(v.kernel_model.index(0, 1))
    assert cmp_tab.controller.state.kernel == name
    ref = diff.instance_diff(*traces, name)
    inst = v.instance_model.inst
    assert np.array_equal(inst.a_rows, ref.a_rows) and np.array_equal(inst.b_rows, ref.b_rows)
    assert v.instance_model.rowCount() == len(ref.a_rows) == 1200
    qtmodeltester.check(v.instance_model)
    qtmodeltester.check(v.provenance_model)
    prov = v.provenance_model
    assert prov.rowCount() > 0 and prov.index(0, 1).data() is not None


# --------------------------------------------------------------------------- sync


def test_zooming_a_moves_b_by_the_alignment(cmp_tab):
    (da, db), tl = _docs(cmp_tab), cmp_tab.timelines[0]
    oa, ob = cmp_tab.controller.sync.origins
    assert (oa, ob) == tuple(t.time_range()[0] for t in cmp_tab.controller.traces)
    tl.zoom(0.25)
    tl.pan(0.1)
    wa, wb = da.view_state.window, db.view_state.window
    assert wb == (wa[0] - oa + ob, wa[1] - oa + ob)
    cmp_tab.timelines[1].zoom(0.5)                   # and the other way round
    wa, wb = da.view_state.window, db.view_state.window
    assert wa == (wb[0] - ob + oa, wb[1] - ob + oa)


def test_align_at_marker_step_1(qtbot, cmp_tab, traces):
    st = cmp_tab.controller.state
    st.set_align(cs.AlignChoice("marker", "step 1", 1))
    qtbot.waitUntil(lambda: st.alignment is not None and st.alignment.label != "start")
    starts = [diff.find_marker(t, diff.MarkerRef("step 1")).start for t in traces]
    da, db = _docs(cmp_tab)
    assert da.view_state.window[0] == starts[0] and db.view_state.window[0] == starts[1]
    assert [tl.axis_origin for tl in cmp_tab.timelines] == starts
    assert "step 1" in cmp_tab.view.align_name.currentText()
    cmp_tab.timelines[0].zoom(0.5)                   # the rule holds after zooming
    wa, wb = da.view_state.window, db.view_state.window
    assert wa[0] - starts[0] == wb[0] - starts[1] and wa[1] - wa[0] == wb[1] - wb[0]
    assert cmp_tab.view.headline_model.rows[0][0] == "aligned_span_ns"
    assert "step 1" in cmp_tab.view.align_name.currentText()
    st.set_align(cs.AlignChoice("marker", "no such marker", 1))
    qtbot.waitUntil(lambda: bool(st.align_error))
    assert "no such marker" in cmp_tab.view.note.text()


def test_selecting_a_kernel_selects_the_matched_instance(cmp_tab, traces):
    da, db = _docs(cmp_tab)
    name = cmp_tab.view.kernel_model.name_at(2)
    ref = diff.instance_diff(*traces, name)
    da.view_state.select(Selection("kernels", int(ref.a_rows[17])))
    assert db.view_state.selection == Selection("kernels", int(ref.b_rows[17]))
    assert cmp_tab.controller.state.kernel == name           # the tables follow A
    db.view_state.select(Selection("kernels", int(ref.b_rows[3])))
    assert da.view_state.selection == Selection("kernels", int(ref.a_rows[3]))
    da.view_state.select(None)
    assert db.view_state.selection is None


def test_align_at_a_kernel_instance_from_the_table(qtbot, cmp_tab, traces):
    v, st = cmp_tab.view, cmp_tab.controller.state
    v.kernel_table.setCurrentIndex(v.kernel_model.index(1, 1))
    name = st.kernel
    v.instance_table.setCurrentIndex(v.instance_model.index(4, 0))
    assert v.align_instance_button.isEnabled()
    qtbot.mouseClick(v.align_instance_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: st.alignment is not None and st.alignment.label != "start")
    ref = diff.instance_diff(*traces, name)
    starts = [int(t.kernels.numpy("start")[r]) for t, r in
              zip(traces, (ref.a_rows[4], ref.b_rows[4]))]
    assert st.alignment.origins == starts
    (da, db), (oa, ob) = _docs(cmp_tab), starts
    wa, wb = da.view_state.window, db.view_state.window
    assert wa[0] < oa < wa[1] and wb == (wa[0] - oa + ob, wa[1] - oa + ob)


def test_delta_colours(qtbot, cmp_tab, traces):
    st = cmp_tab.controller.state
    ratios = st.result.ratios
    m = st.result.matcher.match_all(0, 1)
    d = [cs.durations(t) for t in traces]
    ok = m >= 0
    assert np.allclose(ratios[0][ok], d[0][ok] / d[1][m[ok]])
    cmp_tab.view.delta_check.setChecked(True)
    for doc, tl in zip(_docs(cmp_tab), cmp_tab.timelines):
        assert doc.view_state.color_mode == "delta"
        qtbot.waitUntil(lambda tl=tl: tl.scale.mode == "delta")
        keys = np.concatenate([r.events.keys for r in tl.model.rows
                               if r.kind == "track" and r.table == "kernels"])
        assert (keys != lod.NO_KEY).all() and len(np.unique(keys)) > 3
    cmp_tab.view.grab()                               # the legend and tracks paint
    cmp_tab.view.delta_check.setChecked(False)
    assert all(doc.view_state.color_mode == "name" for doc in _docs(cmp_tab))


def test_rules_are_recomputed_in_a_worker(qtbot, cmp_tab):
    st = cmp_tab.controller.state
    first = st.result
    st.set_rules_text("@defaults\n@templates\n")
    qtbot.waitUntil(lambda: st.result is not first and not st.busy, timeout=30_000)
    assert len(st.result.comparisons[0].kernels.names) <= len(first.comparisons[0].kernels.names)
    assert cmp_tab.view.kernel_model.kd is st.result.comparisons[0].kernels
    second = st.result
    st.set_rules_text("(unclosed")
    qtbot.waitUntil(lambda: bool(st.error) and not st.busy, timeout=30_000)
    assert st.result is second and "line 1" in st.error
    assert "unclosed" in cmp_tab.view.note.text()


# --------------------------------------------------------------------------- runs


def test_a_trace_compared_with_itself_shows_zero_deltas(qtbot, window):
    tab = _compare(qtbot, window, [EAGER, EAGER])
    c = tab.controller.state.comparison
    assert not c.not_comparable
    for k, r in c.headline.items():
        assert r["delta"] in (0, None), k
    assert np.all(c.kernels.delta_total == 0)
    m = tab.view.kernel_model
    assert all(m.index(i, 6).data() == "0 ns" for i in range(m.rowCount()))
    assert np.allclose(tab.controller.state.result.ratios[0], 1.0)
    assert tab.view.headline_model.figure("span_ns")["ratio"] == 1.0


@pytest.mark.skipif(AMD is None or NVIDIA is None, reason="bert samples not present")
def test_amd_against_nvidia_compares_by_op_and_says_the_gpus_differ(qtbot, window):
    tab = _compare(qtbot, window, [AMD, NVIDIA])    # issue 17: a fact, not a refusal
    v = tab.view
    assert not tab.controller.state.comparison.not_comparable
    assert not v.banner.isVisibleTo(v)
    assert "GPUs differ" in v.note.text()
    assert v.ops_page.coverage.text().startswith("<b>Matched at: op</b>")


def test_three_runs_stack_three_timelines(qtbot, window):
    tab = _compare(qtbot, window, [EAGER, GRAPH, GRAPH])
    assert len(tab.timelines) == 3 and tab.view.b_combo.count() == 2
    tab.timelines[2].zoom(0.5)
    o = tab.controller.sync.origins
    w = [d.view_state.window for d in _docs(tab)]
    assert w[0][0] - o[0] == w[1][0] - o[1] == w[2][0] - o[2]
    st = tab.controller.state
    st.set_b_index(2)
    assert tab.view.headline_model.figure("span_ns")["ratio"] == pytest.approx(
        st.result.comparisons[1].headline["span_ns"]["ratio"])


def test_drop_onto_a_tab_offers_compare(qtbot, window, monkeypatch):
    (a_tab,) = window.open_paths([EAGER])
    qtbot.waitUntil(lambda: a_tab.state == "loaded", timeout=30_000)
    asked = []
    monkeypatch.setattr(window, "ask_drop_action",
                        lambda target, paths, pos: asked.append(target) or "compare")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(GRAPH))])
    bar = window.tabs.tabBar()
    pos = bar.mapTo(window, bar.tabRect(0).center())
    window.dropEvent(QDropEvent(QPointF(pos), Qt.DropAction.CopyAction, mime,
                                Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier))
    assert asked == [a_tab]
    tab = window.tabs.currentWidget()
    assert isinstance(tab, CompareTab) and tab.paths == [EAGER, GRAPH]
    assert tab.traces[0] is a_tab.document.trace             # A is not read again
    qtbot.waitUntil(lambda: tab.state == "loaded", timeout=30_000)
    assert not window.docks["summary"].isVisible()           # the tab has its own tables
    window.tabs.setCurrentWidget(a_tab)
    assert window.docks["summary"].isVisible()


def test_create_resize_close_without_leaked_workers(qtbot):
    w = MainWindow(persist=False)
    qtbot.addWidget(w)
    w.show()
    tab = _compare(qtbot, w, [EAGER, GRAPH])
    for size in ((900, 600), (1700, 1100)):
        w.resize(*size)
        tab.view.grab()
        assert all(tl.stats.rows > 0 for tl in tab.timelines)
    ctrl, tls = tab.controller, tab.timelines
    w.close_tab(tab)
    assert w.tabs.count() == 0
    assert ctrl.runner.active_count() == 0 and ctrl.runner._pool.activeThreadCount() == 0
    assert all(tl.tasks.active_count() == 0 for tl in tls)
    w.close()
    assert w.runner.active_count() == 0 and w.runner._pool.activeThreadCount() == 0
    qtbot.waitUntil(lambda: not [x for x in QApplication.topLevelWidgets()
                                 if x.isVisible()])


# --------------------------------------------------------------------------- CLI


def test_cli_compare_screenshot(tmp_path):
    out = tmp_path / "compare.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen",
           "HIPSCOPE_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "hipscope", str(EAGER), str(GRAPH), "--compare",
                        "--screenshot", str(out)], env=env, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr
    img = QImage(str(out))
    assert not img.isNull() and img.width() >= 800
    r = subprocess.run([sys.executable, "-m", "hipscope", str(EAGER), "--compare"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "two or more" in r.stderr
