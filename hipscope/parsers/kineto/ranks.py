"""A folder of Kineto rank traces (one file per rank of a distributed job) read as one
multi-rank trace: each rank's file is read on its own, then merged (devices of
different ranks stay distinct), ranks ordered by ``distributedInfo.rank``."""

from __future__ import annotations

import re
from pathlib import Path

from ...model import Trace
from ...model.trace import merge_traces
from ..base import TraceFormatError, check_cancel

__all__ = ["rank_files", "read_folder"]

_RANK_FILE = re.compile(r"(^|[^a-z])rank[-_]?\d+.*\.json(\.gz)?$|\.pt\.trace\.json(\.gz)?$",
                        re.IGNORECASE)
_MAX_FILES = 4096


def rank_files(folder: Path) -> list[Path]:
    """The rank traces directly in ``folder`` (``rank-0.json.gz``, ``sampled_rank-1.json.gz``,
    ``host_pid.123.pt.trace.json``...), by name."""
    try:
        names = sorted(p for p in folder.iterdir() if _RANK_FILE.search(p.name) and p.is_file())
    except OSError:
        return []
    return names[:_MAX_FILES]


def read_folder(folder: Path, read_file, progress, cancelled) -> Trace:
    """Every rank file of ``folder`` read by ``read_file(path, progress, cancelled)`` and
    merged; ``meta["ranks"]`` lists each rank's file, host pids and devices."""
    files = rank_files(folder)
    if not files:
        raise TraceFormatError(folder, None, "PyTorch profiler rank traces (rank-*.json.gz, "
                               "*.pt.trace.json[.gz])", "a folder without any")
    traces = []
    for i, f in enumerate(files):
        check_cancel(cancelled)
        traces.append(read_file(f, lambda x, i=i: progress((i + x) / len(files)), cancelled))
    order = sorted(range(len(files)), key=lambda i: (_rank(traces[i]) is None,
                                                    _rank(traces[i]) or 0, files[i].name))
    traces, files = [traces[i] for i in order], [files[i] for i in order]
    ranks = [_rank_entry(t, f) for t, f in zip(traces, files)]
    seen = [r["rank"] for r in ranks if r["rank"] is not None]
    warnings = []
    if len(set(seen)) < len(seen):
        warnings.append(f"{folder}: several files claim the same rank (distributedInfo): "
                        "are these traces of different runs?")
    elif len(seen) == len(ranks):
        # distinct ranks: merge_traces appends each rank's devices in order
        off = 0
        for r, t in zip(ranks, traces):
            r["devices"] = list(range(off, off + len(t.devices)))
            off += len(t.devices)
    merged = merge_traces(traces, names=[str(f) for f in files]) if len(traces) > 1 \
        else traces[0]
    meta = {**merged.meta, "sources": [str(f) for f in files], "ranks": ranks,
            "warnings": [*merged.meta.get("warnings", []), *warnings]}
    meta.pop("rank", None)               # each rank's own: see meta["ranks"]
    meta.pop("distributedInfo", None)
    return merged.with_meta(**meta) if len(traces) > 1 else traces[0].with_meta(**meta)


def _rank(tr: Trace) -> int | None:
    r = tr.meta.get("rank")
    return r if isinstance(r, int) and not isinstance(r, bool) else None


def _rank_entry(tr: Trace, f: Path) -> dict:
    # rows: this rank's share of the merged tables (they are concatenated in rank order),
    # so that analyses can tell two ranks' threads apart when their pid and tid agree
    return {"rank": _rank(tr), "source": str(f), "pids": list(tr.meta.get("pids", [])),
            "world_size": tr.meta.get("world_size"),
            "rows": {"markers": len(tr.markers), "api": len(tr.api)}}
