"""Counter outliers by robust z-score, and their text for ``hipscope report``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...model import Trace
from .columns import format_value
from .matrix import aggregate_by_kernel, counter_matrix


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
