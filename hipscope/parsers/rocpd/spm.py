"""SPM (streaming performance monitor) counters of a rocpd database (schema 3.0.3 on):
``rocpd_pmc_event`` rows with a ``sample_id`` hold one counter value per hardware
instance (``xcc``, ``shader_engine``, from 3.0.5 ``shader_array`` and ``wgp``) at the
timestamp of their ``rocpd_sample``.

They are values over time, not per dispatch, so they go to the samples table: one
series per counter and GPU (``SPM <counter>``), each point the sum over the instances
sampled at that time. How many distinct values each dimension took is kept in
``meta["rocpd_spm"]`` so the per-instance breakdown is not silently lost.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...model import build_table
from .._common import group_rows, warn
from ..base import TraceFormatError
from .db import Db, as_int, as_str

__all__ = ["DIMENSIONS", "spm_samples"]

DIMENSIONS = ("xcc", "shader_engine", "shader_array", "wgp", "instance")


def _sql(db: Db) -> tuple[str, list[str]] | None:
    have = set(db.columns("rocpd_pmc_event"))
    if not ({"sample_id", "pmc_id", "value"} <= have and db.has("rocpd_sample")
            and db.has("rocpd_info_pmc")):
        return None
    dims = [d for d in DIMENSIONS if d in have]
    agent = db.has("rocpd_info_agent") and "agent_id" in db.columns("rocpd_info_pmc")
    exprs = ["S.timestamp", "I.name", "PE.value", *(f'PE."{d}"' for d in dims)]
    cols = ["time", "counter", "value", *dims]
    join_a = ""
    if agent:
        exprs += ["A.nid", "A.absolute_index"]
        cols += ["nid", "abs"]
        join_a = ("LEFT JOIN rocpd_info_agent A ON A.id = I.agent_id AND A.guid = I.guid ")
    sql = ("SELECT " + ", ".join(exprs) + " FROM rocpd_pmc_event PE "
           "JOIN rocpd_sample S ON S.id = PE.sample_id AND S.guid = PE.guid "
           "JOIN rocpd_info_pmc I ON I.id = PE.pmc_id AND I.guid = PE.guid " + join_a
           + "WHERE PE.sample_id IS NOT NULL ORDER BY S.timestamp, PE.rowid")
    return sql, cols


def spm_samples(db: Db, to_device, meta: dict, warnings: list[str]):
    """The samples table of the SPM counters (None when the database has none)."""
    if not db.has("rocpd_pmc_event"):
        return None
    plan = _sql(db)
    if plan is None:
        return None
    try:
        rows = db.fetch_sql(*plan, "table rocpd_pmc_event")
    except TraceFormatError as exc:
        warn(warnings, "rocpd.spm_unread", f"{exc}; SPM counters are not read", db.path)
        return None
    n = len(rows["time"])
    if n == 0:
        return None
    try:
        return _table(rows, n, to_device, meta)
    except (ValueError, TypeError, pa.ArrowException) as exc:
        warn(warnings, "rocpd.spm_unread",
             f"{db.path}: table rocpd_pmc_event: expected numeric SPM values and "
             f"dimensions, found {type(exc).__name__}: {exc}; SPM counters are not read",
             db.path)
        return None


def _table(rows: dict, n: int, to_device, meta: dict):
    names = as_str(rows["counter"], n).fill_null("(unnamed)")
    ncode, nvals = _codes(names)
    dev = to_device(as_int(rows.get("nid"), n), as_int(rows.get("abs"), n))
    time = as_int(rows["time"], n, 0)
    (u_c, u_d, u_t), inv, _first = group_rows(ncode, dev, time)
    value = np.bincount(inv, weights=np.nan_to_num(
        rows["value"].cast(pa.float64()).to_numpy(zero_copy_only=False)), minlength=len(u_c))
    spm = {
        name: {"samples": int(len(np.unique(time[ncode == c]))),
               "dimensions": {d: int(len(np.unique(as_int(rows[d], n)[ncode == c])))
                              for d in DIMENSIONS if d in rows}}
        for c, name in enumerate(nvals)}
    table = build_table("samples", {
        "series": [f"SPM {nvals[c]}" for c in u_c.tolist()], "time": u_t, "value": value,
        "device": pa.array(u_d, mask=u_d < 0, type=pa.int64()),
    }, n=len(u_c))
    meta["rocpd_spm"] = spm
    return table


def _codes(names: pa.Array) -> tuple[np.ndarray, list[str]]:
    enc = names.dictionary_encode()
    return (enc.indices.to_numpy(zero_copy_only=False).astype(np.int64),
            enc.dictionary.to_pylist())
