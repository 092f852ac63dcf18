"""A QAbstractTableModel over numpy columns: the base of every hipscope table.

Rows are an index array into the source columns (``view_index``): filtering is a
numpy mask turned into an index array, sorting is a stable ``argsort`` of the sort
key over that array. ``data()`` formats only the cells Qt asks for (the visible
ones), so the model stays smooth over millions of rows; nothing is built per row.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt

RAW_ROLE = Qt.ItemDataRole.UserRole + 1    # the unformatted value of a cell
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_LEFT = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
_DISPLAY = Qt.ItemDataRole.DisplayRole
_ALIGN = Qt.ItemDataRole.TextAlignmentRole
_TOOLTIP = Qt.ItemDataRole.ToolTipRole
_FLAGS = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
_NO_FLAGS = Qt.ItemFlag.NoItemFlags


@dataclass(frozen=True)
class Col:
    """One column: ``key`` names it in CSV, ``fmt`` turns one raw value into text."""

    key: str
    header: str
    tip: str = ""
    numeric: bool = True
    fmt: Callable[[object], str] = str


def stable_order(key: np.ndarray, descending: bool) -> np.ndarray:
    """Stable argsort; ties keep their current order in both directions and NaNs
    go last in both directions."""
    if key.dtype.kind == "f":
        nan = np.isnan(key)
        if nan.any():
            key = np.where(nan, -np.inf if descending else np.inf, key)
    if not descending:
        return np.argsort(key, kind="stable")
    if key.dtype.kind in "if" and (key.dtype.kind == "f" or len(key) == 0
                                   or key.min() > np.iinfo(key.dtype).min):
        return np.argsort(-key, kind="stable")       # negation keeps ties in order
    n = len(key)
    return (n - 1 - np.argsort(key[::-1], kind="stable"))[::-1]


class ColumnarModel(QAbstractTableModel):
    """Subclasses fill ``self.columns`` and implement :meth:`values` and
    :meth:`sort_key`; the base handles rows, sorting, roles and CSV."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.columns: list[Col] = []
        self._rows = np.zeros(0, dtype=np.int64)    # view row -> source row
        self._n_source = 0
        self._sort_column = -1
        self._sort_order = Qt.SortOrder.AscendingOrder

    # ---- what subclasses provide ------------------------------------------------
    def values(self, column: int) -> np.ndarray:
        """Raw values of a column over all source rows (cached by the subclass)."""
        raise NotImplementedError

    def sort_key(self, column: int) -> np.ndarray:
        return self.values(column)

    def text(self, column: int, source_row: int) -> str:
        return self.columns[column].fmt(self.values(column)[source_row])

    def tooltip(self, column: int, source_row: int) -> str | None:
        return None

    def arrow_values(self, column: int, rows: np.ndarray) -> pa.Array:
        """A column's raw values at source ``rows`` for CSV (NaN -> null)."""
        v = self.values(column)[rows]
        if v.dtype.kind == "f":
            nan = np.isnan(v)
            return pa.array(v, mask=nan if nan.any() else None)
        return pa.array(v)

    def source_mask(self) -> np.ndarray | None:
        """Rows that pass the current filter (None = all)."""
        return None

    # ---- rows --------------------------------------------------------------------
    @property
    def view_index(self) -> np.ndarray:
        """Source row of each view row (read-only view)."""
        v = self._rows.view()
        v.flags.writeable = False
        return v

    @property
    def source_count(self) -> int:
        return self._n_source

    def source_row(self, view_row: int) -> int:
        return int(self._rows[view_row])

    def view_row(self, source_row: int) -> int:
        """The view row showing ``source_row``; -1 when filtered out."""
        hit = np.flatnonzero(self._rows == source_row)
        return int(hit[0]) if len(hit) else -1

    def _rebuild(self, n_source: int | None = None) -> None:
        """Recompute the row index from filter and sort (inside a model reset)."""
        if n_source is not None:
            self._n_source = n_source
        mask = self.source_mask() if self._n_source else None
        rows = (np.arange(self._n_source, dtype=np.int64) if mask is None
                else np.flatnonzero(mask).astype(np.int64))
        if 0 <= self._sort_column < len(self.columns) and len(rows) > 1:
            key = self.sort_key(self._sort_column)
            if mask is not None:
                key = key[rows]
            desc = self._sort_order == Qt.SortOrder.DescendingOrder
            rows = rows[stable_order(key, desc)]
        self._rows = rows

    def refresh(self, n_source: int | None = None) -> None:
        self.beginResetModel()
        self._rebuild(n_source)
        self.endResetModel()

    # ---- Qt model API ----------------------------------------------------------------
    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 (Qt name)
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.columns)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        # called for every visible cell and many roles: keep the common path short
        if role == _DISPLAY:
            return self.text(index.column(), int(self._rows[index.row()]))
        if role == _ALIGN:
            return _RIGHT if self.columns[index.column()].numeric else _LEFT
        if role == _TOOLTIP:
            return self.tooltip(index.column(), int(self._rows[index.row()]))
        if role == RAW_ROLE and index.isValid():
            v = self.values(index.column())[int(self._rows[index.row()])]
            return v.item() if isinstance(v, np.generic) else v
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(self.columns):
            col = self.columns[section]
            if role == Qt.ItemDataRole.DisplayRole:
                return col.header
            if role == Qt.ItemDataRole.ToolTipRole:
                return col.tip or None
            if role == Qt.ItemDataRole.TextAlignmentRole:
                return _RIGHT if col.numeric else _LEFT
        elif orientation == Qt.Orientation.Vertical and role == Qt.ItemDataRole.DisplayRole:
            return str(section + 1)
        return None

    def flags(self, index):
        return _FLAGS if index.isValid() else _NO_FLAGS

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:
        self.layoutAboutToBeChanged.emit()
        old_persistent = self.persistentIndexList()
        old_src = [int(self._rows[i.row()]) if i.isValid() else -1 for i in old_persistent]
        self._sort_column, self._sort_order = column, order
        self._rebuild()
        if old_persistent:
            inv = np.empty(self._n_source, dtype=np.int64)
            inv[self._rows] = np.arange(len(self._rows))
            new = [self.index(int(inv[s]), i.column()) if s >= 0 else QModelIndex()
                   for i, s in zip(old_persistent, old_src)]
            self.changePersistentIndexList(old_persistent, new)
        self.layoutChanged.emit()

    @property
    def sort_column(self) -> int:
        return self._sort_column

    # ---- CSV -------------------------------------------------------------------------------
    def to_arrow(self, view_rows: np.ndarray | None = None) -> pa.Table:
        rows = self._rows if view_rows is None else self._rows[np.asarray(view_rows, np.int64)]
        arrays = [self.arrow_values(c, rows) for c in range(len(self.columns))]
        return pa.Table.from_arrays(arrays, names=[c.key for c in self.columns])

    def csv_text(self, view_rows: np.ndarray | None = None) -> str:
        """CSV (header + rows, raw values: times in ns) of the given view rows."""
        buf = io.BytesIO()
        pacsv.write_csv(self.to_arrow(view_rows), buf,
                        pacsv.WriteOptions(quoting_style="needed"))
        return buf.getvalue().decode("utf-8")

    def write_csv(self, path, view_rows: np.ndarray | None = None) -> None:
        pacsv.write_csv(self.to_arrow(view_rows), str(path),
                        pacsv.WriteOptions(quoting_style="needed"))

