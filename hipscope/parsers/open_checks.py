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

    if one_pid(trace):
        return trace             # one process (the usual case): nothing to group
    parts = [_pid_spans(t) for t in (trace.kernels, trace.api)
             if len(t) and "pid" in t.data.column_names and t.valid("pid").any()]
    if not parts:
        return trace
    pids, inv = np.unique(np.concatenate([p[0] for p in parts]), return_inverse=True)
    if len(pids) < 2:
        return trace
    uniq = pids
    lo = np.full(len(pids), np.iinfo(np.int64).max)
    hi = np.full(len(pids), np.iinfo(np.int64).min)
    np.minimum.at(lo, inv, np.concatenate([p[1] for p in parts]))
    np.maximum.at(hi, inv, np.concatenate([p[2] for p in parts]))
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


def _pid_spans(t):
    """Each pid's first start and last end in one table (hash encoding, not a sort;
    pyarrow's group_by would import pandas)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..model.table import to_numpy

    d = t.data.filter(t.data.column("pid").is_valid())
    enc = pc.dictionary_encode(d.column("pid").combine_chunks().cast(pa.int64()))
    idx, k = to_numpy(enc.indices), len(enc.dictionary)
    lo = np.full(k, np.iinfo(np.int64).max)
    hi = np.full(k, np.iinfo(np.int64).min)
    np.minimum.at(lo, idx, to_numpy(d.column("start").cast(pa.int64())))
    np.maximum.at(hi, idx, to_numpy(d.column("end").cast(pa.int64())))
    return to_numpy(enc.dictionary), lo, hi


def one_pid(trace: Trace) -> bool:
    """Whether the kernels and API calls all name one process (or none): min == max."""
    import pyarrow.compute as pc

    seen: set = set()
    for t in (trace.kernels, trace.api):
        if len(t) and "pid" in t.data.column_names:
            mm = pc.min_max(t.data.column("pid"))
            seen.update(v for v in (mm["min"].as_py(), mm["max"].as_py()) if v is not None)
    return len(seen) <= 1
