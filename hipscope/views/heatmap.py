"""Counter heatmap: kernels x hardware counters, and counters along time.

The top panel is the kernels x counters matrix (:mod:`hipscope.analysis.counters`)
painted as one image (one pixel per cell, scaled), with kernel names on the left and
counter names on top. Click a counter name to sort the rows by it (again: reverse),
click a cell or a kernel name to select that kernel (the timeline jumps there), hover
for the raw value, its unit and, for derived metrics, the formula. The bottom panel
lays the same counters along the timeline's window, per device, and follows
``document.view_changed``. The matrix and the clustering run in a worker.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ..analysis import counters as ca
from ..analysis.context import analyses_of
from ..model.view_state import Selection
from .heatmap_canvas import (
    EMPTY_RGB,
    NAN_RGB,
    ColourLegend,
    HeatmapCanvas,
    TimeCanvas,
    colour_lut,
    scaled_for_colour,
    to_image,
)
from .panel import Document, WorkerPanel

__all__ = ["EMPTY_RGB", "EMPTY_TEXT", "NAN_RGB", "NORMS", "ColourLegend", "CounterHeatmapView",
           "HeatmapCanvas", "TimeCanvas", "colour_lut", "scaled_for_colour", "to_image"]

EMPTY_TEXT = ("This trace has no hardware counters. Collect some with rocprofv3 --pmc ... "
              "(e.g. rocprofv3 --pmc SQ_WAVES SQ_INSTS_VALU TCC_HIT_sum TCC_MISS_sum -- app), "
              "rocprof-compute profile, or ncu --csv.")
NORMS = (("minmax", "min–max per counter"), ("zscore", "z-score per counter"),
         ("peak", "% of peak"))
TIME_MAX_COUNTERS = 48


class CounterHeatmapView(WorkerPanel):
    """Kernels x counters heatmap plus a time-resolved panel; follows a Document."""

    matrix_ready = Signal()      # a new matrix is shown (tests wait on it)
    time_updated = Signal()

    def __init__(self, document: Document, parent: QWidget | None = None):
        super().__init__(document, parent)
        self.dispatch_matrix: ca.CounterMatrix | None = None
        self.matrix: ca.CounterMatrix | None = None      # shown: selected columns, ordered
        self.order = np.zeros(0, np.int64)
        self._build()
        document.selection_changed.connect(self._on_document_selection_changed)
        self._follow_document()

    # ---- layout ---------------------------------------------------------------------
    def _build(self) -> None:
        bar = self._build_controls()
        top, bottom = self._build_panes()
        split = QSplitter(Qt.Orientation.Horizontal)   # side by side: a wide, short dock
        split.addWidget(top)
        split.addWidget(bottom)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        content = QWidget()
        cl = QVBoxLayout(content)
        cl.setContentsMargins(0, 0, 0, 0)
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.status.setMinimumWidth(40)   # it may shrink: a narrow dock stays possible
        row = QHBoxLayout()             # one row of options: the matrix keeps the height
        row.addLayout(bar, 3)
        for w, stretch in ((self.instances_box, 0), (self.constant_box, 0), (self.status, 1)):
            row.addWidget(w, stretch)
        cl.addLayout(row)
        cl.addWidget(split, 1)
        self._set_pages(EMPTY_TEXT, content)
        self._connect_controls()

    def _build_controls(self) -> QHBoxLayout:
        """The scale, rows and filter controls (the bar above the matrix)."""
        self.norm_combo = QComboBox()
        for key, text in NORMS:
            self.norm_combo.addItem(text, key)
        self.per_combo = QComboBox()
        self.per_combo.addItem("per dispatch", "dispatch")
        self.per_combo.addItem("per kernel (mean)", "kernel")
        self.filter_edit = QLineEdit(placeholderText="filter counters (regex)")
        self.filter_edit.setMinimumWidth(60)
        self.instances_box = QCheckBox("per instance")
        self.instances_box.setToolTip("Show per-instance counters (one column per SE, XCD, ...)")
        self.constant_box = QCheckBox("hide constant")
        self.constant_box.setChecked(True)
        self.cluster_button = QPushButton("Cluster rows")
        self.status = QLabel()
        bar = QHBoxLayout()
        for combo in (self.norm_combo, self.per_combo):     # narrow docks stay possible
            combo.setToolTip("Colour scale" if combo is self.norm_combo else "Rows")
            combo.setSizeAdjustPolicy(
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(6)
        for w in (self.norm_combo, self.per_combo, self.filter_edit, self.cluster_button):
            bar.addWidget(w)
        return bar

    def _build_panes(self) -> tuple[QWidget, QWidget]:
        """The matrix (left) and the counters along time (right)."""
        self.legend = ColourLegend()
        self.canvas = HeatmapCanvas()
        self.canvas.tooltip_fn = self._tooltip
        self.scroll = QScrollArea()
        self.scroll.setWidget(self.canvas)
        self.scroll.setWidgetResizable(False)
        self.device_combo = QComboBox()
        self.device_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.time_canvas = TimeCanvas()
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.scroll, 1)
        bottom = QWidget()
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        brow = QHBoxLayout()
        self.time_label = QLabel("Along the visible window, device:")
        self.time_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        brow.addWidget(self.time_label)
        brow.addWidget(self.device_combo)
        brow.addStretch(1)
        brow.addWidget(self.legend)       # one colour scale for both panes
        bl.addLayout(brow)
        bl.addWidget(self.time_canvas, 1)
        return top, bottom

    def _connect_controls(self) -> None:
        self.norm_combo.currentIndexChanged.connect(self._on_controls_changed)
        self.per_combo.currentIndexChanged.connect(self._on_controls_changed)
        self.filter_edit.editingFinished.connect(self._on_controls_changed)
        self.instances_box.toggled.connect(self._on_controls_changed)
        self.constant_box.toggled.connect(self._on_controls_changed)
        self.cluster_button.clicked.connect(self.cluster_rows)
        self.canvas.header_clicked.connect(self.sort_by_column)
        self.canvas.cell_clicked.connect(self._on_canvas_cell_clicked)
        self.device_combo.currentIndexChanged.connect(lambda _i: self._update_time())

    # ---- data ---------------------------------------------------------------------------
    def _on_document_trace_loaded(self, trace) -> None:
        self.dispatch_matrix = self.matrix = None
        if trace is None or len(trace.counters) == 0:
            self.stack.setCurrentIndex(0)
            self.matrix_ready.emit()
            return
        self.stack.setCurrentIndex(1)
        self.status.setText(f"Pivoting {len(trace.counters):,} counter values…")
        h = self.tasks.submit("matrix", lambda progress, cancelled: analyses_of(
            trace).counter_matrix(cancelled=cancelled))
        h.succeeded.connect(lambda m, trace=trace: self._on_matrix(trace, m))
        h.failed.connect(self.status.setText)

    def _on_matrix(self, trace, m: ca.CounterMatrix) -> None:
        if trace is not self.document.trace:
            return
        self.dispatch_matrix = m
        self.device_combo.blockSignals(True)
        self.device_combo.clear()
        for d in np.unique(m.devices).tolist():
            self.device_combo.addItem(trace.device_name(d), d)
        self.device_combo.blockSignals(False)
        self._rebuild()

    def _on_controls_changed(self, *_args) -> None:
        if self.dispatch_matrix is not None:
            self._rebuild()

    def _rebuild(self) -> None:
        base = self.dispatch_matrix
        if self.per_combo.currentData() == "kernel":
            base = ca.aggregate_by_kernel(base)
        self.matrix = ca.select_columns(base, self.filter_edit.text().strip(),
                                        drop_constant=self.constant_box.isChecked(),
                                        instances=self.instances_box.isChecked())
        self.order = np.arange(self.matrix.shape[0])
        self.canvas.sort_col = None
        self._paint_matrix()
        self._update_time()
        self.matrix_ready.emit()

    def _norm(self) -> str:
        return self.norm_combo.currentData()

    def _paint_matrix(self) -> None:
        m = self.matrix
        method = self._norm()
        lut = colour_lut("diverging" if method == "zscore" else "sequential")
        if m is None or m.shape[1] == 0:
            self.canvas.set_data(None, [], [])
            self.status.setText("No counter matches the filter." if m is not None else "")
            return
        pos = scaled_for_colour(ca.normalise(m, method), method)[self.order]
        labels = self._row_labels(m)
        self.canvas.split_col = sum(c.derived for c in m.columns)
        self.canvas.set_data(to_image(pos, lut), labels, m.column_names())
        lo, hi, title = {"minmax": ("column min", "column max", "scaled per counter"),
                         "zscore": ("−3 σ", "+3 σ", "z-score per counter"),
                         "peak": ("0 %", "100 % of peak", "grey: peak unknown")}[method]
        self.legend.set_scale(lut, lo, hi, title)
        nd = sum(c.derived for c in m.columns)
        self.status.setText(f"{m.shape[0]:,} {'dispatches' if m.per == 'dispatch' else 'kernels'}"
                            f" × {m.shape[1]:,} counters ({nd} derived)")
        self._on_document_selection_changed(self.document.view_state.selection)

    def _row_labels(self, m: ca.CounterMatrix) -> list[str]:
        if m.per == "kernel":
            return [f"{m.row_labels[i]}  (×{m.counts[i]})" for i in self.order]
        k = self.document.trace.kernels
        did = k.numpy("dispatch_id", fill=-1) if k.has("dispatch_id") else None
        out = []
        for i in self.order:
            kr = int(m.kernel_rows[i])
            tag = f"dispatch {int(did[kr])}" if did is not None and did[kr] >= 0 else f"row {kr}"
            out.append(f"{m.row_labels[i]}  {tag}")
        return out

    # ---- actions ----------------------------------------------------------------------
    def sort_by_column(self, col: int) -> None:
        if self.matrix is None or not 0 <= col < self.matrix.shape[1]:
            return
        desc = not (self.canvas.sort_col == col and self.canvas.sort_desc)
        self.order = ca.order_by_column(self.matrix, col, descending=desc)
        self.canvas.sort_col, self.canvas.sort_desc = col, desc
        self._paint_matrix()

    def cluster_rows(self) -> None:
        """Order rows by average-linkage clustering (in a worker)."""
        m = self.matrix
        if m is None or m.shape[1] == 0:
            return
        values = m.values
        self.status.setText("Clustering rows…")
        h = self.tasks.submit("cluster", lambda progress, cancelled: ca.cluster_order(
            values, cancelled=cancelled))
        h.succeeded.connect(lambda order, m=m: self._on_cluster_order(m, order))
        h.failed.connect(self.status.setText)

    def _on_cluster_order(self, m, order) -> None:
        if m is not self.matrix:
            return
        self.order = np.asarray(order, np.int64)
        self.canvas.sort_col = None
        self._paint_matrix()
        self.matrix_ready.emit()

    def _on_canvas_cell_clicked(self, row: int, col: int) -> None:
        if self.matrix is None or not 0 <= row < len(self.order):
            return
        kr = int(self.matrix.kernel_rows[self.order[row]])
        if kr >= 0:
            self.document.view_state.select(Selection("kernels", kr))

    def _tooltip(self, row: int, col: int) -> str:
        m = self.matrix
        if m is None:
            return ""
        if row == -1:
            c = m.columns[col]
            extra = f"<br>= {c.formula}<br><i>{c.source}</i>" if c.derived else ""
            return f"<b>{c.name}</b>{' [' + c.unit + ']' if c.unit else ''}{extra}" \
                   "<br>click: sort rows by this counter"
        r = int(self.order[row])
        if col == -1:
            return f"{m.row_labels[r]}<br>{m.counts[r]} dispatch(es); click to select"
        info = ca.cell_info(m, r, col)
        lines = [f"<b>{info['counter']}</b>: {ca.format_value(info['value'], info['unit'])}",
                 info["kernel"] if len(info["kernel"]) < 120 else info["kernel"][:117] + "…"]
        if m.per == "kernel":
            lines.append(f"mean of {info['dispatches']} dispatch(es)")
        if info["pct_of_peak"] is not None:
            lines.append(f"{info['pct_of_peak']:.1f} % of peak "
                         f"({ca.format_value(info['peak'], info['unit'])})")
        if info["formula"]:
            lines.append(f"= {info['formula']}<br><i>{info['source']}</i>")
        return "<br>".join(lines)

    # ---- selection ----------------------------------------------------------------------
    def _on_document_selection_changed(self, sel) -> None:
        m = self.matrix
        self.canvas.highlight = set()
        if m is not None and sel is not None and sel.table == "kernels":
            if m.per == "dispatch":
                hits = np.flatnonzero(m.kernel_rows[self.order] == sel.row)
            else:
                tr = self.document.trace
                codes, names = tr.kernels.codes("name")
                name = names[codes[sel.row]] if 0 <= sel.row < len(codes) else None
                labels = np.array(m.row_labels, dtype=object)[self.order]
                hits = np.flatnonzero(labels == name)
            self.canvas.highlight = set(hits.tolist())
            if len(hits):
                y = self.canvas.header_h + int(hits[0]) * HeatmapCanvas.CELL_H
                self.scroll.ensureVisible(HeatmapCanvas.LABEL_W // 2, y, 10, 40)
        self.canvas.update()

    # ---- time-resolved panel ---------------------------------------------------------------
    def _on_document_view_changed(self, _window) -> None:
        self._update_time()

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._update_time()

    def _update_time(self) -> None:
        if self.dispatch_matrix is None or self.matrix is None or self.matrix.shape[1] == 0:
            self.time_canvas.set_data(None, [], ("", ""))
            return
        limit = min(TIME_MAX_COUNTERS, self.time_canvas.fitting_rows())
        names = set(self.matrix.column_names()[:limit])
        self.time_label.setText(
            f"Along the visible window (first {min(limit, self.matrix.shape[1])} of "
            f"{self.matrix.shape[1]} counters, dispatch values scaled per counter), device:")
        dm = self.dispatch_matrix
        cols = [i for i, c in enumerate(dm.columns) if c.name in names]
        m = dm.take_columns(cols)
        t0, t1 = self.document.view_state.window
        method = self._norm()
        grid = ca.counter_time_grid(m, t0, t1, self.time_canvas.bins(), method)
        dev = self.device_combo.currentData()
        g = grid.grid.get(dev if dev is not None else next(iter(grid.grid), -1))
        if g is None or not np.isfinite(g).any():
            self.time_canvas.set_data(None, [], ("", ""))
        else:
            lut = colour_lut("diverging" if method == "zscore" else "sequential")
            base = self.document.full_range()[0]
            from .tables.format import fmt_time

            span = t1 - t0
            self.time_canvas.set_data(to_image(scaled_for_colour(g, method), lut, EMPTY_RGB),
                                      m.column_names(), (fmt_time(t0 - base, span),
                                                         fmt_time(t1 - base, span)))
        self.time_updated.emit()
