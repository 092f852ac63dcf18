"""Ops: the host op forest of a trace (PyTorch ``cpu_op`` / ``python_function`` /
annotations, roctx/NVTX ranges), the launching op of every kernel and copy, and the
per-op report. Qt-free; see docs/analysis.md ("Ops")."""

from __future__ import annotations

from .attribute import ATTRIBUTED, NO_CALL, NO_OP, OpAttribution, attribute, innermost_op
from .forest import MODULE_PREFIX, STEP_PREFIX, OpForest, build_forest, enclosing_parent
from .report import format_ops_text, op_rows, ops_report
from .table import COLUMNS as OP_TABLE_COLUMNS
from .table import ops_table

__all__ = [
    "ATTRIBUTED", "MODULE_PREFIX", "NO_CALL", "NO_OP", "OP_TABLE_COLUMNS", "STEP_PREFIX",
    "OpAttribution", "OpForest", "attribute", "build_forest", "enclosing_parent",
    "format_ops_text", "innermost_op", "op_rows", "ops_report", "ops_table",
]
