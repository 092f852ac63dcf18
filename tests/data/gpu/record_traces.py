"""Record small, real PyTorch-profiler traces on an NVIDIA GPU for hipscope's tests.

Run on the GPU machine: ``python3 record_traces.py OUTDIR``. Each program is tiny
and deterministic in shape; the traces land as OUTDIR/<name>.json.gz, plus
OUTDIR/env.json (GPU, driver, torch/CUDA versions) and OUTDIR/wall.json (wall time
of the profiled region measured independently with torch.cuda.Event and
time.perf_counter, for checking hipscope's figures against).

Programs:
* ``launch_bound``   thousands of sub-microsecond kernels launched from Python: the
                     GPU waits for the host.
* ``sync_bound``     each step: a synchronous pageable host->device copy, two short
                     kernels, a synchronous device->host copy and a synchronize: the
                     GPU's compute idles while the host is blocked in sync calls.
* ``multi_stream``   four streams, each a chain of independent matmuls: kernels overlap.
* ``eager`` / ``graph``  the same launch-bound MLP step run eagerly and replayed
                     from a CUDA graph (torch.cuda.graph), for the comparison view.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile, record_function

DEV = torch.device("cuda")


def _profile(name, outdir, body, steps):
    for _ in range(2):               # warm-up outside the profile
        body(-1)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for s in range(steps):
            with record_function(f"step {s}"):
                body(s)
        e1.record()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    raw = os.path.join(outdir, f"{name}.json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as src, gzip.open(raw + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(raw)
    return {"wall_s": wall, "cuda_event_ms": e0.elapsed_time(e1), "steps": steps}


def launch_bound(outdir):
    x = torch.zeros(256, device=DEV)

    def body(_s):
        for _ in range(300):
            x.add_(1.0)
    return _profile("launch_bound", outdir, body, steps=5)


def sync_bound(outdir):
    host = torch.randn(16 * 1024 * 1024)          # 64 MB pageable
    w = torch.randn(1024, 1024, device=DEV)

    def body(_s):
        d = host.to(DEV)                           # synchronous pageable HtoD copy
        y = (d[: 1024 * 1024].view(1024, 1024) @ w).relu_()
        _ = y.sum().item()                         # DtoH + sync
        torch.cuda.synchronize()
    return _profile("sync_bound", outdir, body, steps=5)


def multi_stream(outdir):
    streams = [torch.cuda.Stream() for _ in range(4)]
    mats = [torch.randn(2048, 2048, device=DEV) for _ in streams]

    def body(_s):
        for st, m in zip(streams, mats):
            with torch.cuda.stream(st):
                y = m
                for _ in range(6):
                    y = torch.tanh(y @ m * 1e-3)
        torch.cuda.synchronize()
    return _profile("multi_stream", outdir, body, steps=3)


def _mlp():
    torch.manual_seed(0)
    layers = [torch.nn.Linear(64, 64) for _ in range(12)]
    model = torch.nn.Sequential(*[m for lay in layers for m in (lay, torch.nn.ReLU())]).to(DEV)
    return model, torch.randn(32, 64, device=DEV)


def eager(outdir):
    model, x = _mlp()

    @torch.no_grad()
    def body(_s):
        for _ in range(20):
            model(x)
    return _profile("eager", outdir, body, steps=5)


def graph(outdir):
    model, x = _mlp()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    with torch.no_grad(), torch.cuda.graph(g):
        model(x)

    def body(_s):
        for _ in range(20):
            g.replay()
    return _profile("graph", outdir, body, steps=5)


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    walls = {}
    for fn in (launch_bound, sync_bound, multi_stream, eager, graph):
        walls[fn.__name__] = fn(outdir)
        print(fn.__name__, walls[fn.__name__], flush=True)
    p = torch.cuda.get_device_properties(0)
    env = {"gpu": p.name, "sms": p.multi_processor_count, "torch": torch.__version__,
           "cuda": torch.version.cuda, "python": sys.version.split()[0]}
    try:
        import subprocess
        env["driver"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    with open(os.path.join(outdir, "env.json"), "w") as f:
        json.dump(env, f, indent=1)
    with open(os.path.join(outdir, "wall.json"), "w") as f:
        json.dump(walls, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
