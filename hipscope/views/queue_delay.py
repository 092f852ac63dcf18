"""Queue delay view: how long launched kernels waited, per stream and over time.

Headline numbers (p50/p95/max from API start and from API end; graph-launch kernels
counted apart; idle breakdown per device), the delay distribution per stream or
queue (log-spaced bins, log x axis), the delay density along the visible window
(follows ``document.view_changed``) and the worst launches (click one: the timeline
selects and shows it). Everything is computed in workers (latest request wins);
definitions in docs/analysis.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..analysis import delay_views as dv
from ..analysis.idle import CATEGORIES
from ..model.view_state import Selection
from ..qt.document import Document
from .panel import WorkerPanel
from .tables.format import fmt_duration, fmt_time

if TYPE_CHECKING:
    from . import delay_plots as dp

KIND_TEXT = {"from_api_start": "from API start", "from_api_end": "from API end",
             "from_dispatch": "from dispatch (legacy rocprof)"}
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]
IDLE_COLOURS = {"host_wait": "#e45756", "launch_overhead": "#f2a93b", "sync": "#4c78a8",
                "other": "#9d9d9d"}
N_WORST = 25
EMPTY_TEXT = ("Queue delay needs kernels linked to the host calls that launched them "
              "(correlation ids), e.g. rocprofv3 --kernel-trace --hip-runtime-trace, a PyTorch "
              "profiler trace, or legacy rocprof with timestamps.")


class QueueDelayView(WorkerPanel):
    """Queue-delay distribution, density over time, worst launches; follows a Document."""

    data_ready = Signal()        # headline, histogram and table are shown
    density_ready = Signal()

    def __init__(self, document: Document, parent: QWidget | None = None):
        super().__init__(document, parent)
        self.view_data: dv.DelayViewData | None = None
        self._build()
        self._follow_document()

    # ---- layout ----------------------------------------------------------------------
    def _build(self) -> None:
        self.kind_combo = QComboBox()
        for k, text in KIND_TEXT.items():
            self.kind_combo.addItem(text, k)
        self.group_combo = QComboBox()
        self.group_combo.addItem("per stream", "stream")
        self.group_combo.addItem("per queue", "queue")
        self.headline = QLabel()
        self.headline.setTextFormat(Qt.TextFormat.RichText)
        self.headline.setWordWrap(True)
        self.idle_label = QLabel()
        self.idle_label.setTextFormat(Qt.TextFormat.RichText)
        self._plots: dp.DelayPlots | None = None     # built with the first linked data
        self._hist_box, self._density_box = self._box(), self._box()
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["Delay", "Kernel", "Stream", "Start", "Launch"])
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.cellClicked.connect(self._on_table_cell_clicked)
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Delay:"))
        controls.addWidget(self.kind_combo)
        controls.addWidget(self.group_combo)
        controls.addStretch(1)
        plots = QSplitter(Qt.Orientation.Horizontal)
        plots.addWidget(self._titled("Distribution", self._hist_box))
        plots.addWidget(self._titled("Over the visible window (kernels per cell; red: median)",
                                     self._density_box))
        split = QSplitter(Qt.Orientation.Horizontal)     # the table beside: all its rows show
        split.addWidget(plots)
        split.addWidget(self._titled(f"Worst {N_WORST} launches (click: show in timeline)",
                                     self.table))
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        content = QWidget()
        lay = QVBoxLayout(content)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(controls)
        top = QHBoxLayout()
        top.addWidget(self.headline, 1)
        top.addWidget(self.idle_label, 1)
        lay.addLayout(top)
        lay.addWidget(split, 1)
        self._set_pages(EMPTY_TEXT, content)
        self.kind_combo.currentIndexChanged.connect(self._request_data)
        self.group_combo.currentIndexChanged.connect(self._request_data)

    @staticmethod
    def _box() -> QWidget:
        box = QWidget()
        QVBoxLayout(box).setContentsMargins(0, 0, 0, 0)
        return box

    def _ensure_plots(self) -> dp.DelayPlots:
        """The plots (pyqtgraph, loaded here: after the first frame, not at start-up)."""
        if self._plots is None:
            from . import delay_plots

            self._plots = delay_plots.build()
            self._hist_box.layout().addWidget(self._plots.hist)
            self._density_box.layout().addWidget(self._plots.density)
        return self._plots

    @property
    def hist_plot(self):
        return self._ensure_plots().hist

    @property
    def density_plot(self):
        return self._ensure_plots().density

    @property
    def density_image(self):
        return self._ensure_plots().image

    @property
    def median_curve(self):
        return self._ensure_plots().median

    @staticmethod
    def _titled(title: str, w: QWidget) -> QWidget:
        box = QWidget()
        lay = QVBoxLayout(box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(QLabel(f"<b>{title}</b>"))
        lay.addWidget(w, 1)
        return box

    # ---- data ----------------------------------------------------------------------
    def _on_document_trace_loaded(self, _trace) -> None:
        self.view_data = None
        self._request_data()

    def _request_data(self, *_args) -> None:
        trace = self.document.trace
        if trace is None:
            self.stack.setCurrentIndex(0)
            return
        kind, by = self.kind_combo.currentData(), self.group_combo.currentData()
        h = self.tasks.submit("delays", lambda progress, cancelled: dv.compute_view_data(
            trace, kind, by, N_WORST, cancelled=cancelled))
        h.succeeded.connect(lambda vd, trace=trace: self._on_view_data(trace, vd))
        h.failed.connect(self.headline.setText)

    def _on_view_data(self, trace, vd: dv.DelayViewData) -> None:
        if trace is not self.document.trace:
            return
        self.view_data = vd
        if not vd.headline.linked:
            self.stack.setCurrentIndex(0)
            self.data_ready.emit()
            return
        self.stack.setCurrentIndex(1)
        self._show_headline(vd.headline)
        self._show_histograms(vd)
        self._show_worst(vd)
        self.data_ready.emit()
        self._on_document_view_changed(self.document.view_state.window)

    def _show_headline(self, h: dv.Headline) -> None:
        rows = []
        for k in dv.KINDS:
            s = h.summaries.get(k)
            if s and s["count"]:
                rows.append(f"<tr><td>{KIND_TEXT[k]}</td><td align=right>{fmt_duration(s['p50'])}"
                            f"</td><td align=right>{fmt_duration(s['p95'])}</td><td align=right>"
                            f"{fmt_duration(s['max'])}</td><td align=right>{s['count']:,}</td></tr>")
        graph = (f"<br>{h.graph_launch_kernels:,} kernels launched by graph launches are "
                 "counted apart (not each queued)." if h.graph_launch_kernels else "")
        self.headline.setText(
            "<table cellspacing=6><tr><th align=left>Queue delay</th><th>p50</th><th>p95</th>"
            f"<th>max</th><th>kernels</th></tr>{''.join(rows)}</table>{graph}")
        trace = self.document.trace
        lines = ["<table cellspacing=6><tr><th align=left>GPU idle</th>"
                 + "".join(f"<th><font color='{IDLE_COLOURS[c]}'>■</font> "
                           f"{c.replace('_', ' ')}</th>" for c in CATEGORIES) + "</tr>"]
        for dev, bd in h.idle.items():
            idle = sum(bd.values())
            win = h.window.get(dev) or 1
            cells = "".join(f"<td align=right>{fmt_duration(bd[c])} ({bd[c] / win:.0%})</td>"
                            for c in CATEGORIES)
            lines.append(f"<tr><td>{trace.device_name(dev)}: idle {idle / win:.0%}</td>"
                         f"{cells}</tr>")
        self.idle_label.setText("".join(lines) + "</table>")

    def _show_histograms(self, vd: dv.DelayViewData) -> None:
        self.hist_plot.clear()
        if vd.hist is None:
            return
        edges = vd.hist.edges
        groups = sorted(vd.hist.counts, key=lambda g: -int(vd.hist.counts[g].sum()))
        for i, g in enumerate(groups[:len(PALETTE)]):
            c = vd.hist.counts[g]
            colour = PALETTE[i % len(PALETTE)]
            name = f"{vd.hist.group_key} {g}" if g >= 0 else f"{vd.hist.group_key} ?"
            nonpos = vd.hist.nonpositive[g]
            if nonpos:
                name += f" (+{nonpos} ≤ 0)"
            self._ensure_plots().step(np.log10(edges), c, colour, name)

    def _show_worst(self, vd: dv.DelayViewData) -> None:
        trace = self.document.trace
        base, span = self.document.full_range()[0], 0
        tr = trace.time_range()
        span = (tr[1] - tr[0]) if tr else 0
        self.table.setRowCount(len(vd.worst))
        key = vd.data.group_key if vd.data is not None else "stream"
        self.table.setHorizontalHeaderItem(2, QTableWidgetItem(key.capitalize()))
        for i, w in enumerate(vd.worst):
            cells = [fmt_duration(w["delay_ns"]), w["kernel"], str(w.get(key, "")),
                     fmt_time(w["start"] - base, span), w["launch"] or ""]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if j == 0:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                item.setData(Qt.ItemDataRole.UserRole, w["kernel_row"])
                self.table.setItem(i, j, item)
        self.table.resizeColumnToContents(0)
        self.table.resizeColumnToContents(2)
        self.table.resizeColumnToContents(3)

    def _on_table_cell_clicked(self, row: int, _col: int) -> None:
        item = self.table.item(row, 0)
        if item is not None:
            self.document.view_state.select(Selection("kernels", int(item.data(
                Qt.ItemDataRole.UserRole))))

    # ---- density over the window ---------------------------------------------------------
    def _on_document_view_changed(self, window) -> None:
        vd = self.view_data
        if vd is None or vd.data is None or not len(vd.data.delay):
            return
        t0, t1 = window
        bins = max(20, self.density_plot.width() // 4)
        edges = vd.hist.edges if vd.hist is not None else None
        h = self.tasks.submit("density", lambda progress, cancelled: dv.density(
            vd.data, t0, t1, bins, edges))
        h.succeeded.connect(lambda dens, vd=vd: self._on_density(vd, dens))

    def _on_density(self, vd, dens: dv.DelayDensity) -> None:
        if vd is not self.view_data:
            return
        base = self.document.full_range()[0]
        x0, x1 = dens.t_edges[0] - base, dens.t_edges[-1] - base
        plots = self._ensure_plots()
        plots.time_axis.span = max(1.0, x1 - x0)
        ly = np.log10(dens.d_edges)
        counts = dens.counts
        # empty cells transparent; colour by log(1 + count) so sparse outliers show
        img = np.where(counts > 0, np.log1p(counts), np.nan)
        top = float(np.nanmax(img)) if np.isfinite(img).any() else 1.0
        plots.image.setImage(img, levels=(0.0, max(top, 1e-9)))
        plots.image.setRect(QRectF(x0, ly[0], x1 - x0, ly[-1] - ly[0]))
        xc = (dens.t_edges[:-1] + dens.t_edges[1:]) / 2 - base
        med = np.where(dens.median > 0, dens.median, np.nan)
        with np.errstate(invalid="ignore"):
            plots.median.setData(xc, np.log10(med), connect="finite")  # gaps stay gaps
        self.density_plot.setXRange(x0, x1, padding=0)
        self.density_plot.setYRange(ly[0], ly[-1], padding=0)
        self.density_ready.emit()
