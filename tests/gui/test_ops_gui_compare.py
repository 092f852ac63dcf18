"""Issue 17 GUI: the comparison tab's Ops table (A | B | Δ | B/A per matched op, the
coverage line and level, the kernel-class rows) and aligning the timelines at a
matched op instance. Expected figures: plain json over the Kineto files."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from hipscope.app.main_window import MainWindow
from hipscope.views import compare_ops as co

from .test_ops_gui_panel import json_attribution

KINETO = Path("/work/shared/samples/kineto")
BERT = "gaunernst_bert-small-uncased__1016001.json.gz"
MI300X = KINETO / "amd-mi300x-bert-tracelens" / BERT
H100 = KINETO / "nvidia-h100-bert-tracelens" / BERT
DATA = Path(__file__).resolve().parents[1] / "data" / "ops"
FLASH = "aten::_flash_attention_forward"


def _per_op(path: Path) -> dict[str, tuple[int, int]]:
    """Plain json: launching-op name -> (op instances that launched work, GPU ns)."""
    calls: dict[str, set] = defaultdict(set)
    ns: dict[str, int] = defaultdict(int)
    for g_start, g_end, op in json_attribution(path)["gpu"]:
        if op is not None:
            calls[op[2]].add(op[:2])
            ns[op[2]] += round((g_end - g_start) * 1000)
    return {k: (len(calls[k]), ns[k]) for k in calls}


def _json_events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def _compare(qtbot, a: Path, b: Path):
    w = MainWindow(persist=False)
    qtbot.addWidget(w)
    w.resize(1600, 1000)
    w.show()
    qtbot.waitExposed(w)
    tab = w.compare_paths([a, b])
    qtbot.waitUntil(lambda: tab.state == "loaded", timeout=60_000)
    view = tab.view
    view.tabs.setCurrentWidget(view.ops_page)
    return w, tab, view, view.ops_page


def _rows(page) -> list[dict]:
    return [page.model.row_at(r) for r in range(page.model.rowCount())]


def _trace_ns(trace, path: Path, ts_us: float) -> int:
    """A Kineto ``ts`` on the trace's clock (the reader's one offset, from its first
    kernel)."""
    k0 = min(e["ts"] for e in _json_events(path) if e.get("cat") == "kernel")
    return int(trace.kernels.numpy("start").min()) - round(k0 * 1000) + round(ts_us * 1000)


@pytest.mark.skipif(not (MI300X.exists() and H100.exists()), reason="BERT samples absent")
def test_the_ops_table_compares_mi300x_and_h100_bert_by_op(qtbot):
    w, tab, view, page = _compare(qtbot, MI300X, H100)
    assert not view.banner.isVisible()            # a different GPU is a fact, not a refusal
    assert "the GPUs differ" in view.note.text()
    text = page.coverage.text()
    assert "Matched at: op" in text and "100 % of A's kernel time, 100 % of B's" in text
    ja, jb = _per_op(MI300X), _per_op(H100)
    rows = _rows(page)
    assert {r["name"] for r in rows} == set(ja) | set(jb)
    for r in rows:                                 # per op name: plain-json figures
        (an, ans), (bn, bns) = ja.get(r["name"], (0, 0)), jb.get(r["name"], (0, 0))
        assert (r["a_count"], r["b_count"]) == (an, bn), r
        assert abs(r["a_gpu_ns"] - ans) <= 60 and abs(r["b_gpu_ns"] - bns) <= 60, r
    deltas = [abs(r["delta_ns"]) for r in rows]
    assert deltas == sorted(deltas, reverse=True)  # by |Δ|, largest first
    assert rows[0]["name"] == FLASH                # flash attention: the largest change
    m = page.model
    assert m.index(0, 6).data() == f"×{rows[0]['b_gpu_ns'] / rows[0]['a_gpu_ns']:.3f}"
    page.table.horizontalHeader().setSortIndicator(6, Qt.SortOrder.AscendingOrder)
    ratios = [r["ratio"] for r in _rows(page)]
    assert ratios == sorted(ratios)
    # the class rows: GEMM time of both vendors' libraries (Tensile Cijk_ / CUTLASS, xmma)
    page.view_combo.setCurrentIndex(page.view_combo.findData("classes"))
    page.view_combo.activated.emit(page.view_combo.currentIndex())
    gemm = next(r for r in _rows(page) if r["class"] == "GEMM")
    want = [sum(round(e["dur"] * 1000) for e in _json_events(p) if e.get("cat") == "kernel"
                and any(s in e["name"] for s in ("Cijk_", "cutlass", "xmma_gemm"))
                and "flash" not in e["name"])       # FlashAttention is built on CUTLASS
            for p in (MI300X, H100)]
    assert abs(gemm["a_gpu_ns"] - want[0]) <= 30 and abs(gemm["b_gpu_ns"] - want[1]) <= 30
    w.close()


@pytest.mark.skipif(not (MI300X.exists() and H100.exists()), reason="BERT samples absent")
def test_align_here_puts_both_origins_at_the_matched_op_instance(qtbot):
    w, tab, view, page = _compare(qtbot, MI300X, H100)
    row = next(r for r in range(page.model.rowCount()) if page.model.row_at(r)["name"] == FLASH)
    page.table.setCurrentIndex(page.model.index(row, 0))
    assert page.align_button.isEnabled() and page.instance.maximum() == 4
    page.instance.setValue(2)
    qtbot.mouseClick(page.align_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.state.alignment is not None
                    and view.state.alignment.label == f"{FLASH} #2", timeout=20_000)
    for tl, trace, path in zip(view.timelines, tab.traces, (MI300X, H100)):
        starts = sorted(e["ts"] for e in _json_events(path)
                        if e.get("cat") == "cpu_op" and e["name"] == FLASH)
        origin = _trace_ns(trace, path, starts[1])
        assert abs(tl.axis_origin - origin) <= 1
        assert abs(tl.document.view_state.window[0] - origin) <= 1
    assert "time 0 = " in view.timeline_titles[0].text()
    # a finer row (module path and shapes): the flash attention of BertLayer_0, the first
    page.view_combo.setCurrentIndex(page.view_combo.findData("rows"))
    page.view_combo.activated.emit(page.view_combo.currentIndex())
    layer0 = next(r for r in range(page.model.rowCount()) if page.model.row_at(r)["name"]
                  == FLASH and "/BertLayer_0/" in page.model.row_at(r)["path"])
    page.table.setCurrentIndex(page.model.index(layer0, 0))
    assert page.instance.maximum() == 1
    page.align_button.click()
    qtbot.waitUntil(lambda: view.state.alignment.label == f"{FLASH} #1", timeout=20_000)
    for tl, trace, path in zip(view.timelines, tab.traces, (MI300X, H100)):
        first = min(e["ts"] for e in _json_events(path)
                    if e.get("cat") == "cpu_op" and e["name"] == FLASH)
        assert abs(tl.axis_origin - _trace_ns(trace, path, first)) <= 1
    # back to the run starts from the "Align at" choice
    view.align_kind.setCurrentIndex(view.align_kind.findData("start"))
    view.align_kind.activated.emit(view.align_kind.currentIndex())
    qtbot.waitUntil(lambda: view.state.alignment.label == "start", timeout=20_000)
    assert [tl.axis_origin for tl in view.timelines] == [
        t.time_range()[0] for t in tab.traces]
    w.close()


def test_eager_against_cuda_graphs_matches_at_the_steps(qtbot):
    w, tab, view, page = _compare(qtbot, DATA / "eager.json.gz", DATA / "cudagraphs.json.gz")
    text = page.coverage.text()
    assert "Matched at: step" in text and "matched steps hold 100 % of A's" in text
    (row,) = _rows(page)
    steps = [sum(1 for e in _json_events(p) if e.get("cat") == "user_annotation"
                 and e["name"].startswith("ProfilerStep#")) for p in (DATA / "eager.json.gz",
                                                                   DATA / "cudagraphs.json.gz")]
    assert row["name"] == "ProfilerStep#" and (row["a_count"], row["b_count"]) == tuple(steps)
    assert co.coverage_text(None) == co.NO_OPS
    # align at the second step: each run's own ProfilerStep range (host annotation)
    page.table.setCurrentIndex(page.model.index(0, 0))
    page.instance.setValue(2)
    page.align_button.click()
    qtbot.waitUntil(lambda: view.state.alignment is not None
                    and view.state.alignment.label == "ProfilerStep# #2", timeout=20_000)
    for tl, trace, p in zip(view.timelines, tab.traces, (DATA / "eager.json.gz",
                                                        DATA / "cudagraphs.json.gz")):
        starts = sorted(e["ts"] for e in _json_events(p) if e.get("cat") == "user_annotation"
                        and e["name"].startswith("ProfilerStep#"))
        assert abs(tl.axis_origin - _trace_ns(trace, p, starts[1])) <= 1
    w.close()


@pytest.mark.skipif(not (MI300X.exists() and H100.exists()), reason="BERT samples absent")
def test_both_vendors_timelines_colour_gemms_alike_by_class(qtbot):
    from hipscope.views.timeline import palette as pal

    w, tab, view, page = _compare(qtbot, MI300X, H100)
    qtbot.mouseClick(view.class_check, Qt.MouseButton.LeftButton)
    for tl in view.timelines:
        qtbot.waitUntil(lambda tl=tl: tl.scale.mode == "class", timeout=10_000)
    gemm = {"amd": "Cijk_", "nvidia": "xmma_gemm"}        # hipBLASLt / cuBLAS names
    for tl, needle in zip(view.timelines, gemm.values()):
        names = tl.model.names["kernels"]
        keys = [int(k) for r in tl.model.rows if r.table == "kernels" and r.kind == "track"
                and r.events is not None
                for c, k in zip(tl.model.codes["kernels"][r.events.index], r.events.keys)
                if needle in names[c]]
        assert keys and {tuple(tl.palette.rgb[k]) for k in keys} == {pal.CLASS_RGB[0]}
    view.delta_check.setChecked(True)                      # one colouring at a time
    assert not view.class_check.isChecked()
    assert {d.view_state.color_mode for d in tab.controller.documents} == {"delta"}
    w.close()


def _kernel_starts(path: Path, name: str) -> list[float]:
    return sorted(e["ts"] for e in _json_events(path) if e.get("cat") == "kernel"
                  and e["name"] == name)


def test_the_align_at_menu_reads_the_op_alignment_and_moves_on_from_it(qtbot):
    runs = (DATA / "eager.json.gz", DATA / "cudagraphs.json.gz")
    w, tab, view, page = _compare(qtbot, *runs)
    steps = [sorted(e["ts"] for e in _json_events(p) if e.get("cat") == "user_annotation"
                    and e["name"].startswith("ProfilerStep#")) for p in runs]
    op_item = view.align_kind.model().item(view.align_kind.findData("op"))
    assert not op_item.isEnabled()                 # no op to align at yet
    page.table.setCurrentIndex(page.model.index(0, 0))
    page.instance.setValue(2)
    page.align_button.click()
    qtbot.waitUntil(lambda: view.state.alignment is not None
                    and view.state.alignment.label == "ProfilerStep# #2", timeout=20_000)
    assert view.align_kind.currentText() == "Op instance" and op_item.isEnabled()
    assert (view.align_name.currentText(), view.align_n.value()) == ("ProfilerStep#", 2)
    # another instance of the same op from the menu's number
    view.align_n.setValue(1)
    view.align_n.editingFinished.emit()
    qtbot.waitUntil(lambda: view.state.alignment.label == "ProfilerStep# #1", timeout=20_000)
    for tl, trace, p, ts in zip(view.timelines, tab.traces, runs, steps):
        assert abs(tl.axis_origin - _trace_ns(trace, p, ts[0])) <= 1
    # then a kernel instance: the menu's other kinds still work after an op
    nvjet = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"
    view.align_kind.setCurrentIndex(view.align_kind.findData("kernel"))
    view.align_kind.activated.emit(view.align_kind.currentIndex())
    view.align_name.setCurrentIndex(view.align_name.findData(nvjet))
    view.align_name.activated.emit(view.align_name.currentIndex())
    qtbot.waitUntil(lambda: view.state.alignment.label == f"{nvjet} #1", timeout=20_000)
    assert view.align_kind.currentText() == "Kernel instance"
    view.align_n.setValue(3)
    view.align_n.editingFinished.emit()
    qtbot.waitUntil(lambda: view.state.alignment.label == f"{nvjet} #3", timeout=20_000)
    for tl, trace, p in zip(view.timelines, tab.traces, runs):
        assert abs(tl.axis_origin - _trace_ns(trace, p, _kernel_starts(p, nvjet)[2])) <= 1
    view.align_kind.setCurrentIndex(view.align_kind.findData("start"))
    view.align_kind.activated.emit(view.align_kind.currentIndex())
    qtbot.waitUntil(lambda: view.state.alignment.label == "start", timeout=20_000)
    assert [tl.axis_origin for tl in view.timelines] == [t.time_range()[0] for t in tab.traces]
    # and back to the op from the menu: the instance it was aligned at (#1, not #3)
    view.align_kind.setCurrentIndex(view.align_kind.findData("op"))
    view.align_kind.activated.emit(view.align_kind.currentIndex())
    qtbot.waitUntil(lambda: view.state.alignment.label == "ProfilerStep# #1", timeout=20_000)
    for tl, trace, p, ts in zip(view.timelines, tab.traces, runs, steps):
        assert abs(tl.axis_origin - _trace_ns(trace, p, ts[0])) <= 1
    w.close()
