"""Hardware counters as a kernels x counters matrix: pivot, derived metrics,
normalisation, row order, outliers and a time-resolved grid (Qt-free, numpy).

``trace.counters`` is long form (one row per dispatch x counter). :func:`counter_matrix`
pivots it to one row per dispatch (or per kernel name, the mean of its dispatches),
adds the derived metrics whose inputs are present (:data:`DERIVED`, each with its
formula and source) and records units and known peaks per column.

Derived metrics are computed per dispatch and then averaged, like rocprof-compute's
``AVG(...)``. Their formulas are copied from the tools' own definitions, never
guessed; a metric whose inputs or hardware constants are missing is left out.

Modules: :mod:`.columns` (the matrix type), :mod:`.derived` (derived metrics and
peaks), :mod:`.matrix` (the pivot), :mod:`.clustering` (normalisation and row order),
:mod:`.outliers` and :mod:`.timegrid`.
"""

from __future__ import annotations

from .clustering import MAX_LINKAGE_ROWS, NORMALISATIONS, cluster_order, normalise, order_by_column
from .columns import CounterColumn, CounterMatrix, cell_info, format_value, is_instance_counter
from .derived import DERIVED, PEAK_HBM_GBS, Derived, derived_columns, device_peaks
from .matrix import aggregate_by_kernel, counter_matrix, select_columns
from .outliers import counter_outliers, format_outliers, robust_z
from .timegrid import CounterTimeGrid, counter_time_grid

__all__ = [
    "DERIVED", "MAX_LINKAGE_ROWS", "NORMALISATIONS", "PEAK_HBM_GBS",
    "CounterColumn", "CounterMatrix", "CounterTimeGrid", "Derived",
    "aggregate_by_kernel", "cell_info", "cluster_order", "counter_matrix",
    "counter_outliers", "counter_time_grid", "derived_columns", "device_peaks",
    "format_outliers", "format_value", "is_instance_counter", "normalise",
    "order_by_column", "robust_z", "select_columns",
]
