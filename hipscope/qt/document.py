"""Document: one open trace, its ViewState, and the Qt signals views follow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from ..analysis.context import TraceAnalyses, analyses_of
from ..model.trace import Trace
from ..model.view_state import ViewState
from .bridge import ObservableBridge


class Document(QObject):
    """Owns a Trace (immutable) and a ViewState; re-emits ViewState changes as signals.

    Views subscribe to these signals and change state only through ``view_state``;
    they never call each other.
    """

    trace_loaded = Signal(object)        # Trace
    view_changed = Signal(object)        # (t0, t1) ns
    selection_changed = Signal(object)   # Selection | None
    filters_changed = Signal(object)     # Filters
    find_changed = Signal(object)        # (text, regex)
    color_mode_changed = Signal(str)
    grouping_changed = Signal(str)

    def __init__(self, paths: list[Path] | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.paths = list(paths or [])
        self.trace: Trace | None = None
        self.analyses: TraceAnalyses | None = None   # the trace's one analysis service
        self.view_state = ViewState()
        self._bridge = ObservableBridge(self.view_state, self)
        self._bridge.changed.connect(self._on_view_state_changed)

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
        if tr is not None:
            self.view_state.set_window(tr[0], tr[1])
        self.trace_loaded.emit(trace)

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
        }[what]
        signal.emit(value)
