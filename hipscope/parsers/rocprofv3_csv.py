"""rocprofv3 CSV sets (ROCm 6.2 - 7.x): ``<prefix>_<domain>.csv`` files of one or more
processes, read and merged into one trace.

What is read (docs/readers.md is the contract; ../shared/docs/FORMATS.md sections 1-3
the format):

* ``kernel_trace`` -> kernels; ``hip_api_trace`` (also 6.2 ``hip_runtime_trace`` /
  ``hip_compile_trace``, 7.0 docs ``hip_trace``), ``hsa_api_trace`` (6.2 ``hsa_trace``),
  ``rccl_api_trace``, ``rocdecode_api_trace``, ``rocjpeg_api_trace`` -> api;
  ``marker_api_trace`` -> markers (domain "roctx", nesting depth computed);
  ``memory_copy_trace`` -> copies (no byte counts in CSV);
  ``counter_collection`` -> counters (long form), linked to kernels;
  ``agent_info`` -> devices. ``memory_allocation_trace`` and ``scratch_memory_trace``
  have no table in hipscope's schema: they are summarised in ``meta`` only.
* Columns are chosen **by header name** (never by position); a missing column is null.
  Files are parsed with ``pyarrow.csv`` (multithreaded, names straight to dictionary
  type); no Python loop touches kernel rows.
* Opening a folder reads every process in it (``<pid>_*.csv``, also in ``<host>/``
  subfolders); opening one file reads the folder it sits in (the whole set).
  Files whose names are not rocprofv3 domains but whose header is a rocprofv3 trace
  header (e.g. ``rocpd convert`` output) are read by their header.
* Kernels and copies are linked to their launching API call by Correlation_Id within
  one process (the file prefix's pid); a correlation id that matches several API rows
  (files of different runs in one folder) is left unlinked and reported.
"""

from __future__ import annotations

import csv
import io
import mmap
import os
import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ..model import Trace, build_table, link_by_correlation
from .base import CancelledFn, ProgressFn, TraceFormatError, check_cancel, register

DICT = pa.dictionary(pa.int32(), pa.string())
I16, I32, I64, F64 = pa.int16(), pa.int32(), pa.int64(), pa.float64()

# --------------------------------------------------------------------------- file names

#: file-name domain -> what it holds
DOMAIN_KINDS: dict[str, str] = {
    "kernel_trace": "kernels",
    "hip_api_trace": "api", "hip_runtime_trace": "api", "hip_compile_trace": "api",
    "hip_trace": "api", "hsa_api_trace": "api", "hsa_trace": "api",
    "rccl_api_trace": "api", "rccl_trace": "api",
    "rocdecode_api_trace": "api", "rocjpeg_api_trace": "api",
    "marker_api_trace": "markers",
    "memory_copy_trace": "copies",
    "memory_allocation_trace": "memalloc",
    "scratch_memory_trace": "scratch",
    "counter_collection": "counters",
    "agent_info": "agents",
}
_DOMAINS_LONGEST_FIRST = sorted(DOMAIN_KINDS, key=len, reverse=True)
TRACE_KINDS = ("kernels", "api", "markers", "copies", "memalloc", "scratch", "counters")
_BLOCK_SIZE = 4 << 20   # pyarrow.csv block: ~12k kernel rows; parsed 2 at a time
_MAX_DEPTH = 3          # folder levels searched below an opened folder (host/pmc_N/...)
_PMC_DIR = re.compile(r"^pmc_\d+$")


def _not_a_trace(stem: str) -> bool:
    """Files rocprofv3 writes next to its traces that are not traces."""
    s = stem.lower()
    return (s.endswith("stats") or "summary" in s or "pc_sampling" in s
            or s.endswith("kernel_names") or s.startswith("list-avail"))


def split_name(path: Path) -> tuple[str, str] | None:
    """``(prefix, domain)`` for ``<prefix>_<domain>.csv`` / ``<domain>.csv``; None when
    the name is not a rocprofv3 domain file."""
    if path.suffix.lower() != ".csv":
        return None
    stem = path.stem
    if _not_a_trace(stem):
        return None
    for dom in _DOMAINS_LONGEST_FIRST:
        if stem == dom:
            return "", dom
        if stem.endswith("_" + dom):
            return stem[: -len(dom) - 1], dom
    return None


def _pid_of_prefix(prefix: str) -> int | None:
    m = re.search(r"(?:^|[_.-])(\d+)$", prefix)
    if not m:
        return None
    v = int(m.group(1))
    return v if 0 < v < 2**31 else None


# --------------------------------------------------------------------------- headers

def header_kind(fields: Iterable[str]) -> str | None:
    """Which rocprofv3 table a CSV header belongs to (None: not a rocprofv3 header)."""
    f = set(fields)
    times = {"Start_Timestamp", "End_Timestamp"} <= f
    if {"Counter_Name", "Counter_Value"} <= f and ({"Dispatch_Id", "Correlation_Id"} & f):
        return "counters"
    if {"Kernel_Name", "Agent_Id"} <= f and times:
        return "kernels"
    if {"Domain", "Function"} <= f and times:
        return "api"
    if {"Direction", "Source_Agent_Id", "Destination_Agent_Id"} <= f and times:
        return "copies"
    if {"Operation", "Alloc_Flags"} <= f:
        return "scratch"
    if {"Operation", "Allocation_Size"} <= f:
        return "memalloc"
    if {"Node_Id", "Agent_Type"} <= f:
        return "agents"
    return None


_EXPECTED_HEADER = {
    "kernels": "a rocprofv3 kernel_trace header (Kind, Agent_Id, Queue_Id, ..., Kernel_Name, "
               "Start_Timestamp, End_Timestamp, ...)",
    "api": "a rocprofv3 API trace header (Domain, Function, Process_Id, Thread_Id, "
           "Correlation_Id, Start_Timestamp, End_Timestamp)",
    "markers": "a rocprofv3 marker_api_trace header (Domain, Function, Process_Id, Thread_Id, "
               "Correlation_Id, Start_Timestamp, End_Timestamp)",
    "copies": "a rocprofv3 memory_copy_trace header (Kind, Direction, Source_Agent_Id, "
              "Destination_Agent_Id, Correlation_Id, Start_Timestamp, End_Timestamp)",
    "counters": "a rocprofv3 counter_collection header (Correlation_Id, Dispatch_Id, Agent_Id, "
                "..., Counter_Name, Counter_Value)",
    "memalloc": "a rocprofv3 memory_allocation_trace header (Kind, Operation, Agent_Id, "
                "Allocation_Size, Address, ...)",
    "scratch": "a rocprofv3 scratch_memory_trace header (Kind, Operation, Agent_Id, Queue_Id, "
               "Thread_Id, Alloc_Flags, ...)",
    "agents": "a rocprofv3 agent_info header (Node_Id, Logical_Node_Id, Agent_Type, ...)",
    None: "a rocprofv3 CSV header (Kind,Agent_Id,Queue_Id,... / Domain,Function,Process_Id,... "
          "/ Correlation_Id,Dispatch_Id,Agent_Id,...)",
}


def _first_line(path: Path, limit: int = 1 << 16) -> tuple[bytes, bool]:
    """The first line of a file (without the newline) and whether a newline ended it."""
    with open(path, "rb") as fh:
        raw = fh.read(limit)
    nl = raw.find(b"\n")
    if nl < 0:
        return raw, False
    return raw[:nl].rstrip(b"\r"), True


def _parse_header(line: bytes) -> list[str] | None:
    if b"\x00" in line:
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.lstrip("\ufeff")
    try:
        row = next(csv.reader([text]), [])
    except csv.Error:
        return None
    return [c.strip() for c in row]


def _show(raw: bytes, n: int = 80) -> str:
    text = raw[:n].decode("utf-8", errors="replace")
    return repr(text + ("..." if len(raw) > n else ""))


def read_header(path: Path, kind: str | None) -> list[str]:
    """The header fields of a rocprofv3 CSV file; TraceFormatError when the file is empty,
    binary or its header is not a rocprofv3 header (of ``kind`` when given)."""
    try:
        line, _ = _first_line(path)
    except OSError as exc:
        raise TraceFormatError(path, None, "a readable file", str(exc)) from None
    if not line.strip():
        raise TraceFormatError(path, "line 1", _EXPECTED_HEADER.get(kind, _EXPECTED_HEADER[None]),
                               "an empty file" if path.stat().st_size == 0 else "an empty line")
    fields = _parse_header(line)
    found = header_kind(fields) if fields else None
    if found is None or (kind is not None and found != kind
                         and not (kind == "markers" and found == "api")):
        what = "binary data" if fields is None else _show(line)
        raise TraceFormatError(path, "line 1", _EXPECTED_HEADER.get(kind, _EXPECTED_HEADER[None]),
                               what)
    return fields


# --------------------------------------------------------------------------- CSV reading

class _Limited(io.RawIOBase):
    """A file read up to ``limit`` bytes (to leave out a torn last line)."""

    def __init__(self, fh, limit: int):
        self._fh, self._left = fh, limit

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = min(len(b), self._left)
        if n <= 0:
            return 0
        got = self._fh.readinto(memoryview(b)[:n])
        self._left -= got
        return got

    def close(self) -> None:
        self._fh.close()
        super().close()


def _torn_tail(path: Path, ncols: int) -> tuple[int, bytes] | None:
    """``(bytes to keep, torn text)`` when the last line is cut short, else None.

    A last line without a newline is kept when it has every column and balanced
    quotes (rocprofv3's doc excerpts end that way); otherwise it is torn."""
    size = path.stat().st_size
    back = min(size, 1 << 20)
    with open(path, "rb") as fh:
        fh.seek(size - back)
        tail = fh.read(back)
    if not tail or tail.endswith((b"\n", b"\r")):
        return None
    nl = tail.rfind(b"\n")
    if nl < 0:
        return None if back == size else (0, tail[:200])   # header only / one huge line
    last = tail[nl + 1:]
    if last.count(b'"') % 2 == 0:
        try:
            row = next(csv.reader([last.decode("utf-8")]), [])
        except (UnicodeDecodeError, csv.Error):
            row = []
        if len(row) == ncols:
            return None
    return size - len(last), last


_PARSE_ERR = re.compile(r"Expected (\d+) columns, got (\d+): (.*)", re.S)
_CONV_ERR = re.compile(r"In CSV column #(\d+): .*?conversion error to (\w+): invalid value '(.*)'",
                       re.S)


def _line_of_row_text(path: Path, text: str) -> int | None:
    """1-based line number of the first line starting with ``text`` (error path only)."""
    text = text.rstrip()
    if text.endswith("..."):
        text = text[:-3].rstrip()
    needle = text.encode("utf-8", errors="replace")[:200]
    if not needle:
        return None
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            if mm[: len(needle)] == needle:
                return 1
            pos = mm.find(b"\n" + needle)
            if pos < 0:
                return None
            return mm[: pos + 1].count(b"\n") + 1
    except (OSError, ValueError):
        return None


class _Retry(Exception):
    def __init__(self, column: str):
        self.column = column


class CsvFile:
    """One rocprofv3 CSV file: its header, and a typed pyarrow read of chosen columns."""

    def __init__(self, path: Path, kind: str, fields: list[str]):
        self.path, self.kind, self.fields = path, kind, fields
        self.rows = 0

    def read(self, wanted: dict[str, pa.DataType], load: _Load) -> pa.Table:
        present = {h: t for h, t in wanted.items() if h in self.fields}
        dup = {h for h in self.fields if self.fields.count(h) > 1}
        if dup:
            raise TraceFormatError(self.path, "line 1", "each column name once",
                                   f"{sorted(dup)} more than once")
        torn = _torn_tail(self.path, len(self.fields))
        types = dict(present)
        for _attempt in range(len(types) + 1):
            try:
                table = self._read(types, torn)
                break
            except _Retry as r:
                types[r.column] = F64 if types[r.column] == I64 else I64
        else:  # pragma: no cover - every column widened once
            raise TraceFormatError(self.path, None, "numbers that fit in 64 bits")
        self.rows = table.num_rows
        if torn is not None:
            keep, text = torn
            line = table.num_rows + 2
            load.warn(f"{self.path.name}: the last line (line {line}) is cut short "
                      f"({_show(text, 60)}); read the {table.num_rows:,} whole rows before it")
            load.drop(f"{self.path.name}: torn last line", 1)
        return table

    def _read(self, types: dict[str, pa.DataType], torn) -> pa.Table:
        ropts = pacsv.ReadOptions(block_size=_BLOCK_SIZE, use_threads=True)
        popts = pacsv.ParseOptions(newlines_in_values=False)
        copts = pacsv.ConvertOptions(column_types=types, include_columns=list(types),
                                     null_values=[""], quoted_strings_can_be_null=False,
                                     strings_can_be_null=True)
        src: Any = str(self.path)
        if torn is not None:
            src = _Limited(open(self.path, "rb"), torn[0])
        try:
            return pacsv.read_csv(src, read_options=ropts, parse_options=popts,
                                  convert_options=copts)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError,
                pa.ArrowKeyError, pa.ArrowIndexError) as exc:
            self._translate(exc, types)
            raise AssertionError("unreachable")  # pragma: no cover
        except OSError as exc:
            raise TraceFormatError(self.path, None, "a readable file", str(exc)) from None
        finally:
            if torn is not None:
                src.close()

    def _translate(self, exc: Exception, types: dict[str, pa.DataType]) -> None:
        msg = str(exc)
        m = _CONV_ERR.search(msg)
        if m:
            col_i, _to, value = int(m.group(1)), m.group(2), m.group(3)
            col = self.fields[col_i] if col_i < len(self.fields) else f"#{col_i}"
            if col in types and re.fullmatch(r"\s*[-+]?\d+\s*", value) and types[col] != F64:
                raise _Retry(col)             # an integer wider than we guessed
            line = self._line_of_value(col, value)
            where = f"line {line}" if line else f"column {col}"
            raise TraceFormatError(self.path, where,
                                   f"a number in column {col}", repr(value)) from None
        m = _PARSE_ERR.search(msg)
        if m:
            line = _line_of_row_text(self.path, m.group(3))
            where = f"line {line}" if line else None
            raise TraceFormatError(self.path, where,
                                   f"{m.group(1)} comma-separated fields (as in the header)",
                                   f"{m.group(2)} fields") from None
        if "UTF8" in msg or "utf8" in msg or "utf-8" in msg.lower():
            raise TraceFormatError(self.path, None, "UTF-8 text", "invalid bytes") from None
        raise TraceFormatError(self.path, None, "a well-formed rocprofv3 CSV",
                               msg.splitlines()[0][:200]) from None

    def _line_of_value(self, col: str, value: str) -> int | None:
        try:
            t = pacsv.read_csv(str(self.path),
                               convert_options=pacsv.ConvertOptions(
                                   include_columns=[col], column_types={col: pa.string()}))
            arr = t.column(col).combine_chunks()
            hit = np.nonzero(pc.fill_null(pc.equal(arr, value), False).to_numpy(
                zero_copy_only=False))[0]
            return int(hit[0]) + 2 if len(hit) else None
        except (pa.ArrowException, OSError, ValueError):
            return None


# --------------------------------------------------------------------------- load state

@dataclass
class _Load:
    warnings: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    layout: set[str] = field(default_factory=set)
    provenance: dict[str, str] = field(default_factory=dict)

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def drop(self, what: str, n: int) -> None:
        if n:
            self.dropped[what] = self.dropped.get(what, 0) + int(n)


@dataclass
class _Set:
    """The files of one process (one prefix in one folder)."""

    dir: Path
    prefix: str
    host: str | None
    pid: int | None
    files: dict[str, list[CsvFile]] = field(default_factory=dict)
    alone: str | None = None     # a file whose name is not <prefix>_<domain>.csv

    @property
    def label(self) -> str:
        d = self.dir.name
        if self.alone:
            return f"{d}/{self.alone}"
        return f"{d}/{self.prefix}_*.csv" if self.prefix else f"{d}/*.csv"


# --------------------------------------------------------------------------- discovery

def _host_of(rel: Path) -> str | None:
    for part in rel.parts:
        if not _PMC_DIR.match(part):
            return part
    return None


def _discover(root: Path, single: Path | None) -> tuple[list[_Set], list[str]]:
    """The sets of ``root`` (a folder; ``single`` = the file the user opened, if any)."""
    sets: dict[tuple[Path, str], _Set] = {}
    ignored: list[str] = []

    def add(path: Path, kind: str, prefix: str | None, fields: list[str]) -> None:
        """prefix None: the file's name says nothing of its process: a set of its own."""
        d = path.parent
        key = (d, prefix if prefix is not None else "\0" + path.name)
        if key not in sets:
            rel = d.relative_to(root) if d != root and root in d.parents else Path()
            sets[key] = _Set(d, prefix or "", _host_of(rel),
                             _pid_of_prefix(prefix) if prefix else None,
                             alone=None if prefix is not None else path.name)
        sets[key].files.setdefault(kind, []).append(CsvFile(path, kind, fields))

    def visit(d: Path, depth: int) -> None:
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            p = Path(e.path)
            try:
                is_dir = e.is_dir()
            except OSError:
                continue
            if is_dir:
                if single is None and depth < _MAX_DEPTH:
                    visit(p, depth + 1)
                continue
            if single is not None and p == single:
                continue
            if p.suffix.lower() != ".csv":
                continue
            named = split_name(p)
            if named is not None:
                prefix, dom = named
                kind = DOMAIN_KINDS[dom]
                add(p, kind, prefix, read_header(p, kind))
                continue
            if _not_a_trace(p.stem):
                ignored.append(str(p))
                continue
            try:
                line, _ = _first_line(p)
            except OSError:
                ignored.append(str(p))
                continue
            fields = _parse_header(line) if line.strip() else None
            kind = header_kind(fields) if fields else None
            if kind is None or kind == "agents":
                ignored.append(str(p))
                continue
            add(p, kind, None, fields)

    if single is not None:
        named = split_name(single)
        if named is not None:
            prefix, dom = named
            add(single, DOMAIN_KINDS[dom], prefix, read_header(single, DOMAIN_KINDS[dom]))
        else:
            fields = read_header(single, None)
            add(single, header_kind(fields) or "api", None, fields)
    visit(root, 0)
    out = [s for s in sets.values()]
    # a set made only of agent_info (or ignored domains) still contributes devices
    out.sort(key=lambda s: (s.host or "", str(s.dir), s.alone is not None,
                            s.pid if s.pid is not None else -1, s.prefix, s.alone or ""))
    for s in out:
        for files in s.files.values():
            files.sort(key=lambda f: f.path.name)
    return out, ignored


# --------------------------------------------------------------------------- helpers

def _fit(arr: pa.Array | None, type_: pa.DataType, what: str, load: _Load) -> pa.Array | None:
    """Cast to the schema type; values that do not fit become null (and are reported)."""
    if arr is None or arr.type == type_:
        return arr
    try:
        return arr.cast(type_, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    info = np.iinfo(type_.to_pandas_dtype())
    vals = arr.cast(F64) if not pa.types.is_integer(arr.type) else arr
    bad = pc.or_(pc.less(vals, info.min), pc.greater(vals, info.max))
    nbad = int(pc.sum(pc.cast(pc.fill_null(bad, False), I64)).as_py() or 0)
    load.warn(f"{nbad:,} {what} values do not fit in {type_} and were left empty")
    cleaned = pc.if_else(pc.fill_null(bad, False), pa.scalar(None, arr.type), arr)
    return cleaned.cast(type_, safe=False)


def _np(arr: pa.Array | None, fill: int = -1, dtype=np.int64) -> np.ndarray | None:
    if arr is None:
        return None
    if pa.types.is_dictionary(arr.type):
        raise TypeError("dictionary")
    if arr.null_count:
        arr = pc.fill_null(arr, fill)
    return arr.to_numpy(zero_copy_only=False).astype(dtype, copy=False)


def _np_raw(arr: pa.Array) -> np.ndarray:
    """An id column as numpy in its own integer type (-1 for nulls)."""
    if arr.null_count:
        arr = pc.fill_null(arr, -1)
    return arr.to_numpy(zero_copy_only=False)


def _has_values(arr: pa.Array | None) -> bool:
    return arr is not None and arr.null_count < len(arr)


def _null_zero(arr: pa.Array | None) -> pa.Array | None:
    """Correlation id 0 means 'none' in rocprofv3: make it null."""
    if arr is None or len(arr) == 0:
        return arr
    mn = pc.min(arr).as_py()
    if mn is None or mn > 0:
        return arr
    return pc.if_else(pc.equal(arr, 0), pa.scalar(None, arr.type), arr)


def _dict_parts(arr: pa.Array) -> tuple[np.ndarray, list[str]]:
    """Codes (-1 = null or empty text) and dictionary strings of a dictionary array."""
    idx = arr.indices
    codes = (pc.fill_null(idx, -1) if idx.null_count else idx).to_numpy(
        zero_copy_only=False).astype(np.int32, copy=False)
    cats = arr.dictionary.to_pylist()
    empty = [i for i, c in enumerate(cats) if c is None or not str(c).strip()]
    if empty:
        codes = codes.copy()
        codes[np.isin(codes, empty)] = -1
    return codes, [("" if c is None else str(c)) for c in cats]


def _concat(arrays: list[pa.Array | None], lengths: list[int], type_: pa.DataType) -> pa.Array:
    parts = [a if a is not None else pa.nulls(n, type=type_) for a, n in zip(arrays, lengths)]
    if len(parts) == 1:
        return parts[0]
    return pa.concat_arrays(parts)


def _keep_rows(cols: dict[str, Any], mask: np.ndarray) -> dict[str, Any]:
    sel = pa.array(np.nonzero(mask)[0])
    out = {}
    for k, v in cols.items():
        if v is None:
            out[k] = None
        elif isinstance(v, np.ndarray):
            out[k] = v[mask]
        else:
            out[k] = v.take(sel)
    return out


def _check_times(cols: dict[str, Any], what: str, fname: str, load: _Load) -> dict[str, Any]:
    """Drop rows without start/end or ending before they start (reported)."""
    start, end = cols["start"], cols["end"]
    n = len(start)
    if n == 0:
        return cols
    bad = None
    if start.null_count or end.null_count:
        bad = pc.or_(pc.is_null(start), pc.is_null(end))
    rev = pc.less(end, start)
    if rev.null_count:
        rev = pc.fill_null(rev, False)
    bad = rev if bad is None else pc.or_(bad, rev)
    nbad = int(pc.sum(pc.cast(bad, pa.int8())).as_py() or 0) if len(bad) else 0
    if not nbad:
        return cols
    load.warn(f"{fname}: {nbad:,} {what} without a valid start/end (missing, or end before "
              "start) were left out")
    load.drop(f"{what} without valid start/end", nbad)
    return _keep_rows(cols, ~bad.to_numpy(zero_copy_only=False))


# --------------------------------------------------------------------------- agents

_AGENT_NUM = re.compile(r"^\s*(?:agent\s*)?(-?\d+)\s*$", re.I)
_AGENT_TYPED = re.compile(r"^\s*(GPU|CPU)-(\d+)\s*$", re.I)


@dataclass
class _AgentInfo:
    node_id: int | None
    logical: int | None
    type: str
    type_index: int | None
    name: str | None
    product: str | None
    cu: int | None
    vendor: str | None


def _read_agent_info(f: CsvFile, load: _Load) -> list[_AgentInfo]:
    try:
        with open(f.path, newline="", encoding="utf-8", errors="replace") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, csv.Error) as exc:
        raise TraceFormatError(f.path, None, "a rocprofv3 agent_info CSV", str(exc)) from None

    def num(r: dict, k: str) -> int | None:
        v = (r.get(k) or "").strip()
        try:
            return int(v)
        except ValueError:
            return None

    out: list[_AgentInfo] = []
    for r in rows:
        if None in r:   # torn / extra fields
            r = {k: v for k, v in r.items() if k is not None}
        t = (r.get("Agent_Type") or "").strip().upper()
        if not t:
            continue
        out.append(_AgentInfo(
            num(r, "Node_Id"), num(r, "Logical_Node_Id"), t,
            num(r, "Logical_Node_Type_Id"),
            (r.get("Name") or "").strip() or None,
            (r.get("Product_Name") or r.get("Marketing_Name") or "").strip() or None,
            num(r, "Cu_Count"),
            (r.get("Vendor_Name") or "").strip() or None))
    for typ in {a.type for a in out}:
        same = sorted((a for a in out if a.type == typ),
                      key=lambda a: (a.logical if a.logical is not None else 1 << 30,
                                     a.node_id or 0))
        for i, a in enumerate(same):
            if a.type_index is None:
                a.type_index = i
    return out


def _resolve(text: str, infos: list[_AgentInfo]) -> _AgentInfo | None:
    if not infos:
        return None
    m = _AGENT_TYPED.match(text)
    if m:
        typ, k = m.group(1).upper(), int(m.group(2))
        for a in infos:
            if a.type == typ and a.type_index == k:
                return a
        return None
    m = _AGENT_NUM.match(text)
    if not m:
        return None
    k = int(m.group(1))
    for a in infos:
        if a.logical == k:
            return a
    for a in infos:
        if a.node_id == k:
            return a
    return None


def _agent_sort_key(text: str) -> tuple[int, str]:
    m = _AGENT_NUM.match(text) or _AGENT_TYPED.match(text)
    return (int(m.groups()[-1]) if m else 1 << 30, text)


class _Devices:
    """Registry of GPU devices over all sets: agent text -> device index."""

    def __init__(self) -> None:
        self.entries: dict[tuple, dict[str, Any]] = {}

    def add_info(self, host: str | None, a: _AgentInfo, raw: str | None = None) -> tuple:
        key = (host or "", "node", a.node_id if a.node_id is not None else a.logical)
        e = self.entries.get(key)
        if e is None:
            e = {"name": a.product or a.name or f"GPU (node {a.node_id})",
                 "vendor": _vendor(a.vendor), "arch": a.name if (a.name or "").startswith(
                     "gfx") else None,
                 "compute_units": a.cu, "raw_id": raw, "host": host,
                 "order": (host or "", a.logical if a.logical is not None else 1 << 20,
                           a.node_id or 0, "")}
            self.entries[key] = e
        elif raw and not e["raw_id"]:
            e["raw_id"] = raw
        return key

    def add_raw(self, host: str | None, text: str) -> tuple:
        key = (host or "", "raw", text)
        if key not in self.entries:
            shown = text if not text.strip().lstrip("-").isdigit() else f"Agent {text.strip()}"
            self.entries[key] = {"name": f"GPU ({shown})", "vendor": "AMD", "arch": None,
                                 "compute_units": None, "raw_id": text, "host": host,
                                 "order": (host or "", *_agent_sort_key(text)[:1], 1 << 20,
                                           text)}
        return key

    def finish(self) -> tuple[dict[tuple, int], dict[str, list]]:
        keys = sorted(self.entries, key=lambda k: self.entries[k]["order"])
        index = {k: i for i, k in enumerate(keys)}
        cols: dict[str, list] = {c: [] for c in ("index", "name", "vendor", "arch",
                                                 "compute_units", "raw_id", "host")}
        for k in keys:
            e = self.entries[k]
            cols["index"].append(index[k])
            for c in ("name", "vendor", "arch", "compute_units", "raw_id", "host"):
                cols[c].append(e[c])
        return index, cols


def _vendor(v: str | None) -> str:
    if not v:
        return "AMD"
    u = v.upper()
    if "AMD" in u or "ADVANCED MICRO" in u:
        return "AMD"
    if "NVIDIA" in u:
        return "NVIDIA"
    return v


# --------------------------------------------------------------------------- per-file parsers

KERNEL_COLUMNS: dict[str, tuple[str, pa.DataType]] = {
    "Agent_Id": ("agent", DICT),
    "Queue_Id": ("queue_raw", I64),
    "Stream_Id": ("stream_raw", I64),
    "Process_Id": ("pid", I32),
    "Thread_Id": ("tid", I64),
    "Dispatch_Id": ("dispatch_id", I64),
    "Kernel_Name": ("name", DICT),
    "Correlation_Id": ("correlation_id", I64),
    "Start_Timestamp": ("start", I64),
    "End_Timestamp": ("end", I64),
    "Private_Segment_Size": ("scratch_bytes", I32),     # <= 6.4
    "Group_Segment_Size": ("lds_bytes", I32),           # <= 6.4
    "LDS_Block_Size": ("lds_bytes", I32),               # 7.0
    "Scratch_Size": ("scratch_bytes", I32),             # 7.0
    "VGPR_Count": ("vgpr", I16),
    "Accum_VGPR_Count": ("accum_vgpr", I16),
    "SGPR_Count": ("sgpr", I16),
    "Workgroup_Size_X": ("block_x", I16),
    "Workgroup_Size_Y": ("block_y", I16),
    "Workgroup_Size_Z": ("block_z", I16),
    "Grid_Size_X": ("grid_x", I32),     # uint32 in the SDK: a wider value is retried
    "Grid_Size_Y": ("grid_y", I32),
    "Grid_Size_Z": ("grid_z", I32),
}
_KERNEL_SCHEMA_TYPES = {
    "pid": I32, "tid": I64, "dispatch_id": I64, "correlation_id": I64, "start": I64,
    "end": I64, "scratch_bytes": I32, "lds_bytes": I32, "vgpr": I16, "accum_vgpr": I16,
    "sgpr": I16, "block_x": I16, "block_y": I16, "block_z": I16, "grid_x": I32,
    "grid_y": I32, "grid_z": I32,
}

API_COLUMNS = {
    "Domain": ("domain", DICT), "Function": ("name", DICT), "Process_Id": ("pid", I32),
    "Thread_Id": ("tid", I64), "Correlation_Id": ("correlation_id", I64),
    "Start_Timestamp": ("start", I64), "End_Timestamp": ("end", I64),
}
COPY_COLUMNS = {
    "Direction": ("direction_raw", DICT), "Stream_Id": ("stream_raw", I64),
    "Source_Agent_Id": ("src_agent", DICT), "Destination_Agent_Id": ("dst_agent", DICT),
    "Correlation_Id": ("correlation_id", I64), "Process_Id": ("pid", I32),
    "Thread_Id": ("tid", I64), "Start_Timestamp": ("start", I64),
    "End_Timestamp": ("end", I64),
}
COUNTER_COLUMNS = {
    "Correlation_Id": ("correlation_id", I64), "Dispatch_Id": ("dispatch_id", I64),
    "Agent_Id": ("agent", DICT), "Queue_Id": ("queue_raw", I64), "Process_Id": ("pid", I32),
    "Thread_Id": ("tid", I64), "Kernel_Name": ("name", DICT),
    "LDS_Block_Size": ("lds_bytes", I32), "Scratch_Size": ("scratch_bytes", I32),
    "VGPR_Count": ("vgpr", I16), "Accum_VGPR_Count": ("accum_vgpr", I16),
    "SGPR_Count": ("sgpr", I16), "Counter_Name": ("counter", DICT),
    "Counter_Value": ("value", F64), "Start_Timestamp": ("start", I64),
    "End_Timestamp": ("end", I64),
}
OPERATION_COLUMNS = {"Operation": ("operation", DICT), "Allocation_Size": ("bytes", I64),
                     "Agent_Id": ("agent", DICT)}


def _read_columns(f: CsvFile, spec: dict[str, tuple[str, pa.DataType]], load: _Load
                  ) -> tuple[dict[str, pa.Array], int]:
    """Read the spec's columns of one file; canonical name -> combined array."""
    types = {h: t for h, (_c, t) in spec.items()}
    if ("Queue_Id" in types and "Thread_Id" in f.fields and "Dispatch_Id" in f.fields
            and f.kind == "kernels"):
        # >= 6.3 prints small sequential queue/stream ids (6.2: raw queue pointers);
        # a wider value is retried as int64 by CsvFile.read
        types["Queue_Id"] = I32
        types["Stream_Id"] = I32
    table = f.read(types, load)
    n = table.num_rows
    present = [h for h in spec if h in table.column_names]
    chunked = {h: table.column(h) for h in present}
    del table
    pool = pa.default_memory_pool()

    def combine(h: str) -> pa.Array:
        ch = chunked.pop(h)
        arr = (ch.chunk(0) if ch.num_chunks == 1 else
               pa.array([], type=ch.type) if ch.num_chunks == 0 else ch.combine_chunks())
        del ch                                   # free this column's chunks now
        if n > 1_000_000:
            pool.release_unused()                # and give their pages back: peak RSS
        return arr

    if n > 200_000:                              # one contiguous array per column, 2 at once
        with ThreadPoolExecutor(2) as ex:
            arrays = list(ex.map(combine, present))
    else:
        arrays = [combine(h) for h in present]
    out: dict[str, pa.Array] = {}
    for h, arr in zip(present, arrays):
        canon = spec[h][0]
        if canon in out and arr.null_count == len(arr):
            continue
        out[canon] = arr
    return out, n


def _layout_of_kernels(fields: list[str], agents: list[str]) -> str:
    f = set(fields)
    if "Stream_Id" in f or "LDS_Block_Size" in f or any(a.startswith("Agent") for a in agents):
        return ">=7.0"
    if "Thread_Id" in f or "Dispatch_Id" in f:
        return "6.3"
    return "<=6.2"


def _layout_of_counters(fields: list[str], agents: list[str]) -> str:
    f = set(fields)
    if any(a.startswith("Agent") for a in agents):
        return ">=7.0"
    if "Accum_VGPR_Count" in f:
        return "6.4"
    if "Kernel_Id" in f or "Start_Timestamp" in f:
        return "6.3"
    return "<=6.2"


_LAYOUT_RANK = {"<=6.2": 0, "6.3": 1, "6.4": 2, ">=7.0": 3}


# --------------------------------------------------------------------------- set reading

@dataclass
class _Part:
    """Tables of one set before device/queue/stream ids are made global."""

    s: _Set
    kernels: dict[str, Any] | None = None
    api: dict[str, Any] | None = None
    markers: dict[str, Any] | None = None
    copies: dict[str, Any] | None = None
    counters: dict[str, Any] | None = None
    agents: list[_AgentInfo] = field(default_factory=list)
    gpu_texts: set[str] = field(default_factory=set)
    cpu_texts: set[str] = field(default_factory=set)


def _read_api_like(files: list[CsvFile], s: _Set, load: _Load, progress) -> dict | None:
    parts, lengths = [], []
    for f in files:
        cols, n = _read_columns(f, API_COLUMNS, load)
        progress(f)
        if "pid" not in cols and s.pid is not None:
            cols["pid"] = pa.array(np.full(n, s.pid, dtype=np.int32))
        cols["correlation_id"] = _null_zero(cols.get("correlation_id"))
        cols = _check_times(cols, "rows", f.path.name, load)
        doms = cols["domain"].dictionary.to_pylist() if "domain" in cols else []
        if any(str(d).endswith("_EXT") for d in doms if d):
            load.layout.add(">=7.0")
        parts.append(cols)
        lengths.append(len(cols["start"]))
    if not parts:
        return None
    names = ("name", "domain", "pid", "tid", "correlation_id", "start", "end")
    types = {"name": DICT, "domain": DICT, "pid": I32, "tid": I64, "correlation_id": I64,
             "start": I64, "end": I64}
    out = {c: _concat([p.get(c) for p in parts], lengths, types[c]) for c in names}
    for c in ("name", "domain"):
        if out[c].null_count:
            out[c] = pc.fill_null(out[c].cast(pa.string()), "").dictionary_encode()
    return out


def _dedupe_api(api: dict[str, Any], s: _Set, load: _Load) -> dict[str, Any]:
    """Rows present in two files (7.0 docs: hip_trace.csv holds hip_compile_trace.csv's
    rows) are kept once."""
    n = len(api["start"])
    if n < 2:
        return api
    corr = _np(api["correlation_id"], -1)
    pid = _np(api["pid"], -1)
    key = (pid.astype(np.int64) << 40) ^ corr
    order = np.argsort(key, kind="stable")
    sk = key[order]
    same = np.nonzero(sk[1:] == sk[:-1])[0]
    if len(same) == 0 or len(same) > 1_000_000:
        return api
    start, end = _np(api["start"]), _np(api["end"])
    ncode, _ = _dict_parts(api["name"])
    dcode, _ = _dict_parts(api["domain"])
    tid = _np(api["tid"], -1)
    keep = np.ones(n, dtype=bool)
    seen: set[tuple] = set()
    cand = np.unique(np.concatenate([order[same], order[same + 1]]))
    for i in cand.tolist():
        t = (key[i], start[i], end[i], ncode[i], dcode[i], tid[i])
        if t in seen:
            keep[i] = False
        else:
            seen.add(t)
    ndup = int((~keep).sum())
    if not ndup:
        return api
    load.warn(f"{s.label}: {ndup:,} API rows appear in more than one "
              "file (e.g. hip_trace.csv and hip_compile_trace.csv); kept once")
    return _keep_rows(api, keep)


def _marker_depth(pid: np.ndarray, tid: np.ndarray, start: np.ndarray,
                  end: np.ndarray) -> np.ndarray:
    """Nesting depth per (pid, tid) from the intervals (0 = outermost)."""
    n = len(start)
    depth = np.zeros(n, dtype=np.int16)
    if n == 0:
        return depth
    order = np.lexsort((-end, start, tid, pid))
    p, t, s, e = pid[order].tolist(), tid[order].tolist(), start[order].tolist(), end[order].tolist()
    out = [0] * n
    stack: list[int] = []
    prev = None
    for j in range(n):
        g = (p[j], t[j])
        if g != prev:
            stack, prev = [], g
        sj = s[j]
        while stack and stack[-1] <= sj:
            stack.pop()
        if stack and stack[0] <= sj:
            stack = [x for x in stack if x > sj]
        out[j] = len(stack)
        stack.append(e[j])
    depth[order] = np.minimum(np.array(out, dtype=np.int64), np.iinfo(np.int16).max)
    return depth


_DIRECTIONS = {"HOST_TO_DEVICE": "HtoD", "DEVICE_TO_HOST": "DtoH",
               "DEVICE_TO_DEVICE": "DtoD", "HOST_TO_HOST": "HtoH",
               "PEER_TO_PEER": "PtoP", "DEVICE_TO_PEER": "PtoP"}


def _norm_direction(raw: str) -> str:
    d = raw.strip().upper()
    if d.startswith("MEMORY_COPY_"):
        d = d[len("MEMORY_COPY_"):]
    return _DIRECTIONS.get(d, "other")


def _read_copies(files: list[CsvFile], s: _Set, load: _Load, part: _Part, progress) -> dict | None:
    parts, lengths = [], []
    for f in files:
        cols, n = _read_columns(f, COPY_COLUMNS, load)
        progress(f)
        cols["correlation_id"] = _null_zero(cols.get("correlation_id"))
        if "pid" not in cols and s.pid is not None:
            cols["pid"] = pa.array(np.full(n, s.pid, dtype=np.int32))
        cols = _check_times(cols, "copies", f.path.name, load)
        dirs = cols["direction_raw"].dictionary.to_pylist()
        if any(d and not str(d).startswith("MEMORY_COPY_") for d in dirs):
            load.layout.add("<=6.2")
        elif dirs and "stream_raw" not in cols:
            load.layout.add("6.3")
        if "stream_raw" in cols:
            load.layout.add(">=7.0")
        parts.append(cols)
        lengths.append(len(cols["start"]))
    if not parts:
        return None
    types = {"direction_raw": DICT, "stream_raw": I64, "src_agent": DICT, "dst_agent": DICT,
             "correlation_id": I64, "pid": I32, "tid": I64, "start": I64, "end": I64}
    out = {c: _concat([p.get(c) for p in parts], lengths, t) for c, t in types.items()
           if c in ("direction_raw", "src_agent", "dst_agent", "start", "end")
           or any(p.get(c) is not None for p in parts)}
    # direction per row, and which agents are host / device sides
    dcodes, dcats = _dict_parts(out["direction_raw"])
    norm = np.array([_norm_direction(c) for c in dcats] + ["other"], dtype=object)
    unknown = sorted({c for c in dcats if _norm_direction(c) == "other"})
    if unknown:
        load.warn(f"memory copy directions {unknown} are not host/device copies; shown as "
                  "'other'")
    row_dir = norm[dcodes]      # -1 -> "other"
    out["_dir"] = row_dir
    for side, host_dirs, dev_dirs in (("src_agent", ("HtoD", "HtoH"), ("DtoH", "DtoD", "PtoP")),
                                      ("dst_agent", ("DtoH", "HtoH"), ("HtoD", "DtoD", "PtoP"))):
        codes, cats = _dict_parts(out[side])
        for ci, text in enumerate(cats):
            if not text.strip():
                continue
            rows = codes == ci
            if not rows.any():
                continue
            dd = set(row_dir[rows].tolist())
            if dd & set(dev_dirs):
                part.gpu_texts.add(text)
            elif dd & set(host_dirs):
                part.cpu_texts.add(text)
    return out


def _read_kernels(files: list[CsvFile], s: _Set, load: _Load, progress) -> dict | None:
    parts, lengths = [], []
    for f in files:
        cols, n = _read_columns(f, KERNEL_COLUMNS, load)
        progress(f)
        agents = cols["agent"].dictionary.to_pylist() if "agent" in cols else []
        load.layout.add(_layout_of_kernels(f.fields, [a for a in agents if a]))
        for c, t in _KERNEL_SCHEMA_TYPES.items():
            if c in cols:
                cols[c] = _fit(cols[c], t, f"{f.path.name} {c}", load)
        cols["correlation_id"] = _null_zero(cols.get("correlation_id"))
        if "pid" not in cols and s.pid is not None:
            cols["pid"] = pa.array(np.full(n, s.pid, dtype=np.int32))
        cols = _check_times(cols, "kernels", f.path.name, load)
        if "name" in cols and cols["name"].null_count:
            cols["name"] = pc.fill_null(cols["name"].cast(pa.string()), "").dictionary_encode()
        # kernels without an agent cannot be placed on a device
        if cols["agent"].null_count:
            ok = cols["agent"].is_valid().to_numpy(zero_copy_only=False)
            nbad = int((~ok).sum())
            load.warn(f"{f.path.name}: {nbad:,} kernels have no Agent_Id and were left out")
            load.drop("kernels without Agent_Id", nbad)
            cols = _keep_rows(cols, ok)
        parts.append(cols)
        lengths.append(len(cols["start"]))
    if not parts:
        return None
    types = {**_KERNEL_SCHEMA_TYPES, "agent": DICT, "name": DICT, "queue_raw": I64,
             "stream_raw": I64}
    keys = [k for k in types if any(k in p for p in parts)]
    return {k: _concat([p.get(k) for p in parts], lengths, types[k]) for k in keys}


def _read_counters(files: list[CsvFile], s: _Set, load: _Load, progress) -> dict | None:
    parts, lengths = [], []
    for f in files:
        cols, n = _read_columns(f, COUNTER_COLUMNS, load)
        progress(f)
        agents = cols["agent"].dictionary.to_pylist() if "agent" in cols else []
        load.layout.add(_layout_of_counters(f.fields, [a for a in agents if a]))
        cols["correlation_id"] = _null_zero(cols.get("correlation_id"))
        if "pid" not in cols and s.pid is not None:
            cols["pid"] = pa.array(np.full(n, s.pid, dtype=np.int32))
        cols["_has_times"] = pa.array(np.full(n, "start" in cols and "end" in cols))
        if "counter" in cols and cols["counter"].null_count:
            cols["counter"] = pc.fill_null(cols["counter"].cast(pa.string()),
                                           "").dictionary_encode()
        if cols.get("value") is not None and cols["value"].null_count:
            ok = cols["value"].is_valid().to_numpy(zero_copy_only=False)
            load.warn(f"{f.path.name}: {int((~ok).sum()):,} counter rows have no value and "
                      "were left out")
            load.drop("counter rows without a value", int((~ok).sum()))
            cols = _keep_rows(cols, ok)
        parts.append(cols)
        lengths.append(len(cols["counter"]))
    if not parts:
        return None
    types = {v[0]: v[1] for v in COUNTER_COLUMNS.values()}
    types["_has_times"] = pa.bool_()
    keys = [k for k in types if any(k in p for p in parts)]
    return {k: _concat([p.get(k) for p in parts], lengths, types[k]) for k in keys}


def _summarise_ops(files: list[CsvFile], what: str, load: _Load, summary: dict, progress) -> None:
    for f in files:
        cols, n = _read_columns(f, OPERATION_COLUMNS, load)
        progress(f)
        ops: dict[str, int] = {}
        if "operation" in cols and n:
            vc = pc.value_counts(cols["operation"].cast(pa.string()))
            for item in vc.to_pylist():
                ops[str(item["values"])] = int(item["counts"])
        entry = summary.setdefault(what, {"rows": 0, "operations": {}})
        entry["rows"] += n
        for k, v in ops.items():
            entry["operations"][k] = entry["operations"].get(k, 0) + v
        if "bytes" in cols and n and what == "memory_allocation":
            entry["allocated_bytes"] = entry.get("allocated_bytes", 0) + int(
                pc.sum(cols["bytes"]).as_py() or 0)
        if n:
            load.warn(f"{f.path.name}: {n:,} {what.replace('_', ' ')} events are summarised in "
                      f"meta['{what}'] only (hipscope has no table for them)")


# --------------------------------------------------------------------------- linking

def _unique_link(k_corr: np.ndarray, k_pid: np.ndarray | None, a_corr: np.ndarray,
                 a_pid: np.ndarray | None) -> tuple[np.ndarray, int, int]:
    """Row in the API table of each kernel/copy with the same correlation id (and pid);
    -1 where none or where several API rows share the id. Returns (index, missing,
    ambiguous) counts over rows that have a correlation id."""
    has = k_corr >= 0
    a_corr = np.where(a_corr >= 0, a_corr, -2)       # null API ids never match
    idx = link_by_correlation(k_corr, k_pid, a_corr, a_pid)
    if k_pid is not None and a_pid is not None:
        akey = (a_pid.astype(np.int64) << 40) ^ a_corr.astype(np.int64)
        kkey = (k_pid.astype(np.int64) << 40) ^ k_corr.astype(np.int64)
    else:
        akey, kkey = a_corr.astype(np.int64), k_corr.astype(np.int64)
    srt = np.sort(akey)
    dups = np.unique(srt[1:][srt[1:] == srt[:-1]])
    amb = np.zeros(len(k_corr), dtype=bool)
    if len(dups):
        amb = np.isin(kkey, dups) & has
        idx[amb] = -1
    idx[~has] = -1
    missing = int((has & (idx < 0) & ~amb).sum())
    return idx, missing, int(amb.sum())


def _link_to_api(rows: dict, what: str, s: _Set, api: dict | None, load: _Load) -> None:
    n = len(rows["start"])
    corr_arr = rows.get("correlation_id")
    if api is None or n == 0:
        return
    nnull = n if corr_arr is None else corr_arr.null_count
    if nnull:
        load.warn(f"{s.label}: {nnull:,} {what} have no correlation id (Correlation_Id 0 or "
                  "empty) and cannot be linked to an API call")
    if nnull == n:
        return
    k_corr = _np(corr_arr, -1)
    a_corr = _np(api["correlation_id"], -1)
    a_pid = _np(api["pid"], -1)
    k_pid = _np(rows.get("pid"), -1) if _has_values(rows.get("pid")) else None
    if k_pid is not None and not np.isin(np.unique(k_pid), a_pid).any():
        load.warn(f"{s.label}: the {what}' process id {int(k_pid[0])} does not appear in the "
                  "API files' Process_Id; linked by correlation id alone")
        k_pid = None
    use_pid = k_pid is not None
    idx, missing, amb = _unique_link(k_corr, k_pid if use_pid else None, a_corr,
                                     a_pid if use_pid else None)
    rows["api_index"] = idx
    where = s.label
    if missing:
        load.warn(f"{where}: {missing:,} {what} have no matching API call (correlation ids "
                  "not found in the API trace files)")
    if amb:
        load.warn(f"{where}: {amb:,} {what} have a correlation id shared by several API rows "
                  "(files from different runs or processes?); left unlinked")


def _link_counters(cnt: dict, kern: dict | None, s: _Set, load: _Load) -> None:
    """counters.kernel_index (set-local) by (pid, Dispatch_Id), else Correlation_Id."""
    n = len(cnt["counter"])
    cnt["kernel_index"] = np.full(n, -1, dtype=np.int32)
    if kern is None or not len(kern["start"]) or n == 0:
        return
    for col in ("dispatch_id", "correlation_id"):
        if kern.get(col) is None or cnt.get(col) is None:
            continue
        if kern[col].null_count == len(kern[col]) or cnt[col].null_count == n:
            continue
        k_id, c_id = _np(kern[col], -1), _np(cnt[col], -1)
        k_pid = _np(kern.get("pid"), -1) if _has_values(kern.get("pid")) else None
        c_pid = _np(cnt.get("pid"), -1) if _has_values(cnt.get("pid")) else None
        if k_pid is None or c_pid is None or not np.isin(np.unique(c_pid), k_pid).any():
            k_pid = c_pid = None
        # reverse roles: each counter row looks up its kernel
        idx, missing, amb = _unique_link(c_id, c_pid, k_id, k_pid)
        # a counter row whose kernel name differs from the kernel's is not that kernel
        if kern.get("name") is not None and cnt.get("name") is not None:
            hit = idx >= 0
            if hit.any():
                kn = kern["name"].take(pa.array(idx[hit])).cast(pa.string())
                cn = cnt["name"].filter(pa.array(hit)).cast(pa.string())
                same = pc.fill_null(pc.equal(kn, cn), True).to_numpy(zero_copy_only=False)
                if not same.all():
                    bad = np.nonzero(hit)[0][~same]
                    idx[bad] = -1
                    load.warn(f"{s.label}: {len(bad):,} counter rows name a different kernel "
                              f"than the kernel_trace dispatch with the same {col}; left "
                              "unlinked")
        cnt["kernel_index"] = idx
        unl = int((idx < 0).sum())
        if unl:
            load.warn(f"{s.label}: {unl:,} counter rows have no matching kernel dispatch "
                      f"(by {col})")
        return
    load.warn(f"{s.label}: counter rows cannot be linked to kernels (no common Dispatch_Id or "
              "Correlation_Id)")


def _kernels_from_counters(cnt: dict, s: _Set, load: _Load) -> dict | None:
    """Kernels built from the counter rows' distinct dispatches (no kernel_trace)."""
    n = len(cnt["counter"])
    cnt["kernel_index"] = np.full(n, -1, dtype=np.int32)
    if n == 0:
        return None
    idcol = "dispatch_id" if cnt.get("dispatch_id") is not None else "correlation_id"
    if cnt.get(idcol) is None:
        load.warn(f"{s.label}: counter rows have neither Dispatch_Id nor Correlation_Id; no "
                  "kernels can be built from them")
        return None
    ids = _np(cnt[idcol], -1)
    pid = _np(cnt.get("pid"), -1) if cnt.get("pid") is not None else np.full(n, -1)
    key = (pid.astype(np.int64) << 40) ^ ids
    _uk, first, inv = np.unique(key, return_index=True, return_inverse=True)
    has_times = "start" in cnt and "end" in cnt
    first_rows = pa.array(first)
    if has_times:
        start = cnt["start"].take(first_rows)
        end = cnt["end"].take(first_rows)
        ok = pc.and_(pc.and_(start.is_valid(), end.is_valid()),
                     pc.fill_null(pc.greater_equal(end, start), False)).to_numpy(
                         zero_copy_only=False)
    else:
        ok = np.zeros(len(first), dtype=bool)
    nk = len(first)
    if not ok.any():
        load.warn(f"{s.label}: counter_collection has {nk:,} dispatches but no "
                  "Start/End_Timestamp (ROCm <= 6.3 layout) and there is no kernel_trace: "
                  "no kernels are shown; counters keep no kernel link")
        return None
    if not ok.all():
        load.warn(f"{s.label}: {int((~ok).sum()):,} counter dispatches have no valid start/end "
                  "and are not shown as kernels; their counters keep no kernel link")
        load.drop("counter dispatches without times", int((~ok).sum()))
    keep = np.nonzero(ok)[0]
    new_index = np.full(nk, -1, dtype=np.int32)
    new_index[keep] = np.arange(len(keep), dtype=np.int32)
    cnt["kernel_index"] = new_index[inv]
    rows = pa.array(first[keep])
    kern: dict[str, Any] = {}
    for c in ("agent", "name", "queue_raw", "pid", "tid", "correlation_id", "dispatch_id",
              "start", "end", "lds_bytes", "scratch_bytes", "vgpr", "accum_vgpr", "sgpr"):
        if cnt.get(c) is not None:
            kern[c] = cnt[c].take(rows)
    if "agent" not in kern:
        load.warn(f"{s.label}: counter rows have no Agent_Id; no kernels can be built")
        cnt["kernel_index"] = np.full(n, -1, dtype=np.int32)
        return None
    load.provenance["kernels (from counters)"] = (
        "built from counter_collection.csv's distinct dispatches (no kernel_trace.csv); "
        "Grid_Size/Workgroup_Size are products and are not split into x/y/z")
    return kern


# --------------------------------------------------------------------------- queues/streams

class _Numbering:
    """Global small ids for (process, device, raw id) queues or (process, raw) streams."""

    @staticmethod
    def local(dev: np.ndarray, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Distinct (device, raw) pairs and each row's pair code (-1 where raw < 0)."""
        n = len(raw)
        if n == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32)
        lo, hi = int(raw.min()), int(raw.max())
        ndev = int(dev.max()) + 1
        if lo >= 0 and hi < (1 << 16) and ndev * (hi + 1) <= (1 << 22):
            # fast path (the common case): small printed ids, no nulls; int32 throughout
            nraw = hi + 1
            combined = dev.astype(np.int32) * np.int32(nraw) + raw.astype(np.int32, copy=False)
            present = np.bincount(combined, minlength=ndev * nraw) > 0
            lut = (np.cumsum(present) - 1).astype(np.int32)
            uniq = np.nonzero(present)[0]
            return uniq // nraw, uniq % nraw, lut[combined]
        valid = raw >= 0
        if not valid.any():
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.full(n, -1, np.int32)
        rmax = int(raw[valid].max())
        if rmax < (1 << 16):
            r_codes, r_vals = np.where(valid, raw, 0), None
            nraw = rmax + 1
        else:
            enc = pc.dictionary_encode(pa.array(np.where(valid, raw, -1)))
            r_codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            r_vals = enc.dictionary.to_numpy(zero_copy_only=False)
            nraw = len(r_vals)
        d = dev.astype(np.int64)
        ndev = int(d.max()) + 1 if len(d) else 1
        combined = d * nraw + r_codes
        if ndev * nraw <= (1 << 22):
            present = np.bincount(combined[valid], minlength=ndev * nraw) > 0
            pos = np.cumsum(present) - 1
            code = np.where(valid, pos[combined], -1).astype(np.int32)
            uniq = np.nonzero(present)[0]
        else:
            enc = pc.dictionary_encode(pa.array(np.where(valid, combined, -1)))
            uniq_all = enc.dictionary.to_numpy(zero_copy_only=False)
            codes_all = enc.indices.to_numpy(zero_copy_only=False)
            keep = uniq_all >= 0
            remap = np.full(len(uniq_all), -1, np.int64)
            remap[keep] = np.arange(int(keep.sum()))
            code = remap[codes_all].astype(np.int32)
            uniq = uniq_all[keep]
        u_dev = uniq // nraw
        u_raw = uniq % nraw
        if r_vals is not None:
            u_raw = r_vals[u_raw]
        return u_dev, u_raw, code

    @staticmethod
    def assign(groups: list[tuple[int, np.ndarray, np.ndarray]]) -> tuple[list[np.ndarray], str]:
        """Ids for each group's pairs: the printed ids when they are small and no two
        processes share one on a device; else 0..k-1 per device in (process, raw) order."""
        seen: dict[tuple[int, int], int] = {}
        clash = False
        small = True
        for order, devs, raws in groups:
            for d, r in zip(devs.tolist(), raws.tolist()):
                if r >= (1 << 31):
                    small = False
                if seen.setdefault((d, r), order) != order:
                    clash = True
        if small and not clash:
            return [raws.astype(np.int64) for _o, _d, raws in groups], "printed"
        allp = sorted({(d, o, r) for o, devs, raws in groups
                       for d, r in zip(devs.tolist(), raws.tolist())})
        num: dict[tuple[int, int, int], int] = {}
        per_dev: dict[int, int] = {}
        for d, o, r in allp:
            num[(d, o, r)] = per_dev.get(d, 0)
            per_dev[d] = per_dev.get(d, 0) + 1
        out = [np.array([num[(d, o, r)] for d, r in zip(devs.tolist(), raws.tolist())],
                        dtype=np.int64) for o, devs, raws in groups]
        return out, "numbered"


# --------------------------------------------------------------------------- the reader

def _sniff_dir(path: Path) -> float:
    best = 0.0
    stack = [(path, 0)]
    seen = 0
    while stack:
        d, depth = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            seen += 1
            if seen > 5000:
                return best
            try:
                if e.is_dir():
                    if depth < 2:
                        stack.append((Path(e.path), depth + 1))
                    continue
            except OSError:
                continue
            named = split_name(Path(e.name))
            if named and DOMAIN_KINDS[named[1]] in TRACE_KINDS:
                best = max(best, 0.95 if depth == 0 else 0.9)
    return best


@register
class RocprofV3CsvReader:
    name = "rocprofv3-csv"
    description = "rocprofv3 CSV set (kernel/hip/hsa/marker/memory-copy traces, counters)"
    patterns = ("*_kernel_trace.csv", "*_hip_api_trace.csv", "*_counter_collection.csv",
                "*_trace.csv", "*.csv")
    priority = 60
    directories = True

    def sniff(self, path: Path) -> float:
        path = Path(path)
        if path.is_dir():
            return _sniff_dir(path)
        if not path.is_file():
            return 0.0
        line, _ = _first_line(path, 8192)
        fields = _parse_header(line) if line.strip() else None
        if not fields:
            return 0.0
        kind = header_kind(fields)
        if kind is None:
            return 0.0
        return 0.9

    # ------------------------------------------------------------------ read
    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        path = Path(path)
        try:
            return self._read(path, progress, cancelled)
        except TraceFormatError:
            raise
        except (MemoryError, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - contract: nothing else escapes read()
            from .base import Cancelled

            if isinstance(exc, Cancelled):
                raise
            raise TraceFormatError(path, None, "a rocprofv3 CSV set hipscope can read",
                                   f"{type(exc).__name__}: {exc}") from exc

    def _read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        load = _Load()
        path = path.absolute()
        if path.is_dir():
            sets, ignored = _discover(path, None)
        elif path.is_file():
            sets, ignored = _discover(path.parent, path)
        else:
            raise TraceFormatError(path, None, "an existing file or folder", "nothing there")
        if not any(k in TRACE_KINDS for s in sets for k in s.files):
            raise TraceFormatError(path, None, "a rocprofv3 CSV set (files such as "
                                   "<pid>_kernel_trace.csv, <pid>_hip_api_trace.csv)",
                                   "no rocprofv3 trace files")
        total = sum(max(f.path.stat().st_size, 1) for s in sets for fs in s.files.values()
                    for f in fs) or 1
        done = [0]

        def step(f: CsvFile) -> None:
            load.sources.append(str(f.path))
            done[0] += max(f.path.stat().st_size, 1)
            progress(min(0.95, 0.95 * done[0] / total))
            check_cancel(cancelled)

        parts: list[_Part] = []
        mem_summary: dict[str, Any] = {}
        for s in sets:
            check_cancel(cancelled)
            parts.append(self._read_set(s, load, step, mem_summary))
        trace = self._assemble(parts, load, ignored, mem_summary)
        progress(1.0)
        return trace

    def _read_set(self, s: _Set, load: _Load, step, mem_summary: dict) -> _Part:
        part = _Part(s)
        for f in s.files.get("agents", []):
            part.agents.extend(_read_agent_info(f, load))
            step(f)
        api_files = list(s.files.get("api", []))
        marker_files = list(s.files.get("markers", []))
        # files classified by header only: markers when their domains are MARKER_*
        for f in list(api_files):
            if split_name(f.path) is None:
                doms = self._peek_domains(f)
                if doms and all(d.startswith("MARKER") for d in doms):
                    api_files.remove(f)
                    marker_files.append(f)
        if api_files:
            part.api = _read_api_like(api_files, s, load, step)
            if part.api is not None:
                part.api = _dedupe_api(part.api, s, load)
        if marker_files:
            part.markers = _read_api_like(marker_files, s, load, step)
        if s.files.get("kernels"):
            part.kernels = _read_kernels(s.files["kernels"], s, load, step)
        if s.files.get("copies"):
            part.copies = _read_copies(s.files["copies"], s, load, part, step)
        if s.files.get("counters"):
            part.counters = _read_counters(s.files["counters"], s, load, step)
        if s.files.get("memalloc"):
            _summarise_ops(s.files["memalloc"], "memory_allocation", load, mem_summary, step)
        if s.files.get("scratch"):
            _summarise_ops(s.files["scratch"], "scratch_memory", load, mem_summary, step)
        # counters <-> kernels
        if part.counters is not None:
            if part.kernels is not None:
                _link_counters(part.counters, part.kernels, s, load)
            else:
                part.kernels = _kernels_from_counters(part.counters, s, load)
        # kernels/copies -> api
        if part.kernels is not None:
            _link_to_api(part.kernels, "kernels", s, part.api, load)
        if part.copies is not None:
            _link_to_api(part.copies, "copies", s, part.api, load)
        # which agent texts are GPUs
        for tbl in (part.kernels, part.counters):
            if tbl is not None and tbl.get("agent") is not None:
                _c, cats = _dict_parts(tbl["agent"])
                codes = np.unique(_c[_c >= 0])
                part.gpu_texts.update(cats[i] for i in codes.tolist())
        return part

    @staticmethod
    def _peek_domains(f: CsvFile) -> list[str]:
        try:
            with open(f.path, newline="", encoding="utf-8", errors="replace") as fh:
                rd = csv.DictReader(fh)
                out = []
                for i, row in enumerate(rd):
                    if i >= 50:
                        break
                    out.append((row.get("Domain") or "").strip())
                return [d for d in out if d]
        except (OSError, csv.Error):
            return []

    # ------------------------------------------------------------------ assembly
    def _assemble(self, parts: list[_Part], load: _Load, ignored: list[str],
                  mem_summary: dict) -> Trace:
        # ---- devices
        devs = _Devices()
        host_infos: dict[str, list[_AgentInfo]] = {}
        for p in parts:
            host_infos.setdefault(p.s.host or "", []).extend(p.agents)
        luts: list[dict[str, int | None]] = []
        text_keys: list[dict[str, tuple | None]] = []
        for p in parts:
            infos = p.agents or host_infos.get(p.s.host or "", [])
            for a in infos:
                if a.type == "GPU":
                    devs.add_info(p.s.host, a)
            tk: dict[str, tuple | None] = {}
            for text in sorted(p.gpu_texts | p.cpu_texts):
                a = _resolve(text, infos)
                if a is not None:
                    tk[text] = devs.add_info(p.s.host, a, text) if a.type == "GPU" else None
                    continue
                if infos and text in p.gpu_texts:
                    load.warn(f"agent {text!r} is not in agent_info.csv; shown as an unnamed GPU")
                tk[text] = devs.add_raw(p.s.host, text) if text in p.gpu_texts else None
            text_keys.append(tk)
        if any(p.agents for p in parts):
            load.provenance["devices"] = ("agent_info.csv (Agent_Id matched to "
                                          "Logical_Node_Id, then Node_Id; GPU-N = N-th GPU)")
        else:
            load.provenance["devices"] = ("no agent_info.csv: GPUs named from their Agent_Id; "
                                          "copy agents on the host side of a copy are CPUs")
        dev_index, dev_cols = devs.finish()
        for tk in text_keys:
            luts.append({t: (dev_index[k] if k is not None else None) for t, k in tk.items()})

        def map_agents(arr: pa.Array, lut: dict[str, int | None]) -> np.ndarray:
            codes, cats = _dict_parts(arr)
            table = np.array([(-1 if lut.get(c) is None else lut[c]) for c in cats] + [-1],
                             dtype=np.int16)
            return table[codes]

        # ---- kernels/copies device arrays (per part)
        k_dev: list[np.ndarray | None] = []
        c_cols: list[dict[str, np.ndarray] | None] = []
        for p, lut in zip(parts, luts):
            if p.kernels is not None:
                d = map_agents(p.kernels["agent"], lut)
                bad = d < 0
                if bad.any():  # agent is a CPU per agent_info: still show it, unnamed
                    for text in {p.kernels["agent"].dictionary[i].as_py() for i in np.unique(
                            p.kernels["agent"].indices.to_numpy(zero_copy_only=False)[bad])}:
                        load.warn(f"kernels on agent {text!r}, which agent_info.csv says is not "
                                  "a GPU")
                    d = np.where(bad, 0, d).astype(np.int16)
                    if not len(dev_cols["index"]):
                        dev_cols = {"index": [0], "name": ["GPU (unknown)"], "vendor": ["AMD"],
                                    "arch": [None], "compute_units": [None], "raw_id": [None],
                                    "host": [None]}
                k_dev.append(d)
            else:
                k_dev.append(None)
            if p.copies is not None:
                src = map_agents(p.copies["src_agent"], lut)
                dst = map_agents(p.copies["dst_agent"], lut)
                dirs = p.copies["_dir"].copy()
                ptop = (dirs == "DtoD") & (src >= 0) & (dst >= 0) & (src != dst)
                if ptop.any():
                    dirs[ptop] = "PtoP"
                    load.provenance["copies.direction"] = (
                        "Direction with MEMORY_COPY_ dropped; DEVICE_TO_DEVICE between two "
                        "different GPUs shown as PtoP")
                dev = np.where(np.isin(dirs, ["HtoD"]), dst,
                               np.where(np.isin(dirs, ["DtoH", "DtoD", "PtoP"]),
                                        np.where(src >= 0, src, dst),
                                        np.where(dirs == "HtoH", -1,
                                                 np.where(dst >= 0, dst, src))))
                c_cols.append({"src": src, "dst": dst, "dev": dev.astype(np.int16),
                               "dir": dirs})
            else:
                c_cols.append(None)

        # ---- queues (kernels) and streams (kernels + copies)
        q_groups, q_codes = [], []
        for i, p in enumerate(parts):
            if p.kernels is not None and p.kernels.get("queue_raw") is not None:
                u_dev, u_raw, code = _Numbering.local(k_dev[i],
                                                      _np_raw(p.kernels["queue_raw"]))
                q_groups.append((i, u_dev, u_raw))
                q_codes.append((i, code))
        q_ids, q_mode = _Numbering.assign(q_groups) if q_groups else ([], "printed")
        queue_of: dict[int, np.ndarray] = {}
        queue_rows: list[tuple[int, int, str, str]] = []
        qpair_of: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for (i, code), (_o, u_dev, u_raw), ids in zip(q_codes, q_groups, q_ids):
            lut = np.append(ids, -1).astype(np.int32)
            queue_of[i] = lut[code]
            qpair_of[i] = (code, u_dev, ids)
            pid = parts[i].s.pid
            for d, r, q in zip(u_dev.tolist(), u_raw.tolist(), ids.tolist()):
                queue_rows.append((int(d), int(q), str(r),
                                   f"Queue {r}" + (f" (pid {pid})" if pid is not None else "")))
        if q_mode == "numbered":
            load.provenance["queues"] = ("Queue_Id numbered 0..k-1 per device (raw handles, "
                                         "or ids of several processes); raw id in queues.raw_id")

        s_groups, s_codes = [], []
        for i, p in enumerate(parts):
            raws = []
            if p.kernels is not None and p.kernels.get("stream_raw") is not None:
                raws.append(("k", _np_raw(p.kernels["stream_raw"])))
            if p.copies is not None and p.copies.get("stream_raw") is not None:
                raws.append(("c", _np_raw(p.copies["stream_raw"])))
            if not raws:
                continue
            allr = raws[0][1] if len(raws) == 1 else np.concatenate(
                [r.astype(np.int64) for _w, r in raws])
            u_dev, u_raw, code = _Numbering.local(np.zeros(len(allr), np.int16), allr)
            s_groups.append((i, u_dev, u_raw))
            off = 0
            split = {}
            for w, r in raws:
                split[w] = code[off: off + len(r)]
                off += len(r)
            s_codes.append((i, split))
        s_ids, s_mode = _Numbering.assign(s_groups) if s_groups else ([], "printed")
        stream_of: dict[tuple[int, str], np.ndarray] = {}
        stream_rows: list[dict[str, Any]] = []
        for (i, split), (_o, _d, u_raw), ids in zip(s_codes, s_groups, s_ids):
            lut = np.append(ids, -1).astype(np.int32)
            for w, code in split.items():
                stream_of[(i, w)] = lut[code]
            p = parts[i]
            # which (device, queue) each stream's kernels used (7.0: one queue per stream)
            s_dev: dict[int, int] = {}
            s_queue: dict[int, int] = {}
            kc = split.get("k")
            if kc is not None and i in qpair_of:
                qcode, u_dev, q_ids = qpair_of[i]
                npair = len(u_dev)
                ok = (kc >= 0) & (qcode >= 0)
                if npair and ok.any():
                    key = kc[ok].astype(np.int64) * npair + qcode[ok]
                    pres = np.unique(key) if len(u_raw) * npair > (1 << 22) else np.nonzero(
                        np.bincount(key, minlength=len(u_raw) * npair))[0]
                    sj, pj = pres // npair, pres % npair
                    for st in np.unique(sj).tolist():
                        pairs = pj[sj == st]
                        devs = np.unique(u_dev[pairs])
                        if len(devs) == 1:
                            s_dev[st] = int(devs[0])
                        if len(pairs) == 1:
                            s_queue[st] = int(q_ids[pairs[0]])
            for j, (r, sid) in enumerate(zip(u_raw.tolist(), ids.tolist())):
                stream_rows.append({"stream": int(sid), "pid": p.s.pid, "raw_id": str(r),
                                    "device": s_dev.get(j), "queue": s_queue.get(j)})
        if s_mode == "numbered":
            load.provenance["streams"] = ("Stream_Id numbered 0..k-1 over processes; raw id in "
                                          "streams.raw_id")

        # ---- tables
        api_off, kern_off = 0, 0
        K: dict[str, list] = {}
        A: dict[str, list] = {}
        C: dict[str, list] = {}
        M: dict[str, list] = {}
        N: dict[str, list] = {}
        lens = {"k": [], "a": [], "c": [], "m": [], "n": []}

        def push(store: dict, key: str, cols: dict[str, Any], n: int) -> None:
            lens[key].append(n)
            for c in set(store) | set(cols):
                store.setdefault(c, [None] * (len(lens[key]) - 1))
                store[c].append(cols.get(c))

        for i, p in enumerate(parts):
            n_api = len(p.api["start"]) if p.api is not None else 0
            n_k = len(p.kernels["start"]) if p.kernels is not None else 0
            if p.api is not None:
                push(A, "a", {c: p.api[c] for c in ("name", "domain", "start", "end", "pid",
                                                    "tid", "correlation_id")}, n_api)
            if p.kernels is not None:
                k = p.kernels
                cols = {c: k.get(c) for c in ("name", "start", "end", "pid", "tid",
                                              "correlation_id", "dispatch_id", "grid_x",
                                              "grid_y", "grid_z", "block_x", "block_y",
                                              "block_z", "vgpr", "accum_vgpr", "sgpr",
                                              "lds_bytes", "scratch_bytes")}
                cols["device"] = pa.array(k_dev[i])
                if i in queue_of:
                    cols["queue"] = _nullable(queue_of[i], I32)
                if (i, "k") in stream_of:
                    cols["stream"] = _nullable(stream_of[(i, "k")], I32)
                if "api_index" in k:
                    cols["api_index"] = _nullable(k["api_index"], I32, api_off)
                push(K, "k", cols, n_k)
            if p.copies is not None:
                c = p.copies
                cc = c_cols[i]
                n_c = len(c["start"])
                cols = {"direction": pa.array(cc["dir"].astype(str).tolist(), type=pa.string())
                        .dictionary_encode(),
                        "name": c["direction_raw"], "start": c["start"], "end": c["end"],
                        "device": _nullable(cc["dev"], I16),
                        "src_device": _nullable(cc["src"], I16),
                        "dst_device": _nullable(cc["dst"], I16),
                        "pid": c.get("pid"), "tid": c.get("tid"),
                        "correlation_id": c.get("correlation_id")}
                if (i, "c") in stream_of:
                    cols["stream"] = _nullable(stream_of[(i, "c")], I32)
                if "api_index" in c:
                    cols["api_index"] = _nullable(c["api_index"], I32, api_off)
                push(C, "c", cols, n_c)
            if p.markers is not None:
                mk = p.markers
                depth = _marker_depth(_np(mk["pid"], -1), _np(mk["tid"], -1),
                                      _np(mk["start"]), _np(mk["end"]))
                n_m = len(mk["start"])
                push(M, "m", {"name": mk["name"], "domain": pa.array(["roctx"] * n_m)
                              .dictionary_encode(), "start": mk["start"], "end": mk["end"],
                              "depth": pa.array(depth), "pid": mk["pid"], "tid": mk["tid"]},
                     n_m)
            if p.counters is not None:
                cn = p.counters
                push(N, "n", {"counter": cn["counter"], "value": cn["value"],
                              "kernel_index": _nullable(cn["kernel_index"], I32, kern_off),
                              "dispatch_id": cn.get("dispatch_id")}, len(cn["counter"]))
            api_off += n_api
            kern_off += n_k

        def finish(store: dict, key: str, spec: str) -> dict[str, Any]:
            from ..model.schema import SPECS

            out = {}
            for c, arrays in store.items():
                if all(a is None for a in arrays):
                    continue
                out[c] = _concat(arrays, lens[key], SPECS[spec].by_name[c].type)
            return out

        tables: dict[str, Any] = {}
        for store, key, spec in ((K, "k", "kernels"), (A, "a", "api"), (C, "c", "copies"),
                                 (M, "m", "markers"), (N, "n", "counters")):
            if lens[key]:
                cols = finish(store, key, spec)
                tables[spec] = build_table(spec, cols, n=sum(lens[key]))
        tables["devices"] = build_table("devices", dev_cols, n=len(dev_cols["index"]))
        if queue_rows:
            queue_rows.sort()
            tables["queues"] = build_table("queues", {
                "device": [r[0] for r in queue_rows], "queue": [r[1] for r in queue_rows],
                "raw_id": [r[2] for r in queue_rows], "name": [r[3] for r in queue_rows]},
                n=len(queue_rows))
        if stream_rows:
            tables["streams"] = build_table("streams", {
                c: [r[c] for r in stream_rows] for c in ("stream", "device", "queue", "pid",
                                                         "raw_id")}, n=len(stream_rows))

        # ---- meta
        pids: set[int] = {p.s.pid for p in parts if p.s.pid is not None}
        for name in ("api", "markers", "counters"):
            for p in parts:
                t = getattr(p, name)
                if t is not None and t.get("pid") is not None and len(t["pid"]):
                    pids.update(int(x) for x in pc.unique(t["pid"].drop_null()).to_pylist())
        layout = max(load.layout, key=_LAYOUT_RANK.__getitem__) if load.layout else "<=6.4"
        load.provenance.setdefault("kernels.pid", "the file prefix <pid>_kernel_trace.csv "
                                                  "(kernel traces have no Process_Id column)")
        load.provenance.setdefault("correlation_id", "Correlation_Id; 0 (none) read as null")
        load.provenance.setdefault("markers.domain", "roctx (marker_api_trace.csv; Function "
                                                     "holds the message)")
        meta: dict[str, Any] = {
            "format": self.name,
            "sources": load.sources,
            "clock": "CLOCK_BOOTTIME",
            "tool": "rocprofv3",
            "tool_version": layout,
            "layout": layout,
            "pids": sorted(pids),
            "warnings": load.warnings,
            "provenance": load.provenance,
        }
        hosts = sorted({p.s.host for p in parts if p.s.host})
        if len(hosts) == 1:
            meta["host"] = hosts[0]
        elif hosts:
            meta["hosts"] = hosts
        if load.dropped:
            meta["dropped"] = load.dropped
        if ignored:
            meta["ignored_files"] = ignored
        meta.update(mem_summary)
        return Trace(meta=meta, **tables)


def _nullable(values: np.ndarray, type_: pa.DataType, offset: int = 0) -> pa.Array:
    values = np.asarray(values)
    mask = values < 0
    if offset:
        values = values + offset
    return pa.array(values.astype(type_.to_pandas_dtype(), copy=False),
                    mask=mask if mask.any() else None, type=type_)
