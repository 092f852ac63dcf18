"""Time the kineto reader on one file: ``python benchmarks/bench_kineto.py FILE [RUNS]``.

Prints the median wall and CPU seconds of full reads (file -> Trace) and the table
sizes; run under ``/usr/bin/time -v`` for the peak RSS. CPU time is the steadier
figure on a shared machine.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from hipscope.parsers import get_reader


def main() -> None:
    path = Path(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
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
    print(f"{path} ({path.stat().st_size / 1e6:.0f} MB, {events} events): "
          f"wall {wall[len(wall) // 2]:.2f} s (runs {', '.join(f'{t:.2f}' for t in wall)}), "
          f"CPU {cpu[len(cpu) // 2]:.2f} s; {sizes}")


if __name__ == "__main__":
    main()
