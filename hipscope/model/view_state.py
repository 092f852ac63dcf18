"""ViewState: what the user looks at (time window, selection, filters), Qt-free.

One shared, observable object per open trace. Views never call each other: they
change the ViewState and follow its notifications (the Qt document turns them into
signals). Times are int64 ns on the trace's clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .observable import Listener, Observable

__all__ = ["COLOR_MODES", "GROUPINGS", "VALUE_COLOR_MODES", "Filters", "Listener",
           "Observable", "Selection", "ViewState"]

COLOR_MODES = ("name", "duration", "queue_delay", "class")   # class: analysis/kernel_class.py
# Colour modes fed by per-kernel numbers from outside the trace (``color_values``):
# "delta" colours a kernel by its duration over the matched kernel's in another run.
VALUE_COLOR_MODES = ("delta",)
GROUPINGS = ("queue", "stream")


@dataclass(frozen=True)
class Selection:
    """One selected event: ``table`` is 'kernels', 'api', 'copies' or 'markers'."""

    table: str
    row: int


@dataclass(frozen=True)
class Filters:
    name_regex: str = ""
    devices: frozenset[int] | None = None     # None = all
    streams: frozenset[int] | None = None
    min_duration_ns: int | None = None
    max_duration_ns: int | None = None


@dataclass
class ViewState(Observable):
    window: tuple[int, int] = (0, 1)        # visible time range [t0, t1), ns
    selection: Selection | None = None
    filters: Filters = field(default_factory=Filters)
    find_text: str = ""
    find_regex: bool = False
    color_mode: str = "name"
    grouping: str = "queue"                  # GPU -> queue -> stream, or by stream
    color_values: Any = None                 # per kernel row, for VALUE_COLOR_MODES
    area: tuple[int, int] | None = None      # the ruler's range [t0, t1), ns (None: none)
    area_tracks: Any = None                  # the tracks an area selection picked (None: all)

    def set_window(self, t0: int, t1: int) -> None:
        t0, t1 = int(t0), int(t1)
        if t1 <= t0:
            t1 = t0 + 1
        if (t0, t1) != self.window:
            self.window = (t0, t1)
            self._emit("window", self.window)

    def select(self, selection: Selection | None) -> None:
        if selection != self.selection:
            self.selection = selection
            self._emit("selection", selection)

    def set_area(self, area: tuple[int, int] | None, tracks: Any = None) -> None:
        """The measured (area) range; panels list what it holds (on ``tracks`` only,
        a sequence of ``analysis.area.AreaTrack``, when given)."""
        area = None if area is None else (int(min(area)), int(max(area)))
        tracks = None if area is None or tracks is None else tuple(tracks)
        if area != self.area or tracks != self.area_tracks:
            self.area, self.area_tracks = area, tracks
            self._emit("area", area)

    def set_filters(self, **changes: Any) -> None:
        new = replace(self.filters, **changes)
        if new != self.filters:
            self.filters = new
            self._emit("filters", new)

    def set_find(self, text: str, regex: bool = False) -> None:
        if (text, regex) != (self.find_text, self.find_regex):
            self.find_text, self.find_regex = text, regex
            self._emit("find", (text, regex))

    def set_color_mode(self, mode: str) -> None:
        if mode not in COLOR_MODES + VALUE_COLOR_MODES:
            raise ValueError(f"colour mode {mode!r} not in {COLOR_MODES + VALUE_COLOR_MODES}")
        if mode != self.color_mode:
            self.color_mode = mode
            self._emit("color_mode", mode)

    def set_color_values(self, values: Any) -> None:
        """Per-kernel-row numbers for a value-fed colour mode (NaN: none); while such a
        mode is on, views recolour (notified as a "color_mode" change)."""
        self.color_values = values
        if self.color_mode in VALUE_COLOR_MODES:
            self._emit("color_mode", self.color_mode)

    def set_grouping(self, grouping: str) -> None:
        if grouping not in GROUPINGS:
            raise ValueError(f"grouping {grouping!r} not in {GROUPINGS}")
        if grouping != self.grouping:
            self.grouping = grouping
            self._emit("grouping", grouping)
