#!/usr/bin/env python3
"""A training-like loop that reads its loss on the host every step (a synchronisation
per step); ``--no-sync`` keeps the loss on the GPU and reads it once at the end
(issue 12 section 5, workload d).

Each step the host first spends ``--host-ms`` ms of its own time (a busy loop standing in
for data preparation, bookkeeping or logging: the same on every machine), then queues
``--matmuls`` fp32 ``2048 x 2048`` matmul+tanh and the loss. By default it then calls
``loss.item()``: the host waits until the GPU has drained, so the next step's host time
runs while the GPU idles. With ``--no-sync`` the loss is summed on the GPU, the host
prepares step i+1 while the GPU computes step i, and only the end reads it. After
``--warmup`` untimed steps it times ``--steps`` steps with CUDA events and prints the mean
step time as ``HIPSCOPE_RESULT {"wall_s": ...}``. Every step is a ``record_function``
range ``step#<i>``.

    python3 sync_step.py [--no-sync] [--host-ms 0.5] [--matmuls 6] [--steps 60] [--warmup 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

SIDE = 2048


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--no-sync", action="store_true", help="read the loss once, at the end")
    p.add_argument("--host-ms", type=float, default=0.5, help="host work per step")
    p.add_argument("--matmuls", type=int, default=6, help="matmul+tanh per step")
    p.add_argument("--steps", type=int, default=60, help="timed steps")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    return p.parse_args(argv)


def host_work(ms: float) -> None:
    """Busy host time (the program's own CPU work between steps)."""
    t_end = time.perf_counter() + ms / 1000.0
    while time.perf_counter() < t_end:
        pass


def one_step(torch, x, w, a, acc, log: list[float]):
    host_work(a.host_ms)
    y = x
    for _ in range(a.matmuls):
        y = torch.tanh(y @ w)
    loss = y.mean()
    if a.no_sync:
        acc += loss
    else:
        log.append(loss.item())                    # the host waits for the GPU here


def main(argv: list[str]) -> int:
    a = parse(argv)
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(SIDE, SIDE, device=dev, generator=g)
    w = torch.randn(SIDE, SIDE, device=dev, generator=g) * SIDE ** -0.5
    acc, log = torch.zeros((), device=dev), []
    for i in range(a.warmup):
        with torch.profiler.record_function(f"step#{i}"):
            one_step(torch, x, w, a, acc, log)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(a.warmup, a.warmup + a.steps):
        with torch.profiler.record_function(f"step#{i}"):
            one_step(torch, x, w, a, acc, log)
    end.record()
    torch.cuda.synchronize()
    step_s = start.elapsed_time(end) / 1000.0 / a.steps
    total = float(acc) + sum(log)
    print(f"sync={'off' if a.no_sync else 'per step'} host={a.host_ms:g} ms "
          f"step={step_s * 1e3:.3f} ms loss_sum={total:.6g}", file=sys.stderr)
    print("HIPSCOPE_RESULT " + json.dumps({"wall_s": step_s, "steps": a.steps,
                                           "sync": not a.no_sync}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
