"""Queue delay view: create/load/resize/close, headline numbers against the analysis,
worst-N click -> selection, density follows the window, the empty state."""

from __future__ import annotations

import numpy as np
import pytest

from hipscope.analysis import queue_delay as qd
from hipscope.model import Trace
from hipscope.model.view_state import Selection
from hipscope.parsers import open_trace
from hipscope.qt.document import Document
from hipscope.views.queue_delay import N_WORST, QueueDelayView
from hipscope.views.tables.format import fmt_duration
from tests.conftest import DATA


@pytest.fixture
def view(qtbot, tiny_trace):
    doc = Document()
    v = QueueDelayView(doc)
    qtbot.addWidget(v)
    v.resize(1200, 800)
    v.show()
    with qtbot.waitSignal(v.data_ready, timeout=20_000):
        doc.set_trace(tiny_trace)
    return v


def test_create_load_resize_close(view, qtbot):
    assert not view.is_empty
    s = qd.summary(qd.queue_delays(view.document.trace).from_api_start)
    text = view.headline.text()
    assert fmt_duration(s["p50"]) in text and fmt_duration(s["max"]) in text
    assert "host wait" in view.idle_label.text()
    view.resize(600, 400)
    qtbot.wait(1)
    view.grab()
    view.close()


def test_worst_table_is_sorted_and_click_selects(view, qtbot):
    tr = view.document.trace
    d = qd.queue_delays(tr)
    n = min(N_WORST, len(d.kernel_rows))
    assert view.table.rowCount() == n
    worst_row = int(d.kernel_rows[np.argmax(d.from_api_start)])
    with qtbot.waitSignal(view.document.selection_changed, timeout=2000) as blocker:
        view.table.cellClicked.emit(0, 1)
    assert blocker.args[0] == Selection("kernels", worst_row)
    delays = [w["delay_ns"] for w in view.view_data.worst]
    assert delays == sorted(delays, reverse=True)


def test_histogram_counts_every_linked_kernel(view):
    h = view.view_data.hist
    total = sum(int(c.sum()) for c in h.counts.values()) + sum(h.nonpositive.values())
    assert total == len(qd.queue_delays(view.document.trace).kernel_rows)
    assert set(h.counts) == {7, 8, 9}                    # the tiny trace's streams


def test_kind_switch_and_density_follows_window(view, qtbot):
    with qtbot.waitSignal(view.data_ready, timeout=5000):
        view.kind_combo.setCurrentIndex(1)
    assert view.view_data.kind == "from_api_end"
    t0, t1 = view.document.full_range()
    with qtbot.waitSignal(view.density_ready, timeout=5000):
        view.document.view_state.set_window(t0, t0 + (t1 - t0) // 3)
    img = view.density_image.image
    assert img is not None and img.shape[0] >= 20


def test_real_trace_launch_bound(qtbot):
    doc = Document()
    v = QueueDelayView(doc)
    qtbot.addWidget(v)
    with qtbot.waitSignal(v.data_ready, timeout=30_000):
        doc.set_trace(open_trace(DATA / "gpu" / "launch_bound.json.gz"))
    assert v.table.rowCount() == N_WORST
    assert "from API end" in v.headline.text()


def test_empty_state(qtbot, tiny_trace):
    doc = Document()
    v = QueueDelayView(doc)
    qtbot.addWidget(v)
    unlinked = Trace(kernels=tiny_trace.kernels.take(np.arange(5)), devices=tiny_trace.devices)
    with qtbot.waitSignal(v.data_ready, timeout=5000):
        doc.set_trace(unlinked)
    assert v.is_empty and "correlation" in v.empty.text()
