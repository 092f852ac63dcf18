#!/usr/bin/env python3
"""A loop that copies a batch from pageable host memory every step; ``--pinned`` is the
fix (issue 12 section 5, workload c).

Each step copies a ``--mb`` MB float32 batch from host memory to the GPU (two host
buffers, used in turn) and runs ``--matmuls`` fp32 ``2048 x 2048`` matmul+tanh on it.
By default the host buffers are ordinary (pageable) memory: the copy goes through the
driver's staging buffer at pageable speed and the host waits for it. ``--pinned``
allocates them page-locked (``pin_memory()``) and copies with ``non_blocking=True``.
After ``--warmup`` untimed steps it times ``--steps`` steps with CUDA events and prints
the mean step time as ``HIPSCOPE_RESULT {"wall_s": ...}``. Every step is a
``record_function`` range ``step#<i>``.

    python3 pageable_copies.py [--pinned] [--mb 32] [--matmuls 4] [--steps 30] [--warmup 5]
"""

from __future__ import annotations

import argparse
import json
import sys

SIDE = 2048


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pinned", action="store_true", help="page-locked host buffers")
    p.add_argument("--mb", type=int, default=32, help="batch size in MB (at least 16)")
    p.add_argument("--matmuls", type=int, default=4, help="matmul+tanh per step")
    p.add_argument("--steps", type=int, default=30, help="timed steps")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    return p.parse_args(argv)


def one_step(torch, host, dev_buf, w, a, i: int):
    """Copy batch ``i % 2`` in and compute on it; returns the step's (GPU) loss."""
    dev_buf.copy_(host[i % 2], non_blocking=a.pinned)
    x = dev_buf[:SIDE * SIDE].view(SIDE, SIDE)
    for _ in range(a.matmuls):
        x = torch.tanh(x @ w)
    return x.mean()


def main(argv: list[str]) -> int:
    a = parse(argv)
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    n = max(a.mb, 16) * (1 << 20) // 4
    cpu = torch.Generator().manual_seed(0)
    host = [torch.randn(n, generator=cpu) for _ in range(2)]
    if a.pinned:
        host = [h.pin_memory() for h in host]
    dev = torch.device("cuda")
    dev_buf = torch.empty(n, device=dev)
    w = torch.randn(SIDE, SIDE, device=dev) * SIDE ** -0.5
    acc = torch.zeros((), device=dev)
    for i in range(a.warmup):
        with torch.profiler.record_function(f"step#{i}"):
            acc += one_step(torch, host, dev_buf, w, a, i)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(a.warmup, a.warmup + a.steps):
        with torch.profiler.record_function(f"step#{i}"):
            acc += one_step(torch, host, dev_buf, w, a, i)
    end.record()
    torch.cuda.synchronize()
    step_s = start.elapsed_time(end) / 1000.0 / a.steps
    gbs = n * 4 / 1e9
    print(f"pinned={a.pinned} batch={gbs * 1e3:.0f} MB step={step_s * 1e3:.3f} ms "
          f"loss={float(acc):.6g}", file=sys.stderr)
    print("HIPSCOPE_RESULT " + json.dumps({"wall_s": step_s, "steps": a.steps,
                                           "pinned": a.pinned}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
