"""The trace's tables from decoded Kineto events: API calls, kernels, copies, markers,
linked by correlation id (from args, else from ac2g flows)."""

from __future__ import annotations

from itertools import compress, repeat
from operator import attrgetter, eq
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from ...model import Trace, build_table, categorical, link_by_correlation
from .._common import copy_direction
from .._intervals import LIMIT_NS
from ..base import check_cancel
from .columns import (
    NULL,
    args_cols,
    args_of,
    codes_of,
    corr_from_flows,
    drop_api_rows,
    filtered_table,
    first_seen,
    name_column,
    opt_array,
    pid_tid,
    str_codes,
    times_ns,
    to_int,
    xyz_fast,
)
from .decode import GPU_MARKER_CATS, HOST_MARKER_CATS, Top, canonical_cat
from .devices import device_table, stream_table, trace_meta, vendor_of
from .markers import gpu_annotation_side, kernel_comm_fields, marker_table
from .native import ColEvents, ColSub

__all__ = ["build"]

# grid of these AMD launch calls is the global work size (work-items), not blocks
_AMD_GLOBAL_SIZE_LAUNCHES = ("hipExtModuleLaunchKernel", "hipHccModuleLaunchKernel")
_COPY_KINDS = ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP")
_I31, _I62, _I63 = (1 << 31) - 1, 1 << 62, (1 << 63) - 1
_CAT, _NAME, _PH = attrgetter("cat"), attrgetter("name"), attrgetter("ph")


class _Events:
    """The decoded events with their categories coded once, selectable by category."""

    def __init__(self, top: Top):
        self.evs = top.traceEvents
        self.n = len(self.evs)
        cats = list(map(_CAT, self.evs))
        self.cat_codes, cat_names = str_codes(cats)
        del cats
        self.renamed = self._canonical_cats(cat_names)
        if self.renamed:
            self.cat_codes, cat_names = str_codes(list(map(_CAT, self.evs)))
        self.cat_index = {c: i for i, c in enumerate(cat_names)}

    def _canonical_cats(self, cat_names: list) -> dict[str, str]:
        """Rewrite older category spellings (``Kernel``, ``Runtime``...) in place;
        returns {old: new} for what was rewritten."""
        renamed = {c: canonical_cat(c) for c in cat_names if canonical_cat(c) != c}
        if renamed:
            codes = [i for i, c in enumerate(cat_names) if c in renamed]
            for i in np.flatnonzero(np.isin(self.cat_codes, codes)).tolist():
                e = self.evs[i]
                e.cat = renamed[e.cat]
        return renamed

    def select(self, names: tuple[str, ...], phase: str | None = "X") -> list:
        wanted = [self.cat_index[c] for c in names if c in self.cat_index]
        if not wanted:
            return []
        idx = np.flatnonzero(np.isin(self.cat_codes, wanted))
        sub = list(map(self.evs.__getitem__, idx.tolist()))
        if phase is not None:
            sub = list(compress(sub, map(eq, map(_PH, sub), repeat(phase))))
        return sub


def _process_names(ev: _Events) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
    proc_labels: dict[int, str] = {}
    thread_names: dict[tuple[int, int], str] = {}
    for e in ev.select(("",), phase="M"):
        a = e.args
        if a is None:
            continue
        pid = to_int(e.pid)
        if e.name == "process_labels" and isinstance(a.labels, str):
            proc_labels[pid] = a.labels
        elif e.name == "thread_name" and isinstance(a.name, str):
            thread_names[(pid, to_int(e.tid))] = a.name.strip()
    return proc_labels, thread_names


def _api_side(sub: list, base: int, vendor: str | None) -> SimpleNamespace:
    """Host runtime / driver calls as columns."""
    a = SimpleNamespace(sub=sub)
    a.args = args_of(a.sub)
    a.n = len(a.sub)
    a.start, a.end, a.ok = times_ns(a.sub, base)
    a.pid, a.tid = pid_tid(a.sub)
    a.cols = args_cols(a.args, ("correlation", "stream", "device", "shared", "size", "bytes")
                        if vendor == "AMD" else ("correlation", "stream", "device"))
    a.dom_codes, a.dom = codes_of(a.sub, "cat")
    a.name_codes, a.name_cats = codes_of(a.sub, "name")
    a.corr = a.cols["correlation"]
    a.stream = np.where(a.cols["stream"] == 0xFFFFFFFF, NULL, a.cols["stream"])
    return a


def _gpu_side(sub: list, base: int, fields: tuple[str, ...]) -> SimpleNamespace:
    """GPU events (kernels or copies): times, raw device and stream, args columns."""
    g = SimpleNamespace(sub=sub, args=args_of(sub))
    g.start, g.end, g.ok = times_ns(sub, base)
    g.pid, g.tid = pid_tid(sub)
    g.cols = args_cols(g.args, fields)
    g.dev_raw = np.where(g.cols["device"] != NULL, g.cols["device"], g.pid)
    g.stream = np.where(g.cols["stream"] != NULL, g.cols["stream"], g.tid)
    g.corr = g.cols["correlation"]
    return g


def _linker(a: SimpleNamespace):
    """corr -> row of the launching API call, -1 where none."""
    launch_rows = np.flatnonzero(a.corr != NULL)
    lr_corr = a.corr[launch_rows]

    def link(corr: np.ndarray) -> np.ndarray:
        out = np.full(len(corr), -1, dtype=np.int64)
        has = corr != NULL
        if has.any() and len(launch_rows):
            li = link_by_correlation(corr[has], None, lr_corr, None)
            out[has] = np.where(li >= 0, launch_rows[np.maximum(li, 0)], -1)
        return out

    return link


def _device_mapper(dev_map: dict[int, int]):
    def map_dev(raw: np.ndarray) -> np.ndarray:
        out = np.full(len(raw), NULL, dtype=np.int64)
        for r, d in dev_map.items():
            out[raw == r] = d
        return out

    return map_dev


def _grid(k: SimpleNamespace, a: SimpleNamespace, vendor: str | None,
          provenance: dict[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """Grid in work-items (x, y, z) and block of each kernel."""
    grid = xyz_fast(k.args, "grid")
    block = xyz_fast(k.args, "block")
    linked, li = k.api >= 0, np.maximum(k.api, 0)
    if a.n:
        a_grid = xyz_fast(a.args, "grid")
        a_block = xyz_fast(a.args, "block")
        fill = linked & (grid[:, 0] == NULL)
        if fill.any():
            grid[fill] = a_grid[li[fill]]
            block[fill] = np.where(block[fill] == NULL, a_block[li[fill]], block[fill])
            provenance["grid_x"] = "kernel args.grid, else the launching call's args.grid"
    if vendor == "AMD":
        gs_codes = [i for i, nm in enumerate(a.name_cats) if nm in _AMD_GLOBAL_SIZE_LAUNCHES]
        if a.n:
            is_global = linked & np.isin(a.name_codes[li], gs_codes)
        else:
            is_global = np.zeros(len(k.sub), bool)
        blocks_known = linked & ~is_global
        gx = np.where(is_global[:, None], grid,
                      np.where(blocks_known[:, None], grid * block, NULL))
        gx = np.where((grid == NULL) | (block == NULL), NULL, gx)
        provenance["grid_x"] = (
            "Kineto args.grid x args.block (grid counted workgroups) for hipLaunchKernel/"
            "hipModuleLaunchKernel launches; as printed for hipExtModuleLaunchKernel/"
            "hipHccModuleLaunchKernel, whose grid is already the global size in work-items; "
            "null for kernels without a linked launch call (unit unknown)")
    else:
        gx = np.where((grid == NULL) | (block == NULL), NULL, grid * block)
        provenance["grid_x"] = ("Kineto args.grid (blocks) x args.block (threads per block): "
                                "grid_* are work-items (threads), as everywhere in hipscope")
    provenance["block_x"] = "Kineto args.block (threads per block)"
    return gx, block


def _launcher_cols(g: SimpleNamespace, a: SimpleNamespace) -> dict[str, Any]:
    """api_index, pid and tid of GPU events, from their launching call."""
    linked, li = g.api >= 0, np.maximum(g.api, 0)
    return {
        "api_index": opt_array(np.where(linked, g.api, NULL), 0, _I31),
        "pid": opt_array(np.where(linked, a.pid[li] if a.n else NULL, NULL), 0, _I31),
        "tid": opt_array(np.where(linked, a.tid[li] if a.n else NULL, NULL), 0, _I62),
    }


def _kernel_table(path: Path, k: SimpleNamespace, a: SimpleNamespace, vendor: str | None,
                  ctx: SimpleNamespace):
    provenance, warnings = ctx.provenance, ctx.warnings
    gx, block = _grid(k, a, vendor, provenance)
    kc = k.cols
    k_cols: dict[str, Any] = {
        "name": categorical(*codes_of(k.sub, "name")),
        "device": k.dev,
        "start": k.start,
        "end": k.end,
        "stream": opt_array(k.stream, -(1 << 31), _I31),
        "correlation_id": opt_array(k.corr, -(1 << 63) + 1, _I63),
        **_launcher_cols(k, a),
        "grid_x": opt_array(gx[:, 0], 0, _I31),
        "grid_y": opt_array(gx[:, 1], 0, _I31),
        "grid_z": opt_array(gx[:, 2], 0, _I31),
        "block_x": opt_array(block[:, 0], 0, 32767),
        "block_y": opt_array(block[:, 1], 0, 32767),
        "block_z": opt_array(block[:, 2], 0, 32767),
        "registers": opt_array(kc["registers"], 0, 32767),
        "lds_bytes": opt_array(kc["shared"], 0, _I31),
        **kernel_comm_fields(k.args, provenance),
    }
    if kc["shared"].size and (kc["shared"] != NULL).any():
        provenance["lds_bytes"] = ("NVIDIA Kineto args['shared memory'] = static + dynamic "
                                   "shared memory per block")
    if kc["registers"].size and (kc["registers"] != NULL).any():
        provenance["registers"] = "Kineto args['registers per thread']"
    if vendor == "AMD" and a.n:
        dyn = np.where(k.api >= 0, a.cols["shared"][np.maximum(k.api, 0)], NULL)
        k_cols["dyn_lds_bytes"] = opt_array(dyn, 0, _I31)
        provenance["dyn_lds_bytes"] = ("the launching HIP call's args['shared memory'] "
                                       "(dynamic LDS requested at launch)")
    overflow = ((gx != NULL) & (gx > _I31)).any(axis=1)
    if overflow.any():
        warnings.append(f"{path}: {int(overflow.sum()):,} kernels have a grid over 2^31 "
                        "work-items in one dimension; stored as null")
    keep = k.ok & (k.dev != NULL)
    n_bad = int((~keep).sum())
    if n_bad:
        ctx.dropped["kernels without ts or device"] = n_bad
        warnings.append(f"{path}: {n_bad:,} kernel events without a timestamp or device "
                        "were skipped")
    return filtered_table("kernels", k_cols, keep, len(k.sub))


def _copy_direction(cat: Any, name: Any, kind: Any) -> str:
    if cat == "gpu_memset":
        return "memset"
    d = copy_direction(name, None)
    if d is None and isinstance(kind, str) and kind in _COPY_KINDS:
        d = kind
    return d if d in _COPY_KINDS else "other"


def _directions(c: SimpleNamespace) -> Any:
    """The direction column of the copies (once per distinct category, name, kind)."""
    if not isinstance(c.sub, ColSub):
        return name_column(list(map(_copy_direction, map(_CAT, c.sub), map(_NAME, c.sub),
                                    (x.kind for x in c.args))))
    ev, (kk, kv) = c.sub.ev, c.sub.arg("kind")
    key = np.stack([c.sub.ids("cat"), c.sub.ids("name"), kk, kv], axis=1).astype(np.int64)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    kinds = ev.py_values(uniq[:, 2].astype(np.uint8), uniq[:, 3])
    texts = [_copy_direction(ev.strings[a], ev.strings[b], k)
             for (a, b), k in zip(uniq[:, :2].tolist(), kinds)]
    ids = np.array([ev.string_id(t) for t in texts], np.int32)
    return categorical(*first_seen(ids[inv.reshape(-1)], ev.strings))


def _copy_table(c: SimpleNamespace, a: SimpleNamespace, provenance: dict[str, str]):
    cc = c.cols
    if a.n and len(c.sub):
        # AMD: the copy's bytes may only be on the runtime call (args.size)
        cli = np.maximum(c.api, 0)
        a_size, a_bytes = a.cols["size"], a.cols["bytes"]
        c_bytes = np.where(cc["bytes"] != NULL, cc["bytes"],
                           np.where(c.api >= 0, np.where(a_bytes[cli] != NULL, a_bytes[cli],
                                                         a_size[cli]), NULL))
        if ((cc["bytes"] == NULL) & (c_bytes != NULL)).any():
            provenance["bytes"] = ("GPU event args.bytes, else the runtime call's "
                                   "args.size/args.bytes")
    else:
        c_bytes = cc["bytes"]
    c_cols: dict[str, Any] = {
        "direction": _directions(c),
        "start": c.start,
        "end": c.end,
        "name": categorical(*codes_of(c.sub, "name")),
        "bytes": opt_array(c_bytes, 0, _I62),
        "device": opt_array(c.dev, 0, 32767),
        "stream": opt_array(c.stream, -(1 << 31), _I31),
        "correlation_id": opt_array(c.corr, -(1 << 63) + 1, _I63),
        **_launcher_cols(c, a),
    }
    return filtered_table("copies", c_cols, c.ok, len(c.sub))


def _api_table(path: Path, a: SimpleNamespace, kernels, copies, ctx: SimpleNamespace):
    a_cols_t: dict[str, Any] = {
        "name": categorical(a.name_codes, a.name_cats),
        "domain": categorical(a.dom_codes, a.dom),
        "start": a.start,
        "end": a.end,
        "pid": opt_array(a.pid, 0, _I31),
        "tid": opt_array(a.tid, 0, _I62),
        "correlation_id": opt_array(a.corr, -(1 << 63) + 1, _I63),
        "stream": opt_array(a.stream, 0, _I31),
        "device": opt_array(a.dev, 0, 32767),
    }
    api = build_table("api", a_cols_t, n=a.n)
    if not a.ok.all():
        # calls without ts cannot be placed in time: drop them, renumber the links
        n_bad = int((~a.ok).sum())
        ctx.warnings.append(f"{path}: {n_bad:,} runtime calls without a timestamp were skipped")
        ctx.dropped["api calls without ts"] = n_bad
        api, kernels, copies = drop_api_rows(api, a.ok, kernels, copies)
    ctx.provenance["api.stream"] = ("args.stream; HIP calls print the stream as a hex "
                                    "handle which is kept only when it fits (the null "
                                    "stream 0x0)")
    return api, kernels, copies


def _correlate(ev: _Events, base: int, k, c, a, provenance: dict[str, str]) -> None:
    """Fill missing correlation ids from ac2g flows (in place)."""
    if (k.corr == NULL).any() or (c.corr == NULL).any() or \
            (a.corr == NULL).any():
        corr_from_flows(ev.select(("ac2g",), phase=None), base,
                         (k.sub, k.start, k.pid, k.tid, k.corr),
                         (c.sub, c.start, c.pid, c.tid, c.corr),
                         (a.sub, a.start, a.pid, a.tid, a.corr))
        provenance["correlation_id"] = ("args.correlation; where absent, the id of the ac2g "
                                        "flow (ph s at the runtime call, ph f at the GPU event)")
    else:
        provenance["correlation_id"] = "args.correlation"


def _diagnose(path: Path, ev: _Events | ColEvents, n_kernels: int, n_calls: int, props: list,
              proc_labels: dict[int, str], ctx: SimpleNamespace) -> None:
    """Say which category spellings were read, and warn when a trace with GPUs or
    runtime calls gave no kernel (a category spelling hipscope does not know?)."""
    if ev.renamed:
        ctx.provenance["categories"] = ("older Kineto spellings read as today's: " + ", ".join(
            f"{old} -> {new}" for old, new in sorted(ev.renamed.items())))
    n_gpus = sum(1 for lab in proc_labels.values() if lab.startswith("GPU"))
    if n_kernels or not (n_calls or props or n_gpus):
        return
    known = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver",
             "cuda_sync", "ac2g", "Trace", "", *HOST_MARKER_CATS, *GPU_MARKER_CATS}
    other = sorted(str(c) for c in ev.cat_index if c not in known)
    ctx.warnings.append(
        f"{path}: no GPU kernels were read although the trace has {n_calls:,} runtime "
        f"calls and {max(len(props), n_gpus)} GPU devices"
        + (f"; categories not read: {', '.join(other[:10])}" if other else ""))


def _names_by_device(k: SimpleNamespace) -> dict[int, set[str]]:
    """Distinct kernel names per Kineto GPU id."""
    out: dict[int, set[str]] = {}
    if isinstance(k.sub, ColSub):
        pairs = np.unique(np.stack([k.dev_raw, k.sub.ids("name")]), axis=1)
        for d, i in pairs.T.tolist():
            out.setdefault(d, set()).add(k.sub.ev.strings[i])
        return out
    for e, d in zip(k.sub, k.dev_raw.tolist()):
        if isinstance(e.name, str):
            out.setdefault(d, set()).add(e.name)
    return out


def _base_ns(path: Path, top: Top, warnings: list[str]) -> int:
    """baseTimeNanoseconds as int; a base that is negative or past 2^62 ns (it would
    overflow int64 once ts is added) is ignored with a warning."""
    base = top.baseTimeNanoseconds
    if isinstance(base, float) and abs(base) < float(LIMIT_NS):
        base = int(base)
    elif isinstance(base, float) and base == base:
        base = int(np.sign(base)) * LIMIT_NS * 2      # past the limit: warned below
    if not isinstance(base, int) or isinstance(base, bool):
        base = 0
    if not 0 <= base <= LIMIT_NS:
        warnings.append(f"{path}: baseTimeNanoseconds {top.baseTimeNanoseconds!r} is not a "
                        "time in 0..2^62 ns; ignored it (times are ts as written, from the "
                        "trace's own zero)")
        base = 0
    return base


def build(path: Path, top: Top, warnings: list[str], dropped: dict[str, int],
          progress, cancelled, events: ColEvents | None = None) -> Trace:
    """The trace of a decoded Kineto file (its events from ``top``, or the scanner's
    ``events``)."""
    base = _base_ns(path, top, warnings)
    ctx = SimpleNamespace(provenance={}, warnings=warnings, dropped=dropped)
    ev = _Events(top) if events is None else events
    proc_labels, thread_names = _process_names(ev)
    check_cancel(cancelled)
    props = top.deviceProperties if isinstance(top.deviceProperties, list) else []
    props = [p for p in props if isinstance(p, dict)]
    a_sub = ev.select(("cuda_runtime", "cuda_driver"))
    vendor = vendor_of(top, props, a_sub)
    a = _api_side(a_sub, base, vendor)
    check_cancel(cancelled)
    k_sub = ev.select(("kernel",))
    c_sub = ev.select(("gpu_memcpy", "gpu_memset"))
    progress(0.7)
    check_cancel(cancelled)
    k = _gpu_side(k_sub, base, ("correlation", "device", "stream", "registers", "shared"))
    c = _gpu_side(c_sub, base, ("correlation", "device", "stream", "bytes"))
    # GPU-side syncs sit on their device's row (pid = device, tid = stream)
    s = _gpu_side(ev.select(("cuda_sync",)), base, ("correlation", "device", "stream"))
    ga = gpu_annotation_side(ev.select(GPU_MARKER_CATS), base, [k, c])
    _correlate(ev, base, k, c, a, ctx.provenance)
    # ---- devices
    used = np.unique(np.concatenate([
        k.dev_raw[k.dev_raw != NULL], c.dev_raw[c.dev_raw != NULL],
        ga.dev_raw[ga.dev_raw != NULL], s.dev_raw[s.dev_raw != NULL]]).astype(np.int64))
    used = used[(used >= 0) & (used < 32768)]
    dev_map, devices, idle = device_table(top, props, used, vendor, ctx.provenance, warnings,
                                      lambda: _names_by_device(k))
    map_dev = _device_mapper(dev_map)
    k.dev, c.dev, ga.dev, s.dev = (map_dev(k.dev_raw), map_dev(c.dev_raw), map_dev(ga.dev_raw),
                                   map_dev(s.dev_raw))
    a.dev = np.full(a.n, NULL, np.int64)
    # ---- links
    link = _linker(a)
    k.api, c.api = link(k.corr), link(c.corr)
    n_unlinked = int((k.api < 0).sum())
    if len(k.sub) and a.n and n_unlinked:
        warnings.append(f"{path}: {n_unlinked:,} of {len(k.sub):,} kernels have no runtime "
                        "call with the same correlation id (the call was outside the "
                        "profiling window or not recorded)")
    check_cancel(cancelled)
    kernels = _kernel_table(path, k, a, vendor, ctx)
    copies = _copy_table(c, a, ctx.provenance)
    api, kernels, copies = _api_table(path, a, kernels, copies, ctx)
    progress(0.8)
    check_cancel(cancelled)
    markers = marker_table(ev.select(HOST_MARKER_CATS), base, ga, s, ctx.provenance)
    progress(0.9)
    streams = stream_table(np.concatenate([k.dev, c.dev]), np.concatenate([k.stream, c.stream]),
                       np.concatenate([k.dev_raw, c.dev_raw]), thread_names)
    _diagnose(path, ev, len(k.sub), a.n, props, proc_labels, ctx)
    meta = trace_meta(path, top, base, vendor, a.pid, proc_labels, warnings, dropped,
                 ctx.provenance, ev.n)
    if idle:
        meta["devices_without_events"] = idle
    progress(1.0)
    return Trace(kernels=kernels, api=api, copies=copies, markers=markers, devices=devices,
                 streams=streams, meta=meta)
