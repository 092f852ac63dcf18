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

from .schema import NAME, SPECS, TableSpec


class SchemaError(ValueError):
    """A reader produced a table that does not follow hipscope's schema (a bug)."""


def _to_arrow(values: Any, type_: pa.DataType, n: int, col: str) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        arr = values
    elif isinstance(values, np.ndarray) and values.dtype.kind in "iuf":
        arr = pa.array(values)
    elif isinstance(values, np.ndarray) and values.dtype.kind == "b":
        arr = pa.array(values)
    else:
        # list / object array: may contain None
        # from_pandas (NaN -> null) only for object arrays: on lists it imports pandas
        nan_is_null = isinstance(values, np.ndarray)
        if pa.types.is_dictionary(type_):
            arr = pa.array(values, type=pa.string(), from_pandas=nan_is_null)
        else:
            arr = pa.array(values, type=type_, from_pandas=nan_is_null)
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
    mask = codes < 0
    idx = pa.array(codes, mask=mask if mask.any() else None, type=pa.int32())
    return pa.DictionaryArray.from_arrays(idx, pa.array(list(categories), type=pa.string()))


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
        if arr.null_count == 0:
            return arr.to_numpy(zero_copy_only=False)
        if fill is not None:
            return pc.fill_null(arr, fill).to_numpy(zero_copy_only=False)
        if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type):
            return arr.cast(pa.float64()).to_numpy(zero_copy_only=False)
        return arr.to_numpy(zero_copy_only=False)

    def valid(self, col: str) -> np.ndarray:
        """Boolean mask: True where the column has a value."""
        arr = self.column(col)
        if arr.null_count == 0:
            return np.ones(len(self), dtype=bool)
        return arr.is_valid().to_numpy(zero_copy_only=False)

    def codes(self, col: str = "name") -> tuple[np.ndarray, list[str]]:
        """Categorical codes (int32, -1 = null) and the list of category strings."""
        arr = self.column(col)
        if not pa.types.is_dictionary(arr.type):
            raise TypeError(f"{col!r} is not a name column")
        idx = arr.indices
        codes = idx.to_numpy(zero_copy_only=False) if idx.null_count == 0 else (
            pc.fill_null(idx, -1).to_numpy(zero_copy_only=False))
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
        return Table(self.spec, self.data.take(pa.array(indices)))

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
                    arr = pa.array([], type=col.type) if col.type != NAME else (
                        pa.DictionaryArray.from_arrays(pa.array([], pa.int32()),
                                                       pa.array([], pa.string())))
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
    mask = values == invalid
    return pa.array(values, mask=mask if mask.any() else None)
