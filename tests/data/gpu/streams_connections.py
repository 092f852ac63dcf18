#!/usr/bin/env python3
"""8 independent CUDA streams, each a chain of small matmuls: a CUDA_DEVICE_MAX_CONNECTIONS probe.

Each step launches, stream after stream (``--order depth``, the default; ``breadth``
interleaves them), ``--chain`` matmuls per stream of a ``(--rows x --size)`` activation
by a ``(--size x --size)`` fp32 weight. The kernels are small (a few thread blocks,
tens of µs), so the GPU can run the 8 streams side by side; with
``CUDA_DEVICE_MAX_CONNECTIONS=1`` every stream shares one hardware queue, and a chain
launched after another waits behind it. After ``--warmup`` untimed steps it times ``--steps``
steps with CUDA events on the default stream (which the streams join at each step's
start and end) and prints the mean step time as ``HIPSCOPE_RESULT {"wall_s": ...}``,
the line that ``hipscope tune --sweep`` compares. Each step is a ``record_function``
range named ``step`` so that a profiler trace has steps.

    python3 streams_connections.py [--streams 8] [--chain 16] [--order depth|breadth]
                                   [--rows 256] [--size 1024] [--steps 20] [--warmup 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--streams", type=int, default=8)
    p.add_argument("--chain", type=int, default=16, help="matmuls per stream per step")
    p.add_argument("--order", choices=("depth", "breadth"), default="depth",
                   help="launch order: each stream's chain in turn, or round-robin")
    p.add_argument("--rows", type=int, default=256, help="activation rows (keeps grids small)")
    p.add_argument("--size", type=int, default=1024, help="weight side")
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    return p.parse_args(argv)


def one_step(torch, streams, xs, ws, chain: int, order: str) -> None:
    """Every stream waits for the default stream, runs its chain, and is joined back."""
    main = torch.cuda.current_stream()
    for s in streams:
        s.wait_stream(main)
    if order == "depth":
        for i, s in enumerate(streams):
            with torch.cuda.stream(s):
                for _ in range(chain):
                    xs[i] = torch.mm(xs[i], ws[i])
    else:
        for _ in range(chain):
            for i, s in enumerate(streams):
                with torch.cuda.stream(s):
                    xs[i] = torch.mm(xs[i], ws[i])
    for s in streams:
        main.wait_stream(s)


def main(argv: list[str]) -> int:
    a = parse(argv)
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False   # plain fp32 kernels, same on every run
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    scale = a.size ** -0.5                          # keeps the chain's values bounded
    ws = [torch.randn(a.size, a.size, device=dev, generator=g) * scale
          for _ in range(a.streams)]
    xs = [torch.randn(a.rows, a.size, device=dev, generator=g) for _ in range(a.streams)]
    streams = [torch.cuda.Stream() for _ in range(a.streams)]
    for _ in range(a.warmup):
        with torch.profiler.record_function("warmup"):
            one_step(torch, streams, xs, ws, a.chain, a.order)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(a.steps):
        with torch.profiler.record_function("step"):
            one_step(torch, streams, xs, ws, a.chain, a.order)
    end.record()
    torch.cuda.synchronize()
    step_s = start.elapsed_time(end) / 1000.0 / a.steps
    checksum = float(sum(x.float().abs().sum().item() for x in xs))
    conn = os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "(unset)")
    print(f"CUDA_DEVICE_MAX_CONNECTIONS={conn} streams={a.streams} chain={a.chain} "
          f"step={step_s * 1e3:.3f} ms checksum={checksum:.6g}", file=sys.stderr)
    print("HIPSCOPE_RESULT " + json.dumps({"wall_s": step_s, "steps": a.steps,
                                           "connections": conn}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
