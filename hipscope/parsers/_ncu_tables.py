"""Nsight Compute CSV: cell parsing and the devices / kernel columns / process meta
built from the launches (shared by ncu_csv and _ncu_summary)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..model import build_table

I64_MAX = 2**63 - 1


def to_number(text: str | None) -> float | None:
    if text is None:
        return None
    s = text.strip().replace(",", "")
    if not s or s.lower() in ("n/a", "nan", "none"):
        return None
    try:
        return float(s)
    except ValueError:
        return None


def _dim3(text: str | None) -> tuple[int | None, int | None, int | None]:
    if not text:
        return None, None, None
    nums = re.findall(r"\d[\d,]*", text)
    vals = [int(x.replace(",", "")) for x in nums[:3]]
    while len(vals) < 3:
        vals.append(None)
    return vals[0], vals[1], vals[2]


def _int_in(v: float | None, hi: int) -> int | None:
    """``v`` as an int when 0 <= v <= hi (a count, a size), else None."""
    return int(v) if v is not None and 0 <= v <= hi else None


def _id_text(text: str, hi: int = 2**31 - 1) -> int | None:
    """A pid/stream cell as an int, None when not a plain integer that fits."""
    return int(text) if re.fullmatch(r"\d{1,19}", text, re.ASCII) and int(text) <= hi else None


def ncu_devices(ks: list[dict[str, Any]]):
    """The devices table and (Device, Host Name) -> device index."""
    dev_keys = sorted({(k["device"], k["host"]) for k in ks},
                      key=lambda x: (to_number(x[0]) or 0, x[0], x[1]))
    dmap = {key: i for i, key in enumerate(dev_keys)}
    drow: dict[str, list[Any]] = {c: [] for c in ("index", "name", "vendor", "arch",
                                                  "compute_units", "raw_id", "host",
                                                  "memory_bytes")}
    for key, i in dmap.items():
        sample = next(k for k in ks if (k["device"], k["host"]) == key)
        cc = sample.get("cc") or ""
        arch = "sm_" + cc.replace(".", "") if re.fullmatch(r"\d+\.\d+", cc) else None
        drow["index"].append(i)
        drow["name"].append(sample.get("device_name") or f"NVIDIA GPU {key[0]}")
        drow["vendor"].append("NVIDIA")
        drow["arch"].append(arch)
        drow["compute_units"].append(_int_in((sample.get("sms") or (None,))[0], 2**31 - 1))
        drow["raw_id"].append(key[0])
        drow["host"].append(key[1] or None)
        drow["memory_bytes"].append(_int_in((sample.get("memory") or (None,))[0], I64_MAX))
    return build_table("devices", drow, n=len(dev_keys)), dmap


def kernel_columns(ks, dmap, warnings: list[str], path: Path) -> dict[str, list[Any]]:
    kcols: dict[str, list[Any]] = {c: [] for c in (
        "name", "device", "pid", "stream", "dispatch_id", "grid_x", "grid_y", "grid_z",
        "block_x", "block_y", "block_z", "registers", "lds_bytes", "dyn_lds_bytes")}
    over = 0
    for k in ks:
        kcols["name"].append(k["name"])
        kcols["device"].append(dmap[(k["device"], k["host"])])
        kcols["pid"].append(_id_text(k["pid"]))
        kcols["stream"].append(_id_text(k["stream"]))
        kcols["dispatch_id"].append(k["id"])
        for ax, bv, gv in zip("xyz", _dim3(k["block"]), _dim3(k["grid"])):
            kcols[f"block_{ax}"].append(bv if bv is not None and bv < 2**15 else None)
            items = gv * bv if gv is not None and bv is not None else None
            if items is not None and items >= 2**31:
                over += 1
                items = None
            kcols[f"grid_{ax}"].append(items)
        for key, dst, limit in (("registers", "registers", 2**15 - 1),
                                ("lds", "lds_bytes", 2**31 - 1),
                                ("dyn_lds", "dyn_lds_bytes", 2**31 - 1)):
            kcols[dst].append(_int_in((k.get(key) or (None,))[0], limit))
    if over:
        warnings.append(f"{path}: {over} grid sizes exceed 2**31 work-items; left null")
    return kcols


def process_meta(meta: dict[str, Any], ks: list[dict[str, Any]], kcols) -> None:
    """The kernels' process ids, host and process names into ``meta``."""
    set_process_meta(meta, (p for p in kcols["pid"] if p is not None), ks)


def set_process_meta(meta: dict[str, Any], pids, rows: list[dict[str, Any]]) -> None:
    """``meta["pids"]`` (sorted), ``meta["host"]`` (when every row names the same one)
    and ``meta["process_names"]`` from ``pids`` and the rows' ``host``/``process``."""
    if pids := sorted(set(pids)):
        meta["pids"] = pids
    hosts = sorted({r["host"] for r in rows if r["host"]})
    if len(hosts) == 1:
        meta["host"] = hosts[0]
    if procs := sorted({r["process"] for r in rows if r["process"]}):
        meta["process_names"] = procs
