"""Nsight Systems SQLite read budget: ``python -m benchmarks.nsys [--json] [--kernels N]``.

Generates once (in ./bench-data, reused while present) an export of about N kernels
(default 155,000, the size issue 13 measured): the newer-schema fixture of
``tests/data/fixtures/make_nsys.py`` with every activity and NVTX row repeated, each copy
shifted past the previous one in time and correlation id (rows stay unsorted, as 2025.6+
writes them). Then reads it ``--runs`` times in this process (file -> Trace) and prints
the median wall and CPU seconds and the peak RSS; ``--json``: ``{"s", "cpu_s",
"peak_rss_mb", "kernels", "api_calls", "markers", "load_avg"}``. ``--sqlite3`` reads
with the sqlite3 row path instead of ADBC (``HIPSCOPE_NSYS_ADBC=0``), for comparison.
Timings on a shared machine are noisy: state the load average beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

from benchmarks._read import load_avg, time_reads

ROOT = Path(__file__).resolve().parents[1]
# tables repeated, and the columns shifted in each copy (time, correlation)
_TIME_COLS = ("start", "end")
_CORR_COLS = ("correlationId",)
_REPEATED = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME",
             "CUPTI_ACTIVITY_KIND_DRIVER", "CUPTI_ACTIVITY_KIND_MEMCPY",
             "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
             "NVTX_EVENTS")


def scaled_export(src: Path, out: Path, copies: int) -> None:
    """``src`` with the rows of the repeated tables ``copies`` times, shifted."""
    tmp = out.with_suffix(".tmp")
    shutil.copyfile(src, tmp)
    db = sqlite3.connect(tmp)
    span = max(db.execute(f'SELECT max("end") - min(start) FROM "{t}"').fetchone()[0] or 0
               for t in _REPEATED) + 1_000_000
    corr = max(db.execute(f'SELECT max(correlationId) FROM "{t}"').fetchone()[0] or 0
               for t in _REPEATED if t != "NVTX_EVENTS") + 1
    for t in _REPEATED:
        cols = [r[1] for r in db.execute(f'PRAGMA table_info("{t}")')]
        exprs = [f'"{c}" + r.i * {span}' if c in _TIME_COLS else
                 f'"{c}" + r.i * {corr}' if c in _CORR_COLS else f'"{c}"' for c in cols]
        db.execute(f'CREATE TEMP TABLE orig AS SELECT * FROM "{t}"')
        db.execute(f'WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r '
                   f'WHERE i < {copies - 1}) INSERT INTO "{t}" SELECT {", ".join(exprs)} '
                   f'FROM r, temp.orig')
        db.execute("DROP TABLE temp.orig")
    db.commit()
    db.close()
    tmp.rename(out)


def generate(data: Path, kernels: int) -> Path:
    """The scaled export (made once)."""
    out = data / f"nsys_{kernels}.sqlite"
    if out.exists():
        return out
    sys.path.insert(0, str(ROOT))
    from tests.data.fixtures.make_nsys import write
    data.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        base = Path(d) / "base.sqlite"
        write(base, newer=True)
        n0 = sqlite3.connect(base).execute(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        scaled_export(base, out, max(1, -(-kernels // n0)))
    return out


def bench(path: Path, runs: int) -> dict:
    r, tr = time_reads("nsys", path, runs)
    return {**r, "kernels": len(tr.kernels), "api_calls": len(tr.api),
            "markers": len(tr.markers), "load_avg": load_avg()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--json", action="store_true")
    p.add_argument("--kernels", type=int, default=155_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--data", type=Path, default=ROOT / "bench-data")
    p.add_argument("--sqlite3", action="store_true", help="HIPSCOPE_NSYS_ADBC=0")
    a = p.parse_args(argv)
    if a.sqlite3:
        os.environ["HIPSCOPE_NSYS_ADBC"] = "0"
    r = bench(generate(a.data, a.kernels), a.runs)
    if a.json:
        print(json.dumps(r))
    else:
        for k, v in r.items():
            print(f"{k:12} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
