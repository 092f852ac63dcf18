"""What the benchmarks share: the median wall and CPU time of full reads of one file by
one reader and this process's peak RSS; the load average; hipscope's .pyc files written
before timed runs."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def time_reads(reader_name: str, path: Path, runs: int):
    """``runs`` full reads (file -> Trace); the figures and the last trace."""
    from hipscope.parsers import get_reader

    reader = get_reader(reader_name)
    wall, cpu, tr = [], [], None
    for _ in range(runs):
        del tr
        t0, c0 = time.perf_counter(), time.process_time()
        tr = reader.read(path, lambda f: None, lambda: False)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    wall.sort()
    cpu.sort()
    figures = {"s": round(wall[len(wall) // 2], 3), "cpu_s": round(cpu[len(cpu) // 2], 3),
               "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    return figures, tr


def page_in(*paths: Path) -> None:
    """Read the files once, untimed, so that every timed run (and both sides of a
    ratio) finds them in the page cache. The table runs the benchmarks one after the
    other, and an earlier one (the 3.2 GB of the ranks job's caches) pushed a later
    one's file out: the first timed read then ran at the disk's speed (Kineto 6.4 s
    instead of 1.6 s), and only the side that ran first paid for it."""
    for p in paths:
        for f in sorted(Path(p).rglob("*")) if Path(p).is_dir() else [Path(p)]:
            if f.is_file():
                with open(f, "rb", buffering=0) as fh:
                    while fh.read(16 << 20):
                        pass


def load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def write_pyc(env: dict[str, str] | None = None) -> None:
    """Write the .pyc files of hipscope (once, untimed), as an installed hipscope has them:
    else the first timed run alone pays for compiling every module."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "hipscope")],
                   env=env, check=True, stdout=subprocess.DEVNULL)
