"""rocprof-compute workload side files into ``meta`` (a missing or unreadable side file
is simply left out): ``sysinfo.csv`` gives the device (gpu_model, gpu_arch,
cu_per_gpu) and meta (command, rocm_version, hostname); ``log.txt`` the tool version
and back end; ``roofline.csv`` peaks go to ``meta["peaks"]`` keyed by roofline's own
device column (bandwidths in GB/s, FLOP rates in GFLOP/s)."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import numpy as np

from .base import TraceFormatError


def read_sysinfo(wd: Path, meta: dict[str, Any]) -> dict[str, str]:
    """sysinfo.csv's one row (device, command, ROCm version, host) into meta."""
    p = wd / "sysinfo.csv"
    if not p.is_file():
        return {}
    try:
        rows = list(csv.reader(p.read_text(errors="replace").splitlines()))
    except (OSError, csv.Error):
        return {}
    if len(rows) < 2:
        return {}
    info = {h.strip(): v.strip() for h, v in zip(rows[0], rows[1]) if h.strip()}
    meta["sources"].append(str(p))
    if info.get("command"):
        meta["command"] = info["command"]
    if info.get("rocm_version"):
        meta["rocm_version"] = info["rocm_version"]
    if info.get("hostname"):
        meta["host"] = info["hostname"]
    if info.get("workload_name"):
        meta["workload_name"] = info["workload_name"]
    meta["sysinfo"] = info
    return info


def read_log(wd: Path, meta: dict[str, Any]) -> None:
    """The tool version and back end named in log.txt."""
    p = wd / "log.txt"
    if not p.is_file():
        return
    try:
        head = p.read_text(errors="replace")[:4000]
    except OSError:
        return
    m = re.search(r"(?:Omniperf|rocprof-compute|ROCm Compute Profiler) version:\s*(\S+)", head,
                  re.I)
    if m:
        meta["tool_version"] = m.group(1)
    m = re.search(r"Profiler choice:\s*(\S+)", head)
    if m:
        meta["backend"] = m.group(1)


def read_roofline(wd: Path, meta: dict[str, Any]) -> None:
    """roofline.csv's peaks per device into meta["peaks"]."""
    p = wd / "roofline.csv"
    if not p.is_file():
        return
    try:
        rows = list(csv.DictReader(p.read_text(errors="replace").splitlines()))
    except (OSError, csv.Error):
        return
    peaks: dict[str, dict[str, float]] = {}
    for r in rows:
        dev = str(r.get("device", len(peaks))).strip()
        vals = {}
        for key, v in r.items():
            if key is None or key == "device":
                continue
            try:
                vals[key.strip()] = float(v)
            except (TypeError, ValueError):
                continue
        peaks[dev] = vals
    if peaks:
        meta["peaks"] = peaks
        meta["peaks_units"] = ("*Bw in GB/s; *Flops in GFLOP/s; *Ops in GOP/s; keyed by "
                               "roofline.csv's device index (the benchmark's HIP device "
                               "ordinal, not GPU_ID)")
        meta["sources"].append(str(p))


# --------------------------------------------------------------------------- pass files
#: newer rocprof-compute keeps each replay pass as ``results_pmc_perf_<n>.csv[.gz]``
RESULTS_PASS = re.compile(r"^results_pmc_perf_(\d+)\.csv(\.gz)?$")


def long_form_header(fields: list[str]) -> bool:
    """A rocprof-compute long-form counter header (one row per dispatch x counter):
    ``[GUID,] GPU_ID, Dispatch_ID, ..., Counter_Name, Counter_Value`` in any case, and
    none of rocprofv3's own spellings (``Agent_Id``: a rocprofv3 counter_collection)."""
    low = {f.strip().lower() for f in fields}
    return ({"dispatch_id", "counter_name", "counter_value", "gpu_id"} <= low
            and "Agent_Id" not in {f.strip() for f in fields})


def _header(p: Path) -> list[str]:
    from .base import head_text

    try:
        line = head_text(p, 8192).lstrip("\ufeff").splitlines()[:1]
        return [f.strip() for f in next(csv.reader(line), [])]
    except (OSError, csv.Error):
        return []


def workload_csv(p: Path) -> bool:
    """Whether ``p`` (pmc_perf.csv, pmc_perf_0.csv) is rocprof-compute's: it exists and
    its header is not rocprofv3's (``Agent_Id``: a rocprofv3 counter_collection saved
    under that name). Any other header is the reader's to explain (no Kernel_Name...)."""
    return p.is_file() and "Agent_Id" not in _header(p)


def results_passes(d: Path) -> list[Path]:
    """``results_pmc_perf_<n>.csv[.gz]`` of a folder whose header is the long form,
    by pass number (content decides, not the name alone)."""
    found = []
    try:
        entries = list(d.iterdir())
    except OSError:
        return []
    for p in entries:
        m = RESULTS_PASS.match(p.name)
        if m and p.is_file() and long_form_header(_header(p)):
            found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found)]


def ts_reasons(s, e, ok: np.ndarray, row: np.ndarray, same_run: np.ndarray,
               got: np.ndarray) -> str:
    """Counts of why timestamps.csv rows gave nothing, as text."""
    lost = ~same_run
    parts = {"no row": lost & ~ok, "an empty or NaN DispatchNs": same_run & ~got}
    if s is None or e is None:
        parts["no Start/End_Timestamp"] = lost & ok
    else:
        empty = ok & ~(s[1][row] & e[1][row])
        backwards = ok & ~empty & (e[0][row] < s[0][row])
        parts["an empty or NaN time"] = lost & empty
        parts["End_Timestamp < Start_Timestamp"] = lost & backwards
        parts["another run's Start_Timestamp"] = lost & ok & ~empty & ~backwards
    return ", ".join(f"{int(m.sum())} with {why}" for why, m in parts.items() if m.any())


def has_dispatchns(p: Path) -> bool:
    """Whether timestamps.csv is rocprof v1's (a DispatchNs column)."""
    try:
        with open(p, errors="replace") as fh:
            return "DispatchNs" in fh.readline()
    except OSError:
        return False


def dispatch_keys(f) -> tuple[np.ndarray, np.ndarray]:
    """(GPU_ID, Dispatch_ID) of every row of a long-form file."""
    gi, di = f.ints("gpu_id"), f.ints("dispatch_id")
    if di is None:
        raise TraceFormatError(f.path, "line 1", "a Dispatch_ID column",
                               ", ".join(f.header[:6]))
    return (gi[0] if gi else np.zeros(f.n, dtype=np.int64)), di[0]


def unmatched_rows(f, align: np.ndarray) -> str | None:
    """"name (k of n)" when a pass file has dispatches that the main file lacks."""
    extra = f.n - len(np.unique(align[align >= 0]))
    return f"{f.path.name} ({extra} of {f.n})" if extra > 0 else None
