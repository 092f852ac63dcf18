"""Find in the timeline: the matches of the document's query, stepping through them,
and the status the find bar shows ("searching…", "3 of 26").

Big traces are searched in a worker; a step asked for meanwhile (Enter while
searching) is kept and taken when the matches arrive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ...analysis import lod

if TYPE_CHECKING:
    from .view import TimelineView

SYNC_FIND = 200_000        # kernels + API calls: below this, find on the GUI thread


@dataclass(frozen=True)
class FindStatus:
    """What the find bar shows: ``current`` is the 0-based match stepped to (None
    before the first step); ``total`` the number of matches."""

    text: str = ""
    searching: bool = False
    total: int = 0
    current: int | None = None

    def label(self) -> str:
        if not self.text:
            return ""
        if self.searching:
            return "searching…"
        if self.total == 0:
            return "no matches"
        if self.current is None:
            return "1 match" if self.total == 1 else f"{self.total:,} matches"
        return f"{self.current + 1:,} of {self.total:,}"


@dataclass(frozen=True)
class Match:
    """One match of the results list."""

    table: str
    row: int
    name: str
    start: int
    end: int


class TimelineFind:
    """The view's find state: it sets ``view.found``/``view.find_starts`` (painted)
    and emits ``view.find_status`` on every change."""

    def __init__(self, view: TimelineView):
        self.view = view
        self.searching = False
        self.current: int | None = None
        self._pending: bool | None = None     # a step asked for while searching

    def status(self) -> FindStatus:
        v = self.view
        f = v.found
        return FindStatus(v.document.view_state.find_text, self.searching,
                          0 if f is None else len(f), self.current)

    def _emit(self) -> None:
        self.view.find_status.emit(self.status())

    def set_result(self, found: lod.FindResult | None, starts: dict) -> None:
        """New matches (from a prepare or a find); takes a pending step."""
        v = self.view
        v.found, v.find_starts = found, starts
        self.searching, self.current = False, None
        pending, self._pending = self._pending, None
        if pending is not None and found is not None:
            self.step(pending)
        self._emit()
        v.update()

    def changed(self, value) -> None:
        """The document's query changed: search again (in a worker when big)."""
        text, regex = value
        v = self.view
        model, trace = v.model, v.document.trace
        if model is None or trace is None:
            return
        if not text:
            self._pending = None
            self.set_result(None, {})
            return

        def job(progress=None, cancelled=None):
            found = lod.find(trace, model, text, regex)
            return model, found, lod.track_match_starts(model, found)

        if len(trace.kernels) + len(trace.api) < SYNC_FIND:
            self._on_succeeded(job())
        else:
            self.searching, self.current = True, None
            self._emit()
            v.tasks.submit("find", job).succeeded.connect(self._on_succeeded)

    def highlight(self, events) -> None:
        """Events that stand out like matches (``events.masks``: a bool mask per event
        table, e.g. the Ops panel's selected op and its kernels); None: back to the
        document's query. F3 then steps through them."""
        v = self.view
        model, trace = v.model, v.document.trace
        if model is None or trace is None:
            return
        if events is None:
            vs = v.document.view_state
            self.changed((vs.find_text, vs.find_regex))
            return
        masks = {t: np.asarray(m, bool) for t, m in events.masks.items()
                 if t in lod.EVENT_TABLES and len(m) == len(getattr(trace, t))}

        def job(progress=None, cancelled=None):
            found = found_from_masks(trace, masks)
            return model, found, lod.track_match_starts(model, found)

        if sum(len(m) for m in masks.values()) < SYNC_FIND:
            self._on_succeeded(job())
        else:
            self.searching, self.current = True, None
            v.tasks.submit("find", job).succeeded.connect(self._on_succeeded)

    def _on_succeeded(self, result) -> None:
        model, found, starts = result
        if model is self.view.model:
            self.set_result(found, starts)

    def step(self, forward: bool) -> None:
        """Select and reveal the next (previous) match in time order."""
        v = self.view
        if self.searching or v.preparing:
            self._pending = forward
            return
        f = v.found
        if f is None or len(f) == 0:
            return
        sel = v.document.view_state.selection
        if sel is not None and sel.table in lod.EVENT_TABLES and v.knows(sel.table):
            ti = lod.EVENT_TABLES.index(sel.table)
            cur = (v.span_of(sel.table, sel.row)[0], ti, sel.row)
        else:
            t0 = v.document.view_state.window[0]
            cur = (t0, -1, -1) if forward else (t0, len(lod.EVENT_TABLES), 0)
        j = lod.find_step(f, cur, forward)
        if j >= 0:
            self.go_to(j)

    def go_to(self, j: int) -> None:
        """Select and reveal match ``j`` (time order)."""
        f = self.view.found
        if f is None or not 0 <= j < len(f):
            return
        self.current = int(j)
        self.view.reveal(lod.EVENT_TABLES[int(f.table[j])], int(f.row[j]))
        self._emit()

    def match(self, j: int) -> Match | None:
        """Match ``j`` for the results list (None when out of range)."""
        v = self.view
        f, model = v.found, v.model
        if f is None or model is None or not 0 <= j < len(f):
            return None
        table, row = lod.EVENT_TABLES[int(f.table[j])], int(f.row[j])
        c = int(model.codes[table][row])
        name = model.names[table][c] if c >= 0 else "?"
        s, e = v.span_of(table, row)
        return Match(table, row, name or "?", s, e)


def found_from_masks(trace, masks: dict[str, np.ndarray]) -> lod.FindResult:
    """A find result holding the events of ``masks`` (table -> bool per row), in time
    order."""
    starts, tables, rows = [np.zeros(0, np.int64)], [np.zeros(0, np.int8)], \
        [np.zeros(0, np.int64)]
    for ti, t in enumerate(lod.EVENT_TABLES):
        if t in masks:
            r = np.flatnonzero(masks[t])
            starts.append(lod.int_column(getattr(trace, t), "start", 0)[r])
            tables.append(np.full(len(r), ti, np.int8))
            rows.append(r)
    s, tab, r = np.concatenate(starts), np.concatenate(tables), np.concatenate(rows)
    o = np.lexsort((r, tab, s))
    return lod.FindResult(s[o], tab[o], r[o], dict(masks))


def dim_non_matches(cols: np.ndarray, rowbg: int, mcols: np.ndarray | None, wide,
                    mask: np.ndarray | None, index: np.ndarray | None) -> None:
    """While a find is on: blend every pixel column of a row that holds no match
    half-way to the row's background (in place). ``mcols``: columns where a match
    starts; ``wide``: (x0, x1, pos) of the row's wide rectangles, ``mask``/``index``:
    the find mask of the row's table and the row's event indices."""
    keep = np.zeros(len(cols), bool) if mcols is None else mcols.copy()
    if wide is not None and mask is not None and index is not None and len(wide[2]):
        x0, x1, pos = wide                 # in paint order: the rectangle drawn last wins
        hit = mask[index[pos]]
        n = x1 - x0
        idx = np.repeat(np.arange(len(pos)), n)
        px = x0[idx] + np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        ok = px < len(cols)
        keep[px[ok]] = hit[idx[ok]]
    dim = ~keep
    half = np.uint32(0xFEFEFE)
    cols[dim] = (((cols[dim] & half) >> 1) + ((np.uint32(rowbg) & half) >> 1)) \
        | np.uint32(0xFF000000)
