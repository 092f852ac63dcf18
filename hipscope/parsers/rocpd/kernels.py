"""The kernels table of one rocpd database (and its queues).

From the physical tables the dispatches are read and joined in rowid chunks
(``physical.chunk_rows``), each chunk turned into the schema's column types before the
next is read, so the raw and joined columns of only one chunk are alive at once (a
5M-kernel database in under 2 GB). What needs every row (the queue numbering, the names'
first-use dictionary) is done once over the chunks' small results. The views, and
databases whose kernels view drops dispatches, are read in one piece.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...model import build_table
from ...model.table import column_array, scalar
from .._common import number_per_device
from ..base import TraceFormatError
from .dangling import kept_dispatches, kernels_kept, unknown_agents
from .db import Db, as_int, as_str, distinct_rows, masked, release_freed
from .physical import Physical, encoded_names

__all__ = ["KERNEL_COLUMNS", "ApiLink", "kernel_query", "read_kernels"]

KERNEL_COLUMNS = ["guid", "nid", "pid", "tid", "kernel_id", "agent_abs_index", "dispatch_id",
                  "queue_id", "stream_id", "start", "end", "grid_x", "grid_y", "grid_z",
                  "workgroup_x", "workgroup_y", "workgroup_z", "lds_size", "scratch_size",
                  "vgpr_count", "accum_vgpr_count", "sgpr_count", "stack_id", "name"]
KERNEL_REQUIRED = ["start", "end", "agent_abs_index"]
_GRAPH = ("graph_exec_id", "graph_node_id")


def kernel_query(db: Db) -> tuple:
    """fetch() arguments for the kernels view: its columns, and the graph ids of schema
    3.0.2 on (from the view, else looked up in rocpd_kernel_dispatch by id)."""
    have = set(db.columns("kernels")) if db.has("kernels") else set()
    wanted = KERNEL_COLUMNS + [c for c in _GRAPH if c in have]
    disp = set(db.columns("rocpd_kernel_dispatch")) if db.has("rocpd_kernel_dispatch") \
        else set()
    extra = {c: f'(SELECT D."{c}" FROM "rocpd_kernel_dispatch" D WHERE D.id = "kernels".id '
                'AND D.guid = "kernels".guid)'
             for c in _GRAPH if c not in have and c in disp and {"id", "guid"} <= have}
    return wanted, "", KERNEL_REQUIRED, extra or None
_KERNEL_INTS = (("grid_x", "grid_x"), ("grid_y", "grid_y"), ("grid_z", "grid_z"),
                ("block_x", "workgroup_x"), ("block_y", "workgroup_y"),
                ("block_z", "workgroup_z"), ("vgpr", "vgpr_count"),
                ("accum_vgpr", "accum_vgpr_count"), ("sgpr", "sgpr_count"),
                ("lds_bytes", "lds_size"), ("scratch_bytes", "scratch_size"))


def _queue_names(db: Db, guids, view: str) -> dict[tuple[int, int], str]:
    """(guid, id) -> name from rocpd_info_queue / rocpd_info_stream."""
    names: dict[tuple[int, int], str] = {}
    if db.has(view):
        qi = db.fetch(view, ["guid", "id", "name"])
        nq = len(qi.get("id", []))
        for g, qid, qn in zip(guids(qi.get("guid"), nq).tolist(), as_int(qi.get("id"), nq).tolist(),
                              as_str(qi.get("name"), nq).to_pylist()):
            names[(g, qid)] = qn
    return names


def _distinct_queues(k: dict) -> tuple[list[np.ndarray], np.ndarray] | None:
    """A chunk's distinct (device, guid, queue handle) rows and each kernel's row
    among them (int32); None without queue handles."""
    qh = k.pop("qh")
    if qh is None:
        return None
    uniq, inverse, _first = distinct_rows(k["dev"], k["guid"], qh)
    return uniq, inverse.astype(np.int32)


def _number_queues(qs: list) -> tuple[np.ndarray, list[np.ndarray], np.ndarray] | None:
    """number_per_device over every chunk's kernels, from the chunks' distinct rows:
    (each kernel's small queue id, the distinct rows, their small ids)."""
    if any(q is None for q in qs):
        return None
    rows = [np.concatenate([u[i] for u, _ in qs]) for i in range(3)]
    ids, uniq, small = number_per_device(*rows)
    at = np.cumsum([0] + [len(u[0]) for u, _ in qs])
    return np.concatenate([ids[a + inv] for a, (_, inv) in zip(at, qs)]), uniq, small


def _queues(db: Db, guids, numbered, nk: int):
    """Small queue ids per device, in (guid, handle) order, and the queues table
    (``numbered``: :func:`_number_queues`, None when the kernels have no queue_id)."""
    queue_names = _queue_names(db, guids, "rocpd_info_queue")
    k_queue = np.full(nk, -1, np.int64)
    q_rows: dict[str, list] = {"device": [], "queue": [], "raw_id": [], "name": []}
    if numbered is not None and nk:
        k_queue, (u_dev, u_guid, u_qh), small = numbered
        q_rows["device"] = u_dev.tolist()
        q_rows["queue"] = small.tolist()
        q_rows["raw_id"] = [str(h) for h in u_qh.tolist()]
        q_rows["name"] = [queue_names.get((g, h)) for g, h in zip(u_guid.tolist(),
                                                                   u_qh.tolist())]
    return k_queue, build_table("queues", q_rows, n=len(q_rows["device"]))


class ApiLink:
    """``link_by_correlation(stack, guid, api_stack, api_guid)`` with the API side
    sorted once, not once per chunk (an argsort of every API call each time)."""

    def __init__(self, api_stack: np.ndarray, api_guid: np.ndarray):
        self.n = len(api_stack)
        akey = (api_guid.astype(np.int64) << 40) ^ api_stack.astype(np.int64)
        self.order = np.argsort(akey, kind="stable")
        self.keys = akey[self.order]

    def __call__(self, stack: np.ndarray, guid: np.ndarray) -> np.ndarray:
        if self.n == 0 or len(stack) == 0:
            return np.full(len(stack), -1, dtype=np.int32)
        kkey = (guid.astype(np.int64) << 40) ^ stack.astype(np.int64)
        pos = np.minimum(np.searchsorted(self.keys, kkey), self.n - 1)
        return np.where(self.keys[pos] == kkey, self.order[pos], -1).astype(np.int32)


def _one_piece(db: Db, phys: Physical | None, warnings: list[str]) -> dict:
    """The kernels view's columns, plus the dispatches it drops (``dangling.py``)."""
    if phys is None:
        kn = db.fetch("kernels", *kernel_query(db))
        return kernels_kept(db, kn, KERNEL_COLUMNS + list(_GRAPH), warnings)
    every, in_view = phys.kernels()
    if in_view.all():
        return {c: a for c, a in every.items() if c in KERNEL_COLUMNS or c in _GRAPH}
    return kept_dispatches(db, every, int(in_view.sum()), len(in_view), warnings)


def _part(kn: dict, ctx: dict, offset: int) -> tuple[dict, dict]:
    """One chunk's kernels columns as the schema stores them (the name left as read,
    the queue for :func:`_assemble`) and its integer columns."""
    nk = len(kn["start"])
    k = {"guid": ctx["guids"](kn.get("guid"), nk), "pid": as_int(kn.get("pid"), nk),
         "stream": as_int(kn.get("stream_id"), nk), "disp": as_int(kn.get("dispatch_id"), nk),
         "qh": as_int(kn.get("queue_id"), nk) if "queue_id" in kn else None}
    k["dev"] = unknown_agents(kn, ctx["to_device"](as_int(kn.get("nid"), nk),
                                                   as_int(kn.get("agent_abs_index"), nk)),
                              ctx["dev_rows"])
    if (k["dev"] < 0).any():
        j = int(np.nonzero(k["dev"] < 0)[0][0])
        raise TraceFormatError(ctx["path"], "table kernels",
                               "agent_abs_index of a GPU agent in rocpd_info_agent",
                               f"{int(as_int(kn.get('agent_abs_index'), nk)[j])} in row "
                               f"{offset + j}")
    k_stack = as_int(kn.get("stack_id"), nk)
    k_api = ctx["api_link"](k_stack, k["guid"])
    k_api[k_stack < 0] = -1
    cols = {
        "device": k["dev"], "start": as_int(kn["start"], nk, 0),
        "end": as_int(kn["end"], nk, 0), "stream": masked(k["stream"]),
        "pid": masked(k["pid"]), "tid": masked(as_int(kn.get("tid"), nk)),
        "correlation_id": masked(k_stack), "dispatch_id": masked(k["disp"]),
        "api_index": masked(k_api),
    }
    for col, view_col in _KERNEL_INTS:
        cols[col] = masked(as_int(kn.get(view_col), nk))
    for col in _GRAPH:  # 0: not replayed from a graph (the column's default)
        if col in kn:
            vals = as_int(kn[col], nk, 0)
            cols[col] = masked(vals, vals <= 0)
    cols = {c: column_array("kernels", c, v, nk) for c, v in cols.items()}
    cols["name"] = kn.get("name")
    k["queues"] = _distinct_queues(k)
    return cols, k


def _chunked(phys: Physical, ctx: dict) -> list[tuple[dict, dict]] | None:
    """:func:`_part` of each chunk of the physical tables; None when a chunk holds
    dispatches the view drops, or a kernel with no agent index (read in one piece)."""
    parts, offset, chunks = [], 0, phys.kernel_chunks()
    try:
        for every, in_view in chunks:
            n = len(in_view)
            if not in_view.all() or (as_int(every.get("agent_abs_index"), n) < 0).any():
                return None
            parts.append(_part({c: a for c, a in every.items()
                                if c in KERNEL_COLUMNS or c in _GRAPH}, ctx, offset))
            offset += n
            del every, in_view
            release_freed()
    finally:
        chunks.close()
    phys.db.kernel_chunks = len(parts)
    return parts


def _concat(pieces: list) -> Any:
    if any(p is None for p in pieces):
        return None
    if len(pieces) == 1:
        return pieces[0]
    if isinstance(pieces[0], np.ndarray):
        return np.concatenate(pieces)
    return pa.concat_arrays(pieces)


def _assemble(db: Db, guids, parts: list[tuple[dict, dict]]):
    """The kernels table, the queues table and the integer columns of every chunk."""
    numbered = _number_queues([p[1].pop("queues") for p in parts])
    k = {c: _concat([p[1].pop(c) for p in parts]) for c in list(parts[0][1])}
    nk = len(k["guid"])
    k["queue"], queues = _queues(db, guids, numbered, nk)
    del numbered
    release_freed()
    cols = {c: _concat([p[0].pop(c) for p in parts]) for c in list(parts[0][0])}
    release_freed()
    name = cols["name"]
    cols["name"] = (encoded_names(name, "(unknown kernel)")
                    if name is not None and pa.types.is_dictionary(name.type)
                    else pc.fill_null(as_str(name, nk), scalar("(unknown kernel)")))
    cols["queue"] = masked(k["queue"])
    return build_table("kernels", cols, n=nk), queues, k


def read_kernels(db: Db, guids, to_device, api_stack, api_guid, dev_rows, warnings,
                 phys: Physical | None):
    """(kernels table, queues table, integer columns: guid, pid, stream, disp, dev,
    queue) of the database."""
    ctx = {"guids": guids, "to_device": to_device, "api_link": ApiLink(api_stack, api_guid),
           "dev_rows": dev_rows, "path": db.path}
    parts = _chunked(phys, ctx) if phys is not None else None
    if parts is None:
        parts = [_part(_one_piece(db, phys, warnings), ctx, 0)]
    return _assemble(db, guids, parts)
