"""Budget of the parsed-trace cache: the key of a trace beside 50,000 unrelated files
(budget 0.1 s), and, with ``--kernels N``, what a verified hit costs against a parse.

    python benchmarks/cache_key.py                   # {"cache_key_50k_siblings_s": ...}
    python benchmarks/cache_key.py --kernels 1000000 # + parse_s, hit_s, verify_s

Prints one JSON object. Each figure is the median of ``--repeat`` runs.
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
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TWIN = ROOT / "tests" / "data" / "rocprofv3-csv-twin" / "node01"


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def key_with_siblings(work: Path, n: int, repeat: int) -> float:
    """Seconds to key one file of a CSV set that shares its folder with ``n`` temp files."""
    from hipscope.parsers import cache

    d = work / "siblings"
    shutil.copytree(TWIN, d)
    for i in range(n):
        (d / f"tmp.{i}").touch()
    trace = d / "4242_kernel_trace.csv"
    assert cache.cache_key(None, trace) is not None
    return _median(lambda: cache.cache_key(None, trace), repeat)


def hit_against_parse(work: Path, kernels: int, repeat: int) -> dict[str, float]:
    """Parse, verified hit, and the CRC-32 pass alone, for one ``kernels``-row trace."""
    from hipscope.parsers import open_trace

    d = work / "big"
    d.mkdir()
    csv = d / "12345_kernel_trace.csv"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gen_rocprofv3_csv.py"),
                    str(csv), str(kernels)], check=True, stdout=subprocess.DEVNULL)
    parse = _median(lambda: open_trace(csv, use_cache=False), repeat)
    open_trace(csv, use_cache=True)
    assert open_trace(csv, use_cache=True).meta.get("cached")
    hit = _median(lambda: open_trace(csv, use_cache=True), repeat)
    files = [p for e in (work / "cache").iterdir() for p in e.glob("*.arrow")]

    def crc_all() -> None:
        for p in files:
            zlib.crc32(p.read_bytes())

    return {"parse_s": parse, "hit_s": hit, "verify_crc32_s": _median(crc_all, repeat),
            "entry_mb": sum(p.stat().st_size for p in files) / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--siblings", type=int, default=50_000)
    ap.add_argument("--kernels", type=int, default=0, help="also time a hit of N kernels")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="hipscope-bench-") as tmp:
        work = Path(tmp)
        os.environ["HIPSCOPE_CACHE_DIR"] = str(work / "cache")
        out = {f"cache_key_{args.siblings // 1000}k_siblings_s":
               key_with_siblings(work, args.siblings, args.repeat)}
        if args.kernels:
            out.update(hit_against_parse(work, args.kernels, args.repeat))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
