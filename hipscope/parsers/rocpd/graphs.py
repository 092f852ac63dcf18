"""HIP graph launches of a rocpd database (schema 3.0.2 on): per graph exec, how many
times it was launched, how many kernels those launches say they dispatched
(``rocpd_graph_launch.kernel_dispatch_count``) and how many dispatches carry its
``graph_exec_id``. The two counts differ when a profiler drops replayed kernels."""

from __future__ import annotations

import pyarrow as pa

from ..base import TraceFormatError
from .db import Db, as_int, as_str

__all__ = ["graph_launches"]


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
        warnings.append(f"{exc}; graph launches are not summarised")
        return None
    except (ValueError, TypeError, pa.ArrowException) as exc:
        warnings.append(f"{db.path}: table rocpd_graph_launch: expected integer graph ids "
                        f"and counts, found {type(exc).__name__}: {exc}; graph launches are "
                        "not summarised")
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
