"""Kernel summary model: one row per kernel name (count, total, mean, min, max, p95,
share of GPU time), from :func:`hipscope.analysis.stats.kernel_stats`."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from PySide6.QtCore import Qt

from ...analysis.context import analyses_of
from ...analysis.stats import GroupStats
from ...model.trace import Trace
from .columnar import Col, ColumnarModel
from .format import fmt_duration, fmt_int, fmt_percent

COLUMNS = (
    Col("name", "Name", "kernel name", numeric=False),
    Col("count", "Count", "number of dispatches", fmt=fmt_int),
    Col("total_ns", "Total", "sum of durations", fmt=fmt_duration),
    Col("mean_ns", "Mean", "mean duration", fmt=fmt_duration),
    Col("min_ns", "Min", "shortest dispatch", fmt=fmt_duration),
    Col("max_ns", "Max", "longest dispatch", fmt=fmt_duration),
    Col("p95_ns", "p95", "95th percentile of the duration", fmt=fmt_duration),
    Col("gpu_time_fraction", "% GPU time",
        "share of the summed kernel time of the whole trace", fmt=fmt_percent),
)


class KernelSummaryModel(ColumnarModel):
    """Rows = kernel names; sorted by total time (descending) when first shown."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.columns = list(COLUMNS)
        self.stats: GroupStats | None = None
        self._values: list[np.ndarray] = []
        self._names: np.ndarray = np.zeros(0, dtype=object)
        self._rank: np.ndarray = np.zeros(0, dtype=np.int64)
        self._sort_column = 2
        self._sort_order = Qt.SortOrder.DescendingOrder

    def set_trace(self, trace: Trace | None, stats: GroupStats | None = None) -> None:
        """Show ``trace``'s kernels; ``stats`` when already computed (in a worker)."""
        self.beginResetModel()
        st = stats
        if st is None and trace is not None and len(trace.kernels):
            st = analyses_of(trace).kernel_stats()
        self.stats = st
        if st is None:
            self._values = []
            n = 0
        else:
            gpu = float(st.total.sum())
            frac = st.total / gpu if gpu > 0 else np.full(len(st.total), np.nan)
            self._names = np.array(st.names, dtype=object)
            self._rank = np.argsort(self._names, kind="stable").argsort()
            self._values = [self._names, st.count, st.total, st.mean, st.min, st.max, st.p95, frac]
            n = len(st.names)
        self._rebuild(n)
        self.endResetModel()

    def values(self, column: int) -> np.ndarray:
        return self._values[column]

    def sort_key(self, column: int) -> np.ndarray:
        return self._rank if column == 0 else self._values[column]

    def name(self, source_row: int) -> str:
        return str(self._names[source_row])

    def text(self, column: int, source_row: int) -> str:
        if column == 0:
            return self.name(source_row)
        return super().text(column, source_row)

    def tooltip(self, column: int, source_row: int) -> str | None:
        return self.name(source_row) if column == 0 else None

    def arrow_values(self, column: int, rows: np.ndarray) -> pa.Array:
        if column == 0:
            return pa.array(self._names[rows].tolist(), pa.string())
        return super().arrow_values(column, rows)
