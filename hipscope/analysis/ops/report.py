"""``hipscope report --ops``: per launching-op name, what it cost on the host and on
the GPU (data only; :func:`format_ops_text` is the plain-text form)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...model import Trace
from ...model.units import fmt_duration
from ..kernel_class import CLASSES
from .attribute import ATTRIBUTED, NO_CALL, NO_OP, OpAttribution, attribute


def _per_name(att: OpAttribution) -> tuple[np.ndarray, int]:
    """Dense name id per op (by name string: one name may have several codes)."""
    f = att.forest
    labels = np.array(f.names, dtype=object) if f.names else np.zeros(0, object)
    uniq, inv = np.unique(labels, return_inverse=True) if len(labels) else (labels, labels)
    return (inv.reshape(-1)[f.name] if len(f) else np.zeros(0, np.int64)), len(uniq)


def op_rows(att: OpAttribution) -> list[dict[str, Any]]:
    """One row per op name that launched GPU work, by GPU time (largest first):
    name, count (instances of the name), cpu_ns (their summed durations), gpu_ns
    (kernels + copies they launched themselves), kernels (how many), kernels_per_call,
    classes {class: ns}."""
    f = att.forest
    if len(f) == 0:
        return []
    name_id, n_names = _per_name(att)
    count = np.bincount(name_id, minlength=n_names)
    cpu = np.bincount(name_id, weights=(f.end - f.start).astype(np.float64), minlength=n_names)
    op, _, ns, cls = att.events()
    ok = op >= 0
    ev_name = name_id[op[ok]]
    gpu = np.bincount(ev_name, weights=ns[ok], minlength=n_names)
    kernels = np.bincount(ev_name, minlength=n_names)
    by_cls = np.bincount(ev_name * len(CLASSES) + cls[ok].astype(np.int64), weights=ns[ok],
                         minlength=n_names * len(CLASSES)).reshape(n_names, len(CLASSES))
    first = np.zeros(n_names, np.int64)
    first[name_id[::-1]] = np.arange(len(f))[::-1]      # any op of each name, for its text
    rows: list[dict[str, Any]] = []
    for i in np.nonzero(kernels)[0]:
        rows.append({
            "name": f.name_of(int(first[i])), "count": int(count[i]),
            "cpu_ns": int(cpu[i]), "gpu_ns": int(gpu[i]), "kernels": int(kernels[i]),
            "kernels_per_call": float(kernels[i] / count[i]),
            "classes": {c: int(v) for c, v in zip(CLASSES, by_cls[i]) if v > 0},
        })
    rows.sort(key=lambda r: (-int(r["gpu_ns"]), str(r["name"])))
    return rows


def ops_report(trace: Trace, att: OpAttribution | None = None,
               top: int | None = None) -> dict[str, Any]:
    """``{"ops": rows, "ops_unattributed_gpu_ns", "ops_attributed_gpu_ns",
    "ops_unattributed": {"no_launch_call"|"outside_ops": {"count", "gpu_ns"}}}``."""
    att = attribute(trace) if att is None else att
    _, status, ns, _ = att.events()
    rows = op_rows(att)
    parts = {key: {"count": int((status == s).sum()), "gpu_ns": int(ns[status == s].sum())}
             for key, s in (("no_launch_call", NO_CALL), ("outside_ops", NO_OP))}
    return {
        "ops": rows if top is None else rows[:top],
        "ops_attributed_gpu_ns": int(ns[status == ATTRIBUTED].sum()),
        "ops_unattributed_gpu_ns": int(ns[status != ATTRIBUTED].sum()),
        "ops_unattributed": parts,
        "ops_count": len(att.forest),
    }


def format_ops_text(rep: dict[str, Any], name_width: int = 60) -> str:
    """The ops table for people."""
    if not rep["ops_count"]:
        return "Ops: the trace has no host ops (cpu_op, annotations, roctx/NVTX ranges)."
    lines = [f"{'GPU time':>12} {'CPU time':>12} {'calls':>8} {'kernels':>8} {'k/call':>7}"
             "  Op (launching op, by GPU time)   top classes"]
    for r in rep["ops"]:
        name = r["name"] if len(r["name"]) <= name_width else r["name"][:name_width - 3] + "..."
        top = sorted(r["classes"].items(), key=lambda kv: -kv[1])[:2]
        cls = ", ".join(f"{c} {v / max(r['gpu_ns'], 1):.0%}" for c, v in top)
        lines.append(f"{fmt_duration(r['gpu_ns']):>12} {fmt_duration(r['cpu_ns']):>12} "
                     f"{r['count']:>8,} {r['kernels']:>8,} {r['kernels_per_call']:>7.2f}"
                     f"  {name:<{name_width}}  {cls}")
    u = rep["ops_unattributed"]
    lines.append(f"Unattributed GPU time: {fmt_duration(rep['ops_unattributed_gpu_ns'])} "
                 f"({u['no_launch_call']['count']:,} without a recorded launch call, "
                 f"{u['outside_ops']['count']:,} launched outside every op)")
    return "\n".join(lines)
