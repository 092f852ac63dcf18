"""The timeline's area selection (as Perfetto's): Shift+drag on the tracks picks a time
range over the tracks the drag crosses. A crossed track counts itself; a crossed folded
group (or fold row) counts every track folded inside it. The pick goes to
``ViewState.set_area(range, tracks)`` as :class:`~hipscope.analysis.area.AreaTrack`
items, so the Range dock lists only their events; Esc clears it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from ...analysis.area import AREA_TABLES, AreaTrack
from .render import AXIS_H

if TYPE_CHECKING:
    from .view import TimelineView


class TimelineArea:
    """The area pick of one timeline: ``box`` is (t0, t1, shown rows crossed) while a
    drag runs or a pick stands (None: no pick)."""

    def __init__(self, view: TimelineView):
        self.view = view
        self.box: tuple[int, int, tuple[int, ...]] | None = None
        self._anchor: tuple[int, float] | None = None    # drag start: time, content y

    def begin(self, x: float, y: float) -> None:
        """Start a pick at a widget point of the track area."""
        v = self.view
        self._anchor = (v.t_of(x), y - AXIS_H + _scroll(v))
        self.drag_to(x, y)

    def drag_to(self, x: float, y: float) -> None:
        """Stretch the pick to a widget point (shown while dragging)."""
        if self._anchor is None:
            return
        v = self.view
        t, ya = self._anchor
        t1 = v.t_of(min(max(x, v.track_rect.left()), v.track_rect.right()))
        a, b = sorted((t, t1))
        self.box = (a, b, tuple(rows_crossed(v.layout, ya, y - AXIS_H + _scroll(v))))
        v.update()

    def finish(self, x: float, y: float) -> bool:
        """End the drag: the pick goes to the document (False when it was a click)."""
        self.drag_to(x, y)
        self._anchor = None
        if self.box is None or self.box[0] == self.box[1] or not self.box[2]:
            self.clear()
            return False
        v = self.view
        v.clear_ruler(keep_area=True)
        v.range_measured.emit(None)             # the ruler's figures are gone
        v.input.last_pick = "ruler"
        v.document.view_state.set_area(self.box[:2], self.tracks())
        return True

    def clear(self) -> bool:
        """Drop the pick (and the document's area when it was this pick's); False when
        there was none."""
        had, self.box, self._anchor = self.box is not None, None, None
        vs = self.view.document.view_state
        if had and vs.area_tracks is not None:
            vs.set_area(None)
        self.view.update()
        return had

    def tracks(self) -> list[AreaTrack]:
        """The event tracks of the pick (see module docstring), top to bottom."""
        v = self.view
        if self.box is None or v.model is None:
            return []
        model, hidden = v.model, v.input.tracks.options.hidden
        out: list[int] = []
        for i in self.box[2]:
            r = model.rows[i]
            if r.kind == "fold" and r.key in v.collapsed:
                out += r.members
            elif r.kind == "group" and r.key in v.collapsed:
                out += _descendants(model, i, hidden)
            else:
                out.append(i)
        seen: set[int] = set()
        picks = []
        for i in out:
            r = model.rows[i]
            if i in seen or r.kind != "track" or r.events is None or r.table not in AREA_TABLES:
                continue
            seen.add(i)
            picks.append(AreaTrack(r.key, _path(model, i), r.table,
                                   np.asarray(r.events.index, dtype=np.int64)))
        return picks


def _scroll(view) -> int:
    return cast(int, view.scroll)         # the view's int (it shadows QWidget.scroll)


def rows_crossed(layout, ya: float, yb: float) -> list[int]:
    """The shown rows (model indices) between two content y's, top to bottom."""
    if len(layout.rows) == 0:
        return []
    lo, hi = sorted((ya, yb))
    lo, hi = max(lo, 0), min(hi, layout.total - 1)
    if hi < lo:
        return []
    p0 = int(np.searchsorted(layout.y, lo, side="right")) - 1
    p1 = int(np.searchsorted(layout.y, hi, side="right")) - 1
    return [int(r) for r in layout.rows[max(p0, 0):p1 + 1]]


def _descendants(model, row: int, hidden: set[str]) -> list[int]:
    out, stack = [], list(reversed(model.rows[row].children))
    while stack:
        i = stack.pop()
        if model.rows[i].key in hidden:
            continue
        out.append(i)
        stack.extend(reversed(model.rows[i].children))
    return out


def _path(model, row: int) -> str:
    """A track's label with its groups' ("GPU 0 › Stream 7")."""
    parts, a = [], row
    while a >= 0:
        parts.append(model.rows[a].label)
        a = model.rows[a].parent
    return " › ".join(reversed(parts))
