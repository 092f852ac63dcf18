"""Columns from decoded Kineto events: JSON values coerced to int/float arrays
(vectorised, odd values become nulls), µs -> ns, categorical codes, small tables."""

from __future__ import annotations

import re
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np
import pyarrow as pa

from ...model import build_table, categorical
from ...model.table import Table, from_numpy, string_array, to_numpy, valid_mask
from .._intervals import INT64_MAX, INT64_MIN, LIMIT_NS, add_ns
from .decode import ARG_FIELDS, EMPTY_ARGS
from .native import ABSENT, FLOAT, INT, JNULL, RAW, ColSub, first_seen

__all__ = [
    "NULL", "args_cols", "args_list", "args_of", "codes_of", "corr_from_flows",
    "drop_api_rows", "filtered_table", "first_seen", "list_table", "name_column",
    "opt_array", "pid_tid", "str_codes", "times_ns", "to_int", "xyz_fast"
]

NULL = -(1 << 62)
# C-level attribute reads (map(attrgetter) is ~2x a list comprehension)
_PID, _TID, _TS, _DUR = (attrgetter(f) for f in ("pid", "tid", "ts", "dur"))
_BIG_US = LIMIT_NS / 1000

# --------------------------------------------------------------------------- helpers


def to_int(x: Any) -> int:
    """Best-effort int from a JSON value; NULL when there is none."""
    if isinstance(x, bool) or x is None:
        return NULL
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return int(x) if x == x and abs(x) < 9e18 else NULL
    if isinstance(x, str):
        s = x.strip()
        try:
            return int(s, 16) if s.lower().startswith("0x") else int(s)
        except ValueError:
            m = re.search(r"-?\d+", s)
            return int(m.group()) if m else NULL
    return NULL


def _int_col(values: list, null: int = NULL) -> np.ndarray:
    """int64 column from JSON values (None/invalid -> ``null``)."""
    try:
        return np.fromiter(values, np.int64, len(values))
    except (TypeError, ValueError, OverflowError):
        pass
    try:
        a = np.array(values, dtype=np.float64)
        if a.ndim != 1:
            raise ValueError
        bad = np.isnan(a) | (np.abs(a) > 9e15)
        out = np.where(bad, 0, a).astype(np.int64)
        if bad.any():
            out[bad] = null
        return out
    except (TypeError, ValueError, OverflowError):
        out = np.fromiter((to_int(v) for v in values), np.int64, len(values))
        if null != NULL:
            out[out == NULL] = null
        return out


def _float_col(values: list) -> np.ndarray:
    try:
        a = np.array(values, dtype=np.float64)
        if a.ndim != 1:
            raise ValueError
        return a
    except (TypeError, ValueError, OverflowError):
        def f(v: Any) -> float:
            if isinstance(v, bool):
                return np.nan
            if isinstance(v, (int, float)):
                return float(v)
            if isinstance(v, str):
                try:
                    return float(v)
                except ValueError:
                    return np.nan
            return np.nan
        return np.fromiter((f(v) for v in values), np.float64, len(values))


def _us_to_ns(us: np.ndarray) -> np.ndarray:
    """µs floats (3 printed decimals) -> int64 ns, exact for values < 2^43 µs; values
    past ±2^62 ns saturate at the int64 limits (the interval rule drops them), never
    wrap round."""
    us = np.asarray(us, np.float64)
    big = ~(np.abs(us) < _BIG_US)          # also NaN: callers mask those
    if big.any():
        out = _us_to_ns(np.where(big, 0.0, us))
        return np.where(big, np.where(us > 0, INT64_MAX, INT64_MIN), out)
    whole = np.floor(us)
    frac = us - whole
    return whole.astype(np.int64) * 1000 + np.rint(frac * 1000.0).astype(np.int64)


def str_codes(strings: list) -> tuple[np.ndarray, list[str]]:
    """Categorical codes for a list of str (first-seen order)."""
    try:
        uniq = dict.fromkeys(strings)
    except TypeError:
        strings = [s if isinstance(s, str) else str(s) for s in strings]
        uniq = dict.fromkeys(strings)
    cats = [s if isinstance(s, str) else str(s) for s in uniq]
    m = {k: i for i, k in enumerate(uniq)}
    codes = np.fromiter(map(m.__getitem__, strings), np.int32, len(strings))
    return codes, cats


def codes_of(sub: Any, field: str) -> tuple[np.ndarray, list[str]]:
    """``str_codes`` of the events' ``cat`` or ``name``."""
    if isinstance(sub, ColSub):
        return first_seen(sub.ids(field), sub.ev.strings)
    return str_codes(list(map(attrgetter(field), sub)))


def name_column(strings: list) -> Any:
    codes, cats = str_codes(strings)
    return categorical(codes, cats)


def opt_array(values: np.ndarray, lo: int, hi: int) -> Any:
    """Nullable pyarrow array: NULL and out-of-range values become nulls."""
    bad = (values == NULL) | (values < lo) | (values > hi)
    if bad.all():
        return None
    v = np.where(bad, 0, values)
    return from_numpy(v, bad if bad.any() else None)


# --------------------------------------------------------------------------- building


def args_of(sub: Any) -> Any:
    """The events' args (the columns themselves for the scanner's events)."""
    return sub if isinstance(sub, ColSub) else [e.args or EMPTY_ARGS for e in sub]


def args_list(args: Any) -> list:
    """``args_of``'s result as ``_Args`` structs (materialised for the scanner's)."""
    return [e.args or EMPTY_ARGS for e in args] if isinstance(args, ColSub) else args


def _col_int(kv: tuple[np.ndarray, np.ndarray], values) -> np.ndarray:
    """``_int_col`` of columns: vectorised for ints (and nulls), else of the values."""
    k, v = kv
    is_int = k == INT
    if is_int.all():
        return v.copy()
    none = (k == ABSENT) | (k == JNULL)
    if (is_int | none).all():   # _int_col goes through float64: |v| > 9e15 is null
        return np.where(none | (np.abs(v.astype(np.float64)) > 9e15), NULL, v)
    return _int_col(values())


def _col_float(kv: tuple[np.ndarray, np.ndarray], values) -> np.ndarray:
    """``_float_col`` of columns: vectorised for numbers and nulls."""
    k, v = kv
    num = (k == INT) | (k == FLOAT)
    none = (k == ABSENT) | (k == JNULL)
    if not (num | none).all():
        return _float_col(values())
    out = np.where(k == FLOAT, v.view(np.float64), v.astype(np.float64))
    out[none] = np.nan
    return out


def args_cols(args: Any, fields: tuple[str, ...] = ARG_FIELDS) -> dict[str, np.ndarray]:
    out = {}
    for f in ARG_FIELDS:
        if f not in fields:
            out[f] = np.full(len(args), NULL, dtype=np.int64)
        elif isinstance(args, ColSub):
            out[f] = _col_int(args.arg(f), lambda f=f: args.arg_values(f))
        else:
            out[f] = _int_col(list(map(attrgetter(f), args)))
    return out


def _xyz(args: list, field: str) -> np.ndarray:
    vals = [getattr(a, field) for a in args]
    out = np.full((len(vals), 3), NULL, dtype=np.int64)
    for i, v in enumerate(vals):
        if isinstance(v, list) and len(v) == 3:
            for j in range(3):
                x = v[j]
                if isinstance(x, int) and not isinstance(x, bool):
                    out[i, j] = x
    return out


def _xyz_cols(args: ColSub, field: str) -> np.ndarray | None:
    """``xyz_fast`` of columns where every value is a list of three ints or null (a
    table of the distinct texts); None otherwise."""
    k, v = args.arg(field)
    raw = k == RAW
    if not raw.any() or not (raw | (k == ABSENT) | (k == JNULL)).all():
        return None
    ids, inv = np.unique(v[raw], return_inverse=True)
    rows = []
    for rid in ids.tolist():
        x = args.ev.raw_value(rid)
        if not (isinstance(x, list) and len(x) == 3 and all(type(e) is int for e in x)
                and all(-(1 << 63) <= e < 1 << 63 for e in x)):
            return None
        rows.append(x)
    out = np.full((len(k), 3), NULL, dtype=np.int64)
    out[raw] = np.array(rows, np.int64).reshape(-1, 3)[inv.reshape(-1)]
    return out


def xyz_fast(args: Any, field: str) -> np.ndarray:
    if isinstance(args, ColSub):
        fast = _xyz_cols(args, field)
        if fast is not None:
            return fast
        k = args.arg(field)[0]
        if ((k == ABSENT) | (k == JNULL)).all():
            return np.full((len(k), 3), NULL, dtype=np.int64)
        args = args_list(args)
    vals = list(map(attrgetter(field), args))
    if not any(vals):
        return np.full((len(vals), 3), NULL, dtype=np.int64)
    try:
        if all(len(v) == 3 for v in vals):
            return np.fromiter(chain.from_iterable(vals), np.int64, 3 * len(vals)).reshape(-1, 3)
    except (TypeError, ValueError, OverflowError):
        pass
    return _xyz(args, field)


def pid_tid(sub: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(sub, ColSub):
        return (_col_int(sub.field("pid"), lambda: sub.values("pid")),
                _col_int(sub.field("tid"), lambda: sub.values("tid")))
    return _int_col(list(map(_PID, sub))), _int_col(list(map(_TID, sub)))


def times_ns(sub: Any, base: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """start, end (int64 ns) and a mask of rows with a valid ts."""
    if isinstance(sub, ColSub):
        ts = _col_float(sub.field("ts"), lambda: sub.values("ts"))
        dur = _col_float(sub.field("dur"), lambda: sub.values("dur"))
    else:
        ts = _float_col(list(map(_TS, sub)))
        dur = _float_col(list(map(_DUR, sub)))
    ok = np.isfinite(ts)
    # raw times pass through (a negative dur too): the interval rule judges them
    dur = np.where(np.isnan(dur), 0.0, dur)
    start = add_ns(_us_to_ns(np.where(ok, ts, 0.0)), base)
    end = add_ns(start, _us_to_ns(dur))
    return start, end, ok


def list_table(name: str, cols: dict[str, list]):
    """A small table from Python lists (typed here: build_table would import pandas)."""
    from ...model.schema import SPECS

    spec = SPECS[name]
    n = len(next(iter(cols.values()))) if cols else 0
    arrays = {}
    for c, vals in cols.items():
        t = spec.by_name[c].type
        arr = string_array(vals) if pa.types.is_dictionary(t) or pa.types.is_string(t) \
            else _ints(vals, t)
        arrays[c] = arr if arr is not None else pa.array(
            vals, type=pa.string() if pa.types.is_dictionary(t) else t)
    return build_table(name, arrays, n=n)


def _ints(vals: list, t) -> Any:
    """A list of int/None as an Arrow array of integer type ``t`` without pyarrow's
    conversions (they import pandas); None for other values or types."""
    if not pa.types.is_integer(t) or not all(v is None or type(v) is int for v in vals):
        return None
    try:
        arr = np.array([0 if v is None else v for v in vals], np.int64)
    except OverflowError:
        return None
    try:
        return from_numpy(arr, np.array([v is None for v in vals], bool)).cast(t)
    except pa.ArrowInvalid:  # out of range: pa.array(vals, type=t) says so
        return None


def filtered_table(name: str, cols: dict[str, Any], keep: np.ndarray, n: int):
    if n == 0 or keep.all():
        return build_table(name, cols, n=n)
    t = build_table(name, cols, n=n)
    return t.take(np.flatnonzero(keep))


def drop_api_rows(api, ok: np.ndarray, kernels, copies):
    """Remove API rows without a timestamp and renumber api_index links."""
    new_index = np.cumsum(ok) - 1
    new_index = np.where(ok, new_index, -1)
    api = api.take(np.flatnonzero(ok))
    out = [api]
    for t in (kernels, copies):
        if "api_index" in t.data.column_names:
            col = t.column("api_index")
            vals = to_numpy(col, 0)
            nv = new_index[vals]
            mask = ~valid_mask(col) | (nv < 0)
            arr = from_numpy(np.where(mask, 0, nv).astype(np.int32), mask)
            data = t.data.set_column(t.data.column_names.index("api_index"), "api_index", arr)
            t = Table(t.spec, data)
        out.append(t)
    return out


def corr_from_flows(flows: list, base: int, *groups) -> None:
    """Fill missing correlation ids (in place) from ac2g flows: ``s`` at the runtime
    call and ``f``/``bp:e`` at the GPU event share an id; both sit at their event's
    (pid, tid, ts)."""
    if not flows:
        return
    f_start, _e, f_ok = times_ns(flows, base)
    if isinstance(flows, ColSub):   # the values only, not whole events
        ids, pids, tids = flows.values("id"), flows.values("pid"), flows.values("tid")
    else:
        ids, pids, tids = ([getattr(e, f) for e in flows] for f in ("id", "pid", "tid"))
    by_key: dict[tuple[int, int, int], int] = {}
    for i, p, d, t, ok in zip(ids, pids, tids, f_start.tolist(), f_ok.tolist()):
        if not ok:
            continue
        fid = to_int(i)
        if fid == NULL:
            continue
        by_key[(to_int(p), to_int(d), t)] = fid
    for sub, start, pid, tid, corr in groups:
        miss = np.flatnonzero(corr == NULL)
        for i in miss.tolist():
            fid = by_key.get((int(pid[i]), int(tid[i]), int(start[i])))
            if fid is not None:
                corr[i] = fid
