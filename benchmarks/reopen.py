"""Budget of reopening a trace (issue 14 "Analyses"): ``hipscope report --json`` on a
2M-kernel rocprofv3 CSV, first open (parse + analyses, both stored in the cache) and
reopen (trace and analyses from the cache), against a plain ``pandas.read_csv`` of the
same kernel CSV. Targets: reopen <= 0.35x, first open <= 1.0x that read.

    python -m benchmarks.reopen --json [--kernels 2000000] [--repeat 3]
    python -m benchmarks.reopen --json --cached-set [--kernels 5000000] [--data bench-data]

Every figure is the wall time of a fresh process (interpreter start and imports
included, for pandas too), the median of ``--repeat`` runs; ``pandas_read_csv_call_s``
is the ``read_csv`` call alone. Prints one JSON object
``{"pandas_read_s", "first_open_s", "reopen_s", "kernels", ...}``.

``--cached-set``: ``hipscope report --json`` of the first-frame benchmark's rocprofv3
set (``--kernels`` kernels + 1.25x as many HIP calls, ``bench-data/``) already in the
cache (one untimed report fills it): ``{"cached_report_s", "cached_report_cpu_s",
...}``, target 1.0 s for 5M kernels. CPU time (user + system of the process) is given
beside the wall time: this machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._read import page_in, write_pyc

ROOT = Path(__file__).resolve().parents[1]


def _wall(cmd: list[str], env: dict[str, str], out: list | None = None) -> float:
    t = time.perf_counter()
    got = subprocess.run(cmd, check=True, env=env, stdout=subprocess.PIPE, cwd=ROOT)
    if out is not None:
        out.append(float(got.stdout))
    return time.perf_counter() - t


def measure(work: Path, kernels: int, repeat: int) -> dict:
    csv = work / "run" / "4242_kernel_trace.csv"
    if not csv.exists():
        csv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gen_rocprofv3_csv.py"),
                        str(csv), str(kernels)], check=True, cwd=ROOT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    write_pyc(env)      # as installed (pandas has its .pyc files): no compiling timed
    report = [sys.executable, "-m", "hipscope.cli.main", "report", "--json", str(csv)]
    pandas = [sys.executable, "-c", "import time, pandas; t = time.perf_counter(); "
              f"pandas.read_csv({str(csv)!r}); print(time.perf_counter() - t)"]
    page_in(csv)        # in memory for every run, the first open's included
    first, again, floor, inproc = [], [], [], []
    for i in range(repeat):
        cache = work / f"cache-{i}"
        shutil.rmtree(cache, ignore_errors=True)                # empty: a first open
        env["HIPSCOPE_CACHE_DIR"] = str(cache)
        first.append(_wall(report, env))
        again.append(_wall(report, env))
        floor.append(_wall(pandas, env, inproc))
    p, f, r = (statistics.median(x) for x in (floor, first, again))
    return {"pandas_read_s": round(p, 3), "first_open_s": round(f, 3),
            "reopen_s": round(r, 3), "kernels": kernels,
            "reopen_ratio": round(r / p, 3), "first_open_ratio": round(f / p, 3),
            "pandas_read_csv_call_s": round(statistics.median(inproc), 3),
            "targets": {"reopen_ratio": 0.35, "first_open_ratio": 1.0},
            "load_average": list(os.getloadavg())}


def _wall_cpu(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = os.times()
    wall = _wall(cmd, env)
    after = os.times()
    cpu = (after.children_user - before.children_user
           + after.children_system - before.children_system)
    return wall, cpu


def cached_set(data: Path, kernels: int, repeat: int) -> dict:
    """``report --json`` of the first-frame set from the cache (issue 14: 5M <= 1.0 s)."""
    from benchmarks.first_frame import data_set

    path = data_set(data, kernels)
    with tempfile.TemporaryDirectory(prefix="hipscope-cached-") as d:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HIPSCOPE_CACHE_DIR": d}
        write_pyc(env)
        report = [sys.executable, "-m", "hipscope.cli.main", "report", "--json", str(path)]
        _wall(report, env)                                      # fills the cache
        runs = [_wall_cpu(report, env) for _ in range(repeat)]
    return {"cached_report_s": round(statistics.median(w for w, _ in runs), 3),
            "cached_report_cpu_s": round(statistics.median(c for _, c in runs), 3),
            "kernels": kernels, "targets": {"cached_report_s": 1.0},
            "load_average": list(os.getloadavg())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object (default)")
    ap.add_argument("--kernels", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, help="folder for the generated CSV and caches "
                    "(kept, so a second run skips generating)")
    ap.add_argument("--cached-set", action="store_true",
                    help="time the report of the first-frame set from the cache instead")
    ap.add_argument("--data", type=Path, default=ROOT / "bench-data",
                    help="with --cached-set: where the set is (generated when missing)")
    args = ap.parse_args()
    if args.cached_set:
        print(json.dumps(cached_set(args.data, args.kernels, args.repeat)))
        return
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        print(json.dumps(measure(args.work, args.kernels, args.repeat)))
        return
    with tempfile.TemporaryDirectory(prefix="hipscope-reopen-") as d:
        print(json.dumps(measure(Path(d), args.kernels, args.repeat)))


if __name__ == "__main__":
    main()
