"""CSV helpers shared by the CSV readers (legacy rocprof, rocprof-compute, rocprofv3,
ncu): torn last lines, a CSV read as a table of strings, and text -> number columns
whose errors name the line."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ..model.diagnostics import coded
from ..model.table import from_numpy
from .base import TraceFormatError

# bounds of the schema's integer types, for fit()
I16 = (-(2**15), 2**15 - 1)
I32 = (-(2**31), 2**31 - 1)
I64 = (-(2**63), 2**63 - 1)

# --------------------------------------------------------------------------- torn lines


def count_fields(line: bytes, strict: bool = False) -> int | None:
    """Fields in one CSV line; None when a quote is left open (a torn line) or, with
    ``strict``, when the bytes are not UTF-8."""
    try:
        text = line.decode("utf-8", errors="strict" if strict else "replace").rstrip("\r")
    except UnicodeDecodeError:
        return None
    if text.count('"') % 2:
        return None
    try:
        row = next(csv.reader([text]))
    except (csv.Error, StopIteration):
        return None
    return len(row)


def cut_reason(line: bytes, expected: int | None, strict: bool = False,
               unquoted_ok: bool = False) -> str | None:
    """Why a last line that lacks its newline may be cut short, None when it is surely
    whole: every field there and the last one closed by its quote. Without a newline an
    empty last field (nothing after the last separator) or an unquoted one (``12`` of
    ``1234``) may have lost its end; ``unquoted_ok`` takes a non-empty unquoted last
    field as whole (for formats whose real files end that way). ``strict``: see
    :func:`count_fields`."""
    got = count_fields(line, strict)
    if got is None:
        return "an open quote"
    if got != expected:
        return f"{got} of {expected} fields"
    text = line.rstrip(b"\r")
    if text.endswith(b",") or not text:
        return "nothing after its last separator"
    if not unquoted_ok and not text.endswith(b'"'):
        return "no newline, and its last field may be cut"
    return None


def drop_torn_tail(path: Path, data: bytes, first_line: int, warnings: list[str],
                   dropped: dict[str, int], what: str = "rows",
                   expected: int | None = None) -> bytes:
    """Cut a last line that lacks its newline and may be cut short (see
    :func:`cut_reason`: the file was being written or truncated), reporting it in
    warnings/dropped."""
    if not data or data.endswith(b"\n"):
        return data
    cut = data.rfind(b"\n")
    if cut < 0:
        return data
    last = data[cut + 1:]
    if not last.strip():
        return data
    if expected is None:
        expected = count_fields(data[: data.find(b"\n")])
    why = cut_reason(last, expected)
    if why is None:
        return data
    line_no = first_line + data.count(b"\n")
    shown = last[:60].decode("utf-8", errors="replace")
    warnings.append(coded("input.cut_short", f"{path}: the last line (line {line_no}) is cut "
                          f"short ({why}: {shown!r}); dropped 1 "
                          f"{what[:-1] if what.endswith('s') else what}", f"{path}:{line_no}"))
    dropped[what] = dropped.get(what, 0) + 1
    return data[: cut + 1]


def row_line_numbers(data: bytes, first_line: int) -> list[int]:
    """File line number of each data row (after the header at ``first_line``),
    skipping blank lines like pyarrow does. Only used to name places in errors."""
    out = []
    for i, line in enumerate(data.split(b"\n")[1:]):
        if line.strip(b"\r\t "):
            out.append(first_line + 1 + i)
    return out


class RowPlaces:
    """``where(row)`` -> "line N" of a data row, line numbers counted on first use."""

    def __init__(self, data: bytes, first_line: int = 1):
        self._data, self._first = data, first_line
        self._lines: list[int] | None = None

    def __call__(self, row: int) -> str:
        if self._lines is None:
            self._lines = row_line_numbers(self._data, self._first)
        return f"line {self._lines[row]}" if row < len(self._lines) else f"row {row + 1}"


# --------------------------------------------------------------------------- string tables


def _header(path: Path, data: bytes, first_line: int) -> list[str]:
    nl = data.find(b"\n")
    head = data if nl < 0 else data[:nl]
    text = head.decode("utf-8-sig", errors="replace").rstrip("\r")
    if not text.strip():
        raise TraceFormatError(path, f"line {first_line}", "a CSV header line",
                               "an empty line" if data else "an empty file")
    try:
        return next(csv.reader([text]))
    except csv.Error as exc:
        raise TraceFormatError(path, f"line {first_line}", "a CSV header line", str(exc)) from None


def _bad_row_error(path: Path, data: bytes, first_line: int, bad: tuple) -> TraceFormatError:
    expected, actual, text = bad
    line = first_line
    target = text.encode("utf-8", errors="replace")
    for i, ln in enumerate(data.split(b"\n")):
        if target and ln.rstrip(b"\r") == target:
            line = first_line + i
            break
    return TraceFormatError(path, f"line {line}" if target else None,
                            f"{expected} comma-separated fields like the header",
                            f"{actual}: {text[:80]!r}")


def read_csv_strings(path: Path, data: bytes, first_line: int = 1) -> tuple[list[str], pa.Table]:
    """A CSV (header first) as a pyarrow table of strings, one column per header
    field (duplicates kept, in order). A row with the wrong field count is a
    TraceFormatError naming its line."""
    header = _header(path, data, first_line)
    internal = [f"c{i}" for i in range(len(header))]
    bad: list[Any] = []
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        data = data.decode("utf-8", errors="replace").encode("utf-8")

    def on_bad(row) -> str:
        try:
            bad.append((row.expected_columns, row.actual_columns, row.text or ""))
        except (UnicodeDecodeError, ValueError):
            bad.append((row.expected_columns, row.actual_columns, ""))
        return "skip"

    nl = data.find(b"\n")
    if nl < 0:
        raise TraceFormatError(path, f"line {first_line}", "a header line and rows",
                               "the file ends inside its first line (cut short)")
    if not data[nl + 1:].strip():                       # only the header: no rows
        return header, pa.table({c: pa.array([], pa.string()) for c in internal})
    try:
        table = pacsv.read_csv(
            pa.BufferReader(data),   # no Python file: the read-ahead thread needs no GIL (T7)
            read_options=pacsv.ReadOptions(column_names=internal, skip_rows=1,
                                           block_size=1 << 24),
            parse_options=pacsv.ParseOptions(invalid_row_handler=on_bad),
            convert_options=pacsv.ConvertOptions(
                column_types={c: pa.string() for c in internal},
                strings_can_be_null=False, quoted_strings_can_be_null=False),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError) as exc:
        raise TraceFormatError(path, None, "a readable CSV table", str(exc)[:200]) from None
    if bad:
        raise _bad_row_error(path, data, first_line, bad[0])
    return header, table


# --------------------------------------------------------------------------- numbers

_NULL_TEXT = ["", "None", "none", "NONE", "nan", "NaN", "N/A", "n/a", "null"]


def _clean(arr: pa.Array, thousands: bool = False) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_string(arr.type) and not pa.types.is_large_string(arr.type):
        return arr
    s = pc.utf8_trim_whitespace(arr)
    if thousands:
        s = pc.replace_substring(s, ",", "")
    nulls = pc.is_in(s, value_set=pa.array(_NULL_TEXT))
    return pc.if_else(nulls, pa.scalar(None, pa.string()), s)


def _first_bad(values: pa.Array, parse: Callable[[str], Any]) -> int:
    for i, v in enumerate(values.to_pylist()):
        if v is None:
            continue
        try:
            parse(v)
        except (ValueError, OverflowError):
            return i
    return -1


class BadNumber(Exception):
    def __init__(self, row: int, value: str):
        super().__init__(value)
        self.row = row
        self.value = value


def to_float(arr: pa.Array, thousands: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """float64 values and a valid mask; raises BadNumber(row, text) for junk."""
    s = _clean(arr, thousands)
    if pa.types.is_floating(s.type) or pa.types.is_integer(s.type):
        f = s.cast(pa.float64())
    else:
        try:
            f = pc.cast(s, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            i = _first_bad(s, float)
            raise BadNumber(max(i, 0), str(s[max(i, 0)].as_py())) from None
    valid = f.is_valid().to_numpy(zero_copy_only=False)
    vals = pc.fill_null(f, 0.0).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    return vals, valid


def to_int(arr: pa.Array, thousands: bool = False) -> tuple[np.ndarray, np.ndarray, bool]:
    """int64 values, valid mask and whether any value was written in a lossy
    float/exponent form (parsed as float and rounded). Exact for integers up to
    2**63 (parsed as integers, not through float64)."""
    s = _clean(arr, thousands)
    if pa.types.is_integer(s.type):
        iv = s.cast(pa.int64())
        return (pc.fill_null(iv, 0).to_numpy(zero_copy_only=False),
                iv.is_valid().to_numpy(zero_copy_only=False), False)
    try:
        iv = pc.cast(s, pa.int64())
        return (pc.fill_null(iv, 0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False),
                iv.is_valid().to_numpy(zero_copy_only=False), False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    f, valid = to_float(s)
    if not np.isfinite(f[valid]).all() or (np.abs(f[valid]) > 9.2e18).any():
        bad = np.flatnonzero(valid & ~(np.isfinite(f) & (np.abs(f) <= 9.2e18)))
        raise BadNumber(int(bad[0]), str(s[int(bad[0])].as_py()))
    lossy = False
    if pa.types.is_string(s.type):
        lossy = bool(pc.any(pc.match_substring_regex(s, "[eE]")).as_py() or False)
    return np.rint(f).astype(np.int64), valid, lossy


def int_column(arr: pa.Array, path: Path, where: Callable[[int], str], column: str,
               expected: str | None = None) -> tuple[np.ndarray, np.ndarray, bool]:
    """:func:`to_int`, a bad value raising TraceFormatError at its line."""
    try:
        return to_int(arr)
    except BadNumber as exc:
        raise TraceFormatError(path, where(exc.row), expected or f"an integer in column {column!r}",
                               repr(exc.value)) from None


def float_column(arr: pa.Array, path: Path, where: Callable[[int], str], column: str,
                 expected: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`to_float`, a bad value raising TraceFormatError at its line."""
    try:
        return to_float(arr)
    except BadNumber as exc:
        raise TraceFormatError(path, where(exc.row), expected or f"a number in column {column!r}",
                               repr(exc.value)) from None


def fit(values: np.ndarray, valid: np.ndarray, bounds: tuple[int, int]) -> tuple[pa.Array, int]:
    """An int column with nulls where invalid or outside ``bounds``; returns the
    array and how many valid values did not fit."""
    v = np.asarray(values)
    ok = valid & (v >= bounds[0]) & (v <= bounds[1])
    over = int((valid & ~ok).sum())
    vv = np.where(ok, v, 0).astype(np.int64)
    return from_numpy(vv, ~ok if (~ok).any() else None), over  # no pandas import


def masked(values: np.ndarray, valid: np.ndarray) -> pa.Array:
    """int64 values as a pyarrow array with nulls where not ``valid``."""
    return pa.array(values, mask=~valid if (~valid).any() else None)
