"""rocprofv3 CSV sets (ROCm 6.2 - 7.x): ``<prefix>_<domain>.csv`` files of one or more
processes, read and merged into one trace.

What is read (docs/readers.md is the contract; ../shared/docs/FORMATS.md sections 1-3
the format):

* ``kernel_trace`` -> kernels; ``hip_api_trace`` (also 6.2 ``hip_runtime_trace`` /
  ``hip_compile_trace``, 7.0 docs ``hip_trace``), ``hsa_api_trace`` (6.2 ``hsa_trace``),
  ``rccl_api_trace``, ``rocdecode_api_trace``, ``rocjpeg_api_trace`` -> api;
  ``marker_api_trace`` -> markers (domain "roctx", nesting depth computed);
  ``memory_copy_trace`` -> copies (no byte counts in CSV);
  ``counter_collection`` -> counters (long form), linked to kernels;
  ``agent_info`` -> devices. ``memory_allocation_trace`` and ``scratch_memory_trace``
  have no table in hipscope's schema: they are summarised in ``meta`` only.
* Columns are chosen **by header name** (never by position); a missing column is null.
  Files are parsed with ``pyarrow.csv`` (multithreaded, names straight to dictionary
  type); no Python loop touches kernel rows.
* Opening a folder reads every process in it (``<pid>_*.csv``, also in ``<host>/``
  subfolders); opening one file reads its own set: the files of its prefix
  (``<pid>_*.csv``) beside it, never the other runs in its folder. Processes that
  never overlap in time are warned about by ``open_trace`` (separate runs).
  Files whose names are not rocprofv3 domains but whose header is a rocprofv3 trace
  header (e.g. ``rocpd convert`` output) are read by their header.
* Kernels and copies are linked to their launching API call by Correlation_Id within
  one process (the file prefix's pid); a correlation id that matches several API rows
  (files of different runs in one folder) is left unlinked and reported.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from ...model import Trace
from ...model.table import distinct
from .._common import warn_no_kernels
from ..base import Cancelled, CancelledFn, ProgressFn, TraceFormatError, check_cancel, register
from .assemble import assemble
from .columns import CsvFile, dict_parts, Load
from .files import (
    TRACE_KINDS,
    discover,
    first_line,
    parse_header,
    CsvSet,
    sniff_dir,
    header_kind,
    split_name,
)
from .links import kernels_from_counters, link_counters, link_to_api
from .tables import (
    dedupe_api,
    Part,
    read_api_like,
    read_copies,
    read_counters,
    read_kernels,
    summarise_ops,
)
from .agents import read_agent_info

@register
class RocprofV3CsvReader:
    name = "rocprofv3-csv"
    description = "rocprofv3 CSV set (kernel/hip/hsa/marker/memory-copy traces, counters)"
    patterns = ("*_kernel_trace.csv", "*_hip_api_trace.csv", "*_counter_collection.csv",
                "*_trace.csv", "*.csv")
    priority = 60
    directories = True

    def sniff(self, path: Path) -> float:
        path = Path(path)
        if path.is_dir():
            return sniff_dir(path)
        if not path.is_file():
            return 0.0
        line, _ = first_line(path, 8192)
        fields = parse_header(line) if line.strip() else None
        if not fields:
            return 0.0
        kind = header_kind(fields)
        if kind is None:
            return 0.0
        return 0.9

    # ------------------------------------------------------------------ read
    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        path = Path(path)
        try:
            return self._read(path, progress, cancelled)
        except TraceFormatError:
            raise
        except (MemoryError, KeyboardInterrupt, Cancelled):
            raise
        except Exception as exc:  # noqa: BLE001 - contract: nothing else escapes read()
            raise TraceFormatError(path, None, "a rocprofv3 CSV set hipscope can read",
                                   f"{type(exc).__name__}: {exc}") from exc

    def _read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        load = Load()
        path = path.absolute()
        if path.is_dir():
            sets, ignored, notes = discover(path, None)
        elif path.is_file():
            sets, ignored, notes = discover(path.parent, path)
        else:
            raise TraceFormatError(path, None, "an existing file or folder", "nothing there")
        if not any(k in TRACE_KINDS for s in sets for k in s.files):
            raise TraceFormatError(path, None, "a rocprofv3 CSV set (files such as "
                                   "<pid>_kernel_trace.csv, <pid>_hip_api_trace.csv)",
                                   "no rocprofv3 trace files")
        total = sum(max(f.path.stat().st_size, 1) for s in sets for fs in s.files.values()
                    for f in fs) or 1
        done = [0]

        def step(f: CsvFile) -> None:
            load.sources.append(str(f.path))
            done[0] += max(f.path.stat().st_size, 1)
            progress(min(0.95, 0.95 * done[0] / total))
            check_cancel(cancelled)

        for note in notes:
            load.warn(note)
        parts: list[Part] = []
        mem_summary: dict[str, Any] = {}
        for s in sets:
            check_cancel(cancelled)
            parts.append(self._read_set(s, load, step, mem_summary))
        trace = assemble(self.name, parts, load, ignored, mem_summary)
        progress(1.0)
        if len(trace.kernels) == 0 and len(trace.counters) == 0:
            kf = [f.path.name for s in sets for f in s.files.get("kernels", [])]
            warnings = list(trace.warnings)
            warn_no_kernels(warnings, path, ("only the header in " + ", ".join(kf[:3]))
                            if kf else "no kernel_trace.csv")
            trace = trace.with_meta(warnings=warnings)
        return trace

    def _read_set(self, s: CsvSet, load: Load, step, mem_summary: dict) -> Part:
        part = Part(s)
        for f in s.files.get("agents", []):
            part.agents.extend(read_agent_info(f, load))
            step(f)
        api_files = list(s.files.get("api", []))
        marker_files = list(s.files.get("markers", []))
        # files classified by header only: markers when their domains are MARKER_*
        for f in list(api_files):
            if split_name(f.path) is None:
                doms = self._peek_domains(f)
                if doms and all(d.startswith("MARKER") for d in doms):
                    api_files.remove(f)
                    marker_files.append(f)
        if api_files:
            part.api = read_api_like(api_files, s, load, step)
            if part.api is not None:
                part.api = dedupe_api(part.api, s, load)
        if marker_files:
            part.markers = read_api_like(marker_files, s, load, step)
        if s.files.get("kernels"):
            part.kernels = read_kernels(s.files["kernels"], s, load, step)
        if s.files.get("copies"):
            part.copies = read_copies(s.files["copies"], s, load, part, step)
        if s.files.get("counters"):
            part.counters = read_counters(s.files["counters"], s, load, step)
        if s.files.get("memalloc"):
            summarise_ops(s.files["memalloc"], "memory_allocation", load, mem_summary, step)
        if s.files.get("scratch"):
            summarise_ops(s.files["scratch"], "scratch_memory", load, mem_summary, step)
        # counters <-> kernels
        if part.counters is not None:
            if part.kernels is not None:
                link_counters(part.counters, part.kernels, s, load)
            else:
                part.kernels = kernels_from_counters(part.counters, s, load)
        # kernels/copies -> api
        if part.kernels is not None:
            link_to_api(part.kernels, "kernels", s, part.api, load)
        if part.copies is not None:
            link_to_api(part.copies, "copies", s, part.api, load)
        # which agent texts are GPUs
        for tbl in (part.kernels, part.counters):
            if tbl is not None and tbl.get("agent") is not None:
                _c, cats = dict_parts(tbl["agent"])
                codes = distinct(_c)
                part.gpu_texts.update(cats[i] for i in codes[codes >= 0].tolist())
        return part

    @staticmethod
    def _peek_domains(f: CsvFile) -> list[str]:
        try:
            with open(f.path, newline="", encoding="utf-8", errors="replace") as fh:
                rd = csv.DictReader(fh)
                out = []
                for i, row in enumerate(rd):
                    if i >= 50:
                        break
                    out.append((row.get("Domain") or "").strip())
                return [d for d in out if d]
        except (OSError, csv.Error):
            return []
