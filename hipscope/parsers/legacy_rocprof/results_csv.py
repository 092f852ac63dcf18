"""Legacy rocprof results.csv (and the KERN table of results.db): kernels, their
properties and the counters after the identity columns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ...model import Trace, build_table
from .._common import read_input, warn_no_kernels
from .._csv import (
    I16,
    I32,
    RowPlaces,
    drop_torn_tail,
    fit,
    float_column,
    int_column,
    read_csv_strings,
)
from ..base import (
    CancelledFn,
    ProgressFn,
    TraceFormatError,
    check_cancel,
)
from .common import (
    NO_CLOCK,
    build_devices,
    finish_legacy_meta,
    legacy_meta,
    map_ids,
    queues_for,
    side_info,
    strip_quotes,
)
from .sniff import STATS_HEADER, sniff_csv
from .sniff import csv_header as _sniff_csv_header

IDENTITY = {
    "index", "kernelname", "gpu-id", "queue-id", "queue-index", "pid", "tid", "grd", "wgr",
    "lds", "scr", "arch_vgpr", "vgpr", "accum_vgpr", "sgpr", "wave_size", "sig", "obj",
    "fbar", "dev-id", "stream-id", "dispatch_id", "kernel_name", "gpu_id",
}
TIMES = {"dispatchns", "beginns", "endns", "completens", "durationns"}


_KERNEL_INTS = [("index", "dispatch_id", None), ("pid", "pid", I32), ("tid", "tid", None),
                ("grd", "grid_x", None), ("wgr", "block_x", I16), ("lds", "lds_bytes", I32),
                ("scr", "scratch_bytes", I32), ("arch_vgpr", "vgpr", I16),
                ("vgpr", "vgpr", I16), ("accum_vgpr", "accum_vgpr", I16),
                ("sgpr", "sgpr", I16), ("dispatchns", "dispatch_ns", None),
                ("stream-id", "stream", I32)]


class _Columns:
    """Lower-cased legacy columns with number parsing whose errors name the row."""

    def __init__(self, path: Path, cols: dict[str, pa.Array], row_line: Callable[[int], str]):
        self.path, self.cols, self.row_line = path, cols, row_line

    def ints(self, name: str):
        return int_column(self.cols[name], self.path, self.row_line, name)

    def floats(self, name: str):
        return float_column(self.cols[name], self.path, self.row_line, name)


def _kernel_times(c: _Columns, n: int, meta: dict[str, Any], dropped: dict[str, int]):
    """(timed, begin, end, rows to keep): rows without BeginNs/EndNs are dropped when
    others have them; none at all means an untimed file."""
    cols, path = c.cols, c.path
    timed = "beginns" in cols and "endns" in cols
    keep = np.ones(n, dtype=bool)
    b = e = None
    if timed:
        b, bv, _ = c.ints("beginns")
        e, ev, _ = c.ints("endns")
        ok = bv & ev
        if not ok.any():
            timed = False
        elif not ok.all():
            miss = int((~ok).sum())
            meta["warnings"].append(f"{path}: {miss} kernel rows have no BeginNs/EndNs; "
                                    "dropped them and their counters")
            dropped["kernels without timestamps"] = miss
            keep = ok
    # EndNs < BeginNs passes through: the shared interval rule drops such rows
    return timed, b, e, keep


def _set_times(out: dict[str, Any], timed: bool, b, e, sel: np.ndarray, path: Path,
               meta: dict[str, Any], source: str) -> None:
    prov = meta["provenance"]
    if timed:
        out["start"], out["end"] = b[sel], e[sel]
        prov["start"], prov["end"] = f"{source} BeginNs", f"{source} EndNs"
        return
    if len(sel) == 0:           # no rows at all: nothing is untimed (warned as empty)
        out["start"] = out["end"] = np.zeros(0, dtype=np.int64)
        return
    out["start"] = np.zeros(len(sel), dtype=np.int64)
    out["end"] = np.zeros(len(sel), dtype=np.int64)
    meta["clock"] = NO_CLOCK
    meta["untimed_kernels"] = int(len(sel))
    meta["warnings"].append(
        f"{path} has no BeginNs/EndNs timestamps (profiled without "
        f"--timestamp on): its {len(sel)} kernels are listed with start = end = 0 "
        "in dispatch order; their durations are unknown, only their counters "
        "and properties are real")
    prov["start"] = prov["end"] = "none: no timestamps in the file (0)"


def _kernel_ints(c: _Columns, out: dict[str, Any], sel: np.ndarray, meta: dict[str, Any],
                 source: str) -> None:
    cols, prov = c.cols, meta["provenance"]
    gpu_col = "gpu-id" if "gpu-id" in cols else ("dev-id" if "dev-id" in cols else None)
    if gpu_col:
        g, gv, _ = c.ints(gpu_col)
        g = np.where(gv, g, -1)[sel]
    else:
        g = np.zeros(len(sel), dtype=np.int64)
    out["_raw_gpu"] = g
    overflow: dict[str, int] = {}
    for src, dst, bounds in _KERNEL_INTS:
        if src not in cols or dst in out:
            continue
        v, valid, _ = c.ints(src)
        v, valid = v[sel], valid[sel]
        if bounds is None:
            out[dst] = pa.array(v, mask=~valid if (~valid).any() else None)
        else:
            out[dst], over = fit(v, valid, bounds)
            if over:
                overflow[dst] = over
        prov[dst] = f"{source} {src}"
    if "queue-id" in cols:
        q, qv, _ = c.ints("queue-id")
        out["_raw_queue"], out["_queue_valid"] = q[sel], qv[sel]
    for dst, cnt in overflow.items():
        meta["warnings"].append(
            f"{c.path}: {cnt} kernels have a {dst} too large for hipscope's "
            f"{dst} column (e.g. grid sizes of 2**32 - 256 work-items); left null")


def _kernel_counters(c: _Columns, order: list[str], sel: np.ndarray, meta: dict[str, Any]):
    """Counters: the columns after the last identity column, not timestamps."""
    last_id = max((i for i, name in enumerate(order) if name in IDENTITY), default=-1)
    counter_names = [name for i, name in enumerate(order) if i > last_id and name not in TIMES
                     and name not in IDENTITY]
    originals = meta.pop("_original_names", {})
    cnames, cvals, ckern = [], [], []
    for name in counter_names:
        v, valid = c.floats(name)
        v, valid = v[sel], valid[sel]
        rows = np.flatnonzero(valid)
        cnames.append((originals.get(name, name), len(rows)))
        cvals.append(v[rows])
        ckern.append(rows)
    return cnames, cvals, ckern


def kernels_from_columns(path: Path, cols: dict[str, pa.Array], order: list[str],
                         row_line: Callable[[int], str], meta: dict[str, Any],
                         dropped: dict[str, int], source: str) -> dict[str, Any]:
    """Kernel columns, raw gpu ids and counters from legacy KERN/results.csv columns
    (``cols`` by lower-cased name, ``order`` = lower-cased names in file order)."""
    n = len(next(iter(cols.values()))) if cols else 0
    if "kernelname" not in cols:
        raise TraceFormatError(path, source, "a KernelName column", f"columns {order[:8]}")
    c = _Columns(path, cols, row_line)
    timed, b, e, keep = _kernel_times(c, n, meta, dropped)
    sel = np.flatnonzero(keep)
    out: dict[str, Any] = {}
    names_col = cols["kernelname"] if keep.all() else cols["kernelname"].take(pa.array(sel))
    out["name"] = strip_quotes(names_col.to_pylist())
    _set_times(out, timed, b, e, sel, path, meta, source)
    _kernel_ints(c, out, sel, meta, source)
    out["_counters"] = _kernel_counters(c, order, sel, meta)
    return out


def counters_table(cnames, cvals, ckern, dispatch: pa.Array | None):
    if not cnames:
        return None
    counts = np.array([k for _, k in cnames], dtype=np.int64)
    total = int(counts.sum())
    codes = np.repeat(np.arange(len(cnames), dtype=np.int32), counts)
    kidx = np.concatenate(ckern).astype(np.int32) if total else np.zeros(0, np.int32)
    from ...model import categorical

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


def stats_only_error(path: Path) -> TraceFormatError:
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
        return sniff_csv(path)

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        path = Path(path)
        if path.is_dir():
            from .folder import read_folder

            return read_folder(path, progress, cancelled)
        meta = legacy_meta(path, self.name)
        meta["file_kind"] = "results.csv"
        dropped: dict[str, int] = {}
        data = read_input(path, meta["warnings"])
        fields = _sniff_csv_header(data[:8192].decode("utf-8", errors="replace"))
        if fields == STATS_HEADER:
            raise stats_only_error(path)
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
        row_line = RowPlaces(data, 1)

        info = side_info(path, meta)
        k = kernels_from_columns(path, cols, lower, row_line, meta, dropped, "results.csv")
        check_cancel(cancelled)
        tables = assemble_kernels(path, k, info, meta)
        if len(tables["kernels"]) == 0:
            warn_no_kernels(meta["warnings"], path, "only the CSV header")
        if "pid" in tables["kernels"].present:
            meta["pids"] = sorted(set(tables["kernels"].column("pid").drop_null().to_pylist()))
        progress(1.0)
        return Trace(**tables, meta=finish_legacy_meta(meta, dropped))
