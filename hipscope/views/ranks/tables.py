"""The Ranks tab's tables: one small read-only model over a list of rows (columns say
their text, sort key and tooltip), and the columns of the per-rank, straggler and
failed-rank tables. Durations through ``fmt_duration``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

from ...model.units import fmt_duration
from ...ranks.model import RankSummary

SORT_ROLE = Qt.ItemDataRole.UserRole
RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
SIZE_FROM_ROWS = 100          # rows a column's width is measured on


@dataclass(frozen=True)
class Column:
    header: str
    text: Callable[[Any], str]
    key: Callable[[Any], Any] | None = None      # sort key (default: the text)
    tip: Callable[[Any], str] | None = None
    numeric: bool = False


class RowsModel(QAbstractTableModel):
    """Rows (any objects) under columns; ``SORT_ROLE`` gives each cell's sort key."""

    def __init__(self, columns: Sequence[Column], rows: Sequence[Any] = (), parent=None):
        super().__init__(parent)
        self.columns, self.rows = list(columns), list(rows)

    def set_rows(self, rows: Sequence[Any]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()):  # noqa: N802, B008 (Qt names and defaults)
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()):  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.columns)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        col, row = self.columns[index.column()], self.rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return col.text(row)
        if role == SORT_ROLE:
            return (col.key or col.text)(row)
        if role == Qt.ItemDataRole.ToolTipRole and col.tip is not None:
            return col.tip(row)
        if role == Qt.ItemDataRole.TextAlignmentRole and col.numeric:
            return int(RIGHT.value)
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal \
                and 0 <= section < len(self.columns):
            return self.columns[section].header
        return None


class RowsTable(QTableView):
    """A sortable view of a :class:`RowsModel`; ``row_of(index)``: the row object."""

    def __init__(self, columns: Sequence[Column], parent: QWidget | None = None,
                 multi: bool = False):
        super().__init__(parent)
        self.source = RowsModel(columns, parent=self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSortRole(SORT_ROLE)
        self.proxy.setSourceModel(self.source)
        self.setModel(self.proxy)
        self.setSortingEnabled(True)
        self.sortByColumn(-1, Qt.SortOrder.AscendingOrder)       # rows as given
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection if multi
                              else QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().hide()
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.horizontalHeader().setStretchLastSection(True)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        # widths from the first rows (Qt's default reads 1,000: 0.9 s of the GUI thread
        # for the three tables of a 1,024-rank job); the last column stretches anyway
        self.horizontalHeader().setResizeContentsPrecision(SIZE_FROM_ROWS)

    def set_rows(self, rows: Sequence[Any]) -> None:
        self.source.set_rows(rows)
        self.resizeColumnsToContents()

    def row_of(self, index: QModelIndex) -> Any:
        return self.source.rows[self.proxy.mapToSource(index).row()]

    def selected_rows(self) -> list[Any]:
        return [self.row_of(i) for i in self.selectionModel().selectedRows()]

    def shown_rows(self) -> list[Any]:
        """The rows in the order shown."""
        return [self.row_of(self.proxy.index(i, 0)) for i in range(self.proxy.rowCount())]


def _median_step(r: RankSummary) -> float | None:
    return float(np.median(r.step_ns)) if r.step_ns else None


def _top_op(r: RankSummary) -> str:
    if not r.top_ops:
        return ""
    op = r.top_ops[0]
    return f"{op.get('name', '')} ({fmt_duration(op.get('gpu_ns'))})"


def _spread(r: RankSummary) -> str:
    return f"{fmt_duration(min(r.step_ns))} – {fmt_duration(max(r.step_ns))}" if r.step_ns else ""


RANK_COLUMNS = (
    Column("Rank", lambda r: str(r.rank), lambda r: r.rank, numeric=True,
           tip=lambda r: f"rank from {r.rank_from}\n{r.source}"),
    Column("Host", lambda r: r.host or "", tip=lambda r: ", ".join(r.devices)),
    Column("Span", lambda r: fmt_duration(r.end_ns - r.start_ns), lambda r: r.end_ns - r.start_ns,
           numeric=True),
    Column("GPU busy", lambda r: f"{100 * r.gpu_busy_fraction:.1f}%",
           lambda r: r.gpu_busy_fraction, numeric=True,
           tip=lambda r: fmt_duration(r.gpu_busy_ns) + " busy"),
    Column("Steps", lambda r: str(len(r.step_ns)), lambda r: len(r.step_ns), numeric=True),
    Column("Median step", lambda r: fmt_duration(_median_step(r)),
           lambda r: _median_step(r) or 0.0, numeric=True, tip=_spread),
    Column("Comm time", lambda r: fmt_duration(r.comm_ns), lambda r: r.comm_ns, numeric=True),
    Column("Kernels", lambda r: f"{r.kernels:,}", lambda r: r.kernels, numeric=True),
    Column("Top op", _top_op, tip=lambda r: "\n".join(
        f"{o.get('name')}: {fmt_duration(o.get('gpu_ns'))} in {o.get('count')}"
        for o in r.top_ops)),
    Column("File", lambda r: Path(r.source).name, tip=lambda r: "\n".join(
        [r.source, *r.warnings])),
)

STRAGGLER_COLUMNS = (
    Column("Rank", lambda s: str(s.rank), lambda s: s.rank, numeric=True),
    Column("Wait caused", lambda s: fmt_duration(s.wait_caused_ns), lambda s: s.wait_caused_ns,
           numeric=True, tip=lambda s: "the others' waits at the collectives it arrived last"),
    Column("Instances", lambda s: str(s.instances), lambda s: s.instances, numeric=True,
           tip=lambda s: "collectives where it arrived last"),
    Column("Op that makes the difference", lambda s: s.op or "(not found)"),
)

FAILURE_COLUMNS = (
    Column("File", lambda f: Path(f.source).name, tip=lambda f: f.source),
    Column("Why it could not be analysed", lambda f: f.reason, tip=lambda f: f.reason),
)

__all__ = ["FAILURE_COLUMNS", "RANK_COLUMNS", "STRAGGLER_COLUMNS", "Column", "RowsModel",
           "RowsTable"]
