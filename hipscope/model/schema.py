"""The canonical trace schema: every reader produces these tables, with these types.

Each table is a pyarrow table whose columns are declared here once. Why pyarrow:
validity bitmaps make nulls nearly free (a column the source lacks is *null*, never
invented), names are dictionary-encoded (categoricals: int32 codes + one table of
strings), columns without nulls convert to numpy without a copy, and the same
tables memory-map from hipscope's on-disk cache (Arrow IPC).

Columns are **required** (every row of every source has them) or **optional** (a
reader leaves them out when its format does not carry them; :class:`Table` then
serves an all-null column on demand without storing it). This keeps the resident
size of the kernels table under 100 bytes per kernel for the largest traces.

Time is int64 nanoseconds on one clock per trace (``trace.meta["clock"]`` names it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

NAME = pa.dictionary(pa.int32(), pa.string())  # categorical names
TIME = pa.int64()


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    required: bool = False
    doc: str = ""


@dataclass(frozen=True)
class TableSpec:
    name: str
    columns: tuple[Column, ...]
    doc: str = ""
    by_name: dict[str, Column] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {c.name: c for c in self.columns})

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.required)

    def arrow_schema(self, present: list[str] | None = None) -> pa.Schema:
        cols = self.columns if present is None else [self.by_name[n] for n in present]
        return pa.schema([pa.field(c.name, c.type) for c in cols])


def _c(name: str, type_: pa.DataType, required: bool = False, doc: str = "") -> Column:
    return Column(name, type_, required, doc)


KERNELS = TableSpec(
    "kernels",
    (
        _c("name", NAME, True, "kernel name as the profiler printed it (mangled or not)"),
        _c("device", pa.int16(), True, "index into trace.devices"),
        _c("start", TIME, True, "kernel begin, ns"),
        _c("end", TIME, True, "kernel end, ns"),
        _c("queue", pa.int32(), doc="hardware queue id within its device (see trace.queues)"),
        _c("stream", pa.int32(), doc="stream id (HIP/CUDA stream; see trace.streams)"),
        _c("pid", pa.int32(), doc="OS process id of the launching process"),
        _c("tid", pa.int64(), doc="OS thread id of the launching thread"),
        _c("correlation_id", pa.int64(), doc="correlation id shared with the launching API call"),
        _c("dispatch_id", pa.int64(), doc="profiler dispatch index"),
        _c("api_index", pa.int32(), doc="row in trace.api of the launching call"),
        _c("dispatch_ns", TIME, doc="host packet submit time (legacy rocprof DispatchNs)"),
        _c("grid_x", pa.int64(), doc="grid size in work-items (threads), x; int64: legacy "
           "rocprof prints 1-D grids above 2**31"),
        _c("grid_y", pa.int32()),
        _c("grid_z", pa.int32()),
        _c("block_x", pa.int16(), doc="workgroup (block) size in work-items, x"),
        _c("block_y", pa.int16()),
        _c("block_z", pa.int16()),
        _c("vgpr", pa.int16(), doc="architected VGPRs (AMD)"),
        _c("accum_vgpr", pa.int16(), doc="accumulation VGPRs (AMD)"),
        _c("sgpr", pa.int16(), doc="SGPRs (AMD)"),
        _c("registers", pa.int16(), doc="registers per thread (NVIDIA)"),
        _c("lds_bytes", pa.int32(), doc="LDS / static shared memory per workgroup, bytes"),
        _c("dyn_lds_bytes", pa.int32(), doc="dynamic shared memory per block, bytes"),
        _c("scratch_bytes", pa.int32(), doc="scratch (private) memory per work-item, bytes"),
        _c("graph_exec_id", pa.int64(), doc="the executable graph that replayed this kernel "
           "(rocpd graph_exec_id); null outside graphs"),
        _c("graph_node_id", pa.int64(), doc="the graph node this kernel is (rocpd "
           "graph_node_id); null outside graphs"),
        # Kineto copies its launching record_param_comms op's args onto an NCCL kernel
        _c("collective", NAME, doc="kernel arg 'Collective name' (Kineto, NCCL kernels)"),
        _c("process_group", NAME, doc="kernel arg 'Process Group Name' (else its ranks)"),
        _c("collective_seq", pa.int64(), doc="kernel arg 'Seq' (Kineto, NCCL kernels)"),
    ),
    "One row per kernel dispatch.",
)

API = TableSpec(
    "api",
    (
        _c("name", NAME, True, "function name, e.g. hipLaunchKernel"),
        _c("domain", NAME, True, "HIP_RUNTIME_API, HSA_CORE_API, cuda_runtime, cuda_driver..."),
        _c("start", TIME, True),
        _c("end", TIME, True),
        _c("pid", pa.int32()),
        _c("tid", pa.int64()),
        _c("correlation_id", pa.int64()),
        _c("stream", pa.int32(), doc="stream argument when the format records it"),
        _c("device", pa.int16(), doc="device the call targets when recorded"),
    ),
    "Host API calls (HIP, HSA, CUDA runtime/driver, RCCL...).",
)

COPIES = TableSpec(
    "copies",
    (
        _c("direction", NAME, True, "HtoD, DtoH, DtoD, HtoH, PtoP, memset, other"),
        _c("start", TIME, True),
        _c("end", TIME, True),
        _c("name", NAME, doc="the profiler's label for the copy"),
        _c("bytes", pa.int64()),
        _c("device", pa.int16(), doc="device whose engine ran the copy"),
        _c("src_device", pa.int16()),
        _c("dst_device", pa.int16()),
        _c("queue", pa.int32()),
        _c("stream", pa.int32()),
        _c("pid", pa.int32()),
        _c("tid", pa.int64()),
        _c("correlation_id", pa.int64()),
        _c("api_index", pa.int32()),
    ),
    "Memory copies and sets.",
)

MARKERS = TableSpec(
    "markers",
    (
        _c("name", NAME, True, "range or mark text"),
        _c("domain", NAME, True, "roctx, nvtx, user_annotation, gpu_user_annotation, ..."),
        _c("start", TIME, True),
        _c("end", TIME, True, "== start for instant marks"),
        _c("depth", pa.int16(), True, "nesting depth on its thread/stream, 0 = outermost"),
        _c("pid", pa.int32()),
        _c("tid", pa.int64()),
        _c("device", pa.int16(), doc="set for ranges drawn on a GPU stream"),
        _c("stream", pa.int32()),
        _c("correlation_id", pa.int64(), doc="the runtime call a GPU-side range belongs to "
           "(Kineto cuda_sync: stream/event/context sync on the GPU)"),
        _c("wait_on_correlation_id", pa.int64(), doc="a GPU-side wait: the correlation id "
           "of the event record it waits on (rocpd HIP event records: the hip_event marker "
           "with that correlation_id; Kineto: wait_on_cuda_event_record_corr_id)"),
        # PyTorch op fields (Kineto cpu_op args), for ops by shape (analysis/ops)
        _c("input_dims", NAME, doc="op input shapes (Kineto 'Input Dims'), compact JSON text"),
        _c("input_types", NAME, doc="op input dtypes (Kineto 'Input type'), compact JSON text"),
        _c("external_id", pa.int64(), doc="Kineto 'External id' of the op"),
        _c("sequence_number", pa.int64(), doc="autograd 'Sequence number' (forward/backward "
           "ops of one node share it)"),
        _c("fwd_thread_id", pa.int64(), doc="'Fwd thread id': the thread of the forward op "
           "a backward op belongs to"),
        # collective fields (c10d record_param_comms args), for collectives across ranks
        _c("collective", NAME, doc="'Collective name' (allreduce, all_gather...)"),
        _c("process_group", NAME, doc="'Process Group Name' (else its 'Process Group Ranks')"),
        _c("collective_seq", pa.int64(), doc="'Seq': the collective's number in its group"),
    ),
    "Markers and ranges (roctx, NVTX, PyTorch annotations, GPU-side syncs).",
)

COUNTERS = TableSpec(
    "counters",
    (
        _c("counter", NAME, True),
        _c("value", pa.float64(), True),
        _c("kernel_index", pa.int32(), doc="row in trace.kernels"),
        _c("dispatch_id", pa.int64()),
        _c("unit", NAME),
    ),
    "Hardware counters in long form: one row per dispatch x counter.",
)

DEVICES = TableSpec(
    "devices",
    (
        _c("index", pa.int16(), True, "hipscope's device index (what other tables refer to)"),
        _c("name", pa.string(), True, "product name, e.g. AMD Instinct MI300X"),
        _c("vendor", pa.string(), doc="AMD or NVIDIA"),
        _c("arch", pa.string(), doc="gfx942, sm_90..."),
        _c("compute_units", pa.int32(), doc="CUs (AMD) or SMs (NVIDIA)"),
        _c("raw_id", pa.string(), doc="the source's own id: 'Agent 4', handle, Kineto pid"),
        _c("host", pa.string()),
        _c("memory_bytes", pa.int64()),
    ),
    "GPUs that appear in the trace.",
)

QUEUES = TableSpec(
    "queues",
    (
        _c("device", pa.int16(), True),
        _c("queue", pa.int32(), True),
        _c("raw_id", pa.string(), doc="the source's handle, e.g. a 6.2 queue pointer"),
        _c("name", pa.string()),
    ),
    "Hardware queues per device.",
)

STREAMS = TableSpec(
    "streams",
    (
        _c("stream", pa.int32(), True),
        _c("device", pa.int16()),
        _c("queue", pa.int32(), doc="the hardware queue this stream's work used, when known"),
        _c("pid", pa.int32()),
        _c("raw_id", pa.string()),
        _c("name", pa.string()),
    ),
    "Streams, and which queue each used.",
)

SAMPLES = TableSpec(
    "samples",
    (
        _c("series", NAME, True, "what was sampled, with its unit: 'Power (W)', 'GPU 1 Power (W)'"),
        _c("time", TIME, True, "sample time, ns on the trace's clock"),
        _c("value", pa.float64(), True),
        _c("device", pa.int16(), doc="index into trace.devices; null when the GPU has none"),
        _c("unit", NAME, doc="W, %, MiB, C, MHz"),
    ),
    "Values sampled over time beside the trace (GPU telemetry of a run: power, "
    "utilisation, memory, temperature, clock).",
)

SPECS: dict[str, TableSpec] = {
    s.name: s for s in (KERNELS, API, COPIES, MARKERS, COUNTERS, DEVICES, QUEUES, STREAMS,
                        SAMPLES)
}

# Copy directions, normalised from every format's spelling.
DIRECTIONS = ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "memset", "other")

# Domains of marker tables.
MARKER_DOMAINS = ("roctx", "nvtx", "user_annotation", "gpu_user_annotation")
