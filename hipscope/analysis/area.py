"""What a time range holds, per name: the table of an area selection (as Perfetto's).

For the kernels and API calls (and copies, markers) that overlap ``[t0, t1)``: per
name the count, the time inside the range (each event clipped to it), the mean of
that time and its share of the kind's time inside the range.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..model import Trace
from ..model.progress import CancelledFn, check_cancel, never_cancelled

AREA_TABLES = ("kernels", "api", "copies", "markers")
KIND_LABELS = {"kernels": "kernel", "api": "API call", "copies": "copy", "markers": "marker"}


@dataclass(frozen=True)
class AreaRow:
    """One name of one kind inside the range; times in ns."""

    kind: str          # 'kernels', 'api', 'copies' or 'markers'
    name: str
    count: int
    total_ns: int      # time inside the range (events clipped to it)
    mean_ns: float
    share: float       # total_ns over the kind's total_ns inside the range


def area_rows(trace: Trace, t0: int, t1: int, tables: tuple[str, ...] = AREA_TABLES,
              cancelled: CancelledFn = never_cancelled) -> list[AreaRow]:
    """Per kind and name, what overlaps ``[t0, t1)``, the biggest total first."""
    t0, t1 = (int(t0), int(t1)) if t0 <= t1 else (int(t1), int(t0))
    out: list[AreaRow] = []
    for kind in tables:
        check_cancel(cancelled)
        out += _kind_rows(trace, kind, t0, t1)
    return out


def _kind_rows(trace: Trace, kind: str, t0: int, t1: int) -> list[AreaRow]:
    table = getattr(trace, kind)
    col = "direction" if kind == "copies" else "name"
    if len(table) == 0 or not table.has(col):
        return []
    s, e = table.numpy("start"), table.numpy("end")
    inside = (s < t1) & (e > t0) if t1 > t0 else (s <= t0) & (e >= t0)
    idx = np.flatnonzero(inside)
    if len(idx) == 0:
        return []
    clip = np.minimum(e[idx], t1) - np.maximum(s[idx], t0)
    names = table.column(col).take(pa.array(idx))
    names = pc.fill_null(names.cast(pa.string()), "?")
    g = pa.table({"name": names, "t": pa.array(np.maximum(clip, 0))}).group_by("name") \
        .aggregate([("t", "sum"), ("t", "count")])
    total = g.column("t_sum").to_numpy()
    count = g.column("t_count").to_numpy()
    all_t = max(int(total.sum()), 1)
    nm = g.column("name").to_pylist()
    order = sorted(range(len(nm)), key=lambda i: (-int(total[i]), nm[i]))
    return [AreaRow(kind, nm[i], int(count[i]), int(total[i]), float(total[i]) / int(count[i]),
                    float(total[i]) / all_t) for i in order]
