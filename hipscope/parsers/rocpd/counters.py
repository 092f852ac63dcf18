"""Per-dispatch counter values of a rocpd database (``counters_collection``, or
``pmc_events`` where that view is missing), linked to their kernels by dispatch id."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...model import build_table, link_by_correlation
from ...model.table import scalar, to_numpy
from .db import Db, as_int, as_str, masked

__all__ = ["COUNTER_QUERY", "counters_table"]

COUNTER_QUERY = (["guid", "dispatch_id", "counter_name", "value"], "",
                 ["dispatch_id", "counter_name", "value"])


def counters_table(db: Db, gcode, k_guid, k_disp):
    if db.has("counters_collection"):
        cc = db.fetch("counters_collection", *COUNTER_QUERY)
        val_col = "value"
    elif db.has("pmc_events"):
        cc = db.fetch("pmc_events", ["guid", "dispatch_id", "counter_name",
                                     "counter_value"],
                      required=["dispatch_id", "counter_name", "counter_value"])
        val_col = "counter_value"
    else:
        return build_table("counters", {}, n=0)
    n = len(cc["dispatch_id"])
    if n == 0:
        return build_table("counters", {}, n=0)
    disp = as_int(cc["dispatch_id"], n)
    guid = gcode(cc.get("guid"), n)
    kidx = link_by_correlation(disp, guid, k_disp, k_guid)
    vals = cc[val_col]
    vals = to_numpy(vals.cast(pa.float64()), np.nan)
    return build_table("counters", {
        "counter": pc.fill_null(as_str(cc["counter_name"], n), scalar("(unnamed)")), "value": vals,
        "kernel_index": masked(kidx), "dispatch_id": masked(disp),
    }, n=n)
