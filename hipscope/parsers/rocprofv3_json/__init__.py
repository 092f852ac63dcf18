"""rocprofv3 JSON (``--output-format json``, ``<pid>_results.json[.gz]``).

Layout (rocprofiler-sdk ``source/lib/output/generateJSON.cpp``, schema
``source/docs/rocprofv3-schema.json``)::

    {"rocprofiler-sdk-tool": [ {one object per process:
        metadata {node{hostname,...}, pid, init_time, fini_time, command[], config{}},
        agents [{id{handle}, type 1=CPU 2=GPU, node_id, logical_node_id, name, product_name,
                 cu_count, mem_banks[{size_in_bytes}], ...}],
        counters [{id{handle}, name, ...}],
        strings {buffer_records [{kind, operations[]}] (indexed by kind, then operation),
                 marker_api [{key: correlation_id.internal, value: roctx message}],
                 correlation_id {external [{key, value}]} (kernel-rename names)},
        kernel_symbols [{kernel_id, kernel_name (mangled, ".kd"), formatted_kernel_name, ...}],
        callback_records {counter_collection [{dispatch_data{correlation_id, dispatch_info},
                                               records [{counter_id{handle}, value}], ...}]},
        buffer_records {kernel_dispatch, hip_api, hsa_api, marker_api, rccl_api, memory_copy,
                        rocdecode_api, rocjpeg_api, ...}}]}

All timestamps are CLOCK_BOOTTIME nanoseconds. Kernel names are
``formatted_kernel_name`` -- what rocprofv3's CSV prints as Kernel_Name
(``metadata::get_kernel_name`` returns it), or the kernel-rename string when the run used
``--kernel-rename`` (then ``correlation_id.external`` keys ``strings.correlation_id.external``).
Kernels and copies link to the API call with the same ``correlation_id.internal`` in the
same process.
"""

from __future__ import annotations

from pathlib import Path

from ...model import Trace, merge_traces
from ..base import TraceFormatError, check_cancel, head_text, read_bytes_tolerant, register

# the reading stack (msgspec, .records, .process) is imported by read(): opening a
# trace of another format registers this reader and sniffs with it, nothing more


@register
class RocprofV3JsonReader:
    name = "rocprofv3-json"
    description = "rocprofv3 JSON"
    patterns = ("*_results.json", "*_results.json.gz", "*.json", "*.json.gz")
    priority = 60
    directories = False

    def sniff(self, path: Path) -> float:
        if path.is_dir():
            return 0.0
        head = head_text(path, 2048)
        if '"rocprofiler-sdk-tool"' in head:
            return 1.0
        return 0.0

    def read(self, path, progress, cancelled) -> Trace:
        import zlib

        import msgspec

        path = Path(path)
        try:
            return self._read(path, progress, cancelled)
        except TraceFormatError:
            raise
        except (OSError, EOFError, zlib.error) as exc:
            # zlib.error: read_bytes_tolerant lets it through for corrupt deflate data
            raise TraceFormatError(path, None, "a readable rocprofv3 JSON file",
                                   str(exc)) from None
        except (ValueError, TypeError, KeyError, IndexError, OverflowError,
                msgspec.MsgspecError) as exc:
            raise TraceFormatError(path, None, "a well-formed rocprofv3 JSON file",
                                   f"{type(exc).__name__}: {exc}") from None

    # ------------------------------------------------------------------
    def _read(self, path: Path, progress, cancelled) -> Trace:
        from .._common import finish_meta, new_meta
        from .process import process
        from .records import decode

        warnings: list[str] = []
        dropped: dict[str, int] = {}
        data, warn = read_bytes_tolerant(path)
        if warn:
            warnings.append(warn)
        progress(0.2)
        check_cancel(cancelled)
        top = decode(path, data, warnings, dropped)
        del data
        progress(0.6)
        check_cancel(cancelled)
        if not top.tool:
            raise TraceFormatError(path, "rocprofiler-sdk-tool", "at least one process object",
                                   "an empty list")
        traces = []
        for i, proc in enumerate(top.tool):
            check_cancel(cancelled)
            traces.append(process(self.name, path, proc))
            progress(0.6 + 0.35 * (i + 1) / len(top.tool))
        meta = new_meta(self.name, [path], "CLOCK_BOOTTIME", tool="rocprofv3",
                        pids=sorted({p for t in traces for p in t.meta.get("pids", [])}))
        finish_meta(meta, warnings, dropped)
        trace = merge_traces(traces, meta=meta) if len(traces) > 1 else traces[0].with_meta(**meta)
        return trace

