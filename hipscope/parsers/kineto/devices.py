"""Kineto devices (deviceProperties matched to the GPU ids the events use), streams
and meta."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ...model import build_table
from .._common import finish_meta, group_key, new_meta, rows_to_columns
from .columns import NULL, list_table
from .decode import Top

__all__ = ["device_table", "stream_table", "trace_meta", "vendor_of"]

_AMD_ARCH = (("MI355", "gfx950"), ("MI350", "gfx950"), ("MI325", "gfx942"),
             ("MI300", "gfx942"), ("MI250", "gfx90a"), ("MI210", "gfx90a"),
             ("MI200", "gfx90a"), ("MI100", "gfx908"), ("MI50", "gfx906"),
             ("MI60", "gfx906"))


def _human_hip(v: Any) -> str | None:
    """70226015 -> '7.2' (HIP_VERSION = major*10^7 + minor*10^5 + patch)."""
    if not isinstance(v, int) or v <= 0:
        return None
    return f"{v // 10_000_000}.{(v // 100_000) % 100}"


def _human_cuda(v: Any) -> str | None:
    """12040 -> '12.4' (CUDA_VERSION = major*1000 + minor*10)."""
    if not isinstance(v, int) or v <= 0:
        return None
    return f"{v // 1000}.{(v % 1000) // 10}"


def vendor_of(top: Top, props: list[dict], calls: list = ()) -> str | None:
    """AMD or NVIDIA from the runtime versions, else deviceProperties, else the runtime
    calls' names (cudaLaunchKernel / hipLaunchKernel: old traces record nothing else)."""
    if top.hip_runtime_version is not None or top.roctracer_version is not None \
            or top.hip_driver_version is not None:
        return "AMD"
    if top.cuda_runtime_version is not None or top.cupti_version is not None \
            or top.cuda_driver_version is not None:
        return "NVIDIA"
    for p in props:
        name = str(p.get("name", ""))
        if p.get("warpSize") == 64 or any(w in name for w in ("AMD", "Instinct", "Radeon", "gfx")):
            return "AMD"
        if "NVIDIA" in name or p.get("warpSize") == 32:
            return "NVIDIA"
    for e in calls[:1000]:
        name = e.name if isinstance(e.name, str) else ""
        if name.startswith(("hip", "hsa")):
            return "AMD"
        if name.startswith("cu"):
            return "NVIDIA"
    return None


def device_table(top: Top, props: list[dict], used: np.ndarray, vendor: str | None,
             provenance: dict[str, str], warnings: list[str],
             arch_hints: Callable[[], dict[int, set[str]]]):
    """Map Kineto GPU ids (kernel args.device / GPU pid) to device indices; returns the
    map, the devices with events and the deviceProperties rows of the others.
    ``arch_hints()``: kernel names per Kineto GPU id (asked only when an AMD device
    has no arch)."""
    prop_ids, dev_map, raw_of, mismatch = _device_map(props, used, vendor, provenance,
                                                      warnings)
    rows = []
    known = set()
    for p, did in zip(props, prop_ids):
        if did in known or not (0 <= did < 32768):
            continue
        known.add(did)
        rows.append(_prop_row(p, did, vendor, raw_of.get(did, None if mismatch else str(did))))
    for u, d in dev_map.items():
        if d not in known and 0 <= d < 32768:
            known.add(d)
            rows.append({"index": d, "name": f"GPU {d}", "vendor": vendor, "arch": None,
                         "compute_units": None, "raw_id": str(u), "memory_bytes": None})
    if vendor == "AMD":
        provenance["devices.arch"] = "from the product name, or a gfx id in deviceProperties"
    rows.sort(key=lambda r: r["index"])
    # only GPUs with events are devices; the node's others stay in meta
    with_events = set(dev_map.values())
    idle = [r for r in rows if r["index"] not in with_events]
    rows = [r for r in rows if r["index"] in with_events]
    if any(r["arch"] is None and r["vendor"] in ("AMD", None) for r in rows):
        hints = arch_hints()
        _arch_from_names(rows, {d: hints.get(u, set()) for u, d in dev_map.items()},
                         provenance)
    cols = rows_to_columns(rows, ("index", "name", "vendor", "arch", "compute_units", "raw_id",
                                  "memory_bytes"))
    return dev_map, list_table("devices", cols), idle


def _device_map(props: list[dict], used: np.ndarray, vendor: str | None,
                provenance: dict[str, str], warnings: list[str]):
    """deviceProperties ids, Kineto GPU id -> device index, index -> raw id, and
    whether the ids had to be mapped (roctracer numbering)."""
    prop_ids = []
    for i, p in enumerate(props):
        pid = p.get("id", i)
        prop_ids.append(pid if isinstance(pid, int) and not isinstance(pid, bool) else i)
    used_l = [int(u) for u in used.tolist()]
    dev_map: dict[int, int] = {u: u for u in used_l}
    raw_of: dict[int, str] = {}
    ids_sorted = sorted(prop_ids)
    mismatch = bool(used_l) and bool(prop_ids) and (
        any(u not in prop_ids for u in used_l)
        or (vendor == "AMD" and min(used_l) > min(ids_sorted)))
    if mismatch and len(used_l) <= len(ids_sorted):
        dev_map = {u: ids_sorted[k] for k, u in enumerate(used_l)}
        provenance["device"] = (
            "Kineto GPU ids (kernel args.device / GPU pid) "
            f"{used_l} do not match deviceProperties ids {ids_sorted} (the roctracer "
            "backend numbers HSA agents counting CPU agents first): mapped in sorted order "
            f"onto deviceProperties ({', '.join(f'{u}->{d}' for u, d in dev_map.items())}); "
            "the Kineto id is kept in devices.raw_id")
        raw_of = {d: str(u) for u, d in dev_map.items()}
    else:
        provenance["device"] = "Kineto args.device (GPU pid when absent) = deviceProperties id"
        raw_of = {u: str(u) for u in used_l}
        if used_l and not prop_ids:
            warnings.append("the trace has no deviceProperties: devices are named by id only")
    return prop_ids, dev_map, raw_of, mismatch


def _prop_row(p: dict, did: int, vendor: str | None, raw_id: str | None) -> dict[str, Any]:
    """A devices row from one deviceProperties entry."""
    name = str(p.get("name") or "").strip() or f"GPU {did}"
    major, minor = p.get("computeMajor"), p.get("computeMinor")
    dvendor = vendor
    if dvendor is None:
        dvendor = "AMD" if p.get("warpSize") == 64 else ("NVIDIA" if "NVIDIA" in name else None)
    arch = None
    if dvendor == "NVIDIA" and isinstance(major, int) and isinstance(minor, int):
        arch = f"sm_{major}{minor}"
    elif dvendor == "AMD":
        for key, gfx in _AMD_ARCH:
            if key in name:
                arch = gfx
                break
        # a gfx id anywhere in the entry (name, gcnArchName "gfx942:sramecc+:xnack-")
        m = re.search(r"gfx[0-9a-f]+", " ".join(str(v) for v in p.values()))
        if m:
            arch = m.group()
    sms, mem = p.get("numSms"), p.get("totalGlobalMem")
    return {"index": did, "name": name, "vendor": dvendor, "arch": arch,
            "compute_units": sms if isinstance(sms, int) and 0 < sms < 1 << 31 else None,
            "raw_id": raw_id,
            "memory_bytes": mem if isinstance(mem, int) and 0 <= mem < 1 << 62 else None}


# gfx ids in AMD kernel names: "..._gfx942" (Triton, hipcc), Tensile's "_ISA942_"
_GFX_IN_NAME = re.compile(r"gfx(9[0-9][0-9a-f]|1[0-2][0-9][0-9a-f])(?![0-9a-f])"
                          r"|_ISA(9[0-9][0-9a-f]|1[0-2][0-9][0-9a-f])_")


def _arch_from_names(rows: list[dict], names: dict[int, set[str]],
                     provenance: dict[str, str]) -> None:
    """AMD devices without an arch: the one gfx id their kernels' names carry."""
    for r in rows:
        if r["arch"] is not None or r["vendor"] not in ("AMD", None):
            continue
        found = set()
        for name in names.get(r["index"], ()):
            for m in _GFX_IN_NAME.finditer(name):
                found.add("gfx" + (m.group(1) or m.group(2)))
        if len(found) == 1:
            r["arch"] = found.pop()
            r["vendor"] = "AMD"
            provenance["devices.arch"] = ("from the product name or deviceProperties, else "
                                          "the one gfx id in its kernels' names")


def stream_table(dev: np.ndarray, stream: np.ndarray, raw_dev: np.ndarray,
             thread_names: dict[tuple[int, int], str]):
    ok = (dev != NULL) & (stream != NULL) & (np.abs(stream) < (1 << 31))
    if not ok.any():
        return build_table("streams", {}, n=0)
    dev, stream, raw_dev = dev[ok], stream[ok], raw_dev[ok]
    _g, first = np.unique(group_key(dev, stream, raw_dev), return_index=True)
    pairs = sorted(zip(dev[first].tolist(), stream[first].tolist(), raw_dev[first].tolist()))
    cols: dict[str, list] = {"stream": [], "device": [], "raw_id": [], "name": []}
    for d, s, r in pairs:
        cols["stream"].append(s)
        cols["device"].append(d)
        cols["raw_id"].append(str(s))
        cols["name"].append(thread_names.get((r, s)) or f"stream {s}")
    return list_table("streams", cols)


def trace_meta(path: Path, top: Top, base: int, vendor: str | None, host_pids: np.ndarray,
          proc_labels: dict[int, str], warnings: list[str], dropped: dict[str, int],
          provenance: dict[str, str], n_events: int) -> dict[str, Any]:
    def scalar(v: Any) -> Any:
        return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)

    meta = new_meta("kineto", [path], "unix epoch (Kineto)", tool="PyTorch profiler (Kineto)",
                    schemaVersion=scalar(top.schemaVersion), vendor=vendor, events=n_events)
    if base:
        meta["baseTimeNanoseconds"] = base
        provenance["start"] = "baseTimeNanoseconds + ts (µs, relative) x 1000"
    else:
        provenance["start"] = "ts (absolute epoch µs) x 1000"
    provenance.setdefault("end", "start + dur x 1000")
    for key in ("cupti_version", "cuda_runtime_version", "cuda_driver_version",
                "roctracer_version", "hip_runtime_version", "hip_driver_version",
                "traceName", "trace_id", "displayTimeUnit"):
        v = getattr(top, key)
        if v is not None:
            meta[key] = scalar(v)
    if _human_cuda(top.cuda_runtime_version):
        meta["cuda_version"] = _human_cuda(top.cuda_runtime_version)
    if _human_cuda(top.cuda_driver_version):
        meta["driver_version"] = _human_cuda(top.cuda_driver_version)
    if _human_hip(top.hip_runtime_version):
        meta["hip_version"] = _human_hip(top.hip_runtime_version)
    if _human_hip(top.hip_driver_version):
        meta.setdefault("driver_version", _human_hip(top.hip_driver_version))
    di = top.distributedInfo
    if isinstance(di, dict):
        meta["distributedInfo"] = msgspec.json.decode(msgspec.json.encode(di))
        for k in ("rank", "world_size", "backend"):
            if k in di:
                meta[k] = scalar(di[k])
    pids = sorted({int(p) for p in np.unique(host_pids).tolist() if p != NULL and p >= 0}
                  | {p for p, lab in proc_labels.items() if lab == "CPU" and p >= 0})
    meta["pids"] = pids
    meta["provenance"] = provenance
    return finish_meta(meta, warnings, dropped)
