"""hipscope's trace model: the canonical tables every reader produces (Qt-free)."""

from .schema import SPECS, Column, TableSpec
from .table import SchemaError, Table, build_table, categorical, empty_table, nullable
from .trace import TABLES, Trace, link_by_correlation, merge_traces

__all__ = [
    "SPECS", "TABLES", "Column", "SchemaError", "Table", "TableSpec", "Trace",
    "build_table", "categorical", "empty_table", "link_by_correlation",
    "merge_traces", "nullable",
]
