"""Process start to the first drawn timeline (issue 14 "First frame").

    python -m benchmarks.first_frame [--json] [--kernels 5000000] [--data bench-data]

On the generated rocprofv3 set (``--kernels`` kernels + 1.25x as many HIP calls,
``benchmarks/gen_rocprofv3_csv.py``, kept in ./bench-data), each figure measured in a
fresh process, offscreen:

* ``cold_s``: the app with an empty trace cache, from launching the process to the
  first paint of a timeline that drew kernels (``HIPSCOPE_FIRST_FRAME=exit``: the
  timeline prints the time of that paint and quits, see
  ``hipscope/views/timeline/first_frame.py``);
* ``warm_s``: the same again, the trace now in the cache;
* ``headless_report_s``: ``hipscope report --no-cache --json`` of the same set.

Targets: cold ≤ 1.3x the headless report, warm ≤ 0.2x cold. The load average is
printed beside (a shared machine moves wall-clock figures).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._read import page_in, write_pyc

ROOT = Path(__file__).resolve().parents[1]
MARK = "HIPSCOPE_FIRST_FRAME"
TARGETS = {"cold_vs_report": 1.3, "warm_vs_cold": 0.2}


def data_set(data: Path, kernels: int) -> Path:
    from benchmarks.gen_rocprofv3_csv import write_kernel_trace

    d = data / f"set{kernels}"
    if not (d / "1234_hip_api_trace.csv").exists():
        d.mkdir(parents=True, exist_ok=True)
        write_kernel_trace(d / "1234_kernel_trace.csv", kernels, seed=0,
                           api_path=d / "1234_hip_api_trace.csv")
    return d


def _env(home: Path, cache: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=str(home),
               XDG_CONFIG_HOME=str(home / "config"), HIPSCOPE_CACHE_DIR=str(cache),
               HIPSCOPE_DATA_DIR=str(home / "data"), **extra)
    return env


def first_frame(path: Path, home: Path, cache: Path, timeout: float = 600) -> float:
    """Seconds from launching the app on ``path`` to its first drawn timeline."""
    t0 = time.time()
    out = subprocess.run([sys.executable, "-m", "hipscope", str(path)], cwd=ROOT,
                         env=_env(home, cache, **{MARK: "exit"}), capture_output=True,
                         text=True, timeout=timeout)
    for line in out.stderr.splitlines():
        if line.startswith(MARK + " "):
            return float(line.split()[1]) - t0
    raise RuntimeError(f"the app drew no timeline (exit {out.returncode}): "
                       f"{out.stderr.strip().splitlines()[-3:]}")


def headless_report(path: Path, home: Path, cache: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hipscope", "report", "--no-cache", "--json",
                    str(path)], cwd=ROOT, env=_env(home, cache), check=True,
                   stdout=subprocess.DEVNULL, timeout=600)
    return time.perf_counter() - t0


def _rows(csv: Path) -> int:
    with csv.open("rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 24), b"")) - 1


def measure(path: Path, kernels: int) -> dict:
    write_pyc()         # as installed: no compiling timed in the first run
    with tempfile.TemporaryDirectory(prefix="hipscope-first-frame-") as tmp:
        home, cache = Path(tmp), Path(tmp) / "cache"
        page_in(path)       # the report and both app runs read the CSVs from memory
        report = headless_report(path, home, cache)
        cold = first_frame(path, home, cache)
        warm = first_frame(path, home, cache)
    return {"cold_s": round(cold, 2), "warm_s": round(warm, 2),
            "headless_report_s": round(report, 2), "kernels": kernels,
            "api_calls": _rows(path / "1234_hip_api_trace.csv"),
            "cold_vs_report": round(cold / report, 2), "warm_vs_cold": round(warm / cold, 2),
            "load_avg": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--kernels", type=int, default=5_000_000)
    ap.add_argument("--data", type=Path, default=ROOT / "bench-data")
    a = ap.parse_args(argv)
    r = measure(data_set(a.data, a.kernels), a.kernels)
    if a.json:
        print(json.dumps(r))
    else:
        for k, v in r.items():
            print(f"{k:20} {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
