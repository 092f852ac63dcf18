"""Nsight Systems export tables -> hipscope columns: kernels, API calls (runtime, driver)
and copies (memcpy, memset); markers are in ``markers.py``. Every table is put in time
order here (2025.6+ exports are not sorted); links are made after that."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ...model import categorical
from ...model.table import from_numpy
from .._common import add_count, copy_direction
from .._csv import fit
from .db import (DRIVER, GRAPH_TRACE, KERNEL, MEMCPY, MEMSET, RUNTIME, Ints, NsysDb,
                 split_global_id, time_order)
from .devices import DeviceMap, StreamMap

I16, I32, I64 = (-(1 << 15), (1 << 15) - 1), (-(1 << 31), (1 << 31) - 1), (-(1 << 63),
                                                                            (1 << 63) - 1)
# CUpti_ActivityMemcpyKind, for exports without ENUM_CUDA_MEMCPY_OPER
MEMCPY_KINDS = {0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA",
                6: "AtoD", 7: "DtoA", 8: "DtoD", 9: "HtoH", 10: "PtoP"}

@dataclass
class Ctx:
    db: NsysDb
    devices: DeviceMap
    streams: StreamMap
    warnings: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    provenance: dict[str, str] = field(default_factory=dict)
    pids: set[int] = field(default_factory=set)
    graph_executions: int = 0


@dataclass
class Part:
    """One table's rows in time order: columns for build_table, and what links need."""
    cols: dict[str, Any]
    n: int
    corr: Ints | None = None
    pid: Ints | None = None
    stream_key: tuple[Ints, Ints] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def fetch(ctx: Ctx, table: str, cols: tuple[str, ...], what: str) -> dict[str, Ints | list]:
    """Columns of ``table`` in time order, rows without start/end dropped (counted).
    Integer columns become :class:`Ints`; ``*Name``/``text`` columns stay lists."""
    out: dict[str, Any] = ctx.db.fetch(table, ("start", "end", *cols), text=("text",))
    start, end = out["start"], out["end"]
    keep = start.valid & (end.valid if what != "NVTX events" else np.ones_like(end.valid))
    add_count(ctx.dropped, f"{what} without a start or end", int((~keep).sum()))
    # open_trace drops these too, but read() alone must give a valid trace (fuzz tests)
    backwards = keep & end.valid & (end.values < start.values)
    add_count(ctx.dropped, f"{what} that end before they start", int(backwards.sum()))
    keep &= ~backwards
    idx = np.flatnonzero(keep)
    order = idx[time_order(start.take(idx), end.take(idx))]
    return {c: (v.take(order) if isinstance(v, Ints) else [v[i] for i in order])
            for c, v in out.items()}


def names(ctx: Ctx, ids: Ints, what: str) -> pa.DictionaryArray:
    """Names of StringIds ids as a categorical; an id missing there is warned about."""
    strings = ctx.db.strings()
    uniq, inv = np.unique(ids.values, return_inverse=True)
    cats, missing = [], 0
    for u in uniq.tolist():
        s = strings.get(u)
        if s is None:
            missing += int((ids.values == u).sum())
            s = f"<string id {u}>"
        cats.append(s)
    if missing:
        ctx.warnings.append(f"{missing} {what} name a string id that StringIds does not "
                            "hold; they are named <string id N>")
    return categorical(inv.reshape(-1).astype(np.int32), cats)


def opt(x: Ints, bounds=I64) -> pa.Array:
    return fit(x.values, x.valid, bounds)[0]


def _ids_first(f: dict, *cols: str) -> Ints:
    """The first of several name-id columns that is set, per row."""
    out = f[cols[0]]
    for c in cols[1:]:
        out = Ints(np.where(out.valid, out.values, f[c].values), out.valid | f[c].valid)
    return out


def kernels(ctx: Ctx) -> Part:
    cols = ("deviceId", "streamId", "correlationId", "globalPid", "demangledName",
            "shortName", "mangledName", "registersPerThread", "gridX", "gridY", "gridZ",
            "blockX", "blockY", "blockZ", "staticSharedMemory", "dynamicSharedMemory",
            "localMemoryPerThread", "graphNodeId", "graphId")
    f = fetch(ctx, KERNEL, cols, "kernels") if ctx.db.has(KERNEL) else None
    name = names(ctx, _ids_first(f, "demangledName", "shortName", "mangledName"),
                 "kernels") if f else None
    if ctx.db.has(GRAPH_TRACE):
        f, name = _with_graph_executions(ctx, f, name, cols)
    pid, _tid = split_global_id(f["globalPid"])
    device = ctx.devices.resolve(pid, f["deviceId"])
    ctx.streams.add(pid, f["streamId"], device)
    n = len(device)
    out = {"name": name, "device": device,
           "start": f["start"].values, "end": f["end"].values, "pid": opt(pid, I32),
           "correlation_id": opt(f["correlationId"]), "registers": opt(
               f["registersPerThread"], I16), "lds_bytes": opt(f["staticSharedMemory"], I32),
           "dyn_lds_bytes": opt(f["dynamicSharedMemory"], I32),
           "scratch_bytes": opt(f["localMemoryPerThread"], I32)}
    for ax, lim in (("x", I64), ("y", I32), ("z", I32)):
        g, b = f["grid" + ax.upper()], f["block" + ax.upper()]
        out[f"block_{ax}"] = opt(b, I16)
        out[f"grid_{ax}"] = fit(g.values * b.values, g.valid & b.valid, lim)[0]
    ctx.provenance.update({
        "kernels.name": "StringIds value of demangledName (else shortName, mangledName)",
        "grid_x": "gridX (blocks) x blockX (threads per block): work-items",
        "lds_bytes": "staticSharedMemory", "dyn_lds_bytes": "dynamicSharedMemory",
        "scratch_bytes": "localMemoryPerThread", "registers": "registersPerThread"})
    if device.min(initial=0) < 0:
        raise_bad(ctx, KERNEL, "deviceId")
    return Part(out, n, f["correlationId"], pid, (pid, f["streamId"]),
                {"graph_node": f["graphNodeId"], "graph": f["graphId"]})


def _with_graph_executions(ctx: Ctx, f: dict | None, name, cols: tuple[str, ...]):
    """Kernel rows plus one row per graph execution traced at graph level
    (``--cuda-graph-trace=graph``, nsys' default: the graph's kernels are not recorded),
    named "CUDA graph <graphId>", so that the GPU is not taken for idle while it runs."""
    g = fetch(ctx, GRAPH_TRACE, cols, "graph executions")
    n = len(g["start"].values)
    if not n:
        return (f, name) if f else (g, [])
    gid = g["graphId"]
    g_names = [f"CUDA graph {x}" if ok else "CUDA graph"
               for x, ok in zip(gid.values.tolist(), gid.valid)]
    ctx.graph_executions = n
    ctx.warnings.append(
        f"{n} CUDA graph executions were traced as a whole (--cuda-graph-trace=graph): each "
        "is one kernel row spanning its graph, without the graph's kernels; trace with "
        "--cuda-graph-trace=node to see them")
    if f is None:
        return g, g_names
    both = {c: Ints(np.concatenate([f[c].values, g[c].values]),
                    np.concatenate([f[c].valid, g[c].valid])) for c in f}
    all_names = name.to_pylist() + g_names
    order = time_order(both["start"], both["end"])
    return {c: v.take(order) for c, v in both.items()}, [all_names[i] for i in order]


def raise_bad(ctx: Ctx, table: str, col: str):
    from ..base import TraceFormatError
    raise TraceFormatError(ctx.db.path, f"table {table}, column {col}",
                           "a CUDA device id (0..32767) in every row", "rows without one")


def api(ctx: Ctx) -> tuple[Part, np.ndarray]:
    """Runtime and driver calls in one time order; also each row's table (0 runtime,
    1 driver, in file order) for linking. Synchronisation records are markers."""
    parts, ranks = [], []
    for rank, (table, domain) in enumerate(((RUNTIME, "cuda_runtime"),
                                            (DRIVER, "cuda_driver"))):
        if not ctx.db.has(table):
            continue
        f = fetch(ctx, table, ("globalTid", "correlationId", "nameId"), f"{domain} calls")
        pid, tid = split_global_id(f["globalTid"])
        nm = names(ctx, f["nameId"], f"{domain} calls")
        parts.append((f["start"], f["end"], nm, domain, pid, tid, f["correlationId"]))
        ranks.append(np.full(len(nm), rank))
    return _join_api(ctx, parts), (np.concatenate(ranks) if ranks else np.zeros(0, int))


def _join_api(ctx: Ctx, parts: list[tuple]) -> Part:
    if not parts:
        return Part({}, 0)
    start, end, pid, tid, corr = (Ints(np.concatenate([p[i].values for p in parts]),
                                       np.concatenate([p[i].valid for p in parts]))
                                  for i in (0, 1, 4, 5, 6))
    order = time_order(start, end)
    pid, tid, corr = pid.take(order), tid.take(order), corr.take(order)
    nm = pa.concat_arrays(pa.chunked_array([p[2] for p in parts]).unify_dictionaries().chunks)
    dom = np.repeat(np.arange(len(parts), dtype=np.int32), [len(p[2]) for p in parts])
    ctx.pids.update(int(x) for x in np.unique(pid.values[pid.valid]))
    cols = {"name": nm.take(from_numpy(order)),
            "domain": categorical(dom[order], [p[3] for p in parts]),
            "start": start.values[order], "end": end.values[order],
            "pid": opt(pid, I32), "tid": opt(tid), "correlation_id": opt(corr)}
    return Part(cols, len(order), corr, pid, None, {"order": order})


def copies(ctx: Ctx) -> Part:
    """Memcpy and memset records, in one time order."""
    cols = ("deviceId", "streamId", "correlationId", "globalPid", "bytes", "copyKind",
            "srcDeviceId", "dstDeviceId")
    parts = [fetch(ctx, t, cols, w) for t, w in ((MEMCPY, "memcpy records"),
                                                 (MEMSET, "memset records"))
             if ctx.db.has(t)]
    if not parts:
        return Part({}, 0)
    is_set = [np.full(len(p["start"].values), t == MEMSET) for p, t in
              zip(parts, [t for t in (MEMCPY, MEMSET) if ctx.db.has(t)])]
    f = {c: Ints(np.concatenate([p[c].values for p in parts]),
                 np.concatenate([p[c].valid for p in parts])) for c in ("start", "end", *cols)}
    memset = np.concatenate(is_set)
    order = time_order(f["start"], f["end"])
    f = {c: v.take(order) for c, v in f.items()}
    memset = memset[order]
    pid, _tid = split_global_id(f["globalPid"])
    device = ctx.devices.resolve(pid, f["deviceId"])
    ctx.streams.add(pid, f["streamId"], device)
    direction, label = _directions(ctx, f["copyKind"], memset)
    peer = np.array([d == "PtoP" for d in direction], bool)
    src = ctx.devices.resolve(pid, Ints(f["srcDeviceId"].values, f["srcDeviceId"].valid & peer))
    dst = ctx.devices.resolve(pid, Ints(f["dstDeviceId"].values, f["dstDeviceId"].valid & peer))
    out = {"direction": direction, "name": label, "start": f["start"].values,
           "end": f["end"].values, "bytes": opt(f["bytes"]),
           "device": from_numpy(device.astype(np.int16), device < 0),
           "src_device": from_numpy(src.astype(np.int16), src < 0),
           "dst_device": from_numpy(dst.astype(np.int16), dst < 0),
           "pid": opt(pid, I32), "correlation_id": opt(f["correlationId"])}
    ctx.provenance["copies.direction"] = ("copyKind via ENUM_CUDA_MEMCPY_OPER (else the "
                                          "CUpti_ActivityMemcpyKind values); memset records")
    return Part(out, len(order), f["correlationId"], pid, (pid, f["streamId"]))


def _directions(ctx: Ctx, kind: Ints, memset: np.ndarray) -> tuple[list[str], list[str]]:
    """Direction and name of each copy row, worked out once per distinct (memset,
    copyKind) pair."""
    enum = ctx.db.enum("ENUM_CUDA_MEMCPY_OPER")
    cls = np.where(memset, 0, np.where(kind.valid, 2, 1))   # memset, no copyKind, kind
    pairs = np.column_stack([cls, np.where(cls == 2, kind.values, 0)])
    uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
    direction, label = [], []
    for c, k in uniq.tolist():
        if c == 0:
            direction.append("memset")
            label.append("CUDA memset")
            continue
        text = (enum.get(k) or MEMCPY_KINDS.get(k, "")) if c == 2 else ""
        direction.append(copy_direction(text))
        label.append(f"CUDA memcpy {MEMCPY_KINDS.get(k) or enum.get(k) or 'Unknown'}")
    inv = inv.reshape(-1)
    return (np.array(direction, dtype=object)[inv].tolist(),
            np.array(label, dtype=object)[inv].tolist())
