"""Load budgets: `python -m benchmarks.load [--json] [--small]`.

Generates realistic synthetic inputs once (in ./bench-data, reused while present):
a 5,000,000-kernel rocprofv3 kernel_trace.csv (and a folder with it and its
hip_api_trace.csv), a 1,000,000-event Kineto JSON and a
5,000,000-kernel rocpd SQLite database (``benchmarks/gen_rocpd.py``),
then measures, each in a fresh subprocess (so peak RSS is the load's own):

* ``rocprofv3_csv_s`` / ``rocprofv3_csv_peak_rss_mb``: open into the full model
  (budget 2.5 s, 1.5 GB); ``*_pyarrow_only_*``: the same with the C fast path off;
* ``kineto_json_s`` / ``kineto_json_peak_rss_mb`` (budget 4 s);
* ``rocprofv3_set_s`` / ``rocprofv3_set_peak_rss_mb`` (no budget): the folder of the same
  5M kernels plus their HIP API trace (6.25M calls, launches linked by correlation id);
* ``rocpd_s`` / ``rocpd_peak_rss_mb`` (``HIPSCOPE_ROCPD_ADBC=0`` measures the sqlite3
  fallback);
* ``*_cached_s``: reopen from hipscope's on-disk cache (budget 0.3 s);
* ``kernels_bytes_per_kernel``: resident size of the kernels table.

Figures are medians of ``--repeat`` runs (default 3). ``--small`` uses 1/50 of the
sizes (a smoke run for CI).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGETS = {"rocprofv3_csv_s": 2.5, "rocprofv3_csv_peak_rss_mb": 1536, "kineto_json_s": 4.0,
           "rocprofv3_csv_cached_s": 0.3, "kineto_json_cached_s": 0.3,
           "kernels_bytes_per_kernel": 100}

_CHILD = r"""
import gc, json, resource, sys, time
from hipscope.parsers import open_trace
path, use_cache = sys.argv[1], sys.argv[2] == "1"
t0 = time.perf_counter()
tr = open_trace(path, use_cache=use_cache)
dt = time.perf_counter() - t0
k = tr.kernels
names = sum(len(s.encode()) for s in k.column("name").dictionary.to_pylist())
from hipscope.parsers import _fastcsv
print(json.dumps({"s": dt, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "fast_csv": _fastcsv.available(),
                  "kernels": len(k), "kernel_bytes": k.nbytes(), "name_bytes": names,
                  "cached": bool(tr.meta.get("cached"))}))
"""


def _measure(path: Path, use_cache: bool, cache_dir: str, **env_extra: str) -> dict:
    env = {**os.environ, "HIPSCOPE_CACHE_DIR": cache_dir, **env_extra}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), "1" if use_cache else "0"],
                         capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def bench(name: str, path: Path, repeat: int) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        cold = [_measure(path, False, cache) for _ in range(repeat)]
        _measure(path, True, cache)  # fill the cache
        warm = [_measure(path, True, cache) for _ in range(repeat)]
        # the same load with the C fast path for CSV files switched off (before/after)
        general = ([_measure(path, False, cache, HIPSCOPE_FASTCSV="0") for _ in range(repeat)]
                   if name == "rocprofv3_csv" else [])
    assert all(w["cached"] for w in warm), "cache was not used"
    r = cold[0]
    extra = {}
    if general:
        extra = {f"{name}_fast_path": r["fast_csv"],
                 f"{name}_pyarrow_only_s": round(_median(general, "s"), 3),
                 f"{name}_pyarrow_only_peak_rss_mb": round(_median(general, "rss_mb"))}
    return {**extra,
        f"{name}_s": round(_median(cold, "s"), 3),
        f"{name}_peak_rss_mb": round(_median(cold, "rss_mb")),
        f"{name}_cached_s": round(_median(warm, "s"), 3),
        f"{name}_kernels": r["kernels"],
        f"{name}_kernel_bytes_per_kernel": round((r["kernel_bytes"] - r["name_bytes"])
                                                 / max(1, r["kernels"]), 1),
        f"{name}_file_mb": round(sum(f.stat().st_size for f in ([path] if path.is_file() else
                                                                path.iterdir())) / 1e6),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--json", action="store_true")
    p.add_argument("--small", action="store_true", help="1/50 sizes (smoke run)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--data", type=Path, default=ROOT / "bench-data")
    p.add_argument("--only", default="csv,set,kineto,rocpd",
                   help="comma-separated subset of csv, set, kineto, rocpd (default: all)")
    args = p.parse_args(argv)
    from benchmarks.gen_kineto import write_kineto_json
    from benchmarks.gen_rocpd import write_rocpd
    from benchmarks.gen_rocprofv3_csv import write_kernel_trace

    scale = 50 if args.small else 1
    n_csv, n_kin, n_rocpd = 5_000_000 // scale, 1_000_000 // scale, 5_000_000 // scale
    args.data.mkdir(parents=True, exist_ok=True)
    csv_path = args.data / f"k{n_csv}" / "1234_kernel_trace.csv"
    kin_path = args.data / f"kineto_{n_kin}_padded.json"
    rocpd_path = args.data / f"rocpd{n_rocpd}" / "4242_results.db"
    only = set(args.only.split(","))
    if "csv" in only and not csv_path.exists():
        csv_path.parent.mkdir(parents=True, exist_ok=True)
        write_kernel_trace(csv_path, n_csv, seed=0)
    set_dir = args.data / f"set{n_csv}"
    if "set" in only and not (set_dir / "1234_hip_api_trace.csv").exists():
        write_kernel_trace(set_dir / "1234_kernel_trace.csv", n_csv, seed=0,
                           api_path=set_dir / "1234_hip_api_trace.csv")
    if "rocpd" in only and not rocpd_path.exists():
        write_rocpd(rocpd_path, n_rocpd, seed=0)
    if "kineto" in only and not kin_path.exists():
        # name_pad makes events as large as the reference file (~570 MB for 1M)
        write_kineto_json(kin_path, n_kin, seed=0, name_pad=1400)
    res = {"rocprofv3_csv_rows": n_csv, "kineto_events": n_kin, "rocpd_kernels": n_rocpd}
    if "csv" in only:
        res.update(bench("rocprofv3_csv", csv_path, args.repeat))
        res["kernels_bytes_per_kernel"] = res["rocprofv3_csv_kernel_bytes_per_kernel"]
    if "set" in only:
        res.update(bench("rocprofv3_set", set_dir, args.repeat))
    if "kineto" in only:
        res.update(bench("kineto_json", kin_path, args.repeat))
    if "rocpd" in only:
        res.update(bench("rocpd", rocpd_path, args.repeat))
    if not args.small:
        res["within_budget"] = {k: res[k] <= v for k, v in BUDGETS.items() if k in res}
    if args.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:<40} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
