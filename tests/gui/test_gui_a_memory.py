"""Issue 16 item 2: closing a tab frees its trace. After the tab is closed nothing may
hold its Document or Trace (signals' slots, workers' handles, panels, caches); the MB
figure is measured by benchmarks/gui_memory.py, this checks the cause."""

from __future__ import annotations

import gc
import weakref

import pytest
from PySide6.QtCore import QCoreApplication, QEvent

from hipscope.app.main_window import MainWindow
from tests.data.fixtures.big_trace import big_trace

from .conftest import make_tiny_trace, shown_window, stand_in


def _collected(qtbot, *refs) -> None:
    def gone() -> bool:
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
        gc.collect()
        return all(r() is None for r in refs)

    qtbot.waitUntil(gone, timeout=20_000)


# 250k kernels: the timeline prepares and the diagnostics gather in workers
@pytest.mark.parametrize("make", [lambda: make_tiny_trace(200), lambda: big_trace(250_000)],
                         ids=["small", "worker-sized"])
def test_a_closed_tab_frees_its_document_and_trace(qtbot, tmp_path, make):
    p = stand_in(tmp_path, "stand-in.trace")
    w = shown_window(qtbot, persist=False, loader=lambda paths, progress, cancelled: make())
    for _ in range(2):                                  # a reopen too
        (tab,) = w.open_paths([p])
        qtbot.waitUntil(lambda tab=tab: tab.state == "loaded", timeout=60_000)
        qtbot.waitUntil(lambda tab=tab: not tab.timeline.preparing and not
                        tab.diagnostics.pending, timeout=60_000)
        tab.document.view_state.set_window(*tab.document.full_range())
        qtbot.waitExposed(w)
        refs = (weakref.ref(tab), weakref.ref(tab.document), weakref.ref(tab.document.trace))
        w.close_tab(tab)
        del tab
        _collected(qtbot, *refs)
    assert w.tabs.count() == 0
    w.close()


def test_closing_while_loading_frees_the_tab(qtbot, tmp_path):
    import threading

    release = threading.Event()

    def slow(paths, progress, cancelled):
        release.wait(10)
        return make_tiny_trace(50)

    p = tmp_path / "slow.trace"
    p.write_text("stand-in")
    w = MainWindow(persist=False, loader=slow)
    qtbot.addWidget(w)
    (tab,) = w.open_paths([p])
    refs = (weakref.ref(tab), weakref.ref(tab.document))
    w.close_tab(tab)
    del tab
    release.set()
    qtbot.waitUntil(lambda: w.runner.active_count() == 0, timeout=20_000)
    _collected(qtbot, *refs)
    w.close()


def test_closed_comparison_and_trace_tabs_free_both_traces(qtbot, tmp_path):
    a, b = stand_in(tmp_path, "a.trace"), stand_in(tmp_path, "b.trace")
    w = shown_window(qtbot, persist=False,
                     loader=lambda paths, progress, cancelled: big_trace(250_000))
    (tab,) = w.open_paths([a])
    qtbot.waitUntil(lambda t=tab: t.state == "loaded", timeout=60_000)
    cmp_tab = w.compare_paths([a, b], {0: tab.document.trace})     # A is not read again
    qtbot.waitUntil(lambda t=cmp_tab: t.state == "loaded", timeout=60_000)
    qtbot.waitUntil(lambda t=cmp_tab: not any(tl.preparing for tl in t.timelines),
                    timeout=60_000)
    qtbot.waitExposed(w)
    refs = [weakref.ref(tab.document.trace), weakref.ref(cmp_tab), weakref.ref(tab)]
    refs += [weakref.ref(tl.document.trace) for tl in cmp_tab.timelines]
    w.close_tab(cmp_tab)
    w.close_tab(tab)
    del tab, cmp_tab
    _collected(qtbot, *refs)
    w.close()
