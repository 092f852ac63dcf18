"""Range panel: what the ruler's range holds, per name (count, time inside the range,
mean, share), for kernels, API calls, copies and markers, as Perfetto's area
selection. An area selection over chosen tracks (Shift+drag on the timeline) counts
only their events and adds each track's busy share. Follows ``area_changed``; double
click finds that name in the timeline."""

from __future__ import annotations

import re

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..analysis.area import KIND_LABELS, AreaRow, TrackBusy, area_rows, track_busy
from ..model.units import fmt_duration
from ..qt.document import Document
from ..qt.tasks import TaskScope
from .tables.format import fmt_kernel_name

HEADERS = ("Kind", "Name", "Count", "Time in range", "Mean", "Share")
TRACK_HEADERS = ("Track", "Events", "Busy", "Busy time")
ASYNC_EVENTS = 300_000        # events in the trace: above this, count in a worker
SORT_ROLE = Qt.ItemDataRole.UserRole + 3
PLURALS = {"kernels": "kernels", "api": "API calls", "copies": "copies", "markers": "markers"}


class _Item(QTableWidgetItem):
    """A cell sorted by its number (SORT_ROLE), not its text."""

    def __lt__(self, other) -> bool:
        a, b = self.data(SORT_ROLE), other.data(SORT_ROLE)
        if a is None or b is None:
            return super().__lt__(other)
        return a < b


class AreaTableView(QWidget):
    """The per-name table of the measured range (``shown`` after each fill)."""

    shown = Signal()

    def __init__(self, document: Document, parent=None):
        super().__init__(parent)
        self.document = document
        self.rows: list[AreaRow] = []
        self.busy: list[TrackBusy] = []
        self._tasks: TaskScope | None = None
        self.title = QLabel("Drag on the time axis to measure a range.", self)
        self.title.setWordWrap(True)
        self.table = QTableWidget(0, len(HEADERS), self)
        self.table.setHorizontalHeaderLabels(HEADERS)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        for j in range(2, len(HEADERS)):        # numbers: the biggest first
            head = self.table.horizontalHeaderItem(j)
            if head is not None:
                head.setData(Qt.ItemDataRole.InitialSortOrderRole, Qt.SortOrder.DescendingOrder)
        hh = self.table.horizontalHeader()
        hh.sectionClicked.connect(lambda _s: self.table.scrollToTop())
        hh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        hh.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.itemDoubleClicked.connect(self._on_item_double_clicked)
        v = QVBoxLayout(self)
        v.setContentsMargins(4, 2, 4, 2)
        v.addWidget(self.title)
        v.addWidget(self.table, 3)
        self.tracks_table = self._make_tracks_table()
        v.addWidget(self.tracks_table, 1)
        document.area_changed.connect(self._on_document_area_changed)
        document.trace_loaded.connect(lambda _t: self._on_document_area_changed(None))

    def _make_tracks_table(self) -> QTableWidget:
        """The picked tracks' table (hidden unless an area selection picked tracks)."""
        t = QTableWidget(0, len(TRACK_HEADERS), self)
        t.setObjectName("area_tracks")
        t.setHorizontalHeaderLabels(TRACK_HEADERS)
        t.verticalHeader().hide()
        t.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        t.setWordWrap(False)
        t.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        t.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        t.hide()
        return t

    def _on_document_area_changed(self, area) -> None:
        trace = self.document.trace
        if area is None or trace is None:
            self.fill(None, [])
            return
        t0, t1 = area
        tracks = self.document.view_state.area_tracks

        def job(progress=None, cancelled=None):
            busy = None if tracks is None else track_busy(trace, t0, t1, tracks, cancelled)
            return area, area_rows(trace, t0, t1, cancelled=cancelled, tracks=tracks), busy

        n = sum(len(getattr(trace, t)) for t in ("kernels", "api", "copies", "markers"))
        if n < ASYNC_EVENTS:
            self.fill(*job(None, lambda: False))
            return
        if self._tasks is None:
            self._tasks = self.document.scope("area")
        self.table.setRowCount(0)                  # not the last range's rows meanwhile
        self.tracks_table.hide()
        self.title.setText(f"Counting what {fmt_duration(t1 - t0)} holds…")
        h = self._tasks.submit("area", job)
        h.succeeded.connect(lambda res: self._late_fill(tracks, res))

    def _late_fill(self, tracks, res) -> None:
        if tracks is self.document.view_state.area_tracks:   # else: an older pick's
            self.fill(*res)

    def fill(self, area, rows: list[AreaRow], busy: list[TrackBusy] | None = None) -> None:
        """Show the rows of one range (``area`` None: none measured; ``busy``: the
        picked tracks of an area selection, None for every track)."""
        if area is not None and area != self.document.view_state.area:
            return                              # a late answer for an older range
        self.rows, self.busy = rows, list(busy or [])
        self._fill_tracks(self.busy if busy is not None else None)
        t = self.table
        t.setSortingEnabled(False)
        t.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.DescendingOrder)
        t.setRowCount(len(rows))
        for i, r in enumerate(rows):
            shown = fmt_kernel_name(r.name) if r.kind == "kernels" else r.name
            cells = ((KIND_LABELS[r.kind], r.kind), (shown, r.name), (f"{r.count:,}", r.count),
                     (fmt_duration(r.total_ns), r.total_ns), (fmt_duration(r.mean_ns), r.mean_ns),
                     (f"{100 * r.share:.1f} %", r.share))
            for j, (text, key) in enumerate(cells):
                it = _Item(text)
                it.setData(SORT_ROLE, key)
                if j >= 2:
                    it.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if j == 1:
                    it.setToolTip(r.name)
                t.setItem(i, j, it)
        t.setSortingEnabled(True)
        if area is None:
            self.title.setText("Drag on the time axis to measure a range.")
        else:
            counts = {k: sum(r.count for r in rows if r.kind == k) for k in KIND_LABELS}
            parts = [f"{n:,} {KIND_LABELS[k] if n == 1 else PLURALS[k]}"
                     for k, n in counts.items() if n]
            where = "" if busy is None else f" on {len(busy)} track{'s' * (len(busy) != 1)}"
            self.title.setText(f"Range of {fmt_duration(area[1] - area[0])}{where}: "
                               + (", ".join(parts) or "nothing inside"))
        for j in (0, 2, 3, 4, 5):
            t.resizeColumnToContents(j)
        self.shown.emit()

    def _fill_tracks(self, busy: list[TrackBusy] | None) -> None:
        t = self.tracks_table
        t.setVisible(busy is not None)
        t.setRowCount(len(busy or []))
        for i, b in enumerate(busy or []):
            cells = (b.label, f"{b.count:,}", f"{100 * b.busy:.1f} %", fmt_duration(b.busy_ns))
            for j, text in enumerate(cells):
                it = QTableWidgetItem(text)
                if j:
                    it.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                else:
                    it.setToolTip(b.label)
                t.setItem(i, j, it)
        for j in (1, 2, 3):
            t.resizeColumnToContents(j)

    def _on_item_double_clicked(self, item: QTableWidgetItem) -> None:
        cell = self.table.item(item.row(), 1)
        if cell is None:
            return
        name = cell.data(SORT_ROLE)
        self.document.view_state.set_find(f"^{re.escape(name)}$", True)

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        if self._tasks is not None:
            self._tasks.shutdown()
        super().closeEvent(event)
