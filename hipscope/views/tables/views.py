"""The kernel summary and all-kernels panels, bound to a Document.

Both follow the document (trace_loaded, filters_changed, selection_changed) and
change state only through ``document.view_state``.
"""

from __future__ import annotations

import re

import numpy as np
from PySide6.QtCore import QItemSelectionModel, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from ...model.view_state import Selection
from ...qt.document import Document
from .format import fmt_duration, parse_duration
from .kernels_model import KernelsTableModel
from .summary_model import KernelSummaryModel
from .table_view import ColumnarTableView

_ALL = -1
ASYNC_STATS_ROWS = 200_000     # kernel_stats over more rows runs in a worker


class KernelsTableView(QWidget):
    """Filter bar + table of every kernel. Selecting a row selects that kernel."""

    def __init__(self, document: Document, parent=None):
        super().__init__(parent)
        self.document = document
        self.model = KernelsTableModel(self)
        self.model.tasks = document.scope("kernels_rows")
        self.table = ColumnarTableView(self)
        self.table.setModel(self.model)
        self._syncing = False
        self._scroll_top = False         # a user's sort shows the top, not the selection
        self._build_filter_bar()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addLayout(self._bar)
        lay.addWidget(self.table)
        self.table.selectionModel().currentRowChanged.connect(self._on_table_current_changed)
        self.model.modelReset.connect(self._on_model_reset)
        self.model.layoutChanged.connect(self._scroll_to_selection)
        self.model.busy_changed.connect(self._on_model_busy_changed)
        self.table.horizontalHeader().sectionClicked.connect(self._on_header_clicked)
        document.trace_loaded.connect(self._on_document_trace_loaded)
        document.filters_changed.connect(self._on_document_filters_changed)
        document.selection_changed.connect(self._on_document_selection_changed)
        if document.trace is not None:
            self._on_document_trace_loaded(document.trace)

    # ---- filter bar ------------------------------------------------------------------
    def _build_filter_bar(self) -> None:
        self._bar = QHBoxLayout()
        self._bar.setContentsMargins(4, 2, 4, 0)
        self.name_edit = QLineEdit(self)
        self.name_edit.setPlaceholderText("Filter names (regex)")
        self.name_edit.setClearButtonEnabled(True)
        self.device_combo = QComboBox(self)
        self.stream_combo = QComboBox(self)
        for combo in (self.device_combo, self.stream_combo):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.min_edit = QLineEdit(self)
        self.max_edit = QLineEdit(self)
        for e, what in ((self.min_edit, "min"), (self.max_edit, "max")):
            e.setPlaceholderText(f"{what} duration")
            e.setToolTip("a duration such as 20us, 1.5ms or 300 (ns)")
            e.setMaximumWidth(110)
        self.count_label = QLabel(self)
        self.count_label.setTextFormat(Qt.TextFormat.PlainText)
        # "Sorting…" / "Filtering…" while a worker computes the rows of a big table
        self.busy_label = QLabel(self)
        self.busy_label.setTextFormat(Qt.TextFormat.PlainText)
        bold = self.busy_label.font()
        bold.setBold(True)
        self.busy_label.setFont(bold)          # the theme's highlight, also after a switch
        self.busy_label.setForegroundRole(QPalette.ColorRole.Highlight)
        self.busy_label.hide()
        self._debounce = QTimer(self, singleShot=True, interval=250)
        self._debounce.timeout.connect(self._apply_filter_bar)
        self.name_edit.textChanged.connect(self._debounce.start)
        self.min_edit.editingFinished.connect(self._apply_filter_bar)
        self.max_edit.editingFinished.connect(self._apply_filter_bar)
        self.device_combo.activated.connect(self._apply_filter_bar)
        self.stream_combo.activated.connect(self._apply_filter_bar)
        self._bar.addWidget(self.name_edit, 3)
        self._bar.addWidget(self.device_combo)
        self._bar.addWidget(self.stream_combo)
        self._bar.addWidget(self.min_edit)
        self._bar.addWidget(self.max_edit)
        self._bar.addWidget(self.busy_label)
        self._bar.addWidget(self.count_label, 1)

    def _fill_combo(self, combo: QComboBox, label: str, values) -> None:
        combo.clear()
        combo.addItem(f"All {label}s", _ALL)
        for v in values:
            combo.addItem(f"{label} {v}", int(v))
        combo.setVisible(combo.count() > 2)

    def _apply_filter_bar(self) -> None:
        dev = self.device_combo.currentData()
        stream = self.stream_combo.currentData()
        bounds = []
        for e in (self.min_edit, self.max_edit):
            try:
                bounds.append(parse_duration(e.text()))
                e.setStyleSheet("")
            except ValueError:
                bounds.append(None)
                e.setStyleSheet("color: #d33;")
        self.document.view_state.set_filters(
            name_regex=self.name_edit.text(),
            devices=None if dev in (None, _ALL) else frozenset({dev}),
            streams=None if stream in (None, _ALL) else frozenset({stream}),
            min_duration_ns=bounds[0], max_duration_ns=bounds[1])

    def _show_filters(self, f) -> None:
        """Reflect filters set elsewhere in the bar (without re-applying them)."""
        widgets = (self.name_edit, self.device_combo, self.stream_combo,
                   self.min_edit, self.max_edit)
        for w in widgets:
            w.blockSignals(True)
        try:
            if self.name_edit.text() != f.name_regex:
                self.name_edit.setText(f.name_regex)
            for combo, sel in ((self.device_combo, f.devices), (self.stream_combo, f.streams)):
                want = _ALL if not sel or len(sel) != 1 else next(iter(sel))
                i = combo.findData(want)
                combo.setCurrentIndex(max(i, 0))
            for e, v in ((self.min_edit, f.min_duration_ns), (self.max_edit, f.max_duration_ns)):
                try:
                    same = parse_duration(e.text()) == v
                except ValueError:
                    same = False
                if not same:
                    e.setText("" if v is None else fmt_duration(v).replace(" ", ""))
        finally:
            for w in widgets:
                w.blockSignals(False)

    # ---- document --------------------------------------------------------------------
    def _on_document_trace_loaded(self, trace) -> None:
        self.model.filters = self.document.view_state.filters
        self.model.set_trace(trace)
        k = trace.kernels
        self._fill_combo(self.device_combo, "GPU",
                         _distinct_ids(k.numpy("device")) if len(k) else [])
        streams = _distinct_ids(k.numpy("stream", fill=-1)) if k.has("stream") else []
        self._fill_combo(self.stream_combo, "stream", [s for s in streams if s >= 0])
        self._show_filters(self.model.filters)
        if len(k) and self.table.horizontalHeader().sortIndicatorSection() < 0:
            # show kernels in time order (readers keep the source's order)
            self.table.horizontalHeader().setSortIndicator(
                self.model.column_of("start_ns"), Qt.SortOrder.AscendingOrder)
        self.table.fit_columns()

    def _on_document_filters_changed(self, filters) -> None:
        self._show_filters(filters)
        if self.model.trace is not None:
            self.model.set_filters(filters)

    def _on_model_reset(self) -> None:
        m = self.model
        n, total = m.rowCount(), m.source_count
        text = f"{n:,} kernels" if n == total else f"{n:,} of {total:,} kernels"
        self.count_label.setText(text)
        self.name_edit.setStyleSheet("color: #d33;" if m.filter_error else "")
        self.name_edit.setToolTip(m.filter_error or "case-insensitive regular expression")
        self._scroll_to_selection()

    def _on_model_busy_changed(self, text: str) -> None:
        self.busy_label.setText(text)
        self.busy_label.setVisible(bool(text))

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        self.model.shutdown()
        super().closeEvent(event)

    def _on_document_selection_changed(self, sel) -> None:
        self._scroll_to_selection()

    def _on_header_clicked(self, _section: int) -> None:
        """A sort the user asked for starts at the top (the biggest first, for durations)."""
        if self.model.busy:
            self._scroll_top = True      # taken when the sorted rows arrive
        else:
            self.table.scrollToTop()

    def _scroll_to_selection(self) -> None:
        if self._scroll_top:
            self._scroll_top = False
            self.table.scrollToTop()
            return
        sel = self.document.view_state.selection
        sm = self.table.selectionModel()
        self._syncing = True
        try:
            if sel is None or sel.table != "kernels" or self.model.rowCount() == 0:
                if sel is not None:
                    sm.clearSelection()
                return
            row = self.model.view_row(sel.row)
            if row < 0:
                sm.clearSelection()
                return
            cur = self.table.currentIndex()
            if cur.isValid() and cur.row() == row and sm.isRowSelected(row):
                return
            idx = self.model.index(row, 0)
            sm.setCurrentIndex(idx, QItemSelectionModel.SelectionFlag.ClearAndSelect
                               | QItemSelectionModel.SelectionFlag.Rows)
            hbar = self.table.horizontalScrollBar()
            x = hbar.value()                        # centre the row, not the name cell:
            self.table.scrollTo(idx, QAbstractItemView.ScrollHint.PositionAtCenter)
            hbar.setValue(x)                        # the names' starts stay in sight
        finally:
            self._syncing = False

    def _on_table_current_changed(self, current, _previous) -> None:
        if self._syncing or not current.isValid():
            return
        self.document.view_state.select(Selection("kernels", self.model.source_row(current.row())))


class KernelSummaryView(QWidget):
    """Per-name statistics. A click highlights that name's instances in the timeline
    (its find), a double click filters the kernels to that name and raises their table
    (``show_panel_requested("kernels")``). Big traces get their statistics from a
    worker (``stats_ready`` when shown)."""

    stats_ready = Signal()
    show_panel_requested = Signal(str)

    def __init__(self, document: Document, parent=None):
        super().__init__(parent)
        self.document = document
        self.model = KernelSummaryModel(self)
        self.model.tasks = document.scope("summary_rows")
        self.table = ColumnarTableView(self)
        self.table.setModel(self.model)
        self.table.horizontalHeader().setSortIndicator(2, Qt.SortOrder.DescendingOrder)
        self.table.doubleClicked.connect(self._on_table_double_clicked)
        self.table.clicked.connect(self._on_table_clicked)
        self.table.horizontalHeader().sectionClicked.connect(lambda _s: self.table.scrollToTop())
        show = QAction("Show these kernels only", self.table)
        show.triggered.connect(self._filter_to_selection)
        find = QAction("Find in timeline", self.table)
        find.triggered.connect(self._find_selection)
        clear = QAction("Clear kernel filter", self.table)
        clear.triggered.connect(lambda: document.view_state.set_filters(name_regex=""))
        self.table.extra_actions = [show, find, clear]
        self._tasks = None
        self.status = QLabel(self)
        self.status.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.status.hide()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.status)
        lay.addWidget(self.table)
        document.trace_loaded.connect(self._on_document_trace_loaded)
        if document.trace is not None:
            self._on_document_trace_loaded(document.trace)

    def _on_document_trace_loaded(self, trace) -> None:
        if len(trace.kernels) < ASYNC_STATS_ROWS:
            self._show_stats(trace, None)
            return
        from ...analysis.context import analyses_of
        if self._tasks is None:
            self._tasks = self.document.scope("summary_stats")
        self.model.set_trace(None)
        self.status.setText(f"Computing statistics of {len(trace.kernels):,} kernels…")
        self.status.show()
        h = self._tasks.submit("stats", lambda progress, cancelled: analyses_of(
            trace).kernel_stats(cancelled))
        h.succeeded.connect(lambda st, trace=trace: self._show_stats(trace, st))
        h.failed.connect(self.status.setText)

    def _show_stats(self, trace, stats) -> None:
        if trace is not self.document.trace:
            return
        self.status.hide()
        self.model.set_trace(trace, stats)
        self.table.fit_columns()
        self.stats_ready.emit()

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        if self._tasks is not None:
            self._tasks.shutdown()
        super().closeEvent(event)

    def _selected_names(self) -> list[str]:
        return [self.model.name(self.model.source_row(int(r)))
                for r in self.table.selected_view_rows()]

    def _on_table_clicked(self, index) -> None:
        name = self.model.name(self.model.source_row(index.row()))
        self.document.view_state.set_find(f"^{re.escape(name)}$", True)

    def _on_table_double_clicked(self, index) -> None:
        name = self.model.name(self.model.source_row(index.row()))
        self.document.view_state.set_filters(name_regex=f"^{re.escape(name)}$")
        self.show_panel_requested.emit("kernels")

    def _filter_to_selection(self) -> None:
        names = self._selected_names()
        if names:
            rx = "|".join(re.escape(n) for n in names)
            self.document.view_state.set_filters(name_regex=f"^(?:{rx})$")

    def _find_selection(self) -> None:
        names = self._selected_names()
        if names:
            self.document.view_state.set_find(names[0], False)


def _distinct_ids(ids: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an id column: a bincount for small ids (5M rows in a few
    ms, where np.unique's sort takes ~30 ms on the GUI thread), np.unique otherwise."""
    if len(ids) == 0:
        return ids
    lo, hi = int(ids.min()), int(ids.max())
    if lo >= -1 and hi < (1 << 20):
        return np.flatnonzero(np.bincount(ids.astype(np.int64) + 1)) - 1
    return np.unique(ids)
