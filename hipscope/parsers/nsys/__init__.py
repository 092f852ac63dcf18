"""Nsight Systems SQLite exports (``nsys export --type sqlite``, what ``nsys stats`` reads).

Schema: NVIDIA's "SQLite Schema Reference" (Nsight Systems user guide) and the CUPTI
activity records its tables mirror. Read here: ``CUPTI_ACTIVITY_KIND_KERNEL`` (kernels),
``_RUNTIME`` / ``_DRIVER`` (API calls, domain ``cuda_runtime`` / ``cuda_driver``),
``_SYNCHRONIZATION`` (GPU-side markers of domain ``cuda_sync``), ``_MEMCPY`` / ``_MEMSET``
(copies), ``NVTX_EVENTS`` (marks, push/pop and start/end ranges), ``TARGET_INFO_GPU`` /
``TARGET_INFO_CUDA_DEVICE`` (devices), ``StringIds`` (every ``*Name``/``nameId``/``textId``),
``ENUM_*`` tables where present, ``META_DATA_EXPORT`` and
``TARGET_INFO_SESSION_START_TIME``. Tables and columns are used by presence (they change
between releases), and rows are sorted (2025.6+ no longer writes them in order).

Facts used: times are ns on the session's clock; ``globalTid``/``globalPid`` are
``hwId << 56 | vmId << 48 | pid << 24 | tid``; a kernel or copy shares ``correlationId``
with the runtime (else driver) call that launched it, and the kernels of a graph replay
share the ``cudaGraphLaunch``'s, so hipscope's graph-launch handling applies; with
node-level graph tracing, kernels carry ``graphNodeId`` (and ``graphId`` in newer
exports). Every file must pass ``PRAGMA quick_check`` (``parsers/_sqlite.py``).
"""

from __future__ import annotations

from pathlib import Path

from ...model import Trace
from ..base import register
from ..reading import is_sqlite
from .sniff import nsys_confidence

__all__ = ["NsysReader"]

# the sniff needs only the table names (.sniff); the reading stack (.db, .export and
# the table builders) is imported when a file is read
_LAZY = {"CLOCK": ".export", "read_export": ".export"}


def __getattr__(name: str):
    from .._lazy import lazy_attr

    return lazy_attr(__name__, _LAZY, name)


@register
class NsysReader:
    name = "nsys"
    description = "Nsight Systems SQLite export"
    patterns = ("*.sqlite",)
    priority = 55
    directories = False

    def sniff(self, path: Path) -> float:
        path = Path(path)
        if not path.is_file() or not is_sqlite(path):
            return 0.0
        from .._sqlite import SQL_ERRORS, connect_ro, schema_names  # an SQLite file

        try:
            conn = connect_ro(path)
            try:
                names = set(schema_names(conn))
            finally:
                conn.close()
        except SQL_ERRORS:
            return 0.0
        return nsys_confidence(names)

    def read(self, path, progress, cancelled) -> Trace:
        from .._sqlite import read_sqlite_input
        from .db import NsysDb
        from .export import read_export

        return read_sqlite_input(Path(path), "Nsight Systems", "export", NsysDb,
                                 lambda db: read_export(self.name, db, progress, cancelled))
