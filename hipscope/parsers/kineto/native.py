"""Kineto events as columns, from the C scanner ``_kinscan`` (the JSON text straight to
columns, no per-event Python): the fast source of the table builder. ``load_native``
returns None when the scanner is missing or declines the file (the msgspec path in
``decode`` then reads it, with its recovery and warnings), also when a value the
columns hold as raw text is one msgspec would not decode (:class:`Declined`).

Each field is a (kind, payload) pair per event; ``py_values`` gives the Python values
msgspec would have decoded, so that any code that needs them per event (small groups,
odd types) reads exactly what the msgspec path reads."""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import numpy as np

from ..base import TraceFormatError, read_bytes_tolerant
from .decode import _TOP_FIELDS, Top, _Args, _Ev, canonical_cat

_kinscan: ModuleType | None
try:
    from .. import _kinscan
except ImportError:  # built optionally (setup.py): the msgspec path reads every file
    _kinscan = None

__all__ = ["ColEvents", "ColSub", "Declined", "first_seen", "load_native", "use_scanner"]
_BUILT = _kinscan

ABSENT, JNULL, INT, FLOAT, STR, TRUE, FALSE, RAW = range(8)
# struct field -> scanner key, for _Args
_ARG_KEYS = dict(zip(_Args.__struct_fields__, _Args.__struct_encode_fields__))
_RAW_ONLY = ("input_dims", "input_type")
_RAW_KEYS = ("Input Dims", "Input type")
_EV_DEFAULTS = {"ph": "", "cat": "", "name": "", "pid": -1, "tid": -1, "ts": None, "dur": None,
                "id": None, "bp": None}


def use_scanner(on: bool) -> bool:
    """Switch the C scanner on or off (benchmarks of the msgspec path); returns whether
    it is on now (never when it is not built)."""
    global _kinscan
    _kinscan = _BUILT if on else None
    return _kinscan is not None


class Declined(Exception):
    """The columns hold a value that only the msgspec path reads exactly."""


SPLIT_BYTES = 64 << 20   # a longer traceEvents list is scanned in two threads


def load_native(path: Path, box: list | None = None) -> tuple[Any, ColEvents] | None:
    """(top-level keys, events) of a Kineto file read by the C scanner; None when it is
    not built, switched off (``HIPSCOPE_KINSCAN=0``), declines the file, or the file
    cannot be opened (the msgspec path then says why). ``box``: ``[(bytes, gzip
    warning)]`` as ``read_bytes_tolerant`` gave them, emptied once the scanner took the
    text (so the bytes go before the tables are built); else the file is read here."""
    scanner = _kinscan
    if scanner is None or os.environ.get("HIPSCOPE_KINSCAN", "1") == "0":
        return None
    try:
        buf, gz_warn = box[0] if box else read_bytes_tolerant(path)
        if gz_warn or not buf:
            return None
        with memoryview(buf) as view:
            res = scanner.scan(view, SPLIT_BYTES)
        if res is not None and box:
            box.clear()
        return _from_scan(buf, res)
    except (OSError, TraceFormatError, msgspec.DecodeError, msgspec.ValidationError,
            Declined):
        return None


def _from_scan(buf, res) -> tuple[Any, ColEvents] | None:
    if res is None:
        return None
    n, open_, close, strings, raws, dense, sparse = res
    # the top-level keys around traceEvents, read as the chunked msgspec decode does
    # them (a key given before and after the list keeps its later value unless null)
    head = msgspec.json.decode(bytes(buf[:open_ + 1]) + b"]}", type=Top)
    tail = msgspec.json.decode(b'{"traceEvents":[' + bytes(buf[close:]), type=Top)
    fields = {f: getattr(tail, f) if getattr(tail, f) is not None else getattr(head, f)
              for f in _TOP_FIELDS}
    return Top(traceEvents=[], **fields), ColEvents(n, strings, raws, dense, sparse)


def first_seen(ids: np.ndarray, strings: list[str]) -> tuple[np.ndarray, list[str]]:
    """Codes and categories of string ids, in first-seen order (as ``str_codes``)."""
    n = len(ids)
    if not n:
        return np.zeros(0, np.int32), []
    first = np.full(len(strings), n, np.int64)
    np.minimum.at(first, ids, np.arange(n))        # the earliest row of each id
    seen = np.flatnonzero(first < n)
    order = seen[np.argsort(first[seen])]
    rank = np.full(len(strings), -1, np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    return rank[ids], [strings[i] for i in order.tolist()]


def _pair(kind: bytes, val: bytes) -> tuple[np.ndarray, np.ndarray]:
    return np.frombuffer(kind, np.uint8), np.frombuffer(val, np.int64)


class ColEvents:
    """All events of a file as columns; ``select`` gives the rows of some categories."""

    def __init__(self, n: int, strings: list[str], raws: list[bytes], dense: dict,
                 sparse: dict):
        self.n = n
        self.strings = strings
        self.raws = raws
        self._raw_cache: dict[int, Any] = {}
        self._index: dict[str, int] | None = None
        self._full: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.ids = {f: self._defaulted(np.frombuffer(dense[f], np.int32)) for f in
                    ("ph", "cat", "name")}
        self.dense = {f: _pair(*dense[f]) for f in ("pid", "tid", "ts", "dur")}
        for f in ("pid", "tid"):           # a missing pid/tid is -1 (_Ev's default)
            k, v = self.dense[f]
            if (k == ABSENT).any():
                gone = k == ABSENT
                self.dense[f] = (np.where(gone, INT, k).astype(np.uint8), np.where(gone, -1, v))
        self.has_args = np.frombuffer(dense["args"], np.uint8)
        self.sparse = {key: (np.frombuffer(i, np.int32), *_pair(k, v))
                       for key, (i, k, v) in sparse.items()}
        self._categories()
        self._check_raws()

    def _check_raws(self) -> None:
        """Every raw text a decoded field holds decodes (else msgspec would fail the
        whole file, e.g. a number out of range: :class:`Declined`)."""
        pairs = [(k, v) for key, (_i, k, v) in self.sparse.items() if key not in _RAW_KEYS]
        for k, v in pairs + list(self.dense.values()):
            for rid in np.unique(v[k == RAW]).tolist():
                self.raw_value(rid)

    # ---------------------------------------------------------------- strings
    def string_id(self, s: str) -> int:
        """The id of ``s`` in the string table (added when absent)."""
        if self._index is None:
            self._index = {t: i for i, t in enumerate(self.strings)}
        got = self._index.get(s)
        if got is None:
            self.strings.append(s)
            got = self._index[s] = len(self.strings) - 1
        return got

    def _defaulted(self, ids: np.ndarray) -> np.ndarray:
        return np.where(ids < 0, self.string_id(""), ids) if (ids < 0).any() else ids

    def _categories(self) -> None:
        """Categories coded in first-seen order, older spellings read as today's."""
        names = first_seen(self.ids["cat"], self.strings)[1]
        self.renamed = {c: canonical_cat(c) for c in names if canonical_cat(c) != c}
        if self.renamed:
            lut = np.arange(len(self.strings) + len(self.renamed), dtype=np.int32)
            for old, new in self.renamed.items():
                lut[self.string_id(old)] = self.string_id(str(new))
            self.ids["cat"] = lut[self.ids["cat"]]
            names = first_seen(self.ids["cat"], self.strings)[1]
        self.cat_index = {c: code for code, c in enumerate(names)}

    def select(self, names: tuple[str, ...], phase: str | None = "X") -> ColSub:
        want = [self.string_id(c) for c in names if c in self.cat_index]
        if not want:
            return ColSub(self, np.zeros(0, np.int64))
        lut = np.zeros(len(self.strings), bool)
        lut[want] = True
        keep = lut[self.ids["cat"]]
        if phase is not None:
            keep &= self.ids["ph"] == self.string_id(phase)
        return ColSub(self, np.flatnonzero(keep))

    def full(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(kind, payload) of a sparse key for every event (made once, on first use)."""
        got = self._full.get(key)
        if got is None:
            at, kind, val = self.sparse[key]
            k, v = np.zeros(self.n, np.uint8), np.zeros(self.n, np.int64)
            k[at], v[at] = kind, val
            got = self._full[key] = (k, v)
        return got

    def column(self, key: str, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(kind, payload) of a key for the rows ``idx`` (ascending): a few rows are
        looked up, more are taken from the key's column over every event."""
        kv = self.dense.get(key) or self._full.get(key)
        if kv is None and len(idx) * 64 < self.n:
            return self._lookup(key, idx)
        k, v = kv or self.full(key)
        return k[idx], v[idx]

    def _lookup(self, key: str, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        at, kind, val = self.sparse[key]
        if not len(at) or not len(idx):
            return np.zeros(len(idx), np.uint8), np.zeros(len(idx), np.int64)
        pos = np.minimum(np.searchsorted(at, idx), len(at) - 1)
        has = at[pos] == idx
        return np.where(has, kind[pos], ABSENT).astype(np.uint8), np.where(has, val[pos], 0)

    # ---------------------------------------------------------------- values
    def raw_value(self, rid: int) -> Any:
        try:
            return self._raw_cache[rid]
        except KeyError:
            try:
                v = msgspec.json.decode(self.raws[rid])
            except msgspec.DecodeError:
                raise Declined(f"a value msgspec does not read: {self.raws[rid][:40]!r}") \
                    from None
            self._raw_cache[rid] = v
            return v

    def py_values(self, kind: np.ndarray, val: np.ndarray, default: Any = None,
                  raw_text: bool = False) -> list:
        """The Python values msgspec decodes for these (kind, payload) pairs."""
        out = [default] * len(kind)
        conv = {JNULL: lambda v: [None] * len(v), INT: lambda v: v.tolist(),
                FLOAT: lambda v: v.view(np.float64).tolist(),
                STR: lambda v: list(map(self.strings.__getitem__, v.tolist())),
                TRUE: lambda v: [True] * len(v), FALSE: lambda v: [False] * len(v),
                RAW: lambda v: list(map(self.raw_value, v.tolist()))}
        if raw_text:
            conv = {RAW: lambda v: [msgspec.Raw(self.raws[i]) for i in v.tolist()]}
        for k in np.unique(kind).tolist():
            if k in conv:
                sel = np.flatnonzero(kind == k)
                deque(map(out.__setitem__, sel.tolist(), conv[k](val[sel])), 0)
        return out


class ColSub:
    """Some rows (``idx``, in file order) of a :class:`ColEvents`."""

    def __init__(self, ev: ColEvents, idx: np.ndarray):
        self.ev, self.idx = ev, idx
        self._structs: list | None = None

    def __len__(self) -> int:
        return len(self.idx)

    def __bool__(self) -> bool:
        return len(self.idx) > 0

    def ids(self, field: str) -> np.ndarray:
        """String ids of ph, cat or name."""
        return self.ev.ids[field][self.idx]

    def field(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(kind, payload) of an event field or an args key (scanner spelling)."""
        return self.ev.column(key, self.idx)

    def arg(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(kind, payload) of an ``_Args`` field."""
        return self.field(_ARG_KEYS[name])

    def values(self, key: str) -> list:
        """Python values of an event field (an ``_Ev`` field but args)."""
        if key in ("ph", "cat", "name"):
            return list(map(self.ev.strings.__getitem__, self.ids(key).tolist()))
        return self.ev.py_values(*self.field(key), default=_EV_DEFAULTS[key])

    def arg_values(self, name: str) -> list:
        """Python values of an ``_Args`` field (its default where absent)."""
        if name in _RAW_ONLY:
            return self.ev.py_values(*self.arg(name), default=msgspec.Raw(b""), raw_text=True)
        return self.ev.py_values(*self.arg(name))

    def structs(self) -> list:
        """The rows as the msgspec path's ``_Ev`` structs (for small groups)."""
        if self._structs is None:
            cols = {f: self.values(f) for f in _EV_DEFAULTS}
            args = {f: self.arg_values(f) for f in _Args.__struct_fields__}
            has = self.ev.has_args[self.idx].tolist()
            evs = []
            for i, h in enumerate(has):
                a = _Args(**{f: v[i] for f, v in args.items()}) if h else None
                evs.append(_Ev(**{f: v[i] for f, v in cols.items()}, args=a))
            self._structs = evs
        return self._structs

    def __iter__(self):
        return iter(self.structs())

    def __getitem__(self, item):
        if isinstance(item, slice):
            return ColSub(self.ev, self.idx[item])
        return self.structs()[item]
