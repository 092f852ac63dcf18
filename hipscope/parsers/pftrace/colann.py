"""Annotation columns of the column walk: one debug-annotation name over many slices as
numpy (kind, value), and ``ann_as_int`` of it placed on a table's slices by the C extension
(``_pftscan.place_ints``), with a validity mask."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .colwalk import V_BOOL, V_DOUBLE, V_INT, V_PTR, V_STR, V_UINT, Declined
from .fast import _pftscan
from .proto import ann_as_int


class IntCol(NamedTuple):
    """An integer column: values and where they are not null."""
    v: np.ndarray
    ok: np.ndarray

    def tolist(self) -> list:
        return [x if o else None for x, o in zip(self.v.tolist(), self.ok.tolist())]


def ann_value(c, k: int, v: int) -> Any:
    """The Python value the record walk puts in the annotation dict."""
    if k == V_BOOL:
        return bool(v)
    if k in (V_UINT, V_PTR):
        return v
    if k == V_INT:
        return v - (1 << 64) if v >= 1 << 63 else v
    if k == V_DOUBLE:
        return float(np.array([v], dtype=np.uint64).view(np.float64)[0])
    if k == V_STR:
        return c.strings[v]
    return None


class AnnCols:
    """Columns of annotation names over positions (in ``c.rows``) of slices."""

    def __init__(self, c: Any) -> None:
        self.c = c
        self._slots: dict = {}

    def clear(self) -> None:
        """Forget the kept maps and conversions (memory for what follows)."""
        self._slots.clear()

    def _slot_of(self, pos: np.ndarray) -> np.ndarray:
        """Slice index -> index in ``pos`` (-1: not in it), once per ``pos`` array."""
        got = self._slots.get(id(pos))
        if got is None or got[0] is not pos:
            slot = np.full(len(self.c.sl), -1, dtype=np.int64)
            slot[self.c.rows[pos]] = np.arange(len(pos))
            got = self._slots[id(pos)] = (pos, slot)
        return got[1]

    def _plan(self, pos: np.ndarray, idx: np.ndarray) -> tuple:
        """How the entries ``idx`` of a name land on the slices of ``pos``: (entries
        taken, their places, every slice given, in order). Kept per distinct ``idx``
        (most names of a table are on the same slices)."""
        plans = self._slots.setdefault(("plans", id(pos)), (pos, []))
        if plans[0] is not pos:
            plans = self._slots[("plans", id(pos))] = (pos, [])
        for known, plan in plans[1]:
            if known is idx or (len(known) == len(idx) and np.array_equal(known, idx)):
                return plan
        at = self._slot_of(pos)[idx]
        m = at >= 0
        am = at[m]
        full = len(am) == len(pos)
        ordered = full and bool(np.all(am[1:] > am[:-1]))
        plan = (slice(None) if m.all() else m, am, full, ordered)
        plans[1].append((idx, plan))
        return plan

    def _col(self, name: str):
        col = self.c.names.get(self.c.sid.get(name, -1))
        if col is not None and col[4]:
            raise Declined(f"annotation {name!r} given twice on one slice")
        return col

    def raw(self, pos: np.ndarray, name: str) -> Any:
        """(kind, value) of ``name`` at slice positions ``pos``; kind 0 where absent."""
        col = self._col(name)
        if col is None or not len(pos):
            return np.zeros(len(pos), dtype=np.uint8), np.zeros(len(pos), dtype=np.uint64)
        return self._place(pos, col[0], col[1], col[2])

    def _place(self, pos: np.ndarray, idx: np.ndarray, *cols: np.ndarray) -> list:
        """``cols`` (one value per entry of ``idx``) at the slices of ``pos`` (0 where
        the name is absent)."""
        m, am, full, ordered = self._plan(pos, idx)
        out = []
        for c in cols:
            cm = c[m]
            if not ordered:
                o = np.zeros(len(pos), dtype=c.dtype)
                o[am] = cm
                cm = o
            out.append(cm)
        return out

    def _ints(self, pos: np.ndarray, name: str, where: bool = False
              ) -> tuple[IntCol, np.ndarray | None]:
        """``ann_as_int`` of ``name`` at ``pos`` and (``where``) where it is given (None:
        everywhere), in one pass of the C extension over the name's entries."""
        col = self._col(name)
        n = len(pos)
        if col is None or not n:
            z = np.zeros(n, dtype=bool)
            return IntCol(np.zeros(n, dtype=np.int64), z), z
        idx, kind, val = col[0], col[1], col[2]
        v, ok = np.zeros(n, np.int64), np.zeros(n, bool)
        given = np.zeros(n, bool) if where else None
        placed, flags = _pftscan.place_ints(idx, kind, val, self._slot_of(pos), v, ok, given)
        if flags & 2:
            raise Declined("an unsigned annotation beyond int64")
        if flags & 4:
            raise Declined("a double annotation beyond int64")
        if flags & 1:
            self._strings_at(self._slot_of(pos), idx, kind, val, v, ok)
        return IntCol(v, ok), None if placed == n else given

    def _strings_at(self, slot, idx, kind, val, v, ok) -> None:
        """``ann_as_int`` of the string entries of a name (each distinct text once, every
        entry checked), written where ``slot`` places them."""
        st = np.flatnonzero(kind == V_STR)
        u, inv = np.unique(val[st], return_inverse=True)
        got = [ann_as_int(self.c.strings[int(x)]) for x in u.tolist()]
        if any(g is not None and not -_I64 <= g < _I64 for g in got):
            raise Declined("a string annotation beyond int64")
        s = slot[idx[st]]
        at = s >= 0
        gv = np.array([0 if g is None else g for g in got], dtype=np.int64)[inv]
        gok = np.array([g is not None for g in got], dtype=bool)[inv]
        v[s[at]], ok[s[at]] = gv[at], gok[at]

    def ints(self, pos: np.ndarray, name: str) -> IntCol:
        """``ann_as_int`` of ``name`` (null where absent or not an integer)."""
        return self._ints(pos, name)[0]

    def int_or(self, pos: np.ndarray, name: str, other: IntCol) -> IntCol:
        """The annotation where it is an integer, else ``other``."""
        a = self.ints(pos, name)
        if a.ok.all():
            return a
        return IntCol(np.where(a.ok, a.v, other.v), a.ok | other.ok)

    def pid(self, pos: np.ndarray, track: IntCol) -> IntCol:
        """The pid annotation where given (even a null one), else the track's."""
        a, given = self._ints(pos, "pid", True)
        if given is None:
            return a
        return IntCol(np.where(given, a.v, track.v), np.where(given, a.ok, track.ok))


_I64 = 1 << 63


def factorize(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, first): equal values get equal codes, numbered in the order they first
    appear; ``first[c]`` is where code c first appears. Hashed in C, no sort."""
    if not len(a):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    a = np.ascontiguousarray(a)
    if a.dtype.kind not in "iub":
        raise TypeError(f"factorize of {a.dtype}")
    a = a.view(np.int64) if a.dtype.itemsize == 8 else a.astype(np.int64)
    codes, first = np.empty(len(a), np.int64), np.empty(len(a), np.int64)
    k = _pftscan.factorize(a, codes, first)
    return codes, first[:k].copy()


def key_of(*cols: np.ndarray) -> np.ndarray:
    """One int64 per row, equal where the rows of ``cols`` are equal: small
    non-negative columns are combined as they are, others by their codes."""
    key = np.zeros(len(cols[0]), dtype=np.int64)
    span = 1
    for col in cols:
        if not len(col):
            return key
        lo, hi = int(col.min()), int(col.max())
        if lo == hi:
            continue  # one value: it tells no rows apart
        if lo >= 0 and hi < 1 << 24:
            codes, n = col.astype(np.int64), hi + 1
        else:
            codes, first = factorize(col)
            n = len(first)
        if span * n >= 1 << 62:
            key, first = factorize(key)
            span = len(first)
        key = key * n + codes
        span *= n
    return key


def track_cols(b, tracks: np.ndarray) -> dict[str, IntCol]:
    """pid, tid, queue (COMPUTE name) and stream of each slice's track."""
    inv, first = factorize(tracks)
    ut = tracks[first]
    facts = [b.tinfo(int(t)) for t in ut.tolist()]
    out = {}
    for key, get in (("pid", lambda ti: ti.get("pid")), ("tid", lambda ti: ti.get("tid")),
                     ("queue", lambda ti: ti["compute"][2] if ti.get("compute") is not None
                      else None), ("stream", lambda ti: ti.get("stream"))):
        vals = [get(ti) for ti in facts]
        if any(x is not None and not -_I64 <= x < _I64 for x in vals):
            raise Declined("a track value beyond int64")
        v = np.array([0 if x is None else x for x in vals], dtype=np.int64)
        ok = np.array([x is not None for x in vals], dtype=bool)
        out[key] = IntCol(v[inv], ok[inv])
    return out
