"""The job overview as one page: a banner (what was analysed, the worst straggler, the
failed ranks), the utilisation heatmap, step times, collective skew, the per-rank and
straggler tables and the failed ranks with their sentences (never hidden).

Double-click a rank row, a heatmap cell, a straggler or a collective: that rank's
timeline opens in a trace tab, zoomed there (``Commands.open_trace_at``). Two ranks
selected + Compare: the comparison tab (``Commands.compare``)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ...model.units import fmt_duration
from ...qt import ranks as rq
from ...qt.commands import Commands
from ...ranks.model import JobOverview, RankSummary, Straggler
from .charts import SkewChart, StepChart, UtilHeatmap
from .tables import FAILURE_COLUMNS, RANK_COLUMNS, STRAGGLER_COLUMNS, RowsTable

FAILED_STYLE = "background:#fff3bf; color:#5c3c00; padding:4px 8px; border-radius:3px;"


def summary_text(ov: JobOverview) -> str:
    """The banner's first line: what was analysed and the worst straggler."""
    parts = [f"{len(ov.ranks)} rank{'s' * (len(ov.ranks) != 1)} analysed ({ov.engine})",
             f"{len(ov.collectives)} collective instance"
             f"{'s' * (len(ov.collectives) != 1)} matched"]
    if ov.stragglers:
        s = ov.stragglers[0]
        op = f", {s.op}" if s.op else ""
        parts.append(f"worst straggler: rank {s.rank}{op} "
                     f"({fmt_duration(s.wait_caused_ns)} of the others' waits, "
                     f"last in {s.instances})")
    return " · ".join(parts)


def failed_text(ov: JobOverview) -> str:
    """The banner line when ranks failed (empty when none did)."""
    n, total = len(ov.failed), len(ov.failed) + len(ov.ranks)
    if not n:
        return ""
    if not ov.ranks:
        return f"None of the {total} rank files could be analysed; the reasons are below."
    return (f"{n} of {total} rank files could not be analysed; they are left out of the "
            "charts (see Failed ranks below).")


class RanksView(QWidget):
    """One job's overview. Intents go to ``commands``; ``overview`` may be set later."""

    def __init__(self, commands: Commands, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("ranks_view")
        self.commands = commands
        self.overview: JobOverview | None = None
        self.banner = QLabel(self)
        self.banner.setWordWrap(True)
        self.failed_banner = QLabel(self)
        self.failed_banner.setWordWrap(True)
        self.failed_banner.setStyleSheet(FAILED_STYLE)
        self.heatmap, self.steps, self.skew = UtilHeatmap(self), StepChart(self), SkewChart(self)
        self.rank_table = RowsTable(RANK_COLUMNS, self, multi=True)
        self.straggler_table = RowsTable(STRAGGLER_COLUMNS, self)
        self.failure_table = RowsTable(FAILURE_COLUMNS, self)
        self.failure_table.setWordWrap(True)       # the reasons are sentences: all of them
        self.failure_table.horizontalHeader().sectionResized.connect(
            lambda *_: self.failure_table.resizeRowsToContents())
        self._build_layout()
        self._connect()

    # ---- layout --------------------------------------------------------------------------
    def _build_layout(self) -> None:
        charts = QSplitter(Qt.Orientation.Horizontal, self)
        charts.addWidget(self.steps)
        charts.addWidget(self.skew)
        bottom = QSplitter(Qt.Orientation.Horizontal, self)
        self.ranks_box = bottom_box = self._rank_box()
        bottom.addWidget(bottom_box)
        side = QSplitter(Qt.Orientation.Vertical, self)
        self.stragglers_box = _box("Stragglers (worst first; double-click: its worst "
                                   "collective)", self.straggler_table, self)
        self.failures_box = _box("Failed ranks", self.failure_table, self)
        side.addWidget(self.stragglers_box)
        side.addWidget(self.failures_box)
        bottom.addWidget(side)
        bottom.setSizes([1100, 800])
        self.splitter = QSplitter(Qt.Orientation.Vertical, self)
        for w in (self.heatmap, charts, bottom):
            self.splitter.addWidget(w)
        self.splitter.setSizes([380, 260, 340])
        self.charts = charts
        v = QVBoxLayout(self)
        v.setContentsMargins(6, 6, 6, 6)
        v.addWidget(self.banner)
        v.addWidget(self.failed_banner)
        v.addWidget(self.splitter, 1)

    def _rank_box(self) -> QGroupBox:
        box = _box("Ranks (double-click: open its timeline; select two: Compare)",
                   self.rank_table, self)
        row = QHBoxLayout()
        self.open_button = QPushButton("Open timeline", box)
        self.compare_button = QPushButton("Compare", box)
        self.compare_button.setToolTip("Open the two selected ranks in a comparison tab")
        row.addWidget(self.open_button)
        row.addWidget(self.compare_button)
        row.addStretch(1)
        lay = box.layout()
        assert isinstance(lay, QVBoxLayout)
        lay.insertLayout(0, row)
        return box

    def _connect(self) -> None:
        self.rank_table.doubleClicked.connect(
            lambda i: self.open_rank(self.rank_table.row_of(i)))
        self.straggler_table.doubleClicked.connect(
            lambda i: self.open_straggler(self.straggler_table.row_of(i)))
        self.rank_table.selectionModel().selectionChanged.connect(self._update_buttons)
        self.open_button.clicked.connect(self._on_open_clicked)
        self.compare_button.clicked.connect(self.compare_selected)
        self.heatmap.activated.connect(lambda rc: self.open_cell(*rc))
        self.steps.activated.connect(self._on_rank_activated)
        self.skew.activated.connect(self.open_collective)
        self._update_buttons()

    # ---- data ----------------------------------------------------------------------------
    def set_overview(self, ov: JobOverview) -> None:
        self.overview = ov
        self.banner.setText(summary_text(ov) + "".join(f"\n⚠ {w}" for w in ov.warnings))
        self.failed_banner.setText(failed_text(ov))
        self.failed_banner.setVisible(bool(ov.failed))
        worst = ov.stragglers[0].rank if ov.stragglers else None
        self.heatmap.set_overview(ov)
        self.steps.set_overview(ov, worst)
        self.skew.set_overview(ov, worst)
        self.rank_table.set_rows(sorted(ov.ranks, key=lambda r: r.rank))
        self.rank_table.setColumnHidden(1, not any(r.host for r in ov.ranks))   # Host
        self.straggler_table.set_rows(ov.stragglers)
        self.failure_table.set_rows(ov.failed)
        self.failure_table.resizeRowsToContents()
        self.failures_box.setTitle(f"Failed ranks ({len(ov.failed)})")
        self.failures_box.setVisible(bool(ov.failed))
        for w in (self.heatmap, self.charts, self.ranks_box, self.stragglers_box):
            w.setVisible(bool(ov.ranks))
        self._update_buttons()

    # ---- intents -------------------------------------------------------------------------
    def open_rank(self, rank: RankSummary, window: tuple[int, int] | None = None) -> None:
        """Open ``rank``'s timeline at ``window`` (default: its whole span)."""
        self.commands.open_trace_at([Path(rank.source)], window or rq.rank_span(rank))

    def open_cell(self, rank: int, column: int) -> None:
        r = self._rank(rank)
        if r is not None and self.overview is not None:
            self.open_rank(r, rq.cell_window(self.overview, column))

    def open_collective(self, index: int) -> None:
        """The collective's last rank (the one the others waited for), at the collective."""
        if self.overview is None:
            return
        c = self.overview.collectives[index]
        r = self._rank(c.last_rank)
        if r is not None:
            self.open_rank(r, rq.collective_window(c))

    def open_straggler(self, s: Straggler) -> None:
        """The straggler at its worst collective (its whole span when it has none)."""
        r = self._rank(s.rank)
        c = rq.worst_instance(self.overview, s.rank) if self.overview is not None else None
        if r is not None:
            self.open_rank(r, rq.collective_window(c) if c is not None else None)

    def compare_selected(self) -> None:
        picked = sorted(self.rank_table.selected_rows(), key=lambda r: r.rank)
        if len(picked) == 2:
            self.commands.compare([Path(r.source) for r in picked])

    def _on_open_clicked(self) -> None:
        for r in self.rank_table.selected_rows():
            self.open_rank(r)

    def _on_rank_activated(self, rank: int) -> None:
        r = self._rank(rank)
        if r is not None:
            self.open_rank(r)

    def _rank(self, rank: int) -> RankSummary | None:
        return rq.rank_by_number(self.overview, rank) if self.overview is not None else None

    def _update_buttons(self, *_args) -> None:
        n = len(self.rank_table.selectionModel().selectedRows())
        self.open_button.setEnabled(n >= 1)
        self.compare_button.setEnabled(n == 2)


def _box(title: str, table: QWidget, parent: QWidget) -> QGroupBox:
    box = QGroupBox(title, parent)
    v = QVBoxLayout(box)
    v.setContentsMargins(4, 4, 4, 4)
    v.addWidget(table)
    return box
