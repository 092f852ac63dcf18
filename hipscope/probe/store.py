"""Probe results: parse, store per target + GPU + driver, look up for a trace's GPU.

The store is ``<data dir>/probe.json`` (``HIPSCOPE_DATA_DIR`` overrides the data
directory, as for run folders)::

    {"version": 1,
     "probes": {"<target>|<gpu name>|<driver>": {"target": ..., "gpu": ..., "driver": ...,
                                                   "saved_at": ..., "result": {...}}}}

A newer probe of the same key replaces the older one. :func:`probes_for_trace` gives
the tuner the figures of the newest probe whose GPU name matches one of the trace's
devices (``graph_node_ns``, ``pinned_speedup``: the keys ``TraceContext.probes`` reads).
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path
from typing import Any

SCHEMA_PREFIX = "hipscope-probe/"
STORE_NAME = "probe.json"
#: the figures rules read from ``ctx.probes`` (hipscope/tuner/rules*.py)
TUNER_KEYS = ("graph_node_ns", "pinned_speedup")


class ProbeResultError(ValueError):
    """Not a probe result; ``str()`` is one sentence naming the source."""


# ====================================================================== parsing
def parse_result(data: str | bytes | dict, source: str = "the probe output") -> dict[str, Any]:
    """A probe result from its JSON (a dict, or text whose last JSON-object line is the
    result: the probe's stdout may carry other lines before it)."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    obj: Any = data
    if isinstance(data, str):
        obj = None
        text = data.strip()
        candidates = [text] + [ln.strip() for ln in reversed(text.splitlines())]
        for c in candidates:
            if c.startswith("{"):
                try:
                    obj = json.loads(c)
                    break
                except ValueError:
                    continue
        if obj is None:
            raise ProbeResultError(f"{source}: no JSON object found (expected the output "
                                   f"of `python -m hipscope.probe.run --json`)")
    if not isinstance(obj, dict):
        raise ProbeResultError(f"{source}: expected a JSON object, got {type(obj).__name__}")
    schema = obj.get("schema")
    if not isinstance(schema, str) or not schema.startswith(SCHEMA_PREFIX):
        raise ProbeResultError(f"{source}: not a hipscope probe result (schema is "
                               f"{schema!r}, expected {SCHEMA_PREFIX}1)")
    gpu = obj.get("gpu")
    if not isinstance(gpu, dict) or not isinstance(gpu.get("name"), str) or not gpu["name"]:
        why = obj.get("error") or "no gpu.name"
        raise ProbeResultError(f"{source}: the probe measured no GPU ({why})")
    return obj


def tuner_probes(result: dict[str, Any]) -> dict[str, float]:
    """The figures the tuner's rules read, from a result (finite and positive only;
    a pinned speed-up below 1 counts as 1: pinned memory would not help)."""
    est = dict(result.get("estimates") or {})
    g = (result.get("graph") or {}).get("per_node_ns")
    c = (result.get("copies") or {}).get("pinned_speedup")
    est.setdefault("graph_node_ns", g)
    est.setdefault("pinned_speedup", c)
    out: dict[str, float] = {}
    for k in TUNER_KEYS:
        v = est.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
                and v > 0:
            out[k] = max(1.0, float(v)) if k == "pinned_speedup" else float(v)
    return out


# ====================================================================== names
def normalise_gpu_name(name: str) -> str:
    """``"NVIDIA H200"`` and ``"h200"`` match; vendor words and spacing do not count."""
    n = re.sub(r"\s+", " ", str(name).strip().lower())
    n = re.sub(r"^(nvidia|amd|advanced micro devices,? inc\.?)\s+", "", n)
    return n


def probe_key(result: dict[str, Any], target: str) -> str:
    gpu = result.get("gpu") or {}
    return f"{target}|{gpu.get('name')}|{gpu.get('driver')}"


# ====================================================================== the store
def store_path() -> Path:
    from ..launchers.rundir import data_dir  # the run folders' data directory

    return data_dir() / STORE_NAME


def load_store(path: Path | None = None) -> dict[str, Any]:
    """The store (empty when missing or unreadable: a broken file must not stop the
    tuner; it is replaced on the next save)."""
    p = path or store_path()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"version": 1, "probes": {}}
    if not isinstance(data, dict) or not isinstance(data.get("probes"), dict):
        return {"version": 1, "probes": {}}
    return data


def save(result: dict[str, Any], target: str = "local", path: Path | None = None) -> str:
    """Store ``result`` (validated) under its key; returns the key."""
    result = parse_result(result)
    p = path or store_path()
    data = load_store(p)
    key = probe_key(result, target)
    gpu = result["gpu"]
    data["probes"][key] = {"target": target, "gpu": gpu.get("name"),
                           "driver": gpu.get("driver"),
                           "saved_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                           "result": result}
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n",
                   encoding="utf-8")
    os.replace(tmp, p)
    return key


def entries(path: Path | None = None) -> list[dict[str, Any]]:
    """Every stored probe (with its ``key``), newest first."""
    out = [{"key": k, **v} for k, v in load_store(path)["probes"].items()
           if isinstance(v, dict) and isinstance(v.get("result"), dict)]
    out.sort(key=lambda e: str(e.get("result", {}).get("measured_at") or e.get("saved_at")
                               or ""), reverse=True)
    return out


def lookup(gpu_names: list[str], target: str | None = None,
           path: Path | None = None) -> dict[str, Any] | None:
    """The newest stored probe whose GPU matches one of ``gpu_names`` (and ``target``
    when given); None when there is none."""
    want = {normalise_gpu_name(n) for n in gpu_names if n}
    if not want:
        return None
    for e in entries(path):
        if normalise_gpu_name(e.get("gpu") or "") not in want:
            continue
        if target is not None and e.get("target") != target:
            continue
        return e
    return None


def probes_for_trace(trace, path: Path | None = None) -> tuple[dict[str, float], str | None]:
    """``(figures for TraceContext.probes, a one-line description)`` from the newest
    stored probe of the trace's GPU; ``({}, None)`` when none matches."""
    d = trace.devices
    names = [str(n) for n in d.strings("name") if n] if len(d) else []
    e = lookup(names, path=path)
    if e is None:
        return {}, None
    figs = tuner_probes(e["result"])
    if not figs:
        return {}, None
    what = ", ".join(f"{k}={v:.4g}" for k, v in figs.items())
    when = e["result"].get("measured_at") or e.get("saved_at")
    return figs, f"stored probe of {e.get('gpu')} on {e.get('target')} ({when}): {what}"
