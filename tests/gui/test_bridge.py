"""The one Observable -> Qt signal bridge: a change made on a worker thread reaches the
slot on the GUI thread, queued; ``accept`` filters; ``detach`` stops it."""

from __future__ import annotations

import threading

from hipscope.model.view_state import ViewState
from hipscope.qt.bridge import ObservableBridge
from hipscope.qt.document import Document
from hipscope.tuner.state import TunerState


def test_a_worker_threads_change_arrives_on_the_gui_thread(qtbot):
    state = TunerState()
    bridge = ObservableBridge(state)
    got = []
    bridge.changed.connect(lambda what, value: got.append(
        (what, value, threading.current_thread() is threading.main_thread())))
    worker = threading.Thread(target=state.set_program, args=("prog",))
    worker.start()
    worker.join()
    assert got == []                            # queued: not run on the worker
    qtbot.waitUntil(lambda: bool(got))
    assert got == [("program_changed", "prog", True)]


def test_accept_filters_and_detach_stops(qtbot):
    vs = ViewState()
    bridge = ObservableBridge(vs, accept=lambda what, _v: what != "find")
    got = []
    bridge.changed.connect(lambda what, value: got.append(what))
    vs.set_find("gemm")
    vs.set_window(1, 5)
    bridge.detach()
    vs.set_window(2, 6)
    assert got == ["window"]


def test_the_document_re_emits_view_state_changes_as_its_signals(qtbot):
    doc = Document()
    with qtbot.waitSignal(doc.view_changed) as win, qtbot.waitSignal(doc.grouping_changed) as g:
        doc.view_state.set_window(10, 20)
        doc.view_state.set_grouping("stream")
    assert win.args == [(10, 20)] and g.args == ["stream"]
