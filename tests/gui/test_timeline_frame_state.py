"""The timeline's painters draw from one frozen frame state taken per paint, never
from the view: a state painted after the view moved on draws the frame it was taken
for, and two views' states paint the same picture when they show the same."""

from __future__ import annotations

import dataclasses

import pytest
from PySide6.QtGui import QImage, QPainter

from hipscope.model.view_state import Selection
from hipscope.qt.document import Document
from hipscope.views.timeline import TimelineView
from hipscope.views.timeline.painting import paint_frame

from .conftest import make_tiny_trace


@pytest.fixture
def loaded(qtbot):
    v = TimelineView(Document())
    qtbot.addWidget(v)
    v.resize(1000, 600)
    v.document.set_trace(make_tiny_trace(120))
    assert v.model is not None
    yield v
    v.close()


def _paint(fs) -> QImage:
    img = QImage(fs.w, fs.h, QImage.Format.Format_RGB32)
    p = QPainter(img)
    try:
        stats = paint_frame(p, fs)
    finally:
        p.end()
    assert stats.rows > 0
    return img


def test_a_frame_state_is_a_snapshot_of_one_frame(loaded):
    v = loaded
    v.document.view_state.select(Selection("kernels", 7))
    v.document.view_state.set_find("gemm")
    v.measure(*v.document.full_range())
    fs = v.frame_state(v.width(), v.height())
    with pytest.raises(dataclasses.FrozenInstanceError):
        fs.scroll = 5
    before = _paint(fs)
    t0, t1 = v.document.view_state.window
    v.document.view_state.set_window(t0 + (t1 - t0) // 3, t1)      # the view moves on
    v.document.view_state.select(None)
    v.document.view_state.set_find("")
    v.toggle_group(0)
    moved = v.frame_state(v.width(), v.height())
    assert _paint(moved) != before                     # a different frame ...
    assert _paint(fs) == before                        # ... the old state, the old frame


def test_the_view_paints_its_frame_state(loaded, tmp_path):
    v = loaded
    v.reveal("kernels", 3)
    assert v.export_png(tmp_path / "v.png")
    assert QImage(str(tmp_path / "v.png")).convertToFormat(QImage.Format.Format_RGB32) == \
        _paint(v.frame_state(v.width(), v.height()))
