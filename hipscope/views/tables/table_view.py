"""QTableView tuned for big columnar models: fixed row heights, widths measured on a
sample of rows (never ResizeToContents over millions), copy selected rows as CSV."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QMenu, QTableView

from .columnar import ColumnarModel

SAMPLE_ROWS = 200      # rows measured to size a column
MAX_NAME_WIDTH = 520   # px; long kernel names elide, the tooltip has the whole name
MAX_WIDTH = 220


class ColumnarTableView(QTableView):
    """A table over a :class:`ColumnarModel` with a 'Copy as CSV' action."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setAlternatingRowColors(True)
        self.setWordWrap(False)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        vh = self.verticalHeader()
        vh.setVisible(False)
        vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vh.setDefaultSectionSize(self.fontMetrics().height() + 6)
        hh = self.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        hh.setHighlightSections(False)
        hh.setSortIndicatorClearable(True)
        hh.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.setSortingEnabled(True)
        self.copy_action = QAction("Copy rows as CSV", self)
        self.copy_action.setShortcut(QKeySequence.StandardKey.Copy)
        self.copy_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.copy_action.triggered.connect(self.copy_selection)
        self.addAction(self.copy_action)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._on_context_menu)
        self.extra_actions: list[QAction] = []
        self._name_fit = 0           # width column 0 was given by fit_columns
        self._name_natural = 0       # width its sampled text needs
        self._name_user_sized = False
        self._sizing = False
        hh.sectionResized.connect(self._on_header_section_resized)

    def columnar_model(self) -> ColumnarModel:
        return self.model()

    def selected_view_rows(self) -> np.ndarray:
        """Selected view rows, from the selection's ranges (not one index per row:
        a select-all over millions of rows stays cheap)."""
        parts = [np.arange(r.top(), r.bottom() + 1, dtype=np.int64)
                 for r in self.selectionModel().selection()]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(parts))

    def copy_selection(self) -> str:
        """Put the selected rows on the clipboard as CSV (header + raw values)."""
        rows = self.selected_view_rows()
        if len(rows) == 0:
            return ""
        text = self.columnar_model().csv_text(rows)
        QGuiApplication.clipboard().setText(text)
        return text

    def fit_columns(self) -> None:
        """Size columns to header and the first rows' text (a sample, not all rows)."""
        model = self.columnar_model()
        fm = self.fontMetrics()
        hfm = self.horizontalHeader().fontMetrics()
        n = min(model.rowCount(), SAMPLE_ROWS)
        self._sizing = True
        try:
            for c, col in enumerate(model.columns):
                w = hfm.horizontalAdvance(col.header) + 28      # room for the sort arrow
                for r in range(n):
                    w = max(w, fm.horizontalAdvance(model.text(c, model.source_row(r))) + 14)
                if c == 0:
                    self._name_natural = w
                    self._name_fit = min(w, MAX_NAME_WIDTH)
                self.setColumnWidth(c, min(w, MAX_NAME_WIDTH if c == 0 else MAX_WIDTH))
        finally:
            self._sizing = False
        self._name_user_sized = False
        self._stretch_name_column()

    def _stretch_name_column(self) -> None:
        """Give column 0 (names) the room the others leave, up to what it needs."""
        model = self.model()
        if model is None or model.columnCount() == 0 or self._name_user_sized:
            return
        others = sum(self.columnWidth(c) for c in range(1, model.columnCount()))
        room = self.viewport().width() - others
        w = max(self._name_fit, min(self._name_natural, room))
        if w != self.columnWidth(0):
            self._sizing = True
            try:
                self.setColumnWidth(0, w)
            finally:
                self._sizing = False

    def _on_header_section_resized(self, index: int, _old: int, _new: int) -> None:
        if index == 0 and not self._sizing:
            self._name_user_sized = True

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._stretch_name_column()

    def _on_context_menu(self, pos) -> None:
        menu = QMenu(self)
        menu.addAction(self.copy_action)
        for a in self.extra_actions:
            menu.addAction(a)
        menu.popup(self.viewport().mapToGlobal(pos))
