"""Write the two rank traces of ``kineto-nccl-args/`` (deterministic; run from anywhere):
NCCL kernels carrying the collective args newer Kineto copies onto them from their
launching ``record_param_comms`` op, in a trace that has no such op (GPU events and
runtime calls only, as a trace trimmed to its GPU side is).

Key spelling, value types and order follow pytorch/kineto
``libkineto/src/output_json.cpp`` ``appendCollectiveArgs`` and the expected kernel args
of ``libkineto/test/OutputJsonTest.cpp`` ``CollectiveMetadataToleratesQuotedAndUnquoted
Forms`` @ 30a9be30ff25177b23755e62db8ebf966f763e4f: "Collective name" (string),
"In msg nelems" / "Out msg nelems" / "Group size" (numbers), "dtype" (string),
"Process Group Name" / "Process Group Description" / "Process Group Ranks" (strings),
"Seq" (number). The event layout (``ph`` X, ``cat`` "kernel" / "cuda_runtime", relative
``ts`` in µs with ``baseTimeNanoseconds``, ``distributedInfo``) is that of the real
samples in ../shared/samples/kineto. Hand-built, not recorded.

The job: two ranks, a default process group "0" (all_reduce, Seq 1..4) and a subgroup
"1" (broadcast, Seq 1..2). Rank 0's window starts one all_reduce late (it lacks Seq 1),
so numbering by order would pair the wrong instances; rank 1 arrives late at each.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

BASE = 1_764_000_000_000_000_000
KERNEL = {"allreduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
          "broadcast": "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)"}
GROUP = {"allreduce": ("0", "default_pg", "[0, 1]"), "broadcast": ("1", "tp_group", "[0, 1]")}
# (collective, Seq, µs on rank 0) of the job; rank 1 is later by 40 + 10*Seq µs
CALLS = [("allreduce", 1, 100.0), ("broadcast", 1, 180.5), ("allreduce", 2, 260.25),
         ("allreduce", 3, 420.0), ("broadcast", 2, 500.75), ("allreduce", 4, 580.0)]


def _events(rank: int) -> list[dict]:
    pid = 4100 + rank
    evs: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"name": "process_name", "ph": "M", "pid": rank, "tid": 0, "args": {"name": "python"}},
        {"name": "thread_name", "ph": "M", "pid": rank, "tid": 20,
         "args": {"name": "stream 20"}}]
    for i, (coll, seq, t0) in enumerate(CALLS):
        if rank == 0 and (coll, seq) == ("allreduce", 1):
            continue                           # before rank 0's profiling window
        t = t0 + (40 + 10 * seq if rank else 0)
        corr = 1000 + i
        evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid,
                    "tid": pid, "ts": t - 6.5, "dur": 4.25,
                    "args": {"External id": 0, "cbid": 211, "correlation": corr}})
        name, desc, ranks = GROUP[coll]
        evs.append({"ph": "X", "cat": "kernel", "name": KERNEL[coll], "pid": rank, "tid": 20,
                    "ts": t, "dur": 30.5 + seq, "args": {
                        "queued": 0, "device": rank, "context": 1, "stream": 20,
                        "correlation": corr, "registers per thread": 96,
                        "shared memory": 4352, "blocks per SM": 0.25,
                        "warps per SM": 1.0, "grid": [2, 1, 1], "block": [512, 1, 1],
                        "est. achieved occupancy %": 0,
                        "Collective name": coll, "In msg nelems": 1048576,
                        "Out msg nelems": 1048576, "Group size": 2, "dtype": "Float",
                        "Process Group Name": name, "Process Group Description": desc,
                        "Process Group Ranks": ranks, "Seq": seq}})
    return evs


def main(out: Path) -> None:
    for rank in (0, 1):
        doc = {"schemaVersion": 1, "deviceProperties": [
            {"id": rank, "name": "NVIDIA H200", "totalGlobalMem": 150_754_820_096,
             "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
            "traceEvents": _events(rank), "traceName": f"rank-{rank}.json",
            "baseTimeNanoseconds": BASE}
        (out / f"rank-{rank}.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent)
