"""What the GUI benchmarks and scripted GUI runs share: the QApplication, running the
event loop until something holds (or a while), and the zoom/pan scenario that
benchmarks/gui_stall.py times and tests/gui/test_timeline.py checks."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def application(platform: str = "offscreen"):
    """The QApplication (made once; ``QT_QPA_PLATFORM`` defaults to ``platform``)."""
    os.environ.setdefault("QT_QPA_PLATFORM", platform)
    from PySide6.QtWidgets import QApplication

    return QApplication.instance() or QApplication(sys.argv[:1])


def settle(ms: int = 50) -> None:
    """Run the event loop for ``ms`` milliseconds (let posted work and paints happen)."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def wait_until(pred: Callable[[], object], timeout_s: float, what: str, who: str,
               poll_ms: int = 5) -> None:
    """Run the event loop until ``pred()`` holds (checked every ``poll_ms``); after
    ``timeout_s`` exit with one sentence: "WHO: timed out ... waiting for WHAT"."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop, poll = QEventLoop(), QTimer()
    poll.setInterval(poll_ms)
    poll.timeout.connect(lambda: pred() and loop.quit())
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    poll.start()
    if not pred():
        loop.exec()
    poll.stop()
    if not pred():
        raise SystemExit(f"{who}: timed out after {timeout_s:.0f} s waiting for {what}")


def zoom_and_pan(view, wait: Callable[[Callable[[], bool]], None]) -> list[int]:
    """Zoom a TimelineView in 10 times, pan it 10 times, zoom out 6 times, one step
    every 15 ms from a QTimer (through the event loop, as input arrives), repainting
    after each; ``wait(pred)`` runs the loop until ``pred()``. The rows each step
    painted."""
    from PySide6.QtCore import QTimer

    steps = [lambda: view.zoom(0.5)] * 10 + [lambda: view.pan(0.1)] * 10
    steps += [lambda: view.zoom(2.0)] * 6
    done: list[int] = []

    def step() -> None:
        if len(done) < len(steps):
            steps[len(done)]()
            view.repaint()
            done.append(view.stats.rows)

    driver = QTimer()
    driver.setInterval(15)
    driver.timeout.connect(step)
    driver.start()
    wait(lambda: len(done) == len(steps))
    driver.stop()
    return done
