"""A QAbstractTableModel over numpy columns: the base of every hipscope table.

Rows are an index array into the source columns (``view_index``): filtering is a
numpy mask turned into an index array, sorting is a stable ``argsort`` of the sort
key over that array. ``data()`` formats only the cells Qt asks for (the visible
ones), so the model stays smooth over millions of rows; nothing is built per row.

A model over more than ``async_rows`` source rows computes the row index (filter
mask and sort permutation) in a worker and applies it on the GUI thread when it
arrives; ``busy_changed`` says what is pending ("Sorting…") and a newer request
cancels a stale one.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal

from ...model.progress import Cancelled

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
    descending_first: bool = False     # a first click sorts the biggest first (durations)


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


def compute_rows(n_source: int, mask_fn: Callable[[], tuple[np.ndarray | None, object]],
                 key_fn: Callable[[], np.ndarray] | None, descending: bool,
                 cancelled: Callable[[], bool] = lambda: False
                 ) -> tuple[np.ndarray, object]:
    """The view's row index: source rows passing ``mask_fn()`` (mask, extra), ordered by
    a stable sort of ``key_fn()`` when given. Returns (rows, extra). Pure: runs in
    workers too (raises :class:`Cancelled` between steps when ``cancelled()``)."""
    mask, extra = mask_fn() if n_source else (None, None)
    if cancelled():
        raise Cancelled()
    rows = (np.arange(n_source, dtype=np.int64) if mask is None
            else np.flatnonzero(mask).astype(np.int64))
    if key_fn is not None and len(rows) > 1:
        key = key_fn()
        if cancelled():
            raise Cancelled()
        if mask is not None:
            key = key[rows]
        rows = rows[stable_order(key, descending)]
    return rows, extra


class ColumnarModel(QAbstractTableModel):
    """Subclasses fill ``self.columns`` and implement :meth:`values` and
    :meth:`sort_key`; the base handles rows, sorting, roles and CSV.

    With more than ``async_rows`` source rows (None: never), sorting and filtering
    compute the row index in a worker (see :meth:`_row_job`): ``busy_changed(text)``
    announces it ("" when done) and ``rows_ready`` follows each applied result."""

    busy_changed = Signal(str)
    rows_ready = Signal()

    async_rows: int | None = None

    def __init__(self, parent=None):
        super().__init__(parent)
        self.columns: list[Col] = []
        self._rows = np.zeros(0, dtype=np.int64)    # view row -> source row
        self._n_source = 0
        self._sort_column = -1
        self._sort_order = Qt.SortOrder.AscendingOrder
        # where the rows are computed: the view sets its document's scope (``tasks``);
        # a model used alone makes its own TaskRunner on the first async request
        self.tasks = None
        self._tasks = None
        self._pending = None             # TaskHandle of the live async request
        self._pending_reset = False      # the pending result changes the filter too
        self._busy = ""

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

    def _row_job(self) -> tuple[Callable[[], tuple[np.ndarray | None, object]],
                                Callable[[], np.ndarray] | None]:
        """(mask_fn, key_fn) for :func:`compute_rows` under the current filter and
        sort. A model that goes async overrides this so that both only touch data
        captured now (they run in a worker while the GUI thread goes on)."""
        col = self._sort_column
        key_fn = ((lambda: self.sort_key(col)) if 0 <= col < len(self.columns) else None)
        return (lambda: (self.source_mask(), None)), key_fn

    def _rows_applied(self, extra: object) -> None:
        """Take the ``extra`` a mask_fn returned along with its mask (GUI thread)."""

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
        """Recompute the row index from filter and sort (inside a model reset).
        Synchronous: a big model calls :meth:`refresh` instead."""
        if n_source is not None:
            self._n_source = n_source
        self._cancel_pending()
        mask_fn, key_fn = self._row_job()
        desc = self._sort_order == Qt.SortOrder.DescendingOrder
        self._rows, extra = compute_rows(self._n_source, mask_fn, key_fn, desc)
        self._rows_applied(extra)

    def is_async(self) -> bool:
        """Whether the row index is computed in a worker (a big model)."""
        return self.async_rows is not None and self._n_source > self.async_rows

    @property
    def busy(self) -> str:
        """What a worker is computing for the rows ("Sorting…"), "" when idle."""
        return self._busy

    def refresh(self, n_source: int | None = None) -> None:
        """Recompute the rows after the filter changed (a model reset); in a worker
        when the model is big (the old rows stay until the result is applied)."""
        if n_source is not None:
            self._n_source = n_source
        if self.is_async():
            self._request_rows(reset=True)
            return
        self.beginResetModel()
        self._rebuild()
        self.endResetModel()
        self.rows_ready.emit()

    # ---- async rows ------------------------------------------------------------------
    def _set_busy(self, text: str) -> None:
        if text != self._busy:
            self._busy = text
            self.busy_changed.emit(text)

    def _cancel_pending(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
            self._pending_reset = False
            self._set_busy("")

    def _request_rows(self, reset: bool) -> None:
        """Compute the rows in a worker; the latest request wins. ``reset``: the
        filter changed, so the result is applied as a model reset (else as a layout
        change that keeps the selection)."""
        from ...qt.tasks import TaskRunner

        if self._tasks is None:
            self._tasks = self.tasks if self.tasks is not None else TaskRunner(self, max_threads=2)
        self._pending_reset = self._pending_reset or reset
        n = self._n_source
        mask_fn, key_fn = self._row_job()
        desc = self._sort_order == Qt.SortOrder.DescendingOrder
        want_inverse = not self._pending_reset

        def job(progress, cancelled):
            rows, extra = compute_rows(n, mask_fn, key_fn, desc, cancelled)
            inv = None
            if want_inverse:                  # source row -> view row, for persistent indexes
                inv = (np.empty(n, dtype=np.int64) if len(rows) == n
                       else np.full(n, -1, dtype=np.int64))
                inv[rows] = np.arange(len(rows), dtype=np.int64)
            return rows, extra, inv

        handle = self._tasks.submit("rows", job)
        self._pending = handle
        handle.succeeded.connect(lambda res, h=handle: self._on_rows_computed(h, res))
        handle.failed.connect(lambda text, h=handle: self._on_rows_failed(h, text))
        self._set_busy("Filtering…" if self._pending_reset else "Sorting…")

    def _on_rows_failed(self, handle, text: str) -> None:
        if handle is self._pending:
            self._pending = None
            self._pending_reset = False
            self._set_busy("")

    def _on_rows_computed(self, handle, result) -> None:
        if handle is not self._pending:
            return                                   # stale (a newer request is live)
        rows, extra, inv = result
        reset = self._pending_reset
        self._pending = None
        self._pending_reset = False
        if reset:
            self.beginResetModel()
            self._rows = rows
            self._rows_applied(extra)
            self.endResetModel()
        else:
            self._apply_layout(rows, inv)
            self._rows_applied(extra)
        self._set_busy("")
        self.rows_ready.emit()

    def _apply_layout(self, rows: np.ndarray, inv: np.ndarray | None = None) -> None:
        """Show ``rows`` (same set, new order) keeping persistent indexes (the
        selection and current row) on their source rows."""
        self.layoutAboutToBeChanged.emit()
        old_persistent = self.persistentIndexList()
        old_src = [int(self._rows[i.row()]) if i.isValid() and i.row() < len(self._rows)
                   else -1 for i in old_persistent]
        self._rows = rows
        if old_persistent:
            if inv is None:
                inv = np.full(self._n_source, -1, dtype=np.int64)
                inv[rows] = np.arange(len(rows))
            new = [self.index(int(inv[s]), i.column()) if s >= 0 and inv[s] >= 0
                   else QModelIndex() for i, s in zip(old_persistent, old_src)]
            self.changePersistentIndexList(old_persistent, new)
        self.layoutChanged.emit()

    def shutdown(self) -> None:
        """Cancel a pending request and wait for the worker (when the view closes)."""
        self._cancel_pending()
        if self._tasks is not None:
            self._tasks.shutdown()

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
            if role == Qt.ItemDataRole.InitialSortOrderRole:
                return (Qt.SortOrder.DescendingOrder if col.descending_first
                        else Qt.SortOrder.AscendingOrder)
        elif orientation == Qt.Orientation.Vertical and role == Qt.ItemDataRole.DisplayRole:
            return str(section + 1)
        return None

    def flags(self, index):
        return _FLAGS if index.isValid() else _NO_FLAGS

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:
        self._sort_column, self._sort_order = column, order
        if self.is_async():
            self._request_rows(reset=False)          # a pending filter change stays a reset
            return
        if self._pending is not None:
            # a request of a big model is still out (e.g. the model just shrank)
            self.beginResetModel()
            self._rebuild()
            self.endResetModel()
            self.rows_ready.emit()
            return
        mask_fn, key_fn = self._row_job()
        desc = order == Qt.SortOrder.DescendingOrder
        rows, extra = compute_rows(self._n_source, mask_fn, key_fn, desc)
        self._apply_layout(rows)
        self._rows_applied(extra)
        self.rows_ready.emit()

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

