"""Generate a large, realistic rocprofv3 (ROCm 7.0 layout) ``kernel_trace.csv`` (and
optionally the ``hip_api_trace.csv`` of the same run).

Used to measure the rocprofv3 CSV reader at scale::

    python benchmarks/gen_rocprofv3_csv.py /tmp/big/12345_kernel_trace.csv 5000000
    /usr/bin/time -v python -c "from hipscope.parsers import open_trace; open_trace('/tmp/big')"

Rows look like real 7.0 output: ``"KERNEL_DISPATCH"``, ``"Agent N"`` ids, several
queues and streams per agent, one launching thread per stream, monotonic dispatch and
correlation ids, CLOCK_BOOTTIME-like timestamps (~1.5e15 ns), ~300 distinct long
(demangled, comma-rich, and mangled) kernel names, grid sizes in work-items.
Vectorised with numpy/pyarrow: writing 5M rows (~1.7 GB) takes well under a minute.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

HEADER = ("Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id",
          "Kernel_Id", "Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp",
          "LDS_Block_Size", "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count",
          "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z",
          "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z")

_TEMPLATES = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::{op}Functor<{t}>, "
    "std::array<char*, {k}ul> >(int, at::native::{op}Functor<{t}>, std::array<char*, {k}ul>)",
    "void at::native::(anonymous namespace)::reduce_kernel<{k}, 4, at::native::ReduceOp<{t}, "
    "at::native::{op}Ops<{t}, {t}>, unsigned int, {t}, 4> >(at::native::ReduceOp<{t}, "
    "at::native::{op}Ops<{t}, {t}>, unsigned int, {t}, 4>)",
    "Cijk_Ailk_Bljk_{T}_B_MT{k}x{k2}x{k3}_MI32x32x8x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1_"
    "AMAS3_ASE_ASGT_ASLT_ASAE01_ASCE01_ASEM1_AAC0_BL1_BS1_DTL0_DTVA0_EPS1_FL0_GRVW{k4}_GSU1_{op}",
    "_ZN7ck_tile6kentryILi{k}ENS_{k2}FmhaFwdKernelINS_{k3}BlockFmhaPipelineQRKSVSIN{op}{T}"
    "EEENS_17Default2DEpilogueINS_24Default2DEpilogueProblemIffLb1ELb1ELb0EEEvEEEEJNS{k4}_6"
    "FmhaFwdKargsEEEEvDpT1_",
    "void rocprim::detail::block_reduce_kernel<false, rocprim::detail::wrapped_reduce_config<"
    "rocprim::default_config, {t}>, {t}*, {t}*, {t}, rocprim::{op}<{t}, \"q{k}\"> >({t}*, "
    "unsigned long, {t}*, {t}, rocprim::{op}<{t}, void>)",
)
_OPS = ("Add", "Mul", "Sum", "Max", "Min", "Fill", "Copy", "Abs", "Exp", "Log", "Gelu",
        "Silu", "Relu", "Sigmoid", "Tanh")
_TYPES = ("float", "c10::Half", "c10::BFloat16", "double", "int", "long")


def kernel_names(n: int = 300, seed: int = 0) -> list[str]:
    """``n`` distinct long kernel names (demangled with commas/quotes, and mangled)."""
    rng = np.random.default_rng(seed)
    out: list[str] = []
    seen: set[str] = set()
    i = 0
    while len(out) < n:
        tpl = _TEMPLATES[i % len(_TEMPLATES)]
        t = _TYPES[int(rng.integers(len(_TYPES)))]
        name = tpl.format(op=_OPS[int(rng.integers(len(_OPS)))], t=t, T=t[:2].upper(),
                          k=int(rng.integers(1, 512)), k2=int(rng.integers(16, 256)),
                          k3=int(rng.integers(8, 64)), k4=int(rng.integers(1, 9)))
        i += 1
        if name not in seen:
            seen.add(name)
            out.append(name)
    return out


def _chunk(rng: np.random.Generator, names: list[str], first: int, n: int,
           t0: int, n_agents: int, queues_per_agent: int) -> pa.Table:
    idx = np.arange(first, first + n, dtype=np.int64)
    # zipf-ish popularity: a few kernels dominate, as in real traces
    name_code = (rng.zipf(1.3, n) - 1) % len(names)
    agent = rng.integers(0, n_agents, n)
    q = rng.integers(0, queues_per_agent, n)
    queue_id = agent * queues_per_agent + q + 1
    stream_id = queue_id  # one HIP stream per HSA queue (7.0 translation)
    tid = 834304 + q
    dur = (rng.lognormal(9.0, 1.2, n)).astype(np.int64) + 1_000   # ~8 us median
    start = t0 + idx * 5_000 + rng.integers(0, 2_000, n)
    end = start + dur
    wg = np.array([64, 128, 256, 512, 1024], dtype=np.int32)[name_code % 5]
    gx = wg * (1 + (name_code * 37 + idx) % 4096).astype(np.int32)
    gy = np.where(name_code % 7 == 0, 4, 1).astype(np.int32)
    vgpr = (8 + (name_code * 13) % 120).astype(np.int32)
    kind = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)),
                                          pa.array(["KERNEL_DISPATCH"]))
    agents = pa.array([f"Agent {k + 2}" for k in range(n_agents)])
    cols = [
        kind.cast(pa.string()),
        pa.DictionaryArray.from_arrays(pa.array(agent.astype(np.int32)), agents).cast(pa.string()),
        pa.array(queue_id), pa.array(stream_id), pa.array(tid),
        pa.array(idx + 1),                                  # Dispatch_Id
        pa.array(name_code.astype(np.int64) + 10),          # Kernel_Id
        pa.DictionaryArray.from_arrays(pa.array(name_code.astype(np.int32)),
                                       pa.array(names)).cast(pa.string()),
        pa.array(idx * 3 + 7),                              # Correlation_Id
        pa.array(start), pa.array(end),
        pa.array(np.where(name_code % 3 == 0, 16384, 0)),   # LDS_Block_Size
        pa.array(np.where(name_code % 11 == 0, 256, 0)),    # Scratch_Size
        pa.array(vgpr), pa.array(np.where(name_code % 5 == 0, 64, 0)),
        pa.array(np.full(n, 32)),
        pa.array(wg), pa.array(np.ones(n, np.int32)), pa.array(np.ones(n, np.int32)),
        pa.array(gx), pa.array(gy), pa.array(np.ones(n, np.int32)),
    ]
    return pa.Table.from_arrays(cols, names=list(HEADER))


API_HEADER = ("Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id",
              "Start_Timestamp", "End_Timestamp")
_OTHER_CALLS = ("hipMemcpyAsync", "hipStreamSynchronize", "hipGetDevice", "hipEventRecord",
                "hipMalloc", "hipFree", "hipSetDevice", "hipStreamWaitEvent")


def _api_chunk(rng: np.random.Generator, kernels: pa.Table, pid: int) -> pa.Table:
    """The HIP API rows of a kernel chunk: each kernel's launch (same correlation id and
    thread, 5-60 us before the kernel starts, 2-6 us long), and one other call for every
    four kernels (their own correlation ids) on the same threads."""
    n = kernels.num_rows
    k_start = kernels.column("Start_Timestamp").to_numpy()
    tid = kernels.column("Thread_Id").to_numpy()
    corr = kernels.column("Correlation_Id").to_numpy()
    launch = k_start - rng.integers(5_000, 60_000, n)
    other = np.arange(0, n, 4)
    o_start = launch[other] + rng.integers(6_000, 9_000, len(other))
    func = np.concatenate([np.zeros(n, np.int32),
                           rng.integers(1, len(_OTHER_CALLS) + 1, len(other)).astype(np.int32)])
    start = np.concatenate([launch, o_start])
    order = np.argsort(start, kind="stable")
    start = start[order]
    dur = rng.integers(2_000, 6_000, len(start))
    funcs = pa.array(["hipLaunchKernel", *_OTHER_CALLS])
    cols = [
        pa.array(np.full(len(start), "HIP_RUNTIME_API_EXT", dtype=object), pa.string()),
        pa.DictionaryArray.from_arrays(pa.array(func[order]), funcs).cast(pa.string()),
        pa.array(np.full(len(start), pid, np.int64)),
        pa.array(np.concatenate([tid, tid[other]])[order]),
        pa.array(np.concatenate([corr, corr[other] + 1])[order]),   # +1: unused by kernels
        pa.array(start), pa.array(start + dur),
    ]
    return pa.Table.from_arrays(cols, names=list(API_HEADER))


def write_kernel_trace(path: str | Path, n_rows: int, seed: int = 0, *,
                       n_agents: int = 8, queues_per_agent: int = 4,
                       chunk_rows: int = 500_000, api_path: str | Path | None = None
                       ) -> Path:
    """Write ``n_rows`` realistic ROCm 7.0 kernel-trace rows to ``path`` (and, with
    ``api_path``, the HIP API trace of the same run: the kernels are the same either way;
    its Process_Id is the file name's ``<pid>_`` prefix, as rocprofv3 names files)."""
    path = Path(path)
    prefix = path.name.split("_", 1)[0]
    pid = int(prefix) if prefix.isdigit() else 1234
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    api_rng = np.random.default_rng(seed + 1)
    names = kernel_names(300, seed)
    t0 = 1_550_151_853_029_637
    opts = pacsv.WriteOptions(include_header=True, quoting_style="needed")
    writer = api_writer = None
    try:
        done = 0
        while done < n_rows or writer is None:
            n = min(chunk_rows, n_rows - done)
            tbl = _chunk(rng, names, done, n, t0, n_agents, queues_per_agent)
            if writer is None:
                writer = pacsv.CSVWriter(str(path), tbl.schema, write_options=opts)
            writer.write_table(tbl)
            if api_path is not None:
                api = _api_chunk(api_rng, tbl, pid)
                if api_writer is None:
                    api_writer = pacsv.CSVWriter(str(api_path), api.schema, write_options=opts)
                api_writer.write_table(api)
            done += n
            if n == 0:
                break
    finally:
        for w in (writer, api_writer):
            if w is not None:
                w.close()
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("rows", type=int)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--api", type=Path, help="also write the run's hip_api_trace.csv here")
    a = ap.parse_args()
    p = write_kernel_trace(a.path, a.rows, a.seed, api_path=a.api)
    print(f"wrote {a.rows:,} rows, {p.stat().st_size / 1e9:.2f} GB to {p}")


if __name__ == "__main__":
    main()
