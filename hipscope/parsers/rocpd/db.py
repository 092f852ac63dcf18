"""rocpd SQLite access: detection, a read-only connection with error translation,
column-wise fetches of the views, and array helpers."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..base import TraceFormatError

SQLITE_MAGIC = b"SQLite format 3\x00"
_MARKER_CATEGORIES = ("MARKER_CORE_API", "MARKER_CORE_RANGE_API")
_LEGACY_TABLES = {"KERN", "HIP", "OPS", "HSA", "COPY"}


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def _connect(path: Path) -> sqlite3.Connection:
    uri = "file:" + str(Path(path).resolve()).replace("?", "%3f").replace("#", "%23") + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    # a damaged file must not raise UnicodeDecodeError from deep inside a fetch
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    return conn


def _table_names(path: Path) -> set[str]:
    conn = _connect(path)
    try:
        return {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    finally:
        conn.close()


def is_rocpd(path: Path) -> bool:
    """SQLite magic and rocpd_ tables/views (cheap: reads sqlite_master only)."""
    if not path.is_file() or not _is_sqlite(path):
        return False
    try:
        names = _table_names(path)
    except (sqlite3.Error, UnicodeDecodeError):
        return False
    return "rocpd_metadata" in names or any(n.startswith("rocpd_") for n in names)


def _db_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix == ".db" and is_rocpd(p))


class _Db:
    """A read-only connection with error translation and column-wise fetches."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.conn = _connect(path)
            self.names = {r[0] for r in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise TraceFormatError(path, "sqlite_master", "a readable SQLite database",
                                   str(exc)) from None
        self._cols: dict[str, list[str]] = {}

    def close(self) -> None:
        self.conn.close()

    def has(self, name: str) -> bool:
        return name in self.names

    def columns(self, view: str) -> list[str]:
        if view not in self._cols:
            try:
                self._cols[view] = [r[1] for r in self.conn.execute(
                    f'PRAGMA table_info("{view}")')]
            except (sqlite3.Error, UnicodeDecodeError) as exc:
                raise TraceFormatError(self.path, f"table {view}", "a readable rocpd view",
                                       str(exc)) from None
        return self._cols[view]

    def fetch(self, view: str, wanted: Sequence[str], where: str = "",
              required: Sequence[str] = (), extra: dict[str, str] | None = None,
              ) -> dict[str, pa.Array]:
        """Columns of a view as pyarrow arrays; columns the view lacks are left out
        (a required one missing is a TraceFormatError)."""
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
        sql = f'SELECT {", ".join(exprs)} FROM "{view}" {where}'
        try:
            rows = self.conn.execute(sql).fetchall()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise TraceFormatError(self.path, f"table {view}",
                                   "rows readable with the rocpd schema", str(exc)) from None
        if not rows:
            return {c: pa.array([], type=pa.null()) for c in cols}
        out = {}
        for c, vals in zip(cols, zip(*rows)):
            v0 = vals[0]
            if type(v0) is int:  # fast path: integer column without NULLs
                try:
                    out[c] = pa.array(np.array(vals, dtype=np.int64))
                    continue
                except (TypeError, ValueError, OverflowError):
                    pass
            try:
                out[c] = pa.array(vals)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                out[c] = pa.array([None if v is None else str(v) for v in vals],
                                  type=pa.string())
        return out


def _int(arr: pa.Array | None, n: int, fill: int = -1) -> np.ndarray:
    """An integer column as int64 numpy with nulls as ``fill``."""
    if arr is None or len(arr) == 0 or pa.types.is_null(arr.type):
        return np.full(n, fill, dtype=np.int64)
    if not pa.types.is_integer(arr.type):
        try:
            arr = arr.cast(pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            arr = pc.cast(pc.cast(arr, pa.string()), pa.int64(), safe=False)
    return pc.fill_null(arr.cast(pa.int64()), fill).to_numpy(zero_copy_only=False)


def _str(arr: pa.Array | None, n: int) -> pa.Array:
    if arr is None or len(arr) == 0 or pa.types.is_null(arr.type):
        return pa.nulls(n, pa.string())
    return arr if pa.types.is_string(arr.type) else pc.cast(arr, pa.string())


def _masked(vals: np.ndarray, invalid: np.ndarray | None = None) -> pa.Array | None:
    mask = vals < 0 if invalid is None else invalid
    if len(vals) == 0 or mask.all():
        return None
    return pa.array(vals, mask=mask if mask.any() else None)
