"""Details panel: every field of the selected event, its launching API call, the host
ops enclosing the launch and queue delay (kernels), the work an API call or op
launched, the GPU syncs waiting on it, and every arg the source file has (Kineto:
Input Dims, Input type, Strides, Concrete Inputs, External id..., read in a worker).
Follows ``selection_changed``; double click a linked event to go to it in the
timeline (``Document.reveal``)."""

from __future__ import annotations

import json

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette, QTextOption
from PySide6.QtWidgets import (
    QFrame,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QStackedLayout,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..analysis.links import (
    enclosing_ops,
    op_launches,
    recorded_waits,
    shown_level,
    wait_source,
    wait_targets,
)
from ..analysis.source_args import event_args, source_index
from ..model.trace import Trace
from ..model.view_state import Selection
from ..qt.document import Document
from ..qt.tasks import TaskScope
from .tables.format import fmt_bytes, fmt_dims, fmt_duration, fmt_int, fmt_time

TIME_COLS = {"start", "end", "dispatch_ns"}
DIMS = {"grid": ("grid_x", "grid_y", "grid_z"), "block": ("block_x", "block_y", "block_z")}
HIDDEN = {"api_index", "kernel_index"} | {c for d in DIMS.values() for c in d}
LABELS = {"name": "Name", "device": "Device", "queue": "Queue", "stream": "Stream",
          "pid": "PID", "tid": "Thread", "correlation_id": "Correlation id",
          "dispatch_id": "Dispatch id", "dispatch_ns": "Dispatched", "start": "Start",
          "end": "End", "vgpr": "VGPRs", "accum_vgpr": "AGPRs", "sgpr": "SGPRs",
          "lds_bytes": "LDS", "dyn_lds_bytes": "Dynamic LDS", "scratch_bytes": "Scratch",
          "bytes": "Size", "src_device": "Source device", "dst_device": "Destination device",
          "direction": "Direction", "domain": "Domain", "depth": "Depth",
          "registers": "Registers"}
TITLES = {"kernels": "Kernel", "api": "API call", "copies": "Memory copy", "markers": "Marker"}
MAX_LAUNCHED = 200
ROLE_SELECTION = Qt.ItemDataRole.UserRole + 7


class DetailsView(QWidget):
    """A two-column tree (field, value). Double-click a linked event to go to it.
    ``args_shown`` when the source file's args were looked up for the selection."""

    args_shown = Signal()

    def __init__(self, document: Document, parent=None):
        super().__init__(parent)
        self.document = document
        self._span: int | None = None
        self._tasks: TaskScope | None = None
        self.tree = QTreeWidget(self)
        self.tree.setColumnCount(2)
        self.tree.setHeaderLabels(["Field", "Value"])
        self.tree.setUniformRowHeights(True)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.tree.setRootIsDecorated(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.tree.header().setStretchLastSection(True)
        self.tree.itemDoubleClicked.connect(self._on_tree_item_double_clicked)
        self.empty = QLabel("Select an event in the timeline or a table.", self)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)
        self.empty.setEnabled(False)
        # the whole name, wrapped anywhere (kernel names are long and may have no spaces)
        self.title = QPlainTextEdit(self)
        self.title.setReadOnly(True)
        self.title.setFrameShape(QFrame.Shape.NoFrame)
        self.title.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.title.setBackgroundRole(QPalette.ColorRole.Window)
        self.title.viewport().setAutoFillBackground(False)
        self.title.setFixedHeight(self.fontMetrics().lineSpacing() * 4 + 8)
        page = QWidget(self)
        v = QVBoxLayout(page)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(2)
        v.addWidget(self.title)
        v.addWidget(self.tree)
        self._page = page
        self._stack = QStackedLayout(self)
        self._stack.addWidget(self.empty)
        self._stack.addWidget(page)
        document.selection_changed.connect(self._on_document_selection_changed)
        document.trace_loaded.connect(lambda _t: self.show_selection())
        self.show_selection()

    # ---- building ------------------------------------------------------------------
    def show_selection(self) -> None:
        sel = self.document.view_state.selection
        trace = self.document.trace
        self.tree.clear()
        if trace is None or sel is None or sel.table not in TITLES:
            self._stack.setCurrentWidget(self.empty)
            return
        table = getattr(trace, sel.table)
        if not 0 <= sel.row < len(table):
            self._stack.setCurrentWidget(self.empty)
            return
        tr = trace.time_range()
        t0, self._span = (tr[0], tr[1] - tr[0]) if tr else (0, None)
        row = table.row(sel.row)
        head = self._section(f"{TITLES[sel.table]} #{sel.row}")
        for key, value in self._fields(trace, table, row, t0, sel.row):
            self._add(head, key, value)
        if sel.table in ("kernels", "copies"):
            self._add_launch(trace, row, t0, sel.table)
        if sel.table == "api":
            self._add_ops(trace, sel.row, t0)
            self._add_launched(trace, sel.row, t0)
        if sel.table == "markers":
            self._add_op_launches(trace, sel.row, t0)
        self.tree.expandAll()
        self._look_up_args(trace, sel)
        self.title.setPlainText(str(row.get("name") or row.get("direction") or ""))
        self._stack.setCurrentWidget(self._page)

    def _section(self, title: str) -> QTreeWidgetItem:
        item = QTreeWidgetItem(self.tree, [title, ""])
        f = item.font(0)
        f.setBold(True)
        item.setFont(0, f)
        item.setFirstColumnSpanned(True)
        return item

    def _add(self, parent: QTreeWidgetItem, key: str, value: str,
             target: Selection | None = None) -> QTreeWidgetItem:
        item = QTreeWidgetItem(parent, [key, value])
        item.setToolTip(1, value)
        if target is not None:
            item.setData(0, ROLE_SELECTION, target)
            item.setToolTip(0, "double-click to select")
        return item

    def _fields(self, trace: Trace, table, row: dict, t0: int, index: int):
        span = self._span
        for col in table.spec.columns:
            k = col.name
            v = row.get(k)
            if k in HIDDEN or v is None:
                continue
            label = LABELS.get(k, k.replace("_", " ").capitalize())
            if k == "depth" and table.spec.name == "markers":
                label, text = "Row", _level_text(shown_level(trace, index), v)
            elif k in TIME_COLS:
                text = fmt_time(v - t0, span)
            elif k.endswith("bytes"):
                text = f"{fmt_bytes(v)} ({v:,} B)" if v >= 1024 else fmt_bytes(v)
            elif k in ("device", "src_device", "dst_device"):
                text = f"GPU {v}: {trace.device_name(int(v))}"
            elif isinstance(v, int) and k not in ("pid", "tid", "correlation_id"):
                text = fmt_int(v)
            else:
                text = str(v)
            yield label, text
            if k == "end" and row.get("start") is not None:
                yield "Duration", fmt_duration(v - row["start"])
        for key, cols in DIMS.items():
            if any(row.get(c) is not None for c in cols):
                yield key.capitalize(), fmt_dims(*(row.get(c) for c in cols))

    def _add_launch(self, trace: Trace, row: dict, t0: int, table: str) -> None:
        ai = row.get("api_index")
        if ai is None or not 0 <= ai < len(trace.api):
            if table == "kernels" and row.get("dispatch_ns") is not None:
                sec = self._section("Queue delay")
                self._add(sec, "From host dispatch", fmt_duration(row["start"] - row["dispatch_ns"]))
            return
        api = trace.api.row(ai)
        sec = self._section("Launched by")
        self._add(sec, "Call", str(api["name"]), Selection("api", int(ai)))
        if api.get("tid") is not None:
            self._add(sec, "Thread", str(api["tid"]))
        self._add(sec, "Start", fmt_time(api["start"] - t0, self._span))
        self._add(sec, "End", fmt_time(api["end"] - t0, self._span))
        self._add(sec, "Duration", fmt_duration(api["end"] - api["start"]))
        self._add_ops(trace, int(ai), t0)
        if table == "kernels":
            sec = self._section("Queue delay")
            self._add(sec, "From API start", fmt_duration(row["start"] - api["start"]))
            self._add(sec, "From API end", fmt_duration(row["start"] - api["end"]))
            if row.get("dispatch_ns") is not None:
                self._add(sec, "From host dispatch",
                          fmt_duration(row["start"] - row["dispatch_ns"]))

    def _add_launched(self, trace: Trace, api_row: int, t0: int) -> None:
        for name, table in (("kernels", trace.kernels), ("copies", trace.copies)):
            if not table.has("api_index"):
                continue
            hits = np.flatnonzero(table.numpy("api_index", fill=-1) == api_row)
            if len(hits) == 0:
                continue
            sec = self._section(f"Launched {name} ({len(hits)})")
            label_col = "name" if name == "kernels" else "direction"
            starts = table.numpy("start")
            for r in hits[:MAX_LAUNCHED]:
                label = table.column(label_col)[int(r)].as_py() or ""
                self._add(sec, f"#{int(r)}", f"{label}  @ {fmt_time(starts[r] - t0, self._span)}",
                          Selection(name, int(r)))
            if len(hits) > MAX_LAUNCHED:
                self._add(sec, "…", f"{len(hits) - MAX_LAUNCHED} more")

    def _add_ops(self, trace: Trace, api_row: int, t0: int) -> None:
        """The host ops (and annotations) enclosing an API call, outermost first."""
        ops = enclosing_ops(trace, api_row)
        if not ops:
            return
        sec = self._section(f"Enclosing ops ({len(ops)})")
        m = trace.markers
        for r in ops:
            row = m.row(r)
            self._add(sec, str(row.get("domain") or "op"),
                      f"{row['name']}  ({fmt_duration(row['end'] - row['start'])})",
                      Selection("markers", r))

    def _add_op_launches(self, trace: Trace, marker_row: int, t0: int) -> None:
        """The kernels and copies launched from inside a host op."""
        hits = op_launches(trace, marker_row)
        if not hits:
            return
        sec = self._section(f"Launched from this op ({len(hits)})")
        for name, r in hits:
            t = getattr(trace, name)
            label = t.column("name" if name == "kernels" else "direction")[r].as_py() or ""
            start = int(t.numpy("start")[r])
            self._add(sec, f"{TITLES[name]} #{r}",
                      f"{label}  @ {fmt_time(start - t0, self._span)}", Selection(name, r))

    def _look_up_args(self, trace: Trace, sel: Selection) -> None:
        """Every arg the source file has for the selection, in a worker (Kineto); the
        cross-stream waits the markers table holds (rocpd HIP event records) at once."""
        if trace.format != "kineto":
            waits = [("Waited on by", Selection(t, r)) if (a, b) == (sel.table, sel.row)
                     else ("Waits for", Selection(a, b))
                     for a, b, t, r in recorded_waits(trace, sel.table, sel.row)]
            if waits:
                self._show_args((sel, None, waits))
            return
        if self._tasks is None:
            self._tasks = self.document.scope("details")

        def job(progress=None, cancelled=None):
            idx = source_index(trace)
            waits = [("Waited on by", Selection("markers", r))
                     for r in wait_targets(trace, idx, sel.table, sel.row)]
            src = wait_source(trace, idx, sel.row) if sel.table == "markers" else None
            if src is not None:
                waits.append(("Waits for", Selection(*src)))
            return sel, event_args(trace, idx, sel.table, sel.row), waits

        self._tasks.submit("args", job).succeeded.connect(self._show_args)

    def _show_args(self, result) -> None:
        sel, args, waits = result
        trace = self.document.trace
        if sel != self.document.view_state.selection or trace is None:
            return                                   # a late answer for an old selection
        if waits:
            sec = self._section("Cross-stream waits")
            for label, target in waits:
                t = getattr(trace, target.table)
                name = t.column("name" if t.has("name") else "direction")[target.row].as_py()
                self._add(sec, label, f"{TITLES[target.table]} #{target.row}: {name}", target)
            sec.setExpanded(True)
        if args:
            sec = self._section(f"From the file ({len(args)} args)")
            for k, v in args.items():
                text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                self._add(sec, str(k), text)
            sec.setExpanded(True)
        self.args_shown.emit()

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        if self._tasks is not None:
            self._tasks.shutdown()
        super().closeEvent(event)

    # ---- events ------------------------------------------------------------------------
    def _on_document_selection_changed(self, _sel) -> None:
        self.show_selection()

    def _on_tree_item_double_clicked(self, item: QTreeWidgetItem, _col: int) -> None:
        target = item.data(0, ROLE_SELECTION)
        if isinstance(target, Selection):
            self.document.reveal(target)


def _level_text(level: int, depth: int) -> str:
    """The row a marker is drawn on, as the timeline labels it (L0 is the top row)."""
    text = "top row (L0)" if level == 0 else f"L{level}"
    return text if level == depth else f"{text}; depth {depth} in the file"
