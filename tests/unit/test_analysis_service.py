"""The analysis service (issue 15 item 3): one per trace, each result computed once,
shared by the report, the tuner and the panels' data, lock-guarded and cancellable."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from hipscope.analysis import delay_views as dv
from hipscope.analysis import queue_delay as qd
from hipscope.analysis.context import TraceAnalyses, analyses_of
from hipscope.analysis.report import build_report
from hipscope.model import Trace, build_table
from hipscope.model.progress import Cancelled
from hipscope.parsers import open_trace
from hipscope.tuner.context import TraceContext
from hipscope.tuner.rules import propose
from tests.conftest import DATA

LINKED = DATA / "gpu" / "launch_bound.json.gz"


@pytest.fixture
def counted(monkeypatch):
    """Calls of ``queue_delay.queue_delays``, however it is reached."""
    calls = []
    real = qd.queue_delays

    def spy(trace):
        calls.append(trace)
        return real(trace)

    monkeypatch.setattr(qd, "queue_delays", spy)
    return calls


def test_report_tuner_and_panel_data_run_queue_delays_once(counted):
    trace = open_trace(LINKED, use_cache=False)
    build_report(trace)
    propose(trace)
    dv.compute_view_data(trace, "from_api_start")
    dv.compute_view_data(trace, "from_api_end", "queue")
    dv.headline(trace)
    _ = TraceContext(trace).delays
    assert len(counted) == 1


def test_report_tuner_and_panel_read_the_same_object(monkeypatch):
    trace = open_trace(LINKED, use_cache=False)
    svc = analyses_of(trace)
    summarised = []
    real_summary = qd.summary
    monkeypatch.setattr(qd, "summary", lambda v: summarised.append(v) or real_summary(v))
    build_report(trace)
    delays = svc.queue_delays()
    assert any(v is delays.from_api_start for v in summarised)       # the report's
    assert TraceContext(trace).delays is delays                       # the tuner's
    vd = dv.compute_view_data(trace, "from_api_start")                # the panel's
    assert vd.data is not None and np.array_equal(vd.data.rows, np.sort(delays.kernel_rows))
    assert TraceContext(trace).idle is svc.idle()
    assert analyses_of(trace) is svc


def test_two_threads_asking_at_once_compute_once(monkeypatch):
    trace = open_trace(LINKED, use_cache=False)
    entered, go = threading.Event(), threading.Event()
    calls = []
    real = qd.queue_delays

    def slow(tr):
        calls.append(1)
        entered.set()
        assert go.wait(30)
        return real(tr)

    monkeypatch.setattr(qd, "queue_delays", slow)
    svc = TraceAnalyses(trace)
    got = []
    a = threading.Thread(target=lambda: got.append(svc.queue_delays()))
    a.start()
    assert entered.wait(30)          # A holds the result's lock and computes
    b = threading.Thread(target=lambda: got.append(svc.queue_delays()))
    b.start()
    go.set()
    a.join(30)
    b.join(30)
    assert len(calls) == 1 and len(got) == 2 and got[0] is got[1]


def test_cancelled_result_is_not_kept():
    trace = open_trace(LINKED, use_cache=False)
    svc = TraceAnalyses(trace)
    with pytest.raises(Cancelled):
        svc.kernel_stats(cancelled=lambda: True)
    with pytest.raises(Cancelled):
        build_report(trace, analyses=svc, cancelled=lambda: True)
    assert svc.peek("kernel_stats") is None
    assert svc.kernel_stats().count.sum() == len(trace.kernels)


def test_propose_is_cancellable():
    trace = open_trace(LINKED, use_cache=False)
    with pytest.raises(Cancelled):
        propose(trace, cancelled=lambda: True)


def _kernels_trace(start, end, device) -> Trace:
    n = len(start)
    k = build_table("kernels", {"name": ["k"] * n, "device": np.asarray(device, np.int16),
                                "start": np.asarray(start, np.int64),
                                "end": np.asarray(end, np.int64)})
    return Trace(kernels=k, meta={"format": "test"})


def test_busy_figures_from_plain_interval_arithmetic():
    # device 0: [0,10) and [5,30) overlap, [40,50): busy 40 of a 50 ns window;
    # device 1: [100,110) inside [100,200): 10 + 50 of 100
    tr = _kernels_trace([0, 5, 40, 100, 150], [10, 30, 50, 110, 200], [0, 0, 0, 1, 1])
    svc = TraceAnalyses(tr)
    assert svc.busy_fraction() == {0: 40 / 50, 1: 60 / 100}
    assert build_report(tr, analyses=svc)["gpu_busy_fraction_per_device"] == {
        "0": 40 / 50, "1": 60 / 100}
    assert svc.busy_between(20, 45) == {0: (10 + 5) / 25, 1: 0.0}
    assert svc.concurrency()["per_device"]["0"]["busy_ns"] == 40


def test_the_service_does_not_keep_its_trace_alive():
    import gc
    import weakref

    trace = open_trace(LINKED, use_cache=False)
    analyses_of(trace).queue_delays()
    gone = weakref.ref(trace)
    del trace
    gc.collect()
    assert gone() is None


def test_shared_correlation_ids_are_counted_once_each():
    # kernels 0-4 with correlation ids 7, 7, 8, 9, 9 on one process: 2 ids are shared
    n = 5
    k = build_table("kernels", {"name": ["k"] * n, "device": np.zeros(n, np.int16),
                                "start": np.arange(n, dtype=np.int64) * 10,
                                "end": np.arange(n, dtype=np.int64) * 10 + 5,
                                "pid": np.ones(n, np.int32),
                                "correlation_id": np.array([7, 7, 8, 9, 9], np.int64)})
    warnings = TraceAnalyses(Trace(kernels=k, meta={"format": "t"})).sanity()
    assert "2 correlation ids are shared by several kernels outside graph launches" in warnings
