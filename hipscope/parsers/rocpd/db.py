"""rocpd SQLite access: detection, a read-only connection with error translation,
column-wise fetches of the views, and array helpers.

Fetches go through the ADBC SQLite driver straight to Arrow when it is installed (about
5x faster than sqlite3 row tuples); any fetch it cannot serve exactly as the sqlite3
path would (a driver error such as a column whose SQLite storage class changes part way,
an unexpected Arrow type, invalid UTF-8 text) is redone with sqlite3, so both give the
same columns. ``HIPSCOPE_ROCPD_ADBC=0`` turns the ADBC path off.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...model.table import from_numpy, string_array, to_numpy
from .._common import group_key, group_rows
from .._sqlite import (
    SQL_ERRORS,
    AdbcConnection,
    adbc_modules,
    connect_ro,
    error_text,
    ro_uri,
    schema_names,
    switched_on,
)
from ..base import TraceFormatError
from .sniff import db_files, is_rocpd, table_names

__all__ = ["LEGACY_TABLES", "Db", "as_int", "as_str", "db_files", "distinct_rows",
           "is_rocpd", "masked", "table_names"]

LEGACY_TABLES = {"KERN", "HIP", "OPS", "HSA", "COPY"}


class Db:
    """A read-only connection with error translation and column-wise fetches.

    ``use_adbc``: fetch through the ADBC SQLite driver (None: when installed and not
    turned off by ``HIPSCOPE_ROCPD_ADBC=0``); False forces the sqlite3 path.
    ``adbc_fetches`` / ``adbc_fallbacks`` count the fetches each way (for tests).
    """

    def __init__(self, path: Path, use_adbc: bool | None = None):
        self.path = path
        self.use_adbc = switched_on("HIPSCOPE_ROCPD_ADBC") if use_adbc is None else use_adbc
        self._aconn = None
        self.adbc_fetches = 0
        self.read_path = ""  # "physical" or "views", once read (for tests)
        self.kernel_chunks = 0  # chunks the physical kernels were read in (for tests)
        self.adbc_fallbacks = 0
        self._pool: ThreadPoolExecutor | None = None
        self._pending: dict[str, Future] = {}
        try:
            self.conn = connect_ro(path)
            self.names = set(schema_names(self.conn))
        except SQL_ERRORS as exc:
            raise TraceFormatError(path, "sqlite_master", "a readable SQLite database",
                                   error_text(exc)) from None
        self._cols: dict[str, list[str]] = {}
        self._counts: dict[str, int | None] = {}

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._pending.clear()
        self.conn.close()
        if self._aconn is not None:
            try:
                self._aconn.close()
            except Exception:  # noqa: BLE001 - closing a read-only connection
                pass
            self._aconn = None

    def _arrow_conn(self):
        if self._aconn is None and self.use_adbc:
            if adbc_modules() is None:
                self.use_adbc = False
                return None
            try:
                self._aconn = AdbcConnection(ro_uri(self.path))
            except Exception:  # noqa: BLE001 - the driver cannot open it: use sqlite3
                self.use_adbc = False
        return self._aconn

    def _fetch_arrow(self, sql: str, cols: list[str], own_conn: bool = False,
                     ) -> dict[str, pa.Array] | None:
        """The columns as the sqlite3 path makes them, through ADBC; None when ADBC
        cannot give exactly that (the caller then uses sqlite3)."""
        conn = self._arrow_conn()
        if conn is None:
            return None
        try:
            if own_conn:  # connections are not shared between threads
                conn = AdbcConnection(ro_uri(self.path))
            try:
                table = conn.table(sql)
            finally:
                if own_conn:
                    conn.close()
        except Exception:  # noqa: BLE001 - type mismatch, damaged file...: use sqlite3
            return None
        if table.num_columns != len(cols):
            return None
        n = table.num_rows
        if n == 0:
            return {c: pa.nulls(0) for c in cols}
        out = {}
        for c in cols:  # each column's batches freed once combined: peak +1 column, not 2x
            col = table.column(0)
            table = table.remove_column(0)
            t = col.type
            if col.null_count == n:
                out[c] = pa.nulls(n)  # sqlite3: all None -> null type
                continue
            if not (pa.types.is_int64(t) or pa.types.is_float64(t) or pa.types.is_string(t)):
                return None
            try:
                arr = col.combine_chunks()
                if pa.types.is_string(t):
                    arr.validate(full=True)  # UTF-8 (sqlite3 would decode with replace)
            except (pa.ArrowException, OverflowError):
                return None
            out[c] = arr
        return out

    def has(self, name: str) -> bool:
        return name in self.names

    def columns(self, view: str) -> list[str]:
        if view not in self._cols:
            try:
                self._cols[view] = [r[1] for r in self.conn.execute(
                    f'PRAGMA table_info("{view}")')]
            except SQL_ERRORS as exc:
                raise TraceFormatError(self.path, f"table {view}", "a readable rocpd view",
                                       error_text(exc)) from None
        return self._cols[view]

    def _plan(self, view: str, wanted: Sequence[str], where: str = "",
              required: Sequence[str] = (), extra: dict[str, str] | None = None,
              ) -> tuple[str, list[str]]:
        if not self.has(view):
            raise TraceFormatError(self.path, f"table {view}",
                                   f"the rocpd view {view!r}", "no such table or view")
        have = set(self.columns(view))
        missing = [c for c in required if c not in have]
        if missing:
            raise TraceFormatError(self.path, f"table {view}",
                                   f"columns {', '.join(missing)}",
                                   f"only {', '.join(sorted(have)) or 'no columns'}")
        cols = [c for c in wanted if c in have]
        exprs = [f'"{c}"' for c in cols]
        for alias, expr in (extra or {}).items():
            cols.append(alias)
            exprs.append(expr)
        return f'SELECT {", ".join(exprs)} FROM "{view}" {where}', cols

    def prefetch(self, view: str, wanted: Sequence[str], where: str = "",
                 required: Sequence[str] = (), extra: dict[str, str] | None = None) -> None:
        """Start the ADBC fetch a later :meth:`fetch` with the same arguments will make,
        on a thread with its own connection (SQLite runs the queries in parallel)."""
        if not self.use_adbc or self._arrow_conn() is None:
            return
        try:
            sql, cols = self._plan(view, wanted, where, required, extra)
        except TraceFormatError:
            return  # the fetch itself reports it
        self.prefetch_sql(sql, cols)

    def prefetch_sql(self, sql: str, cols: list[str]) -> None:
        """Start the ADBC fetch a later ``fetch_sql(sql, cols, ...)`` will make."""
        if not self.use_adbc or self._arrow_conn() is None or sql in self._pending:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="rocpd-adbc")
        self._pending[sql] = self._pool.submit(self._fetch_arrow, sql, cols, True)

    def forget_prefetch(self, sql: str) -> None:
        """Drop a prefetch no fetch will collect (its result is freed when it ends)."""
        pending = self._pending.pop(sql, None)
        if pending is not None:
            pending.cancel()

    def fetch(self, view: str, wanted: Sequence[str], where: str = "",
              required: Sequence[str] = (), extra: dict[str, str] | None = None,
              ) -> dict[str, pa.Array]:
        """Columns of a view as pyarrow arrays; columns the view lacks are left out
        (a required one missing is a TraceFormatError)."""
        sql, cols = self._plan(view, wanted, where, required, extra)
        return self.fetch_sql(sql, cols, f"table {view}")

    def count(self, table: str) -> int | None:
        """``count(*)`` of a table or view; None when it cannot be counted."""
        if not self.has(table):
            return None
        if table not in self._counts:  # a scan of the table: once (the file is read-only)
            try:
                self._counts[table] = int(self.conn.execute(
                    f'SELECT count(*) FROM "{table}"').fetchone()[0])
            except SQL_ERRORS:
                self._counts[table] = None
        return self._counts[table]

    def fetch_sql(self, sql: str, cols: list[str], where: str) -> dict[str, pa.Array]:
        """The columns ``cols`` of the rows of ``sql`` as pyarrow arrays (ADBC when it
        can, else sqlite3); an SQL error is a TraceFormatError at ``where``."""
        if self.use_adbc:
            pending = self._pending.pop(sql, None)
            arrow = pending.result() if pending is not None else self._fetch_arrow(sql, cols)
            if arrow is not None:
                self.adbc_fetches += 1
                return arrow
            self.adbc_fallbacks += 1
        try:
            rows = self.conn.execute(sql).fetchall()
        except SQL_ERRORS as exc:
            raise TraceFormatError(self.path, where, "rows readable with the rocpd schema",
                                   error_text(exc)) from None
        if not rows:
            return {c: pa.nulls(0) for c in cols}
        out = {}
        for c, vals in zip(cols, zip(*rows)):
            v0 = vals[0]
            if type(v0) is int:  # fast path: integer column without NULLs
                try:
                    out[c] = from_numpy(np.array(vals, dtype=np.int64))
                    continue
                except (TypeError, ValueError, OverflowError):
                    pass
            text = string_array(vals) if isinstance(v0, str) else None
            try:
                out[c] = text if text is not None else pa.array(vals)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                out[c] = pa.array([None if v is None else str(v) for v in vals],
                                  type=pa.string())
        return out


def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_TRIM = _malloc_trim()


def release_freed() -> None:
    """Give the C heap's free pages back to the system: the ADBC driver's result
    buffers and numpy's temporaries are malloc'ed on several threads' arenas, which
    glibc keeps (hundreds of MB after a big read) unless trimmed."""
    if _TRIM is not None:
        _TRIM(0)


def distinct_rows(*cols: np.ndarray) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """``_common.group_rows`` (distinct rows in sorted order, each row's group, each
    group's first row) by hashing one key per row instead of sorting every row: the
    big tables have few distinct (device, queue) or (guid, stream) rows."""
    n = len(cols[0])
    if n == 0:
        return group_rows(*cols)
    key = group_key(*cols)
    enc = pc.dictionary_encode(from_numpy(key))
    idx = to_numpy(enc.indices).astype(np.int64)
    first = np.full(len(enc.dictionary), n, np.int64)
    np.minimum.at(first, idx, np.arange(n, dtype=np.int64))
    order = np.lexsort([np.asarray(c)[first] for c in cols[::-1]])  # groups, sorted
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return [np.asarray(c)[first[order]] for c in cols], rank[idx], first[order]


def as_int(arr: pa.Array | None, n: int, fill: int = -1) -> np.ndarray:
    """An integer column as int64 numpy with nulls as ``fill``."""
    if arr is None or len(arr) == 0 or pa.types.is_null(arr.type):
        return np.full(n, fill, dtype=np.int64)
    if not pa.types.is_integer(arr.type):
        try:
            arr = arr.cast(pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            arr = pc.cast(pc.cast(arr, pa.string()), pa.int64(), safe=False)
    arr = arr.cast(pa.int64())
    return to_numpy(arr, fill)


def as_str(arr: pa.Array | None, n: int) -> pa.Array:
    if arr is None or len(arr) == 0 or pa.types.is_null(arr.type):
        return pa.nulls(n, pa.string())
    return arr if pa.types.is_string(arr.type) else pc.cast(arr, pa.string())


def masked(vals: np.ndarray, invalid: np.ndarray | None = None) -> pa.Array | None:
    mask = vals < 0 if invalid is None else invalid
    if len(vals) == 0 or mask.all():
        return None
    return from_numpy(vals, mask)


# the former private spellings (kept for callers outside this package)
_Db, _int, _str, _masked = Db, as_int, as_str, masked
_db_files, _table_names, _LEGACY_TABLES = db_files, table_names, LEGACY_TABLES
