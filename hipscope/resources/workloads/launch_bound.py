"""A launch-bound PyTorch workload with a configurable stream count and graph capture.

    python launch_bound.py [--streams N] [--graph on|off] [--steps S]
                           [--kernels-per-step K] [--size ELEMENTS] [--warmup W]

Each step queues ``K`` tiny element-wise kernels (``x.add_(1.0)`` on ``--size``
floats: far shorter than their launch), split into ``N`` independent chains, chain
``i`` on its own stream and its own tensor; the step forks from and joins back to the
main stream, so steps do not overlap. ``--graph on`` captures one step (all its
streams) into a ``torch.cuda.CUDAGraph`` and replays it each step. Works on CUDA and
ROCm (``torch.cuda`` is HIP there); ``--device cpu`` runs the same loop on the CPU
(one chain, no graph) for testing without a GPU.

Markers: each timed step runs in ``torch.profiler.record_function("step N")`` and an
NVTX range (roctx on ROCm) of the same name. Each step ends with a no-op
``optimizer.step()`` so profilers that advance on optimizer steps (hipscope's torch
profiler wrapper) see step boundaries.

The last line of stdout is machine-readable (hipscope's sweeps read it)::

    HIPSCOPE_RESULT {"wall_s": ..., "step_ms_median": ..., ...}

``wall_s`` is the host wall time of the timed steps (until the GPU finished them);
``step_ms_median`` the median GPU time of a step between events on the main stream.
Imports only the standard library until the arguments are parsed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from typing import Any

RESULT_PREFIX = "HIPSCOPE_RESULT "


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="launch_bound",
                                description="A launch-bound PyTorch workload.")
    p.add_argument("--streams", type=int, default=1,
                   help="independent chains per step, one stream each (default 1)")
    p.add_argument("--graph", nargs="?", const="on", default="off", choices=("on", "off"),
                   help="capture one step into a CUDA/HIP graph and replay it (default off)")
    p.add_argument("--steps", type=int, default=100, help="timed steps (default 100)")
    p.add_argument("--kernels-per-step", type=int, default=256,
                   help="tiny kernels per step, over all streams (default 256)")
    p.add_argument("--size", type=int, default=4096,
                   help="float elements each kernel touches (default 4096)")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first (default 5)")
    p.add_argument("--device", default="cuda", help="cuda (default; ROCm too) or cpu")
    args = p.parse_args(argv)
    for name in ("streams", "steps", "kernels_per_step", "size"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.warmup < 0:
        p.error("--warmup must not be negative")
    if args.kernels_per_step < args.streams:
        p.error("--kernels-per-step must be at least --streams (one kernel per chain)")
    return args


def chain_lengths(kernels: int, streams: int) -> list[int]:
    """Kernels per chain: ``kernels`` split over ``streams`` as evenly as possible."""
    base, extra = divmod(kernels, streams)
    return [base + (1 if i < extra else 0) for i in range(streams)]


def result_line(result: dict[str, Any]) -> str:
    return RESULT_PREFIX + json.dumps(result, sort_keys=True, allow_nan=False)


def summarise(args: argparse.Namespace, wall_s: float, step_ms: list[float],
              backend: str) -> dict[str, Any]:
    return {"wall_s": round(wall_s, 6),
            "step_ms_median": round(statistics.median(step_ms), 4) if step_ms else None,
            "step_ms_min": round(min(step_ms), 4) if step_ms else None,
            "steps": args.steps, "streams": args.streams, "graph": args.graph == "on",
            "kernels_per_step": args.kernels_per_step, "size": args.size,
            "backend": backend}


class Workload:
    """The tensors, streams and (optionally) the graph of one configuration."""

    def __init__(self, torch, args: argparse.Namespace):
        self.torch, self.args = torch, args
        self.gpu = args.device != "cpu"
        dev = torch.device(args.device)
        n = args.streams if self.gpu else 1
        self.lengths = chain_lengths(args.kernels_per_step, n)
        self.xs = [torch.zeros(args.size, device=dev) for _ in range(n)]
        self.streams = [torch.cuda.Stream() for _ in range(n)] if self.gpu and n > 1 else []
        self.graph = None
        # a no-op optimizer step per step: profilers that step on optimizer.step() see
        # the step boundaries (no parameter has a gradient: nothing is launched)
        self.opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.0)

    def body(self) -> None:
        """One step's kernels: fork to the chains' streams, join back."""
        torch = self.torch
        if not self.streams:
            for x, k in zip(self.xs, self.lengths):
                for _ in range(k):
                    x.add_(1.0)
            return
        main = torch.cuda.current_stream()
        for s in self.streams:
            s.wait_stream(main)
        for s, x, k in zip(self.streams, self.xs, self.lengths):
            with torch.cuda.stream(s):
                for _ in range(k):
                    x.add_(1.0)
        for s in self.streams:
            main.wait_stream(s)

    def capture(self) -> None:
        """Warm up on a side stream, then capture one step into a graph."""
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.body()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.body()
        torch.cuda.synchronize()

    def step(self) -> None:
        if self.graph is not None:
            self.graph.replay()
        else:
            self.body()
        self.opt.step()


def _range(torch, name: str, gpu: bool):
    """record_function + an NVTX/roctx range of the same name (when available)."""
    stack = contextlib.ExitStack()
    stack.enter_context(torch.profiler.record_function(name))
    if gpu:
        try:
            stack.enter_context(torch.cuda.nvtx.range(name))
        except Exception:  # noqa: BLE001 - no NVTX/roctx in this build: markers are optional
            pass
    return stack


def run(args: argparse.Namespace) -> dict[str, Any]:
    try:
        import torch
    except ImportError as exc:
        raise SystemExit(f"launch_bound: torch is not importable by {sys.executable}: "
                         f"{exc}") from None

    gpu = args.device != "cpu"
    if gpu and not torch.cuda.is_available():
        raise SystemExit("launch_bound: no GPU (torch.cuda.is_available() is False); "
                         "use --device cpu to run on the CPU")
    if not gpu and args.graph == "on":
        raise SystemExit("launch_bound: --graph needs a GPU")
    w = Workload(torch, args)
    if args.graph == "on":
        w.capture()
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    for i in range(args.warmup):
        with _range(torch, f"warmup {i}", gpu):
            w.step()
    sync()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(args.steps + 1)] if gpu \
        else []
    host_marks = []
    t0 = time.perf_counter()
    for i in range(args.steps):
        if events:
            events[i].record()
        host_marks.append(time.perf_counter())
        with _range(torch, f"step {i}", gpu):
            w.step()
    if events:
        events[-1].record()
    sync()
    wall = time.perf_counter() - t0
    if events:
        step_ms = [a.elapsed_time(b) for a, b in zip(events, events[1:])]
    else:
        host_marks.append(t0 + wall)
        step_ms = [(b - a) * 1e3 for a, b in zip(host_marks, host_marks[1:])]
    backend = "cpu" if not gpu else ("hip" if getattr(torch.version, "hip", None) else "cuda")
    return summarise(args, wall, step_ms, backend)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    res = run(args)
    print(f"launch_bound: {args.steps} steps x {args.kernels_per_step} kernels on "
          f"{args.streams} stream(s), graph {args.graph}: {res['wall_s'] * 1e3:.1f} ms, "
          f"median step {res['step_ms_median']} ms", file=sys.stderr)
    print(result_line(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
