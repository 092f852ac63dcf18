"""HIP event records of a rocpd database (schema 3.0.4 on, ``rocpd_hip_event``): the
barrier packets ``hipEventRecord`` and ``hipStreamWaitEvent`` put on the GPU's queues.

They become GPU-side markers of domain ``hip_event`` on their device and stream (drawn
under the GPU's annotations, as Kineto's GPU-side syncs are), linked to their runtime
call by ``correlation_id`` (the event's ``stack_id``). A wait names the record it waits
on in ``wait_on_correlation_id``: the latest record of the same ``hipEvent_t`` handle
(and guid) issued before the wait, the link Kineto gives as
``wait_on_cuda_event_record_corr_id``. Columns are selected by presence.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._common import group_key, warn
from ..base import TraceFormatError
from .db import Db, as_int, as_str

__all__ = ["DOMAIN", "hip_event_rows"]

DOMAIN = "hip_event"
_NEEDED = ("start", "end", "hip_event_handle")
_JOINS = {"S": ("rocpd_string", "name_id", "string", "op"),
          "E": ("rocpd_event", "event_id", "stack_id", "stack"),
          "A": ("rocpd_info_agent", "agent_id", "absolute_index", "abs"),
          "P": ("rocpd_info_process", "pid", "pid", "pid")}
_OWN = {"guid": "guid", "nid": "nid", "start": "start", "end": "end",
        "stream_id": "stream", "queue_id": "queue", "source_queue_id": "source",
        "hip_event_handle": "handle"}


def _sql(db: Db) -> tuple[str, list[str]] | None:
    """SELECT over rocpd_hip_event with the string, event, agent and process joined."""
    have = set(db.columns("rocpd_hip_event"))
    if not set(_NEEDED) <= have:
        return None
    exprs = [f'H."{c}"' for c in _OWN if c in have]
    cols = [_OWN[c] for c in _OWN if c in have]
    joins = []
    for alias, (table, key, col, name) in _JOINS.items():
        if key in have and db.has(table) and {"id", col} <= set(db.columns(table)):
            on = f"{alias}.id = H.\"{key}\"" + (f" AND {alias}.guid = H.guid"
                                                 if "guid" in have else "")
            joins.append(f'LEFT JOIN "{table}" {alias} ON {on}')
            exprs.append(f'{alias}."{col}"')
            cols.append(name)
    return (f'SELECT {", ".join(exprs)} FROM "rocpd_hip_event" H {" ".join(joins)} '
            "ORDER BY H.rowid", cols)


def _is_wait(rows: dict, n: int) -> np.ndarray:
    """WAIT by its operation name; without names, a barrier on another queue than the
    one its event was recorded on."""
    if "op" in rows:
        return np.asarray(pc.fill_null(pc.match_substring(as_str(rows["op"], n), "WAIT"),
                                       False).to_numpy(zero_copy_only=False), bool)
    q, src = as_int(rows.get("queue"), n), as_int(rows.get("source"), n)
    return (q != src) & (src >= 0)


def _names(rows: dict, wait: np.ndarray, n: int) -> pa.Array:
    if "op" in rows:
        return pc.fill_null(as_str(rows["op"], n), "HIP_EVENT")
    return pa.array(np.where(wait, "HIP_EVENT_WAIT", "HIP_EVENT_RECORD").tolist(), pa.string())


def _waits_on(guid: np.ndarray, handle: np.ndarray, corr: np.ndarray, start: np.ndarray,
              wait: np.ndarray) -> np.ndarray:
    """Per row: the correlation id of the record a wait waits on (the latest record of
    the same guid and handle issued at or before it), -1 elsewhere. One sort, no loop
    over the waits."""
    out = np.full(len(wait), -1, np.int64)
    rec, w = np.flatnonzero(~wait), np.flatnonzero(wait)
    if len(rec) == 0 or len(w) == 0:
        return out
    order = corr if (corr >= 0).all() else start  # issue order
    _g, group = np.unique(group_key(guid, handle), return_inverse=True)
    _o, rank = np.unique(order, return_inverse=True)
    group, rank = group.reshape(-1).astype(np.int64), rank.reshape(-1)
    key = group * (len(_o) + 1) + rank
    by_key = rec[np.argsort(key[rec], kind="stable")]
    pos = np.searchsorted(key[by_key], key[w], side="right") - 1
    hit = by_key[np.maximum(pos, 0)]
    ok = (pos >= 0) & (group[hit] == group[w])
    out[w[ok]] = corr[hit[ok]]
    return out


def hip_event_rows(db: Db, gcode, to_device, warnings: list[str]) -> dict | None:
    """The markers columns of the HIP event records (None without the table, or when
    it cannot be read: then with a warning)."""
    if not db.has("rocpd_hip_event"):
        return None
    plan = _sql(db)
    if plan is None:
        warn(warnings, "rocpd.hip_events_unread",
             f"{db.path}: table rocpd_hip_event lacks {', '.join(_NEEDED)}; HIP event "
             "records (cross-stream waits) are not read", db.path)
        return None
    try:
        rows = db.fetch_sql(*plan, "table rocpd_hip_event")
    except TraceFormatError as exc:
        warn(warnings, "rocpd.hip_events_unread",
             f"{exc}; HIP event records (cross-stream waits) are not read", db.path)
        return None
    n = len(rows["start"])
    if n == 0:
        return None
    try:
        return _columns(rows, n, gcode, to_device)
    except (ValueError, TypeError, pa.ArrowException) as exc:
        warn(warnings, "rocpd.hip_events_unread",
             f"{db.path}: table rocpd_hip_event: expected integer ids and times, found "
             f"{type(exc).__name__}: {exc}; HIP event records (cross-stream waits) are "
             "not read", db.path)
        return None


def _columns(rows: dict, n: int, gcode, to_device) -> dict:
    wait = _is_wait(rows, n)
    guid = gcode(rows.get("guid"), n)
    corr = as_int(rows.get("stack"), n)
    start, end = as_int(rows["start"], n, 0), as_int(rows["end"], n, 0)
    dev = to_device(as_int(rows.get("nid"), n), as_int(rows.get("abs"), n))
    return {"name": _names(rows, wait, n), "start": start, "end": end,
            "device": dev, "stream": as_int(rows.get("stream"), n),
            "pid": as_int(rows.get("pid"), n), "correlation_id": corr,
            "wait_on": _waits_on(guid, as_int(rows["handle"], n), corr, start, wait),
            "n_waits": int(wait.sum()), "cross": int((wait & (as_int(rows.get("queue"), n)
                                                              != as_int(rows.get("source"),
                                                                        n))).sum())}
