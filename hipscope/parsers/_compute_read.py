"""Reading a rocprof-compute workload folder (the format: :mod:`hipscope.parsers.rocprof_compute`,
which registers the reader and sniffs; this module is imported when a folder is read)."""


from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..model import Trace, build_table, categorical
from ..model.diagnostics import coded
from ._common import DEVICE_COLUMNS, devices_table, group_rows, warn_no_kernels
from ._compute_csv import CLOCK, FORMAT, ComputeCsv, workload_dir
from ._compute_side import (
    dispatch_keys,
    has_dispatchns,
    read_log,
    read_roofline,
    read_sysinfo,
    results_passes,
    ts_reasons,
    unmatched_rows,
    workload_csv,
)
from ._csv import (
    I16,
    I32,
    I64,
    fit,
)
from .base import (
    CancelledFn,
    ProgressFn,
    TraceFormatError,
    check_cancel,
)
from .rocprof_compute import RocprofComputeReader


class RocprofComputeReading(RocprofComputeReader):
    """The reading half of :class:`~hipscope.parsers.rocprof_compute.RocprofComputeReader`."""

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        path = Path(path)
        wd = workload_dir(path)
        if wd is None:
            raise TraceFormatError(path, None, "a rocprof-compute workload folder (with "
                                   "pmc_perf.csv or pmc_perf_0.csv)", "none here")
        meta: dict[str, Any] = {"format": FORMAT, "sources": [], "clock": CLOCK,
                                "tool": "rocprof-compute", "warnings": [], "provenance": {},
                                "serialized_replay": True, "workload_dir": str(wd)}
        dropped: dict[str, int] = {}
        warnings: list[str] = meta["warnings"]
        sysinfo = read_sysinfo(wd, meta)
        read_log(wd, meta)
        main_path = wd / "pmc_perf.csv"
        if not workload_csv(main_path):
            main_path = wd / "pmc_perf_0.csv"
        passes = [] if workload_csv(main_path) else results_passes(wd)
        if passes:
            main_path = passes.pop(0)
        main = ComputeCsv(main_path, warnings, dropped)
        if main.n == 0 and dropped:
            raise TraceFormatError(main_path, "line 2", "at least one dispatch row",
                                   "a cut-short row")
        meta["sources"].append(str(main_path))
        if main.n == 0:             # well-formed, no dispatches: an empty trace (item 10)
            warn_no_kernels(warnings, main_path, "only the CSV header")
            read_roofline(wd, meta)
            return Trace(meta=meta)
        progress(0.2)
        check_cancel(cancelled)
        if main.first("counter_name") is not None and main.first("counter_value") is not None:
            extra = [ComputeCsv(p, warnings, dropped) for p in passes]
            k, counters = self._long_form(main, extra, warnings)
            for f in (main, *extra):
                f.warn_refused(warnings)
            meta["sources"] += [str(f.path) for f in extra]
            meta["layout"] = ("long form, results_pmc_perf_<n> passes" if
                              main_path.name.startswith("results_") else "rocpd long form")
        else:
            k, counters = self._wide(wd, main, meta, dropped, progress, cancelled)
        progress(0.8)
        _clock_and_notes(wd, main_path, meta, k.pop("_lossy"))
        tables = _tables(k, counters, sysinfo)
        read_roofline(wd, meta)
        if dropped:
            meta["dropped"] = dropped
        progress(1.0)
        return Trace(**tables, meta=meta)

    # ------------------------------------------------------------------ kernels
    def _identity(self, f: ComputeCsv, rows: np.ndarray | None = None) -> dict[str, Any]:
        """Kernel columns from a file's identity columns (rows: subset/order)."""
        def take(x):
            return x if rows is None else x[rows]

        k: dict[str, Any] = {}
        prov = {}
        i = f.first("kernel_name")
        if i is None:
            raise TraceFormatError(f.path, "line 1", "a Kernel_Name column",
                                   ", ".join(f.header[:6]))
        names = f.col(i)
        k["name"] = names if rows is None else names.take(pa.array(rows))
        got = f.ints("gpu_id")
        k["_raw_gpu"] = take(np.where(got[1], got[0], -1)) if got else (
            np.zeros(f.n if rows is None else len(rows), dtype=np.int64))
        got = f.ints("dispatch_id")
        if got is None:
            raise TraceFormatError(f.path, "line 1", "a Dispatch_ID column",
                                   ", ".join(f.header[:6]))
        k["dispatch_id"] = pa.array(take(got[0]), mask=take(~got[1]) if (~got[1]).any() else None)
        s, e = f.ints("start_timestamp"), f.ints("end_timestamp")
        if s is None or e is None:
            raise TraceFormatError(f.path, "line 1", "Start_Timestamp and End_Timestamp columns",
                                   "no such columns")
        ok = s[1] & e[1]
        if not ok.all():
            r = int(np.flatnonzero(~ok)[0])
            raise TraceFormatError(f.path, f.where(r), "Start_Timestamp and End_Timestamp values",
                                   "an empty cell")
        bad = e[0] < s[0]
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise TraceFormatError(f.path, f.where(r), "End_Timestamp >= Start_Timestamp",
                                   f"{e[0][r]} < {s[0][r]}")
        k["start"], k["end"] = take(s[0]), take(e[0])
        k["_lossy"] = s[2] or e[2]
        for base, dst, bounds in (("grid_size", "grid_x", I64), ("workgroup_size", "block_x", I16),
                                  ("lds_per_workgroup", "lds_bytes", I32),
                                  ("scratch_per_workitem", "scratch_bytes", I32),
                                  ("arch_vgpr", "vgpr", I16), ("accum_vgpr", "accum_vgpr", I16),
                                  ("sgpr", "sgpr", I16)):
            got = f.ints(base)
            if got is None:
                continue
            k[dst], _ = fit(take(got[0]), take(got[1]), bounds)
            prov[dst] = f"{f.path.name} {f.header[f.first(base)]}"
        got = f.ints("correlation_id")
        if got is not None:
            v, valid = take(got[0]), take(got[1]) & (take(got[0]) > 0)
            if valid.any():
                k["correlation_id"] = pa.array(v, mask=~valid if (~valid).any() else None)
        return k

    def _long_form(self, f: ComputeCsv, extra: list[ComputeCsv], warnings: list[str]):
        """Kernels = the (GPU_ID, Dispatch_ID) of ``f`` in first-appearance order; the
        counters of ``f`` and of the other passes' rows for those dispatches (every pass
        replays the same launches, numbered alike); first value of a counter wins."""
        gpu, di = dispatch_keys(f)
        _u, code, first = group_rows(gpu, di)
        order = np.argsort(first, kind="stable")          # kernels in first-appearance order
        remap = np.empty(len(order), dtype=np.int64)
        remap[order] = np.arange(len(order))
        k = self._identity(f, first[order])
        at = {(int(g), int(d)): int(remap[c])
              for g, d, c in zip(gpu[first], di[first], code[first])}
        kcodes, names_l, values, ccodes, lost = [], [], [], [], []
        for g in (f, *extra):
            gg, dd = (gpu, di) if g is f else dispatch_keys(g)
            kc = np.array([at.get((int(a), int(b)), -1) for a, b in zip(gg, dd)], dtype=np.int64)
            if (kc < 0).any():
                lost.append(f"{g.path.name} ({int((kc < 0).sum())} rows)")
            vals, valid = g.floats(g.first("counter_value"), "a number in Counter_Value")
            enc = pc.dictionary_encode(g.col(g.first("counter_name")))
            names_l.append(enc.dictionary.to_pylist())
            ccodes.append(enc.indices.to_numpy(zero_copy_only=False).astype(np.int64))
            keep = valid & (kc >= 0)
            kcodes.append(np.where(keep, kc, -1))
            values.append(vals)
        if lost:
            warnings.append(f"{len(lost)} pass files hold dispatches that {f.path.name} lacks: "
                            f"{', '.join(lost[:4])}; their counters were left out")
        names = sorted({n for ns in names_l for n in ns}, key=lambda n: (
            next(i for i, ns in enumerate(names_l) if n in ns), n))
        pos = {n: i for i, n in enumerate(names)}
        ccode = np.concatenate([np.array([pos[n] for n in ns], dtype=np.int64)[c] if len(c)
                                else c for ns, c in zip(names_l, ccodes)])
        kcode, vals = np.concatenate(kcodes), np.concatenate(values)
        keep = np.flatnonzero(kcode >= 0)
        pair = kcode[keep] * (len(names) + 1) + ccode[keep]     # dedupe (kernel, counter)
        _, firsts = np.unique(pair, return_index=True)
        keep = keep[np.sort(firsts)]
        return k, (names, ccode[keep].astype(np.int32), vals[keep], kcode[keep])

    def _wide(self, wd: Path, main: ComputeCsv, meta, dropped, progress, cancelled):
        warnings = meta["warnings"]
        k = self._identity(main)
        n = main.n
        disp = main.ints("dispatch_id")[0]
        store: dict[str, tuple[str, np.ndarray, np.ndarray]] = {}
        conflicts: dict[str, list[str]] = {}
        same = 0

        def add_file(f: ComputeCsv, align: np.ndarray | None) -> None:
            nonlocal same
            stem = f.path.stem
            for i in f.counter_columns():
                name = f.header[i].strip()
                if name == "SQ_ACCUM_PREV_HIRES" and stem.startswith("SQ_"):
                    name = f"{stem}_ACCUM"
                v, valid = f.floats(i, f"a number in counter column {f.header[i]!r}")
                if align is not None:
                    ok = align >= 0
                    vv = np.zeros(n)
                    vm = np.zeros(n, dtype=bool)
                    vv[ok], vm[ok] = v[align[ok]], valid[align[ok]]
                    v, valid = vv, vm
                if name in store:
                    _, pv, pm = store[name]
                    if np.array_equal(pm, valid) and np.array_equal(pv[pm], v[valid]):
                        same += 1
                    else:
                        conflicts.setdefault(name, []).append(f.path.name)
                    continue
                store[name] = (f.path.name, v, valid)

        add_file(main, None)
        main.warn_refused(warnings)
        extra = sorted(wd.glob("pmc_perf_*.csv"),
                       key=lambda p: int(re.sub(r"\D", "", p.stem) or 0))
        extra = [p for p in extra if p != main.path] + sorted(wd.glob("SQ_*.csv"))
        unmatched: list[str | None] = []
        for j, p in enumerate(extra):
            check_cancel(cancelled)
            progress(0.2 + 0.5 * j / max(len(extra), 1))
            f = ComputeCsv(p, warnings, dropped)
            align = self._align(f, n, disp, main)
            if align is None:
                warnings.append(f"{p}: its {f.n} dispatches do not match pmc_perf.csv's {n} "
                                "(neither by count nor by Dispatch_ID); its counters were left out")
                continue
            meta["sources"].append(str(p))
            unmatched.append(unmatched_rows(f, align))
            add_file(f, None if f.n == n and (align == np.arange(n)).all() else align)
            f.warn_refused(warnings)
        if any(unmatched):
            shown = [u for u in unmatched if u]
            warnings.append(f"{len(shown)} pass files hold dispatches that {main.path.name} "
                            f"({n} dispatches) lacks: {', '.join(shown[:4])}"
                            f"{', ...' if len(shown) > 4 else ''}; their counters were left out")
        if conflicts:
            names = sorted(conflicts)
            warnings.append(f"{len(names)} counters were measured again in other replay passes "
                            f"with different values ({', '.join(names[:8])}"
                            f"{', ...' if len(names) > 8 else ''}); kept {main.path.name}'s values")
            meta["counter_conflicts"] = {c: conflicts[c] for c in names}
        ts = wd / "timestamps.csv"
        if ts.is_file():
            self._timestamps(ts, main, k, meta, dropped)
        if not store:
            return k, None
        names, codes, values, kidx = [], [], [], []
        for c, (name, (_, v, valid)) in enumerate(store.items()):
            rows = np.flatnonzero(valid)
            names.append(name)
            codes.append(np.full(len(rows), c, dtype=np.int32))
            values.append(v[rows])
            kidx.append(rows)
        return k, (names, np.concatenate(codes), np.concatenate(values), np.concatenate(kidx))

    def _timestamps(self, ts: Path, main: ComputeCsv, k: dict[str, Any], meta, dropped) -> None:
        """DispatchNs (and pid/tid) from timestamps.csv for the kernels whose row there
        has the same Start_Timestamp (the same run); the kernels left without them
        (no row, an empty/NaN time, End < Start, another run) are counted in a warning,
        since the queue-delay figures then leave them out."""
        n, warnings = main.n, meta["warnings"]
        f = ComputeCsv(ts, warnings, dropped)
        meta["sources"].append(str(ts))
        wanted = [(b, d, bd) for b, d, bd in (("dispatchns", "dispatch_ns", None),
                                              ("pid", "pid", I32), ("tid", "tid", None))
                  if f.first(b) is not None]
        if not wanted:
            return
        align = self._align(f, n, main.ints("dispatch_id")[0], main)
        if align is None:
            warnings.append(f"{ts}: none of its {f.n} dispatches is one of {main.path.name}'s; "
                            "its DispatchNs/pid/tid were left out (no queue delays)")
            return
        s, e = f.ints("start_timestamp"), f.ints("end_timestamp")
        ok = align >= 0
        row = np.where(ok, align, 0)
        same_run = np.zeros(n, dtype=bool)
        if s is not None:
            same_run = ok & s[1][row] & (s[0][row] == k["start"])
        for base, dst, bounds in wanted if same_run.any() else []:
            got = f.ints(base)
            vals = np.where(same_run, got[0][row], 0).astype(np.int64)
            vm = same_run & got[1][row]
            if bounds is None:
                k[dst] = pa.array(vals, mask=~vm if (~vm).any() else None)
            else:
                k[dst], _ = fit(vals, vm, bounds)
            meta["provenance"][dst] = f"timestamps.csv {base} (rows whose start matches)"
        got = same_run.copy()
        if wanted[0][0] == "dispatchns":
            got &= f.ints("dispatchns")[1][row]         # an empty/NaN DispatchNs
        if got.all():
            return
        lost = np.flatnonzero(~got & ok)
        at = f"; first at {f.where(int(row[lost[0]]))}" if len(lost) else ""
        what = (f"{f.header[f.first('dispatchns')]}, so the queue-delay figures leave them out"
                if wanted[0][0] == "dispatchns" else "pid/tid")
        warnings.append(f"{ts}: {int((~got).sum())} of {n} kernels get no {what} "
                        f"({ts_reasons(s, e, ok, row, same_run, got)}{at})")

    def _align(self, f: ComputeCsv, n: int, disp: np.ndarray,
               main: ComputeCsv) -> np.ndarray | None:
        """Row in ``f`` for each of main's dispatches (-1 = none), or None."""
        if f.n == n:
            return np.arange(n)
        got = f.ints("dispatch_id")
        if got is None:
            return None
        pos = {int(d): i for i, d in enumerate(got[0].tolist())}
        out = np.array([pos.get(int(d), -1) for d in disp.tolist()], dtype=np.int64)
        return out if (out >= 0).any() else None


def _clock_and_notes(wd: Path, main_path: Path, meta: dict[str, Any], lossy: bool) -> None:
    """The clock the folder's backend used, the lossy-timestamp warning and the note
    that replayed timestamps are not a real timeline."""
    warnings = meta["warnings"]
    backend = str(meta.get("backend") or meta.get("layout") or "").lower()
    if not backend:
        backend = ("rocprofv3" if list(wd.glob("pmc_perf_*.csv")) else
                   "rocprofv1" if has_dispatchns(wd / "timestamps.csv") else "")
    if "rocpd" in backend or "v3" in backend:
        meta["clock"] = "CLOCK_BOOTTIME"
    elif "v1" in backend or "v2" in backend:
        meta["clock"] = "HSA system clock"
    meta["provenance"].update({"start": f"{main_path.name} Start_Timestamp",
                               "end": f"{main_path.name} End_Timestamp"})
    if lossy:
        warnings.append(f"{main_path}: timestamps were saved in lossy floating-point "
                        "notation (e.g. 8.1097E+14, ~5 significant digits): start/end are "
                        "rounded to that precision and kernel durations are not meaningful")
        meta["lossy_timestamps"] = True
    warnings.append(coded("timeline.synthetic",
                          "rocprof-compute replays every kernel once per counter pass, "
                          "serialised: start/end are one pass's (or the median of the "
                          "passes') times, not a real timeline; compare durations, not "
                          "overlaps", main_path, "info"))


def _tables(k: dict[str, Any], counters, sysinfo: dict[str, Any]) -> dict[str, Any]:
    """Kernels (with hipscope's device indexes), devices and counters."""
    raw = k.pop("_raw_gpu")
    ids = sorted(set(raw.tolist()))
    mapping = {r: i for i, r in enumerate(ids)}
    cu = sysinfo.get("cu_per_gpu")
    devices = devices_table([{
        "index": i, "name": sysinfo.get("gpu_model") or f"GPU {rid}", "vendor": "AMD",
        "arch": sysinfo.get("gpu_arch") or None,
        "compute_units": int(cu) if cu and cu.isdigit() else None,
        "raw_id": str(rid), "host": sysinfo.get("hostname") or None,
    } for rid, i in mapping.items()], DEVICE_COLUMNS[:-1])
    k["device"] = np.array([mapping[r] for r in raw.tolist()], dtype=np.int64)
    kernels = build_table("kernels", k)
    tables: dict[str, Any] = {"kernels": kernels, "devices": devices}
    if counters is not None:
        names, codes, values, kidx = counters
        cols = {"counter": categorical(codes, names), "value": values,
                "kernel_index": kidx.astype(np.int32)}
        if "dispatch_id" in kernels.present:
            cols["dispatch_id"] = kernels.column("dispatch_id").take(pa.array(kidx))
        tables["counters"] = build_table("counters", cols, n=len(values))
    return tables
