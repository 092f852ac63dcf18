"""What a time range holds, per name: the table of an area selection (as Perfetto's).

For the kernels and API calls (and copies, markers) that overlap ``[t0, t1)``: per
name the count, the time inside the range (each event clipped to it), the mean of
that time and its share of the kind's time inside the range. An area selection over
chosen timeline tracks (:class:`AreaTrack`) counts only their events, and
:func:`track_busy` gives each track's busy share of the range.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..model import Trace
from ..model.intervals import union_length
from ..model.progress import CancelledFn, check_cancel, never_cancelled

AREA_TABLES = ("kernels", "api", "copies", "markers")
KIND_LABELS = {"kernels": "kernel", "api": "API call", "copies": "copy", "markers": "marker"}


@dataclass(frozen=True)
class AreaRow:
    """One name of one kind inside the range; times in ns."""

    kind: str          # 'kernels', 'api', 'copies' or 'markers'
    name: str
    count: int
    total_ns: int      # time inside the range (events clipped to it)
    mean_ns: float
    share: float       # total_ns over the kind's total_ns inside the range


@dataclass(frozen=True, eq=False)
class AreaTrack:
    """One timeline track picked by an area selection: its label, the event table it
    draws and the rows of that table on it (compared by identity)."""

    key: str
    label: str
    table: str
    rows: np.ndarray


@dataclass(frozen=True)
class TrackBusy:
    """One picked track inside the range: events overlapping it, busy time and share."""

    label: str
    table: str
    count: int
    busy_ns: int       # union of its events clipped to the range
    busy: float        # busy_ns over the range's length


def area_rows(trace: Trace, t0: int, t1: int, tables: tuple[str, ...] = AREA_TABLES,
              cancelled: CancelledFn = never_cancelled,
              tracks: Sequence[AreaTrack] | None = None) -> list[AreaRow]:
    """Per kind and name, what overlaps ``[t0, t1)``, the biggest total first; with
    ``tracks``, only the events on those tracks."""
    t0, t1 = (int(t0), int(t1)) if t0 <= t1 else (int(t1), int(t0))
    only = None if tracks is None else _rows_by_table(tracks)
    out: list[AreaRow] = []
    for kind in tables:
        check_cancel(cancelled)
        if only is None or kind in only:
            out += _kind_rows(trace, kind, t0, t1, None if only is None else only[kind])
    return out


def track_busy(trace: Trace, t0: int, t1: int, tracks: Sequence[AreaTrack],
               cancelled: CancelledFn = never_cancelled) -> list[TrackBusy]:
    """Per picked track, in the given order: its events overlapping ``[t0, t1)`` and
    the share of the range they keep busy (overlaps counted once)."""
    t0, t1 = (int(t0), int(t1)) if t0 <= t1 else (int(t1), int(t0))
    out = []
    for tr in tracks:
        check_cancel(cancelled)
        table = getattr(trace, tr.table)
        s, e = table.numpy("start")[tr.rows], table.numpy("end")[tr.rows]
        n = int(np.count_nonzero(_overlaps(s, e, t0, t1)))
        busy = union_length(s, e, t0, t1)
        out.append(TrackBusy(tr.label, tr.table, n, busy, busy / max(t1 - t0, 1)))
    return out


def _rows_by_table(tracks: Sequence[AreaTrack]) -> dict[str, np.ndarray]:
    """The picked tracks' event rows per table, each row once."""
    parts: dict[str, list[np.ndarray]] = {}
    for tr in tracks:
        parts.setdefault(tr.table, []).append(np.asarray(tr.rows, dtype=np.int64))
    return {t: np.unique(np.concatenate(p)) for t, p in parts.items()}


def _overlaps(s: np.ndarray, e: np.ndarray, t0: int, t1: int) -> np.ndarray:
    return (s < t1) & (e > t0) if t1 > t0 else (s <= t0) & (e >= t0)


def _kind_rows(trace: Trace, kind: str, t0: int, t1: int,
               rows: np.ndarray | None = None) -> list[AreaRow]:
    table = getattr(trace, kind)
    col = "direction" if kind == "copies" else "name"
    if len(table) == 0 or not table.has(col):
        return []
    s, e = table.numpy("start"), table.numpy("end")
    if rows is None:
        idx = np.flatnonzero(_overlaps(s, e, t0, t1))
    else:
        idx = rows[_overlaps(s[rows], e[rows], t0, t1)]
    if len(idx) == 0:
        return []
    clip = np.minimum(e[idx], t1) - np.maximum(s[idx], t0)
    names = table.column(col).take(pa.array(idx))
    names = pc.fill_null(names.cast(pa.string()), "?")
    g = pa.table({"name": names, "t": pa.array(np.maximum(clip, 0))}).group_by("name") \
        .aggregate([("t", "sum"), ("t", "count")])
    total = g.column("t_sum").to_numpy()
    count = g.column("t_count").to_numpy()
    all_t = max(int(total.sum()), 1)
    nm = g.column("name").to_pylist()
    order = sorted(range(len(nm)), key=lambda i: (-int(total[i]), nm[i]))
    return [AreaRow(kind, nm[i], int(count[i]), int(total[i]), float(total[i]) / int(count[i]),
                    float(total[i]) / all_t) for i in order]
