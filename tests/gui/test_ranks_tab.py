"""The Ranks tab over a job overview built by hand (tests/gui/ranks_fixture.py): what it
shows, its empty states, Cancel, and the open dialog. The window's side (double-click
opens a rank, Compare, the real engine) is in test_ranks_tab_window.py."""

from __future__ import annotations

import dataclasses
import statistics
import sys
import threading

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QPushButton

from hipscope.model.progress import Cancelled
from hipscope.model.units import fmt_duration
from hipscope.qt import ranks as rq
from hipscope.qt.commands import Commands
from hipscope.qt.tasks import TaskRunner
from hipscope.views.ranks import RanksTab
from hipscope.views.ranks.open_dialog import OpenRanksDialog
from hipscope.views.ranks.tables import RANK_COLUMNS, RowsModel

from . import ranks_fixture as fx


@pytest.fixture
def runner(qtbot):
    r = TaskRunner()
    yield r
    assert r.shutdown(), "a ranks job was left running"


def make_tab(qtbot, runner, analyse, paths=("/jobs/run42",)) -> RanksTab:
    tab = RanksTab(list(paths), Commands(), analyse=analyse)
    qtbot.addWidget(tab)
    tab.resize(1600, 1000)
    tab.show()
    tab.start_load(runner)
    return tab


def returning(overview):
    def analyse(paths, *, progress, cancelled, **options):
        progress(1.0)
        return overview
    return analyse


def loaded(qtbot, runner, overview, **kw) -> RanksTab:
    tab = make_tab(qtbot, runner, returning(overview), **kw)
    qtbot.waitUntil(lambda: tab.state != "loading", timeout=10_000)
    return tab


def test_the_tab_draws_the_fixture_job(qtbot, runner):
    tab = loaded(qtbot, runner, fx.make_overview())
    assert tab.state == "loaded"
    hm = tab.view.heatmap
    assert hm.matrix.shape == (fx.RANKS, fx.BINS)              # ranks x bins
    assert hm.image.image.shape == (fx.BINS, fx.RANKS)         # pyqtgraph's (x, y)
    for r in range(fx.RANKS):
        np.testing.assert_allclose(hm.matrix[r], fx.util(r))
    assert hm.ranks == list(range(fx.RANKS))
    text, payload = hm.hit((190 + 0.5) * fx.BIN / 1e9, 3.2)     # rank 3 idles at the end
    assert payload == (3, 190)
    assert text.startswith(f"rank 3, {fmt_duration(190 * fx.BIN)} to "
                           f"{fmt_duration(191 * fx.BIN)}: 0% busy")
    # the time axis spans the grid
    lo, hi = hm.plotItem.vb.viewRange()[0]
    assert (lo, hi) == pytest.approx((0.0, fx.BINS * fx.BIN / 1e9))
    assert not tab.grab().isNull()


def test_the_straggler_table_lists_the_worst_first(qtbot, runner):
    tab = loaded(qtbot, runner, fx.make_overview())
    t = tab.view.straggler_table
    assert [s.rank for s in t.shown_rows()] == [fx.STRAGGLER, fx.MINOR]
    m = t.model()
    first = [m.index(0, c).data() for c in range(m.columnCount())]
    wait = sum(max(fx.arrival(i, r) for r in range(fx.RANKS)) - fx.arrival(i, q)
               for i in range(30) for q in range(fx.RANKS))
    assert first == [str(fx.STRAGGLER), fmt_duration(wait), "30", "aten::bmm"]
    assert m.index(1, 3).data() == "(not found)"
    assert "rank 5" in tab.view.banner.text() and "aten::bmm" in tab.view.banner.text()


def test_the_rank_table_has_every_rank_with_its_figures(qtbot, runner):
    tab = loaded(qtbot, runner, fx.make_overview())
    t = tab.view.rank_table
    m = t.model()
    headers = [m.headerData(c, Qt.Orientation.Horizontal) for c in range(m.columnCount())]
    assert headers[:8] == ["Rank", "Host", "Span", "GPU busy", "Steps", "Median step",
                           "Comm time", "Kernels"]
    assert [r.rank for r in t.shown_rows()] == list(range(fx.RANKS))
    row5 = [m.index(5, c).data() for c in range(m.columnCount())]
    steps5 = [20_000_000 + 5 * 100_000 + 3_000_000 + k * 50_000 for k in range(10)]
    assert row5[2] == fmt_duration(fx.BINS * fx.BIN - 10 * 1_000)
    assert row5[4] == "10"
    assert row5[5] == fmt_duration(statistics.median(steps5))
    assert row5[6] == fmt_duration(5_000_000 + 5 * 250_000)
    assert row5[8].startswith("aten::bmm")
    t.sortByColumn(5, Qt.SortOrder.DescendingOrder)
    assert t.shown_rows()[0].rank == fx.STRAGGLER          # the slowest steps first


def test_failed_ranks_are_shown_with_their_sentence(qtbot, runner):
    tab = loaded(qtbot, runner, fx.make_overview())
    v = tab.view
    assert v.failed_banner.isVisible()
    assert v.failed_banner.text().startswith(f"1 of {fx.RANKS + 1} rank files")
    assert v.failures_box.isVisible()
    m = v.failure_table.model()
    assert m.rowCount() == 1
    assert m.index(0, 1).data() == fx.FAILED_REASON


def test_no_failed_rank_no_banner(qtbot, runner):
    tab = loaded(qtbot, runner, fx.make_overview(failed=False))
    assert not tab.view.failed_banner.isVisible()
    assert not tab.view.failures_box.isVisible()


def test_all_ranks_failed_shows_the_failures_list(qtbot, runner):
    tab = loaded(qtbot, runner, fx.all_failed())
    v = tab.view
    assert tab.state == "loaded"
    assert v.failures_box.isVisible() and not v.heatmap.isVisible()
    assert v.failed_banner.text().startswith("None of the 3 rank files")
    m = v.failure_table.model()
    assert [m.index(i, 1).data() for i in range(3)] == [
        f"/jobs/bad/rank-{r}.json: worker died." for r in range(3)]


def test_no_rank_files_found_is_one_sentence(qtbot, runner):
    empty = fx.JobOverview(ranks=[], collectives=[], stragglers=[], failed=[],
                           grid_start_ns=0, grid_bin_ns=1, engine="serial")
    tab = loaded(qtbot, runner, empty, paths=["/data/none/*.json"])
    assert tab.state == "failed"
    assert tab.message_label.text() == "No rank traces were found in /data/none/*.json."
    assert tab.message_label.isVisible()
    retry = next(b for b in tab.findChildren(QPushButton) if b.text() == "Retry")
    states: list[str] = []
    tab.state_changed.connect(states.append)
    retry.click()                       # runs the job again
    qtbot.waitUntil(lambda: len(states) == 2, timeout=10_000)
    assert states == ["loading", "failed"]


def test_a_build_without_the_engine_says_so(qtbot, runner, monkeypatch):
    monkeypatch.setitem(sys.modules, "hipscope.ranks.engine", None)   # import fails
    tab = make_tab(qtbot, runner, None)
    qtbot.waitUntil(lambda: tab.state != "loading", timeout=10_000)
    assert tab.state == "failed"
    assert tab.message_label.text() == rq.ENGINE_MISSING


def test_an_engine_error_is_one_sentence_in_the_tab(qtbot, runner):
    from hipscope.parsers.base import TraceFormatError

    def analyse(paths, *, progress, cancelled, **options):
        raise TraceFormatError("/jobs/x", "the folder", "rank traces", "2 files of 2 formats")

    tab = make_tab(qtbot, runner, analyse)
    qtbot.waitUntil(lambda: tab.state != "loading", timeout=10_000)
    assert tab.state == "failed"
    assert tab.message_label.text() == tab.error
    assert "/jobs/x" in tab.error and "Traceback" not in tab.error


def test_cancel_stops_the_job_and_the_window_stays_live(qtbot, runner):
    started, stopped = threading.Event(), threading.Event()
    seen: dict = {}

    def analyse(paths, *, progress, cancelled, **options):
        seen.update(options, paths=paths)
        progress(0.3)
        started.set()
        poll = threading.Event()
        while not cancelled():            # the engine polls cancelled() while it waits
            poll.wait(0.005)
        stopped.set()
        raise Cancelled()

    tab = RanksTab(["/jobs/run42"], Commands(), options={"workers": 2}, analyse=analyse)
    qtbot.addWidget(tab)
    tab.show()
    tab.start_load(runner)
    assert started.wait(10)
    # the GUI thread is free while the job runs: its progress reaches the bar
    qtbot.waitUntil(lambda: tab.progress_bar.value() == 300, timeout=10_000)
    assert tab.cancel_button.isVisible()
    with qtbot.waitSignal(tab.state_changed, timeout=10_000) as sig:
        tab.cancel_button.click()
    assert sig.args == ["cancelled"]
    assert stopped.wait(10), "the job did not see the cancel"
    qtbot.waitUntil(lambda: runner.active_count() == 0, timeout=10_000)
    assert seen == {"workers": 2, "paths": ["/jobs/run42"]}


def test_the_skew_chart_tooltip_names_the_last_rank(qtbot, runner):
    ov = fx.make_overview()
    tab = loaded(qtbot, runner, ov)
    sk = tab.view.skew
    c = ov.collectives[3]
    x = (min(c.arrival_ns.values()) - fx.T0) / 1e9
    text, index = sk.hit(x, c.skew_ns / 1e9)
    assert index == 3 and f"last rank {fx.STRAGGLER}" in text
    assert f"skew {fmt_duration(fx.LATE + fx.STRAGGLER * 10_000)}," in text


def test_the_step_chart_boxes_are_each_ranks_steps(qtbot, runner):
    tab = loaded(qtbot, runner, fx.make_overview())
    stats = {b["rank"]: b for b in tab.view.steps.stats}
    assert sorted(stats) == list(range(fx.RANKS))
    steps5 = [20_000_000 + 5 * 100_000 + 3_000_000 + k * 50_000 for k in range(10)]
    assert stats[5]["median"] == statistics.median(steps5)
    assert (stats[5]["min"], stats[5]["max"]) == (min(steps5), max(steps5))
    text, rank = tab.view.steps.hit(5.1, 0.0)
    assert rank == 5 and "10 steps" in text


def test_many_equal_ranks_draw_as_bands_with_ticks_that_differ(qtbot, runner):
    """300 ranks with equal steps (a healthy big job): bands instead of a box, whisker
    and outline per rank (at 1,024 ranks those filled the plot black), a y range wider
    than a few ns, and tick labels that differ (they all read '11.3 ms')."""
    import pyqtgraph as pg

    base = fx.make_overview(failed=False)
    ranks = [dataclasses.replace(base.ranks[0], rank=r, source=f"/jobs/rank-{r}.json",
                                 step_ns=[11_300_000] * 8) for r in range(300)]
    tab = loaded(qtbot, runner, dataclasses.replace(base, ranks=ranks, collectives=[],
                                                    stragglers=[]))
    chart = tab.view.steps
    items = chart.plotItem.items
    assert not any(isinstance(i, (pg.BarGraphItem, pg.ErrorBarItem)) for i in items)
    assert any(isinstance(i, pg.FillBetweenItem) for i in items)
    lo, hi = chart.viewRange()[1]
    assert hi - lo >= 0.02 * 11.3e-3
    axis = chart.getAxis("left")
    labels = [t for spacing, values in axis.tickValues(lo, hi, 300)
              for t in axis.tickStrings(values, 1, spacing)]
    assert len(labels) >= 3 and len(labels) == len(set(labels))
    text, rank = chart.hit(250.2, 0.0)
    assert rank == 250 and "8 steps" in text


def test_the_rows_model_passes_the_model_tester(qtmodeltester):
    m = RowsModel(RANK_COLUMNS, fx.make_overview().ranks)
    qtmodeltester.check(m)


def test_the_open_dialog_gives_paths_and_engine_options(qtbot):
    d = OpenRanksDialog()
    qtbot.addWidget(d)
    assert not d.open_button.isEnabled()
    d.path_edit.setText("/runs/a/rank-0.json; /runs/a/rank-1.json")
    assert d.paths() == ["/runs/a/rank-0.json", "/runs/a/rank-1.json"]
    assert d.options() == {"workers": None}
    d.engine.setCurrentIndex(d.engine.findData("serial"))
    assert d.options() == {"workers": 0}
    d.engine.setCurrentIndex(d.engine.findData("scheduler"))
    assert not d.open_button.isEnabled()               # an address is needed
    d.scheduler.setText("tcp://10.0.0.1:8786")
    assert d.open_button.isEnabled()
    assert d.options() == {"scheduler": "tcp://10.0.0.1:8786"}


def test_rank_labels_thin_out_so_that_they_never_overlap(qtbot, runner):
    many = fx.make_overview()
    many = dataclasses.replace(many, ranks=[dataclasses.replace(many.ranks[r % fx.RANKS], rank=r)
                                            for r in range(256)])
    tab = loaded(qtbot, runner, many)
    axis = tab.view.heatmap.getAxis("left")
    line_px = QFontMetrics(axis.style.get("tickFont") or QFont()).height()
    for size in (120, 250, 900, 4000):
        ((spacing, values),) = axis.tickValues(255.5, -0.5, size)     # an inverted axis
        assert values[0] == 0 and values == sorted(values)
        assert spacing * size / 256 >= line_px                      # pixels between labels
        assert axis.tickStrings(values, 1, spacing)[:2] == ["0", str(int(spacing))]
    ((spacing, _),) = axis.tickValues(-0.5, 255.5, 256 * (line_px + 12))
    assert spacing == 1                                              # room for every rank
