"""Issue 14's table: every speed/memory figure with its target and whether it holds.

    python -m benchmarks.table [--json] [--only NAME ...] [--small]

Runs each benchmark module in its own process (``python -m benchmarks.X --json``),
reads its JSON, and prints one row per target: the figure now, the target, and
"holds" / "misses". ``--small`` passes the modules' smaller sizes (a smoke run whose
figures are not the issue's). The load average is printed beside the table: on a
shared machine the wall-clock figures move with it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Target:
    """One row: ``figure(result)`` against ``limit`` (the figure must be at most it)."""

    what: str
    figure: Callable[[dict], float]
    limit: float
    unit: str = ""


# benchmark (its module, or "module:variant") -> (arguments, small-run arguments, targets)
BENCHES: dict[str, tuple[list[str], list[str], list[Target]]] = {
    "pftrace": ([], ["--kernels", "100000"], [
        Target("pftrace report / protobuf parse", lambda r: r["report_s"] / r["protobuf_parse_s"],
               0.5, "x"),
        Target("pftrace report peak RSS", lambda r: r["peak_rss_mb"], 1200, "MB"),
    ]),
    "rocpd": ([], ["--kernels", "100000"], [
        Target("rocpd report / ADBC read", lambda r: r["report_s"] / r["adbc_read_s"], 1.3, "x"),
    ]),
    "reopen": ([], ["--kernels", "200000", "--repeat", "1"], [
        Target("reopen / pandas read_csv", lambda r: r["reopen_s"] / r["pandas_read_s"], 0.35, "x"),
        Target("first open / pandas read_csv",
               lambda r: r["first_open_s"] / r["pandas_read_s"], 1.0, "x"),
    ]),
    "reopen:cached-set": (["--cached-set", "--kernels", "5000000"],
                          ["--cached-set", "--kernels", "200000", "--repeat", "1"], [
        Target("report --json of 5M kernels from cache", lambda r: r["cached_report_s"], 1.0,
               "s"),
    ]),
    "first_frame": ([], ["--kernels", "200000"], [
        Target("app cold first frame / headless report",
               lambda r: r["cold_s"] / r["headless_report_s"], 1.3, "x"),
        Target("app warm first frame / cold", lambda r: r["warm_s"] / r["cold_s"], 0.2, "x"),
    ]),
    # issue 18; the speed-up target (>= 1.7x) as its inverse: 2-worker wall / serial wall
    "ranks": ([], ["--ranks", "8", "--kernels", "20000"], [
        Target("ranks: 2 workers / serial wall", lambda r: 1 / r["speedup"], round(1 / 1.7, 3),
               "x"),
        Target("ranks: client peak RSS", lambda r: r["client_peak_mb"], 300, "MB"),
        Target("ranks: cached run / first run", lambda r: r["cached_ratio"], 0.1, "x"),
    ]),
    "bench_kineto": ([], [], [
        Target("Kineto 1M events", lambda r: r["s"], 2.0, "s"),
        Target("Kineto 1M events peak RSS", lambda r: r["peak_rss_mb"], 1000, "MB"),
    ]),
}


def run(name: str, small: bool) -> dict:
    full, short, _ = BENCHES[name]
    module = name.split(":")[0]
    cmd = [sys.executable, "-m", f"benchmarks.{module}", "--json", *(short if small else full)]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    for line in reversed(out.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"benchmarks.{name} printed no JSON (exit {out.returncode}): "
                       f"{out.stderr.strip().splitlines()[-1:]}")


def rows(results: dict[str, dict]) -> list[dict]:
    out = []
    for name, r in results.items():
        for t in BENCHES[name][2]:
            if "error" in r:
                out.append({"what": t.what, "now": None, "target": t.limit, "unit": t.unit,
                            "holds": False, "error": r["error"]})
                continue
            v = float(t.figure(r))
            out.append({"what": t.what, "now": round(v, 3), "target": t.limit, "unit": t.unit,
                        "holds": v <= t.limit})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--only", nargs="*", choices=sorted(BENCHES))
    a = ap.parse_args(argv)
    results: dict[str, dict] = {}
    for name in a.only or BENCHES:
        try:
            results[name] = run(name, a.small)
        except (RuntimeError, ValueError, KeyError) as exc:
            results[name] = {"error": str(exc)}
    table = rows(results)
    load = os.getloadavg()
    if a.json:
        print(json.dumps({"rows": table, "load_avg": load, "small": a.small}))
        return 0
    print(f"{'figure':36} {'now':>10} {'target':>10}  verdict   (load {load[0]:.1f})")
    for r in table:
        now = "-" if r["now"] is None else f"{r['now']:.3g} {r['unit']}"
        print(f"{r['what']:36} {now:>10} {r['target']:>8} {r['unit']:2} "
              f"{'holds' if r['holds'] else 'misses'}{'  ' + r['error'] if 'error' in r else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
