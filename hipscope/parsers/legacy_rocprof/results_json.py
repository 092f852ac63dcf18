"""Legacy rocprof results.json: the Chrome trace tblextr.py writes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Union

import msgspec
import numpy as np
import pyarrow as pa

from ...model import Trace, build_table
from .._common import add_count, copy_directions, nesting_depth, read_input, warn_no_kernels
from .._csv import I16, I32, fit
from .._json import error_place
from ..base import (
    CancelledFn,
    ProgressFn,
    TraceFormatError,
    check_cancel,
)
from .common import (
    build_devices,
    finish_legacy_meta,
    legacy_meta,
    map_ids,
    queues_for,
    rocminfo_from_otherdata,
    side_info,
    size_from_args,
    strip_quotes,
)
from .sniff import sniff_json

Num = Union[int, float, str, None]


class _Event(msgspec.Struct):
    ph: str = ""
    name: Union[str, int, float, None] = None
    pid: Num = None
    tid: Num = None
    ts: Num = None
    dur: Num = None
    id: Num = None
    args: Union[dict, None] = None


class _Doc(msgspec.Struct):
    traceEvents: list[_Event] = []
    otherData: msgspec.Raw = msgspec.Raw(b"null")


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Keep the first value of a duplicated key (rocminfo repeats some lines)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        out.setdefault(k, v)
    return out


def _as_int(v: Any) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        if isinstance(v, int):
            out = v
        else:
            s = str(v).strip()
            out = int(s) if re.fullmatch(r"-?\d+", s) else int(round(float(s)))
    except (ValueError, OverflowError):
        return None
    return out if -(2**62) < out < 2**62 else None


def _us_to_ns(v: Any) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        if isinstance(v, int):
            out = v * 1000
        else:
            s = str(v).strip()
            out = int(s) * 1000 if re.fullmatch(r"-?\d+", s) else int(round(float(s) * 1000.0))
    except (ValueError, OverflowError):
        return None
    return out if -(2**62) < out < 2**62 else None


_SECTION_RE = re.compile(r"(GPU Barriers|GPU|COPY|CPU HIP API|CPU HSA API|HIP|HSA|Markers|KFD)"
                         r"\s*(\d*)")


def _decode_json(path: Path, data: bytes, meta: dict[str, Any], dropped: dict[str, int]) -> _Doc:
    try:
        return msgspec.json.decode(data, type=_Doc)
    except msgspec.ValidationError as exc:
        raise TraceFormatError(path, None, "a legacy rocprof Chrome trace",
                               str(exc)[:200]) from None
    except msgspec.DecodeError as exc:
        err = exc
    # a file cut short: keep the whole events (one per line, each starting with ",{")
    cut = data.rfind(b"\n,{")
    while cut > 0:
        try:
            doc = msgspec.json.decode(data[:cut] + b"]}", type=_Doc)
        except (msgspec.DecodeError, msgspec.ValidationError):
            cut = data.rfind(b"\n,{", 0, cut)
            continue
        lost = data[cut:].count(b"\n,{")
        meta["warnings"].append(f"{path}: the JSON ends early ({err}); read "
                                f"{len(doc.traceEvents):,} whole events, dropped about {lost} "
                                "cut-off events (and otherData)")
        dropped["events"] = lost
        return doc
    raise TraceFormatError(path, error_place(str(err)),
                           "a legacy rocprof Chrome trace ({\"traceEvents\":[{}, ...]})",
                           str(err)) from None


class LegacyRocprofJsonReader:
    name = "legacy-rocprof"
    description = "Legacy rocprof v1 results.json (Chrome trace)"
    patterns = ("results.json", "*.json")
    priority = 40
    directories = False

    def sniff(self, path: Path) -> float:
        return sniff_json(path)

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        path = Path(path)
        meta = legacy_meta(path, self.name)
        meta["file_kind"] = "results.json"
        dropped: dict[str, int] = {}
        data = read_input(path, meta["warnings"])
        if not data.strip():
            raise TraceFormatError(path, "byte 0", "a legacy rocprof Chrome trace", "an empty file")
        doc = _decode_json(path, data, meta, dropped)
        progress(0.4)
        check_cancel(cancelled)
        other = None
        raw_other = bytes(doc.otherData) if doc.otherData is not None else b"null"
        if raw_other.strip() not in (b"", b"null"):
            try:
                other = json.loads(raw_other, object_pairs_hook=_pairs_hook)
            except ValueError:
                other = None
        info = side_info(path, meta)
        if info is None and isinstance(other, dict):
            info = rocminfo_from_otherdata(other)
            if info.get("hsa_runtime_version"):
                meta["hsa_runtime_version"] = info["hsa_runtime_version"]
        return _json_trace(path, doc.traceEvents, info, meta, dropped, cancelled, progress)


_SECTION_KINDS = {"GPU Barriers": "barrier", "GPU": "gpu", "COPY": "copy",
                  "CPU HIP API": "hip", "HIP": "hip", "CPU HSA API": "hsa", "HSA": "hsa",
                  "Markers": "marker", "KFD": "kfd"}
_FIXED_SECTIONS = {0: "marker", 1: "copy", 2: "hip", 3: "hsa"}
_KERNEL_ARGS = (("queue", ("queue-id",)), ("stream", ("stream-id",)), ("pid", ("pid",)),
                ("tid", ("tid",)), ("dispatch_id", ("Index",)), ("dispatch_ns", ("DispatchNs",)),
                ("grd", ("grd", "GRD")), ("wgr", ("wgr", "WGR")), ("lds", ("lds", "LDS")),
                ("scr", ("scr", "SCR")), ("vgpr", ("arch_vgpr", "vgpr")),
                ("accum_vgpr", ("accum_vgpr", "ACCUM_VGPR")), ("sgpr", ("sgpr",)))
_KERNEL_INTS = (("pid", "pid", I32), ("tid", "tid", None), ("dispatch_id", "dispatch_id", None),
                ("dispatch_ns", "dispatch_ns", None), ("grd", "grid_x", None),
                ("wgr", "block_x", I16), ("lds", "lds_bytes", I32), ("scr", "scratch_bytes", I32),
                ("vgpr", "vgpr", I16), ("accum_vgpr", "accum_vgpr", I16), ("sgpr", "sgpr", I16),
                ("stream", "stream", I32))


class _Sections:
    """Fake pids -> what they hold ("gpu", "copy", "hip", ...), from process_name
    metadata events, else tblextr's fixed numbering."""

    def __init__(self, events: list) -> None:
        self.named: dict[int, tuple[str, int | None]] = {}
        for ev in events:
            if ev.ph == "M" and ev.name == "process_name" and isinstance(ev.args, dict):
                sec = _as_int(ev.pid)
                m = _SECTION_RE.search(str(ev.args.get("name", "")))
                if sec is not None and m:
                    self.named[sec] = (m.group(1), int(m.group(2)) if m.group(2) else None)

    def kind(self, sec: int) -> tuple[str, int | None]:
        if sec in self.named:
            lab, num = self.named[sec]
            return _SECTION_KINDS[lab], num
        if sec in _FIXED_SECTIONS:
            return _FIXED_SECTIONS[sec], None
        if 6 <= sec < 518:
            return "gpu", sec - 6
        if sec >= 518:
            return "barrier", sec - 518
        return "other", None


class _Rows:
    """Events gathered per table (lists of Python values), and the flow ends."""

    def __init__(self) -> None:
        self.K: dict[str, list[Any]] = {k: [] for k in (
            "name", "start", "end", "gpu", "queue", "stream", "pid", "tid", "dispatch_id",
            "dispatch_ns", "grd", "wgr", "lds", "scr", "vgpr", "accum_vgpr", "sgpr", "sec",
            "ts_us")}
        self.A: dict[str, list[Any]] = {k: [] for k in (
            "name", "domain", "start", "end", "pid", "tid", "args", "start_us", "end_us")}
        self.C: dict[str, list[Any]] = {k: [] for k in (
            "name", "start", "end", "gpu", "queue", "stream", "pid", "tid", "sec", "ts_us")}
        self.M: dict[str, list[Any]] = {k: [] for k in ("name", "start", "end", "pid", "tid")}
        self.flows_s: dict[Any, tuple[int, int]] = {}
        self.flows_t: dict[Any, tuple[int, int]] = {}
        self.skipped: dict[str, int] = {}
        self.approx = 0

    def flow(self, ev) -> None:
        ts = _as_int(ev.ts)
        sec = _as_int(ev.pid)
        if ts is None or sec is None:
            return
        if ev.ph == "s":
            self.flows_s[ev.id] = (_as_int(ev.tid) or 0, ts)
        else:
            self.flows_t[ev.id] = (sec, ts)

    def times(self, ev, args: dict) -> tuple[int, int] | None:
        """(begin, end) ns: args BeginNs/EndNs, else ts/dur µs (counted as approximate)."""
        b = _as_int(args.get("BeginNs"))
        e = _as_int(args.get("EndNs"))
        if b is None or e is None:
            b = _us_to_ns(ev.ts)
            d = _us_to_ns(ev.dur) if ev.dur is not None else 0
            if b is None:
                add_count(self.skipped, "events without a time")
                return None
            e = b + (d or 0)
            self.approx += 1
        return b, e      # end < begin passes through: the shared interval rule drops it

    def event(self, ev, sections: _Sections) -> None:
        sec = _as_int(ev.pid)
        if sec is None:
            add_count(self.skipped, "events without a section")
            return
        what, num = sections.kind(sec)
        args = ev.args if isinstance(ev.args, dict) else {}
        got = self.times(ev, args)
        if got is None:
            return
        b, e = got
        name = str(ev.name) if ev.name is not None else str(args.get("Name", ""))
        if what == "gpu":
            self._kernel(ev, args, sec, num, name, b, e)
        elif what in ("hip", "hsa"):
            self._api(ev, args, what, name, b, e)
        elif what == "copy":
            C = self.C
            for col, v in (("name", name), ("start", b), ("end", e),
                           ("gpu", _as_int(args.get("dev-id", args.get("gpu-id")))),
                           ("queue", _as_int(args.get("queue-id"))),
                           ("stream", _as_int(args.get("stream-id"))),
                           ("pid", _as_int(args.get("pid"))), ("tid", _as_int(args.get("tid"))),
                           ("sec", sec), ("ts_us", _as_int(ev.ts))):
                C[col].append(v)
        elif what == "marker":
            M = self.M
            for col, v in (("name", name), ("start", b),
                           ("end", b if ev.ph in ("i", "I") else e),
                           ("pid", _as_int(args.get("pid"))),
                           ("tid", _as_int(args.get("tid", ev.tid)))):
                M[col].append(v)
        else:
            add_count(self.skipped, "barrier packets" if what == "barrier" else f"{what} events")

    def _kernel(self, ev, args: dict, sec: int, num, name: str, b: int, e: int) -> None:
        K = self.K
        K["name"].append(str(args.get("KernelName") or args.get("Name") or name))
        K["start"].append(b)
        K["end"].append(e)
        g = _as_int(args.get("gpu-id", args.get("dev-id")))
        K["gpu"].append(g if g is not None else (num if num is not None else sec - 6))
        for col, keys in _KERNEL_ARGS:
            v = args.get(keys[0]) if len(keys) == 1 else args.get(keys[0], args.get(keys[1]))
            K[col].append(_as_int(v))
        K["sec"].append(sec)
        K["ts_us"].append(_as_int(ev.ts))

    def _api(self, ev, args: dict, what: str, name: str, b: int, e: int) -> None:
        A = self.A
        ts_us = _as_int(ev.ts)
        A["name"].append(name)
        A["domain"].append("HIP_RUNTIME_API" if what == "hip" else "HSA_API")
        A["start"].append(b)
        A["end"].append(e)
        A["pid"].append(_as_int(args.get("pid")))
        A["tid"].append(_as_int(args.get("tid", ev.tid)))
        A["args"].append(args.get("args"))
        A["start_us"].append(ts_us if ts_us is not None else b // 1000)
        dur_us = _as_int(ev.dur)
        A["end_us"].append((ts_us + dur_us) if ts_us is not None and dur_us is not None
                           else -(-e // 1000))


def _gather(events: list, cancelled, progress) -> _Rows:
    sections = _Sections(events)
    rows = _Rows()
    n_ev = len(events)
    for j, ev in enumerate(events):
        if j % 200000 == 0:
            check_cancel(cancelled)
            progress(0.4 + 0.4 * j / max(n_ev, 1))
        ph = ev.ph
        if ph in ("s", "t", "f"):
            rows.flow(ev)
        elif ph in ("X", "i", "I"):
            rows.event(ev, sections)
    return rows


def _api_table(A: dict[str, list]):
    """The api table and, per thread, its calls sorted by µs start (for flows)."""
    by_tid: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    if not A["name"]:
        return None, by_tid
    tid_arr = np.array([t if t is not None else -1 for t in A["tid"]], dtype=np.int64)
    s_us = np.array(A["start_us"], dtype=np.int64)
    e_us = np.array(A["end_us"], dtype=np.int64)
    for t in np.unique(tid_arr):
        rows = np.flatnonzero(tid_arr == t)
        rows = rows[np.argsort(s_us[rows], kind="stable")]
        by_tid[int(t)] = (rows, s_us[rows], e_us[rows])
    api = build_table("api", {
        "name": A["name"], "domain": A["domain"],
        "start": np.array(A["start"], dtype=np.int64),
        "end": np.array(A["end"], dtype=np.int64),
        "pid": A["pid"], "tid": A["tid"]})
    return api, by_tid


def _link_flows(rows: _Rows, by_tid: dict) -> tuple[np.ndarray, np.ndarray, int]:
    """API row of each kernel/copy: the t end of a flow sits at the op's (section, ts µs),
    the s end inside the launching call on its thread."""
    K, C = rows.K, rows.C
    op_lookup: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for i, (sec, t) in enumerate(zip(K["sec"], K["ts_us"])):
        if t is not None:
            op_lookup.setdefault((sec, t), []).append(("k", i))
    for i, (sec, t) in enumerate(zip(C["sec"], C["ts_us"])):
        if t is not None:
            op_lookup.setdefault((sec, t), []).append(("c", i))
    k_api = np.full(len(K["name"]), -1, dtype=np.int64)
    c_api = np.full(len(C["name"]), -1, dtype=np.int64)
    unmatched = 0
    for fid in sorted(rows.flows_t, key=lambda x: (str(type(x)), x)):
        if fid not in rows.flows_s:
            continue
        tid, s_ts = rows.flows_s[fid]
        ops = op_lookup.get(rows.flows_t[fid])
        grp = by_tid.get(tid)
        if not ops or grp is None:
            unmatched += 1
            continue
        api_rows, s_us, e_us = grp
        p = int(np.searchsorted(s_us, s_ts, side="right")) - 1
        if p < 0 or e_us[p] + 1 < s_ts:
            unmatched += 1
            continue
        kind_, idx = ops.pop(0)
        (k_api if kind_ == "k" else c_api)[idx] = api_rows[p]
    return k_api, c_api, unmatched


def _kernel_table(path, K: dict, k_api: np.ndarray, n_api: int, mapping, meta, tables) -> None:
    gpu = np.array(K["gpu"], dtype=np.int64)
    dev = map_ids(gpu, mapping)
    kcols: dict[str, Any] = {"name": strip_quotes(K["name"]), "device": dev,
                             "start": np.array(K["start"], dtype=np.int64),
                             "end": np.array(K["end"], dtype=np.int64)}
    overflow = {}
    for src, dst, bounds in _KERNEL_INTS:
        vals = K[src]
        valid = np.array([v is not None for v in vals])
        if not valid.any():
            continue
        arr = np.array([v if v is not None else 0 for v in vals], dtype=np.int64)
        if bounds is None:
            kcols[dst] = pa.array(arr, mask=~valid if (~valid).any() else None)
        else:
            kcols[dst], over = fit(arr, valid, bounds)
            if over:
                overflow[dst] = over
    for dst, cnt in overflow.items():
        meta["warnings"].append(f"{path}: {cnt} kernels have a {dst} too large for "
                                f"hipscope's {dst} column; left null")
    qv = np.array([v is not None for v in K["queue"]])
    if qv.any():
        q, tables["queues"] = queues_for(dev, np.array([v or 0 for v in K["queue"]],
                                                       dtype=np.int64), qv)
        kcols["queue"] = pa.array(q, mask=q < 0 if (q < 0).any() else None)
    if n_api and (k_api >= 0).any():
        kcols["api_index"] = pa.array(k_api, mask=k_api < 0, type=pa.int32())
    tables["kernels"] = build_table("kernels", kcols)


def _copy_table(C: dict, A: dict, c_api: np.ndarray, mapping, prov) -> Any:
    ccols: dict[str, Any] = {"direction": copy_directions(C["name"]), "name": C["name"],
                             "start": np.array(C["start"], dtype=np.int64),
                             "end": np.array(C["end"], dtype=np.int64),
                             "pid": C["pid"], "tid": C["tid"], "stream": C["stream"]}
    gv = np.array([g is not None for g in C["gpu"]])
    if gv.any():
        d = map_ids(np.array([g or 0 for g in C["gpu"]], dtype=np.int64), mapping)
        ccols["device"] = pa.array(d, mask=~gv if (~gv).any() else None)
    if A["name"] and (c_api >= 0).any():
        ccols["api_index"] = pa.array(c_api, mask=c_api < 0, type=pa.int32())
        sizes = [size_from_args(A["args"][a]) if a >= 0 else None for a in c_api.tolist()]
        if any(s is not None for s in sizes):
            ccols["bytes"] = sizes
            prov["copies.bytes"] = "sizeBytes(...) argument of the linked HIP call"
    return build_table("copies", ccols)


def _marker_table(M: dict) -> Any:
    ms, me = np.array(M["start"], dtype=np.int64), np.array(M["end"], dtype=np.int64)
    lane = np.array([t if t is not None else -1 for t in M["tid"]], dtype=np.int64)
    return build_table("markers", {
        "name": M["name"], "domain": ["roctx"] * len(M["name"]), "start": ms, "end": me,
        "depth": nesting_depth(ms, me, lane), "pid": M["pid"], "tid": M["tid"]})


def _json_trace(path, events, info, meta, dropped, cancelled, progress) -> Trace:
    rows = _gather(events, cancelled, progress)
    progress(0.85)
    if rows.skipped:
        meta["skipped"] = rows.skipped
    if rows.approx:
        meta["warnings"].append(f"{path}: {rows.approx} events had no BeginNs/EndNs args; "
                                "their times come from the µs ts/dur fields (1 µs resolution)")
    prov = meta["provenance"]
    prov["start"] = prov["end"] = "args BeginNs/EndNs (exact ns); else ts/dur µs x 1000"
    prov["api_index"] = "ph:s/ph:t dep flow events (s inside the API call, t at the op start)"
    K, A, C, M = rows.K, rows.A, rows.C, rows.M
    devices, mapping = build_devices([g for g in K["gpu"] + C["gpu"] if g is not None], info)
    tables: dict[str, Any] = {"devices": devices}
    api, by_tid = _api_table(A)
    if api is not None:
        tables["api"] = api
    k_api, c_api, unmatched = _link_flows(rows, by_tid)
    if unmatched:
        meta["warnings"].append(f"{path}: {unmatched} launch flow events could not be matched "
                                "to an API call and a GPU op")
    if K["name"]:
        _kernel_table(path, K, k_api, len(A["name"]), mapping, meta, tables)
    else:
        warn_no_kernels(meta["warnings"], path, f"{len(A['name'])} API calls, "
                        f"{len(C['name'])} copies, {len(M['name'])} markers")
    if C["name"]:
        tables["copies"] = _copy_table(C, A, c_api, mapping, prov)
    if M["name"]:
        tables["markers"] = _marker_table(M)
    pids = sorted({p for p in K["pid"] + A["pid"] + C["pid"] if p is not None})
    if pids:
        meta["pids"] = pids
    progress(1.0)
    return Trace(**tables, meta=finish_legacy_meta(meta, dropped))
