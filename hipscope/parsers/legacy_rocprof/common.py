"""Shared parts of the legacy rocprof readers: rocminfo (sysinfo.txt / JSON otherData),
devices and queues from gpu-ids, side files, meta."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...model import build_table
from .._common import finish_meta, new_meta, number_per_device

CLOCK = "HSA system clock"
NO_CLOCK = "none (no timestamps in file)"
TOOL = "rocprof (v1)"


# --------------------------------------------------------------------------- rocminfo

def parse_rocminfo(text: str) -> dict[str, Any]:
    """Agents (by KFD node id) and system attributes from a rocminfo dump."""
    out: dict[str, Any] = {"agents": {}}
    m = re.search(r"^Runtime Version:\s*(\S+)", text, re.M)
    if m:
        out["hsa_runtime_version"] = m.group(1)
    m = re.search(r"^Runtime Ext Version:\s*(\S+)", text, re.M)
    if m:
        out["hsa_runtime_ext_version"] = m.group(1)
    m = re.search(r"ROCk module version (\S+)", text)
    if m:
        out["driver_version"] = m.group(1)
    blocks = re.split(r"^\*+\s*\n(?=Agent \d+)", text, flags=re.M)
    for b in blocks:
        if not b.startswith("Agent "):
            continue
        fields: dict[str, str] = {}
        mem = None
        lines = b.splitlines()
        for i, line in enumerate(lines):
            mm = re.match(r"^  (\S[^:]*?):\s*(.*?)\s*$", line)
            if mm and mm.group(1) not in fields:
                fields[mm.group(1)] = mm.group(2)
            if mem is None and re.match(r"^\s+Segment:\s+GLOBAL", line) and i + 1 < len(lines):
                ms = re.match(r"^\s+Size:\s+(\d+)\S*\s*KB", lines[i + 1])
                if ms:
                    mem = int(ms.group(1)) * 1024
        _add_agent(out["agents"], fields.get("Node"), fields.get("Device Type"),
                   fields.get("Marketing Name"), fields.get("Name"),
                   fields.get("Compute Unit"), mem, fields.get("Uuid"))
    return out


def rocminfo_from_otherdata(other: dict[str, Any]) -> dict[str, Any]:
    """The same from a legacy JSON ``otherData`` (rocminfo keys with spaces stripped)."""
    out: dict[str, Any] = {"agents": {}}
    rv = other.get("HSASystemAttributes.RuntimeVersion")
    if isinstance(rv, str):
        out["hsa_runtime_version"] = rv
    agents: dict[str, dict[str, Any]] = {}
    for k, v in other.items():
        m = re.match(r"^Agent(\d+)\.(.*)$", k)
        if m:
            agents.setdefault(m.group(1), {}).setdefault(m.group(2), v)
    for fields in agents.values():
        mem = None
        for p in range(1, 16):
            seg = fields.get(f"PoolInfo.Pool{p}.Segment")
            if seg is None:
                break
            if str(seg).startswith("GLOBAL") and mem is None:
                ms = re.match(r"^(\d+)", str(fields.get(f"PoolInfo.Pool{p}.Size", "")))
                if ms:
                    mem = int(ms.group(1)) * 1024
        _add_agent(out["agents"], fields.get("Node"), fields.get("DeviceType"),
                   fields.get("MarketingName"), fields.get("Name"), fields.get("ComputeUnit"),
                   mem, fields.get("Uuid"))
    return out


def _add_agent(agents: dict[int, dict[str, Any]], node, dtype, marketing, name, cu, mem, uuid):
    try:
        node_i = int(str(node).split("(")[0])
    except (TypeError, ValueError):
        return
    arch = name if isinstance(name, str) and re.match(r"^gfx\w+$", name) else None
    try:
        cu_i = int(str(cu).split("(")[0])
    except (TypeError, ValueError):
        cu_i = None
    agents[node_i] = {"type": str(dtype or ""), "name": (marketing or name or None),
                      "arch": arch, "compute_units": cu_i, "memory_bytes": mem, "uuid": uuid}


def build_devices(raw_ids: Sequence[int], info: dict[str, Any] | None,
                  host: str | None = None) -> tuple[Any, dict[int, int]]:
    """Devices table for the gpu-ids seen (sorted → 0..n-1) and raw → index map."""
    agents = (info or {}).get("agents", {})
    ids = sorted(set(int(x) for x in raw_ids))
    rows: dict[str, list[Any]] = {k: [] for k in ("index", "name", "vendor", "arch",
                                                  "compute_units", "raw_id", "host",
                                                  "memory_bytes")}
    for i, rid in enumerate(ids):
        a = agents.get(rid)
        if a is not None and a.get("type", "").upper() != "GPU":
            a = None
        rows["index"].append(i)
        rows["name"].append((a or {}).get("name") or f"GPU {rid}")
        rows["vendor"].append("AMD")
        rows["arch"].append((a or {}).get("arch"))
        rows["compute_units"].append((a or {}).get("compute_units"))
        rows["raw_id"].append(str(rid))
        rows["host"].append(host)
        rows["memory_bytes"].append((a or {}).get("memory_bytes"))
    return build_table("devices", rows, n=len(ids)), {rid: i for i, rid in enumerate(ids)}


def map_ids(raw: np.ndarray, mapping: dict[int, int]) -> np.ndarray:
    keys = np.array(sorted(mapping), dtype=np.int64)
    vals = np.array([mapping[k] for k in keys], dtype=np.int64)
    pos = np.clip(np.searchsorted(keys, raw), 0, max(len(keys) - 1, 0))
    return vals[pos] if len(keys) else np.zeros(len(raw), dtype=np.int64)


def queues_for(device: np.ndarray, raw_queue: np.ndarray, valid: np.ndarray):
    """Small per-device queue ids for raw queue ids, and the queues table."""
    out, (u_dev, u_raw), small = number_per_device(device, raw_queue, valid=valid)
    rows = {"device": u_dev.tolist(), "queue": small.tolist(),
            "raw_id": [str(q) for q in u_raw.tolist()]}
    return out, build_table("queues", rows, n=len(rows["device"]))


_SIZE_RE = re.compile(r"(?:sizeBytes|size|count|ByteCount)\((\d+)\)")


def size_from_args(args: str | None) -> int | None:
    if not args:
        return None
    m = _SIZE_RE.search(args)
    return int(m.group(1)) if m else None


def strip_quotes(names: list[Any]) -> list[str]:
    out = []
    for n in names:
        s = "" if n is None else str(n)
        if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
            s = s[1:-1]
        out.append(s)
    return out


# --------------------------------------------------------------------------- side files

def side_info(path: Path, meta: dict[str, Any]) -> dict[str, Any] | None:
    """results.sysinfo.txt and input.txt beside a results.* file."""
    folder = path.parent
    info = None
    for cand in (folder / (path.stem + ".sysinfo.txt"), folder / "results.sysinfo.txt"):
        if cand.is_file():
            try:
                info = parse_rocminfo(cand.read_text(errors="replace"))
            except OSError:
                info = None
            if info is not None:
                meta["sources"].append(str(cand))
                for k in ("hsa_runtime_version", "hsa_runtime_ext_version", "driver_version"):
                    if info.get(k):
                        meta[k] = info[k]
            break
    inp = folder / "input.txt"
    if inp.is_file():
        try:
            lines = inp.read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        pmc = [ln.split(":", 1)[1].split() for ln in lines if ln.strip().startswith("pmc")]
        if pmc:
            meta["pmc"] = pmc
            meta["sources"].append(str(inp))
    return info


def legacy_meta(path: Path, fmt: str) -> dict[str, Any]:
    return new_meta(fmt, [path], CLOCK, tool=TOOL, warnings=[], provenance={})


def finish_legacy_meta(meta: dict[str, Any], dropped: dict[str, int]) -> dict[str, Any]:
    return finish_meta(meta, None, dropped, keep_empty_warnings=False)
