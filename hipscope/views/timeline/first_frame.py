"""The timeline's first frame: it opens the document's gate for the docks, and the
probe behind ``benchmarks/first_frame.py`` (issue 14).

The document holds ``trace_loaded`` and the docks' tasks from a trace's load until the
timeline drew it (:meth:`hipscope.qt.document.Document.expect_first_frame`):
:func:`prepared` opens the gate at once when the view is not on screen (no paint would
come), :func:`painted` after the first paint with rows.

With ``HIPSCOPE_FIRST_FRAME=print`` (or ``=exit``) in the environment, the first paint
of a timeline that drew events prints ``HIPSCOPE_FIRST_FRAME <unix time>`` to stderr
(and with ``exit`` quits the application): the benchmark subtracts its own launch time
to get process start to first drawn timeline. Off by default; costs one global lookup.
"""

from __future__ import annotations

import os
import sys
import time
import weakref

import shiboken6
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

ENV = "HIPSCOPE_FIRST_FRAME"
_MODE = os.environ.get(ENV)     # read once: a paint pays one global lookup
_done = not _MODE


FALLBACK_MS = 2000      # a shown view that gets no paint still lets the docks go


def prepared(view) -> None:
    """The rows are ready: a view that is not shown draws nothing, so the docks go
    now; a shown one at its first paint (or after ``FALLBACK_MS`` without one)."""
    doc = view.document
    if not view.isVisible():
        doc.first_frame_drawn()
    elif not doc.frame_drawn:
        ref = weakref.ref(doc)           # the timer must not keep a closed tab alive
        QTimer.singleShot(FALLBACK_MS, lambda: _drawn(ref))


def _drawn(ref) -> None:
    doc = ref()
    if doc is not None and shiboken6.isValid(doc):
        doc.first_frame_drawn()


def painted(view, drawn: int) -> None:
    """Called after each timeline paint with how much it drew (rectangles plus the
    pixel columns of sub-pixel events)."""
    global _done
    if view.model is not None and not view.document.frame_drawn:
        view.document.first_frame_drawn(later=True)     # not inside the paint
    if _done or drawn <= 0:
        return
    _done = True
    print(f"{ENV} {time.time():.6f}", file=sys.stderr, flush=True)
    if _MODE == "exit":
        QTimer.singleShot(0, QApplication.quit)
