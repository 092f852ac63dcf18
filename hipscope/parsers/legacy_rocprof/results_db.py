"""Legacy rocprof results.db (SQLite): KERN, HIP/HSA, OPS, COPY, rocTX tables.

Opened through ``parsers/_sqlite.py`` (quoted read-only URI, ``PRAGMA quick_check``).
OPS/COPY rows link to HIP calls by (Index, pid); a row whose key is not unique (in its
table or in HIP), or whose Index names a HIP call that queues no GPU work, is left
unlinked with a warning rather than linked to a call that may be the wrong one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ...model import Trace, build_table, link_by_correlation
from .._common import copy_directions, nesting_depth, warn_no_kernels
from .._sqlite import SQL_ERRORS, error_text, open_checked, schema_columns
from ..base import (
    CancelledFn,
    ProgressFn,
    TraceFormatError,
    check_cancel,
    head_bytes,
)
from .common import (
    finish_legacy_meta,
    legacy_meta,
    side_info,
    build_devices,
    map_ids,
    queues_for,
    size_from_args,
    strip_quotes,
)
from .sniff import sniff_db
from .results_csv import assemble_kernels, counters_table, kernels_from_columns

class LegacyRocprofDbReader:
    name = "legacy-rocprof"
    description = "Legacy rocprof v1 results.db (SQLite)"
    patterns = ("results.db", "*.db")
    priority = 40
    directories = False

    def sniff(self, path: Path) -> float:
        return sniff_db(path)

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        path = Path(path)
        meta = legacy_meta(path, self.name)
        meta["file_kind"] = "results.db"
        dropped: dict[str, int] = {}
        if not path.is_file() or head_bytes(path, 16) != b"SQLite format 3\x00":
            raise TraceFormatError(path, "byte 0", "an SQLite database (results.db)",
                                   "no SQLite header")
        con = open_checked(path, "legacy rocprof results.db")  # small files: checked first
        try:
            tables = schema_columns(con)
            return self._read(path, con, tables, meta, dropped, progress, cancelled)
        except SQL_ERRORS as exc:
            raise TraceFormatError(path, None, "a readable legacy rocprof database",
                                   error_text(exc)) from None
        finally:
            con.close()

    def _fetch(self, path, con, table, columns, wanted) -> dict[str, list[Any]]:
        have = [c for c in wanted if c in columns]
        if not have:
            return {}
        q = ", ".join(f'"{c}"' for c in have)
        rows = con.execute(f'SELECT {q} FROM "{table}" ORDER BY rowid').fetchall()
        out = {c: [r[i] for r in rows] for i, c in enumerate(have)}
        return out

    def _times(self, path, table, d, n) -> tuple[np.ndarray, np.ndarray]:
        b, e = d.get("BeginNs"), d.get("EndNs")
        if b is None or e is None:
            raise TraceFormatError(path, f"table {table}", "BeginNs and EndNs columns",
                                   f"columns {sorted(d)}")
        for i in range(n):
            if not isinstance(b[i], int) or not isinstance(e[i], int):
                raise TraceFormatError(path, f"table {table} row {i + 1}",
                                       "integer BeginNs/EndNs", f"{b[i]!r}, {e[i]!r}")
        try:
            bb, ee = np.array(b, dtype=np.int64), np.array(e, dtype=np.int64)
        except OverflowError:
            raise TraceFormatError(path, f"table {table}", "BeginNs/EndNs within int64",
                                   "larger values") from None
        return bb, ee   # EndNs < BeginNs: the shared interval rule drops the row

    def _read(self, path, con, tables, meta, dropped, progress, cancelled) -> Trace:
        legacy = [t for t in ("KERN", "OPS", "HIP", "HSA", "COPY", "rocTX") if t in tables]
        if not legacy:
            raise TraceFormatError(path, "sqlite_master", "legacy rocprof tables (KERN, HIP, "
                                   "OPS, COPY, HSA, rocTX)", f"tables {sorted(tables)[:8]}")
        r = _DbRead(self, path, con, tables, meta, side_info(path, meta))
        r.api()
        check_cancel(cancelled)
        progress(0.3)
        kern = r.kern(dropped)
        check_cancel(cancelled)
        progress(0.6)
        ops = r.gpu_ops("OPS")
        copy = r.gpu_ops("COPY")
        r.devices(ops, copy, kern)
        if ops is not None:
            r.ops_kernels(ops, kern)
        if copy is not None:
            r.copies(copy)
        r.roctx()
        out = r.out
        if "kernels" not in out or len(out["kernels"]) == 0:
            rows = {t: con.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in legacy}
            warn_no_kernels(meta["warnings"], path, "tables " + ", ".join(
                f"{t}: {n} rows" for t, n in rows.items()))
        pids = set()
        for t in ("kernels", "api", "copies"):
            if t in out and "pid" in out[t].present:
                pids |= set(out[t].column("pid").drop_null().to_pylist())
        if pids:
            meta["pids"] = sorted(pids)
        meta.pop("_original_names", None)
        progress(1.0)
        return Trace(**out, meta=finish_legacy_meta(meta, dropped))


_OP_COLUMNS = ["BeginNs", "EndNs", "dev-id", "queue-id", "Name", "pid", "tid", "stream-id",
               "Index"]
_KERN_PROPS = ("dispatch_id", "dispatch_ns", "grid_x", "block_x", "lds_bytes",
               "scratch_bytes", "vgpr", "accum_vgpr", "sgpr")


def _ints(values: list, fill: int = -1) -> np.ndarray:
    """int64 of a fetched column, ``fill`` where a value is not an int."""
    return np.array([x if isinstance(x, int) else fill for x in values], dtype=np.int64)


# HIP calls that never queue GPU work: a kernel or copy whose Index names one of these
# has a wrong Index (getters, setters, creators, queries, version and module look-ups)
_NO_GPU_WORK = re.compile(r"(hipGet|hipDeviceGet|hipSetDevice|hipRuntimeGet|hipDriverGet|"
                          r"hipPeekAt|hipFuncGet|hipModuleGet|hipModuleLoad|hipPointerGet|"
                          r"hipEventCreate|hipStreamCreate|hipEventElapsed|hipEventQuery|"
                          r"hipStreamQuery|hipChooseDevice|hipDeviceCanAccess|__hip)")


def _repeated(corr: np.ndarray, pid: np.ndarray) -> np.ndarray:
    """Rows whose (pid, correlation id) occurs more than once (ids < 0 never do)."""
    if len(corr) == 0:
        return np.zeros(0, dtype=bool)
    _, inverse, counts = np.unique(np.stack([pid, corr], axis=1), axis=0,
                                   return_inverse=True, return_counts=True)
    return (counts[inverse.ravel()] > 1) & (corr >= 0)


class _DbRead:
    """One read of a results.db: the tables built so far (``out``) and the API links."""

    def __init__(self, reader, path, con, tables, meta, info):
        self.reader, self.path, self.con, self.tables = reader, path, con, tables
        self.meta, self.info = meta, info
        self.prov = meta["provenance"]
        self.out: dict[str, Any] = {}
        self.api_corr = self.api_pid = self.api_idle = None
        self.api_args: list[Any] = []
        self.mapping: dict[int, int] = {}

    def fetch(self, table: str, wanted: list[str]) -> dict[str, list[Any]]:
        return self.reader._fetch(self.path, self.con, table, self.tables[table], wanted)

    def api(self) -> None:
        """HIP then HSA calls; HIP.Index is roctracer's correlation id."""
        parts = []
        for t, domain in (("HIP", "HIP_RUNTIME_API"), ("HSA", "HSA_API")):
            if t not in self.tables:
                continue
            d = self.fetch(t, ["BeginNs", "EndNs", "pid", "tid", "Name", "args", "Index"])
            n = len(d.get("Name", d.get("BeginNs", [])))
            if n == 0:
                continue
            b, e = self.reader._times(self.path, t, d, n)
            parts.append((t, domain, d, n, b, e))
        if not parts:
            return
        names, doms, starts, ends, pids, tids, corr = [], [], [], [], [], [], []
        hip_rows = 0
        for t, domain, d, n, b, e in parts:
            names += [str(x) for x in d.get("Name", [""] * n)]
            doms += [domain] * n
            starts.append(b)
            ends.append(e)
            pids += d.get("pid", [None] * n)
            tids += d.get("tid", [None] * n)
            corr += d.get("Index", [None] * n) if t == "HIP" else [None] * n
            self.api_args += d.get("args", [None] * n)
            if t == "HIP":
                hip_rows = n
        self.out["api"] = build_table("api", {
            "name": names, "domain": doms, "start": np.concatenate(starts),
            "end": np.concatenate(ends), "pid": pids, "tid": tids, "correlation_id": corr})
        self.prov["api.correlation_id"] = "HIP.Index (roctracer correlation id)"
        if hip_rows:
            self.api_corr = _ints(corr[:hip_rows])
            self.api_pid = _ints(pids[:hip_rows])
            self.api_idle = np.array([bool(_NO_GPU_WORK.match(x)) for x in names[:hip_rows]],
                                     dtype=bool)

    def kern(self, dropped: dict[str, int]) -> dict[str, Any] | None:
        """KERN (as results.csv): kernel properties and counters."""
        if "KERN" not in self.tables:
            return None
        cols_k = self.tables["KERN"]
        rows = self.con.execute('SELECT * FROM "KERN" ORDER BY rowid').fetchall()
        if not rows:
            return None
        lower = [c.strip().lower() for c in cols_k]
        arrs = {}
        originals = {}
        for i, c in enumerate(lower):
            if c in arrs:
                continue
            arrs[c] = pa.array([None if r[i] is None else str(r[i]) for r in rows],
                               type=pa.string())
            originals[c] = cols_k[i]
        self.meta["_original_names"] = originals
        return kernels_from_columns(self.path, arrs, lower, lambda i: f"table KERN row {i + 1}",
                                    self.meta, dropped, "KERN")

    def gpu_ops(self, table: str):
        """OPS (kernels) or COPY rows with their times, None when absent or empty."""
        if table not in self.tables:
            return None
        d = self.fetch(table, _OP_COLUMNS)
        n = len(d.get("BeginNs", []))
        if not n:
            return None
        b, e = self.reader._times(self.path, table, d, n)
        return d, n, b, e

    def devices(self, ops, copy, kern) -> None:
        dev_raw: list[int] = []
        if ops is not None:
            dev_raw += [x for x in ops[0].get("dev-id", []) if isinstance(x, int)]
        elif kern is not None:
            dev_raw += kern["_raw_gpu"].tolist()
        if copy is not None:
            dev_raw += [x for x in copy[0].get("dev-id", []) if isinstance(x, int)]
        out = self.out
        if ops is None and kern is not None:
            out.update(assemble_kernels(self.path, kern, self.info, self.meta))
            self.mapping = {int(r): int(i) for r, i in zip(
                out["devices"].strings("raw_id"), out["devices"].numpy("index"))}
        else:
            out["devices"], self.mapping = build_devices(dev_raw, self.info)

    def link(self, corr: np.ndarray, d: dict, n: int, table: str) -> np.ndarray | None:
        """api_index by (Index, pid) = (HIP.Index, pid); None without HIP rows. A row
        whose key is not unique (in its table or in HIP) is left unlinked, with a
        warning: any link chosen for it could be the wrong one."""
        if self.api_corr is None:
            return None
        pid = _ints(d.get("pid", [None] * n))
        link = link_by_correlation(corr, pid, self.api_corr, self.api_pid)
        link[corr < 0] = -1
        own = _repeated(corr, pid)
        hip = (link >= 0) & _repeated(self.api_corr, self.api_pid)[np.maximum(link, 0)]
        ambiguous = own | hip
        if ambiguous.any():
            link[ambiguous] = -1
            self.meta["warnings"].append(
                f"{self.path}: {int(ambiguous.sum())} of {n} rows of table {table} are "
                "left unlinked from their HIP calls because their Index (correlation id) "
                f"is not unique: {int(own.sum())} share it with another {table} row, "
                f"{int((hip & ~own).sum())} more match several HIP rows")
        idle = (link >= 0) & self.api_idle[np.maximum(link, 0)]
        if idle.any():
            names = sorted({self.out["api"].strings("name")[a] for a in link[idle].tolist()})
            link[idle] = -1
            self.meta["warnings"].append(
                f"{self.path}: {int(idle.sum())} of {n} rows of table {table} have the "
                f"Index of a HIP call that queues no GPU work ({', '.join(names[:3])}); "
                "the Index is wrong, so they are left unlinked")
        return link

    def ops_kernels(self, ops, kern) -> None:
        path, out = self.path, self.out
        d, n, b, e = ops
        names = strip_quotes(d.get("Name", [""] * n))
        gv = np.array([isinstance(x, int) for x in d.get("dev-id", [None] * n)])
        if not gv.all():
            raise TraceFormatError(path, "table OPS", "a dev-id on every kernel row",
                                   f"{int((~gv).sum())} rows without one")
        dev = map_ids(_ints(d.get("dev-id", [0] * n), 0), self.mapping)
        corr = _ints(d.get("Index", [None] * n))
        kcols: dict[str, Any] = {"name": names, "device": dev, "start": b, "end": e,
                                 "pid": d.get("pid"), "tid": d.get("tid"),
                                 "stream": d.get("stream-id"),
                                 "correlation_id": pa.array(corr, mask=corr < 0)}
        self.prov["kernels.correlation_id"] = "OPS.Index (= HIP.Index)"
        if "queue-id" in d:
            qv = np.array([isinstance(x, int) for x in d["queue-id"]])
            q, out["queues"] = queues_for(dev, _ints(d["queue-id"], 0), qv)
            kcols["queue"] = pa.array(q, mask=q < 0 if (q < 0).any() else None)
        link = self.link(corr, d, n, "OPS")
        if link is not None:
            kcols["api_index"] = pa.array(link, mask=link < 0, type=pa.int32())
        ct = self._merge_kern(kcols, kern, names, n) if kern is not None else None
        out["kernels"] = build_table("kernels", kcols)
        if ct is not None:
            out["counters"] = ct

    def _merge_kern(self, kcols: dict, kern: dict, names: list[str], n: int):
        kn = kern["name"]
        if kn != names:
            self.meta["warnings"].append(
                f"{self.path}: tables KERN ({len(kn)} rows) and OPS ({n} rows) do "
                "not list the same kernels in the same order; kernels come "
                "from OPS and KERN's properties/counters were left out")
            return None
        for c in _KERN_PROPS:
            if c in kern:
                kcols[c] = kern[c]
        cn, cv, ck = kern["_counters"]
        self.prov["kernels (properties, counters)"] = "KERN rows merged with OPS in order"
        return counters_table(cn, cv, ck, kcols.get("dispatch_id"))

    def copies(self, copy) -> None:
        dc, nc, bc, ec = copy
        names = [str(x) for x in dc.get("Name", [""] * nc)]
        ccols: dict[str, Any] = {"direction": copy_directions(names), "name": names,
                                 "start": bc, "end": ec, "pid": dc.get("pid"),
                                 "tid": dc.get("tid"), "stream": dc.get("stream-id")}
        gv = np.array([isinstance(x, int) for x in dc.get("dev-id", [None] * nc)])
        if gv.any():
            g = map_ids(_ints(dc.get("dev-id", [0] * nc), 0), self.mapping)
            ccols["device"] = pa.array(g, mask=~gv if (~gv).any() else None)
        corr = _ints(dc.get("Index", [None] * nc))
        ccols["correlation_id"] = pa.array(corr, mask=corr < 0)
        link = self.link(corr, dc, nc, "COPY")
        if link is not None:
            ccols["api_index"] = pa.array(link, mask=link < 0, type=pa.int32())
            sizes = [size_from_args(self.api_args[a]) if a >= 0 else None
                     for a in link.tolist()]
            if any(s is not None for s in sizes):
                ccols["bytes"] = sizes
                self.prov["copies.bytes"] = "sizeBytes(...) argument of the linked HIP call"
        self.out["copies"] = build_table("copies", ccols)

    def roctx(self) -> None:
        """rocTX ranges; rows one ns long are tblextr's instant marks (end = start)."""
        if "rocTX" not in self.tables:
            return
        dm = self.fetch("rocTX", ["BeginNs", "EndNs", "pid", "tid", "Name"])
        nm = len(dm.get("BeginNs", []))
        if not nm:
            return
        bm, em = self.reader._times(self.path, "rocTX", dm, nm)
        em = np.where(em - bm == 1, bm, em)
        lane = _ints(dm.get("tid", [None] * nm))
        self.out["markers"] = build_table("markers", {
            "name": [str(x) for x in dm.get("Name", [""] * nm)],
            "domain": ["roctx"] * nm, "start": bm, "end": em,
            "depth": nesting_depth(bm, em, lane), "pid": dm.get("pid"),
            "tid": dm.get("tid")})
