"""Issue 16 item 1: reader and analysis diagnostics reach the window: a banner on the
tab, a Diagnostics panel with the codes, markers over the affected time ranges."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from hipscope.app.main_window import MainWindow
from tests.conftest import SAMPLES  # noqa: E402
from tests.unit.test_graphs import PERIOD, graph_trace

KINETO = SAMPLES / "kineto" / "nvidia-h200-generated" / "h200_torch_kineto_trace.json.gz"
CARRY = [8, 8, 0, 8, 8]          # launch 2 lost its kernels


@pytest.fixture
def window(make_window):
    return lambda **kw: make_window(persist=False, **kw)


def _open(qtbot, w: MainWindow, path: Path):
    (tab,) = w.open_paths([path])
    qtbot.waitUntil(lambda: tab.state != "loading", timeout=60_000)
    assert tab.state == "loaded", tab.error
    qtbot.waitUntil(lambda: not tab.diagnostics.pending, timeout=60_000)
    return tab


@pytest.mark.skipif(not KINETO.exists(), reason="needs the shared H200 Kineto sample")
def test_truncated_gzip_shows_a_banner_and_lists_the_code(window, qtbot, tmp_path):
    raw = KINETO.read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(raw[: len(raw) - 16])            # the gzip trailer is lost
    with pytest.raises(EOFError):
        with gzip.open(cut) as fh:
            json.load(fh)                            # plain gzip agrees it is cut
    w = window()
    tab = _open(qtbot, w, cut)
    qtbot.waitExposed(w)
    assert tab.banner.isVisible()
    shown = tab.banner.summary()
    assert shown["severity"] == "warning" and shown["count"] >= 1
    panel = tab.panels["diagnostics"]
    codes = [r[1] for r in panel.rows()]
    assert "input.truncated" in codes
    row = panel.rows()[codes.index("input.truncated")]
    assert row[3] == str(cut)                        # where: the file
    dock = w.docks["diagnostics"]
    w.docks["summary"].raise_()
    qtbot.mouseClick(tab.banner.details, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not dock.visibleRegion().isEmpty())
    assert w._dock_stacks["diagnostics"].currentWidget() is panel


def test_clean_trace_has_no_banner(window, qtbot, tmp_path):
    from .conftest import make_tiny_trace

    p = tmp_path / "tiny.trace"
    p.write_text("stand-in")
    w = window(loader=lambda paths, progress, cancelled: make_tiny_trace())
    tab = _open(qtbot, w, p)
    assert not tab.banner.isVisible() and tab.banner.summary() is None
    assert tab.panels["diagnostics"].rows() == []
    assert tab.markers.bands() == []


def test_incomplete_graph_replay_is_listed_and_marked(window, qtbot, tmp_path):
    p = tmp_path / "graphs.trace"
    p.write_text("stand-in")
    w = window(loader=lambda paths, progress, cancelled: graph_trace(CARRY))
    tab = _open(qtbot, w, p)
    qtbot.waitExposed(w)
    codes = [r[1] for r in tab.panels["diagnostics"].rows()]
    assert codes == ["analysis.incomplete_graph_replay"]
    assert tab.banner.isVisible()
    (m,) = tab.diagnostics.markers
    # the window of launch 2 runs from its call to the next launch of the same graph
    assert (m.t0, m.t1) == (2 * PERIOD, 3 * PERIOD)
    tl = tab.timeline
    (band,) = tab.markers.bands()
    assert band[0] == pytest.approx(tl.x_of(2 * PERIOD), abs=1)
    assert band[1] == pytest.approx(tl.x_of(3 * PERIOD), abs=1)
    img = tab.content_page.grab().toImage()
    y = tab.banner.height() + tl.track_rect.top() + 1        # the strip over the tracks
    mid = (band[0] + band[1]) // 2
    outside = tl.x_of(0.5 * PERIOD)
    marked, clear = img.pixelColor(mid, y - 3), img.pixelColor(int(outside), y - 3)
    assert marked != clear
    assert marked.red() > marked.blue() + 60                 # the warning's amber
    tl.set_window(4 * PERIOD, 5 * PERIOD)                    # scrolled away: no band
    assert tab.markers.bands() == []
    item = tab.panels["diagnostics"].tree.topLevelItem(0)
    tab.panels["diagnostics"].tree.itemDoubleClicked.emit(item, 0)
    t0, t1 = tab.document.view_state.window
    assert t0 <= 2 * PERIOD and t1 >= 3 * PERIOD and t1 - t0 < 2 * PERIOD


DOCS = SAMPLES / "rocprofv3-csv" / "sdk-docs-2025-08-rocm7.0"


@pytest.mark.skipif(not DOCS.exists(), reason="needs the shared rocprofv3 docs sample")
def test_separate_runs_lead_the_banner_and_dismissing_keeps_the_list(window, qtbot):
    """The ROCm docs folder holds unrelated runs (a 42-day span): that finding is listed
    with the reader's own, each with its specific code (none generic), the first one the
    banner's line; closing the banner keeps the list."""
    w = window()
    tab = _open(qtbot, w, DOCS)
    qtbot.waitExposed(w)
    rows = tab.panels["diagnostics"].rows()
    codes = [r[1] for r in rows]
    assert "merge.separate_runs" in codes and "reader.warning" not in codes
    assert tab.banner.text() == f"{rows[0][2]} (and {len(rows) - 1} more)"
    assert tab.banner.summary()["count"] == len(rows)
    qtbot.mouseClick(tab.banner.close_button, Qt.MouseButton.LeftButton)
    assert not tab.banner.isVisible() and tab.banner.summary() is None
    assert tab.panels["diagnostics"].rows() == rows


def test_a_reload_shows_the_dismissed_banner_again(window, qtbot, tmp_path):
    p = tmp_path / "graphs.trace"
    p.write_text("stand-in")
    w = window(loader=lambda paths, progress, cancelled: graph_trace(CARRY))
    tab = _open(qtbot, w, p)
    qtbot.mouseClick(tab.banner.close_button, Qt.MouseButton.LeftButton)
    assert tab.banner.summary() is None
    w.reload_current()
    qtbot.waitUntil(lambda: tab.state == "loaded" and not tab.diagnostics.pending,
                    timeout=20_000)
    assert tab.banner.isVisible() and tab.banner.summary()["count"] == 1
