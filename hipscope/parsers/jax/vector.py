"""The routing of :mod:`.collect` done a column at a time: the same :class:`Collected`
(same rows, same order, same skip counts) from list comprehensions and numpy over all
events instead of one method call per event. Lanes are worked out once per (pid, tid),
kernel details once per distinct text, times with numpy (``round`` and ``np.rint`` both
round half to even on the same float).

:func:`collect_columns` declines (returns False, ``out`` untouched) on values it cannot
take in bulk (an unhashable pid, a digit that ``int`` refuses...): the row loop then
reads the file and says what was wrong. ``HIPSCOPE_JAX_ROWS=1`` forces the row loop
(the oracle of the tests)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .collect import (
    API_COLS,
    API_RE,
    COPY_COLS,
    KERNEL_COLS,
    MARKER_COLS,
    Collected,
    Router,
    Rows,
    _details,
    _int,
    copy_direction,
    kernel_details,
)

_NAN = float("nan")
# stream-line event classes, in the order collect._stream_event tests them
GRAPH, MEMCPY, MEMSET, MEMORY, KERNEL = range(5)


def enabled() -> bool:
    return os.environ.get("HIPSCOPE_JAX_ROWS", "0") != "1"


def _rows(names: tuple[str, ...], cols: dict[str, list]) -> Rows:
    r = Rows(*names)
    r.cols = {c: cols[c] for c in names}
    r._lists = list(r.cols.values())  # noqa: SLF001 - Rows' own field, set in bulk
    return r


def _ints(vals: list) -> list:
    """``_int`` of each value (the common string of digits converted inline)."""
    return [int(v) if type(v) is str and v.isdigit() else
            v if type(v) is int else None if v is None else _int(v) for v in vals]


def _times(ts: list, dur: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, ok) in ns as ``collect.times`` gives them."""
    def num(vals: list) -> np.ndarray:
        return np.array([v if (type(v) is float or type(v) is int) and -9e12 < v < 9e12
                         else _NAN for v in vals], dtype=np.float64)
    t, d = num(ts), num(dur)
    ok = ~np.isnan(t) & ~np.isnan(d) & (d >= 0)
    t, d = np.where(ok, t, 0.0), np.where(ok, d, 0.0)
    start = np.rint(t * 1000.0).astype(np.int64)
    return start, start + np.rint(d * 1000.0).astype(np.int64), ok


def _stream_class(a: Any, name: str) -> int:
    if a is not None and a.cuda_graph_exec_id is not None:
        return GRAPH
    if (a is not None and a.memcpy_details is not None) or name.startswith("Memcpy"):
        return MEMCPY
    if (a is not None and a.memset_details is not None) or name.startswith("Memset"):
        return MEMSET
    return MEMORY if name.startswith("Memory") else KERNEL


class _Skips:
    """Skip counts kept in the order the row loop first meets them."""

    def __init__(self):
        self.first: dict[str, int] = {}
        self.n: dict[str, int] = {}

    def add(self, what: str, at: int, n: int = 1) -> None:
        if n:
            self.first[what] = min(self.first.get(what, at), at)
            self.n[what] = self.n.get(what, 0) + n

    def ordered(self) -> dict[str, int]:
        return {w: self.n[w] for w in sorted(self.n, key=self.first.__getitem__)}


def collect_columns(evs: list, out: Collected, router: Router, check) -> bool:
    """Fill ``out``'s tables, skip counts and event count from ``evs``; False (``out``
    unchanged) where the row loop must read them."""
    try:
        got = _columns(evs, router, check)
    except (TypeError, ValueError, AttributeError, OverflowError):
        return False
    out.kernels, out.copies, out.api, out.markers, skipped, out.n_events = got
    out.skipped.update(skipped)
    return True


def _columns(evs: list, router: Router, check):
    skips = _Skips()
    ph = [e.ph for e in evs]
    for i, p in enumerate(ph):
        if p != "X" and p != "M" and (p or evs[i].name):  # the closing {} is no event
            skips.add(f"ph {p!r} events", i)
    xi = [i for i, p in enumerate(ph) if p == "X"]
    xe = [evs[i] for i in xi]
    check()
    start, end, ok = _times([e.ts for e in xe], [e.dur for e in xe])
    bad = np.flatnonzero(~ok)
    if len(bad):
        skips.add("events without a numeric ts/dur", xi[bad[0]], len(bad))
    keep = np.flatnonzero(ok)
    pos = np.asarray(xi, np.int64)[keep]             # event index of each kept event
    ev = [xe[j] for j in keep.tolist()]
    start, end = start[keep], end[keep]
    lane_ids: dict[tuple, int] = {}
    code = np.fromiter((lane_ids.setdefault((type(e.pid), e.pid, type(e.tid), e.tid),
                                            len(lane_ids)) for e in ev), np.int64, len(ev))
    lanes = [router.lane(_int(k[1]) or 0, _int(k[3]) or 0) for k in lane_ids]
    kind = np.array([{"stream": 0, "gpu_marker": 1, "host": 2}.get(ln[0], 3)
                     for ln in lanes] + [3], np.int64)[code]
    name = [e.name if isinstance(e.name, str) else str(e.name) for e in ev]
    for j in np.flatnonzero(kind == 3):      # skipped lanes, counted per lane text
        skips.add(lanes[code[j]][1], int(pos[j]))
    check()
    ctx = (ev, name, start, end, code, lanes, pos, skips)
    k, c = _stream(ctx, np.flatnonzero(kind == 0))
    a, m = _host_and_markers(ctx, np.flatnonzero(kind == 2), np.flatnonzero(kind == 1),
                             router)
    return k, c, a, m, skips.ordered(), len(ev)


def _stream(ctx, sel: np.ndarray) -> tuple[Rows, Rows]:
    ev, name, start, end, code, lanes, pos, skips = ctx
    s = sel.tolist()
    args = [ev[j].args for j in s]
    cls = np.fromiter((_stream_class(a, name[j]) for a, j in zip(args, s)), np.int64, len(s))
    corr_all = _ints([a.correlation_id if a is not None else None for a in args])
    for g in np.flatnonzero(cls == GRAPH).tolist():
        skips.add("CUDA graph executions (their kernels are kept)", int(pos[sel[g]]))
    for g in np.flatnonzero(cls == MEMORY).tolist():
        skips.add(f"{name[s[g]]} events", int(pos[sel[g]]))
    dev = [lanes[c][1] for c in code[sel].tolist()]
    stream = [lanes[c][2] for c in code[sel].tolist()]
    cp = np.flatnonzero((cls == MEMCPY) | (cls == MEMSET)).tolist()
    copies: dict[str, list] = {"direction": [], "name": [], "bytes": []}
    for j in cp:
        a, nm = args[j], name[s[j]]
        memcpy = cls[j] == MEMCPY
        det = _details((a.memcpy_details if memcpy else a.memset_details) if a else None)
        copies["direction"].append(copy_direction(nm) if memcpy else "memset")
        copies["name"].append(nm)
        copies["bytes"].append(_int(det.get("size" if memcpy else "num_bytes")))
    _common(copies, cp, sel, start, end, dev, stream, corr_all)
    kn = np.flatnonzero(cls == KERNEL).tolist()
    memo: dict[Any, tuple] = {}
    dets = []
    for j in kn:
        a = args[j]
        text = a.kernel_details if a else None
        kd = memo.get(text)
        if kd is None:
            kd = memo[text] = kernel_details(text)
        dets.append(kd)
    kernels: dict[str, list] = {"name": [name[s[j]] for j in kn]}
    _common(kernels, kn, sel, start, end, dev, stream, corr_all)
    for i, col in enumerate(("registers", "lds_bytes", "dyn_lds_bytes", "grid", "block_x",
                             "block_y", "block_z")):
        kernels[col] = [d[i] for d in dets]
    for col in ("hlo_op", "hlo_module"):
        vals = [getattr(args[j], col) if args[j] else None for j in kn]
        kernels[col] = [v if isinstance(v, str) else None for v in vals]
    return _rows(KERNEL_COLS, kernels), _rows(COPY_COLS, copies)


def _common(cols: dict, rows: list, sel, start, end, dev, stream, corr) -> None:
    at = sel[rows] if rows else np.zeros(0, np.int64)
    cols["start"], cols["end"] = start[at].tolist(), end[at].tolist()
    cols["device"] = [dev[j] for j in rows]
    cols["stream"] = [stream[j] for j in rows]
    cols["correlation_id"] = [corr[j] for j in rows]


def _domain(name: str) -> str:
    return ("HIP_RUNTIME_API" if name.startswith("hip") else
            "HSA_CORE_API" if name.startswith("hsa_") else
            "cuda_runtime" if name.startswith("cuda") else "cuda_driver")


def _host_and_markers(ctx, host: np.ndarray, gpu: np.ndarray, router: Router):
    """API calls of the host lanes; markers of the host and derived device lanes, in
    event order."""
    ev, name, start, end, code, lanes, _pos, _skips = ctx
    h = host.tolist()
    args = [ev[j].args for j in h]
    corr = _ints([a.correlation_id if a is not None else None for a in args])
    memo: dict[str, bool] = {}
    is_api = np.fromiter(((memo[nm] if nm in memo else memo.setdefault(
        nm, bool(API_RE.match(nm)))) or (c is not None and not nm.startswith("$"))
        for nm, c in ((name[j], c) for j, c in zip(h, corr))), bool, len(h))
    ap = np.flatnonzero(is_api).tolist()
    d = _ints([args[j].device_id if args[j] is not None else None for j in ap])
    api = {"name": [name[h[j]] for j in ap], "domain": [_domain(name[h[j]]) for j in ap],
           "start": start[host[ap]].tolist() if ap else [],
           "end": end[host[ap]].tolist() if ap else [],
           "pid": [lanes[code[h[j]]][1] for j in ap], "tid": [lanes[code[h[j]]][2] for j in ap],
           "correlation_id": [corr[j] for j in ap],
           "device": [router.gpu_ordinal.get(x) if x is not None else None for x in d]}
    mk = np.sort(np.concatenate([host[~is_api], gpu]))
    c = code[mk]
    on_gpu = np.array([ln[0] == "gpu_marker" for ln in lanes] + [False], bool)[c]
    first, second = (np.array([ln[i] if len(ln) > 2 else None for ln in lanes] + [None],
                              object)[c] for i in (1, 2))
    nm = [name[j] for j in mk.tolist()]
    doms: dict[str, str] = {}
    host_dom = np.array([doms[x] if x in doms else doms.setdefault(x, _marker_domain(x))
                         for x in nm] + [None], object)[:-1]
    none = np.full(len(mk), None, object)
    markers = {"name": nm, "domain": np.where(on_gpu, second, host_dom).tolist(),
               "start": start[mk].tolist(), "end": end[mk].tolist(),
               "pid": np.where(on_gpu, none, first).tolist(),
               "tid": np.where(on_gpu, none, second).tolist(),
               "device": np.where(on_gpu, first, none).tolist(), "stream": none.tolist()}
    return _rows(API_COLS, api), _rows(MARKER_COLS, markers)


def _marker_domain(name: str) -> str:
    return ("python_function" if name.startswith("$") else
            "nvtx" if name.startswith("NVTX:") else "xla_host")
