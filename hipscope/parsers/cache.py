"""On-disk cache of parsed traces: Arrow IPC files memory-mapped on reopen.

Keyed by the reader, hipscope's schema version and every source file's absolute
path, size and mtime, so an edited or replaced file is parsed again. Location:
``$HIPSCOPE_CACHE_DIR`` or the user cache directory (platformdirs).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from ..model import SPECS, TABLES, Trace
from ..model.table import Table

SCHEMA_VERSION = 2


def cache_dir() -> Path:
    env = os.environ.get("HIPSCOPE_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("hipscope")) / "traces"


def _members(path: Path) -> list[Path]:
    """The files a read of ``path`` may depend on: a folder's files, or a file and its
    siblings (readers open the rest of a CSV set, sysinfo.txt, a workload folder)."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file())
    return sorted({path, *(p for p in path.parent.iterdir() if p.is_file())})


def cache_key(reader: str | None, path: Path) -> str:
    """Key of ``path`` read by ``reader`` (None: whichever reader sniffing picks)."""
    h = hashlib.sha256()
    h.update(f"{reader or '*'}\0{SCHEMA_VERSION}\0{path.resolve()}\0".encode())
    for m in _members(path):
        st = m.stat()
        h.update(f"{m.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:32]


def load(key: str) -> Trace | None:
    d = cache_dir() / key
    meta_file = d / "meta.json"
    if not meta_file.exists():
        return None
    try:
        meta = json.loads(meta_file.read_text())
        tables = {}
        for name in TABLES:
            src = pa.memory_map(str(d / f"{name}.arrow"), "r")
            tables[name] = Table(SPECS[name], ipc.open_file(src).read_all())
    except (OSError, ValueError, pa.ArrowException):
        return None
    return Trace(meta={**meta, "cached": True}, **tables)


def store(key: str, trace: Trace) -> None:
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
    try:
        for name, table in trace.tables().items():
            with pa.OSFile(str(tmp / f"{name}.arrow"), "wb") as sink:
                with ipc.new_file(sink, table.data.schema) as writer:
                    writer.write_table(table.data)
        (tmp / "meta.json").write_text(json.dumps(trace.meta, default=str))
        dest = root / key
        if dest.exists():
            shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
