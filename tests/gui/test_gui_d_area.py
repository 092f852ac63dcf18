"""Issue 16: an area selection over chosen tracks (Shift+drag on the tracks, as
Perfetto's): the Range dock lists only those tracks' events in that range (per name:
count, total, mean) and each track's busy share; Esc clears it."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt

from hipscope.app.screen_state import screen_state
from hipscope.model.units import fmt_duration

SHIFT = Qt.KeyboardModifier.ShiftModifier


@pytest.fixture
def window(tiny_window, qtbot):
    w, tab = tiny_window()
    qtbot.waitUntil(lambda: tab.timeline.model is not None)
    return w, tab


def _row(tl, label_start: str, parent_label: str) -> int:
    """The model row of a track by its label and its group's label."""
    m = tl.model
    return next(i for i, r in enumerate(m.rows) if r.label.startswith(label_start)
                and r.parent >= 0 and m.rows[r.parent].label.startswith(parent_label))


def _mid_y(tl, row: int) -> int:
    y, h = tl.row_y(row)
    return y + h // 2


def _drag(qtbot, tl, a: QPoint, b: QPoint, mods=SHIFT) -> None:
    qtbot.mousePress(tl, Qt.MouseButton.LeftButton, mods, a)
    qtbot.mouseMove(tl, QPoint((a.x() + b.x()) // 2, (a.y() + b.y()) // 2))
    qtbot.mouseMove(tl, b)
    qtbot.mouseRelease(tl, Qt.MouseButton.LeftButton, mods, b)


def _raw(trace, device: int, streams: set[int], t0: int, t1: int):
    """From the raw kernel columns (numpy, plain Python): name -> [count, clipped ns],
    and per stream the busy time (union of clipped intervals) and the event count."""
    k = trace.kernels
    names = np.array(k.column("name").to_pylist(), dtype=object)
    s, e = k.column("start").to_numpy(), k.column("end").to_numpy()
    dev, st = k.column("device").to_numpy(), k.column("stream").to_numpy()
    per_name = defaultdict(lambda: [0, 0])
    busy = {}
    for stream in sorted(streams):
        mine = (dev == device) & (st == stream) & (s < t1) & (e > t0)
        for n, a, b in zip(names[mine], s[mine], e[mine]):
            per_name[n][0] += 1
            per_name[n][1] += int(min(b, t1) - max(a, t0))
        covered, end = 0, t0          # union of the clipped intervals, in start order
        for a, b in sorted(zip(np.maximum(s[mine], t0), np.minimum(e[mine], t1))):
            a = max(int(a), end)
            if b > a:
                covered += int(b) - a
                end = int(b)
        busy[stream] = (int(mine.sum()), covered)
    return dict(per_name), busy


def test_shift_drag_over_two_tracks_sums_only_their_events(qtbot, window):
    w, tab = window
    tl, panel = tab.timeline, tab.panels["area"]
    s8, s9 = _row(tl, "Queue 1 › Stream 8", "GPU 0"), _row(tl, "Queue 2 › Stream 9", "GPU 0")
    r = tl.track_rect
    a = QPoint(r.x() + r.width() // 5, _mid_y(tl, s8))
    b = QPoint(r.x() + r.width() * 3 // 4, _mid_y(tl, s9))
    with qtbot.waitSignal(panel.shown):
        _drag(qtbot, tl, a, b)
    vs = tab.document.view_state
    t0, t1 = vs.area
    assert (t0, t1) == (tl.t_of(a.x()), tl.t_of(b.x()))
    assert [t.label for t in vs.area_tracks] == [
        "GPU 0 · AMD Instinct MI300X › Queue 1 › Stream 8",
        "GPU 0 · AMD Instinct MI300X › Queue 2 › Stream 9"]
    want, busy = _raw(tab.document.trace, 0, {8, 9}, t0, t1)
    assert want, "the range should hold kernels of those streams"
    got = {row.name: row for row in panel.rows}
    assert {row.kind for row in panel.rows} == {"kernels"}      # no API rows: not picked
    assert set(got) == set(want)
    for name, (count, total) in want.items():
        assert (got[name].count, got[name].total_ns) == (count, total)
        assert got[name].mean_ns == pytest.approx(total / count)
    shown = {panel.table.item(i, 1).text(): (panel.table.item(i, 2).text(),
                                             panel.table.item(i, 3).text())
             for i in range(panel.table.rowCount())}
    assert shown == {n: (f"{c:,}", fmt_duration(t)) for n, (c, t) in want.items()}
    n = sum(c for c, _t in want.values())
    assert "on 2 tracks" in panel.title.text() and f"{n:,} kernels" in panel.title.text()
    # busy % per track, from the union of the raw intervals
    assert panel.tracks_table.isVisible() and panel.tracks_table.rowCount() == 2
    for i, stream in enumerate((8, 9)):
        count, covered = busy[stream]
        assert (panel.busy[i].count, panel.busy[i].busy_ns) == (count, covered)
        assert panel.tracks_table.item(i, 2).text() == f"{100 * covered / (t1 - t0):.1f} %"
    # the pick is drawn over those rows only
    img = tl.grab().toImage()
    x = (a.x() + b.x()) // 2
    other = _row(tl, "Queue 0 › Stream 7", "GPU 0")
    edge = img.pixelColor(x, tl.row_y(s8)[0])          # the box's top edge
    assert edge.red() > 200 and edge.blue() < 120
    assert img.pixelColor(x, tl.row_y(other)[0]) != edge
    # the screenshot hook says what is measured, and over which tracks
    hook = screen_state(w)["current"]["area"]
    assert (hook["t0_ns"], hook["t1_ns"]) == (t0, t1)
    assert hook["tracks"] == [t.label for t in vs.area_tracks]
    # F zooms to the picked range
    tl.setFocus()
    qtbot.keyClick(tl, Qt.Key.Key_F)
    assert vs.window == (t0, t1) and vs.area == (t0, t1)
    # Esc clears the pick and the dock
    with qtbot.waitSignal(panel.shown):
        qtbot.keyClick(tl, Qt.Key.Key_Escape)
    assert vs.area is None and vs.area_tracks is None and tl.area_pick.box is None
    assert panel.table.rowCount() == 0 and not panel.tracks_table.isVisible()
    assert screen_state(w)["current"]["area"] is None


def test_a_folded_group_counts_every_track_inside_it(qtbot, window):
    w, tab = window
    tl, panel = tab.timeline, tab.panels["area"]
    gpu1 = next(i for i, r in enumerate(tl.model.rows) if r.label.startswith("GPU 1"))
    tl.toggle_group(gpu1)                                   # fold GPU 1
    r = tl.track_rect
    y = _mid_y(tl, gpu1)
    lo, hi = tab.document.full_range()
    with qtbot.waitSignal(panel.shown):
        _drag(qtbot, tl, QPoint(r.x() + 20, y), QPoint(r.right() - 5, y))
    vs = tab.document.view_state
    assert [t.label.split(" › ", 1)[1] for t in vs.area_tracks] == [
        "Queue 0 › Stream 7", "Queue 1 › Stream 8", "Queue 2 › Stream 9"]
    t0, t1 = vs.area
    want, _busy = _raw(tab.document.trace, 1, {7, 8, 9}, t0, t1)
    assert {row.name: row.count for row in panel.rows} == {n: c for n, (c, _t) in want.items()}


def test_plain_drag_still_pans_and_the_ruler_replaces_a_pick(qtbot, window):
    w, tab = window
    tl, panel = tab.timeline, tab.panels["area"]
    vs = tab.document.view_state
    s7 = _row(tl, "Queue 0 › Stream 7", "GPU 0")
    r = tl.track_rect
    y = _mid_y(tl, s7)
    before = vs.window
    _drag(qtbot, tl, QPoint(r.x() + 300, y), QPoint(r.x() + 100, y),
          Qt.KeyboardModifier.NoModifier)
    assert vs.window != before and vs.area is None            # a pan, no pick
    with qtbot.waitSignal(panel.shown):
        _drag(qtbot, tl, QPoint(r.x() + 100, y), QPoint(r.x() + 500, y))
    assert len(vs.area_tracks) == 1
    lo, hi = vs.window
    with qtbot.waitSignal(panel.shown):
        tl.measure(lo, hi)                                    # the ruler: every track
    assert vs.area == (lo, hi) and vs.area_tracks is None and tl.area_pick.box is None
    assert "track" not in panel.title.text() and not panel.tracks_table.isVisible()
    assert {row.kind for row in panel.rows} >= {"kernels", "api"}
