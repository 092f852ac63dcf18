"""The kernels x counters matrix type, its columns, and what a tooltip shows of a cell."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

_INSTANCE_RE = re.compile(r"\[\d+\]$")


@dataclass(frozen=True)
class CounterColumn:
    name: str
    unit: str | None = None
    formula: str | None = None       # derived metrics only
    source: str | None = None
    peak: float | None = None        # same unit as the values; None = unknown

    @property
    def derived(self) -> bool:
        return self.formula is not None


@dataclass(frozen=True)
class CounterMatrix:
    """``values[r, c]`` (float64, NaN = not collected) for row r, column c.

    Rows are dispatches (``per == "dispatch"``, ``kernel_rows[r]`` its trace.kernels
    row) or kernel names (``per == "kernel"``: mean over ``counts[r]`` dispatches;
    ``kernel_rows[r]`` the first of them)."""

    values: np.ndarray
    columns: list[CounterColumn]
    row_labels: list[str]
    kernel_rows: np.ndarray
    counts: np.ndarray
    per: str
    starts: np.ndarray = field(repr=False)    # per dispatch rows: kernel start/end, ns
    ends: np.ndarray = field(repr=False)
    devices: np.ndarray = field(repr=False)

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape

    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column_index(self, name: str) -> int:
        return self.column_names().index(name)

    def take_columns(self, idx: Sequence[int] | np.ndarray) -> CounterMatrix:
        idx = np.asarray(idx, dtype=np.int64)
        return _replace(self, values=self.values[:, idx],
                        columns=[self.columns[i] for i in idx])

    def take_rows(self, idx: Sequence[int] | np.ndarray) -> CounterMatrix:
        idx = np.asarray(idx, dtype=np.int64)
        return _replace(self, values=self.values[idx], row_labels=[self.row_labels[i] for i in idx],
                        kernel_rows=self.kernel_rows[idx], counts=self.counts[idx],
                        starts=self.starts[idx], ends=self.ends[idx], devices=self.devices[idx])


def _replace(m: CounterMatrix, **kw: Any) -> CounterMatrix:
    return replace(m, **kw)


def is_instance_counter(name: str) -> bool:
    """Per-instance counters (``TCC_HIT[3]``): one column per L2 channel / SE."""
    return bool(_INSTANCE_RE.search(name))

def cell_info(m: CounterMatrix, row: int, col: int) -> dict[str, Any]:
    """What a tooltip shows: kernel, counter, raw value, unit, formula, peak."""
    c = m.columns[col]
    v = float(m.values[row, col])
    return {
        "kernel": m.row_labels[row], "kernel_row": int(m.kernel_rows[row]),
        "dispatches": int(m.counts[row]), "counter": c.name,
        "value": v if np.isfinite(v) else None, "unit": c.unit, "formula": c.formula,
        "source": c.source, "peak": c.peak,
        "pct_of_peak": (100 * v / c.peak) if c.peak and np.isfinite(v) else None,
    }


def format_value(v: float | None, unit: str | None = None) -> str:
    if v is None or not np.isfinite(v):
        return "–"
    a = abs(v)
    if a != 0 and (a >= 1e7 or a < 1e-3):
        s = f"{v:.4g}"
    elif float(v).is_integer():
        s = f"{int(v):,}"
    else:
        s = f"{v:,.3f}".rstrip("0").rstrip(".")
    return f"{s} {unit}" if unit else s
