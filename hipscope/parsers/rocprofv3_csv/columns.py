"""Typed reads of rocprofv3 CSV files: columns chosen by header name, a torn last line
left out, pyarrow errors turned into TraceFormatError with a line; array helpers."""

from __future__ import annotations

import io
import mmap
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ...model.diagnostics import coded
from ...model.table import from_numpy, scalar, to_numpy
from .. import _fastcsv
from .._common import add_count
from .._csv import cut_reason
from ..base import TraceFormatError

DICT = pa.dictionary(pa.int32(), pa.string())
I16, I32, I64, F64 = pa.int16(), pa.int32(), pa.int64(), pa.float64()
_BLOCK_SIZE = 4 << 20   # pyarrow.csv block: ~12k kernel rows; parsed 2 at a time


def show_value(raw: bytes, n: int = 80) -> str:
    text = raw[:n].decode("utf-8", errors="replace")
    return repr(text + ("..." if len(raw) > n else ""))


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

    A last line without a newline is kept when it has every column, balanced quotes
    and a non-empty last field (rocprofv3's doc excerpts end that way); otherwise it
    is torn (see ``_csv.cut_reason``)."""
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
    if cut_reason(last, ncols, strict=True, unquoted_ok=True) is None:
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

    def read(self, wanted: dict[str, pa.DataType], load: Load) -> pa.Table:
        present = {h: t for h, t in wanted.items() if h in self.fields}
        dup = {h for h in self.fields if self.fields.count(h) > 1}
        if dup:
            raise TraceFormatError(self.path, "line 1", "each column name once",
                                   f"{sorted(dup)} more than once")
        torn = _torn_tail(self.path, len(self.fields))
        types = dict(present)
        for attempt in range(len(types) + 1):
            try:
                table = None
                if attempt == 0:          # big plain files: one pass in C (None: not plain)
                    table = _fastcsv.read_typed(self.path, self.fields, types,
                                                torn[0] if torn else None)
                if table is None:
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
            load.warn(coded("input.cut_short", f"{self.path.name}: the last line (line {line}) "
                            f"is cut short ({show_value(text, 60)}); read the {table.num_rows:,} "
                            "whole rows before it", f"{self.path}:{line}"))
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
            hit = np.nonzero(to_numpy(pc.equal(arr, scalar(value)), False))[0]
            return int(hit[0]) + 2 if len(hit) else None
        except (pa.ArrowException, OSError, ValueError):
            return None


# --------------------------------------------------------------------------- load state

@dataclass
class Load:
    warnings: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    layout: set[str] = field(default_factory=set)
    provenance: dict[str, str] = field(default_factory=dict)

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def drop(self, what: str, n: int) -> None:
        add_count(self.dropped, what, n)


# --------------------------------------------------------------------------- helpers

def fit_dtype(arr: pa.Array | None, type_: pa.DataType, what: str, load: Load) -> pa.Array | None:
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
    cleaned = pc.if_else(pc.fill_null(bad, scalar(False)), pa.nulls(1, arr.type)[0], arr)
    return cleaned.cast(type_, safe=False)


def np_column(arr: pa.Array | None, fill: int = -1, dtype=np.int64) -> np.ndarray | None:
    if arr is None:
        return None
    if pa.types.is_dictionary(arr.type):
        raise TypeError("dictionary")
    return to_numpy(arr, fill).astype(dtype, copy=False)


def np_raw_column(arr: pa.Array) -> np.ndarray:
    """An id column as numpy in its own integer type (-1 for nulls)."""
    return to_numpy(arr, -1)


def has_values(arr: pa.Array | None) -> bool:
    return arr is not None and arr.null_count < len(arr)


def null_zero(arr: pa.Array | None) -> pa.Array | None:
    """Correlation id 0 means 'none' in rocprofv3: make it null."""
    if arr is None or len(arr) == 0:
        return arr
    mn = pc.min(arr).as_py()
    if mn is None or mn > 0:
        return arr
    return pc.if_else(pc.equal(arr, scalar(0, arr.type)), pa.nulls(1, arr.type)[0], arr)


def dict_parts(arr: pa.Array) -> tuple[np.ndarray, list[str]]:
    """Codes (-1 = null or empty text) and dictionary strings of a dictionary array."""
    idx = arr.indices
    codes = to_numpy(idx, -1).astype(np.int32, copy=False)
    cats = arr.dictionary.to_pylist()
    empty = [i for i, c in enumerate(cats) if c is None or not str(c).strip()]
    if empty:
        codes = codes.copy()
        codes[np.isin(codes, empty)] = -1
    return codes, [("" if c is None else str(c)) for c in cats]


def concat(arrays: list[pa.Array | None], lengths: list[int], type_: pa.DataType) -> pa.Array:
    parts = [a if a is not None else pa.nulls(n, type=type_) for a, n in zip(arrays, lengths)]
    if len(parts) == 1:
        return parts[0]
    return pa.concat_arrays(parts)


def keep_rows(cols: dict[str, Any], mask: np.ndarray) -> dict[str, Any]:
    sel = from_numpy(np.nonzero(mask)[0])
    out = {}
    for k, v in cols.items():
        if v is None:
            out[k] = None
        elif isinstance(v, np.ndarray):
            out[k] = v[mask]
        else:
            out[k] = v.take(sel)
    return out


def check_times(cols: dict[str, Any], what: str, fname: str, load: Load) -> dict[str, Any]:
    """Drop rows without start/end (reported). End before start passes through: the
    shared interval rule (``parsers/_intervals.py``) drops those for every reader."""
    start, end = cols["start"], cols["end"]
    if len(start) == 0 or not (start.null_count or end.null_count):
        return cols
    bad = pc.or_(pc.is_null(start), pc.is_null(end))
    nbad = int(pc.sum(pc.cast(bad, pa.int8())).as_py() or 0)
    if not nbad:
        return cols
    load.warn(f"{fname}: {nbad:,} {what} without a start/end timestamp were left out")
    load.drop(f"{what} without start/end", nbad)
    return keep_rows(cols, ~to_numpy(bad))


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
KERNEL_SCHEMA_TYPES = {
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


def column_types(f: CsvFile, spec: dict[str, tuple[str, pa.DataType]]
                 ) -> dict[str, pa.DataType]:
    """Header name -> the type to read it as, for the spec's columns of one file."""
    types = {h: t for h, (_c, t) in spec.items()}
    if ("Queue_Id" in types and "Thread_Id" in f.fields and "Dispatch_Id" in f.fields
            and f.kind == "kernels"):
        # >= 6.3 prints small sequential queue/stream ids (6.2: raw queue pointers);
        # a wider value is retried as int64 by CsvFile.read
        types["Queue_Id"] = I32
        types["Stream_Id"] = I32
    return types


def read_columns(f: CsvFile, spec: dict[str, tuple[str, pa.DataType]], load: Load
                  ) -> tuple[dict[str, pa.Array], int]:
    """Read the spec's columns of one file; canonical name -> combined array."""
    table = f.read(column_types(f, spec), load)
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
