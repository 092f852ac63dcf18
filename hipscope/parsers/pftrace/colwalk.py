"""The column walk of a Perfetto trace (``_pftscan.walk(..., columns=True)``): the C
scanner hands over one record per slice and one column per debug-annotation name as
flat buffers (string ids into one table of distinct strings), viewed here as numpy arrays, so no
Python object is made per event. :mod:`.colbuild` makes the tables from them.

``walk_columns`` returns None where the C walk declines; :class:`Declined` is raised
where the columns hold something the numpy tables do not reproduce exactly (the
reader then uses the record walk, which builds the same trace the slower way).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ...model.progress import CancelledFn, ProgressFn, check_cancel, no_progress
from .fast import PROBLEMS, _pftscan, available, data_oneof, read_tracks
from .proto import Buffer
from .walk import Walk

# mirrors SliceRec / AnnRec in _pftscan.h
SLICE = np.dtype([("track", "<u8"), ("t0", "<i8"), ("t1", "<i8"), ("name", "<u4"),
                  ("cat_lo", "<u4"), ("cat_n", "<u4"), ("flow_lo", "<u4"),
                  ("flow_n", "<u4"), ("ann_lo", "<u4"), ("ann_n", "<u4"), ("c0", "u1"),
                  ("c1", "u1"), ("fg", "u1"), ("pad", "u1")])
# DebugAnnotation value kinds (the V_* enum of _pftscan.h)
V_BOOL, V_UINT, V_INT, V_DOUBLE, V_STR, V_PTR, V_NULL = 1, 2, 3, 4, 5, 6, 7


class Declined(Exception):
    """The column tables cannot reproduce this trace exactly: use the record walk."""


class Columns:
    """The slices of one trace as columns, after :meth:`finish` in the records' order
    (by start, then begin order) on the primary clock."""

    def __init__(self, got: tuple):
        (bufs, self.snaps, self.primary, self.clocks_used, self.unresolved, self.skipped,
         self.n_begun, self.unmatched, hipscope_made, self.source_clock, self.descs) = got
        sl, names, ct, fw, ctr, strs, self.open_left = bufs
        self.hipscope_made = bool(hipscope_made)
        self.sl = np.frombuffer(sl, dtype=SLICE)
        # annotation name id -> (slice, kind, value, position on the slice, given twice)
        self.names = {n: (np.frombuffer(i, np.uint32), np.frombuffer(k, np.uint8),
                          np.frombuffer(v, np.uint64), np.frombuffer(p, np.uint16), bool(d))
                      for n, i, k, v, p, d in names}
        self.cats = np.frombuffer(ct, dtype=np.uint32)
        self.flows = np.frombuffer(fw, dtype=np.uint64)
        tracks, counts = np.unique(np.frombuffer(ctr, dtype=np.uint64), return_counts=True)
        self.counters_seen = dict(zip(tracks.tolist(), counts.tolist()))
        self.strings = strs
        self.sid: dict[str, int] = {}
        canon = np.array([self.sid.setdefault(s, i) for i, s in enumerate(strs)],
                         dtype=np.uint32)
        if len(self.sid) != len(strs):
            self._canonical(canon)
        self.tracks: dict = {}

    def _canonical(self, canon: np.ndarray) -> None:
        """One id per distinct string (the same text from bytes decoded strictly and
        with errors="replace" had two)."""
        self.sl = self.sl.copy()
        self.sl["name"] = canon[self.sl["name"]]
        self.cats = canon[self.cats]
        names = {}
        for n, (i, k, v, p, d) in self.names.items():
            v = np.where(k == V_STR, canon[np.where(k == V_STR, v, 0)], v).astype(np.uint64)
            names[int(canon[n])] = (i, k, v, p, d)  # names decode strictly: no two meet
        self.names = names

    def names_of(self, ids: np.ndarray):
        """The strings ``ids`` as a dictionary array (as ``build_table`` encodes them)."""
        from .colutil import dict_array

        return dict_array(ids.astype(np.int64), self.strings)

    def walk_view(self) -> Walk:
        """A :class:`Walk` holding the counts and clocks (for its ``finish`` texts)."""
        w = Walk()
        w.primary_clock = [self.primary]
        w.global_snaps = self.snaps
        w.clock_ids_used = self.clocks_used
        w.unresolved, w.skipped_invalid, w.n_begun = self.unresolved, self.skipped, \
            self.n_begun
        w.unmatched_ends = self.unmatched
        w.hipscope_made, w.source_clock = self.hipscope_made, self.source_clock
        w.open_slices = defaultdict(list, {0: [None] * self.open_left} if self.open_left
                                    else {})
        return w

    def finish(self, warnings: list[str], dropped: dict) -> str:
        """Keep the whole slices, on the primary clock, sorted (``self.rows``, their
        ``start``/``end``); the clock's name. Same texts as :meth:`Walk.finish`."""
        w = self.walk_view()
        w.slices = []
        _, clock_name = w.finish(warnings, dropped)
        sl = self.sl
        keep, start, end = (np.empty(len(sl), np.int64) for _ in range(3))
        n = _pftscan.ended(sl, keep, start, end)  # one pass over the records, in C
        keep, start, end = keep[:n], start[:n], end[:n]
        conv = w.clock_offsets([]) if len(keep) else {}  # finish gave its warnings
        if any(o for o in conv.values()):
            if any(not -(1 << 62) <= o < (1 << 62) for o in conv.values()):
                raise Declined("clock offset beyond int64")
            off = np.zeros(256, dtype=np.int64)
            for c, o in conv.items():
                off[c] = o
            start, end = (_shift(t, off[sl[c][keep]]) for t, c in ((start, "c0"), (end, "c1")))
        order = np.argsort(start, kind="stable")  # ties: by begin order (keep ascends)
        self.rows = keep[order]
        self.start, self.end = start[order], end[order]
        return clock_name


def _shift(t: np.ndarray, o: np.ndarray) -> np.ndarray:
    """``t + o`` in int64; Declined where a sum leaves int64 (the records saturate)."""
    with np.errstate(over="ignore"):
        r = t + o
    if np.any(((t ^ r) & (o ^ r)) < 0):
        raise Declined("time beyond int64 after the clock offset")
    return r


def walk_columns(data: Buffer, progress: ProgressFn = no_progress,
                 cancelled: CancelledFn | None = None
                 ) -> tuple[Columns, int, int, str | None] | None:
    """(columns, whole packets, bytes used, framing problem) or None (declined)."""
    if not available():
        return None

    def tick(fraction: float) -> None:
        check_cancel(cancelled)
        progress(0.8 * fraction)

    got = _pftscan.walk(data, data_oneof(), Walk().primary_clock[0], tick, True)
    if got is None:
        return None
    n, used, problem, bad = got[:4]
    cols = Columns(got[4:])
    if not read_tracks(data, cols.descs, cols.tracks):
        return None
    text = PROBLEMS.get(problem) if problem != 2 else \
        f"tag byte 0x{bad:02x} (field {bad >> 3}, wire type {bad & 7})"
    return cols, n, used, text
