"""Nsight Compute CSV (``ncu --csv``): ``--page details`` (long) and ``--page raw`` (wide).

ncu's stdout is read as written: its ``==PROF==`` lines and the program's own
output before the CSV header (``"ID","Process ID","Process Name",...``) are
skipped, as are ``==PROF==``/``==WARNING==`` lines later on.

* **details** (long form): one row per kernel × metric (``Section Name, Metric
  Name, Metric Unit, Metric Value``); newer ncu adds rule columns (``Rule Name,
  Rule Type, Rule Description, Estimated Speedup Type, Estimated Speedup``) and
  rule rows whose metric fields are empty: those go to ``meta["rules"]``.
* **raw** (wide form): one row per kernel, metric columns such as
  ``gpu__time_duration.sum``; the row after the header is a units row with empty
  identity cells.

Values lose their thousands separators (``"3,189,379,398.59"``); non-numeric
metric values (``CachePreferNone``, ``PolicySpread``...) are not counters and are
left out (counted in ``meta["non_numeric_metrics"]``). Units go to
``counters.unit``. ``Block Size``/``Grid Size`` ``"(256, 1, 1)"`` give
``block_x..z``; ncu's grid counts blocks, hipscope's ``grid_x`` counts
work-items, so ``grid_x = grid blocks × block_x``.

**Timeline: synthetic, by decision.** ncu serialises kernels and records no
timestamps, but ``kernels.start``/``end`` are required. Rather than zero-length
kernels (which would make every duration figure 0), kernels are laid
back-to-back from t = 0 in ncu's ID order, each lasting its measured GPU time
(``gpu__time_duration.sum`` / the details ``Duration`` metric, converted to ns).
Durations, per-kernel statistics and totals are real; positions, gaps, overlap
and busy fraction are not. ``meta["synthetic_timeline"] = True``, ``meta["clock"]``
says so, and a warning repeats it. A kernel without a duration metric gets zero
length and is named in a warning. ncu's version is not in the CSV:
``tool_version`` stays null.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..model import Trace, build_table, categorical
from ._common import read_input
from .base import (
    CancelledFn,
    ProgressFn,
    TraceFormatError,
    check_cancel,
    head_text,
    register,
)

FORMAT = "ncu-csv"
CLOCK = ("synthetic: kernels laid back-to-back from 0 by measured duration "
         "(ncu serialises kernels and records no timestamps)")
IDENT = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
         "Block Size", "Grid Size", "Device", "CC"]
LONG = ["Section Name", "Metric Name", "Metric Unit", "Metric Value"]
RULES = ["Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type",
         "Estimated Speedup"]
_HEADER_RE = re.compile(r'^\s*"?ID"?\s*,\s*"?Process ID"?\s*,', re.M)
_NOISE = ("==PROF==", "==WARNING==", "==ERROR==", "==INFO==")
_UNIT_NS = {"ns": 1.0, "nsecond": 1.0, "nanosecond": 1.0, "us": 1e3, "usecond": 1e3,
            "microsecond": 1e3, "ms": 1e6, "msecond": 1e6, "millisecond": 1e6,
            "s": 1e9, "second": 1e9}


def _num(text: str | None) -> float | None:
    if text is None:
        return None
    s = text.strip().replace(",", "")
    if not s or s.lower() in ("n/a", "nan", "none"):
        return None
    try:
        return float(s)
    except ValueError:
        return None


def _dim3(text: str | None) -> tuple[int | None, int | None, int | None]:
    if not text:
        return None, None, None
    nums = re.findall(r"\d[\d,]*", text)
    vals = [int(x.replace(",", "")) for x in nums[:3]]
    while len(vals) < 3:
        vals.append(None)
    return vals[0], vals[1], vals[2]


@register
class NcuCsvReader:
    name = FORMAT
    description = "Nsight Compute CSV (ncu --csv --page details|raw)"
    patterns = ("*.csv", "*.txt", "*.log")
    priority = 40
    directories = False

    def sniff(self, path: Path) -> float:
        if path.is_dir():
            return 0.0
        head = head_text(path, 65536)
        m = _HEADER_RE.search(head)
        if m and "Kernel Name" in head[m.start():m.start() + 400]:
            return 0.95
        if "==PROF==" in head:
            return 0.3
        return 0.0

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        path = Path(path)
        meta: dict[str, Any] = {"format": FORMAT, "sources": [str(path)], "clock": CLOCK,
                                "tool": "Nsight Compute", "tool_version": None,
                                "synthetic_timeline": True, "warnings": [], "provenance": {}}
        dropped: dict[str, int] = {}
        data = read_input(path, meta["warnings"])
        text = data.decode("utf-8", errors="replace")
        m = _HEADER_RE.search(text)
        if not m:
            raise TraceFormatError(path, None, 'an Nsight Compute CSV header ("ID","Process ID",'
                                   '"Process Name",...)',
                                   "an empty file" if not text.strip() else "no such line")
        header_line = text.count("\n", 0, m.start()) + 1
        if header_line > 1:
            meta["preamble_lines"] = header_line - 1
        body = text[m.start():]
        lines = body.split("\n")
        torn = not body.endswith("\n") and lines[-1].strip() != ""
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
        missing = [c for c in ("ID", "Kernel Name") if c not in header]
        if missing:
            raise TraceFormatError(path, f"line {header_line}", "an ncu CSV header with "
                                   "ID and Kernel Name", ", ".join(header[:6]))
        long_form = all(c in header for c in LONG)
        min_fields = header.index("Metric Value") + 1 if long_form else len(header)
        if torn and len(rows) > 1:
            last = keep[-1]
            if last.count('"') % 2 or len(rows[-1]) < min_fields:
                meta["warnings"].append(f"{path}: the last line (line {where[-1]}) is cut short; "
                                        "dropped it")
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
        if not re.fullmatch(r"\d+", kid.replace(",", "")):
            raise TraceFormatError(path, f"line {line}", "a kernel ID (an integer) in column ID",
                                   repr(kid[:40]))
        return {"id": int(kid.replace(",", "")), "pid": get("Process ID"),
                "process": get("Process Name"), "host": get("Host Name"),
                "name": get("Kernel Name"), "context": get("Context"), "stream": get("Stream"),
                "block": get("Block Size"), "grid": get("Grid Size"), "device": get("Device"),
                "cc": get("CC")}

    def _long(self, path, rows, where, col, meta):
        kernels: dict[int, dict[str, Any]] = {}
        counters: dict[tuple[int, str], tuple[float, str]] = {}
        rules: list[dict[str, Any]] = []
        non_numeric: dict[str, int] = {}
        iname, iunit, ival, isec = (col["Metric Name"], col["Metric Unit"], col["Metric Value"],
                                    col["Section Name"])
        for r, line in zip(rows[1:], where[1:]):
            if r and r[0].strip() == "ID":
                continue    # a repeated header (several processes)
            if len(r) <= max(col["ID"], col["Kernel Name"]):
                raise TraceFormatError(path, f"line {line}", f"at least {ival + 1} fields",
                                       f"{len(r)}")
            ident = self._ident_row(path, r, line, col)
            k = kernels.setdefault(ident["id"], ident)
            metric = r[iname].strip() if iname < len(r) else ""
            if not metric:
                if "Rule Name" in col and col["Rule Name"] < len(r) and r[col["Rule Name"]].strip():
                    rules.append({"id": ident["id"],
                                  "section": r[isec].strip() if isec < len(r) else "",
                                  **{c.lower().replace(" ", "_"): r[col[c]].strip()
                                     for c in RULES if c in col and col[c] < len(r)}})
                continue
            unit = r[iunit].strip() if iunit < len(r) else ""
            raw = r[ival] if ival < len(r) else ""
            v = _num(raw)
            if v is None:
                if raw.strip():
                    non_numeric[metric] = non_numeric.get(metric, 0) + 1
                continue
            counters.setdefault((ident["id"], metric), (v, unit))
            if metric == "Duration" and "duration" not in k:
                k["duration"] = (v, unit)
            elif metric == "Registers Per Thread":
                k.setdefault("registers", v)
            elif metric == "Static Shared Memory Per Block":
                k.setdefault("lds", v)
            elif metric == "Dynamic Shared Memory Per Block":
                k.setdefault("dyn_lds", v)
            elif metric == "# SMs":
                k.setdefault("sms", v)
        if rules:
            meta["rules"] = rules
        if non_numeric:
            meta["non_numeric_metrics"] = non_numeric
        meta["layout"] = "details (long form)"
        return kernels, counters, "Duration metric (details page)"

    def _wide(self, path, rows, where, col, header, meta):
        kernels: dict[int, dict[str, Any]] = {}
        counters: dict[tuple[int, str], tuple[float, str]] = {}
        units = [""] * len(header)
        ident_idx = {col[c] for c in IDENT if c in col}
        metric_idx = [i for i in range(len(header)) if i not in ident_idx]
        non_numeric: dict[str, int] = {}
        for r, line in zip(rows[1:], where[1:]):
            if r and r[0].strip() == "ID":
                continue
            if r and not r[col["ID"]].strip() and not (r[col["Kernel Name"]].strip()
                                                        if col["Kernel Name"] < len(r) else ""):
                units = [u.strip() for u in r] + [""] * (len(header) - len(r))   # units row
                continue
            if len(r) != len(header):
                raise TraceFormatError(path, f"line {line}", f"{len(header)} fields like the "
                                       "header", f"{len(r)}")
            ident = self._ident_row(path, r, line, col)
            k = kernels.setdefault(ident["id"], ident)
            for i in metric_idx:
                name = header[i]
                v = _num(r[i])
                if v is None:
                    if r[i].strip():
                        if name == "device__attribute_display_name":
                            k["device_name"] = r[i].strip()
                        else:
                            non_numeric[name] = non_numeric.get(name, 0) + 1
                    continue
                counters.setdefault((ident["id"], name), (v, units[i]))
            get = lambda n: counters.get((ident["id"], n))  # noqa: E731
            for metric, key in (("gpu__time_duration.sum", "duration"),
                                ("launch__registers_per_thread", "registers"),
                                ("launch__shared_mem_per_block_static", "lds"),
                                ("launch__shared_mem_per_block_dynamic", "dyn_lds"),
                                ("device__attribute_multiprocessor_count", "sms"),
                                ("device__attribute_total_memory", "memory")):
                got = get(metric)
                if got is not None and key not in k:
                    k[key] = got if key == "duration" else got[0]
        if non_numeric:
            meta["non_numeric_metrics"] = non_numeric
        meta["layout"] = "raw (wide form)"
        return kernels, counters, "gpu__time_duration.sum (raw page)"

    # ------------------------------------------------------------------ tables
    def _build(self, path, parsed, meta, dropped) -> Trace:
        kernels, counters, dur_src = parsed
        warnings = meta["warnings"]
        if not kernels:
            raise TraceFormatError(path, None, "at least one profiled kernel row",
                                   "only the header")
        ids = sorted(kernels)
        n = len(ids)
        dur = np.zeros(n, dtype=np.int64)
        no_dur = []
        for j, kid in enumerate(ids):
            d = kernels[kid].get("duration")
            if d is None:
                no_dur.append(kid)
                continue
            scale = _UNIT_NS.get(d[1].strip().lower(), None) if d[1] else 1.0
            if scale is None:
                no_dur.append(kid)
                continue
            dur[j] = int(round(d[0] * scale))
        # a negative Duration keeps its raw value (the interval rule drops that kernel)
        # but takes no room in the synthetic layout
        room = np.maximum(dur, 0)
        start = np.cumsum(room) - room
        end = start + dur
        warnings.append("Nsight Compute records no timestamps (it serialises and replays each "
                        "kernel): kernels are laid back-to-back from 0 in ID order, each lasting "
                        "its measured GPU time. Durations are real; positions, gaps, overlap and "
                        "busy fraction are synthetic")
        if no_dur:
            warnings.append(f"{path}: {len(no_dur)} kernels have no duration metric "
                            f"(IDs {no_dur[:10]}): shown with zero length")
        meta["provenance"].update({"start": "synthetic: previous kernels' durations summed",
                                   "end": f"start + {dur_src}",
                                   "grid_x": "Grid Size (blocks) x Block Size"})
        # devices
        dev_keys = sorted({(kernels[k]["device"], kernels[k]["host"]) for k in ids},
                          key=lambda x: (_num(x[0]) or 0, x[0], x[1]))
        dmap = {key: i for i, key in enumerate(dev_keys)}
        drow: dict[str, list[Any]] = {c: [] for c in ("index", "name", "vendor", "arch",
                                                      "compute_units", "raw_id", "host",
                                                      "memory_bytes")}
        for key, i in dmap.items():
            sample = next(kernels[k] for k in ids
                          if (kernels[k]["device"], kernels[k]["host"]) == key)
            cc = sample.get("cc") or ""
            arch = "sm_" + cc.replace(".", "") if re.fullmatch(r"\d+\.\d+", cc) else None
            drow["index"].append(i)
            drow["name"].append(sample.get("device_name") or f"NVIDIA GPU {key[0]}")
            drow["vendor"].append("NVIDIA")
            drow["arch"].append(arch)
            sms = sample.get("sms")
            drow["compute_units"].append(int(sms) if sms is not None else None)
            drow["raw_id"].append(key[0])
            drow["host"].append(key[1] or None)
            mem = sample.get("memory")
            drow["memory_bytes"].append(int(mem) if mem is not None else None)
        devices = build_table("devices", drow, n=len(dev_keys))
        # kernels
        kcols: dict[str, list[Any]] = {c: [] for c in (
            "name", "device", "pid", "stream", "dispatch_id", "grid_x", "grid_y", "grid_z",
            "block_x", "block_y", "block_z", "registers", "lds_bytes", "dyn_lds_bytes")}
        over = 0
        for kid in ids:
            k = kernels[kid]
            kcols["name"].append(k["name"])
            kcols["device"].append(dmap[(k["device"], k["host"])])
            kcols["pid"].append(int(k["pid"]) if k["pid"].isdigit() else None)
            kcols["stream"].append(int(k["stream"]) if k["stream"].isdigit() else None)
            kcols["dispatch_id"].append(kid)
            b = _dim3(k["block"])
            g = _dim3(k["grid"])
            for ax, bv, gv in zip("xyz", b, g):
                kcols[f"block_{ax}"].append(bv if bv is not None and bv < 2**15 else None)
                items = gv * bv if gv is not None and bv is not None else None
                if items is not None and items >= 2**31:
                    over += 1
                    items = None
                kcols[f"grid_{ax}"].append(items)
            for key, dst in (("registers", "registers"), ("lds", "lds_bytes"),
                             ("dyn_lds", "dyn_lds_bytes")):
                v = k.get(key)
                limit = 2**15 if dst == "registers" else 2**31
                kcols[dst].append(int(v) if v is not None and 0 <= v < limit else None)
        if over:
            warnings.append(f"{path}: {over} grid sizes exceed 2**31 work-items; left null")
        kernels_t = build_table("kernels", {**kcols, "start": start, "end": end}, n=n)
        # counters
        row_of = {kid: j for j, kid in enumerate(ids)}
        names: dict[str, int] = {}
        units: dict[str, int] = {}
        cc, vv, kk, uu = [], [], [], []
        for (kid, metric), (v, unit) in counters.items():
            cc.append(names.setdefault(metric, len(names)))
            vv.append(v)
            kk.append(row_of[kid])
            uu.append(units.setdefault(unit, len(units)) if unit else -1)
        nct = len(vv)
        ctab = build_table("counters", {
            "counter": categorical(np.array(cc, dtype=np.int32), list(names)),
            "value": np.array(vv, dtype=np.float64),
            "kernel_index": np.array(kk, dtype=np.int32),
            "dispatch_id": np.array([ids[j] for j in kk], dtype=np.int64),
            "unit": categorical(np.array(uu, dtype=np.int32), list(units)),
        }, n=nct)
        # streams
        skeys = sorted({(kcols["stream"][j], kcols["device"][j], kcols["pid"][j])
                        for j in range(n) if kcols["stream"][j] is not None},
                       key=lambda x: (x[0], x[1], x[2] or 0))
        streams = build_table("streams", {
            "stream": [s for s, _, _ in skeys], "device": [d for _, d, _ in skeys],
            "pid": [p for _, _, p in skeys], "raw_id": [str(s) for s, _, _ in skeys]},
            n=len(skeys))
        pids = sorted({p for p in kcols["pid"] if p is not None})
        if pids:
            meta["pids"] = pids
        hosts = sorted({kernels[k]["host"] for k in ids if kernels[k]["host"]})
        if len(hosts) == 1:
            meta["host"] = hosts[0]
        procs = sorted({kernels[k]["process"] for k in ids if kernels[k]["process"]})
        if procs:
            meta["process_names"] = procs
        if dropped:
            meta["dropped"] = dropped
        return Trace(kernels=kernels_t, counters=ctab, devices=devices, streams=streams,
                     meta=meta)
