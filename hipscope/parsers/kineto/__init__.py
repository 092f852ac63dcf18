"""PyTorch profiler (Kineto) Chrome-trace JSON, AMD (roctracer) and NVIDIA (CUPTI).

Reference: docs FORMATS.md section 10. Two sources feed one table builder
(``tables.build``):
- the C scanner ``_kinscan`` (``native.py``, GIL released, two threads on big files)
  reads the JSON text straight into columns: ids of interned strings and raw texts, and
  (kind, value) pairs, from which the tables are built with numpy;
- what it declines (text that is not plain JSON or is cut short, NaN, invalid UTF-8,
  gzip streams cut short, or when it is not built) msgspec decodes into typed Structs
  (``decode.py``, garbage collector off), with the recovery of truncated text and its
  warnings. Both give the same trace (tests/unit/test_kineto_native.py).

Time: ``ts``/``dur`` are µs with 3 decimals. New files (``baseTimeNanoseconds``):
epoch ns = base + ts*1000 (ts relative); old files: ts is absolute epoch µs. The
conversion is exact to the ns for the printed 3 decimals (whole µs and fraction are
converted separately).
"""

from __future__ import annotations

import re
from pathlib import Path

from ...model import Trace
from ..base import Cancelled, TraceFormatError, check_cancel, head_text, register
from .ranks import rank_files, read_folder

# the sniff needs only .ranks (a folder's rank files); msgspec, the C scanner and the
# table builder (.decode, .native, .tables) are imported when a file is read


@register
class KinetoReader:
    name = "kineto"
    description = "PyTorch profiler (Kineto) trace"
    patterns = ("*.json", "*.json.gz", "*.pt.trace.json", "*.pt.trace.json.gz")
    priority = 50
    directories = True   # a folder of rank traces (rank-*.json.gz, *.pt.trace.json)

    def sniff(self, path: Path) -> float:
        if path.is_dir():
            # below the folder readers of rocprof outputs: a rocprofv3 / rocpd folder
            # that also holds a PyTorch trace stays theirs
            files = rank_files(path)
            return 0.7 if files and self.sniff(files[0]) >= 0.8 else 0.0
        head = head_text(path, 1 << 16)
        if not head.lstrip().startswith("{"):
            return 0.0
        if "rocprofiler-sdk-tool" in head:
            return 0.0
        compact = re.sub(r"\s+", "", head[:256])
        markers = ('"schemaVersion"', '"deviceProperties"', '"baseTimeNanoseconds"',
                   '"cuda_runtime"', '"cpu_op"', '"Record function id"', '"python_function"',
                   '"roctracer_version"', '"cupti_version"', '"PyTorch Profiler',
                   '"torch_profiler_kwargs"', '"ac2g"')
        kin = sum(1 for m in markers if m in head)
        kin += 1 if re.search(r'"cat":\s*"kernel"', head) else 0
        if compact.startswith('{"traceEvents":[{}') or ('"otherData"' in head and kin == 0):
            return 0.2  # legacy rocprof results.json
        has_te = '"traceEvents"' in head
        if has_te and kin >= 2:
            return 0.95
        if has_te and kin == 1:
            return 0.85
        if kin >= 2:
            return 0.6  # long metadata header before traceEvents (TraceLens files)
        if has_te and '"ph"' in head:
            return 0.4  # some Chrome trace
        return 0.0

    # ------------------------------------------------------------------ read
    def read(self, path, progress, cancelled) -> Trace:
        path = Path(path)
        if path.is_dir():
            return read_folder(path, self._read_file, progress, cancelled)
        return self._read_file(path, progress, cancelled)

    def _read_file(self, path: Path, progress, cancelled) -> Trace:
        from .._json import gc_paused

        # millions of small objects: no cyclic GC passes while reading
        with gc_paused():
            try:
                return self._read(path, progress, cancelled)
            except (TraceFormatError, Cancelled):
                raise
            except MemoryError:
                raise TraceFormatError(path, None, "a trace that fits in memory",
                                       "not enough memory") from None
            except Exception as exc:  # noqa: BLE001 - contract: nothing else escapes read()
                raise TraceFormatError(path, None, "a readable PyTorch profiler (Kineto) trace",
                                       f"{type(exc).__name__}: {exc}") from exc

    def _read(self, path: Path, progress, cancelled) -> Trace:
        from .decode import load, read_text
        from .tables import build

        box = [read_text(path)]           # read once for both paths
        trace = read_native(path, progress, cancelled, box)
        if trace is not None:
            return trace
        warnings: list[str] = []
        dropped: dict[str, int] = {}
        top = load(path, warnings, dropped, box.pop() if box else None)
        progress(0.55)
        check_cancel(cancelled)
        return build(path, top, warnings, dropped, progress, cancelled)


def read_native(path: Path, progress, cancelled, box: list | None = None) -> Trace | None:
    """The trace from the C scanner's columns; None when it is not built or declines
    the file (then the msgspec path reads it). ``box``: as :func:`.native.load_native`."""
    from .native import Declined, load_native
    from .tables import build

    got = load_native(path, box)
    if got is None:
        return None
    top, events = got
    progress(0.55)
    check_cancel(cancelled)
    try:
        return build(path, top, [], {}, progress, cancelled, events=events)
    except Declined:
        return None


__all__ = ["KinetoReader", "read_native"]
