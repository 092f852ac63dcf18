"""Rows the rocpd data views drop: their inner joins hide a kernel, region or copy
whose ``kernel_id``, ``agent_id``, ``event_id``... points nowhere.

Each big view is compared with the physical table under it (``count(*)``, cheap). Kernels
the ``kernels`` view lost are read from ``rocpd_kernel_dispatch`` with LEFT JOINs (the
same columns as data_views.sql) and kept: a missing symbol gives the name
``unknown kernel <kernel_id>``, a missing agent the device ``unknown agent <agent_id>``.
Lost regions and copies are counted in a warning.
"""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc

from ...model.table import scalar
from .._common import warn
from .db import Db, as_int, as_str

__all__ = ["kept_dispatches", "kernels_kept", "unknown_agents", "warn_lost"]

# kernels view column -> (table alias, column of that table), as in data_views.sql
_DISPATCH_COLS = {
    "guid": ("K", "guid"), "nid": ("K", "nid"), "pid": ("P", "pid"), "tid": ("T", "tid"),
    "kernel_id": ("K", "kernel_id"), "agent_id": ("K", "agent_id"),
    "agent_abs_index": ("A", "absolute_index"), "dispatch_id": ("K", "dispatch_id"),
    "queue_id": ("K", "queue_id"), "stream_id": ("K", "stream_id"),
    "start": ("K", "start"), "end": ("K", "end"),
    "grid_x": ("K", "grid_size_x"), "grid_y": ("K", "grid_size_y"),
    "grid_z": ("K", "grid_size_z"), "workgroup_x": ("K", "workgroup_size_x"),
    "workgroup_y": ("K", "workgroup_size_y"), "workgroup_z": ("K", "workgroup_size_z"),
    "lds_size": ("K", "group_segment_size"), "scratch_size": ("K", "private_segment_size"),
    "vgpr_count": ("S", "arch_vgpr_count"), "accum_vgpr_count": ("S", "accum_vgpr_count"),
    "sgpr_count": ("S", "sgpr_count"), "stack_id": ("E", "stack_id"),
    "name": ("S", "display_name"),
    "graph_exec_id": ("K", "graph_exec_id"), "graph_node_id": ("K", "graph_node_id"),
}
# alias -> (view, column of K it joins on)
_JOINS = {"A": ("rocpd_info_agent", "agent_id"), "E": ("rocpd_event", "event_id"),
          "S": ("rocpd_info_kernel_symbol", "kernel_id"), "P": ("rocpd_info_process", "pid"),
          "T": ("rocpd_info_thread", "tid")}


def _dispatch_sql(db: Db, wanted: list[str]) -> tuple[str, list[str]] | None:
    """SELECT over rocpd_kernel_dispatch LEFT JOINed like the kernels view; None
    without that table or its start/end."""
    k_cols = set(db.columns("rocpd_kernel_dispatch")) if db.has("rocpd_kernel_dispatch") \
        else set()
    if not {"start", "end", "guid"} <= k_cols:
        return None
    joins, have = [], {"K": k_cols}
    for alias, (view, on) in _JOINS.items():
        cols = set(db.columns(view)) if db.has(view) else set()
        if on in k_cols and {"id", "guid"} <= cols:
            joins.append(f'LEFT JOIN "{view}" {alias} ON {alias}.id = K."{on}" '
                         f'AND {alias}.guid = K.guid')
            have[alias] = cols
    cols, exprs = [], []
    for c in [*wanted, "agent_id"]:
        alias, col = _DISPATCH_COLS.get(c, ("", ""))
        if col and col in have.get(alias, ()):
            cols.append(c)
            exprs.append(f'{alias}."{col}"')
    sql = (f'SELECT {", ".join(exprs)} FROM "rocpd_kernel_dispatch" K {" ".join(joins)} '
           "ORDER BY K.rowid")
    return sql, cols


def kernels_kept(db: Db, kn: dict, wanted: list[str], warnings: list[str]) -> dict:
    """The kernels view's columns, or, when it has fewer rows than
    rocpd_kernel_dispatch, every dispatch read with LEFT JOINs (and a warning)."""
    nk = len(kn["start"])
    total = db.count("rocpd_kernel_dispatch")
    if total is None or total <= nk:
        return kn
    plan = _dispatch_sql(db, wanted)
    if plan is None:
        warn(warnings, "rocpd.kernels_lost",
             f"{db.path}: the kernels view lists {nk} of the {total} kernels in "
             f"rocpd_kernel_dispatch; the other {total - nk} could not be read and are "
             "left out", db.path)
        return kn
    return kept_dispatches(db, db.fetch_sql(*plan, "table rocpd_kernel_dispatch"), nk,
                           total, warnings)


def kept_dispatches(db: Db, out: dict, nk: int, total: int, warnings: list[str]) -> dict:
    """Every dispatch's LEFT JOIN columns ``out`` (the view kept ``nk`` of ``total``):
    a missing symbol named 'unknown kernel <kernel_id>', and the warning."""
    n = len(out["start"])
    no_sym = pc.is_null(as_str(out.get("name"), n))
    n_sym = int(pc.sum(no_sym).as_py() or 0)
    kid = as_str(out.get("kernel_id"), n)
    out["name"] = pc.if_else(no_sym, pc.binary_join_element_wise(
        scalar("unknown kernel "), pc.fill_null(kid, scalar("?")), scalar("")),
        as_str(out.get("name"), n))
    n_agent = int((as_int(out.get("agent_abs_index"), n) < 0).sum())
    how = [f"{c} {what}" for c, what in ((n_sym, "with no kernel symbol (named "
                                          "'unknown kernel <kernel_id>')"),
                                         (n_agent, "with no agent (on a device "
                                          "'unknown agent <agent_id>')")) if c]
    warn(warnings, "rocpd.kernels_dangling",
         f"{db.path}: {total - nk} of {total} kernels are missing from the kernels view "
         "(an id of theirs in rocpd_kernel_dispatch points nowhere); they are kept"
         + (": " + ", ".join(how) if how else ""), db.path)
    return out


def unknown_agents(kn: dict, dev: np.ndarray, dev_rows: list[dict]) -> np.ndarray:
    """Kernels with no agent (agent_abs_index null) go to one 'unknown agent <id>'
    device per agent_id, appended to ``dev_rows``; ``dev`` with those filled in."""
    n = len(dev)
    if "agent_id" not in kn:
        return dev
    lost = (as_int(kn.get("agent_abs_index"), n) < 0) & (dev < 0)
    if not lost.any():
        return dev
    aid = as_int(kn["agent_id"], n)
    dev = dev.copy()
    for a in np.unique(aid[lost]).tolist():
        label = str(a) if a >= 0 else "null"
        dev[lost & (aid == a)] = len(dev_rows)
        dev_rows.append({"index": len(dev_rows), "name": f"unknown agent {label}",
                         "vendor": "AMD", "arch": None, "compute_units": None,
                         "raw_id": f"agent_id {label}", "host": None, "memory_bytes": None})
    return dev


def warn_lost(db: Db, view: str, table: str, n: int, what: str,
              warnings: list[str]) -> None:
    """A warning when ``view`` has fewer rows than the physical ``table`` under it."""
    total = db.count(table)
    if total is not None and total > n:
        warn(warnings, "rocpd.rows_lost",
             f"{db.path}: {total - n} of {total} {what} in {table} are missing "
             f"from the {view} view (an id of theirs points nowhere) and are left out",
             db.path)
