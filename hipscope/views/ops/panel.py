"""The Ops panel: which op and module launched the GPU work (issue 17).

A tree nn.Module -> launching op -> kernels (names as the timeline shows them) with
count, CPU time, GPU time, kernels per call and kernel classes, sorted by GPU time
(click a header to sort otherwise); a line with the GPU time no op launched; for a
trace without ops, the reason. Selecting a row makes its op ranges (host lane) and
its kernels (GPU rows) stand out in the timeline (``Document.highlight``: find's
dimming); double-click zooms to its first call. All of it is computed in the
document's job runner (:mod:`.data`).
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QKeySequence, QPalette, QShortcut, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from ...model.units import fmt_duration
from ...qt.document import Document
from ..panel import WorkerPanel
from . import data as od

COLUMNS = ("Name", "Count", "CPU time", "GPU time", "Kernels/call", "Classes")
NAME, COUNT, CPU, GPU, KPC, CLASSES = range(len(COLUMNS))
NODE_ROLE = Qt.ItemDataRole.UserRole + 1
SORT_ROLE = Qt.ItemDataRole.UserRole + 2
KIND_TEXT = {od.MODULE: "nn.Module", od.OP: "launching op", od.KERNEL: "kernel"}
LOADING_TEXT = "Attributing the kernels to the ops that launched them…"
HINT = ("Select a row: its op ranges and kernels stand out in the timeline (Esc: none); "
        "double-click: zoom to its first call; F3 in the timeline: the next of them.")
_RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter


def classes_text(classes: dict[str, int], total: int) -> str:
    """'GEMM 86 %, attention 14 %' (the two largest; '< 1 %' for a sliver)."""
    top = sorted(classes.items(), key=lambda kv: -kv[1])[:2]
    share = [(c, 100 * v / max(total, 1)) for c, v in top]
    return ", ".join(f"{c} {p:.0f} %" if p >= 0.5 or p == 0 else f"{c} < 1 %"
                     for c, p in share)


def unattributed_text(d: od.OpsData) -> str:
    """'Unattributed: 12.3 µs of the GPU time (0.8 %): ...'."""
    share = d.unattributed_ns / d.gpu_ns if d.gpu_ns else 0.0
    return (f"<b>Unattributed:</b> {fmt_duration(d.unattributed_ns)} of the GPU time "
            f"{fmt_duration(d.gpu_ns)} ({100 * share:.1f} %): {d.no_call[0]:,} kernels/copies "
            f"without a recorded launch call, {d.no_op[0]:,} launched outside every op.")


def _cells(node: od.OpsNode) -> list[tuple[str, float]]:
    """(text, sort value) per column."""
    kpc = node.kernels_per_call
    return [
        (node.name, 0.0),
        (f"{node.count:,}", float(node.count)),
        (fmt_duration(node.cpu_ns) if node.cpu_ns is not None else "", float(node.cpu_ns or 0)),
        (fmt_duration(node.gpu_ns), float(node.gpu_ns)),
        (f"{kpc:.2f}" if kpc is not None else "", kpc or 0.0),
        (classes_text(node.classes, node.gpu_ns), 0.0),
    ]


def _row(node: od.OpsNode) -> list[QStandardItem]:
    items = []
    for col, (text, key) in enumerate(_cells(node)):
        it = QStandardItem(text)
        it.setEditable(False)
        it.setData(node.name.lower() if col == NAME else text if col == CLASSES else key,
                   SORT_ROLE)
        if col not in (NAME, CLASSES):
            it.setTextAlignment(_RIGHT)
        items.append(it)
    items[NAME].setData(node, NODE_ROLE)
    items[NAME].setToolTip(f"{KIND_TEXT[node.kind]}: {node.full}")
    for child in node.children:
        items[NAME].appendRow(_row(child))
    return items


class OpsPanel(WorkerPanel):
    """The Ops tree of a Document's trace (see module docstring)."""

    data_ready = Signal()          # the tree (or the reason) is shown
    highlighted = Signal(object)   # the OpsHighlight sent to the timeline (None: cleared)

    def __init__(self, document: Document, parent: QWidget | None = None):
        super().__init__(document, parent)
        self.data: od.OpsData | None = None
        self.last_highlight: od.OpsHighlight | None = None
        self._build()
        self._follow_document()

    def _build(self) -> None:
        self.summary = QLabel()
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setWordWrap(True)
        self.model = QStandardItemModel(0, len(COLUMNS), self)
        self.model.setHorizontalHeaderLabels(list(COLUMNS))
        self.model.setSortRole(SORT_ROLE)
        self.tree = QTreeView()
        self.tree.setModel(self.model)
        self.tree.setSortingEnabled(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        hh = self.tree.header()
        hh.setStretchLastSection(False)
        hh.setSectionResizeMode(NAME, QHeaderView.ResizeMode.Stretch)
        for c in range(1, len(COLUMNS)):
            hh.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        self.tree.selectionModel().selectionChanged.connect(self._on_selection_changed)
        clear = QShortcut(QKeySequence(Qt.Key.Key_Escape), self.tree, self.tree.clearSelection)
        clear.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.tree.doubleClicked.connect(self._on_double_clicked)
        hint = QLabel(HINT)
        hint.setForegroundRole(QPalette.ColorRole.PlaceholderText)   # muted, follows the theme
        content = QWidget()
        lay = QVBoxLayout(content)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.summary)
        lay.addWidget(self.tree, 1)
        lay.addWidget(hint)
        self._set_pages(LOADING_TEXT, content)

    # ---- data ------------------------------------------------------------------------
    def _on_document_trace_loaded(self, trace) -> None:
        self.data = None
        self.stack.setCurrentIndex(0)
        self.empty.setText(LOADING_TEXT)
        h = self.tasks.submit("build", lambda progress, cancelled: od.build(trace, cancelled))
        h.succeeded.connect(lambda d, trace=trace: self._on_built(trace, d))
        h.failed.connect(self.empty.setText)

    def _on_document_view_changed(self, window) -> None:
        pass                                  # the tree is over the whole trace

    def _on_built(self, trace, d: od.OpsData) -> None:
        if trace is not self.document.trace:
            return
        self.data = d
        self.model.removeRows(0, self.model.rowCount())
        if d.reason:
            self.empty.setText(d.reason)
            self.stack.setCurrentIndex(0)
            self.data_ready.emit()
            return
        for node in d.roots:
            self.model.appendRow(_row(node))
        self.tree.sortByColumn(GPU, Qt.SortOrder.DescendingOrder)
        self.tree.expandToDepth(0)
        self.summary.setText(unattributed_text(d))
        self.stack.setCurrentIndex(1)
        self.data_ready.emit()

    # ---- selection -> timeline -------------------------------------------------------
    def node_at(self, index: QModelIndex) -> od.OpsNode | None:
        if not index.isValid():
            return None
        return index.siblingAtColumn(NAME).data(NODE_ROLE)

    def _on_selection_changed(self, *_args) -> None:
        rows = self.tree.selectionModel().selectedRows(NAME)
        self._highlight(self.node_at(rows[0]) if rows else None, zoom=False)

    def _on_double_clicked(self, index: QModelIndex) -> None:
        self._highlight(self.node_at(index), zoom=True)

    def _highlight(self, node: od.OpsNode | None, zoom: bool) -> None:
        trace, d = self.document.trace, self.data
        if node is None or trace is None or d is None:
            self._apply(None, False)
            return
        h = self.tasks.submit("highlight", lambda progress, cancelled: od.highlight(
            trace, d, node))
        h.succeeded.connect(lambda hl, d=d: self._on_highlight_ready(d, hl, zoom))

    def _on_highlight_ready(self, d: od.OpsData, hl: od.OpsHighlight, zoom: bool) -> None:
        if d is self.data:                    # not for a trace loaded since
            self._apply(hl, zoom)

    def _apply(self, hl: od.OpsHighlight | None, zoom: bool) -> None:
        self.last_highlight = hl
        self.document.highlight(hl)
        if zoom and hl is not None and hl.first is not None:
            s, e = hl.first
            pad = max((e - s) // 20, 1)
            self.document.view_state.set_window(s - pad, e + pad)
        self.highlighted.emit(hl)

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        if self.last_highlight is not None:
            self.document.highlight(None)
        super().closeEvent(event)
