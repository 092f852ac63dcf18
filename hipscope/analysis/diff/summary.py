"""The headline figures of one trace and its provenance, computed once per trace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...model import Trace
from .. import queue_delay as qd
from ..concurrency import launch_stats
from ..idle import CATEGORIES as IDLE_CATEGORIES
from ..idle import idle_breakdown
from ..report import NO_REAL_TIMELINE, copies_by_direction, has_real_timeline
from ..stats import busy_fraction_per_device, group_stats
from .names import NameNormalizer, name_keys
from .ranges import MarkerRef, Range, find_marker, trace_label


@dataclass
class TraceSummary:
    """The figures of one trace that a comparison needs (computed once per trace)."""

    metrics: dict[str, tuple[float | int | None, str]]   # key -> (value, unit)
    keys: list[str]                 # normalised kernel names, aligned with the arrays
    count: np.ndarray
    total: np.ndarray
    mean: np.ndarray
    p95: np.ndarray
    raw_names: dict[str, list[str]]  # key -> the names that were merged into it
    devices: list[str]
    provenance: dict[str, Any]
    marker: Range | None
    warnings: list[str]             # the reader's


def summarize(trace: Trace, normalizer: NameNormalizer | None = None,
              marker: MarkerRef | None = None) -> TraceSummary:
    norm = normalizer or NameNormalizer()
    k = trace.kernels
    codes, keys = name_keys(trace, norm)
    dur = (k.numpy("end") - k.numpy("start")).astype(np.int64) if len(k) else np.zeros(0)
    gs = group_stats(codes, keys, dur)
    raw_codes, raw = k.codes("name")
    raw_names: dict[str, list[str]] = {}
    for c in np.unique(raw_codes[raw_codes >= 0]):
        raw_names.setdefault(norm(raw[c]), []).append(raw[c])
    try:
        rng = find_marker(trace, marker) if marker is not None else None
    except LookupError as exc:
        raise LookupError(f"{trace_label(trace, 0)}: {exc.args[0]}") from None
    return TraceSummary(
        metrics=_metrics(trace, gs.total, rng), keys=gs.names, count=gs.count,
        total=gs.total, mean=gs.mean, p95=gs.p95, raw_names=raw_names,
        devices=[str(x) for x in trace.devices.strings("name")] if len(trace.devices) else [],
        provenance=provenance(trace), marker=rng, warnings=_warnings(trace))


def _warnings(trace: Trace) -> list[str]:
    """The reader's warnings, and the report's sentence where it withholds figures."""
    withheld = len(trace.kernels) and not has_real_timeline(trace)
    return [*trace.warnings, NO_REAL_TIMELINE] if withheld else list(trace.warnings)


def _metrics(trace: Trace, totals: np.ndarray, marker: Range | None) -> dict:
    tr = trace.time_range()
    m: dict[str, tuple[Any, str]] = {"span_ns": (None if tr is None else tr[1] - tr[0], "ns")}
    if marker is not None:
        m["marker_span_ns"] = (marker.span, "ns")
    real = has_real_timeline(trace)      # else withheld, as the report does
    busy = busy_fraction_per_device(trace) if real else {}
    m["kernel_count"] = (len(trace.kernels), "count")
    m["kernel_time_ns"] = (int(totals.sum()), "ns")
    m["gpu_busy_fraction"] = (float(np.mean(list(busy.values()))) if busy else None, "fraction")
    idle = idle_breakdown(trace).total() if real else None
    m["idle_ns"] = (sum(idle.values()) if idle else None, "ns")
    for c in IDLE_CATEGORIES:
        m[f"idle_{c}_ns"] = (idle[c] if idle else None, "ns")
    delays = qd.queue_delays(trace)
    for key in ("from_api_end", "from_api_start"):
        s = qd.summary(getattr(delays, key)) or {}
        m[f"queue_delay_{key}_p50_ns"] = (s.get("p50"), "ns")
        m[f"queue_delay_{key}_p95_ns"] = (s.get("p95"), "ns")
    m["graph_launch_kernels"] = (len(delays.graph_rows), "count")
    ls = launch_stats(trace, top=0) if real else {}
    m["kernels_per_second"] = (ls.get("kernels_per_second"), "1/s")
    m["launch_overhead_ns"] = (ls.get("launch_overhead_ns"), "ns")
    m["api_call_count"] = (len(trace.api), "count")
    for cp in copies_by_direction(trace):
        d = cp["direction"]
        m[f"copies_{d}_count"] = (cp["count"], "count")
        m[f"copies_{d}_bytes"] = (cp["bytes"], "bytes")
        m[f"copies_{d}_ns"] = (cp["total_ns"], "ns")
    return m


_META_SKIP = {"sources", "trace_id", "traceName", "events", "pids", "warnings", "provenance",
              "dropped", "baseTimeNanoseconds", "displayTimeUnit", "env", "_original_names",
              "cached"}


def provenance(trace: Trace) -> dict[str, Any]:
    """Where a run came from: GPUs, versions, tool, command, env knobs (flat)."""
    out: dict[str, Any] = {}
    d = trace.devices
    for col, key in (("name", "gpu"), ("arch", "gpu_arch"), ("compute_units", "compute_units"),
                     ("memory_bytes", "gpu_memory_bytes"), ("host", "host")):
        vals = sorted({v for v in d.strings(col) if v is not None}, key=str) if len(d) else []
        if vals:
            out[key] = vals[0] if len(vals) == 1 else ", ".join(str(v) for v in vals)
    out["gpu_count"] = len(d)
    for k, v in sorted(trace.meta.items()):
        if k not in _META_SKIP and isinstance(v, (str, int, float, bool)):
            out[k] = v
    env = trace.meta.get("env")
    if isinstance(env, dict):
        out.update({f"env.{k}": v for k, v in sorted(env.items())})
    run = trace.meta.get("run")
    if isinstance(run, dict):     # the run folder's spec (parsers.run_provenance)
        out.update({f"run.{k}": (" ".join(map(str, v)) if isinstance(v, list) else v)
                    for k, v in run.items() if k in ("id", "command", "cwd", "target")})
        out["run.profiler"] = (run.get("profiler") or {}).get("name")
        out.update({f"run.env.{k}": "(unset)" if v is None else v
                    for k, v in sorted((run.get("env") or {}).items())})
    return out
