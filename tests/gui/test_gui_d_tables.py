"""Issue 16, seen retaking the screenshots: selecting a kernel in the timeline scrolled
the All kernels table sideways (centring the name cell), cutting off every name's start."""

from __future__ import annotations

import pytest

from hipscope.app.main_window import MainWindow
from hipscope.model.view_state import Selection

from .conftest import make_tiny_trace


@pytest.fixture
def window(qtbot, tmp_path):
    p = tmp_path / "tiny.trace"
    p.write_text("stand-in path; the loader builds the trace")
    w = MainWindow(loader=lambda paths, progress, cancelled: make_tiny_trace(300),
                   persist=False)
    qtbot.addWidget(w)
    w.resize(1200, 900)
    w.show()
    qtbot.waitExposed(w)
    (tab,) = w.open_paths([p])
    qtbot.waitUntil(lambda: tab.state == "loaded", timeout=20_000)
    yield w, tab
    w.close()


def test_selecting_a_kernel_keeps_the_tables_names_in_sight(qtbot, window):
    w, tab = window
    view = tab.panels["kernels"]
    w.docks["kernels"].show()
    w.docks["kernels"].raise_()
    qtbot.waitUntil(lambda: view.model.rowCount() == 300)
    table = view.table
    table.setColumnWidth(0, table.viewport().width() * 2)     # a long name column
    hbar = table.horizontalScrollBar()
    qtbot.waitUntil(lambda: hbar.maximum() > 0)
    assert hbar.value() == 0
    k = tab.document.trace.kernels
    far = int((k.numpy("start")).argmax())                    # the last kernel: a scroll
    tab.document.view_state.select(Selection("kernels", far))
    qtbot.waitUntil(lambda: table.currentIndex().isValid())
    assert view.model.source_row(table.currentIndex().row()) == far
    assert table.verticalScrollBar().value() > 0              # the row was brought in
    assert hbar.value() == 0                                  # the names' starts stay
