"""Derived metrics (formulas copied from the tools' own definitions), the hardware
constants they need and the device's peaks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...model import Trace
from ...model.progress import CancelledFn, check_cancel
from .columns import CounterColumn

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


def _hardware(trace: Trace) -> dict[str, float]:
    """cu_per_gpu and num_xcd, when known (sysinfo, devices table, small arch table)."""
    out: dict[str, float] = {}
    sysinfo = trace.meta.get("sysinfo") or {}
    for key, name in (("cu", "cu_per_gpu"), ("num_xcd", "num_xcd")):
        raw: Any = sysinfo.get(name)          # None or text: TypeError / ValueError
        try:
            v = float(raw)
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

def derived_columns(trace: Trace, mat: np.ndarray, columns: list[CounterColumn],
                    duration: np.ndarray, cancelled: CancelledFn | None = None
                    ) -> tuple[np.ndarray, list[CounterColumn]]:
    """The :data:`DERIVED` metrics whose inputs (columns of ``mat``) and hardware
    constants are known, per row of ``mat``, with their columns."""
    index = {col.name: i for i, col in enumerate(columns)}
    ctx: dict[str, Any] = {"duration_ns": np.where(duration > 0, duration, np.nan)}
    ctx.update(_hardware(trace))
    peaks = device_peaks(trace)

    def get(name: str) -> np.ndarray:
        return mat[:, index[name]]

    out, cols, seen = [], [], set()
    for d in DERIVED:
        check_cancel(cancelled)
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
