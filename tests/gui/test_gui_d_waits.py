"""Issue 16 item 12, HIP event records: cross-stream waits held in the markers table
(``wait_on_correlation_id``, as the rocpd reader models ``rocpd_hip_event``) are drawn
as wait flows from the event record to each wait on it, and toggle with the others."""

from __future__ import annotations

import numpy as np
import pytest

from hipscope.model import Trace, build_table
from hipscope.model.view_state import Selection
from hipscope.views.timeline.flows import TimelineFlows

from .conftest import open_loaded, stand_in

T0 = 5_000_000_000
# (name, stream, start, end, pid, correlation id, waits on): the records and waits of
# two processes that reuse correlation id 100 (a wait must find its own process' record)
MARKERS = [("HIP_EVENT_RECORD", 1, 40_000, 40_500, 7, 100, None),
           ("HIP_EVENT_WAIT", 2, 41_000, 41_200, 7, 101, 100),
           ("HIP_EVENT_WAIT", 3, 45_000, 45_300, 7, 102, 100),
           ("HIP_EVENT_RECORD", 1, 60_000, 60_400, 8, 100, None),
           ("HIP_EVENT_WAIT", 2, 70_000, 70_100, 8, 103, 100)]


def hip_event_trace() -> Trace:
    n = 12
    start = T0 + np.arange(n, dtype=np.int64) * 8_000
    kernels = build_table("kernels", {
        "name": [f"kernel_{i % 3}" for i in range(n)], "device": np.zeros(n, np.int16),
        "start": start, "end": start + 5_000, "queue": (np.arange(n) % 3).astype(np.int32),
        "stream": (np.arange(n) % 3 + 1).astype(np.int32), "pid": np.full(n, 7, np.int32),
        "correlation_id": np.arange(n, dtype=np.int64)})
    cols = list(zip(*MARKERS))
    markers = build_table("markers", {
        "name": list(cols[0]), "domain": ["hip_event"] * len(MARKERS),
        "start": T0 + np.array(cols[2], np.int64), "end": T0 + np.array(cols[3], np.int64),
        "depth": np.zeros(len(MARKERS), np.int16), "pid": np.array(cols[4], np.int32),
        "device": np.zeros(len(MARKERS), np.int16), "stream": np.array(cols[1], np.int32),
        "correlation_id": np.array(cols[5], np.int64),
        "wait_on_correlation_id": list(cols[6])})
    devices = build_table("devices", {"index": np.array([0], np.int16),
                                      "name": ["AMD Instinct MI300X"], "vendor": ["AMD"],
                                      "arch": ["gfx942"]})
    return Trace(kernels=kernels, markers=markers, devices=devices,
                 meta={"format": "rocpd", "sources": ["built"], "clock": "test"})


def _expected_links(selected: int) -> list[tuple[int, int]]:
    """(record row, wait row) pairs of a selected marker, from the rows above."""
    name, _s, _a, _b, pid, corr, on = MARKERS[selected]
    if on is not None:
        return [(next(i for i, m in enumerate(MARKERS) if m[4] == pid and m[5] == on
                      and m[6] is None), selected)]
    return [(selected, i) for i, m in enumerate(MARKERS) if m[4] == pid and m[6] == corr]


@pytest.fixture
def window(make_window, qtbot, tmp_path):
    w = make_window(loader=lambda paths, progress, cancelled: hip_event_trace(), persist=False,
                    expose=True)
    tab = open_loaded(qtbot, w, stand_in(tmp_path, "hip_events.db"))
    qtbot.waitUntil(lambda: tab.timeline.model is not None)
    yield w, tab
    TimelineFlows.kinds = frozenset(("launch", "op", "wait"))


@pytest.mark.parametrize("selected", [0, 1, 2, 3, 4])
def test_hip_event_waits_are_drawn_from_the_record_to_each_wait(qtbot, window, selected):
    w, tab = window
    tl = tab.timeline
    lo = T0 + 38_000
    tl.set_window(lo, lo + 40_000 if selected < 3 else lo + 40_000 + 30_000)
    tab.document.view_state.select(Selection("markers", selected))
    want = _expected_links(selected)
    assert [(t[1], t[3]) for t in tl.flows.targets if t[4] == "wait"] == want
    arrows = [g for g in tl.flows.geometry() if g[4] == "wait"]
    assert len(arrows) == len(want)
    for (rec, wait), (x0, y0, x1, y1, _k) in zip(want, arrows):
        a, b = tl.event_anchor("markers", rec), tl.event_anchor("markers", wait)
        assert a is not None and b is not None             # both markers are drawn
        assert (x0, y0, x1, y1) == (a[1], a[2], b[0], b[2])  # record's end -> wait's start
        assert x0 < x1          # (GPU-side markers share the GPU's "Annotations" row)
    tl.repaint()
    assert tl.stats.rects > 0


def test_details_lists_the_waits_of_a_record(qtbot, window):
    w, tab = window
    details = tab.panels["details"]
    with qtbot.waitSignal(details.args_shown):
        tab.document.view_state.select(Selection("markers", 0))
    tree = details.tree
    sec = next(tree.topLevelItem(i) for i in range(tree.topLevelItemCount())
               if tree.topLevelItem(i).text(0) == "Cross-stream waits")
    rows = [(sec.child(j).text(0), sec.child(j).text(1)) for j in range(sec.childCount())]
    assert rows == [("Waited on by", f"Marker #{wait}: {MARKERS[wait][0]}")
                    for _rec, wait in _expected_links(0)]


def test_wait_flows_toggle_off(qtbot, window):
    w, tab = window
    tl = tab.timeline
    TimelineFlows.kinds = frozenset(("launch", "op"))
    tab.document.view_state.select(Selection("markers", 0))
    assert [t for t in tl.flows.targets if t[4] == "wait"] == []
    TimelineFlows.kinds = frozenset(("launch", "op", "wait"))
    tab.document.view_state.select(Selection("markers", 1))
    assert len([t for t in tl.flows.targets if t[4] == "wait"]) == 1
