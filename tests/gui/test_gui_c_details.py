"""Issue 16 item 11: Details shows everything the file has (Kineto args), the ops
enclosing a kernel's launch, the row a marker is drawn on, and a double click on a
launched kernel brings the timeline to it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from hipscope.analysis.source_args import event_args, source_index
from hipscope.model.view_state import Selection
from hipscope.parsers import open_trace
from hipscope.qt.document import Document
from hipscope.views.details import DetailsView
from hipscope.views.timeline import TimelineView

SAMPLES = Path("/work/shared/samples/kineto")
BERT = SAMPLES / "nvidia-h100-bert-tracelens/gaunernst_bert-small-uncased__1016001.json.gz"
SYNC = SAMPLES / "nvidia-a100-event-sync-hta/event_sync_trace.json.gz"

pytestmark = pytest.mark.skipif(not BERT.exists() or not SYNC.exists(),
                                reason="the shared Kineto samples are not here")


def _raw(path):
    """The file's events, each with ``_ns``: its start on the trace's clock (Kineto's
    baseTimeNanoseconds plus ts in microseconds)."""
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    base = doc.get("baseTimeNanoseconds") or 0
    for e in doc["traceEvents"]:
        if "ts" in e:
            e["_ns"] = base + e["ts"] * 1000
    return doc["traceEvents"]


def _raw_op(events, name, start_ns, tid):
    """The raw X event of that name and thread nearest in time to ``start_ns``."""
    cands = [e for e in events if e.get("ph") == "X" and e.get("name") == name
             and e.get("tid") == tid and e.get("cat") in ("cpu_op", "user_annotation")]
    return min(cands, key=lambda e: abs(e["_ns"] - start_ns))


def _items(tree):
    out = []

    def walk(item):
        for i in range(item.childCount()):
            out.append(item.child(i))
            walk(item.child(i))

    for i in range(tree.topLevelItemCount()):
        out.append(tree.topLevelItem(i))
        walk(tree.topLevelItem(i))
    return out


def test_every_cpu_op_gets_its_args_from_the_file():
    trace = open_trace([BERT])
    events = _raw(BERT)
    idx = source_index(trace)
    m = trace.markers
    dom = m.column("domain").to_pylist()
    rows = [i for i, d in enumerate(dom) if d == "cpu_op"]
    assert len(rows) == sum(1 for e in events if e.get("cat") == "cpu_op")
    for r in rows:
        row = m.row(r)
        want = _raw_op(events, row["name"], row["start"], row["tid"])["args"]
        assert event_args(trace, idx, "markers", r) == want
    # kernels by their correlation id
    kc = trace.kernels.column("correlation_id").to_pylist()
    raw_k = {e["args"]["correlation"]: e["args"] for e in events if e.get("cat") == "kernel"}
    assert all(event_args(trace, idx, "kernels", i) == raw_k[c] for i, c in enumerate(kc))


def test_details_lists_input_dims_and_the_row(qtbot):
    doc = Document()
    view = DetailsView(doc)
    qtbot.addWidget(view)
    doc.set_trace(open_trace([BERT]))
    m = doc.trace.markers
    r = next(i for i, (d, n) in enumerate(zip(m.column("domain").to_pylist(),
                                             m.column("name").to_pylist()))
             if d == "cpu_op" and n == "aten::slice")
    want = _raw_op(_raw(BERT), "aten::slice", m.row(r)["start"], m.row(r)["tid"])["args"]
    with qtbot.waitSignal(view.args_shown, timeout=20_000):
        doc.view_state.select(Selection("markers", r))
    shown = {it.text(0): it.text(1) for it in _items(view.tree)}
    for key in ("Input Dims", "Input type", "Input Strides", "Concrete Inputs", "External id"):
        assert shown[key] == (json.dumps(want[key]) if not isinstance(want[key], str)
                              else want[key])
    assert shown["Row"].startswith(("top row", "L"))
    view.close()


def test_kernel_shows_enclosing_ops_and_waits(qtbot):
    doc = Document()
    view = DetailsView(doc)
    qtbot.addWidget(view)
    doc.set_trace(open_trace([SYNC]))
    events = _raw(SYNC)
    trace = doc.trace
    api = trace.api.row(int(trace.kernels.numpy("api_index")[0]))
    raw_api = next(e for e in events if e.get("cat") == "cuda_runtime"
                   and e["args"]["correlation"] == api["correlation_id"])
    a0, a1 = raw_api["ts"], raw_api["ts"] + raw_api["dur"]
    want = [e["name"] for e in sorted(
        (e for e in events if e.get("cat") in ("cpu_op", "user_annotation")
         and e.get("tid") == raw_api["tid"] and e["ts"] <= a0 and e["ts"] + e["dur"] >= a1),
        key=lambda e: (e["ts"], -e["dur"]))]
    assert len(want) >= 2
    with qtbot.waitSignal(view.args_shown, timeout=20_000):
        doc.view_state.select(Selection("kernels", 0))
    items = _items(view.tree)
    heads = [it.text(0) for it in items if it.parent() is None]
    ops = next(it for it in items if it.text(0).startswith("Enclosing ops"))
    assert [ops.child(i).text(1).split("  (")[0] for i in range(ops.childCount())] == want
    assert any(h.startswith("From the file") for h in heads)
    # the last kernel before the event record is waited on by the two Event Syncs
    rec = next(e["args"]["wait_on_cuda_event_record_corr_id"] for e in events
               if e.get("cat") == "cuda_sync" and "wait_on_cuda_event_record_corr_id" in e["args"])
    kc = trace.kernels.column("correlation_id").to_pylist()
    last = max((c, i) for i, c in enumerate(kc) if c < rec)[1]
    with qtbot.waitSignal(view.args_shown, timeout=20_000):
        doc.view_state.select(Selection("kernels", last))
    waits = [it for it in _items(view.tree) if it.text(0) == "Waited on by"]
    n_waits = sum(1 for e in events if e.get("cat") == "cuda_sync"
                  and e["args"].get("wait_on_cuda_event_record_corr_id") == rec)
    assert len(waits) == n_waits == 2
    view.close()


def test_double_click_on_a_launched_kernel_reveals_it(qtbot):
    doc = Document()
    tl = TimelineView(doc)
    view = DetailsView(doc)
    for w in (tl, view):
        qtbot.addWidget(w)
    tl.resize(1200, 600)
    doc.set_trace(open_trace([SYNC]))
    trace = doc.trace
    k = int(trace.kernels.numpy("api_index")[2])
    ks, ke = int(trace.kernels.numpy("start")[2]), int(trace.kernels.numpy("end")[2])
    lo, hi = doc.full_range()
    doc.view_state.set_window(lo, lo + 1000)              # far from the kernel
    doc.view_state.select(Selection("api", k))
    view.resize(600, 900)
    view.show()
    qtbot.waitExposed(view)
    item = next(it for it in _items(view.tree) if it.text(0) == "#2")
    view.tree.itemDoubleClicked.emit(item, 0)       # as test_details does
    assert doc.view_state.selection == Selection("kernels", 2)
    t0, t1 = doc.view_state.window
    assert t0 <= ks and ke <= t1
    view.close()
    tl.close()


def test_row_is_the_timeline_row_the_marker_is_drawn_on(qtbot):
    doc = Document()
    tl = TimelineView(doc)
    view = DetailsView(doc)
    for w in (tl, view):
        qtbot.addWidget(w)
    doc.set_trace(open_trace([SYNC]))
    events = _raw(SYNC)
    m = doc.trace.markers
    r = m.column("name").to_pylist().index("aten::empty")
    e = next(x for x in events if x.get("name") == "aten::empty")
    level = sum(1 for o in events if o.get("cat") == e["cat"] and o.get("tid") == e["tid"]
                and o is not e and o["ts"] <= e["ts"] and o["ts"] + o["dur"] >= e["ts"] + e["dur"])
    with qtbot.waitSignal(view.args_shown, timeout=20_000):
        doc.view_state.select(Selection("markers", r))
    shown = {it.text(0): it.text(1) for it in _items(view.tree)}
    assert shown["Row"].split(";")[0] == f"L{level}"
    label = tl.model.rows[int(tl.model.track_of["markers"][r])].label
    assert label.endswith(f"L{level}")
    view.close()
    tl.close()
