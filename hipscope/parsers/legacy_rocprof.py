"""Legacy rocprof v1 (rocprofiler + roctracer) output: results.csv, results.json, results.db.

One registered reader, ``legacy-rocprof`` (also ``meta["format"]``), for three file
kinds and folders; the kind is told from the content (SQLite header, JSON object,
else CSV) and recorded in ``meta["file_kind"]``:

* ``results.csv``: one row per kernel dispatch: ``Index,
  KernelName, gpu-id, queue-id, queue-index, pid, tid, grd, wgr, lds, scr,
  arch_vgpr|vgpr, accum_vgpr, sgpr, wave_size, sig, obj``, then the counters in
  request order, then ``DispatchNs, BeginNs, EndNs, CompleteNs`` (+ ``DurationNs``
  with ``--stats``). Header case and quoting vary (ROCm 6.0 writes ``GRD, WGR, LDS,
  SCR, ACCUM_VGPR``); columns are matched by lower-cased name. Counters are the
  columns after the last identity column that are not timestamps; they become the
  long-form ``counters`` table linked by ``kernel_index``.

  **A results.csv without timestamps** (counters only, ``--timestamp off``): the
  kernels are still listed (their names, grid and registers are real and the
  counters need a kernel to belong to), but with ``start == end == 0``: their
  order is the dispatch order and their durations are unknown. ``meta["clock"]``
  then says ``"none (no timestamps in file)"``, ``meta["untimed_kernels"]`` counts
  them and a warning says so. When only *some* rows lack times (``None`` cells)
  those rows and their counters are dropped and counted in ``meta["dropped"]``.

* ``results.json``: Chrome trace written by tblextr.py:
  ``{"traceEvents":[{}, ...], "otherData":{rocminfo}}``. Sections are fake pids
  (0 markers, 1 COPY, 2 CPU HIP API, 3 CPU HSA API, 6+N GPU N, 518+N GPU Barriers
  N, named by ``process_name`` metadata events); numbers are often JSON strings.
  Times come from ``args.BeginNs/EndNs`` (exact ns) when present, else from the
  µs ``ts``/``dur`` (× 1000, rounded). The file has no correlation ids: launches
  are linked through the ``ph:"s"``/``ph:"t"`` ``dep`` flow events (the ``s`` end
  lies inside the launching API call on its thread, the ``t`` end at the GPU
  op's start µs); ``correlation_id`` stays null. Barrier packets are not kernels
  and are skipped (counted in ``meta["skipped"]``). Counters are not read from
  the JSON (its args do not say which keys are counters): use results.csv/.db.

* ``results.db`` (SQLite): ``KERN`` mirrors results.csv;
  ``HIP``/``HSA`` → api, ``OPS`` → kernels, ``COPY`` → copies, ``rocTX`` →
  markers. ``OPS.Index = HIP.Index`` is roctracer's correlation id and links
  kernels (and ``COPY.Index`` copies) to their HIP calls. When ``OPS`` holds the
  kernels they are taken from it (linked); ``KERN`` rows are merged into them only
  when both list the same kernel names in the same order, otherwise KERN's extra
  columns are left out with a warning. rocTX rows one ns long are tblextr's
  instant marks (it writes ``EndNs = BeginNs + 1``) and get ``end == start``.

Copy sizes (``copies.bytes``) come from the ``sizeBytes(...)`` argument of the
linked HIP call (provenance says so). Devices: ``gpu-id``/``dev-id`` is the KFD
node id (the rocminfo ``Node:``), mapped to small device indices in sorted
order; names, arch, CU count and memory come from ``results.sysinfo.txt`` beside
the file (the rocminfo dump), else from the JSON ``otherData`` (rocminfo with
spaces stripped), else ``"GPU <gpu-id>"``.

**A folder** holding results.* opens its richest trace file: ``results.db``
(everything the JSON has plus exact correlation ids) > ``results.json`` (API
calls, copies, flows) > ``results.csv`` (kernels and counters only). A folder
with only ``*stats.csv`` summaries is refused with a clear error: summaries are
not a per-event trace.

All times are int64 ns on the HSA system clock (``meta["clock"]``).
"""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Union

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ..model import Trace, build_table, link_by_correlation
from .base import (
    CancelledFn,
    ProgressFn,
    TraceFormatError,
    check_cancel,
    head_bytes,
    head_text,
    read_bytes_tolerant,
    register,
)

CLOCK = "HSA system clock"
NO_CLOCK = "none (no timestamps in file)"
TOOL = "rocprof (v1)"

I16 = (-(2**15), 2**15 - 1)
I32 = (-(2**31), 2**31 - 1)
I64 = (-(2**63), 2**63 - 1)

# --------------------------------------------------------------------------- CSV helpers
# (shared with rocprof_compute.py and ncu_csv.py)


def _count_fields(line: bytes) -> int | None:
    """Fields in one CSV line, None when a quote is left open (a torn line)."""
    text = line.decode("utf-8", errors="replace").rstrip("\r")
    if text.count('"') % 2:
        return None
    try:
        row = next(csv.reader([text]))
    except (csv.Error, StopIteration):
        return None
    return len(row)


def drop_torn_tail(path: Path, data: bytes, first_line: int, warnings: list[str],
                   dropped: dict[str, int], what: str = "rows",
                   expected: int | None = None) -> bytes:
    """Cut a last line that lacks its newline and does not have the header's field
    count (a file cut short while written), reporting it in warnings/dropped."""
    if not data or data.endswith(b"\n"):
        return data
    cut = data.rfind(b"\n")
    if cut < 0:
        return data
    last = data[cut + 1:]
    if not last.strip():
        return data
    if expected is None:
        expected = _count_fields(data[: data.find(b"\n")])
    got = _count_fields(last)
    if got is not None and got == expected:
        return data
    line_no = first_line + data.count(b"\n")
    shown = last[:60].decode("utf-8", errors="replace")
    warnings.append(f"{path}: the last line (line {line_no}) is cut short "
                    f"({'an open quote' if got is None else f'{got} of {expected} fields'}: "
                    f"{shown!r}); dropped 1 {what[:-1] if what.endswith('s') else what}")
    dropped[what] = dropped.get(what, 0) + 1
    return data[: cut + 1]


def row_line_numbers(data: bytes, first_line: int) -> list[int]:
    """File line number of each data row (after the header at ``first_line``),
    skipping blank lines like pyarrow does. Only used to name places in errors."""
    out = []
    for i, line in enumerate(data.split(b"\n")[1:]):
        if line.strip(b"\r\t "):
            out.append(first_line + 1 + i)
    return out


def read_csv_strings(path: Path, data: bytes, first_line: int = 1) -> tuple[list[str], pa.Table]:
    """A CSV (header first) as a pyarrow table of strings, one column per header
    field (duplicates kept, in order). A row with the wrong field count is a
    TraceFormatError naming its line."""
    nl = data.find(b"\n")
    head = data if nl < 0 else data[:nl]
    text = head.decode("utf-8-sig", errors="replace").rstrip("\r")
    if not text.strip():
        raise TraceFormatError(path, f"line {first_line}", "a CSV header line",
                               "an empty line" if data else "an empty file")
    try:
        header = next(csv.reader([text]))
    except csv.Error as exc:
        raise TraceFormatError(path, f"line {first_line}", "a CSV header line", str(exc)) from None
    internal = [f"c{i}" for i in range(len(header))]
    bad: list[Any] = []
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        data = data.decode("utf-8", errors="replace").encode("utf-8")

    def on_bad(row) -> str:
        try:
            bad.append((row.expected_columns, row.actual_columns, row.text or ""))
        except (UnicodeDecodeError, ValueError):
            bad.append((row.expected_columns, row.actual_columns, ""))
        return "skip"

    try:
        table = pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(column_names=internal, skip_rows=1,
                                           block_size=1 << 24),
            parse_options=pacsv.ParseOptions(invalid_row_handler=on_bad),
            convert_options=pacsv.ConvertOptions(
                column_types={c: pa.string() for c in internal},
                strings_can_be_null=False, quoted_strings_can_be_null=False),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError) as exc:
        raise TraceFormatError(path, None, "a readable CSV table", str(exc)[:200]) from None
    if bad:
        expected, actual, text = bad[0]
        line = first_line
        target = text.encode("utf-8", errors="replace")
        for i, ln in enumerate(data.split(b"\n")):
            if target and ln.rstrip(b"\r") == target:
                line = first_line + i
                break
        raise TraceFormatError(path, f"line {line}" if target else None,
                               f"{expected} comma-separated fields like the header",
                               f"{actual}: {text[:80]!r}")
    return header, table


_NULL_TEXT = ["", "None", "none", "NONE", "nan", "NaN", "N/A", "n/a", "null"]


def _clean(arr: pa.Array, thousands: bool = False) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_string(arr.type) and not pa.types.is_large_string(arr.type):
        return arr
    s = pc.utf8_trim_whitespace(arr)
    if thousands:
        s = pc.replace_substring(s, ",", "")
    nulls = pc.is_in(s, value_set=pa.array(_NULL_TEXT))
    return pc.if_else(nulls, pa.scalar(None, pa.string()), s)


def _first_bad(values: pa.Array, parse: Callable[[str], Any]) -> int:
    for i, v in enumerate(values.to_pylist()):
        if v is None:
            continue
        try:
            parse(v)
        except (ValueError, OverflowError):
            return i
    return -1


class BadNumber(Exception):
    def __init__(self, row: int, value: str):
        super().__init__(value)
        self.row = row
        self.value = value


def to_float(arr: pa.Array, thousands: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """float64 values and a valid mask; raises BadNumber(row, text) for junk."""
    s = _clean(arr, thousands)
    if pa.types.is_floating(s.type) or pa.types.is_integer(s.type):
        f = s.cast(pa.float64())
    else:
        try:
            f = pc.cast(s, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            i = _first_bad(s, float)
            raise BadNumber(max(i, 0), str(s[max(i, 0)].as_py())) from None
    valid = f.is_valid().to_numpy(zero_copy_only=False)
    vals = pc.fill_null(f, 0.0).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    return vals, valid


def to_int(arr: pa.Array, thousands: bool = False) -> tuple[np.ndarray, np.ndarray, bool]:
    """int64 values, valid mask and whether any value was written in a lossy
    float/exponent form (parsed as float and rounded). Exact for integers up to
    2**63 (parsed as integers, not through float64)."""
    s = _clean(arr, thousands)
    if pa.types.is_integer(s.type):
        iv = s.cast(pa.int64())
        return (pc.fill_null(iv, 0).to_numpy(zero_copy_only=False),
                iv.is_valid().to_numpy(zero_copy_only=False), False)
    try:
        iv = pc.cast(s, pa.int64())
        return (pc.fill_null(iv, 0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False),
                iv.is_valid().to_numpy(zero_copy_only=False), False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    f, valid = to_float(s)
    if not np.isfinite(f[valid]).all() or (np.abs(f[valid]) > 9.2e18).any():
        bad = np.flatnonzero(valid & ~(np.isfinite(f) & (np.abs(f) <= 9.2e18)))
        raise BadNumber(int(bad[0]), str(s[int(bad[0])].as_py()))
    lossy = False
    if pa.types.is_string(s.type):
        lossy = bool(pc.any(pc.match_substring_regex(s, "[eE]")).as_py() or False)
    return np.rint(f).astype(np.int64), valid, lossy


def fit(values: np.ndarray, valid: np.ndarray, bounds: tuple[int, int]) -> tuple[pa.Array, int]:
    """An int column with nulls where invalid or outside ``bounds``; returns the
    array and how many valid values did not fit."""
    v = np.asarray(values)
    ok = valid & (v >= bounds[0]) & (v <= bounds[1])
    over = int((valid & ~ok).sum())
    vv = np.where(ok, v, 0).astype(np.int64)
    return pa.array(vv, mask=~ok if (~ok).any() else None), over


def dense_ids(*keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows' group codes (0..k-1 in sorted key order) and the first row of each group."""
    stacked = np.stack([np.asarray(k, dtype=np.int64) for k in keys], axis=1)
    uniq, first, inv = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    return inv.reshape(-1).astype(np.int64), first


# --------------------------------------------------------------------------- rocminfo

def parse_rocminfo(text: str) -> dict[str, Any]:
    """Agents (by KFD node id) and system attributes from a rocminfo dump."""
    out: dict[str, Any] = {"agents": {}}
    m = re.search(r"^Runtime Version:\s*(\S+)", text, re.M)
    if m:
        out["hsa_runtime_version"] = m.group(1)
    m = re.search(r"^Runtime Ext Version:\s*(\S+)", text, re.M)
    if m:
        out["hsa_runtime_ext_version"] = m.group(1)
    m = re.search(r"ROCk module version (\S+)", text)
    if m:
        out["driver_version"] = m.group(1)
    blocks = re.split(r"^\*+\s*\n(?=Agent \d+)", text, flags=re.M)
    for b in blocks:
        if not b.startswith("Agent "):
            continue
        fields: dict[str, str] = {}
        mem = None
        lines = b.splitlines()
        for i, line in enumerate(lines):
            mm = re.match(r"^  (\S[^:]*?):\s*(.*?)\s*$", line)
            if mm and mm.group(1) not in fields:
                fields[mm.group(1)] = mm.group(2)
            if mem is None and re.match(r"^\s+Segment:\s+GLOBAL", line) and i + 1 < len(lines):
                ms = re.match(r"^\s+Size:\s+(\d+)\S*\s*KB", lines[i + 1])
                if ms:
                    mem = int(ms.group(1)) * 1024
        _add_agent(out["agents"], fields.get("Node"), fields.get("Device Type"),
                   fields.get("Marketing Name"), fields.get("Name"),
                   fields.get("Compute Unit"), mem, fields.get("Uuid"))
    return out


def rocminfo_from_otherdata(other: dict[str, Any]) -> dict[str, Any]:
    """The same from a legacy JSON ``otherData`` (rocminfo keys with spaces stripped)."""
    out: dict[str, Any] = {"agents": {}}
    rv = other.get("HSASystemAttributes.RuntimeVersion")
    if isinstance(rv, str):
        out["hsa_runtime_version"] = rv
    agents: dict[str, dict[str, Any]] = {}
    for k, v in other.items():
        m = re.match(r"^Agent(\d+)\.(.*)$", k)
        if m:
            agents.setdefault(m.group(1), {}).setdefault(m.group(2), v)
    for fields in agents.values():
        mem = None
        for p in range(1, 16):
            seg = fields.get(f"PoolInfo.Pool{p}.Segment")
            if seg is None:
                break
            if str(seg).startswith("GLOBAL") and mem is None:
                ms = re.match(r"^(\d+)", str(fields.get(f"PoolInfo.Pool{p}.Size", "")))
                if ms:
                    mem = int(ms.group(1)) * 1024
        _add_agent(out["agents"], fields.get("Node"), fields.get("DeviceType"),
                   fields.get("MarketingName"), fields.get("Name"), fields.get("ComputeUnit"),
                   mem, fields.get("Uuid"))
    return out


def _add_agent(agents: dict[int, dict[str, Any]], node, dtype, marketing, name, cu, mem, uuid):
    try:
        node_i = int(str(node).split("(")[0])
    except (TypeError, ValueError):
        return
    arch = name if isinstance(name, str) and re.match(r"^gfx\w+$", name) else None
    try:
        cu_i = int(str(cu).split("(")[0])
    except (TypeError, ValueError):
        cu_i = None
    agents[node_i] = {"type": str(dtype or ""), "name": (marketing or name or None),
                      "arch": arch, "compute_units": cu_i, "memory_bytes": mem, "uuid": uuid}


def build_devices(raw_ids: Sequence[int], info: dict[str, Any] | None,
                  host: str | None = None) -> tuple[Any, dict[int, int]]:
    """Devices table for the gpu-ids seen (sorted → 0..n-1) and raw → index map."""
    agents = (info or {}).get("agents", {})
    ids = sorted(set(int(x) for x in raw_ids))
    rows: dict[str, list[Any]] = {k: [] for k in ("index", "name", "vendor", "arch",
                                                  "compute_units", "raw_id", "host",
                                                  "memory_bytes")}
    for i, rid in enumerate(ids):
        a = agents.get(rid)
        if a is not None and a.get("type", "").upper() != "GPU":
            a = None
        rows["index"].append(i)
        rows["name"].append((a or {}).get("name") or f"GPU {rid}")
        rows["vendor"].append("AMD")
        rows["arch"].append((a or {}).get("arch"))
        rows["compute_units"].append((a or {}).get("compute_units"))
        rows["raw_id"].append(str(rid))
        rows["host"].append(host)
        rows["memory_bytes"].append((a or {}).get("memory_bytes"))
    return build_table("devices", rows, n=len(ids)), {rid: i for i, rid in enumerate(ids)}


def map_ids(raw: np.ndarray, mapping: dict[int, int]) -> np.ndarray:
    keys = np.array(sorted(mapping), dtype=np.int64)
    vals = np.array([mapping[k] for k in keys], dtype=np.int64)
    pos = np.clip(np.searchsorted(keys, raw), 0, max(len(keys) - 1, 0))
    return vals[pos] if len(keys) else np.zeros(len(raw), dtype=np.int64)


def queues_for(device: np.ndarray, raw_queue: np.ndarray, valid: np.ndarray):
    """Small per-device queue ids for raw queue ids, and the queues table."""
    out = np.full(len(device), -1, dtype=np.int64)
    rows: dict[str, list[Any]] = {"device": [], "queue": [], "raw_id": []}
    if valid.any():
        dv, rq = device[valid], raw_queue[valid]
        pairs = sorted(set(zip(dv.tolist(), rq.tolist())))
        per_dev: dict[int, int] = {}
        lookup = {}
        for d, q in pairs:
            k = per_dev.get(d, 0)
            per_dev[d] = k + 1
            lookup[(d, q)] = k
            rows["device"].append(d)
            rows["queue"].append(k)
            rows["raw_id"].append(str(q))
        out[valid] = [lookup[(d, q)] for d, q in zip(dv.tolist(), rq.tolist())]
    return out, build_table("queues", rows, n=len(rows["device"]))


def markers_depth(start: np.ndarray, end: np.ndarray, lane: np.ndarray) -> np.ndarray:
    """Nesting depth of ranges per lane (thread): 0 = outermost."""
    depth = np.zeros(len(start), dtype=np.int16)
    order = np.lexsort((-end, start, lane))
    stack: list[int] = []
    cur_lane = None
    for i in order.tolist():
        if lane[i] != cur_lane:
            stack, cur_lane = [], lane[i]
        while stack and end[stack[-1]] <= start[i]:
            stack.pop()
        while stack and end[stack[-1]] < end[i]:
            stack.pop()
        depth[i] = min(len(stack), I16[1])
        if end[i] > start[i]:
            stack.append(i)
    return depth


def copy_direction(names: Sequence[str]) -> list[str]:
    out = []
    for n in names:
        low = (n or "").lower().replace("_", "").replace(" ", "")
        if "hosttodevice" in low or "htod" in low:
            out.append("HtoD")
        elif "devicetohost" in low or "dtoh" in low:
            out.append("DtoH")
        elif "devicetodevice" in low or "dtod" in low:
            out.append("DtoD")
        elif "hosttohost" in low or "htoh" in low:
            out.append("HtoH")
        elif "peer" in low or "ptop" in low:
            out.append("PtoP")
        elif "fill" in low or "memset" in low:
            out.append("memset")
        else:
            out.append("other")
    return out


_SIZE_RE = re.compile(r"(?:sizeBytes|size|count|ByteCount)\((\d+)\)")


def size_from_args(args: str | None) -> int | None:
    if not args:
        return None
    m = _SIZE_RE.search(args)
    return int(m.group(1)) if m else None


def strip_quotes(names: list[Any]) -> list[str]:
    out = []
    for n in names:
        s = "" if n is None else str(n)
        if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
            s = s[1:-1]
        out.append(s)
    return out


# --------------------------------------------------------------------------- side files

def _side_info(path: Path, meta: dict[str, Any]) -> dict[str, Any] | None:
    """results.sysinfo.txt and input.txt beside a results.* file."""
    folder = path.parent
    info = None
    for cand in (folder / (path.stem + ".sysinfo.txt"), folder / "results.sysinfo.txt"):
        if cand.is_file():
            try:
                info = parse_rocminfo(cand.read_text(errors="replace"))
            except OSError:
                info = None
            if info is not None:
                meta["sources"].append(str(cand))
                for k in ("hsa_runtime_version", "hsa_runtime_ext_version", "driver_version"):
                    if info.get(k):
                        meta[k] = info[k]
            break
    inp = folder / "input.txt"
    if inp.is_file():
        try:
            lines = inp.read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        pmc = [ln.split(":", 1)[1].split() for ln in lines if ln.strip().startswith("pmc")]
        if pmc:
            meta["pmc"] = pmc
            meta["sources"].append(str(inp))
    return info


def _new_meta(path: Path, fmt: str) -> dict[str, Any]:
    return {"format": fmt, "sources": [str(path)], "clock": CLOCK, "tool": TOOL,
            "warnings": [], "provenance": {}}


def _finish_meta(meta: dict[str, Any], dropped: dict[str, int]) -> dict[str, Any]:
    if dropped:
        meta["dropped"] = dropped
    if not meta.get("warnings"):
        meta.pop("warnings", None)
    return meta


# --------------------------------------------------------------------------- results.csv

IDENTITY = {
    "index", "kernelname", "gpu-id", "queue-id", "queue-index", "pid", "tid", "grd", "wgr",
    "lds", "scr", "arch_vgpr", "vgpr", "accum_vgpr", "sgpr", "wave_size", "sig", "obj",
    "fbar", "dev-id", "stream-id", "dispatch_id", "kernel_name", "gpu_id",
}
TIMES = {"dispatchns", "beginns", "endns", "completens", "durationns"}


def kernels_from_columns(path: Path, cols: dict[str, pa.Array], order: list[str],
                         row_line: Callable[[int], str], meta: dict[str, Any],
                         dropped: dict[str, int], source: str) -> dict[str, Any]:
    """Kernel columns, raw gpu ids and counters from legacy KERN/results.csv columns
    (``cols`` by lower-cased name, ``order`` = lower-cased names in file order)."""
    warnings = meta["warnings"]
    n = len(next(iter(cols.values()))) if cols else 0
    if "kernelname" not in cols:
        raise TraceFormatError(path, source, "a KernelName column", f"columns {order[:8]}")

    def num_int(name: str):
        try:
            return to_int(cols[name])
        except BadNumber as exc:
            raise TraceFormatError(path, row_line(exc.row), f"an integer in column {name!r}",
                                   repr(exc.value)) from None

    def num_float(name: str):
        try:
            return to_float(cols[name])
        except BadNumber as exc:
            raise TraceFormatError(path, row_line(exc.row), f"a number in column {name!r}",
                                   repr(exc.value)) from None

    timed = "beginns" in cols and "endns" in cols
    keep = np.ones(n, dtype=bool)
    if timed:
        b, bv, _ = num_int("beginns")
        e, ev, _ = num_int("endns")
        ok = bv & ev
        if not ok.any():
            timed = False
        elif not ok.all():
            miss = int((~ok).sum())
            warnings.append(f"{path}: {miss} kernel rows have no BeginNs/EndNs; dropped them "
                            "and their counters")
            dropped["kernels without timestamps"] = miss
            keep = ok
        bad = keep & (e < b)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise TraceFormatError(path, row_line(i), "EndNs >= BeginNs",
                                   f"EndNs {e[i]} < BeginNs {b[i]}")
    sel = np.flatnonzero(keep)
    out: dict[str, Any] = {}
    prov = meta["provenance"]
    names_col = cols["kernelname"] if keep.all() else cols["kernelname"].take(pa.array(sel))
    out["name"] = strip_quotes(names_col.to_pylist())
    if timed:
        out["start"], out["end"] = b[sel], e[sel]
        prov["start"], prov["end"] = f"{source} BeginNs", f"{source} EndNs"
    else:
        out["start"] = np.zeros(len(sel), dtype=np.int64)
        out["end"] = np.zeros(len(sel), dtype=np.int64)
        meta["clock"] = NO_CLOCK
        meta["untimed_kernels"] = int(len(sel))
        warnings.append(f"{path} has no BeginNs/EndNs timestamps (profiled without "
                        f"--timestamp on): its {len(sel)} kernels are listed with start = end = 0 "
                        "in dispatch order; their durations are unknown, only their counters "
                        "and properties are real")
        prov["start"] = prov["end"] = "none: no timestamps in the file (0)"
    gpu_col = "gpu-id" if "gpu-id" in cols else ("dev-id" if "dev-id" in cols else None)
    if gpu_col:
        g, gv, _ = num_int(gpu_col)
        g = np.where(gv, g, -1)[sel]
    else:
        g = np.zeros(len(sel), dtype=np.int64)
    out["_raw_gpu"] = g
    overflow: dict[str, int] = {}
    spec = [("index", "dispatch_id", None), ("pid", "pid", I32), ("tid", "tid", None),
            ("grd", "grid_x", None), ("wgr", "block_x", I16), ("lds", "lds_bytes", I32),
            ("scr", "scratch_bytes", I32), ("arch_vgpr", "vgpr", I16), ("vgpr", "vgpr", I16),
            ("accum_vgpr", "accum_vgpr", I16), ("sgpr", "sgpr", I16),
            ("dispatchns", "dispatch_ns", None), ("stream-id", "stream", I32)]
    for src, dst, bounds in spec:
        if src not in cols or dst in out:
            continue
        v, valid, _ = num_int(src)
        v, valid = v[sel], valid[sel]
        if bounds is None:
            out[dst] = pa.array(v, mask=~valid if (~valid).any() else None)
        else:
            out[dst], over = fit(v, valid, bounds)
            if over:
                overflow[dst] = over
        prov[dst] = f"{source} {src}"
    if "queue-id" in cols:
        q, qv, _ = num_int("queue-id")
        out["_raw_queue"], out["_queue_valid"] = q[sel], qv[sel]
    for dst, cnt in overflow.items():
        warnings.append(f"{path}: {cnt} kernels have a {dst} too large for hipscope's "
                        f"{dst} column (e.g. grid sizes of 2**32 - 256 work-items); left null")
    # counters: after the last identity column, not timestamps
    last_id = max((i for i, c in enumerate(order) if c in IDENTITY), default=-1)
    counter_names = [c for i, c in enumerate(order) if i > last_id and c not in TIMES
                     and c not in IDENTITY]
    originals = meta.pop("_original_names", {})
    cnames, cvals, ckern = [], [], []
    for c in counter_names:
        v, valid = num_float(c)
        v, valid = v[sel], valid[sel]
        rows = np.flatnonzero(valid)
        cnames.append((originals.get(c, c), len(rows)))
        cvals.append(v[rows])
        ckern.append(rows)
    out["_counters"] = (cnames, cvals, ckern)
    return out


def counters_table(cnames, cvals, ckern, dispatch: pa.Array | None):
    if not cnames:
        return None
    counts = np.array([k for _, k in cnames], dtype=np.int64)
    total = int(counts.sum())
    codes = np.repeat(np.arange(len(cnames), dtype=np.int32), counts)
    kidx = np.concatenate(ckern).astype(np.int32) if total else np.zeros(0, np.int32)
    from ..model import categorical

    cols: dict[str, Any] = {
        "counter": categorical(codes, [c for c, _ in cnames]),
        "value": np.concatenate(cvals) if total else np.zeros(0),
        "kernel_index": kidx,
    }
    if dispatch is not None and dispatch.null_count < len(dispatch):
        cols["dispatch_id"] = dispatch.take(pa.array(kidx))
    return build_table("counters", cols, n=total)


def assemble_kernels(path: Path, k: dict[str, Any], info, meta) -> dict[str, Any]:
    """Trace tables (kernels, counters, devices, queues) from kernels_from_columns output."""
    raw = k.pop("_raw_gpu")
    devices, mapping = build_devices(raw.tolist(), info)
    dev = map_ids(raw, mapping)
    k["device"] = dev
    queues = None
    if "_raw_queue" in k:
        q, queues = queues_for(dev, k.pop("_raw_queue"), k.pop("_queue_valid"))
        k["queue"] = pa.array(q, mask=q < 0 if (q < 0).any() else None)
    cnames, cvals, ckern = k.pop("_counters")
    kernels = build_table("kernels", k)
    out = {"kernels": kernels, "devices": devices}
    if queues is not None:
        out["queues"] = queues
    ct = counters_table(cnames, cvals, ckern, kernels.column("dispatch_id")
                        if "dispatch_id" in kernels.present else None)
    if ct is not None:
        out["counters"] = ct
    return out


def _sniff_csv_header(text: str) -> set[str]:
    line = text.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
    try:
        return {f.strip().lower() for f in next(csv.reader([line]))}
    except (csv.Error, StopIteration):
        return set()


STATS_HEADER = {"name", "calls", "totaldurationns", "averagens", "percentage"}


def _stats_only_error(path: Path) -> TraceFormatError:
    return TraceFormatError(
        path, None,
        "a per-event trace (results.csv with timestamps, results.json or results.db)",
        "only summary statistics (rocprof --stats *stats.csv: name, calls, total ns per "
        "kernel/API), no per-event trace")


class LegacyRocprofCsvReader:
    name = "legacy-rocprof"
    description = "Legacy rocprof v1 results.csv / results folder"
    patterns = ("results.csv", "*.csv")
    priority = 40
    directories = True

    def sniff(self, path: Path) -> float:
        if path.is_dir():
            return _sniff_folder(path)
        if path.suffix.lower() != ".csv":
            return 0.0
        fields = _sniff_csv_header(head_text(path, 8192))
        if {"index", "kernelname"} <= fields and (fields & {"gpu-id", "beginns", "grd", "obj"}):
            return 0.95
        if fields == STATS_HEADER:
            return 0.3   # claimed only to explain that a summary is not a trace
        return 0.0

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        path = Path(path)
        if path.is_dir():
            return read_folder(path, progress, cancelled)
        meta = _new_meta(path, self.name)
        meta["file_kind"] = "results.csv"
        dropped: dict[str, int] = {}
        try:
            data, gzw = read_bytes_tolerant(path)
        except OSError as exc:
            raise TraceFormatError(path, None, "a readable file", str(exc)) from None
        if gzw:
            meta["warnings"].append(gzw)
        fields = _sniff_csv_header(data[:8192].decode("utf-8", errors="replace"))
        if fields == STATS_HEADER:
            raise _stats_only_error(path)
        data = drop_torn_tail(path, data, 1, meta["warnings"], dropped, "kernels")
        check_cancel(cancelled)
        header, table = read_csv_strings(path, data, 1)
        progress(0.4)
        lower = [h.strip().lower() for h in header]
        if "kernelname" not in lower or "index" not in lower:
            raise TraceFormatError(path, "line 1", "a legacy rocprof results.csv header "
                                   "(Index, KernelName, gpu-id, ...)",
                                   f"{', '.join(header[:6])}")
        cols: dict[str, pa.Array] = {}
        originals: dict[str, str] = {}
        for i, h in enumerate(lower):
            if h not in cols:
                cols[h] = table.column(i).combine_chunks()
                originals[h] = header[i].strip()
        meta["_original_names"] = originals
        lines = None

        def row_line(i: int) -> str:
            nonlocal lines
            if lines is None:
                lines = row_line_numbers(data, 1)
            return f"line {lines[i]}" if i < len(lines) else f"row {i + 1}"

        info = _side_info(path, meta)
        k = kernels_from_columns(path, cols, lower, row_line, meta, dropped, "results.csv")
        check_cancel(cancelled)
        tables = assemble_kernels(path, k, info, meta)
        if "pid" in tables["kernels"].present:
            meta["pids"] = sorted(set(tables["kernels"].column("pid").drop_null().to_pylist()))
        progress(1.0)
        return Trace(**tables, meta=_finish_meta(meta, dropped))


# --------------------------------------------------------------------------- folder

def _sniff_folder(path: Path) -> float:
    names = {p.name for p in path.iterdir() if p.is_file()}
    if names & {"results.db", "results.json", "results.csv"}:
        return 0.9
    if any(n.startswith("results") and n.endswith("stats.csv") for n in names):
        return 0.5
    return 0.0


def read_folder(path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
    for name, reader in (("results.db", LegacyRocprofDbReader),
                         ("results.json", LegacyRocprofJsonReader),
                         ("results.csv", LegacyRocprofCsvReader)):
        f = path / name
        if f.is_file():
            tr = reader().read(f, progress, cancelled)
            others = [str(path / n) for n in ("results.db", "results.json", "results.csv")
                      if (path / n).is_file() and n != name]
            if others:
                tr = tr.with_meta(folder=str(path), also_in_folder=others)
            return tr
    raise _stats_only_error(path)


# --------------------------------------------------------------------------- results.json

Num = Union[int, float, str, None]


class _Event(msgspec.Struct):
    ph: str = ""
    name: Union[str, int, float, None] = None
    pid: Num = None
    tid: Num = None
    ts: Num = None
    dur: Num = None
    id: Num = None
    args: Union[dict, None] = None


class _Doc(msgspec.Struct):
    traceEvents: list[_Event] = []
    otherData: msgspec.Raw = msgspec.Raw(b"null")


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Keep the first value of a duplicated key (rocminfo repeats some lines)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        out.setdefault(k, v)
    return out


def _as_int(v: Any) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        if isinstance(v, int):
            out = v
        else:
            s = str(v).strip()
            out = int(s) if re.fullmatch(r"-?\d+", s) else int(round(float(s)))
    except (ValueError, OverflowError):
        return None
    return out if -(2**62) < out < 2**62 else None


def _us_to_ns(v: Any) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        if isinstance(v, int):
            out = v * 1000
        else:
            s = str(v).strip()
            out = int(s) * 1000 if re.fullmatch(r"-?\d+", s) else int(round(float(s) * 1000.0))
    except (ValueError, OverflowError):
        return None
    return out if -(2**62) < out < 2**62 else None


_SECTION_RE = re.compile(r"(GPU Barriers|GPU|COPY|CPU HIP API|CPU HSA API|HIP|HSA|Markers|KFD)"
                         r"\s*(\d*)")


def _decode_json(path: Path, data: bytes, meta: dict[str, Any], dropped: dict[str, int]) -> _Doc:
    try:
        return msgspec.json.decode(data, type=_Doc)
    except msgspec.ValidationError as exc:
        raise TraceFormatError(path, None, "a legacy rocprof Chrome trace",
                               str(exc)[:200]) from None
    except msgspec.DecodeError as exc:
        err = exc
    # a file cut short: keep the whole events (one per line, each starting with ",{")
    cut = data.rfind(b"\n,{")
    while cut > 0:
        try:
            doc = msgspec.json.decode(data[:cut] + b"]}", type=_Doc)
        except (msgspec.DecodeError, msgspec.ValidationError):
            cut = data.rfind(b"\n,{", 0, cut)
            continue
        lost = data[cut:].count(b"\n,{")
        meta["warnings"].append(f"{path}: the JSON ends early ({err}); read "
                                f"{len(doc.traceEvents):,} whole events, dropped about {lost} "
                                "cut-off events (and otherData)")
        dropped["events"] = lost
        return doc
    m = re.search(r"byte (\d+)", str(err))
    raise TraceFormatError(path, f"byte {m.group(1)}" if m else None,
                           "a legacy rocprof Chrome trace ({\"traceEvents\":[{}, ...]})",
                           str(err)) from None


class LegacyRocprofJsonReader:
    name = "legacy-rocprof"
    description = "Legacy rocprof v1 results.json (Chrome trace)"
    patterns = ("results.json", "*.json")
    priority = 40
    directories = False

    def sniff(self, path: Path) -> float:
        if path.is_dir():
            return 0.0
        head = head_text(path, 512)
        if re.match(r'^\s*\{\s*"traceEvents"\s*:\s*\[\s*\{\s*\}', head):
            return 0.95
        return 0.0

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        path = Path(path)
        meta = _new_meta(path, self.name)
        meta["file_kind"] = "results.json"
        dropped: dict[str, int] = {}
        try:
            data, gzw = read_bytes_tolerant(path)
        except OSError as exc:
            raise TraceFormatError(path, None, "a readable file", str(exc)) from None
        if gzw:
            meta["warnings"].append(gzw)
        if not data.strip():
            raise TraceFormatError(path, "byte 0", "a legacy rocprof Chrome trace", "an empty file")
        doc = _decode_json(path, data, meta, dropped)
        progress(0.4)
        check_cancel(cancelled)
        other = None
        raw_other = bytes(doc.otherData) if doc.otherData is not None else b"null"
        if raw_other.strip() not in (b"", b"null"):
            try:
                other = json.loads(raw_other, object_pairs_hook=_pairs_hook)
            except ValueError:
                other = None
        info = _side_info(path, meta)
        if info is None and isinstance(other, dict):
            info = rocminfo_from_otherdata(other)
            if info.get("hsa_runtime_version"):
                meta["hsa_runtime_version"] = info["hsa_runtime_version"]
        return _json_trace(path, doc.traceEvents, info, meta, dropped, cancelled, progress)


def _json_trace(path, events, info, meta, dropped, cancelled, progress) -> Trace:
    sections: dict[int, tuple[str, int | None]] = {}
    for ev in events:
        if ev.ph == "M" and ev.name == "process_name" and isinstance(ev.args, dict):
            sec = _as_int(ev.pid)
            m = _SECTION_RE.search(str(ev.args.get("name", "")))
            if sec is not None and m:
                sections[sec] = (m.group(1), int(m.group(2)) if m.group(2) else None)

    def kind(sec: int) -> tuple[str, int | None]:
        if sec in sections:
            lab, num = sections[sec]
            return {"GPU Barriers": "barrier", "GPU": "gpu", "COPY": "copy",
                    "CPU HIP API": "hip", "HIP": "hip", "CPU HSA API": "hsa", "HSA": "hsa",
                    "Markers": "marker", "KFD": "kfd"}[lab], num
        if sec == 0:
            return "marker", None
        if sec == 1:
            return "copy", None
        if sec == 2:
            return "hip", None
        if sec == 3:
            return "hsa", None
        if 6 <= sec < 518:
            return "gpu", sec - 6
        if sec >= 518:
            return "barrier", sec - 518
        return "other", None

    K: dict[str, list[Any]] = {k: [] for k in ("name", "start", "end", "gpu", "queue", "stream",
                                             "pid", "tid", "dispatch_id", "dispatch_ns", "grd",
                                             "wgr", "lds", "scr", "vgpr", "accum_vgpr", "sgpr",
                                             "sec", "ts_us")}
    A: dict[str, list[Any]] = {k: [] for k in ("name", "domain", "start", "end", "pid", "tid",
                                             "args", "start_us", "end_us")}
    C: dict[str, list[Any]] = {k: [] for k in ("name", "start", "end", "gpu", "queue", "stream",
                                             "pid", "tid", "sec", "ts_us")}
    M: dict[str, list[Any]] = {k: [] for k in ("name", "start", "end", "pid", "tid")}
    flows_s: dict[Any, tuple[int, int]] = {}
    flows_t: dict[Any, tuple[int, int]] = {}
    skipped: dict[str, int] = {}
    exact = approx = 0
    n_ev = len(events)
    for j, ev in enumerate(events):
        if j % 200000 == 0:
            check_cancel(cancelled)
            progress(0.4 + 0.4 * j / max(n_ev, 1))
        ph = ev.ph
        if ph in ("s", "t", "f"):
            ts = _as_int(ev.ts)
            sec = _as_int(ev.pid)
            if ts is None or sec is None:
                continue
            if ph == "s":
                flows_s[ev.id] = (_as_int(ev.tid) or 0, ts)
            else:
                flows_t[ev.id] = (sec, ts)
            continue
        if ph not in ("X", "i", "I"):
            continue
        sec = _as_int(ev.pid)
        if sec is None:
            skipped["events without a section"] = skipped.get("events without a section", 0) + 1
            continue
        what, num = kind(sec)
        args = ev.args if isinstance(ev.args, dict) else {}
        b = _as_int(args.get("BeginNs"))
        e = _as_int(args.get("EndNs"))
        if b is None or e is None:
            b = _us_to_ns(ev.ts)
            d = _us_to_ns(ev.dur) if ev.dur is not None else 0
            if b is None:
                skipped["events without a time"] = skipped.get("events without a time", 0) + 1
                continue
            e = b + (d or 0)
            approx += 1
        else:
            exact += 1
        if e < b:
            e = b
        name = str(ev.name) if ev.name is not None else str(args.get("Name", ""))
        ts_us = _as_int(ev.ts)
        if what == "gpu":
            K["name"].append(str(args.get("KernelName") or args.get("Name") or name))
            K["start"].append(b)
            K["end"].append(e)
            g = _as_int(args.get("gpu-id", args.get("dev-id")))
            K["gpu"].append(g if g is not None else (num if num is not None else sec - 6))
            K["queue"].append(_as_int(args.get("queue-id")))
            K["stream"].append(_as_int(args.get("stream-id")))
            K["pid"].append(_as_int(args.get("pid")))
            K["tid"].append(_as_int(args.get("tid")))
            K["dispatch_id"].append(_as_int(args.get("Index")))
            K["dispatch_ns"].append(_as_int(args.get("DispatchNs")))
            K["grd"].append(_as_int(args.get("grd", args.get("GRD"))))
            K["wgr"].append(_as_int(args.get("wgr", args.get("WGR"))))
            K["lds"].append(_as_int(args.get("lds", args.get("LDS"))))
            K["scr"].append(_as_int(args.get("scr", args.get("SCR"))))
            K["vgpr"].append(_as_int(args.get("arch_vgpr", args.get("vgpr"))))
            K["accum_vgpr"].append(_as_int(args.get("accum_vgpr", args.get("ACCUM_VGPR"))))
            K["sgpr"].append(_as_int(args.get("sgpr")))
            K["sec"].append(sec)
            K["ts_us"].append(ts_us)
        elif what in ("hip", "hsa"):
            A["name"].append(name)
            A["domain"].append("HIP_RUNTIME_API" if what == "hip" else "HSA_API")
            A["start"].append(b)
            A["end"].append(e)
            A["pid"].append(_as_int(args.get("pid")))
            A["tid"].append(_as_int(args.get("tid", ev.tid)))
            A["args"].append(args.get("args"))
            A["start_us"].append(ts_us if ts_us is not None else b // 1000)
            dur_us = _as_int(ev.dur)
            A["end_us"].append((ts_us + dur_us) if ts_us is not None and dur_us is not None
                               else -(-e // 1000))
        elif what == "copy":
            C["name"].append(name)
            C["start"].append(b)
            C["end"].append(e)
            g = _as_int(args.get("dev-id", args.get("gpu-id")))
            C["gpu"].append(g)
            C["queue"].append(_as_int(args.get("queue-id")))
            C["stream"].append(_as_int(args.get("stream-id")))
            C["pid"].append(_as_int(args.get("pid")))
            C["tid"].append(_as_int(args.get("tid")))
            C["sec"].append(sec)
            C["ts_us"].append(ts_us)
        elif what == "marker":
            M["name"].append(name)
            M["start"].append(b)
            M["end"].append(b if ph in ("i", "I") else e)
            M["pid"].append(_as_int(args.get("pid")))
            M["tid"].append(_as_int(args.get("tid", ev.tid)))
        else:
            key = "barrier packets" if what == "barrier" else f"{what} events"
            skipped[key] = skipped.get(key, 0) + 1
    progress(0.85)
    if skipped:
        meta["skipped"] = skipped
    if approx:
        meta["warnings"].append(f"{path}: {approx} events had no BeginNs/EndNs args; their times "
                                "come from the µs ts/dur fields (1 µs resolution)")
    prov = meta["provenance"]
    prov["start"] = prov["end"] = "args BeginNs/EndNs (exact ns); else ts/dur µs x 1000"
    prov["api_index"] = "ph:s/ph:t dep flow events (s inside the API call, t at the op start)"

    # devices
    raw_gpus = [g for g in K["gpu"] + C["gpu"] if g is not None]
    devices, mapping = build_devices(raw_gpus, info)
    tables: dict[str, Any] = {"devices": devices}

    # api
    n_api = len(A["name"])
    api_rows_by_tid: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    if n_api:
        tid_arr = np.array([t if t is not None else -1 for t in A["tid"]], dtype=np.int64)
        s_us = np.array(A["start_us"], dtype=np.int64)
        e_us = np.array(A["end_us"], dtype=np.int64)
        for t in np.unique(tid_arr):
            rows = np.flatnonzero(tid_arr == t)
            rows = rows[np.argsort(s_us[rows], kind="stable")]
            api_rows_by_tid[int(t)] = (rows, s_us[rows], e_us[rows])
        tables["api"] = build_table("api", {
            "name": A["name"], "domain": A["domain"],
            "start": np.array(A["start"], dtype=np.int64),
            "end": np.array(A["end"], dtype=np.int64),
            "pid": A["pid"], "tid": A["tid"]})

    # flows: t end → (section, ts µs) → GPU op rows; s end → API row containing ts on tid
    op_lookup: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for i, (sec, t) in enumerate(zip(K["sec"], K["ts_us"])):
        if t is not None:
            op_lookup.setdefault((sec, t), []).append(("k", i))
    for i, (sec, t) in enumerate(zip(C["sec"], C["ts_us"])):
        if t is not None:
            op_lookup.setdefault((sec, t), []).append(("c", i))
    k_api = np.full(len(K["name"]), -1, dtype=np.int64)
    c_api = np.full(len(C["name"]), -1, dtype=np.int64)
    unmatched = 0
    for fid in sorted(flows_t, key=lambda x: (str(type(x)), x)):
        if fid not in flows_s:
            continue
        tid, s_ts = flows_s[fid]
        ops = op_lookup.get(flows_t[fid])
        grp = api_rows_by_tid.get(tid)
        if not ops or grp is None:
            unmatched += 1
            continue
        rows, s_us, e_us = grp
        p = int(np.searchsorted(s_us, s_ts, side="right")) - 1
        if p < 0 or e_us[p] + 1 < s_ts:
            unmatched += 1
            continue
        kind_, idx = ops.pop(0)
        (k_api if kind_ == "k" else c_api)[idx] = rows[p]
    if unmatched:
        meta["warnings"].append(f"{path}: {unmatched} launch flow events could not be matched "
                                "to an API call and a GPU op")

    # kernels
    nk = len(K["name"])
    if nk:
        gpu = np.array(K["gpu"], dtype=np.int64)
        dev = map_ids(gpu, mapping)
        kcols: dict[str, Any] = {"name": strip_quotes(K["name"]), "device": dev,
                                 "start": np.array(K["start"], dtype=np.int64),
                                 "end": np.array(K["end"], dtype=np.int64)}
        overflow = {}
        for src, dst, bounds in (("pid", "pid", I32), ("tid", "tid", None),
                                 ("dispatch_id", "dispatch_id", None),
                                 ("dispatch_ns", "dispatch_ns", None), ("grd", "grid_x", None),
                                 ("wgr", "block_x", I16), ("lds", "lds_bytes", I32),
                                 ("scr", "scratch_bytes", I32), ("vgpr", "vgpr", I16),
                                 ("accum_vgpr", "accum_vgpr", I16), ("sgpr", "sgpr", I16),
                                 ("stream", "stream", I32)):
            vals = K[src]
            valid = np.array([v is not None for v in vals])
            if not valid.any():
                continue
            arr = np.array([v if v is not None else 0 for v in vals], dtype=np.int64)
            if bounds is None:
                kcols[dst] = pa.array(arr, mask=~valid if (~valid).any() else None)
            else:
                kcols[dst], over = fit(arr, valid, bounds)
                if over:
                    overflow[dst] = over
        for dst, cnt in overflow.items():
            meta["warnings"].append(f"{path}: {cnt} kernels have a {dst} too large for "
                                    f"hipscope's {dst} column; left null")
        qv = np.array([v is not None for v in K["queue"]])
        if qv.any():
            q, tables["queues"] = queues_for(dev, np.array([v or 0 for v in K["queue"]],
                                                           dtype=np.int64), qv)
            kcols["queue"] = pa.array(q, mask=q < 0 if (q < 0).any() else None)
        if n_api and (k_api >= 0).any():
            kcols["api_index"] = pa.array(k_api, mask=k_api < 0, type=pa.int32())
        tables["kernels"] = build_table("kernels", kcols)
    # copies
    nc = len(C["name"])
    if nc:
        ccols: dict[str, Any] = {"direction": copy_direction(C["name"]), "name": C["name"],
                                 "start": np.array(C["start"], dtype=np.int64),
                                 "end": np.array(C["end"], dtype=np.int64),
                                 "pid": C["pid"], "tid": C["tid"], "stream": C["stream"]}
        gv = np.array([g is not None for g in C["gpu"]])
        if gv.any():
            d = map_ids(np.array([g or 0 for g in C["gpu"]], dtype=np.int64), mapping)
            ccols["device"] = pa.array(d, mask=~gv if (~gv).any() else None)
        if n_api and (c_api >= 0).any():
            ccols["api_index"] = pa.array(c_api, mask=c_api < 0, type=pa.int32())
            sizes = [size_from_args(A["args"][a]) if a >= 0 else None for a in c_api.tolist()]
            if any(s is not None for s in sizes):
                ccols["bytes"] = sizes
                prov["copies.bytes"] = "sizeBytes(...) argument of the linked HIP call"
        tables["copies"] = build_table("copies", ccols)
    # markers
    if M["name"]:
        ms, me = np.array(M["start"], dtype=np.int64), np.array(M["end"], dtype=np.int64)
        lane = np.array([t if t is not None else -1 for t in M["tid"]], dtype=np.int64)
        tables["markers"] = build_table("markers", {
            "name": M["name"], "domain": ["roctx"] * len(M["name"]), "start": ms, "end": me,
            "depth": markers_depth(ms, me, lane), "pid": M["pid"], "tid": M["tid"]})
    pids = sorted({p for p in K["pid"] + A["pid"] + C["pid"] if p is not None})
    if pids:
        meta["pids"] = pids
    progress(1.0)
    return Trace(**tables, meta=_finish_meta(meta, dropped))


# --------------------------------------------------------------------------- results.db

def _sqlite_tables(path: Path) -> dict[str, list[str]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: [r[1] for r in con.execute(f'PRAGMA table_info("{n}")')] for n in names}
    finally:
        con.close()


class LegacyRocprofDbReader:
    name = "legacy-rocprof"
    description = "Legacy rocprof v1 results.db (SQLite)"
    patterns = ("results.db", "*.db")
    priority = 40
    directories = False

    def sniff(self, path: Path) -> float:
        if path.is_dir() or head_bytes(path, 16) != b"SQLite format 3\x00":
            return 0.0
        try:
            tables = _sqlite_tables(path)
        except sqlite3.Error:
            return 0.0
        if any(t.startswith("rocpd") for t in tables):
            return 0.0
        legacy = [t for t in ("KERN", "OPS", "HIP", "HSA", "COPY", "rocTX") if t in tables]
        if "KERN" in tables and "KernelName" in tables["KERN"]:
            return 0.95
        if any("BeginNs" in tables[t] for t in legacy):
            return 0.9
        return 0.0

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        path = Path(path)
        meta = _new_meta(path, self.name)
        meta["file_kind"] = "results.db"
        dropped: dict[str, int] = {}
        if not path.is_file() or head_bytes(path, 16) != b"SQLite format 3\x00":
            raise TraceFormatError(path, "byte 0", "an SQLite database (results.db)",
                                   "no SQLite header")
        try:
            tables = _sqlite_tables(path)
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise TraceFormatError(path, None, "a readable SQLite database", str(exc)) from None
        try:
            return self._read(path, con, tables, meta, dropped, progress, cancelled)
        except sqlite3.Error as exc:
            raise TraceFormatError(path, None, "a readable legacy rocprof database",
                                   str(exc)) from None
        finally:
            con.close()

    def _fetch(self, path, con, table, columns, wanted) -> dict[str, list[Any]]:
        have = [c for c in wanted if c in columns]
        if not have:
            return {}
        q = ", ".join(f'"{c}"' for c in have)
        rows = con.execute(f'SELECT {q} FROM "{table}" ORDER BY rowid').fetchall()
        out = {c: [r[i] for r in rows] for i, c in enumerate(have)}
        return out

    def _times(self, path, table, d, n) -> tuple[np.ndarray, np.ndarray]:
        b, e = d.get("BeginNs"), d.get("EndNs")
        if b is None or e is None:
            raise TraceFormatError(path, f"table {table}", "BeginNs and EndNs columns",
                                   f"columns {sorted(d)}")
        for i in range(n):
            if not isinstance(b[i], int) or not isinstance(e[i], int):
                raise TraceFormatError(path, f"table {table} row {i + 1}",
                                       "integer BeginNs/EndNs", f"{b[i]!r}, {e[i]!r}")
        try:
            bb, ee = np.array(b, dtype=np.int64), np.array(e, dtype=np.int64)
        except OverflowError:
            raise TraceFormatError(path, f"table {table}", "BeginNs/EndNs within int64",
                                   "larger values") from None
        neg = np.flatnonzero(ee < bb)
        if len(neg):
            i = int(neg[0])
            raise TraceFormatError(path, f"table {table} row {i + 1}", "EndNs >= BeginNs",
                                   f"EndNs {ee[i]} < BeginNs {bb[i]}")
        return bb, ee

    def _read(self, path, con, tables, meta, dropped, progress, cancelled) -> Trace:
        info = _side_info(path, meta)
        warnings = meta["warnings"]
        out: dict[str, Any] = {}
        prov = meta["provenance"]
        legacy = [t for t in ("KERN", "OPS", "HIP", "HSA", "COPY", "rocTX") if t in tables]
        if not legacy:
            raise TraceFormatError(path, "sqlite_master", "legacy rocprof tables (KERN, HIP, "
                                   "OPS, COPY, HSA, rocTX)", f"tables {sorted(tables)[:8]}")
        # ---- API (HIP then HSA)
        api_parts = []
        for t, domain in (("HIP", "HIP_RUNTIME_API"), ("HSA", "HSA_API")):
            if t not in tables:
                continue
            d = self._fetch(path, con, t, tables[t],
                            ["BeginNs", "EndNs", "pid", "tid", "Name", "args", "Index"])
            n = len(d.get("Name", d.get("BeginNs", [])))
            if n == 0:
                continue
            b, e = self._times(path, t, d, n)
            api_parts.append((t, domain, d, n, b, e))
        check_cancel(cancelled)
        progress(0.3)
        api_corr = api_pid = None
        api_args: list[Any] = []
        hip_rows = 0
        if api_parts:
            names, doms, starts, ends, pids, tids, corr = [], [], [], [], [], [], []
            for t, domain, d, n, b, e in api_parts:
                names += [str(x) for x in d.get("Name", [""] * n)]
                doms += [domain] * n
                starts.append(b)
                ends.append(e)
                pids += d.get("pid", [None] * n)
                tids += d.get("tid", [None] * n)
                corr += d.get("Index", [None] * n) if t == "HIP" else [None] * n
                api_args += d.get("args", [None] * n)
                if t == "HIP":
                    hip_rows = n
            out["api"] = build_table("api", {
                "name": names, "domain": doms, "start": np.concatenate(starts),
                "end": np.concatenate(ends), "pid": pids, "tid": tids, "correlation_id": corr})
            prov["api.correlation_id"] = "HIP.Index (roctracer correlation id)"
            if hip_rows:
                api_corr = np.array([c if isinstance(c, int) else -1 for c in corr[:hip_rows]],
                                    dtype=np.int64)
                api_pid = np.array([p if isinstance(p, int) else -1 for p in pids[:hip_rows]],
                                   dtype=np.int64)
        # ---- kernels: OPS (linked) and/or KERN (properties, counters)
        kern = None
        if "KERN" in tables:
            cols_k = tables["KERN"]
            rows = con.execute('SELECT * FROM "KERN" ORDER BY rowid').fetchall()
            if rows:
                lower = [c.strip().lower() for c in cols_k]
                arrs = {}
                originals = {}
                for i, c in enumerate(lower):
                    if c in arrs:
                        continue
                    vals = [r[i] for r in rows]
                    arrs[c] = pa.array([None if v is None else str(v) for v in vals],
                                       type=pa.string())
                    originals[c] = cols_k[i]
                meta["_original_names"] = originals
                kern = kernels_from_columns(
                    path, arrs, lower, lambda i: f"table KERN row {i + 1}", meta, dropped,
                    "KERN")
        check_cancel(cancelled)
        progress(0.6)
        ops = None
        if "OPS" in tables:
            d = self._fetch(path, con, "OPS", tables["OPS"],
                            ["BeginNs", "EndNs", "dev-id", "queue-id", "Name", "pid", "tid",
                             "stream-id", "Index"])
            n = len(d.get("BeginNs", []))
            if n:
                b, e = self._times(path, "OPS", d, n)
                ops = (d, n, b, e)
        dev_raw: list[int] = []
        if ops is not None:
            d, n, b, e = ops
            dev_raw += [x for x in d.get("dev-id", []) if isinstance(x, int)]
        elif kern is not None:
            dev_raw += kern["_raw_gpu"].tolist()
        copy = None
        if "COPY" in tables:
            dc = self._fetch(path, con, "COPY", tables["COPY"],
                             ["BeginNs", "EndNs", "dev-id", "queue-id", "Name", "pid", "tid",
                              "stream-id", "Index"])
            nc = len(dc.get("BeginNs", []))
            if nc:
                bc, ec = self._times(path, "COPY", dc, nc)
                copy = (dc, nc, bc, ec)
                dev_raw += [x for x in dc.get("dev-id", []) if isinstance(x, int)]
        if ops is None and kern is not None:
            tabs = assemble_kernels(path, kern, info, meta)
            out.update(tabs)
            mapping = {int(r): int(i) for r, i in zip(
                out["devices"].strings("raw_id"), out["devices"].numpy("index"))}
        else:
            out["devices"], mapping = build_devices(dev_raw, info)
        if ops is not None:
            d, n, b, e = ops
            names = strip_quotes(d.get("Name", [""] * n))
            gv = np.array([isinstance(x, int) for x in d.get("dev-id", [None] * n)])
            graw = np.array([x if isinstance(x, int) else 0 for x in d.get("dev-id", [0] * n)],
                            dtype=np.int64)
            if not gv.all():
                raise TraceFormatError(path, "table OPS", "a dev-id on every kernel row",
                                       f"{int((~gv).sum())} rows without one")
            dev = map_ids(graw, mapping)
            corr = np.array([x if isinstance(x, int) else -1 for x in d.get("Index", [None] * n)],
                            dtype=np.int64)
            kpid = np.array([x if isinstance(x, int) else -1 for x in d.get("pid", [None] * n)],
                            dtype=np.int64)
            kcols: dict[str, Any] = {"name": names, "device": dev, "start": b, "end": e,
                                     "pid": d.get("pid"), "tid": d.get("tid"),
                                     "stream": d.get("stream-id"),
                                     "correlation_id": pa.array(corr, mask=corr < 0)}
            prov["kernels.correlation_id"] = "OPS.Index (= HIP.Index)"
            if "queue-id" in d:
                qv = np.array([isinstance(x, int) for x in d["queue-id"]])
                q, out["queues"] = queues_for(dev, np.array(
                    [x if isinstance(x, int) else 0 for x in d["queue-id"]], dtype=np.int64), qv)
                kcols["queue"] = pa.array(q, mask=q < 0 if (q < 0).any() else None)
            if api_corr is not None:
                link = link_by_correlation(corr, kpid, api_corr, api_pid)
                link[corr < 0] = -1
                kcols["api_index"] = pa.array(link, mask=link < 0, type=pa.int32())
            ct = None
            if kern is not None:
                kn = kern["name"]
                if kn == names:
                    for c in ("dispatch_id", "dispatch_ns", "grid_x", "block_x", "lds_bytes",
                              "scratch_bytes", "vgpr", "accum_vgpr", "sgpr"):
                        if c in kern:
                            kcols[c] = kern[c]
                    cn, cv, ck = kern["_counters"]
                    ct = counters_table(cn, cv, ck, kcols.get("dispatch_id"))
                    prov["kernels (properties, counters)"] = "KERN rows merged with OPS in order"
                else:
                    warnings.append(f"{path}: tables KERN ({len(kn)} rows) and OPS ({n} rows) do "
                                    "not list the same kernels in the same order; kernels come "
                                    "from OPS and KERN's properties/counters were left out")
            out["kernels"] = build_table("kernels", kcols)
            if ct is not None:
                out["counters"] = ct
        # ---- copies
        if copy is not None:
            dc, nc, bc, ec = copy
            names = [str(x) for x in dc.get("Name", [""] * nc)]
            ccols: dict[str, Any] = {"direction": copy_direction(names), "name": names,
                                     "start": bc, "end": ec, "pid": dc.get("pid"),
                                     "tid": dc.get("tid"), "stream": dc.get("stream-id")}
            gv = np.array([isinstance(x, int) for x in dc.get("dev-id", [None] * nc)])
            if gv.any():
                g = map_ids(np.array([x if isinstance(x, int) else 0
                                      for x in dc.get("dev-id", [0] * nc)], dtype=np.int64),
                            mapping)
                ccols["device"] = pa.array(g, mask=~gv if (~gv).any() else None)
            corr = np.array([x if isinstance(x, int) else -1 for x in dc.get("Index", [None] * nc)],
                            dtype=np.int64)
            ccols["correlation_id"] = pa.array(corr, mask=corr < 0)
            if api_corr is not None:
                cpid = np.array([x if isinstance(x, int) else -1
                                 for x in dc.get("pid", [None] * nc)], dtype=np.int64)
                link = link_by_correlation(corr, cpid, api_corr, api_pid)
                link[corr < 0] = -1
                ccols["api_index"] = pa.array(link, mask=link < 0, type=pa.int32())
                sizes = [size_from_args(api_args[a]) if a >= 0 else None for a in link.tolist()]
                if any(s is not None for s in sizes):
                    ccols["bytes"] = sizes
                    prov["copies.bytes"] = "sizeBytes(...) argument of the linked HIP call"
            out["copies"] = build_table("copies", ccols)
        # ---- rocTX
        if "rocTX" in tables:
            dm = self._fetch(path, con, "rocTX", tables["rocTX"],
                             ["BeginNs", "EndNs", "pid", "tid", "Name"])
            nm = len(dm.get("BeginNs", []))
            if nm:
                bm, em = self._times(path, "rocTX", dm, nm)
                em = np.where(em - bm == 1, bm, np.maximum(em, bm))
                lane = np.array([x if isinstance(x, int) else -1
                                 for x in dm.get("tid", [None] * nm)], dtype=np.int64)
                out["markers"] = build_table("markers", {
                    "name": [str(x) for x in dm.get("Name", [""] * nm)],
                    "domain": ["roctx"] * nm, "start": bm, "end": em,
                    "depth": markers_depth(bm, em, lane), "pid": dm.get("pid"),
                    "tid": dm.get("tid")})
        if not any(k in out for k in ("kernels", "api", "copies", "markers")):
            raise TraceFormatError(path, "tables " + ", ".join(legacy),
                                   "at least one row of kernels, API calls, copies or markers",
                                   "empty tables")
        pids = set()
        for t in ("kernels", "api", "copies"):
            if t in out and "pid" in out[t].present:
                pids |= set(out[t].column("pid").drop_null().to_pylist())
        if pids:
            meta["pids"] = sorted(pids)
        meta.pop("_original_names", None)
        progress(1.0)
        return Trace(**out, meta=_finish_meta(meta, dropped))


# --------------------------------------------------------------------------- the registered reader

@register
class LegacyRocprofReader:
    """One reader for results.csv, results.json, results.db and results folders: the
    kind is told from the content (SQLite header, JSON object, else CSV)."""

    name = "legacy-rocprof"
    description = "Legacy rocprof v1 (results.csv / results.json / results.db / folder)"
    patterns = ("results.csv", "results.json", "results.db", "*.csv", "*.json", "*.db")
    priority = 40
    directories = True

    def sniff(self, path: Path) -> float:
        if path.is_dir():
            return _sniff_folder(path)
        return max(LegacyRocprofCsvReader().sniff(path), LegacyRocprofJsonReader().sniff(path),
                   LegacyRocprofDbReader().sniff(path))

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        path = Path(path)
        if path.is_dir():
            return read_folder(path, progress, cancelled)
        try:
            head = head_bytes(path, 64)
        except OSError as exc:
            raise TraceFormatError(path, None, "a readable file", str(exc)) from None
        if head.startswith(b"SQLite format 3") or path.suffix.lower() == ".db":
            return LegacyRocprofDbReader().read(path, progress, cancelled)
        if head.lstrip().startswith((b"{", b"[")) or (
                path.suffix.lower() == ".json" and not head.strip()):
            return LegacyRocprofJsonReader().read(path, progress, cancelled)
        return LegacyRocprofCsvReader().read(path, progress, cancelled)
