"""Which rows the timeline shows, in which order and at which y: folds (collapsed
groups, quiet tracks), the user's hidden, pinned and moved tracks, the track filter.

A :class:`TrackOptions` (owned by the view, changed from the track menu and the
filter box) and the collapsed keys go in; a :class:`Layout` (rows shown, their y
and height in content space, counts of what is hidden) comes out, rebuilt per change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...analysis import lod

ROW_H = {"group": 20, "track": 18, "counter": 34, "fold": 18}
LABEL_W = 250                  # the label column's default width (the user may drag it)
LABEL_W_RANGE = (120, 700)


@dataclass
class TrackOptions:
    """The user's say over the tracks, by row key (keys survive a regrouping)."""

    hidden: set[str] = field(default_factory=set)
    pinned: list[str] = field(default_factory=list)           # shown first, in order
    order: dict[str, list[str]] = field(default_factory=dict)  # parent key -> child keys
    filter: str = ""                                          # label text (any case)
    label_w: int = LABEL_W                                    # label column width (px)

    def move(self, model: lod.TimelineModel, row: int, step: int) -> None:
        """Move a row ``step`` places among its siblings."""
        r = model.rows[row]
        siblings = _children(model, r.parent, self)
        i = siblings.index(row)
        j = min(max(i + step, 0), len(siblings) - 1)
        siblings.insert(j, siblings.pop(i))
        key = model.rows[r.parent].key if r.parent >= 0 else ""
        self.order[key] = [model.rows[c].key for c in siblings]


def _roots(model: lod.TimelineModel) -> list[int]:
    return [i for i, r in enumerate(model.rows) if r.parent < 0 and r.kind != "fold"]


def _children(model: lod.TimelineModel, parent: int, opts: TrackOptions) -> list[int]:
    """A row's children (the roots for -1) in the user's order, if any."""
    kids = list(model.rows[parent].children) if parent >= 0 else _roots(model)
    key = model.rows[parent].key if parent >= 0 else ""
    want = opts.order.get(key)
    if want:
        rank = {k: n for n, k in enumerate(want)}
        kids.sort(key=lambda c: rank.get(model.rows[c].key, len(rank)))
    return kids


def _filter_keep(model: lod.TimelineModel, text: str) -> set[int] | None:
    """Rows kept by the filter: rows whose label (or an ancestor's) holds ``text``,
    with their ancestors; None without a filter."""
    text = text.strip().lower()
    if not text:
        return None
    keep: set[int] = set()
    hit = [text in r.label.lower() for r in model.rows]
    for i, r in enumerate(model.rows):
        if r.kind == "group" or r.kind == "fold":
            continue
        a, found = i, False
        while a >= 0 and not found:
            found, a = hit[a], model.rows[a].parent
        if found:
            a = i
            while a >= 0 and a not in keep:
                keep.add(a)
                a = model.rows[a].parent
    return keep


class Layout:
    """Rows shown, their y offsets in content space (see module docstring).

    ``n_hidden``: rows the user hid; ``n_folded``: quiet tracks folded away;
    ``n_filtered``: tracks the filter leaves out; ``pinned``: rows shown first."""

    def __init__(self, model: lod.TimelineModel | None, collapsed: set[str],
                 options: TrackOptions | None = None):
        self.model = model
        self.options = opts = options or TrackOptions()
        self.n_hidden = self.n_folded = self.n_filtered = 0
        self.pinned: set[int] = set()
        rows: list[int] = []
        if model is not None:
            rows = self._walk(model, collapsed, opts)
        self.rows = np.array(rows, dtype=np.int64)
        kinds = [model.rows[i].kind for i in rows] if model is not None else []
        self.h = np.array([ROW_H[k] for k in kinds], dtype=np.int64)
        self.y = np.r_[0, np.cumsum(self.h)[:-1]].astype(np.int64) if rows else np.zeros(
            0, np.int64)
        self.total = int(self.h.sum()) if rows else 0
        self.pos_of = {int(r): p for p, r in enumerate(rows)}

    def _walk(self, model, collapsed: set[str], opts: TrackOptions) -> list[int]:
        keep = _filter_keep(model, opts.filter)
        by_key = {r.key: i for i, r in enumerate(model.rows)}
        fold_of = {r.parent: i for i, r in enumerate(model.rows) if r.kind == "fold"}
        self.pinned = {by_key[k] for k in opts.pinned if k in by_key}
        hidden = _hidden_rows(model, opts) if opts.pinned else set()
        out = [by_key[k] for k in opts.pinned if k in by_key and by_key[k] not in hidden]
        placed: set[int] = set()
        stack = list(reversed(_roots(model)))
        while stack:
            i = stack.pop()
            r = model.rows[i]
            if r.key in opts.hidden:
                self.n_hidden += 1
                continue
            if keep is not None and i not in keep:
                self.n_filtered += r.kind != "group"
                continue
            if r.quiet and r.parent in fold_of:
                f = fold_of[r.parent]
                if f not in placed:                   # the fold row, where they begin
                    placed.add(f)
                    out.append(f)
                if model.rows[f].key in collapsed:
                    self.n_folded += 1
                    continue
            if i not in self.pinned:
                out.append(i)
            if r.kind == "group" and r.key not in collapsed:
                stack.extend(reversed(_children(model, i, opts)))
        return out

    def at(self, y: float) -> int:
        """Row index (into model.rows) at content y, -1 outside."""
        if len(self.rows) == 0 or y < 0 or y >= self.total:
            return -1
        return int(self.rows[int(np.searchsorted(self.y, y, side="right")) - 1])

    def shown(self, row: int) -> int:
        """The row itself when shown, else its nearest shown ancestor (or the fold row
        standing in for it; -1: none)."""
        model = self.model
        if model is None:
            return -1
        while row >= 0 and row not in self.pos_of:
            r = model.rows[row]
            if r.quiet:
                fold = next((p for p in self.pos_of if model.rows[p].kind == "fold"
                             and row in model.rows[p].members), -1)
                if fold >= 0:
                    return fold
            row = r.parent
        return row


def _hidden_rows(model, opts: TrackOptions) -> set[int]:
    """Rows under (or being) a hidden row."""
    out: set[int] = set()
    for i, r in enumerate(model.rows):
        if r.key in opts.hidden or (r.parent >= 0 and r.parent in out):
            out.add(i)
    return out


def sticky_rows(lay: Layout, scroll: int) -> list[int]:
    """The groups (outermost first) whose header is scrolled out of sight while rows
    of theirs are still shown at the top: drawn there as sticky headers."""
    model = lay.model
    if scroll <= 0 or model is None or len(lay.rows) == 0:
        return []
    first = int(np.searchsorted(lay.y + lay.h, scroll, side="right"))
    if first >= len(lay.rows):
        return []
    chain, a = [], model.rows[int(lay.rows[first])].parent
    while a >= 0:
        p = lay.pos_of.get(a)
        if p is not None and lay.y[p] < scroll:
            chain.append(a)
        a = model.rows[a].parent
    return chain[::-1]
