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

from pathlib import Path

from ...model import Trace
from ..base import CancelledFn, ProgressFn, TraceFormatError, head_bytes, register
from .sniff import sniff_csv, sniff_db, sniff_folder, sniff_json

__all__ = ["LegacyRocprofReader", "LegacyRocprofCsvReader", "LegacyRocprofDbReader",
           "LegacyRocprofJsonReader"]

# the sniff needs only .sniff; the readers of each kind (numpy tables, msgspec) are
# imported when a file is read, and still reachable here by their names
_LAZY = {"LegacyRocprofCsvReader": ".results_csv", "LegacyRocprofDbReader": ".results_db",
         "LegacyRocprofJsonReader": ".results_json", "read_folder": ".folder"}


def __getattr__(name: str):
    from .._lazy import lazy_attr

    return lazy_attr(__name__, _LAZY, name)

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
            return sniff_folder(path)
        return max(sniff_csv(path), sniff_json(path), sniff_db(path))

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        from .folder import read_folder
        from .results_csv import LegacyRocprofCsvReader
        from .results_db import LegacyRocprofDbReader
        from .results_json import LegacyRocprofJsonReader

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
