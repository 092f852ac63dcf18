"""`Table`: one canonical table (kernels, api, ...) over a pyarrow table.

Readers build tables with :func:`build_table` from numpy arrays, lists or pyarrow
arrays; consumers read columns as numpy with :meth:`Table.numpy` and names as
categorical codes with :meth:`Table.codes`. Optional columns the source lacks are
not stored: reading one yields nulls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .schema import SPECS, TableSpec


class SchemaError(ValueError):
    """A reader produced a table that does not follow hipscope's schema (a bug)."""


# pa.array(), pa.scalar() and Array.to_numpy() import pandas (pyarrow's pandas shim:
# 0.4-0.8 s of every fresh process); these build on the buffers instead.
def _bits(mask: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(np.packbits(mask, bitorder="little"))


def from_numpy(values: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
    """``pa.array(values, mask=mask)`` of a 1-D numeric or bool array, without pandas
    (zero-copy for a contiguous numeric array and no mask)."""
    values = np.ascontiguousarray(values)
    if values.dtype.kind not in "iufb" or not values.dtype.isnative or values.ndim != 1:
        return pa.array(values, mask=mask)
    if values.dtype.kind == "b":
        type_, data = pa.bool_(), _bits(values)
    else:
        type_, data = pa.from_numpy_dtype(values.dtype), pa.py_buffer(values)
    if mask is None or not mask.any():
        return pa.Array.from_buffers(type_, len(values), [None, data], null_count=0)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != values.shape:
        raise ValueError(f"mask of {len(mask)} values for {len(values)} values")
    return pa.Array.from_buffers(type_, len(values), [_bits(~mask), data],
                                 null_count=int(mask.sum()))


def valid_mask(arr: pa.Array) -> np.ndarray:
    """Boolean numpy mask: True where ``arr`` has a value."""
    n = len(arr)
    if arr.null_count == 0:
        return np.ones(n, dtype=bool)
    if arr.null_count == n:
        return np.zeros(n, dtype=bool)
    bits = np.frombuffer(arr.buffers()[0], dtype=np.uint8)
    return np.unpackbits(bits, bitorder="little")[arr.offset:arr.offset + n].astype(bool)


def _np_dtype(t: pa.DataType) -> np.dtype:
    """The numpy dtype of a numeric or boolean arrow type (pyarrow's own ways,
    ``to_pandas_dtype`` and ``pa.array``, import pandas: 0.6 s on the GUI thread)."""
    if pa.types.is_boolean(t):
        return np.dtype(bool)
    kind = "int" if pa.types.is_signed_integer(t) else \
        "uint" if pa.types.is_unsigned_integer(t) else "float"
    return np.dtype(f"{kind}{t.bit_width}")


def to_numpy(arr: pa.Array, fill: Any = None) -> np.ndarray:
    """``arr`` (numeric or bool) as numpy, nulls as ``fill``, without pandas; other
    types, or nulls with no ``fill``, through ``Array.to_numpy``."""
    t, n = arr.type, len(arr)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    numeric = pa.types.is_integer(t) or pa.types.is_floating(t)
    if not (numeric or pa.types.is_boolean(t)) or (arr.null_count and fill is None):
        return arr.to_numpy(zero_copy_only=False)
    if arr.null_count == n or n == 0:     # (to_pandas_dtype would import pandas: 0.6 s)
        return np.full(n, fill if n else 0, dtype=_np_dtype(t))
    buf = arr.buffers()[1]
    if numeric:
        dt = np.dtype(t.to_pandas_dtype())
        out = np.frombuffer(buf, dtype=dt, count=n, offset=arr.offset * dt.itemsize)
    else:
        out = np.unpackbits(np.frombuffer(buf, dtype=np.uint8), bitorder="little"
                            )[arr.offset:arr.offset + n].astype(bool)
    if arr.null_count:
        out = np.where(valid_mask(arr), out, np.asarray(fill, dtype=out.dtype))
    return out


def string_array(values: Iterable[Any]) -> pa.Array | None:
    """A string array of ``str`` / None values without pandas; None when a value is of
    another type (then ``pa.array`` decides)."""
    vals = values if isinstance(values, list) else list(values)
    if not all(v is None or type(v) is str for v in vals):
        return None
    mask = np.fromiter((v is None for v in vals), dtype=bool, count=len(vals))
    try:
        enc = [b"" if v is None else v.encode() for v in vals]
    except UnicodeEncodeError:
        return None
    offsets = np.zeros(len(enc) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, enc), dtype=np.int64, count=len(enc)), out=offsets[1:])
    if offsets[-1] >= 2**31:
        return None
    return pa.Array.from_buffers(pa.string(), len(enc), [
        _bits(~mask) if mask.any() else None, pa.py_buffer(offsets.astype(np.int32)),
        pa.py_buffer(b"".join(enc))], null_count=int(mask.sum()))


def scalar(value: Any, type_: pa.DataType | None = None) -> pa.Scalar:
    """``pa.scalar(value, type_)`` of a bool, int, float or str, without pandas (for
    compute functions, which turn Python values into scalars through pa.scalar)."""
    if isinstance(value, str):
        arr = string_array([value])
    else:
        arr = from_numpy(np.array([value]))
    if arr is None:
        return pa.scalar(value, type_)
    return arr[0] if type_ is None or arr.type == type_ else arr.cast(type_)[0]


def _int_list(values: list) -> pa.Array | None:
    """An int64 array of a list of ints / None without pandas; None otherwise."""
    if not all(v is None or type(v) is int for v in values):
        return None
    mask = np.fromiter((v is None for v in values), dtype=bool, count=len(values))
    try:
        vals = np.array([0 if v is None else v for v in values], dtype=np.int64)
    except OverflowError:
        return None
    return from_numpy(vals, mask)


def _list_to_arrow(values: Any, type_: pa.DataType) -> pa.Array:
    """Python values (None = null) as Arrow, without pandas where they are plain."""
    if isinstance(values, list):
        if pa.types.is_dictionary(type_) or pa.types.is_string(type_):
            arr = string_array(values)
        else:
            arr = _int_list(values) if pa.types.is_integer(type_) else None
            arr = arr.cast(type_) if arr is not None else None  # out of range: ArrowInvalid
        if arr is not None:                                   # as from pa.array(type=)
            return arr
    # from_pandas (NaN -> null) only for object arrays: on lists it imports pandas
    nan_is_null = isinstance(values, np.ndarray)
    if pa.types.is_dictionary(type_):
        return pa.array(values, type=pa.string(), from_pandas=nan_is_null)
    return pa.array(values, type=type_, from_pandas=nan_is_null)


def _to_arrow(values: Any, type_: pa.DataType, n: int, col: str) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        arr = values
    elif isinstance(values, np.ndarray) and values.dtype.kind in "iufb":
        arr = from_numpy(values)
    else:  # list / object array: may contain None
        arr = _list_to_arrow(values, type_)
    if len(arr) != n:
        raise SchemaError(f"column {col!r} has {len(arr)} rows, expected {n}")
    if pa.types.is_dictionary(type_):
        if not pa.types.is_dictionary(arr.type):
            if not pa.types.is_string(arr.type) and not pa.types.is_large_string(arr.type):
                arr = arr.cast(pa.string())
            arr = pc.dictionary_encode(arr)
        if arr.type != type_:
            arr = arr.cast(type_)
        return arr
    if arr.type != type_:
        try:
            arr = arr.cast(type_, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SchemaError(f"column {col!r}: cannot store as {type_}: {exc}") from exc
    return arr


def column_array(spec_name: str, col: str, values: Any, n: int) -> pa.Array:
    """One column as :func:`build_table` stores it (None: all null), for readers that
    build a table in row chunks and concatenate them."""
    type_ = SPECS[spec_name].by_name[col].type
    return pa.nulls(n, type_) if values is None else _to_arrow(values, type_, n, col)


def categorical(codes: np.ndarray, categories: Iterable[str]) -> pa.DictionaryArray:
    """Build a name column from int codes (-1 = null) and their category strings."""
    codes = np.asarray(codes, dtype=np.int32)
    cats = list(categories)
    strings = string_array(cats)
    return pa.DictionaryArray.from_arrays(
        from_numpy(codes, codes < 0),
        strings if strings is not None else pa.array(cats, type=pa.string()))


class Table:
    """A canonical table: a pyarrow table holding the present columns of a spec."""

    __slots__ = ("spec", "data", "_null_cache")

    def __init__(self, spec: TableSpec, data: pa.Table):
        self.spec = spec
        self.data = data
        self._null_cache: dict[str, pa.Array] = {}

    # ---- shape ---------------------------------------------------------------
    def __len__(self) -> int:
        return self.data.num_rows

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def present(self) -> list[str]:
        return list(self.data.column_names)

    def has(self, col: str) -> bool:
        """True when the column is stored and holds at least one non-null value."""
        if col not in self.data.column_names:
            return False
        return self.data.column(col).null_count < self.data.num_rows

    def nbytes(self) -> int:
        return int(self.data.nbytes)

    # ---- access --------------------------------------------------------------
    def column(self, col: str) -> pa.Array:
        if col in self.data.column_names:
            ch = self.data.column(col)
            if ch.num_chunks == 0:        # combine_chunks() of none imports pandas
                return pa.nulls(0, type=ch.type)
            return ch.chunk(0) if ch.num_chunks == 1 else ch.combine_chunks()
        if col not in self.spec.by_name:
            raise KeyError(f"{self.spec.name} has no column {col!r}")
        arr = self._null_cache.get(col)
        if arr is None:
            arr = pa.nulls(len(self), type=self.spec.by_name[col].type)
            self._null_cache[col] = arr
        return arr

    def numpy(self, col: str, fill: Any = None) -> np.ndarray:
        """A column as numpy. Nulls become ``fill``; with ``fill=None`` integer columns
        that hold nulls come back as float64 with NaN."""
        arr = self.column(col)
        if pa.types.is_dictionary(arr.type):
            raise TypeError(f"{col!r} is a name column: use codes() or strings()")
        if arr.null_count == 0 or fill is not None:
            return to_numpy(arr, fill)
        if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type):
            return to_numpy(arr.cast(pa.float64()), np.nan)
        return arr.to_numpy(zero_copy_only=False)

    def valid(self, col: str) -> np.ndarray:
        """Boolean mask: True where the column has a value."""
        return valid_mask(self.column(col))

    def codes(self, col: str = "name") -> tuple[np.ndarray, list[str]]:
        """Categorical codes (int32, -1 = null) and the list of category strings."""
        arr = self.column(col)
        if not pa.types.is_dictionary(arr.type):
            raise TypeError(f"{col!r} is not a name column")
        codes = to_numpy(arr.indices, -1)
        return codes.astype(np.int32, copy=False), arr.dictionary.to_pylist()

    def strings(self, col: str) -> list[Any]:
        return self.column(col).to_pylist()

    def row(self, i: int) -> dict[str, Any]:
        """Every column of one row as Python values (None where null)."""
        return {c.name: self.column(c.name)[i].as_py() for c in self.spec.columns}

    def to_pandas(self):
        """A pandas DataFrame (names as categoricals, nullable ints)."""
        import pandas as pd

        df = self.data.to_pandas(types_mapper={
            pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
            pa.int64(): pd.Int64Dtype(),
        }.get)
        return df

    def take(self, indices: np.ndarray) -> Table:
        return Table(self.spec, self.data.take(from_numpy(np.asarray(indices))))

    def __repr__(self) -> str:
        return f"<Table {self.spec.name}: {len(self)} rows, columns {self.present}>"


def build_table(spec_name: str, columns: Mapping[str, Any], n: int | None = None) -> Table:
    """Make a canonical table from column data.

    ``columns`` maps schema column names to numpy arrays, lists (None = null) or
    pyarrow arrays. Unknown names are a :class:`SchemaError`; optional columns that
    are entirely null are dropped (served as nulls on demand).
    """
    spec = SPECS[spec_name]
    unknown = set(columns) - set(spec.by_name)
    if unknown:
        raise SchemaError(f"{spec_name}: unknown columns {sorted(unknown)}")
    if n is None:
        n = len(next(iter(columns.values()))) if columns else 0
    arrays, fields = [], []
    for col in spec.columns:
        if col.name not in columns or columns[col.name] is None:
            if col.required:
                if n == 0:
                    arr = pa.nulls(0, col.type)
                else:
                    raise SchemaError(f"{spec_name}: required column {col.name!r} missing")
            else:
                continue
        else:
            arr = _to_arrow(columns[col.name], col.type, n, col.name)
            if not col.required and n > 0 and arr.null_count == n:
                continue
        arrays.append(arr)
        fields.append(pa.field(col.name, col.type))
    return Table(spec, pa.Table.from_arrays(arrays, schema=pa.schema(fields)))


def empty_table(spec_name: str) -> Table:
    return build_table(spec_name, {}, n=0)


def nullable(values: np.ndarray, invalid: int = -1) -> pa.Array:
    """An integer numpy array as a pyarrow array where ``invalid`` marks a null."""
    values = np.asarray(values)
    return from_numpy(values, values == invalid)


def distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` (sorted distinct values); integers of a range up to about
    their count go through a count table: one pass, no sort or hash (and no import
    of numpy.ma, which numpy's unique does on first use: ~0.03 s)."""
    v = np.asarray(values)
    if len(v) and v.dtype.kind in "iu":
        lo, hi = int(v.min()), int(v.max())
        span = max(1 << 16, len(v))
        if hi - lo <= span and hi < 1 << 62:
            base = 0 if 0 <= lo and hi <= span else lo     # a table from 0 when it is small
            counts = np.bincount(v.astype(np.int64) - base if base else v)
            return (np.flatnonzero(counts) + base).astype(v.dtype)
    return np.unique(v)
