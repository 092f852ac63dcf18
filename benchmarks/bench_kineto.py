"""Time the kineto reader on one file: ``python -m benchmarks.bench_kineto [FILE] [RUNS]
[--json] [--msgspec]``.

Without FILE, the issue-14 reference file is generated once (1M events, ~573 MB:
``gen_kineto.write_kineto_json(..., name_pad=1400)``) under /tmp. Prints the median wall
and CPU seconds of full reads (file -> Trace), the table sizes and this process's peak
RSS; ``--json``: ``{"s", "cpu_s", "peak_rss_mb", "events", "path", "load_avg"}``; ``path``:
"native" when the C scanner (parsers/_kinscan.c) read the file, else "msgspec".
``--msgspec``: the scanner switched off (the path of the files it declines). Targets
(issue 14): <= 2.0 s, <= 1.0 GB. CPU time is the steadier figure on a shared machine:
state the load average beside the figures.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

from benchmarks._read import page_in
from hipscope.parsers import get_reader
from hipscope.parsers.kineto import native

_REFERENCE = Path("/tmp/hipscope-bench-kineto/kineto_1m.json")


def _reference() -> Path:
    if not _REFERENCE.exists():
        from benchmarks.gen_kineto import write_kineto_json
        _REFERENCE.parent.mkdir(parents=True, exist_ok=True)
        write_kineto_json(_REFERENCE, 1_000_000, seed=0, name_pad=1400)
    return _REFERENCE


OFF = "--msgspec" in sys.argv


def _path(path: Path) -> str:
    """Which reader path reads ``path`` (the scanner declines what it cannot read)."""
    return "native" if native.use_scanner(not OFF) and native.load_native(path) else "msgspec"


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    native.use_scanner(not OFF)
    path = Path(args[0]) if args else _reference()
    page_in(path)           # in the page cache, as the other benchmarks' files are
    runs = int(args[1]) if len(args) > 1 else 1
    reader = get_reader("kineto")
    wall, cpu = [], []
    sizes = ""
    events = None
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        tr = reader.read(path, lambda f: None, lambda: False)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        sizes = ", ".join(f"{k} {len(v)}" for k, v in tr.tables().items() if len(v))
        events = tr.meta.get("events")
        del tr
    wall.sort()
    cpu.sort()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if "--json" in sys.argv:
        print(json.dumps({"s": round(wall[len(wall) // 2], 2),
                          "cpu_s": round(cpu[len(cpu) // 2], 2), "peak_rss_mb": round(peak),
                          "events": events, "path": _path(path),
                          "load_avg": [round(x, 2) for x in os.getloadavg()]}))
        return
    print(f"{path} ({path.stat().st_size / 1e6:.0f} MB, {events} events): "
          f"wall {wall[len(wall) // 2]:.2f} s (runs {', '.join(f'{t:.2f}' for t in wall)}), "
          f"CPU {cpu[len(cpu) // 2]:.2f} s, peak {peak:.0f} MB; {sizes}")


if __name__ == "__main__":
    main()
