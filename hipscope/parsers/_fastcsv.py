"""The fast path for big plain CSV files (rocprofv3 kernel_trace.csv with millions of rows).

``read_typed`` reads chosen integer and text columns of a CSV file in one pass with the
C scanner ``_csvscan`` (built with the package; see setup.py): the file is cut at
newlines into pieces of ~16 MB, and several threads (the scanner releases the GIL; each
thread reuses one buffer) read each piece once, count its rows, and parse it straight
into slices of one numpy array per column, at the rows where the pieces before it end
(:class:`_Placement`); text columns come back dictionary-encoded. A file that gets
shorter meanwhile is left to pyarrow.

It returns ``None`` (and the caller uses the general pyarrow reader) whenever the file
is not plain: newlines inside quotes, quotes inside unquoted text, CR-LF line ends, a field count
that differs from the header, non-integers or values too wide for the column's type,
invalid UTF-8, a scanner that was not built, or ``HIPSCOPE_FASTCSV=0``. The pyarrow
reader then reads the file (and reports errors with their line). For the files it
accepts, the result equals pyarrow's read of the same columns (tests/unit/
test_fastcsv.py checks that on every real sample and on generated files).
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..model.table import string_array

try:
    from . import _csvscan
except ImportError:  # pragma: no cover - the extension is optional (pure-Python install)
    _csvscan = None

log = logging.getLogger(__name__)

DICT = pa.dictionary(pa.int32(), pa.string())
_KIND = {pa.int16(): 1, pa.int32(): 2, pa.int64(): 3, DICT: 4}
_DTYPE = {1: np.int16, 2: np.int32, 3: np.int64, 4: np.int32}
_PIECE = 16 << 20          # bytes per piece; each thread holds one piece at a time
_MIN_BYTES = 4 << 20       # smaller files: pyarrow is as fast (tests set both lower)


def available() -> bool:
    """Whether the fast path is built and not switched off (``HIPSCOPE_FASTCSV=0``)."""
    return _csvscan is not None and os.environ.get("HIPSCOPE_FASTCSV", "1") != "0"


def read_typed(path: Path, fields: list[str], types: dict[str, pa.DataType],
               limit: int | None = None) -> pa.Table | None:
    """Columns ``types`` (header name -> int16/int32/int64/dictionary type) of the CSV
    file ``path`` whose header is ``fields``, reading at most ``limit`` bytes; ``None``
    when the fast path does not apply (see the module docstring)."""
    if not available() or len(fields) < 2 or len(set(fields)) != len(fields):
        return None
    if not types or any(t not in _KIND or h not in fields for h, t in types.items()):
        return None
    kinds = bytes(_KIND[types[f]] if f in types else 0 for f in fields)
    try:
        size = path.stat().st_size
        if limit is not None:
            size = min(size, limit)
        if size < max(1, _MIN_BYTES):
            return None
        return _read(path, size, fields, types, kinds)
    except _Changed:
        log.debug("%s: the file changed while it was read; left to pyarrow", path)
        return None
    except (OSError, ValueError):
        return None


class _Changed(Exception):
    """The file got shorter while it was read (another program rewrote it)."""


class _Reader:
    """Pieces of a file read into one reused buffer per thread (plain reads, not a
    memory map: a file truncated meanwhile gives a short read, not a SIGBUS)."""

    def __init__(self, path: Path):
        self.path = path
        self.local = threading.local()
        self.handles: list = []
        self.lock = threading.Lock()

    def read(self, a: int, b: int) -> memoryview:
        loc = self.local
        if not hasattr(loc, "fh"):
            loc.fh = open(self.path, "rb", buffering=0)
            loc.buf = bytearray(0)
            with self.lock:
                self.handles.append(loc.fh)
        if len(loc.buf) < b - a:
            loc.buf = bytearray(b - a)
        view = memoryview(loc.buf)[: b - a]
        loc.fh.seek(a)
        got = 0
        while got < b - a:
            n = loc.fh.readinto(view[got:])
            if not n:
                raise _Changed
            got += n
        return view

    def close(self) -> None:
        for fh in self.handles:
            fh.close()


def _threads() -> int:
    return max(2, min(8, os.cpu_count() or 2))


def _pieces(reader: _Reader, start: int, size: int) -> list[tuple[int, int]]:
    """[a, b) byte ranges of whole lines, about _PIECE bytes each."""
    out, pos = [], start
    while pos < size:
        end = min(pos + _PIECE, size)
        while end < size:                     # on to the end of the line
            chunk = bytes(reader.read(end, min(end + (1 << 16), size)))
            nl = chunk.find(b"\n")
            if nl >= 0:
                end += nl + 1
                break
            end += len(chunk)
        out.append((pos, end))
        pos = end
    return out


class _Abandoned(Exception):
    """A piece before this one failed: its rows have no place."""


class _Placement:
    """Where each piece's rows go, settled in piece order as the pieces are counted
    (each piece is read once: counted, then parsed from the same buffer): piece i's
    rows start where piece i-1's end. The columns are made when the first piece is
    counted, with room for the rows the file would have at that piece's rows per byte
    and a quarter more (room never written is never touched: no memory). A piece
    past the room is parsed into arrays of its own, joined to the rest at the end."""

    def __init__(self, npieces: int, kinds: bytes, data_bytes: int):
        self.kinds, self.data_bytes = kinds, data_bytes
        self.offsets: list[int | None] = [0] + [None] * npieces
        self.cond = threading.Condition()
        self.abandoned = False
        self.cols: dict[int, np.ndarray] = {}
        self.room = 0
        self.own: dict[int, dict[int, np.ndarray]] = {}     # piece -> its own arrays

    def outs(self, i: int, n: int, nbytes: int) -> list[np.ndarray | None]:
        """Piece ``i`` (``n`` rows at most, ``nbytes`` long): the slices it parses into,
        once the pieces before it are placed (the pool takes pieces in order)."""
        with self.cond:
            while self.offsets[i] is None and not self.abandoned:
                self.cond.wait()
            if self.abandoned:
                raise _Abandoned
            lo = self.offsets[i]
            assert lo is not None
            if i == 0:
                self._make_room(n, nbytes)
            self.offsets[i + 1] = lo + n
            self.cond.notify_all()
        if lo + n <= self.room:
            return [self.cols[c][lo:lo + n] if c in self.cols else None
                    for c in range(len(self.kinds))]
        own = {c: np.empty(n, dtype=_DTYPE[k]) for c, k in enumerate(self.kinds) if k}
        with self.cond:
            self.own[i] = own
        return [own.get(c) for c in range(len(self.kinds))]

    def _make_room(self, n: int, nbytes: int) -> None:
        # a row has a byte per field at least (its commas and newline): no more room
        # than that (empty lines past it go to the pieces' own arrays)
        most = self.data_bytes // max(1, len(self.kinds))
        self.room = max(n, min(most, int(n / max(nbytes, 1) * self.data_bytes * 1.25) + 1024))
        try:
            self.cols = {c: np.empty(self.room, dtype=_DTYPE[k])
                         for c, k in enumerate(self.kinds) if k}
        except MemoryError:         # no address space for the room: every piece its own
            self.room = 0
            self.cols = {c: np.empty(0, dtype=_DTYPE[k]) for c, k in enumerate(self.kinds) if k}

    def abandon(self) -> None:
        with self.cond:
            self.abandoned = True
            self.cond.notify_all()

    def columns(self) -> dict[int, np.ndarray]:
        """The whole columns: the room's filled part, then the pieces past it."""
        total = self.offsets[-1]
        assert total is not None
        if not self.own:
            return {c: a[:total] for c, a in self.cols.items()}
        first = min(self.own)
        lo = self.offsets[first]
        return {c: np.concatenate([a[:lo], *(self.own[i][c] for i in sorted(self.own))])
                for c, a in self.cols.items()}


def _read(path: Path, size: int, fields: list[str], types: dict[str, pa.DataType],
          kinds: bytes) -> pa.Table | None:
    scan = _csvscan
    assert scan is not None
    reader = _Reader(path)
    try:
        head = bytes(reader.read(0, min(size, 1 << 20)))
        header_end = head.find(b"\n")
        if header_end < 0 or not head[:header_end].strip():
            return None
        pieces = _pieces(reader, header_end + 1, size)
        if not pieces:
            return None
        last = bytes(reader.read(size - 1, size))
        if last == b",":
            # no newline after an empty last field: pyarrow reads it as quoted (not null)
            # when a quoted field comes before it; left to pyarrow
            return None

        place = _Placement(len(pieces), kinds, size - pieces[0][0])

        def work(i: int):
            (a, b) = pieces[i]
            try:
                buf = reader.read(a, b)
                n = scan.count_newlines(buf, 0, b - a)
                if i == len(pieces) - 1 and last != b"\n":
                    n += 1                       # a last line without its newline
                outs = place.outs(i, n, b - a)
                res = scan.parse(buf, 0, b - a, kinds, outs, n)
            except BaseException:
                place.abandon()                  # the pieces after it stop waiting
                raise
            return n, (f"{res} (piece from byte {a})" if isinstance(res, str) else res)

        with ThreadPoolExecutor(_threads()) as ex:
            done = list(ex.map(work, range(len(pieces))))
    finally:
        reader.close()
    counts = [n for n, _res in done]
    results = [res for _n, res in done]
    offsets = np.asarray(place.offsets, dtype=np.int64)
    cols = place.columns()
    for i, res in enumerate(results):
        if isinstance(res, str):
            log.debug("%s: fast CSV path declined (%s)", path, res)
            return None
        if res[0] + res[1] != counts[i]:
            log.debug("%s: fast CSV path declined (a newline inside quotes)", path)
            return None
    rows = [r[0] for r in results]
    if rows != counts:                            # empty lines left gaps: close them
        offsets = _compact(cols, offsets, rows)
    arrays = []
    for h in types:
        c = fields.index(h)
        nulls = sum(r[2][c] for r in results)
        if kinds[c] == 4:
            arr = _dictionary(cols[c], offsets, [r[3][c] for r in results], nulls)
            if arr is None:
                log.debug("%s: fast CSV path declined (column %s is not UTF-8)", path, h)
                return None
        else:
            arr = _integers(cols[c], types[h], nulls)
        arrays.append(arr)
        del cols[c]
    return pa.Table.from_arrays(arrays, names=list(types))


def _compact(cols: dict[int, np.ndarray], offsets: np.ndarray, rows: list[int]
             ) -> np.ndarray:
    """Close the gaps that empty lines left at the ends of the pieces' slices; the new
    offsets of the pieces."""
    for c, arr in cols.items():
        cols[c] = np.concatenate([arr[lo:lo + n] for lo, n in zip(offsets[:-1].tolist(), rows)])
    return np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)


def _validity(mask_valid: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(np.packbits(mask_valid, bitorder="little"))


def _integers(values: np.ndarray, type_: pa.DataType, nulls: int) -> pa.Array:
    validity = None
    if nulls:
        validity = _validity(values != np.iinfo(values.dtype).min)
    return pa.Array.from_buffers(type_, len(values), [validity, pa.py_buffer(values)],
                                 null_count=nulls)


def _dictionary(codes: np.ndarray, offsets: np.ndarray, uniques: list[list[bytes]],
                nulls: int) -> pa.Array | None:
    """One dictionary for the whole column (first-seen order), pieces' codes remapped."""
    index: dict[bytes, int] = {}
    for i, values in enumerate(uniques):
        remap = np.fromiter((index.setdefault(v, len(index)) for v in values),
                            dtype=np.int32, count=len(values))
        if np.array_equal(remap, np.arange(len(values), dtype=np.int32)):
            continue                              # same codes as the first pieces
        lo, hi = int(offsets[i]), int(offsets[i + 1])
        piece = codes[lo:hi]
        codes[lo:hi] = np.append(remap, np.int32(-1))[piece]   # -1 (null) stays -1
    try:
        # a quote inside a quoted field is written "" (only there: unquoted text with a
        # quote is declined by the scanner)
        strings = [v.replace(b'""', b'"').decode("utf-8") for v in index]
    except UnicodeDecodeError:
        return None
    validity = _validity(codes >= 0) if nulls else None
    indices = pa.Array.from_buffers(pa.int32(), len(codes), [validity, pa.py_buffer(codes)],
                                    null_count=nulls)
    names = string_array(strings)          # pa.array would import pandas (0.6 s)
    return pa.DictionaryArray.from_arrays(
        indices, names if names is not None else pa.array(strings, type=pa.string()))
