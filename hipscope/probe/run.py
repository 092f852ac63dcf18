"""Measure on this machine's GPU what hipscope's tuner estimates need.

    python -m hipscope.probe.run [--json] [--out FILE] [--backend auto|cuda|hip]
                                 [--device N] [--quick]
    python hipscope_probe.py ...        (the copy hipscope puts on a target)

Standalone: the standard library, numpy and the GPU bindings (cuda-python on NVIDIA,
hip-python on AMD) only; hipscope need not be installed where it runs. With
``--json`` stdout carries exactly one JSON object (progress goes to stderr).

What it measures (GPU times by events, host times by ``time.perf_counter_ns``):

* ``launch``: N empty kernels launched back to back: host time per launch call
  (``api_ns``, the Python binding included), wall time per launch until the GPU is
  done (``wall_ns``), and the GPU time per kernel when the queue is already full
  (``gpu_ns``: the launches are queued behind a spin kernel, so the host cannot
  starve the GPU; the front end's cost per kernel).
* ``graph``: graphs of n1 and n2 empty kernels captured from a stream, replayed; the
  replay time per node is the slope ``(T(n2) - T(n1)) / (n2 - n1)`` (the graph
  launch's fixed cost cancels). It includes the empty kernel's own execution, so it
  is an upper bound of the GPU idle per node.
* ``streams``: identical ~50 us spin kernels (a ``clock64()`` busy loop, calibrated
  against events) on 1, 2, 4, 8, 16 streams, all released at once by one event;
  concurrency = serial time / parallel time.
* ``copies``: 64 MiB host-to-device and device-to-host synchronous copies from
  pageable (numpy) and pinned (``cuMemAllocHost`` / ``hipHostMalloc``) memory.

Every section runs on its own: one that fails is reported under ``errors`` (the
call that failed, in one sentence) and the others still run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

try:                                   # inside the hipscope package
    from . import backends as _backends
except ImportError:                    # the copy run by path on a target
    import hipscope_probe_backends as _backends  # type: ignore[no-redef]

SCHEMA = "hipscope-probe/1"
STREAM_COUNTS = (1, 2, 4, 8, 16)
COPY_BYTES = 64 * 1024 * 1024


def _log(msg: str) -> None:
    print(f"probe: {msg}", file=sys.stderr, flush=True)


def _median(xs: list[float]) -> float:
    return float(statistics.median(xs))


# ====================================================================== measurements
class Probe:
    """The measurements over one opened :class:`~.backends.Backend`."""

    def __init__(self, b, quick: bool = False):
        self.b = b
        self.quick = quick
        self.stream = b.stream_create()
        self.e0, self.e1 = b.event_create(), b.event_create()
        self.cycles_per_us: float | None = None
        self.api_ns: float = 5_000.0          # refined by measure_launch

    # ------------------------------------------------------------------ helpers
    def _time_gpu(self, enqueue: Callable[[], None], stream=None) -> float:
        """GPU ms between an event before and one after what ``enqueue`` queues."""
        s = self.stream if stream is None else stream
        self.b.event_record(self.e0, s)
        enqueue()
        self.b.event_record(self.e1, s)
        self.b.event_sync(self.e1)
        return self.b.elapsed_ms(self.e0, self.e1)

    def spin_cycles(self, us: float) -> int:
        assert self.cycles_per_us is not None
        return max(1, int(us * self.cycles_per_us))

    def calibrate(self) -> dict[str, Any]:
        """clock64() cycles per microsecond of the spin kernel (GPU clock)."""
        cycles = 100_000
        for _ in range(6):
            def spin(c=cycles):
                self.b.launch_spin(self.stream, c)
            self._time_gpu(spin)                                             # warm
            ms = _median([self._time_gpu(spin) for _ in range(3)])
            if ms >= 0.2:
                break
            cycles *= 10 if ms < 0.02 else 4
        self.cycles_per_us = cycles / (ms * 1000.0)
        check_us = self._time_gpu(lambda: self.b.launch_spin(
            self.stream, self.spin_cycles(50))) * 1000.0
        return {"cycles_per_us": round(self.cycles_per_us, 2),
                "spin_50us_measured_us": round(check_us, 2)}

    def gate(self, us: float, stream=None) -> None:
        """A spin kernel that holds ``stream`` for ``us`` so what follows queues up."""
        self.b.launch_spin(self.stream if stream is None else stream, self.spin_cycles(us))

    # ------------------------------------------------------------------ launch
    def measure_launch(self) -> dict[str, Any]:
        b, s = self.b, self.stream
        n_host, n_gpu, reps = (500, 256, 3) if self.quick else (2000, 512, 5)
        for _ in range(50):
            b.launch_empty(s)                                    # warm-up
        b.stream_sync(s)
        api, wall = [], []
        for _ in range(reps):
            t0 = time.perf_counter_ns()
            for _ in range(n_host):
                b.launch_empty(s)
            t1 = time.perf_counter_ns()
            b.stream_sync(s)
            t2 = time.perf_counter_ns()
            api.append((t1 - t0) / n_host)
            wall.append((t2 - t0) / n_host)
        self.api_ns = _median(api)
        gpu, host_limited = [], 0
        gate_us = 2_000.0 + 2.0 * n_gpu * self.api_ns / 1000.0
        for _ in range(reps):
            self.gate(gate_us)
            b.event_record(self.e0, s)                  # completes when the gate ends
            for _ in range(n_gpu):
                b.launch_empty(s)
            if b.event_done(self.e0):                   # the gate ended first: the
                host_limited += 1                       # GPU may have waited for us
                gate_us *= 2
            b.event_record(self.e1, s)
            b.event_sync(self.e1)
            gpu.append(b.elapsed_ms(self.e0, self.e1) * 1e6 / n_gpu)
        return {"api_ns": round(self.api_ns, 1), "wall_ns": round(_median(wall), 1),
                "gpu_ns": round(_median(gpu), 1), "launches": n_host,
                "queued_launches": n_gpu, "host_limited_reps": host_limited,
                "note": "api_ns includes the Python binding's own cost per call"}

    # ------------------------------------------------------------------ graph
    def measure_graph(self) -> dict[str, Any]:
        b, s = self.b, self.stream
        sizes = (128, 512) if self.quick else (256, 1024)
        reps = 3 if self.quick else 7
        times = {}
        for n in sizes:
            b.stream_sync(s)
            b.begin_capture(s)
            try:
                for _ in range(n):
                    b.launch_empty(s)
            finally:
                graph = b.end_capture(s)
            gexec = b.graph_instantiate(graph)
            try:
                for _ in range(2):                                   # upload, warm
                    b.graph_launch(gexec, s)
                b.stream_sync(s)
                def replay(g=gexec):
                    b.graph_launch(g, s)
                times[n] = _median([self._time_gpu(replay) for _ in range(reps)])
            finally:
                b.graph_destroy(graph, gexec)
        (n1, t1), (n2, t2) = sorted(times.items())
        per_node_ns = (t2 - t1) * 1e6 / (n2 - n1)
        how = "slope"
        if per_node_ns <= 0:                                    # noise: fall back
            per_node_ns, how = t2 * 1e6 / n2, "mean"
        return {"per_node_ns": round(per_node_ns, 1),
                "launch_fixed_ns": round(max(0.0, t1 * 1e6 - per_node_ns * n1), 1),
                "graph_ms": {str(n): round(t, 4) for n, t in times.items()},
                "method": how,
                "note": "per node of a graph of empty kernels, the empty kernel's own "
                        "execution included: an upper bound of the GPU idle per node"}

    # ------------------------------------------------------------------ streams
    def measure_streams(self, counts=STREAM_COUNTS, kernel_us: float = 50.0,
                        per_stream: int = 4) -> dict[str, Any]:
        b = self.b
        reps = 2 if self.quick else 3
        streams = [self.stream] + [b.stream_create() for _ in range(max(counts) - 1)]
        ends = [b.event_create() for _ in streams]
        cycles = self.spin_cycles(kernel_us)
        rows = []
        for n in counts:
            k = n * per_stream
            gate_us = 2_000.0 + 3.0 * k * self.api_ns / 1000.0

            def serial(k=k):
                for _ in range(k):
                    b.launch_spin(streams[0], cycles)

            def parallel(n=n):
                for i in range(1, n):
                    b.stream_wait_event(streams[i], self.e0)
                for _ in range(per_stream):
                    for i in range(n):
                        b.launch_spin(streams[i], cycles)
                for i in range(1, n):
                    b.event_record(ends[i], streams[i])
                    b.stream_wait_event(streams[0], ends[i])

            ser, par = [], []
            for _ in range(reps):
                for fn, out in ((serial, ser), (parallel, par)):
                    self.gate(gate_us)
                    out.append(self._time_gpu(fn) * 1000.0)
            s_us, p_us = _median(ser), _median(par)
            rows.append({"streams": n, "kernels": k, "serial_us": round(s_us, 1),
                         "parallel_us": round(p_us, 1),
                         "concurrency": round(s_us / p_us, 2) if p_us > 0 else None})
        b.device_sync()
        conc = [r["concurrency"] or 0.0 for r in rows]
        overlap = max([r["streams"] for r in rows if (r["concurrency"] or 0) >= 0.75 * r[
            "streams"]] or [1])
        return {"kernel_us": kernel_us, "per_stream": per_stream, "sweep": rows,
                "max_concurrency": max(conc) if conc else None,
                "overlapping_streams": overlap,
                "note": "overlapping_streams: the most streams whose kernels ran at least "
                        "75 % concurrently"}

    # ------------------------------------------------------------------ copies
    def measure_copies(self, nbytes: int = COPY_BYTES) -> dict[str, Any]:
        import ctypes

        import numpy as np

        b = self.b
        reps = 3 if self.quick else 5
        pageable = np.full(nbytes, 1, dtype=np.uint8)           # resident pages
        dptr = b.malloc(nbytes)
        pinned = None
        try:
            pinned = b.malloc_host(nbytes)
            ctypes.memset(pinned, 1, nbytes)
            out: dict[str, Any] = {"bytes": nbytes}
            for kind, host in (("pageable", pageable), ("pinned", pinned)):
                for direction in ("htod", "dtoh"):
                    def copy(host=host, direction=direction):
                        if direction == "htod":
                            b.memcpy_htod(dptr, host, nbytes)
                        else:
                            b.memcpy_dtoh(host, dptr, nbytes)
                        b.device_sync()     # a pageable HtoD may return before the DMA
                    copy()                                         # warm
                    ts = []
                    for _ in range(reps):
                        t0 = time.perf_counter_ns()
                        copy()
                        ts.append(time.perf_counter_ns() - t0)
                    t = _median(ts)
                    out[f"{direction}_{kind}_ms"] = round(t / 1e6, 3)
                    out[f"{direction}_{kind}_GBps"] = round(nbytes / t, 2)   # B/ns = GB/s
            for d in ("htod", "dtoh"):
                out[f"pinned_speedup_{d}"] = round(out[f"{d}_pageable_ms"] /
                                                   out[f"{d}_pinned_ms"], 3)
            out["pinned_speedup"] = round(
                (out["htod_pageable_ms"] + out["dtoh_pageable_ms"]) /
                (out["htod_pinned_ms"] + out["dtoh_pinned_ms"]), 3)
            return out
        finally:
            b.free(dptr)
            if pinned is not None:
                b.free_host(pinned)


# ====================================================================== the run
SECTIONS = ("launch", "graph", "streams", "copies")


def estimates(result: dict[str, Any]) -> dict[str, float]:
    """The figures the tuner's rules read (see hipscope/tuner: ``ctx.probes``)."""
    out: dict[str, float] = {}
    g = result.get("graph") or {}
    if isinstance(g.get("per_node_ns"), (int, float)) and g["per_node_ns"] > 0:
        out["graph_node_ns"] = float(g["per_node_ns"])
    c = result.get("copies") or {}
    if isinstance(c.get("pinned_speedup"), (int, float)) and c["pinned_speedup"] > 0:
        out["pinned_speedup"] = max(1.0, float(c["pinned_speedup"]))
    la = result.get("launch") or {}
    if isinstance(la.get("gpu_ns"), (int, float)):
        out["launch_gpu_ns"] = float(la["gpu_ns"])
    if isinstance(la.get("api_ns"), (int, float)):
        out["launch_api_ns"] = float(la["api_ns"])
    s = result.get("streams") or {}
    if isinstance(s.get("overlapping_streams"), int):
        out["overlapping_streams"] = float(s["overlapping_streams"])
    return out


def run_probe(backend: str = "auto", device: int = 0, quick: bool = False,
              sections: tuple[str, ...] = SECTIONS, opener=None) -> dict[str, Any]:
    """Open a backend, run the sections, return the result dict (never raises for a
    GPU failure: ``error`` / ``errors`` say what failed)."""
    t_start = time.perf_counter()
    result: dict[str, Any] = {
        "schema": SCHEMA, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": socket.gethostname(), "python": platform.python_version(),
        "quick": quick, "errors": {}}
    opener = opener or _backends.open_backend
    try:
        b = opener(backend, device)
    except _backends.ProbeError as exc:
        result["error"] = str(exc)
        result["duration_s"] = round(time.perf_counter() - t_start, 2)
        return result
    try:
        result["backend"] = b.api
        result["gpu"] = b.device_info()
        _log(f"{result['gpu'].get('name')} ({result['gpu'].get('arch')}) via {b.api}")
        b.compile(_backends.KERNEL_SOURCE)
        p = Probe(b, quick=quick)
        result["calibration"] = p.calibrate()
        for name in sections:
            _log(f"measuring {name}")
            try:
                result[name] = getattr(p, f"measure_{name}")()
            except Exception as exc:  # noqa: BLE001 - one section must not stop the rest
                why = str(exc) if isinstance(exc, _backends.ProbeError) else \
                    _backends.describe_exception(exc)
                result["errors"][name] = why
                _log(f"{name} failed: {why}")
                try:
                    b.device_sync()
                except Exception:  # noqa: BLE001
                    break                                     # the context is gone
    except Exception as exc:  # noqa: BLE001 - report, never a bare traceback
        result["error"] = str(exc) if isinstance(exc, _backends.ProbeError) else \
            _backends.describe_exception(exc)
    finally:
        b.close()
    result["estimates"] = estimates(result)
    result["duration_s"] = round(time.perf_counter() - t_start, 2)
    return result


def _us(v: Any) -> str:
    return f"{v / 1e3:.2f} us" if isinstance(v, (int, float)) else "?"


def format_text(r: dict[str, Any]) -> str:
    """A few lines for people (tolerates partial results: failed sections, older files)."""
    if r.get("error") and "gpu" not in r:
        return f"probe failed: {r['error']}"
    g = r.get("gpu") or {}
    lines = [f"GPU: {g.get('name')} ({g.get('arch')}), driver {g.get('driver')}, "
             f"{r.get('backend')}"]
    la = r.get("launch") or {}
    if la:
        lines.append(f"launch: {_us(la.get('api_ns'))} host per call, "
                     f"{_us(la.get('wall_ns'))} wall per launch, "
                     f"{_us(la.get('gpu_ns'))} GPU per queued kernel")
    gr = r.get("graph") or {}
    if gr:
        lines.append(f"graph replay: {_us(gr.get('per_node_ns'))} per node "
                     f"(+{_us(gr.get('launch_fixed_ns'))} per graph launch)")
    st = r.get("streams") or {}
    if st:
        conc = ", ".join(f"{x.get('streams')}:{x.get('concurrency')}"
                         for x in st.get("sweep") or [])
        lines.append(f"streams: concurrency {conc}; {st.get('overlapping_streams')} overlap")
    c = r.get("copies") or {}
    if c:
        lines.append(f"copies {c.get('bytes', 0) / 2**20:.0f} MiB: HtoD "
                     f"{c.get('htod_pageable_GBps')} GB/s pageable, "
                     f"{c.get('htod_pinned_GBps')} pinned; DtoH "
                     f"{c.get('dtoh_pageable_GBps')} / {c.get('dtoh_pinned_GBps')}; "
                     f"pinned speed-up {c.get('pinned_speedup')}x")
    for k, v in (r.get("errors") or {}).items():
        lines.append(f"{k}: FAILED: {v}")
    if r.get("error"):
        lines.append(f"error: {r['error']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hipscope-probe", description=__doc__.split("\n")[0])
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--out", help="also write the JSON result to this file")
    p.add_argument("--backend", default="auto", choices=("auto", *_backends.BACKENDS))
    p.add_argument("--device", type=int, default=0, help="GPU ordinal (default 0)")
    p.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    p.add_argument("--only", action="append", choices=SECTIONS,
                   help="run only this section (repeatable)")
    args = p.parse_args(argv)
    res = run_probe(args.backend, args.device, args.quick,
                    tuple(args.only) if args.only else SECTIONS)
    text = json.dumps(res, allow_nan=False, default=str)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    print(text if args.json else format_text(res), flush=True)
    if res.get("error") and "gpu" not in res:
        return 1
    done = [s for s in SECTIONS if s in res]
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())
