"""Opening SQLite inputs (rocpd, legacy results.db) read-only, the same way everywhere.

* The URI is built with ``urllib.parse.quote`` of the absolute path, so ``%``, ``#``,
  ``?`` and non-UTF-8 bytes in folder names name the file itself (``file:a%41b`` would
  otherwise open ``aAb``). ``mode=ro`` only: ``immutable=1`` is not safe here, since it
  skips the ``-wal`` file (rows there would vanish silently) and change detection (a
  profiler may still be writing the file).
* Text is decoded with U+FFFD for invalid UTF-8, and SQLite error messages that hold
  undecodable bytes (a damaged schema) become text too (:func:`error_text`).
* :func:`check_intact` runs ``PRAGMA quick_check``: corruption makes rows vanish
  without any SQL error, so a failing check refuses the file with the first message.
  It reads every page: 0.9-1.4 s for a 0.32 GB, 1M-kernel rocpd file, against about
  5.5 s for the ADBC read and 13 s for the sqlite3 one. :class:`BackgroundCheck` runs it
  on its own connection and thread while the reader reads, which hides it where there
  is a spare core. ``quick_check(1)`` stops at the first problem (a damaged file is not
  scanned to the end); checking only the tables read would save little, since those
  are the big ones.
* :func:`schema_names` lists tables and views even when the schema cannot be parsed
  (``writable_schema``), so sniffers still recognise the file and the reader can say why
  it cannot read it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from urllib.parse import quote

from .base import TraceFormatError
from .reading import SQLITE_MAGIC, is_sqlite  # noqa: F401 - their names here too

SQL_ERRORS = (sqlite3.Error, UnicodeDecodeError)


def ro_uri(path: str | os.PathLike) -> str:
    """A read-only ``file:`` URI naming exactly ``path`` (sqlite3 and ADBC alike)."""
    return "file:" + quote(os.fsencode(os.path.abspath(path))) + "?mode=ro"


def _decode(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def connect_ro(path: str | os.PathLike) -> sqlite3.Connection:
    """A read-only connection; invalid UTF-8 in text cells reads as U+FFFD."""
    conn = sqlite3.connect(ro_uri(path), uri=True)
    conn.text_factory = _decode
    return conn


# how SQLite's messages that quote schema text begin (sqlite3 cannot decode them when
# that text is not UTF-8)
_SQLITE_MESSAGES = ("malformed database schema", "near ", "no such ", "unrecognized token",
                    "database ")


def error_text(exc: BaseException) -> str:
    """The message of an SQLite error. A UnicodeDecodeError is either SQLite's message
    quoting a damaged schema (given decoded with U+FFFD) or a column name sqlite3 could
    not decode (said so)."""
    if isinstance(exc, UnicodeDecodeError) and isinstance(exc.object, bytes | bytearray):
        text = _decode(bytes(exc.object))
        if text.startswith(_SQLITE_MESSAGES):
            return text
        return f"a name that is not UTF-8 ({text!r})"
    return str(exc)


def schema_names(conn: sqlite3.Connection, types: tuple[str, ...] = ("table", "view"),
                 ) -> list[str]:
    """Names in sqlite_master of the given types, in schema order. A schema SQLite
    cannot parse is read raw (``writable_schema``, a read-only connection) so that the
    file can still be recognised; reading it then fails with the reason."""
    marks = ", ".join("?" * len(types))
    sql = f"SELECT name FROM sqlite_master WHERE type IN ({marks}) ORDER BY rowid"
    try:
        rows = conn.execute(sql, types).fetchall()
    except SQL_ERRORS:
        conn.execute("PRAGMA writable_schema = ON")
        try:
            rows = conn.execute(sql, types).fetchall()
        finally:
            conn.execute("PRAGMA writable_schema = OFF")
    # a damaged record can hold a number where a name belongs: no table has that name
    return [r[0] for r in rows if isinstance(r[0], str)]


def _columns(conn: sqlite3.Connection, name: str) -> list[str]:
    quoted = name.replace('"', '""')
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{quoted}")')]


def schema_columns(conn: sqlite3.Connection, types: tuple[str, ...] = ("table",),
                   ) -> dict[str, list[str]]:
    """name -> column names for the tables (or views) in sqlite_master. A schema
    SQLite cannot parse is read raw, as in :func:`schema_names` (a table whose own
    definition is damaged then lists no columns)."""
    try:
        return {n: _columns(conn, n) for n in schema_names(conn, types)}
    except SQL_ERRORS:
        pass
    names = schema_names(conn, types)
    conn.execute("PRAGMA writable_schema = ON")
    try:
        out = {}
        for n in names:
            try:
                out[n] = _columns(conn, n)
            except SQL_ERRORS:
                out[n] = []
        return out
    finally:
        conn.execute("PRAGMA writable_schema = OFF")


def check_intact(conn: sqlite3.Connection, path: Path, what: str) -> None:
    """``PRAGMA quick_check``; a damaged file is a TraceFormatError naming the first
    problem (b-tree damage drops rows with no SQL error, so it is never read)."""
    try:
        rows = conn.execute("PRAGMA quick_check(1)").fetchall()
    except SQL_ERRORS as exc:
        msg = error_text(exc)
    else:
        msg = "; ".join(str(r[0]) for r in rows)
        if msg == "ok":
            return
    lines = [ln.strip() for ln in msg.splitlines() if ln.strip() and
             not ln.lstrip().startswith("***")]  # "*** in database main ***"
    raise TraceFormatError(path, "PRAGMA quick_check", f"an intact SQLite database ({what})",
                           f"damage: {lines[0] if lines else msg}")


def open_checked(path: Path, what: str) -> sqlite3.Connection:
    """:func:`connect_ro` followed by :func:`check_intact`; any failure is a
    TraceFormatError naming the file."""
    try:
        conn = connect_ro(path)
    except SQL_ERRORS as exc:
        raise TraceFormatError(path, None, f"a readable SQLite database ({what})",
                               error_text(exc)) from None
    try:
        check_intact(conn, path, what)
    except BaseException:
        conn.close()
        raise
    return conn


class BackgroundCheck:
    """:func:`check_intact` on its own connection and thread, overlapping the read
    (SQLite releases the GIL); :meth:`result` waits and raises its refusal."""

    def __init__(self, path: Path, what: str):
        self.path, self.what = path, what
        self._error: TraceFormatError | None = None
        try:
            self._conn = sqlite3.connect(ro_uri(path), uri=True, check_same_thread=False)
        except SQL_ERRORS as exc:
            raise TraceFormatError(path, None, f"a readable SQLite database ({what})",
                                   error_text(exc)) from None
        self._conn.text_factory = _decode
        self._thread = threading.Thread(target=self._run, name="sqlite-quick-check",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            check_intact(self._conn, self.path, self.what)
        except TraceFormatError as exc:
            self._error = exc
        except BaseException as exc:  # noqa: BLE001 - reported by result()
            self._error = TraceFormatError(self.path, "PRAGMA quick_check",
                                           f"an intact SQLite database ({self.what})",
                                           f"{type(exc).__name__}: {exc}")

    def _join(self) -> None:
        self._thread.join()
        self._conn.close()

    def result(self) -> None:
        """Wait for the check; raise its TraceFormatError when the file is damaged."""
        self._join()
        if self._error is not None:
            raise self._error

    def failed(self) -> TraceFormatError | None:
        """Wait for the check; its refusal, or None when the file is intact."""
        self._join()
        return self._error

    def stop(self) -> None:
        """Abandon the check (the read was cancelled or failed for another reason)."""
        self._conn.interrupt()
        self._join()


def read_sqlite_input(path: Path, fmt: str, noun: str, open_db, read):
    """One SQLite trace file read the way every SQLite reader reads it: refused at once
    when it is not a file or has no SQLite header; ``PRAGMA quick_check`` running in the
    background while ``read(db)`` reads ``db = open_db(path)``; damage explains a failed
    read best; SQLite and row errors become one sentence. ``fmt`` names the format
    ("rocpd"), ``noun`` what a good file is ("export", "database")."""
    if not path.is_file():
        raise TraceFormatError(path, None, f"a {fmt} SQLite {noun}", "not a file")
    if not is_sqlite(path):
        raise TraceFormatError(path, "byte 0", f"an SQLite 3 database ({fmt})",
                               "no SQLite header")
    check = BackgroundCheck(path, fmt)
    try:
        trace = _read_mapped(path, fmt, noun, open_db, read)
    except TraceFormatError:
        damage = check.failed()
        if damage is not None:
            raise damage from None
        raise
    except BaseException:
        check.stop()
        raise
    check.result()
    return trace


def _read_mapped(path: Path, fmt: str, noun: str, open_db, read):
    import pyarrow as pa

    db = open_db(path)
    try:
        return read(db)
    except SQL_ERRORS as exc:
        raise TraceFormatError(path, None, f"a readable {fmt} {noun}", error_text(exc)) from None
    except (ValueError, TypeError, KeyError, IndexError, OverflowError,
            pa.ArrowException) as exc:
        raise TraceFormatError(path, None, f"rows that follow the {fmt} schema",
                               f"{type(exc).__name__}: {exc}") from None
    finally:
        db.close()


# --------------------------------------------------------------------------- ADBC

ADBC_BATCH_ROWS = 65536  # rows per Arrow batch (driver default 1024: slower; the driver
                         # infers each column's type from the first batch)


def switched_on(var: str) -> bool:
    """An environment switch (``HIPSCOPE_ROCPD_ADBC``...): on unless 0/false/no/off."""
    return os.environ.get(var, "1").strip().lower() not in ("0", "false", "no", "off")


def adbc_modules():
    """The ADBC driver modules (manager, sqlite), or None when they are not installed
    (imported lazily)."""
    try:
        import adbc_driver_manager
        import adbc_driver_sqlite
    except Exception:  # noqa: BLE001 - missing or broken install: use sqlite3
        return None
    return adbc_driver_manager, adbc_driver_sqlite


class AdbcConnection:
    """A read-only ADBC SQLite connection to ``uri`` (:func:`ro_uri`) through the driver
    manager's low-level API (its DB-API module imports pyarrow.dataset and pandas: ~1 s
    of every read). ImportError when the driver is not installed."""

    def __init__(self, uri: str):
        mods = adbc_modules()
        if mods is None:
            raise ImportError("the ADBC SQLite driver is not installed")
        self._dm, sqlite_driver = mods
        self._db = sqlite_driver.connect(uri)
        try:
            self._conn = self._dm.AdbcConnection(self._db)
        except BaseException:
            self._db.close()
            raise

    def table(self, sql: str):
        """The query's rows as a ``pyarrow.Table``."""
        import pyarrow as pa

        st = self._dm.AdbcStatement(self._conn)
        try:
            st.set_options(**{"adbc.sqlite.query.batch_rows": str(ADBC_BATCH_ROWS)})
            st.set_sql_query(sql)
            stream, _ = st.execute_query()
            return pa.RecordBatchReader._import_from_c(  # noqa: SLF001 - C stream import
                stream.address).read_all()
        finally:
            st.close()

    def close(self) -> None:
        self._conn.close()
        self._db.close()
