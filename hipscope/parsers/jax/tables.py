"""The hipscope trace of a decoded JAX / XLA trace-viewer JSON."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ...model import SPECS, Trace, build_table
from ...model.table import from_numpy, string_array, to_numpy, valid_mask
from ...model.trace import link_by_correlation
from .._common import add_count, devices_table, finish_meta, group_key, nesting_depth, new_meta
from ..base import TraceFormatError, check_cancel
from . import vector
from .collect import DEVICE_RE, Collected, Router, Rows, names, times
from .decode import Top
from .folder import host_of

CLOCK = "JAX/XLA profiler session (ns from the start of jax.profiler tracing)"
PROVENANCE = {
    "start": "ts (µs from the session start) x 1000, rounded to the ns",
    "end": "start + dur x 1000", "pid": "the trace viewer's process id (701 = /host:CPU, "
    "N+1 = /device:*:N), not an OS pid", "tid": "the XLine id of the thread",
    "correlation_id": "args.correlation_id (CUPTI/roctracer)"}
_BITS = {pa.int16(): 15, pa.int32(): 31, pa.int64(): 63}


def _table(name: str, cols: dict[str, list], n: int, counts: dict[str, int]):
    """``build_table`` with integers that do not fit their column made null (counted:
    a damaged value must not refuse the whole file; the lists in ``cols`` are nulled
    too, as later steps read them). Lists go to Arrow in one call each."""
    spec = SPECS[name]
    arrays: dict[str, object] = dict(cols)
    for c, vals in cols.items():
        t = spec.by_name[c].type if c in spec.by_name else None
        if t is None or not isinstance(vals, list):
            continue
        if pa.types.is_string(t) or pa.types.is_dictionary(t):
            arrays[c] = _arrow(vals, pa.string()) or vals
            continue
        bits = _BITS.get(t)
        if bits is None:
            continue
        arr = _arrow(vals, pa.int64())
        if arr is not None and c not in spec.required:
            v, ok = to_numpy(arr, 0), valid_mask(arr)
            if (ok & ((v < -(1 << bits)) | (v > (1 << bits) - 1))).any():
                arr = None
        if arr is None:
            cols[c] = arrays[c] = _fit_list(name, c, vals, bits, spec, counts)
        else:
            arrays[c] = arr
    return build_table(name, arrays, n=n)


_BIG = 50_000  # values from which pa.array's speed pays for the pandas import it makes


def _arrow(vals: list, type_: pa.DataType) -> pa.Array | None:
    """``vals`` (str or int, and None) as an Arrow array of ``type_`` (string or int64);
    None: values of other types. Short lists without pyarrow's conversions: they import
    pandas (~0.3 s once), which only long ones (C speed: 5x) pay back."""
    if len(vals) >= _BIG or "pandas" in sys.modules:
        try:
            return pa.array(vals, type=type_)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return None
    if pa.types.is_string(type_):
        return string_array(vals)
    if not all(v is None or type(v) is int for v in vals):
        return None
    try:
        arr = np.array([0 if v is None else v for v in vals], np.int64)
    except OverflowError:
        return None
    return from_numpy(arr, np.fromiter((v is None for v in vals), bool, len(vals)))


def _fit_list(name: str, c: str, vals: list, bits: int, spec, counts: dict[str, int]):
    """The values of a list that do not fit ``bits`` made null (counted)."""
    if c in spec.required:
        return vals
    lo, hi = -(1 << bits), (1 << bits) - 1
    bad = sum(1 for v in vals if v is not None and not lo <= v <= hi)
    if not bad:
        return vals
    add_count(counts, f"{name}.{c} values", bad)
    return [v if v is None or lo <= v <= hi else None for v in vals]


def _device_processes(out: Collected) -> dict[int, int]:
    """Device pid -> hipscope device index (the ordinal of ``/device:GPU:N``; numbered
    in order when two kinds of device would collide)."""
    found = []
    for pid, pname in out.process_names.items():
        m = DEVICE_RE.match(pname)
        if m:
            found.append((m.group(1), int(m.group(2)), pid))
    found.sort()
    ords = [o for _k, o, _p in found]
    clash = len(set(ords)) != len(ords) or any(o > 32767 for o in ords)
    index = {}
    for i, (kind, ordinal, pid) in enumerate(found):
        index[pid] = i if clash else ordinal
        out.devices[pid] = (kind, out.process_names[pid], index[pid])
    return index


def collect(top: Top, cancelled) -> Collected:
    """The events routed to their tables: a column at a time (:mod:`.vector`), else
    (declined, or ``HIPSCOPE_JAX_ROWS=1``) one event at a time."""
    out = Collected()
    evs = top.traceEvents
    out.process_names, out.thread_names = names(evs)
    router = Router(out, _device_processes(out))
    if vector.enabled() and vector.collect_columns(evs, out, router,
                                                   lambda: check_cancel(cancelled)):
        return out
    for i, e in enumerate(evs):
        if e.ph != "X":
            if e.ph != "M" and (e.ph or e.name):     # the closing {} is no event
                add_count(out.skipped, f"ph {e.ph!r} events")
            continue
        if not i % 200_000:
            check_cancel(cancelled)
        se = times(e)
        if se is None:
            add_count(out.skipped, "events without a numeric ts/dur")
            continue
        out.n_events += 1
        router.route(e, *se)
    return out


def _kernel_table(k: Rows, vendor: str | None, provenance: dict[str, str],
                  counts: dict[str, int]):
    cols = {c: v for c, v in k.cols.items() if c not in ("grid", "hlo_op", "hlo_module")}
    grids = k.cols.get("grid", [])
    blocks = [k.cols.get(f"block_{a}", [None] * k.n) for a in "xyz"]
    for j, axis in enumerate("xyz"):
        vals = []
        for g, b in zip(grids, blocks[j]):
            ok = vendor == "NVIDIA" and g[j] is not None and b is not None
            vals.append(g[j] * b if ok and g[j] * b < 2**31 else None)
        cols[f"grid_{axis}"] = vals
    provenance["grid_x"] = ("args.kernel_details grid (blocks) x block (threads per block) "
                            "for CUPTI traces; null for other vendors (unit not documented)")
    provenance["registers"] = "args.kernel_details regs"
    provenance["lds_bytes"] = "args.kernel_details static_shared"
    provenance["dyn_lds_bytes"] = "args.kernel_details dynamic_shared"
    return _table("kernels", cols, k.n, counts)


def _xla_op_markers(out: Collected, provenance: dict[str, str]) -> None:
    """Kernels name their XLA op (``args.hlo_op``): where a device has no ``XLA Ops``
    line, each such kernel's interval becomes an ``xla_op`` marker on its device."""
    m = out.markers.cols
    have = {d for d, dom in zip(m.get("device", []), m.get("domain", []))
            if dom == "xla_op" and d is not None}
    k = out.kernels.cols
    added = 0
    for i in range(out.kernels.n):
        op, dev = k["hlo_op"][i], k["device"][i]
        if op and dev not in have:
            out.markers.add(op, "xla_op", k["start"][i], k["end"][i], None, None, dev,
                            k["stream"][i])
            added += 1
    if added:
        provenance["markers.xla_op"] = ("the 'XLA Ops' line of each device; where a device "
                                        "has none, each kernel's args.hlo_op")


def _marker_table(mk: Rows, counts: dict[str, int]):
    if not mk.n:
        return build_table("markers", {}, n=0)
    start = np.asarray(mk.cols["start"], np.int64)
    end = np.asarray(mk.cols["end"], np.int64)
    # one nesting group per host thread and per device (None as -1)
    cols = [_arrow(mk.cols[c], pa.int64()) for c in ("device", "pid", "tid")]
    if all(c is not None for c in cols):
        group = group_key(*(to_numpy(c, -1) for c in cols))
    else:
        keys: dict[tuple, int] = {}
        group = np.fromiter((keys.setdefault(k, len(keys)) for k in zip(*(
            [-1 if v is None else v for v in mk.cols[c]] for c in ("device", "pid", "tid")))),
            np.int64, mk.n)
    depth = nesting_depth(start, end, group)
    return _table("markers", {**mk.cols, "depth": depth}, mk.n, counts)


def _vendor(out: Collected) -> str | None:
    domains = set(out.api.cols.get("domain", []))
    if domains & {"cuda_driver", "cuda_runtime"}:
        return "NVIDIA"
    if domains & {"HIP_RUNTIME_API", "HSA_CORE_API"}:
        return "AMD"
    return None


def _devices(out: Collected, vendor: str | None, host: str | None):
    used = set()
    for rows in (out.kernels, out.copies, out.markers, out.api):
        used |= {d for d in rows.cols.get("device", []) if d is not None}
    rows = []
    for pid, (kind, pname, idx) in sorted(out.devices.items(), key=lambda x: x[1][2]):
        if idx in used:
            rows.append({"index": idx, "name": pname, "raw_id": f"{pname} (pid {pid})",
                         "vendor": vendor if kind == "GPU" else None, "host": host})
    return devices_table(rows), [r["name"] for r in rows]


def _link(out: Collected, path: Path, warnings: list[str]) -> None:
    """api_index, pid and tid of kernels and copies from their launching call."""
    a = out.api.cols
    a_corr = np.asarray([-1 if c is None else c for c in a.get("correlation_id", [])],
                        np.int64)
    for rows in (out.kernels, out.copies):
        if not rows.n:
            continue
        corr = np.asarray([-2 if c is None else c for c in rows.cols["correlation_id"]],
                          np.int64)
        idx = link_by_correlation(corr, None, a_corr, None)
        rows.cols["api_index"] = [None if i < 0 else int(i) for i in idx]
        rows.cols["pid"] = [None if i < 0 else a["pid"][i] for i in idx]
        rows.cols["tid"] = [None if i < 0 else a["tid"][i] for i in idx]
    n_k = out.kernels.n
    unlinked = sum(1 for i in out.kernels.cols.get("api_index", []) if i is None)
    if n_k and out.api.n and unlinked:
        warnings.append(f"{path}: {unlinked:,} of {n_k:,} kernels have no launch call with "
                        "the same correlation_id (outside the profiling window or not "
                        "recorded)")


def _streams(out: Collected):
    pairs = sorted({(d, s) for rows in (out.kernels, out.copies)
                    for d, s in zip(rows.cols["device"], rows.cols["stream"]) if s is not None})
    names_by = {}
    for (pid, tid), tname in out.thread_names.items():
        if pid in out.devices:
            names_by[(out.devices[pid][2], tid)] = tname
    return build_table("streams", {
        "stream": [s for _d, s in pairs], "device": [d for d, _s in pairs],
        "raw_id": [str(s) for _d, s in pairs],
        "name": [names_by.get(p) or f"Stream #{p[1]}" for p in pairs]}, n=len(pairs))


def _warn_empty(out: Collected, path: Path, warnings: list[str]) -> None:
    kinds = sorted({k for k, _n, _i in out.devices.values()})
    if out.kernels.n:
        return
    if not kinds:
        warnings.append(f"{path}: the profiler recorded no kernels: the trace has no "
                        "/device: process (a CPU-only JAX run); only host events were read")
    elif "GPU" not in kinds:
        warnings.append(f"{path}: the profiler recorded no GPU kernels: devices "
                        f"{', '.join(kinds)} have no stream lines; their XLA ops were read "
                        "as device markers")
    else:
        warnings.append(f"{path}: the profiler recorded no kernels on the GPU stream lines")


def build(path: Path, top: Top, warnings: list[str], dropped: dict[str, int],
          progress, cancelled, fmt: str = "jax",
          tool: str = "JAX / XLA profiler (trace viewer JSON)") -> Trace:
    out = collect(top, cancelled)
    if not any(n.startswith(("/host:", "/device:")) for n in out.process_names.values()):
        raise TraceFormatError(path, "the process_name metadata of traceEvents",
                               "a JAX / XLA trace-viewer JSON (processes named /host:CPU, "
                               "/device:GPU:0, ...)", "no such process")
    progress(0.7)
    provenance: dict[str, Any] = dict(PROVENANCE)
    nulls: dict[str, int] = {}
    vendor = _vendor(out)
    _link(out, path, warnings)
    _xla_op_markers(out, provenance)
    host = host_of(path)
    devices, dev_names = _devices(out, vendor, host)
    kernels = _kernel_table(out.kernels, vendor, provenance, nulls)
    copies = _table("copies", out.copies.cols, out.copies.n, nulls)
    api = _table("api", out.api.cols, out.api.n, nulls)
    markers = _marker_table(out.markers, nulls)
    _warn_empty(out, path, warnings)
    for what, n in sorted(out.skipped.items()):
        warnings.append(f"{path}: skipped {n:,} {what}")
    for what, n in sorted(nulls.items()):
        warnings.append(f"{path}: {n:,} {what} do not fit their column; stored as null")
    meta = new_meta(fmt, [path], CLOCK, tool=tool,
                    vendor=vendor, events=out.n_events, device_planes=dev_names,
                    **({"host": host} if host else {}),
                    processes={str(p): n for p, n in sorted(out.process_names.items())},
                    threads={f"{p}/{t}": n for (p, t), n in sorted(out.thread_names.items())},
                    skipped=dict(out.skipped), provenance=provenance)
    progress(0.9)
    return Trace(kernels=kernels, copies=copies, api=api,
                 markers=markers, devices=devices,
                 streams=_streams(out), meta=finish_meta(meta, warnings, dropped))
