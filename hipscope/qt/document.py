"""Document: one open trace, its ViewState, and the Qt signals views follow."""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QTimer, Signal

from ..analysis.context import TraceAnalyses, analyses_of
from ..model.trace import Trace
from ..model.view_state import ViewState
from ..parsers import cache_jobs
from .bridge import ObservableBridge
from .tasks import TaskRunner, TaskScope

PANEL_THREADS = 4      # one pool for all the panels of a trace (the timeline first)
FIRST_FRAME_PRIORITY = 10   # the timeline's tasks; lower ones wait for its first frame


class Document(QObject):
    """Owns a Trace (immutable) and a ViewState; re-emits ViewState changes as signals.

    Views subscribe to these signals and change state only through ``view_state``;
    they never call each other. A new trace goes to the timeline first
    (``trace_to_draw``); ``trace_loaded``, which the docks follow, comes once the
    timeline drew it (:meth:`expect_first_frame`), so nothing competes with its
    first frame.
    """

    trace_to_draw = Signal(object)       # Trace: to the timeline, before trace_loaded
    trace_loaded = Signal(object)        # Trace (after the timeline's first frame)
    view_changed = Signal(object)        # (t0, t1) ns
    selection_changed = Signal(object)   # Selection | None
    filters_changed = Signal(object)     # Filters
    find_changed = Signal(object)        # (text, regex)
    color_mode_changed = Signal(str)
    grouping_changed = Signal(str)
    area_changed = Signal(object)        # (t0, t1) ns of the ruler, or None
    reveal_requested = Signal(object)    # Selection: scroll the timeline to it
    highlight_requested = Signal(object)  # events to stand out (.masks per table), or None

    def __init__(self, paths: list[Path] | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.paths = list(paths or [])
        self.trace: Trace | None = None
        self.analyses: TraceAnalyses | None = None   # the trace's one analysis service
        self.view_state = ViewState()
        self._bridge = ObservableBridge(self.view_state, self)
        self._bridge.changed.connect(self._on_view_state_changed)
        self.tasks = TaskRunner(self, max_threads=PANEL_THREADS)   # the trace's one job runner
        self._frame_view = False      # a timeline draws this document (expect_first_frame)
        self.frame_drawn = True       # the first frame of the current trace is up

    def scope(self, name: str, priority: int = 0) -> TaskScope:
        """A panel's share of the document's job runner (keys prefixed with ``name``)."""
        return self.tasks.scope(name, priority)

    def expect_first_frame(self) -> None:
        """A timeline will draw this document: from each :meth:`set_trace` on,
        ``trace_loaded`` and the tasks of priority below ``FIRST_FRAME_PRIORITY`` (the
        docks') wait until it calls :meth:`first_frame_drawn`."""
        self._frame_view = True

    def first_frame_drawn(self, later: bool = False) -> None:
        """The timeline drew the trace (or cannot): ``trace_loaded`` goes out and the
        held tasks start; ``later``: from the event loop (not inside a paint)."""
        if self.frame_drawn:
            return
        self.frame_drawn = True
        if later:
            ref = weakref.ref(self)      # the timer must not keep a closed tab alive
            QTimer.singleShot(0, lambda: _after_first_frame(ref))
        else:
            self._after_first_frame()

    def _after_first_frame(self) -> None:
        if self.tasks.closed:            # the tab closed before its first frame
            return
        self._release_store()
        self.tasks.release()
        if self.trace is not None:
            self.trace_loaded.emit(self.trace)

    def _release_store(self) -> None:
        """The trace's cache entry, held while the first frame is made (the app's
        loader), is stored from now on."""
        if self.trace is not None:
            cache_jobs.release(self.trace.meta.get("cache_key"))

    def shutdown(self, msecs: int = 10_000) -> bool:
        """Cancel every panel's work and wait for the workers (the tab is closing)."""
        self._release_store()
        return self.tasks.shutdown(msecs)

    @property
    def title(self) -> str:
        if not self.paths:
            return "untitled"
        first = self.paths[0].name or str(self.paths[0])
        return first if len(self.paths) == 1 else f"{first} (+{len(self.paths) - 1})"

    def set_trace(self, trace: Trace) -> None:
        self.trace = trace
        self.analyses = analyses_of(trace)
        tr = trace.time_range()
        if self._frame_view:
            self.frame_drawn = False
            self.tasks.hold(FIRST_FRAME_PRIORITY)
        if tr is not None:
            self.view_state.set_window(tr[0], tr[1])
        self.trace_to_draw.emit(trace)
        if not self._frame_view:
            self._release_store()
            self.trace_loaded.emit(trace)

    def reveal(self, selection) -> None:
        """Select an event and ask the timeline to bring it into view."""
        self.view_state.select(selection)
        self.reveal_requested.emit(selection)

    def highlight(self, events) -> None:
        """Make events stand out in the timeline like find matches (the Ops panel's
        selected op: ``events.masks`` is a bool mask per event table); None: back to
        the find query."""
        self.highlight_requested.emit(events)

    def full_range(self) -> tuple[int, int]:
        tr = self.trace.time_range() if self.trace is not None else None
        return tr if tr is not None else (0, 1)

    def _on_view_state_changed(self, what: str, value: Any) -> None:
        signal = {
            "window": self.view_changed,
            "selection": self.selection_changed,
            "filters": self.filters_changed,
            "find": self.find_changed,
            "color_mode": self.color_mode_changed,
            "grouping": self.grouping_changed,
            "area": self.area_changed,
        }[what]
        signal.emit(value)


def _after_first_frame(ref: weakref.ref) -> None:
    doc = ref()
    if doc is not None and shiboken6.isValid(doc):
        doc._after_first_frame()   # noqa: SLF001 - the timer's weak call into the document
