"""Budget of ``hipscope ranks`` (issue 18): a generated job of ``--ranks`` ranks of
``--kernels`` kernels each (``benchmarks/gen_ranks.py``, written once into
``bench-data/ranks<R>x<K>/`` and reused).

    python -m benchmarks.ranks --json [--ranks 64] [--kernels 200000]
    python -m benchmarks.ranks --json --client-only --ranks 1024 --kernels 3000 \
        --collectives 125 [--workers 2]

``--client-only``: the client's peak with many ranks and collectives (1,024 ranks x
8 steps x 125 all_reduces = 1,000 instances per rank): one LocalCluster run, no serial
baseline; target <= 300 MB.

Three runs of the CLI, each a fresh process: serial (``--workers 0``) and the
LocalCluster of 2 worker processes, both from an empty cache, then the LocalCluster
again over the cache the workers wrote. Figures: wall and CPU seconds (the CPU of the
process tree), the client's peak RSS and CPU (the CLI process itself: the in-process
scheduler included, the workers not), the speed-up and the cached run's ratio.
Targets: speed-up >= 1.7, client peak <= 300 MB, cached run <= 0.1x the first.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._read import load_avg, write_pyc

ROOT = Path(__file__).resolve().parents[1]

# the CLI in-process, then its own peak RSS (KiB) on the last stderr line: VmHWM, not
# ru_maxrss (which keeps the forking parent's peak across exec on Linux)
_CLIENT = ("import resource, sys; from hipscope.cli.main import main; "
           "rc = main(sys.argv[1:]); "
           "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')]; "
           "u = resource.getrusage(resource.RUSAGE_SELF); "
           "print('maxrss', hwm[0], u.ru_utime + u.ru_stime, file=sys.stderr); sys.exit(rc)")


def _job(ranks: int, kernels: int, collectives: int = 1) -> Path:
    tail = f"c{collectives}" if collectives != 1 else ""
    d = ROOT / "bench-data" / f"ranks{ranks}x{kernels}{tail}"
    done = d / "COMPLETE"                 # written last: a cut generation is redone
    if not done.exists():
        from benchmarks.gen_ranks import write_job

        shutil.rmtree(d, ignore_errors=True)
        write_job(d, ranks, kernels, steps=8, straggler=ranks // 2, collectives=collectives)
        done.write_text("ok\n")
    return d


def _run(job: Path, cache: Path, workers: int) -> dict:
    # the previous run's cache (3.2 GB at 64 x 200k) written back to disk first, so that
    # its writeback is not charged to this run
    os.sync()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HIPSCOPE_CACHE_DIR": str(cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    got = subprocess.run([sys.executable, "-c", _CLIENT, "ranks", str(job), "--workers",
                          str(workers), "--json"], env=env, cwd=ROOT, capture_output=True,
                         text=True, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    _, rss_kib, client_cpu = got.stderr.strip().splitlines()[-1].split()
    ov = json.loads(got.stdout)
    return {"wall_s": round(wall, 2),
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime
                           - before.ru_stime, 2),
            "client_cpu_s": round(float(client_cpu), 2),
            "client_peak_mb": round(int(rss_kib) / 1024, 1), "ranks": len(ov["ranks"]),
            "failed": len(ov["failed"]), "collectives": len(ov["collectives"]),
            "straggler": ov["stragglers"][0]["rank"] if ov["stragglers"] else None}


def client_only(ranks: int, kernels: int, collectives: int, workers: int) -> dict:
    """The client's peak over a job of many ranks and collectives (``--client-only``)."""
    job = _job(ranks, kernels, collectives)
    work = ROOT / "bench-data" / "ranks-caches"
    shutil.rmtree(work, ignore_errors=True)
    load = load_avg()
    local = _run(job, work / "local", workers)
    shutil.rmtree(work, ignore_errors=True)
    return {"ranks": ranks, "kernels_per_rank": kernels, "collectives_per_step": collectives,
            "workers": workers, "local": local, "client_peak_mb": local["client_peak_mb"],
            "targets": {"client_peak_mb": 300}, "load_before": load, "load_after": load_avg()}


def measure(ranks: int, kernels: int) -> dict:
    job = _job(ranks, kernels)
    write_pyc()
    work = ROOT / "bench-data" / "ranks-caches"
    shutil.rmtree(work, ignore_errors=True)
    load = load_avg()
    serial = _run(job, work / "serial", 0)
    local = _run(job, work / "local", 2)
    cached = _run(job, work / "local", 2)
    return {"ranks": ranks, "kernels_per_rank": kernels, "serial": serial,
            "local_2_workers": local, "cached_2_workers": cached,
            "speedup": round(serial["wall_s"] / local["wall_s"], 2),
            "client_peak_mb": local["client_peak_mb"],
            "cached_ratio": round(cached["wall_s"] / local["wall_s"], 3),
            "targets": {"speedup": 1.7, "client_peak_mb": 300, "cached_ratio": 0.1},
            "load_before": load, "load_after": load_avg()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object (default)")
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--kernels", type=int, default=200_000)
    ap.add_argument("--client-only", action="store_true",
                    help="only the client's peak, over one LocalCluster run")
    ap.add_argument("--collectives", type=int, default=1, help="all_reduces per step")
    ap.add_argument("--workers", type=int, default=2, help="with --client-only")
    args = ap.parse_args()
    if args.client_only:
        print(json.dumps(client_only(args.ranks, args.kernels, args.collectives, args.workers)))
    else:
        print(json.dumps(measure(args.ranks, args.kernels)))


if __name__ == "__main__":
    main()
