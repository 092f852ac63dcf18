"""What the timeline asks for at data change: the model of a trace for one grouping,
coloured, with its find matches, and the launch links of a selected event."""

from __future__ import annotations

import numpy as np

from ...model import Trace
from ...model.progress import CancelledFn
from .colours import ColorScale, apply_color_keys, color_keys, color_scale
from .find import FindResult, find, track_match_starts
from .rows import TimelineModel, build_model


def prepare(trace: Trace, grouping: str, mode: str, values: np.ndarray | None = None,
            text: str = "", regex: bool = False, cancelled: CancelledFn | None = None
            ) -> tuple[TimelineModel, ColorScale, FindResult | None, dict[int, np.ndarray]]:
    """The rows of ``trace`` by ``grouping`` with colour keys of ``mode`` applied, the
    matches of ``text`` (None without one) and each track's matching starts. Coloured
    by name (the first frame's colours), the rows come from the trace's analysis
    service (kept in the disk cache with the trace: a reopened trace's first frame
    computes no rows); other colourings are built here, not kept on disk."""
    if values is None and mode == "name":
        from ..context import analyses_of

        model, scale = analyses_of(trace).timeline_frame(grouping, mode, cancelled)
    else:
        model, scale = coloured_model(trace, grouping, mode, values, cancelled)
    found = find(trace, model, text, regex) if text else None
    starts = track_match_starts(model, found) if found is not None else {}
    return model, scale, found, starts


def coloured_model(trace: Trace, grouping: str, mode: str, values: np.ndarray | None = None,
                   cancelled: CancelledFn | None = None) -> tuple[TimelineModel, ColorScale]:
    """The rows of ``trace`` by ``grouping`` with the colour keys of ``mode`` applied."""
    model = build_model(trace, grouping, cancelled)
    scale = color_scale(trace, model, mode, values)
    apply_color_keys(model, color_keys(trace, model, scale, cancelled, values))
    return model, scale


def launch_links(trace: Trace, table: str, row: int) -> list[tuple[str, int, str, int]]:
    """(api table, api row, target table, target row) of the launch arrows of one
    event: a kernel's or copy's launching call, or the work an API call launched
    (at most 64 per table)."""
    out = []
    if table in ("kernels", "copies"):
        t = getattr(trace, table)
        if t.has("api_index") and 0 <= row < len(t):
            a = int(t.numpy("api_index", fill=-1)[row])
            if 0 <= a < len(trace.api):
                out.append(("api", a, table, row))
    elif table == "api":
        for tname in ("kernels", "copies"):
            t = getattr(trace, tname)
            if t.has("api_index"):
                rows = np.flatnonzero(t.numpy("api_index", fill=-1) == row)[:64]
                out += [("api", row, tname, int(r)) for r in rows]
    return out


FLOW_KINDS = ("launch", "op", "wait")


def flow_links(trace: Trace, table: str, row: int, kinds=FLOW_KINDS, index=None
               ) -> list[tuple[str, int, str, int, str]]:
    """(from table, row, to table, row, kind) of the flows of one event: ``launch``
    (API call -> its work), ``op`` (the innermost host op enclosing the launch ->
    the work; an op -> every kernel launched inside it) and, given the source file's
    ``index`` (:func:`hipscope.analysis.source_args.source_index`), ``wait`` (the
    GPU work an event recorded -> the syncs waiting on it)."""
    from ..links import enclosing_ops, op_launches, wait_source, wait_targets

    out = []
    if "launch" in kinds:
        out += [(*link, "launch") for link in launch_links(trace, table, row)]
    if "op" in kinds:
        if table in ("kernels", "copies"):
            t = getattr(trace, table)
            a = int(t.numpy("api_index", fill=-1)[row]) if t.has("api_index") else -1
            ops = enclosing_ops(trace, a) if a >= 0 else []
            if ops:
                out.append(("markers", ops[-1], table, row, "op"))
        elif table == "markers":
            out += [("markers", row, t, r, "op") for t, r in op_launches(trace, row)]
    if "wait" in kinds and index is not None:
        if table in ("kernels", "copies"):
            out += [(table, row, "markers", m, "wait")
                    for m in wait_targets(trace, index, table, row)]
        elif table == "markers":
            src = wait_source(trace, index, row)
            if src is not None:
                out.append((*src, "markers", row, "wait"))
    return out
