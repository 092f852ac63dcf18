"""Issue 16 item 7: the timeline's painted axis at deep zoom and over a long span."""

from __future__ import annotations

import numpy as np
import pytest

from hipscope.model import Trace, build_table
from hipscope.qt.document import Document
from hipscope.views.timeline import TimelineView

S = 1_000_000_000


@pytest.fixture
def view(qtbot):
    v = TimelineView(Document())
    qtbot.addWidget(v)
    v.resize(1920, 400)
    v.show()
    qtbot.waitExposed(v)
    yield v
    v.close()


def _trace(span_ns: int) -> Trace:
    start = np.linspace(0, span_ns - 10_000, 50).astype(np.int64) + 5 * S
    return Trace(kernels=build_table("kernels", {
        "name": ["k"] * 50, "device": np.zeros(50, np.int16), "start": start,
        "end": start + 5_000, "stream": np.zeros(50, np.int32)}))


def test_deep_zoom_axis_has_a_base_and_short_offsets(view):
    view.document.set_trace(_trace(15 * S))
    t0 = view.model.t_min
    view.document.view_state.set_window(t0 + 12_775_040_000, t0 + 12_775_160_000)
    view.repaint()
    base, labels = view.stats.axis
    assert base == "12.77504 s"
    assert labels and all(lab.startswith("+") for lab in labels)
    assert max(len(lab) for lab in labels) <= 8      # not '12.77510 s, 12.77520 s'


def test_long_span_axis_reads_in_days(view):
    view.document.set_trace(_trace(3_500_000 * S))
    view.fit()
    view.repaint()
    base, labels = view.stats.axis
    assert base == "" and any(lab.endswith(" d") for lab in labels)
    assert not any("000000" in lab for lab in labels)
