"""The tables of a pftrace from the column walk (:mod:`.colwalk`): kernels and API calls
(the millions) with numpy over the annotation columns, copies and markers (few) from
records made from the columns, so the record code builds them. The figures are those
of :mod:`.tables` on the record walk; :class:`~.colwalk.Declined` where they could not be.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ...model import Trace, build_table
from .._common import devices_table
from .colann import AnnCols, IntCol, ann_value, factorize, key_of, track_cols
from .colutil import (
    NULL_INT,
    DevList,
    both,
    cat_cols,
    dict_array,
    filled,
    first_seen,
    icol,
    int_array,
)
from .colwalk import V_DOUBLE, V_INT, V_PTR, V_UINT, Columns, Declined
from .fast import _pftscan
from .proto import (
    API_CATEGORIES,
    IGNORED_CATEGORIES,
    KERNEL_KNOWN,
    api_domain,
    int_column,
)
from .tables import KERNEL_ANNS, PRODUCT_ANNS, Builder

_GPU_CATS = ("kernel_dispatch", "memory_copy", "marker_api")
K_KERN, K_COPY, K_MARK, K_API, K_IGN = range(5)


def _class(cat: str) -> int:
    if cat == "kernel_dispatch":
        return K_KERN
    if cat == "memory_copy":
        return K_COPY
    if cat == "marker_api":
        return K_MARK
    if cat in API_CATEGORIES or cat.endswith("_api") or cat.startswith("api:"):
        return K_API
    return K_IGN


class ColBuilder(Builder):
    """:class:`Builder` over columns: the same methods fill the same attributes
    (kernels and API calls as positions in ``cols.rows``, their columns as arrays)."""

    kern: Any
    api: Any
    k_cols: Any
    a_cols: Any
    c_cols: Any
    k_dev: Any
    a_dev: Any
    pmc_cols: Any

    def __init__(self, name, path, cols: Columns, warnings, dropped):
        self.cols = cols
        self.ac = AnnCols(cols)
        super().__init__(name, path, [], cols.tracks, warnings, dropped, cols.hipscope_made)

    def _sort(self, slices: list) -> None:
        c = self.cols
        cats = np.append(c.cats, np.uint32(len(c.strings)))  # [-1]: no category
        first = cats[np.where(c.sl["cat_n"][c.rows] > 0,
                              c.sl["cat_lo"][c.rows].astype(np.int64), -1)]
        counts = np.bincount(first, minlength=len(c.strings) + 1)
        ucat = np.flatnonzero(counts)
        names = [c.strings[u] if u < len(c.strings) else "" for u in ucat.tolist()]
        table = np.zeros(len(counts), dtype=np.int8)
        table[ucat] = [_class(n) for n in names]
        klass = table[first]
        self.pos = {k: np.flatnonzero(klass == k) for k in range(5)}  # positions in rows
        first_at = np.full(len(counts), len(first))
        if len(ucat) > 1:  # the order categories first appear in (the record code's)
            first_at[ucat] = [int(np.argmax(first == u)) for u in ucat.tolist()]
        for u in np.argsort(first_at[ucat], kind="stable").tolist():
            cat = names[u]
            u = ucat[u]
            if _class(cat) == K_IGN:
                self.ignored[cat or "(no category)"] += int(counts[u])
            elif not self.hipscope_made and (cat in API_CATEGORIES or cat in _GPU_CATS):
                self.tools.add("rocprofiler-sdk")
        for cat, n in self.ignored.items():
            if cat not in IGNORED_CATEGORIES:
                self.warnings.append(f"{n} slice(s) of category {cat!r} are not GPU work or "
                                     f"API calls hipscope knows; skipped")
        self.copies = self.records(self.pos[K_COPY])
        self.marks = self.records(self.pos[K_MARK])
        self.kern = self.pos[K_KERN]
        self.api = self.pos[K_API]

    def records(self, pos: np.ndarray) -> list:
        """The record walk's ``[track, start, end, name, cats, ann, flows, order]``."""
        c = self.cols
        rows = c.rows[pos]
        anns = self._ann_dicts(rows)
        out = []
        for p, i, ann in zip(pos.tolist(), rows.tolist(), anns):
            s = c.sl[i]
            cl, cn, fl, fn = (int(s[k]) for k in ("cat_lo", "cat_n", "flow_lo", "flow_n"))
            out.append([int(s["track"]), int(c.start[p]), int(c.end[p]),
                        c.strings[int(s["name"])],
                        tuple(c.strings[x] for x in c.cats[cl:cl + cn].tolist()), ann,
                        tuple(c.flows[fl:fl + fn].tolist()), i])
        return out

    def _ann_dicts(self, rows: np.ndarray) -> list[dict]:
        """The annotation dict of each slice ``rows`` (insertion order, last value)."""
        c = self.cols
        if not len(rows):
            return []
        at = np.full(len(c.sl), -1, dtype=np.int64)
        at[rows] = np.arange(len(rows))
        got: list[tuple] = []
        for name, (idx, kind, val, p, _) in c.names.items():
            j = at[idx]
            m = np.flatnonzero(j >= 0)
            got += zip(j[m].tolist(), p[m].tolist(), [name] * len(m), kind[m].tolist(),
                       val[m].tolist())
        got.sort(key=lambda e: (e[0], e[1]))
        out: list[dict] = [{} for _ in range(len(rows))]
        for j, _, name, k, v in got:
            out[j][c.strings[name]] = ann_value(c, k, v)
        return out

    # ------------------------------------------------------------------ devices
    def devices(self) -> None:
        self.k_dev = self._col_devs(self.kern, True)
        self.devices_rest()

    def _unknown_kernel_devices(self) -> None:
        k = self.k_dev
        if not isinstance(k, DevList):
            return super()._unknown_kernel_devices()
        none = np.array([g is None for g in k.got], dtype=bool)
        n_nodev = int(none[k.inv].sum()) if len(k.got) else 0
        if n_nodev:
            unknown = ("UNKNOWN", 0)
            self.dev_keys.setdefault(unknown, {"raw": None, "hs": None})
            k.got = [unknown if g is None else g for g in k.got]
            self.warnings.append(f"{n_nodev} kernel(s) name no agent (no agent annotation, "
                                 f"no COMPUTE track); put on an 'unknown device'")

    def _col_devs(self, pos: np.ndarray, gpu_work: bool) -> Any:
        """``dev_of`` once per distinct (agent value, track), in first-seen order (as
        the record code's memo: the first call of each registers the device)."""
        if not len(pos):
            return []
        kind, val = self.ac.raw(pos, "agent")
        tracks = self.cols.sl["track"][self.cols.rows[pos]] if gpu_work else \
            np.zeros(len(pos), dtype=np.uint64)
        inv, first = factorize(key_of(kind, val, tracks))
        got: list[Any] = [None] * len(first)
        for u, at in enumerate(first.tolist()):
            k, v, t = int(kind[at]), int(val[at]), int(tracks[at])
            if not k and not gpu_work:
                continue  # no agent annotation on an API call or marker: no device
            pyv = ann_value(self.cols, k, v) if k else None
            got[u] = self.dev_of(pyv, self.tinfo(t)) if gpu_work else \
                self.dev_of(pyv, {}, False)
        return DevList(got, inv)

    # ------------------------------------------------------------------ api and links
    def api_cols(self) -> None:
        c, pos = self.cols, self.api
        rows = c.rows[pos]
        sl = {f: c.sl[f][rows] for f in ("name", "cat_lo", "cat_n", "track")}
        a_cols: dict[str, Any] = {"name": c.names_of(sl["name"]), "domain": self._domains(sl),
                                  "start": c.start[pos], "end": c.end[pos]}
        tc = track_cols(self, sl["track"])
        a_cols["pid"] = self.ac.pid(pos, tc["pid"])
        a_cols["tid"] = self.ac.int_or(pos, "tid", tc["tid"])
        a_cols["correlation_id"] = self.ac.ints(pos, "corr_id")
        a_cols["stream"] = self.ac.ints(pos, "stream_ID")
        a_cols["device"] = self._dev_index(self.a_dev)
        self.api_fv, self.api_fo = self._flows(rows)  # in API order: owners ascend
        self.a_cols = a_cols

    def _domains(self, sl: dict[str, np.ndarray]) -> Any:
        """The API domain of each slice, once per distinct (name, categories)."""
        c = self.cols
        n, lo = sl["cat_n"].astype(np.int64), sl["cat_lo"].astype(np.int64)
        cats = np.append(c.cats.astype(np.int64), -1)  # [-1]: no category
        c0 = cats[np.where(n >= 1, lo, -1)]
        c1 = cats[np.where(n >= 2, lo + 1, -1)]
        many = np.flatnonzero(n > 2)
        c1[many] = -2 - many  # more than two categories: a key of their own (rare)
        inv, first = factorize(key_of(sl["name"], n, c0, c1))
        out = []
        for at in first.tolist():
            a, k = int(sl["cat_lo"][at]), int(sl["cat_n"][at])
            texts = [c.strings[x] for x in c.cats[a:a + k].tolist()] or [""]
            d = next((x[4:] for x in texts[1:] if x.startswith("api:")), None)
            out.append(d if d is not None else api_domain(texts[0],
                                                            c.strings[int(sl["name"][at])]))
        dom = {d: i for i, d in enumerate(dict.fromkeys(out))}  # distinct domains
        return dict_array(np.array([dom[d] for d in out], dtype=np.int64)[inv],
                           list(dom))

    def _flows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The flow ids of slices ``rows`` flattened, and the position of each's slice."""
        c = self.cols
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        total = int(c.sl["flow_n"][rows].sum(dtype=np.int64))
        fv, owner = np.empty(total, np.uint64), np.empty(total, np.int64)
        _pftscan.flows(c.sl, rows, c.flows, fv, owner)
        return fv, owner

    def link(self, rows) -> tuple[Any, int]:
        if isinstance(rows, list):  # copies: their records
            fv = np.array([f for s in rows for f in s[6]], dtype=np.uint64)
            fo = np.repeat(np.arange(len(rows)), [len(s[6]) for s in rows])
            n = len(rows)
        else:
            fv, fo = self._flows(self.cols.rows[rows])
            n = len(rows)
        out = np.full(n, -1, dtype=np.int64)
        na = len(self.api_fv)
        if len(fv) and na:  # where each flow id first appears among the API calls'
            codes, first = factorize(np.concatenate([self.api_fv, fv]))
            at = first[codes[na:]]
            hit = at < na
            fh = fo[hit]  # owners ascending: the first hit of each owner
            once = np.flatnonzero(np.r_[True, fh[1:] != fh[:-1]]) if len(fh) else fh
            out[fh[once]] = self.api_fo[at[hit][once]]
        return out, int((out >= 0).sum())

    def link_by_corr(self, k_api, c_api) -> int:
        from ...model import link_by_correlation

        api_corr = filled(self.a_cols["correlation_id"])
        api_pid = filled(self.a_cols["pid"])
        by_corr = 0
        for cols, links in ((self.k_cols, k_api), (self.c_cols, c_api)):
            if not len(links) or not len(api_corr):
                continue
            corr, pid = filled(cols["correlation_id"]), filled(cols["pid"])
            need = np.flatnonzero((links < 0) & (corr != NULL_INT))
            if not len(need) or not len(api_corr):
                continue
            hit = link_by_correlation(corr[need], np.where(pid[need] == NULL_INT, -1, pid[need]),
                                      np.where(api_corr == NULL_INT, -2, api_corr),
                                      np.where(api_pid == NULL_INT, -1, api_pid))
            ok = hit >= 0
            links[need[ok]] = hit[ok]
            by_corr += int(ok.sum())
        return by_corr

    def _devs(self, rows, gpu_work: bool) -> list:
        if isinstance(rows, np.ndarray):
            return self._col_devs(rows, gpu_work)
        return super()._devs(rows, gpu_work)

    def _dev_index(self, keys: list) -> IntCol:
        if isinstance(keys, DevList):  # per distinct key, then spread
            u = self._dev_index(keys.got)
            return IntCol(u.v[keys.inv], u.ok[keys.inv])
        idx = [self.di(k) for k in keys]
        return IntCol(np.array([-1 if i is None else i for i in idx], dtype=np.int64),
                      np.array([i is not None for i in idx], dtype=bool))

    # ------------------------------------------------------------------ kernels
    def kernel_cols(self) -> None:
        c, pos, ac = self.cols, self.kern, self.ac
        self.ann_times = 0
        if not len(pos):
            self.k_cols = defaultdict(list)
            self.pmc_cols = ([], np.zeros(0, np.float64), np.zeros(0, np.int32))
            return
        rows = c.rows[pos]
        tc = track_cols(self, c.sl["track"][rows])
        k: dict[str, Any] = {"name": c.names_of(c.sl["name"][rows]),
                             "device": self._dev_index(self.k_dev)}
        b, e = ac.ints(pos, "begin_ns"), ac.ints(pos, "end_ns")
        start, end = c.start[pos], c.end[pos]
        use = b.ok & e.ok & (e.v >= b.v)
        self.ann_times = int((use & ((b.v != start) | (e.v != end))).sum())
        k["start"], k["end"] = np.where(use, b.v, start), np.where(use, e.v, end)
        k["queue"] = ac.int_or(pos, "queue", tc["queue"])
        k["stream"] = ac.int_or(pos, "stream_ID", tc["stream"])
        k["pid"] = ac.pid(pos, tc["pid"])
        k["tid"] = ac.int_or(pos, "tid", tc["tid"])
        for col, key in KERNEL_ANNS:
            k[col] = ac.int_or(pos, col, ac.ints(pos, PRODUCT_ANNS[col])) if key is None \
                else ac.ints(pos, key)
        self.k_cols = k
        self._pmc(pos)

    def _pmc(self, pos: np.ndarray) -> None:
        """Numeric kernel annotations that are not the writer's fields: one row each,
        by kernel then in the slice's order."""
        c = self.cols
        kj = np.full(len(c.sl), -1, dtype=np.int64)
        kj[c.rows[pos]] = np.arange(len(pos))
        parts = []
        for name, (idx, kind, val, p, dup) in c.names.items():
            if c.strings[name] in KERNEL_KNOWN:
                continue
            j = kj[idx]
            m = j >= 0
            if dup and m.any():
                raise Declined("an annotation name given twice on one kernel")
            m &= np.isin(kind, (V_INT, V_UINT, V_PTR, V_DOUBLE))
            if m.any():
                parts.append((j[m], p[m], np.full(int(m.sum()), name), kind[m], val[m]))
        if not parts:
            self.pmc_cols = ([], np.zeros(0, np.float64), np.zeros(0, np.int32))
            return
        j, p, name, kind, raw = (np.concatenate(x) for x in zip(*parts))
        o = np.lexsort((p, j))
        j, name, kind, raw = j[o], name[o], kind[o], raw[o]
        val = np.where(kind == V_DOUBLE, raw.view(np.float64),
                       np.where(kind == V_INT, raw.view(np.int64).astype(np.float64),
                                raw.astype(np.float64)))
        self.pmc_cols = (c.names_of(name), val, j.astype(np.int32))

    # ------------------------------------------------------------------ tables
    def mk(self, spec: str, cols: dict, n: int) -> Any:
        import pyarrow as pa

        from ...model.schema import SPECS

        out: dict[str, Any] = {}
        for name, vals in cols.items():
            col = SPECS[spec].by_name[name]
            if isinstance(vals, IntCol):
                vals = int_array(vals, col.type.to_pandas_dtype(), f"{spec}.{name}",
                                  self.warnings)
            elif pa.types.is_integer(col.type) and name not in ("start", "end"):
                vals = int_column(vals, col.type.to_pandas_dtype(), f"{spec}.{name}",
                                   self.warnings)
            out[name] = vals
        return build_table(spec, out, n=n)

    def id_tables(self) -> dict[str, Any]:
        from ...model.schema import SPECS

        k = self.k_cols
        d, q = icol(k["device"]), icol(k["queue"])
        both = np.flatnonzero(d.ok & q.ok)
        pairs = first_seen(np.stack([d.v[both], q.v[both]], axis=1))
        parts = [k] + ([self.c_cols] if len(self.copies) else [])
        st, dv, qv, pv = (cat_cols([icol(p[n]) for p in parts])
                          for n in ("stream", "device", "queue", "pid"))
        has = np.flatnonzero(st.ok)
        inv, first = factorize(st.v[has])
        us = st.v[has][first]
        order = np.arange(len(us))
        qa = np.flatnonzero(qv.ok[has])
        sq = np.stack([inv[qa], qv.v[has][qa]], axis=1)
        sq = sq[factorize(key_of(*sq.T))[1]] if len(sq) else sq
        nq = np.bincount(sq[:, 0], minlength=len(us)) if len(sq) else np.zeros(len(us), int)
        oneq = np.zeros(len(us), dtype=np.int64)
        if len(sq):
            oneq[sq[:, 0]] = sq[:, 1]
        at = has[first[order]]
        return {
            "devices": devices_table(self.dev_rows, SPECS["devices"].by_name),
            "queues": build_table("queues", {"device": pairs[:, 0].tolist(),
                                             "queue": pairs[:, 1].tolist()}, n=len(pairs)),
            "streams": build_table("streams", {
                "stream": us[order].tolist(),
                "device": IntCol(dv.v[at], dv.ok[at]).tolist(),
                "queue": [int(oneq[u]) if nq[u] == 1 else None for u in order.tolist()],
                "pid": IntCol(pv.v[at], pv.ok[at]).tolist(),
            }, n=len(us)),
        }

    def pids(self) -> list:
        got = [icol(t["pid"]) for t in (self.k_cols, self.a_cols, self.c_cols, self.m_cols)
               if "pid" in t]
        col = cat_cols(got) if got else IntCol(np.zeros(0, np.int64), np.zeros(0, bool))
        vals = col.v[col.ok]
        return sorted(vals[factorize(vals)[1]].tolist())


def build_columns(name: str, path, cols: Columns, clock_name: str, warnings: list[str],
                  dropped: dict, n_packets: int, progress) -> Trace:
    """The Trace :func:`.tables.build` makes, from the column walk."""
    b = ColBuilder(name, path, cols, warnings, dropped)
    progress(0.9)
    b.devices()
    both(b.api_cols, b.kernel_cols)
    b.ac.clear()
    k_api, k_by_flow = b.link(b.kern)
    b.copy_cols()
    c_api, c_by_flow = b.link(b.copies)
    by_corr = b.link_by_corr(k_api, c_api)
    b.marker_cols()
    b.k_cols["api_index"] = IntCol(k_api, k_api >= 0)
    b.c_cols["api_index"] = IntCol(c_api, c_api >= 0)
    cn, cv, ck = b.pmc_cols
    tables = {
        "kernels": b.mk("kernels", b.k_cols, len(b.kern)),
        "copies": b.mk("copies", b.c_cols, len(b.copies)),
        "api": b.mk("api", b.a_cols, len(b.api)),
        "markers": b.mk("markers", b.m_cols, len(b.marks)),
        **b.id_tables(),
        "counters": build_table("counters", {"counter": cn, "value": cv, "kernel_index": ck},
                                n=len(cn)),
    }
    links = {"kernels_by_flow": k_by_flow, "copies_by_flow": c_by_flow, "by_corr_id": by_corr}
    meta = b.meta(clock_name, n_packets, cols.counters_seen, links)
    progress(1.0)
    return Trace(meta=meta, **tables)
