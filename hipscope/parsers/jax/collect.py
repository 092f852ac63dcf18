"""Route the events of a JAX / XLA trace-viewer JSON to hipscope's tables.

Each (pid, tid) is one XLine of one XPlane; its process and thread names say what it
holds: ``/device:GPU:N`` ``Stream #S(...)`` lines hold kernels, copies and memsets
(CUPTI / roctracer activity); the derived device lines ``XLA Modules``, ``XLA Ops``,
``Framework Ops``... hold XLA's own ranges over that work; ``/host:CPU`` threads hold
host ops (TraceMe, Python frames ``$file:line fn``, NVTX) and the runtime/driver calls
(``cuLaunchKernel``, ``hipModuleLaunchKernel``) that carry the ``correlation_id`` of
the GPU work they launched. Line names: openxla/xla ``xla/tsl/profiler/utils/
xplane_schema.h``; stream lines: ``xla/backends/profiler/gpu/cupti_collector.cc``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .._common import add_count

DEVICE_RE = re.compile(r"^/device:([A-Za-z_]+):(\d+)$")
STREAM_RE = re.compile(r"^Stream #(\d+)")
API_RE = re.compile(r"^(?:cu[A-Z]|cuda[A-Z]|hip[A-Z]|hsa_)")
# derived device lines -> marker domain
DERIVED = {
    "XLA Modules": "xla_module", "XLA Ops": "xla_op", "Framework Ops": "framework_op",
    "TensorFlow Ops": "framework_op", "Framework Name Scope": "name_scope",
    "TensorFlow Name Scope": "name_scope", "Steps": "step", "Source code": "source_code",
    "Host Offload Ops": "host_offload_op",
}
_COPY_WORDS = (("H2D", "HtoD"), ("D2H", "DtoH"), ("D2D", "DtoD"), ("P2P", "PtoP"),
               ("Memset", "memset"))


class Rows:
    """Column lists of one table, filled row by row (None = null)."""

    def __init__(self, *columns: str):
        self.cols: dict[str, list] = {c: [] for c in columns}
        self._lists = list(self.cols.values())

    @property
    def n(self) -> int:
        return len(self._lists[0])

    def add(self, *values: Any) -> None:
        for col, v in zip(self._lists, values):
            col.append(v)


KERNEL_COLS = ("name", "device", "stream", "start", "end", "correlation_id", "registers",
               "lds_bytes", "dyn_lds_bytes", "grid", "block_x", "block_y", "block_z",
               "hlo_op", "hlo_module")
COPY_COLS = ("direction", "name", "start", "end", "device", "stream", "correlation_id",
             "bytes")
API_COLS = ("name", "domain", "start", "end", "pid", "tid", "correlation_id", "device")
MARKER_COLS = ("name", "domain", "start", "end", "pid", "tid", "device", "stream")


@dataclass
class Collected:
    kernels: Rows = field(default_factory=lambda: Rows(*KERNEL_COLS))
    copies: Rows = field(default_factory=lambda: Rows(*COPY_COLS))
    api: Rows = field(default_factory=lambda: Rows(*API_COLS))
    markers: Rows = field(default_factory=lambda: Rows(*MARKER_COLS))
    process_names: dict[int, str] = field(default_factory=dict)
    thread_names: dict[tuple[int, int], str] = field(default_factory=dict)
    devices: dict[int, tuple[str, str, int]] = field(default_factory=dict)  # pid -> kind
    skipped: dict[str, int] = field(default_factory=dict)
    n_events: int = 0


def _int(v: Any) -> int | None:
    """An integer arg (XLA writes every arg as a string; ``$$N`` for context ids)."""
    if type(v) is int:
        return v
    if type(v) is str:
        s = v.strip().lstrip("$")
        return int(s) if s.isdigit() else None
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def _num(v: Any) -> float | None:
    t = type(v)
    if t is not float and t is not int:
        return None
    return v if -9e12 < v < 9e12 else None     # NaN and times past 2^62 ns: no time


def names(evs: list) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
    """Process and thread names from the ``ph: M`` events."""
    procs: dict[int, str] = {}
    threads: dict[tuple[int, int], str] = {}
    for e in evs:
        if e.ph != "M" or e.args is None or not isinstance(e.args.name, str):
            continue
        pid, tid = _int(e.pid), _int(e.tid)
        if pid is None:
            continue
        if e.name == "process_name":
            procs[pid] = e.args.name
        elif e.name == "thread_name" and tid is not None:
            threads[(pid, tid)] = e.args.name
    return procs, threads


def copy_direction(name: str) -> str:
    for word, direction in _COPY_WORDS:
        if word in name:
            return direction
    return "other"


def _details(text: Any) -> dict[str, str]:
    """``"regs:32 static_shared:0 grid:4,1,1 ..."`` as a dict."""
    if not isinstance(text, str):
        return {}
    return dict(re.findall(r"(\w+):(\S+)", text))


def _xyz(text: str | None) -> list[int | None]:
    parts = (text or "").split(",")
    return [_int(p) for p in parts] if len(parts) == 3 else [None] * 3


def kernel_details(text: Any) -> tuple:
    """(regs, static_shared, dynamic_shared, (grid x, y, z), block x, y, z) of a
    CUPTI/roctracer ``kernel_details`` string (nulls where absent)."""
    det = _details(text)
    block = _xyz(det.get("block"))
    return (_int(det.get("regs")), _int(det.get("static_shared")),
            _int(det.get("dynamic_shared")), _xyz(det.get("grid")), *block)


class Router:
    """Sends each X event to the table its line holds."""

    def __init__(self, out: Collected, device_index: dict[int, int]):
        self.out = out
        self.device_index = device_index      # device pid -> hipscope device index
        self.lanes: dict[tuple[int, int], tuple] = {}
        self.details: dict[Any, tuple] = {}      # kernel_details text -> parsed (few kinds)
        self.gpu_ordinal = {int(m.group(2)): idx for kind, pname, idx in out.devices.values()
                            if (m := DEVICE_RE.match(pname)) and m.group(1) == "GPU"}

    def lane(self, pid: int, tid: int) -> tuple:
        key = (pid, tid)
        if key not in self.lanes:
            self.lanes[key] = self._lane(pid, tid)
        return self.lanes[key]

    def _lane(self, pid: int, tid: int) -> tuple:
        pname = self.out.process_names.get(pid, "")
        tname = self.out.thread_names.get((pid, tid), "")
        if pid in self.device_index:
            dev = self.device_index[pid]
            m = STREAM_RE.match(tname)
            if m:
                sid = int(m.group(1))
                return ("stream", dev, sid if sid < 1 << 31 else None)
            if tname in DERIVED:
                return ("gpu_marker", dev, DERIVED[tname])
            return ("skip", f"events on device line {tname or tid!r}")
        if pname.startswith("/host:"):
            return ("host", pid, tid)
        return ("skip", f"events of process {pname or pid!r} (not /host: or /device:)")

    def route(self, e, start: int, end: int) -> None:
        lane = self.lane(_int(e.pid) or 0, _int(e.tid) or 0)
        kind = lane[0]
        name = e.name if isinstance(e.name, str) else str(e.name)
        if kind == "stream":
            self._stream_event(e, name, lane[1], lane[2], start, end)
        elif kind == "gpu_marker":
            self.out.markers.add(name, lane[2], start, end, None, None, lane[1], None)
        elif kind == "host":
            self._host_event(e, name, lane[1], lane[2], start, end)
        else:
            add_count(self.out.skipped, lane[1])

    def _stream_event(self, e, name: str, dev: int, stream: int, start: int, end: int):
        a = e.args
        corr = _int(a.correlation_id) if a else None
        if a is not None and a.cuda_graph_exec_id is not None:
            add_count(self.out.skipped, "CUDA graph executions (their kernels are kept)")
        elif (a is not None and a.memcpy_details is not None) or name.startswith("Memcpy"):
            det = _details(a.memcpy_details if a else None)
            self.out.copies.add(copy_direction(name), name, start, end, dev, stream, corr,
                                _int(det.get("size")))
        elif (a is not None and a.memset_details is not None) or name.startswith("Memset"):
            det = _details(a.memset_details if a else None)
            self.out.copies.add("memset", name, start, end, dev, stream, corr,
                                _int(det.get("num_bytes")))
        elif name.startswith("Memory"):         # MemoryAlloc, MemoryFree, MemoryResidency
            add_count(self.out.skipped, f"{name} events")
        else:
            self._kernel(e, name, dev, stream, start, end, corr)

    def _kernel(self, e, name, dev, stream, start, end, corr) -> None:
        a = e.args
        text = a.kernel_details if a else None
        det = self.details.get(text)
        if det is None:
            det = self.details[text] = kernel_details(text)
        op = a.hlo_op if a and isinstance(a.hlo_op, str) else None
        module = a.hlo_module if a and isinstance(a.hlo_module, str) else None
        self.out.kernels.add(name, dev, stream, start, end, corr, *det, op, module)

    def _host_event(self, e, name: str, pid: int, tid: int, start: int, end: int) -> None:
        a = e.args
        corr = _int(a.correlation_id) if a else None
        if API_RE.match(name) or (corr is not None and not name.startswith("$")):
            domain = ("HIP_RUNTIME_API" if name.startswith("hip") else
                      "HSA_CORE_API" if name.startswith("hsa_") else
                      "cuda_runtime" if name.startswith("cuda") else "cuda_driver")
            d = _int(a.device_id) if a else None    # the ordinal N of /device:GPU:N
            dev = self.gpu_ordinal.get(d) if d is not None else None
            self.out.api.add(name, domain, start, end, pid, tid, corr, dev)
            return
        domain = ("python_function" if name.startswith("$") else
                  "nvtx" if name.startswith("NVTX:") else "xla_host")
        self.out.markers.add(name, domain, start, end, pid, tid, None, None)


def times(e) -> tuple[int, int] | None:
    """Start and end in ns of an X event (µs floats with ps precision)."""
    ts, dur = _num(e.ts), _num(e.dur)
    if ts is None or dur is None or dur < 0:
        return None
    start = round(ts * 1000.0)
    return start, start + round(dur * 1000.0)
