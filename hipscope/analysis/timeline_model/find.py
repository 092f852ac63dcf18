"""Find: events whose name matches, in time order, and stepping through them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...model import Trace
from ...model.names import match_mask
from .events import EVENT_TABLES
from .rows import TimelineModel, int_column

_I64 = np.int64


@dataclass(eq=False)
class FindResult:
    """Matches in time order: start, table (index into EVENT_TABLES), row."""

    start: np.ndarray
    table: np.ndarray
    row: np.ndarray
    masks: dict[str, np.ndarray]      # table -> bool per event

    def __len__(self) -> int:
        return len(self.start)


def matching_codes(names: list[str], text: str, regex: bool) -> np.ndarray:
    """Codes of the names ``text`` matches: the one rule of :mod:`hipscope.model.names`."""
    return np.flatnonzero(match_mask(names, text, regex)[0]).astype(np.int32)


def find(trace: Trace, model: TimelineModel, text: str, regex: bool = False) -> FindResult:
    """Events whose name matches (substring, case-insensitive, or regex), by time."""
    starts, tables, rows, masks = [], [], [], {}
    if text:
        for ti, t in enumerate(EVENT_TABLES):
            codes = model.codes[t]
            if len(codes) == 0:
                continue
            match = np.zeros(len(model.names[t]) + 1, bool)
            match[matching_codes(model.names[t], text, regex)] = True
            mask = match[np.where(codes >= 0, codes, len(match) - 1)]
            masks[t] = mask
            r = np.flatnonzero(mask)
            starts.append(int_column(getattr(trace, t), "start", 0)[r])
            tables.append(np.full(len(r), ti, np.int8))
            rows.append(r)
    if not starts:
        return FindResult(np.zeros(0, _I64), np.zeros(0, np.int8), np.zeros(0, _I64), masks)
    s, tab, r = np.concatenate(starts), np.concatenate(tables), np.concatenate(rows)
    o = np.lexsort((r, tab, s))
    return FindResult(s[o], tab[o], r[o], masks)


def find_step(found: FindResult, current: tuple[int, int, int] | None, forward: bool
              ) -> int:
    """Index of the next (or previous) match after ``current`` = (start, table, row),
    wrapping around; -1 when there are no matches."""
    n = len(found)
    if n == 0:
        return -1
    if current is None:
        return 0 if forward else n - 1
    s, t, r = current
    # position of current in (start, table, row) order
    lo = int(np.searchsorted(found.start, _I64(s), "left"))
    hi = int(np.searchsorted(found.start, _I64(s), "right"))
    keys = list(zip(found.table[lo:hi].tolist(), found.row[lo:hi].tolist()))
    if forward:
        j = lo + sum(1 for k in keys if k <= (t, r))
        return j % n
    j = lo + sum(1 for k in keys if k < (t, r)) - 1
    return j % n



def track_match_starts(model: TimelineModel, found: FindResult) -> dict[int, np.ndarray]:
    """Per track row: sorted starts of its events that match (for highlights)."""
    out = {}
    for i in model.tracks():
        r = model.rows[i]
        mask = found.masks.get(r.table) if r.table is not None else None
        ev = r.events
        if mask is None or r.kind != "track" or ev is None:
            continue
        pos = np.flatnonzero(mask[ev.index])
        if len(pos):
            out[i] = ev.start[pos]
    return out

