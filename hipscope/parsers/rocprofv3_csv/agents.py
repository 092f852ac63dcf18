"""rocprofv3 agents: agent_info.csv rows, agent texts ("4", "Agent 4", "GPU-0") resolved
to them, and the registry of GPU devices over every set."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from typing import Any

from ..base import TraceFormatError
from .columns import CsvFile, Load

_AGENT_NUM = re.compile(r"^\s*(?:agent\s*)?(-?\d+)\s*$", re.I)
_AGENT_TYPED = re.compile(r"^\s*(GPU|CPU)-(\d+)\s*$", re.I)


@dataclass
class AgentInfo:
    node_id: int | None
    logical: int | None
    type: str
    type_index: int | None
    name: str | None
    product: str | None
    cu: int | None
    vendor: str | None


def read_agent_info(f: CsvFile, load: Load) -> list[AgentInfo]:
    try:
        with open(f.path, newline="", encoding="utf-8", errors="replace") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, csv.Error) as exc:
        raise TraceFormatError(f.path, None, "a rocprofv3 agent_info CSV", str(exc)) from None

    def num(r: dict, k: str) -> int | None:
        v = (r.get(k) or "").strip()
        try:
            return int(v)
        except ValueError:
            return None

    out: list[AgentInfo] = []
    for r in rows:
        if None in r:   # torn / extra fields
            r = {k: v for k, v in r.items() if k is not None}
        t = (r.get("Agent_Type") or "").strip().upper()
        if not t:
            continue
        out.append(AgentInfo(
            num(r, "Node_Id"), num(r, "Logical_Node_Id"), t,
            num(r, "Logical_Node_Type_Id"),
            (r.get("Name") or "").strip() or None,
            (r.get("Product_Name") or r.get("Marketing_Name") or "").strip() or None,
            num(r, "Cu_Count"),
            (r.get("Vendor_Name") or "").strip() or None))
    for typ in {a.type for a in out}:
        same = sorted((a for a in out if a.type == typ),
                      key=lambda a: (a.logical if a.logical is not None else 1 << 30,
                                     a.node_id or 0))
        for i, a in enumerate(same):
            if a.type_index is None:
                a.type_index = i
    return out


def resolve(text: str, infos: list[AgentInfo]) -> AgentInfo | None:
    if not infos:
        return None
    m = _AGENT_TYPED.match(text)
    if m:
        typ, k = m.group(1).upper(), int(m.group(2))
        for a in infos:
            if a.type == typ and a.type_index == k:
                return a
        return None
    m = _AGENT_NUM.match(text)
    if not m:
        return None
    k = int(m.group(1))
    for a in infos:
        if a.logical == k:
            return a
    for a in infos:
        if a.node_id == k:
            return a
    return None


def _agent_sort_key(text: str) -> tuple[int, str]:
    m = _AGENT_NUM.match(text) or _AGENT_TYPED.match(text)
    return (int(m.groups()[-1]) if m else 1 << 30, text)


class Devices:
    """Registry of GPU devices over all sets: agent text -> device index."""

    def __init__(self) -> None:
        self.entries: dict[tuple, dict[str, Any]] = {}

    def add_info(self, host: str | None, a: AgentInfo, raw: str | None = None) -> tuple:
        key = (host or "", "node", a.node_id if a.node_id is not None else a.logical)
        e = self.entries.get(key)
        if e is None:
            e = {"name": a.product or a.name or f"GPU (node {a.node_id})",
                 "vendor": _vendor(a.vendor), "arch": a.name if (a.name or "").startswith(
                     "gfx") else None,
                 "compute_units": a.cu, "raw_id": raw, "host": host,
                 "order": (host or "", a.logical if a.logical is not None else 1 << 20,
                           a.node_id or 0, "")}
            self.entries[key] = e
        elif raw and not e["raw_id"]:
            e["raw_id"] = raw
        return key

    def add_raw(self, host: str | None, text: str) -> tuple:
        key = (host or "", "raw", text)
        if key not in self.entries:
            shown = text if not text.strip().lstrip("-").isdigit() else f"Agent {text.strip()}"
            self.entries[key] = {"name": f"GPU ({shown})", "vendor": "AMD", "arch": None,
                                 "compute_units": None, "raw_id": text, "host": host,
                                 "order": (host or "", *_agent_sort_key(text)[:1], 1 << 20,
                                           text)}
        return key

    def finish(self) -> tuple[dict[tuple, int], dict[str, list]]:
        keys = sorted(self.entries, key=lambda k: self.entries[k]["order"])
        index = {k: i for i, k in enumerate(keys)}
        cols: dict[str, list] = {c: [] for c in ("index", "name", "vendor", "arch",
                                                 "compute_units", "raw_id", "host")}
        for k in keys:
            e = self.entries[k]
            cols["index"].append(index[k])
            for c in ("name", "vendor", "arch", "compute_units", "raw_id", "host"):
                cols[c].append(e[c])
        return index, cols


def _vendor(v: str | None) -> str:
    if not v:
        return "AMD"
    u = v.upper()
    if "AMD" in u or "ADVANCED MICRO" in u:
        return "AMD"
    if "NVIDIA" in u:
        return "NVIDIA"
    return v
