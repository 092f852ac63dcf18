"""Nsight Compute ``--print-summary per-kernel|per-gpu`` CSV: a summary, no timeline.

With ``--print-summary`` ncu prints, instead of one block per launch, one row per
kernel name (and launch geometry, device, process) x metric:
``"Process ID","Process Name","Host Name","Kernel Name","Block Size","Grid Size",
"Device","CC","Invocations","Section Name","Metric Name","Metric Unit","Minimum",
"Maximum","Average"`` (``per-gpu`` puts ``Device``, ``CC`` before ``Kernel Name``).
There is no launch ID and no per-launch value, so no kernel rows can be made
honestly: the trace has an empty kernels table, its devices, and
``meta["kernel_summary"]`` (per kernel: invocations, each metric's unit, min, max,
average, and the GPU time ``duration_ns`` from ``gpu__time_duration.sum`` /
``Duration``, total = average x invocations). A warning says so.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..model import Trace
from ._common import warn_no_kernels
from ._ncu_tables import ncu_devices, set_process_meta, to_number
from .base import TraceFormatError

SUMMARY_IDENT = ["Process ID", "Process Name", "Host Name", "Kernel Name", "Block Size",
                 "Grid Size", "Device", "CC", "Invocations"]
SUMMARY_METRIC = ["Section Name", "Metric Name", "Metric Unit", "Minimum", "Maximum",
                  "Average"]


def is_summary_header(header: list[str]) -> bool:
    """A ``--print-summary`` header: no ID column, Invocations and min/max/avg."""
    return "ID" not in header and all(c in header for c in SUMMARY_IDENT + SUMMARY_METRIC)


def read_summary(path: Path, rows: list[list[str]], where: list[int],
                 meta: dict[str, Any]) -> Trace:
    """The summary trace of a ``--print-summary`` file (rows[0] is the header)."""
    from .ncu_csv import DURATION_METRICS, UNIT_NS

    groups, dropped = _groups(path, rows, where)
    if not groups:              # well-formed, no kernels: an empty trace (issue 13 item 10)
        warn_no_kernels(meta["warnings"], path, "only the summary header")
        return Trace(meta=meta)
    devices, dmap = ncu_devices([{**g, "sms": None} for g in groups])
    for g in groups:
        g["duration_ns"] = _duration(g, DURATION_METRICS, UNIT_NS)
        g["device"] = dmap[(g["device"], g["host"])]
        g.pop("cc")
    total = sum(g["invocations"] for g in groups)
    header = [h.strip() for h in rows[0]]
    per_gpu = header.index("Device") < header.index("Kernel Name")
    meta.update({"layout": f"summary (--print-summary per-{'gpu' if per_gpu else 'kernel'})",
                 "summary_only": True, "untimed_kernels": True,
                 "kernel_summary": groups, "invocations": total})
    meta.pop("synthetic_timeline", None)
    meta["clock"] = "none: a summary of each kernel's launches, no per-launch times"
    meta["warnings"].append(
        f"{path}: an Nsight Compute --print-summary file: {len(groups)} kernels by name, "
        f"{total} launches, each metric's minimum, maximum and average per kernel; no "
        "per-launch rows and no timeline, so the kernel table is empty (the figures are "
        "in the kernel summary)")
    if dropped:
        meta["warnings"].append(f"{path}: left out {dropped} summary rows whose values are "
                                "not finite numbers")
    _process(meta, groups)
    return Trace(devices=devices, meta=meta)


def _groups(path: Path, rows: list[list[str]], where: list[int]
            ) -> tuple[list[dict[str, Any]], int]:
    """One dict per kernel (identity columns) with its metrics; rows left out (inf)."""
    header = [h.strip() for h in rows[0]]
    col = {h: i for i, h in reversed(list(enumerate(header)))}
    groups: dict[tuple, dict[str, Any]] = {}
    dropped = 0
    for r, line in zip(rows[1:], where[1:]):
        if r and r[0].strip() == "Process ID":
            continue
        if len(r) < len(header):
            raise TraceFormatError(path, f"line {line}", f"{len(header)} fields like the "
                                   "header", f"{len(r)}")
        get = {c: r[col[c]].strip() for c in SUMMARY_IDENT + SUMMARY_METRIC}
        inv = to_number(get["Invocations"])
        if inv is None or inv < 0 or inv != int(inv):
            raise TraceFormatError(path, f"line {line}", "a launch count in column "
                                   "Invocations", repr(get["Invocations"][:40]))
        g = groups.setdefault(tuple(get[c] for c in SUMMARY_IDENT), {
            "name": get["Kernel Name"], "pid": get["Process ID"], "process":
            get["Process Name"], "host": get["Host Name"], "device": get["Device"],
            "cc": get["CC"], "block": get["Block Size"], "grid": get["Grid Size"],
            "invocations": int(inv), "metrics": []})
        vals = [to_number(get[c]) for c in ("Minimum", "Maximum", "Average")]
        if any(v is not None and not math.isfinite(v) for v in vals):
            dropped += 1
        elif any(v is not None for v in vals):     # a text value has no min/max/avg
            g["metrics"].append({"section": get["Section Name"], "metric":
                                 get["Metric Name"], "unit": get["Metric Unit"],
                                 "min": vals[0], "max": vals[1], "avg": vals[2]})
    return list(groups.values()), dropped


def _duration(g: dict[str, Any], names: tuple[str, ...], unit_ns: dict[str, float]
              ) -> dict[str, float] | None:
    """min/max/avg/total GPU time of one kernel, ns (None: no duration metric)."""
    by = {m["metric"]: m for m in g["metrics"]}
    hit = next((by[n] for n in names if n in by), None)
    scale = unit_ns.get(hit["unit"].strip().lower()) if hit else None
    if hit is None or scale is None or hit["avg"] is None:
        return None
    out = {k: (None if hit[k] is None else hit[k] * scale) for k in ("min", "max", "avg")}
    out["total"] = out["avg"] * g["invocations"]
    return out


def _process(meta: dict[str, Any], summary: list[dict[str, Any]]) -> None:
    set_process_meta(meta, (int(g["pid"]) for g in summary if g["pid"].isdigit()
                            and int(g["pid"]) < 2**31), summary)
