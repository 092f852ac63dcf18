"""Nsight Systems SQLite access: which tables and columns a file has, column-wise fetches
as numpy (ints with a validity mask), the string table and the enum tables.

Tables are created lazily by the exporter and columns come and go between releases, so
nothing here assumes a column: a column a table lacks reads as all-null.

Columns are fetched as Arrow through the ADBC SQLite driver when it is installed (no
Python object per cell); where ADBC cannot give exactly what the sqlite3 rows give (a
column of mixed storage classes, text that is not UTF-8, a driver error) the table is
read again with sqlite3, which also words the refusal of a bad cell.
``HIPSCOPE_NSYS_ADBC=0`` forces the sqlite3 path (the oracle of the tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from ...model.table import to_numpy, valid_mask
from .._sqlite import (
    SQL_ERRORS,
    AdbcConnection,
    connect_ro,
    error_text,
    ro_uri,
    schema_columns,
    switched_on,
)
from ..base import TraceFormatError
from .sniff import (  # noqa: F401 - their names here before sniff.py
    CUDA_DEVICE,
    DRIVER,
    GPU,
    GRAPH_TRACE,
    KERNEL,
    MEMCPY,
    MEMSET,
    NSYS_TABLES,
    NVTX,
    RUNTIME,
    SYNC,
    nsys_confidence,
)


class Ints:
    """An int64 column with a validity mask (SQL NULL -> invalid)."""

    __slots__ = ("values", "valid")

    def __init__(self, values: np.ndarray, valid: np.ndarray):
        self.values, self.valid = values, valid

    def take(self, idx: np.ndarray) -> Ints:
        return Ints(self.values[idx], self.valid[idx])


def _ints_of(col: pa.ChunkedArray) -> Ints | None:
    """An Arrow column as Ints, or None when it is not all int64/null."""
    if pa.types.is_null(col.type):
        return Ints(np.zeros(len(col), np.int64), np.zeros(len(col), bool))
    if not pa.types.is_int64(col.type):
        return None
    arr = col.combine_chunks()
    return Ints(to_numpy(arr, 0).astype(np.int64), valid_mask(arr))


def _texts_of(col: pa.ChunkedArray) -> list | None:
    """An Arrow text column as sqlite3 gives it, or None (not all text/null, or not
    UTF-8: sqlite3 decodes that with U+FFFD)."""
    if pa.types.is_null(col.type):
        return [None] * len(col)
    if not pa.types.is_string(col.type):
        return None
    arr = col.combine_chunks()
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        return None
    return arr.to_pylist()


class NsysDb:
    """A read-only connection to one export, with its schema read once.
    ``adbc_fetches`` / ``adbc_fallbacks`` count the table fetches each way (for tests)."""

    def __init__(self, path: Path, use_adbc: bool | None = None):
        self.path = path
        self.use_adbc = switched_on("HIPSCOPE_NSYS_ADBC") if use_adbc is None else use_adbc
        self._arrow: AdbcConnection | None = None
        self.adbc_fetches = self.adbc_fallbacks = 0
        try:
            self.conn = connect_ro(path)
            self.columns = schema_columns(self.conn)
        except SQL_ERRORS as exc:
            raise TraceFormatError(path, "sqlite_master", "a readable SQLite database",
                                   error_text(exc)) from None
        self._strings: dict[int, str] | None = None

    def close(self) -> None:
        self.conn.close()
        if self._arrow is not None:
            self._arrow.close()
            self._arrow = None

    def has(self, table: str, col: str | None = None) -> bool:
        cols = self.columns.get(table)
        return cols is not None and (col is None or col in cols)

    def _select(self, table: str, cols: tuple[str, ...]) -> tuple[list[str], str]:
        present = [c for c in cols if self.has(table, c)]
        sel = ", ".join(f'"{c}"' for c in present) or "NULL"
        return present, f'SELECT {sel} FROM "{table}"'

    def fetch(self, table: str, cols: tuple[str, ...], text: tuple[str, ...] = (),
              ) -> dict[str, Ints | list]:
        """Columns of a table: integers as :class:`Ints`, the ``text`` columns as lists
        (a column the table lacks: all null). ADBC when it gives exactly this, else
        sqlite3 rows (:meth:`rows`, :meth:`ints`)."""
        got = self._fetch_arrow(table, cols, text) if self.use_adbc else None
        if got is not None:
            self.adbc_fetches += 1
            return got
        self.adbc_fallbacks += self.use_adbc
        raw = self.rows(table, cols)
        return {c: v if c in text else self.ints(table, c, v) for c, v in raw.items()}

    def _fetch_arrow(self, table: str, cols: tuple[str, ...], text: tuple[str, ...],
                     ) -> dict[str, Ints | list] | None:
        present, sql = self._select(table, cols)
        try:
            if self._arrow is None:
                self._arrow = AdbcConnection(ro_uri(self.path))
            got = self._arrow.table(sql)
        except Exception:  # noqa: BLE001 - type mismatch, bad text, no driver: sqlite3
            return None
        n = got.num_rows
        out: dict[str, Ints | list] = {}
        for c in cols:
            if c not in present:
                out[c] = [None] * n if c in text else Ints(np.zeros(n, np.int64),
                                                            np.zeros(n, bool))
                continue
            col = got.column(present.index(c))
            v = _texts_of(col) if c in text else _ints_of(col)
            if v is None:
                return None
            out[c] = v
        return out

    def rows(self, table: str, cols: tuple[str, ...]) -> dict[str, list]:
        """The given columns of a table as lists (a column the table lacks: all None)."""
        present, sql = self._select(table, cols)
        try:
            data = self.conn.execute(sql).fetchall()
        except SQL_ERRORS as exc:
            raise TraceFormatError(self.path, f"table {table}", "a readable table",
                                   error_text(exc)) from None
        out: dict[str, list] = {c: [None] * len(data) for c in cols}
        for c, values in zip(present, zip(*data)):
            out[c] = list(values)
        return out

    def ints(self, table: str, col: str, values: list) -> Ints:
        """A fetched column as int64 + validity; a value that is not an integer is a
        TraceFormatError naming the table, column and row."""
        try:
            arr = pa.array(values)             # fast; infers int64 only for int columns
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            arr = None
        if arr is not None and arr.type in (pa.int64(), pa.null()):
            valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), bool)
            filled = arr.fill_null(0) if arr.type == pa.int64() else pa.array(
                np.zeros(len(values), np.int64))
            return Ints(filled.to_numpy(zero_copy_only=False).astype(np.int64), valid)
        bad = next(i for i, v in enumerate(values)
                   if v is not None and not (isinstance(v, int) and -2**63 <= v < 2**63))
        raise TraceFormatError(self.path, f"table {table}, column {col}, row {bad + 1}",
                               "an integer", repr(values[bad])[:60])

    def strings(self) -> dict[int, str]:
        """The ``StringIds`` table (id -> text), read once."""
        if self._strings is None:
            self._strings = {}
            if self.has("StringIds", "id") and self.has("StringIds", "value"):
                got = self._fetch_arrow("StringIds", ("id", "value"), ("value",)) \
                    if self.use_adbc else None
                if got is not None:
                    ids, vals = got["id"], got["value"]
                    assert isinstance(ids, Ints) and isinstance(vals, list)
                    self._strings = {i: v for i, ok, v in zip(
                        ids.values.tolist(), ids.valid.tolist(), vals) if ok and v is not None}
                    return self._strings
                rows = self.rows("StringIds", ("id", "value"))
                self._strings = {i: str(v) for i, v in zip(rows["id"], rows["value"])
                                 if isinstance(i, int) and v is not None}
        return self._strings

    def enum(self, table: str, col: str = "name") -> dict[int, str]:
        """An ``ENUM_*`` table as id -> name (or label); empty when absent."""
        if not (self.has(table, "id") and self.has(table, col)):
            return {}
        rows = self.rows(table, ("id", col))
        return {i: str(v) for i, v in zip(rows["id"], rows[col])
                if isinstance(i, int) and v is not None}

    def pairs(self, table: str) -> dict[str, str]:
        """A name/value table (``META_DATA_EXPORT``) as a dict."""
        if not (self.has(table, "name") and self.has(table, "value")):
            return {}
        rows = self.rows(table, ("name", "value"))
        return {str(n): str(v) for n, v in zip(rows["name"], rows["value"]) if n is not None}


def split_global_id(gid: Ints) -> tuple[Ints, Ints]:
    """pid and tid of serialized globalTid/globalPid values (hwId << 56 | vmId << 48 |
    pid << 24 | tid)."""
    v = gid.values
    return (Ints((v >> 24) & 0xFFFFFF, gid.valid.copy()), Ints(v & 0xFFFFFF, gid.valid.copy()))


def time_order(start: Ints, end: Ints) -> np.ndarray:
    """Row order by (start, end, file order): exports from 2025.6 on are not sorted."""
    return np.lexsort((np.arange(len(start.values)), end.values, start.values))
