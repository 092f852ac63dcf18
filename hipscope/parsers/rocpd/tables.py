"""The trace of one rocpd database, view by view."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...model import Trace, build_table, link_by_correlation
from ...model.table import from_numpy, scalar, to_numpy
from .._common import (
    copy_directions,
    devices_table,
    group_key,
    nesting_depth,
    new_meta,
    warn,
)
from ..base import TraceFormatError, check_cancel
from .counters import COUNTER_QUERY, counters_table
from .dangling import warn_lost
from .db import LEGACY_TABLES, Db, as_int, as_str, distinct_rows, masked, release_freed
from .graphs import graph_launches, launch_kernels, warn_short_replays
from .hip_events import DOMAIN as HIP_EVENT_DOMAIN
from .hip_events import hip_event_rows
from .kernels import kernel_query, read_kernels
from .physical import (
    Physical,
    encoded_names,
    is_in_strings,
    open_physical,
    take_names,
    take_strings,
)
from .process_rank import process_rank
from .spm import spm_samples
from .version import check_schema_version

__all__ = ["read_db"]

_MARKER_CATEGORIES = ("MARKER_CORE_API", "MARKER_CORE_RANGE_API")


class _Guids:
    """guid text -> small int, shared by every view of one database."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def __call__(self, arr: pa.Array | None, n: int) -> np.ndarray:
        dict_type = arr is not None and pa.types.is_dictionary(arr.type)
        enc = arr if dict_type else pc.dictionary_encode(as_str(arr, n))
        lut = np.array([self.codes.setdefault(v, len(self.codes))
                        for v in enc.dictionary.to_pylist()] + [-1], dtype=np.int64)
        idx = to_numpy(enc.indices, len(lut) - 1)
        return lut[idx]


def _processes(db: Db, meta: dict[str, Any]) -> dict[int, str]:
    """Metadata, pids, command, hosts (node id -> hostname) into meta."""
    if db.has("rocpd_metadata"):
        md = db.fetch("rocpd_metadata", ["tag", "value"])
        if len(md.get("tag", [])):
            meta["rocpd_metadata"] = dict(zip(as_str(md["tag"], 0).to_pylist(),
                                              as_str(md["value"], 0).to_pylist()))
    host_of_nid: dict[int, str] = {}
    if db.has("processes"):
        pr = db.fetch("processes", ["guid", "nid", "pid", "init", "fini", "start", "end",
                                    "command", "hostname"])
        n = len(next(iter(pr.values()))) if pr else 0
        pids = [int(p) for p in as_int(pr.get("pid"), n).tolist() if p >= 0]
        meta["pids"] = sorted(set(pids))
        cmds = [c for c in as_str(pr.get("command"), n).to_pylist() if c]
        if cmds:
            meta["command"] = cmds[0] if len(set(cmds)) == 1 else sorted(set(cmds))
        hosts = as_str(pr.get("hostname"), n).to_pylist()
        for nid, h in zip(as_int(pr.get("nid"), n).tolist(), hosts):
            if h:
                host_of_nid[nid] = h
        if len(set(h for h in hosts if h)) == 1:
            meta["host"] = next(h for h in hosts if h)
        for key in ("init", "fini"):
            v = [x for x in as_int(pr.get(key), n).tolist() if x >= 0]
            if v:
                meta[f"{key}_time"] = min(v) if key == "init" else max(v)
    if db.has("rocpd_info_node") and not host_of_nid:
        nd = db.fetch("rocpd_info_node", ["id", "hostname"])
        n = len(next(iter(nd.values())))
        for nid, h in zip(as_int(nd.get("id"), n).tolist(), as_str(nd.get("hostname"), n)
                          .to_pylist()):
            if h:
                host_of_nid[nid] = h
    return host_of_nid


def _agent_row(i: int, key: tuple[int, int], index: int, a: dict, host_of_nid: dict) -> dict:
    ext: dict[str, Any] = {}
    if a["ext"][i]:
        try:
            ext = json.loads(a["ext"][i])
            if not isinstance(ext, dict):
                ext = {}
        except ValueError:
            ext = {}
    mem = ext.get("mem_banks")
    mem_bytes = None
    if isinstance(mem, list):
        mem_bytes = sum(int(b.get("size_in_bytes", 0)) for b in mem
                        if isinstance(b, dict)) or None
    cu = ext.get("cu_count")
    return {
        "index": index,
        "name": a["prod"][i] or a["names"][i] or f"GPU {a['log'][i]}",
        "vendor": "AMD", "arch": a["names"][i] or None,
        "compute_units": int(cu) if isinstance(cu, int) and cu > 0 else None,
        "raw_id": str(key[1]), "host": host_of_nid.get(key[0]),
        "memory_bytes": mem_bytes,
    }


def _devices(db: Db, host_of_nid: dict[int, str]):
    """GPU agents -> devices; and a mapper (node id, absolute index) -> device."""
    ag = db.fetch("rocpd_info_agent",
                  ["guid", "nid", "id", "type", "absolute_index", "logical_index",
                   "type_index", "name", "product_name", "extdata"],
                  where="WHERE \"type\" = 'GPU'", required=["type"])
    na = len(next(iter(ag.values())))
    a_nid = as_int(ag.get("nid"), na, 0)
    a_abs = as_int(ag.get("absolute_index"), na)
    a_abs = np.where(a_abs < 0, as_int(ag.get("id"), na), a_abs)
    a = {"log": as_int(ag.get("logical_index"), na),
         "names": as_str(ag.get("name"), na).to_pylist(),
         "prod": as_str(ag.get("product_name"), na).to_pylist(),
         "ext": as_str(ag.get("extdata"), na).to_pylist()}
    dev_key: dict[tuple[int, int], int] = {}
    dev_rows: list[dict[str, Any]] = []
    for i in sorted(range(na), key=lambda i: (a_nid[i], a_abs[i])):
        key = (int(a_nid[i]), int(a_abs[i]))
        if key in dev_key:
            continue
        dev_key[key] = len(dev_rows)
        dev_rows.append(_agent_row(i, key, len(dev_rows), a, host_of_nid))

    def to_device(nid: np.ndarray, absidx: np.ndarray) -> np.ndarray:
        out = np.full(len(absidx), -1, np.int64)
        for (kn, ka), d in dev_key.items():
            out[(absidx == ka) & ((nid == kn) | (nid < 0))] = d
        return out

    return to_device, dev_rows


def _with_message(names: pa.Array, cols: dict, n: int, rows=None) -> pa.Array:
    """roctx text (extdata.message) where there is one, else the name."""
    if "message" not in cols:
        return names
    msg = as_str(cols["message"], n)
    if rows is not None:
        msg = msg.take(rows)
    return pc.if_else(pc.fill_null(pc.greater(pc.utf8_length(msg), scalar(0)), scalar(False)),
                      msg, names)


def _regions_query(db: Db) -> tuple:
    """fetch() arguments for the regions view."""
    return (["guid", "category", "name", "pid", "tid", "start", "end", "stack_id"], "",
            ["category", "name", "start", "end"],
            {"message": "CASE WHEN category LIKE 'MARKER%' THEN "
                        "json_extract(extdata, '$.message') END"}
            if db.has("regions") and "extdata" in db.columns("regions") else None)


def _regions(db: Db, guids: _Guids, warnings: list[str], phys: Physical | None,
             to_device):
    """API calls and roctx ranges (regions), plus instant marks (samples)."""
    rg = phys.regions() if phys is not None else db.fetch("regions", *_regions_query(db))
    nr = len(rg["start"])
    warn_lost(db, "regions", "rocpd_region", nr, "regions (API calls, roctx ranges)",
              warnings)
    r_cat = rg["category"]
    r_cat = r_cat if pa.types.is_dictionary(r_cat.type) else as_str(r_cat, nr)
    no_cat = int(r_cat.null_count)
    if no_cat:  # category_id points nowhere (the view's subquery gives NULL)
        warn(warnings, "rocpd.no_category",
             f"{db.path}: {no_cat} regions have no category (their category_id is not in "
             "rocpd_string); they are API calls of domain 'unknown'", db.path)
    r_cat = (encoded_names(r_cat, "unknown") if pa.types.is_dictionary(r_cat.type)
             else pc.fill_null(r_cat, scalar("unknown")) if no_cat else r_cat)
    is_marker = is_in_strings(r_cat, _MARKER_CATEGORIES)
    r_guid = guids(rg.get("guid"), nr)
    r_start, r_end = as_int(rg["start"], nr, 0), as_int(rg["end"], nr, 0)
    r_stack = as_int(rg.get("stack_id"), nr)
    r_pid, r_tid = as_int(rg.get("pid"), nr), as_int(rg.get("tid"), nr)
    api_rows = np.nonzero(~is_marker)[0]
    a_take = from_numpy(api_rows.astype(np.int64))
    api_stack = r_stack[api_rows]
    api = build_table("api", {
        "name": take_names(rg["name"], a_take, nr),
        "domain": take_names(r_cat, a_take, nr),
        "start": r_start[api_rows], "end": r_end[api_rows],
        "pid": masked(r_pid[api_rows]), "tid": masked(r_tid[api_rows]),
        "correlation_id": masked(api_stack),
    }, n=len(api_rows))
    mk_rows = np.nonzero(is_marker)[0]
    m_take = from_numpy(mk_rows.astype(np.int64))
    m = {"name": _with_message(take_strings(rg["name"], m_take, nr), rg, nr, m_take),
         "start": r_start[mk_rows], "pid": r_pid[mk_rows], "tid": r_tid[mk_rows]}
    m["end"] = r_end[mk_rows]
    _add_samples(db, m)
    hip = hip_event_rows(db, guids, to_device, warnings)
    return api, _marker_table(m, hip), api_stack, r_guid[api_rows]


def _add_samples(db: Db, m: dict) -> None:
    """Instant roctx marks are samples (start == end)."""
    if not db.has("samples"):
        return
    sm_cols = db.columns("samples")
    sm = db.fetch("samples", ["category", "name", "pid", "tid", "timestamp"],
                  where="WHERE category IN ('MARKER_CORE_API', 'MARKER_CORE_RANGE_API')",
                  extra={"message": "json_extract(extdata, '$.message')"}
                  if "extdata" in sm_cols else None)
    ns = len(sm.get("timestamp", []))
    if not ns:
        return
    s_names = _with_message(as_str(sm.get("name"), ns), sm, ns)
    ts = as_int(sm["timestamp"], ns, 0)
    m["name"] = pa.concat_arrays([m["name"].cast(pa.string()), s_names.cast(pa.string())])
    m["start"] = np.concatenate([m["start"], ts])
    m["end"] = np.concatenate([m["end"], ts])
    m["pid"] = np.concatenate([m["pid"], as_int(sm.get("pid"), ns)])
    m["tid"] = np.concatenate([m["tid"], as_int(sm.get("tid"), ns)])


def _marker_table(m: dict, hip: dict | None):
    """roctx ranges and marks, then the HIP event records on their GPU streams (each
    kind nesting among its own: a barrier never shifts a range's depth)."""
    nm = len(m["start"])
    if hip is None:
        return build_table("markers", {
            "name": m["name"], "domain": ["roctx"] * nm, "start": m["start"], "end": m["end"],
            "depth": nesting_depth(m["start"], m["end"], group_key(m["pid"], m["tid"])),
            "pid": masked(m["pid"]), "tid": masked(m["tid"]),
        }, n=nm)
    nh = len(hip["start"])
    start, end = np.concatenate([m["start"], hip["start"]]), np.concatenate([m["end"],
                                                                            hip["end"]])
    none = np.full(nm, -1, np.int64)
    kind = np.concatenate([np.zeros(nm, np.int64), np.ones(nh, np.int64)])
    group = group_key(kind, np.concatenate([m["pid"], hip["device"]]),
                      np.concatenate([m["tid"], hip["stream"]]))
    return build_table("markers", {
        "name": pa.concat_arrays([m["name"].cast(pa.string()), hip["name"]]),
        "domain": ["roctx"] * nm + [HIP_EVENT_DOMAIN] * nh, "start": start, "end": end,
        "depth": nesting_depth(start, end, group),
        "pid": masked(np.concatenate([m["pid"], hip["pid"]])),
        "tid": masked(np.concatenate([m["tid"], np.full(nh, -1, np.int64)])),
        "device": masked(np.concatenate([none, hip["device"]])),
        "stream": masked(np.concatenate([none, hip["stream"]])),
        "correlation_id": masked(np.concatenate([none, hip["correlation_id"]])),
        "wait_on_correlation_id": masked(np.concatenate([none, hip["wait_on"]])),
    }, n=nm + nh)


_PROVENANCE = {
    "kernels.name": "kernels.name (rocpd_info_kernel_symbol.display_name = "
                    "formatted_kernel_name, as CSV Kernel_Name)",
    "kernels.api_index": "regions.stack_id = kernels.stack_id AND guid",
    "kernels.correlation_id": "stack_id (internal correlation id)",
    "kernels.graph_node_id": "rocpd_kernel_dispatch.graph_node_id (3.0.2 on; 0 -> null)",
    "markers.wait_on_correlation_id": "rocpd_hip_event: the latest HIP_EVENT_RECORD of the "
                                      "same hip_event_handle issued before the wait",
    "devices.raw_id": "rocpd_info_agent.absolute_index (KFD node id)",
    "markers.name": "regions/samples extdata.message (roctx text)",
}


def read_db(name: str, db: Db, progress, cancelled) -> Trace:
    """The trace of one database: from its physical tables where they are as expected
    (``physical.py``), else, or when that read fails, from its views."""
    phys = open_physical(db)
    if phys is not None:
        try:
            trace = _read_db(name, db, progress, cancelled, phys)
            db.read_path = "physical"
            return trace
        except (TraceFormatError, ValueError, TypeError, KeyError, IndexError,
                pa.ArrowException):
            pass  # the views read it, or say what is wrong with it
    db.read_path = "views"
    return _read_db(name, db, progress, cancelled, None)


def _read_db(name: str, db: Db, progress, cancelled, phys: Physical | None) -> Trace:
    path = db.path
    if not any(n.startswith("rocpd_") for n in db.names):
        legacy = LEGACY_TABLES & db.names
        found = (f"a legacy rocprof results.db (tables {', '.join(sorted(legacy))})"
                 if legacy else "no rocpd_ tables")
        raise TraceFormatError(path, "sqlite_master",
                               "rocpd tables (rocpd_metadata, rocpd_info_agent, ...)", found)
    warnings: list[str] = []
    meta: dict[str, Any] = new_meta(name, [path], "CLOCK_BOOTTIME", tool="rocprofv3")
    guids = _Guids()
    host_of_nid = _processes(db, meta)
    process_rank(db, meta, warnings)
    check_schema_version(path, meta.get("rocpd_metadata"), meta, warnings)
    progress(0.05)
    # the big views: run their queries side by side (ADBC path)
    if phys is not None:
        phys.prefetch()
    if db.has("regions") and phys is None:
        db.prefetch("regions", *_regions_query(db))
    if db.has("kernels") and phys is None:
        db.prefetch("kernels", *kernel_query(db))
    if db.has("memory_copies"):
        db.prefetch("memory_copies", _COPY_COLUMNS, required=["start", "end"])
    if db.has("counters_collection"):
        db.prefetch("counters_collection", *COUNTER_QUERY)
    to_device, dev_rows = _devices(db, host_of_nid)
    check_cancel(cancelled)
    progress(0.1)
    api, markers, api_stack, api_guid = _regions(db, guids, warnings, phys, to_device)
    release_freed()  # the regions' raw columns
    check_cancel(cancelled)
    progress(0.4)
    kernels, queues, k = read_kernels(db, guids, to_device, api_stack, api_guid, dev_rows,
                                  warnings, phys)
    devices = devices_table(dev_rows)
    check_cancel(cancelled)
    progress(0.75)
    streams = _streams(db, guids, k["stream"], k["dev"], k["queue"], k["pid"], k["guid"])
    copies = _copies(db, guids, to_device, api_stack, api_guid, warnings)
    progress(0.85)
    counters = counters_table(db, guids, k["guid"], k["disp"])
    samples = spm_samples(db, to_device, meta, warnings)
    progress(1.0)
    launches = graph_launches(db, warnings)
    if launches is not None:
        meta["rocpd_graph_launches"] = launches
        nodes = launch_kernels(db)
        if nodes:
            meta["graph_launch_kernels"] = nodes
            warn_short_replays(path, nodes, k["pid"], kernels.numpy("correlation_id",
                                                                     fill=-1), warnings)
    meta["provenance"] = dict(_PROVENANCE)
    if warnings:
        meta["warnings"] = warnings
    extra = {"samples": samples} if samples is not None else {}
    return Trace(kernels=kernels, api=api, copies=copies, markers=markers,
                 counters=counters, devices=devices, queues=queues, streams=streams,
                 meta=meta, **extra)


def _one_value(inverse: np.ndarray, k: int, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group: its value when all its rows share one, and whether they do."""
    lo = np.full(k, np.iinfo(np.int64).max, np.int64)
    hi = np.full(k, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(lo, inverse, vals)
    np.maximum.at(hi, inverse, vals)
    return lo, lo == hi


def _streams(db: Db, gcode, k_stream, k_dev, k_queue, k_pid, k_guid):
    """One row per (guid, stream) of the kernels: its device, queue and pid where all
    its kernels share one (a stream's queue only with its one device)."""
    ok = k_stream >= 0
    if not ok.any():
        return build_table("streams", {}, n=0)
    names: dict[tuple[int, int], str] = {}
    if db.has("rocpd_info_stream"):
        si = db.fetch("rocpd_info_stream", ["guid", "id", "name"])
        ns = len(si.get("id", []))
        for g, sid, sn in zip(gcode(si.get("guid"), ns).tolist(),
                              as_int(si.get("id"), ns).tolist(),
                              as_str(si.get("name"), ns).to_pylist()):
            names[(g, sid)] = sn
    (u_g, u_s), inverse, _first = distinct_rows(k_guid[ok], k_stream[ok])
    k = len(u_g)
    dev, one_dev = _one_value(inverse, k, k_dev[ok])
    queue, one_q = _one_value(inverse, k, k_queue[ok])
    pid, one_pid = _one_value(inverse, k, k_pid[ok])
    rows = {"stream": u_s, "device": masked(dev, ~one_dev),
            "queue": masked(queue, ~(one_q & one_dev & (queue >= 0))),
            "pid": masked(pid, ~(one_pid & (pid >= 0))),
            "raw_id": [str(x) for x in u_s.tolist()],
            "name": [names.get((g, x)) for g, x in zip(u_g.tolist(), u_s.tolist())]}
    return build_table("streams", rows, n=k)

_COPY_COLUMNS = ["guid", "nid", "pid", "tid", "start", "end", "name", "size", "stream_id",
                 "queue_id", "src_agent_abs_index", "src_agent_type", "dst_agent_abs_index",
                 "dst_agent_type", "stack_id"]


def _copies(db: Db, gcode, to_device, api_stack, api_guid, warnings):
    if not db.has("memory_copies"):
        return build_table("copies", {}, n=0)
    mc = db.fetch("memory_copies", _COPY_COLUMNS, required=["start", "end"])
    n = len(mc["start"])
    warn_lost(db, "memory_copies", "rocpd_memory_copy", n, "memory copies", warnings)
    if n == 0:
        return build_table("copies", {}, n=0)
    names = as_str(mc.get("name"), n)
    direction = copy_directions(names.to_pylist())
    nid = as_int(mc.get("nid"), n)

    def side(prefix: str) -> np.ndarray:
        dev = to_device(nid, as_int(mc.get(f"{prefix}_agent_abs_index"), n))
        if f"{prefix}_agent_type" in mc:
            is_gpu = np.array([t == "GPU" for t in
                               as_str(mc[f"{prefix}_agent_type"], n).to_pylist()])
            dev = np.where(is_gpu, dev, -1)
        return dev

    src, dst = side("src"), side("dst")
    dev = np.where(src >= 0, src, dst)
    is_htod = np.array([d == "HtoD" for d in direction])
    dev = np.where(is_htod & (dst >= 0), dst, dev)
    stack = as_int(mc.get("stack_id"), n)
    guid = gcode(mc.get("guid"), n)
    api_idx = link_by_correlation(stack, guid, api_stack, api_guid)
    api_idx[stack < 0] = -1
    start, end = as_int(mc["start"], n, 0), as_int(mc["end"], n, 0)
    return build_table("copies", {
        "direction": direction, "start": start, "end": end,
        "name": names, "bytes": masked(as_int(mc.get("size"), n)),
        "device": masked(dev), "src_device": masked(src), "dst_device": masked(dst),
        "stream": masked(as_int(mc.get("stream_id"), n)),
        "pid": masked(as_int(mc.get("pid"), n)), "tid": masked(as_int(mc.get("tid"), n)),
        "correlation_id": masked(stack), "api_index": masked(api_idx),
    }, n=n)
