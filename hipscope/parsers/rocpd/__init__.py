"""rocpd SQLite databases (rocprofv3 ``--output-format rocpd``, default from ROCm 7.0;
``<pid>_results.db``).

Schema: rocprofiler-sdk ``source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql`` (physical
tables carry a per-run ``{{uuid}}`` suffix), ``rocpd_views.sql`` (unsuffixed views over
them) and ``data_views.sql`` (``kernels``, ``regions``, ``samples``, ``memory_copies``,
``processes``, ``counters_collection``...). The two big views, ``kernels`` and
``regions``, are rebuilt from the physical tables when those are laid out as expected
(``physical.py``: 2-3x less work than SQLite evaluating the views); everything else,
and any database that is not so, is read through the unsuffixed views
(``HIPSCOPE_ROCPD_PHYSICAL=0`` forces the views). Both give the same trace.
Those data views inner-join their ids: kernels they drop are read from
``rocpd_kernel_dispatch`` and kept, and lost regions/copies are warned about
(``dangling.py``). Every file must pass ``PRAGMA quick_check`` (``parsers/_sqlite.py``):
b-tree damage drops rows without any SQL error.
Every row carries ``guid`` (one per profiled process); several databases (one per
process or rank) read as one trace. Schema versions 3.0.0-3.0.5 are known; a newer one
is read with a warning (``version.py``); HIP graph launches (3.0.2 on) are summarised in
``meta["rocpd_graph_launches"]``, each launch's kernel nodes in
``meta["graph_launch_kernels"]`` (``graphs.py``); SPM counters (3.0.3 on) are samples
series (``spm.py``); HIP event records (3.0.4 on) are GPU-side ``hip_event`` markers
with their cross-stream waits (``hip_events.py``). The process's job rank is read from
its recorded environment into ``meta["rank"]`` (``process_rank.py``). docs/readers.md
has the table.

Facts from ``source/lib/output/generateRocpd.cpp``: ``rocpd_event.stack_id`` is the
internal correlation id and ``rocpd_event.correlation_id`` the *external* one, so a kernel
or copy links to its launching API region by ``stack_id`` (and guid), not ``corr_id``.
API calls and roctx ranges are regions (category = buffer-tracing kind name, e.g.
``HIP_RUNTIME_API_EXT``, ``MARKER_CORE_API``; name = operation); calls whose start equals
their end are samples instead. roctx messages sit in the event's ``extdata``
(``{"message": ...}``). Agents' ``id``/``absolute_index`` are KFD node ids; queue and
stream ids are the profiler's handles with names "Queue N"/"Stream N".
"""


from __future__ import annotations

from pathlib import Path

from ...model import Trace, merge_traces
from ..base import TraceFormatError, check_cancel, register
from ..reading import is_sqlite
from .sniff import db_files, is_rocpd, table_names

__all__ = ["RocpdReader", "is_rocpd"]

# the sniff needs only .sniff; .db and .tables (the reading stack) are imported to read
_LAZY = {"Db": ".db", "read_db": ".tables"}


def __getattr__(name: str):
    from .._lazy import lazy_attr

    return lazy_attr(__name__, _LAZY, name)

@register
class RocpdReader:
    name = "rocpd"
    description = "rocprofv3 rocpd SQLite database"
    patterns = ("*_results.db", "*.db")
    priority = 60
    directories = True

    def sniff(self, path: Path) -> float:
        path = Path(path)
        if path.is_dir():
            try:
                return 0.9 if db_files(path) else 0.0
            except OSError:
                return 0.0
        if not is_sqlite(path):
            return 0.0
        from .._sqlite import SQL_ERRORS

        try:
            names = table_names(path)
        except SQL_ERRORS:
            return 0.0
        if "rocpd_metadata" in names:
            return 1.0
        if any(n.startswith("rocpd_") for n in names):
            return 0.9
        return 0.0

    def read(self, path, progress, cancelled) -> Trace:
        path = Path(path)
        if path.is_dir():
            files = db_files(path)
            if not files:
                raise TraceFormatError(path, None, "a folder holding rocpd *_results.db files",
                                       "no rocpd database in it")
        else:
            files = [path]
        traces = []
        for i, f in enumerate(files):
            check_cancel(cancelled)

            def sub(x: float, i=i) -> None:
                progress((i + x) / len(files))

            traces.append(self._read_one(f, sub, cancelled))
        if len(traces) == 1:
            return traces[0]
        return merge_traces(traces, meta={
            "sources": [str(f) for f in files],
            "pids": sorted({p for t in traces for p in t.meta.get("pids", [])}),
            **_folder_ranks(traces)})

    # ------------------------------------------------------------------
    def _read_one(self, path: Path, progress, cancelled) -> Trace:
        from .._sqlite import read_sqlite_input
        from .db import Db
        from .tables import read_db

        # quick_check runs while the views are read
        return read_sqlite_input(path, "rocpd", "database", Db,
                                 lambda db: read_db(self.name, db, progress, cancelled))


def _folder_ranks(traces: list[Trace]) -> dict:
    """Each pid's rank where the databases record several (``process_rank.py``); the
    merge keeps a rank only when all agree."""
    pairs = sorted({(p, r) for t in traces for p, r in t.meta.get("process_ranks") or []} |
                   {(p, t.meta["rank"]) for t in traces if t.meta.get("rank") is not None
                    for p in t.meta.get("pids", [])[:1]})
    return {"process_ranks": [list(x) for x in pairs]} \
        if len({r for _, r in pairs}) > 1 else {}
