"""The rank files of a job: files, folders and globs expanded, in a stable order.

A folder gives its Kineto rank traces (``rank-*.json.gz``, ``*.pt.trace.json``; see
``parsers.kineto.rank_files``), else every trace-looking file directly in it (JSON,
gzip, rocpd/SQLite databases, Perfetto traces); a glob gives the files it matches. A
path that names nothing is a :class:`~hipscope.parsers.TraceFormatError` (one
sentence); files found twice are kept once.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["TRACE_SUFFIXES", "discover"]

TRACE_SUFFIXES = (".json", ".json.gz", ".gz", ".db", ".rocpd", ".sqlite", ".pftrace",
                  ".perfetto-trace")


def _folder(d: Path) -> list[Path]:
    from ..parsers.kineto import rank_files

    found = rank_files(d)
    if found:
        return sorted(found)
    return sorted(p for p in d.iterdir()
                  if p.is_file() and p.name.lower().endswith(TRACE_SUFFIXES))


def discover(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """The rank files named by ``paths`` (files, folders or globs)."""
    from ..parsers import TraceFormatError

    out: list[Path] = []
    for raw in paths:
        text = os.fspath(raw)
        p = Path(text)
        if p.is_dir():
            got = _folder(p)
            what = "rank traces (rank-*.json.gz, *.pt.trace.json, *.db...) in the folder"
        elif p.exists():
            got = [p]
            what = ""
        else:
            got = sorted(Path(m) for m in glob.glob(text) if Path(m).is_file()) \
                if glob.has_magic(text) else []
            what = "files matching the pattern" if glob.has_magic(text) else \
                "a rank trace file, a folder of them or a glob"
        if not got:
            raise TraceFormatError(p, None, what or "a rank trace", "nothing there")
        out.extend(got)
    seen: set[str] = set()
    unique = []
    for p in out:
        key = os.path.realpath(p)
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique
