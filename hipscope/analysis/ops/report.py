"""``hipscope report --ops``: per launching-op name, what it cost on the host and on
the GPU (data only; :func:`format_ops_text` is the plain-text form)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...model import Trace
from ...model.units import fmt_duration
from ..kernel_class import CLASSES
from .attribute import ATTRIBUTED, NO_CALL, NO_OP, OpAttribution, attribute


def _groups(att: OpAttribution, by_shapes: bool) -> tuple[np.ndarray, int]:
    """Dense group id per op: by name string (one name may have several codes), and
    by input shapes too with ``by_shapes`` (when the trace has them)."""
    f = att.forest
    labels = np.array(f.names, dtype=object) if f.names else np.zeros(0, object)
    _, inv = np.unique(labels, return_inverse=True)
    gid = inv.reshape(-1)[f.name].astype(np.int64)
    if by_shapes and f.shape is not None:
        gid = gid * (len(f.shape_names) + 1) + (f.shape + 1)
    uniq, dense = np.unique(gid, return_inverse=True)
    return dense.reshape(-1), len(uniq)


def nested_in_same(parent: np.ndarray, gid: np.ndarray) -> np.ndarray:
    """Per op: whether an op of its own group encloses it (``aten::sum`` inside
    ``aten::sum``): such a call is part of the outer one, not another call."""
    out = np.zeros(len(gid), bool)
    idx = np.nonzero(parent >= 0)[0]
    up = parent[idx]
    while len(idx):
        out[idx] |= gid[up] == gid[idx]
        keep = ~out[idx] & (parent[up] >= 0)
        idx, up = idx[keep], parent[up[keep]]
    return out


def op_rows(att: OpAttribution, by_shapes: bool = False) -> list[dict[str, Any]]:
    """One row per op name (per name and input shapes with ``by_shapes``) that
    launched GPU work, by GPU time (largest first): name, count (calls: instances
    not inside an instance of the same row), cpu_ns (those calls' summed durations),
    gpu_ns (kernels + copies the row's ops launched themselves), kernels (how many),
    kernels_per_call, classes {class: ns} (and shapes: the input shapes text, ''
    for none)."""
    f = att.forest
    if len(f) == 0:
        return []
    gid, n = _groups(att, by_shapes)
    outer = ~nested_in_same(f.parent, gid)
    count = np.bincount(gid[outer], minlength=n)
    cpu = np.bincount(gid[outer], weights=(f.end - f.start)[outer].astype(np.float64),
                      minlength=n)
    op, _, ns, cls = att.events()
    ok = op >= 0
    ev_g = gid[op[ok]]
    gpu = np.bincount(ev_g, weights=ns[ok], minlength=n)
    kernels = np.bincount(ev_g, minlength=n)
    graph = np.bincount(ev_g, weights=att.graph_events()[ok], minlength=n)
    by_cls = np.bincount(ev_g * len(CLASSES) + cls[ok].astype(np.int64), weights=ns[ok],
                         minlength=n * len(CLASSES)).reshape(n, len(CLASSES))
    first = np.zeros(n, np.int64)
    first[gid[::-1]] = np.arange(len(f))[::-1]      # any op of each group, for its text
    rows: list[dict[str, Any]] = []
    for i in np.nonzero(kernels)[0]:
        row = {
            "name": f.name_of(int(first[i])), "count": int(count[i]),
            "cpu_ns": int(cpu[i]), "gpu_ns": int(gpu[i]), "kernels": int(kernels[i]),
            "kernels_per_call": float(kernels[i] / count[i]),
            "graph_kernels": int(graph[i]),
            "classes": {c: int(v) for c, v in zip(CLASSES, by_cls[i]) if v > 0},
        }
        if by_shapes:
            row["shapes"] = f.shape_of(int(first[i]))
        rows.append(row)
    rows.sort(key=lambda r: (-int(r["gpu_ns"]), str(r["name"]), str(r.get("shapes", ""))))
    return rows


def ops_report(trace: Trace, att: OpAttribution | None = None, top: int | None = None,
               by_shapes: bool = False) -> dict[str, Any]:
    """``{"ops": rows, "ops_unattributed_gpu_ns", "ops_attributed_gpu_ns",
    "ops_unattributed": {"no_launch_call"|"outside_ops": {"count", "gpu_ns"}},
    "ops_count", "ops_shapes"}`` (``ops_shapes``: whether the trace has input shapes)."""
    att = attribute(trace) if att is None else att
    _, status, ns, _ = att.events()
    rows = op_rows(att, by_shapes)
    parts = {key: {"count": int((status == s).sum()), "gpu_ns": int(ns[status == s].sum())}
             for key, s in (("no_launch_call", NO_CALL), ("outside_ops", NO_OP))}
    return {
        "ops": rows if top is None else rows[:top],
        "ops_attributed_gpu_ns": int(ns[status == ATTRIBUTED].sum()),
        "ops_unattributed_gpu_ns": int(ns[status != ATTRIBUTED].sum()),
        "ops_unattributed": parts,
        "ops_count": len(att.forest),
        "ops_shapes": att.forest.shape is not None,
    }


def _graph_tag(row: dict[str, Any]) -> str:
    """' [graph launch]' when the op's GPU work was replayed from a graph (its kernels
    ran for the graph launch inside the op, not for the op's own launches)."""
    g = row.get("graph_kernels") or 0
    if not g:
        return ""
    return " [graph launch]" if g == row["kernels"] else f" [graph launch: {g:,}]"


def format_ops_text(rep: dict[str, Any], name_width: int = 60) -> str:
    """The ops table for people."""
    if not rep["ops_count"]:
        return "Ops: the trace has no host ops (cpu_op, annotations, roctx/NVTX ranges)."
    lines = [f"{'GPU time':>12} {'CPU time':>12} {'calls':>8} {'kernels':>8} {'k/call':>7}"
             "  Op (launching op, by GPU time)   top classes"]
    for r in rep["ops"]:
        label, tag = r["name"] + (f" {r['shapes']}" if r.get("shapes") else ""), _graph_tag(r)
        room = name_width - len(tag)
        name = (label if len(label) <= room else label[:room - 3] + "...") + tag
        top = sorted(r["classes"].items(), key=lambda kv: -kv[1])[:2]
        cls = ", ".join(f"{c} {v / max(r['gpu_ns'], 1):.0%}" for c, v in top)
        lines.append(f"{fmt_duration(r['gpu_ns']):>12} {fmt_duration(r['cpu_ns']):>12} "
                     f"{r['count']:>8,} {r['kernels']:>8,} {r['kernels_per_call']:>7.2f}"
                     f"  {name:<{name_width}}  {cls}")
    if rep["ops"] and "shapes" in rep["ops"][0] and not rep["ops_shapes"]:
        lines.append("(the trace records no input shapes: rows are per op name)")
    u = rep["ops_unattributed"]
    lines.append(f"Unattributed GPU time: {fmt_duration(rep['ops_unattributed_gpu_ns'])} "
                 f"({u['no_launch_call']['count']:,} without a recorded launch call, "
                 f"{u['outside_ops']['count']:,} launched outside every op)")
    return "\n".join(lines)
