"""JAX / XLA trace-viewer JSON read budget: ``python -m benchmarks.jax [--json] [--events N]``.

Generates once (in ./bench-data, reused while present) a ``.trace.json.gz`` of about N
events (default 380,000, the size issue 13 measured): the GPU fixture
``tests/data/jax/gpu/gpu2.trace.json.gz`` (kernels, copies, a memset, launch calls, XLA
op / module lines, host ops) with its X events repeated, each copy shifted past the
previous one in time and correlation id. Then reads it ``--runs`` times in this process
(file -> Trace) and prints the median wall and CPU seconds and the peak RSS;
``--json``: ``{"s", "cpu_s", "peak_rss_mb", "events", "kernels", "api_calls", "markers",
"load_avg"}``. Timings on a shared machine are noisy: state the load average beside them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from benchmarks._read import load_avg, time_reads

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "jax" / "gpu" / "gpu2.trace.json.gz"


def scaled(src: Path, out: Path, events: int) -> None:
    """``src`` with its X events repeated until about ``events`` of them."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    evs = doc["traceEvents"]
    xs = [e for e in evs if e.get("ph") == "X"]
    span = max(e["ts"] + e["dur"] for e in xs) + 100.0
    corr = max(int(e["args"]["correlation_id"]) for e in xs
               if "correlation_id" in e.get("args", {})) + 1
    head = [e for e in evs if e.get("ph") == "M"]
    tmp = out.with_suffix(".tmp")
    with gzip.open(tmp, "wt", compresslevel=1) as fh:
        fh.write('{"displayTimeUnit":"ns","traceEvents":[')
        fh.write(",".join(json.dumps(e, separators=(",", ":")) for e in head))
        for k in range(max(1, -(-events // len(xs)))):
            part = []
            for e in xs:
                e = dict(e, ts=round(e["ts"] + k * span, 3))
                if "correlation_id" in e.get("args", {}):
                    e["args"] = dict(e["args"], correlation_id=str(
                        int(e["args"]["correlation_id"]) + k * corr))
                part.append(json.dumps(e, separators=(",", ":")))
            fh.write("," + ",".join(part))
        fh.write(",{}]}")
    tmp.rename(out)


def generate(data: Path, events: int) -> Path:
    out = data / f"jax_{events}.trace.json.gz"
    if not out.exists():
        data.mkdir(parents=True, exist_ok=True)
        scaled(SOURCE, out, events)
    return out


def bench(path: Path, runs: int) -> dict:
    r, tr = time_reads("jax", path, runs)
    return {**r, "events": tr.meta.get("events"), "kernels": len(tr.kernels),
            "api_calls": len(tr.api), "markers": len(tr.markers), "load_avg": load_avg()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--json", action="store_true")
    p.add_argument("--events", type=int, default=380_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--data", type=Path, default=ROOT / "bench-data")
    a = p.parse_args(argv)
    r = bench(generate(a.data, a.events), a.runs)
    if a.json:
        print(json.dumps(r))
    else:
        for k, v in r.items():
            print(f"{k:12} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
