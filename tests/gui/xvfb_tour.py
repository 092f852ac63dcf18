"""A tour of every panel and tab kind in a real window, for the Xvfb smoke test:
`python -m tests.gui.xvfb_tour OUT_DIR TRACE OTHER_TRACE` (under QT_QPA_PLATFORM=xcb).

Opens TRACE in a trace tab, raises and grabs each dock (every registered panel, the
Runs dock), compares TRACE with OTHER_TRACE in a comparison tab, opens a broken file
(the error page), grabs each tab, closes them all and grabs the empty window. Writes
``OUT_DIR/tour.json``: per view its size and distinct colours (the test judges them),
and ``OUT_DIR/<view>.png``. Exit 0 when every step ran.
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

from PySide6.QtGui import QImage

from benchmarks import _qt


def settle(ms: int = 120) -> None:
    _qt.settle(ms)


def wait_until(pred, what: str, timeout_s: float = 240) -> None:
    _qt.wait_until(pred, timeout_s, what, "xvfb_tour", poll_ms=10)


def colours(img: QImage, step: int = 5) -> int:
    return len({img.pixel(x, y) for x in range(0, img.width(), step)
                for y in range(0, img.height(), step)})


class Tour:
    def __init__(self, out: Path):
        self.out, self.seen = out, {}

    def grab(self, name: str, widget) -> None:
        settle()
        img = widget.grab().toImage()
        img.save(str(self.out / f"{name}.png"))
        self.seen[name] = {"width": img.width(), "height": img.height(),
                           "colours": colours(img), "visible": widget.isVisible()}


def trace_tab(w, tour: Tour, trace: Path):
    (tab,) = w.open_paths([trace])
    wait_until(lambda: tab.state != "loading", "the trace")
    wait_until(lambda: not tab.timeline.preparing and not tab.diagnostics.pending,
               "the timeline")
    tour.grab("tab_trace", tab)
    for key, dock in [*w.docks.items(), ("runs", w.runs_dock)]:
        dock.show()
        dock.raise_()
        tour.grab(f"dock_{key}", dock)
    return tab


def main(argv: list[str]) -> int:
    out, trace, other = Path(argv[0]), Path(argv[1]), Path(argv[2])
    out.mkdir(parents=True, exist_ok=True)
    from hipscope.app.main import _application
    from hipscope.app.main_window import MainWindow

    _application()
    w = MainWindow(persist=False)
    w.resize(1920, 1080)
    w.show()
    tour = Tour(out)
    tab = trace_tab(w, tour, trace)
    cmp_tab = w.compare_paths([trace, other], {0: tab.document.trace})
    wait_until(lambda t=cmp_tab: t.state != "loading", "the comparison")
    tour.grab("tab_compare", cmp_tab)
    bad = out / "broken.csv"
    bad.write_text("definitely,not\na,trace\n")
    (failed,) = w.open_paths([bad])
    wait_until(lambda t=failed: t.state != "loading", "the broken file")
    tour.grab("tab_failed", failed)
    states = {"trace": tab.state, "compare": cmp_tab.state, "failed": failed.state}
    for t in w.tab_list():
        w.close_tab(t)
    del tab, cmp_tab, failed
    settle()
    gc.collect()
    tour.grab("window_empty", w)
    (out / "tour.json").write_text(json.dumps({"views": tour.seen, "states": states,
                                               "tabs_left": w.tabs.count()}, indent=1))
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
