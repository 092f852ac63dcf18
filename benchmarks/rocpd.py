"""The rocpd reader against its floor: ``python -m benchmarks.rocpd [--kernels N] [--json]``.

Generates (once, cached under ``--dir``) a rocpd database of N kernels with
``benchmarks/gen_rocpd.py``, then, each in a fresh subprocess: ``hipscope report
--no-cache`` of it (wall seconds and the child's peak RSS), and the floor, an ADBC read
of its two big physical tables (``rocpd_kernel_dispatch``, ``rocpd_region``:
``SELECT *`` to Arrow; the whole subprocess, imports included, as for the report).
Prints ``{"report_s", "peak_rss_mb", "adbc_read_s", "kernels", "ratio"}`` (and both
CPU times, steadier on a loaded machine, and the load average); the
target is ratio <= 1.3 (issue 14), and <= 2 GB peak at 5M kernels. State ``uptime``
beside the figures: this machine is shared.
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

_ADBC = """
import sys
import adbc_driver_sqlite.dbapi as dbapi
con = dbapi.connect("file:" + sys.argv[1] + "?mode=ro")
cur = con.cursor()
cur.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
names = [r[0] for r in cur.fetchall()]
cur.close()
for base in ("rocpd_kernel_dispatch_", "rocpd_region_"):
    cur = con.cursor()
    cur.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": "65536"})
    cur.execute('SELECT * FROM "%s"' % next(n for n in names if n.startswith(base)))
    cur.fetch_arrow_table()
    cur.close()
"""


def _env() -> dict[str, str]:
    """The children's environment: bytecode caching on (an installed hipscope has its
    .pyc files, and so do the ADBC modules of the floor; PYTHONDONTWRITEBYTECODE would
    charge the report ~0.3 s of compiling every module on every run)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


_PHASES = """
import json, sys, time
from pathlib import Path
c0, t0 = time.process_time(), time.thread_time()
from hipscope.parsers import open_trace
from hipscope.analysis.report import build_report
c1, t1 = time.process_time(), time.thread_time()
tr = open_trace(Path(sys.argv[1]))
c2, t2 = time.process_time(), time.thread_time()
build_report(tr)
c3 = time.process_time()
print(json.dumps({"import_cpu_s": round(c1 - c0, 2), "read_cpu_s": round(c2 - c1, 2),
                  "read_main_thread_cpu_s": round(t2 - t1, 2),
                  "analyses_cpu_s": round(c3 - c2, 2)}))
"""


def phases(db: Path) -> dict:
    """CPU seconds of the report's phases in one fresh process: imports, the read (all
    threads: SQL fetches and the integrity check run beside the main thread), the read's
    main thread alone, and the analyses (``build_report``)."""
    out = subprocess.run([sys.executable, "-c", _PHASES, str(db)], env=_env(), check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _run(argv: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one fresh subprocess (its own rusage: wait4)."""
    env = _env()
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{argv[:4]} failed ({proc.returncode}): "
                             f"{err.read().decode(errors='replace')[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(db: Path, runs: int = 1) -> dict:
    """Median report and floor times (the runs alternate), the report's peak RSS."""
    rep, floor, rss = [], [], []
    write_pyc(_env())
    page_in(db)         # in the page cache for both sides
    for _ in range(runs):
        floor.append(_run([sys.executable, "-c", _ADBC, str(db)])[:2])
        wall, c, peak = _run([sys.executable, "-m", "hipscope.cli.main", "report",
                              "--no-cache", str(db)])
        rep.append((wall, c))
        rss.append(peak)
    rep.sort()
    floor.sort()
    (r, rc), (f, fc) = rep[len(rep) // 2], floor[len(floor) // 2]
    return {"report_s": round(r, 2), "peak_rss_mb": round(max(rss)),
            "adbc_read_s": round(f, 2), "ratio": round(r / f, 2),
            "report_cpu_s": round(rc, 2), "adbc_read_cpu_s": round(fc, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/hipscope-bench-rocpd"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--phases", action="store_true",
                    help="also the CPU seconds of the read and of the analyses")
    a = ap.parse_args()
    db = a.dir / f"{a.kernels}" / "4242_results.db"
    if not db.exists():
        sys.path.insert(0, str(ROOT))
        from benchmarks.gen_rocpd import write_rocpd
        write_rocpd(db, a.kernels)
    out = {**measure(db, a.runs), "kernels": a.kernels,
           "load_avg": [round(x, 2) for x in os.getloadavg()]}
    if a.phases:
        out.update(phases(db))
    print(json.dumps(out) if a.json else
          f"{a.kernels:,} kernels: report {out['report_s']} s ({out['peak_rss_mb']} MB peak), "
          f"ADBC floor {out['adbc_read_s']} s, ratio {out['ratio']} (target <= 1.3); "
          f"load {out['load_avg']}")


if __name__ == "__main__":
    main()
