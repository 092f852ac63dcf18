"""A run's saved GPU telemetry (``telemetry.csv``) as the trace's ``samples`` table.

Telemetry times are the poller's epoch seconds. Traces on an epoch clock (Kineto,
CLOCK_REALTIME) take them as they are; traces on CLOCK_BOOTTIME (rocprofv3) need the
offset between the two clocks, which every launcher records at run start, read on the
target itself (:func:`host_clock_pair`), in ``provenance.json`` (``clocks``:
``realtime_ns``, ``boottime_ns``). Without a known offset nothing is attached and the
trace says why in a warning: an alignment is never guessed.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..model import Trace
from ..model.table import build_table
from .telemetry import read_samples

log = logging.getLogger(__name__)

TELEMETRY_CSV = "telemetry.csv"

#: telemetry column -> (series label, unit)
SERIES = (
    ("power_w", "Power", "W"),
    ("util_pct", "Utilisation", "%"),
    ("mem_used_mib", "Memory used", "MiB"),
    ("temp_c", "Temperature", "C"),
    ("sclk_mhz", "Clock", "MHz"),
)


def clock_pair() -> dict[str, int]:
    """Epoch and CLOCK_BOOTTIME read back to back, ns (for ``provenance.json``)."""
    out = {"realtime_ns": time.time_ns()}
    boot = getattr(time, "CLOCK_BOOTTIME", None)
    if boot is not None:
        out["boottime_ns"] = time.clock_gettime_ns(boot)
    return out


_CLOCK_PROBE = ("import time; b = getattr(time, 'CLOCK_BOOTTIME', None); "
                "print(time.time_ns(), time.clock_gettime_ns(b) if b is not None else '')")


def host_clock_pair(host) -> dict[str, int] | None:
    """:func:`clock_pair` read on ``host`` (a launcher Host: this machine, or an SSH
    target through its ``python3``); None when the target cannot tell."""
    from .hosts import LocalHost

    if isinstance(host, LocalHost):
        return clock_pair()
    res = host.run(["python3", "-c", _CLOCK_PROBE], timeout=15.0)
    parts = res.stdout.split() if res.ok else []
    try:
        out = {"realtime_ns": int(parts[0])}
        if len(parts) > 1:
            out["boottime_ns"] = int(parts[1])
        return out
    except (IndexError, ValueError):
        return None


def run_folder_of(paths: Sequence[str | Path]) -> Path | None:
    """The run folder (an ancestor holding spec.json and telemetry.csv) that every path
    lies in; None when they do not share one."""
    found = set()
    for p in paths:
        p = Path(p).resolve()
        hit = next((d for d in (p, *p.parents) if d.is_dir() and (d / "spec.json").is_file()
                    and (d / TELEMETRY_CSV).is_file()), None)
        if hit is None:
            return None
        found.add(hit)
    return found.pop() if len(found) == 1 else None


def _clock_offset(trace: Trace, run_folder: Path) -> tuple[int | None, str | None]:
    """ns to subtract from epoch ns to get the trace's clock; (None, why) if unknown."""
    clock = str(trace.meta.get("clock", ""))
    low = clock.lower()
    if "epoch" in low or "realtime" in low:
        return 0, None
    if "boottime" in low:
        try:
            clocks = json.loads((run_folder / "provenance.json").read_text()).get("clocks")
            return int(clocks["realtime_ns"]) - int(clocks["boottime_ns"]), None
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None, ("telemetry not shown: the run did not record its CLOCK_BOOTTIME "
                          "offset (provenance.json 'clocks'), so its samples cannot be "
                          "aligned with this trace")
    return None, f"telemetry not shown: cannot align epoch samples with the trace's " \
                 f"clock ({clock or 'unknown'})"


def attach_telemetry(trace: Trace, run_folder: str | Path) -> Trace:
    """``trace`` with the run's telemetry as its ``samples`` table (unchanged when the
    folder has none; with a warning when the samples cannot be read or aligned)."""
    run_folder = Path(run_folder)
    path = run_folder / TELEMETRY_CSV
    if not path.is_file():
        return trace
    try:
        samples = read_samples(path)
    except (OSError, ValueError, TypeError) as exc:
        return _warn(trace, f"telemetry not shown: {path.name} is unreadable ({exc})")
    if not samples:
        return trace
    offset, why = _clock_offset(trace, run_folder)
    if offset is None:
        return _warn(trace, why or "telemetry not shown")
    devices = set(trace.devices.numpy("index").tolist()) if len(trace.devices) else set()
    cols: dict[str, list] = {"series": [], "time": [], "value": [], "device": [], "unit": []}
    for s in samples:
        t = int(round(s.time * 1e9)) - offset
        known = s.gpu in devices
        for attr, label, unit in SERIES:
            v = getattr(s, attr)
            if v is None or not np.isfinite(v):
                continue
            cols["series"].append(f"{label} ({unit})" if known else f"GPU {s.gpu} {label} ({unit})")
            cols["time"].append(t)
            cols["value"].append(float(v))
            cols["device"].append(s.gpu if known else None)
            cols["unit"].append(unit)
    table = build_table("samples", cols, n=len(cols["time"]))
    out = replace(trace, samples=table)
    span = trace.time_range()
    if span is not None and len(table):
        ts = np.asarray(cols["time"], dtype=np.int64)
        if ts.max() < span[0] or ts.min() > span[1]:
            out = _warn(out, "telemetry samples lie outside the trace's time range "
                             "(its clock may not match the run's)")
    return out.with_meta(telemetry=str(path))


def _warn(trace: Trace, text: str) -> Trace:
    log.info("%s", text)
    return trace.with_meta(warnings=[*trace.warnings, text])
