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
from PySide6.QtCore import QPoint, QRect, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QImage, QLinearGradient, QPainter, QPen
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
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from ..analysis import counters as ca
from ..analysis.context import analyses_of
from ..model.view_state import Selection
from .panel import WorkerPanel

EMPTY_TEXT = ("This trace has no hardware counters. Collect some with rocprofv3 --pmc ... "
              "(e.g. rocprofv3 --pmc SQ_WAVES SQ_INSTS_VALU TCC_HIT_sum TCC_MISS_sum -- app), "
              "rocprof-compute profile, or ncu --csv.")
NORMS = (("minmax", "min–max per counter"), ("zscore", "z-score per counter"),
         ("peak", "% of peak"))
NAN_RGB = (58, 58, 64)        # a value that was not collected
EMPTY_RGB = (232, 232, 232)   # a time bin without any dispatch
TIME_MAX_COUNTERS = 48


def _lut(kind: str) -> np.ndarray:
    """256 x 3 uint8: viridis-like (sequential) or blue-white-red (diverging)."""
    if kind == "diverging":
        stops = np.array([[59, 76, 192], [221, 221, 221], [180, 4, 38]], float)
        pos = np.array([0.0, 0.5, 1.0])
    else:
        stops = np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98],
                          [253, 231, 37]], float)
        pos = np.linspace(0, 1, len(stops))
    x = np.linspace(0, 1, 256)
    return np.stack([np.interp(x, pos, stops[:, i]) for i in range(3)], axis=1).astype(np.uint8)


def scaled_for_colour(norm: np.ndarray, method: str) -> np.ndarray:
    """Normalised values -> [0, 1] colour positions (NaN stays NaN)."""
    if method == "zscore":
        return np.clip((norm + 3.0) / 6.0, 0, 1)
    return np.clip(norm, 0, 1)


def to_image(pos: np.ndarray, lut: np.ndarray, nan_rgb: tuple = NAN_RGB) -> QImage:
    """A QImage (one pixel per cell) from colour positions; keeps its buffer alive."""
    h, w = pos.shape
    rgba = np.empty((h, w, 4), np.uint8)
    fin = np.isfinite(pos)
    idx = np.where(fin, np.round(np.nan_to_num(pos) * 255), 0).astype(np.int64)
    rgba[..., :3] = np.where(fin[..., None], lut[idx], np.array(nan_rgb, np.uint8))
    rgba[..., 3] = 255
    buf = np.ascontiguousarray(rgba)
    img = QImage(buf.data, w, h, 4 * w, QImage.Format.Format_RGBA8888)
    img._buf = buf  # noqa: SLF001 - QImage does not own numpy memory
    return img


class HeatmapCanvas(QWidget):
    """Paints a matrix image with row labels and rotated column headers."""

    cell_clicked = Signal(int, int)      # row, col (col -1: the row label)
    header_clicked = Signal(int)

    CELL_W, CELL_H, LABEL_W, HEADER_H = 16, 16, 300, 170    # HEADER_H: the default
    MAX_HEADER_H = 340

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setMouseTracking(True)
        self.image: QImage | None = None
        self.rows: list[str] = []
        self.cols: list[str] = []
        self.tooltip_fn = None
        self.sort_col: int | None = None
        self.sort_desc = True
        self.highlight: set[int] = set()
        self.split_col = 0          # columns before this one are derived metrics
        self.header_h = self.HEADER_H   # fits the longest counter name, up to a limit
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)

    def set_data(self, image: QImage | None, rows: list[str], cols: list[str]) -> None:
        self.image, self.rows, self.cols = image, rows, cols
        fm = QFontMetrics(self.font())
        longest = max((fm.horizontalAdvance(c) for c in cols), default=0) + 28
        self.header_h = int(np.clip(longest, 60, self.MAX_HEADER_H))
        w = self.LABEL_W + max(1, len(cols)) * self.CELL_W + 8
        h = self.header_h + max(1, len(rows)) * self.CELL_H + 8
        self.setFixedSize(w, h)
        self.update()

    def cell_at(self, p: QPoint) -> tuple[int, int] | None:
        x, y = p.x() - self.LABEL_W, p.y() - self.header_h
        if y < 0:
            c = x // self.CELL_W
            return (-1, int(c)) if 0 <= x and c < len(self.cols) else None
        r = y // self.CELL_H
        if r >= len(self.rows):
            return None
        if x < 0:
            return int(r), -1
        c = x // self.CELL_W
        return (int(r), int(c)) if c < len(self.cols) else None

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt name)
        p = QPainter(self)
        pal = self.palette()
        p.fillRect(event.rect(), pal.window())
        if self.image is None:
            return
        cw, ch, lw, hh = self.CELL_W, self.CELL_H, self.LABEL_W, self.header_h
        target = QRect(lw, hh, len(self.cols) * cw, len(self.rows) * ch)
        p.drawImage(target, self.image)
        fm = QFontMetrics(self.font())
        p.setPen(pal.windowText().color())
        r0 = max(0, (event.rect().top() - hh) // ch)
        r1 = min(len(self.rows), (event.rect().bottom() - hh) // ch + 1)
        for r in range(r0, r1):          # visible labels only (bounded by the viewport)
            text = fm.elidedText(self.rows[r], Qt.TextElideMode.ElideMiddle, lw - 8)
            p.drawText(QRect(2, hh + r * ch, lw - 6, ch),
                       Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, text)
        c0 = max(0, (event.rect().left() - lw) // cw)
        c1 = min(len(self.cols), (event.rect().right() - lw) // cw + 1)
        p.save()
        p.rotate(-90)
        for c in range(c0, c1):
            name = self.cols[c]
            if c == self.sort_col:
                name = ("▼ " if self.sort_desc else "▲ ") + name
            text = fm.elidedText(name, Qt.TextElideMode.ElideMiddle, hh - 8)
            p.drawText(QRect(-hh + 4, lw + c * cw, hh - 8, cw),
                       Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, text)
        p.restore()
        if 0 < self.split_col < len(self.cols):
            p.setPen(QPen(pal.windowText().color(), 2))
            x = lw + self.split_col * cw
            p.drawLine(x, 4, x, hh + len(self.rows) * ch)
        if self.highlight:
            p.setPen(QPen(QColor(255, 80, 40), 2))
            p.setBrush(Qt.BrushStyle.NoBrush)
            for r in sorted(self.highlight):
                if r0 <= r < r1:
                    p.drawRect(QRect(1, hh + r * ch, lw + len(self.cols) * cw, ch - 1))

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        hit = self.cell_at(event.position().toPoint())
        if hit is None or self.tooltip_fn is None:
            QToolTip.hideText()
            return
        QToolTip.showText(event.globalPosition().toPoint(), self.tooltip_fn(*hit), self)

    def mousePressEvent(self, event) -> None:  # noqa: N802
        if event.button() != Qt.MouseButton.LeftButton:
            return
        hit = self.cell_at(event.position().toPoint())
        if hit is None:
            return
        if hit[0] == -1:
            self.header_clicked.emit(hit[1])
        else:
            self.cell_clicked.emit(*hit)


class ColourLegend(QWidget):
    """A horizontal colour bar with its two end labels."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.lut = _lut("sequential")
        self.lo, self.hi, self.title = "", "", ""
        self.setFixedHeight(34)
        self.setMinimumWidth(160)
        self.setMaximumWidth(480)

    def set_scale(self, lut: np.ndarray, lo: str, hi: str, title: str) -> None:
        self.lut, self.lo, self.hi, self.title = lut, lo, hi, title
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        w = self.width()
        bar = QRectF(4, 2, w - 8, 14)
        g = QLinearGradient(bar.topLeft(), bar.topRight())
        for i in range(0, 256, 32):
            g.setColorAt(i / 255, QColor(*self.lut[i].tolist()))
        g.setColorAt(1.0, QColor(*self.lut[255].tolist()))
        p.fillRect(bar, g)
        p.setPen(self.palette().windowText().color())
        r = QRect(4, 17, w - 8, 16)
        fm = QFontMetrics(self.font())
        side = max(fm.horizontalAdvance(self.lo), fm.horizontalAdvance(self.hi)) + 8
        p.drawText(r, Qt.AlignmentFlag.AlignLeft, self.lo)
        p.drawText(r.adjusted(side, 0, -side, 0), Qt.AlignmentFlag.AlignHCenter,
                   fm.elidedText(self.title, Qt.TextElideMode.ElideRight, r.width() - 2 * side))
        p.drawText(r, Qt.AlignmentFlag.AlignRight, self.hi)


class TimeCanvas(QWidget):
    """Counters (rows) along time bins (columns) for one device."""

    LABEL_W = 300

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.image: QImage | None = None
        self.rows: list[str] = []
        self.axis = ("", "")
        self.setMinimumHeight(120)

    def bins(self) -> int:
        return max(16, (self.width() - self.LABEL_W - 8) // 3)

    def set_data(self, image: QImage | None, rows: list[str], axis: tuple[str, str]) -> None:
        self.image, self.rows, self.axis = image, rows, axis
        self.update()

    def fitting_rows(self) -> int:
        """How many counters fit with a readable label each."""
        return max(1, (self.height() - 22) // (QFontMetrics(self.font()).height() + 2))

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        pal = self.palette()
        p.fillRect(self.rect(), pal.window())
        if self.image is None or not self.rows:
            p.setPen(pal.windowText().color())
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter,
                       "No dispatch with counters in this window.")
            return
        fm = QFontMetrics(self.font())
        rh = max(4, (self.height() - 22) // len(self.rows))
        w = self.width() - self.LABEL_W - 8
        p.drawImage(QRect(self.LABEL_W, 0, w, rh * len(self.rows)), self.image)
        p.setPen(pal.windowText().color())
        if rh >= fm.height() - 2:
            for i, name in enumerate(self.rows):
                t = fm.elidedText(name, Qt.TextElideMode.ElideMiddle, self.LABEL_W - 8)
                p.drawText(QRect(2, i * rh, self.LABEL_W - 6, rh),
                           Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, t)
        y = rh * len(self.rows) + 2
        p.drawText(QRect(self.LABEL_W, y, w, 18), Qt.AlignmentFlag.AlignLeft, self.axis[0])
        p.drawText(QRect(self.LABEL_W, y, w, 18), Qt.AlignmentFlag.AlignRight, self.axis[1])


class CounterHeatmapView(WorkerPanel):
    """Kernels x counters heatmap plus a time-resolved panel; follows a Document."""

    matrix_ready = Signal()      # a new matrix is shown (tests wait on it)
    time_updated = Signal()

    def __init__(self, document, parent: QWidget | None = None):
        super().__init__(document, 1, parent)
        self.dispatch_matrix: ca.CounterMatrix | None = None
        self.matrix: ca.CounterMatrix | None = None      # shown: selected columns, ordered
        self.order = np.zeros(0, np.int64)
        self._build()
        document.selection_changed.connect(self._on_document_selection_changed)
        self._follow_document()

    # ---- layout ---------------------------------------------------------------------
    def _build(self) -> None:
        self.norm_combo = QComboBox()
        for key, text in NORMS:
            self.norm_combo.addItem(text, key)
        self.per_combo = QComboBox()
        self.per_combo.addItem("per dispatch", "dispatch")
        self.per_combo.addItem("per kernel (mean)", "kernel")
        self.filter_edit = QLineEdit(placeholderText="filter counters (regex)")
        self.filter_edit.setMinimumWidth(60)
        self.instances_box = QCheckBox("per-instance counters")
        self.constant_box = QCheckBox("hide constant")
        self.constant_box.setChecked(True)
        self.cluster_button = QPushButton("Cluster rows")
        self.status = QLabel()
        bar = QHBoxLayout()
        for w in (QLabel("Scale:"), self.norm_combo, self.per_combo, self.filter_edit,
                  self.cluster_button):
            bar.addWidget(w)
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
        row = QHBoxLayout()
        row.addWidget(self.instances_box)
        row.addWidget(self.constant_box)
        row.addWidget(self.status, 1)
        row.addWidget(self.legend, 1)
        tl.addLayout(row)
        tl.addWidget(self.scroll, 1)
        bottom = QWidget()
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        brow = QHBoxLayout()
        self.time_label = QLabel("Counters along the visible window, device:")
        brow.addWidget(self.time_label)
        brow.addWidget(self.device_combo)
        brow.addStretch(1)
        bl.addLayout(brow)
        bl.addWidget(self.time_canvas, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(bottom)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        content = QWidget()
        cl = QVBoxLayout(content)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addLayout(bar)
        cl.addWidget(split, 1)
        self._set_pages(EMPTY_TEXT, content)
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
        h = self.tasks.submit("matrix", lambda progress, cancelled: analyses_of(trace).counter_matrix(
            cancelled=cancelled))
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
        lut = _lut("diverging" if method == "zscore" else "sequential")
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
        h = self.tasks.submit("cluster", lambda progress, cancelled: ca.cluster_order(values))
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
            "Counters along the visible window (dispatch values, scaled per counter; "
            f"first {min(limit, self.matrix.shape[1])} of {self.matrix.shape[1]}), device:")
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
            lut = _lut("diverging" if method == "zscore" else "sequential")
            base = self.document.full_range()[0]
            from .tables.format import fmt_time

            span = t1 - t0
            self.time_canvas.set_data(to_image(scaled_for_colour(g, method), lut, EMPTY_RGB),
                                      m.column_names(), (fmt_time(t0 - base, span),
                                                         fmt_time(t1 - base, span)))
        self.time_updated.emit()
