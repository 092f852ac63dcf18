"""Hardware counters as a kernels x counters matrix: pivot, derived metrics,
normalisation, row order, outliers and a time-resolved grid (Qt-free, numpy).

``trace.counters`` is long form (one row per dispatch x counter). :func:`counter_matrix`
pivots it to one row per dispatch (or per kernel name, the mean of its dispatches),
adds the derived metrics whose inputs are present (:data:`DERIVED`, each with its
formula and source) and records units and known peaks per column.

Derived metrics are computed per dispatch and then averaged, like rocprof-compute's
``AVG(...)``. Their formulas are copied from the tools' own definitions, never
guessed; a metric whose inputs or hardware constants are missing is left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model import Trace
from ..model.names import compile_pattern

NORMALISATIONS = ("minmax", "zscore", "peak", "none")
_INSTANCE_RE = re.compile(r"\[\d+\]$")

_RPC = ("rocprof-compute analysis_configs/<arch>/0200_system-speed-of-light.yaml "
        "(ROCm/rocprofiler-compute)")
_NCU = "Nsight Compute metrics reference (docs.nvidia.com/nsight-compute)"


# ---- derived metrics ---------------------------------------------------------------
@dataclass(frozen=True)
class Derived:
    """A metric computed from counters. ``fn(get, ctx)`` returns per-row values;
    ``get(name)`` gives a counter column (NaN where missing); ``ctx`` holds
    ``duration_ns`` per row and hardware constants (``cu``, ``num_xcd``)."""

    name: str
    unit: str
    formula: str
    source: str
    inputs: tuple[str, ...]
    fn: Callable[[Callable[[str], np.ndarray], dict], np.ndarray]
    needs: tuple[str, ...] = ()          # keys of ctx that must be known
    peak_key: str | None = None          # key in trace.meta["peaks"] (GB/s) for % of peak
    peak: float | None = None            # fixed peak (100 for percentages)


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.asarray(a, dtype=np.float64) / np.asarray(b, dtype=np.float64)
    out[~np.isfinite(out)] = np.nan
    return out


def _grbm_per_xcd(g, c):
    return g("GRBM_GUI_ACTIVE") / c["num_xcd"]


DERIVED: tuple[Derived, ...] = (
    Derived("Kernel duration", "ns", "end − start (trace.kernels)", "trace.kernels", (),
            lambda g, c: c["duration_ns"]),
    Derived("L2 Cache Hit Rate", "%", "100 × TCC_HIT_sum / (TCC_HIT_sum + TCC_MISS_sum)",
            _RPC, ("TCC_HIT_sum", "TCC_MISS_sum"),
            lambda g, c: 100 * _div(g("TCC_HIT_sum"), g("TCC_HIT_sum") + g("TCC_MISS_sum")),
            peak=100.0),
    Derived("vL1D Cache Hit Rate", "%",
            "100 − 100 × (TCP_TCC_READ_REQ_sum + TCP_TCC_WRITE_REQ_sum + "
            "TCP_TCC_ATOMIC_WITH_RET_REQ_sum + TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum) "
            "/ TCP_TOTAL_CACHE_ACCESSES_sum", _RPC,
            ("TCP_TCC_READ_REQ_sum", "TCP_TCC_WRITE_REQ_sum", "TCP_TCC_ATOMIC_WITH_RET_REQ_sum",
             "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum", "TCP_TOTAL_CACHE_ACCESSES_sum"),
            lambda g, c: 100 - 100 * _div(
                g("TCP_TCC_READ_REQ_sum") + g("TCP_TCC_WRITE_REQ_sum")
                + g("TCP_TCC_ATOMIC_WITH_RET_REQ_sum") + g("TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum"),
                g("TCP_TOTAL_CACHE_ACCESSES_sum")), peak=100.0),
    Derived("sL1D Cache Hit Rate", "%", "100 × SQC_DCACHE_HITS / (SQC_DCACHE_HITS + "
            "SQC_DCACHE_MISSES)", _RPC, ("SQC_DCACHE_HITS", "SQC_DCACHE_MISSES"),
            lambda g, c: 100 * _div(g("SQC_DCACHE_HITS"),
                                    g("SQC_DCACHE_HITS") + g("SQC_DCACHE_MISSES")), peak=100.0),
    Derived("VALU Utilization", "%",
            "100 × SQ_ACTIVE_INST_VALU / (GRBM_GUI_ACTIVE / num_xcd × cu_per_gpu)", _RPC,
            ("SQ_ACTIVE_INST_VALU", "GRBM_GUI_ACTIVE"),
            lambda g, c: 100 * _div(g("SQ_ACTIVE_INST_VALU"), _grbm_per_xcd(g, c) * c["cu"]),
            needs=("cu", "num_xcd"), peak=100.0),
    Derived("VALU Active Threads", "threads", "SQ_THREAD_CYCLES_VALU / SQ_ACTIVE_INST_VALU",
            _RPC, ("SQ_THREAD_CYCLES_VALU", "SQ_ACTIVE_INST_VALU"),
            lambda g, c: _div(g("SQ_THREAD_CYCLES_VALU"), g("SQ_ACTIVE_INST_VALU"))),
    Derived("IPC", "instr/cycle", "SQ_INSTS / SQ_BUSY_CU_CYCLES", _RPC,
            ("SQ_INSTS", "SQ_BUSY_CU_CYCLES"),
            lambda g, c: _div(g("SQ_INSTS"), g("SQ_BUSY_CU_CYCLES"))),
    Derived("L2 Cache BW", "GB/s", "TCC_REQ_sum × 128 / duration_ns", _RPC, ("TCC_REQ_sum",),
            lambda g, c: _div(g("TCC_REQ_sum") * 128, c["duration_ns"]), peak_key="L2Bw"),
    # gfx942 / gfx950 (MI300, MI350): EA0 counters with 128 B "bubble" reads.
    Derived("L2-Fabric Read BW", "GB/s",
            "(128 × TCC_BUBBLE_sum + 64 × (TCC_EA0_RDREQ_sum − TCC_BUBBLE_sum − "
            "TCC_EA0_RDREQ_32B_sum) + 32 × TCC_EA0_RDREQ_32B_sum) / duration_ns", _RPC,
            ("TCC_BUBBLE_sum", "TCC_EA0_RDREQ_sum", "TCC_EA0_RDREQ_32B_sum"),
            lambda g, c: _div(128 * g("TCC_BUBBLE_sum") + 64 * (
                g("TCC_EA0_RDREQ_sum") - g("TCC_BUBBLE_sum") - g("TCC_EA0_RDREQ_32B_sum"))
                + 32 * g("TCC_EA0_RDREQ_32B_sum"), c["duration_ns"]), peak_key="HBMBw"),
    Derived("L2-Fabric Write BW", "GB/s",
            "(64 × TCC_EA0_WRREQ_64B_sum + 32 × (TCC_EA0_WRREQ_sum − TCC_EA0_WRREQ_64B_sum)) "
            "/ duration_ns", _RPC, ("TCC_EA0_WRREQ_64B_sum", "TCC_EA0_WRREQ_sum"),
            lambda g, c: _div(64 * g("TCC_EA0_WRREQ_64B_sum") + 32 * (
                g("TCC_EA0_WRREQ_sum") - g("TCC_EA0_WRREQ_64B_sum")), c["duration_ns"]),
            peak_key="HBMBw"),
    # gfx90a (MI200): TCC_EA_* counters.
    Derived("L2-Fabric Read BW", "GB/s",
            "(32 × TCC_EA_RDREQ_32B_sum + 64 × (TCC_EA_RDREQ_sum − TCC_EA_RDREQ_32B_sum)) "
            "/ duration_ns", _RPC, ("TCC_EA_RDREQ_32B_sum", "TCC_EA_RDREQ_sum"),
            lambda g, c: _div(32 * g("TCC_EA_RDREQ_32B_sum") + 64 * (
                g("TCC_EA_RDREQ_sum") - g("TCC_EA_RDREQ_32B_sum")), c["duration_ns"]),
            peak_key="HBMBw"),
    Derived("L2-Fabric Write BW", "GB/s",
            "(64 × TCC_EA_WRREQ_64B_sum + 32 × (TCC_EA_WRREQ_sum − TCC_EA_WRREQ_64B_sum)) "
            "/ duration_ns", _RPC, ("TCC_EA_WRREQ_64B_sum", "TCC_EA_WRREQ_sum"),
            lambda g, c: _div(64 * g("TCC_EA_WRREQ_64B_sum") + 32 * (
                g("TCC_EA_WRREQ_sum") - g("TCC_EA_WRREQ_64B_sum")), c["duration_ns"]),
            peak_key="HBMBw"),
    Derived("LDS Bank Conflicts/Access", "conflicts/access",
            "SQ_LDS_BANK_CONFLICT / (SQ_LDS_IDX_ACTIVE − SQ_LDS_BANK_CONFLICT)", _RPC,
            ("SQ_LDS_BANK_CONFLICT", "SQ_LDS_IDX_ACTIVE"),
            lambda g, c: _div(g("SQ_LDS_BANK_CONFLICT"),
                              g("SQ_LDS_IDX_ACTIVE") - g("SQ_LDS_BANK_CONFLICT"))),
    # NVIDIA Nsight Compute (raw metric names).
    Derived("DRAM Bandwidth", "GB/s", "dram__bytes.sum / gpu__time_duration.sum", _NCU,
            ("dram__bytes.sum", "gpu__time_duration.sum"),
            lambda g, c: _div(g("dram__bytes.sum"), g("gpu__time_duration.sum")),
            peak_key="HBMBw"),
    Derived("DRAM Bandwidth", "GB/s",
            "(dram__bytes_read.sum + dram__bytes_write.sum) / gpu__time_duration.sum", _NCU,
            ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"),
            lambda g, c: _div(g("dram__bytes_read.sum") + g("dram__bytes_write.sum"),
                              g("gpu__time_duration.sum")), peak_key="HBMBw"),
    # Nsight Compute details page (display names).
    Derived("Occupancy achieved/theoretical", "%",
            "100 × Achieved Occupancy / Theoretical Occupancy", _NCU,
            ("Achieved Occupancy", "Theoretical Occupancy"),
            lambda g, c: 100 * _div(g("Achieved Occupancy"), g("Theoretical Occupancy")),
            peak=100.0),
)

# Peak DRAM bandwidth (GB/s) from vendor data sheets, used only when the trace carries
# no measured peaks (rocprof-compute roofline.csv). Matched on the device name.
PEAK_HBM_GBS: dict[str, float] = {
    "MI300X": 5300.0, "MI300A": 5300.0, "MI325X": 6000.0, "MI355X": 8000.0,
    "MI350X": 8000.0, "MI250X": 3276.8, "MI250": 3276.8, "MI210": 1638.4,
    "H200": 4800.0, "H100 SXM": 3350.0, "A100-SXM4-80GB": 2039.0,
}


# ---- the matrix --------------------------------------------------------------------
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
    from dataclasses import replace

    return replace(m, **kw)


def is_instance_counter(name: str) -> bool:
    """Per-instance counters (``TCC_HIT[3]``): one column per L2 channel / SE."""
    return bool(_INSTANCE_RE.search(name))


def _counter_kernel_rows(trace: Trace) -> np.ndarray:
    """trace.kernels row of each counter value (-1 where unknown): kernel_index, else
    the dispatch id looked up in the kernels table."""
    c, k = trace.counters, trace.kernels
    ki = c.numpy("kernel_index", fill=-1).astype(np.int64)
    miss = ki < 0
    if miss.any() and c.has("dispatch_id") and k.has("dispatch_id"):
        kd = k.numpy("dispatch_id", fill=-1).astype(np.int64)
        order = np.argsort(kd, kind="stable")
        cd = c.numpy("dispatch_id", fill=-2).astype(np.int64)[miss]
        pos = np.clip(np.searchsorted(kd[order], cd), 0, max(len(kd) - 1, 0))
        found = (kd[order][pos] == cd) if len(kd) else np.zeros(len(cd), bool)
        ki[np.flatnonzero(miss)] = np.where(found, order[pos] if len(kd) else -1, -1)
    ki[ki >= len(k)] = -1
    return ki


def _hardware(trace: Trace) -> dict[str, float]:
    """cu_per_gpu and num_xcd, when known (sysinfo, devices table, small arch table)."""
    out: dict[str, float] = {}
    sysinfo = trace.meta.get("sysinfo") or {}
    for key, name in (("cu", "cu_per_gpu"), ("num_xcd", "num_xcd")):
        try:
            v = float(sysinfo.get(name))
            if v > 0:
                out[key] = v
        except (TypeError, ValueError):
            pass
    d = trace.devices
    if "cu" not in out and len(d) and d.has("compute_units"):
        cus = d.numpy("compute_units", fill=0)
        if len(set(cus.tolist())) == 1 and cus[0] > 0:
            out["cu"] = float(cus[0])
    if "num_xcd" not in out and len(d) and d.has("arch"):
        archs = set(d.strings("arch"))
        if archs and archs <= {"gfx906", "gfx908", "gfx90a"}:   # one XCD per device
            out["num_xcd"] = 1.0
    return out


def device_peaks(trace: Trace) -> dict[str, float]:
    """Peaks (GB/s, GFLOP/s) for the trace's device: rocprof-compute's roofline
    benchmark when present (median over its devices: roofline.csv is keyed by HIP
    ordinal, which need not match the profiled GPU), else :data:`PEAK_HBM_GBS`."""
    peaks = trace.meta.get("peaks")
    if isinstance(peaks, dict) and peaks:
        per_dev = [v for v in peaks.values() if isinstance(v, dict)] or [peaks]
        keys = set().union(*(p.keys() for p in per_dev))
        out = {}
        for key in keys:
            vals = [float(p[key]) for p in per_dev if _is_number(p.get(key))]
            if vals:
                out[key] = float(np.median(vals))
        return out
    names = trace.devices.strings("name") if len(trace.devices) else []
    for n in names:
        for key in sorted(PEAK_HBM_GBS, key=len, reverse=True):
            if key.lower() in str(n).lower():
                return {"HBMBw": PEAK_HBM_GBS[key]}
    return {}


def _is_number(v: Any) -> bool:
    try:
        return np.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def counter_matrix(trace: Trace, per: str = "dispatch", derived: bool = True,
                   instances: bool = True) -> CounterMatrix:
    """Pivot ``trace.counters`` to rows x columns (see :class:`CounterMatrix`).

    Parameters
    ----------
    per : "dispatch" or "kernel" (mean over the dispatches of one kernel name).
    derived : append the derived metrics whose inputs are present (first columns).
    instances : keep per-instance counters such as ``TCC_HIT[12]``.
    """
    if per not in ("dispatch", "kernel"):
        raise ValueError(f"per must be 'dispatch' or 'kernel', not {per!r}")
    c, k = trace.counters, trace.kernels
    krow = _counter_kernel_rows(trace) if len(c) else np.zeros(0, np.int64)
    codes, names = c.codes("counter") if len(c) else (np.zeros(0, np.int32), [])
    ok = (krow >= 0) & (codes >= 0)
    values = c.numpy("value") if len(c) else np.zeros(0)
    krow, codes, values = krow[ok], codes[ok], values[ok]
    used = np.unique(codes)
    keep = [int(u) for u in used if instances or not is_instance_counter(names[u])]
    col_of = np.full(len(names) + 1, -1, dtype=np.int64)
    col_of[keep] = np.arange(len(keep))
    rows = np.unique(krow)
    r = np.searchsorted(rows, krow)
    ci = col_of[codes]
    sel = ci >= 0
    total = np.zeros((len(rows), len(keep)))
    count = np.zeros((len(rows), len(keep)))
    np.add.at(total, (r[sel], ci[sel]), values[sel])
    np.add.at(count, (r[sel], ci[sel]), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mat = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    units = _units(trace)
    columns = [CounterColumn(names[u], units.get(names[u])) for u in keep]
    starts = k.numpy("start")[rows] if len(rows) else np.zeros(0, np.int64)
    ends = k.numpy("end")[rows] if len(rows) else np.zeros(0, np.int64)
    if derived and len(rows):
        dmat, dcols = _derived(trace, mat, columns, (ends - starts).astype(np.float64))
        mat = np.concatenate([dmat, mat], axis=1)
        columns = dcols + columns
    kcodes, knames = k.codes("name") if len(k) else (np.zeros(0, np.int32), [])
    labels = [knames[kcodes[i]] if kcodes[i] >= 0 else "?" for i in rows]
    devices = k.numpy("device")[rows].astype(np.int64) if len(rows) else np.zeros(0, np.int64)
    m = CounterMatrix(mat, columns, labels, rows.astype(np.int64), np.ones(len(rows), np.int64),
                      "dispatch", starts.astype(np.int64), ends.astype(np.int64), devices)
    return m if per == "dispatch" else aggregate_by_kernel(m)


def _units(trace: Trace) -> dict[str, str]:
    """Unit of each counter name (the first one recorded), when the format has units."""
    c = trace.counters
    if not len(c) or not c.has("unit"):
        return {}
    ccodes, cnames = c.codes("counter")
    ucodes, unames = c.codes("unit")
    ok = (ccodes >= 0) & (ucodes >= 0)
    pairs = np.unique(np.stack([ccodes[ok], ucodes[ok]], axis=1), axis=0)
    out: dict[str, str] = {}
    for a, b in pairs.tolist():
        out.setdefault(cnames[a], unames[b])
    return out


def _derived(trace: Trace, mat: np.ndarray, columns: list[CounterColumn],
             duration: np.ndarray) -> tuple[np.ndarray, list[CounterColumn]]:
    index = {col.name: i for i, col in enumerate(columns)}
    ctx: dict[str, Any] = {"duration_ns": np.where(duration > 0, duration, np.nan)}
    ctx.update(_hardware(trace))
    peaks = device_peaks(trace)

    def get(name: str) -> np.ndarray:
        return mat[:, index[name]]

    out, cols, seen = [], [], set()
    for d in DERIVED:
        if d.name in seen or any(n not in index for n in d.inputs) or any(
                n not in ctx for n in d.needs):
            continue
        if d.name == "Kernel duration" and not len(index):
            continue
        vals = np.asarray(d.fn(get, ctx), dtype=np.float64)
        if not np.isfinite(vals).any():
            continue
        seen.add(d.name)
        peak = d.peak if d.peak is not None else peaks.get(d.peak_key) if d.peak_key else None
        out.append(vals)
        cols.append(CounterColumn(d.name, d.unit, d.formula, d.source, peak))
    if not out:
        return np.zeros((len(mat), 0)), []
    return np.stack(out, axis=1), cols


def aggregate_by_kernel(m: CounterMatrix) -> CounterMatrix:
    """One row per kernel name: the mean of its dispatches (NaNs ignored)."""
    if m.per == "kernel":
        return m
    names = sorted(set(m.row_labels))
    idx = {n: i for i, n in enumerate(names)}
    g = np.array([idx[n] for n in m.row_labels], dtype=np.int64)
    n, ncol = len(names), m.values.shape[1]
    valid = np.isfinite(m.values)
    total = np.zeros((n, ncol))
    cnt = np.zeros((n, ncol))
    np.add.at(total, g, np.where(valid, m.values, 0.0))
    np.add.at(cnt, g, valid.astype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        vals = np.where(cnt > 0, total / np.maximum(cnt, 1), np.nan)
    counts = np.bincount(g, minlength=n).astype(np.int64)
    first = np.full(n, -1, dtype=np.int64)
    first[g[::-1]] = m.kernel_rows[::-1]        # last write wins: the first dispatch
    return CounterMatrix(vals, list(m.columns), names, first, counts, "kernel",
                         np.full(n, -1, np.int64), np.full(n, -1, np.int64),
                         np.full(n, -1, np.int64))


def select_columns(m: CounterMatrix, pattern: str = "", drop_constant: bool = False,
                   instances: bool = True, limit: int | None = None) -> CounterMatrix:
    """Columns whose name matches ``pattern`` (regex, case-insensitive; invalid
    patterns match as plain text), optionally without constant or all-NaN columns,
    without per-instance counters, and at most ``limit`` of them (derived first)."""
    names = m.column_names()
    rx = compile_pattern(pattern)[0] if pattern else None     # the one name rule
    keep = []
    for i, n in enumerate(names):
        if rx is not None and not rx.search(n):
            continue
        if not instances and is_instance_counter(n):
            continue
        col = m.values[:, i]
        fin = col[np.isfinite(col)]
        if drop_constant and (len(fin) == 0 or fin.min() == fin.max()):
            continue
        keep.append(i)
    if limit is not None:
        keep = keep[:limit]
    return m.take_columns(keep)


# ---- normalisation and order ---------------------------------------------------------
def normalise(m: CounterMatrix, method: str = "minmax") -> np.ndarray:
    """Per-column scaling of ``m.values``: ``minmax`` to [0, 1]; ``zscore`` (mean 0,
    sd 1; constant columns 0); ``peak``: value / known peak (1.0 = 100 %; NaN where
    the column has no known peak); ``none``: raw values. NaN stays NaN."""
    v = m.values.astype(np.float64, copy=True)
    if method == "none":
        return v
    with np.errstate(invalid="ignore", divide="ignore"), _quiet():
        if method == "minmax":
            lo, hi = np.nanmin(v, axis=0), np.nanmax(v, axis=0)
            span = hi - lo
            out = (v - lo) / np.where(span > 0, span, 1.0)
            return np.where(np.isfinite(v), np.where(span > 0, out, 0.5), np.nan)
        if method == "zscore":
            mu, sd = np.nanmean(v, axis=0), np.nanstd(v, axis=0)
            out = (v - mu) / np.where(sd > 0, sd, 1.0)
            return np.where(np.isfinite(v), np.where(sd > 0, out, 0.0), np.nan)
        if method == "peak":
            peaks = np.array([c.peak if c.peak else np.nan for c in m.columns], dtype=np.float64)
            return v / peaks
    raise ValueError(f"normalisation {method!r} not in {NORMALISATIONS}")


class _quiet:
    """Silence numpy's 'All-NaN slice' RuntimeWarnings (pytest runs with -W error)."""

    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


def order_by_column(m: CounterMatrix, col: int, descending: bool = True) -> np.ndarray:
    """Row order by one column (stable; NaN last either way)."""
    v = m.values[:, col]
    key = np.where(np.isfinite(v), -v if descending else v, np.inf)
    return np.argsort(key, kind="stable")


MAX_LINKAGE_ROWS = 600


def cluster_order(values: np.ndarray, max_rows: int = MAX_LINKAGE_ROWS) -> np.ndarray:
    """A row order that puts similar rows together.

    Rows are z-scored per column (NaN -> 0). Up to ``max_rows`` rows: average-linkage
    (UPGMA) agglomerative clustering on Euclidean distances, leaves in tree order;
    above that (O(n^2) memory, O(n^2) numpy work per merge) the order of the rows'
    projection on the first principal component."""
    n = len(values)
    if n <= 2:
        return np.arange(n)
    with np.errstate(invalid="ignore", divide="ignore"), _quiet():
        mu, sd = np.nanmean(values, axis=0), np.nanstd(values, axis=0)
        z = (values - mu) / np.where(sd > 0, sd, 1.0)
    z = np.nan_to_num(z, nan=0.0, posinf=0.0, neginf=0.0)
    if n > max_rows:
        z = z - z.mean(axis=0)
        _, _, vt = np.linalg.svd(z, full_matrices=False)
        return np.argsort(z @ vt[0], kind="stable")
    return _upgma_leaves(z)


def _upgma_leaves(z: np.ndarray) -> np.ndarray:
    n = len(z)
    sq = (z * z).sum(axis=1)
    d = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * z @ z.T, 0.0))
    np.fill_diagonal(d, np.inf)
    size = np.ones(n)
    members: list[list[int]] = [[i] for i in range(n)]   # leaf order of each cluster
    alive = np.ones(n, dtype=bool)
    for _ in range(n - 1):
        flat = int(np.argmin(d))
        a, b = divmod(flat, n)
        if a > b:
            a, b = b, a
        # average linkage: distance of the merged cluster is the size-weighted mean
        new = (d[a] * size[a] + d[b] * size[b]) / (size[a] + size[b])
        d[a, :] = new
        d[:, a] = new
        d[a, a] = np.inf
        d[b, :] = np.inf
        d[:, b] = np.inf
        size[a] += size[b]
        members[a] = members[a] + members[b]
        members[b] = []
        alive[b] = False
    root = int(np.flatnonzero(alive)[0])
    return np.array(members[root], dtype=np.int64)


# ---- hover -------------------------------------------------------------------------------
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


# ---- outliers ----------------------------------------------------------------------------
def robust_z(values: np.ndarray) -> np.ndarray:
    """|x − median| / (1.4826·MAD). When MAD is 0 (over half the values equal), the
    mean absolute deviation ×1.2533 takes its place (Iglewicz & Hoaglin); all equal:
    zeros. NaN stays NaN."""
    v = np.asarray(values, dtype=np.float64)
    fin = v[np.isfinite(v)]
    out = np.full(len(v), np.nan)
    if len(fin) == 0:
        return out
    med = np.median(fin)
    mad = np.median(np.abs(fin - med))
    scale = 1.4826 * mad
    if scale == 0:
        scale = 1.2533 * np.mean(np.abs(fin - med))
    dev = np.abs(v - med)
    if scale == 0:
        return np.where(np.isfinite(v), 0.0, np.nan)
    return dev / scale


def counter_outliers(trace: Trace, top: int = 5, per: str = "auto",
                     instances: bool = False, min_rows: int = 3) -> list[dict[str, Any]]:
    """Per counter (and derived metric), the ``top`` rows furthest from the rest by
    robust z-score (:func:`robust_z`), counters sorted by their largest z.

    ``per``: "kernel" (rows = kernel names, mean over dispatches), "dispatch", or
    "auto" (kernel names when there are at least ``min_rows`` of them, else
    dispatches). Counters with fewer than ``min_rows`` values or no spread are skipped.
    """
    if not len(trace.counters):
        return []
    m = counter_matrix(trace, per="dispatch", instances=instances)
    if per == "auto":
        per = "kernel" if len(set(m.row_labels)) >= min_rows else "dispatch"
    if per == "kernel":
        m = aggregate_by_kernel(m)
    did = trace.kernels.numpy("dispatch_id", fill=-1) if trace.kernels.has("dispatch_id") else None
    out = []
    for j, col in enumerate(m.columns):
        v = m.values[:, j]
        fin = np.isfinite(v)
        if fin.sum() < min_rows:
            continue
        z = robust_z(v)
        if not np.nanmax(z) > 0:
            continue
        order = np.argsort(np.where(np.isfinite(z), -z, np.inf), kind="stable")[:top]
        rows = []
        for r in order:
            if not np.isfinite(z[r]):
                continue
            kr = int(m.kernel_rows[r])
            entry = {"kernel": m.row_labels[r], "kernel_row": kr, "value": float(v[r]),
                     "robust_z": float(z[r])}
            if per == "dispatch" and did is not None and kr >= 0:
                entry["dispatch_id"] = int(did[kr])
            if per == "kernel":
                entry["dispatches"] = int(m.counts[r])
            rows.append(entry)
        out.append({"counter": col.name, "unit": col.unit, "derived": col.derived,
                    "median": float(np.median(v[fin])), "per": per,
                    "max_robust_z": rows[0]["robust_z"], "kernels": rows})
    out.sort(key=lambda e: -e["max_robust_z"])
    return out


def format_outliers(outliers: list[dict[str, Any]], counters: int = 20) -> str:
    """Text for ``hipscope report --counters``."""
    if not outliers:
        return "Counters: no counter varies across enough kernels to rank outliers."
    per = outliers[0]["per"]
    lines = [f"Counter outliers (robust z = |x − median| / (1.4826·MAD), per {per}):"]
    for e in outliers[:counters]:
        unit = f" [{e['unit']}]" if e["unit"] else ""
        lines.append(f"  {e['counter']}{unit}  median {format_value(e['median'])}")
        for k in e["kernels"]:
            did = f" dispatch {k['dispatch_id']}" if "dispatch_id" in k else ""
            name = k["kernel"] if len(k["kernel"]) <= 70 else k["kernel"][:67] + "..."
            lines.append(f"    z {k['robust_z']:>7.1f}  {format_value(k['value']):>14}  "
                         f"{name}{did}")
    if len(outliers) > counters:
        lines.append(f"  ... and {len(outliers) - counters} more counters (--json for all)")
    return "\n".join(lines)


# ---- time-resolved grid ----------------------------------------------------------------
@dataclass(frozen=True)
class CounterTimeGrid:
    """``grid[device][c, b]``: mean normalised value of column c over dispatches that
    overlap time bin b of ``[t0, t1)`` (NaN = none); ``edges`` the bin edges (ns)."""

    edges: np.ndarray
    columns: list[CounterColumn]
    grid: dict[int, np.ndarray]


def counter_time_grid(m: CounterMatrix, t0: int, t1: int, bins: int,
                      method: str = "minmax") -> CounterTimeGrid:
    """Counter values laid along time per device (``m`` must be per dispatch).

    Values are normalised per column over *all* dispatches first, so colours do not
    change when the window moves. Each dispatch adds its value to every bin its
    [start, end) overlaps (difference arrays: O(dispatches + bins) per column)."""
    if m.per != "dispatch":
        raise ValueError("the time grid needs a per-dispatch matrix")
    bins = max(1, int(bins))
    t0, t1 = int(t0), max(int(t1), int(t0) + 1)
    edges = np.linspace(t0, t1, bins + 1)
    norm = normalise(m, method) if method != "none" else m.values
    width = (t1 - t0) / bins
    out: dict[int, np.ndarray] = {}
    for dev in np.unique(m.devices):
        sel = np.flatnonzero((m.devices == dev) & (m.ends > t0) & (m.starts < t1))
        ncol = norm.shape[1]
        total = np.zeros((bins + 1, ncol))
        cnt = np.zeros((bins + 1, ncol))
        if len(sel):
            b0 = np.clip(((m.starts[sel] - t0) // width).astype(np.int64), 0, bins - 1)
            b1 = np.clip(np.ceil((m.ends[sel] - t0) / width).astype(np.int64), b0 + 1, bins)
            v = norm[sel]
            fin = np.isfinite(v)
            vz = np.where(fin, v, 0.0)
            np.add.at(total, b0, vz)
            np.subtract.at(total, b1, vz)
            np.add.at(cnt, b0, fin)
            np.subtract.at(cnt, b1, fin)
        s, c = np.cumsum(total, axis=0)[:bins], np.cumsum(cnt, axis=0)[:bins]
        with np.errstate(invalid="ignore", divide="ignore"):
            g = np.where(c > 0.5, s / np.maximum(c, 1), np.nan)
        out[int(dev)] = g.T
    return CounterTimeGrid(edges, list(m.columns), out)
