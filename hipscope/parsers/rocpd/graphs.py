"""HIP graph launches of a rocpd database (schema 3.0.2 on): per graph exec, how many
times it was launched, how many kernels those launches say they dispatched
(``rocpd_graph_launch.kernel_dispatch_count``) and how many dispatches carry its
``graph_exec_id``. The two counts differ when a profiler drops replayed kernels.

Per launch, the graph's kernel-node count and the launching call's (pid, correlation
id) go to ``meta["graph_launch_kernels"]`` (``[[pid, correlation_id, kernels], ...]``):
the graph-replay completeness analysis (``analysis/graphs.py``) takes them as each
launch's expected kernels instead of the launch history, and the reader warns with the
counts when launches carry at most ``FRACTION`` of their graphs' kernels."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .._common import warn
from ..base import TraceFormatError
from .db import Db, as_int, as_str

__all__ = ["FRACTION", "graph_launches", "launch_kernels", "warn_short_replays"]

FRACTION = 0.1  # as analysis/graphs.py: a launch carrying at most this share is incomplete


def _recorded(db: Db) -> dict[tuple[str, int], int]:
    """(guid, graph_exec_id) -> dispatches that carry it."""
    if "graph_exec_id" not in db.columns("rocpd_kernel_dispatch"):
        return {}
    rows = db.fetch_sql("SELECT guid, graph_exec_id, count(*) FROM rocpd_kernel_dispatch "
                        "WHERE graph_exec_id != 0 GROUP BY guid, graph_exec_id",
                        ["guid", "exec", "n"], "table rocpd_kernel_dispatch")
    n = len(rows["n"])
    return dict(zip(zip(as_str(rows["guid"], n).to_pylist(), as_int(rows["exec"], n).tolist()),
                    as_int(rows["n"], n, 0).tolist()))


def graph_launches(db: Db, warnings: list[str]) -> list[dict] | None:
    """One entry per graph exec (ordered by first launch); None before schema 3.0.2 or
    when the table cannot be read (then with a warning: the rest of the trace stands)."""
    if not (db.has("rocpd_graph_launch") and db.has("rocpd_kernel_dispatch")):
        return None
    try:
        return _summary(db)
    except TraceFormatError as exc:
        warn(warnings, "rocpd.graph_launches_unread",
             f"{exc}; graph launches are not summarised", db.path)
        return None
    except (ValueError, TypeError, pa.ArrowException) as exc:
        warn(warnings, "rocpd.graph_launches_unread",
             f"{db.path}: table rocpd_graph_launch: expected integer graph ids and counts, "
             f"found {type(exc).__name__}: {exc}; graph launches are not summarised",
             db.path)
        return None


def _summary(db: Db) -> list[dict]:
    # bare names: SQLite reads a double-quoted unknown column as a string literal
    rows = db.fetch_sql("SELECT guid, graph_exec_id, count(*), sum(kernel_dispatch_count), "
                        "min([start]) FROM rocpd_graph_launch "
                        "GROUP BY guid, graph_exec_id ORDER BY min([start])",
                        ["guid", "exec", "launches", "expected", "first"],
                        "table rocpd_graph_launch")
    n = len(rows["exec"])
    recorded = _recorded(db)
    out = []
    for guid, gexec, launches, expected in zip(as_str(rows["guid"], n).to_pylist(),
                                               as_int(rows["exec"], n).tolist(),
                                               as_int(rows["launches"], n, 0).tolist(),
                                               as_int(rows["expected"], n, 0).tolist()):
        out.append({"graph_exec_id": gexec, "launches": launches,
                    "kernels_launched": expected,
                    "kernels_recorded": recorded.get((guid, gexec), 0)})
    return out


def launch_kernels(db: Db) -> list[list[int]] | None:
    """``[pid, correlation id of the launching call, kernel nodes]`` per graph launch
    (None before 3.0.2, or when the table cannot be read: :func:`graph_launches` warns)."""
    if not db.has("rocpd_graph_launch") or not db.has("rocpd_event"):
        return None
    pid = ("P.pid", 'LEFT JOIN rocpd_info_process P ON P.id = G.pid AND P.guid = G.guid') \
        if db.has("rocpd_info_process") else ("G.pid", "")
    try:
        rows = db.fetch_sql(f"SELECT {pid[0]}, E.stack_id, G.kernel_dispatch_count "
                            f"FROM rocpd_graph_launch G {pid[1]} LEFT JOIN rocpd_event E "
                            "ON E.id = G.event_id AND E.guid = G.guid ORDER BY G.rowid",
                            ["pid", "stack", "n"], "table rocpd_graph_launch")
        n = len(rows["n"])
        cols = [as_int(rows[c], n) for c in ("pid", "stack", "n")]
    except (TraceFormatError, ValueError, TypeError, pa.ArrowException):
        return None
    ok = cols[1] >= 0
    return [[int(a), int(b), int(c)] for a, b, c in zip(*(c[ok] for c in cols))]


def warn_short_replays(path, launches: list[list[int]], k_pid: np.ndarray,
                       k_corr: np.ndarray, warnings: list[str]) -> None:
    """One warning with the counts when graph launches carry at most FRACTION of their
    graphs' kernel nodes (a profiler that drops graph-replay kernels)."""
    if not launches:
        return
    key = (k_pid.astype(np.int64) << 40) ^ k_corr.astype(np.int64)
    lk = np.array([(p << 40) ^ c for p, c, _ in launches], np.int64)
    expected = np.array([x[2] for x in launches], np.int64)
    found = np.searchsorted(np.sort(key), lk, "right") - np.searchsorted(np.sort(key), lk)
    short = (expected > 0) & (found <= FRACTION * expected)
    if short.any():
        warn(warnings, "rocpd.graph_replay_short",
             f"{path}: {int(short.sum()):,} of {len(launches):,} graph launches carry "
             f"{int(found[short].sum()):,} kernels where their graphs have "
             f"{int(expected[short].sum()):,} kernel nodes (rocpd_graph_launch."
             "kernel_dispatch_count): the profiler probably dropped graph-replay kernels",
             path)
