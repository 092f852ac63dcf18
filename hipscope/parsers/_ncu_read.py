"""Reading an Nsight Compute CSV (the format: :mod:`hipscope.parsers.ncu_csv`, which
registers the reader and sniffs; this module is imported when a file is read)."""


from __future__ import annotations

import csv
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from ..model import Trace, build_table, categorical
from ..model.diagnostics import coded
from ._common import read_input, warn_no_kernels
from ._ncu_summary import is_summary_header, read_summary
from ._ncu_tables import I64_MAX, kernel_columns, ncu_devices, process_meta, to_number
from .base import (
    CancelledFn,
    ProgressFn,
    TraceFormatError,
    check_cancel,
)
from .ncu_csv import CLOCK, FORMAT, NcuCsvReader, _header_match

IDENT = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
         "Block Size", "Grid Size", "Device", "CC"]
LONG = ["Section Name", "Metric Name", "Metric Unit", "Metric Value"]
RULES = ["Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type",
         "Estimated Speedup"]
_NOTHING_PROFILED = "No kernels were profiled."   # ncu's ==WARNING== when none matched
_NOISE = ("==PROF==", "==WARNING==", "==ERROR==", "==INFO==")
UNIT_NS = {"ns": 1.0, "nsecond": 1.0, "nanosecond": 1.0, "us": 1e3, "usecond": 1e3,
            "microsecond": 1e3, "ms": 1e6, "msecond": 1e6, "millisecond": 1e6,
            "s": 1e9, "second": 1e9}


def _empty(path: Path, meta: dict[str, Any], detail: str,
           dropped: dict[str, int] | None = None) -> Trace:
    """A well-formed output without kernels: an empty trace, warned (issue 13 item 10)."""
    warn_no_kernels(meta["warnings"], path, detail)
    if dropped:
        meta["dropped"] = dropped
    return Trace(meta=meta)


def _cut_short(text: str, row: list[str], n_header: int, min_fields: int,
               warnings: list[str], where: str) -> bool:
    """Whether a last line without its newline may be cut short (warned as such):
    ncu ends every line with a newline and quotes every field, so only a line with
    every header field whose last field closes its quote is surely whole. A metric
    row (fewer fields than the header, ending in a separator) may be cut anywhere."""
    if text.count('"') % 2:
        why = "an open quote"
    elif len(row) < min_fields:
        why = f"{len(row)} of {n_header} fields"
    elif len(row) < n_header or not text.rstrip().endswith('"'):
        why = "no newline, its last field may be cut"
    else:
        return False
    warnings.append(coded("input.cut_short", f"{where} is cut short ({why}: {text[-60:]!r}); "
                          "dropped it", where))
    return True


def _field(r: list[str], i: int) -> str:
    return r[i].strip() if i < len(r) else ""


class _Parsed:
    """Kernels (one dict per launch, in file order) and their numeric metrics."""

    def __init__(self):
        self.dur_src: Counter[str] = Counter()                        # duration metric -> uses
        self.kernels: list[dict[str, Any]] = []
        self.by_kernel: list[dict[str, tuple[float, str, int]]] = []  # metric -> value, unit, line
        self.non_numeric: dict[str, int] = {}
        self.refused: list[tuple[int, str, str]] = []                 # line, metric, text
        self.bad: list[set[str]] = []                                 # refused, per kernel

    def add(self, ident: dict[str, Any]) -> None:
        self.kernels.append(ident)
        self.by_kernel.append({})
        self.bad.append(set())

    def value(self, metric: str, raw: str, unit: str, line: int) -> None:
        """Record one metric of the last kernel (the first value of a metric wins);
        text is counted as non-numeric, inf/2**1024 are refused (kept for a warning)."""
        v = to_number(raw)
        if v is None:
            if raw.strip():
                self.non_numeric[metric] = self.non_numeric.get(metric, 0) + 1
        elif not math.isfinite(v):
            self.refused.append((line, metric, raw.strip()))
            self.bad[-1].add(metric)
        else:
            self.by_kernel[-1].setdefault(metric, (v, unit, line))


class NcuCsvReading(NcuCsvReader):
    """The reading half of :class:`~hipscope.parsers.ncu_csv.NcuCsvReader`."""

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        path = Path(path)
        meta: dict[str, Any] = {"format": FORMAT, "sources": [str(path)], "clock": CLOCK,
                                "tool": "Nsight Compute", "tool_version": None,
                                "synthetic_timeline": True, "warnings": [], "provenance": {}}
        dropped: dict[str, int] = {}
        data = read_input(path, meta["warnings"])
        text = data.decode("utf-8", errors="replace")
        m = _header_match(text)
        if not m and _NOTHING_PROFILED in text:
            return _empty(path, meta, f"ncu said: {_NOTHING_PROFILED!r}")
        if not m:
            raise TraceFormatError(path, None, 'an Nsight Compute CSV header ("ID","Process ID",'
                                   '"Process Name",...)',
                                   "an empty file" if not text.strip() else "no such line")
        header_line = text.count("\n", 0, m.start()) + 1
        if header_line > 1:
            meta["preamble_lines"] = header_line - 1
        body = text[m.start():]
        lines = body.split("\n")
        torn = (not body.endswith("\n") and lines[-1].strip() != ""
                and not lines[-1].startswith(_NOISE))
        # keep CSV lines, dropping ncu's own messages; remember file line numbers
        keep: list[str] = []
        where: list[int] = []
        noise = 0
        for i, ln in enumerate(lines):
            if ln.startswith(_NOISE):
                noise += 1
                continue
            if not ln.strip():
                continue
            keep.append(ln.rstrip("\r"))
            where.append(header_line + i)
        if noise:
            meta["skipped_lines"] = noise
        try:
            rows = list(csv.reader(keep))
        except csv.Error as exc:
            raise TraceFormatError(path, None, "a readable CSV table", str(exc)) from None
        header = [h.strip() for h in rows[0]]
        if is_summary_header(header):
            if torn and _cut_short(keep[-1], rows[-1], len(header), len(header),
                                   meta["warnings"], f"{path}: the last line (line {where[-1]})"):
                meta["dropped"] = {"rows": 1}
                rows.pop()
                where.pop()
            return read_summary(path, rows, where, meta)
        missing = [c for c in ("ID", "Kernel Name") if c not in header]
        if missing:
            raise TraceFormatError(path, f"line {header_line}", "an ncu CSV header with "
                                   "ID and Kernel Name", ", ".join(header[:6]))
        long_form = all(c in header for c in LONG)
        min_fields = header.index("Metric Value") + 1 if long_form else len(header)
        if torn and len(rows) > 1 and _cut_short(keep[-1], rows[-1], len(header), min_fields,
                                                 meta["warnings"], f"{path}: the last line "
                                                 f"(line {where[-1]})"):
            dropped["rows"] = 1
            rows.pop()
            where.pop()
        col = {h: i for i, h in reversed(list(enumerate(header)))}
        progress(0.3)
        check_cancel(cancelled)
        if long_form:
            parsed = self._long(path, rows, where, col, meta)
        else:
            parsed = self._wide(path, rows, where, col, header, meta)
        progress(0.8)
        trace = self._build(path, parsed, meta, dropped)
        progress(1.0)
        return trace

    # ------------------------------------------------------------------ parsing
    def _ident_row(self, path, r, line, col) -> dict[str, Any]:
        def get(name):
            i = col.get(name)
            return r[i].strip() if i is not None and i < len(r) else ""

        kid = get("ID")
        if not re.fullmatch(r"\d+", kid.replace(",", ""), re.ASCII) or \
                int(kid.replace(",", "")) > I64_MAX:
            raise TraceFormatError(path, f"line {line}", "a kernel ID (an integer below 2**63) "
                                   "in column ID", repr(kid[:40]))
        return {"id": int(kid.replace(",", "")), "pid": get("Process ID"),
                "process": get("Process Name"), "host": get("Host Name"),
                "name": get("Kernel Name"), "context": get("Context"), "stream": get("Stream"),
                "block": get("Block Size"), "grid": get("Grid Size"), "device": get("Device"),
                "cc": get("CC")}

    def _long(self, path, rows, where, col, meta):
        """Kernels by launch (0, 1, ... in file order), not by ID: ncu writes the rows of
        one launch together, so a launch ends where the identity columns change or a
        (section, metric) repeats; IDs can repeat (files joined, edited)."""
        p = _Parsed()
        rules: list[dict[str, Any]] = []
        iname, iunit, ival, isec = (col["Metric Name"], col["Metric Unit"], col["Metric Value"],
                                    col["Section Name"])
        key, seen = None, set()
        for r, line in zip(rows[1:], where[1:]):
            if r and r[0].strip() == "ID":
                continue    # a repeated header (several processes)
            if len(r) <= max(col["ID"], col["Kernel Name"]):
                raise TraceFormatError(path, f"line {line}", f"at least {ival + 1} fields",
                                       f"{len(r)}")
            ident = self._ident_row(path, r, line, col)
            metric, section = _field(r, iname), _field(r, isec)
            if tuple(ident.values()) != key or (metric and (section, metric) in seen):
                key, seen = tuple(ident.values()), set()
                p.add(ident)
            if not metric:
                if "Rule Name" in col and _field(r, col["Rule Name"]):
                    rules.append({"id": ident["id"], "kernel_index": len(p.kernels) - 1,
                                  "section": section,
                                  **{c.lower().replace(" ", "_"): _field(r, col[c])
                                     for c in RULES if c in col}})
                continue
            seen.add((section, metric))
            p.value(metric, r[ival] if ival < len(r) else "", _field(r, iunit), line)
        for k, got, bad in zip(p.kernels, p.by_kernel, p.bad):
            _launch_fields(k, got, bad, p)
        if rules:
            meta["rules"] = rules
        meta["layout"] = "details (long form)"
        return p

    def _wide(self, path, rows, where, col, header, meta):
        """One kernel per row (a repeated ID is another launch)."""
        p = _Parsed()
        units = [""] * len(header)
        ident_idx = {col[c] for c in IDENT if c in col}
        metric_idx = [i for i in range(len(header)) if i not in ident_idx]
        for r, line in zip(rows[1:], where[1:]):
            if r and r[0].strip() == "ID":
                continue
            if r and not r[col["ID"]].strip() and not _field(r, col["Kernel Name"]):
                units = [u.strip() for u in r] + [""] * (len(header) - len(r))   # units row
                continue
            if len(r) != len(header):
                raise TraceFormatError(path, f"line {line}", f"{len(header)} fields like the "
                                       "header", f"{len(r)}")
            k = self._ident_row(path, r, line, col)
            p.add(k)
            for i in metric_idx:
                if header[i] == "device__attribute_display_name" and r[i].strip():
                    k["device_name"] = r[i].strip()
                else:
                    p.value(header[i], r[i], units[i], line)
            _launch_fields(k, p.by_kernel[-1], p.bad[-1], p)
        meta["layout"] = "raw (wide form)"
        return p

    # ------------------------------------------------------------------ tables
    def _build(self, path, parsed: _Parsed, meta, dropped) -> Trace:
        warnings = meta["warnings"]
        if not parsed.kernels:
            return _empty(path, meta, "only the CSV header", dropped)
        order = sorted(range(len(parsed.kernels)), key=lambda j: (parsed.kernels[j]["id"], j))
        ks = [parsed.kernels[j] for j in order]
        ids = [k["id"] for k in ks]
        n = len(ks)
        _warn_values(path, parsed, ids, warnings)
        dur = _durations(path, ks, warnings)
        # a negative Duration keeps its raw value (the interval rule drops that kernel)
        # but takes no room in the synthetic layout
        room = np.maximum(dur, 0)
        start = np.cumsum(room) - room
        end = start + dur
        meta["provenance"].update({"start": "synthetic: previous kernels' durations summed",
                                   "end": "start + " + (" / ".join(parsed.dur_src)
                                                        or "no duration metric"),
                                   "grid_x": "Grid Size (blocks) x Block Size"})
        devices, dmap = ncu_devices(ks)
        kcols = kernel_columns(ks, dmap, warnings, path)
        kernels_t = build_table("kernels", {**kcols, "start": start, "end": end}, n=n)
        ctab = _counters(parsed, order, ids)
        at = {src: j for j, src in enumerate(order)}
        for rule in meta.get("rules", []):          # launch in file order -> kernel row
            rule["kernel_index"] = at[rule["kernel_index"]]
        skeys = sorted({(kcols["stream"][j], kcols["device"][j], kcols["pid"][j])
                        for j in range(n) if kcols["stream"][j] is not None},
                       key=lambda x: (x[0], x[1], x[2] or 0))
        streams = build_table("streams", {
            "stream": [s for s, _, _ in skeys], "device": [d for _, d, _ in skeys],
            "pid": [p for _, _, p in skeys], "raw_id": [str(s) for s, _, _ in skeys]},
            n=len(skeys))
        process_meta(meta, ks, kcols)
        if parsed.non_numeric:
            meta["non_numeric_metrics"] = parsed.non_numeric
        if dropped:
            meta["dropped"] = dropped
        return Trace(kernels=kernels_t, counters=ctab, devices=devices, streams=streams,
                     meta=meta)


# A launch's measured GPU time, best first: the raw metric (raw page, --metrics, the
# details page of ncu >= 2019.1), the details page's "Duration" (GPU Speed Of Light),
# then the other roll-ups of gpu__time_duration (one instance per launch: all equal).
DURATION_METRICS = ("gpu__time_duration.sum", "Duration", "gpu__time_duration.avg",
                    "gpu__time_duration.max", "gpu__time_duration.min", "gpu__time_duration")
_LAUNCH_METRICS = (("registers", ("launch__registers_per_thread", "Registers Per Thread")),
                   ("lds", ("launch__shared_mem_per_block_static",
                            "Static Shared Memory Per Block")),
                   ("dyn_lds", ("launch__shared_mem_per_block_dynamic",
                                "Dynamic Shared Memory Per Block")),
                   ("sms", ("device__attribute_multiprocessor_count", "launch__sm_count",
                            "# SMs")),
                   ("memory", ("device__attribute_total_memory",)))


def _launch_fields(k: dict[str, Any], got: dict[str, tuple[float, str, int]],
                   bad: set[str], p: _Parsed) -> None:
    """Duration, registers, LDS, SMs of one launch from its metrics, by either spelling
    (raw metric names or the details page's labels), whatever the page. A refused
    (not finite) duration is not replaced by a later roll-up: it stays missing."""
    dur = next((m for m in DURATION_METRICS if m in got or m in bad), None)
    if dur in bad:
        dur = None
    if dur is not None:
        k["duration"] = got[dur]
        p.dur_src[dur] += 1
    for name, metrics in _LAUNCH_METRICS:
        hit = next((m for m in metrics if m in got), None)
        if hit is not None:
            k[name] = got[hit]


def _counters(parsed: _Parsed, order: list[int], ids: list[int]):
    """The counters table: every numeric metric of every kernel (in display order)."""
    names: dict[str, int] = {}
    units: dict[str, int] = {}
    cc, vv, kk, uu = [], [], [], []
    for j, src in enumerate(order):
        for metric, (v, unit, _line) in parsed.by_kernel[src].items():
            cc.append(names.setdefault(metric, len(names)))
            vv.append(v)
            kk.append(j)
            uu.append(units.setdefault(unit, len(units)) if unit else -1)
    return build_table("counters", {
        "counter": categorical(np.array(cc, dtype=np.int32), list(names)),
        "value": np.array(vv, dtype=np.float64),
        "kernel_index": np.array(kk, dtype=np.int32),
        "dispatch_id": np.array([ids[j] for j in kk], dtype=np.int64),
        "unit": categorical(np.array(uu, dtype=np.int32), list(units)),
    }, n=len(vv))


def _warn_values(path: Path, parsed: _Parsed, ids: list[int], warnings: list[str]) -> None:
    """Warnings for refused (not finite) metric values and for IDs shared by launches."""
    if parsed.refused:
        line, metric, text = parsed.refused[0]
        warnings.append(f"{path}: left out {len(parsed.refused)} metric values that are not "
                        f"finite numbers (first: line {line}, {metric} = {text[:40]!r})")
    dup = {k: c for k, c in Counter(ids).items() if c > 1}
    if dup:
        shown = ", ".join(f"ID {k} x{c}" for k, c in list(dup.items())[:5])
        warnings.append(f"{path}: {len(dup)} kernel IDs are shared by {sum(dup.values())} "
                        f"launches ({shown}{', ...' if len(dup) > 5 else ''}); kept apart by "
                        "row order (a launch ends where the kernel columns change or a "
                        "metric repeats)")


def _durations(path: Path, ks: list[dict[str, Any]], warnings: list[str]) -> np.ndarray:
    """Each kernel's measured time in ns, with warnings: 0 when missing, in an unknown
    unit, or when it would end past 2**63 ns laid after the kernels before it."""
    dur = np.zeros(len(ks), dtype=np.int64)
    no_dur, too_big = [], []
    total = 0
    for j, k in enumerate(ks):
        d = k.get("duration")
        scale = None if d is None else UNIT_NS.get(d[1].strip().lower()) if d[1] else 1.0
        if d is None or scale is None:
            no_dur.append(k["id"])
            continue
        if not abs(d[0] * scale) < 2**63 - total:
            too_big.append((k["id"], d[2]))
            continue
        dur[j] = int(round(d[0] * scale))
        total += abs(int(dur[j]))
    warnings.append(coded("timeline.synthetic",
                          "Nsight Compute records no timestamps (it serialises and replays each "
                          "kernel): kernels are laid back-to-back from 0 in ID order, each lasting "
                          "its measured GPU time. Durations are real; positions, gaps, overlap "
                          "and busy fraction are synthetic", path, "info"))
    if no_dur:
        warnings.append(f"{path}: {len(no_dur)} kernels have no duration metric "
                        f"(IDs {no_dur[:10]}): shown with zero length")
    if too_big:
        warnings.append(f"{path}: {len(too_big)} kernel durations do not fit in 64-bit ns, "
                        "alone or after the kernels before them (first: ID "
                        f"{too_big[0][0]} at line {too_big[0][1]}): shown with zero length")
    return dur
