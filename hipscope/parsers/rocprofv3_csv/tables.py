"""Per-file parsers of a rocprofv3 CSV set: API/marker, kernel, copy, counter files
and the memory-allocation/scratch summaries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...model.table import from_numpy, valid_mask
from .._common import copy_direction
from .agents import AgentInfo
from .columns import (
    KERNEL_SCHEMA_TYPES,
    API_COLUMNS,
    COPY_COLUMNS,
    COUNTER_COLUMNS,
    DICT,
    KERNEL_COLUMNS,
    I32,
    I64,
    OPERATION_COLUMNS,
    CsvFile,
    check_times,
    concat,
    dict_parts,
    fit_dtype,
    keep_rows,
    Load,
    np_column,
    null_zero,
    read_columns,
)
from .files import CsvSet

def _layout_of_kernels(fields: list[str], agents: list[str]) -> str:
    f = set(fields)
    if "Stream_Id" in f or "LDS_Block_Size" in f or any(a.startswith("Agent") for a in agents):
        return ">=7.0"
    if "Thread_Id" in f or "Dispatch_Id" in f:
        return "6.3"
    return "<=6.2"


def _layout_of_counters(fields: list[str], agents: list[str]) -> str:
    f = set(fields)
    if any(a.startswith("Agent") for a in agents):
        return ">=7.0"
    if "Accum_VGPR_Count" in f:
        return "6.4"
    if "Kernel_Id" in f or "Start_Timestamp" in f:
        return "6.3"
    return "<=6.2"


LAYOUT_RANK = {"<=6.2": 0, "6.3": 1, "6.4": 2, ">=7.0": 3}


# --------------------------------------------------------------------------- set reading

@dataclass
class Part:
    """Tables of one set before device/queue/stream ids are made global."""

    s: CsvSet
    kernels: dict[str, Any] | None = None
    api: dict[str, Any] | None = None
    markers: dict[str, Any] | None = None
    copies: dict[str, Any] | None = None
    counters: dict[str, Any] | None = None
    agents: list[AgentInfo] = field(default_factory=list)
    gpu_texts: set[str] = field(default_factory=set)
    cpu_texts: set[str] = field(default_factory=set)


def read_api_like(files: list[CsvFile], s: CsvSet, load: Load, progress) -> dict | None:
    parts, lengths = [], []
    for f in files:
        cols, n = read_columns(f, API_COLUMNS, load)
        progress(f)
        if "pid" not in cols and s.pid is not None:
            cols["pid"] = from_numpy(np.full(n, s.pid, dtype=np.int32))
        cols["correlation_id"] = null_zero(cols.get("correlation_id"))
        cols = check_times(cols, "rows", f.path.name, load)
        doms = cols["domain"].dictionary.to_pylist() if "domain" in cols else []
        if any(str(d).endswith("_EXT") for d in doms if d):
            load.layout.add(">=7.0")
        parts.append(cols)
        lengths.append(len(cols["start"]))
    if not parts:
        return None
    names = ("name", "domain", "pid", "tid", "correlation_id", "start", "end")
    types = {"name": DICT, "domain": DICT, "pid": I32, "tid": I64, "correlation_id": I64,
             "start": I64, "end": I64}
    out = {c: concat([p.get(c) for p in parts], lengths, types[c]) for c in names}
    for c in ("name", "domain"):
        if out[c].null_count:
            out[c] = pc.fill_null(out[c].cast(pa.string()), "").dictionary_encode()
    return out


def dedupe_api(api: dict[str, Any], s: CsvSet, load: Load) -> dict[str, Any]:
    """Rows present in two files (7.0 docs: hip_trace.csv holds hip_compile_trace.csv's
    rows) are kept once."""
    n = len(api["start"])
    if n < 2:
        return api
    corr = np_column(api["correlation_id"], -1)
    pid = np_column(api["pid"], -1)
    key = (pid.astype(np.int64) << 40) ^ corr
    order = np.argsort(key, kind="stable")
    sk = key[order]
    same = np.nonzero(sk[1:] == sk[:-1])[0]
    if len(same) == 0 or len(same) > 1_000_000:
        return api
    start, end = np_column(api["start"]), np_column(api["end"])
    ncode, _ = dict_parts(api["name"])
    dcode, _ = dict_parts(api["domain"])
    tid = np_column(api["tid"], -1)
    keep = np.ones(n, dtype=bool)
    seen: set[tuple] = set()
    cand = np.unique(np.concatenate([order[same], order[same + 1]]))
    for i in cand.tolist():
        t = (key[i], start[i], end[i], ncode[i], dcode[i], tid[i])
        if t in seen:
            keep[i] = False
        else:
            seen.add(t)
    ndup = int((~keep).sum())
    if not ndup:
        return api
    load.warn(f"{s.label}: {ndup:,} API rows appear in more than one "
              "file (e.g. hip_trace.csv and hip_compile_trace.csv); kept once")
    return keep_rows(api, keep)


def read_copies(files: list[CsvFile], s: CsvSet, load: Load, part: Part, progress) -> dict | None:
    parts, lengths = [], []
    for f in files:
        cols, n = read_columns(f, COPY_COLUMNS, load)
        progress(f)
        cols["correlation_id"] = null_zero(cols.get("correlation_id"))
        if "pid" not in cols and s.pid is not None:
            cols["pid"] = from_numpy(np.full(n, s.pid, dtype=np.int32))
        cols = check_times(cols, "copies", f.path.name, load)
        dirs = cols["direction_raw"].dictionary.to_pylist()
        if any(d and not str(d).startswith("MEMORY_COPY_") for d in dirs):
            load.layout.add("<=6.2")
        elif dirs and "stream_raw" not in cols:
            load.layout.add("6.3")
        if "stream_raw" in cols:
            load.layout.add(">=7.0")
        parts.append(cols)
        lengths.append(len(cols["start"]))
    if not parts:
        return None
    types = {"direction_raw": DICT, "stream_raw": I64, "src_agent": DICT, "dst_agent": DICT,
             "correlation_id": I64, "pid": I32, "tid": I64, "start": I64, "end": I64}
    out = {c: concat([p.get(c) for p in parts], lengths, t) for c, t in types.items()
           if c in ("direction_raw", "src_agent", "dst_agent", "start", "end")
           or any(p.get(c) is not None for p in parts)}
    # direction per row, and which agents are host / device sides
    dcodes, dcats = dict_parts(out["direction_raw"])
    norm = np.array([copy_direction(c) for c in dcats] + ["other"], dtype=object)
    unknown = sorted({c for c in dcats if copy_direction(c) == "other"})
    if unknown:
        load.warn(f"memory copy directions {unknown} are not host/device copies; shown as "
                  "'other'")
    row_dir = norm[dcodes]      # -1 -> "other"
    out["_dir"] = row_dir
    for side, host_dirs, dev_dirs in (("src_agent", ("HtoD", "HtoH"), ("DtoH", "DtoD", "PtoP")),
                                      ("dst_agent", ("DtoH", "HtoH"), ("HtoD", "DtoD", "PtoP"))):
        codes, cats = dict_parts(out[side])
        for ci, text in enumerate(cats):
            if not text.strip():
                continue
            rows = codes == ci
            if not rows.any():
                continue
            dd = set(row_dir[rows].tolist())
            if dd & set(dev_dirs):
                part.gpu_texts.add(text)
            elif dd & set(host_dirs):
                part.cpu_texts.add(text)
    return out


def read_kernels(files: list[CsvFile], s: CsvSet, load: Load, progress) -> dict | None:
    parts, lengths = [], []
    for f in files:
        cols, n = read_columns(f, KERNEL_COLUMNS, load)
        progress(f)
        agents = cols["agent"].dictionary.to_pylist() if "agent" in cols else []
        load.layout.add(_layout_of_kernels(f.fields, [a for a in agents if a]))
        for c, t in KERNEL_SCHEMA_TYPES.items():
            if c in cols:
                cols[c] = fit_dtype(cols[c], t, f"{f.path.name} {c}", load)
        cols["correlation_id"] = null_zero(cols.get("correlation_id"))
        if "pid" not in cols and s.pid is not None:
            cols["pid"] = from_numpy(np.full(n, s.pid, dtype=np.int32))
        cols = check_times(cols, "kernels", f.path.name, load)
        if "name" in cols and cols["name"].null_count:
            cols["name"] = pc.fill_null(cols["name"].cast(pa.string()), "").dictionary_encode()
        # kernels without an agent cannot be placed on a device
        if cols["agent"].null_count:
            ok = valid_mask(cols["agent"])
            nbad = int((~ok).sum())
            load.warn(f"{f.path.name}: {nbad:,} kernels have no Agent_Id and were left out")
            load.drop("kernels without Agent_Id", nbad)
            cols = keep_rows(cols, ok)
        parts.append(cols)
        lengths.append(len(cols["start"]))
    if not parts:
        return None
    types = {**KERNEL_SCHEMA_TYPES, "agent": DICT, "name": DICT, "queue_raw": I64,
             "stream_raw": I64}
    keys = [k for k in types if any(k in p for p in parts)]
    return {k: concat([p.get(k) for p in parts], lengths, types[k]) for k in keys}


def read_counters(files: list[CsvFile], s: CsvSet, load: Load, progress) -> dict | None:
    parts, lengths = [], []
    for f in files:
        cols, n = read_columns(f, COUNTER_COLUMNS, load)
        progress(f)
        agents = cols["agent"].dictionary.to_pylist() if "agent" in cols else []
        load.layout.add(_layout_of_counters(f.fields, [a for a in agents if a]))
        cols["correlation_id"] = null_zero(cols.get("correlation_id"))
        if "pid" not in cols and s.pid is not None:
            cols["pid"] = from_numpy(np.full(n, s.pid, dtype=np.int32))
        cols["_has_times"] = from_numpy(np.full(n, "start" in cols and "end" in cols))
        if "counter" in cols and cols["counter"].null_count:
            cols["counter"] = pc.fill_null(cols["counter"].cast(pa.string()),
                                           "").dictionary_encode()
        if cols.get("value") is not None and cols["value"].null_count:
            ok = valid_mask(cols["value"])
            load.warn(f"{f.path.name}: {int((~ok).sum()):,} counter rows have no value and "
                      "were left out")
            load.drop("counter rows without a value", int((~ok).sum()))
            cols = keep_rows(cols, ok)
        parts.append(cols)
        lengths.append(len(cols["counter"]))
    if not parts:
        return None
    types = {v[0]: v[1] for v in COUNTER_COLUMNS.values()}
    types["_has_times"] = pa.bool_()
    keys = [k for k in types if any(k in p for p in parts)]
    return {k: concat([p.get(k) for p in parts], lengths, types[k]) for k in keys}


def summarise_ops(files: list[CsvFile], what: str, load: Load, summary: dict, progress) -> None:
    for f in files:
        cols, n = read_columns(f, OPERATION_COLUMNS, load)
        progress(f)
        ops: dict[str, int] = {}
        if "operation" in cols and n:
            vc = pc.value_counts(cols["operation"].cast(pa.string()))
            for item in vc.to_pylist():
                ops[str(item["values"])] = int(item["counts"])
        entry = summary.setdefault(what, {"rows": 0, "operations": {}})
        entry["rows"] += n
        for k, v in ops.items():
            entry["operations"][k] = entry["operations"].get(k, 0) + v
        if "bytes" in cols and n and what == "memory_allocation":
            entry["allocated_bytes"] = entry.get("allocated_bytes", 0) + int(
                pc.sum(cols["bytes"]).as_py() or 0)
        if n:
            load.warn(f"{f.path.name}: {n:,} {what.replace('_', ' ')} events are summarised in "
                      f"meta['{what}'] only (hipscope has no table for them)")
