"""The first-frame probe behind ``benchmarks/first_frame.py`` (issue 14).

With ``HIPSCOPE_FIRST_FRAME=print`` (or ``=exit``) in the environment, the first paint
of a timeline that drew events prints ``HIPSCOPE_FIRST_FRAME <unix time>`` to stderr
(and with ``exit`` quits the application): the benchmark subtracts its own launch time
to get process start to first drawn timeline. Off by default; costs one global lookup.
"""

from __future__ import annotations

import os
import sys
import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

ENV = "HIPSCOPE_FIRST_FRAME"
_MODE = os.environ.get(ENV)     # read once: a paint pays one global lookup
_done = not _MODE


def painted(drawn: int) -> None:
    """Called after each timeline paint with how much it drew (rectangles plus the
    pixel columns of sub-pixel events)."""
    global _done
    if _done or drawn <= 0:
        return
    _done = True
    print(f"{ENV} {time.time():.6f}", file=sys.stderr, flush=True)
    if _MODE == "exit":
        QTimer.singleShot(0, QApplication.quit)
