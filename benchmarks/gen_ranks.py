"""Write the rank traces of a synthetic data-parallel job (one Kineto file per rank).

``python -m benchmarks.gen_ranks N --kernels K --out DIR [--steps S] [--straggler R
--straggler-op NAME] [--extra-us US] [--seed X]`` writes ``DIR/rank-<r>.json.gz`` for
r = 0..N-1, shaped like torch >= 2.4 output: ``distributedInfo`` {backend, rank,
world_size}, ``baseTimeNanoseconds`` (one clock for every rank) with relative µs
timestamps, ``ProfilerStep#N`` annotations, and per launch a ``cpu_op`` around a
``cudaLaunchKernel`` (``correlation``) and the kernel on stream 7 (GEMMs and
elementwise kernels). Every step ends in an all-reduce: a ``record_param_comms`` op
(args ``Collective name``, ``Process Group Name``, ``Process Group Ranks``, ``Seq``)
around ``nccl:all_reduce`` and the launch of an ``ncclDevKernel_AllReduce`` kernel.

The collective kernel of a rank starts when its stream reaches it (its *arrival*) and
every rank's ends at the last arrival plus the transfer time, as NCCL behaves. The
planted straggler runs one extra op (``--straggler-op``, default
``aten::slow_preprocess``) per step, whose kernels delay its arrivals by about
``--extra-us`` µs, so it arrives last and the others wait for it.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import numpy as np

BASE_NS = 1_790_857_026_000_000_000
STREAM = 7
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas"
ELEMWISE = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add"
            "<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add"
            "<c10::BFloat16>, std::array<char*, 3ul>)")
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
OPS = (("aten::mm", GEMM), ("aten::add", ELEMWISE))
DEFAULT_OP = "aten::slow_preprocess"


def _us(ns: int) -> str:
    """ns on the base clock as Kineto's µs text with 3 decimals (exact)."""
    return f"{ns // 1000}.{ns % 1000:03d}"


def _x(cat: str, name: str, pid: int, tid: int, start: int, dur: int, args: dict) -> str:
    a = json.dumps(args, separators=(", ", ": "))
    return (f'{{"ph": "X", "cat": "{cat}", "name": {json.dumps(name)}, "pid": {pid}, '
            f'"tid": {tid}, "ts": {_us(start)}, "dur": {_us(dur)}, "args": {a}}}')


class _Rank:
    """One rank's file, its pending event lines and counters (clocks: ns from base)."""

    def __init__(self, rank: int, world: int, seed: int, out: Path):
        self.rank, self.world = rank, world
        self.pid = 1000 + rank
        self.rng = np.random.default_rng([seed, rank])
        self.lines: list[str] = []
        self.corr = 1
        self.ext = 1
        self.path = out / f"rank-{rank}.json.gz"
        self.fh = gzip.open(self.path, "wt", compresslevel=1)
        self.fh.write(_header(rank, world) + ',\n  "traceEvents": [\n  ')
        self.first = True

    def flush(self) -> None:
        """Write the lines made so far (a step's), so a job of many ranks never sits in
        memory at once."""
        if self.lines:
            self.fh.write(("" if self.first else ",\n  ") + ",\n  ".join(self.lines))
            self.first = False
            self.lines.clear()

    def close(self) -> Path:
        self.flush()
        self.fh.write("\n  ],\n" + f'  "traceName": "rank-{self.rank}"\n}}\n')
        self.fh.close()
        return self.path

    def launch(self, op: str, kernel: str, h: int, g: int, k_ns: int) -> tuple[int, int]:
        """One op launching one kernel at host ``h``; returns (host, gpu) clocks after."""
        call = h + 1_000
        k_start = max(g, call + 4_000)
        self.lines.append(_x("cpu_op", op, self.pid, self.pid, h, 6_000,
                             {"External id": self.ext}))
        self.lines.append(_x("cuda_runtime", "cudaLaunchKernel", self.pid, self.pid, call,
                             3_000, {"External id": self.ext, "cbid": 211,
                                     "correlation": self.corr}))
        self.lines.append(_x("kernel", kernel, 0, STREAM, k_start, k_ns,
                             {"External id": self.ext, "device": 0, "stream": STREAM,
                              "correlation": self.corr}))
        self.corr += 1
        self.ext += 1
        return h + 8_000, k_start + k_ns


def _compute(r: _Rank, n: int, h: int, g: int, extra: tuple[str, int, int] | None
             ) -> tuple[int, int]:
    """A step's compute kernels (and the straggler's extra op); clocks after them."""
    durs = r.rng.integers(9_000, 11_000, n)
    for i in range(n):
        op, kernel = OPS[i % 2]
        h, g = r.launch(op, kernel, h, g, int(durs[i]))
    if extra is not None:
        op, count, each = extra
        for _ in range(count):
            h, g = r.launch(op, ELEMWISE, h, g, each)
    return h, g


def _allreduce(r: _Rank, seq: int, h: int) -> int:
    """The collective's host side at ``h``; returns its correlation id."""
    ranks = json.dumps(list(range(r.world)))
    r.lines.append(_x("cpu_op", "record_param_comms", r.pid, r.pid, h, 20_000, {
        "External id": r.ext, "Collective name": "allreduce", "dtype": "BFloat16",
        "In msg nelems": 1 << 20, "Out msg nelems": 1 << 20, "Group size": r.world,
        "Process Group Name": "0", "Process Group Description": "default_pg",
        "Process Group Ranks": ranks, "Rank": r.rank, "Seq": seq}))
    r.lines.append(_x("user_annotation", "nccl:all_reduce", r.pid, r.pid, h + 1_000,
                      18_000, {"External id": r.ext + 1}))
    r.ext += 2
    return h + 2_000


def write_job(out: Path, n: int, kernels: int, steps: int = 8, straggler: int | None = None,
              straggler_op: str = DEFAULT_OP, extra_us: int = 400, seed: int = 0,
              collectives: int = 1) -> list[Path]:
    """Write the job's ``n`` rank files into ``out``; returns their paths. Each step is
    ``collectives`` rounds of compute then an all_reduce (the straggler's extra op in
    the first round)."""
    out.mkdir(parents=True, exist_ok=True)
    ranks = [_Rank(r, n, seed, out) for r in range(n)]
    per_step = max(1, (kernels - steps * collectives) // (steps * collectives))
    extra_count = 4
    extra = (straggler_op, extra_count, extra_us * 1000 // extra_count)
    h = g = {r.rank: 1_000_000 for r in ranks}
    h, g = dict(h), dict(g)
    for s in range(steps):
        step_start = {r.rank: h[r.rank] for r in ranks}
        for k in range(collectives):
            done = _round(ranks, h, g, per_step, s * collectives + k + 1,
                          extra if k == 0 else None, straggler)
        for r in ranks:
            r.lines.append(_x("user_annotation", f"ProfilerStep#{s + 1}", r.pid, r.pid,
                              step_start[r.rank], done + 5_000 - step_start[r.rank], {}))
            r.flush()
    return [r.close() for r in ranks]


def _round(ranks: list[_Rank], h: dict, g: dict, per_step: int, seq: int,
           extra: tuple[str, int, int] | None, straggler: int | None) -> int:
    """One round of every rank: compute, then the all_reduce they all wait for; the
    hosts sync on its result. Returns when the last rank's all_reduce ended."""
    arrive, calls = {}, {}
    for r in ranks:
        mine = extra if r.rank == straggler else None
        h[r.rank], arrive[r.rank] = _compute(r, per_step, h[r.rank], g[r.rank], mine)
        calls[r.rank] = _allreduce(r, seq, h[r.rank])
    done = max(max(arrive.values()), max(calls.values()) + 4_000) + 50_000
    for r in ranks:
        c = calls[r.rank]
        start = max(arrive[r.rank], c + 4_000)
        r.lines.append(_x("cuda_runtime", "cudaLaunchKernel", r.pid, r.pid, c, 3_000,
                          {"External id": r.ext, "cbid": 211, "correlation": r.corr}))
        r.lines.append(_x("kernel", ALLREDUCE, 0, 20, start, done - start,
                          {"External id": r.ext, "device": 0, "stream": 20,
                           "correlation": r.corr}))
        r.corr += 1
        r.ext += 1
        h[r.rank] = g[r.rank] = done + 10_000   # the host syncs on the round's result
    return done


def _header(rank: int, world: int) -> str:
    head = {"schemaVersion": 1, "deviceProperties": [{
        "id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85520809984,
        "computeMajor": 9, "computeMinor": 0, "warpSize": 32, "numSms": 132}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
        "cuda_runtime_version": 12040, "baseTimeNanoseconds": BASE_NS}
    return json.dumps(head)[:-1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ranks", type=int)
    ap.add_argument("--kernels", type=int, default=2000, help="kernels per rank (about)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--straggler", type=int, default=None)
    ap.add_argument("--straggler-op", default=DEFAULT_OP)
    ap.add_argument("--extra-us", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--collectives", type=int, default=1, help="all_reduces per step")
    a = ap.parse_args(argv)
    paths = write_job(a.out, a.ranks, a.kernels, a.steps, a.straggler, a.straggler_op,
                      a.extra_us, a.seed, a.collectives)
    print(f"wrote {len(paths)} rank files into {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
