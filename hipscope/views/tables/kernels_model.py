"""All-kernels table model: one row per kernel dispatch, read lazily from numpy.

Columns the trace does not carry (all null) are left out. Filters follow
``view_state.filters``: the name regex is matched once per *category* and turned
into a mask through the codes, so filtering 5M kernels costs a few numpy passes.
Over ``ASYNC_ROWS`` kernels the filter mask and sort permutation are computed in a
worker (see :class:`~.columnar.ColumnarModel`), over a snapshot of the trace's columns.
"""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...analysis.context import analyses_of
from ...model.api_names import is_graph_launch
from ...model.names import match_mask
from ...model.trace import Trace
from ...model.view_state import Filters
from .columnar import Col, ColumnarModel
from .format import fmt_bytes, fmt_dims, fmt_duration, fmt_id, fmt_int, fmt_time

log = logging.getLogger(__name__)

ASYNC_ROWS = 200_000      # more kernels than this: sort and filter in a worker

_DIMS = {"grid": ("grid_x", "grid_y", "grid_z"), "block": ("block_x", "block_y", "block_z")}
# optional integer columns shown when the trace has them: key -> (header, tip, formatter)
_OPTIONAL = (
    ("correlation_id", "Correlation", "correlation id shared with the launching API call",
     fmt_id),
    ("dispatch_id", "Dispatch", "profiler dispatch index", fmt_id),
    ("pid", "PID", "process id of the launching process", fmt_id),
    ("tid", "TID", "thread id of the launching thread", fmt_id),
    ("vgpr", "VGPR", "architected vector registers", fmt_int),
    ("accum_vgpr", "AGPR", "accumulation vector registers", fmt_int),
    ("sgpr", "SGPR", "scalar registers", fmt_int),
    ("registers", "Registers", "registers per thread", fmt_int),
    ("lds_bytes", "LDS", "LDS / static shared memory per workgroup", fmt_bytes),
    ("dyn_lds_bytes", "Dyn. LDS", "dynamic shared memory per block", fmt_bytes),
    ("scratch_bytes", "Scratch", "scratch memory per work-item", fmt_bytes),
)


def name_mask(categories: list[str], codes: np.ndarray, pattern: str) -> tuple[np.ndarray, str]:
    """Rows whose name matches ``pattern`` (the one rule: :mod:`hipscope.model.names`).

    An invalid regex is searched for as plain text; the second value then says why.
    """
    ok, error = match_mask(categories, pattern)
    ok = np.append(ok, False)            # code -1 (no name) -> index -1 -> False
    return ok[codes], error


class _Snapshot:
    """What the worker reads: one trace's columns and its own cache (a new trace gets
    a new cache, so a stale worker never writes into the current one)."""

    def __init__(self, trace: Trace | None, cache: dict, names: list[str], t0: int):
        self.trace, self.cache, self.names, self.t0 = trace, cache, names, t0

    def column(self, key: str) -> np.ndarray:
        arr = self.cache.get(key)
        if arr is None:
            arr = self._compute(key)
            self.cache[key] = arr
        return arr

    def _compute(self, key: str) -> np.ndarray:
        k = self.trace.kernels
        if key == "start_ns":
            return k.numpy("start") - self.t0
        if key == "duration_ns":
            return k.numpy("end") - k.numpy("start")
        if key == "queue_delay_ns":
            return self._queue_delay()
        if key in _DIMS:
            x, y, z = (k.numpy(c, fill=1).astype(np.int64) for c in _DIMS[key])
            return x * y * z          # sort key; cells show x×y×z
        return k.numpy(key)

    def _queue_delay(self) -> np.ndarray:
        out = np.full(len(self.trace.kernels), np.nan)
        qd = analyses_of(self.trace).queue_delays()
        if qd.from_dispatch is not None:
            out[self.trace.kernels.valid("dispatch_ns")] = qd.from_dispatch
        if qd.from_api_start is not None:
            out[qd.kernel_rows] = qd.from_api_start
        return out

    def sort_key(self, key: str) -> np.ndarray:
        if key == "name":
            rank = np.empty(len(self.names) + 1, dtype=np.int64)
            rank[:-1] = np.argsort(np.array(self.names, dtype=object), kind="stable").argsort()
            rank[-1] = -1
            return rank[self.column(key)]
        return self.column(key)

    def mask(self, f: Filters) -> tuple[np.ndarray | None, str]:
        """Rows passing ``f`` (None = all) and a note on an invalid name regex."""
        k = self.trace.kernels
        error = ""
        mask = None

        def both(m):
            return m if mask is None else (mask & m)

        if f.name_regex:
            m, error = name_mask(self.names, self.cache["name"], f.name_regex)
            mask = both(m)
        if f.devices is not None:
            mask = both(np.isin(k.numpy("device"), np.fromiter(f.devices, np.int64)))
        if f.streams is not None:
            mask = both(np.isin(k.numpy("stream", fill=-1), np.fromiter(f.streams, np.int64)))
        if f.min_duration_ns is not None or f.max_duration_ns is not None:
            dur = self.column("duration_ns")
            if f.min_duration_ns is not None:
                mask = both(dur >= f.min_duration_ns)
            if f.max_duration_ns is not None:
                mask = both(dur <= f.max_duration_ns)
        return mask, error


class KernelsTableModel(ColumnarModel):
    """Rows = kernels (filtered, sorted); ``source_row`` is the row in trace.kernels."""

    async_rows = ASYNC_ROWS

    def __init__(self, parent=None):
        super().__init__(parent)
        self.trace: Trace | None = None
        self.filters = Filters()
        self.filter_error = ""
        self._cache: dict[str, np.ndarray] = {}
        self._names: list[str] = []
        self._t0 = 0
        self._span = 0

    # ---- data ----------------------------------------------------------------------
    def set_trace(self, trace: Trace | None) -> None:
        self._cancel_pending()
        self.beginResetModel()
        self.trace = trace
        self._cache = {}              # not clear(): a worker may hold the old one
        self._names = []
        self.columns = []
        n = 0
        if trace is not None:
            k = trace.kernels
            n = len(k)
            tr = trace.time_range()
            self._t0, self._span = (tr[0], tr[1] - tr[0]) if tr else (0, 0)
            self.columns = self._make_columns(trace)
            if n:
                codes, self._names = k.codes("name")
                self._cache["name"] = codes
        if self.async_rows is not None and n > self.async_rows:
            # a big trace: show it in source order now, filter and sort in a worker
            self._n_source = n
            self._rows = np.arange(n, dtype=np.int64)
            self.filter_error = ""
            self.endResetModel()
            if self.filters != Filters() or 0 <= self._sort_column < len(self.columns):
                self._request_rows(reset=True)
            return
        self._rebuild(n)
        self.endResetModel()

    def _snapshot(self) -> _Snapshot:
        return _Snapshot(self.trace, self._cache, self._names, self._t0)

    def _row_job(self):
        snap, filters = self._snapshot(), self.filters
        col = self._sort_column
        key_fn = None
        if 0 <= col < len(self.columns):
            key = self.columns[col].key
            key_fn = lambda: snap.sort_key(key)          # noqa: E731
        return (lambda: snap.mask(filters)), key_fn

    def _rows_applied(self, extra) -> None:
        self.filter_error = extra or ""

    def _make_columns(self, trace: Trace) -> list[Col]:
        k = trace.kernels
        span = self._span
        cols = [
            Col("name", "Name", "kernel name", numeric=False),
            Col("device", "Device", "GPU index (see the device list)", fmt=_fmt_device),
        ]
        if k.has("queue"):
            cols.append(Col("queue", "Queue", "hardware queue on its device", fmt=fmt_int))
        if k.has("stream"):
            cols.append(Col("stream", "Stream", "HIP/CUDA stream", fmt=fmt_int))
        cols += [
            Col("start_ns", "Start", "start relative to the trace start",
                fmt=lambda v: fmt_time(v, span)),
            Col("duration_ns", "Duration", "end - start", fmt=fmt_duration),
        ]
        if k.has("api_index") or k.has("dispatch_ns"):
            cols.append(Col("queue_delay_ns", "Queue delay",
                            "kernel start - launching API call start "
                            "(or - host dispatch time for legacy rocprof)", fmt=fmt_duration))
        for key, (x, _, _) in _DIMS.items():
            if k.has(x):
                cols.append(Col(key, key.capitalize(), f"{key} size in work-items (x×y×z)",
                                numeric=False))
        for key, header, tip, fmt in _OPTIONAL:
            if k.has(key):
                cols.append(Col(key, header, tip, fmt=fmt))
        return cols

    def values(self, column: int) -> np.ndarray:
        return self._snapshot().column(self.columns[column].key)

    def sort_key(self, column: int) -> np.ndarray:
        return self._snapshot().sort_key(self.columns[column].key)

    def text(self, column: int, source_row: int) -> str:
        key = self.columns[column].key
        if key == "name":
            c = int(self._cache["name"][source_row])
            return self._names[c] if c >= 0 else ""
        if key in _DIMS:
            return fmt_dims(*(self._raw(c)[source_row] for c in _DIMS[key]))
        if key == "queue_delay_ns" and key not in self._cache:
            return fmt_duration(self._queue_delay_cell(source_row))
        return super().text(column, source_row)

    def _queue_delay_cell(self, r: int) -> float | None:
        """One kernel's queue delay without computing the whole column (which only
        sorting and CSV need). Same rule as :func:`analysis.queue_delay.queue_delays`."""
        tr = self.trace
        start = self._raw("start")[r]
        if tr.kernels.has("api_index") and len(tr.api):
            ai = self._raw("api_index")[r]
            if ai == ai and ai >= 0:
                graph = self._cache.get("api:graph")
                if graph is None:
                    codes, names = tr.api.codes("name")
                    flags = np.array([is_graph_launch(n) for n in names] + [False])
                    graph = flags[codes]
                    self._cache["api:graph"] = graph
                    self._cache["api:start"] = tr.api.numpy("start")
                if graph[int(ai)]:
                    return None
                return float(start - self._cache["api:start"][int(ai)])
        if tr.kernels.has("dispatch_ns"):
            d = self._raw("dispatch_ns")[r]
            if d == d:
                return float(start - d)
        return None

    def _raw(self, col: str) -> np.ndarray:
        """A trace column as numpy (NaN where null), cached."""
        arr = self._cache.get("raw:" + col)
        if arr is None:
            arr = self.trace.kernels.numpy(col)
            self._cache["raw:" + col] = arr
        return arr

    def tooltip(self, column: int, source_row: int) -> str | None:
        key = self.columns[column].key
        if key == "name":
            return self.text(column, source_row)
        if key == "device":
            return self.trace.device_name(int(self.values(column)[source_row]))
        return None

    def arrow_values(self, column: int, rows: np.ndarray) -> pa.Array:
        key = self.columns[column].key
        if key == "name":
            codes = self._cache["name"][rows]
            idx = pa.array(codes, mask=codes < 0)
            return pa.DictionaryArray.from_arrays(idx, pa.array(self._names, pa.string())) \
                .cast(pa.string())
        if key in _DIMS:
            k = self.trace.kernels
            parts = [k.column(c).take(pa.array(rows)).cast(pa.string()) for c in _DIMS[key]]
            return pc.binary_join_element_wise(*parts, "x")
        return super().arrow_values(column, rows)

    # ---- filters -------------------------------------------------------------------
    def set_filters(self, filters: Filters) -> None:
        self.filters = filters
        self.refresh()

    def source_mask(self) -> np.ndarray | None:
        mask, self.filter_error = self._snapshot().mask(self.filters)
        return mask

    def column_of(self, key: str) -> int:
        for i, c in enumerate(self.columns):
            if c.key == key:
                return i
        raise KeyError(key)


def _fmt_device(v) -> str:
    return f"GPU {int(v)}"

