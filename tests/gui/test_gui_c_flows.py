"""Issue 16 item 12: flows beyond the launch arrow: op -> kernel links and Kineto
cross-stream waits (wait_on_cuda_event_record_corr_id), each kind togglable."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from hipscope.model.view_state import Selection
from hipscope.parsers import open_trace
from hipscope.views.timeline.flows import TimelineFlows

from .conftest import open_loaded

SYNC = Path("/work/shared/samples/kineto/nvidia-a100-event-sync-hta/event_sync_trace.json.gz")

pytestmark = pytest.mark.skipif(not SYNC.exists(), reason="the shared Kineto sample is not here")


def sample_loader(paths, progress, cancelled):
    return open_trace([SYNC])


def _raw():
    with gzip.open(SYNC, "rt") as fh:
        return json.load(fh)["traceEvents"]


@pytest.fixture
def window(make_window, qtbot):
    w = make_window(loader=sample_loader, persist=False, expose=True)
    yield w, open_loaded(qtbot, w, SYNC)
    TimelineFlows.kinds = frozenset(("launch", "op", "wait"))


def _expected(trace, events):
    """For the last kernel launched before the awaited event record: its launching
    call's correlation id, the innermost host op around that call and the syncs that
    wait on the record, all from the raw events."""
    sync = [e for e in events if e.get("cat") == "cuda_sync"
            and "wait_on_cuda_event_record_corr_id" in e["args"]]
    rec = sync[0]["args"]["wait_on_cuda_event_record_corr_id"]
    stream = sync[0]["args"]["wait_on_stream"]
    kern = [e for e in events if e.get("cat") == "kernel" and e["args"]["stream"] == stream
            and e["args"]["correlation"] < rec]
    corr = max(e["args"]["correlation"] for e in kern)
    call = next(e for e in events if e.get("cat") == "cuda_runtime"
                and e["args"]["correlation"] == corr)
    ops = [e for e in events if e.get("cat") in ("cpu_op", "user_annotation")
           and e["tid"] == call["tid"] and e["ts"] <= call["ts"]
           and e["ts"] + e["dur"] >= call["ts"] + call["dur"]]
    inner = max(ops, key=lambda e: (e["ts"], -e["dur"]))["name"] if ops else None
    waits = sorted(e["ts"] for e in events if e.get("cat") == "cuda_sync"
                   and e["args"].get("wait_on_cuda_event_record_corr_id") == rec)
    return corr, inner, waits


def test_kernel_flows_launch_op_and_waits(qtbot, window):
    w, tab = window
    tl, trace = tab.timeline, tab.document.trace
    corr, inner, waits = _expected(trace, _raw())
    k = trace.kernels.column("correlation_id").to_pylist().index(corr)
    tab.document.view_state.select(Selection("kernels", k))
    qtbot.waitUntil(lambda: any(t[4] == "wait" for t in tl.flows.targets), timeout=20_000)
    by_kind = {}
    for t in tl.flows.targets:
        by_kind.setdefault(t[4], []).append(t)
    (launch,) = by_kind["launch"]
    assert trace.api.row(launch[1])["correlation_id"] == corr and launch[2:4] == ("kernels", k)
    (op,) = by_kind["op"]
    assert op[0] == "markers" and trace.markers.row(op[1])["name"] == inner
    m = trace.markers
    got = sorted(m.row(t[3])["start"] for t in by_kind["wait"])
    assert len(got) == len(waits) == 2
    assert all(t[:2] == ("kernels", k) for t in by_kind["wait"])
    # the arrows drawn are the flows whose two ends are on shown rows
    geo = tl.flows.geometry()
    assert "launch" in {g[4] for g in geo}
    r = tl.track_rect
    assert all(r.left() <= x <= r.right() for g in geo for x in (g[0], g[2]))
    tab.document.view_state.set_window(*(lambda s, e: (e + 1000, e + 5000))(
        *tl.span_of("kernels", k)))              # launch and op: both ends left of it
    assert not [g for g in tl.flows.geometry() if g[4] in ("launch", "op")]
    s, e = tl.span_of("kernels", k)
    tab.document.view_state.set_window(s - 100, e + 100)  # the op starts off the left
    (op_g,) = [g for g in tl.flows.geometry() if g[4] == "op"]
    assert op_g[0] == r.left() and op_g[2] > r.left()


def test_an_op_links_to_the_kernels_launched_inside(qtbot, window):
    w, tab = window
    tl, trace = tab.timeline, tab.document.trace
    m = trace.markers
    r = m.column("name").to_pylist().index("ProfilerStep#100")
    step = m.row(r)
    api = trace.api
    inside = {i for i in range(len(api)) if api.row(i)["tid"] == step["tid"]
              and api.row(i)["start"] >= step["start"] and api.row(i)["end"] <= step["end"]}
    want = sorted(i for i, a in enumerate(trace.kernels.numpy("api_index").tolist())
                  if a in inside)
    tab.document.view_state.select(Selection("markers", r))
    got = sorted(t[3] for t in tl.flows.targets if t[4] == "op" and t[2] == "kernels")
    assert got == want and len(want) == 4


def test_flow_kinds_toggle_from_the_view_menu(qtbot, window):
    w, tab = window
    tl = tab.timeline
    tab.document.view_state.select(Selection("kernels", 0))
    assert {t[4] for t in tl.flows.targets} >= {"launch", "op"}
    w.action_by_id["view.flows.op"].setChecked(False)
    assert {t[4] for t in tl.flows.targets} == {"launch"}
    assert w.settings.store.value("timeline/flows_off") in (["op"], "op")
    w.action_by_id["view.flows.launch"].setChecked(False)
    assert tl.flows.targets == [] and tl.arrow_geometry() == []
    w.action_by_id["view.flows.op"].setChecked(True)
    assert {t[4] for t in tl.flows.targets} == {"op"}
