"""Issue 16 item 5: track clutter in the timeline (quiet tracks folded with a count
and a toggle, a track filter, per-track hide/pin/move from the track menu)."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt

from hipscope.model import Trace, build_table
from hipscope.qt.document import Document
from hipscope.views.timeline import TimelineView
from hipscope.views.timeline.render import AXIS_H

MI350 = Path("/work/shared/samples/rocprofv3-json/tracelens-908-mi350/908_results.json.gz")


@pytest.fixture
def view(qtbot):
    v = TimelineView(Document())
    qtbot.addWidget(v)
    v.resize(1920, 800)
    v.show()
    qtbot.waitExposed(v)
    yield v
    v.close()


def _streams_trace(n_quiet: int = 12) -> Trace:
    """Stream 1 busy (40 kernels), streams 10.. with one short kernel each."""
    busy = np.arange(40, dtype=np.int64) * 10_000
    quiet = np.arange(n_quiet, dtype=np.int64) * 7_000 + 3_000
    start = np.r_[busy, quiet]
    end = start + np.r_[np.full(40, 8_000), np.full(n_quiet, 100)]
    stream = np.r_[np.ones(40, np.int32), np.arange(10, 10 + n_quiet, dtype=np.int32)]
    return Trace(kernels=build_table("kernels", {
        "name": ["gemm"] * 40 + ["tiny"] * n_quiet, "device": np.zeros(len(start), np.int16),
        "start": start, "end": end, "stream": stream}))


def _labels(v) -> list[str]:
    return [v.model.rows[int(i)].label for i in v.layout.rows]


def _click_label(qtbot, v, row: int) -> None:
    y, h = v.row_y(row)
    qtbot.mouseClick(v, Qt.MouseButton.LeftButton, pos=QPoint(60, y + h // 2))


def test_quiet_tracks_fold_into_one_row_with_a_count_and_unfold(qtbot, view):
    view.document.set_trace(_streams_trace(12))
    shown = _labels(view)
    assert "Stream 1" in shown and not any(s.startswith("Stream 1") and s != "Stream 1"
                                            for s in shown)
    (fold,) = [i for i, r in enumerate(view.model.rows) if r.kind == "fold"]
    assert view.model.rows[fold].label.startswith("12 quiet tracks")
    assert view.layout.n_folded == 12 and fold in view.layout.pos_of
    _click_label(qtbot, view, fold)                           # the toggle
    assert view.layout.n_folded == 0
    assert sum(s.startswith("Stream ") for s in _labels(view)) == 13
    _click_label(qtbot, view, fold)
    assert view.layout.n_folded == 12


def test_revealing_a_quiet_kernel_unfolds_its_tracks(view):
    view.document.set_trace(_streams_trace(12))
    row = int(view.model.track_of["kernels"][45])             # a quiet stream's kernel
    assert row not in view.layout.pos_of                      # folded away at first
    view.reveal("kernels", 45)
    assert row in view.layout.pos_of


def test_track_filter_keeps_matching_tracks_and_their_groups(qtbot, view):
    view.document.set_trace(_streams_trace(12))
    box = view.input.tracks.filter_edit
    assert box.isVisible() and box.geometry().bottom() < AXIS_H
    qtbot.keyClicks(box, "stream 1")
    labels = _labels(view)
    tracks = [view.model.rows[int(i)] for i in view.layout.rows
              if view.model.rows[int(i)].kind == "track"]
    assert tracks and all("stream 1" in r.label.lower() for r in tracks)
    assert labels[0].startswith("GPU")                        # its group stays
    assert view.layout.n_filtered > 0
    box.clear()
    assert view.layout.n_filtered == 0


def test_track_menu_hides_pins_and_moves(view):
    view.document.set_trace(_streams_trace(12))
    tc = view.input.tracks
    busy = next(i for i, r in enumerate(view.model.rows) if r.label == "Stream 1")

    def act(row, text):
        menu = tc.menu_for(row)
        (a,) = [a for a in menu.actions() if a.text().startswith(text)]
        a.trigger()

    act(busy, "Hide")
    assert busy not in view.layout.pos_of and view.layout.n_hidden == 1
    act(-1, "Show 1 hidden")
    assert busy in view.layout.pos_of
    fold = next(i for i, r in enumerate(view.model.rows) if r.kind == "fold")
    act(fold, "Pin to top")
    assert int(view.layout.rows[0]) == fold                   # pinned rows come first
    act(fold, "Unpin")
    first = [int(i) for i in view.layout.rows]
    act(busy, "Move down")
    after = [int(i) for i in view.layout.rows]
    assert after != first and after.index(busy) > first.index(busy)


@pytest.mark.skipif(not MI350.exists(), reason="real MI350 sample not present")
def test_mi350_busy_streams_are_in_sight(view):
    from hipscope.parsers import open_trace

    with gzip.open(MI350, "rt") as f:
        recs = json.load(f)["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"]
    per_stream = Counter(r["stream_id"]["handle"] for r in recs)
    busiest = [s for s, _ in per_stream.most_common(5)]
    view.document.set_trace(open_trace(MI350))
    assert view.model is not None             # 44k kernels: prepared at once
    shown = view.layout
    n_tracks = sum(1 for r in view.model.rows if r.kind == "track")
    assert n_tracks >= len(per_stream)                        # every stream has a track
    assert len(shown.rows) < 40                               # not 570 rows
    shown_tracks = [view.model.rows[int(i)] for i in shown.rows]
    assert shown.n_folded > 500
    visible_rows = (view.track_rect.height()) // 18
    for s in busiest:                   # the busy streams are on the first screen
        pos = next(p for p, r in enumerate(shown_tracks) if r.kind == "track"
                   and r.label.endswith(f"Stream {s}"))
        assert pos < visible_rows


def test_group_header_sticks_to_the_top_when_scrolled(qtbot, view):
    from hipscope.views.timeline import palette as pal
    from hipscope.views.timeline.painting import sticky_rows

    view.document.set_trace(_streams_trace(60))
    fold = next(i for i, r in enumerate(view.model.rows) if r.kind == "fold")
    view.toggle_group(fold)                                   # 61 streams shown
    view.resize(1200, 400)
    gpu = next(i for i, r in enumerate(view.model.rows) if r.key == "gpu/0")
    assert sticky_rows(view.frame_state(view.width(), view.height())) == []
    view.vbar.setValue(300)
    assert sticky_rows(view.frame_state(view.width(), view.height())) == [gpu]
    img = view.grab().toImage()
    c = img.pixelColor(3, AXIS_H + 3)                         # the header's background
    assert (c.red(), c.green(), c.blue()) == pal.GROUP_BG


def test_row_labels_have_their_full_text_as_tooltip(view):
    view.document.set_trace(_streams_trace(12))
    busy = next(i for i, r in enumerate(view.model.rows) if r.label == "Stream 1")
    y, h = view.row_y(busy)
    text = view.input.tracks.label_tooltip(20, y + h // 2)
    assert text.startswith("GPU 0 › Stream 1") and "40 events" in text
    assert view.input.tracks.label_tooltip(600, y + h // 2) == ""     # not over a label


def test_clicking_a_sticky_header_folds_its_group(qtbot, view):
    view.document.set_trace(_streams_trace(60))
    fold = next(i for i, r in enumerate(view.model.rows) if r.kind == "fold")
    view.toggle_group(fold)
    view.resize(1200, 400)
    view.vbar.setValue(300)
    qtbot.mouseClick(view, Qt.MouseButton.LeftButton, pos=QPoint(60, AXIS_H + 5))
    assert "gpu/0" in view.collapsed                  # the header drawn there, not a row


def test_dragging_the_label_columns_edge_resizes_it(qtbot, view):
    from hipscope.views.timeline.render import LABEL_W

    view.document.set_trace(_streams_trace(12))
    busy = next(i for i, r in enumerate(view.model.rows) if r.label == "Stream 1")
    y = view.row_y(busy)[0] + 5
    t_mid = view.t_of(view.track_rect.center().x())
    qtbot.mouseMove(view, QPoint(LABEL_W, y))
    assert view.cursor().shape() == Qt.CursorShape.SplitHCursor
    qtbot.mousePress(view, Qt.MouseButton.LeftButton, pos=QPoint(LABEL_W, y))
    qtbot.mouseMove(view, QPoint(LABEL_W + 150, y))
    qtbot.mouseRelease(view, Qt.MouseButton.LeftButton, pos=QPoint(LABEL_W + 150, y))
    assert view.track_rect.x() == LABEL_W + 150
    assert view.input.tracks.filter_edit.width() == LABEL_W + 150 - 8
    view.repaint()
    fs = view.frame_state(view.width(), view.height())
    assert fs.label_w == LABEL_W + 150 and fs.x_of(t_mid) > LABEL_W + 150
    # the wider column now holds labels: a click there folds, no event is selected
    gpu = next(i for i, r in enumerate(view.model.rows) if r.key == "gpu/0")
    gy = view.row_y(gpu)[0] + 5
    qtbot.mouseClick(view, Qt.MouseButton.LeftButton, pos=QPoint(LABEL_W + 100, gy))
    assert "gpu/0" in view.collapsed


def test_legend_entries_have_the_full_name_as_tooltip(view):
    from hipscope.views.timeline.painting import legend_entries
    from hipscope.views.timeline.render import LEGEND_H

    long_name = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"
    n = 30
    start = np.arange(n, dtype=np.int64) * 10_000
    view.document.set_trace(Trace(kernels=build_table("kernels", {
        "name": [long_name] * 20 + ["gemm"] * 10, "device": np.zeros(n, np.int16),
        "start": start, "end": start + 5_000, "stream": np.zeros(n, np.int32)})))
    entries = legend_entries(view.fonts, view.scale, view.width())
    (e,) = [e for e in entries if e[3] == long_name]
    assert e[2] != long_name                                  # cut in the legend ...
    y = view.height() - LEGEND_H // 2
    assert view.input.tracks.label_tooltip((e[0] + e[1]) / 2, y) == long_name   # ... whole here


def test_describe_reports_what_the_track_area_shows(view):
    view.document.set_trace(_streams_trace(12))
    d = view.input.tracks.describe()
    labels = [t["label"] for t in d["tracks"]]
    assert labels[0].startswith("GPU") and "Stream 1" in labels
    (fold,) = [t for t in d["tracks"] if t["kind"] == "fold"]
    assert fold["events"] == 12 and d["folded"] == 12
    busy = next(t for t in d["tracks"] if t["label"] == "Stream 1")
    assert busy["events"] == 40 and d["hidden"] == 0 and d["filter"] == ""
