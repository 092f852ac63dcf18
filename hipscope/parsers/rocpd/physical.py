"""The two big rocpd data views, ``kernels`` and ``regions``, rebuilt from the physical
(``{{uuid}}``-suffixed) tables: each big table is read once with only the columns the
trace uses, the small info tables (agents, kernel symbols, strings, processes, threads)
are read whole and joined in numpy, as data_views.sql joins them (inner joins drop a
row, LEFT JOINs give NULL).

Why: the views' per-row joins, correlated ``rocpd_string`` sub-query and
``json_extract`` cost 2-3x the read itself. The one join left to SQLite is the event
link (``rocpd_event`` by its INTEGER PRIMARY KEY, a b-tree lookup per row): fetching the
event table through ADBC would move two values per row more than the lookup costs.

Used only when the database looks as expected: every needed unsuffixed view is
``SELECT * FROM "<name><suffix>"`` with one common suffix, the physical tables have the
columns read, and every row of the big tables carries one guid. Otherwise (or with
``HIPSCOPE_ROCPD_PHYSICAL=0``) :func:`open_physical` gives None and the views are read.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...model.table import from_numpy, scalar, string_array, to_numpy, valid_mask
from .db import Db, as_int, as_str

__all__ = ["GRAPH_COLS", "Physical", "chunk_rows", "encoded_names", "is_in_strings",
           "open_physical", "physical_enabled", "take_names", "take_strings"]

_VIEW = re.compile(r'\s*CREATE\s+VIEW\s+"?(\w+)"?\s+AS\s+SELECT\s+\*\s+FROM\s+"?(\w+)"?'
                   r"\s*;?\s*", re.IGNORECASE)
_NEEDED = ("rocpd_kernel_dispatch", "rocpd_region", "rocpd_event", "rocpd_string",
           "rocpd_info_agent", "rocpd_info_kernel_symbol", "rocpd_info_process",
           "rocpd_info_thread")
_CHUNK_ROWS = 1 << 19
_NO_ID, _NO_KEY = np.iinfo(np.int64).min, np.iinfo(np.int64).min + 1
# kernels view column -> rocpd_kernel_dispatch column (data_views.sql)
_K_DIRECT = {"nid": "nid", "kernel_id": "kernel_id", "dispatch_id": "dispatch_id",
             "queue_id": "queue_id", "stream_id": "stream_id", "start": "start",
             "end": "end", "grid_x": "grid_size_x", "grid_y": "grid_size_y",
             "grid_z": "grid_size_z", "workgroup_x": "workgroup_size_x",
             "workgroup_y": "workgroup_size_y", "workgroup_z": "workgroup_size_z",
             "lds_size": "group_segment_size", "scratch_size": "private_segment_size"}
_K_KEYS = ("agent_id", "pid", "tid", "region_name_id")
GRAPH_COLS = ("graph_exec_id", "graph_node_id")  # schema 3.0.2 on: read where present
_SYMBOL_COLS = {"name": "display_name", "vgpr_count": "arch_vgpr_count",
                "accum_vgpr_count": "accum_vgpr_count", "sgpr_count": "sgpr_count"}


def chunk_rows() -> int:
    """Dispatches read and joined at a time (``HIPSCOPE_ROCPD_CHUNK_ROWS``): bounds the
    raw columns alive at once, so a 5M-kernel database stays under 2 GB."""
    try:
        return max(1, int(os.environ.get("HIPSCOPE_ROCPD_CHUNK_ROWS", "")))
    except ValueError:
        return _CHUNK_ROWS


def physical_enabled() -> bool:
    return os.environ.get("HIPSCOPE_ROCPD_PHYSICAL", "1").strip().lower() not in (
        "0", "false", "no", "off")


def _tables(db: Db) -> dict[str, str] | None:
    """Unsuffixed name -> physical table for every needed table; None unless each view
    is a plain ``SELECT *`` over a table of one common suffix."""
    try:
        rows = db.conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'view'"
                               ).fetchall()
    except Exception:  # noqa: BLE001 - unreadable schema: the view path reports it
        return None
    found = {}
    for name, sql in rows:
        m = _VIEW.fullmatch(sql or "")
        if name in _NEEDED and m and m.group(1) == name and m.group(2).startswith(name):
            found[name] = m.group(2)
    if set(found) != set(_NEEDED) or len({t[len(b):] for b, t in found.items()}) != 1:
        return None
    return found if all(db.has(t) for t in found.values()) else None


def open_physical(db: Db) -> Physical | None:
    """A reader of the physical tables, or None when the views must be read."""
    if not (physical_enabled() and db.has("kernels") and db.has("regions")):
        return None
    tables = _tables(db)
    if tables is None:
        return None
    k_cols = set(db.columns(tables["rocpd_kernel_dispatch"]))
    r_cols = set(db.columns(tables["rocpd_region"]))
    e_cols = set(db.columns(tables["rocpd_event"]))
    if not ({"guid", "event_id", *_K_KEYS, *_K_DIRECT.values()} <= k_cols
            and {"guid", "event_id", "name_id", "pid", "tid", "start", "end"} <= r_cols
            and {"id", "guid", "stack_id", "category_id"} <= e_cols):
        return None
    try:
        row = db.conn.execute(f'SELECT guid FROM "{tables["rocpd_kernel_dispatch"]}" '
                              "LIMIT 1").fetchone()
        if row is None:
            row = db.conn.execute(f'SELECT guid FROM "{tables["rocpd_region"]}" LIMIT 1'
                                  ).fetchone()
    except Exception:  # noqa: BLE001 - the view path reports it
        return None
    if row is not None and not isinstance(row[0], str):
        return None
    return Physical(db, tables, row[0] if row else "", "extdata" in e_cols,
                    [c for c in GRAPH_COLS if c in k_cols])


def encoded_names(arr: pa.DictionaryArray, fill: str) -> pa.DictionaryArray:
    """``pc.dictionary_encode(pc.fill_null(arr.cast(pa.string()), fill))`` without
    making each row's string: the dictionary's distinct values in first-use order."""
    values = pa.concat_arrays([arr.dictionary.cast(pa.string()), string_array([fill])])
    enc = pc.dictionary_encode(pc.fill_null(values, scalar(fill)))
    vid = to_numpy(enc.indices)
    rows = vid[to_numpy(arr.indices, len(values) - 1)]
    if len(rows) == 0:
        return pc.dictionary_encode(pa.nulls(0, pa.string()))
    first = np.full(len(enc.dictionary), len(rows), np.int64)
    np.minimum.at(first, rows, np.arange(len(rows), dtype=np.int64))  # O(n), no sort
    used = np.flatnonzero(first < len(rows))
    order = used[np.argsort(first[used], kind="stable")]
    remap = np.zeros(len(enc.dictionary), np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    return pa.DictionaryArray.from_arrays(from_numpy(remap[rows]),
                                          enc.dictionary.take(from_numpy(order)))


def _is_dict(arr: pa.Array | None) -> bool:
    return arr is not None and pa.types.is_dictionary(arr.type)


def take_names(arr: pa.Array, rows: pa.Array, n: int) -> pa.Array:
    """The rows of a name column, dictionary-encoded as build_table would encode them
    (a dictionary from this module stays one)."""
    if _is_dict(arr):
        return encoded_names(arr.take(rows), "")
    return as_str(arr, n).take(rows)


def take_strings(arr: pa.Array, rows: pa.Array, n: int) -> pa.Array:
    """The rows of a name column as plain strings."""
    return arr.take(rows).cast(pa.string()) if _is_dict(arr) else as_str(arr, n).take(rows)


def is_in_strings(arr: pa.Array, values: tuple[str, ...]) -> np.ndarray:
    """Which rows' text is one of ``values`` (NULL: no)."""
    if _is_dict(arr):
        hit = np.append(to_numpy(pc.is_in(arr.dictionary, string_array(list(values))),
                                 False), False)
        return hit[to_numpy(arr.indices, len(arr.dictionary))]
    return to_numpy(pc.is_in(arr, string_array(list(values))), False)


def _dict(strings: pa.Array, rows: np.ndarray) -> pa.Array:
    """``strings[rows]`` (NULL where -1) as a dictionary over ``strings``, no copies."""
    if not pa.types.is_string(strings.type) or strings.null_count:
        return _take(strings, rows)
    return pa.DictionaryArray.from_arrays(from_numpy(rows.astype(np.int32), rows < 0),
                                          strings)


def _index(ids: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Row of each key in ``ids`` (unique), -1 where it is absent."""
    if len(ids) == 0:
        return np.full(len(keys), -1, np.int64)
    lo, hi = int(ids.min()), int(ids.max())
    if lo >= 0 and hi < 4 * len(ids) + (1 << 20):  # ids 1..m as SQLite gives: a table
        lut = np.full(hi + 2, -1, np.int64)
        lut[ids] = np.arange(len(ids))
        if len(keys) and int(keys.min()) >= 0 and int(keys.max()) <= hi:
            return lut[keys]  # every key in range: one gather
        inside = (keys >= 0) & (keys <= hi)
        return np.where(inside, lut[np.where(inside, keys, hi + 1)], -1)
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    pos = np.minimum(np.searchsorted(s, keys), len(s) - 1)
    return np.where(s[pos] == keys, order[pos], -1)


def _take(arr: pa.Array, rows: np.ndarray) -> pa.Array:
    """``arr[rows]`` with NULL where ``rows`` is -1 (a LEFT JOIN's miss)."""
    if len(arr) == 0 or pa.types.is_null(arr.type):
        return pa.nulls(len(rows), arr.type)
    miss = rows < 0
    if pa.types.is_int64(arr.type):  # numpy gather: several times faster than take
        at = np.where(miss, 0, rows)
        vals = to_numpy(arr, 0)[at]
        bad = miss if arr.null_count == 0 else (miss | ~valid_mask(arr)[at])
        return from_numpy(vals, bad)
    return arr.take(from_numpy(rows, miss))


class Physical:
    """Column dicts equal to what ``db.fetch("kernels" | "regions", ...)`` returns."""

    def __init__(self, db: Db, tables: dict[str, str], guid: str, has_extdata: bool,
                 graph_cols: list[str] | None = None):
        self.db, self.t, self.guid = db, tables, guid
        self.has_extdata = has_extdata
        self.graph_cols = graph_cols or []
        self._small: dict[str, tuple[np.ndarray, dict[str, pa.Array]]] = {}
        self._lit = "'" + guid.replace("'", "''") + "'"
        self._ranges: list[tuple[int, int]] | None = None

    # ------------------------------------------------------------------ small tables
    def small(self, base: str, cols: list[str]) -> tuple[np.ndarray, dict[str, pa.Array]]:
        """(ids, columns) of an info table's rows of this guid."""
        if base not in self._small:
            t = self.t[base]
            have = [c for c in cols if c in self.db.columns(t)]
            out = self.db.fetch_sql(
                f'SELECT id, {", ".join(chr(34) + c + chr(34) for c in have) or "NULL"} '
                f'FROM "{t}" WHERE guid = {self._lit}', ["id", *(have or ["_"])],
                f"table {t}")
            n = len(out["id"])
            self._small[base] = (as_int(out.pop("id"), n, _NO_ID), out)
        return self._small[base]

    def _join(self, base: str, cols: list[str], keys: np.ndarray):
        ids, out = self.small(base, cols)
        return _index(ids, keys), out

    def _big_sql(self, table: str, exprs: dict[str, str],
                 rows: tuple[int, int] | None = None) -> str:
        """One big table LEFT JOINed to its event, rows of this guid (and of the rowid
        range ``rows``: lo < rowid <= hi) in rowid order."""
        t, ev = self.t[table], self.t["rocpd_event"]
        rng = "" if rows is None else f" AND X.rowid > {rows[0]} AND X.rowid <= {rows[1]}"
        return (f'SELECT {", ".join(exprs.values())} FROM "{t}" X LEFT JOIN "{ev}" E '
                f"ON E.id = X.event_id AND E.guid = X.guid WHERE X.guid = {self._lit}{rng} "
                "ORDER BY X.rowid")

    def _big(self, table: str, exprs: dict[str, str],
             rows: tuple[int, int] | None = None) -> dict[str, pa.Array]:
        """The rows of :meth:`_big_sql`; for the whole table, one holding another guid
        too is a ValueError (the caller reads the views)."""
        out = self.db.fetch_sql(self._big_sql(table, exprs, rows), list(exprs),
                                f"table {self.t[table]}")
        n = len(next(iter(out.values())))
        if rows is None and self.db.count(self.t[table]) != n:
            raise ValueError(f"{self.t[table]} holds more than one guid")
        return out

    def prefetch(self) -> None:
        """Start both big reads on threads (SQLite runs them side by side); of the
        kernels only the first chunk."""
        self.db.prefetch_sql(self._big_sql("rocpd_kernel_dispatch", self._kernel_exprs(),
                                           self.kernel_ranges()[0]),
                             list(self._kernel_exprs()))
        self.db.prefetch_sql(self._big_sql("rocpd_region", self._region_exprs()),
                             list(self._region_exprs()))

    def kernel_ranges(self) -> list[tuple[int, int]]:
        """Rowid ranges (lo, hi] of at most :func:`chunk_rows` dispatches, covering the
        table."""
        if self._ranges is None:
            t = self.t["rocpd_kernel_dispatch"]
            try:
                # two queries: min and max together would scan the table
                lo, hi = (self.db.conn.execute(f'SELECT {f}(rowid) FROM "{t}"').fetchone()[0]
                          for f in ("min", "max"))
            except Exception as exc:  # noqa: BLE001 - the view path reports it
                raise ValueError(f"{t}: no rowid range") from exc
            size, n = chunk_rows(), self.db.count(t) or 0
            if lo is None or hi - lo >= 2 * n + size:  # empty, or sparse rowids: one read
                self._ranges = [(lo - 1, hi) if lo is not None else (0, 0)]
            else:
                self._ranges = [(a, min(a + size, hi)) for a in range(lo - 1, hi, size)]
        return self._ranges

    def kernel_chunks(self):
        """:meth:`kernels` of each rowid range in turn, the next one read on a thread
        meanwhile; a ValueError at the end when the table holds another guid too."""
        ranges, exprs, seen = self.kernel_ranges(), self._kernel_exprs(), 0
        sqls = [self._big_sql("rocpd_kernel_dispatch", exprs, r) for r in ranges]
        try:
            for i, rows in enumerate(ranges):
                if i + 1 < len(ranges):
                    self.db.prefetch_sql(sqls[i + 1], list(exprs))
                out, keep = self.kernels(rows)
                seen += len(keep)
                yield out, keep
        finally:  # left early: the next chunk's read is not wanted
            for sql in sqls:
                self.db.forget_prefetch(sql)
        if self.db.count(self.t["rocpd_kernel_dispatch"]) != seen:
            raise ValueError(f"{self.t['rocpd_kernel_dispatch']} holds more than one guid")

    # ------------------------------------------------------------------ kernels
    def _kernel_exprs(self) -> dict[str, str]:
        ex = {c: f'X."{p}"' for c, p in _K_DIRECT.items()}
        ex.update({c: f'X."{c}"' for c in self.graph_cols})
        ex.update({f"_{c}": f'X."{c}"' for c in _K_KEYS})
        ex["stack_id"], ex["_event"] = "E.stack_id", "E.id"
        return ex

    def kernels(self, rows: tuple[int, int] | None = None,
                ) -> tuple[dict[str, pa.Array], np.ndarray]:
        """The kernels view's columns for every dispatch (of the rowid range ``rows``;
        LEFT JOIN values: NULL where an id points nowhere, and ``agent_id``), and which
        rows the view keeps."""
        raw = self._big("rocpd_kernel_dispatch", self._kernel_exprs(), rows)
        n = len(raw["start"])
        key = {c: as_int(raw.pop(f"_{c}"), n, _NO_KEY) for c in _K_KEYS}
        keep = as_int(raw.pop("_event"), n, _NO_KEY) != _NO_KEY
        out = dict(raw)
        out["guid"] = pa.DictionaryArray.from_arrays(
            from_numpy(np.zeros(n, np.int32)), string_array([self.guid]))
        a_row, ag = self._join("rocpd_info_agent", ["absolute_index"], key["agent_id"])
        out["agent_abs_index"] = _take(ag["absolute_index"], a_row)
        out["agent_id"] = from_numpy(np.where(key["agent_id"] == _NO_KEY, 0, key["agent_id"]),
                                     key["agent_id"] == _NO_KEY)
        p_row, pr = self._join("rocpd_info_process", ["pid"], key["pid"])
        t_row, th = self._join("rocpd_info_thread", ["tid"], key["tid"])
        out["pid"], out["tid"] = _take(pr["pid"], p_row), _take(th["tid"], t_row)
        s_row, sy = self._join("rocpd_info_kernel_symbol", list(_SYMBOL_COLS.values()),
                               as_int(out["kernel_id"], n, _NO_KEY))
        for c, sc in _SYMBOL_COLS.items():
            if c == "name" and sc in sy:
                out[c] = _dict(sy[sc], s_row)  # no copy of each name
            else:
                out[c] = _take(sy[sc], s_row) if sc in sy else pa.nulls(n)
        r_row, _ = self._join("rocpd_string", ["string"], key["region_name_id"])
        keep &= (a_row >= 0) & (p_row >= 0) & (t_row >= 0) & (s_row >= 0) & (r_row >= 0)
        return out, keep

    # ------------------------------------------------------------------ regions
    def _marker_ids(self) -> list[int]:
        ids, st = self.small("rocpd_string", ["string"])
        texts = as_str(st["string"], len(ids)).to_pylist()
        return [int(i) for i, s in zip(ids.tolist(), texts)
                if s is not None and s.encode()[:6].upper() == b"MARKER"]

    @staticmethod
    def _region_exprs() -> dict[str, str]:
        return {"start": 'X."start"', "end": 'X."end"', "_name": 'X."name_id"',
                "_pid": 'X."pid"', "_tid": 'X."tid"', "stack_id": "E.stack_id",
                "_event": "E.id", "_cat": "E.category_id"}

    def _messages(self, event: np.ndarray, cat: np.ndarray) -> pa.Array:
        """``json_extract(extdata, '$.message')`` of the MARKER% regions' events (the
        view's CASE), NULL elsewhere: one range scan over the marker events' ids."""
        n = len(event)
        ids = self._marker_ids()
        rows = np.flatnonzero(np.isin(cat, ids)) if ids else np.zeros(0, np.int64)
        if len(rows) == 0:
            return pa.nulls(n, pa.string())
        ev = self.t["rocpd_event"]
        lo, hi = int(event[rows].min()), int(event[rows].max())
        got = self.db.fetch_sql(
            f"SELECT id, json_extract(extdata, '$.message') FROM \"{ev}\" WHERE id BETWEEN "
            f"{lo} AND {hi} AND guid = {self._lit} AND category_id IN "
            f"({', '.join(map(str, ids))})", ["id", "message"], f"table {ev}")
        m = len(got["id"])
        hit = _index(as_int(got["id"], m, _NO_ID), event[rows])
        msg = np.full(n, -1, np.int64)
        msg[rows] = hit
        return _take(as_str(got["message"], m), msg)

    def regions(self) -> dict[str, pa.Array]:
        """The regions view's columns (its inner joins applied)."""
        raw = self._big("rocpd_region", self._region_exprs())
        n = len(raw["start"])
        key = {c: as_int(raw.pop(f"_{c}"), n, _NO_KEY) for c in ("name", "pid", "tid",
                                                                  "event", "cat")}
        s_row, st = self._join("rocpd_string", ["string"], key["name"])
        p_row, pr = self._join("rocpd_info_process", ["pid"], key["pid"])
        t_row, th = self._join("rocpd_info_thread", ["tid"], key["tid"])
        c_row, _ = self._join("rocpd_string", ["string"], key["cat"])
        keep = (key["event"] != _NO_KEY) & (s_row >= 0) & (p_row >= 0) & (t_row >= 0)
        out = dict(raw)
        if self.has_extdata:
            out["message"] = self._messages(key["event"], key["cat"])
        out.update({"guid": pa.DictionaryArray.from_arrays(
                        from_numpy(np.zeros(n, np.int32)), string_array([self.guid])),
                    "category": _dict(st["string"], c_row), "name": _dict(st["string"], s_row),
                    "pid": _take(pr["pid"], p_row), "tid": _take(th["tid"], t_row)})
        if keep.all():
            return out
        rows = from_numpy(np.flatnonzero(keep))
        return {c: a.take(rows) for c, a in out.items()}
