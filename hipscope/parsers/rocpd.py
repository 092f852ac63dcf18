"""rocpd SQLite databases (rocprofv3 ``--output-format rocpd``, default from ROCm 7.0;
``<pid>_results.db``).

Schema: rocprofiler-sdk ``source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql`` (physical
tables carry a per-run ``{{uuid}}`` suffix), ``rocpd_views.sql`` (unsuffixed views over
them) and ``data_views.sql`` (``kernels``, ``regions``, ``samples``, ``memory_copies``,
``processes``, ``counters_collection``...). This reader only queries the unsuffixed views.
Every row carries ``guid`` (one per profiled process); several databases (one per
process or rank) read as one trace.

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

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..model import Trace, build_table, link_by_correlation, merge_traces
from .base import TraceFormatError, check_cancel, register
from .rocprofv3_json import marker_depth

SQLITE_MAGIC = b"SQLite format 3\x00"
_MARKER_CATEGORIES = ("MARKER_CORE_API", "MARKER_CORE_RANGE_API")
_DIRECTIONS = {
    "MEMORY_COPY_HOST_TO_DEVICE": "HtoD", "MEMORY_COPY_DEVICE_TO_HOST": "DtoH",
    "MEMORY_COPY_DEVICE_TO_DEVICE": "DtoD", "MEMORY_COPY_HOST_TO_HOST": "HtoH",
    "MEMORY_COPY_PEER_TO_PEER": "PtoP",
}
_LEGACY_TABLES = {"KERN", "HIP", "OPS", "HSA", "COPY"}


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def _connect(path: Path) -> sqlite3.Connection:
    uri = "file:" + str(Path(path).resolve()).replace("?", "%3f").replace("#", "%23") + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    # a damaged file must not raise UnicodeDecodeError from deep inside a fetch
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    return conn


def _table_names(path: Path) -> set[str]:
    conn = _connect(path)
    try:
        return {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    finally:
        conn.close()


def is_rocpd(path: Path) -> bool:
    """SQLite magic and rocpd_ tables/views (cheap: reads sqlite_master only)."""
    if not path.is_file() or not _is_sqlite(path):
        return False
    try:
        names = _table_names(path)
    except (sqlite3.Error, UnicodeDecodeError):
        return False
    return "rocpd_metadata" in names or any(n.startswith("rocpd_") for n in names)


def _db_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix == ".db" and is_rocpd(p))


class _Db:
    """A read-only connection with error translation and column-wise fetches."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.conn = _connect(path)
            self.names = {r[0] for r in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise TraceFormatError(path, "sqlite_master", "a readable SQLite database",
                                   str(exc)) from None
        self._cols: dict[str, list[str]] = {}

    def close(self) -> None:
        self.conn.close()

    def has(self, name: str) -> bool:
        return name in self.names

    def columns(self, view: str) -> list[str]:
        if view not in self._cols:
            try:
                self._cols[view] = [r[1] for r in self.conn.execute(
                    f'PRAGMA table_info("{view}")')]
            except (sqlite3.Error, UnicodeDecodeError) as exc:
                raise TraceFormatError(self.path, f"table {view}", "a readable rocpd view",
                                       str(exc)) from None
        return self._cols[view]

    def fetch(self, view: str, wanted: Sequence[str], where: str = "",
              required: Sequence[str] = (), extra: dict[str, str] | None = None,
              ) -> dict[str, pa.Array]:
        """Columns of a view as pyarrow arrays; columns the view lacks are left out
        (a required one missing is a TraceFormatError)."""
        if not self.has(view):
            raise TraceFormatError(self.path, f"table {view}",
                                   f"the rocpd view {view!r}", "no such table or view")
        have = set(self.columns(view))
        missing = [c for c in required if c not in have]
        if missing:
            raise TraceFormatError(self.path, f"table {view}",
                                   f"columns {', '.join(missing)}",
                                   f"only {', '.join(sorted(have)) or 'no columns'}")
        cols = [c for c in wanted if c in have]
        exprs = [f'"{c}"' for c in cols]
        for alias, expr in (extra or {}).items():
            cols.append(alias)
            exprs.append(expr)
        sql = f'SELECT {", ".join(exprs)} FROM "{view}" {where}'
        try:
            rows = self.conn.execute(sql).fetchall()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise TraceFormatError(self.path, f"table {view}",
                                   "rows readable with the rocpd schema", str(exc)) from None
        if not rows:
            return {c: pa.array([], type=pa.null()) for c in cols}
        out = {}
        for c, vals in zip(cols, zip(*rows)):
            v0 = vals[0]
            if type(v0) is int:  # fast path: integer column without NULLs
                try:
                    out[c] = pa.array(np.array(vals, dtype=np.int64))
                    continue
                except (TypeError, ValueError, OverflowError):
                    pass
            try:
                out[c] = pa.array(vals)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                out[c] = pa.array([None if v is None else str(v) for v in vals],
                                  type=pa.string())
        return out


def _int(arr: pa.Array | None, n: int, fill: int = -1) -> np.ndarray:
    """An integer column as int64 numpy with nulls as ``fill``."""
    if arr is None or len(arr) == 0 or pa.types.is_null(arr.type):
        return np.full(n, fill, dtype=np.int64)
    if not pa.types.is_integer(arr.type):
        try:
            arr = arr.cast(pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            arr = pc.cast(pc.cast(arr, pa.string()), pa.int64(), safe=False)
    return pc.fill_null(arr.cast(pa.int64()), fill).to_numpy(zero_copy_only=False)


def _str(arr: pa.Array | None, n: int) -> pa.Array:
    if arr is None or len(arr) == 0 or pa.types.is_null(arr.type):
        return pa.nulls(n, pa.string())
    return arr if pa.types.is_string(arr.type) else pc.cast(arr, pa.string())


def _group(*cols: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Distinct rows of several int64 columns (sorted) and each row's group number."""
    n = len(cols[0])
    order = np.lexsort(cols[::-1])
    sc = [c[order] for c in cols]
    new = np.ones(n, dtype=bool)
    if n:
        new[1:] = np.any([c[1:] != c[:-1] for c in sc], axis=0)
    gid_sorted = np.cumsum(new) - 1
    inverse = np.empty(n, np.int64)
    inverse[order] = gid_sorted
    return [c[new] for c in sc], inverse


def _masked(vals: np.ndarray, invalid: np.ndarray | None = None) -> pa.Array | None:
    mask = vals < 0 if invalid is None else invalid
    if len(vals) == 0 or mask.all():
        return None
    return pa.array(vals, mask=mask if mask.any() else None)


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
                return 0.9 if _db_files(path) else 0.0
            except OSError:
                return 0.0
        if not _is_sqlite(path):
            return 0.0
        try:
            names = _table_names(path)
        except (sqlite3.Error, UnicodeDecodeError):
            return 0.0
        if "rocpd_metadata" in names:
            return 1.0
        if any(n.startswith("rocpd_") for n in names):
            return 0.9
        return 0.0

    def read(self, path, progress, cancelled) -> Trace:
        path = Path(path)
        if path.is_dir():
            files = _db_files(path)
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
        return merge_traces(traces, meta={"sources": [str(f) for f in files],
                                          "pids": sorted({p for t in traces
                                                          for p in t.meta.get("pids", [])})})

    # ------------------------------------------------------------------
    def _read_one(self, path: Path, progress, cancelled) -> Trace:
        if not path.is_file():
            raise TraceFormatError(path, None, "a rocpd SQLite file", "not a file")
        if not _is_sqlite(path):
            raise TraceFormatError(path, "byte 0", "an SQLite 3 database (rocpd)",
                                   "no SQLite header")
        db = _Db(path)
        try:
            return self._read_db(db, progress, cancelled)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise TraceFormatError(path, None, "a readable rocpd database", str(exc)) from None
        except (ValueError, TypeError, KeyError, IndexError, OverflowError,
                pa.ArrowException) as exc:
            raise TraceFormatError(path, None, "rows that follow the rocpd schema",
                                   f"{type(exc).__name__}: {exc}") from None
        finally:
            db.close()

    def _read_db(self, db: _Db, progress, cancelled) -> Trace:
        path = db.path
        if not any(n.startswith("rocpd_") for n in db.names):
            legacy = _LEGACY_TABLES & db.names
            found = (f"a legacy rocprof results.db (tables {', '.join(sorted(legacy))})"
                     if legacy else "no rocpd_ tables")
            raise TraceFormatError(path, "sqlite_master",
                                   "rocpd tables (rocpd_metadata, rocpd_info_agent, ...)", found)
        warnings: list[str] = []
        meta: dict[str, Any] = {"format": self.name, "sources": [str(path)],
                                "clock": "CLOCK_BOOTTIME", "tool": "rocprofv3"}
        # ---- metadata, processes
        if db.has("rocpd_metadata"):
            md = db.fetch("rocpd_metadata", ["tag", "value"])
            if len(md.get("tag", [])):
                meta["rocpd_metadata"] = dict(zip(_str(md["tag"], 0).to_pylist(),
                                                  _str(md["value"], 0).to_pylist()))
        guid_code: dict[str, int] = {}

        def gcode(arr: pa.Array | None, n: int) -> np.ndarray:
            enc = pc.dictionary_encode(_str(arr, n))
            lut = np.array([guid_code.setdefault(v, len(guid_code))
                            for v in enc.dictionary.to_pylist()] + [-1], dtype=np.int64)
            idx = pc.fill_null(enc.indices, len(lut) - 1).to_numpy(zero_copy_only=False)
            return lut[idx]

        host_of_nid: dict[int, str] = {}
        if db.has("processes"):
            pr = db.fetch("processes", ["guid", "nid", "pid", "init", "fini", "start", "end",
                                        "command", "hostname"])
            n = len(next(iter(pr.values()))) if pr else 0
            pids = [int(p) for p in _int(pr.get("pid"), n).tolist() if p >= 0]
            meta["pids"] = sorted(set(pids))
            cmds = [c for c in _str(pr.get("command"), n).to_pylist() if c]
            if cmds:
                meta["command"] = cmds[0] if len(set(cmds)) == 1 else sorted(set(cmds))
            hosts = _str(pr.get("hostname"), n).to_pylist()
            for nid, h in zip(_int(pr.get("nid"), n).tolist(), hosts):
                if h:
                    host_of_nid[nid] = h
            if len(set(h for h in hosts if h)) == 1:
                meta["host"] = next(h for h in hosts if h)
            for key in ("init", "fini"):
                v = [x for x in _int(pr.get(key), n).tolist() if x >= 0]
                if v:
                    meta[f"{key}_time"] = min(v) if key == "init" else max(v)
        if db.has("rocpd_info_node") and not host_of_nid:
            nd = db.fetch("rocpd_info_node", ["id", "hostname"])
            n = len(next(iter(nd.values())))
            for nid, h in zip(_int(nd.get("id"), n).tolist(), _str(nd.get("hostname"), n)
                              .to_pylist()):
                if h:
                    host_of_nid[nid] = h
        progress(0.05)

        # ---- devices (GPU agents)
        ag = db.fetch("rocpd_info_agent",
                      ["guid", "nid", "id", "type", "absolute_index", "logical_index",
                       "type_index", "name", "product_name", "extdata"],
                      where="WHERE \"type\" = 'GPU'", required=["type"])
        na = len(next(iter(ag.values())))
        a_nid = _int(ag.get("nid"), na, 0)
        a_abs = _int(ag.get("absolute_index"), na)
        a_id = _int(ag.get("id"), na)
        a_abs = np.where(a_abs < 0, a_id, a_abs)
        a_log = _int(ag.get("logical_index"), na)
        a_names = _str(ag.get("name"), na).to_pylist()
        a_prod = _str(ag.get("product_name"), na).to_pylist()
        a_ext = _str(ag.get("extdata"), na).to_pylist()
        dev_key: dict[tuple[int, int], int] = {}
        dev_rows: list[dict[str, Any]] = []
        order = sorted(range(na), key=lambda i: (a_nid[i], a_abs[i]))
        for i in order:
            key = (int(a_nid[i]), int(a_abs[i]))
            if key in dev_key:
                continue
            ext: dict[str, Any] = {}
            if a_ext[i]:
                try:
                    ext = json.loads(a_ext[i])
                    if not isinstance(ext, dict):
                        ext = {}
                except ValueError:
                    ext = {}
            mem = ext.get("mem_banks")
            mem_bytes = None
            if isinstance(mem, list):
                mem_bytes = sum(int(b.get("size_in_bytes", 0)) for b in mem
                                if isinstance(b, dict)) or None
            cu = ext.get("cu_count")
            dev_key[key] = len(dev_rows)
            dev_rows.append({
                "index": len(dev_rows),
                "name": a_prod[i] or a_names[i] or f"GPU {a_log[i]}",
                "vendor": "AMD", "arch": a_names[i] or None,
                "compute_units": int(cu) if isinstance(cu, int) and cu > 0 else None,
                "raw_id": str(key[1]), "host": host_of_nid.get(key[0]),
                "memory_bytes": mem_bytes,
            })
        devices = build_table("devices", {c: [r[c] for r in dev_rows] for c in
                                          ("index", "name", "vendor", "arch", "compute_units",
                                           "raw_id", "host", "memory_bytes")},
                              n=len(dev_rows))

        def to_device(nid: np.ndarray, absidx: np.ndarray) -> np.ndarray:
            out = np.full(len(absidx), -1, np.int64)
            for (kn, ka), d in dev_key.items():
                out[(absidx == ka) & ((nid == kn) | (nid < 0))] = d
            return out

        check_cancel(cancelled)
        progress(0.1)

        # ---- API regions and markers
        rg = db.fetch("regions", ["guid", "category", "name", "pid", "tid", "start", "end",
                                  "stack_id"],
                      required=["category", "name", "start", "end"],
                      extra={"message": "CASE WHEN category LIKE 'MARKER%' THEN "
                                        "json_extract(extdata, '$.message') END"}
                      if "extdata" in db.columns("regions") else None)
        nr = len(rg["start"])
        r_cat = _str(rg["category"], nr)
        is_marker = np.asarray(pc.fill_null(pc.is_in(r_cat, pa.array(_MARKER_CATEGORIES)),
                                            False).to_numpy(zero_copy_only=False), dtype=bool)
        r_guid = gcode(rg.get("guid"), nr)
        r_start, r_end = _int(rg["start"], nr, 0), _int(rg["end"], nr, 0)
        r_stack = _int(rg.get("stack_id"), nr)
        r_pid, r_tid = _int(rg.get("pid"), nr), _int(rg.get("tid"), nr)
        api_rows = np.nonzero(~is_marker)[0]
        a_take = pa.array(api_rows, type=pa.int64())
        api_stack = r_stack[api_rows]
        api_guid = r_guid[api_rows]
        api = build_table("api", {
            "name": _str(rg["name"], nr).take(a_take),
            "domain": r_cat.take(a_take),
            "start": r_start[api_rows], "end": np.maximum(r_end[api_rows], r_start[api_rows]),
            "pid": _masked(r_pid[api_rows]), "tid": _masked(r_tid[api_rows]),
            "correlation_id": _masked(api_stack),
        }, n=len(api_rows))

        mk_rows = np.nonzero(is_marker)[0]
        m_take = pa.array(mk_rows, type=pa.int64())
        m_names = _str(rg["name"], nr).take(m_take)
        if "message" in rg:
            msg = _str(rg["message"], nr).take(m_take)
            m_names = pc.if_else(pc.fill_null(pc.greater(pc.utf8_length(msg), 0), False),
                                 msg, m_names)
        m_start = r_start[mk_rows]
        m_end = np.maximum(r_end[mk_rows], m_start)
        m_pid, m_tid = r_pid[mk_rows], r_tid[mk_rows]
        # instant roctx marks are samples (start == end)
        if db.has("samples"):
            sm_cols = db.columns("samples")
            sm = db.fetch("samples", ["category", "name", "pid", "tid", "timestamp"],
                          where="WHERE category IN ('MARKER_CORE_API', 'MARKER_CORE_RANGE_API')",
                          extra={"message": "json_extract(extdata, '$.message')"}
                          if "extdata" in sm_cols else None)
            ns = len(sm.get("timestamp", []))
            if ns:
                s_names = _str(sm.get("name"), ns)
                if "message" in sm:
                    s_msg = _str(sm["message"], ns)
                    s_names = pc.if_else(pc.fill_null(pc.greater(pc.utf8_length(s_msg), 0),
                                                      False), s_msg, s_names)
                ts = _int(sm["timestamp"], ns, 0)
                m_names = pa.concat_arrays([m_names.cast(pa.string()),
                                            s_names.cast(pa.string())])
                m_start = np.concatenate([m_start, ts])
                m_end = np.concatenate([m_end, ts])
                m_pid = np.concatenate([m_pid, _int(sm.get("pid"), ns)])
                m_tid = np.concatenate([m_tid, _int(sm.get("tid"), ns)])
        nm = len(m_start)
        markers = build_table("markers", {
            "name": m_names, "domain": ["roctx"] * nm, "start": m_start, "end": m_end,
            "depth": marker_depth(m_start, m_end, m_pid, m_tid),
            "pid": _masked(m_pid), "tid": _masked(m_tid),
        }, n=nm)
        check_cancel(cancelled)
        progress(0.4)

        # ---- kernels
        kn = db.fetch("kernels", ["guid", "nid", "pid", "tid", "kernel_id", "agent_abs_index",
                                  "dispatch_id", "queue_id", "stream_id", "start", "end",
                                  "grid_x", "grid_y", "grid_z", "workgroup_x", "workgroup_y",
                                  "workgroup_z", "lds_size", "scratch_size", "vgpr_count",
                                  "accum_vgpr_count", "sgpr_count", "stack_id", "name"],
                      required=["start", "end", "agent_abs_index"])
        nk = len(kn["start"])
        k_guid = gcode(kn.get("guid"), nk)
        k_nid = _int(kn.get("nid"), nk)
        k_dev = to_device(k_nid, _int(kn["agent_abs_index"], nk))
        if (k_dev < 0).any():
            j = int(np.nonzero(k_dev < 0)[0][0])
            raise TraceFormatError(path, "table kernels",
                                   "agent_abs_index of a GPU agent in rocpd_info_agent",
                                   f"{int(_int(kn['agent_abs_index'], nk)[j])} in row {j}")
        k_start, k_end = _int(kn["start"], nk, 0), _int(kn["end"], nk, 0)
        k_stack = _int(kn.get("stack_id"), nk)
        k_api = link_by_correlation(k_stack, k_guid, api_stack, api_guid)
        k_api[k_stack < 0] = -1
        # queues: small ints per device, in handle order
        k_qh = _int(kn.get("queue_id"), nk)
        queue_names: dict[tuple[int, int], str] = {}
        if db.has("rocpd_info_queue"):
            qi = db.fetch("rocpd_info_queue", ["guid", "id", "name"])
            nq = len(qi.get("id", []))
            for g, qid, qn in zip(gcode(qi.get("guid"), nq).tolist(),
                                  _int(qi.get("id"), nq).tolist(),
                                  _str(qi.get("name"), nq).to_pylist()):
                queue_names[(g, qid)] = qn
        k_queue = np.full(nk, -1, np.int64)
        q_rows: dict[str, list] = {"device": [], "queue": [], "raw_id": [], "name": []}
        if "queue_id" in kn and nk:
            (u_dev, u_guid, u_qh), inverse = _group(k_dev, k_guid, k_qh)
            per_dev: dict[int, int] = {}
            small = np.empty(len(u_dev), np.int64)
            for j, (d, g, h) in enumerate(zip(u_dev.tolist(), u_guid.tolist(),
                                              u_qh.tolist())):
                q = per_dev.get(d, 0)
                per_dev[d] = q + 1
                small[j] = q
                q_rows["device"].append(d)
                q_rows["queue"].append(q)
                q_rows["raw_id"].append(str(h))
                q_rows["name"].append(queue_names.get((g, h)))
            k_queue = small[inverse]
        queues = build_table("queues", q_rows, n=len(q_rows["device"]))
        # names via kernel symbols
        names_arr = _str(kn.get("name"), nk)
        k_stream = _int(kn.get("stream_id"), nk)
        kernels = build_table("kernels", {
            "name": pc.fill_null(names_arr, "(unknown kernel)"),
            "device": k_dev, "start": k_start, "end": np.maximum(k_end, k_start),
            "queue": _masked(k_queue), "stream": _masked(k_stream),
            "pid": _masked(_int(kn.get("pid"), nk)), "tid": _masked(_int(kn.get("tid"), nk)),
            "correlation_id": _masked(k_stack),
            "dispatch_id": _masked(_int(kn.get("dispatch_id"), nk)),
            "api_index": _masked(k_api),
            "grid_x": _masked(_int(kn.get("grid_x"), nk)),
            "grid_y": _masked(_int(kn.get("grid_y"), nk)),
            "grid_z": _masked(_int(kn.get("grid_z"), nk)),
            "block_x": _masked(_int(kn.get("workgroup_x"), nk)),
            "block_y": _masked(_int(kn.get("workgroup_y"), nk)),
            "block_z": _masked(_int(kn.get("workgroup_z"), nk)),
            "vgpr": _masked(_int(kn.get("vgpr_count"), nk)),
            "accum_vgpr": _masked(_int(kn.get("accum_vgpr_count"), nk)),
            "sgpr": _masked(_int(kn.get("sgpr_count"), nk)),
            "lds_bytes": _masked(_int(kn.get("lds_size"), nk)),
            "scratch_bytes": _masked(_int(kn.get("scratch_size"), nk)),
        }, n=nk)
        check_cancel(cancelled)
        progress(0.75)

        # ---- streams
        streams = self._streams(db, gcode, k_stream, k_dev, k_queue,
                                _int(kn.get("pid"), nk), k_guid)

        # ---- copies
        copies = self._copies(db, gcode, to_device, api_stack, api_guid)
        progress(0.85)

        # ---- counters
        counters = self._counters(db, gcode, k_guid, _int(kn.get("dispatch_id"), nk))
        progress(1.0)
        meta["provenance"] = {
            "kernels.name": "kernels.name (rocpd_info_kernel_symbol.display_name = "
                            "formatted_kernel_name, as CSV Kernel_Name)",
            "kernels.api_index": "regions.stack_id = kernels.stack_id AND guid",
            "kernels.correlation_id": "stack_id (internal correlation id)",
            "devices.raw_id": "rocpd_info_agent.absolute_index (KFD node id)",
            "markers.name": "regions/samples extdata.message (roctx text)",
        }
        if warnings:
            meta["warnings"] = warnings
        return Trace(kernels=kernels, api=api, copies=copies, markers=markers,
                     counters=counters, devices=devices, queues=queues, streams=streams,
                     meta=meta)

    # ------------------------------------------------------------------
    @staticmethod
    def _streams(db: _Db, gcode, k_stream, k_dev, k_queue, k_pid, k_guid):
        ok = k_stream >= 0
        if not ok.any():
            return build_table("streams", {}, n=0)
        names: dict[tuple[int, int], str] = {}
        if db.has("rocpd_info_stream"):
            si = db.fetch("rocpd_info_stream", ["guid", "id", "name"])
            ns = len(si.get("id", []))
            for g, sid, sn in zip(gcode(si.get("guid"), ns).tolist(),
                                  _int(si.get("id"), ns).tolist(),
                                  _str(si.get("name"), ns).to_pylist()):
                names[(g, sid)] = sn
        rows: dict[str, list] = {c: [] for c in ("stream", "device", "queue", "pid",
                                                 "raw_id", "name")}
        (u_g, u_s), inverse = _group(k_guid[ok], k_stream[ok])
        dev_ok, q_ok, pid_ok = k_dev[ok], k_queue[ok], k_pid[ok]
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(len(u_g) + 1))
        for j, (g, s) in enumerate(zip(u_g.tolist(), u_s.tolist())):
            m = order[bounds[j]:bounds[j + 1]]
            d = np.unique(dev_ok[m])
            q = np.unique(q_ok[m])
            p = np.unique(pid_ok[m])
            rows["stream"].append(s)
            rows["device"].append(int(d[0]) if len(d) == 1 else None)
            rows["queue"].append(int(q[0]) if len(q) == 1 and len(d) == 1 and q[0] >= 0
                                 else None)
            rows["pid"].append(int(p[0]) if len(p) == 1 and p[0] >= 0 else None)
            rows["raw_id"].append(str(s))
            rows["name"].append(names.get((g, s)))
        return build_table("streams", rows, n=len(rows["stream"]))

    @staticmethod
    def _copies(db: _Db, gcode, to_device, api_stack, api_guid):
        if not db.has("memory_copies"):
            return build_table("copies", {}, n=0)
        mc = db.fetch("memory_copies", ["guid", "nid", "pid", "tid", "start", "end", "name",
                                        "size", "stream_id", "queue_id",
                                        "src_agent_abs_index", "src_agent_type",
                                        "dst_agent_abs_index", "dst_agent_type", "stack_id"],
                      required=["start", "end"])
        n = len(mc["start"])
        if n == 0:
            return build_table("copies", {}, n=0)
        names = _str(mc.get("name"), n)
        direction = [_DIRECTIONS.get(x, "other") if x else "other" for x in names.to_pylist()]
        nid = _int(mc.get("nid"), n)

        def side(prefix: str) -> np.ndarray:
            dev = to_device(nid, _int(mc.get(f"{prefix}_agent_abs_index"), n))
            if f"{prefix}_agent_type" in mc:
                is_gpu = np.array([t == "GPU" for t in
                                   _str(mc[f"{prefix}_agent_type"], n).to_pylist()])
                dev = np.where(is_gpu, dev, -1)
            return dev

        src, dst = side("src"), side("dst")
        dev = np.where(src >= 0, src, dst)
        is_htod = np.array([d == "HtoD" for d in direction])
        dev = np.where(is_htod & (dst >= 0), dst, dev)
        stack = _int(mc.get("stack_id"), n)
        guid = gcode(mc.get("guid"), n)
        api_idx = link_by_correlation(stack, guid, api_stack, api_guid)
        api_idx[stack < 0] = -1
        start, end = _int(mc["start"], n, 0), _int(mc["end"], n, 0)
        return build_table("copies", {
            "direction": direction, "start": start, "end": np.maximum(end, start),
            "name": names, "bytes": _masked(_int(mc.get("size"), n)),
            "device": _masked(dev), "src_device": _masked(src), "dst_device": _masked(dst),
            "stream": _masked(_int(mc.get("stream_id"), n)),
            "pid": _masked(_int(mc.get("pid"), n)), "tid": _masked(_int(mc.get("tid"), n)),
            "correlation_id": _masked(stack), "api_index": _masked(api_idx),
        }, n=n)

    @staticmethod
    def _counters(db: _Db, gcode, k_guid, k_disp):
        if db.has("counters_collection"):
            cc = db.fetch("counters_collection", ["guid", "dispatch_id", "counter_name",
                                                  "value"],
                          required=["dispatch_id", "counter_name", "value"])
            val_col = "value"
        elif db.has("pmc_events"):
            cc = db.fetch("pmc_events", ["guid", "dispatch_id", "counter_name",
                                         "counter_value"],
                          required=["dispatch_id", "counter_name", "counter_value"])
            val_col = "counter_value"
        else:
            return build_table("counters", {}, n=0)
        n = len(cc["dispatch_id"])
        if n == 0:
            return build_table("counters", {}, n=0)
        disp = _int(cc["dispatch_id"], n)
        guid = gcode(cc.get("guid"), n)
        kidx = link_by_correlation(disp, guid, k_disp, k_guid)
        vals = cc[val_col]
        vals = pc.fill_null(vals.cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False)
        return build_table("counters", {
            "counter": pc.fill_null(_str(cc["counter_name"], n), "(unnamed)"), "value": vals,
            "kernel_index": _masked(kidx), "dispatch_id": _masked(disp),
        }, n=n)
