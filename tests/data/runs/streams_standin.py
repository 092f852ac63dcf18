#!/usr/bin/env python3
"""Stand-in for the target's ``python`` under ``hipscope run --profiler torch``.

Called as ``python prof/torch_profile.py --out PROF_DIR [...] -- streams.py``, it writes
the Kineto trace that PyTorch's profiler writes for a program of 8 independent streams
of small matmul chains when ``CUDA_DEVICE_MAX_CONNECTIONS=1``: every stream aliases onto
one hardware connection, so the kernels of the 8 streams (plus one set-up kernel on the
default stream 7) take turns and never overlap. Plain json only (no torch on the host).
``streams.py --sleep-if-one S`` also sleeps S seconds when the program runs with one
connection, so an A/B test of raising it has a clear winner.
"""

import json
import os
import sys
import time

STREAMS = [14, 18, 22, 26, 30, 34, 38, 42]
ROUNDS = 12
KERNEL_US = 100.0
GAP_US = 10.0


def events() -> list[dict]:
    ev = [{"name": "process_name", "ph": "M", "ts": 0, "pid": 417, "tid": 0,
           "args": {"name": "python3"}},
          {"name": "process_labels", "ph": "M", "ts": 0, "pid": 417, "tid": 0,
           "args": {"labels": "CPU"}}]
    corr, t_host, t_gpu = 1, 50.0, 200.0
    launches = [(7, "setup")] + [(s, f"r{r}") for r in range(ROUNDS) for s in STREAMS]
    for stream, tag in launches:
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                   "pid": 417, "tid": 417, "ts": t_host, "dur": 4.0,
                   "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": f"ampere_sgemm_64x64_nn_{tag}",
                   "pid": 0, "tid": stream, "ts": t_gpu, "dur": KERNEL_US,
                   "args": {"device": 0, "stream": stream, "correlation": corr,
                            "grid": [64, 1, 1], "block": [256, 1, 1]}})
        corr += 1
        t_host += 6.0
        t_gpu += KERNEL_US + GAP_US
    return ev


def main(argv: list[str]) -> int:
    out = argv[argv.index("--out") + 1]
    doc = {"schemaVersion": 1, "cuda_runtime_version": 13000, "cuda_driver_version": 13000,
           "baseTimeNanoseconds": 1790857026000000000,
           "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "computeMajor": 9,
                                 "computeMinor": 0, "warpSize": 32, "numSms": 132,
                                 "totalGlobalMem": 150109880320}],
           "traceEvents": events()}
    with open(os.path.join(out, "host_417.1790857026.pt.trace.json"), "w") as fh:
        json.dump(doc, fh)
    conn = os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "(default)")
    print("connections:", conn)
    if "--sleep-if-one" in argv and conn == "1":      # A/B tests: one connection is slower
        time.sleep(float(argv[argv.index("--sleep-if-one") + 1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
