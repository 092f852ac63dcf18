"""Issue 16 item 9: find shows "3 of 26", a results list, next/previous, dims what
does not match, and Enter during a search goes to the first match when it arrives."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from hipscope.model import Trace, build_table
from hipscope.model.view_state import Selection
from hipscope.qt.document import Document
from hipscope.views.timeline import TimelineView, find_ctl

from .conftest import make_tiny_trace


def _raw_matches(trace, text):
    """(start, table, row) of every event whose name holds ``text``, in time order,
    from the raw columns."""
    out = []
    for ti, t in enumerate(("kernels", "api", "copies", "markers")):
        tab = getattr(trace, t)
        if len(tab) == 0 or not tab.has("name"):
            continue
        names = tab.column("name").to_pylist()
        starts = tab.column("start").to_pylist()
        out += [(starts[i], ti, i) for i, n in enumerate(names) if text in (n or "").lower()]
    return sorted(out)


@pytest.fixture
def window(tiny_window):
    return tiny_window(size=(1400, 900))


def test_count_next_prev_and_results_list(qtbot, window):
    w, tab = window
    trace = tab.document.trace
    want = _raw_matches(trace, "gemm")
    assert len(want) > 3
    w.show_find_bar()
    qtbot.keyClicks(w.find_edit, "gemm")
    assert w.find_bar.count.text() == f"{len(want)} matches"
    qtbot.keyClick(w.find_edit, Qt.Key.Key_Return)     # the first match after t0
    assert w.find_bar.count.text() == f"1 of {len(want)}"
    assert tab.document.view_state.selection == Selection("kernels", want[0][2])
    w.find_next()
    assert w.find_bar.count.text() == f"2 of {len(want)}"
    w.find_prev()
    w.find_prev()                                      # wraps to the last
    assert w.find_bar.count.text() == f"{len(want)} of {len(want)}"
    # the results list: every match, in time order, click one to go there
    w.find_bar.list_button.setChecked(True)
    res = w.find_bar.results
    assert res.isVisible() and res.model().rowCount() == len(want)
    assert "gemm_kernel" in res.model().index(2).data()
    rect = res.visualRect(res.model().index(2))
    qtbot.mouseClick(res.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert tab.document.view_state.selection == Selection("kernels", want[2][2])
    assert w.find_bar.count.text() == f"3 of {len(want)}"
    w.find_edit.clear()
    assert w.find_bar.count.text() == "" and res.model().rowCount() == 0


def test_enter_while_searching_goes_to_first_match(qtbot, monkeypatch):
    monkeypatch.setattr(find_ctl, "SYNC_FIND", 0)       # every find runs in a worker
    v = TimelineView(Document())
    qtbot.addWidget(v)
    v.resize(1200, 600)
    v.document.set_trace(make_tiny_trace(120))
    statuses = []
    v.find_status.connect(statuses.append)
    want = _raw_matches(v.document.trace, "softmax")
    v.document.view_state.set_find("softmax", False)
    assert v.finder.status().label() == "searching…"
    v.find_next()                                       # Enter before the matches came
    assert v.document.view_state.selection is None
    qtbot.waitUntil(lambda: v.document.view_state.selection is not None)
    assert v.document.view_state.selection == Selection("kernels", want[0][2])
    assert statuses[0].searching and statuses[-1].label() == f"1 of {len(want)}"
    v.close()


def _row_of_four() -> Trace:
    """Four kernels one after the other on one stream: gemm, other, gemm, other."""

    start = np.array([0, 1000, 2000, 3000], np.int64) * 1000 + 10**9
    kernels = build_table("kernels", {
        "name": ["gemm_kernel", "copy_kernel", "gemm_kernel", "copy_kernel"],
        "device": np.zeros(4, np.int16), "start": start, "end": start + 900_000,
        "queue": np.zeros(4, np.int32), "stream": np.zeros(4, np.int32)})
    devices = build_table("devices", {"index": np.array([0], np.int16), "name": ["GPU"]})
    return Trace(kernels=kernels, devices=devices, meta={"format": "test"})


def test_non_matches_are_dimmed(qtbot):
    v = TimelineView(Document())
    qtbot.addWidget(v)
    v.resize(1400, 500)
    v.show()
    qtbot.waitExposed(v)
    trace = _row_of_four()
    v.document.set_trace(trace)
    ks, ke = trace.kernels.numpy("start"), trace.kernels.numpy("end")

    def mean_rgb(img, r):
        y, h = v.row_y(int(v.model.track_of["kernels"][r]))
        xs = range(int(v.x_of(ks[r])) + 4, int(v.x_of(ke[r])) - 4, 3)
        px = [img.pixelColor(x, yy) for x in xs for yy in range(y + 4, y + h - 4)]
        return tuple(sum(getattr(c, f)() for c in px) / len(px) for f in ("red", "green", "blue"))

    before = v.grab().toImage()
    v.document.view_state.set_find("gemm", False)
    qtbot.waitUntil(lambda: v.found is not None)
    after = v.grab().toImage()
    for r in (1, 3):                              # copy_kernel: faded towards the background
        assert mean_rgb(after, r) != mean_rgb(before, r)
    for r in (0, 2):                                      # gemm_kernel: as it was
        assert mean_rgb(after, r) == mean_rgb(before, r)
    v.document.view_state.set_find("no_such_kernel", False)  # no match: nothing fades
    qtbot.waitUntil(lambda: v.found is not None and len(v.found) == 0)
    none = v.grab().toImage()
    assert all(mean_rgb(none, r) == mean_rgb(before, r) for r in range(4))
    v.close()


def test_status_texts():
    S = find_ctl.FindStatus  # noqa: N806
    assert S("x", total=1).label() == "1 match"
    assert S("x", total=1234).label() == "1,234 matches"
    assert S("x", total=26, current=2).label() == "3 of 26"
    assert S("x", searching=True).label() == "searching…"
    assert S("x").label() == "no matches" and S("").label() == ""
