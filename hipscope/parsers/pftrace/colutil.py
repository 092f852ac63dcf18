"""Small pieces of the column tables (:mod:`.colbuild`): integer columns and their
pyarrow arrays, first-seen rows, dictionary arrays of strings, device keys spread over
slices, and two builds on two threads."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...model.table import from_numpy, string_array
from .colann import IntCol, factorize, key_of
from .proto import fit_int

NULL_INT = np.iinfo(np.int64).min  # stands for null in the correlation arrays


def int_array(c: IntCol, dtype, what: str, warnings: list[str]) -> Any:
    """An IntCol as a pyarrow array of ``dtype``: a numpy cast where every value fits
    (null slots too), else :func:`.proto.fit_int` (nulls out what does not, counted)."""
    v = c.v.astype(np.int64, copy=False)
    info = np.iinfo(dtype)
    if not len(v) or (int(v.min()) >= info.min and int(v.max()) <= info.max):
        return from_numpy(v.astype(dtype, copy=False), ~c.ok)
    return fit_int(from_numpy(v, ~c.ok), dtype, what, warnings)


def icol(vals) -> IntCol:
    if isinstance(vals, IntCol):
        return vals
    return IntCol(np.array([0 if v is None else v for v in vals], dtype=np.int64),
                  np.array([v is not None for v in vals], dtype=bool))


def cat_cols(cols: list[IntCol]) -> IntCol:
    return IntCol(np.concatenate([c.v for c in cols]), np.concatenate([c.ok for c in cols]))


def filled(vals) -> np.ndarray:
    c = icol(vals)
    return np.where(c.ok, c.v, NULL_INT)


def first_seen(rows: np.ndarray) -> np.ndarray:
    """The distinct rows of a 2-D array in the order they first appear."""
    if not len(rows):
        return rows.reshape(0, 2)
    return rows[factorize(key_of(*rows.T))[1]]


def dict_array(codes: np.ndarray, values: list) -> Any:
    """``values[codes]`` (distinct strings) as the dictionary array that
    ``dictionary_encode`` makes of them (the dictionary in first-seen order)."""
    import pyarrow as pa

    if not len(codes):
        return [values[i] for i in codes.tolist()]
    idx, first = factorize(codes)
    return pa.DictionaryArray.from_arrays(from_numpy(idx.astype(np.int32)),
                                          _strings([values[i] for i in codes[first].tolist()]))


def _strings(vals: list) -> Any:
    """A string array of ``vals`` (pandas-free where they are all str)."""
    import pyarrow as pa

    arr = string_array(vals)
    return arr if arr is not None else pa.array(vals, type=pa.string())


class DevList:
    """Device keys of many slices: ``got[inv[i]]``, once per distinct key."""

    def __init__(self, got: list, inv: np.ndarray):
        self.got, self.inv = got, inv

    def __getitem__(self, i: int):
        return self.got[self.inv[i]]

    def __len__(self) -> int:
        return len(self.inv)


def both(first, second) -> None:
    """``first()`` on a thread while ``second()`` runs here: the two tables' columns are
    numpy and C passes that release the GIL (two cores where there are). What either
    raises (Declined) is raised here, once both are done."""
    import threading

    err: list[BaseException] = []

    def run() -> None:
        try:
            first()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            err.append(exc)

    t = threading.Thread(target=run, name="pftrace-columns", daemon=True)
    t.start()
    try:
        second()
    finally:
        t.join()
    if err:
        raise err[0]
