"""Memory kept by closed tabs: `python -m benchmarks.gui_memory [--json] [--kernels N]
[--cycles N]`.

An offscreen main window opens a generated trace (default 1M kernels,
tests/data/fixtures/big_trace.py) in a tab, waits until the timeline and the panels
have drawn, closes the tab and collects garbage; this ``--cycles`` times (default 5).
``rss_growth_mb_per_cycle`` is the resident-set growth from the end of cycle 1 to the
end of the last, per cycle (cycle 1 pays for one-off warm-up: fonts, pools, imports);
budget ``BUDGET_MB`` per cycle. glibc's free lists are trimmed before each reading
(``malloc_trim``) so the figure is memory still referenced, not allocator slack.
tests/gui/test_gui_a_memory.py checks the cause (a closed tab's Trace is collected).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import sys

from benchmarks import _qt
from tests.data.fixtures.big_trace import big_trace

BUDGET_MB = 30.0


def rss_mb() -> float:
    """Resident set size now (Linux /proc), after giving freed heap back to the OS."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise SystemExit("gui_memory: no VmRSS in /proc/self/status (Linux only)")


def wait_until(app, pred, timeout_s: float, what: str) -> None:
    _qt.wait_until(pred, timeout_s, what, "gui_memory")


def one_cycle(app, window, path, settle) -> None:
    """Open, draw (every dock page once), close, collect."""
    from PySide6.QtCore import QCoreApplication, QEvent

    (tab,) = window.open_paths([path])
    wait_until(app, lambda t=tab: t.state == "loaded", 600, "the load")
    wait_until(app, lambda t=tab: not t.timeline.preparing and not t.diagnostics.pending,
               600, "the timeline's rows")
    for dock in window.docks.values():
        dock.raise_()
        settle()
    window.grab()
    tab.document.view_state.set_window(*tab.document.full_range())
    settle()
    window.close_tab(tab)
    del tab
    for _ in range(3):
        settle()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
        gc.collect()


def measure(kernels: int, cycles: int) -> dict:
    app = _qt.application()
    from hipscope.app.main_window import MainWindow

    window = MainWindow(persist=False,
                        loader=lambda paths, progress, cancelled: big_trace(kernels))
    window.resize(1920, 1080)
    window.show()
    rss = [rss_mb()]
    for _ in range(cycles):
        one_cycle(app, window, "generated.trace", _qt.settle)
        rss.append(rss_mb())
    window.close()
    per_cycle = (rss[-1] - rss[1]) / max(cycles - 1, 1)
    return {"kernels": kernels, "cycles": cycles, "rss_mb": [round(x, 1) for x in rss],
            "rss_growth_mb_per_cycle": round(per_cycle, 1), "budget_mb": BUDGET_MB,
            "ok": per_cycle <= BUDGET_MB}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="RSS kept per open/close cycle of a tab.")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--cycles", type=int, default=5)
    a = ap.parse_args(argv)
    out = measure(a.kernels, max(a.cycles, 2))
    if a.json:
        print(json.dumps(out))
    else:
        print(f"RSS after each cycle (MB): {out['rss_mb']}")
        print(f"growth per cycle: {out['rss_growth_mb_per_cycle']} MB "
              f"(budget {BUDGET_MB} MB): {'ok' if out['ok'] else 'OVER'}")
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
