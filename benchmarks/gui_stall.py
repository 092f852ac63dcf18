"""GUI-thread stall budget: `python -m benchmarks.gui_stall [--json] [--kernels N] [--rows N]`.

A 10 ms QTimer (the heartbeat) runs on the GUI thread while heavy work happens; the
longest gap between two ticks is the longest time the event loop was blocked. Two
scenarios, each budget 100 ms (``BUDGET_MS``):

* ``timeline_stall_ms``: a 5M-kernel trace is prepared (in a worker) in an offscreen
  TimelineView, then zoomed and panned 26 times through the event loop;
* ``table_sort_stall_ms``: a 2M-kernel table is sorted by duration (in a worker), then
  sorted twice in a row (the first request is cancelled).

The tests check that the same work finishes with the right result
(tests/gui/test_timeline.py, tests/gui/test_tables.py); only this benchmark measures
time, because a wall-clock figure depends on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from benchmarks import _qt
from tests.data.fixtures.big_trace import big_trace

BUDGET_MS = 100.0


def wait_until(pred, timeout_s: float, what: str) -> None:
    """Run the event loop until ``pred()`` holds (checked every 5 ms)."""
    _qt.wait_until(pred, timeout_s, what, "gui_stall")


class Heartbeat:
    """A 10 ms QTimer recording the gaps between its ticks."""

    def __init__(self):
        from PySide6.QtCore import QTimer

        self.gaps: list[float] = []
        self._last = time.perf_counter()
        self._timer = QTimer()
        self._timer.setInterval(10)
        self._timer.timeout.connect(self._beat)

    def _beat(self) -> None:
        now = time.perf_counter()
        self.gaps.append(now - self._last)
        self._last = now

    def start(self) -> Heartbeat:
        self._timer.start()
        wait_until(lambda: len(self.gaps) >= 5, 10, "the heartbeat")
        return self

    def stop(self) -> float:
        """Let a few more ticks through (a stall at the very end shows too); the worst ms."""
        n = len(self.gaps)
        wait_until(lambda: len(self.gaps) >= n + 3, 10, "the heartbeat")
        self._timer.stop()
        return round(max(self.gaps) * 1e3, 1)


def timeline_stall(n_kernels: int) -> float:
    from benchmarks.timeline import synthetic_trace
    from hipscope.qt.document import Document
    from hipscope.views.timeline import TimelineView

    trace = synthetic_trace(n_kernels)
    view = TimelineView(Document())
    view.resize(1200, 700)
    view.show()
    hb = Heartbeat().start()
    view.document.set_trace(trace)
    wait_until(lambda: view.model is not None and view.model.n_kernels == n_kernels, 600,
               "the timeline to be prepared")
    done = _qt.zoom_and_pan(view, lambda p: wait_until(p, 120, "the zoom and pan steps"))
    worst = hb.stop()
    if min(done) <= 0:
        raise SystemExit("gui_stall: a zoom or pan step painted no rows")
    view.close()
    return worst


def table_sort_stall(n_rows: int) -> float:
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtTest import QTest

    from hipscope.qt.document import Document
    from hipscope.views.tables import KernelsTableView

    d = Document()
    v = KernelsTableView(d)
    v.resize(1600, 400)
    v.show()
    m = v.model
    d.set_trace(big_trace(n_rows))
    wait_until(lambda: not m.busy and len(m.view_index) == n_rows, 300, "the first sort")
    header = v.table.horizontalHeader()

    def click(column: str) -> None:
        c = m.column_of(column)
        x = header.sectionViewportPosition(c) + header.sectionSize(c) // 2
        QTest.mouseClick(header.viewport(), Qt.MouseButton.LeftButton,
                         pos=QPoint(x, header.height() // 2))

    hb = Heartbeat().start()
    click("duration_ns")
    wait_until(lambda: not m.busy, 300, "the sort by duration")
    click("name")
    click("stream")
    wait_until(lambda: not m.busy, 300, "the sort by stream")
    worst = hb.stop()
    v.close()
    return worst


def run(n_kernels: int, n_rows: int) -> dict:
    app = _qt.application()
    out = {"kernels": n_kernels, "rows": n_rows, "budget_ms": BUDGET_MS,
           "timeline_stall_ms": timeline_stall(n_kernels),
           "table_sort_stall_ms": table_sort_stall(n_rows),
           "load_average": round(os.getloadavg()[0], 2)}
    out["within_budget"] = bool(out["timeline_stall_ms"] <= BUDGET_MS
                                and out["table_sort_stall_ms"] <= BUDGET_MS)
    app.processEvents()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=5_000_000, help="timeline kernels")
    ap.add_argument("--rows", type=int, default=2_000_000, help="table rows to sort")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    out = run(args.kernels, args.rows)
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:24s} {v}")
    return 0 if out["within_budget"] else 1


if __name__ == "__main__":
    sys.exit(main())
