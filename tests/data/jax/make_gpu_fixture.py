"""Write the GPU-shaped JAX trace-viewer fixture ``gpu/gpu2.trace.json.gz``.

A CPU run records no GPU work, so this file is *built*, not recorded: it follows the
layout that openxla/xla writes (``xla/tsl/profiler/convert/trace_events_to_json.cc``:
compact JSON, process/thread metadata first sorted by id, every arg value a string,
a closing ``{}``; ``xplane_to_trace_events.cc``: pid 1+N for ``/device:GPU:N``, 701
for ``/host:CPU``; ``xla/tsl/profiler/utils/trace_utils.h``: derived line ids from
0xdeadbeef; ``xplane_schema.h``: line names; ``xla/backends/profiler/gpu/
cupti_collector.cc``: ``Stream #S(Kernel,...)`` lines, ``correlation_id``,
``kernel_details``, ``memcpy_details``, ``memset_details``, ``context_id``; host
launch calls carry ``correlation_id`` and ``device_id``). Deterministic: run it again
and the file is byte-identical (gzip mtime 0).

Run: two H100s; 3 steps of ``jit_train_step`` on GPU 0 (4 kernels each on stream 7,
a memset on stream 14), 2 steps of ``jit_eval`` on GPU 1 (2 kernels each, no ``XLA
Ops`` line, so op names come from the kernels' ``hlo_op``), one H2D and one D2H copy
on GPU 0, and one kernel whose launch fell outside the window (correlation 999).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

DERIVED = 0xDEADBEEF
HOST, TID_MAIN, TID_EXEC = 701, 1111, 2222
OPS0 = [("gemm_fusion_dot_1", "dot.1", "128", "132,1,1", "384,1,1", "49152"),
        ("loop_add_fusion", "add.2", "16", "1024,1,1", "128,1,1", "0"),
        ("input_reduce_fusion", "reduce.3", "32", "8,1,1", "1024,1,1", "0"),
        ("wrapped_tanh", "tanh.4", "16", "512,1,1", "256,1,1", "0")]
OPS1 = [("loop_multiply_fusion", "multiply.1", "16", "64,1,1", "128,1,1", "0"),
        ("wrapped_exp", "exp.2", "16", "64,1,1", "128,1,1", "0")]


def us(ns: int) -> float:
    return round(ns / 1000, 3)


def x(pid, tid, ts_ns, dur_ns, name, args=None):
    e = {"ph": "X", "pid": pid, "tid": tid, "ts": us(ts_ns), "dur": us(dur_ns), "name": name}
    if args:
        e["args"] = dict(sorted(args.items()))
    return e


def metadata():
    procs = {1: ("/device:GPU:0", {7: "Stream #7(Kernel,MemcpyH2D,MemcpyD2H)",
                                   14: "Stream #14(Memset)", DERIVED: "Steps",
                                   DERIVED + 4: "XLA Modules", DERIVED + 5: "XLA Ops"}),
             2: ("/device:GPU:1", {7: "Stream #7(Kernel)", DERIVED + 4: "XLA Modules"}),
             HOST: ("/host:CPU", {TID_MAIN: "python", TID_EXEC: "tf_XLAGpuClient/0"})}
    out = []
    for pid, (pname, threads) in procs.items():
        out.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": pname}})
        out.append({"ph": "M", "pid": pid, "name": "process_sort_index",
                    "args": {"sort_index": pid}})
        for i, (tid, tname) in enumerate(sorted(threads.items()), start=1):
            out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name",
                        "args": {"name": tname}})
            out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index",
                        "args": {"sort_index": i if pid == HOST else tid}})
    return out


def kernel_args(corr, module, program, op, regs, grid, block, dyn):
    return {"context_id": "$$1", "correlation_id": str(corr), "hlo_module": module,
            "hlo_op": op, "program_id": str(program), "tf_op": f"jit({module[4:]})/{op}",
            "kernel_details": f"regs:{regs} static_shared:0 dynamic_shared:{dyn} "
                              f"grid:{grid} block:{block} occ_pct:25"}


def gpu0_step(step, t0, corr):
    """Host calls and GPU work of one train step on GPU 0; returns events, next corr."""
    ev = [x(HOST, TID_MAIN, t0, 90_000, f"train_step{step}"),
          x(HOST, TID_MAIN, t0 + 1_000, 60_000, "PjitFunction(train_step)"),
          x(HOST, TID_MAIN, t0 + 500, 89_000, "$train.py:42 train_step")]
    g, mod_start = t0 + 20_000, t0 + 20_000
    ev.append(x(HOST, TID_EXEC, t0 + 5_000, 2_000, "cuMemsetD32Async",
                {"correlation_id": str(corr), "device_id": "0", "context_id": "$$1"}))
    ev.append(x(1, 14, g, 1_500, "Memset", {"correlation_id": str(corr), "context_id": "$$1",
                "memset_details": "kind:device num_bytes:4096 async:1"}))
    corr += 1
    for i, (kname, op, regs, grid, block, dyn) in enumerate(OPS0):
        launch = t0 + 8_000 + i * 3_000
        ev.append(x(HOST, TID_EXEC, launch, 2_500, "cuLaunchKernel",
                    {"correlation_id": str(corr), "device_id": "0", "context_id": "$$1"}))
        dur = 4_000 + 1_000 * i
        ev.append(x(1, 7, g, dur, kname, kernel_args(corr, "jit_train_step", 17, op, regs,
                                                  grid, block, dyn)))
        ev.append(x(1, DERIVED + 5, g, dur, op, {"hlo_category": "non-fusion elementwise"
                                                 if i else "convolution"}))
        g += dur + 500
        corr += 1
    ev.append(x(1, DERIVED + 4, mod_start, g - 500 - mod_start, "jit_train_step(17)",
                {"run_id": str(step)}))
    ev.append(x(1, DERIVED, mod_start, g - 500 - mod_start, str(step)))
    return ev, corr


def gpu1_step(step, t0, corr):
    ev = []
    g = t0 + 30_000
    start = g
    for i, (kname, op, regs, grid, block, dyn) in enumerate(OPS1):
        ev.append(x(HOST, TID_EXEC, t0 + 25_000 + i * 1_200, 1_000, "cuLaunchKernel",
                    {"correlation_id": str(corr), "device_id": "1", "context_id": "$$2"}))
        ev.append(x(2, 7, g, 2_000, kname, kernel_args(corr, "jit_eval", 23, op, regs, grid,
                                                    block, dyn)))
        g += 2_500
        corr += 1
    ev.append(x(2, DERIVED + 4, start, g - 500 - start, "jit_eval(23)", {"run_id": str(step)}))
    return ev, corr


def events():
    ev = [x(HOST, TID_EXEC, 1_000, 3_000, "cuMemcpyHtoDAsync_v2",
            {"correlation_id": "1", "device_id": "0", "context_id": "$$1"}),
          x(1, 7, 6_000, 8_000, "MemcpyH2D", {"correlation_id": "1", "context_id": "$$1",
            "memcpy_details": "kind_src:pinned kind_dst:device size:1048576 dest:0 async:1"})]
    corr = 2
    for step in range(3):
        more, corr = gpu0_step(step, 100_000 + step * 100_000, corr)
        ev += more
    for step in range(2):
        more, corr = gpu1_step(step, 120_000 + step * 100_000, corr)
        ev += more
    ev.append(x(1, 7, 420_000, 3_000, "wrapped_tanh",
                kernel_args(999, "jit_train_step", 17, "tanh.9", "16", "512,1,1", "256,1,1",
                            "0")))
    ev.append(x(1, DERIVED + 5, 420_000, 3_000, "tanh.9"))
    ev.append(x(HOST, TID_EXEC, 430_000, 4_000, "cuMemcpyDtoHAsync_v2",
                {"correlation_id": str(corr), "device_id": "0", "context_id": "$$1"}))
    ev.append(x(1, 7, 436_000, 6_000, "MemcpyD2H", {"correlation_id": str(corr),
                "context_id": "$$1",
                "memcpy_details": "kind_src:device kind_dst:pinned size:4096 dest:0 async:1"}))
    return ev


def main(out: Path) -> None:
    doc = {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True},
           "traceEvents": [*metadata(), *events(), {}]}
    text = json.dumps(doc, separators=(",", ":")).encode()
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0,
                                              filename="") as gz:
        gz.write(text)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else
         Path(__file__).parent / "gpu" / "gpu2.trace.json.gz")
