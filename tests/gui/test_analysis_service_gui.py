"""The panels read the document's analysis service: with the report and the tuner on the
same trace, queue delays run once; the ruler's busy % agrees with the report's."""

from __future__ import annotations

import numpy as np
import pytest

from hipscope.analysis import queue_delay as qd
from hipscope.analysis.context import analyses_of
from hipscope.analysis.report import build_report
from hipscope.model import Trace, build_table
from hipscope.qt.document import Document
from hipscope.tuner.context import TraceContext
from hipscope.tuner.rules import propose
from hipscope.views.queue_delay import QueueDelayView
from hipscope.views.tables.views import KernelsTableView
from hipscope.views.timeline import TimelineView
from hipscope.views.tuner_panel import TunerPanel

from .conftest import make_tiny_trace


@pytest.fixture
def counted(monkeypatch):
    calls = []
    real = qd.queue_delays
    monkeypatch.setattr(qd, "queue_delays", lambda tr: calls.append(tr) or real(tr))
    return calls


def test_panels_report_and_tuner_share_one_queue_delay_computation(qtbot, counted):
    doc = Document()
    delay_view, table, tuner = QueueDelayView(doc), KernelsTableView(doc), TunerPanel(doc)
    for w in (delay_view, table, tuner):
        qtbot.addWidget(w)
    trace = make_tiny_trace(200)
    with qtbot.waitSignals([delay_view.data_ready, tuner.proposals_ready], timeout=20000):
        doc.set_trace(trace)
    col = [c.key for c in table.model.columns].index("queue_delay_ns")
    table_delays = table.model.values(col)                # the table's column
    build_report(trace)
    propose(trace)
    assert len(counted) == 1
    assert doc.analyses is analyses_of(trace) is TraceContext(trace).analyses
    delays = doc.analyses.queue_delays()
    assert TraceContext(trace).delays is delays
    assert np.array_equal(table_delays[delays.kernel_rows], delays.from_api_start)
    assert delay_view.view_data.headline.graph_launch_kernels == len(delays.graph_rows)


def _trace_with_a_reversed_kernel() -> Trace:
    """Device 0: [0, 1000) and a kernel recorded end-before-start (1200 -> 900); device 1
    [0, 400) and [600, 1000). The report's old union counted the reversed one's "gap"
    (1000 -> 1200) against the busy time (0.8); the ruler's clamped it (1.0)."""
    k = build_table("kernels", {
        "name": ["a", "b", "c", "d"], "device": np.array([0, 0, 1, 1], np.int16),
        "start": np.array([0, 1200, 0, 600], np.int64),
        "end": np.array([1000, 900, 400, 1000], np.int64)})
    d = build_table("devices", {"index": np.array([0, 1], np.int16), "name": ["g0", "g1"]})
    return Trace(kernels=k, devices=d, meta={"format": "test", "sources": ["t"]})


def test_ruler_busy_agrees_with_the_report(qtbot):
    doc = Document()
    view = TimelineView(doc)
    qtbot.addWidget(view)
    view.resize(1000, 500)
    trace = _trace_with_a_reversed_kernel()
    doc.set_trace(trace)
    assert view.model is not None
    with qtbot.waitSignal(view.range_measured, timeout=5000) as got:
        view.measure(0, 1000)           # both devices' kernel window
    rep = build_report(trace)["gpu_busy_fraction_per_device"]
    # by hand: device 0 is covered by [0, 1000); device 1 by 400 + 400 of 1000
    assert rep == {"0": 1.0, "1": 0.8}
    assert {str(d): f for d, f in got.args[0].busy.items()} == rep
