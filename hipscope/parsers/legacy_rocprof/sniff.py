"""The legacy-rocprof sniffers, apart from the reading stack.

Opening any trace sniffs it with every reader; these need only the first bytes of a
file (or an SQLite schema, or a folder's names), so they live here and the package
imports ``results_*`` (numpy tables, msgspec) only when it reads, and sqlite3 only
for a file with the SQLite header.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from ..base import head_bytes, head_text

STATS_HEADER = {"name", "calls", "totaldurationns", "averagens", "percentage"}
_SQLITE = b"SQLite format 3\x00"


def csv_header(text: str) -> set[str]:
    """The lower-cased fields of the first line of ``text``."""
    line = text.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
    try:
        return {f.strip().lower() for f in next(csv.reader([line]))}
    except (csv.Error, StopIteration):
        return set()


def sniff_folder(path: Path) -> float:
    names = {p.name for p in path.iterdir() if p.is_file()}
    if names & {"results.db", "results.json", "results.csv"}:
        return 0.9
    if any(n.startswith("results") and n.endswith("stats.csv") for n in names):
        return 0.5
    return 0.0


def sniff_csv(path: Path) -> float:
    """results.csv (or a results folder); a --stats summary only weakly, to explain it."""
    if path.is_dir():
        return sniff_folder(path)
    if path.suffix.lower() != ".csv":
        return 0.0
    fields = csv_header(head_text(path, 8192))
    if {"index", "kernelname"} <= fields and (fields & {"gpu-id", "beginns", "grd", "obj"}):
        return 0.95
    if fields == STATS_HEADER:
        return 0.3   # claimed only to explain that a summary is not a trace
    return 0.0


def sqlite_tables(path: Path) -> dict[str, list[str]]:
    """Table -> columns, also for a schema SQLite cannot parse (so that the sniffer
    still knows the file and the reader can say what is wrong with it)."""
    from .._sqlite import connect_ro, schema_columns

    con = connect_ro(path)
    try:
        return schema_columns(con)
    finally:
        con.close()


def sniff_db(path: Path) -> float:
    if path.is_dir() or head_bytes(path, 16) != _SQLITE:
        return 0.0
    from .._sqlite import SQL_ERRORS  # sqlite3: only for a file with the SQLite header

    try:
        tables = sqlite_tables(path)
    except SQL_ERRORS:
        return 0.0
    if any(t.startswith("rocpd") for t in tables):
        return 0.0
    legacy = [t for t in ("KERN", "OPS", "HIP", "HSA", "COPY", "rocTX") if t in tables]
    if "KERN" in tables and "KernelName" in tables["KERN"]:
        return 0.95
    if any("BeginNs" in tables[t] for t in legacy):
        return 0.9
    return 0.0


def sniff_json(path: Path) -> float:
    if path.is_dir():
        return 0.0
    head = head_text(path, 512)
    if re.match(r'^\s*\{\s*"traceEvents"\s*:\s*\[\s*\{\s*\}', head):
        return 0.95
    return 0.0
