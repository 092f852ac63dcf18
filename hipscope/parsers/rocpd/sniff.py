"""Telling rocpd databases (and folders of them) apart, without the reading stack.

Every open sniffs with every reader; these read only the SQLite header and
``sqlite_master``, so the package imports :mod:`.db` and :mod:`.tables` only to read,
and sqlite3 only for a file with the SQLite header.
"""

from __future__ import annotations

from pathlib import Path

from ..reading import is_sqlite


def table_names(path: Path) -> set[str]:
    from .._sqlite import connect_ro, schema_names  # sqlite3: only for SQLite files

    conn = connect_ro(path)
    try:
        return set(schema_names(conn))
    finally:
        conn.close()


def is_rocpd(path: Path) -> bool:
    """SQLite magic and rocpd_ tables/views (cheap: reads sqlite_master only)."""
    if not path.is_file() or not is_sqlite(path):
        return False
    from .._sqlite import SQL_ERRORS

    try:
        names = table_names(path)
    except SQL_ERRORS:
        return False
    return "rocpd_metadata" in names or any(n.startswith("rocpd_") for n in names)


def db_files(folder: Path) -> list[Path]:
    """The rocpd databases of a folder, each once (a link to one already listed, or a
    second name of it, would double every count)."""
    out, seen = [], set()
    for p in sorted(p for p in folder.iterdir() if p.suffix == ".db" and is_rocpd(p)):
        st = p.stat()
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            out.append(p)
    return out
