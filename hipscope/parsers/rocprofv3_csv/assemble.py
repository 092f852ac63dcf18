"""The parts of every set made one trace: global device, queue and stream ids, the
tables, meta."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...model import Trace, build_table
from ...model.table import from_numpy, string_array, to_numpy
from .._common import finish_meta, group_key, nesting_depth, new_meta, number_per_device
from .agents import AgentInfo, Devices, resolve
from .columns import I16, I32, concat, dict_parts, Load, np_column, np_raw_column
from .tables import LAYOUT_RANK, Part

class _Numbering:
    """Global small ids for (process, device, raw id) queues or (process, raw) streams."""

    @staticmethod
    def local(dev: np.ndarray, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Distinct (device, raw) pairs and each row's pair code (-1 where raw < 0)."""
        n = len(raw)
        if n == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32)
        lo, hi = int(raw.min()), int(raw.max())
        ndev = int(dev.max()) + 1
        if lo >= 0 and hi < (1 << 16) and ndev * (hi + 1) <= (1 << 22):
            # fast path (the common case): small printed ids, no nulls; int32 throughout
            nraw = hi + 1
            combined = dev.astype(np.int32)                  # a copy: worked in place
            combined *= np.int32(nraw)
            combined += raw.astype(np.int32, copy=False)
            present = np.bincount(combined, minlength=ndev * nraw) > 0
            lut = (np.cumsum(present) - 1).astype(np.int32)
            uniq = np.nonzero(present)[0]
            return uniq // nraw, uniq % nraw, lut[combined]
        valid = raw >= 0
        if not valid.any():
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.full(n, -1, np.int32)
        rmax = int(raw[valid].max())
        if rmax < (1 << 16):
            r_codes, r_vals = np.where(valid, raw, 0), None
            nraw = rmax + 1
        else:
            enc = pc.dictionary_encode(from_numpy(np.where(valid, raw, -1)))
            r_codes = to_numpy(enc.indices).astype(np.int64)
            r_vals = to_numpy(enc.dictionary)
            nraw = len(r_vals)
        d = dev.astype(np.int64)
        ndev = int(d.max()) + 1 if len(d) else 1
        combined = d * nraw + r_codes
        if ndev * nraw <= (1 << 22):
            present = np.bincount(combined[valid], minlength=ndev * nraw) > 0
            pos = np.cumsum(present) - 1
            code = np.where(valid, pos[combined], -1).astype(np.int32)
            uniq = np.nonzero(present)[0]
        else:
            enc = pc.dictionary_encode(from_numpy(np.where(valid, combined, -1)))
            uniq_all = to_numpy(enc.dictionary)
            codes_all = to_numpy(enc.indices)
            keep = uniq_all >= 0
            remap = np.full(len(uniq_all), -1, np.int64)
            remap[keep] = np.arange(int(keep.sum()))
            code = remap[codes_all].astype(np.int32)
            uniq = uniq_all[keep]
        u_dev = uniq // nraw
        u_raw = uniq % nraw
        if r_vals is not None:
            u_raw = r_vals[u_raw]
        return u_dev, u_raw, code

    @staticmethod
    def assign(groups: list[tuple[int, np.ndarray, np.ndarray]]) -> tuple[list[np.ndarray], str]:
        """Ids for each group's pairs: the printed ids when they are small and no two
        processes share one on a device; else 0..k-1 per device in (process, raw) order."""
        seen: dict[tuple[int, int], int] = {}
        clash = False
        small = True
        for order, devs, raws in groups:
            for d, r in zip(devs.tolist(), raws.tolist()):
                if r >= (1 << 31):
                    small = False
                if seen.setdefault((d, r), order) != order:
                    clash = True
        if small and not clash:
            return [raws.astype(np.int64) for _o, _d, raws in groups], "printed"
        lens = [len(devs) for _o, devs, _r in groups]
        ids, _keys, _small = number_per_device(
            np.concatenate([devs.astype(np.int64) for _o, devs, _r in groups]),
            np.concatenate([np.full(n, o, np.int64) for n, (o, _d, _r) in zip(lens, groups)]),
            np.concatenate([raws.astype(np.int64) for _o, _d, raws in groups]))
        out = np.split(ids, np.cumsum(lens)[:-1])
        return out, "numbered"





# --------------------------------------------------------------------------- devices

def _agent_luts(parts: list[Part], load: Load
                ) -> tuple[list[dict[str, int | None]], dict[str, list]]:
    """Per part: agent text -> device index (None: a CPU); and the devices columns."""
    devs = Devices()
    host_infos: dict[str, list[AgentInfo]] = {}
    for p in parts:
        host_infos.setdefault(p.s.host or "", []).extend(p.agents)
    text_keys: list[dict[str, tuple | None]] = []
    for p in parts:
        infos = p.agents or host_infos.get(p.s.host or "", [])
        for a in infos:
            if a.type == "GPU":
                devs.add_info(p.s.host, a)
        text_keys.append(_text_keys(p, infos, devs, load))
    if any(p.agents for p in parts):
        load.provenance["devices"] = ("agent_info.csv (Agent_Id matched to "
                                      "Logical_Node_Id, then Node_Id; GPU-N = N-th GPU)")
    else:
        load.provenance["devices"] = ("no agent_info.csv: GPUs named from their Agent_Id; "
                                      "copy agents on the host side of a copy are CPUs")
    dev_index, dev_cols = devs.finish()
    luts = [{t: (dev_index[k] if k is not None else None) for t, k in tk.items()}
            for tk in text_keys]
    return luts, dev_cols


def _text_keys(p: Part, infos: list[AgentInfo], devs: Devices, load: Load
               ) -> dict[str, tuple | None]:
    tk: dict[str, tuple | None] = {}
    for text in sorted(p.gpu_texts | p.cpu_texts):
        a = resolve(text, infos)
        if a is not None:
            tk[text] = devs.add_info(p.s.host, a, text) if a.type == "GPU" else None
            continue
        if infos and text in p.gpu_texts:
            load.warn(f"agent {text!r} is not in agent_info.csv; shown as an unnamed GPU")
        tk[text] = devs.add_raw(p.s.host, text) if text in p.gpu_texts else None
    return tk


def _map_agents(arr: pa.Array, lut: dict[str, int | None]) -> np.ndarray:
    codes, cats = dict_parts(arr)
    table = np.array([(-1 if lut.get(c) is None else lut[c]) for c in cats] + [-1],
                     dtype=np.int16)
    return table[codes]


def _kernel_devices(p: Part, lut: dict, dev_cols: dict, load: Load
                    ) -> tuple[np.ndarray, dict]:
    d = _map_agents(p.kernels["agent"], lut)
    bad = d < 0
    if bad.any():  # agent is a CPU per agent_info: still show it, unnamed
        for text in {p.kernels["agent"].dictionary[i].as_py() for i in np.unique(
                to_numpy(p.kernels["agent"].indices)[bad])}:
            load.warn(f"kernels on agent {text!r}, which agent_info.csv says is not "
                      "a GPU")
        d = np.where(bad, 0, d).astype(np.int16)
        if not len(dev_cols["index"]):
            dev_cols = {"index": [0], "name": ["GPU (unknown)"], "vendor": ["AMD"],
                        "arch": [None], "compute_units": [None], "raw_id": [None],
                        "host": [None]}
    return d, dev_cols


def _copy_devices(p: Part, lut: dict, load: Load) -> dict[str, np.ndarray]:
    src = _map_agents(p.copies["src_agent"], lut)
    dst = _map_agents(p.copies["dst_agent"], lut)
    dirs = p.copies["_dir"].copy()
    ptop = (dirs == "DtoD") & (src >= 0) & (dst >= 0) & (src != dst)
    if ptop.any():
        dirs[ptop] = "PtoP"
        load.provenance["copies.direction"] = (
            "Direction with MEMORY_COPY_ dropped; DEVICE_TO_DEVICE between two "
            "different GPUs shown as PtoP")
    dev = np.where(np.isin(dirs, ["HtoD"]), dst,
                   np.where(np.isin(dirs, ["DtoH", "DtoD", "PtoP"]),
                            np.where(src >= 0, src, dst),
                            np.where(dirs == "HtoH", -1,
                                     np.where(dst >= 0, dst, src))))
    return {"src": src, "dst": dst, "dev": dev.astype(np.int16), "dir": dirs}


# --------------------------------------------------------------------------- queues/streams

def _queues(parts: list[Part], k_dev: list, load: Load):
    """Global queue ids of each part's kernels, the queues rows, and per part the
    (row pair code, pair device, pair queue id) used to place streams."""
    q_groups, q_codes = [], []
    for i, p in enumerate(parts):
        if p.kernels is not None and p.kernels.get("queue_raw") is not None:
            u_dev, u_raw, code = _Numbering.local(k_dev[i], np_raw_column(p.kernels["queue_raw"]))
            q_groups.append((i, u_dev, u_raw))
            q_codes.append((i, code))
    q_ids, q_mode = _Numbering.assign(q_groups) if q_groups else ([], "printed")
    queue_of: dict[int, np.ndarray] = {}
    queue_rows: list[tuple[int, int, str, str]] = []
    qpair_of: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for (i, code), (_o, u_dev, u_raw), ids in zip(q_codes, q_groups, q_ids):
        lut = np.append(ids, -1).astype(np.int32)
        queue_of[i] = lut[code]
        qpair_of[i] = (code, u_dev, ids)
        pid = parts[i].s.pid
        for d, r, q in zip(u_dev.tolist(), u_raw.tolist(), ids.tolist()):
            queue_rows.append((int(d), int(q), str(r),
                               f"Queue {r}" + (f" (pid {pid})" if pid is not None else "")))
    if q_mode == "numbered":
        load.provenance["queues"] = ("Queue_Id numbered 0..k-1 per device (raw handles, "
                                     "or ids of several processes); raw id in queues.raw_id")
    return queue_of, queue_rows, qpair_of


def _stream_groups(parts: list[Part]):
    s_groups, s_codes = [], []
    for i, p in enumerate(parts):
        raws = []
        if p.kernels is not None and p.kernels.get("stream_raw") is not None:
            raws.append(("k", np_raw_column(p.kernels["stream_raw"])))
        if p.copies is not None and p.copies.get("stream_raw") is not None:
            raws.append(("c", np_raw_column(p.copies["stream_raw"])))
        if not raws:
            continue
        allr = raws[0][1] if len(raws) == 1 else np.concatenate(
            [r.astype(np.int64) for _w, r in raws])
        u_dev, u_raw, code = _Numbering.local(np.zeros(len(allr), np.int16), allr)
        s_groups.append((i, u_dev, u_raw))
        off = 0
        split = {}
        for w, r in raws:
            split[w] = code[off: off + len(r)]
            off += len(r)
        s_codes.append((i, split))
    return s_groups, s_codes


def _stream_places(kc: np.ndarray, qpair: tuple, n_streams: int
                   ) -> tuple[dict[int, int], dict[int, int]]:
    """Which (device, queue) each stream's kernels used (7.0: one queue per stream)."""
    s_dev: dict[int, int] = {}
    s_queue: dict[int, int] = {}
    qcode, u_dev, q_ids = qpair
    npair = len(u_dev)
    ok = (kc >= 0) & (qcode >= 0)
    if npair and ok.any():
        key = kc[ok].astype(np.int64) * npair + qcode[ok]
        pres = np.unique(key) if n_streams * npair > (1 << 22) else np.nonzero(
            np.bincount(key, minlength=n_streams * npair))[0]
        sj, pj = pres // npair, pres % npair
        for st in np.unique(sj).tolist():
            pairs = pj[sj == st]
            devs = np.unique(u_dev[pairs])
            if len(devs) == 1:
                s_dev[st] = int(devs[0])
            if len(pairs) == 1:
                s_queue[st] = int(q_ids[pairs[0]])
    return s_dev, s_queue


def _streams(parts: list[Part], qpair_of: dict, load: Load):
    s_groups, s_codes = _stream_groups(parts)
    s_ids, s_mode = _Numbering.assign(s_groups) if s_groups else ([], "printed")
    stream_of: dict[tuple[int, str], np.ndarray] = {}
    stream_rows: list[dict[str, Any]] = []
    for (i, split), (_o, _d, u_raw), ids in zip(s_codes, s_groups, s_ids):
        lut = np.append(ids, -1).astype(np.int32)
        for w, code in split.items():
            stream_of[(i, w)] = lut[code]
        kc = split.get("k")
        s_dev, s_queue = ({}, {}) if kc is None or i not in qpair_of else \
            _stream_places(kc, qpair_of[i], len(u_raw))
        for j, (r, sid) in enumerate(zip(u_raw.tolist(), ids.tolist())):
            stream_rows.append({"stream": int(sid), "pid": parts[i].s.pid, "raw_id": str(r),
                                "device": s_dev.get(j), "queue": s_queue.get(j)})
    if s_mode == "numbered":
        load.provenance["streams"] = ("Stream_Id numbered 0..k-1 over processes; raw id in "
                                      "streams.raw_id")
    return stream_of, stream_rows


# --------------------------------------------------------------------------- tables

class _Stores:
    """Columns of each table gathered part by part (None where a part lacks one)."""

    def __init__(self) -> None:
        self.cols: dict[str, dict[str, list]] = {}
        self.lens: dict[str, list[int]] = {}

    def push(self, spec: str, cols: dict[str, Any], n: int) -> None:
        store = self.cols.setdefault(spec, {})
        lens = self.lens.setdefault(spec, [])
        lens.append(n)
        for c in set(store) | set(cols):
            store.setdefault(c, [None] * (len(lens) - 1))
            store[c].append(cols.get(c))

    def tables(self) -> dict[str, Any]:
        from ...model.schema import SPECS

        out: dict[str, Any] = {}
        for spec in ("kernels", "api", "copies", "markers", "counters"):
            if not self.lens.get(spec):
                continue
            cols = {c: concat(arrays, self.lens[spec], SPECS[spec].by_name[c].type)
                    for c, arrays in self.cols[spec].items()
                    if not all(a is None for a in arrays)}
            out[spec] = build_table(spec, cols, n=sum(self.lens[spec]))
        return out


_KERNEL_KEEP = ("name", "start", "end", "pid", "tid", "correlation_id", "dispatch_id",
                "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "vgpr",
                "accum_vgpr", "sgpr", "lds_bytes", "scratch_bytes")


def _kernel_cols(k: dict, dev: np.ndarray, queue: np.ndarray | None,
                 stream: np.ndarray | None, api_off: int) -> dict[str, Any]:
    cols = {c: k.get(c) for c in _KERNEL_KEEP}
    cols["device"] = from_numpy(np.asarray(dev))
    if queue is not None:
        cols["queue"] = _nullable(queue, I32)
    if stream is not None:
        cols["stream"] = _nullable(stream, I32)
    if "api_index" in k:
        cols["api_index"] = _nullable(k["api_index"], I32, api_off)
    return cols


def _copy_cols(c: dict, cc: dict, stream: np.ndarray | None, api_off: int) -> dict[str, Any]:
    cols = {"direction": string_array(cc["dir"].astype(str).tolist()).dictionary_encode(),
            "name": c["direction_raw"], "start": c["start"], "end": c["end"],
            "device": _nullable(cc["dev"], I16),
            "src_device": _nullable(cc["src"], I16),
            "dst_device": _nullable(cc["dst"], I16),
            "pid": c.get("pid"), "tid": c.get("tid"),
            "correlation_id": c.get("correlation_id")}
    if stream is not None:
        cols["stream"] = _nullable(stream, I32)
    if "api_index" in c:
        cols["api_index"] = _nullable(c["api_index"], I32, api_off)
    return cols


def _marker_cols(mk: dict) -> dict[str, Any]:
    depth = nesting_depth(np_column(mk["start"]), np_column(mk["end"]),
                          group_key(np_column(mk["pid"], -1), np_column(mk["tid"], -1)))
    n_m = len(mk["start"])
    return {"name": mk["name"], "domain": string_array(["roctx"] * n_m).dictionary_encode(),
            "start": mk["start"], "end": mk["end"], "depth": from_numpy(np.asarray(depth)),
            "pid": mk["pid"], "tid": mk["tid"]}


def _event_tables(parts: list[Part], k_dev: list, c_cols: list, queue_of: dict,
                  stream_of: dict) -> dict[str, Any]:
    stores = _Stores()
    api_off, kern_off = 0, 0
    for i, p in enumerate(parts):
        n_api = len(p.api["start"]) if p.api is not None else 0
        n_k = len(p.kernels["start"]) if p.kernels is not None else 0
        if p.api is not None:
            stores.push("api", {c: p.api[c] for c in ("name", "domain", "start", "end", "pid",
                                                      "tid", "correlation_id")}, n_api)
        if p.kernels is not None:
            stores.push("kernels", _kernel_cols(p.kernels, k_dev[i], queue_of.get(i),
                                                stream_of.get((i, "k")), api_off), n_k)
        if p.copies is not None:
            stores.push("copies", _copy_cols(p.copies, c_cols[i], stream_of.get((i, "c")),
                                             api_off), len(p.copies["start"]))
        if p.markers is not None:
            stores.push("markers", _marker_cols(p.markers), len(p.markers["start"]))
        if p.counters is not None:
            cn = p.counters
            stores.push("counters", {
                "counter": cn["counter"], "value": cn["value"],
                "kernel_index": _nullable(cn["kernel_index"], I32, kern_off),
                "dispatch_id": cn.get("dispatch_id")}, len(cn["counter"]))
        api_off += n_api
        kern_off += n_k
    return stores.tables()


def _id_tables(dev_cols: dict, queue_rows: list, stream_rows: list) -> dict[str, Any]:
    tables: dict[str, Any] = {"devices": build_table("devices", dev_cols,
                                                     n=len(dev_cols["index"]))}
    if queue_rows:
        queue_rows.sort()
        tables["queues"] = build_table("queues", {
            "device": [r[0] for r in queue_rows], "queue": [r[1] for r in queue_rows],
            "raw_id": [r[2] for r in queue_rows], "name": [r[3] for r in queue_rows]},
            n=len(queue_rows))
    if stream_rows:
        tables["streams"] = build_table("streams", {
            c: [r[c] for r in stream_rows] for c in ("stream", "device", "queue", "pid",
                                                     "raw_id")}, n=len(stream_rows))
    return tables


# --------------------------------------------------------------------------- meta

def _meta(name: str, parts: list[Part], load: Load, ignored: list[str],
          mem_summary: dict) -> dict[str, Any]:
    pids: set[int] = {p.s.pid for p in parts if p.s.pid is not None}
    for what in ("api", "markers", "counters"):
        for p in parts:
            t = getattr(p, what)
            if t is not None and t.get("pid") is not None and len(t["pid"]):
                pids.update(int(x) for x in pc.unique(t["pid"].drop_null()).to_pylist())
    layout = max(load.layout, key=LAYOUT_RANK.__getitem__) if load.layout else "<=6.4"
    load.provenance.setdefault("kernels.pid", "the file prefix <pid>_kernel_trace.csv "
                                              "(kernel traces have no Process_Id column)")
    load.provenance.setdefault("correlation_id", "Correlation_Id; 0 (none) read as null")
    load.provenance.setdefault("markers.domain", "roctx (marker_api_trace.csv; Function "
                                                 "holds the message)")
    meta = new_meta(name, load.sources, "CLOCK_BOOTTIME", tool="rocprofv3",
                    tool_version=layout, layout=layout, pids=sorted(pids),
                    warnings=load.warnings, provenance=load.provenance)
    hosts = sorted({p.s.host for p in parts if p.s.host})
    if len(hosts) == 1:
        meta["host"] = hosts[0]
    elif hosts:
        meta["hosts"] = hosts
    finish_meta(meta, load.warnings, load.dropped)
    if ignored:
        meta["ignored_files"] = ignored
    meta.update(mem_summary)
    return meta


def assemble(name: str, parts: list[Part], load: Load, ignored: list[str],
             mem_summary: dict) -> Trace:
    """One trace from the sets' parts: device, queue and stream ids made global."""
    luts, dev_cols = _agent_luts(parts, load)
    k_dev: list[np.ndarray | None] = []
    c_cols: list[dict[str, np.ndarray] | None] = []
    for p, lut in zip(parts, luts):
        d = None
        if p.kernels is not None:
            d, dev_cols = _kernel_devices(p, lut, dev_cols, load)
        k_dev.append(d)
        c_cols.append(_copy_devices(p, lut, load) if p.copies is not None else None)
    queue_of, queue_rows, qpair_of = _queues(parts, k_dev, load)
    stream_of, stream_rows = _streams(parts, qpair_of, load)
    tables = _event_tables(parts, k_dev, c_cols, queue_of, stream_of)
    tables.update(_id_tables(dev_cols, queue_rows, stream_rows))
    return Trace(meta=_meta(name, parts, load, ignored, mem_summary), **tables)


def _nullable(values: np.ndarray, type_: pa.DataType, offset: int = 0) -> pa.Array:
    values = np.asarray(values)
    mask = values < 0
    if offset:
        values = values + offset
    return from_numpy(values.astype(type_.to_pandas_dtype(), copy=False), mask)
