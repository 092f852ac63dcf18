#!/usr/bin/env python3
"""8 CUDA streams of long, narrow kernels: what one hardware queue serialises
(issue 12 section 5, workload b; run with ``CUDA_DEVICE_MAX_CONNECTIONS=1``).

Each step every stream joins the default stream, then, stream after stream, runs a
chain of ``--chain`` kernels that each spin one thread for ``--kernel-us`` µs
(``torch.cuda._sleep``: one block of one thread, the narrowest kernel there is; it stands
in for a long kernel with a tiny grid), and is joined back. The GPU has room for all 8
streams at once, and the host launches 32 kernels per step, far less time than they run:
with 8 connections the chains run side by side (a step of about ``chain x kernel-us``);
with ``CUDA_DEVICE_MAX_CONNECTIONS=1`` they share one hardware queue and a chain launched
after another waits behind it (about 8 times that). This morning's 8-stream matmul
program (streams_connections.py) was launch-bound instead and gained nothing.

After ``--warmup`` untimed steps it times ``--steps`` steps with CUDA events on the
default stream and prints the mean step time as ``HIPSCOPE_RESULT {"wall_s": ...}``.
Every step is a ``record_function`` range ``step#<i>``.

    python3 streams_narrow.py [--streams 8] [--chain 4] [--kernel-us 100]
                              [--steps 50] [--warmup 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--streams", type=int, default=8)
    p.add_argument("--chain", type=int, default=4, help="kernels per stream per step")
    p.add_argument("--kernel-us", type=float, default=100.0, help="each kernel's length")
    p.add_argument("--steps", type=int, default=50, help="timed steps")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    return p.parse_args(argv)


def cycles_per_us(torch) -> float:
    """The spin kernel's clock, measured once: cycles per µs of a 2 ms spin."""
    n = 2_000_000
    torch.cuda._sleep(n)                                     # first launch: set-up
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    torch.cuda._sleep(n)
    e.record()
    torch.cuda.synchronize()
    return n / (s.elapsed_time(e) * 1000.0)


def one_step(torch, streams, chain: int, cycles: int) -> None:
    main = torch.cuda.current_stream()
    for s in streams:
        s.wait_stream(main)
    for s in streams:
        with torch.cuda.stream(s):
            for _ in range(chain):
                torch.cuda._sleep(cycles)
    for s in streams:
        main.wait_stream(s)


def main(argv: list[str]) -> int:
    a = parse(argv)
    import torch

    cycles = int(a.kernel_us * cycles_per_us(torch))
    streams = [torch.cuda.Stream() for _ in range(a.streams)]
    for i in range(a.warmup):
        with torch.profiler.record_function(f"step#{i}"):
            one_step(torch, streams, a.chain, cycles)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(a.warmup, a.warmup + a.steps):
        with torch.profiler.record_function(f"step#{i}"):
            one_step(torch, streams, a.chain, cycles)
    end.record()
    torch.cuda.synchronize()
    step_s = start.elapsed_time(end) / 1000.0 / a.steps
    conn = os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "(unset)")
    print(f"CUDA_DEVICE_MAX_CONNECTIONS={conn} streams={a.streams} chain={a.chain} "
          f"kernel={a.kernel_us:g} us ({cycles} cycles) step={step_s * 1e3:.3f} ms",
          file=sys.stderr)
    print("HIPSCOPE_RESULT " + json.dumps({"wall_s": step_s, "steps": a.steps,
                                           "connections": conn}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
