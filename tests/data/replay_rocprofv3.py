#!/usr/bin/env python3
"""STAND-IN for rocprofv3 -- NOT a profiler. No AMD GPU exists on the test machines, so
the launcher tests run this in rocprofv3's place: it takes the command line hipscope
builds for rocprofv3, runs the program, and *replays real rocprofv3 output* (the ROCm
7.0 CSV files the rocprofiler-sdk team publishes,
``../shared/samples/rocprofv3-csv/sdk-docs-2025-08-rocm7.0/``, see PROVENANCE.md) into
the ``-d``/``-o`` location, named as rocprofv3 names its files:
``<dir>/<expanded -o>_<domain>.csv``.

Switch -> replayed sample file -> written name:

    --kernel-trace          kernel_trace.csv          <p>_kernel_trace.csv
    --hip-trace             hip_trace.csv             <p>_hip_api_trace.csv
    --hsa-trace             hsa_api_trace.csv         <p>_hsa_api_trace.csv
    --marker-trace          marker_api_trace.csv      <p>_marker_api_trace.csv
    --memory-copy-trace     memory_copy_trace.csv     <p>_memory_copy_trace.csv
    --memory-allocation-trace, --scratch-memory-trace, --rccl-trace likewise
    --pmc ...               counter_collection.csv    <p>_counter_collection.csv
    -r/--runtime-trace, -s/--sys-trace: their documented sets of the above

Templates expanded like rocprofv3's: %hostname% %pid% %ppid% %rank% %cwd% (%h %p %r).
Only ``--output-format csv`` is replayed (no rocpd/JSON/pftrace sample exists). The
program's exit status is passed through.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

SAMPLES = Path(os.environ.get("HIPSCOPE_SAMPLES") or
               Path(__file__).resolve().parents[2] / ".." / "shared" / "samples").resolve() \
    / "rocprofv3-csv" / "sdk-docs-2025-08-rocm7.0"

REPLAY = {   # trace -> (sample file, rocprofv3 domain name)
    "kernel": ("kernel_trace.csv", "kernel_trace"),
    "hip": ("hip_trace.csv", "hip_api_trace"),
    "hsa": ("hsa_api_trace.csv", "hsa_api_trace"),
    "marker": ("marker_api_trace.csv", "marker_api_trace"),
    "memory_copy": ("memory_copy_trace.csv", "memory_copy_trace"),
    "memory_allocation": ("memory_allocation_trace.csv", "memory_allocation_trace"),
    "scratch_memory": ("scratch_memory_trace.csv", "scratch_memory_trace"),
    "rccl": ("rccl_trace.csv", "rccl_api_trace"),
    "pmc": ("counter_collection.csv", "counter_collection"),
}
RUNTIME = ["kernel", "hip", "marker", "memory_copy", "memory_allocation", "scratch_memory",
           "rccl"]


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        sys.exit("rocprofv3 stand-in: expected OPTIONS -- PROGRAM ARGS")
    i = argv.index("--")
    p = argparse.ArgumentParser(prog="rocprofv3 (stand-in)")
    for t in REPLAY:
        if t != "pmc":
            p.add_argument(f"--{t.replace('_', '-')}-trace", dest=t, action="store_true")
    p.add_argument("-r", "--runtime-trace", action="store_true")
    p.add_argument("-s", "--sys-trace", action="store_true")
    p.add_argument("--pmc", nargs="+", default=[])
    p.add_argument("--stats", action="store_true")
    p.add_argument("-d", "--output-directory", default="%cwd%")
    p.add_argument("-o", "--output-file", default="%hostname%/%pid%")
    p.add_argument("-f", "--output-format", nargs="+", default=["csv"])
    return p.parse_args(argv[:i]), argv[i + 1:]


def expand(tmpl: str, pid: int) -> str:
    rank = next((os.environ[k] for k in ("SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                         "MPI_RANK") if k in os.environ), "0")
    keys = {"%hostname%": socket.gethostname(), "%pid%": str(pid),
            "%ppid%": str(os.getpid()), "%rank%": rank, "%cwd%": os.getcwd(),
            "%h": socket.gethostname(), "%p": str(pid), "%r": rank}
    for k, v in keys.items():
        tmpl = tmpl.replace(k, v)
    return tmpl


def main(argv: list[str]) -> int:
    if argv[:1] == ["--version"]:
        print("rocprofv3 STAND-IN (replays ROCm 7.0 sample CSV; not a profiler)")
        return 0
    args, prog = parse(argv)
    if [f for f in args.output_format if f != "csv"]:
        print("rocprofv3 stand-in: only --output-format csv can be replayed", file=sys.stderr)
        return 2
    wanted = [t for t in REPLAY if t != "pmc" and getattr(args, t)]
    if args.runtime_trace or args.sys_trace:
        wanted += RUNTIME + (["hsa"] if args.sys_trace else [])
    if args.pmc:
        wanted.append("pmc")
    proc = subprocess.Popen(prog)
    status = proc.wait()
    out = Path(expand(args.output_directory, proc.pid)) / expand(args.output_file, proc.pid)
    out.parent.mkdir(parents=True, exist_ok=True)
    for t in dict.fromkeys(wanted):
        src, domain = REPLAY[t]
        shutil.copyfile(SAMPLES / src, f"{out}_{domain}.csv")
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
