"""The comparison tab's Ops page: runs compared by the op that launched their GPU
work (``compare --by op``'s core, :func:`hipscope.analysis.diff.by_op.compare_ops`),
whatever the kernels are called.

A line with the level the runs matched at and the coverage ("matched ops hold 97 %
of A's kernel time, 95 % of B's"); a table A | B | Δ | B/A per matched op name, per
module path and input shapes, or per kernel class, sorted by |Δ|; "Align timelines
here" puts both timelines' origin at the n-th matched instance of the selected op.
"""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from .compare_models import (
    NEUTRAL,
    SORT_ROLE,
    _Table,
    delta_colour,
    fmt_delta,
    fmt_ratio,
    result_table,
)
from .tables.format import fmt_duration

VIEWS = {"by_name": "per op", "rows": "per module path and input shapes",
         "classes": "per kernel class"}
NO_OPS = ("Compared by kernel name only: at least one run records no host ops that "
          "launched its kernels (PyTorch cpu_op, annotations, roctx/NVTX ranges).")
_DISPLAY = Qt.ItemDataRole.DisplayRole
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


def coverage_text(ops: dict[str, Any] | None) -> str:
    """'Matched at: op — matched ops hold 97 % of A's kernel time, 95 % of B's'."""
    if ops is None:
        return NO_OPS
    if ops.get("not_comparable") or ops.get("level") is None:
        return "Not comparable by op: no op, module or step of A matches one of B."
    cov = ops["coverage"]
    what = {"op": "ops", "module": "modules", "step": "steps"}[ops["level"]]
    return (f"<b>Matched at: {ops['level']}</b> — matched {what} hold "
            f"{100 * cov['a']:.0f} % of A's kernel time, {100 * cov['b']:.0f} % of B's"
            + ("" if ops.get("shapes") else " (no input shapes recorded: by name and order)"))


def row_label(row: dict[str, Any]) -> str:
    if "class" in row:
        return str(row["class"])
    if "path" in row:
        parts = [p for p in (row["path"].rpartition("/")[2], row["name"]) if p]
        shapes = row.get("shapes", "")
        if row.get("b_shapes", shapes) != shapes:          # matched by name and order
            shapes = f"{shapes or '[]'} → {row['b_shapes'] or '[]'}"
        return " · ".join(parts) + (f"  {shapes}" if shapes else "")
    return str(row["name"])


class OpsDiffModel(_Table):
    """Rows of one view of the by-op comparison; sorted by |Δ| until a header sorts
    it (the Δ column sorts by |Δ| too)."""

    HEADERS = ("Op", "A n", "B n", "A GPU time", "B GPU time", "Δ (B − A)", "B / A")

    def __init__(self, parent=None):
        super().__init__(parent)
        self.ops: dict[str, Any] | None = None
        self.view = "by_name"
        self.rows: list[dict[str, Any]] = []
        self._sort: tuple[int, Qt.SortOrder] = (5, Qt.SortOrder.DescendingOrder)

    def set_ops(self, ops: dict[str, Any] | None, view: str | None = None) -> None:
        self.beginResetModel()
        self.ops = ops
        self.view = view or self.view
        self.rows = list(ops.get(self.view) or []) if ops is not None else []
        self._apply_sort()
        self.endResetModel()

    def _key(self, row: dict[str, Any], col: int):
        if col == 0:
            return row_label(row).lower()
        if col in (1, 2):
            return row.get(("a_count", "b_count")[col - 1], -1)
        if col == 6:
            r = row.get("ratio")
            return r if r is not None and math.isfinite(r) else -1.0
        return (row["a_gpu_ns"], row["b_gpu_ns"], abs(row["delta_ns"]))[col - 3]

    def _apply_sort(self) -> None:
        col, order = self._sort
        self.rows.sort(key=lambda r: self._key(r, col),
                       reverse=order == Qt.SortOrder.DescendingOrder)

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:
        if not 0 <= column < len(self.HEADERS):
            return
        self.layoutAboutToBeChanged.emit()
        self._sort = (column, order)
        self._apply_sort()
        self.layoutChanged.emit()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def row_at(self, i: int) -> dict[str, Any] | None:
        return self.rows[i] if 0 <= i < len(self.rows) else None

    def data(self, index, role=_DISPLAY):
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        r, col = self.rows[index.row()], index.column()
        if role == _DISPLAY:
            counts = [f"{r[k]:,}" if k in r else "–" for k in ("a_count", "b_count")]
            one_sided = not r["a_gpu_ns"] or not r["b_gpu_ns"]    # no ratio to speak of
            return (row_label(r), *counts, fmt_duration(r["a_gpu_ns"]),
                    fmt_duration(r["b_gpu_ns"]), fmt_delta(r["delta_ns"], "ns"),
                    "–" if one_sided else fmt_ratio(r.get("ratio")))[col]
        if role == SORT_ROLE:
            return self._key(r, col)
        if role == Qt.ItemDataRole.TextAlignmentRole and col > 0:
            return _RIGHT
        if role == Qt.ItemDataRole.ForegroundRole and col >= 5:
            one_sided = not r["a_gpu_ns"] or not r["b_gpu_ns"]
            return NEUTRAL if one_sided else delta_colour(r.get("ratio"), -1, r["delta_ns"])
        if role == Qt.ItemDataRole.ToolTipRole and col == 0:
            return "\n".join(f"{k}: {r[k]}" for k in ("path", "name", "shapes", "b_shapes",
                                                       "class") if r.get(k))
        return None


class OpsComparePage(QWidget):
    """Coverage line, view choice, the table and "Align timelines here"."""

    align_requested = Signal(object, int)     # the row (dict), instance number (1-based)

    def __init__(self, parent=None):
        super().__init__(parent)
        v = QVBoxLayout(self)
        v.setContentsMargins(0, 2, 0, 0)
        top = QHBoxLayout()
        self.coverage = QLabel(NO_OPS, self)
        self.coverage.setTextFormat(Qt.TextFormat.RichText)
        self.coverage.setWordWrap(True)
        self.view_combo = QComboBox(self)
        for k, text in VIEWS.items():
            self.view_combo.addItem(text, k)
        self.view_combo.activated.connect(lambda _i: self.model.set_ops(
            self.model.ops, self.view_combo.currentData()))
        top.addWidget(self.coverage, 1)
        top.addWidget(self.view_combo)
        self.model = OpsDiffModel(self)
        self.table = _ops_table(self.model, self)
        self.levels = QLabel("", self)
        self.levels.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        bottom = QHBoxLayout()
        self.instance = QSpinBox(self)
        self.instance.setRange(1, 1)
        self.instance.setPrefix("matched instance #")
        self.align_button = QPushButton("Align timelines here", self)
        self.align_button.setToolTip("Both timelines' time 0 at the start of this op's "
                                     "matched instance, on each side")
        self.align_button.setEnabled(False)
        self.align_button.clicked.connect(self._on_align_clicked)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self.table.doubleClicked.connect(lambda _ix: self._on_align_clicked())
        bottom.addWidget(self.levels, 1)
        bottom.addWidget(self.instance)
        bottom.addWidget(self.align_button)
        v.addLayout(top)
        v.addWidget(self.table, 1)
        v.addLayout(bottom)

    def set_ops(self, ops: dict[str, Any] | None) -> None:
        self.coverage.setText(coverage_text(ops))
        self.model.set_ops(ops)
        lv = (ops or {}).get("levels") or {}
        parts = [f"{k}: {100 * c['a']:.0f} % / {100 * c['b']:.0f} %" for k, c in lv.items()]
        self.levels.setText("coverage A / B by level — " + "   ".join(parts) if parts else "")
        self._on_current_changed(self.table.currentIndex(), QModelIndex())

    def current_row(self) -> dict[str, Any] | None:
        return self.model.row_at(self.table.currentIndex().row())

    def _on_current_changed(self, cur: QModelIndex, _prev: QModelIndex) -> None:
        row = self.model.row_at(cur.row()) if cur.isValid() else None
        both = min(row.get("a_count", 0), row.get("b_count", 0)) if row is not None else 0
        self.align_button.setEnabled(both > 0)
        self.instance.setRange(1, max(1, both))

    def _on_align_clicked(self) -> None:
        row = self.current_row()
        if row is not None and self.align_button.isEnabled():
            self.align_requested.emit(row, self.instance.value())


def _ops_table(model: OpsDiffModel, parent: QWidget) -> QTableView:
    t = result_table(model, parent, Qt.TextElideMode.ElideMiddle)
    h = t.horizontalHeader()
    h.setSectionsClickable(True)
    h.setSortIndicatorShown(True)
    h.setSortIndicator(5, Qt.SortOrder.DescendingOrder)
    h.sortIndicatorChanged.connect(model.sort)
    h.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    h.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    return t
