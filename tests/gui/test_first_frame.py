"""The timeline's first frame comes before the docks' work (issue 14): the document's
job runner holds the docks' tasks until the timeline drew the trace, and lets them go
when it cannot draw (hidden, failed); waiting for the runner or closing it never
leaves a held task behind."""

from __future__ import annotations

import threading

import pytest

from hipscope.analysis import lod
from hipscope.qt.document import Document
from hipscope.qt.tasks import TaskRunner
from hipscope.views.timeline import TimelineView
from hipscope.views.timeline import view as view_mod

from .conftest import make_tiny_trace

DOCK_WAIT_S = 2.0     # how long the timeline's prepare waits for a dock that runs early


@pytest.fixture
def in_worker(monkeypatch):
    """Every trace is prepared in a worker (as a big one is)."""
    monkeypatch.setattr(view_mod, "SYNC_LIMIT", 0)


def _timeline(qtbot, shown: bool) -> TimelineView:
    v = TimelineView(Document())
    qtbot.addWidget(v)
    v.resize(1000, 500)
    if shown:
        v.show()
        qtbot.waitExposed(v)
    return v


def _dock(doc: Document, log: list, ran: threading.Event) -> None:
    """A dock that starts its analysis when a trace loads (priority 0, like the panels)."""
    scope = doc.scope("dock")

    def work(progress, cancelled):
        log.append(("dock", getattr(doc, "frame_drawn", None)))
        ran.set()
        return None

    doc.trace_loaded.connect(lambda _t: scope.submit("stats", work))


def test_docks_start_after_the_first_frame(qtbot, monkeypatch, in_worker):
    v = _timeline(qtbot, shown=True)
    log: list = []
    ran = threading.Event()
    real = lod.prepare

    def prepare(*a, **k):
        # a dock that is not held runs now, while the timeline prepares
        log.append(("prepare: a dock ran meanwhile", ran.wait(DOCK_WAIT_S)))
        return real(*a, **k)

    monkeypatch.setattr(lod, "prepare", prepare)
    _dock(v.document, log, ran)
    with qtbot.waitSignal(v.prepared, timeout=20_000):
        v.document.set_trace(make_tiny_trace(200))
    qtbot.waitUntil(ran.is_set, timeout=20_000)
    assert log[0] == ("prepare: a dock ran meanwhile", False)
    assert log[1] == ("dock", True)          # after the frame was drawn
    assert v.stats.rects > 0


def test_a_hidden_timeline_does_not_hold_the_docks(qtbot, in_worker):
    v = _timeline(qtbot, shown=False)
    log: list = []
    ran = threading.Event()
    _dock(v.document, log, ran)
    v.document.set_trace(make_tiny_trace(200))
    qtbot.waitUntil(ran.is_set, timeout=20_000)
    assert v.model is not None               # released once the rows were ready


def test_a_failed_prepare_lets_the_docks_go(qtbot, monkeypatch, in_worker):
    v = _timeline(qtbot, shown=True)

    def broken(*a, **k):
        raise RuntimeError("no rows")

    monkeypatch.setattr(lod, "prepare", broken)
    log: list = []
    ran = threading.Event()
    _dock(v.document, log, ran)
    v.document.set_trace(make_tiny_trace(200))
    qtbot.waitUntil(ran.is_set, timeout=20_000)
    assert v.model is None


def test_a_document_without_timeline_holds_nothing(qtbot):
    doc = Document()
    log: list = []
    ran = threading.Event()
    _dock(doc, log, ran)
    doc.set_trace(make_tiny_trace(50))
    qtbot.waitUntil(ran.is_set, timeout=20_000)


def test_held_tasks_run_when_waited_for_and_end_cancelled_at_shutdown(qtbot):
    r = TaskRunner(max_threads=2)
    r.hold(10)
    went = threading.Event()
    low = r.submit("low", lambda p, c: went.set() or "low")
    high = r.submit("high", lambda p, c: "high", priority=10)
    with qtbot.waitSignal(high.succeeded, timeout=10_000):
        pass
    assert not low.done and not went.is_set()
    assert r.wait(10_000) and went.is_set()       # waiting for the work starts it
    qtbot.waitUntil(lambda: low.done, timeout=10_000)
    assert low.outcome == "succeeded"

    r2 = TaskRunner(max_threads=2)
    r2.hold(10)
    never = threading.Event()
    h = r2.submit("low", lambda p, c: never.set())
    assert r2.shutdown(10_000)
    qtbot.waitUntil(lambda: h.done, timeout=10_000)
    assert h.outcome == "cancelled" and not never.is_set()
    assert r2.active_count() == 0


def test_a_frame_drawn_from_the_cached_rows_is_the_fresh_one(qtbot):
    from hipscope.analysis.context import analyses_of
    from hipscope.parsers import open_trace
    from tests.conftest import DATA

    path = DATA / "gpu" / "launch_bound.json.gz"
    open_trace(path, use_cache=True)
    lod.prepare(open_trace(path, use_cache=True), "queue", "name")   # rows kept on disk
    images = []
    for cached in (False, True):
        trace = open_trace(path, use_cache=cached)
        v = _timeline(qtbot, shown=True)
        with qtbot.waitSignal(v.prepared, timeout=20_000):
            v.document.set_trace(trace)
        assert analyses_of(trace).computed.get("timeline_frame", 0) == (0 if cached else 1)
        images.append(v.grab().toImage())
    assert images[0] == images[1]


def test_a_small_trace_reaches_the_docks_at_once(qtbot):
    v = _timeline(qtbot, shown=True)
    got = []
    v.document.trace_loaded.connect(lambda t: got.append((t, v.model is not None)))
    trace = make_tiny_trace(80)
    v.document.set_trace(trace)                # prepared on the GUI thread: no waiting
    assert got == [(trace, True)] and v.document.frame_drawn
    assert not v.document.tasks.holding()


def test_trace_loaded_waits_for_the_frame_of_a_big_trace(qtbot, in_worker):
    v = _timeline(qtbot, shown=True)
    got = []
    v.document.trace_loaded.connect(lambda t: got.append(v.stats.rects))
    with qtbot.waitSignal(v.document.trace_loaded, timeout=20_000):
        v.document.set_trace(make_tiny_trace(200))
        assert got == []                       # not before the timeline drew it
    assert got and got[0] > 0


def test_the_traces_cache_entry_is_stored_after_its_first_frame(qtbot, monkeypatch,
                                                                in_worker):
    # the app's loader holds the store: on two cores it would halve the frame's rows
    from hipscope.app.head_start import default_loader
    from hipscope.parsers import cache, cache_jobs
    from tests.conftest import DATA

    v = _timeline(qtbot, shown=True)
    seen: list = []
    began = threading.Event()
    real = cache.store

    def store(*a, **k):
        seen.append(v.document.frame_drawn)
        began.set()
        return real(*a, **k)

    monkeypatch.setattr(cache, "store", store)
    monkeypatch.setattr(cache_jobs, "HOLD_MAX_S", 600)
    tr = default_loader([DATA / "gpu" / "launch_bound.json.gz"], lambda f: None,
                        lambda: False)
    try:
        assert not began.wait(0.3)               # held while nothing is drawn
        with qtbot.waitSignal(v.prepared, timeout=20_000):
            v.document.set_trace(tr)
        qtbot.waitUntil(began.is_set, timeout=20_000)
        assert seen == [True]                    # it began once the frame was up
    finally:
        cache_jobs.release_all()
        cache_jobs.flush()
