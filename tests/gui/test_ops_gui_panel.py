"""Issue 17 GUI: the Ops panel (nn.Module -> launching op -> kernels), its
unattributed line, the reason when a trace has no ops, and what selecting and
double-clicking a row does to the timeline. Expected figures: plain json over the
Kineto file (the launching op is the innermost cpu_op on the launch call's thread
whose interval holds the call's start)."""

from __future__ import annotations

import bisect
import gzip
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

from hipscope.app.main_window import MainWindow
from hipscope.model import Trace, build_table
from hipscope.views.ops import panel as op

from .conftest import make_tiny_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "ops"
EAGER = DATA / "eager.json.gz"
GPU_CATS = ("kernel", "gpu_memset", "gpu_memcpy")


def json_attribution(path: Path) -> dict:
    """Plain json: per launching-op name {count, gpu_ns, kernels}; per GPU event its
    op (ts, end, name) or None; the first GPU event ts (for the clock offset)."""
    with gzip.open(path, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    ops = defaultdict(list)                       # (pid, tid) -> [(ts, -end, name, i)]
    for i, e in enumerate(events):
        if e.get("cat") == "cpu_op":
            ops[(e["pid"], e["tid"])].append((e["ts"], -(e["ts"] + e["dur"]), e["name"], i))
    for v in ops.values():
        v.sort()
    calls = {e["args"]["correlation"]: e for e in events
             if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e["args"]}
    out: dict = {"ops": defaultdict(lambda: {"count": 0, "gpu_ns": 0, "kernels": 0}),
                 "gpu": [], "unattributed_ns": 0}
    for e in events:
        if e.get("cat") == "cpu_op":
            out["ops"][e["name"]]["count"] += 1
    for e in events:
        if e.get("cat") not in GPU_CATS:
            continue
        ns = round(e["dur"] * 1000)
        call = calls.get(e["args"].get("correlation"))
        inner = None
        if call is not None:
            cand = ops.get((call["pid"], call["tid"]), [])
            for ts, negend, name, _i in cand[:bisect.bisect_right(cand, (call["ts"], 0))]:
                if ts <= call["ts"] < -negend:
                    inner = (ts, -negend, name)      # later starts are inner
        out["gpu"].append((e["ts"], e["ts"] + e["dur"], inner))
        if inner is None:
            out["unattributed_ns"] += ns
            continue
        row = out["ops"][inner[2]]
        row["gpu_ns"] += ns
        row["kernels"] += 1
    return out


def _open(qtbot, paths, loader=None):
    w = MainWindow(persist=False, **({"loader": loader} if loader else {}))
    qtbot.addWidget(w)
    w.resize(1600, 1000)
    w.show()
    qtbot.waitExposed(w)
    (tab,) = w.open_paths(paths)
    qtbot.waitUntil(lambda: tab.state == "loaded", timeout=30_000)
    panel = tab.panels["ops"]
    qtbot.waitUntil(lambda: panel.data is not None, timeout=30_000)
    return w, tab, panel


def _top_rows(panel) -> list[tuple[str, int, int, int]]:
    m = panel.model
    return [(m.item(r, op.NAME).text(), int(m.item(r, op.COUNT).data(op.SORT_ROLE)),
             int(m.item(r, op.GPU).data(op.SORT_ROLE)),
             int(round(m.item(r, op.KPC).data(op.SORT_ROLE) * m.item(r, op.COUNT).data(
                 op.SORT_ROLE)))) for r in range(m.rowCount())]


def test_the_ops_tree_holds_each_launching_op_with_plain_json_figures(qtbot):
    want = json_attribution(EAGER)
    w, tab, panel = _open(qtbot, [EAGER])
    assert not panel.is_empty
    rows = _top_rows(panel)        # no nn.Module frames in this recording: ops at the top
    expected = sorted(((n, r["count"], r["gpu_ns"], r["kernels"]) for n, r in
                       want["ops"].items() if r["kernels"]), key=lambda r: -r[2])
    assert [r[0] for r in rows] == [r[0] for r in expected]       # GPU time, largest first
    for got, exp in zip(rows, expected):
        assert got[1] == exp[1] and got[3] == exp[3], (got, exp)
        assert abs(got[2] - exp[2]) <= exp[3], (got, exp)          # 1 ns rounding a kernel
    assert "Unattributed:</b> 0 ns of the GPU time" in panel.summary.text()
    # the kernels under aten::addmm: names as the timeline shows them
    addmm = panel.model.item(0, op.NAME)
    assert addmm.text() == "aten::addmm"
    kids = {addmm.child(i, op.NAME).text() for i in range(addmm.rowCount())}
    assert "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT" in kids
    # sortable: by count, ascending
    panel.tree.sortByColumn(op.COUNT, Qt.SortOrder.AscendingOrder)
    counts = [r[1] for r in _top_rows(panel)]
    assert counts == sorted(counts)
    w.close()


def test_selecting_an_op_highlights_its_calls_and_kernels_double_click_zooms(qtbot):
    want = json_attribution(EAGER)
    w, tab, panel = _open(qtbot, [EAGER])
    w.commands.show_panel("ops")                 # its dock shares a tab group: raise it
    qtbot.waitUntil(lambda: panel.tree.isVisible(), timeout=5_000)
    tl = tab.timeline
    qtbot.waitUntil(lambda: tl.model is not None, timeout=10_000)
    ix = panel.model.index(0, op.NAME)
    assert ix.data() == "aten::addmm"
    mine = [g for g in want["gpu"] if g[2] is not None and g[2][2] == "aten::addmm"]
    calls = {g[2][:2] for g in mine}
    with qtbot.waitSignal(panel.highlighted, timeout=10_000):
        panel.tree.setCurrentIndex(ix)
    found = tl.found
    assert found is not None
    tables = {t: int(m.sum()) for t, m in found.masks.items()}
    assert tables["kernels"] + tables["copies"] == len(mine)
    assert tables["markers"] == len(calls)                # the op's own ranges, host lane
    assert len(found) == len(mine) + len(calls)
    w.find_next()                                  # F3 steps through them
    sel = tab.document.view_state.selection
    assert sel is not None and bool(found.masks[sel.table][sel.row])
    # double-click: the window shows the first call and the work it launched
    s_us = min(calls)[0]
    e_us = max([min(calls)[1]] + [g[1] for g in mine if g[2][:2] == min(calls)])
    k0 = min(g[0] for g in want["gpu"])
    offset = int(tab.document.trace.kernels.numpy("start").min()) - round(k0 * 1000)
    s, e = round(s_us * 1000) + offset, round(e_us * 1000) + offset
    with qtbot.waitSignal(panel.highlighted, timeout=10_000):
        rect = panel.tree.visualRect(ix)
        qtbot.mousePress(panel.tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        qtbot.mouseDClick(panel.tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    t0, t1 = tab.document.view_state.window
    pad = (e - s) // 20
    assert abs(t0 - (s - pad)) <= 2 and abs(t1 - (e + pad)) <= 2, ((t0, t1), (s, e))
    # Esc clears the selection: the timeline gets the find query back (none)
    panel.tree.setFocus()
    with qtbot.waitSignal(panel.highlighted, timeout=10_000):
        qtbot.keyClick(panel.tree, Qt.Key.Key_Escape)
    assert tl.found is None and not panel.tree.selectionModel().hasSelection()
    # closing the tab with a highlight on: the panel gives it back, nothing raises
    with qtbot.waitSignal(panel.highlighted, timeout=10_000):
        panel.tree.setCurrentIndex(ix)
    w.close_current_tab()
    qtbot.waitUntil(lambda: w.tabs.count() == 0, timeout=10_000)
    w.close()


def test_a_trace_without_ops_says_why(qtbot, tmp_path):
    p = tmp_path / "tiny.trace"
    p.write_text("stand-in path; the loader builds the trace")
    w, tab, panel = _open(qtbot, [p], loader=lambda paths, progress, cancelled:
                          make_tiny_trace(60))
    qtbot.waitUntil(lambda: panel.data is not None, timeout=10_000)
    assert panel.is_empty
    assert panel.empty.text().startswith("This trace records no host ops")
    w.close()


def _ops_but_no_launch_links() -> Trace:
    """Host ops around every launch call, but kernels without a link to their call
    (a trace that starts mid-stream, or a tool that drops correlation ids)."""
    t = make_tiny_trace(40)
    api = t.api
    start, end = api.numpy("start"), api.numpy("end")
    markers = build_table("markers", {
        "name": ["aten::mm"] * len(api), "domain": ["cpu_op"] * len(api),
        "start": start - 100, "end": end + 100, "pid": api.numpy("pid"),
        "tid": api.numpy("tid"), "depth": np.zeros(len(api), np.int16)})
    kernels = t.kernels.data.drop_columns(["api_index"])
    return Trace(kernels=build_table("kernels", {c: kernels.column(c) for c in
                                                 kernels.column_names}),
                 api=api, markers=markers, devices=t.devices, meta=dict(t.meta))


def test_a_trace_whose_kernels_have_no_launch_call_says_so(qtbot, tmp_path):
    p = tmp_path / "mid-stream.trace"
    p.write_text("stand-in path; the loader builds the trace")
    trace = _ops_but_no_launch_links()
    w, tab, panel = _open(qtbot, [p], loader=lambda paths, progress, cancelled: trace)
    assert panel.is_empty
    assert panel.empty.text().startswith(
        f"None of the {len(trace.kernels) + len(trace.copies):,} kernels and copies has a "
        "recorded launch call")
    w.close()


MI300X = Path("/work/shared/samples/kineto/amd-mi300x-bert-tracelens/"
              "gaunernst_bert-small-uncased__1016001.json.gz")


def _json_module_gpu_ns(path: Path, module: str) -> tuple[int, int]:
    """Plain json: (calls of nn.Module ``module``, GPU ns of the kernels and copies
    whose launch call starts inside one of them on its thread)."""
    with gzip.open(path, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    ranges = [(e["pid"], e["tid"], e["ts"], e["ts"] + e["dur"]) for e in events
              if e.get("cat") == "python_function" and e["name"] == f"nn.Module: {module}"]
    calls = {e["args"]["correlation"]: e for e in events
             if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e["args"]}
    ns = 0
    for e in events:
        c = calls.get(e.get("args", {}).get("correlation")) if e.get("cat") in GPU_CATS \
            else None
        if c is not None and any(p == c["pid"] and t == c["tid"] and s <= c["ts"] < x
                                 for p, t, s, x in ranges):
            ns += round(e["dur"] * 1000)
    return len(ranges), ns


@pytest.mark.skipif(not MI300X.exists(), reason="real BERT sample not present")
def test_modules_nest_by_path_with_the_work_launched_inside_them(qtbot):
    w, tab, panel = _open(qtbot, [MI300X])
    chain = ["BertLMHeadModel_0", "BertModel_0", "BertEncoder_0", "BertLayer_0"]
    item = None
    for name in chain:                              # BertLayer_0 sits under BertEncoder_0 ...
        parent = panel.model.invisibleRootItem() if item is None else item
        item = next(parent.child(r, op.NAME) for r in range(parent.rowCount())
                    if parent.child(r, op.NAME).text() == name)
    row = item.index().row()
    par = item.parent()
    calls, ns = _json_module_gpu_ns(MI300X, "BertLayer_0")
    assert calls == 1 and ns > 0
    assert int(par.child(row, op.COUNT).data(op.SORT_ROLE)) == calls
    assert abs(par.child(row, op.GPU).data(op.SORT_ROLE) - ns) <= 12
    w.close()
