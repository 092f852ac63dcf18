"""One Nsight Systems SQLite export read into a Trace (the tables, links, graphs and
meta); imported by :class:`~hipscope.parsers.nsys.NsysReader` when it reads."""

from __future__ import annotations

import numpy as np

from ...model import Trace, build_table, link_by_correlation
from ...model.table import from_numpy, to_numpy
from .._common import finish_meta, new_meta
from ..base import TraceFormatError, check_cancel
from .db import GRAPH_TRACE, KERNEL, NsysDb
from .devices import DeviceMap, StreamMap
from .markers import markers
from .sniff import nsys_confidence
from .tables import Ctx, Part, api, copies, kernels

__all__ = ["CLOCK", "read_export"]

CLOCK = "nsys session clock (ns)"


def read_export(name: str, db: NsysDb, progress, cancelled) -> Trace:
    """All tables of one export as a Trace."""
    if not nsys_confidence(set(db.columns)):
        raise TraceFormatError(db.path, "sqlite_master", "the tables of an Nsight Systems "
                               "export (CUPTI_ACTIVITY_KIND_*, StringIds, NVTX_EVENTS...)",
                               "none of them")
    warnings: list[str] = []
    provenance: dict[str, str] = {}
    ctx = Ctx(db, DeviceMap(db, warnings, provenance), StreamMap(), warnings=warnings,
              provenance=provenance)
    k = kernels(ctx) if db.has(KERNEL) or db.has(GRAPH_TRACE) else Part({}, 0)
    progress(0.4)
    check_cancel(cancelled)
    a, ranks = api(ctx)
    c = copies(ctx)
    check_cancel(cancelled)
    m = markers(ctx)
    progress(0.8)
    ctx.streams.finish()
    for part in (k, c, m):
        if part.n and part.stream_key is not None:
            s = ctx.streams.lookup(*part.stream_key)
            part.cols["stream"] = from_numpy(s.astype(np.int32), s < 0)
    for part in (k, c):
        if part.n:
            idx = part.extra["api_index"] = _link(part, a, ranks)
            part.cols["api_index"] = from_numpy(idx.astype(np.int32), idx < 0)
    if k.n:
        ctx.pids.update(int(x) for x in np.unique(k.pid.values[k.pid.valid]))
    graphs = _graphs(ctx, k, a)
    trace = Trace(kernels=_table("kernels", k), api=_table("api", a),
                  copies=_table("copies", c), markers=_table("markers", m),
                  devices=ctx.devices.table(),
                  streams=build_table("streams", ctx.streams.columns()),
                  meta=_meta(name, ctx, graphs))
    progress(1.0)
    return trace


def _table(spec: str, part: Part):
    return build_table(spec, part.cols if part.n else {}, n=part.n)


def _link(part: Part, a: Part, ranks: np.ndarray) -> np.ndarray:
    """Row in api of each row's launching call: the runtime call with its correlation
    id (and pid), else the driver call."""
    out = np.full(part.n, -1, np.int64)
    if not a.n or part.corr is None:
        return out
    ranks = ranks[a.extra["order"]]
    for rank in (0, 1):
        sel = np.flatnonzero((ranks == rank) & a.corr.valid)
        if not len(sel):
            continue
        hit = link_by_correlation(part.corr.values, part.pid.values,
                                  a.corr.values[sel], a.pid.values[sel])
        take = (out < 0) & (hit >= 0) & part.corr.valid
        out[take] = sel[hit[take]]
    return out


def _graphs(ctx: Ctx, k: Part, a: Part) -> dict | None:
    """Graph facts for meta, and a warning for graph-node kernels that are not linked to
    a graph launch (queue-delay figures would then count them one by one)."""
    if not k.n or not (ctx.db.has(KERNEL, "graphNodeId") or ctx.graph_executions):
        return None
    node, gid = k.extra["graph_node"], k.extra["graph"]
    from_graph = node.valid & (node.values != 0)
    launch = np.zeros(a.n + 1, bool)                 # + 1: api_index -1 is no launch
    if a.n:
        nm = a.cols["name"]
        is_launch = np.array(["graphlaunch" in str(c).lower()
                              for c in nm.dictionary.to_pylist()] + [False])
        launch[:-1] = is_launch[to_numpy(nm.indices, 0)]
    idx = k.extra["api_index"]
    stray = int((from_graph & ~launch[idx]).sum())
    if stray:
        ctx.warnings.append(f"{stray} kernels carry a CUDA graph node id (graphNodeId) but "
                            "are not linked to a graph launch call")
    ctx.provenance["graphs"] = ("kernels with graphNodeId, and CUPTI_ACTIVITY_KIND_GRAPH_TRACE "
                                "rows (one per graph execution traced as a whole); linked "
                                "to their cudaGraphLaunch by correlationId")
    ids = gid.values[from_graph & gid.valid]
    return {"kernels_from_graph_nodes": int(from_graph.sum()),
            "graph_nodes": int(len(np.unique(node.values[from_graph]))),
            "graphs": int(len(np.unique(ids))) if ctx.db.has(KERNEL, "graphId") else None,
            "graph_launch_calls": int(launch[:-1].sum()),
            "graph_level_executions": ctx.graph_executions}


def _meta(name: str, ctx: Ctx, graphs: dict | None) -> dict:
    export = ctx.db.pairs("META_DATA_EXPORT")
    meta = new_meta(name, [ctx.db.path], CLOCK, tool="Nsight Systems",
                    pids=sorted(p for p in ctx.pids if p > 0))
    if export.get("EXPORT_PRODUCT_VERSION"):
        meta["tool_version"] = export["EXPORT_PRODUCT_VERSION"]
    if export.get("EXPORT_SCHEMA_VERSION"):
        meta["export_schema_version"] = export["EXPORT_SCHEMA_VERSION"]
    start = ctx.db.rows("TARGET_INFO_SESSION_START_TIME", ("utcEpochNs",)) if ctx.db.has(
        "TARGET_INFO_SESSION_START_TIME") else {"utcEpochNs": []}
    if start["utcEpochNs"] and isinstance(start["utcEpochNs"][0], int):
        meta["session_start_utc_ns"] = start["utcEpochNs"][0]
    if graphs:
        meta["cuda_graphs"] = graphs
    meta["provenance"] = dict(ctx.provenance)
    warnings = list(ctx.warnings)
    for what, n in ctx.dropped.items():
        if "without" in what or "before they start" in what:
            warnings.append(f"dropped {n} {what}")
    return finish_meta(meta, warnings, ctx.dropped)
