"""Tables from pftrace slices: kernels, copies, API calls, markers, PMC counters,
devices, queues and streams, linked by flow ids (else correlation ids)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ...model import Trace, build_table, link_by_correlation
from ...model.schema import SPECS
from .._common import dense_codes, devices_table, finish_meta, nesting_depth, new_meta
from .._intervals import int64_sat as _i64
from .columns import ann_ints, api_domains, i64_list, pid_tid
from .proto import (
    API_CATEGORIES,
    IGNORED_CATEGORIES,
    KERNEL_KNOWN,
    agent_key,
    ann_as_int,
    int_column,
    slice_copy_direction,
)
from .tracks import PROVENANCE, Tracks

# kernel columns from annotations, in column order (None: grid_x/block_x, whose
# product annotations stand in when the x one is missing)
KERNEL_ANNS = (("correlation_id", "corr_id"), ("dispatch_id", "dispatch_id"),
                ("dispatch_ns", "dispatch_ns"), ("grid_x", None), ("grid_y", "grid_y"),
                ("grid_z", "grid_z"), ("block_x", None), ("block_y", "block_y"),
                ("block_z", "block_z"), ("vgpr", "VGPR_Count"),
                ("accum_vgpr", "Accum_VGPR_Count"), ("sgpr", "SGPR_Count"),
                ("registers", "registers"), ("lds_bytes", "LDS_Block_Size"),
                ("dyn_lds_bytes", "dyn_lds_bytes"), ("scratch_bytes", "Scratch_Size"))
PRODUCT_ANNS = {"grid_x": "grid_size", "block_x": "workgroup_size"}
# every integer annotation the kernel columns read, fetched in one pass
_KERNEL_INT_KEYS = ("begin_ns", "end_ns", "queue", "stream_ID", "pid", "tid", "grid_x",
                    "block_x", *PRODUCT_ANNS.values(), *(k for _, k in KERNEL_ANNS if k))

class Builder:
    """Tables and meta of one trace from its sorted slices."""

    def __init__(self, name: str, path: Path, slices: list, tracks: dict, warnings: list[str],
                 dropped: dict, hipscope_made: bool):
        self.name, self.path, self.warnings, self.dropped = name, path, warnings, dropped
        self.hipscope_made = hipscope_made
        self.tinfo = Tracks(tracks)
        self.dev_keys: dict[tuple, dict] = {}
        self.tools: set[str] = set()
        self.kern, self.copies, self.api, self.marks = [], [], [], []
        self.ignored: dict[str, int] = defaultdict(int)
        self._sort(slices)

    def _sort(self, slices: list) -> None:
        for s in slices:
            cats = s[4]
            cat = cats[0] if cats else ""
            if cat == "kernel_dispatch":
                self.kern.append(s)
            elif cat == "memory_copy":
                self.copies.append(s)
            elif cat == "marker_api":
                self.marks.append(s)
            elif cat in API_CATEGORIES or cat.endswith("_api") or cat.startswith("api:"):
                self.api.append(s)
            else:
                self.ignored[cat or "(no category)"] += 1
            if not self.hipscope_made and (cat in API_CATEGORIES or cat in (
                    "kernel_dispatch", "memory_copy", "marker_api")):
                self.tools.add("rocprofiler-sdk")
        for cat, n in self.ignored.items():
            if cat not in IGNORED_CATEGORIES:
                self.warnings.append(f"{n} slice(s) of category {cat!r} are not GPU work or "
                                     f"API calls hipscope knows; skipped")

    # ------------------------------------------------------------------ devices
    def dev_of(self, ann_val, ti: dict, hs_fallback=True) -> tuple | None:
        key = agent_key(ann_val)
        if key is None and ti.get("compute") is not None:
            label, idx, _q = ti["compute"]
            key = ("GPU" if label.upper() == "GPU" else "AGENT", idx)
        if key is None and hs_fallback and ti.get("hs_device") is not None:
            idx = ann_as_int(ti["hs_device"].get("index"))
            if idx is not None:
                key = ("GPU", idx)
        dev_keys = self.dev_keys
        if key is not None and key not in dev_keys:
            dev_keys[key] = {"raw": str(ann_val) if ann_val is not None else
                             f"{'GPU' if key[0] == 'GPU' else 'Agent'} {key[1]}",
                             "hs": ti.get("hs_device")}
        elif key is not None and dev_keys[key]["hs"] is None and ti.get("hs_device"):
            dev_keys[key]["hs"] = ti["hs_device"]
        return key

    def _copy_sides(self, s: list) -> tuple[str, tuple | None, tuple | None]:
        ann = s[5]
        d = slice_copy_direction(s[3], ann)
        ti = self.tinfo(s[0])
        src = dst = None
        if d in ("DtoH", "DtoD", "PtoP"):
            src = self.dev_of(ann.get("src_agent"), {}, False)
        if d in ("HtoD", "DtoD", "PtoP", "memset"):
            dst = self.dev_of(ann.get("dst_agent"), {}, False)
        if d in ("HtoD", "DtoD", "PtoP", "memset") and dst is None and \
                ti.get("copy_agent") is not None:
            dst = self.dev_of(f"Agent {ti['copy_agent']}", {}, False)
        if src is None and dst is None and ti.get("hs_device") is not None:
            dst = self.dev_of(None, ti)
        return d, src, dst

    def devices(self) -> None:
        """Device keys of every slice, then their indices and the devices rows."""
        self.k_dev = self._devs(self.kern, True)
        self.devices_rest()

    def devices_rest(self) -> None:
        """After the kernels' devices: the copies', API calls', markers' and the rows."""
        self._unknown_kernel_devices()
        self._other_devices()

    def _unknown_kernel_devices(self) -> None:
        n_nodev = sum(k is None for k in self.k_dev)
        if n_nodev:
            unknown = ("UNKNOWN", 0)
            self.dev_keys.setdefault(unknown, {"raw": None, "hs": None})
            self.k_dev = [unknown if k is None else k for k in self.k_dev]
            self.warnings.append(f"{n_nodev} kernel(s) name no agent (no agent annotation, "
                                 f"no COMPUTE track); put on an 'unknown device'")

    def _other_devices(self) -> None:
        self.c_dir, self.c_src, self.c_dst = [], [], []
        for s in self.copies:
            d, src, dst = self._copy_sides(s)
            self.c_dir.append(d)
            self.c_src.append(src)
            self.c_dst.append(dst)
        self.a_dev = self._devs(self.api, False)
        self.m_dev = self._devs(self.marks, False)
        keys = sorted(self.dev_keys)
        if keys and all(k[0] == "GPU" for k in keys):
            self.dev_index = {k: k[1] for k in keys}
        else:
            self.dev_index = {k: i for i, k in enumerate(keys)}
        self.dev_rows = [self._device_row(k) for k in keys]

    def _devs(self, rows: list, gpu_work: bool) -> list:
        """``dev_of`` of each slice's agent annotation (GPU work: and its track), once
        per distinct (value, track): the first call of each registers the device."""
        memo: dict[tuple, Any] = {}
        out = []
        for s in rows:
            ann = s[5]
            if not gpu_work and "agent" not in ann:
                out.append(None)
                continue
            v = ann.get("agent")
            key = (type(v), v, s[0] if gpu_work else None)
            got = memo.get(key, memo)
            if got is memo:
                got = self.dev_of(v, self.tinfo(s[0])) if gpu_work else \
                    self.dev_of(v, {}, False)
                memo[key] = got
            out.append(got)
        return out

    def _device_row(self, k: tuple) -> dict[str, Any]:
        hs = self.dev_keys[k]["hs"] or {}
        return {
            "index": self.dev_index[k],
            "name": hs.get("name") or self.dev_keys[k]["raw"] or "unknown device",
            "vendor": hs.get("vendor", "AMD" if "rocprofiler-sdk" in self.tools else None),
            "arch": hs.get("arch"),
            "compute_units": ann_as_int(hs.get("compute_units")),
            "raw_id": hs.get("raw_id", self.dev_keys[k]["raw"]),
            "host": hs.get("host"),
            "memory_bytes": ann_as_int(hs.get("memory_bytes")),
        }

    def di(self, k):
        return None if k is None else self.dev_index[k]

    # ------------------------------------------------------------------ api and links
    def api_cols(self) -> None:
        self.api_flow: dict[int, int] = {}
        api = self.api
        anns = [s[5] for s in api]
        a_cols: dict[str, list] = {
            "name": [s[3] for s in api],
            "domain": api_domains(api),
            "start": i64_list([s[1] for s in api]),
            "end": i64_list([s[2] for s in api]),
        }
        ints = ann_ints(anns, ("pid", "tid", "corr_id", "stream_ID"))
        a_cols["pid"], a_cols["tid"] = pid_tid(ints, self._track_infos(api))
        a_cols["correlation_id"] = ints["corr_id"]
        a_cols["stream"] = ints["stream_ID"]
        a_cols["device"] = [self.di(k) for k in self.a_dev]
        setdefault = self.api_flow.setdefault
        for j, s in enumerate(api):
            for f in s[6]:
                setdefault(f, j)
        self.a_cols = a_cols

    def link(self, rows: list) -> tuple[list, int]:
        out = []
        by_flow = 0
        for s in rows:
            hit = None
            for f in s[6]:
                hit = self.api_flow.get(f)
                if hit is not None:
                    break
            out.append(-1 if hit is None else hit)
            by_flow += hit is not None
        return out, by_flow

    def link_by_corr(self, k_api: list, c_api: list) -> int:
        """corr_id fallback where no flow linked (in place); how many it linked."""
        a_cols = self.a_cols
        api_corr = np.array([-1 if v is None else v for v in a_cols["correlation_id"]],
                            dtype=np.int64)
        api_pid = np.array([-1 if v is None else v for v in a_cols["pid"]], dtype=np.int64)
        by_corr = 0
        for cols, links in ((self.k_cols, k_api), (self.c_cols, c_api)):
            if not links or not len(api_corr):
                continue
            need = [i for i, v in enumerate(links) if v < 0 and
                    cols["correlation_id"][i] is not None]
            if not need:
                continue
            kc = np.array([cols["correlation_id"][i] for i in need], dtype=np.int64)
            kp = np.array([-1 if cols["pid"][i] is None else cols["pid"][i] for i in need],
                          dtype=np.int64)
            hit = link_by_correlation(kc, kp, np.where(api_corr < 0, -2, api_corr), api_pid)
            for i, h in zip(need, hit.tolist()):
                if h >= 0:
                    links[i] = h
                    by_corr += 1
        return by_corr

    # ------------------------------------------------------------------ GPU work
    def kernel_cols(self) -> None:
        """Kernel columns, one list comprehension per column (millions of kernels)."""
        k_cols: dict[str, list] = defaultdict(list)
        self.pmc_rows: list[tuple[int, str, float]] = []
        self.ann_times = 0
        kern = self.kern
        if not kern:
            self.k_cols = k_cols
            return
        anns = [s[5] for s in kern]
        tis = self._track_infos(kern)
        ints = ann_ints(anns, _KERNEL_INT_KEYS)
        k_cols["name"] = [s[3] for s in kern]
        k_cols["device"] = [self.di(k) for k in self.k_dev]
        k_cols["start"], k_cols["end"] = self._kernel_times(kern, ints)
        k_cols["queue"] = [q if q is not None else
                           (ti["compute"][2] if ti.get("compute") is not None else None)
                           for q, ti in zip(ints["queue"], tis)]
        k_cols["stream"] = [st if st is not None else ti.get("stream")
                            for st, ti in zip(ints["stream_ID"], tis)]
        k_cols["pid"], k_cols["tid"] = pid_tid(ints, tis)
        for col, key in KERNEL_ANNS:
            if key is None:
                k_cols[col] = [v if v is not None else p for v, p in
                               zip(ints[col], ints[PRODUCT_ANNS[col]])]
            else:
                k_cols[col] = ints[key]
        known = KERNEL_KNOWN
        for j, ann in enumerate(anns):
            if ann.keys() <= known:
                continue
            for an, v in ann.items():
                if an not in known and isinstance(v, (int, float)) and \
                        not isinstance(v, bool):
                    self.pmc_rows.append((j, an, float(v)))
        self.k_cols = k_cols

    def _track_infos(self, rows: list) -> list[dict]:
        tinfo = self.tinfo
        for t in {s[0] for s in rows}:
            tinfo(t)  # resolved once per track
        get = tinfo.cache.__getitem__
        return [get(s[0]) for s in rows]

    def _kernel_times(self, kern: list, ints: dict) -> tuple[list, list]:
        """begin_ns/end_ns annotations where both are there and in order, else the
        slice times; counts the kernels whose annotations differ from the slice."""
        starts, ends = [], []
        for s, b_ns, e_ns in zip(kern, ints["begin_ns"], ints["end_ns"]):
            start, end = s[1], s[2]
            if b_ns is not None and e_ns is not None and e_ns >= b_ns:
                if b_ns != start or e_ns != end:
                    self.ann_times += 1
                start, end = b_ns, e_ns
            starts.append(start)
            ends.append(end)
        return i64_list(starts), i64_list(ends)

    def copy_cols(self) -> None:
        c_cols: dict[str, list] = defaultdict(list)
        pids, tids = pid_tid(ann_ints([s[5] for s in self.copies], ("pid", "tid")),
                              self._track_infos(self.copies))
        for j, s in enumerate(self.copies):
            ann = s[5]
            ti = self.tinfo(s[0])
            c_cols["direction"].append(self.c_dir[j])
            c_cols["start"].append(_i64(s[1]))
            c_cols["end"].append(_i64(s[2]))
            c_cols["name"].append(ann.get("name") if isinstance(ann.get("name"), str)
                                  else s[3])
            c_cols["bytes"].append(ann_as_int(ann.get("copy_bytes")))
            src, dst = self.di(self.c_src[j]), self.di(self.c_dst[j])
            dev = ann_as_int(ann.get("device"))
            dev = dev if dev is not None and dev in self.dev_index.values() else (
                dst if dst is not None else src)
            c_cols["device"].append(dev)
            c_cols["src_device"].append(src)
            c_cols["dst_device"].append(dst)
            c_cols["queue"].append(ann_as_int(ann.get("queue")))
            st = ann_as_int(ann.get("stream_ID"))
            c_cols["stream"].append(st if st is not None else ti.get("stream"))
            c_cols["pid"].append(pids[j])
            c_cols["tid"].append(tids[j])
            c_cols["correlation_id"].append(ann_as_int(ann.get("corr_id")))
        self.c_cols = c_cols

    def marker_cols(self) -> None:
        m_cols: dict[str, list] = defaultdict(list)
        pids, tids = pid_tid(ann_ints([s[5] for s in self.marks], ("pid", "tid")),
                              self._track_infos(self.marks))
        for j, s in enumerate(self.marks):
            ann = s[5]
            dom = None
            for c in s[4][1:]:
                if c.startswith("marker:"):
                    dom = c[len("marker:"):]
            m_cols["name"].append(s[3])
            m_cols["domain"].append(dom or "roctx")
            m_cols["start"].append(_i64(s[1]))
            m_cols["end"].append(_i64(s[2]))
            m_cols["pid"].append(pids[j])
            m_cols["tid"].append(tids[j])
            m_cols["device"].append(self.di(self.m_dev[j]))
            m_cols["stream"].append(ann_as_int(ann.get("stream_ID")))
        if m_cols["start"]:
            group = dense_codes(zip(m_cols["pid"], m_cols["tid"], m_cols["device"],
                                    m_cols["stream"]))
            # instant marks (roctxMark) never enter the range stack -> depth 0
            m_cols["depth"] = nesting_depth(m_cols["start"], m_cols["end"], group,
                                            instant_depth_zero=True).tolist()
        else:
            m_cols["depth"] = []
        self.m_cols = m_cols

    # ------------------------------------------------------------------ tables
    def mk(self, spec: str, cols: dict, n: int) -> Any:
        import pyarrow as pa

        out: dict[str, Any] = {}
        for c, vals in cols.items():
            col = SPECS[spec].by_name[c]
            if pa.types.is_integer(col.type) and c not in ("start", "end"):
                out[c] = int_column(vals, col.type.to_pandas_dtype(), f"{spec}.{c}",
                                     self.warnings)
            else:
                out[c] = vals
        return build_table(spec, out, n=n)

    def id_tables(self) -> dict[str, Any]:
        k_cols, c_cols = self.k_cols, self.c_cols
        qset = {}
        for d, q in zip(k_cols["device"], k_cols["queue"]):
            if d is not None and q is not None:
                qset.setdefault((d, q), None)
        sset: dict[int, dict] = {}
        for cols in (k_cols, c_cols):
            for d, q, st, p in zip(cols["device"], cols["queue"], cols["stream"],
                                   cols["pid"]):
                if st is None:
                    continue
                e = sset.setdefault(st, {"device": d, "queues": set(), "pid": p})
                if q is not None:
                    e["queues"].add(q)
        return {
            "devices": devices_table(self.dev_rows, SPECS["devices"].by_name),
            "queues": build_table("queues", {"device": [k[0] for k in qset],
                                             "queue": [k[1] for k in qset]}, n=len(qset)),
            "streams": build_table("streams", {
                "stream": list(sset),
                "device": [e["device"] for e in sset.values()],
                "queue": [next(iter(e["queues"])) if len(e["queues"]) == 1 else None
                          for e in sset.values()],
                "pid": [e["pid"] for e in sset.values()],
            }, n=len(sset)),
        }

    def pids(self) -> list:
        return sorted({p for t in (self.k_cols, self.a_cols, self.c_cols, self.m_cols)
                       for p in t.get("pid", []) if p is not None})

    def meta(self, clock_name: str, n_packets: int, counters_seen: dict,
             links: dict[str, int]) -> dict[str, Any]:
        meta = new_meta(self.name, [self.path], clock_name, pids=self.pids(),
                        provenance=dict(PROVENANCE), warnings=self.warnings,
                        packets=n_packets)
        if "rocprofiler-sdk" in self.tools:
            meta["tool"] = "rocprofv3"
        elif self.hipscope_made:
            meta["tool"] = "hipscope (pftrace export)"
        finish_meta(meta, self.warnings, self.dropped)
        n_cnt = sum(counters_seen.values())
        if n_cnt:
            meta["counter_track_values_skipped"] = n_cnt
        if self.ignored:
            meta["skipped_slices"] = dict(self.ignored)
        meta["api_links"] = links
        if self.ann_times:
            meta["kernels_times_from_annotations"] = self.ann_times
        return meta


def build(name: str, path: Path, slices: list, tracks: dict, counters_seen: dict,
          clock_name: str, warnings: list[str], dropped: dict, n_packets: int,
          progress, hipscope_made: bool = False) -> Trace:
    b = Builder(name, path, slices, tracks, warnings, dropped, hipscope_made)
    progress(0.9)
    b.devices()
    b.api_cols()
    b.kernel_cols()
    k_api, k_by_flow = b.link(b.kern)
    b.copy_cols()
    c_api, c_by_flow = b.link(b.copies)
    by_corr = b.link_by_corr(k_api, c_api)
    b.marker_cols()
    b.k_cols["api_index"] = [None if v < 0 else v for v in k_api]
    b.c_cols["api_index"] = [None if v < 0 else v for v in c_api]
    pmc = b.pmc_rows
    tables = {
        "kernels": b.mk("kernels", b.k_cols, len(b.kern)),
        "copies": b.mk("copies", b.c_cols, len(b.copies)),
        "api": b.mk("api", b.a_cols, len(b.api)),
        "markers": b.mk("markers", b.m_cols, len(b.marks)),
        **b.id_tables(),
        "counters": build_table("counters", {
            "counter": [r[1] for r in pmc],
            "value": np.array([r[2] for r in pmc], dtype=np.float64),
            "kernel_index": np.array([r[0] for r in pmc], dtype=np.int32),
        }, n=len(pmc)),
    }
    links = {"kernels_by_flow": k_by_flow, "copies_by_flow": c_by_flow, "by_corr_id": by_corr}
    meta = b.meta(clock_name, n_packets, counters_seen, links)
    progress(1.0)
    return Trace(meta=meta, **tables)
