"""Op attribution cost against the load time (issue 17 budget: attribution <= 30 % of
the load time of the 1M-event Kineto benchmark file).

``python -m benchmarks.ops [--json] [--events N] [--file PATH]`` writes the file with
``benchmarks/gen_kineto.py`` (to a temp folder) unless ``--file`` is given, reads it
without the cache, then times the op forest + launching op of every kernel/copy +
kernel classes. Prints ``{"load_s", "attribution_s", "ratio", "events"}`` (median of
``--runs``) with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from hipscope.analysis.ops import attribute, build_forest
from hipscope.parsers import open_trace

from .gen_kineto import write_kineto_json


def _measure(path: Path, runs: int) -> dict:
    loads, atts = [], []
    events = 0
    for _ in range(runs):
        t0 = time.perf_counter()
        trace = open_trace(path, use_cache=False)
        t1 = time.perf_counter()
        att = attribute(trace, build_forest(trace))
        t2 = time.perf_counter()
        loads.append(t1 - t0)
        atts.append(t2 - t1)
        events = int(trace.meta.get("events") or 0)
        del trace, att
    load, att_s = statistics.median(loads), statistics.median(atts)
    return {"load_s": round(load, 3), "attribution_s": round(att_s, 3),
            "ratio": round(att_s / load, 4) if load else None, "events": events}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ops", description=__doc__)
    p.add_argument("--json", action="store_true")
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--file", type=Path, help="an existing Kineto file instead")
    p.add_argument("--runs", type=int, default=1)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or write_kineto_json(Path(tmp) / "bench.pt.trace.json", args.events)
        out = _measure(path, args.runs)
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{out['events']:,} events: load {out['load_s']:.2f} s, attribution "
              f"{out['attribution_s']:.2f} s ({out['ratio']:.0%} of the load)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
