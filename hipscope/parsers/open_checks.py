"""Checks :func:`~hipscope.parsers.base.open_trace` runs on every opened trace (cache hits
included): a trace without kernels is warned, and processes that fall into groups that
never overlap in time (separate runs read together) are warned."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..model import Trace
from ..model.diagnostics import add_diagnostic


def warn_no_kernels(trace: Trace, paths: list[Path]) -> Trace:
    """Issue 13 item 10, the safety net of the one rule for empty outputs: a trace with
    no kernels (and no per-kernel summary or counters) loads, warned, whatever its
    reader; a reader that already said so (``no kernels`` in a warning) is left as is."""
    from ._common import warn_no_kernels as add_warning

    if len(trace.kernels) or len(trace.counters) or trace.meta.get("summary_only") \
            or any("no kernels" in w.lower() for w in trace.warnings):
        return trace
    warnings = list(trace.warnings)
    add_warning(warnings, ", ".join(str(p) for p in paths[:3]),
                    f"{len(trace.api)} API calls, {len(trace.copies)} copies, "
                    f"{len(trace.markers)} markers")
    return trace.with_meta(warnings=warnings)


def warn_separate_runs(trace: Trace) -> Trace:
    """Warn when the processes of a trace fall into groups that never overlap in time:
    most likely separate runs read together (two runs in one folder, RELIABILITY W11),
    whose span and idle time then mean nothing. One run's processes overlap."""
    import numpy as np
    import pyarrow as pa

    if one_pid(trace):
        return trace             # one process (the usual case): nothing to group
    parts = []   # per table: each pid's first start and last end (hash group-by, not a sort)
    for t in (trace.kernels, trace.api):
        if len(t) and "pid" in t.data.column_names and t.valid("pid").any():
            d = t.data.filter(t.data.column("pid").is_valid())
            sub = pa.table({c: d.column(c).cast(pa.int64()) for c in ("pid", "start", "end")})
            parts.append(sub.group_by("pid").aggregate([("start", "min"), ("end", "max")]))
    if not parts:
        return trace
    per = pa.concat_tables(parts).group_by("pid").aggregate([("start_min", "min"),
                                                            ("end_max", "max")])
    if per.num_rows < 2:
        return trace
    uniq = per.column("pid").to_numpy().astype(np.int64)
    lo = per.column("start_min_min").to_numpy().astype(np.int64)
    hi = per.column("end_max_max").to_numpy().astype(np.int64)
    order = np.argsort(lo, kind="stable")
    ended = np.maximum.accumulate(hi[order])[:-1]        # all before have ended by then
    gaps = np.flatnonzero(lo[order][1:] > ended)
    if not len(gaps):
        return trace
    g = gaps[0]
    first, then = int(uniq[order][g]), int(uniq[order][g + 1])
    gap_s = (int(lo[order][g + 1]) - int(ended[g])) / 1e9
    text = (f"the {len(uniq)} processes of this trace fall into {len(gaps) + 1} groups that "
            f"do not overlap in time (process {then} starts {gap_s:.3g} s after process "
            f"{first} and every earlier one ended): if these are separate runs, open each "
            "one on its own")
    meta = dict(trace.meta)
    add_diagnostic(meta, "merge.separate_runs", "warning", text)
    return replace(trace, meta=meta)


def one_pid(trace: Trace) -> bool:
    """Whether the kernels and API calls all name one process (or none): min == max."""
    import pyarrow.compute as pc

    seen: set = set()
    for t in (trace.kernels, trace.api):
        if len(t) and "pid" in t.data.column_names:
            mm = pc.min_max(t.data.column("pid"))
            seen.update(v for v in (mm["min"].as_py(), mm["max"].as_py()) if v is not None)
    return len(seen) <= 1
