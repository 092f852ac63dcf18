"""Nsight Systems markers: NVTX marks and ranges (``NVTX_EVENTS``, domain ``nvtx``) and
GPU-side synchronisation intervals (``CUPTI_ACTIVITY_KIND_SYNCHRONIZATION``, domain
``cuda_sync`` on their device and stream, as the Kineto reader gives them)."""

from __future__ import annotations

import numpy as np

from ...model import SPECS
from ...model.table import from_numpy
from .._common import add_count, group_key, nesting_depth
from .db import NVTX, SYNC, Ints, split_global_id
from .tables import I32, Ctx, Part, fetch, opt

# ENUM_NSYS_EVENT_TYPE ids of NVTX marks and ranges, for exports without that table
NVTX_TYPES = {"NvtxMark": 34, "NvtxPushPopRange": 59, "NvtxStartEndRange": 60}
# CUpti_ActivitySynchronizationType; names as the Kineto reader's cuda_sync events
SYNC_NAMES = {1: "Event Sync", 2: "Stream Wait Event", 3: "Stream Sync", 4: "Context Sync"}
# the markers table gained correlation_id (the sync's runtime call) on the integration
# branch; written only where the schema has it
_MARKER_CORR = "correlation_id" in SPECS["markers"].by_name


def markers(ctx: Ctx) -> Part:
    """NVTX and sync rows in one time order, each nesting in its own groups: push/pop
    ranges per thread, start/end ranges per thread apart, syncs per (device, stream)."""
    nv = _nvtx(ctx) if ctx.db.has(NVTX) else None
    sy = _sync(ctx) if ctx.db.has(SYNC) else None
    got = [x for x in (nv, sy) if x is not None and len(x["start"])]
    if not got:
        return Part({}, 0)

    lists = {k: [v for x in got for v in x[k]] for k in ("name", "domain")}
    order = np.lexsort((np.concatenate([x["end"] for x in got]),
                        np.concatenate([x["start"] for x in got])))
    c = {k: np.concatenate([x[k] for x in got])[order] for k in got[0] if k not in lists}
    depth = nesting_depth(c["start"], c["end"], group_key(c["kind"], c["g1"], c["g2"]))
    pid, stream = Ints(c["pid"], c["pid_ok"]), Ints(c["stream"], c["stream_ok"])
    cols = {"name": [lists["name"][i] for i in order],
            "domain": [lists["domain"][i] for i in order], "start": c["start"],
            "end": c["end"], "depth": depth, "pid": opt(pid, I32),
            "tid": opt(Ints(c["tid"], c["tid_ok"])),
            "device": from_numpy(c["device"].astype(np.int16), c["device"] < 0)}
    if _MARKER_CORR and sy is not None and len(sy["start"]):
        cols["correlation_id"] = opt(Ints(c["corr"], c["corr_ok"]))
    return Part(cols, len(order), stream_key=(pid, stream))


def _nvtx(ctx: Ctx) -> dict:
    """NVTX marks and ranges (push/pop, start/end); other NVTX events (domain and
    category registrations...) are not markers. A range that never ended is dropped."""
    f = fetch(ctx, NVTX, ("eventType", "text", "textId", "globalTid"), "NVTX events")
    types = {v: k for k, v in ctx.db.enum("ENUM_NSYS_EVENT_TYPE").items()}
    mark = types.get("NvtxMark", NVTX_TYPES["NvtxMark"])
    push_pop = types.get("NvtxPushPopRange", NVTX_TYPES["NvtxPushPopRange"])
    ranges = [push_pop, types.get("NvtxStartEndRange", NVTX_TYPES["NvtxStartEndRange"])]
    et = f["eventType"]
    if ctx.db.has(NVTX, "eventType"):
        is_mark, is_range = et.valid & (et.values == mark), et.valid & np.isin(et.values, ranges)
    else:
        is_mark, is_range = ~f["end"].valid, f["end"].valid
    open_ = is_range & ~f["end"].valid
    if open_.any():
        ctx.warnings.append(f"dropped {int(open_.sum())} NVTX ranges that never ended "
                            "(still open when the capture stopped)")
        add_count(ctx.dropped, "NVTX ranges that never ended", int(open_.sum()))
    keep = np.flatnonzero(is_mark | (is_range & f["end"].valid))
    strings = ctx.db.strings()
    text, text_id = f["text"], f["textId"]
    name = [text[i] if text[i] is not None else
            strings.get(int(text_id.values[i]), "") if text_id.valid[i] else "" for i in keep]
    start = f["start"].values[keep]
    pid, tid = (x.take(keep) for x in split_global_id(f["globalTid"]))
    n = len(keep)
    ctx.provenance["markers"] = "NVTX_EVENTS marks and ranges; text, else StringIds[textId]"
    return {"name": name, "domain": ["nvtx"] * n, "start": start,
            "end": np.where(is_mark[keep], start, f["end"].values[keep]),
            "kind": (is_range[keep] & (et.values[keep] != push_pop)).astype(np.int64),
            "g1": np.where(pid.valid, pid.values, -1), "g2": np.where(tid.valid, tid.values, -1),
            "pid": pid.values, "pid_ok": pid.valid, "tid": tid.values, "tid_ok": tid.valid,
            "device": np.full(n, -1, np.int64), "stream": np.zeros(n, np.int64),
            "stream_ok": np.zeros(n, bool), "corr": np.zeros(n, np.int64),
            "corr_ok": np.zeros(n, bool)}


def _sync(ctx: Ctx) -> dict:
    """Synchronisation records: GPU-side intervals on their device and stream."""
    f = fetch(ctx, SYNC, ("deviceId", "streamId", "correlationId", "globalPid", "syncType"),
              "synchronisation records")
    pid, _tid = split_global_id(f["globalPid"])
    enum = ctx.db.enum("ENUM_CUPTI_SYNC_TYPE")
    st = f["syncType"]
    name = [SYNC_NAMES.get(t, enum.get(t, f"Sync type {t}")) if ok else "Sync"
            for t, ok in zip(st.values.tolist(), st.valid)]
    device = ctx.devices.resolve(pid, f["deviceId"])
    ctx.streams.add(pid, f["streamId"], device)
    n = len(name)
    ctx.provenance["markers.cuda_sync"] = (
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: GPU-side sync intervals on their device and "
        "stream; correlationId is the runtime call (cudaStreamSynchronize...)")
    return {"name": name, "domain": ["cuda_sync"] * n, "start": f["start"].values,
            "end": f["end"].values, "kind": np.full(n, 2, np.int64), "g1": device,
            "g2": np.where(f["streamId"].valid, f["streamId"].values, -1),
            "pid": pid.values, "pid_ok": pid.valid, "tid": np.zeros(n, np.int64),
            "tid_ok": np.zeros(n, bool), "device": device, "stream": f["streamId"].values,
            "stream_ok": f["streamId"].valid, "corr": f["correlationId"].values,
            "corr_ok": f["correlationId"].valid}
